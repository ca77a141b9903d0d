/* test_scale.c - the compiler scales linearly (issue 14): an lstm unrolled
 * over T and over 2T steps (about 16,000 and 32,000 nodes on one device; the
 * same graph replicated on two devices at T/2 and T) compiles - elaborate,
 * every pass, the plan check with its race proof, writing the plan - in at
 * most 2.6 times the CPU time (linear: 2, quadratic: 4). The two sizes are
 * compiled by turns, RUNS times each, and each keeps its least CPU time, so a
 * loaded machine does not decide; process CPU time, not wall time, for the
 * same reason. Still, on this VM the ratio moves (another machine's load
 * counts as this process's CPU time): ctest runs the test alone (RUN_SERIAL,
 * tests/irplan.cmake), and a doubling over the bound is measured again, up to
 * ATTEMPTS times. The sizes are large enough to tell: at 4,000 -> 8,000
 * nodes the ratio read 1.5-3.0 alone (and 3.03 and 2.74 in CI) where the
 * quadratic reference planner (pass_options.memplan_rescan) read only
 * 2.5-3.0; at these sizes this compiler reads 1.9-2.3 and that planner
 * 4.0-4.2 on one device, 3.2-3.3 on two.
 *   test_irplan_scale STDLIB_DIR OUT.mgx */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../../ir/plan.h"
#include "../../passes/passes.h"

#if defined(__SANITIZE_ADDRESS__)
/* under ASan, malloc's quarantine and redzones grow with the heap: the same
 * compiles measured 2.90 in CI's sanitized run at 4,000 -> 8,000 nodes,
 * 2.1-2.5 at these sizes; still below quadratic's 4 */
static const double MAX_RATIO = 3.5;
#else
static const double MAX_RATIO = 2.6;
#endif
enum { RUNS = 5, ATTEMPTS = 3 };

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Compiles the lstm over `steps` steps for n_dev devices once; returns the
 * CPU seconds it took, *nodes the plan's node count. */
static double compile_lstm(const char *stdlib, const char *out, int steps, int n_dev, int *nodes) {
    char text[1024];
    snprintf(text, sizeof text,
             "use nn\nmodel long {\n  input x: f32[batch, %d, 8]\n  input label: i32[batch]\n"
             "  logits = dense(lstm(x, 16), 5)\n  loss = sparse_softmax_cross_entropy(logits, label)\n}\n"
             "train long {\n  optimizer = adam(learning_rate: 0.01)\n  batch = 8 per replica\n}\n",
             steps);
    ir_source src = {.path = "long.mg", .text = text};
    ir_device dev[2] = {{"cpu", 0}, {"cpu", 1}};
    pass_options o;
    pass_options_default(&o);
    o.n_sources = 1, o.sources = &src, o.devices = dev, o.n_devices = n_dev, o.quiet = true;
    char err[512];
    double start = cpu_seconds();
    ir_diag *d = ir_diag_new(stderr);
    ir_module *m = pass_elaborate("long.mg", stdlib, d, &o);
    if (!m || !pass_run_all(m, d, &o, NULL, NULL) || mgx_write(m, out, err, sizeof err)) {
        fprintf(stderr, "FAIL: the lstm over %d steps on %d devices does not compile\n", steps, n_dev);
        exit(1);
    }
    double t = cpu_seconds() - start;
    *nodes = m->g.n;
    ir_module_free(m);
    ir_diag_free(d);
    return t;
}

/* Measures one doubling; returns 0 when the time grew by less than MAX_RATIO. */
static int check_doubling(const char *stdlib, const char *out, int steps, int n_dev) {
    int n1, n2;
    double t1 = 1e30, t2 = 1e30;
    for (int run = 0; run < RUNS; run++) {
        double a = compile_lstm(stdlib, out, steps, n_dev, &n1), b = compile_lstm(stdlib, out, 2 * steps, n_dev, &n2);
        if (a < t1) t1 = a;
        if (b < t2) t2 = b;
    }
    double ratio = t2 / t1;
    printf("lstm on %d device%s: %d steps %6d nodes %7.1f ms, %d steps %6d nodes %7.1f ms: %.2f times the time for "
           "%.2f times the nodes\n",
           n_dev, n_dev > 1 ? "s" : "", steps, n1, 1e3 * t1, 2 * steps, n2, 1e3 * t2, ratio, (double)n2 / n1);
    if ((double)n2 / n1 < 1.9 || (double)n2 / n1 > 2.1) {
        fprintf(stderr, "FAIL: the graph does not double (%d -> %d nodes)\n", n1, n2);
        exit(1);
    }
    return !(ratio < MAX_RATIO);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: test_irplan_scale STDLIB_DIR OUT.mgx\n");
        return 2;
    }
    /* a noisy host pushes one attempt past the bound; a quadratic compiler, every one */
    for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
        int over = check_doubling(argv[1], argv[2], 512, 1) + check_doubling(argv[1], argv[2], 256, 2);
        if (!over) {
            printf("scale: compile time linear in the graph on 1 and 2 devices\n");
            return 0;
        }
        printf("attempt %d of %d: a doubling took %.1f times the compile time or more\n", attempt, ATTEMPTS, MAX_RATIO);
    }
    fprintf(stderr, "FAIL: doubling the graph took %.1f times the compile time or more in each of %d attempts\n",
            MAX_RATIO, ATTEMPTS);
    return 1;
}
