/* data.c - IDX and NPY readers, atomic file writes, datasets bound to model inputs, the batch loader. */
#include "../ir/outfile.h"
#include "data.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static int fail(char *err, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && cap) vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return -1;
}

void rt_tensor_free(rt_tensor *t) {
    free(t->data);
    memset(t, 0, sizeof *t);
}

int64_t rt_tensor_bytes(const rt_tensor *t) {
    return ir_shape_numel(&t->shape) * (int64_t)ir_dtype_size(t->dtype);
}

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* Product of dims, or -1 when it exceeds RT_MAX_ELEMENTS (no overflow). */
static int64_t bounded_numel(const ir_shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        if (s->dim[i] < 0) return -1;
        if (s->dim[i] == 0) return 0;
    }
    for (int i = 0; i < s->rank; i++) {
        if (s->dim[i] > RT_MAX_ELEMENTS || n * s->dim[i] > RT_MAX_ELEMENTS) return -1;
        n *= s->dim[i];
    }
    return n;
}

/* "32x32"; "scalars" for rank 0 */
static const char *dims_str(const ir_shape *s, int from, char *buf, size_t cap) {
    size_t k = 0;
    if (from >= s->rank) snprintf(buf, cap, "scalars");
    for (int i = from; i < s->rank && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, i > from ? "x%lld" : "%lld", (long long)s->dim[i]);
    return buf;
}

/* ---- byte sources: a gzip-or-raw file (gzread) or a buffer (inflate) ---- */

typedef struct {
    gzFile gz;
    const unsigned char *mem;
    size_t len, pos;
    z_stream zs;
    bool compressed;      /* gzip: limit is a bound, not the size */
    bool inflating, zs_live, zfailed;
    int64_t limit;  /* most bytes this source can yield */
    char zerr[96];
} src;

static bool is_gzip(const unsigned char *p, size_t n) { return n >= 2 && p[0] == 0x1f && p[1] == 0x8b; }

/* Deflate never compresses better than 1032:1. */
static int64_t gz_limit(int64_t compressed) { return compressed > INT64_MAX / 1032 ? INT64_MAX : compressed * 1032; }

static void src_mem(src *s, const void *buf, size_t len) {
    memset(s, 0, sizeof *s);
    s->mem = buf;
    s->len = len;
    s->limit = (int64_t)len;
    if (is_gzip(buf, len)) {
        s->inflating = s->compressed = true;
        s->limit = gz_limit((int64_t)len);
        s->zs_live = inflateInit2(&s->zs, 15 + 16) == Z_OK;
        s->zfailed = !s->zs_live;
        s->zs.next_in = (unsigned char *)s->mem;
        s->zs.avail_in = len > UINT_MAX ? UINT_MAX : (unsigned)len;
    }
}

static int64_t inflate_read(src *s, unsigned char *dst, int64_t n) {
    int64_t got = 0;
    while (got < n && !s->zfailed) {
        if (s->zs.avail_in == 0) break;
        s->zs.next_out = dst + got;
        s->zs.avail_out = n - got > UINT_MAX ? UINT_MAX : (unsigned)(n - got);
        unsigned before = s->zs.avail_out;
        int rc = inflate(&s->zs, Z_NO_FLUSH);
        got += before - s->zs.avail_out;
        if (rc == Z_STREAM_END) {
            if (s->zs.avail_in < 2 || !is_gzip(s->zs.next_in, s->zs.avail_in)) break;
            inflateReset(&s->zs); /* another gzip member follows */
        } else if (rc != Z_OK) {
            snprintf(s->zerr, sizeof s->zerr, "%s", s->zs.msg ? s->zs.msg : "corrupt deflate data");
            s->zfailed = true;
        }
    }
    return got;
}

/* Reads up to n bytes; returns how many were read (short at the end), -1 on corrupt gzip data. */
static int64_t src_read(src *s, void *dst, int64_t n) {
    int64_t got = 0;
    if (s->gz) {
        while (got < n) {
            int k = gzread(s->gz, (char *)dst + got, n - got > (1 << 30) ? 1u << 30 : (unsigned)(n - got));
            if (k <= 0) {
                int code;
                const char *msg = gzerror(s->gz, &code);
                if (k < 0 || (code != Z_OK && code != Z_BUF_ERROR)) {
                    snprintf(s->zerr, sizeof s->zerr, "%s", msg);
                    return -1;
                }
                break;
            }
            got += k;
        }
    } else if (s->inflating) {
        got = inflate_read(s, dst, n);
        if (s->zfailed) return -1;
    } else {
        got = (int64_t)(s->len - s->pos) < n ? (int64_t)(s->len - s->pos) : n;
        memcpy(dst, s->mem + s->pos, (size_t)got);
        s->pos += (size_t)got;
    }
    return got;
}

static void src_close(src *s) {
    if (s->gz) gzclose(s->gz);
    if (s->zs_live) inflateEnd(&s->zs);
}

