/* check.h - what the runtime tests share: CHECK(cond, fmt, ...) reports a
 * failed condition with its file, line and a message, counts it in
 * `failures`, and goes on (each test's main returns failures != 0);
 * start_cpu/stop_cpu make and end a CPU backend. */
#ifndef MGC_TESTS_RTCOLL_CHECK_H
#define MGC_TESTS_RTCOLL_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "../../runtime/backend.h"

static int failures;
#define CHECK(cond, ...)                                                         \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                        \
            fputc('\n', stderr);                                                 \
            failures++;                                                          \
        }                                                                        \
    } while (0)

/* a CPU backend of `devices` devices and `events` events, its collectives
 * timing out after `timeout` s (0: the default), `threads` kernel threads a
 * device (0: the default); exits when it cannot start */
static inline rt_backend *start_cpu(int devices, int events, double timeout, int threads) {
    rt_backend *b = rt_backend_cpu();
    b->n_devices = devices, b->n_events = events, b->replica_total = devices;
    if (timeout > 0) b->collective_timeout = timeout;
    if (threads > 0) b->threads_per_device = threads;
    if (b->i->init(b)) {
        fprintf(stderr, "init: %s\n", b->err);
        exit(1);
    }
    return b;
}

static inline void stop_cpu(rt_backend *b) {
    b->i->shutdown(b);
    free(b);
}

#endif
