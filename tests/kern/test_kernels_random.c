/* test_kernels_random.c - a randomized differential test of two hand-written
 * CPU kernels against double-precision references of its own: the thin GEMM
 * candidate of matmul (runtime/cpu/gemm_thin.c, forced with MGC_KERNELS=thin)
 * and conv2d_relu_pool2 with its filter gradient (runtime/cpu/conv_pool.c).
 *
 * Shapes and attributes come from a fixed seed (MGC_TEST_SEED=<n> draws
 * other cases; a failure prints its case, seed and number). Inputs are
 * either plain floats, checked with test_kernels.c's tolerance
 * |got - want| <= 1e-5 (|want| + rms(want)), or dyadic values of few bits
 * whose every sum is exact in float, checked exactly: then relu's zeros and
 * the pool windows' ties are the reference's, and the filter gradient must go
 * to each window's first maximum. Every run also shows that each output
 * element is written (NaN beforehand), nothing around the output is (guard
 * floats) and the inputs are unchanged; a rerun gives the same bits (the thin
 * GEMM's: twice through the kernel table, then gemm_thin.c's entry itself).
 * Counts of what the cases reached (tile rests, blocks, ties, windows in
 * registers, ...) must be nonzero, so a generator that stops reaching a part
 * of a kernel fails. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "../../runtime/cpu/tune.h"

/* ---- random draws ---- */

static uint64_t rng;
static uint64_t next_u64(void) { /* xorshift64 */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static double uniform(void) { return (double)(next_u64() >> 11) / 9007199254740992.0; } /* [0, 1) */
static int64_t irand(int64_t lo, int64_t hi) { /* [lo, hi] */
    return lo + (int64_t)(next_u64() % (uint64_t)(hi - lo + 1));
}
static int64_t pick(const int64_t *v, size_t n) { return v[irand(0, (int64_t)n - 1)]; }
#define PICK(v) pick(v, sizeof v / sizeof *v)

/* how an input is filled: F_PLAIN floats in [-1, 1); the others exact in
 * every sum the kernels make: k/64 (|k| <= 64), k/4 (|k| <= 4), 0..2, -1..1,
 * k/8 (|k| <= 8, biases), k/16 (|k| <= 16, dy) */
typedef enum { F_PLAIN, F_Q64, F_Q4, F_SMALL, F_UNIT, F_Q8, F_Q16 } fill_kind;

static double draw(fill_kind f) {
    switch (f) {
    case F_Q64: return (double)irand(-64, 64) / 64;
    case F_Q4: return (double)irand(-4, 4) / 4;
    case F_SMALL: return (double)irand(0, 2);
    case F_UNIT: return (double)irand(-1, 1);
    case F_Q8: return (double)irand(-8, 8) / 8;
    case F_Q16: return (double)irand(-16, 16) / 16;
    default: return (double)(float)(2 * uniform() - 1);
    }
}

/* input i of t (and its double copy d) from f, each element 0 with probability zeros */
static void fill(one_op *t, int i, double *d, fill_kind f, double zeros) {
    float *p = t->in[i];
    for (int64_t j = 0; j < ir_shape_numel(&t->in_nodes[i]->shape); j++) {
        double v = uniform() < zeros ? 0 : draw(f);
        p[j] = (float)v, d[j] = (float)v;
    }
}

/* ---- running a case ---- */

enum { GUARD = 64 };
static const uint32_t GUARD_BITS = 0x7fc0beefu, UNSET_BITS = 0x7fc0dead; /* NaNs */

static void set_bits(float *p, int64_t n, uint32_t bits) {
    for (int64_t i = 0; i < n; i++) memcpy(&p[i], &bits, sizeof bits);
}

/* "[a,b,c]" of the rank values v */
static const char *dims_str(const int64_t *v, int rank, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < rank; d++)
        n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%lld", d ? "," : "", (long long)v[d]);
    snprintf(buf + n, n < cap ? cap - n : 0, "]");
    return buf;
}

/* "[a,b,c]" of flat index i into s */
static const char *coords(const ir_shape *s, int64_t i, char *buf, size_t cap) {
    int64_t c[IR_MAX_RANK];
    for (int d = s->rank - 1; d >= 0; d--) c[d] = i % s->dim[d], i /= s->dim[d];
    return dims_str(c, s->rank, buf, cap);
}

