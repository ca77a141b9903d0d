/* cuda_nccl.c - NCCL communicators and the grouped collectives.
 *
 * One process: ncclCommInitAll over the local GPUs. Several processes
 * (b->ip set): rank 0 makes an ncclUniqueId, b->ip->broadcast hands it to the
 * others, and every local device joins with ncclCommInitRank as global rank
 * replica_base + d, so one communicator spans every replica and NCCL does the
 * whole hierarchy (NVLink within a machine, network across).
 *
 * A single host thread may drive every local device, and NCCL needs the calls
 * of one collective on all local devices inside one ncclGroupStart/End. So a
 * device's collective() only marks its place in its comm stream: it records a
 * `ready` event there, then makes the stream wait (cuStreamWaitValue32) until
 * the slot's flag word reaches the slot's sequence number. When the last local
 * device of the group has called, the group is issued on each device's NCCL
 * stream (after its ready event) and each stream then writes the flag word,
 * releasing the comm streams. Host submission order thus never matters.
 */
#include <string.h>

#include "cuda_impl.h"

static ncclDataType_t nccl_type(ir_dtype t) {
    switch (t) {
    case IR_F32: return ncclFloat32;
    case IR_I32: return ncclInt32;
    case IR_F64: return ncclFloat64;
    default: return ncclUint8;
    }
}

static int init_multi_process(rt_backend *b, cuda_state *st) {
    const rt_interprocess *ip = b->ip;
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (ip->rank == 0) NCCL_CHECK(b, ncclGetUniqueId(&id));
    if (ip->broadcast(ip->ctx, &id, (int64_t)sizeof id, 0, b->collective_timeout, "nccl unique id", b->err,
                      sizeof b->err) != 0)
        return -1;
    /* issue 15: every path out of the group passes ncclGroupEnd */
    NCCL_CHECK(b, ncclGroupStart());
    int rc = 0;
    for (int d = 0; d < st->n && rc == 0; d++) {
        cudaError_t ce = cudaSetDevice(st->dev[d].ordinal);
        ncclResult_t ne = ce == cudaSuccess ? ncclCommInitRank(&st->dev[d].comm, b->replica_total, id, b->replica_base + d)
                                            : ncclSuccess;
        if (ce != cudaSuccess) rc = cuda_fail(b, "cudaSetDevice", cudaGetErrorString(ce), __FILE__, __LINE__);
        else if (ne != ncclSuccess) rc = cuda_fail(b, "ncclCommInitRank", ncclGetErrorString(ne), __FILE__, __LINE__);
    }
    ncclResult_t end = ncclGroupEnd();
    TRY(rc);
    NCCL_CHECK(b, end);
    return 0;
}

int cuda_nccl_init(rt_backend *b) {
    cuda_state *st = cuda_st(b);
    if (b->ip) return init_multi_process(b, st);
    ncclComm_t comms[CUDA_MAX_DEVICES];
    int ordinals[CUDA_MAX_DEVICES];
    for (int d = 0; d < st->n; d++) ordinals[d] = st->dev[d].ordinal;
    NCCL_CHECK(b, ncclCommInitAll(comms, st->n, ordinals));
    for (int d = 0; d < st->n; d++) st->dev[d].comm = comms[d];
    return 0;
}

void cuda_nccl_free(rt_backend *b) {
    cuda_state *st = cuda_st(b);
    for (int d = 0; d < st->n; d++)
        if (st->dev[d].comm) ncclCommDestroy(st->dev[d].comm), st->dev[d].comm = NULL;
}

void cuda_nccl_abort(rt_backend *b) {
    cuda_state *st = cuda_st(b);
    for (int d = 0; d < st->n; d++)
        if (st->dev[d].comm) ncclCommAbort(st->dev[d].comm), st->dev[d].comm = NULL;
}

void cuda_nccl_release(rt_backend *b) {
    cuda_state *st = cuda_st(b);
    for (int d = 0; d < st->n; d++) {
        cuda_device *dev = &st->dev[d];
        cudaStream_t rs = NULL;
        if (!dev->flags || cudaSetDevice(dev->ordinal) != cudaSuccess) continue;
        /* all ones passes every GEQ wait; on a stream of its own, since the
         * device's streams may be the ones blocked */
        if (cudaStreamCreateWithFlags(&rs, cudaStreamNonBlocking) == cudaSuccess) {
            cudaMemsetAsync(dev->flags, 0xff, CUDA_MAX_PENDING * sizeof *dev->flags, rs);
            cudaStreamDestroy(rs); /* its work still runs; the stream goes once done */
        }
    }
    (void)cudaGetLastError(); /* failures here must not surface as some later launch's */
    pthread_mutex_lock(&st->lock);
    for (int p = 0; p < CUDA_MAX_PENDING; p++) st->pending[p].used = 0, memset(st->pending[p].buf, 0, sizeof st->pending[p].buf);
    pthread_mutex_unlock(&st->lock);
    cuda_nccl_abort(b);
}

