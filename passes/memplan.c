/* memplan.c - one arena per device, laid out at compile time.
 *
 * Rule: variables (params, optimizer slots) and constants get their own region at the start
 * of the arena; every other tensor lives from the node that writes it to the
 * last node that reads it (graph order is the execution order of every
 * program), and tensors whose lifetimes overlap never share bytes. Aliasing
 * ops (reshape, view, in-place updates) share their input's bytes and extend
 * its lifetime. Tensors that a communication-stream node touches are kept
 * for the whole step, since the compute stream may run ahead of the comm
 * stream. Gradients are written straight into their all-reduce bucket, so
 * packing a bucket copies nothing. Placement is greedy by size (largest
 * first, lowest free offset).
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

enum { ALIGN = 64 };

typedef struct {
    int node;
    int64_t bytes, first, last, offset;
} interval;

static int64_t align_up(int64_t x) { return (x + ALIGN - 1) / ALIGN * ALIGN; }

typedef struct {
    ir_module *m;
    interval *iv;
    int *root_iv;     /* node -> its interval, -1 if it has none */
    int *packed_into; /* gradient node -> the all_reduce whose bucket holds it, else -1 */
    int64_t *packed_at; /* its byte offset in that bucket */
} planner;

static bool aliases_input(const ir_node *n) { return ir_ops[n->op].flags & (OPF_ALIAS | OPF_INPLACE); }

/* The node whose bytes node i uses, following alias chains and packed
 * gradients; *extra is the byte offset of i within it. */
static int storage_root(const planner *P, int i, int64_t *extra) {
    *extra = 0;
    for (;;) {
        const ir_node *n = &P->m->g.nodes[i];
        if (P->packed_into[i] >= 0) {
            *extra += P->packed_at[i];
            i = P->packed_into[i];
        } else if (aliases_input(n)) {
            if (n->op == OP_VIEW) *extra += n->iattr[0] * (int64_t)ir_dtype_size(n->dtype);
            i = n->in[0];
        } else {
            return i;
        }
    }
}

/* A gradient can live inside its bucket when it owns its bytes (not a
 * variable, constant or alias) and no other bucket wants it. */
static void find_packed(planner *P) {
    const ir_module *m = P->m;
    for (int i = 0; i < m->g.n; i++) P->packed_into[i] = -1;
    for (int a = 0; a < m->g.n; a++) {
        const ir_node *ar = &m->g.nodes[a];
        if (ar->op != OP_ALL_REDUCE) continue;
        int64_t at = 0;
        for (int k = 0; k < ar->n_in; k++) {
            int g = ar->in[k];
            const ir_node *gn = &m->g.nodes[g];
            if (!(ir_ops[gn->op].flags & (OPF_SOURCE | OPF_VARIABLE)) && !aliases_input(gn) &&
                P->packed_into[g] < 0 && gn->device == ar->device)
                P->packed_into[g] = a, P->packed_at[g] = at;
            at += ir_node_bytes(gn);
        }
    }
}

static int cmp_size_desc(const void *a, const void *b) {
    const interval *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return x->node - y->node;
}

/* Lowest offset where `t` fits beside the already placed intervals it overlaps in time. */
static int64_t place(const interval *placed, int n_placed, const interval *t) {
    int64_t offset = 0;
    for (bool moved = true; moved;) {
        moved = false;
        for (int k = 0; k < n_placed; k++) {
            const interval *p = &placed[k];
            if (p->last < t->first || t->last < p->first) continue;
            if (p->offset < offset + t->bytes && offset < p->offset + p->bytes) {
                offset = align_up(p->offset + p->bytes);
                moved = true;
            }
        }
    }
    return offset;
}

static void plan_device(planner *P, int dev) {
    ir_module *m = P->m;
    interval *iv = P->iv;
    int *root_iv = P->root_iv;
    int n = m->g.n, count = 0;
    int64_t vars = 0, unplanned = 0;
    for (int i = 0; i < n; i++) root_iv[i] = -1;
    for (int i = 0; i < n; i++) {
        ir_node *node = &m->g.nodes[i];
        if (node->device != dev) continue;
        unplanned += align_up(ir_node_bytes(node));
        if (ir_ops[node->op].flags & OPF_VARIABLE || node->op == OP_CONST) { /* set once, kept */
            node->offset = vars;
            vars += align_up(ir_node_bytes(node));
        } else if (!aliases_input(node) && node->op != OP_INPUT && P->packed_into[i] < 0) {
            iv[count] = (interval){i, align_up(ir_node_bytes(node)), i, i, 0};
            root_iv[i] = count++;
        }
    }
    /* lifetimes: every write and read extends the root's interval; comm touches pin it */
    for (int i = 0; i < n; i++) {
        const ir_node *node = &m->g.nodes[i];
        if (node->device != dev) continue;
        bool comm = node->stream == STREAM_COMM;
        int64_t extra;
        int self = root_iv[storage_root(P, i, &extra)];
        if (self >= 0 && iv[self].first > i) iv[self].first = i;
        if (self >= 0 && comm) iv[self].last = n;
        for (int k = 0; k < node->n_in; k++) {
            int r = root_iv[storage_root(P, node->in[k], &extra)];
            if (r < 0) continue;
            if (iv[r].last < i) iv[r].last = i;
            if (comm) iv[r].last = n;
        }
    }
    qsort(iv, (size_t)count, sizeof *iv, cmp_size_desc);
    int64_t peak = 0;
    for (int k = 0; k < count; k++) {
        iv[k].offset = place(iv, k, &iv[k]);
        if (iv[k].offset + iv[k].bytes > peak) peak = iv[k].offset + iv[k].bytes;
        m->g.nodes[iv[k].node].offset = vars + iv[k].offset;
    }
    for (int i = 0; i < n; i++) {
        ir_node *node = &m->g.nodes[i];
        int64_t extra;
        if (node->device == dev && (aliases_input(node) || P->packed_into[i] >= 0))
            node->offset = m->g.nodes[storage_root(P, i, &extra)].offset + extra;
    }
    m->arena_bytes[dev] = vars + peak;
    m->unplanned_bytes[dev] = unplanned;
}

bool pass_memplan(ir_module *m, ir_diag *d, const pass_options *o) {
    (void)d, (void)o;
    free(m->arena_bytes), free(m->unplanned_bytes);
    m->arena_bytes = calloc((size_t)m->n_devices, sizeof *m->arena_bytes);
    m->unplanned_bytes = calloc((size_t)m->n_devices, sizeof *m->unplanned_bytes);
    size_t n = (size_t)m->g.n;
    planner P = {m, malloc(n * sizeof *P.iv), malloc(n * sizeof *P.root_iv), malloc(n * sizeof *P.packed_into),
                 malloc(n * sizeof *P.packed_at)};
    find_packed(&P);
    for (int dev = 0; dev < m->n_devices; dev++) plan_device(&P, dev);
    free(P.iv), free(P.root_iv), free(P.packed_into), free(P.packed_at);
    return true;
}
