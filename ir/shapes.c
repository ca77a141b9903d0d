/* shapes.c - the shape rule of every op: a node's dtype and shape from its
 * inputs and attributes. One small function per op family, each opening with
 * its formula; ir/ops.def names each op's rule in its row, so an op without a
 * rule does not compile. Messages name the op and the types involved; the
 * caller adds the source position. The rules of the ops issue 14's passes
 * and specialized kernels add are in shapes_kernels.c; what both files share
 * is in shapes_impl.h. */
#include "ir.h"
#include "order.h"
#include "shapes_impl.h"

/* ---- the rules, in ops.def order ---- */

/* input, param, var, const: as declared */
static bool rule_declared(rule *r) { return (void)r, true; }

/* add, sub, mul, div: x, y of one dtype -> broadcast(x, y) */
static bool rule_binary(rule *r) {
    char b1[96], b2[96];
    ir_shape s;
    if (r->x->dtype != r->y->dtype)
        return fail(r, "operands of '%s' differ in dtype: %s and %s", op_name(r), tstr(r->x, b1), tstr(r->y, b2));
    if (!broadcast_shapes(&r->x->shape, &r->y->shape, &s))
        return fail(r, "shapes %s and %s of '%s' do not broadcast", tstr(r->x, b1), tstr(r->y, b2), op_name(r));
    r->n->dtype = r->x->dtype, r->n->shape = s;
    return true;
}

/* neg, exp, log, sqrt, relu, sigmoid, tanh: float x -> x */
static bool rule_unary(rule *r) { return want_float(r, r->x, "the input") && same_as(r, r->x); }

/* relu_grad, sigmoid_grad, tanh_grad, softmax_grad: (x, dy) of one type -> x */
bool rule_grad_pair(rule *r) {
    char b1[96], b2[96];
    if (!ir_shape_eq(&r->x->shape, &r->y->shape) || r->x->dtype != r->y->dtype)
        return fail(r, "'%s' needs equal types, got %s and %s", op_name(r), tstr(r->x, b1), tstr(r->y, b2));
    return same_as(r, r->x);
}

/* assign: (state, value of its type) -> the state */
static bool rule_assign(rule *r) {
    if (r->x->op != OP_STATE) return fail(r, "'assign' writes a state variable, got a '%s' node", ir_ops[r->x->op].name);
    return rule_grad_pair(r);
}

/* cast: x -> x's shape in the node's dtype */
static bool rule_cast(rule *r) {
    r->n->shape = r->x->shape;
    return true;
}

/* matmul: op(a)[..., m, k] x op(b)[..., k, n] -> [broadcast(a..., b...), m, n] (issue 13: any rank >= 2) */
bool rule_matmul(rule *r) {
    char b1[96], b2[96];
    const ir_node *x = r->x, *y = r->y;
    if (!want_float(r, x, "the left operand")) return false;
    if (x->shape.rank < 2 || y->shape.rank < 2)
        return fail(r, "operands of 'matmul' must have rank 2 or more, got %s x %s", tstr(x, b1), tstr(y, b2));
    int ta = r->n->iattr[0] != 0, tb = r->n->iattr[1] != 0, ra = x->shape.rank, rb = y->shape.rank;
    int64_t rows = x->shape.dim[ra - 2 + ta], k1 = x->shape.dim[ra - 1 - ta];
    int64_t k2 = y->shape.dim[rb - 2 + tb], cols = y->shape.dim[rb - 1 - tb];
    if (k1 != k2) return fail(r, "inner dimensions of 'matmul' differ: %s x %s", tstr(x, b1), tstr(y, b2));
    ir_shape ba = x->shape, bb = y->shape, out;
    ba.rank -= 2, bb.rank -= 2;
    if (!broadcast_shapes(&ba, &bb, &out))
        return fail(r, "batch axes of 'matmul' do not broadcast: %s x %s", tstr(x, b1), tstr(y, b2));
    out.dim[out.rank] = rows, out.dim[out.rank + 1] = cols, out.rank += 2;
    r->n->dtype = x->dtype, r->n->shape = out;
    return true;
}

