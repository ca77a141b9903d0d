/* onnx.c - ONNX export: the predict graph of replica 0, node by node in
 * graph order, each ir op as one or a few ONNX ops (opset 17). Images stay
 * NHWC: a convolution or pooling transposes to NCHW and back (onnxruntime
 * folds the pairs), filters HWIO -> OIHW by a Transpose of the initializer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/order.h" /* ir_reads_input */
#include "../ir/outfile.h"
#include "onnx.h"
#include "onnx_impl.h"

typedef struct {
    ox_builder b;
    const ir_module *m;
    const char **names;   /* [g.n] the ONNX tensor of each node's output, NULL until emitted */
    bool *declared;       /* [g.n] INPUT nodes made graph inputs */
} ox_ctx;

static const char *in(const ox_ctx *c, const ir_node *n, int k) { return c->names[n->in[k]]; }
static const ir_node *in_node(const ox_ctx *c, const ir_node *n, int k) { return &c->m->g.nodes[n->in[k]]; }

static const char *transpose(ox_ctx *c, const char *x, int rank, const int64_t *perm) {
    Onnx__NodeProto *t = ox_node(&c->b, "Transpose", 1, &x, NULL);
    ox_attr_ints(&c->b, t, "perm", rank, perm);
    return t->output[0];
}

/* x with its last two axes swapped */
static const char *swap_last(ox_ctx *c, const char *x, int rank) {
    int64_t perm[IR_MAX_RANK];
    for (int d = 0; d < rank; d++) perm[d] = d;
    perm[rank - 2] = rank - 1, perm[rank - 1] = rank - 2;
    return transpose(c, x, rank, perm);
}

static const int64_t TO_NCHW[4] = {0, 3, 1, 2}, TO_NHWC[4] = {0, 2, 3, 1}, HWIO_TO_OIHW[4] = {3, 2, 0, 1};

/* ---- elementwise math (nodes and the instructions of fused programs) ---- */

static const char *unary_name(ir_op op) {
    switch (op) {
    case OP_NEG: return "Neg";
    case OP_EXP: return "Exp";
    case OP_LOG: return "Log";
    case OP_SQRT: return "Sqrt";
    case OP_RELU: return "Relu";
    case OP_SIGMOID: return "Sigmoid";
    case OP_TANH: return "Tanh";
    case OP_ABS: return "Abs";
    case OP_ERF: return "Erf";
    case OP_SOFTPLUS: return "Softplus";
    default: return NULL;
    }
}

static const char *binary_name(ir_op op) {
    switch (op) {
    case OP_ADD: return "Add";
    case OP_SUB: return "Sub";
    case OP_MUL: return "Mul";
    case OP_DIV: return "Div";
    case OP_MAXIMUM: return "Max";
    case OP_MINIMUM: return "Min";
    case OP_POW: return "Pow";
    default: return NULL;
    }
}

/* comparisons give a bool in ONNX, 1/0 in the inputs' dtype here */
static const char *compare_name(ir_op op) {
    switch (op) {
    case OP_LESS: return "Less";
    case OP_LESS_EQUAL: return "LessOrEqual";
    case OP_GREATER: return "Greater";
    case OP_GREATER_EQUAL: return "GreaterOrEqual";
    case OP_EQUAL: case OP_NOT_EQUAL: return "Equal";
    default: return NULL;
    }
}

static const char *cast(ox_ctx *c, const char *x, ir_dtype t) {
    Onnx__NodeProto *n = ox_node(&c->b, "Cast", 1, &x, NULL);
    ox_attr_int(&c->b, n, "to", ox_dtype(t));
    return n->output[0];
}

/* gelu(x) = x (1 + erf(x / sqrt 2)) / 2, exact (runtime/ops_math.h) */
static const char *gelu(ox_ctx *c, const char *x) {
    const char *e = ox_op1(&c->b, "Erf", ox_op2(&c->b, "Mul", x, ox_scalar(&c->b, IR_F32, 0.70710678118654752440)));
    const char *h = ox_op2(&c->b, "Add", e, ox_scalar(&c->b, IR_F32, 1.0));
    return ox_op2(&c->b, "Mul", ox_op2(&c->b, "Mul", x, h), ox_scalar(&c->b, IR_F32, 0.5));
}

