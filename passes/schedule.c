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

/* Node i writing an input in place (an optimizer update on the comm stream)
 * waits, too, for the last earlier reader of those bytes on each other
 * stream of its device: the compute stream's forward and backward still read
 * the param. */
static void write_after_reads(const ir_module *m, int i, int list, const int *last_read, const int *waited_past,
                              int *wait_for) {
    const ir_node *node = &m->g.nodes[i];
    for (int k = 0; k < node->n_in; k++) {
        if (!ir_writes_input(node, k)) continue;
        int w = writer_of(m, node->in[k]);
        for (int t = 0; t < STREAM_COUNT; t++) {
            int r = last_read[w * STREAM_COUNT + t], *latest = &wait_for[i * STREAM_COUNT + t];
            if (t != node->stream && r >= 0 && r > waited_past[list * STREAM_COUNT + t] && r > *latest) *latest = r;
        }
    }
}

/* An update that reads its gradient from an all-reduce on its own stream
 * waits where that all-reduce does, when what it waits for comes before the
 * all-reduce: the bucket's updates then follow it with nothing in between,
 * and the CPU backend runs them inside it (runtime/exec.c). Returns the
 * all-reduce, or -1. */
static int wait_with_all_reduce(const ir_module *m, int i, int *wait_for) {
    const ir_node *node = &m->g.nodes[i];
    if (!(ir_ops[node->op].flags & OPF_UPDATE) || node->n_in < 2) return -1;
    int a = writer_of(m, node->in[1]);
    const ir_node *ar = &m->g.nodes[a];
    if (ar->op != OP_ALL_REDUCE || ar->device != node->device || ar->stream != node->stream) return -1;
    for (int t = 0; t < STREAM_COUNT; t++) {
        int *mine = &wait_for[i * STREAM_COUNT + t], *theirs = &wait_for[a * STREAM_COUNT + t];
        if (*mine < 0 || *mine >= a) continue;
        if (*mine > *theirs) *theirs = *mine;
        *mine = -1;
    }
    return a;
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
    int *last_read = malloc((size_t)n * STREAM_COUNT * sizeof *last_read); /* (bytes' writer, reader's stream) */
    if (!waited_past || !last_read) abort();
    for (int k = 0; k < n_lists * STREAM_COUNT; k++) waited_past[k] = -1;
    for (int k = 0; k < n * STREAM_COUNT; k++) last_read[k] = -1;
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
        write_after_reads(m, i, list, last_read, waited_past, wait_for);
        for (int k = 0; k < node->n_in; k++)
            if (ir_reads_input(node, k, p)) last_read[writer_of(m, node->in[k]) * STREAM_COUNT + node->stream] = i;
        int a = wait_with_all_reduce(m, i, wait_for);
        for (int j = 0; j < 2; j++) {
            int at = j ? a : i;
            for (int t = 0; at >= 0 && t < STREAM_COUNT; t++) {
                int producer = wait_for[at * STREAM_COUNT + t], *past = &waited_past[list * STREAM_COUNT + t];
                if (producer < 0) continue;
                if (producer > *past) *past = producer;
                if (event_of[producer] < 0) event_of[producer] = 0; /* numbered below, in graph order */
            }
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
    free(waited_past), free(last_read);
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
