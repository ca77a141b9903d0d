/* ir.h - the typed dataflow graph every stage after the frontend works on.
 *
 * A graph is an array of nodes; each node is one op application producing one
 * tensor (its dtype and shape are the node's). Inputs refer to earlier nodes by
 * index, so node order is a topological order. A module is the graph plus what
 * the model declared (inputs, loss, metrics, training setup) and what the
 * passes decided (devices, buckets, memory plan, schedule); a module is exactly
 * what a .mgx plan file stores.
 *
 * One node, one output (a decision, not an accident): an op never produces a
 * tuple. A layer with several results is several nodes - split is n slice
 * nodes, a normalization its separate reductions, a gradient one node per
 * input. Every pass relies on it: the memory plan gives each node one buffer
 * and one lifetime, the schedule orders nodes, autodiff keeps one gradient
 * per node, the race check compares node byte ranges, and a plan stores one
 * type per node. Tuples would touch all of them for no gain a few more nodes
 * do not give. Do not add tuple outputs (docs/language.md, "Adding a primitive").
 */
#ifndef MGC_IR_H
#define MGC_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { IR_MAX_RANK = 6, IR_MAX_IATTR = 10, IR_MAX_FATTR = 6 };

/* Limits of a model (docs/errors.md, resource limits): every tensor has
 * fewer than IR_MAX_ELEMENTS elements (ir/verify.c), a model at most
 * IR_MAX_METRICS metrics (the runtime reports loss + metrics + an example
 * count in 17 slots) and, to run, at most IR_MAX_INPUTS inputs (one --input
 * binding each). */
#define IR_MAX_ELEMENTS (INT64_C(1) << 40)
enum { IR_MAX_METRICS = 15, IR_MAX_INPUTS = 16, IR_MAX_OUTPUTS = 16 };

typedef enum { IR_F32, IR_I32, IR_F64, IR_U8, IR_DTYPE_COUNT } ir_dtype;

typedef struct {
    int rank;
    int64_t dim[IR_MAX_RANK];
} ir_shape;

/* Source position; file is interned in the module's string table. */
typedef struct {
    const char *file;
    int line, col;
} ir_loc;

typedef enum {
    OPF_SOURCE = 1 << 0,      /* no inputs, no kernel */
    OPF_VARIABLE = 1 << 1,    /* persistent storage, survives steps */
    OPF_ELEMENTWISE = 1 << 2, /* per-element math in runtime/ops_math.h */
    OPF_DIFF = 1 << 3,        /* autodiff has a gradient rule */
    OPF_ALIAS = 1 << 4,       /* output shares input 0's memory */
    OPF_INPLACE = 1 << 5,     /* writes input 0 (and slots) in place */
    OPF_COLLECTIVE = 1 << 6,  /* matching nodes on every replica form one collective */
    OPF_TRAIN_ONLY = 1 << 7,  /* identity outside training */
    OPF_UPDATE = 1 << 8,      /* optimizer update (param, gradient, slots...[, norm]) */
} ir_opflag;

typedef enum {
#define X(e, name, arity, iattrs, fattrs, flags, shape) OP_##e,
#include "ops.def"
#undef X
    OP_COUNT
} ir_op;

typedef struct {
    const char *name;
    int arity;                 /* -1: variadic */
    const char *iattrs;        /* comma-separated names of iattr[] */
    const char *fattrs;        /* comma-separated names of fattr[] */
    unsigned flags;
} ir_opinfo;

extern const ir_opinfo ir_ops[OP_COUNT];

/* Initializers of PARAM and VAR (iattr[0]); fan_in/fan_out in iattr[1..2];
 * fattr[0] the value of INIT_CONSTANT, fattr[1] the stddev of INIT_TRUNCATED_NORMAL
 * and INIT_RANDOM_NORMAL (Keras formulas: runtime/init.c). Values are stored in
 * plans: new ones go last. */
