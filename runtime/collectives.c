/* collectives.c - shared-memory all-reduce (ring, one-device, hierarchical)
 * and broadcast among local devices, each participant on its own thread.
 *
 * A meeting ("slot") holds every participant's buffer and one progress
 * counter per participant. Participants work in parallel on disjoint chunks
 * and synchronize only through those counters: a barrier of phase k waits
 * until every counter reaches k. Waits spin briefly, then sleep on one
 * condition variable, and every wait ends at the meeting's deadline.
 *
 * all_gather (issue 13) copies each device's block to the others.
 *
 * Every algorithm sums the devices' values in device order (ring and
 * one-device give the same bits; hierarchical sums groups first), and every
 * device ends with a copy of the same bytes. */
#include "collectives.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BLOCK_ELEMS 2048 /* reductions work block by block, so a partial sum stays in L1 */
#define MSG_CAP 400

typedef struct {
    _Alignas(64) _Atomic int64_t v;
} progress;

typedef struct {
    int used;                 /* under c->mu */
    rt_coll_kind kind;
    int group;
    int64_t occurrence;       /* how many earlier calls of (kind, group) each device made */
    int64_t count;
    ir_dtype dtype;
    _Atomic int arrived;
    int left;
    unsigned char *present;   /* (n) */
    void **buf;               /* (n) */
    progress *prog;           /* (n) */
    _Atomic int failed;
    char msg[MSG_CAP];        /* written under c->mu before failed is set */
} slot;

typedef struct {
    rt_coll_kind kind;
    int group;
    int64_t *calls;           /* (n) per device */
} call_key;

struct rt_coll {
    int n, base, total;
    const rt_interprocess *ip;
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* CLOCK_MONOTONIC */
    _Atomic int sleepers;
    slot **slots;
    int n_slots;
    call_key *keys;
    int n_keys, cap_keys;
    int aborted;
    char abort_msg[MSG_CAP];
};

/* One participant's view of a meeting. */
typedef struct {
    rt_coll *c;
    slot *s;
    const rt_coll_args *a;
    int me, phase;
    size_t esize;
    double timeout, deadline;
} part;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

rt_coll *rt_coll_new(int n_devices, int replica_base, int replica_total, const rt_interprocess *ip) {
    rt_coll *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->n = n_devices, c->base = replica_base, c->total = replica_total, c->ip = ip;
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &attr);
    pthread_condattr_destroy(&attr);
    return c;
}

static void slot_free(slot *s) {
    if (!s) return;
    free(s->present), free(s->buf), free(s->prog);
    free(s);
}

