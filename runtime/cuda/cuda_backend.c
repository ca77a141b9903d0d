/* cuda_backend.c - the CUDA backend: devices, streams, events, arenas, copies.
 *
 * Each local device runs on the GPU its plan names (gpu:N -> CUDA device N),
 * shifted by the worker's rank among the workers of its machine times its
 * device count (ir_gpu_ordinals), so one process per GPU and one process per
 * machine both map replicas onto distinct GPUs. A backend stream
 * is a cudaStream_t; an event index is one cudaEvent_t per (device, index).
 * Generations are not needed on the device: cudaStreamWaitEvent waits for the
 * most recent record submitted before it, and the executor submits each run's
 * record before the waits that consume it, so stream order already separates
 * runs. That precondition is checked on the host (a wait whose record of the
 * same generation has not been submitted yet fails instead of silently waiting
 * for the previous run's record).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../ir/devices.h"
#include "cuda_backend.h"
#include "../bad_id.h"
#include "cuda_impl.h"

int cuda_fail(rt_backend *b, const char *call, const char *what, const char *file, int line) {
    snprintf(b->err, sizeof b->err, "%s failed: %s (%s:%d)", call, what, file, line);
    if (b->impl) cuda_st(b)->failed = 1; /* teardown releases the collective flags (cuda_nccl_release) */
    return -1;
}

int cuda_fail_driver(rt_backend *b, const char *call, int code, const char *file, int line) {
    char what[48];
    snprintf(what, sizeof what, "CUDA driver error %d (CUresult)", code);
    return cuda_fail(b, call, what, file, line);
}

int rt_cuda_device_count(char *why, size_t cap) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, cap, "no usable CUDA device (cudaGetDeviceCount: %s)", cudaGetErrorString(e));
        return 0;
    }
    if (n == 0) snprintf(why, cap, "no usable CUDA device (cudaGetDeviceCount: 0 devices)");
    return n;
}

int cuda_use(rt_backend *b, int device) {
    CUDA_CHECK(b, cudaSetDevice(cuda_st(b)->dev[device].ordinal));
    return 0;
}

/* cuStreamWaitValue32 / cuStreamWriteValue32 from the driver, via cudart */
static int load_driver_calls(rt_backend *b, cuda_state *st) {
    enum cudaDriverEntryPointQueryResult q;
    void *w = NULL, *v = NULL;
    CUDA_CHECK(b, cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &w, 12000, cudaEnableDefault, &q));
    CUDA_CHECK(b, cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &v, 12000, cudaEnableDefault, &q));
    if (!w || !v) {
        snprintf(b->err, sizeof b->err, "CUDA driver lacks cuStreamWaitValue32/cuStreamWriteValue32");
        return -1;
    }
    st->wait_value = (cuda_wait_value_fn)w;
    st->write_value = (cuda_write_value_fn)v;
    return 0;
}

static int device_init(rt_backend *b, cuda_device *d, int n_events) {
    CUDA_CHECK(b, cudaSetDevice(d->ordinal));
    for (int s = 0; s < STREAM_COUNT; s++) {
        CUDA_CHECK(b, cudaStreamCreateWithFlags(&d->stream[s], cudaStreamNonBlocking));
        CUBLAS_CHECK(b, cublasCreate(&d->blas[s]));
        CUBLAS_CHECK(b, cublasSetStream(d->blas[s], d->stream[s]));
        CUDNN_CHECK(b, cudnnCreate(&d->dnn[s]));
        CUDNN_CHECK(b, cudnnSetStream(d->dnn[s], d->stream[s]));
    }
    CUBLAS_CHECK(b, cublasLtCreate(&d->lt)); /* issue 14: cuda_lt.c */
    CUDA_CHECK(b, cudaStreamCreateWithFlags(&d->nccl_stream, cudaStreamNonBlocking));
    TRY(cuda_stage_init(b, d));
    TRY(cuda_algo_cache_init(b, d));
    for (int s = 0; s < STREAM_COUNT + 1; s++)
        CUDA_CHECK(b, cudaEventCreateWithFlags(&d->idle[s], cudaEventDisableTiming | cudaEventBlockingSync));
    CUDA_CHECK(b, cudaMalloc((void **)&d->flags, CUDA_MAX_PENDING * sizeof *d->flags));
    CUDA_CHECK(b, cudaMalloc((void **)&d->bad_id, 3 * sizeof *d->bad_id));
    CUDA_CHECK(b, cudaMalloc((void **)&d->nonfinite, sizeof *d->nonfinite));
    CUDA_CHECK(b, cudaMalloc((void **)&d->step_word, STREAM_COUNT * sizeof *d->step_word)); /* issue 15 */
    for (int s = 0; s < STREAM_COUNT; s++) d->step_set[s] = INT64_MIN; /* written before the first use */
    /* cleared on one of our streams and waited for: a plain cudaMemset runs on the
     * legacy default stream, which is not ordered with non-blocking streams */
    cudaStream_t s0 = d->stream[STREAM_COMPUTE];
    CUDA_CHECK(b, cudaMemsetAsync(d->flags, 0, CUDA_MAX_PENDING * sizeof *d->flags, s0));
    CUDA_CHECK(b, cudaMemsetAsync(d->bad_id, 0, 3 * sizeof *d->bad_id, s0));
    CUDA_CHECK(b, cudaMemsetAsync(d->nonfinite, 0, sizeof *d->nonfinite, s0));
    CUDA_CHECK(b, cudaMemsetAsync(&d->nonfinite->key, 0xff, sizeof d->nonfinite->key, s0));
    CUDA_CHECK(b, cudaStreamSynchronize(s0));
    d->events = calloc((size_t)(n_events > 0 ? n_events : 1), sizeof *d->events);
    if (!d->events) return cuda_fail(b, "calloc(events)", "out of memory", __FILE__, __LINE__);
    for (int e = 0; e < n_events; e++) CUDA_CHECK(b, cudaEventCreateWithFlags(&d->events[e], cudaEventDisableTiming));
    return 0;
}

