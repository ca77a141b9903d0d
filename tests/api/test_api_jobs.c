/* test_api_jobs.c - the libmgc calls mgc run, eval, predict and generate are
 * made of, through mgc.h alone: a job of one process (facts, a local failure
 * told at the agreement, a session whose variables wait for it), datasets
 * opened from files (--input bindings, their errors), fit/evaluate/predict
 * over datasets equal to the feed calls and to the CLI's files and figures,
 * outputs the library allocates written as NPY, mgc run's counting (total),
 * quiet and the stop flag, and a session's trace and profile.
 *
 * usage: test_api_jobs MGC_BINARY TINY.mg SOURCE_DIR */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_check.h"

enum { N = 200, F = 12, C = 4 };

static char stdlib[1024];
static float xs[N][F];
static int32_t ys[N];
static const int64_t x_shape[] = {N, F}, y_shape[] = {N};
static const mgc_feed feeds[] = {{"x", MGC_F32, 2, x_shape, xs}, {"label", MGC_I32, 1, y_shape, ys}};

static void make_data(void) {
    unsigned s = 7;
    for (int i = 0; i < N; i++) {
        float a = 0;
        for (int j = 0; j < F; j++) a += xs[i][j] = (float)((s = s * 1103515245u + 12345u) >> 8) / (1 << 24) * 2 - 1;
        ys[i] = a < -1 ? 0 : a < 0 ? 1 : a < 1 ? 2 : 3;
    }
    write_npy(path("x.npy"), "<f4", x_shape, 2, xs, sizeof xs);
    write_npy(path("y.npy"), "<i4", y_shape, 1, ys, sizeof ys);
    int32_t bad[N];
    memcpy(bad, ys, sizeof bad);
    bad[7] = C;
    write_npy(path("bad.npy"), "<i4", y_shape, 1, bad, sizeof bad);
}

static char x_binding[600], y_binding[600], bad_binding[600];

/* A job of one process: rank 0 of 1, the facts noted, a local failure is
 * the agreement's verdict; the plan is left as it is. */
static void job_of_one(const mgc_plan *p) {
    mgc_error err;
    mgc_job *j = NULL;
    EXPECT_ERROR(mgc_job_start(-1, &j, &err), MGC_ERR_ARG, "mgc_job_start: timeout -1 is not from 0 to 86400 seconds");
    MUST(mgc_job_start(0, &j, &err));
    CHECK(mgc_job_rank(j) == 0 && mgc_job_size(j) == 1 && !mgc_job_failed(j), "rank %d of %d", mgc_job_rank(j),
          mgc_job_size(j));
    mgc_job_facts f = {.seed = 3, .steps = 5, .checkpoint = path("nosuch.safetensors")};
    CHECK(mgc_job_set_facts(j, p, "tiny.mgx", &f, &err) == MGC_ERR_IO && strstr(err.message, "nosuch.safetensors"),
          "a checkpoint that is not there: %s", err.message);
    f.checkpoint = NULL;
    MUST(mgc_job_set_facts(j, p, "tiny.mgx", &f, &err));
    MUST(mgc_job_agree(j, &err));
    int64_t nodes = mgc_plan_node_count(p);
    MUST(mgc_job_plan(j, (mgc_plan *)p, NULL, NULL, &err));
    CHECK(mgc_plan_node_count(p) == nodes, "a job of one process re-planned the plan");
    MUST(mgc_plan_check_memory(p, j, &err));
    mgc_job_fail(j, "tiny.mgx: the first failure");
    mgc_job_fail(j, "a second failure");
    CHECK(mgc_job_failed(j), "mgc_job_fail");
    EXPECT_ERROR(mgc_job_agree(j, &err), MGC_ERR_RUNTIME, "tiny.mgx: the first failure");
    CHECK(mgc_job_end(j, 1) == 1, "mgc_job_end's status");
    CHECK(mgc_job_end(NULL, 0) == 0, "mgc_job_end(NULL)");
}

/* Datasets from --input bindings: counts, the uses' inputs, errors. */
static void datasets(const mgc_plan *p) {
    mgc_error err;
    mgc_dataset *d = NULL;
    const char *both[] = {x_binding, y_binding}, *bad[] = {x_binding, bad_binding}, *x_only[] = {x_binding};
    mgc_data_options o = {.bindings = both, .n_bindings = 2};
    MUST(mgc_dataset_open(p, MGC_DATA_TRAIN, &o, &d, &err));
    CHECK(mgc_dataset_count(d) == N, "%lld examples", (long long)mgc_dataset_count(d));
    mgc_dataset_free(d);
    o.bindings = x_only, o.n_bindings = 1;
    MUST(mgc_dataset_open(p, MGC_DATA_PREDICT, &o, &d, &err)); /* predict reads x only */
    mgc_dataset_free(d);
    CHECK(mgc_dataset_open(p, MGC_DATA_TEST, &o, &d, &err) == MGC_ERR_IO && strstr(err.message, "label") && !d,
          "test data without labels: %s", err.message);
    o.bindings = bad, o.n_bindings = 2;
    CHECK(mgc_dataset_open(p, MGC_DATA_TEST, &o, &d, &err) == MGC_ERR_IO && strstr(err.message, "label") &&
              strstr(err.message, "4"),
          "a label outside the classes: %s", err.message);
    mgc_data_options text = {.dir = "text:/nonexistent/mgc", .bindings = both, .n_bindings = 2};
    EXPECT_ERROR(mgc_dataset_open(p, MGC_DATA_TRAIN, &text, &d, &err), MGC_ERR_ARG,
                 "mgc_dataset_open: give text data or bindings, not both");
    CHECK(mgc_plan_input_predicts(p, 0) == 1 && mgc_plan_input_predicts(p, 1) == 0, "the inputs predict reads");
}

