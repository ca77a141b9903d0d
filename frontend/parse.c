/* parse.c - runs the reentrant lexer and parser over one source text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend.h"
#include "parse_ctx.h"
#include "parser.h"
#include "lexer.h"

char *fe_read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    int bad = ferror(f) || !buf;
    fclose(f);
    if (bad) {
        free(buf);
        errno = errno ? errno : EIO;
        return NULL;
    }
    buf[len] = '\0';
    if (strlen(buf) != len) {
        free(buf);
        errno = EILSEQ;
        return NULL;
    }
    return buf;
}

ast_file *fe_parse(const char *file, const char *text, ast_arena *a, ir_diag *d, bool in_module) {
    fe_ctx ctx = {.arena = a, .diag = d, .file = file, .in_module = in_module, .line = 1, .col = 1,
                  .at_line_start = true};
    yyscan_t scanner;
    if (yylex_init_extra(&ctx, &scanner)) abort();
    YY_BUFFER_STATE buf = yy_scan_string(text, scanner);
    yyparse(scanner, &ctx);
    yy_delete_buffer(buf, scanner);
    yylex_destroy(scanner);
    ast_file *f = ast_alloc(a, sizeof *f);
    f->path = file, f->decls = ctx.decls;
    return f;
}
