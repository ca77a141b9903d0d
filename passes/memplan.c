/* memplan.c - one arena per device, laid out at compile time.
 *
 * Rule: variables (params, optimizer slots) and constants get their own
 * region at the start of the arena. Every other tensor that owns bytes (a
 * "root": views and in-place updates use their input's bytes, gradients are
 * written straight into their all-reduce bucket) is live, in each program,
 * from its first access to its last in the happens-before order of the
 * schedule (ir/order.h) - a partial order, since a device's streams run
 * concurrently. Two roots share bytes only when, in every program that
 * touches both, every access of one happens before every access of the
 * other; a result the host reads after a program lives to its end. So the
 * plan needs no synchronization beyond the schedule's, and the verifier's
 * race check (ir/races.c) proves it. An elementwise op whose input dies there
 * (every other access of it happens before) writes over that input: its
 * output joins the input's root. Placement is greedy by size (largest first,
 * lowest offset free of every placed root it conflicts with).
 */
#include <stdlib.h>
#include <string.h>

#include "../ir/order.h"
#include "passes.h"

enum { ALIGN = 64 };

/* A root's accesses on one stream of its device in one program. */
typedef struct {
    int first, last;           /* positions on the stream's list, -1: none */
    int first_node;            /* the node at `first` */
    int seen[STREAM_COUNT];    /* what first_node has seen of each stream */
} span;

typedef struct {
    bool used, to_end;         /* touched in this program; read by the host after it */
    span on[STREAM_COUNT];
} life;

typedef struct {
    int node;
    int64_t bytes, offset;
    life life[IR_PROGRAM_COUNT];
} root;

typedef struct {
    ir_module *m;
    ir_order *order[IR_PROGRAM_COUNT];
    root *roots;
    int *root_of;       /* node -> its root, -1 if it owns no scratch bytes */
    int *over;          /* elementwise node -> the input whose bytes it writes over, else -1 */
    int *packed_into;   /* gradient node -> the all_reduce whose bucket holds it, else -1 */
    int64_t *packed_at; /* its byte offset in that bucket */
} planner;

static int64_t align_up(int64_t x) { return (x + ALIGN - 1) / ALIGN * ALIGN; }

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
        } else if (P->over[i] >= 0) {
            i = P->over[i];
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

/* Node i (a kernel of program p) accesses the bytes of node j. */
static void touch(planner *P, int p, int i, int j) {
    int64_t extra;
    int r = P->root_of[storage_root(P, j, &extra)];
    if (r < 0) return;
    const ir_order *o = P->order[p];
    life *l = &P->roots[r].life[p];
    span *s = &l->on[P->m->g.nodes[i].stream];
    int pos = ir_order_pos(o, i);
    l->used = true;
    if (s->first < 0 || pos < s->first) s->first = pos, s->first_node = i;
    if (pos > s->last) s->last = pos;
}

/* Lifetimes of device dev's roots in program p. */
static void find_lives(planner *P, int p, int dev) {
    const ir_module *m = P->m;
    const ir_order *o = P->order[p];
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *n = &m->g.nodes[i];
        if (n->device != dev) continue;
        if (ir_order_list(o, i) >= 0) {
            touch(P, p, i, i);
            for (int k = 0; k < n->n_in; k++)
                if (m->g.nodes[n->in[k]].device == dev && ir_reads_input(n, k, p)) touch(P, p, i, n->in[k]);
        }
        int64_t extra;
        int r = P->root_of[storage_root(P, i, &extra)];
        if (r >= 0 && ir_host_reads(m, p, i)) P->roots[r].life[p].used = P->roots[r].life[p].to_end = true;
    }
}

static void first_clocks(planner *P, int count) {
    for (int r = 0; r < count; r++)
        for (int p = 0; p < IR_PROGRAM_COUNT; p++)
            for (int s = 0; s < STREAM_COUNT; s++) {
                span *sp = &P->roots[r].life[p].on[s];
                for (int t = 0; sp->first >= 0 && t < STREAM_COUNT; t++)
                    sp->seen[t] = ir_order_seen(P->order[p], sp->first_node, t);
            }
}

