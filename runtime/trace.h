/* trace.h - spans of training steps timed by the backend (backend.h:
 * trace_arm/trace_take), kept as a Chrome/Perfetto trace (`mgc run --trace`)
 * and summed into a profile of the ops (`mgc run --profile`). */
#ifndef MGC_TRACE_H
#define MGC_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "backend.h"

typedef struct rt_trace rt_trace;

/* A trace of a plan's replicas [first, first + local): the spans of train
 * steps keep_from..keep_to (global step counter, 1-based; keep_to < keep_from:
 * none) are kept for rt_trace_write; steps >= profile_from (0: none) are
 * summed for rt_trace_profile. */
rt_trace *rt_trace_new(const ir_module *m, int first, int local, int64_t keep_from, int64_t keep_to,
                       int64_t profile_from);
void rt_trace_free(rt_trace *t);
/* Whether train step `step` is to be timed. */
bool rt_trace_wants(const rt_trace *t, int64_t step);
/* Adds the spans of one step (reordered in place); the pieces of one node on
 * one stream (an all_reduce's pack and its collective) become one event. */
void rt_trace_add(rt_trace *t, int64_t step, rt_trace_span *spans, int n);
/* Steps kept so far. */
int64_t rt_trace_kept_steps(const rt_trace *t);
/* The implementation the backend chose for a node (the CPU kernel tuner's
 * candidate: "onednn", "thin", "winograd", ...; NULL: none), named once, as
 * the session takes the node's first spans: the events' "kernel" arg and the
 * profile's kernel column. */
enum { KERNEL_NAME_CAP = 24 };
void rt_trace_name_kernel(rt_trace *t, int node, const char *name);
bool rt_trace_kernel_named(const rt_trace *t, int node);

/* Writes the kept steps as Chrome trace event JSON ({"traceEvents": [...]}),
 * atomically: "X" events with pid = global replica, tid = stream (0 compute,
 * 1 comm), ts/dur in microseconds of CLOCK_MONOTONIC, and args (node, step,
 * op, bytes, shape, bucket for an all_reduce, kernel when one was named); "M" events naming each pid
 * ("cpu:1", with " rank N" under mpirun) and tid. Returns 0 or -1 with err. */
int rt_trace_write(const rt_trace *t, const char *path, int rank, int ranks, char *err, size_t cap);

/* Prints the profile of the summed steps: the mean step wall time, comm time
 * and the part of it overlapped by compute on the same device, then the top
 * `top` (op, stream) rows by total time over every local device, each with
 * the kernels chosen for its nodes. */
void rt_trace_profile(const rt_trace *t, int top, FILE *f);

#endif
