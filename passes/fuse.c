/* fuse.c - elementwise fusion (issue 14): chains of f32 elementwise ops become
 * one `fused` node whose program (ir/ir.h, ir_fused) runs them per element, so
 * the chain walks memory once and its intermediates never exist.
 *
 * Rule, on the one-replica graph after the optimizer (replicate clones the result):
 *   - a node is fusible when its op may be an instruction (ir_fused_op_ok) and
 *     it and its inputs are f32; pinned when something outside the graph reads
 *     it (the loss, a metric, an output, a gradient the optimizer and the
 *     all-reduce take, an input or a param);
 *   - inlined: a fusible, unpinned node of a cheap op (no transcendental) with
 *     at most one operand of its own element count, whose every user is
 *     fusible. Each user's group recomputes it from its operands, which reads
 *     as many bytes as reading it would, so it is never written (the bias add
 *     read by both relu and relu_grad);
 *   - groups are grown from the last node backwards: a root (a fusible node
 *     not yet taken) absorbs operands, highest index first, that are inlined,
 *     or fusible, unpinned and read only by the group's members; at most
 *     IR_FUSED_MAX_INSTRS instructions and IR_FUSED_MAX_INPUTS inputs;
 *   - a group of two nodes or more becomes one fused node in its root's place
 *     (index order, name, position and type kept); its members disappear.
 * `--no-fuse` (pass_options.no_fuse) skips the pass.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass_impl.h"
#include "passes.h"


static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) abort();
    return p;
}

typedef struct {
    ir_module *m;
    int n;
    int *user_start, *users; /* users of node i: users[user_start[i] .. user_start[i+1]) (one per edge) */
    bool *pinned, *fusible, *inlined;
    int *group;              /* root of the group a node belongs to, -1 none (inlined nodes: none) */
} fuser;

static const ir_node *node(const fuser *F, int i) { return &F->m->g.nodes[i]; }

/* Ops cheap enough to compute again in every consumer instead of storing. */
static bool cheap(ir_op op) {
    switch (op) {
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_NEG: case OP_RELU: case OP_ABS: case OP_MAXIMUM:
    case OP_MINIMUM: case OP_LEAKY_RELU: case OP_LESS: case OP_LESS_EQUAL: case OP_GREATER:
    case OP_GREATER_EQUAL: case OP_EQUAL: case OP_NOT_EQUAL:
        return true;
    default: return false;
    }
}

static void find_users(fuser *F) {
    const ir_graph *g = &F->m->g;
    F->user_start = xcalloc((size_t)F->n + 1, sizeof *F->user_start);
    for (int i = 0; i < F->n; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++) F->user_start[g->nodes[i].in[k] + 1]++;
    for (int i = 0; i < F->n; i++) F->user_start[i + 1] += F->user_start[i];
    F->users = xcalloc((size_t)F->user_start[F->n], sizeof *F->users);
    int *fill = xcalloc((size_t)F->n, sizeof *fill);
    for (int i = 0; i < F->n; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++) {
            int p = g->nodes[i].in[k];
            F->users[F->user_start[p] + fill[p]++] = i;
        }
    free(fill);
}

static void pin(fuser *F, int i) {
    if (i >= 0 && i < F->n) F->pinned[i] = true;
}

/* What the runtime or a later pass reads by node index. */
static void find_pinned(fuser *F) {
    ir_module *m = F->m;
    F->pinned = xcalloc((size_t)F->n, sizeof *F->pinned);
    pin(F, m->loss);
    for (int k = 0; k < m->n_metrics; k++) pin(F, m->metrics[k].node);
    for (int k = 0; k < m->n_outputs; k++) pin(F, m->outputs[k].node);
    for (int k = 0; k < m->n_inputs; k++) pin(F, m->inputs[k]);
    for (int k = 0; k < m->n_params; k++) pin(F, m->params[k]), pin(F, m->grads ? m->grads[k] : -1);
}

static bool is_fusible(const fuser *F, int i) {
    const ir_node *n = node(F, i);
    int arity;
    if (!ir_fused_op_ok(n->op, &arity) || n->dtype != IR_F32 || n->n_in != arity) return false;
    for (int k = 0; k < n->n_in; k++)
        if (node(F, n->in[k])->dtype != IR_F32) return false;
    return true;
}

