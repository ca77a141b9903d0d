/* fuzz_npy.c - libFuzzer target: the NPY reader over arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>

#include "../../runtime/data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rt_tensor t;
    char err[256];
    if (rt_load_npy_mem(data, size, "fuzz.npy", &t, err, sizeof err) == 0) rt_tensor_free(&t);
    return 0;
}
