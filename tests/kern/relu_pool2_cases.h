/* relu_pool2_cases.h - kernel cases of conv2d_relu_pool2 and its filter
 * gradient (issue 14, seed CNN speed; runtime/cpu/conv_pool.c) in double
 * precision: the forward against max_pool2d(y), y = relu(conv2d(x, w) +
 * bias), 2x2 windows of stride 2, and each window's pixel (its first maximum,
 * row-major, strict >; -1 where that maximum is not > 0); the gradient, given
 * pixels drawn at random (R_PIXELS, -1 .. 3), against conv2d_grad_filter(x,
 * dY), dY the pooled dy at each window's pixel. Included by test_kernels.c;
 * RELU_POOL2_CASES goes in its table. The cases reach the kernel's register
 * blocks (3x3 stride 1, other strides and dilations, 24 channels), its plain
 * loop (padding, several input channels, groups) and exact ties and zeros
 * (small integers: the first maximum, and -1). */
#ifndef MGC_KERN_RELU_POOL2_CASES_H
#define MGC_KERN_RELU_POOL2_CASES_H

/* the pooled shape of a [2, N, P, Q, C] output or input */
static ir_shape pooled_of(const ir_shape *f) {
    return ir_shape_make(4, (int64_t[4]){f->dim[1], f->dim[2], f->dim[3], f->dim[4]});
}

/* y = relu(conv2d(x, w) + bias) [N, 2P, 2Q, C] of the pooled shape p, allocated */
static double *ref_relu_conv(const one_op *t, double **in, const ir_shape *p, ir_shape *ys) {
    const ir_shape *w = ishape(t, 1);
    *ys = ir_shape_make(4, (int64_t[4]){p->dim[0], 2 * p->dim[1], 2 * p->dim[2], p->dim[3]});
    double *y = calloc((size_t)numel(ys), sizeof *y);
    conv_geom g = {ishape(t, 0), w, ys, ir_conv_of(onode(t), w)};
    CONV_LOOP(g, y[yi] += in[0][xi] * in[1][wi])
    for (int64_t i = 0; i < numel(ys); i++) y[i] = y[i] + in[2][i % ys->dim[3]] > 0 ? y[i] + in[2][i % ys->dim[3]] : 0;
    return y;
}

static void ref_conv2d_relu_pool2(const one_op *t, double **in, double *out) {
    ir_shape p = pooled_of(oshape(t)), ys;
    double *y = ref_relu_conv(t, in, &p, &ys);
    int64_t H = ys.dim[1], W = ys.dim[2], C = ys.dim[3], n = numel(&p);
    for (int64_t i = 0; i < n; i++) {
        int64_t c = i % C, pw = i / C % (W / 2), ph = i / (C * (W / 2)) % (H / 2), b = i / (C * (W / 2) * (H / 2));
        double best = -INFINITY;
        int arg = 0;
        for (int k = 0; k < 4; k++) {
            double v = y[((b * H + 2 * ph + k / 2) * W + 2 * pw + k % 2) * C + c];
            if (v > best) best = v, arg = k;
        }
        out[i] = best, out[n + i] = best > 0 ? arg : -1;
    }
    free(y);
}

/* the pooled dy at each window's pixel (input 2's second half), then the convolution's filter gradient */
static void ref_conv2d_relu_pool2_grad_filter(const one_op *t, double **in, double *out) {
    const ir_shape *w = oshape(t);
    ir_shape p = pooled_of(ishape(t, 2));
    ir_shape ys = ir_shape_make(4, (int64_t[4]){p.dim[0], 2 * p.dim[1], 2 * p.dim[2], p.dim[3]});
    int64_t H = ys.dim[1], W = ys.dim[2], C = ys.dim[3], n = numel(&p);
    double *dY = calloc((size_t)numel(&ys), sizeof *dY);
    for (int64_t i = 0; i < n; i++) {
        int64_t c = i % C, pw = i / C % (W / 2), ph = i / (C * (W / 2)) % (H / 2), b = i / (C * (W / 2) * (H / 2));
        int k = (int)in[2][n + i];
        if (k >= 0) dY[((b * H + 2 * ph + k / 2) * W + 2 * pw + k % 2) * C + c] = in[3][i];
    }
    conv_geom g = {ishape(t, 0), w, &ys, ir_conv_of(onode(t), w)};
    memset(out, 0, (size_t)numel(w) * sizeof *out);
    CONV_LOOP(g, out[wi] += in[0][xi] * dY[yi])
    free(dY);
}

