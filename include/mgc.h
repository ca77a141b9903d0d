/* mgc.h - libmgc: compile a model into a mirrored plan, train it, evaluate
 * it and predict with it from a program (docs/api.md).
 *
 * Handles
 *   mgc_plan     a compiled, replicated plan (from a model file or string,
 *                or a .mgx file). Immutable once made.
 *   mgc_session  a plan bound to this process's devices: arenas, variables,
 *                the executor. It borrows its plan: free the session first.
 *
 * Status and messages
 *   Every function that can fail returns an mgc_status and, when err is not
 *   NULL, fills *err with the status and one message (several lines for
 *   compile errors: "file:line:col: error: ...", the source line, a caret).
 *   MGC_OK leaves err->message empty. libmgc never exits and never writes to
 *   stdout or stderr: training progress goes to the progress callback only.
 *   The exceptions are a job's, as documented there: mgc_job_start's MPI_Init
 *   watchdog and mgc_job_end's abort of every process after a failure.
 *
 * Ownership
 *   Strings and arrays a getter returns belong to the handle and live as
 *   long as it. Buffers the caller passes (feeds, outputs, variables) stay
 *   the caller's: libmgc reads or writes them during the call only and keeps
 *   no pointer to them after it returns.
 *
 * Threads
 *   Distinct handles may be used from distinct threads at once. One handle
 *   must not be used by two threads at once (a session runs its own worker
 *   threads inside each call). A plan may be shared by several sessions on
 *   several threads, since nothing changes it after it is made. The progress
 *   callback runs on the thread that called mgc_fit. threads_per_device is
 *   process-wide (OpenBLAS's thread count, set by mgc_session_new): sessions
 *   that run at the same time should ask for the same value.
 *
 * Processes
 *   A session runs every replica of its plan in this process (cpu:N devices
 *   are logical CPU devices; gpu:N need CUDA), unless it is given a job
 *   (mgc_job: the processes under mpirun), then this process's replicas.
 *
 * The mgc CLI is a client of this header: every command is made of the
 * calls below (docs/api.md, "The CLI as a client of the API").
 */
#ifndef MGC_H
#define MGC_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MGC_VERSION_MAJOR 0
#define MGC_VERSION_MINOR 1

typedef enum {
    MGC_OK = 0,
    MGC_ERR_COMPILE = 1,  /* the model source has errors (the message quotes them) */
    MGC_ERR_IO = 2,       /* a file cannot be read or written, or is not valid */
    MGC_ERR_ARG = 3,      /* a bad argument: unknown name, wrong dtype or shape, short buffer */
    MGC_ERR_RUNTIME = 4,  /* a failure while running: devices, collectives, numerics */
    MGC_STOPPED = 5,      /* mgc_fit: the progress callback asked to stop (not an error) */
} mgc_status;

typedef struct {
    mgc_status status;
    char message[4096];   /* NUL-terminated; longer messages are cut */
} mgc_error;

/* The element types of inputs, outputs and variables. */
typedef enum { MGC_F32 = 0, MGC_I32 = 1, MGC_F64 = 2, MGC_U8 = 3 } mgc_dtype;

#define MGC_MAX_RANK 8

/* A tensor's name and type. For plan inputs and outputs, shape is ONE
 * example's (the batch axis removed); for variables, the whole tensor. */
typedef struct {
    const char *name;
    mgc_dtype dtype;
    int rank;
    int64_t shape[MGC_MAX_RANK];
} mgc_tensor_info;

/* A caller's host buffer bound to a model input: C order, native byte order,
 * shape [N, per-example...] with N examples. dtype and shape must equal the
 * plan's (mgc_plan_input); nothing is converted. */
typedef struct {
    const char *name;
    mgc_dtype dtype;
    int rank;
    const int64_t *shape;
    const void *data;
} mgc_feed;

/* A caller's buffer that receives a model output: bytes must hold
 * N x (mgc_plan_output's per-example size) elements of its dtype. */
typedef struct {
    const char *name;
    void *data;
    size_t bytes;
} mgc_fetch;

