/* matmul.c - matmul on the CPU (issue 13): one cblas_sgemm per output matrix of
 * the broadcast batch; a rank-2 matmul is one call, as before. OpenBLAS here has
 * no cblas_sgemm_batch. */
#include <cblas.h>

#include "kernels_impl.h"

/* C[..., m, n] = op(A)[..., m, k] x op(B)[..., k, n], row-major, batch axes broadcast */
int cpu_k_matmul(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    const ir_shape *a = IN_SHAPE(k, 0), *b = IN_SHAPE(k, 1);
    int ta = k->node->iattr[0] != 0, tb = k->node->iattr[1] != 0;
    ir_matmul g = ir_matmul_of(k->node, a, b);
    int lda = (int)a->dim[a->rank - 1], ldb = (int)b->dim[b->rank - 1];
    const float *pa = IN_F32(k, 0), *pb = IN_F32(k, 1); /* a [..., m, k], b [..., k, n] (before op) */
    float *pc = k->out;                                  /* c [..., m, n] */
    for (int64_t i = 0; i < g.batch; i++)
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)g.m,
                    (int)g.n, (int)g.k, 1.0f, pa + ir_matmul_offset(&g, 0, i), lda, pb + ir_matmul_offset(&g, 1, i),
                    ldb, 0.0f, pc + i * g.m * g.n, (int)g.n);
    return 0;
}
