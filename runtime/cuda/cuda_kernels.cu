/* cuda_kernels.cu - the hand-written CUDA kernels: elementwise, broadcasting,
 * reductions, sparse cross-entropy family, dropout, optimizer updates, casts, filter
 * transposes. Per-element math comes from runtime/ops_math.h only. */
#include <float.h>
#include <string.h>

#include "../ops_math.h"
#include "cuda_device.cuh"
#include "cuda_step.h"


static cudaError_t launched(void) { return cudaGetLastError(); }

/* offset into input `which` of output element i */
__device__ static int64_t bcast_offset(const cuda_bcast &bc, int which, int64_t i) {
    int64_t off = 0;
    for (int a = bc.rank - 1; a >= 0; a--) {
        int64_t c = i % bc.dim[a];
        i /= bc.dim[a];
        off += c * bc.stride[which][a];
    }
    return off;
}

__device__ static float binary_op(int op, float a, float b) {
    switch (op) {
    case OP_ADD: return mg_add(a, b);
    case OP_SUB: return mg_sub(a, b);
    case OP_MUL: return mg_mul(a, b);
    case OP_DIV: return mg_div(a, b);
    case OP_RELU_GRAD: return mg_relu_grad(a, b);
    case OP_SIGMOID_GRAD: return mg_sigmoid_grad(a, b);
    case OP_LESS: return mg_less(a, b);
    case OP_LESS_EQUAL: return mg_less_equal(a, b);
    case OP_GREATER: return mg_greater(a, b);
    case OP_GREATER_EQUAL: return mg_greater_equal(a, b);
    case OP_EQUAL: return mg_equal(a, b);
    case OP_NOT_EQUAL: return mg_not_equal(a, b);
    case OP_MAXIMUM: return mg_maximum(a, b);
    case OP_MINIMUM: return mg_minimum(a, b);
    case OP_POW: return mg_pow(a, b);
    default: return mg_tanh_grad(a, b); /* OP_TANH_GRAD */
    }
}

__device__ static float unary_op(int op, float x) {
    switch (op) {
    case OP_NEG: return mg_neg(x);
    case OP_EXP: return mg_exp(x);
    case OP_LOG: return mg_log(x);
    case OP_SQRT: return mg_sqrt(x);
    case OP_RELU: return mg_relu(x);
    case OP_SIGMOID: return mg_sigmoid(x);
    default: return mg_tanh(x); /* OP_TANH */
    }
}

__global__ static void binary_kernel(int op, cuda_bcast bc, const float *a, const float *b, float *out, int64_t n) {
    FOR_EACH(i, n) out[i] = binary_op(op, a[bcast_offset(bc, 0, i)], b[bcast_offset(bc, 1, i)]);
}

__global__ static void unary_kernel(int op, const float *x, float *out, int64_t n) {
    FOR_EACH(i, n) out[i] = unary_op(op, x[i]);
}

template <typename T> __global__ static void broadcast_kernel(cuda_bcast bc, const T *x, T *out, int64_t n) {
    FOR_EACH(i, n) out[i] = x[bcast_offset(bc, 0, i)];
}

extern "C" cudaError_t cuda_k_binary(int op, const cuda_bcast *bc, const float *a, const float *b, float *out,
                                     int64_t n, cudaStream_t s) {
    MGC_LAUNCH(blocks_for(n), THREADS, 0, s, binary_kernel)(op, *bc, a, b, out, n);
    return launched();
}

extern "C" cudaError_t cuda_k_unary(int op, const float *x, float *out, int64_t n, cudaStream_t s) {
    MGC_LAUNCH(blocks_for(n), THREADS, 0, s, unary_kernel)(op, x, out, n);
    return launched();
}

