/* test_races.c - the plan verifier's race check (ir/races.c).
 *
 * Hand-made plans with a race, a clobbered value, a clobbered result and a
 * deadlock are each rejected with the exact message; then every model named
 * on the command line, compiled for 1, 2 and 4 devices with --bucket-bytes 1,
 * 64, 1 MiB and the default, passes the check (which pass_run_all runs on
 * every compile) and, on several devices, has cross-stream pairs of
 * overlapping accesses that the check found ordered - so the sweep is not
 * vacuous - and gets the same problems and pairs as the pairwise reference
 * (ir_check_races_pairwise), as do mutants of it with moved bytes or
 * dropped waits; and memplan's first fit places every root of it where the
 * quadratic rescan (pass_options.memplan_rescan) does; and on several
 * devices the loss and metrics' all-reduce comes before every gradient
 * bucket's on each comm stream (replicate.c).
 *   test_irplan_races STDLIB_DIR MODEL.mg... */
#include <string.h>

#include "../../ir/order.h"
#include "../../passes/passes.h"
#include "fixture.h"

typedef struct {
    int n;
    char first[512];
} collected;

static void collect(void *ctx, const char *msg) {
    collected *c = ctx;
    if (c->n++ == 0) snprintf(c->first, sizeof c->first, "%s", msg);
}

#define N(i) ir_node_at(m, (i))

/* The race check of m finds problems, the first of them `want`. */
static void expect_first(ir_module *m, const char *want) {
    collected c = {0};
    int n = ir_check_races(m, collect, &c, NULL);
    CHECK(n >= 1 && c.n == n);
    CHECK_STR(c.first, want);
    ir_module_free(m);
}

static void insert_item(ir_sched_list *l, int at, ir_sched_item it) {
    l->items = realloc(l->items, (size_t)(l->n + 1) * sizeof *l->items);
    memmove(&l->items[at + 1], &l->items[at], (size_t)(l->n - at) * sizeof *l->items);
    l->items[at] = it, l->n++, l->cap = l->n;
}

/* The fixture is race-free as built. */
static void test_clean(void) {
    rich_nodes x;
    ir_module *m = rich_module(&x);
    int64_t pairs = -1;
    CHECK(ir_verify(m, NULL, NULL) == 0);
    CHECK(ir_check_races(m, NULL, NULL, &pairs) == 0);
    CHECK(pairs > 0); /* the all-reduce and the gradients it reads are on different streams */
    ir_module_free(m);
}

/* The all-reduce no longer waits for the gradients it reads. */
static void test_race(void) {
    rich_nodes x;
    ir_module *m = rich_module(&x);
    ir_sched_list *comm = &m->sched[1]; /* train, device 0, comm: wait gk, wait gb, all_reduce, record */
    CHECK(comm->n == 4 && comm->items[0].kind == SCHED_WAIT && comm->items[1].kind == SCHED_WAIT);
    memmove(&comm->items[0], &comm->items[2], 2 * sizeof *comm->items);
    comm->n = 2;
    char want[512];
    int64_t gk = N(x.grad_k[0])->offset;
    snprintf(want, sizeof want,
             "race in the train program on cpu:0: node %d (matmul, compute stream, tiny.mg:7:5) writes bytes "
             "[%lld, %lld) and node %d (all_reduce, comm stream, tiny.mg:7:5) reads bytes [%lld, %lld), and "
             "neither happens before the other",
             x.grad_k[0], (long long)gk, (long long)gk + 48, x.all_reduce[0], (long long)gk, (long long)gk + 48);
    expect_first(m, want);
}

/* A gradient placed on the bytes of the value it reads (its own input). */
static void test_own_input(void) {
    rich_nodes x;
    ir_module *m = rich_module(&x);
    int dl = N(x.grad_b[0])->in[0];
    int64_t at = N(dl)->offset;
    N(x.grad_b[0])->offset = at;
    char want[512];
    snprintf(want, sizeof want,
             "in the train program on cpu:0, node %d (reduce_sum, compute stream, tiny.mg:7:5) writes its output, "
             "bytes [%lld, %lld), over its input node %d (bytes [%lld, %lld))",
             x.grad_b[0], (long long)at, (long long)at + 12, dl, (long long)at, (long long)at + 48);
    expect_first(m, want);
}

