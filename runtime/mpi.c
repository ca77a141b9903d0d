/* mpi.c - rt_interprocess over MPI: MPI_Iallreduce / MPI_Ibcast polled with
 * MPI_Test until done or the deadline, on a private communicator. */
#include "mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Process count announced by the launcher, or 0 when not under one. */
static int launcher_size(void) {
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (size_t k = 0; k < sizeof vars / sizeof *vars; k++) {
        const char *v = getenv(vars[k]);
        if (v && *v) return atoi(v);
    }
    return getenv("PMIX_RANK") ? 2 : 0;
}

#ifdef MGC_HAVE_MPI
#include <mpi.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#define PIECE (1 << 30) /* elements per MPI call (counts are int) */

typedef struct {
    rt_interprocess ip;
    MPI_Comm comm;
    pthread_mutex_t mu;       /* one collective at a time, whichever thread calls */
    int stale;                /* a request was abandoned after a timeout or an error */
} mpi_ctx;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int mpi_error(int rc, const char *call, const char *label, char *err, size_t cap) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    snprintf(err, cap, "%s: %s failed: %.*s", label, call, len, text);
    return -1;
}

/* Polls r until it completes or the deadline passes. */
static int finish(mpi_ctx *c, MPI_Request *r, const char *call, double timeout_s, const char *label, char *err,
                  size_t cap) {
    double start = now_s();
    for (long polls = 0;; polls++) {
        int done = 0, rc = MPI_Test(r, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return c->stale = 1, mpi_error(rc, call, label, err, cap);
        if (done) return 0;
        if (now_s() - start > timeout_s) {
            c->stale = 1;
            snprintf(err, cap,
                     "collective timeout after %.1f s: %s across processes: rank %d of %d waited, "
                     "another rank never arrived (it died or stopped)",
                     timeout_s, label, c->ip.rank, c->ip.size);
            return -1;
        }
        if (polls > 1000) nanosleep(&(struct timespec){0, 20000}, NULL);
    }
}

static int mpi_type(ir_dtype t, MPI_Datatype *out) {
    switch (t) {
    case IR_F32: *out = MPI_FLOAT; return 0;
    case IR_F64: *out = MPI_DOUBLE; return 0;
    case IR_I32: *out = MPI_INT; return 0;
    case IR_U8: *out = MPI_UNSIGNED_CHAR; return 0; /* bytes: disjoint parts merged exactly */
    default: return -1;
    }
}

static int all_reduce_sum(void *ctx, void *buf, int64_t count, ir_dtype dtype, double timeout_s, const char *label,
                          char *err, size_t cap) {
    mpi_ctx *c = ctx;
    MPI_Datatype type;
    if (mpi_type(dtype, &type)) return snprintf(err, cap, "%s: cannot sum %s over MPI", label, ir_dtype_name(dtype)), -1;
    if (c->stale) return snprintf(err, cap, "%s: an earlier collective across processes failed", label), -1;
    double deadline = now_s() + timeout_s;
    int rc = 0;
    pthread_mutex_lock(&c->mu);
    for (int64_t at = 0; at < count && !rc; at += PIECE) {
        int n = (int)(count - at < PIECE ? count - at : PIECE);
        MPI_Request r;
        int mrc = MPI_Iallreduce(MPI_IN_PLACE, (char *)buf + at * (int64_t)ir_dtype_size(dtype), n, type, MPI_SUM,
                                 c->comm, &r);
        rc = mrc != MPI_SUCCESS ? mpi_error(mrc, "MPI_Iallreduce", label, err, cap)
                                : finish(c, &r, "MPI_Iallreduce", deadline - now_s(), label, err, cap);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static int broadcast(void *ctx, void *buf, int64_t bytes, int root, double timeout_s, const char *label, char *err,
                     size_t cap) {
    mpi_ctx *c = ctx;
    if (c->stale) return snprintf(err, cap, "%s: an earlier collective across processes failed", label), -1;
    double deadline = now_s() + timeout_s;
    int rc = 0;
    pthread_mutex_lock(&c->mu);
    for (int64_t at = 0; at < bytes && !rc; at += PIECE) {
        int n = (int)(bytes - at < PIECE ? bytes - at : PIECE);
        MPI_Request r;
        int mrc = MPI_Ibcast((char *)buf + at, n, MPI_BYTE, root, c->comm, &r);
        rc = mrc != MPI_SUCCESS ? mpi_error(mrc, "MPI_Ibcast", label, err, cap)
                                : finish(c, &r, "MPI_Ibcast", deadline - now_s(), label, err, cap);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* MPI_Init waits for every process of the job with no deadline of its own: a
 * peer that froze or never calls it would hang this one forever. A watchdog
 * thread ends the process instead, and mpirun then ends the job. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    double timeout_s;
} init_watch;

static void *watch_init(void *arg) {
    init_watch *w = arg;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)w->timeout_s;
    until.tv_nsec += (long)((w->timeout_s - (double)(time_t)w->timeout_s) * 1e9);
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&w->mu);
    int rc = 0;
    while (!w->done && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&w->cv, &w->mu, &until);
    if (!w->done) {
        const char *rank = getenv("OMPI_COMM_WORLD_RANK");
        fprintf(stderr,
                "mgc: collective timeout after %.1f s: MPI_Init across processes: rank %s of %d waited, "
                "another rank never started MPI (it died, stopped or is not mgc)\n",
                w->timeout_s, rank ? rank : "?", launcher_size());
        _exit(1);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

rt_interprocess *rt_mpi_init(double timeout_s, char *err, size_t cap) {
    err[0] = 0;
    if (launcher_size() < 2) return NULL;
    init_watch w = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .timeout_s = timeout_s};
    pthread_t watcher;
    bool watching = pthread_create(&watcher, NULL, watch_init, &w) == 0;
    int provided = 0, rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    if (watching) {
        pthread_mutex_lock(&w.mu);
        w.done = 1;
        pthread_cond_signal(&w.cv);
        pthread_mutex_unlock(&w.mu);
        pthread_join(watcher, NULL);
    }
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Init_thread", "mpi", err, cap), NULL;
    if (provided < MPI_THREAD_SERIALIZED) {
        snprintf(err, cap, "mpi: the MPI library offers no thread support (level %d)", provided);
        MPI_Finalize();
        return NULL;
    }
    mpi_ctx *c = calloc(1, sizeof *c);
    if (!c) return snprintf(err, cap, "mpi: out of memory"), MPI_Finalize(), NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
    MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(c->comm, &c->ip.rank);
    MPI_Comm_size(c->comm, &c->ip.size);
    pthread_mutex_init(&c->mu, NULL);
    c->ip.all_reduce_sum = all_reduce_sum, c->ip.broadcast = broadcast, c->ip.ctx = c;
    if (c->ip.size < 2) {
        rt_mpi_finalize(&c->ip);
        return NULL;
    }
    return &c->ip;
}

void rt_mpi_abort(rt_interprocess *ip, int code) {
    mpi_ctx *c = ip ? ip->ctx : NULL;
    MPI_Abort(c ? c->comm : MPI_COMM_WORLD, code);
    exit(code); /* MPI_Abort does not return; this keeps the compiler sure of it */
}

void rt_mpi_finalize(rt_interprocess *ip) {
    if (!ip) return;
    mpi_ctx *c = ip->ctx;
    int stale = c->stale;
    if (!stale) MPI_Comm_free(&c->comm);
    pthread_mutex_destroy(&c->mu);
    free(c);
    if (!stale) MPI_Finalize();
}

#else /* built without MPI */

rt_interprocess *rt_mpi_init(double timeout_s, char *err, size_t cap) {
    (void)timeout_s;
    int size = launcher_size();
    err[0] = 0;
    if (size >= 2) snprintf(err, cap, "mpi: started as %d processes, but this build has no MPI", size);
    return NULL;
}

void rt_mpi_finalize(rt_interprocess *ip) { (void)ip; }

void rt_mpi_abort(rt_interprocess *ip, int code) {
    (void)ip;
    exit(code);
}

#endif
