/* elementwise.c - elementwise kernels over runtime/ops_math.h: numpy
 * broadcasting (collapsed to a short loop nest), unary ops, their gradients,
 * cast and dropout. Loops are written so the compiler vectorizes them. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <string.h>

#include "../ops_math.h"
#include "kernels_impl.h"

/* ---- binary ops with broadcasting ---- */

typedef struct {
    void (*vv)(float *o, const float *a, const float *b, int64_t n);
    void (*vs)(float *o, const float *a, float b, int64_t n);
    void (*sv)(float *o, float a, const float *b, int64_t n);
    /* rows x n: a full, b one row of n (bias add) / a one row, b full */
    void (*vr)(float *o, const float *a, const float *b, int64_t rows, int64_t n);
    void (*rv)(float *o, const float *a, const float *b, int64_t rows, int64_t n);
} binop;

#define DEF_BINOP(NAME, F)                                                                         \
    CPU_CLONES static void NAME##_vv(float *o, const float *a, const float *b, int64_t n) {                   \
        for (int64_t i = 0; i < n; i++) o[i] = F(a[i], b[i]);                                      \
    }                                                                                              \
    CPU_CLONES static void NAME##_vs(float *o, const float *a, float b, int64_t n) {                          \
        for (int64_t i = 0; i < n; i++) o[i] = F(a[i], b);                                         \
    }                                                                                              \
    CPU_CLONES static void NAME##_sv(float *o, float a, const float *b, int64_t n) {                          \
        for (int64_t i = 0; i < n; i++) o[i] = F(a, b[i]);                                         \
    }                                                                                              \
    CPU_CLONES static void NAME##_vr(float *o, const float *a, const float *b, int64_t rows, int64_t n) {     \
        for (int64_t r = 0; r < rows; r++, o += n, a += n)                                         \
            for (int64_t i = 0; i < n; i++) o[i] = F(a[i], b[i]);                                  \
    }                                                                                              \
    CPU_CLONES static void NAME##_rv(float *o, const float *a, const float *b, int64_t rows, int64_t n) {     \
        for (int64_t r = 0; r < rows; r++, o += n, b += n)                                         \
            for (int64_t i = 0; i < n; i++) o[i] = F(a[i], b[i]);                                  \
    }                                                                                              \
    static const binop NAME = {NAME##_vv, NAME##_vs, NAME##_sv, NAME##_vr, NAME##_rv};

static inline float first(float a, float b) { return (void)b, a; }

DEF_BINOP(op_add, mg_add)
DEF_BINOP(op_sub, mg_sub)
DEF_BINOP(op_mul, mg_mul)
DEF_BINOP(op_div, mg_div)
DEF_BINOP(op_first, first)
DEF_BINOP(op_less, mg_less)
DEF_BINOP(op_less_equal, mg_less_equal)
DEF_BINOP(op_greater, mg_greater)
DEF_BINOP(op_greater_equal, mg_greater_equal)
DEF_BINOP(op_equal, mg_equal)
DEF_BINOP(op_not_equal, mg_not_equal)
/* issue 12 */
DEF_BINOP(op_maximum, mg_maximum)
DEF_BINOP(op_minimum, mg_minimum)
DEF_BINOP(op_pow, mg_pow)

/* A broadcast collapsed to at most IR_MAX_RANK dims in which adjacent dims
 * with the same (a varies, b varies) pattern are merged. */
typedef struct {
    int rank;
    int64_t dim[IR_MAX_RANK], sa[IR_MAX_RANK], sb[IR_MAX_RANK]; /* element strides, 0 = broadcast */
} bcast;

static int64_t padded(const ir_shape *s, int r, int i) {
    int j = s->rank - r + i;
    return j >= 0 ? s->dim[j] : 1;
}

static bcast collapse(const ir_shape *out, const ir_shape *a, const ir_shape *b) {
    bcast c = {0};
    int va[IR_MAX_RANK], vb[IR_MAX_RANK], r = out->rank;
    for (int i = 0; i < r; i++) {
        int64_t d = out->dim[i];
        if (d == 1) continue;
        int pa = padded(a, r, i) == d, pb = padded(b, r, i) == d;
        if (c.rank > 0 && va[c.rank - 1] == pa && vb[c.rank - 1] == pb) {
            c.dim[c.rank - 1] *= d;
        } else {
            va[c.rank] = pa, vb[c.rank] = pb, c.dim[c.rank++] = d;
        }
    }
    if (c.rank == 0) c.dim[0] = 1, va[0] = vb[0] = 1, c.rank = 1;
    int64_t ta = 1, tb = 1;
    for (int i = c.rank - 1; i >= 0; i--) {
        c.sa[i] = va[i] ? ta : 0, c.sb[i] = vb[i] ? tb : 0;
        if (va[i]) ta *= c.dim[i];
        if (vb[i]) tb *= c.dim[i];
    }
    return c;
}

/* one innermost run of n elements */
static void run_inner(const binop *f, float *o, const float *a, int64_t sa, const float *b, int64_t sb, int64_t n) {
    if (sa && sb) f->vv(o, a, b, n);
    else if (sa) f->vs(o, a, b[0], n);
    else if (sb) f->sv(o, a[0], b, n);
    else for (int64_t i = 0; i < n; i++) f->vs(o + i, a, b[0], 1);
}

static void broadcast_apply(const binop *f, float *o, const ir_shape *so, const float *a, const ir_shape *sa,
                            const float *b, const ir_shape *sb) {
    bcast c = collapse(so, sa, sb);
    int in = c.rank - 1;
    if (c.rank == 2 && c.sa[1] == 1 && c.sb[1] == 1 && (c.sa[0] == 0) != (c.sb[0] == 0)) { /* one side a row */
        (c.sb[0] ? f->rv : f->vr)(o, a, b, c.dim[0], c.dim[1]);
        return;
    }
    int64_t idx[IR_MAX_RANK] = {0}, oa = 0, ob = 0, n = c.dim[in];
    for (;;) {
        run_inner(f, o, a + oa, c.sa[in], b + ob, c.sb[in], n);
        o += n;
        int d = in - 1;
        for (; d >= 0; d--) { /* odometer over the outer dims */
            oa += c.sa[d], ob += c.sb[d];
            if (++idx[d] < c.dim[d]) break;
            oa -= c.sa[d] * c.dim[d], ob -= c.sb[d] * c.dim[d], idx[d] = 0;
        }
        if (d < 0) return;
    }
}

int cpu_k_binary(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    static const binop *const ops[] = {
        [OP_ADD] = &op_add, [OP_SUB] = &op_sub, [OP_MUL] = &op_mul, [OP_DIV] = &op_div,
        [OP_LESS] = &op_less, [OP_LESS_EQUAL] = &op_less_equal, [OP_GREATER] = &op_greater,
        [OP_GREATER_EQUAL] = &op_greater_equal, [OP_EQUAL] = &op_equal, [OP_NOT_EQUAL] = &op_not_equal,
        [OP_MAXIMUM] = &op_maximum, [OP_MINIMUM] = &op_minimum, [OP_POW] = &op_pow};
    broadcast_apply(ops[k->node->op], k->out, &k->node->shape, IN_F32(k, 0), IN_SHAPE(k, 0), IN_F32(k, 1),
                    IN_SHAPE(k, 1));
    return 0;
}

int cpu_k_broadcast_to(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    broadcast_apply(&op_first, k->out, &k->node->shape, IN_F32(k, 0), IN_SHAPE(k, 0), IN_F32(k, 0), IN_SHAPE(k, 0));
    return 0;
}

/* ---- unary ops and their gradients ---- */

#define DEF_UNARY(NAME, F)                                                                         \
    CPU_CLONES static void NAME(float *o, const float *x, int64_t n) {                                        \
        for (int64_t i = 0; i < n; i++) o[i] = F(x[i]);                                            \
    }
DEF_UNARY(u_neg, mg_neg)
DEF_UNARY(u_exp, mg_exp)
DEF_UNARY(u_log, mg_log)
DEF_UNARY(u_sqrt, mg_sqrt)
DEF_UNARY(u_relu, mg_relu)
DEF_UNARY(u_sigmoid, mg_sigmoid)
DEF_UNARY(u_tanh, mg_tanh)

int cpu_k_unary(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    static void (*const ops[])(float *, const float *, int64_t) = {
        [OP_NEG] = u_neg, [OP_EXP] = u_exp, [OP_LOG] = u_log, [OP_SQRT] = u_sqrt,
        [OP_RELU] = u_relu, [OP_SIGMOID] = u_sigmoid, [OP_TANH] = u_tanh};
    ops[k->node->op](k->out, IN_F32(k, 0), OUT_NUMEL(k));
    return 0;
}

DEF_BINOP(g_relu, mg_relu_grad)
DEF_BINOP(g_sigmoid, mg_sigmoid_grad)
DEF_BINOP(g_tanh, mg_tanh_grad)

/* (x or y, dy) -> dx, equal shapes */
int cpu_k_unary_grad(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    static const binop *const ops[] = {
        [OP_RELU_GRAD] = &g_relu, [OP_SIGMOID_GRAD] = &g_sigmoid, [OP_TANH_GRAD] = &g_tanh};
    ops[k->node->op]->vv(k->out, IN_F32(k, 0), IN_F32(k, 1), OUT_NUMEL(k));
    return 0;
}

/* ---- cast between f32, f64, i32 and u8 (float to int truncates, saturating) ---- */

static double load(const void *p, ir_dtype t, int64_t i) {
    switch (t) {
    case IR_F32: return ((const float *)p)[i];
    case IR_F64: return ((const double *)p)[i];
    case IR_I32: return ((const int32_t *)p)[i];
    case IR_U8: return ((const uint8_t *)p)[i];
    default: return 0;
    }
}

static double clamp(double v, double lo, double hi) { return v != v ? 0 : v < lo ? lo : v > hi ? hi : v; }

static void store(void *p, ir_dtype t, int64_t i, double v) {
    switch (t) {
    case IR_F32: ((float *)p)[i] = (float)v; break;
    case IR_F64: ((double *)p)[i] = v; break;
    case IR_I32: ((int32_t *)p)[i] = (int32_t)clamp(v, -2147483648.0, 2147483647.0); break;
    case IR_U8: ((uint8_t *)p)[i] = (uint8_t)clamp(v, 0, 255); break;
    default: break;
    }
}

static void cast_u8_f32(float *o, const uint8_t *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) o[i] = (float)x[i];
}
static void cast_i32_f32(float *o, const int32_t *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) o[i] = (float)x[i];
}

