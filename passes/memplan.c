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
#include <limits.h>
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
    int *chain_root;    /* node -> storage_root's answer, -1 not walked since `over` last changed */
    int64_t *chain_extra;
    int *walk;          /* (n) the chain storage_root is walking, and each step's offset */
    int64_t *walk_step;
} planner;

static int64_t align_up(int64_t x) { return (x + ALIGN - 1) / ALIGN * ALIGN; }

static bool aliases_input(const ir_node *n) { return ir_ops[n->op].flags & (OPF_ALIAS | OPF_INPLACE); }

/* One step of the chain from node i to the bytes it uses: the bucket it is
 * packed in, the input it writes over, or the input it aliases (false: i
 * owns its bytes); *step is i's byte offset in the next node. */
static bool next_in_chain(const planner *P, int i, int *next, int64_t *step) {
    const ir_node *n = &P->m->g.nodes[i];
    *step = 0;
    if (P->packed_into[i] >= 0) *step = P->packed_at[i], *next = P->packed_into[i];
    else if (P->over[i] >= 0) *next = P->over[i];
    else if (aliases_input(n)) *step = n->op == OP_VIEW ? n->iattr[0] * (int64_t)ir_dtype_size(n->dtype) : 0, *next = n->in[0];
    else return false;
    return true;
}

/* Forgets the chains walked (after `over` changes). */
static void forget_chains(planner *P) {
    for (int i = 0; i < P->m->g.n; i++) P->chain_root[i] = -1;
}

/* The node whose bytes node i uses, following alias chains and packed
 * gradients; *extra is the byte offset of i within it. Every node walked
 * remembers its answer, so long chains (a gradient accumulated in place over
 * every step of an unrolled loop) are walked once, not once per access. */
