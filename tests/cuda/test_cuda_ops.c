/* test_cuda_ops.c - each CUDA kernel against the CPU kernel of the same node
 * (runtime/cpu), on the first GPU, and the backend's events and collectives
 * on one device. Exits 77 ("SKIP: no CUDA device") without one.
 * Issue 15: the comparison is NaN-aware (NaN where the CPU has a number, or
 * the reverse, fails; so does an all-NaN kernel) and typed (casts to i32/u8),
 * optimizer slots that must be >= 0 (Adam's v) get valid data, and every
 * kernel family has a case. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/backend.h"
#include "../../runtime/cpu/cpu_kernels.h"
#include "../../runtime/cuda/cuda_backend.h"

enum { MAX_IN = 8, CLASSES = 7 }; /* 8: conv2d_bn_epilogue has 7 (issue 14) */

static int failures;
static rt_backend *gpu;

/* inputs of one node: host data, filled once, copied for each backend */
typedef struct {
    ir_module *m;
    int node;
    void *host[MAX_IN];
} kase;

static int input(ir_module *m, ir_dtype t, int rank, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    int64_t dims[4] = {d0, d1, d2, d3};
    ir_loc loc = {"test", 0, 0};
    int i = ir_add(m, OP_INPUT, NULL, 0, loc);
    ir_node *n = ir_node_at(m, i);
    n->dtype = t;
    n->shape = ir_shape_make(rank, dims);
    return i;
}

/* deterministic data: f32 in [-1, 1) ([0, 1) for an input named "positive", [-400, 400) for "wide"),
 * i32 labels in [0, CLASSES) */
static void *fill(const ir_node *n, unsigned seed) {
    int64_t count = ir_shape_numel(&n->shape);
    void *p = malloc((size_t)ir_node_bytes(n) + 1);
    for (int64_t i = 0; i < count; i++) {
        seed = seed * 1103515245u + 12345u;
        if (n->dtype == IR_I32)
            ((int32_t *)p)[i] = (int32_t)((seed >> 16) % CLASSES);
        else
            ((float *)p)[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
        if (n->dtype == IR_F32 && n->name && !strcmp(n->name, "positive")) ((float *)p)[i] = fabsf(((float *)p)[i]);
        if (n->dtype == IR_F32 && n->name && !strcmp(n->name, "wide")) ((float *)p)[i] *= 400.0f;
    }
    return p;
}

static void *dup(const void *p, size_t bytes) {
    void *q = malloc(bytes + 1);
    memcpy(q, p, bytes);
    return q;
}

static const ir_node *node_of(const kase *c, int i) { return &c->m->g.nodes[i]; }

/* the step counter every kernel sees (issue 15: the GPU reads it from a device word the
 * backend rewrites when it changes; optimizers() runs its updates at several steps) */
static int64_t step = 3;
static int training = 1; /* issue 14: 0 runs the next checks as eval and predict do */

static rt_kernel_args args_of(const kase *c, const ir_node **in_nodes, const void **in, void *out) {
    const ir_node *n = node_of(c, c->node);
    for (int i = 0; i < n->n_in; i++) in_nodes[i] = node_of(c, n->in[i]);
    rt_kernel_args k = {.m = c->m, .node = n, .in_nodes = in_nodes, .in = in, .out = out, .step = &step,
                        .replica = 1, .replicas = 2, .training = &training};
    return k;
}

/* runs the node on the CPU; returns the output (host) */
static float *run_cpu(const kase *c) {
    const ir_node *n = node_of(c, c->node), *in_nodes[MAX_IN];
    const void *in[MAX_IN];
    void *own[MAX_IN];
    for (int i = 0; i < n->n_in; i++) in[i] = own[i] = dup(c->host[i], (size_t)ir_node_bytes(node_of(c, n->in[i])));
    void *out = ir_ops[n->op].flags & OPF_INPLACE ? own[0] : malloc((size_t)ir_node_bytes(n) + 1);
    char err[256];
    rt_kernel_args k = args_of(c, in_nodes, in, out);
    if (cpu_kernel_run(&k, err, sizeof err) != 0) fprintf(stderr, "FAIL: cpu %s: %s\n", ir_ops[n->op].name, err), failures++;
    for (int i = 0; i < n->n_in; i++)
        if (own[i] != out) free(own[i]);
    return out;
}

/* runs the node on gpu 0; returns the output (host) */
static float *run_gpu(const kase *c) {
    const ir_node *n = node_of(c, c->node), *in_nodes[MAX_IN];
    const void *in[MAX_IN];
    void *dev[MAX_IN];
    for (int i = 0; i < n->n_in; i++) {
        size_t bytes = (size_t)ir_node_bytes(node_of(c, n->in[i]));
        in[i] = dev[i] = gpu->i->alloc(gpu, 0, bytes);
        gpu->i->upload(gpu, 0, STREAM_COMPUTE, dev[i], c->host[i], bytes);
    }
    void *out = ir_ops[n->op].flags & OPF_INPLACE ? dev[0] : gpu->i->alloc(gpu, 0, (size_t)ir_node_bytes(n));
    float *host = malloc((size_t)ir_node_bytes(n) + 1);
    rt_kernel_args k = args_of(c, in_nodes, in, out);
    if (gpu->i->launch(gpu, 0, STREAM_COMPUTE, &k) != 0 ||
        gpu->i->download(gpu, 0, STREAM_COMPUTE, host, out, (size_t)ir_node_bytes(n)) != 0 || gpu->i->sync(gpu) != 0)
        fprintf(stderr, "FAIL: gpu %s: %s\n", ir_ops[n->op].name, gpu->err), failures++;
    for (int i = 0; i < n->n_in; i++) gpu->i->dealloc(gpu, 0, dev[i]);
    if (!(ir_ops[n->op].flags & OPF_INPLACE)) gpu->i->dealloc(gpu, 0, out);
    return host;
}

/* element i of an output of type t, as a double */
static double value(ir_dtype t, const void *p, int64_t i) {
    switch (t) {
    case IR_F64: return ((const double *)p)[i];
    case IR_I32: return ((const int32_t *)p)[i];
    case IR_U8: return ((const uint8_t *)p)[i];
    default: return ((const float *)p)[i];
    }
}

/* |want - got|, NaN-aware: 0 when both are NaN (or equal infinities), infinite
 * when only one is NaN; fmax alone would skip a NaN and pass an all-NaN kernel */
static double diff(double want, double got) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got) ? 0 : INFINITY;
    if (want == got) return 0;
    return fabs(want - got);
}

