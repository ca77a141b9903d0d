/* harness.h - builds one-op graphs and runs them through the CPU kernels
 * (shared by the kernel tests and bench/kernels.c). */
#ifndef MGC_KERN_HARNESS_H
#define MGC_KERN_HARNESS_H

#include <stdlib.h>
#include <string.h>

#include "../../ir/ir.h"
#include "../../runtime/cpu/cpu_kernels.h"

typedef struct {
    ir_module *m;
    int node;                  /* the op node; inputs are nodes 0..n_in-1 */
    int n_in;
    const ir_node *in_nodes[8];
    void *in[8];
    void *out;                 /* == in[0] for in-place ops */
    int64_t step;
    int training;              /* 1: the train program (dropout draws masks), 0: eval/predict */
    rt_kernel_args args;
} one_op;

/* shape from "64,28,28,1" ("" is a scalar of rank 0) */
static inline ir_shape kh_shape(const char *s) {
    ir_shape sh = {0};
    while (*s) {
        sh.dim[sh.rank++] = strtoll(s, (char **)&s, 10);
        if (*s == ',') s++;
    }
    return sh;
}

/* Builds op(inputs) with the given attrs; given_shape (may be NULL) for ops
 * that carry their output shape. Returns -1 with the shape rule's message. */
static inline int kh_build(one_op *t, ir_op op, int n_in, const ir_shape *in_shape, const ir_dtype *in_dtype,
                           const int64_t *iattr, const double *fattr, const ir_shape *given, ir_dtype given_dtype,
                           char *err, size_t cap) {
    memset(t, 0, sizeof *t);
    t->m = ir_module_new();
    t->n_in = n_in;
    int idx[8];
    for (int i = 0; i < n_in; i++) {
        idx[i] = ir_add(t->m, op == OP_ASSIGN && i == 0 ? OP_STATE : OP_INPUT, NULL, 0, (ir_loc){0}); /* assign writes a state */
        ir_node *x = ir_node_at(t->m, idx[i]);
        x->shape = in_shape[i], x->dtype = in_dtype[i];
    }
    t->node = ir_add(t->m, op, idx, n_in, (ir_loc){0});
    ir_node *n = ir_node_at(t->m, t->node);
    memcpy(n->iattr, iattr, sizeof n->iattr);
    memcpy(n->fattr, fattr, sizeof n->fattr);
    if (given) n->shape = *given;
    n->dtype = given_dtype;
    if (!ir_infer_node(t->m, t->node, err, cap)) return -1;
    for (int i = 0; i < n_in; i++) {
        t->in_nodes[i] = ir_node_at(t->m, idx[i]);
        t->in[i] = aligned_alloc(64, ((size_t)ir_node_bytes(t->in_nodes[i]) + 64) / 64 * 64);
    }
    t->out = ir_ops[op].flags & OPF_INPLACE ? t->in[0]
                                             : aligned_alloc(64, ((size_t)ir_node_bytes(n) + 64) / 64 * 64);
    t->step = 1, t->training = 1;
    t->args = (rt_kernel_args){.m = t->m, .node = n, .in_nodes = t->in_nodes, .in = (const void *const *)t->in,
                               .out = t->out, .step = &t->step, .training = &t->training, .replica = 0,
                               .replicas = 1};
    return 0;
}

static inline int kh_run(one_op *t, char *err, size_t cap) { return cpu_kernel_run(&t->args, err, cap); }

static inline void kh_free(one_op *t) {
    if (!t->m) return;
    if (t->out != t->in[0]) free(t->out);
    for (int i = 0; i < t->n_in; i++) free(t->in[i]);
    ir_module_free(t->m);
    t->m = NULL;
}

#endif