const char *mgc_dtype_name(mgc_dtype t);   /* "f32", "i32", "f64", "u8" */
size_t mgc_dtype_size(mgc_dtype t);

/* ---- plans ---- */

typedef struct mgc_plan mgc_plan;

/* Text that compiling produces besides the plan, for a caller that shows it
 * (the mgc CLI prints DIAG, NOTE and TIMING on stderr, DUMP on stdout). It
 * comes as it is made, in order, on the calling thread. */
typedef enum {
    MGC_TEXT_DIAG = 0,    /* the compiler's diagnostics ("file:line:col: error: ...", line, caret) */
    MGC_TEXT_NOTE = 1,    /* a note without "file:line", e.g. a GPU fallback, one line with its \n */
    MGC_TEXT_DUMP = 2,    /* the IR after the pass dump_after names */
    MGC_TEXT_TIMING = 3,  /* time_passes: "  shapes      0.12 ms    42 nodes\n" per pass */
} mgc_text_kind;
typedef void (*mgc_text_fn)(mgc_text_kind kind, const char *text, void *user);

typedef struct {
    const char *devices;      /* "cpu:0,cpu:1" or "gpu:0,gpu:1"; NULL: "cpu:0" */
    const char *stdlib_dir;   /* NULL: $MGC_STDLIB, else the installed (or build tree's) stdlib */
    int64_t global_batch;     /* 0: the model's batch x replicas */
    const char *cross_device; /* "ring" (NULL), "one-device" or "hierarchical" */
    int64_t bucket_bytes;     /* 0: the default (4 MiB) */
    /* the options below are `mgc compile`'s of the same names */
    const char *sparse_grads; /* "auto" (NULL), "always" or "never" */
    int no_fuse;              /* keep every op its own kernel */
    int strict_devices;       /* gpu devices that are not here: MGC_ERR_ARG (1), or (0) a plan for
                                 as many CPU devices and a MGC_TEXT_NOTE saying so */
    const char *dump_after;   /* a pass (mgc_pass_name): the IR after it as MGC_TEXT_DUMP */
    int time_passes;          /* each pass's wall time and node count as MGC_TEXT_TIMING */
    int forward_only;         /* elaborate and infer shapes only (one replica, the forward graph):
                                 a plan to describe (mgc dump), not to run or save */
    mgc_text_fn text;         /* NULL: diagnostics are in the error message only, the rest dropped */
    void *text_user;
} mgc_compile_options;

/* Fills o with the defaults above. */
void mgc_compile_options_init(mgc_compile_options *o);

/* Compiles a model file, or model source text (name stands for its path in
 * messages; `use` modules come from the stdlib directory), into a plan for
 * o's devices (o may be NULL). */
mgc_status mgc_compile_file(const char *path, const mgc_compile_options *o, mgc_plan **out, mgc_error *err);
mgc_status mgc_compile_source(const char *source, const char *name, const mgc_compile_options *o, mgc_plan **out,
                              mgc_error *err);
/* .mgx plan files (docs/plan-format.md), as `mgc compile -o` writes them.
 * mgc_plan_load also checks that the plan can run here (its batch, results
 * and memory); mgc_plan_read only reads and verifies it (to describe it). */
mgc_status mgc_plan_load(const char *path, mgc_plan **out, mgc_error *err);
mgc_status mgc_plan_read(const char *path, mgc_plan **out, mgc_error *err);
mgc_status mgc_plan_save(const mgc_plan *p, const char *path, mgc_error *err);
void mgc_plan_free(mgc_plan *p);

