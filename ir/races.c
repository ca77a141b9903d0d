/* races.c - the race check of a planned, scheduled module (docs/runtime.md,
 * "Happens-before").
 *
 * For every program and device it lists each kernel's byte accesses in the
 * device's arena (the output it writes, the inputs it reads; for a read, the
 * node whose value it expects there; the host's read of a result after the
 * program) and, for every two accesses whose bytes overlap, checks:
 *   race:    two kernels on different streams, one writing, are ordered by
 *            happens-before (order.h), one way or the other;
 *   clobber: a write over bytes that a read expects to hold another node's
 *            value happens before that value was written, or after the read;
 *   in place: a kernel writes over an input it reads only where it is meant
 *            to (updates, broadcast, an all-reduce's packed gradients, an
 *            elementwise op over an input of exactly its bytes).
 * Accesses are swept in order of their first byte, so only overlapping pairs
 * are visited. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "order.h"

typedef struct {
    int node;      /* kernel node, or -1: the host, after the program */
    int value;     /* reads: the node whose value is expected, -1 a variable or constant set before the program */
    int64_t lo, hi;
    bool write;
    bool in_place; /* a read of bytes the same kernel writes on purpose */
} access;

typedef struct {
    const ir_module *m;
    const ir_order *o;
    int program, device;
    ir_report_fn report;
    void *ctx;
    int problems;
    int64_t pairs;   /* cross-stream overlapping pairs found ordered */
    access *acc;
    int n_acc, cap_acc;
} checker;

static void problem(checker *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(checker *c, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->problems++ < 8 && c->report) c->report(c->ctx, msg); /* the first few: one bug tends to repeat */
}

static void add(checker *c, access a) {
    if (c->n_acc == c->cap_acc) {
        c->cap_acc = c->cap_acc ? 2 * c->cap_acc : 256;
        c->acc = realloc(c->acc, (size_t)c->cap_acc * sizeof *c->acc);
        if (!c->acc) abort();
    }
    c->acc[c->n_acc++] = a;
}

/* The node that wrote the bytes node i names: i, or the producer behind a
 * chain of views; -1 for variables and constants. */
static int value_writer(const ir_module *m, int i) {
    while (ir_is_view(&m->g.nodes[i])) i = m->g.nodes[i].in[0];
    unsigned f = ir_ops[m->g.nodes[i].op].flags;
    return f & OPF_VARIABLE || m->g.nodes[i].op == OP_CONST ? -1 : i;
}

static access bytes_of(const ir_module *m, int i) {
    const ir_node *n = &m->g.nodes[i];
    return (access){.lo = n->offset, .hi = n->offset + ir_node_bytes(n)};
}

/* An elementwise kernel (cast aside) may write over an input of exactly its
 * own bytes: element i is read before it is written. */
static bool elementwise_over(const ir_module *m, const ir_node *n, int k) {
    const ir_node *x = &m->g.nodes[n->in[k]];
    return ir_ops[n->op].flags & OPF_ELEMENTWISE && n->op != OP_CAST && x->offset == n->offset &&
           ir_node_bytes(x) == ir_node_bytes(n) && ir_shape_numel(&x->shape) == ir_shape_numel(&n->shape);
}

/* Input k of all_reduce node i sits where its packing kernel would copy it. */
static bool packed_in_place(const ir_module *m, const ir_node *n, int k) {
    int64_t at = n->offset;
    for (int j = 0; j < k; j++) at += ir_node_bytes(&m->g.nodes[n->in[j]]);
    return m->g.nodes[n->in[k]].offset == at;
}

static void add_kernel(checker *c, int i) {
    const ir_module *m = c->m;
    const ir_node *n = &m->g.nodes[i];
    access w = bytes_of(m, i);
    w.node = w.value = i, w.write = true;
    add(c, w);
    for (int k = 0; k < n->n_in; k++) {
        int j = n->in[k];
        if (m->g.nodes[j].device < 0 || !ir_reads_input(n, k, c->program)) continue; /* a host input, or a branch not taken */
        access r = bytes_of(m, j);
        r.node = i, r.value = value_writer(m, j);
        r.in_place = ir_writes_input(n, k) || (n->op == OP_ALL_REDUCE && packed_in_place(m, n, k)) ||
                     elementwise_over(m, n, k);
        add(c, r);
        if (ir_writes_input(n, k) && k > 0) { /* slots, written in place */
            access s = r;
            s.write = true, s.value = i;
            add(c, s);
        }
        if (r.value >= 0 && ir_order_list(c->o, r.value) < 0)
            problem(c, "the %s program: node %d (%s) reads node %d (%s), which that program does not compute",
                    ir_program_names[c->program], i, ir_ops[n->op].name, r.value, ir_ops[m->g.nodes[r.value].op].name);
    }
}

