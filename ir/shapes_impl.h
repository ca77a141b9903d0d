/* shapes_impl.h - what the shape rules' two files share (ir/shapes.c: the
 * ops users write and their gradients; ir/shapes_kernels.c: the ops issue
 * 14's passes and specialized kernels add). Private to ir/. */
#ifndef MGC_SHAPES_IMPL_H
#define MGC_SHAPES_IMPL_H

#include <stdarg.h>
#include <stdio.h>

#include "ir.h"

typedef struct {
    ir_module *m;
    ir_node *n;
    const ir_node *x, *y;  /* inputs 0 and 1, when the node has them */
    char *err;
    size_t cap;
} rule;

static inline bool fail(rule *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline bool fail(rule *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, r->cap, fmt, ap);
    va_end(ap);
    return false;
}

static const char *tstr(const ir_node *n, char *buf) { return ir_type_str(n->dtype, &n->shape, buf, 96); }
static const char *op_name(const rule *r) { return ir_ops[r->n->op].name; }

/* numpy broadcasting of a and b into out */
static inline bool broadcast_shapes(const ir_shape *a, const ir_shape *b, ir_shape *out) {
    int rank = a->rank > b->rank ? a->rank : b->rank;
    out->rank = rank;
    for (int i = 0; i < rank; i++) {
        int ia = a->rank - rank + i, ib = b->rank - rank + i;
        int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
        if (da != db && da != 1 && db != 1) return false;
        out->dim[i] = da == 1 ? db : da;
    }
    return true;
}

static inline bool want_float(rule *r, const ir_node *x, const char *what) {
    char b[96];
    if (x->dtype != IR_F32 && x->dtype != IR_F64)
        return fail(r, "%s of '%s' must be a float tensor, got %s", what, op_name(r), tstr(x, b));
    return true;
}

static inline bool want_rank(rule *r, const ir_node *x, int rank, const char *what) {
    char b[96];
    if (x->shape.rank != rank)
        return fail(r, "%s of '%s' must have rank %d, got %s", what, op_name(r), rank, tstr(x, b));
    return true;
}

static inline bool same_as(rule *r, const ir_node *x) {
    r->n->dtype = x->dtype, r->n->shape = x->shape;
    return true;
}

/* Output size of a window of k with stride s over d padded by p0+p1. */
static inline int64_t window_out(int64_t d, int64_t k, int64_t s, int64_t p0, int64_t p1) {
    return (d + p0 + p1 - k) / s + 1;
}

/* conv / pool: x NHWC, window kh x kw, iattr (stride_h, stride_w, pad t, l, b, r) -> [N, oh, ow, c] */
static inline bool window_shape(rule *r, const ir_shape *x, int64_t kh, int64_t kw, const int64_t *stride_pad, int64_t c,
                         ir_shape *out) {
    char b[96];
    const int64_t sh = stride_pad[0], sw = stride_pad[1], pt = stride_pad[2], pl = stride_pad[3],
                  pb = stride_pad[4], pr = stride_pad[5];
    if (sh < 1 || sw < 1) return fail(r, "'%s' needs strides >= 1", op_name(r));
    if (pt < 0 || pl < 0 || pb < 0 || pr < 0) return fail(r, "'%s' needs padding >= 0", op_name(r));
    if (x->dim[1] + pt + pb < kh || x->dim[2] + pl + pr < kw)
        return fail(r, "window %lldx%lld of '%s' is larger than its input %s", (long long)kh, (long long)kw,
                    op_name(r), ir_type_str(r->x->dtype, x, b, sizeof b));
    *out = ir_shape_make(4, (int64_t[]){x->dim[0], window_out(x->dim[1], kh, sh, pt, pb),
                                        window_out(x->dim[2], kw, sw, pl, pr), c});
    return true;
}

/* A node whose creator gave its shape: `got` (an input's shape) must equal `want`. */
static inline bool given_shape_matches(rule *r, const ir_shape *got, const ir_shape *want) {
    char b1[96], b2[96];
    if (!ir_shape_eq(got, want))
        return fail(r, "'%s' declares %s but its inputs give %s", op_name(r), ir_type_str(r->n->dtype, got, b1, 96),
                    ir_type_str(r->n->dtype, want, b2, 96));
    return true;
}

/* dilation and groups >= 1; groups divide cin (= w's cin/groups * groups) and cout */
static inline bool conv_params(rule *r, const ir_conv *g, const ir_shape *w, const ir_shape *x) {
    char b1[96], b2[96];
    int64_t cin = x->dim[3];
    if (g->dilation[0] < 1 || g->dilation[1] < 1) return fail(r, "'%s' needs dilation >= 1", op_name(r));
    if (g->groups < 1) return fail(r, "'%s' needs groups >= 1", op_name(r));
    if (cin % g->groups || w->dim[3] % g->groups)
        return fail(r, "groups %lld of '%s' must divide its %lld input channels and %lld filters", (long long)g->groups,
                    op_name(r), (long long)cin, (long long)w->dim[3]);
    if (w->dim[2] * g->groups != cin)
        return fail(r, "'%s' filter %s expects %lld input channels, the input %s has %lld", op_name(r),
                    ir_type_str(r->n->dtype, w, b1, 96), (long long)(w->dim[2] * g->groups),
                    ir_type_str(r->n->dtype, x, b2, 96), (long long)cin);
    return true;
}

/* rules of ir/shapes.c that ir/shapes_kernels.c builds on */
bool rule_conv2d(rule *r);
bool rule_conv2d_grad_filter(rule *r);
bool rule_grad_pair(rule *r);
bool rule_matmul(rule *r);

/* rules of ir/shapes_kernels.c */
bool rule_fused(rule *r);
bool rule_conv2d_epilogue(rule *r);
bool rule_matmul_epilogue(rule *r);
bool rule_conv2d_bn_epilogue(rule *r);
bool rule_causal_softmax(rule *r);
bool rule_causal_softmax_grad(rule *r);
bool rule_causal_softmax_dropout_grad(rule *r);
bool rule_causal_matmul(rule *r);
bool rule_causal_matmul_softmax(rule *r);
bool rule_causal_matmul_softmax_grad(rule *r);
bool rule_normalize(rule *r);
bool rule_normalize_grad(rule *r);
bool rule_channel_mean(rule *r);
bool rule_channel_var(rule *r);
bool rule_channel_sum_dot(rule *r);
bool rule_scale_shift(rule *r);
bool rule_conv2d_grad_filter_pool2(rule *r);
bool rule_conv2d_relu_pool2(rule *r);
bool rule_conv2d_relu_pool2_grad_filter(rule *r);

#endif
