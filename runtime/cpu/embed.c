/* embed.c - gather (embedding lookup), its gradient scatter_add and the
 * all_gather of the sparse gradient exchange on the CPU (issue 13). */
#include <string.h>

#include "../bad_id.h"
#include "kernels_impl.h"

/* ids i32[n] (input `which` of the node) must lie in [0, rows) (runtime/bad_id.h) */
static int check_ids(const rt_kernel_args *k, char *err, size_t cap, int which, const int32_t *ids, int64_t n,
                     int64_t rows) {
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= rows) return rt_bad_id_message(k->m, k->node, which, ids[i], i, rows, err, cap);
    return 0;
}

/* (table [V, D], ids i32[...]) -> out[i, :] = table[ids[i], :] */
int cpu_k_gather(const rt_kernel_args *k, char *err, size_t cap) {
    const ir_shape *t = IN_SHAPE(k, 0);
    const int32_t *ids = (const int32_t *)k->in[1]; /* [n] flattened */
    int64_t n = IN_NUMEL(k, 1), V = t->dim[0], D = t->dim[1];
    if (check_ids(k, err, cap, 1, ids, n, V)) return -1;
    float *out = k->out; /* [n, D] */
    for (int64_t i = 0; i < n; i++) memcpy(out + i * D, IN_F32(k, 0) + ids[i] * D, (size_t)D * sizeof *out);
    return 0;
}

/* (ids i32[...], dy [..., D]) -> out [V, D] = 0, then out[ids[i], :] += dy[i, :] for i in order */
int cpu_k_scatter_add(const rt_kernel_args *k, char *err, size_t cap) {
    const int32_t *ids = (const int32_t *)k->in[0];
    const float *dy = IN_F32(k, 1); /* [n, D] */
    int64_t n = IN_NUMEL(k, 0), V = k->node->shape.dim[0], D = k->node->shape.dim[1];
    if (check_ids(k, err, cap, 0, ids, n, V)) return -1;
    float *out = k->out;
    memset(out, 0, (size_t)(V * D) * sizeof *out);
    for (int64_t i = 0; i < n; i++) {
        float *row = out + ids[i] * D;
        for (int64_t j = 0; j < D; j++) row[j] += dy[i * D + j];
    }
    return 0;
}

/* all_gather, before the collective: x into this replica's block of out
 * [replicas * n, ...]; the collective fills the other blocks */
int cpu_k_all_gather(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    size_t bytes = (size_t)ir_node_bytes(k->in_nodes[0]);
    char *dst = (char *)k->out + (size_t)k->replica * bytes;
    if (dst != (const char *)k->in[0]) memcpy(dst, k->in[0], bytes);
    return 0;
}
