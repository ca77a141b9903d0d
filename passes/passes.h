/* passes.h - the compiler passes, from a one-replica forward graph to a plan.
 *
 * Every pass takes the module and reports user-facing problems through a
 * diagnostics sink (positions come from node->loc). A pass returns false when
 * it reported an error; the pass manager stops there.
 */
#ifndef MGC_PASSES_H
#define MGC_PASSES_H

#include <stdio.h>

#include "../ir/ir.h"

#include "../ir/diag.h"

/* Options that passes read (filled from the command line). */
typedef struct {
    int64_t global_batch;         /* --global-batch B, 0 = from the model */
    ir_cross_device cross_device; /* --cross-device-ops */
    int64_t bucket_bytes;         /* --bucket-bytes, default 4 MiB */
    ir_sparse_grads sparse_grads; /* --sparse-grads, default auto (replicate.c) */
    int n_devices;                /* resolved device list (the CLI resolves --devices) */
    const ir_device *devices;
    bool quiet;                   /* no announcements */
    int n_sources;                /* elaborate reads these texts (by path) instead */
    const ir_source *sources;     /*   of the files: re-planning a loaded plan */
    FILE *time_out;               /* --time-passes: each pass's wall time and node count here */
    bool memplan_rescan;          /* tests: memplan places each root by rescanning every placed root
                                   * until none moves it (quadratic), the reference its first fit must match */
    bool no_fuse;                 /* --no-fuse: no fusion pass (epilogue, fuse) changes the graph (issue 14) */
} pass_options;

void pass_options_default(pass_options *o);

/* elaborate: parse `path` and the stdlib modules it `use`s (from stdlib_dir),
 * inline functions and build the one-replica forward graph: INPUT nodes at
 * the per-replica batch (global batch / o->n_devices, an error at the train
 * block naming both numbers when not divisible), PARAM nodes with
 * hierarchical names, m->loss / m->metrics as per-example f32[batch] vectors,
 * m->outputs, the train block in m->opt and m->batch_per_replica /
 * m->global_batch. Returns NULL after reporting errors. */
ir_module *pass_elaborate(const char *path, const char *stdlib_dir, ir_diag *d, const pass_options *o);

/* shapes: infer dtype and shape of every node, errors at the node's position. */
bool pass_shapes(ir_module *m, ir_diag *d, const pass_options *o);
/* autodiff: gradient of the mean loss with respect to every param; m->grads. */
bool pass_autodiff(ir_module *m, ir_diag *d, const pass_options *o);
/* optimizer: slot variables and one update node per param. */
bool pass_optimizer(ir_module *m, ir_diag *d, const pass_options *o);
/* cse (issue 14, passes/cse.c): a node computing what an earlier one does
 * (same op, attributes and inputs) is read from that one instead, which runs
 * in the programs of both, and the later node goes. Nothing with o->no_fuse. */
bool pass_cse(ir_module *m, ir_diag *d, const pass_options *o);
/* epilogue (issue 14, fuse_epilogue.c): conv2d/matmul + bias [+ residual] [+ relu,
 * tanh, sigmoid] into one conv2d_epilogue/matmul_epilogue node, relu_grad after
 * max_pool2d_grad into max_pool2d_relu_grad; nothing with o->no_fuse. */
bool pass_epilogue(ir_module *m, ir_diag *d, const pass_options *o);
/* Dead-node elimination (passes/dce.c, issue 14): removes the nodes nothing
 * live reads (what the epilogue pass replaced); nothing with o->no_fuse. */
bool pass_dce(ir_module *m, ir_diag *d, const pass_options *o);

/* fuse (issue 14): chains of f32 elementwise ops become one `fused` node
 * each (passes/fuse.c); records o->no_fuse in m->no_fuse and does nothing
 * else when it is set. */
bool pass_fuse(ir_module *m, ir_diag *d, const pass_options *o);
/* replicate: clone per device, shard / all_reduce (bucketed) / broadcast. */
bool pass_replicate(ir_module *m, ir_diag *d, const pass_options *o);
/* schedule: per (program, device, stream) lists with events across streams. */
bool pass_schedule(ir_module *m, ir_diag *d, const pass_options *o);
/* memplan: offsets in one arena per device; tensors share bytes only when the
 * schedule's happens-before order separates every access of one from every
 * access of the other. */
bool pass_memplan(ir_module *m, ir_diag *d, const pass_options *o);

typedef bool (*pass_fn)(ir_module *m, ir_diag *d, const pass_options *o);
typedef struct {
    const char *name;
    pass_fn run;
} pass_info;

/* The pipeline, in order: "shapes", "autodiff", "optimizer", "epilogue", "fuse", "replicate",
 * "schedule", "memplan". */
extern const pass_info pass_pipeline[];
extern const int pass_pipeline_count;

/* Runs the pipeline; prints the IR to dump_out after the pass named dump_after
 * (NULL for none), and each pass's time to o->time_out (when set). Returns false at the first pass that reports an error, or
 * when the finished plan fails ir_verify (its race check included). */
bool pass_run_all(ir_module *m, ir_diag *d, const pass_options *o,
                  const char *dump_after, FILE *dump_out);

/* Seconds on a monotonic clock, and one --time-passes line: "  NAME  ms  nodes". */
double pass_clock(void);
void pass_report_time(const pass_options *o, const char *name, double since, const ir_module *m);

#endif
