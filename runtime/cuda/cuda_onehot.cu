/* cuda_onehot.cu - one_hot (issue 13): i32 ids -> f32 rows of zeros with a 1 at the id. */
#include "cuda_device.cuh"

/* out[i, j] = ids[i] == j; an id outside [0, depth) matches no j: a zero row (TF) */
__global__ static void one_hot_kernel(const int32_t *ids, float *out, int64_t n, int64_t depth) {
    FOR_EACH(e, n * depth) out[e] = ids[e / depth] == e % depth ? 1.0f : 0.0f;
}

extern "C" cudaError_t cuda_k_one_hot(const int32_t *ids, float *out, int64_t n, int64_t depth, cudaStream_t s) {
    MGC_LAUNCH(blocks_for(n * depth), THREADS, 0, s, one_hot_kernel)(ids, out, n, depth);
    return cudaGetLastError();
}
