/* conv_winograd.c - the "winograd" candidate of conv2d, conv2d_epilogue,
 * conv2d_grad_input and conv2d_grad_filter (issue 14, ResNet-20 speed; tune.c
 * measures it beside oneDNN's two): Lavin and Gray's F(m x m, 3 x 3), m = 4
 * (WG_M; m = 2 measured slower everywhere: docs/cpu-kernels.md), for 3x3
 * filters of stride 1, dilation 1 and groups 1, any padding and image size
 * (partial edge tiles read zeros and write only their valid outputs), on one
 * thread per device (oneDNN 2.6 has Winograd on AVX-512 only). F(4, 3)'s
 * interpolation points are 0, 1, -1, 1/2, -2 (and infinity), not Lavin's
 * 0, +-1, +-2: its float error is about a third (Barabasz et al. 2018; the
 * worst kern_kernels case went from 1.03 of the tolerance to 0.63). Not for
 * fewer than 4 channels in or out (WG_MIN_CHANNELS).
 *
 * An output tile of m x m pixels reads a (m + 2) x (m + 2) input tile d; per
 * channel Y = A^T [(G g G^T) (x) (B^T d B)] A. In NHWC the tile transforms
 * run across the channels (vectorized, x86-64-v3 and plain x86-64 clones) and
 * the element-wise products become, per transform position p ((m + 2)^2 of
 * them), one GEMM V_p [tiles x Cin] x U_p [Cin x Cout] over blocks of tiles
 * that stay in L2, the filter transformed once per call: up to 64 channels
 * in and out a register-blocked micro-kernel (mm_small; OpenBLAS runs such
 * thin GEMMs at a third of its peak), beyond that OpenBLAS.
 * - conv2d_grad_input is the same convolution over dy with the filter rotated
 *   by 180 degrees, its channels swapped, padding 2 - pad.
 * - conv2d_grad_filter: dW = G^T [sum over tiles (B^T d B) (x) (A dY A^T)] G,
 *   per position one GEMM V_p^T [Cin x tiles] x Z_p [tiles x Cout],
 *   accumulated block after block, then the inverse filter transform.
 * - conv2d_epilogue: the convolution, then cpu_epilogue_rows over its output,
 *   the unfused conv2d, add, add, activation bit for bit (as dnnl.c's HWIO
 *   candidate does).
 * Deterministic: one thread, a fixed order of sums (tiles in order, blocks in
 * order, mm_small's chunks in order; OpenBLAS on one thread).
 * On x86-64-v4 (AVX-512) machines the transforms and mm_small run 16 channels
 * a vector (forward_wide, grad_filter_wide): the same arithmetic per channel,
 * so the same bits as the AVX2 clone (kern_kernels checks it), about 5-7%
 * faster on ResNet-20's layers in all (docs/cpu-kernels.md). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"
#include "vec8.h"

/* compiled for x86-64-v3 (AVX2 with FMA) and plain x86-64, chosen at load
 * time; and apart for x86-64-v4 with 16-float vectors (WG_WIDE) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define WG_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#define WG_WIDE __attribute__((target("arch=x86-64-v4")))
#else
#define WG_CLONES
#endif

#define WG_INLINE static inline __attribute__((always_inline))

enum { WG_M = 4 };                 /* the output tile's side in use: F(4x4, 3x3) */
_Static_assert(WG_M == 4, "the transforms below are F(4x4, 3x3)'s");
/* transformed tiles of a block, in and out: about 256 KiB, in L2 from the
 * transform to the products to the inverse (1 MiB measured slower) */
enum { BLOCK_BYTES = 1 << 18 };
/* channel counts (in and out) up to which the products run on mm_small, not
 * OpenBLAS (measured faster at 16, 32 and 64; more not measured) */
enum { WG_SMALL = 64 };
/* channels in and out below which it does not apply: with fewer, the products
 * (GEMMs over the channels) are a sliver beside the per-channel transforms, and
 * no sum over channels averages the transforms' float error. At one channel in
 * it measured 2-3x slower than oneDNN (docs/cpu-kernels.md), and its error on
 * such cases sat within 2x of the kern tolerance. */
enum { WG_MIN_CHANNELS = 4 };

