/* test_api.c - libmgc through include/mgc.h alone: compile tests/api/tiny.mg
 * for two CPU devices, fit, evaluate, predict, read and write variables,
 * save a checkpoint; the results must equal `mgc run`, `mgc eval` and
 * `mgc predict` on the same plan, data and seed (checkpoint bytes, eval
 * figures as printed, prediction bytes). Then every error path it can reach.
 *
 * usage: test_api MGC_BINARY TINY.mg */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_check.h"

enum { N = 256, F = 12, C = 4, EPOCHS = 2 };


/* Synthetic data: x uniform in [-1, 1), label = argmax of a fixed linear map. */
static float xs[N][F];
static int32_t ys[N];
static void make_data(void) {
    uint64_t s = 12345;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < F; j++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            xs[i][j] = (float)((double)(s >> 40) / (double)(1 << 24) * 2 - 1);
        }
    for (int i = 0; i < N; i++) {
        float best = -1e9f;
        for (int c = 0; c < C; c++) {
            float v = 0;
            for (int j = 0; j < F; j++) v += xs[i][j] * (float)(((j * 7 + c * 3) % 5) - 2);
            if (v > best) best = v, ys[i] = c;
        }
    }
}

static const int64_t x_shape[] = {N, F}, y_shape[] = {N};

typedef struct {
    int steps, epochs, texts, stop_at;
    char lines[4096];
} progress_log;

static int on_progress(const mgc_progress *p, void *user) {
    progress_log *log = user;
    if (p->line) snprintf(log->lines + strlen(log->lines), sizeof log->lines - strlen(log->lines), "%s", p->line);
    if (p->kind == MGC_PROGRESS_TEXT) log->texts++;
    if (p->kind == MGC_PROGRESS_EPOCH) log->epochs++;
    if (p->kind != MGC_PROGRESS_STEP) return 0;
    log->steps++;
    return log->stop_at && log->steps >= log->stop_at;
}

