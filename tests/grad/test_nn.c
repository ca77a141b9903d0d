/* test_nn.c - the stdlib's activations, losses and metrics of issue 12 against
 * Keras' formulas written out here in double (each model is elaborated from
 * stdlib/nn.mg and evaluated by the reference evaluator), and the losses'
 * gradients through a small model against central differences.
 *   test_nn STDLIB_DIR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../passes/passes.h"
#include "ref_eval.h"

enum { B = 4, N = 5 };

static int failures;
static const char *stdlib_dir;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double uniform(double lo, double hi) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

/* ---- Keras' formulas ---- */

static double sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double relu6(double x) { return fmin(fmax(x, 0), 6); }
static double clip(double x, double lo, double hi) { return fmin(fmax(x, lo), hi); }
static const double EPS = 1e-7;

typedef double (*elem_fn)(double x, double t);
static double f_abs(double x, double t) { return (void)t, fabs(x); }
static double f_square(double x, double t) { return (void)t, x * x; }
static double f_sqrt(double x, double t) { return (void)t, sqrt(x); }
static double f_rsqrt(double x, double t) { return (void)t, 1 / sqrt(x); }
static double f_pow(double x, double t) { return pow(x, t); }
static double f_maximum(double x, double t) { return fmax(x, t); }
static double f_minimum(double x, double t) { return fmin(x, t); }
static double f_clip(double x, double t) { return (void)t, clip(x, -0.5, 0.25); }
static double f_erf(double x, double t) { return (void)t, erf(x); }
static double f_leaky(double x, double t) { return (void)t, x > 0 ? x : 0.2 * x; }
static double f_leaky3(double x, double t) { return (void)t, x > 0 ? x : 0.3 * x; }
static double f_elu(double x, double t) { return (void)t, x > 0 ? x : exp(x) - 1; }
static double f_elu5(double x, double t) { return (void)t, x > 0 ? x : 0.5 * (exp(x) - 1); }
static double f_selu(double x, double t) {
    (void)t;
    return 1.0507009873554804934193349852946 * (x > 0 ? x : 1.6732632423543772848170429916717 * (exp(x) - 1));
}
static double f_gelu(double x, double t) { return (void)t, 0.5 * x * (1 + erf(x / sqrt(2.0))); }
static double f_gelu_tanh(double x, double t) {
    (void)t;
    return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * pow(x, 3))));
}
static double f_silu(double x, double t) { return (void)t, x * sigmoid(x); }
static double f_softplus(double x, double t) { return (void)t, log(exp(x) + 1); }
static double f_relu6(double x, double t) { return (void)t, relu6(x); }
static double f_hard_sigmoid(double x, double t) { return (void)t, relu6(x + 3) / 6; }

typedef struct {
    const char *expr; /* of x, t: f32[batch, 5] */
    elem_fn f;
    double lo, hi, tlo, thi; /* ranges of x and t */
} elem_case;

static const elem_case elem_cases[] = {
    {"abs(x)", f_abs, -3, 3, 0, 1},
    {"square(x)", f_square, -3, 3, 0, 1},
    {"sqrt(x)", f_sqrt, 0.1, 4, 0, 1},
    {"rsqrt(x)", f_rsqrt, 0.1, 4, 0, 1},
    {"pow(x, t)", f_pow, 0.1, 3, -2, 2},
    {"maximum(x, t)", f_maximum, -1, 1, -1, 1},
    {"minimum(x, t)", f_minimum, -1, 1, -1, 1},
    {"clip(x, -0.5, 0.25)", f_clip, -1, 1, 0, 1},
    {"erf(x)", f_erf, -2, 2, 0, 1},
    {"leaky_relu(x)", f_leaky, -3, 3, 0, 1},
    {"leaky_relu(x, negative_slope: 0.3)", f_leaky3, -3, 3, 0, 1},
    {"elu(x)", f_elu, -3, 3, 0, 1},
    {"elu(x, alpha: 0.5)", f_elu5, -3, 3, 0, 1},
    {"selu(x)", f_selu, -3, 3, 0, 1},
    {"gelu(x)", f_gelu, -4, 4, 0, 1},
    {"gelu(x, approximate: true)", f_gelu_tanh, -4, 4, 0, 1},
    {"silu(x)", f_silu, -6, 6, 0, 1},
    {"softplus(x)", f_softplus, -20, 20, 0, 1},
    {"relu6(x)", f_relu6, -4, 10, 0, 1},
    {"hard_sigmoid(x)", f_hard_sigmoid, -5, 5, 0, 1},
};

