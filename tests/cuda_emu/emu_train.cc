/* emu_train.cc - emulation cases of the optimizer, activation, embedding,
 * one_hot, fused, epilogue, pooling-gradient, filter-layout and numerics
 * kernels, against loops written here (per-element math of ops_math.h); the
 * optimizer updates themselves: emu_step.cc. */
#include <vector>

#include "../../runtime/ops_math.h"
#include "emu_util.h"

enum { N = 1003 };

/* the optimizer updates (sgd ... lamb) read the step from device memory and
 * run for several steps: emu_step.cc (issue 15) */

void case_sq_norm(void) {
    for (int acc = 0; acc < 2; acc++) {
        dbuf<float> x(N), out(1);
        randomize(x, N, 110);
        out[0] = 2.5f;
        if (!launched_ok(cuda_k_sq_norm(x, N, out, acc, NULL), "cuda_k_sq_norm")) continue;
        double want = acc ? 2.5 : 0, got = out[0];
        for (int i = 0; i < N; i++) want += (double)x[i] * x[i];
        same(acc ? "cuda_k_sq_norm accumulating" : "cuda_k_sq_norm", &want, &got, 1, 1e-6);
    }
}

/* ---- activations (alpha 0.3 for elu and leaky_relu) ---- */
void case_activation(void) {
    const int ops[] = {OP_ABS, OP_ERF, OP_GELU, OP_SOFTPLUS, OP_SELU, OP_ELU, OP_LEAKY_RELU};
    dbuf<float> x(N), out(N);
    randomize(x, N, 120, -4, 4);
    for (int op : ops) {
        if (!launched_ok(cuda_k_activation(op, x, out, N, 0.3f, NULL), "cuda_k_activation")) continue;
        float want[N];
        for (int i = 0; i < N; i++) {
            float v = x[i];
            want[i] = op == OP_ABS ? mg_abs(v) : op == OP_ERF ? mg_erf(v) : op == OP_GELU ? mg_gelu(v)
                    : op == OP_SOFTPLUS ? mg_softplus(v) : op == OP_SELU ? mg_selu(v) : op == OP_ELU ? mg_elu(v, 0.3f)
                    : mg_leaky_relu(v, 0.3f);
        }
        char what[64];
        snprintf(what, sizeof what, "cuda_k_activation %s", ir_ops[op].name);
        same(what, want, out.p, N, 0);
    }
}

void case_activation_grad(void) {
    const int ops[] = {OP_ABS_GRAD, OP_ERF_GRAD, OP_GELU_GRAD, OP_SELU_GRAD, OP_ELU_GRAD, OP_LEAKY_RELU_GRAD};
    dbuf<float> x(N), dy(N), out(N);
    randomize(x, N, 130, -4, 4), randomize(dy, N, 131);
    for (int op : ops) {
        if (!launched_ok(cuda_k_activation_grad(op, x, dy, out, N, 0.3f, NULL), "cuda_k_activation_grad")) continue;
        float want[N];
        for (int i = 0; i < N; i++) {
            float v = x[i], d = dy[i];
            want[i] = op == OP_ABS_GRAD ? mg_abs_grad(v, d) : op == OP_ERF_GRAD ? mg_erf_grad(v, d)
                    : op == OP_GELU_GRAD ? mg_gelu_grad(v, d) : op == OP_SELU_GRAD ? mg_selu_grad(v, d)
                    : op == OP_ELU_GRAD ? mg_elu_grad(v, d, 0.3f) : mg_leaky_relu_grad(v, d, 0.3f);
        }
        char what[64];
        snprintf(what, sizeof what, "cuda_k_activation_grad %s", ir_ops[op].name);
        same(what, want, out.p, N, 0);
    }
}

/* ---- embeddings: table [11, 13], 97 ids ---- */
enum { V = 11, D = 13, IDS = 97 };

