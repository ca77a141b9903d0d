/* ops_math.h - per-element math of every op, shared by the CPU and CUDA kernels
 * so the CPU tests check the arithmetic the GPU runs. Everything is
 * `static inline` and free of library state; f32 in, f32 out. */
#ifndef MGC_OPS_MATH_H
#define MGC_OPS_MATH_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define MG_HD __host__ __device__
#else
#define MG_HD
#endif

/* ---- elementwise forward ---- */
MG_HD static inline float mg_add(float a, float b) { return a + b; }
MG_HD static inline float mg_sub(float a, float b) { return a - b; }
MG_HD static inline float mg_mul(float a, float b) { return a * b; }
MG_HD static inline float mg_div(float a, float b) { return a / b; }
MG_HD static inline float mg_neg(float x) { return -x; }
MG_HD static inline float mg_exp(float x) { return expf(x); }
MG_HD static inline float mg_log(float x) { return logf(x); }
MG_HD static inline float mg_sqrt(float x) { return sqrtf(x); }
MG_HD static inline float mg_relu(float x) { return x > 0.0f ? x : 0.0f; }
MG_HD static inline float mg_tanh(float x) { return tanhf(x); }

/* comparisons: 1 where they hold, else 0 */
MG_HD static inline float mg_less(float a, float b) { return a < b ? 1.0f : 0.0f; }
MG_HD static inline float mg_less_equal(float a, float b) { return a <= b ? 1.0f : 0.0f; }
MG_HD static inline float mg_greater(float a, float b) { return a > b ? 1.0f : 0.0f; }
MG_HD static inline float mg_greater_equal(float a, float b) { return a >= b ? 1.0f : 0.0f; }
MG_HD static inline float mg_equal(float a, float b) { return a == b ? 1.0f : 0.0f; }
MG_HD static inline float mg_not_equal(float a, float b) { return a != b ? 1.0f : 0.0f; }

