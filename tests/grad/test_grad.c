/* test_grad.c - every gradient rule against central finite differences in double
 * (one table of cases covering every OPF_DIFF op), path errors, optimizer steps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../passes/passes.h"
#include "ref_eval.h"

static int failures;

#define CHECK(c, ...)                                                  \
    do {                                                               \
        if (!(c)) {                                                    \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);       \
            fprintf(stderr, __VA_ARGS__);                              \
            fputc('\n', stderr);                                       \
            failures++;                                                \
        }                                                              \
    } while (0)

/* ---- building test modules ---- */

enum { MAX_NODES = 4096 };

/* A module under construction and the value range of each INPUT / PARAM. */
typedef struct {
    ir_module *m;
    double lo[MAX_NODES], hi[MAX_NODES];
    int line; /* each node gets its own source line: t.mg:<line>:1 */
} tb;

static ir_shape shp(int rank, const int64_t *d) { return ir_shape_make(rank, d); }
#define S(...) shp((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define SCALAR ((ir_shape){.rank = 0})

static int node(tb *t, ir_op op, int n_in, const int *in, const int64_t *ia, int n_ia, const double *fa,
                int n_fa, const ir_shape *shape) {
    int i = ir_add(t->m, op, in, n_in, (ir_loc){"t.mg", ++t->line, 1});
    ir_node *n = ir_node_at(t->m, i);
    for (int k = 0; k < n_ia; k++) n->iattr[k] = ia[k];
    for (int k = 0; k < n_fa; k++) n->fattr[k] = fa[k];
    if (shape) n->shape = *shape;
    char err[256];
    if (!ir_infer_node(t->m, i, err, sizeof err)) {
        fprintf(stderr, "test built a bad '%s': %s\n", ir_ops[op].name, err);
        abort();
    }
    return i;
}

static int source(tb *t, ir_op op, const char *name, ir_dtype dt, ir_shape s, double lo, double hi) {
    int i = node(t, op, 0, NULL, NULL, 0, NULL, 0, &s);
    ir_node *n = ir_node_at(t->m, i);
    n->name = ir_intern(t->m, name), n->dtype = dt;
    t->lo[i] = lo, t->hi[i] = hi;
    if (op == OP_PARAM) {
        t->m->params = realloc(t->m->params, (size_t)(t->m->n_params + 1) * sizeof(int));
        t->m->params[t->m->n_params++] = i;
    }
    return i;
}

