/* exec.c - the executor: binds a plan to a backend and runs its programs by
 * walking the compiled schedule. It knows no backend: every allocation, copy,
 * kernel, event and collective goes through rt_backend_i. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/devices.h"
#include "../ir/order.h"
#include "session.h"
#include "trace.h"

struct rt_session {
    const ir_module *m;
    rt_backend *b;
    int first, local;          /* local replicas [first, first + local) */
    int *device_index;         /* (local) the plan's index of each, for the backend */
    char **arena;              /* per local device */
    void **host;               /* per node: staging of host INPUT nodes, else NULL */
    void **ptr;                /* per node: device address on its replica, NULL if not local */
    rt_kernel_args *args;      /* per node */
    rt_kernel_memo *memos;     /* per node, behind args[i].memo */
    const ir_node **in_nodes;  /* flat storage behind args[i].in_nodes */
    const void **in_ptrs;      /* flat storage behind args[i].in */
    rt_coll_args *coll;        /* per node, for collectives */
    char **labels;             /* per node, collectives' names in errors */
    int64_t step;
    int training;
    int absent;                /* replica that skips collectives (fault injection), -1 none */
    int check_numerics;
    bool graphs;               /* capture train steps after the first when the backend can (issue 15) */
    int64_t train_runs;        /* train steps run by this session */
    uint64_t generation;
    rt_trace *trace;           /* train steps it wants are timed into it (NULL: none) */
    rt_trace_span *spans;      /* (span_cap) one step's spans taken from the backend */
    int span_cap;
    /* issue 14: train steps in flight (rt_session_train_issue; docs/runtime.md) */
    bool ahead_ok;             /* the backend can, and every reader of a host input is a shard */
    void **host_next;          /* per host input node: the staging of the step after the one issued */
    uint64_t *marks[2];        /* by step parity: each stream's queue position at that step's end */
    char *report[2];           /* by step parity: that step's `read` tensor */
    size_t report_cap, report_bytes;
    int unfinished;            /* steps issued by rt_session_train_issue and not finished (0..2) */
    bool traced[2];            /* by step parity: whether the trace wants that step's spans */
    char err[640];
};

static const unsigned program_bits[IR_PROGRAM_COUNT] = {PROG_TRAIN, PROG_EVAL, PROG_PREDICT, PROG_INIT};

static int fail(rt_session *s, const char *msg) {
    snprintf(s->err, sizeof s->err, "%s", msg);
    return -1;
}

const ir_module *rt_session_module(const rt_session *s) { return s->m; }
const char *rt_session_error(const rt_session *s) { return s->err; }
int64_t rt_session_step(const rt_session *s) { return s->step; }
void rt_session_set_step(rt_session *s, int64_t step) { s->step = step; }
bool rt_session_is_local(const rt_session *s, int r) { return r >= s->first && r < s->first + s->local; }
int rt_session_first_replica(const rt_session *s) { return s->first; }
int rt_session_local_replicas(const rt_session *s) { return s->local; }

int rt_session_peer(const rt_session *s, int node, int replica) {
    const ir_node *x = &s->m->g.nodes[node];
    if (x->device == replica) return node;
    for (int i = 0; i < s->m->g.n; i++) {
        const ir_node *y = &s->m->g.nodes[i];
        if (y->device == replica && y->origin == x->origin && y->op == x->op && x->origin >= 0) return i;
    }
    return -1;
}

/* The backend of the replicas this process runs (not of replica 0: under
 * mpirun the other workers' replicas may be elsewhere). */
static rt_backend *pick_backend(const ir_module *m, int first, int local, char *err, size_t cap) {
    const char *kind = ir_local_device_kind(m, first, local, err, cap);
    if (!kind) return NULL;
    if (!strcmp(kind, "gpu")) {
#ifdef MGC_HAVE_CUDA
        return rt_backend_cuda();
#else
        snprintf(err, cap, "this mgc was built without the CUDA backend; the plan wants gpu devices");
        return NULL;
#endif
    }
    return rt_backend_cpu();
}

