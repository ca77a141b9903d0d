/* optim.c - in-place optimizer updates (Keras 3 formulas in runtime/ops_math.h):
 * SGD with momentum / Nesterov, Adam / AdamW, RMSprop, Adagrad, Nadam, Lamb,
 * each with decoupled weight decay and gradient clipping by a squared norm
 * input (sq_norm, also here); the learning rate of each step through the
 * plan's schedule (rt_update_rate). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <string.h>

#include "../../ir/order.h"
#include "../ops_math.h"
#include "kernels_impl.h"

#define SLOT(k, i) ((float *)(k)->in[i])

/* the param, updated in place; an executor that gave the output its own
 * memory gets the param copied there first */
static float *param(const rt_kernel_args *k) {
    if (k->out != k->in[0]) memcpy(k->out, k->in[0], (size_t)ir_node_bytes(k->node));
    return k->out;
}

static double fattr(const rt_kernel_args *k, const char *name) {
    return k->node->fattr[ir_op_fattr_index(k->node->op, name)];
}

/* what clipping multiplies the gradient by (1 without a norm input) */
static float clip_scale(const rt_kernel_args *k) {
    int norm = ir_update_norm_input(k->node);
    return norm < 0 ? 1.0f : mg_clip_scale(*IN_F32(k, norm), (float)fattr(k, "clipnorm"));
}

/* slots: the inputs after (p, g), without the norm */
static int n_slots(const rt_kernel_args *k) { return k->node->n_in - 2 - (ir_update_norm_input(k->node) >= 0); }

static int need_step(const rt_kernel_args *k, char *err, size_t cap) {
    int64_t t = k->step ? *k->step : 0;
    if (t < 1) return cpu_kerr(k, err, cap, "step counter is %lld, updates count from 1", (long long)t);
    return 0;
}

/* (p, g[, velocity][, norm]); fattr: lr, momentum, weight_decay, clipnorm; iattr: nesterov */
int cpu_k_sgd(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    double lr = rt_update_rate(k);
    float *p = param(k), mu = (float)k->node->fattr[1], lr_wd = (float)(lr * fattr(k, "weight_decay")), sc = clip_scale(k);
    const float *g = IN_F32(k, 1);
    int64_t n = OUT_NUMEL(k);
    if (n_slots(k) == 0) {
        for (int64_t i = 0; i < n; i++) mg_decay(&p[i], lr_wd), mg_sgd(&p[i], g[i] * sc, (float)lr);
        return 0;
    }
    float *v = SLOT(k, 2);
    int nesterov = k->node->iattr[0] != 0;
    for (int64_t i = 0; i < n; i++) mg_decay(&p[i], lr_wd), mg_sgd_momentum(&p[i], g[i] * sc, &v[i], (float)lr, mu, nesterov);
    return 0;
}

CPU_CLONES static void adam_loop(float *p, const float *g, float *m, float *v, int64_t n, float lr_t, float b1,
                                 float b2, float eps, float lr_wd, float sc) {
    for (int64_t i = 0; i < n; i++) mg_adam(&p[i], g[i] * sc, &m[i], &v[i], lr_t, b1, b2, eps, lr_wd);
}

/* (p, g, m, v[, norm]); fattr: lr, beta1, beta2, epsilon, weight_decay, clipnorm */
int cpu_k_adam(const rt_kernel_args *k, char *err, size_t cap) {
    if (need_step(k, err, cap)) return -1;
    const double *f = k->node->fattr;
    float *p = param(k), *m = SLOT(k, 2), *v = SLOT(k, 3);
    const float *g = IN_F32(k, 1);
    double lr = rt_update_rate(k);
    float b1 = (float)f[1], b2 = (float)f[2], eps = (float)f[3], lr_wd = (float)(lr * f[4]);
    float lr_t = mg_adam_lr_t((float)lr, b1, b2, *k->step);
    adam_loop(p, g, m, v, OUT_NUMEL(k), lr_t, b1, b2, eps, lr_wd, clip_scale(k));
    return 0;
}

CPU_CLONES static void rmsprop_loop(float *p, const float *g, float *ms, float *mom, int64_t n, float lr, float rho,
                                    float mu, float eps, float lr_wd, float sc) {
    if (!mom)
        for (int64_t i = 0; i < n; i++) mg_decay(&p[i], lr_wd), mg_rmsprop(&p[i], g[i] * sc, &ms[i], lr, rho, eps);
    else
        for (int64_t i = 0; i < n; i++)
            mg_decay(&p[i], lr_wd), mg_rmsprop_momentum(&p[i], g[i] * sc, &ms[i], &mom[i], lr, rho, mu, eps);
}

