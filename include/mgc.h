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
 *   are logical CPU devices; gpu:N need CUDA). Several processes under
 *   mpirun are the CLI's (mgc run) for now.
 *
 * The mgc CLI is a client of this header: mgc compile, dump and inspect are
 * made of the calls below (docs/api.md, "The CLI as a client of the API").
 */
#ifndef MGC_H
#define MGC_H

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

typedef struct {
    uint64_t seed;              /* initial weights and shuffling (mgc run --seed; default 1) */
    int threads_per_device;     /* CPU threads of each device's kernels (default 1) */
    double collective_timeout;  /* seconds a collective waits for every device (default 60) */
    int check_replicas;         /* mgc_fit: compare replicas bit for bit every K steps (0: never) */
    int check_numerics;         /* stop at the first op whose output holds NaN or Inf, naming it */
    int no_cuda_graphs;         /* GPU plans: run every train step eagerly, no CUDA graph (mgc run --no-cuda-graphs) */
} mgc_session_options;

void mgc_session_options_init(mgc_session_options *o);

/* Binds p to its devices and sets the variables from their initializers
 * (deterministic in seed and each variable's name, as mgc run does). */
mgc_status mgc_session_new(const mgc_plan *p, const mgc_session_options *o, mgc_session **out, mgc_error *err);
void mgc_session_free(mgc_session *s);
int64_t mgc_session_step(const mgc_session *s);   /* optimizer steps taken */
uint64_t mgc_session_seed(const mgc_session *s);  /* shuffling seed (a loaded checkpoint's, else the option) */

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
