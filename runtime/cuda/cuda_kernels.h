/* cuda_kernels.h - launchers of the hand-written CUDA kernels (cuda_kernels.cu),
 * callable from C. Each enqueues on stream s and returns the launch status;
 * the per-element math is runtime/ops_math.h, shared with the CPU kernels. */
#ifndef MGC_CUDA_KERNELS_H
#define MGC_CUDA_KERNELS_H

#include <stdint.h>

#ifdef MGC_CUDA_EMU
#include "cuda_emu.h" /* the kernels on the CPU (tests/cuda_emu) */
#else
#include <cuda_runtime_api.h>
#endif

#include "../../ir/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* numpy broadcasting: out dims and, per input, its element stride along each
 * out axis (0 where the input has extent 1 or lacks the axis). */
typedef struct {
    int rank;
    int64_t dim[IR_MAX_RANK];
    int64_t stride[2][IR_MAX_RANK];
} cuda_bcast;

/* a reduction over the axes in mask of an input of rank dims */
typedef struct {
    int rank;
    int64_t dim[IR_MAX_RANK];
    unsigned mask;
    int64_t out_n, red_n;       /* output elements, elements summed into each */
} cuda_reduce_desc;

/* op is OP_ADD..OP_DIV or OP_RELU_GRAD..OP_TANH_GRAD; out[i] = f(a, b) */
cudaError_t cuda_k_binary(int op, const cuda_bcast *bc, const float *a, const float *b, float *out, int64_t n,
                          cudaStream_t s);
/* op is OP_NEG..OP_TANH */
cudaError_t cuda_k_unary(int op, const float *x, float *out, int64_t n, cudaStream_t s);
/* out[i] = x[broadcast index of i]; elem is 1, 4 or 8 bytes */
cudaError_t cuda_k_broadcast(const cuda_bcast *bc, const void *x, void *out, int64_t n, int elem, cudaStream_t s);
cudaError_t cuda_k_cast(ir_dtype from, ir_dtype to, const void *x, void *out, int64_t n, cudaStream_t s);
cudaError_t cuda_k_fill(ir_dtype t, void *out, double value, int64_t n, cudaStream_t s);
/* out = scale * sum over the reduced axes */
cudaError_t cuda_k_reduce(const cuda_reduce_desc *r, const float *x, float *out, float scale, cudaStream_t s);

/* rows of C classes, class axis last */
cudaError_t cuda_k_xent(const float *logits, const int32_t *labels, float *out, int64_t rows, int64_t c,
                        cudaStream_t s);
cudaError_t cuda_k_xent_grad(const float *logits, const int32_t *labels, const float *dy, float *dx, int64_t rows,
                             int64_t c, cudaStream_t s);
cudaError_t cuda_k_argmax_match(const float *logits, const int32_t *labels, float *out, int64_t rows, int64_t c,
                                cudaStream_t s);

/* ---- cuda_shape.cu: shape ops, extreme reductions, softmax on any axis (issue 12) ---- */

/* a box of dims copied between two tensors: element c (coordinates) moves
 * from src_at + sum c[a] * src_stride[a] to dst_at + sum c[a] * dst_stride[a] */
typedef struct {
    int rank;
    int64_t dim[IR_MAX_RANK], src_stride[IR_MAX_RANK], dst_stride[IR_MAX_RANK];
    int64_t src_at, dst_at;
} cuda_box;

cudaError_t cuda_k_box_copy(const cuda_box *b, const float *src, float *dst, cudaStream_t s);
/* the box of the output's dims, src_stride the input stride of each output axis */
cudaError_t cuda_k_transpose(const cuda_box *b, const float *x, float *out, cudaStream_t s);
/* out = max (is_max) or min over the reduced axes */
cudaError_t cuda_k_reduce_extreme(const cuda_reduce_desc *r, const float *x, float *out, int is_max, cudaStream_t s);
/* op OP_SOFTMAX, OP_LOG_SOFTMAX or OP_SOFTMAX_GRAD (x = y, dy) over the middle axis of [outer, n, inner] */
cudaError_t cuda_k_softmax_axis(int op, const float *x, const float *dy, float *out, int64_t outer, int64_t n,
                                int64_t inner, cudaStream_t s);

