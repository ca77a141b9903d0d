/* devices.c - backend kind of a process's replicas, GPU ordinals (devices.h). */
#include "devices.h"

#include <stdio.h>
#include <string.h>

const char *ir_local_device_kind(const ir_module *m, int first, int local, char *err, size_t cap) {
    const char *kind = NULL;
    for (int r = first; r < first + local; r++) {
        const ir_device *d = &m->devices[r];
        if (strcmp(d->name, "cpu") && strcmp(d->name, "gpu")) {
            snprintf(err, cap, "device %s:%d is neither a cpu nor a gpu", d->name, d->index);
            return NULL;
        }
        if (kind && strcmp(kind, d->name)) {
            snprintf(err, cap, "this process's replicas mix cpu and gpu devices (%s:%d and %s:%d); a process runs one kind",
                     m->devices[first].name, m->devices[first].index, d->name, d->index);
            return NULL;
        }
        kind = d->name;
    }
    if (!kind) snprintf(err, cap, "this process runs no replica");
    return kind;
}

int ir_gpu_ordinals(const int *index, int n, int local_rank, int visible, int *ordinal, char *err, size_t cap) {
    for (int d = 0; d < n; d++) {
        ordinal[d] = index[d] + local_rank * n;
        if (index[d] < 0 || ordinal[d] >= visible) {
            if (local_rank)
                snprintf(err, cap, "gpu:%d of worker %d on this machine is CUDA device %d, but %d GPU%s visible",
                         index[d], local_rank, ordinal[d], visible, visible == 1 ? " is" : "s are");
            else
                snprintf(err, cap, "gpu:%d is not here: %d GPU%s visible", index[d], visible,
                         visible == 1 ? " is" : "s are");
            return -1;
        }
        for (int e = 0; e < d; e++)
            if (ordinal[e] == ordinal[d]) {
                snprintf(err, cap, "gpu:%d appears twice among this process's devices", index[d]);
                return -1;
            }
    }
    return 0;
}