/* got against want: exactly (-0 == +0) or within the tolerance; 1 with a message if not */
static int compare(const char *desc, const ir_shape *s, const float *got, const double *want, int exact) {
    int64_t n = ir_shape_numel(s), bad = 0, first = -1;
    double rms = 0;
    for (int64_t i = 0; i < n; i++) rms += want[i] * want[i];
    rms = sqrt(rms / (double)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        double tol = exact ? 0 : 1e-5 * (fabs(want[i]) + rms);
        if (!(fabs((double)got[i] - want[i]) <= tol)) bad++, first = first < 0 ? i : first;
    }
    if (bad) {
        char b[96];
        fprintf(stderr, "FAIL %s\n  %lld of %lld elements wrong (%s); first out%s = %.9g, reference %.9g\n", desc,
                (long long)bad, (long long)n, exact ? "exact inputs, compared exactly" : "tolerance 1e-5",
                coords(s, first, b, sizeof b), got[first], want[first]);
    }
    return bad != 0;
}

typedef int (*runner)(one_op *t, char *err, size_t cap);

/* Runs t with each of the n runners in turn into a guarded buffer of NaNs:
 * out against want, the guards and inputs intact, every run's bits the
 * first's. 1 with a message on any failure. */
static int run_checked(one_op *t, const runner *runs, int n_runs, const double *want, int exact, const char *desc) {
    const ir_shape *s = &t->m->g.nodes[t->node].shape;
    int64_t n = ir_shape_numel(s);
    float *buf = malloc((size_t)(n + 2 * GUARD) * sizeof *buf), *first = malloc((size_t)(n + 1) * sizeof *first);
    void *saved_out = t->out, *saved_in[8];
    int bad = 0;
    char err[256] = "";
    for (int i = 0; i < t->n_in; i++) {
        size_t bytes = (size_t)ir_node_bytes(t->in_nodes[i]);
        saved_in[i] = malloc(bytes + 1), memcpy(saved_in[i], t->in[i], bytes);
    }
    t->out = t->args.out = buf + GUARD;
    for (int rep = 0; rep < n_runs && !bad; rep++) {
        set_bits(buf, n + 2 * GUARD, GUARD_BITS), set_bits(buf + GUARD, n, UNSET_BITS);
        if (runs[rep](t, err, sizeof err)) {
            fprintf(stderr, "FAIL %s\n  run %d: %s\n", desc, rep + 1, err);
            bad = 1;
            break;
        }
        for (int64_t i = 0; i < GUARD && !bad; i++)
            if (memcmp(&buf[i], &GUARD_BITS, 4) || memcmp(&buf[GUARD + n + i], &GUARD_BITS, 4)) {
                fprintf(stderr, "FAIL %s\n  run %d wrote outside its output (%s it, guard float %lld)\n", desc,
                        rep + 1, memcmp(&buf[i], &GUARD_BITS, 4) ? "before" : "after", (long long)i);
                bad = 1;
            }
        for (int i = 0; i < t->n_in && !bad; i++)
            if (memcmp(saved_in[i], t->in[i], (size_t)ir_node_bytes(t->in_nodes[i])))
                fprintf(stderr, "FAIL %s\n  run %d changed input %d\n", desc, rep + 1, i), bad = 1;
        if (!bad && rep == 0)
            bad = compare(desc, s, buf + GUARD, want, exact), memcpy(first, buf + GUARD, (size_t)n * 4);
        else if (!bad && memcmp(first, buf + GUARD, (size_t)n * 4)) {
            int64_t i = 0;
            while (!memcmp(&first[i], &buf[GUARD + i], 4)) i++;
            char b[96];
            fprintf(stderr, "FAIL %s\n  runs 1 and %d differ: out%s = %.9g, then %.9g\n", desc, rep + 1,
                    coords(s, i, b, sizeof b), first[i], buf[GUARD + i]);
            bad = 1;
        }
    }
    t->out = t->args.out = saved_out;
    for (int i = 0; i < t->n_in; i++) free(saved_in[i]);
    free(buf), free(first);
    return bad;
}

static int run_node(one_op *t, char *err, size_t cap) { return kh_run(t, err, cap); }
static int run_thin(one_op *t, char *err, size_t cap) { return cpu_thin_matmul(&t->args, err, cap); }

static double *dalloc(int64_t n) { return calloc((size_t)n + 1, sizeof(double)); }

/* what the drawn cases reached, counted so that a generator that stops
 * reaching a part of a kernel fails the test */
static struct {
    int trans[4], batched, broadcast, row_blocks, rest4, rest5, col_rest, col_blocks, k512, exact;
    int reg, reg_inside, reg_border, not_mult8, groups, ties, zero_max, grad_exact, grad_ties, grad_reg_ties;
} seen;

