/* test_text.c - text data: the cut into windows, next-byte labels, the validation tail, directories and errors, exactly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/data.h"
#include "check.h"

static char dir[64];

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) perror(path), exit(1);
    fclose(f);
}

static const rt_input_spec specs4[2] = {{"tokens", IR_I32, {.rank = 1, .dim = {4}}},
                                        {"label", IR_I32, {.rank = 1, .dim = {4}}}};

/* 100 bytes b[i] = 2i + 1: the last 10 are validation; the first 90 give
 * floor(89 / 4) = 22 windows at 0, 4, ..., 84 (the byte at 88 is a label,
 * 89 is unused); the last 10 give floor(9 / 4) = 2 windows. */
static void case_cut(void) {
    char path[128];
    unsigned char b[100];
    for (int i = 0; i < 100; i++) b[i] = (unsigned char)(2 * i + 1);
    snprintf(path, sizeof path, "%s/t.txt", dir);
    write_file(path, b, sizeof b);
    char err[512];
    CHECK(rt_text_valid_bytes(100) == 10 && rt_text_valid_bytes(9) == 0 && rt_text_examples(90, 4) == 22);
    rt_dataset *tr = rt_dataset_from_text(path, "train", 4, specs4, 2, 1, err, sizeof err);
    rt_dataset *va = rt_dataset_from_text(path, "test", 4, specs4, 2, 1, err, sizeof err);
    CHECK(tr && va);
    if (!tr || !va) return;
    CHECK(rt_dataset_count(tr) == 22 && rt_dataset_count(va) == 2);
    const int32_t *tok = rt_dataset_tensor(tr, 0)->data, *lab = rt_dataset_tensor(tr, 1)->data;
    CHECK(rt_dataset_tensor(tr, 0)->shape.rank == 2 && rt_dataset_tensor(tr, 0)->shape.dim[1] == 4);
    int bad = 0;
    for (int e = 0; e < 22; e++)
        for (int j = 0; j < 4; j++) bad += tok[e * 4 + j] != b[4 * e + j] || lab[e * 4 + j] != b[4 * e + j + 1];
    CHECK(bad == 0);
    CHECK(lab[21 * 4 + 3] == b[88]); /* the last training label is byte 88, inside the first 90 */
    tok = rt_dataset_tensor(va, 0)->data, lab = rt_dataset_tensor(va, 1)->data;
    bad = 0;
    for (int e = 0; e < 2; e++)
        for (int j = 0; j < 4; j++) bad += tok[e * 4 + j] != b[90 + 4 * e + j] || lab[e * 4 + j] != b[91 + 4 * e + j];
    CHECK(bad == 0);
    rt_dataset_free(tr);
    rt_dataset_free(va);
    /* labels first: the label input gets the shifted bytes */
    rt_input_spec swapped[2] = {specs4[1], specs4[0]};
    tr = rt_dataset_from_text(path, "train", 4, swapped, 2, 0, err, sizeof err);
    CHECK(tr && ((const int32_t *)rt_dataset_tensor(tr, 0)->data)[0] == b[1] &&
          ((const int32_t *)rt_dataset_tensor(tr, 1)->data)[0] == b[0]);
    rt_dataset_free(tr);
    /* one input (predict): tokens only */
    tr = rt_dataset_from_text(path, "train", 4, specs4, 1, -1, err, sizeof err);
    CHECK(tr && rt_dataset_inputs(tr) == 1 && ((const int32_t *)rt_dataset_tensor(tr, 0)->data)[5] == b[5]);
    rt_dataset_free(tr);
}

/* A directory: its regular files in name order; binary files (a NUL byte)
 * and symlinks are skipped. */
