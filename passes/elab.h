/* elab.h - what the parts of the elaborator share (elaborate.c: names,
 * expressions, functions, statements, the model block, files; elab_prim.c:
 * primitives and builtins; elab_train.c: the train block). Not a public
 * interface: passes.h has pass_elaborate. */
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
    V_INIT,    /* i: an ir_init */
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

/* A list's values, in the AST arena: never changed once made. */
struct vlist {
    int n;
    value *v;
};

typedef enum { B_DIM, B_RANK, B_SIZE, B_MAX, B_MIN, B_LEN, B_RANGE, B_PAIR, B_COUNT } builtin_fn;
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
 * function it calls) declares its first param. */
typedef struct scope {
    struct scope *parent;
    const char *base;
    const char *path; /* "" for the model, "dense_1", "block/dense" */
} scope;

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
    const ast_expr *watch; /* the loss call, whose first argument is the output */
    value watched;
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
/* Keras-style hierarchical name of a scope: "dense_1", "block/dense". */
const char *elab_scope_path(elab *c, scope *s);
/* Binds name in frame f (rebinding replaces); looks a name up (locals, then globals). */
void elab_bind(frame *f, const char *name, value v);
value elab_lookup(elab *c, const char *name, ir_loc loc);
/* A list of n values (copied) in the AST arena. */
value elab_list(elab *c, const value *v, int n);
/* Fewer than IR_MAX_ELEMENTS elements (what a plan may hold); the count in *out. */
bool elab_checked_numel(const ir_shape *s, int64_t *out);

/* elab_stmt.c */
/* Python's truth of a compile-time value; *ok false (after an error) for a tensor. */
bool elab_truth(elab *c, value v, ir_loc loc, bool *ok);
/* A function body: its return value (ERR after errors). */
value elab_run_body(elab *c, const ast_stmt *s);
/* The model block: inputs, params, loss, metrics, output into c->m. */
void elab_model(elab *c, const ast_decl *model);

/* elab_prim.c */
value elab_call_builtin(elab *c, builtin_fn b, call *k);
value elab_call_prim(elab *c, ir_op op, call *k);

/* elab_train.c */
ir_optimizer elab_optimizer_defaults(ir_optimizer_kind k);
/* Global and per-replica batch from the options, else the train block. */
void elab_set_batch(elab *c, const ast_decl *train, const pass_options *o, int n_dev);

#endif
