/* optimizer.c - slot variables and one in-place update node per param (Keras 3 formulas).
 *
 * Per step t (1-based), param p, gradient g, rate lr (through the schedule); every
 * optimizer first clips g (clipnorm: g * c / max(||g||, c); global_clipnorm: the same
 * with the norm of all gradients together) and decays p -= lr*weight_decay*p (decoupled):
 *   sgd      momentum = 0: p -= lr*g
 *            else v = momentum*v - lr*g;  p += nesterov ? momentum*v - lr*g : v
 *   adam     lr_t = lr*sqrt(1-beta2^t)/(1-beta1^t);
 *            m += (1-beta1)*(g-m); v += (1-beta2)*(g*g-v); p -= lr_t*m/(sqrt(v)+epsilon)
 *   rmsprop  ms = rho*ms + (1-rho)*g*g; d = lr*g/sqrt(ms+epsilon);
 *            momentum > 0: mom = momentum*mom + d, p -= mom; else p -= d
 *   adagrad  acc (initial_accumulator_value before step 1) += g*g; p -= lr*g/sqrt(acc+epsilon)
 *   nadam    u_i = beta1*(1 - 0.5*0.96^(0.004 i)), U_t = u_1...u_t; m, v as adam;
 *            p -= lr*(u_{t+1} m/(1-U_t u_{t+1}) + (1-u_t) g/(1-U_t)) / (sqrt(v/(1-beta2^t))+epsilon)
 *   lamb     m, v as adam; r = (m/(1-beta1^t)) / (sqrt(v/(1-beta2^t))+epsilon);
 *            p -= lr * (||p|| > 0 && ||r|| > 0 ? ||p||/||r|| : 1) * r   (norms of the whole param)
 * The clipping norms are nodes: sq_norm(g) per param, or one sq_norm(g_1..g_n) that
 * every update takes as its last input (after replication, of the all-reduced gradients).
 */
#include <stdio.h>
#include <stdlib.h>

#include "pass_impl.h"
#include "passes.h"


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

static const ir_op update_ops[OPT_COUNT] = {
    [OPT_SGD] = OP_SGD_UPDATE, [OPT_ADAM] = OP_ADAM_UPDATE, [OPT_ADAMW] = OP_ADAM_UPDATE,
    [OPT_RMSPROP] = OP_RMSPROP_UPDATE, [OPT_ADAGRAD] = OP_ADAGRAD_UPDATE, [OPT_NADAM] = OP_NADAM_UPDATE,
    [OPT_LAMB] = OP_LAMB_UPDATE,
};

/* The slots of param p: their suffixes, as Keras names them. */
static int slots(const ir_optimizer *o, ir_module *m, int p, int *in) {
    int n = 0;
    switch (o->kind) {
    case OPT_SGD: if (o->momentum > 0) in[n++] = slot(m, p, "velocity"); break;
    case OPT_RMSPROP:
        in[n++] = slot(m, p, "ms");
        if (o->momentum > 0) in[n++] = slot(m, p, "momentum");
        break;
    case OPT_ADAGRAD: in[n++] = slot(m, p, "accumulator"); break;
    default: in[n++] = slot(m, p, "m"), in[n++] = slot(m, p, "v"); break;
    }
    return n;
}

/* The update node of param i: op(param, grad, slots...[, norm]) with the
 * hyper-parameters; norm: the squared norm it clips by, -1 for none. */
static void update(ir_module *m, int i, int norm) {
    const ir_optimizer *o = &m->opt;
    int p = m->params[i], in[6] = {p, m->grads[i]}, n_in = 2;
    ir_op op = update_ops[o->kind];
    n_in += slots(o, m, p, in + 2);
    if (norm >= 0) in[n_in++] = norm;

    int u = ir_add(m, op, in, n_in, ir_node_at(m, p)->loc);
    ir_node *n = ir_node_at(m, u);
    set_fattr(n, "lr", o->lr), set_fattr(n, "weight_decay", o->weight_decay);
    set_fattr(n, "clipnorm", norm < 0 ? 0 : o->clipnorm > 0 ? o->clipnorm : o->global_clipnorm);
    if (op == OP_SGD_UPDATE) {
        set_fattr(n, "momentum", o->momentum);
        n->iattr[ir_op_iattr_index(op, "nesterov")] = o->nesterov;
    } else if (op == OP_RMSPROP_UPDATE) {
        set_fattr(n, "rho", o->rho), set_fattr(n, "momentum", o->momentum), set_fattr(n, "epsilon", o->epsilon);
    } else if (op == OP_ADAGRAD_UPDATE) {
        set_fattr(n, "initial_accumulator_value", o->initial_accumulator_value), set_fattr(n, "epsilon", o->epsilon);
    } else {
        set_fattr(n, "beta1", o->beta1), set_fattr(n, "beta2", o->beta2), set_fattr(n, "epsilon", o->epsilon);
    }
    char err[256];
    ASSERT(ir_infer_node(m, u, err, sizeof err), "optimizer built a bad '%s': %s", ir_ops[op].name, err);
}

/* sq_norm of the gradients of params [first, first + count) */
static int sq_norm(ir_module *m, int first, int count) {
    int in[count];
    for (int k = 0; k < count; k++) in[k] = m->grads[first + k];
    int s = ir_add(m, OP_SQ_NORM, in, count, ir_node_at(m, m->params[first])->loc);
    char err[256];
    ASSERT(ir_infer_node(m, s, err, sizeof err), "optimizer built a bad 'sq_norm': %s", err);
    return s;
}

/* Each param gets its slots (VARs, zeros) and one update node taking
 * (param, grad, slots...[, norm]). Nothing else is recorded: later passes find the
 * updates by op. */
bool pass_optimizer(ir_module *m, ir_diag *d, const pass_options *o) {
    (void)d, (void)o;
    if (!m->has_train) return true;
    ASSERT(m->grads || m->n_params == 0, "optimizer runs before autodiff");
    int global = m->opt.global_clipnorm > 0 && m->n_params > 0 ? sq_norm(m, 0, m->n_params) : -1;
    for (int i = 0; i < m->n_params; i++) update(m, i, m->opt.clipnorm > 0 ? sq_norm(m, i, 1) : global);
    return true;
}