/* op(a[, b]) of dtype t (the inputs' dtype), alpha its float attribute; NULL when op has no mapping */
static const char *elementwise(ox_ctx *c, ir_op op, double alpha, ir_dtype t, const char *a, const char *b) {
    const char *name;
    if ((name = unary_name(op))) return ox_op1(&c->b, name, a);
    if ((name = binary_name(op))) return ox_op2(&c->b, name, a, b);
    if ((name = compare_name(op))) {
        const char *r = ox_op2(&c->b, name, a, b);
        if (op == OP_NOT_EQUAL) r = ox_op1(&c->b, "Not", r);
        return cast(c, r, t);
    }
    Onnx__NodeProto *n;
    switch (op) {
    case OP_GELU: return gelu(c, a);
    case OP_ELU:
    case OP_LEAKY_RELU:
        n = ox_node(&c->b, op == OP_ELU ? "Elu" : "LeakyRelu", 1, &a, NULL);
        ox_attr_float(&c->b, n, "alpha", alpha);
        return n->output[0];
    case OP_SELU: /* Keras' constants (runtime/ops_math.h) */
        n = ox_node(&c->b, "Selu", 1, &a, NULL);
        ox_attr_float(&c->b, n, "alpha", 1.67326324235437728481);
        ox_attr_float(&c->b, n, "gamma", 1.05070098735548049342);
        return n->output[0];
    default: return NULL;
    }
}

/* the instructions of a fused node, register by register (ir/ir.h) */
static const char *fused(ox_ctx *c, const ir_node *n) {
    const char *reg[IR_FUSED_MAX_INPUTS + IR_FUSED_MAX_INSTRS];
    for (int k = 0; k < n->n_in; k++) reg[k] = in(c, n, k);
    for (int j = 0; j < n->fused->n; j++) {
        const ir_finstr *f = &n->fused->ins[j];
        reg[n->n_in + j] = elementwise(c, f->op, f->alpha, IR_F32, reg[f->a], f->b >= 0 ? reg[f->b] : NULL);
        if (!reg[n->n_in + j]) return NULL;
    }
    return reg[n->n_in + n->fused->n - 1];
}

static const char *activation(ox_ctx *c, const char *x, int64_t act) {
    switch (act) {
    case EPI_RELU: return ox_op1(&c->b, "Relu", x);
    case EPI_TANH: return ox_op1(&c->b, "Tanh", x);
    case EPI_SIGMOID: return ox_op1(&c->b, "Sigmoid", x);
    default: return x;
    }
}

/* ---- dense algebra, NHWC images ---- */

/* op(a) x op(b), numpy-batched as ONNX MatMul */
static const char *matmul(ox_ctx *c, const ir_node *n) {
    const char *a = in(c, n, 0), *b = in(c, n, 1);
    if (n->iattr[0]) a = swap_last(c, a, in_node(c, n, 0)->shape.rank);
    if (n->iattr[1]) b = swap_last(c, b, in_node(c, n, 1)->shape.rank);
    return ox_op2(&c->b, "MatMul", a, b);
}

/* act(op(a) x op(b) + bias [+ residual]) */
static const char *matmul_epilogue(ox_ctx *c, const ir_node *n) {
    const char *y = ox_op2(&c->b, "Add", matmul(c, n), in(c, n, 2));
    if (n->n_in > 3) y = ox_op2(&c->b, "Add", y, in(c, n, 3));
    return activation(c, y, n->iattr[2]);
}

static void window_attrs(ox_ctx *c, Onnx__NodeProto *o, const int64_t *kernel, const int64_t *stride, const int64_t *pad) {
    ox_attr_ints(&c->b, o, "kernel_shape", 2, kernel);
    ox_attr_ints(&c->b, o, "strides", 2, stride);
    ox_attr_ints(&c->b, o, "pads", 4, pad); /* t, l, b, r = h begin, w begin, h end, w end */
}

/* conv2d (bias NULL), conv2d_epilogue's convolution (its bias) and conv2d_transpose, NHWC in and out */
static const char *conv(ox_ctx *c, const ir_node *n, const char *bias) {
    const ir_shape *ws = &in_node(c, n, 1)->shape;
    ir_conv g = ir_conv_of(n, ws);
    bool transposed = n->op == OP_CONV2D_TRANSPOSE;
    const char *args[3] = {transpose(c, in(c, n, 0), 4, TO_NCHW), transpose(c, in(c, n, 1), 4, HWIO_TO_OIHW), bias};
    Onnx__NodeProto *o = ox_node(&c->b, transposed ? "ConvTranspose" : "Conv", bias ? 3 : 2, args, NULL);
    window_attrs(c, o, (int64_t[]){ws->dim[0], ws->dim[1]}, g.stride, g.pad);
    ox_attr_ints(&c->b, o, "dilations", 2, g.dilation);
    if (!transposed) ox_attr_int(&c->b, o, "group", g.groups);
    return transpose(c, o->output[0], 4, TO_NHWC);
}

