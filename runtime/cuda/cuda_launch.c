/* cuda_launch.c - runs one node on a device stream: a table over the op enum
 * to cuBLAS (matmul), cuDNN (cuda_dnn.c) or a kernel of cuda_kernels.cu. */
#include <string.h>

#include "../../ir/order.h"
#include "../ops_math.h"
#include "cuda_impl.h"

/* what every op handler gets */
typedef struct {
    rt_backend *b;
    cuda_device *dev;
    int device, stream;
    cudaStream_t s;
    const rt_kernel_args *k;
    const ir_node *n;
} ctx;

static const ir_shape *in_shape(const ctx *c, int i) { return &c->k->in_nodes[i]->shape; }
static int64_t out_numel(const ctx *c) { return ir_shape_numel(&c->n->shape); }
static const float *inf(const ctx *c, int i) { return (const float *)c->k->in[i]; }
static float *outf(const ctx *c) { return (float *)c->k->out; }

static int bad(const ctx *c, const char *what) {
    snprintf(c->b->err, sizeof c->b->err, "cuda: %s: %s", ir_ops[c->n->op].name, what);
    return -1;
}

/* out = in[i] (same bytes) unless they already alias */
static int copy_in(const ctx *c, int i, size_t byte_offset, size_t bytes) {
    const char *src = (const char *)c->k->in[i] + byte_offset;
    if ((const void *)src == c->k->out || bytes == 0) return 0;
    CUDA_CHECK(c->b, cudaMemcpyAsync(c->k->out, src, bytes, cudaMemcpyDefault, c->s));
    return 0;
}

/* strides of input shape `in` broadcast against out (numpy: right-aligned) */
static void bcast_strides(const ir_shape *out, const ir_shape *in, int64_t *stride) {
    int64_t st = 1;
    for (int a = out->rank - 1, j = in->rank - 1; a >= 0; a--, j--) {
        int64_t d = j >= 0 ? in->dim[j] : 1;
        stride[a] = d == 1 ? 0 : st;
        st *= d;
    }
}

static cuda_bcast bcast_of(const ctx *c, int n_in) {
    cuda_bcast bc;
    memset(&bc, 0, sizeof bc);
    bc.rank = c->n->shape.rank;
    for (int a = 0; a < bc.rank; a++) bc.dim[a] = c->n->shape.dim[a];
    for (int i = 0; i < n_in; i++) bcast_strides(&c->n->shape, in_shape(c, i), bc.stride[i]);
    return bc;
}

static int need_f32(const ctx *c) {
    if (c->n->dtype != IR_F32) return bad(c, "only f32 is supported on CUDA");
    return 0;
}

static int op_binary(const ctx *c) {
    TRY(need_f32(c));
    cuda_bcast bc = bcast_of(c, 2);
    CUDA_CHECK(c->b, cuda_k_binary(c->n->op, &bc, inf(c, 0), inf(c, 1), outf(c), out_numel(c), c->s));
    return 0;
}

static int op_unary(const ctx *c) {
    TRY(need_f32(c));
    CUDA_CHECK(c->b, cuda_k_unary(c->n->op, inf(c, 0), outf(c), out_numel(c), c->s));
    return 0;
}

static int op_broadcast_to(const ctx *c) {
    cuda_bcast bc = bcast_of(c, 1);
    CUDA_CHECK(c->b, cuda_k_broadcast(&bc, c->k->in[0], c->k->out, out_numel(c), (int)ir_dtype_size(c->n->dtype),
                                      c->s));
    return 0;
}

static int op_cast(const ctx *c) {
    ir_dtype from = c->k->in_nodes[0]->dtype;
    if (from == c->n->dtype) return copy_in(c, 0, 0, (size_t)ir_node_bytes(c->n));
    CUDA_CHECK(c->b, cuda_k_cast(from, c->n->dtype, c->k->in[0], c->k->out, out_numel(c), c->s));
    return 0;
}

/* Row-major C[m,n] = op(A)[m,k] op(B)[k,n] is column-major C^T = op(B)^T op(A)^T:
 * hand cuBLAS B first, with the same transpose flags and the row-major leading dims.
 * Issue 13, batched operands: one strided-batched call when each operand's batch
 * is the output's or a single matrix (stride 0), else one call per output matrix. */
static int op_matmul(const ctx *c) {
    TRY(need_f32(c));
    int ta = (int)c->n->iattr[0], tb = (int)c->n->iattr[1];
    const ir_shape *a = in_shape(c, 0), *bsh = in_shape(c, 1);
    ir_matmul g = ir_matmul_of(c->n, a, bsh);
    int m = (int)g.m, n = (int)g.n, k = (int)g.k;
    int lda = (int)a->dim[a->rank - 1], ldb = (int)bsh->dim[bsh->rank - 1];
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasHandle_t h = c->dev->blas[c->stream];
    const float one = 1.0f, zero = 0.0f;
    if (g.batch == 1) {
        CUBLAS_CHECK(c->b, cublasSgemm(h, opb, opa, n, m, k, &one, inf(c, 1), ldb, inf(c, 0), lda, &zero, outf(c), n));
    } else if (g.a_stride >= 0 && g.b_stride >= 0) {
        CUBLAS_CHECK(c->b, cublasSgemmStridedBatched(h, opb, opa, n, m, k, &one, inf(c, 1), ldb, g.b_stride, inf(c, 0),
                                                     lda, g.a_stride, &zero, outf(c), n, g.m * g.n, (int)g.batch));
    } else {
        for (int64_t i = 0; i < g.batch; i++)
            CUBLAS_CHECK(c->b, cublasSgemm(h, opb, opa, n, m, k, &one, inf(c, 1) + ir_matmul_offset(&g, 1, i), ldb,
                                           inf(c, 0) + ir_matmul_offset(&g, 0, i), lda, &zero,
                                           outf(c) + i * g.m * g.n, n));
    }
    return 0;
}

