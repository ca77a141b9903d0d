/* kernels.c - times each CPU kernel of the mnist CNN training step (batch 64,
 * one thread): conv 3x3x1x32 valid, maxpool 2, dense 5408x128, dense 128x10,
 * sparse cross-entropy, Adam. Prints ms per call of each op, the GFLOP/s of
 * the GEMMs and convolutions, and the total. Issue 14: in thread CPU time, the
 * best of 5 rounds of about 0.1 s each, so a loaded machine still gives
 * comparable figures (the machine's memory bandwidth is still shared). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/kern/harness.h"
#include "../runtime/cpu/tune.h" /* cpu_tune_reset */

typedef struct {
    const char *name;
    ir_op op;
    int n_in;
    const char *shape[4];
    ir_dtype dtype[4];
    int64_t iattr[IR_MAX_IATTR];
    double fattr[IR_MAX_FATTR];
    const char *given;
    int fusion;     /* issue 14: 1 an op the epilogue pass replaces, 2 the fused op it runs instead, 3 a fused
                     * op a later rule replaces in turn (in neither total) */
    double mflop;   /* multiply-adds x 2 of a GEMM or convolution (mgc inspect's count), 0 for the others */
} bcase;

/* 2 x 64 x 26 x 26 x 32 x 9 (the first conv, forward or filter gradient); 2 x 64 x 5408 x 128 */
#define CONV_MF 24.92
#define DENSE_MF 88.60
#define SMALL_MF 0.164 /* 2 x 64 x 128 x 10 */