/* act(conv(x, w) + bias [+ residual]) */
static const char *conv_epilogue(ox_ctx *c, const ir_node *n) {
    const char *y = conv(c, n, in(c, n, 2));
    if (n->n_in > 3) y = ox_op2(&c->b, "Add", y, in(c, n, 3));
    return activation(c, y, n->iattr[9]);
}

/* issue 14: conv2d_bn_epilogue as eval and predict run it, act((conv(x, w) - mean)
 * * scale + beta [+ residual]): Conv, Sub, Mul, Add [, Add] [, activation] */
static const char *conv_bn_epilogue(ox_ctx *c, const ir_node *n) {
    const char *y = ox_op2(&c->b, "Sub", conv(c, n, NULL), in(c, n, 3));
    y = ox_op2(&c->b, "Add", ox_op2(&c->b, "Mul", y, in(c, n, 4)), in(c, n, 5));
    if (n->n_in > 6) y = ox_op2(&c->b, "Add", y, in(c, n, 6));
    return activation(c, y, n->iattr[9]);
}

/* issue 14 (seed CNN speed): conv2d_relu_pool2, max_pool2d(relu(conv(x, w) + bias)) with
 * 2x2 windows of stride 2: Conv (its bias), Relu, MaxPool, NCHW between them */
static const char *conv_relu_pool2(ox_ctx *c, const ir_node *n) {
    const ir_shape *ws = &in_node(c, n, 1)->shape;
    ir_conv g = ir_conv_of(n, ws);
    const char *args[3] = {transpose(c, in(c, n, 0), 4, TO_NCHW), transpose(c, in(c, n, 1), 4, HWIO_TO_OIHW),
                           in(c, n, 2)};
    Onnx__NodeProto *o = ox_node(&c->b, "Conv", 3, args, NULL);
    window_attrs(c, o, (int64_t[]){ws->dim[0], ws->dim[1]}, g.stride, g.pad);
    ox_attr_ints(&c->b, o, "dilations", 2, g.dilation);
    ox_attr_int(&c->b, o, "group", g.groups);
    const char *y = ox_node(&c->b, "Relu", 1, (const char *[]){o->output[0]}, NULL)->output[0];
    Onnx__NodeProto *p = ox_node(&c->b, "MaxPool", 1, &y, NULL);
    window_attrs(c, p, (int64_t[]){2, 2}, (int64_t[]){2, 2}, (int64_t[]){0, 0, 0, 0});
    return transpose(c, p->output[0], 4, TO_NHWC);
}

/* max_pool2d, avg_pool2d (padding excluded from the average) */
static const char *pool(ox_ctx *c, const ir_node *n) {
    const char *x = transpose(c, in(c, n, 0), 4, TO_NCHW);
    Onnx__NodeProto *o = ox_node(&c->b, n->op == OP_MAX_POOL2D ? "MaxPool" : "AveragePool", 1, &x, NULL);
    window_attrs(c, o, n->iattr, n->iattr + 2, n->iattr + 4);
    if (n->op == OP_AVG_POOL2D) ox_attr_int(&c->b, o, "count_include_pad", 0);
    return transpose(c, o->output[0], 4, TO_NHWC);
}

/* ---- shapes and reductions ---- */

static const char *reshape(ox_ctx *c, const char *x, const ir_shape *s) {
    Onnx__NodeProto *o = ox_node(&c->b, "Reshape", 2, (const char *[]){x, ox_ints(&c->b, s->rank, s->dim)}, NULL);
    ox_attr_int(&c->b, o, "allowzero", 1); /* a 0 is an empty axis, not "copy the input's" */
    return o->output[0];
}

/* elements [offset, offset + numel) of x as the node's shape */
static const char *view(ox_ctx *c, const ir_node *n) {
    ir_shape flat = {1, {-1}};
    const char *x = reshape(c, in(c, n, 0), &flat);
    int64_t begin = n->iattr[0], end = begin + ir_shape_numel(&n->shape);
    const char *args[] = {x, ox_ints(&c->b, 1, &begin), ox_ints(&c->b, 1, &end)};
    return reshape(c, ox_node(&c->b, "Slice", 3, args, NULL)->output[0], &n->shape);
}

