/* test_mpi.c - run by mpirun -np 3: the MPI process level alone and under
 * the hierarchical collectives (2 local devices per rank, 6 replicas).
 * "test_rt_mpi timeout": rank 2 never joins; ranks 0 and 1 must fail within
 * the 0.5 s timeout with the named error (and then exit 1, as mgc would).
 * "test_rt_mpi die": the same with rank 2 killed by SIGKILL. */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../runtime/collectives.h"
#include "../../runtime/mpi.h"

enum { LOCAL = 2, COUNT = 100003 };

static int failures, rank;
#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", rank, __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fputc('\n', stderr);                                                              \
            failures++;                                                                       \
        }                                                                                     \
    } while (0)

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float input(int replica, int64_t i) { return (float)((i * 7 + replica * 13) % 101) * 0.01f - 0.5f; }

typedef struct {
    rt_coll *c;
    int device;
    rt_coll_args a;
    int rc;
    char err[512];
} job;

static void *job_main(void *arg) {
    job *j = arg;
    j->rc = rt_coll_run(j->c, j->device, &j->a, 10, j->err, sizeof j->err);
    return NULL;
}

static void run_local(job *jobs) {
    pthread_t t[LOCAL];
    for (int d = 0; d < LOCAL; d++) pthread_create(&t[d], NULL, job_main, &jobs[d]);
    for (int d = 0; d < LOCAL; d++) pthread_join(t[d], NULL);
    for (int d = 0; d < LOCAL; d++) CHECK(jobs[d].rc == 0, "%s", jobs[d].err);
}

/* Every algorithm's mean over 6 replicas; bit-identical on every rank. */
static void test_all_reduce(rt_interprocess *ip) {
    rt_coll *c = rt_coll_new(LOCAL, rank * LOCAL, LOCAL * ip->size, ip);
    float *buf[LOCAL], *first = malloc(COUNT * sizeof(float));
    char err[512];
    for (int d = 0; d < LOCAL; d++) buf[d] = malloc(COUNT * sizeof(float));
    for (int algo = 0; algo < XDEV_COUNT; algo++) {
        job jobs[LOCAL];
        for (int d = 0; d < LOCAL; d++) {
            for (int64_t i = 0; i < COUNT; i++) buf[d][i] = input(rank * LOCAL + d, i);
            jobs[d] = (job){.c = c, .device = d,
                            .a = {.kind = COLL_ALL_REDUCE, .group = 1, .label = "all_reduce bucket 1", .buf = buf[d],
                                  .count = COUNT, .dtype = IR_F32, .mean = 1, .algo = algo}};
        }
        run_local(jobs);
        int64_t bad = -1;
        for (int64_t i = 0; i < COUNT && bad < 0; i++) {
            double want = 0;
            for (int r = 0; r < LOCAL * ip->size; r++) want += input(r, i);
            if (fabs(buf[0][i] - want / (LOCAL * ip->size)) > 1e-6) bad = i;
        }
        CHECK(bad < 0, "%s: element %lld", ir_cross_device_names[algo], (long long)bad);
        CHECK(!memcmp(buf[0], buf[1], COUNT * sizeof(float)), "local devices differ");
        memcpy(first, buf[0], COUNT * sizeof(float));
        CHECK(!ip->broadcast(ip->ctx, first, COUNT * sizeof(float), 0, 10, "check", err, sizeof err), "%s", err);
        CHECK(!memcmp(first, buf[0], COUNT * sizeof(float)), "%s: rank %d differs from rank 0",
              ir_cross_device_names[algo], rank);
    }
    /* broadcast from replica 3 (rank 1, local device 1) */
    job jobs[LOCAL];
    for (int d = 0; d < LOCAL; d++) {
        for (int64_t i = 0; i < COUNT; i++) buf[d][i] = input(rank * LOCAL + d, i);
        jobs[d] = (job){.c = c, .device = d,
                        .a = {.kind = COLL_BROADCAST, .group = 7, .label = "broadcast of 'w'", .buf = buf[d],
                              .count = COUNT, .dtype = IR_F32, .root = 3}};
    }
    run_local(jobs);
    for (int d = 0; d < LOCAL; d++) CHECK(buf[d][COUNT - 1] == input(3, COUNT - 1) && buf[d][5] == input(3, 5), "bcast");
    rt_coll_free(c);
    for (int d = 0; d < LOCAL; d++) free(buf[d]);
    free(first);
}

/* Rank 2 never joins: ranks 0 and 1 fail within the timeout. */
static int test_timeout(rt_interprocess *ip, int die) {
    double v = 1, t0 = now_s();
    char err[512];
    if (rank == 2 && die) raise(SIGKILL);
    if (rank == 2) {
        sleep(5); /* "stuck": mpirun ends the job when the others exit */
        return 0;
    }
    int rc = ip->all_reduce_sum(ip->ctx, &v, 1, IR_F64, 0.5, "all_reduce bucket 0", err, sizeof err);
    double took = now_s() - t0;
    char want[256];
    snprintf(want, sizeof want,
             "collective timeout after 0.5 s: all_reduce bucket 0 across processes: rank %d of 3 waited, "
             "another rank never arrived (it died or stopped)", rank);
    CHECK(rc == -1 && !strcmp(err, want), "got %d '%s'", rc, err);
    CHECK(took >= 0.45 && took < 1.0, "took %.2f s", took);
    if (!failures) printf("rank %d: timed out as expected\n", rank);
    fflush(stdout);
    rt_mpi_finalize(ip); /* a request is stale: frees state, leaves MPI to the exit */
    return 1;
}

int main(int argc, char **argv) {
    char err[512];
    rt_interprocess *ip = rt_mpi_init(60, err, sizeof err);
    if (!ip) {
        fprintf(stderr, "test_rt_mpi: expected mpirun with 3 processes: %s\n", err[0] ? err : "one process");
        return 1;
    }
    rank = ip->rank;
    if (argc > 1 && !strcmp(argv[1], "timeout")) return test_timeout(ip, 0);
    if (argc > 1 && !strcmp(argv[1], "die")) return test_timeout(ip, 1);
    double v[2] = {rank, 1};
    CHECK(!ip->all_reduce_sum(ip->ctx, v, 2, IR_F64, 10, "sum", err, sizeof err) && v[0] == 3 && v[1] == 3, "%s", err);
    test_all_reduce(ip);
    rt_mpi_finalize(ip);
    if (failures) return 1;
    if (rank == 0) printf("mpi: all checks passed on 3 processes\n");
    return 0;
}
