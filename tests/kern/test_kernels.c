/* test_kernels.c - every CPU kernel against a naive double-precision
 * reference on random inputs, one table row per case. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>

#include "../../runtime/ops_math.h"
#include "../grad/ref_eval.h" /* mm_at */
#include "harness.h"
#include "../../runtime/cpu/tune.h"

typedef struct tcase tcase;
typedef void (*ref_fn)(const one_op *t, double **in, double *out);

/* how inputs are filled */
typedef enum { R_SIGNED, R_POSITIVE, R_WIDE, R_LABELS, R_SMALL_INT, R_IDS_OUT, R_PIXELS } fill_kind; /* R_SMALL_INT: 0, 1 or 2 (ties) */
/* R_IDS_OUT (issue 13, one_hot): integers in [-2, 12), ids partly outside a depth of 10 or less */

struct tcase {
    const char *name;
    ir_op op;
    int n_in;
    const char *shape[8];
    ir_dtype dtype[8];         /* IR_F32 (0) unless given */
    fill_kind fill[8];
    int64_t iattr[IR_MAX_IATTR];
    double fattr[IR_MAX_FATTR];
    const char *given;         /* output shape for ops that carry it */
    ir_dtype out_dtype;
    ref_fn ref;
    int eval;                  /* issue 14: 1 runs it as eval and predict do (not training) */
};

/* ---- helpers over shapes ---- */

static const ir_shape *ishape(const one_op *t, int i) { return &t->in_nodes[i]->shape; }
static const ir_shape *oshape(const one_op *t) { return &t->m->g.nodes[t->node].shape; }
static const ir_node *onode(const one_op *t) { return &t->m->g.nodes[t->node]; }
static int64_t numel(const ir_shape *s) { return ir_shape_numel(s); }

/* flat index into s (numpy-broadcast against out) of out's flat index i */
static int64_t bidx(const ir_shape *out, const ir_shape *s, int64_t i) {
    int64_t r = 0, stride = 1;
    for (int d = out->rank - 1, e = s->rank - 1; d >= 0; d--, e--) {
        int64_t c = i % out->dim[d];
        i /= out->dim[d];
        if (e >= 0) {
            if (s->dim[e] != 1) r += c * stride;
            stride *= s->dim[e];
        }
    }
    return r;
}

#include "refs.h" /* the references */

#include "act_cases.h" /* issue 12: references and ACT_CASES */
#include "epilogue_cases.h" /* issue 14: fused ops against the unfused composition */
#include "bn_epilogue_cases.h" /* issue 14: batch norm's scale/shift in the conv epilogue */
#include "pool2_cases.h" /* issue 14 (seed CNN speed): the filter gradient through a 2x2 max-pool */
#include "relu_pool2_cases.h" /* issue 14 (seed CNN speed): the conv, relu and pool in one pass */
#include "attention_cases.h" /* issue 14 (char_gpt speed): causal_softmax references and ATTENTION_CASES */
#include "causal_matmul_cases.h" /* issue 14 (char_gpt speed): CAUSAL_MATMUL_CASES */
#include "batch_norm_cases.h" /* issue 14 (batch norm in training): BATCH_NORM_CASES */

/* ---- the table ---- */

#define POOL(kh, kw, sh, sw, pt, pl, pb, pr) .iattr = {kh, kw, sh, sw, pt, pl, pb, pr}
#define CONV(sh, sw, pt, pl, pb, pr) .iattr = {sh, sw, pt, pl, pb, pr}
#define CONVX(sh, sw, pt, pl, pb, pr, dh, dw, g) .iattr = {sh, sw, pt, pl, pb, pr, dh, dw, g}
#define LAB .dtype = {0, IR_I32, 0}, .fill = {R_WIDE, R_LABELS, 0}

