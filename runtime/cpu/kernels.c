/* kernels.c - the CPU kernel table: dispatch by op, GEMM, copies and threads. */
#include <cblas.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kernels_impl.h"

static int n_threads = 1;

int cpu_kerr(const rt_kernel_args *k, char *err, size_t cap, const char *fmt, ...) {
    int n = snprintf(err, cap, "op '%s': ", ir_ops[k->node->op].name);
    if (n >= 0 && (size_t)n < cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + n, cap - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

void cpu_kernels_set_threads(int threads) {
    n_threads = threads < 1 ? 1 : threads;
    openblas_set_num_threads(n_threads);
}

int cpu_kernels_threads(void) { return n_threads; }

/* reshape: output shares input 0's memory; copy only when the plan gave it its own */
static int k_reshape(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    if (k->out != k->in[0]) memmove(k->out, k->in[0], (size_t)ir_node_bytes(k->node));
    return 0;
}

/* view: elements [offset, offset + numel) of input 0 */
static int k_view(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    const char *src = (const char *)k->in[0] + k->node->iattr[0] * (int64_t)ir_dtype_size(k->node->dtype);
    if (k->out != src) memmove(k->out, src, (size_t)ir_node_bytes(k->node));
    return 0;
}

/* shard: rows [index*n/count, (index+1)*n/count) of input 0 */
static int k_shard(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    const ir_node *x = k->in_nodes[0];
    int64_t rows = x->shape.dim[0], first = k->node->iattr[0] * rows / k->node->iattr[1];
    int64_t row_bytes = rows ? ir_node_bytes(x) / rows : 0;
    memcpy(k->out, (const char *)k->in[0] + first * row_bytes, (size_t)ir_node_bytes(k->node));
    return 0;
}

/* all_reduce, before the collective: pack the gradients into the bucket (a
 * no-op for those the memory plan already placed there) */
static int k_pack(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    char *dst = k->out;
    for (int i = 0; i < k->node->n_in; i++) {
        size_t bytes = (size_t)ir_node_bytes(k->in_nodes[i]);
        if (dst != k->in[i]) memcpy(dst, k->in[i], bytes);
        dst += bytes;
    }
    return 0;
}

/* assign: the state (the output's bytes) takes the value */
static int k_assign(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    memcpy(k->out, k->in[1], (size_t)ir_node_bytes(k->node));
    return 0;
}

/* in_training: input 0 in the train program, input 1 in eval and predict */
static int k_in_training(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    memcpy(k->out, k->in[*k->training ? 0 : 1], (size_t)ir_node_bytes(k->node));
    return 0;
}

static const cpu_kernel_fn kernels[OP_COUNT] = {
    [OP_ADD] = cpu_k_binary, [OP_SUB] = cpu_k_binary, [OP_MUL] = cpu_k_binary, [OP_DIV] = cpu_k_binary,
    [OP_NEG] = cpu_k_unary, [OP_EXP] = cpu_k_unary, [OP_LOG] = cpu_k_unary, [OP_SQRT] = cpu_k_unary,
    [OP_RELU] = cpu_k_unary, [OP_SIGMOID] = cpu_k_unary, [OP_TANH] = cpu_k_unary,
    [OP_RELU_GRAD] = cpu_k_unary_grad, [OP_SIGMOID_GRAD] = cpu_k_unary_grad, [OP_TANH_GRAD] = cpu_k_unary_grad,
    [OP_CAST] = cpu_k_cast,
    [OP_LESS] = cpu_k_binary, [OP_LESS_EQUAL] = cpu_k_binary, [OP_GREATER] = cpu_k_binary,
    [OP_GREATER_EQUAL] = cpu_k_binary, [OP_EQUAL] = cpu_k_binary, [OP_NOT_EQUAL] = cpu_k_binary,
    [OP_MATMUL] = cpu_k_matmul, /* matmul.c */
    [OP_CONV2D] = cpu_k_conv2d,
    [OP_CONV2D_GRAD_INPUT] = cpu_k_conv2d_grad_input,
    [OP_CONV2D_GRAD_FILTER] = cpu_k_conv2d_grad_filter,
    [OP_CONV2D_TRANSPOSE] = cpu_k_conv2d_transpose,
    [OP_MAX_POOL2D] = cpu_k_max_pool2d /* issue 14: pool.c */, [OP_AVG_POOL2D] = cpu_k_pool2d,
    [OP_MAX_POOL2D_GRAD] = cpu_k_max_pool_grad_2x2 /* issue 14: pool.c, epilogue.c */, [OP_AVG_POOL2D_GRAD] = cpu_k_pool2d_grad,
    [OP_RESHAPE] = k_reshape, [OP_VIEW] = k_view, [OP_SHARD] = k_shard,
    [OP_REDUCE_SUM] = cpu_k_reduce, [OP_REDUCE_MEAN] = cpu_k_reduce,
    [OP_BROADCAST_TO] = cpu_k_broadcast_to,
    [OP_SOFTMAX] = cpu_k_softmax, [OP_SOFTMAX_GRAD] = cpu_k_softmax,
    [OP_SPARSE_XENT] = cpu_k_sparse_xent, [OP_SPARSE_XENT_GRAD] = cpu_k_sparse_xent_grad,
    [OP_ARGMAX_MATCH] = cpu_k_argmax_match,
    [OP_DROPOUT] = cpu_k_dropout, [OP_DROPOUT_GRAD] = cpu_k_dropout,
    [OP_SGD_UPDATE] = cpu_k_sgd, [OP_ADAM_UPDATE] = cpu_k_adam, [OP_RMSPROP_UPDATE] = cpu_k_rmsprop,
    /* issue 12: optimizers and clipping */
    [OP_ADAGRAD_UPDATE] = cpu_k_adagrad, [OP_NADAM_UPDATE] = cpu_k_nadam, [OP_LAMB_UPDATE] = cpu_k_lamb,
    [OP_SQ_NORM] = cpu_k_sq_norm,
    [OP_ALL_REDUCE] = k_pack,
    [OP_ASSIGN] = k_assign, [OP_IN_TRAINING] = k_in_training,
    /* issue 12: shape ops, reductions, normalization (shape.c, reduce.c) */
    [OP_CONCAT] = cpu_k_concat, [OP_SLICE] = cpu_k_slice, [OP_PAD] = cpu_k_pad, [OP_TRANSPOSE] = cpu_k_transpose,
    [OP_REDUCE_MAX] = cpu_k_reduce_extreme, [OP_REDUCE_MIN] = cpu_k_reduce_extreme,
    [OP_LOG_SOFTMAX] = cpu_k_softmax,
    /* issue 12: activations, elementwise math, in_top_k */
    [OP_ABS] = cpu_k_activation, [OP_ERF] = cpu_k_activation, [OP_GELU] = cpu_k_activation,
    [OP_SOFTPLUS] = cpu_k_activation, [OP_SELU] = cpu_k_activation, [OP_ELU] = cpu_k_activation,
    [OP_LEAKY_RELU] = cpu_k_activation,
    [OP_ABS_GRAD] = cpu_k_activation_grad, [OP_ERF_GRAD] = cpu_k_activation_grad,
    [OP_GELU_GRAD] = cpu_k_activation_grad, [OP_SELU_GRAD] = cpu_k_activation_grad,
    [OP_ELU_GRAD] = cpu_k_activation_grad, [OP_LEAKY_RELU_GRAD] = cpu_k_activation_grad,
    [OP_MAXIMUM] = cpu_k_binary, [OP_MINIMUM] = cpu_k_binary, [OP_POW] = cpu_k_binary,
    [OP_IN_TOP_K] = cpu_k_in_top_k,
    /* issue 13: sequence models (matmul.c, embed.c) */
    [OP_GATHER] = cpu_k_gather, [OP_SCATTER_ADD] = cpu_k_scatter_add,
    /* issue 13: one_hot (onehot.c) */
    [OP_ONE_HOT] = cpu_k_one_hot,
    [OP_ALL_GATHER] = cpu_k_all_gather, /* issue 13: sparse gradient exchange (embed.c) */
    /* issue 14: elementwise fusion (fused.c) */
    [OP_FUSED] = cpu_k_fused,
    /* issue 14: epilogues and fused backward (dnnl.c, epilogue.c) */
    [OP_CONV2D_EPILOGUE] = cpu_k_conv2d_epilogue, [OP_MATMUL_EPILOGUE] = cpu_k_matmul,
    [OP_MAX_POOL2D_RELU_GRAD] = cpu_k_max_pool_grad_2x2, /* issue 14: pool.c */
    /* issue 14: batch norm's scale/shift in the conv epilogue (bn_epilogue.c) */
    [OP_CONV2D_BN_EPILOGUE] = cpu_k_conv2d_bn_epilogue,
    /* issue 14: char_gpt speed (attention.c) */
    [OP_CAUSAL_SOFTMAX] = cpu_k_causal_softmax, [OP_CAUSAL_SOFTMAX_GRAD] = cpu_k_causal_softmax,
    /* issue 14: attention's dropout in causal_softmax */
    [OP_CAUSAL_SOFTMAX_DROPOUT_GRAD] = cpu_k_causal_softmax,
    /* issue 14: the scores and their softmax (or its gradient) in one pass */
    [OP_CAUSAL_MATMUL_SOFTMAX] = cpu_k_causal_matmul_softmax, [OP_CAUSAL_MATMUL_SOFTMAX_GRAD] = cpu_k_causal_matmul_softmax,
    /* issue 14: attention's causal GEMMs (causal_matmul.c) */
    [OP_CAUSAL_MATMUL] = cpu_k_causal_matmul,
    [OP_NORMALIZE] = cpu_k_normalize, [OP_NORMALIZE_GRAD] = cpu_k_normalize, /* normalize.c */
    /* issue 14: batch norm in training (batch_norm.c) */
    [OP_CHANNEL_MEAN] = cpu_k_batch_norm, [OP_CHANNEL_VAR] = cpu_k_batch_norm,
    [OP_SCALE_SHIFT] = cpu_k_batch_norm,
    /* issue 14: batch norm's backward reads dy once */
    [OP_CHANNEL_SUM_DOT] = cpu_k_batch_norm,
    /* issue 14 (seed CNN speed): the filter gradient through a 2x2 max-pool (conv_direct.c) */
    [OP_CONV2D_GRAD_FILTER_POOL2] = cpu_k_conv2d_grad_filter_pool2,
    /* issue 14 (seed CNN speed): the first convolution, relu and 2x2 max-pool in one pass (conv_pool.c) */
    [OP_CONV2D_RELU_POOL2] = cpu_k_conv2d_relu_pool2,
    [OP_CONV2D_RELU_POOL2_GRAD_FILTER] = cpu_k_conv2d_relu_pool2_grad_filter,
};

/* ops whose kernels read f32 data only (CAST, SHARD, RESHAPE, VIEW and the
 * label inputs of the softmax family are checked by their kernels) */
static bool f32_only(ir_op op) {
    return op != OP_CAST && op != OP_SHARD && op != OP_RESHAPE && op != OP_VIEW && op != OP_ALL_GATHER;
}

/* --check-numerics: the first non-finite element of an f32 output, named
 * with the op's source position so the user can find the expression. */
static int check_finite(const rt_kernel_args *k, char *err, size_t cap) {
    const float *y = k->out;
    int64_t n = ir_shape_numel(&k->node->shape);
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(y[i])) {
            const ir_loc *l = &k->node->loc;
            return cpu_kerr(k, err, cap, "produced %s (element %lld, replica %d, step %lld) at %s:%d:%d",
                            isnan(y[i]) ? "NaN" : y[i] < 0 ? "-Inf" : "Inf", (long long)i, k->replica, (long long)*k->step,
                            l->file ? l->file : "?", l->line, l->col);
        }
    return 0;
}

bool cpu_kernel_supports(const ir_node *n, char *why, size_t cap) {
    if (!kernels[n->op]) return snprintf(why, cap, "no CPU kernel"), false;
    if (f32_only(n->op) && n->dtype != IR_F32)
        return snprintf(why, cap, "the CPU kernel takes f32, got %s", ir_dtype_name(n->dtype)), false;
    return true;
}

int cpu_kernel_run(const rt_kernel_args *k, char *err, size_t cap) {
    ir_op op = k->node->op;
    if (!kernels[op]) return cpu_kerr(k, err, cap, "has no CPU kernel");
    if (f32_only(op) && k->node->dtype != IR_F32)
        return cpu_kerr(k, err, cap, "the CPU kernel takes f32, got %s", ir_dtype_name(k->node->dtype));
    int rc = kernels[op](k, err, cap);
    /* all_gather's kernel fills only its own block; the collective brings the rest */
    if (!rc && k->check_numerics && *k->check_numerics && k->node->dtype == IR_F32 && op != OP_ALL_GATHER)
        rc = check_finite(k, err, cap);
    return rc;
}
