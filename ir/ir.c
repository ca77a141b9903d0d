/* ir.c - modules, nodes, the op table and the shape rule of every op. */
#include "ir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const ir_opinfo ir_ops[OP_COUNT] = {
#define X(e, name, arity, iattrs, fattrs, flags) [OP_##e] = {name, arity, iattrs, fattrs, flags},
#include "ops.def"
#undef X
};

const char *const ir_init_names[INIT_COUNT] = {"zeros", "ones", "glorot_uniform", "he_normal"};
const char *const ir_optimizer_names[OPT_COUNT] = {"sgd", "adam", "adamw", "rmsprop"};
const char *const ir_cross_device_names[XDEV_COUNT] = {"ring", "one-device", "hierarchical"};
const char *const ir_program_names[IR_PROGRAM_COUNT] = {"train", "eval", "predict", "init"};

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "mgc: out of memory\n");
        abort();
    }
    return q;
}

/* ---- shapes and dtypes ---- */

int64_t ir_shape_numel(const ir_shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) n *= s->dim[i];
    return n;
}

bool ir_shape_eq(const ir_shape *a, const ir_shape *b) {
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i]) return false;
    return true;
}

ir_shape ir_shape_make(int rank, const int64_t *dims) {
    ir_shape s = {.rank = rank};
    for (int i = 0; i < rank; i++) s.dim[i] = dims[i];
    return s;
}

static const struct { const char *name; size_t size; } dtypes[IR_DTYPE_COUNT] = {
    [IR_F32] = {"f32", 4}, [IR_I32] = {"i32", 4}, [IR_F64] = {"f64", 8}, [IR_U8] = {"u8", 1},
};

size_t ir_dtype_size(ir_dtype t) { return t < IR_DTYPE_COUNT ? dtypes[t].size : 0; }
const char *ir_dtype_name(ir_dtype t) { return t < IR_DTYPE_COUNT ? dtypes[t].name : "?"; }

int ir_dtype_from_name(const char *name) {
    for (int t = 0; t < IR_DTYPE_COUNT; t++)
        if (!strcmp(name, dtypes[t].name)) return t;
    return -1;
}

int64_t ir_node_bytes(const ir_node *n) { return ir_shape_numel(&n->shape) * (int64_t)ir_dtype_size(n->dtype); }

char *ir_type_str(ir_dtype t, const ir_shape *s, char *buf, size_t cap) {
    size_t k = (size_t)snprintf(buf, cap, "%s[", ir_dtype_name(t));
    for (int i = 0; i < s->rank && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, i ? ",%lld" : "%lld", (long long)s->dim[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
    return buf;
}

/* ---- ops ---- */

int ir_op_from_name(const char *name) {
    for (int op = 0; op < OP_COUNT; op++)
        if (!strcmp(ir_ops[op].name, name)) return op;
    return -1;
}

/* Position of `name` in a comma-separated list, or -1. */
static int list_index(const char *list, const char *name) {
    size_t len = strlen(name);
    for (int i = 0; *list; i++) {
        const char *end = strchr(list, ',');
        size_t n = end ? (size_t)(end - list) : strlen(list);
        if (n == len && !strncmp(list, name, len)) return i;
        if (!end) break;
        list = end + 1;
    }
    return -1;
}

int ir_op_iattr_index(ir_op op, const char *name) { return list_index(ir_ops[op].iattrs, name); }
int ir_op_fattr_index(ir_op op, const char *name) { return list_index(ir_ops[op].fattrs, name); }

/* ---- modules ---- */

struct ir_strtab {
    char **s;
    int n, cap;
};

ir_module *ir_module_new(void) {
    ir_module *m = calloc(1, sizeof *m);
    if (!m) abort();
    m->strings = calloc(1, sizeof *m->strings);
    m->loss = m->output = -1;
    m->bucket_bytes = 4 << 20;
    return m;
}

void ir_module_free(ir_module *m) {
    if (!m) return;
    for (int i = 0; i < m->g.n; i++) free(m->g.nodes[i].in);
    free(m->g.nodes);
    free(m->inputs);
    free(m->metrics);
    free(m->params);
    free(m->grads);
    free(m->devices);
    for (int i = 0; i < m->n_buckets; i++) free(m->buckets[i].grads);
    free(m->buckets);
    free(m->arena_bytes);
    free(m->unplanned_bytes);
    for (int i = 0; i < m->n_sched; i++) free(m->sched[i].items);
    free(m->sched);
    free(m->sources);
    for (int i = 0; i < m->strings->n; i++) free(m->strings->s[i]);
    free(m->strings->s);
    free(m->strings);
    free(m);
}

const char *ir_intern(ir_module *m, const char *s) {
    if (!s) return NULL;
    struct ir_strtab *t = m->strings;
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->s[i], s)) return t->s[i];
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->s = xrealloc(t->s, (size_t)t->cap * sizeof *t->s);
    }
    size_t n = strlen(s) + 1;
    t->s[t->n] = memcpy(xrealloc(NULL, n), s, n);
    return t->s[t->n++];
}

