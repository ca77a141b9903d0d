/* elab_prim.c - calls of primitives (prim.NAME: inputs, keyword attributes,
 * padding, given shapes) and of the builtins dim, rank, size, max, min. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elab.h"

const char *const elab_builtin_names[B_COUNT] = {"dim", "rank", "size", "max", "min", "len", "range", "typeof", "error", "pair"};

/* ---- builtins ---- */

static bool want(elab *c, call *k, int n, const char *name) {
    for (int i = 0; i < k->n; i++)
        if (k->a[i].name) return elab_err(c, k->a[i].loc, "'%s' takes no keyword arguments", name), false;
    if (k->n != n) return elab_err(c, k->loc, "'%s' takes %d argument%s, got %d", name, n, n == 1 ? "" : "s", k->n), false;
    return true;
}

static bool want_kind(elab *c, const arg *a, vkind kind, const char *name) {
    if (a->v.k == kind) return true;
    elab_err(c, a->loc, "argument of '%s' must be %s, got %s", name, kind == V_INT ? "an int" : "a tensor", elab_describe(c, a->v));
    return false;
}

/* range(stop), range(start, stop[, step]): a list of ints, as Python's */
static value call_range(elab *c, call *k) {
    for (int i = 0; i < k->n; i++) {
        if (k->a[i].name) return elab_err(c, k->a[i].loc, "'range' takes no keyword arguments"), ERR;
        if (!want_kind(c, &k->a[i], V_INT, "range")) return ERR;
    }
    if (k->n < 1 || k->n > 3) return elab_err(c, k->loc, "'range' takes 1 to 3 arguments, got %d", k->n), ERR;
    int64_t start = k->n > 1 ? k->a[0].v.i : 0, stop = k->a[k->n > 1].v.i, step = k->n > 2 ? k->a[2].v.i : 1;
    if (step == 0) return elab_err(c, k->a[2].loc, "the step of 'range' must not be zero"), ERR;
    double count = step > 0 ? ceil(((double)stop - (double)start) / (double)step) : ceil(((double)start - (double)stop) / -(double)step);
    if (count < 0) count = 0;
    if (count > MAX_LIST)
        return elab_err(c, k->loc, "range of %.0f elements; a loop runs at most %d times", count, MAX_LIST), ERR;
    value *v = elab_xrealloc(NULL, (size_t)count * sizeof *v + 1);
    for (int64_t i = 0; i < (int64_t)count; i++) v[i] = vint(start + i * step);
    value r = elab_list(c, v, (int)count);
    free(v);
    return r;
}

/* typeof(v): "int", "float", "str", "tensor", "list", "fn" or "initializer" */
static value call_typeof(elab *c, call *k) {
    static const char *const names[] = {[V_INT] = "int", [V_FLOAT] = "float", [V_STR] = "str", [V_TENSOR] = "tensor",
                                        [V_FN] = "fn", [V_PRIM] = "fn", [V_BUILTIN] = "fn", [V_INIT] = "initializer",
                                        [V_LIST] = "list"};
    if (!want(c, k, 1, "typeof")) return ERR;
    if (k->a[0].v.k == V_ERR) return ERR;
    return (value){.k = V_STR, .s = names[k->a[0].v.k]};
}

/* Appends the text of v to buf: a str as it is, numbers, a tensor's type, a list in brackets. */
static void append_value(elab *c, char *buf, size_t cap, value v) {
    size_t at = strlen(buf);
    char b[128];
    if (at + 1 >= cap) return;
    switch (v.k) {
    case V_STR: snprintf(buf + at, cap - at, "%s", v.s); break;
    case V_INT: snprintf(buf + at, cap - at, "%lld", (long long)v.i); break;
    case V_FLOAT: snprintf(buf + at, cap - at, "%g", v.f); break;
    case V_TENSOR: snprintf(buf + at, cap - at, "%s", ir_type_str(node(c, v.node)->dtype, &node(c, v.node)->shape, b, sizeof b)); break;
    case V_LIST:
        snprintf(buf + at, cap - at, "[");
        for (int i = 0; i < v.list->n; i++) {
            if (i) append_value(c, buf, cap, (value){.k = V_STR, .s = ", "});
            append_value(c, buf, cap, v.list->v[i]);
        }
        append_value(c, buf, cap, (value){.k = V_STR, .s = "]"});
        break;
    default: snprintf(buf + at, cap - at, "%s", elab_describe(c, v)); break;
    }
}