static const bcase steps[] = {
    {"fwd conv2d", OP_CONV2D, 2, {"64,28,28,1", "3,3,1,32"}, .iattr = {1, 1}, .fusion = 1, .mflop = CONV_MF},
    {"fwd conv bias add", OP_ADD, 2, {"64,26,26,32", "32"}, .dtype = {0}, .fusion = 1},
    {"fwd relu conv", OP_RELU, 1, {"64,26,26,32"}, .dtype = {0}, .fusion = 1},
    {"fwd max_pool2d", OP_MAX_POOL2D, 1, {"64,26,26,32"}, .iattr = {2, 2, 2, 2}, .fusion = 1},
    {"fwd matmul 5408x128", OP_MATMUL, 2, {"64,5408", "5408,128"}, .dtype = {0}, .fusion = 1, .mflop = DENSE_MF},
    {"fwd bias add 128", OP_ADD, 2, {"64,128", "128"}, .dtype = {0}, .fusion = 1},
    {"fwd relu 128", OP_RELU, 1, {"64,128"}, .dtype = {0}, .fusion = 1},
    {"fwd matmul 128x10", OP_MATMUL, 2, {"64,128", "128,10"}, .dtype = {0}, .fusion = 1, .mflop = SMALL_MF},
    {"fwd bias add 10", OP_ADD, 2, {"64,10", "10"}, .dtype = {0}, .fusion = 1},
    {"fwd sparse_xent", OP_SPARSE_XENT, 2, {"64,10", "64"}, .dtype = {0, IR_I32}},
    {"fwd reduce_mean loss", OP_REDUCE_MEAN, 1, {"64"}, .iattr = {1}},
    {"fwd argmax_match", OP_ARGMAX_MATCH, 2, {"64,10", "64"}, .dtype = {0, IR_I32}},
    {"bwd sparse_xent_grad", OP_SPARSE_XENT_GRAD, 3, {"64,10", "64", "64"}, .dtype = {0, IR_I32, 0}},
    {"bwd matmul dW 128x10", OP_MATMUL, 2, {"64,128", "64,10"}, .iattr = {1, 0}, .mflop = SMALL_MF},
    {"bwd reduce_sum db 10", OP_REDUCE_SUM, 1, {"64,10"}, .iattr = {1}},
    {"bwd matmul dx 10->128", OP_MATMUL, 2, {"64,10", "128,10"}, .iattr = {0, 1}, .mflop = SMALL_MF},
    {"bwd relu_grad 128", OP_RELU_GRAD, 2, {"64,128", "64,128"}, .dtype = {0}},
    {"bwd matmul dW 5408x128", OP_MATMUL, 2, {"64,5408", "64,128"}, .iattr = {1, 0}, .mflop = DENSE_MF},
    {"bwd reduce_sum db 128", OP_REDUCE_SUM, 1, {"64,128"}, .iattr = {1}},
    {"bwd matmul dx 128->5408", OP_MATMUL, 2, {"64,128", "5408,128"}, .iattr = {0, 1}, .mflop = DENSE_MF},
    {"bwd max_pool2d_grad", OP_MAX_POOL2D_GRAD, 2, {"64,26,26,32", "64,13,13,32"}, .iattr = {2, 2, 2, 2}, .fusion = 1},
    {"bwd relu_grad conv", OP_RELU_GRAD, 2, {"64,26,26,32", "64,26,26,32"}, .dtype = {0}, .fusion = 1},
    {"bwd reduce_sum conv db", OP_REDUCE_SUM, 1, {"64,26,26,32"}, .iattr = {7}, .fusion = 1},
    {"bwd conv2d_grad_filter", OP_CONV2D_GRAD_FILTER, 2, {"64,28,28,1", "64,26,26,32"}, .iattr = {1, 1}, .given = "3,3,1,32", .mflop = CONV_MF,
     .fusion = 1},
    /* issue 14: what the epilogue pass runs instead of conv2d + bias add + relu, matmul + bias add + relu,
     * max_pool2d_grad + relu_grad */
    {"fused conv2d+bias+relu", OP_CONV2D_EPILOGUE, 3, {"64,28,28,1", "3,3,1,32", "32"},
     .iattr = {1, 1, 0, 0, 0, 0, 1, 1, 1, EPI_RELU}, .fusion = 3, .mflop = CONV_MF},
    {"fused dense 5408x128 relu", OP_MATMUL_EPILOGUE, 3, {"64,5408", "5408,128", "128"}, .iattr = {0, 0, EPI_RELU},
     .fusion = 2, .mflop = DENSE_MF},
    {"fused dense 128x10", OP_MATMUL_EPILOGUE, 3, {"64,128", "128,10", "10"}, .iattr = {0, 0, EPI_NONE}, .fusion = 2, .mflop = SMALL_MF},
    {"fused max_pool2d_relu_grad", OP_MAX_POOL2D_RELU_GRAD, 2, {"64,26,26,32", "64,13,13,32"}, .iattr = {2, 2, 2, 2},
     .fusion = 3},
    /* issue 14 (seed CNN speed): the filter gradient through the pool, the bias gradient from the pooled one */
    {"fused conv2d_grad_filter_pool2", OP_CONV2D_GRAD_FILTER_POOL2, 3, {"64,28,28,1", "64,26,26,32", "64,13,13,32"},
     .iattr = {1, 1, 0, 0, 0, 0, 1, 1, 1}, .given = "3,3,1,32", .fusion = 3, .mflop = CONV_MF},
    /* issue 14 (seed CNN speed): the conv, relu and pool in one pass, its filter gradient from the windows' pixels
     * (rule 6; here random ones, as cheap as real ones: one product a tap and a window either way) */
    {"fused conv2d_relu_pool2", OP_CONV2D_RELU_POOL2, 3, {"64,28,28,1", "3,3,1,32", "32"},
     .iattr = {1, 1, 0, 0, 0, 0, 1, 1, 1}, .fusion = 2, .mflop = CONV_MF},
    {"fused conv2d_relu_pool2_grad_filt", OP_CONV2D_RELU_POOL2_GRAD_FILTER, 4,
     {"64,28,28,1", "3,3,1,32", "2,64,13,13,32", "64,13,13,32"}, .iattr = {1, 1, 0, 0, 0, 0, 1, 1, 1}, .fusion = 2,
     .mflop = CONV_MF},
    {"fused relu_grad pooled", OP_RELU_GRAD, 2, {"64,13,13,32", "64,13,13,32"}, .dtype = {0}, .fusion = 2},
    {"fused reduce_sum pooled db", OP_REDUCE_SUM, 1, {"64,13,13,32"}, .iattr = {7}, .fusion = 2},
    {"opt adam 5408x128", OP_ADAM_UPDATE, 4, {"5408,128", "5408,128", "5408,128", "5408,128"},
     .fattr = {1e-3, 0.9, 0.999, 1e-7, 0}},
    {"opt adam small (5 params)", OP_ADAM_UPDATE, 4, {"1738", "1738", "1738", "1738"},
     .fattr = {1e-3, 0.9, 0.999, 1e-7, 0}},
};

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ms per call of the kernel a runs: warm up, then the best of 5 rounds of
 * about 0.1 s of thread CPU time; -1 when a call fails */