extern "C" cudaError_t cuda_k_broadcast(const cuda_bcast *bc, const void *x, void *out, int64_t n, int elem,
                                        cudaStream_t s) {
    if (elem == 1)
        MGC_LAUNCH(blocks_for(n), THREADS, 0, s, broadcast_kernel<uint8_t>)(*bc, (const uint8_t *)x, (uint8_t *)out, n);
    else if (elem == 4)
        MGC_LAUNCH(blocks_for(n), THREADS, 0, s, broadcast_kernel<uint32_t>)(*bc, (const uint32_t *)x, (uint32_t *)out, n);
    else
        MGC_LAUNCH(blocks_for(n), THREADS, 0, s, broadcast_kernel<uint64_t>)(*bc, (const uint64_t *)x, (uint64_t *)out, n);
    return launched();
}

/* ---- casts and fills ---- */
/* Issue 15: as the CPU kernel (runtime/cpu/elementwise.c): through double, and
 * to an integer type truncating and saturating, NaN to 0 (a plain conversion
 * wrapped 300 to 44 in u8, and is undefined past the range) */
__device__ static double cast_clamp(double v, double lo, double hi) { return v != v ? 0 : v < lo ? lo : v > hi ? hi : v; }
template <typename D> __device__ static D cast_to(double v) { return (D)v; }
template <> __device__ int32_t cast_to<int32_t>(double v) { return (int32_t)cast_clamp(v, -2147483648.0, 2147483647.0); }
template <> __device__ uint8_t cast_to<uint8_t>(double v) { return (uint8_t)cast_clamp(v, 0, 255); }

template <typename S, typename D> __global__ static void cast_kernel(const S *x, D *out, int64_t n) {
    FOR_EACH(i, n) out[i] = cast_to<D>((double)x[i]);
}

template <typename S> static void cast_from(ir_dtype to, const S *x, void *out, int64_t n, cudaStream_t s) {
    switch (to) {
    case IR_F32: MGC_LAUNCH(blocks_for(n), THREADS, 0, s, cast_kernel<S, float>)(x, (float *)out, n); break;
    case IR_I32: MGC_LAUNCH(blocks_for(n), THREADS, 0, s, cast_kernel<S, int32_t>)(x, (int32_t *)out, n); break;
    case IR_F64: MGC_LAUNCH(blocks_for(n), THREADS, 0, s, cast_kernel<S, double>)(x, (double *)out, n); break;
    default: MGC_LAUNCH(blocks_for(n), THREADS, 0, s, cast_kernel<S, uint8_t>)(x, (uint8_t *)out, n); break;
    }
}

extern "C" cudaError_t cuda_k_cast(ir_dtype from, ir_dtype to, const void *x, void *out, int64_t n, cudaStream_t s) {
    switch (from) {
    case IR_F32: cast_from(to, (const float *)x, out, n, s); break;
    case IR_I32: cast_from(to, (const int32_t *)x, out, n, s); break;
    case IR_F64: cast_from(to, (const double *)x, out, n, s); break;
    default: cast_from(to, (const uint8_t *)x, out, n, s); break;
    }
    return launched();
}

template <typename T> __global__ static void fill_kernel(T *out, T v, int64_t n) {
    FOR_EACH(i, n) out[i] = v;
}

extern "C" cudaError_t cuda_k_fill(ir_dtype t, void *out, double v, int64_t n, cudaStream_t s) {
    switch (t) {
    case IR_F32: MGC_LAUNCH(blocks_for(n), THREADS, 0, s, fill_kernel<float>)((float *)out, (float)v, n); break;
    case IR_I32: MGC_LAUNCH(blocks_for(n), THREADS, 0, s, fill_kernel<int32_t>)((int32_t *)out, (int32_t)v, n); break;
    case IR_F64: MGC_LAUNCH(blocks_for(n), THREADS, 0, s, fill_kernel<double>)((double *)out, v, n); break;
    default: MGC_LAUNCH(blocks_for(n), THREADS, 0, s, fill_kernel<uint8_t>)((uint8_t *)out, (uint8_t)v, n); break;
    }
    return launched();
}