static const tcase cases[] = {
    {"add same", OP_ADD, 2, {"3,4,5", "3,4,5"}, .ref = ref_elementwise},
    {"add bias row", OP_ADD, 2, {"7,10", "10"}, .ref = ref_elementwise},
    {"add both broadcast", OP_ADD, 2, {"4,1,5", "3,5"}, .ref = ref_elementwise},
    {"add column", OP_ADD, 2, {"6,1", "6,9"}, .ref = ref_elementwise},
    {"sub scalar", OP_SUB, 2, {"6,7", ""}, .ref = ref_elementwise},
    {"sub scalar left", OP_SUB, 2, {"1", "6,7"}, .ref = ref_elementwise},
    {"sub row minus full", OP_SUB, 2, {"10", "7,10"}, .ref = ref_elementwise},
    {"mul 4-d broadcast", OP_MUL, 2, {"2,3,1,4", "1,3,5,1"}, .ref = ref_elementwise},
    {"mul conv bias", OP_MUL, 2, {"2,5,6,8", "8"}, .ref = ref_elementwise},
    {"div broadcast", OP_DIV, 2, {"5,1", "5,8"}, .fill = {R_SIGNED, R_POSITIVE}, .ref = ref_elementwise},
    {"div scalar-scalar", OP_DIV, 2, {"1,1", "1"}, .fill = {R_SIGNED, R_POSITIVE}, .ref = ref_elementwise},
    {"neg", OP_NEG, 1, {"37"}, .ref = ref_elementwise},
    {"less broadcast", OP_LESS, 2, {"4,1,5", "3,5"}, .ref = ref_elementwise},
    {"less_equal scalar", OP_LESS_EQUAL, 2, {"6,7", ""}, .ref = ref_elementwise},
    {"greater row", OP_GREATER, 2, {"7,10", "10"}, .ref = ref_elementwise},
    {"greater_equal", OP_GREATER_EQUAL, 2, {"3,4,5", "3,4,5"}, .ref = ref_elementwise},
    {"equal ties", OP_EQUAL, 2, {"9,8", "8"}, .fill = {R_SMALL_INT, R_SMALL_INT}, .ref = ref_elementwise},
    {"not_equal ties", OP_NOT_EQUAL, 2, {"9,8", "9,8"}, .fill = {R_SMALL_INT, R_SMALL_INT}, .ref = ref_elementwise},
    {"exp", OP_EXP, 1, {"5,13"}, .ref = ref_elementwise},
    {"log", OP_LOG, 1, {"5,13"}, .fill = {R_POSITIVE}, .ref = ref_elementwise},
    {"sqrt", OP_SQRT, 1, {"5,13"}, .fill = {R_POSITIVE}, .ref = ref_elementwise},
    {"relu", OP_RELU, 1, {"4,33"}, .ref = ref_elementwise},
    {"sigmoid", OP_SIGMOID, 1, {"4,33"}, .fill = {R_WIDE}, .ref = ref_elementwise},
    {"tanh", OP_TANH, 1, {"4,33"}, .fill = {R_WIDE}, .ref = ref_elementwise},
    {"relu_grad", OP_RELU_GRAD, 2, {"3,41", "3,41"}, .ref = ref_elementwise},
    {"sigmoid_grad", OP_SIGMOID_GRAD, 2, {"3,41", "3,41"}, .ref = ref_elementwise},
    {"tanh_grad", OP_TANH_GRAD, 2, {"3,41", "3,41"}, .ref = ref_elementwise},
    {"cast f32->i32", OP_CAST, 1, {"3,17"}, .fill = {R_WIDE}, .out_dtype = IR_I32, .ref = ref_cast},
    {"cast i32->f32", OP_CAST, 1, {"3,17"}, .dtype = {IR_I32}, .fill = {R_LABELS}, .ref = ref_cast},
    {"cast u8->f32", OP_CAST, 1, {"2,28,28"}, .dtype = {IR_U8}, .fill = {R_LABELS}, .ref = ref_cast},
    {"cast f32->u8", OP_CAST, 1, {"40"}, .fill = {R_WIDE}, .out_dtype = IR_U8, .ref = ref_cast},
    {"matmul", OP_MATMUL, 2, {"5,7", "7,3"}, .ref = ref_matmul},
    {"matmul trans_a", OP_MATMUL, 2, {"7,5", "7,3"}, .iattr = {1, 0}, .ref = ref_matmul},
    {"matmul trans_b", OP_MATMUL, 2, {"5,7", "3,7"}, .iattr = {0, 1}, .ref = ref_matmul},
    {"matmul trans_ab", OP_MATMUL, 2, {"7,5", "3,7"}, .iattr = {1, 1}, .ref = ref_matmul},
    {"matmul dense", OP_MATMUL, 2, {"16,300", "300,33"}, .ref = ref_matmul},
    /* issue 13: batched matmul, batch axes broadcast, trans flags on the last two */
    {"matmul batched", OP_MATMUL, 2, {"3,5,7", "3,7,4"}, .ref = ref_matmul},
    {"matmul batched trans_ab", OP_MATMUL, 2, {"2,3,7,5", "2,3,4,7"}, .iattr = {1, 1}, .ref = ref_matmul},
    {"matmul bcast rank3 x rank2", OP_MATMUL, 2, {"4,5,7", "7,3"}, .ref = ref_matmul},
    {"matmul bcast rank2 x rank3 trans_b", OP_MATMUL, 2, {"5,7", "4,3,7"}, .iattr = {0, 1}, .ref = ref_matmul},
    {"matmul bcast both", OP_MATMUL, 2, {"2,1,5,7", "1,3,7,4"}, .ref = ref_matmul},
    {"matmul bcast 1-axes trans_a", OP_MATMUL, 2, {"3,1,7,5", "2,7,4"}, .iattr = {1, 0}, .ref = ref_matmul},
    /* issue 13: embedding lookup and its gradient (ids drawn from [0, classes): repeats) */
    {"gather", OP_GATHER, 2, {"10,6", "7"}, .dtype = {0, IR_I32}, .fill = {0, R_LABELS}, .ref = ref_gather},
    {"gather ids rank 3", OP_GATHER, 2, {"10,3", "2,3,4"}, .dtype = {0, IR_I32}, .fill = {0, R_LABELS}, .ref = ref_gather},
    {"scatter_add", OP_SCATTER_ADD, 2, {"40", "40,5"}, .dtype = {IR_I32, 0}, .fill = {R_LABELS, 0}, .given = "10,5",
     .ref = ref_scatter_add},
    {"scatter_add ids rank 2", OP_SCATTER_ADD, 2, {"3,4", "3,4,2"}, .dtype = {IR_I32, 0}, .fill = {R_LABELS, 0},
     .given = "6,2", .ref = ref_scatter_add},
    /* issue 13: one_hot, ids in [-2, 12): some outside [0, depth) give zero rows */
    {"one_hot", OP_ONE_HOT, 1, {"40"}, .dtype = {IR_I32}, .fill = {R_IDS_OUT}, .iattr = {10}, .ref = ref_one_hot},
    {"one_hot ids rank 2 depth 7", OP_ONE_HOT, 1, {"6,9"}, .dtype = {IR_I32}, .fill = {R_IDS_OUT}, .iattr = {7},
     .ref = ref_one_hot},
    {"one_hot ids rank 0 depth 1", OP_ONE_HOT, 1, {""}, .dtype = {IR_I32}, .fill = {R_SMALL_INT}, .iattr = {1},
     .ref = ref_one_hot},
    {"conv2d valid", OP_CONV2D, 2, {"2,9,8,3", "3,3,3,4"}, CONV(1, 1, 0, 0, 0, 0), .ref = ref_conv},
    {"conv2d stride 2 same", OP_CONV2D, 2, {"2,9,8,3", "3,3,3,5"}, CONV(2, 2, 1, 1, 1, 1), .ref = ref_conv},
    {"conv2d asymmetric", OP_CONV2D, 2, {"2,7,10,2", "2,3,2,5"}, CONV(2, 1, 0, 1, 1, 0), .ref = ref_conv},
    {"conv2d mnist", OP_CONV2D, 2, {"4,28,28,1", "3,3,1,32"}, CONV(1, 1, 0, 0, 0, 0), .ref = ref_conv},
    {"conv2d_grad_input valid", OP_CONV2D_GRAD_INPUT, 2, {"2,7,6,4", "3,3,3,4"}, CONV(1, 1, 0, 0, 0, 0),
     .given = "2,9,8,3", .ref = ref_conv},
    {"conv2d_grad_input stride 2", OP_CONV2D_GRAD_INPUT, 2, {"2,5,4,5", "3,3,3,5"}, CONV(2, 2, 1, 1, 1, 1),
     .given = "2,9,8,3", .ref = ref_conv},
    {"conv2d_grad_input asymmetric", OP_CONV2D_GRAD_INPUT, 2, {"2,4,9,5", "2,3,2,5"}, CONV(2, 1, 0, 1, 1, 0),
     .given = "2,7,10,2", .ref = ref_conv},
    {"conv2d_grad_filter valid", OP_CONV2D_GRAD_FILTER, 2, {"2,9,8,3", "2,7,6,4"}, CONV(1, 1, 0, 0, 0, 0),
     .given = "3,3,3,4", .ref = ref_conv},
    {"conv2d_grad_filter stride 2", OP_CONV2D_GRAD_FILTER, 2, {"2,9,8,3", "2,5,4,5"}, CONV(2, 2, 1, 1, 1, 1),
     .given = "3,3,3,5", .ref = ref_conv},
    {"conv2d_grad_filter asymmetric", OP_CONV2D_GRAD_FILTER, 2, {"2,7,10,2", "2,4,9,5"}, CONV(2, 1, 0, 1, 1, 0),
     .given = "2,3,2,5", .ref = ref_conv},
    {"conv2d_grad_filter mnist", OP_CONV2D_GRAD_FILTER, 2, {"8,28,28,1", "8,26,26,32"}, CONV(1, 1, 0, 0, 0, 0),
     .given = "3,3,1,32", .ref = ref_conv},
    /* ---- dilated, grouped (depthwise) and transposed convolutions ---- */
    {"conv2d dilated", OP_CONV2D, 2, {"2,9,8,3", "3,3,3,4"}, CONVX(1, 1, 0, 0, 0, 0, 2, 2, 1), .ref = ref_conv},
    {"conv2d dilated 2x3 padded", OP_CONV2D, 2, {"2,7,8,2", "3,2,2,3"}, CONVX(1, 1, 2, 1, 2, 2, 2, 3, 1), .ref = ref_conv},
    {"conv2d groups 2", OP_CONV2D, 2, {"2,6,7,4", "3,3,2,6"}, CONVX(1, 1, 0, 0, 0, 0, 1, 1, 2), .ref = ref_conv},
    {"conv2d depthwise x2 stride 2", OP_CONV2D, 2, {"2,8,8,3", "3,3,1,6"}, CONVX(2, 2, 1, 1, 1, 1, 1, 1, 3), .ref = ref_conv},
    {"conv2d depthwise mobilenet", OP_CONV2D, 2, {"4,14,14,16", "3,3,1,16"}, CONVX(1, 1, 1, 1, 1, 1, 1, 1, 16), .ref = ref_conv},
    {"conv2d groups dilated strided", OP_CONV2D, 2, {"1,9,9,4", "2,2,2,4"}, CONVX(2, 2, 0, 0, 0, 0, 2, 2, 2), .ref = ref_conv},
    {"conv2d_grad_input groups 2", OP_CONV2D_GRAD_INPUT, 2, {"2,4,5,6", "3,3,2,6"}, CONVX(1, 1, 0, 0, 0, 0, 1, 1, 2),
     .given = "2,6,7,4", .ref = ref_conv},
    {"conv2d_grad_input depthwise stride 2", OP_CONV2D_GRAD_INPUT, 2, {"2,4,4,6", "3,3,1,6"},
     CONVX(2, 2, 1, 1, 1, 1, 1, 1, 3), .given = "2,8,8,3", .ref = ref_conv},
    {"conv2d_grad_input dilated", OP_CONV2D_GRAD_INPUT, 2, {"2,5,4,4", "3,3,3,4"}, CONVX(1, 1, 0, 0, 0, 0, 2, 2, 1),
     .given = "2,9,8,3", .ref = ref_conv},
    {"conv2d_grad_filter groups 2", OP_CONV2D_GRAD_FILTER, 2, {"2,6,7,4", "2,4,5,6"}, CONVX(1, 1, 0, 0, 0, 0, 1, 1, 2),
     .given = "3,3,2,6", .ref = ref_conv},
    {"conv2d_grad_filter depthwise stride 2", OP_CONV2D_GRAD_FILTER, 2, {"2,8,8,3", "2,4,4,6"},
     CONVX(2, 2, 1, 1, 1, 1, 1, 1, 3), .given = "3,3,1,6", .ref = ref_conv},
    {"conv2d_grad_filter dilated", OP_CONV2D_GRAD_FILTER, 2, {"2,9,8,3", "2,5,4,4"}, CONVX(1, 1, 0, 0, 0, 0, 2, 2, 1),
     .given = "3,3,3,4", .ref = ref_conv},
    {"conv2d_transpose valid", OP_CONV2D_TRANSPOSE, 2, {"2,5,4,3", "3,3,4,3"}, CONVX(1, 1, 0, 0, 0, 0, 1, 1, 0),
     .ref = ref_conv},
    {"conv2d_transpose stride 2 valid", OP_CONV2D_TRANSPOSE, 2, {"2,4,3,3", "3,3,5,3"}, CONVX(2, 2, 0, 0, 0, 0, 1, 1, 0),
     .ref = ref_conv},
    {"conv2d_transpose stride 2 same", OP_CONV2D_TRANSPOSE, 2, {"2,4,3,2", "3,3,4,2"}, CONVX(2, 2, 0, 0, 1, 1, 1, 1, 0),
     .ref = ref_conv},
    {"conv2d_transpose 4x4 stride 2 same", OP_CONV2D_TRANSPOSE, 2, {"1,5,5,3", "4,4,6,3"},
     CONVX(2, 2, 1, 1, 1, 1, 1, 1, 0), .ref = ref_conv},
    {"conv2d_transpose dilated", OP_CONV2D_TRANSPOSE, 2, {"1,4,4,2", "2,3,3,2"}, CONVX(1, 1, 0, 0, 0, 0, 2, 1, 0),
     .ref = ref_conv},
    {"max_pool2d 2x2", OP_MAX_POOL2D, 1, {"2,8,6,3"}, POOL(2, 2, 2, 2, 0, 0, 0, 0), .ref = ref_pool},
    {"max_pool2d 3x3 s2 pad", OP_MAX_POOL2D, 1, {"2,9,7,3"}, POOL(3, 3, 2, 2, 1, 1, 1, 1), .ref = ref_pool},
    {"max_pool2d 2x3 odd", OP_MAX_POOL2D, 1, {"3,7,9,2"}, POOL(2, 3, 2, 1, 0, 1, 0, 0), .ref = ref_pool},
    {"avg_pool2d 2x2", OP_AVG_POOL2D, 1, {"2,8,6,3"}, POOL(2, 2, 2, 2, 0, 0, 0, 0), .ref = ref_pool},
    {"avg_pool2d 3x3 s2 pad", OP_AVG_POOL2D, 1, {"2,9,7,3"}, POOL(3, 3, 2, 2, 1, 1, 1, 1), .ref = ref_pool},
    {"max_pool2d_grad 2x2", OP_MAX_POOL2D_GRAD, 2, {"2,8,6,3", "2,4,3,3"}, POOL(2, 2, 2, 2, 0, 0, 0, 0),
     .ref = ref_pool},
    {"max_pool2d_grad 3x3 s2 pad", OP_MAX_POOL2D_GRAD, 2, {"2,9,7,3", "2,5,4,3"}, POOL(3, 3, 2, 2, 1, 1, 1, 1),
     .ref = ref_pool},
    {"max_pool2d_grad mnist", OP_MAX_POOL2D_GRAD, 2, {"4,26,26,32", "4,13,13,32"}, POOL(2, 2, 2, 2, 0, 0, 0, 0),
     .ref = ref_pool},
    {"avg_pool2d_grad 2x2", OP_AVG_POOL2D_GRAD, 2, {"2,8,6,3", "2,4,3,3"}, POOL(2, 2, 2, 2, 0, 0, 0, 0),
     .ref = ref_pool},
    {"avg_pool2d_grad 3x3 s2 pad", OP_AVG_POOL2D_GRAD, 2, {"2,9,7,3", "2,5,4,3"}, POOL(3, 3, 2, 2, 1, 1, 1, 1),
     .ref = ref_pool},
    /* issue 14 (speed): max_pool2d written directly (pool.c): the 2x2 stride-2 path (the seed CNN's, odd
     * sizes, more channels than a chunk of 64, bottom/right padding that leaves it), general windows */
    {"max_pool2d mnist", OP_MAX_POOL2D, 1, {"4,26,26,32"}, POOL(2, 2, 2, 2, 0, 0, 0, 0), .ref = ref_pool},
    {"max_pool2d 2x2 odd 70 channels", OP_MAX_POOL2D, 1, {"2,7,9,70"}, POOL(2, 2, 2, 2, 0, 0, 0, 0), .ref = ref_pool},
    {"max_pool2d 2x2 pad bottom right", OP_MAX_POOL2D, 1, {"2,7,7,3"}, POOL(2, 2, 2, 2, 0, 0, 1, 1), .ref = ref_pool},
    {"max_pool2d 3x3 s1 same 70 channels", OP_MAX_POOL2D, 1, {"1,6,5,70"}, POOL(3, 3, 1, 1, 1, 1, 1, 1),
     .ref = ref_pool},
    {"reshape", OP_RESHAPE, 1, {"4,6"}, .given = "2,12", .ref = ref_copy},
    {"view", OP_VIEW, 1, {"40"}, .iattr = {7}, .given = "3,5", .ref = ref_copy},
    {"all_reduce pack", OP_ALL_REDUCE, 3, {"3,4", "5", "2,1,3"}, .iattr = {0, 1}, .ref = ref_pack},
    /* issue 13: all_gather's kernel copies x into its replica's block (one replica: all of it) */
    {"all_gather f32", OP_ALL_GATHER, 1, {"3,4,2"}, .iattr = {0, 1}, .ref = ref_copy},
    {"all_gather i32", OP_ALL_GATHER, 1, {"6,2"}, .dtype = {IR_I32}, .fill = {R_LABELS}, .iattr = {1, 1}, .ref = ref_copy},
    {"shard f32", OP_SHARD, 1, {"12,5"}, .iattr = {2, 3}, .ref = ref_copy},
    {"shard i32", OP_SHARD, 1, {"12"}, .dtype = {IR_I32}, .fill = {R_LABELS}, .iattr = {1, 4}, .ref = ref_copy},
    {"reduce_sum axis 0", OP_REDUCE_SUM, 1, {"64,10"}, .iattr = {1}, .ref = ref_reduce},
    {"reduce_sum last", OP_REDUCE_SUM, 1, {"6,35"}, .iattr = {2}, .ref = ref_reduce},
    {"reduce_sum conv bias", OP_REDUCE_SUM, 1, {"8,26,26,32"}, .iattr = {7}, .ref = ref_reduce},
    {"reduce_sum middle keepdims", OP_REDUCE_SUM, 1, {"3,4,5"}, .iattr = {2, 1}, .ref = ref_reduce},
    {"reduce_sum outer+inner", OP_REDUCE_SUM, 1, {"3,4,5"}, .iattr = {5}, .ref = ref_reduce},
    {"reduce_sum all", OP_REDUCE_SUM, 1, {"3,4,5"}, .iattr = {7}, .ref = ref_reduce},
    {"reduce_sum none", OP_REDUCE_SUM, 1, {"3,4"}, .iattr = {0}, .ref = ref_reduce},
    {"reduce_mean batch", OP_REDUCE_MEAN, 1, {"64"}, .iattr = {1}, .ref = ref_reduce},
    {"reduce_mean axes 1,3 keepdims", OP_REDUCE_MEAN, 1, {"2,3,4,5"}, .iattr = {10, 1}, .ref = ref_reduce},
    {"broadcast_to", OP_BROADCAST_TO, 1, {"3,1"}, .given = "2,3,4", .ref = ref_broadcast_to},
    {"broadcast_to row", OP_BROADCAST_TO, 1, {"5"}, .given = "4,5", .ref = ref_broadcast_to},
    {"softmax", OP_SOFTMAX, 1, {"5,7"}, .fill = {R_WIDE}, .ref = ref_softmax},
    {"softmax 3-d", OP_SOFTMAX, 1, {"2,3,11"}, .fill = {R_WIDE}, .ref = ref_softmax},
    {"softmax_grad", OP_SOFTMAX_GRAD, 2, {"5,7", "5,7"}, .fill = {R_POSITIVE, R_SIGNED}, .ref = ref_softmax},
    /* issue 12: softmax on any axis, log_softmax, shape ops, extreme reductions */
    {"softmax axis 0", OP_SOFTMAX, 1, {"5,7"}, .fill = {R_WIDE}, .iattr = {1}, .ref = ref_softmax},
    {"softmax middle axis wide", OP_SOFTMAX, 1, {"2,5,300"}, .fill = {R_WIDE}, .iattr = {1}, .ref = ref_softmax},
    {"softmax_grad middle axis", OP_SOFTMAX_GRAD, 2, {"2,5,7", "2,5,7"}, .fill = {R_POSITIVE, R_SIGNED},
     .iattr = {1}, .ref = ref_softmax},
    {"log_softmax", OP_LOG_SOFTMAX, 1, {"5,7"}, .fill = {R_WIDE}, .ref = ref_softmax},
    {"log_softmax axis 0 of 3", OP_LOG_SOFTMAX, 1, {"6,4,3"}, .fill = {R_WIDE}, .iattr = {2}, .ref = ref_softmax},
    {"concat axis 1", OP_CONCAT, 3, {"2,3,4", "2,5,4", "2,1,4"}, .iattr = {1}, .ref = ref_concat},
    {"concat axis 0", OP_CONCAT, 2, {"3,4", "2,4"}, .iattr = {0}, .ref = ref_concat},
    {"concat channels", OP_CONCAT, 2, {"2,5,5,3", "2,5,5,8"}, .iattr = {3}, .ref = ref_concat},
    {"slice", OP_SLICE, 1, {"4,6,5"}, .iattr = {1, 2, 0}, .given = "2,3,5", .ref = ref_slice_pad},
    {"slice inner", OP_SLICE, 1, {"3,4,9"}, .iattr = {0, 1, 4}, .given = "3,2,3", .ref = ref_slice_pad},
    {"slice whole", OP_SLICE, 1, {"3,4"}, .given = "3,4", .ref = ref_slice_pad},
    {"pad", OP_PAD, 1, {"2,3,4"}, .iattr = {1, 2, 0}, .given = "3,6,4", .ref = ref_slice_pad},
    {"pad images", OP_PAD, 1, {"2,5,5,3"}, .iattr = {0, 1, 0, 0}, .given = "2,8,6,3", .ref = ref_slice_pad},
    {"transpose 2-d", OP_TRANSPOSE, 1, {"37,45"}, .iattr = {0x01}, .ref = ref_transpose},
    {"transpose inner kept", OP_TRANSPOSE, 1, {"2,5,6,3"}, .iattr = {0x3120}, .ref = ref_transpose},
    {"transpose NHWC to NCHW", OP_TRANSPOSE, 1, {"2,5,7,33"}, .iattr = {0x2130}, .ref = ref_transpose},
    {"transpose 3-d rotate", OP_TRANSPOSE, 1, {"4,5,6"}, .iattr = {0x102}, .ref = ref_transpose},
    {"transpose with ones", OP_TRANSPOSE, 1, {"3,1,4,1"}, .iattr = {0x1302}, .ref = ref_transpose},
    {"transpose identity", OP_TRANSPOSE, 1, {"3,4"}, .iattr = {0x10}, .ref = ref_transpose},
    {"reduce_max last", OP_REDUCE_MAX, 1, {"6,35"}, .iattr = {2}, .ref = ref_reduce_extreme},
    {"reduce_max axis 0", OP_REDUCE_MAX, 1, {"64,10"}, .iattr = {1}, .ref = ref_reduce_extreme},
    {"reduce_max middle keepdims", OP_REDUCE_MAX, 1, {"3,4,5"}, .iattr = {2, 1}, .ref = ref_reduce_extreme},
    {"reduce_max outer+inner ties", OP_REDUCE_MAX, 1, {"3,4,5"}, .fill = {R_SMALL_INT}, .iattr = {5},
     .ref = ref_reduce_extreme},
    {"reduce_max image axes", OP_REDUCE_MAX, 1, {"2,6,6,3"}, .iattr = {6}, .ref = ref_reduce_extreme},
    {"reduce_max all", OP_REDUCE_MAX, 1, {"3,4,5"}, .iattr = {7}, .ref = ref_reduce_extreme},
    {"reduce_min middle", OP_REDUCE_MIN, 1, {"3,4,5"}, .iattr = {2}, .ref = ref_reduce_extreme},
    {"reduce_min axes 1,3", OP_REDUCE_MIN, 1, {"2,3,4,5"}, .iattr = {10, 1}, .ref = ref_reduce_extreme},
    {"reduce_min none", OP_REDUCE_MIN, 1, {"3,4"}, .ref = ref_reduce_extreme},
    {"sparse_xent", OP_SPARSE_XENT, 2, {"64,10", "64"}, LAB, .ref = ref_xent},
    {"sparse_xent_grad", OP_SPARSE_XENT_GRAD, 3, {"64,10", "64", "64"}, .dtype = {0, IR_I32, 0},
     .fill = {R_WIDE, R_LABELS, R_SIGNED}, .ref = ref_xent},
    {"argmax_match", OP_ARGMAX_MATCH, 2, {"64,10", "64"}, LAB, .ref = ref_xent},
    {"dropout", OP_DROPOUT, 1, {"8,50"}, .iattr = {42}, .fattr = {0.3}, .ref = ref_dropout},
    {"dropout_grad", OP_DROPOUT_GRAD, 1, {"8,50"}, .iattr = {42}, .fattr = {0.3}, .ref = ref_dropout},
    {"assign", OP_ASSIGN, 2, {"3,7", "3,7"}, .ref = ref_assign},
    {"in_training", OP_IN_TRAINING, 2, {"4,6", "4,6"}, .ref = ref_in_training},
    {"sgd", OP_SGD_UPDATE, 2, {"33", "33"}, .fattr = {0.1}, .ref = ref_sgd},
    {"sgd momentum", OP_SGD_UPDATE, 3, {"33", "33", "33"}, .fattr = {0.1, 0.9}, .ref = ref_sgd},
    {"sgd nesterov", OP_SGD_UPDATE, 3, {"33", "33", "33"}, .iattr = {1}, .fattr = {0.1, 0.9}, .ref = ref_sgd},
    {"adam", OP_ADAM_UPDATE, 4, {"4,9", "4,9", "4,9", "4,9"}, .fill = {0, 0, 0, R_POSITIVE},
     .fattr = {1e-3, 0.9, 0.999, 1e-7, 0}, .ref = ref_adam},
    {"adamw", OP_ADAM_UPDATE, 4, {"4,9", "4,9", "4,9", "4,9"}, .fill = {0, 0, 0, R_POSITIVE},
     .fattr = {1e-3, 0.9, 0.999, 1e-7, 0.004}, .ref = ref_adam},
    {"rmsprop", OP_RMSPROP_UPDATE, 3, {"21", "21", "21"}, .fill = {0, 0, R_POSITIVE},
     .fattr = {1e-3, 0.9, 0, 1e-7}, .ref = ref_rmsprop},
    {"rmsprop momentum", OP_RMSPROP_UPDATE, 4, {"21", "21", "21", "21"}, .fill = {0, 0, R_POSITIVE},
     .fattr = {1e-3, 0.9, 0.5, 1e-7}, .ref = ref_rmsprop},
    ACT_CASES
    EPILOGUE_CASES
    BN_EPILOGUE_CASES
    POOL2_CASES /* issue 14: seed CNN speed */
    RELU_POOL2_CASES /* issue 14: seed CNN speed, conv2d_relu_pool2 */
    ATTENTION_CASES /* issue 14: char_gpt speed */
    CAUSAL_MATMUL_CASES /* issue 14: attention's causal GEMMs */
    BATCH_NORM_CASES /* issue 14: batch norm in training */
    /* issue 12: optimizers and clipping */
    {"adagrad", OP_ADAGRAD_UPDATE, 3, {"5,7", "5,7", "5,7"}, .fill = {0, 0, R_POSITIVE},
     .fattr = {0.01, 0.1, 1e-7, 0.01}, .ref = ref_adagrad},
    {"nadam", OP_NADAM_UPDATE, 4, {"4,9", "4,9", "4,9", "4,9"}, .fill = {0, 0, 0, R_POSITIVE},
     .fattr = {1e-3, 0.9, 0.999, 1e-7, 0.01}, .ref = ref_nadam},
    {"lamb", OP_LAMB_UPDATE, 4, {"3,11", "3,11", "3,11", "3,11"}, .fill = {0, 0, 0, R_POSITIVE},
     .fattr = {1e-3, 0.9, 0.999, 1e-6, 0.01}, .ref = ref_lamb},
    {"sq_norm one", OP_SQ_NORM, 1, {"6,5"}, .ref = ref_sq_norm},
    {"sq_norm three", OP_SQ_NORM, 3, {"3,3,2", "7", ""}, .fill = {R_WIDE, 0, R_WIDE}, .ref = ref_sq_norm},
};

