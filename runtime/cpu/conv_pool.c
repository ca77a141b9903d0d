/* conv_pool.c - conv2d_relu_pool2 and its filter gradient (issue 14, seed CNN
 * speed; docs/epilogue.md, rule 6): the seed CNN's first convolution (3x3x1x32
 * over 28x28 images), its bias, relu and 2x2 stride-2 max-pool in one pass.
 * The forward makes two rows of y = relu(conv2d(x, w) + bias) at a time in a
 * buffer that stays in L1 and pools them, so y ([64, 26, 26, 32], 5.5 MB) is
 * never written to memory, nor read back by max_pool2d; the filter gradient
 * makes y again an image at a time (86 KB, in L2) and hands it to
 * conv_direct.c's filter gradient through the pool, so the backward reads no
 * y either. Both make y with the same function, so the window maxima the
 * gradient finds are the forward's.
 *
 * y: one input channel, groups 1, channels a multiple of 8: two output pixels x
 * 8-channel vectors summed in registers over the taps (r, s ascending), then
 * + bias, relu; any other geometry, and the pixels whose taps reach into the
 * padding: a plain loop over the taps in the same order. Deterministic. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <stdlib.h>
#include <string.h>

#include "../ops_math.h"
#include "kernels_impl.h"

typedef float v8 __attribute__((vector_size(32)));

/* compiled for x86-64-v3 (AVX2 with FMA) and plain x86-64, chosen at load time */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define POOL_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define POOL_CLONES
#endif

typedef int vi8 __attribute__((vector_size(32)));

#define load8(p) ({ v8 v_; memcpy(&v_, (p), sizeof v_); v_; })
/* mg_relu lane by lane (x > 0 ? x : 0: NaN and -0 give +0), stored at p; macros, not
 * functions, since a vector argument changes the ABI between the clones */
#define store_relu(p, v) ({ v8 v_ = (v), z_ = {0}; vi8 r_ = (vi8)v_ & (v_ > z_); memcpy((p), &r_, sizeof r_); })

enum { VB = 4, PB = 2 }; /* vectors of channels (32) x pixels per register block */

/* x [N, H, W, CX], w [KH, KW, CG, C], bias [C] -> y [N, OH, OW, C] */
typedef struct {
    const float *x, *w, *bias;
    int64_t N, H, W, CX, OH, OW, C, KH, KW, CG;
    ir_conv g;
    int fast;       /* one input channel, groups 1, C % 8 == 0 */
    int64_t lo, hi; /* the ow whose taps all fall inside x's width */
} cgeom;

static cgeom cgeom_of(const rt_kernel_args *k) {
    const ir_shape *x = IN_SHAPE(k, 0), *w = IN_SHAPE(k, 1);
    cgeom G = {IN_F32(k, 0), IN_F32(k, 1), IN_F32(k, 2), x->dim[0], x->dim[1], x->dim[2], x->dim[3], 0, 0,
               w->dim[3], w->dim[0], w->dim[1], w->dim[2], ir_conv_of(k->node, w), 0, 0, 0};
    const ir_conv *g = &G.g;
    G.OH = (G.H + g->pad[0] + g->pad[2] - g->window[0]) / g->stride[0] + 1;
    G.OW = (G.W + g->pad[1] + g->pad[3] - g->window[1]) / g->stride[1] + 1;
    G.fast = g->groups == 1 && G.CX == 1 && G.C % 8 == 0;
    /* ow * sw - pl >= 0 and ow * sw - pl + (KW - 1) * dw < W */
    int64_t a = g->pad[1] <= 0 ? 0 : (g->pad[1] + g->stride[1] - 1) / g->stride[1];
    int64_t z = G.W - 1 + g->pad[1] - (G.KW - 1) * g->dilation[1], b = z < 0 ? 0 : z / g->stride[1] + 1;
    G.lo = a < G.OW ? a : G.OW, G.hi = b < G.OW ? b : G.OW;
    if (G.hi < G.lo) G.hi = G.lo;
    return G;
}