static int src_open(src *s, const char *path, char *err, size_t cap) {
    memset(s, 0, sizeof *s);
    struct stat st;
    unsigned char magic[2] = {0};
    int fd = ir_open_regular(path, "open", &st, err, cap);
    if (fd < 0) return -1;
    ssize_t k = pread(fd, magic, 2, 0);
    s->compressed = is_gzip(magic, k > 0 ? (size_t)k : 0);
    s->limit = s->compressed ? gz_limit(st.st_size) : st.st_size;
    s->gz = gzdopen(fd, "rb");
    if (!s->gz) {
        close(fd);
        return fail(err, cap, "%s: cannot open: out of memory", path);
    }
    gzbuffer(s->gz, 1 << 17);
    return 0;
}

/* ---- IDX ---- */

typedef enum { IDX_U8 = 0x08, IDX_I8 = 0x09, IDX_I16 = 0x0B, IDX_I32 = 0x0C, IDX_F32 = 0x0D, IDX_F64 = 0x0E } idx_type;

static int idx_elem_size(int type) {
    switch (type) {
    case IDX_U8: case IDX_I8: return 1;
    case IDX_I16: return 2;
    case IDX_I32: case IDX_F32: return 4;
    case IDX_F64: return 8;
    default: return 0;
    }
}

/* Big-endian raw elements -> out's dtype (U8, I32 or F32). */
static void idx_convert(int type, const unsigned char *raw, int64_t n, void *out) {
    int32_t *i32 = out;
    float *f32 = out;
    for (int64_t i = 0; i < n; i++) {
        const unsigned char *p = raw + i * idx_elem_size(type);
        switch (type) {
        case IDX_I8: i32[i] = (int8_t)p[0]; break;
        case IDX_I16: i32[i] = (int16_t)(p[0] << 8 | p[1]); break;
        case IDX_I32: i32[i] = (int32_t)be32(p); break;
        case IDX_F32: { uint32_t u = be32(p); memcpy(&f32[i], &u, 4); break; }
        case IDX_F64: {
            uint64_t u = (uint64_t)be32(p) << 32 | be32(p + 4);
            double d;
            memcpy(&d, &u, 8);
            f32[i] = (float)d;
            break;
        }
        }
    }
}

static int idx_header(src *s, const char *name, rt_tensor *out, int *type, char *err, size_t cap) {
    unsigned char h[4 + 4 * IR_MAX_RANK];
    int64_t got = src_read(s, h, 4);
    if (got < 0) return fail(err, cap, "%s: corrupt gzip data: %s", name, s->zerr);
    if (got < 4) return fail(err, cap, "%s: truncated (expected 4 bytes of header, got %lld)", name, (long long)got);
    *type = h[2];
    if (h[0] || h[1] || !idx_elem_size(h[2]) || h[3] == 0)
        return fail(err, cap, "%s: not an IDX file (bad magic 0x%08x)", name, be32(h));
    if (h[3] > IR_MAX_RANK)
        return fail(err, cap, "%s: IDX file has %d dimensions (at most %d supported)", name, h[3], IR_MAX_RANK);
    int rank = h[3];
    got = src_read(s, h + 4, 4 * rank);
    if (got < 0) return fail(err, cap, "%s: corrupt gzip data: %s", name, s->zerr);
    if (got < 4 * rank)
        return fail(err, cap, "%s: truncated (expected %d bytes of header, got %lld)", name, 4 + 4 * rank,
                    (long long)got + 4);
    out->shape.rank = rank;
    for (int i = 0; i < rank; i++) out->shape.dim[i] = be32(h + 4 + 4 * i);
    out->dtype = *type == IDX_U8 ? IR_U8 : (*type == IDX_F32 || *type == IDX_F64) ? IR_F32 : IR_I32;
    return 0;
}

static int idx_read(src *s, const char *name, rt_tensor *out, char *err, size_t cap) {
    int type = 0;
    char dims[128];
    memset(out, 0, sizeof *out);
    if (idx_header(s, name, out, &type, err, cap) < 0) return -1;
    int64_t n = bounded_numel(&out->shape);
    if (n < 0)
        return fail(err, cap, "%s: dimensions %s exceed the limit of 2^31 elements", name,
                    dims_str(&out->shape, 0, dims, sizeof dims));
    int64_t need = n * idx_elem_size(type), room = s->limit - (4 + 4 * out->shape.rank);
    if (need > room && !s->compressed)
        return fail(err, cap, "%s: truncated (expected %lld bytes of data, got %lld)", name, (long long)need,
                    (long long)(room < 0 ? 0 : room));
    if (need > room)
        return fail(err, cap, "%s: dimensions %s need %lld bytes, more than the file can hold", name,
                    dims_str(&out->shape, 0, dims, sizeof dims), (long long)need);
    unsigned char *raw = malloc(need ? (size_t)need : 1);
    if (!raw) return fail(err, cap, "%s: out of memory for %lld bytes", name, (long long)need);
    int64_t got = src_read(s, raw, need);
    if (got != need) {
        free(raw);
        if (got < 0) return fail(err, cap, "%s: corrupt gzip data: %s", name, s->zerr);
        return fail(err, cap, "%s: truncated (expected %lld bytes of data, got %lld)", name, (long long)need,
                    (long long)got);
    }
    if (type == IDX_U8) {
        out->data = raw;
        return 0;
    }
    out->data = malloc(n ? (size_t)n * 4 : 1);
    if (out->data) idx_convert(type, raw, n, out->data);
    free(raw);
    return out->data ? 0 : fail(err, cap, "%s: out of memory", name);
}

