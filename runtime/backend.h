/* backend.h - the interface every device backend implements (cpu/, cuda/).
 *
 * The executor knows no backend: it allocates arenas, copies, launches
 * kernels, records and waits on events and runs collectives only through this
 * table. Work on a stream runs in submission order; a wait makes later work
 * on that stream wait for an event recorded on another stream. The CPU backend
 * implements a stream as a worker thread with a queue and an event as a
 * counter with a condition variable; the CUDA backend uses cudaStream_t and
 * cudaEvent_t. Calls return 0 or -1; after -1 the message is in b->err.
 */
#ifndef MGC_BACKEND_H
#define MGC_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ir/ir.h"

/* Everything a kernel needs; built once per node when a session starts
 * (arena addresses never move) and valid until the session ends. */
typedef struct {
    const ir_module *m;
    const ir_node *node;        /* op, attrs, output dtype/shape */
    const ir_node *const *in_nodes; /* input nodes (dtype/shape of each input) */
    const void *const *in;      /* input data, device memory */
    void *out;                  /* output data, device memory; in-place ops: == in[0] */
    const int64_t *step;        /* optimizer step counter, 1-based at the update; dropout seed */
    int replica, replicas;      /* global replica index and count (dropout masks by global row) */
    const int *training;        /* nonzero in the train program; OPF_TRAIN_ONLY ops are identity otherwise */
    const int *check_numerics;  /* nonzero: a kernel whose f32 output holds NaN or Inf fails, naming its op */
    struct rt_kernel_memo *memo; /* the backend's note on this node across steps; NULL: none */
} rt_kernel_args;

/* What a backend keeps of a node from one run to the next, zeroed at first:
 * the CPU kernel tuner's choice (cpu/tune.c) as a tag and its name. */
typedef struct rt_kernel_memo {
    int64_t tag;
    const char *kernel;
} rt_kernel_memo;

/* The learning rate of an optimizer update: the node's initial rate through
 * the plan's schedule, after *k->step - 1 earlier updates. */
static inline double rt_update_rate(const rt_kernel_args *k) {
    ir_optimizer o = k->m->opt;
    o.lr = k->node->fattr[0];
    return ir_learning_rate(&o, *k->step - 1);
}

/* all_gather (issue 13): buf holds count elements, replica_total blocks of
 * count / replica_total; each device has written its own global replica's
 * block, the collective fills in the others */
typedef enum { COLL_ALL_REDUCE, COLL_BROADCAST, COLL_ALL_GATHER } rt_coll_kind;

typedef struct {
    rt_coll_kind kind;
    int group;                  /* bucket index (all_reduce), broadcast group or gather number */
    const char *label;          /* for errors: "all_reduce bucket 3" */
    void *buf;                  /* this device's buffer, reduced / broadcast in place */
    int64_t count;              /* elements */
    ir_dtype dtype;
    int mean;                   /* all_reduce: divide by the global replica count */
    int root;                   /* broadcast: root replica */
    ir_cross_device algo;
} rt_coll_args;

typedef struct rt_backend rt_backend;

/* One piece of a node's work timed where it ran (runtime/trace.c). */
typedef struct {
    int node;                   /* plan node index */
    int device, stream;         /* local device, STREAM_COMPUTE or STREAM_COMM */
    int64_t step;               /* the train step it belongs to (rt_backend.trace_step when queued) */
    int64_t start_ns, end_ns;   /* CLOCK_MONOTONIC of this process */
} rt_trace_span;

