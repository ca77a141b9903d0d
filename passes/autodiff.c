/* autodiff.c - reverse-mode gradients of the mean loss with respect to every param. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/order.h"
#include "pass_impl.h"
#include "passes.h"


/* State of one backward sweep. Arrays are indexed by forward node (< n_fwd). */
typedef struct {
    ir_module *m;
    int n_fwd;     /* nodes of the forward graph; gradient nodes come after */
    int *grad;     /* node holding dL/d(node), -1 while none */
    int *param_of; /* lowest m->params ordinal the node depends on, -1 if none */
    char *to_loss; /* the loss depends on the node */
    int y;         /* the forward node being differentiated */
    ir_loc loc;    /* its position, copied to every node built for it */
} ad_ctx;

/* ---- building gradient nodes (each one inferred; a failure is a bug here) ---- */

static int finish(ad_ctx *c, int i) {
    char err[256];
    ASSERT(ir_infer_node(c->m, i, err, sizeof err), "autodiff built a bad '%s': %s",
           ir_ops[ir_node_at(c->m, i)->op].name, err);
    return i;
}

/* op(in...) with the attributes of `attrs` (may be NULL) and a declared shape
 * (NULL: inferred). Both are copied before ir_add, which may move the node array. */
static int build(ad_ctx *c, ir_op op, int n_in, const int *in, const ir_node *attrs, const ir_shape *shape) {
    ir_node a = attrs ? *attrs : (ir_node){0};
    ir_shape s = shape ? *shape : (ir_shape){0};
    int i = ir_add(c->m, op, in, n_in, c->loc);
    ir_node *n = ir_node_at(c->m, i);
    memcpy(n->iattr, a.iattr, sizeof n->iattr);
    memcpy(n->fattr, a.fattr, sizeof n->fattr);
    n->shape = s;
    return finish(c, i);
}

/* Shapes travel by value: a pointer into the node array dies at the next ir_add. */
static ir_shape shape_of(ad_ctx *c, int i) { return ir_node_at(c->m, i)->shape; }
static int emit(ad_ctx *c, ir_op op, int n_in, const int *in, const ir_node *attrs) {
    return build(c, op, n_in, in, attrs, NULL);
}
static int emit_as(ad_ctx *c, ir_shape s, ir_op op, int n_in, const int *in, const ir_node *attrs) {
    return build(c, op, n_in, in, attrs, &s);
}
static int op1(ad_ctx *c, ir_op op, int a) { return emit(c, op, 1, &a, NULL); }
static int op2(ad_ctx *c, ir_op op, int a, int b) { return emit(c, op, 2, (int[]){a, b}, NULL); }

static int reshape(ad_ctx *c, int a, ir_shape s) {
    ir_shape from = shape_of(c, a);
    return ir_shape_eq(&from, &s) ? a : emit_as(c, s, OP_RESHAPE, 1, &a, NULL);
}

/* f32 tensor of shape s with every element = v */
static int constant(ad_ctx *c, double v, ir_shape s) {
    return emit_as(c, s, OP_CONST, 0, NULL, &(ir_node){.fattr = {v}});
}
static int scalar(ad_ctx *c, double v) { return constant(c, v, (ir_shape){.rank = 0}); }

static int reduce_sum(ad_ctx *c, int a, int64_t axes, int keepdims) {
    return emit(c, OP_REDUCE_SUM, 1, &a, &(ir_node){.iattr = {axes, keepdims}});
}

/* Sums g over the axes numpy broadcasting added to reach shape `to` (the inverse of broadcasting). */
static int unbroadcast(ad_ctx *c, int g, ir_shape to) {
    ir_shape gs = shape_of(c, g);
    int lead = gs.rank - to.rank;
    int64_t axes = 0;
    for (int i = 0; i < gs.rank; i++)
        if (i < lead || (to.dim[i - lead] == 1 && gs.dim[i] != 1)) axes |= (int64_t)1 << i;
    if (axes) g = reduce_sum(c, g, axes, 1);
    return reshape(c, g, to);
}

/* Adds contribution g to the gradient of forward node x (x has several users: ADD). */
static void accumulate(ad_ctx *c, int x, int g) {
    ir_shape gs = shape_of(c, g), xs = shape_of(c, x);
    ASSERT(ir_shape_eq(&gs, &xs), "gradient shape differs from node %d", x);
    c->grad[x] = c->grad[x] < 0 ? g : op2(c, OP_ADD, c->grad[x], g);
}

/* Does input k of y need a gradient (it depends on a param)? */
static bool wants(const ad_ctx *c, const ir_node *y, int k) { return c->param_of[y->in[k]] >= 0; }

/* ---- gradient rules: forward (comment) and backward side by side ---- */
/* Each rule gets a copy of the forward node y (index c->y) and dy = dL/dy, and
 * accumulates dL/dx into every input x that wants one. */
