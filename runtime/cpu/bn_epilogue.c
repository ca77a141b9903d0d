/* bn_epilogue.c - conv2d_bn_epilogue (issue 14, docs/epilogue.md):
 * act((c - mean) * scale + beta [+ residual]), c = conv2d(x, w).
 *
 * In the train program the node reads c, which the batch statistics need
 * anyway, and is one pass over it in the unfused order (sub, mul, add, add,
 * activation, each rounded to f32: the same bits as the ops it replaced). In
 * eval and predict it reads x and w instead: the convolution's kernel is
 * chosen as conv2d's (tune.c keys it so); the "onednn" candidate folds the
 * scale into the filter and beta - mean * scale into a shift at every run
 * (dnnl.c: bn_fold) and is one oneDNN convolution whose post-ops are the
 * shift's binary add, the residual's and the eltwise activation; the
 * "onednn-hwio" candidate is conv2d's HWIO convolution and then this file's
 * pass over its output, in place. mean, scale and beta are the eval program's
 * own nodes (the moving statistics read when it runs), so nothing is folded
 * ahead of time and an eval between training epochs sees the variables as
 * they are then. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3") /* without FMA contraction (CMakeLists.txt): (c - m) * s + b stays a mul and an add, as unfused */
#endif
#include "../ops_math.h"
#include "kernels_impl.h"
#include "tune.h"

/* v = act(v), the per-element math the unfused ops run */
static inline float bn_act(int64_t act, float v) {
    return act == EPI_RELU ? mg_relu(v) : act == EPI_TANH ? mg_tanh(v) : act == EPI_SIGMOID ? mg_sigmoid(v) : v;
}

/* out[r, j] = act((c[r, j] - mean[j]) * scale[j] + beta[j] [+ res[r, j]]) over rows
 * of n; out may be c. Cloned for AVX-512 / AVX2 as the unfused scale_shift */
CPU_CLONES void cpu_bn_rows(float *out, const float *c, const float *mean, const float *scale, const float *beta,
                 const float *res, int64_t rows, int64_t n, int64_t act) {
    for (int64_t r = 0; r < rows; r++) {
        float *o = out + r * n;
        const float *x = c + r * n, *q = res ? res + r * n : NULL;
        if (q)
            for (int64_t j = 0; j < n; j++)
                o[j] = bn_act(act, mg_add(mg_add(mg_mul(mg_sub(x[j], mean[j]), scale[j]), beta[j]), q[j]));
        else if (act == EPI_RELU)
            for (int64_t j = 0; j < n; j++) o[j] = mg_relu(mg_add(mg_mul(mg_sub(x[j], mean[j]), scale[j]), beta[j]));
        else
            for (int64_t j = 0; j < n; j++) o[j] = bn_act(act, mg_add(mg_mul(mg_sub(x[j], mean[j]), scale[j]), beta[j]));
    }
}

/* the convolution (variant 0: with post-ops; 1: HWIO, then the pass) */
static int bn_conv(const rt_kernel_args *k, int variant, char *err, size_t cap) {
    if (cpu_dnnl_conv(k, variant, err, cap)) return -1;
    const ir_shape *s = &k->node->shape;
    if (variant == 1)
        cpu_bn_rows(k->out, k->out, IN_F32(k, 3), IN_F32(k, 4), IN_F32(k, 5), k->node->n_in == 7 ? IN_F32(k, 6) : NULL,
                    OUT_NUMEL(k) / s->dim[3], s->dim[3], k->node->iattr[9]);
    return 0;
}

static const char *const bn_names[] = {"onednn", "onednn-hwio"};
static const cpu_tune_op bn_op = {bn_names, 2, bn_conv, NULL};

int cpu_k_conv2d_bn_epilogue(const rt_kernel_args *k, char *err, size_t cap) {
    if (!*k->training) return cpu_tune_run(k, &bn_op, err, cap);
    const ir_shape *s = &k->node->shape;
    cpu_bn_rows(k->out, IN_F32(k, 2), IN_F32(k, 3), IN_F32(k, 4), IN_F32(k, 5), k->node->n_in == 7 ? IN_F32(k, 6) : NULL,
                OUT_NUMEL(k) / s->dim[3], s->dim[3], k->node->iattr[9]);
    return 0;
}