/* batch axes of s (its rank minus 2) right-aligned to rank, padded with 1s */
static ir_shape batch_axes(const ir_shape *s, int rank) {
    ir_shape b = {.rank = rank};
    for (int i = 0; i < rank; i++) {
        int j = s->rank - 2 - rank + i;
        b.dim[i] = j >= 0 ? s->dim[j] : 1;
    }
    return b;
}

static int64_t batch_stride(const ir_shape *batch, const ir_shape *out, int64_t matrix) {
    if (ir_shape_numel(batch) == 1) return 0;
    return ir_shape_eq(batch, out) ? matrix : -1;
}

ir_matmul ir_matmul_of(const ir_node *n, const ir_shape *a, const ir_shape *b) {
    ir_matmul g;
    int ta = n->iattr[0] != 0, r = n->shape.rank;
    g.m = n->shape.dim[r - 2], g.n = n->shape.dim[r - 1], g.k = a->dim[a->rank - 1 - ta];
    g.out_batch = batch_axes(&n->shape, r - 2);
    g.a_batch = batch_axes(a, r - 2), g.b_batch = batch_axes(b, r - 2);
    g.batch = ir_shape_numel(&g.out_batch);
    g.a_stride = batch_stride(&g.a_batch, &g.out_batch, g.m * g.k);
    g.b_stride = batch_stride(&g.b_batch, &g.out_batch, g.k * g.n);
    return g;
}

int64_t ir_matmul_offset(const ir_matmul *g, int which, int64_t i) {
    const ir_shape *s = which ? &g->b_batch : &g->a_batch;
    int64_t off = 0, mult = 1;
    for (int d = g->out_batch.rank - 1; d >= 0; d--) {
        int64_t idx = i % g->out_batch.dim[d];
        i /= g->out_batch.dim[d];
        if (s->dim[d] != 1) off += idx * mult;
        mult *= s->dim[d];
    }
    return off * (which ? g->k * g->n : g->m * g->k);
}

/* ---- convolutions ---- */

ir_conv ir_conv_of(const ir_node *n, const ir_shape *w) {
    const int64_t *a = n->iattr; /* stride_h, stride_w, pad t, l, b, r, dilation_h, dilation_w[, groups] */
    ir_conv g = {{a[0], a[1]}, {a[2], a[3], a[4], a[5]}, {a[6] ? a[6] : 1, a[7] ? a[7] : 1}, 1, {0, 0}};
    if (n->op != OP_CONV2D_TRANSPOSE && a[8]) g.groups = a[8];
    for (int i = 0; i < 2; i++) g.window[i] = w->rank == 4 ? (w->dim[i] - 1) * g.dilation[i] + 1 : 0;
    return g;
}

/* conv2d: x [N, H, W, C], w [kh, kw, C/groups, F] -> [N, oh, ow, F], window (k-1)*dilation+1 */
bool rule_conv2d(rule *r) {
    const ir_node *x = r->x, *w = r->y;
    if (!want_float(r, x, "the input") || !want_rank(r, x, 4, "the input") || !want_rank(r, w, 4, "the filter"))
        return false;
    ir_conv g = ir_conv_of(r->n, &w->shape);
    r->n->dtype = x->dtype;
    if (!conv_params(r, &g, &w->shape, &x->shape)) return false;
    return window_shape(r, &x->shape, g.window[0], g.window[1], r->n->iattr, w->shape.dim[3], &r->n->shape);
}

/* conv2d_grad_input: (dy, w) -> dx, its shape given; conv2d(dx, w) must have dy's shape */
static bool rule_conv2d_grad_input(rule *r) {
    ir_shape s;
    const ir_node *dy = r->x, *w = r->y;
    if (!want_rank(r, &(ir_node){.shape = r->n->shape}, 4, "the result") || !want_rank(r, w, 4, "the filter"))
        return false;
    ir_conv g = ir_conv_of(r->n, &w->shape);
    if (!conv_params(r, &g, &w->shape, &r->n->shape)) return false;
    if (!window_shape(r, &r->n->shape, g.window[0], g.window[1], r->n->iattr, w->shape.dim[3], &s)) return false;
    r->n->dtype = dy->dtype;
    return given_shape_matches(r, &dy->shape, &s);
}