void case_gather(void) {
    dbuf<float> table(V * D), out(IDS * D);
    dbuf<int32_t> ids(IDS), bad(3);
    randomize(table, table.n, 140), randomize_ids(ids, IDS, 141, 0, V);
    ids[40] = V, ids[70] = -2;
    bad[0] = bad[1] = bad[2] = 0;
    if (!launched_ok(cuda_k_gather(table, ids, out, IDS, V, D, bad, 4, NULL), "cuda_k_gather")) return;
    float want[IDS * D];
    for (int i = 0; i < IDS; i++)
        for (int j = 0; j < D; j++) want[i * D + j] = ids[i] >= 0 && ids[i] < V ? table[ids[i] * D + j] : NAN;
    same("cuda_k_gather", want, out.p, out.n, 0);
    bool named = bad[0] == 5 && ((bad[1] == V && bad[2] == 40) || (bad[1] == -2 && bad[2] == 70));
    if (!named) {
        fprintf(stderr, "FAIL: cuda_k_gather: bad id record (%d, %d, %d), want (5, %d, 40) or (5, -2, 70)\n", bad[0],
                bad[1], bad[2], V);
        failures++;
    }
}

void case_scatter_add(void) {
    dbuf<float> dy(IDS * D), out(V * D);
    dbuf<int32_t> ids(IDS);
    randomize(dy, dy.n, 150), randomize_ids(ids, IDS, 151, 0, V);
    ids[10] = V; /* outside: added nowhere */
    if (!launched_ok(cuda_k_scatter_add(ids, dy, out, IDS, V, D, NULL), "cuda_k_scatter_add")) return;
    float want[V * D] = {0};
    for (int i = 0; i < IDS; i++)
        for (int j = 0; ids[i] < V && j < D; j++) want[ids[i] * D + j] += dy[i * D + j];
    same("cuda_k_scatter_add", want, out.p, out.n, 0);
}

void case_one_hot(void) {
    dbuf<int32_t> ids(IDS);
    dbuf<float> out(IDS * V);
    randomize_ids(ids, IDS, 160, -1, V + 1); /* -1 and V: zero rows */
    if (!launched_ok(cuda_k_one_hot(ids, out, IDS, V, NULL), "cuda_k_one_hot")) return;
    float want[IDS * V];
    for (int i = 0; i < IDS; i++)
        for (int j = 0; j < V; j++) want[i * V + j] = ids[i] == j;
    same("cuda_k_one_hot", want, out.p, out.n, 0);
}

/* ---- fused: elu(relu_grad(x + b, dy), 0.7) * col over x [3, 7, 61], b [61], col [3, 1, 1] ---- */
void case_fused(void) {
    const int64_t I = 3, J = 7, K = 61;
    dbuf<float> x(I * J * K), b(K), dy(I * J * K), col(I), out(I * J * K);
    randomize(x, x.n, 170), randomize(b, K, 171), randomize(dy, dy.n, 172), randomize(col, I, 173);
    ir_fused f = {};
    f.n = 4;
    f.ins[0] = ir_finstr{OP_ADD, 0, 1, 0}, f.ins[1] = ir_finstr{OP_RELU_GRAD, 4, 2, 0};
    f.ins[2] = ir_finstr{OP_ELU, 5, -1, 0.7}, f.ins[3] = ir_finstr{OP_MUL, 6, 3, 0};
    cuda_fused_args a = {};
    a.n_in = 4, a.rank = 3, a.dim[0] = I, a.dim[1] = J, a.dim[2] = K;
    const int64_t st[4][3] = {{J * K, K, 1}, {0, 0, 1}, {J * K, K, 1}, {1, 0, 0}};
    for (int k = 0; k < 4; k++)
        for (int d = 0; d < 3; d++) a.stride[k][d] = st[k][d];
    a.x[0] = x, a.x[1] = b, a.x[2] = dy, a.x[3] = col;
    if (!launched_ok(cuda_k_fused(&f, &a, out, out.n, NULL), "cuda_k_fused")) return;
    float want[I * J * K];
    for (int64_t i = 0; i < I; i++)
        for (int64_t j = 0; j < J; j++)
            for (int64_t k = 0; k < K; k++) {
                int64_t e = (i * J + j) * K + k;
                want[e] = mg_mul(mg_elu(mg_relu_grad(mg_add(x[e], b[k]), dy[e]), 0.7f), col[i]);
            }
    same("cuda_k_fused", want, out.p, out.n, 0);
}

