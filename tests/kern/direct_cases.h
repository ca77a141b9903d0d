/* direct_cases.h (issue 14, speed) - the "direct" conv2d_grad_filter
 * candidate (runtime/cpu/conv_direct.c: one input channel) forced by
 * MGC_KERNELS=direct against the double reference (strides, padding,
 * dilation, filter widths 1, 2, 3, 5: its blocks of three taps and their
 * remainder, output channels 8, 40, 72: its 32-channel register blocks and
 * theirs), then measured (auto); a filter gradient it cannot run keeps
 * oneDNN. Included by test_kernels.c after run_case. */
#ifndef MGC_KERN_DIRECT_CASES_H
#define MGC_KERN_DIRECT_CASES_H

static const tcase direct_cases[] = {
    {"direct conv2d_grad_filter mnist", OP_CONV2D_GRAD_FILTER, 2, {"8,28,28,1", "8,26,26,32"},
     CONV(1, 1, 0, 0, 0, 0), .given = "3,3,1,32", .ref = ref_conv},
    {"direct conv2d_grad_filter 5x5 stride 2 same 40", OP_CONV2D_GRAD_FILTER, 2, {"2,11,9,1", "2,6,5,40"},
     CONV(2, 2, 2, 2, 2, 2), .given = "5,5,1,40", .ref = ref_conv},
    {"direct conv2d_grad_filter dilated asymmetric 8", OP_CONV2D_GRAD_FILTER, 2, {"2,9,10,1", "2,8,4,8"},
     CONVX(1, 2, 1, 0, 2, 1, 2, 3, 1), .given = "3,2,1,8", .ref = ref_conv},
    {"direct conv2d_grad_filter 1x1 72", OP_CONV2D_GRAD_FILTER, 2, {"1,5,6,1", "1,5,6,72"}, CONV(1, 1, 0, 0, 0, 0),
     .given = "1,1,1,72", .ref = ref_conv},
};

static int test_direct(int *count) {
    int failed = 0;
    const char *modes[] = {"direct", "auto"};
    for (int m = 0; m < 2; m++) {
        setenv("MGC_KERNELS", modes[m], 1);
        cpu_tune_reset();
        for (size_t i = 0; i < sizeof direct_cases / sizeof *direct_cases; i++) {
            int bad = run_case(&direct_cases[i]);
            if (bad) fprintf(stderr, "  (MGC_KERNELS=%s)\n", modes[m]);
            failed += bad, ++*count;
        }
    }
    /* a filter gradient it cannot run (3 input channels) keeps oneDNN under MGC_KERNELS=direct */
    setenv("MGC_KERNELS", "direct", 1);
    cpu_tune_reset();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (!strcmp(cases[i].name, "conv2d_grad_filter valid")) failed += run_case(&cases[i]), ++*count;
    unsetenv("MGC_KERNELS");
    cpu_tune_reset();
    return failed;
}

#endif
