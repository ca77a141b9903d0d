/* shapes_kernels.c - the shape rules of the ops that issue 14's passes and
 * specialized kernels add: fused elementwise programs, conv/matmul epilogues,
 * causal attention, normalization, batch norm's channel statistics and the
 * seed CNN's conv + pool ops (ir/ops.def names each op's rule; the table is
 * in ir/shapes.c). */
#include "shapes_impl.h"

/* ---- issue 14: elementwise fusion ---- */

/* fused: registers are the f32 inputs, then each instruction's result of the
 * broadcast of its operands' shapes; the node gets the last register's, into
 * which every register must broadcast, leading 1s aside (the kernels compute
 * each at every output element). Every instruction is checked (op, operand registers), so
 * a program read from a file is as safe as one the fuse pass built. */
bool rule_fused(rule *r) {
    const ir_fused *f = r->n->fused;
    char b[96];
    if (!f) return fail(r, "'fused' has no program (only the fuse pass makes fused nodes)");
    if (f->n < 1 || f->n > IR_FUSED_MAX_INSTRS)
        return fail(r, "'fused' program has %d instructions (1..%d)", f->n, IR_FUSED_MAX_INSTRS);
    int n_in = r->n->n_in;
    if (n_in > IR_FUSED_MAX_INPUTS) return fail(r, "'fused' has %d inputs (at most %d)", n_in, IR_FUSED_MAX_INPUTS);
    ir_shape reg[IR_FUSED_MAX_INPUTS + IR_FUSED_MAX_INSTRS];
    for (int k = 0; k < n_in; k++) {
        const ir_node *x = &r->m->g.nodes[r->n->in[k]];
        if (x->dtype != IR_F32) return fail(r, "input %d of 'fused' must be f32, got %s", k, tstr(x, b));
        reg[k] = x->shape;
    }
    for (int j = 0; j < f->n; j++) {
        const ir_finstr *in = &f->ins[j];
        int arity, top = n_in + j;
        if (!ir_fused_op_ok(in->op, &arity))
            return fail(r, "'fused' instruction %d: op %d cannot be fused", j, (int)in->op);
        if (in->a < 0 || in->a >= top || (arity == 2 ? in->b < 0 || in->b >= top : in->b != -1))
            return fail(r, "'fused' instruction %d (%s): operands %d, %d are not earlier registers", j,
                        ir_ops[in->op].name, in->a, in->b);
        if (arity == 1) reg[top] = reg[in->a];
        else if (!broadcast_shapes(&reg[in->a], &reg[in->b], &reg[top]))
            return fail(r, "'fused' instruction %d (%s): operand shapes do not broadcast", j, ir_ops[in->op].name);
    }
    const ir_shape *out = &reg[n_in + f->n - 1];
    for (int k = 0; k < n_in + f->n; k++) {
        ir_shape s;
        if (!broadcast_shapes(&reg[k], out, &s) || ir_shape_numel(&s) != ir_shape_numel(out)) { /* leading 1s aside */
            char b2[96];
            return fail(r, "'fused' register %d (%s) does not broadcast to the output %s", k,
                        ir_type_str(IR_F32, &reg[k], b, sizeof b), ir_type_str(IR_F32, out, b2, sizeof b2));
        }
    }
    r->n->dtype = IR_F32, r->n->shape = *out;
    return true;
}

/* ---- issue 14: epilogues ---- */

const char *const ir_epilogue_act_names[EPI_COUNT] = {"none", "relu", "tanh", "sigmoid"};