static void device_free(cuda_device *d, int n_events) {
    int usable = cudaSetDevice(d->ordinal) == cudaSuccess;
    for (int e = 0; usable && d->events && e < n_events; e++)
        if (d->events[e]) cudaEventDestroy(d->events[e]);
    free(d->events);
    d->events = NULL;
    if (!usable) return;
    for (int s = 0; s < STREAM_COUNT; s++) {
        if (d->blas[s]) cublasDestroy(d->blas[s]);
        if (d->dnn[s]) cudnnDestroy(d->dnn[s]);
        if (d->stream[s]) cudaStreamDestroy(d->stream[s]);
    }
    if (d->lt) cublasLtDestroy(d->lt);
    if (d->nccl_stream) cudaStreamDestroy(d->nccl_stream);
    for (int s = 0; s < STREAM_COUNT + 1; s++)
        if (d->idle[s]) cudaEventDestroy(d->idle[s]);
    if (d->flags) cudaFree(d->flags);
    if (d->bad_id) cudaFree(d->bad_id);
    if (d->nonfinite) cudaFree(d->nonfinite);
    if (d->step_word) cudaFree(d->step_word);
    cuda_algo_cache_free(d);
    cuda_graph_free(d);
    cuda_stage_free(d); /* a zeroed stage (init never reached) frees nothing */
}

static void cuda_shutdown(rt_backend *b) {
    cuda_state *st = cuda_st(b);
    if (!st) return;
    /* after an error some comm stream may wait on a collective flag that no
     * flush will write (a device failed before joining): release them and
     * abort NCCL, or cudaFree below would wait forever */
    if (st->failed || cuda_nccl_any_pending(b))
        cuda_nccl_release(b);
    else
        cuda_nccl_free(b);
    cuda_trace_arm(b, 0);
    for (int d = 0; d < st->n; d++) device_free(&st->dev[d], b->n_events);
    for (int p = 0; p < CUDA_MAX_PENDING; p++)
        for (int d = 0; d < st->n; d++)
            if (st->pending[p].ready[d]) cudaEventDestroy(st->pending[p].ready[d]);
    pthread_mutex_destroy(&st->lock);
    free(st->dev);
    free(st->recorder);
    free(st->recorded_gen);
    free(st);
    b->impl = NULL;
}

/* Which CUDA device each local device uses; fails when two would share one. */
static int map_devices(rt_backend *b, cuda_state *st) {
    char why[256];
    int count = rt_cuda_device_count(why, sizeof why);
    if (count == 0) {
        snprintf(b->err, sizeof b->err, "%s", why);
        return -1;
    }
    if (b->n_devices < 1 || b->n_devices > count || b->n_devices > CUDA_MAX_DEVICES) {
        snprintf(b->err, sizeof b->err, "plan wants %d GPU replicas in this process, %d CUDA device(s) usable",
                 b->n_devices, count);
        return -1;
    }
    const char *local_rank = getenv("OMPI_COMM_WORLD_LOCAL_RANK"); /* workers sharing this machine */
    int ordinal[CUDA_MAX_DEVICES];
    if (ir_gpu_ordinals(b->device_index, st->n, local_rank ? atoi(local_rank) : 0, count, ordinal, b->err,
                        sizeof b->err))
        return -1;
    for (int d = 0; d < st->n; d++) st->dev[d].ordinal = ordinal[d];
    return 0;
}