static int coverage_fails(void) {
    const struct { const char *what; int n; } need[] = {
        {"trans 00", seen.trans[0]}, {"trans 10", seen.trans[1]}, {"trans 01", seen.trans[2]},
        {"trans 11", seen.trans[3]}, {"batched", seen.batched}, {"broadcast batch axes", seen.broadcast},
        {"m > 96 (row blocks of 48)", seen.row_blocks}, {"a rest of 1-4 rows", seen.rest4},
        {"a rest of 5 rows", seen.rest5}, {"n not a multiple of 16", seen.col_rest},
        {"n past a block of packed op(b)", seen.col_blocks}, {"k = 512", seen.k512}, {"exact GEMMs", seen.exact},
        {"register windows", seen.reg}, {"register windows inside x", seen.reg_inside},
        {"register cases with windows in the padding", seen.reg_border},
        {"channels not a multiple of 8", seen.not_mult8}, {"groups > 1", seen.groups},
        {"windows tied at a maximum > 0", seen.ties}, {"windows whose maximum is relu's 0", seen.zero_max},
        {"exact filter gradients", seen.grad_exact}, {"filter gradients through tied windows", seen.grad_ties},
        {"filter gradients through tied windows in registers", seen.grad_reg_ties},
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof need / sizeof *need; i++)
        if (!need[i].n) fprintf(stderr, "FAIL coverage: no case drawn with %s\n", need[i].what), failed++;
    return failed;
}

/* ---- the thin GEMM ---- */

/* the element offset of output matrix bi's operand matrix in s (batch axes
 * right-aligned to the output's o, an axis of 1 broadcast) */
static int64_t batch_offset(const ir_shape *s, const ir_shape *o, int64_t bi) {
    int64_t off = 0, mult = 1;
    for (int d = o->rank - 3, e = s->rank - 3; d >= 0; d--, e--) {
        int64_t c = bi % o->dim[d];
        bi /= o->dim[d];
        if (e >= 0) off += (s->dim[e] == 1 ? 0 : c) * mult, mult *= s->dim[e];
    }
    return off * s->dim[s->rank - 2] * s->dim[s->rank - 1];
}

/* c = op(a) op(b) in double, every output matrix */
static void ref_matmul(const ir_shape *as, const ir_shape *bs, const ir_shape *os, int ta, int tb, const double *a,
                       const double *b, double *c) {
    int64_t M = os->dim[os->rank - 2], N = os->dim[os->rank - 1], K = as->dim[as->rank - 1 - ta];
    int64_t batch = ir_shape_numel(os) / (M * N);
    double *A = dalloc(M * K), *B = dalloc(K * N);
    for (int64_t bi = 0; bi < batch; bi++) {
        const double *pa = a + batch_offset(as, os, bi), *pb = b + batch_offset(bs, os, bi);
        for (int64_t i = 0; i < M; i++)
            for (int64_t p = 0; p < K; p++) A[i * K + p] = ta ? pa[p * M + i] : pa[i * K + p];
        for (int64_t p = 0; p < K; p++)
            for (int64_t j = 0; j < N; j++) B[p * N + j] = tb ? pb[j * K + p] : pb[p * N + j];
        double *pc = c + bi * M * N;
        memset(pc, 0, (size_t)(M * N) * sizeof *pc);
        for (int64_t i = 0; i < M; i++)
            for (int64_t p = 0; p < K; p++)
                for (int64_t j = 0; j < N; j++) pc[i * N + j] += A[i * K + p] * B[p * N + j];
    }
    free(A), free(B);
}

