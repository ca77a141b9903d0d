/* test_vecmath.c (issue 14, speed) - the vectorizable math of runtime/ops_math.h
 * against libm in double: mg_expf (relative, in ulp), mg_erf_v (absolute, the
 * documented 1e-7), gelu and its gradient, every float in dense sweeps plus
 * the special values; and the dropout mask from the hoisted key against the
 * original three-hash formula, bit for bit. Exits 1 on any failure. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../runtime/cpu/kernels_impl.h" /* cpu_gelu, cpu_gelu_grad */
#include "../../runtime/ops_math.h"

static int failed;

/* The kernels run these functions in vectorized loops, compiled for AVX2 with
 * FMA contraction (CPU_CLONES) or for plain x86-64; the sweeps check each
 * variant the machine has: y[i] = f(x[i]) over arrays. */
enum { F_EXP, F_ERF, F_GELU, F_GELU_GRAD, F_EXP_NEG };
#define EVAL_BODY                                                                                  \
    for (int64_t i = 0; i < n; i++)                                                                \
        y[i] = f == F_EXP ? mg_expf(x[i]) : f == F_ERF ? mg_erf_v(x[i]) : f == F_GELU ? mg_gelu(x[i]) \
               : f == F_EXP_NEG ? mg_expf_neg(x[i])                                                  \
                                : mg_gelu_grad(x[i], 1.0f);
static void eval_plain(int f, float *y, const float *x, int64_t n) { EVAL_BODY }
#if defined(__GNUC__) && defined(__x86_64__)
__attribute__((target("avx2,fma"))) static void eval_avx2(int f, float *y, const float *x, int64_t n) { EVAL_BODY }
#endif
static int variants(void) {
#if defined(__GNUC__) && defined(__x86_64__)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 2 : 1;
#else
    return 1;
#endif
}
static float eval1(int variant, int f, float x) {
    float y;
#if defined(__GNUC__) && defined(__x86_64__)
    if (variant) eval_avx2(f, &y, &x, 1);
    else
#endif
        eval_plain(f, &y, &x, 1);
    return y;
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL " __VA_ARGS__);                                                  \
            fputc('\n', stderr);                                                                   \
            failed++;                                                                              \
        }                                                                                          \
    } while (0)

/* ulp of a float-sized value v (denormal floor) */
static double ulp_of(double v) {
    int e;
    frexp(fabs(v), &e);
    double u = ldexp(1.0, e - 24);
    return u < 0x1p-149 ? 0x1p-149 : u;
}

static const char *const vname[2] = {"x86-64", "avx2+fma"};

static void test_expf(int v) {
#define EXPF(x) eval1(v, F_EXP, x)
    double worst = 0, at = 0;
    for (float x = -104.0f; x <= 89.0f; x += 0.00037f) {
        double ref = exp((double)x);
        if (ref > FLT_MAX) {
            CHECK(isinf(EXPF(x)), "mg_expf(%g) = %g, want inf (%s)", x, EXPF(x), vname[v]);
            continue;
        }
        if (ref < 0x1p-126) { /* denormal results: absolute, within two denormal steps */
            CHECK(fabs(EXPF(x) - ref) <= 0x1p-148, "mg_expf(%g) = %g, want %g (%s)", x, EXPF(x), ref, vname[v]);
            continue;
        }
        double e = fabs(EXPF(x) - ref) / ulp_of(ref);
        if (e > worst) worst = e, at = x;
    }
    printf("mg_expf (%s): max error %.3f ulp (at %g) over [-104, 89]\n", vname[v], worst, at);
    CHECK(worst <= 1.5, "mg_expf max error %.3f ulp > 1.5 (%s)", worst, vname[v]);
    CHECK(EXPF(0.0f) == 1.0f, "mg_expf(0) = %.9g", EXPF(0.0f));
    CHECK(EXPF(-1e9f) == 0.0f && EXPF(-INFINITY) == 0.0f, "mg_expf of -1e9 or -inf is not 0");
    CHECK(isinf(EXPF(INFINITY)) && isinf(EXPF(100.0f)), "mg_expf of inf or 100 is not inf");
    CHECK(isnan(EXPF(NAN)), "mg_expf(NaN) is not NaN");
#undef EXPF
}

static void test_erf(int v) {
#define ERF(x) eval1(v, F_ERF, x)
    double worst = 0, at = 0;
    for (float x = -6.0f; x <= 6.0f; x += 0.000031f) {
        double e = fabs(ERF(x) - erf((double)x));
        if (e > worst) worst = e, at = x;
    }
    /* every float near the switch point */
    for (float x = 0.9f; x < 0.95f; x = nextafterf(x, 1.0f)) {
        double e = fmax(fabs(ERF(x) - erf((double)x)), fabs(ERF(-x) - erf(-(double)x)));
        if (e > worst) worst = e, at = x;
    }
    /* tiny arguments: within one ulp of the result */
    for (float x = 1e-30f; x < 1e-3f; x *= 1.001f) {
        double ref = erf((double)x);
        CHECK(fabs(ERF(x) - ref) <= ulp_of(ref), "mg_erf_v(%g) = %.9g, want %.9g (%s)", x, ERF(x), ref, vname[v]);
    }
    printf("mg_erf_v (%s): max error %.3g absolute (at %g) over [-6, 6]\n", vname[v], worst, at);
    CHECK(worst <= 1e-7, "mg_erf_v max error %.3g > 1e-7 (%s)", worst, vname[v]);
    CHECK(ERF(0.0f) == 0.0f && ERF(INFINITY) == 1.0f && ERF(-INFINITY) == -1.0f, "mg_erf_v of 0 or +-inf");
    CHECK(isnan(ERF(NAN)), "mg_erf_v(NaN) is not NaN");
#undef ERF
}

/* gelu and gelu_grad within what erf's 1e-7 allows (x/2 of it, 1/2 of it)
 * plus four ulp of the result (the roundings of the rest of the formula); the
 * libm (erff, expf) formulas' error printed beside */
static void test_gelu(int v) {
    double wf = 0, wg = 0, lf = 0, lg = 0;
    for (float x = -12.0f; x <= 12.0f; x += 0.00013f) {
        double xd = x, cdf = 0.5 * (1 + erf(xd / sqrt(2.0)));
        double f = xd * cdf, g = cdf + xd * exp(-xd * xd / 2) / sqrt(2 * M_PI);
        float lcdf = 0.5f * (1.0f + erff(x * 0.70710678118654752440f));
        float lgel = 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f));
        float lgr = lcdf + x * 0.39894228040143267794f * expf(-0.5f * x * x);
        double bf = 0.5 * fabs(xd) * 1e-7 + 4 * ulp_of(f), bg = 0.5e-7 + 4 * ulp_of(g);
        wf = fmax(wf, fabs(eval1(v, F_GELU, x) - f) / bf), wg = fmax(wg, fabs(eval1(v, F_GELU_GRAD, x) - g) / bg);
        lf = fmax(lf, fabs(lgel - f) / bf), lg = fmax(lg, fabs(lgr - g) / bg);
    }
    printf("gelu (%s): max error %.3f of the bound, gelu_grad %.3f (libm erff/expf: %.3f, %.3f)\n", vname[v], wf,
           wg, lf, lg);
    CHECK(wf <= 1 && wg <= 1, "gelu %.3f or gelu_grad %.3f of the bound (%s)", wf, wg, vname[v]);
    CHECK(isnan(eval1(v, F_GELU, NAN)) && isnan(eval1(v, F_GELU_GRAD, NAN)), "gelu of NaN is not NaN");
}