int ir_add(ir_module *m, ir_op op, const int *in, int n_in, ir_loc loc) {
    ir_graph *g = &m->g;
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 256;
        g->nodes = xrealloc(g->nodes, (size_t)g->cap * sizeof *g->nodes);
    }
    ir_node *n = &g->nodes[g->n];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->n_in = n_in;
    n->in = xrealloc(NULL, (size_t)n_in * sizeof *n->in);
    if (n_in) memcpy(n->in, in, (size_t)n_in * sizeof *in);
    n->loc = loc;
    n->offset = -1;
    n->origin = g->n;
    return g->n++;
}

ir_node *ir_node_at(ir_module *m, int i) { return &m->g.nodes[i]; }

/* ---- shape rules ---- */

typedef struct {
    char *buf;
    size_t cap;
} errbuf;

static bool fail(errbuf *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(errbuf *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->buf, e->cap, fmt, ap);
    va_end(ap);
    return false;
}

static const char *tstr(const ir_node *n, char *buf) { return ir_type_str(n->dtype, &n->shape, buf, 96); }

/* numpy broadcasting of a and b into out */
static bool broadcast_shapes(const ir_shape *a, const ir_shape *b, ir_shape *out) {
    int r = a->rank > b->rank ? a->rank : b->rank;
    out->rank = r;
    for (int i = 0; i < r; i++) {
        int ia = a->rank - r + i, ib = b->rank - r + i;
        int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
        if (da != db && da != 1 && db != 1) return false;
        out->dim[i] = da == 1 ? db : da;
    }
    return true;
}

static bool want_float(errbuf *e, const ir_node *n, const ir_node *x, const char *what) {
    char b[96];
    if (x->dtype != IR_F32 && x->dtype != IR_F64)
        return fail(e, "%s of '%s' must be a float tensor, got %s", what, ir_ops[n->op].name, tstr(x, b));
    return true;
}

static bool want_rank(errbuf *e, const ir_node *n, const ir_node *x, int rank, const char *what) {
    char b[96];
    if (x->shape.rank != rank)
        return fail(e, "%s of '%s' must have rank %d, got %s", what, ir_ops[n->op].name, rank, tstr(x, b));
    return true;
}

/* Output size of a window of k with stride s over d padded by p0+p1. */
static int64_t window_out(int64_t d, int64_t k, int64_t s, int64_t p0, int64_t p1) {
    return (d + p0 + p1 - k) / s + 1;
}

/* conv / pool: x NHWC with window kh x kw -> [N, oh, ow, c] */
static bool window_shape(errbuf *e, const ir_node *n, const ir_node *x, int64_t kh, int64_t kw,
                         const int64_t *stride_pad, int64_t c, ir_shape *out) {
    char b[96];
    const int64_t sh = stride_pad[0], sw = stride_pad[1], pt = stride_pad[2], pl = stride_pad[3],
                  pb = stride_pad[4], pr = stride_pad[5];
    if (sh < 1 || sw < 1) return fail(e, "'%s' needs strides >= 1", ir_ops[n->op].name);
    if (pt < 0 || pl < 0 || pb < 0 || pr < 0) return fail(e, "'%s' needs padding >= 0", ir_ops[n->op].name);
    if (x->shape.dim[1] + pt + pb < kh || x->shape.dim[2] + pl + pr < kw)
        return fail(e, "window %lldx%lld of '%s' is larger than its input %s", (long long)kh, (long long)kw,
                    ir_ops[n->op].name, tstr(x, b));
    *out = ir_shape_make(4, (int64_t[]){x->shape.dim[0], window_out(x->shape.dim[1], kh, sh, pt, pb),
                                        window_out(x->shape.dim[2], kw, sw, pl, pr), c});
    return true;
}

