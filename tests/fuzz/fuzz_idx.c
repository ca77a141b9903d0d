/* fuzz_idx.c - libFuzzer target: the IDX reader (raw and gzip) over arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>

#include "../../runtime/data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rt_tensor t;
    char err[256];
    if (rt_load_idx_mem(data, size, "fuzz.idx", &t, err, sizeof err) == 0) rt_tensor_free(&t);
    return 0;
}