/* 1 / (1 + e^-x) without overflow for large |x| */
MG_HD static inline float mg_sigmoid(float x) {
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

/* ---- elementwise backward: (forward input or output, dy) -> dx ---- */
MG_HD static inline float mg_relu_grad(float x, float dy) { return x > 0.0f ? dy : 0.0f; }
MG_HD static inline float mg_sigmoid_grad(float y, float dy) { return dy * y * (1.0f - y); }
MG_HD static inline float mg_tanh_grad(float y, float dy) { return dy * (1.0f - y * y); }

/* ---- issue 14 (speed): exp and erf as straight-line float code, so the
 * compiler vectorizes the loops that call them (libm's expf and erff are
 * calls, one element at a time). Branches are mg_select; NaN stays NaN. ---- */
MG_HD static inline float mg_bits_float(int32_t i) {
    union { int32_t i; float f; } u;
    u.i = i;
    return u.f;
}
MG_HD static inline int32_t mg_float_bits(float f) {
    union { int32_t i; float f; } u;
    u.f = f;
    return u.i;
}
/* c ? a : b on the bits: gcc threads jumps through a ?: and then does not
 * if-convert arms holding float arithmetic (it may trap, -ftrapping-math), so
 * a loop over a ?: stays scalar */
MG_HD static inline float mg_select(int c, float a, float b) {
    int32_t m = -(int32_t)(c != 0);
    return mg_bits_float((mg_float_bits(a) & m) | (mg_float_bits(b) & ~m));
}
/* mg_expf's and mg_expf_neg's core: n = round(x / ln 2) (0 for NaN: r carries it) and
 * e^r, r = x - n ln 2 (ln 2 in two parts), by a polynomial */
MG_HD static inline float mg_exp_n(float x) {
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    return mg_select(n == n, n, 0.0f);
}
MG_HD static inline float mg_exp_reduced(float x, float n) {
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    return p * (r * r) + r + 1.0f;
}
/* e^x, Cephes' expf: x = n ln2 + r with |r| <= ln2/2, e^r by a degree-7
 * polynomial, 2^n as two exponent-field factors (so n may reach -150 and
 * the result underflows gradually or overflows to inf as expf's). Max error
 * 1.01 ulp relative against exp(), checked <= 1.5 (tests/kern/test_vecmath.c
 * over [-104, 89]); 0 below -104, inf above 88.73. */
MG_HD static inline float mg_expf(float x) {
    float xc = mg_select(x < -104.0f, -104.0f, x);
    xc = mg_select(xc > 89.0f, 89.0f, xc);
    float n = mg_exp_n(xc), p = mg_exp_reduced(xc, n);
    int32_t ni = (int32_t)n, h = ni / 2;
    float y = p * mg_bits_float((h + 127) << 23) * mg_bits_float((ni - h + 127) << 23);
    return mg_select(x < -104.0f, 0.0f, y);
}
/* erf(x): for |x| < 0.921875, x + x P(x^2) (P(0) = 2/sqrt(pi) - 1); above, 1 - e^(-x^2) Q(|x| - 2.4)
 * with |x| capped at 3.92 (erf rounds to 1 beyond), Q a fit of erfc(x) e^(x^2);
 * both computed, one selected. Max error 8.6e-8 absolute against erf(), checked <= 1e-7
 * (tests/kern/test_vecmath.c: [-6, 6] in steps of 3.1e-5, every float of [0.9, 0.95]). */
/* its core, with e^(-x^2) given as e (computed for |x| capped at 3.92 by mg_erf_v;
 * beyond 3.92 1 - e Q rounds to 1, as erf does) */
MG_HD static inline float mg_erf_e(float x, float e) {
    float ax = mg_bits_float(mg_float_bits(x) & 0x7fffffff), s = x * x;
    float p = 8.282101771328598e-05f;
    p = p * s + -0.0008119611884467304f;
    p = p * s + 0.005198759492486715f;
    p = p * s + -0.02685837633907795f;
    p = p * s + 0.11283675581216812f;
    p = p * s + -0.37612631916999817f;
    p = p * s + 0.12837916709551257f; /* 2/sqrt(pi) - 1: x + x P keeps the leading x exact */
    float small = x + x * p;
    float b = mg_select(ax > 3.92f, 3.92f, ax); /* NaN stays */
    float t = b - 2.4f;
    float q = 8.595501640229486e-06f;
    q = q * t + 1.3573338947026059e-05f;
    q = q * t + 3.068220030399971e-05f;
    q = q * t + -9.73414207692258e-05f;
    q = q * t + 0.00022105015523266047f;
    q = q * t + -0.0008823741809464991f;
    q = q * t + 0.0028792330995202065f;
    q = q * t + -0.00905881728976965f;
    q = q * t + 0.02749471180140972f;
    q = q * t + -0.07958561927080154f;
    q = q * t + 0.21849869191646576f;
    float big = 1.0f - e * q;
    big = mg_bits_float(mg_float_bits(big) ^ (mg_float_bits(x) & (int32_t)0x80000000)); /* erf(-x) = -erf(x) */
    return mg_select(ax < 0.921875f, small, big);
}
/* mg_expf for x in [-87, 0] or NaN, with the same bits there (issue 14: erf's
 * e^(-b^2), b <= 3.92): no clamps, and 2^n as one
 * exponent-field factor (n >= -126, normal, so p 2^n is rounded once either
 * way; tests/kern/test_vecmath.c compares the bits) */
MG_HD static inline float mg_expf_neg(float x) {
    float n = mg_exp_n(x);
    return mg_exp_reduced(x, n) * mg_bits_float(((int32_t)n + 127) << 23);
}
/* e^x for x <= 0 (or NaN): mg_expf's bits down to -87, 0 below (where mg_expf's
 * results are denormals under 2^-126) */
MG_HD static inline float mg_exp_le0(float x) {
    return mg_select(x < -87.0f, 0.0f, mg_expf_neg(mg_select(x < -87.0f, -87.0f, x)));
}
MG_HD static inline float mg_erf_v(float x) {
    float ax = mg_bits_float(mg_float_bits(x) & 0x7fffffff), b = mg_select(ax > 3.92f, 3.92f, ax); /* NaN stays */
    return mg_erf_e(x, mg_expf_neg(-b * b));
}

/* ---- activations and elementwise math of issue 12 (Keras formulas) ---- */
/* SELU's constants (Klambauer et al., as Keras) */
#define MG_SELU_ALPHA 1.67326324235437728481f
#define MG_SELU_SCALE 1.05070098735548049342f
MG_HD static inline float mg_abs(float x) { return fabsf(x); }
MG_HD static inline float mg_erf(float x) { return mg_erf_v(x); }
/* x * Phi(x): below, with its gradient (issue 14, char_gpt speed) */
/* log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|) */
MG_HD static inline float mg_softplus(float x) { return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x))); }
MG_HD static inline float mg_elu(float x, float alpha) { return x > 0.0f ? x : alpha * expm1f(x); }
MG_HD static inline float mg_selu(float x) { return MG_SELU_SCALE * mg_elu(x, MG_SELU_ALPHA); }
MG_HD static inline float mg_leaky_relu(float x, float alpha) { return x > 0.0f ? x : alpha * x; }
/* ties (and NaN in b) give a: the gradient of a tie goes to a */
MG_HD static inline float mg_maximum(float a, float b) { return a >= b ? a : b; }
MG_HD static inline float mg_minimum(float a, float b) { return a <= b ? a : b; }
MG_HD static inline float mg_pow(float a, float b) { return powf(a, b); }
/* (x, dy) -> dx */
MG_HD static inline float mg_abs_grad(float x, float dy) { return x > 0.0f ? dy : x < 0.0f ? -dy : 0.0f; }
MG_HD static inline float mg_erf_grad(float x, float dy) { return dy * 1.12837916709551257390f * mg_expf(-x * x); }
/* ---- issue 14 (char_gpt speed): gelu(x) = x Phi(x) and gelu'(x) = Phi(x) +
 * x phi(x) by piecewise polynomials of z = |x|, no exponential, no division:
 * H(z) = Phi(-z) = erfc(z / sqrt 2) / 2 and K(z) = H(z) - z phi(z), each on 8
 * intervals of 0.775 over [0, 6.2) a polynomial in t = z - the interval's
 * centre (H degree 7, K degree 8; scripts/fit_gelu.py), 0 beyond 6.2 (H(6.2) =
 * 2.8e-10, K(6.2) = -1.1e-8); then Phi(x) = 1 - H(|x|) for x >= 0 and H(|x|)
 * below, gelu'(x) likewise 1 - K or K. The CPU kernels run the same operations
 * 8 lanes at a time, the interval's coefficients picked from registers
 * (runtime/cpu/gelu.c, the bits of these functions); CUDA runs these. Max
 * error against double over every float of 2^-10 <= |x| <= 12 (FMA code):
 * gelu 1.05e-7 |x|, gelu' 1.02e-7 absolute, about an ulp of results near 1
 * (docs/cpu-kernels.md; tests/kern/test_vecmath.c checks a sweep). A row per
 * power of t, a column per interval. ---- */
