/* gelu.c - issue 14 (char_gpt speed): the per-element loops compiled with
 * FMA contraction (CPU_FMA_CLONES; the rest of runtime/cpu is compiled
 * without it, CMakeLists.txt): erf and its gradient, and gelu and its
 * gradient over arrays, 16 lanes at a time where the CPU has AVX-512, else 8
 * (and the rest one by one): runtime/ops_math.h's piecewise
 * polynomials (mg_gelu_piece) with each lane's interval coefficients picked from registers by its index
 * (__builtin_shuffle, vpermps; lane by lane under clang), the same
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

/* mg_gelu_piece(c, nc, x) over the lanes of vector x, of type V (VI its
 * int32 lanes; PICK(row, i) the row's values at the lanes' intervals i): a
 * macro, since a vector argument or result changes the ABI between the
 * clones (-Wpsabi) */
#define SEL_AS(VI, V, m, a, b) ((V)(((VI)(a) & (m)) | ((VI)(b) & ~(m)))) /* m ? a : b per lane */
#define GELU_PIECE(V, VI, PICK, out, c, nc, x)                                                     \
    do {                                                                                           \
        V z_ = (V)((VI)(x) & 0x7fffffff);                                                          \
        VI in_ = z_ < 6.2f;                                                                        \
        V cap_ = (V){0} + 6.1999f, zc_ = SEL_AS(VI, V, in_, z_, cap_);                             \
        VI i_ = __builtin_convertvector(zc_ * (1.0f / MG_GELU_W), VI);                             \
        V t_ = zc_ - (__builtin_convertvector(i_, V) * MG_GELU_W + 0.5f * MG_GELU_W);              \
        V p_ = PICK((c)[(nc) - 1], i_);                                                            \
        for (int k_ = (nc) - 2; k_ >= 0; k_--) p_ = p_ * t_ + PICK((c)[k_], i_);                   \
        p_ = (V)((VI)p_ & in_);                                                                    \
        (out) = SEL_AS(VI, V, (x) >= 0.0f, 1.0f - p_, p_);                                         \
    } while (0)

/* gelu and gelu_grad over [0, n) in 16 lanes, up to the last whole 16 (the
 * return value): AVX-512 (x86-64-v4), gcc only. Horner's chain of 8 FMAs a
 * vector is long, and the core keeps only so many vector operations waiting;
 * where a 512-bit operation is one of them (Zen 4, which runs it on two 256-bit
 * halves), twice the lanes are in flight: 1.5-1.8x the 8-lane loop (issue 14).
 * The same operations per lane, so the same bits. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define GELU_V16 1
typedef float v16 __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
#define PICK16(row, i) __builtin_shuffle(__builtin_shufflevector(LD8(row), LD8(row), 0, 1, 2, 3, 4, 5, 6, 7, \
                                                                 8, 9, 10, 11, 12, 13, 14, 15), (i))
#define LD16(p) ({ v16 v_; memcpy(&v_, (p), sizeof v_); v_; })
#define ST16(p, v) ({ v16 t_ = (v); memcpy((p), &t_, sizeof t_); })

__attribute__((target("arch=x86-64-v4"))) static int64_t gelu16(float *o, const float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        v16 xv = LD16(x + i), r;
        GELU_PIECE(v16, v16i, PICK16, r, h_coef, NH, xv);
        ST16(o + i, xv * r);
    }
    return i;
}
__attribute__((target("arch=x86-64-v4"))) static int64_t gelu_grad16(float *o, const float *x, const float *dy,
                                                                     int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        v16 xv = LD16(x + i), r;
        GELU_PIECE(v16, v16i, PICK16, r, k_coef, NK, xv);
        ST16(o + i, LD16(dy + i) * SEL_AS(v16i, v16, xv != xv, xv, r)); /* NaN stays */
    }
    return i;
}
#endif

/* where the 16-lane loops run: the first whole 16s, on a CPU that has them */
#ifdef GELU_V16
#define START16(call) (__builtin_cpu_supports("x86-64-v4") ? (call) : 0)
#else
#define START16(call) 0
#endif

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
    int64_t i = START16(gelu16(o, x, n));
    for (; i + 8 <= n; i += 8) {
        v8 xv = LD8(x + i), r;
        GELU_PIECE(v8, v8i, PICK8, r, h_coef, NH, xv);
        ST8(o + i, xv * r);
    }
    for (; i < n; i++) o[i] = mg_gelu(x[i]);
}

/* o = gelu_grad(x, dy) over n */
CPU_FMA_CLONES void cpu_gelu_grad(float *o, const float *x, const float *dy, int64_t n) {
    int64_t i = START16(gelu_grad16(o, x, dy, n));
    for (; i + 8 <= n; i += 8) {
        v8 xv = LD8(x + i), r;
        GELU_PIECE(v8, v8i, PICK8, r, k_coef, NK, xv);
        ST8(o + i, LD8(dy + i) * SEL8(xv != xv, xv, r)); /* NaN stays */
    }
    for (; i < n; i++) o[i] = mg_gelu_grad(x[i], dy[i]);
}