/* error(values...): an error at the call (in a stdlib function: the user's
 * call of it), its message the values joined by spaces; its value an error */
static value call_error(elab *c, call *k) {
    char msg[512] = "";
    for (int i = 0; i < k->n; i++) {
        if (k->a[i].v.k == V_ERR) return ERR;
        if (k->a[i].name) return elab_err(c, k->a[i].loc, "'error' takes no keyword arguments"), ERR;
        if (i) append_value(c, msg, sizeof msg, (value){.k = V_STR, .s = " "});
        append_value(c, msg, sizeof msg, k->a[i].v);
    }
    elab_err(c, k->loc, "%s", msg);
    return ERR;
}

/* pair(v, i): element i (0 or 1) of an (h, w) pair given as an int n (n, n)
 * or a list [h, w], as Keras' kernel_size, strides and dilation_rate */
static value call_pair(elab *c, call *k) {
    if (!want(c, k, 2, "pair") || !want_kind(c, &k->a[1], V_INT, "pair")) return ERR;
    value v = k->a[0].v;
    int64_t i = k->a[1].v.i;
    if (i != 0 && i != 1) return elab_err(c, k->a[1].loc, "index %lld of 'pair' must be 0 or 1", (long long)i), ERR;
    if (v.k == V_INT) return v;
    if (v.k == V_LIST && v.list->n == 2 && v.list->v[0].k == V_INT && v.list->v[1].k == V_INT) return v.list->v[i];
    return elab_err(c, k->a[0].loc, "argument of 'pair' must be an int or a list of two ints, got %s", elab_describe(c, v)), ERR;
}

value elab_call_builtin(elab *c, builtin_fn b, call *k) {
    const char *name = elab_builtin_names[b];
    if (b == B_RANGE) return call_range(c, k);
    if (b == B_TYPEOF) return call_typeof(c, k);
    if (b == B_ERROR) return call_error(c, k);
    if (b == B_PAIR) return call_pair(c, k);
    if (b == B_LEN) {
        if (!want(c, k, 1, name)) return ERR;
        if (k->a[0].v.k != V_LIST) return elab_err(c, k->a[0].loc, "argument of 'len' must be a list, got %s", elab_describe(c, k->a[0].v)), ERR;
        return vint(k->a[0].v.list->n);
    }
    if (!want(c, k, b == B_RANK || b == B_SIZE ? 1 : 2, name)) return ERR;
    if (b == B_MAX || b == B_MIN) {
        if (!want_kind(c, &k->a[0], V_INT, name) || !want_kind(c, &k->a[1], V_INT, name)) return ERR;
        return vint((k->a[0].v.i > k->a[1].v.i) == (b == B_MAX) ? k->a[0].v.i : k->a[1].v.i);
    }
    if (!want_kind(c, &k->a[0], V_TENSOR, name)) return ERR;
    const ir_node *n = node(c, k->a[0].v.node);
    if (b == B_RANK) return vint(n->shape.rank);
    if (b == B_SIZE) return vint(ir_shape_numel(&n->shape));
    if (!want_kind(c, &k->a[1], V_INT, name)) return ERR;
    int64_t i = k->a[1].v.i < 0 ? k->a[1].v.i + n->shape.rank : k->a[1].v.i;
    if (i < 0 || i >= n->shape.rank)
        return elab_err(c, k->a[1].loc, "axis %lld is out of range for rank %d", (long long)k->a[1].v.i, n->shape.rank), ERR;
    return vint(n->shape.dim[i]);
}

/* ---- primitives ---- */

/* Ops whose output shape is given by the caller (trailing int arguments). */
static bool shape_given(ir_op op) {
    return op == OP_RESHAPE || op == OP_BROADCAST_TO || op == OP_CONV2D_GRAD_INPUT || op == OP_CONV2D_GRAD_FILTER ||
           op == OP_VIEW || op == OP_SLICE || op == OP_PAD ||
           op == OP_CONV2D_GRAD_FILTER_POOL2; /* issue 14 */
}

