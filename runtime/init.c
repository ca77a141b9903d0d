/* init.c - initial values of variables, as Keras draws them, from a seed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

/* splitmix64: small, fast, and the same on every platform. */
static uint64_t next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *s) { return (double)(next(s) >> 11) * 0x1.0p-53; }

/* Standard normal by Box-Muller. */
static double normal(uint64_t *s) {
    double u = uniform01(s), v = uniform01(s);
    return sqrt(-2.0 * log(u > 0 ? u : 0x1.0p-53)) * cos(2 * M_PI * v);
}

/* Standard normal truncated at two standard deviations (redrawn beyond), as Keras. */
static double truncated_normal(uint64_t *s) {
    for (;;) {
        double z = normal(s);
        if (fabs(z) <= 2.0) return z;
    }
}

/* Keras' variance scaling divides by the stddev of the standard normal
 * truncated at +-2, so the truncated draws have the variance asked for. */
static const double TRUNCATED_STDDEV = .87962566103423978;

/* Keras' Orthogonal (gain 1): a normal [max(r,c), min(r,c)] matrix made
 * orthonormal by QR with R's diagonal positive (Gram-Schmidt, twice for
 * accuracy), transposed when rows < cols; rows = fan_in, cols = n / fan_in
 * (the last axis). */
static void orthogonal(float *dst, int64_t n, int64_t fan_in, uint64_t *s) {
    int64_t rows = fan_in > 0 && n % fan_in == 0 ? fan_in : n, cols = n / rows;
    int64_t M = rows > cols ? rows : cols, N = rows > cols ? cols : rows;
    double *q = malloc((size_t)(M * N) * sizeof *q); /* column j at q + j*M */
    if (!q) {
        memset(dst, 0, (size_t)n * sizeof *dst);
        return;
    }
    for (int64_t i = 0; i < M; i++) /* row-major draws of a [M, N] */
        for (int64_t j = 0; j < N; j++) q[j * M + i] = normal(s);
    for (int64_t j = 0; j < N; j++) {
        double *v = q + j * M;
        for (int pass = 0; pass < 2; pass++)
            for (int64_t p = 0; p < j; p++) {
                const double *u = q + p * M;
                double dot = 0;
                for (int64_t i = 0; i < M; i++) dot += u[i] * v[i];
                for (int64_t i = 0; i < M; i++) v[i] -= dot * u[i];
            }
        double norm = 0;
        for (int64_t i = 0; i < M; i++) norm += v[i] * v[i];
        norm = sqrt(norm);
        for (int64_t i = 0; i < M; i++) v[i] = norm > 0 ? v[i] / norm : 0;
    }
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) dst[i * cols + j] = (float)(rows >= cols ? q[j * M + i] : q[i * M + j]);
    free(q);
}

void rt_init_fill(float *dst, int64_t n, ir_init init, int64_t fan_in, int64_t fan_out, const double *args,
                  uint64_t seed, const char *name) {
    uint64_t s = seed ^ 0xcbf29ce484222325ull;
    for (const char *c = name ? name : ""; *c; c++) s = (s ^ (unsigned char)*c) * 0x100000001b3ull;
    double in = (double)(fan_in > 0 ? fan_in : 1), avg = (double)(fan_in + fan_out > 0 ? fan_in + fan_out : 1) / 2;
    if (init == INIT_ORTHOGONAL) return orthogonal(dst, n, fan_in, &s);
    for (int64_t i = 0; i < n; i++) {
        switch (init) {
        case INIT_ZEROS: dst[i] = 0; break;
        case INIT_ONES: dst[i] = 1; break;
        /* uniform(-limit, limit), limit = sqrt(3 * scale / fan) */
        case INIT_GLOROT_UNIFORM: dst[i] = (float)((2 * uniform01(&s) - 1) * sqrt(6.0 / (2 * avg))); break;
        case INIT_HE_UNIFORM: dst[i] = (float)((2 * uniform01(&s) - 1) * sqrt(6.0 / in)); break;
        case INIT_LECUN_UNIFORM: dst[i] = (float)((2 * uniform01(&s) - 1) * sqrt(3.0 / in)); break;
        /* truncated normal of stddev sqrt(scale / fan) */
        case INIT_HE_NORMAL: dst[i] = (float)(truncated_normal(&s) * (sqrt(2.0 / in) / TRUNCATED_STDDEV)); break;
        case INIT_GLOROT_NORMAL: dst[i] = (float)(truncated_normal(&s) * (sqrt(1.0 / avg) / TRUNCATED_STDDEV)); break;
        case INIT_LECUN_NORMAL: dst[i] = (float)(truncated_normal(&s) * (sqrt(1.0 / in) / TRUNCATED_STDDEV)); break;
        /* Keras' TruncatedNormal / RandomNormal (mean 0) and Constant */
        case INIT_TRUNCATED_NORMAL: dst[i] = (float)(truncated_normal(&s) * args[1]); break;
        case INIT_RANDOM_NORMAL: dst[i] = (float)(normal(&s) * args[1]); break;
        case INIT_CONSTANT: dst[i] = (float)args[0]; break;
        /* Keras LSTM: zeros but the forget gate's quarter [n/4, n/2) of gates i, f, c, o */
        case INIT_UNIT_FORGET_BIAS: dst[i] = i >= n / 4 && i < n / 2 ? 1.0f : 0.0f; break;
        case INIT_ORTHOGONAL: case INIT_COUNT: default: dst[i] = 0; break;
        }
    }
}
