/* cuda_conv_pool.cu - issue 14 (seed CNN speed): conv2d_relu_pool2 and its
 * filter gradient (docs/epilogue.md, rule 6), as on the CPU (conv_pool.c): y =
 * relu(conv2d(x, w) + bias) is never written; the forward makes each window's
 * four elements (relu_conv_at, taps in (r, s, ci) order) and writes their
 * maximum and, behind the maxima, the window's pixel (the first maximum,
 * row-major, where it is > 0, else -1), which the filter gradient reads. */
#include "../ops_math.h"
#include "cuda_device.cuh"

/* y at (b, oh, ow, c): x [n, h, w, cx], w [kh, kw, cg, c], bias [c]; taps in the padding skipped */
__device__ static float relu_conv_at(const float *x, const float *w, const float *bias, const cuda_pool2_geom &g,
                                     int64_t b, int64_t oh, int64_t ow, int64_t c) {
    const int64_t x0 = c / (g.c / g.groups) * g.cg;
    float acc = 0.0f;
    for (int64_t r = 0; r < g.kh; r++) {
        int64_t ih = oh * g.sh - g.pt + r * g.dh;
        if (ih < 0 || ih >= g.h) continue;
        for (int64_t s = 0; s < g.kw; s++) {
            int64_t iw = ow * g.sw - g.pl + s * g.dw;
            if (iw < 0 || iw >= g.w) continue;
            const float *xp = x + ((b * g.h + ih) * g.w + iw) * g.cx + x0, *wp = w + (r * g.kw + s) * g.cg * g.c + c;
            for (int64_t ci = 0; ci < g.cg; ci++) acc += xp[ci] * wp[ci * g.c];
        }
    }
    return mg_relu(acc + bias[c]);
}

/* out [2, n, oh/2, ow/2, c]: a thread per window and channel, the maximum of
 * its four in row-major order (strict >, the first of ties), then its pixel */
__global__ static void relu_pool2_kernel(const float *x, const float *w, const float *bias, float *out,
                                         cuda_pool2_geom g) {
    const int64_t pw = g.ow / 2, ph = g.oh / 2, np = g.n * ph * pw * g.c;
    FOR_EACH(i, np) {
        int64_t c = i % g.c, q = i / g.c % pw, p = i / (g.c * pw) % ph, b = i / (g.c * pw * ph);
        float m = relu_conv_at(x, w, bias, g, b, 2 * p, 2 * q, c);
        int arg = 0;
        for (int k = 1; k < 4; k++) {
            float v = relu_conv_at(x, w, bias, g, b, 2 * p + k / 2, 2 * q + k % 2, c);
            if (v > m) m = v, arg = k;
        }
        out[i] = m, out[np + i] = m > 0.0f ? (float)arg : -1.0f;
    }
}

extern "C" cudaError_t cuda_k_relu_pool2(const float *x, const float *w, const float *bias, float *out,
                                         const cuda_pool2_geom *g, cudaStream_t s) {
    MGC_LAUNCH(blocks_for(g->n * (g->oh / 2) * (g->ow / 2) * g->c), THREADS, 0, s, relu_pool2_kernel)(x, w, bias, out, *g);
    return cudaGetLastError();
}

/* dw [kh, kw, cg, c], after nb bias elements when nb = c (bias=1): a block
 * per element (grid-stride), its threads summing in double over the pooled
 * positions dy times x under the window's pixel (px, the forward's; none
 * where -1), or for a bias element dy alone; combined in a fixed tree:
 * deterministic, no atomics */
enum { RELU_POOL2_THREADS = 256 };

__global__ static void relu_pool2_grad_filter_kernel(const float *x, const float *px, const float *dy, float *dw,
                                                     int64_t nb, cuda_pool2_geom g) {
    __shared__ double part[RELU_POOL2_THREADS];
    const int64_t outs = nb + g.kh * g.kw * g.cg * g.c, pw = g.ow / 2, ph = g.oh / 2;
    for (int64_t e = blockIdx.x; e < outs; e += gridDim.x) {
        int64_t o = e < nb ? e : e - nb; /* the bias element's channel, or the tap element */
        int64_t c = o % g.c, ci = o / g.c % g.cg, s = o / (g.c * g.cg) % g.kw, r = o / (g.c * g.cg * g.kw);
        int64_t xc = c / (g.c / g.groups) * g.cg + ci;
        double sum = 0;
        for (int64_t p = threadIdx.x; p < g.n * ph * pw; p += RELU_POOL2_THREADS) {
            int64_t q = p % pw, h2 = p / pw % ph, b = p / (pw * ph), at = ((b * ph + h2) * pw + q) * g.c + c;
            if (!(px[at] >= 0.0f)) continue;
            if (e < nb) {
                sum += (double)dy[at];
                continue;
            }
            int arg = (int)px[at] & 3;
            int64_t oh = 2 * h2 + arg / 2, ow = 2 * q + arg % 2;
            int64_t ih = oh * g.sh - g.pt + r * g.dh, iw = ow * g.sw - g.pl + s * g.dw;
            if (ih < 0 || iw < 0 || ih >= g.h || iw >= g.w) continue;
            sum += (double)x[((b * g.h + ih) * g.w + iw) * g.cx + xc] * (double)dy[at];
        }
        part[threadIdx.x] = sum;
        for (int half = RELU_POOL2_THREADS / 2; half > 0; half /= 2) {
            __syncthreads();
            if ((int)threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
        }
        if (threadIdx.x == 0) dw[e] = (float)part[0];
        __syncthreads(); /* part[] is rewritten by the block's next element */
    }
}

extern "C" cudaError_t cuda_k_relu_pool2_grad_filter(const float *x, const float *f, const float *dy, float *dw,
                                                     int bias, const cuda_pool2_geom *g, cudaStream_t s) {
    int64_t nb = bias ? g->c : 0, outs = nb + g->kh * g->kw * g->cg * g->c;
    int64_t np = g->n * (g->oh / 2) * (g->ow / 2) * g->c;
    unsigned blocks = (unsigned)(outs < 1 ? 1 : outs > MAX_BLOCKS ? MAX_BLOCKS : outs);
    MGC_LAUNCH(blocks, RELU_POOL2_THREADS, 0, s, relu_pool2_grad_filter_kernel)(x, f + np, dy, dw, nb, *g);
    return cudaGetLastError();
}
