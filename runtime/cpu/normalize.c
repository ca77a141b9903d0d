/* normalize.c - issue 14 (char_gpt speed): layer normalization's core, one
 * kernel each way, over rows of the last axis (stdlib layer_norm scales and
 * shifts the result with elementwise ops, which fuse):
 *   normalize:      y = (x - mean) r, r = 1 / sqrt(var + epsilon), var biased;
 *   normalize_grad: (x, dy) -> r (dy - mean(dy) - xhat mean(dy xhat)), the
 *                   row's mean and r recomputed from x as the forward did.
 * Sums in 16 float lanes combined in double; loops the compiler vectorizes.
 * Rows go in groups of GROUP, their double sums finished together (issue 14:
 * a 128-wide row's time was mostly the 16 dependent additions of each of its
 * 2 or 4 sums; 8 rows interleaved ran normalize_grad on char_gpt's
 * [2048, 128] in 0.13 ms, from 0.195, bench_gpt_kernels normalize; the same
 * bits, each row's additions in the same order). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <math.h>
#include <string.h>

#include "../ops_math.h"
#include "kernels_impl.h"

enum { GROUP = 8 }; /* rows whose sums are finished together (4: 0.147 ms, 16: 0.164) */

/* acc[i] = the float sum of x[j + i] over the whole 16-blocks of n (the
 * vector part of every row sum below; the rest is the caller's, in double).
 * Each sums into a local array, copied out at the end: summed through the
 * pointer, which may alias x, it ran 2x slower. */
CPU_CLONES static void lanes_sum(float *restrict out, const float *x, int64_t n) {
    float acc[16] = {0};
    for (int64_t j = 0; j + 16 <= n; j += 16)
        for (int i = 0; i < 16; i++) acc[i] += x[j + i];
    memcpy(out, acc, sizeof acc);
}

/* acc[i] = the float sum of (x - mean)^2 over lane i */
CPU_CLONES static void lanes_sq_dev(float *restrict out, const float *x, int64_t n, float mean) {
    float acc[16] = {0};
    for (int64_t j = 0; j + 16 <= n; j += 16)
        for (int i = 0; i < 16; i++) {
            float d = x[j + i] - mean;
            acc[i] += d * d;
        }
    memcpy(out, acc, sizeof acc);
}

/* acc[i] = the float sum of dy * xhat over lane i (issue 14: one
 * accumulator array a loop; sum(dy) and this in one loop made gcc vectorize
 * across j with lane shuffles, 4x slower, for the same sums) */
CPU_CLONES static void lanes_dot_xhat(float *restrict out, const float *x, const float *dy, int64_t n, float mean,
                                      float r) {
    float acc[16] = {0};
    for (int64_t j = 0; j + 16 <= n; j += 16)
        for (int i = 0; i < 16; i++) acc[i] += dy[j + i] * ((x[j + i] - mean) * r);
    memcpy(out, acc, sizeof acc);
}

/* s[q] = tail[q] + acc[q][0] + ... + acc[q][15] in double, in that order, for
 * g rows at once: each row's sum is a chain of 16 dependent additions, and
 * interleaving the rows' chains lets them overlap (issue 14: the chains, not
 * the vector loops, were most of a 128-wide row's time) */
static void finish(double *s, float acc[][16], const double *tail, int g) {
    for (int q = 0; q < g; q++) s[q] = tail[q];
    for (int i = 0; i < 16; i++)
        for (int q = 0; q < g; q++) s[q] += acc[q][i];
}

CPU_CLONES static void normalize_row(float *y, const float *x, int64_t n, float mean, float r) {
    for (int64_t j = 0; j < n; j++) y[j] = (x[j] - mean) * r;
}

CPU_CLONES static void grad_row(float *dx, const float *x, const float *dy, int64_t n, float mean, float r,
                                float m_dy, float m_dyx) {
    for (int64_t j = 0; j < n; j++) dx[j] = mg_normalize_grad((x[j] - mean) * r, dy[j], r, m_dy, m_dyx);
}

/* s[q] = the sum of row q of p (c floats each), g rows at once */
static void rows_sum(double *s, const float **p, int g, int64_t c) {
    float acc[GROUP][16];
    double tail[GROUP];
    for (int q = 0; q < g; q++) {
        lanes_sum(acc[q], p[q], c);
        tail[q] = 0;
        for (int64_t j = c / 16 * 16; j < c; j++) tail[q] += p[q][j];
    }
    finish(s, acc, tail, g);
}

/* rows row0 .. row0 + g of the op: the mean and 1 / sqrt(var + epsilon) of
 * each row of x as both kernels compute them, then y or dx. Per row, the
 * same operations in the same order as one row at a time. */
static void rows_group(const rt_kernel_args *k, int64_t row0, int g, int64_t c, double epsilon, bool grad) {
    const float *x[GROUP] = {0}, *dy[GROUP] = {0};
    float acc[GROUP][16], mean[GROUP], r[GROUP];
    double s[GROUP], tail[GROUP];
    int64_t j0 = c / 16 * 16;
    for (int q = 0; q < g; q++) x[q] = IN_F32(k, 0) + (row0 + q) * c;
    rows_sum(s, x, g, c);
    for (int q = 0; q < g; q++) {
        mean[q] = (float)(s[q] / (double)c);
        lanes_sq_dev(acc[q], x[q], c, mean[q]);
        tail[q] = 0;
        for (int64_t j = j0; j < c; j++) tail[q] += (double)(x[q][j] - mean[q]) * (x[q][j] - mean[q]);
    }
    finish(s, acc, tail, g);
    for (int q = 0; q < g; q++) r[q] = (float)(1.0 / sqrt(s[q] / (double)c + epsilon));
    if (!grad) {
        for (int q = 0; q < g; q++) normalize_row((float *)k->out + (row0 + q) * c, x[q], c, mean[q], r[q]);
        return;
    }
    double s_dy[GROUP];
    for (int q = 0; q < g; q++) dy[q] = IN_F32(k, 1) + (row0 + q) * c;
    rows_sum(s_dy, dy, g, c);
    for (int q = 0; q < g; q++) {
        lanes_dot_xhat(acc[q], x[q], dy[q], c, mean[q], r[q]);
        tail[q] = 0;
        for (int64_t j = j0; j < c; j++) tail[q] += (double)dy[q][j] * ((x[q][j] - mean[q]) * r[q]);
    }
    finish(s, acc, tail, g);
    for (int q = 0; q < g; q++)
        grad_row((float *)k->out + (row0 + q) * c, x[q], dy[q], c, mean[q], r[q], (float)(s_dy[q] / (double)c),
                 (float)(s[q] / (double)c));
}

int cpu_k_normalize(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    const ir_shape *s = &k->node->shape;
    int64_t c = s->dim[s->rank - 1], rows = c ? ir_shape_numel(s) / c : 0;
    bool grad = k->node->op == OP_NORMALIZE_GRAD;
    for (int64_t row = 0; row < rows; row += GROUP)
        rows_group(k, row, rows - row < GROUP ? (int)(rows - row) : GROUP, c, k->node->fattr[0], grad);
    return 0;
}
