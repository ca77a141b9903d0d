/* collectives.h - all-reduce, all-gather and broadcast among the local devices of one
 * process over shared memory (ring, one-device, hierarchical), with an
 * optional step across processes (rt_interprocess) and a timeout.
 *
 * Each of the n local devices calls rt_coll_run from its own thread (the CPU
 * backend's comm streams, or a test's threads). Calls of all n devices with
 * the same (kind, group) and the same occurrence count of that pair on each
 * device meet: the k-th all_reduce of bucket 3 on cpu:0 meets the k-th on
 * cpu:1. Every device ends with the same bytes. */
#ifndef MGC_COLLECTIVES_H
#define MGC_COLLECTIVES_H

#include <stddef.h>

#include "backend.h"

typedef struct rt_coll rt_coll;

/* Shared state of n_devices local participants; device d is named
 * "cpu:<replica_base + d>" in errors. replica_total divides means. ip may be
 * NULL (one process). Returns NULL when out of memory. */
rt_coll *rt_coll_new(int n_devices, int replica_base, int replica_total, const rt_interprocess *ip);
void rt_coll_free(rt_coll *c);

/* Runs device `device`'s part of collective a (in place on a->buf). Every
 * wait is bounded by timeout_s seconds; on timeout every participant that
 * arrived returns -1 with the same message in err, e.g.
 * "collective timeout after 2.0 s: all_reduce bucket 3 is missing cpu:1, cpu:3". */
int rt_coll_run(rt_coll *c, int device, const rt_coll_args *a, double timeout_s, char *err, size_t cap);

/* Fails every collective in progress or arriving later with msg (another
 * part of the run has failed), until rt_coll_reset. */
void rt_coll_abort(rt_coll *c, const char *msg);
/* Forgets every meeting and occurrence count; call only while no device is
 * inside rt_coll_run (after a failed run has drained). */
void rt_coll_reset(rt_coll *c);

#endif
