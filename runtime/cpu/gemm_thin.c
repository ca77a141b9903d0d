/* gemm_thin.c - issue 14 (the seed CNN's dense layer): the "thin" candidate
 * of matmul (and of matmul_epilogue's GEMM), a one-thread sgemm for a thin
 * inner dimension (K <= 512) with a long m or n, as the dense layer's
 * gradients: dX = dy W^T ([64,128] x [5408,128]^T, K = 128) and
 * dW = X^T dy ([64,5408]^T x [64,128], K = 64), where C (1.4 and 2.8 MB) and
 * the long operand come from the L3 or memory and oneDNN and OpenBLAS ran at
 * 3/4 of the forward's rate (docs/cpu-kernels.md, "The thin GEMM").
 *
 * No k blocks: every sum runs over the whole K in registers and C is written
 * once, never read. op(b) is packed in blocks of columns (up to 128 KiB, so
 * a block stays in the L2): panels of 16 columns [k][16], trans_b taken by
 * 8 x 8 transposes in registers. op(a) is read in place without trans_a (6
 * row pointers), else packed in row blocks of 48 ([k][6] micro-panels). For
 * each (column block, row block), every micro-panel of 6 rows runs against
 * each panel in turn (so C is written along its rows), a 6 x 16 tile in 12
 * accumulators of 8 lanes (AVX2 + FMA through target_clones, a portable
 * build otherwise); a rest of up to 4 rows takes a 4 x 16 tile. While a
 * block's tiles run, they prefetch what the next block reads from memory:
 * the rows of b of the next column block (trans_b), the rows of a of the
 * next row block (trans_a) and, for writing, the rows of C of the next row
 * block; spread over the tiles, a few lines each. Each sum runs in order of
 * k from zero: the same bits run after run. Tiles past m or n go through a
 * 6 x 16 buffer; batch axes broadcast as matmul's. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <stdlib.h>
#include <string.h>

#include "tune.h"
#include "vec8.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GT_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define GT_CLONES
#endif
#define GT_INLINE static inline __attribute__((always_inline))

enum {
    MR = 6, NR = 16, K_MAX = 512,
    B_BLOCK = 32768, /* floats of packed op(b) a block: 128 KiB, in the L2 */
    MC = 48          /* rows of a row block (all of m up to 2 MC), packed op(a) with trans_a: up to 96 KiB */
};

typedef struct {
    int64_t m, n, k;
    int ta, tb;
    int64_t lda, ldb; /* a, b row-major before op */
} geom;

int cpu_thin_applies(const rt_kernel_args *k) {
    ir_matmul g = ir_matmul_of(k->node, IN_SHAPE(k, 0), IN_SHAPE(k, 1));
    return cpu_kernels_threads() == 1 && g.k >= 1 && g.k <= K_MAX && g.m >= 1 && g.n >= 1;
}

/* ---- packing op(b) ---- */

/* panel [k][NR] = op(b)[0..k, j0 .. j0 + cols] with op(b)[p, j] = b[j, p]
 * (trans_b), columns past cols 0 */
GT_INLINE void pack_panel_t(float *panel, const float *b, const geom *g, int64_t j0, int64_t cols) {
    for (int64_t h = 0; h < NR; h += 8) {
        int64_t p = 0;
        if (cols >= h + 8)
            for (; p + 8 <= g->k; p += 8) {
                v8 r[8];
                for (int q = 0; q < 8; q++) r[q] = LD8(b + (j0 + h + q) * g->ldb + p);
                transpose8(r);
                for (int q = 0; q < 8; q++) ST8(panel + (p + q) * NR + h, r[q]);
            }
        for (; p < g->k; p++)
            for (int64_t j = h; j < h + 8; j++) panel[p * NR + j] = j < cols ? b[(j0 + j) * g->ldb + p] : 0.0f;
    }
}

/* panel [k][NR] = op(b)[0..k, j0 .. j0 + cols] = b[p, j] (no trans_b), columns past cols 0 */
GT_INLINE void pack_panel_n(float *panel, const float *b, const geom *g, int64_t j0, int64_t cols) {
    for (int64_t p = 0; p < g->k; p++) {
        const float *src = b + p * g->ldb + j0;
        if (cols == NR) ST8(panel + p * NR, LD8(src)), ST8(panel + p * NR + 8, LD8(src + 8));
        else
            for (int64_t j = 0; j < NR; j++) panel[p * NR + j] = j < cols ? src[j] : 0.0f;
    }
}

/* ---- packing op(a) with trans_a ---- */

/* ap [mc / MR micro-panels][k][MR] = op(a)[i0 .. i0 + mc, 0..k] with op(a)[i, p]
 * = a[p, i] (trans_a: a row of a holds mc consecutive floats of it), rows
 * past mc 0 */
