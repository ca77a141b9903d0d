/* cuda_step.cu - the step counter in device memory (issue 15). Each device
 * keeps one int64 word per stream (cuda_impl.h: cuda_device.step_word) that
 * the step-dependent kernels read (cuda_kernels.h); the backend writes it with
 * this kernel on that stream before the work of a new step, outside any
 * captured graph (cuda_graph.c), so a graph replays with the current step. */
#include "cuda_device.cuh"

__global__ static void set_step_kernel(int64_t *word, int64_t value) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *word = value;
}

extern "C" cudaError_t cuda_k_set_step(int64_t *word, int64_t value, cudaStream_t s) {
    MGC_LAUNCH(1, 1, 0, s, set_step_kernel)(word, value);
    return cudaGetLastError();
}
