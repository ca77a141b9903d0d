/* backend.c - the CPU backend: logical devices with an arena, a compute and
 * a comm stream each (a worker thread per stream running its queue in order),
 * events as counters (a stream waiting for one sleeps on a condition of its
 * own, which a record of that event signals), collectives through
 * runtime/collectives; each device's threads pinned to its cores when the
 * devices fill the machine (issue 14, rt_device_cpus). The first failing
 * item stops all streams' later work until sync() reports it. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../session.h"
#include "cpu_backend_impl.h"
#include "cpu_kernels.h"
#include "tune.h"

#define SPIN_SECONDS 50e-6

static cpu_state *state(rt_backend *b) { return b->impl; }

/* Makes every stream skip what is left: event waits and collectives end. */
static void halt(cpu_state *st, const char *why) {
    atomic_store(&st->failed, 1);
    pthread_mutex_lock(&st->event_mu);
    for (int k = 0; k < st->n_ready; k++) pthread_cond_signal(&st->streams[k].woken);
    pthread_mutex_unlock(&st->event_mu);
    if (st->coll) rt_coll_abort(st->coll, why);
}

/* Keeps the first error (reported by sync) and halts every stream. */
static void set_failure(cpu_state *st, const char *msg) {
    pthread_mutex_lock(&st->err_mu);
    if (!atomic_load(&st->failed)) snprintf(st->b->err, sizeof st->b->err, "%s", msg);
    atomic_store(&st->failed, 1);
    pthread_mutex_unlock(&st->err_mu);
    halt(st, msg);
}

/* Wakes only the streams asleep on this event (issue 14: a broadcast to every
 * sleeper woke the other device's comm stream at each record, for nothing). */