static void collective_label(rt_session *s, int i) {
    const ir_node *n = &s->m->g.nodes[i];
    char buf[256];
    if (n->op == OP_BROADCAST)
        snprintf(buf, sizeof buf, "broadcast of '%s'", s->m->g.nodes[n->in[0]].name ? s->m->g.nodes[n->in[0]].name : "?");
    else if (n->op == OP_ALL_GATHER)
        snprintf(buf, sizeof buf, "all_gather of the %s of '%s'", n->dtype == IR_I32 ? "ids" : "rows", n->name ? n->name : "?");
    else if (n->iattr[0] == s->m->n_buckets)
        snprintf(buf, sizeof buf, "all_reduce of loss and metrics");
    else
        snprintf(buf, sizeof buf, "all_reduce bucket %lld", (long long)n->iattr[0]);
    s->labels[i] = strdup(buf);
}

/* Fixes every node's addresses and kernel arguments (arenas never move). */
static void bind_nodes(rt_session *s) {
    const ir_module *m = s->m;
    int total_in = 0;
    for (int i = 0; i < m->g.n; i++) total_in += m->g.nodes[i].n_in;
    s->in_nodes = calloc((size_t)total_in + 1, sizeof *s->in_nodes);
    s->in_ptrs = calloc((size_t)total_in + 1, sizeof *s->in_ptrs);
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *n = &m->g.nodes[i];
        if (n->device < 0 && n->op == OP_INPUT)
            s->host[i] = calloc(1, (size_t)ir_node_bytes(n)), s->host_next[i] = calloc(1, (size_t)ir_node_bytes(n));
        else if (rt_session_is_local(s, n->device) && n->offset >= 0)
            s->ptr[i] = s->arena[n->device - s->first] + n->offset;
    }
    int at = 0;
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *n = &m->g.nodes[i];
        rt_kernel_args *a = &s->args[i];
        a->m = m, a->node = n, a->out = s->ptr[i], a->step = &s->step, a->training = &s->training;
        a->check_numerics = &s->check_numerics, a->memo = &s->memos[i];
        a->replica = n->device, a->replicas = m->n_devices;
        a->in_nodes = &s->in_nodes[at], a->in = &s->in_ptrs[at];
        for (int k = 0; k < n->n_in; k++, at++) {
            s->in_nodes[at] = &m->g.nodes[n->in[k]];
            s->in_ptrs[at] = s->host[n->in[k]] ? s->host[n->in[k]] : s->ptr[n->in[k]];
            if (s->host[n->in[k]] && n->op != OP_SHARD) s->ahead_ok = false; /* reads the staging in place */
        }
        if (ir_ops[n->op].flags & OPF_COLLECTIVE && rt_session_is_local(s, n->device)) {
            collective_label(s, i);
            s->coll[i] = (rt_coll_args){
                .kind = n->op == OP_BROADCAST ? COLL_BROADCAST : n->op == OP_ALL_GATHER ? COLL_ALL_GATHER : COLL_ALL_REDUCE,
                .group = (int)n->iattr[0], .label = s->labels[i], .buf = s->ptr[i],
                .count = ir_shape_numel(&n->shape), .dtype = n->dtype,
                .mean = n->op == OP_ALL_REDUCE && n->iattr[1], .root = (int)n->iattr[1], .algo = m->cross_device};
        }
    }
}

/* Constants are written once, when the session starts. */
static int fill_constants(rt_session *s) {
    for (int i = 0; i < s->m->g.n; i++) {
        const ir_node *n = &s->m->g.nodes[i];
        if (n->op != OP_CONST || !s->ptr[i]) continue;
        int64_t count = ir_shape_numel(&n->shape);
        float *tmp = malloc((size_t)count * sizeof *tmp + 1);
        for (int64_t k = 0; k < count; k++) tmp[k] = (float)n->fattr[0];
        int rc = s->b->i->upload(s->b, n->device - s->first, STREAM_COMPUTE, s->ptr[i], tmp, (size_t)count * 4);
        if (!rc) rc = s->b->i->sync(s->b);
        free(tmp);
        if (rc) return fail(s, s->b->err);
    }
    return 0;
}