/* out[i] = x[i] * mask factor of global element base + i at the step in *step (device word, issue 15) */
cudaError_t cuda_k_dropout(const float *x, float *out, int64_t n, uint64_t seed, const int64_t *step, uint64_t base,
                           float rate, cudaStream_t s);

/* ---- issue 15: the step counter in device memory (cuda_step.h, cuda_step.cu) ----
 * Kernels whose work depends on the step read it from a per-(device, stream)
 * int64 word, not by value, so a CUDA graph replays them unchanged: dropout's
 * mask, --check-numerics' step and every optimizer update, which derives its
 * rate (the plan's schedule at step - 1), decoupled decay and bias
 * corrections from *step on the device (cuda_step_coeffs). */
typedef struct {
    int op;                     /* OP_SGD_UPDATE ... OP_LAMB_UPDATE */
    double lr, weight_decay;    /* the node's initial rate and decay (fattr) */
    double b1, b2;              /* adam, nadam, lamb */
    ir_lr_schedule sched;       /* the plan's schedule (ir_module.opt) */
} cuda_rate;

/* *word = value: the step of the work queued after it on s */
cudaError_t cuda_k_set_step(int64_t *word, int64_t value, cudaStream_t s);

/* optimizer updates, in place; v / mom NULL when the op has no such slot;
 * r and *step give the rate and the corrections; sq_norm (device, f32[]) NULL when not clipping */
cudaError_t cuda_k_sgd(float *p, const float *g, float *v, int64_t n, const cuda_rate *r, const int64_t *step, float mu,
                       int nesterov, const float *sq_norm, float clip, cudaStream_t s);
cudaError_t cuda_k_adam(float *p, const float *g, float *m, float *v, int64_t n, const cuda_rate *r,
                        const int64_t *step, float eps, const float *sq_norm, float clip, cudaStream_t s);
cudaError_t cuda_k_rmsprop(float *p, const float *g, float *ms, float *mom, int64_t n, const cuda_rate *r,
                           const int64_t *step, float rho, float mu, float eps, const float *sq_norm, float clip,
                           cudaStream_t s);
/* issue 12 (cuda_optim.cu): adagrad (step 1 starts the accumulator at acc0),
 * nadam, lamb (one block, for the norms of the whole param), sq_norm (*out =
 * (accumulate ? *out : 0) + sum x^2, one block, deterministic) */
cudaError_t cuda_k_adagrad(float *p, const float *g, float *acc, int64_t n, const cuda_rate *r, const int64_t *step,
                           float eps, float acc0, const float *sq_norm, float clip, cudaStream_t s);
cudaError_t cuda_k_nadam(float *p, const float *g, float *m, float *v, int64_t n, const cuda_rate *r,
                         const int64_t *step, float eps, const float *sq_norm, float clip, cudaStream_t s);
cudaError_t cuda_k_lamb(float *p, const float *g, float *m, float *v, int64_t n, const cuda_rate *r,
                        const int64_t *step, float eps, const float *sq_norm, float clip, cudaStream_t s);
cudaError_t cuda_k_sq_norm(const float *x, int64_t n, float *out, int accumulate, cudaStream_t s);

/* issue 12 (cuda_act.cu): op is an activation (OP_ABS..OP_LEAKY_RELU) or its
 * gradient (OP_ABS_GRAD..OP_LEAKY_RELU_GRAD, (x, dy) -> dx); alpha: elu's and leaky_relu's */
cudaError_t cuda_k_activation(int op, const float *x, float *out, int64_t n, float alpha, cudaStream_t s);
cudaError_t cuda_k_activation_grad(int op, const float *x, const float *dy, float *out, int64_t n, float alpha,
                                   cudaStream_t s);
cudaError_t cuda_k_in_top_k(const float *logits, const int32_t *labels, float *out, int64_t rows, int64_t c,
                            int64_t k, cudaStream_t s);

