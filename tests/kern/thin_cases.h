/* thin_cases.h (issue 14, the seed CNN's dense layer) - the "thin" candidate
 * of matmul (runtime/cpu/gemm_thin.c, K <= 512 on one thread) against the
 * double reference under MGC_KERNELS=thin, the other candidates and auto:
 * the dense layer's data and weight gradients at small scale (trans_b with
 * m = 64: ten 6-row tiles and a 4-row one; trans_a with row blocks of 48 and
 * a 2-row rest), n past a 16-column panel and past a block of packed op(b),
 * both transposes, K = 1 and K = 512, batch axes (one broadcast),
 * matmul_epilogue's GEMM; each forced run twice, bit for bit. Nodes it must
 * not run (K = 513, K = 0, two threads) are not its (applies 0) and still
 * give the reference under MGC_KERNELS=thin. Included by test_kernels.c after
 * run_case; inputs from the shared generator, its state restored after. */
#ifndef MGC_KERN_THIN_CASES_H
#define MGC_KERN_THIN_CASES_H

static const tcase thin_cases[] = {
    {"thin dX dy W^T (m 64, n 300)", OP_MATMUL, 2, {"64,128", "300,128"}, .iattr = {0, 1}, .ref = ref_matmul},
    {"thin dW X^T dy (m 500, K 64)", OP_MATMUL, 2, {"64,500", "64,128"}, .iattr = {1, 0}, .ref = ref_matmul},
    {"thin blocks of op(b) (K 256, n 300)", OP_MATMUL, 2, {"13,256", "256,300"}, .ref = ref_matmul},
    {"thin trans_ab (m 101, n 45, K 37)", OP_MATMUL, 2, {"37,101", "45,37"}, .iattr = {1, 1}, .ref = ref_matmul},
    {"thin row blocks (m 200, K 9)", OP_MATMUL, 2, {"200,9", "9,40"}, .ref = ref_matmul},
    {"thin K 512 (m 7, n 33)", OP_MATMUL, 2, {"7,512", "512,33"}, .ref = ref_matmul},
    {"thin K 1", OP_MATMUL, 2, {"5,1", "1,17"}, .ref = ref_matmul},
    {"thin 1x1x1", OP_MATMUL, 2, {"1,1", "1,1"}, .ref = ref_matmul},
    {"thin 5 rows (a 6-row tile cut)", OP_MATMUL, 2, {"5,20", "20,16"}, .ref = ref_matmul},
    {"thin batched", OP_MATMUL, 2, {"3,20,50", "3,50,40"}, .ref = ref_matmul},
    {"thin batch broadcast trans_a", OP_MATMUL, 2, {"2,1,24,13", "3,24,17"}, .iattr = {1, 0}, .ref = ref_matmul},
    {"thin matmul_epilogue dense relu", OP_MATMUL_EPILOGUE, 3, {"64,300", "300,128", "128"}, .iattr = {0, 0, EPI_RELU},
     .ref = ref_matmul_epilogue},
};

static const tcase thin_not_cases[] = {
    {"thin-not K 513", OP_MATMUL, 2, {"9,513", "513,20"}, .ref = ref_matmul},
    {"thin-not K 0", OP_MATMUL, 2, {"4,0", "0,6"}, .ref = ref_matmul},
};

/* whether the candidate applies to case c's node; -1 if it does not build */
static int thin_applies_to(const tcase *c) {
    ir_shape shapes[8];
    for (int i = 0; i < c->n_in; i++) shapes[i] = kh_shape(c->shape[i]);
    one_op t;
    char err[256];
    int r = kh_build(&t, c->op, c->n_in, shapes, c->dtype, c->iattr, c->fattr, NULL, 0, err, sizeof err)
                ? -1
                : cpu_thin_applies(&t.args);
    kh_free(&t);
    return r;
}

/* c run twice gives the same bits; 1 (with a message) if not */
static int thin_twice(const tcase *c) {
    ir_shape shapes[8];
    for (int i = 0; i < c->n_in; i++) shapes[i] = kh_shape(c->shape[i]);
    one_op t;
    char err[256];
    int bad = 1;
    if (!kh_build(&t, c->op, c->n_in, shapes, c->dtype, c->iattr, c->fattr, NULL, 0, err, sizeof err)) {
        double *ref_in[8];
        for (int i = 0; i < c->n_in; i++) ref_in[i] = calloc((size_t)numel(shapes + i) + 1, sizeof(double));
        fill(c, &t, ref_in);
        size_t n = (size_t)numel(oshape(&t));
        float *first = malloc(n * sizeof(float) + 1);
        if (first && !kh_run(&t, err, sizeof err)) {
            memcpy(first, t.out, n * sizeof(float));
            bad = kh_run(&t, err, sizeof err) || memcmp(first, t.out, n * sizeof(float));
        }
        for (int i = 0; i < c->n_in; i++) free(ref_in[i]);
        free(first);
    }
    kh_free(&t);
    if (bad) fprintf(stderr, "FAIL %s: two runs under MGC_KERNELS=thin differ\n", c->name);
    return bad;
}

static int test_thin(int *count) {
    const size_t nt = sizeof thin_cases / sizeof *thin_cases, nn = sizeof thin_not_cases / sizeof *thin_not_cases;
    uint64_t saved = rng;
    int failed = 0;
    for (size_t i = 0; i < nt; i++) /* its own cases are its */
        if (thin_applies_to(&thin_cases[i]) != 1)
            fprintf(stderr, "FAIL %s: the thin candidate does not apply\n", thin_cases[i].name), failed++;
    for (size_t i = 0; i < nn; i++)
        if (thin_applies_to(&thin_not_cases[i]) != 0)
            fprintf(stderr, "FAIL %s: the thin candidate applies\n", thin_not_cases[i].name), failed++;
    cpu_kernels_set_threads(2); /* on two threads it is not a candidate */
    if (thin_applies_to(&thin_cases[0]) != 0)
        fprintf(stderr, "FAIL %s: the thin candidate applies on two threads\n", thin_cases[0].name), failed++;
    cpu_kernels_set_threads(1);
    static const char *const modes[] = {"thin", "openblas", "onednn", "blocked", "auto"};
    const size_t n_modes = sizeof modes / sizeof *modes;
    failed += run_modes(modes, n_modes, thin_cases, nt, thin_twice, count) +
              run_modes(modes, n_modes, thin_not_cases, nn, NULL, count);
    rng = saved;
    return failed;
}

#endif