void rt_coll_free(rt_coll *c) {
    if (!c) return;
    for (int i = 0; i < c->n_slots; i++) slot_free(c->slots[i]);
    for (int i = 0; i < c->n_keys; i++) free(c->keys[i].calls);
    free(c->slots), free(c->keys);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

static void wake_all(rt_coll *c) {
    pthread_mutex_lock(&c->mu);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Marks s failed with msg unless it already failed (caller holds c->mu). */
static void fail_locked(rt_coll *c, slot *s, const char *msg) {
    if (atomic_load(&s->failed)) return;
    snprintf(s->msg, sizeof s->msg, "%s", msg);
    atomic_store(&s->failed, 1);
    pthread_cond_broadcast(&c->cv);
}

static void fail_slot(part *p, const char *msg) {
    pthread_mutex_lock(&p->c->mu);
    fail_locked(p->c, p->s, msg);
    pthread_mutex_unlock(&p->c->mu);
}

void rt_coll_abort(rt_coll *c, const char *msg) {
    pthread_mutex_lock(&c->mu);
    if (!c->aborted) snprintf(c->abort_msg, sizeof c->abort_msg, "%s", msg);
    c->aborted = 1;
    for (int i = 0; i < c->n_slots; i++)
        if (c->slots[i]->used) fail_locked(c, c->slots[i], c->abort_msg);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

void rt_coll_reset(rt_coll *c) {
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->n_slots; i++) c->slots[i]->used = 0;
    for (int i = 0; i < c->n_keys; i++) free(c->keys[i].calls);
    c->n_keys = 0;
    c->aborted = 0;
    pthread_mutex_unlock(&c->mu);
}

/* ---- meeting: arrive, wait, leave ---- */

/* The number of earlier calls of (kind, group) by device me; counts this one. */
static int64_t next_call(rt_coll *c, int me, rt_coll_kind kind, int group) {
    call_key *k = NULL;
    for (int i = 0; i < c->n_keys && !k; i++)
        if (c->keys[i].kind == kind && c->keys[i].group == group) k = &c->keys[i];
    if (!k) {
        if (c->n_keys == c->cap_keys) {
            int cap = c->cap_keys ? 2 * c->cap_keys : 16;
            call_key *grown = realloc(c->keys, (size_t)cap * sizeof *grown);
            if (!grown) return -1;
            c->keys = grown, c->cap_keys = cap;
        }
        int64_t *calls = calloc((size_t)c->n, sizeof *calls);
        if (!calls) return -1;
        k = &c->keys[c->n_keys++];
        *k = (call_key){kind, group, calls};
    }
    return k->calls[me]++;
}

static slot *slot_new(int n) {
    slot *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->present = calloc((size_t)n, 1);
    s->buf = calloc((size_t)n, sizeof *s->buf);
    s->prog = aligned_alloc(64, (size_t)n * sizeof *s->prog);
    if (!s->present || !s->buf || !s->prog) {
        slot_free(s);
        return NULL;
    }
    return s;
}

/* The meeting of (kind, group, occurrence), opened by whoever comes first. */
static slot *find_slot(rt_coll *c, const rt_coll_args *a, int64_t occurrence) {
    slot *free_slot = NULL;
    for (int i = 0; i < c->n_slots; i++) {
        slot *s = c->slots[i];
        if (s->used && s->kind == a->kind && s->group == a->group && s->occurrence == occurrence) return s;
        if (!s->used && !free_slot) free_slot = s;
    }
    if (!free_slot) {
        slot **grown = realloc(c->slots, (size_t)(c->n_slots + 1) * sizeof *grown);
        if (!grown) return NULL;
        c->slots = grown;
        if (!(free_slot = slot_new(c->n))) return NULL;
        c->slots[c->n_slots++] = free_slot;
    }
    slot *s = free_slot;
    s->used = 1, s->kind = a->kind, s->group = a->group, s->occurrence = occurrence;
    s->count = a->count, s->dtype = a->dtype;
    atomic_store(&s->arrived, 0), atomic_store(&s->failed, 0);
    s->left = 0, s->msg[0] = 0;
    memset(s->present, 0, (size_t)c->n);
    for (int j = 0; j < c->n; j++) atomic_store(&s->prog[j].v, 0);
    return s;
}

/* Joins the meeting; NULL with a message in err when that is impossible. */
static slot *arrive(rt_coll *c, int me, const rt_coll_args *a, char *err, size_t cap) {
    pthread_mutex_lock(&c->mu);
    slot *s = NULL;
    if (c->aborted) {
        snprintf(err, cap, "%s", c->abort_msg);
    } else {
        int64_t occurrence = next_call(c, me, a->kind, a->group);
        s = occurrence < 0 ? NULL : find_slot(c, a, occurrence);
        if (!s) snprintf(err, cap, "%s: out of memory", a->label);
    }
    if (s) {
        s->present[me] = 1, s->buf[me] = a->buf;
        if (s->count != a->count || s->dtype != a->dtype) {
            char msg[MSG_CAP];
            snprintf(msg, sizeof msg, "%s: cpu:%d has %lld %s elements, another device %lld %s", a->label,
                     c->base + me, (long long)a->count, ir_dtype_name(a->dtype), (long long)s->count,
                     ir_dtype_name(s->dtype));
            fail_locked(c, s, msg);
        }
        if (atomic_fetch_add(&s->arrived, 1) + 1 == c->n) pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    return s;
}

static void leave(part *p) {
    rt_coll *c = p->c;
    pthread_mutex_lock(&c->mu);
    if (++p->s->left == c->n) p->s->used = 0;
    pthread_mutex_unlock(&c->mu);
}

/* Waiting for participant j to reach value, or (j < 0) for everyone to arrive. */
static int reached(const part *p, int j, int64_t value) {
    if (j < 0) return atomic_load(&p->s->arrived) == p->c->n;
    return atomic_load_explicit(&p->s->prog[j].v, memory_order_acquire) >= value;
}

/* Fails the meeting naming who is missing: those that never arrived, else j. */
static void fail_timeout(part *p, int j) {
    rt_coll *c = p->c;
    char names[MSG_CAP / 2] = "", msg[MSG_CAP];
    size_t at = 0;
    for (int k = 0; k < c->n; k++) {
        int missing = j < 0 ? !p->s->present[k] : k == j;
        if (missing && at < sizeof names)
            at += (size_t)snprintf(names + at, sizeof names - at, "%scpu:%d", at ? ", " : "", c->base + k);
    }
    snprintf(msg, sizeof msg, "collective timeout after %.1f s: %s is missing %s", p->timeout, p->a->label, names);
    fail_locked(c, p->s, msg);
}

/* Spins briefly, then sleeps; -1 once the meeting has failed (or timed out).
 * No sched_yield (issue 14): a participant that yields stays runnable, so when
 * the others arrive it waits for the scheduler to preempt whatever took its
 * core (the device's compute stream, a whole time slice), where a sleeper is
 * woken and runs at once. */
static int wait_for(part *p, int j, int64_t value) {
    for (int i = 0; i < 256; i++) {
        if (reached(p, j, value)) return 0;
        if (atomic_load(&p->s->failed)) return -1;
        __builtin_ia32_pause();
    }
    rt_coll *c = p->c;
    double dl = p->deadline;
    struct timespec ts = {.tv_sec = (time_t)dl, .tv_nsec = (long)((dl - (double)(time_t)dl) * 1e9)};
    atomic_fetch_add(&c->sleepers, 1);
    pthread_mutex_lock(&c->mu);
    while (!reached(p, j, value) && !atomic_load(&p->s->failed))
        if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT && !reached(p, j, value)) {
            fail_timeout(p, j);
            break;
        }
    pthread_mutex_unlock(&c->mu);
    atomic_fetch_sub(&c->sleepers, 1);
    return reached(p, j, value) && !atomic_load(&p->s->failed) ? 0 : -1;
}

static void publish(part *p, int64_t value) {
    atomic_store_explicit(&p->s->prog[p->me].v, value, memory_order_release);
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load(&p->c->sleepers)) wake_all(p->c);
}

/* Everyone reaches the next phase before anyone goes on. */
static int barrier(part *p) {
    int64_t value = ++p->phase;
    publish(p, value);
    for (int j = 0; j < p->c->n; j++)
        if (j != p->me && wait_for(p, j, value)) return -1;
    return 0;
}

/* ---- element loops: vectorized (O3 here only), AVX2 where the CPU has it ---- */

#if defined(__GNUC__) && !defined(__clang__) /* clang vectorizes these at -O2 */
#pragma GCC push_options
#pragma GCC optimize("O3")
#endif
/* finish: a chunk's last add, its mean and its copy into the last member's
 * buffer in one pass, dst[i] = last[i] = (dst[i] + last[i]) / by (or * by,
 * a power of two's reciprocal): the bits of the three one after the other */
#define DEFINE_LOOPS(T, NAME)                                                                 \
    __attribute__((target_clones("avx2", "default"))) static void add_##NAME(                 \
        T *restrict dst, const T *restrict src, int64_t n) {                                  \
        for (int64_t i = 0; i < n; i++) dst[i] += src[i];                                     \
    }                                                                                         \
    static void div_##NAME(T *restrict dst, int64_t n, T by) {                                \
        for (int64_t i = 0; i < n; i++) dst[i] /= by;                                         \
    }                                                                                         \
    __attribute__((target_clones("avx2", "default"))) static void finish_div_##NAME(          \
        T *restrict dst, T *restrict last, int64_t n, T by) {                                 \
        for (int64_t i = 0; i < n; i++) dst[i] = last[i] = (dst[i] + last[i]) / by;           \
    }
