/* cuda_numerics.cu - --check-numerics on the device (issue 15): after each
 * kernel with an f32 output, a scan records its first non-finite element in
 * the device's cuda_nonfinite word; sync reads it once every stream is idle
 * and fails the step naming the op, as the CPU backend does after each kernel.
 * The step it reports is the device word *step (issue 15: graphs replay it). */
#include "cuda_device.cuh"

__global__ static void check_finite_kernel(const float *y, int64_t n, cuda_nonfinite *rec, int32_t node,
                                           int32_t replica, const int64_t *step) {
    FOR_EACH(i, n) {
        float v = y[i];
        if (isfinite(v)) continue;
        unsigned long long kind = isnan(v) ? 0ull : v > 0 ? 1ull : 2ull;
        int32_t prev = atomicCAS(&rec->node1, 0, node + 1);
        if (prev == 0) rec->replica = replica, rec->step = (long long)*step; /* only the first writer */
        if (prev == 0 || prev == node + 1) atomicMin(&rec->key, (unsigned long long)i << 2 | kind);
    }
}

extern "C" cudaError_t cuda_k_check_finite(const float *y, int64_t n, cuda_nonfinite *rec, int32_t node,
                                           int32_t replica, const int64_t *step, cudaStream_t s) {
    MGC_LAUNCH(blocks_for(n), THREADS, 0, s, check_finite_kernel)(y, n, rec, node, replica, step);
    return cudaGetLastError();
}
