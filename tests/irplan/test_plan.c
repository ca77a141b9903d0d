/* test_plan.c - .mgx round trip, corruption of every section and header,
 * truncation at every offset, wrong version/magic, semantic damage behind a
 * valid CRC, atomic writes that fail (the old file survives).
 * With `--corpus DIR` it writes the fuzzing seed plans instead. */
#define _GNU_SOURCE /* memmem */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../../ir/plan.h"
#include "fixture.h"

static const char *const sections[] = {"", "strings", "graph", "model", "train", "devices", "memory", "schedule", "sources"};
enum { N_SECTIONS = 8 };

typedef struct {
    uint8_t *p;
    size_t n;
} bytes;

typedef struct {
    size_t header[N_SECTIONS + 1], payload[N_SECTIONS + 1], len[N_SECTIONS + 1];
} layout;

static char tmpdir[256];

static uint32_t le32(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static void set_le32(uint8_t *p, uint32_t v) { p[0] = v, p[1] = v >> 8, p[2] = v >> 16, p[3] = v >> 24; }

static bytes slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    CHECK(f);
    bytes b = {malloc(1 << 20), 0};
    b.n = fread(b.p, 1, 1 << 20, f);
    fclose(f);
    return b;
}

static bytes plan_bytes(const ir_module *m) {
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/plan.mgx", tmpdir);
    CHECK(mgx_write(m, path, err, sizeof err) == 0);
    return slurp(path);
}

/* Where each section's header and payload start (the documented framing). */
static layout find_layout(const bytes *b) {
    layout l;
    size_t pos = 16;
    for (int s = 1; s <= N_SECTIONS; s++) {
        l.header[s] = pos;
        CHECK(le32(b->p + pos) == (uint32_t)s);
        l.len[s] = le32(b->p + pos + 4) | (size_t)le32(b->p + pos + 8) << 32;
        l.payload[s] = pos + 16;
        pos = l.payload[s] + l.len[s];
    }
    CHECK(pos == b->n);
    return l;
}

static void fix_crc(bytes *b, const layout *l, int s) {
    set_le32(b->p + l->header[s] + 12, (uint32_t)crc32(0, b->p + l->payload[s], (uInt)l->len[s]));
}

/* Reads b and expects the error `want` (prefixed with "m.mgx: "). */
static void expect_error(const bytes *b, size_t n, const char *want) {
    char err[512] = "", full[600];
    ir_module *m = mgx_read_mem(b->p, n, "m.mgx", err, sizeof err);
    snprintf(full, sizeof full, "m.mgx: %s", want);
    if (m) fprintf(stderr, "expected an error: %s\n", full);
    CHECK(!m);
    CHECK_STR(err, full);
}

static bool same_mem(const void *a, const void *b, size_t n) { return n == 0 || !memcmp(a, b, n); }

