/* bn_epilogue_cases.h - kernel cases of conv2d_bn_epilogue (issue 14) against
 * the unfused composition in double precision: act((c - mean) * scale + beta
 * [+ residual]), c its input 2 in training and conv2d(x, w) outside it (eval
 * and predict, where the kernel runs the convolution of the filter times the
 * scale from the bias beta - mean * scale, or the HWIO convolution and a pass). Included by test_kernels.c after
 * epilogue_cases.h; BN_EPILOGUE_CASES goes in its table. */
#ifndef MGC_KERN_BN_EPILOGUE_CASES_H
#define MGC_KERN_BN_EPILOGUE_CASES_H

static void ref_conv2d_bn_epilogue(const one_op *t, double **in, double *out) {
    const ir_shape *o = oshape(t);
    int64_t c = o->dim[3], act = onode(t)->iattr[9];
    if (t->training) {
        memcpy(out, in[2], (size_t)numel(o) * sizeof *out);
    } else {
        conv_geom g = {ishape(t, 0), ishape(t, 1), o, ir_conv_of(onode(t), ishape(t, 1))};
        memset(out, 0, (size_t)numel(o) * sizeof *out);
        CONV_LOOP(g, out[yi] += in[0][xi] * in[1][wi])
    }
    for (int64_t i = 0; i < numel(o); i++) {
        double v = (out[i] - in[3][i % c]) * in[4][i % c] + in[5][i % c] + (t->n_in == 7 ? in[6][i] : 0);
        out[i] = act == EPI_RELU ? (v > 0 ? v : 0) : act == EPI_TANH ? tanh(v) : act == EPI_SIGMOID ? 1 / (1 + exp(-v)) : v;
    }
}

#define BN_CONV(sh, sw, p, groups, act) .iattr = {sh, sw, p, p, p, p, 1, 1, groups, act}
#define BN_EPILOGUE_CASES                                                                                              \
    {"conv2d_bn_epilogue train relu", OP_CONV2D_BN_EPILOGUE, 6, {"2,9,8,3", "3,3,3,4", "2,7,6,4", "4", "4", "4"},      \
     BN_CONV(1, 1, 0, 1, EPI_RELU), .ref = ref_conv2d_bn_epilogue},                                                    \
    {"conv2d_bn_epilogue train residual tanh", OP_CONV2D_BN_EPILOGUE, 7,                                               \
     {"2,9,8,3", "3,3,3,4", "2,7,6,4", "4", "4", "4", "2,7,6,4"}, BN_CONV(1, 1, 0, 1, EPI_TANH),                       \
     .ref = ref_conv2d_bn_epilogue},                                                                                   \
    {"conv2d_bn_epilogue eval same relu", OP_CONV2D_BN_EPILOGUE, 6, {"2,9,8,3", "3,3,3,16", "2,9,8,16", "16", "16",    \
     "16"}, BN_CONV(1, 1, 1, 1, EPI_RELU), .ref = ref_conv2d_bn_epilogue, .eval = 1},                                  \
    {"conv2d_bn_epilogue eval residual relu", OP_CONV2D_BN_EPILOGUE, 7,                                                \
     {"2,9,8,3", "3,3,3,4", "2,7,6,4", "4", "4", "4", "2,7,6,4"}, BN_CONV(1, 1, 0, 1, EPI_RELU),                       \
     .ref = ref_conv2d_bn_epilogue, .eval = 1},                                                                        \
    {"conv2d_bn_epilogue eval stride 2 residual none", OP_CONV2D_BN_EPILOGUE, 7,                                       \
     {"2,9,8,3", "3,3,3,4", "2,5,4,4", "4", "4", "4", "2,5,4,4"}, BN_CONV(2, 2, 1, 1, EPI_NONE),                       \
     .ref = ref_conv2d_bn_epilogue, .eval = 1},                                                                        \
    {"conv2d_bn_epilogue eval projection 1x1 stride 2", OP_CONV2D_BN_EPILOGUE, 6,                                      \
     {"2,8,8,3", "1,1,3,5", "2,4,4,5", "5", "5", "5"}, BN_CONV(2, 2, 0, 1, EPI_NONE), .ref = ref_conv2d_bn_epilogue,    \
     .eval = 1},                                                                                                       \
    {"conv2d_bn_epilogue eval depthwise sigmoid", OP_CONV2D_BN_EPILOGUE, 6,                                            \
     {"2,8,8,3", "3,3,1,6", "2,4,4,6", "6", "6", "6"}, BN_CONV(2, 2, 1, 3, EPI_SIGMOID),                               \
     .ref = ref_conv2d_bn_epilogue, .eval = 1},

#endif