/* input 0 reduced over the axes bitmask iattr[0] */
static cuda_reduce_desc reduce_desc(const ctx *c) {
    const ir_shape *x = in_shape(c, 0);
    cuda_reduce_desc r;
    memset(&r, 0, sizeof r);
    r.rank = x->rank;
    r.mask = (unsigned)c->n->iattr[0];
    r.red_n = 1;
    for (int a = 0; a < x->rank; a++) {
        r.dim[a] = x->dim[a];
        if (r.mask >> a & 1u) r.red_n *= x->dim[a];
    }
    r.out_n = ir_shape_numel(x) / (r.red_n ? r.red_n : 1);
    return r;
}

/* reduce_sum / reduce_mean over the axes bitmask iattr[0] */
static int op_reduce(const ctx *c) {
    TRY(need_f32(c));
    cuda_reduce_desc r = reduce_desc(c);
    float scale = c->n->op == OP_REDUCE_MEAN && r.red_n ? 1.0f / (float)r.red_n : 1.0f;
    CUDA_CHECK(c->b, cuda_k_reduce(&r, inf(c, 0), outf(c), scale, c->s));
    return 0;
}

/* rows and classes of input i (class axis last) */
static void rows_classes(const ctx *c, int i, int64_t *rows, int64_t *cls) {
    const ir_shape *s = in_shape(c, i);
    *cls = s->rank ? s->dim[s->rank - 1] : 1;
    *rows = *cls ? ir_shape_numel(s) / *cls : 0;
}

/* sparse_xent, sparse_xent_grad, argmax_match (softmax: op_softmax_axis) */
static int op_xent(const ctx *c) {
    int64_t rows, cls;
    TRY(need_f32(c));
    rows_classes(c, 0, &rows, &cls);
    const int32_t *lab = c->k->in[1];
    switch (c->n->op) {
    case OP_SPARSE_XENT: CUDA_CHECK(c->b, cuda_k_xent(inf(c, 0), lab, outf(c), rows, cls, c->s)); break;
    case OP_SPARSE_XENT_GRAD:
        CUDA_CHECK(c->b, cuda_k_xent_grad(inf(c, 0), lab, inf(c, 2), outf(c), rows, cls, c->s));
        break;
    default: CUDA_CHECK(c->b, cuda_k_argmax_match(inf(c, 0), lab, outf(c), rows, cls, c->s)); break;
    }
    return 0;
}

/* Mask of element i of replica r: global index r * numel + i, so the mask of
 * a row does not depend on how the batch was split. Identity outside training. */
static int op_dropout(const ctx *c) {
    TRY(need_f32(c));
    int64_t n = out_numel(c);
    if (!c->k->training || !*c->k->training) return copy_in(c, 0, 0, (size_t)ir_node_bytes(c->n));
    uint64_t base = (uint64_t)c->k->replica * (uint64_t)n;
    const int64_t *step;
    TRY(cuda_step_word(c->b, c->device, c->stream, c->k, &step));
    CUDA_CHECK(c->b, cuda_k_dropout(inf(c, 0), outf(c), n, (uint64_t)c->n->iattr[0], step, base,
                                    (float)c->n->fattr[0], c->s));
    return 0;
}

/* in-place updates: out aliases the param (input 0); slots are written in place;
 * the squared norm to clip by is the last input when the node has one */
static float *slot(const ctx *c, int i) { return i < c->n->n_in - (ir_update_norm_input(c->n) >= 0) ? (float *)c->k->in[i] : NULL; }

static double fattr(const ctx *c, const char *name) { return c->n->fattr[ir_op_fattr_index(c->n->op, name)]; }

/* Issue 15: the kernels read the step from the device word of their stream
 * and derive the rate (the plan's schedule), decay and corrections from it
 * (cuda_step.h), so a replayed graph updates with the current step. */
static int op_update(const ctx *c) {
    TRY(need_f32(c));
    TRY(copy_in(c, 0, 0, (size_t)ir_node_bytes(c->n)));
    const double *f = c->n->fattr;
    float *p = outf(c), clip = (float)fattr(c, "clipnorm");
    const float *g = inf(c, 1), *sq = ir_update_norm_input(c->n) >= 0 ? inf(c, ir_update_norm_input(c->n)) : NULL;
    int64_t n = out_numel(c), t = *c->k->step;
    if (c->n->op != OP_SGD_UPDATE && c->n->op != OP_RMSPROP_UPDATE && t < 1) return bad(c, "step counter below 1");
    cuda_rate r = {c->n->op, f[0], fattr(c, "weight_decay"), f[1], f[2], c->k->m->opt.schedule};
    const int64_t *step;
    TRY(cuda_step_word(c->b, c->device, c->stream, c->k, &step));
    switch (c->n->op) {
    case OP_SGD_UPDATE:
        CUDA_CHECK(c->b, cuda_k_sgd(p, g, slot(c, 2), n, &r, step, (float)f[1], (int)c->n->iattr[0], sq, clip, c->s));
        break;
    case OP_ADAM_UPDATE:
        CUDA_CHECK(c->b, cuda_k_adam(p, g, slot(c, 2), slot(c, 3), n, &r, step, (float)f[3], sq, clip, c->s));
        break;
    case OP_RMSPROP_UPDATE:
        CUDA_CHECK(c->b, cuda_k_rmsprop(p, g, slot(c, 2), slot(c, 3), n, &r, step, (float)f[1], (float)f[2],
                                        (float)f[3], sq, clip, c->s));
        break;
    case OP_ADAGRAD_UPDATE:
        CUDA_CHECK(c->b, cuda_k_adagrad(p, g, slot(c, 2), n, &r, step, (float)f[2], (float)f[1], sq, clip, c->s));
        break;
    case OP_NADAM_UPDATE:
        CUDA_CHECK(c->b, cuda_k_nadam(p, g, slot(c, 2), slot(c, 3), n, &r, step, (float)f[3], sq, clip, c->s));
        break;
    default: /* lamb */
        CUDA_CHECK(c->b, cuda_k_lamb(p, g, slot(c, 2), slot(c, 3), n, &r, step, (float)f[3], sq, clip, c->s));
    }
    return 0;
}

