/* dnnl.c - convolution (grouped, dilated, transposed) and pooling, forward and
 * backward, through oneDNN 2.6 (v2 C API). Data NHWC, filters as Keras lays
 * them out. One primitive per node, created at its first run and cached (key: node pointer), with its memory objects and a
 * user scratchpad, so steady-state steps create and allocate nothing. */
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"

enum { MAX_ARGS = 7, MAX_STEPS = 2, BUCKETS = 256 }; /* 7: conv2d_bn_epilogue (issue 14) */

/* where an argument's data lives: the kernel's inputs or output, or a buffer
 * of the entry (reordered weights, workspace, scratch output) */
enum { SRC_IN0 = 0, SRC_IN1 = 1, SRC_OUT = -1, SRC_BUF0 = -2, SRC_BUF1 = -3, SRC_SCRATCH = -4, SRC_BUF2 = -5 };

/* one primitive and how its arguments bind to the kernel's pointers */
typedef struct {
    dnnl_primitive_t prim;
    int n_args;
    dnnl_exec_arg_t args[MAX_ARGS + 1];
    int src[MAX_ARGS + 1];      /* SRC_* per argument */
} bound;

/* what a primitive was built for, as numbers (op, threads, variant (issue 14:
 * the filter layout, tune.h), the three shapes, the attributes); a node freed
 * and another allocated at its address must not reuse the primitive, nor one
 * built for another thread count (oneDNN fixes it at creation) */
enum { SIG_SHAPE = 1 + IR_MAX_RANK, SIG_LEN = 3 + 3 * SIG_SHAPE + IR_MAX_IATTR };
typedef struct {
    int64_t v[SIG_LEN];
} signature;

typedef struct entry {
    const ir_node *node;
    signature sig;
    bound step[MAX_STEPS];      /* run in order: e.g. weight reorder, then convolution */
    int n_steps;
    dnnl_stream_t stream;
    void *buf[3];               /* SRC_BUF0, SRC_BUF1, SRC_BUF2 (conv2d_bn_epilogue's shift) */
    void *own[MAX_STEPS];       /* scratchpads */
    int n_own;
    struct entry *next;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t engine;
static entry *table[BUCKETS];

/* ---- threads: oneDNN runs on OpenMP here; the thread count is per calling thread ---- */

static _Thread_local int omp_applied;

void cpu_dnnl_apply_threads(void) {
    int want = cpu_kernels_threads();
    if (omp_applied == want) return;
    void (*set)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    if (set) set(want);
    omp_applied = want;
}

/* ---- descriptors ---- */

typedef struct {
    dnnl_dims_t strides, kernel, pad_l, pad_r, dilates; /* dilates: oneDNN's, 0 = none */
} window;

static window conv_window(const ir_node *n, const ir_shape *w) {
    ir_conv g = ir_conv_of(n, w);
    return (window){{g.stride[0], g.stride[1]}, {w->dim[0], w->dim[1]}, {g.pad[0], g.pad[1]}, {g.pad[2], g.pad[3]},
                    {g.dilation[0] - 1, g.dilation[1] - 1}};
}

static window pool_window(const ir_node *n) {
    const int64_t *a = n->iattr; /* k_h, k_w, stride_h, stride_w, pad_t, pad_l, pad_b, pad_r */
    return (window){{a[2], a[3]}, {a[0], a[1]}, {a[4], a[5]}, {a[6], a[7]}, {0, 0}};
}

/* NHWC tensor of shape s as oneDNN's logical (N, C, H, W) */
static dnnl_memory_desc_t md_nhwc(const ir_shape *s) {
    dnnl_memory_desc_t md;
    dnnl_memory_desc_init_by_tag(&md, 4, (dnnl_dims_t){s->dim[0], s->dim[3], s->dim[1], s->dim[2]}, dnnl_f32,
                                 dnnl_nhwc);
    return md;
}

static void *alloc64(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64 + 64); }

/* the entry-owned data of an argument: a shared buffer or a scratchpad */
static void *own_data(entry *e, int src, size_t bytes) {
    if (src == SRC_SCRATCH) return e->own[e->n_own] = alloc64(bytes), e->own[e->n_own++];
    void **b = &e->buf[src == SRC_BUF0 ? 0 : src == SRC_BUF1 ? 1 : 2];
    if (!*b) *b = alloc64(bytes);
    return *b;
}

