/* init.c - initial values of variables, as Keras draws them, from a seed. */
#include <math.h>
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

/* Normal by Box-Muller, truncated at two standard deviations (Keras' he_normal). */
static double truncated_normal(uint64_t *s) {
    for (;;) {
        double u = uniform01(s), v = uniform01(s);
        double z = sqrt(-2.0 * log(u > 0 ? u : 0x1.0p-53)) * cos(2 * M_PI * v);
        if (fabs(z) <= 2.0) return z;
    }
}

void rt_init_fill(float *dst, int64_t n, ir_init init, int64_t fan_in, int64_t fan_out, uint64_t seed,
                  const char *name) {
    uint64_t s = seed ^ 0xcbf29ce484222325ull;
    for (const char *c = name ? name : ""; *c; c++) s = (s ^ (unsigned char)*c) * 0x100000001b3ull;
    double limit = sqrt(6.0 / (double)(fan_in + fan_out > 0 ? fan_in + fan_out : 1));
    /* Keras' he_normal: truncated normal scaled so its stddev is sqrt(2 / fan_in) */
    double stddev = sqrt(2.0 / (double)(fan_in > 0 ? fan_in : 1)) / .87962566103423978;
    for (int64_t i = 0; i < n; i++) {
        switch (init) {
        case INIT_ZEROS: dst[i] = 0; break;
        case INIT_ONES: dst[i] = 1; break;
        case INIT_GLOROT_UNIFORM: dst[i] = (float)((2 * uniform01(&s) - 1) * limit); break;
        case INIT_HE_NORMAL: dst[i] = (float)(truncated_normal(&s) * stddev); break;
        case INIT_COUNT: dst[i] = 0; break;
        }
    }
}
