/* batch_norm.c - issue 14 (batch norm in training): batch norm's per-channel
 * statistics and its normalization with given statistics, x viewed as
 * [rows, c] (c its last axis):
 *   channel_mean(x)         [c]  sum_r x / rows
 *   channel_var(x, m)       [c]  sum_r (x - m)^2 / rows (two-pass: m given)
 *   channel_sum_dot(x, m, dy) [2, c]  sum_r dy; sum_r dy (x - m)  (db, ds)
 *   scale_shift(x, m, s, b)      (x - m) s + b
 * Each a single pass over x (and dy). Sums: columns in chunks of 256, rows in
 * blocks of 64 summed in float (four interleaved accumulators), blocks
 * combined in double, in a fixed order, so results depend on the data alone. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include "../ops_math.h"
#include "kernels_impl.h"

enum { COLS = 256, ROWS = 64 };

typedef enum { SUM_X, SUM_SQ_DEV } channel_sum_kind;

/* the term of row r, column i (a column of chunk c0) */
#define TERM_X(r, i) (x[(r) * c + c0 + (i)])
#define TERM_SQ_DEV(r, i) ((x[(r) * c + c0 + (i)] - m[c0 + (i)]) * (x[(r) * c + c0 + (i)] - m[c0 + (i)]))
#define TERM_DY(r, i) (dy[(r) * c + c0 + (i)])
#define TERM_DY_DEV(r, i) (dy[(r) * c + c0 + (i)] * (x[(r) * c + c0 + (i)] - m[c0 + (i)]))

/* part[i] = sum of TERM over rows [r0, r1) of column i < w: four rows at a
 * time into four accumulators (a chain of dependent adds per vector would
 * bound a few channels' sum by the add latency), combined in a fixed order.
 * Eight columns at a time (nc of them from column i0; 8, a constant, but at
 * the tail), so that the accumulators stay in registers: a column's sum is
 * the same sequence of adds however the columns are grouped. */
#define GROUP_SUM(TERM, i0, nc)                                                                                   \
    do {                                                                                                          \
        float a0[8] = {0}, a1[8] = {0}, a2[8] = {0}, a3[8] = {0};                                                 \
        int64_t r = r0;                                                                                           \
        for (; r + 4 <= r1; r += 4)                                                                               \
            for (int64_t i = 0; i < (nc); i++)                                                                    \
                a0[i] += TERM(r, i0 + i), a1[i] += TERM(r + 1, i0 + i), a2[i] += TERM(r + 2, i0 + i),             \
                a3[i] += TERM(r + 3, i0 + i);                                                                     \
        for (; r < r1; r++)                                                                                       \
            for (int64_t i = 0; i < (nc); i++) a0[i] += TERM(r, i0 + i);                                          \
        for (int64_t i = 0; i < (nc); i++) part[i0 + i] = (a0[i] + a1[i]) + (a2[i] + a3[i]);                      \
    } while (0)
#define BLOCK_SUM(TERM)                                                                                           \
    do {                                                                                                          \
        int64_t g0 = 0;                                                                                           \
        for (; g0 + 8 <= w; g0 += 8) GROUP_SUM(TERM, g0, 8);                                                      \
        if (g0 < w) GROUP_SUM(TERM, g0, w - g0);                                                                  \
    } while (0)

CPU_CLONES static void block_sum(float *part, channel_sum_kind kind, const float *x, const float *m, int64_t c,
                                 int64_t c0, int64_t w, int64_t r0, int64_t r1) {
    if (kind == SUM_X) BLOCK_SUM(TERM_X);
    else BLOCK_SUM(TERM_SQ_DEV);
}

/* part[i] = sum of S, part[COLS + i] = sum of D over rows [r0, r1) of column
 * i < w: BLOCK_SUM's order for each, in one pass (eight columns at a time:
 * eight vectors of accumulators) */