/* fit, evaluate, predict and save through the library; the same through the CLI. */
static void against_cli(const char *mgc, const char *model) {
    mgc_error err;
    mgc_plan *plan;
    mgc_compile_options co;
    mgc_compile_options_init(&co);
    co.devices = "cpu:0,cpu:1";
    MUST(mgc_compile_file(model, &co, &plan, &err));
    CHECK(mgc_plan_devices(plan) == 2 && mgc_plan_global_batch(plan) == 64, "devices %d batch %lld",
          mgc_plan_devices(plan), (long long)mgc_plan_global_batch(plan));
    CHECK(mgc_plan_input_count(plan) == 2 && mgc_plan_output_count(plan) == 1 && mgc_plan_metric_count(plan) == 1,
          "inputs, outputs, metrics");
    mgc_tensor_info ti;
    MUST(mgc_plan_input(plan, 0, &ti, &err));
    CHECK(!strcmp(ti.name, "x") && ti.dtype == MGC_F32 && ti.rank == 1 && ti.shape[0] == F, "input 0 %s", ti.name);
    MUST(mgc_plan_output(plan, 0, &ti, &err));
    CHECK(!strcmp(ti.name, "output") && ti.rank == 1 && ti.shape[0] == C, "output 0 %s", ti.name);
    MUST(mgc_plan_save(plan, path("tiny.mgx"), &err));

    mgc_session_options so;
    mgc_session_options_init(&so);
    mgc_session *s;
    MUST(mgc_session_new(plan, &so, &s, &err));
    mgc_feed feeds[] = {{"x", MGC_F32, 2, x_shape, xs}, {"label", MGC_I32, 1, y_shape, ys}};
    mgc_fit_options fo;
    mgc_fit_options_init(&fo);
    fo.epochs = EPOCHS;
    progress_log log = {0};
    fo.progress = on_progress, fo.user = &log;
    MUST(mgc_fit(s, feeds, 2, &fo, &err));
    CHECK(log.steps == EPOCHS * N / 64 && log.epochs == EPOCHS && log.texts == 2 * EPOCHS, "steps %d epochs %d texts %d",
          log.steps, log.epochs, log.texts);
    CHECK(mgc_session_step(s) == EPOCHS * N / 64, "step %lld", (long long)mgc_session_step(s));
    CHECK(strstr(log.lines, "Epoch 1/2\n4/4 [==============================] - ") && strstr(log.lines, "Epoch 2/2\n") &&
              strstr(log.lines, " - loss: ") && strstr(log.lines, " - accuracy: "),
          "progress lines:\n%s", log.lines);
    MUST(mgc_checkpoint_save(s, path("lib.safetensors"), &err));
    mgc_scores v;
    MUST(mgc_evaluate(s, feeds, 2, &v, &err));
    CHECK(v.examples == N && v.loss > 0 && v.loss < 1.4 && v.metrics[0] > 0.4, "eval %g %g %lld", v.loss, v.metrics[0],
          (long long)v.examples);
    static float pred[N][C];
    mgc_fetch fetch = {"output", pred, sizeof pred};
    MUST(mgc_predict(s, feeds, 1, &fetch, 1, &err)); /* predict reads x only */

    /* the CLI on the same plan, data and seed */
    char out[4096], want[512];
    write_npy(path("x.npy"), "<f4", x_shape, 2, xs, sizeof xs);
    write_npy(path("y.npy"), "<i4", y_shape, 1, ys, sizeof ys);
    const char *data = "--input x=%s --input label=%s";
    char bind[1200];
    snprintf(bind, sizeof bind, data, path("x.npy"), path("y.npy"));
    CHECK(!run_command(out, sizeof out, "%s run %s --epochs %d --seed 1 %s --save %s", mgc, path("tiny.mgx"), EPOCHS,
                       bind, path("cli.safetensors")),
          "mgc run");
    CHECK(same_file(path("lib.safetensors"), path("cli.safetensors")), "the checkpoints of mgc_fit and mgc run differ");
    CHECK(!run_command(out, sizeof out, "%s eval %s --load %s %s --json", mgc, path("tiny.mgx"),
                       path("cli.safetensors"), bind),
          "mgc eval");
    snprintf(want, sizeof want, "{\"examples\": %d, \"loss\": %.9g, \"accuracy\": %.9g}\n", N, v.loss, v.metrics[0]);
    CHECK(!strcmp(out, want), "mgc eval printed\n%sthe library's figures\n%s", out, want);
    CHECK(!run_command(out, sizeof out, "%s predict %s --load %s --input x=%s -o %s", mgc, path("tiny.mgx"),
                       path("cli.safetensors"), path("x.npy"), path("cli_pred.npy")),
          "mgc predict");
    size_t len = 0;
    unsigned char *npy = slurp(path("cli_pred.npy"), &len); /* its data: the last N x C floats */
    CHECK(npy && len > sizeof pred && !memcmp(npy + len - sizeof pred, pred, sizeof pred),
          "the predictions of mgc_predict and mgc predict differ");
    free(npy);

    /* a fresh session loading the CLI's checkpoint evaluates the same */
    mgc_session *t;
    MUST(mgc_session_new(plan, &so, &t, &err));
    MUST(mgc_checkpoint_load(t, path("cli.safetensors"), &err));
    mgc_scores w;
    MUST(mgc_evaluate(t, feeds, 2, &w, &err));
    CHECK(w.loss == v.loss && w.metrics[0] == v.metrics[0] && mgc_session_step(t) == mgc_session_step(s),
          "after load: %g vs %g", w.loss, v.loss);
    mgc_session_free(t);
    mgc_session_free(s);
    mgc_plan_free(plan);
}

