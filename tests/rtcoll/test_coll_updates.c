/* test_coll_updates.c - a bucket's optimizer updates inside its all-reduce
 * (rt_coll_args.updates; docs/runtime.md, "Updates inside the all-reduce"):
 * on 2, 3 and 4 devices, with the three algorithms, for SGD with momentum,
 * Adam, Nadam, RMSprop and Adagrad over 3 steps, every device's params and
 * slots must hold the bytes of the all-reduce followed by each device's own
 * update (the reference, run here the plain way). The bucket's params are
 * sized so that device chunks and update blocks start inside them. Then a
 * device that brings fewer updates than the others fails the meeting. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../../runtime/collectives.h"
#include "../kern/harness.h"

enum { MAX_DEV = 4, N_PARAMS = 4, STEPS = 3 };
static const int64_t sizes[N_PARAMS] = {37, 20000, 5, 40000}; /* bucket 60042: blocks of 16384 cross them */

typedef struct {
    const char *name;
    ir_op op;
    int n_slots;
    double f[IR_MAX_FATTR];
    int nesterov;
} ucase;

static const ucase cases[] = {
    {"sgd momentum", OP_SGD_UPDATE, 1, {0.1, 0.9, 0.01}, 0},
    {"adamw", OP_ADAM_UPDATE, 2, {1e-2, 0.9, 0.999, 1e-7, 0.004}, 0},
    {"nadam", OP_NADAM_UPDATE, 2, {1e-2, 0.9, 0.999, 1e-7, 0.01}, 0},
    {"rmsprop momentum", OP_RMSPROP_UPDATE, 2, {1e-2, 0.9, 0.5, 1e-7, 0.01}, 0},
    {"adagrad", OP_ADAGRAD_UPDATE, 1, {0.1, 0.1, 1e-7, 0.01}, 0},
};

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

static void run_jobs(job *jobs, int n) {
    pthread_t t[MAX_DEV];
    for (int k = 0; k < n; k++) pthread_create(&t[k], NULL, job_main, &jobs[k]);
    for (int k = 0; k < n; k++) pthread_join(t[k], NULL);
}

/* A value in [-1, 1) from (a, b, c). */
static float value(uint64_t a, uint64_t b, uint64_t c) {
    uint64_t x = a * 0x9E3779B97F4A7C15ull + b * 0xBF58476D1CE4E5B9ull + c * 0x94D049BB133111EBull + 1;
    x ^= x >> 31, x *= 0x94D049BB133111EBull, x ^= x >> 29;
    return (float)((double)(x >> 11) / 4503599627370496.0 - 1);
}

/* One replica's variables: param u's update op (p, g, slots) */
typedef struct {
    one_op op[N_PARAMS];
    float *bucket;
    rt_coll_update updates[N_PARAMS];
} replica;

static int build(replica *r, const ucase *c) {
    char err[256];
    int n_in = 2 + c->n_slots;
    memset(r, 0, sizeof *r);
    for (int u = 0; u < N_PARAMS; u++) {
        ir_shape s[4];
        ir_dtype dt[4] = {IR_F32, IR_F32, IR_F32, IR_F32};
        for (int k = 0; k < n_in; k++) s[k] = (ir_shape){.rank = 1, .dim = {sizes[u]}};
        if (kh_build(&r->op[u], c->op, n_in, s, dt, (int64_t[IR_MAX_IATTR]){c->nesterov}, c->f, NULL, 0, err,
                     sizeof err))
            return fprintf(stderr, "FAIL %s: %s\n", c->name, err), -1;
        for (int k = 0; k < n_in; k++)
            for (int64_t i = 0; i < sizes[u]; i++) ((float *)r->op[u].in[k])[i] = k == 0 ? value(u, i, 7) : 0;
    }
    int64_t offset = 0;
    for (int u = 0; u < N_PARAMS; u++) r->updates[u] = (rt_coll_update){&r->op[u].args, offset}, offset += sizes[u];
    r->bucket = malloc((size_t)offset * sizeof(float));
    return 0;
}

static void release(replica *r) {
    for (int u = 0; u < N_PARAMS; u++) kh_free(&r->op[u]);
    free(r->bucket);
}

/* Device d's gradients of step t into its bucket. */
static void fill_gradients(replica *r, int d, int t, int64_t count) {
    for (int64_t i = 0; i < count; i++) r->bucket[i] = value(100 + d, i, t);
}

static rt_coll_args args_of(replica *r, int64_t count, ir_cross_device algo, bool updates) {
    return (rt_coll_args){.kind = COLL_ALL_REDUCE, .label = "all_reduce bucket 0", .buf = r->bucket, .count = count,
                          .dtype = IR_F32, .mean = 1, .algo = algo, .updates = updates ? r->updates : NULL,
                          .n_updates = updates ? N_PARAMS : 0, .run_update = cpu_kernel_run};
}