/* conv2d_grad_filter: (x, dy) -> dw [kh, kw, C/groups, F] given; conv2d(x, dw) must have dy's shape */
bool rule_conv2d_grad_filter(rule *r) {
    char b1[96], b2[96];
    ir_shape s;
    const ir_node *x = r->x, *dy = r->y;
    ir_node *n = r->n;
    if (n->shape.rank != 4 || x->shape.rank != 4)
        return fail(r, "'conv2d_grad_filter' result %s does not fit input %s", tstr(n, b1), tstr(x, b2));
    ir_conv g = ir_conv_of(n, &n->shape);
    if (!conv_params(r, &g, &n->shape, &x->shape)) return false;
    if (!window_shape(r, &x->shape, g.window[0], g.window[1], n->iattr, n->shape.dim[3], &s)) return false;
    n->dtype = x->dtype;
    return given_shape_matches(r, &dy->shape, &s);
}

/* conv2d_transpose: x [N, H, W, C], w [kh, kw, F, C] -> [N, (H-1)*sh + window_h - pt - pb, .., F];
 * conv2d of that output with w (HWIO from F to C channels) has x's shape */
static bool rule_conv2d_transpose(rule *r) {
    char b1[96], b2[96];
    const ir_node *x = r->x, *w = r->y;
    if (!want_float(r, x, "the input") || !want_rank(r, x, 4, "the input") || !want_rank(r, w, 4, "the filter"))
        return false;
    ir_conv g = ir_conv_of(r->n, &w->shape);
    if (w->shape.dim[3] != x->shape.dim[3])
        return fail(r, "'conv2d_transpose' filter %s expects %lld input channels, the input %s has %lld", tstr(w, b1),
                    (long long)w->shape.dim[3], tstr(x, b2), (long long)x->shape.dim[3]);
    if (g.stride[0] < 1 || g.stride[1] < 1) return fail(r, "'%s' needs strides >= 1", op_name(r));
    if (g.dilation[0] < 1 || g.dilation[1] < 1) return fail(r, "'%s' needs dilation >= 1", op_name(r));
    int64_t dims[4] = {x->shape.dim[0], 0, 0, w->shape.dim[2]};
    for (int i = 0; i < 2; i++) {
        int64_t before = g.pad[i], after = g.pad[i + 2];
        if (before < 0 || after < 0) return fail(r, "'%s' needs padding >= 0", op_name(r));
        dims[1 + i] = (x->shape.dim[1 + i] - 1) * g.stride[i] + g.window[i] - before - after;
        if (dims[1 + i] < 1)
            return fail(r, "padding of '%s' leaves no output: %s, window %lldx%lld", op_name(r), tstr(x, b1),
                        (long long)g.window[0], (long long)g.window[1]);
    }
    r->n->dtype = x->dtype, r->n->shape = ir_shape_make(4, dims);
    return true;
}

/* max_pool2d, avg_pool2d: x [N, H, W, C], window (k_h, k_w) -> [N, oh, ow, C] */
static bool rule_pool(rule *r) {
    const ir_node *x = r->x;
    if (!want_float(r, x, "the input") || !want_rank(r, x, 4, "the input")) return false;
    r->n->dtype = x->dtype;
    return window_shape(r, &x->shape, r->n->iattr[0], r->n->iattr[1], r->n->iattr + 2, x->shape.dim[3], &r->n->shape);
}

/* max_pool2d_grad, avg_pool2d_grad: (x, dy), dy of pool(x)'s shape -> x */
static bool rule_pool_grad(rule *r) {
    char b1[96], b2[96];
    ir_shape s;
    const ir_node *x = r->x;
    if (!window_shape(r, &x->shape, r->n->iattr[0], r->n->iattr[1], r->n->iattr + 2, x->shape.dim[3], &s))
        return false;
    if (!ir_shape_eq(&s, &r->y->shape))
        return fail(r, "'%s' gradient %s does not match the pooled shape of %s", op_name(r), tstr(r->y, b1),
                    tstr(x, b2));
    return same_as(r, x);
}