/* one matmul a x b (trans flags ta, tb) through the thin candidate */
static int gemm_case(int no, ir_shape as, ir_shape bs, int ta, int tb, int exact) {
    one_op t;
    char err[256], desc[400], s1[64], s2[64];
    snprintf(desc, sizeof desc, "thin case %d: matmul a %s b %s trans_a %d trans_b %d, %s inputs", no,
             dims_str(as.dim, as.rank, s1, sizeof s1), dims_str(bs.dim, bs.rank, s2, sizeof s2), ta, tb,
             exact ? "exact (k/64)" : "plain");
    ir_shape in[2] = {as, bs};
    if (kh_build(&t, OP_MATMUL, 2, in, (ir_dtype[]){IR_F32, IR_F32}, (int64_t[IR_MAX_IATTR]){ta, tb}, (double[6]){0},
                 NULL, 0, err, sizeof err)) {
        fprintf(stderr, "FAIL %s: shape rule: %s\n", desc, err);
        kh_free(&t);
        return 1;
    }
    if (cpu_thin_applies(&t.args) != 1) {
        fprintf(stderr, "FAIL %s: the thin candidate does not apply\n", desc);
        kh_free(&t);
        return 1;
    }
    const ir_shape *os = &t.m->g.nodes[t.node].shape;
    int64_t m = os->dim[os->rank - 2], n = os->dim[os->rank - 1], k = as.dim[as.rank - 1 - ta];
    int64_t nb = 32768 / k / 16 * 16 < 16 ? 16 : 32768 / k / 16 * 16, mrest = (m <= 96 ? m : m % 48 ? m % 48 : 48) % 6;
    seen.trans[ta + 2 * tb]++, seen.batched += os->rank > 2, seen.row_blocks += m > 96, seen.exact += exact;
    seen.broadcast += os->rank > 2 && (as.rank != os->rank || bs.rank != os->rank ||
                                       ir_shape_numel(&as) / (m * k) != ir_shape_numel(os) / (m * n) ||
                                       ir_shape_numel(&bs) / (k * n) != ir_shape_numel(os) / (m * n));
    seen.rest4 += mrest >= 1 && mrest <= 4, seen.rest5 += mrest == 5, seen.col_rest += n % 16 != 0;
    seen.col_blocks += n > nb, seen.k512 += k == 512;
    double *a = dalloc(ir_shape_numel(&as)), *b = dalloc(ir_shape_numel(&bs)), *c = dalloc(ir_shape_numel(os));
    double zeros = uniform() < 0.3 ? 0.2 : 0;
    fill(&t, 0, a, exact ? F_Q64 : F_PLAIN, zeros), fill(&t, 1, b, exact ? F_Q64 : F_PLAIN, zeros);
    ref_matmul(&as, &bs, os, ta, tb, a, b, c);
    /* twice through the kernel table (MGC_KERNELS=thin), then gemm_thin.c's entry itself: the same bits */
    static const runner runs[] = {run_node, run_node, run_thin};
    int bad = run_checked(&t, runs, 3, c, exact, desc);
    free(a), free(b), free(c);
    kh_free(&t);
    return bad;
}

/* an operand [..., rows, cols] ([..., cols, rows] if trans) with the batch axes `batch` in front */
static ir_shape mm_shape(const ir_shape *batch, int64_t rows, int64_t cols, int trans) {
    ir_shape s = *batch;
    s.dim[s.rank++] = trans ? cols : rows;
    s.dim[s.rank++] = trans ? rows : cols;
    return s;
}

/* sizes where the kernel's tiles (6 and 4 rows, 16 columns), row blocks (48,
 * all of m up to 96) and k end or begin */
static const int64_t mn_edges[] = {1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 15, 16, 17, 18, 23, 24, 31, 32, 33, 47,
                                   48, 49, 50, 53, 54, 95, 96, 97, 98, 100, 101, 102, 143, 144, 145, 146, 191, 192,
                                   193, 239, 240, 241, 288, 289, 299, 300};
static const int64_t k_edges[] = {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129,
                                  255, 256, 257, 341, 383, 384, 385, 409, 410, 511, 512};

static int64_t draw_mn(void) { return uniform() < 0.5 ? PICK(mn_edges) : irand(1, 300); }

/* n at a block edge of packed op(b): the kernel's blocks are of
 * 32768 / k / 16 * 16 columns (at least 16); m at most 8 past 1024 columns */
static void block_edge(int64_t k, int64_t *m, int64_t *n) {
    static const int64_t deltas[] = {-17, -16, -1, 0, 1, 2, 15, 16, 17};
    int64_t nb = 32768 / k / 16 * 16;
    if (nb < 16) nb = 16;
    *n = irand(1, nb <= 160 ? 3 : 1) * nb + PICK(deltas);
    if (*n > 1024) *m = irand(1, 8);
}

static int test_thin(int *count) {
    int failed = 0, cases = 0;
    setenv("MGC_KERNELS", "thin", 1);
    cpu_tune_reset();
    cpu_kernels_set_threads(1);
    ir_shape none = {0};
    for (int i = 0; i < 400; i++) { /* rank 2, the four transposes in turn */
        int64_t k = uniform() < 0.4 ? PICK(k_edges) : irand(1, 512), m = draw_mn(), n = draw_mn();
        if (uniform() < 0.2) block_edge(k, &m, &n);
        int ta = i & 1, tb = i >> 1 & 1;
        failed += gemm_case(cases++, mm_shape(&none, m, k, ta), mm_shape(&none, k, n, tb), ta, tb, i % 3 != 2);
    }
    for (int i = 0; i < 60; i++) { /* batch axes, broadcast as matmul's (an axis of 1 or none) */
        ir_shape out = {.rank = (int)irand(1, 2)}, ba = {0}, bb = {0};
        for (int d = 0; d < out.rank; d++) out.dim[d] = irand(1, 3);
        ba.rank = (int)irand(0, out.rank), bb.rank = (int)irand(0, out.rank);
        if (ba.rank < out.rank && bb.rank < out.rank) bb.rank = out.rank;
        for (int d = 0; d < ba.rank; d++) ba.dim[d] = uniform() < 0.3 ? 1 : out.dim[out.rank - ba.rank + d];
        for (int d = 0; d < bb.rank; d++) bb.dim[d] = uniform() < 0.3 ? 1 : out.dim[out.rank - bb.rank + d];
        int64_t m = irand(1, 110), n = irand(1, 110), k = uniform() < 0.3 ? PICK(k_edges) : irand(1, 200);
        int ta = i & 1, tb = i >> 1 & 1;
        failed += gemm_case(cases++, mm_shape(&ba, m, k, ta), mm_shape(&bb, k, n, tb), ta, tb, i % 3 != 2);
    }
    unsetenv("MGC_KERNELS");
    cpu_tune_reset();
    *count += cases;
    return failed;
}