/* ---- the driver ---- */

static uint64_t rng = 88172645463325252ull;
static double uniform(void) { /* [0, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static double draw(fill_kind f, const one_op *t, ir_dtype dt) {
    int64_t classes = t->in_nodes[0]->shape.rank == 2 ? t->in_nodes[0]->shape.dim[1] : 10;
    switch (f) {
    case R_POSITIVE: return 0.1 + 1.9 * uniform();
    case R_WIDE: return dt == IR_F32 ? 20 * uniform() - 10 : 300 * uniform() - 20;
    case R_LABELS: return floor(uniform() * (dt == IR_U8 ? 256 : (double)classes));
    case R_SMALL_INT: return floor(uniform() * 3);
    case R_IDS_OUT: return floor(uniform() * 14) - 2;
    case R_PIXELS: return floor(uniform() * 5) - 1; /* a 2x2 window's pixel 0 .. 3, or -1 (conv2d_relu_pool2's) */
    default: return 2 * uniform() - 1;
    }
}

static void fill(const tcase *c, one_op *t, double **ref_in) {
    for (int i = 0; i < t->n_in; i++) {
        ir_dtype dt = t->in_nodes[i]->dtype;
        int64_t n = numel(&t->in_nodes[i]->shape);
        for (int64_t j = 0; j < n; j++) {
            double v = draw(c->fill[i], t, dt);
            if (dt == IR_F32) ((float *)t->in[i])[j] = (float)v, ref_in[i][j] = (float)v;
            else if (dt == IR_I32) ((int32_t *)t->in[i])[j] = (int32_t)v, ref_in[i][j] = (int32_t)v;
            else ((uint8_t *)t->in[i])[j] = (uint8_t)v, ref_in[i][j] = (uint8_t)v;
        }
    }
}

