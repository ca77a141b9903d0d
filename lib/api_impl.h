/* api_impl.h - what the files of libmgc share: the handles behind
 * include/mgc.h and the error helpers. Seen only by lib/. */
#ifndef MGC_API_IMPL_H
#define MGC_API_IMPL_H

#include <stdbool.h>

#include "../include/mgc.h"
#include "../ir/ir.h"
#include "../runtime/agree.h"
#include "../runtime/data.h"
#include "../runtime/session.h"
#include "../runtime/trace.h"
#include "../runtime/train.h"

struct mgc_plan {
    ir_module *m;          /* owned */
    char *path;            /* the .mgx it was read from (owned), NULL when compiled */
    bool forward_only;     /* mgc_compile_options.forward_only: to describe, not to run */
};

struct mgc_job {
    rt_interprocess *ip;   /* the job's processes under mpirun, NULL: one process */
    double timeout;        /* seconds an agreement waits */
    rt_worker_facts facts; /* this worker's, for the next agreement */
    bool stopped;          /* the workers stopped together at an agreement: no abort needed */
    int first, local;      /* this process's replicas after mgc_job_plan (local 0: all) */
};

struct mgc_dataset {
    rt_dataset *ds;        /* owned */
};

struct mgc_session {
    const mgc_plan *plan;  /* borrowed: outlives the session */
    rt_session *s;         /* owned */
    uint64_t seed;         /* shuffling seed: the option's, or a loaded checkpoint's */
    int check_replicas;
    bool check_numerics;
    int n_vars;
    int *vars;             /* replica-0 variable nodes, sorted by name */
    const mgc_job *job;    /* borrowed, or NULL */
    rt_trace *trace;       /* mgc_session_trace's, owned, or NULL */
};

/* Sets *err (when not NULL) to st and the formatted message; returns st. */
mgc_status lib_fail(mgc_error *err, mgc_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Sets *err to MGC_OK with an empty message; returns MGC_OK. */
mgc_status lib_ok(mgc_error *err);
/* The variable node of replica 0 named name, or -1. */
int lib_find_variable(const mgc_session *s, const char *name);
/* The stdlib libmgc compiles with: $MGC_STDLIB, beside the library, installed, else the source tree's. */
const char *lib_stdlib_dir(char *buf, size_t cap);
/* rt_train over datasets with o's options (mgc_fit, mgc_fit_dataset). */
mgc_status lib_fit(mgc_session *s, const rt_dataset *train, const rt_dataset *valid, const mgc_fit_options *o,
                   mgc_error *err);

#endif
