/* test_trace.c - a trace of 2 train steps on 2 CPU devices (runtime/trace.c):
 * valid JSON with named tracks, every node of the train program once per
 * traced step per replica and nothing else, buckets on the all_reduces, no
 * overlap on a track, happens-before (a node starts after the inputs it reads
 * on its device end; an all_reduce ends after every replica's gradients of its
 * bucket exist), every event inside the measured step, and each compute
 * track busy for at least 1 ms a step (the seed CNN's kernels take about 7 ms
 * on a core; queueing them takes microseconds): timestamps taken when work is
 * queued instead of when it runs fail the last ones.
 * usage: test_trace MODEL.mg STDLIB_DIR OUT.json */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "../../ir/order.h"
#include "../../passes/passes.h"
#include "../../runtime/session.h"
#include "../../runtime/trace.h"

enum { DEVICES = 2, STEPS = 4, FROM = 2, TO = 3, MAX_EV = 8192 };
#define EPS_US 0.1 /* JSON keeps timestamps to 15 digits: 10 ns here */

static int failures;
#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "FAIL: " __VA_ARGS__);                                                                     \
            fputc('\n', stderr);                                                                                       \
            if (++failures > 20) exit(1);                                                                              \
        }                                                                                                              \
    } while (0)

typedef struct {
    int node, pid, tid, step, bucket;
    double ts, end;
} event;

static ir_module *compile(const char *path, const char *stdlib) {
    pass_options o;
    pass_options_default(&o);
    ir_device dev[DEVICES];
    for (int k = 0; k < DEVICES; k++) dev[k] = (ir_device){"cpu", k};
    o.devices = dev, o.n_devices = DEVICES, o.global_batch = 64 * DEVICES, o.bucket_bytes = 64 << 10;
    ir_diag *d = ir_diag_new(stderr);
    ir_module *m = pass_elaborate(path, stdlib, d, &o);
    if (!m || !pass_run_all(m, d, &o, NULL, NULL)) {
        fprintf(stderr, "FAIL: %s does not compile\n", path);
        exit(1);
    }
    ir_diag_free(d);
    return m;
}

/* Random inputs (labels in [0, 10)), then one train step; its start and
 * end (CLOCK_MONOTONIC us) in at[0], at[1]. */
static void step(rt_session *s, const ir_module *m, uint64_t *rng, double *at) {
    for (int k = 0; k < m->n_inputs; k++) {
        const ir_node *n = &m->g.nodes[m->inputs[k]];
        int64_t count = ir_shape_numel(&n->shape);
        uint32_t *buf = malloc((size_t)count * 4);
        for (int64_t j = 0; j < count; j++) {
            *rng = *rng * 6364136223846793005u + 1442695040888963407u;
            uint32_t r = (uint32_t)(*rng >> 33);
            if (n->dtype == IR_I32) buf[j] = r % 10;
            else {
                float f = (float)r / 4294967296.0f;
                memcpy(&buf[j], &f, 4);
            }
        }
        rt_session_set_input(s, k, buf);
        free(buf);
    }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (rt_session_run(s, PROG_TRAIN)) {
        fprintf(stderr, "FAIL: step: %s\n", rt_session_error(s));
        exit(1);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    at[0] = (double)a.tv_sec * 1e6 + (double)a.tv_nsec / 1e3, at[1] = (double)b.tv_sec * 1e6 + (double)b.tv_nsec / 1e3;
}

static cJSON *load(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    text[fread(text, 1, (size_t)n, f)] = 0;
    fclose(f);
    cJSON *j = cJSON_Parse(text);
    free(text);
    return j;
}

static int num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valueint : -1;
}