/* per-example values of a row: x, t of N elements, the label */
typedef double (*row_fn)(const double *x, const double *t, int label);

static double r_bce(const double *x, const double *t, int l) {
    double s = 0;
    for (int j = 0; j < N; j++) {
        double p = clip(x[j], EPS, 1 - EPS);
        s += -(t[j] * log(p) + (1 - t[j]) * log(1 - p));
    }
    return (void)l, s / N;
}
static double r_bce_logits(const double *x, const double *t, int l) {
    double s = 0;
    for (int j = 0; j < N; j++) s += -(t[j] * log(sigmoid(x[j])) + (1 - t[j]) * log(sigmoid(-x[j]))); /* 1 - s(x) = s(-x) */
    return (void)l, s / N;
}
static double cce(const double *x, const double *t, bool logits, double smoothing) {
    double sum = 0, mx = -INFINITY, lse = 0, loss = 0;
    for (int j = 0; j < N; j++) sum += x[j], mx = fmax(mx, x[j]);
    for (int j = 0; j < N; j++) lse += exp(x[j] - mx);
    lse = mx + log(lse);
    for (int j = 0; j < N; j++) {
        double tt = t[j] * (1 - smoothing) + smoothing / N;
        loss -= tt * (logits ? x[j] - lse : log(clip(x[j] / sum, EPS, 1 - EPS)));
    }
    return loss;
}
static double r_cce(const double *x, const double *t, int l) { return (void)l, cce(x, t, false, 0); }
static double r_cce_logits(const double *x, const double *t, int l) { return (void)l, cce(x, t, true, 0); }
static double r_cce_smooth(const double *x, const double *t, int l) { return (void)l, cce(x, t, true, 0.1); }
static double r_mae(const double *x, const double *t, int l) {
    double s = 0;
    for (int j = 0; j < N; j++) s += fabs(x[j] - t[j]);
    return (void)l, s / N;
}
static double huber(const double *x, const double *t, double d) {
    double s = 0;
    for (int j = 0; j < N; j++) {
        double e = x[j] - t[j];
        s += fabs(e) <= d ? 0.5 * e * e : d * fabs(e) - 0.5 * d * d;
    }
    return s / N;
}
static double r_huber(const double *x, const double *t, int l) { return (void)l, huber(x, t, 1.0); }
static double r_huber_half(const double *x, const double *t, int l) { return (void)l, huber(x, t, 0.5); }
static double bin_acc(const double *x, const double *t, double th) {
    double s = 0;
    for (int j = 0; j < N; j++) s += t[j] == (x[j] > th ? 1.0 : 0.0);
    return s / N;
}
static double r_bin_acc(const double *x, const double *t, int l) { return (void)l, bin_acc(x, t, 0.5); }
static double r_bin_acc_07(const double *x, const double *t, int l) { return (void)l, bin_acc(x, t, 0.7); }
/* in the top k: fewer than k logits above the label's */
static double top_k(const double *x, int l, int k) {
    int above = 0;
    for (int j = 0; j < N; j++) above += x[j] > x[l];
    return above < k;
}
static double r_top2(const double *x, const double *t, int l) { return (void)t, top_k(x, l, 2); }
static double r_top5(const double *x, const double *t, int l) { return (void)t, top_k(x, l, 5); }

typedef enum { T_REAL, T_BINARY, T_DIST } target_kind; /* t: in [0,1], 0 or 1, rows summing to 1 */

typedef struct {
    const char *stmt; /* a loss or metric statement of p, t, l */
    row_fn f;
    double lo, hi;    /* range of p */
    target_kind tk;
    bool ties;        /* p rounded to 0.5 steps (ties in top-k, at thresholds) */
    const char *fd;   /* the loss on z = x * w for the gradient check, NULL: none */
} row_case;