int rt_load_idx(const char *path, rt_tensor *out, char *err, size_t cap) {
    src s;
    memset(out, 0, sizeof *out);
    if (src_open(&s, path, err, cap) < 0) return -1;
    int rc = idx_read(&s, path, out, err, cap);
    src_close(&s);
    return rc;
}

int rt_load_idx_mem(const void *buf, size_t len, const char *name, rt_tensor *out, char *err, size_t cap) {
    src s;
    src_mem(&s, buf, len);
    int rc = idx_read(&s, name, out, err, cap);
    src_close(&s);
    return rc;
}

/* ---- whole files ---- */

unsigned char *rt_read_file(const char *path, size_t *len, char *err, size_t cap) {
    struct stat st;
    int fd = ir_open_regular(path, "open", &st, err, cap);
    if (fd < 0) return NULL;
    unsigned char *buf = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (buf && got < (size_t)st.st_size) {
        ssize_t k = read(fd, buf + got, (size_t)st.st_size - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            fail(err, cap, "%s: cannot read: %s", path, k < 0 ? strerror(errno) : "file shrank while reading");
            free(buf);
            close(fd);
            return NULL;
        }
        got += (size_t)k;
    }
    close(fd);
    if (!buf) return fail(err, cap, "%s: out of memory", path), NULL;
    buf[got] = 0;
    *len = got;
    return buf;
}

/* ---- NPY ---- */

typedef struct {
    const char *p, *end;
} cursor;

static void skip_ws(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static bool eat(cursor *c, char ch) {
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) return c->p++, true;
    return false;
}

/* 'text' or "text" into buf */
static bool parse_pystr(cursor *c, char *buf, size_t cap) {
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return false;
    char q = *c->p++;
    size_t k = 0;
    while (c->p < c->end && *c->p != q) {
        if (k + 1 >= cap) return false;
        buf[k++] = *c->p++;
    }
    buf[k] = 0;
    return c->p < c->end && c->p++;
}

/* (d0, d1, ...) with an optional trailing comma */
static bool parse_pyshape(cursor *c, ir_shape *s) {
    s->rank = 0;
    if (!eat(c, '(')) return false;
    while (!eat(c, ')')) {
        skip_ws(c);
        if (s->rank == IR_MAX_RANK || c->p >= c->end || *c->p < '0' || *c->p > '9') return false;
        int64_t v = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            if (v > ((int64_t)1 << 50)) return false;
            v = v * 10 + (*c->p++ - '0');
        }
        s->dim[s->rank++] = v;
        if (!eat(c, ',')) {
            if (!eat(c, ')')) return false;
            break;
        }
    }
    return true;
}

static bool parse_pybool(cursor *c, bool *v) {
    skip_ws(c);
    size_t left = (size_t)(c->end - c->p);
    if (left >= 4 && !memcmp(c->p, "True", 4)) return c->p += 4, *v = true, true;
    if (left >= 5 && !memcmp(c->p, "False", 5)) return c->p += 5, *v = false, true;
    return false;
}

typedef struct {
    char descr[16];
    bool fortran;
    ir_shape shape;
    unsigned seen;
} npy_header;

/* {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } */
static const char *parse_npy_dict(cursor *c, npy_header *h) {
    char key[32];
    if (!eat(c, '{')) return "expected '{'";
    while (!eat(c, '}')) {
        if (!parse_pystr(c, key, sizeof key)) return "expected a quoted key";
        if (!eat(c, ':')) return "expected ':'";
        if (!strcmp(key, "descr")) {
            if (!parse_pystr(c, h->descr, sizeof h->descr)) return "bad 'descr' value";
            h->seen |= 1;
        } else if (!strcmp(key, "fortran_order")) {
            if (!parse_pybool(c, &h->fortran)) return "bad 'fortran_order' value";
            h->seen |= 2;
        } else if (!strcmp(key, "shape")) {
            if (!parse_pyshape(c, &h->shape)) return "bad 'shape' value (at most 6 dimensions)";
            h->seen |= 4;
        } else {
            return "unexpected key";
        }
        if (!eat(c, ',')) {
            if (!eat(c, '}')) return "expected ',' or '}'";
            break;
        }
    }
    return h->seen == 7 ? NULL : "missing 'descr', 'fortran_order' or 'shape'";
}

static const struct { const char *descr; ir_dtype dtype; int size; } npy_types[] = {
    {"<f4", IR_F32, 4}, {"<f8", IR_F64, 8}, {"<i4", IR_I32, 4}, {"<i8", IR_I32, 8},
    {"|u1", IR_U8, 1},  {"<u1", IR_U8, 1},  {"|i1", IR_I32, 1},
};

static int npy_copy(const unsigned char *p, int size, const char *name, rt_tensor *out, int64_t n, char *err,
                    size_t cap) {
    out->data = malloc(n ? (size_t)n * ir_dtype_size(out->dtype) : 1);
    if (!out->data) return fail(err, cap, "%s: out of memory", name);
    if (size == (int)ir_dtype_size(out->dtype)) {
        memcpy(out->data, p, (size_t)n * size);
        return 0;
    }
    int32_t *d = out->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = size == 1 ? (int8_t)p[i] : (int64_t)le64(p + 8 * i);
        if (v < INT32_MIN || v > INT32_MAX) {
            rt_tensor_free(out);
            return fail(err, cap, "%s: int64 value %lld at index %lld does not fit in i32", name, (long long)v,
                        (long long)i);
        }
        d[i] = (int32_t)v;
    }
    return 0;
}