static double best_ms(const rt_kernel_args *a, char *err, size_t cap) {
    double ms = -1;
    if (cpu_kernel_run(a, err, cap)) return -1;
    for (int round = 0; round < 5; round++) {
        int reps = 0;
        double t0 = cpu_now(), t1;
        do {
            if (cpu_kernel_run(a, err, cap)) return -1;
            reps++;
        } while ((t1 = cpu_now()) - t0 < 0.1);
        double r = 1e3 * (t1 - t0) / reps;
        if (ms < 0 || r < ms) ms = r;
    }
    return ms;
}

/* ms per call of case c (best_ms) */
static double time_case(const bcase *c, char *err, size_t cap) {
    ir_shape shapes[4], given;
    for (int i = 0; i < c->n_in; i++) shapes[i] = kh_shape(c->shape[i]);
    if (c->given) given = kh_shape(c->given);
    one_op t;
    double ms = -1;
    if (kh_build(&t, c->op, c->n_in, shapes, c->dtype, c->iattr, c->fattr, c->given ? &given : NULL, 0, err, cap))
        goto done;
    for (int i = 0; i < c->n_in; i++) {
        size_t n = (size_t)ir_shape_numel(&shapes[i]);
        for (size_t j = 0; j < n; j++) {
            if (c->dtype[i] == IR_I32) ((int32_t *)t.in[i])[j] = (int32_t)(j * 7 % 10);
            else ((float *)t.in[i])[j] = (float)((j * 2654435761u) % 1000) / 1000.0f - 0.3f + (i == 3);
        }
    }
    ms = best_ms(&t.args, err, cap);
done:
    kh_free(&t);
    return ms;
}

/* ---- issue 14 (ResNet-20 speed): `bench_kernels --resnet20` times ResNet-20's
 * 3x3 stride-1 convolutions (batch 128) with each conv candidate forced
 * (MGC_KERNELS): ms per call in thread CPU time, GFLOP/s of the direct count;
 * `--resnet20 winograd` (any candidates named after it) times only those ---- */

typedef struct {
    const char *x, *w, *y; /* NHWC input, HWIO filter, output */
    int64_t layers;        /* how many of the network's convolutions have this shape */
} rshape;

