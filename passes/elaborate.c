/* elaborate.c - AST to the one-replica forward IR: reads the program and the
 * modules it uses, inlines every function call, folds integers, names params
 * Keras-style ("dense_1/kernel") and records the model interface in the
 * module. Primitives and builtins are in elab_prim.c, the train block in
 * elab_train.c; elab.h is what they share. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../frontend/frontend.h"
#include "elab.h"

void *elab_xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) {
        fprintf(stderr, "mgc: out of memory\n");
        abort();
    }
    return p;
}

/* Position of what is elaborated at loc: inside a module, the user's call. */
static ir_loc at(elab *c, ir_loc loc) { return c->fr && c->fr->in_module ? c->fr->user_loc : loc; }
ir_loc elab_at(elab *c, ir_loc loc) { return at(c, loc); }

void elab_err(elab *c, ir_loc loc, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ir_diag_error(c->d, at(c, loc), "%s", msg);
}

/* An error at a position already mapped by at(). */
void elab_err_raw(elab *c, ir_loc loc, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ir_diag_error(c->d, loc, "%s", msg);
}

const char *elab_fmt(elab *c, const char *f, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return ast_strdup(c->a, buf, n < (int)sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* "an int", "a tensor f32[64,10]", ... for messages. */
const char *elab_describe(elab *c, value v) {
    char b[128];
    switch (v.k) {
    case V_INT: return "an int";
    case V_FLOAT: return "a float";
    case V_STR: return "a str";
    case V_TENSOR: return elab_fmt(c, "a tensor %s", ir_type_str(node(c, v.node)->dtype, &node(c, v.node)->shape, b, sizeof b));
    case V_FN: case V_PRIM: case V_BUILTIN: return "a function";
    case V_INIT: return "an initializer";
    case V_LIST: return elab_fmt(c, "a list of %d", v.list->n);
    case V_ERR: break;
    }
    return "an error";
}

/* ---- bindings and names ---- */

void elab_bind(frame *f, const char *name, value v) {
    for (int i = f->n - 1; i >= 0; i--)
        if (!strcmp(f->b[i].name, name)) {
            f->b[i].v = v;
            return;
        }
    if (f->n == f->cap) f->b = elab_xrealloc(f->b, (size_t)(f->cap = f->cap ? 2 * f->cap : 16) * sizeof *f->b);
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
        if (!strcmp(name, elab_builtin_names[i])) return *v = (value){.k = V_BUILTIN, .i = i}, true;
    for (int i = 0; i < INIT_COUNT; i++)
        if (!strcmp(name, ir_init_names[i])) return *v = elab_init_value((ir_init)i), true;
    if (!strcmp(name, "true") || !strcmp(name, "false")) return *v = vint(name[0] == 't'), true;
    return false;
}

/* Edit distance of a and b, a swap of two neighbours counting one (short
 * names: longer ones are "far"). */
static int distance(const char *a, const char *b) {
    int n = (int)strlen(a), m = (int)strlen(b), d[33][33];
    if (n > 32 || m > 32) return 99;
    for (int i = 0; i <= n; i++)
        for (int j = 0; j <= m; j++) {
            if (!i || !j) {
                d[i][j] = i + j;
                continue;
            }
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

/* The op whose name is nearest to name (a typo: one edit, two in a name of
 * six letters or more), else NULL. */
static const char *closest_op(const char *name) {
    const char *best = NULL;
    int best_d = strlen(name) >= 6 ? 3 : 2;
    for (int op = 0; op < OP_COUNT; op++) {
        int d = distance(name, ir_ops[op].name);
        if (d < best_d && !(ir_ops[op].flags & OPF_SOURCE)) best = ir_ops[op].name, best_d = d;
    }
    return best;
}

/* "unknown primitive": a stdlib function of that name, a near name, or them all. */
static void unknown_prim(elab *c, const char *name, ir_loc loc) {
    const char *near = closest_op(name + 5);
    if (find_fn(c, name + 5, running_file(c)))
        return elab_err(c, loc, "unknown primitive '%s'; '%s' is a function: call it without 'prim.'", name, name + 5);
    if (near) return elab_err(c, loc, "unknown primitive '%s'; did you mean 'prim.%s'?", name, near);
    char all[360] = ""; /* as many as a message holds */
    for (int op = 0; op < OP_COUNT; op++) {
        if (ir_ops[op].flags & OPF_SOURCE) continue;
        if (strlen(all) + strlen(ir_ops[op].name) + 8 >= sizeof all) {
            strcat(all, ", ...");
            break;
        }
        strcat(strcat(all, *all ? ", " : ""), ir_ops[op].name);
    }
    elab_err(c, loc, "unknown primitive '%s'; the primitives are %s (ir/ops.def)", name, all);
}

value elab_lookup(elab *c, const char *name, ir_loc loc) {
    const value *v = c->fr ? local(c->fr, name) : NULL;
    if (v) return *v;
    value g;
    if (global(c, name, &g)) return g;
    if (!strncmp(name, "prim.", 5)) unknown_prim(c, name, loc);
    else elab_err(c, loc, "unknown name '%s'", name);
    return ERR;
}

/* ---- nodes ---- */

/* Fewer than IR_MAX_ELEMENTS elements (what a plan may hold). */
bool elab_checked_numel(const ir_shape *s, int64_t *out) {
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        if (s->dim[i] < 0 || __builtin_mul_overflow(n, s->dim[i], &n) || n >= IR_MAX_ELEMENTS) return false;
    *out = n;
    return true;
}

/* Runs the shape rule of a node just added; errors at its position. */
value elab_finish(elab *c, int i) {
    char msg[256], b[128];
    ir_node *n = node(c, i);
    int64_t numel;
    if (!ir_infer_node(c->m, i, msg, sizeof msg)) {
        ir_diag_error(c->d, n->loc, "%s", msg);
        return ERR;
    }
    if (!elab_checked_numel(&n->shape, &numel)) {
        ir_diag_error(c->d, n->loc, "the result of '%s' is too large: %s has 2^40 elements or more",
                      ir_ops[n->op].name, ir_type_str(n->dtype, &n->shape, b, sizeof b));
        return ERR;
    }
    return vtensor(i);
}

int elab_add(elab *c, ir_op op, const int *in, int n_in, ir_loc loc) {
    return ir_add(c->m, op, in, n_in, at(c, loc));
}

value elab_constant(elab *c, double v, ir_dtype t, ir_loc loc) {
    int i = elab_add(c, OP_CONST, NULL, 0, loc);
    node(c, i)->dtype = t;
    node(c, i)->fattr[0] = v;
    return elab_finish(c, i);
}

/* ---- expressions ---- */

static value fold_int(elab *c, char op, int64_t a, int64_t b, ir_loc loc) {
    int64_t r = 0;
    bool over = false;
    switch (op) {
    case '+': over = __builtin_add_overflow(a, b, &r); break;
    case '-': over = __builtin_sub_overflow(a, b, &r); break;
    case '*': over = __builtin_mul_overflow(a, b, &r); break;
    case '/':
        if (b == 0) return elab_err(c, loc, "division by zero"), ERR;
        if (a == INT64_MIN && b == -1) over = true;
        else r = a / b - ((a % b != 0) && ((a < 0) != (b < 0))); /* rounds down */
        break;
    }
    if (over) return elab_err(c, loc, "integer overflow in '%c'", op), ERR;
    return vint(r);
}

static value fold_float(char op, double a, double b) {
    switch (op) {
    case '+': return vfloat(a + b);
    case '-': return vfloat(a - b);
    case '*': return vfloat(a * b);
    }
    return vfloat(a / b);
}

/* The operator as written, for messages. */
static const char *op_text(char op) {
    switch (op) {
    case AST_LE: return "<=";
    case AST_GE: return ">=";
    case AST_EQ: return "==";
    case AST_NE: return "!=";
    case AST_AND: return "and";
    case AST_OR: return "or";
    case '<': return "<";
    case '>': return ">";
    case '+': return "+";
    case '-': return "-";
    case '*': return "*";
    default: return "/";
    }
}

static bool is_compare(char op) { return strchr("<>", op) || op == AST_LE || op == AST_GE || op == AST_EQ || op == AST_NE; }

static value tensor_binary(elab *c, char op, value a, value b, ir_loc loc) {
    static const ir_op ops[] = {['+'] = OP_ADD, ['-'] = OP_SUB, ['*'] = OP_MUL, ['/'] = OP_DIV,
                                ['<'] = OP_LESS, ['>'] = OP_GREATER, [AST_LE] = OP_LESS_EQUAL,
                                [AST_GE] = OP_GREATER_EQUAL, [AST_EQ] = OP_EQUAL, [AST_NE] = OP_NOT_EQUAL};
    if (a.k != V_TENSOR) a = elab_constant(c, num(a), node(c, b.node)->dtype, loc);
    if (b.k != V_TENSOR) b = elab_constant(c, num(b), node(c, a.node)->dtype, loc);
    if (a.k == V_ERR || b.k == V_ERR) return ERR;
    return elab_finish(c, elab_add(c, ops[(unsigned char)op], (int[]){a.node, b.node}, 2, loc));
}

/* a < b and the others on numbers and strings: an int, 1 or 0 */
static value compare(char op, value a, value b) {
    int cmp = a.k == V_STR ? strcmp(a.s, b.s) : (num(a) > num(b)) - (num(a) < num(b));
    bool r = op == '<' ? cmp < 0 : op == '>' ? cmp > 0 : op == AST_LE ? cmp <= 0 : op == AST_GE ? cmp >= 0
           : op == AST_EQ ? cmp == 0 : cmp != 0;
    return vint(r);
}

/* a and b, a or b: Python's, on compile-time values (b is evaluated only when needed) */
static value logical(elab *c, const ast_expr *e) {
    value a = elab_eval(c, e->lhs);
    bool ok, t = elab_truth(c, a, e->lhs->loc, &ok);
    if (!ok) return ERR;
    if (t == (e->op == AST_OR)) return a;
    value b = elab_eval(c, e->rhs);
    elab_truth(c, b, e->rhs->loc, &ok);
    return ok ? b : ERR;
}

/* [a, b] + [c]: a new list, as Python's; a's buffer grows in place when it
 * can (see vlist), else a new buffer with twice the room is made. */
static value concat_lists(elab *c, value a, value b, ir_loc loc) {
    const vlist *x = a.list, *y = b.list;
    int n = x->n + y->n;
    if (n > MAX_LIST) return elab_err(c, loc, "a list has at most %d elements", MAX_LIST), ERR;
    vlist *l = ast_alloc(c->a, sizeof *l);
    l->n = n;
    if (x->buf && x->buf->fill == x->n && n <= x->buf->cap) {
        l->v = x->v, l->buf = x->buf;
    } else {
        int cap = n < 4 ? 8 : 2 * n;
        l->buf = ast_alloc(c->a, sizeof *l->buf);
        l->buf->cap = cap;
        l->v = ast_alloc(c->a, (size_t)cap * sizeof *l->v);
        memcpy(l->v, x->v, (size_t)x->n * sizeof *l->v);
    }
    memcpy(l->v + x->n, y->v, (size_t)y->n * sizeof *l->v); /* y may be x: its first n stay */
    l->buf->fill = n;
    return (value){.k = V_LIST, .list = l};
}

static value binary(elab *c, const ast_expr *e) {
    if (e->op == AST_AND || e->op == AST_OR) return logical(c, e);
    value a = elab_eval(c, e->lhs), b = elab_eval(c, e->rhs);
    if (a.k == V_ERR || b.k == V_ERR) return ERR;
    bool cmp = is_compare(e->op);
    if (cmp && ((is_num(a) && is_num(b)) || (a.k == V_STR && b.k == V_STR && (e->op == AST_EQ || e->op == AST_NE))))
        return compare(e->op, a, b);
    if (e->op == '+' && a.k == V_LIST && b.k == V_LIST) return concat_lists(c, a, b, e->loc);
    if (!cmp && a.k == V_INT && b.k == V_INT) return fold_int(c, e->op, a.i, b.i, e->loc);
    if (!cmp && is_num(a) && is_num(b)) return fold_float(e->op, num(a), num(b));
    if ((a.k == V_TENSOR || is_num(a)) && (b.k == V_TENSOR || is_num(b))) return tensor_binary(c, e->op, a, b, e->loc);
    elab_err(c, e->loc, "operator '%s' cannot take %s and %s", op_text(e->op), elab_describe(c, a), elab_describe(c, b));
    return ERR;
}

static value negate(elab *c, const ast_expr *e) {
    value a = elab_eval(c, e->lhs);
    switch (a.k) {
    case V_ERR: return ERR;
    case V_INT:
        if (a.i == INT64_MIN) return elab_err(c, e->loc, "integer overflow in '-'"), ERR;
        return vint(-a.i);
    case V_FLOAT: return vfloat(-a.f);
    case V_TENSOR: return elab_finish(c, elab_add(c, OP_NEG, &a.node, 1, e->loc));
    default: break;
    }
    elab_err(c, e->loc, "cannot negate %s", elab_describe(c, a));
    return ERR;
}

static value logical_not(elab *c, const ast_expr *e) {
    bool ok, t = elab_truth(c, elab_eval(c, e->lhs), e->lhs->loc, &ok);
    return ok ? vint(!t) : ERR;
}

value elab_list(elab *c, const value *v, int n) {
    vlist *l = ast_alloc(c->a, sizeof *l);
    l->n = n, l->v = ast_alloc(c->a, (size_t)n * sizeof *v + 1);
    if (n) memcpy(l->v, v, (size_t)n * sizeof *v);
    return (value){.k = V_LIST, .list = l};
}

/* [a, b, ...]: each element evaluated once */
static value list_literal(elab *c, const ast_expr *e) {
    int n = 0;
    for (const ast_expr *x = e->lhs; x; x = x->next) n++;
    if (n > MAX_LIST) return elab_err(c, e->loc, "a list has at most %d elements", MAX_LIST), ERR;
    value *v = elab_xrealloc(NULL, (size_t)n * sizeof *v), r;
    bool bad = false;
    n = 0;
    for (const ast_expr *x = e->lhs; x; x = x->next) bad |= (v[n++] = elab_eval(c, x)).k == V_ERR;
    r = bad ? ERR : elab_list(c, v, n);
    free(v);
    return r;
}

/* xs[i]: an element of a list; negative i counts from the end */
static value index_list(elab *c, const ast_expr *e) {
    value xs = elab_eval(c, e->lhs), i = elab_eval(c, e->rhs);
    if (xs.k == V_ERR || i.k == V_ERR) return ERR;
    if (xs.k != V_LIST) return elab_err(c, e->loc, "only a list can be indexed, got %s", elab_describe(c, xs)), ERR;
    if (i.k != V_INT) return elab_err(c, e->rhs->loc, "a list index must be an int, got %s", elab_describe(c, i)), ERR;
    int64_t k = i.i < 0 ? i.i + xs.list->n : i.i;
    if (k < 0 || k >= xs.list->n)
        return elab_err(c, e->rhs->loc, "index %lld is out of range for a list of %d", (long long)i.i, xs.list->n), ERR;
    return xs.list->v[k];
}

static value call_value(elab *c, value f, call *k);

static value eval_call(elab *c, const ast_expr *e) {
    value f = elab_eval(c, e->lhs);
    int n = 0;
    for (const ast_arg *a = e->args; a; a = a->next) n++;
    call k = {elab_xrealloc(NULL, (size_t)n * sizeof(arg)), 0, e->lhs->kind == EX_NAME ? e->lhs->name : NULL, e->loc};
    bool seen_kw = false, bad = f.k == V_ERR;
    for (const ast_arg *a = e->args; a; a = a->next) {
        arg *x = &k.a[k.n++];
        *x = (arg){a->name, elab_eval(c, a->value), a->loc};
        bad |= x->v.k == V_ERR;
        if (!a->name && seen_kw) elab_err(c, a->loc, "positional argument after keyword arguments"), bad = true;
        seen_kw |= a->name != NULL;
    }
    if (e == c->watch) c->watched = k.n > 0 && !k.a[0].name ? k.a[0].v : ERR;
    value r = bad ? ERR : call_value(c, f, &k);
    free(k.a);
    return r;
}

value elab_eval(elab *c, const ast_expr *e) {
    switch (e->kind) {
    case EX_INT: return vint(e->ival);
    case EX_FLOAT: return vfloat(e->fval);
    case EX_STR: return (value){.k = V_STR, .s = e->name};
    case EX_NAME: return elab_lookup(c, e->name, e->loc);
    case EX_BINARY: return binary(c, e);
    case EX_NEG: return negate(c, e);
    case EX_NOT: return logical_not(c, e);
    case EX_CALL: return eval_call(c, e);
    case EX_LIST: return list_literal(c, e);
    case EX_INDEX: return index_list(c, e);
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
        return t->kind == TY_TENSOR ? ir_dtype_name(t->dtype) : (const char *[]){"any", "int", "float", "str", "fn", "", "list"}[t->kind];
    char buf[256];
    size_t k = (size_t)snprintf(buf, sizeof buf, "%s[", ir_dtype_name(t->dtype));
    for (const ast_expr *e = t->dims; e && k < sizeof buf; e = e->next) {
        if (e != t->dims) k += (size_t)snprintf(buf + k, sizeof buf - k, ", ");
        expr_text(e, buf, sizeof buf, &k);
    }
    if (k < sizeof buf) snprintf(buf + k, sizeof buf - k, "]");
    return elab_fmt(c, "%s", buf);
}

/* Matches a tensor against a declared type, binding new dimension names. */
static bool match_dims(elab *c, const ast_type *t, const ir_node *n) {
    if (n->dtype != (ir_dtype)t->dtype) return false;
    if (t->rank < 0) return true;
    if (n->shape.rank != t->rank) return false;
    int i = 0;
    for (const ast_expr *e = t->dims; e; e = e->next, i++) {
        if (e->kind == EX_NAME && !local(c->fr, e->name)) {
            elab_bind(c->fr, e->name, vint(n->shape.dim[i]));
            continue;
        }
        value d = elab_eval(c, e);
        if (d.k == V_ERR) continue;
        if (d.k != V_INT) return elab_err(c, e->loc, "a dimension must be an int, got %s", elab_describe(c, d)), false;
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
    case TY_LIST: ok = v->k == V_LIST; break;
    case TY_TENSOR:
        ok = v->k == V_TENSOR && match_dims(c, t, node(c, v->node));
        break;
    }
    if (!ok)
        elab_err_raw(c, loc, "argument '%s' of '%s' must be %s, got %s", p->name, fn->name, type_text(c, t), elab_describe(c, *v));
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

/* "x, units, activation": fn's parameters, for messages. */
static const char *param_names(elab *c, const ast_decl *fn) {
    char buf[400] = "";
    for (const ast_param *p = fn->params; p; p = p->next) {
        if (strlen(buf) + strlen(p->name) + 8 >= sizeof buf) {
            strcat(buf, ", ...");
            break;
        }
        strcat(strcat(buf, *buf ? ", " : ""), p->name);
    }
    return *buf ? elab_fmt(c, "%s", buf) : "no arguments";
}

/* Binds every parameter of fn in the current frame; false after errors. */
static bool bind_params(elab *c, const ast_decl *fn, call *k) {
    bool ok = true, *used = elab_xrealloc(NULL, (size_t)k->n * sizeof *used + 1);
    memset(used, 0, (size_t)k->n * sizeof *used);
    int idx = 0;
    for (const ast_param *p = fn->params; p; p = p->next, idx++) {
        arg *a = take_arg(k, idx, p->name, used);
        value v;
        if (a) v = a->v;
        else if (p->dflt) v = elab_eval(c, p->dflt);
        else {
            elab_err_raw(c, k->loc, "missing argument '%s' of '%s'", p->name, fn->name);
            ok = false;
            continue;
        }
        ok &= check_arg(c, fn, p, &v, a ? a->loc : k->loc);
        elab_bind(c->fr, p->name, v);
    }
    int n_pos = 0;
    for (int i = 0; i < k->n; i++) n_pos += !k->a[i].name;
    for (int i = 0; i < k->n; i++) {
        if (used[i]) continue;
        ok = false;
        if (!k->a[i].name) {
            elab_err_raw(c, k->a[i].loc, "'%s' takes at most %d argument%s, got %d", fn->name, idx, idx == 1 ? "" : "s", n_pos);
            break;
        }
        bool known = false;
        for (const ast_param *p = fn->params; p; p = p->next) known |= !strcmp(p->name, k->a[i].name);
        if (known) elab_err_raw(c, k->a[i].loc, "argument '%s' of '%s' is given twice", k->a[i].name, fn->name);
        else elab_err_raw(c, k->a[i].loc, "'%s' has no parameter named '%s'; it takes %s (and name:, reuse:)", fn->name,
                          k->a[i].name, param_names(c, fn));
    }
    free(used);
    return ok;
}

static value call_fn(elab *c, const ast_decl *fn, call *k) {
    if (c->depth >= MAX_CALL_DEPTH) {
        elab_err(c, k->loc, "calls nested more than %d deep (a recursive function?)", MAX_CALL_DEPTH);
        return ERR;
    }
    /* argument errors point into the caller */
    k->loc = at(c, k->loc);
    for (int i = 0; i < k->n; i++) k->a[i].loc = at(c, k->a[i].loc);
    scope sc = {.parent = c->fr->scope, .base = fn->name, .id = ++c->n_scope_ids, .loc = k->loc};
    bool named = elab_scope_options(c, k, &sc);
    frame f = {.caller = c->fr, .fn = fn, .in_module = fn->in_module, .user_loc = at(c, k->loc), .scope = &sc};
    c->fr = &f, c->depth++;
    value r = bind_params(c, fn, k) && named ? elab_run_body(c, fn->body) : ERR;
    c->fr = f.caller, c->depth--;
    free(f.b);
    return r;
}

static value call_value(elab *c, value f, call *k) {
    switch (f.k) {
    case V_FN: return call_fn(c, f.fn, k);
    case V_PRIM: return elab_call_prim(c, (ir_op)f.i, k);
    case V_BUILTIN: return elab_call_builtin(c, (builtin_fn)f.i, k);
    case V_INIT: return elab_call_init(c, (ir_init)f.i, k);
    case V_ERR: return ERR;
    default: break;
    }
    if (k->callee) elab_err(c, k->loc, "'%s' is %s, not a function", k->callee, elab_describe(c, f));
    else elab_err(c, k->loc, "cannot call %s", elab_describe(c, f));
    return ERR;
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
        if (module) elab_err(c, use_loc, "no module named '%s' (%s: %s)", module, path, why);
        else elab_err(c, (ir_loc){0}, "%s: cannot read: %s", path, why);
        return;
    }
    const char *ipath = ir_intern(c->m, path);
    ir_diag_add_source(c->d, ipath, text);
    c->files = elab_xrealloc(c->files, (size_t)(c->n_files + 1) * sizeof *c->files);
    source_file *f = &c->files[c->n_files++];
    *f = (source_file){ipath, text, NULL, module};
    f->ast = fe_parse(ipath, text, c->a, c->d, module != NULL);
}

/* Whether a module file is there: in the sources given (a plan being
 * re-planned reads only those), else on disk. */
static bool module_exists(elab *c, const char *path) {
    if (c->o && c->o->n_sources > 0) {
        for (int i = 0; i < c->o->n_sources; i++)
            if (!strcmp(c->o->sources[i].path, path)) return true;
        return false;
    }
    return access(path, R_OK) == 0;
}

/* `use NAME` in file `from`: NAME.mg beside `from`, else in the stdlib
 * directory (as Python looks beside the script first); NULL after an error. */
static const char *module_path(elab *c, const char *from, const ast_decl *use) {
    const char *slash = strrchr(from, '/');
    const char *beside = slash ? elab_fmt(c, "%.*s/%s.mg", (int)(slash - from), from, use->name) : elab_fmt(c, "%s.mg", use->name);
    const char *in_stdlib = elab_fmt(c, "%s/%s.mg", c->stdlib_dir, use->name);
    if (module_exists(c, beside)) return beside;
    if (module_exists(c, in_stdlib) || (c->o && c->o->n_sources > 0)) return in_stdlib;
    elab_err(c, use->name_loc, "no module named '%s' (looked for %s beside the file, then %s)", use->name, beside, in_stdlib);
    return NULL;
}

/* Reads the main file and, transitively, every module it uses. */
static void load_all(elab *c, const char *path) {
    load_file(c, path, NULL, (ir_loc){0});
    for (int i = 0; i < c->n_files; i++)
        for (const ast_decl *d = c->files[i].ast->decls; d; d = d->next) {
            if (d->kind != DECL_USE) continue;
            if (!valid_module_name(d->name)) {
                elab_err(c, d->name_loc, "no module named '%s'", d->name);
                continue;
            }
            bool loaded = false;
            for (int k = 0; k < c->n_files && !loaded; k++) loaded = c->files[k].module && !strcmp(c->files[k].module, d->name);
            const char *p = loaded ? NULL : module_path(c, c->files[i].path, d);
            if (p) load_file(c, p, d->name, d->name_loc);
        }
}

/* Functions of every file (the main file's first); checks parameter lists. */
static void collect_fns(elab *c) {
    for (int i = 0; i < c->n_files; i++)
        for (const ast_decl *d = c->files[i].ast->decls; d; d = d->next) {
            if (d->kind != DECL_FN) continue;
            const ast_decl *prev = find_fn(c, d->name, d->loc.file);
            if (prev && !strcmp(prev->loc.file, d->loc.file))
                elab_err(c, d->name_loc, "function '%s' is defined twice", d->name);
            for (const ast_param *p = d->params; p; p = p->next)
                for (const ast_param *q = d->params; q != p; q = q->next)
                    if (!strcmp(p->name, q->name)) elab_err(c, p->loc, "parameter '%s' of '%s' appears twice", p->name, d->name);
            for (const ast_param *p = d->params; p; p = p->next)
                if (!strcmp(p->name, "name") || !strcmp(p->name, "reuse"))
                    elab_err(c, p->loc, "parameter '%s' of '%s' is reserved: every call takes name: and reuse: for its param scope",
                             p->name, d->name);
            c->fns = elab_xrealloc(c->fns, (size_t)(c->n_fns + 1) * sizeof *c->fns);
            c->fns[c->n_fns++] = d;
        }
}

/* The main file's model and train blocks (one each). */
static bool find_blocks(elab *c, const ast_decl **model, const ast_decl **train) {
    *model = *train = NULL;
    for (const ast_decl *d = c->files[0].ast->decls; d; d = d->next) {
        const ast_decl **slot = d->kind == DECL_MODEL ? model : d->kind == DECL_TRAIN ? train : NULL;
        if (!slot) continue;
        if (*slot) elab_err(c, d->loc, "a second %s block; a program has one", d->kind == DECL_MODEL ? "model" : "train");
        else *slot = d;
    }
    for (int i = 1; i < c->n_files; i++)
        for (const ast_decl *d = c->files[i].ast->decls; d; d = d->next)
            if (d->kind == DECL_MODEL || d->kind == DECL_TRAIN)
                elab_err(c, d->loc, "a module cannot hold %s blocks", d->kind == DECL_MODEL ? "model" : "train");
    if (!*model) elab_err(c, (ir_loc){0}, "%s: no model block", c->files[0].path);
    if (*model && *train && strcmp((*model)->name, (*train)->name))
        elab_err(c, (*train)->name_loc, "train block '%s' names no model; the model is '%s'", (*train)->name, (*model)->name);
    return *model != NULL;
}

static void record_sources(elab *c) {
    ir_module *m = c->m;
    m->sources = elab_xrealloc(NULL, (size_t)c->n_files * sizeof *m->sources);
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
    c->m->opt = elab_optimizer_defaults(OPT_ADAM);
    elab_set_batch(c, train, o, n_dev);
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
    free(c.made);
    free(c.terms);
    ast_arena_free(c.a);
    if (ir_diag_errors(d) != errors) {
        ir_module_free(c.m);
        return NULL;
    }
    return c.m;
}