static int run_record(cpu_state *st, int event, uint64_t generation) {
    if (atomic_load(&st->event_value[event]) < generation) atomic_store(&st->event_value[event], generation);
    if (atomic_load(&st->event_sleepers)) { /* seq_cst: a waiter either sees the value or is counted */
        pthread_mutex_lock(&st->event_mu);
        for (int k = 0; k < st->n_ready; k++)
            if (st->streams[k].sleeping_on == event) pthread_cond_signal(&st->streams[k].woken);
        pthread_mutex_unlock(&st->event_mu);
    }
    return 0;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Spins for up to SPIN_SECONDS until done(arg); false if it never was. A
 * thread that sleeps costs tens of microseconds (more in a VM) to wake. Only
 * compute streams spin: their waits (for an all-reduce, for the next step's
 * work) are short, while a comm stream waits for the backward pass and its
 * spinning would take the core from a compute stream. */
static bool spin_until(bool (*done)(const void *), const void *arg) {
    double until = now_s() + SPIN_SECONDS;
    for (int i = 0;; i++) {
        if (done(arg)) return true;
        if (i % 64 == 63 && now_s() > until) return false;
        if (i < 256) __builtin_ia32_pause();
        else sched_yield();
    }
}

typedef struct {
    cpu_state *st;
    int event;
    uint64_t generation;
} event_wait;

static bool event_done(const void *arg) {
    const event_wait *w = arg;
    return atomic_load(&w->st->event_value[w->event]) >= w->generation || atomic_load(&w->st->failed);
}

/* A compute stream spins before it sleeps, unless the device's threads are
 * pinned (issue 14): then the event's producer, the device's comm stream,
 * runs on the same core and needs it. */
static int run_wait(cpu_stream *s, int event, uint64_t generation) {
    cpu_state *st = s->st;
    event_wait w = {st, event, generation};
    if (s->stream == STREAM_COMPUTE && !st->pin_cpus && spin_until(event_done, &w)) return 0;
    atomic_fetch_add(&st->event_sleepers, 1);
    pthread_mutex_lock(&st->event_mu);
    s->sleeping_on = event;
    while (!event_done(&w)) pthread_cond_wait(&s->woken, &st->event_mu);
    s->sleeping_on = -1;
    pthread_mutex_unlock(&st->event_mu);
    atomic_fetch_sub(&st->event_sleepers, 1);
    return 0;
}

static bool has_work(const void *arg) {
    const cpu_stream *s = arg;
    return atomic_load(&s->count) || s->stop;
}

static int run_item(cpu_stream *s, const cpu_work *w, char *msg, size_t cap) {
    cpu_state *st = s->st;
    switch (w->kind) {
    case WORK_KERNEL: return cpu_kernel_run(&w->kernel, msg, cap);
    case WORK_COPY: memcpy(w->copy.dst, w->copy.src, w->copy.bytes); return 0;
    case WORK_RECORD: return run_record(st, w->event.event, w->event.generation);
    case WORK_WAIT: return run_wait(s, w->event.event, w->event.generation);
    case WORK_COLLECTIVE:
        return rt_coll_run(st->coll, s->device, &w->coll, st->b->collective_timeout, msg, cap);
    }
    return 0;
}

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A stream's thread: runs its queue in order, skipping work after a failure. */
static void *stream_main(void *arg) {
    cpu_stream *s = arg;
    char msg[sizeof s->st->b->err];
    if (s->st->pin_cpus) /* issue 14: both streams of a device on its cores; best effort */
        rt_pin_self(s->st->pin_cpus + s->device * s->st->pin_per, s->st->pin_per);
    for (;;) {
        if (s->stream == STREAM_COMPUTE) spin_until(has_work, s);
        pthread_mutex_lock(&s->mu);
        while (!s->count && !s->stop) pthread_cond_wait(&s->more, &s->mu);
        if (!s->count) {
            pthread_mutex_unlock(&s->mu);
            return NULL;
        }
        cpu_work w = s->items[s->head];
        pthread_mutex_unlock(&s->mu);
        if (w.kind == WORK_KERNEL && w.kernel.step) w.kernel.step = &w.step; /* the step it was launched in */
        int64_t start = w.trace >= 0 ? now_ns() : 0; /* a traced item: timed into the stream's spans */
        if (!atomic_load(&s->st->failed) && run_item(s, &w, msg, sizeof msg)) set_failure(s->st, msg);
        int64_t end = w.trace >= 0 ? now_ns() : 0;
        pthread_mutex_lock(&s->mu);
        if (w.trace >= 0 && s->n_spans < s->st->trace_cap)
            s->spans[s->n_spans++] = (rt_trace_span){w.trace, s->device, s->stream, w.trace_step, start, end};
        s->head = (s->head + 1) % s->cap, s->count--;
        s->ran++;
        /* sync waits for count 0, sync_to for ran >= wake_at; waking a
         * waiter after every item cost its device's core a context switch
         * per kernel while a step was in flight */
        if (!s->count || s->ran >= s->wake_at) {
            s->wake_at = UINT64_MAX;
            pthread_cond_broadcast(&s->idle);
        }
        pthread_mutex_unlock(&s->mu);
    }
}

static int check_place(rt_backend *b, int device, int stream) {
    if (device >= 0 && device < b->n_devices && stream >= 0 && stream < STREAM_COUNT) return 0;
    snprintf(b->err, sizeof b->err, "cpu backend: no stream %d on device %d (%d devices)", stream, device, b->n_devices);
    return -1;
}

/* Appends w to (device, stream)'s queue; the ring buffer doubles when full. */
static int enqueue(rt_backend *b, int device, int stream, const cpu_work *in) {
    if (check_place(b, device, stream)) return -1;
    cpu_work w[1] = {*in};
    w->trace = state(b)->trace_cap && (w->kind == WORK_KERNEL || w->kind == WORK_COPY || w->kind == WORK_COLLECTIVE)
                   ? b->trace_node : -1;
    w->trace_step = b->trace_step;
    cpu_stream *s = &state(b)->streams[device * STREAM_COUNT + stream];
    pthread_mutex_lock(&s->mu);
    if (s->count == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        cpu_work *items = malloc(cap * sizeof *items);
        if (!items) {
            pthread_mutex_unlock(&s->mu);
            snprintf(b->err, sizeof b->err, "cpu backend: out of memory for a stream queue of %zu items", cap);
            return -1;
        }
        for (size_t k = 0; k < s->count; k++) items[k] = s->items[(s->head + k) % s->cap];
        free(s->items);
        s->items = items, s->head = 0, s->cap = cap;
    }
    s->items[(s->head + s->count++) % s->cap] = *w;
    s->queued++;
    pthread_cond_signal(&s->more);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* ---- memory: one list of 64-byte aligned blocks per device ---- */

static void *cpu_alloc(rt_backend *b, int device, size_t bytes) {
    cpu_state *st = state(b);
    if (device < 0 || device >= b->n_devices) {
        snprintf(b->err, sizeof b->err, "cpu backend: no device %d", device);
        return NULL;
    }
    void *p = NULL;
    if (posix_memalign(&p, 64, (bytes + 63) / 64 * 64 + 64)) {
        snprintf(b->err, sizeof b->err, "out of memory (%zu bytes)", bytes);
        return NULL;
    }
    memset(p, 0, bytes);
    cpu_arena *a = &st->arenas[device];
    pthread_mutex_lock(&st->arena_mu);
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 8;
        void **blocks = realloc(a->blocks, (size_t)cap * sizeof *blocks);
        if (!blocks) {
            pthread_mutex_unlock(&st->arena_mu);
            free(p);
            snprintf(b->err, sizeof b->err, "out of memory (%zu bytes)", bytes);
            return NULL;
        }
        a->blocks = blocks, a->cap = cap;
    }
    a->blocks[a->n++] = p;
    pthread_mutex_unlock(&st->arena_mu);
    return p;
}

static void cpu_dealloc(rt_backend *b, int device, void *p) {
    cpu_state *st = state(b);
    if (!p || device < 0 || device >= b->n_devices) return;
    cpu_arena *a = &st->arenas[device];
    pthread_mutex_lock(&st->arena_mu);
    for (int k = 0; k < a->n; k++)
        if (a->blocks[k] == p) {
            a->blocks[k] = a->blocks[--a->n];
            free(p);
            break;
        }
    pthread_mutex_unlock(&st->arena_mu);
}

/* ---- queued work ---- */

static int cpu_copy(rt_backend *b, int device, int stream, void *dst, const void *src, size_t bytes) {
    cpu_work w = {.kind = WORK_COPY, .copy = {dst, src, bytes}};
    return enqueue(b, device, stream, &w);
}

static int cpu_launch(rt_backend *b, int device, int stream, const rt_kernel_args *k) {
    if (check_place(b, device, stream)) return -1;
    cpu_work w = {.kind = WORK_KERNEL, .kernel = *k, .step = k->step ? *k->step : 0};
    return enqueue(b, device, stream, &w);
}

static int event_item(rt_backend *b, int device, int stream, cpu_work_kind kind, int event, uint64_t generation) {
    if (event < 0 || event >= b->n_events) {
        snprintf(b->err, sizeof b->err, "cpu backend: no event %d (%d events)", event, b->n_events);
        return -1;
    }
    cpu_work w = {.kind = kind, .event = {event, generation}};
    return enqueue(b, device, stream, &w);
}

static int cpu_record(rt_backend *b, int device, int stream, int event, uint64_t generation) {
    return event_item(b, device, stream, WORK_RECORD, event, generation);
}

static int cpu_wait(rt_backend *b, int device, int stream, int event, uint64_t generation) {
    return event_item(b, device, stream, WORK_WAIT, event, generation);
}

static int cpu_collective(rt_backend *b, int device, int stream, const rt_coll_args *c) {
    if (check_place(b, device, stream)) return -1;
    cpu_work w = {.kind = WORK_COLLECTIVE, .coll = *c};
    return enqueue(b, device, stream, &w);
}

/* Waits until every queue is empty; after a failure clears it (reporting
 * it once) so that the backend can run again. */
static int cpu_sync(rt_backend *b) {
    cpu_state *st = state(b);
    for (int k = 0; k < b->n_devices * STREAM_COUNT; k++) {
        cpu_stream *s = &st->streams[k];
        pthread_mutex_lock(&s->mu);
        while (s->count) pthread_cond_wait(&s->idle, &s->mu);
        pthread_mutex_unlock(&s->mu);
    }
    if (!atomic_load(&st->failed)) return 0;
    rt_coll_reset(st->coll);
    atomic_store(&st->failed, 0);
    return -1;
}

static void cpu_mark(rt_backend *b, uint64_t *marks) {
    cpu_state *st = state(b);
    for (int k = 0; k < b->n_devices * STREAM_COUNT; k++) {
        cpu_stream *s = &st->streams[k];
        pthread_mutex_lock(&s->mu);
        marks[k] = s->queued;
        pthread_mutex_unlock(&s->mu);
    }
}

static int cpu_sync_to(rt_backend *b, const uint64_t *marks) {
    cpu_state *st = state(b);
    for (int k = 0; k < b->n_devices * STREAM_COUNT && !atomic_load(&st->failed); k++) {
        cpu_stream *s = &st->streams[k];
        pthread_mutex_lock(&s->mu);
        while (s->ran < marks[k] && !atomic_load(&st->failed)) {
            if (marks[k] < s->wake_at) s->wake_at = marks[k]; /* each waiter lowers it again after a wake */
            pthread_cond_wait(&s->idle, &s->mu);
        }
        pthread_mutex_unlock(&s->mu);
    }
    return atomic_load(&st->failed) ? cpu_sync(b) : 0; /* a failure: drained, reported once */
}

/* ---- tracing (backend.h): each stream's thread fills its own buffer ---- */

static const char *cpu_kernel_choice(rt_backend *b, const rt_kernel_args *k) {
    (void)b;
    return cpu_tune_named(k);
}

static int cpu_trace_arm(rt_backend *b, int cap) {
    cpu_state *st = state(b);
    st->trace_cap = 0;
    for (int k = 0; k < b->n_devices * STREAM_COUNT; k++) {
        cpu_stream *s = &st->streams[k];
        free(s->spans);
        s->spans = cap > 0 ? malloc((size_t)cap * sizeof *s->spans) : NULL, s->n_spans = 0;
        if (cap > 0 && !s->spans) {
            snprintf(b->err, sizeof b->err, "out of memory for %d trace spans per stream", cap);
            return cpu_trace_arm(b, 0), -1;
        }
    }
    st->trace_cap = cap; /* the streams read it after their queue's mutex, as they read the item */
    return 0;
}

static int cpu_trace_take(rt_backend *b, rt_trace_span *out, int cap, int64_t step) {
    cpu_state *st = state(b);
    int n = 0;
    for (int k = 0; k < b->n_devices * STREAM_COUNT; k++) {
        cpu_stream *s = &st->streams[k];
        pthread_mutex_lock(&s->mu); /* a step in flight may be adding its spans */
        int kept = 0;
        for (int j = 0; j < s->n_spans; j++)
            if (s->spans[j].step > step) s->spans[kept++] = s->spans[j];
            else if (n < cap) out[n++] = s->spans[j];
        s->n_spans = kept;
        pthread_mutex_unlock(&s->mu);
    }
    return n;
}

/* ---- lifetime ---- */

static void stop_streams(cpu_state *st, int n) {
    for (int k = 0; k < n; k++) {
        cpu_stream *s = &st->streams[k];
        pthread_mutex_lock(&s->mu);
        s->stop = true;
        pthread_cond_signal(&s->more);
        pthread_mutex_unlock(&s->mu);
    }
    for (int k = 0; k < n; k++) {
        cpu_stream *s = &st->streams[k];
        if (s->started) pthread_join(s->thread, NULL);
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->more), pthread_cond_destroy(&s->idle), pthread_cond_destroy(&s->woken);
        free(s->items), free(s->spans);
    }
}

