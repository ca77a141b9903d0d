/* schedule.c - turn the graph into per-(program, device, stream) work lists.
 *
 * Rule: each list holds its nodes in graph order. When a node reads a value
 * made on another stream of the same device, its list first waits on an
 * event that the producer's list records right after the producer (unless
 * it already waited past that point of the producer's stream); reshapes and
 * views are no work (the memory plan, which runs next, puts them on their
 * input's bytes), and a read through them waits for the node that wrote the
 * bytes. So the all-reduce of an early
 * gradient bucket (comm stream) runs while the compute stream goes on with
 * the rest of the backward pass. Replicas meet only inside collectives. Host
 * inputs are uploaded before a program starts.
 */
#include <stdlib.h>

#include "../ir/order.h"
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

static bool has_kernel_work(const ir_node *n) { return !(ir_ops[n->op].flags & OPF_SOURCE) && !ir_is_view(n); }

static bool runs_in(const ir_node *node, int p) {
    return (node->programs & programs[p]) && node->device >= 0 && has_kernel_work(node);
}

/* The node that writes the bytes node i reads: i itself, or the producer
 * behind a chain of views (the memory plan puts a view on its input's bytes). */
static int writer_of(const ir_module *m, int i) {
    while (ir_is_view(&m->g.nodes[i])) i = m->g.nodes[i].in[0];
    return i;
}

/* Lists of one program: lists[device * STREAM_COUNT + stream]. A stream's
 * work runs in order, so waiting for a node's event covers every earlier
 * node of its stream: a consumer waits only for the latest producer of each
 * other stream that its stream has not yet waited past, and only nodes that
 * are waited for record an event. (A bucket's all-reduce waits once, for its
 * last gradient, not once per gradient.) */
static void schedule_program(ir_module *m, int p, ir_sched_list *lists, int *wait_for, int *event_of) {
    int n = m->g.n, n_lists = m->n_devices * STREAM_COUNT;
    int *waited_past = malloc((size_t)n_lists * STREAM_COUNT * sizeof *waited_past); /* (list, source stream) */
    if (!waited_past) abort();
    for (int k = 0; k < n_lists * STREAM_COUNT; k++) waited_past[k] = -1;
    for (int i = 0; i < n; i++) event_of[i] = -1;
    /* which producers each node waits for: wait_for[i * STREAM_COUNT + source stream] */
    for (int i = 0; i < n; i++) {
        const ir_node *node = &m->g.nodes[i];
        for (int t = 0; t < STREAM_COUNT; t++) wait_for[i * STREAM_COUNT + t] = -1;
        if (!runs_in(node, p)) continue;
        int list = node->device * STREAM_COUNT + node->stream;
        for (int k = 0; k < node->n_in; k++) {
            if (!ir_reads_input(node, k, p)) continue;
            int w = writer_of(m, node->in[k]);
            const ir_node *src = &m->g.nodes[w];
            if (src->device != node->device || src->stream == node->stream || !has_kernel_work(src)) continue;
            int *latest = &wait_for[i * STREAM_COUNT + src->stream];
            if (w > waited_past[list * STREAM_COUNT + src->stream] && w > *latest) *latest = w;
        }
        for (int t = 0; t < STREAM_COUNT; t++) {
            int producer = wait_for[i * STREAM_COUNT + t];
            if (producer < 0) continue;
            waited_past[list * STREAM_COUNT + t] = producer;
            if (event_of[producer] < 0) event_of[producer] = 0; /* numbered below, in graph order */
        }
    }
    for (int i = 0; i < n; i++)
        if (event_of[i] >= 0) event_of[i] = m->n_events++;
    for (int i = 0; i < n; i++) {
        const ir_node *node = &m->g.nodes[i];
        if (!runs_in(node, p)) continue;
        ir_sched_list *l = &lists[node->device * STREAM_COUNT + node->stream];
        for (int t = 0; t < STREAM_COUNT; t++)
            if (wait_for[i * STREAM_COUNT + t] >= 0) push(l, SCHED_WAIT, event_of[wait_for[i * STREAM_COUNT + t]]);
        push(l, SCHED_KERNEL, i);
        if (event_of[i] >= 0) push(l, SCHED_RECORD, event_of[i]);
    }
    free(waited_past);
}

bool pass_schedule(ir_module *m, ir_diag *d, const pass_options *o) {
    (void)d, (void)o;
    int per_program = m->n_devices * STREAM_COUNT;
    m->n_sched = IR_PROGRAM_COUNT * per_program;
    m->sched = calloc((size_t)m->n_sched, sizeof *m->sched);
    m->n_events = 0;
    int *wait_for = malloc((size_t)m->g.n * STREAM_COUNT * sizeof *wait_for);
    int *event_of = malloc((size_t)m->g.n * sizeof *event_of);
    if (!wait_for || !event_of) abort();
    for (int p = 0; p < IR_PROGRAM_COUNT; p++) {
        ir_sched_list *lists = &m->sched[p * per_program];
        for (int k = 0; k < per_program; k++)
            lists[k] = (ir_sched_list){.program = p, .device = k / STREAM_COUNT, .stream = k % STREAM_COUNT};
        schedule_program(m, p, lists, wait_for, event_of);
    }
    free(wait_for), free(event_of);
    return true;
}
