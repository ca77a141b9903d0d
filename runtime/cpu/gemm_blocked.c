/* gemm_blocked.c - issue 14 (char_gpt speed): the "blocked" candidate of
 * matmul (and of matmul_epilogue's GEMM), a one-thread register-blocked
 * sgemm written for char_gpt's thin GEMMs (2048 rows of width 128 or 512,
 * and their K = 2048 weight gradients), where OpenBLAS's packing and driver
 * overhead leave it well below its square-matrix rate (docs/cpu-kernels.md,
 * "The blocked GEMM").
 *
 * GotoBLAS/BLIS loop order: for each block of KC of the inner dimension, op(b)
 * is packed into panels of NR = 16 columns ([kc][16], columns past n zero);
 * for each block of MC rows, op(a) into micro-panels of MR = 6 rows ([kc][6],
 * rows past m zero); then every (panel, micro-panel) pair runs a 6 x 16
 * micro-kernel of 12 accumulators of 8 lanes (AVX2 + FMA through
 * target_clones, a portable build otherwise). The first k block writes C, the
 * later ones add to it, so each sum runs in order of k: deterministic, the
 * same bits run after run. Tiles past m or n go through a 6 x 16 buffer.
 * Transposes are taken by the packing, so every variant runs the same loop.
 * Batch axes broadcast as matmul's. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <stdlib.h>
#include <string.h>

#include "tune.h"
#include "vec8.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GB_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define GB_CLONES
#endif

enum { MR = 6, NR = 16, KC = 512, MC = 48, B_FLOATS = 65536 };

/* c [MR rows, ldc apart][NR] (+)= ap [kc][MR] x bp [kc][NR], then + bias
 * [NR] and ReLU if relu (bias NULL: none) */
static inline __attribute__((always_inline)) void micro(float *c, int64_t ldc, const float *ap, const float *bp,
                                                        int64_t kc, int add, const float *bias, int relu) {
    v8 acc[MR][2];
    for (int r = 0; r < MR; r++)
        acc[r][0] = add ? LD8(c + r * ldc) : (v8){0}, acc[r][1] = add ? LD8(c + r * ldc + 8) : (v8){0};
    for (int64_t p = 0; p < kc; p++) {
        v8 b0 = LD8(bp + p * NR), b1 = LD8(bp + p * NR + 8);
        for (int r = 0; r < MR; r++) {
            float x = ap[p * MR + r];
            v8 av = {x, x, x, x, x, x, x, x};
            acc[r][0] += av * b0, acc[r][1] += av * b1;
        }
    }
    for (int r = 0; r < MR; r++) {
        if (bias) BIAS_RELU16(acc[r][0], acc[r][1], bias, relu);
        ST8(c + r * ldc, acc[r][0]), ST8(c + r * ldc + 8, acc[r][1]);
    }
}

/* one tile of C at rows r0 (rows of them), columns c0 (cols of them); a
 * whole tile adds bias [+ ReLU] (bias NULL: none) and returns 1, others 0 */
static inline __attribute__((always_inline)) int tile(float *c, int64_t ldc, int64_t rows, int64_t cols,
                                                      const float *ap, const float *bp, int64_t kc, int add,
                                                      const float *bias, int relu) {
    if (rows == MR && cols == NR) {
        if (add) micro(c, ldc, ap, bp, kc, 1, bias, relu);
        else micro(c, ldc, ap, bp, kc, 0, bias, relu);
        return 1;
    }
    float t[MR * NR];
    for (int64_t r = 0; r < rows && add; r++) memcpy(t + r * NR, c + r * ldc, (size_t)cols * sizeof *t);
    if (add) micro(t, NR, ap, bp, kc, 1, NULL, 0);
    else micro(t, NR, ap, bp, kc, 0, NULL, 0);
    for (int64_t r = 0; r < rows; r++) memcpy(c + r * ldc, t + r * NR, (size_t)cols * sizeof *t);
    return 0;
}

