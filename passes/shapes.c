/* shapes.c - dtype and shape inference over the whole graph.
 *
 * Rule: every node, in graph order, gets the type its op's rule in ir.c gives
 * from its inputs and attributes. A failure is reported at the node's source
 * position; nodes that depend on a failed node are skipped, so one mistake
 * gives one message.
 */
#include <stdlib.h>

#include "passes.h"

bool pass_shapes(ir_module *m, ir_diag *d, const pass_options *o) {
    (void)o;
    bool *failed = calloc((size_t)m->g.n + 1, sizeof *failed);
    if (!failed) abort();
    bool ok = true;
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *n = &m->g.nodes[i];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0 && n->in[k] < i && failed[n->in[k]]) failed[i] = true;
        if (failed[i]) continue;
        char err[256];
        if (!ir_infer_node(m, i, err, sizeof err)) {
            ir_diag_error(d, n->loc, "%s", err);
            failed[i] = true, ok = false;
        }
    }
    free(failed);
    return ok;
}