int cpu_conv_winograd_applies(const rt_kernel_args *k) {
    ir_op op = k->node->op;
    if (op != OP_CONV2D && op != OP_CONV2D_EPILOGUE && op != OP_CONV2D_GRAD_INPUT && op != OP_CONV2D_GRAD_FILTER)
        return 0;
    if (cpu_kernels_threads() != 1 || IN_NUMEL(k, 0) <= 0 || IN_NUMEL(k, 1) <= 0 || OUT_NUMEL(k) <= 0) return 0;
    const ir_shape *w = op == OP_CONV2D_GRAD_FILTER ? &k->node->shape : IN_SHAPE(k, 1);
    if (w->rank != 4 || w->dim[0] != 3 || w->dim[1] != 3) return 0;
    if (w->dim[2] < WG_MIN_CHANNELS || w->dim[3] < WG_MIN_CHANNELS) return 0;
    ir_conv g = ir_conv_of(k->node, w);
    return g.groups == 1 && g.stride[0] == 1 && g.stride[1] == 1 && g.dilation[0] == 1 && g.dilation[1] == 1;
}

/* ---- the 1-D transforms, each over n channels: in[k * is + c] -> out[i * os + c],
 * 16 channels a vector on the AVX-512 path (`wide`), 8, then one at a time
 * (the same formula: BODY(LOAD, STORE) with `ty` the vector or float type) ---- */

/* 16 floats, one AVX-512 register: only on that path, since gcc splits it
 * into slow code for AVX2 (4-7x slower measured); the loads and stores as LD8's */
typedef float v16 __attribute__((vector_size(64)));
#define LD16(p) ({ v16 v_; memcpy(&v_, (p), sizeof v_); v_; })
#define ST16(p, v) ({ v16 t_ = (v); memcpy((p), &t_, sizeof t_); })
#define LD1(p) (*(p))
#define ST1(p, v) (*(p) = (v))
#define CHANNELS(BODY)                                                                                         \
    do {                                                                                                       \
        int64_t c = 0;                                                                                         \
        if (wide)                                                                                              \
            for (; c + 16 <= n; c += 16) {                                                                     \
                typedef v16 ty;                                                                                \
                BODY(LD16, ST16)                                                                               \
            }                                                                                                  \
        for (; c + 8 <= n; c += 8) {                                                                           \
            typedef v8 ty;                                                                                     \
            BODY(LD8, ST8)                                                                                     \
        }                                                                                                      \
        for (; c < n; c++) {                                                                                   \
            typedef float ty;                                                                                  \
            BODY(LD1, ST1)                                                                                     \
        }                                                                                                      \
    } while (0)

/* B^T d: T = m + 2 inputs to T outputs */
#define BT4(L, S)                                                                                              \
    ty d0 = L(IN(0) + c), d1 = L(IN(1) + c), d2 = L(IN(2) + c), d3 = L(IN(3) + c), d4 = L(IN(4) + c),          \
       d5 = L(IN(5) + c);                                                                                      \
    S(out + c, d0 - 1.5f * d1 - 2.0f * d2 + 1.5f * d3 + d4);                                                   \
    S(out + os + c, -d1 + 0.5f * d2 + 2.5f * d3 + d4);                                                         \
    S(out + 2 * os + c, d1 - 2.5f * d2 + 0.5f * d3 + d4);                                                      \
    S(out + 3 * os + c, 2.0f * (d3 - d1) - d2 + d4);                                                           \
    S(out + 4 * os + c, 0.5f * (d1 - d3) - d2 + d4);                                                           \
    S(out + 5 * os + c, d1 - 1.5f * d2 - 2.0f * d3 + 1.5f * d4 + d5);
#define IN(k) (in + (k) * is)
WG_INLINE void bt_1d(int wide, const float *restrict in, int64_t is, float *restrict out, int64_t os, int64_t n) {
    CHANNELS(BT4);
}
#undef IN
/* the same over inputs at q[0], ..., q[T - 1] (an edge tile's rows: the image's or zeros) */
#define IN(k) (q[k])
WG_INLINE void bt_1d_at(int wide, const float *const *q, float *restrict out, int64_t os, int64_t n) {
    CHANNELS(BT4);
}
#undef IN