static double get(const void *p, ir_dtype dt, int64_t i) {
    return dt == IR_F32 ? ((const float *)p)[i] : dt == IR_I32 ? ((const int32_t *)p)[i] : ((const uint8_t *)p)[i];
}

/* |got - want| <= 1e-5 (|want| + rms(want)); integers exactly */
static int compare(const char *name, const char *what, const void *got, ir_dtype dt, const double *want, int64_t n) {
    double rms = 0;
    for (int64_t i = 0; i < n; i++) rms += want[i] * want[i];
    rms = sqrt(rms / (double)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        double g = get(got, dt, i), tol = dt == IR_F32 ? 1e-5 * (fabs(want[i]) + rms) : 0;
        if (!(fabs(g - want[i]) <= tol)) {
            fprintf(stderr, "FAIL %s: %s[%lld] = %.9g, reference %.9g\n", name, what, (long long)i, g, want[i]);
            return 1;
        }
    }
    return 0;
}

static int run_case(const tcase *c) {
    ir_shape shapes[8], given;
    ir_dtype dt[8];
    for (int i = 0; i < c->n_in; i++) shapes[i] = kh_shape(c->shape[i]), dt[i] = c->dtype[i];
    if (c->given) given = kh_shape(c->given);
    one_op t;
    char err[256];
    if (kh_build(&t, c->op, c->n_in, shapes, dt, c->iattr, c->fattr, c->given ? &given : NULL, c->out_dtype, err,
                 sizeof err)) {
        fprintf(stderr, "FAIL %s: shape rule: %s\n", c->name, err);
        kh_free(&t);
        return 1;
    }
    t.step = 3, t.training = !c->eval;
    double *ref_in[8], *ref_out = calloc((size_t)numel(oshape(&t)) + 1, sizeof(double));
    for (int i = 0; i < c->n_in; i++) ref_in[i] = calloc((size_t)numel(shapes + i) + 1, sizeof(double));
    fill(c, &t, ref_in);
    int bad = 0;
    for (int rep = 0; rep < 2 && !bad; rep++) /* twice: the second run uses cached primitives */
        if (rep == 0 || !(ir_ops[c->op].flags & OPF_INPLACE)) {
            if (kh_run(&t, err, sizeof err)) {
                fprintf(stderr, "FAIL %s: %s\n", c->name, err);
                bad = 1;
            }
        }
    c->ref(&t, ref_in, ref_out);
    if (!bad && ir_ops[c->op].flags & OPF_INPLACE) {
        for (int i = 0; i < c->n_in && !bad; i++)
            if (i != 1) bad = compare(c->name, i ? "slot" : "param", t.in[i], IR_F32, ref_in[i], numel(shapes + i));
    } else if (!bad) {
        bad = compare(c->name, "out", t.out, onode(&t)->dtype, ref_out, numel(oshape(&t)));
    }
    for (int i = 0; i < c->n_in; i++) free(ref_in[i]);
    free(ref_out);
    kh_free(&t);
    return bad;
}

