/* plan.c - the .mgx plan file (docs/plan-format.md): explicit little-endian
 * encoding, one CRC32 per section, every count, index and length checked
 * before use, atomic writes. */
#include "outfile.h"
#include "plan.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* Sections, in file order; the tag of each is its number. */
enum { SEC_STRINGS = 1, SEC_GRAPH, SEC_MODEL, SEC_TRAIN, SEC_DEVICES, SEC_MEMORY, SEC_SCHEDULE, SEC_SOURCES, SEC_LAST = SEC_SOURCES };
static const char *const section_names[SEC_LAST + 1] = {
    [SEC_STRINGS] = "strings", [SEC_GRAPH] = "graph",       [SEC_MODEL] = "model",
    [SEC_TRAIN] = "train",     [SEC_DEVICES] = "devices",   [SEC_MEMORY] = "memory",
    [SEC_SCHEDULE] = "schedule", [SEC_SOURCES] = "sources",
};
enum { HEADER_BYTES = 16, SECTION_HEADER_BYTES = 16 };
#define NO_STRING UINT32_C(0xFFFFFFFF)

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) abort();
    return p;
}

static uint32_t crc_of(const uint8_t *p, size_t n) { return (uint32_t)crc32_z(crc32(0L, Z_NULL, 0), p, n); }

/* ================= writing ================= */

