/* emu_math.cc - emulation cases of the elementwise, broadcast, cast, fill,
 * reduction, shape, softmax and cross-entropy kernels: each wrapper of
 * runtime/cuda/cuda_kernels.h on the CPU against loops written here over
 * coordinates, on odd sizes (not multiples of the 256-thread block). */
#include <float.h>

#include <vector>

#include "../../runtime/ops_math.h"
#include "emu_util.h"

enum { N = 1003 }; /* 3 full blocks and a partial one */

/* ---- elementwise ---- */
static float binary_ref(int op, float a, float b) {
    switch (op) {
    case OP_ADD: return mg_add(a, b);
    case OP_SUB: return mg_sub(a, b);
    case OP_MUL: return mg_mul(a, b);
    case OP_DIV: return mg_div(a, b);
    case OP_RELU_GRAD: return mg_relu_grad(a, b);
    case OP_SIGMOID_GRAD: return mg_sigmoid_grad(a, b);
    case OP_TANH_GRAD: return mg_tanh_grad(a, b);
    case OP_LESS: return mg_less(a, b);
    case OP_LESS_EQUAL: return mg_less_equal(a, b);
    case OP_GREATER: return mg_greater(a, b);
    case OP_GREATER_EQUAL: return mg_greater_equal(a, b);
    case OP_EQUAL: return mg_equal(a, b);
    case OP_NOT_EQUAL: return mg_not_equal(a, b);
    case OP_MAXIMUM: return mg_maximum(a, b);
    case OP_MINIMUM: return mg_minimum(a, b);
    default: return mg_pow(a, b);
    }
}

/* a [7, 1, 37] op b [5, 1] -> [7, 5, 37] (numpy broadcasting) */
void case_binary(void) {
    const int ops[] = {OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_RELU_GRAD, OP_SIGMOID_GRAD, OP_TANH_GRAD, OP_LESS,
                       OP_LESS_EQUAL, OP_GREATER, OP_GREATER_EQUAL, OP_EQUAL, OP_NOT_EQUAL, OP_MAXIMUM,
                       OP_MINIMUM, OP_POW};
    const int64_t I = 7, J = 5, K = 37;
    dbuf<float> a(I * K), b(J), out(I * J * K);
    randomize(a, a.n, 1), randomize(b, b.n, 2);
    b[1] = a[3]; /* an equal pair for the comparisons */
    cuda_bcast bc = {3, {I, J, K}, {{K, 0, 1}, {0, 1, 0}}};
    for (int op : ops) {
        if (!launched_ok(cuda_k_binary(op, &bc, a, b, out, out.n, NULL), "cuda_k_binary")) continue;
        float want[I * J * K];
        for (int64_t i = 0; i < I; i++)
            for (int64_t j = 0; j < J; j++)
                for (int64_t k = 0; k < K; k++) want[(i * J + j) * K + k] = binary_ref(op, a[i * K + k], b[j]);
        char what[64];
        snprintf(what, sizeof what, "cuda_k_binary %s", ir_ops[op].name);
        same(what, want, out.p, out.n, 0);
    }
}

void case_unary(void) {
    const int ops[] = {OP_NEG, OP_EXP, OP_LOG, OP_SQRT, OP_RELU, OP_SIGMOID, OP_TANH};
    dbuf<float> x(N), out(N);
    randomize(x, N, 3, -3, 3);
    for (int op : ops) {
        if (!launched_ok(cuda_k_unary(op, x, out, N, NULL), "cuda_k_unary")) continue;
        float want[N];
        for (int i = 0; i < N; i++) {
            float v = x[i];
            want[i] = op == OP_NEG ? mg_neg(v) : op == OP_EXP ? mg_exp(v) : op == OP_LOG ? mg_log(v)
                    : op == OP_SQRT ? mg_sqrt(v) : op == OP_RELU ? mg_relu(v) : op == OP_SIGMOID ? mg_sigmoid(v)
                    : mg_tanh(v);
        }
        char what[64];
        snprintf(what, sizeof what, "cuda_k_unary %s", ir_ops[op].name);
        same(what, want, out.p, N, 0);
    }
}