/* sq_norm: one deterministic launch per input, accumulated into the output */
static int op_sq_norm(const ctx *c) {
    TRY(need_f32(c));
    for (int i = 0; i < c->n->n_in; i++)
        CUDA_CHECK(c->b, cuda_k_sq_norm(inf(c, i), ir_shape_numel(in_shape(c, i)), outf(c), i > 0, c->s));
    return 0;
}

/* shard: rows [index*n/count, (index+1)*n/count) of input 0 (host or device memory) */
static int op_shard(const ctx *c) {
    const ir_shape *x = in_shape(c, 0);
    int64_t rows = x->rank ? x->dim[0] : 1, idx = c->n->iattr[0], cnt = c->n->iattr[1];
    if (cnt <= 0 || rows <= 0) return bad(c, "empty shard");
    size_t row_bytes = (size_t)(ir_shape_numel(x) / rows) * ir_dtype_size(c->n->dtype);
    return copy_in(c, 0, (size_t)(idx * rows / cnt) * row_bytes, (size_t)ir_node_bytes(c->n));
}

/* all_reduce's launch packs its inputs into the bucket buffer; collective() reduces it */
static int op_pack(const ctx *c) {
    size_t at = 0;
    for (int i = 0; i < c->n->n_in; i++) {
        size_t bytes = (size_t)ir_node_bytes(c->k->in_nodes[i]);
        char *dst = (char *)c->k->out + at;
        if (dst != c->k->in[i] && bytes)
            CUDA_CHECK(c->b, cudaMemcpyAsync(dst, c->k->in[i], bytes, cudaMemcpyDefault, c->s));
        at += bytes;
    }
    return 0;
}

static int op_alias(const ctx *c) {
    size_t off = c->n->op == OP_VIEW ? (size_t)c->n->iattr[0] * ir_dtype_size(c->n->dtype) : 0;
    return copy_in(c, 0, off, (size_t)ir_node_bytes(c->n));
}

static int op_const(const ctx *c) {
    CUDA_CHECK(c->b, cuda_k_fill(c->n->dtype, c->k->out, c->n->fattr[0], out_numel(c), c->s));
    return 0;
}

static int op_conv(const ctx *c) { return cuda_conv(c->b, c->device, c->stream, c->k); }
static int op_pool(const ctx *c) { return cuda_pool(c->b, c->device, c->stream, c->k); }
static int op_assign(const ctx *c) { return copy_in(c, 1, 0, (size_t)ir_node_bytes(c->n)); } /* into the state's bytes */
static int op_in_training(const ctx *c) { return copy_in(c, *c->k->training ? 0 : 1, 0, (size_t)ir_node_bytes(c->n)); }

/* ---- shape ops, extreme reductions, softmax on any axis (issue 12; cuda_shape.cu) ---- */

static void strides(const ir_shape *s, int64_t *st) {
    int64_t t = 1;
    for (int i = s->rank - 1; i >= 0; i--) st[i] = t, t *= s->dim[i];
}

/* the box `box` of src (corner soff) to dst (corner doff) */
static int box(const ctx *c, const ir_shape *box, const float *src, const ir_shape *ss, const int64_t *soff, float *dst,
               const ir_shape *ds, const int64_t *doff) {
    cuda_box b;
    memset(&b, 0, sizeof b);
    b.rank = box->rank;
    strides(ss, b.src_stride), strides(ds, b.dst_stride);
    for (int a = 0; a < box->rank; a++) {
        b.dim[a] = box->dim[a];
        b.src_at += soff[a] * b.src_stride[a], b.dst_at += doff[a] * b.dst_stride[a];
    }
    CUDA_CHECK(c->b, cuda_k_box_copy(&b, src, dst, c->s));
    return 0;
}

static const int64_t no_offset[IR_MAX_RANK];

static int op_concat(const ctx *c) {
    TRY(need_f32(c));
    int64_t at[IR_MAX_RANK] = {0}, axis = c->n->iattr[0];
    for (int i = 0; i < c->n->n_in; i++) {
        TRY(box(c, in_shape(c, i), inf(c, i), in_shape(c, i), no_offset, outf(c), &c->n->shape, at));
        at[axis] += in_shape(c, i)->dim[axis];
    }
    return 0;
}

static int op_slice(const ctx *c) {
    TRY(need_f32(c));
    return box(c, &c->n->shape, inf(c, 0), in_shape(c, 0), c->n->iattr, outf(c), &c->n->shape, no_offset);
}

static int op_pad(const ctx *c) {
    TRY(need_f32(c));
    CUDA_CHECK(c->b, cudaMemsetAsync(c->k->out, 0, (size_t)ir_node_bytes(c->n), c->s));
    return box(c, in_shape(c, 0), inf(c, 0), in_shape(c, 0), no_offset, outf(c), &c->n->shape, c->n->iattr);
}