static int out_dtype = -1; /* check_as: the output dtype of the next node (casts) */
static const ir_fused *program; /* issue 14: the program of the next fused node checked */

/* adds op over the given inputs, infers its shape (or keeps a given one), compares */
static void check(ir_module *m, ir_op op, const int *ins, int n_in, const int64_t *ia, const double *fa,
                  const ir_shape *given, double tol) {
    ir_loc loc = {"test", 0, 0};
    char err[256];
    kase c = {m, ir_add(m, op, ins, n_in, loc), {0}};
    ir_node *n = ir_node_at(m, c.node);
    for (int i = 0; ia && i < IR_MAX_IATTR; i++) n->iattr[i] = ia[i];
    for (int i = 0; fa && i < IR_MAX_FATTR; i++) n->fattr[i] = fa[i];
    if (given) n->shape = *given, n->dtype = IR_F32;
    if (out_dtype >= 0) n->dtype = (ir_dtype)out_dtype, out_dtype = -1;
    if (op == OP_FUSED) n->fused = program;
    if (!ir_infer_node(m, c.node, err, sizeof err)) {
        fprintf(stderr, "FAIL: %s: shape: %s\n", ir_ops[op].name, err), failures++;
        return;
    }
    for (int i = 0; i < n_in; i++) c.host[i] = fill(node_of(&c, ins[i]), 17u * (unsigned)(i + 1) + (unsigned)op);
    float *want = run_cpu(&c), *got = run_gpu(&c);
    double worst = 0;
    for (int64_t i = 0; i < ir_shape_numel(&n->shape); i++) {
        double d = diff(value(n->dtype, want, i), value(n->dtype, got, i));
        if (!(d <= worst)) worst = d; /* keeps an infinite or NaN difference */
    }
    printf("%-20s max |cpu - gpu| = %.3g\n", ir_ops[op].name, worst);
    if (!(worst <= tol)) fprintf(stderr, "FAIL: %s differs by %g > %g\n", ir_ops[op].name, worst, tol), failures++;
    for (int i = 0; i < n_in; i++) free(c.host[i]);
    free(want), free(got);
}

