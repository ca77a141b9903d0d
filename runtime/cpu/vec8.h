/* vec8.h - the hand-vectorized kernels' words: 8 float lanes (32 bytes, one
 * AVX2 register) as a GCC/clang vector type, loads and stores through memcpy
 * (any alignment, no aliasing assumption; they compile to vmovups), and a
 * per-lane select. Macros, not functions: a vector argument or result would
 * change the ABI between target clones (-Wpsabi). */
#ifndef MGC_CPU_VEC8_H
#define MGC_CPU_VEC8_H

#include <stdint.h>
#include <string.h>

typedef float v8 __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

#define LD8(p) ({ v8 v_; memcpy(&v_, (p), sizeof v_); v_; })
#define ST8(p, v) ({ v8 t_ = (v); memcpy((p), &t_, sizeof t_); })
#define SEL8(m, a, b) ((v8)(((v8i)(a) & (m)) | ((v8i)(b) & ~(m)))) /* m ? a : b per lane */
/* issue 14 (char_gpt speed): a matmul_epilogue's bias, and ReLU if relu,
 * on a C tile's row of 16 sums (lo, hi) in registers: the rounded sum plus
 * the bias, then max with 0 as mg_relu (NaN to 0), the same bits as
 * cpu_epilogue_rows on the stored sums */
#define BIAS_RELU16(lo, hi, bias, relu)                                 \
    do {                                                                \
        (lo) += LD8(bias), (hi) += LD8((bias) + 8);                     \
        if (relu) (lo) = SEL8((lo) > 0.0f, (lo), (v8){0}),              \
                  (hi) = SEL8((hi) > 0.0f, (hi), (v8){0});              \
    } while (0)

/* lane l of the result: v's lane i[l] (0..7) */
#if defined(__GNUC__) && !defined(__clang__)
#define PERM8(v, i) __builtin_shuffle((v), (i)) /* vpermps on AVX2 */
#else /* clang has no variable __builtin_shuffle */
#define PERM8(v, i) ({ v8 v_ = (v), r_; v8i i_ = (i); for (int l_ = 0; l_ < 8; l_++) r_[l_] = v_[i_[l_] & 7]; r_; })
#endif

/* r[q] = column q of the 8 x 8 block whose rows are r[0..7]
 * (__builtin_shufflevector: gcc 12 and clang alike); always inlined, so
 * compiled for the caller's target clone, taking the block by pointer */
#define SHUF(a, b, i0, i1, i2, i3, i4, i5, i6, i7) __builtin_shufflevector(a, b, i0, i1, i2, i3, i4, i5, i6, i7)
static inline __attribute__((always_inline)) void transpose8(v8 r[8]) {
    v8 t[8], u[8];
    for (int i = 0; i < 8; i += 2)
        t[i] = SHUF(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13), t[i + 1] = SHUF(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    for (int i = 0; i < 8; i += 4)
        for (int h = 0; h < 2; h++)
            u[i + 2 * h] = SHUF(t[i + h], t[i + h + 2], 0, 1, 8, 9, 4, 5, 12, 13),
                  u[i + 2 * h + 1] = SHUF(t[i + h], t[i + h + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    for (int i = 0; i < 4; i++)
        r[i] = SHUF(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11), r[i + 4] = SHUF(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
}

#endif
