/* test_pin.c - issue 14: when the CPU backend pins each device's stream
 * threads to cores of its own (rt_device_cpus), and that it does: the
 * threads' allowed CPUs as /proc reports them, with pinning on and off. */
#define _GNU_SOURCE
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../runtime/backend.h"
#include "../../runtime/session.h"

#include "check.h"

/* How many of this process's threads may run on exactly one CPU, per CPU
 * (counts[0..n)); returns the number of threads. */
static int pinned_threads(int *counts, int n) {
    memset(counts, 0, (size_t)n * sizeof *counts);
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int threads = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char path[300], line[512];
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        threads++;
        while (fgets(line, sizeof line, f)) {
            int cpu;
            char rest;
            if (sscanf(line, "Cpus_allowed_list: %d%c", &cpu, &rest) == 2 && rest == '\n' && cpu >= 0 && cpu < n)
                counts[cpu]++;
        }
        fclose(f);
    }
    closedir(d);
    return threads;
}

int main(void) {
    int online = (int)sysconf(_SC_NPROCESSORS_ONLN), cpus[1024], counts[1024];
    cpu_set_t all;
    CHECK(sched_getaffinity(0, sizeof all, &all) == 0, "sched_getaffinity");
    if (online < 2 || online > 1024 || CPU_COUNT(&all) != online) {
        printf("pinning: %d CPUs online, %d allowed: nothing to pin here, skipped\n", online, CPU_COUNT(&all));
        return 0;
    }
    unsetenv("MGC_PIN_THREADS");
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE"), unsetenv("MPI_LOCALNRANKS"), unsetenv("PMIX_LOCAL_SIZE");

    /* the rule */
    CHECK(rt_device_cpus(online, 1, cpus) == 1, "%d devices of 1 thread on %d CPUs not pinned", online, online);
    for (int k = 0; k < online; k++) CHECK(CPU_ISSET(cpus[k], &all) && (k == 0 || cpus[k] > cpus[k - 1]), "cpu %d", cpus[k]);
    CHECK(rt_device_cpus(1, online, cpus) == 0, "one device pinned");
    CHECK(rt_device_cpus(online + 1, 1, cpus) == 0, "more devices than CPUs pinned");
    if (online >= 3) CHECK(rt_device_cpus(2, 1, cpus) == 0, "2 devices that leave CPUs idle pinned");
    setenv("MGC_PIN_THREADS", "0", 1);
    CHECK(rt_device_cpus(online, 1, cpus) == 0, "MGC_PIN_THREADS=0 pinned");
    unsetenv("MGC_PIN_THREADS");
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
    CHECK(rt_device_cpus(online, 1, cpus) == 0, "one of 2 local MPI processes pinned");
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[0], &one);
    CHECK(sched_setaffinity(0, sizeof one, &one) == 0, "sched_setaffinity");
    CHECK(rt_device_cpus(online, 1, cpus) == 0, "pinned under a restricted affinity (taskset)");
    CHECK(sched_setaffinity(0, sizeof all, &all) == 0, "sched_setaffinity");

    /* the backend: each device's compute and comm thread on its own CPU */
    rt_device_cpus(online, 1, cpus);
    rt_backend *b = start_cpu(online, 1, 0, 1);
    usleep(20000); /* the threads pin themselves first thing */
    pinned_threads(counts, 1024);
    for (int d = 0; d < online; d++)
        CHECK(counts[cpus[d]] == STREAM_COUNT, "cpu %d runs %d pinned threads, want device %d's %d", cpus[d],
              counts[cpus[d]], d, STREAM_COUNT);
    stop_cpu(b);
    setenv("MGC_PIN_THREADS", "0", 1);
    b = start_cpu(online, 1, 0, 1);
    usleep(20000);
    int threads = pinned_threads(counts, 1024), pinned = 0;
    for (int k = 0; k < 1024; k++) pinned += counts[k];
    CHECK(threads >= 1 + online * STREAM_COUNT && pinned == 0, "MGC_PIN_THREADS=0: %d of %d threads pinned", pinned,
          threads);
    stop_cpu(b);
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("pinning: all checks passed (%d devices on %d CPUs)\n", online, online);
    return 0;
}