static int param(tb *t, const char *name, ir_shape s) { return source(t, OP_PARAM, name, IR_F32, s, -1, 1); }
static int param_pos(tb *t, const char *name, ir_shape s) { return source(t, OP_PARAM, name, IR_F32, s, 0.5, 2); }
static int input(tb *t, const char *name, ir_shape s) { return source(t, OP_INPUT, name, IR_F32, s, -1, 1); }
static int labels(tb *t, int64_t batch, int classes) {
    return source(t, OP_INPUT, "labels", IR_I32, S(batch), 0, classes);
}
static int op1(tb *t, ir_op op, int a) { return node(t, op, 1, &a, NULL, 0, NULL, 0, NULL); }
static int op2(tb *t, ir_op op, int a, int b) { return node(t, op, 2, (int[]){a, b}, NULL, 0, NULL, 0, NULL); }
static int matmul(tb *t, int a, int b, int ta, int tb_) {
    return node(t, OP_MATMUL, 2, (int[]){a, b}, (int64_t[]){ta, tb_}, 2, NULL, 0, NULL);
}
/* conv2d with stride (sh, sw) and padding (t, l, b, r) */
static int conv(tb *t, int x, int w, int sh, int sw, int pt, int pl, int pb, int pr) {
    return node(t, OP_CONV2D, 2, (int[]){x, w}, (int64_t[]){sh, sw, pt, pl, pb, pr}, 6, NULL, 0, NULL);
}
/* ---- dilated, grouped and transposed convolutions: attrs {sh, sw, pt, pl, pb, pr, dh, dw[, groups]} ---- */
static int convx(tb *t, ir_op op, int x, int w, const int64_t *a) {
    return node(t, op, 2, (int[]){x, w}, a, op == OP_CONV2D ? 9 : 8, NULL, 0, NULL);
}
static int b_conv_dilated(tb *t) {
    return convx(t, OP_CONV2D, param(t, "x", S(1, 7, 6, 2)), param(t, "w", S(3, 2, 2, 3)),
                 (int64_t[]){1, 1, 1, 0, 1, 1, 2, 3, 1});
}
static int b_conv_groups(tb *t) {
    return convx(t, OP_CONV2D, param(t, "x", S(2, 5, 5, 4)), param(t, "w", S(3, 3, 2, 6)),
                 (int64_t[]){2, 1, 1, 0, 1, 1, 1, 1, 2});
}
static int b_conv_depthwise(tb *t) { /* depth_multiplier 2, dilated */
    return convx(t, OP_CONV2D, param(t, "x", S(1, 6, 6, 3)), param(t, "w", S(2, 2, 1, 6)),
                 (int64_t[]){1, 1, 0, 0, 0, 0, 2, 2, 3});
}
static int b_convt_valid(tb *t) {
    return convx(t, OP_CONV2D_TRANSPOSE, param(t, "x", S(2, 3, 4, 3)), param(t, "w", S(3, 2, 2, 3)),
                 (int64_t[]){1, 1, 0, 0, 0, 0, 1, 1});
}
static int b_convt_same_s2(tb *t) { /* Keras "same", k 3 s 2: H 3 -> 6, pads 0 + 1 */
    return convx(t, OP_CONV2D_TRANSPOSE, param(t, "x", S(1, 3, 3, 2)), param(t, "w", S(3, 3, 3, 2)),
                 (int64_t[]){2, 2, 0, 0, 1, 1, 1, 1});
}
static int b_convt_dilated(tb *t) {
    return convx(t, OP_CONV2D_TRANSPOSE, param(t, "x", S(1, 3, 3, 2)), param(t, "w", S(2, 2, 2, 2)),
                 (int64_t[]){2, 1, 1, 0, 0, 1, 2, 2});
}

static int pool(tb *t, ir_op op, int x, int k, int s, int pt, int pl, int pb, int pr) {
    return node(t, op, 1, &x, (int64_t[]){k, k, s, s, pt, pl, pb, pr}, 8, NULL, 0, NULL);
}
static int reduce(tb *t, ir_op op, int x, int64_t axes, int keepdims) {
    return node(t, op, 1, &x, (int64_t[]){axes, keepdims}, 2, NULL, 0, NULL);
}
static int reshape(tb *t, int x, ir_shape s) { return node(t, OP_RESHAPE, 1, &x, NULL, 0, NULL, 0, &s); }
static int cast(tb *t, int x, ir_dtype dt) {
    int i = ir_add(t->m, OP_CAST, &x, 1, (ir_loc){"t.mg", ++t->line, 1});
    ir_node_at(t->m, i)->dtype = dt;
    char err[256];
    if (!ir_infer_node(t->m, i, err, sizeof err)) abort();
    return i;
}

/* per-example loss: sum over all but axis 0 of out * random weights */
static int weigh(tb *t, int out) {
    ir_shape s = ir_node_at(t->m, out)->shape;
    if (s.rank == 0) out = reshape(t, out, S(1)), s = S(1);
    int y = op2(t, OP_MUL, out, input(t, "weights", s));
    int64_t axes = ((int64_t)1 << s.rank) - 2;
    return axes ? reduce(t, OP_REDUCE_SUM, y, axes, 0) : y;
}

#include "cases.h" /* the table */

/* ---- finite differences ---- */

static uint64_t rng = 88172645463325252ull;
static double uniform(double lo, double hi) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