static bool same_str(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

static void compare_nodes(const ir_module *a, const ir_module *b) {
    CHECK(a->g.n == b->g.n);
    for (int i = 0; i < a->g.n; i++) {
        const ir_node *x = &a->g.nodes[i], *y = &b->g.nodes[i];
        CHECK(x->op == y->op && x->dtype == y->dtype && ir_shape_eq(&x->shape, &y->shape) && x->n_in == y->n_in);
        CHECK(same_mem(x->in, y->in, (size_t)x->n_in * sizeof *x->in));
        CHECK(!memcmp(x->iattr, y->iattr, sizeof x->iattr) && !memcmp(x->fattr, y->fattr, sizeof x->fattr));
        CHECK(same_str(x->name, y->name) && same_str(x->loc.file, y->loc.file));
        CHECK(x->loc.line == y->loc.line && x->loc.col == y->loc.col && x->programs == y->programs);
        CHECK(x->device == y->device && x->stream == y->stream && x->origin == y->origin && x->offset == y->offset);
    }
}

static void compare_interface(const ir_module *a, const ir_module *b) {
    CHECK(same_str(a->model_name, b->model_name) && same_str(a->source_file, b->source_file));
    CHECK(a->n_inputs == b->n_inputs && same_mem(a->inputs, b->inputs, (size_t)a->n_inputs * sizeof(int)));
    CHECK(a->loss == b->loss && a->n_outputs == b->n_outputs && a->n_metrics == b->n_metrics);
    for (int k = 0; k < a->n_outputs; k++)
        CHECK(same_str(a->outputs[k].name, b->outputs[k].name) && a->outputs[k].node == b->outputs[k].node);
    for (int k = 0; k < a->n_metrics; k++)
        CHECK(same_str(a->metrics[k].name, b->metrics[k].name) && a->metrics[k].node == b->metrics[k].node);
    CHECK(a->n_params == b->n_params && same_mem(a->params, b->params, (size_t)a->n_params * sizeof(int)));
    CHECK((a->grads == NULL) == (b->grads == NULL));
    if (a->grads) CHECK(same_mem(a->grads, b->grads, (size_t)a->n_params * sizeof(int)));
    const ir_optimizer *o = &a->opt, *q = &b->opt;
    CHECK(a->has_train == b->has_train && o->kind == q->kind && o->lr == q->lr && o->beta1 == q->beta1);
    CHECK(o->beta2 == q->beta2 && o->epsilon == q->epsilon && o->weight_decay == q->weight_decay);
    CHECK(o->momentum == q->momentum && o->rho == q->rho && o->nesterov == q->nesterov);
    CHECK(o->initial_accumulator_value == q->initial_accumulator_value && o->clipnorm == q->clipnorm &&
          o->global_clipnorm == q->global_clipnorm);
    const ir_lr_schedule *s = &o->schedule, *t = &q->schedule;
    CHECK(s->kind == t->kind && s->decay_steps == t->decay_steps && s->warmup_steps == t->warmup_steps);
    CHECK(s->alpha == t->alpha && s->warmup_target == t->warmup_target && s->decay_rate == t->decay_rate);
    CHECK(s->staircase == t->staircase && s->n_boundaries == t->n_boundaries && a->epochs == b->epochs);
    CHECK(same_mem(s->boundaries, t->boundaries, sizeof s->boundaries) && same_mem(s->values, t->values, sizeof s->values));
    CHECK(a->batch_per_replica == b->batch_per_replica && a->global_batch == b->global_batch);
}

static void compare_plan(const ir_module *a, const ir_module *b) {
    CHECK(a->n_devices == b->n_devices && a->cross_device == b->cross_device && a->bucket_bytes == b->bucket_bytes);
    for (int d = 0; d < a->n_devices; d++)
        CHECK(same_str(a->devices[d].name, b->devices[d].name) && a->devices[d].index == b->devices[d].index);
    CHECK(a->n_buckets == b->n_buckets);
    for (int k = 0; k < a->n_buckets; k++) {
        CHECK(a->buckets[k].bytes == b->buckets[k].bytes && a->buckets[k].n_grads == b->buckets[k].n_grads);
        CHECK(same_mem(a->buckets[k].grads, b->buckets[k].grads, (size_t)a->buckets[k].n_grads * sizeof(int)));
    }
    CHECK((a->arena_bytes == NULL) == (b->arena_bytes == NULL));
    for (int d = 0; a->arena_bytes && d < a->n_devices; d++)
        CHECK(a->arena_bytes[d] == b->arena_bytes[d] && a->unplanned_bytes[d] == b->unplanned_bytes[d]);
    CHECK(a->n_events == b->n_events && a->n_sched == b->n_sched);
    for (int s = 0; s < a->n_sched; s++) {
        const ir_sched_list *x = &a->sched[s], *y = &b->sched[s];
        CHECK(x->program == y->program && x->device == y->device && x->stream == y->stream && x->n == y->n);
        CHECK(same_mem(x->items, y->items, (size_t)x->n * sizeof *x->items));
    }
    CHECK(a->n_sources == b->n_sources);
    for (int k = 0; k < a->n_sources; k++)
        CHECK(same_str(a->sources[k].path, b->sources[k].path) && same_str(a->sources[k].text, b->sources[k].text));
}

static void test_round_trip(ir_module *m) {
    CHECK(ir_verify(m, NULL, NULL) == 0);
    bytes b = plan_bytes(m);
    char err[512];
    ir_module *r = mgx_read_mem(b.p, b.n, "m.mgx", err, sizeof err);
    if (!r) fprintf(stderr, "%s\n", err);
    CHECK(r);
    compare_nodes(m, r), compare_interface(m, r), compare_plan(m, r);
    char *t1 = print_to_string(m), *t2 = print_to_string(r);
    CHECK_STR(t2, t1);
    bytes again = plan_bytes(r); /* deterministic: the same bytes again */
    CHECK(again.n == b.n && !memcmp(again.p, b.p, b.n));
    free(t1), free(t2), free(again.p), free(b.p);
    ir_module_free(r);
}

static void test_section_crc(const bytes *orig, const layout *l) {
    for (int s = 1; s <= N_SECTIONS; s++) {
        CHECK(l->len[s] > 0);
        for (size_t at = l->payload[s]; at < l->payload[s] + l->len[s]; at += 1 + l->len[s] / 7) {
            bytes b = {malloc(orig->n), orig->n};
            memcpy(b.p, orig->p, b.n);
            b.p[at] ^= 0x5a;
            char want[128];
            snprintf(want, sizeof want, "section '%s': CRC mismatch", sections[s]);
            expect_error(&b, b.n, want);
            free(b.p);
        }
    }
}

static void flip_header_byte(const bytes *orig, const layout *l, size_t at) {
    bytes b = {malloc(orig->n), orig->n};
    memcpy(b.p, orig->p, b.n);
    b.p[at] ^= 0x01;
    char want[256];
    if (at < 8) {
        snprintf(want, sizeof want, "not an mgc plan (bad magic)");
    } else if (at < 12) {
        snprintf(want, sizeof want, "plan format version %u, this mgc reads version %d (compile the model again)", le32(b.p + 8), MGX_VERSION);
    } else if (at < 16) {
        snprintf(want, sizeof want, "plan has %u sections, this mgc reads 8", le32(b.p + 12));
    } else {
        int s = 1;
        while (s < N_SECTIONS && at >= l->header[s + 1]) s++;
        size_t off = at - l->header[s];
        uint64_t len = le32(b.p + l->header[s] + 4) | (uint64_t)le32(b.p + l->header[s] + 8) << 32;
        size_t remain = b.n - l->payload[s];
        if (off < 4) snprintf(want, sizeof want, "section %d has tag %u, expected %d ('%s')", s, le32(b.p + at - off), s, sections[s]);
        else if (off < 12 && len > remain)
            snprintf(want, sizeof want, "truncated (section '%s' needs %llu bytes, %zu remain)", sections[s], (unsigned long long)len, remain);
        else snprintf(want, sizeof want, "section '%s': CRC mismatch", sections[s]);
    }
    expect_error(&b, b.n, want);
    free(b.p);
}

static void test_headers(const bytes *orig, const layout *l) {
    for (size_t at = 0; at < 16; at++) flip_header_byte(orig, l, at);
    for (int s = 1; s <= N_SECTIONS; s++)
        for (size_t at = l->header[s]; at < l->payload[s]; at++) flip_header_byte(orig, l, at);
}

static void test_truncation(const bytes *b, const layout *l) {
    for (size_t n = 0; n < b->n; n++) {
        char want[256];
        if (n < 16) {
            snprintf(want, sizeof want, "truncated (header needs 16 bytes, %zu remain)", n);
        } else {
            int s = 1;
            while (s < N_SECTIONS && n >= l->header[s + 1]) s++;
            if (n < l->payload[s])
                snprintf(want, sizeof want, "truncated (section '%s' header needs 16 bytes, %zu remain)", sections[s], n - l->header[s]);
            else
                snprintf(want, sizeof want, "truncated (section '%s' needs %zu bytes, %zu remain)", sections[s], l->len[s], n - l->payload[s]);
        }
        expect_error(b, n, want);
    }
}

static void test_version_magic(const bytes *orig) {
    bytes b = {malloc(orig->n + 3), orig->n};
    memcpy(b.p, orig->p, b.n);
    set_le32(b.p + 8, 7);
    expect_error(&b, b.n, "plan format version 7, this mgc reads version 6 (compile the model again)");
    memcpy(b.p, orig->p, b.n);
    memcpy(b.p, "GIF89a\0\0", 8);
    expect_error(&b, b.n, "not an mgc plan (bad magic)");
    expect_error(&b, 3, "not an mgc plan (bad magic)");
    memcpy(b.p, orig->p, b.n);
    memcpy(b.p + b.n, "xyz", 3);
    expect_error(&b, b.n + 3, "3 bytes after the last section");
    free(b.p);
}

/* Offset of node `node`'s input `k` in the graph payload (docs/plan-format.md). */
static size_t input_offset(const uint8_t *p, int node, int k) {
    size_t pos = 4;
    for (int i = 0;; i++) {
        uint32_t rank = le32(p + pos + 8);
        pos += 12 + 8 * rank;
        uint32_t n_in = le32(p + pos);
        if (i == node) return pos + 4 + 4 * (size_t)k;
        pos += 4 + 4 * n_in;
        pos += 1 + 8 * p[pos];
        pos += 1 + 8 * p[pos];
        pos += 4 * 8 + 8;
    }
}

static void test_semantic(const bytes *orig, const layout *l, const rich_nodes *x) {
    bytes b = {malloc(orig->n), orig->n};
    memcpy(b.p, orig->p, b.n);
    int node = x->matmul[0];
    set_le32(b.p + l->payload[2] + input_offset(b.p + l->payload[2], node, 1), (uint32_t)node + 4);
    fix_crc(&b, l, 2);
    char want[128];
    snprintf(want, sizeof want, "section 'graph': node %d input 1 refers to node %d", node, node + 4);
    expect_error(&b, b.n, want);

    memcpy(b.p, orig->p, b.n); /* loss index: name, source, n_inputs, inputs, loss */
    set_le32(b.p + l->payload[3] + 12 + 4 * 2, 9999);
    fix_crc(&b, l, 3);
    expect_error(&b, b.n, "invalid plan: the loss refers to node 9999 (of 40)");

    memcpy(b.p, orig->p, b.n); /* a string index out of range: the model name */
    set_le32(b.p + l->payload[3], 500);
    fix_crc(&b, l, 3);
    expect_error(&b, b.n, "section 'model': string index 500 out of range (27 strings)");

    memcpy(b.p, orig->p, b.n); /* an op name this mgc does not know (ops are stored by name) */
    uint8_t *hit = memmem(b.p + l->payload[1], l->len[1], "matmul", 6);
    CHECK(hit);
    hit[5] = 'x';
    fix_crc(&b, l, 1);
    snprintf(want, sizeof want, "section 'graph': node %d: unknown primitive 'matmux' (compile the model again with this mgc)",
             x->matmul[0]);
    expect_error(&b, b.n, want);

    memcpy(b.p, orig->p, b.n); /* a huge node count */
    set_le32(b.p + l->payload[2], 0x7fffffff);
    fix_crc(&b, l, 2);
    snprintf(want, sizeof want, "section 'graph': node count 2147483647 does not fit in the %zu remaining bytes", l->len[2] - 4);
    expect_error(&b, b.n, want);
    free(b.p);
}

static void test_unwritable(void) {
    char path[512], err[512];
    ir_module *big = rich_module(NULL), *small = small_module();
    snprintf(path, sizeof path, "%s/no/such/dir/p.mgx", tmpdir);
    CHECK(mgx_write(small, path, err, sizeof err) == -1);
    char want[600];
    snprintf(want, sizeof want, "%s: cannot write: No such file or directory", path);
    CHECK_STR(err, want);

    /* a write that fails halfway (file size limit): the old plan survives, no temp file stays */
    snprintf(path, sizeof path, "%s/keep.mgx", tmpdir);
    CHECK(mgx_write(small, path, err, sizeof err) == 0);
    bytes before = slurp(path);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old, lim.rlim_cur = before.n + 16;
    signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    int rc = mgx_write(big, path, err, sizeof err);
    CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
    CHECK(rc == -1);
    snprintf(want, sizeof want, "%s: cannot write: File too large", path);
    CHECK_STR(err, want);
    bytes after = slurp(path);
    CHECK(after.n == before.n && !memcmp(after.p, before.p, before.n));
    DIR *d = opendir(tmpdir);
    for (struct dirent *e; (e = readdir(d));) CHECK(!strstr(e->d_name, ".tmp."));
    closedir(d);
    snprintf(path, sizeof path, "%s/missing.mgx", tmpdir);
    CHECK(!mgx_read(path, err, sizeof err));
    snprintf(want, sizeof want, "%s: cannot read: No such file or directory", path);
    CHECK_STR(err, want);
    free(before.p), free(after.p);
    ir_module_free(big), ir_module_free(small);
}

/* ---- issue 14: a fused node's program ----
 * y = fused(x f32[2,3], b f32[3]) [r2 = add(r0, r1); r3 = elu(r2, alpha=0.5); r4 = mul(r3, r0)],
 * compiled --no-fuse or not (m->no_fuse); the program is the graph payload's last 64 bytes. */
static ir_module *fused_module(void) {
    ir_module *m = ir_module_new();
    m->model_name = ir_intern(m, "fused");
    int in[2];
    in[0] = ir_add(m, OP_INPUT, NULL, 0, (ir_loc){ir_intern(m, "f.mg"), 1, 1});
    in[1] = ir_add(m, OP_PARAM, NULL, 0, (ir_loc){ir_intern(m, "f.mg"), 2, 1});
    ir_node *x = ir_node_at(m, in[0]), *b = ir_node_at(m, in[1]);
    x->dtype = b->dtype = IR_F32, x->name = ir_intern(m, "x"), b->name = ir_intern(m, "b");
    x->shape = ir_shape_make(2, (int64_t[]){2, 3}), b->shape = ir_shape_make(1, (int64_t[]){3});
    int y = ir_add(m, OP_FUSED, in, 2, (ir_loc){ir_intern(m, "f.mg"), 3, 5});
    ir_fused f = {.n = 3};
    f.ins[0] = (ir_finstr){OP_ADD, 0, 1, 0}, f.ins[1] = (ir_finstr){OP_ELU, 2, -1, 0.5}, f.ins[2] = (ir_finstr){OP_MUL, 3, 0, 0};
    ir_node_at(m, y)->fused = ir_fused_add(m, &f);
    char err[256];
    CHECK(ir_infer_node(m, y, err, sizeof err));
    m->n_outputs = 1, m->outputs = malloc(sizeof *m->outputs), m->outputs[0] = (ir_output){ir_intern(m, "y"), y};
    m->n_inputs = 1, m->inputs = malloc(sizeof(int)), m->inputs[0] = in[0];
    m->n_params = 1, m->params = malloc(sizeof(int)), m->params[0] = in[1];
    m->no_fuse = false;
    return m;
}

static void test_fused_program(void) {
    ir_module *m = fused_module();
    test_round_trip(m);
    bytes b = plan_bytes(m);
    char err[512];
    ir_module *r = mgx_read_mem(b.p, b.n, "m.mgx", err, sizeof err);
    CHECK(r && r->g.nodes[2].fused && !memcmp(r->g.nodes[2].fused, m->g.nodes[2].fused, sizeof(ir_fused)));
    CHECK(!r->no_fuse);
    char *text = print_to_string(r);
    CHECK(strstr(text, "%2 = fused(%0, %1) [r2 = add(r0, r1); r3 = elu(r2, alpha=0.5); r4 = mul(r3, r0)] : f32[2,3]"));
    free(text);
    ir_module_free(r);
    layout l = find_layout(&b);
    size_t prog = l.payload[2] + l.len[2] - 64; /* n, then (op, a, b, alpha) per instruction */
    bytes c = {malloc(b.n), b.n};
    memcpy(c.p, b.p, b.n);
    set_le32(c.p + prog + 4 + 20 + 4, 7); /* elu's operand: register 7 of 3 */
    fix_crc(&c, &l, 2);
    expect_error(&c, c.n, "section 'graph': node 2: fused instruction 1 (elu): operands 7, -1 are not among registers 0..2");
    memcpy(c.p, b.p, b.n);
    set_le32(c.p + prog + 4 + 20 + 8, 1); /* a second operand for a unary op */
    fix_crc(&c, &l, 2);
    expect_error(&c, c.n, "section 'graph': node 2: fused instruction 1 (elu): operands 2, 1 are not among registers 0..2");
    memcpy(c.p, b.p, b.n);
    set_le32(c.p + prog + 4, le32(c.p + l.payload[2] + 4)); /* the op of instruction 0 named by node 0's op: input */
    fix_crc(&c, &l, 2);
    expect_error(&c, c.n, "section 'graph': node 2: fused instruction 0: 'input' is not an elementwise op that fuses");
    memcpy(c.p, b.p, b.n);
    set_le32(c.p + prog, 0);
    fix_crc(&c, &l, 2);
    expect_error(&c, c.n, "section 'graph': node 2: fused program of 0 instructions (1..32)");
    memcpy(c.p, b.p, b.n);
    set_le32(c.p + prog, 33);
    fix_crc(&c, &l, 2);
    expect_error(&c, c.n, "section 'graph': node 2: fused program of 33 instructions (1..32)");
    test_truncation(&b, &l);
    free(c.p), free(b.p);
    ir_module_free(m);
    printf("plan: fused program round trip, malformed programs rejected\n");
}

static int write_corpus(const char *dir) {
    char path[512], err[512];
    ir_module *m[3] = {rich_module(NULL), small_module(), fused_module()};
    const char *names[3] = {"rich.mgx", "small.mgx", "fused.mgx"};
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        if (mgx_write(m[k], path, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
        ir_module_free(m[k]);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--corpus")) return write_corpus(argv[2]);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mgc_test_plan.XXXXXX");
    CHECK(mkdtemp(tmpdir));
    rich_nodes x;
    ir_module *rich = rich_module(&x), *small = small_module();
    test_round_trip(rich);
    test_round_trip(small);
    bytes b = plan_bytes(rich);
    layout l = find_layout(&b);
    test_section_crc(&b, &l);
    test_headers(&b, &l);
    test_version_magic(&b);
    test_semantic(&b, &l, &x);
    bytes s = plan_bytes(small);
    layout ls = find_layout(&s);
    test_truncation(&s, &ls);
    test_truncation(&b, &l);
    test_unwritable();
    test_fused_program(); /* issue 14 */
    printf("plan: %zu-byte rich plan, %zu-byte small plan: round trip, corruption and truncation ok\n", b.n, s.n);
    free(b.p), free(s.p);
    ir_module_free(rich), ir_module_free(small);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : 1;
}
