/* sparse.c - the params a replicated module exchanges as (ids, rows) (issue 13),
 * read back from its all_gather nodes for inspect and dump. */
#include <string.h>

#include "ir.h"

/* Replica 0's all_gather of group `group`, or -1. */
static int gather_of(const ir_module *m, int64_t group) {
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *n = &m->g.nodes[i];
        if (n->op == OP_ALL_GATHER && n->device == 0 && n->iattr[0] == group) return i;
    }
    return -1;
}

bool ir_sparse_exchange(const ir_module *m, int k, ir_sparse_info *out) {
    int ids = gather_of(m, 2 * (int64_t)k), rows = gather_of(m, 2 * (int64_t)k + 1);
    if (ids < 0 || rows < 0) return false;
    const ir_node *in = &m->g.nodes[ids], *rn = &m->g.nodes[rows];
    *out = (ir_sparse_info){.param = in->name, .ids = ids, .rows = rows};
    out->sparse_bytes = ir_node_bytes(in) + ir_node_bytes(rn);
    for (int p = 0; p < m->n_params; p++) {
        const ir_node *pn = &m->g.nodes[m->params[p]];
        if (pn->name && in->name && !strcmp(pn->name, in->name)) out->dense_bytes = ir_node_bytes(pn);
    }
    return true;
}
