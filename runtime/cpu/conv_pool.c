/* conv_pool.c - conv2d_relu_pool2 and its filter gradient (issue 14, seed
 * CNN speed; docs/epilogue.md, rule 6): the seed CNN's first convolution
 * (3x3x1x32 over 28x28 images), its bias, relu and 2x2 stride-2 max-pool in
 * one pass. The forward walks y = relu(conv2d(x, w) + bias) a pool window at
 * a time, makes the window's four elements in registers and writes their
 * maximum and, behind the maxima, the window's pixel the pool's gradient goes
 * to: the first of the four holding the maximum (row-major, 0..3), or -1
 * where the maximum is not > 0 (mg_relu_grad's zero). y ([64, 26, 26, 32],
 * 5.5 MB), its pool gradient and the dense [N, OH, OW, C] gradient are never
 * written. The filter gradient reads the pixels: one product a tap and a
 * window, dy times x under the window's pixel, not four of which three are
 * by 0, and no y made again.
 *
 * The windows whose taps all fall inside x, for one input channel, groups 1,
 * 3x3 filters and channels a multiple of 8: vectors of 8 channels, two at a
 * time, each of the four elements a sum from 0 over the taps (r, s
 * ascending), + bias, relu; the filter gradient sums the 9 taps x 8 channels
 * in registers over an image's windows, x under each window's pixel picked
 * by vpermps. Any other window or geometry: the same rule a pixel and a
 * channel at a time (pixel_any), into the image's sums in memory.
 * Deterministic: float sums within an image in a fixed order, double across
 * images. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <stdlib.h>
#include <string.h>

#include "../ops_math.h"
#include "kernels_impl.h"
#include "vec8.h"

/* compiled for x86-64-v3 (AVX2 with FMA) and plain x86-64, chosen at load time */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define POOL_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define POOL_CLONES
#endif

/* macros, not functions, since a vector argument changes the ABI between the clones */
/* mg_relu lane by lane (x > 0 ? x : 0: NaN and -0 give +0) */
#define relu8(v) ({ v8 v_ = (v), z_ = {0}; (v8)((v8i)v_ & (v_ > z_)); })
/* the larger of a and b lane by lane, for values that are no NaN (y, after relu) */
#define max8(a, b) ({ v8 a_ = (a), b_ = (b), r_; for (int e_ = 0; e_ < 8; e_++) r_[e_] = a_[e_] > b_[e_] ? a_[e_] : b_[e_]; r_; })

/* x [N, H, W, CX], w [KH, KW, CG, C], bias [C]; y [N, OH, OW, C], pooled [N, OH / 2, OW / 2, C] */
typedef struct {
    const float *x, *w, *bias;  /* bias: the forward's (the gradient's input 2 is the forward's output) */
    float *wv;                  /* reg: w [3, 3, 1, C] as [C / 8, 9, 8], a vector's taps together */
    int64_t N, H, W, CX, OH, OW, C, KH, KW, CG;
    ir_conv g;
    int reg;                    /* one input channel, groups 1, 3x3, C % 8 == 0: windows in registers */
    int k33;                    /* reg with stride 1 and dilation 1 (the seed CNN's) */
    int64_t ph0, ph1, pw0, pw1; /* reg: the windows whose taps all fall inside x, [ph0, ph1) x [pw0, pw1) */
} cgeom;

/* the windows p in [0, P) both of whose positions o = 2p, 2p + 1 have their
 * taps o * stride - pad + t * dil, t in [0, K), inside [0, X): [*p0, *p1) */
static void inside(int64_t P, int64_t X, int64_t K, int64_t stride, int64_t pad, int64_t dil, int64_t *p0,
                   int64_t *p1) {
    int64_t a = pad <= 0 ? 0 : (pad + stride - 1) / stride, z = X - 1 + pad - (K - 1) * dil;
    int64_t b = z < 0 ? 0 : z / stride + 1; /* positions [a, b) */
    *p0 = (a + 1) / 2, *p1 = b / 2;
    if (*p0 > P) *p0 = P;
    if (*p1 > P) *p1 = P;
    if (*p1 < *p0) *p1 = *p0;
}