/* The metric written over the loss, which the host reads after eval. */
static void test_result_clobbered(void) {
    rich_nodes x;
    ir_module *m = rich_module(&x);
    int64_t at = N(x.xent[0])->offset;
    N(x.match[0])->offset = at;
    char want[512];
    snprintf(want, sizeof want,
             "in the eval program on cpu:0, node %d (argmax_match, compute stream, tiny.mg:9:5) writes bytes "
             "[%lld, %lld) while the host after the eval program still needs there the value of node %d (bytes "
             "[%lld, %lld))",
             x.match[0], (long long)at, (long long)at + 16, x.xent[0], (long long)at, (long long)at + 16);
    expect_first(m, want);
}

/* The compute stream waits, first thing, for the all-reduce's event. */
static void test_deadlock(void) {
    rich_nodes x;
    ir_module *m = rich_module(&x);
    const ir_sched_list *comm = &m->sched[1];
    CHECK(comm->items[3].kind == SCHED_RECORD);
    insert_item(&m->sched[0], 0, (ir_sched_item){SCHED_WAIT, comm->items[3].arg});
    char want[512];
    snprintf(want, sizeof want,
             "the train program deadlocks: the compute stream of device 0 waits for event %d, which no stream "
             "records before it",
             comm->items[3].arg);
    expect_first(m, want);
}

/* A wait issued before a kernel with a smaller node index than the kernel
 * whose event it waits for: the executor, which issues lists merged in node
 * order, would issue the wait before the record. */
static void test_wait_before_record(void) {
    rich_nodes x;
    ir_module *m = rich_module(&x);
    int ev = m->sched[1].items[3].arg; /* recorded after device 0's all-reduce */
    ir_sched_list *compute = &m->sched[0];
    int at = 0;
    while (!(compute->items[at].kind == SCHED_KERNEL && compute->items[at].arg == x.grad_b[0])) at++;
    insert_item(compute, at + 2, (ir_sched_item){SCHED_WAIT, ev}); /* after grad_b and its record */
    insert_item(compute, at + 3, (ir_sched_item){SCHED_KERNEL, x.match[0]});
    char want[512];
    snprintf(want, sizeof want,
             "compute stream of device 0 waits for event %d before node %d, but the event is recorded after node "
             "%d (the executor issues lists in node order)",
             ev, x.match[0], x.all_reduce[0]);
    expect_first(m, want);
}

/* Events link the streams of one device only. */
static void test_cross_device_wait(void) {
    rich_nodes x;
    ir_module *m = rich_module(&x);
    int ev = m->sched[1].items[3].arg;
    insert_item(&m->sched[2], 0, (ir_sched_item){SCHED_WAIT, ev});
    char want[512];
    snprintf(want, sizeof want, "compute stream of device 1 waits for event %d, recorded on device 0", ev);
    expect_first(m, want);
}

/* The memory plan writes an elementwise op over an input that dies there
 * (the seed CNN's conv output under its bias add) and not over one still
 * needed (the bias add's output, which relu_grad reads later, under relu).
 * Unfused (--no-fuse); fused, see test_in_place_over. */
static void test_in_place(const char *stdlib, const char *cnn) {
    pass_options o;
    pass_options_default(&o);
    o.quiet = true, o.no_fuse = true;
    ir_diag *d = ir_diag_new(stderr);
    ir_module *m = pass_elaborate(cnn, stdlib, d, &o);
    CHECK(m && pass_run_all(m, d, &o, NULL, NULL));
    int checked = 0;
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *n = &m->g.nodes[i], *x = n->n_in ? &m->g.nodes[n->in[0]] : NULL;
        if (n->op == OP_ADD && x->op == OP_CONV2D) {
            CHECK(n->offset == x->offset);
            checked++;
        }
        if (n->op == OP_RELU && x->op == OP_ADD) {
            CHECK(n->offset != x->offset);
            checked++;
        }
    }
    CHECK(checked == 3); /* one conv bias add, two relus (conv and dense) */
    ir_diag_free(d);
    ir_module_free(m);
}

/* issue 14: a node of op `op` writes in place over an input of its own
 * shape that dies there, as any per-element op does, and never over one read
 * later: a fused node (tests/train/activations.mg, whose elementwise chains
 * fuse; the seed CNN's go to the epilogue pass), and dropout (char_gpt's
 * residual branches; its attention weights are read again by the backward
 * pass) */
