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
/* lane l of the result: v's lane i[l] (0..7) */
#if defined(__GNUC__) && !defined(__clang__)
#define PERM8(v, i) __builtin_shuffle((v), (i)) /* vpermps on AVX2 */
#else /* clang has no variable __builtin_shuffle */
#define PERM8(v, i) ({ v8 v_ = (v), r_; v8i i_ = (i); for (int l_ = 0; l_ < 8; l_++) r_[l_] = v_[i_[l_] & 7]; r_; })
#endif

#endif
