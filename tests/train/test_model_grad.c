/* test_model_grad.c - a whole model's gradient against central differences.
 * The loss is what the module reports (the mean of its per-example vector,
 * as eval computes it); its gradient is the one the train program applies:
 * one SGD step at learning rate 1 from p gives p - g. For every param, a few
 * coordinates are moved by +-eps and (L+ - L-) / 2 eps must match g there.
 * Optional terms check the reported loss itself:
 *   test_model_grad MODEL.mg STDLIB [--classes C] [metric:NAME:W] [l1:PARAM:F] [l2:PARAM:F] ...
 * expects loss = sum W * metric NAME + sum F * sum|PARAM| + sum F * sum PARAM^2
 * (Keras: the weighted sum of the losses plus the regularization penalties).
 * Inputs are random (f32 in [-1, 1), i32 labels in [0, C)), batch 8. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../ir/diag.h"
#include "../../passes/passes.h"
#include "../../runtime/session.h"

enum { BATCH = 8, COORDS = 4 };
static const double EPS = 1e-2;
static int failures;

static ir_module *compile(const char *path, const char *stdlib) {
    pass_options o;
    pass_options_default(&o);
    ir_device dev = {"cpu", 0};
    o.devices = &dev, o.n_devices = 1, o.global_batch = BATCH;
    ir_diag *d = ir_diag_new(stderr);
    ir_module *m = pass_elaborate(path, stdlib, d, &o);
    if (m) m->opt = (ir_optimizer){.kind = OPT_SGD, .lr = 1.0}; /* p_after = p - g */
    if (!m || !pass_run_all(m, d, &o, NULL, NULL)) {
        fprintf(stderr, "FAIL: %s does not compile\n", path);
        exit(1);
    }
    ir_diag_free(d);
    return m;
}

static void set_random_inputs(rt_session *s, const ir_module *m, int classes) {
    uint64_t state = 12345;
    for (int k = 0; k < m->n_inputs; k++) {
        const ir_node *x = &m->g.nodes[m->inputs[k]];
        int64_t n = ir_shape_numel(&x->shape);
        float *v = malloc((size_t)n * 4);
        for (int64_t i = 0; i < n; i++) {
            state = state * 6364136223846793005u + 1442695040888963407u;
            uint32_t r = (uint32_t)(state >> 33);
            if (x->dtype == IR_I32) ((int32_t *)v)[i] = (int32_t)(r % (uint32_t)classes);
            else v[i] = (float)r / 2147483648.0f * 2 - 1;
        }
        rt_session_set_input(s, k, v);
        free(v);
    }
}

/* The mean of per-example vector `node` after an eval run. */
static double mean_of(rt_session *s, int node) {
    float v[BATCH];
    if (rt_session_read(s, node, v)) fprintf(stderr, "FAIL: read: %s\n", rt_session_error(s)), exit(1);
    double sum = 0;
    for (int i = 0; i < BATCH; i++) sum += v[i];
    return sum / BATCH;
}

static double eval_loss(rt_session *s, const ir_module *m) {
    if (rt_session_run(s, PROG_EVAL)) fprintf(stderr, "FAIL: eval: %s\n", rt_session_error(s)), exit(1);
    return mean_of(s, m->loss);
}

static int param_named(const ir_module *m, const char *name) {
    for (int p = 0; p < m->n_params; p++)
        if (!strcmp(m->g.nodes[m->params[p]].name, name)) return p;
    fprintf(stderr, "FAIL: no param '%s'\n", name);
    exit(1);
}

/* The loss the terms on the command line describe, from the current state. */
static double expected_loss(rt_session *s, const ir_module *m, int argc, char **argv, float **p0) {
    double want = 0;
    for (int a = 0; a < argc; a++) {
        char kind[16], name[256];
        double f;
        if (sscanf(argv[a], "%15[^:]:%255[^:]:%lf", kind, name, &f) != 3) fprintf(stderr, "FAIL: bad term '%s'\n", argv[a]), exit(2);
        if (!strcmp(kind, "metric")) {
            int k = 0;
            while (k < m->n_metrics && strcmp(m->metrics[k].name, name)) k++;
            if (k == m->n_metrics) fprintf(stderr, "FAIL: no metric '%s'\n", name), exit(1);
            want += f * mean_of(s, m->metrics[k].node);
            continue;
        }
        int p = param_named(m, name);
        double sum = 0;
        for (int64_t i = 0; i < ir_shape_numel(&m->g.nodes[m->params[p]].shape); i++)
            sum += !strcmp(kind, "l1") ? fabs(p0[p][i]) : (double)p0[p][i] * p0[p][i];
        want += f * sum;
    }
    return want;
}

