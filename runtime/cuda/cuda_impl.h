/* cuda_impl.h - the CUDA backend's state and checks, seen only by runtime/cuda. */
#ifndef MGC_CUDA_IMPL_H
#define MGC_CUDA_IMPL_H

#include <pthread.h>
#include <stdio.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include "../backend.h"
#include "cuda_kernels.h"

enum { CUDA_MAX_DEVICES = 64, CUDA_MAX_PENDING = 64 };
/* events of a captured train step (cuda_graph.c): fork into the capture, join of the comm and
 * NCCL streams, done after the graph launch */
enum { CUDA_GRAPH_FORK, CUDA_GRAPH_JOIN, CUDA_GRAPH_DONE = CUDA_GRAPH_JOIN + 2, CUDA_GRAPH_EVENTS };

/* Runtime-failure checks (STYLE 5): each names the call, file and line,
 * writes into b->err and makes the enclosing function return -1. */
int cuda_fail(rt_backend *b, const char *call, const char *what, const char *file, int line);
#define CUDA_CHECK(b, call)                                                                                            \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) return cuda_fail((b), #call, cudaGetErrorString(e_), __FILE__, __LINE__);               \
    } while (0)
#define CUBLAS_CHECK(b, call)                                                                                          \
    do {                                                                                                               \
        cublasStatus_t e_ = (call);                                                                                    \
        if (e_ != CUBLAS_STATUS_SUCCESS) return cuda_fail((b), #call, cublasGetStatusString(e_), __FILE__, __LINE__);  \
    } while (0)
#define CUDNN_CHECK(b, call)                                                                                           \
    do {                                                                                                               \
        cudnnStatus_t e_ = (call);                                                                                     \
        if (e_ != CUDNN_STATUS_SUCCESS) return cuda_fail((b), #call, cudnnGetErrorString(e_), __FILE__, __LINE__);     \
    } while (0)
#define NCCL_CHECK(b, call)                                                                                            \
    do {                                                                                                               \
        ncclResult_t e_ = (call);                                                                                      \
        if (e_ != ncclSuccess) return cuda_fail((b), #call, ncclGetErrorString(e_), __FILE__, __LINE__);               \
    } while (0)
/* driver entry points return CUresult; the message keeps its number (no libcuda link
 * for cuGetErrorName: the number is what the driver's documentation lists) */
int cuda_fail_driver(rt_backend *b, const char *call, int code, const char *file, int line);
#define CU_CHECK(b, call)                                                                                              \
    do {                                                                                                               \
        CUresult e_ = (call);                                                                                          \
        if (e_ != CUDA_SUCCESS) return cuda_fail_driver((b), #call, (int)e_, __FILE__, __LINE__);                      \
    } while (0)
/* a failed step of a helper that already wrote b->err */
#define TRY(x)                                                                                                         \
    do {                                                                                                               \
        if ((x) != 0) return -1;                                                                                       \
    } while (0)

/* Driver calls reached through cudaGetDriverEntryPointByVersion, so the
 * binary does not link libcuda (absent on machines without a driver). */
typedef CUresult (*cuda_wait_value_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult (*cuda_write_value_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

/* A traced piece of work: an event pair around it on its stream (cuda_trace.c). */
typedef struct {
    int node, stream;
    int64_t step;                       /* rt_backend.trace_step when queued */
    cudaEvent_t start, end;
} cuda_trace_rec;

/* Pinned host memory that uploads are copied into and downloads land in, so
 * every copy is a real async DMA on its stream (cuda_stage.c). Reused once
 * every stream is idle (at sync); a download's bytes reach its destination
 * then. */
typedef struct {
    void *dst;
    const void *staged;
    size_t bytes;
} cuda_readback;

typedef struct {
    pthread_mutex_t lock;
    char *buf;                          /* the current pinned chunk */
    size_t cap, used;
    void **full;                        /* earlier chunks of this round, freed at sync */
    int n_full, cap_full;
    size_t round;                       /* bytes staged since the last sync */
    cuda_readback *rb;                  /* downloads to copy out at sync */
    int n_rb, cap_rb;
} cuda_stage;

/* An upload of a captured train step (issue 15): the graph's copy node reads
 * `pinned` (owned by the graph); before each replay the bytes at `src` (the
 * executor's host batch, a fixed address whose contents change) are copied
 * there again. */
typedef struct {
    void *pinned;
    const void *src;
    size_t bytes;
} cuda_graph_upload;

/* One local device (one replica). */
typedef struct {
    int ordinal;                        /* CUDA device number */
    cudaStream_t stream[STREAM_COUNT];  /* STREAM_COMPUTE, STREAM_COMM */
    cudaStream_t nccl_stream;           /* where grouped NCCL calls run (cuda_nccl.c) */
    cublasHandle_t blas[STREAM_COUNT];  /* one per stream: handles keep a workspace */
    cublasLtHandle_t lt;                /* cuBLASLt epilogues (cuda_lt.c, issue 14); stream given per call */
    cudnnHandle_t dnn[STREAM_COUNT];
    cudaEvent_t *events;                /* [n_events] */
    uint32_t *flags;                    /* [CUDA_MAX_PENDING] device words: sequence of the slot's last collective done */
    ncclComm_t comm;
    int32_t *bad_id;                    /* [3] device words: gather node + 1 that met an id outside its table
                                           (0: none), the id, its index (cuda_embed.cu; checked after each step) */
    cuda_trace_rec *trace;              /* [trace_cap * STREAM_COUNT] while tracing is armed */
    int trace_n;                        /* used since the last trace_take */
    cudaEvent_t trace_ref;              /* recorded at trace_take: device time of a known host time */
    cudaEvent_t idle[STREAM_COUNT + 1]; /* recorded by sync on each stream and nccl_stream, waited for (blocking) */
    cuda_nonfinite *nonfinite;          /* device record of --check-numerics (cuda_numerics.cu) */
    cuda_stage stage;                   /* pinned staging of host copies (cuda_stage.c) */
    struct cuda_algo_cache *algos;      /* cuDNN algorithms found per convolution shape (cuda_dnn_algo.c) */
    cudaGraphExec_t graph_exec;         /* the instantiated train step (cuda_graph.c), NULL before one */
    cudaEvent_t graph_ev[CUDA_GRAPH_EVENTS];
    /* issue 15: the step counter in device memory (cuda_graph.c, cuda_step.cu) */
    int64_t *step_word;                 /* [STREAM_COUNT] device words: the step of the work on each stream */
    int64_t step_set[STREAM_COUNT];     /* the value last queued into each word (INT64_MIN: none yet) */
    cuda_graph_upload *gup;             /* [n_gup] the captured step's staged uploads, refreshed before each replay */
    int n_gup, cap_gup;
} cuda_device;

/* A collective call waiting for the other local devices of its group. */
typedef struct {
    int used;
    rt_coll_args args;
    int arrived;                        /* local devices that called */
    void *buf[64];                      /* per local device */
    cudaEvent_t ready[64];              /* recorded on each device's comm stream at the call */
    uint32_t seq;                       /* uses of this slot so far; the flag word reaches it when done */
    cudaGraphNode_t at[64], cont[64];   /* while capturing: where each device's comm stream arrived and
                                           the node its later work hangs from (cuda_graph.c) */
} cuda_pending;

typedef struct {
    int n;
    cuda_device *dev;                   /* [n] */
    int *recorder;                      /* [n_events]: device that last recorded it, -1 none */
    uint64_t *recorded_gen;             /* [n_events]: generation of that record */
    pthread_mutex_t lock;               /* pending collectives, event bookkeeping */
    cuda_pending pending[CUDA_MAX_PENDING];
    cuda_wait_value_fn wait_value;
    cuda_write_value_fn write_value;
    const ir_module *m;                 /* the plan, for naming a bad embedding id (set by the first gather) */
    int trace_cap;                      /* spans per stream while tracing, 0: off */
    int failed;                         /* a CUDA/cuBLAS/cuDNN/NCCL call failed since init (cuda_fail) */
    int capturing;                      /* devices whose train step is being captured (cuda_graph.c), 0: none */
    int graphs_off;                     /* a capture failed: steps run eagerly for the rest of the session */
    int failed_before_capture;          /* `failed` when the capture began (an abandoned capture ran nothing) */
    char capture_broken[256];           /* why the current capture cannot be used, empty: it can */
    /* issue 15: the executor's step counter and flags, as the launches saw them (every node's
     * rt_kernel_args points at the same ones); a replay reads the step, re-captures when a flag
     * the graph froze changed */
    const int64_t *step_ptr;
    const int *training_ptr, *numerics_ptr;
    int captured;                       /* every device has an instantiated train step to replay */
    int frozen_training, frozen_numerics; /* *training_ptr, *numerics_ptr when it was captured */
} cuda_state;

static inline cuda_state *cuda_st(rt_backend *b) { return (cuda_state *)b->impl; }

/* cuda_backend.c */
int cuda_use(rt_backend *b, int device); /* cudaSetDevice(ordinal) */

/* cuda_launch.c: runs one node on (device, stream) */
int cuda_launch(rt_backend *b, int device, int stream, const rt_kernel_args *k);
/* whether cuda_launch has a kernel for node n (rt_backend_i.supports) */
bool cuda_supports(const ir_node *n, char *why, size_t cap);

/* cuda_trace.c: rt_backend_i's launch, copies and collective, timed by an
 * event pair each while tracing is armed and b->trace_node >= 0 */
int cuda_traced_launch(rt_backend *b, int device, int stream, const rt_kernel_args *k);
int cuda_traced_upload(rt_backend *b, int device, int stream, void *dst, const void *src, size_t bytes);
int cuda_traced_download(rt_backend *b, int device, int stream, void *dst, const void *src, size_t bytes);
int cuda_traced_collective(rt_backend *b, int device, int stream, const rt_coll_args *c);
int cuda_trace_arm(rt_backend *b, int cap);
int cuda_trace_take(rt_backend *b, rt_trace_span *out, int cap, int64_t step);
/* copies without tracing (cuda_backend.c) */
int cuda_upload(rt_backend *b, int device, int stream, void *dst, const void *src, size_t bytes);
int cuda_download(rt_backend *b, int device, int stream, void *dst, const void *src, size_t bytes);

/* cuda_stage.c: pinned staging of host copies (issue 15) */
int cuda_stage_init(rt_backend *b, cuda_device *d);
void cuda_stage_free(cuda_device *d);
/* after every stream of every device is idle: readbacks to their destinations
 * (when ok), staging reused; drops the readbacks when !ok */
void cuda_stage_settle(cuda_state *st, int ok);

/* cuda_backend.c: --check-numerics on the device (issue 15; the scan: cuda_numerics.cu);
 * after sync: the error of the first kernel output that held NaN/Inf, -1; 0 when none */
int cuda_check_nonfinite(rt_backend *b);

/* cuda_graph.c: CUDA graphs of train steps (issue 15; rt_backend_i.graph_begin/graph_end) */
int cuda_graph_begin(rt_backend *b);
int cuda_graph_end(rt_backend *b, int issued);
/* while capturing: the step cannot be captured (why), graph_end abandons it */
void cuda_graph_broken(rt_backend *b, const char *why);
void cuda_graph_free(cuda_device *d);
/* the device word holding the step of k for work on (device, stream); outside a
 * capture queues a write of *k->step on that stream when the word holds another */
int cuda_step_word(rt_backend *b, int device, int stream, const rt_kernel_args *k, const int64_t **word);
/* while capturing: an upload into the graph's own pinned copy of src (cuda_stage.c) */
int cuda_graph_upload_staged(rt_backend *b, int device, int stream, void *dst, const void *src, size_t bytes);

/* cuda_dnn_algo.c: the fastest deterministic cuDNN algorithm, found once per shape */
typedef enum { CUDA_CONV_FWD, CUDA_CONV_BWD_DATA, CUDA_CONV_BWD_FILTER } cuda_conv_kind;
typedef struct {
    cuda_conv_kind kind;
    cudnnHandle_t h;
    cudnnTensorDescriptor_t x, y;       /* image side, dy/y side */
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    const ir_shape *xs, *ys, *ws;       /* their shapes (the key, with g) */
    const ir_conv *g;
} cuda_conv_find;
int cuda_algo_cache_init(rt_backend *b, cuda_device *d);
void cuda_algo_cache_free(cuda_device *d);
/* the algorithm of f's shape on dev and its workspace bytes; searched on first use */
int cuda_conv_algo(rt_backend *b, cuda_device *dev, const cuda_conv_find *f, int *algo, size_t *ws_bytes);

/* cuda_dnn.c: cuDNN convolution and pooling */
int cuda_conv(rt_backend *b, int device, int stream, const rt_kernel_args *k);
int cuda_pool(rt_backend *b, int device, int stream, const rt_kernel_args *k);

/* ---- issue 14: cuda_lt.c, matmul_epilogue through cuBLASLt ----
 * out[m, n] = act(op(a) op(b) + bias [+ residual]) in one cublasLtMatmul on
 * stream s; *done 0 (nothing run) for an act cuBLASLt has no epilogue for
 * (tanh, sigmoid) or a shape its heuristic has no algorithm for. */
typedef struct {
    int64_t m, n, k, lda, ldb;          /* row-major leading dims of a and b, as stored */
    int trans_a, trans_b, act;          /* act: ir_epilogue_act */
    const float *a, *b, *bias, *residual; /* bias [n]; residual [m, n] or NULL */
    float *out;                         /* [m, n] */
} cuda_lt_gemm;
int cuda_lt_matmul_epilogue(rt_backend *b, cublasLtHandle_t h, cudaStream_t s, const cuda_lt_gemm *g, int *done);

/* cuda_nccl.c: communicators and grouped collectives */
int cuda_nccl_init(rt_backend *b);
void cuda_nccl_free(rt_backend *b);
/* after a timeout: abort the communicators so nothing waits on them */
void cuda_nccl_abort(rt_backend *b);
/* after an error: release every comm stream waiting on a collective flag and
 * abort the communicators, so teardown does not wait forever (issue 15) */
void cuda_nccl_release(rt_backend *b);
/* whether some collective was joined by some local devices and not flushed */
int cuda_nccl_any_pending(rt_backend *b);
/* -1 naming the collective if NCCL reported an asynchronous error (a peer died) */
int cuda_nccl_poll(rt_backend *b);
int cuda_collective(rt_backend *b, int device, int stream, const rt_coll_args *c);
/* error naming each collective some local device never joined; 0 if none */
int cuda_nccl_check_pending(rt_backend *b);
/* drops every collective joined by some local devices (an abandoned capture, cuda_graph.c) */
void cuda_nccl_forget_pending(rt_backend *b);

#endif