/* output axis a reads input axis perm[a] */
static int op_transpose(const ctx *c) {
    TRY(need_f32(c));
    int64_t xst[IR_MAX_RANK];
    cuda_box b;
    memset(&b, 0, sizeof b);
    b.rank = c->n->shape.rank;
    strides(in_shape(c, 0), xst), strides(&c->n->shape, b.dst_stride);
    for (int a = 0; a < b.rank; a++) b.dim[a] = c->n->shape.dim[a], b.src_stride[a] = xst[c->n->iattr[0] >> 4 * a & 15];
    CUDA_CHECK(c->b, cuda_k_transpose(&b, inf(c, 0), outf(c), c->s));
    return 0;
}

static int op_reduce_extreme(const ctx *c) {
    TRY(need_f32(c));
    cuda_reduce_desc r = reduce_desc(c);
    CUDA_CHECK(c->b, cuda_k_reduce_extreme(&r, inf(c, 0), outf(c), c->n->op == OP_REDUCE_MAX, c->s));
    return 0;
}

/* softmax, log_softmax, softmax_grad over axis rank-1-from_end as [outer, n, inner] */
static int op_softmax_axis(const ctx *c) {
    TRY(need_f32(c));
    const ir_shape *s = &c->n->shape;
    int axis = s->rank - 1 - (int)c->n->iattr[0];
    int64_t outer = 1, inner = 1;
    for (int a = 0; a < axis; a++) outer *= s->dim[a];
    for (int a = axis + 1; a < s->rank; a++) inner *= s->dim[a];
    const float *dy = c->n->op == OP_SOFTMAX_GRAD ? inf(c, 1) : NULL;
    CUDA_CHECK(c->b, cuda_k_softmax_axis(c->n->op, inf(c, 0), dy, outf(c), outer, s->dim[axis], inner, c->s));
    return 0;
}

/* ---- issue 12: activations (alpha: fattr 0), in_top_k ---- */
static int op_activation(const ctx *c) {
    TRY(need_f32(c));
    float alpha = (float)c->n->fattr[0];
    if (c->n->n_in == 1)
        CUDA_CHECK(c->b, cuda_k_activation(c->n->op, inf(c, 0), outf(c), out_numel(c), alpha, c->s));
    else
        CUDA_CHECK(c->b, cuda_k_activation_grad(c->n->op, inf(c, 0), inf(c, 1), outf(c), out_numel(c), alpha, c->s));
    return 0;
}

static int op_in_top_k(const ctx *c) {
    int64_t rows, cls;
    TRY(need_f32(c));
    rows_classes(c, 0, &rows, &cls);
    CUDA_CHECK(c->b, cuda_k_in_top_k(inf(c, 0), c->k->in[1], outf(c), rows, cls, c->n->iattr[0], c->s));
    return 0;
}

/* ---- issue 13: embedding lookup and its gradient (cuda_embed.cu) ---- */

static int op_gather(const ctx *c) {
    TRY(need_f32(c));
    const ir_shape *t = in_shape(c, 0);
    cuda_st(c->b)->m = c->k->m; /* for the message of a bad id (cuda_backend.c) */
    CUDA_CHECK(c->b, cuda_k_gather(inf(c, 0), c->k->in[1], outf(c), ir_shape_numel(in_shape(c, 1)), t->dim[0],
                                   t->dim[1], c->dev->bad_id, (int32_t)(c->n - c->k->m->g.nodes), c->s));
    return 0;
}

static int op_scatter_add(const ctx *c) {
    TRY(need_f32(c));
    CUDA_CHECK(c->b, cuda_k_scatter_add(c->k->in[0], inf(c, 1), outf(c), ir_shape_numel(in_shape(c, 0)),
                                        c->n->shape.dim[0], c->n->shape.dim[1], c->s));
    return 0;
}

/* ---- issue 13: one_hot (cuda_onehot.cu) ---- */

static int op_one_hot(const ctx *c) {
    TRY(need_f32(c));
    CUDA_CHECK(c->b, cuda_k_one_hot(c->k->in[0], outf(c), ir_shape_numel(in_shape(c, 0)), c->n->iattr[0], c->s));
    return 0;
}

/* all_gather's launch copies x into this replica's block; collective() gathers the rest (ncclAllGather in place) */
static int op_all_gather(const ctx *c) {
    size_t bytes = (size_t)ir_node_bytes(c->k->in_nodes[0]);
    char *dst = (char *)c->k->out + (size_t)c->k->replica * bytes;
    if (bytes) CUDA_CHECK(c->b, cudaMemcpyAsync(dst, c->k->in[0], bytes, cudaMemcpyDefault, c->s));
    return 0;
}

/* issue 14: a fused node's program, one thread per output element (cuda_fused.cu) */
static int op_fused(const ctx *c) {
    TRY(need_f32(c));
    if (!c->n->fused || c->n->n_in > IR_FUSED_MAX_INPUTS) return bad(c, "no program");
    cuda_fused_args a;
    memset(&a, 0, sizeof a);
    a.n_in = c->n->n_in, a.rank = c->n->shape.rank;
    for (int d = 0; d < a.rank; d++) a.dim[d] = c->n->shape.dim[d];
    for (int i = 0; i < a.n_in; i++) bcast_strides(&c->n->shape, in_shape(c, i), a.stride[i]), a.x[i] = inf(c, i);
    CUDA_CHECK(c->b, cuda_k_fused(c->n->fused, &a, outf(c), out_numel(c), c->s));
    return 0;
}

