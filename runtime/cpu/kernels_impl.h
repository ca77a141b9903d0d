/* kernels_impl.h - what the CPU kernel files share (not part of the backend API). */
#ifndef MGC_CPU_KERNELS_IMPL_H
#define MGC_CPU_KERNELS_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_kernels.h"

/* Compute-bound loops (division, square root) are compiled for AVX-512 and
 * AVX2 as well, picked at load time; the project itself builds for x86-64.
 * The files that use CPU_CLONES are compiled with -ffp-contract=off
 * (CMakeLists.txt): the "avx512f" clone would otherwise contract a * b + c to
 * an FMA where "avx2" (no FMA) does not, so an AVX-512 machine would give
 * other bits than an AVX2 one, and batch_norm.c's unfused scale_shift
 * (x - m) * s + b other bits than the fused kernels', which keep the multiply
 * and the add apart (bn_epilogue.c): ResNet-20 fused vs --no-fuse was 1.5e-3
 * apart after 3 steps on an AVX-512 machine (cli_epilogue). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CPU_CLONES
#endif

/* issue 14 (char_gpt speed): the loops of erf, gelu and their gradients
 * (gelu.c) and the causal softmax rows (attention.c) are polynomials, and compiled for x86-64-v3
 * (AVX2 + FMA, contracted a * b + c) they run 1.3-1.4x faster than the "avx2"
 * clone's separate multiplies and adds; one clone for AVX2 and AVX-512
 * machines alike, so these ops give the same bits on both. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CPU_FMA_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define CPU_FMA_CLONES
#endif

/* The causal softmax rows also in an x86-64-v4 clone: the compiler vectorizes
 * their exp loops in 16 lanes there, and a 512-bit operation counts once among
 * the operations a core keeps waiting, so twice the lanes of the exp polynomial
 * are in flight (causal_softmax 0.68 -> 0.52 ms, bench_gpt_kernels). Each lane
 * does the same contracted operations as in the x86-64-v3 clone, and the row
 * sums stay explicit 8-lane vectors, so the bits are those of x86-64-v3 (char_gpt's
 * checkpoint byte-identical, issue 14). gelu.c does the same by hand. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CPU_FMA16_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CPU_FMA16_CLONES
#endif

/* issue 14 (char_gpt speed): dropout's mask is an integer hash with two
 * 64-bit multiplies per element (ops_math.h, mg_dropout_bits). The "avx512f"
 * clone has no vpmullq (AVX-512DQ) and builds each of them from three
 * vpmuludq; the x86-64-v4 clone (F, BW, CD, DQ, VL) runs the mask twice as
 * fast (bench_gpt_kernels dropout). Integers only: every clone gives the same
 * bits. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CPU_HASH_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define CPU_HASH_CLONES
#endif

/* o = x * dropout's factor of element base + i (0 or 1 / (1 - rate)) over n:
 * the dropout kernels' loop (elementwise.c), and attention.c's for the
 * dropout gradient it folds in (the bits of mg_dropout_scale) */
void cpu_dropout_apply(float *o, const float *x, int64_t n, uint64_t key, uint64_t base, float rate);

/* gelu.c (issue 14, char_gpt speed), the loops compiled with FMA, called by
 * activations.c's kernels and fused.c's instructions alike: o = erf(x),
 * o = erf_grad(x, dy), and o = gelu(x), o = gelu_grad(x, dy) 8 lanes at a
 * time, the bits of ops_math.h's mg_gelu and mg_gelu_grad */
void cpu_erf(float *o, const float *x, int64_t n);
void cpu_erf_grad(float *o, const float *x, const float *dy, int64_t n);
void cpu_gelu(float *o, const float *x, int64_t n);
void cpu_gelu_grad(float *o, const float *x, const float *dy, int64_t n);

/* sum(dy * y) over n elements in 16 float lanes combined in double: the
 * softmax gradients' row dot (reduce.c; attention.c's causal softmax) */
double cpu_dot16(const float *y, const float *dy, int64_t n);

/* Prefetching a kernel's next unit of work while it computes this one (issue
 * 14: in a step, data saved by the forward pass comes from memory, and short
 * or strided reads outrun the hardware prefetcher): up to three byte ranges,
 * fetched into L2 a few lines per cpu_prefetch_some call, the last `writes`
 * of them for writing. causal_matmul.c (the next matrix), conv_pool.c (the
 * next image). Addresses as integers: a range's last step may pass its end. */
typedef struct {
    uintptr_t at[3], end[3]; /* what is left of each range; empty ranges are skipped */
    int first_write;         /* ranges from this one on are fetched for writing */
    int64_t per_call;        /* lines a call fetches */
} cpu_prefetch;

