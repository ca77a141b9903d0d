/* manager.c - the pass pipeline, run in order, with IR dumps between passes. */
#include <string.h>
#include <time.h>

#include "passes.h"

void pass_options_default(pass_options *o) {
    memset(o, 0, sizeof *o);
    o->cross_device = XDEV_RING;
    o->bucket_bytes = 4 << 20;
    o->n_devices = 1;
}

const pass_info pass_pipeline[] = {
    {"shapes", pass_shapes},       {"autodiff", pass_autodiff}, {"optimizer", pass_optimizer},
    {"cse", pass_cse},           /* issue 14: common subexpressions once */
    {"epilogue", pass_epilogue}, /* issue 14: before "fuse" */
    {"dce", pass_dce},           /* issue 14: drops what epilogue replaced */
    {"fuse", pass_fuse}, /* issue 14 */
    {"replicate", pass_replicate}, {"schedule", pass_schedule},   {"memplan", pass_memplan},
};
const int pass_pipeline_count = sizeof pass_pipeline / sizeof pass_pipeline[0];

static void report_problem(void *ctx, const char *msg) {
    ir_diag_error(ctx, (ir_loc){0}, "internal error: the compiled plan fails its check: %s", msg);
}

double pass_clock(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void pass_report_time(const pass_options *o, const char *name, double since, const ir_module *m) {
    if (o->time_out)
        fprintf(o->time_out, "  %-10s %9.2f ms %9d nodes\n", name, 1e3 * (pass_clock() - since), m ? m->g.n : 0);
}

bool pass_run_all(ir_module *m, ir_diag *d, const pass_options *o, const char *dump_after, FILE *dump_out) {
    if (dump_after && !strcmp(dump_after, "elaborate")) ir_print(m, dump_out);
    for (int k = 0; k < pass_pipeline_count; k++) {
        double start = pass_clock();
        if (!pass_pipeline[k].run(m, d, o) || ir_diag_errors(d)) return false;
        pass_report_time(o, pass_pipeline[k].name, start, m);
        if (dump_after && !strcmp(dump_after, pass_pipeline[k].name)) ir_print(m, dump_out);
    }
    /* every plan is checked as run/eval/predict check it when they load it: structure, then races */
    double start = pass_clock();
    bool ok = ir_verify(m, report_problem, d) == 0;
    pass_report_time(o, "check", start, m);
    return ok;
}