typedef enum {
    INIT_ZEROS, INIT_ONES, INIT_GLOROT_UNIFORM, INIT_HE_NORMAL,
    INIT_HE_UNIFORM, INIT_GLOROT_NORMAL, INIT_LECUN_NORMAL, INIT_LECUN_UNIFORM, INIT_ORTHOGONAL,
    INIT_TRUNCATED_NORMAL, INIT_RANDOM_NORMAL, INIT_CONSTANT,
    INIT_UNIT_FORGET_BIAS, /* Keras LSTM unit_forget_bias: [4u] of 0, 1 on the second quarter (issue 13) */
    INIT_COUNT
} ir_init;
extern const char *const ir_init_names[INIT_COUNT];
/* The float attribute an initializer reads (0 value, 1 stddev), -1 for none. */
int ir_init_fattr(ir_init init);

/* Which programs a node belongs to (node->programs is a mask of these). */
typedef enum {
    PROG_TRAIN = 1 << 0,   /* one optimizer step */
    PROG_EVAL = 1 << 1,    /* forward, per-example loss and metrics */
    PROG_PREDICT = 1 << 2, /* forward to the model output */
    PROG_INIT = 1 << 3,    /* broadcast of variables from replica 0 */
} ir_program;
enum { IR_PROGRAM_COUNT = 4 };
extern const char *const ir_program_names[IR_PROGRAM_COUNT]; /* by bit index: "train", "eval", ... */

enum { STREAM_COMPUTE = 0, STREAM_COMM = 1, STREAM_COUNT = 2 };

/* ---- elementwise fusion (issue 14, passes/fuse.c) ----
 * The program of a `fused` node: registers 0..n_in-1 are the node's inputs
 * (each numpy-broadcast to the node's shape), register n_in + j the result of
 * instruction j; the last instruction's register is the output. Every value
 * is f32 and computed at every output element (an operand smaller than the
 * output is broadcast: elementwise math commutes with it). Programs are
 * immutable and owned by the module (ir_fused_new); clones share them. */
enum { IR_FUSED_MAX_INSTRS = 32, IR_FUSED_MAX_INPUTS = 16 };
typedef struct {
    ir_op op;       /* an f32 elementwise op of ir_fused_op_ok */
    int a, b;       /* operand registers, each < n_in + this instruction's index; b -1 for unary ops */
    double alpha;   /* the op's float attribute (elu, leaky_relu and their gradients), else 0 */
} ir_finstr;
typedef struct ir_fused {
    int n;          /* instructions, 1..IR_FUSED_MAX_INSTRS */
    ir_finstr ins[IR_FUSED_MAX_INSTRS];
} ir_fused;

typedef struct {
    ir_op op;
    ir_dtype dtype;
    ir_shape shape;
    int n_in;
    int *in;                  /* node indices, each < this node's index */
    int64_t iattr[IR_MAX_IATTR];
    double fattr[IR_MAX_FATTR];
    const char *name;         /* interned; params "dense_1/kernel", inputs, slots; may be NULL */
    ir_loc loc;
    unsigned programs;        /* mask of ir_program */
    int device;               /* replica index, -1 = host (inputs) */
    int stream;               /* STREAM_COMPUTE or STREAM_COMM */
    int origin;               /* one-replica node this was cloned from (replicate), else its own index */
    int64_t offset;           /* byte offset in its device's arena (memory plan), -1 unplanned */
    const ir_fused *fused;    /* op fused: its program (module-owned), else NULL */
} ir_node;

typedef struct {
    ir_node *nodes;
    int n, cap;
} ir_graph;

typedef enum { OPT_SGD, OPT_ADAM, OPT_ADAMW, OPT_RMSPROP, OPT_ADAGRAD, OPT_NADAM, OPT_LAMB, OPT_COUNT } ir_optimizer_kind;
extern const char *const ir_optimizer_names[OPT_COUNT];

/* Learning-rate schedules (Keras 3's), evaluated at the optimizer's step
 * count before the update (0 for the first): ir_learning_rate. */
