/* test_grad.c - every gradient rule against central finite differences in double
 * (one table of cases covering every OPF_DIFF op), path errors, optimizer steps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../passes/passes.h"
#include "ref_eval.h"

static int failures;

#define CHECK(c, ...)                                                  \
    do {                                                               \
        if (!(c)) {                                                    \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);       \
            fprintf(stderr, __VA_ARGS__);                              \
            fputc('\n', stderr);                                       \
            failures++;                                                \
        }                                                              \
    } while (0)

/* ---- building test modules ---- */

enum { MAX_NODES = 4096 };

/* A module under construction and the value range of each INPUT / PARAM. */
typedef struct {
    ir_module *m;
    double lo[MAX_NODES], hi[MAX_NODES];
    int line; /* each node gets its own source line: t.mg:<line>:1 */
} tb;

static ir_shape shp(int rank, const int64_t *d) { return ir_shape_make(rank, d); }
#define S(...) shp((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define SCALAR ((ir_shape){.rank = 0})

static int node(tb *t, ir_op op, int n_in, const int *in, const int64_t *ia, int n_ia, const double *fa,
                int n_fa, const ir_shape *shape) {
    int i = ir_add(t->m, op, in, n_in, (ir_loc){"t.mg", ++t->line, 1});
    ir_node *n = ir_node_at(t->m, i);
    for (int k = 0; k < n_ia; k++) n->iattr[k] = ia[k];
    for (int k = 0; k < n_fa; k++) n->fattr[k] = fa[k];
    if (shape) n->shape = *shape;
    char err[256];
    if (!ir_infer_node(t->m, i, err, sizeof err)) {
        fprintf(stderr, "test built a bad '%s': %s\n", ir_ops[op].name, err);
        abort();
    }
    return i;
}

static int source(tb *t, ir_op op, const char *name, ir_dtype dt, ir_shape s, double lo, double hi) {
    int i = node(t, op, 0, NULL, NULL, 0, NULL, 0, &s);
    ir_node *n = ir_node_at(t->m, i);
    n->name = ir_intern(t->m, name), n->dtype = dt;
    t->lo[i] = lo, t->hi[i] = hi;
    if (op == OP_PARAM) {
        t->m->params = realloc(t->m->params, (size_t)(t->m->n_params + 1) * sizeof(int));
        t->m->params[t->m->n_params++] = i;
    }
    return i;
}

static int param(tb *t, const char *name, ir_shape s) { return source(t, OP_PARAM, name, IR_F32, s, -1, 1); }
static int param_pos(tb *t, const char *name, ir_shape s) { return source(t, OP_PARAM, name, IR_F32, s, 0.5, 2); }
static int input(tb *t, const char *name, ir_shape s) { return source(t, OP_INPUT, name, IR_F32, s, -1, 1); }
static int labels(tb *t, int64_t batch, int classes) {
    return source(t, OP_INPUT, "labels", IR_I32, S(batch), 0, classes);
}
static int op1(tb *t, ir_op op, int a) { return node(t, op, 1, &a, NULL, 0, NULL, 0, NULL); }
static int op2(tb *t, ir_op op, int a, int b) { return node(t, op, 2, (int[]){a, b}, NULL, 0, NULL, 0, NULL); }
static int matmul(tb *t, int a, int b, int ta, int tb_) {
    return node(t, OP_MATMUL, 2, (int[]){a, b}, (int64_t[]){ta, tb_}, 2, NULL, 0, NULL);
}
/* conv2d with stride (sh, sw) and padding (t, l, b, r) */
static int conv(tb *t, int x, int w, int sh, int sw, int pt, int pl, int pb, int pr) {
    return node(t, OP_CONV2D, 2, (int[]){x, w}, (int64_t[]){sh, sw, pt, pl, pb, pr}, 6, NULL, 0, NULL);
}
/* ---- dilated, grouped and transposed convolutions: attrs {sh, sw, pt, pl, pb, pr, dh, dw[, groups]} ---- */
static int convx(tb *t, ir_op op, int x, int w, const int64_t *a) {
    return node(t, op, 2, (int[]){x, w}, a, op == OP_CONV2D ? 9 : 8, NULL, 0, NULL);
}
static int b_conv_dilated(tb *t) {
    return convx(t, OP_CONV2D, param(t, "x", S(1, 7, 6, 2)), param(t, "w", S(3, 2, 2, 3)),
                 (int64_t[]){1, 1, 1, 0, 1, 1, 2, 3, 1});
}
static int b_conv_groups(tb *t) {
    return convx(t, OP_CONV2D, param(t, "x", S(2, 5, 5, 4)), param(t, "w", S(3, 3, 2, 6)),
                 (int64_t[]){2, 1, 1, 0, 1, 1, 1, 1, 2});
}
static int b_conv_depthwise(tb *t) { /* depth_multiplier 2, dilated */
    return convx(t, OP_CONV2D, param(t, "x", S(1, 6, 6, 3)), param(t, "w", S(2, 2, 1, 6)),
                 (int64_t[]){1, 1, 0, 0, 0, 0, 2, 2, 3});
}
static int b_convt_valid(tb *t) {
    return convx(t, OP_CONV2D_TRANSPOSE, param(t, "x", S(2, 3, 4, 3)), param(t, "w", S(3, 2, 2, 3)),
                 (int64_t[]){1, 1, 0, 0, 0, 0, 1, 1});
}
static int b_convt_same_s2(tb *t) { /* Keras "same", k 3 s 2: H 3 -> 6, pads 0 + 1 */
    return convx(t, OP_CONV2D_TRANSPOSE, param(t, "x", S(1, 3, 3, 2)), param(t, "w", S(3, 3, 3, 2)),
                 (int64_t[]){2, 2, 0, 0, 1, 1, 1, 1});
}
static int b_convt_dilated(tb *t) {
    return convx(t, OP_CONV2D_TRANSPOSE, param(t, "x", S(1, 3, 3, 2)), param(t, "w", S(2, 2, 2, 2)),
                 (int64_t[]){2, 1, 1, 0, 0, 1, 2, 2});
}

static int pool(tb *t, ir_op op, int x, int k, int s, int pt, int pl, int pb, int pr) {
    return node(t, op, 1, &x, (int64_t[]){k, k, s, s, pt, pl, pb, pr}, 8, NULL, 0, NULL);
}
static int reduce(tb *t, ir_op op, int x, int64_t axes, int keepdims) {
    return node(t, op, 1, &x, (int64_t[]){axes, keepdims}, 2, NULL, 0, NULL);
}
static int reshape(tb *t, int x, ir_shape s) { return node(t, OP_RESHAPE, 1, &x, NULL, 0, NULL, 0, &s); }
static int cast(tb *t, int x, ir_dtype dt) {
    int i = ir_add(t->m, OP_CAST, &x, 1, (ir_loc){"t.mg", ++t->line, 1});
    ir_node_at(t->m, i)->dtype = dt;
    char err[256];
    if (!ir_infer_node(t->m, i, err, sizeof err)) abort();
    return i;
}

/* per-example loss: sum over all but axis 0 of out * random weights */
static int weigh(tb *t, int out) {
    ir_shape s = ir_node_at(t->m, out)->shape;
    if (s.rank == 0) out = reshape(t, out, S(1)), s = S(1);
    int y = op2(t, OP_MUL, out, input(t, "weights", s));
    int64_t axes = ((int64_t)1 << s.rank) - 2;
    return axes ? reduce(t, OP_REDUCE_SUM, y, axes, 0) : y;
}

/* ---- the table: one forward graph per case, its output weighed into the loss ---- */

