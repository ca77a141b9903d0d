/* optim.c - in-place optimizer updates (Keras formulas in runtime/ops_math.h):
 * SGD with momentum / Nesterov, Adam / AdamW, RMSprop; the learning rate of
 * each step through the plan's schedule (rt_update_rate). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <string.h>

#include "../ops_math.h"
#include "kernels_impl.h"

#define SLOT(k, i) ((float *)(k)->in[i])

/* the param, updated in place; an executor that gave the output its own
 * memory gets the param copied there first */
static float *param(const rt_kernel_args *k) {
    if (k->out != k->in[0]) memcpy(k->out, k->in[0], (size_t)ir_node_bytes(k->node));
    return k->out;
}

/* (p, g[, velocity]); fattr: lr, momentum; iattr: nesterov */
int cpu_k_sgd(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    float *p = param(k), lr = (float)rt_update_rate(k), mu = (float)k->node->fattr[1];
    const float *g = IN_F32(k, 1);
    int64_t n = OUT_NUMEL(k);
    if (k->node->n_in < 3) {
        for (int64_t i = 0; i < n; i++) mg_sgd(&p[i], g[i], lr);
        return 0;
    }
    float *v = SLOT(k, 2);
    int nesterov = k->node->iattr[0] != 0;
    for (int64_t i = 0; i < n; i++) mg_sgd_momentum(&p[i], g[i], &v[i], lr, mu, nesterov);
    return 0;
}

CPU_CLONES static void adam_loop(float *p, const float *g, float *m, float *v, int64_t n, float lr_t, float b1,
                                 float b2, float eps, float lr_wd) {
    for (int64_t i = 0; i < n; i++) mg_adam(&p[i], g[i], &m[i], &v[i], lr_t, b1, b2, eps, lr_wd);
}

/* (p, g, m, v); fattr: lr, beta1, beta2, epsilon, weight_decay */
int cpu_k_adam(const rt_kernel_args *k, char *err, size_t cap) {
    const double *f = k->node->fattr;
    int64_t t = k->step ? *k->step : 0;
    if (t < 1) return cpu_kerr(k, err, cap, "step counter is %lld, updates count from 1", (long long)t);
    float *p = param(k), *m = SLOT(k, 2), *v = SLOT(k, 3);
    const float *g = IN_F32(k, 1);
    double lr = rt_update_rate(k);
    float b1 = (float)f[1], b2 = (float)f[2], eps = (float)f[3], lr_wd = (float)(lr * f[4]);
    float lr_t = mg_adam_lr_t((float)lr, b1, b2, t);
    adam_loop(p, g, m, v, OUT_NUMEL(k), lr_t, b1, b2, eps, lr_wd);
    return 0;
}

CPU_CLONES static void rmsprop_loop(float *p, const float *g, float *ms, float *mom, int64_t n, float lr, float rho,
                                    float mu, float eps) {
    if (!mom)
        for (int64_t i = 0; i < n; i++) mg_rmsprop(&p[i], g[i], &ms[i], lr, rho, eps);
    else
        for (int64_t i = 0; i < n; i++) mg_rmsprop_momentum(&p[i], g[i], &ms[i], &mom[i], lr, rho, mu, eps);
}

/* (p, g, ms[, mom]); fattr: lr, rho, momentum, epsilon */
int cpu_k_rmsprop(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    const double *f = k->node->fattr;
    float *p = param(k), *ms = SLOT(k, 2), lr = (float)rt_update_rate(k), rho = (float)f[1], mu = (float)f[2], eps = (float)f[3];
    const float *g = IN_F32(k, 1);
    rmsprop_loop(p, g, ms, k->node->n_in > 3 ? SLOT(k, 3) : NULL, OUT_NUMEL(k), lr, rho, mu, eps);
    return 0;
}
