/* cuda_fused.cu - the CUDA kernel of a fused node (issue 14): one thread per
 * output element gathers its inputs through their broadcast strides and runs
 * the node's program (passed by value, so it sits in the constant parameter
 * space) over registers, with the per-element math of runtime/ops_math.h the
 * unfused kernels use (MG_FUSED_OPS). The output is written once. */
#include "../ops_math.h"
#include "cuda_device.cuh"

__device__ static float fused_apply(int op, float a, float b, float alpha) {
    switch (op) {
#define X(E, EXPR) \
    case OP_##E: return EXPR;
        MG_FUSED_OPS(X)
#undef X
    default: return __int_as_float(0x7fc00000); /* a NaN: the verifier admits no other op */
    }
}

__global__ static void fused_kernel(const ir_fused f, const cuda_fused_args a, float *out, int64_t n) {
    FOR_EACH(i, n) {
        float reg[IR_FUSED_MAX_INPUTS + IR_FUSED_MAX_INSTRS];
        int64_t off[IR_FUSED_MAX_INPUTS] = {0}, rest = i;
        for (int d = a.rank - 1; d >= 0; d--) {
            int64_t c = rest % a.dim[d];
            rest /= a.dim[d];
            for (int k = 0; k < a.n_in; k++) off[k] += c * a.stride[k][d];
        }
        for (int k = 0; k < a.n_in; k++) reg[k] = a.x[k][off[k]];
        for (int j = 0; j < f.n; j++) {
            const ir_finstr &in = f.ins[j];
            reg[a.n_in + j] = fused_apply(in.op, reg[in.a], reg[in.b >= 0 ? in.b : in.a], (float)in.alpha);
        }
        out[i] = reg[a.n_in + f.n - 1];
    }
}

extern "C" cudaError_t cuda_k_fused(const ir_fused *f, const cuda_fused_args *a, float *out, int64_t n, cudaStream_t s) {
    if (n > 0) MGC_LAUNCH(blocks_for(n), THREADS, 0, s, fused_kernel)(*f, *a, out, n);
    return cudaGetLastError();
}