#define DEFINE_SCALE(T, NAME)                                                                 \
    static void scale_##NAME(T *restrict dst, int64_t n, T by) {                              \
        for (int64_t i = 0; i < n; i++) dst[i] *= by;                                         \
    }                                                                                         \
    __attribute__((target_clones("avx2", "default"))) static void finish_scale_##NAME(        \
        T *restrict dst, T *restrict last, int64_t n, T by) {                                 \
        for (int64_t i = 0; i < n; i++) dst[i] = last[i] = (dst[i] + last[i]) * by;           \
    }
DEFINE_LOOPS(float, f32)
DEFINE_LOOPS(double, f64)
DEFINE_LOOPS(int32_t, i32)
DEFINE_SCALE(float, f32)
DEFINE_SCALE(double, f64)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

/* dst[0..n) += src[0..n) */
static void add_into(ir_dtype t, void *dst, const void *src, int64_t n) {
    switch (t) {
    case IR_F32: add_f32(dst, src, n); break;
    case IR_F64: add_f64(dst, src, n); break;
    case IR_I32: add_i32(dst, src, n); break;
    default: break; /* rejected in rt_coll_run */
    }
}

/* dst[0..n) /= by. For a power of two it multiplies by 1/by, which is exact:
 * x / 2^k and x * 2^-k round the same real number, so the bits are the same,
 * and a multiply is cheaper than a divide (8 floats in L1: 0.30 against
 * 0.83 ns on the Zen 4 of issue 14). */