GT_INLINE void pack_a_t(float *ap, const float *a, const geom *g, int64_t i0, int64_t mc) {
    for (int64_t p = 0; p < g->k; p++) {
        const float *src = a + p * g->lda + i0;
        for (int64_t r0 = 0; r0 < mc; r0 += MR) {
            float *dst = ap + r0 * g->k + p * MR;
            if (mc - r0 >= MR) memcpy(dst, src + r0, MR * sizeof *dst);
            else
                for (int64_t r = 0; r < MR; r++) dst[r] = r0 + r < mc ? src[r0 + r] : 0.0f;
        }
    }
}

/* ---- the tile: mr (6 or 4) x 16 ---- */

/* c [rows][cols] (ldc apart) = op(a)[rows, 0..k] x bp [k][NR], rows <= mr,
 * then e's epilogue (a matmul_epilogue's) on it, its first column col0.
 * Element (r, p) of op(a) is a[r ar + p s] (packed: ar 1, s MR; in place
 * without trans_a: ar lda, s 1); rows past `rows` repeat the last (read, not
 * stored). Called with rows == mr and cols == NR as constants: stored in
 * place, else through a buffer. */
GT_INLINE void tile(int mr, float *c, int64_t ldc, const float *a, int64_t ar, int64_t s, int64_t k, int64_t rows,
                    int64_t cols, const float *bp, const cpu_epilogue *e, int64_t col0) {
    int64_t off[MR];
    for (int r = 0; r < mr; r++) off[r] = (r < rows ? r : rows - 1) * ar;
    v8 acc[MR][2];
    for (int r = 0; r < mr; r++) acc[r][0] = acc[r][1] = (v8){0};
    const float *q = a;
#pragma GCC unroll 2
    for (int64_t p = 0; p < k; p++, q += s) {
        v8 b0 = LD8(bp + p * NR), b1 = LD8(bp + p * NR + 8);
        for (int r = 0; r < mr; r++) {
            float x = q[off[r]];
            v8 av = {x, x, x, x, x, x, x, x};
            acc[r][0] += av * b0, acc[r][1] += av * b1;
        }
    }
    int whole = rows == mr && cols == NR, in_registers = whole && cpu_epilogue_in_registers(e);
    if (whole)
        for (int r = 0; r < mr; r++) {
            if (in_registers) BIAS_RELU16(acc[r][0], acc[r][1], e->bias + col0, e->act == EPI_RELU);
            ST8(c + r * ldc, acc[r][0]), ST8(c + r * ldc + 8, acc[r][1]);
        }
    else {
        float t[MR * NR];
        for (int r = 0; r < mr; r++) ST8(t + r * NR, acc[r][0]), ST8(t + r * NR + 8, acc[r][1]);
        for (int64_t r = 0; r < rows; r++) memcpy(c + r * ldc, t + r * NR, (size_t)cols * sizeof *t);
    }
    if (e->bias && !in_registers) cpu_epilogue_tile(e, c, ldc, rows, col0, cols);
}

/* lines to prefetch: `rows` rows of `lpr` lines from `at`, `ld` floats
 * apart; per_tile of them before each tile, `done` so far */
typedef struct {
    const float *at;
    int64_t ld, lpr, lines, per_tile, done;
} ahead;

static ahead ahead_of(const float *at, int64_t ld, int64_t rows, int64_t floats, int64_t tiles) {
    ahead h = {at, ld, (floats + 15) / 16, 0, 0, 0};
    h.lines = rows > 0 ? rows * h.lpr : 0;
    h.per_tile = (h.lines + tiles - 1) / tiles;
    return h;
}

GT_INLINE void prefetch_some(ahead *h, int write) {
    for (int64_t l = 0; l < h->per_tile && h->done < h->lines; l++, h->done++) {
        const float *p = h->at + h->done / h->lpr * h->ld + h->done % h->lpr * 16;
        if (write) __builtin_prefetch(p, 1, 3);
        else __builtin_prefetch(p, 0, 3);
    }
}

/* c [mc, nc] (ldc apart) = the row block against a column block: for each
 * micro-panel of MR rows (micro-panel r0 at a + r0 pr), each panel of bp
 * [nc / NR][k][NR] in turn; nb, na, nw: the next blocks' lines; the block's
 * first column j0 (for e) */
GT_INLINE void block(float *c, int64_t ldc, const float *a, int64_t pr, int64_t ar, int64_t s, int64_t k, int64_t mc,
                     int64_t nc, const float *bp, ahead *nb, ahead *na, ahead *nw, const cpu_epilogue *e, int64_t j0) {
    for (int64_t r0 = 0; r0 < mc; r0 += MR) {
        int64_t rows = mc - r0 < MR ? mc - r0 : MR;
        for (int64_t jj = 0; jj < nc; jj += NR) {
            int64_t cols = nc - jj < NR ? nc - jj : NR;
            float *ct = c + r0 * ldc + jj;
            prefetch_some(nb, 0), prefetch_some(na, 0), prefetch_some(nw, 1);
            if (rows == MR && cols == NR) tile(MR, ct, ldc, a + r0 * pr, ar, s, k, MR, NR, bp + jj * k, e, j0 + jj);
            else if (rows <= 4) tile(4, ct, ldc, a + r0 * pr, ar, s, k, rows, cols, bp + jj * k, e, j0 + jj);
            else tile(MR, ct, ldc, a + r0 * pr, ar, s, k, rows, cols, bp + jj * k, e, j0 + jj);
        }
    }
}