/* Appends a step running pd's primitive with arguments arg[i] bound to
 * src[i], plus the user scratchpad when the primitive wants one. */
static int bind(const rt_kernel_args *k, char *err, size_t cap, entry *e, dnnl_primitive_desc_t pd, int n,
                const int *arg, const int *src) {
    bound *b = &e->step[e->n_steps++];
    DNNL_TRY(dnnl_primitive_create(&b->prim, pd));
    for (int i = 0; i <= n; i++) {
        int a = i < n ? arg[i] : DNNL_ARG_SCRATCHPAD, s = i < n ? src[i] : SRC_SCRATCH;
        const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, a);
        size_t bytes = md ? dnnl_memory_desc_get_size(md) : 0;
        if (i == n && bytes == 0) break;
        void *h = s < SRC_OUT ? own_data(e, s, bytes) : DNNL_MEMORY_NONE;
        if (s < SRC_OUT && !h) return cpu_kerr(k, err, cap, "out of memory for a oneDNN buffer of %zu bytes", bytes);
        DNNL_TRY(dnnl_memory_create(&b->args[b->n_args].memory, md, engine, h));
        b->args[b->n_args].arg = a;
        b->src[b->n_args++] = s;
    }
    return 0;
}

/* a reorder step between layouts from and to */
static int bind_reorder(const rt_kernel_args *k, char *err, size_t cap, entry *e, const dnnl_memory_desc_t *from,
                        int from_src, const dnnl_memory_desc_t *to, int to_src) {
    dnnl_primitive_desc_t pd;
    DNNL_TRY(dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine, NULL));
    int rc = bind(k, err, cap, e, pd, 2, (int[]){DNNL_ARG_FROM, DNNL_ARG_TO}, (int[]){from_src, to_src});
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

static dnnl_primitive_attr_t user_scratchpad(void) {
    dnnl_primitive_attr_t attr = NULL;
    if (dnnl_primitive_attr_create(&attr) == dnnl_success)
        dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    return attr;
}

/* pd from an op descriptor; hint: the forward pd a backward one needs */
static int make_pd(const rt_kernel_args *k, char *err, size_t cap, dnnl_primitive_desc_t *pd, const void *desc,
                   dnnl_primitive_desc_t hint) {
    dnnl_primitive_attr_t attr = user_scratchpad();
    dnnl_status_t st = dnnl_primitive_desc_create(pd, desc, attr, engine, hint);
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) return cpu_kerr(k, err, cap, "oneDNN has no primitive for it (status %d)", (int)st);
    return 0;
}

/* ---- convolution ---- */

/* The filter as oneDNN's logical dims: (O, I, H, W) for one group, (G, O/G,
 * I/G, H, W) for several, with the strides of its layout in memory: Keras'
 * HWIO [kh, kw, cin/G, cout] for conv2d (output channel g*O/G + o), HWOI
 * [kh, kw, cout, cin] for conv2d_transpose. any: oneDNN's preferred layout. */
static dnnl_memory_desc_t md_filter(const ir_node *n, const ir_shape *s, int64_t groups, int any) {
    dnnl_memory_desc_t md;
    int64_t kh = s->dim[0], kw = s->dim[1], d2 = s->dim[2], d3 = s->dim[3];
    if (n->op == OP_CONV2D_TRANSPOSE) { /* O = d2, I = d3 */
        dnnl_dims_t dims = {d2, d3, kh, kw}, st = {d3, 1, kw * d2 * d3, d2 * d3};
        if (any) dnnl_memory_desc_init_by_tag(&md, 4, dims, dnnl_f32, dnnl_format_tag_any);
        else dnnl_memory_desc_init_by_strides(&md, 4, dims, dnnl_f32, st);
    } else if (groups == 1) { /* O = d3, I = d2 */
        dnnl_dims_t dims = {d3, d2, kh, kw};
        dnnl_memory_desc_init_by_tag(&md, 4, dims, dnnl_f32, any ? dnnl_format_tag_any : dnnl_hwio);
    } else {
        dnnl_dims_t dims = {groups, d3 / groups, d2, kh, kw}, st = {d3 / groups, 1, d3, kw * d2 * d3, d2 * d3};
        if (any) dnnl_memory_desc_init_by_tag(&md, 5, dims, dnnl_f32, dnnl_format_tag_any);
        else dnnl_memory_desc_init_by_strides(&md, 5, dims, dnnl_f32, st);
    }
    return md;
}

