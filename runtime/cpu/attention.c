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