/* H: degree 7, max error 1.2e-08 in double (float coefficients) */
#define MG_GELU_H_COEF(X) \
    X(3.491930366e-01f, 1.225162148e-01f, 2.634212561e-02f, 3.338889219e-03f, 2.437795047e-04f, 1.010760843e-05f, 2.358224123e-07f, 3.077131883e-09f) \
    X(-3.700871766e-01f, -2.029812485e-01f, -6.106040254e-02f, -1.007431000e-02f, -9.116390138e-04f, -4.524620090e-05f, -1.231658189e-06f, -1.838815500e-08f) \
    X(7.170413435e-02f, 1.179828569e-01f, 5.915237963e-02f, 1.366324350e-02f, 1.589660882e-03f, 9.643443627e-05f, 3.102980372e-06f, 5.348576693e-08f) \
    X(5.241927132e-02f, -1.188802067e-02f, -2.802585065e-02f, -1.067484450e-02f, -1.696037478e-03f, -1.294720714e-04f, -5.004606010e-06f, -1.005373420e-07f) \
    X(-1.702011563e-02f, -1.620890573e-02f, 3.712503938e-03f, 4.962968174e-03f, 1.214109361e-03f, 1.217808676e-04f, 5.760946806e-06f, 1.356838766e-07f) \
    X(-6.540902425e-03f, 5.548743065e-03f, 2.765429905e-03f, -1.090240898e-03f, -5.925123696e-04f, -8.448027802e-05f, -5.063957360e-06f, -1.431594114e-07f) \
    X(2.599219093e-03f, 1.086683595e-03f, -1.347693731e-03f, -1.826603984e-04f, 1.791128743e-04f, 4.500692012e-05f, 3.744442893e-06f, 1.364570323e-07f) \
    X(6.121565821e-04f, -8.142164443e-04f, 4.244904267e-05f, 1.933547028e-04f, -1.806898035e-05f, -1.671945574e-05f, -2.014051461e-06f, -9.259476030e-08f)