typedef struct {
    const char *name;
    ir_op op; /* the op whose gradient rule it checks */
    int (*build)(tb *t);
} grad_case;

static int b_add_same(tb *t) { return op2(t, OP_ADD, param(t, "a", S(2, 3)), param(t, "b", S(2, 3))); }
static int b_add_vec(tb *t) { return op2(t, OP_ADD, param(t, "a", S(2, 3, 4)), param(t, "b", S(4))); }
static int b_add_both(tb *t) { return op2(t, OP_ADD, param(t, "a", S(2, 1, 4)), param(t, "b", S(3, 1))); }
static int b_sub(tb *t) { return op2(t, OP_SUB, param(t, "a", S(3, 1)), param(t, "b", S(2, 3, 4))); }
static int b_mul(tb *t) { return op2(t, OP_MUL, param(t, "a", S(2, 3, 4)), param(t, "b", S(1, 3, 1))); }
static int b_mul_scalar(tb *t) { return op2(t, OP_MUL, param(t, "a", S(2, 3)), param(t, "s", SCALAR)); }
static int b_div(tb *t) { return op2(t, OP_DIV, param(t, "a", S(2, 3, 4)), param_pos(t, "b", S(3, 1))); }
static int b_div_vec(tb *t) { return op2(t, OP_DIV, param(t, "a", S(4)), param_pos(t, "b", S(2, 3, 4))); }
static int b_neg(tb *t) { return op1(t, OP_NEG, param(t, "x", S(2, 5))); }
static int b_exp(tb *t) { return op1(t, OP_EXP, param(t, "x", S(2, 5))); }
static int b_log(tb *t) { return op1(t, OP_LOG, param_pos(t, "x", S(2, 5))); }
static int b_sqrt(tb *t) { return op1(t, OP_SQRT, param_pos(t, "x", S(2, 5))); }
static int b_relu(tb *t) { return op1(t, OP_RELU, param(t, "x", S(3, 5))); }
static int b_sigmoid(tb *t) { return op1(t, OP_SIGMOID, param(t, "x", S(2, 5))); }
static int b_tanh(tb *t) { return op1(t, OP_TANH, param(t, "x", S(2, 5))); }
static int b_cast(tb *t) { return cast(t, param(t, "x", S(2, 3)), IR_F32); }
static int b_mm00(tb *t) { return matmul(t, param(t, "a", S(3, 4)), param(t, "b", S(4, 2)), 0, 0); }
static int b_mm10(tb *t) { return matmul(t, param(t, "a", S(4, 3)), param(t, "b", S(4, 2)), 1, 0); }
static int b_mm01(tb *t) { return matmul(t, param(t, "a", S(3, 4)), param(t, "b", S(2, 4)), 0, 1); }
static int b_mm11(tb *t) { return matmul(t, param(t, "a", S(4, 3)), param(t, "b", S(2, 4)), 1, 1); }
/* issue 13: batched matmul */
static int b_mm_batch(tb *t) { return matmul(t, param(t, "a", S(2, 3, 4)), param(t, "b", S(2, 4, 2)), 0, 0); }
static int b_mm_b32(tb *t) { return matmul(t, param(t, "a", S(2, 3, 4)), param(t, "b", S(2, 4)), 0, 1); }
static int b_mm_b23(tb *t) { return matmul(t, param(t, "a", S(4, 3)), param(t, "b", S(2, 4, 2)), 1, 0); }
/* issue 13: embedding lookup; ids with repeats (8 ids of 5 rows), the gradient summed per row */
static int b_gather(tb *t) {
    int ids = source(t, OP_INPUT, "ids", IR_I32, S(2, 4), 0, 5);
    return node(t, OP_GATHER, 2, (int[]){param(t, "table", S(5, 3)), ids}, NULL, 0, NULL, 0, NULL);
}
static int b_mm_bboth(tb *t) { return matmul(t, param(t, "a", S(2, 1, 4, 3)), param(t, "b", S(3, 2, 4)), 1, 1); }
static int b_conv_valid(tb *t) {
    return conv(t, param(t, "x", S(2, 5, 5, 3)), param(t, "w", S(3, 3, 3, 4)), 1, 1, 0, 0, 0, 0);
}
/* TF "same" at stride 2: H 6 -> 3 (pad 0+1), W 7 -> 4 (pad 1+1) */
static int b_conv_same_s2(tb *t) {
    return conv(t, param(t, "x", S(2, 6, 7, 2)), param(t, "w", S(3, 3, 2, 3)), 2, 2, 0, 1, 1, 1);
}
static int b_conv_rect(tb *t) {
    return conv(t, param(t, "x", S(1, 5, 6, 2)), param(t, "w", S(2, 3, 2, 2)), 1, 2, 1, 0, 0, 1);
}
static int b_max_k2s1(tb *t) { return pool(t, OP_MAX_POOL2D, param(t, "x", S(2, 4, 4, 3)), 2, 1, 0, 0, 0, 0); }
static int b_max_k3s2(tb *t) { return pool(t, OP_MAX_POOL2D, param(t, "x", S(2, 5, 6, 2)), 3, 2, 1, 0, 1, 1); }
static int b_avg_k2s1(tb *t) { return pool(t, OP_AVG_POOL2D, param(t, "x", S(2, 4, 4, 3)), 2, 1, 0, 0, 0, 0); }
static int b_avg_k3s2(tb *t) { return pool(t, OP_AVG_POOL2D, param(t, "x", S(2, 5, 6, 2)), 3, 2, 1, 0, 1, 1); }
static int b_reshape(tb *t) { return reshape(t, param(t, "x", S(2, 3, 4)), S(4, 6)); }
static int b_sum_02(tb *t) { return reduce(t, OP_REDUCE_SUM, param(t, "x", S(2, 3, 4)), 5, 0); }
static int b_sum_02_keep(tb *t) { return reduce(t, OP_REDUCE_SUM, param(t, "x", S(2, 3, 4)), 5, 1); }
static int b_sum_all(tb *t) { return reduce(t, OP_REDUCE_SUM, param(t, "x", S(2, 3, 4)), 7, 0); }
static int b_mean_12(tb *t) { return reduce(t, OP_REDUCE_MEAN, param(t, "x", S(2, 3, 4)), 6, 0); }
static int b_mean_0_keep(tb *t) { return reduce(t, OP_REDUCE_MEAN, param(t, "x", S(2, 3, 4)), 1, 1); }
static int b_broadcast_to(tb *t) {
    ir_shape s = S(2, 3, 4);
    return node(t, OP_BROADCAST_TO, 1, (int[]){param(t, "x", S(3, 1))}, NULL, 0, NULL, 0, &s);
}
static int b_softmax(tb *t) { return op1(t, OP_SOFTMAX, param(t, "x", S(3, 5))); }
static int b_softmax3(tb *t) { return op1(t, OP_SOFTMAX, param(t, "x", S(2, 3, 4))); }
static int b_xent(tb *t) {
    int logits = param(t, "logits", S(4, 5));
    return op2(t, OP_SPARSE_XENT, logits, labels(t, 4, 5));
}
static int b_dropout(tb *t) {
    int x = param(t, "x", S(4, 5));
    return node(t, OP_DROPOUT, 1, &x, (int64_t[]){1234}, 1, (double[]){0.3}, 1, NULL);
}
/* x * mask(x OP y): the mask is piecewise constant, so only the x factor has a
 * gradient (inputs are far from ties, so finite differences see no step) */