static const row_case row_cases[] = {
    {"loss = binary_crossentropy(p, t)", r_bce, 0.001, 0.999, T_REAL, false, "binary_crossentropy(prim.sigmoid(z), t)"},
    {"loss = binary_crossentropy(p, t, from_logits: true)", r_bce_logits, -30, 30, T_BINARY, false,
     "binary_crossentropy(z, t, from_logits: true)"},
    {"loss = categorical_crossentropy(p, t)", r_cce, 0.01, 1, T_DIST, false,
     "categorical_crossentropy(prim.softmax(z), t)"},
    {"loss = categorical_crossentropy(p, t, from_logits: true)", r_cce_logits, -40, 40, T_DIST, false,
     "categorical_crossentropy(z, t, from_logits: true)"},
    {"loss = categorical_crossentropy(p, t, from_logits: true, label_smoothing: 0.1)", r_cce_smooth, -5, 5, T_DIST,
     false, "categorical_crossentropy(z, t, from_logits: true, label_smoothing: 0.1)"},
    {"loss = mean_absolute_error(p, t)", r_mae, -2, 2, T_REAL, false, "mean_absolute_error(z, t)"},
    {"loss = huber(p, t)", r_huber, -3, 3, T_REAL, false, "huber(z, t)"},
    {"loss = huber(p, t, delta: 0.5)", r_huber_half, -3, 3, T_REAL, false, "huber(z, t, delta: 0.5)"},
    {"metric m = binary_accuracy(p, t)", r_bin_acc, 0, 1, T_BINARY, true, NULL},
    {"metric m = binary_accuracy(p, t, threshold: 0.7)", r_bin_acc_07, 0, 1, T_BINARY, false, NULL},
    {"metric m = mean_absolute_error(p, t)", r_mae, -2, 2, T_REAL, false, NULL},
    {"metric m = sparse_top_k_categorical_accuracy(p, l, k: 2)", r_top2, -2, 2, T_REAL, true, NULL},
    {"metric m = sparse_top_k_categorical_accuracy(p, l)", r_top5, -2, 2, T_REAL, true, NULL},
};

/* ---- elaborating and evaluating a model ---- */

static ir_module *elaborate(const char *text) {
    ir_source src = {.path = "nn_case.mg", .text = text};
    pass_options o;
    pass_options_default(&o);
    o.n_devices = 1, o.global_batch = B, o.quiet = true, o.n_sources = 1, o.sources = &src;
    ir_diag *d = ir_diag_new(stderr);
    ir_module *m = pass_elaborate("nn_case.mg", stdlib_dir, d, &o);
    ir_diag_free(d);
    if (!m) fprintf(stderr, "FAIL: does not elaborate:\n%s", text), failures++;
    return m;
}

static int input_named(const ir_module *m, const char *name) {
    for (int i = 0; i < m->n_inputs; i++)
        if (!strcmp(m->g.nodes[m->inputs[i]].name, name)) return m->inputs[i];
    return -1;
}

static void check(const char *what, int64_t k, double got, double want, double tol) {
    if (fabs(got - want) <= tol * fmax(1, fabs(want))) return;
    fprintf(stderr, "FAIL %s [%lld]: %.15g, Keras %.15g\n", what, (long long)k, got, want);
    failures++;
}

static void test_elementwise(const elem_case *c) {
    char text[512];
    snprintf(text, sizeof text,
             "use nn\nmodel m {\n  input x: f32[batch, %d]\n  input t: f32[batch, %d]\n  y = %s\n  output y\n}\n", N, N,
             c->expr);
    ir_module *m = elaborate(text);
    if (!m) return;
    ref_eval *e = ref_eval_new(m);
    double *x = ref_eval_data(e, input_named(m, "x")), *t = ref_eval_data(e, input_named(m, "t"));
    for (int k = 0; k < B * N; k++) x[k] = uniform(c->lo, c->hi), t[k] = uniform(c->tlo, c->thi);
    ref_eval_run(e, 1, false);
    const double *y = ref_eval_data(e, m->outputs[0].node);
    for (int k = 0; k < B * N; k++) check(c->expr, k, y[k], c->f(x[k], t[k]), 1e-12);
    ref_eval_free(e);
    ir_module_free(m);
}