/* one train step at a time, variables by name, the progress callback's stop */
static void steps_and_variables(const char *model) {
    mgc_error err;
    mgc_plan *plan;
    size_t len;
    char *src = (char *)slurp(model, &len);
    src[len] = 0;
    MUST(mgc_compile_source(src, "tiny.mg", NULL, &plan, &err)); /* one device, global batch 32 */
    free(src);
    mgc_session *s;
    MUST(mgc_session_new(plan, NULL, &s, &err));
    const int64_t bx[] = {32, F}, by[] = {32};
    mgc_feed batch[] = {{"x", MGC_F32, 2, bx, xs}, {"label", MGC_I32, 1, by, ys}};
    mgc_scores first, last;
    MUST(mgc_train_step(s, batch, 2, &first, &err));
    for (int k = 0; k < 30; k++) MUST(mgc_train_step(s, batch, 2, &last, &err));
    CHECK(mgc_session_step(s) == 31 && last.loss < first.loss * 0.5, "step %lld loss %g -> %g",
          (long long)mgc_session_step(s), first.loss, last.loss);

    int n = mgc_variable_count(s), params = 0, slots = 0;
    for (int k = 0; k < n; k++) {
        mgc_tensor_info ti;
        mgc_var_kind kind;
        MUST(mgc_variable_info(s, k, &ti, &kind, &err));
        params += kind == MGC_VAR_PARAM, slots += kind == MGC_VAR_SLOT;
        if (k) {
            mgc_tensor_info prev;
            MUST(mgc_variable_info(s, k - 1, &prev, NULL, &err));
            CHECK(strcmp(prev.name, ti.name) < 0, "variables not sorted: %s, %s", prev.name, ti.name);
        }
    }
    CHECK(params == 4 && slots == 8, "%d params, %d slots of %d variables", params, slots, n);
    static float kernel[F][16], back[F][16];
    MUST(mgc_variable_read(s, "dense/kernel", kernel, sizeof kernel, &err));
    for (int i = 0; i < F; i++)
        for (int j = 0; j < 16; j++) kernel[i][j] = (float)(i * 16 + j) / 100.0f;
    MUST(mgc_variable_write(s, "dense/kernel", kernel, sizeof kernel, &err));
    MUST(mgc_variable_read(s, "dense/kernel", back, sizeof back, &err));
    CHECK(!memcmp(kernel, back, sizeof kernel), "dense/kernel did not read back as written");

    EXPECT_ERROR(mgc_variable_read(s, "dense/kernal", kernel, sizeof kernel, &err), MGC_ERR_ARG,
                 "model 'tiny' has no variable named 'dense/kernal'");
    EXPECT_ERROR(mgc_variable_write(s, "dense/kernel", kernel, 100, &err), MGC_ERR_ARG,
                 "variable 'dense/kernel' is f32[12,16] (768 bytes), the buffer has 100 bytes");
    EXPECT_ERROR(mgc_train_step(s, batch, 1, NULL, &err), MGC_ERR_ARG, "input 'label' is not fed");
    const int64_t bx64[] = {64, F}, by64[] = {64};
    mgc_feed big[] = {{"x", MGC_F32, 2, bx64, xs}, {"label", MGC_I32, 1, by64, ys}};
    EXPECT_ERROR(mgc_train_step(s, big, 2, NULL, &err), MGC_ERR_ARG,
                 "a train step takes one global batch: 32 examples, the feeds have 64");

    /* the callback stops the fit after its third step */
    mgc_feed feeds[] = {{"x", MGC_F32, 2, x_shape, xs}, {"label", MGC_I32, 1, y_shape, ys}};
    mgc_fit_options fo;
    mgc_fit_options_init(&fo);
    progress_log log = {.stop_at = 3};
    fo.progress = on_progress, fo.user = &log;
    EXPECT_ERROR(mgc_fit(s, feeds, 2, &fo, &err), MGC_STOPPED, "stopped by the progress callback after step 34");
    CHECK(mgc_session_step(s) == 34 && log.steps == 3, "step %lld after a stop", (long long)mgc_session_step(s));
    mgc_session_free(s);
    mgc_plan_free(plan);
}