static bool is_window(ir_op op) { return ir_op_iattr_index(op, "pad_t") >= 0; }

/* Keras "same" padding of one axis: output ceil(d / s). */
static void same_pad(int64_t d, int64_t k, int64_t s, int64_t *before, int64_t *after) {
    int64_t out = (d + s - 1) / s, total = (out - 1) * s + k - d;
    if (total < 0) total = 0;
    *before = total / 2, *after = total - total / 2;
}

/* conv2d_transpose "same" (Keras): output d * s, the pads of a "same" conv2d
 * from that output back to the input, which need a window >= the stride. */
static bool transpose_same_pad(elab *c, ir_node *n, const arg *a, const ir_node *x, int64_t k_h, int64_t k_w) {
    const int64_t k[2] = {k_h, k_w};
    for (int i = 0; i < 2; i++) {
        int64_t st = n->iattr[i];
        if (k[i] < st)
            return elab_err(c, a->loc, "padding \"same\" of 'prim.conv2d_transpose' needs a window of at least its "
                            "stride, got window %lld and stride %lld", (long long)k[i], (long long)st), false;
        same_pad(x->shape.dim[1 + i] * st, k[i], st, &n->iattr[2 + i], &n->iattr[4 + i]);
    }
    return true;
}

static bool apply_padding(elab *c, ir_node *n, const arg *a, const char *name) {
    if (a->v.k != V_STR || (strcmp(a->v.s, "same") && strcmp(a->v.s, "valid")))
        return elab_err(c, a->loc, "padding of '%s' must be \"valid\" or \"same\"", name), false;
    if (!strcmp(a->v.s, "valid")) return true;
    int s = ir_op_iattr_index(n->op, "stride_h"), p = ir_op_iattr_index(n->op, "pad_t");
    int kh = ir_op_iattr_index(n->op, "k_h");
    const ir_node *x = node(c, n->in[0]), *w = n->n_in > 1 ? node(c, n->in[1]) : NULL;
    if (x->shape.rank != 4 || (kh < 0 && (!w || w->shape.rank != 4)) || n->iattr[s] < 1 || n->iattr[s + 1] < 1)
        return true; /* the shape rule reports it */
    int64_t k_h = kh >= 0 ? n->iattr[kh] : w->shape.dim[0], k_w = kh >= 0 ? n->iattr[kh + 1] : w->shape.dim[1];
    if (kh < 0) { /* a convolution: its dilated window */
        ir_conv g = ir_conv_of(n, &w->shape);
        k_h = g.window[0], k_w = g.window[1];
    }
    if (n->op == OP_CONV2D_TRANSPOSE) return transpose_same_pad(c, n, a, x, k_h, k_w);
    same_pad(x->shape.dim[1], k_h, n->iattr[s], &n->iattr[p], &n->iattr[p + 2]);
    same_pad(x->shape.dim[2], k_w, n->iattr[s + 1], &n->iattr[p + 1], &n->iattr[p + 3]);
    return true;
}

static bool perm_attr(elab *c, ir_node *n, const arg *a, int i, const char *name);
static bool axis_list_attr(elab *c, ir_node *n, const arg *a, int i, const char *name);
static bool softmax_axis(elab *c, ir_node *n, const arg *a, const char *name);

/* A list for an int attribute: `strides: [h, w]` sets stride_h and stride_w,
 * `axes: [0, 2]` the bit mask of those axes (negative from the end). */
/* Keyword attributes that set an (h, w) pair: `strides:` sets stride_h and
 * stride_w, `dilation:` dilation_h and dilation_w, from an int or [h, w]. */
static bool pair_attr(const char *kw) { return !strcmp(kw, "strides") || !strcmp(kw, "dilation"); }
static int pair_index(ir_op op, const char *kw) {
    return ir_op_iattr_index(op, !strcmp(kw, "strides") ? "stride_h" : "dilation_h");
}

/* A list for an int attribute: `strides: [h, w]` sets stride_h and stride_w
 * (likewise `dilation:`), `axes: [0, 2]` the bit mask of those axes
 * (negative from the end). */
