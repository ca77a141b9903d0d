/* gelu.c - issue 14 (char_gpt speed): the per-element loops compiled with
 * FMA contraction (CPU_FMA_CLONES; the rest of runtime/cpu is compiled
 * without it, CMakeLists.txt): erf and its gradient, and gelu and its
 * gradient over arrays, 8 lanes at a time: runtime/ops_math.h's piecewise
 * polynomials (mg_gelu_piece) with each lane's interval coefficients picked from registers by its index
 * (__builtin_shuffle, vpermps on AVX2; lane by lane under clang), the same
 * operations in the same order as the scalar functions, which take the tail;
 * so the bits of mg_gelu and mg_gelu_grad compiled alike
 * (tests/kern/test_vecmath.c compares them). activations.c's gelu kernels
 * and fused.c's gelu instructions call these: fused and unfused plans stay
 * bit for bit. CPU_FMA_CLONES: x86-64-v3 (FMA contraction, as the scalar code
 * in that clone) or portable. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <string.h>

#include "../ops_math.h"
#include "kernels_impl.h"
#include "vec8.h"

/* the 8 values of a coefficient row at the lanes' intervals i (0..7) */
#define PICK8(row, i) PERM8(LD8(row), (i))

static const float h_coef[][8] __attribute__((aligned(32))) = {MG_GELU_H_COEF(MG_GELU_ROW)};
static const float k_coef[][8] __attribute__((aligned(32))) = {MG_GELU_K_COEF(MG_GELU_ROW)};
enum { NH = sizeof h_coef / sizeof *h_coef, NK = sizeof k_coef / sizeof *k_coef };

/* mg_gelu_piece(c, nc, x) of 8 lanes: a macro, since a vector argument or
 * result changes the ABI between the clones (-Wpsabi) */
#define GELU_PIECE8(out, c, nc, x)                                                                 \
    do {                                                                                           \
        v8 z_ = (v8)((v8i)(x) & 0x7fffffff);                                                       \
        v8i in_ = z_ < 6.2f;                                                                       \
        v8 cap_ = (v8){0} + 6.1999f, zc_ = SEL8(in_, z_, cap_);                                    \
        v8i i_ = __builtin_convertvector(zc_ * (1.0f / MG_GELU_W), v8i);                           \
        v8 t_ = zc_ - (__builtin_convertvector(i_, v8) * MG_GELU_W + 0.5f * MG_GELU_W);            \
        v8 p_ = PICK8((c)[(nc) - 1], i_);                                                          \
        for (int k_ = (nc) - 2; k_ >= 0; k_--) p_ = p_ * t_ + PICK8((c)[k_], i_);                  \
        p_ = (v8)((v8i)p_ & in_);                                                                  \
        (out) = SEL8((x) >= 0.0f, 1.0f - p_, p_);                                                  \
    } while (0)

/* o = erf(x) and o = erf_grad(x, dy) over n: polynomials, 1.3-1.4x faster
 * with FMA than the "avx2" clone's separate multiplies and adds */
CPU_FMA_CLONES void cpu_erf(float *o, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) o[i] = mg_erf(x[i]);
}
CPU_FMA_CLONES void cpu_erf_grad(float *o, const float *x, const float *dy, int64_t n) {
    for (int64_t i = 0; i < n; i++) o[i] = mg_erf_grad(x[i], dy[i]);
}

/* o = gelu(x) over n */
CPU_FMA_CLONES void cpu_gelu(float *o, const float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v8 xv = LD8(x + i), r;
        GELU_PIECE8(r, h_coef, NH, xv);
        ST8(o + i, xv * r);
    }
    for (; i < n; i++) o[i] = mg_gelu(x[i]);
}

/* o = gelu_grad(x, dy) over n */
CPU_FMA_CLONES void cpu_gelu_grad(float *o, const float *x, const float *dy, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v8 xv = LD8(x + i), r;
        GELU_PIECE8(r, k_coef, NK, xv);
        ST8(o + i, LD8(dy + i) * SEL8(xv != xv, xv, r)); /* NaN stays */
    }
    for (; i < n; i++) o[i] = mg_gelu_grad(x[i], dy[i]);
}
