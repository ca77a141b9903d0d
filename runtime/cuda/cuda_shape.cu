/* cuda_shape.cu - CUDA kernels of the shape ops (box copies for concat, slice
 * and pad; transpose), the extreme reductions and the softmax family on any
 * axis. One thread per output element or per softmax column; per-element
 * math from runtime/ops_math.h. */
#include <float.h>

#include "../ops_math.h"
#include "cuda_device.cuh"


/* element i of the box: its offsets in src and dst */
__global__ static void box_kernel(cuda_box b, const float *src, float *dst, int64_t n) {
    FOR_EACH(i, n) {
        int64_t k = i, s = b.src_at, d = b.dst_at;
        for (int a = b.rank - 1; a >= 0; a--) {
            int64_t c = k % b.dim[a];
            k /= b.dim[a];
            s += c * b.src_stride[a], d += c * b.dst_stride[a];
        }
        dst[d] = src[s];
    }
}

extern "C" cudaError_t cuda_k_box_copy(const cuda_box *b, const float *src, float *dst, cudaStream_t s) {
    int64_t n = 1;
    for (int a = 0; a < b->rank; a++) n *= b->dim[a];
    if (n == 0) return cudaSuccess;
    MGC_LAUNCH(blocks_for(n), THREADS, 0, s, box_kernel)(*b, src, dst, n);
    return cudaGetLastError();
}

/* transpose: output element i reads x at the input strides of its coordinates
 * (a box copy whose source strides are permuted) */
extern "C" cudaError_t cuda_k_transpose(const cuda_box *b, const float *x, float *out, cudaStream_t s) {
    return cuda_k_box_copy(b, x, out, s);
}


__global__ static void extreme_kernel(cuda_reduce_desc r, const float *x, float *out, int is_max) {
    FOR_EACH(o, r.out_n) {
        float acc = is_max ? -FLT_MAX : FLT_MAX;
        for (int64_t j = 0; j < r.red_n; j++) {
            float v = x[reduce_offset(r, o, j)];
            acc = is_max ? (v > acc ? v : acc) : (v < acc ? v : acc);
        }
        out[o] = acc;
    }
}

extern "C" cudaError_t cuda_k_reduce_extreme(const cuda_reduce_desc *r, const float *x, float *out, int is_max,
                                             cudaStream_t s) {
    MGC_LAUNCH(blocks_for(r->out_n), THREADS, 0, s, extreme_kernel)(*r, x, out, is_max);
    return cudaGetLastError();
}

/* one thread per column of [outer, n, inner]: element j at base + j * inner */
__global__ static void softmax_axis_kernel(int op, const float *x, const float *dy, float *out, int64_t outer, int64_t n,
                                           int64_t inner) {
    FOR_EACH(col, outer * inner) {
        int64_t base = col / inner * n * inner + col % inner;
        if (op == OP_SOFTMAX_GRAD) {
            float dot = 0.0f;
            for (int64_t j = 0; j < n; j++) dot += dy[base + j * inner] * x[base + j * inner];
            for (int64_t j = 0; j < n; j++)
                out[base + j * inner] = mg_softmax_grad(x[base + j * inner], dy[base + j * inner], dot);
            continue;
        }
        float mx = -FLT_MAX, sum = 0.0f;
        for (int64_t j = 0; j < n; j++) mx = x[base + j * inner] > mx ? x[base + j * inner] : mx;
        for (int64_t j = 0; j < n; j++) sum += mg_exp_shifted(x[base + j * inner], mx);
        float lse = mg_logsumexp(mx, sum);
        for (int64_t j = 0; j < n; j++)
            out[base + j * inner] = op == OP_SOFTMAX ? mg_exp_shifted(x[base + j * inner], lse) : x[base + j * inner] - lse;
    }
}

extern "C" cudaError_t cuda_k_softmax_axis(int op, const float *x, const float *dy, float *out, int64_t outer,
                                           int64_t n, int64_t inner, cudaStream_t s) {
    MGC_LAUNCH(blocks_for(outer * inner), THREADS, 0, s, softmax_axis_kernel)(op, x, dy, out, outer, n, inner);
    return cudaGetLastError();
}