static int compare_case(tb *t, ir_op op) {
    int x = param(t, "x", S(3, 4)), y = param(t, "y", S(4));
    return op2(t, OP_MUL, x, op2(t, op, x, y));
}
static int b_less(tb *t) { return compare_case(t, OP_LESS); }
static int b_less_equal(tb *t) { return compare_case(t, OP_LESS_EQUAL); }
static int b_greater(tb *t) { return compare_case(t, OP_GREATER); }
static int b_greater_equal(tb *t) { return compare_case(t, OP_GREATER_EQUAL); }
static int b_equal(tb *t) { return compare_case(t, OP_EQUAL); }
static int b_not_equal(tb *t) { return compare_case(t, OP_NOT_EQUAL); }
/* in training: tanh(x); z only feeds the branch eval takes (its gradient is zero) */
static int b_in_training(tb *t) {
    return op2(t, OP_IN_TRAINING, op1(t, OP_TANH, param(t, "x", S(3, 4))), op1(t, OP_EXP, param(t, "z", S(3, 4))));
}
/* all_reduce over one replica packs its inputs (mean of one): the gradient
 * path splits dy back (a reshape for one input, views for several) */
static int b_all_reduce1(tb *t) {
    return node(t, OP_ALL_REDUCE, 1, (int[]){param(t, "x", S(2, 3))}, (int64_t[]){0, 1}, 2, NULL, 0, NULL);
}
static int b_all_reduce2(tb *t) {
    int x = op1(t, OP_SIGMOID, param(t, "x", S(2, 3))), y = param(t, "y", S(4));
    return node(t, OP_ALL_REDUCE, 2, (int[]){x, y}, (int64_t[]){0, 1}, 2, NULL, 0, NULL);
}
/* y = tanh(x) has three users, x two: z = y*y + exp(y) + x */
static int b_two_users(tb *t) {
    int x = param(t, "x", S(2, 3)), y = op1(t, OP_TANH, x);
    return op2(t, OP_ADD, op2(t, OP_ADD, op2(t, OP_MUL, y, y), op1(t, OP_EXP, y)), x);
}
/* dense(relu) -> dense -> sparse_xent, batch 4 */
static int b_mlp(tb *t) {
    int x = input(t, "x", S(4, 6));
    int h = op1(t, OP_RELU, op2(t, OP_ADD, matmul(t, x, param(t, "d1/kernel", S(6, 5)), 0, 0),
                                param(t, "d1/bias", S(5))));
    int logits = op2(t, OP_ADD, matmul(t, h, param(t, "d2/kernel", S(5, 3)), 0, 0), param(t, "d2/bias", S(3)));
    return op2(t, OP_SPARSE_XENT, logits, labels(t, 4, 3));
}
/* 60 broadcasting layers: the gradient graph outgrows the node array several times */
static int b_deep(tb *t) {
    int x = param(t, "x", S(2, 3)), a = param(t, "a", S(3)), b = param(t, "b", S(2, 1));
    for (int i = 0; i < 60; i++) x = op1(t, OP_TANH, op2(t, OP_ADD, op2(t, OP_MUL, x, a), b));
    return x;
}
/* conv(relu) -> max_pool -> flatten -> dense -> softmax cross-entropy */
static int b_cnn(tb *t) {
    int x = input(t, "image", S(2, 6, 6, 1));
    int c = op1(t, OP_RELU, op2(t, OP_ADD, conv(t, x, param(t, "c/kernel", S(3, 3, 1, 2)), 1, 1, 0, 0, 0, 0),
                                param(t, "c/bias", S(2))));
    int p = reshape(t, pool(t, OP_MAX_POOL2D, c, 2, 2, 0, 0, 0, 0), S(2, 8));
    int logits = matmul(t, p, param(t, "d/kernel", S(8, 4)), 0, 0);
    return op2(t, OP_SPARSE_XENT, logits, labels(t, 2, 4));
}

/* ---- issue 12: shape ops, extreme reductions, softmax on any axis ---- */
static int with_attrs(tb *t, ir_op op, int x, const int64_t *ia, int n_ia, const ir_shape *given) {
    return node(t, op, 1, &x, ia, n_ia, NULL, 0, given);
}
static int b_softmax_axis0(tb *t) { return with_attrs(t, OP_SOFTMAX, param(t, "x", S(3, 5)), (int64_t[]){1}, 1, NULL); }
static int b_softmax_mid(tb *t) { return with_attrs(t, OP_SOFTMAX, param(t, "x", S(2, 3, 4)), (int64_t[]){1}, 1, NULL); }
static int b_log_softmax(tb *t) { return op1(t, OP_LOG_SOFTMAX, param(t, "x", S(3, 5))); }
static int b_log_softmax_mid(tb *t) {
    return with_attrs(t, OP_LOG_SOFTMAX, param(t, "x", S(2, 3, 4)), (int64_t[]){1}, 1, NULL);
}
static int b_concat(tb *t) {
    int in[3] = {param(t, "a", S(2, 3, 2)), param(t, "b", S(2, 1, 2)), param(t, "c", S(2, 2, 2))};
    return node(t, OP_CONCAT, 3, in, (int64_t[]){1}, 1, NULL, 0, NULL);
}
/* one input twice: both slices of dy add up */
static int b_concat_same(tb *t) {
    int a = param(t, "a", S(3, 2));
    return node(t, OP_CONCAT, 2, (int[]){a, a}, (int64_t[]){0}, 1, NULL, 0, NULL);
}
static int b_slice(tb *t) {
    ir_shape s = S(2, 2, 3);
    return with_attrs(t, OP_SLICE, param(t, "x", S(3, 4, 3)), (int64_t[]){1, 1, 0}, 3, &s);
}
static int b_pad(tb *t) {
    ir_shape s = S(1, 5, 6, 2);
    return with_attrs(t, OP_PAD, param(t, "x", S(1, 3, 3, 2)), (int64_t[]){0, 1, 2, 0}, 4, &s);
}
static int b_transpose(tb *t) { return with_attrs(t, OP_TRANSPOSE, param(t, "x", S(2, 3, 4)), (int64_t[]){0x021}, 1, NULL); }
static int b_transpose4(tb *t) {
    return with_attrs(t, OP_TRANSPOSE, param(t, "x", S(2, 3, 4, 2)), (int64_t[]){0x2130}, 1, NULL);
}
static int b_max_02(tb *t) { return reduce(t, OP_REDUCE_MAX, param(t, "x", S(2, 3, 4)), 5, 0); }
static int b_max_last_keep(tb *t) { return reduce(t, OP_REDUCE_MAX, param(t, "x", S(3, 5)), 2, 1); }
static int b_min_all(tb *t) { return reduce(t, OP_REDUCE_MIN, param(t, "x", S(2, 3, 4)), 7, 0); }
static int b_min_1(tb *t) { return reduce(t, OP_REDUCE_MIN, param(t, "x", S(2, 3, 4)), 2, 1); }
/* ---- issue 12: activations and elementwise math ---- */
static int b_abs(tb *t) { return op1(t, OP_ABS, param(t, "x", S(3, 5))); }
static int b_erf(tb *t) { return op1(t, OP_ERF, param(t, "x", S(2, 5))); }
static int b_gelu(tb *t) { return op1(t, OP_GELU, param(t, "x", S(2, 5))); }
static int b_softplus(tb *t) { return op1(t, OP_SOFTPLUS, param(t, "x", S(2, 5))); }
static int b_selu(tb *t) { return op1(t, OP_SELU, param(t, "x", S(3, 5))); }
static int b_elu(tb *t) {
    int x = param(t, "x", S(3, 5));
    return node(t, OP_ELU, 1, &x, NULL, 0, (double[]){0.7}, 1, NULL);
}
static int b_leaky_relu(tb *t) {
    int x = param(t, "x", S(3, 5));
    return node(t, OP_LEAKY_RELU, 1, &x, NULL, 0, (double[]){0.2}, 1, NULL);
}
static int b_maximum(tb *t) { return op2(t, OP_MAXIMUM, param(t, "a", S(2, 3, 4)), param(t, "b", S(3, 1))); }
static int b_minimum(tb *t) { return op2(t, OP_MINIMUM, param(t, "a", S(4)), param(t, "b", S(3, 4))); }
static int b_pow(tb *t) { return op2(t, OP_POW, param_pos(t, "a", S(2, 3)), param(t, "b", S(3))); }
/* a negative base with an integer exponent: the exponent's gradient is 0 there (TF) */
static int b_pow_int(tb *t) {
    ir_shape s = SCALAR;
    int three = node(t, OP_CONST, 0, NULL, NULL, 0, (double[]){3}, 1, &s);
    return op2(t, OP_POW, param(t, "a", S(2, 3)), three);
}