static void test_in_place_over(const char *stdlib, const char *model, ir_op op) {
    pass_options o;
    pass_options_default(&o);
    o.quiet = true;
    ir_diag *d = ir_diag_new(stderr);
    ir_module *m = pass_elaborate(model, stdlib, d, &o);
    CHECK(m && pass_run_all(m, d, &o, NULL, NULL));
    int checked = 0;
    for (int i = 0; m && i < m->g.n; i++) {
        const ir_node *n = &m->g.nodes[i];
        if (n->op != op) continue;
        for (int k = 0; k < n->n_in; k++) {
            const ir_node *x = &m->g.nodes[n->in[k]];
            if (x->offset != n->offset || x->device != n->device || ir_node_bytes(x) == 0) continue;
            for (int j = i + 1; j < m->g.n; j++) /* sharing bytes: nothing after it reads the input */
                for (int q = 0; q < m->g.nodes[j].n_in; q++) CHECK(m->g.nodes[j].in[q] != n->in[k]);
            checked++;
        }
    }
    CHECK(checked >= 1);
    ir_diag_free(d);
    ir_module_free(m);
}

static int broken;     /* mutated plans with problems, all agreeing with the reference */
static int placements; /* plans placed the same by memplan's first fit and its rescan */

static const int64_t bucket_sizes[] = {1, 64, 1 << 20, 0 /* default */};

/* The check and its pairwise reference agree on m: problems and pairs. */
static void agree(const ir_module *m, const char *what) {
    int64_t fast = -1, slow = -2;
    int n_fast = ir_check_races(m, NULL, NULL, &fast), n_slow = ir_check_races_pairwise(m, NULL, NULL, &slow);
    if (n_fast != n_slow || fast != slow) {
        fprintf(stderr, "FAIL: %s: the race check finds %d problems and %lld ordered pairs, the pairwise reference "
                "%d and %lld\n", what, n_fast, (long long)fast, n_slow, (long long)slow);
        exit(1);
    }
}

/* Plans broken on purpose agree with the reference too: a kernel's output
 * moved onto another node's bytes (a clobber, a race or harmless), and a
 * wait dropped from a list. Returns how many mutants had problems. */
static int mutants(ir_module *m, const char *path, unsigned *seed) {
    int bad = 0;
    char what[600];
    for (int k = 0; k < 24; k++) {
        int a = (int)(rand_r(seed) % (unsigned)m->g.n), b = (int)(rand_r(seed) % (unsigned)m->g.n);
        ir_node *x = &m->g.nodes[a];
        if (x->device < 0 || x->offset < 0 || m->g.nodes[b].device != x->device || m->g.nodes[b].offset < 0) continue;
        int64_t kept = x->offset;
        x->offset = m->g.nodes[b].offset;
        snprintf(what, sizeof what, "%s with node %d moved onto node %d", path, a, b);
        agree(m, what);
        bad += ir_check_races(m, NULL, NULL, NULL) > 0;
        x->offset = kept;
    }
    for (int drops = 0, tries = 0; drops < 6 && tries < 1000; tries++) {
        int l = (int)(rand_r(seed) % (unsigned)(IR_PROGRAM_COUNT * m->n_devices * STREAM_COUNT));
        ir_sched_list *list = &m->sched[l];
        for (int i = list->n ? (int)(rand_r(seed) % (unsigned)list->n) : 0; i < list->n; i++) {
            if (list->items[i].kind != SCHED_WAIT) continue;
            drops++;
            ir_sched_item kept = list->items[i];
            memmove(&list->items[i], &list->items[i + 1], (size_t)(list->n - i - 1) * sizeof *list->items);
            list->n--;
            snprintf(what, sizeof what, "%s with the wait at item %d of list %d dropped", path, i, l);
            agree(m, what);
            bad += ir_check_races(m, NULL, NULL, NULL) > 0;
            insert_item(list, i, kept);
            break;
        }
    }
    return bad;
}

/* memplan's first fit places every root where the quadratic rescan does. */
static void same_placement(ir_module *m, ir_diag *d, pass_options *o, const char *path) {
    int64_t *fast = malloc((size_t)m->g.n * sizeof *fast), arena[4];
    CHECK(fast != NULL && m->n_devices <= 4);
    for (int k = 0; k < m->n_devices; k++) arena[k] = m->arena_bytes[k];
    for (int i = 0; i < m->g.n; i++) fast[i] = m->g.nodes[i].offset;
    o->memplan_rescan = true;
    CHECK(pass_memplan(m, d, o));
    o->memplan_rescan = false;
    for (int i = 0; i < m->g.n; i++)
        if (m->g.nodes[i].offset != fast[i]) {
            fprintf(stderr, "FAIL: %s: node %d at %lld by first fit, %lld by the rescan\n", path, i,
                    (long long)fast[i], (long long)m->g.nodes[i].offset);
            exit(1);
        }
    for (int k = 0; k < m->n_devices; k++) CHECK(m->arena_bytes[k] == arena[k]);
    placements++;
    free(fast);
}

