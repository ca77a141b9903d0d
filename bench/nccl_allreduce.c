/* nccl_allreduce.c - bandwidth of NCCL's all-reduce (f32 sum, in place) over
 * the first n visible GPUs of this process (one thread drives them all, as
 * mgc's CUDA backend does), 1 MiB .. max MiB. Built only with the CUDA backend
 * (tests/cuda.cmake); run by scripts/gpu-check.sh.
 *
 * time = mean over ITERS calls after WARMUP, timed by events on GPU 0's
 * stream after all streams finished; algbw = bytes / time and busbw = algbw *
 * 2(n-1)/n, as nccl-tests defines them (the bytes each link carries in a
 * ring, comparable across n). One line per size:
 *   nccl_allreduce n=N bytes=B time_us=T algbw_GBps=A busbw_GBps=U
 * usage: bench_nccl_allreduce [n (default: all visible)] [max MiB (default 256)]
 * Exits 77 with "SKIP: ..." without a usable GPU. */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

enum { MAX_GPUS = 64, WARMUP = 5, ITERS = 20 };

#define CK(call)                                                                                                      \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "bench_nccl_allreduce: %s failed: %s\n", #call, cudaGetErrorString(e_));                  \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)
#define NK(call)                                                                                                      \
    do {                                                                                                               \
        ncclResult_t e_ = (call);                                                                                      \
        if (e_ != ncclSuccess) {                                                                                       \
            fprintf(stderr, "bench_nccl_allreduce: %s failed: %s\n", #call, ncclGetErrorString(e_));                  \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

static int all_reduce(int n, ncclComm_t *comm, float **buf, cudaStream_t *s, size_t count) {
    NK(ncclGroupStart());
    for (int d = 0; d < n; d++) NK(ncclAllReduce(buf[d], buf[d], count, ncclFloat32, ncclSum, comm[d], s[d]));
    NK(ncclGroupEnd());
    return 0;
}

/* seconds per all-reduce of count floats */
static int time_one(int n, ncclComm_t *comm, float **buf, cudaStream_t *s, size_t count, double *out) {
    cudaEvent_t start, stop;
    CK(cudaSetDevice(0));
    CK(cudaEventCreate(&start));
    CK(cudaEventCreate(&stop));
    for (int k = 0; k < WARMUP; k++)
        if (all_reduce(n, comm, buf, s, count)) return 1;
    for (int d = 0; d < n; d++) {
        CK(cudaSetDevice(d));
        CK(cudaStreamSynchronize(s[d]));
    }
    CK(cudaSetDevice(0));
    CK(cudaEventRecord(start, s[0]));
    for (int k = 0; k < ITERS; k++)
        if (all_reduce(n, comm, buf, s, count)) return 1;
    /* GPU 0's stop event after every GPU's work: the others' last calls end with it (a collective) */
    CK(cudaSetDevice(0));
    CK(cudaEventRecord(stop, s[0]));
    CK(cudaEventSynchronize(stop));
    for (int d = 1; d < n; d++) {
        CK(cudaSetDevice(d));
        CK(cudaStreamSynchronize(s[d]));
    }
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, start, stop));
    *out = (double)ms * 1e-3 / ITERS;
    CK(cudaSetDevice(0));
    CK(cudaEventDestroy(start));
    CK(cudaEventDestroy(stop));
    return 0;
}

int main(int argc, char **argv) {
    int visible = 0;
    cudaError_t e = cudaGetDeviceCount(&visible);
    if (e != cudaSuccess || visible < 1) {
        printf("SKIP: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 77;
    }
    int n = argc > 1 ? atoi(argv[1]) : visible;
    long max_mib = argc > 2 ? atol(argv[2]) : 256;
    if (n < 1 || n > visible || n > MAX_GPUS || max_mib < 1) {
        fprintf(stderr, "usage: bench_nccl_allreduce [n: 1..%d] [max MiB >= 1]\n", visible < MAX_GPUS ? visible : MAX_GPUS);
        return 2;
    }
    int dev[MAX_GPUS];
    ncclComm_t comm[MAX_GPUS];
    cudaStream_t s[MAX_GPUS];
    float *buf[MAX_GPUS];
    size_t max_bytes = (size_t)max_mib << 20;
    for (int d = 0; d < n; d++) {
        dev[d] = d;
        CK(cudaSetDevice(d));
        CK(cudaStreamCreateWithFlags(&s[d], cudaStreamNonBlocking));
        CK(cudaMalloc((void **)&buf[d], max_bytes));
        CK(cudaMemset(buf[d], 0, max_bytes));
    }
    NK(ncclCommInitAll(comm, n, dev));
    for (size_t bytes = (size_t)1 << 20; bytes <= max_bytes; bytes *= 4) {
        double t = 0;
        if (time_one(n, comm, buf, s, bytes / sizeof(float), &t)) return 1;
        double algbw = (double)bytes / t / 1e9, busbw = algbw * 2.0 * (n - 1) / n;
        printf("nccl_allreduce n=%d bytes=%zu time_us=%.1f algbw_GBps=%.2f busbw_GBps=%.2f\n", n, bytes, t * 1e6, algbw,
               busbw);
    }
    for (int d = 0; d < n; d++) {
        cudaSetDevice(d);
        ncclCommDestroy(comm[d]);
        cudaFree(buf[d]);
        cudaStreamDestroy(s[d]);
    }
    return 0;
}