static int resnet20(int nc, char **named) {
    static const rshape shapes[] = {{"128,28,28,1", "3,3,1,16", "128,28,28,16", 1},
                                    {"128,28,28,16", "3,3,16,16", "128,28,28,16", 6},
                                    {"128,14,14,32", "3,3,32,32", "128,14,14,32", 5},
                                    {"128,7,7,64", "3,3,64,64", "128,7,7,64", 5}};
    const char *cands[8] = {"onednn", "onednn-hwio", "winograd"};
    int ncand = 3;
    if (nc > 0) { /* the candidates named on the command line, in their order */
        ncand = nc < 8 ? nc : 8;
        for (int k = 0; k < ncand; k++) cands[k] = named[k];
    }
    static const char *const opname[] = {"conv2d", "grad_input", "grad_filter"};
    char err[256];
    double total[8] = {0};
    cpu_kernels_set_threads(1);
    printf("%-34s %-12s", "ResNet-20 conv (1 thread), shape", "op");
    for (int k = 0; k < ncand; k++) printf(" %12s", cands[k]);
    printf("\n");
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int o = 0; o < 3; o++) {
            const rshape *r = &shapes[s];
            bcase c = {opname[o], o == 0 ? OP_CONV2D : o == 1 ? OP_CONV2D_GRAD_INPUT : OP_CONV2D_GRAD_FILTER, 2,
                       {o == 1 ? r->y : r->x, o == 2 ? r->y : r->w}, .iattr = {1, 1, 1, 1, 1, 1},
                       .given = o == 1 ? r->x : o == 2 ? r->w : NULL};
            ir_shape y = kh_shape(r->y), w = kh_shape(r->w);
            double mflop = 2e-6 * (double)ir_shape_numel(&y) * (double)(w.dim[0] * w.dim[1] * w.dim[2]);
            printf("%-34s %-12s", r->x, opname[o]);
            for (int k = 0; k < ncand; k++) {
                setenv("MGC_KERNELS", cands[k], 1);
                cpu_tune_reset();
                double ms = time_case(&c, err, sizeof err);
                if (ms < 0) return fprintf(stderr, "%s: %s\n", r->x, err), 1;
                printf(" %6.3f %5.1f", ms, mflop / ms);
                total[k] += ms * (double)r->layers;
            }
            printf("\n");
        }
    printf("%-47s", "total");
    for (int k = 0; k < ncand; k++) printf(" %12.2f", total[k]);
    printf("  (ms per step, these layers)\n");
    unsetenv("MGC_KERNELS");
    cpu_tune_reset();
    return 0;
}

/* ---- issue 14 (ResNet-20 speed): `bench_kernels --fused` times the two
 * programs runtime/cpu/fused.c runs in one loop (batch norm's dx, relu_grad
 * of a sum) on ResNet-20's shapes, beside a program of as many instructions
 * over as many tensors that it runs as instruction loops (x - m turned into
 * m - x; a - b for a + b): ms per call (best_ms), the data in cache from
 * the call before ---- */

/* ms per call of a fused node of program f over inputs of the given shapes (best_ms) */
static double time_fused(const ir_fused *f, int n_in, const ir_shape *in_shape, char *err, size_t cap) {
    ir_module *m = ir_module_new();
    int in[IR_FUSED_MAX_INPUTS];
    const ir_node *in_nodes[IR_FUSED_MAX_INPUTS];
    void *data[IR_FUSED_MAX_INPUTS];
    for (int k = 0; k < n_in; k++) {
        in[k] = ir_add(m, OP_INPUT, NULL, 0, (ir_loc){0});
        ir_node_at(m, in[k])->shape = in_shape[k], ir_node_at(m, in[k])->dtype = IR_F32;
    }
    int fn = ir_add(m, OP_FUSED, in, n_in, (ir_loc){0});
    ir_node_at(m, fn)->fused = ir_fused_add(m, f);
    if (!ir_infer_node(m, fn, err, cap)) return ir_module_free(m), -1;
    for (int k = 0; k < n_in; k++) {
        int64_t n = ir_shape_numel(&in_shape[k]);
        in_nodes[k] = ir_node_at(m, in[k]), data[k] = malloc((size_t)n * 4 + 64);
        for (int64_t j = 0; j < n; j++) ((float *)data[k])[j] = (float)((j * 2654435761u) % 1000) / 1000.0f - 0.3f;
    }
    float *out = malloc((size_t)ir_node_bytes(ir_node_at(m, fn)) + 64);
    int64_t step = 1;
    int training = 1, numerics = 0;
    rt_kernel_args a = {.m = m, .node = ir_node_at(m, fn), .in_nodes = in_nodes, .in = (const void *const *)data,
                        .out = out, .step = &step, .training = &training, .check_numerics = &numerics, .replicas = 1};
    double ms = best_ms(&a, err, cap);
    for (int k = 0; k < n_in; k++) free(data[k]);
    free(out), ir_module_free(m);
    return ms;
}

