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

/* Batched matmul references (here and tests/kern): flat index into s of element (row, col) of the matrix
 * at output batch coordinates ob[0..nb) (numpy broadcast: an axis of 1 reads 0) */
static inline int64_t mm_at(const ir_shape *s, const int64_t *ob, int nb, int64_t row, int64_t col) {
    int64_t off = 0;
    for (int d = 0; d < s->rank - 2; d++) {
        int64_t c = ob[nb - (s->rank - 2) + d];
        off = off * s->dim[d] + (s->dim[d] == 1 ? 0 : c);
    }
    return (off * s->dim[s->rank - 2] + row) * s->dim[s->rank - 1] + col;
}

#endif
