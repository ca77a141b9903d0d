/* onehot.c - one_hot on the CPU (issue 13): i32 ids -> f32 rows of zeros with a 1 at the id. */
#include <string.h>

#include "kernels_impl.h"

/* (ids i32[n]) -> out [n, depth]: out[i, ids[i]] = 1, else 0; an id outside
 * [0, depth) leaves its row zero (TF's one_hot, not an error) */
int cpu_k_one_hot(const rt_kernel_args *k, char *err, size_t cap) {
    (void)err, (void)cap;
    const int32_t *ids = (const int32_t *)k->in[0]; /* [n] flattened */
    int64_t n = IN_NUMEL(k, 0), depth = k->node->iattr[0];
    float *out = k->out; /* [n, depth] */
    memset(out, 0, (size_t)(n * depth) * sizeof *out);
    for (int64_t i = 0; i < n; i++)
        if (ids[i] >= 0 && ids[i] < depth) out[i * depth + ids[i]] = 1.0f;
    return 0;
}
