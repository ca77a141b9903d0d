/* batch_norm_cases.h - issue 14 (batch norm in training): kernel cases of
 * channel_mean, channel_var, channel_sum_dot and scale_shift against double
 * loops;
 * included by test_kernels.c after its helpers, BATCH_NORM_CASES ends its table. */
#ifndef MGC_KERN_BATCH_NORM_CASES_H
#define MGC_KERN_BATCH_NORM_CASES_H

/* x [..., c] as [rows, c]: channel_mean = mean over rows, channel_var(x, m) =
 * mean((x - m)^2), scale_shift(x, m, s, b) = (x - m) s + b, channel_sum_dot(x,
 * m, dy) = [sum(dy); sum(dy (x - m))] */
static void ref_channel(const one_op *t, double **in, double *out) {
    const ir_shape *s = ishape(t, 0);
    int64_t c = s->dim[s->rank - 1], rows = numel(s) / c;
    ir_op op = onode(t)->op;
    if (op == OP_SCALE_SHIFT) {
        for (int64_t k = 0; k < rows * c; k++) out[k] = (in[0][k] - in[1][k % c]) * in[2][k % c] + in[3][k % c];
        return;
    }
    if (op == OP_CHANNEL_SUM_DOT) {
        for (int64_t j = 0; j < c; j++) {
            double sum = 0, dot = 0;
            for (int64_t r = 0; r < rows; r++)
                sum += in[2][r * c + j], dot += in[2][r * c + j] * (in[0][r * c + j] - in[1][j]);
            out[j] = sum, out[c + j] = dot;
        }
        return;
    }
    for (int64_t j = 0; j < c; j++) {
        double sum = 0;
        for (int64_t r = 0; r < rows; r++) {
            double x = in[0][r * c + j], dev = op == OP_CHANNEL_MEAN ? x : x - in[1][j];
            sum += op == OP_CHANNEL_VAR ? dev * dev : dev;
        }
        out[j] = sum / (double)rows;
    }
}

/* ResNet-20's 16 channels; more than 256 channels (the column chunks) over
 * more than 64 rows (the row blocks) and a tail of each; one row, one channel */
#define BATCH_NORM_CASES                                                                                              \
    {"channel_mean [4,8,8,16]", OP_CHANNEL_MEAN, 1, {"4,8,8,16"}, .fill = {R_WIDE}, .ref = ref_channel},            \
    {"channel_mean [3,47,300]", OP_CHANNEL_MEAN, 1, {"3,47,300"}, .ref = ref_channel},                                \
    {"channel_mean [1,7]", OP_CHANNEL_MEAN, 1, {"1,7"}, .ref = ref_channel},                                          \
    {"channel_var [4,8,8,16]", OP_CHANNEL_VAR, 2, {"4,8,8,16", "16"}, .fill = {R_WIDE, R_SIGNED}, .ref = ref_channel}, \
    {"channel_var [3,47,300]", OP_CHANNEL_VAR, 2, {"3,47,300", "300"}, .ref = ref_channel},                           \
    {"channel_var [9,1]", OP_CHANNEL_VAR, 2, {"9,1", "1"}, .ref = ref_channel},                                       \
    {"channel_sum_dot [4,8,8,16]", OP_CHANNEL_SUM_DOT, 3, {"4,8,8,16", "16", "4,8,8,16"},                             \
     .fill = {R_WIDE, R_SIGNED, R_SIGNED}, .ref = ref_channel},                                                       \
    {"channel_sum_dot [3,47,300]", OP_CHANNEL_SUM_DOT, 3, {"3,47,300", "300", "3,47,300"}, .ref = ref_channel},       \
    {"channel_sum_dot [1,1]", OP_CHANNEL_SUM_DOT, 3, {"1,1", "1", "1,1"}, .ref = ref_channel},                        \
    {"scale_shift [4,8,8,16]", OP_SCALE_SHIFT, 4, {"4,8,8,16", "16", "16", "16"}, .fill = {R_WIDE},                   \
     .ref = ref_channel},                                                                                             \
    {"scale_shift [3,47,300]", OP_SCALE_SHIFT, 4, {"3,47,300", "300", "300", "300"}, .ref = ref_channel},

#endif