/* Every kernel of this process's replicas has an implementation in b. */
static bool backend_runs_plan(rt_backend *b, const ir_module *m, int first, int local, char *err, size_t cap) {
    char why[128];
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *n = &m->g.nodes[i];
        bool kernel = n->programs && !(ir_ops[n->op].flags & OPF_SOURCE) && !ir_is_view(n) &&
                      n->op != OP_SHARD && n->op != OP_BROADCAST; /* an upload, a collective: no kernel (issue) */
        if (!kernel || n->device < first || n->device >= first + local || b->i->supports(n, why, sizeof why)) continue;
        snprintf(err, cap, "the %s backend cannot run '%s' (%s:%d:%d): %s", b->i->name, ir_ops[n->op].name,
                 n->loc.file ? n->loc.file : "?", n->loc.line, n->loc.col, why);
        return false;
    }
    return true;
}

rt_session *rt_session_new(const ir_module *m, const rt_session_options *o, char *err, size_t cap) {
    int first = o->local_replicas ? o->first_replica : 0, local = o->local_replicas ? o->local_replicas : m->n_devices;
    if (first < 0 || local < 1 || first + local > m->n_devices) {
        snprintf(err, cap, "replicas [%d, %d) are not in the plan's %d", first, first + local, m->n_devices);
        return NULL;
    }
    rt_backend *b = pick_backend(m, first, local, err, cap);
    if (!b) return NULL;
    if (!backend_runs_plan(b, m, first, local, err, cap)) return free(b), NULL;
    rt_session *s = calloc(1, sizeof *s);
    s->m = m, s->b = b;
    s->local = local, s->first = first, s->absent = o->absent_replica - 1, s->check_numerics = o->check_numerics;
    s->graphs = !o->no_graphs;
    b->n_devices = s->local, b->n_events = m->n_events;
    b->threads_per_device = o->threads_per_device > 0 ? o->threads_per_device : rt_default_threads(s->local);
    b->replica_base = s->first, b->replica_total = m->n_devices;
    b->collective_timeout = o->collective_timeout > 0 ? o->collective_timeout : 60;
    b->ip = o->ip;
    s->device_index = calloc((size_t)s->local, sizeof *s->device_index);
    for (int d = 0; d < s->local; d++) s->device_index[d] = m->devices[s->first + d].index;
    b->device_index = s->device_index;
    if (b->i->init(b)) {
        snprintf(err, cap, "%s", b->err);
        free(s->device_index), free(b), free(s);
        return NULL;
    }
    int n = m->g.n;
    s->arena = calloc((size_t)s->local, sizeof *s->arena);
    s->host = calloc((size_t)n, sizeof *s->host), s->ptr = calloc((size_t)n, sizeof *s->ptr);
    s->host_next = calloc((size_t)n, sizeof *s->host_next);
    s->marks[0] = calloc((size_t)s->local * STREAM_COUNT, sizeof *s->marks[0]);
    s->marks[1] = calloc((size_t)s->local * STREAM_COUNT, sizeof *s->marks[1]);
    s->ahead_ok = b->i->mark && b->i->sync_to;
    s->args = calloc((size_t)n, sizeof *s->args), s->coll = calloc((size_t)n, sizeof *s->coll);
    s->memos = calloc((size_t)n, sizeof *s->memos);
    s->labels = calloc((size_t)n, sizeof *s->labels);
    for (int d = 0; d < s->local; d++) {
        s->arena[d] = b->i->alloc(b, d, (size_t)m->arena_bytes[s->first + d] + 64);
        if (!s->arena[d]) {
            snprintf(err, cap, "cannot allocate %lld bytes for device %s:%d: %s",
                     (long long)m->arena_bytes[s->first + d], m->devices[s->first + d].name,
                     m->devices[s->first + d].index, b->err);
            rt_session_free(s);
            return NULL;
        }
    }
    bind_nodes(s);
    if (fill_constants(s)) {
        snprintf(err, cap, "%s", s->err);
        rt_session_free(s);
        return NULL;
    }
    return s;
}

void rt_session_free(rt_session *s) {
    if (!s) return;
    for (int d = 0; d < s->local; d++)
        if (s->arena[d]) s->b->i->dealloc(s->b, d, s->arena[d]);
    s->b->i->shutdown(s->b);
    free(s->b);
    for (int i = 0; i < s->m->g.n; i++) free(s->host[i]), free(s->host_next[i]), free(s->labels[i]);
    free(s->arena), free(s->host), free(s->ptr), free(s->args), free(s->memos), free(s->coll), free(s->labels), free(s->device_index);
    free(s->host_next), free(s->marks[0]), free(s->marks[1]), free(s->report[0]), free(s->report[1]);
    free(s->in_nodes), free(s->in_ptrs), free(s->spans);
    free(s);
}

