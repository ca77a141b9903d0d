/* cuda_attention.cu - issue 14 (char_gpt speed): the causal masked softmax of
 * attention, forward and backward, as the CPU's runtime/cpu/attention.c: one
 * thread per row of the last axis; row i of each [r, c] matrix keeps columns
 * j <= i (the others are not read and come out 0). Per-element math from
 * runtime/ops_math.h. */
#include <float.h>

#include "../ops_math.h"
#include "cuda_device.cuh"

/* dy NULL: out = softmax over the kept j of scale * x; else x is y and out =
 * scale * y * (dy - sum_kept(dy * y)) */
__global__ static void causal_softmax_kernel(const float *x, const float *dy, float *out, int64_t rows, int64_t r,
                                             int64_t c, float scale) {
    FOR_EACH(row, rows) {
        int64_t i = row % r, n = i + 1 < c ? i + 1 : c, base = row * c;
        if (dy) {
            float dot = 0.0f;
            for (int64_t j = 0; j < n; j++) dot += dy[base + j] * x[base + j];
            for (int64_t j = 0; j < n; j++) out[base + j] = mg_causal_softmax_grad(x[base + j], dy[base + j], dot, scale);
        } else {
            float mx = -FLT_MAX, sum = 0.0f;
            for (int64_t j = 0; j < n; j++) mx = fmaxf(mx, scale * x[base + j]);
            for (int64_t j = 0; j < n; j++) sum += mg_exp_shifted(scale * x[base + j], mx);
            float inv = 1.0f / sum;
            for (int64_t j = 0; j < n; j++) out[base + j] = mg_exp_shifted(scale * x[base + j], mx) * inv;
        }
        for (int64_t j = n; j < c; j++) out[base + j] = 0.0f;
    }
}

extern "C" cudaError_t cuda_k_causal_softmax(const float *x, const float *dy, float *out, int64_t rows, int64_t r,
                                             int64_t c, float scale, cudaStream_t s) {
    if (rows == 0 || c == 0) return cudaSuccess;
    MGC_LAUNCH(blocks_for(rows), THREADS, 0, s, causal_softmax_kernel)(x, dy, out, rows, r, c, scale);
    return cudaGetLastError();
}

/* issue 14 (char_gpt speed): causal_matmul's output triangle (tri 0): the
 * masked entries of each [m, m] matrix set to 0 (j > i lower, j < i upper) */
__global__ static void tri_mask_kernel(float *out, int64_t total, int64_t m, int upper) {
    FOR_EACH(e, total) {
        int64_t i = e / m % m, j = e % m;
        if (upper ? j < i : j > i) out[e] = 0.0f;
    }
}

extern "C" cudaError_t cuda_k_tri_mask(float *out, int64_t batch, int64_t m, int upper, cudaStream_t s) {
    int64_t total = batch * m * m;
    if (total == 0) return cudaSuccess;
    MGC_LAUNCH(blocks_for(total), THREADS, 0, s, tri_mask_kernel)(out, total, m, upper);
    return cudaGetLastError();
}

/* issue 14 (char_gpt speed): causal_softmax_dropout_grad: out =
 * causal_softmax_grad(y, dp * factor), the factor dropout's
 * (mg_dropout_scale_key of global element base + index at the step in the
 * device word *step), 1 when step is NULL (outside training), as the CPU's */
__global__ static void causal_softmax_dropout_grad_kernel(const float *y, const float *dp, float *out, int64_t rows,
                                                          int64_t r, int64_t c, float scale, uint64_t seed,
                                                          const int64_t *step, uint64_t base, float rate) {
    uint64_t key = step ? mg_dropout_key(seed, *step) : 0;
    FOR_EACH(row, rows) {
        int64_t i = row % r, n = i + 1 < c ? i + 1 : c, b = row * c;
#define CSD_DY(j) mg_mul(dp[b + (j)], step ? mg_dropout_scale_key(key, base + (uint64_t)(b + (j)), rate) : 1.0f)
        float dot = 0.0f;
        for (int64_t j = 0; j < n; j++) dot += CSD_DY(j) * y[b + j];
        for (int64_t j = 0; j < n; j++) out[b + j] = mg_causal_softmax_grad(y[b + j], CSD_DY(j), dot, scale);
#undef CSD_DY
        for (int64_t j = n; j < c; j++) out[b + j] = 0.0f;
    }
}

extern "C" cudaError_t cuda_k_causal_softmax_dropout_grad(const float *y, const float *dp, float *out, int64_t rows,
                                                          int64_t r, int64_t c, float scale, uint64_t seed,
                                                          const int64_t *step, uint64_t base, float rate,
                                                          cudaStream_t s) {
    if (rows == 0 || c == 0) return cudaSuccess;
    MGC_LAUNCH(blocks_for(rows), THREADS, 0, s, causal_softmax_dropout_grad_kernel)(y, dp, out, rows, r, c, scale,
                                                                                    seed, step, base, rate);
    return cudaGetLastError();
}
