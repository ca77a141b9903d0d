/* cuda_graph.c - CUDA graphs for training steps (issue 15): captured once,
 * replayed every step.
 *
 * The session's first train step (the warm-up: cudnnFind, cuBLAS and NCCL set
 * up, which synchronise) runs eagerly. The executor brackets each later train
 * step with graph_begin/graph_end (backend.h). On the second, graph_begin
 * starts a capture on every device's compute stream
 * (cudaStreamCaptureModeRelaxed) and forks the comm and NCCL streams into it
 * with an event; everything the executor then issues (kernels, cuBLAS, cuDNN,
 * stream-ordered scratch, the batch uploads, event record/wait, the grouped
 * NCCL calls) is recorded, not run. graph_end joins the streams back, ends
 * the captures, instantiates each device's graph and launches it. From then
 * on graph_begin replays: it launches each device's instantiated graph and
 * returns 2, and the executor issues nothing for that step.
 *
 * What a graph freezes, and how each changes between steps all the same:
 * - the step counter: kernels that depend on it read it from a device word
 *   per (device, stream) (cuda_device.step_word), not by value: dropout's
 *   mask seed, --check-numerics' reported step and every optimizer update,
 *   which derives on the device (cuda_step.h) its learning rate through the
 *   plan's schedule, the decoupled weight decay (lr * wd), Adam/AdamW's bias
 *   correction, Nadam's and Lamb's corrections and Adagrad's first step.
 *   Before each launch of a graph (and, outside graphs, before the first
 *   launch on a stream that needs a step the word does not hold) a one-thread
 *   kernel writes the host's counter into the word on its stream
 *   (cuda_step_word, outside the graph: the host's counter stays the truth,
 *   e.g. after rt_session_set_step). The host checks `step >= 1` of the
 *   updates when it issues them; a replay with a step below 1 runs eagerly,
 *   which reports it.
 * - the batch: uploads captured in the step copy from pinned memory owned by
 *   the graph (cuda_graph_upload_staged); before each replay the executor's
 *   host batch (a fixed address per input, new contents each step) is copied
 *   there again. Every other address (arenas, slots, collective buffers, flag
 *   and record words, cuDNN workspaces as graph memory nodes) is fixed for
 *   the session.
 * - the flags *training (1 in every train step) and *check_numerics (fixed
 *   per session) decide which kernels were captured: they are kept at the
 *   capture and a change makes graph_begin drop the graph and capture anew.
 * Nothing else a launch reads on the host changes between train steps of a
 * session (cuda_launch.c: shapes, attributes, cached cuDNN algorithms,
 * replica indices; exec.c: the replica that skips collectives under fault
 * injection is fixed per session). Traced steps (--trace) and programs other than train run
 * eagerly and leave the graph as it is.
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
 * capture error from a library, a collective some device never joined, a
 * download inside the step) abandons the captures: nothing ran, graph_end
 * returns 1, the executor issues the same step eagerly, and graphs stay off
 * for the session (one note on stderr).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"

/* ---- the step counter in device memory ---- */

/* queues *word = step on (device, stream) unless the word already holds it */
static int set_step(rt_backend *b, int device, int stream, int64_t step) {
    cuda_device *dev = &cuda_st(b)->dev[device];
    if (dev->step_set[stream] == step) return 0;
    CUDA_CHECK(b, cuda_k_set_step(&dev->step_word[stream], step, dev->stream[stream]));
    dev->step_set[stream] = step;
    return 0;
}

int cuda_step_word(rt_backend *b, int device, int stream, const rt_kernel_args *k, const int64_t **word) {
    cuda_state *st = cuda_st(b);
    cuda_device *dev = &st->dev[device];
    *word = &dev->step_word[stream];
    /* while capturing, the graph reads the word; launch_graph writes it before every launch */
    return st->capturing ? 0 : set_step(b, device, stream, k->step ? *k->step : 0);
}

/* ---- the captured step's uploads ---- */

int cuda_graph_upload_staged(rt_backend *b, int device, int stream, void *dst, const void *src, size_t bytes) {
    cuda_device *d = &cuda_st(b)->dev[device];
    if (bytes == 0) return 0;
    if (d->n_gup == d->cap_gup) {
        int cap = d->cap_gup ? 2 * d->cap_gup : 8;
        cuda_graph_upload *u = realloc(d->gup, (size_t)cap * sizeof *u);
        if (!u) return cuda_fail(b, "realloc(graph uploads)", "out of memory", __FILE__, __LINE__);
        d->gup = u, d->cap_gup = cap;
    }
    cuda_graph_upload *u = &d->gup[d->n_gup];
    CUDA_CHECK(b, cudaHostAlloc(&u->pinned, bytes, cudaHostAllocPortable));
    u->src = src, u->bytes = bytes;
    d->n_gup++;
    memcpy(u->pinned, src, bytes);
    CUDA_CHECK(b, cudaMemcpyAsync(dst, u->pinned, bytes, cudaMemcpyHostToDevice, d->stream[stream]));
    return 0;
}

static void free_uploads(cuda_device *d) {
    for (int i = 0; i < d->n_gup; i++) cudaFreeHost(d->gup[i].pinned);
    d->n_gup = 0;
}

