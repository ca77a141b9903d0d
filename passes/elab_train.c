/* elab_train.c - the train block: optimizer and hyper-parameters (Keras
 * defaults), batch per replica or global. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elab.h"

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
ir_optimizer elab_optimizer_defaults(ir_optimizer_kind k) {
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
    if (!h) return elab_err(c, loc, "'%s' has no hyper-parameter '%s'", opt, name);
    value v = elab_eval(c, e);
    if (v.k == V_ERR) return;
    if (!is_num(v)) return elab_err(c, e->loc, "hyper-parameter '%s' must be a number, got %s", name, elab_describe(c, v));
    if (!strcmp(name, "nesterov")) *(bool *)((char *)o + h->offset) = num(v) != 0;
    else if (num(v) < 0 || (!strcmp(name, "learning_rate") && num(v) == 0))
        elab_err(c, e->loc, "hyper-parameter '%s' must be %s, got %g", name, name[0] == 'l' ? "positive" : "non-negative", num(v));
    else *(double *)((char *)o + h->offset) = num(v);
}

/* optimizer = NAME | NAME(hyper: value, ...) */
static void train_optimizer(elab *c, const ast_expr *e) {
    const ast_expr *callee = e->kind == EX_CALL ? e->lhs : e;
    int k = -1;
    if (callee->kind == EX_NAME)
        for (int i = 0; i < OPT_COUNT; i++)
            if (!strcmp(callee->name, ir_optimizer_names[i])) k = i;
    if (k < 0) return elab_err(c, callee->loc, "unknown optimizer; expected sgd, adam, adamw or rmsprop");
    c->m->opt = elab_optimizer_defaults((ir_optimizer_kind)k);
    int pos = 0;
    for (const ast_arg *a = e->kind == EX_CALL ? e->args : NULL; a; a = a->next) {
        if (!a->name && pos++ > 0) elab_err(c, a->loc, "'%s' takes only learning_rate without a name", callee->name);
        else set_hyper(c, &c->m->opt, callee->name, a->name ? a->name : "learning_rate", a->value, a->loc);
    }
}

/* batch = INT per replica | INT global */
static void train_batch(elab *c, const ast_stmt *s, int64_t *per_replica, int64_t *global) {
    value v = elab_eval(c, s->expr);
    if (v.k == V_ERR) return;
    if (v.k != V_INT || v.i < 1 || v.i > MAX_DIM)
        return elab_err(c, s->expr->loc, "batch must be a positive int, got %s", v.k == V_INT ? elab_fmt(c, "%lld", (long long)v.i) : elab_describe(c, v));
    if (s->suffix == BATCH_PLAIN) return elab_err(c, s->loc, "say 'batch = %lld per replica' or 'batch = %lld global'", (long long)v.i, (long long)v.i);
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
        if (s->kind != ST_ASSIGN) elab_err(c, s->loc, "'%s' is not allowed in a train block", elab_stmt_names[s->kind]);
        else if ((opt && has_opt) || (batch && has_batch)) elab_err(c, s->loc, "'%s' is set twice", s->name);
        else if (opt) train_optimizer(c, s->expr), has_opt = true;
        else if (batch) train_batch(c, s, &per, &glob), has_batch = true;
        else elab_err(c, s->loc, "unknown train setting '%s'; expected optimizer or batch", s->name);
        if (opt && s->suffix != BATCH_PLAIN) elab_err(c, s->loc, "'per replica' and 'global' only apply to batch");
    }
    if (!has_opt) elab_err(c, t->name_loc, "train block '%s' has no optimizer", t->name);
    if (!has_batch) elab_err(c, t->name_loc, "train block '%s' has no batch", t->name);
    c->fr = NULL;
    free(f.b);
    *global = per ? per * n_dev : glob;
    return has_opt && has_batch;
}

/* Global and per-replica batch from the options, else the train block. */
void elab_set_batch(elab *c, const ast_decl *train, const pass_options *o, int n_dev) {
    int64_t global = 0;
    bool ok = !train || elab_train(c, train, n_dev, &global);
    if (o && o->global_batch > 0) global = o->global_batch;
    if (!global) global = n_dev;
    if (ok && global % n_dev) {
        ir_loc loc = train ? train->loc : (ir_loc){0};
        elab_err(c, loc, "global batch %lld is not divisible by %d replicas", (long long)global, n_dev);
    }
    c->m->global_batch = global;
    c->m->batch_per_replica = global / n_dev > 0 ? global / n_dev : 1;
}

