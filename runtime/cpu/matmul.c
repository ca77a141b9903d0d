/* matmul.c - matmul on the CPU (issue 13): one cblas_sgemm per output matrix of
 * the broadcast batch; a rank-2 matmul is one call, as before. OpenBLAS here has
 * no cblas_sgemm_batch. Issue 14: OpenBLAS or oneDNN, chosen by measurement
 * per shape (tune.c). */
#include <cblas.h>
#include <pthread.h>

#include "tune.h"

/* OpenBLAS 0.3.21 (pthread build) shares one thread pool among its callers and
 * serializes multi-threaded level-3 calls with a lock per transpose variant of
 * its GEMM driver only, so two device threads running sgemm with different
 * transposes and more than one thread each can corrupt its state (OpenBLAS
 * issue 5836). Such calls take this lock; one-thread calls do not need it. */
static pthread_mutex_t blas_lock = PTHREAD_MUTEX_INITIALIZER;

/* C[..., m, n] = op(A)[..., m, k] x op(B)[..., k, n], row-major, batch axes broadcast */
static int openblas_matmul(const rt_kernel_args *k) {
    const ir_shape *a = IN_SHAPE(k, 0), *b = IN_SHAPE(k, 1);
    int ta = k->node->iattr[0] != 0, tb = k->node->iattr[1] != 0;
    ir_matmul g = ir_matmul_of(k->node, a, b);
    int lda = (int)a->dim[a->rank - 1], ldb = (int)b->dim[b->rank - 1];
    const float *pa = IN_F32(k, 0), *pb = IN_F32(k, 1); /* a [..., m, k], b [..., k, n] (before op) */
    float *pc = k->out;                                  /* c [..., m, n] */
    int locked = cpu_kernels_threads() > 1 && !pthread_mutex_lock(&blas_lock);
    for (int64_t i = 0; i < g.batch; i++)
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)g.m,
                    (int)g.n, (int)g.k, 1.0f, pa + ir_matmul_offset(&g, 0, i), lda, pb + ir_matmul_offset(&g, 1, i),
                    ldb, 0.0f, pc + i * g.m * g.n, (int)g.n);
    if (locked) pthread_mutex_unlock(&blas_lock);
    return 0;
}

/* issue 14: the candidates, OpenBLAS first (the default); char_gpt speed:
 * gemm_blocked.c's one-thread register-blocked GEMM third; the seed CNN's
 * dense layer: gemm_thin.c's one-thread GEMM of K <= 512 fourth. A
 * matmul_epilogue's bias, residual and activation: applied to C's tiles by
 * the last two, by oneDNN when it is a bias alone, else in a pass after the
 * GEMM. */
static int run_candidate(const rt_kernel_args *k, int c, char *err, size_t cap) {
    if (c >= 2) return c == 2 ? cpu_blocked_matmul(k, err, cap) : cpu_thin_matmul(k, err, cap); /* with the epilogue */
    int done = c == 0 ? openblas_matmul(k) : cpu_dnnl_matmul(k, err, cap); /* 1: oneDNN added the bias */
    if (done) return done < 0 ? -1 : 0;
    cpu_epilogue e = cpu_epilogue_of(k); /* a matmul_epilogue's: one pass over C */
    int64_t n = k->node->shape.dim[k->node->shape.rank - 1];
    if (e.bias) cpu_epilogue_rows(k->out, e.bias, e.res, OUT_NUMEL(k) / n, n, e.act);
    return 0;
}

/* issue 14 (speed): with more than one thread per device, OpenBLAS's thread
 * pool and oneDNN's OpenMP team would share the device's cores, each spinning
 * while the other works: the seed CNN on one device of 2 threads ran at
 * 4,700-6,800 images/s with OpenBLAS GEMMs against 18,500-18,800 with oneDNN's
 * alone (11,000-12,000 on 1 thread; docs/cpu-kernels.md). So OpenBLAS is a
 * candidate on one thread only. */
static int applies(const rt_kernel_args *k, int c) {
    return c == 3 ? cpu_thin_applies(k) : c == 1 || cpu_kernels_threads() == 1;
}

static const char *const names[] = {"openblas", "onednn", "blocked", "thin"};
static const cpu_tune_op matmul_op = {names, 4, run_candidate, applies};

int cpu_k_matmul(const rt_kernel_args *k, char *err, size_t cap) { return cpu_tune_run(k, &matmul_op, err, cap); }
