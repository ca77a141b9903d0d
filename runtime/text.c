/* text.c - text as data: the bytes of a file (or of a directory's text files) cut into token windows and their next-token labels. */
#include "data_impl.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- the corpus: one file, or a directory's text files in name order ---- */

typedef struct {
    unsigned char *bytes;
    size_t len, cap;
} corpus;

static int corpus_add(corpus *c, const unsigned char *p, size_t n, const char *path, char *err, size_t cap) {
    if (c->len + n + 1 > c->cap) {
        size_t want = (c->len + n + 1) * 2;
        unsigned char *b = realloc(c->bytes, want);
        if (!b) return rt_data_fail(err, cap, "%s: out of memory", path);
        c->bytes = b, c->cap = want;
    }
    memcpy(c->bytes + c->len, p, n);
    c->len += n;
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The regular files of dir (symlinks not followed: fortune's *.u8 links
 * repeat other files), sorted; files holding a NUL byte are not text (the
 * *.dat indexes of fortune) and are skipped. */
static int read_dir(const char *dir, corpus *c, char *err, size_t cap) {
    DIR *d = opendir(dir);
    if (!d) return rt_data_fail(err, cap, "%s: cannot open: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, room = 0;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d)) && !rc;) {
        if (e->d_name[0] == '.') continue;
        if (n == room && !(names = realloc(names, (room = room ? 2 * room : 64) * sizeof *names))) rc = -1;
        else if (!(names[n] = strdup(e->d_name))) rc = -1;
        else n++;
    }
    closedir(d);
    if (rc) rt_data_fail(err, cap, "%s: out of memory", dir);
    if (names) qsort(names, n, sizeof *names, by_name);
    for (size_t k = 0; k < n && !rc; k++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        size_t len;
        unsigned char *b = rt_read_file(path, &len, err, cap);
        if (!b) rc = -1;
        else if (!memchr(b, 0, len)) rc = corpus_add(c, b, len, path, err, cap);
        free(b);
    }
    for (size_t k = 0; k < n; k++) free(names[k]);
    free(names);
    return rc;
}

static int read_corpus(const char *path, corpus *c, char *err, size_t cap) {
    struct stat st;
    *c = (corpus){0};
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (read_dir(path, c, err, cap) < 0) return free(c->bytes), -1;
        if (!c->len) return free(c->bytes), rt_data_fail(err, cap, "%s: the directory holds no text file", path);
        return 0;
    }
    c->bytes = rt_read_file(path, &c->len, err, cap);
    if (!c->bytes) return -1;
    if (!c->len) return free(c->bytes), rt_data_fail(err, cap, "%s: the file is empty", path);
    return 0;
}

/* ---- the cut ---- */

int64_t rt_text_valid_bytes(int64_t len) { return len * RT_TEXT_VALID_PERCENT / 100; }

int64_t rt_text_examples(int64_t part, int64_t context) { return part > 0 ? (part - 1) / context : 0; }

/* Which spec holds the tokens and which the labels; checks both are i32 [T]. */
static int check_inputs(const char *path, int64_t T, const rt_input_spec *in, int n, int label, char *err,
                        size_t cap) {
    char b[128];
    if (n < 1 || n > 2 || (n == 2 && label != 0 && label != 1) || (n == 1 && label >= 0))
        return rt_data_fail(err, cap, "%s: text data needs a model with two i32 inputs [batch, T] (tokens and labels), "
                                      "this one has %d input%s", path, n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        if (in[i].dtype != IR_I32 || in[i].shape.rank != 1)
            return rt_data_fail(err, cap, "%s: text data needs i32 inputs [batch, T], input '%s' is %s", path,
                                in[i].name, ir_type_str(in[i].dtype, &in[i].shape, b, sizeof b));
        if (in[i].shape.dim[0] != T)
            return rt_data_fail(err, cap, "%s: --context %lld but input '%s' is i32[batch,%lld]", path, (long long)T,
                                in[i].name, (long long)in[i].shape.dim[0]);
    }
    return 0;
}

rt_dataset *rt_dataset_from_text(const char *path, const char *split, int64_t context, const rt_input_spec *inputs,
                                 int n_inputs, int label, char *err, size_t cap) {
    if (!path || !*path) path = RT_DEFAULT_TEXT_DIR;
    if (strcmp(split, "train") && strcmp(split, "test"))
        return rt_data_fail(err, cap, "unknown split '%s' (train or test)", split), NULL;
    if (context < 1 || context > RT_TEXT_MAX_CONTEXT)
        return rt_data_fail(err, cap, "%s: context %lld is not from 1 to %d", path, (long long)context,
                            RT_TEXT_MAX_CONTEXT), NULL;
    if (check_inputs(path, context, inputs, n_inputs, label, err, cap) < 0) return NULL;
    corpus c;
    if (read_corpus(path, &c, err, cap) < 0) return NULL;
    int64_t len = (int64_t)c.len, valid = rt_text_valid_bytes(len), train = len - valid;
    bool is_train = !strcmp(split, "train");
    int64_t start = is_train ? 0 : train, part = is_train ? train : valid;
    int64_t n = rt_text_examples(part, context);
    rt_dataset *ds = NULL;
    if (n == 0) {
        rt_data_fail(err, cap, "%s: %lld bytes: its %s part (%s %d%%, %lld bytes) is too short for one example of "
                     "--context %lld (%lld bytes)", path, (long long)len, is_train ? "training" : "validation",
                     is_train ? "the first" : "the last", is_train ? 100 - RT_TEXT_VALID_PERCENT : RT_TEXT_VALID_PERCENT,
                     (long long)part, (long long)context, (long long)context + 1);
        free(c.bytes);
        return NULL;
    }
    rt_tensor t[2] = {{.dtype = IR_I32, .shape = {.rank = 2, .dim = {n, context}}},
                      {.dtype = IR_I32, .shape = {.rank = 2, .dim = {n, context}}}};
    t[0].data = malloc((size_t)(n * context) * sizeof(int32_t));
    t[1].data = malloc((size_t)(n * context) * sizeof(int32_t));
    if (t[0].data && t[1].data) {
        int32_t *tok = t[0].data, *lab = t[1].data; /* (n, T) each */
        const unsigned char *b = c.bytes + start;
        for (int64_t e = 0; e < n; e++)
            for (int64_t j = 0; j < context; j++)
                tok[e * context + j] = b[e * context + j], lab[e * context + j] = b[e * context + j + 1];
        rt_tensor ordered[2];
        const char *names[2] = {path, path};
        ordered[0] = t[label == 1 ? 0 : 1], ordered[1] = t[label == 1 ? 1 : 0];
        if (n_inputs == 1) ordered[0] = t[0];
        ds = rt_dataset_from_tensors(ordered, names, inputs, n_inputs, err, cap);
    } else rt_data_fail(err, cap, "%s: out of memory", path);
    rt_tensor_free(&t[0]);
    rt_tensor_free(&t[1]);
    free(c.bytes);
    return ds;
}
