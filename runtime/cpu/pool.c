/* pool.c - max_pool2d forward written directly (issue 14, speed): oneDNN 2.6's
 * NHWC max pooling (jit:avx2) took 1.3-1.5 ms for the seed CNN's 2x2 pool of
 * [64, 26, 26, 32] on one core, several times a pass over its 5.5 MB input;
 * this loop takes a fraction of that (docs/cpu-kernels.md has the figures).
 * The gradients (max_pool2d_grad, max_pool2d_relu_grad) are epilogue.c's
 * cpu_k_max_pool_grad, but for the seed CNN's windows (2x2, stride 2, no
 * padding, tiling x), which a loop here specializes: the same function, bit
 * for bit, in 0.3-0.4 ms instead of 1.7-2.3. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <math.h>

#include "../ops_math.h"
#include "kernels_impl.h"

enum { CHUNK = 64 }; /* channels handled together: the window's running maximum stays in registers/L1 */

typedef struct {
    const float *x;   /* [N, H, W, C] */
    float *y;         /* [N, OH, OW, C] */
    int64_t H, W, C, OH, OW;
    const int64_t *a; /* k_h, k_w, stride_h, stride_w, pad_t, pad_l, pad_b, pad_r */
} pool_fwd;

/* One output position (b, oh, ow), channels [c0, c0 + nc): the maximum over
 * the window's positions inside x (padding takes no part; a window wholly in
 * the padding gives -inf). Branch-free over the channels, so it vectorizes. */
static inline __attribute__((always_inline)) void window_max(const pool_fwd *p, int64_t b, int64_t oh, int64_t ow,
                                                             int64_t c0, int64_t nc) {
    float best[CHUNK];
    const int64_t *a = p->a, C = p->C;
    for (int64_t c = 0; c < nc; c++) best[c] = -INFINITY;
    for (int64_t r = 0; r < a[0]; r++) {
        int64_t ih = oh * a[2] - a[4] + r;
        if (ih < 0 || ih >= p->H) continue;
        for (int64_t s = 0; s < a[1]; s++) {
            int64_t iw = ow * a[3] - a[5] + s;
            if (iw < 0 || iw >= p->W) continue;
            const float *x = p->x + ((b * p->H + ih) * p->W + iw) * C + c0;
            for (int64_t c = 0; c < nc; c++) best[c] = x[c] > best[c] ? x[c] : best[c];
        }
    }
    float *y = p->y + ((b * p->OH + oh) * p->OW + ow) * C + c0;
    for (int64_t c = 0; c < nc; c++) y[c] = best[c];
}

/* the seed CNN's case, 2x2 windows of stride 2 without padding that tile x:
 * each output row reads two input rows once, straight through */
static inline __attribute__((always_inline)) void rows_2x2(const pool_fwd *p, int64_t b, int64_t oh) {
    const int64_t C = p->C, W = p->W;
    const float *r0 = p->x + ((b * p->H + 2 * oh) * W) * C, *r1 = r0 + W * C;
    float *y = p->y + ((b * p->OH + oh) * p->OW) * C;
    for (int64_t ow = 0; ow < p->OW; ow++, r0 += 2 * C, r1 += 2 * C, y += C)
        for (int64_t c = 0; c < C; c++) {
            float m = r0[c], v = r0[C + c];
            m = v > m ? v : m, v = r1[c];
            m = v > m ? v : m, v = r1[C + c];
            y[c] = v > m ? v : m;
        }
}

/* every window of n images, compiled for AVX-512 / AVX2 / baseline */
CPU_CLONES static void pool_fwd_all(const pool_fwd *p, int64_t n) {
    const int64_t *a = p->a;
    int tiles2 = a[0] == 2 && a[1] == 2 && a[2] == 2 && a[3] == 2 && !a[4] && !a[5] && 2 * p->OH <= p->H &&
                 2 * p->OW <= p->W;
    for (int64_t b = 0; b < n; b++)
        for (int64_t oh = 0; oh < p->OH; oh++) {
            if (tiles2) {
                rows_2x2(p, b, oh);
                continue;
            }
            for (int64_t ow = 0; ow < p->OW; ow++)
                for (int64_t c0 = 0; c0 < p->C; c0 += CHUNK)
                    window_max(p, b, oh, ow, c0, p->C - c0 < CHUNK ? p->C - c0 : CHUNK);
        }
}