/* the mask before the key was hoisted (issue 11's formula, written out) */
static uint64_t old_hash(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void test_dropout_mask(void) {
    const uint64_t seeds[] = {0, 42, 470998514657ull, ~0ull};
    const int64_t steps[] = {0, 1, 7, 123456789};
    int bad = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++) {
            uint64_t key = mg_dropout_key(seeds[a], steps[b]);
            for (uint64_t i = 0; i < 20000; i++) {
                uint64_t idx = i * 7919 + (uint64_t)b * 0x100000000ull;
                float old = (float)(old_hash(old_hash(old_hash(seeds[a]) ^ (uint64_t)steps[b]) ^ idx) >> 40) *
                            (1.0f / 16777216.0f);
                float s_old = old >= 0.3f ? 1.0f / (1.0f - 0.3f) : 0.0f;
                bad += mg_dropout_uniform_key(key, idx) != old || mg_dropout_scale_key(key, idx, 0.3f) != s_old ||
                       mg_dropout_scale(seeds[a], steps[b], idx, 0.3f) != s_old;
            }
        }
    CHECK(bad == 0, "dropout: %d of 320000 masks differ from the three-hash formula", bad);
    /* issue 14: the integer threshold keeps what u >= rate keeps, at every rate */
    const float rates[] = {0.0f, -0.5f, 1e-30f, 1e-9f, 5.9604645e-08f, 6e-8f, 0.1f, 0.3f, 0.5f, 0.9999999f,
                           1.0f, 1.5f, INFINITY, -INFINITY, NAN};
    int nr = (int)(sizeof rates / sizeof *rates);
    bad = 0;
    uint64_t key = mg_dropout_key(42, 3);
    for (int r = 0; r < nr; r++)
        for (uint64_t i = 0; i < 20000; i++) {
            float u = (float)(old_hash(key ^ i) >> 40) * (1.0f / 16777216.0f);
            bad += (mg_dropout_bits(key, i) >= mg_dropout_threshold(rates[r])) != (u >= rates[r]);
        }
    /* the boundary itself: v / 2^24 == rate keeps, one below does not */
    for (uint32_t v = 1; v < 16777216u; v = v * 3 + 1) {
        float rate = (float)v * (1.0f / 16777216.0f);
        bad += mg_dropout_threshold(rate) != v || mg_dropout_threshold(nextafterf(rate, 0.0f)) != v;
    }
    CHECK(bad == 0, "dropout: %d integer keep decisions differ from u >= rate", bad);
}

