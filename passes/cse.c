/* cse.c - the "cse" pass (issue 14): common subexpressions computed once.
 *
 * Rule, on the one-replica graph after the optimizer pass: two nodes are the
 * same computation when they have the same op, dtype, shape, attributes (bit
 * for bit) and inputs (after earlier merges). Every op the pass may merge is a
 * function of exactly those and of the step and replica (dropout's mask is a
 * hash of its seed attribute, the step and the element index), so the later
 * node's readers, and the module's loss, metrics, outputs and gradients, read
 * the earlier one instead, which runs in the programs of both; nothing then
 * reads the later one, and the pass removes it (dce.c's walk). Not merged:
 * sources (inputs, params, slots, state, constants), updates, collectives and
 * in-place writes (assign), whose identity is their effect; and a node a
 * collective or an in-place op reads, whose bytes that reader may overwrite
 * (the memory plan packs an all_reduce's inputs into its bucket, which it
 * reduces in place): MobileNet's sync batch norm all-reduces the channel mean
 * its backward pass recomputes, and the race check (ir/races.c) rejected the
 * plan with the two merged.
 *
 * Example: char_gpt's loss and its perplexity metric each computed
 * sparse_xent of the same logits and labels (stdlib's example_xent), a
 * 2048 x 256 pass a step; the metric now reads the loss's.
 *
 * One walk in index order with a hash table of the nodes kept: O(n).
 * Skipped by `mgc compile --no-fuse` (the unfused plan stays as written).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pass_impl.h"
#include "passes.h"

/* not a source (input, param, slot, state, constant), update, collective or
 * in-place op (assign, broadcast) */
static bool mergeable(const ir_node *n) {
    return !(ir_ops[n->op].flags & (OPF_SOURCE | OPF_UPDATE | OPF_COLLECTIVE | OPF_INPLACE));
}

/* clobbered[i]: a collective or an in-place op reads node i */
static bool *find_clobbered(const ir_module *m) {
    bool *c = calloc((size_t)m->g.n, sizeof *c);
    ASSERT(c, "cse: out of memory");
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *x = &m->g.nodes[i];
        if (ir_ops[x->op].flags & (OPF_COLLECTIVE | OPF_INPLACE))
            for (int k = 0; k < x->n_in; k++) c[x->in[k]] = true;
    }
    return c;
}

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 1099511628211u; } /* FNV-1a, a word at a time */

/* the hash of what makes two nodes the same computation (their inputs already merged) */
static uint64_t node_hash(const ir_node *n) {
    uint64_t h = mix(1469598103934665603u, (uint64_t)n->op);
    h = mix(h, (uint64_t)n->dtype), h = mix(h, (uint64_t)n->shape.rank);
    for (int i = 0; i < n->shape.rank; i++) h = mix(h, (uint64_t)n->shape.dim[i]);
    for (int i = 0; i < n->n_in; i++) h = mix(h, (uint64_t)n->in[i]);
    for (int i = 0; i < IR_MAX_IATTR; i++) h = mix(h, (uint64_t)n->iattr[i]);
    for (int i = 0; i < IR_MAX_FATTR; i++) {
        uint64_t bits;
        memcpy(&bits, &n->fattr[i], sizeof bits);
        h = mix(h, bits);
    }
    return h;
}

static bool same(const ir_node *a, const ir_node *b) {
    return a->op == b->op && a->dtype == b->dtype && ir_shape_eq(&a->shape, &b->shape) && a->n_in == b->n_in &&
           !memcmp(a->in, b->in, (size_t)a->n_in * sizeof *a->in) &&
           !memcmp(a->iattr, b->iattr, sizeof a->iattr) && !memcmp(a->fattr, b->fattr, sizeof a->fattr);
}

bool pass_cse(ir_module *m, ir_diag *d, const pass_options *o) {
    (void)d;
    if (o->no_fuse || m->g.n == 0) return true;
    int n = m->g.n;
    size_t cap = 1; /* a power of two, at least twice the nodes */
    while (cap < 2 * (size_t)n) cap *= 2;
    int *repl = malloc((size_t)n * sizeof *repl), *table = malloc(cap * sizeof *table);
    ASSERT(repl && table, "cse: out of memory");
    for (size_t i = 0; i < cap; i++) table[i] = -1;
    int merged = 0;
    bool *clobbered = find_clobbered(m);
    for (int i = 0; i < n; i++) {
        ir_node *x = &m->g.nodes[i];
        repl[i] = i;
        for (int k = 0; k < x->n_in; k++) x->in[k] = repl[x->in[k]];
        if (!mergeable(x) || clobbered[i]) continue;
        size_t at = (size_t)node_hash(x) & (cap - 1); /* open addressing, linear probing */
        while (table[at] >= 0 && !same(&m->g.nodes[table[at]], x)) at = (at + 1) & (cap - 1);
        if (table[at] < 0) {
            table[at] = i;
            continue;
        }
        repl[i] = table[at];
        m->g.nodes[table[at]].programs |= x->programs;
        merged++;
    }
    if (m->loss >= 0) m->loss = repl[m->loss];
    for (int k = 0; k < m->n_metrics; k++) m->metrics[k].node = repl[m->metrics[k].node];
    for (int k = 0; k < m->n_outputs; k++) m->outputs[k].node = repl[m->outputs[k].node];
    for (int k = 0; k < m->n_params && m->grads; k++)
        if (m->grads[k] >= 0) m->grads[k] = repl[m->grads[k]];
    free(repl), free(table), free(clobbered);
    if (merged) dce_remove_dead(m);
    return true;
}