#define GROUP_SUM_DOT(S, D, i0, nc)                                                                               \
    do {                                                                                                          \
        float s0[8] = {0}, s1[8] = {0}, s2[8] = {0}, s3[8] = {0};                                                 \
        float d0[8] = {0}, d1[8] = {0}, d2[8] = {0}, d3[8] = {0};                                                 \
        int64_t r = r0;                                                                                           \
        for (; r + 4 <= r1; r += 4)                                                                               \
            for (int64_t i = 0; i < (nc); i++) {                                                                  \
                s0[i] += S(r, i0 + i), s1[i] += S(r + 1, i0 + i), s2[i] += S(r + 2, i0 + i);                      \
                s3[i] += S(r + 3, i0 + i);                                                                        \
                d0[i] += D(r, i0 + i), d1[i] += D(r + 1, i0 + i), d2[i] += D(r + 2, i0 + i);                      \
                d3[i] += D(r + 3, i0 + i);                                                                        \
            }                                                                                                     \
        for (; r < r1; r++)                                                                                       \
            for (int64_t i = 0; i < (nc); i++) s0[i] += S(r, i0 + i), d0[i] += D(r, i0 + i);                      \
        for (int64_t i = 0; i < (nc); i++)                                                                        \
            part[i0 + i] = (s0[i] + s1[i]) + (s2[i] + s3[i]), part[COLS + i0 + i] = (d0[i] + d1[i]) + (d2[i] + d3[i]); \
    } while (0)
#define BLOCK_SUM_DOT(S, D)                                                                                       \
    do {                                                                                                          \
        int64_t g0 = 0;                                                                                           \
        for (; g0 + 8 <= w; g0 += 8) GROUP_SUM_DOT(S, D, g0, 8);                                                  \
        if (g0 < w) GROUP_SUM_DOT(S, D, g0, w - g0);                                                              \
    } while (0)

/* of dy and dy (x - m) */
CPU_CLONES static void block_sum_dot(float *part, const float *x, const float *m, const float *dy, int64_t c,
                                     int64_t c0, int64_t w, int64_t r0, int64_t r1) {
    BLOCK_SUM_DOT(TERM_DY, TERM_DY_DEV);
}

/* out[j] = sum_r dy, out[c + j] = sum_r dy (x - m): channel_sums' blocks and order */
static void channel_sum_dot(float *out, const float *x, const float *m, const float *dy, int64_t rows, int64_t c) {
    for (int64_t c0 = 0; c0 < c; c0 += COLS) {
        int64_t w = c - c0 < COLS ? c - c0 : COLS;
        double acc[2 * COLS] = {0};
        float part[2 * COLS];
        for (int64_t r0 = 0; r0 < rows; r0 += ROWS) {
            block_sum_dot(part, x, m, dy, c, c0, w, r0, r0 + ROWS < rows ? r0 + ROWS : rows);
            for (int64_t i = 0; i < w; i++) acc[i] += part[i], acc[COLS + i] += part[COLS + i];
        }
        for (int64_t i = 0; i < w; i++) out[c0 + i] = (float)acc[i], out[c + c0 + i] = (float)acc[COLS + i];
    }
}

/* out[j] = scale * sum_r f(row r, column j) */
static void channel_sums(float *out, channel_sum_kind kind, const float *x, const float *m, int64_t rows, int64_t c,
                         double scale) {
    for (int64_t c0 = 0; c0 < c; c0 += COLS) {
        int64_t w = c - c0 < COLS ? c - c0 : COLS;
        double acc[COLS] = {0};
        float part[COLS];
        for (int64_t r0 = 0; r0 < rows; r0 += ROWS) {
            block_sum(part, kind, x, m, c, c0, w, r0, r0 + ROWS < rows ? r0 + ROWS : rows);
            for (int64_t i = 0; i < w; i++) acc[i] += part[i];
        }
        for (int64_t i = 0; i < w; i++) out[c0 + i] = (float)(acc[i] * scale);
    }
}

CPU_CLONES static void scale_shift_rows(float *y, const float *x, const float *m, const float *s, const float *b,
                                        int64_t rows, int64_t c) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < c; j++) y[r * c + j] = mg_scale_shift(x[r * c + j], m[j], s[j], b[j]);
}

int cpu_k_batch_norm(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    const ir_shape *xs = IN_SHAPE(k, 0);
    int64_t c = xs->dim[xs->rank - 1], rows = c ? ir_shape_numel(xs) / c : 0;
    const float *x = IN_F32(k, 0);
    switch (k->node->op) {
    case OP_CHANNEL_MEAN: channel_sums(k->out, SUM_X, x, NULL, rows, c, rows ? 1.0 / (double)rows : 0); break;
    case OP_CHANNEL_VAR: channel_sums(k->out, SUM_SQ_DEV, x, IN_F32(k, 1), rows, c, rows ? 1.0 / (double)rows : 0); break;
    case OP_CHANNEL_SUM_DOT: channel_sum_dot(k->out, x, IN_F32(k, 1), IN_F32(k, 2), rows, c); break;
    default: scale_shift_rows(k->out, x, IN_F32(k, 1), IN_F32(k, 2), IN_F32(k, 3), rows, c); break;
    }
    return 0;
}
