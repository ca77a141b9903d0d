/* replan.c - a loaded plan compiled again for other devices (mgc run, eval,
 * predict and generate: GPUs that are not here, the workers of an mpirun
 * job). Part of the run path that still calls the stages directly (see
 * docs/api.md, "The CLI onto the API"). */
#include <stdio.h>

#include "../ir/diag.h"
#include "../passes/passes.h"
#include "cli.h"
#include "run_impl.h"

ir_module *cli_replan(const ir_module *plan, const ir_device *devices, int n_devices) {
    pass_options o;
    pass_options_default(&o);
    o.devices = devices, o.n_devices = n_devices;
    o.global_batch = plan->global_batch;
    o.cross_device = plan->cross_device;
    o.bucket_bytes = plan->bucket_bytes;
    o.sparse_grads = plan->sparse_grads;
    o.no_fuse = plan->no_fuse;
    o.sources = plan->sources, o.n_sources = plan->n_sources;
    ir_diag *d = ir_diag_new(stderr);
    ir_module *m = pass_elaborate(plan->source_file, cli_stdlib_dir(), d, &o);
    if (m && !pass_run_all(m, d, &o, NULL, NULL)) ir_module_free(m), m = NULL;
    if (!m && !ir_diag_errors(d)) fprintf(stderr, "mgc: %s: compilation failed\n", plan->source_file);
    if (ir_diag_errors(d)) ir_module_free(m), m = NULL;
    ir_diag_free(d);
    return m;
}
