/* test_api_tools.c - the libmgc calls `mgc compile`, `mgc dump` and `mgc
 * inspect` are made of, through mgc.h alone: the text callback (diagnostics
 * streamed as the message holds them, the GPU-fallback note, --dump-after,
 * --time-passes), mgc compile's options (a plan byte-equal to the CLI's),
 * mgc_plan_read and mgc_plan_describe (equal to the CLI's output), the
 * forward_only plan that cannot run, mgc_pass_name, mgc_check_output; and
 * mgc run's --checkpoint-dir/--save-every/--keep/--history as fit options
 * (the same checkpoint files and history as the CLI's, mgc_checkpoint_newest).
 *
 * usage: test_api_tools MGC_BINARY TINY.mg SOURCE_DIR */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_check.h"

static char stdlib[1024];

/* A growing string per text kind. */
typedef struct {
    char *text[4];
    size_t len[4];
    int calls[4];
} captured;

static void capture(mgc_text_kind kind, const char *text, void *user) {
    captured *c = user;
    size_t n = strlen(text);
    c->text[kind] = realloc(c->text[kind], c->len[kind] + n + 1);
    memcpy(c->text[kind] + c->len[kind], text, n + 1);
    c->len[kind] += n;
    c->calls[kind]++;
}

static void clear(captured *c) {
    for (int k = 0; k < 4; k++) free(c->text[k]);
    memset(c, 0, sizeof *c);
}

static const char *got(const captured *c, mgc_text_kind k) { return c->text[k] ? c->text[k] : ""; }

/* The stdout of a shell command (malloc'd), NULL when it fails. */
static char *run(const char *fmt, ...) {
    char cmd[4096], *out;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (!capture_command(cmd, &out)) return out;
    free(out);
    return NULL;
}

static void options(mgc_compile_options *co, captured *c) {
    mgc_compile_options_init(co);
    co->stdlib_dir = stdlib;
    co->text = capture, co->text_user = c;
}

/* Diagnostics stream to the callback as the message holds them. */
static void diagnostics(void) {
    mgc_error err;
    captured c = {0};
    mgc_compile_options co;
    options(&co, &c);
    mgc_plan *plan = NULL;
    const char *want = "bad.mg:4:7: error: unknown name 'nosuch'\n  y = nosuch(x)\n      ^\n"
                       "bad.mg:2:7: error: model 'bad' has neither a loss nor an output\nmodel bad {\n      ^";
    EXPECT_ERROR(mgc_compile_source("use nn\nmodel bad {\n  input x: f32[batch, 3]\n  y = nosuch(x)\n}\n", "bad.mg", &co,
                                    &plan, &err),
                 MGC_ERR_COMPILE, want);
    CHECK(!strncmp(got(&c, MGC_TEXT_DIAG), want, strlen(want)) && c.len[MGC_TEXT_DIAG] == strlen(want) + 1,
          "streamed diagnostics [%s]", got(&c, MGC_TEXT_DIAG));
    CHECK(!c.len[MGC_TEXT_NOTE] && !c.len[MGC_TEXT_DUMP] && !c.len[MGC_TEXT_TIMING], "other text after a compile error");
    clear(&c);
}

/* Device lists as mgc compile --devices reads them, GPUs that are not here. */
static void devices(const char *model) {
    mgc_error err;
    captured c = {0};
    mgc_compile_options co;
    options(&co, &c);
    mgc_plan *plan = NULL;
    co.devices = "cpu:x";
    EXPECT_ERROR(mgc_compile_file(model, &co, &plan, &err), MGC_ERR_ARG,
                 "devices: 'x' is not an integer from 0 to 2147483647");
    co.devices = "cpu:4294967297";
    EXPECT_ERROR(mgc_compile_file(model, &co, &plan, &err), MGC_ERR_ARG,
                 "devices: '4294967297' is not an integer from 0 to 2147483647");
    co.devices = ",";
    EXPECT_ERROR(mgc_compile_file(model, &co, &plan, &err), MGC_ERR_ARG, "devices: empty device list");
    co.devices = "cpu:0,gpu:1";
    EXPECT_ERROR(mgc_compile_file(model, &co, &plan, &err), MGC_ERR_ARG,
                 "devices: cannot mix cpu and gpu devices in one plan");
    char why[256] = "", want[600];
    if (mgc_gpu_count(why, sizeof why) > 1) {
        printf("skipped the GPU fallback checks: this machine has GPUs\n");
        return;
    }
    CHECK(*why, "mgc_gpu_count gives no reason for 0 GPUs");
    co.devices = "gpu:0,gpu:1";
    MUST(mgc_compile_file(model, &co, &plan, &err));
    snprintf(want, sizeof want, "gpu:1 is not available: %s; using 2 CPU devices instead\n", why);
    CHECK(!strcmp(got(&c, MGC_TEXT_NOTE), want), "note [%s], want [%s]", got(&c, MGC_TEXT_NOTE), want);
    CHECK(mgc_plan_devices(plan) == 2, "the fallback plan has %d devices", mgc_plan_devices(plan));
    mgc_plan_free(plan);
    co.strict_devices = 1;
    snprintf(want, sizeof want, "gpu:1 is not available: %s", why);
    EXPECT_ERROR(mgc_compile_file(model, &co, &plan, &err), MGC_ERR_ARG, want);
    clear(&c);
}

