/* devices.h - which backend runs a process's replicas, and which physical
 * GPU each of them uses. Pure functions of the plan, so CPU-only machines
 * test what a GPU run relies on. */
#ifndef MGC_DEVICES_H
#define MGC_DEVICES_H

#include <stddef.h>

#include "ir.h"

/* The device kind ("cpu" or "gpu") of replicas [first, first + local) of m:
 * the replicas this process runs (under mpirun the other workers' replicas
 * may be of another kind). NULL with a message in err when they mix kinds or
 * name an unknown one. */
const char *ir_local_device_kind(const ir_module *m, int first, int local, char *err, size_t cap);

/* The CUDA ordinal of each of n local GPU devices whose plan names gpu:index[d]:
 * index[d] + local_rank * n, where local_rank is this worker's rank among the
 * workers of its machine (0 in one process), so workers sharing a machine get
 * distinct GPUs from one plan. Returns 0, or -1 with a message in err when an
 * ordinal is not below `visible` or two devices would share a GPU. */
int ir_gpu_ordinals(const int *index, int n, int local_rank, int visible, int *ordinal, char *err, size_t cap);

#endif
