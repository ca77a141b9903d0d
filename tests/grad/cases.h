/* cases.h - test_grad.c's table: one forward graph per case, built on its
 * test module helpers (tb, param, op1, conv ...), whose output weigh() folds
 * into the loss; the gradient of every param is then checked against finite
 * differences. Included by test_grad.c after those helpers. */
#ifndef MGC_GRAD_CASES_H
#define MGC_GRAD_CASES_H

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

#endif
