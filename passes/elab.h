/* elab.h - what the parts of the elaborator share (elaborate.c: names,
 * expressions, functions, files and modules; elab_stmt.c: statements;
 * elab_model.c: the model's inputs, loss, metrics and outputs; elab_scope.c:
 * param scopes and sharing; elab_prim.c: primitives and builtins;
 * elab_train.c: the train block). Not a public interface: passes.h has
 * pass_elaborate. */
#ifndef MGC_ELAB_H
#define MGC_ELAB_H

#include <stdint.h>

#include "../frontend/ast.h"
#include "../ir/diag.h"
#include "passes.h"

enum { MAX_CALL_DEPTH = 64, MAX_PRIM_INPUTS = 64 };
static const int64_t MAX_DIM = (int64_t)1 << 31; /* of any dimension and of the batch */

/* ---- values ---- */

typedef enum {
    V_ERR,     /* an error was reported; silently propagates */
    V_INT,     /* i */
    V_FLOAT,   /* f */
    V_STR,     /* s */
    V_TENSOR,  /* node */
    V_FN,      /* fn: a function of the language */
    V_PRIM,    /* i: an ir_op, "prim.NAME" */
    V_BUILTIN, /* i: a builtin_fn */
    V_INIT,    /* i: an ir_init, f: its parameter (constant's value, the normals' stddev) */
    V_LIST,    /* list: [a, b, ...], also what `return a, b` gives */
} vkind;

typedef struct vlist vlist;

typedef struct {
    vkind k;
    int64_t i;
    double f;
    const char *s;
    int node;
    const ast_decl *fn;
    const vlist *list;
} value;

/* A list's values, in the AST arena: never changed once made. `a + b`
 * appends b in place when a's buffer has room and a ends where the buffer's
 * filled part ends, as Go's append does: `xs = xs + [x]` in a loop costs
 * amortized O(1) an element, and no list sees a change (each reads its
 * first n only). */
typedef struct {
    int fill, cap;
} vbuf;

struct vlist {
    int n;
    value *v;
    vbuf *buf; /* NULL: v has no room to grow */
};

typedef enum { B_DIM, B_RANK, B_SIZE, B_MAX, B_MIN, B_LEN, B_RANGE, B_TYPEOF, B_ERROR, B_PAIR, B_COUNT } builtin_fn;
enum { MAX_LIST = 100000 }; /* elements of a list (a range): bounds every compile-time loop */
extern const char *const elab_builtin_names[B_COUNT];

static const value ERR = {.k = V_ERR};
static inline value vint(int64_t i) { return (value){.k = V_INT, .i = i}; }
static inline value vfloat(double f) { return (value){.k = V_FLOAT, .f = f}; }
static inline value vtensor(int node) { return (value){.k = V_TENSOR, .node = node}; }

/* ---- elaboration state ---- */

typedef struct {
    const char *name;
    value v;
} binding;

/* A naming scope: one per call of a function; named lazily, when it (or a
 * function it calls) declares its first param (elab_scope.c). */
typedef struct scope {
    struct scope *parent;
    const char *base; /* the function's name, or the name given by name: */
    const char *path; /* "" for the model, "dense_1", "block/dense" */
    bool given;       /* base came from name: "..." (used as is, never numbered) */
    bool reuse;       /* reuse: true: the params of the earlier scope of this path */
    bool failed;      /* naming it failed (reported): its params are errors */
    int id;           /* numbers the scopes of this call's own calls (0: the model) */
    ir_loc loc;       /* the user's call */
} scope;

/* A scope path given to params, and the call that made it. */
typedef struct {
    const char *path;
    ir_loc loc;
} made_scope;

typedef struct frame {
    struct frame *caller;
    const ast_decl *fn; /* NULL in the model and train blocks */
    binding *b;
    int n, cap;
    bool in_module;     /* code of a `use`d module: positions are the user's call */
    ir_loc user_loc;
    scope *scope;
} frame;

typedef struct {
    const char *key;
    int count;
} counter;

typedef struct {
    const char *path;   /* interned */
    char *text;
    ast_file *ast;
    const char *module; /* module name, NULL for the main file */
} source_file;

/* A term `loss += t` added to the model's loss (a regularizer's penalty). */
typedef struct {
    int node;
    ir_loc loc; /* the user's position */
} loss_term;

typedef struct {
    ir_module *m;
    ir_diag *d;
    ast_arena *a;
    const char *stdlib_dir;
    const pass_options *o;
    source_file *files;
    int n_files;
    const ast_decl **fns;
    int n_fns;
    frame *fr;
    int depth;
    counter *counters;
    int n_counters;
    made_scope *made;  /* every scope path named so far */
    int n_made, n_scope_ids;
    const ast_expr *watch; /* the loss call, whose first argument is the output */
    value watched;
    /* the model's loss (elab_model.c) */
    bool in_model;
    const ast_stmt *loss_stmt; /* `loss = ...`, NULL before */
    value loss;
    loss_term *terms;          /* `loss += ...` in the model or a function it calls */
    int n_terms;
} elab;

