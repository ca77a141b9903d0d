/* winograd_cases.h (issue 14, ResNet-20 speed) - the "winograd" candidate of
 * conv2d, conv2d_epilogue, conv2d_grad_input and conv2d_grad_filter
 * (runtime/cpu/conv_winograd.c) forced by MGC_KERNELS=winograd against the
 * double reference, then measured (auto): whole and partial 4x4 tiles,
 * padding 0, 1 and asymmetric, channel counts 4, 5, 10, 13, 16, 17, 24, 32,
 * 64 (the micro-kernel's products) and 72 (OpenBLAS's), batch > 1 and several
 * blocks of tiles, the last partial; each forced run twice, bit for bit (on
 * AVX-512 machines a third time on the AVX2 path: the same bits); the worst
 * error as a share of the tolerance printed. Nodes it must not run (stride 2, a 5x5 or 3x2
 * filter, dilation, groups, fewer than 4 channels in or out, two threads) are
 * not its (applies 0) and still give the reference under MGC_KERNELS=winograd. WG_VERBOSE=1 prints each
 * case's error. Included by test_kernels.c after run_case. */
#ifndef MGC_KERN_WINOGRAD_CASES_H
#define MGC_KERN_WINOGRAD_CASES_H

#define WG_SAME CONV(1, 1, 1, 1, 1, 1)
#define WG_EPI(pt, pl, pb, pr, act) .iattr = {1, 1, pt, pl, pb, pr, 1, 1, 1, act}