/* labels outside [0, C) are a runtime error naming the label */
static int test_bad_label(void) {
    ir_shape s[2] = {kh_shape("3,10"), kh_shape("3")};
    one_op t;
    char err[256] = "";
    int bad = kh_build(&t, OP_SPARSE_XENT, 2, s, (ir_dtype[]){IR_F32, IR_I32}, (int64_t[IR_MAX_IATTR]){0}, (double[6]){0}, NULL,
                       0, err, sizeof err);
    memset(t.in[0], 0, 30 * sizeof(float));
    ((int32_t *)t.in[1])[0] = 1, ((int32_t *)t.in[1])[1] = 10, ((int32_t *)t.in[1])[2] = 2;
    const char *want = "op 'sparse_xent': label 10 of example 1 is outside [0, 10)";
    if (bad || kh_run(&t, err, sizeof err) != -1 || strcmp(err, want)) {
        fprintf(stderr, "FAIL bad label: got '%s', want '%s'\n", err, want);
        bad = 1;
    }
    kh_free(&t);
    return bad;
}

/* issue 14 (char_gpt speed): the row maximum vectorizes and a row holding a
 * NaN (in the 16-lane part or the tail) still comes out NaN, its neighbours not */
static int test_xent_nan(void) {
    ir_shape s[2] = {kh_shape("3,40"), kh_shape("3")};
    one_op t;
    char err[256] = "";
    int bad = kh_build(&t, OP_SPARSE_XENT, 2, s, (ir_dtype[]){IR_F32, IR_I32}, (int64_t[IR_MAX_IATTR]){0}, (double[6]){0},
                       NULL, 0, err, sizeof err);
    float *x = t.in[0], *y = t.out;
    for (int i = 0; i < 120; i++) x[i] = (float)(i % 7) * 0.25f;
    x[40 + 20] = NAN, x[80 + 35] = NAN;
    ((int32_t *)t.in[1])[0] = 1, ((int32_t *)t.in[1])[1] = 2, ((int32_t *)t.in[1])[2] = 3;
    if (bad || kh_run(&t, err, sizeof err) || !isfinite(y[0]) || !isnan(y[1]) || !isnan(y[2])) {
        fprintf(stderr, "FAIL sparse_xent NaN rows: %s %g %g %g\n", err, y[0], y[1], y[2]);
        bad = 1;
    }
    kh_free(&t);
    return bad;
}