/* max_pool2d: x [N, H, W, C] -> y [N, OH, OW, C] */
int cpu_k_max_pool2d(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    const ir_shape *x = IN_SHAPE(k, 0), *y = &k->node->shape;
    pool_fwd p = {IN_F32(k, 0), k->out, x->dim[1], x->dim[2], x->dim[3], y->dim[1], y->dim[2], k->node->iattr};
    pool_fwd_all(&p, x->dim[0]);
    return 0;
}

/* ---- the max-pool gradient of 2x2 windows of stride 2 that tile x ---- */

/* One output row oh: each window's first maximum in row-major order (strict >
 * from -inf, as epilogue.c's window_grad) receives dy (with relu, dy where
 * that maximum is > 0, else 0), the window's other three elements 0. Written
 * without a ?: on floats (mg_select), so it vectorizes: with m the maximum,
 * the first maximum is the first element equal to m, when m > -inf (NaN never
 * wins a strict >; -0 and +0 compare equal, and the first is kept). */
static inline __attribute__((always_inline)) void grad_window_2x2(const float *restrict x0, const float *restrict x1,
                                                                  const float *restrict dy, float *restrict d0,
                                                                  float *restrict d1, int64_t C, int relu) {
    for (int64_t c = 0; c < C; c++) {
        float v0 = x0[c], v1 = x0[C + c], v2 = x1[c], v3 = x1[C + c], m = -INFINITY;
        m = v0 > m ? v0 : m, m = v1 > m ? v1 : m, m = v2 > m ? v2 : m, m = v3 > m ? v3 : m;
        int any = m > -INFINITY, e0 = any & (v0 == m), e1 = any & !e0 & (v1 == m), e2 = any & !e0 & !e1 & (v2 == m),
            e3 = any & !e0 & !e1 & !e2 & (v3 == m);
        float g = relu ? mg_select(m > 0.0f, dy[c], 0.0f) : dy[c]; /* mg_relu_grad(m, dy) */
        d0[c] = mg_select(e0, g, 0.0f), d0[C + c] = mg_select(e1, g, 0.0f);
        d1[c] = mg_select(e2, g, 0.0f), d1[C + c] = mg_select(e3, g, 0.0f);
    }
}

static inline __attribute__((always_inline)) void grad_rows_2x2(const float *x, const float *dy, float *dx, int64_t W,
                                                                int64_t C, int64_t OW, int relu) {
    for (int64_t ow = 0; ow < OW; ow++)
        grad_window_2x2(x + 2 * ow * C, x + (W + 2 * ow) * C, dy + ow * C, dx + 2 * ow * C, dx + (W + 2 * ow) * C, C,
                        relu);
}

CPU_CLONES static void grad_2x2_all(const float *x, const float *dy, float *dx, int64_t n, int64_t H, int64_t W,
                                    int64_t C, int relu) {
    const int64_t OH = H / 2, OW = W / 2;
    for (int64_t r = 0; r < n * OH; r++) /* image b = r / OH, output row r % OH: input rows 2r, 2r + 1 */
        if (relu) grad_rows_2x2(x + 2 * r * W * C, dy + r * OW * C, dx + 2 * r * W * C, W, C, OW, 1);
        else grad_rows_2x2(x + 2 * r * W * C, dy + r * OW * C, dx + 2 * r * W * C, W, C, OW, 0);
}

/* issue 14: the gradient of n images of 2x2 stride-2 windows tiling x [n, H, W, C]
 * (H, W even), for conv2d_grad_filter_pool2 (conv_direct.c), an image at a time */
void cpu_pool_grad_2x2(const float *x, const float *dy, float *dx, int64_t n, int64_t H, int64_t W, int64_t C, int relu) {
    grad_2x2_all(x, dy, dx, n, H, W, C, relu);
}

/* max_pool2d_grad (x, dy), max_pool2d_relu_grad (y, dy) -> dx */
int cpu_k_max_pool_grad_2x2(const rt_kernel_args *k, char *err, size_t cap) {
    const ir_shape *x = IN_SHAPE(k, 0), *y = IN_SHAPE(k, 1);
    const int64_t *a = k->node->iattr;
    int fast = a[0] == 2 && a[1] == 2 && a[2] == 2 && a[3] == 2 && !a[4] && !a[5] && !a[6] && !a[7] &&
               2 * y->dim[1] == x->dim[1] && 2 * y->dim[2] == x->dim[2];
    if (!fast) return cpu_k_max_pool_grad(k, err, cap);
    grad_2x2_all(IN_F32(k, 0), IN_F32(k, 1), k->out, x->dim[0], x->dim[1], x->dim[2], x->dim[3],
                 k->node->op == OP_MAX_POOL2D_RELU_GRAD);
    return 0;
}