/* issue 14 (char_gpt speed): the causal masked softmax (scale 0.6; rows > columns) */
static int b_causal_softmax(tb *t) {
    int x = param(t, "x", S(2, 5, 5));
    return node(t, OP_CAUSAL_SOFTMAX, 1, &x, NULL, 0, (double[]){0.6}, 1, NULL);
}
static int b_causal_softmax_tall(tb *t) {
    int x = param(t, "x", S(2, 6, 4));
    return node(t, OP_CAUSAL_SOFTMAX, 1, &x, NULL, 0, (double[]){-1.3}, 1, NULL);
}
/* issue 14 (char_gpt speed): causal_matmul, each triangle lower and upper,
 * under each transpose; a triangle's masked half gets gradient 0 */
static int causal_mm(tb *t, ir_shape sa, ir_shape sb, int ta, int tb_, int tri, int upper) {
    int a = param(t, "a", sa), b = param(t, "b", sb);
    return node(t, OP_CAUSAL_MATMUL, 2, (int[]){a, b}, (int64_t[]){ta, tb_, tri, upper}, 4, NULL, 0, NULL);
}
static int b_cmm_qk(tb *t) { return causal_mm(t, S(2, 4, 3), S(2, 4, 3), 0, 1, 0, 0); }
static int b_cmm_out_up(tb *t) { return causal_mm(t, S(3, 4), S(3, 4), 1, 0, 0, 1); }
static int b_cmm_out_tt(tb *t) { return causal_mm(t, S(3, 4), S(4, 3), 1, 1, 0, 0); }
static int b_cmm_pv(tb *t) { return causal_mm(t, S(2, 4, 4), S(2, 4, 3), 0, 0, 1, 0); }
static int b_cmm_a_up_t(tb *t) { return causal_mm(t, S(4, 4), S(2, 3, 4), 1, 1, 1, 1); }
static int b_cmm_b_lo_t(tb *t) { return causal_mm(t, S(4, 3), S(2, 4, 4), 1, 1, 2, 0); }
static int b_cmm_b_up(tb *t) { return causal_mm(t, S(2, 3, 4), S(4, 4), 0, 0, 2, 1); }
/* issue 14 (char_gpt speed): layer normalization's core (rows of 7; rows of 1: dx 0) */
static int b_normalize(tb *t) {
    int x = param(t, "x", S(3, 4, 7));
    return node(t, OP_NORMALIZE, 1, &x, NULL, 0, (double[]){1e-3}, 1, NULL);
}
static int b_normalize_one(tb *t) {
    int x = param(t, "x", S(5, 1));
    return node(t, OP_NORMALIZE, 1, &x, NULL, 0, (double[]){0.5}, 1, NULL);
}

/* issue 14 (batch norm in training): per-channel statistics and the
 * normalization with given statistics, alone (every input a param, so
 * channel_var's dm is built) and composed as batch_norm composes them (dm of
 * channel_var(x, channel_mean(x)) not built: zero at the mean) */
static int b_channel_mean(tb *t) {
    int x = param(t, "x", S(3, 4, 5));
    return node(t, OP_CHANNEL_MEAN, 1, &x, NULL, 0, NULL, 0, NULL);
}
static int b_channel_var(tb *t) {
    int in[2] = {param(t, "x", S(2, 3, 4)), param(t, "m", S(4))};
    return node(t, OP_CHANNEL_VAR, 2, in, NULL, 0, NULL, 0, NULL);
}
static int b_scale_shift(tb *t) {
    int in[4] = {param(t, "x", S(2, 3, 4)), param(t, "m", S(4)), param(t, "s", S(4)), param(t, "b", S(4))};
    return node(t, OP_SCALE_SHIFT, 4, in, NULL, 0, NULL, 0, NULL);
}
/* only the scale a param: ds is row 1 of channel_sum_dot, its row 0 unread
 * (with the shift's gradient too, both rows: b_scale_shift) */
static int b_scale_shift_scale_only(tb *t) {
    int in[4] = {param(t, "x", S(2, 3, 4)), input(t, "m", S(4)), param(t, "s", S(4)), input(t, "b", S(4))};
    return node(t, OP_SCALE_SHIFT, 4, in, NULL, 0, NULL, 0, NULL);
}
static int b_batch_norm_composed(tb *t) {
    int x = param(t, "x", S(3, 2, 5)), b = param(t, "b", S(5));
    int m = node(t, OP_CHANNEL_MEAN, 1, &x, NULL, 0, NULL, 0, NULL);
    int v = node(t, OP_CHANNEL_VAR, 2, (int[]){x, m}, NULL, 0, NULL, 0, NULL);
    return node(t, OP_SCALE_SHIFT, 4, (int[]){x, m, v, b}, NULL, 0, NULL, 0, NULL);
}