static cgeom cgeom_of(const rt_kernel_args *k) {
    const ir_shape *x = IN_SHAPE(k, 0), *w = IN_SHAPE(k, 1);
    cgeom G = {IN_F32(k, 0), IN_F32(k, 1), IN_F32(k, 2), NULL, x->dim[0], x->dim[1], x->dim[2], x->dim[3], 0, 0,
               w->dim[3], w->dim[0], w->dim[1], w->dim[2], ir_conv_of(k->node, w), 0, 0, 0, 0, 0, 0};
    const ir_conv *g = &G.g;
    G.OH = (G.H + g->pad[0] + g->pad[2] - g->window[0]) / g->stride[0] + 1;
    G.OW = (G.W + g->pad[1] + g->pad[3] - g->window[1]) / g->stride[1] + 1;
    G.reg = g->groups == 1 && G.CX == 1 && G.C % 8 == 0 && G.KH == 3 && G.KW == 3;
    G.k33 = G.reg && g->stride[0] == 1 && g->stride[1] == 1 && g->dilation[0] == 1 && g->dilation[1] == 1;
    if (G.reg) {
        inside(G.OH / 2, G.H, G.KH, g->stride[0], g->pad[0], g->dilation[0], &G.ph0, &G.ph1);
        inside(G.OW / 2, G.W, G.KW, g->stride[1], g->pad[1], g->dilation[1], &G.pw0, &G.pw1);
    }
    return G;
}

/* cgeom.wv made for the register path (G->reg), else left NULL; -1 out of memory */
static int pack_w(cgeom *G) {
    if (!G->reg) return 0;
    const int64_t C = G->C;
    float *wv = malloc((size_t)(9 * C) * sizeof *wv);
    if (!wv) return -1;
    for (int64_t j = 0; j < C / 8; j++)
        for (int64_t t = 0; t < 9; t++)
            for (int64_t e = 0; e < 8; e++) wv[(j * 9 + t) * 8 + e] = G->w[t * C + 8 * j + e];
    G->wv = wv;
    return 0;
}

static int in_regs(const cgeom *G, int64_t ph, int64_t pw) {
    return G->reg && ph >= G->ph0 && ph < G->ph1 && pw >= G->pw0 && pw < G->pw1;
}

/* ---- any window: a pixel and a channel at a time ---- */

/* x under tap (r, s) of pixel (oh, ow) of image b, at its first channel; NULL in the padding */
static const float *tap_x(const cgeom *G, int64_t b, int64_t oh, int64_t ow, int64_t r, int64_t s) {
    const ir_conv *g = &G->g;
    int64_t ih = oh * g->stride[0] - g->pad[0] + r * g->dilation[0];
    int64_t iw = ow * g->stride[1] - g->pad[1] + s * g->dilation[1];
    return ih < 0 || ih >= G->H || iw < 0 || iw >= G->W ? NULL : G->x + ((b * G->H + ih) * G->W + iw) * G->CX;
}

/* y at (b, oh, ow), every channel, a tap at a time (the padding skipped) */
static void pixel_any(const cgeom *G, int64_t b, int64_t oh, int64_t ow, float *y) {
    const int64_t C = G->C, per = C / G->g.groups;
    for (int64_t c = 0; c < C; c++) {
        float acc = 0.0f;
        for (int64_t r = 0; r < G->KH; r++)
            for (int64_t s = 0; s < G->KW; s++) {
                const float *xp = tap_x(G, b, oh, ow, r, s), *wp = G->w + (r * G->KW + s) * G->CG * C + c;
                if (!xp) continue;
                xp += c / per * G->CG;
                for (int64_t ci = 0; ci < G->CG; ci++) acc += xp[ci] * wp[ci * C];
            }
        y[c] = mg_relu(acc + G->bias[c]);
    }
}

/* window (ph, pw) of image b: its four pixels of y into y [4, C], row-major */
static void window_any(const cgeom *G, int64_t b, int64_t ph, int64_t pw, float *y) {
    for (int k = 0; k < 4; k++) pixel_any(G, b, 2 * ph + k / 2, 2 * pw + k % 2, y + k * G->C);
}

/* the window's maximum, the pool's: the first of the four in row-major order
 * (strict > from -inf, as pool.c) */
static int first_max(const float *y, int64_t C, int64_t c) {
    int arg = 0;
    for (int k = 1; k < 4; k++) arg = y[k * C + c] > y[arg * C + c] ? k : arg;
    return arg;
}

