/* causal_matmul.c - issue 14 (char_gpt speed): attention's causal GEMMs with
 * one triangular matrix T (tril: keep [i, j] with j <= i; triu: j >= i),
 * computing only the tiles the triangle keeps:
 *   tri 0: C = T(op(A) op(B)): tiles wholly above (below) the diagonal are
 *          not computed, C's masked entries are 0;
 *   tri 1: C = T(op(A)) op(B): each row panel's sum over k stops at (starts
 *          from) its last (first) row;
 *   tri 2: C = op(A) T(op(B)): likewise per column tile.
 * A register-blocked MR x 16 micro-kernel (12 accumulators of 8 lanes, AVX2 +
 * FMA) walks the tiles, reading op(A) in place (row pointers) and op(B) in
 * place or, when transposed, triangular or not in whole tiles, packed per
 * output matrix (the masked entries of op(B) packed as 0; a transpose by 8 x 8
 * blocks in registers), and stores a whole tile the triangle keeps straight
 * from its registers to C, others through a buffer. The masked entries
 * of a triangular operand are never used, so they may hold anything. OpenBLAS
 * measured slower on these shapes: row-block sgemm calls and strmm ran the
 * 128 x 128 x 32 products of char_gpt at the full matmul's time or worse
 * (bench/gpt_kernels.c).
 * Deterministic: one thread, each sum in order of k. Batch axes broadcast as
 * matmul's. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <stdlib.h>
#include <string.h>

#include "kernels_impl.h"
#include "vec8.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CM_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define CM_CLONES
#endif

enum { MR = 6, NR = 16 }; /* the micro-kernel's tile: MR rows x NR columns */

typedef struct {
    int64_t m, n, k;   /* C [m, n], the inner k */
    int64_t si, sp;    /* op(a)[i, p] = a[i * si + p * sp] */
    int64_t np;        /* the row length of op(b) as the tiles read it */
    int ta, tb, tri, up;
} cm_geom;

static int keep(int64_t i, int64_t j, int up) { return up ? j >= i : j <= i; }

/* bp [k][np] = op(b), np = n rounded up to NR, the columns past n and (tri 2)
 * the masked entries 0; ldb is b's row length */
CM_CLONES static void pack_b(float *bp, const float *b, const cm_geom *g, int64_t ldb) {
    if (g->tb) { /* row j of b is column j of op(b): 8 x 8 blocks transposed in registers */
        int64_t j8 = g->n / 8 * 8, k8 = g->k / 8 * 8;
        for (int64_t j = 0; j < j8; j += 8)
            for (int64_t p = 0; p < k8; p += 8) {
                v8 r[8];
                for (int q = 0; q < 8; q++) r[q] = LD8(b + (j + q) * ldb + p);
                transpose8(r);
                for (int q = 0; q < 8; q++) ST8(bp + (p + q) * g->np + j, r[q]);
            }
        for (int64_t j = 0; j < g->n; j++) /* the edges */
            for (int64_t p = j < j8 ? k8 : 0; p < g->k; p++) bp[p * g->np + j] = b[j * ldb + p];
    } else
        for (int64_t p = 0; p < g->k; p++) memcpy(bp + p * g->np, b + p * ldb, (size_t)g->n * sizeof *bp);
    for (int64_t p = 0; p < g->k; p++) {
        memset(bp + p * g->np + g->n, 0, (size_t)(g->np - g->n) * sizeof *bp);
        if (g->tri == 2) /* zero the masked entries: j < p (lower keeps p >= j) or j > p */
            for (int64_t j = 0; j < g->n; j++)
                if (!keep(p, j, g->up)) bp[p * g->np + j] = 0;
    }
}

/* acc [MR][NR] (+)= sum over p in [k0, k1) of op(a)[row r, p] * bp[p][0..NR),
 * a[r] the start of row r of op(a); acc's rows ld floats apart (C itself for
 * a whole tile, else a buffer) */
static inline __attribute__((always_inline)) void micro_body(float *acc, int64_t ld, const float *const *a,
                                                             int64_t sp, const float *bp, int64_t np, int64_t k0,
                                                             int64_t k1, int add) {
    v8 c[MR][2];
    for (int r = 0; r < MR; r++)
        c[r][0] = add ? LD8(acc + r * ld) : (v8){0}, c[r][1] = add ? LD8(acc + r * ld + 8) : (v8){0};
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
    _Static_assert(MR == 6, "micro_body names MR row pointers");
    for (int64_t p = k0; p < k1; p++) {
        v8 b0 = LD8(bp + p * np), b1 = LD8(bp + p * np + 8);
        float x[MR] = {a0[p * sp], a1[p * sp], a2[p * sp], a3[p * sp], a4[p * sp], a5[p * sp]};
        for (int r = 0; r < MR; r++) {
            v8 av = {x[r], x[r], x[r], x[r], x[r], x[r], x[r], x[r]};
            c[r][0] += av * b0, c[r][1] += av * b1;
        }
    }
    for (int r = 0; r < MR; r++) {
        ST8(acc + r * ld, c[r][0]);
        ST8(acc + r * ld + 8, c[r][1]);
    }
}