/* ---- epilogue: out [37, 29] = act(out + bias [29] (+ res)) ---- */
void case_epilogue(void) {
    const int64_t R = 37, C = 29;
    for (int act = 0; act < EPI_COUNT; act++)
        for (int with_res = 0; with_res < 2; with_res++) {
            dbuf<float> out(R * C), bias(C), res(R * C);
            randomize(out, out.n, 180 + act), randomize(bias, C, 181), randomize(res, res.n, 182);
            float want[R * C];
            for (int64_t r = 0; r < R; r++)
                for (int64_t c = 0; c < C; c++) {
                    float v = out[r * C + c] + bias[c];
                    if (with_res) v = v + res[r * C + c];
                    want[r * C + c] = act == EPI_RELU ? mg_relu(v) : act == EPI_TANH ? mg_tanh(v)
                                    : act == EPI_SIGMOID ? mg_sigmoid(v) : v;
                }
            if (!launched_ok(cuda_k_epilogue(out, bias, with_res ? res.p : NULL, out.n, C, act, NULL), "cuda_k_epilogue"))
                continue;
            char what[64];
            snprintf(what, sizeof what, "cuda_k_epilogue %s%s", ir_epilogue_act_names[act], with_res ? " + residual" : "");
            same(what, want, out.p, out.n, 0);
        }
}

/* ---- issue 14: conv2d_bn_epilogue's pass: out [37, 29] = act((c - mean) * scale + beta (+ res)),
 * from c and in place over it ---- */
void case_bn_epilogue(void) {
    const int64_t R = 37, C = 29;
    for (int act = 0; act < EPI_COUNT; act++)
        for (int mode = 0; mode < 4; mode++) { /* bit 0: residual; bit 1: in place (out is c) */
            int with_res = mode & 1, in_place = mode >> 1;
            dbuf<float> c(R * C), out(R * C), mean(C), scale(C), beta(C), res(R * C);
            randomize(c, c.n, 200 + act), randomize(mean, C, 201), randomize(scale, C, 202, 0.5f, 2.0f);
            randomize(beta, C, 203), randomize(res, res.n, 204);
            float want[R * C];
            for (int64_t r = 0; r < R; r++)
                for (int64_t j = 0; j < C; j++) {
                    float v = mg_add(mg_mul(mg_sub(c[r * C + j], mean[j]), scale[j]), beta[j]);
                    if (with_res) v = mg_add(v, res[r * C + j]);
                    want[r * C + j] = act == EPI_RELU ? mg_relu(v) : act == EPI_TANH ? mg_tanh(v)
                                    : act == EPI_SIGMOID ? mg_sigmoid(v) : v;
                }
            float *dst = in_place ? c.p : out.p;
            if (!launched_ok(cuda_k_bn_epilogue(dst, c, mean, scale, beta, with_res ? res.p : NULL, R * C, C, act, NULL),
                             "cuda_k_bn_epilogue"))
                continue;
            char what[80];
            snprintf(what, sizeof what, "cuda_k_bn_epilogue %s%s%s", ir_epilogue_act_names[act],
                     with_res ? " + residual" : "", in_place ? " in place" : "");
            same(what, want, dst, R * C, 0);
        }
}

