/* fused.c - the CPU kernel of a fused node (issue 14): its program run over
 * tiles of TILE output elements, each instruction a loop the compiler
 * vectorizes over the same runtime/ops_math.h functions the unfused kernels
 * call (compiled as they are: -O3, CPU_CLONES), so a fused chain gives the
 * bits of the unfused one. Intermediates live in tile buffers on the stack
 * (a buffer is reused once its register is dead), so memory is walked once:
 * each input read, the output written.
 * Inputs of the output's element count are read in place; a scalar, and a
 * trailing-axis vector [c] over [..., c] whose c divides TILE, are expanded
 * into a tile once; any other broadcast is gathered per tile.
 * Such a const tile is the same at every tile, and so is an instruction
 * (other than the last) whose operands all are: the program's invariant part
 * (batch norm's dx coefficients, scale * 2 dv / rows ...) runs once per call
 * over one whole tile into buffers of its own, the same ops on the same
 * values as per tile, so the bits do not change.
 * Two programs ResNet-20 runs on large tensors, batch norm's dx and the
 * relu_grad of a sum, are recognized and run as one loop each (below): the
 * same ops again, without the tile buffers between them. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <string.h>

#include "../ops_math.h"
#include "kernels_impl.h"

enum { TILE = 512 };

/* o[i] = EXPR(a = x[i], b = y[i]) for i < n; unary ops get y = x */
#define DEF_FUSED(E, EXPR)                                                                          \
    CPU_CLONES static void f_##E(float *o, const float *x, const float *y, int64_t n, float alpha) { \
        (void)alpha;                                                                                \
        for (int64_t i = 0; i < n; i++) {                                                           \
            float a = x[i], b = y[i];                                                               \
            (void)b;                                                                                \
            o[i] = EXPR;                                                                            \
        }                                                                                           \
    }
MG_FUSED_OPS(DEF_FUSED)
#undef DEF_FUSED

/* erf, gelu and their gradients: gelu.c's loops, compiled with FMA (issue
 * 14, char_gpt speed), as activations.c's unfused kernels; taken before fns */
static void fma_ERF(float *o, const float *x, const float *y, int64_t n, float alpha) {
    (void)y, (void)alpha, cpu_erf(o, x, n);
}
static void fma_ERF_GRAD(float *o, const float *x, const float *y, int64_t n, float alpha) {
    (void)alpha, cpu_erf_grad(o, x, y, n);
}
static void fma_GELU(float *o, const float *x, const float *y, int64_t n, float alpha) {
    (void)y, (void)alpha, cpu_gelu(o, x, n);
}
static void fma_GELU_GRAD(float *o, const float *x, const float *y, int64_t n, float alpha) {
    (void)alpha, cpu_gelu_grad(o, x, y, n);
}

typedef void (*fused_fn)(float *o, const float *x, const float *y, int64_t n, float alpha);
static const fused_fn fns[OP_COUNT] = {
#define X(E, EXPR) [OP_##E] = f_##E,
    MG_FUSED_OPS(X)
#undef X
};
static const fused_fn fma_fns[OP_COUNT] = {
    [OP_ERF] = fma_ERF, [OP_GELU] = fma_GELU, [OP_ERF_GRAD] = fma_ERF_GRAD, [OP_GELU_GRAD] = fma_GELU_GRAD};
static fused_fn fn_of(ir_op op) { return fma_fns[op] ? fma_fns[op] : fns[op]; }

/* How an input maps onto the output's elements. */
typedef enum {
    IN_FULL,     /* the output's element count: element i is x[i] */
    IN_CONST,    /* the same tile every time (scalar, or [c] with TILE % c == 0): filled once */
    IN_PERIODIC, /* trailing [c]: element i is x[i % c] */
    IN_GATHER,   /* any other broadcast: element i through strides */
} in_kind;

typedef struct {
    in_kind kind;
    const float *x;
    int64_t c;                   /* IN_PERIODIC, IN_CONST: the period (1 for a scalar) */
    int64_t stride[IR_MAX_RANK]; /* IN_GATHER: element stride of x along each output axis, 0 broadcast */
    float *tile;                 /* all but IN_FULL: its buffer */
} operand;

/* x's shape without leading 1s equals the trailing axes of out */
static bool trailing(const ir_shape *x, const ir_shape *out) {
    int lead = 0;
    while (lead < x->rank && x->dim[lead] == 1) lead++;
    int rk = x->rank - lead;
    if (rk > out->rank) return false;
    for (int k = 0; k < rk; k++)
        if (x->dim[lead + k] != out->dim[out->rank - rk + k]) return false;
    return true;
}