/* two sessions of one plan, fitted on two threads at once, end the same */
typedef struct {
    const mgc_plan *plan;
    const char *ckpt;
    mgc_status st;
    mgc_error err;
} fit_job;

static void *fit_thread(void *arg) {
    fit_job *j = arg;
    mgc_session *s;
    mgc_feed feeds[] = {{"x", MGC_F32, 2, x_shape, xs}, {"label", MGC_I32, 1, y_shape, ys}};
    j->st = mgc_session_new(j->plan, NULL, &s, &j->err);
    if (j->st) return NULL;
    j->st = mgc_fit(s, feeds, 2, NULL, &j->err);
    if (!j->st) j->st = mgc_checkpoint_save(s, j->ckpt, &j->err);
    mgc_session_free(s);
    return NULL;
}

static void threads(const char *model) {
    mgc_error err;
    mgc_plan *plan;
    mgc_compile_options co;
    mgc_compile_options_init(&co);
    co.devices = "cpu:0,cpu:1";
    MUST(mgc_compile_file(model, &co, &plan, &err));
    static fit_job jobs[2];
    jobs[0] = (fit_job){.plan = plan, .ckpt = path("thread0.safetensors")};
    jobs[1] = (fit_job){.plan = plan, .ckpt = path("thread1.safetensors")};
    pthread_t t[2];
    for (int k = 0; k < 2; k++) pthread_create(&t[k], NULL, fit_thread, &jobs[k]);
    for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
    for (int k = 0; k < 2; k++) CHECK(jobs[k].st == MGC_OK, "thread %d: %s", k, jobs[k].err.message);
    CHECK(same_file(path("thread0.safetensors"), path("thread1.safetensors")), "two threads' sessions differ");
    mgc_plan_free(plan);
}