/* ---- reductions (issue 15) ----
 * Adjacent axes that are both reduced or both kept are merged first, so the
 * conv bias gradient ([64,26,26,32] over all but the channels) is one kept axis
 * of 32 (stride 1) and one reduced axis of 43,264 (stride 32): offsets without
 * a division. A short reduction is one thread per output, summing in order;
 * a long one is two-level: blocks of RED_THREADS sum slices of RED_CHUNK
 * elements of one output through a shared-memory tree into partials, then one
 * thread per output adds its partials in order. Both orders are fixed, so the
 * result is the same bits on every run and replica. */
enum { RED_THREADS = 256, RED_CHUNK = RED_THREADS * 16, RED_SHORT = 64 };

typedef struct {
    int n_out, n_red;
    int64_t out_dim[IR_MAX_RANK], out_stride[IR_MAX_RANK], red_dim[IR_MAX_RANK], red_stride[IR_MAX_RANK];
    int64_t out_n, red_n;
} red_plan;

static red_plan red_plan_of(const cuda_reduce_desc *r) {
    red_plan p;
    memset(&p, 0, sizeof p);
    p.out_n = r->out_n, p.red_n = r->red_n;
    int64_t stride = 1;
    int last = -1; /* kind of the axis merged last: 1 reduced, 0 kept */
    /* innermost first, then reversed so index 0 is the outermost */
    int64_t od[IR_MAX_RANK], os[IR_MAX_RANK], rd[IR_MAX_RANK], rs[IR_MAX_RANK];
    for (int a = r->rank - 1; a >= 0; a--) {
        int red = (int)(r->mask >> a & 1u);
        int64_t d = r->dim[a];
        if (d != 1) {
            int64_t *dim = red ? rd : od, *st = red ? rs : os;
            int *n = red ? &p.n_red : &p.n_out;
            if (last == red && *n > 0 && st[*n - 1] * dim[*n - 1] == stride)
                dim[*n - 1] *= d; /* contiguous with the previous axis of its kind */
            else
                dim[*n] = d, st[*n] = stride, (*n)++;
            last = red;
        }
        stride *= d;
    }
    for (int a = 0; a < p.n_out; a++) p.out_dim[a] = od[p.n_out - 1 - a], p.out_stride[a] = os[p.n_out - 1 - a];
    for (int a = 0; a < p.n_red; a++) p.red_dim[a] = rd[p.n_red - 1 - a], p.red_stride[a] = rs[p.n_red - 1 - a];
    return p;
}

/* input offset of row-major index j over axes dim[0..n) (0 outermost) */
__device__ static int64_t plan_offset(const int64_t *dim, const int64_t *stride, int n, int64_t j) {
    int64_t off = 0;
    for (int a = n - 1; a > 0; a--) {
        int64_t q = j / dim[a];
        off += (j - q * dim[a]) * stride[a];
        j = q;
    }
    return n > 0 ? off + j * stride[0] : off;
}

__global__ static void reduce_short_kernel(red_plan p, const float *x, float *out, float scale) {
    FOR_EACH(o, p.out_n) {
        const float *xo = x + plan_offset(p.out_dim, p.out_stride, p.n_out, o);
        float acc = 0.0f;
        for (int64_t j = 0; j < p.red_n; j++) acc = mg_add(acc, xo[plan_offset(p.red_dim, p.red_stride, p.n_red, j)]);
        out[o] = mg_mul(acc, scale);
    }
}