static int state_alloc(rt_backend *b, cuda_state **out) {
    cuda_state *st = calloc(1, sizeof *st);
    int ne = b->n_events > 0 ? b->n_events : 1;
    if (st) {
        st->n = b->n_devices;
        st->dev = calloc((size_t)(st->n > 0 ? st->n : 1), sizeof *st->dev);
        st->recorder = malloc((size_t)ne * sizeof *st->recorder);
        st->recorded_gen = calloc((size_t)ne, sizeof *st->recorded_gen);
    }
    if (!st || !st->dev || !st->recorder || !st->recorded_gen) {
        if (st) free(st->dev), free(st->recorder), free(st->recorded_gen);
        free(st);
        return cuda_fail(b, "calloc(cuda_state)", "out of memory", __FILE__, __LINE__);
    }
    for (int e = 0; e < ne; e++) st->recorder[e] = -1;
    pthread_mutex_init(&st->lock, NULL);
    *out = st;
    return 0;
}

static int cuda_init(rt_backend *b) {
    cuda_state *st = NULL;
    TRY(state_alloc(b, &st));
    b->impl = st;
    int rc = map_devices(b, st);
    for (int d = 0; rc == 0 && d < st->n; d++) rc = device_init(b, &st->dev[d], b->n_events);
    if (rc == 0) rc = load_driver_calls(b, st);
    if (rc == 0) rc = cuda_nccl_init(b);
    if (rc != 0) {
        char keep[sizeof b->err];
        memcpy(keep, b->err, sizeof keep);
        cuda_shutdown(b);
        memcpy(b->err, keep, sizeof keep);
    }
    return rc;
}