/* ---- max-pool gradient: x [2, 7, 9, 3], 3x3 windows, stride 2, pad 1: dy [2, 4, 5, 3] ---- */
void case_max_pool_grad(void) {
    cuda_pool_geom g = {2, 7, 9, 3, 4, 5, 3, 3, 2, 2, 1, 1};
    for (int relu = 0; relu < 2; relu++) {
        dbuf<float> x(g.n * g.h * g.w * g.c), dy(g.n * g.oh * g.ow * g.c), dx(x.n);
        randomize(x, x.n, 190), randomize(dy, dy.n, 191);
        x[5] = x[5 + 3 * 2]; /* a tie inside one window: the first maximum takes dy */
        if (!launched_ok(cuda_k_max_pool_grad(x, dy, dx, &g, relu, NULL), "cuda_k_max_pool_grad")) continue;
        float want[2 * 7 * 9 * 3] = {0};
        for (int64_t b = 0; b < g.n; b++)
            for (int64_t oh = 0; oh < g.oh; oh++)
                for (int64_t ow = 0; ow < g.ow; ow++)
                    for (int64_t c = 0; c < g.c; c++) {
                        int64_t arg = -1;
                        for (int64_t h = oh * g.sh - g.pt; h < oh * g.sh - g.pt + g.kh; h++)
                            for (int64_t w = ow * g.sw - g.pl; w < ow * g.sw - g.pl + g.kw; w++) {
                                if (h < 0 || w < 0 || h >= g.h || w >= g.w) continue;
                                int64_t at = ((b * g.h + h) * g.w + w) * g.c + c;
                                if (arg < 0 || x[at] > x[arg]) arg = at;
                            }
                        want[arg] += dy[((b * g.oh + oh) * g.ow + ow) * g.c + c];
                    }
        if (relu)
            for (int64_t i = 0; i < x.n; i++) want[i] = mg_relu_grad(x[i], want[i]);
        same(relu ? "cuda_k_max_pool_grad relu" : "cuda_k_max_pool_grad", want, dx.p, dx.n, 1e-6);
    }
}

/* ---- filters HWIO [3, 3, 5, 7] <-> OHWI [7, 3, 3, 5] ---- */
void case_hwio_to_ohwi(void) {
    const int64_t KHW = 9, CI = 5, CO = 7;
    dbuf<float> w(KHW * CI * CO), o(KHW * CI * CO);
    randomize(w, w.n, 200);
    if (!launched_ok(cuda_k_hwio_to_ohwi(w, o, KHW, CI, CO, NULL), "cuda_k_hwio_to_ohwi")) return;
    float want[9 * 5 * 7];
    for (int64_t p = 0; p < KHW; p++)
        for (int64_t c = 0; c < CI; c++)
            for (int64_t k = 0; k < CO; k++) want[(k * KHW + p) * CI + c] = w[(p * CI + c) * CO + k];
    same("cuda_k_hwio_to_ohwi", want, o.p, o.n, 0);
}

void case_ohwi_to_hwio(void) {
    const int64_t KHW = 9, CI = 5, CO = 7;
    dbuf<float> o(KHW * CI * CO), w(KHW * CI * CO);
    randomize(o, o.n, 210);
    if (!launched_ok(cuda_k_ohwi_to_hwio(o, w, KHW, CI, CO, NULL), "cuda_k_ohwi_to_hwio")) return;
    float want[9 * 5 * 7];
    for (int64_t k = 0; k < CO; k++)
        for (int64_t p = 0; p < KHW; p++)
            for (int64_t c = 0; c < CI; c++) want[(p * CI + c) * CO + k] = o[(k * KHW + p) * CI + c];
    same("cuda_k_ohwi_to_hwio", want, w.p, w.n, 0);
}

/* ---- --check-numerics: the smallest non-finite index of the first node ---- */
void case_check_finite(void) {
    dbuf<float> y(N);
    dbuf<cuda_nonfinite> rec(1);
    dbuf<int64_t> step(1); /* the step word of the stream (issue 15) */
    randomize(y, N, 220);
    memset(rec.p, 0, sizeof *rec.p);
    rec[0].key = ~0ull; /* as the backend clears it */
    step[0] = 77;
    bool ok = launched_ok(cuda_k_check_finite(y, N, rec, 8, 1, step, NULL), "cuda_k_check_finite") && rec[0].node1 == 0;
    y[900] = -INFINITY, y[1002] = NAN, y[300] = INFINITY;
    ok = ok && launched_ok(cuda_k_check_finite(y, N, rec, 8, 1, step, NULL), "cuda_k_check_finite") &&
         rec[0].node1 == 9 && rec[0].replica == 1 && rec[0].step == 77 && rec[0].key == (300ull << 2 | 1);
    y[300] = 0, y[10] = NAN; /* another node later: the record keeps the first */
    step[0] = 78;
    ok = ok && launched_ok(cuda_k_check_finite(y, N, rec, 3, 1, step, NULL), "cuda_k_check_finite") &&
         rec[0].node1 == 9 && rec[0].key == (300ull << 2 | 1);
    if (!ok) {
        fprintf(stderr, "FAIL: cuda_k_check_finite: record (node1 %d, replica %d, step %lld, key %llu), want (9, 1, 77, %llu)\n",
                rec[0].node1, rec[0].replica, rec[0].step, rec[0].key, 300ull << 2 | 1);
        failures++;
    }
}

