/* cuda_stage.c - pinned staging of host copies (issue 15).
 *
 * cudaMemcpyAsync from or to pageable memory is not asynchronous: the driver
 * copies through its own pinned buffer and the host waits. So each upload is
 * first copied into a pinned chunk of its device and queued from there, and
 * each download lands in such a chunk and is copied to its destination by
 * sync once every stream is idle (a download's bytes are the caller's after
 * sync, backend.h). Chunks are handed out bump-pointer style and reused after
 * each sync; when a round needed more than one, the next round gets one chunk
 * of the whole size. Copies larger than STAGE_MAX go straight from pageable
 * memory (correct, the driver then waits) rather than pin that much. */
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"

enum { STAGE_ALIGN = 256, STAGE_MIN = 1 << 20 };
static const size_t STAGE_MAX = (size_t)64 << 20;

int cuda_stage_init(rt_backend *b, cuda_device *d) {
    (void)b;
    memset(&d->stage, 0, sizeof d->stage);
    pthread_mutex_init(&d->stage.lock, NULL);
    return 0;
}

void cuda_stage_free(cuda_device *d) {
    cuda_stage *g = &d->stage;
    for (int i = 0; i < g->n_full; i++) cudaFreeHost(g->full[i]);
    if (g->buf) cudaFreeHost(g->buf);
    free(g->full), free(g->rb);
    pthread_mutex_destroy(&g->lock);
    memset(g, 0, sizeof *g);
}

/* bytes of pinned memory on the current device's chunk (locked by the caller) */
static int take(rt_backend *b, cuda_stage *g, size_t bytes, char **out) {
    size_t need = (bytes + STAGE_ALIGN - 1) / STAGE_ALIGN * STAGE_ALIGN;
    if (!g->buf || g->used + need > g->cap) {
        if (g->buf) {
            if (g->n_full == g->cap_full) {
                int cap = g->cap_full ? 2 * g->cap_full : 8;
                void **f = realloc(g->full, (size_t)cap * sizeof *f);
                if (!f) return cuda_fail(b, "realloc(staging)", "out of memory", __FILE__, __LINE__);
                g->full = f, g->cap_full = cap;
            }
            g->full[g->n_full++] = g->buf; /* its copies may still be in flight */
            g->buf = NULL;
        }
        size_t cap = need > 2 * g->cap ? need : 2 * g->cap;
        if (cap < STAGE_MIN) cap = STAGE_MIN;
        g->cap = g->used = 0;
        CUDA_CHECK(b, cudaHostAlloc((void **)&g->buf, cap, cudaHostAllocPortable));
        g->cap = cap;
    }
    *out = g->buf + g->used;
    g->used += need, g->round += need;
    return 0;
}

int cuda_upload(rt_backend *b, int device, int stream, void *dst, const void *src, size_t bytes) {
    cuda_device *d = &cuda_st(b)->dev[device];
    TRY(cuda_use(b, device));
    /* a captured step (cuda_graph.c) stages every size into pinned memory of the graph's own,
     * which each replay refills from src */
    if (cuda_st(b)->capturing) return cuda_graph_upload_staged(b, device, stream, dst, src, bytes);
    if (bytes > STAGE_MAX || bytes == 0) {
        CUDA_CHECK(b, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, d->stream[stream]));
        return 0;
    }
    char *p;
    pthread_mutex_lock(&d->stage.lock);
    int rc = take(b, &d->stage, bytes, &p);
    pthread_mutex_unlock(&d->stage.lock);
    TRY(rc);
    memcpy(p, src, bytes);
    CUDA_CHECK(b, cudaMemcpyAsync(dst, p, bytes, cudaMemcpyHostToDevice, d->stream[stream]));
    return 0;
}

int cuda_download(rt_backend *b, int device, int stream, void *dst, const void *src, size_t bytes) {
    cuda_device *d = &cuda_st(b)->dev[device];
    cuda_stage *g = &d->stage;
    TRY(cuda_use(b, device));
    if (cuda_st(b)->capturing) { /* a replay would not copy it out: not a graph (cuda_graph.c) */
        cuda_graph_broken(b, "a download inside the train step");
        return 0;
    }
    if (bytes > STAGE_MAX || bytes == 0) {
        CUDA_CHECK(b, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, d->stream[stream]));
        return 0;
    }
    char *p = NULL;
    pthread_mutex_lock(&g->lock);
    int rc = take(b, g, bytes, &p);
    if (rc == 0 && g->n_rb == g->cap_rb) {
        int cap = g->cap_rb ? 2 * g->cap_rb : 16;
        cuda_readback *r = realloc(g->rb, (size_t)cap * sizeof *r);
        if (r) g->rb = r, g->cap_rb = cap;
        else rc = cuda_fail(b, "realloc(readbacks)", "out of memory", __FILE__, __LINE__);
    }
    if (rc == 0) g->rb[g->n_rb++] = (cuda_readback){dst, p, bytes};
    pthread_mutex_unlock(&g->lock);
    TRY(rc);
    CUDA_CHECK(b, cudaMemcpyAsync(p, src, bytes, cudaMemcpyDeviceToHost, d->stream[stream]));
    return 0;
}

void cuda_stage_settle(cuda_state *st, int ok) {
    for (int dv = 0; dv < st->n; dv++) {
        cuda_stage *g = &st->dev[dv].stage;
        pthread_mutex_lock(&g->lock);
        for (int i = 0; ok && i < g->n_rb; i++) memcpy(g->rb[i].dst, g->rb[i].staged, g->rb[i].bytes);
        g->n_rb = 0;
        if (!ok) { /* copies may still be in flight: nothing is reused (the session fails) */
            pthread_mutex_unlock(&g->lock);
            continue;
        }
        /* several chunks, or one far larger than a round needs: one chunk of the round's size next */
        int resize = g->n_full > 0 || (g->cap > STAGE_MIN && g->cap > 4 * g->round);
        if (resize && cudaSetDevice(st->dev[dv].ordinal) == cudaSuccess) {
            for (int i = 0; i < g->n_full; i++) cudaFreeHost(g->full[i]);
            g->n_full = 0;
            size_t want = g->round < STAGE_MIN ? STAGE_MIN : g->round;
            if (g->buf) cudaFreeHost(g->buf);
            g->buf = NULL, g->cap = 0;
            if (cudaHostAlloc((void **)&g->buf, want, cudaHostAllocPortable) == cudaSuccess) g->cap = want;
            else g->buf = NULL, (void)cudaGetLastError(); /* take() allocates on demand and reports a failure */
        }
        g->used = 0, g->round = 0;
        pthread_mutex_unlock(&g->lock);
    }
}
