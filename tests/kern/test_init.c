/* test_init.c - the statistics of every initializer against Keras' formulas:
 * bounds, mean and variance of large draws, orthogonality for orthogonal,
 * determinism in (seed, name). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/session.h"

static int failures;

#define CHECK(c, ...)                                                  \
    do {                                                               \
        if (!(c)) {                                                    \
            fprintf(stderr, "FAIL: ");                                 \
            fprintf(stderr, __VA_ARGS__);                              \
            fputc('\n', stderr);                                       \
            failures++;                                                \
        }                                                              \
    } while (0)

enum { FAN_IN = 200, FAN_OUT = 300, NUMEL = FAN_IN * FAN_OUT };

/* Keras: the standard normal truncated at +-2 has this stddev */
static const double T = .87962566103423978;

typedef struct {
    ir_init init;
    double args[2];      /* value, stddev */
    double var;          /* Keras' variance of the draws */
    double bound;        /* |x| <= bound (0: unbounded) */
    double beyond;       /* fraction of |x| > 2 stddev expected (random_normal: 4.55%) */
} init_case;

static const init_case cases[] = {
    {INIT_GLOROT_UNIFORM, {0}, 2.0 / (FAN_IN + FAN_OUT), 0.10954451150103323, 0},  /* sqrt(6/500) */
    {INIT_HE_UNIFORM, {0}, 2.0 / FAN_IN, 0.17320508075688773, 0},                  /* sqrt(6/200) */
    {INIT_LECUN_UNIFORM, {0}, 1.0 / FAN_IN, 0.12247448713915890, 0},               /* sqrt(3/200) */
    {INIT_HE_NORMAL, {0}, 2.0 / FAN_IN, 2 * 0.1 / T, 0},                           /* stddev sqrt(2/200)/T */
    {INIT_GLOROT_NORMAL, {0}, 2.0 / (FAN_IN + FAN_OUT), 2 * 0.06324555320336759 / T, 0},
    {INIT_LECUN_NORMAL, {0}, 1.0 / FAN_IN, 2 * 0.07071067811865475 / T, 0},
    {INIT_TRUNCATED_NORMAL, {0, 0.02}, 0.02 * 0.02 * T * T, 0.04, 0},
    {INIT_RANDOM_NORMAL, {0, 0.05}, 0.05 * 0.05, 0, 0.0455},
};

static void stats(const float *x, int64_t n, double *mean, double *var, double *maxabs) {
    double s = 0, ss = 0, m = 0;
    for (int64_t i = 0; i < n; i++) s += x[i], m = fmax(m, fabs(x[i]));
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++) ss += (x[i] - *mean) * (x[i] - *mean);
    *var = ss / (double)(n - 1), *maxabs = m;
}

static void test_distribution(const init_case *c) {
    const char *name = ir_init_names[c->init];
    float *x = malloc(NUMEL * sizeof *x), *y = malloc(NUMEL * sizeof *y);
    rt_init_fill(x, NUMEL, c->init, FAN_IN, FAN_OUT, c->args, 7, "dense/kernel");
    double mean, var, maxabs;
    stats(x, NUMEL, &mean, &var, &maxabs);
    double sd = sqrt(c->var), tol_mean = 5 * sd / sqrt((double)NUMEL);
    printf("  %-17s mean %+.2e  var %.4e (Keras %.4e)  max|x| %.4f (bound %.4f)\n", name, mean, var, c->var, maxabs,
           c->bound);
    CHECK(fabs(mean) < tol_mean, "%s: mean %g", name, mean);
    CHECK(fabs(var / c->var - 1) < 0.03, "%s: variance %g, Keras %g", name, var, c->var);
    if (c->bound) CHECK(maxabs <= c->bound * (1 + 1e-6) && maxabs > 0.97 * c->bound, "%s: max |x| %g, bound %g", name, maxabs, c->bound);
    if (c->beyond) {
        int64_t out = 0;
        for (int64_t i = 0; i < NUMEL; i++) out += fabs(x[i]) > 2 * c->args[1];
        CHECK(fabs((double)out / NUMEL - c->beyond) < 0.005, "%s: %.4f beyond 2 stddev, want %.4f (not truncated)",
              name, (double)out / NUMEL, c->beyond);
    }
    rt_init_fill(y, NUMEL, c->init, FAN_IN, FAN_OUT, c->args, 7, "dense/kernel");
    CHECK(!memcmp(x, y, NUMEL * sizeof *x), "%s: not deterministic", name);
    rt_init_fill(y, NUMEL, c->init, FAN_IN, FAN_OUT, c->args, 7, "dense_1/kernel");
    CHECK(memcmp(x, y, NUMEL * sizeof *x), "%s: two params drew the same values", name);
    free(x), free(y);
}