static bool is_inlinable(const fuser *F, int i) {
    const ir_node *n = node(F, i);
    if (!F->fusible[i] || F->pinned[i] || !cheap(n->op)) return false;
    int full = 0;
    for (int k = 0; k < n->n_in; k++) full += ir_shape_numel(&node(F, n->in[k])->shape) == ir_shape_numel(&n->shape);
    if (full > 1) return false;
    for (int u = F->user_start[i]; u < F->user_start[i + 1]; u++)
        if (!F->fusible[F->users[u]] || node(F, F->users[u])->programs != n->programs) return false;
    return F->user_start[i + 1] > F->user_start[i];
}

/* A group under construction: members (inlined copies included) by index. */
typedef struct {
    int root, n;
    int member[IR_FUSED_MAX_INSTRS];
    int n_ext, ext[IR_FUSED_MAX_INPUTS]; /* external inputs, in order of first use */
} group;

static bool has_member(const group *G, int i) {
    for (int k = 0; k < G->n; k++)
        if (G->member[k] == i) return true;
    return false;
}

/* Whether every user of p is a (non-inlined) member of G. */
static bool read_only_inside(const fuser *F, const group *G, int p) {
    for (int u = F->user_start[p]; u < F->user_start[p + 1]; u++) {
        int user = F->users[u];
        if (F->inlined[user] || !has_member(G, user)) return false;
    }
    return true;
}

/* Grows G from its root: candidates highest index first, so every member
 * that reads a candidate is in before the candidate is judged. */