static int npy_parse(const unsigned char *buf, size_t len, const char *name, rt_tensor *out, char *err,
                     size_t cap) {
    memset(out, 0, sizeof *out);
    if (len < 10 || memcmp(buf, "\x93NUMPY", 6)) return fail(err, cap, "%s: not an NPY file (bad magic)", name);
    if (buf[6] < 1 || buf[6] > 3)
        return fail(err, cap, "%s: unsupported NPY version %d.%d", name, buf[6], buf[7]);
    size_t hl = buf[8] | (size_t)buf[9] << 8, off = 10;
    if (buf[6] > 1) {
        if (len < 12) return fail(err, cap, "%s: truncated (expected 12 bytes of preamble, got %zu)", name, len);
        hl = (uint32_t)(buf[8] | buf[9] << 8 | buf[10] << 16 | (uint32_t)buf[11] << 24);
        off = 12;
    }
    if (hl > len - off)
        return fail(err, cap, "%s: truncated (header of %zu bytes, file has %zu after the preamble)", name, hl,
                    len - off);
    npy_header h = {0};
    cursor c = {(const char *)buf + off, (const char *)buf + off + hl};
    const char *why = parse_npy_dict(&c, &h);
    if (why) return fail(err, cap, "%s: bad NPY header: %s", name, why);
    if (h.fortran) return fail(err, cap, "%s: fortran_order arrays are not supported (save in C order)", name);
    int t = 0, nt = (int)(sizeof npy_types / sizeof npy_types[0]);
    while (t < nt && strcmp(npy_types[t].descr, h.descr)) t++;
    if (t == nt) return fail(err, cap, "%s: unsupported dtype '%s' (supported: <f4 <f8 <i4 <i8 |u1 |i1)", name, h.descr);
    char dims[128];
    int64_t n = bounded_numel(&h.shape);
    if (n < 0)
        return fail(err, cap, "%s: shape %s exceeds the limit of 2^31 elements", name,
                    dims_str(&h.shape, 0, dims, sizeof dims));
    int64_t need = n * npy_types[t].size, have = (int64_t)(len - off - hl);
    if (need > have)
        return fail(err, cap, "%s: truncated (expected %lld bytes of data, got %lld)", name, (long long)need,
                    (long long)have);
    out->dtype = npy_types[t].dtype;
    out->shape = h.shape;
    return npy_copy(buf + off + hl, npy_types[t].size, name, out, n, err, cap);
}

int rt_load_npy_mem(const void *buf, size_t len, const char *name, rt_tensor *out, char *err, size_t cap) {
    return npy_parse(buf, len, name, out, err, cap);
}

int rt_load_npy(const char *path, rt_tensor *out, char *err, size_t cap) {
    size_t len;
    memset(out, 0, sizeof *out);
    unsigned char *buf = rt_read_file(path, &len, err, cap);
    if (!buf) return -1;
    int rc = npy_parse(buf, len, path, out, err, cap);
    free(buf);
    return rc;
}

int rt_save_npy(const char *path, const rt_tensor *t, char *err, size_t cap) {
    static const char *const descr[IR_DTYPE_COUNT] = {[IR_F32] = "<f4", [IR_I32] = "<i4", [IR_F64] = "<f8",
                                                      [IR_U8] = "|u1"};
    char hdr[256], shape[160] = "";
    size_t k = 0;
    for (int i = 0; i < t->shape.rank; i++)
        k += (size_t)snprintf(shape + k, sizeof shape - k, "%lld,%s", (long long)t->shape.dim[i],
                              i + 1 < t->shape.rank ? " " : "");
    if (t->shape.rank > 1) shape[k - 1] = 0; /* (2, 3) but (5,) */
    int hl = snprintf(hdr + 10, sizeof hdr - 10, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                      descr[t->dtype], shape);
    int total = (10 + hl + 1 + 63) / 64 * 64;
    memset(hdr + 10 + hl, ' ', (size_t)(total - 10 - hl - 1));
    hdr[total - 1] = '\n';
    memcpy(hdr, "\x93NUMPY\x01\x00", 8);
    hdr[8] = (char)((total - 10) & 0xff);
    hdr[9] = (char)((total - 10) >> 8);
    const void *parts[2] = {hdr, t->data};
    size_t sizes[2] = {(size_t)total, (size_t)rt_tensor_bytes(t)};
    return ir_write_file_atomic(path, parts, sizes, 2, err, cap);
}

