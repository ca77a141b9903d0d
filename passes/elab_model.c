/* elab_model.c - the model block's interface: inputs, the loss (batch means,
 * their weighted sums and the terms `loss +=` adds), metrics and outputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elab.h"

struct model_state {
    bool named_output; /* an `output` statement was seen */
    int loss_output;   /* the first argument of the loss call, -1 */
};

/* ---- inputs ---- */

static void stmt_input(elab *c, const ast_stmt *st) {
    ir_shape s;
    if (!elab_eval_shape(c, st->type, "input", st->name, &s)) return elab_bind(c->fr, st->name, ERR);
    const char *name = ir_intern(c->m, st->name);
    for (int i = 0; i < c->m->n_inputs; i++)
        if (node(c, c->m->inputs[i])->name == name) {
            elab_err(c, st->name_loc, "input '%s' is declared twice", name);
            return elab_bind(c->fr, st->name, ERR);
        }
    int id = elab_add(c, OP_INPUT, NULL, 0, st->loc);
    ir_node *n = node(c, id);
    n->dtype = (ir_dtype)st->type->dtype, n->shape = s, n->name = name;
    c->m->inputs = elab_xrealloc(c->m->inputs, (size_t)(c->m->n_inputs + 1) * sizeof *c->m->inputs);
    c->m->inputs[c->m->n_inputs++] = id;
    elab_bind(c->fr, st->name, elab_finish(c, id));
}

/* ---- batch means: the loss and the metrics ----
 *
 * The module keeps the per-example vector L_i of the loss (eval reports its
 * mean over the examples, autodiff differentiates mean(L)). A loss written as
 *   mean(a) * w + mean(b) / v - mean(c) + s
 * (w, v, s scalars that do not depend on the batch: numbers, penalties on
 * params) is the mean of L_i = a_i * w + b_i / v - c_i + s, which is built
 * here from the expression's graph. */

typedef enum { T_BAD, T_EXAMPLE, T_SCALAR } term_kind;

typedef struct {
    elab *c;
    char *batch_dependent; /* by node: depends on an input */
    int *memo;             /* by node: split result + 1 (T_EXAMPLE: per-example node), 0 unknown */
    term_kind *kind;
    int n;                 /* nodes when the walk began */
} splitter;

static bool batch_mean(elab *c, const ir_node *n) {
    if (n->op != OP_REDUCE_MEAN || n->iattr[0] != 1 || n->iattr[1]) return false;
    const ir_node *x = node(c, n->in[0]);
    return x->dtype == IR_F32 && x->shape.rank == 1 && x->shape.dim[0] == c->m->batch_per_replica;
}

/* Node i as a per-example vector (T_EXAMPLE, *out its node) or a scalar
 * that does not depend on the batch (T_SCALAR, *out = i). */
static term_kind split(splitter *S, int i, int *out) {
    elab *c = S->c;
    if (S->memo[i]) return *out = S->memo[i] - 1, S->kind[i];
    ir_node n = *node(c, i); /* a copy: adding nodes moves the array */
    term_kind k = T_BAD;
    int r = i, a = -1, b = -1;
    if (n.dtype != IR_F32) k = T_BAD;
    else if (batch_mean(c, &n)) k = T_EXAMPLE, r = n.in[0];
    else if (n.shape.rank == 0 && !S->batch_dependent[i]) k = T_SCALAR;
    else if (n.op == OP_NEG && split(S, n.in[0], &a) == T_EXAMPLE) k = T_EXAMPLE, r = elab_finish(c, ir_add(c->m, OP_NEG, &a, 1, n.loc)).node;
    else if (n.op == OP_ADD || n.op == OP_SUB || n.op == OP_MUL || n.op == OP_DIV) {
        term_kind ka = split(S, n.in[0], &a), kb = split(S, n.in[1], &b);
        bool ok = ka && kb && (ka == T_EXAMPLE || kb == T_EXAMPLE);
        if (n.op == OP_MUL) ok &= ka != kb;           /* a mean times a scalar */
        if (n.op == OP_DIV) ok &= kb == T_SCALAR;     /* a mean over a scalar */
        if (ok) {
            value v = elab_finish(c, ir_add(c->m, n.op, (int[]){a, b}, 2, n.loc));
            k = v.k == V_TENSOR ? T_EXAMPLE : T_BAD, r = v.node;
        }
    }
    S->memo[i] = r + 1, S->kind[i] = k;
    return *out = r, k;
}