static void elementwise_and_softmax(ir_module *m) {
    int a = input(m, IR_F32, 2, 8, 5, 0, 0), v = input(m, IR_F32, 1, 5, 0, 0, 0);
    int lab = input(m, IR_I32, 1, 8, 0, 0, 0), x = input(m, IR_F32, 2, 8, CLASSES, 0, 0);
    int dy = input(m, IR_F32, 1, 8, 0, 0, 0);
    check(m, OP_ADD, (int[]){a, v}, 2, NULL, NULL, NULL, 0);
    check(m, OP_DIV, (int[]){v, a}, 2, NULL, NULL, NULL, 1e-6);
    check(m, OP_SIGMOID, (int[]){a}, 1, NULL, NULL, NULL, 1e-6);
    check(m, OP_RELU_GRAD, (int[]){a, a}, 2, NULL, NULL, NULL, 0);
    check(m, OP_REDUCE_SUM, (int[]){a}, 1, (int64_t[]){1, 0}, NULL, NULL, 1e-5);
    check(m, OP_REDUCE_MEAN, (int[]){a}, 1, (int64_t[]){3, 0}, NULL, NULL, 1e-6);
    check(m, OP_SOFTMAX, (int[]){x}, 1, NULL, NULL, NULL, 1e-6);
    check(m, OP_SPARSE_XENT, (int[]){x, lab}, 2, NULL, NULL, NULL, 1e-5);
    check(m, OP_SPARSE_XENT_GRAD, (int[]){x, lab, dy}, 3, NULL, NULL, NULL, 1e-6);
    check(m, OP_ARGMAX_MATCH, (int[]){x, lab}, 2, NULL, NULL, NULL, 0);
    check(m, OP_DROPOUT, (int[]){a}, 1, (int64_t[]){42}, (double[]){0.3}, NULL, 1e-6);
    /* issue 14 (char_gpt speed): causal_softmax and its gradient, 9 rows of 7 columns */
    int att = input(m, IR_F32, 3, 3, 9, 7, 0), datt = input(m, IR_F32, 3, 3, 9, 7, 0);
    check(m, OP_CAUSAL_SOFTMAX, (int[]){att}, 1, NULL, (double[IR_MAX_FATTR]){0.4}, NULL, 1e-6);
    check(m, OP_CAUSAL_SOFTMAX_GRAD, (int[]){att, datt}, 2, NULL, (double[IR_MAX_FATTR]){0.4}, NULL, 1e-5);
    /* issue 14: attention's dropout gradient in causal_softmax_grad (the mask at the same step and replica) */
    check(m, OP_CAUSAL_SOFTMAX_DROPOUT_GRAD, (int[]){att, datt}, 2, (int64_t[]){42}, (double[IR_MAX_FATTR]){0.4, 0.3},
          NULL, 1e-5);
    check(m, OP_NORMALIZE, (int[]){att}, 1, NULL, (double[IR_MAX_FATTR]){1e-5}, NULL, 1e-5);
    check(m, OP_NORMALIZE_GRAD, (int[]){att, datt}, 2, NULL, (double[IR_MAX_FATTR]){1e-5}, NULL, 1e-4);
    /* issue 14: causal_matmul, each triangle, transposed operands (geam then trmm) and not */
    int sq = input(m, IR_F32, 3, 3, 9, 9, 0), rect = input(m, IR_F32, 3, 3, 9, 7, 0);
    check(m, OP_CAUSAL_MATMUL, (int[]){rect, rect}, 2, (int64_t[]){0, 1, 0, 0}, NULL, NULL, 1e-5);
    check(m, OP_CAUSAL_MATMUL, (int[]){rect, rect}, 2, (int64_t[]){0, 1, 0, 1}, NULL, NULL, 1e-5);
    check(m, OP_CAUSAL_MATMUL, (int[]){sq, rect}, 2, (int64_t[]){0, 0, 1, 0}, NULL, NULL, 1e-5);
    check(m, OP_CAUSAL_MATMUL, (int[]){sq, rect}, 2, (int64_t[]){1, 0, 1, 1}, NULL, NULL, 1e-5);
    check(m, OP_CAUSAL_MATMUL, (int[]){sq, sq}, 2, (int64_t[]){0, 1, 1, 0}, NULL, NULL, 1e-5);
    check(m, OP_CAUSAL_MATMUL, (int[]){sq, sq}, 2, (int64_t[]){1, 0, 2, 0}, NULL, NULL, 1e-5);
    check(m, OP_CAUSAL_MATMUL, (int[]){sq, sq}, 2, (int64_t[]){0, 1, 2, 1}, NULL, NULL, 1e-5);
    /* issue 14: the scores and their softmax (or its gradient, with and without dropout) in one op */
    int w = input(m, IR_F32, 3, 3, 9, 9, 0);
    check(m, OP_CAUSAL_MATMUL_SOFTMAX, (int[]){rect, rect}, 2, (int64_t[]){0, 1}, (double[IR_MAX_FATTR]){0.4}, NULL, 1e-5);
    check(m, OP_CAUSAL_MATMUL_SOFTMAX_GRAD, (int[]){rect, rect, w}, 3, (int64_t[]){0, 1, 42},
          (double[IR_MAX_FATTR]){0.4, 0.3}, NULL, 1e-5);
    check(m, OP_CAUSAL_MATMUL_SOFTMAX_GRAD, (int[]){rect, rect, w}, 3, (int64_t[]){0, 1, 0},
          (double[IR_MAX_FATTR]){0.4, 0}, NULL, 1e-5);
    /* issue 14: batch norm in training (per channel of [3, 9, 7]) */
    int cm = input(m, IR_F32, 1, 7, 0, 0, 0), cs = input(m, IR_F32, 1, 7, 0, 0, 0);
    int cb = input(m, IR_F32, 1, 7, 0, 0, 0);
    check(m, OP_CHANNEL_MEAN, (int[]){att}, 1, NULL, NULL, NULL, 1e-5);
    check(m, OP_CHANNEL_VAR, (int[]){att, cm}, 2, NULL, NULL, NULL, 1e-5);
    check(m, OP_CHANNEL_SUM_DOT, (int[]){att, cm, datt}, 3, NULL, NULL, NULL, 1e-4);
    check(m, OP_SCALE_SHIFT, (int[]){att, cm, cs, cb}, 4, NULL, NULL, NULL, 1e-6);
}