static bool list_attr(elab *c, ir_node *n, const arg *a, int i, const char *name) {
    const vlist *l = a->v.list;
    for (int k = 0; k < l->n; k++)
        if (l->v[k].k != V_INT)
            return elab_err(c, a->loc, "attribute '%s' of '%s' must be a list of ints", a->name, name), false;
    if (pair_attr(a->name) && l->n == 2) {
        for (int k = 0; k < 2; k++)
            if (l->v[k].i < 1 || l->v[k].i > MAX_DIM) return elab_err(c, a->loc, "%s of '%s' must be positive", a->name, name), false;
        n->iattr[i] = l->v[0].i, n->iattr[i + 1] = l->v[1].i;
        return true;
    }
    if (!strcmp(a->name, "axes")) {
        int rank = node(c, n->in[0])->shape.rank;
        int64_t mask = 0;
        for (int k = 0; k < l->n; k++) {
            int64_t axis = l->v[k].i < 0 ? l->v[k].i + rank : l->v[k].i;
            if (axis < 0 || axis >= rank)
                return elab_err(c, a->loc, "axis %lld of '%s' is out of range for rank %d", (long long)l->v[k].i, name, rank), false;
            mask |= (int64_t)1 << axis;
        }
        n->iattr[i] = mask;
        return true;
    }
    if (!strcmp(a->name, "perm")) return perm_attr(c, n, a, i, name);
    return elab_err(c, a->loc, "attribute '%s' of '%s' must be an int, got %s", a->name, name, elab_describe(c, a->v)), false;
}

/* ---- attributes of the shape ops (issue 12) ---- */

/* `perm: [2, 0, 1]`: a permutation of the input's axes, packed 4 bits per axis */
static bool perm_attr(elab *c, ir_node *n, const arg *a, int i, const char *name) {
    const vlist *l = a->v.list;
    int rank = node(c, n->in[0])->shape.rank;
    unsigned seen = 0;
    int64_t perm = 0;
    for (int k = 0; k < l->n && l->n == rank; k++) {
        int64_t p = l->v[k].i;
        if (p < 0 || p >= rank || seen >> p & 1) break;
        seen |= 1u << p, perm |= p << 4 * k;
    }
    if (l->n != rank || seen != (1u << rank) - 1) {
        char b[256] = "";
        append_value(c, b, sizeof b, a->v);
        return elab_err(c, a->loc, "perm %s of '%s' is not a permutation of the %d axes 0..%d", b, name, rank, rank - 1), false;
    }
    n->iattr[i] = perm;
    return true;
}

/* `begin: [..]`, `before: [..]`: one int per axis into NAME_0, NAME_1, ... */
static bool axis_list_attr(elab *c, ir_node *n, const arg *a, int i, const char *name) {
    const vlist *l = a->v.list;
    int rank = node(c, n->in[0])->shape.rank;
    if (l->n != rank)
        return elab_err(c, a->loc, "'%s' of '%s' needs one int per axis: %d, got %d", a->name, name, rank, l->n), false;
    for (int k = 0; k < l->n; k++) {
        if (l->v[k].k != V_INT) return elab_err(c, a->loc, "'%s' of '%s' must be a list of ints", a->name, name), false;
        if (l->v[k].i < -MAX_DIM || l->v[k].i > MAX_DIM)
            return elab_err(c, a->loc, "attribute '%s' of '%s' is out of range", a->name, name), false;
        n->iattr[i + k] = l->v[k].i;
    }
    return true;
}

/* `axis: a` of the softmax family: the IR keeps it counted from the end */
static bool softmax_axis(elab *c, ir_node *n, const arg *a, const char *name) {
    int rank = node(c, n->in[0])->shape.rank;
    if (a->v.k != V_INT) return elab_err(c, a->loc, "attribute 'axis' of '%s' must be an int, got %s", name, elab_describe(c, a->v)), false;
    int64_t axis = a->v.i < 0 ? a->v.i + rank : a->v.i;
    if (axis < 0 || axis >= rank)
        return elab_err(c, a->loc, "axis %lld of '%s' is out of range for rank %d", (long long)a->v.i, name, rank), false;
    n->iattr[0] = rank - 1 - axis;
    return true;
}