/* the epilogue's inputs 2 (bias [channels]) and 3 (residual, the output's shape), act in range */
static bool epilogue_tail(rule *r, int64_t act) {
    char b1[96], b2[96];
    const ir_node *n = r->n, *bias = &r->m->g.nodes[n->in[2]];
    int64_t c = n->shape.dim[n->shape.rank - 1];
    if (n->n_in != 3 && n->n_in != 4) return fail(r, "'%s' takes 3 or 4 inputs, got %d", op_name(r), n->n_in);
    if (act < 0 || act >= EPI_COUNT) return fail(r, "'%s' has no activation %lld", op_name(r), (long long)act);
    if (bias->dtype != n->dtype || bias->shape.rank != 1 || bias->shape.dim[0] != c)
        return fail(r, "bias %s of '%s' must be %s[%lld]", tstr(bias, b1), op_name(r), ir_dtype_name(n->dtype),
                    (long long)c);
    if (n->n_in == 4) {
        const ir_node *res = &r->m->g.nodes[n->in[3]];
        if (res->dtype != n->dtype || !ir_shape_eq(&res->shape, &n->shape))
            return fail(r, "residual %s of '%s' must have the output's type %s", tstr(res, b1), op_name(r),
                        tstr(n, b2));
    }
    return true;
}

/* conv2d_epilogue: (x, w, bias[, residual]) -> conv2d(x, w)'s shape */
bool rule_conv2d_epilogue(rule *r) {
    if (r->n->n_in < 3) return fail(r, "'%s' takes 3 or 4 inputs, got %d", op_name(r), r->n->n_in);
    return rule_conv2d(r) && epilogue_tail(r, r->n->iattr[9]);
}

/* matmul_epilogue: (a, b, bias[, residual]) -> matmul(a, b)'s shape */
bool rule_matmul_epilogue(rule *r) {
    if (r->n->n_in < 3) return fail(r, "'%s' takes 3 or 4 inputs, got %d", op_name(r), r->n->n_in);
    return rule_matmul(r) && epilogue_tail(r, r->n->iattr[2]);
}

/* ---- issue 14: conv2d_bn_epilogue ---- */

/* (x, w, c, mean, scale, beta[, residual]) -> conv2d(x, w)'s shape; c and the
 * residual of that type, mean, scale and beta f32[channels] */
bool rule_conv2d_bn_epilogue(rule *r) {
    char b1[96], b2[96];
    const ir_node *n = r->n;
    if (n->n_in != 6 && n->n_in != 7) return fail(r, "'%s' takes 6 or 7 inputs, got %d", op_name(r), n->n_in);
    if (!rule_conv2d(r)) return false;
    int64_t act = n->iattr[9], c = n->shape.dim[3];
    if (act < 0 || act >= EPI_COUNT) return fail(r, "'%s' has no activation %lld", op_name(r), (long long)act);
    static const char *const what[7] = {"", "", "conv output", "mean", "scale", "beta", "residual"};
    for (int k = 2; k < n->n_in; k++) {
        const ir_node *v = &r->m->g.nodes[n->in[k]];
        bool vec = k >= 3 && k <= 5;
        if (v->dtype != n->dtype || (vec ? v->shape.rank != 1 || v->shape.dim[0] != c : !ir_shape_eq(&v->shape, &n->shape))) {
            if (vec)
                return fail(r, "%s %s of '%s' must be %s[%lld]", what[k], tstr(v, b1), op_name(r),
                            ir_dtype_name(n->dtype), (long long)c);
            return fail(r, "%s %s of '%s' must have the output's type %s", what[k], tstr(v, b1), op_name(r), tstr(n, b2));
        }
    }
    return true;
}

/* ---- issue 14 (char_gpt speed): causal_softmax, causal_softmax_grad ---- */

/* causal_softmax: float x of rank >= 2 -> x (rows of the last axis, masked
 * by the row index along the one before) */
bool rule_causal_softmax(rule *r) {
    char b[96];
    if (!want_float(r, r->x, "the input") || r->x->shape.rank < 2)
        return fail(r, "'%s' needs a float tensor of rank >= 2 (rows and columns), got %s", op_name(r), tstr(r->x, b));
    return same_as(r, r->x);
}