/* ---- capture and replay ---- */

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

/* forgets every device's graph (the last launch finished at the step-end sync) */
static void drop_graphs(cuda_state *st) {
    for (int d = 0; d < st->n; d++) {
        cuda_device *dev = &st->dev[d];
        if (cudaSetDevice(dev->ordinal) != cudaSuccess) continue;
        if (dev->graph_exec) cudaGraphExecDestroy(dev->graph_exec);
        dev->graph_exec = NULL;
        free_uploads(dev);
    }
    st->captured = 0;
}

/* Launches device d's graph on its compute stream: the step words get the
 * host's step on their streams, the graph follows whatever the side streams
 * held (the step-end sync leaves them idle; this keeps the order without
 * relying on it), and the side streams then wait for the graph. */
static int launch_graph(rt_backend *b, int d) {
    cuda_state *st = cuda_st(b);
    cuda_device *dev = &st->dev[d];
    cudaStream_t side[2];
    side_streams(dev, side);
    TRY(cuda_use(b, d));
    if (st->step_ptr)
        for (int s = 0; s < STREAM_COUNT; s++) TRY(set_step(b, d, s, *st->step_ptr));
    for (int k = 0; k < 2; k++) {
        CUDA_CHECK(b, cudaEventRecord(dev->graph_ev[CUDA_GRAPH_JOIN + k], side[k]));
        CUDA_CHECK(b, cudaStreamWaitEvent(dev->stream[STREAM_COMPUTE], dev->graph_ev[CUDA_GRAPH_JOIN + k], 0));
    }
    CUDA_CHECK(b, cudaGraphLaunch(dev->graph_exec, dev->stream[STREAM_COMPUTE]));
    CUDA_CHECK(b, cudaEventRecord(dev->graph_ev[CUDA_GRAPH_DONE], dev->stream[STREAM_COMPUTE]));
    for (int k = 0; k < 2; k++) CUDA_CHECK(b, cudaStreamWaitEvent(side[k], dev->graph_ev[CUDA_GRAPH_DONE], 0));
    return 0;
}

static int flag_value(const int *p) { return p ? *p : 0; }

/* the step captured before, launched again: the batch re-staged into the graph's pinned copies */
static int replay(rt_backend *b) {
    cuda_state *st = cuda_st(b);
    for (int d = 0; d < st->n; d++) {
        cuda_device *dev = &st->dev[d];
        for (int i = 0; i < dev->n_gup; i++) memcpy(dev->gup[i].pinned, dev->gup[i].src, dev->gup[i].bytes);
        TRY(launch_graph(b, d));
    }
    return 0;
}

int cuda_graph_begin(rt_backend *b) {
    cuda_state *st = cuda_st(b);
    if (st->graphs_off) return 1;
    if (st->captured) {
        if (st->step_ptr && *st->step_ptr < 1) return 1; /* eagerly: the updates report it */
        if (flag_value(st->training_ptr) == st->frozen_training && flag_value(st->numerics_ptr) == st->frozen_numerics)
            return replay(b) == 0 ? 2 : -1;
        drop_graphs(st); /* a flag the graph froze changed: capture anew */
    }
    for (int d = 0; d < st->n; d++) {
        TRY(cuda_use(b, d));
        TRY(make_events(b, &st->dev[d]));
        free_uploads(&st->dev[d]);
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
        cudaError_t e = rc ? cudaSuccess : cudaGraphInstantiate(&st->dev[d].graph_exec, g[d], 0);
        if (e != cudaSuccess) rc = cuda_fail(b, "cudaGraphInstantiate(train step)", cudaGetErrorString(e), __FILE__, __LINE__);
        if (rc) snprintf(why, sizeof why, "%s", b->err);
    }
    for (int d = 0; d < n; d++)
        if (g[d]) cudaGraphDestroy(g[d]);
    if (!ok || rc || n < st->n) {
        /* nothing was launched: forget the capture's collectives and errors, run eagerly */
        (void)cudaGetLastError();
        cuda_nccl_forget_pending(b);
        drop_graphs(st);
        st->failed = st->failed_before_capture;
        graphs_off(b, why);
        return 1;
    }
    st->captured = 1;
    st->frozen_training = flag_value(st->training_ptr), st->frozen_numerics = flag_value(st->numerics_ptr);
    for (int d = 0; d < n; d++) TRY(launch_graph(b, d));
    return 0;
}

void cuda_graph_broken(rt_backend *b, const char *why) {
    cuda_state *st = cuda_st(b);
    if (!st->capture_broken[0]) snprintf(st->capture_broken, sizeof st->capture_broken, "%s", why);
}

void cuda_graph_free(cuda_device *d) {
    if (d->graph_exec) cudaGraphExecDestroy(d->graph_exec);
    d->graph_exec = NULL;
    free_uploads(d);
    free(d->gup), d->gup = NULL, d->cap_gup = 0;
    for (int e = 0; e < CUDA_GRAPH_EVENTS; e++)
        if (d->graph_ev[e]) cudaEventDestroy(d->graph_ev[e]), d->graph_ev[e] = NULL;
}