typedef struct {
    const char *name;
    int (*init)(rt_backend *b);
    void (*shutdown)(rt_backend *b);
    void *(*alloc)(rt_backend *b, int device, size_t bytes);
    void (*dealloc)(rt_backend *b, int device, void *p);
    /* host <-> device copies, ordered on (device, stream); a download's bytes
     * are in dst once the next sync returns 0 */
    int (*upload)(rt_backend *b, int device, int stream, void *dst, const void *src, size_t bytes);
    int (*download)(rt_backend *b, int device, int stream, void *dst, const void *src, size_t bytes);
    /* the kernel sees *k->step as it is at launch, whenever it runs (a train
     * step may be queued while the one before still runs: "Steps in flight") */
    int (*launch)(rt_backend *b, int device, int stream, const rt_kernel_args *k);
    /* whether launch has a kernel for node n (its op and dtype); asked for
     * every node of a plan before a session starts, so a missing kernel is
     * one message up front, not a failure at step 1; why says what is missing */
    bool (*supports)(const ir_node *n, char *why, size_t cap);
    /* events: indices < n_events; generation distinguishes runs of a program */
    int (*record)(rt_backend *b, int device, int stream, int event, uint64_t generation);
    int (*wait)(rt_backend *b, int device, int stream, int event, uint64_t generation);
    int (*collective)(rt_backend *b, int device, int stream, const rt_coll_args *c);
    /* waits for every stream; returns -1 if any queued work failed */
    int (*sync)(rt_backend *b);
    /* Optional (NULL: train steps run one at a time; issue 14, docs/runtime.md
     * "Steps in flight"). mark(b, marks) stores for each stream, device-major
     * (n_devices * STREAM_COUNT), how many items were queued on it so far;
     * sync_to(b, marks) waits until each stream has run that many, and on a
     * failure drains and reports it as sync does. */
    void (*mark)(rt_backend *b, uint64_t *marks);
    int (*sync_to)(rt_backend *b, const uint64_t *marks);
    /* Tracing (`mgc run --trace/--profile`; NULL: this backend cannot).
     * trace_arm(b, cap) with cap > 0, called while every stream is idle,
     * makes the work queued from then on while b->trace_node >= 0 timed
     * where it runs (a CPU stream's thread reads the clock around the item; a
     * CUDA stream records an event pair), as spans of that node, in buffers
     * of cap spans per stream allocated here (no allocation on the hot path;
     * spans past cap are dropped), each with the step b->trace_step named
     * when it was queued. trace_arm(b, 0) stops and frees. trace_take(b, out,
     * cap, step), once every work of train steps up to `step` has run (after
     * sync, or sync_to with a step in flight), moves the spans of those steps
     * into out and keeps the later ones; returns their count (at most cap) or
     * -1. When not armed a backend does nothing more than test one flag per
     * item. */
    int (*trace_arm)(rt_backend *b, int cap);
    int (*trace_take)(rt_backend *b, rt_trace_span *out, int cap, int64_t step);
    /* The name of the implementation chosen for node k once it has run (the
     * CPU kernel tuner's candidate), for traces and profiles; NULL: none
     * (an op with one implementation), or this backend does not say. */
    const char *(*kernel_choice)(rt_backend *b, const rt_kernel_args *k);
    /* Graphs of train steps (issue 15; NULL: this backend runs every step as
     * issued, the CPU's case). The executor calls graph_begin(b) before it
     * issues a train step after the session's first: 0 means what is issued
     * now is captured, not run; 1 means run this step as issued (no capture);
     * 2 means the backend launched the step it captured before (a replay,
     * reading *step, *training, *check_numerics and the host inputs' bytes
     * anew): the executor issues nothing; -1 an error. After issuing a
     * captured step it calls graph_end(b, issued), issued = 1 when every call
     * returned 0: 0 means the captured step was launched; 1 means the capture
     * was dropped, nothing ran, and the executor issues the same step again,
     * eagerly; -1 an error. The pointers a captured step's calls receive (the
     * arena, the kernel arguments, the host inputs an upload reads) must stay
     * valid and fixed for the session. */
    int (*graph_begin)(rt_backend *b);
    int (*graph_end)(rt_backend *b, int issued);
} rt_backend_i;

/* Optional hook for the process-level step of a hierarchical all-reduce
 * (runtime/mpi): sums buf across processes, in place, with a timeout. */
typedef struct {
    int rank, size;
    int (*all_reduce_sum)(void *ctx, void *buf, int64_t count, ir_dtype dtype,
                          double timeout_s, const char *label, char *err, size_t cap);
    int (*broadcast)(void *ctx, void *buf, int64_t bytes, int root,
                     double timeout_s, const char *label, char *err, size_t cap);
    void *ctx;
} rt_interprocess;

struct rt_backend {
    const rt_backend_i *i;
    int n_devices;              /* local devices (replicas in this process) */
    int n_events;
    int threads_per_device;
    int replica_base;           /* global index of local replica 0 */
    int replica_total;          /* replicas across all processes */
    const int *device_index;    /* (n_devices) the plan's index of each local device (gpu:N -> N) */
    double collective_timeout;  /* seconds */
    const rt_interprocess *ip;  /* NULL in one process */
    int trace_node;             /* while tracing: the node whose work the executor queues now, -1 none */
    int64_t trace_step;         /* while tracing: the train step that work belongs to */
    char err[512];
    void *impl;                 /* backend state */
};

/* New backends (calloc'd; shutdown releases their state, the caller frees the struct). */
rt_backend *rt_backend_cpu(void);
rt_backend *rt_backend_cuda(void); /* only in builds with MGC_HAVE_CUDA */

#endif
