/* ref_eval_impl.h - what ref_eval.c's files share: the evaluator's state and
 * one node's arguments; ref_eval_optim.c has the optimizer updates. */
#ifndef MGC_REF_EVAL_IMPL_H
#define MGC_REF_EVAL_IMPL_H

#include "ref_eval.h"

struct ref_eval {
    const ir_module *m;
    double **val; /* per node: numel doubles */
};

typedef struct {
    const ir_node *n;          /* the node */
    const ir_node *x, *y;      /* inputs 0 and 1 (NULL if absent) */
    double *out;               /* numel(n) */
    const double *a, *b, *c;   /* input values */
    int64_t len;               /* numel(n) */
} args;

/* ref_eval_optim.c: an optimizer update (param and slots in place, out = the
 * new param; Keras formulas) and sq_norm (the clipping norm's sum of squares) */
void ref_eval_update(ref_eval *e, args *t, int64_t step);
void ref_eval_sq_norm(ref_eval *e, args *t);

#endif