static void fill_targets(double *t, target_kind tk, double *p, bool ties, int32_t *labels, double *l) {
    for (int b = 0; b < B; b++) {
        double sum = 0;
        for (int j = 0; j < N; j++) {
            double *v = &t[b * N + j];
            *v = tk == T_BINARY ? floor(uniform(0, 2)) : uniform(0, 1), sum += *v;
            if (ties) p[b * N + j] = round(p[b * N + j] * 2) / 2;
        }
        if (tk == T_DIST)
            for (int j = 0; j < N; j++) t[b * N + j] /= sum;
        labels[b] = (int32_t)floor(uniform(0, N)), l[b] = labels[b];
    }
}

static void test_row(const row_case *c) {
    char text[512];
    snprintf(text, sizeof text,
             "use nn\nmodel m {\n  input p: f32[batch, %d]\n  input t: f32[batch, %d]\n  input l: i32[batch]\n"
             "  %s\n  output p\n}\n", N, N, c->stmt);
    ir_module *m = elaborate(text);
    if (!m) return;
    ref_eval *e = ref_eval_new(m);
    double *p = ref_eval_data(e, input_named(m, "p")), *t = ref_eval_data(e, input_named(m, "t"));
    int32_t labels[B];
    for (int k = 0; k < B * N; k++) p[k] = uniform(c->lo, c->hi);
    if (c->f == r_bce) p[0] = 0, p[1] = 1; /* clipped to [1e-7, 1 - 1e-7] */
    fill_targets(t, c->tk, p, c->ties, labels, ref_eval_data(e, input_named(m, "l")));
    ref_eval_run(e, 1, false);
    int node = m->loss >= 0 ? m->loss : m->metrics[0].node;
    const double *y = ref_eval_data(e, node);
    for (int b = 0; b < B; b++) check(c->stmt, b, y[b], c->f(p + b * N, t + b * N, labels[b]), 1e-9);
    ref_eval_free(e);
    ir_module_free(m);
}

/* ---- gradients of the losses: z = x * w, w a param; central differences ---- */

static double mean_loss(ref_eval *e, const ir_module *m) {
    ref_eval_run(e, 1, true);
    const double *l = ref_eval_data(e, m->loss);
    double s = 0;
    for (int b = 0; b < B; b++) s += l[b];
    return s / B;
}

/* the worst relative difference between the gradient of the mean loss with
 * respect to the N weights w (param 0) and its central differences */
static double fd_worst(ref_eval *e, const ir_module *m, double *w) {
    double g[N], worst = 0;
    memcpy(g, ref_eval_data(e, m->grads[0]), sizeof g);
    for (int j = 0; j < N; j++) {
        double w0 = w[j], h = 1e-6;
        w[j] = w0 + h;
        double up = mean_loss(e, m);
        w[j] = w0 - h;
        double down = mean_loss(e, m);
        w[j] = w0;
        double fd = (up - down) / (2 * h);
        worst = fmax(worst, fabs(fd - g[j]) / fmax(1e-3, fmax(fabs(fd), fabs(g[j]))));
    }
    return worst;
}

static void test_loss_gradient(const row_case *c) {
    char text[512];
    snprintf(text, sizeof text,
             "use nn\nmodel m {\n  input x: f32[batch, %d]\n  input t: f32[batch, %d]\n  param w: f32[%d] = ones\n"
             "  z = x * w\n  loss = %s\n}\ntrain m {\n  optimizer = sgd\n  batch = %d global\n}\n",
             N, N, N, c->fd, B);
    ir_module *m = elaborate(text);
    if (!m) return;
    ir_diag *d = ir_diag_new(stderr);
    if (!pass_autodiff(m, d, NULL)) fprintf(stderr, "FAIL %s: autodiff\n", c->fd), failures++;
    ir_diag_free(d);
    ref_eval *e = ref_eval_new(m);
    double *x = ref_eval_data(e, input_named(m, "x")), *t = ref_eval_data(e, input_named(m, "t"));
    double *w = ref_eval_data(e, m->params[0]);
    for (int k = 0; k < B * N; k++) x[k] = uniform(-2, 2);
    for (int j = 0; j < N; j++) w[j] = uniform(0.5, 1.5);
    int32_t labels[B];
    double l[B];
    fill_targets(t, c->tk, x, false, labels, l);
    mean_loss(e, m);
    double worst = fd_worst(e, m, w);
    printf("  %-70s max rel err %.2e\n", c->fd, worst);
    if (!(worst < 1e-6)) fprintf(stderr, "FAIL %s: gradient differs from finite differences\n", c->fd), failures++;
    ref_eval_free(e);
    ir_module_free(m);
}