static const grad_case cases[] = {
    {"softmax axis 0", OP_SOFTMAX, b_softmax_axis0},
    {"softmax middle axis", OP_SOFTMAX, b_softmax_mid},
    {"log_softmax", OP_LOG_SOFTMAX, b_log_softmax},
    {"log_softmax middle axis", OP_LOG_SOFTMAX, b_log_softmax_mid},
    {"concat axis 1", OP_CONCAT, b_concat},
    {"concat of one input twice", OP_CONCAT, b_concat_same},
    {"slice", OP_SLICE, b_slice},
    {"pad", OP_PAD, b_pad},
    {"transpose 3-d", OP_TRANSPOSE, b_transpose},
    {"transpose NHWC to NCHW", OP_TRANSPOSE, b_transpose4},
    {"reduce_max axes 0,2", OP_REDUCE_MAX, b_max_02},
    {"reduce_max last keepdims", OP_REDUCE_MAX, b_max_last_keep},
    {"reduce_min all axes", OP_REDUCE_MIN, b_min_all},
    {"reduce_min axis 1 keepdims", OP_REDUCE_MIN, b_min_1},
    {"add", OP_ADD, b_add_same},
    {"add [2,3,4]+[4]", OP_ADD, b_add_vec},
    {"add [2,1,4]+[3,1]", OP_ADD, b_add_both},
    {"sub [3,1]-[2,3,4]", OP_SUB, b_sub},
    {"mul [2,3,4]*[1,3,1]", OP_MUL, b_mul},
    {"mul by scalar", OP_MUL, b_mul_scalar},
    {"div [2,3,4]/[3,1]", OP_DIV, b_div},
    {"div [4]/[2,3,4]", OP_DIV, b_div_vec},
    {"neg", OP_NEG, b_neg},
    {"exp", OP_EXP, b_exp},
    {"log", OP_LOG, b_log},
    {"sqrt", OP_SQRT, b_sqrt},
    {"relu", OP_RELU, b_relu},
    {"sigmoid", OP_SIGMOID, b_sigmoid},
    {"tanh", OP_TANH, b_tanh},
    {"cast f32->f32", OP_CAST, b_cast},
    {"matmul", OP_MATMUL, b_mm00},
    {"matmul trans_a", OP_MATMUL, b_mm10},
    {"matmul trans_b", OP_MATMUL, b_mm01},
    {"matmul trans_a trans_b", OP_MATMUL, b_mm11},
    {"matmul batched", OP_MATMUL, b_mm_batch},
    {"matmul rank 3 x rank 2 trans_b", OP_MATMUL, b_mm_b32},
    {"matmul rank 2 x rank 3 trans_a", OP_MATMUL, b_mm_b23},
    {"matmul batch broadcast both trans_ab", OP_MATMUL, b_mm_bboth},
    {"gather (embedding)", OP_GATHER, b_gather},
    {"conv2d valid", OP_CONV2D, b_conv_valid},
    {"conv2d stride 2 same", OP_CONV2D, b_conv_same_s2},
    {"conv2d 2x3 stride 1x2 padded", OP_CONV2D, b_conv_rect},
    {"conv2d dilated 2x3", OP_CONV2D, b_conv_dilated},
    {"conv2d groups 2 stride 2x1", OP_CONV2D, b_conv_groups},
    {"conv2d depthwise x2 dilated", OP_CONV2D, b_conv_depthwise},
    {"conv2d_transpose valid", OP_CONV2D_TRANSPOSE, b_convt_valid},
    {"conv2d_transpose stride 2 same", OP_CONV2D_TRANSPOSE, b_convt_same_s2},
    {"conv2d_transpose dilated padded", OP_CONV2D_TRANSPOSE, b_convt_dilated},
    {"max_pool2d k2 s1", OP_MAX_POOL2D, b_max_k2s1},
    {"max_pool2d k3 s2 same", OP_MAX_POOL2D, b_max_k3s2},
    {"avg_pool2d k2 s1", OP_AVG_POOL2D, b_avg_k2s1},
    {"avg_pool2d k3 s2 same", OP_AVG_POOL2D, b_avg_k3s2},
    {"reshape", OP_RESHAPE, b_reshape},
    {"reduce_sum axes 0,2", OP_REDUCE_SUM, b_sum_02},
    {"reduce_sum axes 0,2 keepdims", OP_REDUCE_SUM, b_sum_02_keep},
    {"reduce_sum all axes", OP_REDUCE_SUM, b_sum_all},
    {"reduce_mean axes 1,2", OP_REDUCE_MEAN, b_mean_12},
    {"reduce_mean axis 0 keepdims", OP_REDUCE_MEAN, b_mean_0_keep},
    {"broadcast_to", OP_BROADCAST_TO, b_broadcast_to},
    {"softmax", OP_SOFTMAX, b_softmax},
    {"softmax rank 3", OP_SOFTMAX, b_softmax3},
    {"sparse_xent", OP_SPARSE_XENT, b_xent},
    {"dropout", OP_DROPOUT, b_dropout},
    {"in_training", OP_IN_TRAINING, b_in_training},
    {"less", OP_LESS, b_less},
    {"less_equal", OP_LESS_EQUAL, b_less_equal},
    {"greater", OP_GREATER, b_greater},
    {"greater_equal", OP_GREATER_EQUAL, b_greater_equal},
    {"equal", OP_EQUAL, b_equal},
    {"not_equal", OP_NOT_EQUAL, b_not_equal},
    {"all_reduce one input", OP_ALL_REDUCE, b_all_reduce1},
    {"all_reduce two inputs", OP_ALL_REDUCE, b_all_reduce2},
    {"value with several users", OP_ADD, b_two_users},
    {"mlp", OP_MATMUL, b_mlp},
    {"cnn", OP_CONV2D, b_cnn},
    {"deep chain", OP_TANH, b_deep},
    /* issue 12 */
    {"abs", OP_ABS, b_abs},
    {"erf", OP_ERF, b_erf},
    {"gelu", OP_GELU, b_gelu},
    {"softplus", OP_SOFTPLUS, b_softplus},
    {"selu", OP_SELU, b_selu},
    {"elu alpha 0.7", OP_ELU, b_elu},
    {"leaky_relu alpha 0.2", OP_LEAKY_RELU, b_leaky_relu},
    {"maximum [2,3,4],[3,1]", OP_MAXIMUM, b_maximum},
    {"minimum [4],[3,4]", OP_MINIMUM, b_minimum},
    {"pow [2,3]^[3]", OP_POW, b_pow},
    {"pow x^3", OP_POW, b_pow_int},
    /* issue 14: char_gpt speed */
    {"causal_softmax [2,5,5] scale 0.6", OP_CAUSAL_SOFTMAX, b_causal_softmax},
    {"causal_softmax [2,6,4] scale -1.3", OP_CAUSAL_SOFTMAX, b_causal_softmax_tall},
    {"causal_matmul q k^T (output tril)", OP_CAUSAL_MATMUL, b_cmm_qk},
    {"causal_matmul output triu trans_a", OP_CAUSAL_MATMUL, b_cmm_out_up},
    {"causal_matmul output tril trans_ab", OP_CAUSAL_MATMUL, b_cmm_out_tt},
    {"causal_matmul p v (a tril)", OP_CAUSAL_MATMUL, b_cmm_pv},
    {"causal_matmul a triu trans_ab broadcast", OP_CAUSAL_MATMUL, b_cmm_a_up_t},
    {"causal_matmul b tril trans_ab broadcast", OP_CAUSAL_MATMUL, b_cmm_b_lo_t},
    {"causal_matmul b triu broadcast", OP_CAUSAL_MATMUL, b_cmm_b_up},
    {"normalize [3,4,7] epsilon 1e-3", OP_NORMALIZE, b_normalize},
    {"normalize [5,1] epsilon 0.5", OP_NORMALIZE, b_normalize_one},
    /* issue 14: batch norm in training */
    {"channel_mean [3,4,5]", OP_CHANNEL_MEAN, b_channel_mean},
    {"channel_var [2,3,4] of a given mean", OP_CHANNEL_VAR, b_channel_var},
    {"scale_shift [2,3,4]", OP_SCALE_SHIFT, b_scale_shift},
    {"scale_shift, scale only", OP_SCALE_SHIFT, b_scale_shift_scale_only}, /* issue 14: channel_sum_dot's row 1 alone */
    {"channel_var of channel_mean, scale_shift", OP_CHANNEL_VAR, b_batch_norm_composed},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

/* ---- finite differences ---- */

static uint64_t rng = 88172645463325252ull;
static double uniform(double lo, double hi) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

static void randomize(tb *t, ref_eval *e) {
    for (int i = 0; i < t->m->g.n; i++) {
        const ir_node *n = ir_node_at(t->m, i);
        if (n->op != OP_INPUT && n->op != OP_PARAM) continue;
        double *v = ref_eval_data(e, i);
        for (int64_t k = 0; k < ir_shape_numel(&n->shape); k++) {
            v[k] = uniform(t->lo[i], t->hi[i]);
            if (n->dtype == IR_I32) v[k] = floor(v[k]);
        }
    }
}

static double mean_loss(ref_eval *e, const ir_module *m) {
    ref_eval_run(e, 1, true);
    const double *l = ref_eval_data(e, m->loss);
    int64_t n = ir_shape_numel(&m->g.nodes[m->loss].shape);
    double s = 0;
    for (int64_t k = 0; k < n; k++) s += l[k];
    return s / (double)n;
}

/* Largest relative error of dL/dp against central differences over every
 * element of every param; the denominator is floored at 1e-3 so that zero
 * gradients (relu, max_pool) are compared absolutely. */
static double check_grads(ir_module *m, ref_eval *e) {
    double worst = 0;
    for (int p = 0; p < m->n_params; p++) {
        int pi = m->params[p];
        int64_t n = ir_shape_numel(&m->g.nodes[pi].shape);
        double *x = ref_eval_data(e, pi), *g = malloc((size_t)n * sizeof *g);
        mean_loss(e, m); /* the gradient at the unperturbed point */
        memcpy(g, ref_eval_data(e, m->grads[p]), (size_t)n * sizeof *g);
        for (int64_t k = 0; k < n; k++) {
            double x0 = x[k], h = 1e-6 * fmax(1, fabs(x0));
            x[k] = x0 + h;
            double up = mean_loss(e, m);
            x[k] = x0 - h;
            double down = mean_loss(e, m);
            x[k] = x0;
            double fd = (up - down) / (2 * h), err = fabs(fd - g[k]) / fmax(1e-3, fmax(fabs(fd), fabs(g[k])));
            if (err > worst) worst = err;
            if (getenv("GRAD_DEBUG") && err > 1e-8) /* GRAD_DEBUG=1: list the elements that disagree */
                printf("    param %d [%lld]: fd %.12g ad %.12g\n", p, (long long)k, fd, g[k]);
        }
        free(g);
    }
    return worst;
}

static bool uses_op(const ir_module *m, int n_fwd, ir_op op) {
    for (int i = 0; i < n_fwd; i++)
        if (m->g.nodes[i].op == op) return true;
    return false;
}

static void run_case(const grad_case *c, double *worst) {
    tb *t = calloc(1, sizeof *t);
    t->m = ir_module_new();
    t->m->has_train = true;
    t->m->loss = weigh(t, c->build(t));
    int n_fwd = t->m->g.n;
    CHECK(uses_op(t->m, n_fwd, c->op), "case '%s' does not use '%s'", c->name, ir_ops[c->op].name);

    ir_diag *d = ir_diag_new(stderr);
    CHECK(pass_autodiff(t->m, d, NULL) && ir_diag_errors(d) == 0, "case '%s': autodiff failed", c->name);
    ir_diag_free(d);
    for (int p = 0; p < t->m->n_params; p++) {
        const ir_node *pn = ir_node_at(t->m, t->m->params[p]), *gn = ir_node_at(t->m, t->m->grads[p]);
        CHECK(ir_shape_eq(&pn->shape, &gn->shape), "case '%s': gradient shape of '%s'", c->name, pn->name);
    }

    ref_eval *e = ref_eval_new(t->m);
    randomize(t, e);
    double err = check_grads(t->m, e);
    printf("  %-30s %3d nodes (+%3d)  max rel err %.2e\n", c->name, n_fwd, t->m->g.n - n_fwd, err);
    CHECK(err < 1e-6, "case '%s': gradient differs from finite differences (%.3g)", c->name, err);
    if (err > *worst) *worst = err;
    ref_eval_free(e);
    ir_module_free(t->m);
    free(t);
}

static void test_gradients(void) {
    bool covered[OP_COUNT] = {0};
    double worst = 0;
    for (int i = 0; i < N_CASES; i++) {
        covered[cases[i].op] = true;
        run_case(&cases[i], &worst);
    }
    for (int op = 0; op < OP_COUNT; op++)
        CHECK(!(ir_ops[op].flags & OPF_DIFF) || covered[op], "op '%s' is differentiable but has no gradient case",
              ir_ops[op].name);
    printf("gradients: %d cases, worst relative error %.2e\n", N_CASES, worst);
}

/* ---- errors on non-differentiable paths, notes, positions ---- */

/* Runs autodiff with diagnostics captured; returns what it printed (caller frees). */
static char *autodiff_output(ir_module *m, const char *file, const char *text, bool *ok, int *errors) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ir_diag *d = ir_diag_new(f);
    if (file) ir_diag_add_source(d, file, text);
    *ok = pass_autodiff(m, d, NULL);
    *errors = ir_diag_errors(d);
    ir_diag_free(d);
    fclose(f);
    return buf;
}