const char *mgc_plan_model_name(const mgc_plan *p);
int mgc_plan_devices(const mgc_plan *p);
int64_t mgc_plan_global_batch(const mgc_plan *p);
int mgc_plan_has_train(const mgc_plan *p);   /* 1 when the model has a train block */
int64_t mgc_plan_epochs(const mgc_plan *p);  /* the train block's epochs, 0 when not given */
int mgc_plan_input_count(const mgc_plan *p);
mgc_status mgc_plan_input(const mgc_plan *p, int k, mgc_tensor_info *out, mgc_error *err);
int mgc_plan_output_count(const mgc_plan *p);
mgc_status mgc_plan_output(const mgc_plan *p, int k, mgc_tensor_info *out, mgc_error *err);
int mgc_plan_metric_count(const mgc_plan *p);
const char *mgc_plan_metric_name(const mgc_plan *p, int k); /* NULL when k is out of range */
int64_t mgc_plan_node_count(const mgc_plan *p);  /* the nodes of its graph (every replica's) */

/* What mgc_plan_describe writes. */
typedef enum {
    MGC_DESCRIBE_IR = 0,             /* the IR as text (mgc dump) */
    MGC_DESCRIBE_DOT = 1,            /* Graphviz dot, one replica (mgc dump --format dot) */
    MGC_DESCRIBE_DOT_REPLICATED = 2, /* Graphviz dot of every replica (mgc dump --format dot --replicated) */
    MGC_DESCRIBE_INSPECT = 3,        /* inputs, outputs, devices, optimizer, params, buckets, memory,
                                        the race check (mgc inspect) */
} mgc_describe_kind;

/* A description of p, NUL-terminated, in *text (free it with mgc_free). */
mgc_status mgc_plan_describe(const mgc_plan *p, mgc_describe_kind kind, char **text, mgc_error *err);
void mgc_free(void *p);

/* ---- for command-line tools ---- */

/* The compiler's passes in order, "elaborate" first (k = 0), NULL after the last. */
const char *mgc_pass_name(int k);
/* Usable CUDA devices; 0 with the reason in why (cap bytes) when there are none. */
int mgc_gpu_count(char *why, size_t cap);
/* MGC_OK when path can be written as mgc writes files (a regular file or an
 * absent one in an existing directory), else MGC_ERR_IO: checked before work. */
mgc_status mgc_check_output(const char *path, mgc_error *err);

/* ---- sessions ---- */

typedef struct mgc_session mgc_session;
struct mgc_job;
struct mgc_dataset;

typedef struct {
    uint64_t seed;              /* initial weights and shuffling (mgc run --seed; default 1) */
    int threads_per_device;     /* CPU threads of each device's kernels (default 1; 0: the cores this
                                   process may use / its devices and the job's processes here, at least 1) */
    double collective_timeout;  /* seconds a collective waits for every device (default 60) */
    int check_replicas;         /* mgc_fit: compare replicas bit for bit every K steps (0: never) */
    int check_numerics;         /* stop at the first op whose output holds NaN or Inf, naming it */
    int no_cuda_graphs;         /* GPU plans: run every train step eagerly, no CUDA graph (mgc run --no-cuda-graphs) */
    struct mgc_job *job;        /* NULL: every replica here. Else (borrowed, outlives the session) this
                                   process's replicas of a plan mgc_job_plan fitted to the job; the
                                   variables are then left unset: the workers agree (mgc_job_agree), then
                                   mgc_session_init or mgc_checkpoint_load sets them */
} mgc_session_options;

void mgc_session_options_init(mgc_session_options *o);

/* Binds p to its devices and sets the variables from their initializers
 * (deterministic in seed and each variable's name, as mgc run does). */
mgc_status mgc_session_new(const mgc_plan *p, const mgc_session_options *o, mgc_session **out, mgc_error *err);
void mgc_session_free(mgc_session *s);
int64_t mgc_session_step(const mgc_session *s);   /* optimizer steps taken */
uint64_t mgc_session_seed(const mgc_session *s);  /* shuffling seed (a loaded checkpoint's, else the option) */
/* Sets the variables from their initializers (seed: the session's); what
 * mgc_session_new does unless a job is given. */
mgc_status mgc_session_init(mgc_session *s, mgc_error *err);
/* The shuffling seed from now on (mgc run --seed beside --load keeps it). */
void mgc_session_set_seed(mgc_session *s, uint64_t seed);