typedef struct {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *src, size_t n) {
    if (b->n + n > b->cap) {
        while (b->n + n > b->cap) b->cap = b->cap ? 2 * b->cap : 256;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_u8(buf *b, unsigned v) { put(b, &(uint8_t){(uint8_t)v}, 1); }

static void put_u32(buf *b, uint32_t v) {
    uint8_t x[4] = {v, v >> 8, v >> 16, v >> 24};
    put(b, x, 4);
}

static void put_u64(buf *b, uint64_t v) {
    put_u32(b, (uint32_t)v);
    put_u32(b, (uint32_t)(v >> 32));
}

static void put_i32(buf *b, int v) { put_u32(b, (uint32_t)v); }
static void put_i64(buf *b, int64_t v) { put_u64(b, (uint64_t)v); }

static void put_f64(buf *b, double v) {
    uint64_t bits;
    memcpy(&bits, &v, 8);
    put_u64(b, bits);
}

/* The string table being collected: strings by first use, a hash for lookups. */
typedef struct {
    const char **s;
    uint32_t n, cap;
    uint32_t *slot; /* 0 = empty, else index + 1 */
    uint32_t n_slots;
} wstrings;

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static void slot_insert(wstrings *t, uint32_t id) {
    uint32_t h = hash_str(t->s[id]) & (t->n_slots - 1);
    while (t->slot[h]) h = (h + 1) & (t->n_slots - 1);
    t->slot[h] = id + 1;
}

static void rehash(wstrings *t) {
    free(t->slot);
    t->n_slots = t->n_slots ? 2 * t->n_slots : 64;
    t->slot = calloc(t->n_slots, sizeof *t->slot);
    if (!t->slot) abort();
    for (uint32_t i = 0; i < t->n; i++) slot_insert(t, i);
}

static uint32_t str_id(wstrings *t, const char *s) {
    if (!s) return NO_STRING;
    if (2 * (t->n + 1) > t->n_slots) rehash(t);
    for (uint32_t h = hash_str(s) & (t->n_slots - 1); t->slot[h]; h = (h + 1) & (t->n_slots - 1))
        if (!strcmp(t->s[t->slot[h] - 1], s)) return t->slot[h] - 1;
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->s = realloc(t->s, t->cap * sizeof *t->s);
        if (!t->s) abort();
    }
    t->s[t->n] = s;
    slot_insert(t, t->n);
    return t->n++;
}

static void put_str(buf *b, wstrings *t, const char *s) { put_u32(b, str_id(t, s)); }

/* Number of leading attribute slots that hold anything (the rest are zero). */
static int used_iattrs(const ir_node *n) {
    int k = IR_MAX_IATTR;
    while (k > 0 && n->iattr[k - 1] == 0) k--;
    return k;
}

static int used_fattrs(const ir_node *n) {
    int k = IR_MAX_FATTR;
    uint64_t bits = 0;
    while (k > 0 && (memcpy(&bits, &n->fattr[k - 1], 8), bits == 0)) k--;
    return k;
}

static void enc_node(buf *b, wstrings *t, const ir_node *n) {
    put_str(b, t, ir_ops[n->op].name); /* by name: rows of ops.def may move */
    put_u32(b, n->dtype), put_u32(b, (uint32_t)n->shape.rank);
    for (int k = 0; k < n->shape.rank; k++) put_i64(b, n->shape.dim[k]);
    put_u32(b, (uint32_t)n->n_in);
    for (int k = 0; k < n->n_in; k++) put_u32(b, (uint32_t)n->in[k]);
    int ni = used_iattrs(n), nf = used_fattrs(n);
    put_u8(b, (unsigned)ni);
    for (int k = 0; k < ni; k++) put_i64(b, n->iattr[k]);
    put_u8(b, (unsigned)nf);
    for (int k = 0; k < nf; k++) put_f64(b, n->fattr[k]);
    put_str(b, t, n->name), put_str(b, t, n->loc.file), put_i32(b, n->loc.line), put_i32(b, n->loc.col);
    put_u32(b, n->programs), put_i32(b, n->device), put_i32(b, n->stream), put_i32(b, n->origin);
    put_i64(b, n->offset);
    if (n->op == OP_FUSED) { /* version 6 (issue 14): the program, ops by name */
        put_u32(b, (uint32_t)n->fused->n);
        for (int j = 0; j < n->fused->n; j++) {
            const ir_finstr *in = &n->fused->ins[j];
            put_str(b, t, ir_ops[in->op].name), put_i32(b, in->a), put_i32(b, in->b), put_f64(b, in->alpha);
        }
    }
}

static void enc_graph(buf *b, wstrings *t, const ir_module *m) {
    put_u32(b, (uint32_t)m->g.n);
    for (int i = 0; i < m->g.n; i++) enc_node(b, t, &m->g.nodes[i]);
}

static void put_i32s(buf *b, const int *v, int n) {
    put_u32(b, (uint32_t)n);
    for (int k = 0; k < n; k++) put_i32(b, v[k]);
}

static void enc_model(buf *b, wstrings *t, const ir_module *m) {
    put_str(b, t, m->model_name), put_str(b, t, m->source_file);
    put_i32s(b, m->inputs, m->n_inputs);
    put_i32(b, m->loss);
    put_u32(b, (uint32_t)m->n_metrics);
    for (int k = 0; k < m->n_metrics; k++) put_str(b, t, m->metrics[k].name), put_i32(b, m->metrics[k].node);
    put_u32(b, (uint32_t)m->n_outputs);
    for (int k = 0; k < m->n_outputs; k++) put_str(b, t, m->outputs[k].name), put_i32(b, m->outputs[k].node);
    put_i32s(b, m->params, m->n_params);
    put_u8(b, m->grads != NULL);
    for (int k = 0; m->grads && k < m->n_params; k++) put_i32(b, m->grads[k]);
}

static void enc_train(buf *b, wstrings *t, const ir_module *m) {
    (void)t;
    const ir_optimizer *o = &m->opt;
    put_u8(b, m->has_train), put_u32(b, o->kind);
    const double f[7] = {o->lr, o->beta1, o->beta2, o->epsilon, o->weight_decay, o->momentum, o->rho};
    for (int k = 0; k < 7; k++) put_f64(b, f[k]);
    put_u8(b, o->nesterov), put_i64(b, m->batch_per_replica), put_i64(b, m->global_batch);
    const ir_lr_schedule *s = &o->schedule;
    put_u32(b, s->kind), put_i64(b, s->decay_steps), put_i64(b, s->warmup_steps);
    put_f64(b, s->alpha), put_f64(b, s->warmup_target), put_f64(b, s->decay_rate), put_u8(b, s->staircase);
    put_u32(b, (uint32_t)s->n_boundaries);
    for (int k = 0; k < s->n_boundaries; k++) put_i64(b, s->boundaries[k]);
    for (int k = 0; k <= s->n_boundaries; k++) put_f64(b, s->values[k]);
    put_i64(b, m->epochs);
    put_f64(b, o->initial_accumulator_value), put_f64(b, o->clipnorm), put_f64(b, o->global_clipnorm);
}

static void enc_devices(buf *b, wstrings *t, const ir_module *m) {
    put_u32(b, (uint32_t)m->n_devices);
    for (int d = 0; d < m->n_devices; d++) put_str(b, t, m->devices[d].name), put_i32(b, m->devices[d].index);
    put_u32(b, m->cross_device), put_i64(b, m->bucket_bytes), put_u32(b, m->sparse_grads);
    put_u8(b, m->no_fuse);
    put_u32(b, (uint32_t)m->n_buckets);
    for (int k = 0; k < m->n_buckets; k++) {
        put_i64(b, m->buckets[k].bytes);
        put_i32s(b, m->buckets[k].grads, m->buckets[k].n_grads);
    }
}

static void enc_memory(buf *b, wstrings *t, const ir_module *m) {
    (void)t;
    put_u8(b, m->arena_bytes != NULL);
    for (int d = 0; m->arena_bytes && d < m->n_devices; d++)
        put_i64(b, m->arena_bytes[d]), put_i64(b, m->unplanned_bytes ? m->unplanned_bytes[d] : 0);
}

static void enc_schedule(buf *b, wstrings *t, const ir_module *m) {
    (void)t;
    put_u32(b, (uint32_t)m->n_events), put_u32(b, (uint32_t)m->n_sched);
    for (int s = 0; s < m->n_sched; s++) {
        const ir_sched_list *l = &m->sched[s];
        put_u32(b, (uint32_t)l->program), put_i32(b, l->device), put_u32(b, (uint32_t)l->stream);
        put_u32(b, (uint32_t)l->n);
        for (int k = 0; k < l->n; k++) put_u8(b, l->items[k].kind), put_i32(b, l->items[k].arg);
    }
}

static void enc_sources(buf *b, wstrings *t, const ir_module *m) {
    put_u32(b, (uint32_t)m->n_sources);
    for (int k = 0; k < m->n_sources; k++) put_str(b, t, m->sources[k].path), put_str(b, t, m->sources[k].text);
}

static void enc_strings(buf *b, const wstrings *t) {
    put_u32(b, t->n);
    for (uint32_t i = 0; i < t->n; i++) {
        size_t len = strlen(t->s[i]);
        put_u32(b, (uint32_t)len);
        put(b, t->s[i], len);
    }
}

static void put_section(buf *out, int tag, const buf *payload) {
    put_u32(out, (uint32_t)tag), put_u64(out, payload->n), put_u32(out, crc_of(payload->p, payload->n));
    put(out, payload->p, payload->n);
}

typedef void (*encoder)(buf *b, wstrings *t, const ir_module *m);
static const encoder encoders[SEC_LAST + 1] = {
    [SEC_GRAPH] = enc_graph,     [SEC_MODEL] = enc_model,       [SEC_TRAIN] = enc_train,
    [SEC_DEVICES] = enc_devices, [SEC_MEMORY] = enc_memory,     [SEC_SCHEDULE] = enc_schedule,
    [SEC_SOURCES] = enc_sources,
};

/* The whole file in memory. */
static buf encode(const ir_module *m) {
    wstrings t = {0};
    buf sec[SEC_LAST + 1] = {{0}}, out = {0};
    for (int s = SEC_GRAPH; s <= SEC_LAST; s++) encoders[s](&sec[s], &t, m);
    enc_strings(&sec[SEC_STRINGS], &t);
    put(&out, MGX_MAGIC, 8);
    put_u32(&out, MGX_VERSION), put_u32(&out, SEC_LAST);
    for (int s = SEC_STRINGS; s <= SEC_LAST; s++) put_section(&out, s, &sec[s]), free(sec[s].p);
    free(t.s), free(t.slot);
    return out;
}


int mgx_write(const ir_module *m, const char *path, char *err, size_t cap) {
    buf b = encode(m);
    const void *parts[1] = {b.p};
    size_t sizes[1] = {b.n};
    int rc = ir_write_file_atomic(path, parts, sizes, 1, err, cap);
    free(b.p);
    return rc;
}

/* ================= reading ================= */

typedef struct {
    const uint8_t *p; /* the current section's payload */
    size_t n, pos;
    const char *file, *sec;
    char *err;
    size_t cap;
    bool failed;
    ir_module *m;
    const char **strs;
    uint32_t n_strs;
} rd;

void mgx_one_line(char *msg) {
    for (unsigned char *p = (unsigned char *)msg; *p; p++)
        if (*p < 0x20 || *p == 0x7f) *p = '?';
}

static bool fail(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(rd *r, const char *fmt, ...) {
    if (r->failed) return false;
    r->failed = true;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mgx_one_line(msg);
    if (r->sec) snprintf(r->err, r->cap, "%s: section '%s': %s", r->file, r->sec, msg);
    else snprintf(r->err, r->cap, "%s: %s", r->file, msg);
    return false;
}

static bool need(rd *r, size_t k) {
    if (r->failed) return false;
    if (r->n - r->pos >= k) return true;
    return fail(r, "payload ends early (%zu bytes needed at offset %zu, %zu remain)", k, r->pos, r->n - r->pos);
}

static uint32_t le32(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t le64(const uint8_t *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

static unsigned get_u8(rd *r) { return need(r, 1) ? r->p[r->pos++] : 0; }

static uint32_t get_u32(rd *r) {
    if (!need(r, 4)) return 0;
    r->pos += 4;
    return le32(r->p + r->pos - 4);
}

static uint64_t get_u64(rd *r) {
    if (!need(r, 8)) return 0;
    r->pos += 8;
    return le64(r->p + r->pos - 8);
}

static int get_i32(rd *r) { return (int)(int32_t)get_u32(r); }
static int64_t get_i64(rd *r) { return (int64_t)get_u64(r); }

static double get_f64(rd *r) {
    uint64_t bits = get_u64(r);
    double v;
    memcpy(&v, &bits, 8);
    return v;
}

static bool get_bool(rd *r, const char *what) {
    unsigned v = get_u8(r);
    if (v > 1) fail(r, "%s flag is %u, not 0 or 1", what, v);
    return v == 1;
}

/* A count of items of at least `item` bytes each, bounded by what remains. */
static int get_count(rd *r, size_t item, const char *what) {
    uint32_t c = get_u32(r);
    if (r->failed) return 0;
    if (c > INT_MAX / 2 || c > (r->n - r->pos) / item)
        return fail(r, "%s count %u does not fit in the %zu remaining bytes", what, c, r->n - r->pos), 0;
    return (int)c;
}

/* An enum value below `count`. */
static unsigned get_enum(rd *r, unsigned count, const char *what) {
    uint32_t v = get_u32(r);
    if (!r->failed && v >= count) fail(r, "%s %u out of range (0..%u)", what, v, count - 1);
    return r->failed ? 0 : v;
}

static const char *get_str(rd *r) {
    uint32_t i = get_u32(r);
    if (r->failed || i == NO_STRING) return NULL;
    if (i >= r->n_strs) return fail(r, "string index %u out of range (%u strings)", i, r->n_strs), NULL;
    return r->strs[i];
}

static int *get_i32s(rd *r, int *n, const char *what) {
    *n = get_count(r, 4, what);
    int *v = xmalloc((size_t)*n * sizeof *v);
    for (int k = 0; k < *n; k++) v[k] = get_i32(r);
    return v;
}

static void dec_strings(rd *r) {
    int n = get_count(r, 4, "string");
    r->strs = xmalloc((size_t)n * sizeof *r->strs);
    for (int i = 0; i < n && !r->failed; i++) {
        uint32_t len = get_u32(r);
        if (!need(r, len)) return;
        if (memchr(r->p + r->pos, 0, len)) {
            fail(r, "string %d contains a NUL byte", i);
            return;
        }
        char *s = xmalloc((size_t)len + 1);
        memcpy(s, r->p + r->pos, len);
        s[len] = 0;
        r->strs[i] = ir_intern(r->m, s);
        r->n_strs = (uint32_t)i + 1;
        r->pos += len;
        free(s);
    }
}

/* dtype, rank and dims of node i; the byte size must fit in int64. */
static void get_type(rd *r, int i, ir_node *n) {
    n->dtype = get_enum(r, IR_DTYPE_COUNT, "dtype");
    uint32_t rank = get_u32(r);
    if (!r->failed && rank > IR_MAX_RANK) fail(r, "node %d: rank %u exceeds %d", i, rank, IR_MAX_RANK);
    n->shape.rank = r->failed ? 0 : (int)rank;
    int64_t bytes = (int64_t)ir_dtype_size(n->dtype);
    for (int k = 0; k < n->shape.rank && !r->failed; k++) {
        int64_t d = n->shape.dim[k] = get_i64(r);
        if (d < 0) fail(r, "node %d: dimension %d is negative (%lld)", i, k, (long long)d);
        else if (d && bytes > INT64_MAX / d) fail(r, "node %d: element count overflows", i);
        else bytes *= d;
    }
}

static void get_attrs(rd *r, int i, ir_node *n) {
    unsigned ni = get_u8(r);
    if (ni > IR_MAX_IATTR) fail(r, "node %d: %u integer attributes (at most %d)", i, ni, IR_MAX_IATTR);
    for (unsigned k = 0; k < ni && !r->failed; k++) n->iattr[k] = get_i64(r);
    unsigned nf = get_u8(r);
    if (nf > IR_MAX_FATTR) fail(r, "node %d: %u float attributes (at most %d)", i, nf, IR_MAX_FATTR);
    for (unsigned k = 0; k < nf && !r->failed; k++) n->fattr[k] = get_f64(r);
}

/* An op by its name in ops.def. */
static ir_op get_op(rd *r, int i) {
    const char *name = get_str(r);
    int op = name ? ir_op_from_name(name) : -1;
    if (!r->failed && op < 0)
        fail(r, "node %d: unknown primitive '%.40s%s' (compile the model again with this mgc)", i, name ? name : "",
             name && strlen(name) > 40 ? "..." : "");
    return op < 0 ? 0 : (ir_op)op;
}

/* The program of fused node i (issue 14): every instruction an op that may be
 * fused, with the operand count of its op, each operand an earlier register. */
static const ir_fused *get_program(rd *r, int i, int n_in) {
    ir_fused f = {.n = (int)get_u32(r)};
    if (r->failed) return NULL;
    if (f.n < 1 || f.n > IR_FUSED_MAX_INSTRS)
        return fail(r, "node %d: fused program of %d instructions (1..%d)", i, f.n, IR_FUSED_MAX_INSTRS), NULL;
    for (int j = 0; j < f.n && !r->failed; j++) {
        ir_finstr *in = &f.ins[j];
        const char *name = get_str(r);
        int op = name ? ir_op_from_name(name) : -1, arity = 0;
        in->a = get_i32(r), in->b = get_i32(r), in->alpha = get_f64(r);
        if (r->failed) break;
        if (op < 0 || !ir_fused_op_ok((ir_op)op, &arity))
            return fail(r, "node %d: fused instruction %d: '%.40s' is not an elementwise op that fuses", i, j,
                        name ? name : ""), NULL;
        in->op = (ir_op)op;
        int top = n_in + j;
        if (in->a < 0 || in->a >= top || (arity == 2 ? in->b < 0 || in->b >= top : in->b != -1))
            return fail(r, "node %d: fused instruction %d (%s): operands %d, %d are not among registers 0..%d", i, j,
                        name, in->a, in->b, top - 1), NULL;
    }
    return r->failed ? NULL : ir_fused_add(r->m, &f);
}

static void get_node(rd *r, int i) {
    ir_node n = {.op = get_op(r, i)};
    get_type(r, i, &n);
    n.n_in = get_count(r, 4, "input");
    int *in = xmalloc((size_t)n.n_in * sizeof *in);
    for (int k = 0; k < n.n_in && !r->failed; k++) {
        uint32_t j = get_u32(r);
        if (!r->failed && j >= (uint32_t)i) fail(r, "node %d input %d refers to node %u", i, k, j);
        in[k] = (int)j;
    }
    get_attrs(r, i, &n);
    n.name = get_str(r), n.loc.file = get_str(r), n.loc.line = get_i32(r), n.loc.col = get_i32(r);
    n.programs = get_u32(r), n.device = get_i32(r), n.stream = get_i32(r), n.origin = get_i32(r);
    n.offset = get_i64(r);
    if (n.op == OP_FUSED && !r->failed) n.fused = get_program(r, i, n.n_in);
    if (!r->failed) {
        ir_node *dst = ir_node_at(r->m, ir_add(r->m, n.op, in, n.n_in, n.loc));
        n.in = dst->in;
        *dst = n;
    }
    free(in);
}

static void dec_graph(rd *r) {
    int n = get_count(r, 50, "node");
    for (int i = 0; i < n && !r->failed; i++) get_node(r, i);
}

static void dec_model(rd *r) {
    ir_module *m = r->m;
    m->model_name = get_str(r), m->source_file = get_str(r);
    m->inputs = get_i32s(r, &m->n_inputs, "input");
    m->loss = get_i32(r);
    m->n_metrics = get_count(r, 8, "metric");
    m->metrics = xmalloc((size_t)m->n_metrics * sizeof *m->metrics);
    for (int k = 0; k < m->n_metrics; k++) m->metrics[k].name = get_str(r), m->metrics[k].node = get_i32(r);
    m->n_outputs = get_count(r, 8, "output");
    m->outputs = xmalloc((size_t)m->n_outputs * sizeof *m->outputs);
    for (int k = 0; k < m->n_outputs; k++) m->outputs[k].name = get_str(r), m->outputs[k].node = get_i32(r);
    m->params = get_i32s(r, &m->n_params, "param");
    if (get_bool(r, "gradients") && need(r, (size_t)m->n_params * 4)) {
        m->grads = xmalloc((size_t)m->n_params * sizeof *m->grads);
        for (int k = 0; k < m->n_params; k++) m->grads[k] = get_i32(r);
    }
}

static void dec_train(rd *r) {
    ir_module *m = r->m;
    ir_optimizer *o = &m->opt;
    m->has_train = get_bool(r, "training");
    o->kind = get_enum(r, OPT_COUNT, "optimizer");
    double *f[7] = {&o->lr, &o->beta1, &o->beta2, &o->epsilon, &o->weight_decay, &o->momentum, &o->rho};
    for (int k = 0; k < 7; k++) *f[k] = get_f64(r);
    o->nesterov = get_bool(r, "nesterov");
    m->batch_per_replica = get_i64(r), m->global_batch = get_i64(r);
    ir_lr_schedule *s = &o->schedule;
    s->kind = get_enum(r, LR_COUNT, "learning-rate schedule");
    s->decay_steps = get_i64(r), s->warmup_steps = get_i64(r);
    s->alpha = get_f64(r), s->warmup_target = get_f64(r), s->decay_rate = get_f64(r);
    s->staircase = get_bool(r, "staircase");
    s->n_boundaries = (int)get_u32(r);
    if (!r->failed && (unsigned)s->n_boundaries > IR_MAX_BOUNDARIES)
        fail(r, "%u schedule boundaries, at most %d", (unsigned)s->n_boundaries, IR_MAX_BOUNDARIES);
    if (r->failed) s->n_boundaries = 0;
    for (int k = 0; k < s->n_boundaries; k++) s->boundaries[k] = get_i64(r);
    for (int k = 0; k <= s->n_boundaries; k++) s->values[k] = get_f64(r);
    m->epochs = get_i64(r);
    o->initial_accumulator_value = get_f64(r), o->clipnorm = get_f64(r), o->global_clipnorm = get_f64(r);
}

static void dec_devices(rd *r) {
    ir_module *m = r->m;
    m->n_devices = get_count(r, 8, "device");
    m->devices = xmalloc((size_t)m->n_devices * sizeof *m->devices);
    for (int d = 0; d < m->n_devices; d++) m->devices[d].name = get_str(r), m->devices[d].index = get_i32(r);
    m->cross_device = get_enum(r, XDEV_COUNT, "cross-device algorithm");
    m->bucket_bytes = get_i64(r);
    m->sparse_grads = get_enum(r, SPARSE_COUNT, "sparse gradient choice");
    m->no_fuse = get_bool(r, "no-fuse");
    int n = get_count(r, 12, "bucket");
    m->buckets = calloc((size_t)n + 1, sizeof *m->buckets);
    if (!m->buckets) abort();
    for (int k = 0; k < n && !r->failed; k++, m->n_buckets++) {
        m->buckets[k].bytes = get_i64(r);
        m->buckets[k].grads = get_i32s(r, &m->buckets[k].n_grads, "bucket gradient");
    }
}

static void dec_memory(rd *r) {
    ir_module *m = r->m;
    if (!get_bool(r, "memory plan") || !need(r, (size_t)m->n_devices * 16)) return;
    m->arena_bytes = xmalloc((size_t)m->n_devices * sizeof *m->arena_bytes);
    m->unplanned_bytes = xmalloc((size_t)m->n_devices * sizeof *m->unplanned_bytes);
    for (int d = 0; d < m->n_devices; d++) m->arena_bytes[d] = get_i64(r), m->unplanned_bytes[d] = get_i64(r);
}

static void get_list(rd *r, ir_sched_list *l) {
    l->program = (int)get_enum(r, IR_PROGRAM_COUNT, "program");
    l->device = get_i32(r);
    l->stream = (int)get_enum(r, STREAM_COUNT, "stream");
    int n = get_count(r, 5, "schedule item");
    l->items = xmalloc((size_t)n * sizeof *l->items);
    l->cap = n;
    for (int k = 0; k < n && !r->failed; k++, l->n++) {
        unsigned kind = get_u8(r);
        if (kind > SCHED_WAIT) fail(r, "schedule item kind %u out of range", kind);
        l->items[k] = (ir_sched_item){(ir_sched_kind)kind, get_i32(r)};
    }
}

static void dec_schedule(rd *r) {
    ir_module *m = r->m;
    uint32_t events = get_u32(r);
    if (events > INT_MAX) fail(r, "event count %u out of range", events);
    m->n_events = (int)(events & INT_MAX);
    int n = get_count(r, 16, "schedule list");
    m->sched = calloc((size_t)n + 1, sizeof *m->sched);
    if (!m->sched) abort();
    for (int s = 0; s < n && !r->failed; s++, m->n_sched++) get_list(r, &m->sched[s]);
}

static void dec_sources(rd *r) {
    ir_module *m = r->m;
    m->n_sources = get_count(r, 8, "source");
    m->sources = xmalloc((size_t)m->n_sources * sizeof *m->sources);
    for (int k = 0; k < m->n_sources; k++) m->sources[k].path = get_str(r), m->sources[k].text = get_str(r);
}

typedef void (*decoder)(rd *r);
static const decoder decoders[SEC_LAST + 1] = {
    [SEC_STRINGS] = dec_strings, [SEC_GRAPH] = dec_graph,       [SEC_MODEL] = dec_model,
    [SEC_TRAIN] = dec_train,     [SEC_DEVICES] = dec_devices,   [SEC_MEMORY] = dec_memory,
    [SEC_SCHEDULE] = dec_schedule, [SEC_SOURCES] = dec_sources,
};

static bool check_header(rd *r, const uint8_t *data, size_t size) {
    if (size && memcmp(data, MGX_MAGIC, size < 8 ? size : 8)) return fail(r, "not an mgc plan (bad magic)");
    if (size < HEADER_BYTES) return fail(r, "truncated (header needs %d bytes, %zu remain)", HEADER_BYTES, size);
    uint32_t version = le32(data + 8), count = le32(data + 12);
    if (version != MGX_VERSION)
        return fail(r, "plan format version %u, this mgc reads version %d (compile the model again)", version,
                    MGX_VERSION);
    if (count != SEC_LAST) return fail(r, "plan has %u sections, this mgc reads %d", count, SEC_LAST);
    return true;
}

/* Frames, checks and decodes section `s` at *pos. */
static bool read_section(rd *r, int s, const uint8_t *data, size_t size, size_t *pos) {
    const char *name = section_names[s];
    if (size - *pos < SECTION_HEADER_BYTES)
        return fail(r, "truncated (section '%s' header needs %d bytes, %zu remain)", name, SECTION_HEADER_BYTES,
                    size - *pos);
    const uint8_t *h = data + *pos;
    uint32_t tag = le32(h), crc = le32(h + 12);
    uint64_t len = le64(h + 4);
    *pos += SECTION_HEADER_BYTES;
    if (tag != (uint32_t)s) return fail(r, "section %d has tag %u, expected %d ('%s')", s, tag, s, name);
    if (len > size - *pos)
        return fail(r, "truncated (section '%s' needs %llu bytes, %zu remain)", name, (unsigned long long)len,
                    size - *pos);
    r->sec = name;
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION /* fuzzers reach the decoders past the CRC */
    if (crc_of(data + *pos, len) != crc) return fail(r, "CRC mismatch");
#else
    (void)crc;
#endif
    r->p = data + *pos, r->n = len, r->pos = 0;
    decoders[s](r);
    if (!r->failed && r->pos != r->n) fail(r, "%zu unread bytes at the end", r->n - r->pos);
    r->sec = NULL;
    *pos += len;
    return !r->failed;
}

typedef struct {
    int count;
    char first[400];
} verify_log;

static void log_problem(void *ctx, const char *msg) {
    verify_log *v = ctx;
    if (v->count++ == 0) snprintf(v->first, sizeof v->first, "%s", msg);
}

ir_module *mgx_read_mem(const void *data, size_t size, const char *name, char *err, size_t cap) {
    rd r = {.file = name, .err = err, .cap = cap, .m = ir_module_new()};
    size_t pos = HEADER_BYTES;
    bool ok = check_header(&r, data, size);
    for (int s = SEC_STRINGS; ok && s <= SEC_LAST; s++) ok = read_section(&r, s, data, size, &pos);
    if (ok && pos != size) ok = fail(&r, "%zu bytes after the last section", size - pos);
    verify_log v = {0};
    if (ok && ir_verify(r.m, log_problem, &v))
        ok = fail(&r, "invalid plan: %s%s", v.first, v.count > 1 ? " (and more problems)" : "");
    free(r.strs);
    if (!ok) ir_module_free(r.m), r.m = NULL;
    return r.m;
}

ir_module *mgx_read(const char *path, char *err, size_t cap) {
    struct stat st;
    int fd = ir_open_regular(path, "read", &st, err, cap);
    if (fd < 0) return NULL;
    size_t size = (size_t)st.st_size, got = 0;
    uint8_t *data = xmalloc(size);
    int saved = 0;
    while (got < size) {
        ssize_t k = read(fd, data + got, size - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            saved = k < 0 ? errno : 0;
            break;
        }
        got += (size_t)k;
    }
    close(fd);
    ir_module *m = NULL;
    if (got != size) snprintf(err, cap, "%s: cannot read: %s", path, saved ? strerror(saved) : "short read");
    else m = mgx_read_mem(data, size, path, err, cap);
    free(data);
    return m;
}