/* x[4,3] -> dense/kernel, dense/bias -> logits z[4,5]; labels y */
static int dense_logits(tb *t, int *y) {
    int x = input(t, "x", S(4, 3)), k = param(t, "dense/kernel", S(3, 5)), b = param(t, "dense/bias", S(5));
    *y = labels(t, 4, 5);
    return op2(t, OP_ADD, matmul(t, x, k, 0, 0), b); /* the matmul is the node before */
}

static tb *new_tb(void) {
    tb *t = calloc(1, sizeof *t);
    t->m = ir_module_new();
    t->m->has_train = true;
    return t;
}

static void free_tb(tb *t) {
    ir_module_free(t->m);
    free(t);
}

static void test_argmax_on_loss_path(void) {
    tb *t = new_tb();
    int y, z = dense_logits(t, &y);
    int am = op2(t, OP_ARGMAX_MATCH, z, y);
    ir_node_at(t->m, am)->loc = (ir_loc){"model.mg", 2, 23};
    t->m->loss = op2(t, OP_ADD, op2(t, OP_SPARSE_XENT, z, y), am);
    int n = t->m->g.n, errors;
    bool ok;
    char *out = autodiff_output(t->m, "model.mg", "model m {\n  loss = xent(z, y) + argmax_match(z, y)\n}\n", &ok,
                                &errors);
    const char *want = "model.mg:2:23: error: cannot differentiate 'argmax_match' on the path from the loss to "
                       "param 'dense/kernel'\n"
                       "  loss = xent(z, y) + argmax_match(z, y)\n"
                       "                      ^\n";
    CHECK(!ok && errors == 1, "argmax_match on the loss path: ok %d, %d errors", ok, errors);
    CHECK(!strcmp(out, want), "argmax_match on the loss path printed:\n%s", out);
    CHECK(t->m->g.n == n, "autodiff added nodes after an error");
    free(out);
    free_tb(t);
}

/* Cast to int and back: one error, at the cast to int (the path is reported once). */
static void test_cast_to_int(void) {
    tb *t = new_tb();
    int y, z = dense_logits(t, &y);
    int to_int = cast(t, z, IR_I32);
    ir_node_at(t->m, to_int)->loc = (ir_loc){"model.mg", 3, 9};
    int back = cast(t, to_int, IR_F32);
    t->m->loss = op2(t, OP_SPARSE_XENT, op2(t, OP_ADD, z, back), y);
    int errors;
    bool ok;
    char *out = autodiff_output(t->m, NULL, NULL, &ok, &errors);
    const char *want = "model.mg:3:9: error: cannot differentiate 'cast' on the path from the loss to param "
                       "'dense/kernel'\n";
    CHECK(!ok && errors == 1 && !strcmp(out, want), "cast to i32 on the loss path printed:\n%s", out);
    free(out);
    free_tb(t);
}

