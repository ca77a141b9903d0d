/* cuda_batch_norm.cu - issue 14 (batch norm in training): the CPU's
 * runtime/cpu/batch_norm.c on the device, x [..., c] viewed as [rows, c]:
 * channel_mean and channel_var sum over the rows of a channel with one block
 * per channel (threads stride the rows, partial sums in float, combined in
 * double by a fixed tree: deterministic); channel_sum_dot the same for
 * sum(dy) and sum(dy (x - m)) at once; scale_shift is one thread per
 * element. Per-element math from runtime/ops_math.h. */
#include "../ops_math.h"
#include "cuda_device.cuh"

enum { BN_THREADS = 256 };

/* out[j] = scale * sum_r f(r, j): kind 0 x, 1 (x - m)^2 */
__global__ static void channel_sum_kernel(int kind, const float *x, const float *m, float *out, int64_t rows, int64_t c,
                                          double scale) {
    __shared__ double part[BN_THREADS];
    for (int64_t j = blockIdx.x; j < c; j += gridDim.x) {
        float acc = 0.0f;
        float mean = kind ? m[j] : 0.0f;
        for (int64_t r = threadIdx.x; r < rows; r += BN_THREADS) {
            float d = x[r * c + j] - mean;
            acc += kind == 0 ? d : d * d;
        }
        part[threadIdx.x] = acc;
        for (int half = BN_THREADS / 2; half > 0; half /= 2) {
            __syncthreads();
            if ((int)threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
        }
        if (threadIdx.x == 0) out[j] = (float)(part[0] * scale);
        __syncthreads(); /* part[] is rewritten by the next channel of the loop */
    }
}

/* out[j] = sum_r dy, out[c + j] = sum_r dy (x - m): channel_sum_kernel's
 * order for each, one read of x and dy */
__global__ static void channel_sum_dot_kernel(const float *x, const float *m, const float *dy, float *out,
                                              int64_t rows, int64_t c) {
    __shared__ double part[BN_THREADS], dpart[BN_THREADS];
    for (int64_t j = blockIdx.x; j < c; j += gridDim.x) {
        float acc = 0.0f, dacc = 0.0f;
        float mean = m[j];
        for (int64_t r = threadIdx.x; r < rows; r += BN_THREADS) {
            float g = dy[r * c + j];
            acc += g;
            dacc += g * (x[r * c + j] - mean);
        }
        part[threadIdx.x] = acc, dpart[threadIdx.x] = dacc;
        for (int half = BN_THREADS / 2; half > 0; half /= 2) {
            __syncthreads();
            if ((int)threadIdx.x < half)
                part[threadIdx.x] += part[threadIdx.x + half], dpart[threadIdx.x] += dpart[threadIdx.x + half];
        }
        if (threadIdx.x == 0) out[j] = (float)part[0], out[c + j] = (float)dpart[0];
        __syncthreads(); /* part[], dpart[] are rewritten by the next channel of the loop */
    }
}

__global__ static void scale_shift_kernel(const float *x, const float *m, const float *s, const float *b, float *y,
                                          int64_t n, int64_t c) {
    FOR_EACH(i, n) {
        int64_t j = i % c;
        y[i] = mg_scale_shift(x[i], m[j], s[j], b[j]);
    }
}

extern "C" cudaError_t cuda_k_channel_sum(int kind, const float *x, const float *m, float *out, int64_t rows,
                                          int64_t c, double scale, cudaStream_t s) {
    if (c == 0) return cudaSuccess;
    unsigned grid = (unsigned)(c < MAX_BLOCKS ? c : MAX_BLOCKS);
    MGC_LAUNCH(grid, BN_THREADS, 0, s, channel_sum_kernel)(kind, x, m, out, rows, c, scale);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_k_channel_sum_dot(const float *x, const float *m, const float *dy, float *out,
                                              int64_t rows, int64_t c, cudaStream_t s) {
    if (c == 0) return cudaSuccess;
    unsigned grid = (unsigned)(c < MAX_BLOCKS ? c : MAX_BLOCKS);
    MGC_LAUNCH(grid, BN_THREADS, 0, s, channel_sum_dot_kernel)(x, m, dy, out, rows, c);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_k_scale_shift(const float *x, const float *m, const float *sc, const float *b, float *y,
                                          int64_t n, int64_t c, cudaStream_t s) {
    if (n == 0 || c == 0) return cudaSuccess;
    MGC_LAUNCH(blocks_for(n), THREADS, 0, s, scale_shift_kernel)(x, m, sc, b, y, n, c);
    return cudaGetLastError();
}
