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
#define ALL ((1u << OPT_COUNT) - 1)
static const hyper hypers[] = {
    {"learning_rate", offsetof(ir_optimizer, lr), ALL},
    {"momentum", offsetof(ir_optimizer, momentum), B(SGD) | B(RMSPROP)},
    {"nesterov", offsetof(ir_optimizer, nesterov), B(SGD)},
    {"beta_1", offsetof(ir_optimizer, beta1), B(ADAM) | B(ADAMW) | B(NADAM) | B(LAMB)},
    {"beta_2", offsetof(ir_optimizer, beta2), B(ADAM) | B(ADAMW) | B(NADAM) | B(LAMB)},
    {"epsilon", offsetof(ir_optimizer, epsilon), ALL & ~B(SGD)},
    {"rho", offsetof(ir_optimizer, rho), B(RMSPROP)},
    {"initial_accumulator_value", offsetof(ir_optimizer, initial_accumulator_value), B(ADAGRAD)},
    {"weight_decay", offsetof(ir_optimizer, weight_decay), ALL},
    {"clipnorm", offsetof(ir_optimizer, clipnorm), ALL},
    {"global_clipnorm", offsetof(ir_optimizer, global_clipnorm), ALL},
};

/* Keras defaults of each optimizer. */
ir_optimizer elab_optimizer_defaults(ir_optimizer_kind k) {
    ir_optimizer o = {.kind = k, .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-7};
    if (k == OPT_SGD) o.lr = 0.01;
    if (k == OPT_ADAMW) o.weight_decay = 0.004;
    if (k == OPT_RMSPROP) o.rho = 0.9;
    if (k == OPT_ADAGRAD) o.initial_accumulator_value = 0.1;
    if (k == OPT_LAMB) o.epsilon = 1e-6;
    return o;
}

/* One argument of a schedule: an int (steps) or a number, in a range. */
static bool schedule_arg(elab *c, const ast_arg *a, bool integer, double lo, double hi, double *out) {
    value v = elab_eval(c, a->value);
    if (v.k == V_ERR) return false;
    if (integer ? v.k != V_INT : !is_num(v))
        return elab_err(c, a->value->loc, "'%s' must be %s, got %s", a->name ? a->name : "the initial rate",
                        integer ? "an int" : "a number", elab_describe(c, v)), false;
    if (!(num(v) >= lo && num(v) <= hi))
        return elab_err(c, a->value->loc, "'%s' must be in [%g, %g], got %g", a->name ? a->name : "the initial rate", lo, hi,
                        num(v)), false;
    *out = num(v);
    return true;
}

/* A list argument of piecewise_constant: numbers (ints for boundaries). */
static int schedule_list(elab *c, const ast_arg *a, bool integer, double *out, int max) {
    value v = elab_eval(c, a->value);
    if (v.k == V_ERR) return -1;
    if (v.k != V_LIST || v.list->n < 1 || v.list->n > max)
        return elab_err(c, a->value->loc, "'%s' must be a list of 1 to %d numbers", a->name, max), -1;
    for (int k = 0; k < v.list->n; k++) {
        value x = v.list->v[k];
        if (integer ? x.k != V_INT : !is_num(x)) return elab_err(c, a->value->loc, "'%s' must hold %s", a->name, integer ? "ints" : "numbers"), -1;
        out[k] = num(x);
    }
    return v.list->n;
}

/* learning_rate: cosine_decay(initial, decay_steps:, alpha:, warmup_target:, warmup_steps:)
 *              | exponential_decay(initial, decay_steps:, decay_rate:, staircase:)
 *              | piecewise_constant(boundaries: [..], values: [..])   (Keras 3's) */