static operand classify(const float *x, const ir_shape *xs, const ir_shape *out, int64_t n) {
    operand op = {.x = x, .c = ir_shape_numel(xs)};
    if (op.c == n) op.kind = IN_FULL;
    else if (op.c == 1 || trailing(xs, out)) op.kind = TILE % op.c == 0 ? IN_CONST : IN_PERIODIC;
    else {
        op.kind = IN_GATHER;
        int64_t st = 1;
        for (int a = out->rank - 1, j = xs->rank - 1; a >= 0; a--, j--) {
            int64_t d = j >= 0 ? xs->dim[j] : 1;
            op.stride[a] = d == 1 ? 0 : st;
            st *= d;
        }
    }
    return op;
}

/* elements [t0, t0 + len) of a periodic input */
static void fill_periodic(float *t, const float *x, int64_t c, int64_t t0, int64_t len) {
    int64_t j = t0 % c;
    for (int64_t i = 0; i < len; i++) {
        t[i] = x[j];
        if (++j == c) j = 0;
    }
}

/* elements [t0, t0 + len) of a broadcast input through its strides */
static void fill_gather(float *t, const operand *op, const ir_shape *out, int64_t t0, int64_t len) {
    int r = out->rank;
    int64_t idx[IR_MAX_RANK], off = 0, rest = t0;
    for (int a = r - 1; a >= 0; a--) {
        idx[a] = rest % out->dim[a], rest /= out->dim[a];
        off += idx[a] * op->stride[a];
    }
    for (int64_t i = 0; i < len; i++) {
        t[i] = op->x[off];
        for (int a = r - 1; a >= 0; a--) { /* odometer */
            off += op->stride[a];
            if (++idx[a] < out->dim[a]) break;
            off -= op->stride[a] * out->dim[a], idx[a] = 0;
        }
    }
}

/* The buffer each instruction writes: an invariant one (inv[its register]) a
 * slot of its own, kept for the whole call; any other a slot freed by a
 * per-tile register read for the last time (never the instruction's own
 * operands), slots counted from 0. */
static int assign_slots(const ir_fused *f, int n_in, const bool *inv, int *slot) {
    int last[IR_FUSED_MAX_INPUTS + IR_FUSED_MAX_INSTRS], n_slots = 0, free_slots[IR_FUSED_MAX_INSTRS], n_free = 0;
    for (int r = 0; r < n_in + f->n; r++) last[r] = -1;
    for (int j = 0; j < f->n; j++) {
        last[f->ins[j].a] = j;
        if (f->ins[j].b >= 0) last[f->ins[j].b] = j;
    }
    for (int j = 0; j < f->n; j++) {
        if (inv[n_in + j]) {
            slot[j] = n_slots++;
            continue;
        }
        slot[j] = n_free > 0 ? free_slots[--n_free] : n_slots++;
        const ir_finstr *in = &f->ins[j];
        int ops[2] = {in->a, in->b};
        for (int k = 0; k < 2; k++) /* dead after this instruction: reusable from the next */
            if (ops[k] >= n_in && !inv[ops[k]] && last[ops[k]] == j && (k == 0 || ops[1] != ops[0]))
                free_slots[n_free++] = slot[ops[k] - n_in];
    }
    return n_slots;
}

/* ---- batch norm's dx in one pass (issue 14, ResNet-20 speed) ----
 * The input gradient of batch norm in training, as autodiff writes it and
 * the fuse pass merges it, is per tile
 *     t1 = dy * a;  t2 = x - m;  t3 = t2 * b;  t4 = t1 + t3;  out = t4 + k
 * with a, m, b, k the same at every tile (per channel, or the program's
 * invariant part). Run as instructions, each a loop over the tile, it reads
 * and writes a tile buffer per op: 1.60-1.64 ms on ResNet-20's
 * [128,28,28,16], against 0.37-0.41 ms as one loop (`bench_kernels
 * --fused`). This is that one loop: the same operations in the same order,
 * rounded after each (no contraction), so the same bits. */
typedef struct {
    int dy, a, x, m, b, k; /* registers */
} bn_dx;

/* The instructions f runs per tile (not invariant) into at[], if there are
 * exactly `want` of them */
static bool per_tile_instrs(const ir_fused *f, int n_in, const bool *inv, int want, int *at) {
    int n = 0;
    for (int j = 0; j < f->n; j++)
        if (!inv[n_in + j]) {
            if (n == want) return false;
            at[n++] = j;
        }
    return n == want;
}

static bool is_full(int r, int n_in, const operand *in) { return r >= 0 && r < n_in && in[r].kind == IN_FULL; }

/* ins is op(x, c) or op(c, x), x full (want < 0) or register `want`, c
 * invariant: *x and *c get them */