/* Reads the "X" events and checks the "M" names; returns the count. */
static int read_events(const cJSON *root, event *ev) {
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(root, "traceEvents"), *e;
    int n = 0, named = 0;
    CHECK(cJSON_IsArray(all), "no traceEvents array");
    cJSON_ArrayForEach(e, all) {
        const char *ph = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "ph"));
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "name"));
        if (ph && !strcmp(ph, "M")) {
            char want[32];
            const char *what = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name"));
            if (!strcmp(what, "process_name")) snprintf(want, sizeof want, "cpu:%d", num(e, "pid"));
            else snprintf(want, sizeof want, "%s", num(e, "tid") == 0 ? "compute" : "comm");
            CHECK(name && !strcmp(name, want), "metadata %s of pid %d tid %d is '%s', not '%s'", what, num(e, "pid"),
                  num(e, "tid"), name ? name : "?", want);
            named++;
            continue;
        }
        CHECK(ph && !strcmp(ph, "X") && n < MAX_EV, "an event is not \"X\"");
        if (!ph || strcmp(ph, "X") || n == MAX_EV) continue;
        const cJSON *bucket = cJSON_GetObjectItemCaseSensitive(args, "bucket");
        ev[n] = (event){num(args, "node"), num(e, "pid"), num(e, "tid"), num(args, "step"),
                        cJSON_IsNumber(bucket) ? bucket->valueint : -1,
                        cJSON_GetObjectItemCaseSensitive(e, "ts")->valuedouble, 0};
        double dur = cJSON_GetObjectItemCaseSensitive(e, "dur")->valuedouble;
        CHECK(dur >= 0, "event of node %d has duration %g", ev[n].node, dur);
        ev[n].end = ev[n].ts + dur;
        n++;
    }
    CHECK(named == DEVICES * 3, "%d metadata events, expected %d", named, DEVICES * 3);
    return n;
}

/* The event of node i in step s, or NULL (a view, a variable: no work). */
static const event *find(const event *ev, int n, int node, int s) {
    for (int k = 0; k < n; k++)
        if (ev[k].node == node && ev[k].step == s) return &ev[k];
    return NULL;
}

/* The node whose work produced node i's bytes (through views). */
static int producer(const ir_module *m, int i) {
    while (ir_is_view(&m->g.nodes[i]) && m->g.nodes[i].n_in) i = m->g.nodes[i].in[0];
    return i;
}

static void check_nodes(const ir_module *m, const event *ev, int n) {
    int per = m->n_devices * STREAM_COUNT, expected = 0;
    const ir_sched_list *lists = &m->sched[0]; /* the train program */
    for (int s = FROM; s <= TO; s++)
        for (int l = 0; l < per; l++)
            for (int k = 0; k < lists[l].n; k++) {
                if (lists[l].items[k].kind != SCHED_KERNEL) continue;
                int node = lists[l].items[k].arg, count = 0;
                expected++;
                for (int j = 0; j < n; j++)
                    if (ev[j].node == node && ev[j].step == s) {
                        count++;
                        CHECK(ev[j].pid == lists[l].device && ev[j].tid == lists[l].stream,
                              "node %d on pid %d tid %d, scheduled on %d/%d", node, ev[j].pid, ev[j].tid,
                              lists[l].device, lists[l].stream);
                    }
                CHECK(count == 1, "node %d (%s) appears %d times in step %d", node, ir_ops[m->g.nodes[node].op].name,
                      count, s);
            }
    CHECK(n == expected, "%d events, the schedule has %d kernels in the traced steps", n, expected);
    int tracks[DEVICES][STREAM_COUNT] = {{0}};
    for (int k = 0; k < n; k++) {
        const ir_node *x = &m->g.nodes[ev[k].node];
        if (ev[k].pid >= 0 && ev[k].pid < DEVICES && ev[k].tid >= 0 && ev[k].tid < STREAM_COUNT)
            tracks[ev[k].pid][ev[k].tid]++;
        if (x->op == OP_ALL_REDUCE)
            CHECK(ev[k].bucket == x->iattr[0], "all_reduce node %d has bucket %d, not %lld", ev[k].node, ev[k].bucket,
                  (long long)x->iattr[0]);
    }
    for (int d = 0; d < DEVICES; d++)
        for (int t = 0; t < STREAM_COUNT; t++) CHECK(tracks[d][t] > 0, "no event on pid %d tid %d", d, t);
}

/* One stream runs one thing at a time. */
static void check_tracks(const event *ev, int n) {
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            if (a != b && ev[a].pid == ev[b].pid && ev[a].tid == ev[b].tid && ev[a].ts <= ev[b].ts)
                CHECK(ev[b].ts >= ev[a].end - EPS_US || ev[a].ts == ev[b].ts,
                      "nodes %d and %d overlap on pid %d tid %d", ev[a].node, ev[b].node, ev[a].pid, ev[a].tid);
}

