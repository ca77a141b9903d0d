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

/* ---- the table: one forward graph per case, its output weighed into the loss ---- */

typedef struct {
    const char *name;
    ir_op op; /* the op whose gradient rule it checks */
    int (*build)(tb *t);
} grad_case;

static int b_add_same(tb *t) { return op2(t, OP_ADD, param(t, "a", S(2, 3)), param(t, "b", S(2, 3))); }
static int b_add_vec(tb *t) { return op2(t, OP_ADD, param(t, "a", S(2, 3, 4)), param(t, "b", S(4))); }
static int b_add_both(tb *t) { return op2(t, OP_ADD, param(t, "a", S(2, 1, 4)), param(t, "b", S(3, 1))); }
static int b_sub(tb *t) { return op2(t, OP_SUB, param(t, "a", S(3, 1)), param(t, "b", S(2, 3, 4))); }
static int b_mul(tb *t) { return op2(t, OP_MUL, param(t, "a", S(2, 3, 4)), param(t, "b", S(1, 3, 1))); }
static int b_mul_scalar(tb *t) { return op2(t, OP_MUL, param(t, "a", S(2, 3)), param(t, "s", SCALAR)); }
static int b_div(tb *t) { return op2(t, OP_DIV, param(t, "a", S(2, 3, 4)), param_pos(t, "b", S(3, 1))); }
static int b_div_vec(tb *t) { return op2(t, OP_DIV, param(t, "a", S(4)), param_pos(t, "b", S(2, 3, 4))); }
static int b_neg(tb *t) { return op1(t, OP_NEG, param(t, "x", S(2, 5))); }
static int b_exp(tb *t) { return op1(t, OP_EXP, param(t, "x", S(2, 5))); }
static int b_log(tb *t) { return op1(t, OP_LOG, param_pos(t, "x", S(2, 5))); }
static int b_sqrt(tb *t) { return op1(t, OP_SQRT, param_pos(t, "x", S(2, 5))); }
static int b_relu(tb *t) { return op1(t, OP_RELU, param(t, "x", S(3, 5))); }
static int b_sigmoid(tb *t) { return op1(t, OP_SIGMOID, param(t, "x", S(2, 5))); }
static int b_tanh(tb *t) { return op1(t, OP_TANH, param(t, "x", S(2, 5))); }
static int b_cast(tb *t) { return cast(t, param(t, "x", S(2, 3)), IR_F32); }
static int b_mm00(tb *t) { return matmul(t, param(t, "a", S(3, 4)), param(t, "b", S(4, 2)), 0, 0); }
static int b_mm10(tb *t) { return matmul(t, param(t, "a", S(4, 3)), param(t, "b", S(4, 2)), 1, 0); }
static int b_mm01(tb *t) { return matmul(t, param(t, "a", S(3, 4)), param(t, "b", S(2, 4)), 0, 1); }
static int b_mm11(tb *t) { return matmul(t, param(t, "a", S(4, 3)), param(t, "b", S(2, 4)), 1, 1); }
static int b_conv_valid(tb *t) {
    return conv(t, param(t, "x", S(2, 5, 5, 3)), param(t, "w", S(3, 3, 3, 4)), 1, 1, 0, 0, 0, 0);
}
/* TF "same" at stride 2: H 6 -> 3 (pad 0+1), W 7 -> 4 (pad 1+1) */
static int b_conv_same_s2(tb *t) {
    return conv(t, param(t, "x", S(2, 6, 7, 2)), param(t, "w", S(3, 3, 2, 3)), 2, 2, 0, 1, 1, 1);
}
static int b_conv_rect(tb *t) {
    return conv(t, param(t, "x", S(1, 5, 6, 2)), param(t, "w", S(2, 3, 2, 2)), 1, 2, 1, 0, 0, 1);
}
static int b_max_k2s1(tb *t) { return pool(t, OP_MAX_POOL2D, param(t, "x", S(2, 4, 4, 3)), 2, 1, 0, 0, 0, 0); }
static int b_max_k3s2(tb *t) { return pool(t, OP_MAX_POOL2D, param(t, "x", S(2, 5, 6, 2)), 3, 2, 1, 0, 1, 1); }
static int b_avg_k2s1(tb *t) { return pool(t, OP_AVG_POOL2D, param(t, "x", S(2, 4, 4, 3)), 2, 1, 0, 0, 0, 0); }
static int b_avg_k3s2(tb *t) { return pool(t, OP_AVG_POOL2D, param(t, "x", S(2, 5, 6, 2)), 3, 2, 1, 0, 1, 1); }
static int b_reshape(tb *t) { return reshape(t, param(t, "x", S(2, 3, 4)), S(4, 6)); }
static int b_sum_02(tb *t) { return reduce(t, OP_REDUCE_SUM, param(t, "x", S(2, 3, 4)), 5, 0); }
static int b_sum_02_keep(tb *t) { return reduce(t, OP_REDUCE_SUM, param(t, "x", S(2, 3, 4)), 5, 1); }
static int b_sum_all(tb *t) { return reduce(t, OP_REDUCE_SUM, param(t, "x", S(2, 3, 4)), 7, 0); }
static int b_mean_12(tb *t) { return reduce(t, OP_REDUCE_MEAN, param(t, "x", S(2, 3, 4)), 6, 0); }
static int b_mean_0_keep(tb *t) { return reduce(t, OP_REDUCE_MEAN, param(t, "x", S(2, 3, 4)), 1, 1); }
static int b_broadcast_to(tb *t) {
    ir_shape s = S(2, 3, 4);
    return node(t, OP_BROADCAST_TO, 1, (int[]){param(t, "x", S(3, 1))}, NULL, 0, NULL, 0, &s);
}
static int b_softmax(tb *t) { return op1(t, OP_SOFTMAX, param(t, "x", S(3, 5))); }
static int b_softmax3(tb *t) { return op1(t, OP_SOFTMAX, param(t, "x", S(2, 3, 4))); }
static int b_xent(tb *t) {
    int logits = param(t, "logits", S(4, 5));
    return op2(t, OP_SPARSE_XENT, logits, labels(t, 4, 5));
}
static int b_dropout(tb *t) {
    int x = param(t, "x", S(4, 5));
    return node(t, OP_DROPOUT, 1, &x, (int64_t[]){1234}, 1, (double[]){0.3}, 1, NULL);
}
/* y = tanh(x) has three users, x two: z = y*y + exp(y) + x */
static int b_two_users(tb *t) {
    int x = param(t, "x", S(2, 3)), y = op1(t, OP_TANH, x);
    return op2(t, OP_ADD, op2(t, OP_ADD, op2(t, OP_MUL, y, y), op1(t, OP_EXP, y)), x);
}
/* dense(relu) -> dense -> sparse_xent, batch 4 */
static int b_mlp(tb *t) {
    int x = input(t, "x", S(4, 6));
    int h = op1(t, OP_RELU, op2(t, OP_ADD, matmul(t, x, param(t, "d1/kernel", S(6, 5)), 0, 0),
                                param(t, "d1/bias", S(5))));
    int logits = op2(t, OP_ADD, matmul(t, h, param(t, "d2/kernel", S(5, 3)), 0, 0), param(t, "d2/bias", S(3)));
    return op2(t, OP_SPARSE_XENT, logits, labels(t, 4, 3));
}
/* conv(relu) -> max_pool -> flatten -> dense -> softmax cross-entropy */
static int b_cnn(tb *t) {
    int x = input(t, "image", S(2, 6, 6, 1));
    int c = op1(t, OP_RELU, op2(t, OP_ADD, conv(t, x, param(t, "c/kernel", S(3, 3, 1, 2)), 1, 1, 0, 0, 0, 0),
                                param(t, "c/bias", S(2))));
    int p = reshape(t, pool(t, OP_MAX_POOL2D, c, 2, 2, 0, 0, 0, 0), S(2, 8));
    int logits = matmul(t, p, param(t, "d/kernel", S(8, 4)), 0, 0);
    return op2(t, OP_SPARSE_XENT, logits, labels(t, 2, 4));
}