/* y at (b, oh, ow), every channel, a tap at a time (the padding skipped) */
static void pixel_any(const cgeom *G, int64_t b, int64_t oh, int64_t ow, float *y) {
    const ir_conv *g = &G->g;
    const int64_t C = G->C, per = C / g->groups;
    for (int64_t c = 0; c < C; c++) {
        float acc = 0.0f;
        for (int64_t r = 0; r < G->KH; r++) {
            int64_t ih = oh * g->stride[0] - g->pad[0] + r * g->dilation[0];
            if (ih < 0 || ih >= G->H) continue;
            for (int64_t s = 0; s < G->KW; s++) {
                int64_t iw = ow * g->stride[1] - g->pad[1] + s * g->dilation[1];
                if (iw < 0 || iw >= G->W) continue;
                const float *xp = G->x + ((b * G->H + ih) * G->W + iw) * G->CX + c / per * G->CG;
                const float *wp = G->w + (r * G->KW + s) * G->CG * C + c;
                for (int64_t ci = 0; ci < G->CG; ci++) acc += xp[ci] * wp[ci * C];
            }
        }
        y[c] = mg_relu(acc + G->bias[c]);
    }
}

/* y at (b, oh, ow .. ow + np - 1), channels c0 .. c0 + 8 nb, every tap inside
 * x (one input channel): np x nb vectors in registers */
static inline __attribute__((always_inline)) void block_fast(const cgeom *G, int64_t b, int64_t oh, int64_t ow,
                                                             int np, int64_t c0, int nb, float *y) {
    const ir_conv *g = &G->g;
    const int64_t C = G->C, sw = g->stride[1], dw = g->dilation[1];
    v8 acc[PB][VB] = {{{0}}};
    for (int64_t r = 0; r < G->KH; r++) {
        const float *xr = G->x + (b * G->H + oh * g->stride[0] - g->pad[0] + r * g->dilation[0]) * G->W + ow * sw -
                          g->pad[1];
        const float *wr = G->w + r * G->KW * C + c0;
        for (int64_t s = 0; s < G->KW; s++) {
            v8 wv[VB];
            for (int j = 0; j < nb; j++) wv[j] = load8(wr + s * C + 8 * j);
            for (int p = 0; p < np; p++) {
                float xv = xr[p * sw + s * dw];
                for (int j = 0; j < nb; j++) acc[p][j] += xv * wv[j];
            }
        }
    }
    for (int j = 0; j < nb; j++) {
        v8 bv = load8(G->bias + c0 + 8 * j);
        for (int p = 0; p < np; p++) {
            v8 v = acc[p][j] + bv;
            float *o = y + p * C + c0 + 8 * j;
            for (int e = 0; e < 8; e++) o[e] = mg_relu(v[e]);
        }
    }
}

/* block_fast's common case, three pixels x 32 channels, its 12 sums named so
 * that they stay in registers (an array of them went through the stack);
 * kh, kw, sw, dw constants where the caller knows them (3x3, stride 1) */
static inline __attribute__((always_inline)) void block_3x32(const cgeom *G, int64_t b, int64_t oh, int64_t ow,
                                                             int64_t c0, float *y, int64_t kh, int64_t kw,
                                                             int64_t sw, int64_t dw) {
    const ir_conv *g = &G->g;
    const int64_t C = G->C;
    v8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
    v8 d0 = {0}, d1 = {0}, d2 = {0}, d3 = {0};
    for (int64_t r = 0; r < kh; r++) {
        const float *xr = G->x + (b * G->H + oh * g->stride[0] - g->pad[0] + r * g->dilation[0]) * G->W + ow * sw -
                          g->pad[1];
        const float *wr = G->w + r * kw * C + c0;
        for (int64_t s = 0; s < kw; s++) {
            const float *wp = wr + s * C;
            v8 w0 = load8(wp), w1 = load8(wp + 8), w2 = load8(wp + 16), w3 = load8(wp + 24);
            float x0 = xr[s * dw], x1 = xr[sw + s * dw], x2 = xr[2 * sw + s * dw];
            a0 += x0 * w0, a1 += x0 * w1, a2 += x0 * w2, a3 += x0 * w3;
            b0 += x1 * w0, b1 += x1 * w1, b2 += x1 * w2, b3 += x1 * w3;
            d0 += x2 * w0, d1 += x2 * w1, d2 += x2 * w2, d3 += x2 * w3;
        }
    }
    const float *bias = G->bias + c0;
    v8 e0 = load8(bias), e1 = load8(bias + 8), e2 = load8(bias + 16), e3 = load8(bias + 24);
    store_relu(y, a0 + e0), store_relu(y + 8, a1 + e1), store_relu(y + 16, a2 + e2), store_relu(y + 24, a3 + e3);
    y += C;
    store_relu(y, b0 + e0), store_relu(y + 8, b1 + e1), store_relu(y + 16, b2 + e2), store_relu(y + 24, b3 + e3);
    y += C;
    store_relu(y, d0 + e0), store_relu(y + 8, d1 + e1), store_relu(y + 16, d2 + e2), store_relu(y + 24, d3 + e3);
}

