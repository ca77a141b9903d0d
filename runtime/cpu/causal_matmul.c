/* causal_matmul.c - issue 14 (char_gpt speed): attention's causal GEMMs with
 * one triangular matrix, computing only what the triangle keeps:
 *   tri 0: C = T(op(A) op(B)): row blocks of BLOCK rows, each one sgemm over
 *          the columns up to (tril) or from (triu) its block; the rest of C is 0;
 *   tri 1: C = T(op(A)) op(B): op(B) copied into C, then strmm from the left;
 *   tri 2: C = op(A) T(op(B)): op(A) copied into C, then strmm from the right.
 * strmm reads the kept triangle only, so the masked one may hold anything.
 * T is tril (keep [i, j], j <= i) or triu (j >= i); batch axes broadcast as
 * matmul's. */
#include <cblas.h>
#include <string.h>

#include "kernels_impl.h"

/* rows of a tri 0 block: 4 blocks of q k^T's 128 rows (a block's sgemm stays
 * long enough to run near the peak; half as many rows computed ~5/8 of the
 * flops instead of 9/16, and ran no faster) */
enum { BLOCK = 32 };

/* dst [r, c] = src (ld) or its transpose (src [c, r], ld) */
static void copy_op(float *dst, const float *src, int64_t r, int64_t c, int64_t ld, int trans) {
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) dst[i * c + j] = trans ? src[j * ld + i] : src[i * ld + j];
}

/* c [m, m] = T(op(a) op(b)), op(a) [m, k], op(b) [k, m] */
static void tri_output(const float *a, const float *b, float *c, int64_t m, int64_t k, int ta, int tb, int up) {
    int64_t lda = ta ? m : k, ldb = tb ? k : m;
    for (int64_t r0 = 0; r0 < m; r0 += BLOCK) {
        int64_t r1 = r0 + BLOCK < m ? r0 + BLOCK : m, c0 = up ? r0 : 0, c1 = up ? m : r1;
        const float *pa = a + (ta ? r0 : r0 * lda), *pb = b + (tb ? c0 * ldb : c0);
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)(r1 - r0),
                    (int)(c1 - c0), (int)k, 1.0f, pa, (int)lda, pb, (int)ldb, 0.0f, c + r0 * m + c0, (int)m);
        for (int64_t i = r0; i < r1; i++) { /* zero the masked part of row i */
            float *row = c + i * m;
            if (up) memset(row, 0, (size_t)i * sizeof *row);
            else memset(row + i + 1, 0, (size_t)(m - i - 1) * sizeof *row);
        }
    }
}

/* c [m, n] = T(op(a)) op(b) (tri 1, op(a) [m, m]) or op(a) T(op(b)) (tri 2, op(b) [n, n]) */
static void tri_operand(const float *a, const float *b, float *c, const ir_matmul *g, int ta, int tb, int tri, int up) {
    int left = tri == 1, tt = left ? ta : tb;
    int64_t ldt = left ? g->m : g->n; /* the triangular matrix is square either way */
    if (left) copy_op(c, b, g->m, g->n, tb ? g->k : g->n, tb);
    else copy_op(c, a, g->m, g->n, ta ? g->m : g->k, ta);
    /* op(T) lower is T lower when not transposed, T upper when it is */
    cblas_strmm(CblasRowMajor, left ? CblasLeft : CblasRight, (up ^ tt) ? CblasUpper : CblasLower,
                tt ? CblasTrans : CblasNoTrans, CblasNonUnit, (int)g->m, (int)g->n, 1.0f, left ? a : b, (int)ldt, c,
                (int)g->n);
}

int cpu_k_causal_matmul(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    const ir_node *n = k->node;
    int ta = n->iattr[0] != 0, tb = n->iattr[1] != 0, tri = (int)n->iattr[2], up = n->iattr[3] != 0;
    ir_matmul g = ir_matmul_of(n, IN_SHAPE(k, 0), IN_SHAPE(k, 1));
    const float *pa = IN_F32(k, 0), *pb = IN_F32(k, 1); /* a [..., m, k], b [..., k, n] (before op) */
    float *pc = k->out;                                  /* c [..., m, n] */
    int locked = cpu_blas_lock();
    for (int64_t i = 0; i < g.batch; i++) {
        const float *a = pa + ir_matmul_offset(&g, 0, i), *b = pb + ir_matmul_offset(&g, 1, i);
        if (tri == 0) tri_output(a, b, pc + i * g.m * g.n, g.m, g.k, ta, tb, up);
        else tri_operand(a, b, pc + i * g.m * g.n, &g, ta, tb, tri, up);
    }
    cpu_blas_unlock(locked);
    return 0;
}