static void grow(fuser *F, group *G) {
    int cand[4 * IR_FUSED_MAX_INSTRS], n_cand = 0;
    G->member[G->n++] = G->root;
    for (int k = 0; k < node(F, G->root)->n_in; k++) cand[n_cand++] = node(F, G->root)->in[k];
    while (n_cand > 0) {
        int best = 0;
        for (int k = 1; k < n_cand; k++)
            if (cand[k] > cand[best]) best = k;
        int p = cand[best];
        cand[best] = cand[--n_cand];
        if (has_member(G, p) || !F->fusible[p] || G->n == IR_FUSED_MAX_INSTRS) continue;
        bool take = F->inlined[p] || (F->group[p] < 0 && !F->pinned[p] && read_only_inside(F, G, p) &&
                                      node(F, p)->programs == node(F, G->root)->programs);
        const ir_node *pn = node(F, p);
        if (!take || n_cand + pn->n_in > (int)(sizeof cand / sizeof *cand)) continue;
        G->member[G->n++] = p;
        for (int k = 0; k < pn->n_in; k++) cand[n_cand++] = pn->in[k];
    }
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* The program of G (members sorted by index); false when it has too many inputs. */
static bool program(const fuser *F, group *G, ir_fused *f) {
    qsort(G->member, (size_t)G->n, sizeof *G->member, cmp_int);
    G->n_ext = 0;
    for (int j = 0; j < G->n; j++) {
        const ir_node *n = node(F, G->member[j]);
        for (int k = 0; k < n->n_in; k++) {
            int x = n->in[k], e = 0;
            if (has_member(G, x)) continue;
            while (e < G->n_ext && G->ext[e] != x) e++;
            if (e == IR_FUSED_MAX_INPUTS) return false;
            if (e == G->n_ext) G->ext[G->n_ext++] = x;
        }
    }
    memset(f, 0, sizeof *f);
    f->n = G->n;
    for (int j = 0; j < G->n; j++) {
        const ir_node *n = node(F, G->member[j]);
        int reg[2] = {-1, -1};
        for (int k = 0; k < n->n_in; k++) {
            int x = n->in[k], r = -1;
            for (int q = 0; q < j && r < 0; q++)
                if (G->member[q] == x) r = G->n_ext + q;
            for (int e = 0; e < G->n_ext && r < 0; e++)
                if (G->ext[e] == x) r = e;
            reg[k] = r;
        }
        f->ins[j] = (ir_finstr){.op = n->op, .a = reg[0], .b = reg[1], .alpha = *ir_ops[n->op].fattrs ? n->fattr[0] : 0};
    }
    return true;
}

/* The graph without the absorbed (gone) nodes; root i of group g becomes a
 * fused node of program progs[g]; every index the module keeps follows. */
static void rebuild(fuser *F, const group *groups, const ir_fused *progs, const int *group_of_root, const bool *gone) {
    ir_module *m = F->m;
    ir_graph old = m->g;
    int *map = xcalloc((size_t)F->n, sizeof *map);
    m->g = (ir_graph){0};
    for (int i = 0; i < old.n; i++) {
        ir_node *o = &old.nodes[i];
        map[i] = -1;
        if (gone[i]) continue;
        int gi = group_of_root[i];
        const group *G = gi >= 0 ? &groups[gi] : NULL;
        int n_in = G ? G->n_ext : o->n_in;
        int *in = xcalloc((size_t)n_in, sizeof *in);
        for (int k = 0; k < n_in; k++) in[k] = map[G ? G->ext[k] : o->in[k]];
        int j = ir_add(m, o->op, in, n_in, o->loc);
        free(in);
        ir_node *n = ir_node_at(m, j);
        int *keep = n->in;
        *n = *o;
        n->in = keep, n->n_in = n_in, n->origin = j;
        if (G) {
            n->op = OP_FUSED, n->fused = ir_fused_add(m, &progs[gi]);
            memset(n->iattr, 0, sizeof n->iattr), memset(n->fattr, 0, sizeof n->fattr);
        }
        map[i] = j;
    }
    for (int i = 0; i < old.n; i++) free(old.nodes[i].in);
    free(old.nodes);
    ir_module_renumber(m, map);
    free(map);
}

static void fuser_free(fuser *F) {
    free(F->user_start), free(F->users), free(F->pinned), free(F->fusible), free(F->inlined), free(F->group);
}

bool pass_fuse(ir_module *m, ir_diag *d, const pass_options *o) {
    (void)d;
    m->no_fuse = o->no_fuse;
    if (o->no_fuse) return true;
    fuser F = {.m = m, .n = m->g.n};
    find_users(&F);
    find_pinned(&F);
    F.fusible = xcalloc((size_t)F.n, sizeof *F.fusible);
    F.inlined = xcalloc((size_t)F.n, sizeof *F.inlined);
    F.group = xcalloc((size_t)F.n, sizeof *F.group);
    for (int i = 0; i < F.n; i++) F.fusible[i] = is_fusible(&F, i), F.group[i] = -1;
    for (int i = F.n - 1; i >= 0; i--) F.inlined[i] = is_inlinable(&F, i);

    group *groups = xcalloc((size_t)F.n, sizeof *groups);
    ir_fused *progs = xcalloc((size_t)F.n, sizeof *progs);
    int *group_of_root = xcalloc((size_t)F.n, sizeof *group_of_root), n_groups = 0;
    bool *gone = xcalloc((size_t)F.n, sizeof *gone);
    bool *needed = xcalloc((size_t)F.n, sizeof *needed); /* an inlined node some group reads as an input */
    for (int i = 0; i < F.n; i++) group_of_root[i] = -1;
    for (int r = F.n - 1; r >= 0; r--) {
        if (!F.fusible[r] || F.inlined[r] || F.group[r] >= 0) continue;
        group *G = &groups[n_groups];
        *G = (group){.root = r};
        grow(&F, G);
        if (G->n < 2 || !program(&F, G, &progs[n_groups])) {
            F.group[r] = r; /* a group of its own: stays as it is */
            continue;
        }
        for (int e = 0; e < G->n_ext; e++) needed[G->ext[e]] |= F.inlined[G->ext[e]];
        for (int k = 0; k < G->n; k++) {
            int x = G->member[k];
            if (!F.inlined[x]) F.group[x] = r;
            if (x != r) gone[x] = true;
        }
        group_of_root[r] = n_groups++;
    }
    /* an inlined node goes only when every group that reads it computes it and
     * no node left as it is reads it (highest first: its readers are decided
     * before it) */
    for (int i = F.n - 1; i >= 0; i--) {
        if (!F.inlined[i] || !gone[i]) continue;
        gone[i] = !needed[i];
        for (int u = F.user_start[i]; gone[i] && u < F.user_start[i + 1]; u++)
            if (!gone[F.users[u]] && group_of_root[F.users[u]] < 0) gone[i] = false;
    }
    if (n_groups > 0) rebuild(&F, groups, progs, group_of_root, gone);
    for (int i = 0; i < m->g.n; i++) {
        ir_node *n = ir_node_at(m, i);
        if (n->op != OP_FUSED) continue;
        ir_dtype t = n->dtype;
        ir_shape s = n->shape;
        char err[256];
        ASSERT(ir_infer_node(m, i, err, sizeof err), "fuse built a bad program at node %d: %s", i, err);
        ASSERT(n->dtype == t && ir_shape_eq(&n->shape, &s), "fuse changed the type of node %d", i);
    }
    free(groups), free(progs), free(group_of_root), free(gone), free(needed);
    fuser_free(&F);
    return true;
}
