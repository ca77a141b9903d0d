/* test_checkpoint.c - safetensors round trip, byte determinism, atomic writes, malformed files; `test_checkpoint CASE [PATH]`. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../../runtime/checkpoint.h"
#include "../../runtime/data.h"
#include "check.h"

static char dir[64];
static char err[512];

static float kernel[6] = {0.5f, -1.25f, 3, 4, 5, 6};
static int32_t step[1] = {1234};
static double dbl[2] = {0.1, -2.5e300};
static uint8_t bytes[3] = {0, 7, 255};

static const rt_ck_tensor tensors[] = {
    {"dense/kernel", IR_F32, {2, {2, 3}}, kernel},
    {"step", IR_I32, {0, {0}}, step},
    {"adam/m", IR_F64, {1, {2}}, dbl},
    {"mask", IR_U8, {1, {3}}, bytes},
};
static const char *meta[] = {"format", "pt", "mgc_model", "mnist_cnn"};

static void case_roundtrip(void) {
    char path[128];
    snprintf(path, sizeof path, "%s/ck.safetensors", dir);
    CHECK(rt_checkpoint_save(path, tensors, 4, meta, 2, err, sizeof err) == 0);
    rt_checkpoint *ck = rt_checkpoint_load(path, err, sizeof err);
    CHECK(ck && rt_checkpoint_count(ck) == 4);
    if (!ck) return;
    CHECK(!strcmp(rt_checkpoint_at(ck, 0)->name, "adam/m") && !strcmp(rt_checkpoint_at(ck, 3)->name, "step"));
    for (int i = 0; i < 4; i++) {
        const rt_ck_tensor *t = rt_checkpoint_find(ck, tensors[i].name);
        CHECK(t && t->dtype == tensors[i].dtype && ir_shape_eq(&t->shape, &tensors[i].shape));
        CHECK(t && !memcmp(t->data, tensors[i].data, ir_shape_numel(&t->shape) * ir_dtype_size(t->dtype)));
    }
    CHECK(!rt_checkpoint_find(ck, "nope"));
    CHECK(!strcmp(rt_checkpoint_meta(ck, "mgc_model"), "mnist_cnn") && !rt_checkpoint_meta(ck, "x"));
    rt_checkpoint_free(ck);
}

static void case_deterministic(void) {
    char p1[128], p2[128];
    snprintf(p1, sizeof p1, "%s/a.safetensors", dir);
    snprintf(p2, sizeof p2, "%s/b.safetensors", dir);
    rt_ck_tensor rev[4] = {tensors[3], tensors[2], tensors[1], tensors[0]};
    const char *meta_rev[] = {"mgc_model", "mnist_cnn", "format", "pt"};
    CHECK(rt_checkpoint_save(p1, tensors, 4, meta, 2, err, sizeof err) == 0);
    CHECK(rt_checkpoint_save(p2, rev, 4, meta_rev, 2, err, sizeof err) == 0);
    size_t n1, n2;
    unsigned char *a = rt_read_file(p1, &n1, err, sizeof err), *b = rt_read_file(p2, &n2, err, sizeof err);
    CHECK(a && b && n1 == n2 && !memcmp(a, b, n1));
    uint64_t hl;
    memcpy(&hl, a, 8);
    CHECK(hl % 8 == 0 && n1 == 8 + hl + 24 + 4 + 16 + 3);
    const char *want = "{\"__metadata__\":{\"format\":\"pt\",\"mgc_model\":\"mnist_cnn\"},"
                       "\"adam/m\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]},";
    CHECK(!strncmp((char *)a + 8, want, strlen(want)));
    CHECK(a[8 + hl - 1] == ' ' || a[8 + hl - 1] == '}');
    free(a);
    free(b);
}

static void case_atomic(void) {
    char path[128], want[512];
    snprintf(path, sizeof path, "%s/ck.safetensors", dir);
    CHECK(rt_checkpoint_save(path, tensors + 1, 1, NULL, 0, err, sizeof err) == 0);
    static float big[8192];
    rt_ck_tensor large = {"big", IR_F32, {1, {8192}}, big};
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim.rlim_cur = 4096, lim.rlim_max = old.rlim_max;
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &lim);
    CHECK_ERR(rt_checkpoint_save(path, &large, 1, NULL, 0, err, sizeof err) < 0, err,
              (snprintf(want, sizeof want, "%s: cannot write: File too large", path), want));
    setrlimit(RLIMIT_FSIZE, &old);
    rt_checkpoint *ck = rt_checkpoint_load(path, err, sizeof err);
    CHECK(ck && rt_checkpoint_count(ck) == 1 && rt_checkpoint_find(ck, "step"));
    rt_checkpoint_free(ck);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "test $(ls %s | grep -c tmp) -eq 0", dir);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/ck.safetensors/sub.safetensors", dir);
    CHECK_ERR(rt_checkpoint_save(path, tensors, 1, NULL, 0, err, sizeof err) < 0, err,
              (snprintf(want, sizeof want, "%s: cannot write: Not a directory", path), want));
    CHECK_ERR(rt_checkpoint_save("x", (rt_ck_tensor[]){tensors[1], tensors[1]}, 2, NULL, 0, err, sizeof err) < 0, err,
              "x: cannot write: tensor 'step' appears twice");
}

/* A file of header text h (padded to 8) followed by n data bytes; loads it from memory. */
static rt_checkpoint *load(const char *h, size_t n) {
    static unsigned char buf[4096];
    size_t hl = strlen(h), padded = (hl + 7) / 8 * 8;
    uint64_t le = padded;
    memcpy(buf, &le, 8);
    memcpy(buf + 8, h, hl);
    memset(buf + 8 + hl, ' ', padded - hl);
    memset(buf + 8 + padded, 0, n);
    return rt_checkpoint_load_mem(buf, 8 + padded + n, "ck.safetensors", err, sizeof err);
}