void rt_session_set_input(rt_session *s, int k, const void *host) {
    int i = s->m->inputs[k];
    size_t part = (size_t)ir_node_bytes(&s->m->g.nodes[i]) / (size_t)s->m->n_devices;
    memcpy((char *)s->host[i] + part * (size_t)s->first, host, part * (size_t)s->local);
}

/* One node's work on its stream. */
static int issue_work(rt_session *s, int i) {
    const ir_node *n = &s->m->g.nodes[i];
    rt_backend *b = s->b;
    int dev = n->device - s->first;
    if (ir_ops[n->op].flags & OPF_COLLECTIVE && n->device == s->absent) return 0;
    switch (n->op) {
    case OP_SHARD: { /* rows of the host batch straight to the device */
        size_t bytes = (size_t)ir_node_bytes(n);
        const char *src = (const char *)s->host[n->in[0]] + bytes * (size_t)n->iattr[0];
        return b->i->upload(b, dev, n->stream, s->ptr[i], src, bytes);
    }
    case OP_ALL_REDUCE: /* pack the gradients into the bucket, then reduce it */
    case OP_ALL_GATHER: /* copy x into this replica's block, then gather the others */
        if (b->i->launch(b, dev, n->stream, &s->args[i])) return -1;
        return b->i->collective(b, dev, n->stream, &s->coll[i]);
    case OP_BROADCAST:
        return b->i->collective(b, dev, n->stream, &s->coll[i]);
    default:
        return b->i->launch(b, dev, n->stream, &s->args[i]);
    }
}

/* The work of node i, timed under its index while a traced step is issued. */
static int issue(rt_session *s, int i, bool traced) {
    if (!traced) return issue_work(s, i);
    s->b->trace_node = i;
    int rc = issue_work(s, i);
    s->b->trace_node = -1;
    return rc;
}

/* Issues the program's lists merged in graph order, so that every event is
 * recorded before any stream is told to wait for it (CUDA needs that). */
static int issue_program(rt_session *s, int p, bool traced) {
    const ir_module *m = s->m;
    int per = m->n_devices * STREAM_COUNT, at[per];
    const ir_sched_list *lists = &m->sched[p * per];
    memset(at, 0, sizeof at);
    for (;;) {
        int best = -1, best_node = 0;
        for (int l = 0; l < per; l++) {
            if (!rt_session_is_local(s, lists[l].device)) continue;
            for (int k = at[l]; k < lists[l].n; k++)
                if (lists[l].items[k].kind == SCHED_KERNEL) {
                    if (best < 0 || lists[l].items[k].arg < best_node) best = l, best_node = lists[l].items[k].arg;
                    break;
                }
        }
        if (best < 0) break;
        const ir_sched_list *l = &lists[best];
        int dev = l->device - s->first;
        bool kernel_done = false;
        for (; at[best] < l->n; at[best]++) {
            const ir_sched_item *it = &l->items[at[best]];
            if (it->kind == SCHED_KERNEL && kernel_done) break;
            if (it->kind == SCHED_WAIT && kernel_done) break;
            int rc = it->kind == SCHED_KERNEL ? issue(s, it->arg, traced)
                   : it->kind == SCHED_RECORD ? s->b->i->record(s->b, dev, l->stream, it->arg, s->generation)
                                              : s->b->i->wait(s->b, dev, l->stream, it->arg, s->generation);
            if (rc) return -1;
            if (it->kind == SCHED_KERNEL) kernel_done = true;
        }
    }
    return 0;
}

/* Queues a copy of node i's tensor to dst, or from src, on the node's stream. */
static int queue_copy(rt_session *s, int i, void *dst, const void *src, int stream) {
    const ir_node *n = &s->m->g.nodes[i];
    if (!s->ptr[i]) return fail(s, "internal error: node is not on a local device");
    rt_backend *b = s->b;
    int dev = n->device - s->first;
    size_t bytes = (size_t)ir_node_bytes(n);
    int rc = dst ? b->i->download(b, dev, stream, dst, s->ptr[i], bytes)
                 : b->i->upload(b, dev, stream, s->ptr[i], src, bytes);
    if (rc) return fail(s, b->err);
    return 0;
}