typedef void (*grad_rule)(ad_ctx *c, const ir_node *y, int dy);

#define X0 (y->in[0])
#define X1 (y->in[1])
#define SEND(k, expr)                                        \
    do {                                                     \
        if (wants(c, y, k)) accumulate(c, y->in[k], (expr)); \
    } while (0)

/* y = a + b  ->  da = unbroadcast(dy), db = unbroadcast(dy) */
static void grad_add(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, unbroadcast(c, dy, shape_of(c, X0)));
    SEND(1, unbroadcast(c, dy, shape_of(c, X1)));
}

/* y = a - b  ->  da = unbroadcast(dy), db = unbroadcast(-dy) */
static void grad_sub(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, unbroadcast(c, dy, shape_of(c, X0)));
    SEND(1, unbroadcast(c, op1(c, OP_NEG, dy), shape_of(c, X1)));
}

/* y = a * b  ->  da = unbroadcast(dy * b), db = unbroadcast(dy * a) */
static void grad_mul(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, unbroadcast(c, op2(c, OP_MUL, dy, X1), shape_of(c, X0)));
    SEND(1, unbroadcast(c, op2(c, OP_MUL, dy, X0), shape_of(c, X1)));
}

/* y = a / b  ->  da = unbroadcast(dy / b), db = unbroadcast(-(dy * y) / b) */
static void grad_div(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, unbroadcast(c, op2(c, OP_DIV, dy, X1), shape_of(c, X0)));
    SEND(1, unbroadcast(c, op1(c, OP_NEG, op2(c, OP_DIV, op2(c, OP_MUL, dy, c->y), X1)), shape_of(c, X1)));
}

/* y = -x  ->  dx = -dy */
static void grad_neg(ad_ctx *c, const ir_node *y, int dy) { SEND(0, op1(c, OP_NEG, dy)); }
/* y = exp(x)  ->  dx = dy * y */
static void grad_exp(ad_ctx *c, const ir_node *y, int dy) { SEND(0, op2(c, OP_MUL, dy, c->y)); }
/* y = log(x)  ->  dx = dy / x */
static void grad_log(ad_ctx *c, const ir_node *y, int dy) { SEND(0, op2(c, OP_DIV, dy, X0)); }
/* y = sqrt(x)  ->  dx = dy * 0.5 / y */
static void grad_sqrt(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, op2(c, OP_DIV, op2(c, OP_MUL, dy, scalar(c, 0.5)), c->y));
}
/* y = max(x, 0)  ->  dx = relu_grad(x, dy) */
static void grad_relu(ad_ctx *c, const ir_node *y, int dy) { SEND(0, op2(c, OP_RELU_GRAD, X0, dy)); }
/* y = 1 / (1 + exp(-x))  ->  dx = sigmoid_grad(y, dy) */
static void grad_sigmoid(ad_ctx *c, const ir_node *y, int dy) { SEND(0, op2(c, OP_SIGMOID_GRAD, c->y, dy)); }
/* y = tanh(x)  ->  dx = tanh_grad(y, dy) */
static void grad_tanh(ad_ctx *c, const ir_node *y, int dy) { SEND(0, op2(c, OP_TANH_GRAD, c->y, dy)); }
/* y = cast(x), f32 -> f32 only (checked before)  ->  dx = dy */
static void grad_cast(ad_ctx *c, const ir_node *y, int dy) { SEND(0, dy); }

static int matmul(ad_ctx *c, int a, int b, int ta, int tb) {
    return emit(c, OP_MATMUL, 2, (int[]){a, b}, &(ir_node){.iattr = {ta, tb}});
}

/* y = op(a) op(b) (over the last two axes, batch axes broadcast)  ->  with op(.) undone per trans flag:
 *   ta tb | da            | db
 *   0  0  | dy b^T        | a^T dy
 *   1  0  | b dy^T        | a dy
 *   0  1  | dy b          | dy^T a
 *   1  1  | b^T dy^T      | dy^T a^T */
static void grad_matmul(ad_ctx *c, const ir_node *y, int dy) {
    int ta = y->iattr[0] != 0, tb = y->iattr[1] != 0;
    /* issue 13: batched operands; each gradient summed over the batch axes its operand was broadcast on.
     * db first: a dense layer's weight gradient closes its bucket before the input gradient is
     * computed, so the all-reduce starts earlier (docs/runtime.md; convolutions alike) */
    SEND(1, unbroadcast(c, tb ? matmul(c, dy, X0, 1, ta) : matmul(c, X0, dy, !ta, 0), shape_of(c, X1)));
    SEND(0, unbroadcast(c, ta ? matmul(c, X1, dy, tb, 1) : matmul(c, dy, X1, 0, !tb), shape_of(c, X0)));
}