static const tcase winograd_cases[] = {
    /* ResNet-20's layers after the first (batch 2 and 3): 28x28 (whole tiles), 14x14 (a partial row and column), 7x7 */
    {"winograd conv2d 28x28 16->16 same", OP_CONV2D, 2, {"2,28,28,16", "3,3,16,16"}, WG_SAME, .ref = ref_conv},
    {"winograd conv2d 14x14 32->32 same", OP_CONV2D, 2, {"3,14,14,32", "3,3,32,32"}, WG_SAME, .ref = ref_conv},
    {"winograd conv2d 7x7 64->64 same", OP_CONV2D, 2, {"2,7,7,64", "3,3,64,64"}, WG_SAME, .ref = ref_conv},
    {"winograd conv2d valid 5->4", OP_CONV2D, 2, {"2,9,11,5", "3,3,5,4"}, CONV(1, 1, 0, 0, 0, 0), .ref = ref_conv},
    {"winograd conv2d asymmetric 13->10", OP_CONV2D, 2, {"2,6,5,13", "3,3,13,10"}, CONV(1, 1, 2, 0, 1, 2),
     .ref = ref_conv},
    {"winograd conv2d 1x1 image padded", OP_CONV2D, 2, {"3,1,1,4", "3,3,4,5"}, WG_SAME, .ref = ref_conv},
    {"winograd conv2d_grad_input 28x28 16->16 same", OP_CONV2D_GRAD_INPUT, 2, {"2,28,28,16", "3,3,16,16"}, WG_SAME,
     .given = "2,28,28,16", .ref = ref_conv},
    {"winograd conv2d_grad_input 14x14 32->32 same", OP_CONV2D_GRAD_INPUT, 2, {"3,14,14,32", "3,3,32,32"}, WG_SAME,
     .given = "3,14,14,32", .ref = ref_conv},
    {"winograd conv2d_grad_input 7x7 64->64 same", OP_CONV2D_GRAD_INPUT, 2, {"2,7,7,64", "3,3,64,64"}, WG_SAME,
     .given = "2,7,7,64", .ref = ref_conv},
    {"winograd conv2d_grad_input valid 5->4", OP_CONV2D_GRAD_INPUT, 2, {"2,7,9,4", "3,3,5,4"}, CONV(1, 1, 0, 0, 0, 0),
     .given = "2,9,11,5", .ref = ref_conv},
    {"winograd conv2d_grad_input asymmetric 13->10", OP_CONV2D_GRAD_INPUT, 2, {"2,7,5,10", "3,3,13,10"},
     CONV(1, 1, 2, 0, 1, 2), .given = "2,6,5,13", .ref = ref_conv},
    {"winograd conv2d_grad_filter 28x28 16->16 same", OP_CONV2D_GRAD_FILTER, 2, {"2,28,28,16", "2,28,28,16"}, WG_SAME,
     .given = "3,3,16,16", .ref = ref_conv},
    {"winograd conv2d_grad_filter 14x14 32->32 same", OP_CONV2D_GRAD_FILTER, 2, {"3,14,14,32", "3,14,14,32"}, WG_SAME,
     .given = "3,3,32,32", .ref = ref_conv},
    {"winograd conv2d_grad_filter 7x7 64->64 same", OP_CONV2D_GRAD_FILTER, 2, {"2,7,7,64", "2,7,7,64"}, WG_SAME,
     .given = "3,3,64,64", .ref = ref_conv},
    {"winograd conv2d_grad_filter valid 5->4", OP_CONV2D_GRAD_FILTER, 2, {"2,9,11,5", "2,7,9,4"},
     CONV(1, 1, 0, 0, 0, 0), .given = "3,3,5,4", .ref = ref_conv},
    {"winograd conv2d_grad_filter asymmetric 13->10", OP_CONV2D_GRAD_FILTER, 2, {"2,6,5,13", "2,7,5,10"},
     CONV(1, 1, 2, 0, 1, 2), .given = "3,3,13,10", .ref = ref_conv},
    {"winograd conv2d_epilogue 14x14 relu", OP_CONV2D_EPILOGUE, 3, {"2,14,14,16", "3,3,16,32", "32"},
     WG_EPI(1, 1, 1, 1, EPI_RELU), .ref = ref_conv2d_epilogue},
    {"winograd conv2d_epilogue residual tanh", OP_CONV2D_EPILOGUE, 4, {"2,9,8,4", "3,3,4,5", "5", "2,9,8,5"},
     WG_EPI(1, 1, 1, 1, EPI_TANH), .ref = ref_conv2d_epilogue},
    {"winograd conv2d_epilogue valid sigmoid", OP_CONV2D_EPILOGUE, 3, {"2,9,8,4", "3,3,4,4", "4"},
     WG_EPI(0, 0, 0, 0, EPI_SIGMOID), .ref = ref_conv2d_epilogue},
    /* mm_small (up to 64 channels): 24 and 17 channels take its 16-, 8- and 1-wide column paths, 9x7 (3 x 2
     * tiles of 2 images) its 6-row block and a 4-row rest */
    {"winograd conv2d 24->17", OP_CONV2D, 2, {"2,9,7,24", "3,3,24,17"}, WG_SAME, .ref = ref_conv},
    {"winograd conv2d_grad_input 24->17", OP_CONV2D_GRAD_INPUT, 2, {"2,9,7,17", "3,3,24,17"}, WG_SAME,
     .given = "2,9,7,24", .ref = ref_conv},
    {"winograd conv2d_grad_filter 24->17", OP_CONV2D_GRAD_FILTER, 2, {"2,9,7,24", "2,9,7,17"}, WG_SAME,
     .given = "3,3,24,17", .ref = ref_conv},
    /* blocks of tiles (256 KiB: 16 tiles of 64 channels, 22 of 72 + 8): 27 tiles of 3 images with partial
     * edge tiles run in two blocks, the second partial; the filter gradient sums across them */
    {"winograd conv2d 64->64 two blocks", OP_CONV2D, 2, {"3,9,10,64", "3,3,64,64"}, WG_SAME, .ref = ref_conv},
    {"winograd conv2d_grad_input 64->13 two blocks", OP_CONV2D_GRAD_INPUT, 2, {"3,9,10,13", "3,3,64,13"}, WG_SAME,
     .given = "3,9,10,64", .ref = ref_conv},
    {"winograd conv2d_grad_filter 64->64 two blocks", OP_CONV2D_GRAD_FILTER, 2, {"3,9,10,64", "3,9,10,64"},
     WG_SAME, .given = "3,3,64,64", .ref = ref_conv},
    /* a device's batch of 32 (valid; 1568 tiles): 29 blocks of 55 tiles of four channels in */
    {"winograd conv2d_epilogue 4->32 valid relu", OP_CONV2D_EPILOGUE, 3, {"32,28,28,4", "3,3,4,32", "32"},
     WG_EPI(0, 0, 0, 0, EPI_RELU), .ref = ref_conv2d_epilogue},
    {"winograd conv2d_grad_filter 4->32 valid", OP_CONV2D_GRAD_FILTER, 2, {"32,28,28,4", "32,26,26,32"},
     CONV(1, 1, 0, 0, 0, 0), .given = "3,3,4,32", .ref = ref_conv},
    /* OpenBLAS's products (more than 64 channels in or out) */
    {"winograd conv2d 72->8 (OpenBLAS)", OP_CONV2D, 2, {"2,6,7,72", "3,3,72,8"}, WG_SAME, .ref = ref_conv},
    {"winograd conv2d_grad_input 72->8 (OpenBLAS)", OP_CONV2D_GRAD_INPUT, 2, {"2,6,7,8", "3,3,72,8"}, WG_SAME,
     .given = "2,6,7,72", .ref = ref_conv},
    {"winograd conv2d_grad_filter 72->8 (OpenBLAS)", OP_CONV2D_GRAD_FILTER, 2, {"2,6,7,72", "2,6,7,8"}, WG_SAME,
     .given = "3,3,72,8", .ref = ref_conv},
    {"winograd conv2d 72->8 two blocks (OpenBLAS)", OP_CONV2D, 2, {"3,9,10,72", "3,3,72,8"}, WG_SAME, .ref = ref_conv},
    {"winograd conv2d_grad_filter 72->8 two blocks (OpenBLAS)", OP_CONV2D_GRAD_FILTER, 2, {"3,9,10,72", "3,9,10,8"},
     WG_SAME, .given = "3,3,72,8", .ref = ref_conv},
};