int rt_session_set_trace(rt_session *s, rt_trace *t) {
    rt_backend *b = s->b;
    free(s->spans), s->spans = NULL, s->span_cap = 0, s->trace = NULL;
    if (!b->i->trace_arm) {
        if (!t) return 0;
        snprintf(s->err, sizeof s->err, "the %s backend cannot trace", b->i->name);
        return -1;
    }
    int per_stream = 2 * s->m->g.n + 2; /* every node at most twice (an all_reduce: pack, collective) */
    if (b->i->trace_arm(b, t ? 2 * per_stream : 0)) return fail(s, b->err); /* two steps in flight */
    if (!t) return 0;
    s->span_cap = per_stream * s->local * STREAM_COUNT;
    s->spans = malloc((size_t)s->span_cap * sizeof *s->spans);
    if (!s->spans) {
        b->i->trace_arm(b, 0);
        return fail(s, "out of memory for the trace spans");
    }
    s->trace = t, b->trace_node = -1;
    return 0;
}

/* The spans of traced step `step`, to the trace (once it has ended). */
static int take_spans(rt_session *s, int64_t step) {
    int n = s->b->i->trace_take(s->b, s->spans, s->span_cap, step);
    if (n < 0) return fail(s, s->b->err);
    for (int k = 0; k < n; k++) /* each node's kernel named once, after its first run */
        if (!rt_trace_kernel_named(s->trace, s->spans[k].node))
            rt_trace_name_kernel(s->trace, s->spans[k].node,
                                 s->b->i->kernel_choice ? s->b->i->kernel_choice(s->b, &s->args[s->spans[k].node]) : NULL);
    rt_trace_add(s->trace, step, s->spans, n);
    return 0;
}

/* Issues one run of program p; a train step after the session's first (the
 * warm-up, which also finds the cuDNN algorithms) is captured as a graph
 * when the backend can (issue 15), except traced steps, and later ones
 * replay it. */
static int issue_step(rt_session *s, int p, ir_program program, bool traced) {
    rt_backend *b = s->b;
    bool graph = program == PROG_TRAIN && s->train_runs++ > 0 && s->graphs && !traced && b->i->graph_begin;
    b->trace_step = s->step;
    if (graph) {
        int g = b->i->graph_begin(b);
        if (g < 0) return -1;
        if (g == 2) return 0; /* replayed: the backend launched the step it captured before */
        graph = g == 0;
    }
    int issued = issue_program(s, p, traced);
    if (!graph) return issued;
    int g = b->i->graph_end(b, issued == 0);
    if (g == 1) return issue_program(s, p, traced); /* dropped: nothing ran, issue it eagerly */
    return g < 0 ? -1 : issued;
}

/* The index of program in program_bits (and in m->sched's blocks) */
static int program_index(ir_program program) {
    int p = 0;
    while (p < IR_PROGRAM_COUNT && program_bits[p] != (unsigned)program) p++;
    return p;
}

/* Issues a run of program after moving the step counter (train) and the
 * generation on; *traced: whether the trace wants its spans */
static int issue_run(rt_session *s, ir_program program, bool *traced) {
    if (program == PROG_TRAIN) s->step++;
    s->training = program == PROG_TRAIN;
    s->generation++;
    *traced = s->trace && program == PROG_TRAIN && rt_trace_wants(s->trace, s->step);
    return issue_step(s, program_index(program), program, *traced);
}

int rt_session_run_read(rt_session *s, ir_program program, int read, void *dst) {
    bool traced;
    int issued = issue_run(s, program, &traced);
    if (!issued && read >= 0 && queue_copy(s, read, dst, NULL, s->m->g.nodes[read].stream)) {
        s->b->i->sync(s->b);
        return -1;
    }
    if (s->b->i->sync(s->b) || issued) return fail(s, s->b->err);
    return traced ? take_spans(s, s->step) : 0;
}

int rt_session_run(rt_session *s, ir_program program) { return rt_session_run_read(s, program, -1, NULL); }

/* ---- issue 14: train steps in flight (docs/runtime.md, "Steps in flight") ---- */