/* Every function below that takes feeds checks each against the plan (an
 * input named, its dtype, its per-example shape, the same N for all) and
 * needs every input the call reads (labels only for training and eval).
 * The data are copied once into the runtime (mgc_train_step: straight into
 * the devices' input staging; mgc_fit/evaluate/predict: into a dataset the
 * batch loader gathers from); the caller's buffers are never written. */

/* Means over one global batch (N must be the plan's global batch). */
typedef struct {
    double loss;
    double metrics[16];   /* in the order of mgc_plan_metric_name */
    int64_t examples;     /* mgc_evaluate: the examples counted */
} mgc_scores;

/* One optimizer step on one global batch; out (may be NULL) gets its loss
 * and metrics averaged over the replicas. */
mgc_status mgc_train_step(mgc_session *s, const mgc_feed *feeds, int n_feeds, mgc_scores *out, mgc_error *err);

/* What mgc_fit reports: a line of text, a step, an epoch's end. */
typedef enum {
    MGC_PROGRESS_TEXT = 0,    /* line only ("Epoch 2/3\n", an epoch's final progress line); figures zero */
    MGC_PROGRESS_STEP = 1,    /* after each step; the callback's result counts here only */
    MGC_PROGRESS_EPOCH = 2,   /* the epoch is done: its means, and the validation figures */
} mgc_progress_kind;

typedef struct {
    mgc_progress_kind kind;
    int64_t step;             /* optimizer steps taken in all (the session's step) */
    int64_t epoch, epochs;    /* 0-based epoch and the epoch count, both counted from step 0
                                 as mgc run counts them (a second fit goes on numbering) */
    int64_t step_in_epoch, steps_per_epoch;
    double loss;              /* the epoch's mean so far */
    const double *metrics;    /* mgc_plan_metric_count means */
    int has_validation;
    double val_loss;
    const double *val_metrics;
    int64_t val_examples;
    const char *line;         /* the text `mgc run` prints at this point (Keras-style progress line,
                                 "Epoch 1/3", the test line), with its \r or \n; NULL: none due */
} mgc_progress;

/* Returns 0 to go on, nonzero (at a MGC_PROGRESS_STEP report) to stop after
 * this step: mgc_fit then returns MGC_STOPPED and the session keeps the
 * step's weights. */
typedef int (*mgc_progress_fn)(const mgc_progress *p, void *user);

typedef struct {
    int64_t epochs;                  /* epochs to train from the current step (default 1) */
    int64_t steps;                   /* else this many steps (0: use epochs) */
    const mgc_feed *validation;      /* evaluated after every epoch, or NULL */
    int n_validation;
    mgc_progress_fn progress;        /* NULL: no reports */
    void *user;
    int tty;                         /* lines for a terminal: \r-updated, at most 4 a second */
    /* mgc run's --history, --checkpoint-dir, --save-every and --keep */
    const char *history;             /* JSON Lines, one object per epoch, the file rewritten whole (atomically)
                                        at each epoch's end; NULL: none */
    int history_append;              /* keep the lines the history file holds (a resumed fit) */
    const char *checkpoint_dir;      /* an existing directory: DIR/step-N.safetensors as mgc_checkpoint_save
                                        writes them, also when the callback stops the fit; NULL: none */
    int64_t save_every;              /* every N steps, or N epochs with save_every_epochs (0: every epoch);
                                        always at the end */
    int save_every_epochs;
    int keep;                        /* the newest checkpoints kept in checkpoint_dir (0: 3) */
    /* mgc run's counting, workers and signals */
    int total;                       /* epochs and steps count from step 0, not from the session's step
                                        (mgc run --epochs/--steps: a resumed fit trains what is left) */
    int quiet;                       /* no lines and no history file (mgc run's ranks after 0) */
    const volatile sig_atomic_t *stop; /* nonzero (a signal handler's flag): stop after the step as the
                                        callback's nonzero does, MGC_STOPPED; under a job summed over
                                        the workers, so all stop after the same step */
    const struct mgc_dataset *validation_data; /* mgc_fit_dataset: evaluated after every epoch, or NULL */
    int run_ahead;                   /* 1 (mgc run's): the next train step may start before the progress
                                        callback sees this one, which then must not call the session, and
                                        whose stop (as *stop's) ends the fit after that next step, kept as
                                        the session's state; faster on several devices (docs/runtime.md,
                                        "Steps in flight"). 0 (default): one step at a time */
} mgc_fit_options;

