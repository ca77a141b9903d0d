/* test_equivalence.c - N replicas at global batch B follow one device at
 * batch B: train a model 20 steps (or S) on 1, 2 and 4 logical CPU devices (same
 * seed, same global batch) and compare every param and state (relative 1e-5 per
 * tensor); every replica must be bit-identical to replica 0 after every step,
 * one bit flipped on the last replica must make the replica check name it,
 * and a second 2-device run must end with the same bits as the first (it
 * checks no replica, so its steps are in flight two at a time: issue 14,
 * docs/runtime.md "Steps in flight").
 *   test_equivalence MODEL.mg STDLIB_DIR [cross-device-ops] [--bucket-bytes N] [--steps S]
 *                    [--synthetic CLASSES] [--expect-differ] [--sparse-grads MODE] [--sparse-vs-dense]
 *                    [--zero-gradient SUFFIX] [--fused-vs-unfused [--expect-op NAME]...]
 * State (moving statistics) is compared after averaging over replicas, as
 * saved. --expect-differ: a model whose replicas normalize by their own
 * batch (batch_norm without sync) must differ from one device by more than
 * 1e-3 somewhere (the documented difference), and still agree run after run.
 * --zero-gradient SUFFIX: params named ...SUFFIX have a gradient that is 0 in
 * exact arithmetic (the key bias of attention: softmax ignores a shift of a
 * row), so they move by rounding noise only, which Adam scales up and no two
 * summation orders share; for them every element must stay within 1e-4 of 0
 * on every device count instead of the relative 1e-5.
 * Data: Fashion-MNIST, or with --synthetic, 256 random examples (f32 inputs
 * in [-1, 1), i32 labels in [0, CLASSES)).
 * --sparse-grads MODE compiles every plan so (issue 13) and checks that the
 * multi-device plans exchange some gradient sparsely (always) or none (never).
 * --sparse-vs-dense: 2 devices with --sparse-grads always against never,
 * every variable within 1e-6; says which params equal 1 device bit for bit.
 * --fused-vs-unfused (issue 14): on 1 and 2 devices, the plan with fusion
 * (which must hold fused nodes) against the one compiled --no-fuse: every
 * variable within 1e-5 and, since fused kernels run the same per-element
 * math in the same order, bit for bit, but for plans holding
 * conv2d_grad_filter_pool2 (issue 14, seed CNN speed), which sums the first
 * convolution's gradients in another order (docs/epilogue.md): 1e-5 only.
 * --expect-op NAME: the fused plans must hold an op NAME (a rule that stopped
 * firing would otherwise still give the unfused bits). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../ir/diag.h"
#include "../../passes/passes.h"
#include "../../runtime/train.h"

enum { GLOBAL_BATCH = 64 };
static int64_t steps = 20;

static int64_t bucket_bytes = 256 << 10; /* several buckets, so overlap and packing are exercised */
static bool expect_differ;                /* --expect-differ: batch_norm without sync must not match */
static ir_sparse_grads sparse_mode = SPARSE_AUTO; /* --sparse-grads */
static double limit = 1e-5;               /* relative difference allowed per variable */
static const char *zero_gradient;         /* --zero-gradient SUFFIX: params whose gradient is exactly 0 */
static bool no_fuse;                      /* compile with --no-fuse (issue 14) */
static const char *expect_ops[8];         /* --expect-op: ops each fused plan must hold */
static int n_expect_ops;
static int check_every = 1;               /* rt_train's check_replicas; 0: none, and steps in flight (issue 14) */

static bool zero_gradient_param(const char *name) {
    size_t n = strlen(name), k = zero_gradient ? strlen(zero_gradient) : 0;
    return zero_gradient && n >= k && !strcmp(name + n - k, zero_gradient);
}

