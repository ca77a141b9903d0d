/* cuda_lt.c - matmul_epilogue through one cuBLASLt call (issue 14):
 *
 *   out = act(op(a) op(b) + bias [+ residual])   act none (CUBLASLT_EPILOGUE_BIAS)
 *                                                 or relu (CUBLASLT_EPILOGUE_RELU_BIAS)
 *
 * Row-major C[m,n] is column-major C^T[n,m] = op(b)^T op(a)^T, so cuBLASLt's A
 * is our b and its B our a, as op_matmul hands them to cublasSgemm; the bias
 * [n] runs along the rows of D (n x m column-major), which is how the BIAS
 * epilogues broadcast it. The residual enters as C with beta = 1 (cuBLASLt adds
 * beta C before the bias and the activation). tanh and sigmoid have no
 * cuBLASLt epilogue, nor has a batched or broadcast matmul here: those, and a
 * shape the heuristic finds no algorithm for, report *done = 0 and the caller
 * runs the GEMM and cuda_k_epilogue instead. Compiled, not run here (no GPU).
 */
#include <string.h>

#include "cuda_impl.h"

/* The descriptors of one call; destroy_all frees whatever was created. */
typedef struct {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulPreference_t pref;
} lt_descs;

static void destroy_all(lt_descs *d) {
    if (d->pref) cublasLtMatmulPreferenceDestroy(d->pref);
    if (d->c) cublasLtMatrixLayoutDestroy(d->c);
    if (d->b) cublasLtMatrixLayoutDestroy(d->b);
    if (d->a) cublasLtMatrixLayoutDestroy(d->a);
    if (d->op) cublasLtMatmulDescDestroy(d->op);
}

/* The stored (column-major) rows and cols of an operand used as op(X) [r, c]. */
static cublasStatus_t layout(cublasLtMatrixLayout_t *l, cublasOperation_t t, int64_t r, int64_t c, int64_t ld) {
    return t == CUBLAS_OP_N ? cublasLtMatrixLayoutCreate(l, CUDA_R_32F, (uint64_t)r, (uint64_t)c, ld)
                            : cublasLtMatrixLayoutCreate(l, CUDA_R_32F, (uint64_t)c, (uint64_t)r, ld);
}

/* Describes the call and asks the heuristic for one algorithm (found 0: none). */
static cublasStatus_t describe(lt_descs *d, cublasLtHandle_t h, const cuda_lt_gemm *g, cublasLtMatmulHeuristicResult_t *res,
                               int *found) {
    cublasOperation_t opa = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N; /* cuBLASLt's A is our b */
    cublasOperation_t opb = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtEpilogue_t epi = g->act == EPI_RELU ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    uint64_t no_workspace = 0;
    cublasStatus_t e;
    *found = 0;
    if ((e = cublasLtMatmulDescCreate(&d->op, CUBLAS_COMPUTE_32F, CUDA_R_32F)) ||
        (e = cublasLtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa)) ||
        (e = cublasLtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb)) ||
        (e = cublasLtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi)) ||
        (e = cublasLtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g->bias, sizeof g->bias)) ||
        (e = layout(&d->a, opa, g->n, g->k, g->ldb)) || (e = layout(&d->b, opb, g->k, g->m, g->lda)) ||
        (e = cublasLtMatrixLayoutCreate(&d->c, CUDA_R_32F, (uint64_t)g->n, (uint64_t)g->m, g->n)) ||
        (e = cublasLtMatmulPreferenceCreate(&d->pref)) ||
        (e = cublasLtMatmulPreferenceSetAttribute(d->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &no_workspace,
                                                  sizeof no_workspace)))
        return e;
    e = cublasLtMatmulAlgoGetHeuristic(h, d->op, d->a, d->b, d->c, d->c, d->pref, 1, res, found);
    if (e == CUBLAS_STATUS_NOT_SUPPORTED) *found = 0, e = CUBLAS_STATUS_SUCCESS;
    return e;
}

int cuda_lt_matmul_epilogue(rt_backend *b, cublasLtHandle_t h, cudaStream_t s, const cuda_lt_gemm *g, int *done) {
    *done = 0;
    if (g->act != EPI_NONE && g->act != EPI_RELU) return 0;
    lt_descs d;
    memset(&d, 0, sizeof d);
    cublasLtMatmulHeuristicResult_t res;
    memset(&res, 0, sizeof res);
    int found = 0;
    cublasStatus_t e = describe(&d, h, g, &res, &found);
    const float one = 1.0f, beta = g->residual ? 1.0f : 0.0f;
    const float *c = g->residual ? g->residual : g->out;
    if (e == CUBLAS_STATUS_SUCCESS && found > 0)
        e = cublasLtMatmul(h, d.op, &one, g->b, d.a, g->a, d.b, &beta, c, d.c, g->out, d.c, &res.algo, NULL, 0, s);
    destroy_all(&d);
    if (e != CUBLAS_STATUS_SUCCESS) return cuda_fail(b, "cublasLtMatmul", cublasGetStatusString(e), __FILE__, __LINE__);
    *done = found > 0;
    return 0;
}
