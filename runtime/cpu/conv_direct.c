/* conv_direct.c - the "direct" candidate of conv2d_grad_filter (issue 14,
 * speed; tune.c measures it beside oneDNN's two): the filter gradient of a
 * convolution of one input channel, the seed CNN's first layer (3x3x1x32 over
 * 28x28 images), whose oneDNN backward-weights pass ran at 38-41 GFLOP/s on
 * one core; here the taps of a filter row and 32 output channels are summed
 * in registers, each dy vector loaded once for three taps (49-53 GFLOP/s,
 * docs/cpu-kernels.md). A forward candidate written the same way measured
 * slower than oneDNN's (0.70-0.82 ms against 0.48-0.52) and is not kept.
 * Applies to groups 1, one input channel, output channels a multiple of 8,
 * any strides, padding and dilation. Deterministic: a fixed order of sums,
 * float within an image, double across images. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <stdlib.h>
#include <string.h>

#include "kernels_impl.h"
#include "vec8.h"

/* compiled for x86-64-v3 (AVX2 with FMA: CPU_CLONES' "avx2" has no FMA) and
 * plain x86-64, chosen at load time */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DIRECT_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define DIRECT_CLONES
#endif

enum { VB = 4 }; /* vectors of output channels per register block: 32 channels */

/* the geometry of one convolution: x [N, H, W, 1], filter [KH, KW, 1, C], dy [N, OH, OW, C] */
typedef struct {
    int64_t N, H, W, OH, OW, KH, KW, C;
    ir_conv g;
} geom;

static geom geom_of(const rt_kernel_args *k) {
    const ir_node *n = k->node;
    const ir_shape *x = IN_SHAPE(k, 0), *w = &n->shape, *y = IN_SHAPE(k, 1);
    return (geom){x->dim[0], x->dim[1], x->dim[2], y->dim[1], y->dim[2], w->dim[0], w->dim[1], w->dim[3],
                  ir_conv_of(n, w)};
}

int cpu_conv_direct_applies(const rt_kernel_args *k) {
    if (k->node->op != OP_CONV2D_GRAD_FILTER) return 0;
    const ir_shape *w = &k->node->shape;
    return ir_conv_of(k->node, w).groups == 1 && w->dim[2] == 1 && w->dim[3] % 8 == 0 && w->dim[3] > 0;
}

/* 8 floats at p (any alignment) as a vector: a macro, not a function, since
 * a vector result changes the ABI between the clones */

/* the output positions o in [0, O) whose taps t * dil - pad + o * stride,
 * t in [0, K), all fall inside [0, X): [*lo, *hi) */
static void interior(int64_t O, int64_t X, int64_t K, int64_t stride, int64_t pad, int64_t dil, int64_t *lo,
                     int64_t *hi) {
    int64_t a = pad <= 0 ? 0 : (pad + stride - 1) / stride, z = X - 1 + pad - (K - 1) * dil;
    int64_t b = z < 0 ? 0 : z / stride + 1;
    *lo = a < O ? a : O, *hi = b < O ? b : O;
    if (*hi < *lo) *hi = *lo;
}

/* the filter gradient: for one image b, filter row r, taps s0 .. s0 + ns - 1
 * (ns <= SB) and channels c0 .. c0 + nb * 8 (nb <= VB), a float sum per tap
 * and channel over the image's pixels (row by row, ow ascending; taps in
 * the padding skipped) in ns * nb registers, each dy vector loaded once for
 * the ns taps; then added to the double sums. Deterministic: a fixed order. */
enum { SB = 3 };