/* reduce_*: axes a bitmask; ReduceSum takes them as an input, the others (opset 17) as an attribute */
static const char *reduce(ox_ctx *c, const ir_node *n) {
    static const char *const names[] = {[OP_REDUCE_SUM] = "ReduceSum", [OP_REDUCE_MEAN] = "ReduceMean",
                                        [OP_REDUCE_MAX] = "ReduceMax", [OP_REDUCE_MIN] = "ReduceMin"};
    int64_t axes[IR_MAX_RANK];
    int count = 0;
    for (int d = 0; d < IR_MAX_RANK; d++)
        if (n->iattr[0] >> d & 1) axes[count++] = d;
    if (!count) return in(c, n, 0); /* no axis: the input itself */
    bool sum = n->op == OP_REDUCE_SUM;
    const char *args[] = {in(c, n, 0), sum ? ox_ints(&c->b, count, axes) : NULL};
    Onnx__NodeProto *o = ox_node(&c->b, names[n->op], sum ? 2 : 1, args, NULL);
    if (!sum) ox_attr_ints(&c->b, o, "axes", count, axes);
    ox_attr_int(&c->b, o, "keepdims", n->iattr[1] != 0);
    return o->output[0];
}

static const char *softmax(ox_ctx *c, const ir_node *n) {
    Onnx__NodeProto *o = ox_node(&c->b, n->op == OP_SOFTMAX ? "Softmax" : "LogSoftmax", 1,
                                 (const char *[]){in(c, n, 0)}, NULL);
    ox_attr_int(&c->b, o, "axis", -1 - n->iattr[0]);
    return o->output[0];
}

static const char *concat(ox_ctx *c, const ir_node *n) {
    const char **args = ox_alloc(&c->b, (size_t)n->n_in * sizeof *args);
    for (int k = 0; k < n->n_in; k++) args[k] = in(c, n, k);
    Onnx__NodeProto *o = ox_node(&c->b, "Concat", n->n_in, args, NULL);
    ox_attr_int(&c->b, o, "axis", n->iattr[0]);
    return o->output[0];
}

/* out[i..] = x[i.. + begin] */
static const char *slice(ox_ctx *c, const ir_node *n) {
    int r = n->shape.rank;
    int64_t begin[IR_MAX_RANK], end[IR_MAX_RANK], axes[IR_MAX_RANK];
    for (int d = 0; d < r; d++) begin[d] = n->iattr[d], end[d] = n->iattr[d] + n->shape.dim[d], axes[d] = d;
    const char *args[] = {in(c, n, 0), ox_ints(&c->b, r, begin), ox_ints(&c->b, r, end), ox_ints(&c->b, r, axes)};
    return ox_node(&c->b, "Slice", 4, args, NULL)->output[0];
}

/* zeros of the node's shape, x at [before, before + x) */
static const char *pad(ox_ctx *c, const ir_node *n) {
    int r = n->shape.rank;
    int64_t pads[2 * IR_MAX_RANK];
    for (int d = 0; d < r; d++)
        pads[d] = n->iattr[d], pads[r + d] = n->shape.dim[d] - in_node(c, n, 0)->shape.dim[d] - n->iattr[d];
    return ox_op2(&c->b, "Pad", in(c, n, 0), ox_ints(&c->b, 2 * r, pads));
}

static const char *permute(ox_ctx *c, const ir_node *n) {
    int64_t perm[IR_MAX_RANK];
    for (int d = 0; d < n->shape.rank; d++) perm[d] = n->iattr[0] >> 4 * d & 15;
    return transpose(c, in(c, n, 0), n->shape.rank, perm);
}

/* every element = value: a scalar expanded to the shape */
static const char *constant(ox_ctx *c, const ir_node *n) {
    const char *v = ox_scalar(&c->b, n->dtype, n->fattr[0]);
    return n->shape.rank ? ox_op2(&c->b, "Expand", v, ox_ints(&c->b, n->shape.rank, n->shape.dim)) : v;
}