/* the filter gradient of window (ph, pw) of image b into acc [KH, KW, CG, C]:
 * each channel's dy times x under the taps of its pixel (px: 0..3, or -1
 * for none) */
static void window_any_grad(const cgeom *G, int64_t b, int64_t ph, int64_t pw, const float *dy, const float *px,
                            float *acc, float *bacc) {
    const int64_t C = G->C, per = C / G->g.groups, CG = G->CG;
    for (int64_t c = 0; c < C; c++) {
        if (!(px[c] >= 0.0f)) continue;
        if (bacc) bacc[c] += dy[c];
        int k = (int)px[c] & 3;
        for (int64_t r = 0; r < G->KH; r++)
            for (int64_t s = 0; s < G->KW; s++) {
                const float *xp = tap_x(G, b, 2 * ph + k / 2, 2 * pw + k % 2, r, s);
                if (!xp) continue;
                xp += c / per * CG;
                float *a = acc + (r * G->KW + s) * CG * C + c;
                for (int64_t ci = 0; ci < CG; ci++) a[ci * C] += xp[ci] * dy[c];
            }
    }
}

/* ---- the windows inside x: a vector of 8 channels in registers ---- */

/* x under the first tap of window (ph, pw)'s first pixel, image b */
static inline const float *window_x(const cgeom *G, int64_t b, int64_t ph, int64_t pw) {
    const ir_conv *g = &G->g;
    return G->x + (b * G->H + 2 * ph * g->stride[0] - g->pad[0]) * G->W + 2 * pw * g->stride[1] - g->pad[1];
}

/* the window's four pixels of y, channels c0 .. c0 + 7 (w: their 9 taps
 * [9, 8] from cgeom.wv, bias at c0), p from window_x: each a sum from 0 over
 * the 3x3 taps (r, s ascending), + bias, relu; sh .. dw constants where the
 * caller knows them (1 for the seed CNN) */
static inline __attribute__((always_inline)) void window_y(const float *p, const float *w, const float *bias,
                                                           int64_t W, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                                                           v8 *y0, v8 *y1, v8 *y2, v8 *y3) {
    const float *q1 = p + sw, *q2 = p + sh * W, *q3 = q2 + sw;
    v8 a = {0}, b = {0}, c = {0}, d = {0};
    for (int r = 0; r < 3; r++)
        for (int s = 0; s < 3; s++) {
            int64_t o = r * dh * W + s * dw;
            v8 wv = LD8(w + (r * 3 + s) * 8);
            a += p[o] * wv, b += q1[o] * wv, c += q2[o] * wv, d += q3[o] * wv;
        }
    v8 bv = LD8(bias);
    *y0 = relu8(a + bv), *y1 = relu8(b + bv), *y2 = relu8(c + bv), *y3 = relu8(d + bv);
}

/* window_y for two vectors of channels, c0 .. c0 + 15 (w: [2, 9, 8]), into
 * y (the first) and u (the second): the same sums, each x loaded once for both */
static inline __attribute__((always_inline)) void window_y2(const float *p, const float *w, const float *bias,
                                                            int64_t W, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                                                            v8 *y, v8 *u) {
    const float *q1 = p + sw, *q2 = p + sh * W, *q3 = q2 + sw;
    v8 a = {0}, b = {0}, c = {0}, d = {0}, e = {0}, f = {0}, g = {0}, h = {0};
    for (int r = 0; r < 3; r++)
        for (int s = 0; s < 3; s++) {
            int64_t o = r * dh * W + s * dw;
            v8 wv = LD8(w + (r * 3 + s) * 8), wu = LD8(w + 72 + (r * 3 + s) * 8);
            float x0 = p[o], x1 = q1[o], x2 = q2[o], x3 = q3[o];
            a += x0 * wv, e += x0 * wu, b += x1 * wv, f += x1 * wu;
            c += x2 * wv, g += x2 * wu, d += x3 * wv, h += x3 * wu;
        }
    v8 bv = LD8(bias), bu = LD8(bias + 8);
    y[0] = relu8(a + bv), y[1] = relu8(b + bv), y[2] = relu8(c + bv), y[3] = relu8(d + bv);
    u[0] = relu8(e + bu), u[1] = relu8(f + bu), u[2] = relu8(g + bu), u[3] = relu8(h + bu);
}