/* ---- issue 14: epilogues (cuda_epilogue.cu) ---- */

/* issue 14: a 2-D matmul_epilogue as one cuBLASLt call (cuda_lt.c); *done 0
 * when cuBLASLt has no epilogue or algorithm for it */
static int lt_epilogue(const ctx *c, int *done) {
    const ir_shape *a = in_shape(c, 0), *bsh = in_shape(c, 1);
    ir_matmul g = ir_matmul_of(c->n, a, bsh);
    *done = 0;
    if (g.batch != 1) return 0;
    cuda_lt_gemm lt = {g.m, g.n, g.k, a->dim[a->rank - 1], bsh->dim[bsh->rank - 1],
                       (int)c->n->iattr[0], (int)c->n->iattr[1], (int)c->n->iattr[2],
                       inf(c, 0), inf(c, 1), inf(c, 2), c->n->n_in == 4 ? inf(c, 3) : NULL, outf(c)};
    return cuda_lt_matmul_epilogue(c->b, c->dev->lt, c->s, &lt, done);
}

/* the core (cuDNN convolution, cuBLAS GEMM) into out, then one pass adding the
 * bias (and residual) and applying the activation; a 2-D matmul with no or a
 * relu activation is one cuBLASLt call instead */
static int op_epilogue(const ctx *c) {
    TRY(need_f32(c));
    int conv = c->n->op == OP_CONV2D_EPILOGUE, done = 0;
    if (!conv) TRY(lt_epilogue(c, &done));
    if (done) return 0;
    TRY(conv ? op_conv(c) : op_matmul(c));
    int64_t n = c->n->shape.dim[c->n->shape.rank - 1], act = c->n->iattr[conv ? 9 : 2];
    CUDA_CHECK(c->b, cuda_k_epilogue(outf(c), inf(c, 2), c->n->n_in == 4 ? inf(c, 3) : NULL, out_numel(c), n,
                                     (int)act, c->s));
    return 0;
}

/* issue 14: conv2d_bn_epilogue (x, w, c, mean, scale, beta[, residual]): in
 * training one pass over c; outside it the cuDNN convolution of x and w into
 * out, then the same pass in place */
static int op_bn_epilogue(const ctx *c) {
    TRY(need_f32(c));
    const float *conv = inf(c, 2);
    if (!*c->k->training) {
        TRY(op_conv(c));
        conv = outf(c);
    }
    CUDA_CHECK(c->b, cuda_k_bn_epilogue(outf(c), conv, inf(c, 3), inf(c, 4), inf(c, 5),
                                        c->n->n_in == 7 ? inf(c, 6) : NULL, out_numel(c), c->n->shape.dim[3],
                                        (int)c->n->iattr[9], c->s));
    return 0;
}

static int op_max_pool_relu_grad(const ctx *c) {
    TRY(need_f32(c));
    const ir_shape *x = in_shape(c, 0), *y = in_shape(c, 1);
    const int64_t *a = c->n->iattr; /* k_h, k_w, stride_h, stride_w, pad_t, pad_l */
    cuda_pool_geom g = {x->dim[0], x->dim[1], x->dim[2], x->dim[3], y->dim[1], y->dim[2], a[0], a[1], a[2], a[3], a[4], a[5]};
    CUDA_CHECK(c->b, cuda_k_max_pool_grad(inf(c, 0), inf(c, 1), outf(c), &g, 1, c->s));
    return 0;
}

/* issue 14 (seed CNN speed): conv2d_grad_filter_pool2 (x, y, dy) -> dw */
static int op_grad_filter_pool2(const ctx *c) {
    TRY(need_f32(c));
    const ir_shape *x = in_shape(c, 0), *y = in_shape(c, 1), *w = &c->n->shape;
    ir_conv v = ir_conv_of(c->n, w);
    cuda_pool2_geom g = {x->dim[0], x->dim[1], x->dim[2], x->dim[3], y->dim[1], y->dim[2], y->dim[3], w->dim[0],
                         w->dim[1], w->dim[2], v.stride[0], v.stride[1], v.pad[0], v.pad[1], v.dilation[0],
                         v.dilation[1], v.groups};
    CUDA_CHECK(c->b, cuda_k_grad_filter_pool2(inf(c, 0), inf(c, 1), inf(c, 2), outf(c), &g, c->s));
    return 0;
}

/* issue 14 (seed CNN speed): conv2d_relu_pool2 (x, w, bias) and its filter gradient (x, w, bias, dy) */
static cuda_pool2_geom relu_pool2_geom(const ctx *c) {
    const ir_shape *x = in_shape(c, 0), *w = in_shape(c, 1);
    ir_conv v = ir_conv_of(c->n, w);
    return (cuda_pool2_geom){x->dim[0], x->dim[1], x->dim[2], x->dim[3],
                             (x->dim[1] + v.pad[0] + v.pad[2] - v.window[0]) / v.stride[0] + 1,
                             (x->dim[2] + v.pad[1] + v.pad[3] - v.window[1]) / v.stride[1] + 1, w->dim[3], w->dim[0],
                             w->dim[1], w->dim[2], v.stride[0], v.stride[1], v.pad[0], v.pad[1], v.dilation[0],
                             v.dilation[1], v.groups};
}

static int op_relu_pool2(const ctx *c) {
    TRY(need_f32(c));
    cuda_pool2_geom g = relu_pool2_geom(c);
    CUDA_CHECK(c->b, cuda_k_relu_pool2(inf(c, 0), inf(c, 1), inf(c, 2), outf(c), &g, c->s));
    return 0;
}

