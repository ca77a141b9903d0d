/* cuda_dnn.c - convolution (grouped, dilated, transposed) and pooling, forward
 * and backward, on cuDNN.
 *
 * Images are NHWC, which cuDNN takes as is (CUDNN_TENSOR_NHWC). Filters are
 * HWIO [kh,kw,cin,cout] (Keras); cuDNN's NHWC filter format is KRSC = OHWI
 * [cout,kh,kw,cin] and no cuDNN filter format is HWIO, so each launch
 * transposes the filter into a stream-ordered scratch copy (and the filter
 * gradient back out of one). Scratch and workspaces come from
 * cudaMallocAsync/cudaFreeAsync on the launch stream, so the two streams of a
 * device never share one. Padding must be symmetric (pad_t == pad_b,
 * pad_l == pad_r): cuDNN's descriptors have one pad per spatial axis.
 */
#include "cuda_impl.h"

/* descriptors of one launch, destroyed together */
typedef struct {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnPoolingDescriptor_t pool;
    const ir_shape *xs, *ys, *ws;   /* the convolution's shapes, for its algorithm (cuda_dnn_algo.c) */
    ir_conv g;
} descs;

typedef struct {
    rt_backend *b;
    cuda_device *dev;
    cudnnHandle_t h;
    cudaStream_t s;
    const rt_kernel_args *k;
    const ir_node *n;
    const int64_t *at;           /* the node's stride_h,stride_w,pad_t,pad_l,pad_b,pad_r */
} dnn;

static void descs_free(descs *d) {
    if (d->x) cudnnDestroyTensorDescriptor(d->x);
    if (d->y) cudnnDestroyTensorDescriptor(d->y);
    if (d->w) cudnnDestroyFilterDescriptor(d->w);
    if (d->conv) cudnnDestroyConvolutionDescriptor(d->conv);
    if (d->pool) cudnnDestroyPoolingDescriptor(d->pool);
}

/* an NHWC tensor descriptor for a rank-4 shape */
static int nhwc(rt_backend *b, cudnnTensorDescriptor_t *t, const ir_shape *s) {
    if (s->rank != 4) {
        snprintf(b->err, sizeof b->err, "cuda: cuDNN image of rank %d, want NHWC rank 4", s->rank);
        return -1;
    }
    CUDNN_CHECK(b, cudnnCreateTensorDescriptor(t));
    CUDNN_CHECK(b, cudnnSetTensor4dDescriptor(*t, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, (int)s->dim[0], (int)s->dim[3],
                                              (int)s->dim[1], (int)s->dim[2]));
    return 0;
}

static int symmetric(const dnn *d) {
    const int64_t *p = d->at + 2; /* t, l, b, r */
    if (p[0] == p[2] && p[1] == p[3]) return 0;
    snprintf(d->b->err, sizeof d->b->err,
             "cuda: %s: asymmetric padding (t=%lld l=%lld b=%lld r=%lld) has no cuDNN descriptor",
             ir_ops[d->n->op].name, (long long)p[0], (long long)p[1], (long long)p[2], (long long)p[3]);
    return -1;
}

static int scratch(const dnn *d, void **p, size_t bytes) {
    *p = NULL;
    if (bytes) CUDA_CHECK(d->b, cudaMallocAsync(p, bytes, d->s));
    return 0;
}

static int release(const dnn *d, void *p) {
    if (p) CUDA_CHECK(d->b, cudaFreeAsync(p, d->s));
    return 0;
}

/* ---- convolution ---- */

/* x: the image side (x of conv2d, dx of grad_input, the output of conv2d_transpose),
 * y: the dy/y side, w: HWIO shape [kh, kw, cin/groups, cout] of the conv2d from x to y
 * (conv2d_transpose's [kh, kw, cout, cin] is that of the conv2d it is the adjoint of) */