/* ---- issue 14 (char_gpt speed): causal_matmul ---- */

static int causal_matmul(ad_ctx *c, int a, int b, int ta, int tb, int tri, int upper) {
    return emit(c, OP_CAUSAL_MATMUL, 2, (int[]){a, b}, &(ir_node){.iattr = {ta, tb, tri, upper}});
}

/* y = T(op(a) op(b)) or op(a)'s or op(b)'s triangle T (tri 0, 1, 2)  ->  matmul's
 * gradients, the triangle moving with its matrix: d op(a) = T_a(T_y(dy) op(b)^T),
 * d op(b) = T_b(op(a)^T T_y(dy)), and transposing a matrix flips its triangle.
 * Each row below maps the triangle of y, a, b to (its place, flipped) in the
 * gradient's own causal_matmul (a triangle on the gradient's output there masks
 * the gradient of a triangular operand): */
static const struct { int tri[3], flip[3]; } causal_grad[4] = {
    {{1, 0, 2}, {0, 0, 1}}, /* da, ta 0: dy op(b)^T */
    {{2, 0, 1}, {1, 1, 0}}, /* da, ta 1: op(b) dy^T */
    {{2, 1, 0}, {0, 1, 0}}, /* db, tb 0: op(a)^T dy */
    {{1, 2, 0}, {1, 0, 1}}, /* db, tb 1: dy^T op(a) */
};
static void grad_causal_matmul(ad_ctx *c, const ir_node *y, int dy) {
    int ta = y->iattr[0] != 0, tb = y->iattr[1] != 0, tri = (int)y->iattr[2], up = y->iattr[3] != 0;
    int ga = ta, gb = 2 + tb, ua = up ^ causal_grad[ga].flip[tri], ub = up ^ causal_grad[gb].flip[tri];
    int da = ta ? causal_matmul(c, X1, dy, tb, 1, causal_grad[ga].tri[tri], ua)
                : causal_matmul(c, dy, X1, 0, !tb, causal_grad[ga].tri[tri], ua);
    int db = tb ? causal_matmul(c, dy, X0, 1, ta, causal_grad[gb].tri[tri], ub)
                : causal_matmul(c, X0, dy, !ta, 0, causal_grad[gb].tri[tri], ub);
    SEND(0, unbroadcast(c, da, shape_of(c, X0)));
    SEND(1, unbroadcast(c, db, shape_of(c, X1)));
}

/* y = conv2d(x, w)  ->  dx = conv2d_grad_input(dy, w), dw = conv2d_grad_filter(x, dy), same attrs */
static void grad_conv2d(ad_ctx *c, const ir_node *y, int dy) {
    SEND(1, emit_as(c, shape_of(c, X1), OP_CONV2D_GRAD_FILTER, 2, (int[]){X0, dy}, y));
    SEND(0, emit_as(c, shape_of(c, X0), OP_CONV2D_GRAD_INPUT, 2, (int[]){dy, X1}, y));
}

/* y = conv2d_transpose(x, w), the adjoint of conv2d(., w) with the same attrs  ->
 *   dx = conv2d(dy, w), dw = conv2d_grad_filter(dy, x) (w's shape) */
static void grad_conv2d_transpose(ad_ctx *c, const ir_node *y, int dy) {
    SEND(1, emit_as(c, shape_of(c, X1), OP_CONV2D_GRAD_FILTER, 2, (int[]){dy, X0}, y));
    SEND(0, emit(c, OP_CONV2D, 2, (int[]){dy, X1}, y));
}

/* y = max_pool2d(x)  ->  dx = max_pool2d_grad(x, dy), same attrs */
static void grad_max_pool(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, emit(c, OP_MAX_POOL2D_GRAD, 2, (int[]){X0, dy}, y));
}

/* y = avg_pool2d(x)  ->  dx = avg_pool2d_grad(x, dy), same attrs */
static void grad_avg_pool(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, emit(c, OP_AVG_POOL2D_GRAD, 2, (int[]){X0, dy}, y));
}

/* y = reshape(x)  ->  dx = reshape(dy) to x's shape */
static void grad_reshape(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, reshape(c, dy, shape_of(c, X0)));
}

/* dy of a reduction, with the reduced axes kept as 1, broadcast back to x's shape */
static int unreduce(ad_ctx *c, const ir_node *y, int dy) {
    ir_shape xs = shape_of(c, X0), kept = xs;
    for (int i = 0; i < kept.rank; i++)
        if (y->iattr[0] >> i & 1) kept.dim[i] = 1;
    return emit_as(c, xs, OP_BROADCAST_TO, 1, (int[]){reshape(c, dy, kept)}, NULL);
}

