/* tensor_files.c - host tensors, IDX and NPY readers, the NPY writer, whole files. */
#include "../ir/outfile.h"
#include "data_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

int rt_data_fail(char *err, size_t cap, const char *fmt, ...) {
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
const char *rt_dims_str(const ir_shape *s, int from, char *buf, size_t cap) {
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
        return rt_data_fail(err, cap, "%s: cannot open: out of memory", path);
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
    if (got < 0) return rt_data_fail(err, cap, "%s: corrupt gzip data: %s", name, s->zerr);
    if (got < 4) return rt_data_fail(err, cap, "%s: truncated (expected 4 bytes of header, got %lld)", name, (long long)got);
    *type = h[2];
    if (h[0] || h[1] || !idx_elem_size(h[2]) || h[3] == 0)
        return rt_data_fail(err, cap, "%s: not an IDX file (bad magic 0x%08x)", name, be32(h));
    if (h[3] > IR_MAX_RANK)
        return rt_data_fail(err, cap, "%s: IDX file has %d dimensions (at most %d supported)", name, h[3], IR_MAX_RANK);
    int rank = h[3];
    got = src_read(s, h + 4, 4 * rank);
    if (got < 0) return rt_data_fail(err, cap, "%s: corrupt gzip data: %s", name, s->zerr);
    if (got < 4 * rank)
        return rt_data_fail(err, cap, "%s: truncated (expected %d bytes of header, got %lld)", name, 4 + 4 * rank,
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
        return rt_data_fail(err, cap, "%s: dimensions %s exceed the limit of 2^31 elements", name,
                    rt_dims_str(&out->shape, 0, dims, sizeof dims));
    int64_t need = n * idx_elem_size(type), room = s->limit - (4 + 4 * out->shape.rank);
    if (need > room && !s->compressed)
        return rt_data_fail(err, cap, "%s: truncated (expected %lld bytes of data, got %lld)", name, (long long)need,
                    (long long)(room < 0 ? 0 : room));
    if (need > room)
        return rt_data_fail(err, cap, "%s: dimensions %s need %lld bytes, more than the file can hold", name,
                    rt_dims_str(&out->shape, 0, dims, sizeof dims), (long long)need);
    unsigned char *raw = malloc(need ? (size_t)need : 1);
    if (!raw) return rt_data_fail(err, cap, "%s: out of memory for %lld bytes", name, (long long)need);
    int64_t got = src_read(s, raw, need);
    if (got != need) {
        free(raw);
        if (got < 0) return rt_data_fail(err, cap, "%s: corrupt gzip data: %s", name, s->zerr);
        return rt_data_fail(err, cap, "%s: truncated (expected %lld bytes of data, got %lld)", name, (long long)need,
                    (long long)got);
    }
    if (type == IDX_U8) {
        out->data = raw;
        return 0;
    }
    out->data = malloc(n ? (size_t)n * 4 : 1);
    if (out->data) idx_convert(type, raw, n, out->data);
    free(raw);
    return out->data ? 0 : rt_data_fail(err, cap, "%s: out of memory", name);
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
            rt_data_fail(err, cap, "%s: cannot read: %s", path, k < 0 ? strerror(errno) : "file shrank while reading");
            free(buf);
            close(fd);
            return NULL;
        }
        got += (size_t)k;
    }
    close(fd);
    if (!buf) return rt_data_fail(err, cap, "%s: out of memory", path), NULL;
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
    if (!out->data) return rt_data_fail(err, cap, "%s: out of memory", name);
    if (size == (int)ir_dtype_size(out->dtype)) {
        memcpy(out->data, p, (size_t)n * size);
        return 0;
    }
    int32_t *d = out->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = size == 1 ? (int8_t)p[i] : (int64_t)le64(p + 8 * i);
        if (v < INT32_MIN || v > INT32_MAX) {
            rt_tensor_free(out);
            return rt_data_fail(err, cap, "%s: int64 value %lld at index %lld does not fit in i32", name, (long long)v,
                        (long long)i);
        }
        d[i] = (int32_t)v;
    }
    return 0;
}

static int npy_parse(const unsigned char *buf, size_t len, const char *name, rt_tensor *out, char *err,
                     size_t cap) {
    memset(out, 0, sizeof *out);
    if (len < 10 || memcmp(buf, "\x93NUMPY", 6)) return rt_data_fail(err, cap, "%s: not an NPY file (bad magic)", name);
    if (buf[6] < 1 || buf[6] > 3)
        return rt_data_fail(err, cap, "%s: unsupported NPY version %d.%d", name, buf[6], buf[7]);
    size_t hl = buf[8] | (size_t)buf[9] << 8, off = 10;
    if (buf[6] > 1) {
        if (len < 12) return rt_data_fail(err, cap, "%s: truncated (expected 12 bytes of preamble, got %zu)", name, len);
        hl = (uint32_t)(buf[8] | buf[9] << 8 | buf[10] << 16 | (uint32_t)buf[11] << 24);
        off = 12;
    }
    if (hl > len - off)
        return rt_data_fail(err, cap, "%s: truncated (header of %zu bytes, file has %zu after the preamble)", name, hl,
                    len - off);
    npy_header h = {0};
    cursor c = {(const char *)buf + off, (const char *)buf + off + hl};
    const char *why = parse_npy_dict(&c, &h);
    if (why) return rt_data_fail(err, cap, "%s: bad NPY header: %s", name, why);
    if (h.fortran) return rt_data_fail(err, cap, "%s: fortran_order arrays are not supported (save in C order)", name);
    int t = 0, nt = (int)(sizeof npy_types / sizeof npy_types[0]);
    while (t < nt && strcmp(npy_types[t].descr, h.descr)) t++;
    if (t == nt) return rt_data_fail(err, cap, "%s: unsupported dtype '%s' (supported: <f4 <f8 <i4 <i8 |u1 |i1)", name, h.descr);
    char dims[128];
    int64_t n = bounded_numel(&h.shape);
    if (n < 0)
        return rt_data_fail(err, cap, "%s: shape %s exceeds the limit of 2^31 elements", name,
                    rt_dims_str(&h.shape, 0, dims, sizeof dims));
    int64_t need = n * npy_types[t].size, have = (int64_t)(len - off - hl);
    if (need > have)
        return rt_data_fail(err, cap, "%s: truncated (expected %lld bytes of data, got %lld)", name, (long long)need,
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
    return rt_data_fail(err, cap, "%s: neither an NPY nor an IDX file (it starts with %02x %02x %02x %02x)", path,
                magic[0], magic[1], magic[2], magic[3]);
}