/* not the candidate's: each still gives the reference under MGC_KERNELS=winograd (oneDNN's) */
static const tcase winograd_not_cases[] = {
    {"winograd-not conv2d stride 2", OP_CONV2D, 2, {"2,9,8,4", "3,3,4,5"}, CONV(2, 2, 1, 1, 1, 1), .ref = ref_conv},
    {"winograd-not conv2d 5x5", OP_CONV2D, 2, {"2,9,8,4", "5,5,4,4"}, CONV(1, 1, 2, 2, 2, 2), .ref = ref_conv},
    {"winograd-not conv2d 3x2", OP_CONV2D, 2, {"2,9,8,4", "3,2,4,4"}, CONV(1, 1, 0, 0, 0, 0), .ref = ref_conv},
    {"winograd-not conv2d dilated", OP_CONV2D, 2, {"2,9,8,4", "3,3,4,4"}, CONVX(1, 1, 0, 0, 0, 0, 2, 2, 1),
     .ref = ref_conv},
    {"winograd-not conv2d groups 2", OP_CONV2D, 2, {"2,6,7,8", "3,3,4,6"}, CONVX(1, 1, 1, 1, 1, 1, 1, 1, 2),
     .ref = ref_conv},
    {"winograd-not conv2d_grad_filter stride 2", OP_CONV2D_GRAD_FILTER, 2, {"2,9,8,4", "2,5,4,5"},
     CONV(2, 2, 1, 1, 1, 1), .given = "3,3,4,5", .ref = ref_conv},
    /* fewer than 4 channels in or out (WG_MIN_CHANNELS): ResNet-20's and mnist_cnn's first layers, 3 in, 1 out */
    {"winograd-not conv2d 28x28 1->16 same", OP_CONV2D, 2, {"4,28,28,1", "3,3,1,16"}, WG_SAME, .ref = ref_conv},
    {"winograd-not conv2d_grad_filter 28x28 1->16 same", OP_CONV2D_GRAD_FILTER, 2, {"4,28,28,1", "4,28,28,16"},
     WG_SAME, .given = "3,3,1,16", .ref = ref_conv},
    {"winograd-not conv2d_epilogue 1->32 valid relu", OP_CONV2D_EPILOGUE, 3, {"32,28,28,1", "3,3,1,32", "32"},
     WG_EPI(0, 0, 0, 0, EPI_RELU), .ref = ref_conv2d_epilogue},
    {"winograd-not conv2d 3->5", OP_CONV2D, 2, {"2,9,8,3", "3,3,3,5"}, WG_SAME, .ref = ref_conv},
    {"winograd-not conv2d_grad_input 5->3", OP_CONV2D_GRAD_INPUT, 2, {"2,9,8,3", "3,3,5,3"}, WG_SAME,
     .given = "2,9,8,5", .ref = ref_conv},
    {"winograd-not conv2d 4->1", OP_CONV2D, 2, {"2,10,9,4", "3,3,4,1"}, WG_SAME, .ref = ref_conv},
};

/* whether the candidate applies to case c's node; -1 if it does not build */
static int winograd_applies_to(const tcase *c) {
    ir_shape shapes[8], given;
    for (int i = 0; i < c->n_in; i++) shapes[i] = kh_shape(c->shape[i]);
    if (c->given) given = kh_shape(c->given);
    one_op t;
    char err[256];
    int r = kh_build(&t, c->op, c->n_in, shapes, c->dtype, c->iattr, c->fattr, c->given ? &given : NULL, 0, err,
                     sizeof err)
                ? -1
                : cpu_conv_winograd_applies(&t.args);
    kh_free(&t);
    return r;
}

/* runs c twice (bit for bit; where the AVX-512 path runs, a third time on the
 * AVX2 path, bit for bit too) and returns max |got - ref| / (1e-5 (|ref| +
 * rms(ref))); -1 on failure */