static int lines, quiet_lines;
static int count_lines(const mgc_progress *pr, void *user) {
    (void)user;
    if (pr->line) lines++;
    return 0;
}

/* A session under a job: variables set after the agreement; fit, evaluate
 * and predict over datasets equal the feed calls and the CLI. */
static void over_datasets(const char *mgc, mgc_plan *p) {
    mgc_error err;
    mgc_job *j = NULL;
    MUST(mgc_job_start(0, &j, &err));
    mgc_session_options so;
    mgc_session_options_init(&so);
    so.job = j, so.seed = 5, so.threads_per_device = 0;
    mgc_session *s = NULL, *t = NULL;
    MUST(mgc_session_new(p, &so, &s, &err));
    MUST(mgc_job_agree(j, &err));
    MUST(mgc_session_init(s, &err));
    so.job = NULL;
    MUST(mgc_session_new(p, &so, &t, &err)); /* initialized by mgc_session_new: the same weights */
    float a[16], b[16];
    MUST(mgc_variable_read(s, "dense/bias", a, sizeof a, &err));
    MUST(mgc_variable_read(t, "dense/bias", b, sizeof b, &err));
    CHECK(!memcmp(a, b, sizeof a), "mgc_session_init differs from mgc_session_new's initializers");

    const char *both[] = {x_binding, y_binding}, *x_only[] = {x_binding};
    mgc_data_options o = {.bindings = both, .n_bindings = 2};
    mgc_dataset *train = NULL, *pred = NULL;
    MUST(mgc_dataset_open(p, MGC_DATA_TRAIN, &o, &train, &err));
    o.bindings = x_only, o.n_bindings = 1;
    MUST(mgc_dataset_open(p, MGC_DATA_PREDICT, &o, &pred, &err));
    mgc_job_set_data(j, train);
    MUST(mgc_job_agree(j, &err));

    /* mgc run's counting: total targets from step 0 */
    mgc_fit_options fo;
    mgc_fit_options_init(&fo);
    fo.steps = 4, fo.total = 1, fo.progress = count_lines, fo.validation_data = train;
    MUST(mgc_fit_dataset(s, train, &fo, &err));
    CHECK(mgc_session_step(s) == 4, "step %lld after --steps 4", (long long)mgc_session_step(s));
    fo.steps = 6;
    MUST(mgc_fit_dataset(s, train, &fo, &err));
    CHECK(mgc_session_step(s) == 6, "step %lld after --steps 6 in all", (long long)mgc_session_step(s));
    CHECK(lines > 0, "no progress lines");
    quiet_lines = lines, fo.quiet = 1, fo.steps = 7;
    MUST(mgc_fit_dataset(s, train, &fo, &err));
    CHECK(lines == quiet_lines, "a quiet fit reported %d lines", lines - quiet_lines);
    volatile sig_atomic_t stop = 1;
    fo.quiet = 0, fo.stop = &stop, fo.steps = 20;
    EXPECT_ERROR(mgc_fit_dataset(s, train, &fo, &err), MGC_STOPPED, "stopped by the stop flag after step 8");
    fo.stop = NULL, fo.validation = feeds, fo.n_validation = 2;
    EXPECT_ERROR(mgc_fit_dataset(s, train, &fo, &err), MGC_ERR_ARG,
                 "mgc_fit_dataset: validation feeds are mgc_fit's; give validation_data");

    /* evaluate and predict: the feed calls' figures and outputs */
    mgc_scores v1, v2;
    MUST(mgc_evaluate_dataset(s, train, &v1, &err));
    MUST(mgc_evaluate(s, feeds, 2, &v2, &err));
    CHECK(v1.loss == v2.loss && v1.metrics[0] == v2.metrics[0] && v1.examples == N && v2.examples == N,
          "evaluate over a dataset %g %g, over feeds %g %g", v1.loss, v1.metrics[0], v2.loss, v2.metrics[0]);
    static float logits[N][C];
    mgc_fetch f = {"output", logits, sizeof logits};
    MUST(mgc_predict(s, feeds, 1, &f, 1, &err));
    mgc_output *out = NULL;
    MUST(mgc_predict_dataset(s, pred, &out, &err));
    CHECK(out && !strcmp(out[0].name, "output") && out[0].dtype == MGC_F32 && out[0].rank == 2 && out[0].shape[0] == N &&
              out[0].shape[1] == C && out[0].bytes == sizeof logits && !memcmp(out[0].data, logits, sizeof logits),
          "predict over a dataset differs from mgc_predict");
    MUST(mgc_output_save_npy(&out[0], path("lib.npy"), &err));
    mgc_outputs_free(out, mgc_plan_output_count(p));

    /* the CLI on the same plan and checkpoint: the same file and figures */
    MUST(mgc_plan_save(p, path("tiny.mgx"), &err));
    MUST(mgc_checkpoint_save(s, path("tiny.safetensors"), &err));
    char text[4096], want[512];
    int rc = run_command(text, sizeof text, "MGC_STDLIB='%s' '%s' predict '%s' --load '%s' --input '%s' -o '%s' 2>&1",
                         stdlib, mgc, path("tiny.mgx"), path("tiny.safetensors"), x_binding, path("cli.npy"));
    CHECK(rc == 0, "mgc predict: %s", text);
    CHECK(same_file(path("lib.npy"), path("cli.npy")), "mgc_output_save_npy differs from mgc predict's file");
    rc = run_command(text, sizeof text, "MGC_STDLIB='%s' '%s' eval '%s' --load '%s' --input '%s' --input '%s' --json 2>&1",
                     stdlib, mgc, path("tiny.mgx"), path("tiny.safetensors"), x_binding, y_binding);
    snprintf(want, sizeof want, "{\"examples\": %d, \"loss\": %.9g, \"accuracy\": %.9g}\n", N, v1.loss, v1.metrics[0]);
    CHECK(rc == 0 && !strcmp(text, want), "mgc eval --json: [%s], want [%s]", text, want);

    mgc_dataset_free(train);
    mgc_dataset_free(pred);
    mgc_session_free(t);
    mgc_session_free(s);
    CHECK(mgc_job_end(j, 0) == 0, "mgc_job_end");
}