#define CM_INLINE static inline __attribute__((always_inline))

/* the hot loop */
CM_INLINE void micro_full(float *acc, int64_t ld, const float *const *a, int64_t sp, const float *bp, int64_t np,
                          int64_t k0, int64_t k1, int add) {
    if (add) micro_body(acc, ld, a, sp, bp, np, k0, k1, 1);
    else micro_body(acc, ld, a, sp, bp, np, k0, k1, 0);
}

/* tri 1's diagonal: the rows i0.. of op(a) over k in [i0, k1) (k1 - i0 <= MR)
 * copied with the masked entries 0, then the hot loop over the copy */
CM_INLINE void micro_diagonal(float *acc, int64_t ld, const float *const *a, int64_t sp, const float *bp,
                              int64_t np, int64_t k1, int add, int64_t i0, int up) {
    float d[MR][MR];
    const float *rows[MR];
    for (int r = 0; r < MR; r++) {
        for (int64_t p = i0; p < k1; p++) d[r][p - i0] = keep(i0 + r, p, up) ? a[r][p * sp] : 0.0f;
        rows[r] = d[r];
    }
    micro_full(acc, ld, rows, 1, bp + i0 * np, np, 0, k1 - i0, add);
}

/* acc (rows ld apart) = the tile at rows r0.., columns c0..; returns 0
 * (acc untouched) when (tri 0) the triangle masks all of it. tri 1 splits k
 * at the panel's diagonal: the part every row keeps, then the diagonal's few
 * k masked; tri 2's masked entries are 0 in bp, so it only narrows k */
CM_INLINE int tile(float *acc, int64_t ld, const float *a, const float *bp, const cm_geom *g, int64_t r0, int64_t c0) {
    int64_t r1 = r0 + MR < g->m ? r0 + MR : g->m, c1 = c0 + NR < g->n ? c0 + NR : g->n;
    const float *rows[MR];
    for (int r = 0; r < MR; r++) rows[r] = a + (r0 + r < g->m ? r0 + r : g->m - 1) * g->si; /* past m: a copy */
    const float *b = bp + c0;
    if (g->tri == 0 && (g->up ? c1 - 1 < r0 : c0 > r1 - 1)) return 0;
    if (g->tri == 1) { /* lower: [0, r0) whole, [r0, r1) masked; upper: [r0, r1) masked, [r1, k) whole */
        int64_t d1 = r1 < g->k ? r1 : g->k;
        if (g->up) {
            micro_diagonal(acc, ld, rows, g->sp, b, g->np, d1, 0, r0, 1);
            micro_full(acc, ld, rows, g->sp, b, g->np, d1, g->k, 1);
        } else {
            micro_full(acc, ld, rows, g->sp, b, g->np, 0, r0 < g->k ? r0 : g->k, 0);
            if (r0 < d1) micro_diagonal(acc, ld, rows, g->sp, b, g->np, d1, 1, r0, 0);
        }
        return 1;
    }
    int64_t k0 = 0, k1 = g->k; /* tri 2: op(b)[p, j] kept for p >= j (lower) or p <= j (upper) */
    if (g->tri == 2 && g->up) k1 = c1 < g->k ? c1 : g->k;
    if (g->tri == 2 && !g->up) k0 = c0;
    micro_full(acc, ld, rows, g->sp, b, g->np, k0, k1, 0);
    return 1;
}

/* out [cols] = row (or 0 when !row): whole tiles as two vectors (memcpy and
 * memset of 64 bytes became rep movs / rep stos, measured slow here) */
CM_INLINE void put_row(float *out, const float *row, int64_t cols) {
    if (cols == NR) {
        ST8(out, row ? LD8(row) : (v8){0});
        ST8(out + 8, row ? LD8(row + 8) : (v8){0});
    } else
        for (int64_t j = 0; j < cols; j++) out[j] = row ? row[j] : 0.0f;
}

/* out [NR] = row's entries the triangle keeps, the others 0: lane j is kept
 * when j <= d (lower) or j >= d (upper), d the row's index less the tile's
 * first column */
CM_INLINE void put_kept(float *out, const float *row, int64_t d, int up) {
    const v8i lane = {0, 1, 2, 3, 4, 5, 6, 7};
    v8i at = {(int32_t)d, (int32_t)d, (int32_t)d, (int32_t)d, (int32_t)d, (int32_t)d, (int32_t)d, (int32_t)d};
    for (int h = 0; h < NR; h += 8) {
        v8i j = lane + h, kept = up ? j >= at : j <= at;
        v8i bits;
        v8 v = LD8(row + h);
        memcpy(&bits, &v, sizeof bits);
        bits &= kept;
        memcpy(&v, &bits, sizeof v);
        ST8(out + h, v);
    }
}