/* y = reduce_sum(x, axes)  ->  dx = broadcast_to(dy) */
static void grad_reduce_sum(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, unreduce(c, y, dy));
}

/* y = reduce_mean(x, axes)  ->  dx = broadcast_to(dy) / (elements per mean) */
static void grad_reduce_mean(ad_ctx *c, const ir_node *y, int dy) {
    ir_shape xs = shape_of(c, X0);
    double count = (double)ir_shape_numel(&xs) / (double)ir_shape_numel(&y->shape);
    SEND(0, op2(c, OP_MUL, unreduce(c, y, dy), scalar(c, 1.0 / count)));
}

/* y = broadcast_to(x)  ->  dx = unbroadcast(dy) */
static void grad_broadcast_to(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, unbroadcast(c, dy, shape_of(c, X0)));
}

/* y = softmax(x)  ->  dx = softmax_grad(y, dy), same axis */
static void grad_softmax(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, emit(c, OP_SOFTMAX_GRAD, 2, (int[]){c->y, dy}, y));
}

/* y = sparse_xent(logits, labels)  ->  dlogits = sparse_xent_grad(logits, labels, dy); labels: none */
static void grad_sparse_xent(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, emit(c, OP_SPARSE_XENT_GRAD, 3, (int[]){X0, X1, dy}, NULL));
}

/* y = dropout(x)  ->  dx = dropout_grad(dy), same seed and rate (same mask) */
static void grad_dropout(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, emit(c, OP_DROPOUT_GRAD, 1, &dy, y));
}

/* y = (a < b) and the other comparisons: a step function, zero gradient almost
 * everywhere (as TF and PyTorch treat it) */
static void grad_compare(ad_ctx *c, const ir_node *y, int dy) { (void)c, (void)y, (void)dy; }

/* y = in_training(a, b)  ->  da = dy; b is what eval and predict read */
static void grad_in_training(ad_ctx *c, const ir_node *y, int dy) { SEND(0, dy); }

/* y = all_reduce(x...) over replicas  ->  dx = all_reduce(dy), same attrs, split
 * back into the inputs. Each replica's loss is its share of the global mean
 * loss scaled by the replica count (gradients are averaged later), so the
 * collective's transpose is the same collective: a mean for a mean, a sum
 * for a sum. */
static void grad_all_reduce(ad_ctx *c, const ir_node *y, int dy) {
    int g = emit(c, OP_ALL_REDUCE, 1, &dy, y);
    int64_t at = 0;
    for (int k = 0; k < y->n_in; k++) {
        ir_shape xs = shape_of(c, y->in[k]);
        if (y->n_in == 1) SEND(k, reshape(c, g, xs));
        else SEND(k, emit_as(c, xs, OP_VIEW, 1, &g, &(ir_node){.iattr = {at}}));
        at += ir_shape_numel(&xs);
    }
}

/* ---- shape ops, reductions, normalization (issue 12) ---- */

static int slice(ad_ctx *c, int a, ir_shape s, const int64_t *begin) {
    ir_node attrs = {0};
    memcpy(attrs.iattr, begin, IR_MAX_RANK * sizeof *begin);
    return emit_as(c, s, OP_SLICE, 1, &a, &attrs);
}

/* y = concat(x0, x1, ..., axis)  ->  dxk = slice(dy) at xk's place on the axis */
static void grad_concat(ad_ctx *c, const ir_node *y, int dy) {
    int64_t begin[IR_MAX_RANK] = {0};
    for (int k = 0; k < y->n_in; k++) {
        ir_shape xs = shape_of(c, y->in[k]);
        SEND(k, slice(c, dy, xs, begin));
        begin[y->iattr[0]] += xs.dim[y->iattr[0]];
    }
}

/* y = slice(x, begin)  ->  dx = pad(dy, before = begin) to x's shape */
static void grad_slice(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, emit_as(c, shape_of(c, X0), OP_PAD, 1, &dy, y));
}

/* y = pad(x, before)  ->  dx = slice(dy, begin = before) of x's shape */
static void grad_pad(ad_ctx *c, const ir_node *y, int dy) { SEND(0, slice(c, dy, shape_of(c, X0), y->iattr)); }

/* y = transpose(x, perm)  ->  dx = transpose(dy, inverse perm) */
static void grad_transpose(ad_ctx *c, const ir_node *y, int dy) {
    int64_t inverse = 0;
    for (int i = 0; i < y->shape.rank; i++) inverse |= (int64_t)i << 4 * (y->iattr[0] >> 4 * i & 15);
    SEND(0, emit(c, OP_TRANSPOSE, 1, &dy, &(ir_node){.iattr = {inverse}}));
}

