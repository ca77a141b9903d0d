/* cuda_emu.h - CUDA kernel emulation on the CPU (issue 15): with MGC_CUDA_EMU
 * defined, the host C++ compiler builds the .cu files of runtime/cuda and their launch
 * wrappers run each grid on the calling thread. Host memory stands in for
 * device memory. A block whose threads meet at __syncthreads runs them as
 * fibers (ucontext) with real barrier semantics; `__shared__` is `static`, one
 * copy reused by the blocks, which run one after another. The CUDA runtime
 * calls the wrappers make are emulated (launch errors are sticky until
 * cudaGetLastError, as on a GPU); cuBLAS, cuDNN and NCCL are not. */
#ifndef MGC_CUDA_EMU_H
#define MGC_CUDA_EMU_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the runtime types and calls the wrappers use (values as CUDA's) ---- */
typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorLaunchFailure = 719,
} cudaError_t;
typedef struct CUstream_st *cudaStream_t;

#ifdef __cplusplus
extern "C" {
#endif
cudaError_t cudaGetLastError(void);
const char *cudaGetErrorString(cudaError_t e);
cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s);
cudaError_t cudaFreeAsync(void *p, cudaStream_t s);
/* emulated device memory: bytes that end at a page no one may touch, so a
 * kernel reading or writing past the end of a buffer stops the test naming
 * the kernel, block and thread (see mgc_emu_guard_faults) */
void *mgc_emu_alloc(size_t bytes);
void mgc_emu_free(void *p);
/* calls each(name, arg) for every kernel launched so far (no template arguments) */
void mgc_emu_launched(void (*each)(const char *name, void *arg), void *arg);
#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
#include <tuple>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};
extern uint3 threadIdx, blockIdx; /* one launch at a time, on one thread */
extern dim3 blockDim, gridDim;

void __syncthreads(void);
int atomicCAS(int *p, int compare, int value);
unsigned long long atomicMin(unsigned long long *p, unsigned long long value);
float __int_as_float(int bits);

namespace mgc_emu {
/* runs body(ctx) once per thread of the grid; name is the kernel's, for
 * messages and the coverage list (mgc_emu_launched) */
void run(const char *name, dim3 grid, dim3 block, void (*body)(void *), void *ctx);

template <typename... P> struct launcher {
    const char *name;
    dim3 grid, block;
    void (*kernel)(P...);
    /* arguments convert to the kernel's parameter types once, by value, as a launch does */
    template <typename... A> void operator()(A &&...a) const {
        struct call {
            void (*kernel)(P...);
            std::tuple<P...> args;
        } c{kernel, std::tuple<P...>(std::forward<A>(a)...)};
        run(name, grid, block, [](void *p) { std::apply(((call *)p)->kernel, ((call *)p)->args); }, &c);
    }
};

template <typename... P>
launcher<P...> make(const char *name, dim3 grid, dim3 block, size_t, cudaStream_t, void (*kernel)(P...)) {
    return launcher<P...>{name, grid, block, kernel};
}
} // namespace mgc_emu

#define MGC_EMU_LAUNCH(grid, block, shmem, stream, ...) ::mgc_emu::make(#__VA_ARGS__, (grid), (block), (shmem), (stream), __VA_ARGS__)
#endif

#endif
