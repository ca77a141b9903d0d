/* cpu_kernels.h - the CPU kernel of every op that has one (OpenBLAS, oneDNN,
 * hand-written elementwise loops over runtime/ops_math.h). */
#ifndef MGC_CPU_KERNELS_H
#define MGC_CPU_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

#include "../backend.h"

/* Runs node k->node on the calling thread. Returns 0, or -1 with a message
 * naming the op in err. SOURCE ops and collectives have no kernel here. */
int cpu_kernel_run(const rt_kernel_args *k, char *err, size_t cap);
/* Whether node n has a CPU kernel for its dtype (rt_backend_i.supports). */
bool cpu_kernel_supports(const ir_node *n, char *why, size_t cap);

/* Threads each kernel call may use (OpenBLAS, oneDNN); default 1. */
void cpu_kernels_set_threads(int threads);

#endif
