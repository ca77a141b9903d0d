/* train.h - training, evaluation and prediction loops over a session, and
 * checkpoints of its variables. */
#ifndef MGC_TRAIN_H
#define MGC_TRAIN_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "data.h"
#include "session.h"

/* The model inputs that `program` (an ir_program bit, 0 for all) reads, as
 * per-example specs (batch axis removed); which[k] is spec k's input index.
 * Both have room for m->n_inputs. Returns the count. */
int rt_input_specs(const ir_module *m, unsigned program, rt_input_spec *specs, int *which);

/* Saves replica 0's variables (params, optimizer slots and state, by their
 * hierarchical names) with the step counter and seed as metadata. Every
 * process calls it (state is averaged over replicas first); only the process
 * that holds replica 0 writes. */
int rt_save_variables(rt_session *s, const char *path, uint64_t seed, char *err, size_t cap);
/* Loads variables into replica 0 and broadcasts them. Every param must be
 * present with its shape; optimizer slots too, unless the file has none (a
 * weights-only file: slots start at zero). *seed is set from the metadata
 * when present. */
int rt_load_variables(rt_session *s, const char *path, uint64_t *seed, char *err, size_t cap);

typedef struct {
    double loss;
    double metric[16];
    int64_t examples;
} rt_scores;

/* Loss and metrics over every example of ds exactly once (the last partial
 * batch padded and masked), summed over every worker under mpirun. */
int rt_evaluate(rt_session *s, const rt_dataset *ds, rt_scores *out, char *err, size_t cap);

/* Model outputs for every example of ds (whose inputs are those of
 * rt_input_specs(m, PROG_PREDICT, ...)): out[k] is m->outputs[k] as one
 * tensor [N, ...] (out holds m->n_outputs, zeroed by the caller); under
 * mpirun every worker ends with all of them (each runs its replicas' rows). */
int rt_predict(rt_session *s, const rt_dataset *ds, rt_tensor *out, char *err, size_t cap);

/* What rt_train reports through rt_train_options.report (libmgc's progress
 * callback): the text it would print on stdout, and the figures behind it. */
typedef enum {
    RT_REPORT_TEXT,   /* text only: "Epoch 1/3\n", an epoch's final progress line, "nothing to train..." */
    RT_REPORT_STEP,   /* after each step; text is the progress line when one is due, else NULL */
    RT_REPORT_EPOCH,  /* after each epoch's evaluation: its means, test scores and test line */
} rt_report_kind;

typedef struct {
    rt_report_kind kind;
    const char *text;          /* exactly what stdout would get (may start with \r), or NULL */
    int64_t step;              /* optimizer steps taken in all */
    int64_t epoch, epochs;     /* 0-based epoch, epochs of the run */
    int64_t done_in_epoch, steps_per_epoch;
    double loss;               /* mean over the epoch's steps so far */
    const double *metrics;     /* m->n_metrics means, as loss */
    const rt_scores *test;     /* RT_REPORT_EPOCH with a test set, else NULL */
} rt_train_report;

typedef struct {
    int64_t epochs;          /* used when steps == 0 */
    int64_t steps;           /* total optimizer steps, 0: epochs */
    uint64_t seed;
    int check_replicas;      /* every K steps, 0: never */
    bool check_numerics;     /* stop at the first non-finite loss (ops: rt_session_options) */
    bool quiet;              /* no progress lines (other ranks) */
    const char *history;     /* JSON Lines, one object per epoch, or NULL: the whole file is
                                rewritten atomically at each epoch end (rank 0), never truncated first */
    bool history_append;     /* keep the lines the file holds (a resumed run) */
    const char *checkpoint_dir; /* periodic checkpoints there (resume.h), NULL: none */
    int64_t save_every;      /* with checkpoint_dir: every N steps, or N epochs when save_every_epochs */
    bool save_every_epochs;
    int keep;                /* checkpoints kept, newest first */
    const volatile sig_atomic_t *stop; /* set (by a signal): finish the step, checkpoint, return RT_STOPPED */
    /* When set, nothing is printed: each text and figure goes to report
     * instead; a nonzero return (from a STEP report) stops training after
     * that step as *stop does. tty: progress lines as for a terminal. */
    int (*report)(void *ctx, const rt_train_report *r);
    void *report_ctx;
    bool tty;
    /* Issue 14 (docs/runtime.md, "Steps in flight"): step k + 1 may be issued
     * before step k's report, when the session can (rt_session_can_run_ahead)
     * and nothing must see step k's state first (an epoch's end, a
     * checkpoint, a replica check). The report of step k may then come while
     * step k + 1 runs: it must not read the session, and a stop it or *stop
     * asks for ends training after step k + 1, whose state is kept. */
    bool run_ahead;
} rt_train_options;

enum { RT_STOPPED = 1 }; /* rt_train's result when *o->stop (or the report callback) ended it early */


/* The report all-reduce of `replica` (the loss and metric means of a train
 * step, f32[1 + n_metrics]): the node rt_session_run_read reads. */
int rt_report_node(const ir_module *m, int replica);

/* Trains from the session's current step to the target, evaluating on test
 * (may be NULL) after each epoch, and writes the checkpoints asked for (the
 * last step's always). Under mpirun a stop on any worker stops every worker
 * after the same step. Returns 0, RT_STOPPED, or -1 with a message. */
int rt_train(rt_session *s, const rt_dataset *train, const rt_dataset *test, const rt_train_options *o,
             char *err, size_t cap);

#endif