static int storage_root(planner *P, int i, int64_t *extra) {
    int depth = 0, next;
    int64_t step;
    while (P->chain_root[i] < 0) {
        if (!next_in_chain(P, i, &next, &step)) {
            P->chain_root[i] = i, P->chain_extra[i] = 0;
            break;
        }
        P->walk[depth] = i, P->walk_step[depth++] = step;
        i = next;
    }
    int root = P->chain_root[i];
    int64_t at = P->chain_extra[i];
    while (depth > 0) {
        depth--;
        at += P->walk_step[depth];
        P->chain_root[P->walk[depth]] = root, P->chain_extra[P->walk[depth]] = at;
    }
    *extra = at;
    return root;
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

/* Per-element ops (ir_node_per_element) over an input of their own size and
 * element count that dies there write in place: the output's root folds into
 * the input's, in node order, so chains (bias add, relu) share one tensor.
 * (Issue 14: dropout too, whose copy outside training is then skipped, so
 * char_gpt's eval no longer copies its residual branches.) */
static void fold_in_place(planner *P, int dev) {
    ir_module *m = P->m;
    for (int n = 0; n < m->g.n; n++) {
        const ir_node *node = &m->g.nodes[n];
        int self = P->root_of[n];
        if (node->device != dev || self < 0 || !ir_node_per_element(node)) continue;
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

/* The placed roots in order of offset, as a treap (deterministic priorities)
 * whose subtrees know what first fit needs to step over them whole: the
 * lowest offset, the highest end, the widest gap before any entry but the
 * first (from the ends before it in the subtree: never less than the true
 * gap), and for each program and stream the positions every entry accesses
 * (the latest first access, the earliest last): a root accessing one of
 * those on that stream overlaps, hence conflicts with, every entry. */
typedef struct {
    int left, right;
    uint32_t prio;
    int64_t min_offset, max_end, gap;
    int lo[IR_PROGRAM_COUNT][STREAM_COUNT], hi[IR_PROGRAM_COUNT][STREAM_COUNT];
    /* for "no entry conflicts": the latest last access, the earliest first
     * access and the least of what a first access has seen of each stream */
    int max_last[IR_PROGRAM_COUNT][STREAM_COUNT], min_first[IR_PROGRAM_COUNT][STREAM_COUNT];
    int min_seen[IR_PROGRAM_COUNT][STREAM_COUNT][STREAM_COUNT];
    bool to_end[IR_PROGRAM_COUNT];
} slot;

typedef struct {
    const root *roots;
    slot *s; /* (count) one per root */
    int top;
} placed;

static int64_t end_of(const root *r) { return r->offset + r->bytes; }

static void pull(placed *T, int v) {
    slot *n = &T->s[v];
    const root *r = &T->roots[v];
    n->min_offset = r->offset, n->max_end = end_of(r), n->gap = INT64_MIN;
    for (int p = 0; p < IR_PROGRAM_COUNT; p++) {
        n->to_end[p] = r->life[p].to_end;
        for (int s = 0; s < STREAM_COUNT; s++) {
            const span *sp = &r->life[p].on[s];
            n->lo[p][s] = n->min_first[p][s] = sp->first >= 0 ? sp->first : INT_MAX;
            n->hi[p][s] = n->max_last[p][s] = sp->first >= 0 ? sp->last : -1;
            for (int u = 0; u < STREAM_COUNT; u++) n->min_seen[p][s][u] = sp->first >= 0 ? sp->seen[u] : INT_MAX;
        }
    }
    int sides[2] = {n->left, n->right};
    for (int k = 0; k < 2; k++) {
        if (sides[k] < 0) continue;
        const slot *c = &T->s[sides[k]];
        for (int p = 0; p < IR_PROGRAM_COUNT; p++) {
            n->to_end[p] |= c->to_end[p];
            for (int s = 0; s < STREAM_COUNT; s++) {
                if (c->lo[p][s] > n->lo[p][s]) n->lo[p][s] = c->lo[p][s];
                if (c->hi[p][s] < n->hi[p][s]) n->hi[p][s] = c->hi[p][s];
                if (c->max_last[p][s] > n->max_last[p][s]) n->max_last[p][s] = c->max_last[p][s];
                if (c->min_first[p][s] < n->min_first[p][s]) n->min_first[p][s] = c->min_first[p][s];
                for (int u = 0; u < STREAM_COUNT; u++)
                    if (c->min_seen[p][s][u] < n->min_seen[p][s][u]) n->min_seen[p][s][u] = c->min_seen[p][s][u];
            }
        }
        if (c->gap > n->gap) n->gap = c->gap;
    }
    int64_t end = end_of(r);
    if (n->left >= 0) {
        const slot *l = &T->s[n->left];
        n->min_offset = l->min_offset;
        if (r->offset - l->max_end > n->gap) n->gap = r->offset - l->max_end;
        if (l->max_end > end) end = l->max_end;
    }
    if (n->right >= 0) {
        const slot *g = &T->s[n->right];
        if (g->min_offset - end > n->gap) n->gap = g->min_offset - end;
        if (g->max_end > end) end = g->max_end;
    }
    n->max_end = end;
}

/* By offset, then by producer: the roots sharing bytes over time sit
 * together in the order they run, so those all before or all after a root
 * form few subtrees. */
static bool before_in_offset(const placed *T, int a, int b) {
    const root *x = &T->roots[a], *y = &T->roots[b];
    return x->offset != y->offset ? x->offset < y->offset : x->node < y->node;
}

/* Splits subtree v into the entries before root k (*l) and the rest (*r). */
static void split(placed *T, int v, int k, int *l, int *r) {
    if (v < 0) {
        *l = *r = -1;
        return;
    }
    if (before_in_offset(T, v, k)) split(T, T->s[v].right, k, &T->s[v].right, r), *l = v;
    else split(T, T->s[v].left, k, l, &T->s[v].left), *r = v;
    pull(T, v);
}

/* Inserts root k (slot zeroed but for its priority) into subtree v; returns
 * the subtree's new top. */
static int insert(placed *T, int v, int k) {
    if (v < 0 || T->s[k].prio > T->s[v].prio) {
        split(T, v, k, &T->s[k].left, &T->s[k].right);
        pull(T, k);
        return k;
    }
    if (before_in_offset(T, k, v)) T->s[v].left = insert(T, T->s[v].left, k);
    else T->s[v].right = insert(T, T->s[v].right, k);
    pull(T, v);
    return v;
}

/* A root accessing, on some stream in some program, a position that every
 * entry of subtree v accesses too conflicts with all of them. */
static bool conflicts_all(const slot *n, const root *t) {
    for (int p = 0; p < IR_PROGRAM_COUNT; p++)
        for (int s = 0; s < STREAM_COUNT; s++) {
            const span *sp = &t->life[p].on[s];
            if (sp->first >= 0 && n->lo[p][s] <= n->hi[p][s] && sp->first <= n->hi[p][s] && n->lo[p][s] <= sp->last)
                return true;
        }
    return false;
}

/* In every program t runs in, every entry of subtree v accesses its bytes
 * all before t (as all_before) or all after it: none conflicts with t. */
static bool conflicts_none(const slot *n, const root *t) {
    for (int p = 0; p < IR_PROGRAM_COUNT; p++) {
        const life *l = &t->life[p];
        if (!l->used) continue;
        bool before = !n->to_end[p], after = !l->to_end;
        for (int s1 = 0; s1 < STREAM_COUNT; s1++)
            for (int s2 = 0; s2 < STREAM_COUNT; s2++) {
                const span *f = &l->on[s2]; /* entries' last on s1 before t's first on s2 */
                if (f->first >= 0 && n->max_last[p][s1] >= 0 &&
                    (s1 == s2 ? n->max_last[p][s1] >= f->first : n->max_last[p][s1] > f->seen[s1]))
                    before = false;
                int last = l->on[s1].last; /* t's last on s1 before entries' first on s2 */
                if (last >= 0 && n->min_first[p][s2] != INT_MAX &&
                    (s1 == s2 ? last >= n->min_first[p][s2] : last > n->min_seen[p][s2][s1]))
                    after = false;
            }
        if (!before && !after) return false;
    }
    return true;
}

/* First fit over subtree v in offset order: each placed root that overlaps
 * [cur, cur + bytes) and conflicts with t moves cur past its end; true once
 * an entry starts at or past cur + bytes (t fits at cur). A subtree that
 * ends below cur, or whose entries all conflict with t with no gap t fits
 * in, or whose entries none conflicts with, is stepped over whole. */
static bool first_fit(const placed *T, int v, const root *t, int64_t *cur) {
    if (v < 0) return false;
    const slot *n = &T->s[v];
    if (n->min_offset >= *cur + t->bytes) return true;
    if (n->max_end <= *cur || conflicts_none(n, t)) return false;
    if (n->gap < t->bytes && conflicts_all(n, t)) {
        *cur = n->max_end; /* ends are aligned */
        return false;
    }
    if (first_fit(T, n->left, t, cur)) return true;
    const root *p = &T->roots[v];
    if (p->offset >= *cur + t->bytes) return true;
    if (end_of(p) > *cur && conflict(p, t)) *cur = align_up(end_of(p));
    return first_fit(T, n->right, t, cur);
}

/* Lowest offset where root k fits beside the placed roots it conflicts
 * with - the offset that trying every placed root until none moves it
 * gives, found without visiting most of them; then k joins them. */
static int64_t place(placed *T, int k) {
    int64_t cur = 0;
    first_fit(T, T->top, &T->roots[k], &cur);
    return cur;
}

/* The reference: the lowest offset found by trying every placed root until
 * none moves it (quadratic; pass_options.memplan_rescan). */
static int64_t place_rescan(const root *placed_roots, int n_placed, const root *t) {
    int64_t offset = 0;
    for (bool moved = true; moved;) {
        moved = false;
        for (int k = 0; k < n_placed; k++) {
            const root *p = &placed_roots[k];
            if (p->offset < offset + t->bytes && offset < end_of(p) && conflict(p, t)) {
                offset = align_up(end_of(p));
                moved = true;
            }
        }
    }
    return offset;
}

/* Variables first, then the roots; returns how many roots there are, and
 * adds their bytes to *unplanned (the arena if no two shared bytes). */
static int collect_roots(planner *P, int dev, int64_t *vars, int64_t *unplanned) {
    ir_module *m = P->m;
    int count = 0;
    for (int i = 0; i < m->g.n; i++) {
        ir_node *node = &m->g.nodes[i];
        P->root_of[i] = -1;
        if (node->device != dev) continue;
        if (ir_ops[node->op].flags & OPF_VARIABLE || node->op == OP_CONST) { /* set once, kept */
            node->offset = *vars;
            *vars += align_up(ir_node_bytes(node));
        } else if (!aliases_input(node) && node->op != OP_INPUT && P->packed_into[i] < 0) {
            root *r = &P->roots[count];
            memset(r, 0, sizeof *r);
            r->node = i, r->bytes = align_up(ir_node_bytes(node));
            *unplanned += r->bytes;
            for (int p = 0; p < IR_PROGRAM_COUNT; p++)
                for (int s = 0; s < STREAM_COUNT; s++) r->life[p].on[s] = (span){.first = -1, .last = -1};
            P->root_of[i] = count++;
        }
    }
    return count;
}

static void plan_device(planner *P, int dev, bool rescan) {
    ir_module *m = P->m;
    int64_t vars = 0, unplanned = 0, peak = 0;
    int count = collect_roots(P, dev, &vars, &unplanned);
    forget_chains(P);
    for (int p = 0; p < IR_PROGRAM_COUNT; p++) find_lives(P, p, dev);
    forget_chains(P); /* fold_in_place only adds links from a node to earlier ones */
    fold_in_place(P, dev);
    forget_chains(P);
    first_clocks(P, count);
    qsort(P->roots, (size_t)count, sizeof *P->roots, cmp_size_desc);
    while (count > 0 && P->roots[count - 1].bytes == 0) count--; /* folded roots sort last */
    placed T = {P->roots, malloc(((size_t)count + 1) * sizeof *T.s), -1};
    if (!T.s) abort();
    uint32_t seed = 12345;
    for (int k = 0; k < count; k++) {
        root *r = &P->roots[k];
        r->offset = rescan ? place_rescan(P->roots, k, r) : place(&T, k);
        seed = seed * 1664525u + 1013904223u;
        T.s[k] = (slot){.left = -1, .right = -1, .prio = seed};
        T.top = insert(&T, T.top, k);
        if (r->offset + r->bytes > peak) peak = r->offset + r->bytes;
        m->g.nodes[r->node].offset = vars + r->offset;
    }
    free(T.s);
    for (int i = 0; i < m->g.n; i++) {
        ir_node *node = &m->g.nodes[i];
        int64_t extra;
        if (node->device == dev && (aliases_input(node) || P->packed_into[i] >= 0 || P->over[i] >= 0))
            node->offset = m->g.nodes[storage_root(P, i, &extra)].offset + extra;
    }
    m->arena_bytes[dev] = vars + peak;
    m->unplanned_bytes[dev] = vars + unplanned; /* without reuse: every root in bytes of its own */
}

bool pass_memplan(ir_module *m, ir_diag *d, const pass_options *o) {
    free(m->arena_bytes), free(m->unplanned_bytes);
    m->arena_bytes = calloc((size_t)m->n_devices, sizeof *m->arena_bytes);
    m->unplanned_bytes = calloc((size_t)m->n_devices, sizeof *m->unplanned_bytes);
    size_t n = (size_t)m->g.n + 1;
    planner P = {.m = m, .roots = malloc(n * sizeof *P.roots), .root_of = malloc(n * sizeof *P.root_of),
                 .over = malloc(n * sizeof *P.over), .packed_into = malloc(n * sizeof *P.packed_into),
                 .packed_at = malloc(n * sizeof *P.packed_at), .chain_root = malloc(n * sizeof *P.chain_root),
                 .chain_extra = malloc(n * sizeof *P.chain_extra), .walk = malloc(n * sizeof *P.walk),
                 .walk_step = malloc(n * sizeof *P.walk_step)};
    if (!m->arena_bytes || !m->unplanned_bytes || !P.roots || !P.root_of || !P.over || !P.packed_into || !P.packed_at ||
        !P.chain_root || !P.chain_extra || !P.walk || !P.walk_step)
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
        for (int dev = 0; dev < m->n_devices; dev++) plan_device(&P, dev, o && o->memplan_rescan);
    }
    for (int p = 0; p < IR_PROGRAM_COUNT; p++) ir_order_free(P.order[p]);
    free(P.roots), free(P.root_of), free(P.over), free(P.packed_into), free(P.packed_at);
    free(P.chain_root), free(P.chain_extra), free(P.walk), free(P.walk_step);
    return ok;
}
