/* attention.c - issue 14 (char_gpt speed): the causal masked softmax of
 * attention, forward and backward, one kernel each. x [..., r, c] is a stack
 * of r x c matrices; row i keeps columns j < min(i + 1, c) and the others are
 * neither read nor exp'd (Keras adds -1e9 there, whose exp is 0):
 *   causal_softmax:      y = softmax over the kept j of scale * x, 0 elsewhere;
 *   causal_softmax_grad: (y, dy) -> scale * y * (dy - sum_kept(dy * y)), 0 elsewhere.
 * Each row is a few passes the compiler vectorizes (16 float lanes for the
 * maximum and the sums, combined in double; exp is mg_expf through
 * mg_exp_shifted, as the softmax kernel). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ops_math.h"
#include "kernels_impl.h"

/* y = scale * x over the n kept elements and -inf over [n, m) (m - n < 16:
 * the rest of the last 16-lane block, so no row has a scalar tail unless m is
 * the row's end); returns the maximum (NaN if a kept element is NaN) */
CPU_CLONES static float scaled_max(float *y, const float *x, int64_t n, int64_t m, float scale) {
    float mx[16];
    int64_t j = 0;
    for (int i = 0; i < 16; i++) mx[i] = -INFINITY;
    for (; j + 16 <= m; j += 16)
        for (int i = 0; i < 16; i++) {
            float v = mg_select(j + i < n, scale * x[j + i], -INFINITY);
            y[j + i] = v;
            mx[i] = v > mx[i] || v != v ? v : mx[i];
        }
    for (; j < m; j++) {
        float v = mg_select(j < n, scale * x[j], -INFINITY);
        y[j] = v;
        mx[0] = v > mx[0] || v != v ? v : mx[0];
    }
    float r = mx[0];
    for (int i = 1; i < 16; i++) r = mx[i] > r || mx[i] != mx[i] ? mx[i] : r;
    return r;
}

/* y = exp(y - mx) in place over m elements (the -inf ones become 0); returns the sum */
CPU_CLONES static double exp_sum(float *y, int64_t m, float mx) {
    float acc[16] = {0};
    int64_t j = 0;
    for (; j + 16 <= m; j += 16)
        for (int i = 0; i < 16; i++) {
            float e = mg_exp_shifted(y[j + i], mx);
            y[j + i] = e;
            acc[i] += e;
        }
    double s = 0;
    for (; j < m; j++) s += y[j] = mg_exp_shifted(y[j], mx);
    for (int i = 0; i < 16; i++) s += acc[i];
    return s;
}

CPU_CLONES static void scale_row(float *y, int64_t n, float s) {
    for (int64_t j = 0; j < n; j++) y[j] *= s;
}

CPU_CLONES static void grad_row(float *dx, const float *y, const float *dy, int64_t n, float dot, float scale) {
    for (int64_t j = 0; j < n; j++) dx[j] = mg_causal_softmax_grad(y[j], dy[j], dot, scale);
}

/* causal_softmax (x) and causal_softmax_grad (y, dy): rows of the last axis,
 * row i of each matrix (i along the axis before) keeping min(i + 1, c) */
int cpu_k_causal_softmax(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    const ir_shape *s = &k->node->shape;
    int64_t r = s->dim[s->rank - 2], c = s->dim[s->rank - 1], rows = c ? ir_shape_numel(s) / c : 0;
    float scale = (float)k->node->fattr[0];
    bool grad = k->node->op == OP_CAUSAL_SOFTMAX_GRAD;
    for (int64_t row = 0; row < rows; row++) {
        int64_t i = row % r, n = i + 1 < c ? i + 1 : c;
        float *out = (float *)k->out + row * c;
        const float *x = IN_F32(k, 0) + row * c;
        if (grad) {
            const float *dy = IN_F32(k, 1) + row * c;
            grad_row(out, x, dy, n, (float)cpu_dot16(x, dy, n), scale);
            if (n < c) memset(out + n, 0, (size_t)(c - n) * sizeof *out);
        } else { /* whole 16-lane blocks up to m; the masked ones in them come out 0 */
            int64_t m = (n + 15) / 16 * 16 < c ? (n + 15) / 16 * 16 : c;
            float mx = scaled_max(out, x, n, m, scale);
            scale_row(out, m, (float)(1.0 / exp_sum(out, m, mx)));
            if (m < c) memset(out + m, 0, (size_t)(c - m) * sizeof *out);
        }
    }
    return 0;
}

