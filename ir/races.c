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
#include <limits.h>
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
    bool pairwise;   /* visit every overlapping pair (the tests' reference) */
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

/* A per-element kernel (ir_node_per_element) may write over an input of
 * exactly its own bytes: element i is read before it is written. */
static bool elementwise_over(const ir_module *m, const ir_node *n, int k) {
    const ir_node *x = &m->g.nodes[n->in[k]];
    return ir_node_per_element(n) && x->offset == n->offset &&
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

/* The open accesses (those whose bytes reach past the first byte of the one
 * being swept), indexed by where their kernel runs: leaves in order of
 * (stream, position on it, access), the host's reads last, so the accesses
 * of one stream between two positions are one range of leaves. A tree over
 * the leaves counts the open accesses and writes and keeps, for the open
 * reads, the least position of each stream seen by the value read. Since
 * happens-before along a stream is monotone (a later kernel has seen at
 * least what an earlier one has), the open accesses that an access could
 * race with or clobber lie in one range of positions per stream, and the
 * tree finds exactly those in O(log n) each: a race-free plan is proved in
 * O(n log n), not by visiting every overlapping pair. */
typedef struct {
    int size;                   /* leaves, rounded up to a power of two */
    int *count, *writes;        /* (2 size) open accesses, open writes under each tree node */
    int *key;                   /* (2 size, STREAM_COUNT) least seen(value read, s) of an open read below */
    int *leaf;                  /* (n_acc) access -> leaf */
    int *at_leaf;               /* (size) leaf -> access */
    int *first_leaf;            /* (n_pos + 2) first leaf of each (stream, position); the host's reads at n_pos */
    int *node_at;               /* (n_pos) kernel node at each (stream, position) */
    int base[STREAM_COUNT + 1]; /* index of each stream's position 0 in first_leaf and node_at */
} tree;

enum { ANY, WRITES, READS_BELOW }; /* the open accesses a query wants */

typedef struct {
    checker *c;
    const tree *T;
    const access *x;
    int mode, stream, below; /* READS_BELOW: open reads whose key[stream] < below */
    void (*pair)(checker *c, const access *x, const access *y);
    int found;
} query;

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) abort();
    return p;
}

/* The stream node i runs on in this program on this device, or -1. */
static int stream_of(const checker *c, int i) {
    int l = i >= 0 ? ir_order_list(c->o, i) : -1;
    return l >= 0 && l / STREAM_COUNT == c->device ? l % STREAM_COUNT : -1;
}

/* A read's key: what the kernel that wrote its value has seen of stream s,
 * -1 when no kernel of this device wrote it (nothing happens before it). */
static int value_seen(const checker *c, int value, int s) {
    return stream_of(c, value) >= 0 ? ir_order_seen(c->o, value, s) : -1;
}

static void tree_set(tree *T, const checker *c, int k, bool open) {
    const access *a = &c->acc[k];
    int v = T->size + T->leaf[k];
    T->count[v] = open, T->writes[v] = open && a->write;
    for (int s = 0; s < STREAM_COUNT; s++)
        T->key[v * STREAM_COUNT + s] = open && !a->write ? value_seen(c, a->value, s) : INT_MAX;
    for (v /= 2; v >= 1; v /= 2) {
        T->count[v] = T->count[2 * v] + T->count[2 * v + 1];
        T->writes[v] = T->writes[2 * v] + T->writes[2 * v + 1];
        for (int s = 0; s < STREAM_COUNT; s++) {
            int l = T->key[2 * v * STREAM_COUNT + s], r = T->key[(2 * v + 1) * STREAM_COUNT + s];
            T->key[v * STREAM_COUNT + s] = l < r ? l : r;
        }
    }
}

static bool wanted(const query *q, int v) {
    if (q->mode == ANY) return q->T->count[v] > 0;
    if (q->mode == WRITES) return q->T->writes[v] > 0;
    return q->T->key[v * STREAM_COUNT + q->stream] < q->below;
}

/* Every wanted open access among leaves [lo, hi) under tree node v, which
 * covers leaves [vlo, vhi), in leaf order. */
static void visit(query *q, int v, int vlo, int vhi, int lo, int hi) {
    if (hi <= vlo || vhi <= lo || !wanted(q, v)) return;
    if (vhi - vlo == 1) {
        q->found++;
        q->pair(q->c, q->x, &q->c->acc[q->T->at_leaf[vlo]]);
        return;
    }
    int mid = (vlo + vhi) / 2;
    visit(q, 2 * v, vlo, mid, lo, hi);
    visit(q, 2 * v + 1, mid, vhi, lo, hi);
}