static const grad_case cases[] = {
    {"add", OP_ADD, b_add_same},
    {"add [2,3,4]+[4]", OP_ADD, b_add_vec},
    {"add [2,1,4]+[3,1]", OP_ADD, b_add_both},
    {"sub [3,1]-[2,3,4]", OP_SUB, b_sub},
    {"mul [2,3,4]*[1,3,1]", OP_MUL, b_mul},
    {"mul by scalar", OP_MUL, b_mul_scalar},
    {"div [2,3,4]/[3,1]", OP_DIV, b_div},
    {"div [4]/[2,3,4]", OP_DIV, b_div_vec},
    {"neg", OP_NEG, b_neg},
    {"exp", OP_EXP, b_exp},
    {"log", OP_LOG, b_log},
    {"sqrt", OP_SQRT, b_sqrt},
    {"relu", OP_RELU, b_relu},
    {"sigmoid", OP_SIGMOID, b_sigmoid},
    {"tanh", OP_TANH, b_tanh},
    {"cast f32->f32", OP_CAST, b_cast},
    {"matmul", OP_MATMUL, b_mm00},
    {"matmul trans_a", OP_MATMUL, b_mm10},
    {"matmul trans_b", OP_MATMUL, b_mm01},
    {"matmul trans_a trans_b", OP_MATMUL, b_mm11},
    {"conv2d valid", OP_CONV2D, b_conv_valid},
    {"conv2d stride 2 same", OP_CONV2D, b_conv_same_s2},
    {"conv2d 2x3 stride 1x2 padded", OP_CONV2D, b_conv_rect},
    {"max_pool2d k2 s1", OP_MAX_POOL2D, b_max_k2s1},
    {"max_pool2d k3 s2 same", OP_MAX_POOL2D, b_max_k3s2},
    {"avg_pool2d k2 s1", OP_AVG_POOL2D, b_avg_k2s1},
    {"avg_pool2d k3 s2 same", OP_AVG_POOL2D, b_avg_k3s2},
    {"reshape", OP_RESHAPE, b_reshape},
    {"reduce_sum axes 0,2", OP_REDUCE_SUM, b_sum_02},
    {"reduce_sum axes 0,2 keepdims", OP_REDUCE_SUM, b_sum_02_keep},
    {"reduce_sum all axes", OP_REDUCE_SUM, b_sum_all},
    {"reduce_mean axes 1,2", OP_REDUCE_MEAN, b_mean_12},
    {"reduce_mean axis 0 keepdims", OP_REDUCE_MEAN, b_mean_0_keep},
    {"broadcast_to", OP_BROADCAST_TO, b_broadcast_to},
    {"softmax", OP_SOFTMAX, b_softmax},
    {"softmax rank 3", OP_SOFTMAX, b_softmax3},
    {"sparse_xent", OP_SPARSE_XENT, b_xent},
    {"dropout", OP_DROPOUT, b_dropout},
    {"value with several users", OP_ADD, b_two_users},
    {"mlp", OP_MATMUL, b_mlp},
    {"cnn", OP_CONV2D, b_cnn},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

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

int main(void) {
    test_gradients();
    if (failures) fprintf(stderr, "%d failures\n", failures);
    return failures != 0;
}
