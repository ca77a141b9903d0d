/* test_optim.c - every optimizer update kernel for 6 steps against its Keras 3
 * formula recomputed in double: under a learning-rate schedule (exponential
 * decay, rate lr * 0.5^(steps so far / 2)), with weight decay, and clipped by
 * its gradient's norm (clipnorm = 1: the gradient is far above the threshold on
 * odd steps and below it on even ones, which the test checks it saw). */
#include <math.h>
#include <stdio.h>

#include "../../ir/order.h"
#include "harness.h"

typedef struct {
    const char *name;
    ir_op op;
    int n_slots;
    double f[IR_MAX_FATTR];  /* the op's fattrs but clipnorm */
    int nesterov;
} ocase;

static const ocase cases[] = {
    {"sgd weight_decay", OP_SGD_UPDATE, 0, {0.1, 0, 0.01}, 0},
    {"sgd nesterov weight_decay", OP_SGD_UPDATE, 1, {0.1, 0.9, 0.01}, 1},
    {"adamw", OP_ADAM_UPDATE, 2, {1e-2, 0.9, 0.999, 1e-7, 0.004}, 0},
    {"rmsprop momentum weight_decay", OP_RMSPROP_UPDATE, 2, {1e-2, 0.9, 0.5, 1e-7, 0.01}, 0},
    {"adagrad", OP_ADAGRAD_UPDATE, 1, {0.1, 0.1, 1e-7, 0.01}, 0},
    {"nadam", OP_NADAM_UPDATE, 2, {1e-2, 0.9, 0.999, 1e-7, 0.01}, 0},
    {"lamb", OP_LAMB_UPDATE, 2, {1e-2, 0.9, 0.999, 1e-6, 0.01}, 0},
};

