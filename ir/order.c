/* order.c - happens-before of a program's schedule as vector clocks (order.h). */
#include "order.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ir_order {
    int n, n_lists;
    int *list;   /* (n) the list node i runs on, -1 none */
    int *pos;    /* (n) its position among that list's kernels */
    int *seen;   /* (n, n_lists) last position of each list that happens before node i */
};

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) abort();
    return p;
}

/* One list's walk: where it is, and the clock of its stream so far. */
typedef struct {
    const ir_sched_list *l;
    int at, kernels;
    int *clock;  /* (n_lists) */
    int last;    /* node index of its last kernel, -1 none */
} walker;

typedef struct {
    const ir_module *m;
    ir_order *o;
    int *event_clock; /* (n_events, n_lists) */
    int *event_node;  /* (n_events) node after which it was recorded, -2 not yet */
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

/* Runs w's list until its end or a wait for an event not yet recorded.
 * Returns -1 with a message when a wait precedes its record in node order. */
static int advance(sim *S, walker *w, int self, bool *moved) {
    ir_order *o = S->o;
    for (; w->at < w->l->n; w->at++, *moved = true) {
        const ir_sched_item *it = &w->l->items[w->at];
        int *ev = &S->event_clock[(size_t)it->arg * (size_t)o->n_lists];
        if (it->kind == SCHED_KERNEL) {
            int i = it->arg;
            w->clock[self] = w->kernels++;
            o->list[i] = self, o->pos[i] = w->clock[self], w->last = i;
            memcpy(&o->seen[(size_t)i * (size_t)o->n_lists], w->clock, (size_t)o->n_lists * sizeof *w->clock);
        } else if (it->kind == SCHED_RECORD) {
            memcpy(ev, w->clock, (size_t)o->n_lists * sizeof *w->clock);
            S->event_node[it->arg] = w->last;
        } else if (S->event_node[it->arg] == -2) {
            return 0; /* blocked until the event is recorded */
        } else {
            int before = next_kernel(w, w->at);
            if (S->event_node[it->arg] >= before) {
                snprintf(S->err, S->cap,
                         "%s stream of device %d waits for event %d before node %d, but the event is recorded "
                         "after node %d (the executor issues lists in node order)",
                         stream_name(w->l->stream), w->l->device, it->arg, before, S->event_node[it->arg]);
                return -1;
            }
            for (int k = 0; k < o->n_lists; k++)
                if (ev[k] > w->clock[k]) w->clock[k] = ev[k];
        }
    }
    return 0;
}

static const char *const program_names[IR_PROGRAM_COUNT] = {"train", "eval", "predict", "init"};

/* Walks the lists round-robin; every pass that moves no list ends the walk. */
static int simulate(sim *S, walker *w, int program) {
    int n_lists = S->o->n_lists;
    for (bool moved = true; moved;) {
        moved = false;
        for (int l = 0; l < n_lists; l++)
            if (advance(S, &w[l], l, &moved)) return -1;
    }
    for (int l = 0; l < n_lists; l++)
        if (w[l].at < w[l].l->n) {
            snprintf(S->err, S->cap,
                     "the %s program deadlocks: the %s stream of device %d waits for event %d, which no stream "
                     "records before it",
                     program_names[program], stream_name(w[l].l->stream), w[l].l->device, w[l].l->items[w[l].at].arg);
            return -1;
        }
    return 0;
}

ir_order *ir_order_new(const ir_module *m, int program, char *err, size_t cap) {
    ir_order *o = xcalloc(1, sizeof *o);
    o->n = m->g.n, o->n_lists = m->n_devices * STREAM_COUNT;
    o->list = xcalloc((size_t)o->n, sizeof *o->list);
    o->pos = xcalloc((size_t)o->n, sizeof *o->pos);
    o->seen = xcalloc((size_t)o->n * (size_t)o->n_lists, sizeof *o->seen);
    for (int i = 0; i < o->n; i++) o->list[i] = o->pos[i] = -1;
    sim S = {m, o, xcalloc((size_t)m->n_events * (size_t)o->n_lists, sizeof(int)),
             xcalloc((size_t)m->n_events, sizeof(int)), err, cap};
    for (int e = 0; e < m->n_events; e++) S.event_node[e] = -2;
    walker *w = xcalloc((size_t)o->n_lists, sizeof *w);
    for (int l = 0; l < o->n_lists; l++) {
        w[l] = (walker){&m->sched[program * o->n_lists + l], 0, 0, xcalloc((size_t)o->n_lists, sizeof(int)), -1};
        for (int k = 0; k < o->n_lists; k++) w[l].clock[k] = -1;
    }
    int rc = simulate(&S, w, program);
    for (int l = 0; l < o->n_lists; l++) free(w[l].clock);
    free(w), free(S.event_clock), free(S.event_node);
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
int ir_order_seen(const ir_order *o, int i, int list) { return o->seen[(size_t)i * (size_t)o->n_lists + (size_t)list]; }

bool ir_order_before(const ir_order *o, int a, int b) {
    if (a == b || o->list[a] < 0 || o->list[b] < 0) return false;
    return o->pos[a] <= ir_order_seen(o, b, o->list[a]);
}

bool ir_host_reads(const ir_module *m, int program, int i) {
    const ir_node *n = &m->g.nodes[i];
    unsigned bit = 1u << program;
    if (!(n->programs & bit) || n->device < 0) return false;
    if (bit == PROG_TRAIN) return n->op == OP_ALL_REDUCE && n->iattr[0] == m->n_buckets;
    int want[1 + IR_MAX_METRICS + 1], count = 0;
    if (bit == PROG_EVAL) {
        if (m->loss >= 0) want[count++] = m->loss;
        for (int k = 0; k < m->n_metrics && k < IR_MAX_METRICS; k++) want[count++] = m->metrics[k].node;
    } else if (bit == PROG_PREDICT && m->output >= 0) {
        want[count++] = m->output;
    }
    for (int k = 0; k < count; k++) { /* replica 0's node or its copy on another replica */
        const ir_node *x = &m->g.nodes[want[k]];
        if (want[k] == i || (x->origin >= 0 && x->origin == n->origin && x->op == n->op)) return true;
    }
    return false;
}

bool ir_is_view(const ir_node *n) { return (ir_ops[n->op].flags & OPF_ALIAS) && n->device >= 0; }

bool ir_writes_input(const ir_node *n, int k) {
    if (!(ir_ops[n->op].flags & OPF_INPLACE)) return false;
    bool update = n->op == OP_SGD_UPDATE || n->op == OP_ADAM_UPDATE || n->op == OP_RMSPROP_UPDATE;
    return k == 0 || (update && k >= 2); /* (param, gradient, slots...) */
}