/* A^T y: T inputs to m outputs */
#define AT4(L, S)                                                                                              \
    ty m0 = L(in + c), m1 = L(in + is + c), m2 = L(in + 2 * is + c), m3 = L(in + 3 * is + c),                  \
       m4 = L(in + 4 * is + c), m5 = L(in + 5 * is + c);                                                       \
    ty s12 = m1 + m2, d12 = m1 - m2;                                                                           \
    S(out + c, m0 + s12 + m3 + m4);                                                                            \
    S(out + os + c, d12 + 0.5f * m3 - 2.0f * m4);                                                              \
    S(out + 2 * os + c, s12 + 0.25f * m3 + 4.0f * m4);                                                         \
    S(out + 3 * os + c, d12 + 0.125f * m3 - 8.0f * m4 + m5);
WG_INLINE void at_1d(int wide, const float *restrict in, int64_t is, float *restrict out, int64_t os, int64_t n) {
    CHANNELS(AT4);
}

/* A z (the transpose of A^T): m inputs to T outputs */
#define A4(L, S)                                                                                               \
    ty y0 = L(in + c), y1 = L(in + is + c), y2 = L(in + 2 * is + c), y3 = L(in + 3 * is + c);                  \
    ty e = y0 + y2, o = y1 + y3;                                                                               \
    S(out + c, y0);                                                                                            \
    S(out + os + c, e + o);                                                                                    \
    S(out + 2 * os + c, e - o);                                                                                \
    S(out + 3 * os + c, y0 + 0.5f * y1 + 0.25f * y2 + 0.125f * y3);                                            \
    S(out + 4 * os + c, y0 - 2.0f * y1 + 4.0f * y2 - 8.0f * y3);                                               \
    S(out + 5 * os + c, y3);
WG_INLINE void a_1d(int wide, const float *restrict in, int64_t is, float *restrict out, int64_t os, int64_t n) {
    CHANNELS(A4);
}

/* G g: 3 taps to T outputs */
#define G4(L, S)                                                                                               \
    ty g0 = L(in + c), g1 = L(in + is + c), g2 = L(in + 2 * is + c);                                           \
    S(out + c, g0);                                                                                            \
    S(out + os + c, (g0 + g1 + g2) / 3.0f);                                                                    \
    S(out + 2 * os + c, (g1 - g0 - g2) / 3.0f);                                                                \
    S(out + 3 * os + c, -(16.0f * g0 + 8.0f * g1 + 4.0f * g2) / 15.0f);                                        \
    S(out + 4 * os + c, (g0 - 2.0f * g1 + 4.0f * g2) / 15.0f);                                                 \
    S(out + 5 * os + c, g2);
WG_INLINE void g_1d(int wide, const float *restrict in, int64_t is, float *restrict out, int64_t os, int64_t n) {
    CHANNELS(G4);
}

/* G^T u: T inputs to 3 taps */
#define GT4(L, S)                                                                                              \
    ty u0 = L(in + c), u1 = L(in + is + c), u2 = L(in + 2 * is + c), u3 = L(in + 3 * is + c),                  \
       u4 = L(in + 4 * is + c), u5 = L(in + 5 * is + c);                                                       \
    S(out + c, u0 + (u1 - u2) / 3.0f + (u4 - 16.0f * u3) / 15.0f);                                             \
    S(out + os + c, (u1 + u2) / 3.0f - (8.0f * u3 + 2.0f * u4) / 15.0f);                                       \
    S(out + 2 * os + c, (u1 - u2) / 3.0f + (4.0f * u4 - 4.0f * u3) / 15.0f + u5);
WG_INLINE void gt_1d(int wide, const float *restrict in, int64_t is, float *restrict out, int64_t os, int64_t n) {
    CHANNELS(GT4);
}

/* ---- the per-position products: a register-blocked micro-kernel for small
 * channel counts (OpenBLAS runs [tiles x 16] x [16 x 16] at a third of its
 * peak: packing and the beta pass dominate) ----
 * c[i * cs + o] = (acc ? c[i * cs + o] : 0) + sum over k < K of
 * a[i * ars + k * aks] * b[k * bs + o], for i < rows, o < n: R rows by NV
 * vectors of 8 outputs in registers, a's entries broadcast, b's rows loaded;
 * the last n % 8 columns one at a time. The order of sums is fixed: chunks of
 * WG_KC k in order, each summed from zero (k in order) and then added to c
 * (a sum in one chain over K = 64 channels went over the kern tolerance on
 * 7x7x64, 1.12 of it; over the filter gradient's thousands of tiles it
 * would grow further). */
