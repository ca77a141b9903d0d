/* elaborate.c - AST to the one-replica forward IR: reads the program and the
 * modules it uses, inlines every function call, folds integers, names params
 * Keras-style ("dense_1/kernel") and records the model interface and the
 * training setup in the module. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../frontend/frontend.h"
#include "passes.h"

enum { MAX_CALL_DEPTH = 64, MAX_PRIM_INPUTS = 64 };
static const int64_t MAX_DIM = (int64_t)1 << 31; /* of any dimension and of the batch */

/* ---- values ---- */

typedef enum {
    V_ERR,     /* an error was reported; silently propagates */
    V_INT,     /* i */
    V_FLOAT,   /* f */
    V_STR,     /* s */
    V_TENSOR,  /* node */
    V_FN,      /* fn: a function of the language */
    V_PRIM,    /* i: an ir_op, "prim.NAME" */
    V_BUILTIN, /* i: a builtin_fn */
    V_INIT,    /* i: an ir_init */
} vkind;

typedef struct {
    vkind k;
    int64_t i;
    double f;
    const char *s;
    int node;
    const ast_decl *fn;
} value;

typedef enum { B_DIM, B_RANK, B_SIZE, B_MAX, B_MIN, B_COUNT } builtin_fn;
static const char *const builtin_names[B_COUNT] = {"dim", "rank", "size", "max", "min"};

static const value ERR = {.k = V_ERR};
static value vint(int64_t i) { return (value){.k = V_INT, .i = i}; }
static value vfloat(double f) { return (value){.k = V_FLOAT, .f = f}; }
static value vtensor(int node) { return (value){.k = V_TENSOR, .node = node}; }

/* ---- elaboration state ---- */

typedef struct {
    const char *name;
    value v;
} binding;

/* A naming scope: one per call of a function; named lazily, when it (or a
 * function it calls) declares its first param. */
typedef struct scope {
    struct scope *parent;
    const char *base;
    const char *path; /* "" for the model, "dense_1", "block/dense" */
} scope;

typedef struct frame {
    struct frame *caller;
    const ast_decl *fn; /* NULL in the model and train blocks */
    binding *b;
    int n, cap;
    bool in_module;     /* code of a `use`d module: positions are the user's call */
    ir_loc user_loc;
    scope *scope;
} frame;

typedef struct {
    const char *key;
    int count;
} counter;

typedef struct {
    const char *path;   /* interned */
    char *text;
    ast_file *ast;
    const char *module; /* module name, NULL for the main file */
} source_file;

typedef struct {
    ir_module *m;
    ir_diag *d;
    ast_arena *a;
    const char *stdlib_dir;
    const pass_options *o;
    source_file *files;
    int n_files;
    const ast_decl **fns;
    int n_fns;
    frame *fr;
    int depth;
    counter *counters;
    int n_counters;
    const ast_expr *watch; /* the loss call, whose first argument is the output */
    value watched;
} elab;

static void err(elab *c, ir_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void *xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) {
        fprintf(stderr, "mgc: out of memory\n");
        abort();
    }
    return p;
}

/* Position of what is elaborated at loc: inside a module, the user's call. */
static ir_loc at(elab *c, ir_loc loc) { return c->fr && c->fr->in_module ? c->fr->user_loc : loc; }

static void err(elab *c, ir_loc loc, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ir_diag_error(c->d, at(c, loc), "%s", msg);
}