static splitter splitter_new(elab *c) {
    size_t n = (size_t)c->m->g.n + 1;
    splitter S = {c, memset(elab_xrealloc(NULL, n), 0, n), memset(elab_xrealloc(NULL, n * sizeof(int)), 0, n * sizeof(int)),
                  memset(elab_xrealloc(NULL, n * sizeof(term_kind)), 0, n * sizeof(term_kind)), c->m->g.n};
    for (int i = 0; i < S.n; i++) {
        const ir_node *n = node(c, i);
        S.batch_dependent[i] = n->op == OP_INPUT;
        for (int k = 0; k < n->n_in && !S.batch_dependent[i]; k++) S.batch_dependent[i] = S.batch_dependent[n->in[k]];
    }
    return S;
}

static void splitter_free(splitter *S) { free(S->batch_dependent), free(S->memo), free(S->kind); }

/* The per-example vector whose mean v is, or -1 after an error at loc. */
static int per_example(elab *c, value v, ir_loc loc, const char *what) {
    if (v.k == V_ERR) return -1;
    int r = -1;
    term_kind k = T_BAD;
    if (v.k == V_TENSOR) {
        splitter S = splitter_new(c);
        k = split(&S, v.node, &r);
        splitter_free(&S);
    }
    if (k == T_EXAMPLE) return r;
    elab_err_raw(c, loc, "the %s must be the batch mean of a per-example f32[%lld] (as the stdlib losses and metrics are) "
                 "or a sum of such means times numbers, got %s; average a per-example vector v with prim.reduce_mean(v, axes: 1)",
                 what, (long long)c->m->batch_per_replica, elab_describe(c, v));
    return -1;
}

/* loss += t: t a scalar f32[] that does not depend on the batch (a penalty
 * on params, added once per step) or a batch mean; checked when the model ends. */
void elab_add_loss(elab *c, const ast_stmt *s) {
    value v = elab_eval(c, s->expr);
    ir_loc loc = elab_at(c, s->loc);
    if (v.k == V_ERR || elab_scope_shared(c->fr->scope)) return; /* the first use added the shared params' penalties */
    if (!c->in_model) return elab_err_raw(c, loc, "'loss +=' is only allowed in the model and the functions it calls");
    if (v.k != V_TENSOR || node(c, v.node)->dtype != IR_F32)
        return elab_err_raw(c, elab_at(c, s->expr->loc), "a loss term must be an f32 tensor, got %s", elab_describe(c, v));
    c->terms = elab_xrealloc(c->terms, (size_t)(c->n_terms + 1) * sizeof *c->terms);
    c->terms[c->n_terms++] = (loss_term){v.node, elab_at(c, s->expr->loc)};
}

static void stmt_loss(elab *c, const ast_stmt *st, model_state *ms) {
    if (c->loss_stmt) return elab_err(c, st->loc, "the model has a second loss");
    c->loss_stmt = st;
    c->watch = st->expr, c->watched = ERR;
    c->loss = elab_eval(c, st->expr);
    c->watch = NULL;
    if (c->watched.k == V_TENSOR) ms->loss_output = c->watched.node;
}

/* m->loss: the `loss =` value plus every `loss +=` term, per example. */
static void finish_loss(elab *c) {
    if (!c->loss_stmt) return; /* terms without a loss: nothing trains (a predict-only model) */
    int total = per_example(c, c->loss, c->loss_stmt->expr->loc, "loss");
    splitter S = splitter_new(c);
    for (int k = 0; k < c->n_terms; k++) {
        int t;
        term_kind kind = split(&S, c->terms[k].node, &t);
        if (kind == T_BAD) {
            elab_err_raw(c, c->terms[k].loc, "a loss term must be a scalar f32[] that does not depend on the batch "
                         "(a penalty on params, such as 1e-4 * sum of kernel * kernel) or a batch mean, got %s",
                         elab_describe(c, vtensor(c->terms[k].node)));
            total = -1;
        }
        if (total >= 0) total = elab_finish(c, ir_add(c->m, OP_ADD, (int[]){total, t}, 2, c->terms[k].loc)).node;
    }
    splitter_free(&S);
    c->m->loss = total;
}