/* y = reduce_max(x, axes) (or min)  ->  dx = dy where x equals its extreme,
 * split equally between ties (TensorFlow's rule):
 *   hit = equal(x, y), dx = hit / reduce_sum(hit, axes, keepdims) * dy, y and dy broadcast back */
static void grad_reduce_extreme(ad_ctx *c, const ir_node *y, int dy) {
    ir_shape xs = shape_of(c, X0), kept = xs;
    for (int i = 0; i < kept.rank; i++)
        if (y->iattr[0] >> i & 1) kept.dim[i] = 1;
    int hit = op2(c, OP_EQUAL, X0, reshape(c, c->y, kept));
    int share = op2(c, OP_DIV, hit, reduce_sum(c, hit, y->iattr[0], 1));
    SEND(0, op2(c, OP_MUL, share, unreduce(c, y, dy)));
}

/* y = log_softmax(x) on axis a  ->  dx = dy - exp(y) * reduce_sum(dy, a, keepdims) */
static void grad_log_softmax(ad_ctx *c, const ir_node *y, int dy) {
    int64_t axis = y->shape.rank - 1 - y->iattr[0];
    int total = reduce_sum(c, dy, (int64_t)1 << axis, 1);
    SEND(0, op2(c, OP_SUB, dy, op2(c, OP_MUL, op1(c, OP_EXP, c->y), total)));
}
/* ---- issue 12: activations and elementwise math ---- */

/* y = |x|  ->  dx = abs_grad(x, dy) = dy * sign(x) */
static void grad_abs(ad_ctx *c, const ir_node *y, int dy) { SEND(0, op2(c, OP_ABS_GRAD, X0, dy)); }
/* y = erf(x)  ->  dx = erf_grad(x, dy) */
static void grad_erf(ad_ctx *c, const ir_node *y, int dy) { SEND(0, op2(c, OP_ERF_GRAD, X0, dy)); }
/* y = gelu(x)  ->  dx = gelu_grad(x, dy) */
static void grad_gelu(ad_ctx *c, const ir_node *y, int dy) { SEND(0, op2(c, OP_GELU_GRAD, X0, dy)); }
/* y = softplus(x)  ->  dx = dy * sigmoid(x) */
static void grad_softplus(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, op2(c, OP_MUL, dy, op1(c, OP_SIGMOID, X0)));
}
/* y = selu(x)  ->  dx = selu_grad(x, dy) */
static void grad_selu(ad_ctx *c, const ir_node *y, int dy) { SEND(0, op2(c, OP_SELU_GRAD, X0, dy)); }
/* y = elu(x; alpha)  ->  dx = elu_grad(x, dy; alpha) */
static void grad_elu(ad_ctx *c, const ir_node *y, int dy) { SEND(0, emit(c, OP_ELU_GRAD, 2, (int[]){X0, dy}, y)); }
/* y = leaky_relu(x; alpha)  ->  dx = leaky_relu_grad(x, dy; alpha) */
static void grad_leaky_relu(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, emit(c, OP_LEAKY_RELU_GRAD, 2, (int[]){X0, dy}, y));
}
/* y = maximum(a, b)  ->  da = unbroadcast(dy * (a >= b)), db = unbroadcast(dy * (a < b)) (a tie: to a) */
static void grad_maximum(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, unbroadcast(c, op2(c, OP_MUL, dy, op2(c, OP_GREATER_EQUAL, X0, X1)), shape_of(c, X0)));
    SEND(1, unbroadcast(c, op2(c, OP_MUL, dy, op2(c, OP_LESS, X0, X1)), shape_of(c, X1)));
}
/* y = minimum(a, b)  ->  da = unbroadcast(dy * (a <= b)), db = unbroadcast(dy * (a > b)) (a tie: to a) */
static void grad_minimum(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, unbroadcast(c, op2(c, OP_MUL, dy, op2(c, OP_LESS_EQUAL, X0, X1)), shape_of(c, X0)));
    SEND(1, unbroadcast(c, op2(c, OP_MUL, dy, op2(c, OP_GREATER, X0, X1)), shape_of(c, X1)));
}
/* y = a^b  ->  da = unbroadcast(dy * b * a^(b-1)),
 *              db = unbroadcast(dy * y * log(max(a, FLT_MIN)) * (a > 0))  (0 where a <= 0, as TF) */
static void grad_pow(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, unbroadcast(c, op2(c, OP_MUL, op2(c, OP_MUL, dy, X1), op2(c, OP_POW, X0, op2(c, OP_SUB, X1, scalar(c, 1.0)))),
                        shape_of(c, X0)));
    if (!wants(c, y, 1)) return;
    int log_a = op1(c, OP_LOG, op2(c, OP_MAXIMUM, X0, scalar(c, 1.17549435082228750797e-38)));
    int mask = op2(c, OP_GREATER, X0, scalar(c, 0.0));
    SEND(1, unbroadcast(c, op2(c, OP_MUL, op2(c, OP_MUL, op2(c, OP_MUL, dy, c->y), log_a), mask), shape_of(c, X1)));
}