enum { WG_KC = 16 };
#define MM_TILE(ty, L, S, NV, W)                                                                               \
    for (int64_t k0 = 0; k0 < K; k0 += WG_KC) {                                                                \
        int64_t k1 = K - k0 < WG_KC ? K : k0 + WG_KC;                                                          \
        ty s[6][2];                                                                                            \
        for (int r = 0; r < R; r++)                                                                            \
            for (int j = 0; j < NV; j++) s[r][j] = (ty){0};                                                    \
        for (int64_t k = k0; k < k1; k++) {                                                                    \
            const float *bk = b + k * bs, *ak = a + k * aks;                                                   \
            ty b0 = L(bk), b1 = NV > 1 ? L(bk + W) : b0;                                                       \
            for (int r = 0; r < R; r++) {                                                                      \
                s[r][0] += ak[r * ars] * b0;                                                                   \
                if (NV > 1) s[r][1] += ak[r * ars] * b1;                                                       \
            }                                                                                                  \
        }                                                                                                      \
        for (int r = 0; r < R; r++)                                                                            \
            for (int j = 0; j < NV; j++) {                                                                     \
                float *cp = c + r * cs + W * j;                                                                \
                S(cp, acc || k0 ? L(cp) + s[r][j] : s[r][j]);                                                  \
            }                                                                                                  \
    }
/* NV = 2 (16 outputs) is one vector on the AVX-512 path */
WG_INLINE void mm_tile(const int wide, const int R, const int NV, int64_t K, const float *restrict a, int64_t ars,
                       int64_t aks, const float *restrict b, int64_t bs, float *restrict c, int64_t cs, int acc) {
    if (wide && NV == 2) {
        MM_TILE(v16, LD16, ST16, 1, 16)
    } else {
        MM_TILE(v8, LD8, ST8, NV, 8)
    }
}

WG_INLINE void mm_cols(const int wide, const int NV, int64_t rows, int64_t K, const float *a, int64_t ars,
                       int64_t aks, const float *b, int64_t bs, float *c, int64_t cs, int acc) {
    int64_t i = 0;
    for (; i + 6 <= rows; i += 6) mm_tile(wide, 6, NV, K, a + i * ars, ars, aks, b, bs, c + i * cs, cs, acc);
    switch (rows - i) {
    case 5: mm_tile(wide, 5, NV, K, a + i * ars, ars, aks, b, bs, c + i * cs, cs, acc); break;
    case 4: mm_tile(wide, 4, NV, K, a + i * ars, ars, aks, b, bs, c + i * cs, cs, acc); break;
    case 3: mm_tile(wide, 3, NV, K, a + i * ars, ars, aks, b, bs, c + i * cs, cs, acc); break;
    case 2: mm_tile(wide, 2, NV, K, a + i * ars, ars, aks, b, bs, c + i * cs, cs, acc); break;
    case 1: mm_tile(wide, 1, NV, K, a + i * ars, ars, aks, b, bs, c + i * cs, cs, acc); break;
    default: break;
    }
}

WG_INLINE void mm_small(int wide, int64_t rows, int64_t n, int64_t K, const float *a, int64_t ars, int64_t aks,
                        const float *b, int64_t bs, float *c, int64_t cs, int acc) {
    int64_t o = 0;
    for (; o + 16 <= n; o += 16) mm_cols(wide, 2, rows, K, a, ars, aks, b + o, bs, c + o, cs, acc);
    for (; o + 8 <= n; o += 8) mm_cols(wide, 1, rows, K, a, ars, aks, b + o, bs, c + o, cs, acc);
    for (; o < n; o++)
        for (int64_t i = 0; i < rows; i++)
            for (int64_t k0 = 0; k0 < K; k0 += WG_KC) {
                int64_t k1 = K - k0 < WG_KC ? K : k0 + WG_KC;
                float t = 0.0f;
                for (int64_t k = k0; k < k1; k++) t += a[i * ars + k * aks] * b[k * bs + o];
                c[i * cs + o] = acc || k0 ? c[i * cs + o] + t : t;
            }
}

