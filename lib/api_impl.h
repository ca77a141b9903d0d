/* api_impl.h - what the files of libmgc share: the handles behind
 * include/mgc.h and the error helpers. Seen only by lib/. */
#ifndef MGC_API_IMPL_H
#define MGC_API_IMPL_H

#include <stdbool.h>

#include "../include/mgc.h"
#include "../ir/ir.h"
#include "../runtime/session.h"

struct mgc_plan {
    ir_module *m;          /* owned */
    char *path;            /* the .mgx it was read from (owned), NULL when compiled */
    bool forward_only;     /* mgc_compile_options.forward_only: to describe, not to run */
};

struct mgc_session {
    const mgc_plan *plan;  /* borrowed: outlives the session */
    rt_session *s;         /* owned */
    uint64_t seed;         /* shuffling seed: the option's, or a loaded checkpoint's */
    int check_replicas;
    bool check_numerics;
    int n_vars;
    int *vars;             /* replica-0 variable nodes, sorted by name */
};

/* Sets *err (when not NULL) to st and the formatted message; returns st. */
mgc_status lib_fail(mgc_error *err, mgc_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Sets *err to MGC_OK with an empty message; returns MGC_OK. */
mgc_status lib_ok(mgc_error *err);
/* The variable node of replica 0 named name, or -1. */
int lib_find_variable(const mgc_session *s, const char *name);

#endif
