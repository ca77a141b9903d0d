/* bad_id.c - the message of an embedding id outside its table (issue 13). */
#include "bad_id.h"

#include <stdio.h>

/* The model input that input k of node reads, through shard, reshape, view,
 * cast and all_gather; NULL when the ids are computed. */
static const ir_node *ids_source(const ir_module *m, const ir_node *node, int k) {
    const ir_node *x = &m->g.nodes[node->in[k]];
    while (x->op == OP_SHARD || x->op == OP_RESHAPE || x->op == OP_VIEW || x->op == OP_CAST || x->op == OP_ALL_GATHER)
        x = &m->g.nodes[x->in[0]];
    return x->op == OP_INPUT && x->name ? x : NULL;
}

int rt_bad_id_message(const ir_module *m, const ir_node *node, int which, int id, int64_t index, int64_t rows,
                      char *err, size_t cap) {
    const ir_node *src = m ? ids_source(m, node, which) : NULL;
    if (!src) {
        snprintf(err, cap, "op '%s': id %d at index %lld is outside [0, %lld)", ir_ops[node->op].name, id,
                 (long long)index, (long long)rows);
        return -1;
    }
    const ir_loc *at = node->loc.file ? &node->loc : &src->loc; /* the embedding call, else the input */
    snprintf(err, cap, "%s:%d:%d: embedding id %d outside the table [0, %lld) in input '%s'", at->file ? at->file : "?",
             at->line, at->col, id, (long long)rows, src->name);
    return -1;
}
