/* cuda_act.cu - CUDA kernels of the issue 12 activations (abs, erf, gelu,
 * softplus, selu, elu, leaky_relu) and their gradients, log_softmax and its
 * gradient, in_top_k. Per-element math comes from runtime/ops_math.h only. */
#include "../ops_math.h"
#include "cuda_device.cuh"


__device__ static float act_op(int op, float x, float alpha) {
    switch (op) {
    case OP_ABS: return mg_abs(x);
    case OP_ERF: return mg_erf(x);
    case OP_GELU: return mg_gelu(x);
    case OP_SOFTPLUS: return mg_softplus(x);
    case OP_SELU: return mg_selu(x);
    case OP_ELU: return mg_elu(x, alpha);
    default: return mg_leaky_relu(x, alpha); /* OP_LEAKY_RELU */
    }
}

__device__ static float act_grad_op(int op, float x, float dy, float alpha) {
    switch (op) {
    case OP_ABS_GRAD: return mg_abs_grad(x, dy);
    case OP_ERF_GRAD: return mg_erf_grad(x, dy);
    case OP_GELU_GRAD: return mg_gelu_grad(x, dy);
    case OP_SELU_GRAD: return mg_selu_grad(x, dy);
    case OP_ELU_GRAD: return mg_elu_grad(x, dy, alpha);
    default: return mg_leaky_relu_grad(x, dy, alpha); /* OP_LEAKY_RELU_GRAD */
    }
}

__global__ static void act_kernel(int op, const float *x, float *out, int64_t n, float alpha) {
    FOR_EACH(i, n) out[i] = act_op(op, x[i], alpha);
}

__global__ static void act_grad_kernel(int op, const float *x, const float *dy, float *out, int64_t n, float alpha) {
    FOR_EACH(i, n) out[i] = act_grad_op(op, x[i], dy[i], alpha);
}

extern "C" cudaError_t cuda_k_activation(int op, const float *x, float *out, int64_t n, float alpha, cudaStream_t s) {
    MGC_LAUNCH(blocks_for(n), THREADS, 0, s, act_kernel)(op, x, out, n, alpha);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_k_activation_grad(int op, const float *x, const float *dy, float *out, int64_t n,
                                              float alpha, cudaStream_t s) {
    MGC_LAUNCH(blocks_for(n), THREADS, 0, s, act_grad_kernel)(op, x, dy, out, n, alpha);
    return cudaGetLastError();
}

/* ---- in_top_k: 1 where fewer than k logits exceed the label's (the CPU rule) ---- */
__global__ static void in_top_k_kernel(const float *x, const int32_t *lab, float *out, int64_t rows, int64_t c,
                                       int64_t k) {
    FOR_EACH(r, rows) {
        int32_t l = lab[r];
        bool ok = l >= 0 && l < c;
        int64_t above = 0;
        for (int64_t j = 0; j < c && ok; j++) ok = isfinite(x[r * c + j]), above += x[r * c + j] > x[r * c + l];
        out[r] = ok && above < k ? 1.0f : 0.0f;
    }
}

extern "C" cudaError_t cuda_k_in_top_k(const float *x, const int32_t *lab, float *out, int64_t rows, int64_t c,
                                       int64_t k, cudaStream_t s) {
    MGC_LAUNCH(blocks_for(rows), THREADS, 0, s, in_top_k_kernel)(x, lab, out, rows, c, k);
    return cudaGetLastError();
}