/* mgc compile's options give the CLI's plan, byte for byte; --dump-after and
 * --time-passes text as the CLI prints it. */
static void compile_like_cli(const char *mgc, const char *model) {
    mgc_error err;
    captured c = {0};
    mgc_compile_options co;
    options(&co, &c);
    co.devices = "cpu:0,cpu:1", co.global_batch = 32, co.cross_device = "one-device", co.bucket_bytes = 4096;
    co.sparse_grads = "never", co.no_fuse = 1, co.dump_after = "replicate", co.time_passes = 1;
    mgc_plan *plan = NULL;
    MUST(mgc_compile_file(model, &co, &plan, &err));
    MUST(mgc_plan_save(plan, path("api.mgx"), &err));
    char *dump = run("MGC_STDLIB='%s' '%s' compile '%s' -o '%s' --devices cpu:0,cpu:1 --global-batch 32 "
                     "--cross-device-ops one-device --bucket-bytes 4096 --sparse-grads never --no-fuse "
                     "--dump-after replicate",
                     stdlib, mgc, model, path("cli.mgx"));
    CHECK(dump && !strcmp(dump, got(&c, MGC_TEXT_DUMP)), "--dump-after replicate differs from MGC_TEXT_DUMP");
    CHECK(same_file(path("api.mgx"), path("cli.mgx")), "the plan differs from mgc compile's");
    /* one timing line per pass, "elaborate" first, then "check" */
    const char *t = got(&c, MGC_TEXT_TIMING);
    int k = 0;
    for (const char *line = t; *line; k++) {
        char name[32];
        double ms;
        int nodes;
        const char *want = mgc_pass_name(k) ? mgc_pass_name(k) : "check";
        CHECK(sscanf(line, " %31s %lf ms %d nodes", name, &ms, &nodes) == 3 && !strcmp(name, want) && ms >= 0 && nodes > 0,
              "timing line %d [%.60s], want pass %s", k, line, want);
        const char *nl = strchr(line, '\n');
        if (!nl) break;
        line = nl + 1;
    }
    CHECK(k >= 2 && !mgc_pass_name(k - 1) && mgc_pass_name(k - 2), "%d timing lines for the passes and check", k);
    CHECK(!c.len[MGC_TEXT_DIAG] && !c.len[MGC_TEXT_NOTE], "diagnostics or notes from a good compile");
    free(dump);
    mgc_plan_free(plan);
    co.dump_after = "nosuch";
    EXPECT_ERROR(mgc_compile_file(model, &co, &plan, &err), MGC_ERR_ARG, "dump_after: no pass named 'nosuch'");
    co.dump_after = NULL, co.sparse_grads = "sometimes";
    EXPECT_ERROR(mgc_compile_file(model, &co, &plan, &err), MGC_ERR_ARG,
                 "sparse_grads: 'sometimes' is not auto, always or never");
    CHECK(mgc_pass_name(0) && !strcmp(mgc_pass_name(0), "elaborate") && !mgc_pass_name(-1), "mgc_pass_name");
    clear(&c);
}