/* the window's maximum (of y0 .. y3, 8 channels) into o and its pixel (the
 * first maximum, first_max's, where it is > 0, else -1) into px: the count
 * of leading pixels below the maximum, from masks (-1 where true) */
#define POOL8(y0, y1, y2, y3, o, px)                                                                                   \
    {                                                                                                                  \
        v8 m_ = max8(max8(y0, y1), max8(y2, y3)), z_ = {0};                                                            \
        v8i b0_ = y0 != m_, b01_ = b0_ & (y1 != m_), b012_ = b01_ & (y2 != m_);                                        \
        v8i k_ = ((v8i){0} - (b0_ + b01_ + b012_)) | (m_ <= z_);                                                       \
        ST8(o, m_), ST8(px, __builtin_convertvector(k_, v8));                                                          \
    }

/* windows [pw0, pw1) of row ph of image b pooled, every channel, into o (at
 * window pw0) and their pixels into px (likewise) */
static inline __attribute__((always_inline)) void pool_row(const cgeom *G, int64_t b, int64_t ph, int64_t pw0,
                                                           int64_t pw1, float *o, float *px, int64_t sh, int64_t sw,
                                                           int64_t dh, int64_t dw) {
    const float *p = window_x(G, b, ph, pw0), *w = G->wv, *bias = G->bias;
    const int64_t C = G->C, W = G->W;
    for (int64_t pw = pw0; pw < pw1; pw++, p += 2 * sw, o += C, px += C) {
        int64_t c0 = 0;
        for (; c0 + 16 <= C; c0 += 16) { /* two vectors: eight independent sums */
            v8 y[4], u[4];
            window_y2(p, w + 9 * c0, bias + c0, W, sh, sw, dh, dw, y, u);
            POOL8(y[0], y[1], y[2], y[3], o + c0, px + c0)
            POOL8(u[0], u[1], u[2], u[3], o + c0 + 8, px + c0 + 8)
        }
        if (c0 < C) {
            v8 y0, y1, y2, y3;
            window_y(p, w + 9 * c0, bias + c0, W, sh, sw, dh, dw, &y0, &y1, &y2, &y3);
            POOL8(y0, y1, y2, y3, o + c0, px + c0)
        }
    }
}

/* x under tap (r, s) of the window's four pixels (p from window_x), for
 * PERM8 to pick from by pixel lane: with stride and dilation 1 (k33) rows r
 * and r + 1 of the 4x4 x under the window side by side, the same vector for
 * s = 0, 1, 2, pixel k's tap s at lane (k / 2) * 4 + k % 2 + s; else tap
 * (r, s)'s four pixels' x, pixel k at lane k (macros: see relu8) */
typedef float v4 __attribute__((vector_size(16)));
#define TAPS_X(p, W, r, s, sh, sw, dh, dw, k33)                                                                        \
    ({                                                                                                                 \
        v8 v_;                                                                                                         \
        if (k33) {                                                                                                     \
            v4 lo_, hi_;                                                                                               \
            memcpy(&lo_, (p) + (r) * (W), sizeof lo_), memcpy(&hi_, (p) + ((r) + 1) * (W), sizeof hi_);                \
            v_ = __builtin_shufflevector(lo_, hi_, 0, 1, 2, 3, 4, 5, 6, 7);                                            \
        } else {                                                                                                       \
            const float *q_ = (p) + (r) * (dh) * (W) + (s) * (dw);                                                     \
            v_ = (v8){q_[0], q_[sw], q_[(sh) * (W)], q_[(sh) * (W) + (sw)]};                                           \
        }                                                                                                              \
        v_;                                                                                                            \
    })
/* filter row r's three taps: g times x under the window's pixel of lane k,
 * added to t0, t1, t2 (p, W, g, k, the geometry and k33: the caller's) */
#define ROW_TAPS(r, t0, t1, t2)                                                                                        \
    {                                                                                                                  \
        v8 x0_ = TAPS_X(p, W, r, 0, sh, sw, dh, dw, k33);                                                              \
        v8 x1_ = k33 ? x0_ : TAPS_X(p, W, r, 1, sh, sw, dh, dw, k33);                                                  \
        v8 x2_ = k33 ? x0_ : TAPS_X(p, W, r, 2, sh, sw, dh, dw, k33);                                                  \
        t0 += g * PERM8(x0_, k), t1 += g * PERM8(x1_, k33 ? k + 1 : k), t2 += g * PERM8(x2_, k33 ? k + 2 : k);         \
    }