/* causal_softmax_grad: (y, dy) of one type -> y */
bool rule_causal_softmax_grad(rule *r) { return rule_grad_pair(r) && rule_causal_softmax(r); }

/* ---- issue 14 (char_gpt speed): causal_softmax_dropout_grad ---- */

/* causal_softmax_dropout_grad: causal_softmax_grad's rule, rate in [0, 1) */
bool rule_causal_softmax_dropout_grad(rule *r) {
    if (!(r->n->fattr[1] >= 0 && r->n->fattr[1] < 1))
        return fail(r, "'%s' needs a dropout rate in [0, 1), got %g", op_name(r), r->n->fattr[1]);
    return rule_causal_softmax_grad(r);
}

/* ---- issue 14 (char_gpt speed): causal_matmul ---- */

/* causal_matmul: matmul's rule, tri in {0 output, 1 a, 2 b}, upper in {0, 1},
 * and the triangular matrix (after its op) square */
bool rule_causal_matmul(rule *r) {
    const int64_t *at = r->n->iattr;
    if (at[2] < 0 || at[2] > 2 || (at[3] != 0 && at[3] != 1))
        return fail(r, "'causal_matmul' needs tri 0 (the output), 1 (a) or 2 (b) and upper 0 or 1, got tri %lld, upper %lld",
                    (long long)at[2], (long long)at[3]);
    if (!rule_matmul(r)) return false;
    const ir_shape *o = &r->n->shape;
    int64_t m = o->dim[o->rank - 2], n = o->dim[o->rank - 1], k = r->x->shape.dim[r->x->shape.rank - 1 - (at[0] != 0)];
    int64_t rows = at[2] == 2 ? k : m, cols = at[2] == 1 ? k : n;
    static const char *const what[] = {"the output", "op(a)", "op(b)"};
    if (rows != cols)
        return fail(r, "'causal_matmul' masks a square matrix, but %s is %lld x %lld", what[at[2]], (long long)rows,
                    (long long)cols);
    return true;
}

/* ---- issue 14 (char_gpt speed): causal_matmul_softmax and its gradient ---- */

/* causal_matmul_softmax: matmul's rule, a square output (the scores) */
bool rule_causal_matmul_softmax(rule *r) {
    char b1[96], b2[96];
    if (!rule_matmul(r)) return false;
    const ir_shape *o = &r->n->shape;
    if (o->dim[o->rank - 2] != o->dim[o->rank - 1])
        return fail(r, "'%s' makes square scores, but %s x %s gives %lld x %lld", op_name(r), tstr(r->x, b1),
                    tstr(r->y, b2), (long long)o->dim[o->rank - 2], (long long)o->dim[o->rank - 1]);
    return true;
}

/* causal_matmul_softmax_grad: (a, b, y), y of the scores' type and shape, rate in [0, 1) */
bool rule_causal_matmul_softmax_grad(rule *r) {
    char b1[96], b2[96];
    if (!(r->n->fattr[1] >= 0 && r->n->fattr[1] < 1))
        return fail(r, "'%s' needs a dropout rate in [0, 1), got %g", op_name(r), r->n->fattr[1]);
    if (!rule_causal_matmul_softmax(r)) return false;
    const ir_node *y = &r->m->g.nodes[r->n->in[2]];
    if (y->dtype != r->n->dtype || !ir_shape_eq(&y->shape, &r->n->shape))
        return fail(r, "the weights %s of '%s' must have the scores' type %s", tstr(y, b1), op_name(r), tstr(r->n, b2));
    return true;
}

/* normalize: float x of rank >= 1, epsilon >= 0 -> x (rows of the last axis) */
bool rule_normalize(rule *r) {
    char b[96];
    if (!want_float(r, r->x, "the input") || r->x->shape.rank < 1)
        return fail(r, "'%s' needs a float tensor of rank >= 1, got %s", op_name(r), tstr(r->x, b));
    if (!(r->n->fattr[0] >= 0)) return fail(r, "'%s' needs epsilon >= 0, got %g", op_name(r), r->n->fattr[0]);
    return same_as(r, r->x);
}

