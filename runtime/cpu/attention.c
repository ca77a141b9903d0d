/* attention.c - issue 14 (char_gpt speed): the causal masked softmax of
 * attention, forward and backward, one kernel each, and the backward with
 * attention's dropout gradient folded in. x [..., r, c] is a stack of r x c matrices;
 * row i keeps columns j < min(i + 1, c) and the others are neither read nor
 * exp'd (Keras adds -1e9 there, whose exp is 0):
 *   causal_softmax:      y = softmax over the kept j of scale * x, 0 elsewhere;
 *   causal_softmax_grad: (y, dy) -> scale * y * (dy - sum_kept(dy * y)), 0 elsewhere;
 *   causal_softmax_dropout_grad: (y, dp) -> causal_softmax_grad(y, dropout_grad(dp)),
 *     dp masked on the fly as the dropout op masks (its integer hash of seed,
 *     step and global element replica * numel + index, the same product dp *
 *     factor), so the bits of the two unfused kernels; only the kept j hash.
 * One function walks all rows (CPU_FMA16_CLONES, so everything in it is compiled
 * for AVX2 or AVX-512 with FMA and inlined, no dispatch per row; issue 14, char_gpt's
 * non-GEMM time: the FMA clone runs causal_softmax 15-17% faster than the
 * "avx2" one, its exp polynomial contracted). Each row is 8-lane
 * vector passes in L1: scale, mask to -inf and the maximum (explicit vectors,
 * NaN propagates); exp through mg_exp_shifted in a loop the compiler
 * vectorizes (runtime/ops_math.h, the CUDA kernels' math); sums in 8 float
 * lanes combined in double. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ops_math.h"
#include "kernels_impl.h"
#include "vec8.h"

typedef struct {
    const float *x, *dy; /* dy: the gradients' second input, else NULL */
    float *out;
    int64_t r, c;
    float scale;
    bool dropout;        /* the mask applies (causal_softmax_dropout_grad in training) */
    uint64_t key, base;  /* dropout's (seed, step) key, replica * numel */
    float rate;          /* dropout's */
} rows_job;

/* sum of the 8 lanes in double, in lane order (by pointer: a vector argument
 * changes the ABI between the AVX2 clone and the portable one, -Wpsabi) */
static inline double lanes_sum(const v8 *a) {
    double s = 0;
    for (int i = 0; i < 8; i++) s += (*a)[i];
    return s;
}

/* y[0, m) = scale * x over the n kept, -inf over [n, m); returns the maximum (NaN if a kept one is) */
static inline float row_scaled_max(float *y, const float *x, int64_t n, int64_t m, float scale) {
    const v8i lane = {0, 1, 2, 3, 4, 5, 6, 7};
    const v8 ninf = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    v8 vmx = ninf;
    int64_t j = 0;
    for (; j + 8 <= m; j += 8) {
        v8i kept = lane + (int32_t)j < (int32_t)n;
        v8 v = SEL8(kept, scale * LD8(x + j), ninf);
        ST8(y + j, v);
        vmx = SEL8((v > vmx) | (v != v), v, vmx);
    }
    float mx = vmx[0];
    for (int i = 1; i < 8; i++) mx = vmx[i] > mx || vmx[i] != vmx[i] ? vmx[i] : mx;
    for (; j < m; j++) {
        float v = mg_select(j < n, scale * x[j], -INFINITY);
        y[j] = v;
        mx = v > mx || v != v ? v : mx;
    }
    return mx;
}

/* y = softmax of the n kept of x over [0, m) (m: n rounded up to 8 lanes, at
 * most c; [n, m) come out 0); returns 1 / the sum, not yet applied */
static inline float row_exp(float *y, const float *x, int64_t n, int64_t m, float scale) {
    float mx = row_scaled_max(y, x, n, m, scale);
    for (int64_t j = 0; j < m; j++) y[j] = mg_exp_shifted(y[j], mx);
    v8 acc = {0};
    int64_t j = 0;
    for (; j + 8 <= m; j += 8) acc += LD8(y + j);
    double s = lanes_sum(&acc);
    for (; j < m; j++) s += y[j];
    return (float)(1.0 / s);
}

/* sum(a * b) over n: 8 float lanes, combined in double */
static inline double row_dot(const float *a, const float *b, int64_t n) {
    v8 acc = {0};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) acc += LD8(a + j) * LD8(b + j);
    double s = lanes_sum(&acc);
    for (; j < n; j++) s += (double)a[j] * b[j];
    return s;
}

/* Rows are fetched PREFETCH_ROWS ahead (issue 14): in the step the inputs
 * come from memory (the backward reads the probabilities the forward saved),
 * and a row's few lines end before the hardware prefetcher has caught up.
 * Into L1, interleaved: through kernels_impl.h's cpu_prefetch (into L2, range
 * after range) causal_softmax took 0.95-1.12 ms against 0.60-0.72 with the
 * operands evicted (bench_gpt_kernels, GEMM_EVICT=32768, 5 alternated pairs). */
enum { PREFETCH_ROWS = 4 };