/* The convolution primitive of the node's op, its filter argument taken in
 * oneDNN's preferred layout: Keras filters are reordered into a buffer before
 * it (forward, data gradient, transpose), or its filter gradient out of one
 * after it. */
static int bind_conv(const rt_kernel_args *k, char *err, size_t cap, entry *e, dnnl_primitive_desc_t pd,
                     const dnnl_memory_desc_t *keras) {
    ir_op op = k->node->op;
    int w_arg = op == OP_CONV2D_GRAD_FILTER ? DNNL_ARG_DIFF_WEIGHTS : DNNL_ARG_WEIGHTS;
    const dnnl_memory_desc_t *w = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, w_arg);
    int reorder = !dnnl_memory_desc_equal(w, keras), w_src = op == OP_CONV2D_GRAD_FILTER ? SRC_OUT : SRC_IN1;
    if (reorder && op != OP_CONV2D_GRAD_FILTER && bind_reorder(k, err, cap, e, keras, SRC_IN1, w, SRC_BUF0)) return -1;
    if (reorder) w_src = SRC_BUF0;
    int rc = op == OP_CONV2D || op == OP_CONV2D_TRANSPOSE || op == OP_CONV2D_EPILOGUE /* its HWIO candidate */
                     || op == OP_CONV2D_BN_EPILOGUE /* likewise (bn_epilogue.c) */
                 ? bind(k, err, cap, e, pd, 3, (int[]){DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST},
                        (int[]){SRC_IN0, w_src, SRC_OUT})
             : op == OP_CONV2D_GRAD_INPUT
                 ? bind(k, err, cap, e, pd, 3, (int[]){DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC},
                        (int[]){SRC_IN0, w_src, SRC_OUT})
                 : bind(k, err, cap, e, pd, 3, (int[]){DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS},
                        (int[]){SRC_IN0, SRC_IN1, w_src});
    if (!rc && reorder && op == OP_CONV2D_GRAD_FILTER) rc = bind_reorder(k, err, cap, e, w, SRC_BUF0, keras, SRC_OUT);
    return rc;
}

/* conv2d_transpose: oneDNN's deconvolution from x (src) to the node (dst) */
static int build_deconv(const rt_kernel_args *k, char *err, size_t cap, entry *e) {
    const ir_node *n = k->node;
    const ir_shape *w = IN_SHAPE(k, 1);
    window win = conv_window(n, w);
    dnnl_memory_desc_t xm = md_nhwc(IN_SHAPE(k, 0)), wm = md_filter(n, w, 1, 1), ym = md_nhwc(&n->shape),
                       keras = md_filter(n, w, 1, 0);
    dnnl_deconvolution_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_dilated_deconvolution_forward_desc_init(&d, dnnl_forward_training, dnnl_deconvolution_direct, &xm, &wm,
                                                     NULL, &ym, win.strides, win.dilates, win.pad_l, win.pad_r))
        return cpu_kerr(k, err, cap, "oneDNN rejects the deconvolution descriptor");
    if (make_pd(k, err, cap, &pd, &d, NULL)) return -1;
    int rc = bind_conv(k, err, cap, e, pd, &keras);
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