typedef struct {
    int64_t m, n, k;
    int ta, tb;
    int64_t lda, ldb; /* a, b row-major before op */
} geom;

/* the k block: the whole k up to KC (one block: each sum in registers, C
 * written once), narrowed so that the packed op(b) block [kc][n] stays within
 * B_FLOATS (256 KiB, a quarter of the L2), and to KC / 2 when C is small
 * enough to stay in the L2 between k blocks (the K = 2048 weight gradients:
 * measured 3-12% faster than KC there) */
static int64_t k_block(const geom *g) {
    int64_t np = (g->n + NR - 1) / NR * NR, kc = B_FLOATS / np < KC ? B_FLOATS / np : KC;
    if (g->m * g->n <= B_FLOATS * 2 && kc > KC / 2) kc = KC / 2;
    kc = kc < 64 ? 64 : kc;
    return g->k < kc ? g->k : kc;
}

/* bp [n / NR panels][kc][NR] = op(b)[p0 .. p0 + kc, all n], columns past n 0 */
static void pack_b(float *bp, const float *b, const geom *g, int64_t p0, int64_t kc) {
    for (int64_t j0 = 0; j0 < g->n; j0 += NR) {
        float *panel = bp + j0 * kc; /* (j0 / NR) * kc * NR */
        int64_t cols = g->n - j0 < NR ? g->n - j0 : NR;
        if (!g->tb) {
            for (int64_t p = 0; p < kc; p++) {
                const float *src = b + (p0 + p) * g->ldb + j0;
                if (cols == NR) ST8(panel + p * NR, LD8(src)), ST8(panel + p * NR + 8, LD8(src + 8));
                else
                    for (int64_t j = 0; j < NR; j++) panel[p * NR + j] = j < cols ? src[j] : 0.0f;
            }
        } else { /* op(b)[p, j] = b[j, p] */
            for (int64_t j = 0; j < NR; j++) {
                const float *src = b + (j0 + j) * g->ldb + p0;
                if (j < cols)
                    for (int64_t p = 0; p < kc; p++) panel[p * NR + j] = src[p];
                else
                    for (int64_t p = 0; p < kc; p++) panel[p * NR + j] = 0.0f;
            }
        }
    }
}

/* ap [mc / MR micro-panels][kc][MR] = op(a)[i0 .. i0 + mc, p0 .. p0 + kc], rows past m 0 */
static void pack_a(float *ap, const float *a, const geom *g, int64_t i0, int64_t mc, int64_t p0, int64_t kc) {
    for (int64_t r0 = 0; r0 < mc; r0 += MR) {
        float *panel = ap + r0 * kc;
        int64_t rows = mc - r0 < MR ? mc - r0 : MR;
        if (g->ta) { /* op(a)[i, p] = a[p, i]: MR consecutive floats per p */
            for (int64_t p = 0; p < kc; p++) {
                const float *src = a + (p0 + p) * g->lda + i0 + r0;
                if (rows == MR) memcpy(panel + p * MR, src, MR * sizeof *panel);
                else
                    for (int64_t r = 0; r < MR; r++) panel[p * MR + r] = r < rows ? src[r] : 0.0f;
            }
        } else {
            for (int64_t r = 0; r < MR; r++) {
                const float *src = a + (i0 + r0 + r) * g->lda + p0;
                if (r < rows)
                    for (int64_t p = 0; p < kc; p++) panel[p * MR + r] = src[p];
                else
                    for (int64_t p = 0; p < kc; p++) panel[p * MR + r] = 0.0f;
            }
        }
    }
}

/* the rows of the k block after [p0, p0 + kc) that are whole rows of a
 * (trans_a) and of b (no trans_b), fetched over the current block's tiles: the
 * K = 2048 weight gradients read them from memory (their inputs are the
 * forward's), and the packing's strided reads of a outran the hardware
 * prefetcher there */