static void dense_and_conv(ir_module *m) {
    int a = input(m, IR_F32, 2, 8, 5, 0, 0), w = input(m, IR_F32, 2, 6, 5, 0, 0);
    int img = input(m, IR_F32, 4, 2, 6, 6, 3), f = input(m, IR_F32, 4, 3, 3, 3, 4);
    int dy = input(m, IR_F32, 4, 2, 4, 4, 4), p = input(m, IR_F32, 2, 6, 5, 0, 0);
    check(m, OP_MATMUL, (int[]){a, w}, 2, (int64_t[]){0, 1}, NULL, NULL, 1e-5);
    check(m, OP_CONV2D, (int[]){img, f}, 2, (int64_t[]){1, 1, 0, 0, 0, 0}, NULL, NULL, 1e-4);
    ir_shape xs = node_of(&(kase){m, 0, {0}}, img)->shape, fs = node_of(&(kase){m, 0, {0}}, f)->shape;
    check(m, OP_CONV2D_GRAD_INPUT, (int[]){dy, f}, 2, (int64_t[]){1, 1, 0, 0, 0, 0}, NULL, &xs, 1e-4);
    check(m, OP_CONV2D_GRAD_FILTER, (int[]){img, dy}, 2, (int64_t[]){1, 1, 0, 0, 0, 0}, NULL, &fs, 1e-4);
    check(m, OP_MAX_POOL2D, (int[]){img}, 1, (int64_t[]){2, 2, 2, 2, 0, 0, 0, 0}, NULL, NULL, 0);
    check(m, OP_AVG_POOL2D, (int[]){img}, 1, (int64_t[]){3, 3, 1, 1, 1, 1, 1, 1}, NULL, NULL, 1e-6);
    int mm = input(m, IR_F32, 2, 6, 5, 0, 0), vv = input(m, IR_F32, 2, 6, 5, 0, 0); /* Adam's v >= 0 */
    ir_node_at(m, vv)->name = ir_intern(m, "positive");
    check(m, OP_ADAM_UPDATE, (int[]){p, w, mm, vv}, 4, NULL, (double[]){1e-3, 0.9, 0.999, 1e-7, 0}, NULL, 1e-6);
}

/* issue 12: the optimizers with weight decay and clipping (the norm input
 * last), and sq_norm over several inputs */
