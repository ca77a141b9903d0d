/* agree.h - the workers of an mpirun job agree before the first step.
 *
 * Each worker fills a fixed-size record of what it is about to do (its plan,
 * options, checkpoint and data, each as a digest) or why it cannot start, and
 * every worker receives every record in one collective. So a worker that
 * failed before the first step (a missing plan, a bad checkpoint) stops the
 * others at once instead of after the collective timeout, and workers that
 * would train on different steps, seeds, checkpoints or data stop before
 * they silently diverge. */
#ifndef MGC_AGREE_H
#define MGC_AGREE_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"

enum { RT_FACT_TEXT = 200 };

typedef struct {
    int32_t failed;                  /* 1: this worker cannot start; text says why */
    char text[RT_FACT_TEXT];         /* its error, or the plan's path */
    uint32_t plan;                   /* crc32 of the plan's sources, 0 unknown */
    int64_t global_batch;
    int32_t seed_given;
    uint64_t seed;
    int64_t steps, epochs;
    char load[RT_FACT_TEXT];         /* --load path, "" none */
    uint32_t load_crc;               /* crc32 of the checkpoint's bytes */
    int64_t examples;                /* of the data, -1 not yet known */
    uint32_t data_crc;               /* crc32 of the data's bytes */
} rt_worker_facts;

/* A record with nothing known yet (every byte set, so records compare bytewise). */
void rt_facts_init(rt_worker_facts *f);
/* Marks the record failed with message msg. */
void rt_facts_fail(rt_worker_facts *f, const char *msg);

/* Exchanges the records of every worker (no-op without ip or with one
 * process). Returns 0 when no worker failed and every fact agrees; else -1
 * with one line in err naming the first failed worker ("rank 1 cannot start:
 * ...") or the first difference ("workers disagree: --steps is 5 on rank 0
 * but 10 on rank 1"). Every worker returns the same verdict, so all stop
 * together. */
int rt_workers_agree(const rt_interprocess *ip, const rt_worker_facts *mine, double timeout_s, char *err,
                     size_t cap);

#endif