int cpu_k_cast(const rt_kernel_args *k, char *err, size_t cap) {
    ir_dtype from = k->in_nodes[0]->dtype, to = k->node->dtype;
    int64_t n = OUT_NUMEL(k);
    if (from >= IR_DTYPE_COUNT || to >= IR_DTYPE_COUNT) return cpu_kerr(k, err, cap, "unknown dtype");
    if (from == to) memmove(k->out, k->in[0], (size_t)n * ir_dtype_size(to));
    else if (from == IR_U8 && to == IR_F32) cast_u8_f32(k->out, k->in[0], n);
    else if (from == IR_I32 && to == IR_F32) cast_i32_f32(k->out, k->in[0], n);
    else for (int64_t i = 0; i < n; i++) store(k->out, to, i, load(k->in[0], from, i));
    return 0;
}

/* issue 14 (speed): the (seed, step) part of the hash once per call, the
 * per-element hash in a loop the compiler vectorizes (the bits of
 * mg_dropout_scale: its integer form, mg_dropout_bits against the threshold;
 * CPU_HASH_CLONES, kernels_impl.h) */
CPU_HASH_CLONES void cpu_dropout_apply(float *o, const float *x, int64_t n, uint64_t key, uint64_t base, float rate) {
    float keep = 1.0f / (1.0f - rate); /* outside the loop: a division in a select blocks if-conversion */
    uint32_t thr = mg_dropout_threshold(rate);
    for (int64_t i = 0; i < n; i++) o[i] = x[i] * (mg_dropout_bits(key, base + (uint64_t)i) >= thr ? keep : 0.0f);
}

/* ---- dropout: x * mask(seed, step, replica * numel + i) / (1 - rate) in
 * training, x in eval and predict; the gradient applies the same mask to dy ---- */
int cpu_k_dropout(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    const float *x = IN_F32(k, 0);
    float *o = k->out, rate = (float)k->node->fattr[0];
    int64_t n = OUT_NUMEL(k), step = k->step ? *k->step : 0;
    if (!k->training || !*k->training) {
        if (o != x) memcpy(o, x, (size_t)n * sizeof *o);
        return 0;
    }
    uint64_t key = mg_dropout_key((uint64_t)k->node->iattr[0], step), base = (uint64_t)k->replica * (uint64_t)n;
    cpu_dropout_apply(o, x, n, key, base, rate);
    return 0;
}