/* mgc_plan_read + mgc_plan_describe are mgc inspect and mgc dump. */
static void describe(const char *mgc, const char *model) {
    mgc_error err;
    mgc_plan *plan = NULL;
    MUST(mgc_plan_read(path("cli.mgx"), &plan, &err));
    static const struct {
        mgc_describe_kind kind;
        const char *command;
    } cases[] = {{MGC_DESCRIBE_IR, "dump"},
                 {MGC_DESCRIBE_DOT, "dump --format dot"},
                 {MGC_DESCRIBE_DOT_REPLICATED, "dump --format dot --replicated"},
                 {MGC_DESCRIBE_INSPECT, "inspect"}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char *text = NULL, *cli = run("'%s' %s '%s'", mgc, cases[k].command, path("cli.mgx"));
        MUST(mgc_plan_describe(plan, cases[k].kind, &text, &err));
        CHECK(cli && text && !strcmp(cli, text), "mgc_plan_describe %d differs from mgc %s", cases[k].kind,
              cases[k].command);
        CHECK(cases[k].kind != MGC_DESCRIBE_INSPECT || strstr(text, "race-free"), "inspect without the race check");
        mgc_free(text), free(cli);
    }
    mgc_plan_free(plan);

    /* forward_only: mgc dump MODEL.mg, a plan that cannot run or be saved */
    captured c = {0};
    mgc_compile_options co;
    options(&co, &c);
    co.forward_only = 1, co.devices = "tpu:9"; /* no devices: not even parsed */
    MUST(mgc_compile_file(model, &co, &plan, &err));
    char *text = NULL, *cli = run("MGC_STDLIB='%s' '%s' dump '%s' --devices tpu:9", stdlib, mgc, model);
    MUST(mgc_plan_describe(plan, MGC_DESCRIBE_IR, &text, &err));
    CHECK(cli && !strcmp(cli, text), "forward_only IR differs from mgc dump MODEL.mg");
    mgc_free(text), free(cli);
    mgc_session *s = NULL;
    EXPECT_ERROR(mgc_session_new(plan, NULL, &s, &err), MGC_ERR_ARG, "mgc_session_new: a forward_only plan cannot run");
    EXPECT_ERROR(mgc_plan_save(plan, path("fwd.mgx"), &err), MGC_ERR_ARG,
                 "mgc_plan_save: a forward_only plan is for describing, not a plan to save");
    EXPECT_ERROR(mgc_plan_describe(plan, MGC_DESCRIBE_INSPECT, &text, &err), MGC_ERR_ARG,
                 "mgc_plan_describe: a forward_only plan has no plan to inspect");
    mgc_plan_free(plan);
    clear(&c);
    mgc_status st = mgc_plan_read(path("none.mgx"), &plan, &err);
    CHECK(st == MGC_ERR_IO && strstr(err.message, path("none.mgx")), "plan_read of a missing file: %d %s", st, err.message);
}

static void check_output(void) {
    mgc_error err;
    MUST(mgc_check_output(path("new.mgx"), &err));
    mgc_status st = mgc_check_output(dir, &err);
    CHECK(st == MGC_ERR_IO && strstr(err.message, dir) && strstr(err.message, "regular file"),
          "check_output of a directory: %d %s", st, err.message);
    st = mgc_check_output(path("no/such/dir/x.mgx"), &err);
    CHECK(st == MGC_ERR_IO && strstr(err.message, "cannot write"), "check_output in a missing directory: %d %s", st,
          err.message);
}

/* ---- mgc run's checkpoint and history options as fit options ---- */

enum { N = 256, F = 12, C = 4 };
static float xs[N][F];
static int32_t ys[N];

/* A history file without its timing fields ("images_per_sec", "seconds"). */
static char *history_figures(const char *file) {
    size_t len = 0;
    char *h = (char *)slurp(file, &len);
    if (!h) return NULL;
    h[len] = 0;
    for (char *t; (t = strstr(h, ", \"images_per_sec\""));) {
        char *end = strchr(t, '}');
        memmove(t, end, strlen(end) + 1);
    }
    return h;
}

static int stop_at_5(const mgc_progress *p, void *user) {
    (void)user;
    return p->kind == MGC_PROGRESS_STEP && p->step == 5;
}