/* issue 13 (cuda_embed.cu): gather rows of table [V, D] by ids i32[n] -> [n, D]; an id
 * outside [0, V) gives a NaN row and, first on the device, writes (node + 1, id, index)
 * to bad[3] (the backend fails the step); scatter_add (ids [n], dy [n, D]) -> [V, D], deterministic */
cudaError_t cuda_k_gather(const float *table, const int32_t *ids, float *out, int64_t n, int64_t V, int64_t D,
                          int32_t *bad, int32_t node, cudaStream_t s);
cudaError_t cuda_k_scatter_add(const int32_t *ids, const float *dy, float *out, int64_t n, int64_t V, int64_t D,
                               cudaStream_t s);

/* issue 13 (cuda_onehot.cu): ids i32[n] -> out [n, depth], 1 at [i, ids[i]], else 0
 * (a zero row for an id outside [0, depth)) */
cudaError_t cuda_k_one_hot(const int32_t *ids, float *out, int64_t n, int64_t depth, cudaStream_t s);

/* issue 14 (cuda_fused.cu): a fused node's program per output element; input k
 * x[k] read through stride[k] (numpy broadcasting against dim, as cuda_bcast) */
typedef struct {
    int n_in, rank;
    int64_t dim[IR_MAX_RANK];
    int64_t stride[IR_FUSED_MAX_INPUTS][IR_MAX_RANK];
    const float *x[IR_FUSED_MAX_INPUTS];
} cuda_fused_args;
cudaError_t cuda_k_fused(const ir_fused *f, const cuda_fused_args *a, float *out, int64_t n, cudaStream_t s);
/* issue 14 (cuda_epilogue.cu): out [total / n, n] = act(out + bias [n] [+ res]) in place,
 * act an ir_epilogue_act, res NULL for none; max-pool gradient of x [n, h, w, c] by dy
 * [n, oh, ow, c], times (x > 0) when relu (max_pool2d_relu_grad) */
typedef struct {
    int64_t n, h, w, c, oh, ow, kh, kw, sh, sw, pt, pl;
} cuda_pool_geom;
cudaError_t cuda_k_epilogue(float *out, const float *bias, const float *res, int64_t total, int64_t n, int act,
                            cudaStream_t s);
cudaError_t cuda_k_max_pool_grad(const float *x, const float *dy, float *dx, const cuda_pool_geom *g, int relu,
                                 cudaStream_t s);
/* issue 14 (cuda_epilogue.cu): conv2d_bn_epilogue's pass, out [total / n, n] =
 * act((c - mean [n]) * scale [n] + beta [n] [+ res]); out may be c, res NULL for none */
cudaError_t cuda_k_bn_epilogue(float *out, const float *c, const float *mean, const float *scale, const float *beta,
                               const float *res, int64_t total, int64_t n, int act, cudaStream_t s);

/* issue 14, seed CNN speed (cuda_epilogue.cu): conv2d_grad_filter_pool2, dw [kh, kw, cg, c] of
 * x [n, h, w, cx] and the gradient of y [n, oh, ow, c] (oh, ow even) through its 2x2 stride-2
 * max-pool: max_pool2d_relu_grad(y, dy [n, oh/2, ow/2, c]) */
typedef struct {
    int64_t n, h, w, cx, oh, ow, c, kh, kw, cg, sh, sw, pt, pl, dh, dw, groups;
} cuda_pool2_geom;
cudaError_t cuda_k_grad_filter_pool2(const float *x, const float *y, const float *dy, float *dw,
                                     const cuda_pool2_geom *g, cudaStream_t s);
/* issue 14, seed CNN speed (cuda_conv_pool.cu): conv2d_relu_pool2, out [2, n, oh/2, ow/2, c] the 2x2
 * stride-2 max-pool of y = relu(conv2d(x, w [kh, kw, cg, c]) + bias [c]) [n, oh, ow, c], y made on
 * the fly, then each window's pixel (0..3, -1); and its filter gradient dw from f (that output) and
 * dy [n, oh/2, ow/2, c], with bias != 0 after the bias gradient [c] (dy summed where the pixel is >= 0) */