/* x [3, 1, 29] -> [3, 4, 29] for elements of 1, 4 and 8 bytes */
template <typename T> static void broadcast_as(int elem) {
    const int64_t I = 3, J = 4, K = 29;
    dbuf<T> x(I * K), out(I * J * K);
    for (int64_t i = 0; i < x.n; i++) x[i] = (T)(i * 7 + 3);
    cuda_bcast bc = {3, {I, J, K}, {{K, 0, 1}, {0, 0, 0}}};
    if (!launched_ok(cuda_k_broadcast(&bc, x, out, out.n, elem, NULL), "cuda_k_broadcast")) return;
    T want[I * J * K];
    for (int64_t i = 0; i < I; i++)
        for (int64_t j = 0; j < J; j++)
            for (int64_t k = 0; k < K; k++) want[(i * J + j) * K + k] = x[i * K + k];
    char what[64];
    snprintf(what, sizeof what, "cuda_k_broadcast of %d-byte elements", elem);
    same(what, want, out.p, out.n, 0);
}

void case_broadcast(void) { broadcast_as<uint8_t>(1), broadcast_as<uint32_t>(4), broadcast_as<uint64_t>(8); }

/* ---- casts (through double; to an integer truncating, saturating, NaN to 0) and fills ---- */
static double cast_ref(ir_dtype to, double v) {
    if (to == IR_F32) return (double)(float)v;
    if (to == IR_F64) return v;
    double lo = to == IR_I32 ? -2147483648.0 : 0, hi = to == IR_I32 ? 2147483647.0 : 255;
    return v != v ? 0 : v < lo ? lo : v > hi ? hi : trunc(v);
}