static void randomize(tb *t, ref_eval *e) {
    for (int i = 0; i < t->m->g.n; i++) {
        const ir_node *n = ir_node_at(t->m, i);
        if (n->op != OP_INPUT && n->op != OP_PARAM) continue;
        double *v = ref_eval_data(e, i);
        for (int64_t k = 0; k < ir_shape_numel(&n->shape); k++) {
            v[k] = uniform(t->lo[i], t->hi[i]);
            if (n->dtype == IR_I32) v[k] = floor(v[k]);
        }
    }
}

static double mean_loss(ref_eval *e, const ir_module *m) {
    ref_eval_run(e, 1, true);
    const double *l = ref_eval_data(e, m->loss);
    int64_t n = ir_shape_numel(&m->g.nodes[m->loss].shape);
    double s = 0;
    for (int64_t k = 0; k < n; k++) s += l[k];
    return s / (double)n;
}

/* Largest relative error of dL/dp against central differences over every
 * element of every param; the denominator is floored at 1e-3 so that zero
 * gradients (relu, max_pool) are compared absolutely. */
static double check_grads(ir_module *m, ref_eval *e) {
    double worst = 0;
    for (int p = 0; p < m->n_params; p++) {
        int pi = m->params[p];
        int64_t n = ir_shape_numel(&m->g.nodes[pi].shape);
        double *x = ref_eval_data(e, pi), *g = malloc((size_t)n * sizeof *g);
        mean_loss(e, m); /* the gradient at the unperturbed point */
        memcpy(g, ref_eval_data(e, m->grads[p]), (size_t)n * sizeof *g);
        for (int64_t k = 0; k < n; k++) {
            double x0 = x[k], h = 1e-6 * fmax(1, fabs(x0));
            x[k] = x0 + h;
            double up = mean_loss(e, m);
            x[k] = x0 - h;
            double down = mean_loss(e, m);
            x[k] = x0;
            double fd = (up - down) / (2 * h), err = fabs(fd - g[k]) / fmax(1e-3, fmax(fabs(fd), fabs(g[k])));
            if (err > worst) worst = err;
            if (getenv("GRAD_DEBUG") && err > 1e-8) /* GRAD_DEBUG=1: list the elements that disagree */
                printf("    param %d [%lld]: fd %.12g ad %.12g\n", p, (long long)k, fd, g[k]);
        }
        free(g);
    }
    return worst;
}

static bool uses_op(const ir_module *m, int n_fwd, ir_op op) {
    for (int i = 0; i < n_fwd; i++)
        if (m->g.nodes[i].op == op) return true;
    return false;
}

static void run_case(const grad_case *c, double *worst) {
    tb *t = calloc(1, sizeof *t);
    t->m = ir_module_new();
    t->m->has_train = true;
    t->m->loss = weigh(t, c->build(t));
    int n_fwd = t->m->g.n;
    CHECK(uses_op(t->m, n_fwd, c->op), "case '%s' does not use '%s'", c->name, ir_ops[c->op].name);

    ir_diag *d = ir_diag_new(stderr);
    CHECK(pass_autodiff(t->m, d, NULL) && ir_diag_errors(d) == 0, "case '%s': autodiff failed", c->name);
    ir_diag_free(d);
    for (int p = 0; p < t->m->n_params; p++) {
        const ir_node *pn = ir_node_at(t->m, t->m->params[p]), *gn = ir_node_at(t->m, t->m->grads[p]);
        CHECK(ir_shape_eq(&pn->shape, &gn->shape), "case '%s': gradient shape of '%s'", c->name, pn->name);
    }

    ref_eval *e = ref_eval_new(t->m);
    randomize(t, e);
    double err = check_grads(t->m, e);
    printf("  %-30s %3d nodes (+%3d)  max rel err %.2e\n", c->name, n_fwd, t->m->g.n - n_fwd, err);
    CHECK(err < 1e-6, "case '%s': gradient differs from finite differences (%.3g)", c->name, err);
    if (err > *worst) *worst = err;
    ref_eval_free(e);
    ir_module_free(t->m);
    free(t);
}