static bool takes(const ir_finstr *ins, ir_op op, int want, int n_in, const bool *inv, const operand *in, int *x,
                  int *c) {
    int ops[2] = {ins->a, ins->b};
    for (int k = 0; k < 2 && ins->op == op && ins->b >= 0; k++) {
        int v = ops[k], w = ops[1 - k];
        if ((want < 0 ? is_full(v, n_in, in) : v == want) && inv[w]) return *x = v, *c = w, true;
    }
    return false;
}

/* Whether f's per-tile instructions are exactly bn_dx's five (mul and add
 * with their operands either way round); p gets the registers. */
static bool match_bn_dx(const ir_fused *f, int n_in, const bool *inv, const operand *in, bn_dx *p) {
    int at[5], t;
    if (!per_tile_instrs(f, n_in, inv, 5, at)) return false;
    const ir_finstr *t1 = &f->ins[at[0]], *t2 = &f->ins[at[1]], *t3 = &f->ins[at[2]], *t4 = &f->ins[at[3]],
                    *out = &f->ins[at[4]];
    int r1 = n_in + at[0], r2 = n_in + at[1], r3 = n_in + at[2], r4 = n_in + at[3];
    p->x = t2->a, p->m = t2->b;
    return takes(t1, OP_MUL, -1, n_in, inv, in, &p->dy, &p->a) && t2->op == OP_SUB && is_full(p->x, n_in, in) &&
           p->m >= 0 && inv[p->m] && takes(t3, OP_MUL, r2, n_in, inv, in, &t, &p->b) && t4->op == OP_ADD &&
           ((t4->a == r1 && t4->b == r3) || (t4->a == r3 && t4->b == r1)) &&
           takes(out, OP_ADD, r4, n_in, inv, in, &t, &p->k);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
typedef float v16 __attribute__((vector_size(64), aligned(4))); /* unaligned loads through memcpy */

/* o may be dy or x (in place); each chunk is loaded before it is stored */
CPU_CLONES static void bn_dx_tile(float *o, const float *dy, const float *a, const float *x, const float *m,
                                  const float *b, const float *k, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        v16 vdy, va, vx, vm, vb, vk;
        memcpy(&vdy, dy + i, 64), memcpy(&va, a + i, 64), memcpy(&vx, x + i, 64);
        memcpy(&vm, m + i, 64), memcpy(&vb, b + i, 64), memcpy(&vk, k + i, 64);
        v16 t1 = vdy * va;
        v16 t2 = vx - vm;
        v16 t3 = t2 * vb;
        v16 t4 = t1 + t3;
        v16 r = t4 + vk;
        memcpy(o + i, &r, 64);
    }
    for (; i < n; i++) {
        float t1 = mg_mul(dy[i], a[i]);
        float t3 = mg_mul(mg_sub(x[i], m[i]), b[i]);
        float t4 = mg_add(t1, t3);
        o[i] = mg_add(t4, k[i]);
    }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

/* ---- a sum's or product's relu gradient in one pass (issue 14, ResNet-20) ----
 * Where a residual branch joins before a relu, the backward pass is
 *     t = a + b (or a * b);  out = relu_grad(y, t)
 * over three full tensors. Memory-bound more than batch norm's dx: in a
 * ResNet-20 step, on [128,28,28,16], 810-867 us a call as two instruction
 * loops and 652-752 us as this one (`bench_kernels --fused`: 0.76 and
 * 0.54-0.60 ms). */
typedef struct {
    ir_op op;
    int a, b, y; /* registers */
} relu_grad_of;

/* a full input or an invariant register: the kernel can read it per tile */
static bool per_tile_operand(int r, int n_in, const bool *inv, const operand *in) {
    return r >= 0 && (inv[r] || is_full(r, n_in, in));
}

static bool match_relu_grad_of(const ir_fused *f, int n_in, const bool *inv, const operand *in, relu_grad_of *p) {
    int at[2];
    if (!per_tile_instrs(f, n_in, inv, 2, at)) return false;
    const ir_finstr *t = &f->ins[at[0]], *out = &f->ins[at[1]];
    *p = (relu_grad_of){t->op, t->a, t->b, out->a};
    return (t->op == OP_ADD || t->op == OP_MUL) && per_tile_operand(t->a, n_in, inv, in) &&
           per_tile_operand(t->b, n_in, inv, in) && out->op == OP_RELU_GRAD && out->b == n_in + at[0] &&
           per_tile_operand(out->a, n_in, inv, in);
}

typedef int32_t v16i __attribute__((vector_size(64), aligned(4)));

/* o may be any of the inputs (in place); each chunk is loaded before it is stored */
CPU_CLONES static void relu_grad_of_tile(float *o, ir_op op, const float *y, const float *a, const float *b,
                                         int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        v16 vy, va, vb, zero = {0};
        memcpy(&vy, y + i, 64), memcpy(&va, a + i, 64), memcpy(&vb, b + i, 64);
        v16 t = op == OP_ADD ? va + vb : va * vb;
        v16i r = (v16i)t & (v16i)(vy > zero); /* mg_relu_grad: t where y > 0, else +0 */
        memcpy(o + i, &r, 64);
    }
    for (; i < n; i++) o[i] = mg_relu_grad(y[i], op == OP_ADD ? mg_add(a[i], b[i]) : mg_mul(a[i], b[i]));
}