void mgc_fit_options_init(mgc_fit_options *o);

/* Trains as `mgc run` does: global batches of the plan, shuffled per epoch
 * by (seed, epoch), the last partial batch dropped. Epoch e of a fit that
 * starts at step S shuffles as mgc run's epoch floor(S / steps per epoch) + e. */
mgc_status mgc_fit(mgc_session *s, const mgc_feed *feeds, int n_feeds, const mgc_fit_options *o, mgc_error *err);
/* Loss and metrics over every example once (the last batch padded, masked). */
mgc_status mgc_evaluate(mgc_session *s, const mgc_feed *feeds, int n_feeds, mgc_scores *out, mgc_error *err);
/* Every model output for every example, into the caller's buffers (one
 * fetch per output, by name). */
mgc_status mgc_predict(mgc_session *s, const mgc_feed *feeds, int n_feeds, const mgc_fetch *fetches, int n_fetches,
                       mgc_error *err);

/* ---- variables ---- */

typedef enum {
    MGC_VAR_PARAM = 0,    /* trainable */
    MGC_VAR_STATE = 1,    /* non-trainable state (moving statistics) */
    MGC_VAR_SLOT = 2,     /* optimizer slot */
} mgc_var_kind;

int mgc_variable_count(const mgc_session *s);
/* Variable k (sorted by name): name, dtype and whole shape; kind may be NULL. */
mgc_status mgc_variable_info(const mgc_session *s, int k, mgc_tensor_info *out, mgc_var_kind *kind, mgc_error *err);
/* Copies a variable's value (bytes must be its size exactly) out of replica
 * 0, or into every replica. */
mgc_status mgc_variable_read(mgc_session *s, const char *name, void *dst, size_t bytes, mgc_error *err);
mgc_status mgc_variable_write(mgc_session *s, const char *name, const void *src, size_t bytes, mgc_error *err);

/* safetensors checkpoints: the same bytes as `mgc run --save` for the same
 * variables, step and seed; loading sets the step and the shuffling seed. */
mgc_status mgc_checkpoint_save(mgc_session *s, const char *path, mgc_error *err);
mgc_status mgc_checkpoint_load(mgc_session *s, const char *path, mgc_error *err);
/* The newest complete checkpoint a fit with checkpoint_dir wrote there (what
 * `mgc run --checkpoint-dir` resumes from): 1 with its path (cap bytes) and
 * step, 0 when dir holds none or does not exist, -1 after an error (err). */
int mgc_checkpoint_newest(const char *dir, char *path, size_t cap, int64_t *step, mgc_error *err);

/* ---- the processes of an mpirun job ---- */

/* Under mpirun with two or more processes each process is one worker of a
 * job: together they run one plan, each its own devices' replicas (re-planned
 * from the sources the plan carries, keeping its global batch). Before the
 * first step the workers agree: on the plan, the run's facts, the checkpoint
 * and the data, and that none failed (a local failure is told to the others
 * at the next agreement, so that all stop with one message instead of after
 * a collective timeout). Every call below is collective where it says so:
 * every worker makes it, in the same order. */
typedef struct mgc_job mgc_job;

/* Starts the job: MPI under mpirun (a watchdog ends the process with status
 * 1, after a collective timeout message on stderr, when MPI_Init has not
 * finished after timeout seconds: a peer froze or never started), else a job
 * of one process. timeout (0: 60 s) also bounds each agreement. MGC_ERR_RUNTIME
 * when MPI fails or this build has no MPI under mpirun. */