/* the columns of a block of packed op(b), the rows of a row block */
static int64_t cols_of(const geom *g) {
    int64_t nb = B_BLOCK / g->k / NR * NR;
    return nb < NR ? NR : nb;
}
static int64_t rows_of(const geom *g) { return g->m <= 2 * MC ? g->m : MC; }

/* c [m, n] = op(a) op(b) of one output matrix, then e; trans_a = ta; bp: a
 * block of packed op(b), ap: a row block of packed op(a) (trans_a) */
GT_INLINE void gemm_body(float *c, const float *a, const float *b, const geom *g, float *bp, float *ap, int ta,
                         const cpu_epilogue *e) {
    int64_t nb = cols_of(g), mb = rows_of(g);
    for (int64_t j0 = 0; j0 < g->n; j0 += nb) {
        int64_t nc = g->n - j0 < nb ? g->n - j0 : nb, next_nc = g->n - j0 - nc < nb ? g->n - j0 - nc : nb;
        for (int64_t jj = 0; jj < nc; jj += NR) {
            int64_t cols = nc - jj < NR ? nc - jj : NR;
            if (g->tb) pack_panel_t(bp + jj * g->k, b, g, j0 + jj, cols);
            else pack_panel_n(bp + jj * g->k, b, g, j0 + jj, cols);
        }
        for (int64_t i0 = 0; i0 < g->m; i0 += mb) {
            int64_t mc = g->m - i0 < mb ? g->m - i0 : mb, next_mc = g->m - i0 - mc < mb ? g->m - i0 - mc : mb;
            int64_t tiles = (mc + MR - 1) / MR * ((nc + NR - 1) / NR);
            /* what the next blocks read: b's rows of the next column block
             * (trans_b; measured with the dense layer's dX), a's rows of the
             * next row block (trans_a) and C's rows of it (for writing; both
             * measured with its dW) */
            int next_b = g->tb && i0 == 0 && next_nc > 0, next_a = next_mc > 0;
            ahead nb_ = ahead_of(next_b ? b + (j0 + nc) * g->ldb : b, g->ldb, next_b ? next_nc : 0, g->k, tiles),
                  na = ahead_of(next_a ? a + i0 + mc : a, g->lda, ta && next_a ? g->k : 0, next_mc, tiles),
                  nw = ahead_of(next_a ? c + (i0 + mc) * g->n + j0 : c, g->n, next_mc, nc, tiles);
            if (ta) pack_a_t(ap, a, g, i0, mc);
            if (ta) block(c + i0 * g->n + j0, g->n, ap, g->k, 1, MR, g->k, mc, nc, bp, &nb_, &na, &nw, e, j0);
            else
                block(c + i0 * g->n + j0, g->n, a + i0 * g->lda, g->lda, g->lda, 1, g->k, mc, nc, bp, &nb_, &na, &nw, e,
                      j0);
        }
    }
}

GT_CLONES static void gemm(float *c, const float *a, const float *b, const geom *g, float *bp, float *ap,
                           const cpu_epilogue *e) {
    if (g->ta) gemm_body(c, a, b, g, bp, ap, 1, e);
    else gemm_body(c, a, b, g, bp, ap, 0, e);
}

int cpu_thin_matmul(const rt_kernel_args *k, char *err, size_t cap) {
    const ir_shape *as = IN_SHAPE(k, 0), *bs = IN_SHAPE(k, 1);
    ir_matmul mm = ir_matmul_of(k->node, as, bs);
    geom g = {.m = mm.m, .n = mm.n, .k = mm.k, .ta = k->node->iattr[0] != 0, .tb = k->node->iattr[1] != 0,
              .lda = as->dim[as->rank - 1], .ldb = bs->dim[bs->rank - 1]};
    if (!cpu_thin_applies(k)) return cpu_kerr(k, err, cap, "the thin GEMM takes K in [1, %d] on one thread", K_MAX);
    size_t b_floats = (size_t)(cols_of(&g) * g.k), floats = b_floats + (size_t)((rows_of(&g) + MR - 1) / MR * MR * g.k);
    float *bp = cpu_thread_scratch(CPU_SCRATCH_THIN, floats); /* kept: a fresh 128 KiB malloc is an mmap */
    if (!bp) return cpu_kerr(k, err, cap, "out of memory packing %zu floats", floats);
    cpu_epilogue e = cpu_epilogue_of(k);
    for (int64_t i = 0; i < mm.batch; i++)
        gemm((float *)k->out + i * g.m * g.n, IN_F32(k, 0) + ir_matmul_offset(&mm, 0, i),
             IN_F32(k, 1) + ir_matmul_offset(&mm, 1, i), &g, bp, bp + b_floats, &e);
    return 0;
}
