/* test_fused.c - the fused kernel (issue 14) against the unfused kernels it
 * replaces: random programs over inputs broadcast every way the kernel
 * distinguishes (full, scalar, trailing vector with and without a period
 * dividing the tile, general broadcast with leading 1s), output sizes that
 * cross tiles and end mid-tile, each program run as one fused node and as a
 * chain of one node per instruction through cpu_kernel_run; the results must
 * agree bit for bit (the same ops_math.h functions in the same order), also
 * when the fused node writes over its first input (in place). Every op a
 * program may hold is drawn. A second set draws every input but the first
 * from scalars and trailing vectors whose length divides the kernel's tile,
 * so that instructions over those alone (the invariant part, run once per
 * call) occur, counted: the set fails when none did. Last, the programs
 * that the kernel runs in one loop (batch norm's dx, relu_grad of a sum). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../ir/ir.h"
#include "../../runtime/cpu/cpu_kernels.h"
#include "harness.h" /* kh_shape */

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint32_t next(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}
static int pick(int n) { return (int)(next() % (uint32_t)n); }

static int n_ops;
static ir_op ops[OP_COUNT];

static void *xalloc(size_t n) {
    void *p = calloc(n ? n : 1, 1);
    if (!p) abort();
    return p;
}

/* an input shape broadcastable to out, of kind k */
static ir_shape input_shape(const ir_shape *out, int k) {
    ir_shape s = *out;
    switch (k) {
    case 0: return s;                                    /* full */
    case 1: return ir_shape_make(0, NULL);               /* scalar */
    case 2: return ir_shape_make(1, &out->dim[out->rank - 1]); /* trailing vector */
    case 3: /* trailing two axes, with a leading 1 */
        if (out->rank < 2) return s;
        return ir_shape_make(3, (int64_t[]){1, out->dim[out->rank - 2], out->dim[out->rank - 1]});
    default: /* general: random axes set to 1 */
        for (int a = 0; a < s.rank; a++)
            if (pick(2)) s.dim[a] = 1;
        return s;
    }
}

typedef struct {
    ir_module *m;
    int n_in;
    float *val[64];    /* by node index */
} chain;

static float *run(ir_module *m, int i, float **val, void *out, char *err, size_t cap) {
    const ir_node *n = &m->g.nodes[i];
    const ir_node *in_nodes[IR_FUSED_MAX_INPUTS];
    const void *in[IR_FUSED_MAX_INPUTS];
    for (int k = 0; k < n->n_in; k++) in_nodes[k] = &m->g.nodes[n->in[k]], in[k] = val[n->in[k]];
    int64_t step = 1;
    int training = 1, numerics = 0;
    rt_kernel_args a = {.m = m, .node = n, .in_nodes = in_nodes, .in = in, .out = out, .step = &step,
                        .training = &training, .check_numerics = &numerics, .replicas = 1};
    if (cpu_kernel_run(&a, err, cap)) return NULL;
    return out;
}

/* bitwise, NaN equal to NaN */
static bool same(const float *a, const float *b, int64_t n, int64_t *at) {
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], 4) && !(isnan(a[i]) && isnan(b[i]))) return *at = i, false;
    return true;
}

static int n_invariant; /* programs with an instruction (not the last) over scalars and [c] inputs alone */

/* Runs f as one fused node over m's inputs 0 .. n_in-1 (val: every node's
 * value; the unfused chain's result in val[last]) and compares it with the
 * chain bit for bit, also in place over input 0 when that is the output's
 * size; frees val's buffers and m. Returns 1 on a difference. */