static void case_directory(void) {
    char d[128], p[256];
    snprintf(d, sizeof d, "%s/corpus", dir);
    mkdir(d, 0777);
    snprintf(p, sizeof p, "%s/b", d), write_file(p, "0123456789", 10);
    snprintf(p, sizeof p, "%s/a", d), write_file(p, "ABCDEFGHIJ", 10);
    snprintf(p, sizeof p, "%s/a.dat", d), write_file(p, "\0\0\0\2xxxxx", 9);
    snprintf(p, sizeof p, "%s/c.u8", d);
    if (symlink("a", p) != 0) perror(p);
    char err[512];
    static const rt_input_spec s2[2] = {{"tokens", IR_I32, {.rank = 1, .dim = {2}}},
                                        {"label", IR_I32, {.rank = 1, .dim = {2}}}};
    /* 20 bytes "ABCDEFGHIJ0123456789": 18 train (8 windows), 2 validation (0 windows) */
    rt_dataset *ds = rt_dataset_from_text(d, "train", 2, s2, 2, 1, err, sizeof err);
    CHECK(ds && rt_dataset_count(ds) == 8);
    if (ds) {
        const int32_t *tok = rt_dataset_tensor(ds, 0)->data, *lab = rt_dataset_tensor(ds, 1)->data;
        CHECK(tok[0] == 'A' && lab[0] == 'B' && tok[10] == '0' && lab[15] == '6');
    }
    rt_dataset_free(ds);
    char want[512];
    snprintf(want, sizeof want, "%s: 20 bytes: its validation part (the last 10%%, 2 bytes) is too short for one "
                                "example of --context 2 (3 bytes)", d);
    CHECK_ERR(!rt_dataset_from_text(d, "test", 2, s2, 2, 1, err, sizeof err), err, want);
}

static void case_errors(void) {
    char path[128], empty[128], want[512], err[512];
    snprintf(path, sizeof path, "%s/short.txt", dir);
    write_file(path, "abc", 3);
    snprintf(empty, sizeof empty, "%s/empty.txt", dir);
    write_file(empty, "", 0);
    snprintf(want, sizeof want, "%s: the file is empty", empty);
    CHECK_ERR(!rt_dataset_from_text(empty, "train", 4, specs4, 2, 1, err, sizeof err), err, want);
    snprintf(want, sizeof want, "%s: 3 bytes: its training part (the first 90%%, 3 bytes) is too short for one "
                                "example of --context 4 (5 bytes)", path);
    CHECK_ERR(!rt_dataset_from_text(path, "train", 4, specs4, 2, 1, err, sizeof err), err, want);
    snprintf(want, sizeof want, "%s: --context 3 but input 'tokens' is i32[batch,4]", path);
    CHECK_ERR(!rt_dataset_from_text(path, "train", 3, specs4, 2, 1, err, sizeof err), err, want);
    rt_input_spec f[2] = {specs4[0], {"x", IR_F32, {.rank = 1, .dim = {4}}}};
    snprintf(want, sizeof want, "%s: text data needs i32 inputs [batch, T], input 'x' is f32[4]", path);
    CHECK_ERR(!rt_dataset_from_text(path, "train", 4, f, 2, 1, err, sizeof err), err, want);
    snprintf(want, sizeof want, "%s: text data needs a model with two i32 inputs [batch, T] (tokens and labels), "
                                "this one has 3 inputs", path);
    rt_input_spec three[3] = {specs4[0], specs4[1], specs4[1]};
    CHECK_ERR(!rt_dataset_from_text(path, "train", 4, three, 3, 1, err, sizeof err), err, want);
    snprintf(want, sizeof want, "%s: context 0 is not from 1 to 65536", path);
    CHECK_ERR(!rt_dataset_from_text(path, "train", 0, specs4, 2, 1, err, sizeof err), err, want);
    snprintf(path, sizeof path, "%s/missing.txt", dir);
    CHECK(!rt_dataset_from_text(path, "train", 4, specs4, 2, 1, err, sizeof err) && strstr(err, path) == err);
}

int main(int argc, char **argv) {
    static const test_case cases[] = {
        {"cut", case_cut}, {"directory", case_directory}, {"errors", case_errors}};
    return run_cases(cases, sizeof cases / sizeof cases[0], dir, sizeof dir, "/tmp/mgc_text_XXXXXX", argc, argv);
}