int cuda_nccl_any_pending(rt_backend *b) {
    cuda_state *st = cuda_st(b);
    int any = 0;
    pthread_mutex_lock(&st->lock);
    for (int p = 0; p < CUDA_MAX_PENDING; p++) any |= st->pending[p].used;
    pthread_mutex_unlock(&st->lock);
    return any;
}

int cuda_nccl_poll(rt_backend *b) {
    cuda_state *st = cuda_st(b);
    for (int d = 0; d < st->n; d++) {
        ncclResult_t async = ncclSuccess;
        if (!st->dev[d].comm) continue;
        NCCL_CHECK(b, ncclCommGetAsyncError(st->dev[d].comm, &async));
        if (async != ncclSuccess) {
            snprintf(b->err, sizeof b->err, "NCCL on gpu replica %d: %s (%s)", b->replica_base + d,
                     ncclGetErrorString(async), ncclGetLastError(st->dev[d].comm));
            cuda_nccl_abort(b);
            return -1;
        }
    }
    return 0;
}

static int same_call(const rt_coll_args *a, const rt_coll_args *c) {
    return a->kind == c->kind && a->group == c->group && a->count == c->count && a->dtype == c->dtype;
}

/* the slot this device's call joins: the oldest matching one it has not joined, else a free one */
static int find_slot(cuda_state *st, int device, const rt_coll_args *c) {
    int free_slot = -1;
    for (int p = 0; p < CUDA_MAX_PENDING; p++) {
        cuda_pending *q = &st->pending[p];
        if (q->used && same_call(&q->args, c) && !q->buf[device]) return p;
        if (!q->used && free_slot < 0) free_slot = p;
    }
    return free_slot;
}

static int issue_one(rt_backend *b, cuda_pending *q, int d) {
    cuda_device *dev = &cuda_st(b)->dev[d];
    const rt_coll_args *c = &q->args;
    void *buf = q->buf[d];
    if (c->kind == COLL_BROADCAST) {
        NCCL_CHECK(b, ncclBroadcast(buf, buf, (size_t)c->count, nccl_type(c->dtype), c->root, dev->comm,
                                    dev->nccl_stream));
    } else if (c->kind == COLL_ALL_GATHER) { /* in place: this replica's block is already in buf */
        size_t block = (size_t)(c->count / b->replica_total);
        char *mine = (char *)buf + (size_t)(b->replica_base + d) * block * ir_dtype_size(c->dtype);
        NCCL_CHECK(b, ncclAllGather(mine, buf, block, nccl_type(c->dtype), dev->comm, dev->nccl_stream));
    } else {
        NCCL_CHECK(b, ncclAllReduce(buf, buf, (size_t)c->count, nccl_type(c->dtype), c->mean ? ncclAvg : ncclSum,
                                    dev->comm, dev->nccl_stream));
    }
    return 0;
}

/* ---- while a train step is captured (cuda_graph.c, issue 15) ----
 * No flag words (their sequence numbers would be baked into the graph): the
 * comm stream's branch ends in an empty node `at` and goes on from an empty
 * node `cont`; the NCCL stream depends on `at`, and the captured NCCL nodes
 * get edges to `cont`, which the comm stream's later work hangs from. */
static int capture_info(rt_backend *b, cudaStream_t s, cudaGraph_t *g, const cudaGraphNode_t **deps, size_t *n) {
    enum cudaStreamCaptureStatus status;
    CUDA_CHECK(b, cudaStreamGetCaptureInfo(s, &status, NULL, g, deps, NULL, n));
    if (status != cudaStreamCaptureStatusActive) {
        snprintf(b->err, sizeof b->err, "collective: the stream is not being captured (status %d)", (int)status);
        return -1;
    }
    return 0;
}

static int join_captured(rt_backend *b, cuda_pending *q, int device, cudaStream_t s) {
    cudaGraph_t g;
    const cudaGraphNode_t *deps;
    size_t n;
    TRY(capture_info(b, s, &g, &deps, &n));
    CUDA_CHECK(b, cudaGraphAddEmptyNode(&q->at[device], g, deps, n));
    CUDA_CHECK(b, cudaGraphAddEmptyNode(&q->cont[device], g, NULL, 0));
    CUDA_CHECK(b, cudaStreamUpdateCaptureDependencies(s, &q->cont[device], NULL, 1, cudaStreamSetCaptureDependencies));
    return 0;
}