typedef enum { LR_CONSTANT, LR_COSINE_DECAY, LR_EXPONENTIAL_DECAY, LR_PIECEWISE_CONSTANT, LR_COUNT } ir_lr_kind;
extern const char *const ir_lr_names[LR_COUNT];
enum { IR_MAX_BOUNDARIES = 15 };

typedef struct {
    ir_lr_kind kind;
    int64_t decay_steps, warmup_steps;  /* cosine, exponential; cosine's warmup */
    double alpha;                       /* cosine: the final fraction of the rate */
    double warmup_target;               /* cosine: the rate warmup rises to (0: no warmup) */
    double decay_rate;                  /* exponential */
    bool staircase;                     /* exponential: whole decay periods only */
    int n_boundaries;                   /* piecewise: values[i] up to boundaries[i], the last after */
    int64_t boundaries[IR_MAX_BOUNDARIES];
    double values[IR_MAX_BOUNDARIES + 1];
} ir_lr_schedule;

typedef struct {
    ir_optimizer_kind kind;
    double lr, beta1, beta2, epsilon, weight_decay, momentum, rho;  /* lr: the initial rate */
    bool nesterov;
    ir_lr_schedule schedule;
    double initial_accumulator_value;  /* adagrad */
    double clipnorm, global_clipnorm;  /* > 0: gradients clipped per variable / all together (one at most) */
} ir_optimizer;

/* The rate of the update after `step` earlier updates. */
double ir_learning_rate(const ir_optimizer *o, int64_t step);

typedef enum { XDEV_RING, XDEV_ONE_DEVICE, XDEV_HIERARCHICAL, XDEV_COUNT } ir_cross_device;
extern const char *const ir_cross_device_names[XDEV_COUNT];

/* --sparse-grads (issue 13): how replicate exchanges the gradient of a table
 * read by one gather: auto = as (ids, rows) when that sends fewer bytes */
typedef enum { SPARSE_AUTO, SPARSE_ALWAYS, SPARSE_NEVER, SPARSE_COUNT } ir_sparse_grads;
extern const char *const ir_sparse_grads_names[SPARSE_COUNT];

/* One param exchanged sparsely: the bytes each replica sends per step, as
 * (ids, rows) and as the dense table (ir/sparse.c). */
typedef struct {
    const char *param;      /* its name */
    int ids, rows;          /* replica 0's all_gather nodes */
    int64_t sparse_bytes;   /* replicas * ids per replica * (4 + 4 * D) */
    int64_t dense_bytes;    /* 4 * V * D */
} ir_sparse_info;


typedef struct {
    const char *name;  /* "cpu" or "gpu" */
    int index;
} ir_device;

typedef struct {
    const char *name;  /* "accuracy" */
    int node;          /* per-example f32[batch] before the batch mean */
} ir_metric;

typedef struct {
    const char *name;  /* "logits": predict writes it to OUT.logits.npy when there are several */
    int node;          /* batch on axis 0 */
} ir_output;

/* One step of a compiled schedule, in a (program, device, stream) list. */
typedef enum {
    SCHED_KERNEL, /* arg = node index */
    SCHED_RECORD, /* arg = event index: signal after everything before it on this stream */
    SCHED_WAIT,   /* arg = event index: later items wait for that event */
} ir_sched_kind;

typedef struct {
    ir_sched_kind kind;
    int arg;
} ir_sched_item;

typedef struct {
    int program, device, stream;
    int n, cap;
    ir_sched_item *items;
} ir_sched_list;

typedef struct {
    int64_t bytes;   /* total size of the gradients packed into it */
    int n_grads;
    int *grads;      /* param node indices (replica 0) whose gradients it carries */
} ir_bucket;

typedef struct {
    const char *path; /* interned */
    const char *text; /* interned */
} ir_source;