/* issue 13: ids outside [0, V) are a runtime error naming the op and the id */
static int test_bad_id(ir_op op, const char *want) {
    int gather = op == OP_GATHER;
    ir_shape s[2] = {kh_shape(gather ? "4,2" : "3"), kh_shape(gather ? "3" : "3,2")}, table = kh_shape("4,2");
    one_op t;
    char err[256] = "";
    int bad = kh_build(&t, op, 2, s, gather ? (ir_dtype[]){IR_F32, IR_I32} : (ir_dtype[]){IR_I32, IR_F32},
                       (int64_t[IR_MAX_IATTR]){0}, (double[6]){0}, gather ? NULL : &table, 0, err, sizeof err);
    int32_t *ids = t.in[gather ? 1 : 0];
    memset(t.in[gather ? 0 : 1], 0, (gather ? 8 : 6) * sizeof(float));
    ids[0] = 1, ids[1] = 3, ids[2] = gather ? 4 : -1;
    if (bad || kh_run(&t, err, sizeof err) != -1 || strcmp(err, want)) {
        fprintf(stderr, "FAIL bad id (%s): got '%s', want '%s'\n", ir_ops[op].name, err, want);
        bad = 1;
    }
    kh_free(&t);
    return bad;
}

/* dropout keeps about 1 - rate of the elements, and other replicas differ */
static int test_dropout_stats(void) {
    ir_shape s = kh_shape("100000");
    one_op t;
    char err[256];
    int bad = kh_build(&t, OP_DROPOUT, 1, &s, (ir_dtype[]){IR_F32}, (int64_t[IR_MAX_IATTR]){7}, (double[6]){0.25}, NULL, 0, err,
                       sizeof err);
    for (int i = 0; i < 100000; i++) ((float *)t.in[0])[i] = 1;
    bad |= kh_run(&t, err, sizeof err);
    float first = ((float *)t.out)[0];
    int kept = 0, same = 0;
    for (int i = 0; i < 100000; i++) kept += ((float *)t.out)[i] != 0;
    t.args.replica = 1;
    float *r0 = malloc(100000 * sizeof *r0);
    memcpy(r0, t.out, 100000 * sizeof *r0);
    bad |= kh_run(&t, err, sizeof err);
    for (int i = 0; i < 100000; i++) same += r0[i] == ((float *)t.out)[i];
    if (bad || kept < 74000 || kept > 76000 || same > 70000 || !(first == 0 || fabsf(first - 4.0f / 3) < 1e-6f)) {
        fprintf(stderr, "FAIL dropout stats: kept %d of 100000 at rate 0.25, %d equal across replicas\n", kept, same);
        bad = 1;
    }
    free(r0);
    kh_free(&t);
    return bad;
}

/* an update's rate comes from the plan's schedule at the step (piecewise:
 * 0.5 for the first two updates, then 0.25) */