static void test_gradients(void) {
    bool covered[OP_COUNT] = {0};
    double worst = 0;
    for (int i = 0; i < N_CASES; i++) {
        covered[cases[i].op] = true;
        run_case(&cases[i], &worst);
    }
    for (int op = 0; op < OP_COUNT; op++)
        CHECK(!(ir_ops[op].flags & OPF_DIFF) || covered[op], "op '%s' is differentiable but has no gradient case",
              ir_ops[op].name);
    printf("gradients: %d cases, worst relative error %.2e\n", N_CASES, worst);
}

/* ---- errors on non-differentiable paths, notes, positions ---- */

/* Runs autodiff with diagnostics captured; returns what it printed (caller frees). */
static char *autodiff_output(ir_module *m, const char *file, const char *text, bool *ok, int *errors) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ir_diag *d = ir_diag_new(f);
    if (file) ir_diag_add_source(d, file, text);
    *ok = pass_autodiff(m, d, NULL);
    *errors = ir_diag_errors(d);
    ir_diag_free(d);
    fclose(f);
    return buf;
}

/* x[4,3] -> dense/kernel, dense/bias -> logits z[4,5]; labels y */
static int dense_logits(tb *t, int *y) {
    int x = input(t, "x", S(4, 3)), k = param(t, "dense/kernel", S(3, 5)), b = param(t, "dense/bias", S(5));
    *y = labels(t, 4, 5);
    return op2(t, OP_ADD, matmul(t, x, k, 0, 0), b); /* the matmul is the node before */
}

static tb *new_tb(void) {
    tb *t = calloc(1, sizeof *t);
    t->m = ir_module_new();
    t->m->has_train = true;
    return t;
}

static void free_tb(tb *t) {
    ir_module_free(t->m);
    free(t);
}

static void test_argmax_on_loss_path(void) {
    tb *t = new_tb();
    int y, z = dense_logits(t, &y);
    int am = op2(t, OP_ARGMAX_MATCH, z, y);
    ir_node_at(t->m, am)->loc = (ir_loc){"model.mg", 2, 23};
    t->m->loss = op2(t, OP_ADD, op2(t, OP_SPARSE_XENT, z, y), am);
    int n = t->m->g.n, errors;
    bool ok;
    char *out = autodiff_output(t->m, "model.mg", "model m {\n  loss = xent(z, y) + argmax_match(z, y)\n}\n", &ok,
                                &errors);
    const char *want = "model.mg:2:23: error: cannot differentiate 'argmax_match' on the path from the loss to "
                       "param 'dense/kernel'\n"
                       "  loss = xent(z, y) + argmax_match(z, y)\n"
                       "                      ^\n";
    CHECK(!ok && errors == 1, "argmax_match on the loss path: ok %d, %d errors", ok, errors);
    CHECK(!strcmp(out, want), "argmax_match on the loss path printed:\n%s", out);
    CHECK(t->m->g.n == n, "autodiff added nodes after an error");
    free(out);
    free_tb(t);
}

/* Cast to int and back: one error, at the cast to int (the path is reported once). */
static void test_cast_to_int(void) {
    tb *t = new_tb();
    int y, z = dense_logits(t, &y);
    int to_int = cast(t, z, IR_I32);
    ir_node_at(t->m, to_int)->loc = (ir_loc){"model.mg", 3, 9};
    int back = cast(t, to_int, IR_F32);
    t->m->loss = op2(t, OP_SPARSE_XENT, op2(t, OP_ADD, z, back), y);
    int errors;
    bool ok;
    char *out = autodiff_output(t->m, NULL, NULL, &ok, &errors);
    const char *want = "model.mg:3:9: error: cannot differentiate 'cast' on the path from the loss to param "
                       "'dense/kernel'\n";
    CHECK(!ok && errors == 1 && !strcmp(out, want), "cast to i32 on the loss path printed:\n%s", out);
    free(out);
    free_tb(t);
}

