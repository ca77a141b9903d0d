/* reduce.c - reductions (sum, mean over an axes bitmask) and the softmax
 * family: softmax, log_softmax and the softmax gradient over any axis (rows
 * of the last axis, or columns), sparse cross-entropy, its gradient, argmax
 * accuracy (over the last axis). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <string.h>

#include "../ops_math.h"
#include "kernels_impl.h"

/* sum of x[0..n) with 16 float lanes, combined in double */
CPU_CLONES static double sum_lanes(const float *x, int64_t n) {
    float acc[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) acc[j] += x[i + j];
    double s = 0;
    for (int j = 0; j < 16; j++) s += acc[j];
    for (; i < n; i++) s += x[i];
    return s;
}

enum { COLS = 512, ROWS = 64 };

/* out[i] = scale * sum_r x[r * inner + i]: columns in chunks, rows in blocks
 * summed in float, blocks combined in double (issue 14, char_gpt: chunks of
 * 512, was 256, so a 512-wide bias gradient walks whole rows: 15-25% faster,
 * each column's order of additions, so its bits, unchanged) */
CPU_CLONES static void sum_columns(float *out, const float *x, int64_t rows, int64_t inner, double scale) {
    for (int64_t c0 = 0; c0 < inner; c0 += COLS) {
        int64_t w = inner - c0 < COLS ? inner - c0 : COLS;
        double acc[COLS] = {0};
        float part[COLS];
        for (int64_t r0 = 0; r0 < rows; r0 += ROWS) {
            int64_t r1 = r0 + ROWS < rows ? r0 + ROWS : rows;
            memset(part, 0, sizeof part);
            for (int64_t r = r0; r < r1; r++) {
                const float *row = x + r * inner + c0;
                for (int64_t i = 0; i < w; i++) part[i] += row[i];
            }
            for (int64_t i = 0; i < w; i++) acc[i] += part[i];
        }
        for (int64_t i = 0; i < w; i++) out[c0 + i] = (float)(acc[i] * scale);
    }
}

/* input dims collapsed into runs of kept / reduced axes */
typedef struct {
    int rank;
    int64_t dim[IR_MAX_RANK];
    int reduced[IR_MAX_RANK];
} rdims;

static rdims collapse_axes(const ir_shape *s, int64_t axes) {
    rdims c = {0};
    for (int i = 0; i < s->rank; i++) {
        int r = (int)(axes >> i & 1);
        if (s->dim[i] == 1) continue;
        if (c.rank > 0 && c.reduced[c.rank - 1] == r) c.dim[c.rank - 1] *= s->dim[i];
        else c.reduced[c.rank] = r, c.dim[c.rank++] = s->dim[i];
    }
    return c;
}

/* any pattern: accumulate element by element (more than one reduced run) */
static void reduce_generic(float *out, const float *x, const rdims *c, int64_t n_out, double scale) {
    int64_t ostride[IR_MAX_RANK], idx[IR_MAX_RANK] = {0}, t = 1, o = 0;
    for (int i = c->rank - 1; i >= 0; i--) {
        ostride[i] = c->reduced[i] ? 0 : t;
        if (!c->reduced[i]) t *= c->dim[i];
    }
    memset(out, 0, (size_t)n_out * sizeof *out);
    for (int64_t e = 0;; e++) {
        out[o] += x[e];
        int d = c->rank - 1;
        for (; d >= 0; d--) {
            o += ostride[d];
            if (++idx[d] < c->dim[d]) break;
            o -= ostride[d] * c->dim[d], idx[d] = 0;
        }
        if (d < 0) break;
    }
    for (int64_t i = 0; i < n_out; i++) out[i] = (float)(out[i] * scale);
}