int cpu_k_fused(const rt_kernel_args *k, char *err, size_t cap) {
    const ir_node *node = k->node;
    const ir_fused *f = node->fused;
    if (!f) return cpu_kerr(k, err, cap, "has no program");
    int n_in = node->n_in, slot[IR_FUSED_MAX_INSTRS];
    for (int j = 0; j < f->n; j++)
        if (!fns[f->ins[j].op]) return cpu_kerr(k, err, cap, "instruction %d: no fused kernel for '%s'", j, ir_ops[f->ins[j].op].name);
    int64_t n = OUT_NUMEL(k);
    operand in[IR_FUSED_MAX_INPUTS];
    bool inv[IR_FUSED_MAX_INPUTS + IR_FUSED_MAX_INSTRS]; /* the register is the same at every tile */
    for (int i = 0; i < n_in; i++) {
        in[i] = classify(IN_F32(k, i), IN_SHAPE(k, i), &node->shape, n);
        inv[i] = in[i].kind == IN_CONST;
    }
    for (int j = 0; j < f->n; j++) {
        const ir_finstr *ins = &f->ins[j];
        inv[n_in + j] = j < f->n - 1 && inv[ins->a] && (ins->b < 0 || inv[ins->b]);
    }
    int n_slots = assign_slots(f, n_in, inv, slot), n_tiles = n_slots + n_in;
    float space[(size_t)n_tiles * TILE] __attribute__((aligned(64)));
    const float *reg[IR_FUSED_MAX_INPUTS + IR_FUSED_MAX_INSTRS];
    for (int i = 0; i < n_in; i++) {
        in[i].tile = space + (size_t)(n_slots + i) * TILE;
        if (in[i].kind == IN_CONST) fill_periodic(in[i].tile, in[i].x, in[i].c, 0, TILE), reg[i] = in[i].tile;
    }
    for (int j = 0; j < f->n && n > 0; j++) { /* the invariant part, once */
        const ir_finstr *ins = &f->ins[j];
        if (!inv[n_in + j]) continue;
        float *o = space + (size_t)slot[j] * TILE;
        fn_of(ins->op)(o, reg[ins->a], reg[ins->b >= 0 ? ins->b : ins->a], TILE, (float)ins->alpha);
        reg[n_in + j] = o;
    }
    float *out = k->out;
    bn_dx bn;
    relu_grad_of rg;
    /* a one-loop program's operand at tile t0: an invariant register's tile, or a full input's */
#define TILE_OF(r) (inv[r] ? reg[r] : in[r].x + t0)
    if (match_bn_dx(f, n_in, inv, in, &bn)) {
        for (int64_t t0 = 0; t0 < n; t0 += TILE)
            bn_dx_tile(out + t0, TILE_OF(bn.dy), TILE_OF(bn.a), TILE_OF(bn.x), TILE_OF(bn.m), TILE_OF(bn.b),
                       TILE_OF(bn.k), n - t0 < TILE ? n - t0 : TILE);
        return 0;
    }
    if (match_relu_grad_of(f, n_in, inv, in, &rg)) {
        for (int64_t t0 = 0; t0 < n; t0 += TILE)
            relu_grad_of_tile(out + t0, rg.op, TILE_OF(rg.y), TILE_OF(rg.a), TILE_OF(rg.b), n - t0 < TILE ? n - t0 : TILE);
        return 0;
    }
#undef TILE_OF
    for (int64_t t0 = 0; t0 < n; t0 += TILE) {
        int64_t len = n - t0 < TILE ? n - t0 : TILE;
        for (int i = 0; i < n_in; i++) {
            operand *x = &in[i];
            if (x->kind == IN_FULL) reg[i] = x->x + t0;
            else if (x->kind == IN_PERIODIC) fill_periodic(x->tile, x->x, x->c, t0, len);
            else if (x->kind == IN_GATHER) fill_gather(x->tile, x, &node->shape, t0, len);
            if (x->kind != IN_FULL) reg[i] = x->tile;
        }
        for (int j = 0; j < f->n; j++) {
            const ir_finstr *ins = &f->ins[j];
            if (inv[n_in + j]) continue;
            float *o = j == f->n - 1 ? out + t0 : space + (size_t)slot[j] * TILE;
            fn_of(ins->op)(o, reg[ins->a], reg[ins->b >= 0 ? ins->b : ins->a], len, (float)ins->alpha);
            reg[n_in + j] = o;
        }
    }
    return 0;
}