/* ---- conv2d_relu_pool2 and its filter gradient ---- */

/* x [N, H, W, CX], w [KH, KW, CX / groups, C], stride, pad (t, l, b, r), dilation */
typedef struct {
    int64_t N, H, W, CX, KH, KW, C, groups, sh, sw, pt, pl, pb, pr, dh, dw, OH, OW;
} conv_case;

/* y = relu(conv2d(x, w) + bias) [N, OH, OW, C] in double */
static void ref_y(const conv_case *k, const double *x, const double *w, const double *bias, double *y) {
    int64_t CG = k->CX / k->groups, per = k->C / k->groups;
    for (int64_t n = 0; n < k->N; n++)
        for (int64_t oh = 0; oh < k->OH; oh++)
            for (int64_t ow = 0; ow < k->OW; ow++)
                for (int64_t co = 0; co < k->C; co++) {
                    double acc = 0;
                    for (int64_t r = 0; r < k->KH; r++)
                        for (int64_t s = 0; s < k->KW; s++) {
                            int64_t ih = oh * k->sh - k->pt + r * k->dh, iw = ow * k->sw - k->pl + s * k->dw;
                            if (ih < 0 || iw < 0 || ih >= k->H || iw >= k->W) continue;
                            for (int64_t ci = 0; ci < CG; ci++)
                                acc += x[((n * k->H + ih) * k->W + iw) * k->CX + co / per * CG + ci] *
                                       w[((r * k->KW + s) * CG + ci) * k->C + co];
                        }
                    acc += bias[co];
                    y[((n * k->OH + oh) * k->OW + ow) * k->C + co] = acc > 0 ? acc : 0;
                }
}

/* the flat index into y of pixel q (row-major in the window) of window (n, ph, pw), channel c */
static int64_t y_at(const conv_case *k, int64_t n, int64_t ph, int64_t pw, int q, int64_t c) {
    return ((n * k->OH + 2 * ph + q / 2) * k->OW + 2 * pw + q % 2) * k->C + c;
}

/* conv2d_relu_pool2's output: each window's maximum, then its pixel (the
 * first maximum, row-major, where it is > 0, else -1). Returns the windows
 * whose maximum > 0 another pixel's y comes within 1e-5 of without equalling
 * it: of plain floats, float sums may find another pixel there. */
static int ref_pool(const conv_case *k, const double *y, double *out) {
    int near = 0;
    int64_t np = k->N * (k->OH / 2) * (k->OW / 2) * k->C;
    for (int64_t n = 0, i = 0; n < k->N; n++)
        for (int64_t ph = 0; ph < k->OH / 2; ph++)
            for (int64_t pw = 0; pw < k->OW / 2; pw++)
                for (int64_t c = 0; c < k->C; c++, i++) {
                    double best = -INFINITY;
                    int tied = 0, arg = 0;
                    for (int q = 0; q < 4; q++)
                        if (y[y_at(k, n, ph, pw, q, c)] > best) best = y[y_at(k, n, ph, pw, q, c)], arg = q;
                    for (int q = 0; q < 4; q++) {
                        double v = y[y_at(k, n, ph, pw, q, c)];
                        tied += v == best, near += best > 0 && v != best && best - v <= 1e-5 * fmax(1, best);
                    }
                    seen.ties += best > 0 && tied > 1, seen.zero_max += best == 0;
                    out[i] = best, out[np + i] = best > 0 ? arg : -1;
                }
    return near;
}

static int window_inside(const conv_case *k, int64_t ph, int64_t pw);

/* whether conv_pool.c makes case k's windows inside x in registers: one
 * input channel, groups 1, 3x3, channels a multiple of 8 */
static int is_reg(const conv_case *k) {
    return k->CX == 1 && k->groups == 1 && k->KH == 3 && k->KW == 3 && k->C % 8 == 0;
}