/* the n <= 3 ranges (p[k], bytes[k]) (p[k] NULL: none), fetched over `calls` calls */
static inline cpu_prefetch cpu_prefetch_plan(int n, const void *const *p, const int64_t *bytes, int writes,
                                             int64_t calls) {
    cpu_prefetch f = {.first_write = n - writes};
    int64_t lines = 0;
    for (int k = 0; k < n; k++) {
        f.at[k] = f.end[k] = (uintptr_t)p[k];
        if (p[k]) f.end[k] += (uintptr_t)bytes[k], lines += bytes[k] / 64 + 1;
    }
    f.per_call = calls > 0 ? (lines + calls - 1) / calls : lines;
    return f;
}

static inline void cpu_prefetch_some(cpu_prefetch *f) {
    int64_t left = f->per_call;
    for (int k = 0; k < 3; k++)
        for (; f->at[k] < f->end[k] && left > 0; f->at[k] += 64, left--)
            if (k >= f->first_write) __builtin_prefetch((const void *)f->at[k], 1, 2);
            else __builtin_prefetch((const void *)f->at[k], 0, 2);
}

typedef int (*cpu_kernel_fn)(const rt_kernel_args *k, char *err, size_t cap);

/* Writes "op 'name': <message>" into err and returns -1. */
int cpu_kerr(const rt_kernel_args *k, char *err, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* scratch.c: a buffer of at least n floats kept across calls for the calling
 * thread and one kernel family (its own, so two families never share one),
 * grown as needed and freed when the thread ends; NULL when out of memory */
enum { CPU_SCRATCH_WINOGRAD, CPU_SCRATCH_THIN, CPU_SCRATCH_USERS };
float *cpu_thread_scratch(int user, size_t n);

/* Threads a kernel may use (cpu_kernels_set_threads). */
int cpu_kernels_threads(void);

#define IN_F32(k, i) ((const float *)(k)->in[i])
#define IN_SHAPE(k, i) (&(k)->in_nodes[i]->shape)
#define IN_NUMEL(k, i) ir_shape_numel(IN_SHAPE(k, i))
#define OUT_NUMEL(k) ir_shape_numel(&(k)->node->shape)

/* matmul.c (issue 13: batched); also matmul_epilogue's kernel (issue 14:
 * (a, b, bias [n][, residual]) -> act(matmul(a, b) + bias [+ residual]),
 * its candidates applying the epilogue, cpu_epilogue_of) */
int cpu_k_matmul(const rt_kernel_args *k, char *err, size_t cap);

/* embed.c (issue 13): embedding lookup and its gradient */
int cpu_k_gather(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_scatter_add(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_all_gather(const rt_kernel_args *k, char *err, size_t cap); /* f32 or i32 */

/* attention.c (issue 14, char_gpt speed): causal_softmax, causal_softmax_grad and
 * causal_softmax_dropout_grad; causal_matmul_softmax and its gradient */
int cpu_k_causal_softmax(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_causal_matmul_softmax(const rt_kernel_args *k, char *err, size_t cap);
/* causal_matmul.c (issue 14, char_gpt speed): matmul with a triangular matrix */
int cpu_k_causal_matmul(const rt_kernel_args *k, char *err, size_t cap);
/* the causal matmul of node k's inputs 0 and 1 (trans_a, trans_b its iattr[0],
 * iattr[1]) into k->out with the triangle tri, upper; after(ctx, i), when
 * given, runs on each output matrix i as soon as it is made, while it is in
 * cache (causal_matmul_softmax turns the scores into weights there) */
typedef void cpu_matrix_done(void *ctx, int64_t i);
int cpu_causal_matmul_run(const rt_kernel_args *k, int tri, int upper, cpu_matrix_done *after, void *ctx, char *err,
                          size_t cap);
/* normalize.c (issue 14, char_gpt speed): normalize and normalize_grad (layer norm's core) */
int cpu_k_normalize(const rt_kernel_args *k, char *err, size_t cap);
/* batch_norm.c (issue 14, batch norm in training): channel_mean, channel_var,
 * scale_shift, channel_sum_dot */
int cpu_k_batch_norm(const rt_kernel_args *k, char *err, size_t cap);

/* onehot.c (issue 13) */
int cpu_k_one_hot(const rt_kernel_args *k, char *err, size_t cap);

/* elementwise.c */
int cpu_k_binary(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_unary(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_unary_grad(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_broadcast_to(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_cast(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_dropout(const rt_kernel_args *k, char *err, size_t cap);

/* fused.c (issue 14): a fused node's program over tiles */
int cpu_k_fused(const rt_kernel_args *k, char *err, size_t cap);

/* activations.c (issue 12) */
int cpu_k_activation(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_activation_grad(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_in_top_k(const rt_kernel_args *k, char *err, size_t cap);

/* reduce.c */
int cpu_k_reduce(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_softmax(const rt_kernel_args *k, char *err, size_t cap); /* softmax, log_softmax, softmax_grad */
int cpu_k_sparse_xent(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_sparse_xent_grad(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_argmax_match(const rt_kernel_args *k, char *err, size_t cap);

/* shape.c: concat, slice, pad, transpose; reduce_max and reduce_min */
int cpu_k_concat(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_slice(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_pad(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_transpose(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_reduce_extreme(const rt_kernel_args *k, char *err, size_t cap);

/* optim.c */
int cpu_k_sgd(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_adam(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_rmsprop(const rt_kernel_args *k, char *err, size_t cap);
/* issue 12: optimizers and clipping (optim.c) */
int cpu_k_adagrad(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_nadam(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_lamb(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_sq_norm(const rt_kernel_args *k, char *err, size_t cap);

/* dnnl.c: convolution and pooling through oneDNN */
int cpu_k_conv2d(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_conv2d_grad_input(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_conv2d_grad_filter(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_conv2d_transpose(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_pool2d(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_pool2d_grad(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_max_pool2d(const rt_kernel_args *k, char *err, size_t cap); /* issue 14: pool.c, written directly */
/* issue 14: pool.c, the 2x2 stride-2 windows that tile x; cpu_k_max_pool_grad for the others */
int cpu_k_max_pool_grad_2x2(const rt_kernel_args *k, char *err, size_t cap);
/* issue 14 (seed CNN speed): pool.c's 2x2 stride-2 gradient; conv_direct.c's filter gradient through it */
void cpu_pool_grad_2x2(const float *x, const float *dy, float *dx, int64_t n, int64_t H, int64_t W, int64_t C, int relu);
int cpu_k_conv2d_grad_filter_pool2(const rt_kernel_args *k, char *err, size_t cap);
/* issue 14 (seed CNN speed): conv2d_relu_pool2 and its filter gradient, a pool window at a time (conv_pool.c) */
int cpu_k_conv2d_relu_pool2(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_conv2d_relu_pool2_grad_filter(const rt_kernel_args *k, char *err, size_t cap);

/* issue 14: epilogues and fused backward (epilogue.c; the conv2d epilogue in dnnl.c) */
int cpu_k_conv2d_epilogue(const rt_kernel_args *k, char *err, size_t cap);
int cpu_k_max_pool_grad(const rt_kernel_args *k, char *err, size_t cap); /* max_pool2d_grad, max_pool2d_relu_grad */
/* out[r, j] = act(out[r, j] + bias[j] [+ res[r, j]]) in the unfused order and math */
void cpu_epilogue_rows(float *out, const float *bias, const float *res, int64_t rows, int64_t n, int64_t act);
/* issue 14 (char_gpt speed): a matmul_epilogue's bias [+ residual] and
 * activation, which the blocked and thin GEMMs apply to each tile of C once
 * its sums are final, while the tile is in L1 (oneDNN a lone bias as the
 * primitive's; otherwise one pass after the GEMM, matmul.c). bias NULL: a
 * plain matmul, nothing to apply. */
typedef struct {
    const float *out, *bias, *res; /* res [..., m, n] as out; bias [n] */
    int64_t act;
} cpu_epilogue;
cpu_epilogue cpu_epilogue_of(const rt_kernel_args *k);
/* whether e is a bias [+ ReLU] without residual, which a whole tile applies
 * in registers (BIAS_RELU16 in vec8.h) */
static inline int cpu_epilogue_in_registers(const cpu_epilogue *e) {
    return e->bias && !e->res && (e->act == EPI_NONE || e->act == EPI_RELU);
}
/* applies e to the rows x cols tile of out at c (rows ldc apart, the first
 * in column col0): the same bits as cpu_epilogue_rows over all of out */
void cpu_epilogue_tile(const cpu_epilogue *e, float *c, int64_t ldc, int64_t rows, int64_t col0, int64_t cols);
/* issue 14: batch norm's scale/shift in the conv epilogue (bn_epilogue.c; its post-ops in dnnl.c) */
int cpu_k_conv2d_bn_epilogue(const rt_kernel_args *k, char *err, size_t cap);
/* out[r, j] = act((c[r, j] - mean[j]) * scale[j] + beta[j] [+ res[r, j]]), the unfused order; out may be c */
void cpu_bn_rows(float *out, const float *c, const float *mean, const float *scale, const float *beta,
                 const float *res, int64_t rows, int64_t n, int64_t act);

#endif