static int compare_fused(ir_module *m, float **val, int n_in, const ir_fused *f, int last, const char *name) {
    char err[256];
    int in[IR_FUSED_MAX_INPUTS];
    for (int k = 0; k < n_in; k++) in[k] = k;
    int fn = ir_add(m, OP_FUSED, in, n_in, (ir_loc){0}), failed = 0;
    ir_node_at(m, fn)->fused = ir_fused_add(m, f);
    int64_t numel = ir_shape_numel(&m->g.nodes[last].shape), at = 0;
    float *got = xalloc((size_t)numel * 4), *x0 = val[0];
    if (!ir_infer_node(m, fn, err, sizeof err)) failed = fprintf(stderr, "FAIL %s: fused rule: %s\n", name, err);
    else if (!ir_shape_eq(&ir_node_at(m, fn)->shape, &m->g.nodes[last].shape))
        failed = fprintf(stderr, "FAIL %s: shape\n", name);
    else if (!run(m, fn, val, got, err, sizeof err)) failed = fprintf(stderr, "FAIL %s: fused: %s\n", name, err);
    else if (!same(got, val[last], numel, &at))
        failed = fprintf(stderr, "FAIL %s: element %lld: fused %.9g, unfused %.9g\n", name, (long long)at, got[at],
                         val[last][at]);
    else if (ir_shape_numel(&m->g.nodes[0].shape) == numel) { /* in place, as the memory plan may place it */
        val[0] = got, memcpy(got, x0, (size_t)numel * 4);
        if (!run(m, fn, val, got, err, sizeof err)) failed = fprintf(stderr, "FAIL %s: in place: %s\n", name, err);
        else if (!same(got, val[last], numel, &at))
            failed = fprintf(stderr, "FAIL %s: in place differs at %lld\n", name, (long long)at);
        val[0] = x0;
    }
    free(got);
    for (int i = 0; i < m->g.n; i++) free(val[i]);
    ir_module_free(m);
    return failed ? 1 : 0;
}

/* One random program on output shape out; returns 0 when fused == unfused.
 * const_inputs: inputs 1.. scalars or trailing vectors. */
static int one_program(int case_no, const ir_shape *out, int first_op, bool const_inputs) {
    ir_module *m = ir_module_new();
    float *val[128] = {0};
    int n_in = 2 + pick(4), n_instr = 1 + pick(8);
    int64_t numel = ir_shape_numel(out);
    for (int k = 0; k < n_in; k++) {
        int i = ir_add(m, OP_INPUT, NULL, 0, (ir_loc){0});
        ir_node *x = ir_node_at(m, i);
        x->dtype = IR_F32, x->shape = input_shape(out, k == 0 ? 0 : const_inputs ? 1 + pick(2) : pick(5));
        x->name = ir_intern(m, "x");
        int64_t len = ir_shape_numel(&x->shape);
        val[i] = xalloc((size_t)len * 4);
        for (int64_t e = 0; e < len; e++) val[i][e] = (float)((int)(next() % 4001) - 2000) / 500.0f;
    }
    ir_fused f = {0};
    char err[256];
    bool small[128] = {0}, any_small = false; /* register of a scalar or [c] value */
    for (int k = 1; k < n_in; k++) small[k] = ir_shape_numel(&ir_node_at(m, k)->shape) < numel;
    for (int j = 0; j < n_instr + 1; j++) { /* the last: add(., full input 0), so the output has out's shape */
        int arity = 0, node = -1;
        for (int tries = 0; node < 0; tries++) {
            ir_op op = j == n_instr ? OP_ADD : j == 0 ? ops[first_op] : ops[pick(n_ops)];
            if (!ir_fused_op_ok(op, &arity)) abort();
            int a = j == n_instr ? n_in + j - 1 : pick(n_in + j), b = arity == 2 ? (j == n_instr ? 0 : pick(n_in + j)) : -1;
            int in[2] = {a, b};
            node = ir_add(m, op, in, arity, (ir_loc){0});
            ir_node *n = ir_node_at(m, node);
            if (*ir_ops[op].fattrs) n->fattr[0] = 0.25 + pick(4) * 0.5;
            if (!ir_infer_node(m, node, err, sizeof err)) { /* a grad pair over unequal shapes: draw again */
                free(n->in), m->g.n--, node = -1;
                if (tries > 100) abort();
                continue;
            }
            f.ins[f.n++] = (ir_finstr){op, a, b, n->fattr[0]};
            small[n_in + j] = small[a] && (b < 0 || small[b]);
            any_small |= j < n_instr && small[n_in + j];
        }
        const ir_node *n = ir_node_at(m, node);
        val[node] = xalloc((size_t)ir_shape_numel(&n->shape) * 4);
        if (!run(m, node, val, val[node], err, sizeof err)) return fprintf(stderr, "FAIL case %d: unfused: %s\n", case_no, err), 1;
    }
    n_invariant += any_small;
    char name[64];
    snprintf(name, sizeof name, "case %d (%s first)", case_no, ir_ops[ops[first_op]].name);
    return compare_fused(m, val, n_in, &f, m->g.n - 1, name);
}