/* dw [KH, KW, CX / groups, C]: dy to each window's first maximum (row-major,
 * strict >) where it is > 0, through the convolution's taps; db [C] (when
 * not NULL): the sum of those dy, the bias gradient */
static void ref_grad_filter(const conv_case *k, const double *x, const double *y, const double *dy, double *dw,
                            double *db) {
    int64_t CG = k->CX / k->groups, per = k->C / k->groups, ny = k->N * k->OH * k->OW * k->C;
    double *dyy = dalloc(ny);
    if (db) memset(db, 0, (size_t)k->C * sizeof *db);
    for (int64_t n = 0, i = 0; n < k->N; n++)
        for (int64_t ph = 0; ph < k->OH / 2; ph++)
            for (int64_t pw = 0; pw < k->OW / 2; pw++)
                for (int64_t c = 0; c < k->C; c++, i++) {
                    double best = -INFINITY;
                    int64_t arg = -1, tied = 0;
                    for (int q = 0; q < 4; q++) {
                        int64_t yi = y_at(k, n, ph, pw, q, c);
                        if (y[yi] > best) best = y[yi], arg = yi;
                    }
                    for (int q = 0; q < 4; q++) tied += y[y_at(k, n, ph, pw, q, c)] == best;
                    if (best > 0) dyy[arg] = dy[i];
                    if (best > 0 && db) db[c] += dy[i];
                    if (best > 0 && tied > 1 && dy[i] != 0)
                        seen.grad_ties++, seen.grad_reg_ties += is_reg(k) && window_inside(k, ph, pw);
                }
    memset(dw, 0, (size_t)(k->KH * k->KW * CG * k->C) * sizeof *dw);
    for (int64_t n = 0; n < k->N; n++)
        for (int64_t oh = 0; oh < k->OH; oh++)
            for (int64_t ow = 0; ow < k->OW; ow++)
                for (int64_t co = 0; co < k->C; co++) {
                    double g = dyy[((n * k->OH + oh) * k->OW + ow) * k->C + co];
                    for (int64_t r = 0; r < k->KH && g != 0; r++)
                        for (int64_t s = 0; s < k->KW; s++) {
                            int64_t ih = oh * k->sh - k->pt + r * k->dh, iw = ow * k->sw - k->pl + s * k->dw;
                            if (ih < 0 || iw < 0 || ih >= k->H || iw >= k->W) continue;
                            for (int64_t ci = 0; ci < CG; ci++)
                                dw[((r * k->KW + s) * CG + ci) * k->C + co] +=
                                    x[((n * k->H + ih) * k->W + iw) * k->CX + co / per * CG + ci] * g;
                        }
                }
    free(dyy);
}

/* whether every tap of every pixel of window (ph, pw) falls inside x */
static int window_inside(const conv_case *k, int64_t ph, int64_t pw) {
    for (int q = 0; q < 4; q++)
        for (int64_t r = 0; r < k->KH; r++)
            for (int64_t s = 0; s < k->KW; s++) {
                int64_t ih = (2 * ph + q / 2) * k->sh - k->pt + r * k->dh;
                int64_t iw = (2 * pw + q % 2) * k->sw - k->pl + s * k->dw;
                if (ih < 0 || iw < 0 || ih >= k->H || iw >= k->W) return 0;
            }
    return 1;
}

/* counts case k in `seen` (the filter gradient too if grad) */
static void count_conv(const conv_case *k, int grad, int exact) {
    int reg = is_reg(k), inside = 0, border = 0;
    for (int64_t ph = 0; ph < k->OH / 2; ph++)
        for (int64_t pw = 0; pw < k->OW / 2; pw++) window_inside(k, ph, pw) ? inside++ : border++;
    seen.reg += reg, seen.reg_inside += reg && inside, seen.reg_border += reg && inside && border;
    seen.not_mult8 += k->C % 8 != 0, seen.groups += k->groups > 1, seen.grad_exact += grad && exact;
}

/* padding of one axis: valid, TensorFlow's same, or any of 0..3 on each side */
static void draw_pad(int mode, int64_t X, int64_t window, int64_t stride, int64_t *lo, int64_t *hi) {
    if (mode == 0) *lo = *hi = 0;
    else if (mode == 1) {
        int64_t total = ((X + stride - 1) / stride - 1) * stride + window - X;
        total = total < 0 ? 0 : total;
        *lo = total / 2, *hi = total - *lo;
    } else *lo = irand(0, 3), *hi = irand(0, 3);
}

/* a legal case: y's height and width even (>= 2); reg: one input channel,
 * groups 1, 3x3 and channels a multiple of 8 (conv_pool.c's windows in registers) */