static double winograd_error(const tcase *c) {
    ir_shape shapes[8], given;
    for (int i = 0; i < c->n_in; i++) shapes[i] = kh_shape(c->shape[i]);
    if (c->given) given = kh_shape(c->given);
    one_op t;
    char err[256];
    double worst = -1;
    if (kh_build(&t, c->op, c->n_in, shapes, c->dtype, c->iattr, c->fattr, c->given ? &given : NULL, 0, err,
                 sizeof err))
        return kh_free(&t), -1;
    t.step = 3, t.training = 1;
    int64_t n = numel(oshape(&t));
    double *ref_in[8], *ref_out = calloc((size_t)n + 1, sizeof(double));
    float *first = malloc((size_t)n * sizeof(float) + 1);
    for (int i = 0; i < c->n_in; i++) ref_in[i] = calloc((size_t)numel(shapes + i) + 1, sizeof(double));
    fill(c, &t, ref_in);
    if (!kh_run(&t, err, sizeof err)) {
        memcpy(first, t.out, (size_t)n * sizeof(float));
        int same = !kh_run(&t, err, sizeof err) && !memcmp(first, t.out, (size_t)n * sizeof(float));
        if (same && cpu_conv_winograd_avx512(0)) { /* the AVX2 path on an AVX-512 machine: the same bits */
            same = !kh_run(&t, err, sizeof err) && !memcmp(first, t.out, (size_t)n * sizeof(float));
            if (!same) fprintf(stderr, "FAIL %s: the AVX-512 and AVX2 paths differ\n", c->name);
        }
        cpu_conv_winograd_avx512(1);
        if (same) {
            c->ref(&t, ref_in, ref_out);
            double rms = 0;
            for (int64_t i = 0; i < n; i++) rms += ref_out[i] * ref_out[i];
            rms = sqrt(rms / (double)(n ? n : 1));
            worst = 0;
            for (int64_t i = 0; i < n; i++) {
                double e = fabs((double)((float *)t.out)[i] - ref_out[i]) / (1e-5 * (fabs(ref_out[i]) + rms));
                if (e > worst) worst = e;
            }
        }
    }
    for (int i = 0; i < c->n_in; i++) free(ref_in[i]);
    free(ref_out), free(first);
    kh_free(&t);
    return worst;
}

static int test_winograd(int *count) {
    int failed = 0;
    const size_t nw = sizeof winograd_cases / sizeof *winograd_cases;
    const size_t nn = sizeof winograd_not_cases / sizeof *winograd_not_cases;
    for (size_t i = 0; i < nw; i++) /* its own cases are its */
        if (winograd_applies_to(&winograd_cases[i]) != 1)
            fprintf(stderr, "FAIL %s: the winograd candidate does not apply\n", winograd_cases[i].name), failed++;
    for (size_t i = 0; i < nn; i++)
        if (winograd_applies_to(&winograd_not_cases[i]) != 0)
            fprintf(stderr, "FAIL %s: the winograd candidate applies\n", winograd_not_cases[i].name), failed++;
    cpu_kernels_set_threads(2); /* on two threads it is not a candidate */
    if (winograd_applies_to(&winograd_cases[1]) != 0)
        fprintf(stderr, "FAIL %s: the winograd candidate applies on two threads\n", winograd_cases[1].name), failed++;
    cpu_kernels_set_threads(1);
    const char *modes[] = {"winograd", "auto"};
    double worst = 0;
    for (int m = 0; m < 2; m++) {
        setenv("MGC_KERNELS", modes[m], 1);
        cpu_tune_reset();
        for (size_t i = 0; i < nw + nn; i++) {
            const tcase *c = i < nw ? &winograd_cases[i] : &winograd_not_cases[i - nw];
            int bad = run_case(c);
            if (!bad && m == 0) {
                double e = winograd_error(c);
                if (e < 0 || e > 1) fprintf(stderr, "FAIL %s: not bit for bit or over the tolerance (%g)\n", c->name, e);
                bad = e < 0 || e > 1;
                if (i < nw && e > worst) worst = e;
                if (getenv("WG_VERBOSE")) printf("  %-50s %.3f\n", c->name, e);
            }
            if (bad) fprintf(stderr, "  (MGC_KERNELS=%s)\n", modes[m]);
            failed += bad, ++*count;
        }
    }
    printf("winograd: worst error %.3g of the tolerance 1e-5 (|ref| + rms(ref)); %s\n", worst,
           cpu_conv_winograd_avx512(1) ? "the AVX-512 path, the same bits as the AVX2 path"
                                       : "the AVX2 path (no AVX-512 here)");
    unsetenv("MGC_KERNELS");
    cpu_tune_reset();
    return failed;
}

#endif
