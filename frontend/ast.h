/* ast.h - the syntax tree of a model-language file, allocated in one arena. */
#ifndef MGC_AST_H
#define MGC_AST_H

#include <stdint.h>

#include "../ir/ir.h"

typedef struct ast_arena ast_arena;

ast_arena *ast_arena_new(void);
void ast_arena_free(ast_arena *a);
void *ast_alloc(ast_arena *a, size_t size);        /* zeroed, never NULL */
const char *ast_strdup(ast_arena *a, const char *s, size_t n);

typedef enum {
    EX_INT,    /* ival */
    EX_FLOAT,  /* fval */
    EX_STR,    /* name: the string's contents */
    EX_NAME,   /* name: an identifier, or "prim.NAME" */
    EX_BINARY, /* op, lhs, rhs: op one of + - * / < > and AST_LE AST_GE AST_EQ AST_NE AST_AND AST_OR */
    EX_NEG,    /* lhs */
    EX_NOT,    /* lhs */
    EX_CALL,   /* lhs: the callee, args */
    EX_LIST,   /* lhs: the first element, linked by next; NULL when empty */
    EX_INDEX,  /* lhs[rhs] */
} ast_expr_kind;

/* EX_BINARY operators beyond the one-character ones */
enum { AST_LE = 'l', AST_GE = 'g', AST_EQ = '=', AST_NE = '!', AST_AND = '&', AST_OR = '|' };

typedef struct ast_arg ast_arg;

typedef struct ast_expr {
    ast_expr_kind kind;
    ir_loc loc;
    int64_t ival;
    double fval;
    const char *name;
    char op;
    struct ast_expr *lhs, *rhs;
    ast_arg *args;           /* linked by next */
    struct ast_expr *next;   /* in a dimension list */
} ast_expr;

struct ast_arg {
    const char *name;        /* keyword, NULL when positional */
    ast_expr *value;
    ir_loc loc;
    ast_arg *next;
};

typedef enum {
    TY_ANY,    /* no type written */
    TY_INT,
    TY_FLOAT,
    TY_STR,
    TY_FN,
    TY_TENSOR, /* dtype, and dims unless rank < 0 (any shape) */
    TY_LIST,   /* a list of any values */
} ast_type_kind;

typedef struct {
    ast_type_kind kind;
    int dtype;              /* ir_dtype of a tensor */
    int rank;               /* -1: any shape */
    ast_expr *dims;         /* linked by next */
    ir_loc loc;
} ast_type;

typedef struct ast_param {
    const char *name;
    ast_type *type;
    ast_expr *dflt;         /* default, may be NULL */
    ir_loc loc;
    struct ast_param *next;
} ast_param;

typedef enum {
    ST_ASSIGN,  /* name = expr */
    ST_PARAM,   /* param name: type = expr */
    ST_RETURN,  /* return expr */
    ST_INPUT,   /* input name: type */
    ST_LOSS,    /* loss = expr */
    ST_METRIC,  /* metric name = expr */
    ST_OUTPUT,  /* output name [= expr] (expr NULL: the binding name) */
    ST_SETTING, /* in train: name = expr [per replica | global] */
    ST_STATE,   /* state name: type = expr (a non-trainable variable) */
    ST_IF,      /* if expr { body } else { orelse } (orelse may hold one ST_IF: else if) */
    ST_FOR,     /* for name in expr { body } */
    ST_ADD_LOSS, /* loss += expr: a term added to the model's loss (regularizers) */
} ast_stmt_kind;

/* The names of `a, b = expr`, linked by next. */
typedef struct ast_name {
    const char *name;
    ir_loc loc;
    struct ast_name *next;
} ast_name;

enum { BATCH_PLAIN, BATCH_PER_REPLICA, BATCH_GLOBAL };

typedef struct ast_stmt {
    ast_stmt_kind kind;
    ir_loc loc;
    const char *name;
    ir_loc name_loc;
    ast_type *type;
    ast_expr *expr;
    int suffix;             /* BATCH_* of a setting */
    ast_name *targets;      /* ST_ASSIGN of several names: every name (name is the first) */
    struct ast_stmt *body, *orelse; /* ST_IF, ST_FOR */
    struct ast_stmt *next;
} ast_stmt;

typedef enum { DECL_USE, DECL_FN, DECL_MODEL, DECL_TRAIN } ast_decl_kind;

typedef struct ast_decl {
    ast_decl_kind kind;
    ir_loc loc;
    const char *name;
    ir_loc name_loc;
    ast_param *params;      /* of a fn */
    ast_stmt *body;
    bool in_module;         /* read from a `use`d module, not the main file */
    struct ast_decl *next;
} ast_decl;

typedef struct {
    const char *path;
    ast_decl *decls;
} ast_file;

/* Builders used by the parser. */
ast_expr *ast_expr_new(ast_arena *a, ast_expr_kind kind, ir_loc loc);
ast_stmt *ast_stmt_new(ast_arena *a, ast_stmt_kind kind, ir_loc loc);

#endif