/* Ops without an entry have no gradient (CAST: f32 -> f32 only). */
/* ---- issue 13: sequence models ---- */

/* y = gather(table, ids)  ->  dtable = scatter_add(ids, dy) (table's shape); ids get none */
static void grad_gather(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, emit_as(c, shape_of(c, X0), OP_SCATTER_ADD, 2, (int[]){X1, dy}, NULL));
}

/* ---- issue 14 (char_gpt speed) ---- */

/* y = causal_softmax(x, scale)  ->  dx = causal_softmax_grad(y, dy), same scale */
static void grad_causal_softmax(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, emit(c, OP_CAUSAL_SOFTMAX_GRAD, 2, (int[]){c->y, dy}, y));
}

/* y = normalize(x, epsilon)  ->  dx = normalize_grad(x, dy), same epsilon (the
 * kernel recomputes the row's mean and variance from x) */
static void grad_normalize(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, emit(c, OP_NORMALIZE_GRAD, 2, (int[]){X0, dy}, y));
}

/* ---- issue 14: batch norm in training (x [..., c] viewed as [rows, c]) ---- */

static double channel_rows(ad_ctx *c, int x) {
    ir_shape xs = shape_of(c, x);
    int64_t ch = xs.dim[xs.rank - 1];
    return ch ? (double)(ir_shape_numel(&xs) / ch) : 0.0;
}

/* y = channel_mean(x)  ->  dx = dy / rows at every row. When x has a gradient
 * already, added to it with broadcasting (one elementwise add, which fuses with
 * the rest of dx); only otherwise broadcast_to x's shape. */
static void grad_channel_mean(ad_ctx *c, const ir_node *y, int dy) {
    if (!wants(c, y, 0)) return;
    double rows = channel_rows(c, X0);
    int g = op2(c, OP_MUL, dy, scalar(c, rows ? 1.0 / rows : 0.0));
    ir_shape xs = shape_of(c, X0), kept = xs;
    for (int i = 0; i + 1 < kept.rank; i++) kept.dim[i] = 1;
    if (c->grad[X0] >= 0) c->grad[X0] = op2(c, OP_ADD, c->grad[X0], g);
    else accumulate(c, X0, emit_as(c, xs, OP_BROADCAST_TO, 1, (int[]){reshape(c, g, kept)}, NULL));
}

/* y = channel_var(x, m) = mean((x - m)^2)  ->  dx = (x - m) (2 dy / rows),
 * dm = -2 dy (channel_mean(x) - m). When m is channel_mean(x) itself (batch
 * norm without sync) dm is the derivative at m = mean(x), zero, and not built;
 * with sync m is the replicas' mean and dm is built. */
static void grad_channel_var(ad_ctx *c, const ir_node *y, int dy) {
    double rows = channel_rows(c, X0);
    if (wants(c, y, 0)) {
        int k = op2(c, OP_MUL, dy, scalar(c, rows ? 2.0 / rows : 0.0));
        accumulate(c, X0, op2(c, OP_MUL, op2(c, OP_SUB, X0, X1), k));
    }
    const ir_node *m = ir_node_at(c->m, X1);
    if (m->op == OP_CHANNEL_MEAN && m->in[0] == X0) return;
    int mean = emit(c, OP_CHANNEL_MEAN, 1, (int[]){X0}, NULL);
    SEND(1, op2(c, OP_MUL, op2(c, OP_SUB, mean, X1), op2(c, OP_MUL, dy, scalar(c, -2.0))));
}

/* row k of channel_sum_dot's [2, c] as [c] */
static int channel_sum_dot_row(ad_ctx *c, int pair, int k) {
    ir_shape ps = shape_of(c, pair), row = ps;
    row.dim[0] = 1;
    return reshape(c, slice(c, pair, row, (int64_t[IR_MAX_RANK]){k, 0}), ir_shape_make(1, &ps.dim[1]));
}

/* y = scale_shift(x, m, s, b) = (x - m) s + b  ->  dx = dy s,
 * dm = -s sum(dy), ds = sum(dy (x - m)), db = sum(dy) (sums over the rows);
 * ds is row 1 of channel_sum_dot (one read of x and dy), and so is sum(dy)
 * (row 0) when ds is wanted too (batch norm); otherwise sum(dy) is a
 * reduce_sum */