static int op_relu_pool2_grad_filter(const ctx *c) {
    TRY(need_f32(c));
    cuda_pool2_geom g = relu_pool2_geom(c);
    CUDA_CHECK(c->b, cuda_k_relu_pool2_grad_filter(inf(c, 0), inf(c, 2), inf(c, 3), outf(c), (int)c->n->iattr[9], &g,
                                                         c->s));
    return 0;
}

/* ---- issue 14, char_gpt speed: causal_softmax and its gradient (rows of the last axis) ---- */
static int op_causal_softmax(const ctx *c) {
    TRY(need_f32(c));
    const ir_shape *s = &c->n->shape;
    int64_t r = s->dim[s->rank - 2], cols = s->dim[s->rank - 1], rows = cols ? ir_shape_numel(s) / cols : 0;
    const float *dy = c->n->op == OP_CAUSAL_SOFTMAX_GRAD ? inf(c, 1) : NULL;
    CUDA_CHECK(c->b, cuda_k_causal_softmax(inf(c, 0), dy, outf(c), rows, r, cols, (float)c->n->fattr[0], c->s));
    return 0;
}

/* ---- issue 14, char_gpt speed: causal_softmax_dropout_grad (y, dp) ---- */
static int op_causal_softmax_dropout_grad(const ctx *c) {
    TRY(need_f32(c));
    const ir_shape *s = &c->n->shape;
    int64_t r = s->dim[s->rank - 2], cols = s->dim[s->rank - 1], rows = cols ? ir_shape_numel(s) / cols : 0;
    const int64_t *step = NULL;
    if (c->k->training && *c->k->training) TRY(cuda_step_word(c->b, c->device, c->stream, c->k, &step));
    uint64_t base = (uint64_t)c->k->replica * (uint64_t)ir_shape_numel(s);
    CUDA_CHECK(c->b, cuda_k_causal_softmax_dropout_grad(inf(c, 0), inf(c, 1), outf(c), rows, r, cols,
                                                        (float)c->n->fattr[0], (uint64_t)c->n->iattr[0], step, base,
                                                        (float)c->n->fattr[1], c->s));
    return 0;
}

/* ---- issue 14, char_gpt speed: causal_matmul (matmul with a triangular matrix) ----
 * tri 0: matmul's GEMMs, then the masked triangle of each output set to 0;
 * tri 1, 2: row-major C = T(op(A)) X is column-major C^T = X^T op(T)^T, so
 * cuBLAS's trmm from the other side, on T's buffer (seen column-major: op(T)^T
 * when not transposed, its triangle flipped); X = op(B) (tri 1) or op(A) (tri
 * 2) is read in place, or first transposed into the output by geam. */
static int op_causal_matmul(const ctx *c) {
    int ta = c->n->iattr[0] != 0, tb = c->n->iattr[1] != 0, tri = (int)c->n->iattr[2], up = c->n->iattr[3] != 0;
    ir_matmul g = ir_matmul_of(c->n, in_shape(c, 0), in_shape(c, 1));
    if (tri == 0) {
        TRY(op_matmul(c));
        CUDA_CHECK(c->b, cuda_k_tri_mask(outf(c), g.batch, g.m, up, c->s));
        return 0;
    }
    TRY(need_f32(c));
    cublasHandle_t h = c->dev->blas[c->stream];
    const float one = 1.0f, zero = 0.0f;
    int m = (int)g.m, n = (int)g.n, left = tri == 1, tt = left ? ta : tb, tx = left ? tb : ta;
    int ldx = left ? (tb ? m : n) : (ta ? m : n); /* X's buffer: op(B) [m, n] or op(A) [m, n] before its op */
    cublasFillMode_t fill = (up ^ tt) ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER; /* flipped by the view */
    for (int64_t i = 0; i < g.batch; i++) {
        const float *t = left ? inf(c, 0) + ir_matmul_offset(&g, 0, i) : inf(c, 1) + ir_matmul_offset(&g, 1, i);
        const float *x = left ? inf(c, 1) + ir_matmul_offset(&g, 1, i) : inf(c, 0) + ir_matmul_offset(&g, 0, i);
        float *out = outf(c) + i * g.m * g.n; /* C^T column-major [n, m] */
        if (tx) { /* X's buffer is [n, m] row-major, X^T [m, n] column-major: transpose it into out */
            CUBLAS_CHECK(c->b, cublasSgeam(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, &one, x, ldx, &zero, out, n, out, n));
            x = out, ldx = n;
        }
        CUBLAS_CHECK(c->b, cublasStrmm(h, left ? CUBLAS_SIDE_RIGHT : CUBLAS_SIDE_LEFT, fill,
                                       tt ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, n, m, &one, t,
                                       left ? m : n, x, ldx, out, n));
    }
    return 0;
}

/* ---- issue 14, char_gpt speed: causal_matmul_softmax (a, b) and its gradient (a, b, y) ----
 * matmul's GEMMs (cuBLAS) of the scores into the output, then the causal
 * softmax or its gradient (with dropout's mask in training when rate > 0)
 * over it in place: each row's thread reads an element before it writes it */