/* reshape: x -> the given shape, same element count */
static bool rule_reshape(rule *r) {
    char b1[96], b2[96];
    if (ir_shape_numel(&r->n->shape) != ir_shape_numel(&r->x->shape))
        return fail(r, "cannot reshape %s to %s: element counts differ", tstr(r->x, b1),
                    ir_type_str(r->x->dtype, &r->n->shape, b2, 96));
    r->n->dtype = r->x->dtype;
    return true;
}

/* reduce_sum, reduce_mean: x -> x without the axes in the bitmask (kept as 1 with keepdims) */
static bool rule_reduce(rule *r) {
    char b[96];
    const ir_node *x = r->x;
    int64_t axes = r->n->iattr[0];
    ir_shape s = {0};
    if (axes < 0 || axes >> x->shape.rank) return fail(r, "'%s' axes exceed the rank of %s", op_name(r), tstr(x, b));
    for (int i = 0; i < x->shape.rank; i++) {
        if (!(axes >> i & 1)) s.dim[s.rank++] = x->shape.dim[i];
        else if (r->n->iattr[1]) s.dim[s.rank++] = 1;
    }
    r->n->dtype = x->dtype, r->n->shape = s;
    return true;
}

/* broadcast_to: x -> the given shape, which x broadcasts to */
static bool rule_broadcast_to(rule *r) {
    char b1[96], b2[96];
    ir_shape s;
    if (!broadcast_shapes(&r->x->shape, &r->n->shape, &s) || !ir_shape_eq(&s, &r->n->shape))
        return fail(r, "cannot broadcast %s to %s", tstr(r->x, b1), ir_type_str(r->x->dtype, &r->n->shape, b2, 96));
    r->n->dtype = r->x->dtype;
    return true;
}

/* softmax, log_softmax: float x of rank >= 1 -> x (over axis rank-1-from_end) */
static bool rule_softmax(rule *r) {
    char b[96];
    if (!want_float(r, r->x, "the input") || r->x->shape.rank < 1)
        return fail(r, "'%s' needs a float tensor of rank >= 1, got %s", op_name(r), tstr(r->x, b));
    if (r->n->iattr[0] < 0 || r->n->iattr[0] >= r->x->shape.rank)
        return fail(r, "'%s' has no axis %lld from the end in %s", op_name(r), (long long)r->n->iattr[0], tstr(r->x, b));
    return same_as(r, r->x);
}

/* softmax_grad: (y, dy) of one type -> y, along axis rank-1-from_end */
static bool rule_softmax_grad(rule *r) { return rule_grad_pair(r) && rule_softmax(r); }

/* sparse_xent, argmax_match: (logits [B, C], labels i32[B]) -> [B];
 * sparse_xent_grad: (logits, labels, dy [B]) -> [B, C] */
static bool rule_sparse_xent(rule *r) {
    char b1[96], b2[96];
    const ir_node *x = r->x, *y = r->y;
    ir_node *n = r->n;
    if (!want_float(r, x, "the logits") || !want_rank(r, x, 2, "the logits")) return false;
    if (y->dtype != IR_I32 || y->shape.rank != 1 || y->shape.dim[0] != x->shape.dim[0])
        return fail(r, "labels of '%s' must be i32[%lld] for logits %s, got %s", op_name(r), (long long)x->shape.dim[0],
                    tstr(x, b1), tstr(y, b2));
    n->dtype = x->dtype;
    n->shape = n->op == OP_SPARSE_XENT_GRAD ? x->shape : ir_shape_make(1, x->shape.dim);
    if (n->op == OP_SPARSE_XENT_GRAD && !ir_shape_eq(&r->m->g.nodes[n->in[2]].shape, &y->shape))
        return fail(r, "'sparse_xent_grad' needs a gradient of shape [%lld]", (long long)x->shape.dim[0]);
    return true;
}

/* dropout, dropout_grad: float x, rate in [0, 1) -> x */
static bool rule_dropout(rule *r) {
    if (!want_float(r, r->x, "the input")) return false;
    if (!(r->n->fattr[0] >= 0 && r->n->fattr[0] < 1)) return fail(r, "dropout rate must be in [0, 1)");
    return same_as(r, r->x);
}

/* sgd_update (p, g[, velocity]), adam/nadam/lamb_update (p, g, m, v), rmsprop_update (p, g, ms[, mom]),
 * adagrad_update (p, g, acc), each [, norm f32[]] when clipnorm > 0: every other input of p's type -> p */