/* (p, g, ms[, mom][, norm]); fattr: lr, rho, momentum, epsilon, weight_decay, clipnorm */
int cpu_k_rmsprop(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    const double *f = k->node->fattr;
    double lr = rt_update_rate(k);
    float *p = param(k), *ms = SLOT(k, 2), rho = (float)f[1], mu = (float)f[2], eps = (float)f[3];
    const float *g = IN_F32(k, 1);
    rmsprop_loop(p, g, ms, n_slots(k) > 1 ? SLOT(k, 3) : NULL, OUT_NUMEL(k), (float)lr, rho, mu, eps,
                 (float)(lr * f[4]), clip_scale(k));
    return 0;
}

/* (p, g, acc[, norm]); fattr: lr, initial_accumulator_value, epsilon, weight_decay, clipnorm.
 * The accumulator slot starts at zeros; the first update (t == 1) takes
 * initial_accumulator_value as its previous value, as Keras initializes it. */
int cpu_k_adagrad(const rt_kernel_args *k, char *err, size_t cap) {
    if (need_step(k, err, cap)) return -1;
    const double *f = k->node->fattr;
    double lr = rt_update_rate(k);
    float *p = param(k), *acc = SLOT(k, 2), eps = (float)f[2], lr_wd = (float)(lr * f[3]), sc = clip_scale(k);
    const float *g = IN_F32(k, 1);
    int64_t n = OUT_NUMEL(k);
    if (*k->step == 1)
        for (int64_t i = 0; i < n; i++) acc[i] = (float)f[1];
    for (int64_t i = 0; i < n; i++) mg_decay(&p[i], lr_wd), mg_adagrad(&p[i], g[i] * sc, &acc[i], (float)lr, eps);
    return 0;
}

/* (p, g, m, v[, norm]); fattr: lr, beta1, beta2, epsilon, weight_decay, clipnorm */
int cpu_k_nadam(const rt_kernel_args *k, char *err, size_t cap) {
    if (need_step(k, err, cap)) return -1;
    const double *f = k->node->fattr;
    double lr = rt_update_rate(k);
    float *p = param(k), *m = SLOT(k, 2), *v = SLOT(k, 3), cm, cg, c2, sc = clip_scale(k);
    float b1 = (float)f[1], b2 = (float)f[2], eps = (float)f[3], lr_wd = (float)(lr * f[4]);
    mg_nadam_coeffs(f[1], f[2], *k->step, &cm, &cg, &c2);
    const float *g = IN_F32(k, 1);
    int64_t n = OUT_NUMEL(k);
    for (int64_t i = 0; i < n; i++) mg_decay(&p[i], lr_wd), mg_nadam(&p[i], g[i] * sc, &m[i], &v[i], (float)lr, b1, b2, eps, cm, cg, c2);
    return 0;
}

/* (p, g, m, v[, norm]); fattr: lr, beta1, beta2, epsilon, weight_decay, clipnorm.
 * Two passes: decay and moments, summing ||p||^2 and ||r||^2 (in double, in
 * element order); then p -= lr * ratio * r. */
int cpu_k_lamb(const rt_kernel_args *k, char *err, size_t cap) {
    if (need_step(k, err, cap)) return -1;
    const double *f = k->node->fattr;
    double lr = rt_update_rate(k), p_sq = 0, r_sq = 0, t = (double)*k->step;
    float *p = param(k), *m = SLOT(k, 2), *v = SLOT(k, 3), sc = clip_scale(k);
    float b1 = (float)f[1], b2 = (float)f[2], eps = (float)f[3], lr_wd = (float)(lr * f[4]);
    float c1 = (float)(1.0 - pow(f[1], t)), c2 = (float)(1.0 - pow(f[2], t));
    const float *g = IN_F32(k, 1);
    int64_t n = OUT_NUMEL(k);
    for (int64_t i = 0; i < n; i++) {
        mg_decay(&p[i], lr_wd), mg_moments(g[i] * sc, &m[i], &v[i], b1, b2);
        float r = mg_lamb_dir(m[i], v[i], c1, c2, eps);
        p_sq += (double)p[i] * p[i], r_sq += (double)r * r;
    }
    float step = (float)lr * mg_lamb_ratio(p_sq, r_sq);
    for (int64_t i = 0; i < n; i++) p[i] -= step * mg_lamb_dir(m[i], v[i], c1, c2, eps);
    return 0;
}

/* sq_norm (xs...) -> f32[]: each input's sum of squares in double, added in
 * input order to an f32 total (as the CUDA kernel, one launch per input) */
int cpu_k_sq_norm(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    float total = 0;
    for (int j = 0; j < k->node->n_in; j++) {
        const float *x = IN_F32(k, j);
        int64_t n = ir_shape_numel(&k->in_nodes[j]->shape);
        double s = 0;
        for (int64_t i = 0; i < n; i++) s += (double)x[i] * x[i];
        total = (float)((double)total + s);
    }
    *(float *)k->out = total;
    return 0;
}