/* ---- geometry ---- */

/* a stride-1 3x3 convolution in [N, IH, IW, C] -> out [N, OH, OW, O] with
 * top and left padding pt, pl: out[oh, ow] reads in[oh - pt + r, ow - pl + s] */
typedef struct {
    int64_t N, IH, IW, C, OH, OW, O, pt, pl;
    int64_t th, tw, tiles, tb; /* tiles down and across an image, in all, per block */
    int small;                 /* the per-position products on mm_small, not OpenBLAS */
} wgeom;

static wgeom geom_of(int m, int64_t N, int64_t IH, int64_t IW, int64_t C, int64_t OH, int64_t OW, int64_t O,
                     int64_t pt, int64_t pl) {
    wgeom g = {N, IH, IW, C, OH, OW, O, pt, pl, (OH + m - 1) / m, (OW + m - 1) / m, 0, 0, 0};
    g.tiles = N * g.th * g.tw;
    g.small = C <= WG_SMALL && O <= WG_SMALL;
    int64_t t = m + 2, tb = BLOCK_BYTES / ((int64_t)sizeof(float) * t * t * (C + O));
    g.tb = tb < 16 ? 16 : tb;
    if (g.tb > g.tiles) g.tb = g.tiles;
    return g;
}

/* where tile t starts: image *b, output row *i0 and column *j0 */
WG_INLINE void tile_at(int m, const wgeom *g, int64_t t, int64_t *b, int64_t *i0, int64_t *j0) {
    int64_t per = g->th * g->tw, r = t % per;
    *b = t / per, *i0 = r / g->tw * m, *j0 = r % g->tw * m;
}

/* B^T d B of tile t of `in` into v[p * vs + c], p = i * T + j; zero: C zeros; tmp: T * T * C floats.
 * An edge tile reads its pixels in place through pointers, zero for those
 * outside the image (a copy into a padded tile, 36 memcpy or memset calls,
 * cost as much as the transform on 28x28x16) */
WG_INLINE void input_tile(int m, int wide, const wgeom *g, int64_t C, const float *in, int64_t t, const float *zero,
                          float *tmp, float *v, int64_t vs) {
    const int64_t T = m + 2;
    int64_t b, i0, j0;
    tile_at(m, g, t, &b, &i0, &j0);
    int64_t ih0 = i0 - g->pt, iw0 = j0 - g->pl;
    if (ih0 >= 0 && iw0 >= 0 && ih0 + T <= g->IH && iw0 + T <= g->IW) { /* inside: read the image in place */
        const float *src = in + ((b * g->IH + ih0) * g->IW + iw0) * C;
        for (int64_t e = 0; e < T; e++) bt_1d(wide, src + e * C, g->IW * C, tmp + e * C, T * C, C); /* tmp[i][e] */
    } else { /* an edge: zeros outside the image */
        for (int64_t e = 0; e < T; e++) {
            const float *q[6];
            int64_t iw = iw0 + e;
            for (int64_t a = 0; a < T; a++) {
                int64_t ih = ih0 + a;
                q[a] = ih < 0 || iw < 0 || ih >= g->IH || iw >= g->IW ? zero : in + ((b * g->IH + ih) * g->IW + iw) * C;
            }
            bt_1d_at(wide, q, tmp + e * C, T * C, C);
        }
    }
    for (int64_t i = 0; i < T; i++) bt_1d(wide, tmp + i * T * C, C, v + i * T * vs, vs, C);
}