mgc_status mgc_job_start(double timeout, mgc_job **out, mgc_error *err);
int mgc_job_rank(const mgc_job *j);   /* 0 .. size-1 */
int mgc_job_size(const mgc_job *j);   /* processes; 1 outside mpirun */
/* A local failure (the first is kept), told to the others at the next
 * mgc_job_agree; the caller says it itself. */
void mgc_job_fail(mgc_job *j, const char *message);
int mgc_job_failed(const mgc_job *j);

/* What a run is about to do, agreed on besides the plan and data. */
typedef struct {
    int seed_given;            /* the seed was given (beside a checkpoint, it wins over the checkpoint's) */
    uint64_t seed;
    int64_t steps, epochs;     /* the run's targets (0: none) */
    const char *checkpoint;    /* the checkpoint it starts from (its bytes' CRC is agreed), or NULL */
} mgc_job_facts;

/* Notes the plan (its sources' digest, global batch; named by path) and
 * facts for the next agreement. MGC_ERR_IO when the checkpoint cannot be
 * read: the caller says so and fails locally. */
mgc_status mgc_job_set_facts(mgc_job *j, const mgc_plan *p, const char *path, const mgc_job_facts *f, mgc_error *err);
/* Notes the data's examples and CRC for the next agreement. */
void mgc_job_set_data(mgc_job *j, const struct mgc_dataset *d);
/* Collective: every worker's facts are exchanged. MGC_OK when none failed and
 * all agree; else MGC_ERR_RUNTIME with one line ("rank 1 cannot start: ...",
 * "workers disagree: --steps is 5 on rank 0 but 10 on rank 1"), the same on
 * every worker: the workers have then stopped together. */
mgc_status mgc_job_agree(mgc_job *j, mgc_error *err);
/* Collective: fits p (not yet used by a session) to the job: the workers'
 * devices together, worker r's replicas after those of workers 0..r-1, the
 * plan's global batch kept. A no-op in a job of one process. text (may be
 * NULL) gets rank 0's MGC_TEXT_NOTE "N workers, R replicas: re-planned PATH
 * for B examples per replica". */
mgc_status mgc_job_plan(mgc_job *j, mgc_plan *p, mgc_text_fn text, void *user, mgc_error *err);
/* Ends the job and frees j (NULL: no-op): after a failure (status nonzero)
 * that the workers did not stop on together at an agreement, every process of
 * the job is ended with that status (a peer may be gone, and finishing MPI
 * would wait for it forever; never returns). Status 0 (also after a failure
 * every worker made alike, as mgc_job_plan's) finishes MPI. Returns status. */
int mgc_job_end(mgc_job *j, int status);

/* Fits a loaded plan (not yet used by a session) to this machine: a plan for
 * GPUs that are not here is re-planned for as many CPU devices (a
 * MGC_TEXT_NOTE "PATH: gpu:N is not available: WHY; re-planned for K CPU
 * devices" to text), or with strict MGC_ERR_ARG "PATH: gpu:N is not available:
 * WHY". */
mgc_status mgc_plan_fit_here(mgc_plan *p, int strict, mgc_text_fn text, void *user, mgc_error *err);
/* MGC_ERR_RUNTIME "PATH: the plan needs X GiB of memory, this machine has Y
 * GiB" when the arenas of this process's devices (the replicas of j, which
 * may be NULL: all) and the inputs do not fit in RAM and swap. */
mgc_status mgc_plan_check_memory(const mgc_plan *p, const mgc_job *j, mgc_error *err);
/* The .mgx path a plan was loaded from ("" when compiled). */
const char *mgc_plan_path(const mgc_plan *p);
/* 1 when the predict program reads input k (labels are not read). */
int mgc_plan_input_predicts(const mgc_plan *p, int k);

/* ---- datasets from files ---- */

typedef struct mgc_dataset mgc_dataset;

#define MGC_DEFAULT_DATA_DIR "/usr/share/datasets/fashion-mnist" /* mgc_data_options.dir NULL */
#define MGC_DEFAULT_TEXT_DIR "/usr/share/games/fortunes"         /* "text:" alone */
#define MGC_TEXT_MAX_CONTEXT 65536                                /* the largest context */
#define MGC_MAX_INPUTS 16                                         /* a plan's inputs, and bindings */