static conv_case draw_conv(int reg) {
    static const int64_t groups[] = {1, 1, 1, 1, 2, 3, 4};
    conv_case k = {.N = irand(1, 3)};
    if (reg) k.CX = 1, k.groups = 1, k.KH = k.KW = 3, k.C = 8 * (uniform() < 0.85 ? irand(1, 5) : irand(6, 8));
    else {
        k.groups = PICK(groups), k.KH = irand(1, 3), k.KW = irand(1, 3);
        k.CX = k.groups * irand(1, 40 / k.groups), k.C = k.groups * irand(1, 40 / k.groups);
        if (uniform() < 0.3) k.CX = k.groups; /* one input channel a group */
    }
    k.sh = irand(1, 2), k.sw = irand(1, 2), k.dh = irand(1, 2), k.dw = irand(1, 2);
    int mode = (int)irand(0, 2);
    for (;;) {
        k.H = irand(2, 20), k.W = irand(2, 20);
        draw_pad(mode, k.H, (k.KH - 1) * k.dh + 1, k.sh, &k.pt, &k.pb);
        draw_pad(mode, k.W, (k.KW - 1) * k.dw + 1, k.sw, &k.pl, &k.pr);
        int64_t eh = k.H + k.pt + k.pb - (k.KH - 1) * k.dh - 1, ew = k.W + k.pl + k.pr - (k.KW - 1) * k.dw - 1;
        if (eh < 0 || ew < 0) continue;
        k.OH = eh / k.sh + 1, k.OW = ew / k.sw + 1;
        if (k.OH % 2 == 0 && k.OW % 2 == 0) return k;
    }
}

/* x zero on a random block of rows and columns (every channel): y = relu(bias)
 * there, all four of a window equal */
static void zero_block(one_op *t, double *x, const conv_case *k) {
    int64_t h0 = irand(0, k->H - 1), h1 = irand(h0, k->H - 1), w0 = irand(0, k->W - 1), w1 = irand(w0, k->W - 1);
    for (int64_t n = 0; n < k->N; n++)
        for (int64_t h = h0; h <= h1; h++)
            for (int64_t w = w0; w <= w1; w++)
                for (int64_t c = 0; c < k->CX; c++) {
                    int64_t i = ((n * k->H + h) * k->W + w) * k->CX + c;
                    x[i] = 0, ((float *)t->in[0])[i] = 0;
                }
}

static const char *const fill_names[] = {"plain", "k/64", "k/4", "0..2 and -1..1"};

/* op (conv2d_relu_pool2 or its filter gradient, with the bias gradient
 * before it if with_bias) of case k, inputs of fill level lv (0 plain, 1 k/64,
 * 2 k/4, 3 small integers: ties), x zero with probability zx and on a block
 * if zb; bias > 0 if pos_bias */