static void case_malformed(void) {
    CHECK_ERR(!load("{\"dense/kernel\":{\"dtype\":\"F32\",\"shape\":[784,128],\"data_offsets\":[0,100]}}", 100), err,
              "ck.safetensors: tensor 'dense/kernel': data_offsets [0, 100) do not match shape [784,128] of F32 "
              "(401408 bytes)");
    CHECK_ERR(!load("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4), err,
              "ck.safetensors: tensor 'a': unknown dtype \"BF16\" (supported: F32, I32, F64, U8)");
    CHECK_ERR(!load("{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8), err,
              "ck.safetensors: tensor 'a': missing \"dtype\"");
    CHECK_ERR(!load("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8), err,
              "ck.safetensors: tensor 'a': bad \"shape\" (an array of at most 6 non-negative integers)");
    CHECK_ERR(!load("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8), err,
              "ck.safetensors: tensor 'a': bad \"data_offsets\" (two integers, begin <= end)");
    CHECK_ERR(!load("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 8), err,
              "ck.safetensors: tensor 'a': data_offsets [4, 12) exceed the data section (8 bytes)");
    CHECK_ERR(!load("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12), err,
              "ck.safetensors: tensors 'a' [0, 8) and 'b' [4, 12) overlap");
    CHECK_ERR(!load("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[10,12]}}", 12), err,
              "ck.safetensors: data bytes [8, 10) belong to no tensor");
    CHECK_ERR(!load("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 16), err,
              "ck.safetensors: data bytes [8, 16) belong to no tensor");
    CHECK_ERR(!load("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16), err,
              "ck.safetensors: tensor 'a' appears twice");
    CHECK_ERR(!load("{\"__metadata__\":{\"k\":1}}", 0), err,
              "ck.safetensors: \"__metadata__\" must map strings to strings");
    CHECK_ERR(!load("{\"a\":{\"dtype\":\"F32\",", 0), err,
              "ck.safetensors: header is not valid JSON (error at byte 23 of the header)");
    CHECK_ERR(!load("[1,2]", 0), err, "ck.safetensors: header is not one JSON object");
    CHECK_ERR(!load("{\"a\":[1]}", 0), err, "ck.safetensors: tensor 'a': entry is not a JSON object");
    /* a header length of 1 GiB (refused before the file size is looked at), a header
     * longer than a small file, a file shorter than the length field */
    unsigned char b[64] = {0, 0, 0, 0x40};
    CHECK_ERR(!rt_checkpoint_load_mem(b, 64, "ck.safetensors", err, sizeof err), err,
              "ck.safetensors: header length 1073741824 exceeds the 100 MiB limit (not a safetensors file?)");
    b[3] = 0, b[1] = 1;
    CHECK_ERR(!rt_checkpoint_load_mem(b, 64, "ck.safetensors", err, sizeof err), err,
              "ck.safetensors: header length 256 exceeds the file size (64 bytes)");
    CHECK_ERR(!rt_checkpoint_load_mem(b, 5, "ck.safetensors", err, sizeof err), err,
              "ck.safetensors: truncated (5 bytes, no 8-byte header length)");
    rt_checkpoint *ck = load("{}", 0); /* empty is valid */
    CHECK(ck && rt_checkpoint_count(ck) == 0);
    rt_checkpoint_free(ck);
    char want[256], path[128];
    snprintf(path, sizeof path, "%s/none.safetensors", dir);
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
    CHECK_ERR(!rt_checkpoint_load(path, err, sizeof err), err, want);
}

/* Writes the fixed tensors for the Python reader to check. */
static int write_for_python(const char *path) {
    static float w[784 * 4];
    for (int i = 0; i < 784 * 4; i++) w[i] = (float)i * 0.25f - 100.0f;
    rt_ck_tensor t[] = {{"dense/kernel", IR_F32, {2, {784, 4}}, w}, tensors[1], tensors[2], tensors[3]};
    if (rt_checkpoint_save(path, t, 4, meta, 2, err, sizeof err) < 0) return fprintf(stderr, "%s\n", err), 1;
    return 0;
}

int main(int argc, char **argv) {
    static const test_case cases[] = {
        {"roundtrip", case_roundtrip}, {"deterministic", case_deterministic},
        {"atomic", case_atomic},       {"malformed", case_malformed},
    };
    if (argc == 3 && !strcmp(argv[1], "write")) return write_for_python(argv[2]);
    return run_cases(cases, sizeof cases / sizeof cases[0], dir, sizeof dir, "/tmp/mgc_ck_XXXXXX", argc, argv);
}
