/* test_tune.c - issue 14: kernel choice by measurement (the cache round trip,
 * a corrupt cache's warning, the MGC_KERNELS override, one deterministic
 * choice per shape, no lost update of the file) and the default threads per
 * device. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "../../runtime/cpu/tune.h"
#include "../../runtime/session.h"
#include "harness.h"

static int failures;
#define EXPECT(cond, ...)                                                          \
    do {                                                                           \
        if (!(cond)) fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__), fprintf(stderr, __VA_ARGS__), \
                     fputc('\n', stderr), failures++;                              \
    } while (0)

static char dir[256];

/* a matmul [33, 70] x [70, 45] and a conv2d [4, 12, 12, 3] * [3, 3, 3, 8], inputs from seed */
static void build_ops(one_op *mm, one_op *cv, unsigned seed) {
    char err[256];
    ir_shape ms[2] = {kh_shape("33,70"), kh_shape("70,45")}, cs[2] = {kh_shape("4,12,12,4"), kh_shape("3,3,4,8")};
    ir_dtype f[2] = {IR_F32, IR_F32};
    int64_t no[IR_MAX_IATTR] = {0}, conv[IR_MAX_IATTR] = {1, 1};
    if (kh_build(mm, OP_MATMUL, 2, ms, f, no, (double[6]){0}, NULL, 0, err, sizeof err) ||
        kh_build(cv, OP_CONV2D, 2, cs, f, conv, (double[6]){0}, NULL, 0, err, sizeof err))
        fprintf(stderr, "FAIL build: %s\n", err), exit(1);
    srand(seed);
    one_op *ops[2] = {mm, cv};
    for (int o = 0; o < 2; o++)
        for (int i = 0; i < 2; i++)
            for (int64_t j = 0; j < ir_shape_numel(&ops[o]->in_nodes[i]->shape); j++)
                ((float *)ops[o]->in[i])[j] = (float)rand() / RAND_MAX - 0.5f;
}

static int64_t out_numel(one_op *t) { return ir_shape_numel(&t->args.node->shape); }

static void run_op(one_op *t) {
    char err[256];
    if (kh_run(t, err, sizeof err)) fprintf(stderr, "FAIL run: %s\n", err), exit(1);
}

/* the stderr of f(), as text */
static void capture_stderr(void (*f)(void *), void *arg, char *out, size_t cap) {
    char path[300];
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    dup2(fd, 2), close(fd);
    f(arg);
    fflush(stderr);
    dup2(saved, 2), close(saved);
    FILE *r = fopen(path, "r");
    size_t n = r ? fread(out, 1, cap - 1, r) : 0;
    out[n] = 0;
    if (r) fclose(r);
}

static void run_void(void *t) { run_op(t); }

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

