/* checkpoint.c - safetensors save (deterministic, atomic) and load (every offset and shape checked). */
#define _GNU_SOURCE /* qsort_r */
#include "../ir/outfile.h"
#include "checkpoint.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"

#define MAX_HEADER ((uint64_t)100 << 20) /* the safetensors limit */

static const char *const st_names[IR_DTYPE_COUNT] = {[IR_F32] = "F32", [IR_I32] = "I32", [IR_F64] = "F64",
                                                     [IR_U8] = "U8"};

static int fail(char *err, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && cap) vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return -1;
}

static char *shape_str(const ir_shape *s, char *buf, size_t cap) {
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < s->rank && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, i ? ",%lld" : "%lld", (long long)s->dim[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
    return buf;
}

/* ---- save ---- */

static int by_name(const void *a, const void *b, void *arg) {
    const rt_ck_tensor *t = arg;
    return strcmp(t[*(const int *)a].name, t[*(const int *)b].name);
}

static int by_key(const void *a, const void *b, void *arg) {
    const char *const *meta = arg;
    return strcmp(meta[2 * *(const int *)a], meta[2 * *(const int *)b]);
}

/* Indices 0..n-1 of the tensors ordered by name, or of the metadata pairs by key. */
static int *sorted_order(const rt_ck_tensor *t, int n, const char *const *meta, int n_meta, bool is_meta) {
    int count = is_meta ? n_meta : n;
    int *ord = malloc(sizeof(int) * (size_t)(count + 1));
    if (!ord) return NULL;
    for (int i = 0; i < count; i++) ord[i] = i;
    if (is_meta) qsort_r(ord, (size_t)count, sizeof *ord, by_key, (void *)meta);
    else qsort_r(ord, (size_t)count, sizeof *ord, by_name, (void *)t);
    return ord;
}

static cJSON *int_array(const int64_t *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
    return a;
}

static cJSON *build_header(const rt_ck_tensor *t, const int *ord, int n, const char *const *meta,
                           const int *mord, int n_meta) {
    cJSON *root = cJSON_CreateObject();
    if (n_meta > 0) {
        cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
        for (int k = 0; m && k < n_meta; k++) cJSON_AddStringToObject(m, meta[2 * mord[k]], meta[2 * mord[k] + 1]);
    }
    int64_t off = 0;
    for (int k = 0; root && k < n; k++) {
        const rt_ck_tensor *x = &t[ord[k]];
        int64_t end = off + ir_shape_numel(&x->shape) * (int64_t)ir_dtype_size(x->dtype);
        cJSON *e = cJSON_AddObjectToObject(root, x->name);
        if (!e) break;
        cJSON_AddStringToObject(e, "dtype", st_names[x->dtype]);
        cJSON_AddItemToObject(e, "shape", int_array(x->shape.dim, x->shape.rank));
        cJSON_AddItemToObject(e, "data_offsets", int_array((int64_t[]){off, end}, 2));
        off = end;
    }
    return root;
}

static int check_save_args(const char *path, const rt_ck_tensor *t, const int *ord, int n, char *err, size_t cap) {
    for (int k = 0; k < n; k++) {
        const rt_ck_tensor *x = &t[ord[k]];
        if (x->dtype >= IR_DTYPE_COUNT || !st_names[x->dtype])
            return fail(err, cap, "%s: cannot write: tensor '%s' has no safetensors dtype", path, x->name);
        if (k > 0 && !strcmp(t[ord[k - 1]].name, x->name))
            return fail(err, cap, "%s: cannot write: tensor '%s' appears twice", path, x->name);
        if (!strcmp(x->name, "__metadata__"))
            return fail(err, cap, "%s: cannot write: '__metadata__' is not a tensor name", path);
    }
    return 0;
}

/* Header text padded with spaces so that 8 + its length is a multiple of 8. */
static char *padded_header(cJSON *root, size_t *len) {
    char *json = cJSON_PrintUnformatted(root);
    if (!json) return NULL;
    size_t n = strlen(json), padded = (n + 7) / 8 * 8;
    char *h = realloc(json, padded + 1);
    if (!h) {
        free(json);
        return NULL;
    }
    memset(h + n, ' ', padded - n);
    h[padded] = 0;
    *len = padded;
    return h;
}

static int write_parts(const char *path, const rt_ck_tensor *t, const int *ord, int n, const char *hdr, size_t hlen,
                       char *err, size_t cap) {
    const void **parts = malloc(sizeof(void *) * (size_t)(n + 2));
    size_t *sizes = malloc(sizeof(size_t) * (size_t)(n + 2));
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    int rc = -1;
    if (!parts || !sizes) fail(err, cap, "%s: cannot write: out of memory", path);
    else {
        parts[0] = len8, sizes[0] = 8;
        parts[1] = hdr, sizes[1] = hlen;
        for (int k = 0; k < n; k++) {
            const rt_ck_tensor *x = &t[ord[k]];
            parts[k + 2] = x->data;
            sizes[k + 2] = (size_t)(ir_shape_numel(&x->shape) * (int64_t)ir_dtype_size(x->dtype));
        }
        rc = ir_write_file_atomic(path, parts, sizes, n + 2, err, cap);
    }
    free(parts);
    free(sizes);
    return rc;
}

int rt_checkpoint_save(const char *path, const rt_ck_tensor *tensors, int n, const char *const *meta, int n_meta,
                       char *err, size_t cap) {
    int *ord = sorted_order(tensors, n, meta, n_meta, false), *mord = sorted_order(tensors, n, meta, n_meta, true);
    cJSON *root = NULL;
    char *hdr = NULL;
    size_t hlen = 0;
    int rc = -1;
    if (!ord || !mord) fail(err, cap, "%s: cannot write: out of memory", path);
    else if (check_save_args(path, tensors, ord, n, err, cap) == 0) {
        root = build_header(tensors, ord, n, meta, mord, n_meta);
        hdr = root ? padded_header(root, &hlen) : NULL;
        if (!hdr) fail(err, cap, "%s: cannot write: out of memory", path);
        else rc = write_parts(path, tensors, ord, n, hdr, hlen, err, cap);
    }
    cJSON_Delete(root);
    free(hdr);
    free(ord);
    free(mord);
    return rc;
}

/* ---- load ---- */

struct rt_checkpoint {
    int n;
    rt_ck_tensor *t; /* sorted by name; names and data owned */
    int n_meta;
    char **meta;     /* key, value pairs */
};

typedef struct {
    uint64_t begin, end;
    int index;
} span;

void rt_checkpoint_free(rt_checkpoint *ck) {
    if (!ck) return;
    for (int i = 0; i < ck->n; i++) {
        free((char *)ck->t[i].name);
        free((void *)ck->t[i].data);
    }
    for (int i = 0; i < 2 * ck->n_meta; i++) free(ck->meta[i]);
    free(ck->t);
    free(ck->meta);
    free(ck);
}

int rt_checkpoint_count(const rt_checkpoint *ck) { return ck->n; }
const rt_ck_tensor *rt_checkpoint_at(const rt_checkpoint *ck, int i) { return &ck->t[i]; }

const rt_ck_tensor *rt_checkpoint_find(const rt_checkpoint *ck, const char *name) {
    int lo = 0, hi = ck->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, c = strcmp(ck->t[mid].name, name);
        if (c == 0) return &ck->t[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

const char *rt_checkpoint_meta(const rt_checkpoint *ck, const char *key) {
    for (int i = 0; i < ck->n_meta; i++)
        if (!strcmp(ck->meta[2 * i], key)) return ck->meta[2 * i + 1];
    return NULL;
}

/* A JSON number that is an integer in [0, 2^53]. */
static bool json_uint(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || d != floor(d)) return false;
    *out = (uint64_t)d;
    return true;
}

static int parse_dtype(const cJSON *e, const char *name, const char *tn, ir_dtype *dt, char *err, size_t cap) {
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    if (!cJSON_IsString(d)) return fail(err, cap, "%s: tensor '%s': missing \"dtype\"", name, tn);
    for (int t = 0; t < IR_DTYPE_COUNT; t++)
        if (st_names[t] && !strcmp(st_names[t], d->valuestring)) return *dt = (ir_dtype)t, 0;
    return fail(err, cap, "%s: tensor '%s': unknown dtype \"%s\" (supported: F32, I32, F64, U8)", name, tn,
                d->valuestring);
}

static int parse_shape(const cJSON *e, const char *name, const char *tn, ir_shape *s, char *err, size_t cap) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(e, "shape");
    int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
    bool ok = n >= 0 && n <= IR_MAX_RANK;
    s->rank = ok ? n : 0;
    for (int i = 0; ok && i < n; i++) {
        uint64_t v = 0;
        ok = json_uint(cJSON_GetArrayItem(a, i), &v);
        s->dim[i] = (int64_t)v;
    }
    return ok ? 0 : fail(err, cap, "%s: tensor '%s': bad \"shape\" (an array of at most %d non-negative integers)",
                         name, tn, IR_MAX_RANK);
}

static int parse_offsets(const cJSON *e, const char *name, const char *tn, span *sp, char *err, size_t cap) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    bool ok = cJSON_IsArray(a) && cJSON_GetArraySize(a) == 2 && json_uint(cJSON_GetArrayItem(a, 0), &sp->begin) &&
              json_uint(cJSON_GetArrayItem(a, 1), &sp->end) && sp->begin <= sp->end;
    return ok ? 0 : fail(err, cap, "%s: tensor '%s': bad \"data_offsets\" (two integers, begin <= end)", name, tn);
}

