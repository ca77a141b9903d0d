/* emu_util.h - what the CUDA emulation tests share: guarded device buffers,
 * deterministic data, NaN-aware comparison with a message naming the case. */
#ifndef MGC_EMU_UTIL_H
#define MGC_EMU_UTIL_H

#include <math.h>
#include <stdio.h>
#include <string.h>

extern "C" {
#include "../../ir/ir.h" /* a C library: ir_ops, ir_dtype_name */
}
#include "../../runtime/cuda/cuda_device.cuh"

extern int failures;

/* a buffer of emulated device memory (ends at a guard page) */
template <typename T> struct dbuf {
    T *p;
    int64_t n;
    explicit dbuf(int64_t count) : p((T *)mgc_emu_alloc((size_t)(count > 0 ? count : 1) * sizeof(T))), n(count) {}
    ~dbuf() { mgc_emu_free(p); }
    dbuf(const dbuf &) = delete;
    dbuf &operator=(const dbuf &) = delete;
    T &operator[](int64_t i) { return p[i]; }
    operator T *() { return p; }
};

/* uniform in [lo, hi) from a linear congruential sequence */
static inline void randomize(float *x, int64_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = lo + (hi - lo) * (float)((seed >> 8) & 0xffff) / 65536.0f;
    }
}

static inline void randomize_ids(int32_t *x, int64_t n, unsigned seed, int32_t lo, int32_t hi) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = lo + (int32_t)((seed >> 16) % (unsigned)(hi - lo));
    }
}

/* the launch returned success (and left no sticky error) */
static inline bool launched_ok(cudaError_t e, const char *what) {
    cudaError_t sticky = cudaGetLastError();
    if (e == cudaSuccess && sticky == cudaSuccess) return true;
    fprintf(stderr, "FAIL: %s: launch returned %s\n", what, cudaGetErrorString(e != cudaSuccess ? e : sticky));
    failures++;
    return false;
}

/* want vs got, element by element: both NaN (or equal) passes; NaN against a
 * number fails; else |want - got| <= tol * max(1, |want|). Prints the first
 * bad element and the count. */
template <typename T> static inline bool same(const char *what, const T *want, const T *got, int64_t n, double tol) {
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
        double w = (double)want[i], g = (double)got[i];
        bool ok = isnan(w) || isnan(g) ? isnan(w) && isnan(g) : w == g || fabs(w - g) <= tol * fmax(1.0, fabs(w));
        if (!ok && bad++ == 0) first = i;
    }
    if (!bad) return true;
    fprintf(stderr, "FAIL: %s: %lld of %lld elements differ; first at [%lld]: want %.9g, got %.9g\n", what,
            (long long)bad, (long long)n, (long long)first, (double)want[first], (double)got[first]);
    failures++;
    return false;
}

#endif