static void optimizers(ir_module *m) {
    int p = input(m, IR_F32, 2, 6, 5, 0, 0), g = input(m, IR_F32, 2, 6, 5, 0, 0), s1 = input(m, IR_F32, 2, 6, 5, 0, 0);
    int v = input(m, IR_F32, 2, 6, 5, 0, 0), sq = input(m, IR_F32, 0, 0, 0, 0, 0), b = input(m, IR_F32, 1, 7, 0, 0, 0);
    ir_node_at(m, v)->name = ir_intern(m, "positive"), ir_node_at(m, sq)->name = ir_intern(m, "positive");
    const double adam_like[6] = {1e-2, 0.9, 0.999, 1e-7, 0.01, 0.5};
    /* issue 15: steps 1 (adagrad's first), 2, 5 and back to 3: the device word follows the host's
     * counter; the plan's schedule decays the rate with the step */
    m->opt.schedule.kind = LR_EXPONENTIAL_DECAY, m->opt.schedule.decay_steps = 2, m->opt.schedule.decay_rate = 0.5;
    const int64_t steps[] = {1, 2, 5, 3};
    for (int k = 0; k < 4; k++) {
        step = steps[k];
        check(m, OP_SGD_UPDATE, (int[]){p, g, s1, sq}, 4, (int64_t[]){1}, (double[]){0.1, 0.9, 0.01, 0.5}, NULL, 1e-6);
        check(m, OP_ADAM_UPDATE, (int[]){p, g, s1, v, sq}, 5, NULL, adam_like, NULL, 1e-6);
        check(m, OP_RMSPROP_UPDATE, (int[]){p, g, v, s1, sq}, 5, NULL, (double[]){1e-2, 0.9, 0.5, 1e-7, 0.01, 0.5}, NULL, 1e-6);
        check(m, OP_ADAGRAD_UPDATE, (int[]){p, g, v, sq}, 4, NULL, (double[]){0.1, 0.1, 1e-7, 0.01, 0.5}, NULL, 1e-6);
        check(m, OP_NADAM_UPDATE, (int[]){p, g, s1, v, sq}, 5, NULL, adam_like, NULL, 1e-6);
        check(m, OP_LAMB_UPDATE, (int[]){p, g, s1, v, sq}, 5, NULL, adam_like, NULL, 1e-6);
        check(m, OP_LAMB_UPDATE, (int[]){p, g, s1, v}, 4, NULL, (double[]){1e-2, 0.9, 0.999, 1e-6, 0}, NULL, 1e-6);
    }
    step = 3;
    m->opt.schedule.kind = LR_CONSTANT;
    check(m, OP_SQ_NORM, (int[]){p, b, g}, 3, NULL, NULL, NULL, 1e-5);
}

/* grouped and dilated conv2d (symmetric pads, as cuDNN needs), both gradients, conv2d_transpose */
static void grouped_dilated_transposed(ir_module *m) {
    int img = input(m, IR_F32, 4, 2, 7, 7, 4), f = input(m, IR_F32, 4, 3, 3, 2, 6);
    int dy = input(m, IR_F32, 4, 2, 7, 7, 6), x = input(m, IR_F32, 4, 2, 4, 4, 3), wt = input(m, IR_F32, 4, 3, 3, 5, 3);
    const int64_t ga[IR_MAX_IATTR] = {1, 1, 2, 2, 2, 2, 2, 2, 2}; /* pads 2, dilation 2, groups 2: 7x7 -> 7x7 */
    check(m, OP_CONV2D, (int[]){img, f}, 2, ga, NULL, NULL, 1e-4);
    ir_shape xs = node_of(&(kase){m, 0, {0}}, img)->shape, fs = node_of(&(kase){m, 0, {0}}, f)->shape;
    check(m, OP_CONV2D_GRAD_INPUT, (int[]){dy, f}, 2, ga, NULL, &xs, 1e-4);
    check(m, OP_CONV2D_GRAD_FILTER, (int[]){img, dy}, 2, ga, NULL, &fs, 1e-4);
    check(m, OP_CONV2D_TRANSPOSE, (int[]){x, wt}, 2, (int64_t[IR_MAX_IATTR]){2, 2, 0, 0, 0, 0, 1, 1}, NULL, NULL, 1e-4);
}

/* issue 13: one_hot of i32 ids in [0, CLASSES) at depth CLASSES and at
 * depth 5 (ids 5 and 6 outside: zero rows) */
static void one_hot(ir_module *m) {
    int ids = input(m, IR_I32, 2, 4, 9, 0, 0);
    check(m, OP_ONE_HOT, (int[]){ids}, 1, (int64_t[IR_MAX_IATTR]){CLASSES}, NULL, NULL, 0);
    check(m, OP_ONE_HOT, (int[]){ids}, 1, (int64_t[IR_MAX_IATTR]){5}, NULL, NULL, 0);
}

/* issue 15: matmul without trans_b, and with trans_a; batched */
static void matmuls(ir_module *m) {
    int a = input(m, IR_F32, 2, 8, 5, 0, 0), b = input(m, IR_F32, 2, 5, 6, 0, 0), at = input(m, IR_F32, 2, 5, 8, 0, 0);
    int ba = input(m, IR_F32, 3, 3, 4, 5, 0), bb = input(m, IR_F32, 3, 3, 5, 2, 0);
    check(m, OP_MATMUL, (int[]){a, b}, 2, (int64_t[]){0, 0}, NULL, NULL, 1e-5);
    check(m, OP_MATMUL, (int[]){at, b}, 2, (int64_t[]){1, 0}, NULL, NULL, 1e-5);
    check(m, OP_MATMUL, (int[]){ba, bb}, 2, (int64_t[]){0, 0}, NULL, NULL, 1e-5);
}