static double load(ir_dtype t, const void *p, int64_t i) {
    switch (t) {
    case IR_F32: return ((const float *)p)[i];
    case IR_I32: return ((const int32_t *)p)[i];
    case IR_F64: return ((const double *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

void case_cast(void) {
    const ir_dtype types[] = {IR_F32, IR_I32, IR_F64, IR_U8};
    for (ir_dtype from : types)
        for (ir_dtype to : types) {
            dbuf<char> x(N * (int64_t)ir_dtype_size(from)), out(N * (int64_t)ir_dtype_size(to));
            float v[N];
            randomize(v, N, 5 + from, -400, 400);
            v[7] = NAN, v[8] = 3e9f, v[9] = -3e9f;
            for (int i = 0; i < N; i++) {
                if (from == IR_F32) ((float *)x.p)[i] = v[i];
                if (from == IR_F64) ((double *)x.p)[i] = v[i];
                if (from == IR_I32) ((int32_t *)x.p)[i] = (int32_t)cast_ref(IR_I32, v[i]);
                if (from == IR_U8) ((uint8_t *)x.p)[i] = (uint8_t)cast_ref(IR_U8, v[i]);
            }
            if (!launched_ok(cuda_k_cast(from, to, x, out, N, NULL), "cuda_k_cast")) continue;
            double want[N], got[N];
            for (int i = 0; i < N; i++) want[i] = cast_ref(to, load(from, x, i)), got[i] = load(to, out, i);
            char what[64];
            snprintf(what, sizeof what, "cuda_k_cast %s -> %s", ir_dtype_name(from), ir_dtype_name(to));
            same(what, want, got, N, 0);
        }
}

/* every type at N, and u8 over a grid-stride loop of more than 65,535 blocks'
 * worth of elements (the grid is capped at MAX_BLOCKS, so threads stride) */
void case_fill(void) {
    const ir_dtype types[] = {IR_F32, IR_I32, IR_F64, IR_U8};
    for (ir_dtype t : types) {
        dbuf<char> out(N * (int64_t)ir_dtype_size(t));
        if (!launched_ok(cuda_k_fill(t, out, 7.0, N, NULL), "cuda_k_fill")) continue;
        double want[N], got[N];
        for (int i = 0; i < N; i++) want[i] = 7.0, got[i] = load(t, out, i);
        char what[64];
        snprintf(what, sizeof what, "cuda_k_fill %s", ir_dtype_name(t));
        same(what, want, got, N, 0);
    }
    const int64_t big = 65536 * THREADS + 77; /* 65,537 blocks' worth */
    dbuf<uint8_t> out(big);
    if (!launched_ok(cuda_k_fill(IR_U8, out, 9.0, big, NULL), "cuda_k_fill (large grid)")) return;
    int64_t wrong = 0, first = -1;
    for (int64_t i = 0; i < big; i++)
        if (out[i] != 9 && wrong++ == 0) first = i;
    if (wrong) {
        fprintf(stderr, "FAIL: cuda_k_fill of %lld u8 (grid capped at %lld blocks): %lld elements not written, first [%lld]\n",
                (long long)big, (long long)MAX_BLOCKS, (long long)wrong, (long long)first);
        failures++;
    }
}

/* ---- reductions: out[o] = scale * sum (or max/min) over the masked axes ---- */
static cuda_reduce_desc reduce_desc(int rank, const int64_t *dim, unsigned mask) {
    cuda_reduce_desc r = {rank, {0}, mask, 1, 1};
    for (int a = 0; a < rank; a++) r.dim[a] = dim[a], *(mask >> a & 1u ? &r.red_n : &r.out_n) *= dim[a];
    return r;
}

/* index of input element i's output (kept axes, row-major) */
static int64_t out_index(const cuda_reduce_desc &r, int64_t i) {
    int64_t o = 0, scale = 1;
    for (int a = r.rank - 1; a >= 0; a--) {
        int64_t c = i % r.dim[a];
        i /= r.dim[a];
        if (!(r.mask >> a & 1u)) o += c * scale, scale *= r.dim[a];
    }
    return o;
}

void case_reduce(void) {
    struct {
        int rank;
        int64_t dim[4];
        unsigned mask;
    } cases[] = {
        {4, {7, 31, 29, 3}, 7},  /* all but the channels: the conv bias gradient, two-level */
        {4, {7, 31, 29, 3}, 15}, /* everything: 5 chunks of one output */
        {4, {7, 31, 29, 3}, 5},  /* axes 0 and 2, not adjacent: one chunk per output */
        {4, {7, 31, 29, 3}, 8},  /* the last axis only: the short kernel */
        {2, {150, 70}, 2},       /* 150 outputs of one chunk each */
        {2, {3, 9001}, 2},       /* 3 outputs of 3 chunks: partial sums */
        {3, {5, 1, 7}, 2},       /* an axis of 1 */
    };
    for (auto &c : cases) {
        cuda_reduce_desc r = reduce_desc(c.rank, c.dim, c.mask);
        dbuf<float> x(r.out_n * r.red_n), out(r.out_n);
        randomize(x, x.n, 11 + c.mask);
        if (!launched_ok(cuda_k_reduce(&r, x, out, 0.5f, NULL), "cuda_k_reduce")) continue;
        std::vector<double> want((size_t)r.out_n, 0.0), got((size_t)r.out_n);
        for (int64_t i = 0; i < x.n; i++) want[(size_t)out_index(r, i)] += x[i];
        for (int64_t o = 0; o < r.out_n; o++) want[(size_t)o] *= 0.5, got[(size_t)o] = out[o];
        char what[96];
        snprintf(what, sizeof what, "cuda_k_reduce [%lld,%lld,%lld,%lld] mask %u", (long long)c.dim[0],
                 (long long)c.dim[1], (long long)c.dim[2], (long long)c.dim[3], c.mask);
        same(what, want.data(), got.data(), r.out_n, 1e-5 * sqrt((double)r.red_n));
    }
}

void case_reduce_extreme(void) {
    const unsigned masks[] = {1, 2, 4, 5, 7};
    const int64_t dim[3] = {7, 31, 5};
    for (unsigned mask : masks)
        for (int is_max = 0; is_max < 2; is_max++) {
            cuda_reduce_desc r = reduce_desc(3, dim, mask);
            dbuf<float> x(r.out_n * r.red_n), out(r.out_n);
            randomize(x, x.n, 13 + mask);
            if (!launched_ok(cuda_k_reduce_extreme(&r, x, out, is_max, NULL), "cuda_k_reduce_extreme")) continue;
            float want[1085];
            for (int64_t o = 0; o < r.out_n; o++) want[o] = is_max ? -FLT_MAX : FLT_MAX;
            for (int64_t i = 0; i < x.n; i++) {
                float &w = want[out_index(r, i)];
                w = is_max ? fmaxf(w, x[i]) : fminf(w, x[i]);
            }
            char what[64];
            snprintf(what, sizeof what, "cuda_k_reduce_extreme %s mask %u", is_max ? "max" : "min", mask);
            same(what, want, out.p, r.out_n, 0);
        }
}

/* ---- shape: a box [5, 7, 9] into [6, 9, 11] at (1, 2, 1); a transpose ---- */
void case_box_copy(void) {
    dbuf<float> src(5 * 7 * 9), dst(6 * 9 * 11);
    randomize(src, src.n, 17);
    for (int64_t i = 0; i < dst.n; i++) dst[i] = -7.0f;
    cuda_box b = {3, {5, 7, 9}, {63, 9, 1}, {99, 11, 1}, 0, 1 * 99 + 2 * 11 + 1};
    if (!launched_ok(cuda_k_box_copy(&b, src, dst, NULL), "cuda_k_box_copy")) return;
    float want[6 * 9 * 11];
    for (int64_t i = 0; i < dst.n; i++) want[i] = -7.0f;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 7; j++)
            for (int k = 0; k < 9; k++) want[((i + 1) * 9 + j + 2) * 11 + k + 1] = src[(i * 7 + j) * 9 + k];
    same("cuda_k_box_copy", want, dst.p, dst.n, 0);
}

/* x [4, 5, 6] -> out [6, 4, 5] = x transposed by (2, 0, 1) */
void case_transpose(void) {
    dbuf<float> x(4 * 5 * 6), out(6 * 4 * 5);
    randomize(x, x.n, 19);
    cuda_box b = {3, {6, 4, 5}, {1, 30, 6}, {20, 5, 1}, 0, 0};
    if (!launched_ok(cuda_k_transpose(&b, x, out, NULL), "cuda_k_transpose")) return;
    float want[120];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++)
            for (int k = 0; k < 6; k++) want[(k * 4 + i) * 5 + j] = x[(i * 5 + j) * 6 + k];
    same("cuda_k_transpose", want, out.p, out.n, 0);
}

/* ---- softmax family over the middle axis of [13, 7, 71]: 923 columns ---- */
void case_softmax_axis(void) {
    const int64_t O = 13, M = 7, I = 71;
    const int ops[] = {OP_SOFTMAX, OP_LOG_SOFTMAX, OP_SOFTMAX_GRAD};
    dbuf<float> x(O * M * I), dy(O * M * I), out(O * M * I);
    randomize(x, x.n, 23, -4, 4), randomize(dy, dy.n, 29);
    for (int op : ops) {
        if (!launched_ok(cuda_k_softmax_axis(op, x, dy, out, O, M, I, NULL), "cuda_k_softmax_axis")) continue;
        static float want[O * M * I];
        for (int64_t o = 0; o < O; o++)
            for (int64_t i = 0; i < I; i++) {
                float col[M], d[M];
                for (int j = 0; j < M; j++) col[j] = x[(o * M + j) * I + i], d[j] = dy[(o * M + j) * I + i];
                float mx = -FLT_MAX, sum = 0, dot = 0;
                for (int j = 0; j < M; j++) mx = fmaxf(mx, col[j]), dot += d[j] * col[j];
                for (int j = 0; j < M; j++) sum += mg_exp_shifted(col[j], mx);
                float lse = mg_logsumexp(mx, sum);
                for (int j = 0; j < M; j++)
                    want[(o * M + j) * I + i] = op == OP_SOFTMAX ? mg_exp_shifted(col[j], lse)
                                              : op == OP_LOG_SOFTMAX ? col[j] - lse : mg_softmax_grad(col[j], d[j], dot);
            }
        char what[64];
        snprintf(what, sizeof what, "cuda_k_softmax_axis %s", ir_ops[op].name);
        same(what, want, out.p, out.n, 1e-6);
    }
}

/* ---- sparse cross-entropy family: 301 rows of 7 classes, two bad labels ---- */
enum { ROWS = 301, C = 7 };

static void logits_and_labels(float *x, int32_t *lab) {
    randomize(x, ROWS * C, 31, -3, 3);
    randomize_ids(lab, ROWS, 37, 0, C);
    lab[5] = -1, lab[200] = C;
}

static float row_lse(const float *x) {
    float mx = -FLT_MAX, sum = 0;
    for (int j = 0; j < C; j++) mx = fmaxf(mx, x[j]);
    for (int j = 0; j < C; j++) sum += mg_exp_shifted(x[j], mx);
    return mg_logsumexp(mx, sum);
}

void case_xent(void) {
    dbuf<float> x(ROWS * C), out(ROWS);
    dbuf<int32_t> lab(ROWS);
    logits_and_labels(x, lab);
    if (!launched_ok(cuda_k_xent(x, lab, out, ROWS, C, NULL), "cuda_k_xent")) return;
    float want[ROWS];
    for (int r = 0; r < ROWS; r++)
        want[r] = lab[r] >= 0 && lab[r] < C ? mg_xent(row_lse(x + r * C), x[r * C + lab[r]]) : NAN;
    same("cuda_k_xent", want, out.p, ROWS, 1e-6);
}

void case_xent_grad(void) {
    dbuf<float> x(ROWS * C), dy(ROWS), dx(ROWS * C);
    dbuf<int32_t> lab(ROWS);
    logits_and_labels(x, lab);
    randomize(dy, ROWS, 41);
    if (!launched_ok(cuda_k_xent_grad(x, lab, dy, dx, ROWS, C, NULL), "cuda_k_xent_grad")) return;
    float want[ROWS * C];
    for (int r = 0; r < ROWS; r++)
        for (int j = 0; j < C; j++)
            want[r * C + j] = mg_xent_grad(mg_exp_shifted(x[r * C + j], row_lse(x + r * C)), j == lab[r], dy[r]);
    same("cuda_k_xent_grad", want, dx.p, dx.n, 1e-6);
}

void case_argmax_match(void) {
    dbuf<float> x(ROWS * C), out(ROWS);
    dbuf<int32_t> lab(ROWS);
    logits_and_labels(x, lab);
    x[3 * C + 1] = x[3 * C + 4] = 9, lab[3] = 4; /* a tie: the first maximum counts */
    if (!launched_ok(cuda_k_argmax_match(x, lab, out, ROWS, C, NULL), "cuda_k_argmax_match")) return;
    float want[ROWS];
    for (int r = 0; r < ROWS; r++) {
        int best = 0;
        for (int j = 1; j < C; j++)
            if (x[r * C + j] > x[r * C + best]) best = j;
        want[r] = best == lab[r];
    }
    same("cuda_k_argmax_match", want, out.p, ROWS, 0);
}

void case_in_top_k(void) {
    dbuf<float> x(ROWS * C), out(ROWS);
    dbuf<int32_t> lab(ROWS);
    logits_and_labels(x, lab);
    x[9 * C + 2] = NAN; /* a non-finite row is never in the top k */
    for (int64_t k = 1; k <= 3; k++) {
        if (!launched_ok(cuda_k_in_top_k(x, lab, out, ROWS, C, k, NULL), "cuda_k_in_top_k")) continue;
        float want[ROWS];
        for (int r = 0; r < ROWS; r++) {
            bool ok = lab[r] >= 0 && lab[r] < C;
            int above = 0;
            for (int j = 0; j < C && ok; j++) ok = isfinite(x[r * C + j]), above += x[r * C + j] > x[r * C + lab[r]];
            want[r] = ok && above < k;
        }
        char what[64];
        snprintf(what, sizeof what, "cuda_k_in_top_k k=%lld", (long long)k);
        same(what, want, out.p, ROWS, 0);
    }
}

/* dropout reads the step from device memory, several steps: emu_step.cc (issue 15) */
/* ---- issue 14 (char_gpt speed): causal_softmax forward and backward over
 * 1,050 rows of [7, 6] matrices (rows past the columns keep all 6) and 52
 * rows of [4, 9] (rows keep i + 1 < 9), against double loops ---- */
static void causal_softmax_one(int64_t outer, int64_t R, int64_t Cc, float scale) {
    int64_t rows = outer * R, n_el = rows * Cc;
    dbuf<float> x(n_el), dy(n_el), out(n_el);
    randomize(x, n_el, 41, -6, 6), randomize(dy, n_el, 43);
    float *want = new float[n_el];
    for (int grad = 0; grad < 2; grad++) {
        const float *in = x; /* x, then y */
        if (grad) { /* the gradient reads y: the forward's output */
            for (int64_t row = 0; row < rows; row++) {
                int64_t i = row % R, n = i + 1 < Cc ? i + 1 : Cc;
                double mx = -1e300, s = 0;
                for (int64_t j = 0; j < n; j++) mx = fmax(mx, (double)scale * x[row * Cc + j]);
                for (int64_t j = 0; j < n; j++) s += exp((double)scale * x[row * Cc + j] - mx);
                for (int64_t j = 0; j < Cc; j++)
                    out[row * Cc + j] = j < n ? (float)(exp((double)scale * x[row * Cc + j] - mx) / s) : 0.0f;
            }
            memcpy(x.p, out.p, (size_t)n_el * sizeof *x.p); /* x now holds y */
        }
        for (int64_t row = 0; row < rows; row++) {
            int64_t i = row % R, n = i + 1 < Cc ? i + 1 : Cc;
            const float *a = in + row * Cc, *d = dy.p + row * Cc;
            double mx = -1e300, s = 0, dot = 0;
            for (int64_t j = 0; j < n; j++) mx = fmax(mx, (double)scale * a[j]), dot += (double)d[j] * a[j];
            for (int64_t j = 0; j < n; j++) s += exp((double)scale * a[j] - mx);
            for (int64_t j = 0; j < Cc; j++)
                want[row * Cc + j] = j >= n ? 0.0f
                                     : grad ? (float)(scale * a[j] * (d[j] - dot))
                                            : (float)(exp((double)scale * a[j] - mx) / s);
        }
        for (int64_t k = 0; k < n_el; k++) out[k] = NAN; /* every element must be written */
        if (!launched_ok(cuda_k_causal_softmax(in, grad ? dy.p : NULL, out, rows, R, Cc, scale, NULL),
                         "cuda_k_causal_softmax"))
            continue;
        char what[96];
        snprintf(what, sizeof what, "cuda_k_causal_softmax %s [%lld, %lld]", grad ? "grad" : "forward", (long long)R,
                 (long long)Cc);
        same(what, want, out.p, n_el, 1e-5);
        /* in place, as causal_matmul_softmax runs it: out holds the scores (forward) or dy (gradient) */
        memcpy(out.p, grad ? dy.p : in, (size_t)n_el * sizeof *out.p);
        if (!launched_ok(cuda_k_causal_softmax(grad ? in : out.p, grad ? out.p : NULL, out, rows, R, Cc, scale, NULL),
                         "cuda_k_causal_softmax in place"))
            continue;
        snprintf(what, sizeof what, "cuda_k_causal_softmax %s in place [%lld, %lld]", grad ? "grad" : "forward",
                 (long long)R, (long long)Cc);
        same(what, want, out.p, n_el, 1e-5);
    }
    delete[] want;
}

void case_causal_softmax(void) {
    causal_softmax_one(150, 7, 6, 0.35f);
    causal_softmax_one(13, 4, 9, 1.0f);
}

/* ---- issue 14 (char_gpt speed): causal_softmax_dropout_grad (y, dp) at step 2
 * of the device word, global elements from 500, against double loops with
 * dropout's mask (mg_dropout_scale); outside training (no word) no mask ---- */
static void causal_softmax_dropout_grad_one(int64_t outer, int64_t R, int64_t Cc, float scale, float rate, bool train) {
    int64_t rows = outer * R, n_el = rows * Cc;
    dbuf<float> y(n_el), dp(n_el), out(n_el);
    dbuf<int64_t> word(1);
    randomize(y, n_el, 47, 0, 1), randomize(dp, n_el, 53);
    if (!launched_ok(cuda_k_set_step(word, 2, NULL), "cuda_k_set_step")) return;
    float *want = new float[n_el];
    for (int64_t row = 0; row < rows; row++) {
        int64_t i = row % R, n = i + 1 < Cc ? i + 1 : Cc;
        double dot = 0, d[64];
        for (int64_t j = 0; j < n; j++) {
            double f = train ? mg_dropout_scale(7, 2, 500 + (uint64_t)(row * Cc + j), rate) : 1.0;
            d[j] = (double)dp[row * Cc + j] * f;
            dot += d[j] * y[row * Cc + j];
        }
        for (int64_t j = 0; j < Cc; j++)
            want[row * Cc + j] = j < n ? (float)(scale * y[row * Cc + j] * (d[j] - dot)) : 0.0f;
    }
    for (int64_t k = 0; k < n_el; k++) out[k] = NAN; /* every element must be written */
    if (launched_ok(cuda_k_causal_softmax_dropout_grad(y, dp, out, rows, R, Cc, scale, 7, train ? word.p : NULL, 500,
                                                       rate, NULL),
                    "cuda_k_causal_softmax_dropout_grad")) {
        char what[112];
        snprintf(what, sizeof what, "cuda_k_causal_softmax_dropout_grad [%lld, %lld]%s", (long long)R, (long long)Cc,
                 train ? "" : " eval");
        same(what, want, out.p, n_el, 1e-5);
        memcpy(out.p, dp.p, (size_t)n_el * sizeof *out.p); /* in place over dp, as causal_matmul_softmax_grad */
        if (launched_ok(cuda_k_causal_softmax_dropout_grad(y, out, out, rows, R, Cc, scale, 7, train ? word.p : NULL, 500,
                                                           rate, NULL),
                        "cuda_k_causal_softmax_dropout_grad in place")) {
            snprintf(what, sizeof what, "cuda_k_causal_softmax_dropout_grad in place [%lld, %lld]%s", (long long)R,
                     (long long)Cc, train ? "" : " eval");
            same(what, want, out.p, n_el, 1e-5);
        }
    }
    delete[] want;
}

void case_causal_softmax_dropout_grad(void) {
    causal_softmax_dropout_grad_one(150, 7, 6, 0.35f, 0.3f, true);
    causal_softmax_dropout_grad_one(13, 4, 9, 1.0f, 0.5f, true);
    causal_softmax_dropout_grad_one(13, 4, 9, -0.7f, 0.5f, false);
}

/* ---- issue 14 (char_gpt speed): causal_matmul's output triangle: 37
 * matrices of [11, 11] keep j <= i (then j >= i), the others 0 ---- */
void case_tri_mask(void) {
    const int64_t batch = 37, m = 11, n_el = batch * m * m;
    dbuf<float> x(n_el), out(n_el);
    randomize(x, n_el, 59);
    float *want = new float[n_el];
    for (int upper = 0; upper < 2; upper++) {
        for (int64_t e = 0; e < n_el; e++) {
            int64_t i = e / m % m, j = e % m;
            want[e] = (upper ? j >= i : j <= i) ? x[e] : 0.0f;
            out[e] = x[e];
        }
        if (!launched_ok(cuda_k_tri_mask(out, batch, m, upper, NULL), "cuda_k_tri_mask")) continue;
        same(upper ? "cuda_k_tri_mask upper" : "cuda_k_tri_mask lower", want, out.p, n_el, 0);
    }
    delete[] want;
}

/* ---- issue 14 (char_gpt speed): normalize forward and backward over 1,031
 * rows of 13 and 3 rows of 1 (the output 0, its gradient 0), against double loops ---- */
static void normalize_one(int64_t rows, int64_t c, float epsilon) {
    int64_t n_el = rows * c;
    dbuf<float> x(n_el), dy(n_el), out(n_el);
    randomize(x, n_el, 47, -3, 5), randomize(dy, n_el, 53);
    float *want = new float[n_el];
    for (int grad = 0; grad < 2; grad++) {
        for (int64_t row = 0; row < rows; row++) {
            const float *a = x.p + row * c, *d = dy.p + row * c;
            double mean = 0, var = 0, m_dy = 0, m_dyx = 0;
            for (int64_t j = 0; j < c; j++) mean += a[j] / (double)c;
            for (int64_t j = 0; j < c; j++) var += (a[j] - mean) * (a[j] - mean) / (double)c;
            double r = 1 / sqrt(var + epsilon);
            for (int64_t j = 0; j < c; j++) m_dy += d[j] / (double)c, m_dyx += d[j] * (a[j] - mean) * r / (double)c;
            for (int64_t j = 0; j < c; j++)
                want[row * c + j] = (float)(grad ? r * (d[j] - m_dy - (a[j] - mean) * r * m_dyx) : (a[j] - mean) * r);
        }
        for (int64_t k = 0; k < n_el; k++) out[k] = NAN; /* every element must be written */
        if (!launched_ok(cuda_k_normalize(x, grad ? dy.p : NULL, out, rows, c, epsilon, NULL), "cuda_k_normalize"))
            continue;
        char what[96];
        snprintf(what, sizeof what, "cuda_k_normalize %s [%lld, %lld]", grad ? "grad" : "forward", (long long)rows,
                 (long long)c);
        same(what, want, out.p, n_el, 1e-4);
    }
    delete[] want;
}

void case_normalize(void) {
    normalize_one(1031, 13, 1e-5f);
    normalize_one(3, 1, 1e-3f);
}

/* ---- issue 14 (batch norm in training): channel_mean and channel_var
 * (cuda_k_channel_sum) and scale_shift over [rows, c] (more rows than a
 * block's threads, channels past the small build's grid; one row, one
 * channel), against double loops ---- */
static void channel_sum_one(int64_t rows, int64_t c) {
    int64_t n_el = rows * c;
    dbuf<float> x(n_el), m(c), out(c);
    randomize(x, n_el, 61, -3, 5), randomize(m, c, 71);
    float *want = new float[c];
    for (int kind = 0; kind < 2; kind++) {
        for (int64_t j = 0; j < c; j++) {
            double s = 0;
            for (int64_t r = 0; r < rows; r++) {
                double d = (double)x.p[r * c + j] - (kind ? m.p[j] : 0.0);
                s += kind == 0 ? d : d * d;
            }
            want[j] = (float)(s / (double)rows);
        }
        for (int64_t j = 0; j < c; j++) out[j] = NAN; /* every channel must be written */
        if (!launched_ok(cuda_k_channel_sum(kind, x, m, out, rows, c, 1.0 / (double)rows, NULL), "cuda_k_channel_sum"))
            continue;
        char what[96];
        snprintf(what, sizeof what, "cuda_k_channel_sum kind %d [%lld, %lld]", kind, (long long)rows, (long long)c);
        same(what, want, out.p, c, 1e-4);
    }
    delete[] want;
}

/* channel_sum_dot (cuda_k_channel_sum_dot): [sum(dy); sum(dy (x - m))] */
static void channel_sum_dot_one(int64_t rows, int64_t c) {
    int64_t n_el = rows * c;
    dbuf<float> x(n_el), dy(n_el), m(c), out(2 * c);
    randomize(x, n_el, 73, -3, 5), randomize(dy, n_el, 79), randomize(m, c, 83);
    float *want = new float[2 * c];
    for (int64_t j = 0; j < c; j++) {
        double s = 0, d = 0;
        for (int64_t r = 0; r < rows; r++)
            s += dy.p[r * c + j], d += (double)dy.p[r * c + j] * ((double)x.p[r * c + j] - m.p[j]);
        want[j] = (float)s, want[c + j] = (float)d;
    }
    for (int64_t j = 0; j < 2 * c; j++) out[j] = NAN; /* every element must be written */
    if (launched_ok(cuda_k_channel_sum_dot(x, m, dy, out, rows, c, NULL), "cuda_k_channel_sum_dot")) {
        char what[96];
        snprintf(what, sizeof what, "cuda_k_channel_sum_dot [%lld, %lld]", (long long)rows, (long long)c);
        same(what, want, out.p, 2 * c, 1e-4);
    }
    delete[] want;
}

void case_channel_sum(void) {
    channel_sum_one(1031, 13);
    channel_sum_one(600, 16);
    channel_sum_one(1, 1);
}

void case_channel_sum_dot(void) {
    channel_sum_dot_one(1031, 13);
    channel_sum_dot_one(600, 16);
    channel_sum_dot_one(1, 1);
}

static void scale_shift_one(int64_t rows, int64_t c) {
    int64_t n_el = rows * c;
    dbuf<float> x(n_el), m(c), sc(c), b(c), out(n_el);
    randomize(x, n_el, 83, -3, 5), randomize(m, c, 89), randomize(sc, c, 97), randomize(b, c, 101);
    float *want = new float[n_el];
    for (int64_t k = 0; k < n_el; k++) want[k] = (float)((x.p[k] - m.p[k % c]) * sc.p[k % c] + b.p[k % c]);
    for (int64_t k = 0; k < n_el; k++) out[k] = NAN; /* every element must be written */
    if (launched_ok(cuda_k_scale_shift(x, m, sc, b, out, n_el, c, NULL), "cuda_k_scale_shift")) {
        char what[96];
        snprintf(what, sizeof what, "cuda_k_scale_shift [%lld, %lld]", (long long)rows, (long long)c);
        same(what, want, out.p, n_el, 1e-5);
    }
    delete[] want;
}

void case_scale_shift(void) {
    scale_shift_one(1031, 13);
    scale_shift_one(1, 1);
}