static void cpu_shutdown(rt_backend *b) {
    cpu_state *st = state(b);
    if (!st) return;
    halt(st, "cpu backend: shut down"); /* work still queued is skipped, waits end */
    if (st->streams) stop_streams(st, b->n_devices * STREAM_COUNT);
    for (int d = 0; st->arenas && d < b->n_devices; d++) {
        for (int k = 0; k < st->arenas[d].n; k++) free(st->arenas[d].blocks[k]);
        free(st->arenas[d].blocks);
    }
    rt_coll_free(st->coll);
    pthread_mutex_destroy(&st->arena_mu), pthread_mutex_destroy(&st->event_mu), pthread_mutex_destroy(&st->err_mu);
    free(st->streams), free(st->arenas), free(st->event_value), free(st->pin_cpus);
    free(st);
    b->impl = NULL;
}

static int start_streams(rt_backend *b, cpu_state *st) {
    int n = b->n_devices * STREAM_COUNT;
    for (int k = 0; k < n; k++) {
        cpu_stream *s = &st->streams[k];
        s->st = st, s->device = k / STREAM_COUNT, s->stream = k % STREAM_COUNT;
        pthread_mutex_init(&s->mu, NULL);
        pthread_cond_init(&s->more, NULL), pthread_cond_init(&s->idle, NULL), pthread_cond_init(&s->woken, NULL);
        s->sleeping_on = -1, s->wake_at = UINT64_MAX;
    }
    st->n_ready = n;
    for (int k = 0; k < n; k++) {
        int rc = pthread_create(&st->streams[k].thread, NULL, stream_main, &st->streams[k]);
        if (rc) {
            snprintf(b->err, sizeof b->err, "cpu backend: pthread_create: %s", strerror(rc));
            return -1;
        }
        st->streams[k].started = true;
    }
    return 0;
}