static bool rule_update(rule *r) {
    char b1[96], b2[96];
    ir_node *n = r->n;
    int lo = n->op == OP_SGD_UPDATE ? 0 : n->op == OP_RMSPROP_UPDATE || n->op == OP_ADAGRAD_UPDATE ? 1 : 2;
    int hi = n->op == OP_SGD_UPDATE || n->op == OP_RMSPROP_UPDATE ? lo + 1 : lo;
    int norm = ir_update_norm_input(n), slots = n->n_in - 2 - (norm >= 0);
    if (slots < lo || slots > hi) return fail(r, "'%s' has %d inputs", op_name(r), n->n_in);
    for (int i = 1; i < n->n_in; i++) {
        const ir_node *t = &r->m->g.nodes[n->in[i]];
        if (i == norm) {
            if (t->dtype != IR_F32 || t->shape.rank != 0)
                return fail(r, "'%s' input %d (the squared gradient norm) is %s, not f32[]", op_name(r), i, tstr(t, b1));
        } else if (!ir_shape_eq(&t->shape, &r->x->shape) || t->dtype != r->x->dtype)
            return fail(r, "'%s' input %d is %s, the param is %s", op_name(r), i, tstr(t, b1), tstr(r->x, b2));
    }
    return same_as(r, r->x);
}

/* sq_norm: f32 xs... (one or more) -> f32[] */
static bool rule_sq_norm(rule *r) {
    char b[96];
    if (r->n->n_in < 1) return fail(r, "'sq_norm' needs an input");
    for (int i = 0; i < r->n->n_in; i++) {
        const ir_node *t = &r->m->g.nodes[r->n->in[i]];
        if (t->dtype != IR_F32) return fail(r, "'sq_norm' input %d is %s, not f32", i, tstr(t, b));
    }
    r->n->dtype = IR_F32, r->n->shape = (ir_shape){0};
    return true;
}

/* shard: x [B, ...] -> [B / count, ...], part index of count */
static bool rule_shard(rule *r) {
    char b[96];
    const ir_node *x = r->x;
    ir_node *n = r->n;
    if (x->shape.rank < 1 || n->iattr[1] < 1 || x->shape.dim[0] % n->iattr[1] || n->iattr[0] < 0 ||
        n->iattr[0] >= n->iattr[1])
        return fail(r, "cannot shard %s into %lld parts", tstr(x, b), (long long)n->iattr[1]);
    same_as(r, x);
    n->shape.dim[0] /= n->iattr[1];
    return true;
}

/* all_reduce: inputs of one dtype -> [sum of their element counts] */
static bool rule_all_reduce(rule *r) {
    int64_t total = 0;
    if (r->n->n_in < 1) return fail(r, "'all_reduce' needs at least one input");
    for (int i = 0; i < r->n->n_in; i++) {
        const ir_node *t = &r->m->g.nodes[r->n->in[i]];
        if (t->dtype != r->x->dtype) return fail(r, "'all_reduce' inputs differ in dtype");
        total += ir_shape_numel(&t->shape);
    }
    r->n->dtype = r->x->dtype, r->n->shape = ir_shape_make(1, &total);
    return true;
}

/* view: elements [offset, offset + numel(given shape)) of x */
static bool rule_view(rule *r) {
    char b[96];
    int64_t at = r->n->iattr[0], count = ir_shape_numel(&r->n->shape);
    if (at < 0 || at + count > ir_shape_numel(&r->x->shape))
        return fail(r, "view [%lld, +%lld) is outside %s", (long long)at, (long long)count, tstr(r->x, b));
    r->n->dtype = r->x->dtype;
    return true;
}

/* broadcast (the collective): x -> x */
static bool rule_same(rule *r) { return same_as(r, r->x); }

/* ---- shape ops (issue 12) ---- */

static const ir_node *input_at(const rule *r, int k) { return &r->m->g.nodes[r->n->in[k]]; }

