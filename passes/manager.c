/* manager.c - the pass pipeline, run in order, with IR dumps between passes. */
#include <string.h>

#include "passes.h"

void pass_options_default(pass_options *o) {
    memset(o, 0, sizeof *o);
    o->cross_device = XDEV_RING;
    o->bucket_bytes = 4 << 20;
    o->n_devices = 1;
}

const pass_info pass_pipeline[] = {
    {"shapes", pass_shapes},       {"autodiff", pass_autodiff}, {"optimizer", pass_optimizer},
    {"replicate", pass_replicate}, {"memplan", pass_memplan},   {"schedule", pass_schedule},
};
const int pass_pipeline_count = sizeof pass_pipeline / sizeof pass_pipeline[0];

bool pass_run_all(ir_module *m, ir_diag *d, const pass_options *o, const char *dump_after, FILE *dump_out) {
    if (dump_after && !strcmp(dump_after, "elaborate")) ir_print(m, dump_out);
    for (int k = 0; k < pass_pipeline_count; k++) {
        if (!pass_pipeline[k].run(m, d, o) || ir_diag_errors(d)) return false;
        if (dump_after && !strcmp(dump_after, pass_pipeline[k].name)) ir_print(m, dump_out);
    }
    return true;
}