/* A given program (n_in inputs of the given shapes, then its instructions)
 * against its unfused chain, bit for bit, also in place over input 0. */
static int fixed_program(const char *name, int n_in, const ir_shape *in_shape, int n, const ir_finstr *ins) {
    ir_module *m = ir_module_new();
    float *val[IR_FUSED_MAX_INPUTS + IR_FUSED_MAX_INSTRS] = {0};
    for (int k = 0; k < n_in; k++) {
        int i = ir_add(m, OP_INPUT, NULL, 0, (ir_loc){0});
        ir_node_at(m, i)->dtype = IR_F32, ir_node_at(m, i)->shape = in_shape[k];
        int64_t len = ir_shape_numel(&in_shape[k]);
        val[i] = xalloc((size_t)len * 4);
        for (int64_t e = 0; e < len; e++) val[i][e] = (float)((int)(next() % 4001) - 2000) / 700.0f;
    }
    ir_fused f = {.n = n};
    char err[256];
    for (int j = 0; j < n; j++) {
        f.ins[j] = ins[j];
        int node = ir_add(m, ins[j].op, (int[]){ins[j].a, ins[j].b}, ins[j].b >= 0 ? 2 : 1, (ir_loc){0});
        ir_node_at(m, node)->fattr[0] = ins[j].alpha;
        if (!ir_infer_node(m, node, err, sizeof err)) return fprintf(stderr, "FAIL %s: %s\n", name, err), 1;
        val[node] = xalloc((size_t)ir_shape_numel(&ir_node_at(m, node)->shape) * 4);
        if (!run(m, node, val, val[node], err, sizeof err)) return fprintf(stderr, "FAIL %s unfused: %s\n", name, err), 1;
    }
    return compare_fused(m, val, n_in, &f, m->g.n - 1, name);
}

/* The programs the kernel runs in one loop (fused.c), as the fuse pass writes
 * them for ResNet-20, with the operands of add and mul either way round (bit
 * k of swap swaps instruction k's): batch norm's dx, and relu_grad of a sum
 * or product (of full tensors, or of a full one and a scalar or [c]). */
static int one_loop_programs(int *count) {
    static const char *const outs[] = {"4,7,7,16", "2,14,14,32", "3,5,5,64", "2,3,3,16"};
    int failed = 0;
    for (int s = 0; s < 4; s++) {
        ir_shape out = kh_shape(outs[s]), c = ir_shape_make(1, &out.dim[out.rank - 1]), one = ir_shape_make(0, NULL);
        for (int swap = 0; swap < 256; swap += 37, ++*count) {
            const ir_shape bn_in[8] = {out, c, c, c, one, out, c, one}; /* dy, a, ., ., ., x, mean, . */
            ir_finstr bn[8] = {{OP_MUL, 0, 1, 0}, {OP_NEG, 2, -1, 0}, {OP_MUL, 3, 4, 0}, {OP_SUB, 5, 6, 0},
                               {OP_MUL, 11, 10, 0}, {OP_ADD, 8, 12, 0}, {OP_MUL, 9, 7, 0}, {OP_ADD, 13, 14, 0}};
            for (int j = 0; j < 8; j++)
                if (swap >> j & 1 && bn[j].op != OP_SUB && bn[j].b >= 0) bn[j] = (ir_finstr){bn[j].op, bn[j].b, bn[j].a, 0};
            char name[64];
            snprintf(name, sizeof name, "bn dx %s swap %d", outs[s], swap);
            failed += fixed_program(name, 8, bn_in, 8, bn);
        }
        for (int k = 0; k < 12; k++, ++*count) { /* k: op, operand order, b full or [c] or scalar */
            const ir_shape rg_in[3] = {out, k >> 2 == 0 ? out : k >> 2 == 1 ? c : one, out};
            int kk = k & 3; /* bit 0: mul, bit 1: swapped */
            ir_op op = kk & 1 ? OP_MUL : OP_ADD;
            ir_finstr rg[2] = {{op, kk & 2 ? 1 : 0, kk & 2 ? 0 : 1, 0}, {OP_RELU_GRAD, 2, 3, 0}};
            char name[64];
            snprintf(name, sizeof name, "relu_grad of %s %s case %d", ir_ops[op].name, outs[s], k);
            failed += fixed_program(name, 3, rg_in, 2, rg);
        }
    }
    return failed;
}