/* Every access of a happens before every access of b. */
static bool all_before(const life *a, const life *b) {
    if (a->to_end) return false;
    for (int s1 = 0; s1 < STREAM_COUNT; s1++) {
        if (a->on[s1].last < 0) continue;
        for (int s2 = 0; s2 < STREAM_COUNT; s2++) {
            const span *f = &b->on[s2];
            if (f->first >= 0 && (s1 == s2 ? a->on[s1].last >= f->first : a->on[s1].last > f->seen[s1])) return false;
        }
    }
    return true;
}

static bool conflict(const root *a, const root *b) {
    for (int p = 0; p < IR_PROGRAM_COUNT; p++) {
        const life *x = &a->life[p], *y = &b->life[p];
        if (x->used && y->used && !all_before(x, y) && !all_before(y, x)) return true;
    }
    return false;
}

/* In every program where node n runs, every other access of root r happens
 * before n (n reads r, so n is r's last access on its own stream). */
static bool dies_at(const planner *P, const root *r, int n) {
    for (int p = 0; p < IR_PROGRAM_COUNT; p++) {
        const ir_order *o = P->order[p];
        if (ir_order_list(o, n) < 0) continue;
        const life *l = &r->life[p];
        int own = P->m->g.nodes[n].stream;
        if (l->to_end || l->on[own].last != ir_order_pos(o, n)) return false;
        for (int t = 0; t < STREAM_COUNT; t++)
            if (t != own && l->on[t].last > ir_order_seen(o, n, t)) return false;
    }
    return true;
}

static void merge_life(root *into, const root *from) {
    for (int p = 0; p < IR_PROGRAM_COUNT; p++) {
        life *a = &into->life[p];
        const life *b = &from->life[p];
        a->used |= b->used, a->to_end |= b->to_end;
        for (int s = 0; s < STREAM_COUNT; s++) {
            span *x = &a->on[s];
            const span *y = &b->on[s];
            if (y->first >= 0 && (x->first < 0 || y->first < x->first)) x->first = y->first, x->first_node = y->first_node;
            if (y->last > x->last) x->last = y->last;
        }
    }
}

/* Elementwise ops (cast aside) over an input of their own size and element
 * count that dies there write in place: the output's root folds into the
 * input's, in node order, so chains (bias add, relu) share one tensor. */
static void fold_in_place(planner *P, int dev) {
    ir_module *m = P->m;
    for (int n = 0; n < m->g.n; n++) {
        const ir_node *node = &m->g.nodes[n];
        int self = P->root_of[n];
        if (node->device != dev || self < 0 || !(ir_ops[node->op].flags & OPF_ELEMENTWISE) || node->op == OP_CAST)
            continue;
        for (int k = 0; k < node->n_in; k++) {
            const ir_node *x = &m->g.nodes[node->in[k]];
            int64_t extra;
            int r = P->root_of[storage_root(P, node->in[k], &extra)];
            if (r < 0 || r == self || ir_node_bytes(x) != ir_node_bytes(node) ||
                ir_shape_numel(&x->shape) != ir_shape_numel(&node->shape) || !dies_at(P, &P->roots[r], n))
                continue;
            merge_life(&P->roots[r], &P->roots[self]);
            P->roots[self].bytes = 0; /* folded: placed with its input */
            P->over[n] = node->in[k], P->root_of[n] = -1; /* storage_root(n) now leads to r */
            break;
        }
    }
}

static int cmp_size_desc(const void *a, const void *b) {
    const root *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return x->node - y->node;
}

/* Lowest offset where t fits beside the placed roots it conflicts with. */
static int64_t place(const root *placed, int n_placed, const root *t) {
    int64_t offset = 0;
    for (bool moved = true; moved;) {
        moved = false;
        for (int k = 0; k < n_placed; k++) {
            const root *p = &placed[k];
            if (p->offset < offset + t->bytes && offset < p->offset + p->bytes && conflict(p, t)) {
                offset = align_up(p->offset + p->bytes);
                moved = true;
            }
        }
    }
    return offset;
}

