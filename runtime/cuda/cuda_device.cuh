/* cuda_device.cuh - what every .cu file of the backend shares on the device
 * side: the launch geometry of a grid-stride loop, the loop itself, the launch
 * macro, and the input offset of a reduction over an axes mask (cuda_reduce_desc). */
#ifndef MGC_CUDA_DEVICE_CUH
#define MGC_CUDA_DEVICE_CUH

#include <stdint.h>

#include "cuda_kernels.h"

/* MGC_CUDA_MAX_BLOCKS: the grid cap; the CPU emulation also builds the
 * kernels with a tiny one, so every grid-stride loop strides on small inputs */
#ifndef MGC_CUDA_MAX_BLOCKS
#define MGC_CUDA_MAX_BLOCKS 65535
#endif
static const int64_t THREADS = 256, MAX_BLOCKS = MGC_CUDA_MAX_BLOCKS;

/* MGC_LAUNCH(grid, block, shmem, stream, kernel)(args...): kernel<<<grid, block,
 * shmem, stream>>>(args...) under nvcc; the grid run on the CPU under the
 * emulation (cuda_emu.h). The kernel comes last: template arguments hold commas. */
#ifdef MGC_CUDA_EMU
#define MGC_LAUNCH(grid, block, shmem, stream, ...) MGC_EMU_LAUNCH(grid, block, shmem, stream, __VA_ARGS__)
#else
#define MGC_LAUNCH(grid, block, shmem, stream, ...) __VA_ARGS__<<<(grid), (block), (shmem), (stream)>>>
#endif

/* grid for a grid-stride loop over n items */
static inline unsigned blocks_for(int64_t n) {
    int64_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < 1 ? 1 : b > MAX_BLOCKS ? MAX_BLOCKS : b);
}

#define FOR_EACH(i, n) for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* input offset of the j-th reduced element of output o (both in row-major order) */
__device__ static inline int64_t reduce_offset(const cuda_reduce_desc &r, int64_t o, int64_t j) {
    int64_t off = 0, stride = 1;
    for (int a = r.rank - 1; a >= 0; a--) {
        int64_t *idx = (r.mask >> a & 1u) ? &j : &o;
        off += (*idx % r.dim[a]) * stride;
        *idx /= r.dim[a];
        stride *= r.dim[a];
    }
    return off;
}

#endif
