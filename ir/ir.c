/* ir.c - modules, nodes, the op table and the shape rule of every op. */
#include "ir.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const ir_opinfo ir_ops[OP_COUNT] = {
#define X(e, name, arity, iattrs, fattrs, flags, shape) [OP_##e] = {name, arity, iattrs, fattrs, flags},
#include "ops.def"
#undef X
};

const char *const ir_init_names[INIT_COUNT] = {"zeros", "ones", "glorot_uniform", "he_normal",
                                              "he_uniform", "glorot_normal", "lecun_normal", "lecun_uniform",
                                              "orthogonal", "truncated_normal", "random_normal", "constant",
                                              "unit_forget_bias"};

int ir_init_fattr(ir_init init) {
    return init == INIT_CONSTANT ? 0 : init == INIT_TRUNCATED_NORMAL || init == INIT_RANDOM_NORMAL ? 1 : -1;
}
const char *const ir_optimizer_names[OPT_COUNT] = {"sgd", "adam", "adamw", "rmsprop", "adagrad", "nadam", "lamb"};
const char *const ir_lr_names[LR_COUNT] = {"constant", "cosine_decay", "exponential_decay", "piecewise_constant"};
const char *const ir_cross_device_names[XDEV_COUNT] = {"ring", "one-device", "hierarchical"};
const char *const ir_sparse_grads_names[SPARSE_COUNT] = {"auto", "always", "never"};
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

bool ir_node_per_element(const ir_node *n) {
    return ((ir_ops[n->op].flags & OPF_ELEMENTWISE) && n->op != OP_CAST) || n->op == OP_DROPOUT ||
           n->op == OP_DROPOUT_GRAD;
}

/* ---- modules ---- */

struct ir_strtab {
    char **s;
    int n, cap;
};

ir_module *ir_module_new(void) {
    ir_module *m = calloc(1, sizeof *m);
    if (!m) abort();
    m->strings = calloc(1, sizeof *m->strings);
    m->loss = -1;
    m->bucket_bytes = 4 << 20;
    return m;
}

void ir_module_free(ir_module *m) {
    if (!m) return;
    for (int i = 0; i < m->g.n; i++) free(m->g.nodes[i].in);
    free(m->g.nodes);
    free(m->inputs);
    free(m->metrics);
    free(m->outputs);
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
    for (int i = 0; i < m->n_fused; i++) free(m->fused[i]);
    free(m->fused);
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

void ir_module_renumber(ir_module *m, const int *map) {
    for (int k = 0; k < m->n_inputs; k++) m->inputs[k] = map[m->inputs[k]];
    if (m->loss >= 0) m->loss = map[m->loss];
    for (int k = 0; k < m->n_metrics; k++) m->metrics[k].node = map[m->metrics[k].node];
    for (int k = 0; k < m->n_outputs; k++) m->outputs[k].node = map[m->outputs[k].node];
    for (int k = 0; k < m->n_params; k++) {
        m->params[k] = map[m->params[k]];
        if (m->grads && m->grads[k] >= 0) m->grads[k] = map[m->grads[k]];
    }
}

/* ---- elementwise fusion (issue 14) ---- */

const ir_fused *ir_fused_add(ir_module *m, const ir_fused *p) {
    m->fused = xrealloc(m->fused, (size_t)(m->n_fused + 1) * sizeof *m->fused);
    ir_fused *f = xrealloc(NULL, sizeof *f);
    *f = *p;
    return m->fused[m->n_fused++] = f;
}

bool ir_fused_op_ok(ir_op op, int *arity) {
    if ((unsigned)op >= OP_COUNT || !(ir_ops[op].flags & OPF_ELEMENTWISE) || op == OP_CAST || op == OP_FUSED)
        return false;
    *arity = ir_ops[op].arity;
    return *arity == 1 || *arity == 2;
}

double ir_learning_rate(const ir_optimizer *o, int64_t step) {
    const ir_lr_schedule *s = &o->schedule;
    double t = (double)(step > 0 ? step : 0), lr = o->lr;
    switch (s->kind) {
    case LR_COSINE_DECAY: {
        double peak = s->warmup_target > 0 ? s->warmup_target : lr;
        if (t < (double)s->warmup_steps) return lr + (peak - lr) * t / (double)s->warmup_steps;
        double done = fmin(t - (double)s->warmup_steps, (double)s->decay_steps) / (double)s->decay_steps;
        return peak * ((1 - s->alpha) * 0.5 * (1 + cos(M_PI * done)) + s->alpha);
    }
    case LR_EXPONENTIAL_DECAY: {
        double p = t / (double)s->decay_steps;
        return lr * pow(s->decay_rate, s->staircase ? floor(p) : p);
    }
    case LR_PIECEWISE_CONSTANT: {
        int i = 0;
        while (i < s->n_boundaries && t > (double)s->boundaries[i]) i++;
        return s->values[i];
    }
    default: return lr;
    }
}
