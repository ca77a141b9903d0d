/* epilogue_cases.h - kernel cases of the issue 14 fused ops against the
 * unfused composition in double precision: act(core + bias [+ residual]) and
 * the max-pool gradient masked by x > 0; included by test_kernels.c after its
 * helpers, EPILOGUE_CASES ends its table. */
#ifndef MGC_KERN_EPILOGUE_CASES_H
#define MGC_KERN_EPILOGUE_CASES_H

/* out = act(out + bias [+ residual]), bias (input 2) along the last axis */
static void ref_epilogue_tail(const one_op *t, double **in, double *out, int64_t act) {
    const ir_shape *o = oshape(t);
    int64_t c = o->dim[o->rank - 1];
    for (int64_t i = 0; i < numel(o); i++) {
        double v = out[i] + in[2][i % c] + (t->n_in == 4 ? in[3][i] : 0);
        out[i] = act == EPI_RELU ? (v > 0 ? v : 0) : act == EPI_TANH ? tanh(v) : act == EPI_SIGMOID ? 1 / (1 + exp(-v)) : v;
    }
}

static void ref_conv2d_epilogue(const one_op *t, double **in, double *out) {
    conv_geom g = {ishape(t, 0), ishape(t, 1), oshape(t), ir_conv_of(onode(t), ishape(t, 1))};
    memset(out, 0, (size_t)numel(oshape(t)) * sizeof *out);
    CONV_LOOP(g, out[yi] += in[0][xi] * in[1][wi])
    ref_epilogue_tail(t, in, out, onode(t)->iattr[9]);
}

static void ref_matmul_epilogue(const one_op *t, double **in, double *out) {
    ref_matmul(t, in, out);
    ref_epilogue_tail(t, in, out, onode(t)->iattr[2]);
}

/* max_pool2d_grad (first maximum of each window) times (x > 0) */
static void ref_max_pool_relu_grad(const one_op *t, double **in, double *out) {
    const int64_t *a = onode(t)->iattr; /* k_h, k_w, stride_h, stride_w, pad_t, pad_l */
    const ir_shape *x = ishape(t, 0), *y = ishape(t, 1);
    memset(out, 0, (size_t)numel(x) * sizeof *out);
    for (int64_t i = 0; i < numel(y); i++) {
        int64_t c = i % y->dim[3], ow = i / y->dim[3] % y->dim[2], oh = i / (y->dim[3] * y->dim[2]) % y->dim[1];
        int64_t b = i / (y->dim[3] * y->dim[2] * y->dim[1]), arg = -1;
        double best = -INFINITY;
        for (int64_t r = 0; r < a[0]; r++)
            for (int64_t s = 0; s < a[1]; s++) {
                int64_t ih = oh * a[2] - a[4] + r, iw = ow * a[3] - a[5] + s;
                if (ih < 0 || iw < 0 || ih >= x->dim[1] || iw >= x->dim[2]) continue;
                int64_t xi = ((b * x->dim[1] + ih) * x->dim[2] + iw) * x->dim[3] + c;
                if (in[0][xi] > best) best = in[0][xi], arg = xi;
            }
        if (arg >= 0) out[arg] += in[1][i];
    }
    for (int64_t i = 0; i < numel(x); i++)
        if (!(in[0][i] > 0)) out[i] = 0;
}

