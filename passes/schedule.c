/* schedule.c - turn the graph into per-(program, device, stream) work lists.
 *
 * Rule: each list holds its nodes in graph order. When a node reads a value
 * made on another stream of the same device, its list first waits on an
 * event that the producer's list records right after the producer; so the
 * all-reduce of an early gradient bucket (comm stream) runs while the compute
 * stream goes on with the rest of the backward pass. Replicas meet only inside
 * collectives. Host inputs are uploaded before a program starts.
 */
#include <stdlib.h>

#include "passes.h"

static const unsigned programs[IR_PROGRAM_COUNT] = {PROG_TRAIN, PROG_EVAL, PROG_PREDICT, PROG_INIT};

static void push(ir_sched_list *l, ir_sched_kind kind, int arg) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->items = realloc(l->items, (size_t)l->cap * sizeof *l->items);
        if (!l->items) abort();
    }
    l->items[l->n++] = (ir_sched_item){kind, arg};
}

static bool has_kernel_work(const ir_node *n) { return !(ir_ops[n->op].flags & OPF_SOURCE); }

/* Lists of one program: lists[device * STREAM_COUNT + stream]. */
static void schedule_program(ir_module *m, int p, ir_sched_list *lists, int *event_of, int *waited) {
    int n = m->g.n;
    for (int i = 0; i < n; i++) event_of[i] = -1;
    for (int i = 0; i < n; i++) {
        const ir_node *node = &m->g.nodes[i];
        if (!(node->programs & programs[p]) || node->device < 0 || !has_kernel_work(node)) continue;
        ir_sched_list *l = &lists[node->device * STREAM_COUNT + node->stream];
        for (int k = 0; k < node->n_in; k++) {
            const ir_node *src = &m->g.nodes[node->in[k]];
            if (src->device != node->device || src->stream == node->stream || !has_kernel_work(src)) continue;
            int e = event_of[node->in[k]];
            if (waited[e * STREAM_COUNT + node->stream]) continue;
            waited[e * STREAM_COUNT + node->stream] = 1;
            push(l, SCHED_WAIT, e);
        }
        push(l, SCHED_KERNEL, i);
        bool crosses = false; /* does a later node on another stream read it? */
        for (int j = i + 1; j < n && !crosses; j++) {
            const ir_node *u = &m->g.nodes[j];
            if (!(u->programs & programs[p]) || u->device != node->device || u->stream == node->stream) continue;
            for (int k = 0; k < u->n_in; k++) crosses |= u->in[k] == i;
        }
        if (crosses) {
            event_of[i] = m->n_events++;
            push(l, SCHED_RECORD, event_of[i]);
        }
    }
}

bool pass_schedule(ir_module *m, ir_diag *d, const pass_options *o) {
    (void)d, (void)o;
    int per_program = m->n_devices * STREAM_COUNT;
    m->n_sched = IR_PROGRAM_COUNT * per_program;
    m->sched = calloc((size_t)m->n_sched, sizeof *m->sched);
    m->n_events = 0;
    int *event_of = malloc((size_t)m->g.n * sizeof *event_of);
    int *waited = calloc((size_t)m->g.n * IR_PROGRAM_COUNT * STREAM_COUNT, sizeof *waited); /* per event, stream */
    for (int p = 0; p < IR_PROGRAM_COUNT; p++) {
        ir_sched_list *lists = &m->sched[p * per_program];
        for (int k = 0; k < per_program; k++)
            lists[k] = (ir_sched_list){.program = p, .device = k / STREAM_COUNT, .stream = k % STREAM_COUNT};
        schedule_program(m, p, lists, event_of, waited);
    }
    free(event_of), free(waited);
    return true;
}