/* A^T M A of tile t (mt[p * ms + o]) into out's valid pixels; tmp, y: T * T * O floats */
WG_INLINE void output_tile(int m, int wide, const wgeom *g, int64_t O, const float *mt, int64_t ms, int64_t t,
                           float *tmp, float *y, float *out) {
    const int64_t T = m + 2;
    int64_t b, i0, j0;
    tile_at(m, g, t, &b, &i0, &j0);
    for (int64_t j = 0; j < T; j++) at_1d(wide, mt + j * ms, T * ms, tmp + j * O, T * O, O); /* tmp[a][j] */
    int whole = i0 + m <= g->OH && j0 + m <= g->OW;
    for (int64_t a = 0; a < m; a++) {
        float *dst = whole ? out + ((b * g->OH + i0 + a) * g->OW + j0) * O : y + a * m * O;
        at_1d(wide, tmp + a * T * O, O, dst, O, O);
    }
    if (whole) return;
    for (int64_t a = 0; a < m && i0 + a < g->OH; a++) {
        int64_t w = g->OW - j0 < m ? g->OW - j0 : m;
        memcpy(out + ((b * g->OH + i0 + a) * g->OW + j0) * O, y + a * m * O, (size_t)(w * O) * sizeof *out);
    }
}

/* A dY A^T of tile t of dy ([N, OH, OW, O], zeros past its edge) into z[p * zs + o]; pad: m * m * O, tmp: T * m * O */
WG_INLINE void grad_tile(int m, int wide, const wgeom *g, int64_t O, const float *dy, int64_t t, float *pad, float *tmp,
                         float *z, int64_t zs) {
    const int64_t T = m + 2;
    int64_t b, i0, j0, rs;
    tile_at(m, g, t, &b, &i0, &j0);
    const float *src;
    if (i0 + m <= g->OH && j0 + m <= g->OW) {
        src = dy + ((b * g->OH + i0) * g->OW + j0) * O, rs = g->OW * O;
    } else {
        for (int64_t a = 0; a < m; a++)
            for (int64_t e = 0; e < m; e++) {
                float *dst = pad + (a * m + e) * O;
                if (i0 + a >= g->OH || j0 + e >= g->OW) memset(dst, 0, (size_t)O * sizeof *dst);
                else memcpy(dst, dy + ((b * g->OH + i0 + a) * g->OW + j0 + e) * O, (size_t)O * sizeof *dst);
            }
        src = pad, rs = m * O;
    }
    for (int64_t e = 0; e < m; e++) a_1d(wide, src + e * O, rs, tmp + e * O, m * O, O); /* tmp[i][e] */
    for (int64_t i = 0; i < T; i++) a_1d(wide, tmp + i * m * O, O, z + i * T * zs, zs, O);
}

/* U[p][c][o] = G g G^T of the filter f [3][3][n = C * O]; tmp: T * 3 * n */
WG_INLINE void filter_transform(int m, int wide, const float *f, int64_t n, float *tmp, float *u) {
    const int64_t T = m + 2;
    for (int64_t s = 0; s < 3; s++) g_1d(wide, f + s * n, 3 * n, tmp + s * n, 3 * n, n); /* tmp[i][s] */
    for (int64_t i = 0; i < T; i++) g_1d(wide, tmp + i * 3 * n, n, u + i * T * n, n, n);
}

/* dW[r][s] = G^T dU G of du [T * T][n]; tmp: 3 * T * n */
WG_INLINE void filter_inverse(int m, int wide, const float *du, int64_t n, float *tmp, float *dw) {
    const int64_t T = m + 2;
    for (int64_t j = 0; j < T; j++) gt_1d(wide, du + j * n, T * n, tmp + j * n, T * n, n); /* tmp[r][j] */
    for (int64_t r = 0; r < 3; r++) gt_1d(wide, tmp + r * T * n, n, dw + r * 3 * n, n, n);
}

/* ---- the three passes ---- */

/* out = in * f (the filter f [3][3][C][O]); s: the scratch (forward_floats) */
WG_INLINE void forward(int m, int wide, const wgeom *g, int64_t C, int64_t O, const float *in, const float *f,
                       float *out, float *s) {
    const int64_t T = m + 2, P = T * T, n = C * O, W = C > O ? C : O, tb = g->tb;
    float *u = s, *v = u + P * n, *mt = v + P * tb * C, *pad = mt + P * tb * O, *zero = pad + P * W, *tmp = zero + W;
    memset(zero, 0, (size_t)W * sizeof *zero);
    filter_transform(m, wide, f, n, tmp, u);
    for (int64_t t0 = 0; t0 < g->tiles; t0 += tb) {
        int64_t nb = g->tiles - t0 < tb ? g->tiles - t0 : tb;
        for (int64_t i = 0; i < nb; i++) input_tile(m, wide, g, C, in, t0 + i, zero, tmp, v + i * C, tb * C);
        for (int64_t p = 0; p < P; p++)
            if (g->small) mm_small(wide, nb, O, C, v + p * tb * C, C, 1, u + p * n, O, mt + p * tb * O, O, 0);
            else
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb, (int)O, (int)C, 1.0f,
                            v + p * tb * C, (int)C, u + p * n, (int)O, 0.0f, mt + p * tb * O, (int)O);
        for (int64_t i = 0; i < nb; i++) output_tile(m, wide, g, O, mt + i * O, tb * O, t0 + i, tmp, pad, out);
    }
}