int main(int argc, char **argv) {
    if (argc < 3) return fprintf(stderr, "usage: test_model_grad MODEL.mg STDLIB [--classes C] [TERM...]\n"), 2;
    int classes = 4, first_term = 3;
    if (argc > 4 && !strcmp(argv[3], "--classes")) classes = atoi(argv[4]), first_term = 5;
    ir_module *m = compile(argv[1], argv[2]);
    char err[512];
    rt_session_options so = {.threads_per_device = 1, .collective_timeout = 30};
    rt_session *s = rt_session_new(m, &so, err, sizeof err);
    if (!s || rt_session_init_variables(s, 7)) return fprintf(stderr, "FAIL: session: %s\n", s ? rt_session_error(s) : err), 1;
    set_random_inputs(s, m, classes);

    float **p0 = malloc((size_t)m->n_params * sizeof *p0), **p1 = malloc((size_t)m->n_params * sizeof *p1);
    for (int p = 0; p < m->n_params; p++) {
        size_t bytes = (size_t)ir_node_bytes(&m->g.nodes[m->params[p]]);
        p0[p] = malloc(bytes), p1[p] = malloc(bytes);
        rt_session_read(s, m->params[p], p0[p]);
    }
    double loss = eval_loss(s, m);
    if (argc > first_term) {
        double want = expected_loss(s, m, argc - first_term, argv + first_term, p0);
        bool ok = fabs(loss - want) <= 1e-5 * fmax(1, fabs(want));
        printf("%s: loss %.7f, the weighted sum of its terms %.7f\n", ok ? "ok" : "FAIL", loss, want);
        failures += !ok;
    }
    if (rt_session_run(s, PROG_TRAIN)) return fprintf(stderr, "FAIL: train: %s\n", rt_session_error(s)), 1;
    for (int p = 0; p < m->n_params; p++) rt_session_read(s, m->params[p], p1[p]);
    for (int p = 0; p < m->n_params; p++) rt_session_write(s, m->params[p], p0[p]);

    for (int p = 0; p < m->n_params; p++) {
        const ir_node *pn = &m->g.nodes[m->params[p]];
        int64_t n = ir_shape_numel(&pn->shape);
        double worst = 0;
        for (int c = 0; c < COORDS && c < n; c++) {
            int64_t i = c * (n - 1) / (COORDS - 1 > 0 ? COORDS - 1 : 1);
            double g = (double)p0[p][i] - (double)p1[p][i];
            float keep = p0[p][i];
            p0[p][i] = keep + (float)EPS, rt_session_write(s, m->params[p], p0[p]);
            double up = eval_loss(s, m);
            p0[p][i] = keep - (float)EPS, rt_session_write(s, m->params[p], p0[p]);
            double down = eval_loss(s, m);
            p0[p][i] = keep, rt_session_write(s, m->params[p], p0[p]);
            double fd = (up - down) / (2 * EPS), bad = fabs(fd - g) - (2e-3 + 2e-2 * fabs(g));
            if (bad > worst) worst = bad;
            if (bad > 0) printf("FAIL: %s[%lld]: gradient %.6g, central difference %.6g\n", pn->name, (long long)i, g, fd);
            failures += bad > 0;
        }
        if (worst <= 0) printf("ok: %s: %d coordinates match central differences\n", pn->name, n < COORDS ? (int)n : COORDS);
    }
    for (int p = 0; p < m->n_params; p++) free(p0[p]), free(p1[p]);
    free(p0), free(p1);
    rt_session_free(s);
    ir_module_free(m);
    printf("%s\n", failures ? "FAILED" : "PASSED");
    return failures ? 1 : 0;
}
