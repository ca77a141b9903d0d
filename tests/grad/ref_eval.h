/* ref_eval.h - a double-precision reference evaluator of IR graphs, for tests.
 *
 * Evaluates every node of a module in index order with naive loops (numpy
 * broadcasting, direct convolution and pooling, Keras optimizer formulas).
 * Every node owns numel doubles (integers are stored as doubles too). The
 * caller fills INPUT and PARAM values; VARs start from their initializer and
 * persist across runs, so one run is one step. Replication ops are not
 * evaluated (abort with a message). */
#ifndef MGC_REF_EVAL_H
#define MGC_REF_EVAL_H

#include <stdbool.h>
#include <stdint.h>

#include "../../ir/ir.h"

typedef struct ref_eval ref_eval;

ref_eval *ref_eval_new(const ir_module *m);
void ref_eval_free(ref_eval *e);
/* The values of node i: ir_shape_numel(shape) doubles, row-major. */
double *ref_eval_data(ref_eval *e, int i);
/* Evaluates every non-source node. step: 1-based optimizer step (Adam bias
 * correction, dropout masks); training: dropout active. Updates write their
 * param and slots in place. */
void ref_eval_run(ref_eval *e, int64_t step, bool training);
/* Dropout's keep decision for element idx (shared by dropout and dropout_grad). */
bool ref_eval_keep(int64_t seed, int64_t step, int64_t idx, double rate);

#endif