static void fit_like_run(const char *mgc, const char *model) {
    mgc_error err;
    uint64_t r = 99;
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < F; j++) {
            r = r * 6364136223846793005ULL + 1442695040888963407ULL;
            xs[i][j] = (float)((double)(r >> 40) / (double)(1 << 24) * 2 - 1);
        }
        ys[i] = (xs[i][0] > 0) + 2 * (xs[i][1] > 0);
    }
    mgc_compile_options co;
    mgc_compile_options_init(&co);
    co.stdlib_dir = stdlib, co.devices = "cpu:0,cpu:1"; /* global batch 64: 4 steps an epoch */
    mgc_plan *plan;
    MUST(mgc_compile_file(model, &co, &plan, &err));
    MUST(mgc_plan_save(plan, path("fit.mgx"), &err));
    mgc_session *s;
    MUST(mgc_session_new(plan, NULL, &s, &err));
    const int64_t xshape[] = {N, F}, yshape[] = {N};
    mgc_feed feeds[] = {{"x", MGC_F32, 2, xshape, xs}, {"label", MGC_I32, 1, yshape, ys}};
    mgc_fit_options fo;
    mgc_fit_options_init(&fo);
    fo.epochs = 2; /* mgc run --input has no test set: no validation either */
    fo.history = path("lib.jsonl"), fo.checkpoint_dir = path("lib_ckpt"), fo.save_every = 3, fo.keep = 2;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' '%s' '%s'", path("lib_ckpt"), path("stop_ckpt"), path("cli_ckpt"));
    CHECK(!system(cmd), "%s", cmd);
    MUST(mgc_fit(s, feeds, 2, &fo, &err));
    mgc_session_free(s);

    static const int64_t x_shape[] = {N, F}, y_shape[] = {N};
    write_npy(path("x.npy"), "<f4", x_shape, 2, xs, sizeof xs);
    write_npy(path("y.npy"), "<i4", y_shape, 1, ys, sizeof ys);
    char *out = run("'%s' run '%s' --epochs 2 --input x='%s' --input label='%s' --checkpoint-dir '%s' --save-every 3steps "
                    "--keep 2 --history '%s'",
                    mgc, path("fit.mgx"), path("x.npy"), path("y.npy"), path("cli_ckpt"), path("cli.jsonl"));
    CHECK(out, "mgc run with checkpoints and history");
    free(out);
    /* steps 3, 6 and 8 (the end) were saved, the newest 2 kept */
    static const char *kept[] = {"step-6.safetensors", "step-8.safetensors"};
    for (int k = 0; k < 2; k++) {
        char a[600], b[600];
        snprintf(a, sizeof a, "%s/%s", path("lib_ckpt"), kept[k]);
        snprintf(b, sizeof b, "%s/%s", path("cli_ckpt"), kept[k]);
        CHECK(same_file(a, b), "%s differs from mgc run's", a);
    }
    char gone[600], newest[600];
    snprintf(gone, sizeof gone, "%s/step-3.safetensors", path("lib_ckpt"));
    CHECK(access(gone, F_OK) != 0, "keep 2 left %s", gone);
    char *h1 = history_figures(path("lib.jsonl")), *h2 = history_figures(path("cli.jsonl"));
    CHECK(h1 && h2 && !strcmp(h1, h2) && strstr(h1, "\"epoch\": 2, \"step\": 8"),
          "history:\n%s\nmgc run's:\n%s", h1 ? h1 : "(none)", h2 ? h2 : "(none)");
    free(h1), free(h2);
    int64_t step = 0;
    CHECK(mgc_checkpoint_newest(path("lib_ckpt"), newest, sizeof newest, &step, &err) == 1 && step == 8 &&
              strstr(newest, "step-8.safetensors"),
          "newest %s step %lld", newest, (long long)step);
    CHECK(mgc_checkpoint_newest(path("nowhere"), newest, sizeof newest, &step, &err) == 0, "a missing directory");

    /* a callback that stops: the checkpoint of that step is written */
    MUST(mgc_session_new(plan, NULL, &s, &err));
    mgc_fit_options_init(&fo);
    fo.epochs = 2, fo.checkpoint_dir = path("stop_ckpt"), fo.progress = stop_at_5;
    mgc_status st = mgc_fit(s, feeds, 2, &fo, &err);
    CHECK(st == MGC_STOPPED, "stopped fit: %d %s", st, err.message);
    CHECK(mgc_checkpoint_newest(path("stop_ckpt"), newest, sizeof newest, &step, &err) == 1 && step == 5,
          "after a stop: newest step %lld", (long long)step);
    fo.progress = NULL, fo.keep = -1;
    EXPECT_ERROR(mgc_fit(s, feeds, 2, &fo, &err), MGC_ERR_ARG, "fit: save_every 0 and keep -1 must not be negative");
    mgc_session_free(s);
    mgc_plan_free(plan);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: test_api_tools MGC_BINARY TINY.mg SOURCE_DIR\n");
        return 2;
    }
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    snprintf(stdlib, sizeof stdlib, "%s/stdlib", argv[3]);
    diagnostics();
    devices(argv[2]);
    compile_like_cli(argv[1], argv[2]);
    describe(argv[1], argv[2]);
    check_output();
    fit_like_run(argv[1], argv[2]);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
    if (failures) fprintf(stderr, "%d failures\n", failures);
    else printf("libmgc: compile options, text callback, describe and read equal mgc compile/dump/inspect; fit's checkpoints and history equal mgc run's\n");
    return failures ? 1 : 0;
}
