/* ref_eval_optim.c - the reference evaluator's optimizer updates (Keras 3
 * formulas; see passes/optimizer.c) and the clipping norm's sum of squares. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_eval_impl.h"

#include "../../ir/order.h" /* ir_update_norm_input */

static double fattr(const ir_node *n, const char *name) { return n->fattr[ir_op_fattr_index(n->op, name)]; }

/* Nadam's u_i = b1 (1 - 0.5 * 0.96^(0.004 i)) */
static double nadam_u(double b1, int64_t i) { return b1 * (1 - 0.5 * pow(0.96, 0.004 * (double)i)); }

/* one element of every optimizer but lamb (clipped gradient g); Keras 3 formulas */
static void update_element(const ir_node *n, double *p, double g, double *s1, double *s2, double lr, int64_t step) {
    double eps = n->op == OP_SGD_UPDATE ? 0 : fattr(n, "epsilon"), t = (double)step;
    *p -= lr * fattr(n, "weight_decay") * *p;
    if (n->op == OP_SGD_UPDATE) {
        double mom = fattr(n, "momentum");
        if (!s1) *p -= lr * g;
        else {
            *s1 = mom * *s1 - lr * g;
            *p += n->iattr[0] ? mom * *s1 - lr * g : *s1;
        }
    } else if (n->op == OP_ADAM_UPDATE) {
        double b1 = fattr(n, "beta1"), b2 = fattr(n, "beta2");
        double lr_t = lr * sqrt(1 - pow(b2, t)) / (1 - pow(b1, t));
        *s1 += (1 - b1) * (g - *s1);
        *s2 += (1 - b2) * (g * g - *s2);
        *p -= lr_t * *s1 / (sqrt(*s2) + eps);
    } else if (n->op == OP_RMSPROP_UPDATE) {
        double rho = fattr(n, "rho");
        *s1 = rho * *s1 + (1 - rho) * g * g;
        double d = lr * g / sqrt(*s1 + eps);
        if (s2) *s2 = fattr(n, "momentum") * *s2 + d, *p -= *s2;
        else *p -= d;
    } else if (n->op == OP_ADAGRAD_UPDATE) {
        if (step == 1) *s1 = fattr(n, "initial_accumulator_value");
        *s1 += g * g;
        *p -= lr * g / sqrt(*s1 + eps);
    } else { /* nadam */
        double b1 = fattr(n, "beta1"), b2 = fattr(n, "beta2"), u_prod = 1;
        for (int64_t i = 1; i <= step; i++) u_prod *= nadam_u(b1, i);
        double u_t = nadam_u(b1, step), u_t1 = nadam_u(b1, step + 1);
        *s1 += (g - *s1) * (1 - b1);
        *s2 += (g * g - *s2) * (1 - b2);
        double m_hat = u_t1 * *s1 / (1 - u_prod * u_t1) + (1 - u_t) * g / (1 - u_prod);
        *p -= m_hat * lr / (sqrt(*s2 / (1 - pow(b2, t))) + eps);
    }
}

/* lamb: decay, moments, r = m_hat / (sqrt(v_hat) + eps), p -= lr * ||p|| / ||r|| * r */
static void update_lamb(const ir_node *n, args *t, double *p, double *m, double *v, double scale, double lr,
                        int64_t step) {
    double b1 = fattr(n, "beta1"), b2 = fattr(n, "beta2"), eps = fattr(n, "epsilon"), wd = fattr(n, "weight_decay");
    double c1 = 1 - pow(b1, (double)step), c2 = 1 - pow(b2, (double)step), w2 = 0, r2 = 0;
    double *r = malloc((size_t)t->len * sizeof *r);
    for (int64_t k = 0; k < t->len; k++) {
        double g = t->b[k] * scale;
        p[k] -= p[k] * wd * lr;
        m[k] = m[k] * b1 + g * (1 - b1);
        v[k] = v[k] * b2 + g * g * (1 - b2);
        r[k] = (m[k] / c1) / (sqrt(v[k] / c2) + eps);
        w2 += p[k] * p[k], r2 += r[k] * r[k];
    }
    double ratio = w2 > 0 && r2 > 0 ? sqrt(w2) / sqrt(r2) : 1;
    for (int64_t k = 0; k < t->len; k++) p[k] -= ratio * lr * r[k];
    free(r);
}

void ref_eval_update(ref_eval *e, args *t, int64_t step) {
    const ir_node *n = t->n;
    int norm = ir_update_norm_input(n), slots = n->n_in - 2 - (norm >= 0);
    double *p = e->val[n->in[0]], *s1 = slots > 0 ? e->val[n->in[2]] : NULL, *s2 = slots > 1 ? e->val[n->in[3]] : NULL;
    ir_optimizer o = e->m->opt;
    o.lr = fattr(n, "lr");
    double lr = ir_learning_rate(&o, step - 1), clip = fattr(n, "clipnorm");
    double scale = norm < 0 ? 1 : clip / fmax(sqrt(e->val[n->in[norm]][0]), clip);
    if (n->op == OP_LAMB_UPDATE) update_lamb(n, t, p, s1, s2, scale, lr, step);
    else
        for (int64_t k = 0; k < t->len; k++) update_element(n, &p[k], t->b[k] * scale, s1 ? &s1[k] : NULL, s2 ? &s2[k] : NULL, lr, step);
    memcpy(t->out, p, (size_t)t->len * sizeof *p);
}

/* sq_norm: the sum of squares of every input */
void ref_eval_sq_norm(ref_eval *e, args *t) {
    double s = 0;
    for (int j = 0; j < t->n->n_in; j++) {
        const double *x = e->val[t->n->in[j]];
        for (int64_t k = 0; k < ir_shape_numel(&e->m->g.nodes[t->n->in[j]].shape); k++) s += x[k] * x[k];
    }
    t->out[0] = s;
}