static void divide(ir_dtype t, void *dst, int64_t n, int by) {
    int pow2 = (by & (by - 1)) == 0;
    switch (t) {
    case IR_F32: pow2 ? scale_f32(dst, n, 1.0f / (float)by) : div_f32(dst, n, (float)by); break;
    case IR_F64: pow2 ? scale_f64(dst, n, 1.0 / (double)by) : div_f64(dst, n, (double)by); break;
    case IR_I32: div_i32(dst, n, by); break;
    default: break;
    }
}

/* dst and last as finish_* above; by: the mean's divisor, 1 for a sum */
static void finish(ir_dtype t, void *dst, void *last, int64_t n, int by) {
    int pow2 = (by & (by - 1)) == 0;
    switch (t) {
    case IR_F32: pow2 ? finish_scale_f32(dst, last, n, 1.0f / (float)by) : finish_div_f32(dst, last, n, (float)by); break;
    case IR_F64: pow2 ? finish_scale_f64(dst, last, n, 1.0 / (double)by) : finish_div_f64(dst, last, n, (double)by); break;
    case IR_I32: finish_div_i32(dst, last, n, by); break;
    default: break;
    }
}

static char *at(const part *p, int j, int64_t elem) { return (char *)p->s->buf[j] + (size_t)elem * p->esize; }

/* Start of chunk k of m over count elements, a multiple of 16 elements. */
static int64_t chunk_start(int64_t count, int k, int m) {
    if (k >= m) return count;
    int64_t start = (count * k / m) & ~(int64_t)15;
    return start < count ? start : count;
}

static void mean_range(const part *p, int j, int64_t lo, int64_t hi) {
    if (p->a->mean && p->c->total > 1) divide(p->a->dtype, at(p, j, lo), hi - lo, p->c->total);
}

/* ---- algorithms ---- */

/* Reduce-scatter and all-gather in one pass over shared memory (the `ring`
 * algorithm; with to_all = 0 also the reduction of one-device and of
 * hierarchical's groups). Member r of members[0..m) owns chunk r: it sums
 * that chunk of every member's buffer into members[0]'s, in member order,
 * block by block (so the partial sum stays in L1), applies the mean, and
 * copies the finished block into every other member's buffer (to_all) or
 * leaves it in members[0]'s only. Every byte is
 * read once and written once per member, as in a memcpy, and no member waits
 * on another until the final barrier, since each chunk has one writer. The
 * summation order is the one-device algorithm's, so both give the same bits. */