static int fused_programs(void) {
    static const char *const outs[] = {"128,28,28,16", "128,14,14,32", "128,7,7,64"};
    char err[256];
    cpu_kernels_set_threads(1);
    printf("%-34s %12s %12s\n", "fused program (1 thread, ms), shape", "one loop", "instructions");
    for (int s = 0; s < 3; s++) {
        ir_shape o = kh_shape(outs[s]), c = ir_shape_make(1, &o.dim[3]), one = ir_shape_make(0, NULL);
        const ir_shape bn_in[8] = {o, c, c, c, one, o, c, one}, rg_in[3] = {o, o, o};
        ir_fused bn = {8, {{OP_MUL, 0, 1, 0}, {OP_NEG, 2, -1, 0}, {OP_MUL, 3, 4, 0}, {OP_SUB, 5, 6, 0},
                           {OP_MUL, 11, 10, 0}, {OP_ADD, 8, 12, 0}, {OP_MUL, 9, 7, 0}, {OP_ADD, 13, 14, 0}}};
        ir_fused rg = {2, {{OP_ADD, 0, 1, 0}, {OP_RELU_GRAD, 2, 3, 0}}};
        double t[4];
        t[0] = time_fused(&bn, 8, bn_in, err, sizeof err);
        bn.ins[3] = (ir_finstr){OP_SUB, 6, 5, 0}; /* m - x: not the pattern */
        t[1] = time_fused(&bn, 8, bn_in, err, sizeof err);
        t[2] = time_fused(&rg, 3, rg_in, err, sizeof err);
        rg.ins[0].op = OP_SUB;
        t[3] = time_fused(&rg, 3, rg_in, err, sizeof err);
        for (int k = 0; k < 4; k++)
            if (t[k] < 0) return fprintf(stderr, "%s: %s\n", outs[s], err), 1;
        printf("%-19s %-14s %12.3f %12.3f\n", "batch norm's dx", outs[s], t[0], t[1]);
        printf("%-19s %-14s %12.3f %12.3f\n", "relu_grad of a sum", outs[s], t[2], t[3]);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--resnet20")) return resnet20(argc - 2, argv + 2); /* issue 14 (ResNet-20 speed) */
    if (argc > 1 && !strcmp(argv[1], "--fused")) return fused_programs(); /* issue 14 (ResNet-20 speed) */
    char err[256];
    double total = 0, fused = 0; /* the step as written; with the epilogue pass (issue 14) */
    double flop_ms = 0, mflop = 0; /* the fused step's GEMMs and convolutions */
    cpu_kernels_set_threads(1);
    printf("%-32s %10s %9s\n", "op (batch 64, 1 thread)", "ms/call", "GFLOP/s");
    const char *only = argc > 2 && !strcmp(argv[1], "--only") ? argv[2] : NULL; /* issue 14: the rows naming it */
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        if (only && !strstr(steps[i].name, only)) continue;
        double ms = time_case(&steps[i], err, sizeof err);
        if (ms < 0) {
            fprintf(stderr, "%s: %s\n", steps[i].name, err);
            return 1;
        }
        if (steps[i].mflop > 0) printf("%-32s %10.4f %9.1f\n", steps[i].name, ms, steps[i].mflop / ms);
        else printf("%-32s %10.4f\n", steps[i].name, ms);
        if (steps[i].fusion == 0 || steps[i].fusion == 1) total += ms;
        if (steps[i].fusion == 0 || steps[i].fusion == 2) fused += ms, flop_ms += steps[i].mflop > 0 ? ms : 0, mflop += steps[i].mflop;
    }
    printf("%-32s %10.4f  (%.0f images/s if kernels were all)\n", "total, --no-fuse", total, 64e3 / total);
    printf("%-32s %10.4f  (%.0f images/s if kernels were all)\n", "total, fused (epilogue pass)", fused, 64e3 / fused);
    /* issue 14: the flop rate of the fused step and what its flop-free kernels leave of it */
    printf("fused step: %.1f MFLOP in %.4f ms of GEMMs and convolutions (%.1f GFLOP/s), %.4f ms in ops with no "
           "counted flops; step rate %.1f GFLOP/s\n",
           mflop, flop_ms, mflop / flop_ms, fused - flop_ms, mflop / fused);
    return 0;
}
