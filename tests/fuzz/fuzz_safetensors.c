/* fuzz_safetensors.c - libFuzzer target: the safetensors loader over arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../runtime/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[256];
    rt_checkpoint *ck = rt_checkpoint_load_mem(data, size, "fuzz.safetensors", err, sizeof err);
    if (!ck) return 0;
    /* touch everything the handle hands out */
    for (int i = 0; i < rt_checkpoint_count(ck); i++) {
        const rt_ck_tensor *t = rt_checkpoint_at(ck, i);
        size_t n = (size_t)(ir_shape_numel(&t->shape) * (int64_t)ir_dtype_size(t->dtype));
        volatile uint8_t sum = 0;
        for (size_t k = 0; k < n; k++) sum += ((const uint8_t *)t->data)[k];
        if (rt_checkpoint_find(ck, t->name) != t) __builtin_trap();
    }
    rt_checkpoint_meta(ck, "format");
    rt_checkpoint_free(ck);
    return 0;
}