/* first use measures and writes the cache; a new process (reset) reads it back */
static void test_round_trip(void) {
    one_op mm, cv;
    build_ops(&mm, &cv, 1);
    cpu_tune_reset();
    const char *path = cpu_tune_cache_path();
    EXPECT(!strncmp(path, dir, strlen(dir)) && strstr(path, "/kernels-") && strstr(path, ".json"), "cache path %s",
           path);
    unlink(path);
    cpu_tune_reset(); /* the path is read once; the cache is read again at the next use */
    run_op(&mm), run_op(&cv);
    EXPECT(cpu_tune_measured() == 2, "measured %d keys, want 2", cpu_tune_measured());
    char mm_choice[32], cv_choice[32];
    snprintf(mm_choice, sizeof mm_choice, "%s", cpu_tune_choice(&mm.args) ? cpu_tune_choice(&mm.args) : "?");
    snprintf(cv_choice, sizeof cv_choice, "%s", cpu_tune_choice(&cv.args) ? cpu_tune_choice(&cv.args) : "?");
    EXPECT(!strcmp(mm_choice, "openblas") || !strcmp(mm_choice, "onednn") || !strcmp(mm_choice, "blocked") ||
               !strcmp(mm_choice, "thin"),
           "matmul chose %s", mm_choice);
    EXPECT(!strcmp(cv_choice, "onednn") || !strcmp(cv_choice, "onednn-hwio") || !strcmp(cv_choice, "winograd"),
           "conv2d chose %s", cv_choice); /* 3x3, stride 1, 4 channels in: winograd applies */
    EXPECT(access(path, R_OK) == 0, "no cache file %s", path);

    cpu_tune_reset(); /* as a new process: the same choices, nothing measured */
    run_op(&mm), run_op(&cv);
    EXPECT(cpu_tune_measured() == 0, "measured %d keys after reading the cache", cpu_tune_measured());
    EXPECT(cpu_tune_choice(&mm.args) && !strcmp(cpu_tune_choice(&mm.args), mm_choice), "matmul choice changed");
    EXPECT(cpu_tune_choice(&cv.args) && !strcmp(cpu_tune_choice(&cv.args), cv_choice), "conv2d choice changed");

    /* a cache that names another choice is obeyed */
    char text[1200], key_mm[600];
    cpu_tune_reset();
    FILE *f = fopen(path, "r");
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *q = strstr(text, "\"matmul t");
    EXPECT(q != NULL, "no matmul key in %s", text);
    if (q) {
        size_t len = strcspn(q + 1, "\"");
        snprintf(key_mm, sizeof key_mm, "%.*s", (int)len, q + 1);
        char doc[800];
        const char *other = strcmp(mm_choice, "openblas") ? "openblas" : "onednn";
        snprintf(doc, sizeof doc, "{\"mgc_kernels\": 1, \"choices\": {\"%s\": \"%s\"}}", key_mm, other);
        write_file(path, doc);
        run_op(&mm);
        if (cpu_kernels_threads() == 1 || strcmp(other, "openblas"))
            EXPECT(cpu_tune_measured() == 0 && !strcmp(cpu_tune_choice(&mm.args), other), "cache's %s not obeyed",
                   other);
        else /* issue 14 (speed): OpenBLAS is no candidate on more than one thread, so its cached choice is measured again */
            EXPECT(cpu_tune_measured() == 1 && !strcmp(cpu_tune_choice(&mm.args), "onednn"),
                   "cache's openblas on %d threads: measured %d, chose %s", cpu_kernels_threads(), cpu_tune_measured(),
                   cpu_tune_choice(&mm.args));
    }
    kh_free(&mm), kh_free(&cv);
}

/* a corrupt cache: one warning naming it, measured again, rewritten whole */
static void test_corrupt(const char *content, const char *why) {
    one_op mm, cv;
    build_ops(&mm, &cv, 2);
    cpu_tune_reset();
    const char *path = cpu_tune_cache_path();
    write_file(path, content);
    cpu_tune_reset();
    char got[1024], want[1024];
    capture_stderr(run_void, &mm, got, sizeof got);
    snprintf(want, sizeof want, "mgc: warning: kernel cache %s is corrupt (%s); measuring again\n", path, why);
    EXPECT(!strcmp(got, want), "stderr\n  got  '%s'\n  want '%s'", got, want);
    EXPECT(cpu_tune_measured() == 1, "measured %d after a corrupt cache", cpu_tune_measured());
    cpu_tune_reset();
    capture_stderr(run_void, &mm, got, sizeof got);
    EXPECT(!got[0] && cpu_tune_measured() == 0, "the rewritten cache: '%s', measured %d", got, cpu_tune_measured());
    kh_free(&mm), kh_free(&cv);
}

/* another process's choice written after this one read the cache survives
 * this one's next write (no lost update: the file is read back, under an
 * flock, before it is rewritten) */
static void test_merge(void) {
    one_op mm, cv;
    build_ops(&mm, &cv, 6);
    cpu_tune_reset();
    const char *path = cpu_tune_cache_path();
    unlink(path);
    cpu_tune_reset();
    run_op(&mm); /* reads the (absent) cache, measures, writes */
    write_file(path, "{\"mgc_kernels\": 1, \"choices\": {\"matmul t9 [1,2] [2,3] -> [1,3] a\": \"onednn\"}}");
    run_op(&cv); /* measures, writes */
    char text[4096];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = 0;
    EXPECT(strstr(text, "\"matmul t9 [1,2] [2,3] -> [1,3] a\"") && strstr(text, "\"conv2d t") && strstr(text, "[33,70]"),
           "the other process's key, or this one's, lost: %s", text);
    kh_free(&mm), kh_free(&cv);
}