static int build_conv(const rt_kernel_args *k, char *err, size_t cap, entry *e) {
    const ir_node *n = k->node;
    const ir_shape *x, *w, *y; /* forward shapes */
    int fwd = n->op == OP_CONV2D || n->op == OP_CONV2D_EPILOGUE /* the epilogue's HWIO candidate: cpu_dnnl_conv */
              || n->op == OP_CONV2D_BN_EPILOGUE;
    if (fwd) x = IN_SHAPE(k, 0), w = IN_SHAPE(k, 1), y = &n->shape;
    else if (n->op == OP_CONV2D_GRAD_INPUT) x = &n->shape, w = IN_SHAPE(k, 1), y = IN_SHAPE(k, 0);
    else x = IN_SHAPE(k, 0), w = &n->shape, y = IN_SHAPE(k, 1);
    window win = conv_window(n, w);
    int64_t groups = ir_conv_of(n, w).groups;
    int any = e->sig.v[2] == 0; /* variant 1 (issue 14): the filter in Keras' layout, no reorder */
    dnnl_memory_desc_t xm = md_nhwc(x), wm = md_filter(n, w, groups, any), ym = md_nhwc(y),
                       keras = md_filter(n, w, groups, 0);
    dnnl_convolution_desc_t fd, bd;
    dnnl_primitive_desc_t fpd = NULL, pd = NULL;
    if (dnnl_dilated_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &xm, &wm, NULL,
                                                   &ym, win.strides, win.dilates, win.pad_l, win.pad_r))
        return cpu_kerr(k, err, cap, "oneDNN rejects the convolution descriptor");
    if (make_pd(k, err, cap, &fpd, &fd, NULL)) return -1;
    int rc = 0;
    if (fwd) {
        pd = fpd, fpd = NULL;
    } else {
        if (n->op == OP_CONV2D_GRAD_INPUT)
            dnnl_dilated_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, &xm, &wm, &ym, win.strides,
                                                             win.dilates, win.pad_l, win.pad_r);
        else
            dnnl_dilated_convolution_backward_weights_desc_init(&bd, dnnl_convolution_direct, &xm, &wm, NULL, &ym,
                                                                win.strides, win.dilates, win.pad_l, win.pad_r);
        rc = make_pd(k, err, cap, &pd, &bd, fpd);
    }
    if (!rc) rc = bind_conv(k, err, cap, e, pd, &keras);
    if (fpd) dnnl_primitive_desc_destroy(fpd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* ---- issue 14: conv2d_epilogue, act(conv2d(x, w) + bias [+ residual]) as one
 * primitive: binary-add post-ops for the bias (per channel) and the residual,
 * then an eltwise post-op, applied to each accumulated output as the unfused
 * add, add, activation would (the convolution's own bias argument starts the
 * sum from the bias instead, which rounds differently) ---- */

static const dnnl_alg_kind_t epilogue_alg[EPI_COUNT] = {
    [EPI_RELU] = dnnl_eltwise_relu, [EPI_TANH] = dnnl_eltwise_tanh, [EPI_SIGMOID] = dnnl_eltwise_logistic};

static int epilogue_pd(const rt_kernel_args *k, char *err, size_t cap, dnnl_primitive_desc_t *pd, const void *desc,
                       const dnnl_memory_desc_t *bias, const dnnl_memory_desc_t *residual) {
    int64_t act = k->node->iattr[9];
    dnnl_primitive_attr_t attr = user_scratchpad();
    dnnl_post_ops_t po = NULL;
    dnnl_status_t st = dnnl_post_ops_create(&po);
    if (st == dnnl_success) st = dnnl_post_ops_append_binary(po, dnnl_binary_add, bias);
    if (st == dnnl_success && residual) st = dnnl_post_ops_append_binary(po, dnnl_binary_add, residual);
    if (st == dnnl_success && act != EPI_NONE) st = dnnl_post_ops_append_eltwise(po, 1.0f, epilogue_alg[act], 0.0f, 0.0f);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr, po);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(pd, desc, attr, engine, NULL);
    if (po) dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) return cpu_kerr(k, err, cap, "oneDNN has no fused convolution for it (status %d)", (int)st);
    return 0;
}