/* A session's trace and profile of some train steps. */
static void trace(const mgc_plan *p) {
    mgc_error err;
    mgc_session *s = NULL;
    MUST(mgc_session_new(p, NULL, &s, &err));
    char *profile = NULL;
    int64_t kept = -1;
    EXPECT_ERROR(mgc_session_trace_end(s, NULL, &profile, &kept, &err), MGC_ERR_ARG,
                 "mgc_session_trace_end: the session is not traced");
    mgc_trace_options to = {.from = 2, .to = 3, .profile = 1};
    MUST(mgc_session_trace(s, &to, &err));
    EXPECT_ERROR(mgc_session_trace(s, &to, &err), MGC_ERR_ARG, "mgc_session_trace: the session is traced already");
    mgc_fit_options fo;
    mgc_fit_options_init(&fo);
    fo.steps = 5;
    MUST(mgc_fit(s, feeds, 2, &fo, &err));
    MUST(mgc_session_trace_end(s, path("trace.json"), &profile, &kept, &err));
    CHECK(kept == 2, "%lld steps kept of 2:3", (long long)kept);
    CHECK(profile && strlen(profile) > 0, "no profile");
    size_t len = 0;
    unsigned char *json = slurp(path("trace.json"), &len);
    CHECK(json && strstr((char *)json, "\"traceEvents\"") && strstr((char *)json, "\"step\""), "the trace file");
    free(json);
    mgc_free(profile);
    /* traced again, then freed while traced */
    MUST(mgc_session_trace(s, &to, &err));
    mgc_session_free(s);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: test_api_jobs MGC_BINARY TINY.mg SOURCE_DIR\n");
        return 2;
    }
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    snprintf(stdlib, sizeof stdlib, "%s/stdlib", argv[3]);
    make_data();
    snprintf(x_binding, sizeof x_binding, "x=%s", path("x.npy"));
    snprintf(y_binding, sizeof y_binding, "label=%s", path("y.npy"));
    snprintf(bad_binding, sizeof bad_binding, "label=%s", path("bad.npy"));
    mgc_error err;
    mgc_compile_options co;
    mgc_compile_options_init(&co);
    co.stdlib_dir = stdlib, co.devices = "cpu:0,cpu:1";
    mgc_plan *p = NULL;
    MUST(mgc_compile_file(argv[2], &co, &p, &err));
    MUST(mgc_plan_fit_here(p, 1, NULL, NULL, &err)); /* CPU devices: nothing to do */
    CHECK(!strcmp(mgc_plan_path(p), ""), "a compiled plan's path [%s]", mgc_plan_path(p));
    job_of_one(p);
    datasets(p);
    over_datasets(argv[1], p);
    trace(p);
    mgc_plan_free(p);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
    if (failures) fprintf(stderr, "%d failures\n", failures);
    else printf("libmgc: jobs, datasets, fit/evaluate/predict over datasets, NPY outputs and traces equal mgc run/eval/predict's\n");
    return failures ? 1 : 0;
}