/* MGC_KERNELS forces a candidate: nothing measured, bit for bit its result */
static void test_override(void) {
    one_op mm, cv;
    build_ops(&mm, &cv, 3);
    int64_t n = out_numel(&mm);
    float *dnnl = malloc((size_t)n * sizeof *dnnl), *blas = malloc((size_t)n * sizeof *blas);
    char err[256];
    EXPECT(!cpu_dnnl_matmul(&mm.args, err, sizeof err), "%s", err);
    memcpy(dnnl, mm.out, (size_t)n * sizeof *dnnl);
    setenv("MGC_KERNELS", "onednn", 1);
    cpu_tune_reset();
    memset(mm.out, 0, (size_t)n * sizeof *dnnl);
    run_op(&mm);
    EXPECT(cpu_tune_measured() == 0 && !memcmp(mm.out, dnnl, (size_t)n * sizeof *dnnl), "MGC_KERNELS=onednn");
    setenv("MGC_KERNELS", "openblas", 1);
    cpu_tune_reset();
    run_op(&mm);
    memcpy(blas, mm.out, (size_t)n * sizeof *blas);
    double worst = 0;
    for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(blas[i] - dnnl[i]));
    EXPECT(cpu_tune_measured() == 0 && worst < 1e-5, "MGC_KERNELS=openblas: differs from oneDNN by %g", worst);
    setenv("MGC_KERNELS", "cublas", 1);
    cpu_tune_reset();
    char got[512];
    capture_stderr(run_void, &mm, got, sizeof got);
    EXPECT(!strcmp(got, "mgc: warning: MGC_KERNELS='cublas' is none of auto, openblas, onednn, onednn-hwio, direct, "
                        "winograd, blocked, thin; measuring\n"),
           "bad MGC_KERNELS: '%s'", got);
    unsetenv("MGC_KERNELS");
    free(dnnl), free(blas);
    kh_free(&mm), kh_free(&cv);
}

/* a candidate that writes its index (memo test) */
static int write_index(const rt_kernel_args *k, int c, char *err, size_t cap) {
    (void)err, (void)cap;
    *(float *)k->out = (float)c;
    return 0;
}

/* A session's node keeps its choice in its memo, taken without the key from
 * then on; a reset voids it, and so does another thread count. */
static void test_memo(void) {
    one_op mm, cv;
    build_ops(&mm, &cv, 4);
    static const char *const names[] = {"openblas", "onednn"};
    cpu_tune_op op = {names, 2, write_index, NULL};
    char err[256];
    rt_kernel_memo memo = {0};
    mm.args.memo = &memo;
    float *out = mm.out;
    setenv("MGC_KERNELS", "onednn", 1);
    cpu_tune_reset();
    EXPECT(!cpu_tune_run(&mm.args, &op, err, sizeof err) && *out == 1 && memo.tag != 0, "onednn forced: %g", *out);
    EXPECT(cpu_tune_named(&mm.args) && !strcmp(cpu_tune_named(&mm.args), "onednn"), "named %s", cpu_tune_named(&mm.args));
    unsetenv("MGC_KERNELS"); /* the memo, not the override read at the next reset, decides */
    EXPECT(!cpu_tune_run(&mm.args, &op, err, sizeof err) && *out == 1, "the memo's onednn: %g", *out);
    setenv("MGC_KERNELS", "openblas", 1);
    cpu_tune_reset();
    EXPECT(!cpu_tune_run(&mm.args, &op, err, sizeof err) && *out == 0, "after a reset, openblas forced: %g", *out);
    int threads = cpu_kernels_threads();
    int64_t before = memo.tag;
    cpu_kernels_set_threads(threads + 1); /* another key: looked up, and the memo names it */
    EXPECT(!cpu_tune_run(&mm.args, &op, err, sizeof err) && *out == 0 && memo.tag != before, "other threads: %g", *out);
    cpu_kernels_set_threads(threads);
    unsetenv("MGC_KERNELS");
    cpu_tune_reset();
    kh_free(&mm), kh_free(&cv);
}

/* two nodes of one shape (two replicas) get the one choice of the process,
 * and the chosen kernel gives the same bits every run */