static int test_scheduled_sgd(void) {
    ir_shape s[2] = {kh_shape("8"), kh_shape("8")};
    one_op t;
    char err[256];
    int bad = kh_build(&t, OP_SGD_UPDATE, 2, s, (ir_dtype[]){IR_F32, IR_F32}, (int64_t[IR_MAX_IATTR]){0}, (double[6]){0.5}, NULL, 0,
                       err, sizeof err);
    t.m->opt = (ir_optimizer){.lr = 0.5, .schedule = {.kind = LR_PIECEWISE_CONSTANT, .n_boundaries = 1,
                                                      .boundaries = {1}, .values = {0.5, 0.25}}};
    float want = 1;
    for (int i = 0; i < 8; i++) ((float *)t.in[0])[i] = 1, ((float *)t.in[1])[i] = 1;
    for (int64_t step = 1; step <= 3 && !bad; step++) {
        t.step = step;
        bad |= kh_run(&t, err, sizeof err);
        want -= step <= 2 ? 0.5f : 0.25f;
        bad |= ((float *)t.out)[7] != want;
    }
    if (bad) fprintf(stderr, "FAIL sgd under a schedule: got %g, want %g\n", ((float *)t.out)[7], want);
    kh_free(&t);
    return bad;
}

/* in_training reads its second input outside training */
static int test_in_training_eval(void) {
    ir_shape s[2] = {kh_shape("100"), kh_shape("100")};
    one_op t;
    char err[256];
    int bad = kh_build(&t, OP_IN_TRAINING, 2, s, (ir_dtype[]){IR_F32, IR_F32}, (int64_t[IR_MAX_IATTR]){0}, (double[6]){0}, NULL, 0,
                       err, sizeof err);
    for (int i = 0; i < 100; i++) ((float *)t.in[0])[i] = (float)i, ((float *)t.in[1])[i] = -(float)i - 1;
    t.training = 0;
    bad |= kh_run(&t, err, sizeof err);
    if (bad || memcmp(t.in[1], t.out, 100 * sizeof(float))) {
        fprintf(stderr, "FAIL in_training outside training: not its second input\n");
        bad = 1;
    }
    kh_free(&t);
    return bad;
}

/* dropout and its gradient are the identity outside training (eval, predict) */
static int test_dropout_eval(void) {
    int bad = 0;
    for (ir_op op = OP_DROPOUT; op <= OP_DROPOUT_GRAD; op++) {
        ir_shape s = kh_shape("1000");
        one_op t;
        char err[256];
        bad |= kh_build(&t, op, 1, &s, (ir_dtype[]){IR_F32}, (int64_t[IR_MAX_IATTR]){7}, (double[6]){0.5}, NULL, 0, err, sizeof err);
        for (int i = 0; i < 1000; i++) ((float *)t.in[0])[i] = (float)i - 500.5f;
        t.training = 0;
        bad |= kh_run(&t, err, sizeof err);
        if (memcmp(t.in[0], t.out, 1000 * sizeof(float))) {
            fprintf(stderr, "FAIL %s outside training: not the identity\n", ir_ops[op].name);
            bad = 1;
        }
        kh_free(&t);
    }
    return bad;
}

/* the oneDNN and GEMM cases again on two threads (primitives are rebuilt) */
static int test_two_threads(int *count) {
    int failed = 0;
    cpu_kernels_set_threads(2);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ir_op op = cases[i].op;
        if (op == OP_MATMUL || (op >= OP_CONV2D && op <= OP_AVG_POOL2D_GRAD) || op == OP_CONV2D_EPILOGUE ||
            op == OP_CONV2D_BN_EPILOGUE || op == OP_CAUSAL_MATMUL)
            failed += run_case(&cases[i]), ++*count;
    }
    cpu_kernels_set_threads(1);
    return failed;
}

/* ---- issue 14: the GEMM and convolution cases again with each candidate
 * kernel forced (MGC_KERNELS), on one and two threads, so whichever
 * the measurement picks is checked against the reference ---- */
static int test_each_candidate(int *count) {
    const char *names[] = {"openblas", "onednn", "onednn-hwio", "direct", "winograd", "blocked"};
    int failed = 0;
    for (int t = 1; t <= 2; t++)
        for (size_t m = 0; m < sizeof names / sizeof *names; m++) {
            setenv("MGC_KERNELS", names[m], 1);
            cpu_tune_reset();
            cpu_kernels_set_threads(t);
            for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
                ir_op op = cases[i].op;
                if (op == OP_MATMUL || op == OP_CONV2D || op == OP_CONV2D_GRAD_INPUT || op == OP_CONV2D_GRAD_FILTER ||
                    op == OP_CONV2D_BN_EPILOGUE) {
                    int bad = run_case(&cases[i]);
                    if (bad) fprintf(stderr, "  (MGC_KERNELS=%s, %d threads)\n", names[m], t);
                    failed += bad, ++*count;
                }
            }
        }
    unsetenv("MGC_KERNELS");
    cpu_tune_reset();
    cpu_kernels_set_threads(1);
    return failed;
}

/* ---- issue 14 (char_gpt's GEMMs): matmul shapes that cross gemm_blocked.c's
 * blocks (k blocks of up to 512, the k block narrowed by a wide n or a small
 * C, row blocks of 48, 6 x 16 tiles cut at m and n), on one thread with each
 * matmul candidate forced and measured. Their inputs come from the shared
 * generator, whose state is restored after them, so the other cases draw the
 * inputs they drew before (some sit close to their tolerance) ---- */
static const tcase blocked_cases[] = {
    {"matmul blocked k blocks", OP_MATMUL, 2, {"101,1100", "1100,37"}, .ref = ref_matmul},
    {"matmul blocked k blocks trans_ab", OP_MATMUL, 2, {"1100,53", "21,1100"}, .iattr = {1, 1}, .ref = ref_matmul},
    {"matmul blocked k blocks trans_b", OP_MATMUL, 2, {"70,700", "45,700"}, .iattr = {0, 1}, .ref = ref_matmul},
    {"matmul blocked wide n", OP_MATMUL, 2, {"50,300", "300,1030"}, .ref = ref_matmul},
    {"matmul blocked batched trans_a", OP_MATMUL, 2, {"3,130,61", "130,40"}, .iattr = {1, 0}, .ref = ref_matmul},
    {"matmul blocked k blocks of 512", OP_MATMUL, 2, {"1100,600", "600,128"}, .ref = ref_matmul},
};

/* issue 14: cases run under each MGC_KERNELS mode in turn, on a random stream
 * of their own, restored after (so the cases after them keep their inputs);
 * `also`, if set, checks each case once more under modes[0] */
static int run_modes(const char *const *modes, size_t n_modes, const tcase *cases, size_t n,
                     int (*also)(const tcase *), int *count) {
    uint64_t saved = rng;
    int failed = 0;
    for (size_t m = 0; m < n_modes; m++) {
        setenv("MGC_KERNELS", modes[m], 1);
        cpu_tune_reset();
        for (size_t i = 0; i < n; i++) {
            int bad = run_case(&cases[i]);
            if (!bad && m == 0 && also) bad = also(&cases[i]);
            if (bad) fprintf(stderr, "  (MGC_KERNELS=%s)\n", modes[m]);
            failed += bad, ++*count;
        }
    }
    unsetenv("MGC_KERNELS");
    cpu_tune_reset();
    rng = saved;
    return failed;
}

static int test_blocked(int *count) {
    static const char *const modes[] = {"openblas", "onednn", "blocked", "auto"};
    return run_modes(modes, sizeof modes / sizeof *modes, blocked_cases, sizeof blocked_cases / sizeof *blocked_cases,
                     NULL, count);
}

/* ---- device threads run kernels concurrently: each builds its primitives
 * at the same moment as the other and gets the single-thread result ---- */

typedef struct {
    one_op op[2];      /* conv2d, max_pool2d_grad of one "replica" */
    int failed;
} replica_work;

