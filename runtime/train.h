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
} rt_train_options;

enum { RT_STOPPED = 1 }; /* rt_train's result when *o->stop ended it early */

/* Trains from the session's current step to the target, evaluating on test
 * (may be NULL) after each epoch, and writes the checkpoints asked for (the
 * last step's always). Under mpirun a stop on any worker stops every worker
 * after the same step. Returns 0, RT_STOPPED, or -1 with a message. */
int rt_train(rt_session *s, const rt_dataset *train, const rt_dataset *test, const rt_train_options *o,
             char *err, size_t cap);

#endif