/* Bytes the shape needs, saturating at UINT64_MAX. */
static uint64_t shape_bytes(const ir_shape *s, ir_dtype dt) {
    unsigned __int128 b = ir_dtype_size(dt);
    for (int i = 0; i < s->rank; i++) {
        b *= (uint64_t)s->dim[i];
        if (b > UINT64_MAX) b = UINT64_MAX;
    }
    return (uint64_t)b;
}

static int parse_entry(const cJSON *e, const char *name, uint64_t data_len, rt_ck_tensor *t, span *sp, char *err,
                       size_t cap) {
    const char *tn = e->string;
    char sb[160];
    if (!cJSON_IsObject(e)) return fail(err, cap, "%s: tensor '%s': entry is not a JSON object", name, tn);
    if (parse_dtype(e, name, tn, &t->dtype, err, cap) < 0 || parse_shape(e, name, tn, &t->shape, err, cap) < 0 ||
        parse_offsets(e, name, tn, sp, err, cap) < 0)
        return -1;
    uint64_t want = shape_bytes(&t->shape, t->dtype);
    if (sp->end - sp->begin != want)
        return fail(err, cap, "%s: tensor '%s': data_offsets [%llu, %llu) do not match shape %s of %s (%llu bytes)",
                    name, tn, (unsigned long long)sp->begin, (unsigned long long)sp->end,
                    shape_str(&t->shape, sb, sizeof sb), st_names[t->dtype], (unsigned long long)want);
    if (sp->end > data_len)
        return fail(err, cap, "%s: tensor '%s': data_offsets [%llu, %llu) exceed the data section (%llu bytes)",
                    name, tn, (unsigned long long)sp->begin, (unsigned long long)sp->end,
                    (unsigned long long)data_len);
    t->name = strdup(tn);
    return t->name ? 0 : fail(err, cap, "%s: out of memory", name);
}