int cpu_k_reduce(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    const float *x = IN_F32(k, 0);
    float *out = k->out;
    int64_t n_in = IN_NUMEL(k, 0), n_out = OUT_NUMEL(k);
    double scale = k->node->op == OP_REDUCE_MEAN && n_out ? (double)n_out / (double)n_in : 1.0;
    rdims c = collapse_axes(IN_SHAPE(k, 0), k->node->iattr[0]);
    int n_red = 0, first = -1;
    for (int i = 0; i < c.rank; i++)
        if (c.reduced[i]) n_red++, first = first < 0 ? i : first;
    if (n_red == 0) {
        for (int64_t i = 0; i < n_out; i++) out[i] = x[i];
    } else if (n_red == 1) { /* [outer, reduced, inner] */
        int64_t outer = 1, inner = 1, r = c.dim[first];
        for (int i = 0; i < first; i++) outer *= c.dim[i];
        for (int i = first + 1; i < c.rank; i++) inner *= c.dim[i];
        for (int64_t o = 0; o < outer; o++) {
            if (inner == 1) out[o] = (float)(sum_lanes(x + o * r, r) * scale);
            else sum_columns(out + o * inner, x + o * r * inner, r, inner, scale);
        }
    } else {
        reduce_generic(out, x, &c, n_out, scale);
    }
    return 0;
}

/* ---- softmax family: rows of the last axis ---- */

/* issue 14 (speed): each row pass a loop the compiler vectorizes: the
 * maximum in 16 lanes, exp (mg_expf) into y, the sum in sum_lanes. A NaN
 * anywhere in the row makes the maximum NaN, so the row is NaN as before. */
/* the NaN-propagating maximum as before, for a row holding a NaN */
static float row_max_nan(const float *x, int64_t n) {
    float m[16];
    int64_t j = 0;
    for (int i = 0; i < 16; i++) m[i] = x[0];
    for (; j + 16 <= n; j += 16)
        for (int i = 0; i < 16; i++) m[i] = x[j + i] > m[i] || x[j + i] != x[j + i] ? x[j + i] : m[i];
    for (; j < n; j++) m[0] = x[j] > m[0] || x[j] != x[j] ? x[j] : m[0];
    float r = m[0];
    for (int i = 1; i < 16; i++) r = m[i] > r || m[i] != m[i] ? m[i] : r;
    return r;
}

/* (issue 14, char_gpt: the ?: over || above compiled to scalar compares and
 * jumps; a plain maximum and a NaN flag vectorize, and a row with a NaN takes
 * the loop above, so the result is the same, NaN included) */
CPU_CLONES static float row_max(const float *x, int64_t n) {
    float m[16];
    int bad[16];
    int64_t j = 0;
    for (int i = 0; i < 16; i++) m[i] = x[0], bad[i] = 0;
    for (; j + 16 <= n; j += 16)
        for (int i = 0; i < 16; i++) {
            float v = x[j + i];
            m[i] = v > m[i] ? v : m[i];
            bad[i] |= v != v;
        }
    int b = 0;
    for (; j < n; j++) m[0] = x[j] > m[0] ? x[j] : m[0], b |= x[j] != x[j];
    for (int i = 0; i < 16; i++) b |= bad[i];
    if (b || m[0] != m[0]) return row_max_nan(x, n);
    float r = m[0];
    for (int i = 1; i < 16; i++) r = m[i] > r ? m[i] : r;
    return r;
}

CPU_CLONES static void exp_shifted_row(float *y, const float *x, int64_t n, float mx) {
    for (int64_t j = 0; j < n; j++) y[j] = mg_exp_shifted(x[j], mx);
}

CPU_CLONES static void scale_row(float *y, int64_t n, float s) {
    for (int64_t j = 0; j < n; j++) y[j] *= s;
}

static void softmax_row(float *y, const float *x, int64_t n) {
    float mx = row_max(x, n);
    exp_shifted_row(y, x, n, mx);
    scale_row(y, n, (float)(1.0 / sum_lanes(y, n)));
}

/* the row's exps go through a stack buffer in chunks */
static float row_logsumexp(const float *x, int64_t n) {
    float mx = row_max(x, n), buf[1024];
    double s = 0;
    for (int64_t j = 0; j < n; j += 1024) {
        int64_t w = n - j < 1024 ? n - j : 1024;
        exp_shifted_row(buf, x + j, w, mx);
        s += sum_lanes(buf, w);
    }
    return mg_logsumexp(mx, (float)s);
}

