/* normalize.c - issue 14 (char_gpt speed): layer normalization's core, one
 * kernel each way, over rows of the last axis (stdlib layer_norm scales and
 * shifts the result with elementwise ops, which fuse):
 *   normalize:      y = (x - mean) r, r = 1 / sqrt(var + epsilon), var biased;
 *   normalize_grad: (x, dy) -> r (dy - mean(dy) - xhat mean(dy xhat)), the
 *                   row's mean and r recomputed from x as the forward did.
 * Sums in 16 float lanes combined in double; loops the compiler vectorizes. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <math.h>

#include "../ops_math.h"
#include "kernels_impl.h"

CPU_CLONES static double row_sum(const float *x, int64_t n) {
    float acc[16] = {0};
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        for (int i = 0; i < 16; i++) acc[i] += x[j + i];
    double s = 0;
    for (; j < n; j++) s += x[j];
    for (int i = 0; i < 16; i++) s += acc[i];
    return s;
}

/* sum((x - mean)^2) */
CPU_CLONES static double row_sq_dev(const float *x, int64_t n, float mean) {
    float acc[16] = {0};
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        for (int i = 0; i < 16; i++) {
            float d = x[j + i] - mean;
            acc[i] += d * d;
        }
    double s = 0;
    for (; j < n; j++) s += (double)(x[j] - mean) * (x[j] - mean);
    for (int i = 0; i < 16; i++) s += acc[i];
    return s;
}

/* the row's mean and 1 / sqrt(var + epsilon), as both kernels compute them */
static void row_stats(const float *x, int64_t n, double epsilon, float *mean, float *r) {
    *mean = (float)(row_sum(x, n) / (double)n);
    *r = (float)(1.0 / sqrt(row_sq_dev(x, n, *mean) / (double)n + epsilon));
}

CPU_CLONES static void normalize_row(float *y, const float *x, int64_t n, float mean, float r) {
    for (int64_t j = 0; j < n; j++) y[j] = (x[j] - mean) * r;
}

/* sum(dy * xhat); sum(dy) is row_sum's (issue 14: one accumulator array a
 * loop; both in one loop made gcc vectorize across j with lane shuffles,
 * 4x slower, for the same sums) */
CPU_CLONES static double dot_xhat(const float *x, const float *dy, int64_t n, float mean, float r) {
    float b[16] = {0};
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        for (int i = 0; i < 16; i++) b[i] += dy[j + i] * ((x[j + i] - mean) * r);
    double sb = 0;
    for (; j < n; j++) sb += (double)dy[j] * ((x[j] - mean) * r);
    for (int i = 0; i < 16; i++) sb += b[i];
    return sb;
}

CPU_CLONES static void grad_row(float *dx, const float *x, const float *dy, int64_t n, float mean, float r,
                                float m_dy, float m_dyx) {
    for (int64_t j = 0; j < n; j++) dx[j] = mg_normalize_grad((x[j] - mean) * r, dy[j], r, m_dy, m_dyx);
}

int cpu_k_normalize(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    const ir_shape *s = &k->node->shape;
    int64_t c = s->dim[s->rank - 1], rows = c ? ir_shape_numel(s) / c : 0;
    double epsilon = k->node->fattr[0];
    bool grad = k->node->op == OP_NORMALIZE_GRAD;
    for (int64_t row = 0; row < rows; row++) {
        const float *x = IN_F32(k, 0) + row * c;
        float *out = (float *)k->out + row * c, mean, r;
        row_stats(x, c, epsilon, &mean, &r);
        if (grad) {
            const float *dy = IN_F32(k, 1) + row * c;
            double s_dy = row_sum(dy, c), s_dyx = dot_xhat(x, dy, c, mean, r);
            grad_row(out, x, dy, c, mean, r, (float)(s_dy / (double)c), (float)(s_dyx / (double)c));
        } else {
            normalize_row(out, x, c, mean, r);
        }
    }
    return 0;
}