static bool given_shape_matches(errbuf *e, const ir_node *n, const ir_shape *want) {
    char b1[96], b2[96];
    if (!ir_shape_eq(&n->shape, want))
        return fail(e, "'%s' declares %s but its inputs give %s", ir_ops[n->op].name,
                    ir_type_str(n->dtype, &n->shape, b1, 96), ir_type_str(n->dtype, want, b2, 96));
    return true;
}

static bool infer(ir_module *m, ir_node *n, errbuf *e) {
    const ir_opinfo *info = &ir_ops[n->op];
    const ir_node *x = n->n_in > 0 ? &m->g.nodes[n->in[0]] : NULL;
    const ir_node *y = n->n_in > 1 ? &m->g.nodes[n->in[1]] : NULL;
    char b1[96], b2[96];
    ir_shape s;

    if (info->arity >= 0 && n->n_in != info->arity)
        return fail(e, "'%s' takes %d inputs, got %d", info->name, info->arity, n->n_in);

    switch (n->op) {
    case OP_INPUT: case OP_PARAM: case OP_VAR: case OP_CONST:
        return true; /* declared */

    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV:
        if (x->dtype != y->dtype)
            return fail(e, "operands of '%s' differ in dtype: %s and %s", info->name, tstr(x, b1), tstr(y, b2));
        if (!broadcast_shapes(&x->shape, &y->shape, &s))
            return fail(e, "shapes %s and %s of '%s' do not broadcast", tstr(x, b1), tstr(y, b2), info->name);
        n->dtype = x->dtype, n->shape = s;
        return true;

    case OP_NEG: case OP_EXP: case OP_LOG: case OP_SQRT: case OP_RELU: case OP_SIGMOID: case OP_TANH:
        if (!want_float(e, n, x, "the input")) return false;
        n->dtype = x->dtype, n->shape = x->shape;
        return true;

    case OP_RELU_GRAD: case OP_SIGMOID_GRAD: case OP_TANH_GRAD: case OP_SOFTMAX_GRAD:
        if (!ir_shape_eq(&x->shape, &y->shape) || x->dtype != y->dtype)
            return fail(e, "'%s' needs equal types, got %s and %s", info->name, tstr(x, b1), tstr(y, b2));
        n->dtype = x->dtype, n->shape = x->shape;
        return true;

    case OP_CAST:
        n->shape = x->shape;
        return true;

    case OP_MATMUL: {
        if (!want_float(e, n, x, "the left operand") || !want_rank(e, n, x, 2, "the left operand") ||
            !want_rank(e, n, y, 2, "the right operand"))
            return false;
        int ta = n->iattr[0] != 0, tb = n->iattr[1] != 0;
        int64_t m_ = x->shape.dim[ta], k1 = x->shape.dim[!ta], k2 = y->shape.dim[tb], n_ = y->shape.dim[!tb];
        if (k1 != k2)
            return fail(e, "inner dimensions of 'matmul' differ: %s x %s", tstr(x, b1), tstr(y, b2));
        n->dtype = x->dtype, n->shape = ir_shape_make(2, (int64_t[]){m_, n_});
        return true;
    }

    case OP_CONV2D:
        if (!want_float(e, n, x, "the input") || !want_rank(e, n, x, 4, "the input") ||
            !want_rank(e, n, y, 4, "the filter"))
            return false;
        if (y->shape.dim[2] != x->shape.dim[3])
            return fail(e, "'conv2d' filter %s expects %lld input channels, the input %s has %lld", tstr(y, b1),
                        (long long)y->shape.dim[2], tstr(x, b2), (long long)x->shape.dim[3]);
        n->dtype = x->dtype;
        return window_shape(e, n, x, y->shape.dim[0], y->shape.dim[1], n->iattr, y->shape.dim[3], &n->shape);

    case OP_CONV2D_GRAD_INPUT: /* (dy, w) -> dx of the given shape */
        if (!want_rank(e, n, &(ir_node){.shape = n->shape, .op = n->op}, 4, "the result")) return false;
        if (!window_shape(e, n, &(ir_node){.shape = n->shape, .op = n->op}, y->shape.dim[0], y->shape.dim[1],
                          n->iattr, y->shape.dim[3], &s))
            return false;
        n->dtype = x->dtype;
        return given_shape_matches(e, &(ir_node){.op = n->op, .dtype = n->dtype, .shape = x->shape}, &s);

    case OP_CONV2D_GRAD_FILTER: /* (x, dy) -> dw [kh, kw, cin, cout] given */
        if (n->shape.rank != 4 || n->shape.dim[2] != x->shape.dim[3])
            return fail(e, "'conv2d_grad_filter' result %s does not fit input %s", tstr(n, b1), tstr(x, b2));
        if (!window_shape(e, n, x, n->shape.dim[0], n->shape.dim[1], n->iattr, n->shape.dim[3], &s)) return false;
        n->dtype = x->dtype;
        return given_shape_matches(e, &(ir_node){.op = n->op, .dtype = n->dtype, .shape = y->shape}, &s);

    case OP_MAX_POOL2D: case OP_AVG_POOL2D:
        if (!want_float(e, n, x, "the input") || !want_rank(e, n, x, 4, "the input")) return false;
        n->dtype = x->dtype;
        return window_shape(e, n, x, n->iattr[0], n->iattr[1], n->iattr + 2, x->shape.dim[3], &n->shape);

    case OP_MAX_POOL2D_GRAD: case OP_AVG_POOL2D_GRAD:
        if (!window_shape(e, n, x, n->iattr[0], n->iattr[1], n->iattr + 2, x->shape.dim[3], &s)) return false;
        if (!ir_shape_eq(&s, &y->shape))
            return fail(e, "'%s' gradient %s does not match the pooled shape of %s", info->name, tstr(y, b1),
                        tstr(x, b2));
        n->dtype = x->dtype, n->shape = x->shape;
        return true;

    case OP_RESHAPE:
        if (ir_shape_numel(&n->shape) != ir_shape_numel(&x->shape))
            return fail(e, "cannot reshape %s to %s: element counts differ", tstr(x, b1),
                        ir_type_str(x->dtype, &n->shape, b2, 96));
        n->dtype = x->dtype;
        return true;

    case OP_REDUCE_SUM: case OP_REDUCE_MEAN: {
        int64_t axes = n->iattr[0];
        if (axes >> x->shape.rank)
            return fail(e, "'%s' axes exceed the rank of %s", info->name, tstr(x, b1));
        s.rank = 0;
        for (int i = 0; i < x->shape.rank; i++) {
            if (!(axes >> i & 1)) s.dim[s.rank++] = x->shape.dim[i];
            else if (n->iattr[1]) s.dim[s.rank++] = 1;
        }
        n->dtype = x->dtype, n->shape = s;
        return true;
    }

    case OP_BROADCAST_TO:
        if (!broadcast_shapes(&x->shape, &n->shape, &s) || !ir_shape_eq(&s, &n->shape))
            return fail(e, "cannot broadcast %s to %s", tstr(x, b1), ir_type_str(x->dtype, &n->shape, b2, 96));
        n->dtype = x->dtype;
        return true;

    case OP_SOFTMAX:
        if (!want_float(e, n, x, "the input") || x->shape.rank < 1)
            return fail(e, "'softmax' needs a float tensor of rank >= 1, got %s", tstr(x, b1));
        n->dtype = x->dtype, n->shape = x->shape;
        return true;

    case OP_SPARSE_XENT: case OP_SPARSE_XENT_GRAD: case OP_ARGMAX_MATCH:
        if (!want_float(e, n, x, "the logits") || !want_rank(e, n, x, 2, "the logits")) return false;
        if (y->dtype != IR_I32 || y->shape.rank != 1 || y->shape.dim[0] != x->shape.dim[0])
            return fail(e, "labels of '%s' must be i32[%lld] for logits %s, got %s", info->name,
                        (long long)x->shape.dim[0], tstr(x, b1), tstr(y, b2));
        n->dtype = x->dtype;
        n->shape = n->op == OP_SPARSE_XENT_GRAD ? x->shape : ir_shape_make(1, x->shape.dim);
        if (n->op == OP_SPARSE_XENT_GRAD && !ir_shape_eq(&m->g.nodes[n->in[2]].shape, &y->shape))
            return fail(e, "'sparse_xent_grad' needs a gradient of shape [%lld]", (long long)x->shape.dim[0]);
        return true;

    case OP_DROPOUT: case OP_DROPOUT_GRAD:
        if (!want_float(e, n, x, "the input")) return false;
        if (!(n->fattr[0] >= 0 && n->fattr[0] < 1)) return fail(e, "dropout rate must be in [0, 1)");
        n->dtype = x->dtype, n->shape = x->shape;
        return true;

    case OP_SGD_UPDATE: case OP_ADAM_UPDATE: case OP_RMSPROP_UPDATE: {
        int lo = n->op == OP_SGD_UPDATE ? 2 : n->op == OP_RMSPROP_UPDATE ? 3 : 4;
        if (n->n_in < lo || n->n_in > (n->op == OP_ADAM_UPDATE ? 4 : lo + 1))
            return fail(e, "'%s' has %d inputs", info->name, n->n_in);
        for (int i = 1; i < n->n_in; i++) {
            const ir_node *t = &m->g.nodes[n->in[i]];
            if (!ir_shape_eq(&t->shape, &x->shape) || t->dtype != x->dtype)
                return fail(e, "'%s' input %d is %s, the param is %s", info->name, i, tstr(t, b1), tstr(x, b2));
        }
        n->dtype = x->dtype, n->shape = x->shape;
        return true;
    }

    case OP_SHARD:
        if (x->shape.rank < 1 || n->iattr[1] < 1 || x->shape.dim[0] % n->iattr[1] || n->iattr[0] < 0 ||
            n->iattr[0] >= n->iattr[1])
            return fail(e, "cannot shard %s into %lld parts", tstr(x, b1), (long long)n->iattr[1]);
        n->dtype = x->dtype, n->shape = x->shape;
        n->shape.dim[0] /= n->iattr[1];
        return true;

    case OP_ALL_REDUCE: {
        int64_t total = 0;
        for (int i = 0; i < n->n_in; i++) {
            const ir_node *t = &m->g.nodes[n->in[i]];
            if (t->dtype != m->g.nodes[n->in[0]].dtype)
                return fail(e, "'all_reduce' inputs differ in dtype");
            total += ir_shape_numel(&t->shape);
        }
        if (n->n_in < 1) return fail(e, "'all_reduce' needs at least one input");
        n->dtype = x->dtype, n->shape = ir_shape_make(1, &total);
        return true;
    }

    case OP_VIEW:
        if (n->iattr[0] < 0 || n->iattr[0] + ir_shape_numel(&n->shape) > ir_shape_numel(&x->shape))
            return fail(e, "view [%lld, +%lld) is outside %s", (long long)n->iattr[0],
                        (long long)ir_shape_numel(&n->shape), tstr(x, b1));
        n->dtype = x->dtype;
        return true;

    case OP_BROADCAST:
        n->dtype = x->dtype, n->shape = x->shape;
        return true;

    case OP_COUNT: break;
    }
    return fail(e, "unknown op %d", (int)n->op);
}

bool ir_infer_node(ir_module *m, int i, char *err, size_t cap) {
    errbuf e = {err, cap};
    ir_node *n = &m->g.nodes[i];
    for (int k = 0; k < n->n_in; k++)
        if (n->in[k] < 0 || n->in[k] >= i) return fail(&e, "input %d of node %d is not an earlier node", k, i);
    return infer(m, n, &e);
}