static int cpu_init(rt_backend *b) {
    if (b->n_devices < 1) {
        snprintf(b->err, sizeof b->err, "cpu backend: %d devices", b->n_devices);
        return -1;
    }
    cpu_state *st = calloc(1, sizeof *st);
    if (!st) return snprintf(b->err, sizeof b->err, "out of memory"), -1;
    b->impl = st, st->b = b;
    st->streams = calloc((size_t)b->n_devices * STREAM_COUNT, sizeof *st->streams);
    st->arenas = calloc((size_t)b->n_devices, sizeof *st->arenas);
    st->event_value = calloc((size_t)(b->n_events > 0 ? b->n_events : 1), sizeof *st->event_value);
    int total = b->replica_total > 0 ? b->replica_total : b->n_devices;
    st->coll = rt_coll_new(b->n_devices, b->replica_base, total, b->ip);
    pthread_mutex_init(&st->arena_mu, NULL), pthread_mutex_init(&st->event_mu, NULL);
    pthread_mutex_init(&st->err_mu, NULL);
    if (!st->streams || !st->arenas || !st->event_value || !st->coll) {
        snprintf(b->err, sizeof b->err, "out of memory");
        cpu_shutdown(b);
        return -1;
    }
    int threads = b->threads_per_device > 0 ? b->threads_per_device : 1;
    cpu_kernels_set_threads(threads);
    st->pin_cpus = malloc((size_t)b->n_devices * (size_t)threads * sizeof *st->pin_cpus);
    if (st->pin_cpus && rt_device_cpus(b->n_devices, threads, st->pin_cpus)) st->pin_per = threads;
    else free(st->pin_cpus), st->pin_cpus = NULL;
    if (start_streams(b, st)) {
        char msg[sizeof b->err];
        snprintf(msg, sizeof msg, "%s", b->err);
        cpu_shutdown(b);
        snprintf(b->err, sizeof b->err, "%s", msg);
        return -1;
    }
    return 0;
}

static const rt_backend_i cpu_backend_i = {
    .name = "cpu",
    .init = cpu_init,
    .shutdown = cpu_shutdown,
    .alloc = cpu_alloc,
    .dealloc = cpu_dealloc,
    .upload = cpu_copy,
    .download = cpu_copy,
    .launch = cpu_launch,
    .supports = cpu_kernel_supports,
    .record = cpu_record,
    .wait = cpu_wait,
    .collective = cpu_collective,
    .sync = cpu_sync,
    .mark = cpu_mark,
    .sync_to = cpu_sync_to,
    .trace_arm = cpu_trace_arm,
    .trace_take = cpu_trace_take,
    .kernel_choice = cpu_kernel_choice,
};

rt_backend *rt_backend_cpu(void) {
    rt_backend *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->i = &cpu_backend_i;
    b->n_devices = 1;
    b->threads_per_device = 1;
    b->replica_total = 1;
    b->collective_timeout = 60.0;
    return b;
}
