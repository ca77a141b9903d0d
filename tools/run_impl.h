/* run_impl.h - what mgc run, eval, predict (run.c) and generate (generate.c) share: options and a plan bound to this process's devices, through libmgc's jobs and sessions (include/mgc.h). */
#ifndef MGC_RUN_IMPL_H
#define MGC_RUN_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"

typedef struct {
    int64_t epochs, steps;
    bool epochs_given;         /* else the plan's train block `epochs = N`, else 1 */
    uint64_t seed;
    const char *save, *load, *history, *data, *out;
    const char *checkpoint_dir;
    int64_t save_every, keep;
    bool save_every_epochs;
    char resumed[4096];   /* the checkpoint of checkpoint_dir a run resumes from, "" none */
    int64_t resumed_step;
    int64_t context;      /* --context T of --data text:FILE, 0 not given */
    const char *bindings[MGC_MAX_INPUTS];
    int n_bindings;
    int threads, check_replicas;
    double timeout;
    bool json, check_numerics, strict_devices, seed_given;
    bool no_cuda_graphs;     /* --no-cuda-graphs (issue 15) */
    /* tracing (docs/trace.md) */
    const char *trace;         /* --trace FILE.json, NULL: none */
    int64_t trace_from, trace_to; /* --trace-steps A:B, steps of this run (1: its first) */
    bool trace_steps_given, profile;
} run_options;

typedef struct {
    mgc_job *job;         /* this process in the job (one process outside mpirun) */
    mgc_plan *plan;       /* fitted to this machine and the job's workers; NULL after a local failure */
    mgc_session *s;       /* after cli_start_plan */
} bound_plan;

/* Loads the plan and fits it to this worker (devices, mpirun). Returns false when nothing runs. */
bool cli_bind_plan(const char *path, const run_options *o, bound_plan *bp);
/* Starts the session (the workers agree on ds, which may be NULL) and sets the variables: initializers or --load. */
bool cli_start_plan(bound_plan *bp, const char *path, const run_options *o, const mgc_dataset *ds);
/* Frees the session and plan and ends the job; returns rc. */
int cli_unbind_plan(bound_plan *bp, int rc);
/* A failure before the first step, printed and told to the other workers. */
void cli_fail_local(bound_plan *bp, const char *msg);
/* Whether this process's failure was said already (it then stops without a second message). */
bool cli_failed(const bound_plan *bp);

#endif