static ir_module *compile(const char *path, const char *stdlib, int n_dev, ir_cross_device xdev) {
    pass_options o;
    pass_options_default(&o);
    ir_device dev[8];
    for (int k = 0; k < n_dev; k++) dev[k] = (ir_device){"cpu", k};
    o.devices = dev, o.n_devices = n_dev, o.global_batch = GLOBAL_BATCH, o.cross_device = xdev;
    o.bucket_bytes = bucket_bytes, o.sparse_grads = sparse_mode, o.no_fuse = no_fuse;
    ir_diag *d = ir_diag_new(stderr);
    ir_module *m = pass_elaborate(path, stdlib, d, &o);
    if (!m || !pass_run_all(m, d, &o, NULL, NULL)) {
        fprintf(stderr, "FAIL: %s does not compile for %d devices\n", path, n_dev);
        exit(1);
    }
    ir_diag_free(d);
    ir_sparse_info si;
    int sparse = 0;
    while (ir_sparse_exchange(m, sparse, &si)) sparse++;
    if (n_dev > 1 && ((sparse_mode == SPARSE_ALWAYS && !sparse) || (sparse_mode == SPARSE_NEVER && sparse))) {
        fprintf(stderr, "FAIL: --sparse-grads %s, but the %d-device plan exchanges %d gradients sparsely\n",
                ir_sparse_grads_names[sparse_mode], n_dev, sparse);
        exit(1);
    }
    return m;
}

/* The variables compared: params, then state (moving statistics), of replica 0. */
static int *compared(const ir_module *m, int *n) {
    int *v = malloc((size_t)m->g.n * sizeof *v);
    *n = 0;
    for (int p = 0; p < m->n_params; p++) v[(*n)++] = m->params[p];
    for (int i = 0; i < m->g.n; i++)
        if (m->g.nodes[i].op == OP_STATE && m->g.nodes[i].device == 0) v[(*n)++] = i;
    return v;
}

/* Trains and returns replica 0's params and state, concatenated. */
static float *train(ir_module *m, const rt_dataset *ds, int64_t *count) {
    char err[640] = "";
    rt_session_options so = {.threads_per_device = 1, .collective_timeout = 30};
    rt_session *s = rt_session_new(m, &so, err, sizeof err);
    if (!s || rt_session_init_variables(s, 7)) {
        fprintf(stderr, "FAIL: session: %s\n", s ? rt_session_error(s) : err);
        exit(1);
    }
    rt_train_options to = {.steps = steps, .seed = 7, .quiet = true, .check_replicas = check_every,
                           .run_ahead = !check_every};
    if (!check_every && !rt_session_can_run_ahead(s)) {
        fprintf(stderr, "FAIL: a 2-device CPU session cannot have train steps in flight\n");
        exit(1);
    }
    if (rt_train(s, ds, NULL, &to, err, sizeof err)) {
        fprintf(stderr, "FAIL: train on %d devices: %s\n", m->n_devices, err);
        exit(1);
    }
    if (rt_session_check_replicas(s, err, sizeof err)) {
        fprintf(stderr, "FAIL: %s\n", err);
        exit(1);
    }
    if (m->n_devices > 1) {
        int p = m->params[m->n_params - 1], last = rt_session_peer(s, p, m->n_devices - 1);
        size_t bytes = (size_t)ir_node_bytes(&m->g.nodes[p]);
        unsigned char *v = malloc(bytes);
        char want[256];
        snprintf(want, sizeof want, "replicas diverged at step %lld: '%s' on cpu:%d differs from cpu:0", (long long)steps,
                 m->g.nodes[p].name, m->n_devices - 1);
        if (rt_session_read(s, last, v)) exit(1);
        v[bytes - 1] ^= 1;
        if (rt_session_write(s, last, v) || !rt_session_check_replicas(s, err, sizeof err) || strcmp(err, want)) {
            fprintf(stderr, "FAIL: a flipped bit on cpu:%d: got '%s', want '%s'\n", m->n_devices - 1, err, want);
            exit(1);
        }
        free(v);
    }
    if (rt_session_average_states(s)) exit(1); /* as saved: the mean over replicas */
    int n_vars, *vars = compared(m, &n_vars);
    *count = 0;
    for (int v = 0; v < n_vars; v++) *count += ir_shape_numel(&m->g.nodes[vars[v]].shape);
    float *all = malloc((size_t)*count * sizeof *all), *at = all;
    for (int v = 0; v < n_vars; v++) {
        rt_session_read(s, vars[v], at);
        at += ir_shape_numel(&m->g.nodes[vars[v]].shape);
    }
    free(vars);
    rt_session_free(s);
    return all;
}

