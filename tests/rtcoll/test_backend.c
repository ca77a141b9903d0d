/* test_backend.c - the CPU backend through rt_backend_i: stream order, an
 * event wait that really blocks until the record, error propagation and
 * recovery, collectives on comm streams, a missing participant's timeout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../runtime/backend.h"

#include "check.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Copies on one stream run in submission order. */
static void test_order(void) {
    rt_backend *b = start_cpu(1, 1, 5, 0);
    int *x = b->i->alloc(b, 0, 1000 * sizeof(int));
    CHECK(((uintptr_t)x & 63) == 0 && x[999] == 0, "arena block %p not aligned or not zeroed", (void *)x);
    int vals[1000];
    for (int k = 0; k < 1000; k++) {
        vals[k] = k;
        b->i->upload(b, 0, STREAM_COMPUTE, &x[k], &vals[k], sizeof(int));
        if (k) b->i->upload(b, 0, STREAM_COMPUTE, &x[k], &x[k - 1], sizeof(int)); /* x[k] = x[k-1] = ... = 0 */
    }
    CHECK(b->i->sync(b) == 0, "%s", b->err);
    int zeros = 0;
    for (int k = 0; k < 1000; k++) zeros += x[k] == 0;
    CHECK(zeros == 1000, "only %d of 1000 chained copies saw their predecessor", zeros);
    b->i->dealloc(b, 0, x);
    stop_cpu(b);
}

/* comm waits for an event that compute records only later. */
static void test_event_wait(void) {
    rt_backend *b = start_cpu(2, 4, 5, 0);
    int x = 1, y = 0, v = 7, z = 0;
    b->i->wait(b, 0, STREAM_COMM, 2, 1);
    b->i->download(b, 0, STREAM_COMM, &y, &x, sizeof x);
    usleep(100000);
    CHECK(y == 0, "the copy behind the wait ran before the event was recorded (y=%d)", y);
    b->i->upload(b, 0, STREAM_COMPUTE, &x, &v, sizeof v);
    b->i->record(b, 0, STREAM_COMPUTE, 2, 1);
    CHECK(b->i->sync(b) == 0, "%s", b->err);
    CHECK(y == 7, "y=%d: the wait did not see the work before the record", y);
    /* an older generation is already satisfied; a newer one blocks again (across devices too) */
    b->i->wait(b, 1, STREAM_COMPUTE, 2, 1);
    b->i->download(b, 1, STREAM_COMPUTE, &z, &v, sizeof v);
    CHECK(b->i->sync(b) == 0 && z == 7, "z=%d", z);
    b->i->wait(b, 1, STREAM_COMM, 2, 2);
    b->i->download(b, 1, STREAM_COMM, &z, &x, sizeof x);
    x = 9;
    usleep(50000);
    CHECK(z == 7, "a wait for generation 2 passed on generation 1");
    b->i->record(b, 0, STREAM_COMM, 2, 2);
    CHECK(b->i->sync(b) == 0 && z == 9, "z=%d", z);
    CHECK(b->i->record(b, 0, STREAM_COMM, 4, 1) == -1 && !strcmp(b->err, "cpu backend: no event 4 (4 events)"), "%s",
          b->err);
    CHECK(b->i->launch(b, 2, STREAM_COMM, NULL) == -1, "device 2 accepted");
    stop_cpu(b);
}

/* A failing kernel stops later work on every stream; sync reports it once. */
static void test_error(void) {
    rt_backend *b = start_cpu(2, 1, 5, 0);
    ir_node node = {.op = OP_INPUT, .dtype = IR_F32};
    rt_kernel_args k = {.node = &node};
    int x = 0, one = 1;
    b->i->launch(b, 0, STREAM_COMPUTE, &k);
    b->i->upload(b, 0, STREAM_COMPUTE, &x, &one, sizeof one);
    b->i->record(b, 0, STREAM_COMPUTE, 0, 1);
    b->i->wait(b, 1, STREAM_COMM, 0, 1); /* never recorded: must end, not hang */
    b->i->upload(b, 1, STREAM_COMM, &x, &one, sizeof one);
    CHECK(b->i->sync(b) == -1, "sync succeeded after a failing kernel");
    CHECK(!strcmp(b->err, "op 'input': has no CPU kernel"), "err '%s'", b->err);
    CHECK(x == 0, "work after the failure ran");
    b->i->upload(b, 1, STREAM_COMPUTE, &x, &one, sizeof one);
    CHECK(b->i->sync(b) == 0 && x == 1, "the backend did not recover: %s", b->err);
    stop_cpu(b);
}

static void test_collective(void) {
    enum { N = 4, COUNT = 100001 };
    rt_backend *b = start_cpu(N, 1, 5, 0);
    float *buf[N];
    for (int d = 0; d < N; d++) {
        buf[d] = b->i->alloc(b, d, COUNT * sizeof(float));
        for (int i = 0; i < COUNT; i++) buf[d][i] = (float)(d + 1) * 0.5f + (float)(i % 5);
    }
    for (int d = 0; d < N; d++) {
        rt_coll_args a = {.kind = COLL_ALL_REDUCE, .group = 0, .label = "all_reduce bucket 0", .buf = buf[d],
                          .count = COUNT, .dtype = IR_F32, .mean = 1, .algo = XDEV_RING};
        CHECK(b->i->collective(b, d, STREAM_COMM, &a) == 0, "%s", b->err);
        a.kind = COLL_BROADCAST, a.root = 2, a.label = "broadcast";
        CHECK(b->i->collective(b, d, STREAM_COMM, &a) == 0, "%s", b->err);
    }
    CHECK(b->i->sync(b) == 0, "%s", b->err);
    for (int d = 0; d < N; d++)
        CHECK(buf[d][7] == 1.25f + 2 && buf[d][5] == 1.25f && buf[d][COUNT - 1] == 1.25f + 0, "cpu:%d has %g %g", d, buf[d][7], buf[d][5]);
    stop_cpu(b);
}

/* cpu:1 and cpu:3 never issue the collective: sync fails within ~timeout,
 * and shutdown does not hang. */
static void test_timeout(void) {
    rt_backend *b = start_cpu(4, 1, 0.5, 0);
    float buf[4][8] = {{0}};
    int x = 0, one = 1;
    for (int d = 0; d < 4; d += 2) {
        rt_coll_args a = {.kind = COLL_ALL_REDUCE, .group = 3, .label = "all_reduce bucket 3", .buf = buf[d],
                          .count = 8, .dtype = IR_F32, .algo = XDEV_HIERARCHICAL};
        b->i->collective(b, d, STREAM_COMM, &a);
        b->i->upload(b, d, STREAM_COMM, &x, &one, sizeof one);
    }
    double t0 = now_s();
    int rc = b->i->sync(b);
    double took = now_s() - t0;
    CHECK(rc == -1, "sync succeeded");
    CHECK(!strcmp(b->err, "collective timeout after 0.5 s: all_reduce bucket 3 is missing cpu:1, cpu:3"), "err '%s'",
          b->err);
    CHECK(took >= 0.45 && took < 1.0, "took %.2f s", took);
    CHECK(x == 0, "work after the failed collective ran");
    t0 = now_s();
    stop_cpu(b);
    CHECK(now_s() - t0 < 0.2, "shutdown took %.2f s", now_s() - t0);
}

int main(void) {
    test_order();
    test_event_wait();
    test_error();
    test_collective();
    test_timeout();
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("cpu backend: all checks passed\n");
    return 0;
}