static int build_conv_epilogue(const rt_kernel_args *k, char *err, size_t cap, entry *e) {
    const ir_node *n = k->node;
    const ir_shape *w = IN_SHAPE(k, 1);
    window win = conv_window(n, w);
    int64_t groups = ir_conv_of(n, w).groups;
    int residual = n->n_in == 4;
    dnnl_memory_desc_t xm = md_nhwc(IN_SHAPE(k, 0)), wm = md_filter(n, w, groups, 1), ym = md_nhwc(&n->shape),
                       keras = md_filter(n, w, groups, 0), bm;
    dnnl_memory_desc_init_by_tag(&bm, 4, (dnnl_dims_t){1, n->shape.dim[3], 1, 1}, dnnl_f32, dnnl_nhwc);
    dnnl_convolution_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_dilated_convolution_forward_desc_init(&d, dnnl_forward_training, dnnl_convolution_direct, &xm, &wm, NULL,
                                                   &ym, win.strides, win.dilates, win.pad_l, win.pad_r))
        return cpu_kerr(k, err, cap, "oneDNN rejects the convolution descriptor");
    if (epilogue_pd(k, err, cap, &pd, &d, &bm, residual ? &ym : NULL)) return -1;
    const dnnl_memory_desc_t *wp = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, DNNL_ARG_WEIGHTS);
    int reorder = !dnnl_memory_desc_equal(wp, &keras), rc = 0;
    if (reorder) rc = bind_reorder(k, err, cap, e, &keras, SRC_IN1, wp, SRC_BUF0);
    if (!rc)
        rc = bind(k, err, cap, e, pd, 4 + residual,
                  (int[]){DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                          DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1},
                  (int[]){SRC_IN0, reorder ? SRC_BUF0 : SRC_IN1, SRC_OUT, 2, 3});
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* ---- issue 14: conv2d_bn_epilogue outside training (bn_epilogue.c):
 * act((conv2d(x, w) - mean) * scale + beta [+ residual]) as one primitive,
 * the scale folded into the filter and the rest a per-channel shift: at every
 * run (the variables change between steps) bn_fold writes w * scale (per
 * output channel, w's last axis) into SRC_BUF1 and beta - mean * scale into
 * SRC_BUF2, and the convolution of x with that filter starts its sums from
 * the shift (its bias argument), then takes the residual's binary-add
 * post-op and the eltwise activation. (The unfused order as binary post-ops,
 * sub, mul, add of [1, C, 1, 1] vectors, costs oneDNN 2.6's jit:avx2
 * convolution 19% on ResNet-20's first layer; even one per-channel binary add
 * costs 2-8%, the bias nothing measurable.) ---- */

static int build_conv_bn_epilogue(const rt_kernel_args *k, char *err, size_t cap, entry *e) {
    const ir_node *n = k->node;
    const ir_shape *w = IN_SHAPE(k, 1);
    window win = conv_window(n, w);
    int64_t groups = ir_conv_of(n, w).groups, act = n->iattr[9];
    int residual = n->n_in == 7;
    dnnl_memory_desc_t xm = md_nhwc(IN_SHAPE(k, 0)), wm = md_filter(n, w, groups, 1), ym = md_nhwc(&n->shape),
                       keras = md_filter(n, w, groups, 0), bm;
    dnnl_memory_desc_init_by_tag(&bm, 1, (dnnl_dims_t){n->shape.dim[3]}, dnnl_f32, dnnl_x);
    dnnl_convolution_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_dilated_convolution_forward_desc_init(&d, dnnl_forward_training, dnnl_convolution_direct, &xm, &wm, &bm,
                                                   &ym, win.strides, win.dilates, win.pad_l, win.pad_r))
        return cpu_kerr(k, err, cap, "oneDNN rejects the convolution descriptor");
    dnnl_primitive_attr_t attr = user_scratchpad();
    dnnl_post_ops_t po = NULL;
    dnnl_status_t st = dnnl_post_ops_create(&po);
    if (st == dnnl_success && residual) st = dnnl_post_ops_append_binary(po, dnnl_binary_add, &ym);
    if (st == dnnl_success && act != EPI_NONE) st = dnnl_post_ops_append_eltwise(po, 1.0f, epilogue_alg[act], 0.0f, 0.0f);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr, po);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd, &d, attr, engine, NULL);
    if (po) dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) return cpu_kerr(k, err, cap, "oneDNN has no fused convolution for it (status %d)", (int)st);
    const dnnl_memory_desc_t *wp = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, DNNL_ARG_WEIGHTS);
    int reorder = !dnnl_memory_desc_equal(wp, &keras), rc = 0;
    size_t w_bytes = (size_t)IN_NUMEL(k, 1) * sizeof(float);
    if (!own_data(e, SRC_BUF1, w_bytes) || !own_data(e, SRC_BUF2, (size_t)n->shape.dim[3] * sizeof(float)))
        rc = cpu_kerr(k, err, cap, "out of memory for the folded filter");
    if (!rc && reorder) rc = bind_reorder(k, err, cap, e, &keras, SRC_BUF1, wp, SRC_BUF0);
    if (!rc)
        rc = bind(k, err, cap, e, pd, 4 + residual,
                  (int[]){DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS,
                          DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1},
                  (int[]){SRC_IN0, reorder ? SRC_BUF0 : SRC_BUF1, SRC_OUT, SRC_BUF2, 6});
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* before each run: SRC_BUF1 = w * scale (per output channel), SRC_BUF2 = beta - mean * scale */
static void bn_fold(const rt_kernel_args *k, entry *e) {
    int64_t c = k->node->shape.dim[3], n = IN_NUMEL(k, 1);
    const float *w = IN_F32(k, 1), *mean = IN_F32(k, 3), *scale = IN_F32(k, 4), *beta = IN_F32(k, 5);
    float *fw = e->buf[1], *shift = e->buf[2];
    for (int64_t i = 0; i < n; i++) fw[i] = w[i] * scale[i % c];
    for (int64_t j = 0; j < c; j++) shift[j] = beta[j] - mean[j] * scale[j];
}