/* every error the API reports on bad input */
static void errors(const char *model) {
    mgc_error err;
    mgc_plan *plan = NULL;
    EXPECT_ERROR(mgc_compile_source("use nn\nmodel bad {\n  input x: f32[batch, 3]\n  y = nosuch(x)\n}\n", "bad.mg",
                                    NULL, &plan, &err),
                 MGC_ERR_COMPILE,
                 "bad.mg:4:7: error: unknown name 'nosuch'\n  y = nosuch(x)\n      ^\n"
                 "bad.mg:2:7: error: model 'bad' has neither a loss nor an output\nmodel bad {\n      ^");
    CHECK(!plan, "a plan after a compile error");
    mgc_compile_options co;
    mgc_compile_options_init(&co);
    co.devices = "tpu:0";
    EXPECT_ERROR(mgc_compile_file(model, &co, &plan, &err), MGC_ERR_ARG,
                 "devices: 'tpu:0' is not a device (expected cpu:N or gpu:N)");
    co.devices = "cpu:0,cpu:0";
    EXPECT_ERROR(mgc_compile_file(model, &co, &plan, &err), MGC_ERR_ARG, "devices: cpu:0 is listed twice");
    co.devices = NULL, co.cross_device = "star";
    EXPECT_ERROR(mgc_compile_file(model, &co, &plan, &err), MGC_ERR_ARG,
                 "cross_device: 'star' is not ring, one-device or hierarchical");
    mgc_status st = mgc_plan_load(path("none.mgx"), &plan, &err);
    CHECK(st == MGC_ERR_IO && strstr(err.message, path("none.mgx")), "plan_load of a missing file: %d %s", st, err.message);

    MUST(mgc_compile_file(model, NULL, &plan, &err));
    mgc_session *s;
    mgc_session_options so;
    mgc_session_options_init(&so);
    so.collective_timeout = 0;
    EXPECT_ERROR(mgc_session_new(plan, &so, &s, &err), MGC_ERR_ARG,
                 "collective_timeout 0 is not a number of seconds above 0 and at most 86400");
    MUST(mgc_session_new(plan, NULL, &s, &err));
    static int32_t xi[N][F];
    static float y13[N][13];
    const int64_t x13[] = {N, 13}, x3[] = {N, F, 1};
    mgc_feed bad_dtype[] = {{"x", MGC_I32, 2, x_shape, xi}, {"label", MGC_I32, 1, y_shape, ys}};
    EXPECT_ERROR(mgc_evaluate(s, bad_dtype, 2, NULL, &err), MGC_ERR_ARG,
                 "input 'x' is i32[256,12], the plan wants f32[N,12]");
    mgc_feed bad_shape[] = {{"x", MGC_F32, 2, x13, y13}, {"label", MGC_I32, 1, y_shape, ys}};
    EXPECT_ERROR(mgc_evaluate(s, bad_shape, 2, NULL, &err), MGC_ERR_ARG,
                 "input 'x' is f32[256,13], the plan wants f32[N,12]");
    mgc_feed bad_rank[] = {{"x", MGC_F32, 3, x3, xs}, {"label", MGC_I32, 1, y_shape, ys}};
    EXPECT_ERROR(mgc_fit(s, bad_rank, 2, NULL, &err), MGC_ERR_ARG,
                 "input 'x' is f32[256,12,1], the plan wants f32[N,12]");
    const int64_t short_y[] = {100};
    mgc_feed bad_n[] = {{"x", MGC_F32, 2, x_shape, xs}, {"label", MGC_I32, 1, short_y, ys}};
    EXPECT_ERROR(mgc_evaluate(s, bad_n, 2, NULL, &err), MGC_ERR_ARG,
                 "input 'label' has 100 examples, the inputs before it 256");
    mgc_feed unknown[] = {{"image", MGC_F32, 2, x_shape, xs}};
    EXPECT_ERROR(mgc_predict(s, unknown, 1, NULL, 0, &err), MGC_ERR_ARG,
                 "model 'tiny' has no input named 'image' (its inputs: x, label)");
    static int32_t bad_labels[N];
    bad_labels[7] = 4;
    mgc_feed out_of_range[] = {{"x", MGC_F32, 2, x_shape, xs}, {"label", MGC_I32, 1, y_shape, bad_labels}};
    st = mgc_evaluate(s, out_of_range, 2, NULL, &err);
    CHECK(st == MGC_ERR_ARG && strstr(err.message, "label 4 of example 7 is outside [0, 4)"), "labels: %d %s", st,
          err.message);
    mgc_feed feeds[] = {{"x", MGC_F32, 2, x_shape, xs}};
    static float small[10][C];
    mgc_fetch fetch = {"output", small, sizeof small};
    EXPECT_ERROR(mgc_predict(s, feeds, 1, &fetch, 1, &err), MGC_ERR_ARG,
                 "output 'output': 256 examples need 4096 bytes, the buffer has 160");
    mgc_fetch wrong = {"logits", small, sizeof small};
    EXPECT_ERROR(mgc_predict(s, feeds, 1, &wrong, 1, &err), MGC_ERR_ARG, "output 'output' is not fetched");
    st = mgc_checkpoint_load(s, path("none.safetensors"), &err);
    CHECK(st == MGC_ERR_IO && strstr(err.message, path("none.safetensors")), "checkpoint_load: %d %s", st, err.message);
    mgc_fit_options fo;
    mgc_fit_options_init(&fo);
    fo.epochs = 0;
    EXPECT_ERROR(mgc_fit(s, feeds, 1, &fo, &err), MGC_ERR_ARG,
                 "fit: epochs 0 and steps 0: one must be positive, neither negative");
    mgc_session_free(s);
    mgc_plan_free(plan);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: test_api MGC_BINARY TINY.mg\n");
        return 2;
    }
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    make_data();
    against_cli(argv[1], argv[2]);
    steps_and_variables(argv[2]);
    threads(argv[2]);
    errors(argv[2]);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
    if (failures) fprintf(stderr, "%d failures\n", failures);
    else printf("libmgc: fit, evaluate, predict equal mgc run/eval/predict; variables, steps and errors as documented\n");
    return failures ? 1 : 0;
}