/* Whether step k's work on each local device ends before step k + 1's can
 * start when both are queued: the device's comm list (train program) starts
 * with a wait (for its compute stream's work of the same step) and ends with
 * a record its compute list waits for, so the compute stream ends step k
 * after everything of step k on both streams. Collectives end with a
 * barrier, so no other device reads this one's buffers after its comm stream
 * has left them (collectives.c). */
static bool steps_join(const rt_session *s) {
    const ir_module *m = s->m;
    int per = m->n_devices * STREAM_COUNT;
    const ir_sched_list *lists = &m->sched[program_index(PROG_TRAIN) * per];
    for (int l = 0; l < per; l++) {
        const ir_sched_list *comm = &lists[l], *compute = NULL;
        if (comm->stream != STREAM_COMM || !rt_session_is_local(s, comm->device) || !comm->n) continue;
        for (int c = 0; c < per; c++)
            if (lists[c].device == comm->device && lists[c].stream == STREAM_COMPUTE) compute = &lists[c];
        const ir_sched_item *last = &comm->items[comm->n - 1];
        if (comm->items[0].kind != SCHED_WAIT || last->kind != SCHED_RECORD || !compute) return false;
        bool waited = false;
        for (int k = 0; k < compute->n; k++) waited |= compute->items[k].kind == SCHED_WAIT && compute->items[k].arg == last->arg;
        if (!waited) return false;
    }
    return true;
}

bool rt_session_can_run_ahead(const rt_session *s) {
    const char *env = getenv("MGC_PIPELINE");
    const rt_interprocess *ip = s->b->ip;
    return s->ahead_ok && !(ip && ip->size > 1) && !(env && !strcmp(env, "0")) && steps_join(s);
}

int rt_session_train_issue(rt_session *s, int read) {
    if (s->unfinished == 2) return fail(s, "internal error: two train steps in flight already");
    size_t bytes = read >= 0 ? (size_t)ir_node_bytes(&s->m->g.nodes[read]) : 0;
    if (bytes > s->report_cap) {
        for (int k = 0; k < 2; k++) {
            char *r = realloc(s->report[k], bytes);
            if (!r) return fail(s, "out of memory for a train step's report");
            s->report[k] = r;
        }
        s->report_cap = bytes;
    }
    bool traced;
    int issued = issue_run(s, PROG_TRAIN, &traced), slot = (int)(s->step & 1);
    s->traced[slot] = traced;
    /* the report on the compute stream: its end waits for all of the step (steps_join), and the next
     * step's compute work, which writes the report's inputs again, comes after it */
    if (!issued && read >= 0 && queue_copy(s, read, s->report[slot], NULL, STREAM_COMPUTE)) issued = -1;
    if (issued) {
        s->b->i->sync(s->b);
        s->unfinished = 0;
        return fail(s, s->b->err);
    }
    for (int i = 0; i < s->m->g.n; i++) /* the queued uploads read this staging; the next step's inputs go to the other */
        if (s->host_next[i]) {
            void *t = s->host[i];
            s->host[i] = s->host_next[i], s->host_next[i] = t;
        }
    s->b->i->mark(s->b, s->marks[slot]);
    s->report_bytes = bytes, s->unfinished++;
    return 0;
}

int64_t rt_session_train_finish(rt_session *s, void *dst) {
    if (!s->unfinished) return fail(s, "internal error: no train step in flight");
    int64_t k = s->step - s->unfinished + 1;
    int slot = (int)(k & 1);
    if (s->b->i->sync_to(s->b, s->marks[slot])) {
        s->unfinished = 0;
        return fail(s, s->b->err);
    }
    s->unfinished--;
    if (dst && s->report_bytes) memcpy(dst, s->report[slot], s->report_bytes);
    if (s->traced[slot] && take_spans(s, k)) return -1;
    return k;
}

int rt_session_train_unfinished(const rt_session *s) { return s->unfinished; }

int rt_session_broadcast_variables(rt_session *s) { return rt_session_run(s, PROG_INIT); }