static int conv_descs(const dnn *d, descs *ds, const ir_shape *x, const ir_shape *y, const ir_shape *w) {
    TRY(symmetric(d));
    TRY(nhwc(d->b, &ds->x, x));
    TRY(nhwc(d->b, &ds->y, y));
    CUDNN_CHECK(d->b, cudnnCreateFilterDescriptor(&ds->w));
    CUDNN_CHECK(d->b, cudnnSetFilter4dDescriptor(ds->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, (int)w->dim[3],
                                                 (int)w->dim[2], (int)w->dim[0], (int)w->dim[1]));
    CUDNN_CHECK(d->b, cudnnCreateConvolutionDescriptor(&ds->conv));
    ir_conv g = ir_conv_of(d->n, w);
    ds->xs = x, ds->ys = y, ds->ws = w, ds->g = g;
    CUDNN_CHECK(d->b, cudnnSetConvolution2dDescriptor(ds->conv, (int)g.pad[0], (int)g.pad[1], (int)g.stride[0],
                                                      (int)g.stride[1], (int)g.dilation[0], (int)g.dilation[1],
                                                      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_CHECK(d->b, cudnnSetConvolutionGroupCount(ds->conv, (int)g.groups));
    CUDNN_CHECK(d->b, cudnnSetConvolutionMathType(ds->conv, CUDNN_FMA_MATH)); /* no TF32: match the CPU's f32 */
    return 0;
}

static int64_t khw(const ir_shape *w) { return w->dim[0] * w->dim[1]; }

/* Issue 15: the algorithm is cuda_conv_algo's (fastest deterministic, found
 * once per shape), not perf[0] of a heuristic; the workspace is released on
 * every path. */
static int conv_algo(const dnn *d, const descs *ds, cuda_conv_kind kind, int *algo, size_t *ws_bytes) {
    cuda_conv_find f = {kind, d->h, ds->x, ds->y, ds->w, ds->conv, ds->xs, ds->ys, ds->ws, &ds->g};
    return cuda_conv_algo(d->b, d->dev, &f, algo, ws_bytes);
}

/* the status of a cuDNN call as the CHECK macros report it, without returning */
static int dnn_status(const dnn *d, cudnnStatus_t s, const char *call) {
    return s == CUDNN_STATUS_SUCCESS ? 0 : cuda_fail(d->b, call, cudnnGetErrorString(s), __FILE__, __LINE__);
}

/* rc, after the workspace ws is released whatever rc is */
static int with_release(const dnn *d, void *ws, int rc) {
    int r = release(d, ws);
    return rc ? rc : r;
}

static int conv_forward(const dnn *d, descs *ds, const float *ohwi) {
    int algo;
    size_t ws_bytes = 0;
    void *ws;
    const float one = 1.0f, zero = 0.0f;
    TRY(conv_algo(d, ds, CUDA_CONV_FWD, &algo, &ws_bytes));
    TRY(scratch(d, &ws, ws_bytes));
    return with_release(d, ws, dnn_status(d, cudnnConvolutionForward(d->h, &one, ds->x, d->k->in[0], ds->w, ohwi, ds->conv,
                                                                      (cudnnConvolutionFwdAlgo_t)algo, ws, ws_bytes,
                                                                      &zero, ds->y, d->k->out),
                                          "cudnnConvolutionForward"));
}

static int conv_grad_input(const dnn *d, descs *ds, const float *ohwi) {
    int algo;
    size_t ws_bytes = 0;
    void *ws;
    const float one = 1.0f, zero = 0.0f;
    TRY(conv_algo(d, ds, CUDA_CONV_BWD_DATA, &algo, &ws_bytes));
    TRY(scratch(d, &ws, ws_bytes));
    return with_release(d, ws, dnn_status(d, cudnnConvolutionBackwardData(d->h, &one, ds->w, ohwi, ds->y, d->k->in[0],
                                                                           ds->conv, (cudnnConvolutionBwdDataAlgo_t)algo,
                                                                           ws, ws_bytes, &zero, ds->x, d->k->out),
                                          "cudnnConvolutionBackwardData"));
}

static int conv_grad_filter(const dnn *d, descs *ds, float *ohwi) {
    int algo;
    size_t ws_bytes = 0;
    void *ws;
    const float one = 1.0f, zero = 0.0f;
    TRY(conv_algo(d, ds, CUDA_CONV_BWD_FILTER, &algo, &ws_bytes));
    TRY(scratch(d, &ws, ws_bytes));
    return with_release(d, ws, dnn_status(d, cudnnConvolutionBackwardFilter(d->h, &one, ds->x, d->k->in[0], ds->y,
                                                                             d->k->in[1], ds->conv,
                                                                             (cudnnConvolutionBwdFilterAlgo_t)algo, ws,
                                                                             ws_bytes, &zero, ds->w, ohwi),
                                          "cudnnConvolutionBackwardFilter"));
}

/* the four conv ops around one OHWI copy of the filter; conv2d_transpose is
 * cuDNN's backward data of the conv2d it is the adjoint of */
static int conv_run(const dnn *d, descs *ds) {
    const ir_node *const *in = d->k->in_nodes;
    ir_op op = d->n->op;
    int data_grad = op == OP_CONV2D_GRAD_INPUT || op == OP_CONV2D_TRANSPOSE;
    const ir_shape *w = op == OP_CONV2D_GRAD_FILTER ? &d->n->shape : &in[1]->shape;
    const ir_shape *x = data_grad ? &d->n->shape : &in[0]->shape;
    int fwd = op == OP_CONV2D || op == OP_CONV2D_EPILOGUE /* issue 14: the epilogue's convolution */
              || op == OP_CONV2D_BN_EPILOGUE;
    const ir_shape *y = fwd ? &d->n->shape : data_grad ? &in[0]->shape : &in[1]->shape;
    float *ohwi;
    int rc;
    TRY(conv_descs(d, ds, x, y, w));
    TRY(scratch(d, (void **)&ohwi, (size_t)ir_shape_numel(w) * sizeof(float)));
    cudaError_t e = cudaSuccess;
    if (op != OP_CONV2D_GRAD_FILTER) e = cuda_k_hwio_to_ohwi(d->k->in[1], ohwi, khw(w), w->dim[2], w->dim[3], d->s);
    if (e != cudaSuccess)
        rc = cuda_fail(d->b, "cuda_k_hwio_to_ohwi", cudaGetErrorString(e), __FILE__, __LINE__);
    else if (fwd)
        rc = conv_forward(d, ds, ohwi);
    else if (data_grad)
        rc = conv_grad_input(d, ds, ohwi);
    else if ((rc = conv_grad_filter(d, ds, ohwi)) == 0 &&
             (e = cuda_k_ohwi_to_hwio(ohwi, d->k->out, khw(w), w->dim[2], w->dim[3], d->s)) != cudaSuccess)
        rc = cuda_fail(d->b, "cuda_k_ohwi_to_hwio", cudaGetErrorString(e), __FILE__, __LINE__);
    return with_release(d, ohwi, rc);
}

static dnn dnn_of(rt_backend *b, int device, int stream, const rt_kernel_args *k) {
    cuda_device *dev = &cuda_st(b)->dev[device];
    dnn d = {b, dev, dev->dnn[stream], dev->stream[stream], k, k->node, NULL};
    return d;
}

int cuda_conv(rt_backend *b, int device, int stream, const rt_kernel_args *k) {
    dnn d = dnn_of(b, device, stream, k);
    descs ds = {0};
    d.at = k->node->iattr;
    int rc = conv_run(&d, &ds);
    descs_free(&ds);
    return rc;
}

/* ---- pooling: attrs k_h,k_w,stride_h,stride_w,pad_t,pad_l,pad_b,pad_r ---- */

static int pool_descs(const dnn *d, descs *ds, const ir_shape *x, const ir_shape *y, int is_max) {
    const int64_t *a = d->n->iattr;
    TRY(symmetric(d));
    TRY(nhwc(d->b, &ds->x, x));
    TRY(nhwc(d->b, &ds->y, y));
    CUDNN_CHECK(d->b, cudnnCreatePoolingDescriptor(&ds->pool));
    CUDNN_CHECK(d->b, cudnnSetPooling2dDescriptor(
                          ds->pool, is_max ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
                          CUDNN_PROPAGATE_NAN, (int)a[0], (int)a[1], (int)a[4], (int)a[5], (int)a[2], (int)a[3]));
    return 0;
}

/* backward needs the forward output y: recompute it into scratch */
static int pool_backward(const dnn *d, descs *ds, const ir_shape *y) {
    const float one = 1.0f, zero = 0.0f;
    void *ybuf;
    TRY(scratch(d, &ybuf, (size_t)ir_shape_numel(y) * sizeof(float)));
    int rc = dnn_status(d, cudnnPoolingForward(d->h, ds->pool, &one, ds->x, d->k->in[0], &zero, ds->y, ybuf),
                        "cudnnPoolingForward");
    if (rc == 0)
        rc = dnn_status(d, cudnnPoolingBackward(d->h, ds->pool, &one, ds->y, ybuf, ds->y, d->k->in[1], ds->x,
                                                d->k->in[0], &zero, ds->x, d->k->out),
                        "cudnnPoolingBackward");
    return with_release(d, ybuf, rc);
}

static int pool_run(const dnn *d, descs *ds) {
    ir_op op = d->n->op;
    int is_max = op == OP_MAX_POOL2D || op == OP_MAX_POOL2D_GRAD;
    int fwd = op == OP_MAX_POOL2D || op == OP_AVG_POOL2D;
    const ir_shape *x = &d->k->in_nodes[0]->shape;
    const ir_shape *y = fwd ? &d->n->shape : &d->k->in_nodes[1]->shape;
    const float one = 1.0f, zero = 0.0f;
    TRY(pool_descs(d, ds, x, y, is_max));
    if (!fwd) return pool_backward(d, ds, y);
    CUDNN_CHECK(d->b, cudnnPoolingForward(d->h, ds->pool, &one, ds->x, d->k->in[0], &zero, ds->y, d->k->out));
    return 0;
}

int cuda_pool(rt_backend *b, int device, int stream, const rt_kernel_args *k) {
    dnn d = dnn_of(b, device, stream, k);
    descs ds = {0};
    d.at = k->node->iattr + 2; /* stride_h,stride_w,pad_t,pad_l,pad_b,pad_r, as for conv */
    int rc = pool_run(&d, &ds);
    descs_free(&ds);
    return rc;
}