static void set_schedule(elab *c, ir_optimizer *o, const ast_expr *e) {
    const char *kind = e->lhs->kind == EX_NAME ? e->lhs->name : "";
    ir_lr_schedule s = {0};
    int k = 1;
    while (k < LR_COUNT && strcmp(kind, ir_lr_names[k])) k++;
    if (k == LR_COUNT)
        return elab_err(c, e->loc, "learning_rate must be a number or a schedule: cosine_decay, exponential_decay or piecewise_constant");
    s.kind = (ir_lr_kind)k;
    static const char *const takes[LR_COUNT] = {"", "initial, decay_steps, alpha, warmup_target, warmup_steps",
                                                 "initial, decay_steps, decay_rate, staircase", "boundaries, values"};
    double lr = 0, x, bounds[IR_MAX_BOUNDARIES + 1];
    int n_values = 0, pos = 0;
    bool ok = true, has_lr = false;
    for (const ast_arg *a = e->args; a && ok; a = a->next) {
        const char *name = a->name ? a->name : pos++ == 0 && s.kind != LR_PIECEWISE_CONSTANT ? "initial" : "?";
        if (!strcmp(name, "initial")) ok = schedule_arg(c, a, false, 1e-300, 1e300, &lr), has_lr = true;
        else if (!strcmp(name, "decay_steps") && s.kind != LR_PIECEWISE_CONSTANT)
            ok = schedule_arg(c, a, true, 1, 1e15, &x), s.decay_steps = (int64_t)x;
        else if (!strcmp(name, "alpha") && s.kind == LR_COSINE_DECAY) ok = schedule_arg(c, a, false, 0, 1, &s.alpha);
        else if (!strcmp(name, "warmup_target") && s.kind == LR_COSINE_DECAY) ok = schedule_arg(c, a, false, 1e-300, 1e300, &s.warmup_target);
        else if (!strcmp(name, "warmup_steps") && s.kind == LR_COSINE_DECAY)
            ok = schedule_arg(c, a, true, 0, 1e15, &x), s.warmup_steps = (int64_t)x;
        else if (!strcmp(name, "decay_rate") && s.kind == LR_EXPONENTIAL_DECAY) ok = schedule_arg(c, a, false, 1e-300, 1e300, &s.decay_rate);
        else if (!strcmp(name, "staircase") && s.kind == LR_EXPONENTIAL_DECAY) ok = schedule_arg(c, a, true, 0, 1, &x), s.staircase = x != 0;
        else if (!strcmp(name, "boundaries") && s.kind == LR_PIECEWISE_CONSTANT) {
            ok = (s.n_boundaries = schedule_list(c, a, true, bounds, IR_MAX_BOUNDARIES)) > 0;
            for (int i = 0; ok && i < s.n_boundaries; i++) s.boundaries[i] = (int64_t)bounds[i];
        } else if (!strcmp(name, "values") && s.kind == LR_PIECEWISE_CONSTANT)
            ok = (n_values = schedule_list(c, a, false, s.values, IR_MAX_BOUNDARIES + 1)) > 0;
        else ok = false, elab_err(c, a->loc, "'%s' takes %s", kind, takes[s.kind]);
    }
    if (!ok) return;
    if (s.kind == LR_PIECEWISE_CONSTANT) {
        if (n_values != s.n_boundaries + 1)
            return elab_err(c, e->loc, "piecewise_constant needs one value more than boundaries, got %d values and %d boundaries", n_values, s.n_boundaries);
        for (int i = 1; i < s.n_boundaries; i++)
            if (s.boundaries[i] <= s.boundaries[i - 1]) return elab_err(c, e->loc, "the boundaries of piecewise_constant must increase");
        lr = s.values[0], has_lr = true;
    } else if (!has_lr || !s.decay_steps) {
        return elab_err(c, e->loc, "'%s' needs the initial rate and decay_steps", kind);
    } else if (s.kind == LR_EXPONENTIAL_DECAY && !s.decay_rate) {
        return elab_err(c, e->loc, "'exponential_decay' needs decay_rate");
    }
    o->lr = lr, o->schedule = s;
}

/* "learning_rate, momentum, nesterov": the hyper-parameters of optimizer kind k */
static const char *hypers_of(elab *c, ir_optimizer_kind k) {
    char buf[256] = "";
    for (size_t i = 0; i < sizeof hypers / sizeof *hypers; i++)
        if (hypers[i].kinds >> k & 1) strcat(strcat(buf, *buf ? ", " : ""), hypers[i].name);
    return elab_fmt(c, "%s", buf);
}

