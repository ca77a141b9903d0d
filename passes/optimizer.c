/* optimizer.c - slot variables and one in-place update node per param (Keras formulas).
 *
 * Per step t (1-based), param p, gradient g; the kernels follow Keras:
 *   sgd      momentum = 0: p -= lr*g
 *            else v = momentum*v - lr*g;  p += nesterov ? momentum*v - lr*g : v
 *   adam     lr_t = lr*sqrt(1-beta2^t)/(1-beta1^t); p -= lr*weight_decay*p (AdamW, first);
 *            m += (1-beta1)*(g-m); v += (1-beta2)*(g*g-v); p -= lr_t*m/(sqrt(v)+epsilon)
 *   rmsprop  ms = rho*ms + (1-rho)*g*g; d = lr*g/sqrt(ms+epsilon);
 *            momentum > 0: mom = momentum*mom + d, p -= mom; else p -= d
 */
#include <stdio.h>
#include <stdlib.h>

#include "passes.h"

#define ASSERT(c, ...)                                                             \
    do {                                                                           \
        if (!(c)) {                                                                \
            fprintf(stderr, "mgc: internal error at %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                          \
            fputc('\n', stderr);                                                   \
            abort();                                                               \
        }                                                                          \
    } while (0)

/* VAR "<param>/<suffix>" of the param's type, initialized to zeros. */
static int slot(ir_module *m, int param, const char *suffix) {
    ir_node p = *ir_node_at(m, param); /* a copy: ir_add moves the array */
    char name[512];
    snprintf(name, sizeof name, "%s/%s", p.name ? p.name : "param", suffix);
    int i = ir_add(m, OP_VAR, NULL, 0, p.loc);
    ir_node *v = ir_node_at(m, i);
    v->dtype = p.dtype;
    v->shape = p.shape;
    v->iattr[0] = INIT_ZEROS;
    v->name = ir_intern(m, name);
    return i;
}

static void set_fattr(ir_node *n, const char *name, double v) {
    int k = ir_op_fattr_index(n->op, name);
    ASSERT(k >= 0, "'%s' has no attribute '%s'", ir_ops[n->op].name, name);
    n->fattr[k] = v;
}

/* The update node of param i: op(param, grad, slots...) with the hyper-parameters. */
static void update(ir_module *m, int i) {
    const ir_optimizer *o = &m->opt;
    int p = m->params[i], in[4] = {p, m->grads[i]}, n_in = 2;
    ir_op op = o->kind == OPT_SGD ? OP_SGD_UPDATE : o->kind == OPT_RMSPROP ? OP_RMSPROP_UPDATE : OP_ADAM_UPDATE;
    if (o->kind == OPT_SGD && o->momentum > 0) in[n_in++] = slot(m, p, "velocity");
    if (o->kind == OPT_ADAM || o->kind == OPT_ADAMW) in[n_in++] = slot(m, p, "m"), in[n_in++] = slot(m, p, "v");
    if (o->kind == OPT_RMSPROP) in[n_in++] = slot(m, p, "ms");
    if (o->kind == OPT_RMSPROP && o->momentum > 0) in[n_in++] = slot(m, p, "momentum");

    int u = ir_add(m, op, in, n_in, ir_node_at(m, p)->loc);
    ir_node *n = ir_node_at(m, u);
    set_fattr(n, "lr", o->lr);
    if (op == OP_SGD_UPDATE) {
        set_fattr(n, "momentum", o->momentum);
        n->iattr[ir_op_iattr_index(op, "nesterov")] = o->nesterov;
    } else if (op == OP_ADAM_UPDATE) {
        set_fattr(n, "beta1", o->beta1), set_fattr(n, "beta2", o->beta2);
        set_fattr(n, "epsilon", o->epsilon), set_fattr(n, "weight_decay", o->weight_decay);
    } else {
        set_fattr(n, "rho", o->rho), set_fattr(n, "momentum", o->momentum), set_fattr(n, "epsilon", o->epsilon);
    }
    char err[256];
    ASSERT(ir_infer_node(m, u, err, sizeof err), "optimizer built a bad '%s': %s", ir_ops[op].name, err);
}

/* Each param gets its slots (VARs, zeros) and one update node taking
 * (param, grad, slots...). Nothing else is recorded: later passes find the
 * updates by op. */
bool pass_optimizer(ir_module *m, ir_diag *d, const pass_options *o) {
    (void)d, (void)o;
    if (!m->has_train) return true;
    ASSERT(m->grads || m->n_params == 0, "optimizer runs before autodiff");
    for (int i = 0; i < m->n_params; i++) update(m, i);
    return true;
}