static void rows_cols(const ir_shape *s, int64_t *rows, int64_t *cols) {
    *cols = s->rank ? s->dim[s->rank - 1] : 1;
    *rows = *cols ? ir_shape_numel(s) / *cols : 0;
}

/* softmax, softmax_grad, log_softmax as [outer, n, inner] around the class
 * axis (rank-1-from_end); inner is 1 for the last axis */
static void around_axis(const rt_kernel_args *k, int64_t *outer, int64_t *n, int64_t *inner) {
    const ir_shape *s = &k->node->shape;
    int axis = s->rank - 1 - (int)k->node->iattr[0];
    *outer = 1, *n = s->dim[axis], *inner = 1;
    for (int i = 0; i < axis; i++) *outer *= s->dim[i];
    for (int i = axis + 1; i < s->rank; i++) *inner *= s->dim[i];
}

/* rows of the last axis: y = x - logsumexp(x) */
static void log_softmax_row(float *y, const float *x, int64_t n) {
    float lse = row_logsumexp(x, n);
    for (int64_t j = 0; j < n; j++) y[j] = x[j] - lse;
}

CPU_CLONES double cpu_dot16(const float *y, const float *dy, int64_t n) {
    float acc[16] = {0};
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        for (int i = 0; i < 16; i++) acc[i] += dy[j + i] * y[j + i];
    double dot = 0;
    for (int i = 0; i < 16; i++) dot += acc[i];
    for (; j < n; j++) dot += (double)dy[j] * y[j];
    return dot;
}

/* (y, dy) -> y * (dy - sum(dy * y)) per row (issue 14: vectorized) */
CPU_CLONES static void softmax_grad_row(float *dx, const float *y, const float *dy, int64_t n) {
    double dot = cpu_dot16(y, dy, n);
    for (int64_t j = 0; j < n; j++) dx[j] = mg_softmax_grad(y[j], dy[j], (float)dot);
}

/* An inner axis: COLS columns at a time, each column a softmax over n rows of
 * stride inner. op: OP_SOFTMAX, OP_LOG_SOFTMAX or OP_SOFTMAX_GRAD (x = y, dy). */
static void softmax_columns(ir_op op, float *out, const float *x, const float *dy, int64_t n, int64_t inner) {
    for (int64_t c0 = 0; c0 < inner; c0 += COLS) {
        int64_t w = inner - c0 < COLS ? inner - c0 : COLS;
        float mx[COLS];
        double acc[COLS] = {0};
        const float *x0 = x + c0;
        float *o0 = out + c0;
        if (op == OP_SOFTMAX_GRAD) {
            for (int64_t j = 0; j < n; j++)
                for (int64_t i = 0; i < w; i++) acc[i] += (double)dy[c0 + j * inner + i] * x0[j * inner + i];
            for (int64_t j = 0; j < n; j++)
                for (int64_t i = 0; i < w; i++)
                    o0[j * inner + i] = mg_softmax_grad(x0[j * inner + i], dy[c0 + j * inner + i], (float)acc[i]);
            continue;
        }
        memcpy(mx, x0, (size_t)w * sizeof *mx);
        for (int64_t j = 1; j < n; j++)
            for (int64_t i = 0; i < w; i++) mx[i] = x0[j * inner + i] > mx[i] ? x0[j * inner + i] : mx[i];
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < w; i++) acc[i] += mg_exp_shifted(x0[j * inner + i], mx[i]);
        for (int64_t i = 0; i < w; i++) /* softmax: 1 / sum; log_softmax: logsumexp */
            acc[i] = op == OP_SOFTMAX ? 1.0 / acc[i] : mg_logsumexp(mx[i], (float)acc[i]);
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < w; i++)
                o0[j * inner + i] = op == OP_SOFTMAX ? mg_exp_shifted(x0[j * inner + i], mx[i]) * (float)acc[i]
                                                     : x0[j * inner + i] - (float)acc[i];
    }
}