/* K: degree 8, max error 1e-08 in double (float coefficients) */
#define MG_GELU_K_COEF(X) \
    X(2.057842612e-01f, -1.134494916e-01f, -9.196240455e-02f, -2.398767695e-02f, -2.935560886e-03f, -1.827543456e-04f, -5.968699043e-06f, -1.038083823e-07f) \
    X(-6.846034527e-01f, -1.316523850e-01f, 1.070942357e-01f, 5.397468805e-02f, 9.264672175e-03f, 7.315819385e-04f, 2.879195017e-05f, 5.844898396e-07f) \
    X(2.760506868e-01f, 3.124886751e-01f, 1.455700211e-02f, -4.587661102e-02f, -1.297593024e-02f, -1.366321812e-03f, -6.631524593e-05f, -1.591796376e-06f) \
    X(1.832822412e-01f, -1.229225099e-01f, -8.330266923e-02f, 1.113480609e-02f, 1.014833804e-02f, 1.560422010e-03f, 9.654854512e-05f, 2.786216328e-06f) \
    X(-9.782045335e-02f, -4.877505824e-02f, 4.535584152e-02f, 1.001884975e-02f, -4.257863853e-03f, -1.191323390e-03f, -9.896651318e-05f, -3.508845111e-06f) \
    X(-3.298432380e-02f, 4.085630178e-02f, 4.641423875e-04f, -9.290052578e-03f, 2.623379114e-04f, 6.130411639e-04f, 7.505370741e-05f, 3.360823257e-06f) \
    X(2.053987980e-02f, 7.640359108e-04f, -8.969062939e-03f, 2.523292322e-03f, 7.806107169e-04f, -1.889483974e-04f, -4.287038610e-05f, -2.550716090e-06f) \
    X(3.931062296e-03f, -6.443658844e-03f, 2.390814712e-03f, 5.510352785e-04f, -4.534545296e-04f, 4.507743597e-06f, 1.825744948e-05f, 1.653870299e-06f) \
    X(-2.898054430e-03f, 8.281821501e-04f, 6.245778641e-04f, -5.291654961e-04f, 8.854432235e-05f, 2.500339724e-05f, -5.007696473e-06f, -7.946292726e-07f)
#define MG_GELU_ROW(...) {__VA_ARGS__},
#define MG_GELU_W 0.775f
/* always inlined, so a caller compiled for FMA contracts these as its own code
 * (runtime/cpu/gelu.c's lanes and its scalar tail give the same bits); nvcc
 * has its own inlining (__forceinline__ would repeat the inline) */
#if defined(__CUDACC__)
#define MG_GELU_INLINE
#elif defined(__GNUC__)
#define MG_GELU_INLINE __attribute__((always_inline))
#else
#define MG_GELU_INLINE
#endif
/* x >= 0 ? 1 - P(|x|) : P(|x|), P of nc coefficient rows c; a NaN x gives P = 0 */
MG_HD static inline MG_GELU_INLINE float mg_gelu_piece(const float (*c)[8], int nc, float x) {
    float z = mg_bits_float(mg_float_bits(x) & 0x7fffffff);
    int in = z < 6.2f;
    float zc = mg_select(in, z, 6.1999f);
    int i = (int)(zc * (1.0f / MG_GELU_W));
    float t = zc - ((float)i * MG_GELU_W + 0.5f * MG_GELU_W);
    float p = c[nc - 1][i];
    for (int k = nc - 2; k >= 0; k--) p = p * t + c[k][i];
    p = mg_select(in, p, 0.0f);
    return mg_select(x >= 0.0f, 1.0f - p, p);
}
MG_HD static inline MG_GELU_INLINE float mg_gelu(float x) {
    static const float c[][8] = {MG_GELU_H_COEF(MG_GELU_ROW)};
    return x * mg_gelu_piece(c, (int)(sizeof c / sizeof *c), x);
}
MG_HD static inline MG_GELU_INLINE float mg_gelu_grad(float x, float dy) {
    static const float c[][8] = {MG_GELU_K_COEF(MG_GELU_ROW)};
    return dy * mg_select(x != x, x, mg_gelu_piece(c, (int)(sizeof c / sizeof *c), x)); /* NaN stays */
}
MG_HD static inline float mg_elu_grad(float x, float dy, float alpha) { return x > 0.0f ? dy : dy * alpha * expf(x); }
MG_HD static inline float mg_selu_grad(float x, float dy) { return MG_SELU_SCALE * mg_elu_grad(x, dy, MG_SELU_ALPHA); }
MG_HD static inline float mg_leaky_relu_grad(float x, float dy, float alpha) { return x > 0.0f ? dy : dy * alpha; }