static int flush_captured(rt_backend *b, int p) {
    cuda_state *st = cuda_st(b);
    cuda_pending *q = &st->pending[p];
    for (int d = 0; d < st->n; d++) {
        TRY(cuda_use(b, d));
        CUDA_CHECK(b, cudaStreamUpdateCaptureDependencies(st->dev[d].nccl_stream, &q->at[d], NULL, 1,
                                                          cudaStreamAddCaptureDependencies));
    }
    NCCL_CHECK(b, ncclGroupStart());
    int rc = 0;
    for (int d = 0; d < st->n && rc == 0; d++) rc = issue_one(b, q, d);
    ncclResult_t end = ncclGroupEnd();
    TRY(rc);
    NCCL_CHECK(b, end);
    for (int d = 0; d < st->n; d++) {
        cudaGraph_t g;
        const cudaGraphNode_t *deps;
        size_t n;
        TRY(cuda_use(b, d));
        TRY(capture_info(b, st->dev[d].nccl_stream, &g, &deps, &n));
        for (size_t k = 0; k < n; k++) CUDA_CHECK(b, cudaGraphAddDependencies(g, &deps[k], &q->cont[d], NULL, 1));
    }
    q->used = 0;
    memset(q->buf, 0, sizeof q->buf);
    return 0;
}

/* every local device has called: run the group and release the comm streams */
static int flush(rt_backend *b, int p) {
    cuda_state *st = cuda_st(b);
    cuda_pending *q = &st->pending[p];
    if (st->capturing) return flush_captured(b, p);
    for (int d = 0; d < st->n; d++) {
        TRY(cuda_use(b, d));
        CUDA_CHECK(b, cudaStreamWaitEvent(st->dev[d].nccl_stream, q->ready[d], 0));
    }
    NCCL_CHECK(b, ncclGroupStart());
    int rc = 0;
    for (int d = 0; d < st->n && rc == 0; d++) rc = issue_one(b, q, d);
    ncclResult_t end = ncclGroupEnd();
    TRY(rc);
    NCCL_CHECK(b, end);
    for (int d = 0; d < st->n; d++) {
        cuda_device *dev = &st->dev[d];
        TRY(cuda_use(b, d));
        CU_CHECK(b, st->write_value((CUstream)dev->nccl_stream, (CUdeviceptr)(uintptr_t)(dev->flags + p), q->seq,
                                    CU_STREAM_WRITE_VALUE_DEFAULT));
    }
    q->used = 0;
    memset(q->buf, 0, sizeof q->buf);
    return 0;
}

/* joins slot p from device on its stream: ready event, then wait for the flag */
static int join(rt_backend *b, int p, int device, int stream, const rt_coll_args *c) {
    cuda_state *st = cuda_st(b);
    cuda_pending *q = &st->pending[p];
    cuda_device *dev = &st->dev[device];
    if (!q->used) {
        q->used = 1, q->args = *c, q->arrived = 0, q->seq++;
    }
    TRY(cuda_use(b, device));
    if (st->capturing) {
        TRY(join_captured(b, q, device, dev->stream[stream]));
    } else {
        if (!q->ready[device]) CUDA_CHECK(b, cudaEventCreateWithFlags(&q->ready[device], cudaEventDisableTiming));
        CUDA_CHECK(b, cudaEventRecord(q->ready[device], dev->stream[stream]));
        CU_CHECK(b, st->wait_value((CUstream)dev->stream[stream], (CUdeviceptr)(uintptr_t)(dev->flags + p), q->seq,
                                   CU_STREAM_WAIT_VALUE_GEQ));
    }
    q->buf[device] = c->buf;
    q->arrived++;
    return q->arrived == st->n ? flush(b, p) : 0;
}

int cuda_collective(rt_backend *b, int device, int stream, const rt_coll_args *c) {
    cuda_state *st = cuda_st(b);
    pthread_mutex_lock(&st->lock);
    int p = find_slot(st, device, c), rc;
    if (p < 0) {
        snprintf(b->err, sizeof b->err, "%s: more than %d collectives waiting for local devices", c->label,
                 CUDA_MAX_PENDING);
        rc = -1;
    } else {
        rc = join(b, p, device, stream, c);
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

int cuda_nccl_check_pending(rt_backend *b) {
    cuda_state *st = cuda_st(b);
    pthread_mutex_lock(&st->lock);
    for (int p = 0; p < CUDA_MAX_PENDING; p++) {
        cuda_pending *q = &st->pending[p];
        if (!q->used) continue;
        size_t at = (size_t)snprintf(b->err, sizeof b->err, "%s: local gpu replicas never joined:", q->args.label);
        for (int d = 0; d < st->n && at < sizeof b->err; d++)
            if (!q->buf[d]) at += (size_t)snprintf(b->err + at, sizeof b->err - at, " %d", b->replica_base + d);
        pthread_mutex_unlock(&st->lock);
        return -1;
    }
    pthread_mutex_unlock(&st->lock);
    return 0;
}

void cuda_nccl_forget_pending(rt_backend *b) {
    cuda_state *st = cuda_st(b);
    pthread_mutex_lock(&st->lock);
    for (int p = 0; p < CUDA_MAX_PENDING; p++) st->pending[p].used = 0, memset(st->pending[p].buf, 0, sizeof st->pending[p].buf);
    pthread_mutex_unlock(&st->lock);
}