/* Sets one keyword attribute of a primitive node. */
static bool prim_attr(elab *c, ir_node *n, const arg *a, const char *name) {
    int i = ir_op_iattr_index(n->op, a->name), f = ir_op_fattr_index(n->op, a->name);
    if (!strcmp(a->name, "strides") && ir_op_iattr_index(n->op, "stride_h") >= 0)
        i = ir_op_iattr_index(n->op, "stride_h");
    if (!strcmp(a->name, "axis") && ir_op_iattr_index(n->op, "from_end") >= 0) return softmax_axis(c, n, a, name);
    int per_axis = ir_op_iattr_index(n->op, elab_fmt(c, "%s_0", a->name));
    if (per_axis >= 0 && a->v.k == V_LIST) return axis_list_attr(c, n, a, per_axis, name);
    if (pair_attr(a->name) && pair_index(n->op, a->name) >= 0) i = pair_index(n->op, a->name);
    if (n->op == OP_CAST && !strcmp(a->name, "dtype")) {
        int t = a->v.k == V_STR ? ir_dtype_from_name(a->v.s) : -1;
        if (t < 0) return elab_err(c, a->loc, "dtype of '%s' must be a dtype name such as \"f32\"", name), false;
        return n->dtype = (ir_dtype)t, true;
    }
    if (i >= 0 && a->v.k == V_LIST) return list_attr(c, n, a, i, name);
    if (i >= 0) {
        if (a->v.k != V_INT) return elab_err(c, a->loc, "attribute '%s' of '%s' must be an int, got %s", a->name, name, elab_describe(c, a->v)), false;
        if (a->v.i < -MAX_DIM || a->v.i > MAX_DIM)
            return elab_err(c, a->loc, "attribute '%s' of '%s' is out of range", a->name, name), false;
        n->iattr[i] = a->v.i;
        if (pair_attr(a->name)) n->iattr[i + 1] = a->v.i;
        return true;
    }
    if (f >= 0) {
        if (!is_num(a->v)) return elab_err(c, a->loc, "attribute '%s' of '%s' must be a number, got %s", a->name, name, elab_describe(c, a->v)), false;
        n->fattr[f] = num(a->v);
        return true;
    }
    char have[256] = "";
    const char *lists[2] = {ir_ops[n->op].iattrs, ir_ops[n->op].fattrs};
    for (int l = 0; l < 2; l++) /* "k_h,k_w" -> "k_h, k_w" */
        for (const char *p = lists[l]; *p; p++) {
            size_t len = strlen(have);
            if (len + 3 >= sizeof have) break;
            if (p == lists[l] && len) strcat(have, ", ");
            if (*p == ',') strcat(have, ", ");
            else have[len] = *p, have[len + 1] = 0;
        }
    return elab_err(c, a->loc, "'%s' has no attribute '%s'; it has %s", name, a->name, *have ? have : "none"), false;
}

/* dilation and groups of a convolution are >= 1 (in the IR an absent 0 reads as 1, ir_conv_of) */
static bool conv_attrs(elab *c, const ir_node *n, ir_loc loc, const char *name) {
    int d = ir_op_iattr_index(n->op, "dilation_h"), g = ir_op_iattr_index(n->op, "groups");
    if (d >= 0 && (n->iattr[d] < 1 || n->iattr[d + 1] < 1))
        return elab_err(c, loc, "'%s' needs dilation >= 1", name), false;
    if (g >= 0 && n->iattr[g] < 1) return elab_err(c, loc, "'%s' needs groups >= 1", name), false;
    return true;
}