#define RELU_POOL2_CONV(sh, sw, pt, pl, pb, pr, dh, dw, groups) .iattr = {sh, sw, pt, pl, pb, pr, dh, dw, groups}
/* a forward case and a gradient case: x, w, bias and dy's shapes, x's and w's fills, the attributes */
#define RELU_POOL2_PAIR(name, x, w, b, dy, fx, fw, ...)                                                                \
    {"conv2d_relu_pool2 " name, OP_CONV2D_RELU_POOL2, 3, {x, w, b}, .fill = {fx, fw, R_SIGNED}, __VA_ARGS__,          \
     .ref = ref_conv2d_relu_pool2},                                                                                    \
    {"conv2d_relu_pool2_grad_filter " name, OP_CONV2D_RELU_POOL2_GRAD_FILTER, 4, {x, w, "2," dy, dy},                  \
     .fill = {fx, fw, R_PIXELS, R_SIGNED}, __VA_ARGS__, .ref = ref_conv2d_relu_pool2_grad_filter},
#define RELU_POOL2_CASES                                                                                               \
    RELU_POOL2_PAIR("mnist", "3,28,28,1", "3,3,1,32", "32", "3,13,13,32", R_SIGNED, R_SIGNED,                         \
                    RELU_POOL2_CONV(1, 1, 0, 0, 0, 0, 1, 1, 1))                                                        \
    RELU_POOL2_PAIR("ties", "2,10,12,1", "3,3,1,32", "32", "2,4,5,32", R_SMALL_INT, R_SMALL_INT,                       \
                    RELU_POOL2_CONV(1, 1, 0, 0, 0, 0, 1, 1, 1))                                                        \
    RELU_POOL2_PAIR("stride 2, same", "2,15,15,1", "3,3,1,16", "16", "2,4,4,16", R_SIGNED, R_SIGNED,                  \
                    RELU_POOL2_CONV(2, 2, 1, 1, 1, 1, 1, 1, 1))                                                        \
    RELU_POOL2_PAIR("dilation 2, 24 channels", "2,12,14,1", "3,2,1,24", "24", "2,4,6,24", R_SIGNED, R_SIGNED,         \
                    RELU_POOL2_CONV(1, 1, 0, 0, 0, 0, 2, 2, 1))                                                        \
    RELU_POOL2_PAIR("channels, groups, padding", "2,12,10,4", "3,3,2,6", "6", "2,6,5,6", R_SIGNED, R_SIGNED,          \
                    RELU_POOL2_CONV(1, 1, 1, 1, 1, 1, 1, 1, 2))                                                        \
    RELU_POOL2_WINDOWS

/* the windows in registers (3x3, one input channel, channels a multiple of 8):
 * two vectors of channels at a time and one left over (40, 24), one vector (8),
 * a pair (16); windows in the padding beside them (a pixel at a time); odd
 * counts of windows, odd input sizes, batch 1 and 3; exact ties and exact zeros
 * of y (small integers: relu's 0 and the window's first maximum); stride 2 and
 * dilation 2 (their own sums in registers) */
#define RELU_POOL2_WINDOWS                                                                                             \
    RELU_POOL2_PAIR("ties, 40 channels, batch 3", "3,10,8,1", "3,3,1,40", "40", "3,4,3,40",                            \
                    R_SMALL_INT, R_SMALL_INT, RELU_POOL2_CONV(1, 1, 0, 0, 0, 0, 1, 1, 1))                              \
    RELU_POOL2_PAIR("zeros of y, 16 channels", "2,8,8,1", "3,3,1,16", "16", "2,3,3,16",                                \
                    R_SMALL_INT, R_SIGNED, RELU_POOL2_CONV(1, 1, 0, 0, 0, 0, 1, 1, 1))                                 \
    RELU_POOL2_PAIR("same padding, 8 channels, batch 1", "1,12,10,1", "3,3,1,8", "8", "1,6,5,8",                       \
                    R_SIGNED, R_SIGNED, RELU_POOL2_CONV(1, 1, 1, 1, 1, 1, 1, 1, 1))                                    \
    RELU_POOL2_PAIR("odd sizes, padding top and right, 24 channels", "3,15,13,1", "3,3,1,24", "24", "3,7,6,24",        \
                    R_SIGNED, R_SIGNED, RELU_POOL2_CONV(1, 1, 1, 0, 0, 1, 1, 1, 1))                                    \
    RELU_POOL2_PAIR("ties, padding top and right, 32 channels, batch 1", "1,9,11,1", "3,3,1,32", "32", "1,4,5,32",     \
                    R_SMALL_INT, R_SMALL_INT, RELU_POOL2_CONV(1, 1, 1, 0, 0, 1, 1, 1, 1))                              \
    RELU_POOL2_PAIR("dilation 2, 3x3, 8 channels", "2,14,12,1", "3,3,1,8", "8", "2,5,4,8",                             \
                    R_SIGNED, R_SIGNED, RELU_POOL2_CONV(1, 1, 0, 0, 0, 0, 2, 2, 1))                                    \
    RELU_POOL2_PAIR("stride 2, 3x3, 24 channels", "1,17,21,1", "3,3,1,24", "24", "1,4,5,24",                           \
                    R_SMALL_INT, R_SMALL_INT, RELU_POOL2_CONV(2, 2, 0, 0, 0, 0, 1, 1, 1))

#endif