/* An error at a position already mapped by at(). */
static void err_raw(elab *c, ir_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void err_raw(elab *c, ir_loc loc, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ir_diag_error(c->d, loc, "%s", msg);
}

static const char *fmt(elab *c, const char *f, ...) __attribute__((format(printf, 2, 3)));
static const char *fmt(elab *c, const char *f, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return ast_strdup(c->a, buf, n < (int)sizeof buf ? (size_t)n : sizeof buf - 1);
}

static ir_node *node(elab *c, int i) { return ir_node_at(c->m, i); }

/* "an int", "a tensor f32[64,10]", ... for messages. */
static const char *describe(elab *c, value v) {
    char b[128];
    switch (v.k) {
    case V_INT: return "an int";
    case V_FLOAT: return "a float";
    case V_STR: return "a str";
    case V_TENSOR: return fmt(c, "a tensor %s", ir_type_str(node(c, v.node)->dtype, &node(c, v.node)->shape, b, sizeof b));
    case V_FN: case V_PRIM: case V_BUILTIN: return "a function";
    case V_INIT: return "an initializer";
    case V_ERR: break;
    }
    return "an error";
}

/* ---- bindings and names ---- */

static void bind(frame *f, const char *name, value v) {
    for (int i = f->n - 1; i >= 0; i--)
        if (!strcmp(f->b[i].name, name)) {
            f->b[i].v = v;
            return;
        }
    if (f->n == f->cap) f->b = xrealloc(f->b, (size_t)(f->cap = f->cap ? 2 * f->cap : 16) * sizeof *f->b);
    f->b[f->n++] = (binding){name, v};
}

static const value *local(const frame *f, const char *name) {
    for (int i = f->n - 1; i >= 0; i--)
        if (!strcmp(f->b[i].name, name)) return &f->b[i].v;
    return NULL;
}

/* Function `name` as code of `file` sees it: one of that file's own first,
 * then one of a module's. A module never sees the main file's functions, so a
 * user's `fn identity` shadows the stdlib's for the user's own calls only. */
static const ast_decl *find_fn(elab *c, const char *name, const char *file) {
    const ast_decl *module_fn = NULL;
    for (int i = 0; i < c->n_fns; i++) {
        const ast_decl *d = c->fns[i];
        if (strcmp(d->name, name)) continue;
        if (!strcmp(d->loc.file, file)) return d;
        if (d->in_module && !module_fn) module_fn = d;
    }
    return module_fn;
}

/* The file whose code is running: the current function's, else the main file. */
static const char *running_file(const elab *c) {
    return c->fr && c->fr->fn ? c->fr->fn->loc.file : c->files[0].path;
}

/* Globals: functions, "prim.NAME", builtins, initializers, true/false. */
static bool global(elab *c, const char *name, value *v) {
    const ast_decl *fn = find_fn(c, name, running_file(c));
    if (fn) return *v = (value){.k = V_FN, .fn = fn}, true;
    if (!strncmp(name, "prim.", 5)) {
        int op = ir_op_from_name(name + 5);
        if (op >= 0) return *v = (value){.k = V_PRIM, .i = op}, true;
        return false;
    }
    for (int i = 0; i < B_COUNT; i++)
        if (!strcmp(name, builtin_names[i])) return *v = (value){.k = V_BUILTIN, .i = i}, true;
    for (int i = 0; i < INIT_COUNT; i++)
        if (!strcmp(name, ir_init_names[i])) return *v = (value){.k = V_INIT, .i = i}, true;
    if (!strcmp(name, "true") || !strcmp(name, "false")) return *v = vint(name[0] == 't'), true;
    return false;
}

static value lookup(elab *c, const char *name, ir_loc loc) {
    const value *v = c->fr ? local(c->fr, name) : NULL;
    if (v) return *v;
    value g;
    if (global(c, name, &g)) return g;
    if (!strncmp(name, "prim.", 5)) err(c, loc, "unknown primitive '%s'", name);
    else err(c, loc, "unknown name '%s'", name);
    return ERR;
}

/* The hierarchical name of scope s, numbering calls of the same function in
 * the same parent Keras-style: dense, dense_1, dense_2. */
static const char *scope_path(elab *c, scope *s) {
    if (s->path) return s->path;
    const char *parent = scope_path(c, s->parent);
    const char *key = *parent ? fmt(c, "%s/%s", parent, s->base) : s->base;
    int i = 0;
    while (i < c->n_counters && strcmp(c->counters[i].key, key)) i++;
    if (i == c->n_counters) {
        c->counters = xrealloc(c->counters, (size_t)(c->n_counters + 1) * sizeof *c->counters);
        c->counters[c->n_counters++] = (counter){key, 0};
    }
    int k = c->counters[i].count++;
    return s->path = k ? fmt(c, "%s_%d", key, k) : key;
}

/* ---- nodes ---- */

/* Fewer than IR_MAX_ELEMENTS elements (what a plan may hold). */
static bool checked_numel(const ir_shape *s, int64_t *out) {
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        if (s->dim[i] < 0 || __builtin_mul_overflow(n, s->dim[i], &n) || n >= IR_MAX_ELEMENTS) return false;
    *out = n;
    return true;
}

/* Runs the shape rule of a node just added; errors at its position. */
static value finish(elab *c, int i) {
    char msg[256], b[128];
    ir_node *n = node(c, i);
    int64_t numel;
    if (!ir_infer_node(c->m, i, msg, sizeof msg)) {
        ir_diag_error(c->d, n->loc, "%s", msg);
        return ERR;
    }
    if (!checked_numel(&n->shape, &numel)) {
        ir_diag_error(c->d, n->loc, "the result of '%s' is too large: %s has 2^40 elements or more",
                      ir_ops[n->op].name, ir_type_str(n->dtype, &n->shape, b, sizeof b));
        return ERR;
    }
    return vtensor(i);
}

static int add(elab *c, ir_op op, const int *in, int n_in, ir_loc loc) {
    return ir_add(c->m, op, in, n_in, at(c, loc));
}

static value constant(elab *c, double v, ir_dtype t, ir_loc loc) {
    int i = add(c, OP_CONST, NULL, 0, loc);
    node(c, i)->dtype = t;
    node(c, i)->fattr[0] = v;
    return finish(c, i);
}

/* ---- expressions ---- */

static value eval(elab *c, const ast_expr *e);

static value fold_int(elab *c, char op, int64_t a, int64_t b, ir_loc loc) {
    int64_t r = 0;
    bool over = false;
    switch (op) {
    case '+': over = __builtin_add_overflow(a, b, &r); break;
    case '-': over = __builtin_sub_overflow(a, b, &r); break;
    case '*': over = __builtin_mul_overflow(a, b, &r); break;
    case '/':
        if (b == 0) return err(c, loc, "division by zero"), ERR;
        if (a == INT64_MIN && b == -1) over = true;
        else r = a / b - ((a % b != 0) && ((a < 0) != (b < 0))); /* rounds down */
        break;
    }
    if (over) return err(c, loc, "integer overflow in '%c'", op), ERR;
    return vint(r);
}

static double num(value v) { return v.k == V_INT ? (double)v.i : v.f; }

static value fold_float(char op, double a, double b) {
    switch (op) {
    case '+': return vfloat(a + b);
    case '-': return vfloat(a - b);
    case '*': return vfloat(a * b);
    }
    return vfloat(a / b);
}

static value tensor_binary(elab *c, char op, value a, value b, ir_loc loc) {
    static const ir_op ops[] = {['+'] = OP_ADD, ['-'] = OP_SUB, ['*'] = OP_MUL, ['/'] = OP_DIV};
    if (a.k != V_TENSOR) a = constant(c, num(a), node(c, b.node)->dtype, loc);
    if (b.k != V_TENSOR) b = constant(c, num(b), node(c, a.node)->dtype, loc);
    if (a.k == V_ERR || b.k == V_ERR) return ERR;
    return finish(c, add(c, ops[(unsigned char)op], (int[]){a.node, b.node}, 2, loc));
}

static bool is_num(value v) { return v.k == V_INT || v.k == V_FLOAT; }

static value binary(elab *c, const ast_expr *e) {
    value a = eval(c, e->lhs), b = eval(c, e->rhs);
    if (a.k == V_ERR || b.k == V_ERR) return ERR;
    if (a.k == V_INT && b.k == V_INT) return fold_int(c, e->op, a.i, b.i, e->loc);
    if (is_num(a) && is_num(b)) return fold_float(e->op, num(a), num(b));
    if ((a.k == V_TENSOR || is_num(a)) && (b.k == V_TENSOR || is_num(b))) return tensor_binary(c, e->op, a, b, e->loc);
    err(c, e->loc, "operator '%c' cannot take %s and %s", e->op, describe(c, a), describe(c, b));
    return ERR;
}

static value negate(elab *c, const ast_expr *e) {
    value a = eval(c, e->lhs);
    switch (a.k) {
    case V_ERR: return ERR;
    case V_INT:
        if (a.i == INT64_MIN) return err(c, e->loc, "integer overflow in '-'"), ERR;
        return vint(-a.i);
    case V_FLOAT: return vfloat(-a.f);
    case V_TENSOR: return finish(c, add(c, OP_NEG, &a.node, 1, e->loc));
    default: break;
    }
    err(c, e->loc, "cannot negate %s", describe(c, a));
    return ERR;
}

/* ---- calls ---- */

typedef struct {
    const char *name; /* keyword or NULL */
    value v;
    ir_loc loc;
} arg;

typedef struct {
    arg *a;
    int n;
    const char *callee; /* for messages */
    ir_loc loc;
} call;

static value call_value(elab *c, value f, call *k);

static value eval_call(elab *c, const ast_expr *e) {
    value f = eval(c, e->lhs);
    int n = 0;
    for (const ast_arg *a = e->args; a; a = a->next) n++;
    call k = {xrealloc(NULL, (size_t)n * sizeof(arg)), 0, e->lhs->kind == EX_NAME ? e->lhs->name : NULL, e->loc};
    bool seen_kw = false, bad = f.k == V_ERR;
    for (const ast_arg *a = e->args; a; a = a->next) {
        arg *x = &k.a[k.n++];
        *x = (arg){a->name, eval(c, a->value), a->loc};
        bad |= x->v.k == V_ERR;
        if (!a->name && seen_kw) err(c, a->loc, "positional argument after keyword arguments"), bad = true;
        seen_kw |= a->name != NULL;
    }
    if (e == c->watch) c->watched = k.n > 0 && !k.a[0].name ? k.a[0].v : ERR;
    value r = bad ? ERR : call_value(c, f, &k);
    free(k.a);
    return r;
}

static value eval(elab *c, const ast_expr *e) {
    switch (e->kind) {
    case EX_INT: return vint(e->ival);
    case EX_FLOAT: return vfloat(e->fval);
    case EX_STR: return (value){.k = V_STR, .s = e->name};
    case EX_NAME: return lookup(c, e->name, e->loc);
    case EX_BINARY: return binary(c, e);
    case EX_NEG: return negate(c, e);
    case EX_CALL: return eval_call(c, e);
    }
    return ERR;
}

/* Appends the source form of a dimension expression to buf at *k. */
static void expr_text(const ast_expr *e, char *buf, size_t cap, size_t *k) {
    if (*k >= cap) return;
    switch (e->kind) {
    case EX_INT: *k += (size_t)snprintf(buf + *k, cap - *k, "%lld", (long long)e->ival); return;
    case EX_NAME: *k += (size_t)snprintf(buf + *k, cap - *k, "%s", e->name); return;
    case EX_NEG: *k += (size_t)snprintf(buf + *k, cap - *k, "-"), expr_text(e->lhs, buf, cap, k); return;
    case EX_BINARY:
        expr_text(e->lhs, buf, cap, k);
        if (*k < cap) *k += (size_t)snprintf(buf + *k, cap - *k, "%c", e->op);
        expr_text(e->rhs, buf, cap, k);
        return;
    default: *k += (size_t)snprintf(buf + *k, cap - *k, "?"); return;
    }
}

static const char *type_text(elab *c, const ast_type *t) {
    if (t->kind != TY_TENSOR || t->rank < 0)
        return t->kind == TY_TENSOR ? ir_dtype_name(t->dtype) : (const char *[]){"any", "int", "float", "str", "fn"}[t->kind];
    char buf[256];
    size_t k = (size_t)snprintf(buf, sizeof buf, "%s[", ir_dtype_name(t->dtype));
    for (const ast_expr *e = t->dims; e && k < sizeof buf; e = e->next) {
        if (e != t->dims) k += (size_t)snprintf(buf + k, sizeof buf - k, ", ");
        expr_text(e, buf, sizeof buf, &k);
    }
    if (k < sizeof buf) snprintf(buf + k, sizeof buf - k, "]");
    return fmt(c, "%s", buf);
}

/* Matches a tensor against a declared type, binding new dimension names. */
static bool match_dims(elab *c, const ast_type *t, const ir_node *n) {
    if (n->dtype != (ir_dtype)t->dtype) return false;
    if (t->rank < 0) return true;
    if (n->shape.rank != t->rank) return false;
    int i = 0;
    for (const ast_expr *e = t->dims; e; e = e->next, i++) {
        if (e->kind == EX_NAME && !local(c->fr, e->name)) {
            bind(c->fr, e->name, vint(n->shape.dim[i]));
            continue;
        }
        value d = eval(c, e);
        if (d.k == V_ERR) continue;
        if (d.k != V_INT) return err(c, e->loc, "a dimension must be an int, got %s", describe(c, d)), false;
        if (d.i != n->shape.dim[i]) return false;
    }
    return true;
}

/* Checks (and converts) an argument against its parameter's type. */
static bool check_arg(elab *c, const ast_decl *fn, const ast_param *p, value *v, ir_loc loc) {
    const ast_type *t = p->type;
    if (!t || v->k == V_ERR) return true;
    bool ok = false;
    switch (t->kind) {
    case TY_ANY: ok = true; break;
    case TY_INT: ok = v->k == V_INT; break;
    case TY_FLOAT: ok = is_num(*v); if (ok) *v = vfloat(num(*v)); break;
    case TY_STR: ok = v->k == V_STR; break;
    case TY_FN: ok = v->k == V_FN || v->k == V_PRIM || v->k == V_BUILTIN; break;
    case TY_TENSOR:
        ok = v->k == V_TENSOR && match_dims(c, t, node(c, v->node));
        break;
    }
    if (!ok)
        err_raw(c, loc, "argument '%s' of '%s' must be %s, got %s", p->name, fn->name, type_text(c, t), describe(c, *v));
    return ok;
}

/* Finds the argument for parameter `idx` named `name`; marks it used. */
static arg *take_arg(call *k, int idx, const char *name, bool *used) {
    int pos = 0;
    for (int i = 0; i < k->n; i++) {
        if (k->a[i].name ? !strcmp(k->a[i].name, name) : pos++ == idx) {
            used[i] = true;
            return &k->a[i];
        }
    }
    return NULL;
}

/* Binds every parameter of fn in the current frame; false after errors. */
static bool bind_params(elab *c, const ast_decl *fn, call *k) {
    bool ok = true, *used = xrealloc(NULL, (size_t)k->n * sizeof *used + 1);
    memset(used, 0, (size_t)k->n * sizeof *used);
    int idx = 0;
    for (const ast_param *p = fn->params; p; p = p->next, idx++) {
        arg *a = take_arg(k, idx, p->name, used);
        value v;
        if (a) v = a->v;
        else if (p->dflt) v = eval(c, p->dflt);
        else {
            err_raw(c, k->loc, "missing argument '%s' of '%s'", p->name, fn->name);
            ok = false;
            continue;
        }
        ok &= check_arg(c, fn, p, &v, a ? a->loc : k->loc);
        bind(c->fr, p->name, v);
    }
    int n_pos = 0;
    for (int i = 0; i < k->n; i++) n_pos += !k->a[i].name;
    for (int i = 0; i < k->n; i++) {
        if (used[i]) continue;
        ok = false;
        if (!k->a[i].name) {
            err_raw(c, k->a[i].loc, "'%s' takes at most %d argument%s, got %d", fn->name, idx, idx == 1 ? "" : "s", n_pos);
            break;
        }
        bool known = false;
        for (const ast_param *p = fn->params; p; p = p->next) known |= !strcmp(p->name, k->a[i].name);
        if (known) err_raw(c, k->a[i].loc, "argument '%s' of '%s' is given twice", k->a[i].name, fn->name);
        else err_raw(c, k->a[i].loc, "'%s' has no parameter named '%s'", fn->name, k->a[i].name);
    }
    free(used);
    return ok;
}

static value run_body(elab *c, const ast_stmt *s);

static value call_fn(elab *c, const ast_decl *fn, call *k) {
    if (c->depth >= MAX_CALL_DEPTH) {
        err(c, k->loc, "calls nested more than %d deep (a recursive function?)", MAX_CALL_DEPTH);
        return ERR;
    }
    /* argument errors point into the caller */
    k->loc = at(c, k->loc);
    for (int i = 0; i < k->n; i++) k->a[i].loc = at(c, k->a[i].loc);
    scope sc = {c->fr->scope, fn->name, NULL};
    frame f = {.caller = c->fr, .fn = fn, .in_module = fn->in_module, .user_loc = at(c, k->loc), .scope = &sc};
    c->fr = &f, c->depth++;
    value r = bind_params(c, fn, k) ? run_body(c, fn->body) : ERR;
    c->fr = f.caller, c->depth--;
    free(f.b);
    return r;
}

/* ---- builtins ---- */

static bool want(elab *c, call *k, int n, const char *name) {
    for (int i = 0; i < k->n; i++)
        if (k->a[i].name) return err(c, k->a[i].loc, "'%s' takes no keyword arguments", name), false;
    if (k->n != n) return err(c, k->loc, "'%s' takes %d argument%s, got %d", name, n, n == 1 ? "" : "s", k->n), false;
    return true;
}

static bool want_kind(elab *c, const arg *a, vkind kind, const char *name) {
    if (a->v.k == kind) return true;
    err(c, a->loc, "argument of '%s' must be %s, got %s", name, kind == V_INT ? "an int" : "a tensor", describe(c, a->v));
    return false;
}

static value call_builtin(elab *c, builtin_fn b, call *k) {
    const char *name = builtin_names[b];
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
        return err(c, k->a[1].loc, "axis %lld is out of range for rank %d", (long long)k->a[1].v.i, n->shape.rank), ERR;
    return vint(n->shape.dim[i]);
}

/* ---- primitives ---- */

/* Ops whose output shape is given by the caller (trailing int arguments). */
static bool shape_given(ir_op op) {
    return op == OP_RESHAPE || op == OP_BROADCAST_TO || op == OP_CONV2D_GRAD_INPUT || op == OP_CONV2D_GRAD_FILTER ||
           op == OP_VIEW;
}

static bool is_window(ir_op op) { return ir_op_iattr_index(op, "pad_t") >= 0; }

/* Keras "same" padding of one axis: output ceil(d / s). */
static void same_pad(int64_t d, int64_t k, int64_t s, int64_t *before, int64_t *after) {
    int64_t out = (d + s - 1) / s, total = (out - 1) * s + k - d;
    if (total < 0) total = 0;
    *before = total / 2, *after = total - total / 2;
}

static bool apply_padding(elab *c, ir_node *n, const arg *a, const char *name) {
    if (a->v.k != V_STR || (strcmp(a->v.s, "same") && strcmp(a->v.s, "valid")))
        return err(c, a->loc, "padding of '%s' must be \"valid\" or \"same\"", name), false;
    if (!strcmp(a->v.s, "valid")) return true;
    int s = ir_op_iattr_index(n->op, "stride_h"), p = ir_op_iattr_index(n->op, "pad_t");
    int kh = ir_op_iattr_index(n->op, "k_h");
    const ir_node *x = node(c, n->in[0]), *w = n->n_in > 1 ? node(c, n->in[1]) : NULL;
    if (x->shape.rank != 4 || (kh < 0 && (!w || w->shape.rank != 4)) || n->iattr[s] < 1 || n->iattr[s + 1] < 1)
        return true; /* the shape rule reports it */
    int64_t k_h = kh >= 0 ? n->iattr[kh] : w->shape.dim[0], k_w = kh >= 0 ? n->iattr[kh + 1] : w->shape.dim[1];
    same_pad(x->shape.dim[1], k_h, n->iattr[s], &n->iattr[p], &n->iattr[p + 2]);
    same_pad(x->shape.dim[2], k_w, n->iattr[s + 1], &n->iattr[p + 1], &n->iattr[p + 3]);
    return true;
}

/* Sets one keyword attribute of a primitive node. */
static bool prim_attr(elab *c, ir_node *n, const arg *a, const char *name) {
    int i = ir_op_iattr_index(n->op, a->name), f = ir_op_fattr_index(n->op, a->name);
    if (!strcmp(a->name, "strides") && ir_op_iattr_index(n->op, "stride_h") >= 0)
        i = ir_op_iattr_index(n->op, "stride_h");
    if (n->op == OP_CAST && !strcmp(a->name, "dtype")) {
        int t = a->v.k == V_STR ? ir_dtype_from_name(a->v.s) : -1;
        if (t < 0) return err(c, a->loc, "dtype of '%s' must be a dtype name such as \"f32\"", name), false;
        return n->dtype = (ir_dtype)t, true;
    }
    if (i >= 0) {
        if (a->v.k != V_INT) return err(c, a->loc, "attribute '%s' of '%s' must be an int, got %s", a->name, name, describe(c, a->v)), false;
        if (a->v.i < -MAX_DIM || a->v.i > MAX_DIM)
            return err(c, a->loc, "attribute '%s' of '%s' is out of range", a->name, name), false;
        n->iattr[i] = a->v.i;
        if (!strcmp(a->name, "strides")) n->iattr[i + 1] = a->v.i;
        return true;
    }
    if (f >= 0) {
        if (!is_num(a->v)) return err(c, a->loc, "attribute '%s' of '%s' must be a number, got %s", a->name, name, describe(c, a->v)), false;
        n->fattr[f] = num(a->v);
        return true;
    }
    return err(c, a->loc, "'%s' has no attribute '%s'", name, a->name), false;
}

/* Trailing int arguments of a shape-given op: the output shape (one -1 allowed for reshape). */
static bool prim_shape(elab *c, ir_node *n, const arg *a, int n_dims, const char *name) {
    if (n_dims > IR_MAX_RANK) return err(c, a[IR_MAX_RANK].loc, "'%s' takes at most %d dimensions", name, IR_MAX_RANK), false;
    int infer_at = -1;
    int64_t known = 1;
    n->shape.rank = n_dims;
    for (int i = 0; i < n_dims; i++) {
        if (a[i].v.k != V_INT) return err(c, a[i].loc, "a dimension of '%s' must be an int, got %s", name, describe(c, a[i].v)), false;
        int64_t d = a[i].v.i;
        if (d == -1 && n->op == OP_RESHAPE && infer_at < 0) infer_at = i, d = 1;
        else if (d < 1 || d > MAX_DIM) return err(c, a[i].loc, "dimension %lld of '%s' is out of range (1 to 2^31)", (long long)d, name), false;
        n->shape.dim[i] = d;
        if (__builtin_mul_overflow(known, d, &known) || known >= IR_MAX_ELEMENTS)
            return err(c, a[i].loc, "the shape given to '%s' is too large: 2^40 elements or more", name), false;
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
 * directory, draws the same ones. Below 2^40, as every attribute (ir/verify.c). */
static int64_t call_site_seed(elab *c, ir_loc loc) {
    const char *file = loc.file ? loc.file : "", *base = strrchr(file, '/'); /* not the directory: any checkout */
    const char *key = fmt(c, "%s@%s:%d:%d", scope_path(c, c->fr->scope), base ? base + 1 : file, loc.line, loc.col);
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (const char *p = key; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211u;
    return (int64_t)(h & ((UINT64_C(1) << 40) - 1));
}

static value call_prim(elab *c, ir_op op, call *k) {
    const char *name = fmt(c, "prim.%s", ir_ops[op].name);
    if (ir_ops[op].flags & OPF_SOURCE) return err(c, k->loc, "'%s' cannot be called", name), ERR;
    int n_pos = 0, in[MAX_PRIM_INPUTS];
    while (n_pos < k->n && !k->a[n_pos].name) n_pos++;
    int n_in = count_inputs(op, n_pos), arity = ir_ops[op].arity;
    if (n_in > MAX_PRIM_INPUTS) return err(c, k->loc, "'%s' takes at most %d inputs", name, MAX_PRIM_INPUTS), ERR;
    if (arity >= 0 && n_in != arity)
        return err(c, k->loc, "'%s' takes %d input%s, got %d", name, arity, arity == 1 ? "" : "s", n_pos), ERR;
    for (int i = 0; i < n_in; i++) {
        value v = k->a[i].v;
        if (is_num(v)) v = constant(c, num(v), IR_F32, k->a[i].loc);
        else if (v.k != V_TENSOR) return err(c, k->a[i].loc, "input %d of '%s' must be a tensor, got %s", i + 1, name, describe(c, v)), ERR;
        if (v.k == V_ERR) return ERR;
        in[i] = v.node;
    }
    int id = add(c, op, in, n_in, k->loc);
    ir_node *n = node(c, id);
    int s = ir_op_iattr_index(op, "stride_h");
    if (s >= 0) n->iattr[s] = n->iattr[s + 1] = 1;
    if (shape_given(op) && !prim_shape(c, n, k->a + n_in, n_pos - n_in, name)) return ERR;
    const arg *padding = NULL;
    for (int i = n_pos; i < k->n; i++) {
        if (!strcmp(k->a[i].name, "padding") && is_window(op)) padding = &k->a[i];
        else if (!prim_attr(c, n = node(c, id), &k->a[i], name)) return ERR;
    }
    n = node(c, id);
    int kh = ir_op_iattr_index(op, "k_h");
    if (kh >= 0 && (n->iattr[kh] < 1 || n->iattr[kh + 1] < 1))
        return err(c, k->loc, "'%s' needs a window k_h, k_w >= 1", name), ERR;
    if (padding && !apply_padding(c, n, padding, name)) return ERR;
    if (op == OP_DROPOUT && n->iattr[0] < 0) n->iattr[0] = call_site_seed(c, k->loc);
    return finish(c, id);
}

static value call_value(elab *c, value f, call *k) {
    switch (f.k) {
    case V_FN: return call_fn(c, f.fn, k);
    case V_PRIM: return call_prim(c, (ir_op)f.i, k);
    case V_BUILTIN: return call_builtin(c, (builtin_fn)f.i, k);
    case V_ERR: return ERR;
    default: break;
    }
    if (k->callee) err(c, k->loc, "'%s' is %s, not a function", k->callee, describe(c, f));
    else err(c, k->loc, "cannot call %s", describe(c, f));
    return ERR;
}

/* ---- statements ---- */

/* The declared shape of an input or param: every dimension a positive int. */
static bool eval_shape(elab *c, const ast_type *t, const char *what, const char *name, ir_shape *s) {
    if (t->kind != TY_TENSOR || t->rank < 0)
        return err(c, t->loc, "%s '%s' needs a tensor type with dimensions, such as f32[10]", what, name), false;
    if (t->rank > IR_MAX_RANK) return err(c, t->loc, "%s '%s' has rank %d; at most %d is supported", what, name, t->rank, IR_MAX_RANK), false;
    s->rank = t->rank;
    int i = 0;
    bool ok = true;
    for (const ast_expr *e = t->dims; e; e = e->next, i++) {
        value d = eval(c, e);
        if (d.k == V_ERR) ok = false;
        else if (d.k != V_INT) err(c, e->loc, "a dimension must be an int, got %s", describe(c, d)), ok = false;
        else if (d.i < 1 || d.i > MAX_DIM) err(c, e->loc, "dimension %lld of %s '%s' is out of range (1 to 2^31)", (long long)d.i, what, name), ok = false;
        else s->dim[i] = d.i;
    }
    int64_t numel;
    char b[128];
    if (ok && !checked_numel(s, &numel))
        return err(c, t->loc, "%s '%s' is too large: %s has 2^40 elements or more", what, name,
                   ir_type_str((ir_dtype)t->dtype, s, b, sizeof b)), false;
    return ok;
}

/* Keras fans: dense [k, u] -> (k, u); conv HWIO -> (kh*kw*cin, kh*kw*cout). */
static void fans(const ir_shape *s, int64_t *in, int64_t *out) {
    int r = s->rank;
    int64_t rf = 1;
    for (int i = 0; i < r - 2; i++) rf *= s->dim[i];
    *in = r == 0 ? 1 : r == 1 ? s->dim[0] : s->dim[r - 2] * rf;
    *out = r == 0 ? 1 : r == 1 ? s->dim[0] : s->dim[r - 1] * rf;
}

static void stmt_param(elab *c, const ast_stmt *st) {
    ir_shape s;
    value init = eval(c, st->expr);
    bool ok = eval_shape(c, st->type, "param", st->name, &s);
    if (init.k != V_INIT && init.k != V_ERR)
        err(c, st->expr->loc, "initializer of param '%s' must be zeros, ones, glorot_uniform or he_normal", st->name);
    if (!ok || init.k != V_INIT) return bind(c->fr, st->name, ERR);
    const char *path = scope_path(c, c->fr->scope);
    const char *full = ir_intern(c->m, *path ? fmt(c, "%s/%s", path, st->name) : st->name);
    for (int i = 0; i < c->m->n_params; i++)
        if (node(c, c->m->params[i])->name == full) {
            err(c, st->name_loc, "param '%s' is declared twice", full);
            return bind(c->fr, st->name, ERR);
        }
    int id = add(c, OP_PARAM, NULL, 0, st->loc);
    ir_node *n = node(c, id);
    n->dtype = (ir_dtype)st->type->dtype, n->shape = s, n->name = full, n->iattr[0] = init.i;
    fans(&s, &n->iattr[1], &n->iattr[2]);
    c->m->params = xrealloc(c->m->params, (size_t)(c->m->n_params + 1) * sizeof *c->m->params);
    c->m->params[c->m->n_params++] = id;
    bind(c->fr, st->name, finish(c, id));
}

static void stmt_assign(elab *c, const ast_stmt *st) {
    if (st->suffix != BATCH_PLAIN)
        err(c, st->loc, "'%s' is only allowed on batch in a train block", st->suffix == BATCH_GLOBAL ? "global" : "per replica");
    bind(c->fr, st->name, eval(c, st->expr));
}

static const char *const stmt_names[] = {"assignment", "param", "return", "input", "loss", "metric", "output", "setting"};

/* fn body: assignments, params and a return. */
static value run_body(elab *c, const ast_stmt *s) {
    for (; s; s = s->next) {
        switch (s->kind) {
        case ST_ASSIGN: stmt_assign(c, s); break;
        case ST_PARAM: stmt_param(c, s); break;
        case ST_RETURN: {
            value v = eval(c, s->expr);
            if (s->next) err(c, s->next->loc, "statement after 'return'");
            return v;
        }
        default: err(c, s->loc, "'%s' is not allowed in a function", stmt_names[s->kind]); break;
        }
    }
    err(c, c->fr->user_loc, "'%s' returns no value", c->fr->fn->name);
    return ERR;
}

/* ---- the model block ---- */

typedef struct {
    bool has_loss;
    const ast_stmt *output;
} model_state;

static void stmt_input(elab *c, const ast_stmt *st) {
    ir_shape s;
    if (!eval_shape(c, st->type, "input", st->name, &s)) return bind(c->fr, st->name, ERR);
    const char *name = ir_intern(c->m, st->name);
    for (int i = 0; i < c->m->n_inputs; i++)
        if (node(c, c->m->inputs[i])->name == name) {
            err(c, st->name_loc, "input '%s' is declared twice", name);
            return bind(c->fr, st->name, ERR);
        }
    int id = add(c, OP_INPUT, NULL, 0, st->loc);
    ir_node *n = node(c, id);
    n->dtype = (ir_dtype)st->type->dtype, n->shape = s, n->name = name;
    c->m->inputs = xrealloc(c->m->inputs, (size_t)(c->m->n_inputs + 1) * sizeof *c->m->inputs);
    c->m->inputs[c->m->n_inputs++] = id;
    bind(c->fr, st->name, finish(c, id));
}

/* A loss or metric is the batch mean of a per-example f32[batch]; returns that vector. */
static int per_example(elab *c, value v, const ast_stmt *st, const char *what) {
    if (v.k == V_ERR) return -1;
    char b[128];
    if (v.k == V_TENSOR) {
        const ir_node *n = node(c, v.node);
        const ir_node *x = n->op == OP_REDUCE_MEAN ? node(c, n->in[0]) : NULL;
        if (x && n->iattr[0] == 1 && !n->iattr[1] && x->dtype == IR_F32 && x->shape.rank == 1 &&
            x->shape.dim[0] == c->m->batch_per_replica)
            return n->in[0];
    }
    snprintf(b, sizeof b, "%s", describe(c, v));
    err(c, st->expr->loc, "the %s must be the batch mean of a per-example f32[%lld], got %s", what,
        (long long)c->m->batch_per_replica, b);
    return -1;
}

static void stmt_loss(elab *c, const ast_stmt *st, model_state *ms) {
    if (ms->has_loss) return err(c, st->loc, "the model has a second loss");
    ms->has_loss = true;
    c->watch = st->expr, c->watched = ERR;
    value v = eval(c, st->expr);
    c->watch = NULL;
    c->m->loss = per_example(c, v, st, "loss");
    if (!ms->output && c->watched.k == V_TENSOR) c->m->output = c->watched.node;
}

static void stmt_metric(elab *c, const ast_stmt *st) {
    const char *name = ir_intern(c->m, st->name);
    for (int i = 0; i < c->m->n_metrics; i++)
        if (c->m->metrics[i].name == name) return err(c, st->name_loc, "metric '%s' is declared twice", name);
    int id = per_example(c, eval(c, st->expr), st, "metric");
    if (id < 0) return;
    if (c->m->n_metrics == IR_MAX_METRICS)
        return err(c, st->name_loc, "metric '%s' is one too many: a model has at most %d metrics", name, IR_MAX_METRICS);
    c->m->metrics = xrealloc(c->m->metrics, (size_t)(c->m->n_metrics + 1) * sizeof *c->m->metrics);
    c->m->metrics[c->m->n_metrics++] = (ir_metric){name, id};
}

static void stmt_output(elab *c, const ast_stmt *st, model_state *ms) {
    if (ms->output) return err(c, st->loc, "the model has a second output");
    ms->output = st;
    value v = lookup(c, st->name, st->name_loc);
    if (v.k == V_ERR) return;
    if (v.k != V_TENSOR) return err(c, st->name_loc, "output '%s' must be a tensor, got %s", st->name, describe(c, v));
    c->m->output = v.node;
}

/* model -> statements over inputs, with `batch` bound to the per-replica batch. */
static void elab_model(elab *c, const ast_decl *model) {
    scope root = {NULL, "", ""};
    frame f = {.scope = &root};
    model_state ms = {0};
    c->fr = &f;
    bind(&f, "batch", vint(c->m->batch_per_replica));
    for (const ast_stmt *s = model->body; s; s = s->next) {
        switch (s->kind) {
        case ST_ASSIGN: stmt_assign(c, s); break;
        case ST_PARAM: stmt_param(c, s); break;
        case ST_INPUT: stmt_input(c, s); break;
        case ST_LOSS: stmt_loss(c, s, &ms); break;
        case ST_METRIC: stmt_metric(c, s); break;
        case ST_OUTPUT: stmt_output(c, s, &ms); break;
        default: err(c, s->loc, "'%s' is not allowed in a model", stmt_names[s->kind]); break;
        }
    }
    if (!ms.has_loss && !ms.output)
        err(c, model->name_loc, "model '%s' has neither a loss nor an output", model->name);
    c->fr = NULL;
    free(f.b);
}

/* ---- the train block ---- */

typedef struct {
    const char *name;
    size_t offset;
    unsigned kinds; /* mask of optimizers that take it */
} hyper;

#define B(k) (1u << OPT_##k)
static const hyper hypers[] = {
    {"learning_rate", offsetof(ir_optimizer, lr), B(SGD) | B(ADAM) | B(ADAMW) | B(RMSPROP)},
    {"momentum", offsetof(ir_optimizer, momentum), B(SGD) | B(RMSPROP)},
    {"nesterov", offsetof(ir_optimizer, nesterov), B(SGD)},
    {"beta_1", offsetof(ir_optimizer, beta1), B(ADAM) | B(ADAMW)},
    {"beta_2", offsetof(ir_optimizer, beta2), B(ADAM) | B(ADAMW)},
    {"epsilon", offsetof(ir_optimizer, epsilon), B(ADAM) | B(ADAMW) | B(RMSPROP)},
    {"weight_decay", offsetof(ir_optimizer, weight_decay), B(ADAMW)},
    {"rho", offsetof(ir_optimizer, rho), B(RMSPROP)},
};

/* Keras defaults of each optimizer. */
static ir_optimizer optimizer_defaults(ir_optimizer_kind k) {
    ir_optimizer o = {.kind = k, .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-7};
    if (k == OPT_SGD) o.lr = 0.01;
    if (k == OPT_ADAMW) o.weight_decay = 0.004;
    if (k == OPT_RMSPROP) o.rho = 0.9;
    return o;
}

static void set_hyper(elab *c, ir_optimizer *o, const char *opt, const char *name, const ast_expr *e, ir_loc loc) {
    const hyper *h = NULL;
    for (size_t i = 0; i < sizeof hypers / sizeof *hypers; i++)
        if (!strcmp(hypers[i].name, name) && hypers[i].kinds >> o->kind & 1) h = &hypers[i];
    if (!h) return err(c, loc, "'%s' has no hyper-parameter '%s'", opt, name);
    value v = eval(c, e);
    if (v.k == V_ERR) return;
    if (!is_num(v)) return err(c, e->loc, "hyper-parameter '%s' must be a number, got %s", name, describe(c, v));
    if (!strcmp(name, "nesterov")) *(bool *)((char *)o + h->offset) = num(v) != 0;
    else if (num(v) < 0 || (!strcmp(name, "learning_rate") && num(v) == 0))
        err(c, e->loc, "hyper-parameter '%s' must be %s, got %g", name, name[0] == 'l' ? "positive" : "non-negative", num(v));
    else *(double *)((char *)o + h->offset) = num(v);
}

/* optimizer = NAME | NAME(hyper: value, ...) */
static void train_optimizer(elab *c, const ast_expr *e) {
    const ast_expr *callee = e->kind == EX_CALL ? e->lhs : e;
    int k = -1;
    if (callee->kind == EX_NAME)
        for (int i = 0; i < OPT_COUNT; i++)
            if (!strcmp(callee->name, ir_optimizer_names[i])) k = i;
    if (k < 0) return err(c, callee->loc, "unknown optimizer; expected sgd, adam, adamw or rmsprop");
    c->m->opt = optimizer_defaults((ir_optimizer_kind)k);
    int pos = 0;
    for (const ast_arg *a = e->kind == EX_CALL ? e->args : NULL; a; a = a->next) {
        if (!a->name && pos++ > 0) err(c, a->loc, "'%s' takes only learning_rate without a name", callee->name);
        else set_hyper(c, &c->m->opt, callee->name, a->name ? a->name : "learning_rate", a->value, a->loc);
    }
}

/* batch = INT per replica | INT global */
static void train_batch(elab *c, const ast_stmt *s, int64_t *per_replica, int64_t *global) {
    value v = eval(c, s->expr);
    if (v.k == V_ERR) return;
    if (v.k != V_INT || v.i < 1 || v.i > MAX_DIM)
        return err(c, s->expr->loc, "batch must be a positive int, got %s", v.k == V_INT ? fmt(c, "%lld", (long long)v.i) : describe(c, v));
    if (s->suffix == BATCH_PLAIN) return err(c, s->loc, "say 'batch = %lld per replica' or 'batch = %lld global'", (long long)v.i, (long long)v.i);
    *(s->suffix == BATCH_PER_REPLICA ? per_replica : global) = v.i;
}

static bool elab_train(elab *c, const ast_decl *t, int n_dev, int64_t *global) {
    bool has_opt = false, has_batch = false;
    int64_t per = 0, glob = 0;
    scope root = {NULL, "", ""};
    frame f = {.scope = &root};
    c->fr = &f;
    for (const ast_stmt *s = t->body; s; s = s->next) {
        bool opt = s->kind == ST_ASSIGN && !strcmp(s->name, "optimizer"), batch = s->kind == ST_ASSIGN && !strcmp(s->name, "batch");
        if (s->kind != ST_ASSIGN) err(c, s->loc, "'%s' is not allowed in a train block", stmt_names[s->kind]);
        else if ((opt && has_opt) || (batch && has_batch)) err(c, s->loc, "'%s' is set twice", s->name);
        else if (opt) train_optimizer(c, s->expr), has_opt = true;
        else if (batch) train_batch(c, s, &per, &glob), has_batch = true;
        else err(c, s->loc, "unknown train setting '%s'; expected optimizer or batch", s->name);
        if (opt && s->suffix != BATCH_PLAIN) err(c, s->loc, "'per replica' and 'global' only apply to batch");
    }
    if (!has_opt) err(c, t->name_loc, "train block '%s' has no optimizer", t->name);
    if (!has_batch) err(c, t->name_loc, "train block '%s' has no batch", t->name);
    c->fr = NULL;
    free(f.b);
    *global = per ? per * n_dev : glob;
    return has_opt && has_batch;
}

/* Global and per-replica batch from the options, else the train block. */
static void set_batch(elab *c, const ast_decl *train, const pass_options *o, int n_dev) {
    int64_t global = 0;
    bool ok = !train || elab_train(c, train, n_dev, &global);
    if (o && o->global_batch > 0) global = o->global_batch;
    if (!global) global = n_dev;
    if (ok && global % n_dev) {
        ir_loc loc = train ? train->loc : (ir_loc){0};
        err(c, loc, "global batch %lld is not divisible by %d replicas", (long long)global, n_dev);
    }
    c->m->global_batch = global;
    c->m->batch_per_replica = global / n_dev > 0 ? global / n_dev : 1;
}

/* ---- files and modules ---- */

static bool valid_module_name(const char *s) {
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return false;
    return *s != 0;
}

static void load_file(elab *c, const char *path, const char *module, ir_loc use_loc) {
    for (int i = 0; i < c->n_files; i++)
        if (module && c->files[i].module && !strcmp(c->files[i].module, module)) return;
    char *text = NULL;
    for (int i = 0; c->o && i < c->o->n_sources && !text; i++)
        if (!strcmp(c->o->sources[i].path, path)) text = strdup(c->o->sources[i].text);
    if (!text) text = fe_read_file(path);
    if (!text) {
        const char *why = errno == EILSEQ ? "it holds a NUL byte (not model source)" : strerror(errno);
        if (module) err(c, use_loc, "no module named '%s' (%s: %s)", module, path, why);
        else err(c, (ir_loc){0}, "%s: cannot read: %s", path, why);
        return;
    }
    const char *ipath = ir_intern(c->m, path);
    ir_diag_add_source(c->d, ipath, text);
    c->files = xrealloc(c->files, (size_t)(c->n_files + 1) * sizeof *c->files);
    source_file *f = &c->files[c->n_files++];
    *f = (source_file){ipath, text, NULL, module};
    f->ast = fe_parse(ipath, text, c->a, c->d, module != NULL);
}

/* Reads the main file and, transitively, every module it uses. */
static void load_all(elab *c, const char *path) {
    load_file(c, path, NULL, (ir_loc){0});
    for (int i = 0; i < c->n_files; i++)
        for (const ast_decl *d = c->files[i].ast->decls; d; d = d->next) {
            if (d->kind != DECL_USE) continue;
            if (!valid_module_name(d->name)) {
                err(c, d->name_loc, "no module named '%s'", d->name);
                continue;
            }
            const char *p = fmt(c, "%s/%s.mg", c->stdlib_dir, d->name);
            load_file(c, p, d->name, d->name_loc);
        }
}

/* Functions of every file (the main file's first); checks parameter lists. */
static void collect_fns(elab *c) {
    for (int i = 0; i < c->n_files; i++)
        for (const ast_decl *d = c->files[i].ast->decls; d; d = d->next) {
            if (d->kind != DECL_FN) continue;
            const ast_decl *prev = find_fn(c, d->name, d->loc.file);
            if (prev && !strcmp(prev->loc.file, d->loc.file))
                err(c, d->name_loc, "function '%s' is defined twice", d->name);
            for (const ast_param *p = d->params; p; p = p->next)
                for (const ast_param *q = d->params; q != p; q = q->next)
                    if (!strcmp(p->name, q->name)) err(c, p->loc, "parameter '%s' of '%s' appears twice", p->name, d->name);
            c->fns = xrealloc(c->fns, (size_t)(c->n_fns + 1) * sizeof *c->fns);
            c->fns[c->n_fns++] = d;
        }
}

/* The main file's model and train blocks (one each). */
static bool find_blocks(elab *c, const ast_decl **model, const ast_decl **train) {
    *model = *train = NULL;
    for (const ast_decl *d = c->files[0].ast->decls; d; d = d->next) {
        const ast_decl **slot = d->kind == DECL_MODEL ? model : d->kind == DECL_TRAIN ? train : NULL;
        if (!slot) continue;
        if (*slot) err(c, d->loc, "a second %s block; a program has one", d->kind == DECL_MODEL ? "model" : "train");
        else *slot = d;
    }
    for (int i = 1; i < c->n_files; i++)
        for (const ast_decl *d = c->files[i].ast->decls; d; d = d->next)
            if (d->kind == DECL_MODEL || d->kind == DECL_TRAIN)
                err(c, d->loc, "a module cannot hold %s blocks", d->kind == DECL_MODEL ? "model" : "train");
    if (!*model) err(c, (ir_loc){0}, "%s: no model block", c->files[0].path);
    if (*model && *train && strcmp((*model)->name, (*train)->name))
        err(c, (*train)->name_loc, "train block '%s' names no model; the model is '%s'", (*train)->name, (*model)->name);
    return *model != NULL;
}

static void record_sources(elab *c) {
    ir_module *m = c->m;
    m->sources = xrealloc(NULL, (size_t)c->n_files * sizeof *m->sources);
    m->n_sources = c->n_files;
    for (int i = 0; i < c->n_files; i++)
        m->sources[i] = (ir_source){c->files[i].path, ir_intern(m, c->files[i].text)};
}

static void elab_program(elab *c, const pass_options *o) {
    const ast_decl *model, *train;
    collect_fns(c);
    if (!find_blocks(c, &model, &train)) return;
    int n_dev = o && o->n_devices > 0 ? o->n_devices : 1;
    c->m->model_name = ir_intern(c->m, model->name);
    c->m->has_train = train != NULL;
    c->m->opt = optimizer_defaults(OPT_ADAM);
    set_batch(c, train, o, n_dev);
    elab_model(c, model);
}

ir_module *pass_elaborate(const char *path, const char *stdlib_dir, ir_diag *d, const pass_options *o) {
    elab c = {.m = ir_module_new(), .d = d, .a = ast_arena_new(), .stdlib_dir = stdlib_dir ? stdlib_dir : "stdlib", .o = o};
    int errors = ir_diag_errors(d);
    c.m->source_file = ir_intern(c.m, path);
    load_all(&c, path);
    if (ir_diag_errors(d) == errors) elab_program(&c, o);
    if (ir_diag_errors(d) == errors) record_sources(&c);
    for (int i = 0; i < c.n_files; i++) free(c.files[i].text);
    free(c.files);
    free(c.fns);
    free(c.counters);
    ast_arena_free(c.a);
    if (ir_diag_errors(d) != errors) {
        ir_module_free(c.m);
        return NULL;
    }
    return c.m;
}
