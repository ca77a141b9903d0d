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
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../ir/devices.h"
#include "cuda_backend.h"
#include "../bad_id.h"
#include "cuda_impl.h"

int cuda_fail(rt_backend *b, const char *call, const char *what, const char *file, int line) {
    snprintf(b->err, sizeof b->err, "%s failed: %s (%s:%d)", call, what, file, line);
    return -1;
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
    CUDA_CHECK(b, cudaStreamCreateWithFlags(&d->nccl_stream, cudaStreamNonBlocking));
    CUDA_CHECK(b, cudaMalloc((void **)&d->flags, CUDA_MAX_PENDING * sizeof *d->flags));
    CUDA_CHECK(b, cudaMemset(d->flags, 0, CUDA_MAX_PENDING * sizeof *d->flags));
    CUDA_CHECK(b, cudaMalloc((void **)&d->bad_id, 3 * sizeof *d->bad_id));
    CUDA_CHECK(b, cudaMemset(d->bad_id, 0, 3 * sizeof *d->bad_id));
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
    if (d->nccl_stream) cudaStreamDestroy(d->nccl_stream);
    if (d->flags) cudaFree(d->flags);
    if (d->bad_id) cudaFree(d->bad_id);
}

static void cuda_shutdown(rt_backend *b) {
    cuda_state *st = cuda_st(b);
    if (!st) return;
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

static int copy(rt_backend *b, int device, int stream, void *dst, const void *src, size_t bytes,
                enum cudaMemcpyKind kind) {
    TRY(cuda_use(b, device));
    CUDA_CHECK(b, cudaMemcpyAsync(dst, src, bytes, kind, cuda_st(b)->dev[device].stream[stream]));
    return 0;
}

int cuda_upload(rt_backend *b, int device, int stream, void *dst, const void *src, size_t bytes) {
    return copy(b, device, stream, dst, src, bytes, cudaMemcpyHostToDevice);
}

int cuda_download(rt_backend *b, int device, int stream, void *dst, const void *src, size_t bytes) {
    return copy(b, device, stream, dst, src, bytes, cudaMemcpyDeviceToHost);
}

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
    TRY(cuda_use(b, device));
    CUDA_CHECK(b, cudaStreamWaitEvent(st->dev[device].stream[stream], st->dev[from].events[event], 0));
    return 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 1 when every stream of device d is idle, 0 when busy, -1 on error */
static int device_idle(rt_backend *b, cuda_device *d) {
    cudaStream_t all[] = {d->stream[STREAM_COMPUTE], d->stream[STREAM_COMM], d->nccl_stream};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        cudaError_t e = cudaStreamQuery(all[i]);
        if (e == cudaErrorNotReady) return 0;
        CUDA_CHECK(b, e);
    }
    return 1;
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
        CUDA_CHECK(b, cudaMemset(st->dev[d].bad_id, 0, sizeof bad));
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

/* Polls every stream until idle; past the collective timeout names the
 * devices still busy (a peer that never joined a collective hangs NCCL). */
static int cuda_sync(rt_backend *b) {
    cuda_state *st = cuda_st(b);
    TRY(cuda_nccl_check_pending(b));
    double start = now_s(), limit = b->collective_timeout > 0 ? b->collective_timeout : 300.0;
    for (;;) {
        int busy = -1, rc;
        for (int d = 0; d < st->n; d++) {
            TRY(cuda_use(b, d));
            if ((rc = device_idle(b, &st->dev[d])) < 0) return -1;
            if (rc == 0 && busy < 0) busy = d;
        }
        if (busy < 0) return check_bad_ids(b);
        TRY(cuda_nccl_poll(b));
        if (now_s() - start > limit) {
            cuda_nccl_abort(b);
            snprintf(b->err, sizeof b->err, "timeout after %.0f s: gpu replica %d still busy (a collective peer "
                     "never arrived?)", limit, b->replica_base + busy);
            return -1;
        }
        struct timespec nap = {0, 200000};
        nanosleep(&nap, NULL);
    }
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