/* ---- softmax and cross-entropy (stable: shift by the row max) ---- */
/* exp(x - max) of one element of a row whose maximum is mx */
/* (issue 14: x - mx <= 0, so mg_exp_le0, as fast as erf's exponential) */
MG_HD static inline float mg_exp_shifted(float x, float mx) { return mg_exp_le0(x - mx); }
/* log(sum(exp(x - mx))) + mx from the shifted sum */
MG_HD static inline float mg_logsumexp(float mx, float sum_exp) { return mx + logf(sum_exp); }
/* -log softmax[label] of a row: logsumexp - logit[label] */
MG_HD static inline float mg_xent(float lse, float logit_label) { return lse - logit_label; }
/* d xent / d logit_j = dy * (softmax_j - [j == label]) */
MG_HD static inline float mg_xent_grad(float p, int is_label, float dy) { return dy * (p - (is_label ? 1.0f : 0.0f)); }
/* softmax backward: y * (dy - sum(dy * y)) */
MG_HD static inline float mg_softmax_grad(float y, float dy, float dot) { return y * (dy - dot); }
/* issue 14 (char_gpt speed): normalize's backward at one element: r (dy - mean(dy)
 * - xhat mean(dy xhat)), r = 1 / sqrt(var + epsilon), xhat = (x - mean) r */
MG_HD static inline float mg_normalize_grad(float xhat, float dy, float r, float mean_dy, float mean_dy_xhat) {
    return r * (dy - mean_dy - xhat * mean_dy_xhat);
}
/* issue 14 (batch norm in training): scale_shift at one element, (x - m) s + b,
 * as the unfused sub, mul and add round it (and conv2d_bn_epilogue) */
MG_HD static inline float mg_scale_shift(float x, float m, float s, float b) {
    return mg_add(mg_mul(mg_sub(x, m), s), b);
}
/* issue 14 (char_gpt speed): causal_softmax's backward at a kept element (j <= i):
 * the softmax gradient times the scale the forward applied to x */
MG_HD static inline float mg_causal_softmax_grad(float y, float dy, float dot, float scale) {
    return scale * mg_softmax_grad(y, dy, dot);
}

/* ---- dropout: a keep decision from (seed, step, global element index) ---- */
/* splitmix64 finaliser */
MG_HD static inline uint64_t mg_hash64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* the per-(seed, step) part of the hash, computed once per kernel call */
MG_HD static inline uint64_t mg_dropout_key(uint64_t seed, int64_t step) {
    return mg_hash64(mg_hash64(seed) ^ (uint64_t)step);
}
/* uniform in [0, 1) with 24 random bits, from the key of (seed, step) */
MG_HD static inline float mg_dropout_uniform_key(uint64_t key, uint64_t index) {
    return (float)(int32_t)(mg_hash64(key ^ index) >> 40) * (1.0f / 16777216.0f);
}
MG_HD static inline float mg_dropout_uniform(uint64_t seed, int64_t step, uint64_t index) {
    return mg_dropout_uniform_key(mg_dropout_key(seed, step), index);
}
/* issue 14 (char_gpt speed): the same decision in integers. The uniform is
 * v / 2^24 with v the hash's top 24 bits, exactly, and (z ^ (z >> 31)) >> 40
 * is z >> 40 (the final xor-shift only touches bits below 33), so v is the
 * second product's top 24 bits. v / 2^24 >= rate <=> v >= ceil(rate 2^24)
 * (rate 2^24 is exact: a power-of-two scaling), the threshold clamped to
 * [0, 2^24] (2^24 keeps nothing: rate >= 1 or NaN). tests/kern/test_vecmath.c
 * checks both against the original formula. */
