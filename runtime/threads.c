/* threads.c - the default of --threads-per-device (issue 14): the cores this
 * process may run on, shared among its devices and the job's other
 * processes on this machine. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "session.h"

int rt_threads_for(int cores, int local_devices, int local_processes) {
    int share = (local_devices > 0 ? local_devices : 1) * (local_processes > 0 ? local_processes : 1);
    return cores / share > 1 ? cores / share : 1;
}

/* processes of an mpirun job on this machine, as the launcher announces them; 1 alone */
static int local_processes(void) {
    const char *vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMIX_LOCAL_SIZE"};
    for (size_t k = 0; k < sizeof vars / sizeof *vars; k++) {
        const char *v = getenv(vars[k]);
        if (v && atoi(v) > 0) return atoi(v);
    }
    return 1;
}

int rt_default_threads(int local_devices) {
    cpu_set_t set;
    int cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    return rt_threads_for(cores, local_devices, local_processes());
}
