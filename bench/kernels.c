/* kernels.c - times each CPU kernel of the mnist CNN training step (batch 64,
 * one thread): conv 3x3x1x32 valid, maxpool 2, dense 5408x128, dense 128x10,
 * sparse cross-entropy, Adam. Prints ms per call of each op and the total,
 * then (issue 14) the fused kernels the fuse pass makes of the step's bias
 * adds, relus and relu_grads, and the total with them in those ops' place. */
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
} bcase;

static const bcase steps[] = {
    {"fwd conv2d", OP_CONV2D, 2, {"64,28,28,1", "3,3,1,32"}, .iattr = {1, 1}},
    {"fwd conv bias add", OP_ADD, 2, {"64,26,26,32", "32"}, .dtype = {0}},
    {"fwd relu conv", OP_RELU, 1, {"64,26,26,32"}, .dtype = {0}},
    {"fwd max_pool2d", OP_MAX_POOL2D, 1, {"64,26,26,32"}, .iattr = {2, 2, 2, 2}},
    {"fwd matmul 5408x128", OP_MATMUL, 2, {"64,5408", "5408,128"}, .dtype = {0}},
    {"fwd bias add 128", OP_ADD, 2, {"64,128", "128"}, .dtype = {0}},
    {"fwd relu 128", OP_RELU, 1, {"64,128"}, .dtype = {0}},
    {"fwd matmul 128x10", OP_MATMUL, 2, {"64,128", "128,10"}, .dtype = {0}},
    {"fwd bias add 10", OP_ADD, 2, {"64,10", "10"}, .dtype = {0}},
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
    {"bwd max_pool2d_grad", OP_MAX_POOL2D_GRAD, 2, {"64,26,26,32", "64,13,13,32"}, .iattr = {2, 2, 2, 2}},
    {"bwd relu_grad conv", OP_RELU_GRAD, 2, {"64,26,26,32", "64,26,26,32"}, .dtype = {0}},
    {"bwd reduce_sum conv db", OP_REDUCE_SUM, 1, {"64,26,26,32"}, .iattr = {7}},
    {"bwd conv2d_grad_filter", OP_CONV2D_GRAD_FILTER, 2, {"64,28,28,1", "64,26,26,32"}, .iattr = {1, 1}, .given = "3,3,1,32"},
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

/* ---- issue 14: the step's fused nodes (passes/fuse.c) ----
 * what each replaces: the unfused rows named in `replaces` */
typedef struct {
    const char *name;
    int n_in;
    const char *shape[3];
    int n;
    ir_finstr ins[2];
    const char *replaces[2];
} fcase;

static const fcase fused_steps[] = {
    {"fwd fused bias+relu conv", 2, {"64,26,26,32", "32"}, 2, {{OP_ADD, 0, 1, 0}, {OP_RELU, 2, -1, 0}},
     {"fwd conv bias add", "fwd relu conv"}},
    {"fwd fused bias+relu 128", 2, {"64,128", "128"}, 2, {{OP_ADD, 0, 1, 0}, {OP_RELU, 2, -1, 0}},
     {"fwd bias add 128", "fwd relu 128"}},
    {"bwd fused bias+relu_grad 128", 3, {"64,128", "128", "64,128"}, 2, {{OP_ADD, 0, 1, 0}, {OP_RELU_GRAD, 3, 2, 0}},
     {"bwd relu_grad 128", NULL}},
    {"bwd fused bias+relu_grad conv", 3, {"64,26,26,32", "32", "64,26,26,32"}, 2,
     {{OP_ADD, 0, 1, 0}, {OP_RELU_GRAD, 3, 2, 0}}, {"bwd relu_grad conv", NULL}},
};

static double time_fused(const fcase *c, char *err, size_t cap) {
    one_op t = {.m = ir_module_new(), .n_in = c->n_in, .step = 1, .training = 1};
    int idx[3];
    for (int i = 0; i < c->n_in; i++) {
        idx[i] = ir_add(t.m, OP_INPUT, NULL, 0, (ir_loc){0});
        ir_node *x = ir_node_at(t.m, idx[i]);
        x->shape = kh_shape(c->shape[i]), x->dtype = IR_F32;
    }
    t.node = ir_add(t.m, OP_FUSED, idx, c->n_in, (ir_loc){0});
    ir_fused f = {.n = c->n};
    memcpy(f.ins, c->ins, sizeof c->ins);
    ir_node *n = ir_node_at(t.m, t.node);
    n->fused = ir_fused_add(t.m, &f);
    double ms = -1;
    if (!ir_infer_node(t.m, t.node, err, cap)) return ir_module_free(t.m), -1;
    for (int i = 0; i < c->n_in; i++) {
        t.in_nodes[i] = ir_node_at(t.m, idx[i]);
        size_t len = (size_t)ir_shape_numel(&t.in_nodes[i]->shape);
        t.in[i] = aligned_alloc(64, (len * 4 + 64) / 64 * 64);
        for (size_t j = 0; j < len; j++) ((float *)t.in[i])[j] = (float)((j * 2654435761u) % 1000) / 1000.0f - 0.3f;
    }
    t.out = aligned_alloc(64, ((size_t)ir_node_bytes(n) + 64) / 64 * 64);
    t.args = (rt_kernel_args){.m = t.m, .node = n, .in_nodes = t.in_nodes, .in = (const void *const *)t.in,
                              .out = t.out, .step = &t.step, .training = &t.training, .replicas = 1};
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
    double total = 0, unfused_ms[sizeof steps / sizeof *steps];
    cpu_kernels_set_threads(1);
    printf("%-28s %10s\n", "op (batch 64, 1 thread)", "ms/call");
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        double ms = time_case(&steps[i], err, sizeof err);
        if (ms < 0) {
            fprintf(stderr, "%s: %s\n", steps[i].name, err);
            return 1;
        }
        printf("%-28s %10.4f\n", steps[i].name, ms);
        total += ms, unfused_ms[i] = ms;
    }
    printf("%-28s %10.4f  (%.0f images/s if kernels were all)\n", "total", total, 64e3 / total);
    double fused_total = total;
    for (size_t k = 0; k < sizeof fused_steps / sizeof *fused_steps; k++) {
        const fcase *c = &fused_steps[k];
        double ms = time_fused(c, err, sizeof err), was = 0;
        if (ms < 0) return fprintf(stderr, "%s: %s\n", c->name, err), 1;
        for (int r = 0; r < 2 && c->replaces[r]; r++)
            for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
                if (!strcmp(steps[i].name, c->replaces[r])) was += unfused_ms[i];
        /* a backward bias+relu_grad also saves the forward bias add's output: nothing to subtract here */
        printf("%-28s %10.4f  (replaces %.4f)\n", c->name, ms, was);
        fused_total += ms - was;
    }
    printf("%-28s %10.4f  (%.0f images/s if kernels were all)\n", "total fused", fused_total, 64e3 / fused_total);
    return 0;
}
