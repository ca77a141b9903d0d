/* fixture.h - hand-built modules for the ir/plan tests. */
#ifndef MGC_TEST_IRPLAN_FIXTURE_H
#define MGC_TEST_IRPLAN_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include "../../ir/ir.h"

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

#define CHECK_STR(got, want)                                                                                  \
    do {                                                                                                      \
        const char *g_ = (got), *w_ = (want);                                                                 \
        if (strcmp(g_, w_)) {                                                                                 \
            fprintf(stderr, "%s:%d: got\n  %s\nwant\n  %s\n", __FILE__, __LINE__, g_, w_);                   \
            exit(1);                                                                                          \
        }                                                                                                     \
    } while (0)

/* Node indices of the rich module that tests refer to. */
typedef struct {
    int image, label;                          /* host inputs */
    int shard_x[2], kernel[2], bias[2], matmul[2], logits[2], xent[2], match[2];
    int grad_k[2], grad_b[2], all_reduce[2], view_k[2], view_b[2], update_k[2], bcast_k[2];
} rich_nodes;

/* Two replicas of a dense layer with loss, metric, gradients, one bucket,
 * updates and broadcasts, a memory plan, a schedule and two sources; every
 * module field is set to something other than its default. */
ir_module *rich_module(rich_nodes *ix);

/* A forward-only module on no devices (before replication). */
ir_module *small_module(void);

/* ir_print into a malloc'd string. */
char *print_to_string(const ir_module *m);

#endif
