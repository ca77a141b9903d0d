/* act_cases.h - kernel cases of the issue 12 ops (activations, elementwise
 * math, in_top_k) with their double-precision references;
 * included by test_kernels.c after its helpers, ACT_CASES ends its table. */
#ifndef MGC_KERN_ACT_CASES_H
#define MGC_KERN_ACT_CASES_H

static const double SELU_A = 1.6732632423543772848170429916717, SELU_S = 1.0507009873554804934193349852946;

static double phi(double x) { return 0.5 * (1 + erf(x / sqrt(2.0))); }

/* Keras' formulas, in double */
static double r_act(ir_op op, double x, double dy, double alpha) {
    switch (op) {
    case OP_ABS: return fabs(x);
    case OP_ERF: return erf(x);
    case OP_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case OP_SOFTPLUS: return log(1 + exp(x));
    case OP_SELU: return SELU_S * (x > 0 ? x : SELU_A * (exp(x) - 1));
    case OP_ELU: return x > 0 ? x : alpha * (exp(x) - 1);
    case OP_LEAKY_RELU: return x > 0 ? x : alpha * x;
    case OP_ABS_GRAD: return x > 0 ? dy : x < 0 ? -dy : 0;
    case OP_ERF_GRAD: return dy * 2 / sqrt(M_PI) * exp(-x * x);
    case OP_GELU_GRAD: return dy * (phi(x) + x * exp(-x * x / 2) / sqrt(2 * M_PI));
    case OP_SELU_GRAD: return dy * SELU_S * (x > 0 ? 1 : SELU_A * exp(x));
    case OP_ELU_GRAD: return dy * (x > 0 ? 1 : alpha * exp(x));
    case OP_LEAKY_RELU_GRAD: return dy * (x > 0 ? 1 : alpha);
    case OP_MAXIMUM: return x >= dy ? x : dy;
    case OP_MINIMUM: return x <= dy ? x : dy;
    case OP_POW: return pow(x, dy);
    default: return NAN;
    }
}

static void ref_act(const one_op *t, double **in, double *out) {
    const ir_shape *o = oshape(t);
    for (int64_t i = 0; i < numel(o); i++) {
        double a = in[0][bidx(o, ishape(t, 0), i)], b = t->n_in > 1 ? in[1][bidx(o, ishape(t, 1), i)] : 0;
        out[i] = r_act(onode(t)->op, a, b, onode(t)->fattr[0]);
    }
}

/* in_top_k: the label's logit is among the k largest, ties counting as in */
static void ref_in_top_k(const one_op *t, double **in, double *out) {
    int64_t B = ishape(t, 0)->dim[0], C = ishape(t, 0)->dim[1];
    for (int64_t b = 0; b < B; b++) {
        int64_t lab = (int64_t)in[1][b], rank = 0;
        for (int64_t j = 0; j < C; j++) rank += in[0][b * C + j] > in[0][b * C + lab];
        out[b] = rank < onode(t)->iattr[0];
    }
}

#define ACT_CASES                                                                                                 \
    {"abs", OP_ABS, 1, {"4,33"}, .fill = {R_WIDE}, .ref = ref_act},                                           \
    {"erf", OP_ERF, 1, {"4,33"}, .fill = {R_SIGNED}, .ref = ref_act},                                         \
    {"gelu", OP_GELU, 1, {"4,33"}, .fill = {R_WIDE}, .ref = ref_act},                                         \
    {"softplus", OP_SOFTPLUS, 1, {"4,33"}, .fill = {R_WIDE}, .ref = ref_act},                                 \
    {"selu", OP_SELU, 1, {"4,33"}, .fill = {R_WIDE}, .ref = ref_act},                                         \
    {"elu alpha 1", OP_ELU, 1, {"4,33"}, .fill = {R_WIDE}, .fattr = {1.0}, .ref = ref_act},                  \
    {"elu alpha 0.5", OP_ELU, 1, {"4,33"}, .fattr = {0.5}, .ref = ref_act},                                  \
    {"leaky_relu", OP_LEAKY_RELU, 1, {"4,33"}, .fattr = {0.2}, .ref = ref_act},                              \
    {"maximum broadcast", OP_MAXIMUM, 2, {"4,1,5", "3,5"}, .ref = ref_act},                                   \
    {"maximum ties", OP_MAXIMUM, 2, {"9,8", "8"}, .fill = {R_SMALL_INT, R_SMALL_INT}, .ref = ref_act},        \
    {"minimum scalar", OP_MINIMUM, 2, {"6,7", ""}, .ref = ref_act},                                           \
    {"minimum ties", OP_MINIMUM, 2, {"9,8", "9,8"}, .fill = {R_SMALL_INT, R_SMALL_INT}, .ref = ref_act},      \
    {"pow", OP_POW, 2, {"5,13", "5,13"}, .fill = {R_POSITIVE, R_SIGNED}, .ref = ref_act},                    \
    {"pow scalar exponent", OP_POW, 2, {"5,13", ""}, .fill = {R_SIGNED, R_SMALL_INT}, .ref = ref_act},       \
    {"abs_grad", OP_ABS_GRAD, 2, {"3,41", "3,41"}, .ref = ref_act},                                           \
    {"erf_grad", OP_ERF_GRAD, 2, {"3,41", "3,41"}, .ref = ref_act},                                           \
    {"gelu_grad", OP_GELU_GRAD, 2, {"3,41", "3,41"}, .fill = {R_WIDE, R_SIGNED}, .ref = ref_act},            \
    {"selu_grad", OP_SELU_GRAD, 2, {"3,41", "3,41"}, .fill = {R_WIDE, R_SIGNED}, .ref = ref_act},            \
    {"elu_grad", OP_ELU_GRAD, 2, {"3,41", "3,41"}, .fattr = {0.7}, .ref = ref_act},                          \
    {"leaky_relu_grad", OP_LEAKY_RELU_GRAD, 2, {"3,41", "3,41"}, .fattr = {0.3}, .ref = ref_act},            \
    {"in_top_k k 3", OP_IN_TOP_K, 2, {"64,10", "64"}, LAB, .iattr = {3}, .ref = ref_in_top_k},              \
    {"in_top_k k 1", OP_IN_TOP_K, 2, {"64,10", "64"}, LAB, .iattr = {1}, .ref = ref_in_top_k},              \
    {"in_top_k ties", OP_IN_TOP_K, 2, {"64,10", "64"}, .dtype = {0, IR_I32}, .fill = {R_SMALL_INT, R_LABELS}, \
     .iattr = {2}, .ref = ref_in_top_k},

#endif