/* the filter gradient of image b's windows inside x, channels c0 .. c0 + 7,
 * added to acc [3, 3, 1, C] (at c0), from dy and the windows' pixels px (the
 * image's, [OH / 2, OW / 2, C]): g = dy where the pixel is >= 0, else 0, its
 * lane k in TAPS_X's vectors; the nine taps' float sums in registers over
 * the windows in order (ph, pw); with bacc [C] also g's sum (the bias gradient) */
static inline __attribute__((always_inline)) void grad_windows(const cgeom *G, int64_t b, const float *dy,
                                                               const float *px, int64_t c0, float *acc, float *bacc,
                                                               int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                                                               cpu_prefetch *pf) {
    const int64_t C = G->C, W = G->W, PW = G->OW / 2;
    const int k33 = sh == 1 && sw == 1 && dh == 1 && dw == 1;
    v8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0}, a8 = {0}; /* taps (r, s) */
    v8 gs = {0};                                                                                 /* g's sum */
    for (int64_t ph = G->ph0; ph < G->ph1; ph++) {
        cpu_prefetch_some(pf);
        const float *p = window_x(G, b, ph, G->pw0);
        const int64_t at = (ph * PW + G->pw0) * C + c0;
        const float *d = dy + at, *q = px + at;
        for (int64_t pw = G->pw0; pw < G->pw1; pw++, p += 2 * sw, d += C, q += C) {
            v8 pix = LD8(q), z = {0};
            v8i k = __builtin_convertvector(pix, v8i) & 3; /* pixel 0..3 (-1: no gradient) */
            v8 g = (v8)((v8i)LD8(d) & (pix >= z));
            if (k33) k += k & 2; /* pixel 2, 3: lanes 4, 5 */
            gs += g;
            ROW_TAPS(0, a0, a1, a2)
            ROW_TAPS(1, a3, a4, a5)
            ROW_TAPS(2, a6, a7, a8)
        }
    }
    v8 a[9] = {a0, a1, a2, a3, a4, a5, a6, a7, a8};
    for (int t = 0; t < 9; t++) ST8(acc + t * C + c0, LD8(acc + t * C + c0) + a[t]);
    if (bacc) ST8(bacc + c0, LD8(bacc + c0) + gs);
}

/* ---- the kernels ---- */

/* every pooled window of the batch into out [N, OH / 2, OW / 2, C] and its
 * pixel into px (the same shape); y: room for [4, C] */
POOL_CLONES static void pool_all(const cgeom *G, float *out, float *px, float *y) {
    const ir_conv *g = &G->g;
    const int64_t C = G->C, PH = G->OH / 2, PW = G->OW / 2;
    for (int64_t b = 0; b < G->N; b++)
        for (int64_t ph = 0; ph < PH; ph++) {
            float *o = out + (b * PH + ph) * PW * C, *q = px + (b * PH + ph) * PW * C;
            int in = G->reg && ph >= G->ph0 && ph < G->ph1 && G->pw0 < G->pw1; /* windows [pw0, pw1) in registers */
            for (int64_t pw = 0; pw < PW; pw++)
                if (!in || pw < G->pw0 || pw >= G->pw1) {
                    window_any(G, b, ph, pw, y);
                    for (int64_t c = 0; c < C; c++) { /* the maximum, and its pixel where it is > 0 */
                        int arg = first_max(y, C, c);
                        o[pw * C + c] = y[arg * C + c], q[pw * C + c] = y[arg * C + c] > 0.0f ? (float)arg : -1.0f;
                    }
                }
            if (in && G->k33) pool_row(G, b, ph, G->pw0, G->pw1, o + G->pw0 * C, q + G->pw0 * C, 1, 1, 1, 1);
            else if (in)
                pool_row(G, b, ph, G->pw0, G->pw1, o + G->pw0 * C, q + G->pw0 * C, g->stride[0], g->stride[1],
                         g->dilation[0], g->dilation[1]);
        }
}

/* conv2d_relu_pool2: (x, w, bias) -> [2, N, OH/2, OW/2, C]: the maximum of
 * each window of y = relu(conv2d(x, w) + bias), then each window's pixel */
