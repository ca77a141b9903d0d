/* cuda_embed.cu - gather (embedding lookup) and its gradient scatter_add (issue 13).
 * scatter_add is deterministic without atomics: one thread per table element
 * scans every id in order, so the sum's order is the CPU's. */
#include <math.h>

#include "cuda_device.cuh"

/* out[i, j] = table[ids[i], j]; an id outside [0, V): a NaN row, and the
 * first such id on the device recorded in bad = (node + 1, id, index) */
__global__ static void gather_kernel(const float *table, const int32_t *ids, float *out, int64_t n, int64_t V,
                                     int64_t D, int32_t *bad, int32_t node) {
    FOR_EACH(e, n * D) {
        int64_t i = e / D, j = e % D;
        int32_t id = ids[i];
        bool ok = id >= 0 && id < V;
        out[e] = ok ? table[id * D + j] : NAN;
        if (!ok && j == 0 && atomicCAS(bad, 0, node + 1) == 0) bad[1] = id, bad[2] = (int32_t)i;
    }
}

/* out[v, j] = sum over i in order with ids[i] == v of dy[i, j] */
__global__ static void scatter_add_kernel(const int32_t *ids, const float *dy, float *out, int64_t n, int64_t V,
                                          int64_t D) {
    FOR_EACH(e, V * D) {
        int64_t v = e / D, j = e % D;
        float s = 0.0f;
        for (int64_t i = 0; i < n; i++)
            if (ids[i] == v) s += dy[i * D + j];
        out[e] = s;
    }
}

extern "C" cudaError_t cuda_k_gather(const float *table, const int32_t *ids, float *out, int64_t n, int64_t V,
                                     int64_t D, int32_t *bad, int32_t node, cudaStream_t s) {
    MGC_LAUNCH(blocks_for(n * D), THREADS, 0, s, gather_kernel)(table, ids, out, n, V, D, bad, node);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_k_scatter_add(const int32_t *ids, const float *dy, float *out, int64_t n, int64_t V,
                                          int64_t D, cudaStream_t s) {
    MGC_LAUNCH(blocks_for(V * D), THREADS, 0, s, scatter_add_kernel)(ids, dy, out, n, V, D);
    return cudaGetLastError();
}
