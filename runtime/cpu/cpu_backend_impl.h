/* cpu_backend_impl.h - the CPU backend's state: per device an arena list and
 * STREAM_COUNT streams (a worker thread each, with a FIFO of work items);
 * events are counters shared by all streams. Seen only by backend.c and tests. */
#ifndef MGC_CPU_BACKEND_IMPL_H
#define MGC_CPU_BACKEND_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "../backend.h"
#include "../collectives.h"

typedef enum {
    WORK_KERNEL,     /* kernel: cpu_kernel_run(&kernel) */
    WORK_COPY,       /* copy: memcpy(dst, src, bytes) */
    WORK_RECORD,     /* event: value[event] = max(value, generation) */
    WORK_WAIT,       /* event: later work waits until value[event] >= generation */
    WORK_COLLECTIVE, /* coll: this device's part of a collective */
} cpu_work_kind;

typedef struct {
    cpu_work_kind kind;
    int trace;                /* node whose span this item is (tracing armed), -1: untimed */
    int64_t trace_step;       /* the train step of that span */
    int64_t step;             /* WORK_KERNEL: *kernel.step at launch, which the kernel reads (backend.h) */
    union {
        rt_kernel_args kernel;
        struct { void *dst; const void *src; size_t bytes; } copy;
        struct { int event; uint64_t generation; } event;
        rt_coll_args coll;
    };
} cpu_work;

typedef struct cpu_state cpu_state;

typedef struct {
    cpu_state *st;
    int device, stream;
    pthread_t thread;
    bool started;
    _Atomic bool stop;        /* set under mu */
    pthread_mutex_t mu;
    pthread_cond_t more, idle;
    pthread_cond_t woken;     /* issue 14: signalled by a record of the event this stream sleeps on */
    int sleeping_on;          /* that event, -1: none (under st->event_mu) */
    cpu_work *items;          /* ring buffer (cap) */
    size_t head, cap;
    _Atomic size_t count;     /* items queued, with the one running now (changed under mu) */
    uint64_t queued, ran;     /* items ever queued and run (under mu; mark, sync_to) */
    uint64_t wake_at;         /* the least ran a sync_to waits for, UINT64_MAX: none (under mu) */
    rt_trace_span *spans;     /* (trace_cap) timed items, appended by this stream's thread, taken by trace_take (under mu) */
    int n_spans;
} cpu_stream;

typedef struct {
    void **blocks;            /* live allocations, 64-byte aligned */
    int n, cap;
} cpu_arena;

struct cpu_state {
    rt_backend *b;
    cpu_stream *streams;      /* (n_devices * STREAM_COUNT), device-major */
    cpu_arena *arenas;        /* (n_devices) */
    pthread_mutex_t arena_mu;
    _Atomic uint64_t *event_value; /* (n_events) the generation last recorded */
    _Atomic int event_sleepers;    /* waits asleep on their stream's `woken` (under event_mu) */
    pthread_mutex_t event_mu;
    _Atomic int failed;       /* first error is in b->err; every stream skips its work */
    pthread_mutex_t err_mu;
    rt_coll *coll;
    int trace_cap;            /* spans per stream while tracing is armed, 0: off */
    int n_ready;              /* streams whose mutex and conditions exist */
    int *pin_cpus;            /* issue 14: (n_devices * pin_per) device d's cores, NULL: unpinned */
    int pin_per;
};

#endif