/* The filter gradient of the convolution of geometry g from x and dy (f64 sums). */
static std::vector<float> ref_grad_filter(const cuda_pool2_geom &g, dbuf<float> &x, const std::vector<double> &dy) {
    std::vector<float> dw(g.kh * g.kw * g.cg * g.c);
    for (int64_t o = 0; o < (int64_t)dw.size(); o++) {
        int64_t c = o % g.c, ci = o / g.c % g.cg, s = o / (g.c * g.cg) % g.kw, r = o / (g.c * g.cg * g.kw);
        double sum = 0;
        for (int64_t b = 0; b < g.n; b++)
            for (int64_t oh = 0; oh < g.oh; oh++)
                for (int64_t ow = 0; ow < g.ow; ow++) {
                    int64_t ih = oh - g.pt + r, iw = ow - g.pl + s;
                    if (ih < 0 || iw < 0 || ih >= g.h || iw >= g.w) continue;
                    sum += x[((b * g.h + ih) * g.w + iw) * g.cx + c / (g.c / g.groups) * g.cg + ci] *
                           dy[((b * g.oh + oh) * g.ow + ow) * g.c + c];
                }
        dw[o] = (float)sum;
    }
    return dw;
}

/* ---- issue 14 (seed CNN speed): the filter gradient through a 2x2 max-pool:
 * x [2, 9, 8, 4], 2x2 filter, pad right 1, groups 2 -> y [2, 8, 8, 6], dy [2, 4, 4, 6] ---- */
void case_grad_filter_pool2(void) {
    cuda_pool2_geom g = {2, 9, 8, 4, 8, 8, 6, 2, 2, 2, 1, 1, 0, 0, 1, 1, 2};
    dbuf<float> x(g.n * g.h * g.w * g.cx), y(g.n * g.oh * g.ow * g.c), dy(g.n * g.oh / 2 * g.ow / 2 * g.c),
        dw(g.kh * g.kw * g.cg * g.c);
    randomize(x, x.n, 200), randomize(y, y.n, 201), randomize(dy, dy.n, 202);
    y[6] = y[6 + 6]; /* a tie inside one window: the first maximum takes dy */
    if (!launched_ok(cuda_k_grad_filter_pool2(x, y, dy, dw, &g, NULL), "cuda_k_grad_filter_pool2")) return;
    std::vector<double> dx(y.n, 0.0);
    for (int64_t i = 0; i < dy.n; i++) { /* the pool gradient, masked by the maximum > 0 */
        int64_t c = i % g.c, pw = i / g.c % (g.ow / 2), ph = i / (g.c * (g.ow / 2)) % (g.oh / 2);
        int64_t b = i / (g.c * (g.ow / 2) * (g.oh / 2)), arg = -1;
        for (int64_t r = 0; r < 2; r++)
            for (int64_t q = 0; q < 2; q++) {
                int64_t at = ((b * g.oh + 2 * ph + r) * g.ow + 2 * pw + q) * g.c + c;
                if (arg < 0 || y[at] > y[arg]) arg = at;
            }
        if (y[arg] > 0) dx[arg] = dy[i];
    }
    std::vector<float> want = ref_grad_filter(g, x, dx);
    same("cuda_k_grad_filter_pool2", want.data(), dw.p, dw.n, 1e-6);
}