/* The rule refuses a program whose register does not broadcast into the
 * output: its kernels would read an input beyond its end. */
static int test_rule(void) {
    ir_module *m = ir_module_new();
    int in[2];
    for (int k = 0; k < 2; k++) {
        in[k] = ir_add(m, OP_INPUT, NULL, 0, (ir_loc){0});
        ir_node_at(m, in[k])->dtype = IR_F32;
        ir_node_at(m, in[k])->shape = ir_shape_make(1, (int64_t[]){k ? 5 : 3});
    }
    int n = ir_add(m, OP_FUSED, in, 2, (ir_loc){0});
    ir_fused f = {.n = 2};
    f.ins[0] = (ir_finstr){OP_NEG, 0, -1, 0}, f.ins[1] = (ir_finstr){OP_NEG, 1, -1, 0};
    ir_node_at(m, n)->fused = ir_fused_add(m, &f);
    char err[256] = "";
    int bad = ir_infer_node(m, n, err, sizeof err) ||
              strcmp(err, "'fused' register 0 (f32[3]) does not broadcast to the output f32[5]");
    if (bad) fprintf(stderr, "FAIL rule: got '%s'\n", err);
    ir_module_free(m);
    return bad;
}

int main(void) {
    for (int op = 0; op < OP_COUNT; op++) {
        int arity;
        if (ir_fused_op_ok((ir_op)op, &arity)) ops[n_ops++] = (ir_op)op;
    }
    static const char *const outs[] = {"1", "7", "513", "3,41", "4,128", "2,5,6,8", "3,7,61", "2,3,5,7,3", "1031", "64,10"};
    int failed = test_rule(), cases = 0;
    for (int rep = 0; rep < 6; rep++)
        for (int s = 0; s < (int)(sizeof outs / sizeof *outs); s++, cases++) {
            ir_shape out = kh_shape(outs[s]);
            failed += one_program(cases, &out, cases % n_ops, false);
        }
    /* scalars and [c] with c dividing the tile (512): invariant instructions */
    static const char *const bn_outs[] = {"1", "5,16", "4,8,8,16", "3,7,32", "2,9,64", "1031", "2,3,512"};
    int before = n_invariant;
    for (int rep = 0; rep < 12; rep++)
        for (int s = 0; s < (int)(sizeof bn_outs / sizeof *bn_outs); s++, cases++) {
            ir_shape out = kh_shape(bn_outs[s]);
            failed += one_program(cases, &out, cases % n_ops, true);
        }
    int inv = n_invariant - before;
    failed += one_loop_programs(&cases);
    if (inv < 20) failed += fprintf(stderr, "FAIL only %d programs with an invariant instruction\n", inv) > 0;
    printf("fused: %d programs, random over %d ops (%d with an invariant part) and the one-loop ones, %d failed\n",
           cases, n_ops, inv, failed);
    return failed != 0;
}
