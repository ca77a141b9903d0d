/* batch_norm_cases.h - issue 14 (batch norm in training): kernel cases of
 * channel_mean, channel_var, channel_sum_dot, channel_sum_dot_relu and
 * scale_shift against double loops;
 * included by test_kernels.c after its helpers, BATCH_NORM_CASES ends its table. */
#ifndef MGC_KERN_BATCH_NORM_CASES_H
#define MGC_KERN_BATCH_NORM_CASES_H

/* x [..., c] as [rows, c]: channel_mean = mean over rows, channel_var(x, m) =
 * mean((x - m)^2), scale_shift(x, m, s, b) = (x - m) s + b, channel_sum_dot(x,
 * m, dy) = [sum(dy); sum(dy (x - m))], channel_sum_dot_relu(x, m, y, dy) =
 * channel_sum_dot(x, m, y > 0 ? dy : 0) */
static void ref_channel(const one_op *t, double **in, double *out) {
    const ir_shape *s = ishape(t, 0);
    int64_t c = s->dim[s->rank - 1], rows = numel(s) / c;
    ir_op op = onode(t)->op;
    if (op == OP_SCALE_SHIFT) {
        for (int64_t k = 0; k < rows * c; k++) out[k] = (in[0][k] - in[1][k % c]) * in[2][k % c] + in[3][k % c];
        return;
    }
    if (op == OP_CHANNEL_SUM_DOT || op == OP_CHANNEL_SUM_DOT_RELU) {
        const double *y = op == OP_CHANNEL_SUM_DOT_RELU ? in[2] : NULL, *dy = y ? in[3] : in[2];
        for (int64_t j = 0; j < c; j++) {
            double sum = 0, dot = 0;
            for (int64_t r = 0; r < rows; r++) {
                double g = y && !(y[r * c + j] > 0) ? 0 : dy[r * c + j];
                sum += g, dot += g * (in[0][r * c + j] - in[1][j]);
            }
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
    {"channel_sum_dot_relu [4,8,8,16]", OP_CHANNEL_SUM_DOT_RELU, 4, {"4,8,8,16", "16", "4,8,8,16", "4,8,8,16"},      \
     .fill = {R_WIDE, R_SIGNED, R_SIGNED, R_SIGNED}, .ref = ref_channel},                                             \
    {"channel_sum_dot_relu [3,47,300]", OP_CHANNEL_SUM_DOT_RELU, 4, {"3,47,300", "300", "3,47,300", "3,47,300"},     \
     .fill = {0, 0, R_SIGNED}, .ref = ref_channel},                                                                   \
    {"channel_sum_dot_relu [1,1]", OP_CHANNEL_SUM_DOT_RELU, 4, {"1,1", "1", "1,1", "1,1"}, .ref = ref_channel},     \
    {"scale_shift [4,8,8,16]", OP_SCALE_SHIFT, 4, {"4,8,8,16", "16", "16", "16"}, .fill = {R_WIDE},                   \
     .ref = ref_channel},                                                                                             \
    {"scale_shift [3,47,300]", OP_SCALE_SHIFT, 4, {"3,47,300", "300", "300", "300"}, .ref = ref_channel},

/* channel_sum_dot_relu(x, m, y, dy) against channel_sum_dot(x, m,
 * relu_grad(y, dy)), what the epilogue pass replaces, bit for bit (the fold
 * must not change a trained bit): y with -0, +0, NaN and negatives, dy with
 * NaN where y <= 0 (relu_grad drops it), shapes past the column chunk and
 * the row block */
static int test_sum_dot_relu_exact(void) {
    static const char *const shapes[][2] = {{"4,8,8,16", "16"}, {"3,47,300", "300"}, {"1,1", "1"}};
    const float specials[] = {-0.0f, 0.0f, NAN, -1.0f};
    int failed = 0;
    unsigned seed = 12345u;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        char err[256] = "";
        ir_shape x = kh_shape(shapes[s][0]), c = kh_shape(shapes[s][1]);
        int64_t n = numel(&x), ch = numel(&c);
        one_op f, g, d; /* fold; relu_grad; channel_sum_dot of its output */
        int bad = kh_build(&f, OP_CHANNEL_SUM_DOT_RELU, 4, (ir_shape[]){x, c, x, x},
                           (ir_dtype[]){IR_F32, IR_F32, IR_F32, IR_F32}, (int64_t[IR_MAX_IATTR]){0}, (double[6]){0},
                           NULL, 0, err, sizeof err);
        bad = bad || kh_build(&g, OP_RELU_GRAD, 2, (ir_shape[]){x, x}, (ir_dtype[]){IR_F32, IR_F32},
                              (int64_t[IR_MAX_IATTR]){0}, (double[6]){0}, NULL, 0, err, sizeof err);
        bad = bad || kh_build(&d, OP_CHANNEL_SUM_DOT, 3, (ir_shape[]){x, c, x}, (ir_dtype[]){IR_F32, IR_F32, IR_F32},
                              (int64_t[IR_MAX_IATTR]){0}, (double[6]){0}, NULL, 0, err, sizeof err);
        if (bad) {
            fprintf(stderr, "FAIL channel_sum_dot_relu exact %s: %s\n", shapes[s][0], err);
            return failed + 1;
        }
        float *xv = f.in[0], *mv = f.in[1], *yv = f.in[2], *dyv = f.in[3];
        for (int64_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            float u = (float)((seed >> 8) & 0xffff) / 65536.0f;
            xv[i] = 4 * u - 1, yv[i] = (seed >> 4) % 4 == 0 ? specials[(seed >> 6) % 4] : 2 * u - 0.9f;
            dyv[i] = !(yv[i] > 0) && i % 7 == 3 ? NAN : 1 - 2 * u * u;
        }
        for (int64_t j = 0; j < ch; j++) mv[j] = 0.25f * (float)j - 0.5f;
        memcpy(g.in[0], yv, (size_t)n * sizeof *yv), memcpy(g.in[1], dyv, (size_t)n * sizeof *dyv);
        memcpy(d.in[0], xv, (size_t)n * sizeof *xv), memcpy(d.in[1], mv, (size_t)ch * sizeof *mv);
        bad = kh_run(&f, err, sizeof err) || kh_run(&g, err, sizeof err) ||
              (memcpy(d.in[2], g.out, (size_t)n * sizeof(float)), kh_run(&d, err, sizeof err));
        if (bad || memcmp(f.out, d.out, 2 * (size_t)ch * sizeof(float))) {
            int64_t j = 0;
            while (!bad && !memcmp(&((float *)f.out)[j], &((float *)d.out)[j], sizeof(float))) j++;
            fprintf(stderr, "FAIL channel_sum_dot_relu exact %s: %s out[%lld] %.9g, unfolded %.9g\n", shapes[s][0],
                    err, (long long)j, bad ? 0.0 : ((float *)f.out)[j], bad ? 0.0 : ((float *)d.out)[j]);
            failed++;
        }
        kh_free(&f), kh_free(&g), kh_free(&d);
    }
    return failed;
}

#endif