MG_HD static inline uint32_t mg_dropout_bits(uint64_t key, uint64_t index) {
    uint64_t z = (key ^ index) + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)(z >> 40);
}
MG_HD static inline uint32_t mg_dropout_threshold(float rate) {
    float t = ceilf(rate * 16777216.0f);
    return t > 0.0f ? (t < 16777216.0f ? (uint32_t)t : 16777216u) : t == t ? 0u : 16777216u;
}
/* the factor an element is multiplied by: 0 if dropped, 1/(1-rate) if kept */
MG_HD static inline float mg_dropout_scale_key(uint64_t key, uint64_t index, float rate) {
    return mg_dropout_bits(key, index) >= mg_dropout_threshold(rate) ? 1.0f / (1.0f - rate) : 0.0f;
}
MG_HD static inline float mg_dropout_scale(uint64_t seed, int64_t step, uint64_t index, float rate) {
    return mg_dropout_scale_key(mg_dropout_key(seed, step), index, rate);
}

/* ---- optimizer updates (Keras formulas), one element each ---- */
/* plain SGD: p -= lr * g */
MG_HD static inline void mg_sgd(float *p, float g, float lr) { *p -= lr * g; }
/* momentum: v = mu*v - lr*g; p += v, or with Nesterov p += mu*v - lr*g */
MG_HD static inline void mg_sgd_momentum(float *p, float g, float *v, float lr, float mu, int nesterov) {
    *v = mu * *v - lr * g;
    *p += nesterov ? mu * *v - lr * g : *v;
}
/* Adam's step size at 1-based step t: lr * sqrt(1 - b2^t) / (1 - b1^t) */
MG_HD static inline float mg_adam_lr_t(float lr, float b1, float b2, int64_t t) {
    double bt1 = pow((double)b1, (double)t), bt2 = pow((double)b2, (double)t);
    return (float)(lr * sqrt(1.0 - bt2) / (1.0 - bt1));
}
/* m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2); p -= lr_t m / (sqrt(v) + eps);
 * AdamW first decays p by lr * wd (decoupled, Keras). */
MG_HD static inline void mg_adam(float *p, float g, float *m, float *v, float lr_t, float b1, float b2, float eps,
                                 float lr_wd) {
    *p -= lr_wd * *p;
    *m += (g - *m) * (1.0f - b1);
    *v += (g * g - *v) * (1.0f - b2);
    *p -= lr_t * *m / (sqrtf(*v) + eps);
}
/* ms = rho*ms + (1-rho) g^2; inc = lr g / sqrt(ms + eps);
 * with momentum: mom = mu*mom + inc, p -= mom; else p -= inc (Keras 3) */
MG_HD static inline float mg_rmsprop_inc(float g, float *ms, float lr, float rho, float eps) {
    *ms = rho * *ms + (1.0f - rho) * g * g;
    return lr * g / sqrtf(*ms + eps);
}
MG_HD static inline void mg_rmsprop(float *p, float g, float *ms, float lr, float rho, float eps) {
    *p -= mg_rmsprop_inc(g, ms, lr, rho, eps);
}
MG_HD static inline void mg_rmsprop_momentum(float *p, float g, float *ms, float *mom, float lr, float rho, float mu,
                                             float eps) {
    *mom = mu * *mom + mg_rmsprop_inc(g, ms, lr, rho, eps);
    *p -= *mom;
}

/* ---- issue 12: clipping, weight decay, adagrad, nadam, lamb (Keras 3) ---- */
/* the factor clipping multiplies a gradient by: clip / max(||g||, clip) from
 * the squared norm (of one gradient, or of all: global_clipnorm); 1 when clip <= 0 */
MG_HD static inline float mg_clip_scale(float sq_norm, float clip) {
    return clip > 0.0f ? clip / fmaxf(sqrtf(sq_norm), clip) : 1.0f;
}
/* decoupled weight decay, before the update: p -= lr * wd * p */
MG_HD static inline void mg_decay(float *p, float lr_wd) { *p -= *p * lr_wd; }
/* adagrad: acc += g^2; p -= lr g / sqrt(acc + eps) */
MG_HD static inline void mg_adagrad(float *p, float g, float *acc, float lr, float eps) {
    *acc += g * g;
    *p -= lr * g / sqrtf(*acc + eps);
}
/* Nadam's momentum cache u_i = b1 (1 - 0.5 * 0.96^(0.004 i)) */
MG_HD static inline double mg_nadam_u(double b1, int64_t i) { return b1 * (1.0 - 0.5 * pow(0.96, 0.004 * (double)i)); }
/* Nadam's coefficients at step t: m_hat = cm * m + cg * g, v_hat = v / (1 - b2^t).
 * U_t = u_1 ... u_t (Keras keeps it in a variable); once below 1e-30 it no
 * longer changes 1 - U_t in f32, so the product stops there. */