/* issue 15: pooling gradients (dy has the pooled shape) */
static void pool_grads(ir_module *m) {
    int img = input(m, IR_F32, 4, 2, 6, 6, 3), dy2 = input(m, IR_F32, 4, 2, 3, 3, 3), dy3 = input(m, IR_F32, 4, 2, 6, 6, 3);
    ir_shape xs = node_of(&(kase){m, 0, {0}}, img)->shape;
    check(m, OP_MAX_POOL2D_GRAD, (int[]){img, dy2}, 2, (int64_t[]){2, 2, 2, 2, 0, 0, 0, 0}, NULL, &xs, 1e-6);
    check(m, OP_AVG_POOL2D_GRAD, (int[]){img, dy3}, 2, (int64_t[]){3, 3, 1, 1, 1, 1, 1, 1}, NULL, &xs, 1e-6);
}

/* issue 15: the optimizers without their optional slots, not covered above */
static void plain_optimizers(ir_module *m) {
    int p = input(m, IR_F32, 1, 300, 0, 0, 0), g = input(m, IR_F32, 1, 300, 0, 0, 0), ms = input(m, IR_F32, 1, 300, 0, 0, 0);
    ir_node_at(m, ms)->name = ir_intern(m, "positive");
    check(m, OP_SGD_UPDATE, (int[]){p, g}, 2, (int64_t[]){0}, (double[]){0.1, 0, 0, 0}, NULL, 1e-6);
    check(m, OP_SGD_UPDATE, (int[]){p, g, ms}, 3, (int64_t[]){0}, (double[]){0.1, 0.9, 0, 0}, NULL, 1e-6);
    check(m, OP_RMSPROP_UPDATE, (int[]){p, g, ms}, 3, NULL, (double[]){1e-2, 0.9, 0, 1e-7, 0, 0}, NULL, 1e-6);
    check(m, OP_ADAGRAD_UPDATE, (int[]){p, g, ms}, 3, NULL, (double[]){0.1, 0.1, 1e-7, 0, 0}, NULL, 1e-6);
}

/* issue 15: casts (saturating, as the CPU), broadcast_to, softmax_grad, log_softmax,
 * and reductions long enough for the two-level kernel (odd sizes, every axis mask kind) */
static void casts_and_reductions(ir_module *m) {
    int w = input(m, IR_F32, 2, 9, 37, 0, 0), ids = input(m, IR_I32, 1, 29, 0, 0, 0);
    int v = input(m, IR_F32, 2, 1, 37, 0, 0), y = input(m, IR_F32, 2, 9, 37, 0, 0), dy = input(m, IR_F32, 2, 9, 37, 0, 0);
    int big = input(m, IR_F32, 4, 7, 31, 29, 3); /* 6,293 and 18,879 summed: two-level */
    ir_node_at(m, w)->name = ir_intern(m, "wide");
    out_dtype = IR_U8, check(m, OP_CAST, (int[]){w}, 1, NULL, NULL, NULL, 0);
    out_dtype = IR_I32, check(m, OP_CAST, (int[]){w}, 1, NULL, NULL, NULL, 0);
    out_dtype = IR_F32, check(m, OP_CAST, (int[]){ids}, 1, NULL, NULL, NULL, 0);
    ir_shape to = node_of(&(kase){m, 0, {0}}, y)->shape;
    check(m, OP_BROADCAST_TO, (int[]){v}, 1, NULL, NULL, &to, 0);
    check(m, OP_SOFTMAX_GRAD, (int[]){y, dy}, 2, NULL, NULL, NULL, 1e-5);
    check(m, OP_LOG_SOFTMAX, (int[]){y}, 1, NULL, NULL, NULL, 1e-5);
    check(m, OP_REDUCE_SUM, (int[]){big}, 1, (int64_t[]){7}, NULL, NULL, 1e-3);  /* all but channels: the bias gradient */
    check(m, OP_REDUCE_SUM, (int[]){big}, 1, (int64_t[]){15}, NULL, NULL, 1e-2); /* everything */
    check(m, OP_REDUCE_MEAN, (int[]){big}, 1, (int64_t[]){5}, NULL, NULL, 1e-5); /* axes 0 and 2: not adjacent */
    check(m, OP_REDUCE_SUM, (int[]){big}, 1, (int64_t[]){8}, NULL, NULL, 1e-5);  /* the last axis only: short */
}