/* 256 examples of random inputs, labels in [0, classes). */
static rt_dataset *synthetic(const rt_input_spec *specs, int n, int64_t classes, char *err, size_t cap) {
    enum { EXAMPLES = 256 };
    rt_tensor t[8];
    const char *names[8];
    uint64_t state = 12345;
    for (int i = 0; i < n; i++) {
        t[i] = (rt_tensor){.dtype = specs[i].dtype, .shape = {specs[i].shape.rank + 1, {EXAMPLES}}};
        for (int k = 0; k < specs[i].shape.rank; k++) t[i].shape.dim[k + 1] = specs[i].shape.dim[k];
        int64_t count = ir_shape_numel(&t[i].shape);
        t[i].data = malloc((size_t)count * 4);
        for (int64_t k = 0; k < count; k++) {
            state = state * 6364136223846793005u + 1442695040888963407u;
            uint32_t r = (uint32_t)(state >> 33);
            if (specs[i].dtype == IR_I32) ((int32_t *)t[i].data)[k] = (int32_t)(r % (uint64_t)classes);
            else ((float *)t[i].data)[k] = (float)r / 2147483648.0f * 2 - 1;
        }
        names[i] = specs[i].name;
    }
    rt_dataset *ds = rt_dataset_from_tensors(t, names, specs, n, err, cap);
    for (int i = 0; i < n; i++) rt_tensor_free(&t[i]);
    return ds;
}

/* Relative difference of each variable of b from a; returns how many exceed
 * 1e-5 (with expect_differ: how many stay within it). */
static int compare(const ir_module *m, const float *a, const float *b, int devices) {
    int failures = 0, n_vars, *vars = compared(m, &n_vars), within = 0;
    double worst = 0;
    for (int v = 0; v < n_vars; v++) {
        const ir_node *x = &m->g.nodes[vars[v]];
        int64_t len = ir_shape_numel(&x->shape);
        double diff = 0, norm = 0;
        for (int64_t k = 0; k < len; k++) diff += (a[k] - b[k]) * (double)(a[k] - b[k]), norm += a[k] * (double)a[k];
        double rel = sqrt(diff / (norm > 0 ? norm : 1));
        if (zero_gradient_param(x->name)) { /* noise around 0: bounded, not equal */
            double big = 0;
            for (int64_t k = 0; k < len; k++) big = fmax(big, fmax(fabs(a[k]), fabs(b[k])));
            printf("%d devices  %-32s gradient 0: largest |value| %.2e (limit 1e-4)\n", devices, x->name, big);
            if (!(big < 1e-4)) printf("FAIL: %s moved to %.2e (limit 1e-4)\n", x->name, big), failures++;
            a += len, b += len;
            continue;
        }
        printf("%d devices  %-32s relative difference %.2e\n", devices, x->name, rel);
        within += rel < limit, worst = rel > worst ? rel : worst;
        if (!(rel < limit) && !expect_differ) {
            printf("FAIL: %s differs by %.2e (limit %.0e)\n", x->name, rel, limit);
            failures++;
        }
        a += len, b += len;
    }
    if (expect_differ && !(worst > 1e-3)) {
        printf("FAIL: expected %d devices to differ from 1 (per-replica statistics), worst difference %.2e\n", devices, worst);
        failures++;
    }
    free(vars);
    return failures;
}