/* row oh of image b of y into y [OW, C] */
POOL_CLONES static void conv_row(const cgeom *G, int64_t b, int64_t oh, float *y) {
    const ir_conv *g = &G->g;
    int64_t ih0 = oh * g->stride[0] - g->pad[0], ih1 = ih0 + (G->KH - 1) * g->dilation[0];
    int inside = G->fast && ih0 >= 0 && ih1 < G->H;
    const int64_t sw = g->stride[1], dw = g->dilation[1];
    int k33 = G->KH == 3 && G->KW == 3 && sw == 1 && dw == 1;
    for (int64_t ow = 0; ow < G->OW;) {
        if (!inside || ow < G->lo || ow >= G->hi) {
            pixel_any(G, b, oh, ow, y + ow * G->C);
            ow++;
            continue;
        }
        int np = G->hi - ow >= 3 ? 3 : G->hi - ow >= PB ? PB : 1;
        if (np < 3 && G->hi - G->lo >= 3) ow = G->hi - 3, np = 3; /* the last three again: the same sums */
        for (int64_t c0 = 0; c0 < G->C; c0 += 8 * VB) {
            int nb = (int)((G->C - c0) / 8 < VB ? (G->C - c0) / 8 : VB);
            float *o = y + ow * G->C + c0;
            if (np == 3 && nb == VB && k33) block_3x32(G, b, oh, ow, c0, o, 3, 3, 1, 1); /* the seed CNN's */
            else if (np == 3 && nb == VB) block_3x32(G, b, oh, ow, c0, o, G->KH, G->KW, sw, dw); /* registers */
            else if (np == 3) block_fast(G, b, oh, ow, 1, c0, nb, o - c0), block_fast(G, b, oh, ow + 1, PB, c0, nb, o - c0 + G->C);
            else block_fast(G, b, oh, ow, np, c0, nb, o - c0);
        }
        ow += np;
    }
}

/* conv2d_relu_pool2: (x, w, bias) -> [N, OH/2, OW/2, C], two rows of y at a
 * time; the pool as max_pool2d's (pool.c): the maximum of the four in
 * row-major order */
int cpu_k_conv2d_relu_pool2(const rt_kernel_args *k, char *err, size_t cap) {
    cgeom G = cgeom_of(k);
    const int64_t C = G.C, PW = G.OW / 2;
    float *rows = malloc((size_t)(2 * G.OW * C) * sizeof *rows);
    if (!rows) return cpu_kerr(k, err, cap, "out of memory");
    float *out = k->out;
    for (int64_t b = 0; b < G.N; b++)
        for (int64_t ph = 0; ph < G.OH / 2; ph++) {
            conv_row(&G, b, 2 * ph, rows);
            conv_row(&G, b, 2 * ph + 1, rows + G.OW * C);
            const float *r0 = rows, *r1 = rows + G.OW * C;
            float *o = out + ((b * (G.OH / 2) + ph) * PW) * C;
            for (int64_t pw = 0; pw < PW; pw++, r0 += 2 * C, r1 += 2 * C, o += C)
                for (int64_t c = 0; c < C; c++) {
                    float m = r0[c], v = r0[C + c];
                    m = v > m ? v : m, v = r1[c];
                    m = v > m ? v : m, v = r1[C + c];
                    o[c] = v > m ? v : m;
                }
        }
    free(rows);
    return 0;
}

/* y's image b, made again into buf */
static const float *y_again(void *ctx, int64_t b, float *buf) {
    const cgeom *G = ctx;
    for (int64_t oh = 0; oh < G->OH; oh++) conv_row(G, b, oh, buf + oh * G->OW * G->C);
    return buf;
}

/* conv2d_relu_pool2_grad_filter: (x, w, bias, dy) -> dw, conv_direct.c's
 * filter gradient through the pool with y made again an image at a time */
int cpu_k_conv2d_relu_pool2_grad_filter(const rt_kernel_args *k, char *err, size_t cap) {
    cgeom G = cgeom_of(k);
    ir_shape y = ir_shape_make(4, (int64_t[4]){G.N, G.OH, G.OW, G.C});
    return cpu_grad_filter_pool2_images(k, IN_SHAPE(k, 0), &y, IN_SHAPE(k, 1), G.x, IN_F32(k, 3), y_again, &G, err,
                                        cap);
}
