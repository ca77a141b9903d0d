/* gemm_epilogue_cases.h (issue 14, char_gpt speed) - matmul_epilogue under
 * each matmul candidate forced: the blocked and thin GEMMs apply the bias,
 * residual and activation to each tile of C as its sums become final, the
 * others in a pass after the GEMM. Either way the output must be, bit for bit,
 * the candidate's own matmul followed by cpu_epilogue_rows (the unfused add,
 * add, activation), or a fused plan would stop training to the unfused plan's
 * bits. Shapes cut tiles at m and n, cross the blocked GEMM's k blocks
 * (K 1100), transpose, batch with a residual, take K = 0 (the bias alone) and
 * char_gpt's sizes, where oneDNN adds a lone bias itself; on one thread and on
 * two (where oneDNN runs every candidate's GEMMs).
 * Included by test_kernels.c after fill; the shared generator's state is
 * restored after. */
#ifndef MGC_KERN_GEMM_EPILOGUE_CASES_H
#define MGC_KERN_GEMM_EPILOGUE_CASES_H

static const tcase gemm_epilogue_cases[] = {
    {"epilogue bits bias only (13 x 37, K 20)", OP_MATMUL_EPILOGUE, 3, {"13,20", "20,37", "37"},
     .iattr = {0, 0, EPI_NONE}},
    {"epilogue bits relu, k blocks (101 x 37, K 1100)", OP_MATMUL_EPILOGUE, 3, {"101,1100", "1100,37", "37"},
     .iattr = {0, 0, EPI_RELU}},
    {"epilogue bits residual tanh, batched", OP_MATMUL_EPILOGUE, 4, {"3,20,50", "50,40", "40", "3,20,40"},
     .iattr = {0, 0, EPI_TANH}},
    {"epilogue bits residual sigmoid, trans_ab, k blocks", OP_MATMUL_EPILOGUE, 4, {"600,53", "21,600", "21", "53,21"},
     .iattr = {1, 1, EPI_SIGMOID}},
    {"epilogue bits K 0", OP_MATMUL_EPILOGUE, 4, {"5,0", "0,7", "7", "5,7"}, .iattr = {0, 0, EPI_RELU}},
    {"epilogue bits bias only, char_gpt's (2048 x 128, K 128)", OP_MATMUL_EPILOGUE, 3, {"2048,128", "128,128", "128"},
     .iattr = {0, 0, EPI_NONE}},
    {"epilogue bits bias only, char_gpt's MLP (2048 x 512, K 128)", OP_MATMUL_EPILOGUE, 3, {"2048,128", "128,512", "512"},
     .iattr = {0, 0, EPI_NONE}},
    {"epilogue bits bias only, char_gpt's MLP down (2048 x 128, K 512)", OP_MATMUL_EPILOGUE, 3,
     {"2048,512", "512,128", "128"}, .iattr = {0, 0, EPI_NONE}},
    {"epilogue bits bias only, long K (64 x 128, K 5408)", OP_MATMUL_EPILOGUE, 3, {"64,5408", "5408,128", "128"},
     .iattr = {0, 0, EPI_NONE}},
};

/* c under the current MGC_KERNELS: matmul_epilogue against matmul then
 * cpu_epilogue_rows on the same inputs; 1 (with a message) if they differ */
static int epilogue_bits(const tcase *c) {
    ir_shape shapes[4];
    for (int i = 0; i < c->n_in; i++) shapes[i] = kh_shape(c->shape[i]);
    one_op f, u;
    char err[256];
    int64_t plain[IR_MAX_IATTR] = {c->iattr[0], c->iattr[1]};
    double fattr[IR_MAX_FATTR] = {0};
    if (kh_build(&f, OP_MATMUL_EPILOGUE, c->n_in, shapes, c->dtype, c->iattr, c->fattr, NULL, 0, err, sizeof err) ||
        kh_build(&u, OP_MATMUL, 2, shapes, c->dtype, plain, fattr, NULL, 0, err, sizeof err)) {
        fprintf(stderr, "FAIL %s: %s\n", c->name, err);
        return 1;
    }
    double *ref_in[4];
    for (int i = 0; i < c->n_in; i++) ref_in[i] = calloc((size_t)numel(shapes + i) + 1, sizeof(double));
    fill(c, &f, ref_in);
    for (int i = 0; i < 2; i++) memcpy(u.in[i], f.in[i], (size_t)ir_node_bytes(f.in_nodes[i]));
    const ir_shape *o = oshape(&f);
    int64_t n = o->dim[o->rank - 1], total = numel(o);
    int bad = kh_run(&f, err, sizeof err) || kh_run(&u, err, sizeof err);
    if (bad) fprintf(stderr, "FAIL %s: %s\n", c->name, err);
    else {
        cpu_epilogue_rows(u.out, f.in[2], c->n_in == 4 ? f.in[3] : NULL, total / n, n, c->iattr[2]);
        for (int64_t i = 0; i < total && !bad; i++)
            if (memcmp((float *)f.out + i, (float *)u.out + i, sizeof(float)))
                bad = 1, fprintf(stderr, "FAIL %s: [%lld] fused %.9g, matmul then the epilogue %.9g\n", c->name,
                                 (long long)i, ((float *)f.out)[i], ((float *)u.out)[i]);
    }
    for (int i = 0; i < c->n_in; i++) free(ref_in[i]);
    kh_free(&f), kh_free(&u);
    return bad;
}

static int test_gemm_epilogue(int *count) {
    static const char *const modes[] = {"openblas", "onednn", "blocked", "thin"};
    const size_t n = sizeof gemm_epilogue_cases / sizeof *gemm_epilogue_cases;
    uint64_t saved = rng;
    int failed = 0;
    for (int t = 1; t <= 2; t++)
        for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
            setenv("MGC_KERNELS", modes[m], 1);
            cpu_tune_reset();
            cpu_kernels_set_threads(t);
            for (size_t i = 0; i < n; i++) {
                int bad = epilogue_bits(&gemm_epilogue_cases[i]);
                if (bad) fprintf(stderr, "  (MGC_KERNELS=%s, threads %d)\n", modes[m], t);
                failed += bad, ++*count;
            }
        }
    cpu_kernels_set_threads(1);
    unsetenv("MGC_KERNELS");
    cpu_tune_reset();
    rng = saved;
    return failed;
}

#endif