static int parse_meta(rt_checkpoint *ck, const cJSON *m, const char *name, char *err, size_t cap) {
    int n = cJSON_IsObject(m) ? cJSON_GetArraySize(m) : -1;
    for (const cJSON *kv = n >= 0 ? m->child : NULL; kv; kv = kv->next)
        if (!cJSON_IsString(kv)) n = -1;
    if (n < 0) return fail(err, cap, "%s: \"__metadata__\" must map strings to strings", name);
    ck->meta = calloc((size_t)(2 * n + 1), sizeof(char *));
    if (!ck->meta) return fail(err, cap, "%s: out of memory", name);
    for (const cJSON *kv = m->child; kv; kv = kv->next, ck->n_meta++) {
        ck->meta[2 * ck->n_meta] = strdup(kv->string);
        ck->meta[2 * ck->n_meta + 1] = strdup(kv->valuestring);
        if (!ck->meta[2 * ck->n_meta] || !ck->meta[2 * ck->n_meta + 1]) return fail(err, cap, "%s: out of memory", name);
    }
    return 0;
}

static int by_begin(const void *a, const void *b) {
    const span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* The spans, sorted by begin, must tile [0, data_len) without gaps or overlaps. */
static int check_coverage(const rt_checkpoint *ck, span *sp, uint64_t data_len, const char *name, char *err,
                          size_t cap) {
    qsort(sp, (size_t)ck->n, sizeof *sp, by_begin);
    uint64_t pos = 0;
    int prev = -1;
    for (int k = 0; k < ck->n; k++) {
        if (sp[k].begin == sp[k].end) continue;
        if (sp[k].begin < pos)
            return fail(err, cap, "%s: tensors '%s' [%llu, %llu) and '%s' [%llu, %llu) overlap", name,
                        ck->t[sp[prev].index].name, (unsigned long long)sp[prev].begin,
                        (unsigned long long)sp[prev].end, ck->t[sp[k].index].name, (unsigned long long)sp[k].begin,
                        (unsigned long long)sp[k].end);
        if (sp[k].begin > pos) break;
        pos = sp[k].end, prev = k;
    }
    if (pos != data_len) {
        uint64_t next = data_len;
        for (int k = 0; k < ck->n; k++)
            if (sp[k].begin > pos && sp[k].begin < next) next = sp[k].begin;
        return fail(err, cap, "%s: data bytes [%llu, %llu) belong to no tensor", name, (unsigned long long)pos,
                    (unsigned long long)next);
    }
    return 0;
}

static int by_tensor_name(const void *a, const void *b) {
    return strcmp(((const rt_ck_tensor *)a)->name, ((const rt_ck_tensor *)b)->name);
}

/* Copies each tensor's bytes into its own (aligned) allocation, then sorts by name. */
static int take_data(rt_checkpoint *ck, const span *by_index, const unsigned char *data, const char *name, char *err,
                     size_t cap) {
    for (int i = 0; i < ck->n; i++) {
        size_t n = (size_t)(by_index[i].end - by_index[i].begin);
        void *d = malloc(n ? n : 1);
        if (!d) return fail(err, cap, "%s: out of memory", name);
        memcpy(d, data + by_index[i].begin, n);
        ck->t[i].data = d;
    }
    qsort(ck->t, (size_t)ck->n, sizeof *ck->t, by_tensor_name);
    for (int i = 1; i < ck->n; i++)
        if (!strcmp(ck->t[i - 1].name, ck->t[i].name))
            return fail(err, cap, "%s: tensor '%s' appears twice", name, ck->t[i].name);
    return 0;
}

static int parse_entries(rt_checkpoint *ck, const cJSON *root, const unsigned char *data, uint64_t data_len,
                         const char *name, char *err, size_t cap) {
    int n = cJSON_GetArraySize(root);
    ck->t = calloc((size_t)n + 1, sizeof *ck->t);
    span *sp = calloc((size_t)n + 1, sizeof *sp), *by_index = calloc((size_t)n + 1, sizeof *sp);
    int rc = (!ck->t || !sp || !by_index) ? fail(err, cap, "%s: out of memory", name) : 0;
    for (const cJSON *e = root->child; e && rc == 0; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) {
            rc = ck->meta ? fail(err, cap, "%s: \"__metadata__\" appears twice", name) : parse_meta(ck, e, name, err, cap);
            continue;
        }
        rc = parse_entry(e, name, data_len, &ck->t[ck->n], &sp[ck->n], err, cap);
        sp[ck->n].index = ck->n;
        by_index[ck->n] = sp[ck->n];
        if (rc == 0) ck->n++;
    }
    if (rc == 0) rc = check_coverage(ck, sp, data_len, name, err, cap);
    if (rc == 0) rc = take_data(ck, by_index, data, name, err, cap);
    free(sp);
    free(by_index);
    return rc;
}

