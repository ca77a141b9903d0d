/* kernels.c - times each CPU kernel of the mnist CNN training step (batch 64,
 * one thread): conv 3x3x1x32 valid, maxpool 2, dense 5408x128, dense 128x10,
 * sparse cross-entropy, Adam. Prints ms per call of each op and the total. */
#include <stdio.h>
#include <time.h>

#include "../tests/kern/harness.h"

typedef struct {
    const char *name;
    ir_op op;
    int n_in;
    const char *shape[4];
    ir_dtype dtype[4];
    int64_t iattr[IR_MAX_IATTR];
    double fattr[IR_MAX_FATTR];
    const char *given;
    int fusion;     /* issue 14: 1 an op the epilogue pass replaces, 2 the fused op it runs instead */
} bcase;

static const bcase steps[] = {
    {"fwd conv2d", OP_CONV2D, 2, {"64,28,28,1", "3,3,1,32"}, .iattr = {1, 1}, .fusion = 1},
    {"fwd conv bias add", OP_ADD, 2, {"64,26,26,32", "32"}, .dtype = {0}, .fusion = 1},
    {"fwd relu conv", OP_RELU, 1, {"64,26,26,32"}, .dtype = {0}, .fusion = 1},
    {"fwd max_pool2d", OP_MAX_POOL2D, 1, {"64,26,26,32"}, .iattr = {2, 2, 2, 2}},
    {"fwd matmul 5408x128", OP_MATMUL, 2, {"64,5408", "5408,128"}, .dtype = {0}, .fusion = 1},
    {"fwd bias add 128", OP_ADD, 2, {"64,128", "128"}, .dtype = {0}, .fusion = 1},
    {"fwd relu 128", OP_RELU, 1, {"64,128"}, .dtype = {0}, .fusion = 1},
    {"fwd matmul 128x10", OP_MATMUL, 2, {"64,128", "128,10"}, .dtype = {0}, .fusion = 1},
    {"fwd bias add 10", OP_ADD, 2, {"64,10", "10"}, .dtype = {0}, .fusion = 1},
    {"fwd sparse_xent", OP_SPARSE_XENT, 2, {"64,10", "64"}, .dtype = {0, IR_I32}},
    {"fwd reduce_mean loss", OP_REDUCE_MEAN, 1, {"64"}, .iattr = {1}},
    {"fwd argmax_match", OP_ARGMAX_MATCH, 2, {"64,10", "64"}, .dtype = {0, IR_I32}},
    {"bwd sparse_xent_grad", OP_SPARSE_XENT_GRAD, 3, {"64,10", "64", "64"}, .dtype = {0, IR_I32, 0}},
    {"bwd matmul dW 128x10", OP_MATMUL, 2, {"64,128", "64,10"}, .iattr = {1, 0}},
    {"bwd reduce_sum db 10", OP_REDUCE_SUM, 1, {"64,10"}, .iattr = {1}},
    {"bwd matmul dx 10->128", OP_MATMUL, 2, {"64,10", "128,10"}, .iattr = {0, 1}},
    {"bwd relu_grad 128", OP_RELU_GRAD, 2, {"64,128", "64,128"}, .dtype = {0}},
    {"bwd matmul dW 5408x128", OP_MATMUL, 2, {"64,5408", "64,128"}, .iattr = {1, 0}},
    {"bwd reduce_sum db 128", OP_REDUCE_SUM, 1, {"64,128"}, .iattr = {1}},
    {"bwd matmul dx 128->5408", OP_MATMUL, 2, {"64,128", "5408,128"}, .iattr = {0, 1}},
    {"bwd max_pool2d_grad", OP_MAX_POOL2D_GRAD, 2, {"64,26,26,32", "64,13,13,32"}, .iattr = {2, 2, 2, 2}, .fusion = 1},
    {"bwd relu_grad conv", OP_RELU_GRAD, 2, {"64,26,26,32", "64,26,26,32"}, .dtype = {0}, .fusion = 1},
    {"bwd reduce_sum conv db", OP_REDUCE_SUM, 1, {"64,26,26,32"}, .iattr = {7}},
    {"bwd conv2d_grad_filter", OP_CONV2D_GRAD_FILTER, 2, {"64,28,28,1", "64,26,26,32"}, .iattr = {1, 1}, .given = "3,3,1,32"},
    /* issue 14: what the epilogue pass runs instead of conv2d + bias add + relu, matmul + bias add + relu,
     * max_pool2d_grad + relu_grad */
    {"fused conv2d+bias+relu", OP_CONV2D_EPILOGUE, 3, {"64,28,28,1", "3,3,1,32", "32"},
     .iattr = {1, 1, 0, 0, 0, 0, 1, 1, 1, EPI_RELU}, .fusion = 2},
    {"fused dense 5408x128 relu", OP_MATMUL_EPILOGUE, 3, {"64,5408", "5408,128", "128"}, .iattr = {0, 0, EPI_RELU},
     .fusion = 2},
    {"fused dense 128x10", OP_MATMUL_EPILOGUE, 3, {"64,128", "128,10", "10"}, .iattr = {0, 0, EPI_NONE}, .fusion = 2},
    {"fused max_pool2d_relu_grad", OP_MAX_POOL2D_RELU_GRAD, 2, {"64,26,26,32", "64,13,13,32"}, .iattr = {2, 2, 2, 2},
     .fusion = 2},
    {"opt adam 5408x128", OP_ADAM_UPDATE, 4, {"5408,128", "5408,128", "5408,128", "5408,128"},
     .fattr = {1e-3, 0.9, 0.999, 1e-7, 0}},
    {"opt adam small (5 params)", OP_ADAM_UPDATE, 4, {"1738", "1738", "1738", "1738"},
     .fattr = {1e-3, 0.9, 0.999, 1e-7, 0}},
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ms per call: warm up, then repeat until about 0.2 s have passed */
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
    if (kh_run(&t, err, cap)) goto done;
    int reps = 0;
    double t0 = now(), t1;
    do {
        if (kh_run(&t, err, cap)) goto done;
        reps++;
    } while ((t1 = now()) - t0 < 0.2);
    ms = 1e3 * (t1 - t0) / reps;
done:
    kh_free(&t);
    return ms;
}

int main(void) {
    char err[256];
    double total = 0, fused = 0; /* the step as written; with the epilogue pass (issue 14) */
    cpu_kernels_set_threads(1);
    printf("%-32s %10s\n", "op (batch 64, 1 thread)", "ms/call");
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        double ms = time_case(&steps[i], err, sizeof err);
        if (ms < 0) {
            fprintf(stderr, "%s: %s\n", steps[i].name, err);
            return 1;
        }
        printf("%-32s %10.4f\n", steps[i].name, ms);
        if (steps[i].fusion != 2) total += ms;
        if (steps[i].fusion != 1) fused += ms;
    }
    printf("%-32s %10.4f  (%.0f images/s if kernels were all)\n", "total, --no-fuse", total, 64e3 / total);
    printf("%-32s %10.4f  (%.0f images/s if kernels were all)\n", "total, fused (epilogue pass)", fused, 64e3 / fused);
    return 0;
}