/* ---- issue 14 (seed CNN speed): conv2d_relu_pool2 and its filter gradient:
 * x [2, 9, 8, 4], 2x2 filter, pad right 1, groups 2, bias [6] -> y [2, 8, 8, 6]
 * made on the fly, pooled [2, 4, 4, 6] and each window's pixel; grad: the
 * filter gradient's wrapper from the reference's pixels (bias: after the
 * bias gradient, dy summed where the pixel is >= 0), else the forward's ---- */
static void relu_pool2_case(bool grad, bool with_bias = false) {
    cuda_pool2_geom g = {2, 9, 8, 4, 8, 8, 6, 2, 2, 2, 1, 1, 0, 0, 1, 1, 2};
    const int64_t ph = g.oh / 2, pw = g.ow / 2, np = g.n * ph * pw * g.c;
    dbuf<float> x(g.n * g.h * g.w * g.cx), w(g.kh * g.kw * g.cg * g.c), bias(g.c), out(2 * np), f(2 * np), dy(np),
        dw((with_bias ? g.c : 0) + g.kh * g.kw * g.cg * g.c);
    randomize(x, x.n, 210), randomize(w, w.n, 211), randomize(bias, bias.n, 212, -0.3f, 0.3f), randomize(dy, dy.n, 213);
    std::vector<double> y(g.n * g.oh * g.ow * g.c, 0.0), dx(y.size(), 0.0);
    for (int64_t i = 0; i < (int64_t)y.size(); i++) { /* y = relu(conv2d(x, w) + bias) */
        int64_t c = i % g.c, ow = i / g.c % g.ow, oh = i / (g.c * g.ow) % g.oh, b = i / (g.c * g.ow * g.oh);
        double acc = 0;
        for (int64_t r = 0; r < g.kh; r++)
            for (int64_t s = 0; s < g.kw; s++) {
                int64_t ih = oh - g.pt + r, iw = ow - g.pl + s;
                if (ih < 0 || iw < 0 || ih >= g.h || iw >= g.w) continue;
                for (int64_t ci = 0; ci < g.cg; ci++)
                    acc += (double)x[((b * g.h + ih) * g.w + iw) * g.cx + c / (g.c / g.groups) * g.cg + ci] *
                           (double)w[((r * g.kw + s) * g.cg + ci) * g.c + c];
            }
        y[i] = acc + bias[c] > 0 ? acc + bias[c] : 0;
    }
    std::vector<float> want(out.n);
    std::vector<double> db(g.c, 0.0);
    for (int64_t i = 0; i < np; i++) { /* the pool, its pixel, and its gradient masked by the maximum > 0 */
        int64_t c = i % g.c, q = i / g.c % pw, p = i / (g.c * pw) % ph, b = i / (g.c * pw * ph), arg = -1, k = 0;
        for (int64_t r = 0; r < 2; r++)
            for (int64_t s = 0; s < 2; s++) {
                int64_t at = ((b * g.oh + 2 * p + r) * g.ow + 2 * q + s) * g.c + c;
                if (arg < 0 || y[at] > y[arg]) arg = at, k = 2 * r + s;
            }
        want[i] = (float)y[arg], want[np + i] = y[arg] > 0 ? (float)k : -1.0f;
        f[i] = want[i], f[np + i] = want[np + i];
        if (y[arg] > 0) dx[arg] = dy[i], db[c] += dy[i];
    }
    std::vector<float> want_dw = ref_grad_filter(g, x, dx);
    if (with_bias) want_dw.insert(want_dw.begin(), db.begin(), db.end());
    if (!grad && !launched_ok(cuda_k_relu_pool2(x, w, bias, out, &g, NULL), "cuda_k_relu_pool2")) return;
    if (grad && !launched_ok(cuda_k_relu_pool2_grad_filter(x, f, dy, dw, with_bias, &g, NULL), "cuda_k_relu_pool2_grad_filter"))
        return;
    if (!grad) same("cuda_k_relu_pool2", want.data(), out.p, out.n, 1e-5);
    else same("cuda_k_relu_pool2_grad_filter", want_dw.data(), dw.p, dw.n, 1e-5);
}

void case_relu_pool2(void) { relu_pool2_case(false); }
void case_relu_pool2_grad_filter(void) { relu_pool2_case(true), relu_pool2_case(true, true); }
