/* pool.c - max_pool2d forward written directly (issue 14, speed): oneDNN 2.6's
 * NHWC max pooling (jit:avx2) took 1.3-1.5 ms for the seed CNN's 2x2 pool of
 * [64, 26, 26, 32] on one core, several times a pass over its 5.5 MB input;
 * this loop takes a fraction of that (docs/cpu-kernels.md has the figures).
 * The gradient is epilogue.c's (max_pool2d_grad, max_pool2d_relu_grad). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <math.h>

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