int cpu_k_conv2d_relu_pool2(const rt_kernel_args *k, char *err, size_t cap) {
    cgeom G = cgeom_of(k);
    float *y = malloc((size_t)(4 * G.C) * sizeof *y);
    if (!y || pack_w(&G)) {
        free(y);
        return cpu_kerr(k, err, cap, "out of memory");
    }
    float *out = k->out;
    pool_all(&G, out, out + OUT_NUMEL(k) / 2, y);
    free(y), free(G.wv);
    return 0;
}

/* the filter gradient of image b into acc [KH, KW, CG, C] and, with bacc
 * [C], the bias gradient (float sums, zeroed here) from its dy and pixels px:
 * the windows outside x's interior a channel at a time, then those inside a
 * vector at a time */
POOL_CLONES static void grad_image(const cgeom *G, int64_t b, const float *dy, const float *px, float *acc,
                                   float *bacc, cpu_prefetch *pf) {
    const ir_conv *g = &G->g;
    const int64_t C = G->C, PH = G->OH / 2, PW = G->OW / 2;
    memset(acc, 0, (size_t)(G->KH * G->KW * G->CG * C) * sizeof *acc);
    if (bacc) memset(bacc, 0, (size_t)C * sizeof *bacc);
    for (int64_t ph = 0; ph < PH; ph++)
        for (int64_t pw = 0; pw < PW; pw++)
            if (!in_regs(G, ph, pw))
                window_any_grad(G, b, ph, pw, dy + (ph * PW + pw) * C, px + (ph * PW + pw) * C, acc, bacc);
    if (!G->reg || G->ph0 == G->ph1 || G->pw0 == G->pw1) return;
    for (int64_t c0 = 0; c0 < C; c0 += 8)
        if (G->k33) grad_windows(G, b, dy, px, c0, acc, bacc, 1, 1, 1, 1, pf); /* the seed CNN's */
        else
            grad_windows(G, b, dy, px, c0, acc, bacc, g->stride[0], g->stride[1], g->dilation[0], g->dilation[1], pf);
}

/* conv2d_relu_pool2_grad_filter: (x, w, f, dy) -> dw, dy times x under each
 * window's pixel (f's second half, conv2d_relu_pool2's); with bias=1 [db, dw],
 * db the sum of dy where the pixel is >= 0. Float sums within an image,
 * double across images */
int cpu_k_conv2d_relu_pool2_grad_filter(const rt_kernel_args *k, char *err, size_t cap) {
    cgeom G = cgeom_of(k);
    const int64_t nb = k->node->iattr[9] ? G.C : 0, outs = nb + G.KH * G.KW * G.CG * G.C; /* [db,] dw */
    const int64_t img = (G.OH / 2) * (G.OW / 2) * G.C;
    float *acc = malloc((size_t)outs * sizeof *acc);
    double *sum = calloc((size_t)outs, sizeof *sum);
    if (!acc || !sum) {
        free(acc), free(sum);
        return cpu_kerr(k, err, cap, "out of memory");
    }
    const float *dy = IN_F32(k, 3), *px = IN_F32(k, 2) + G.N * img;
    /* the next image's dy, pixels and x prefetched over this one's rows of
     * windows (in a step the pixels, saved by the forward pass, come from memory) */
    int64_t x_img = G.H * G.W * G.CX, bytes[3] = {img * 4, img * 4, x_img * 4};
    for (int64_t b = 0; b < G.N; b++) {
        const void *next[3] = {NULL, NULL, NULL};
        if (b + 1 < G.N) next[0] = dy + (b + 1) * img, next[1] = px + (b + 1) * img, next[2] = G.x + (b + 1) * x_img;
        cpu_prefetch pf = cpu_prefetch_plan(3, next, bytes, 0, (G.ph1 - G.ph0) * ((G.C + 7) / 8));
        grad_image(&G, b, dy + b * img, px + b * img, acc + nb, nb ? acc : NULL, &pf);
        for (int64_t i = 0; i < outs; i++) sum[i] += (double)acc[i];
    }
    float *out = k->out;
    for (int64_t i = 0; i < outs; i++) out[i] = (float)sum[i];
    free(acc), free(sum);
    return 0;
}