static void check_order(const ir_module *m, const event *ev, int n) {
    for (int k = 0; k < n; k++) {
        const ir_node *x = &m->g.nodes[ev[k].node];
        for (int j = 0; j < x->n_in; j++) { /* inputs on the same device */
            const event *in = find(ev, n, producer(m, x->in[j]), ev[k].step);
            if (in && in->pid == ev[k].pid)
                CHECK(ev[k].ts >= in->end - EPS_US, "node %d starts %.3f us before its input %d ends", ev[k].node,
                      in->end - ev[k].ts, in->node);
        }
        if (x->op != OP_ALL_REDUCE) continue;
        for (int r = 0; r < m->n_devices; r++) { /* a collective ends after every replica's inputs */
            const ir_node *peer = NULL;
            for (int i = 0; i < m->g.n && !peer; i++)
                if (m->g.nodes[i].op == OP_ALL_REDUCE && m->g.nodes[i].device == r &&
                    m->g.nodes[i].iattr[0] == x->iattr[0])
                    peer = &m->g.nodes[i];
            for (int j = 0; peer && j < peer->n_in; j++) {
                const event *in = find(ev, n, producer(m, peer->in[j]), ev[k].step);
                if (in)
                    CHECK(ev[k].end >= in->end - EPS_US, "all_reduce bucket %lld on %d ends before its input %d on %d",
                          (long long)x->iattr[0], ev[k].pid, in->node, r);
            }
        }
    }
}

/* Events inside their measured step; each compute track busy >= 1 ms a step. */
static void check_busy(const event *ev, int n, double (*at)[2]) {
    for (int k = 0; k < n; k++)
        CHECK(ev[k].ts >= at[ev[k].step][0] - EPS_US && ev[k].end <= at[ev[k].step][1] + EPS_US,
              "node %d runs outside its step", ev[k].node);
    for (int s = FROM; s <= TO; s++)
        for (int d = 0; d < DEVICES; d++) {
            double busy = 0;
            for (int k = 0; k < n; k++)
                if (ev[k].step == s && ev[k].pid == d && ev[k].tid == 0) busy += ev[k].end - ev[k].ts;
            CHECK(busy >= 1000, "step %d: device %d computes for %.0f us", s, d, busy);
        }
}

int main(int argc, char **argv) {
    if (argc != 4) return fprintf(stderr, "usage: test_trace MODEL.mg STDLIB_DIR OUT.json\n"), 2;
    ir_module *m = compile(argv[1], argv[2]);
    char err[640];
    rt_session_options so = {.threads_per_device = 1, .collective_timeout = 60};
    rt_session *s = rt_session_new(m, &so, err, sizeof err);
    if (!s || rt_session_init_variables(s, 3)) return fprintf(stderr, "FAIL: session: %s\n", s ? rt_session_error(s) : err), 1;
    rt_trace *t = rt_trace_new(m, 0, DEVICES, FROM, TO, 2);
    if (rt_session_set_trace(s, t)) return fprintf(stderr, "FAIL: %s\n", rt_session_error(s)), 1;
    uint64_t rng = 99;
    double at[STEPS + 1][2] = {{0}};
    for (int k = 1; k <= STEPS; k++) step(s, m, &rng, at[k]);
    rt_session_set_trace(s, NULL);
    if (rt_trace_write(t, argv[3], 0, 1, err, sizeof err)) return fprintf(stderr, "FAIL: %s\n", err), 1;
    CHECK(rt_trace_kept_steps(t) == TO - FROM + 1, "%lld steps kept", (long long)rt_trace_kept_steps(t));
    cJSON *root = load(argv[3]);
    if (!root) return fprintf(stderr, "FAIL: %s is not JSON\n", argv[3]), 1;
    event *ev = calloc(MAX_EV, sizeof *ev);
    int n = read_events(root, ev);
    check_nodes(m, ev, n);
    check_tracks(ev, n);
    check_order(m, ev, n);
    check_busy(ev, n, at);
    printf("%d events in steps %d..%d; step wall %.0f us, %.0f us\n", n, FROM, TO, at[FROM][1] - at[FROM][0],
           at[TO][1] - at[TO][0]);
    rt_trace_profile(t, 5, stdout);
    free(ev);
    cJSON_Delete(root);
    rt_trace_free(t);
    rt_session_free(s);
    ir_module_free(m);
    if (failures) return fprintf(stderr, "%d failures\n", failures), 1;
    printf("ok\n");
    return 0;
}
