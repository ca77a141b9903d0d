/* trace.c - steps timed by the backend, as a Chrome/Perfetto trace and as a
 * profile of the ops (runtime/trace.h; docs/runtime.md, "Tracing"). */
#define _GNU_SOURCE /* qsort_r */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../ir/outfile.h"
#include "trace.h"

typedef struct {
    int node, device, stream; /* local device */
    int64_t step, start, end; /* ns, CLOCK_MONOTONIC */
} trace_event;

struct rt_trace {
    const ir_module *m;
    int first, local;
    int64_t keep_from, keep_to, profile_from;
    trace_event *ev;                 /* (n) kept steps' events, by step */
    int64_t n, cap, kept_steps;
    int64_t *op_ns, *op_count;       /* (OP_COUNT * STREAM_COUNT) profiled time and events of (op, stream) */
    int64_t steps, wall_ns, comm_ns, overlap_ns; /* profiled steps; overlap: comm time with compute running */
    char (*kernel)[KERNEL_NAME_CAP]; /* (nodes) the implementation chosen for each, "" none or not yet named */
    bool *named;                     /* (nodes) rt_trace_name_kernel was called */
};

rt_trace *rt_trace_new(const ir_module *m, int first, int local, int64_t keep_from, int64_t keep_to,
                       int64_t profile_from) {
    rt_trace *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    *t = (rt_trace){.m = m, .first = first, .local = local, .keep_from = keep_from, .keep_to = keep_to,
                    .profile_from = profile_from};
    t->op_ns = calloc(OP_COUNT * STREAM_COUNT, sizeof *t->op_ns);
    t->op_count = calloc(OP_COUNT * STREAM_COUNT, sizeof *t->op_count);
    t->kernel = calloc((size_t)m->g.n + 1, sizeof *t->kernel), t->named = calloc((size_t)m->g.n + 1, sizeof *t->named);
    if (!t->op_ns || !t->op_count || !t->kernel || !t->named) return rt_trace_free(t), NULL;
    return t;
}

void rt_trace_free(rt_trace *t) {
    if (!t) return;
    free(t->ev), free(t->op_ns), free(t->op_count), free(t->kernel), free(t->named);
    free(t);
}

static bool keeps(const rt_trace *t, int64_t step) { return step >= t->keep_from && step <= t->keep_to; }
static bool profiles(const rt_trace *t, int64_t step) { return t->profile_from > 0 && step >= t->profile_from; }
bool rt_trace_wants(const rt_trace *t, int64_t step) { return keeps(t, step) || profiles(t, step); }
int64_t rt_trace_kept_steps(const rt_trace *t) { return t->kept_steps; }
bool rt_trace_kernel_named(const rt_trace *t, int node) { return t->named[node]; }

void rt_trace_name_kernel(rt_trace *t, int node, const char *name) {
    snprintf(t->kernel[node], sizeof t->kernel[node], "%s", name ? name : "");
    t->named[node] = true;
}

/* by track (device, stream), then start */
static int span_order(const void *pa, const void *pb) {
    const rt_trace_span *a = pa, *b = pb;
    if (a->device != b->device) return a->device - b->device;
    if (a->stream != b->stream) return a->stream - b->stream;
    return (a->start_ns > b->start_ns) - (a->start_ns < b->start_ns);
}

/* Merges the consecutive pieces of one node on one track; returns the count. */
static int merge_pieces(rt_trace_span *s, int n) {
    int out = 0;
    for (int k = 0; k < n; k++) {
        rt_trace_span *last = out ? &s[out - 1] : NULL;
        if (last && last->node == s[k].node && last->device == s[k].device && last->stream == s[k].stream)
            last->end_ns = s[k].end_ns;
        else s[out++] = s[k];
    }
    return out;
}

/* Time of the comm spans [c, c + nc) during which a compute span [p, p + np)
 * runs; each track's spans are sorted and disjoint. */
static int64_t overlap_ns(const rt_trace_span *p, int np, const rt_trace_span *c, int nc) {
    int64_t sum = 0;
    for (int i = 0, j = 0; i < np && j < nc;) {
        int64_t lo = p[i].start_ns > c[j].start_ns ? p[i].start_ns : c[j].start_ns;
        int64_t hi = p[i].end_ns < c[j].end_ns ? p[i].end_ns : c[j].end_ns;
        if (hi > lo) sum += hi - lo;
        if (p[i].end_ns < c[j].end_ns) i++;
        else j++;
    }
    return sum;
}

