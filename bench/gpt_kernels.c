/* gpt_kernels.c (issue 14, speed) - times the CPU kernels of one char_gpt
 * training step (examples/char_gpt.mg, batch 16, context 128, width 128, 4
 * heads; one thread) in thread CPU time, so a loaded machine still gives
 * comparable figures: the best of 5 rounds of about 0.1 s each. Prints ms per
 * call, calls per step and ms per step of each. Run by hand, not a test:
 *   build/bench/gpt_kernels [NAME-PART]  (or build/tests/bench_gpt_kernels)
 * times the cases whose name contains NAME-PART (all without it).
 * Issue 14 (char_gpt's GEMMs): `bench_gpt_kernels gemm` times each GEMM of
 * the step (forward with its bias, dX = dy W^T, dW = X^T dy) with each matmul candidate
 * forced (MGC_KERNELS), in ms and GFLOP/s, beside OpenBLAS's one-thread
 * 1024^3 sgemm measured in the same run; the last column is the step's ms
 * with the fastest candidate of each shape. `bench_gpt_kernels gemm cnn`: the
 * same for the seed CNN's dense layers (batch 64); a last argument times
 * only the GEMMs whose name contains it (`gemm cnn dX`, `gemm fwd`). The
 * candidates run in turn, GEMM_ROUNDS (10) rounds of 0.05 s each, each
 * one's least time counts; GEMM_EVICT=KIB reads and writes KIB of other
 * memory before each timed call (untimed). `thin` (K <= 512 only) shows "-"
 * where it does not apply; forced there, openblas runs, and its total
 * counts that. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../runtime/cpu/tune.h"
#include "../tests/kern/harness.h"

typedef struct {
    const char *name;
    ir_op op;
    int n_in;
    const char *shape[4];
    ir_dtype dtype[4];
    int64_t iattr[IR_MAX_IATTR];
    double fattr[IR_MAX_FATTR];
    int per_step; /* calls in one training step of char_gpt (4 blocks) */
} bcase;