static void test_deterministic(void) {
    one_op a[2], b[2];
    build_ops(&a[0], &b[0], 4);
    build_ops(&a[1], &b[1], 4);
    cpu_tune_reset();
    for (int r = 0; r < 2; r++) run_op(&a[r]), run_op(&b[r]);
    EXPECT(cpu_tune_measured() <= 2, "measured %d keys for 2 shapes", cpu_tune_measured());
    one_op *ops[2][2] = {{&a[0], &a[1]}, {&b[0], &b[1]}};
    for (int o = 0; o < 2; o++) {
        size_t bytes = (size_t)out_numel(ops[o][0]) * sizeof(float);
        float *first = malloc(bytes);
        memcpy(first, ops[o][0]->out, bytes);
        EXPECT(!memcmp(first, ops[o][1]->out, bytes), "op %d: replicas differ", o);
        for (int rep = 0; rep < 3; rep++) {
            run_op(ops[o][0]);
            EXPECT(!memcmp(first, ops[o][0]->out, bytes), "op %d: run %d differs", o, rep);
        }
        free(first);
    }
    for (int r = 0; r < 2; r++) kh_free(&a[r]), kh_free(&b[r]);
}

/* a cache that cannot be written: one warning, the choice kept in the process */
static void test_unwritable(void) {
    char bad[400];
    snprintf(bad, sizeof bad, "%s/file", dir);
    write_file(bad, "x");
    snprintf(bad, sizeof bad, "%s/file/sub", dir);
    setenv("MGC_CACHE_DIR", bad, 1);
    one_op mm, cv;
    build_ops(&mm, &cv, 5);
    cpu_tune_reset();
    char got[1024], want[1024];
    snprintf(want, sizeof want, "mgc: warning: cannot write kernel cache %s: Not a directory\n", cpu_tune_cache_path());
    capture_stderr(run_void, &mm, got, sizeof got);
    EXPECT(!strcmp(got, want), "unwritable cache\n  got  '%s'\n  want '%s'", got, want);
    capture_stderr(run_void, &cv, got, sizeof got);
    EXPECT(!got[0] && cpu_tune_choice(&mm.args) && cpu_tune_measured() == 2, "second measurement: '%s'", got);
    setenv("MGC_CACHE_DIR", dir, 1);
    kh_free(&mm), kh_free(&cv);
}

static void test_default_threads(void) {
    EXPECT(rt_threads_for(2, 1, 1) == 2, "2 cores, 1 device");
    EXPECT(rt_threads_for(2, 2, 1) == 1, "2 cores, 2 devices");
    EXPECT(rt_threads_for(2, 4, 1) == 1, "2 cores, 4 devices");
    EXPECT(rt_threads_for(16, 2, 2) == 4, "16 cores, 2 devices, 2 processes");
    EXPECT(rt_threads_for(7, 2, 1) == 3, "7 cores, 2 devices");
    EXPECT(rt_threads_for(0, 1, 1) == 1, "0 cores");
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    EXPECT(rt_default_threads(1) == CPU_COUNT(&set), "1 device: %d threads, %d cores", rt_default_threads(1),
           CPU_COUNT(&set));
    EXPECT(rt_default_threads(1000) == 1, "1000 devices");
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/mgc_tune_XXXXXX");
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    setenv("MGC_CACHE_DIR", dir, 1);
    unsetenv("MGC_KERNELS");
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE"), unsetenv("MPI_LOCALNRANKS"), unsetenv("PMIX_LOCAL_SIZE");
    for (int t = 1; t <= 2; t++) {
        cpu_kernels_set_threads(t);
        test_round_trip();
        test_corrupt("{\"mgc_kernels\": 1, \"choices\": {\"matmul t1", "not JSON");
        test_corrupt("[1, 2]", "no \"mgc_kernels\": 1");
        test_corrupt("{\"mgc_kernels\": 1, \"choices\": 3}", "no \"choices\" object");
        test_corrupt("{\"mgc_kernels\": 1, \"choices\": {\"k\": 3}}", "a choice that is not a short string");
        test_override();
        test_memo();
        test_deterministic();
        test_merge();
    }
    test_unwritable();
    test_default_threads();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "cannot remove %s\n", dir);
    printf("test_tune: %d failed\n", failures);
    return failures != 0;
}