static int sum_members(part *p, const int *members, int m, int to_all) {
    int r = 0;
    while (r < m && members[r] != p->me) r++;
    if (r < m && m > 1) {
        int64_t n = p->a->count, hi = chunk_start(n, r + 1, m);
        int to = members[0];
        for (int64_t b = chunk_start(n, r, m); b < hi; b += BLOCK_ELEMS) {
            int64_t len = hi - b < BLOCK_ELEMS ? hi - b : BLOCK_ELEMS;
            for (int k = 1; k < m - !!to_all; k++) add_into(p->a->dtype, at(p, to, b), at(p, members[k], b), len);
            if (!to_all) continue;
            finish(p->a->dtype, at(p, to, b), at(p, members[m - 1], b), len, p->a->mean ? p->c->total : 1);
            for (int k = 1; k < m - 1; k++) memcpy(at(p, members[k], b), at(p, to, b), (size_t)len * p->esize);
        }
    }
    return barrier(p); /* nobody reads a chunk before its owner has finished it */
}

static int group_size(int n) {
    int g = 1;
    while (g * g < n) g++;
    return g < 2 ? 2 : g;
}

/* The process-level step: device 0's buffer summed across processes. */
static int across_processes(part *p) {
    const rt_interprocess *ip = p->c->ip;
    if (p->me == 0) {
        char msg[MSG_CAP];
        double left = p->deadline - now_s();
        if (ip->all_reduce_sum(ip->ctx, p->s->buf[0], p->a->count, p->a->dtype, left > 0 ? left : 0, p->a->label, msg,
                               sizeof msg)) {
            fail_slot(p, msg);
            return -1;
        }
    } else {
        p->deadline += 1.0; /* the leader's own timeout reports first */
    }
    return barrier(p);
}

/* Device 0's buffer holds the sum: means in parallel slices, then copies.
 * Nobody leaves before every copy is done: device 0's next work may write
 * its buffer (the next train step, in flight: docs/runtime.md). */
static int from_device0(part *p) {
    int64_t n = p->a->count;
    mean_range(p, 0, chunk_start(n, p->me, p->c->n), chunk_start(n, p->me + 1, p->c->n));
    if (barrier(p)) return -1;
    if (p->me) memcpy(p->s->buf[p->me], p->s->buf[0], (size_t)n * p->esize);
    return barrier(p);
}

static int all_reduce(part *p) {
    rt_coll *c = p->c;
    int n = c->n, procs = c->ip && c->ip->size > 1, all[n];
    for (int j = 0; j < n; j++) all[j] = j;
    if (p->a->algo == XDEV_ONE_DEVICE || n == 1 || (p->a->algo == XDEV_HIERARCHICAL && group_size(n) >= n)) {
        if (sum_members(p, all, n, 0)) return -1;
    } else if (p->a->algo == XDEV_RING) {
        if (sum_members(p, all, n, !procs)) return -1;
        if (!procs) return 0;
    } else { /* hierarchical: sums within groups, then across the group leaders (m >= 2) */
        int g = group_size(n), first = p->me / g * g, leaders[n], m = 0;
        for (int l = 0; l < n; l += g) leaders[m++] = l;
        if (sum_members(p, all + first, first + g <= n ? g : n - first, 0)) return -1;
        if (sum_members(p, leaders, m, !procs)) return -1;
        if (!procs) { /* then nobody leaves before every copy is done, as in from_device0 */
            if (p->me != first) memcpy(p->s->buf[p->me], p->s->buf[first], (size_t)p->a->count * p->esize);
            return barrier(p);
        }
    }
    if (procs && across_processes(p)) return -1;
    return from_device0(p);
}