/* issue 14: mg_expf_neg (erf's exponential) gives mg_expf's bits over [-87, 0]
 * (every 61st float of it) and NaN for NaN */
static void test_expf_neg(int v) {
    int bad = 0;
    for (uint32_t b = 0x80000000u; b <= 0xc2ae0000u; b += 61) { /* -0 .. -87 */
        float x = mg_bits_float((int32_t)b), e = eval1(v, F_EXP_NEG, x), want = eval1(v, F_EXP, x);
        bad += mg_float_bits(e) != mg_float_bits(want);
    }
    CHECK(bad == 0 && isnan(eval1(v, F_EXP_NEG, NAN)), "mg_expf_neg: %d values differ from mg_expf's (%s)", bad,
          vname[v]);
    /* mg_exp_le0 (softmax's, gelu_grad's): the same down to -87, 0 below, NaN for NaN */
    bad = 0;
    for (uint32_t b = 0x80000000u; b <= 0xff800000u; b += 61) { /* -0 .. -inf */
        float x = mg_bits_float((int32_t)b), e = mg_exp_le0(x);
        bad += x >= -87.0f ? mg_float_bits(e) != mg_float_bits(mg_expf(x)) : e != 0.0f;
    }
    CHECK(bad == 0 && isnan(mg_exp_le0(NAN)) && mg_exp_le0(-INFINITY) == 0.0f, "mg_exp_le0: %d values wrong", bad);
}

/* issue 14 (char_gpt speed): gelu.c's 16- and 8-lane loops give the bits of the scalar
 * mg_gelu and mg_gelu_grad compiled as the clone the machine takes (x86-64-v3:
 * the avx2+fma variant, else plain), at a dense sweep of [-8, 8], every float
 * within 300 ulp of each interval boundary and of the 6.2 cut (both signs),
 * and special values; arrays of odd lengths, so the scalar tail runs too */
static void test_gelu_lanes(void) {
    enum { N = 200000 };
    static float x[N], dy[N], g[N], d[N];
    int n = 0;
    for (float a = -8.0f; a <= 8.0f && n < 160001; a += 0.0001f) x[n++] = a;
    for (int i = 0; i <= 8; i++) {
        float edge = i == 8 ? 6.2f : (float)i * MG_GELU_W;
        for (int s = -1; s <= 1; s += 2)
            for (int k = -300; k <= 300 && n < N - 16; k++)
                x[n++] = s * mg_bits_float(mg_float_bits(edge) + k * (edge > 0 || k > 0));
    }
    const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f, 1e30f, -1e30f, 6.1999f, 12.0f};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++) x[n++] = special[i];
    for (int i = 0; i < n; i++) dy[i] = 1.0f + (float)(i % 7) * 0.25f;
    int v = 0;
    const char *lanes = "8";
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
    v = __builtin_cpu_supports("x86-64-v3") ? 1 : 0;
    lanes = __builtin_cpu_supports("x86-64-v4") ? "16 and 8" : lanes;
#endif
    cpu_gelu(g, x, n), cpu_gelu_grad(d, x, dy, n);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        float want_g = eval1(v, F_GELU, x[i]), want_d = eval1(v, F_GELU_GRAD, x[i]) * dy[i];
        bad += mg_float_bits(g[i]) != mg_float_bits(want_g) && !(isnan(g[i]) && isnan(want_g));
        bad += mg_float_bits(d[i]) != mg_float_bits(want_d) && !(isnan(d[i]) && isnan(want_d));
    }
    printf("gelu.c (%s lanes) against mg_gelu, mg_gelu_grad (%s): %d values, %d differ\n", lanes, vname[v], n, bad);
    CHECK(bad == 0, "cpu_gelu / cpu_gelu_grad: %d of %d values differ from the scalar functions' bits", bad, 2 * n);
    CHECK(isnan(g[n - 7]) && isnan(d[n - 7]), "cpu_gelu or cpu_gelu_grad of NaN is not NaN");
}

int main(void) {
    for (int v = 0; v < variants(); v++) test_expf(v), test_erf(v), test_gelu(v), test_expf_neg(v);
    test_gelu_lanes();
    test_dropout_mask();
    if (failed) fprintf(stderr, "%d failure(s)\n", failed);
    else printf("vecmath: all passed\n");
    return failed ? 1 : 0;
}