static int op_causal_matmul_softmax(const ctx *c) {
    TRY(op_matmul(c));
    const ir_shape *s = &c->n->shape;
    int64_t r = s->dim[s->rank - 2], cols = s->dim[s->rank - 1], rows = cols ? ir_shape_numel(s) / cols : 0;
    float scale = (float)c->n->fattr[0], rate = (float)c->n->fattr[1];
    if (c->n->op == OP_CAUSAL_MATMUL_SOFTMAX) {
        CUDA_CHECK(c->b, cuda_k_causal_softmax(outf(c), NULL, outf(c), rows, r, cols, scale, c->s));
        return 0;
    }
    if (!(c->k->training && *c->k->training) || rate == 0) {
        CUDA_CHECK(c->b, cuda_k_causal_softmax(inf(c, 2), outf(c), outf(c), rows, r, cols, scale, c->s));
        return 0;
    }
    const int64_t *step = NULL;
    TRY(cuda_step_word(c->b, c->device, c->stream, c->k, &step));
    uint64_t base = (uint64_t)c->k->replica * (uint64_t)ir_shape_numel(s);
    CUDA_CHECK(c->b, cuda_k_causal_softmax_dropout_grad(inf(c, 2), outf(c), outf(c), rows, r, cols, scale,
                                                        (uint64_t)c->n->iattr[2], step, base, rate, c->s));
    return 0;
}

/* issue 14, char_gpt speed: normalize and its gradient (rows of the last axis) */
static int op_normalize(const ctx *c) {
    TRY(need_f32(c));
    const ir_shape *s = &c->n->shape;
    int64_t cols = s->dim[s->rank - 1], rows = cols ? ir_shape_numel(s) / cols : 0;
    const float *dy = c->n->op == OP_NORMALIZE_GRAD ? inf(c, 1) : NULL;
    CUDA_CHECK(c->b, cuda_k_normalize(inf(c, 0), dy, outf(c), rows, cols, (float)c->n->fattr[0], c->s));
    return 0;
}

/* issue 14, batch norm in training: per-channel sums over the rows of x
 * [..., c] (channel_mean, channel_var, channel_sum_dot) and scale_shift */
static int op_batch_norm(const ctx *c) {
    TRY(need_f32(c));
    const ir_shape *xs = in_shape(c, 0);
    int64_t ch = xs->dim[xs->rank - 1], rows = ch ? ir_shape_numel(xs) / ch : 0;
    double per_row = rows ? 1.0 / (double)rows : 0.0;
    switch (c->n->op) {
    case OP_CHANNEL_MEAN:
        CUDA_CHECK(c->b, cuda_k_channel_sum(0, inf(c, 0), NULL, outf(c), rows, ch, per_row, c->s));
        break;
    case OP_CHANNEL_VAR:
        CUDA_CHECK(c->b, cuda_k_channel_sum(1, inf(c, 0), inf(c, 1), outf(c), rows, ch, per_row, c->s));
        break;
    case OP_CHANNEL_SUM_DOT:
        CUDA_CHECK(c->b, cuda_k_channel_sum_dot(inf(c, 0), inf(c, 1), inf(c, 2), outf(c), rows, ch, c->s));
        break;
    default:
        CUDA_CHECK(c->b,
                   cuda_k_scale_shift(inf(c, 0), inf(c, 1), inf(c, 2), inf(c, 3), outf(c), out_numel(c), ch, c->s));
        break;
    }
    return 0;
}