/* ---- per-token losses (issue 13): logits [B, T, N], labels [B, T] ---- */

enum { T = 3 };

/* the mean over an example's T tokens of -log softmax(x)[label] */
static double token_xent(const double *x, const int32_t *l) {
    double s = 0;
    for (int k = 0; k < T; k++) {
        const double *row = x + k * N;
        double mx = -INFINITY, lse = 0;
        for (int j = 0; j < N; j++) mx = fmax(mx, row[j]);
        for (int j = 0; j < N; j++) lse += exp(row[j] - mx);
        s += mx + log(lse) - row[l[k]];
    }
    return s / T;
}

static const char *TOKEN_MODEL =
    "use nn\nmodel m {\n  input x: f32[batch, %d, %d]\n  input l: i32[batch, %d]\n  param w: f32[%d] = ones\n"
    "  z = x * w\n  loss = sparse_softmax_cross_entropy(z, l)\n  metric perplexity = perplexity(z, l)\n}\n"
    "train m {\n  optimizer = sgd\n  batch = %d global\n}\n";

/* the loss and perplexity per example against the formula, the gradient to w
 * against central differences */
static void test_token_losses(void) {
    char text[512];
    snprintf(text, sizeof text, TOKEN_MODEL, T, N, T, N, B);
    ir_module *m = elaborate(text);
    if (!m) return;
    ir_diag *d = ir_diag_new(stderr);
    if (!pass_autodiff(m, d, NULL)) fprintf(stderr, "FAIL token loss: autodiff\n"), failures++;
    ir_diag_free(d);
    ref_eval *e = ref_eval_new(m);
    double *x = ref_eval_data(e, input_named(m, "x")), *lv = ref_eval_data(e, input_named(m, "l"));
    double *w = ref_eval_data(e, m->params[0]);
    int32_t labels[B * T];
    for (int k = 0; k < B * T * N; k++) x[k] = uniform(-3, 3);
    for (int k = 0; k < B * T; k++) labels[k] = (int32_t)floor(uniform(0, N)), lv[k] = labels[k];
    for (int j = 0; j < N; j++) w[j] = uniform(0.5, 1.5);
    mean_loss(e, m);
    const double *loss = ref_eval_data(e, m->loss), *ppl = ref_eval_data(e, m->metrics[0].node);
    for (int b = 0; b < B; b++) {
        double z[T * N];
        for (int k = 0; k < T * N; k++) z[k] = x[b * T * N + k] * w[k % N];
        double want = token_xent(z, labels + b * T);
        check("per-token sparse_softmax_cross_entropy", b, loss[b], want, 1e-12);
        check("perplexity", b, ppl[b], exp(want), 1e-12);
    }
    double worst = fd_worst(e, m, w);
    printf("  %-70s max rel err %.2e\n", "sparse_softmax_cross_entropy(z [b, t, c], l [b, t])", worst);
    if (!(worst < 1e-6)) fprintf(stderr, "FAIL per-token cross-entropy: gradient differs from finite differences\n"), failures++;
    ref_eval_free(e);
    ir_module_free(m);
}

int main(int argc, char **argv) {
    if (argc < 2) return fprintf(stderr, "usage: test_nn STDLIB_DIR\n"), 2;
    stdlib_dir = argv[1];
    int n_elem = (int)(sizeof elem_cases / sizeof *elem_cases), n_row = (int)(sizeof row_cases / sizeof *row_cases);
    for (int i = 0; i < n_elem; i++) test_elementwise(&elem_cases[i]);
    for (int i = 0; i < n_row; i++) test_row(&row_cases[i]);
    for (int i = 0; i < n_row; i++)
        if (row_cases[i].fd) test_loss_gradient(&row_cases[i]);
    test_token_losses();
    printf("%d activation and %d loss/metric cases against Keras' formulas, %d failures\n", n_elem, n_row, failures);
    return failures != 0;
}
