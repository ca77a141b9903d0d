/* dce.c - the "dce" pass (issue 14): after the epilogue pass, before the
 * elementwise fuse pass, remove the nodes nothing live reads.
 *
 * Rule, on the one-replica graph: a node is live when it is a root (an
 * update, a collective, an assign), a variable (param, state, optimizer slot:
 * the init program broadcasts every one), an input, or read by the model
 * interface (loss, metrics, outputs, gradients), or read by a live node. The
 * others (the conv, bias add and activation an epilogue replaced, the pool
 * gradient max_pool2d_relu_grad absorbed) go; the graph is compacted in index
 * order and every index the module keeps follows. Dumps, the memory plan's
 * "without reuse" figure and inspect then show live nodes only, and the
 * elementwise fuse pass judges a node by its live readers alone.
 * Skipped by `mgc compile --no-fuse` (the unfused plan stays as written).
 */
#include <stdlib.h>

#include "pass_impl.h"
#include "passes.h"

static bool is_root(const ir_node *n) {
    return (ir_ops[n->op].flags & (OPF_UPDATE | OPF_COLLECTIVE | OPF_VARIABLE)) || n->op == OP_ASSIGN;
}

/* live[i] for every node of m (readers come after what they read) */
static void find_live(const ir_module *m, bool *live) {
    for (int i = 0; i < m->g.n; i++) live[i] = is_root(&m->g.nodes[i]);
    if (m->loss >= 0) live[m->loss] = true;
    for (int k = 0; k < m->n_metrics; k++) live[m->metrics[k].node] = true;
    for (int k = 0; k < m->n_outputs; k++) live[m->outputs[k].node] = true;
    for (int k = 0; k < m->n_inputs; k++) live[m->inputs[k]] = true;
    for (int k = 0; k < m->n_params; k++) {
        live[m->params[k]] = true;
        if (m->grads && m->grads[k] >= 0) live[m->grads[k]] = true;
    }
    for (int i = m->g.n - 1; i >= 0; i--)
        if (live[i])
            for (int k = 0; k < m->g.nodes[i].n_in; k++) live[m->g.nodes[i].in[k]] = true;
}

/* Keeps the live nodes in order; map[i] is node i's new index (-1: gone). */
static void compact(ir_module *m, const bool *live, int *map) {
    int j = 0;
    for (int i = 0; i < m->g.n; i++) {
        map[i] = -1;
        if (!live[i]) {
            free(m->g.nodes[i].in);
            continue;
        }
        ir_node *n = &m->g.nodes[i];
        for (int k = 0; k < n->n_in; k++) {
            n->in[k] = map[n->in[k]];
            ASSERT(n->in[k] >= 0, "dce: live node %d reads a removed node", i);
        }
        if (n->origin == i) n->origin = j;
        m->g.nodes[j] = *n;
        map[i] = j++;
    }
    m->g.n = j;
    ir_module_renumber(m, map);
}

void dce_remove_dead(ir_module *m) {
    if (m->g.n == 0) return;
    bool *live = malloc((size_t)m->g.n * sizeof *live);
    int *map = malloc((size_t)m->g.n * sizeof *map);
    ASSERT(live && map, "dce: out of memory");
    find_live(m, live);
    compact(m, live, map);
    free(live), free(map);
}

bool pass_dce(ir_module *m, ir_diag *d, const pass_options *o) {
    (void)d;
    if (!o->no_fuse) dce_remove_dead(m);
    return true;
}