/* Which variables of b equal a bit for bit (printed, not a condition). */
static void report_bits(const ir_module *m, const float *a, const float *b, const char *what) {
    int n_vars, *vars = compared(m, &n_vars);
    for (int v = 0; v < n_vars; v++) {
        size_t len = (size_t)ir_shape_numel(&m->g.nodes[vars[v]].shape);
        printf("%-32s %s %s\n", m->g.nodes[vars[v]].name, memcmp(a, b, len * sizeof *a) ? "differs from" : "bit-equal to", what);
        a += len, b += len;
    }
    free(vars);
}

/* 2 devices, sparse against dense exchange, within 1e-6 (issue 13). */
static int sparse_vs_dense(const char *path, const char *stdlib, ir_cross_device xdev, const rt_dataset *ds,
                           const float *one) {
    int64_t n;
    sparse_mode = SPARSE_ALWAYS;
    ir_module *ms = compile(path, stdlib, 2, xdev);
    float *sparse = train(ms, ds, &n);
    sparse_mode = SPARSE_NEVER;
    ir_module *md = compile(path, stdlib, 2, xdev);
    float *dense = train(md, ds, &n);
    limit = 1e-6;
    int failures = compare(md, dense, sparse, 2);
    report_bits(ms, one, sparse, "1 device (sparse, 2 devices)");
    free(sparse), free(dense);
    ir_module_free(ms), ir_module_free(md);
    return failures;
}