/* "node 12 (relu_grad, compute stream, m.mg:5:7)" */
static const char *describe(const checker *c, int i, char *buf, size_t cap) {
    if (i < 0) return snprintf(buf, cap, "the host after the %s program", ir_program_names[c->program]), buf;
    const ir_node *n = &c->m->g.nodes[i];
    snprintf(buf, cap, "node %d (%s, %s stream, %s:%d:%d)", i, ir_ops[n->op].name,
             n->stream == STREAM_COMM ? "comm" : "compute", n->loc.file ? n->loc.file : "?", n->loc.line, n->loc.col);
    return buf;
}

static bool before(const checker *c, int a, int b) { return a >= 0 && b >= 0 && ir_order_before(c->o, a, b); }

static void check_race(checker *c, const access *x, const access *y) {
    if (x->node < 0 || y->node < 0 || x->node == y->node || !(x->write || y->write)) return;
    if (ir_order_list(c->o, x->node) == ir_order_list(c->o, y->node)) return;
    if (before(c, x->node, y->node) || before(c, y->node, x->node)) {
        c->pairs++;
        return;
    }
    if (x->node > y->node) { /* name them in node order */
        const access *t = x;
        x = y, y = t;
    }
    char a[200], b[200];
    const ir_device *d = &c->m->devices[c->device];
    problem(c, "race in the %s program on %s:%d: %s %s bytes [%lld, %lld) and %s %s bytes [%lld, %lld), and neither "
            "happens before the other",
            ir_program_names[c->program], d->name, d->index, describe(c, x->node, a, sizeof a), x->write ? "writes" : "reads",
            (long long)x->lo, (long long)x->hi, describe(c, y->node, b, sizeof b), y->write ? "writes" : "reads",
            (long long)y->lo, (long long)y->hi);
}

/* Read r expects value r->value in its bytes; write w puts something else there. */
static void check_clobber(checker *c, const access *r, const access *w) {
    if (r->write || !w->write || w->value == r->value) return;
    if (w->node == r->node) {
        if (r->in_place) return;
    } else if (before(c, w->node, r->value) || before(c, r->node, w->node)) {
        return;
    }
    char a[200], b[200];
    const ir_device *d = &c->m->devices[c->device];
    if (w->node == r->node)
        problem(c, "in the %s program on %s:%d, %s writes its output, bytes [%lld, %lld), over its input node %d "
                "(bytes [%lld, %lld))",
                ir_program_names[c->program], d->name, d->index, describe(c, w->node, a, sizeof a), (long long)w->lo,
                (long long)w->hi, r->value, (long long)r->lo, (long long)r->hi);
    else
        problem(c, "in the %s program on %s:%d, %s writes bytes [%lld, %lld) while %s still needs there the value of "
                "node %d (bytes [%lld, %lld))",
                ir_program_names[c->program], d->name, d->index, describe(c, w->node, a, sizeof a), (long long)w->lo,
                (long long)w->hi, describe(c, r->node, b, sizeof b), r->value, (long long)r->lo, (long long)r->hi);
}

/* By first byte, then node and kind: a total order, so messages do not
 * depend on the sort. */
static int by_first_byte(const void *a, const void *b) {
    const access *x = a, *y = b;
    if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    if (x->write != y->write) return x->write ? 1 : -1;
    return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* Every overlapping pair once: accesses sorted by first byte, each checked
 * against those still open (whose last byte lies past its first). */
static void sweep(checker *c) {
    if (c->n_acc == 0) return;
    qsort(c->acc, (size_t)c->n_acc, sizeof *c->acc, by_first_byte);
    int *open = malloc(((size_t)c->n_acc + 1) * sizeof *open), n_open = 0;
    if (!open) abort();
    for (int k = 0; k < c->n_acc; k++) {
        const access *x = &c->acc[k];
        int kept = 0;
        for (int j = 0; j < n_open; j++) {
            const access *y = &c->acc[open[j]];
            if (y->hi <= x->lo) continue;
            open[kept++] = open[j];
            if (x->hi <= x->lo) continue;
            check_race(c, x, y);
            check_clobber(c, x, y);
            check_clobber(c, y, x);
        }
        n_open = kept;
        open[n_open++] = k;
    }
    free(open);
}

static void check_device(checker *c) {
    const ir_module *m = c->m;
    c->n_acc = 0;
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *n = &m->g.nodes[i];
        if (n->device != c->device) continue;
        if (ir_order_list(c->o, i) >= 0) add_kernel(c, i);
        if (ir_host_reads(m, c->program, i)) {
            access h = bytes_of(m, i);
            h.node = -1, h.value = value_writer(m, i);
            add(c, h);
        }
    }
    sweep(c);
}

int ir_check_races(const ir_module *m, ir_report_fn report, void *ctx, int64_t *pairs) {
    checker c = {.m = m, .report = report, .ctx = ctx};
    char err[400];
    for (int p = 0; p < IR_PROGRAM_COUNT; p++) {
        ir_order *o = ir_order_new(m, p, err, sizeof err);
        if (!o) {
            problem(&c, "%s", err);
            continue;
        }
        c.o = o, c.program = p;
        for (c.device = 0; c.device < m->n_devices; c.device++) check_device(&c);
        ir_order_free(o);
    }
    free(c.acc);
    if (pairs) *pairs = c.pairs;
    return c.problems;
}