/* argmax_match feeding only a metric needs no gradient: no message at all. */
static void test_metric_only_path(void) {
    tb *t = new_tb();
    int y, z = dense_logits(t, &y);
    t->m->metrics = calloc(1, sizeof *t->m->metrics);
    t->m->metrics[t->m->n_metrics++] = (ir_metric){"accuracy", op2(t, OP_ARGMAX_MATCH, z, y)};
    t->m->loss = op2(t, OP_SPARSE_XENT, z, y);
    int errors;
    bool ok;
    char *out = autodiff_output(t->m, NULL, NULL, &ok, &errors);
    CHECK(ok && errors == 0 && !strcmp(out, ""), "a metric-only argmax_match printed:\n%s", out);
    free(out);
    free_tb(t);
}

/* A param the loss ignores: zeros of its shape and a note at the param. */
static void test_unused_param(void) {
    tb *t = new_tb();
    int y, z = dense_logits(t, &y);
    int unused = param(t, "unused/w", S(2, 2));
    ir_node_at(t->m, unused)->loc = (ir_loc){"model.mg", 4, 3};
    t->m->loss = op2(t, OP_SPARSE_XENT, z, y);
    int errors;
    bool ok;
    char *out = autodiff_output(t->m, NULL, NULL, &ok, &errors);
    CHECK(ok && errors == 0, "an unused param is not an error");
    CHECK(!strcmp(out, "model.mg:4:3: note: param 'unused/w' does not affect the loss; its gradient is zero\n"),
          "unused param printed:\n%s", out);
    const ir_node *g = ir_node_at(t->m, t->m->grads[2]);
    CHECK(g->op == OP_CONST && g->fattr[0] == 0 && ir_shape_eq(&g->shape, &ir_node_at(t->m, unused)->shape),
          "the gradient of an unused param is not zeros of its shape");
    free(out);
    free_tb(t);
}

/* Without a train block the pass adds nothing. */
static void test_no_train(void) {
    tb *t = new_tb();
    int y, z = dense_logits(t, &y);
    t->m->loss = op2(t, OP_SPARSE_XENT, z, y);
    t->m->has_train = false;
    int n = t->m->g.n, errors;
    bool ok;
    char *out = autodiff_output(t->m, NULL, NULL, &ok, &errors);
    CHECK(ok && t->m->g.n == n && !t->m->grads, "autodiff ran without a train block");
    free(out);
    free_tb(t);
}

/* Gradient nodes carry the position of the forward node they come from. */
static void test_positions(void) {
    tb *t = new_tb();
    int y, z = dense_logits(t, &y);
    ir_node_at(t->m, z - 1)->loc = (ir_loc){"model.mg", 5, 7}; /* the matmul */
    t->m->loss = op2(t, OP_SPARSE_XENT, z, y);
    int n_fwd = t->m->g.n, errors, matmuls = 0;
    bool ok;
    free(autodiff_output(t->m, NULL, NULL, &ok, &errors));
    for (int i = n_fwd; i < t->m->g.n; i++) {
        const ir_node *n = ir_node_at(t->m, i);
        CHECK(n->loc.file && !strcmp(n->loc.file, n->op == OP_MATMUL ? "model.mg" : "t.mg"),
              "gradient node %d has no position", i);
        if (n->op != OP_MATMUL) continue;
        matmuls++;
        CHECK(n->loc.line == 5 && n->loc.col == 7 && !strcmp(n->loc.file, "model.mg"),
              "the matmul gradient is at %d:%d", n->loc.line, n->loc.col);
    }
    CHECK(ok && matmuls == 1, "%d matmul gradients (want 1: x is an input)", matmuls);
    free_tb(t);
}

/* ---- optimizers: 3 steps vs Keras formulas computed by hand ---- */

typedef struct {
    const char *name;
    ir_optimizer opt;
    const char *slots[2]; /* suffixes of each param's slots */
    double want[5];       /* dense_1/kernel[3], dense_1/bias[2] after 3 steps */
} opt_case;