static const bcase cases[] = {
    {"gelu 2048x512", OP_GELU, 1, {"16,128,512"}, .per_step = 4},
    {"gelu_grad 2048x512", OP_GELU_GRAD, 2, {"16,128,512", "16,128,512"}, .per_step = 4},
    {"softmax 64x128x128", OP_SOFTMAX, 1, {"16,4,128,128"}, .per_step = 0}, /* char_gpt's before causal_softmax */
    {"softmax_grad 64x128x128", OP_SOFTMAX_GRAD, 2, {"16,4,128,128", "16,4,128,128"}, .per_step = 0},
    /* issue 14: what multi_head_attention(causal: true) runs instead of softmax and softmax_grad */
    {"causal_softmax 64x128x128", OP_CAUSAL_SOFTMAX, 1, {"16,4,128,128"}, .fattr = {0.1767767}, .per_step = 0},
    {"causal_softmax_grad 64x128x128", OP_CAUSAL_SOFTMAX_GRAD, 2, {"16,4,128,128", "16,4,128,128"},
     .fattr = {0.1767767}, .per_step = 0},
    /* issue 14: what the epilogue pass makes of causal_softmax_grad(y, dropout_grad(dp)) (char_gpt's rate 0.1) */
    {"causal_softmax_dropout_grad 64x128x128", OP_CAUSAL_SOFTMAX_DROPOUT_GRAD, 2, {"16,4,128,128", "16,4,128,128"},
     .iattr = {42}, .fattr = {0.1767767, 0.1}, .per_step = 0},
    {"causal_softmax 4x128x128 (in L2)", OP_CAUSAL_SOFTMAX, 1, {"1,4,128,128"}, .fattr = {0.1767767}, .per_step = 0},
    /* issue 14: layer_norm's core (9 layer norms a step) */
    {"normalize 2048x128", OP_NORMALIZE, 1, {"16,128,128"}, .fattr = {1e-5}, .per_step = 9},
    {"normalize_grad 2048x128", OP_NORMALIZE_GRAD, 2, {"16,128,128", "16,128,128"}, .fattr = {1e-5}, .per_step = 9},
    {"dropout 64x128x128", OP_DROPOUT, 1, {"16,4,128,128"}, .iattr = {42}, .fattr = {0.1}, .per_step = 4},
    {"dropout_grad 64x128x128", OP_DROPOUT_GRAD, 1, {"16,4,128,128"}, .iattr = {42}, .fattr = {0.1}, .per_step = 0},
    {"dropout 2048x128", OP_DROPOUT, 1, {"16,128,128"}, .iattr = {42}, .fattr = {0.1}, .per_step = 8},
    {"dropout_grad 2048x128", OP_DROPOUT_GRAD, 1, {"16,128,128"}, .iattr = {42}, .fattr = {0.1}, .per_step = 8},
    {"sparse_xent 2048x256", OP_SPARSE_XENT, 2, {"2048,256", "2048"}, .dtype = {0, IR_I32}, .per_step = 2},
    {"sparse_xent_grad 2048x256", OP_SPARSE_XENT_GRAD, 3, {"2048,256", "2048", "2048"}, .dtype = {0, IR_I32, 0},
     .per_step = 1},
    /* issue 14 (char_gpt's non-GEMM time): the bias gradients, column sums over the 2048 rows */
    {"reduce_sum 2048x512 -> 512", OP_REDUCE_SUM, 1, {"16,128,512"}, .iattr = {3, 1}, .per_step = 4},
    {"reduce_sum 2048x128 -> 128", OP_REDUCE_SUM, 1, {"16,128,128"}, .iattr = {3, 1}, .per_step = 22},
    {"reduce_sum 2048x128 -> 128 (axis 1)", OP_REDUCE_SUM, 1, {"2048,128"}, .iattr = {1, 1}, .per_step = 16},
    /* attention's heads split and merged (perm 0, 2, 1, 3; 16 a step) */
    {"transpose 16x128x4x32 -> 16x4x128x32", OP_TRANSPOSE, 1, {"16,128,4,32"}, .iattr = {0x3120}, .per_step = 16},
    {"transpose 16x4x128x32 -> 16x128x4x32", OP_TRANSPOSE, 1, {"16,4,128,32"}, .iattr = {0x3120}, .per_step = 16},
    /* for scale: the GEMMs of a block (forward) */
    {"matmul 2048x128x128", OP_MATMUL, 2, {"2048,128", "128,128"}, .per_step = 16},
    {"matmul 2048x128x512", OP_MATMUL, 2, {"2048,128", "128,512"}, .per_step = 4},
    {"matmul 2048x512x128", OP_MATMUL, 2, {"2048,512", "512,128"}, .per_step = 4},
    /* attention's six GEMMs as full matmuls (char_gpt's before causal_matmul) ... */
    {"batched q k^T 64x128x32x128", OP_MATMUL, 2, {"64,128,32", "64,128,32"}, .iattr = {0, 1}, .per_step = 0},
    {"batched p v 64x128x128x32", OP_MATMUL, 2, {"64,128,128", "64,128,32"}, .per_step = 0},
    {"batched dq = ds k", OP_MATMUL, 2, {"64,128,128", "64,128,32"}, .per_step = 0},
    {"batched dk = ds^T q", OP_MATMUL, 2, {"64,128,128", "64,128,32"}, .iattr = {1, 0}, .per_step = 0},
    {"batched dp = do v^T", OP_MATMUL, 2, {"64,128,32", "64,128,32"}, .iattr = {0, 1}, .per_step = 0},
    {"batched dv = p^T do", OP_MATMUL, 2, {"64,128,128", "64,128,32"}, .iattr = {1, 0}, .per_step = 0},
    /* ... and as the causal matmuls it runs (issue 14): the masked half skipped */
    {"causal q k^T (tri 0)", OP_CAUSAL_MATMUL, 2, {"64,128,32", "64,128,32"}, .iattr = {0, 1, 0, 0}, .per_step = 0},
    {"causal p v (tri 1)", OP_CAUSAL_MATMUL, 2, {"64,128,128", "64,128,32"}, .iattr = {0, 0, 1, 0}, .per_step = 4},
    {"causal dq = ds k (tri 1)", OP_CAUSAL_MATMUL, 2, {"64,128,128", "64,128,32"}, .iattr = {0, 0, 1, 0},
     .per_step = 4},
    {"causal dk = ds^T q (tri 1 triu)", OP_CAUSAL_MATMUL, 2, {"64,128,128", "64,128,32"}, .iattr = {1, 0, 1, 1},
     .per_step = 4},
    {"causal dp = do v^T (tri 0)", OP_CAUSAL_MATMUL, 2, {"64,128,32", "64,128,32"}, .iattr = {0, 1, 0, 0},
     .per_step = 0},
    /* ... and what the epilogue pass makes of the tri 0 ones and the softmax after them (per_step 0 above) */
    {"causal_matmul_softmax q k^T", OP_CAUSAL_MATMUL_SOFTMAX, 2, {"64,128,32", "64,128,32"}, .iattr = {0, 1},
     .fattr = {0.1767767}, .per_step = 4},
    {"causal_matmul_softmax_grad do v^T", OP_CAUSAL_MATMUL_SOFTMAX_GRAD, 3, {"64,128,32", "64,128,32", "64,128,128"},
     .iattr = {0, 1, 42}, .fattr = {0.1767767, 0.1}, .per_step = 4},
    {"causal dv = p^T do (tri 1 triu)", OP_CAUSAL_MATMUL, 2, {"64,128,128", "64,128,32"}, .iattr = {1, 0, 1, 1},
     .per_step = 4},
};

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* GEMM_EVICT=KIB (issue 14, the seed CNN's dense layer): before each timed
 * call, read and write KIB of other memory (not timed), so the operands come
 * from the L3 or memory as in a training step rather than from the L2 the
 * previous call left them in */
static float *evict_buf;
static size_t evict_n;

static void evict(void) {
    for (size_t i = 0; i < evict_n; i += 16) evict_buf[i] += 1.0f;
}

/* builds c's node with filled inputs and runs it once */
static int case_build(const bcase *c, one_op *t, char *err, size_t cap) {
    ir_shape shapes[4];
    for (int i = 0; i < c->n_in; i++) shapes[i] = kh_shape(c->shape[i]);
    if (kh_build(t, c->op, c->n_in, shapes, c->dtype, c->iattr, c->fattr, NULL, 0, err, cap)) return -1;
    for (int i = 0; i < c->n_in; i++) {
        size_t n = (size_t)ir_shape_numel(&shapes[i]);
        for (size_t j = 0; j < n; j++) {
            if (c->dtype[i] == IR_I32) ((int32_t *)t->in[i])[j] = (int32_t)(j * 7 % 256);
            else ((float *)t->in[i])[j] = (float)((j * 2654435761u) % 1000) / 250.0f - 2.0f;
        }
    }
    return kh_run(t, err, cap);
}

/* ms a call of t over one round of about `secs` of its CPU time; -1 on failure */
static double time_round(one_op *t, double secs, char *err, size_t cap) {
    int reps = 0;
    double t0 = cpu_now(), t1, in_evict = 0;
    do {
        if (evict_n) {
            double e0 = cpu_now();
            evict();
            in_evict += cpu_now() - e0;
        }
        if (kh_run(t, err, cap)) return -1;
        reps++;
    } while ((t1 = cpu_now()) - t0 - in_evict < secs);
    return 1e3 * (t1 - t0 - in_evict) / reps;
}

static double time_case(const bcase *c, char *err, size_t cap) {
    one_op t;
    double best = -1;
    if (!case_build(c, &t, err, cap))
        for (int round = 0; round < 5; round++) {
            double ms = time_round(&t, 0.1, err, cap);
            if (ms < 0) {
                best = -1;
                break;
            }
            if (best < 0 || ms < best) best = ms;
        }
    kh_free(&t);
    return best;
}

/* ---- issue 14: char_gpt's GEMMs, each candidate ---- */

/* 2048 rows (batch 16 x 128 tokens), width 128, MLP 512, vocabulary 256 */
#define GEMM(name, a, b, ta, tb, calls) {name, OP_MATMUL, 2, {a, b}, .iattr = {ta, tb}, .per_step = calls}
/* the forward's dense layers: matmul_epilogue with a bias of n */
#define BIAS(name, a, b, n, calls) {name, OP_MATMUL_EPILOGUE, 3, {a, b, n}, .iattr = {0, 0, EPI_NONE}, .per_step = calls}
static const bcase gemms[] = {
    BIAS("fwd qkv/out 2048x128x128", "2048,128", "128,128", "128", 16),
    BIAS("fwd mlp up 2048x128x512", "2048,128", "128,512", "512", 4),
    BIAS("fwd mlp down 2048x512x128", "2048,512", "512,128", "128", 4),
    BIAS("fwd logits 2048x128x256", "2048,128", "128,256", "256", 1),
    BIAS("(q,k,v as one) 2048x128x384", "2048,128", "128,384", "384", 0), /* not run: for comparison */
    GEMM("dX qkv/out dy W^T", "2048,128", "128,128", 0, 1, 16),
    GEMM("dX mlp up (K 512)", "2048,512", "128,512", 0, 1, 4),
    GEMM("dX mlp down (N 512)", "2048,128", "512,128", 0, 1, 4),
    GEMM("dX logits (K 256)", "2048,256", "128,256", 0, 1, 1),
    GEMM("dW qkv/out X^T dy", "2048,128", "2048,128", 1, 0, 16),
    GEMM("dW mlp up 128x512", "2048,128", "2048,512", 1, 0, 4),
    GEMM("dW mlp down 512x128", "2048,512", "2048,128", 1, 0, 4),
    GEMM("dW logits 128x256", "2048,128", "2048,256", 1, 0, 1),
};

/* issue 14 (the seed CNN's dense layer, thin K): `gemm cnn` times the three
 * GEMMs of examples/mnist_cnn.mg's dense layer (flatten 5408 -> 128, batch
 * 64) and of its 128 -> 10 logits layer instead */
static const bcase cnn_gemms[] = {
    GEMM("fwd 64x5408x128", "64,5408", "5408,128", 0, 0, 1),
    GEMM("dX 64x128x5408 (K 128)", "64,128", "5408,128", 0, 1, 1),
    GEMM("dW 5408x64x128 (K 64)", "64,5408", "64,128", 1, 0, 1),
    GEMM("fwd logits 64x128x10", "64,128", "128,10", 0, 0, 1),
    GEMM("dX logits 64x10x128", "64,10", "128,10", 0, 1, 1),
    GEMM("dW logits 128x64x10", "64,128", "64,10", 1, 0, 1),
};

static double cpu_now(void);

static double sgemm_peak(void) {
    enum { N = 1024 };
    float *a = calloc(N * N, sizeof *a), *b = calloc(N * N, sizeof *b), *c = calloc(N * N, sizeof *c);
    double best = 0;
    for (int i = 0; a && b && c && i < N * N; i++) a[i] = (float)(i % 7) * 0.1f, b[i] = (float)(i % 5) * 0.1f;
    for (int r = 0; a && b && c && r < 3; r++) {
        double t0 = cpu_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1, a, N, b, N, 0, c, N);
        double gf = 2.0 * N * N * N / (cpu_now() - t0) / 1e9;
        if (gf > best) best = gf;
    }
    free(a), free(b), free(c);
    return best;
}