static void set_hyper(elab *c, ir_optimizer *o, const char *opt, const char *name, const ast_expr *e, ir_loc loc) {
    const hyper *h = NULL;
    for (size_t i = 0; i < sizeof hypers / sizeof *hypers; i++)
        if (!strcmp(hypers[i].name, name) && hypers[i].kinds >> o->kind & 1) h = &hypers[i];
    if (!h) return elab_err(c, loc, "'%s' has no hyper-parameter '%s'; it takes %s", opt, name, hypers_of(c, o->kind));
    if (!strcmp(name, "learning_rate") && e->kind == EX_CALL) return set_schedule(c, o, e);
    value v = elab_eval(c, e);
    if (v.k == V_ERR) return;
    if (!is_num(v)) return elab_err(c, e->loc, "hyper-parameter '%s' must be a number, got %s", name, elab_describe(c, v));
    bool positive = !strcmp(name, "learning_rate") || strstr(name, "clipnorm");
    if (!strcmp(name, "nesterov")) *(bool *)((char *)o + h->offset) = num(v) != 0;
    else if (num(v) < 0 || (positive && num(v) == 0))
        elab_err(c, e->loc, "hyper-parameter '%s' must be %s, got %g", name, positive ? "positive" : "non-negative", num(v));
    else *(double *)((char *)o + h->offset) = num(v);
}

/* optimizer = NAME | NAME(hyper: value, ...) */
static void train_optimizer(elab *c, const ast_expr *e) {
    const ast_expr *callee = e->kind == EX_CALL ? e->lhs : e;
    int k = -1;
    if (callee->kind == EX_NAME)
        for (int i = 0; i < OPT_COUNT; i++)
            if (!strcmp(callee->name, ir_optimizer_names[i])) k = i;
    if (k < 0) return elab_err(c, callee->loc, "unknown optimizer; expected sgd, adam, adamw, rmsprop, adagrad, nadam or lamb");
    c->m->opt = elab_optimizer_defaults((ir_optimizer_kind)k);
    int pos = 0;
    ir_loc clip_loc = e->loc; /* the later of clipnorm and global_clipnorm */
    for (const ast_arg *a = e->kind == EX_CALL ? e->args : NULL; a; a = a->next) {
        if (a->name && strstr(a->name, "clipnorm")) clip_loc = a->loc;
        if (!a->name && pos++ > 0) elab_err(c, a->loc, "'%s' takes only learning_rate without a name", callee->name);
        else set_hyper(c, &c->m->opt, callee->name, a->name ? a->name : "learning_rate", a->value, a->loc);
    }
    if (c->m->opt.clipnorm > 0 && c->m->opt.global_clipnorm > 0)
        elab_err(c, clip_loc, "only one of clipnorm and global_clipnorm can be set (Keras)");
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

/* epochs = N: how long `mgc run` trains when the command line does not say */
static void train_epochs(elab *c, const ast_stmt *s) {
    value v = elab_eval(c, s->expr);
    if (v.k == V_ERR) return;
    if (v.k != V_INT || v.i < 1 || v.i > 1000000000)
        return elab_err(c, s->expr->loc, "epochs must be an int from 1 to 10^9, got %s", v.k == V_INT ? elab_fmt(c, "%lld", (long long)v.i) : elab_describe(c, v));
    c->m->epochs = v.i;
}

static bool elab_train(elab *c, const ast_decl *t, int n_dev, int64_t *global) {
    bool has_opt = false, has_batch = false;
    int64_t per = 0, glob = 0;
    scope root = {.base = "", .path = ""};
    frame f = {.scope = &root};
    c->fr = &f;
    for (const ast_stmt *s = t->body; s; s = s->next) {
        bool opt = s->kind == ST_ASSIGN && !strcmp(s->name, "optimizer"), batch = s->kind == ST_ASSIGN && !strcmp(s->name, "batch");
        bool epochs = s->kind == ST_ASSIGN && !strcmp(s->name, "epochs");
        if (s->kind != ST_ASSIGN) elab_err(c, s->loc, "'%s' is not allowed in a train block", elab_stmt_names[s->kind]);
        else if ((opt && has_opt) || (batch && has_batch) || (epochs && c->m->epochs)) elab_err(c, s->loc, "'%s' is set twice", s->name);
        else if (opt) train_optimizer(c, s->expr), has_opt = true;
        else if (batch) train_batch(c, s, &per, &glob), has_batch = true;
        else if (epochs) train_epochs(c, s);
        else elab_err(c, s->loc, "unknown train setting '%s'; expected optimizer, batch or epochs", s->name);
        if ((opt || epochs) && s->suffix != BATCH_PLAIN) elab_err(c, s->loc, "'per replica' and 'global' only apply to batch");
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