/* normalize_grad: (x, dy) of one type -> x */
bool rule_normalize_grad(rule *r) { return rule_grad_pair(r) && rule_normalize(r); }

/* ---- issue 14: batch norm in training (per-channel statistics over every
 * axis but the last, the normalization with given statistics) ---- */

/* the operands of a channel op: x f32 of rank >= 1, each of the vectors
 * in[first..end) (mean, scale, shift) f32[c] with c = x's last dimension */
static bool channel_operands(rule *r, int first, int end) {
    char b1[96], b2[96];
    if (r->x->dtype != IR_F32 || r->x->shape.rank < 1)
        return fail(r, "'%s' needs an f32 tensor of rank >= 1, got %s", op_name(r), tstr(r->x, b1));
    static const char *const names[] = {"x", "mean", "scale", "shift"};
    int64_t c = r->x->shape.dim[r->x->shape.rank - 1];
    for (int k = first; k < end; k++) {
        const ir_node *v = &r->m->g.nodes[r->n->in[k]];
        if (v->dtype != IR_F32 || v->shape.rank != 1 || v->shape.dim[0] != c)
            return fail(r, "%s %s of '%s' must be f32[%lld] (the channels of %s)", names[k], tstr(v, b2), op_name(r),
                        (long long)c, tstr(r->x, b1));
    }
    return true;
}

static bool channel_vector_out(rule *r) {
    r->n->dtype = IR_F32, r->n->shape = ir_shape_make(1, (int64_t[]){r->x->shape.dim[r->x->shape.rank - 1]});
    return true;
}

/* channel_mean: x[..., c] -> f32[c] */
bool rule_channel_mean(rule *r) { return channel_operands(r, 1, 1) && channel_vector_out(r); }

/* channel_var: (x[..., c], m[c]) -> f32[c] */
bool rule_channel_var(rule *r) { return channel_operands(r, 1, 2) && channel_vector_out(r); }

/* channel_sum_dot: (x[..., c], m[c], dy of x's type) -> f32[2, c]: row 0
 * sum(dy), row 1 sum(dy (x - m)) */
bool rule_channel_sum_dot(rule *r) {
    char b1[96], b2[96];
    const ir_node *dy = &r->m->g.nodes[r->n->in[2]];
    if (!ir_shape_eq(&dy->shape, &r->x->shape) || dy->dtype != r->x->dtype)
        return fail(r, "'%s' needs dy of the type of x, got %s and %s", op_name(r), tstr(r->x, b1), tstr(dy, b2));
    if (!channel_operands(r, 1, 2)) return false;
    r->n->dtype = IR_F32, r->n->shape = ir_shape_make(2, (int64_t[]){2, r->x->shape.dim[r->x->shape.rank - 1]});
    return true;
}

/* scale_shift: (x[..., c], m[c], s[c], b[c]) -> x */
bool rule_scale_shift(rule *r) {
    return channel_operands(r, 1, 4) && same_as(r, r->x);
}

/* ---- issue 14 (seed CNN speed): conv2d_grad_filter_pool2 ---- */

/* (x, y, dy) -> dw given: conv2d_grad_filter(x, y)'s rule with y as the
 * convolution's output, and dy y's 2x2 max-pool (stride 2) that tiles it */
bool rule_conv2d_grad_filter_pool2(rule *r) {
    char b1[96], b2[96];
    if (!rule_conv2d_grad_filter(r)) return false;
    const ir_node *y = r->y, *dy = &r->m->g.nodes[r->n->in[2]];
    const ir_shape *s = &y->shape;
    ir_shape half = ir_shape_make(4, (int64_t[4]){s->dim[0], s->dim[1] / 2, s->dim[2] / 2, s->dim[3]});
    if (s->dim[1] % 2 || s->dim[2] % 2 || dy->dtype != y->dtype || !ir_shape_eq(&dy->shape, &half))
        return fail(r, "'%s' pools 2x2 windows of stride 2 that tile y: y %s needs an even height and width and dy %s "
                    "half of each", op_name(r), tstr(y, b1), tstr(dy, b2));
    return true;
}

