/* cuda_trace.c - tracing on the CUDA backend (backend.h, trace_arm): each
 * traced piece of work gets a pair of timing events recorded around it on its
 * stream; trace_take, after sync, turns their device times into host
 * CLOCK_MONOTONIC through a reference event recorded and waited for then. */
#include <stdlib.h>
#include <time.h>

#include "cuda_impl.h"

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void disarm_device(cuda_device *d, int n) {
    if (cudaSetDevice(d->ordinal) != cudaSuccess) return;
    for (int k = 0; d->trace && k < n; k++) {
        if (d->trace[k].start) cudaEventDestroy(d->trace[k].start);
        if (d->trace[k].end) cudaEventDestroy(d->trace[k].end);
    }
    if (d->trace_ref) cudaEventDestroy(d->trace_ref);
    free(d->trace);
    d->trace = NULL, d->trace_n = 0, d->trace_ref = NULL;
}

static int arm_device(rt_backend *b, cuda_device *d, int n) {
    d->trace = calloc((size_t)n, sizeof *d->trace);
    if (!d->trace) return cuda_fail(b, "calloc(trace)", "out of memory", __FILE__, __LINE__);
    CUDA_CHECK(b, cudaSetDevice(d->ordinal));
    CUDA_CHECK(b, cudaEventCreate(&d->trace_ref));
    for (int k = 0; k < n; k++) {
        CUDA_CHECK(b, cudaEventCreate(&d->trace[k].start));
        CUDA_CHECK(b, cudaEventCreate(&d->trace[k].end));
    }
    return 0;
}

int cuda_trace_arm(rt_backend *b, int cap) {
    cuda_state *st = cuda_st(b);
    for (int d = 0; d < st->n; d++) disarm_device(&st->dev[d], st->trace_cap * STREAM_COUNT);
    st->trace_cap = 0;
    for (int d = 0; cap > 0 && d < st->n; d++)
        if (arm_device(b, &st->dev[d], cap * STREAM_COUNT)) {
            for (int k = 0; k <= d; k++) disarm_device(&st->dev[k], cap * STREAM_COUNT);
            return -1;
        }
    st->trace_cap = cap;
    return 0;
}

/* The record for the work about to be queued on (device, stream), with its
 * start event recorded; NULL when untraced or the buffer is full. */
static int trace_begin(rt_backend *b, int device, int stream, cuda_trace_rec **rec) {
    cuda_state *st = cuda_st(b);
    cuda_device *d = &st->dev[device];
    *rec = NULL;
    if (!st->trace_cap || b->trace_node < 0 || d->trace_n >= st->trace_cap * STREAM_COUNT) return 0;
    cuda_trace_rec *r = &d->trace[d->trace_n++];
    r->node = b->trace_node, r->stream = stream, r->step = b->trace_step;
    TRY(cuda_use(b, device));
    CUDA_CHECK(b, cudaEventRecord(r->start, d->stream[stream]));
    *rec = r;
    return 0;
}

static int trace_end(rt_backend *b, int device, int stream, cuda_trace_rec *r, int rc) {
    if (rc || !r) return rc;
    TRY(cuda_use(b, device));
    CUDA_CHECK(b, cudaEventRecord(r->end, cuda_st(b)->dev[device].stream[stream]));
    return 0;
}

int cuda_traced_launch(rt_backend *b, int device, int stream, const rt_kernel_args *k) {
    cuda_trace_rec *r;
    TRY(trace_begin(b, device, stream, &r));
    return trace_end(b, device, stream, r, cuda_launch(b, device, stream, k));
}

int cuda_traced_upload(rt_backend *b, int device, int stream, void *dst, const void *src, size_t bytes) {
    cuda_trace_rec *r;
    TRY(trace_begin(b, device, stream, &r));
    return trace_end(b, device, stream, r, cuda_upload(b, device, stream, dst, src, bytes));
}

int cuda_traced_download(rt_backend *b, int device, int stream, void *dst, const void *src, size_t bytes) {
    cuda_trace_rec *r;
    TRY(trace_begin(b, device, stream, &r));
    return trace_end(b, device, stream, r, cuda_download(b, device, stream, dst, src, bytes));
}

/* the comm stream waits for the group's completion flag, so the end event
 * falls after the NCCL call of every local device */
int cuda_traced_collective(rt_backend *b, int device, int stream, const rt_coll_args *c) {
    cuda_trace_rec *r;
    TRY(trace_begin(b, device, stream, &r));
    return trace_end(b, device, stream, r, cuda_collective(b, device, stream, c));
}

/* Host time of device event e: the reference was recorded at host time ref_ns. */
static int host_ns(rt_backend *b, cudaEvent_t ref, int64_t ref_ns, cudaEvent_t e, int64_t *out) {
    float ms = 0;
    CUDA_CHECK(b, cudaEventElapsedTime(&ms, e, ref));
    *out = ref_ns - (int64_t)((double)ms * 1e6);
    return 0;
}

int cuda_trace_take(rt_backend *b, rt_trace_span *out, int cap, int64_t step) {
    (void)step; /* train steps run one at a time here (no mark/sync_to): every record is of a step that ended */
    cuda_state *st = cuda_st(b);
    int n = 0;
    for (int dv = 0; dv < st->n; dv++) {
        cuda_device *d = &st->dev[dv];
        if (!d->trace_n) continue;
        TRY(cuda_use(b, dv));
        CUDA_CHECK(b, cudaEventRecord(d->trace_ref, d->stream[STREAM_COMPUTE]));
        CUDA_CHECK(b, cudaEventSynchronize(d->trace_ref));
        int64_t ref_ns = now_ns();
        for (int k = 0; k < d->trace_n && n < cap; k++, n++) {
            const cuda_trace_rec *r = &d->trace[k];
            out[n] = (rt_trace_span){.node = r->node, .device = dv, .stream = r->stream, .step = r->step};
            TRY(host_ns(b, d->trace_ref, ref_ns, r->start, &out[n].start_ns));
            TRY(host_ns(b, d->trace_ref, ref_ns, r->end, &out[n].end_ns));
        }
        d->trace_n = 0;
    }
    return n;
}