/* issue 15: events (a record on one stream, a wait on the other; a wait ahead
 * of its record fails) and the collectives on a single device (one rank:
 * all_reduce sum and mean, broadcast and all_gather leave the data as is) */
static void backend_calls(void) {
    enum { N = 1000 };
    float in[N], out[N];
    for (int i = 0; i < N; i++) in[i] = (float)i - 300.5f;
    float *p = gpu->i->alloc(gpu, 0, sizeof in);
    int ok = p && gpu->i->upload(gpu, 0, STREAM_COMPUTE, p, in, sizeof in) == 0 &&
             gpu->i->record(gpu, 0, STREAM_COMPUTE, 0, 1) == 0 && gpu->i->wait(gpu, 0, STREAM_COMM, 0, 1) == 0 &&
             gpu->i->download(gpu, 0, STREAM_COMM, out, p, sizeof out) == 0 && gpu->i->sync(gpu) == 0;
    if (!ok || memcmp(in, out, sizeof in)) fprintf(stderr, "FAIL: events: %s\n", gpu->err), failures++;
    if (gpu->i->wait(gpu, 0, STREAM_COMM, 1, 1) == 0) fprintf(stderr, "FAIL: a wait before its record passed\n"), failures++;
    const rt_coll_kind kinds[] = {COLL_ALL_REDUCE, COLL_ALL_REDUCE, COLL_BROADCAST, COLL_ALL_GATHER};
    for (int k = 0; p && k < 4; k++) {
        rt_coll_args c = {.kind = kinds[k], .group = k, .label = "test collective", .buf = p, .count = N,
                          .dtype = IR_F32, .mean = k == 1, .root = 0};
        memset(out, 0, sizeof out);
        ok = gpu->i->collective(gpu, 0, STREAM_COMM, &c) == 0 &&
             gpu->i->download(gpu, 0, STREAM_COMM, out, p, sizeof out) == 0 && gpu->i->sync(gpu) == 0;
        if (!ok || memcmp(in, out, sizeof in)) fprintf(stderr, "FAIL: collective %d: %s\n", k, gpu->err), failures++;
        else printf("collective %d on one device: ok\n", k);
    }
    if (p) gpu->i->dealloc(gpu, 0, p);
}

/* issue 14: a fused bias add, relu_grad and elu over broadcast inputs (odd sizes) */
static void fused(ir_module *m) {
    int x = input(m, IR_F32, 3, 3, 7, 61, 0), b = input(m, IR_F32, 1, 61, 0, 0, 0), dy = input(m, IR_F32, 3, 3, 7, 61, 0);
    int col = input(m, IR_F32, 3, 3, 1, 1, 0);
    ir_fused f = {.n = 4};
    f.ins[0] = (ir_finstr){OP_ADD, 0, 1, 0}, f.ins[1] = (ir_finstr){OP_RELU_GRAD, 4, 2, 0};
    f.ins[2] = (ir_finstr){OP_ELU, 5, -1, 0.7}, f.ins[3] = (ir_finstr){OP_MUL, 6, 3, 0};
    program = ir_fused_add(m, &f);
    check(m, OP_FUSED, (int[]){x, b, dy, col}, 4, NULL, NULL, NULL, 1e-6);
}

/* issue 14: the epilogues (residual and activation), the relu-masked pool
 * gradient with overlapping windows, and the direct max-pool gradient */