static void profile_step(rt_trace *t, const rt_trace_span *s, int n) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int k = 0; k < n; k++) {
        int at = t->m->g.nodes[s[k].node].op * STREAM_COUNT + s[k].stream;
        t->op_ns[at] += s[k].end_ns - s[k].start_ns, t->op_count[at]++;
        lo = s[k].start_ns < lo ? s[k].start_ns : lo, hi = s[k].end_ns > hi ? s[k].end_ns : hi;
        if (s[k].stream == STREAM_COMM) t->comm_ns += s[k].end_ns - s[k].start_ns;
    }
    for (int a = 0, b; a < n; a = b) { /* one device: its compute track, then its comm track */
        int mid = a;
        for (b = a; b < n && s[b].device == s[a].device; b++)
            if (s[b].stream == STREAM_COMPUTE) mid = b + 1;
        t->overlap_ns += overlap_ns(&s[a], mid - a, &s[mid], b - mid);
    }
    t->steps++, t->wall_ns += n ? hi - lo : 0;
}

void rt_trace_add(rt_trace *t, int64_t step, rt_trace_span *spans, int n) {
    qsort(spans, (size_t)n, sizeof *spans, span_order);
    n = merge_pieces(spans, n);
    if (profiles(t, step)) profile_step(t, spans, n);
    if (!keeps(t, step)) return;
    if (t->n + n > t->cap) {
        int64_t cap = (t->n + n) * 2;
        trace_event *ev = realloc(t->ev, (size_t)cap * sizeof *ev);
        if (!ev) return; /* the step is left out; rt_trace_write reports the steps it has */
        t->ev = ev, t->cap = cap;
    }
    for (int k = 0; k < n; k++)
        t->ev[t->n++] = (trace_event){spans[k].node, spans[k].device, spans[k].stream, step, spans[k].start_ns,
                                      spans[k].end_ns};
    t->kept_steps++;
}

/* ---- Chrome trace event JSON ---- */

static const char *const stream_names[STREAM_COUNT] = {"compute", "comm"};

static void event_name(const rt_trace *t, const ir_node *n, char *buf, size_t cap) {
    if (n->op == OP_ALL_REDUCE && n->iattr[0] == t->m->n_buckets) snprintf(buf, cap, "all_reduce loss and metrics");
    else if (n->op == OP_ALL_REDUCE) snprintf(buf, cap, "all_reduce bucket %lld", (long long)n->iattr[0]);
    else if (n->name) snprintf(buf, cap, "%s %s", ir_ops[n->op].name, n->name);
    else snprintf(buf, cap, "%s", ir_ops[n->op].name);
}

static cJSON *meta_event(const char *what, int pid, int tid, const char *name) {
    cJSON *e = cJSON_CreateObject(), *args = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "ph", "M");
    cJSON_AddStringToObject(e, "name", what);
    cJSON_AddNumberToObject(e, "pid", pid);
    cJSON_AddNumberToObject(e, "tid", tid);
    cJSON_AddStringToObject(args, "name", name);
    cJSON_AddItemToObject(e, "args", args);
    return e;
}

static cJSON *span_event(const rt_trace *t, const trace_event *v) {
    const ir_node *n = &t->m->g.nodes[v->node];
    char name[320], shape[160];
    event_name(t, n, name, sizeof name);
    cJSON *e = cJSON_CreateObject(), *args = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", name);
    cJSON_AddStringToObject(e, "cat", stream_names[v->stream]);
    cJSON_AddStringToObject(e, "ph", "X");
    cJSON_AddNumberToObject(e, "pid", t->first + v->device);
    cJSON_AddNumberToObject(e, "tid", v->stream);
    cJSON_AddNumberToObject(e, "ts", (double)v->start / 1e3);
    cJSON_AddNumberToObject(e, "dur", (double)(v->end - v->start) / 1e3);
    cJSON_AddNumberToObject(args, "node", v->node);
    cJSON_AddNumberToObject(args, "step", (double)v->step);
    cJSON_AddStringToObject(args, "op", ir_ops[n->op].name);
    cJSON_AddNumberToObject(args, "bytes", (double)ir_node_bytes(n));
    cJSON_AddStringToObject(args, "shape", ir_type_str(n->dtype, &n->shape, shape, sizeof shape));
    if (n->op == OP_ALL_REDUCE) cJSON_AddNumberToObject(args, "bucket", (double)n->iattr[0]);
    if (t->kernel[v->node][0]) cJSON_AddStringToObject(args, "kernel", t->kernel[v->node]);
    cJSON_AddItemToObject(e, "args", args);
    return e;
}