static size_t forward_floats(int m, const wgeom *g) {
    int64_t T = m + 2, P = T * T, n = g->C * g->O, W = g->C > g->O ? g->C : g->O;
    int64_t tmp = P * W > 3 * T * n ? P * W : 3 * T * n;
    return (size_t)(P * n + P * g->tb * (g->C + g->O) + P * W + W + tmp);
}

/* dw [3][3][C][O] = the filter gradient of x (g's input) and dy (its output) */
WG_INLINE void grad_filter(int m, int wide, const wgeom *g, int64_t C, int64_t O, const float *x, const float *dy,
                           float *dw, float *s) {
    const int64_t T = m + 2, P = T * T, n = C * O, W = C > O ? C : O, tb = g->tb;
    float *du = s, *v = du + P * n, *z = v + P * tb * C, *pad = z + P * tb * O, *zero = pad + P * W, *tmp = zero + W;
    memset(zero, 0, (size_t)W * sizeof *zero);
    for (int64_t t0 = 0; t0 < g->tiles; t0 += tb) {
        int64_t nb = g->tiles - t0 < tb ? g->tiles - t0 : tb;
        for (int64_t i = 0; i < nb; i++) {
            input_tile(m, wide, g, C, x, t0 + i, zero, tmp, v + i * C, tb * C);
            grad_tile(m, wide, g, O, dy, t0 + i, pad, tmp, z + i * O, tb * O);
        }
        for (int64_t p = 0; p < P; p++)
            if (g->small) mm_small(wide, C, O, nb, v + p * tb * C, 1, C, z + p * tb * O, O, du + p * n, O, t0 != 0);
            else
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)C, (int)O, (int)nb, 1.0f,
                            v + p * tb * C, (int)C, z + p * tb * O, (int)O, t0 ? 1.0f : 0.0f, du + p * n, (int)O);
    }
    if (!g->tiles) memset(du, 0, (size_t)(P * n) * sizeof *du);
    filter_inverse(m, wide, du, n, tmp, dw);
}

/* the clones (m = 4); the forward compiled apart for 16, 32 and 64 channels
 * in and out (ResNet-20's): the channel loops and mm_small's k loop then
 * have constant trip counts (28x28x16's transforms took 3.5 ms of its 5
 * with them variable) */
#define WG_SQUARE(CALL, g) \
    switch ((g)->C == (g)->O ? (g)->C : 0) { \
    case 16: CALL(16, 16); break; \
    case 32: CALL(32, 32); break; \
    case 64: CALL(64, 64); break; \
    default: CALL((g)->C, (g)->O); break; \
    }
WG_CLONES static void forward_m(int m, const wgeom *g, const float *in, const float *f, float *out, float *s) {
    const int wide = 0;
#define FWD(C, O) forward(m, wide, g, C, O, in, f, out, s)
    WG_SQUARE(FWD, g)
}
WG_CLONES static void grad_filter_m(int m, const wgeom *g, const float *x, const float *dy, float *dw, float *s) {
    grad_filter(m, 0, g, g->C, g->O, x, dy, dw, s); /* specialized, it measured slower on 32 and 64 channels */
}

#ifdef WG_WIDE
WG_WIDE static void forward_wide(int m, const wgeom *g, const float *in, const float *f, float *out, float *s) {
    const int wide = 1;
    WG_SQUARE(FWD, g)
}
WG_WIDE static void grad_filter_wide(int m, const wgeom *g, const float *x, const float *dy, float *dw, float *s) {
    grad_filter(m, 1, g, g->C, g->O, x, dy, dw, s);
}
#endif
#undef FWD