enum { N = 37, STEPS = 6 };

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double uniform(void) { /* [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return 2 * (double)(rng >> 11) / 9007199254740992.0 - 1;
}

static double nadam_u(double b1, int t) { return b1 * (1 - 0.5 * pow(0.96, 0.004 * t)); }

/* One Keras 3 step of optimizer c on p (slots s[0], s[1]) with gradient g (already clipped) at rate lr. */
static void keras_step(const ocase *c, double *p, const double *g, double s[2][N], double lr, int t) {
    const double *f = c->f;
    double wd = c->op == OP_SGD_UPDATE ? f[2] : c->op == OP_ADAGRAD_UPDATE ? f[3] : f[4];
    double pp = 0, rr = 0, r[N];
    for (int i = 0; i < N; i++) {
        p[i] = p[i] - p[i] * wd * lr; /* _apply_weight_decay */
        double *m = &s[0][i], *v = &s[1][i];
        switch (c->op) {
        case OP_SGD_UPDATE:
            if (!c->n_slots) p[i] -= lr * g[i];
            else *m = f[1] * *m - lr * g[i], p[i] += c->nesterov ? f[1] * *m - lr * g[i] : *m;
            break;
        case OP_ADAM_UPDATE: {
            double a = lr * sqrt(1 - pow(f[2], t)) / (1 - pow(f[1], t));
            *m += (g[i] - *m) * (1 - f[1]), *v += (g[i] * g[i] - *v) * (1 - f[2]);
            p[i] -= a * *m / (sqrt(*v) + f[3]);
            break;
        }
        case OP_RMSPROP_UPDATE: {
            *m = f[1] * *m + (1 - f[1]) * g[i] * g[i];
            double inc = lr * g[i] / sqrt(*m + f[3]);
            *v = f[2] * *v + inc, p[i] -= *v;
            break;
        }
        case OP_ADAGRAD_UPDATE:
            if (t == 1) *m = f[1]; /* the accumulator's initial value */
            *m += g[i] * g[i];
            p[i] -= lr * g[i] / sqrt(*m + f[2]);
            break;
        case OP_NADAM_UPDATE: {
            double u_prod = 1, ut = nadam_u(f[1], t), ut1 = nadam_u(f[1], t + 1);
            for (int k = 1; k <= t; k++) u_prod *= nadam_u(f[1], k);
            *m += (g[i] - *m) * (1 - f[1]), *v += (g[i] * g[i] - *v) * (1 - f[2]);
            double m_hat = ut1 * *m / (1 - u_prod * ut1) + (1 - ut) * g[i] / (1 - u_prod);
            p[i] -= m_hat * lr / (sqrt(*v / (1 - pow(f[2], t))) + f[3]);
            break;
        }
        default: /* lamb: the update after the loop */
            *m = *m * f[1] + g[i] * (1 - f[1]), *v = *v * f[2] + g[i] * g[i] * (1 - f[2]);
            r[i] = (*m / (1 - pow(f[1], t))) / (sqrt(*v / (1 - pow(f[2], t))) + f[3]);
            pp += p[i] * p[i], rr += r[i] * r[i];
        }
    }
    if (c->op == OP_LAMB_UPDATE)
        for (int i = 0; i < N; i++) p[i] -= sqrt(pp) / sqrt(rr) * lr * r[i];
}

static int run(const ocase *c, double clip) {
    int n_in = 2 + c->n_slots + (clip > 0);
    ir_shape s[6];
    ir_dtype dt[6] = {0};
    for (int i = 0; i < n_in; i++) s[i] = kh_shape("37");
    if (clip > 0) s[n_in - 1] = kh_shape("");
    double fattr[IR_MAX_FATTR];
    for (int k = 0; k < IR_MAX_FATTR; k++) fattr[k] = c->f[k];
    fattr[ir_op_fattr_index(c->op, "clipnorm")] = clip;
    one_op t;
    char err[256];
    if (kh_build(&t, c->op, n_in, s, dt, (int64_t[IR_MAX_IATTR]){c->nesterov}, fattr, NULL, 0, err, sizeof err))
        return fprintf(stderr, "FAIL %s: %s\n", c->name, err), 1;
    t.m->opt = (ir_optimizer){.lr = c->f[0], .schedule = {.kind = LR_EXPONENTIAL_DECAY, .decay_steps = 2, .decay_rate = 0.5}};
    double p[N], g[N], slots[2][N] = {{0}}, worst = 0;
    float *kp = t.in[0], *kg = t.in[1];
    for (int i = 0; i < N; i++) p[i] = uniform(), kp[i] = (float)p[i], p[i] = kp[i];
    for (int k = 0; k < c->n_slots; k++)
        for (int i = 0; i < N; i++) ((float *)t.in[2 + k])[i] = 0;
    int clipped = 0, unclipped = 0, bad = 0;
    for (int step = 1; step <= STEPS && !bad; step++) {
        double sq = 0, big = step % 2 ? 3 : 0.01;
        for (int i = 0; i < N; i++) kg[i] = (float)(big * uniform()), g[i] = kg[i], sq += g[i] * g[i];
        if (clip > 0) {
            *(float *)t.in[n_in - 1] = (float)sq;
            double scale = clip / fmax(sqrt(sq), clip);
            for (int i = 0; i < N; i++) g[i] *= scale;
            clipped += scale < 1, unclipped += scale == 1;
        }
        t.step = step;
        if (kh_run(&t, err, sizeof err)) return fprintf(stderr, "FAIL %s: %s\n", c->name, err), kh_free(&t), 1;
        keras_step(c, p, g, slots, c->f[0] * pow(0.5, (step - 1) / 2.0), step);
        for (int i = 0; i < N; i++) {
            double d = fabs(kp[i] - p[i]) / (fabs(p[i]) + 1e-2);
            worst = fmax(worst, d);
            for (int k = 0; k < c->n_slots; k++)
                worst = fmax(worst, fabs(((float *)t.in[2 + k])[i] - slots[k][i]) / (fabs(slots[k][i]) + 1e-2));
        }
        bad = !(worst < 2e-5);
    }
    if (clip > 0 && (clipped != STEPS / 2 || unclipped != STEPS / 2)) bad = 1;
    printf("  %-30s clipnorm %g: %d steps, worst relative error %.1e\n", c->name, clip, STEPS, worst);
    if (bad) fprintf(stderr, "FAIL %s clipnorm %g: differs from Keras by %.3g (clipped %d, not %d)\n", c->name, clip,
                     worst, clipped, unclipped);
    kh_free(&t);
    return bad;
}

int main(void) {
    int failed = 0, n = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int clip = 0; clip <= 1; clip++) failed += run(&cases[i], clip), n++;
    printf("%d optimizer runs, %d failed\n", n, failed);
    return failed != 0;
}
