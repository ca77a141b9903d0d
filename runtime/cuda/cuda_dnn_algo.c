/* cuda_dnn_algo.c - which cuDNN convolution algorithm runs (issue 15).
 *
 * The first launch of a convolution shape on a device times every algorithm
 * with cudnnFind*AlgorithmEx and keeps the fastest one that succeeded, is
 * deterministic (CUDNN_DETERMINISTIC: backward data/filter algorithms 0 and 3
 * accumulate with atomics, so their bits vary from run to run, while the CPU
 * backend is deterministic) and uses FMA math (no TF32, as the descriptor
 * asks); later launches of that shape reuse it. The search runs on a private
 * stream with buffers of its own, so it waits for nothing queued on the
 * device's streams (which may wait on a collective the host has not issued
 * yet), and leaves the real operands untouched. */
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"

typedef struct {
    int kind;
    int64_t x[4], y[4], w[4];
    int64_t pad[2], stride[2], dilation[2], groups;
} algo_key;

typedef struct {
    algo_key key;
    int algo;
    size_t ws_bytes;
} algo_entry;

struct cuda_algo_cache {
    pthread_mutex_t lock;
    algo_entry *e;
    int n, cap;
};

int cuda_algo_cache_init(rt_backend *b, cuda_device *d) {
    d->algos = calloc(1, sizeof *d->algos);
    if (!d->algos) return cuda_fail(b, "calloc(algo cache)", "out of memory", __FILE__, __LINE__);
    pthread_mutex_init(&d->algos->lock, NULL);
    return 0;
}

void cuda_algo_cache_free(cuda_device *d) {
    if (!d->algos) return;
    pthread_mutex_destroy(&d->algos->lock);
    free(d->algos->e);
    free(d->algos);
    d->algos = NULL;
}

static const size_t WS_CAP = (size_t)512 << 20; /* workspace offered to the search */

static size_t ws_size(const cuda_conv_find *f, int algo) {
    size_t n = 0;
    cudnnStatus_t s;
    if (f->kind == CUDA_CONV_FWD)
        s = cudnnGetConvolutionForwardWorkspaceSize(f->h, f->x, f->w, f->conv, f->y, (cudnnConvolutionFwdAlgo_t)algo, &n);
    else if (f->kind == CUDA_CONV_BWD_DATA)
        s = cudnnGetConvolutionBackwardDataWorkspaceSize(f->h, f->w, f->y, f->conv, f->x,
                                                         (cudnnConvolutionBwdDataAlgo_t)algo, &n);
    else
        s = cudnnGetConvolutionBackwardFilterWorkspaceSize(f->h, f->x, f->y, f->conv, f->w,
                                                           (cudnnConvolutionBwdFilterAlgo_t)algo, &n);
    return s == CUDNN_STATUS_SUCCESS && n <= WS_CAP ? n : 0;
}

/* picks perf[0..got) (sorted fastest first): successful, deterministic, FMA math */
#define PICK(perf, got, out, bytes)                                                                                    \
    for (int i_ = 0; i_ < (got) && *(out) < 0; i_++)                                                                   \
        if ((perf)[i_].status == CUDNN_STATUS_SUCCESS && (perf)[i_].determinism == CUDNN_DETERMINISTIC &&              \
            (perf)[i_].mathType == CUDNN_FMA_MATH)                                                                     \
            *(out) = (int)(perf)[i_].algo, *(bytes) = (perf)[i_].memory;

