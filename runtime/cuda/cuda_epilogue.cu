/* cuda_epilogue.cu - issue 14: the epilogue after a cuDNN convolution or a
 * cuBLAS GEMM (bias, residual, activation in one pass over the output), and the
 * max-pool gradient masked by the ReLU that fed the pool, in one kernel. The
 * per-element math is runtime/ops_math.h, as on the CPU. */
#include "../ops_math.h"
#include "cuda_device.cuh"

__device__ static inline float epilogue_act(int act, float v) {
    return act == EPI_RELU ? mg_relu(v) : act == EPI_TANH ? mg_tanh(v) : act == EPI_SIGMOID ? mg_sigmoid(v) : v;
}

/* out[i] = act(out[i] + bias[i % n] [+ res[i]]), the unfused ops' order */
__global__ static void epilogue_kernel(float *out, const float *bias, const float *res, int64_t total, int64_t n,
                                       int act) {
    FOR_EACH(i, total) {
        float v = out[i] + bias[i % n];
        if (res) v = v + res[i];
        out[i] = epilogue_act(act, v);
    }
}

extern "C" cudaError_t cuda_k_epilogue(float *out, const float *bias, const float *res, int64_t total, int64_t n,
                                       int act, cudaStream_t s) {
    MGC_LAUNCH(blocks_for(total), THREADS, 0, s, epilogue_kernel)(out, bias, res, total, n, act);
    return cudaGetLastError();
}

/* issue 14, conv2d_bn_epilogue: out[i] = act((c[i] - mean[j]) * scale[j] + beta[j]
 * [+ res[i]]), j = i % n, the unfused ops' order; out may be c (in place after
 * the convolution, eval and predict) */
__global__ static void bn_epilogue_kernel(float *out, const float *c, const float *mean, const float *scale,
                                          const float *beta, const float *res, int64_t total, int64_t n, int act) {
    FOR_EACH(i, total) {
        int64_t j = i % n;
        float v = mg_add(mg_mul(mg_sub(c[i], mean[j]), scale[j]), beta[j]);
        if (res) v = mg_add(v, res[i]);
        out[i] = epilogue_act(act, v);
    }
}

extern "C" cudaError_t cuda_k_bn_epilogue(float *out, const float *c, const float *mean, const float *scale,
                                          const float *beta, const float *res, int64_t total, int64_t n, int act,
                                          cudaStream_t s) {
    MGC_LAUNCH(blocks_for(total), THREADS, 0, s, bn_epilogue_kernel)(out, c, mean, scale, beta, res, total, n, act);
    return cudaGetLastError();
}

/* One thread per element of dx [N, H, W, C]: the sum of dy over the windows
 * whose first maximum (strict >, row-major window order, as the CPU kernel) is
 * this element, times (x > 0) when relu; no atomics, so deterministic. */
__global__ static void max_pool_grad_kernel(const float *x, const float *dy, float *dx, cuda_pool_geom g, int relu) {
    FOR_EACH(i, g.n * g.h * g.w * g.c) {
        int64_t c = i % g.c, iw = i / g.c % g.w, ih = i / (g.c * g.w) % g.h, b = i / (g.c * g.w * g.h);
        float sum = 0.0f;
        for (int64_t oh = 0; oh < g.oh; oh++) {
            int64_t top = oh * g.sh - g.pt;
            if (ih < top || ih >= top + g.kh) continue;
            for (int64_t ow = 0; ow < g.ow; ow++) {
                int64_t left = ow * g.sw - g.pl;
                if (iw < left || iw >= left + g.kw) continue;
                float best = -INFINITY;
                int64_t arg = -1;
                for (int64_t r = 0; r < g.kh; r++)
                    for (int64_t q = 0; q < g.kw; q++) {
                        int64_t h = top + r, w = left + q;
                        if (h < 0 || w < 0 || h >= g.h || w >= g.w) continue;
                        int64_t at = ((b * g.h + h) * g.w + w) * g.c + c;
                        if (x[at] > best) best = x[at], arg = at;
                    }
                if (arg == i) sum += dy[((b * g.oh + oh) * g.ow + ow) * g.c + c];
            }
        }
        dx[i] = relu ? mg_relu_grad(x[i], sum) : sum;
    }
}