static cpu_prefetch next_k_block(const float *a, const float *b, const geom *g, int64_t p0, int64_t kc) {
    int64_t p1 = p0 + kc, rows = g->k - p1 < kc ? g->k - p1 : kc;
    const void *at[2] = {g->ta && rows > 0 ? a + p1 * g->lda : NULL, !g->tb && rows > 0 ? b + p1 * g->ldb : NULL};
    int64_t bytes[2] = {rows * g->lda * 4, rows * g->ldb * 4};
    return cpu_prefetch_plan(2, at, bytes, 0, (g->m + MR - 1) / MR * ((g->n + NR - 1) / NR));
}

/* c [m, n] = op(a) op(b) of one output matrix, then e's epilogue on each tile
 * of the last k block (in registers where it can); ap, bp: packing space */
GB_CLONES static void gemm(float *c, const float *a, const float *b, const geom *g, float *ap, float *bp,
                           const cpu_epilogue *e) {
    int64_t kb = k_block(g);
    for (int64_t p0 = 0; p0 < g->k; p0 += kb) {
        int64_t kc = g->k - p0 < kb ? g->k - p0 : kb;
        int last = p0 + kc == g->k, in_registers = last && cpu_epilogue_in_registers(e);
        cpu_prefetch next = next_k_block(a, b, g, p0, kc);
        pack_b(bp, b, g, p0, kc);
        for (int64_t i0 = 0; i0 < g->m; i0 += MC) {
            int64_t mc = g->m - i0 < MC ? g->m - i0 : MC;
            pack_a(ap, a, g, i0, mc, p0, kc);
            for (int64_t j0 = 0; j0 < g->n; j0 += NR) {
                int64_t cols = g->n - j0 < NR ? g->n - j0 : NR;
                for (int64_t r0 = 0; r0 < mc; r0 += MR, cpu_prefetch_some(&next)) {
                    float *ct = c + (i0 + r0) * g->n + j0;
                    int64_t rows = mc - r0 < MR ? mc - r0 : MR;
                    int done = tile(ct, g->n, rows, cols, ap + r0 * kc, bp + j0 * kc, kc, p0 > 0,
                                    in_registers ? e->bias + j0 : NULL, e->act == EPI_RELU) && in_registers;
                    if (e->bias && last && !done) cpu_epilogue_tile(e, ct, g->n, rows, j0, cols);
                }
            }
        }
    }
}

int cpu_blocked_matmul(const rt_kernel_args *k, char *err, size_t cap) {
    const ir_shape *as = IN_SHAPE(k, 0), *bs = IN_SHAPE(k, 1);
    ir_matmul mm = ir_matmul_of(k->node, as, bs);
    geom g = {.m = mm.m, .n = mm.n, .k = mm.k, .ta = k->node->iattr[0] != 0, .tb = k->node->iattr[1] != 0,
              .lda = as->dim[as->rank - 1], .ldb = bs->dim[bs->rank - 1]};
    float *pc = k->out; /* c [..., m, n] */
    cpu_epilogue e = cpu_epilogue_of(k);
    if (g.k == 0) { /* an empty sum: zeros, as cblas_sgemm with beta 0 writes */
        memset(pc, 0, (size_t)(mm.batch * g.m * g.n) * sizeof *pc);
        if (e.bias) cpu_epilogue_rows(pc, e.bias, e.res, mm.batch * g.m, g.n, e.act);
        return 0;
    }
    int64_t kc = k_block(&g), np = (g.n + NR - 1) / NR * NR, mp = MC;
    float *ap = malloc((size_t)(mp * kc + np * kc) * sizeof *ap);
    if (!ap) return cpu_kerr(k, err, cap, "out of memory packing %lld floats", (long long)(mp * kc + np * kc));
    for (int64_t i = 0; i < mm.batch; i++)
        gemm(pc + i * g.m * g.n, IN_F32(k, 0) + ir_matmul_offset(&mm, 0, i), IN_F32(k, 1) + ir_matmul_offset(&mm, 1, i),
             &g, ap, ap + mp * kc, &e);
    free(ap);
    return 0;
}