#define EPI_CONV(act) .iattr = {1, 1, 0, 0, 0, 0, 1, 1, 1, act}
#define EPILOGUE_CASES                                                                                                 \
    {"conv2d_epilogue mnist relu", OP_CONV2D_EPILOGUE, 3, {"4,28,28,1", "3,3,1,32", "32"}, EPI_CONV(EPI_RELU),         \
     .ref = ref_conv2d_epilogue},                                                                                      \
    {"conv2d_epilogue bias only", OP_CONV2D_EPILOGUE, 3, {"2,9,8,3", "3,3,3,4", "4"}, EPI_CONV(EPI_NONE),              \
     .ref = ref_conv2d_epilogue},                                                                                      \
    {"conv2d_epilogue residual relu", OP_CONV2D_EPILOGUE, 4, {"2,9,8,3", "3,3,3,4", "4", "2,7,6,4"},                   \
     EPI_CONV(EPI_RELU), .ref = ref_conv2d_epilogue},                                                                  \
    {"conv2d_epilogue stride 2 same tanh", OP_CONV2D_EPILOGUE, 3, {"2,9,8,3", "3,3,3,5", "5"},                         \
     .iattr = {2, 2, 1, 1, 1, 1, 1, 1, 1, EPI_TANH}, .ref = ref_conv2d_epilogue},                                      \
    {"conv2d_epilogue depthwise sigmoid residual", OP_CONV2D_EPILOGUE, 4, {"2,8,8,3", "3,3,1,6", "6", "2,4,4,6"},      \
     .iattr = {2, 2, 1, 1, 1, 1, 1, 1, 3, EPI_SIGMOID}, .ref = ref_conv2d_epilogue},                                   \
    {"matmul_epilogue dense relu", OP_MATMUL_EPILOGUE, 3, {"64,300", "300,128", "128"}, .iattr = {0, 0, EPI_RELU},     \
     .ref = ref_matmul_epilogue},                                                                                      \
    {"matmul_epilogue logits", OP_MATMUL_EPILOGUE, 3, {"6,5", "5,10", "10"}, .iattr = {0, 0, EPI_NONE},                \
     .ref = ref_matmul_epilogue},                                                                                      \
    {"matmul_epilogue rank 3 residual tanh", OP_MATMUL_EPILOGUE, 4, {"2,3,5", "5,4", "4", "2,3,4"},                    \
     .iattr = {0, 0, EPI_TANH}, .ref = ref_matmul_epilogue},                                                           \
    {"matmul_epilogue transposed sigmoid", OP_MATMUL_EPILOGUE, 3, {"5,6", "7,5", "7"}, .iattr = {1, 1, EPI_SIGMOID},   \
     .ref = ref_matmul_epilogue},                                                                                      \
    {"max_pool2d_relu_grad mnist", OP_MAX_POOL2D_RELU_GRAD, 2, {"4,26,26,32", "4,13,13,32"},                           \
     POOL(2, 2, 2, 2, 0, 0, 0, 0), .ref = ref_max_pool_relu_grad},                                                     \
    {"max_pool2d_relu_grad ties", OP_MAX_POOL2D_RELU_GRAD, 2, {"2,8,6,3", "2,4,3,3"}, .fill = {R_SMALL_INT, 0},        \
     POOL(2, 2, 2, 2, 0, 0, 0, 0), .ref = ref_max_pool_relu_grad},                                                     \
    {"max_pool2d_relu_grad 3x3 s2 pad", OP_MAX_POOL2D_RELU_GRAD, 2, {"2,9,7,3", "2,5,4,3"},                            \
     POOL(3, 3, 2, 2, 1, 1, 1, 1), .ref = ref_max_pool_relu_grad},                                                     \
    {"max_pool2d_relu_grad 2x2 odd size", OP_MAX_POOL2D_RELU_GRAD, 2, {"2,7,9,5", "2,3,4,5"},                          \
     POOL(2, 2, 2, 2, 0, 0, 0, 0), .ref = ref_max_pool_relu_grad},                                                     \
    {"max_pool2d_grad ties", OP_MAX_POOL2D_GRAD, 2, {"2,8,6,3", "2,4,3,3"}, .fill = {R_SMALL_INT, 0},                  \
     POOL(2, 2, 2, 2, 0, 0, 0, 0), .ref = ref_pool},                                                                   \
    {"max_pool2d_grad many channels", OP_MAX_POOL2D_GRAD, 2, {"2,6,6,70", "2,3,3,70"}, POOL(2, 2, 2, 2, 0, 0, 0, 0),   \
     .ref = ref_pool},

#endif