/* ---- pooling ---- */

static dnnl_alg_kind_t pool_alg(ir_op op) {
    return op == OP_MAX_POOL2D || op == OP_MAX_POOL2D_GRAD ? dnnl_pooling_max : dnnl_pooling_avg_exclude_padding;
}

static int build_pool(const rt_kernel_args *k, char *err, size_t cap, entry *e) {
    const ir_node *n = k->node;
    int grad = n->op == OP_MAX_POOL2D_GRAD || n->op == OP_AVG_POOL2D_GRAD;
    const ir_shape *x = IN_SHAPE(k, 0), *y = grad ? IN_SHAPE(k, 1) : &n->shape;
    window win = pool_window(n);
    dnnl_alg_kind_t alg = pool_alg(n->op);
    dnnl_memory_desc_t xm = md_nhwc(x), ym = md_nhwc(y);
    dnnl_pooling_desc_t fd, bd;
    dnnl_primitive_desc_t fpd = NULL, pd = NULL;
    dnnl_prop_kind_t prop = grad ? dnnl_forward_training : dnnl_forward_inference;
    if (dnnl_pooling_forward_desc_init(&fd, prop, alg, &xm, &ym, win.strides, win.kernel, win.pad_l, win.pad_r))
        return cpu_kerr(k, err, cap, "oneDNN rejects the pooling descriptor");
    if (make_pd(k, err, cap, &fpd, &fd, NULL)) return -1;
    int rc = 0, max = alg == dnnl_pooling_max;
    if (!grad) {
        rc = bind(k, err, cap, e, fpd, 2, (int[]){DNNL_ARG_SRC, DNNL_ARG_DST}, (int[]){SRC_IN0, SRC_OUT});
    } else {
        /* max: a forward pass over x records the argmax workspace the backward pass reads */
        if (max)
            rc = bind(k, err, cap, e, fpd, 3, (int[]){DNNL_ARG_SRC, DNNL_ARG_DST, DNNL_ARG_WORKSPACE},
                      (int[]){SRC_IN0, SRC_BUF1, SRC_BUF0});
        dnnl_pooling_backward_desc_init(&bd, alg, &xm, &ym, win.strides, win.kernel, win.pad_l, win.pad_r);
        if (!rc) rc = make_pd(k, err, cap, &pd, &bd, fpd);
        if (!rc && max)
            rc = bind(k, err, cap, e, pd, 3, (int[]){DNNL_ARG_DIFF_DST, DNNL_ARG_WORKSPACE, DNNL_ARG_DIFF_SRC},
                      (int[]){SRC_IN1, SRC_BUF0, SRC_OUT});
        else if (!rc)
            rc = bind(k, err, cap, e, pd, 2, (int[]){DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC}, (int[]){SRC_IN1, SRC_OUT});
    }
    if (fpd) dnnl_primitive_desc_destroy(fpd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* ---- the cache and execution ---- */

static void entry_free(entry *e) {
    for (int j = 0; j < e->n_steps; j++) {
        for (int i = 0; i < e->step[j].n_args; i++) dnnl_memory_destroy(e->step[j].args[i].memory);
        if (e->step[j].prim) dnnl_primitive_destroy(e->step[j].prim);
    }
    free(e->buf[0]), free(e->buf[1]), free(e->buf[2]);
    if (e->stream) dnnl_stream_destroy(e->stream);
    for (int i = 0; i < e->n_own; i++) free(e->own[i]);
    free(e);
}

static void put_shape(int64_t *v, const ir_shape *s) {
    v[0] = s->rank;
    for (int i = 0; i < s->rank; i++) v[1 + i] = s->dim[i];
}

static signature signature_of(const rt_kernel_args *k, int variant) {
    signature s = {{k->node->op | (int64_t)k->node->n_in << 16, cpu_kernels_threads(), variant}}; /* n_in: an epilogue's residual */
    put_shape(s.v + 3, &k->node->shape);
    put_shape(s.v + 3 + SIG_SHAPE, IN_SHAPE(k, 0));
    if (k->node->n_in > 1) put_shape(s.v + 3 + 2 * SIG_SHAPE, IN_SHAPE(k, 1));
    memcpy(s.v + 3 + 3 * SIG_SHAPE, k->node->iattr, sizeof k->node->iattr);
    return s;
}

static entry *build(const rt_kernel_args *k, int variant, char *err, size_t cap) {
    entry *e = calloc(1, sizeof *e);
    if (!e) return cpu_kerr(k, err, cap, "out of memory"), NULL;
    e->node = k->node;
    e->sig = signature_of(k, variant);
    int rc = dnnl_stream_create(&e->stream, engine, dnnl_stream_default_flags) != dnnl_success;
    if (rc) cpu_kerr(k, err, cap, "cannot create a oneDNN stream");
    else if (k->node->op == OP_CONV2D || k->node->op == OP_CONV2D_GRAD_INPUT || k->node->op == OP_CONV2D_GRAD_FILTER)
        rc = build_conv(k, err, cap, e);
    else if (k->node->op == OP_CONV2D_TRANSPOSE) rc = build_deconv(k, err, cap, e);
    else if (k->node->op == OP_CONV2D_EPILOGUE && variant == 1) rc = build_conv(k, err, cap, e); /* issue 14: see cpu_dnnl_conv */
    else if (k->node->op == OP_CONV2D_EPILOGUE) rc = build_conv_epilogue(k, err, cap, e); /* issue 14 */
    else if (k->node->op == OP_CONV2D_BN_EPILOGUE && variant == 1) rc = build_conv(k, err, cap, e); /* bn_epilogue.c */
    else if (k->node->op == OP_CONV2D_BN_EPILOGUE) rc = build_conv_bn_epilogue(k, err, cap, e); /* issue 14 */
    else rc = build_pool(k, err, cap, e);
    if (rc) return entry_free(e), NULL;
    return e;
}

/* The cached entry of k->node, built on first use. */
static entry *lookup(const rt_kernel_args *k, int variant, char *err, size_t cap) {
    size_t h = ((uintptr_t)k->node >> 4) % BUCKETS;
    pthread_mutex_lock(&lock);
    signature sig = signature_of(k, variant);
    entry **pe = &table[h];
    while (*pe && (*pe)->node != k->node) pe = &(*pe)->next;
    entry *e = *pe;
    if (e && memcmp(&e->sig, &sig, sizeof sig)) { /* stale: another node at the same address */
        *pe = e->next;
        entry_free(e);
        e = NULL;
    }
    if (!e && !engine && dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success) {
        engine = NULL;
        cpu_kerr(k, err, cap, "cannot create the oneDNN CPU engine");
    } else if (!e && (e = build(k, variant, err, cap))) {
        e->next = table[h], table[h] = e;
    }
    pthread_mutex_unlock(&lock);
    return e;
}

static int execute(const rt_kernel_args *k, char *err, size_t cap, entry *e, bound *b) {
    for (int i = 0; i < b->n_args; i++) {
        int s = b->src[i];
        if (s < SRC_OUT) continue;
        void *p = s == SRC_OUT ? k->out : (void *)k->in[s];
        DNNL_TRY(dnnl_memory_set_data_handle(b->args[i].memory, p));
    }
    DNNL_TRY(dnnl_primitive_execute(b->prim, e->stream, b->n_args, b->args));
    DNNL_TRY(dnnl_stream_wait(e->stream));
    return 0;
}

static int run(const rt_kernel_args *k, int variant, char *err, size_t cap) {
    cpu_dnnl_apply_threads(); /* before creation: primitives fix their thread count when created */
    entry *e = lookup(k, variant, err, cap);
    if (!e) return -1;
    if (k->node->op == OP_CONV2D_BN_EPILOGUE && variant == 0) bn_fold(k, e); /* issue 14 */
    for (int i = 0; i < e->n_steps; i++)
        if (execute(k, err, cap, e, &e->step[i])) return -1;
    return 0;
}

int cpu_k_conv2d_transpose(const rt_kernel_args *k, char *err, size_t cap) { return run(k, 0, err, cap); }
int cpu_k_pool2d(const rt_kernel_args *k, char *err, size_t cap) { return run(k, 0, err, cap); }
int cpu_k_pool2d_grad(const rt_kernel_args *k, char *err, size_t cap) { return run(k, 0, err, cap); }

/* ---- issue 14: conv2d and its gradients in either filter layout, chosen by
 * measurement (tune.c) ---- */

/* conv2d_epilogue's HWIO candidate is conv2d's HWIO convolution, then the
 * epilogue in one pass as matmul_epilogue's: bit for bit the unfused conv2d,
 * add, add, activation. (Its post-ops would run on the implementation oneDNN
 * 2.6 picks for an HWIO filter, gemm:jit, whose full-tensor binary add, the
 * residual, gives wrong sums: kern_kernels' residual cases.) */
int cpu_dnnl_conv(const rt_kernel_args *k, int variant, char *err, size_t cap) {
    if (run(k, variant, err, cap)) return -1;
    const ir_shape *s = &k->node->shape;
    if (k->node->op == OP_CONV2D_EPILOGUE && variant == 1)
        cpu_epilogue_rows(k->out, IN_F32(k, 2), k->node->n_in == 4 ? IN_F32(k, 3) : NULL, OUT_NUMEL(k) / s->dim[3],
                          s->dim[3], k->node->iattr[9]);
    return 0;
}

/* issue 14 (speed): candidate 2, "direct", where it applies (conv_direct.c);
 * candidate 3, "winograd" (ResNet-20 speed), where it applies (conv_winograd.c) */
static int conv_candidate(const rt_kernel_args *k, int c, char *err, size_t cap) {
    return c == 3 ? cpu_conv_winograd(k, err, cap) : c == 2 ? cpu_conv_direct(k, err, cap) : cpu_dnnl_conv(k, c, err, cap);
}
static int conv_applies(const rt_kernel_args *k, int c) {
    return c < 2 || (c == 2 ? cpu_conv_direct_applies(k) : cpu_conv_winograd_applies(k));
}

static const char *const conv_names[] = {"onednn", "onednn-hwio", "direct", "winograd"};
static const cpu_tune_op conv_op = {conv_names, 4, conv_candidate, conv_applies};

int cpu_k_conv2d(const rt_kernel_args *k, char *err, size_t cap) { return cpu_tune_run(k, &conv_op, err, cap); }
int cpu_k_conv2d_grad_input(const rt_kernel_args *k, char *err, size_t cap) { return cpu_tune_run(k, &conv_op, err, cap); }
int cpu_k_conv2d_grad_filter(const rt_kernel_args *k, char *err, size_t cap) { return cpu_tune_run(k, &conv_op, err, cap); }
/* the epilogue's convolution as conv2d's (tune.c keys it so) */
int cpu_k_conv2d_epilogue(const rt_kernel_args *k, char *err, size_t cap) { return cpu_tune_run(k, &conv_op, err, cap); }