/* ---- issue 14 (seed CNN speed): conv2d_relu_pool2 and its filter gradient ---- */

/* y = conv2d(x, w) f32 with an even height and width (the 2x2 stride-2
 * max-pool tiles it): the pooled shape [N, OH/2, OW/2, C] into *p */
static bool relu_pool2_conv(rule *r, ir_shape *p) {
    char b1[96];
    if (!rule_conv2d(r)) return false;
    const ir_shape *y = &r->n->shape;
    if (r->n->dtype != IR_F32 || y->dim[1] % 2 || y->dim[2] % 2)
        return fail(r, "'%s' pools 2x2 windows of stride 2 that tile relu(conv2d(x, w) + bias): needs f32 and an "
                    "even height and width of the convolution's output %s", op_name(r),
                    tstr(&(ir_node){.dtype = r->n->dtype, .shape = *y}, b1));
    *p = ir_shape_make(4, (int64_t[4]){y->dim[0], y->dim[1] / 2, y->dim[2] / 2, y->dim[3]});
    return true;
}

/* input k of the node (what) must be f32 of shape s (why) */
static bool f32_of(rule *r, int k, const char *what, const ir_shape *s, const char *why) {
    char b1[96], b2[96];
    const ir_node *x = &r->m->g.nodes[r->n->in[k]];
    if (x->dtype == IR_F32 && ir_shape_eq(&x->shape, s)) return true;
    return fail(r, "%s %s of '%s' must be %s, %s", what, tstr(x, b1), op_name(r),
                tstr(&(ir_node){.dtype = IR_F32, .shape = *s}, b2), why);
}

/* conv2d_relu_pool2: (x, w, bias [C]) -> [2, N, OH/2, OW/2, C], the pooled maxima and the windows' pixels */
bool rule_conv2d_relu_pool2(rule *r) {
    ir_shape p, bias;
    if (!relu_pool2_conv(r, &p)) return false;
    bias = ir_shape_make(1, (int64_t[1]){p.dim[3]});
    if (!f32_of(r, 2, "bias", &bias, "one value a channel")) return false;
    r->n->shape = ir_shape_make(5, (int64_t[5]){2, p.dim[0], p.dim[1], p.dim[2], p.dim[3]});
    return true;
}

/* conv2d_relu_pool2_grad_filter: (x, w, f (conv2d_relu_pool2's output), dy of the pooled type) -> w's
 * type; with bias=1 (iattr 9) f32[C + numel(w)]: the bias gradient, then w's (rule 6b, docs/epilogue.md) */
bool rule_conv2d_relu_pool2_grad_filter(rule *r) {
    ir_shape p, f;
    if (!relu_pool2_conv(r, &p)) return false;
    f = ir_shape_make(5, (int64_t[5]){2, p.dim[0], p.dim[1], p.dim[2], p.dim[3]});
    if (!f32_of(r, 2, "f", &f, "conv2d_relu_pool2's output (the pooled maxima, then each window's pixel)") ||
        !f32_of(r, 3, "dy", &p, "the pooled output's type"))
        return false;
    r->n->dtype = IR_F32, r->n->shape = r->y->shape;
    if (r->n->iattr[9] == 1) r->n->shape = ir_shape_make(1, (int64_t[1]){p.dim[3] + ir_shape_numel(&r->y->shape)});
    else if (r->n->iattr[9]) return fail(r, "bias must be 0 or 1, not %lld", (long long)r->n->iattr[9]);
    return true;
}
