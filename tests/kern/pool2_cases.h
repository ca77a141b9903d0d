/* pool2_cases.h - kernel cases of conv2d_grad_filter_pool2 (issue 14, seed CNN
 * speed) against the unfused composition in double precision:
 * conv2d_grad_filter(x, max_pool2d_relu_grad(y, dy)), 2x2 windows of stride
 * 2. Included by test_kernels.c after epilogue_cases.h (ref_max_pool_relu_grad);
 * POOL2_CASES goes in its table. */
#ifndef MGC_KERN_POOL2_CASES_H
#define MGC_KERN_POOL2_CASES_H

static void ref_conv2d_grad_filter_pool2(const one_op *t, double **in, double *out) {
    const ir_shape *y = ishape(t, 1), *w = oshape(t);
    int64_t ny = numel(y), H = y->dim[1], W = y->dim[2], C = y->dim[3];
    double *dx = calloc((size_t)ny, sizeof *dx);
    /* the pool gradient: each window's first maximum (row-major, strict >) gets dy when it is > 0 */
    for (int64_t i = 0; i < numel(ishape(t, 2)); i++) {
        int64_t c = i % C, pw = i / C % (W / 2), ph = i / (C * (W / 2)) % (H / 2), b = i / (C * (W / 2) * (H / 2)), arg = -1;
        double best = -INFINITY;
        for (int64_t r = 0; r < 2; r++)
            for (int64_t s = 0; s < 2; s++) {
                int64_t yi = ((b * H + 2 * ph + r) * W + 2 * pw + s) * C + c;
                if (in[1][yi] > best) best = in[1][yi], arg = yi;
            }
        if (arg >= 0 && best > 0) dx[arg] = in[2][i];
    }
    conv_geom g = {ishape(t, 0), w, y, ir_conv_of(onode(t), w)};
    memset(out, 0, (size_t)numel(w) * sizeof *out);
    CONV_LOOP(g, out[wi] += in[0][xi] * dx[yi])
    free(dx);
}

#define POOL2_CONV(sh, sw, pt, pl, pb, pr, groups) .iattr = {sh, sw, pt, pl, pb, pr, 1, 1, groups}
#define POOL2_CASES                                                                                                    \
    {"conv2d_grad_filter_pool2 mnist (direct)", OP_CONV2D_GRAD_FILTER_POOL2, 3, {"3,28,28,1", "3,26,26,32", "3,13,13,32"}, \
     POOL2_CONV(1, 1, 0, 0, 0, 0, 1), .given = "3,3,1,32", .ref = ref_conv2d_grad_filter_pool2},                       \
    {"conv2d_grad_filter_pool2 ties", OP_CONV2D_GRAD_FILTER_POOL2, 3, {"2,9,9,1", "2,8,8,16", "2,4,4,16"},             \
     .fill = {R_SIGNED, R_SMALL_INT, R_SIGNED}, POOL2_CONV(1, 1, 0, 0, 0, 0, 1), .given = "2,2,1,16",                 \
     .ref = ref_conv2d_grad_filter_pool2},                                                                             \
    {"conv2d_grad_filter_pool2 channels, stride 2, same", OP_CONV2D_GRAD_FILTER_POOL2, 3,                              \
     {"2,12,7,3", "2,6,4,5", "2,3,2,5"}, POOL2_CONV(2, 2, 1, 1, 1, 1, 1), .given = "3,3,3,5",                          \
     .ref = ref_conv2d_grad_filter_pool2},                                                                             \
    {"conv2d_grad_filter_pool2 groups", OP_CONV2D_GRAD_FILTER_POOL2, 3, {"2,9,8,4", "2,8,8,6", "2,4,4,6"},             \
     POOL2_CONV(1, 1, 0, 0, 0, 1, 2), .given = "2,2,2,6", .ref = ref_conv2d_grad_filter_pool2},

#endif
