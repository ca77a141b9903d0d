/* cuda_graph.c - CUDA graphs for training steps (issue 15).
 *
 * After the first (warm-up) train step of a session, the executor brackets
 * each train step with graph_begin/graph_end (backend.h). graph_begin starts
 * a capture on every device's compute stream (cudaStreamCaptureModeRelaxed)
 * and forks the comm and NCCL streams into it with an event; everything the
 * executor then issues (kernels, cuBLAS, cuDNN, stream-ordered scratch,
 * pinned-staged batch uploads, event record/wait, the grouped NCCL calls) is
 * recorded, not run. graph_end joins the streams back, ends the captures and
 * either updates the device's instantiated graph in place
 * (cudaGraphExecUpdate: same topology, new parameters) or, when the update
 * is refused (topology or bindings changed, memory nodes), instantiates it
 * anew; then it launches each device's graph on its compute stream and makes
 * the other streams wait for it.
 *
 * The step is captured every step, not once: kernels take the step counter by
 * value (Adam's bias correction and the learning-rate schedule computed on the
 * host, dropout's mask seed, --check-numerics' step), so a graph replayed as
 * captured would train with a frozen step: a wrong answer. The capture costs
 * host time only; the GPU sees one launch per device instead of one per op.
 *
 * Collectives: the flag words the eager path uses (cuStreamWaitValue32 with a
 * sequence number) would be baked into the graph and pass at once on the next
 * replay, and a wait node and the write it waits for are independent graph
 * branches the graph may serialise (deadlock). So while capturing, a device's
 * collective() ends its comm stream's branch in an empty node `at` and
 * continues it from a fresh empty node `cont`; when the last local device
 * arrives, each NCCL stream is made to depend on its device's `at`, the
 * group is captured, and edges NCCL nodes -> `cont` are added to the graph
 * (cuda_nccl.c). The graph then holds exactly the order the flags enforce.
 *
 * Anything that cannot be captured (a wait on another device's event, a
 * capture error from a library, a collective some device never joined)
 * abandons the captures: nothing ran, graph_end returns 1, the executor issues
 * the same step eagerly, and graphs stay off for the session (one note on
 * stderr).
 */
#include <stdio.h>
#include <string.h>

#include "cuda_impl.h"

static int make_events(rt_backend *b, cuda_device *d) {
    if (d->graph_ev[0]) return 0;
    for (int e = 0; e < CUDA_GRAPH_EVENTS; e++)
        CUDA_CHECK(b, cudaEventCreateWithFlags(&d->graph_ev[e], cudaEventDisableTiming));
    return 0;
}

/* the comm and NCCL streams of d, which join the capture of its compute stream */
static void side_streams(cuda_device *d, cudaStream_t out[2]) {
    out[0] = d->stream[STREAM_COMM], out[1] = d->nccl_stream;
}

int cuda_graph_begin(rt_backend *b) {
    cuda_state *st = cuda_st(b);
    if (st->graphs_off) return 1;
    for (int d = 0; d < st->n; d++) {
        TRY(cuda_use(b, d));
        TRY(make_events(b, &st->dev[d]));
    }
    st->failed_before_capture = st->failed;
    int begun = 0, rc = 0;
    for (int d = 0; d < st->n && rc == 0; d++) {
        cuda_device *dev = &st->dev[d];
        cudaStream_t side[2];
        side_streams(dev, side);
        rc = cuda_use(b, d);
        cudaError_t e = rc ? cudaSuccess : cudaStreamBeginCapture(dev->stream[STREAM_COMPUTE], cudaStreamCaptureModeRelaxed);
        if (e == cudaSuccess && rc == 0) begun = d + 1;
        if (e == cudaSuccess && rc == 0) e = cudaEventRecord(dev->graph_ev[CUDA_GRAPH_FORK], dev->stream[STREAM_COMPUTE]);
        for (int k = 0; k < 2 && e == cudaSuccess && rc == 0; k++)
            e = cudaStreamWaitEvent(side[k], dev->graph_ev[CUDA_GRAPH_FORK], 0);
        if (e != cudaSuccess) rc = cuda_fail(b, "cudaStreamBeginCapture(train step)", cudaGetErrorString(e), __FILE__, __LINE__);
    }
    st->capturing = begun;
    if (rc == 0) return 0;
    /* could not start: drop what began, run the step eagerly, graphs off */
    cuda_graph_end(b, 0);
    return 1;
}

/* ends device d's capture; *g is the graph or NULL when the capture failed */
static void end_one(cuda_device *dev, int ok, cudaGraph_t *g) {
    cudaStream_t side[2];
    side_streams(dev, side);
    *g = NULL;
    cudaError_t e = cudaSetDevice(dev->ordinal);
    for (int k = 0; k < 2 && e == cudaSuccess; k++) {
        e = cudaEventRecord(dev->graph_ev[CUDA_GRAPH_JOIN + k], side[k]);
        if (e == cudaSuccess) e = cudaStreamWaitEvent(dev->stream[STREAM_COMPUTE], dev->graph_ev[CUDA_GRAPH_JOIN + k], 0);
    }
    cudaGraph_t got = NULL;
    cudaError_t end = cudaStreamEndCapture(dev->stream[STREAM_COMPUTE], &got); /* always ends it */
    if (e == cudaSuccess && end == cudaSuccess && ok) *g = got;
    else if (got) cudaGraphDestroy(got);
}

