/* fuzz_mgx.c - libFuzzer target: the .mgx plan reader over arbitrary bytes,
 * then the checks `mgc run` makes before running a plan. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../ir/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512];
    ir_module *m = mgx_read_mem(data, size, "fuzz.mgx", err, sizeof err);
    if (m) {
        if (mgx_check_runnable(m, "fuzz.mgx", err, sizeof err) && (strncmp(err, "fuzz.mgx: ", 10) || strchr(err, '\n')))
            __builtin_trap();
        ir_module_free(m);
    } else if (strncmp(err, "fuzz.mgx: ", 10) || strchr(err, '\n')) __builtin_trap(); /* one line naming the file */
    return 0;
}