/* Trailing int arguments of a shape-given op: the output shape (one -1 allowed for reshape). */
static bool prim_shape(elab *c, ir_node *n, const arg *a, int n_dims, const char *name) {
    if (n_dims == 1 && a[0].v.k == V_LIST) { /* prim.reshape(x, [a, b]) */
        arg dims[IR_MAX_RANK + 1];
        int count = a[0].v.list->n < IR_MAX_RANK + 1 ? a[0].v.list->n : IR_MAX_RANK + 1;
        for (int i = 0; i < count; i++) dims[i] = (arg){NULL, a[0].v.list->v[i], a[0].loc};
        if (a[0].v.list->n > IR_MAX_RANK) return elab_err(c, a[0].loc, "'%s' takes at most %d dimensions", name, IR_MAX_RANK), false;
        return prim_shape(c, n, dims, count, name);
    }
    if (n_dims > IR_MAX_RANK) return elab_err(c, a[IR_MAX_RANK].loc, "'%s' takes at most %d dimensions", name, IR_MAX_RANK), false;
    int infer_at = -1;
    int64_t known = 1;
    n->shape.rank = n_dims;
    for (int i = 0; i < n_dims; i++) {
        if (a[i].v.k != V_INT) return elab_err(c, a[i].loc, "a dimension of '%s' must be an int, got %s", name, elab_describe(c, a[i].v)), false;
        int64_t d = a[i].v.i;
        if (d == -1 && n->op == OP_RESHAPE && infer_at < 0) infer_at = i, d = 1;
        else if (d == -1 && n->op == OP_SLICE) d = -1; /* to the end: slice_to_end */
        else if (d < 1 || d > MAX_DIM) return elab_err(c, a[i].loc, "dimension %lld of '%s' is out of range (1 to 2^31)", (long long)d, name), false;
        n->shape.dim[i] = d;
        if (d == -1) continue;
        if (__builtin_mul_overflow(known, d, &known) || known >= IR_MAX_ELEMENTS)
            return elab_err(c, a[i].loc, "the shape given to '%s' is too large: 2^40 elements or more", name), false;
    }
    if (infer_at >= 0) n->shape.dim[infer_at] = ir_shape_numel(&node(c, n->in[0])->shape) / known;
    return true;
}

/* Inputs: every positional argument, but only the first `arity` of a shape-given op. */
static int count_inputs(ir_op op, int n_pos) {
    return shape_given(op) && n_pos > ir_ops[op].arity ? ir_ops[op].arity : n_pos;
}

/* The default mask stream of a dropout: a hash of the call's scope path
 * ("dropout_1", "block/dropout") and position (file name, line, column), so
 * two dropout layers never share a mask and a model compiled twice, from any
 * directory, draws the same ones. In a scope that shares params (reuse:
 * true) the key also holds which call shares them, so the two towers of a
 * Siamese network draw different masks, as a shared Keras Dropout does.
 * Below 2^40, as every attribute (ir/verify.c). */
