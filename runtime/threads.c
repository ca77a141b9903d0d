/* threads.c - the default of --threads-per-device (issue 14): the cores this
 * process may run on, shared among its devices and the job's other
 * processes on this machine; and which cores each device's threads are
 * pinned to (docs/runtime.md, "Device threads on cores"). */
#define _GNU_SOURCE
#include <sched.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
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

/* ---- pinning (issue 14): device d's threads on cores [d*T, (d+1)*T) ---- */

int rt_device_cpus(int local_devices, int threads_per_device, int *cpus) {
    const char *off = getenv("MGC_PIN_THREADS");
    if (off && strcmp(off, "1") != 0) return 0; /* the off switch: anything but 1 */
    int t = threads_per_device > 0 ? threads_per_device : 1;
    cpu_set_t set;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (local_devices < 2 || local_processes() > 1 || sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    /* a restricted affinity (taskset, numactl, a launcher's binding) is the user's choice: kept;
     * and only devices that fill the machine own it (two jobs of 2 devices of
     * 1 thread on 64 cores must not both sit on cores 0 and 1) */
    if (CPU_COUNT(&set) != online || (long)local_devices * t != online) return 0;
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < local_devices * t; c++)
        if (CPU_ISSET(c, &set)) cpus[n++] = c;
    return n == local_devices * t;
}

int rt_pin_self(const int *cpus, int n) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int k = 0; k < n; k++) CPU_SET(cpus[k], &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}