/* ---- issue 14 (char_gpt speed): attention's dropout folded in ----
 * causal_softmax_dropout (x) -> p = dropout(causal_softmax(x)) and
 * causal_softmax_dropout_grad (x, dp) -> causal_softmax_grad(y, dropout_grad(dp))
 * with y = causal_softmax(x) recomputed: per row, the softmax as above, then
 * the mask of the dropout op (the same integer hash of seed, step and global
 * element replica * numel + index, the same products), so the bits are those
 * of the two unfused kernels. Only the kept j < min(i + 1, c) hash; the rest
 * is 0 (as dropout's 0 * factor). Outside training: the softmax alone. */

/* y[j] *= the dropout factor of element base + j, j < n (dropout_apply's formula) */
CPU_CLONES static void mask_row(float *o, const float *y, int64_t n, uint64_t key, uint64_t base, uint32_t thr, float keep) {
    for (int64_t j = 0; j < n; j++) o[j] = y[j] * (mg_dropout_bits(key, base + (uint64_t)j) >= thr ? keep : 0.0f);
}

/* the softmax row of x (n kept of c) into out: scaled_max, exp_sum, scale_row
 * as cpu_k_causal_softmax; returns the end m of what was written */
static int64_t softmax_row(float *out, const float *x, int64_t n, int64_t c, float scale) {
    int64_t m = (n + 15) / 16 * 16 < c ? (n + 15) / 16 * 16 : c;
    float mx = scaled_max(out, x, n, m, scale);
    scale_row(out, m, (float)(1.0 / exp_sum(out, m, mx)));
    return m;
}

int cpu_k_causal_softmax_dropout(const rt_kernel_args *k, char *err, size_t cap) {
    const ir_shape *s = &k->node->shape;
    int64_t r = s->dim[s->rank - 2], c = s->dim[s->rank - 1], rows = c ? ir_shape_numel(s) / c : 0;
    int64_t numel = ir_shape_numel(s), step = k->step ? *k->step : 0;
    float scale = (float)k->node->fattr[0], rate = (float)k->node->fattr[1];
    bool grad = k->node->op == OP_CAUSAL_SOFTMAX_DROPOUT_GRAD, train = k->training && *k->training;
    float keep = 1.0f / (1.0f - rate); /* dropout_apply's factor */
    uint32_t thr = mg_dropout_threshold(rate);
    uint64_t key = mg_dropout_key((uint64_t)k->node->iattr[0], step), base = (uint64_t)k->replica * (uint64_t)numel;
    float *dyk = NULL; /* grad: the masked dy of a row */
    if (grad && !(dyk = malloc((size_t)(c ? c : 1) * sizeof *dyk))) return cpu_kerr(k, err, cap, "out of memory");
    for (int64_t row = 0; row < rows; row++) {
        int64_t i = row % r, n = i + 1 < c ? i + 1 : c;
        float *out = (float *)k->out + row * c;
        const float *x = IN_F32(k, 0) + row * c;
        int64_t m = softmax_row(out, x, n, c, scale);
        if (grad) { /* out holds y; dx = causal_softmax_grad(y, dy * mask) in place */
            const float *dy = IN_F32(k, 1) + row * c;
            if (train) mask_row(dyk, dy, n, key, base + (uint64_t)(row * c), thr, keep);
            else memcpy(dyk, dy, (size_t)n * sizeof *dyk);
            grad_row(out, out, dyk, n, (float)cpu_dot16(out, dyk, n), scale);
            if (n < c) memset(out + n, 0, (size_t)(c - n) * sizeof *out);
        } else {
            if (train) mask_row(out, out, n, key, base + (uint64_t)(row * c), thr, keep);
            if (m < c) memset(out + m, 0, (size_t)(c - m) * sizeof *out);
        }
    }
    free(dyk);
    return 0;
}