cudaError_t cuda_k_relu_pool2(const float *x, const float *w, const float *bias, float *out, const cuda_pool2_geom *g,
                              cudaStream_t s);
cudaError_t cuda_k_relu_pool2_grad_filter(const float *x, const float *f, const float *dy, float *dw, int bias,
                                          const cuda_pool2_geom *g, cudaStream_t s);

/* filters: HWIO [kh,kw,ci,co] <-> cuDNN's NHWC filter format OHWI [co,kh,kw,ci] */
cudaError_t cuda_k_hwio_to_ohwi(const float *w, float *o, int64_t khw, int64_t ci, int64_t co, cudaStream_t s);
cudaError_t cuda_k_ohwi_to_hwio(const float *o, float *w, int64_t khw, int64_t ci, int64_t co, cudaStream_t s);

/* ---- issue 14, char_gpt speed (cuda_attention.cu): causal_softmax ---- */

/* rows x [rows, c] (row % r is the row index i of its [r, c] matrix; i keeps
 * columns j <= i): dy NULL -> causal_softmax(x, scale); else x is y and out =
 * causal_softmax_grad(y, dy, scale); 0 above the diagonal either way */
cudaError_t cuda_k_causal_softmax(const float *x, const float *dy, float *out, int64_t rows, int64_t r, int64_t c,
                                  float scale, cudaStream_t s);
/* causal_matmul's output triangle: each of batch [m, m] matrices of out keeps
 * j <= i (upper 0) or j >= i (upper 1), the rest set to 0 */
cudaError_t cuda_k_tri_mask(float *out, int64_t batch, int64_t m, int upper, cudaStream_t s);
/* issue 14: causal_softmax_dropout_grad(y, dp), rows as above: causal_softmax_grad(y,
 * dp times dropout's factor of global element base + index at the step in the
 * device word *step (issue 15)), no factor when step is NULL (outside training) */
cudaError_t cuda_k_causal_softmax_dropout_grad(const float *y, const float *dp, float *out, int64_t rows, int64_t r,
                                               int64_t c, float scale, uint64_t seed, const int64_t *step,
                                               uint64_t base, float rate, cudaStream_t s);
/* (cuda_normalize.cu) rows x [rows, c]: dy NULL -> normalize(x, epsilon); else
 * normalize_grad(x, dy, epsilon) */
cudaError_t cuda_k_normalize(const float *x, const float *dy, float *out, int64_t rows, int64_t c, float epsilon,
                             cudaStream_t s);
/* (cuda_batch_norm.cu, issue 14: batch norm in training) x [rows, c]:
 * out[j] = scale * sum_r f, f = x (kind 0: channel_mean) or (x - m)^2 (1:
 * channel_var); m unused by kind 0 */
cudaError_t cuda_k_channel_sum(int kind, const float *x, const float *m, float *out, int64_t rows, int64_t c,
                               double scale, cudaStream_t s);
/* out [2, c]: out[j] = sum_r dy, out[c + j] = sum_r dy (x - m) (channel_sum_dot) */
cudaError_t cuda_k_channel_sum_dot(const float *x, const float *m, const float *dy, float *out, int64_t rows,
                                   int64_t c, cudaStream_t s);
/* y = (x - m[j]) s[j] + b[j] over x's n elements, j = index % c */
cudaError_t cuda_k_scale_shift(const float *x, const float *m, const float *sc, const float *b, float *y, int64_t n,
                               int64_t c, cudaStream_t s);

/* ---- issue 15 (cuda_numerics.cu): --check-numerics on the device ---- */

/* the first kernel output holding NaN/Inf since the last check: node1 = node + 1
 * (0: none), key = element index << 2 | kind (0 NaN, 1 +Inf, 2 -Inf), smallest index */
typedef struct {
    int32_t node1, replica;
    long long step;
    unsigned long long key;
} cuda_nonfinite;

/* records y's first non-finite element in rec (with the step in *step, a device word)
 * unless rec already names another node */
cudaError_t cuda_k_check_finite(const float *y, int64_t n, cuda_nonfinite *rec, int32_t node, int32_t replica,
                                const int64_t *step, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
