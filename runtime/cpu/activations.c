/* activations.c - the elementwise activations of issue 12 (abs, erf, gelu,
 * softplus, selu, elu, leaky_relu) and their gradients over runtime/ops_math.h,
 * and the in_top_k metric. Loops are written so the compiler vectorizes them. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include "../ops_math.h"
#include "kernels_impl.h"

/* ---- unary: x -> y, alpha the op's float attribute (unused by most) ---- */

#define DEF_ACT(NAME, EXPR)                                                                        \
    CPU_CLONES static void NAME(float *o, const float *x, int64_t n, float alpha) {                \
        (void)alpha;                                                                               \
        for (int64_t i = 0; i < n; i++) o[i] = EXPR;                                               \
    }
DEF_ACT(a_abs, mg_abs(x[i]))
/* erf and gelu: gelu.c's loops, compiled with FMA (issue 14), as fused.c's */
static void a_erf(float *o, const float *x, int64_t n, float alpha) { (void)alpha, cpu_erf(o, x, n); }
static void a_gelu(float *o, const float *x, int64_t n, float alpha) { (void)alpha, cpu_gelu(o, x, n); }
DEF_ACT(a_softplus, mg_softplus(x[i]))
DEF_ACT(a_selu, mg_selu(x[i]))
DEF_ACT(a_elu, mg_elu(x[i], alpha))
DEF_ACT(a_leaky_relu, mg_leaky_relu(x[i], alpha))

typedef void (*act_fn)(float *o, const float *x, int64_t n, float alpha);

int cpu_k_activation(const rt_kernel_args *k, char *err, size_t cap) {
    static const act_fn ops[OP_COUNT] = {
        [OP_ABS] = a_abs, [OP_ERF] = a_erf, [OP_GELU] = a_gelu, [OP_SOFTPLUS] = a_softplus,
        [OP_SELU] = a_selu, [OP_ELU] = a_elu, [OP_LEAKY_RELU] = a_leaky_relu};
    if (!ops[k->node->op]) return cpu_kerr(k, err, cap, "is not an activation");
    ops[k->node->op](k->out, IN_F32(k, 0), OUT_NUMEL(k), (float)k->node->fattr[0]);
    return 0;
}

/* ---- gradients: (x, dy) -> dx, equal shapes ---- */

#define DEF_ACT_GRAD(NAME, EXPR)                                                                   \
    CPU_CLONES static void NAME(float *o, const float *x, const float *dy, int64_t n, float alpha) { \
        (void)alpha;                                                                               \
        for (int64_t i = 0; i < n; i++) o[i] = EXPR;                                               \
    }
DEF_ACT_GRAD(g_abs, mg_abs_grad(x[i], dy[i]))
static void g_erf(float *o, const float *x, const float *dy, int64_t n, float alpha) {
    (void)alpha, cpu_erf_grad(o, x, dy, n);
}
static void g_gelu(float *o, const float *x, const float *dy, int64_t n, float alpha) {
    (void)alpha, cpu_gelu_grad(o, x, dy, n);
}
DEF_ACT_GRAD(g_selu, mg_selu_grad(x[i], dy[i]))
DEF_ACT_GRAD(g_elu, mg_elu_grad(x[i], dy[i], alpha))
DEF_ACT_GRAD(g_leaky_relu, mg_leaky_relu_grad(x[i], dy[i], alpha))

typedef void (*act_grad_fn)(float *o, const float *x, const float *dy, int64_t n, float alpha);

int cpu_k_activation_grad(const rt_kernel_args *k, char *err, size_t cap) {
    static const act_grad_fn ops[OP_COUNT] = {
        [OP_ABS_GRAD] = g_abs, [OP_ERF_GRAD] = g_erf, [OP_GELU_GRAD] = g_gelu, [OP_SELU_GRAD] = g_selu,
        [OP_ELU_GRAD] = g_elu, [OP_LEAKY_RELU_GRAD] = g_leaky_relu};
    if (!ops[k->node->op]) return cpu_kerr(k, err, cap, "is not an activation gradient");
    ops[k->node->op](k->out, IN_F32(k, 0), IN_F32(k, 1), OUT_NUMEL(k), (float)k->node->fattr[0]);
    return 0;
}

/* [..., cols] as rows x cols */
static void rows_cols(const ir_shape *s, int64_t *rows, int64_t *cols) {
    *cols = s->rank ? s->dim[s->rank - 1] : 1;
    *rows = *cols ? ir_shape_numel(s) / *cols : 0;
}

/* ---- in_top_k: (logits [B,C], labels i32[B]) -> 1 where fewer than k logits of
 * the row exceed the label's (ties at the boundary count as in, as TF's
 * in_top_k); 0 for a label outside [0, C) or a row with a non-finite logit ---- */
int cpu_k_in_top_k(const rt_kernel_args *k, char *err, size_t cap) {
    int64_t rows, cols, top = k->node->iattr[0];
    rows_cols(IN_SHAPE(k, 0), &rows, &cols);
    if (k->in_nodes[1]->dtype != IR_I32) return cpu_kerr(k, err, cap, "labels must be i32");
    const int32_t *lab = k->in[1];
    for (int64_t r = 0; r < rows; r++) {
        const float *x = IN_F32(k, 0) + r * cols;
        int64_t above = 0;
        bool ok = lab[r] >= 0 && lab[r] < cols;
        for (int64_t j = 0; j < cols && ok; j++) ok = isfinite(x[j]), above += x[j] > x[lab[r]];
        ((float *)k->out)[r] = ok && above < top ? 1.0f : 0.0f;
    }
    return 0;
}