/* c [m, n] of one output matrix: a its op(a), bp its op(b) [k][np]; all of
 * the above inlined here, compiled for AVX2 + FMA too */
CM_CLONES static void tiles(float *c, const float *a, const float *bp, const cm_geom *g, cpu_prefetch *f) {
    float acc[MR * NR];
    for (int64_t r0 = 0; r0 < g->m; r0 += MR)
        for (int64_t c0 = 0; c0 < g->n; c0 += NR) {
            cpu_prefetch_some(f);
            int64_t rows = g->m - r0 < MR ? g->m - r0 : MR, cols = g->n - c0 < NR ? g->n - c0 : NR;
            float *dst = c + r0 * g->n + c0;
            /* a whole tile that every row keeps whole goes from registers to C */
            if (rows == MR && cols == NR && (g->tri != 0 || (g->up ? c0 >= r0 + MR - 1 : c0 + NR - 1 <= r0))) {
                tile(dst, g->n, a, bp, g, r0, c0);
                continue;
            }
            int any = tile(acc, NR, a, bp, g, r0, c0);
            for (int64_t r = 0; r < rows; r++) {
                float *out = c + (r0 + r) * g->n + c0;
                if (!any || g->tri != 0 || (g->up ? c0 >= r0 + r : c0 + cols - 1 <= r0 + r)) /* kept whole or not at all */
                    put_row(out, any ? acc + r * NR : NULL, cols);
                else if (cols == NR) /* the diagonal: the kept lanes by a compare (a branch per entry mispredicted) */
                    put_kept(out, acc + r * NR, r0 + r - c0, g->up);
                else
                    for (int64_t j = 0; j < cols; j++) out[j] = keep(r0 + r, c0 + j, g->up) ? acc[r * NR + j] : 0;
            }
        }
}

int cpu_causal_matmul_run(const rt_kernel_args *k, int tri, int upper, cpu_matrix_done *after, void *ctx, char *err,
                          size_t cap) {
    const ir_node *n = k->node;
    const ir_shape *as = IN_SHAPE(k, 0), *bs = IN_SHAPE(k, 1);
    ir_matmul mm = ir_matmul_of(n, as, bs);
    int64_t lda = as->dim[as->rank - 1], ldb = bs->dim[bs->rank - 1];
    cm_geom g = {.m = mm.m, .n = mm.n, .k = mm.k, .ta = n->iattr[0] != 0, .tb = n->iattr[1] != 0,
                 .tri = tri, .up = upper != 0};
    g.si = g.ta ? 1 : lda, g.sp = g.ta ? lda : 1;
    /* op(b) read in place when it is b itself in whole tiles, else packed */
    int packed = g.tb || g.tri == 2 || g.n % NR != 0;
    g.np = packed ? (g.n + NR - 1) / NR * NR : ldb;
    float *bp = packed ? malloc((size_t)(g.k * g.np + 1) * sizeof *bp) : NULL;
    if (packed && !bp) return cpu_kerr(k, err, cap, "out of memory packing %lld floats", (long long)(g.k * g.np));
    const float *pa = IN_F32(k, 0), *pb = IN_F32(k, 1); /* a [..., m, k], b [..., k, n] (before op) */
    float *pc = k->out;                                  /* c [..., m, n] */
    /* the next matrix's a, b and c (for writing) prefetched over this one's tiles:
     * in a step they come from memory (the backward reads the probabilities the
     * forward saved), while op(a) is read in place and C stored from registers */
    int64_t bytes[3] = {(g.ta ? g.k : g.m) * lda * 4, (g.tb ? g.n : g.k) * ldb * 4, g.m * g.n * 4};
    int64_t tiles_per = ((g.m + MR - 1) / MR) * ((g.n + NR - 1) / NR);
    for (int64_t i = 0; i < mm.batch; i++) {
        const float *b = pb + ir_matmul_offset(&mm, 1, i);
        const void *next[3] = {NULL, NULL, NULL};
        if (i + 1 < mm.batch)
            next[0] = pa + ir_matmul_offset(&mm, 0, i + 1), next[1] = pb + ir_matmul_offset(&mm, 1, i + 1),
            next[2] = pc + (i + 1) * g.m * g.n;
        cpu_prefetch f = cpu_prefetch_plan(3, next, bytes, 1, tiles_per);
        if (packed) pack_b(bp, b, &g, ldb);
        tiles(pc + i * g.m * g.n, pa + ir_matmul_offset(&mm, 0, i), packed ? bp : b, &g, &f);
        if (after) after(ctx, i);
    }
    free(bp);
    return 0;
}

int cpu_k_causal_matmul(const rt_kernel_args *k, char *err, size_t cap) {
    return cpu_causal_matmul_run(k, (int)k->node->iattr[2], k->node->iattr[3] != 0, NULL, NULL, err, cap);
}