static void stmt_metric(elab *c, const ast_stmt *st) {
    const char *name = ir_intern(c->m, st->name);
    for (int i = 0; i < c->m->n_metrics; i++)
        if (c->m->metrics[i].name == name) return elab_err(c, st->name_loc, "metric '%s' is declared twice", name);
    int id = per_example(c, elab_eval(c, st->expr), elab_at(c, st->expr->loc), "metric");
    if (id < 0) return;
    if (c->m->n_metrics == IR_MAX_METRICS)
        return elab_err(c, st->name_loc, "metric '%s' is one too many: a model has at most %d metrics", name, IR_MAX_METRICS);
    c->m->metrics = elab_xrealloc(c->m->metrics, (size_t)(c->m->n_metrics + 1) * sizeof *c->m->metrics);
    c->m->metrics[c->m->n_metrics++] = (ir_metric){name, id};
}

/* ---- outputs ---- */

static void add_output(elab *c, const char *name, int id) {
    if (node(c, id)->op == OP_INPUT) { /* an input lives on the host: the output is its per-replica rows */
        ir_shape s = node(c, id)->shape;
        int r = ir_add(c->m, OP_RESHAPE, &id, 1, node(c, id)->loc);
        node(c, r)->shape = s;
        id = elab_finish(c, r).node;
    }
    c->m->outputs = elab_xrealloc(c->m->outputs, (size_t)(c->m->n_outputs + 1) * sizeof *c->m->outputs);
    c->m->outputs[c->m->n_outputs++] = (ir_output){ir_intern(c->m, name), id};
}

/* output NAME (a binding) | output NAME = expr (binds NAME too) */
static void stmt_output(elab *c, const ast_stmt *st, model_state *ms) {
    ms->named_output = true;
    value v = st->expr ? elab_eval(c, st->expr) : elab_lookup(c, st->name, st->name_loc);
    if (st->expr) elab_bind(c->fr, st->name, v);
    ir_loc loc = st->expr ? st->expr->loc : st->name_loc;
    for (int k = 0; k < c->m->n_outputs; k++)
        if (!strcmp(c->m->outputs[k].name, st->name)) return elab_err(c, st->name_loc, "output '%s' is declared twice", st->name);
    if (v.k == V_ERR) return;
    if (v.k != V_TENSOR) return elab_err(c, loc, "output '%s' must be a tensor, got %s", st->name, elab_describe(c, v));
    const ir_node *n = node(c, v.node);
    if (n->shape.rank < 1 || n->shape.dim[0] != c->m->batch_per_replica)
        return elab_err(c, loc, "output '%s' must hold the batch (%lld) on axis 0, got %s", st->name,
                        (long long)c->m->batch_per_replica, elab_describe(c, v));
    if (c->m->n_outputs == IR_MAX_OUTPUTS)
        return elab_err(c, st->name_loc, "output '%s' is one too many: a model has at most %d outputs", st->name, IR_MAX_OUTPUTS);
    add_output(c, st->name, v.node);
}

/* ---- the block ---- */

void elab_model_stmt(elab *c, const ast_stmt *s, model_state *ms) {
    switch (s->kind) {
    case ST_INPUT: stmt_input(c, s); break;
    case ST_LOSS: stmt_loss(c, s, ms); break;
    case ST_METRIC: stmt_metric(c, s); break;
    case ST_OUTPUT: stmt_output(c, s, ms); break;
    default: elab_err(c, s->loc, "'%s' is not allowed in a model", elab_stmt_names[s->kind]); break;
    }
}

/* model -> statements over inputs, with `batch` bound to the per-replica batch. */
void elab_model(elab *c, const ast_decl *model) {
    scope root = {.base = "", .path = ""};
    frame f = {.scope = &root};
    model_state ms = {false, -1};
    value unused;
    c->fr = &f, c->in_model = true;
    elab_bind(&f, "batch", vint(c->m->batch_per_replica));
    elab_run_stmts(c, model->body, &ms, &unused);
    finish_loss(c);
    const ir_node *o = ms.loss_output >= 0 ? node(c, ms.loss_output) : NULL;
    if (!ms.named_output && o && o->shape.rank > 0 && o->shape.dim[0] == c->m->batch_per_replica)
        add_output(c, "output", ms.loss_output);
    if (!c->loss_stmt && !ms.named_output)
        elab_err(c, model->name_loc, "model '%s' has neither a loss nor an output", model->name);
    c->fr = NULL, c->in_model = false;
    free(f.b);
}