/* block b of the grid-stride loop sums slice c = b % chunks of output o = b / chunks */
__global__ static void reduce_chunk_kernel(red_plan p, const float *x, float *partial, int64_t chunks, float scale) {
    __shared__ float sum[RED_THREADS];
    for (int64_t blk = blockIdx.x; blk < p.out_n * chunks; blk += gridDim.x) {
        int64_t o = blk / chunks, c = blk - o * chunks;
        const float *xo = x + plan_offset(p.out_dim, p.out_stride, p.n_out, o);
        int64_t end = (c + 1) * RED_CHUNK < p.red_n ? (c + 1) * RED_CHUNK : p.red_n;
        float acc = 0.0f;
        for (int64_t j = c * RED_CHUNK + threadIdx.x; j < end; j += RED_THREADS)
            acc = mg_add(acc, xo[plan_offset(p.red_dim, p.red_stride, p.n_red, j)]);
        sum[threadIdx.x] = acc;
        for (int half = RED_THREADS / 2; half > 0; half /= 2) {
            __syncthreads();
            if ((int)threadIdx.x < half) sum[threadIdx.x] = mg_add(sum[threadIdx.x], sum[threadIdx.x + half]);
        }
        if (threadIdx.x == 0) partial[blk] = chunks == 1 ? mg_mul(sum[0], scale) : sum[0];
        __syncthreads(); /* sum[] is rewritten by the next block of the loop */
    }
}

__global__ static void reduce_partials_kernel(const float *partial, float *out, int64_t out_n, int64_t chunks,
                                              float scale) {
    FOR_EACH(o, out_n) {
        float acc = 0.0f;
        for (int64_t c = 0; c < chunks; c++) acc = mg_add(acc, partial[o * chunks + c]);
        out[o] = mg_mul(acc, scale);
    }
}

extern "C" cudaError_t cuda_k_reduce(const cuda_reduce_desc *r, const float *x, float *out, float scale,
                                     cudaStream_t s) {
    red_plan p = red_plan_of(r);
    if (p.red_n < RED_SHORT || p.out_n == 0) {
        MGC_LAUNCH(blocks_for(p.out_n), THREADS, 0, s, reduce_short_kernel)(p, x, out, scale);
        return launched();
    }
    int64_t chunks = (p.red_n + RED_CHUNK - 1) / RED_CHUNK, blocks = p.out_n * chunks;
    unsigned grid = (unsigned)(blocks < MAX_BLOCKS ? blocks : MAX_BLOCKS);
    if (chunks == 1) {
        MGC_LAUNCH(grid, RED_THREADS, 0, s, reduce_chunk_kernel)(p, x, out, 1, scale);
        return launched();
    }
    float *partial = NULL;
    cudaError_t e = cudaMallocAsync((void **)&partial, (size_t)blocks * sizeof *partial, s);
    if (e != cudaSuccess) return e;
    MGC_LAUNCH(grid, RED_THREADS, 0, s, reduce_chunk_kernel)(p, x, partial, chunks, scale);
    MGC_LAUNCH(blocks_for(p.out_n), THREADS, 0, s, reduce_partials_kernel)(partial, out, p.out_n, chunks, scale);
    e = launched();
    cudaError_t f = cudaFreeAsync(partial, s);
    return e != cudaSuccess ? e : f;
}

/* ---- the sparse_xent family: one thread per row (class counts are small);
 * softmax, log_softmax and softmax_grad are in cuda_shape.cu ---- */
__device__ static float row_max(const float *x, int64_t c) {
    float mx = -FLT_MAX;
    for (int64_t j = 0; j < c; j++) mx = x[j] > mx ? x[j] : mx;
    return mx;
}

/* log(sum(exp(x))) of a row, stable */
__device__ static float row_lse(const float *x, int64_t c) {
    float mx = row_max(x, c), sum = 0.0f;
    for (int64_t j = 0; j < c; j++) sum += mg_exp_shifted(x[j], mx);
    return mg_logsumexp(mx, sum);
}

__device__ static bool label_ok(int32_t l, int64_t c) { return l >= 0 && l < c; }

__global__ static void xent_kernel(const float *x, const int32_t *lab, float *out, int64_t rows, int64_t c) {
    FOR_EACH(r, rows) {
        int32_t l = lab[r];
        out[r] = label_ok(l, c) ? mg_xent(row_lse(x + r * c, c), x[r * c + l]) : NAN;
    }
}

