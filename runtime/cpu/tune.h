/* tune.h - kernel choice by measurement (issue 14): for each GEMM and
 * convolution shape the fastest of several implementations, measured at its
 * first use and cached per machine, as cudnnFind and XLA's autotuning do.
 * Internal to the CPU backend and its tests. */
#ifndef MGC_CPU_TUNE_H
#define MGC_CPU_TUNE_H

#include <stddef.h>

#include "kernels_impl.h"

/* Runs node k with candidate c of its op (an index into cpu_tune_op.names). */
typedef int (*cpu_tune_fn)(const rt_kernel_args *k, int c, char *err, size_t cap);

/* the implementations of one op: names[0] is the default (the one used before
 * issue 14), every candidate computes the same function deterministically */
typedef struct {
    const char *const *names;
    int n;
    cpu_tune_fn run;
    /* issue 14 (speed): whether candidate c can run node k (NULL: every one
     * can); one that cannot is neither measured nor forced */
    int (*applies)(const rt_kernel_args *k, int c);
} cpu_tune_op;

/* Runs k with the candidate chosen for its key (op, threads, input and output
 * shapes, attributes). The first use of a key in this process takes the
 * MGC_KERNELS override, else the cache file, else measures every candidate
 * (one warm-up run, then the least of three timed runs) on k's own buffers,
 * runs the winner last (so the output is the winner's) and rewrites the
 * cache. One choice per key for the whole process. */
int cpu_tune_run(const rt_kernel_args *k, const cpu_tune_op *op, char *err, size_t cap);

/* The candidate that node k last ran by its memo (a session's node; NULL
 * before its first run and for an untuned op): the backend's kernel_choice. */
const char *cpu_tune_named(const rt_kernel_args *k);

/* ---- for tests and tools ---- */

/* Forgets every choice; the next use reads MGC_KERNELS and the cache again. */
void cpu_tune_reset(void);
/* The cache file ($MGC_CACHE_DIR, else $XDG_CACHE_HOME/mgc, else
 * ~/.cache/mgc, then kernels-<hash of the CPU model, its flags and the
 * OpenBLAS and oneDNN builds>.json); "" when there is no home. */
const char *cpu_tune_cache_path(void);
/* The candidate name chosen for k's key, NULL if none yet. */
const char *cpu_tune_choice(const rt_kernel_args *k);
/* Keys measured (not read from the cache or forced) since the last reset. */
int cpu_tune_measured(void);

/* ---- oneDNN, shared by dnnl.c and gemm_dnnl.c ---- */

/* a failed oneDNN call: the kernel fails with its name and status (k, err, cap in scope) */
#define DNNL_TRY(call)                                                                                         \
    do {                                                                                                       \
        dnnl_status_t st_ = (call);                                                                            \
        if (st_ != dnnl_success) return cpu_kerr(k, err, cap, "oneDNN %s failed (status %d)", #call, (int)st_); \
    } while (0)

/* dnnl.c: sets OpenMP's thread count of the calling thread (oneDNN runs on
 * OpenMP; the count is per thread) to cpu_kernels_threads(); call before
 * creating a primitive, which fixes its thread count when created */
void cpu_dnnl_apply_threads(void);
/* gemm_dnnl.c: matmul through oneDNN's matmul primitive (the "onednn" candidate);
 * 1 when it added a matmul_epilogue's bias (a bias alone), 0 when the caller
 * applies the epilogue, -1 on failure */
int cpu_dnnl_matmul(const rt_kernel_args *k, char *err, size_t cap);
/* dnnl.c: conv2d and its gradients with the filter in oneDNN's preferred
 * layout (variant 0, reordered) or in Keras' HWIO layout (variant 1) */
int cpu_dnnl_conv(const rt_kernel_args *k, int variant, char *err, size_t cap);
/* conv_direct.c (issue 14, speed): the "direct" candidate of conv2d,
 * conv2d_epilogue and conv2d_grad_filter with one input channel (groups 1,
 * output channels a multiple of 8); _applies says whether k is such a node */
int cpu_conv_direct_applies(const rt_kernel_args *k);
int cpu_conv_direct(const rt_kernel_args *k, char *err, size_t cap);
/* conv_winograd.c (issue 14, ResNet-20 speed): the "winograd" candidate of
 * conv2d, conv2d_epilogue, conv2d_grad_input and conv2d_grad_filter with a
 * 3x3 filter, stride 1, dilation 1, groups 1, on one thread; _applies says
 * whether k is such a node */
int cpu_conv_winograd_applies(const rt_kernel_args *k);
int cpu_conv_winograd(const rt_kernel_args *k, char *err, size_t cap);
/* whether this machine runs its AVX-512 path (x86-64-v4, 16 channels a
 * vector); on 0 the AVX2 path runs instead, for tests: both give the same bits */
int cpu_conv_winograd_avx512(int on);
/* gemm_blocked.c (issue 14, char_gpt speed): the "blocked" candidate of
 * matmul and matmul_epilogue's GEMM, a register-blocked one-thread sgemm
 * (any shape, transposes, batch); a candidate on one thread only */
int cpu_blocked_matmul(const rt_kernel_args *k, char *err, size_t cap);
/* gemm_thin.c (issue 14, the seed CNN's dense layer): the "thin" candidate
 * of matmul and matmul_epilogue's GEMM, a one-thread sgemm for K <= 512
 * (no k blocks, op(a) read in place, op(b) packed); _applies says whether k
 * is such a node */
int cpu_thin_applies(const rt_kernel_args *k);
int cpu_thin_matmul(const rt_kernel_args *k, char *err, size_t cap);

#endif
