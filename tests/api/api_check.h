/* api_check.h - what the C API tests share: failure counting (CHECK, MUST,
 * EXPECT_ERROR), paths in the test's temporary directory `dir` (made with
 * mkdtemp by main), whole-file reads, NPY writes and shell commands. Each test
 * includes it once. */
#ifndef MGC_API_CHECK_H
#define MGC_API_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgc.h"

static int failures;
/* the test's temporary directory: a mkdtemp(3) template until main calls
 * mkdtemp(dir), which replaces the X's in place */
static char dir[] = "/tmp/mgc_api_XXXXXX";

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
            failures++;                                                      \
        }                                                                    \
    } while (0)

/* A call that must succeed (with `mgc_error err` in scope); the test stops when it does not. */
#define MUST(call)                                                                          \
    do {                                                                                    \
        mgc_status st_ = (call);                                                            \
        if (st_ != MGC_OK) {                                                                \
            fprintf(stderr, "FAIL %s:%d: %s: status %d: %s\n", __FILE__, __LINE__, #call, \
                    st_, err.message);                                                      \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

/* A call that must fail with status `want` and exactly message `msg`. */
static void expect_error(mgc_status got, const mgc_error *err, mgc_status want, const char *msg, const char *file,
                         int line) {
    if (got != want || err->status != want || strcmp(err->message, msg)) {
        fprintf(stderr, "FAIL %s:%d: status %d (want %d), message\n  [%s]\nwant\n  [%s]\n", file, line, got, want,
                err->message, msg);
        failures++;
    }
}
#define EXPECT_ERROR(call, want, msg) expect_error((call), &err, (want), (msg), __FILE__, __LINE__)

/* dir/name, in one of 8 rotating buffers */
static char *path(const char *name) {
    static char buf[8][512];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, sizeof buf[0], "%s/%s", dir, name);
    return p;
}

/* The whole file (malloc'd, NUL-terminated), NULL when it cannot be opened. */
static unsigned char *slurp(const char *file, size_t *len) {
    FILE *f = fopen(file, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*len + 1);
    if (fread(b, 1, *len, f) != *len) *len = 0;
    b[*len] = 0;
    fclose(f);
    return b;
}

/* Both files exist, are not empty and hold the same bytes. */
static bool same_file(const char *a, const char *b) {
    size_t la = 0, lb = 0;
    unsigned char *x = slurp(a, &la), *y = slurp(b, &lb);
    bool same = x && y && la == lb && la > 0 && !memcmp(x, y, la);
    free(x), free(y);
    return same;
}

/* NPY version 1 of a C-order array ("<f4" or "<i4"). */
static inline void write_npy(const char *file, const char *descr, const int64_t *shape, int rank, const void *data, size_t bytes) {
    char head[128], dims[64] = "";
    for (int d = 0; d < rank; d++) snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%lld,", (long long)shape[d]);
    int n = snprintf(head, sizeof head, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, dims);
    int pad = 64 - (10 + n + 1) % 64;
    FILE *f = fopen(file, "wb");
    unsigned short hl = (unsigned short)(n + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fwrite(&hl, 2, 1, f);
    fprintf(f, "%s%*s\n", head, pad, "");
    fwrite(data, 1, bytes, f);
    fclose(f);
}

/* Runs cmd through the shell: its whole stdout in *out (malloc'd; "" when it
 * cannot start). Returns its status. */
static inline int capture_command(const char *cmd, char **out) {
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    FILE *p = popen(cmd, "r");
    for (size_t r; p && (r = fread(buf + n, 1, cap - n - 1, p)) > 0;)
        if ((n += r) + 1 == cap) buf = realloc(buf, cap *= 2);
    buf[n] = 0;
    *out = buf;
    int rc = p ? pclose(p) : -1;
    if (rc) fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
    return rc;
}

/* Runs a shell command; its stdout in out (cap bytes). Returns its status. */
static inline int run_command(char *out, size_t cap, const char *fmt, ...) {
    char cmd[4096], *all;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = capture_command(cmd, &all);
    snprintf(out, cap, "%s", all);
    free(all);
    return rc;
}

#endif