static int64_t call_site_seed(elab *c, ir_loc loc) {
    const char *file = loc.file ? loc.file : "", *base = strrchr(file, '/'); /* not the directory: any checkout */
    const char *key = elab_fmt(c, "%s@%s:%d:%d", elab_scope_path(c, c->fr->scope), base ? base + 1 : file, loc.line, loc.col);
    for (const scope *s = c->fr->scope; s; s = s->parent)
        if (s->reuse) {
            key = elab_fmt(c, "%s#%d", key, s->id);
            break;
        }
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (const char *p = key; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211u;
    return (int64_t)(h & ((UINT64_C(1) << 40) - 1));
}

/* A slice size of -1 runs to the end of the axis (as tf.slice). */
static bool slice_to_end(elab *c, ir_node *n, ir_loc loc, const char *name) {
    const ir_node *x = node(c, n->in[0]);
    for (int i = 0; i < n->shape.rank && i < x->shape.rank; i++)
        if (n->shape.dim[i] == -1) {
            n->shape.dim[i] = x->shape.dim[i] - n->iattr[i];
            if (n->shape.dim[i] < 1)
                return elab_err(c, loc, "'%s' begins at %lld on axis %d, past its end (%lld)", name, (long long)n->iattr[i], i,
                                (long long)x->shape.dim[i]), false;
        }
    return true;
}

/* A state takes one assign per step (the schedule runs it after every read
 * of the old value); a second one, as a batch_norm shared by reuse: true
 * would make, is an error at the second. */
static bool first_assign(elab *c, int id) {
    const ir_node *n = node(c, id);
    for (int i = 0; i < id; i++) {
        const ir_node *x = node(c, i);
        if (x->op != OP_ASSIGN || x->in[0] != n->in[0]) continue;
        elab_err_raw(c, n->loc, "state '%s' is already assigned in this step (at %s:%d:%d); a state takes one assign per step, "
                     "so a layer with state (batch_norm) cannot be shared by reuse: true", node(c, n->in[0])->name,
                     x->loc.file ? x->loc.file : "?", x->loc.line, x->loc.col);
        return false;
    }
    return true;
}

value elab_call_prim(elab *c, ir_op op, call *k) {
    const char *name = elab_fmt(c, "prim.%s", ir_ops[op].name);
    if (ir_ops[op].flags & OPF_SOURCE) return elab_err(c, k->loc, "'%s' cannot be called", name), ERR;
    int n_pos = 0, in[MAX_PRIM_INPUTS];
    while (n_pos < k->n && !k->a[n_pos].name) n_pos++;
    int n_args = count_inputs(op, n_pos), arity = ir_ops[op].arity, n_in = 0;
    if (arity >= 0 && n_args != arity)
        return elab_err(c, k->loc, "'%s' takes %d input%s, got %d", name, arity, arity == 1 ? "" : "s", n_pos), ERR;
    for (int i = 0; i < n_args; i++) { /* a variadic op takes the elements of a list argument as inputs */
        bool spread = arity < 0 && k->a[i].v.k == V_LIST;
        int count = spread ? k->a[i].v.list->n : 1;
        for (int e = 0; e < count; e++) {
            value v = spread ? k->a[i].v.list->v[e] : k->a[i].v;
            if (n_in == MAX_PRIM_INPUTS) return elab_err(c, k->loc, "'%s' takes at most %d inputs", name, MAX_PRIM_INPUTS), ERR;
            if (is_num(v)) v = elab_constant(c, num(v), IR_F32, k->a[i].loc);
            else if (v.k != V_TENSOR && v.k != V_ERR) return elab_err(c, k->a[i].loc, "input %d of '%s' must be a tensor, got %s", n_in + 1, name, elab_describe(c, v)), ERR;
            if (v.k == V_ERR) return ERR;
            in[n_in++] = v.node;
        }
    }
    if (arity < 0 && n_in == 0) return elab_err(c, k->loc, "'%s' needs at least one input", name), ERR;
    int id = elab_add(c, op, in, n_in, k->loc);
    ir_node *n = node(c, id);
    int s = ir_op_iattr_index(op, "stride_h");
    if (s >= 0) n->iattr[s] = n->iattr[s + 1] = 1;
    int d = ir_op_iattr_index(op, "dilation_h"), g = ir_op_iattr_index(op, "groups");
    if (d >= 0) n->iattr[d] = n->iattr[d + 1] = 1;
    if (g >= 0) n->iattr[g] = 1;
    if (shape_given(op) && !prim_shape(c, n, k->a + n_in, n_pos - n_in, name)) return ERR;
    const arg *padding = NULL;
    for (int i = n_pos; i < k->n; i++) {
        if (!strcmp(k->a[i].name, "padding") && is_window(op)) padding = &k->a[i];
        else if (!prim_attr(c, n = node(c, id), &k->a[i], name)) return ERR;
    }
    n = node(c, id);
    int kh = ir_op_iattr_index(op, "k_h");
    if (kh >= 0 && (n->iattr[kh] < 1 || n->iattr[kh + 1] < 1))
        return elab_err(c, k->loc, "'%s' needs a window k_h, k_w >= 1", name), ERR;
    if (!conv_attrs(c, n, k->loc, name)) return ERR;
    if (padding && !apply_padding(c, n, padding, name)) return ERR;
    if (op == OP_DROPOUT && n->iattr[0] < 0) n->iattr[0] = call_site_seed(c, k->loc);
    if (op == OP_CONCAT && n->iattr[0] < 0) n->iattr[0] += node(c, n->in[0])->shape.rank; /* axis: -1 the last */
    if (op == OP_SLICE && !slice_to_end(c, n, k->loc, name)) return ERR;
    value r = elab_finish(c, id);
    return r.k == V_TENSOR && op == OP_ASSIGN && !first_assign(c, id) ? ERR : r;
}