/* Expected values: tests/grad/keras_ref.py (Keras 3 update rules). */
static const opt_case opt_cases[] = {
    {"sgd", {OPT_SGD, .lr = 0.1}, {NULL}, {0.256, 0.098, 1.756, -0.0464, 0.188}},
    {"sgd momentum", {OPT_SGD, .lr = 0.1, .momentum = 0.9}, {"velocity"},
     {0.031, 1.1105, 1.531, -0.1814, 0.638}},
    {"sgd nesterov", {OPT_SGD, .lr = 0.1, .momentum = 0.9, .nesterov = true}, {"velocity"},
     {-0.054176, 1.493792, 1.445824, -0.2325056, 0.808352}},
    {"adam", {OPT_ADAM, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-7}, {"m", "v"},
     {0.20487199950111401, -0.70053888898498373, 1.7048719995011141, -0.1867098429623858,
      -0.0015866431267169273}},
    {"adamw", {OPT_ADAMW, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-7, .weight_decay = 0.004},
     {"m", "v"},
     {0.20440809546847075, -0.69946184410888668, 1.702661980510312, -0.18670373318567346,
      -0.0013490509588682253}},
    {"rmsprop", {OPT_RMSPROP, .lr = 0.01, .rho = 0.9, .epsilon = 1e-7}, {"ms"},
     {0.42792889763297004, -0.92658782243091453, 1.9279288976329698, 0.029176647648327215,
      -0.22705310410336429}},
    {"rmsprop momentum", {OPT_RMSPROP, .lr = 0.01, .rho = 0.9, .momentum = 0.5, .epsilon = 1e-7},
     {"ms", "momentum"},
     {0.39354147461534172, -0.89156494666237462, 1.8935414746153416, -0.0045865938651667854,
      -0.19224649323863818}},
    /* issue 12: weight decay for every optimizer, clipnorm, global_clipnorm, adagrad, nadam, lamb */
    {"sgd wd clipnorm", {OPT_SGD, .lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .clipnorm = 1.0}, {"velocity"},
     {0.37968557919181456, -0.46210789869598901, 1.8754582283924262, -0.061385675952408889, 0.23786743510293706}},
    {"adam global_clipnorm", {OPT_ADAM, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-7, .global_clipnorm = 1.0},
     {"m", "v"},
     {0.20303083416051426, -0.69980318104028338, 1.7030308341605143, -0.18920385474870435, -0.00046062289491585751}},
    {"rmsprop wd clipnorm", {OPT_RMSPROP, .lr = 0.01, .rho = 0.9, .epsilon = 1e-7, .weight_decay = 0.01, .clipnorm = 0.5},
     {"ms"},
     {0.42731178923109953, -0.92582462213303385, 1.9268715377058074, 0.028157881310240159, -0.22599342460466995}},
    {"adagrad", {OPT_ADAGRAD, .lr = 0.1, .epsilon = 1e-7, .initial_accumulator_value = 0.1}, {"accumulator"},
     {0.29751962911532254, -0.77570598095788312, 1.7975196291153226, -0.078276218058483379, -0.082299195486849136}},
    {"adagrad wd global", {OPT_ADAGRAD, .lr = 0.1, .epsilon = 1e-7, .initial_accumulator_value = 0.5,
                           .weight_decay = 0.01, .global_clipnorm = 1.0}, {"accumulator"},
     {0.42302677611671835, -0.8054659449214624, 1.9187490037801715, 0.052529034469886854, -0.16911359305556858}},
    {"nadam", {OPT_NADAM, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-7}, {"m", "v"},
     {0.2647270641539714, -0.74695851402334312, 1.7647270641539712, -0.1158798617402137, -0.052729277495300916}},
    {"nadam wd clipnorm", {OPT_NADAM, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-7, .weight_decay = 0.01,
                           .clipnorm = 1.0}, {"m", "v"},
     {0.2581685712295223, -0.73888933183393413, 1.7541101245150341, -0.12644530386892605, -0.040607585912709937}},
    {"lamb", {OPT_LAMB, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-6}, {"m", "v"},
     {0.13911633591428627, -0.63081120246087763, 1.6391163359142864, 0.038693668632282685, -0.23854565651856233}},
    {"lamb wd global", {OPT_LAMB, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-6, .weight_decay = 0.01,
                        .global_clipnorm = 1.0}, {"m", "v"},
     {0.13806622929532947, -0.62995927937997831, 1.6337606051953901, 0.038544614618717762, -0.23786268018642429}},
};

