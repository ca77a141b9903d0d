/* epilogue.c - the fused kernels of issue 14 that are not oneDNN's (the conv2d
 * epilogue is, in dnnl.c): the epilogue of matmul + bias [+ residual] +
 * activation (the kernel is matmul.c's, whose candidates apply it to C, a tile
 * at a time or in one pass), and the max-pool gradient written window by
 * window, optionally masked by the ReLU that fed the pool. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <math.h>
#include <string.h>

#include "../ops_math.h"
#include "kernels_impl.h"

/* v = act(v), the per-element math the unfused ops run */
static inline float apply_act(int64_t act, float v) {
    return act == EPI_RELU ? mg_relu(v) : act == EPI_TANH ? mg_tanh(v) : act == EPI_SIGMOID ? mg_sigmoid(v) : v;
}

/* out[r, j] = act(out[r, j] + bias[j] [+ res[r, j]]) over rows of n, out's
 * and res's rows ld apart, in the order the unfused add, add, activation run,
 * so the results are the same bits; AVX2 and AVX-512 clones (char_gpt's
 * bias-only epilogues took 2.8% of its step in 4-float SSE) */
CPU_CLONES static void rows_strided(float *out, int64_t ld, const float *bias, const float *res, int64_t rows, int64_t n,
                                    int64_t act) {
    for (int64_t r = 0; r < rows; r++) {
        float *o = out + r * ld;
        const float *q = res ? res + r * ld : NULL;
        if (q)
            for (int64_t j = 0; j < n; j++) o[j] = apply_act(act, (o[j] + bias[j]) + q[j]);
        else if (act == EPI_RELU)
            for (int64_t j = 0; j < n; j++) o[j] = mg_relu(o[j] + bias[j]);
        else
            for (int64_t j = 0; j < n; j++) o[j] = apply_act(act, o[j] + bias[j]);
    }
}

void cpu_epilogue_rows(float *out, const float *bias, const float *res, int64_t rows, int64_t n, int64_t act) {
    rows_strided(out, n, bias, res, rows, n, act);
}

cpu_epilogue cpu_epilogue_of(const rt_kernel_args *k) {
    if (k->node->op != OP_MATMUL_EPILOGUE) return (cpu_epilogue){0};
    return (cpu_epilogue){k->out, IN_F32(k, 2), k->node->n_in == 4 ? IN_F32(k, 3) : NULL, k->node->iattr[2]};
}

void cpu_epilogue_tile(const cpu_epilogue *e, float *c, int64_t ldc, int64_t rows, int64_t col0, int64_t cols) {
    rows_strided(c, ldc, e->bias + col0, e->res ? e->res + (c - e->out) : NULL, rows, cols, e->act);
}

/* ---- max-pool gradient ---- */

enum { CHUNK = 64 }; /* channels handled together: the window's argmax per channel stays in registers/L1 */

typedef struct {
    const float *x, *dy;      /* x [N, H, W, C] (the pool's input), dy [N, OH, OW, C] */
    float *dx;                /* [N, H, W, C] */
    int64_t H, W, C, OH, OW;
    const int64_t *a;         /* k_h, k_w, stride_h, stride_w, pad_t, pad_l, pad_b, pad_r */
    int relu;                 /* mask by x > 0 (x a ReLU output) */
    int tiles;                /* the windows tile x exactly: each element in one window */
} pool_grad;

/* One output position (b, oh, ow), channels [c0, c0 + nc): the first maximum of
 * each channel's window (strict >, row-major window order, as max_pool2d's
 * reference) receives dy, the window's other elements 0; with tiles that is
 * written, else dx was zeroed and it is added (windows overlap). Branch-free
 * over the channels, so both loops vectorize. */
static inline __attribute__((always_inline)) void window_grad(const pool_grad *p, int64_t b, int64_t oh, int64_t ow, int64_t c0, int64_t nc) {
    float best[CHUNK], g[CHUNK];
    int32_t arg[CHUNK]; /* the window position r * k_w + s of the maximum, -1 for none */
    const int64_t *a = p->a, C = p->C;
    for (int64_t c = 0; c < nc; c++) best[c] = -INFINITY, arg[c] = -1;
    for (int64_t r = 0; r < a[0]; r++)
        for (int64_t s = 0; s < a[1]; s++) {
            int64_t ih = oh * a[2] - a[4] + r, iw = ow * a[3] - a[5] + s;
            if (ih < 0 || iw < 0 || ih >= p->H || iw >= p->W) continue;
            const float *x = p->x + ((b * p->H + ih) * p->W + iw) * C + c0;
            int32_t at = (int32_t)(r * a[1] + s);
            for (int64_t c = 0; c < nc; c++) {
                int more = x[c] > best[c];
                best[c] = more ? x[c] : best[c], arg[c] = more ? at : arg[c];
            }
        }
    const float *dy = p->dy + ((b * p->OH + oh) * p->OW + ow) * C + c0;
    for (int64_t c = 0; c < nc; c++) g[c] = p->relu ? mg_relu_grad(best[c], dy[c]) : dy[c];
    for (int64_t r = 0; r < a[0]; r++)
        for (int64_t s = 0; s < a[1]; s++) {
            int64_t ih = oh * a[2] - a[4] + r, iw = ow * a[3] - a[5] + s;
            if (ih < 0 || iw < 0 || ih >= p->H || iw >= p->W) continue;
            float *dx = p->dx + ((b * p->H + ih) * p->W + iw) * C + c0;
            int32_t at = (int32_t)(r * a[1] + s);
            if (p->tiles)
                for (int64_t c = 0; c < nc; c++) dx[c] = arg[c] == at ? g[c] : 0.0f;
            else
                for (int64_t c = 0; c < nc; c++) dx[c] += arg[c] == at ? g[c] : 0.0f;
        }
}

/* every window of n images, compiled for AVX-512 / AVX2 / baseline */
CPU_CLONES static void pool_grad_all(const pool_grad *p, int64_t n) {
    for (int64_t b = 0; b < n; b++)
        for (int64_t oh = 0; oh < p->OH; oh++)
            for (int64_t ow = 0; ow < p->OW; ow++)
                for (int64_t c0 = 0; c0 < p->C; c0 += CHUNK)
                    window_grad(p, b, oh, ow, c0, p->C - c0 < CHUNK ? p->C - c0 : CHUNK);
}

/* max_pool2d_grad (x, dy) and max_pool2d_relu_grad (y, dy) -> dx: one pass
 * over x and dy writing dx once when the windows tile x (stride = window, no
 * padding, sizes divisible: the seed CNN's pool), else zero + scatter */
int cpu_k_max_pool_grad(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    const ir_shape *x = IN_SHAPE(k, 0), *y = IN_SHAPE(k, 1);
    const int64_t *a = k->node->iattr;
    pool_grad p = {IN_F32(k, 0), IN_F32(k, 1), k->out, x->dim[1], x->dim[2], x->dim[3], y->dim[1], y->dim[2], a,
                   k->node->op == OP_MAX_POOL2D_RELU_GRAD, 0};
    p.tiles = a[2] == a[0] && a[3] == a[1] && !a[4] && !a[5] && p.OH * a[0] == p.H && p.OW * a[1] == p.W;
    if (!p.tiles) memset(p.dx, 0, (size_t)ir_node_bytes(k->node));
    pool_grad_all(&p, x->dim[0]);
    return 0;
}