/* one_hot(ids) = (ids[..., None] == range(depth)) as f32: an id outside [0, depth) gives a zero row, as mgc's */
static const char *one_hot(ox_ctx *c, const ir_node *n) {
    int64_t depth = n->iattr[0], last = -1;
    int32_t *range = ox_alloc(&c->b, (size_t)depth * sizeof *range);
    for (int64_t k = 0; k < depth; k++) range[k] = (int32_t)k;
    const char *r = ox_init(&c->b, NULL, ox_dtype(IR_I32), 1, &depth, range, (size_t)depth * sizeof *range);
    const char *ids = ox_op2(&c->b, "Unsqueeze", in(c, n, 0), ox_ints(&c->b, 1, &last));
    return cast(c, ox_op2(&c->b, "Equal", ids, r), n->dtype);
}

/* issue 14 (char_gpt speed): causal_softmax as Keras' masked softmax:
 * Softmax(x * scale + mask) over the last axis, mask [r, c] an initializer of
 * 0 where j <= i and -1e9 above (whose exp is 0, as mgc's masked weights); x
 * its input or causal_matmul_softmax's product */
static const char *causal_softmax(ox_ctx *c, const ir_node *n, const char *in_x) {
    int64_t dims[2] = {n->shape.dim[n->shape.rank - 2], n->shape.dim[n->shape.rank - 1]};
    float *mask = ox_alloc(&c->b, (size_t)(dims[0] * dims[1]) * sizeof *mask);
    for (int64_t i = 0; i < dims[0]; i++)
        for (int64_t j = 0; j < dims[1]; j++) mask[i * dims[1] + j] = j <= i ? 0.0f : -1e9f;
    const char *m = ox_init(&c->b, NULL, ox_dtype(IR_F32), 2, dims, mask, (size_t)(dims[0] * dims[1]) * sizeof *mask);
    const char *x = ox_op2(&c->b, "Mul", in_x, ox_scalar(&c->b, IR_F32, n->fattr[0]));
    Onnx__NodeProto *o = ox_node(&c->b, "Softmax", 1, (const char *[]){ox_op2(&c->b, "Add", x, m)}, NULL);
    ox_attr_int(&c->b, o, "axis", -1);
    return o->output[0];
}

/* issue 14 (char_gpt speed): causal_matmul as MatMul with Trilu (opset 14)
 * on its triangular matrix: the output (tri 0), op(a) (1) or op(b) (2);
 * upper 0 keeps j <= i (Trilu's lower), 1 keeps j >= i */
static const char *trilu(ox_ctx *c, const char *x, int64_t upper) {
    Onnx__NodeProto *o = ox_node(&c->b, "Trilu", 1, (const char *[]){x}, NULL);
    ox_attr_int(&c->b, o, "upper", upper);
    return o->output[0];
}
static const char *causal_matmul(ox_ctx *c, const ir_node *n) {
    const char *a = in(c, n, 0), *b = in(c, n, 1);
    if (n->iattr[0]) a = swap_last(c, a, in_node(c, n, 0)->shape.rank);
    if (n->iattr[1]) b = swap_last(c, b, in_node(c, n, 1)->shape.rank);
    if (n->iattr[2] == 1) a = trilu(c, a, n->iattr[3]);
    if (n->iattr[2] == 2) b = trilu(c, b, n->iattr[3]);
    const char *y = ox_op2(&c->b, "MatMul", a, b);
    return n->iattr[2] == 0 ? trilu(c, y, n->iattr[3]) : y;
}

/* issue 14 (char_gpt speed): normalize as LayerNormalization (opset 17) over
 * the last axis with scale 1 and bias 0 */
static const char *normalize(ox_ctx *c, const ir_node *n) {
    int64_t dim = n->shape.dim[n->shape.rank - 1];
    float *ones = ox_alloc(&c->b, (size_t)dim * sizeof *ones), *zeros = ox_alloc(&c->b, (size_t)dim * sizeof *zeros);
    for (int64_t j = 0; j < dim; j++) ones[j] = 1.0f, zeros[j] = 0.0f;
    const char *args[] = {in(c, n, 0), ox_init(&c->b, NULL, ox_dtype(IR_F32), 1, &dim, ones, (size_t)dim * sizeof *ones),
                          ox_init(&c->b, NULL, ox_dtype(IR_F32), 1, &dim, zeros, (size_t)dim * sizeof *zeros)};
    Onnx__NodeProto *o = ox_node(&c->b, "LayerNormalization", 3, args, NULL);
    ox_attr_int(&c->b, o, "axis", -1);
    ox_attr_float(&c->b, o, "epsilon", n->fattr[0]);
    return o->output[0];
}