static int bench_gemms(const bcase *list, size_t n_list, const char *label, const char *filter) {
    static const char *const cand[] = {"openblas", "onednn", "blocked", "thin"};
    enum { NC = sizeof cand / sizeof *cand };
    char err[256];
    double total[NC] = {0}, best_total = 0, best_old_total = 0;
    const char *rv = getenv("GEMM_ROUNDS");
    int rounds = rv && atoi(rv) > 0 ? atoi(rv) : 10;
    printf("sgemm 1024^3 (OpenBLAS, 1 thread): %.1f GFLOP/s\n", sgemm_peak());
    printf("%-28s %5s", label, "calls");
    for (int c = 0; c < NC; c++) printf(" %9s ms %5s", cand[c], "GF/s");
    printf(" %8s\n", "best ms/step");
    for (size_t i = 0; i < n_list; i++) {
        const bcase *g = &list[i];
        if (filter && !strstr(g->name, filter)) continue;
        ir_shape a = kh_shape(g->shape[0]), b = kh_shape(g->shape[1]);
        double kk = (double)(g->iattr[0] ? a.dim[0] : a.dim[1]),
               flop = 2.0 * (double)(g->iattr[0] ? a.dim[1] : a.dim[0]) * (double)(g->iattr[1] ? b.dim[0] : b.dim[1]) * kk;
        double best = -1, best_old = -1, least[NC];
        one_op t;
        printf("%-28s %5d", g->name, g->per_step);
        fflush(stdout);
        if (case_build(g, &t, err, sizeof err)) return kh_free(&t), fprintf(stderr, "%s: %s\n", g->name, err), 1;
        for (int r = 0; r < rounds; r++) /* the candidates in turn, each round: the load weighs on all alike */
            for (int c = 0; c < NC; c++) {
                setenv("MGC_KERNELS", cand[c], 1);
                cpu_tune_reset();
                double ms = kh_run(&t, err, sizeof err) ? -1 : time_round(&t, 0.05, err, sizeof err);
                if (ms < 0) return kh_free(&t), fprintf(stderr, "%s (%s): %s\n", g->name, cand[c], err), 1;
                if (r == 0 || ms < least[c]) least[c] = ms;
            }
        kh_free(&t);
        for (int c = 0; c < NC; c++) {
            double ms = least[c];
            int none = !strcmp(cand[c], "thin") && kk > 512; /* forced, openblas runs */
            if (none) printf(" %12s %5s", "-", "");
            else printf(" %12.3f %5.1f", ms, flop / ms / 1e6);
            total[c] += ms * g->per_step;
            if (!none && (best < 0 || ms < best)) best = ms;
            if (strcmp(cand[c], "thin") && (best_old < 0 || ms < best_old)) best_old = ms;
        }
        best_total += best * g->per_step, best_old_total += best_old * g->per_step;
        printf(" %8.2f\n", best * g->per_step);
    }
    unsetenv("MGC_KERNELS");
    cpu_tune_reset();
    printf("%-28s %5s", "a step's GEMMs", "");
    for (int c = 0; c < NC; c++) printf(" %12.2f %5s", total[c], "");
    printf(" %8.2f\n", best_total);
    printf("the fastest of each without thin: %.2f ms a step\n", best_old_total);
    return 0;
}