__global__ static void xent_grad_kernel(const float *x, const int32_t *lab, const float *dy, float *dx, int64_t rows,
                                        int64_t c) {
    FOR_EACH(r, rows) {
        float lse = row_lse(x + r * c, c);
        for (int64_t j = 0; j < c; j++)
            dx[r * c + j] = mg_xent_grad(mg_exp_shifted(x[r * c + j], lse), j == lab[r], dy[r]);
    }
}

/* 1 where the first maximum of the row is at the label */
__global__ static void argmax_match_kernel(const float *x, const int32_t *lab, float *out, int64_t rows, int64_t c) {
    FOR_EACH(r, rows) {
        int64_t best = 0;
        for (int64_t j = 1; j < c; j++)
            if (x[r * c + j] > x[r * c + best]) best = j;
        out[r] = best == lab[r] ? 1.0f : 0.0f;
    }
}

extern "C" cudaError_t cuda_k_xent(const float *x, const int32_t *lab, float *out, int64_t rows, int64_t c,
                                   cudaStream_t s) {
    MGC_LAUNCH(blocks_for(rows), THREADS, 0, s, xent_kernel)(x, lab, out, rows, c);
    return launched();
}

extern "C" cudaError_t cuda_k_xent_grad(const float *x, const int32_t *lab, const float *dy, float *dx, int64_t rows,
                                        int64_t c, cudaStream_t s) {
    MGC_LAUNCH(blocks_for(rows), THREADS, 0, s, xent_grad_kernel)(x, lab, dy, dx, rows, c);
    return launched();
}

extern "C" cudaError_t cuda_k_argmax_match(const float *x, const int32_t *lab, float *out, int64_t rows, int64_t c,
                                           cudaStream_t s) {
    MGC_LAUNCH(blocks_for(rows), THREADS, 0, s, argmax_match_kernel)(x, lab, out, rows, c);
    return launched();
}

/* ---- dropout: the mask of the step in the device word *step (issue 15) ---- */
__global__ static void dropout_kernel(const float *x, float *out, int64_t n, uint64_t seed, const int64_t *step,
                                      uint64_t base, float rate) {
    uint64_t key = mg_dropout_key(seed, *step);
    FOR_EACH(i, n) out[i] = mg_mul(x[i], mg_dropout_scale_key(key, base + (uint64_t)i, rate));
}

extern "C" cudaError_t cuda_k_dropout(const float *x, float *out, int64_t n, uint64_t seed, const int64_t *step,
                                      uint64_t base, float rate, cudaStream_t s) {
    MGC_LAUNCH(blocks_for(n), THREADS, 0, s, dropout_kernel)(x, out, n, seed, step, base, rate);
    return launched();
}

/* ---- optimizer updates: decoupled weight decay (lr_wd), then the gradient
 * clipped by the squared norm at *sq_norm when it is not NULL; the rate and
 * corrections of the step in the device word *step (issue 15, cuda_step.h) ---- */
#define CLIP_SCALE(sq_norm, clip) ((sq_norm) ? mg_clip_scale(*(sq_norm), (clip)) : 1.0f)

__global__ static void sgd_kernel(float *p, const float *g, float *v, int64_t n, cuda_rate r, const int64_t *step,
                                  float mu, int nesterov, const float *sq_norm, float clip) {
    cuda_coeffs c = cuda_block_coeffs(r, step);
    float sc = CLIP_SCALE(sq_norm, clip);
    FOR_EACH(i, n) {
        mg_decay(&p[i], c.lr_wd);
        if (v)
            mg_sgd_momentum(&p[i], g[i] * sc, &v[i], c.lr, mu, nesterov);
        else
            mg_sgd(&p[i], g[i] * sc, c.lr);
    }
}