/* concat: xs of one dtype and rank, dims equal but on axis -> dims of x0 with axis summed */
static bool rule_concat(rule *r) {
    char b1[96], b2[96];
    const ir_node *x = r->x;
    int64_t axis = r->n->iattr[0], total = 0;
    if (r->n->n_in < 1) return fail(r, "'concat' needs at least one input");
    if (axis < 0 || axis >= x->shape.rank)
        return fail(r, "axis %lld of 'concat' is out of range for %s", (long long)axis, tstr(x, b1));
    for (int k = 0; k < r->n->n_in; k++) {
        const ir_node *t = input_at(r, k);
        bool fits = t->dtype == x->dtype && t->shape.rank == x->shape.rank;
        for (int i = 0; fits && i < x->shape.rank; i++) fits = i == axis || t->shape.dim[i] == x->shape.dim[i];
        if (!fits)
            return fail(r, "inputs of 'concat' on axis %lld differ elsewhere: %s and %s", (long long)axis, tstr(x, b1),
                        tstr(t, b2));
        total += t->shape.dim[axis];
    }
    same_as(r, x);
    r->n->shape.dim[axis] = total;
    return true;
}

/* The box [off_i, off_i + small_i) must lie in big on every axis, offsets 0 beyond the rank. */
static bool box_inside(rule *r, const ir_shape *small, const ir_shape *big, const char *what) {
    char b1[96], b2[96];
    const int64_t *off = r->n->iattr;
    if (small->rank != big->rank)
        return fail(r, "'%s' keeps the rank: %s and %s", op_name(r), ir_type_str(r->x->dtype, r->n->op == OP_PAD ? big : small, b1, 96),
                    ir_type_str(r->x->dtype, r->n->op == OP_PAD ? small : big, b2, 96));
    for (int i = 0; i < IR_MAX_RANK; i++) {
        if (i >= big->rank ? off[i] != 0 : off[i] < 0 || off[i] + small->dim[i] > big->dim[i])
            return fail(r, "'%s' %s %lld on axis %d does not fit %s in %s", op_name(r), what, (long long)off[i], i,
                        ir_type_str(r->x->dtype, small, b1, 96), ir_type_str(r->x->dtype, big, b2, 96));
    }
    r->n->dtype = r->x->dtype;
    return true;
}

/* slice: x -> the given shape, out[i..] = x[i.. + begin] */
static bool rule_slice(rule *r) { return box_inside(r, &r->n->shape, &r->x->shape, "begin"); }

/* pad: x -> the given shape, zeros with x at [before, before + x) */
static bool rule_pad(rule *r) { return box_inside(r, &r->x->shape, &r->n->shape, "before"); }

/* transpose: x -> dims x[perm[i]]; perm[i] = (perm >> 4i) & 15 a permutation of 0..rank-1 */
static bool rule_transpose(rule *r) {
    char b[96];
    const ir_node *x = r->x;
    int64_t perm = r->n->iattr[0];
    unsigned seen = 0;
    ir_shape s = {.rank = x->shape.rank};
    for (int i = 0; i < x->shape.rank; i++) {
        int p = (int)(perm >> 4 * i & 15);
        if (p >= x->shape.rank || seen >> p & 1) break;
        seen |= 1u << p, s.dim[i] = x->shape.dim[p];
    }
    if (seen != (1u << x->shape.rank) - 1 || perm >> 4 * x->shape.rank)
        return fail(r, "'transpose' perm 0x%llx is not a permutation of the %d axes of %s", (long long)perm,
                    x->shape.rank, tstr(x, b));
    r->n->dtype = x->dtype, r->n->shape = s;
    return true;
}

/* ---- issue 12: activations, losses, metrics ---- */

/* in_top_k: (logits [B, C], labels i32[B]), k >= 1 -> [B] */
static bool rule_in_top_k(rule *r) {
    if (!rule_sparse_xent(r)) return false;
    if (r->n->iattr[0] < 1) return fail(r, "'in_top_k' needs k >= 1, got %lld", (long long)r->n->iattr[0]);
    return true;
}

/* ---- issue 13: sequence models ---- */