/* One cudaMalloc'd block per device: the executor asks once for the arena. */
static void *cuda_alloc(rt_backend *b, int device, size_t bytes) {
    void *p = NULL;
    if (cuda_use(b, device) != 0) return NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        snprintf(b->err, sizeof b->err, "cudaMalloc(%zu bytes) on gpu:%d failed: %s", bytes,
                 cuda_st(b)->dev[device].ordinal, cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

static void cuda_dealloc(rt_backend *b, int device, void *p) {
    if (p && cuda_use(b, device) == 0) cudaFree(p);
}

/* cuda_upload, cuda_download: cuda_stage.c (pinned staging) */

static int cuda_record(rt_backend *b, int device, int stream, int event, uint64_t generation) {
    cuda_state *st = cuda_st(b);
    cuda_device *d = &st->dev[device];
    TRY(cuda_use(b, device));
    CUDA_CHECK(b, cudaEventRecord(d->events[event], d->stream[stream]));
    pthread_mutex_lock(&st->lock);
    st->recorder[event] = device;
    st->recorded_gen[event] = generation;
    pthread_mutex_unlock(&st->lock);
    return 0;
}

static int cuda_wait(rt_backend *b, int device, int stream, int event, uint64_t generation) {
    cuda_state *st = cuda_st(b);
    pthread_mutex_lock(&st->lock);
    int from = st->recorder[event];
    uint64_t gen = st->recorded_gen[event];
    pthread_mutex_unlock(&st->lock);
    if (from < 0 || gen < generation) {
        snprintf(b->err, sizeof b->err,
                 "event %d: wait for generation %llu on gpu replica %d submitted before its record (last %llu)",
                 event, (unsigned long long)generation, device, (unsigned long long)gen);
        return -1;
    }
    if (st->capturing && from != device) { /* another device's capture: not one graph (cuda_graph.c) */
        char why[96];
        snprintf(why, sizeof why, "event %d crosses devices (gpu replica %d waits for %d)", event, device, from);
        cuda_graph_broken(b, why);
        return 0;
    }
    TRY(cuda_use(b, device));
    CUDA_CHECK(b, cudaStreamWaitEvent(st->dev[device].stream[stream], st->dev[from].events[event], 0));
    return 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Issue 15: sync waits on events, it does not poll. cudaStreamQuery answering
 * cudaErrorNotReady leaves that as the thread's last error, which the next
 * launch check (cudaGetLastError) then took for its own failure; and a 200 us
 * sleep per poll costs up to that much per step. A helper thread blocks in
 * cudaEventSynchronize (blocking-sync events, no spinning) on an event
 * recorded on every stream; this thread waits for it on a condition variable,
 * waking every POLL_S only to look for NCCL's asynchronous errors and the
 * collective timeout. The helper is detached and the record shared by
 * reference count, so a device that never finishes cannot hang the caller. */
static const double POLL_S = 0.1;

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, refs, n;
    int ordinal[CUDA_MAX_DEVICES];
    cudaEvent_t ev[CUDA_MAX_DEVICES][STREAM_COUNT + 1];
    char err[256];                      /* empty: every event completed */
} idle_wait;

static void idle_wait_drop(idle_wait *w) {
    pthread_mutex_lock(&w->mu);
    int last = --w->refs == 0;
    pthread_mutex_unlock(&w->mu);
    if (!last) return;
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}

static void *idle_thread(void *arg) {
    idle_wait *w = arg;
    char err[256] = "";
    for (int d = 0; d < w->n && !err[0]; d++) {
        cudaError_t e = cudaSetDevice(w->ordinal[d]);
        for (int s = 0; e == cudaSuccess && s < STREAM_COUNT + 1; s++) e = cudaEventSynchronize(w->ev[d][s]);
        if (e != cudaSuccess)
            snprintf(err, sizeof err, "cudaEventSynchronize(step end) on gpu:%d failed: %s", w->ordinal[d],
                     cudaGetErrorString(e));
    }
    pthread_mutex_lock(&w->mu);
    memcpy(w->err, err, sizeof err);
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    idle_wait_drop(w);
    return NULL;
}

/* records the idle events and starts the helper waiting on them */
static int idle_start(rt_backend *b, idle_wait **out) {
    cuda_state *st = cuda_st(b);
    *out = NULL;
    for (int d = 0; d < st->n; d++) {
        cuda_device *dev = &st->dev[d];
        cudaStream_t all[STREAM_COUNT + 1] = {dev->stream[STREAM_COMPUTE], dev->stream[STREAM_COMM], dev->nccl_stream};
        TRY(cuda_use(b, d));
        for (int s = 0; s < STREAM_COUNT + 1; s++) CUDA_CHECK(b, cudaEventRecord(dev->idle[s], all[s]));
    }
    idle_wait *w = calloc(1, sizeof *w);
    if (!w) return cuda_fail(b, "calloc(idle_wait)", "out of memory", __FILE__, __LINE__);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&w->mu, NULL);
    w->n = st->n, w->refs = 2;
    for (int d = 0; d < st->n; d++) {
        w->ordinal[d] = st->dev[d].ordinal;
        memcpy(w->ev[d], st->dev[d].idle, sizeof w->ev[d]);
    }
    pthread_t t;
    pthread_attr_t ta;
    pthread_attr_init(&ta);
    pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &ta, idle_thread, w);
    pthread_attr_destroy(&ta);
    if (rc != 0) {
        w->refs = 1, idle_wait_drop(w);
        snprintf(b->err, sizeof b->err, "pthread_create(step-end waiter) failed: %s", strerror(rc));
        return -1;
    }
    *out = w;
    return 0;
}

/* 1 when the helper finished before `until` (CLOCK_MONOTONIC seconds), else 0 */
static int idle_wait_until(idle_wait *w, double until) {
    struct timespec ts;
    ts.tv_sec = (time_t)until;
    ts.tv_nsec = (long)((until - (double)ts.tv_sec) * 1e9);
    pthread_mutex_lock(&w->mu);
    while (!w->done)
        if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) != 0) break;
    int done = w->done;
    pthread_mutex_unlock(&w->mu);
    return done;
}

/* After the streams are idle: an embedding id outside its table, recorded by
 * a gather kernel, fails the step as the CPU kernel does (runtime/bad_id.h). */
static int check_bad_ids(rt_backend *b) {
    cuda_state *st = cuda_st(b);
    for (int d = 0; d < st->n; d++) {
        int32_t bad[3];
        TRY(cuda_use(b, d));
        CUDA_CHECK(b, cudaMemcpy(bad, st->dev[d].bad_id, sizeof bad, cudaMemcpyDeviceToHost));
        if (!bad[0]) continue;
        CUDA_CHECK(b, cudaMemsetAsync(st->dev[d].bad_id, 0, sizeof bad, st->dev[d].stream[STREAM_COMPUTE]));
        CUDA_CHECK(b, cudaStreamSynchronize(st->dev[d].stream[STREAM_COMPUTE]));
        if (!st->m || bad[0] > st->m->g.n) {
            snprintf(b->err, sizeof b->err, "gather: id %d is outside its table", bad[1]);
            return -1;
        }
        const ir_node *n = &st->m->g.nodes[bad[0] - 1];
        char msg[sizeof b->err];
        rt_bad_id_message(st->m, n, 1, bad[1], bad[2], st->m->g.nodes[n->in[0]].shape.dim[0], msg, sizeof msg);
        snprintf(b->err, sizeof b->err, "%s", msg);
        return -1;
    }
    return 0;
}

