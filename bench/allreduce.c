/* allreduce.c - all-reduce bandwidth of the shared-memory collectives on 2
 * and 4 logical devices, 1 KiB .. 64 MiB, beside memcpy measured in the same
 * run. algbw = bytes / time; busbw = algbw * 2(n-1)/n (nccl-tests).
 * usage: bench_allreduce [ring|one-device|hierarchical] [max MiB] [devices...]
 * (default devices: 2 4; more devices than cores oversubscribe them) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../runtime/collectives.h"

typedef struct {
    rt_coll *c;
    pthread_barrier_t *start;
    int device, iters;
    rt_coll_args a;
    int rc;
    char err[512];
} worker;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    pthread_barrier_wait(w->start);
    for (int k = 0; k < w->iters && !w->rc; k++) w->rc = rt_coll_run(w->c, w->device, &w->a, 60, w->err, sizeof w->err);
    return NULL;
}

/* Seconds per all-reduce of `bytes` over n devices (iters calls each). */
static double time_all_reduce(rt_coll *c, float **bufs, int n, size_t bytes, int iters, ir_cross_device algo) {
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n + 1);
    worker w[8];
    pthread_t t[8];
    for (int d = 0; d < n; d++) {
        w[d] = (worker){.c = c, .start = &start, .device = d, .iters = iters,
                        .a = {.kind = COLL_ALL_REDUCE, .group = 0, .label = "bench", .buf = bufs[d],
                              .count = (int64_t)(bytes / sizeof(float)), .dtype = IR_F32, .algo = algo,
                              .mean = 1}}; /* as training runs it */
        pthread_create(&t[d], NULL, worker_main, &w[d]);
    }
    pthread_barrier_wait(&start);
    double t0 = now_s();
    for (int d = 0; d < n; d++) pthread_join(t[d], NULL);
    double took = now_s() - t0;
    pthread_barrier_destroy(&start);
    for (int d = 0; d < n; d++)
        if (w[d].rc) {
            fprintf(stderr, "bench_allreduce: %s\n", w[d].err);
            exit(1);
        }
    return took / iters;
}

static double time_memcpy(char *dst, const char *src, size_t bytes, int iters) {
    double t0 = now_s();
    for (int k = 0; k < iters; k++) {
        memcpy(dst, src, bytes);
        __asm__ volatile("" ::"r"(dst) : "memory");
    }
    return (now_s() - t0) / iters;
}

static void bench(int n, ir_cross_device algo, size_t max_bytes) {
    float *bufs[8];
    for (int d = 0; d < n; d++) bufs[d] = aligned_alloc(64, max_bytes), memset(bufs[d], 0, max_bytes);
    char *src = aligned_alloc(64, max_bytes), *dst = aligned_alloc(64, max_bytes);
    memset(src, 1, max_bytes), memset(dst, 0, max_bytes);
    rt_coll *c = rt_coll_new(n, 0, n, NULL);
    printf("\n%d devices, %s all-reduce (f32 sum, in place)\n", n, ir_cross_device_names[algo]);
    printf("%10s %8s %10s %10s %10s %12s %8s\n", "bytes", "iters", "time us", "algbw GB/s", "busbw GB/s",
           "memcpy GB/s", "bus/mem");
    for (size_t bytes = 1024; bytes <= max_bytes; bytes *= 4) {
        int iters = (int)(((size_t)1 << 28) / bytes);
        iters = iters > 20000 ? 20000 : iters < 8 ? 8 : iters;
        time_all_reduce(c, bufs, n, bytes, iters / 8 + 1, algo); /* warm up */
        double t = time_all_reduce(c, bufs, n, bytes, iters, algo);
        time_memcpy(dst, src, bytes, iters / 8 + 1);
        double tm = time_memcpy(dst, src, bytes, iters);
        double algbw = (double)bytes / t / 1e9, busbw = algbw * 2 * (n - 1) / n, membw = (double)bytes / tm / 1e9;
        printf("%10zu %8d %10.1f %10.2f %10.2f %12.2f %7.0f%%\n", bytes, iters, t * 1e6, algbw, busbw, membw,
               100 * busbw / membw);
        fflush(stdout);
    }
    rt_coll_free(c);
    for (int d = 0; d < n; d++) free(bufs[d]);
    free(src), free(dst);
}

int main(int argc, char **argv) {
    ir_cross_device algo = XDEV_RING;
    for (int k = 0; argc > 1 && k < XDEV_COUNT; k++)
        if (!strcmp(argv[1], ir_cross_device_names[k])) algo = (ir_cross_device)k;
    size_t max_mib = argc > 2 ? (size_t)atoi(argv[2]) : 64;
    if (argc <= 3) {
        bench(2, algo, max_mib << 20);
        bench(4, algo, max_mib << 20);
    }
    for (int k = 3; k < argc; k++) {
        int n = atoi(argv[k]);
        if (n < 1 || n > 8) return fprintf(stderr, "bench_allreduce: devices must be 1..8, not '%s'\n", argv[k]), 2;
        bench(n, algo, max_mib << 20);
    }
    return 0;
}