int rt_session_init_variables(rt_session *s, uint64_t seed) {
    const ir_module *m = s->m;
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *n = &m->g.nodes[i];
        if (!(ir_ops[n->op].flags & OPF_VARIABLE) || n->device != 0 || !s->ptr[i]) continue;
        int64_t count = ir_shape_numel(&n->shape);
        float *tmp = malloc((size_t)count * sizeof *tmp + 1);
        rt_init_fill(tmp, count, (ir_init)n->iattr[0], n->iattr[1], n->iattr[2], n->fattr, seed, n->name);
        int rc = rt_session_write(s, i, tmp);
        free(tmp);
        if (rc) return -1;
    }
    return rt_session_broadcast_variables(s);
}

static int copy_node(rt_session *s, int i, void *dst, const void *src) {
    int queued = queue_copy(s, i, dst, src, s->m->g.nodes[i].stream);
    if (s->b->i->sync(s->b)) return fail(s, s->b->err);
    return queued;
}

int rt_session_read(rt_session *s, int node, void *dst) { return copy_node(s, node, dst, NULL); }
int rt_session_write(rt_session *s, int node, const void *src) { return copy_node(s, node, NULL, src); }

int rt_session_check_replicas(rt_session *s, char *err, size_t cap) {
    const ir_module *m = s->m;
    if (s->local < 2 && s->first == 0) return 0;
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *n = &m->g.nodes[i];
        /* state (moving statistics) differs across replicas by design until averaged */
        if (!(ir_ops[n->op].flags & OPF_VARIABLE) || n->op == OP_STATE || n->device != s->first) continue;
        size_t bytes = (size_t)ir_node_bytes(n);
        char *ref = malloc(bytes + 1), *other = malloc(bytes + 1);
        int bad = -1, rc = rt_session_read(s, i, ref);
        for (int r = s->first + 1; r < s->first + s->local && !rc && bad < 0; r++) {
            int j = rt_session_peer(s, i, r);
            rc = j < 0 || rt_session_read(s, j, other);
            if (!rc && memcmp(ref, other, bytes)) bad = r;
        }
        free(ref), free(other);
        if (rc) {
            snprintf(err, cap, "%s", s->err);
            return -1;
        }
        if (bad >= 0) {
            snprintf(err, cap, "replicas diverged at step %lld: '%s' on %s:%d differs from %s:%d",
                     (long long)s->step, n->name, m->devices[bad].name, m->devices[bad].index,
                     m->devices[s->first].name, m->devices[s->first].index);
            return -1;
        }
    }
    return 0;
}

int rt_session_rank(const rt_session *s) { return s->b->ip ? s->b->ip->rank : 0; }

int rt_session_average_states(rt_session *s) {
    const ir_module *m = s->m;
    int rc = 0;
    for (int i = 0; i < m->g.n && !rc; i++) {
        const ir_node *n = &m->g.nodes[i];
        if (n->op != OP_STATE || n->device != s->first) continue;
        int64_t count = ir_shape_numel(&n->shape);
        if (count > INT_MAX) return fail(s, "a state variable is too large to average (2^31 elements or more)");
        float *buf = malloc((size_t)count * sizeof *buf + 1);
        double *sum = calloc((size_t)count + 1, sizeof *sum);
        for (int r = s->first; r < s->first + s->local && !rc; r++) {
            rc = rt_session_read(s, rt_session_peer(s, i, r), buf);
            for (int64_t k = 0; k < count && !rc; k++) sum[k] += buf[k];
        }
        if (!rc) rc = rt_session_sum_processes(s, sum, (int)count, "sum of evaluation results");
        for (int64_t k = 0; k < count && !rc; k++) buf[k] = (float)(sum[k] / m->n_devices);
        for (int r = s->first; r < s->first + s->local && !rc; r++) rc = rt_session_write(s, rt_session_peer(s, i, r), buf);
        free(buf), free(sum);
    }
    return rc;
}

int rt_session_sum_processes(rt_session *s, double *v, int n, const char *label) {
    const rt_interprocess *ip = s->b->ip;
    if (!ip || ip->size < 2) return 0;
    return ip->all_reduce_sum(ip->ctx, v, n, IR_F64, s->b->collective_timeout, label, s->err, sizeof s->err);
}

int rt_session_merge_processes(rt_session *s, void *buf, int64_t bytes, const char *label) {
    const rt_interprocess *ip = s->b->ip;
    if (!ip || ip->size < 2) return 0;
    return ip->all_reduce_sum(ip->ctx, buf, bytes, IR_U8, s->b->collective_timeout, label, s->err, sizeof s->err);
}