/* softmax, log_softmax, softmax_grad: rows when the axis is the last, else columns */
int cpu_k_softmax(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    ir_op op = k->node->op;
    int64_t outer, n, inner;
    around_axis(k, &outer, &n, &inner);
    const float *dy = op == OP_SOFTMAX_GRAD ? IN_F32(k, 1) : NULL;
    for (int64_t o = 0; o < outer; o++) {
        int64_t at = o * n * inner;
        float *y = (float *)k->out + at;
        const float *x = IN_F32(k, 0) + at;
        if (inner > 1) softmax_columns(op, y, x, dy ? dy + at : NULL, n, inner);
        else if (op == OP_SOFTMAX) softmax_row(y, x, n);
        else if (op == OP_LOG_SOFTMAX) log_softmax_row(y, x, n);
        else softmax_grad_row(y, x, dy + at, n);
    }
    return 0;
}

/* labels must lie in [0, C) */
static int check_labels(const rt_kernel_args *k, char *err, size_t cap, int64_t rows, int64_t cols) {
    const int32_t *lab = k->in[1];
    if (k->in_nodes[1]->dtype != IR_I32) return cpu_kerr(k, err, cap, "labels must be i32");
    for (int64_t r = 0; r < rows; r++)
        if (lab[r] < 0 || lab[r] >= cols)
            return cpu_kerr(k, err, cap, "label %d of example %lld is outside [0, %lld)", (int)lab[r], (long long)r,
                            (long long)cols);
    return 0;
}

/* (logits [B,C], labels [B]) -> loss [B] = logsumexp(row) - row[label] */
int cpu_k_sparse_xent(const rt_kernel_args *k, char *err, size_t cap) {
    int64_t rows, cols;
    rows_cols(IN_SHAPE(k, 0), &rows, &cols);
    if (check_labels(k, err, cap, rows, cols)) return -1;
    const int32_t *lab = k->in[1];
    for (int64_t r = 0; r < rows; r++) {
        const float *x = IN_F32(k, 0) + r * cols;
        ((float *)k->out)[r] = mg_xent(row_logsumexp(x, cols), x[lab[r]]);
    }
    return 0;
}

/* dx = mg_xent_grad(p, j == label, dy) over a row of p in place (issue 14:
 * a loop the compiler vectorizes for AVX2/AVX-512 too) */
CPU_CLONES static void xent_grad_row(float *dx, int32_t n, int32_t label, float dy) {
    for (int32_t j = 0; j < n; j++) dx[j] = mg_xent_grad(dx[j], j == label, dy);
}

/* (logits, labels, dy [B]) -> dy[b] * (softmax - onehot) */
int cpu_k_sparse_xent_grad(const rt_kernel_args *k, char *err, size_t cap) {
    int64_t rows, cols;
    rows_cols(IN_SHAPE(k, 0), &rows, &cols);
    if (check_labels(k, err, cap, rows, cols)) return -1;
    const int32_t *lab = k->in[1];
    const float *dy = IN_F32(k, 2);
    for (int64_t r = 0; r < rows; r++) {
        float *dx = (float *)k->out + r * cols;
        softmax_row(dx, IN_F32(k, 0) + r * cols, cols);
        xent_grad_row(dx, (int32_t)cols, lab[r], dy[r]);
    }
    return 0;
}

/* (logits, labels) -> 1 where the first maximum of the row is the label */
int cpu_k_argmax_match(const rt_kernel_args *k, char *err, size_t cap) {
    int64_t rows, cols;
    rows_cols(IN_SHAPE(k, 0), &rows, &cols);
    if (k->in_nodes[1]->dtype != IR_I32) return cpu_kerr(k, err, cap, "labels must be i32");
    const int32_t *lab = k->in[1];
    for (int64_t r = 0; r < rows; r++) {
        const float *x = IN_F32(k, 0) + r * cols;
        int64_t best = 0;
        for (int64_t j = 1; j < cols; j++) best = x[j] > x[best] ? j : best;
        ((float *)k->out)[r] = best == lab[r] ? 1.0f : 0.0f;
    }
    return 0;
}