/* l_b = sum_j (kernel_j - x1_bj)^2 + sum_j (bias_j - x2_bj)^2, batch 2 */
static void quadratic(tb *t, int *x1, int *x2) {
    int k = param(t, "dense_1/kernel", S(3)), b = param(t, "dense_1/bias", S(2));
    *x1 = input(t, "x1", S(2, 3)), *x2 = input(t, "x2", S(2, 2));
    int d1 = op2(t, OP_SUB, k, *x1), d2 = op2(t, OP_SUB, b, *x2);
    t->m->loss = op2(t, OP_ADD, reduce(t, OP_REDUCE_SUM, op2(t, OP_MUL, d1, d1), 2, 0),
                     reduce(t, OP_REDUCE_SUM, op2(t, OP_MUL, d2, d2), 2, 0));
}

/* The update node of param p and its slots are what the optimizer promised. */
static void check_update(const opt_case *c, ir_module *m, int p, int *n_updates) {
    static const ir_op ops[OPT_COUNT] = {OP_SGD_UPDATE,     OP_ADAM_UPDATE,  OP_ADAM_UPDATE, OP_RMSPROP_UPDATE,
                                         OP_ADAGRAD_UPDATE, OP_NADAM_UPDATE, OP_LAMB_UPDATE};
    for (int i = 0; i < m->g.n; i++) {
        const ir_node *u = ir_node_at(m, i);
        if (!(ir_ops[u->op].flags & OPF_INPLACE) || u->in[0] != m->params[p]) continue;
        ++*n_updates;
        const char *pname = ir_node_at(m, m->params[p])->name;
        int n_slots = (c->slots[0] != NULL) + (c->slots[1] != NULL);
        int norm = c->opt.clipnorm > 0 || c->opt.global_clipnorm > 0;
        CHECK(u->op == ops[c->opt.kind] && u->n_in == 2 + n_slots + norm && u->in[1] == m->grads[p],
              "%s: update of '%s' is '%s' with %d inputs", c->name, pname, ir_ops[u->op].name, u->n_in);
        CHECK(u->fattr[ir_op_fattr_index(u->op, "lr")] == c->opt.lr, "%s: lr", c->name);
        if (norm) { /* sq_norm of its own gradient (clipnorm) or of every gradient (global_clipnorm) */
            const ir_node *s = ir_node_at(m, u->in[u->n_in - 1]);
            CHECK(s->op == OP_SQ_NORM && s->n_in == (c->opt.clipnorm > 0 ? 1 : m->n_params), "%s: the norm input", c->name);
        }
        for (int s = 0; s < n_slots && s + 2 < u->n_in; s++) {
            char want[128];
            snprintf(want, sizeof want, "%s/%s", pname, c->slots[s]);
            const ir_node *v = ir_node_at(m, u->in[2 + s]);
            CHECK(v->op == OP_VAR && v->iattr[0] == INIT_ZEROS && v->name && !strcmp(v->name, want),
                  "%s: slot %d is '%s', want '%s'", c->name, s, v->name ? v->name : "(null)", want);
        }
    }
}

