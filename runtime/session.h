/* session.h - a loaded plan bound to devices: variables, arenas, and the
 * executor that runs one program (train step, eval, predict, init) by
 * walking the compiled schedule through the backend interface. */
#ifndef MGC_SESSION_H
#define MGC_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ir/ir.h"
#include "backend.h"

typedef struct rt_session rt_session;

typedef struct {
    int threads_per_device;       /* CPU threads each device's kernels use; 0: rt_default_threads */
    double collective_timeout;    /* seconds */
    const rt_interprocess *ip;    /* set when running under MPI with several processes */
    int first_replica;            /* this process holds replicas [first, first + local): */
    int local_replicas;           /*   0 means all of them */
    bool check_numerics;          /* every kernel's f32 output is checked for NaN and Inf */
    int absent_replica;           /* fault injection for tests: replica N-1 never joins a collective (0: none) */
    bool no_graphs;               /* issue 15: train steps are not captured as CUDA graphs (mgc run --no-cuda-graphs) */
} rt_session_options;

/* issue 14: the default threads per device, max(1, cores / (local devices x
 * the job's processes on this machine)); cores from sched_getaffinity (so
 * taskset limits them), processes from the MPI launcher's environment
 * (OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS, PMIX_LOCAL_SIZE). */
int rt_default_threads(int local_devices);
int rt_threads_for(int cores, int local_devices, int local_processes);
/* issue 14: the cores local device d's threads (compute and comm stream, its
 * OpenMP team) are pinned to: cpus[d*T .. d*T + T), T = threads_per_device,
 * the process's CPUs in order. Returns 0 (no pinning) unless there are 2 or
 * more local devices, devices x T equals the online CPUs, the process may use
 * all of them (no taskset or launcher binding), it is the job's only process
 * on this machine, and MGC_PIN_THREADS is unset or 1. cpus holds
 * local_devices x T entries. */
int rt_device_cpus(int local_devices, int threads_per_device, int *cpus);
/* Pins the calling thread to cpus[0..n); 0 or an errno. */
int rt_pin_self(const int *cpus, int n);

/* Binds the plan's replicas [first, first + local) to this process's devices
 * (local device d runs replica first + d). Returns NULL with a message in err. */
rt_session *rt_session_new(const ir_module *m, const rt_session_options *o, char *err, size_t cap);
void rt_session_free(rt_session *s);
const ir_module *rt_session_module(const rt_session *s);
const char *rt_session_error(const rt_session *s);

/* Fills replica 0's variables from their initializers (values depend only on
 * seed and each variable's name) and broadcasts them to every replica. */
int rt_session_init_variables(rt_session *s, uint64_t seed);
/* Broadcasts replica 0's variables to every replica (after writing them). */
int rt_session_broadcast_variables(rt_session *s);

/* Copies this process's rows of one global batch of model input k
 * (m->inputs[k]) into staging: the rows of its local replicas, in order. */
void rt_session_set_input(rt_session *s, int k, const void *host);
/* Runs one program to completion. PROG_TRAIN advances the step counter. */
int rt_session_run(rt_session *s, ir_program program);
/* The same, then copies node `read`'s tensor to dst, with one wait for the
 * device instead of two (the training loop's loss and metrics each step). */
int rt_session_run_read(rt_session *s, ir_program program, int read, void *dst);

/* Issue 14: train steps in flight (docs/runtime.md, "Steps in flight"): step
 * k + 1 is queued before step k is waited for, so the devices go from one
 * step to the next without waiting for this thread. can_run_ahead: whether
 * this session may (the backend can, one process, MGC_PIPELINE is
 * not 0, and only shard nodes read host inputs; a trace takes each step's
 * spans when it is finished). train_issue queues the next
 * train step (the model inputs as set; set them again for the step after,
 * into a staging of its own) and the copy of node `read` after it (-1: none);
 * at most two steps are in flight, and until they are finished nothing but
 * set_input and train_issue/finish may be called. train_finish waits for the
 * oldest step in flight, copies its `read` tensor to dst (NULL: not) and
 * returns its step number, or -1 (rt_session_error; every step drained). */
bool rt_session_can_run_ahead(const rt_session *s);
int rt_session_train_issue(rt_session *s, int read);
int64_t rt_session_train_finish(rt_session *s, void *dst);
/* Steps issued by train_issue and not finished yet (0, 1 or 2). */
int rt_session_train_unfinished(const rt_session *s);

int64_t rt_session_step(const rt_session *s);
void rt_session_set_step(rt_session *s, int64_t step);

/* The node of `replica` that corresponds to replica-0 node `node`, or -1. */
int rt_session_peer(const rt_session *s, int node, int replica);
/* Whether this process holds `replica`; first and count of local replicas. */
bool rt_session_is_local(const rt_session *s, int replica);
int rt_session_first_replica(const rt_session *s);
int rt_session_local_replicas(const rt_session *s);

/* Host copies of a node's tensor (node on a local replica). */
int rt_session_read(rt_session *s, int node, void *dst);
int rt_session_write(rt_session *s, int node, const void *src);

/* Compares every variable of every local replica with replica 0's, byte for
 * byte. Returns 0, or -1 naming the first differing variable in err. */
int rt_session_check_replicas(rt_session *s, char *err, size_t cap);

/* Non-trainable state (batch_norm's moving statistics without sync) drifts
 * apart across replicas, each seeing its own batches. Its value is the mean
 * over every replica (TF's ON_READ MEAN), written back to all of them; the
 * runtime does this before a checkpoint is saved and before eval and predict.
 * Training never reads state and moving averages are linear, so averaging
 * early changes no later value. A collective: every process calls it. */
int rt_session_average_states(rt_session *s);
/* Sums v[0..n) over every process (no-op in one process); `label` names the
 * sum in a timeout message (rt_session_error). */
int rt_session_sum_processes(rt_session *s, double *v, int n, const char *label);
/* Under mpirun: every process ends with buf's bytes merged, where each
 * process wrote its own disjoint part and left the rest zero (a byte-wise
 * sum, so every bit survives, -0.0 included). No-op in one process. */
int rt_session_merge_processes(rt_session *s, void *buf, int64_t bytes, const char *label);
/* Times the train steps t wants (runtime/trace.h) where they run, adding
 * each step's spans to t after the step; NULL stops. t outlives the
 * session's use of it. -1 (rt_session_error) when the backend cannot trace. */
typedef struct rt_trace rt_trace;
int rt_session_set_trace(rt_session *s, rt_trace *t);

/* Process rank and count (0 and 1 in one process). */
int rt_session_rank(const rt_session *s);

/* Initial value of a variable (ir_init with fan_in/fan_out and its parameters
 * args = the node's fattr: value, stddev), deterministic in (seed, name). */
void rt_init_fill(float *dst, int64_t n, ir_init init, int64_t fan_in, int64_t fan_out, const double *args,
                  uint64_t seed, const char *name);

#endif