static int broadcast(part *p, char *err, size_t cap) {
    rt_coll *c = p->c;
    int root = p->a->root, src = root % c->n;
    if (root < 0 || root >= c->total) {
        snprintf(err, cap, "%s: root replica %d is not one of %d replicas", p->a->label, root, c->total);
        fail_slot(p, err);
        return -1;
    }
    size_t bytes = (size_t)p->a->count * p->esize;
    if (c->ip && c->ip->size > 1 && p->me == src) {
        char msg[MSG_CAP];
        double left = p->deadline - now_s();
        if (c->ip->broadcast(c->ip->ctx, p->s->buf[src], (int64_t)bytes, root / c->n, left > 0 ? left : 0,
                             p->a->label, msg, sizeof msg)) {
            fail_slot(p, msg);
            return -1;
        }
    } else if (c->ip && c->ip->size > 1) {
        p->deadline += 1.0;
    }
    if (barrier(p)) return -1;
    if (p->me != src) memcpy(p->s->buf[p->me], p->s->buf[src], bytes);
    return barrier(p); /* as from_device0 */
}

/* all_gather (issue 13): every device holds its own global replica's block;
 * each copies that block into every other local device's buffer (one writer
 * per block, so no waits but the barrier). Across processes, device 0 zeroes
 * the blocks of the other processes' replicas and sums its buffer over the
 * processes: every element has one nonzero contributor, so the sum is the
 * gather, bit for bit (-0.0 becomes +0.0); then the local devices copy it. */
static int all_gather(part *p) {
    rt_coll *c = p->c;
    int64_t block = p->a->count / c->total;
    size_t bytes = (size_t)block * p->esize;
    const char *mine = at(p, p->me, (int64_t)(c->base + p->me) * block);
    for (int j = 0; j < c->n; j++)
        if (j != p->me) memcpy(at(p, j, (int64_t)(c->base + p->me) * block), mine, bytes);
    if (barrier(p)) return -1;
    if (!c->ip || c->ip->size <= 1) return 0;
    if (p->me == 0) {
        memset(p->s->buf[0], 0, (size_t)c->base * bytes);
        int64_t after = (int64_t)(c->base + c->n) * block;
        memset(at(p, 0, after), 0, (size_t)(p->a->count - after) * p->esize);
    }
    if (across_processes(p)) return -1;
    if (p->me) memcpy(p->s->buf[p->me], p->s->buf[0], (size_t)p->a->count * p->esize);
    return barrier(p); /* as from_device0 */
}

int rt_coll_run(rt_coll *c, int device, const rt_coll_args *a, double timeout_s, char *err, size_t cap) {
    if (device < 0 || device >= c->n) {
        snprintf(err, cap, "%s: device %d is not one of %d local devices", a->label, device, c->n);
        return -1;
    }
    if (a->kind == COLL_ALL_REDUCE && a->dtype != IR_F32 && a->dtype != IR_F64 && a->dtype != IR_I32) {
        snprintf(err, cap, "%s: cannot sum %s elements", a->label, ir_dtype_name(a->dtype));
        return -1;
    }
    if (a->kind == COLL_ALL_GATHER && (a->count % c->total || c->base + c->n > c->total)) {
        snprintf(err, cap, "%s: %lld elements do not split into %d replicas' blocks", a->label, (long long)a->count,
                 c->total);
        return -1;
    }
    slot *s = arrive(c, device, a, err, cap);
    if (!s) return -1;
    part p = {.c = c, .s = s, .a = a, .me = device, .esize = ir_dtype_size(a->dtype), .timeout = timeout_s};
    p.deadline = now_s() + timeout_s;
    int rc = wait_for(&p, -1, 0);
    p.deadline = now_s() + timeout_s; /* each later wait has the whole timeout again */
    if (!rc) rc = a->kind == COLL_BROADCAST ? broadcast(&p, err, cap) : a->kind == COLL_ALL_GATHER ? all_gather(&p) : all_reduce(&p);
    if (!rc) rc = barrier(&p); /* nobody reads another's buffer after this */
    if (rc) snprintf(err, cap, "%s", s->msg);
    leave(&p);
    return rc;
}