/* ---- calls ---- */

typedef struct {
    const char *name; /* keyword or NULL */
    value v;
    ir_loc loc;
} arg;

typedef struct {
    arg *a;
    int n;
    const char *callee; /* for messages */
    ir_loc loc;
} call;

static inline ir_node *node(elab *c, int i) { return ir_node_at(c->m, i); }
static inline bool is_num(value v) { return v.k == V_INT || v.k == V_FLOAT; }
static inline double num(value v) { return v.k == V_INT ? (double)v.i : v.f; }

/* ---- shared by the parts (elaborate.c) ---- */

extern const char *const elab_stmt_names[]; /* by ast_stmt_kind, for messages */

void *elab_xrealloc(void *p, size_t n); /* aborts when out of memory */
/* An error at loc (inside a module: at the user's call). */
void elab_err(elab *c, ir_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An error at a position already mapped to the user's call. */
void elab_err_raw(elab *c, ir_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A formatted string in the AST arena. */
const char *elab_fmt(elab *c, const char *f, ...) __attribute__((format(printf, 2, 3)));
/* "an int", "a tensor f32[64,10]", ... for messages. */
const char *elab_describe(elab *c, value v);
value elab_eval(elab *c, const ast_expr *e);
/* Adds a node at loc; elab_finish runs its shape rule (errors at its position). */
int elab_add(elab *c, ir_op op, const int *in, int n_in, ir_loc loc);
value elab_finish(elab *c, int i);
value elab_constant(elab *c, double v, ir_dtype t, ir_loc loc);
/* elab_scope.c */
/* Keras-style hierarchical name of a scope: "dense_1", "block/dense", or the
 * name given at the call ("tower"); errors for a name taken or not there to share. */
const char *elab_scope_path(elab *c, scope *s);
/* Takes name: and reuse: out of a function call's arguments into sc. */
bool elab_scope_options(elab *c, call *k, scope *sc);
/* A variable of a scope whose params are shared: the node made by the
 * first use (same kind, dtype and shape), else an error. */
value elab_shared_variable(elab *c, const ast_stmt *st, const char *full, const ir_shape *s);
/* The scope or one around it shares (reuse: true) / failed to be named. */
bool elab_scope_shared(const scope *s);
bool elab_scope_failed(const scope *s);
/* Binds name in frame f (rebinding replaces); looks a name up (locals, then globals). */
void elab_bind(frame *f, const char *name, value v);
value elab_lookup(elab *c, const char *name, ir_loc loc);
/* A list of n values (copied) in the AST arena. */
value elab_list(elab *c, const value *v, int n);
/* Fewer than IR_MAX_ELEMENTS elements (what a plan may hold); the count in *out. */
bool elab_checked_numel(const ir_shape *s, int64_t *out);

/* Position of what is elaborated at loc: inside a module, the user's call. */
ir_loc elab_at(elab *c, ir_loc loc);

/* elab_stmt.c */
typedef struct model_state model_state;
/* Statements of a function (ms NULL) or of the model block; true once a
 * return ran, its value in *ret. */
bool elab_run_stmts(elab *c, const ast_stmt *s, model_state *ms, value *ret);
/* The declared shape of an input or variable: every dimension a positive int. */
bool elab_eval_shape(elab *c, const ast_type *t, const char *what, const char *name, ir_shape *s);
/* Python's truth of a compile-time value; *ok false (after an error) for a tensor. */
bool elab_truth(elab *c, value v, ir_loc loc, bool *ok);
/* A function body: its return value (ERR after errors). */
value elab_run_body(elab *c, const ast_stmt *s);

/* elab_model.c */
/* The model block: inputs, params, loss, metrics, outputs into c->m. */
void elab_model(elab *c, const ast_decl *model);
/* A statement only the model block has (input, loss, metric, output). */
void elab_model_stmt(elab *c, const ast_stmt *s, model_state *ms);
/* loss += expr (the model block or a function it calls) */
void elab_add_loss(elab *c, const ast_stmt *s);

/* elab_prim.c */
value elab_call_builtin(elab *c, builtin_fn b, call *k);
value elab_call_prim(elab *c, ir_op op, call *k);

/* elab_init.c: initializers (zeros, ..., truncated_normal(stddev: s), constant(v)) */
/* The initializer with its Keras default parameter. */
value elab_init_value(ir_init k);
/* A call of an initializer: its parameter set (errors at the arguments). */
value elab_call_init(elab *c, ir_init kind, call *k);
/* Sets init and its parameter on variable n (shape and fans set); false after an error at loc. */
bool elab_init_apply(elab *c, value init, ir_node *n, ir_loc loc, const char *what, const char *name);

/* elab_train.c */
ir_optimizer elab_optimizer_defaults(ir_optimizer_kind k);
/* Global and per-replica batch from the options, else the train block. */
void elab_set_batch(elab *c, const ast_decl *train, const pass_options *o, int n_dev);

#endif
