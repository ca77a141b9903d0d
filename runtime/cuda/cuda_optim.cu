/* cuda_optim.cu - CUDA kernels of Adagrad, Nadam, Lamb and sq_norm (the
 * squared gradient norm clipping divides by). Per-element math from
 * runtime/ops_math.h, as the CPU kernels (runtime/cpu/optim.c); the rate and
 * corrections of the step in the device word *step (issue 15, cuda_step.h).
 * Reductions run in one block in a fixed order, so every replica gets the same bits. */
#include "../ops_math.h"
#include "cuda_device.cuh"
#include "cuda_step.h"

static const int REDUCE_THREADS = 512;

#define CLIP_SCALE(sq_norm, clip) ((sq_norm) ? mg_clip_scale(*(sq_norm), (clip)) : 1.0f)

/* sums a[] and b[] of REDUCE_THREADS doubles into a[0], b[0] (b may be NULL) */
__device__ static void block_sum(double *a, double *b) {
    for (int half = REDUCE_THREADS / 2; half > 0; half /= 2) {
        __syncthreads();
        if ((int)threadIdx.x < half) {
            a[threadIdx.x] += a[threadIdx.x + half];
            if (b) b[threadIdx.x] += b[threadIdx.x + half];
        }
    }
    __syncthreads();
}

__global__ static void adagrad_kernel(float *p, const float *g, float *acc, int64_t n, cuda_rate r, const int64_t *step,
                                      float eps, float acc0, const float *sq_norm, float clip) {
    cuda_coeffs c = cuda_block_coeffs(r, step);
    float sc = CLIP_SCALE(sq_norm, clip);
    FOR_EACH(i, n) {
        if (c.first) acc[i] = acc0;
        mg_decay(&p[i], c.lr_wd);
        mg_adagrad(&p[i], g[i] * sc, &acc[i], c.lr, eps);
    }
}

__global__ static void nadam_kernel(float *p, const float *g, float *m, float *v, int64_t n, cuda_rate r,
                                    const int64_t *step, float eps, const float *sq_norm, float clip) {
    cuda_coeffs c = cuda_block_coeffs(r, step);
    float sc = CLIP_SCALE(sq_norm, clip), b1 = (float)r.b1, b2 = (float)r.b2;
    FOR_EACH(i, n) {
        mg_decay(&p[i], c.lr_wd);
        mg_nadam(&p[i], g[i] * sc, &m[i], &v[i], c.lr, b1, b2, eps, c.cm, c.cg, c.c2);
    }
}

/* one block: decay and moments while summing ||p||^2 and ||r||^2, then p -= lr * ratio * r */
__global__ static void lamb_kernel(float *p, const float *g, float *m, float *v, int64_t n, cuda_rate rate,
                                   const int64_t *step, float eps, const float *sq_norm, float clip) {
    __shared__ double pp[REDUCE_THREADS], rr[REDUCE_THREADS];
    cuda_coeffs c = cuda_block_coeffs(rate, step);
    float sc = CLIP_SCALE(sq_norm, clip), b1 = (float)rate.b1, b2 = (float)rate.b2;
    double ap = 0, ar = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        mg_decay(&p[i], c.lr_wd);
        mg_moments(g[i] * sc, &m[i], &v[i], b1, b2);
        float r = mg_lamb_dir(m[i], v[i], c.c1, c.c2, eps);
        ap += (double)p[i] * p[i], ar += (double)r * r;
    }
    pp[threadIdx.x] = ap, rr[threadIdx.x] = ar;
    block_sum(pp, rr);
    float lr_step = c.lr * mg_lamb_ratio(pp[0], rr[0]);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) p[i] -= lr_step * mg_lamb_dir(m[i], v[i], c.c1, c.c2, eps);
}

__global__ static void sq_norm_kernel(const float *x, int64_t n, float *out, int accumulate) {
    __shared__ double s[REDUCE_THREADS];
    double a = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) a += (double)x[i] * x[i];
    s[threadIdx.x] = a;
    block_sum(s, NULL);
    if (threadIdx.x == 0) *out = (float)((accumulate ? (double)*out : 0.0) + s[0]);
}

extern "C" cudaError_t cuda_k_adagrad(float *p, const float *g, float *acc, int64_t n, const cuda_rate *r,
                                      const int64_t *step, float eps, float acc0, const float *sq_norm, float clip,
                                      cudaStream_t s) {
    MGC_LAUNCH(blocks_for(n), THREADS, 0, s, adagrad_kernel)(p, g, acc, n, *r, step, eps, acc0, sq_norm, clip);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_k_nadam(float *p, const float *g, float *m, float *v, int64_t n, const cuda_rate *r,
                                    const int64_t *step, float eps, const float *sq_norm, float clip, cudaStream_t s) {
    MGC_LAUNCH(blocks_for(n), THREADS, 0, s, nadam_kernel)(p, g, m, v, n, *r, step, eps, sq_norm, clip);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_k_lamb(float *p, const float *g, float *m, float *v, int64_t n, const cuda_rate *r,
                                   const int64_t *step, float eps, const float *sq_norm, float clip, cudaStream_t s) {
    MGC_LAUNCH(1, REDUCE_THREADS, 0, s, lamb_kernel)(p, g, m, v, n, *r, step, eps, sq_norm, clip);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_k_sq_norm(const float *x, int64_t n, float *out, int accumulate, cudaStream_t s) {
    MGC_LAUNCH(1, REDUCE_THREADS, 0, s, sq_norm_kernel)(x, n, out, accumulate);
    return cudaGetLastError();
}
