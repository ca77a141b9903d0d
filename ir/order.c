/* order.c - happens-before of a program's schedule as vector clocks (order.h). */
#include "order.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ir_order {
    int n, n_lists;
    int *list;   /* (n) the list node i runs on, -1 none */
    int *pos;    /* (n) its position among that list's kernels */
    int *seen;   /* (n, STREAM_COUNT) last position of each stream of its device that happens before node i */
};

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) abort();
    return p;
}

/* One list's walk: where it is, and the clock of its stream so far. Events
 * link the streams of one device; devices meet only inside collectives. */
typedef struct {
    const ir_sched_list *l;
    int at, kernels;
    int clock[STREAM_COUNT];
    int last;    /* node index of its last kernel, -1 none */
} walker;

typedef struct {
    ir_order *o;
    int program;
    int *event_clock;  /* (n_events, STREAM_COUNT) */
    int *event_node;   /* (n_events) node after which it was recorded, -2 not yet */
    int *event_device; /* (n_events) */
    char *err;
    size_t cap;
} sim;

/* The next kernel of w's list from item k on, or INT32_MAX past its end. */
static int next_kernel(const walker *w, int k) {
    for (; k < w->l->n; k++)
        if (w->l->items[k].kind == SCHED_KERNEL) return w->l->items[k].arg;
    return 0x7fffffff;
}

static const char *stream_name(int s) { return s == STREAM_COMM ? "comm" : "compute"; }

static void kernel(sim *S, walker *w, int i) {
    ir_order *o = S->o;
    int s = w->l->stream;
    if (o->list[i] >= 0) {
        snprintf(S->err, S->cap, "node %d runs twice in the %s program", i, ir_program_names[S->program]);
        return;
    }
    w->clock[s] = w->kernels++;
    o->list[i] = w->l->device * STREAM_COUNT + s, o->pos[i] = w->clock[s], w->last = i;
    memcpy(&o->seen[(size_t)i * STREAM_COUNT], w->clock, sizeof w->clock);
}

/* A wait whose event is recorded: checks it, then takes the event's clock. */
static int wait(sim *S, walker *w, int e) {
    int before = next_kernel(w, w->at);
    if (S->event_device[e] != w->l->device) {
        snprintf(S->err, S->cap, "%s stream of device %d waits for event %d, recorded on device %d",
                 stream_name(w->l->stream), w->l->device, e, S->event_device[e]);
        return -1;
    }
    if (S->event_node[e] >= before) {
        snprintf(S->err, S->cap,
                 "%s stream of device %d waits for event %d before node %d, but the event is recorded after node %d "
                 "(the executor issues lists in node order)",
                 stream_name(w->l->stream), w->l->device, e, before, S->event_node[e]);
        return -1;
    }
    for (int t = 0; t < STREAM_COUNT; t++)
        if (S->event_clock[e * STREAM_COUNT + t] > w->clock[t]) w->clock[t] = S->event_clock[e * STREAM_COUNT + t];
    return 0;
}

/* Runs w's list until its end or a wait for an event not yet recorded. */
static int advance(sim *S, walker *w, bool *moved) {
    for (; w->at < w->l->n; w->at++, *moved = true) {
        const ir_sched_item *it = &w->l->items[w->at];
        if (it->kind == SCHED_KERNEL) {
            kernel(S, w, it->arg);
            if (S->err[0]) return -1;
        } else if (it->kind == SCHED_RECORD) {
            memcpy(&S->event_clock[it->arg * STREAM_COUNT], w->clock, sizeof w->clock);
            S->event_node[it->arg] = w->last, S->event_device[it->arg] = w->l->device;
        } else if (S->event_node[it->arg] == -2) {
            return 0; /* blocked until the event is recorded */
        } else if (wait(S, w, it->arg)) {
            return -1;
        }
    }
    return 0;
}

/* Walks the lists round-robin; every pass that moves no list ends the walk. */
static int simulate(sim *S, walker *w) {
    int n_lists = S->o->n_lists;
    for (bool moved = true; moved;) {
        moved = false;
        for (int l = 0; l < n_lists; l++)
            if (advance(S, &w[l], &moved)) return -1;
    }
    for (int l = 0; l < n_lists; l++)
        if (w[l].at < w[l].l->n) {
            snprintf(S->err, S->cap,
                     "the %s program deadlocks: the %s stream of device %d waits for event %d, which no stream "
                     "records before it",
                     ir_program_names[S->program], stream_name(w[l].l->stream), w[l].l->device, w[l].l->items[w[l].at].arg);
            return -1;
        }
    return 0;
}