typedef struct ir_module {
    const char *model_name;
    const char *source_file;
    ir_graph g;

    /* model interface (node indices into g; replica 0 after replication) */
    int n_inputs;
    int *inputs;              /* INPUT nodes, global batch on axis 0 */
    int loss;                 /* per-example loss f32[batch], -1 if none */
    int n_metrics;
    ir_metric *metrics;
    int n_outputs;
    ir_output *outputs;       /* PREDICT outputs, in the order declared (none: nothing to predict) */
    int n_params;
    int *params;              /* PARAM nodes of replica 0 */
    int *grads;               /* gradient node of each param (after autodiff), -1 before */

    /* training setup */
    bool has_train;
    ir_optimizer opt;
    int64_t batch_per_replica;
    int64_t global_batch;
    int64_t epochs;           /* the train block's `epochs = N`, 0 when not given */

    /* replication */
    int n_devices;
    ir_device *devices;
    ir_cross_device cross_device;
    int64_t bucket_bytes;
    ir_sparse_grads sparse_grads; /* the choice it was compiled with (kept when re-planned) */
    int n_buckets;
    ir_bucket *buckets;

    /* memory plan: per device */
    int64_t *arena_bytes;     /* planned bytes per device (variables + peak scratch) */
    int64_t *unplanned_bytes; /* the arena without reuse (variables + every tensor owning bytes), for comparison */

    /* schedule */
    int n_events;
    int n_sched;
    ir_sched_list *sched;

    /* the sources it was compiled from (for re-planning at load time) */
    int n_sources;
    ir_source *sources;

    /* elementwise fusion (issue 14): compiled with --no-fuse (kept when re-planned) */
    bool no_fuse;
    int n_fused;
    ir_fused **fused;         /* every program of the module's fused nodes, freed with it */

    /* interned strings */
    struct ir_strtab *strings;
} ir_module;

/* ---- shapes and dtypes ---- */
int64_t ir_shape_numel(const ir_shape *s);
bool ir_shape_eq(const ir_shape *a, const ir_shape *b);
ir_shape ir_shape_make(int rank, const int64_t *dims);
size_t ir_dtype_size(ir_dtype t);
const char *ir_dtype_name(ir_dtype t);
int ir_dtype_from_name(const char *name); /* -1 if unknown */
int64_t ir_node_bytes(const ir_node *n);
/* Writes "f32[64,28,28,1]" into buf; returns buf. */
char *ir_type_str(ir_dtype t, const ir_shape *s, char *buf, size_t cap);

/* ---- ops ---- */
int ir_op_from_name(const char *name); /* -1 if unknown */
/* Index of attribute `name` in the op's iattr/fattr list, or -1. */
int ir_op_iattr_index(ir_op op, const char *name);
int ir_op_fattr_index(ir_op op, const char *name);
/* Element i of n's output is computed from element i of each input alone, so
 * its kernels may write over an input of its own bytes (the memory plan's
 * in-place rule, which the race check allows): the elementwise ops but cast,
 * and dropout and its gradient (issue 14). */
bool ir_node_per_element(const ir_node *n);

/* ---- modules and graphs ---- */
ir_module *ir_module_new(void);
void ir_module_free(ir_module *m);
const char *ir_intern(ir_module *m, const char *s); /* NULL stays NULL */

/* Appends a node; copies `in`. Fields not given start zero, device 0,
 * offset -1, programs 0. Returns its index. */
int ir_add(ir_module *m, ir_op op, const int *in, int n_in, ir_loc loc);
ir_node *ir_node_at(ir_module *m, int i);
/* After a pass renumbered the graph's nodes (map[old] = new index), points
 * the module's inputs, loss, metrics, outputs, params and grads at them. */
void ir_module_renumber(ir_module *m, const int *map);

/* Shape and dtype rule of node i from its inputs and attributes. Writes the
 * result into the node. On a mismatch returns false and writes a one-line
 * message (no position) into err. */
bool ir_infer_node(ir_module *m, int i, char *err, size_t cap);

/* The geometry of a convolution node (conv2d, conv2d_grad_input,
 * conv2d_grad_filter, conv2d_transpose) from its attributes; an absent (0)
 * dilation or groups reads as 1, so nodes built before those attributes
 * existed keep their meaning (ir/shapes.c). */