/* argmax_match feeding only a metric needs no gradient: no message at all. */
static void test_metric_only_path(void) {
    tb *t = new_tb();
    int y, z = dense_logits(t, &y);
    t->m->metrics = calloc(1, sizeof *t->m->metrics);
    t->m->metrics[t->m->n_metrics++] = (ir_metric){"accuracy", op2(t, OP_ARGMAX_MATCH, z, y)};
    t->m->loss = op2(t, OP_SPARSE_XENT, z, y);
    int errors;
    bool ok;
    char *out = autodiff_output(t->m, NULL, NULL, &ok, &errors);
    CHECK(ok && errors == 0 && !strcmp(out, ""), "a metric-only argmax_match printed:\n%s", out);
    free(out);
    free_tb(t);
}

/* A param the loss ignores: zeros of its shape and a note at the param. */
static void test_unused_param(void) {
    tb *t = new_tb();
    int y, z = dense_logits(t, &y);
    int unused = param(t, "unused/w", S(2, 2));
    ir_node_at(t->m, unused)->loc = (ir_loc){"model.mg", 4, 3};
    t->m->loss = op2(t, OP_SPARSE_XENT, z, y);
    int errors;
    bool ok;
    char *out = autodiff_output(t->m, NULL, NULL, &ok, &errors);
    CHECK(ok && errors == 0, "an unused param is not an error");
    CHECK(!strcmp(out, "model.mg:4:3: note: param 'unused/w' does not affect the loss; its gradient is zero\n"),
          "unused param printed:\n%s", out);
    const ir_node *g = ir_node_at(t->m, t->m->grads[2]);
    CHECK(g->op == OP_CONST && g->fattr[0] == 0 && ir_shape_eq(&g->shape, &ir_node_at(t->m, unused)->shape),
          "the gradient of an unused param is not zeros of its shape");
    free(out);
    free_tb(t);
}

/* Without a train block the pass adds nothing. */
static void test_no_train(void) {
    tb *t = new_tb();
    int y, z = dense_logits(t, &y);
    t->m->loss = op2(t, OP_SPARSE_XENT, z, y);
    t->m->has_train = false;
    int n = t->m->g.n, errors;
    bool ok;
    char *out = autodiff_output(t->m, NULL, NULL, &ok, &errors);
    CHECK(ok && t->m->g.n == n && !t->m->grads, "autodiff ran without a train block");
    free(out);
    free_tb(t);
}

/* Gradient nodes carry the position of the forward node they come from. */
static void test_positions(void) {
    tb *t = new_tb();
    int y, z = dense_logits(t, &y);
    ir_node_at(t->m, z - 1)->loc = (ir_loc){"model.mg", 5, 7}; /* the matmul */
    t->m->loss = op2(t, OP_SPARSE_XENT, z, y);
    int n_fwd = t->m->g.n, errors, matmuls = 0;
    bool ok;
    free(autodiff_output(t->m, NULL, NULL, &ok, &errors));
    for (int i = n_fwd; i < t->m->g.n; i++) {
        const ir_node *n = ir_node_at(t->m, i);
        CHECK(n->loc.file && !strcmp(n->loc.file, n->op == OP_MATMUL ? "model.mg" : "t.mg"),
              "gradient node %d has no position", i);
        if (n->op != OP_MATMUL) continue;
        matmuls++;
        CHECK(n->loc.line == 5 && n->loc.col == 7 && !strcmp(n->loc.file, "model.mg"),
              "the matmul gradient is at %d:%d", n->loc.line, n->loc.col);
    }
    CHECK(ok && matmuls == 1, "%d matmul gradients (want 1: x is an input)", matmuls);
    free_tb(t);
}

/* ---- optimizers: 3 steps vs Keras formulas computed by hand ---- */

typedef struct {
    const char *name;
    ir_optimizer opt;
    const char *slots[2]; /* suffixes of each param's slots */
    double want[5];       /* dense_1/kernel[3], dense_1/bias[2] after 3 steps */
} opt_case;

/* Expected values: tests/grad/keras_ref.py (Keras 3 update rules). */
static const opt_case opt_cases[] = {
    {"sgd", {OPT_SGD, .lr = 0.1}, {NULL}, {0.256, 0.098, 1.756, -0.0464, 0.188}},
    {"sgd momentum", {OPT_SGD, .lr = 0.1, .momentum = 0.9}, {"velocity"},
     {0.031, 1.1105, 1.531, -0.1814, 0.638}},
    {"sgd nesterov", {OPT_SGD, .lr = 0.1, .momentum = 0.9, .nesterov = true}, {"velocity"},
     {-0.054176, 1.493792, 1.445824, -0.2325056, 0.808352}},
    {"adam", {OPT_ADAM, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-7}, {"m", "v"},
     {0.20487199950111401, -0.70053888898498373, 1.7048719995011141, -0.1867098429623858,
      -0.0015866431267169273}},
    {"adamw", {OPT_ADAMW, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-7, .weight_decay = 0.004},
     {"m", "v"},
     {0.20440809546847075, -0.69946184410888668, 1.702661980510312, -0.18670373318567346,
      -0.0013490509588682253}},
    {"rmsprop", {OPT_RMSPROP, .lr = 0.01, .rho = 0.9, .epsilon = 1e-7}, {"ms"},
     {0.42792889763297004, -0.92658782243091453, 1.9279288976329698, 0.029176647648327215,
      -0.22705310410336429}},
    {"rmsprop momentum", {OPT_RMSPROP, .lr = 0.01, .rho = 0.9, .momentum = 0.5, .epsilon = 1e-7},
     {"ms", "momentum"},
     {0.39354147461534172, -0.89156494666237462, 1.8935414746153416, -0.0045865938651667854,
      -0.19224649323863818}},
    /* issue 12: weight decay for every optimizer, clipnorm, global_clipnorm, adagrad, nadam, lamb */
    {"sgd wd clipnorm", {OPT_SGD, .lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .clipnorm = 1.0}, {"velocity"},
     {0.37968557919181456, -0.46210789869598901, 1.8754582283924262, -0.061385675952408889, 0.23786743510293706}},
    {"adam global_clipnorm", {OPT_ADAM, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-7, .global_clipnorm = 1.0},
     {"m", "v"},
     {0.20303083416051426, -0.69980318104028338, 1.7030308341605143, -0.18920385474870435, -0.00046062289491585751}},
    {"rmsprop wd clipnorm", {OPT_RMSPROP, .lr = 0.01, .rho = 0.9, .epsilon = 1e-7, .weight_decay = 0.01, .clipnorm = 0.5},
     {"ms"},
     {0.42731178923109953, -0.92582462213303385, 1.9268715377058074, 0.028157881310240159, -0.22599342460466995}},
    {"adagrad", {OPT_ADAGRAD, .lr = 0.1, .epsilon = 1e-7, .initial_accumulator_value = 0.1}, {"accumulator"},
     {0.29751962911532254, -0.77570598095788312, 1.7975196291153226, -0.078276218058483379, -0.082299195486849136}},
    {"adagrad wd global", {OPT_ADAGRAD, .lr = 0.1, .epsilon = 1e-7, .initial_accumulator_value = 0.5,
                           .weight_decay = 0.01, .global_clipnorm = 1.0}, {"accumulator"},
     {0.42302677611671835, -0.8054659449214624, 1.9187490037801715, 0.052529034469886854, -0.16911359305556858}},
    {"nadam", {OPT_NADAM, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-7}, {"m", "v"},
     {0.2647270641539714, -0.74695851402334312, 1.7647270641539712, -0.1158798617402137, -0.052729277495300916}},
    {"nadam wd clipnorm", {OPT_NADAM, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-7, .weight_decay = 0.01,
                           .clipnorm = 1.0}, {"m", "v"},
     {0.2581685712295223, -0.73888933183393413, 1.7541101245150341, -0.12644530386892605, -0.040607585912709937}},
    {"lamb", {OPT_LAMB, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-6}, {"m", "v"},
     {0.13911633591428627, -0.63081120246087763, 1.6391163359142864, 0.038693668632282685, -0.23854565651856233}},
    {"lamb wd global", {OPT_LAMB, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-6, .weight_decay = 0.01,
                        .global_clipnorm = 1.0}, {"m", "v"},
     {0.13806622929532947, -0.62995927937997831, 1.6337606051953901, 0.038544614618717762, -0.23786268018642429}},
};

