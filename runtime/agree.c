/* agree.c - every worker's record to every worker, and the verdict (agree.h). */
#include "agree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rt_facts_init(rt_worker_facts *f) {
    memset(f, 0, sizeof *f);
    f->examples = -1;
}

void rt_facts_fail(rt_worker_facts *f, const char *msg) {
    f->failed = 1;
    snprintf(f->text, sizeof f->text, "%s", msg);
}

/* The first fact on which worker b differs from worker a, described. */
static bool differ(const rt_worker_facts *a, const rt_worker_facts *b, int ra, int rb, char *err, size_t cap) {
    if (a->global_batch != b->global_batch)
        return snprintf(err, cap, "workers disagree: the plan's global batch is %lld on rank %d but %lld on rank %d",
                        (long long)a->global_batch, ra, (long long)b->global_batch, rb), true;
    if (a->plan != b->plan)
        return snprintf(err, cap, "workers disagree: rank %d runs %s and rank %d runs %s, plans compiled from "
                        "different sources", ra, a->text, rb, b->text), true;
    if (a->steps != b->steps)
        return snprintf(err, cap, "workers disagree: --steps is %lld on rank %d but %lld on rank %d",
                        (long long)a->steps, ra, (long long)b->steps, rb), true;
    if (a->epochs != b->epochs)
        return snprintf(err, cap, "workers disagree: --epochs is %lld on rank %d but %lld on rank %d",
                        (long long)a->epochs, ra, (long long)b->epochs, rb), true;
    if (a->seed_given != b->seed_given || a->seed != b->seed)
        return snprintf(err, cap, "workers disagree: --seed is %s%llu on rank %d but %s%llu on rank %d",
                        a->seed_given ? "" : "the default ", (unsigned long long)a->seed, ra,
                        b->seed_given ? "" : "the default ", (unsigned long long)b->seed, rb), true;
    if (!*a->load != !*b->load || a->load_crc != b->load_crc)
        return snprintf(err, cap, "workers disagree: --load is %s on rank %d but %s on rank %d",
                        *a->load ? a->load : "not given", ra, *b->load ? b->load : "not given", rb), true;
    if (a->examples != b->examples || a->data_crc != b->data_crc)
        return snprintf(err, cap, "workers disagree: the data differ (%lld examples on rank %d, %lld on rank %d%s)",
                        (long long)a->examples, ra, (long long)b->examples, rb,
                        a->examples == b->examples ? ", other contents" : ""), true;
    return false;
}

int rt_workers_agree(const rt_interprocess *ip, const rt_worker_facts *mine, double timeout_s, char *err,
                     size_t cap) {
    if (!ip || ip->size < 2) return mine->failed ? (snprintf(err, cap, "%s", mine->text), -1) : 0;
    size_t one = sizeof *mine;
    rt_worker_facts *all = calloc((size_t)ip->size, one);
    if (!all) return snprintf(err, cap, "out of memory"), -1;
    memcpy(&all[ip->rank], mine, one); /* the others' slots stay zero: a byte-wise sum gathers them */
    int rc = ip->all_reduce_sum(ip->ctx, all, (int64_t)(one * (size_t)ip->size), IR_U8, timeout_s,
                                "the workers' agreement before the first step", err, cap);
    for (int r = 0; r < ip->size && !rc; r++)
        if (all[r].failed) rc = -1, snprintf(err, cap, "rank %d cannot start: %s", r, all[r].text);
    for (int r = 1; r < ip->size && !rc; r++)
        if (differ(&all[0], &all[r], 0, r, err, cap)) rc = -1;
    free(all);
    return rc;
}