/* Variables first, then the roots; returns how many roots there are. */
static int collect_roots(planner *P, int dev, int64_t *vars, int64_t *unplanned) {
    ir_module *m = P->m;
    int count = 0;
    for (int i = 0; i < m->g.n; i++) {
        ir_node *node = &m->g.nodes[i];
        P->root_of[i] = -1;
        if (node->device != dev) continue;
        *unplanned += align_up(ir_node_bytes(node));
        if (ir_ops[node->op].flags & OPF_VARIABLE || node->op == OP_CONST) { /* set once, kept */
            node->offset = *vars;
            *vars += align_up(ir_node_bytes(node));
        } else if (!aliases_input(node) && node->op != OP_INPUT && P->packed_into[i] < 0) {
            root *r = &P->roots[count];
            memset(r, 0, sizeof *r);
            r->node = i, r->bytes = align_up(ir_node_bytes(node));
            for (int p = 0; p < IR_PROGRAM_COUNT; p++)
                for (int s = 0; s < STREAM_COUNT; s++) r->life[p].on[s] = (span){.first = -1, .last = -1};
            P->root_of[i] = count++;
        }
    }
    return count;
}

static void plan_device(planner *P, int dev) {
    ir_module *m = P->m;
    int64_t vars = 0, unplanned = 0, peak = 0;
    int count = collect_roots(P, dev, &vars, &unplanned);
    for (int p = 0; p < IR_PROGRAM_COUNT; p++) find_lives(P, p, dev);
    fold_in_place(P, dev);
    first_clocks(P, count);
    qsort(P->roots, (size_t)count, sizeof *P->roots, cmp_size_desc);
    while (count > 0 && P->roots[count - 1].bytes == 0) count--; /* folded roots sort last */
    for (int k = 0; k < count; k++) {
        root *r = &P->roots[k];
        r->offset = place(P->roots, k, r);
        if (r->offset + r->bytes > peak) peak = r->offset + r->bytes;
        m->g.nodes[r->node].offset = vars + r->offset;
    }
    for (int i = 0; i < m->g.n; i++) {
        ir_node *node = &m->g.nodes[i];
        int64_t extra;
        if (node->device == dev && (aliases_input(node) || P->packed_into[i] >= 0 || P->over[i] >= 0))
            node->offset = m->g.nodes[storage_root(P, i, &extra)].offset + extra;
    }
    m->arena_bytes[dev] = vars + peak;
    m->unplanned_bytes[dev] = unplanned;
}

bool pass_memplan(ir_module *m, ir_diag *d, const pass_options *o) {
    (void)o;
    free(m->arena_bytes), free(m->unplanned_bytes);
    m->arena_bytes = calloc((size_t)m->n_devices, sizeof *m->arena_bytes);
    m->unplanned_bytes = calloc((size_t)m->n_devices, sizeof *m->unplanned_bytes);
    size_t n = (size_t)m->g.n + 1;
    planner P = {.m = m, .roots = malloc(n * sizeof *P.roots), .root_of = malloc(n * sizeof *P.root_of),
                 .over = malloc(n * sizeof *P.over), .packed_into = malloc(n * sizeof *P.packed_into),
                 .packed_at = malloc(n * sizeof *P.packed_at)};
    if (!m->arena_bytes || !m->unplanned_bytes || !P.roots || !P.root_of || !P.over || !P.packed_into || !P.packed_at)
        abort();
    for (size_t i = 0; i < n; i++) P.over[i] = -1;
    bool ok = true;
    for (int p = 0; p < IR_PROGRAM_COUNT && ok; p++) {
        char err[400];
        P.order[p] = ir_order_new(m, p, err, sizeof err);
        if (!P.order[p]) ir_diag_error(d, (ir_loc){0}, "internal error: the schedule cannot run: %s", err), ok = false;
    }
    if (ok) {
        find_packed(&P);
        for (int dev = 0; dev < m->n_devices; dev++) plan_device(&P, dev);
    }
    for (int p = 0; p < IR_PROGRAM_COUNT; p++) ir_order_free(P.order[p]);
    free(P.roots), free(P.root_of), free(P.over), free(P.packed_into), free(P.packed_at);
    return ok;
}
