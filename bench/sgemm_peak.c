/* sgemm_peak.c - the machine's single-precision GEMM rate on the calling
 * thread: OpenBLAS's sgemm on square N x N matrices (N = 1024 by default, the
 * size where it runs at its peak here), the best of 5 runs of several calls.
 * bench/train.sh divides the training step's flop rate by it.
 *   sgemm_peak [N]   prints GFLOP/s */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1024;
    if (n < 16) return fprintf(stderr, "usage: sgemm_peak [N >= 16]\n"), 1;
    float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n), *c = malloc(sizeof(float) * n * n);
    if (!a || !b || !c) return fprintf(stderr, "sgemm_peak: out of memory\n"), 1;
    for (long i = 0; i < (long)n * n; i++) a[i] = (float)(i % 7) * 0.1f, b[i] = (float)(i % 5) * 0.2f, c[i] = 0;
    int calls = (int)(2e9 / (2.0 * n * n * n)) + 1; /* about 2 GFLOP a run */
    double best = 0;
    for (int run = 0; run < 5; run++) {
        double t = now_s();
        for (int k = 0; k < calls; k++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double rate = 2.0 * n * n * n * calls / (now_s() - t) * 1e-9;
        if (rate > best) best = rate;
    }
    printf("%.1f\n", best);
    free(a), free(b), free(c);
    return 0;
}