/* The train program's report (the loss and metrics' all-reduce, collective
 * n_buckets) runs on each device's comm stream before any gradient bucket's:
 * it meets after the forward pass, not at the end of the step. */
static void report_first(const ir_module *m, const char *path) {
    for (int l = 0; l < m->n_devices * STREAM_COUNT; l++) {
        const ir_sched_list *list = &m->sched[l]; /* program 0: train */
        if (list->stream != STREAM_COMM) continue;
        int buckets_before = 0, report = 0;
        for (int k = 0; k < list->n && !report; k++) {
            const ir_node *n = list->items[k].kind == SCHED_KERNEL ? &m->g.nodes[list->items[k].arg] : NULL;
            if (!n || n->op != OP_ALL_REDUCE) continue;
            if (n->iattr[0] == m->n_buckets) report = 1;
            else if (n->iattr[0] < m->n_buckets) buckets_before++;
        }
        if (!report || buckets_before) {
            fprintf(stderr, "FAIL: %s on %d devices: device %d's report %s\n", path, m->n_devices, list->device,
                    report ? "runs after a gradient bucket's all-reduce" : "is not on its comm stream");
            exit(1);
        }
    }
}

/* Compiles `path` for n_dev devices; returns the pairs the check ordered. */
static int64_t sweep_one(const char *path, const char *stdlib, int n_dev, int64_t bucket) {
    pass_options o;
    pass_options_default(&o);
    ir_device dev[4];
    for (int k = 0; k < n_dev; k++) dev[k] = (ir_device){"cpu", k};
    o.devices = dev, o.n_devices = n_dev, o.global_batch = 64, o.quiet = true;
    if (bucket) o.bucket_bytes = bucket;
    ir_diag *d = ir_diag_new(stderr);
    ir_module *m = pass_elaborate(path, stdlib, d, &o);
    if (!m || !pass_run_all(m, d, &o, NULL, NULL)) {
        fprintf(stderr, "FAIL: %s on %d devices, --bucket-bytes %lld\n", path, n_dev, (long long)bucket);
        exit(1);
    }
    int64_t pairs = 0;
    CHECK(ir_check_races(m, NULL, NULL, &pairs) == 0);
    agree(m, path);
    same_placement(m, d, &o, path);
    unsigned seed = (unsigned)(n_dev * 131 + bucket);
    if (!bucket) broken += mutants(m, path, &seed); /* the default buckets: enough, and quick */
    if (n_dev > 1 && m->has_train && m->loss >= 0) report_first(m, path);
    if (n_dev > 1 && m->has_train && pairs == 0) {
        fprintf(stderr, "FAIL: %s on %d devices: no cross-stream pair checked\n", path, n_dev);
        exit(1);
    }
    ir_diag_free(d);
    ir_module_free(m);
    return pairs;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_irplan_races STDLIB_DIR MODEL.mg...\n");
        return 2;
    }
    test_clean();
    test_race();
    test_own_input();
    test_result_clobbered();
    test_deadlock();
    test_wait_before_record();
    test_cross_device_wait();
    for (int a = 2; a < argc; a++) {
        if (strstr(argv[a], "mnist_cnn.mg")) test_in_place(argv[1], argv[a]);
        if (strstr(argv[a], "train/activations.mg")) test_in_place_over(argv[1], argv[a], OP_FUSED);
        if (strstr(argv[a], "examples/char_gpt.mg")) test_in_place_over(argv[1], argv[a], OP_DROPOUT);
    }
    int plans = 0;
    for (int a = 2; a < argc; a++)
        for (int n_dev = 1; n_dev <= 4; n_dev *= 2)
            for (size_t b = 0; b < sizeof bucket_sizes / sizeof *bucket_sizes; b++) {
                int64_t pairs = sweep_one(argv[a], argv[1], n_dev, bucket_sizes[b]);
                printf("%s  %d devices  --bucket-bytes %-8lld  %lld cross-stream pairs ordered\n", argv[a], n_dev,
                       (long long)bucket_sizes[b], (long long)pairs);
                plans++;
            }
    printf("races: 6 hand-made bad plans rejected, %d compiled plans race-free; the check agrees with the pairwise "
           "reference on each and on mutants of those with the default buckets, %d mutants with problems\n", plans, broken);
    CHECK(broken > 0);
    printf("memplan: first fit and the rescan place %d plans the same\n", placements);
    CHECK(placements == plans);
    return 0;
}