MG_HD static inline void mg_nadam_coeffs(double b1, double b2, int64_t t, float *cm, float *cg, float *c2) {
    double U = 1.0;
    for (int64_t i = 1; i <= t && U > 1e-30; i++) U *= mg_nadam_u(b1, i);
    if (U <= 1e-30) U = 0.0;
    double ut = mg_nadam_u(b1, t), ut1 = mg_nadam_u(b1, t + 1);
    *cm = (float)(ut1 / (1.0 - U * ut1)), *cg = (float)((1.0 - ut) / (1.0 - U)), *c2 = (float)(1.0 - pow(b2, (double)t));
}
/* m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2) (Adam's moments, shared by nadam and lamb) */
MG_HD static inline void mg_moments(float g, float *m, float *v, float b1, float b2) {
    *m += (g - *m) * (1.0f - b1);
    *v += (g * g - *v) * (1.0f - b2);
}
MG_HD static inline void mg_nadam(float *p, float g, float *m, float *v, float lr, float b1, float b2, float eps,
                                  float cm, float cg, float c2) {
    mg_moments(g, m, v, b1, b2);
    *p -= lr * (cm * *m + cg * g) / (sqrtf(*v / c2) + eps);
}
/* lamb's direction r = (m / c1) / (sqrt(v / c2) + eps), c1 = 1 - b1^t, c2 = 1 - b2^t */
MG_HD static inline float mg_lamb_dir(float m, float v, float c1, float c2, float eps) { return m / c1 / (sqrtf(v / c2) + eps); }
/* the trust ratio ||p|| / ||r|| from the squared norms, 1 when either is 0 */
MG_HD static inline float mg_lamb_ratio(double p_sq, double r_sq) {
    return p_sq > 0 && r_sq > 0 ? (float)(sqrt(p_sq) / sqrt(r_sq)) : 1.0f;
}


/* ---- issue 14: the ops a fused program may hold, with their per-element
 * math over operands a, b (b unused by unary ops) and the op's float
 * attribute alpha; the fused kernels (runtime/cpu/fused.c,
 * runtime/cuda/cuda_fused.cu) expand it, so fused and unfused run the same
 * functions. X(OP enum suffix, expression); ir_fused_op_ok decides which ops
 * may be fused, and the kernels fail on one missing here. */
#define MG_FUSED_OPS(X)                                                                            \
    X(ADD, mg_add(a, b)) X(SUB, mg_sub(a, b)) X(MUL, mg_mul(a, b)) X(DIV, mg_div(a, b))            \
    X(NEG, mg_neg(a)) X(EXP, mg_exp(a)) X(LOG, mg_log(a)) X(SQRT, mg_sqrt(a)) X(RELU, mg_relu(a))  \
    X(SIGMOID, mg_sigmoid(a)) X(TANH, mg_tanh(a))                                                  \
    X(RELU_GRAD, mg_relu_grad(a, b)) X(SIGMOID_GRAD, mg_sigmoid_grad(a, b))                        \
    X(TANH_GRAD, mg_tanh_grad(a, b))                                                               \
    X(LESS, mg_less(a, b)) X(LESS_EQUAL, mg_less_equal(a, b)) X(GREATER, mg_greater(a, b))         \
    X(GREATER_EQUAL, mg_greater_equal(a, b)) X(EQUAL, mg_equal(a, b))                              \
    X(NOT_EQUAL, mg_not_equal(a, b))                                                               \
    X(ABS, mg_abs(a)) X(ERF, mg_erf(a)) X(GELU, mg_gelu(a)) X(SOFTPLUS, mg_softplus(a))            \
    X(SELU, mg_selu(a)) X(ELU, mg_elu(a, alpha)) X(LEAKY_RELU, mg_leaky_relu(a, alpha))            \
    X(MAXIMUM, mg_maximum(a, b)) X(MINIMUM, mg_minimum(a, b)) X(POW, mg_pow(a, b))                 \
    X(ABS_GRAD, mg_abs_grad(a, b)) X(ERF_GRAD, mg_erf_grad(a, b)) X(GELU_GRAD, mg_gelu_grad(a, b)) \
    X(SELU_GRAD, mg_selu_grad(a, b)) X(ELU_GRAD, mg_elu_grad(a, b, alpha))                         \
    X(LEAKY_RELU_GRAD, mg_leaky_relu_grad(a, b, alpha))

#endif