static inline void prefetch_row(const float *x, const float *dy, float *out, int64_t kept, int64_t c) {
    for (int64_t j = 0; j < kept; j += 16) {
        __builtin_prefetch(x + j, 0, 3);
        if (dy) __builtin_prefetch(dy + j, 0, 3);
    }
    for (int64_t j = 0; j < c; j += 16) __builtin_prefetch(out + j, 1, 3);
}

CPU_FMA16_CLONES static void causal_rows(const rows_job *jb, int64_t row0, int64_t row1) {
    int64_t c = jb->c;
    float scale = jb->scale;
    for (int64_t row = row0; row < row1; row++) {
        int64_t i = row % jb->r, n = i + 1 < c ? i + 1 : c, m = (n + 7) / 8 * 8 < c ? (n + 7) / 8 * 8 : c;
        float *out = jb->out + row * c;
        const float *x = jb->x + row * c, *dy = jb->dy ? jb->dy + row * c : NULL;
        if (row + PREFETCH_ROWS < row1) {
            int64_t ahead = PREFETCH_ROWS * c, ai = (row + PREFETCH_ROWS) % jb->r;
            prefetch_row(x + ahead, dy ? dy + ahead : NULL, out + ahead, ai + 1 < c ? ai + 1 : c, c);
        }
        uint64_t at = jb->base + (uint64_t)(row * c);
        if (dy) { /* causal_softmax_grad (y = in 0, dy); with dropout dy masked into out first */
            const float *y = x, *d = dy;
            if (jb->dropout) { /* the dropout kernel's loop, in its x86-64-v4 clone */
                cpu_dropout_apply(out, dy, n, jb->key, at, jb->rate);
                d = out;
            }
            float dot = (float)row_dot(y, d, n);
            for (int64_t j = 0; j < n; j++) out[j] = mg_causal_softmax_grad(y[j], d[j], dot, scale);
            m = n;
        } else { /* causal_softmax */
            float inv = row_exp(out, x, n, m, scale);
            for (int64_t j = 0; j < m; j++) out[j] *= inv;
        }
        if (m < c) memset(out + m, 0, (size_t)(c - m) * sizeof *out);
    }
}

/* causal_softmax (x), causal_softmax_grad (y, dy) and causal_softmax_dropout_grad
 * (y, dp): rows of the last axis, row i of each matrix (i along the axis
 * before) keeping min(i + 1, c) */
int cpu_k_causal_softmax(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    const ir_shape *s = &k->node->shape;
    ir_op op = k->node->op;
    int64_t c = s->dim[s->rank - 1], numel = ir_shape_numel(s), rows = c ? numel / c : 0;
    rows_job jb = {.x = IN_F32(k, 0), .out = k->out, .r = s->dim[s->rank - 2], .c = c,
                   .scale = (float)k->node->fattr[0]};
    if (op == OP_CAUSAL_SOFTMAX_GRAD || op == OP_CAUSAL_SOFTMAX_DROPOUT_GRAD) jb.dy = IN_F32(k, 1);
    if (op == OP_CAUSAL_SOFTMAX_DROPOUT_GRAD) {
        jb.rate = (float)k->node->fattr[1];
        jb.dropout = k->training && *k->training;
        jb.key = mg_dropout_key((uint64_t)k->node->iattr[0], k->step ? *k->step : 0);
        jb.base = (uint64_t)k->replica * (uint64_t)numel;
    }
    causal_rows(&jb, 0, rows);
    return 0;
}

/* the rows of output matrix i, in place, as soon as causal_matmul.c has made it */
static void matrix_rows(void *job, int64_t i) {
    const rows_job *jb = job;
    causal_rows(jb, i * jb->r, (i + 1) * jb->r);
}

/* causal_matmul_softmax (a, b): each [r, r] matrix of scores a b (tri 0)
 * turned into its causal softmax in place; causal_matmul_softmax_grad (a, b,
 * y): each matrix of a b, the weights' gradient dp, turned into
 * causal_softmax_dropout_grad(y, dp) in place (no mask when rate is 0). The
 * rows run the unfused kernels' code on the same scores: the same bits. */
int cpu_k_causal_matmul_softmax(const rt_kernel_args *k, char *err, size_t cap) {
    const ir_node *n = k->node;
    const ir_shape *s = &n->shape;
    int64_t c = s->dim[s->rank - 1];
    rows_job jb = {.x = k->out, .out = k->out, .r = s->dim[s->rank - 2], .c = c, .scale = (float)n->fattr[0]};
    if (n->op == OP_CAUSAL_MATMUL_SOFTMAX_GRAD) {
        jb.x = IN_F32(k, 2), jb.dy = k->out;
        jb.rate = (float)n->fattr[1];
        jb.dropout = k->training && *k->training && n->fattr[1] > 0;
        jb.key = mg_dropout_key((uint64_t)n->iattr[2], k->step ? *k->step : 0);
        jb.base = (uint64_t)k->replica * (uint64_t)ir_shape_numel(s);
    }
    return cpu_causal_matmul_run(k, 0, 0, matrix_rows, &jb, err, cap);
}