/* ---- sources ---- */

/* a graph input of the shape replica 0 sees (the shard's) */
static const char *input(ox_ctx *c, int i, const ir_shape *s) {
    const ir_node *x = &c->m->g.nodes[i];
    if (!c->declared[i]) ox_input(&c->b, x->name, x->dtype, s);
    c->declared[i] = true;
    return x->name;
}

/* ---- the walk ---- */

/* The tensor of node i, its inputs emitted; NULL when its op has no mapping. */
static const char *emit(ox_ctx *c, int i) {
    const ir_node *n = &c->m->g.nodes[i];
    switch (n->op) {
    case OP_INPUT: return n->name; /* declared by its shard (or at the end) */
    case OP_SHARD:
        if (in_node(c, n, 0)->op == OP_INPUT) return input(c, n->in[0], &n->shape);
        return in(c, n, 0);
    case OP_DROPOUT: return in(c, n, 0);      /* identity outside training */
    case OP_IN_TRAINING: return in(c, n, 1);  /* b in eval and predict */
    case OP_CONST: return constant(c, n);
    case OP_CAST: return cast(c, in(c, n, 0), n->dtype);
    case OP_FUSED: return fused(c, n);
    case OP_MATMUL: return matmul(c, n);
    case OP_MATMUL_EPILOGUE: return matmul_epilogue(c, n);
    case OP_CONV2D: case OP_CONV2D_TRANSPOSE: return conv(c, n, NULL);
    case OP_CONV2D_EPILOGUE: return conv_epilogue(c, n);
    case OP_CONV2D_BN_EPILOGUE: return conv_bn_epilogue(c, n); /* issue 14 */
    case OP_MAX_POOL2D: case OP_AVG_POOL2D: return pool(c, n);
    case OP_CONV2D_RELU_POOL2: return conv_relu_pool2(c, n); /* issue 14: seed CNN speed */
    case OP_RESHAPE: return reshape(c, in(c, n, 0), &n->shape);
    case OP_VIEW: return view(c, n);
    case OP_REDUCE_SUM: case OP_REDUCE_MEAN: case OP_REDUCE_MAX: case OP_REDUCE_MIN: return reduce(c, n);
    case OP_BROADCAST_TO: return ox_op2(&c->b, "Expand", in(c, n, 0), ox_ints(&c->b, n->shape.rank, n->shape.dim));
    case OP_SOFTMAX: case OP_LOG_SOFTMAX: return softmax(c, n);
    case OP_CONCAT: return concat(c, n);
    case OP_SLICE: return slice(c, n);
    case OP_PAD: return pad(c, n);
    case OP_TRANSPOSE: return permute(c, n);
    case OP_GATHER: return ox_op2(&c->b, "Gather", in(c, n, 0), in(c, n, 1));
    case OP_ONE_HOT: return one_hot(c, n);
    case OP_CAUSAL_SOFTMAX: return causal_softmax(c, n, in(c, n, 0)); /* issue 14: char_gpt speed */
    case OP_CAUSAL_MATMUL_SOFTMAX: return causal_softmax(c, n, matmul(c, n)); /* issue 14: the mask drops the upper half */
    case OP_CAUSAL_MATMUL: return causal_matmul(c, n); /* issue 14: attention's causal GEMMs */
    case OP_NORMALIZE: return normalize(c, n);
    case OP_SCALE_SHIFT: /* issue 14, batch norm: (x - mean) * scale + beta (the statistics are training-only) */
        return ox_op2(&c->b, "Add", ox_op2(&c->b, "Mul", ox_op2(&c->b, "Sub", in(c, n, 0), in(c, n, 1)), in(c, n, 2)),
                      in(c, n, 3));
    default: break;
    }
    if (ir_ops[n->op].flags & OPF_ELEMENTWISE) {
        const ir_node *a = in_node(c, n, 0);
        return elementwise(c, n->op, n->fattr[0], a->dtype, in(c, n, 0), n->n_in > 1 ? in(c, n, 1) : NULL);
    }
    return NULL;
}