static int64_t count_in(const tree *T, bool writes_only, int lo, int hi) {
    int64_t n = 0;
    for (lo += T->size, hi += T->size; lo < hi; lo /= 2, hi /= 2) {
        if (lo & 1) n += writes_only ? T->writes[lo] : T->count[lo], lo++;
        if (hi & 1) hi--, n += writes_only ? T->writes[hi] : T->count[hi];
    }
    return n;
}

/* Leaves of stream t's kernels at positions (after, upto]. */
static int range_lo(const tree *T, int t, int after) { return T->first_leaf[T->base[t] + after + 1]; }
static int range_hi(const tree *T, int t, int upto) { return T->first_leaf[T->base[t] + upto + 1]; }
static int stream_len(const tree *T, int t) { return T->base[t + 1] - T->base[t]; }

/* The first position of stream t whose kernel has seen position p of stream
 * s (stream t's length if none). */
static int first_seeing(const checker *c, const tree *T, int t, int s, int p) {
    int lo = 0, hi = stream_len(T, t);
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (ir_order_seen(c->o, T->node_at[T->base[t] + mid], s) >= p) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

static int ask(checker *c, const tree *T, const access *x, int mode, int lo, int hi,
               void (*pair)(checker *, const access *, const access *)) {
    query q = {.c = c, .T = T, .x = x, .mode = mode, .pair = pair};
    if (mode == READS_BELOW) q.stream = stream_of(c, x->node), q.below = ir_order_pos(c->o, x->node);
    if (lo < hi) visit(&q, 1, 0, T->size, lo, hi);
    return q.found;
}

static void race_pair(checker *c, const access *x, const access *y) { check_race(c, x, y); }
static void read_then_write(checker *c, const access *x, const access *y) { check_clobber(c, x, y); }
static void write_then_read(checker *c, const access *x, const access *y) { check_clobber(c, y, x); }

/* Access x against every open access it overlaps, through the tree:
 *   race:  kernel y on another stream t, unordered: pos(y) > seen(x, t)
 *          and seen(y, s) < pos(x), i.e. pos(y) < first_seeing(t, s, pos(x));
 *   x reads value V, y writes: neither y before V (pos(y) > seen(V, t)) nor
 *          x before y (as above; the host's read is before nothing);
 *   x writes, y reads value V: y not before x (pos(y) > seen(x, t); every
 *          host read) and x not before V (seen(V, s) < pos(x): the key). */
static void check_open(checker *c, const tree *T, const access *x) {
    int s = stream_of(c, x->node), p = s >= 0 ? ir_order_pos(c->o, x->node) : -1;
    for (int t = 0; t < STREAM_COUNT; t++) {
        int len = stream_len(T, t);
        int upto = s < 0 ? len - 1 : first_seeing(c, T, t, s, p) - 1; /* not seen by x */
        if (s >= 0 && t != s) {
            int after = ir_order_seen(c->o, x->node, t);
            int64_t all = count_in(T, !x->write, range_lo(T, t, -1), range_hi(T, t, len - 1));
            int racing = ask(c, T, x, x->write ? ANY : WRITES, range_lo(T, t, after), range_hi(T, t, upto), race_pair);
            c->pairs += all - racing; /* check_race counts any it finds ordered */
        }
        if (!x->write) {
            int after = value_seen(c, x->value, t);
            if (after < upto) ask(c, T, x, WRITES, range_lo(T, t, after), range_hi(T, t, upto), read_then_write);
        } else {
            ask(c, T, x, READS_BELOW, range_lo(T, t, ir_order_seen(c->o, x->node, t)), range_hi(T, t, len - 1),
                write_then_read);
        }
    }
    if (x->write) ask(c, T, x, READS_BELOW, T->first_leaf[T->base[STREAM_COUNT]], T->size, write_then_read);
}

/* Leaves for this program and device's accesses (tree.first_leaf etc.). */
static void tree_build(tree *T, const checker *c) {
    const ir_module *m = c->m;
    int len[STREAM_COUNT] = {0};
    for (int i = 0; i < m->g.n; i++)
        if (m->g.nodes[i].device == c->device && stream_of(c, i) >= 0) len[stream_of(c, i)]++;
    T->base[0] = 0;
    for (int t = 0; t < STREAM_COUNT; t++) T->base[t + 1] = T->base[t] + len[t];
    int n_pos = T->base[STREAM_COUNT];
    T->node_at = xcalloc((size_t)n_pos, sizeof *T->node_at);
    for (int i = 0; i < m->g.n; i++)
        if (m->g.nodes[i].device == c->device && stream_of(c, i) >= 0)
            T->node_at[T->base[stream_of(c, i)] + ir_order_pos(c->o, i)] = i;
    T->first_leaf = xcalloc((size_t)n_pos + 2, sizeof *T->first_leaf);
    T->leaf = xcalloc((size_t)c->n_acc, sizeof *T->leaf);
    for (int k = 0; k < c->n_acc; k++) { /* counting sort by (stream, position); the host last */
        int s = stream_of(c, c->acc[k].node);
        T->leaf[k] = s < 0 ? n_pos : T->base[s] + ir_order_pos(c->o, c->acc[k].node);
        T->first_leaf[T->leaf[k] + 1]++;
    }
    for (int g = 0; g <= n_pos; g++) T->first_leaf[g + 1] += T->first_leaf[g];
    for (T->size = 1; T->size < c->n_acc; T->size *= 2) {}
    T->at_leaf = xcalloc((size_t)T->size, sizeof *T->at_leaf);
    int *fill = xcalloc((size_t)n_pos + 1, sizeof *fill);
    for (int k = 0; k < c->n_acc; k++) {
        int g = T->leaf[k];
        T->leaf[k] = T->first_leaf[g] + fill[g]++;
        T->at_leaf[T->leaf[k]] = k;
    }
    free(fill);
    T->count = xcalloc(2 * (size_t)T->size, sizeof *T->count);
    T->writes = xcalloc(2 * (size_t)T->size, sizeof *T->writes);
    T->key = xcalloc(2 * (size_t)T->size * STREAM_COUNT, sizeof *T->key);
    for (size_t v = 0; v < 2 * (size_t)T->size * STREAM_COUNT; v++) T->key[v] = INT_MAX;
}

static void tree_free(tree *T) {
    free(T->count), free(T->writes), free(T->key), free(T->leaf), free(T->at_leaf), free(T->first_leaf), free(T->node_at);
}

typedef struct {
    int64_t hi;
    int k;
} closing;

static int by_closing(const void *a, const void *b) {
    const closing *x = a, *y = b;
    if (x->hi != y->hi) return x->hi < y->hi ? -1 : 1;
    return x->k - y->k;
}

static bool overlap(const access *a, const access *b) {
    return a->lo < a->hi && b->lo < b->hi && a->lo < b->hi && b->lo < a->hi;
}

/* A kernel's writes against its own reads (accesses k .. end-1, one node). */
static void check_own(checker *c, int k, int end) {
    for (int w = k; w < end; w++)
        for (int r = k; r < end && c->acc[w].write; r++)
            if (!c->acc[r].write && overlap(&c->acc[r], &c->acc[w])) check_clobber(c, &c->acc[r], &c->acc[w]);
}

/* Every overlapping pair of accesses once: a kernel's own accesses among
 * themselves, then the accesses sorted by first byte, each checked through
 * the tree against those of other nodes still open (whose last byte lies
 * past its first). */
static void sweep(checker *c) {
    for (int k = 0, end; k < c->n_acc; k = end) { /* add_kernel lists a kernel's accesses together */
        for (end = k + 1; end < c->n_acc && c->acc[end].node == c->acc[k].node; end++) {}
        if (c->acc[k].node >= 0) check_own(c, k, end);
    }
    if (c->n_acc == 0) return;
    qsort(c->acc, (size_t)c->n_acc, sizeof *c->acc, by_first_byte);
    tree T = {0};
    tree_build(&T, c);
    closing *by_end = xcalloc((size_t)c->n_acc, sizeof *by_end);
    for (int k = 0; k < c->n_acc; k++) by_end[k] = (closing){c->acc[k].hi, k};
    qsort(by_end, (size_t)c->n_acc, sizeof *by_end, by_closing);
    for (int k = 0, closed = 0; k < c->n_acc; k++) {
        const access *x = &c->acc[k];
        for (; closed < c->n_acc && by_end[closed].hi <= x->lo; closed++)
            if (by_end[closed].k < k) tree_set(&T, c, by_end[closed].k, false);
        if (x->hi <= x->lo) continue;
        check_open(c, &T, x);
        tree_set(&T, c, k, true);
    }
    free(by_end);
    tree_free(&T);
}

/* The reference the tests hold the tree to: every overlapping pair visited
 * (quadratic where bytes are reused often). */
static void sweep_pairwise(checker *c) {
    if (c->n_acc == 0) return;
    qsort(c->acc, (size_t)c->n_acc, sizeof *c->acc, by_first_byte);
    int *open = xcalloc((size_t)c->n_acc + 1, sizeof *open), n_open = 0;
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
    if (c->pairwise) sweep_pairwise(c);
    else sweep(c);
}

static int check_races(const ir_module *m, ir_report_fn report, void *ctx, int64_t *pairs, bool pairwise) {
    checker c = {.m = m, .report = report, .ctx = ctx, .pairwise = pairwise};
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

int ir_check_races(const ir_module *m, ir_report_fn report, void *ctx, int64_t *pairs) {
    return check_races(m, report, ctx, pairs, false);
}

int ir_check_races_pairwise(const ir_module *m, ir_report_fn report, void *ctx, int64_t *pairs) {
    return check_races(m, report, ctx, pairs, true);
}