__global__ static void adam_kernel(float *p, const float *g, float *m, float *v, int64_t n, cuda_rate r,
                                   const int64_t *step, float eps, const float *sq_norm, float clip) {
    cuda_coeffs c = cuda_block_coeffs(r, step);
    float sc = CLIP_SCALE(sq_norm, clip), b1 = (float)r.b1, b2 = (float)r.b2;
    FOR_EACH(i, n) mg_adam(&p[i], g[i] * sc, &m[i], &v[i], c.lr_t, b1, b2, eps, c.lr_wd);
}

__global__ static void rmsprop_kernel(float *p, const float *g, float *ms, float *mom, int64_t n, cuda_rate r,
                                      const int64_t *step, float rho, float mu, float eps, const float *sq_norm,
                                      float clip) {
    cuda_coeffs c = cuda_block_coeffs(r, step);
    float sc = CLIP_SCALE(sq_norm, clip);
    FOR_EACH(i, n) {
        mg_decay(&p[i], c.lr_wd);
        if (mom)
            mg_rmsprop_momentum(&p[i], g[i] * sc, &ms[i], &mom[i], c.lr, rho, mu, eps);
        else
            mg_rmsprop(&p[i], g[i] * sc, &ms[i], c.lr, rho, eps);
    }
}

extern "C" cudaError_t cuda_k_sgd(float *p, const float *g, float *v, int64_t n, const cuda_rate *r,
                                  const int64_t *step, float mu, int nesterov, const float *sq_norm, float clip,
                                  cudaStream_t s) {
    MGC_LAUNCH(blocks_for(n), THREADS, 0, s, sgd_kernel)(p, g, v, n, *r, step, mu, nesterov, sq_norm, clip);
    return launched();
}

extern "C" cudaError_t cuda_k_adam(float *p, const float *g, float *m, float *v, int64_t n, const cuda_rate *r,
                                   const int64_t *step, float eps, const float *sq_norm, float clip, cudaStream_t s) {
    MGC_LAUNCH(blocks_for(n), THREADS, 0, s, adam_kernel)(p, g, m, v, n, *r, step, eps, sq_norm, clip);
    return launched();
}

extern "C" cudaError_t cuda_k_rmsprop(float *p, const float *g, float *ms, float *mom, int64_t n, const cuda_rate *r,
                                      const int64_t *step, float rho, float mu, float eps, const float *sq_norm,
                                      float clip, cudaStream_t s) {
    MGC_LAUNCH(blocks_for(n), THREADS, 0, s, rmsprop_kernel)(p, g, ms, mom, n, *r, step, rho, mu, eps, sq_norm, clip);
    return launched();
}

/* ---- filter layouts: HWIO [khw, ci, co] <-> OHWI [co, khw, ci] ---- */
__global__ static void hwio_ohwi_kernel(const float *src, float *dst, int64_t khw, int64_t ci, int64_t co,
                                        int to_ohwi) {
    FOR_EACH(i, khw * ci * co) {
        int64_t o = i % co, c = i / co % ci, p = i / (co * ci); /* i indexes HWIO */
        int64_t j = (o * khw + p) * ci + c;                    /* the same element in OHWI */
        if (to_ohwi)
            dst[j] = src[i];
        else
            dst[i] = src[j];
    }
}

extern "C" cudaError_t cuda_k_hwio_to_ohwi(const float *w, float *o, int64_t khw, int64_t ci, int64_t co,
                                           cudaStream_t s) {
    MGC_LAUNCH(blocks_for(khw * ci * co), THREADS, 0, s, hwio_ohwi_kernel)(w, o, khw, ci, co, 1);
    return launched();
}

extern "C" cudaError_t cuda_k_ohwi_to_hwio(const float *o, float *w, int64_t khw, int64_t ci, int64_t co,
                                           cudaStream_t s) {
    MGC_LAUNCH(blocks_for(khw * ci * co), THREADS, 0, s, hwio_ohwi_kernel)(o, w, khw, ci, co, 0);
    return launched();
}