/* the captured graph g becomes d's executable graph: updated in place, else instantiated */
static int install(rt_backend *b, cuda_device *dev, cudaGraph_t g) {
    if (dev->graph_exec) {
        cudaGraphExecUpdateResultInfo info;
        memset(&info, 0, sizeof info);
        if (cudaGraphExecUpdate(dev->graph_exec, g, &info) == cudaSuccess && info.result == cudaGraphExecUpdateSuccess)
            return 0;
        (void)cudaGetLastError(); /* a refused update is not an error: instantiate */
        cudaGraphExecDestroy(dev->graph_exec); /* the last launch finished at the step-end sync */
        dev->graph_exec = NULL;
    }
    CUDA_CHECK(b, cudaGraphInstantiate(&dev->graph_exec, g, 0));
    return 0;
}

static void graphs_off(rt_backend *b, const char *why) {
    cuda_state *st = cuda_st(b);
    if (!st->graphs_off)
        fprintf(stderr, "mgc: CUDA graphs off for this session, steps run eagerly: %s\n", why[0] ? why : "capture failed");
    st->graphs_off = 1;
}

int cuda_graph_end(rt_backend *b, int issued) {
    cuda_state *st = cuda_st(b);
    int n = st->capturing, ok = issued && !st->capture_broken[0];
    char why[sizeof b->err];
    snprintf(why, sizeof why, "%s", st->capture_broken[0] ? st->capture_broken : issued ? "" : b->err);
    if (ok && cuda_nccl_any_pending(b)) ok = 0, snprintf(why, sizeof why, "a collective was not joined by every device");
    cudaGraph_t g[CUDA_MAX_DEVICES];
    for (int d = 0; d < n; d++) {
        end_one(&st->dev[d], ok, &g[d]);
        if (!g[d] && ok) ok = 0, snprintf(why, sizeof why, "cudaStreamEndCapture failed on gpu:%d", st->dev[d].ordinal);
    }
    st->capturing = 0;
    st->capture_broken[0] = 0;
    int rc = 0;
    for (int d = 0; d < n && ok && rc == 0; d++) {
        rc = cuda_use(b, d);
        if (rc == 0) rc = install(b, &st->dev[d], g[d]);
        if (rc) snprintf(why, sizeof why, "%s", b->err);
    }
    for (int d = 0; d < n; d++)
        if (g[d]) cudaGraphDestroy(g[d]);
    if (!ok || rc || n < st->n) {
        /* nothing was launched: forget the capture's collectives and errors, run eagerly */
        (void)cudaGetLastError();
        cuda_nccl_forget_pending(b);
        st->failed = st->failed_before_capture;
        graphs_off(b, why);
        return 1;
    }
    for (int d = 0; d < n; d++) {
        cuda_device *dev = &st->dev[d];
        cudaStream_t side[2];
        side_streams(dev, side);
        TRY(cuda_use(b, d));
        /* the graph also follows whatever the side streams held before the capture (the
         * step-end sync leaves them idle; this keeps the order without relying on it) */
        for (int k = 0; k < 2; k++) {
            CUDA_CHECK(b, cudaEventRecord(dev->graph_ev[CUDA_GRAPH_JOIN + k], side[k]));
            CUDA_CHECK(b, cudaStreamWaitEvent(dev->stream[STREAM_COMPUTE], dev->graph_ev[CUDA_GRAPH_JOIN + k], 0));
        }
        CUDA_CHECK(b, cudaGraphLaunch(dev->graph_exec, dev->stream[STREAM_COMPUTE]));
        CUDA_CHECK(b, cudaEventRecord(dev->graph_ev[CUDA_GRAPH_DONE], dev->stream[STREAM_COMPUTE]));
        for (int k = 0; k < 2; k++) CUDA_CHECK(b, cudaStreamWaitEvent(side[k], dev->graph_ev[CUDA_GRAPH_DONE], 0));
    }
    return 0;
}

void cuda_graph_broken(rt_backend *b, const char *why) {
    cuda_state *st = cuda_st(b);
    if (!st->capture_broken[0]) snprintf(st->capture_broken, sizeof st->capture_broken, "%s", why);
}

void cuda_graph_free(cuda_device *d) {
    if (d->graph_exec) cudaGraphExecDestroy(d->graph_exec);
    d->graph_exec = NULL;
    for (int e = 0; e < CUDA_GRAPH_EVENTS; e++)
        if (d->graph_ev[e]) cudaEventDestroy(d->graph_ev[e]), d->graph_ev[e] = NULL;
}
