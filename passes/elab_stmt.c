/* elab_stmt.c - statements of function bodies and the model block: params
 * and state (shared ones too), assignments, if, for, return; the model's own
 * statements are in elab_model.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elab.h"

/* ---- statements ---- */

/* The declared shape of an input or param: every dimension a positive int. */
bool elab_eval_shape(elab *c, const ast_type *t, const char *what, const char *name, ir_shape *s) {
    if (t->kind != TY_TENSOR || t->rank < 0)
        return elab_err(c, t->loc, "%s '%s' needs a tensor type with dimensions, such as f32[10]", what, name), false;
    if (t->rank > IR_MAX_RANK) return elab_err(c, t->loc, "%s '%s' has rank %d; at most %d is supported", what, name, t->rank, IR_MAX_RANK), false;
    s->rank = t->rank;
    int i = 0;
    bool ok = true;
    for (const ast_expr *e = t->dims; e; e = e->next, i++) {
        value d = elab_eval(c, e);
        if (d.k == V_ERR) ok = false;
        else if (d.k != V_INT) elab_err(c, e->loc, "a dimension must be an int, got %s", elab_describe(c, d)), ok = false;
        else if (d.i < 1 || d.i > MAX_DIM) elab_err(c, e->loc, "dimension %lld of %s '%s' is out of range (1 to 2^31)", (long long)d.i, what, name), ok = false;
        else s->dim[i] = d.i;
    }
    int64_t numel;
    char b[128];
    if (ok && !elab_checked_numel(s, &numel))
        return elab_err(c, t->loc, "%s '%s' is too large: %s has 2^40 elements or more", what, name,
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

/* param and state: a variable named by the scope path ("dense_1/kernel").
 * A param is trained (m->params); a state is written by assign in training
 * and read by eval and predict (moving statistics). One namespace: both are
 * checkpoint tensors. */
static void stmt_param(elab *c, const ast_stmt *st) {
    const char *what = st->kind == ST_STATE ? "state" : "param";
    ir_shape s;
    value init = elab_eval(c, st->expr);
    bool ok = elab_eval_shape(c, st->type, what, st->name, &s);
    if (init.k != V_INIT && init.k != V_ERR)
        elab_err(c, st->expr->loc, "initializer of %s '%s' must be an initializer (zeros, ones, glorot_uniform, he_normal, ...), got %s",
                 what, st->name, elab_describe(c, init));
    if (!ok || init.k != V_INIT) return elab_bind(c->fr, st->name, ERR);
    const char *path = elab_scope_path(c, c->fr->scope);
    const char *full = ir_intern(c->m, *path ? elab_fmt(c, "%s/%s", path, st->name) : st->name);
    if (elab_scope_failed(c->fr->scope)) return elab_bind(c->fr, st->name, ERR);
    if (elab_scope_shared(c->fr->scope)) return elab_bind(c->fr, st->name, elab_shared_variable(c, st, full, &s));
    for (int i = 0; i < c->m->g.n; i++)
        if ((node(c, i)->op == OP_PARAM || node(c, i)->op == OP_STATE) && node(c, i)->name == full) {
            elab_err(c, st->name_loc, "%s '%s' is declared twice", what, full);
            return elab_bind(c->fr, st->name, ERR);
        }
    int id = elab_add(c, st->kind == ST_STATE ? OP_STATE : OP_PARAM, NULL, 0, st->loc);
    ir_node *n = node(c, id);
    n->dtype = (ir_dtype)st->type->dtype, n->shape = s, n->name = full;
    fans(&s, &n->iattr[1], &n->iattr[2]);
    if (!elab_init_apply(c, init, n, st->expr->loc, what, full)) n->iattr[0] = INIT_ZEROS; /* after the error */
    if (st->kind == ST_PARAM) {
        c->m->params = elab_xrealloc(c->m->params, (size_t)(c->m->n_params + 1) * sizeof *c->m->params);
        c->m->params[c->m->n_params++] = id;
    }
    elab_bind(c->fr, st->name, elab_finish(c, id));
}

/* name = expr, or a, b = expr (a list of as many values) */
static void stmt_assign(elab *c, const ast_stmt *st) {
    if (st->suffix != BATCH_PLAIN)
        elab_err(c, st->loc, "'%s' is only allowed on batch in a train block", st->suffix == BATCH_GLOBAL ? "global" : "per replica");
    value v = elab_eval(c, st->expr);
    if (!st->targets) return elab_bind(c->fr, st->name, v);
    int n = 0;
    for (const ast_name *t = st->targets; t; t = t->next) n++;
    if (v.k != V_ERR && (v.k != V_LIST || v.list->n != n))
        elab_err(c, st->expr->loc, "cannot unpack %s into %d names", elab_describe(c, v), n), v = ERR;
    int k = 0;
    for (const ast_name *t = st->targets; t; t = t->next, k++) elab_bind(c->fr, t->name, v.k == V_ERR ? ERR : v.list->v[k]);
}

const char *const elab_stmt_names[] = {"assignment", "param", "return", "input", "loss", "metric", "output",
                                       "setting", "state", "if", "for", "loss +="};


/* The truth of a compile-time condition (Python's: nonzero numbers, nonempty
 * strings and lists); false with an error for a tensor. */
bool elab_truth(elab *c, value v, ir_loc loc, bool *ok) {
    *ok = true;
    switch (v.k) {
    case V_INT: return v.i != 0;
    case V_FLOAT: return v.f != 0;
    case V_STR: return v.s[0] != 0;
    case V_LIST: return v.list->n > 0;
    case V_ERR: *ok = false; return false;
    case V_TENSOR:
        elab_err(c, loc, "a tensor has no truth value at compile time, got %s; for a per-element choice use where(mask, a, b)",
                 elab_describe(c, v));
        break;
    default: elab_err(c, loc, "%s has no truth value", elab_describe(c, v)); break;
    }
    *ok = false;
    return false;
}

/* Runs statements of a function (ms NULL) or of the model block; a name bound
 * inside an if or for body keeps its value after it, as in Python. Returns
 * true once a return ran, its value in *ret. */
bool elab_run_stmts(elab *c, const ast_stmt *s, model_state *ms, value *ret) {
    for (; s; s = s->next) {
        bool ok;
        switch (s->kind) {
        case ST_ASSIGN: stmt_assign(c, s); break;
        case ST_PARAM: case ST_STATE: stmt_param(c, s); break;
        case ST_RETURN:
            if (ms) {
                elab_err(c, s->loc, "'return' is not allowed in a model");
                break;
            }
            *ret = elab_eval(c, s->expr);
            if (s->next) elab_err(c, s->next->loc, "statement after 'return'");
            return true;
        case ST_IF: {
            bool taken = elab_truth(c, elab_eval(c, s->expr), s->expr->loc, &ok);
            if (ok && elab_run_stmts(c, taken ? s->body : s->orelse, ms, ret)) return true;
            break;
        }
        case ST_FOR: {
            value seq = elab_eval(c, s->expr);
            if (seq.k != V_LIST && seq.k != V_ERR)
                elab_err(c, s->expr->loc, "'for' needs a list, such as range(n), got %s", elab_describe(c, seq));
            for (int k = 0; seq.k == V_LIST && k < seq.list->n; k++) {
                elab_bind(c->fr, s->name, seq.list->v[k]);
                if (elab_run_stmts(c, s->body, ms, ret)) return true;
            }
            break;
        }
        case ST_ADD_LOSS: elab_add_loss(c, s); break;
        default:
            if (ms) elab_model_stmt(c, s, ms);
            else elab_err(c, s->loc, "'%s' is not allowed in a function", elab_stmt_names[s->kind]);
            break;
        }
    }
    return false;
}

value elab_run_body(elab *c, const ast_stmt *s) {
    value v;
    if (elab_run_stmts(c, s, NULL, &v)) return v;
    elab_err(c, c->fr->user_loc, "'%s' returns no value", c->fr->fn->name);
    return ERR;
}