/* times the algorithms on buffers of the private stream ps */
static int search(rt_backend *b, const cuda_conv_find *f, cudaStream_t ps, int *algo, size_t *ws_bytes) {
    int count = f->kind == CUDA_CONV_FWD ? CUDNN_CONVOLUTION_FWD_ALGO_COUNT
                : f->kind == CUDA_CONV_BWD_DATA ? CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT
                                                : CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
    size_t bytes[4] = {(size_t)ir_shape_numel(f->xs) * sizeof(float), (size_t)ir_shape_numel(f->ys) * sizeof(float),
                       (size_t)ir_shape_numel(f->ws) * sizeof(float), 0};
    for (int a = 0; a < count; a++) {
        size_t n = ws_size(f, a);
        if (n > bytes[3]) bytes[3] = n;
    }
    void *buf[4] = {NULL, NULL, NULL, NULL};
    int rc = 0, got = 0;
    for (int i = 0; i < 4 && rc == 0; i++) {
        cudaError_t e = bytes[i] ? cudaMallocAsync(&buf[i], bytes[i], ps) : cudaSuccess;
        if (e == cudaSuccess && bytes[i]) e = cudaMemsetAsync(buf[i], 0, bytes[i], ps);
        if (e != cudaSuccess) rc = cuda_fail(b, "cudaMallocAsync(cuDNN search)", cudaGetErrorString(e), __FILE__, __LINE__);
    }
    cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
    *algo = -1;
    if (rc == 0 && f->kind == CUDA_CONV_FWD) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        s = cudnnFindConvolutionForwardAlgorithmEx(f->h, f->x, buf[0], f->w, buf[2], f->conv, f->y, buf[1], count, &got,
                                                   perf, buf[3], bytes[3]);
        if (s == CUDNN_STATUS_SUCCESS) PICK(perf, got, algo, ws_bytes);
    } else if (rc == 0 && f->kind == CUDA_CONV_BWD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        s = cudnnFindConvolutionBackwardDataAlgorithmEx(f->h, f->w, buf[2], f->y, buf[1], f->conv, f->x, buf[0], count,
                                                        &got, perf, buf[3], bytes[3]);
        if (s == CUDNN_STATUS_SUCCESS) PICK(perf, got, algo, ws_bytes);
    } else if (rc == 0) {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        s = cudnnFindConvolutionBackwardFilterAlgorithmEx(f->h, f->x, buf[0], f->y, buf[1], f->conv, f->w, buf[2], count,
                                                          &got, perf, buf[3], bytes[3]);
        if (s == CUDNN_STATUS_SUCCESS) PICK(perf, got, algo, ws_bytes);
    }
    for (int i = 0; i < 4; i++)
        if (buf[i]) cudaFreeAsync(buf[i], ps);
    cudaError_t e = cudaStreamSynchronize(ps);
    if (rc == 0 && s != CUDNN_STATUS_SUCCESS)
        rc = cuda_fail(b, "cudnnFindConvolution*AlgorithmEx", cudnnGetErrorString(s), __FILE__, __LINE__);
    if (rc == 0 && e != cudaSuccess)
        rc = cuda_fail(b, "cudaStreamSynchronize(cuDNN search)", cudaGetErrorString(e), __FILE__, __LINE__);
    if (rc == 0 && *algo < 0) {
        snprintf(b->err, sizeof b->err, "cuda: %s: none of cuDNN's %d algorithms for this shape is deterministic with "
                 "FMA math and ran", f->kind == CUDA_CONV_FWD ? "convolution" : f->kind == CUDA_CONV_BWD_DATA ?
                 "convolution backward data" : "convolution backward filter", got);
        rc = -1;
    }
    return rc;
}

static algo_key key_of(const cuda_conv_find *f) {
    algo_key k;
    memset(&k, 0, sizeof k); /* padding too: keys compare with memcmp */
    k.kind = f->kind;
    for (int a = 0; a < 4; a++) k.x[a] = f->xs->dim[a], k.y[a] = f->ys->dim[a], k.w[a] = f->ws->dim[a];
    for (int a = 0; a < 2; a++)
        k.pad[a] = f->g->pad[a], k.stride[a] = f->g->stride[a], k.dilation[a] = f->g->dilation[a];
    k.groups = f->g->groups;
    return k;
}

int cuda_conv_algo(rt_backend *b, cuda_device *dev, const cuda_conv_find *f, int *algo, size_t *ws_bytes) {
    struct cuda_algo_cache *c = dev->algos;
    algo_key k = key_of(f);
    pthread_mutex_lock(&c->lock); /* held through a search: once per shape */
    for (int i = 0; i < c->n; i++)
        if (!memcmp(&c->e[i].key, &k, sizeof k)) {
            *algo = c->e[i].algo, *ws_bytes = c->e[i].ws_bytes;
            pthread_mutex_unlock(&c->lock);
            return 0;
        }
    cudaStream_t ps = NULL, old = NULL;
    int rc = 0;
    cudaError_t e = cudaStreamCreateWithFlags(&ps, cudaStreamNonBlocking);
    if (e != cudaSuccess) rc = cuda_fail(b, "cudaStreamCreateWithFlags(cuDNN search)", cudaGetErrorString(e), __FILE__, __LINE__);
    cudnnStatus_t s = rc == 0 ? cudnnGetStream(f->h, &old) : CUDNN_STATUS_SUCCESS;
    if (rc == 0 && s == CUDNN_STATUS_SUCCESS) s = cudnnSetStream(f->h, ps);
    if (rc == 0 && s != CUDNN_STATUS_SUCCESS) rc = cuda_fail(b, "cudnnSetStream(cuDNN search)", cudnnGetErrorString(s), __FILE__, __LINE__);
    if (rc == 0) {
        rc = search(b, f, ps, algo, ws_bytes);
        s = cudnnSetStream(f->h, old); /* back on the launch stream, whatever happened */
        if (rc == 0 && s != CUDNN_STATUS_SUCCESS) rc = cuda_fail(b, "cudnnSetStream", cudnnGetErrorString(s), __FILE__, __LINE__);
    }
    if (ps) cudaStreamDestroy(ps);
    if (rc == 0 && c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 16;
        algo_entry *ne = realloc(c->e, (size_t)cap * sizeof *ne);
        if (ne) c->e = ne, c->cap = cap;
    }
    if (rc == 0 && c->n < c->cap) c->e[c->n++] = (algo_entry){k, *algo, *ws_bytes};
    pthread_mutex_unlock(&c->lock);
    return rc;
}