ir_order *ir_order_new(const ir_module *m, int program, char *err, size_t cap) {
    ir_order *o = xcalloc(1, sizeof *o);
    o->n = m->g.n, o->n_lists = m->n_devices * STREAM_COUNT;
    o->list = xcalloc((size_t)o->n, sizeof *o->list);
    o->pos = xcalloc((size_t)o->n, sizeof *o->pos);
    o->seen = xcalloc((size_t)o->n * STREAM_COUNT, sizeof *o->seen);
    for (int i = 0; i < o->n; i++) o->list[i] = o->pos[i] = -1;
    size_t n_events = (size_t)m->n_events;
    sim S = {o, program, xcalloc(n_events * STREAM_COUNT, sizeof(int)), xcalloc(n_events, sizeof(int)),
             xcalloc(n_events, sizeof(int)), err, cap};
    err[0] = 0;
    for (size_t e = 0; e < n_events; e++) S.event_node[e] = -2;
    walker *w = xcalloc((size_t)o->n_lists, sizeof *w);
    for (int l = 0; l < o->n_lists; l++) {
        w[l] = (walker){.l = &m->sched[program * o->n_lists + l], .last = -1};
        for (int t = 0; t < STREAM_COUNT; t++) w[l].clock[t] = -1;
    }
    int rc = simulate(&S, w);
    free(w), free(S.event_clock), free(S.event_node), free(S.event_device);
    if (rc) ir_order_free(o), o = NULL;
    return o;
}

void ir_order_free(ir_order *o) {
    if (!o) return;
    free(o->list), free(o->pos), free(o->seen);
    free(o);
}

int ir_order_list(const ir_order *o, int i) { return o->list[i]; }
int ir_order_pos(const ir_order *o, int i) { return o->pos[i]; }
int ir_order_seen(const ir_order *o, int i, int stream) { return o->seen[(size_t)i * STREAM_COUNT + (size_t)stream]; }

bool ir_order_before(const ir_order *o, int a, int b) {
    if (a == b || o->list[a] < 0 || o->list[b] < 0 || o->list[a] / STREAM_COUNT != o->list[b] / STREAM_COUNT) return false;
    return o->pos[a] <= ir_order_seen(o, b, o->list[a] % STREAM_COUNT);
}

bool ir_host_reads(const ir_module *m, int program, int i) {
    const ir_node *n = &m->g.nodes[i];
    unsigned bit = 1u << program;
    if (!(n->programs & bit) || n->device < 0) return false;
    if (bit == PROG_TRAIN) return n->op == OP_ALL_REDUCE && n->iattr[0] == m->n_buckets;
    int want[1 + IR_MAX_METRICS + IR_MAX_OUTPUTS], count = 0;
    if (bit == PROG_EVAL) {
        if (m->loss >= 0) want[count++] = m->loss;
        for (int k = 0; k < m->n_metrics && k < IR_MAX_METRICS; k++) want[count++] = m->metrics[k].node;
    } else if (bit == PROG_PREDICT) {
        for (int k = 0; k < m->n_outputs && k < IR_MAX_OUTPUTS; k++) want[count++] = m->outputs[k].node;
    }
    for (int k = 0; k < count; k++) { /* replica 0's node or its copy on another replica */
        const ir_node *x = &m->g.nodes[want[k]];
        if (want[k] == i || (x->origin >= 0 && x->origin == n->origin && x->op == n->op)) return true;
    }
    return false;
}

bool ir_is_view(const ir_node *n) { return (unsigned)n->op < OP_COUNT && ir_ops[n->op].flags & OPF_ALIAS && n->device >= 0; }

bool ir_reads_input(const ir_node *n, int k, int program) {
    bool train = 1u << program == PROG_TRAIN;
    if (n->op == OP_CONV2D_BN_EPILOGUE) return k > 2 || (k == 2) == train; /* issue 14: c in train, x and w outside it */
    return n->op != OP_IN_TRAINING || (k == 0) == train;
}

bool ir_writes_input(const ir_node *n, int k) {
    if ((unsigned)n->op >= OP_COUNT || !(ir_ops[n->op].flags & OPF_INPLACE)) return false;
    bool update = ir_ops[n->op].flags & OPF_UPDATE;
    return k == 0 || (update && k >= 2 && k != ir_update_norm_input(n)); /* (param, gradient, slots...[, norm]) */
}

int ir_update_norm_input(const ir_node *n) {
    if ((unsigned)n->op >= OP_COUNT || !(ir_ops[n->op].flags & OPF_UPDATE)) return -1;
    int k = ir_op_fattr_index(n->op, "clipnorm");
    return k >= 0 && n->fattr[k] > 0 ? n->n_in - 1 : -1;
}