/* l_b = sum_j (kernel_j - x1_bj)^2 + sum_j (bias_j - x2_bj)^2, batch 2 */
static void quadratic(tb *t, int *x1, int *x2) {
    int k = param(t, "dense_1/kernel", S(3)), b = param(t, "dense_1/bias", S(2));
    *x1 = input(t, "x1", S(2, 3)), *x2 = input(t, "x2", S(2, 2));
    int d1 = op2(t, OP_SUB, k, *x1), d2 = op2(t, OP_SUB, b, *x2);
    t->m->loss = op2(t, OP_ADD, reduce(t, OP_REDUCE_SUM, op2(t, OP_MUL, d1, d1), 2, 0),
                     reduce(t, OP_REDUCE_SUM, op2(t, OP_MUL, d2, d2), 2, 0));
}

/* The update node of param p and its slots are what the optimizer promised. */
static void check_update(const opt_case *c, ir_module *m, int p, int *n_updates) {
    static const ir_op ops[OPT_COUNT] = {OP_SGD_UPDATE,     OP_ADAM_UPDATE,  OP_ADAM_UPDATE, OP_RMSPROP_UPDATE,
                                         OP_ADAGRAD_UPDATE, OP_NADAM_UPDATE, OP_LAMB_UPDATE};
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *u = ir_node_at(m, i);
        if (!(ir_ops[u->op].flags & OPF_INPLACE) || u->in[0] != m->params[p]) continue;
        ++*n_updates;
        const char *pname = ir_node_at(m, m->params[p])->name;
        int n_slots = (c->slots[0] != NULL) + (c->slots[1] != NULL);
        int norm = c->opt.clipnorm > 0 || c->opt.global_clipnorm > 0;
        CHECK(u->op == ops[c->opt.kind] && u->n_in == 2 + n_slots + norm && u->in[1] == m->grads[p],
              "%s: update of '%s' is '%s' with %d inputs", c->name, pname, ir_ops[u->op].name, u->n_in);
        CHECK(u->fattr[ir_op_fattr_index(u->op, "lr")] == c->opt.lr, "%s: lr", c->name);
        if (norm) { /* sq_norm of its own gradient (clipnorm) or of every gradient (global_clipnorm) */
            const ir_node *s = ir_node_at(m, u->in[u->n_in - 1]);
            CHECK(s->op == OP_SQ_NORM && s->n_in == (c->opt.clipnorm > 0 ? 1 : m->n_params), "%s: the norm input", c->name);
        }
        for (int s = 0; s < n_slots && s + 2 < u->n_in; s++) {
            char want[128];
            snprintf(want, sizeof want, "%s/%s", pname, c->slots[s]);
            const ir_node *v = ir_node_at(m, u->in[2 + s]);
            CHECK(v->op == OP_VAR && v->iattr[0] == INIT_ZEROS && v->name && !strcmp(v->name, want),
                  "%s: slot %d is '%s', want '%s'", c->name, s, v->name ? v->name : "(null)", want);
        }
    }
}

static void run_opt_case(const opt_case *c) {
    tb *t = new_tb();
    int x1, x2;
    quadratic(t, &x1, &x2);
    t->m->opt = c->opt;
    ir_diag *d = ir_diag_new(stderr);
    CHECK(pass_autodiff(t->m, d, NULL) && pass_optimizer(t->m, d, NULL), "%s: passes failed", c->name);
    ir_diag_free(d);
    int n_updates = 0;
    for (int p = 0; p < t->m->n_params; p++) check_update(c, t->m, p, &n_updates);
    CHECK(n_updates == 2, "%s: %d update nodes", c->name, n_updates);

    ref_eval *e = ref_eval_new(t->m);
    memcpy(ref_eval_data(e, t->m->params[0]), (double[]){0.5, -1.0, 2.0}, 3 * sizeof(double));
    memcpy(ref_eval_data(e, t->m->params[1]), (double[]){0.1, -0.3}, 2 * sizeof(double));
    memcpy(ref_eval_data(e, x1), (double[]){1, 2, 3, -1, 0.5, 0}, 6 * sizeof(double));
    memcpy(ref_eval_data(e, x2), (double[]){0.2, 0.4, -0.6, 1.0}, 4 * sizeof(double));
    for (int step = 1; step <= 3; step++) ref_eval_run(e, step, true);
    double worst = 0;
    for (int k = 0; k < 5; k++) {
        double got = ref_eval_data(e, t->m->params[k / 3])[k % 3];
        worst = fmax(worst, fabs(got - c->want[k]));
    }
    printf("  %-18s 3 steps, max abs error %.1e\n", c->name, worst);
    CHECK(worst < 1e-12, "%s: params after 3 steps differ from Keras by %.3g", c->name, worst);
    ref_eval_free(e);
    free_tb(t);
}

static void test_optimizers(void) {
    for (size_t i = 0; i < sizeof opt_cases / sizeof opt_cases[0]; i++) run_opt_case(&opt_cases[i]);
}

/* reduce_max / reduce_min at ties (where finite differences cannot look):
 * the gradient of each row is split equally between its tied extremes
 * (TensorFlow's rule). Rows of x: [1, 3, 3] and [2, 2, 2]; L = mean(y). */
static void test_extreme_ties(ir_op op) {
    tb *t = new_tb();
    int x = param(t, "x", S(2, 3));
    t->m->loss = weigh(t, reduce(t, op, x, 2, 0));
    ir_diag *d = ir_diag_new(stderr);
    CHECK(pass_autodiff(t->m, d, NULL), "autodiff of %s at ties", ir_ops[op].name);
    ir_diag_free(d);
    ref_eval *e = ref_eval_new(t->m);
    double row0[3] = {1, 3, 3}, *xv = ref_eval_data(e, x);
    for (int k = 0; k < 3; k++) xv[k] = op == OP_REDUCE_MAX ? row0[k] : -row0[k], xv[3 + k] = 2;
    for (int i = 0; i < t->m->g.n; i++)
        if (t->m->g.nodes[i].op == OP_INPUT) ref_eval_data(e, i)[0] = ref_eval_data(e, i)[1] = 1; /* weights */
    ref_eval_run(e, 1, true);
    const double *g = ref_eval_data(e, t->m->grads[0]), want[6] = {0, 0.25, 0.25, 1.0 / 6, 1.0 / 6, 1.0 / 6};
    for (int k = 0; k < 6; k++)
        CHECK(fabs(g[k] - want[k]) < 1e-12, "%s at ties: dx[%d] = %g, want %g", ir_ops[op].name, k, g[k], want[k]);
    ref_eval_free(e);
    free_tb(t);
}

int main(void) {
    test_gradients();
    test_extreme_ties(OP_REDUCE_MAX);
    test_extreme_ties(OP_REDUCE_MIN);
    test_argmax_on_loss_path();
    test_cast_to_int();
    test_metric_only_path();
    test_unused_param();
    test_no_train();
    test_positions();
    test_optimizers();
    if (failures) fprintf(stderr, "%d failures\n", failures);
    else printf("all grad tests passed\n");
    return failures != 0;
}