/* issue 14: fused against unfused plans on 1 and 2 devices */
static int fused_vs_unfused(const char *path, const char *stdlib, ir_cross_device xdev, const rt_dataset *ds) {
    int failures = 0;
    for (int devices = 1; devices <= 2; devices++) {
        int64_t n, fused_nodes = 0, reordered = 0;
        no_fuse = true;
        ir_module *mu = compile(path, stdlib, devices, xdev);
        float *unfused = train(mu, ds, &n);
        no_fuse = false;
        ir_module *mf = compile(path, stdlib, devices, xdev);
        for (int i = 0; i < mf->g.n; i++) { /* either fusion pass's nodes */
            ir_op op = mf->g.nodes[i].op;
            fused_nodes += op == OP_FUSED || op == OP_CONV2D_EPILOGUE || op == OP_MATMUL_EPILOGUE || op == OP_MAX_POOL2D_RELU_GRAD ||
                           op == OP_CONV2D_BN_EPILOGUE || op == OP_CONV2D_GRAD_FILTER_POOL2 || /* issue 14 */
                           op == OP_CONV2D_RELU_POOL2 || op == OP_CONV2D_RELU_POOL2_GRAD_FILTER ||
                           op == OP_CAUSAL_MATMUL_SOFTMAX || op == OP_CAUSAL_MATMUL_SOFTMAX_GRAD;
            reordered += op == OP_CONV2D_GRAD_FILTER_POOL2 || op == OP_CONV2D_RELU_POOL2 ||
                         op == OP_CONV2D_RELU_POOL2_GRAD_FILTER; /* their own convolution and sums */
        }
        printf("%d devices: %lld fused nodes, %d nodes fused against %d unfused\n", devices, (long long)fused_nodes,
               mf->g.n, mu->g.n);
        if (!fused_nodes) printf("FAIL: the fused plan on %d devices holds no fused node\n", devices), failures++;
        for (int k = 0; k < n_expect_ops; k++) {
            int op = ir_op_from_name(expect_ops[k]), held = 0;
            for (int i = 0; i < mf->g.n; i++) held += op >= 0 && mf->g.nodes[i].op == (ir_op)op;
            printf("%d devices: %d %s nodes\n", devices, held, expect_ops[k]);
            if (!held) printf("FAIL: the fused plan on %d devices holds no %s\n", devices, expect_ops[k]), failures++;
        }
        float *fused = train(mf, ds, &n);
        failures += compare(mu, unfused, fused, devices);
        if (reordered) printf("%d devices: conv2d_grad_filter_pool2 / conv2d_relu_pool2 sum in another order: within 1e-5, not bit for bit\n", devices);
        else if (memcmp(unfused, fused, (size_t)n * sizeof *fused)) {
            report_bits(mu, unfused, fused, "the unfused plan's");
            printf("FAIL: fused and unfused plans on %d devices end with different bits\n", devices);
            failures++;
        }
        free(unfused), free(fused);
        ir_module_free(mu), ir_module_free(mf);
    }
    return failures;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    bool vs_dense = false, vs_unfused = false;
    ir_cross_device xdev = XDEV_RING;
    int64_t classes = 0;
    for (int a = 3; a < argc; a++) {
        if (!strcmp(argv[a], "one-device")) xdev = XDEV_ONE_DEVICE;
        else if (!strcmp(argv[a], "hierarchical")) xdev = XDEV_HIERARCHICAL;
        else if (!strcmp(argv[a], "--bucket-bytes") && a + 1 < argc) bucket_bytes = atoll(argv[++a]);
        else if (!strcmp(argv[a], "--synthetic") && a + 1 < argc) classes = atoll(argv[++a]);
        else if (!strcmp(argv[a], "--steps") && a + 1 < argc) steps = atoll(argv[++a]);
        else if (!strcmp(argv[a], "--expect-differ")) expect_differ = true;
        else if (!strcmp(argv[a], "--sparse-vs-dense")) vs_dense = true;
        else if (!strcmp(argv[a], "--fused-vs-unfused")) vs_unfused = true;
        else if (!strcmp(argv[a], "--expect-op") && a + 1 < argc && n_expect_ops < 8) expect_ops[n_expect_ops++] = argv[++a];
        else if (!strcmp(argv[a], "--sparse-grads") && a + 1 < argc) {
            int k = 0;
            while (k < SPARSE_COUNT && strcmp(argv[a + 1], ir_sparse_grads_names[k])) k++;
            if (k == SPARSE_COUNT) return fprintf(stderr, "test_equivalence: bad --sparse-grads '%s'\n", argv[a + 1]), 2;
            sparse_mode = (ir_sparse_grads)k, a++;
        }
        else if (!strcmp(argv[a], "--zero-gradient") && a + 1 < argc) zero_gradient = argv[++a];
        else return fprintf(stderr, "test_equivalence: unknown argument '%s'\n", argv[a]), 2;
    }
    char err[640];
    ir_module *m1 = compile(argv[1], argv[2], 1, xdev);
    rt_input_spec specs[8];
    rt_input_specs(m1, 0, specs, NULL);
    rt_dataset *ds = classes > 0 ? synthetic(specs, m1->n_inputs, classes, err, sizeof err)
                                 : rt_dataset_from_dir(NULL, "train", specs, m1->n_inputs, err, sizeof err);
    if (!ds) {
        fprintf(stderr, "SKIP: %s\n", err);
        return 77;
    }
    int64_t n;
    float *ref = train(m1, ds, &n);
    int failures = 0;
    if (vs_unfused) {
        failures = fused_vs_unfused(argv[1], argv[2], xdev, ds);
        free(ref), ir_module_free(m1), rt_dataset_free(ds);
        return failures ? 1 : 0;
    }
    if (vs_dense) {
        failures = sparse_vs_dense(argv[1], argv[2], xdev, ds, ref);
        free(ref), ir_module_free(m1), rt_dataset_free(ds);
        return failures ? 1 : 0;
    }
    for (int devices = 2; devices <= 4; devices *= 2) {
        ir_module *m = compile(argv[1], argv[2], devices, xdev);
        float *got = train(m, ds, &n);
        failures += compare(m, ref, got, devices);
        if (devices == 2) { /* run after run: the same bits, with steps in flight */
            check_every = 0;
            float *again = train(m, ds, &n);
            check_every = 1;
            if (memcmp(got, again, (size_t)n * sizeof *got)) {
                printf("FAIL: a second 2-device run (steps in flight) ends with different params\n");
                failures++;
            }
            free(again);
        }
        free(got);
        ir_module_free(m);
    }
    free(ref);
    ir_module_free(m1);
    rt_dataset_free(ds);
    return failures ? 1 : 0;
}
