/* test_collectives.c - shared-memory all-reduce and broadcast through the
 * direct API: 1..8 devices, sizes 1 .. 16M elements, the three algorithms
 * against a double-precision sum, bit-identical on every device, ring and
 * one-device bit-identical to each other; a fake process level; a
 * participant that never arrives. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../runtime/collectives.h"

#include "check.h"

typedef struct {
    rt_coll *c;
    int device;
    rt_coll_args a;
    double timeout;
    int rc;
    char err[512];
} job;

static void *job_main(void *arg) {
    job *j = arg;
    j->rc = rt_coll_run(j->c, j->device, &j->a, j->timeout, j->err, sizeof j->err);
    return NULL;
}

/* Runs jobs[0..n) each on its own thread, skipping those with device < 0. */
static void run_jobs(job *jobs, int n) {
    pthread_t t[64];
    for (int k = 0; k < n; k++)
        if (jobs[k].device >= 0) pthread_create(&t[k], NULL, job_main, &jobs[k]);
    for (int k = 0; k < n; k++)
        if (jobs[k].device >= 0) pthread_join(t[k], NULL);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A value in [-1, 1) for element i of device d. */
static float input(int d, int64_t i) {
    uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull + (uint64_t)d * 0xBF58476D1CE4E5B9ull + 1;
    x ^= x >> 31, x *= 0x94D049BB133111EBull, x ^= x >> 29;
    return (float)((double)(x >> 40) / (double)(1 << 23) - 1.0);
}

/* All-reduce of count floats over n devices; compares with the double sum. */
static void check_all_reduce(rt_coll *c, int n, int64_t count, ir_cross_device algo, int mean, float **bufs) {
    job jobs[8];
    for (int d = 0; d < n; d++) {
        for (int64_t i = 0; i < count; i++) bufs[d][i] = input(d, i);
        jobs[d] = (job){.c = c, .device = d, .timeout = 30,
                        .a = {.kind = COLL_ALL_REDUCE, .group = 3, .label = "all_reduce bucket 3", .buf = bufs[d],
                              .count = count, .dtype = IR_F32, .mean = mean, .algo = algo}};
    }
    run_jobs(jobs, n);
    for (int d = 0; d < n; d++) CHECK(jobs[d].rc == 0, "n=%d: %s", n, jobs[d].err);
    int64_t bad = -1;
    for (int64_t i = 0; i < count && bad < 0; i++) {
        double sum = 0, abs_sum = 0;
        for (int d = 0; d < n; d++) sum += input(d, i), abs_sum += fabs(input(d, i));
        if (mean) sum /= n, abs_sum /= n;
        if (fabs(bufs[0][i] - sum) > n * 1.2e-7 * abs_sum + 1e-30) bad = i;
    }
    CHECK(bad < 0, "%s n=%d count=%lld mean=%d: element %lld is %.9g", ir_cross_device_names[algo], n,
          (long long)count, mean, (long long)bad, bad >= 0 ? bufs[0][bad] : 0);
    /* ring and one-device: exactly the float sum in device order, then / n
     * (the mean's bits, whether the runtime divides or scales by 1/n) */
    for (int64_t i = 0; algo != XDEV_HIERARCHICAL && i < count && bad < 0; i++) {
        float sum = input(0, i);
        for (int d = 1; d < n; d++) sum += input(d, i);
        if (mean) sum /= (float)n;
        if (memcmp(&sum, &bufs[0][i], sizeof sum)) bad = i;
    }
    CHECK(bad < 0, "%s n=%d count=%lld mean=%d: element %lld is %.9g, not the float sum in device order",
          ir_cross_device_names[algo], n, (long long)count, mean, (long long)bad, bad >= 0 ? bufs[0][bad] : 0);
    for (int d = 1; d < n; d++)
        CHECK(!memcmp(bufs[d], bufs[0], (size_t)count * sizeof(float)), "%s n=%d count=%lld: cpu:%d differs from cpu:0",
              ir_cross_device_names[algo], n, (long long)count, d);
}

static void test_all_reduce(void) {
    const int64_t sizes[] = {1, 7, 1000, (1 << 20) + 3, 16 << 20};
    float *bufs[8];
    for (int d = 0; d < 8; d++) bufs[d] = malloc((size_t)(16 << 20) * sizeof(float));
    for (int n = 1; n <= 8; n++) {
        rt_coll *c = rt_coll_new(n, 0, n, NULL);
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            for (int algo = 0; algo < XDEV_COUNT; algo++) {
                /* 64 MiB buffers: every algorithm on 2 devices, the ring on 8 */
                if (sizes[s] == 16 << 20 && !(n == 2 || (n == 8 && algo == XDEV_RING))) continue;
                check_all_reduce(c, n, sizes[s], algo, s % 2, bufs);
            }
        rt_coll_free(c);
    }
    for (int d = 0; d < 8; d++) free(bufs[d]);
}

/* The same collective repeated and interleaved across groups meets by call count. */
static void test_repeated(void) {
    float *bufs[5];
    for (int d = 0; d < 5; d++) bufs[d] = malloc(5000 * sizeof(float));
    rt_coll *c = rt_coll_new(5, 0, 5, NULL);
    for (int round = 0; round < 20; round++) check_all_reduce(c, 5, 4999 - round, round % XDEV_COUNT, round % 2, bufs);
    rt_coll_free(c);
    for (int d = 0; d < 5; d++) free(bufs[d]);
}

static void test_dtypes(void) {
    enum { N = 3, COUNT = 1001 };
    double f64[N][COUNT];
    int32_t i32[N][COUNT];
    rt_coll *c = rt_coll_new(N, 0, N, NULL);
    job jobs[N];
    for (int d = 0; d < N; d++) {
        for (int i = 0; i < COUNT; i++) f64[d][i] = 0.25 * (d + 1) * i, i32[d][i] = d * 1000 + i;
        jobs[d] = (job){.c = c, .device = d, .timeout = 5,
                        .a = {.kind = COLL_ALL_REDUCE, .group = 0, .label = "f64", .buf = f64[d], .count = COUNT,
                              .dtype = IR_F64, .mean = 1, .algo = XDEV_RING}};
    }
    run_jobs(jobs, N);
    for (int d = 0; d < N; d++) {
        CHECK(jobs[d].rc == 0, "%s", jobs[d].err);
        CHECK(f64[d][10] == 0.25 * 6 * 10 / 3, "f64 mean %g", f64[d][10]);
        jobs[d].a = (rt_coll_args){.kind = COLL_ALL_REDUCE, .group = 1, .label = "i32", .buf = i32[d], .count = COUNT,
                                   .dtype = IR_I32, .algo = XDEV_HIERARCHICAL};
    }
    run_jobs(jobs, N);
    for (int d = 0; d < N; d++) CHECK(jobs[d].rc == 0 && i32[d][7] == 3000 + 21, "i32 sum %d: %s", i32[d][7], jobs[d].err);
    rt_coll_free(c);
}

static void test_broadcast(void) {
    for (int n = 1; n <= 8; n += 3) {
        rt_coll *c = rt_coll_new(n, 0, n, NULL);
        float *bufs[8];
        job jobs[8];
        int64_t count = 100003;
        for (int root = 0; root < n; root++) {
            for (int d = 0; d < n; d++) {
                bufs[d] = malloc((size_t)count * sizeof(float));
                for (int64_t i = 0; i < count; i++) bufs[d][i] = input(d, i);
                jobs[d] = (job){.c = c, .device = d, .timeout = 5,
                                .a = {.kind = COLL_BROADCAST, .group = 9, .label = "broadcast of 'w'", .buf = bufs[d],
                                      .count = count, .dtype = IR_F32, .root = root}};
            }
            run_jobs(jobs, n);
            for (int d = 0; d < n; d++) {
                CHECK(jobs[d].rc == 0, "%s", jobs[d].err);
                int same = 1;
                for (int64_t i = 0; i < count && same; i++) same = bufs[d][i] == input(root, i);
                CHECK(same, "broadcast n=%d root=%d: cpu:%d does not hold the root's values", n, root, d);
            }
            for (int d = 0; d < n; d++) free(bufs[d]);
        }
        rt_coll_free(c);
    }
}

/* A fake process level: another process with the same values (sum doubles). */
static int fake_sum(void *ctx, void *buf, int64_t count, ir_dtype dtype, double timeout_s, const char *label, char *err,
                    size_t cap) {
    (void)timeout_s, (void)dtype;
    if (ctx) return snprintf(err, cap, "%s: fake MPI failure", label), -1;
    for (int64_t i = 0; i < count; i++) ((float *)buf)[i] *= 2;
    return 0;
}

static int fake_bcast(void *ctx, void *buf, int64_t bytes, int root, double timeout_s, const char *label, char *err,
                      size_t cap) {
    (void)ctx, (void)timeout_s, (void)label, (void)err, (void)cap;
    if (root != 1) memset(buf, 0, (size_t)bytes); /* "another process" owns the root: zeros */
    return 0;
}

static void test_processes(void) {
    enum { N = 4, COUNT = 12345 };
    rt_interprocess ip = {.rank = 1, .size = 2, .all_reduce_sum = fake_sum, .broadcast = fake_bcast};
    float *bufs[N], *want = malloc(COUNT * sizeof(float));
    job jobs[N];
    for (int algo = 0; algo < XDEV_COUNT; algo++) {
        rt_coll *c = rt_coll_new(N, 4, 8, &ip), *lone = rt_coll_new(N, 0, 4, NULL);
        for (int d = 0; d < N; d++) bufs[d] = malloc(COUNT * sizeof(float));
        check_all_reduce(lone, N, COUNT, algo, 1, bufs); /* local mean = global mean (identical processes) */
        memcpy(want, bufs[0], COUNT * sizeof(float));
        for (int d = 0; d < N; d++) {
            for (int64_t i = 0; i < COUNT; i++) bufs[d][i] = input(d, i);
            jobs[d] = (job){.c = c, .device = d, .timeout = 5,
                            .a = {.kind = COLL_ALL_REDUCE, .group = 0, .label = "all_reduce bucket 0", .buf = bufs[d],
                                  .count = COUNT, .dtype = IR_F32, .mean = 1, .algo = algo}};
        }
        run_jobs(jobs, N);
        for (int d = 0; d < N; d++) {
            CHECK(jobs[d].rc == 0, "%s", jobs[d].err);
            double worst = 0;
            for (int64_t i = 0; i < COUNT; i++) worst = fmax(worst, fabs(bufs[d][i] - want[i]));
            CHECK(worst < 1e-6, "%s across processes: cpu:%d off by %g", ir_cross_device_names[algo], 4 + d, worst);
            CHECK(!memcmp(bufs[d], bufs[0], COUNT * sizeof(float)), "cpu:%d differs", 4 + d);
            jobs[d].a.kind = COLL_BROADCAST, jobs[d].a.root = 5, jobs[d].a.label = "broadcast of 'w'";
        }
        bufs[1][0] = 42;
        run_jobs(jobs, N); /* root replica 5 is local device 1 of rank 1 */
        for (int d = 0; d < N; d++) CHECK(jobs[d].rc == 0 && bufs[d][0] == 42, "broadcast: %g %s", bufs[d][0], jobs[d].err);
        rt_coll_free(c), rt_coll_free(lone);
        for (int d = 0; d < N; d++) free(bufs[d]);
    }
    /* a failing process level fails every local device with its message */
    ip.ctx = &ip;
    rt_coll *c = rt_coll_new(N, 4, 8, &ip);
    for (int d = 0; d < N; d++) bufs[d] = calloc(10, sizeof(float)), jobs[d].a.buf = bufs[d], jobs[d].a.count = 10;
    for (int d = 0; d < N; d++) jobs[d].a.kind = COLL_ALL_REDUCE, jobs[d].a.label = "all_reduce bucket 0";
    for (int d = 0; d < N; d++) jobs[d].c = c;
    run_jobs(jobs, N);
    for (int d = 0; d < N; d++)
        CHECK(jobs[d].rc == -1 && !strcmp(jobs[d].err, "all_reduce bucket 0: fake MPI failure"), "got %d '%s'",
              jobs[d].rc, jobs[d].err);
    rt_coll_free(c);
    for (int d = 0; d < N; d++) free(bufs[d]);
    free(want);
}

/* cpu:1 and cpu:3 never arrive: cpu:0 and cpu:2 fail within the timeout. */
static void test_timeout(void) {
    rt_coll *c = rt_coll_new(4, 0, 4, NULL);
    float bufs[4][16] = {{0}};
    job jobs[4];
    for (int d = 0; d < 4; d++)
        jobs[d] = (job){.c = c, .device = d % 2 ? -1 : d, .timeout = 0.5,
                        .a = {.kind = COLL_ALL_REDUCE, .group = 3, .label = "all_reduce bucket 3", .buf = bufs[d],
                              .count = 16, .dtype = IR_F32, .algo = XDEV_RING}};
    double start = now_s();
    run_jobs(jobs, 4);
    double took = now_s() - start;
    const char *want = "collective timeout after 0.5 s: all_reduce bucket 3 is missing cpu:1, cpu:3";
    for (int d = 0; d < 4; d += 2)
        CHECK(jobs[d].rc == -1 && !strcmp(jobs[d].err, want), "cpu:%d got %d '%s'", d, jobs[d].rc, jobs[d].err);
    CHECK(took >= 0.45 && took < 1.0, "took %.2f s", took);
    /* after a reset, all four meet again */
    rt_coll_reset(c);
    for (int d = 0; d < 4; d++) jobs[d].device = d;
    run_jobs(jobs, 4);
    for (int d = 0; d < 4; d++) CHECK(jobs[d].rc == 0, "after reset: %s", jobs[d].err);
    rt_coll_free(c);
}

/* Ring and one-device sum in the same order, so they give the same bits. */
static void test_ring_matches_one_device(void) {
    const int64_t count = (1 << 18) + 5;
    float *bufs[8], *ring = malloc((size_t)count * sizeof(float));
    for (int d = 0; d < 8; d++) bufs[d] = malloc((size_t)count * sizeof(float));
    for (int n = 2; n <= 8; n++) {
        rt_coll *c = rt_coll_new(n, 0, n, NULL);
        check_all_reduce(c, n, count, XDEV_RING, 1, bufs);
        memcpy(ring, bufs[0], (size_t)count * sizeof(float));
        check_all_reduce(c, n, count, XDEV_ONE_DEVICE, 1, bufs);
        CHECK(!memcmp(ring, bufs[0], (size_t)count * sizeof(float)), "n=%d: ring and one-device differ", n);
        rt_coll_free(c);
    }
    for (int d = 0; d < 8; d++) free(bufs[d]);
    free(ring);
}

/* ---- issue 13: all_gather ---- */

/* Element i of global replica r's block, as the bits of an f32 or an i32. */
static uint32_t gathered(int r, int64_t i) {
    float f = input(r, i);
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* n local devices (global replicas base..base+n of total) gather blocks of
 * `block` 4-byte elements; every device ends with every block, bit for bit. */
static void check_all_gather(rt_coll *c, int n, int base, int total, int64_t block, ir_dtype dtype, job *jobs,
                             uint32_t **bufs) {
    int64_t count = block * total;
    for (int d = 0; d < n; d++) {
        for (int64_t i = 0; i < count; i++) bufs[d][i] = 0xdeadbeef; /* garbage where others' blocks go */
        for (int64_t i = 0; i < block; i++) bufs[d][(base + d) * block + i] = gathered(base + d, i);
        jobs[d] = (job){.c = c, .device = d, .timeout = 5,
                        .a = {.kind = COLL_ALL_GATHER, .group = 0, .label = "all_gather of the ids of 'e'",
                              .buf = bufs[d], .count = count, .dtype = dtype}};
    }
    run_jobs(jobs, n);
    for (int d = 0; d < n; d++) {
        CHECK(jobs[d].rc == 0, "%s", jobs[d].err);
        int64_t wrong = 0;
        for (int r = 0; r < total; r++)
            for (int64_t i = 0; i < block; i++) wrong += bufs[d][r * block + i] != gathered(r, i);
        CHECK(!wrong, "all_gather n=%d block=%lld: cpu:%d has %lld wrong elements", n, (long long)block, base + d,
              (long long)wrong);
    }
}

/* The other process (replicas 0 and 1) adds its blocks to the zeros left for them. */
static int fake_gather_sum(void *ctx, void *buf, int64_t count, ir_dtype dtype, double timeout_s, const char *label,
                           char *err, size_t cap) {
    (void)ctx, (void)timeout_s, (void)label, (void)err, (void)cap;
    int64_t block = count / 4;
    for (int r = 0; r < 2; r++)
        for (int64_t i = 0; i < block; i++) {
            uint32_t *u = (uint32_t *)buf + r * block + i, v = gathered(r, i);
            if (dtype == IR_F32) {
                float a, b;
                memcpy(&a, u, 4), memcpy(&b, &v, 4);
                a += b;
                memcpy(u, &a, 4);
            } else {
                *u += v;
            }
        }
    return 0;
}

static void test_all_gather(void) {
    enum { MAX = 5 };
    const int64_t blocks[] = {1, 17, 5003};
    uint32_t *bufs[MAX];
    job jobs[MAX];
    for (int d = 0; d < MAX; d++) bufs[d] = malloc(5003 * MAX * sizeof(uint32_t));
    for (int n = 1; n <= MAX; n++) {
        rt_coll *c = rt_coll_new(n, 0, n, NULL);
        for (int b = 0; b < 3; b++)
            for (int k = 0; k < 3; k++) /* repeated, in both dtypes */
                check_all_gather(c, n, 0, n, blocks[b], k % 2 ? IR_I32 : IR_F32, jobs, bufs);
        rt_coll_free(c);
    }
    /* this process runs replicas 2 and 3 of 4; the process level sums zero-padded blocks */
    rt_interprocess ip = {.rank = 1, .size = 2, .all_reduce_sum = fake_gather_sum, .broadcast = fake_bcast};
    rt_coll *c = rt_coll_new(2, 2, 4, &ip);
    check_all_gather(c, 2, 2, 4, 777, IR_F32, jobs, bufs);
    check_all_gather(c, 2, 2, 4, 777, IR_I32, jobs, bufs);
    rt_coll_free(c);
    /* a device that never arrives is named; a count that does not split is refused */
    c = rt_coll_new(3, 0, 3, NULL);
    for (int d = 0; d < 3; d++)
        jobs[d] = (job){.c = c, .device = d == 1 ? -1 : d, .timeout = 0.3,
                        .a = {.kind = COLL_ALL_GATHER, .group = 2, .label = "all_gather of the rows of 'e'",
                              .buf = bufs[d], .count = 30, .dtype = IR_F32}};
    run_jobs(jobs, 3);
    const char *want = "collective timeout after 0.3 s: all_gather of the rows of 'e' is missing cpu:1";
    for (int d = 0; d < 3; d += 2)
        CHECK(jobs[d].rc == -1 && !strcmp(jobs[d].err, want), "cpu:%d got %d '%s'", d, jobs[d].rc, jobs[d].err);
    rt_coll_reset(c);
    char err[256] = "";
    jobs[0].a.count = 31;
    CHECK(rt_coll_run(c, 0, &jobs[0].a, 1, err, sizeof err) == -1 &&
              !strcmp(err, "all_gather of the rows of 'e': 31 elements do not split into 3 replicas' blocks"),
          "got '%s'", err);
    rt_coll_free(c);
    for (int d = 0; d < MAX; d++) free(bufs[d]);
}

int main(void) {
    test_all_gather();
    test_timeout();
    test_dtypes();
    test_broadcast();
    test_processes();
    test_repeated();
    test_all_reduce();
    test_ring_matches_one_device();
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("collectives: all checks passed\n");
    return 0;
}
