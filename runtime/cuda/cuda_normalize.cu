/* cuda_normalize.cu - issue 14 (char_gpt speed): layer normalization's core
 * (normalize, normalize_grad) as the CPU's runtime/cpu/normalize.c: one thread
 * per row of the last axis; the gradient recomputes the row's mean and
 * 1 / sqrt(var + epsilon) from x. Per-element math from runtime/ops_math.h. */
#include "../ops_math.h"
#include "cuda_device.cuh"

/* dy NULL: out = (x - mean) r; else out = r (dy - mean(dy) - xhat mean(dy xhat)) */
__global__ static void normalize_kernel(const float *x, const float *dy, float *out, int64_t rows, int64_t c,
                                        float epsilon) {
    FOR_EACH(row, rows) {
        const float *xr = x + row * c;
        float *o = out + row * c;
        float sum = 0.0f, sq = 0.0f;
        for (int64_t j = 0; j < c; j++) sum += xr[j];
        float mean = sum / (float)c;
        for (int64_t j = 0; j < c; j++) sq += (xr[j] - mean) * (xr[j] - mean);
        float r = 1.0f / sqrtf(sq / (float)c + epsilon);
        if (!dy) {
            for (int64_t j = 0; j < c; j++) o[j] = (xr[j] - mean) * r;
            continue;
        }
        const float *d = dy + row * c;
        float s_dy = 0.0f, s_dyx = 0.0f;
        for (int64_t j = 0; j < c; j++) s_dy += d[j], s_dyx += d[j] * ((xr[j] - mean) * r);
        for (int64_t j = 0; j < c; j++)
            o[j] = mg_normalize_grad((xr[j] - mean) * r, d[j], r, s_dy / (float)c, s_dyx / (float)c);
    }
}

extern "C" cudaError_t cuda_k_normalize(const float *x, const float *dy, float *out, int64_t rows, int64_t c,
                                        float epsilon, cudaStream_t s) {
    if (rows == 0 || c == 0) return cudaSuccess;
    MGC_LAUNCH(blocks_for(rows), THREADS, 0, s, normalize_kernel)(x, dy, out, rows, c, epsilon);
    return cudaGetLastError();
}