/* whether the AVX-512 path runs: on machines with it (libgcc's check covers
 * the OS's saving of the registers), unless a test turned it off */
static int wg_wide_off;
static int wg_has_wide(void) {
#ifdef WG_WIDE
    return __builtin_cpu_supports("x86-64-v4") != 0;
#else
    return 0;
#endif
}
int cpu_conv_winograd_avx512(int on) {
    wg_wide_off = !on;
    return wg_has_wide();
}
#ifdef WG_WIDE
static int wg_use_wide(void) { return !wg_wide_off && wg_has_wide(); }
#endif

static void run_forward(int m, const wgeom *g, const float *in, const float *f, float *out, float *s) {
#ifdef WG_WIDE
    if (wg_use_wide()) {
        forward_wide(m, g, in, f, out, s);
        return;
    }
#endif
    forward_m(m, g, in, f, out, s);
}
static void run_grad_filter(int m, const wgeom *g, const float *x, const float *dy, float *dw, float *s) {
#ifdef WG_WIDE
    if (wg_use_wide()) {
        grad_filter_wide(m, g, x, dy, dw, s);
        return;
    }
#endif
    grad_filter_m(m, g, x, dy, dw, s);
}

/* ---- the candidate ---- */

int cpu_conv_winograd(const rt_kernel_args *k, char *err, size_t cap) {
    if (!cpu_conv_winograd_applies(k)) return cpu_kerr(k, err, cap, "the Winograd convolution does not apply to it");
    const ir_node *nd = k->node;
    const int m = WG_M;
    ir_op op = nd->op;
    const ir_shape *x, *w, *y; /* the forward convolution's shapes */
    if (op == OP_CONV2D_GRAD_INPUT) x = &nd->shape, w = IN_SHAPE(k, 1), y = IN_SHAPE(k, 0);
    else if (op == OP_CONV2D_GRAD_FILTER) x = IN_SHAPE(k, 0), w = &nd->shape, y = IN_SHAPE(k, 1);
    else x = IN_SHAPE(k, 0), w = IN_SHAPE(k, 1), y = &nd->shape;
    ir_conv cv = ir_conv_of(nd, w);
    int64_t N = x->dim[0], H = x->dim[1], Wd = x->dim[2], C = x->dim[3], OH = y->dim[1], OW = y->dim[2], O = y->dim[3];
    if (op == OP_CONV2D_GRAD_INPUT) { /* a convolution of dy with the rotated filter, channels swapped */
        wgeom g = geom_of(m, N, OH, OW, O, H, Wd, C, 2 - cv.pad[0], 2 - cv.pad[1]);
        size_t n = (size_t)(C * O);
        float *s = cpu_thread_scratch(CPU_SCRATCH_WINOGRAD, forward_floats(m, &g) + 9 * n);
        if (!s) return cpu_kerr(k, err, cap, "out of memory");
        float *rot = s + forward_floats(m, &g); /* rot[r][s][o][c] = w[2 - r][2 - s][c][o] */
        const float *wf = IN_F32(k, 1);
        for (int64_t r = 0; r < 9; r++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t o = 0; o < O; o++) rot[(r * O + o) * C + c] = wf[((8 - r) * C + c) * O + o];
        run_forward(m, &g, IN_F32(k, 0), rot, k->out, s);
        return 0;
    }
    wgeom g = geom_of(m, N, H, Wd, C, OH, OW, O, cv.pad[0], cv.pad[1]);
    float *s = cpu_thread_scratch(CPU_SCRATCH_WINOGRAD, forward_floats(m, &g));
    if (!s) return cpu_kerr(k, err, cap, "out of memory");
    if (op == OP_CONV2D_GRAD_FILTER) {
        run_grad_filter(m, &g, IN_F32(k, 0), IN_F32(k, 1), k->out, s);
        return 0;
    }
    run_forward(m, &g, IN_F32(k, 0), IN_F32(k, 1), k->out, s);
    if (op == OP_CONV2D_EPILOGUE)
        cpu_epilogue_rows(k->out, IN_F32(k, 2), nd->n_in == 4 ? IN_F32(k, 3) : NULL, OUT_NUMEL(k) / O, O, nd->iattr[9]);
    return 0;
}