int rt_trace_write(const rt_trace *t, const char *path, int rank, int ranks, char *err, size_t cap) {
    cJSON *root = cJSON_CreateObject(), *events = cJSON_AddArrayToObject(root, "traceEvents");
    for (int d = 0; d < t->local; d++) {
        const ir_device *dev = &t->m->devices[t->first + d];
        char name[64];
        if (ranks > 1) snprintf(name, sizeof name, "%s:%d rank %d", dev->name, dev->index, rank);
        else snprintf(name, sizeof name, "%s:%d", dev->name, dev->index);
        cJSON_AddItemToArray(events, meta_event("process_name", t->first + d, 0, name));
        for (int s = 0; s < STREAM_COUNT; s++)
            cJSON_AddItemToArray(events, meta_event("thread_name", t->first + d, s, stream_names[s]));
    }
    for (int64_t k = 0; k < t->n; k++) cJSON_AddItemToArray(events, span_event(t, &t->ev[k]));
    cJSON_AddStringToObject(root, "displayTimeUnit", "ms");
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text) return snprintf(err, cap, "%s: out of memory for the trace", path), -1;
    const void *parts[2] = {text, "\n"};
    size_t sizes[2] = {strlen(text), 1};
    int rc = ir_write_file_atomic(path, parts, sizes, 2, err, cap);
    free(text);
    return rc;
}

/* ---- profile ---- */

/* (op, stream) rows by total time, largest first */
static int row_order(const void *pa, const void *pb, void *ctx) {
    const int64_t *ns = ctx;
    int64_t a = ns[*(const int *)pa], b = ns[*(const int *)pb];
    return (a < b) - (a > b);
}

/* the distinct implementations chosen for the nodes of (op, stream), in node
 * order, comma-separated ("onednn,thin"); "" when none was named */
static void kernel_list(const rt_trace *t, int op, int stream, char *out, size_t cap) {
    const char *seen[8]; /* an op has at most a few candidates */
    int n_seen = 0;
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < t->m->g.n && n_seen < 8; i++) {
        const ir_node *n = &t->m->g.nodes[i];
        if ((int)n->op != op || n->stream != stream || !t->kernel[i][0]) continue;
        int j = 0;
        while (j < n_seen && strcmp(seen[j], t->kernel[i])) j++;
        if (j < n_seen) continue;
        seen[n_seen++] = t->kernel[i];
        if (len < cap) len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? "," : "", t->kernel[i]);
    }
}

void rt_trace_profile(const rt_trace *t, int top, FILE *f) {
    if (!t->steps) {
        fprintf(f, "profile: no step was profiled (--profile counts the steps after the run's first)\n");
        return;
    }
    double steps = (double)t->steps, device_ms = (double)t->wall_ns / 1e6 * t->local; /* all profiled steps */
    fprintf(f, "profile: %lld steps, %d device%s, step %.3f ms (mean wall time, first op start to last op end)\n",
            (long long)t->steps, t->local, t->local > 1 ? "s" : "", (double)t->wall_ns / 1e6 / steps);
    if (t->comm_ns)
        fprintf(f, "comm: %.3f ms per step per device, %.1f%% of it overlapped by compute on the same device\n",
                (double)t->comm_ns / 1e6 / steps / t->local, 100.0 * (double)t->overlap_ns / (double)t->comm_ns);
    int rows[OP_COUNT * STREAM_COUNT], n = 0;
    for (int k = 0; k < OP_COUNT * STREAM_COUNT; k++)
        if (t->op_count[k]) rows[n++] = k;
    qsort_r(rows, (size_t)n, sizeof *rows, row_order, t->op_ns);
    fprintf(f, "%-28s %-8s %8s %11s %8s %10s  %s\n", "op", "stream", "count", "total ms", "% step", "mean us", "kernel");
    for (int r = 0; r < n && r < top; r++) {
        int k = rows[r];
        double ms = (double)t->op_ns[k] / 1e6;
        char kernels[128];
        kernel_list(t, k / STREAM_COUNT, k % STREAM_COUNT, kernels, sizeof kernels);
        fprintf(f, "%-28s %-8s %8lld %11.3f %7.1f%% %10.1f  %s\n", ir_ops[k / STREAM_COUNT].name,
                stream_names[k % STREAM_COUNT], (long long)t->op_count[k], ms, 100.0 * ms / device_ms,
                1e3 * ms / (double)t->op_count[k], kernels);
    }
}
