/* loader.c - the batch loader: assembles each step's batch on a worker thread, one step ahead. */
#include "data_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { SLOT_FREE, SLOT_READY, SLOT_HELD };

struct rt_loader {
    const rt_dataset *ds;
    rt_loader_opts o;
    int64_t steps;        /* per epoch */
    int64_t *perm;        /* order of the epoch perm_epoch */
    int64_t perm_epoch;
    int64_t *row_bytes;   /* per input: bytes of one example */
    rt_batch slot[2];
    int state[2];
    int64_t next_epoch, next_step; /* position the worker fills next */
    int fill, take;       /* slot the worker fills next, slot the caller takes next */
    bool running, stop;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

int64_t rt_loader_steps_per_epoch(const rt_loader *l) { return l->steps; }

/* Assembles batch (epoch, step) into b; runs on the worker thread. */
static void fill_batch(rt_loader *l, rt_batch *b, int64_t epoch, int64_t step) {
    int64_t n = l->ds->count, B = l->o.batch;
    if (l->perm_epoch != epoch) {
        if (l->o.shuffle) rt_permutation(l->o.seed, epoch, n, l->perm);
        else for (int64_t i = 0; i < n; i++) l->perm[i] = i;
        l->perm_epoch = epoch;
    }
    int64_t first = step * B + l->o.row_begin;
    int64_t valid = n - first < l->o.rows ? n - first : l->o.rows;
    if (valid < 0) valid = 0;
    b->epoch = epoch, b->step = step, b->valid = valid;
    for (int i = 0; i < l->ds->n; i++) {
        int64_t rb = l->row_bytes[i];
        char *dst = b->data[i];
        const char *src = l->ds->t[i].data;
        for (int64_t r = 0; r < valid; r++) memcpy(dst + r * rb, src + l->perm[first + r] * rb, (size_t)rb);
        memset(dst + valid * rb, 0, (size_t)((l->o.rows - valid) * rb));
    }
}

static void *worker(void *arg) {
    rt_loader *l = arg;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->stop && l->state[l->fill] != SLOT_FREE) pthread_cond_wait(&l->cv, &l->mu);
        if (l->stop) break;
        int s = l->fill;
        int64_t e = l->next_epoch, st = l->next_step;
        pthread_mutex_unlock(&l->mu);
        fill_batch(l, &l->slot[s], e, st);
        pthread_mutex_lock(&l->mu);
        l->state[s] = SLOT_READY;
        l->fill ^= 1;
        if (++l->next_step == l->steps) l->next_step = 0, l->next_epoch++;
        pthread_cond_broadcast(&l->cv);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

static void stop_worker(rt_loader *l) {
    if (!l->running) return;
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    l->running = l->stop = false;
}

static int loader_alloc(rt_loader *l, char *err, size_t cap) {
    const rt_dataset *ds = l->ds;
    l->perm = malloc(sizeof(int64_t) * (size_t)(ds->count + 1));
    l->row_bytes = calloc((size_t)ds->n + 1, sizeof(int64_t));
    if (!l->perm || !l->row_bytes) return rt_data_fail(err, cap, "loader: out of memory");
    for (int s = 0; s < 2; s++) {
        l->slot[s].n = ds->n;
        l->slot[s].data = calloc((size_t)ds->n + 1, sizeof(void *));
        if (!l->slot[s].data) return rt_data_fail(err, cap, "loader: out of memory");
        for (int i = 0; i < ds->n; i++) {
            const rt_tensor *t = &ds->t[i];
            l->row_bytes[i] = (int64_t)ir_dtype_size(t->dtype);
            for (int d = 1; d < t->shape.rank; d++) l->row_bytes[i] *= t->shape.dim[d];
            l->slot[s].data[i] = malloc((size_t)(l->row_bytes[i] * l->o.rows) + 1);
            if (!l->slot[s].data[i]) return rt_data_fail(err, cap, "loader: out of memory");
        }
    }
    return 0;
}

rt_loader *rt_loader_new(const rt_dataset *ds, const rt_loader_opts *opts, char *err, size_t cap) {
    rt_loader_opts o = *opts;
    if (o.batch <= 0) return rt_data_fail(err, cap, "loader: batch must be positive, got %lld", (long long)o.batch), NULL;
    if (o.rows == 0) o.rows = o.batch - o.row_begin;
    if (o.row_begin < 0 || o.rows <= 0 || o.row_begin + o.rows > o.batch)
        return rt_data_fail(err, cap, "loader: rows [%lld, %lld) are not inside a batch of %lld", (long long)o.row_begin,
                    (long long)(o.row_begin + o.rows), (long long)o.batch), NULL;
    int64_t steps = o.keep_partial ? (ds->count + o.batch - 1) / o.batch : ds->count / o.batch;
    if (steps == 0)
        return rt_data_fail(err, cap, "loader: the dataset has %lld examples, fewer than one batch of %lld",
                    (long long)ds->count, (long long)o.batch), NULL;
    rt_loader *l = calloc(1, sizeof *l);
    if (!l) return rt_data_fail(err, cap, "loader: out of memory"), NULL;
    l->ds = ds, l->o = o, l->steps = steps, l->perm_epoch = -1;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    if (loader_alloc(l, err, cap) < 0) {
        rt_loader_free(l);
        return NULL;
    }
    return l;
}

int rt_loader_seek(rt_loader *l, int64_t epoch, int64_t step, char *err, size_t cap) {
    if (epoch < 0 || step < 0 || step >= l->steps)
        return rt_data_fail(err, cap, "loader: cannot seek to epoch %lld step %lld (%lld steps per epoch)", (long long)epoch,
                    (long long)step, (long long)l->steps);
    stop_worker(l);
    l->state[0] = l->state[1] = SLOT_FREE;
    l->fill = l->take = 0;
    l->next_epoch = epoch, l->next_step = step;
    return 0;
}

const rt_batch *rt_loader_next(rt_loader *l) {
    if (!l->running) {
        if (pthread_create(&l->thread, NULL, worker, l) != 0) { /* no thread: fill here */
            int s = l->take;
            fill_batch(l, &l->slot[s], l->next_epoch, l->next_step);
            if (++l->next_step == l->steps) l->next_step = 0, l->next_epoch++;
            l->take ^= 1, l->fill = l->take;
            return &l->slot[s];
        }
        l->running = true;
    }
    pthread_mutex_lock(&l->mu);
    if (l->state[l->take ^ 1] == SLOT_HELD) l->state[l->take ^ 1] = SLOT_FREE;
    pthread_cond_broadcast(&l->cv);
    while (l->state[l->take] != SLOT_READY) pthread_cond_wait(&l->cv, &l->mu);
    int s = l->take;
    l->state[s] = SLOT_HELD;
    l->take ^= 1;
    pthread_mutex_unlock(&l->mu);
    return &l->slot[s];
}

void rt_loader_free(rt_loader *l) {
    if (!l) return;
    stop_worker(l);
    for (int s = 0; s < 2; s++) {
        for (int i = 0; l->slot[s].data && i < l->ds->n; i++) free(l->slot[s].data[i]);
        free(l->slot[s].data);
    }
    free(l->perm);
    free(l->row_bytes);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
}