int main(int argc, char **argv) {
    char err[256];
    cpu_kernels_set_threads(1);
    const char *ev = getenv("GEMM_EVICT");
    if (ev && atol(ev) > 0 && (evict_buf = calloc((size_t)atol(ev) * 256, sizeof(float))))
        evict_n = (size_t)atol(ev) * 256;
    if (argc > 2 && !strcmp(argv[1], "gemm") && !strcmp(argv[2], "cnn"))
        return bench_gemms(cnn_gemms, sizeof cnn_gemms / sizeof *cnn_gemms, "GEMM (seed CNN, 1 thread)",
                           argc > 3 ? argv[3] : NULL);
    if (argc > 1 && !strcmp(argv[1], "gemm"))
        return bench_gemms(gemms, sizeof gemms / sizeof *gemms, "GEMM (char_gpt, 1 thread)", argc > 2 ? argv[2] : NULL);
    printf("%-30s %10s %6s %10s\n", "op (char_gpt, 1 thread)", "ms/call", "calls", "ms/step");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (argc > 1 && !strstr(cases[i].name, argv[1])) continue; /* a name filter: gpt_kernels softmax */
        double ms = time_case(&cases[i], err, sizeof err);
        if (ms < 0) {
            fprintf(stderr, "%s: %s\n", cases[i].name, err);
            return 1;
        }
        printf("%-30s %10.4f %6d %10.3f\n", cases[i].name, ms, cases[i].per_step, ms * cases[i].per_step);
    }
    return 0;
}