/* The kernel of each op; sources have none (cuda_supports reports the rest). */
static int (*const kernels[OP_COUNT])(const ctx *c) = {
    [OP_ADD] = op_binary, [OP_SUB] = op_binary, [OP_MUL] = op_binary, [OP_DIV] = op_binary,
    [OP_RELU_GRAD] = op_binary, [OP_SIGMOID_GRAD] = op_binary, [OP_TANH_GRAD] = op_binary,
    [OP_NEG] = op_unary, [OP_EXP] = op_unary, [OP_LOG] = op_unary, [OP_SQRT] = op_unary,
    [OP_RELU] = op_unary, [OP_SIGMOID] = op_unary, [OP_TANH] = op_unary,
    [OP_CAST] = op_cast,
    [OP_LESS] = op_binary, [OP_LESS_EQUAL] = op_binary, [OP_GREATER] = op_binary,
    [OP_GREATER_EQUAL] = op_binary, [OP_EQUAL] = op_binary, [OP_NOT_EQUAL] = op_binary,
    [OP_MATMUL] = op_matmul,
    [OP_CONV2D] = op_conv, [OP_CONV2D_GRAD_INPUT] = op_conv, [OP_CONV2D_GRAD_FILTER] = op_conv,
    [OP_CONV2D_TRANSPOSE] = op_conv,
    [OP_MAX_POOL2D] = op_pool, [OP_MAX_POOL2D_GRAD] = op_pool, [OP_AVG_POOL2D] = op_pool, [OP_AVG_POOL2D_GRAD] = op_pool,
    [OP_RESHAPE] = op_alias, [OP_VIEW] = op_alias, [OP_BROADCAST] = op_alias,
    [OP_REDUCE_SUM] = op_reduce, [OP_REDUCE_MEAN] = op_reduce,
    [OP_BROADCAST_TO] = op_broadcast_to,
    [OP_SOFTMAX] = op_softmax_axis, [OP_SOFTMAX_GRAD] = op_softmax_axis, [OP_SPARSE_XENT] = op_xent,
    [OP_SPARSE_XENT_GRAD] = op_xent, [OP_ARGMAX_MATCH] = op_xent,
    [OP_DROPOUT] = op_dropout, [OP_DROPOUT_GRAD] = op_dropout,
    [OP_SGD_UPDATE] = op_update, [OP_ADAM_UPDATE] = op_update, [OP_RMSPROP_UPDATE] = op_update,
    /* issue 12: optimizers and clipping */
    [OP_ADAGRAD_UPDATE] = op_update, [OP_NADAM_UPDATE] = op_update, [OP_LAMB_UPDATE] = op_update,
    [OP_SQ_NORM] = op_sq_norm,
    [OP_SHARD] = op_shard,
    [OP_ALL_REDUCE] = op_pack,
    [OP_CONST] = op_const,
    [OP_ASSIGN] = op_assign, [OP_IN_TRAINING] = op_in_training,
    /* issue 12 */
    [OP_CONCAT] = op_concat, [OP_SLICE] = op_slice, [OP_PAD] = op_pad, [OP_TRANSPOSE] = op_transpose,
    [OP_REDUCE_MAX] = op_reduce_extreme, [OP_REDUCE_MIN] = op_reduce_extreme, [OP_LOG_SOFTMAX] = op_softmax_axis,
    [OP_ABS] = op_activation, [OP_ERF] = op_activation, [OP_GELU] = op_activation, [OP_SOFTPLUS] = op_activation,
    [OP_SELU] = op_activation, [OP_ELU] = op_activation, [OP_LEAKY_RELU] = op_activation,
    [OP_ABS_GRAD] = op_activation, [OP_ERF_GRAD] = op_activation, [OP_GELU_GRAD] = op_activation,
    [OP_SELU_GRAD] = op_activation, [OP_ELU_GRAD] = op_activation, [OP_LEAKY_RELU_GRAD] = op_activation,
    [OP_MAXIMUM] = op_binary, [OP_MINIMUM] = op_binary, [OP_POW] = op_binary,
    [OP_IN_TOP_K] = op_in_top_k,
    /* issue 13 */
    [OP_GATHER] = op_gather, [OP_SCATTER_ADD] = op_scatter_add,
    /* issue 13: one_hot */
    [OP_ONE_HOT] = op_one_hot,
    [OP_ALL_GATHER] = op_all_gather, /* issue 13: sparse gradient exchange */
    [OP_FUSED] = op_fused, /* issue 14: elementwise fusion */
    /* issue 14: epilogues */
    [OP_CONV2D_EPILOGUE] = op_epilogue, [OP_MATMUL_EPILOGUE] = op_epilogue,
    [OP_CONV2D_BN_EPILOGUE] = op_bn_epilogue, /* issue 14: batch norm's scale/shift */
    [OP_MAX_POOL2D_RELU_GRAD] = op_max_pool_relu_grad,
    [OP_CONV2D_GRAD_FILTER_POOL2] = op_grad_filter_pool2, /* issue 14: seed CNN speed */
    [OP_CONV2D_RELU_POOL2] = op_relu_pool2, /* issue 14: seed CNN speed */
    [OP_CONV2D_RELU_POOL2_GRAD_FILTER] = op_relu_pool2_grad_filter,
    /* issue 14: char_gpt speed */
    [OP_CAUSAL_SOFTMAX] = op_causal_softmax, [OP_CAUSAL_SOFTMAX_GRAD] = op_causal_softmax,
    [OP_CAUSAL_SOFTMAX_DROPOUT_GRAD] = op_causal_softmax_dropout_grad, /* issue 14: with dropout's mask */
    [OP_CAUSAL_MATMUL] = op_causal_matmul, /* issue 14: attention's causal GEMMs */
    [OP_CAUSAL_MATMUL_SOFTMAX] = op_causal_matmul_softmax, /* issue 14: the scores and their softmax */
    [OP_CAUSAL_MATMUL_SOFTMAX_GRAD] = op_causal_matmul_softmax,
    [OP_NORMALIZE] = op_normalize, [OP_NORMALIZE_GRAD] = op_normalize,
    /* issue 14: batch norm in training */
    [OP_CHANNEL_MEAN] = op_batch_norm, [OP_CHANNEL_VAR] = op_batch_norm,
    [OP_SCALE_SHIFT] = op_batch_norm,
    [OP_CHANNEL_SUM_DOT] = op_batch_norm, /* issue 14: batch norm's backward reads dy once */
};

bool cuda_supports(const ir_node *n, char *why, size_t cap) {
    if (!kernels[n->op]) return snprintf(why, cap, "no CUDA kernel"), false;
    return true;
}

/* Issue 15: --check-numerics after each kernel, as the CPU backend does (its
 * f32 outputs; all_gather fills only its own block): a scan on the same stream
 * records the first non-finite element, which sync reports naming the op. */
static int check_numerics(const ctx *c) {
    if (!c->k->check_numerics || !*c->k->check_numerics || c->n->dtype != IR_F32 || c->n->op == OP_ALL_GATHER)
        return 0;
    cuda_st(c->b)->m = c->k->m; /* to name the node at sync */
    const int64_t *step;
    TRY(cuda_step_word(c->b, c->device, c->stream, c->k, &step));
    CUDA_CHECK(c->b, cuda_k_check_finite(outf(c), out_numel(c), c->dev->nonfinite, (int32_t)(c->n - c->k->m->g.nodes),
                                         c->k->replica, step, c->s));
    return 0;
}

int cuda_launch(rt_backend *b, int device, int stream, const rt_kernel_args *k) {
    cuda_device *dev = &cuda_st(b)->dev[device];
    ctx c = {b, dev, device, stream, dev->stream[stream], k, k->node};
    cuda_state *st = cuda_st(b); /* issue 15: what a replayed graph reads (cuda_graph.c) */
    if (k->step) st->step_ptr = k->step;
    if (k->training) st->training_ptr = k->training;
    if (k->check_numerics) st->numerics_ptr = k->check_numerics;
    TRY(cuda_use(b, device));
    if (!kernels[c.n->op]) return bad(&c, "no CUDA kernel");
    TRY(kernels[c.n->op](&c));
    return check_numerics(&c);
}