static cJSON *parse_header(const unsigned char *buf, size_t len, const char *name, uint64_t *hlen, char *err,
                           size_t cap) {
    if (len < 8) return fail(err, cap, "%s: truncated (%zu bytes, no 8-byte header length)", name, len), NULL;
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--) h = h << 8 | buf[i];
    if (h > MAX_HEADER)
        return fail(err, cap, "%s: header length %llu exceeds the 100 MiB limit (not a safetensors file?)", name,
                    (unsigned long long)h), NULL;
    if (h > len - 8)
        return fail(err, cap, "%s: header length %llu exceeds the file size (%zu bytes)", name, (unsigned long long)h,
                    len), NULL;
    const char *text = (const char *)buf + 8, *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, (size_t)h, &end, 0);
    if (!root) {
        size_t at = end ? (size_t)(end - text) : 0;
        return fail(err, cap, "%s: header is not valid JSON (error at byte %zu of the header)", name, at), NULL;
    }
    while (end < text + h && (*end == ' ' || *end == '\n' || *end == '\t' || *end == '\r' || *end == 0)) end++;
    if (end != text + h || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return fail(err, cap, "%s: header is not one JSON object", name), NULL;
    }
    *hlen = h;
    return root;
}

rt_checkpoint *rt_checkpoint_load_mem(const void *buf, size_t len, const char *name, char *err, size_t cap) {
    uint64_t hlen;
    cJSON *root = parse_header(buf, len, name, &hlen, err, cap);
    if (!root) return NULL;
    rt_checkpoint *ck = calloc(1, sizeof *ck);
    const unsigned char *data = (const unsigned char *)buf + 8 + hlen;
    if (!ck || parse_entries(ck, root, data, len - 8 - hlen, name, err, cap) < 0) {
        if (!ck) fail(err, cap, "%s: out of memory", name);
        rt_checkpoint_free(ck);
        ck = NULL;
    }
    cJSON_Delete(root);
    return ck;
}

rt_checkpoint *rt_checkpoint_load(const char *path, char *err, size_t cap) {
    size_t len;
    unsigned char *buf = rt_read_file(path, &len, err, cap);
    if (!buf) return NULL;
    rt_checkpoint *ck = rt_checkpoint_load_mem(buf, len, path, err, cap);
    free(buf);
    return ck;
}
