/* scratch.c - per-thread buffers kept across kernel calls (kernels_impl.h,
 * cpu_thread_scratch): a fresh large malloc each call is an mmap and its page
 * faults, and a buffer shared across threads would need a lock. */
#include <pthread.h>
#include <stdlib.h>

#include "kernels_impl.h"

typedef struct {
    float *p[CPU_SCRATCH_USERS];
    size_t n[CPU_SCRATCH_USERS];
} scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *v) {
    scratch *s = v;
    for (int u = 0; u < CPU_SCRATCH_USERS; u++) free(s->p[u]);
    free(s);
}
static void scratch_init(void) { pthread_key_create(&scratch_key, scratch_free); }

float *cpu_thread_scratch(int user, size_t n) {
    pthread_once(&scratch_once, scratch_init);
    scratch *s = pthread_getspecific(scratch_key);
    if (!s && (s = calloc(1, sizeof *s)) && pthread_setspecific(scratch_key, s)) free(s), s = NULL;
    if (!s) return NULL;
    if (s->n[user] < n) {
        free(s->p[user]);
        s->p[user] = malloc(n * sizeof(float)), s->n[user] = s->p[user] ? n : 0;
    }
    return s->p[user];
}