/* a variable as an initializer named as the variable, with its value */
static bool variable(ox_ctx *c, int i, onnx_read_fn read, void *ctx, char *err, size_t cap) {
    const ir_node *n = &c->m->g.nodes[i];
    size_t bytes = (size_t)ir_node_bytes(n);
    void *data = malloc(bytes ? bytes : 1);
    if (!data) {
        snprintf(err, cap, "out of memory for variable '%s'", n->name);
        return false;
    }
    bool ok = read(ctx, i, data, err, cap);
    if (ok) c->names[i] = ox_init(&c->b, n->name, ox_dtype(n->dtype), n->shape.rank, n->shape.dim, data, bytes);
    free(data);
    return ok;
}

/* marks what the outputs read, back to the sources (node order is topological) */
static bool *needed(const ir_module *m) {
    bool *need = calloc((size_t)m->g.n + 1, sizeof *need);
    if (!need) return NULL;
    for (int k = 0; k < m->n_outputs; k++) need[m->outputs[k].node] = true;
    for (int i = m->g.n - 1; i >= 0; i--) /* what predict (program 2) reads: in_training(a, b) b only, */
        if (need[i])                       /* conv2d_bn_epilogue its x and w, not its conv (issue 14) */
            for (int k = 0; k < m->g.nodes[i].n_in; k++)
                if (ir_reads_input(&m->g.nodes[i], k, 2)) need[m->g.nodes[i].in[k]] = true;
    return need;
}

static onnx_status unmapped(const ir_module *m, int i, char *err, size_t cap) {
    const ir_node *n = &m->g.nodes[i];
    snprintf(err, cap, "model '%s': op '%s' (%%%d at %s:%d:%d) has no ONNX mapping", m->model_name,
             ir_ops[n->op].name, i, n->loc.file ? n->loc.file : "?", n->loc.line, n->loc.col);
    return ONNX_UNSUPPORTED;
}

/* every needed node in graph order, then the outputs */
static onnx_status build(ox_ctx *c, const bool *need, onnx_read_fn read, void *ctx, char *err, size_t cap) {
    const ir_module *m = c->m;
    for (int i = 0; i < m->g.n; i++) {
        if (!need[i]) continue;
        const ir_node *n = &m->g.nodes[i];
        if (ir_ops[n->op].flags & OPF_VARIABLE) {
            if (!variable(c, i, read, ctx, err, cap)) return ONNX_READ;
        } else if (!(c->names[i] = emit(c, i))) {
            return unmapped(m, i, err, cap);
        }
    }
    for (int i = 0; i < m->g.n; i++) /* an input read other than through a shard */
        if (need[i] && m->g.nodes[i].op == OP_INPUT && !c->declared[i]) {
            bool direct = false;
            for (int j = i + 1; j < m->g.n && !direct; j++)
                for (int k = 0; need[j] && m->g.nodes[j].op != OP_SHARD && k < m->g.nodes[j].n_in; k++)
                    direct |= m->g.nodes[j].in[k] == i;
            if (direct) input(c, i, &m->g.nodes[i].shape);
        }
    for (int k = 0; k < m->n_outputs; k++) {
        const ir_node *o = &m->g.nodes[m->outputs[k].node];
        ox_node(&c->b, "Identity", 1, &c->names[m->outputs[k].node], m->outputs[k].name);
        ox_output(&c->b, m->outputs[k].name, o->dtype, &o->shape);
    }
    return ONNX_OK;
}

onnx_status onnx_export(const ir_module *m, const char *path, onnx_read_fn read, void *ctx, char *err, size_t cap) {
    if (m->n_outputs == 0) {
        snprintf(err, cap, "model '%s' has no output to export", m->model_name);
        return ONNX_UNSUPPORTED;
    }
    if (ir_check_output(path, err, cap)) return ONNX_IO; /* before any work */
    ox_ctx c = {.m = m};
    c.names = calloc((size_t)m->g.n + 1, sizeof *c.names);
    c.declared = calloc((size_t)m->g.n + 1, sizeof *c.declared);
    bool *need = needed(m);
    onnx_status st = c.names && c.declared && need ? build(&c, need, read, ctx, err, cap) : ONNX_READ;
    if (!(c.names && c.declared && need)) snprintf(err, cap, "out of memory");
    if (st == ONNX_OK) {
        const char *doc = ox_str(&c.b, "model '%s' exported by mgc from the predict graph of one replica (batch %lld)",
                                 m->model_name, (long long)m->batch_per_replica);
        if (!ox_write(&c.b, m->model_name, doc, path, err, cap)) st = ONNX_IO;
    }
    ox_free(&c.b);
    free(c.names);
    free(c.declared);
    free(need);
    return st;
}