typedef enum {
    MGC_DATA_TRAIN = 0,    /* every input, the train part, at least one global batch */
    MGC_DATA_TEST = 1,     /* every input, the test part (text: the last 10%), at least one example */
    MGC_DATA_PREDICT = 2,  /* the inputs the predict program reads, at least one example */
} mgc_data_use;

typedef struct {
    const char *dir;              /* IDX files train-* / t10k-* (NULL: the default data directory), or
                                     "text:PATH": the bytes of a file or directory as tokens (mgc run --data) */
    int64_t context;              /* text: the window T (0: the model's) */
    const char *const *bindings;  /* "NAME=FILE" (IDX or NPY) per input instead of dir (mgc run --input) */
    int n_bindings;
} mgc_data_options;

/* Opens the inputs use needs, read once into memory; labels are checked
 * against the classes of the logits they label. */
mgc_status mgc_dataset_open(const mgc_plan *p, mgc_data_use use, const mgc_data_options *o, mgc_dataset **out,
                            mgc_error *err);
void mgc_dataset_free(mgc_dataset *d);
int64_t mgc_dataset_count(const mgc_dataset *d);

/* mgc_fit, mgc_evaluate and mgc_predict over a dataset (o->validation_data
 * the validation set). Under a job each worker runs its replicas' rows and
 * the scores and outputs are every worker's. */
mgc_status mgc_fit_dataset(mgc_session *s, const mgc_dataset *train, const mgc_fit_options *o, mgc_error *err);
mgc_status mgc_evaluate_dataset(mgc_session *s, const mgc_dataset *d, mgc_scores *out, mgc_error *err);

/* An output the library allocated: [N, per-example...]. */
typedef struct {
    const char *name;
    mgc_dtype dtype;
    int rank;
    int64_t shape[MGC_MAX_RANK];
    void *data;
    size_t bytes;
} mgc_output;
/* Every model output for every example of d, in the plan's output order:
 * *outputs (mgc_plan_output_count of them) to free with mgc_outputs_free. */
mgc_status mgc_predict_dataset(mgc_session *s, const mgc_dataset *d, mgc_output **outputs, mgc_error *err);
void mgc_outputs_free(mgc_output *outputs, int n);
/* Writes one output as a .npy file (any size). */
mgc_status mgc_output_save_npy(const mgc_output *o, const char *path, mgc_error *err);

/* ---- trace and profile (docs/trace.md) ---- */

typedef struct {
    int64_t from, to;     /* the steps traced, 1 = the first train step after this call; to < from: none */
    int profile;          /* sum every step after the first for mgc_session_trace_end's profile */
} mgc_trace_options;

/* Times the train steps of this process's replicas from now on. */
mgc_status mgc_session_trace(mgc_session *s, const mgc_trace_options *o, mgc_error *err);
/* Stops timing. path (may be NULL): the kept steps as Chrome trace JSON
 * (pid: replica, tid: compute/comm stream). profile (may be NULL; free with
 * mgc_free): the mean step time, comm overlap and the top 15 ops, as text.
 * *kept (may be NULL): the steps kept for path. */
mgc_status mgc_session_trace_end(mgc_session *s, const char *path, char **profile, int64_t *kept, mgc_error *err);

/* ---- ONNX export (docs/onnx.md) ---- */

/* Writes the plan's inference graph - the predict program of one replica,
 * its outputs those of mgc_predict, batch the plan's per-replica batch - as
 * an ONNX model (opset 17) with the session's variables as initializers.
 * MGC_ERR_ARG names the op when the graph holds one without an ONNX mapping,
 * or when the model has no output; MGC_ERR_IO when path cannot be written. */
mgc_status mgc_export_onnx(mgc_session *s, const char *path, mgc_error *err);

#ifdef __cplusplus
}
#endif

#endif