/* After the streams are idle: the first kernel output that held NaN or Inf
 * under --check-numerics (cuda_numerics.cu), in the CPU backend's words. */
int cuda_check_nonfinite(rt_backend *b) {
    cuda_state *st = cuda_st(b);
    for (int d = 0; d < st->n; d++) {
        cuda_nonfinite nf;
        cudaStream_t s = st->dev[d].stream[STREAM_COMPUTE];
        TRY(cuda_use(b, d));
        CUDA_CHECK(b, cudaMemcpy(&nf, st->dev[d].nonfinite, sizeof nf, cudaMemcpyDeviceToHost));
        if (!nf.node1) continue;
        CUDA_CHECK(b, cudaMemsetAsync(st->dev[d].nonfinite, 0, sizeof nf, s));
        CUDA_CHECK(b, cudaMemsetAsync(&st->dev[d].nonfinite->key, 0xff, sizeof nf.key, s));
        CUDA_CHECK(b, cudaStreamSynchronize(s));
        if (!st->m || nf.node1 > st->m->g.n) {
            snprintf(b->err, sizeof b->err, "--check-numerics: a kernel produced NaN or Inf");
            return -1;
        }
        const ir_node *n = &st->m->g.nodes[nf.node1 - 1];
        unsigned kind = (unsigned)(nf.key & 3u);
        snprintf(b->err, sizeof b->err, "op '%s': produced %s (element %lld, replica %d, step %lld) at %s:%d:%d",
                 ir_ops[n->op].name, kind == 0 ? "NaN" : kind == 1 ? "Inf" : "-Inf", (long long)(nf.key >> 2),
                 nf.replica, nf.step, n->loc.file ? n->loc.file : "?", n->loc.line, n->loc.col);
        return -1;
    }
    return 0;
}

/* Waits for every stream of every device; past the collective timeout (or
 * on NCCL's asynchronous error) releases the collective flags and aborts NCCL
 * (cuda_nccl_release), so the streams drain, and fails naming the cause. */
static int cuda_sync(rt_backend *b) {
    cuda_state *st = cuda_st(b);
    idle_wait *w = NULL;
    int rc = cuda_nccl_check_pending(b);
    if (rc == 0) rc = idle_start(b, &w);
    double start = now_s(), limit = b->collective_timeout > 0 ? b->collective_timeout : 300.0;
    while (rc == 0 && !idle_wait_until(w, fmin(start + limit, now_s() + POLL_S))) {
        if (cuda_nccl_poll(b) != 0) {
            rc = -1;
        } else if (now_s() - start > limit) {
            snprintf(b->err, sizeof b->err, "timeout after %.0f s: gpu replicas still busy (a collective peer "
                     "never arrived?)", limit);
            rc = -1;
        }
        if (rc != 0) {
            char keep[sizeof b->err];
            memcpy(keep, b->err, sizeof keep);
            cuda_nccl_release(b);
            idle_wait_until(w, now_s() + fmin(limit, 10.0)); /* the streams drain once released */
            memcpy(b->err, keep, sizeof keep);
        }
    }
    if (rc == 0 && w->err[0]) {
        st->failed = 1;
        snprintf(b->err, sizeof b->err, "%s", w->err);
        rc = -1;
    }
    if (w) idle_wait_drop(w);
    if (rc == 0) rc = check_bad_ids(b);
    if (rc == 0) rc = cuda_check_nonfinite(b);
    cuda_stage_settle(st, rc == 0);
    return rc;
}

static const rt_backend_i cuda_iface = {
    .name = "cuda",
    .init = cuda_init,
    .shutdown = cuda_shutdown,
    .alloc = cuda_alloc,
    .dealloc = cuda_dealloc,
    .upload = cuda_traced_upload,
    .download = cuda_traced_download,
    .launch = cuda_traced_launch,
    .supports = cuda_supports,
    .record = cuda_record,
    .wait = cuda_wait,
    .collective = cuda_traced_collective,
    .sync = cuda_sync,
    .trace_arm = cuda_trace_arm,
    .trace_take = cuda_trace_take,
    .graph_begin = cuda_graph_begin,
    .graph_end = cuda_graph_end,
};

rt_backend *rt_backend_cuda(void) {
    rt_backend *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->i = &cuda_iface;
    b->n_devices = 1;
    b->threads_per_device = 1;
    b->replica_total = 1;
    b->collective_timeout = 300.0;
    return b;
}