static inline __attribute__((always_inline)) void grad_block(const geom *G, const float *x, const float *dy,
                                                             double *sum, int64_t b, int64_t r, int64_t s0, int ns,
                                                             int64_t c0, int nb, int64_t lo, int64_t hi) {
    const ir_conv *g = &G->g;
    const int64_t sw = g->stride[1], dw = g->dilation[1], C = G->C;
    v8 acc[SB][VB] = {{{0}}};
    for (int64_t oh = 0; oh < G->OH; oh++) {
        int64_t ih = oh * g->stride[0] - g->pad[0] + r * g->dilation[0];
        if (ih < 0 || ih >= G->H) continue;
        const float *xr = x + (b * G->H + ih) * G->W - g->pad[1] + s0 * dw;
        const float *d = dy + ((b * G->OH + oh) * G->OW) * C + c0;
        for (int64_t ow = 0; ow < G->OW; ow++) {
            const float *xp = xr + ow * sw;
            if (ow >= lo && ow < hi) { /* every tap of the block inside x: ns broadcasts, one dy vector at a time */
                float xv[SB];
                for (int t = 0; t < ns; t++) xv[t] = xp[t * dw];
                for (int j = 0; j < nb; j++) {
                    v8 dv = LD8(d + ow * C + 8 * j);
                    for (int t = 0; t < ns; t++) acc[t][j] += xv[t] * dv;
                }
            } else {
                for (int t = 0; t < ns; t++) {
                    int64_t iw = ow * sw - g->pad[1] + (s0 + t) * dw;
                    if (iw < 0 || iw >= G->W) continue;
                    for (int j = 0; j < nb; j++) acc[t][j] += xp[t * dw] * LD8(d + ow * C + 8 * j);
                }
            }
        }
    }
    for (int t = 0; t < ns; t++)
        for (int j = 0; j < nb; j++) {
            double *o = sum + (r * G->KW + s0 + t) * C + c0 + 8 * j;
            for (int e = 0; e < 8; e++) o[e] += (double)acc[t][j][e];
        }
}

DIRECT_CLONES static void grad_all(const geom *G, const float *x, const float *dy, double *sum) {
    const ir_conv *g = &G->g;
    for (int64_t b = 0; b < G->N; b++)
        for (int64_t r = 0; r < G->KH; r++)
            for (int64_t s0 = 0; s0 < G->KW; s0 += SB) {
                int ns = (int)(G->KW - s0 < SB ? G->KW - s0 : SB);
                int64_t lo, hi; /* the ow whose taps s0 .. s0 + ns - 1 are all inside x */
                interior(G->OW, G->W, ns, g->stride[1], g->pad[1] - s0 * g->dilation[1], g->dilation[1], &lo, &hi);
                for (int64_t c0 = 0; c0 < G->C; c0 += 8 * VB) {
                    int nb = (int)((G->C - c0) / 8 < VB ? (G->C - c0) / 8 : VB);
                    if (ns == SB && nb == VB) grad_block(G, x, dy, sum, b, r, s0, SB, c0, VB, lo, hi); /* registers */
                    else grad_block(G, x, dy, sum, b, r, s0, ns, c0, nb, lo, hi);
                }
            }
}

int cpu_conv_direct(const rt_kernel_args *k, char *err, size_t cap) {
    if (!cpu_conv_direct_applies(k)) return cpu_kerr(k, err, cap, "the direct convolution does not apply to it");
    geom G = geom_of(k);
    size_t taps = (size_t)(G.KH * G.KW * G.C);
    double *sum = calloc(taps, sizeof *sum);
    if (!sum) return cpu_kerr(k, err, cap, "out of memory");
    grad_all(&G, IN_F32(k, 0), IN_F32(k, 1), sum);
    float *dw = k->out;
    for (size_t i = 0; i < taps; i++) dw[i] = (float)sum[i];
    free(sum);
    return 0;
}

/* ---- issue 14 (seed CNN speed): conv2d_grad_filter_pool2 (x, y, dy) ----
 * conv2d_grad_filter(x, max_pool2d_relu_grad(y, dy)) with 2x2 windows of
 * stride 2 tiling y: the pool gradient of one image (86 KB on the seed CNN)
 * is made by pool.c's loop into a buffer that stays in cache and the filter
 * gradient of that image summed from it at once, so the [N, OH, OW, C]
 * gradient is never written to memory and read back. The filter gradient of
 * an image: grad_all above when `direct` applies (one input channel, groups
 * 1, channels a multiple of 8), else the loop below; float sums within an
 * image, double across images, the same order whatever the thread count. */

