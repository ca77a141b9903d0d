/* test_cuda_ops.c - each CUDA kernel against the CPU kernel of the same node
 * (runtime/cpu), on the first GPU. Exits 77 ("SKIP: no CUDA device") without one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/backend.h"
#include "../../runtime/cpu/cpu_kernels.h"
#include "../../runtime/cuda/cuda_backend.h"

enum { MAX_IN = 6, CLASSES = 7 };

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

/* deterministic data: f32 in [-1, 1) ([0, 1) for an input named "positive"), i32 labels in [0, CLASSES) */
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
    }
    return p;
}

static void *dup(const void *p, size_t bytes) {
    void *q = malloc(bytes + 1);
    memcpy(q, p, bytes);
    return q;
}

static const ir_node *node_of(const kase *c, int i) { return &c->m->g.nodes[i]; }

static rt_kernel_args args_of(const kase *c, const ir_node **in_nodes, const void **in, void *out) {
    static int64_t step = 3;
    static int training = 1;
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
    if (!ir_infer_node(m, c.node, err, sizeof err)) {
        fprintf(stderr, "FAIL: %s: shape: %s\n", ir_ops[op].name, err), failures++;
        return;
    }
    for (int i = 0; i < n_in; i++) c.host[i] = fill(node_of(&c, ins[i]), 17u * (unsigned)(i + 1) + (unsigned)op);
    float *want = run_cpu(&c), *got = run_gpu(&c);
    double worst = 0;
    for (int64_t i = 0; i < ir_shape_numel(&n->shape); i++) worst = fmax(worst, fabs((double)want[i] - got[i]));
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
    check(m, OP_ADAM_UPDATE, (int[]){p, w, p, p}, 4, NULL, (double[]){1e-3, 0.9, 0.999, 1e-7, 0}, NULL, 1e-6);
}

/* issue 12: the optimizers with weight decay and clipping (the norm input
 * last), and sq_norm over several inputs */
static void optimizers(ir_module *m) {
    int p = input(m, IR_F32, 2, 6, 5, 0, 0), g = input(m, IR_F32, 2, 6, 5, 0, 0), s1 = input(m, IR_F32, 2, 6, 5, 0, 0);
    int v = input(m, IR_F32, 2, 6, 5, 0, 0), sq = input(m, IR_F32, 0, 0, 0, 0, 0), b = input(m, IR_F32, 1, 7, 0, 0, 0);
    ir_node_at(m, v)->name = ir_intern(m, "positive"), ir_node_at(m, sq)->name = ir_intern(m, "positive");
    const double adam_like[6] = {1e-2, 0.9, 0.999, 1e-7, 0.01, 0.5};
    check(m, OP_SGD_UPDATE, (int[]){p, g, s1, sq}, 4, (int64_t[]){1}, (double[]){0.1, 0.9, 0.01, 0.5}, NULL, 1e-6);
    check(m, OP_ADAM_UPDATE, (int[]){p, g, s1, v, sq}, 5, NULL, adam_like, NULL, 1e-6);
    check(m, OP_RMSPROP_UPDATE, (int[]){p, g, v, s1, sq}, 5, NULL, (double[]){1e-2, 0.9, 0.5, 1e-7, 0.01, 0.5}, NULL, 1e-6);
    check(m, OP_ADAGRAD_UPDATE, (int[]){p, g, v, sq}, 4, NULL, (double[]){0.1, 0.1, 1e-7, 0.01, 0.5}, NULL, 1e-6);
    check(m, OP_NADAM_UPDATE, (int[]){p, g, s1, v, sq}, 5, NULL, adam_like, NULL, 1e-6);
    check(m, OP_LAMB_UPDATE, (int[]){p, g, s1, v, sq}, 5, NULL, adam_like, NULL, 1e-6);
    check(m, OP_LAMB_UPDATE, (int[]){p, g, s1, v}, 4, NULL, (double[]){1e-2, 0.9, 0.999, 1e-6, 0}, NULL, 1e-6);
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
}

int main(void) {
    char why[256];
    if (rt_cuda_device_count(why, sizeof why) == 0) {
        printf("SKIP: no CUDA device (%s)\n", why);
        return 77;
    }
    gpu = rt_backend_cuda();
    gpu->n_devices = 1;
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
    epilogues(m);
    ir_module_free(m);
    gpu->i->shutdown(gpu);
    free(gpu);
    return failures ? 1 : 0;
}
