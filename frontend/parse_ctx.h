/* parse_ctx.h - state shared by the lexer and the parser of one file (internal). */
#ifndef MGC_PARSE_CTX_H
#define MGC_PARSE_CTX_H

#include "../ir/diag.h"
#include "ast.h"

typedef struct {
    ast_arena *arena;
    ir_diag *diag;
    const char *file;
    bool in_module;
    int line, col;     /* position of the next character */
    int last_col;      /* column of the last newline */
    bool at_line_start;/* last token was an end of line (or none yet) */
    bool eof_nl_sent;
    int depth;         /* open ( and [: inside them a line break is not the end of a statement */
    ast_decl *decls, *tail;
} fe_ctx;

static inline ir_loc fe_loc(const fe_ctx *c, int line, int col) { return (ir_loc){c->file, line, col}; }

#endif