/* the filter gradient of one image, any channels and groups: x [H, W, CX],
 * dy [OH, OW, C], w [KH, KW, CG, C], float sums into acc (zeroed here) */
static void grad_image_any(const geom *G, int64_t CX, int64_t CG, const float *x, const float *dy, float *acc) {
    const ir_conv *g = &G->g;
    const int64_t C = G->C, per = C / g->groups;
    memset(acc, 0, (size_t)(G->KH * G->KW * CG * C) * sizeof *acc);
    for (int64_t oh = 0; oh < G->OH; oh++)
        for (int64_t ow = 0; ow < G->OW; ow++) {
            const float *d = dy + (oh * G->OW + ow) * C;
            for (int64_t r = 0; r < G->KH; r++) {
                int64_t ih = oh * g->stride[0] - g->pad[0] + r * g->dilation[0];
                if (ih < 0 || ih >= G->H) continue;
                for (int64_t s = 0; s < G->KW; s++) {
                    int64_t iw = ow * g->stride[1] - g->pad[1] + s * g->dilation[1];
                    if (iw < 0 || iw >= G->W) continue;
                    const float *xp = x + (ih * G->W + iw) * CX;
                    float *a = acc + (r * G->KW + s) * CG * C;
                    for (int64_t c = 0; c < C; c++) {
                        const float *xg = xp + c / per * CG;
                        for (int64_t ci = 0; ci < CG; ci++) a[ci * C + c] += xg[ci] * d[c];
                    }
                }
            }
        }
}

/* conv2d_grad_filter_pool2: (x, y, dy) -> the filter gradient w [KH, KW, CG, C]
 * of x [N, H, W, CX] through the 2x2 pool of y [N, OH, OW, C], an image's pool
 * gradient at a time (conv2d_relu_pool2's filter gradient, from the
 * forward's pixels, is conv_pool.c's own, a pool window at a time) */
int cpu_k_conv2d_grad_filter_pool2(const rt_kernel_args *k, char *err, size_t cap) {
    const ir_shape *x = IN_SHAPE(k, 0), *y = IN_SHAPE(k, 1), *w = &k->node->shape;
    const float *xs = IN_F32(k, 0), *ys = IN_F32(k, 1), *dy = IN_F32(k, 2);
    geom G = {x->dim[0], x->dim[1], x->dim[2], y->dim[1], y->dim[2], w->dim[0], w->dim[1], w->dim[3],
              ir_conv_of(k->node, w)};
    const int64_t CX = x->dim[3], CG = w->dim[2], taps = G.KH * G.KW * CG * G.C, img = G.OH * G.OW * G.C;
    int direct = G.g.groups == 1 && CX == 1 && G.C % 8 == 0;
    float *dx = malloc((size_t)img * sizeof *dx), *acc = direct ? NULL : malloc((size_t)taps * sizeof *acc);
    double *sum = calloc((size_t)taps, sizeof *sum);
    if (!dx || !sum || (!direct && !acc)) {
        free(dx), free(acc), free(sum);
        return cpu_kerr(k, err, cap, "out of memory");
    }
    geom one = G;
    one.N = 1;
    for (int64_t b = 0; b < G.N; b++) {
        cpu_pool_grad_2x2(ys + b * img, dy + b * (img / 4), dx, 1, G.OH, G.OW, G.C, 1);
        const float *xb = xs + b * G.H * G.W * CX;
        if (direct) {
            grad_all(&one, xb, dx, sum);
            continue;
        }
        grad_image_any(&G, CX, CG, xb, dx, acc);
        for (int64_t i = 0; i < taps; i++) sum[i] += (double)acc[i];
    }
    float *out = k->out;
    for (int64_t i = 0; i < taps; i++) out[i] = (float)sum[i];
    free(dx), free(acc), free(sum);
    return 0;
}