/* STEPS steps both ways on n devices; 0 when every device's params and slots match the reference's bytes */
static int run(const ucase *c, int n, ir_cross_device algo) {
    replica ref[MAX_DEV], fused[MAX_DEV];
    int64_t count = 0, differ = 0;
    for (int u = 0; u < N_PARAMS; u++) count += sizes[u];
    rt_coll *coll = rt_coll_new(n, 0, n, NULL);
    int bad = 0;
    for (int d = 0; d < n; d++) bad |= build(&ref[d], c) | build(&fused[d], c);
    for (int t = 1; t <= STEPS && !bad; t++) {
        job jobs[MAX_DEV];
        char err[256];
        for (int d = 0; d < n; d++) {
            fill_gradients(&ref[d], d, t, count);
            jobs[d] = (job){.c = coll, .device = d, .a = args_of(&ref[d], count, algo, false)};
        }
        run_jobs(jobs, n);
        for (int d = 0; d < n && !bad; d++)
            for (int u = 0; u < N_PARAMS && !bad; u++) {
                one_op *o = &ref[d].op[u];
                memcpy(o->in[1], ref[d].bucket + ref[d].updates[u].offset, (size_t)sizes[u] * sizeof(float));
                o->step = t;
                bad |= jobs[d].rc || kh_run(o, err, sizeof err);
            }
        for (int d = 0; d < n; d++) {
            fill_gradients(&fused[d], d, t, count);
            for (int u = 0; u < N_PARAMS; u++) fused[d].op[u].step = t;
            jobs[d] = (job){.c = coll, .device = d, .a = args_of(&fused[d], count, algo, true)};
        }
        run_jobs(jobs, n);
        for (int d = 0; d < n; d++) {
            if (jobs[d].rc) fprintf(stderr, "FAIL %s: %s\n", c->name, jobs[d].err), bad = 1;
            for (int u = 0; u < N_PARAMS; u++)
                for (int k = 0; k < 2 + c->n_slots; k++)
                    if (k != 1 && memcmp(ref[d].op[u].in[k], fused[d].op[u].in[k], (size_t)sizes[u] * sizeof(float)))
                        differ++;
        }
    }
    printf("  %-17s %d devices, %-12s: %lld tensors differ\n", c->name, n, ir_cross_device_names[algo],
           (long long)differ);
    for (int d = 0; d < n; d++) release(&ref[d]), release(&fused[d]);
    rt_coll_free(coll);
    if (differ) fprintf(stderr, "FAIL %s on %d devices: %lld tensors differ from the reference\n", c->name, n,
                        (long long)differ);
    return bad || differ;
}

/* Device 1 brings one update fewer: both devices fail, naming the counts
 * (the one that arrives second names itself). */
static int mismatch(void) {
    replica r[2];
    int64_t count = 0;
    for (int u = 0; u < N_PARAMS; u++) count += sizes[u];
    if (build(&r[0], &cases[1]) || build(&r[1], &cases[1])) return 1;
    rt_coll *coll = rt_coll_new(2, 0, 2, NULL);
    job jobs[2];
    for (int d = 0; d < 2; d++) jobs[d] = (job){.c = coll, .device = d, .a = args_of(&r[d], count, XDEV_RING, true)};
    jobs[1].a.n_updates = N_PARAMS - 1;
    run_jobs(jobs, 2);
    const char *want[2] = {"all_reduce bucket 0: cpu:0 has 4 optimizer updates in it, another device 3",
                           "all_reduce bucket 0: cpu:1 has 3 optimizer updates in it, another device 4"};
    int ok = jobs[0].rc && jobs[1].rc && !strcmp(jobs[0].err, jobs[1].err) &&
             (!strcmp(jobs[0].err, want[0]) || !strcmp(jobs[0].err, want[1]));
    printf("  mismatched updates: %s\n", jobs[0].err);
    if (!ok) fprintf(stderr, "FAIL mismatched updates: want both devices to fail with \"%s\" or \"%s\", got \"%s\" / \"%s\"\n",
                     want[0], want[1], jobs[0].err, jobs[1].err);
    for (int d = 0; d < 2; d++) release(&r[d]);
    rt_coll_free(coll);
    return !ok;
}

int main(void) {
    static const ir_cross_device algos[] = {XDEV_RING, XDEV_ONE_DEVICE, XDEV_HIERARCHICAL};
    int failed = 0, n = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int devices = 2; devices <= MAX_DEV; devices++)
            for (size_t a = 0; a < sizeof algos / sizeof *algos; a++) failed += run(&cases[i], devices, algos[a]), n++;
    failed += mismatch(), n++;
    printf("%d runs, %d failed\n", n, failed);
    return failed != 0;
}