int rt_load_tensor_file(const char *path, rt_tensor *out, char *err, size_t cap) {
    unsigned char magic[6] = {0};
    memset(out, 0, sizeof *out);
    struct stat st;
    int fd = ir_open_regular(path, "open", &st, err, cap);
    if (fd < 0) return -1;
    ssize_t got = pread(fd, magic, sizeof magic, 0);
    size_t k = got > 0 ? (size_t)got : 0;
    close(fd);
    if (k == 6 && !memcmp(magic, "\x93NUMPY", 6)) return rt_load_npy(path, out, err, cap);
    if (k < 4 || (magic[0] == 0 && magic[1] == 0) || is_gzip(magic, k)) return rt_load_idx(path, out, err, cap);
    return fail(err, cap, "%s: neither an NPY nor an IDX file (it starts with %02x %02x %02x %02x)", path,
                magic[0], magic[1], magic[2], magic[3]);
}

/* ---- datasets ---- */

struct rt_dataset {
    int n;
    int64_t count;
    rt_tensor *t; /* t[i]: [count, per-example of input i] */
    char **source; /* source[i]: the file of input i */
};

void rt_dataset_free(rt_dataset *ds) {
    if (!ds) return;
    for (int i = 0; i < ds->n; i++) rt_tensor_free(&ds->t[i]), free(ds->source[i]);
    free(ds->t);
    free(ds->source);
    free(ds);
}

int64_t rt_dataset_count(const rt_dataset *ds) { return ds->count; }
int rt_dataset_inputs(const rt_dataset *ds) { return ds->n; }
const rt_tensor *rt_dataset_tensor(const rt_dataset *ds, int i) { return &ds->t[i]; }
const char *rt_dataset_source(const rt_dataset *ds, int i) { return ds->source[i]; }

int rt_dataset_check_range(const rt_dataset *ds, int i, int64_t limit, const char *what, char *err, size_t cap) {
    const rt_tensor *t = &ds->t[i];
    if (t->dtype != IR_I32) return 0;
    int64_t per = t->shape.dim[0] ? ir_shape_numel(&t->shape) / t->shape.dim[0] : 1;
    const int32_t *v = t->data;
    for (int64_t k = 0, n = ir_shape_numel(&t->shape); k < n; k++)
        if (v[k] < 0 || v[k] >= limit)
            return fail(err, cap, "%s: %s %d of example %lld is outside [0, %lld)", ds->source[i], what, (int)v[k],
                        (long long)(k / per), (long long)limit);
    return 0;
}

/* Float inputs take float data or u8 pixels (scaled by 1/255): integers of
 * other widths are not images (an i8 pixel above 127 would turn negative).
 * i32 inputs (labels, ids) take i32 or u8. */
static bool convertible(ir_dtype from, ir_dtype to) {
    if (from == to) return true;
    if (to == IR_F32 || to == IR_F64) return from != IR_I32;
    return to == IR_I32 && from == IR_U8;
}

/* The shapes without their 1-sized axes: [28, 28] is [28, 28, 1]. */
static bool same_squeezed(const ir_shape *a, const ir_shape *b) {
    int i = 0, j = 0;
    for (;;) {
        while (i < a->rank && a->dim[i] == 1) i++;
        while (j < b->rank && b->dim[j] == 1) j++;
        if (i == a->rank || j == b->rank) return i == a->rank && j == b->rank;
        if (a->dim[i++] != b->dim[j++]) return false;
    }
}