static int relu_pool2_case(int no, ir_op op, const conv_case *k, int lv, double zx, int zb, int pos_bias,
                           int with_bias) {
    char desc[600], err[256];
    snprintf(desc, sizeof desc,
             "%s case %d: x [%lld,%lld,%lld,%lld] w [%lld,%lld,%lld,%lld] stride %lld,%lld pad t%lld l%lld b%lld "
             "r%lld dilation %lld,%lld groups %lld; inputs %s, x zero %.2f%s%s%s",
             ir_ops[op].name, no, (long long)k->N, (long long)k->H, (long long)k->W, (long long)k->CX,
             (long long)k->KH, (long long)k->KW, (long long)(k->CX / k->groups), (long long)k->C, (long long)k->sh,
             (long long)k->sw, (long long)k->pt, (long long)k->pl, (long long)k->pb, (long long)k->pr,
             (long long)k->dh, (long long)k->dw, (long long)k->groups, fill_names[lv], zx, zb ? ", on a block" : "",
             pos_bias ? ", bias > 0" : "", with_bias ? ", bias=1" : "");
    int grad = op == OP_CONV2D_RELU_POOL2_GRAD_FILTER;
    ir_shape in[4] = {ir_shape_make(4, (int64_t[4]){k->N, k->H, k->W, k->CX}),
                      ir_shape_make(4, (int64_t[4]){k->KH, k->KW, k->CX / k->groups, k->C}),
                      grad ? ir_shape_make(5, (int64_t[5]){2, k->N, k->OH / 2, k->OW / 2, k->C})
                           : ir_shape_make(1, (int64_t[1]){k->C}), /* the gradient: the forward's output */
                      ir_shape_make(4, (int64_t[4]){k->N, k->OH / 2, k->OW / 2, k->C})};
    int64_t attr[IR_MAX_IATTR] = {k->sh, k->sw, k->pt, k->pl, k->pb, k->pr, k->dh, k->dw, k->groups, with_bias};
    one_op t;
    if (kh_build(&t, op, grad ? 4 : 3, in, (ir_dtype[]){IR_F32, IR_F32, IR_F32, IR_F32}, attr, (double[6]){0}, NULL,
                 0, err, sizeof err)) {
        fprintf(stderr, "FAIL %s: shape rule: %s\n", desc, err);
        kh_free(&t);
        return 1;
    }
    double *d[4], *y = dalloc(k->N * k->OH * k->OW * k->C), *want = dalloc(ir_shape_numel(&t.m->g.nodes[t.node].shape));
    for (int i = 0; i < 4; i++) d[i] = dalloc(ir_shape_numel(&in[i])); /* d[2]: the bias, or the forward's output */
    double *bias = grad ? dalloc(k->C) : d[2];
    static const fill_kind fx[] = {F_PLAIN, F_Q64, F_Q4, F_SMALL}, fw[] = {F_PLAIN, F_Q64, F_Q4, F_UNIT};
    fill(&t, 0, d[0], fx[lv], zx), fill(&t, 1, d[1], fw[lv], 0.1);
    for (int64_t c = 0; c < k->C; c++) {
        bias[c] = uniform() < 0.1 ? 0 : (float)draw(lv ? F_Q8 : F_PLAIN);
        if (pos_bias) bias[c] = fabs(bias[c]) + 0.25;
    }
    if (zb) zero_block(&t, d[0], k);
    if (grad) fill(&t, 3, d[3], lv ? F_Q16 : F_PLAIN, 0.1);
    ref_y(k, d[0], d[1], bias, y);
    int bad = 0, near = ref_pool(k, y, grad ? d[2] : want); /* the gradient's input 2: the pixels of y in double */
    if (grad || lv || !near) { /* else a near tie of plain floats, where the float pixel may differ: skipped */
        for (int64_t j = 0; j < ir_shape_numel(&in[2]); j++) ((float *)t.in[2])[j] = (float)d[2][j];
        count_conv(k, grad, lv != 0);
        if (grad) ref_grad_filter(k, d[0], y, d[3], want + (with_bias ? k->C : 0), with_bias ? want : NULL);
        static const runner runs[] = {run_node, run_node};
        bad = run_checked(&t, runs, 2, want, lv != 0, desc);
    }
    if (grad) free(bias);
    for (int i = 0; i < 4; i++) free(d[i]);
    free(y), free(want);
    kh_free(&t);
    return bad;
}

/* Each drawn case runs the forward and the filter gradient on the same x, w
 * and bias (the gradient given the forward's pixels, in double); the
 * gradient only on exact inputs */
static int test_relu_pool2(int *count) {
    int failed = 0, cases = 0;
    for (int i = 0; i < 260; i++) {
        int reg = i % 2 == 0, lv = i % 7 == 3 ? 0 : (int)irand(1, 3), zb = uniform() < 0.3, pos = uniform() < 0.25;
        double zx = uniform() < 0.4 ? 0.25 : 0;
        conv_case k = draw_conv(reg);
        failed += relu_pool2_case(cases++, OP_CONV2D_RELU_POOL2, &k, lv, zx, zb, pos, 0);
        if (lv) failed += relu_pool2_case(cases++, OP_CONV2D_RELU_POOL2_GRAD_FILTER, &k, lv, zx, zb, pos, i % 3 == 1);
    }
    *count += cases;
    return failed;
}

int main(void) {
    const char *env = getenv("MGC_TEST_SEED");
    uint64_t seed = env && *env ? strtoull(env, NULL, 0) : 20261201;
    rng = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
    for (int i = 0; i < 8; i++) next_u64();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int thin = 0, conv = 0, failed = test_thin(&thin);
    failed += test_relu_pool2(&conv);
    failed += coverage_fails();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("seed %llu: %d thin GEMM cases (%d exact, %d batched, %d with m > 96, %d with n past a block of op(b)), "
           "%d conv2d_relu_pool2 and filter gradient cases (%d on the register windows' geometry, %d of them with "
           "windows inside x; %d windows tied at a maximum > 0, %d at relu's 0; %d filter gradients through tied "
           "windows, %d in registers), %d failed, %.1f s\n",
           (unsigned long long)seed, thin, seen.exact, seen.batched, seen.row_blocks, seen.col_blocks, conv, seen.reg,
           seen.reg_inside, seen.ties, seen.zero_max, seen.grad_ties, seen.grad_reg_ties, failed,
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    if (failed) fprintf(stderr, "(MGC_TEST_SEED=%llu reproduces them)\n", (unsigned long long)seed);
    return failed != 0;
}
