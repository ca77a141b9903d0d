/* bad_id.h - the message of an embedding id outside its table, shared by the
 * CPU kernels and the CUDA backend's after-step check (issue 13). */
#ifndef MGC_BAD_ID_H
#define MGC_BAD_ID_H

#include <stddef.h>

#include "../ir/ir.h"

/* Writes the message for id (outside [0, rows)) read as input `which` of
 * node `node` into err and returns -1. When the ids come from a model input
 * (through shard, reshape, view, cast or all_gather):
 *   "FILE:LINE:COL: embedding id 10 outside the table [0, 10) in input 'tokens'"
 * at the op's source position (the embedding call); else
 *   "op 'gather': id 10 at index 3 is outside [0, 10)". */
int rt_bad_id_message(const ir_module *m, const ir_node *node, int which, int id, int64_t index, int64_t rows,
                      char *err, size_t cap);

#endif