static void run_opt_case(const opt_case *c) {
    tb *t = new_tb();
    int x1, x2;
    quadratic(t, &x1, &x2);
    t->m->opt = c->opt;
    ir_diag *d = ir_diag_new(stderr);
    CHECK(pass_autodiff(t->m, d, NULL) && pass_optimizer(t->m, d, NULL), "%s: passes failed", c->name);
    ir_diag_free(d);
    int n_updates = 0;
    for (int p = 0; p < t->m->n_params; p++) check_update(c, t->m, p, &n_updates);
    CHECK(n_updates == 2, "%s: %d update nodes", c->name, n_updates);

    ref_eval *e = ref_eval_new(t->m);
    memcpy(ref_eval_data(e, t->m->params[0]), (double[]){0.5, -1.0, 2.0}, 3 * sizeof(double));
    memcpy(ref_eval_data(e, t->m->params[1]), (double[]){0.1, -0.3}, 2 * sizeof(double));
    memcpy(ref_eval_data(e, x1), (double[]){1, 2, 3, -1, 0.5, 0}, 6 * sizeof(double));
    memcpy(ref_eval_data(e, x2), (double[]){0.2, 0.4, -0.6, 1.0}, 4 * sizeof(double));
    for (int step = 1; step <= 3; step++) ref_eval_run(e, step, true);
    double worst = 0;
    for (int k = 0; k < 5; k++) {
        double got = ref_eval_data(e, t->m->params[k / 3])[k % 3];
        worst = fmax(worst, fabs(got - c->want[k]));
    }
    printf("  %-18s 3 steps, max abs error %.1e\n", c->name, worst);
    CHECK(worst < 1e-12, "%s: params after 3 steps differ from Keras by %.3g", c->name, worst);
    ref_eval_free(e);
    free_tb(t);
}

static void test_optimizers(void) {
    for (size_t i = 0; i < sizeof opt_cases / sizeof opt_cases[0]; i++) run_opt_case(&opt_cases[i]);
}

/* reduce_max / reduce_min at ties (where finite differences cannot look):
 * the gradient of each row is split equally between its tied extremes
 * (TensorFlow's rule). Rows of x: [1, 3, 3] and [2, 2, 2]; L = mean(y). */
static void test_extreme_ties(ir_op op) {
    tb *t = new_tb();
    int x = param(t, "x", S(2, 3));
    t->m->loss = weigh(t, reduce(t, op, x, 2, 0));
    ir_diag *d = ir_diag_new(stderr);
    CHECK(pass_autodiff(t->m, d, NULL), "autodiff of %s at ties", ir_ops[op].name);
    ir_diag_free(d);
    ref_eval *e = ref_eval_new(t->m);
    double row0[3] = {1, 3, 3}, *xv = ref_eval_data(e, x);
    for (int k = 0; k < 3; k++) xv[k] = op == OP_REDUCE_MAX ? row0[k] : -row0[k], xv[3 + k] = 2;
    for (int i = 0; i < t->m->g.n; i++)
        if (t->m->g.nodes[i].op == OP_INPUT) ref_eval_data(e, i)[0] = ref_eval_data(e, i)[1] = 1; /* weights */
    ref_eval_run(e, 1, true);
    const double *g = ref_eval_data(e, t->m->grads[0]), want[6] = {0, 0.25, 0.25, 1.0 / 6, 1.0 / 6, 1.0 / 6};
    for (int k = 0; k < 6; k++)
        CHECK(fabs(g[k] - want[k]) < 1e-12, "%s at ties: dx[%d] = %g, want %g", ir_ops[op].name, k, g[k], want[k]);
    ref_eval_free(e);
    free_tb(t);
}

int main(void) {
    test_gradients();
    test_extreme_ties(OP_REDUCE_MAX);
    test_extreme_ties(OP_REDUCE_MIN);
    test_argmax_on_loss_path();
    test_cast_to_int();
    test_metric_only_path();
    test_unused_param();
    test_no_train();
    test_positions();
    test_optimizers();
    if (failures) fprintf(stderr, "%d failures\n", failures);
    else printf("all grad tests passed\n");
    return failures != 0;
}