/* the rows (rows <= cols) or the columns of the [rows, cols] matrix are orthonormal */
static void test_orthogonal(int64_t rows, int64_t cols, int64_t fan_in, int64_t fan_out) {
    int64_t n = rows * cols, k = rows < cols ? rows : cols;
    float *w = malloc((size_t)n * sizeof *w);
    rt_init_fill(w, n, INIT_ORTHOGONAL, fan_in, fan_out, (double[2]){0}, 3, "w");
    double worst = 0, mean, var, maxabs;
    for (int64_t a = 0; a < k; a++)
        for (int64_t b = 0; b < k; b++) {
            double dot = 0;
            for (int64_t i = 0; i < (rows < cols ? cols : rows); i++)
                dot += rows < cols ? (double)w[a * cols + i] * w[b * cols + i] : (double)w[i * cols + a] * w[i * cols + b];
            worst = fmax(worst, fabs(dot - (a == b)));
        }
    stats(w, n, &mean, &var, &maxabs);
    double want = 1.0 / (double)(rows > cols ? rows : cols); /* each orthonormal vector's elements */
    printf("  orthogonal [%lld,%lld]: max |W W^T - I| %.2e, var %.4e (1/%lld)\n", (long long)rows, (long long)cols,
           worst, var, (long long)(rows > cols ? rows : cols));
    CHECK(worst < 1e-5, "orthogonal [%lld,%lld]: not orthonormal (%g)", (long long)rows, (long long)cols, worst);
    CHECK(fabs(var / want - 1) < 0.1, "orthogonal [%lld,%lld]: variance %g, want %g", (long long)rows, (long long)cols,
          var, want);
    free(w);
}

static void test_constant(void) {
    float x[37];
    rt_init_fill(x, 37, INIT_CONSTANT, 37, 37, (double[2]){0.125, 0}, 1, "b");
    int ok = 1;
    for (int i = 0; i < 37; i++) ok &= x[i] == 0.125f;
    CHECK(ok, "constant(0.125) is not 0.125 everywhere");
}

/* unit_forget_bias of [4 * 3]: 0 0 0 1 1 1 0 0 0 0 0 0 (gates i, f, c, o) */
static void test_unit_forget_bias(void) {
    float x[12];
    rt_init_fill(x, 12, INIT_UNIT_FORGET_BIAS, 12, 12, (double[2]){0, 0}, 1, "lstm/bias");
    int ok = 1;
    for (int i = 0; i < 12; i++) ok &= x[i] == (i >= 3 && i < 6 ? 1.0f : 0.0f);
    CHECK(ok, "unit_forget_bias is not 1 on the forget gate's quarter and 0 elsewhere");
}

int main(void) {
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) test_distribution(&cases[i]);
    test_orthogonal(200, 300, 200, 300); /* dense [200, 300]: orthonormal rows */
    test_orthogonal(300, 200, 300, 200); /* orthonormal columns */
    test_orthogonal(36, 8, 36, 72);      /* conv [3, 3, 4, 8]: rows 3*3*4, cols 8 */
    test_orthogonal(64, 64, 64, 64);
    test_constant();
    test_unit_forget_bias();
    if (failures) fprintf(stderr, "%d failures\n", failures);
    else printf("all initializer tests passed\n");
    return failures != 0;
}