static void grad_scale_shift(ad_ctx *c, const ir_node *y, int dy) {
    SEND(0, op2(c, OP_MUL, dy, y->in[2]));
    bool want_sum = wants(c, y, 1) || wants(c, y, 3);
    int pair = wants(c, y, 2) ? emit(c, OP_CHANNEL_SUM_DOT, 3, (int[]){X0, X1, dy}, NULL) : -1;
    int s1 = !want_sum ? -1
           : pair >= 0 ? reshape(c, channel_sum_dot_row(c, pair, 0), shape_of(c, y->in[3]))
                       : unbroadcast(c, dy, shape_of(c, y->in[3]));
    SEND(1, op1(c, OP_NEG, op2(c, OP_MUL, s1, y->in[2])));
    SEND(2, channel_sum_dot_row(c, pair, 1)); /* pair built when wanted */
    SEND(3, s1);
}

static const grad_rule rules[OP_COUNT] = {
    [OP_ADD] = grad_add,                  [OP_SUB] = grad_sub,
    [OP_MUL] = grad_mul,                  [OP_DIV] = grad_div,
    [OP_NEG] = grad_neg,                  [OP_EXP] = grad_exp,
    [OP_LOG] = grad_log,                  [OP_SQRT] = grad_sqrt,
    [OP_RELU] = grad_relu,                [OP_SIGMOID] = grad_sigmoid,
    [OP_TANH] = grad_tanh,                [OP_CAST] = grad_cast,
    [OP_MATMUL] = grad_matmul,            [OP_CONV2D] = grad_conv2d,
    [OP_CONV2D_TRANSPOSE] = grad_conv2d_transpose,
    [OP_MAX_POOL2D] = grad_max_pool,      [OP_AVG_POOL2D] = grad_avg_pool,
    [OP_RESHAPE] = grad_reshape,          [OP_REDUCE_SUM] = grad_reduce_sum,
    [OP_REDUCE_MEAN] = grad_reduce_mean,  [OP_BROADCAST_TO] = grad_broadcast_to,
    [OP_SOFTMAX] = grad_softmax,          [OP_SPARSE_XENT] = grad_sparse_xent,
    [OP_DROPOUT] = grad_dropout,          [OP_IN_TRAINING] = grad_in_training,
    [OP_ALL_REDUCE] = grad_all_reduce,
    [OP_LESS] = grad_compare,             [OP_LESS_EQUAL] = grad_compare,
    [OP_GREATER] = grad_compare,          [OP_GREATER_EQUAL] = grad_compare,
    [OP_EQUAL] = grad_compare,            [OP_NOT_EQUAL] = grad_compare,
    /* issue 12: shape ops, reductions, normalization */
    [OP_CONCAT] = grad_concat,            [OP_SLICE] = grad_slice,
    [OP_PAD] = grad_pad,                  [OP_TRANSPOSE] = grad_transpose,
    [OP_REDUCE_MAX] = grad_reduce_extreme, [OP_REDUCE_MIN] = grad_reduce_extreme,
    /* issue 12 */
    [OP_ABS] = grad_abs,                  [OP_ERF] = grad_erf,
    [OP_GELU] = grad_gelu,                [OP_SOFTPLUS] = grad_softplus,
    [OP_SELU] = grad_selu,                [OP_ELU] = grad_elu,
    [OP_LEAKY_RELU] = grad_leaky_relu,    [OP_MAXIMUM] = grad_maximum,
    [OP_MINIMUM] = grad_minimum,          [OP_POW] = grad_pow,
    [OP_LOG_SOFTMAX] = grad_log_softmax,
    /* issue 13 */
    [OP_GATHER] = grad_gather,
    /* issue 14: char_gpt speed */
    [OP_CAUSAL_SOFTMAX] = grad_causal_softmax, [OP_NORMALIZE] = grad_normalize,
    /* issue 14: batch norm in training */
    [OP_CHANNEL_MEAN] = grad_channel_mean, [OP_CHANNEL_VAR] = grad_channel_var,
    [OP_SCALE_SHIFT] = grad_scale_shift,
    /* issue 14: attention's causal GEMMs */
    [OP_CAUSAL_MATMUL] = grad_causal_matmul,
};

/* ---- which nodes lie between a param and the loss ---- */

static void mark_params(ad_ctx *c) {
    for (int i = 0; i < c->n_fwd; i++) c->param_of[i] = -1;
    for (int p = c->m->n_params - 1; p >= 0; p--) c->param_of[c->m->params[p]] = p;
    for (int i = 0; i < c->n_fwd; i++) {
        const ir_node *n = ir_node_at(c->m, i);
        for (int k = 0; k < n->n_in; k++) {
            int p = c->param_of[n->in[k]];
            if (p >= 0 && (c->param_of[i] < 0 || p < c->param_of[i])) c->param_of[i] = p;
        }
    }
}