typedef struct {
    int64_t stride[2], pad[4];  /* pad: t, l, b, r */
    int64_t dilation[2];        /* Keras dilation_rate: window taps dilation apart */
    int64_t groups;             /* conv2d family: channels split into groups */
    int64_t window[2];          /* the filter's extent (k - 1) * dilation + 1, h and w */
} ir_conv;
ir_conv ir_conv_of(const ir_node *n, const ir_shape *w);

/* ---- issue 14: epilogues ----
 * The activation a conv2d_epilogue or matmul_epilogue node applies last (its
 * "act" attribute). Values are stored in plans: new ones go last. */
typedef enum { EPI_NONE, EPI_RELU, EPI_TANH, EPI_SIGMOID, EPI_COUNT } ir_epilogue_act;
extern const char *const ir_epilogue_act_names[EPI_COUNT]; /* "none", "relu", "tanh", "sigmoid" */

/* ---- issue 13: batched matmul ----
 * The geometry of matmul node n (shape inferred) on a [..., m, k] (or [..., k, m]
 * with trans_a) and b [..., k, n]: the output's leading (batch) axes are the
 * numpy broadcast of a's and b's; batch matrices in all. Offsets in elements. */
typedef struct {
    int64_t m, n, k;       /* op(a)[m, k] x op(b)[k, n] */
    int64_t batch;         /* product of the output's batch axes (1 for rank 2) */
    int64_t a_stride, b_stride;  /* elements between matrices of a and b when their batch is the output's, 0 when it is 1 matrix; -1 otherwise (general broadcast) */
    ir_shape a_batch, b_batch, out_batch;  /* batch axes, a's and b's padded with 1s to out's rank */
} ir_matmul;
ir_matmul ir_matmul_of(const ir_node *n, const ir_shape *a, const ir_shape *b);
/* element offsets of the a (which 0) or b (which 1) matrix of output matrix i */
int64_t ir_matmul_offset(const ir_matmul *g, int which, int64_t i);

/* ---- issue 14: arithmetic per step (ir/flops.c) ----
 * Flops of node n: 2 per multiply-add of a matmul or convolution (forward or
 * gradient, epilogues included), 0 for any other op. */
int64_t ir_node_flops(const ir_module *m, const ir_node *n);
/* The flops of every kernel the schedule runs for program index `program`
 * (0 train, 1 eval, 2 predict) on device index `device`: one replica's step. */
int64_t ir_step_flops(const ir_module *m, int program, int device);

/* Structural checks (input order, arity, attrs, shapes agree with the rules,
 * schedule and plan ranges). Returns the number of problems, each reported
 * through msg (may be NULL). */
typedef void (*ir_report_fn)(void *ctx, const char *msg);
int ir_verify(const ir_module *m, ir_report_fn report, void *ctx);

/* ---- elementwise fusion (issue 14) ---- */
/* A program owned by m (a copy of p), for node->fused. */
const ir_fused *ir_fused_add(ir_module *m, const ir_fused *p);
/* Whether op may be an instruction of a fused program: an f32 elementwise op
 * other than cast and fused; its operand count (1 or 2) in *arity. */
bool ir_fused_op_ok(ir_op op, int *arity);

/* ---- text and pictures ---- */
#include <stdio.h>
/* One op per line: "%12 = conv2d(%0, %3) stride_h=1 ... : f32[64,26,26,32] @cpu:0 # file:line" */
void ir_print(const ir_module *m, FILE *out);
/* " [r2 = add(r0, r1); r3 = relu(r2)]": the program of fused node n (issue 14). */
void ir_print_program(const ir_node *n, FILE *out);
/* Graphviz. replicated: one cluster per device, collectives coloured. */
void ir_print_dot(const ir_module *m, FILE *out, bool replicated);

/* The k-th sparsely exchanged param of a replicated module (k from 0);
 * false when there are no more. */
bool ir_sparse_exchange(const ir_module *m, int k, ir_sparse_info *out);

#endif