/* gather: (table float [V, D], ids i32[...]) -> [..., D] */
static bool rule_gather(rule *r) {
    char b[96];
    const ir_node *x = r->x, *y = r->y;
    if (!want_float(r, x, "the table") || !want_rank(r, x, 2, "the table")) return false;
    if (y->dtype != IR_I32) return fail(r, "ids of 'gather' must be i32, got %s", tstr(y, b));
    if (y->shape.rank >= IR_MAX_RANK) return fail(r, "ids of 'gather' must have rank below %d, got %s", IR_MAX_RANK, tstr(y, b));
    r->n->dtype = x->dtype, r->n->shape = y->shape;
    r->n->shape.dim[r->n->shape.rank++] = x->shape.dim[1];
    return true;
}

/* scatter_add: (ids i32[...], dy float [..., D]) -> [V, D] as given */
static bool rule_scatter_add(rule *r) {
    char b1[96], b2[96];
    const ir_node *ids = r->x, *dy = r->y;
    ir_shape want = ids->shape;
    if (ids->dtype != IR_I32 || !want_float(r, dy, "the gradient") || r->n->shape.rank != 2 || ids->shape.rank >= IR_MAX_RANK)
        return fail(r, "'scatter_add' needs (i32 ids, float dy) and a [V, D] result, got %s, %s", tstr(ids, b1), tstr(dy, b2));
    want.dim[want.rank++] = r->n->shape.dim[1];
    r->n->dtype = dy->dtype;
    return given_shape_matches(r, &dy->shape, &want);
}

/* ---- issue 13: one_hot ---- */

/* one_hot: (ids i32[...]), depth >= 1 -> f32[..., depth] */
static bool rule_one_hot(rule *r) {
    char b[96];
    const ir_node *ids = r->x;
    int64_t depth = r->n->iattr[0];
    if (ids->dtype != IR_I32) return fail(r, "ids of 'one_hot' must be i32, got %s", tstr(ids, b));
    if (ids->shape.rank >= IR_MAX_RANK)
        return fail(r, "ids of 'one_hot' must have rank below %d, got %s", IR_MAX_RANK, tstr(ids, b));
    if (depth < 1) return fail(r, "'one_hot' needs depth >= 1, got %lld", (long long)depth);
    r->n->dtype = IR_F32, r->n->shape = ids->shape;
    r->n->shape.dim[r->n->shape.rank++] = depth;
    return true;
}

/* ---- issue 13: sparse gradient exchange ---- */

/* all_gather: x [n, ...] f32 or i32 -> [replicas * n, ...] (replicas >= 1) */
static bool rule_all_gather(rule *r) {
    char b[96];
    const ir_node *x = r->x;
    int64_t replicas = r->n->iattr[1];
    if ((x->dtype != IR_F32 && x->dtype != IR_I32) || x->shape.rank < 1)
        return fail(r, "'all_gather' needs an f32 or i32 tensor of rank >= 1, got %s", tstr(x, b));
    if (replicas < 1 || replicas > (int64_t)1 << 20 || x->shape.dim[0] > ((int64_t)1 << 40) / replicas)
        return fail(r, "'all_gather' of %s over %lld replicas is out of range", tstr(x, b), (long long)replicas);
    same_as(r, x);
    r->n->shape.dim[0] *= replicas;
    return true;
}

typedef bool (*shape_rule)(rule *r);

static const shape_rule rules[OP_COUNT] = {
#define X(e, name, arity, iattrs, fattrs, flags, shape) [OP_##e] = rule_##shape,
#include "ops.def"
#undef X
};

bool ir_infer_node(ir_module *m, int i, char *err, size_t cap) {
    ir_node *n = &m->g.nodes[i];
    rule r = {m, n, NULL, NULL, err, cap};
    for (int k = 0; k < n->n_in; k++)
        if (n->in[k] < 0 || n->in[k] >= i) return fail(&r, "input %d of node %d is not an earlier node", k, i);
    if ((unsigned)n->op >= OP_COUNT) return fail(&r, "unknown op %d", (int)n->op);
    const ir_opinfo *info = &ir_ops[n->op];
    if (info->arity >= 0 && n->n_in != info->arity)
        return fail(&r, "'%s' takes %d inputs, got %d", info->name, info->arity, n->n_in);
    r.x = n->n_in > 0 ? &m->g.nodes[n->in[0]] : NULL;
    r.y = n->n_in > 1 ? &m->g.nodes[n->in[1]] : NULL;
    return rules[n->op](&r);
}