static void mark_loss(ad_ctx *c) {
    c->to_loss[c->m->loss] = 1;
    for (int i = c->m->loss; i >= 0; i--) {
        const ir_node *n = ir_node_at(c->m, i);
        if (!c->to_loss[i]) continue;
        for (int k = 0; k < n->n_in; k++)
            if (ir_reads_input(n, k, 0)) c->to_loss[n->in[k]] = 1; /* in the train program (bit 0) */
    }
}

/* A node on a param-to-loss path must have a rule and f32 values in and out. */
static bool differentiable(const ir_module *m, const ir_node *n) {
    if (!rules[n->op] || n->dtype != IR_F32) return false;
    return n->op != OP_CAST || m->g.nodes[n->in[0]].dtype == IR_F32;
}

/* One error per broken path: at the first non-differentiable op on it. */
static bool check_paths(ad_ctx *c, ir_diag *d) {
    char *broken = calloc((size_t)c->n_fwd, 1);
    ASSERT(broken, "out of memory");
    bool ok = true;
    for (int i = 0; i < c->n_fwd; i++) {
        const ir_node *n = ir_node_at(c->m, i);
        if (n->op == OP_PARAM || c->param_of[i] < 0 || !c->to_loss[i]) continue;
        for (int k = 0; k < n->n_in; k++) broken[i] |= broken[n->in[k]];
        if (broken[i] || differentiable(c->m, n)) continue;
        const ir_node *p = ir_node_at(c->m, c->m->params[c->param_of[i]]);
        ir_diag_error(d, n->loc, "cannot differentiate '%s' on the path from the loss to param '%s'",
                      ir_ops[n->op].name, p->name ? p->name : "?");
        broken[i] = 1, ok = false;
    }
    free(broken);
    return ok;
}

/* ---- the sweep ---- */

static void backward(ad_ctx *c) {
    int loss = c->m->loss;
    ir_shape ls = shape_of(c, loss);
    c->loc = ir_node_at(c->m, loss)->loc;
    c->grad[loss] = constant(c, 1.0 / (double)ir_shape_numel(&ls), ls); /* L = mean(loss) */
    for (int i = loss; i >= 0; i--) {
        ir_node y = *ir_node_at(c->m, i); /* a copy: emitting nodes moves the array */
        if (c->grad[i] < 0 || y.op == OP_PARAM || c->param_of[i] < 0) continue;
        c->y = i, c->loc = y.loc;
        rules[y.op](c, &y, c->grad[i]);
    }
}

/* Gradient of each param, zeros (with a note) for params the loss ignores. */
static void collect(ad_ctx *c, ir_diag *d) {
    ir_module *m = c->m;
    if (!m->grads) m->grads = malloc((size_t)(m->n_params ? m->n_params : 1) * sizeof *m->grads);
    ASSERT(m->grads, "out of memory");
    for (int p = 0; p < m->n_params; p++) {
        int pi = m->params[p];
        const ir_node *pn = ir_node_at(m, pi);
        if (c->grad[pi] < 0) {
            ir_diag_note(d, pn->loc, "param '%s' does not affect the loss; its gradient is zero",
                         pn->name ? pn->name : "?");
            c->loc = pn->loc;
            c->grad[pi] = constant(c, 0.0, pn->shape);
        }
        m->grads[p] = c->grad[pi];
    }
}

/* L = mean(m->loss); m->grads[i] = dL/d(param i), summed over every use.
 * Error at an op on a param-to-loss path that has no gradient. */
bool pass_autodiff(ir_module *m, ir_diag *d, const pass_options *o) {
    (void)o;
    if (!m->has_train) return true;
    for (int op = 0; op < OP_COUNT; op++)
        ASSERT(!(ir_ops[op].flags & OPF_DIFF) == !rules[op] || op == OP_CAST, "op '%s': OPF_DIFF and rules disagree",
               ir_ops[op].name);
    if (m->loss < 0) {
        ir_diag_error(d, (ir_loc){0}, "%s: model '%s' has a train block but no loss", m->source_file ? m->source_file : "?",
                      m->model_name ? m->model_name : "?");
        return false;
    }
    ad_ctx c = {.m = m, .n_fwd = m->g.n};
    c.grad = malloc((size_t)c.n_fwd * sizeof *c.grad);
    c.param_of = malloc((size_t)c.n_fwd * sizeof *c.param_of);
    c.to_loss = calloc((size_t)c.n_fwd, 1);
    ASSERT(c.grad && c.param_of && c.to_loss, "out of memory");
    for (int i = 0; i < c.n_fwd; i++) c.grad[i] = -1;
    mark_params(&c);
    mark_loss(&c);
    bool ok = check_paths(&c, d);
    if (ok) {
        backward(&c);
        collect(&c, d);
    }
    free(c.grad), free(c.param_of), free(c.to_loss);
    return ok;
}