static int build_replica(replica_work *w) {
    char err[256];
    ir_shape conv_in[2] = {kh_shape("16,28,28,1"), kh_shape("3,3,1,32")};
    ir_shape pool_in[2] = {kh_shape("16,26,26,32"), kh_shape("16,13,13,32")};
    ir_dtype f[2] = {IR_F32, IR_F32};
    if (kh_build(&w->op[0], OP_CONV2D, 2, conv_in, f, (int64_t[IR_MAX_IATTR]){1, 1}, (double[6]){0}, NULL, 0, err, sizeof err) ||
        kh_build(&w->op[1], OP_MAX_POOL2D_GRAD, 2, pool_in, f, (int64_t[IR_MAX_IATTR]){2, 2, 2, 2}, (double[6]){0}, NULL, 0, err,
                 sizeof err))
        return fprintf(stderr, "FAIL concurrent: %s\n", err), 1;
    for (int o = 0; o < 2; o++)
        for (int i = 0; i < 2; i++) {
            float *p = w->op[o].in[i];
            for (int64_t j = 0; j < numel(&w->op[o].in_nodes[i]->shape); j++) p[j] = (float)(2 * uniform() - 1);
        }
    return 0;
}

static void *replica_main(void *arg) {
    replica_work *w = arg;
    char err[256];
    for (int rep = 0; rep < 20 && !w->failed; rep++)
        for (int o = 0; o < 2; o++)
            if (kh_run(&w->op[o], err, sizeof err)) w->failed = 1, fprintf(stderr, "FAIL concurrent: %s\n", err);
    return NULL;
}

static int test_concurrent(void) {
    replica_work w[2] = {0};
    int failed = build_replica(&w[0]) | build_replica(&w[1]);
    pthread_t th[2];
    for (int r = 0; r < 2 && !failed; r++) pthread_create(&th[r], NULL, replica_main, &w[r]);
    for (int r = 0; r < 2 && !failed; r++) pthread_join(th[r], NULL);
    for (int r = 0; r < 2 && !failed; r++) {
        failed |= w[r].failed;
        for (int o = 0; o < 2 && !failed; o++) { /* again on this thread, compared bit for bit */
            size_t bytes = (size_t)ir_node_bytes(onode(&w[r].op[o]));
            float *got = malloc(bytes);
            char err[256];
            memcpy(got, w[r].op[o].out, bytes);
            failed |= kh_run(&w[r].op[o], err, sizeof err) || memcmp(got, w[r].op[o].out, bytes);
            free(got);
        }
    }
    for (int r = 0; r < 2; r++) kh_free(&w[r].op[0]), kh_free(&w[r].op[1]);
    if (failed) fprintf(stderr, "FAIL concurrent: results differ from the single-thread run\n");
    return failed;
}

/* The table walks the op table: every op with a CPU kernel has a case
 * (sources have no kernel; broadcast is a collective, tested in rtcoll;
 * fused, whose node carries a program, has tests/kern/test_fused.c). */
static int test_coverage(int n) {
    bool covered[OP_COUNT] = {0};
    int missing = 0;
    for (int i = 0; i < n; i++) covered[cases[i].op] = true;
    for (int op = 0; op < OP_COUNT; op++)
        if (!covered[op] && !(ir_ops[op].flags & OPF_SOURCE) && op != OP_BROADCAST && op != OP_FUSED) {
            fprintf(stderr, "FAIL: op '%s' has no kernel case\n", ir_ops[op].name);
            missing++;
        }
    return missing;
}

/* issue 13: all_gather on replica 2 of 3 writes block 2 and nothing else */
static int test_all_gather_block(void) {
    ir_shape s = kh_shape("2,3");
    one_op t;
    char err[256] = "";
    int bad = kh_build(&t, OP_ALL_GATHER, 1, &s, (ir_dtype[]){IR_I32}, (int64_t[IR_MAX_IATTR]){4, 3}, (double[6]){0}, NULL,
                       0, err, sizeof err);
    int32_t *x = t.in[0], *out = t.out;
    for (int i = 0; i < 6; i++) x[i] = 10 + i;
    for (int i = 0; !bad && i < 18; i++) out[i] = -7;
    t.args.replica = 2, t.args.replicas = 3;
    bad = bad || onode(&t)->shape.dim[0] != 6 || kh_run(&t, err, sizeof err);
    for (int i = 0; !bad && i < 18; i++) bad = out[i] != (i < 12 ? -7 : 10 + i - 12);
    if (bad) fprintf(stderr, "FAIL all_gather block of replica 2 of 3 %s\n", err);
    kh_free(&t);
    return bad;
}

#include "pool_exact.h" /* issue 14 (speed): pool.c's max-pool gradient against epilogue.c's, bit for bit */
#include "direct_cases.h" /* issue 14 (speed): the direct convolution candidate */
#include "winograd_cases.h" /* issue 14 (ResNet-20 speed): the Winograd convolution candidate */
#include "thin_cases.h" /* issue 14 (the seed CNN's dense layer): the thin GEMM candidate */
#include "gemm_epilogue_cases.h" /* issue 14 (char_gpt speed): matmul_epilogue's bits under each candidate */

/* issue 14 (char_gpt speed): ATTENTION_DROPOUT_CASES and CAUSAL_SCORES_CASES on
 * their own draws, the table's stream left as it was */
static int test_attention_dropout_cases(int *count) {
    static const tcase dc[] = {ATTENTION_DROPOUT_CASES CAUSAL_SCORES_CASES};
    uint64_t saved = rng;
    int failed = 0;
    rng = 0x2545f4914f6cdd1dull;
    for (size_t i = 0; i < sizeof dc / sizeof *dc; i++) failed += run_case(&dc[i]), ++*count;
    rng = saved;
    return failed;
}

int main(void) {
    int n = (int)(sizeof cases / sizeof *cases), failed = 0;
    failed += test_all_gather_block();
    failed += test_coverage(n);
    for (int i = 0; i < n; i++) failed += run_case(&cases[i]);
    failed += test_two_threads(&n);
    failed += test_each_candidate(&n);
    failed += test_bad_label();
    failed += test_bad_id(OP_GATHER, "op 'gather': id 4 at index 2 is outside [0, 4)");
    failed += test_bad_id(OP_SCATTER_ADD, "op 'scatter_add': id -1 at index 2 is outside [0, 4)");
    failed += test_dropout_stats();
    failed += test_dropout_eval();
    failed += test_in_training_eval();
    failed += test_scheduled_sgd();
    failed += test_concurrent();
    failed += test_pool_grad_exact(); /* issue 14 (speed) */
    failed += test_direct(&n); /* issue 14 (speed) */
    failed += test_winograd(&n); /* issue 14 (ResNet-20 speed) */
    failed += test_xent_nan(); /* issue 14 (char_gpt speed) */
    failed += test_blocked(&n); /* issue 14 (char_gpt's GEMMs) */
    failed += test_attention_dropout_bits(); /* issue 14: attention's dropout gradient in causal_softmax_grad */
    failed += test_attention_dropout_cases(&n);
    failed += test_thin(&n); /* issue 14 (the seed CNN's dense layer) */
    failed += test_gemm_epilogue(&n); /* issue 14 (char_gpt speed): the epilogue in the GEMM's tiles */
    printf("%d kernel cases, %d failed\n", n + 9, failed);
    return failed != 0;
}