extern "C" cudaError_t cuda_k_max_pool_grad(const float *x, const float *dy, float *dx, const cuda_pool_geom *g,
                                            int relu, cudaStream_t s) {
    MGC_LAUNCH(blocks_for(g->n * g->h * g->w * g->c), THREADS, 0, s, max_pool_grad_kernel)(x, dy, dx, *g, relu);
    return cudaGetLastError();
}

/* issue 14 (seed CNN speed): conv2d_grad_filter_pool2, the filter gradient of a
 * convolution through the 2x2 stride-2 max-pool that tiles its output y, the
 * pool gradient (first maximum of each window, masked by maximum > 0) made on
 * the fly. A block per element of dw [kh, kw, cg, c] (grid-stride over them),
 * its threads summing the terms in double over the positions of y, combined
 * in a fixed tree: deterministic, no atomics. */
enum { POOL2_THREADS = 256 };

__global__ static void grad_filter_pool2_kernel(const float *x, const float *y, const float *dy, float *dw,
                                                cuda_pool2_geom g) {
    __shared__ double part[POOL2_THREADS];
    const int64_t taps = g.kh * g.kw * g.cg * g.c, pw = g.ow / 2, ph = g.oh / 2;
    for (int64_t o = blockIdx.x; o < taps; o += gridDim.x) {
        int64_t c = o % g.c, ci = o / g.c % g.cg, s = o / (g.c * g.cg) % g.kw, r = o / (g.c * g.cg * g.kw);
        int64_t xc = c / (g.c / g.groups) * g.cg + ci;
        double sum = 0;
        for (int64_t p = threadIdx.x; p < g.n * g.oh * g.ow; p += POOL2_THREADS) {
            int64_t ow = p % g.ow, oh = p / g.ow % g.oh, b = p / (g.ow * g.oh);
            int64_t ih = oh * g.sh - g.pt + r * g.dh, iw = ow * g.sw - g.pl + s * g.dw;
            if (ih < 0 || iw < 0 || ih >= g.h || iw >= g.w) continue;
            const float *win = y + ((b * g.oh + (oh & ~(int64_t)1)) * g.ow + (ow & ~(int64_t)1)) * g.c + c;
            float v[4] = {win[0], win[g.c], win[g.ow * g.c], win[(g.ow + 1) * g.c]}, best = -INFINITY;
            int arg = -1;
            for (int k = 0; k < 4; k++)
                if (v[k] > best) best = v[k], arg = k;
            if (arg != (int)((oh & 1) * 2 + (ow & 1)) || !(best > 0.0f)) continue;
            float d = dy[((b * ph + oh / 2) * pw + ow / 2) * g.c + c];
            sum += (double)x[((b * g.h + ih) * g.w + iw) * g.cx + xc] * (double)d;
        }
        part[threadIdx.x] = sum;
        for (int half = POOL2_THREADS / 2; half > 0; half /= 2) {
            __syncthreads();
            if ((int)threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
        }
        if (threadIdx.x == 0) dw[o] = (float)part[0];
        __syncthreads(); /* part[] is rewritten by the block's next element */
    }
}

extern "C" cudaError_t cuda_k_grad_filter_pool2(const float *x, const float *y, const float *dy, float *dw,
                                                const cuda_pool2_geom *g, cudaStream_t s) {
    int64_t taps = g->kh * g->kw * g->cg * g->c;
    unsigned blocks = (unsigned)(taps < 1 ? 1 : taps > MAX_BLOCKS ? MAX_BLOCKS : taps);
    MGC_LAUNCH(blocks, POOL2_THREADS, 0, s, grad_filter_pool2_kernel)(x, y, dy, dw, *g);
    return cudaGetLastError();
}