static double elem(const void *p, ir_dtype t, int64_t i) {
    switch (t) {
    case IR_F32: return ((const float *)p)[i];
    case IR_I32: return ((const int32_t *)p)[i];
    case IR_F64: return ((const double *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

/* Copies src into dst's dtype; u8 -> float scales by 1/255. */
static void convert(const rt_tensor *src, rt_tensor *dst, int64_t n) {
    if (src->dtype == dst->dtype) {
        memcpy(dst->data, src->data, (size_t)rt_tensor_bytes(dst));
        return;
    }
    double scale = src->dtype == IR_U8 && dst->dtype != IR_I32 ? 1.0 / 255.0 : 1.0;
    for (int64_t i = 0; i < n; i++) {
        double v = elem(src->data, src->dtype, i) * scale;
        switch (dst->dtype) {
        case IR_F32: ((float *)dst->data)[i] = (float)v; break;
        case IR_F64: ((double *)dst->data)[i] = v; break;
        case IR_I32: ((int32_t *)dst->data)[i] = (int32_t)v; break;
        default: ((uint8_t *)dst->data)[i] = (uint8_t)v; break;
        }
    }
}

/* Checks src (examples on axis 0) against the input and fills dst. */
static int bind_input(const rt_tensor *src, const char *name, const rt_input_spec *in, rt_tensor *dst, char *err,
                      size_t cap) {
    char b1[128], b2[128];
    if (src->shape.rank < 1) return fail(err, cap, "%s: holds a scalar, not a list of examples", name);
    ir_shape ex = {.rank = src->shape.rank - 1};
    memcpy(ex.dim, src->shape.dim + 1, sizeof(int64_t) * (size_t)ex.rank);
    if (!same_squeezed(&ex, &in->shape))
        return fail(err, cap, "%s: examples are %s but input '%s' wants %s", name, dims_str(&src->shape, 1, b1, sizeof b1),
                    in->name, ir_type_str(in->dtype, &in->shape, b2, sizeof b2));
    if (!convertible(src->dtype, in->dtype))
        return fail(err, cap, "%s: holds %s values but input '%s' wants %s%s", name, ir_dtype_name(src->dtype),
                    in->name, ir_type_str(in->dtype, &in->shape, b2, sizeof b2),
                    src->dtype == IR_I32 ? " (float data, or u8 pixels scaled by 1/255)" : "");
    if (in->shape.rank + 1 > IR_MAX_RANK) return fail(err, cap, "input '%s' has too many dimensions", in->name);
    dst->dtype = in->dtype;
    dst->shape.rank = in->shape.rank + 1;
    dst->shape.dim[0] = src->shape.dim[0];
    memcpy(dst->shape.dim + 1, in->shape.dim, sizeof(int64_t) * (size_t)in->shape.rank);
    dst->data = malloc((size_t)rt_tensor_bytes(dst) + 1);
    if (!dst->data) return fail(err, cap, "%s: out of memory", name);
    convert(src, dst, ir_shape_numel(&dst->shape));
    return 0;
}

static rt_dataset *dataset_new(int n) {
    rt_dataset *ds = calloc(1, sizeof *ds);
    if (ds) ds->t = calloc((size_t)(n ? n : 1), sizeof *ds->t), ds->source = calloc((size_t)(n ? n : 1), sizeof(char *));
    if (ds && (!ds->t || !ds->source)) free(ds->t), free(ds->source), free(ds), ds = NULL;
    if (ds) ds->n = n;
    return ds;
}

rt_dataset *rt_dataset_from_tensors(const rt_tensor *tensors, const char *const *names, const rt_input_spec *inputs,
                                    int n_inputs, char *err, size_t cap) {
    rt_dataset *ds = dataset_new(n_inputs);
    if (!ds) return fail(err, cap, "out of memory"), NULL;
    for (int i = 0; i < n_inputs; i++) {
        if (bind_input(&tensors[i], names[i], &inputs[i], &ds->t[i], err, cap) < 0) goto bad;
        if (!(ds->source[i] = strdup(names[i]))) {
            fail(err, cap, "out of memory");
            goto bad;
        }
        int64_t n = tensors[i].shape.dim[0];
        if (i > 0 && n != ds->count) {
            fail(err, cap, "%s has %lld examples but %s has %lld", names[i], (long long)n, names[0],
                 (long long)ds->count);
            goto bad;
        }
        ds->count = n;
    }
    return ds;
bad:
    rt_dataset_free(ds);
    return NULL;
}

/* dir/base, or dir/base.gz when only that exists */
static char *quartet_path(const char *dir, const char *base) {
    size_t n = strlen(dir) + strlen(base) + 8;
    char *p = malloc(n);
    if (!p) return NULL;
    snprintf(p, n, "%s/%s", dir, base);
    if (access(p, F_OK) == 0) return p;
    snprintf(p, n, "%s/%s.gz", dir, base);
    return p;
}

static int find_image_label(const rt_input_spec *inputs, int n, int *img, int *lab, char *err, size_t cap) {
    *img = *lab = -1;
    for (int i = 0; i < n; i++) {
        if (inputs[i].dtype == IR_F32 && *img < 0) *img = i;
        else if (inputs[i].dtype == IR_I32 && *lab < 0) *lab = i;
    }
    if (n != 2 || *img < 0 || *lab < 0)
        return fail(err, cap, "--data needs a model with two inputs, one f32 (images) and one i32 (labels); "
                              "bind inputs with name=FILE instead");
    return 0;
}

rt_dataset *rt_dataset_from_dir(const char *dir, const char *split, const rt_input_spec *inputs, int n_inputs,
                                char *err, size_t cap) {
    int img, lab;
    if (!dir) dir = RT_DEFAULT_DATA_DIR;
    if (strcmp(split, "train") && strcmp(split, "test"))
        return fail(err, cap, "unknown split '%s' (train or test)", split), NULL;
    if (find_image_label(inputs, n_inputs, &img, &lab, err, cap) < 0) return NULL;
    const char *pre = !strcmp(split, "train") ? "train" : "t10k";
    char bi[64], bl[64];
    snprintf(bi, sizeof bi, "%s-images-idx3-ubyte", pre);
    snprintf(bl, sizeof bl, "%s-labels-idx1-ubyte", pre);
    char *pi = quartet_path(dir, bi), *pl = quartet_path(dir, bl);
    rt_tensor t[2] = {{0}, {0}};
    rt_dataset *ds = NULL;
    if (!pi || !pl) fail(err, cap, "out of memory");
    else if (rt_load_idx(pi, &t[0], err, cap) == 0 && rt_load_idx(pl, &t[1], err, cap) == 0) {
        if (t[0].shape.dim[0] != t[1].shape.dim[0])
            fail(err, cap, "%s has %lld labels but %s has %lld images", pl, (long long)t[1].shape.dim[0], pi,
                 (long long)t[0].shape.dim[0]);
        else {
            rt_tensor ordered[2];
            const char *names[2];
            ordered[img] = t[0], names[img] = pi;
            ordered[lab] = t[1], names[lab] = pl;
            ds = rt_dataset_from_tensors(ordered, names, inputs, n_inputs, err, cap);
        }
    }
    rt_tensor_free(&t[0]);
    rt_tensor_free(&t[1]);
    free(pi);
    free(pl);
    return ds;
}

/* Which binding names input `name`; -1 if none. Also checks the syntax of all of them. */
static int find_binding(const char *const *b, int n, const char *name, char *err, size_t cap) {
    int found = -1;
    for (int j = 0; j < n; j++) {
        const char *eq = strchr(b[j], '=');
        if (!eq || eq == b[j] || !eq[1]) return fail(err, cap, "'%s': expected NAME=FILE", b[j]) - 1;
        if ((size_t)(eq - b[j]) == strlen(name) && !strncmp(b[j], name, strlen(name))) {
            if (found >= 0) return fail(err, cap, "input '%s' is bound twice", name) - 1;
            found = j;
        }
    }
    return found;
}

static int check_bindings(const char *const *b, int nb, const rt_input_spec *inputs, int n, int *which, char *err,
                          size_t cap) {
    for (int i = 0; i < n; i++) {
        which[i] = find_binding(b, nb, inputs[i].name, err, cap);
        if (which[i] < -1) return -1;
        if (which[i] < 0) return fail(err, cap, "input '%s' has no data (bind it with %s=FILE)", inputs[i].name,
                                      inputs[i].name);
    }
    for (int j = 0; j < nb; j++) {
        int used = 0;
        for (int i = 0; i < n; i++) used |= which[i] == j;
        if (!used) {
            size_t k = strcspn(b[j], "=");
            return fail(err, cap, "no model input named '%.*s'", (int)k, b[j]);
        }
    }
    return 0;
}

rt_dataset *rt_dataset_from_bindings(const char *const *bindings, int n_bindings, const rt_input_spec *inputs,
                                     int n_inputs, char *err, size_t cap) {
    int *which = calloc((size_t)n_inputs + 1, sizeof *which);
    rt_tensor *t = calloc((size_t)n_inputs + 1, sizeof *t);
    const char **names = calloc((size_t)n_inputs + 1, sizeof *names);
    rt_dataset *ds = NULL;
    int i = 0;
    if (!which || !t || !names) fail(err, cap, "out of memory");
    else if (check_bindings(bindings, n_bindings, inputs, n_inputs, which, err, cap) == 0) {
        for (; i < n_inputs; i++) {
            names[i] = strchr(bindings[which[i]], '=') + 1;
            if (rt_load_tensor_file(names[i], &t[i], err, cap) < 0) break;
        }
        if (i == n_inputs) ds = rt_dataset_from_tensors(t, names, inputs, n_inputs, err, cap);
    }
    for (int j = 0; t && j < n_inputs; j++) rt_tensor_free(&t[j]);
    free(which);
    free(t);
    free(names);
    return ds;
}

/* ---- shuffle ---- */

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, bound) by Lemire's multiply-and-reject. */
static uint64_t uniform(uint64_t *state, uint64_t bound) {
    unsigned __int128 m = (unsigned __int128)splitmix64(state) * bound;
    uint64_t lo = (uint64_t)m;
    if (lo < bound) {
        uint64_t t = -bound % bound;
        while (lo < t) {
            m = (unsigned __int128)splitmix64(state) * bound;
            lo = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

/* state = splitmix64 output of seed, xor epoch; then Fisher-Yates from the top. */
void rt_permutation(uint64_t seed, int64_t epoch, int64_t n, int64_t *perm) {
    uint64_t s = seed;
    uint64_t state = splitmix64(&s) ^ (uint64_t)epoch;
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)uniform(&state, (uint64_t)i + 1);
        int64_t x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
}

/* ---- loader ---- */

enum { SLOT_FREE, SLOT_READY, SLOT_HELD };

struct rt_loader {
    const rt_dataset *ds;
    rt_loader_opts o;
    int64_t steps;        /* per epoch */
    int64_t *perm;        /* order of the epoch perm_epoch */
    int64_t perm_epoch;
    int64_t *row_bytes;   /* per input: bytes of one example */
    rt_batch slot[2];
    int state[2];
    int64_t next_epoch, next_step; /* position the worker fills next */
    int fill, take;       /* slot the worker fills next, slot the caller takes next */
    bool running, stop;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

int64_t rt_loader_steps_per_epoch(const rt_loader *l) { return l->steps; }

/* Assembles batch (epoch, step) into b; runs on the worker thread. */
static void fill_batch(rt_loader *l, rt_batch *b, int64_t epoch, int64_t step) {
    int64_t n = l->ds->count, B = l->o.batch;
    if (l->perm_epoch != epoch) {
        if (l->o.shuffle) rt_permutation(l->o.seed, epoch, n, l->perm);
        else for (int64_t i = 0; i < n; i++) l->perm[i] = i;
        l->perm_epoch = epoch;
    }
    int64_t first = step * B + l->o.row_begin;
    int64_t valid = n - first < l->o.rows ? n - first : l->o.rows;
    if (valid < 0) valid = 0;
    b->epoch = epoch, b->step = step, b->valid = valid;
    for (int i = 0; i < l->ds->n; i++) {
        int64_t rb = l->row_bytes[i];
        char *dst = b->data[i];
        const char *src = l->ds->t[i].data;
        for (int64_t r = 0; r < valid; r++) memcpy(dst + r * rb, src + l->perm[first + r] * rb, (size_t)rb);
        memset(dst + valid * rb, 0, (size_t)((l->o.rows - valid) * rb));
    }
}

static void *worker(void *arg) {
    rt_loader *l = arg;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->stop && l->state[l->fill] != SLOT_FREE) pthread_cond_wait(&l->cv, &l->mu);
        if (l->stop) break;
        int s = l->fill;
        int64_t e = l->next_epoch, st = l->next_step;
        pthread_mutex_unlock(&l->mu);
        fill_batch(l, &l->slot[s], e, st);
        pthread_mutex_lock(&l->mu);
        l->state[s] = SLOT_READY;
        l->fill ^= 1;
        if (++l->next_step == l->steps) l->next_step = 0, l->next_epoch++;
        pthread_cond_broadcast(&l->cv);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

static void stop_worker(rt_loader *l) {
    if (!l->running) return;
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    l->running = l->stop = false;
}

static int loader_alloc(rt_loader *l, char *err, size_t cap) {
    const rt_dataset *ds = l->ds;
    l->perm = malloc(sizeof(int64_t) * (size_t)(ds->count + 1));
    l->row_bytes = calloc((size_t)ds->n + 1, sizeof(int64_t));
    if (!l->perm || !l->row_bytes) return fail(err, cap, "loader: out of memory");
    for (int s = 0; s < 2; s++) {
        l->slot[s].n = ds->n;
        l->slot[s].data = calloc((size_t)ds->n + 1, sizeof(void *));
        if (!l->slot[s].data) return fail(err, cap, "loader: out of memory");
        for (int i = 0; i < ds->n; i++) {
            const rt_tensor *t = &ds->t[i];
            l->row_bytes[i] = (int64_t)ir_dtype_size(t->dtype);
            for (int d = 1; d < t->shape.rank; d++) l->row_bytes[i] *= t->shape.dim[d];
            l->slot[s].data[i] = malloc((size_t)(l->row_bytes[i] * l->o.rows) + 1);
            if (!l->slot[s].data[i]) return fail(err, cap, "loader: out of memory");
        }
    }
    return 0;
}

rt_loader *rt_loader_new(const rt_dataset *ds, const rt_loader_opts *opts, char *err, size_t cap) {
    rt_loader_opts o = *opts;
    if (o.batch <= 0) return fail(err, cap, "loader: batch must be positive, got %lld", (long long)o.batch), NULL;
    if (o.rows == 0) o.rows = o.batch - o.row_begin;
    if (o.row_begin < 0 || o.rows <= 0 || o.row_begin + o.rows > o.batch)
        return fail(err, cap, "loader: rows [%lld, %lld) are not inside a batch of %lld", (long long)o.row_begin,
                    (long long)(o.row_begin + o.rows), (long long)o.batch), NULL;
    int64_t steps = o.keep_partial ? (ds->count + o.batch - 1) / o.batch : ds->count / o.batch;
    if (steps == 0)
        return fail(err, cap, "loader: the dataset has %lld examples, fewer than one batch of %lld",
                    (long long)ds->count, (long long)o.batch), NULL;
    rt_loader *l = calloc(1, sizeof *l);
    if (!l) return fail(err, cap, "loader: out of memory"), NULL;
    l->ds = ds, l->o = o, l->steps = steps, l->perm_epoch = -1;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    if (loader_alloc(l, err, cap) < 0) {
        rt_loader_free(l);
        return NULL;
    }
    return l;
}

int rt_loader_seek(rt_loader *l, int64_t epoch, int64_t step, char *err, size_t cap) {
    if (epoch < 0 || step < 0 || step >= l->steps)
        return fail(err, cap, "loader: cannot seek to epoch %lld step %lld (%lld steps per epoch)", (long long)epoch,
                    (long long)step, (long long)l->steps);
    stop_worker(l);
    l->state[0] = l->state[1] = SLOT_FREE;
    l->fill = l->take = 0;
    l->next_epoch = epoch, l->next_step = step;
    return 0;
}

const rt_batch *rt_loader_next(rt_loader *l) {
    if (!l->running) {
        if (pthread_create(&l->thread, NULL, worker, l) != 0) { /* no thread: fill here */
            int s = l->take;
            fill_batch(l, &l->slot[s], l->next_epoch, l->next_step);
            if (++l->next_step == l->steps) l->next_step = 0, l->next_epoch++;
            l->take ^= 1, l->fill = l->take;
            return &l->slot[s];
        }
        l->running = true;
    }
    pthread_mutex_lock(&l->mu);
    if (l->state[l->take ^ 1] == SLOT_HELD) l->state[l->take ^ 1] = SLOT_FREE;
    pthread_cond_broadcast(&l->cv);
    while (l->state[l->take] != SLOT_READY) pthread_cond_wait(&l->cv, &l->mu);
    int s = l->take;
    l->state[s] = SLOT_HELD;
    l->take ^= 1;
    pthread_mutex_unlock(&l->mu);
    return &l->slot[s];
}

void rt_loader_free(rt_loader *l) {
    if (!l) return;
    stop_worker(l);
    for (int s = 0; s < 2; s++) {
        for (int i = 0; l->slot[s].data && i < l->ds->n; i++) free(l->slot[s].data[i]);
        free(l->slot[s].data);
    }
    free(l->perm);
    free(l->row_bytes);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
}