static void epilogues(ir_module *m) {
    int img = input(m, IR_F32, 4, 2, 6, 6, 3), f = input(m, IR_F32, 4, 3, 3, 3, 4), b4 = input(m, IR_F32, 1, 4, 0, 0, 0);
    int res = input(m, IR_F32, 4, 2, 4, 4, 4), a = input(m, IR_F32, 2, 8, 5, 0, 0), w = input(m, IR_F32, 2, 5, 6, 0, 0);
    int b6 = input(m, IR_F32, 1, 6, 0, 0, 0), x = input(m, IR_F32, 4, 2, 7, 7, 3), dy = input(m, IR_F32, 4, 2, 3, 3, 3);
    check(m, OP_CONV2D_EPILOGUE, (int[]){img, f, b4, res}, 4, (int64_t[IR_MAX_IATTR]){1, 1, 0, 0, 0, 0, 1, 1, 1, EPI_RELU},
          NULL, NULL, 1e-4);
    check(m, OP_MATMUL_EPILOGUE, (int[]){a, w, b6}, 3, (int64_t[]){0, 0, EPI_TANH}, NULL, NULL, 1e-5);
    check(m, OP_MAX_POOL2D_RELU_GRAD, (int[]){x, dy}, 2, (int64_t[]){3, 3, 2, 2, 0, 0, 0, 0}, NULL, NULL, 1e-6);
    check(m, OP_MAX_POOL2D_GRAD, (int[]){x, dy}, 2, (int64_t[]){3, 3, 2, 2, 0, 0, 0, 0}, NULL, NULL, 1e-6);
    /* issue 14 (seed CNN speed): the filter gradient through a 2x2 max-pool, y [2, 8, 8, 4] of x [2, 10, 10, 1] */
    int px = input(m, IR_F32, 4, 2, 10, 10, 1), py = input(m, IR_F32, 4, 2, 8, 8, 8), pdy = input(m, IR_F32, 4, 2, 4, 4, 8);
    ir_shape pw = ir_shape_make(4, (int64_t[4]){3, 3, 1, 8});
    check(m, OP_CONV2D_GRAD_FILTER_POOL2, (int[]){px, py, pdy}, 3, (int64_t[IR_MAX_IATTR]){1, 1, 0, 0, 0, 0, 1, 1, 1},
          NULL, &pw, 1e-4);
    /* issue 14 (seed CNN speed): the conv, relu and 2x2 max-pool in one pass, and its filter gradient */
    int rw = input(m, IR_F32, 4, 3, 3, 1, 8), rb = input(m, IR_F32, 1, 8, 0, 0, 0);
    check(m, OP_CONV2D_RELU_POOL2, (int[]){px, rw, rb}, 3, (int64_t[IR_MAX_IATTR]){1, 1, 0, 0, 0, 0, 1, 1, 1}, NULL,
          NULL, 1e-4);
    check(m, OP_CONV2D_RELU_POOL2_GRAD_FILTER, (int[]){px, rw, rb, pdy}, 4,
          (int64_t[IR_MAX_IATTR]){1, 1, 0, 0, 0, 0, 1, 1, 1}, NULL, NULL, 1e-4);
}

/* issue 14: conv2d_bn_epilogue in training (one pass over its conv input) and
 * outside it (the convolution of x and w, then the pass), with a residual */
static void bn_epilogue(ir_module *m) {
    int img = input(m, IR_F32, 4, 2, 6, 6, 3), f = input(m, IR_F32, 4, 3, 3, 3, 4), conv = input(m, IR_F32, 4, 2, 4, 4, 4);
    int mean = input(m, IR_F32, 1, 4, 0, 0, 0), scale = input(m, IR_F32, 1, 4, 0, 0, 0), beta = input(m, IR_F32, 1, 4, 0, 0, 0);
    int res = input(m, IR_F32, 4, 2, 4, 4, 4);
    const int64_t relu[IR_MAX_IATTR] = {1, 1, 0, 0, 0, 0, 1, 1, 1, EPI_RELU};
    check(m, OP_CONV2D_BN_EPILOGUE, (int[]){img, f, conv, mean, scale, beta, res}, 7, relu, NULL, NULL, 1e-5);
    training = 0;
    check(m, OP_CONV2D_BN_EPILOGUE, (int[]){img, f, conv, mean, scale, beta}, 6, relu, NULL, NULL, 1e-4);
    check(m, OP_CONV2D_BN_EPILOGUE, (int[]){img, f, conv, mean, scale, beta, res}, 7,
          (int64_t[IR_MAX_IATTR]){1, 1, 0, 0, 0, 0, 1, 1, 1, EPI_SIGMOID}, NULL, NULL, 1e-4);
    training = 1;
}

int main(void) {
    char why[256];
    if (rt_cuda_device_count(why, sizeof why) == 0) {
        printf("SKIP: no CUDA device (%s)\n", why);
        return 77;
    }
    gpu = rt_backend_cuda();
    gpu->n_devices = 1;
    gpu->n_events = 2;
    if (gpu->i->init(gpu) != 0) {
        fprintf(stderr, "FAIL: init: %s\n", gpu->err);
        return 1;
    }
    ir_module *m = ir_module_new();
    elementwise_and_softmax(m);
    dense_and_conv(m);
    optimizers(m);
    grouped_dilated_transposed(m);
    one_hot(m);
    matmuls(m);
    pool_grads(m);
    plain_optimizers(m);
    casts_and_reductions(m);
    fused(m);
    epilogues(m);
    bn_epilogue(m);
    ir_module_free(m);
    backend_calls();
    gpu->i->shutdown(gpu);
    free(gpu);
    return failures ? 1 : 0;
}
