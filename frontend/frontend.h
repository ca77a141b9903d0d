/* frontend.h - reading model-language source into syntax trees (see
 * docs/language.md). Errors go to the diagnostics sink, several per run. */
#ifndef MGC_FRONTEND_H
#define MGC_FRONTEND_H

#include <stdbool.h>

#include "../ir/diag.h"
#include "ast.h"

/* Reads a whole file into a malloc'ed NUL-terminated buffer; NULL with errno
 * set on failure (also when it holds a NUL byte: errno = EILSEQ). */
char *fe_read_file(const char *path);

/* Parses `text` (already registered with ir_diag_add_source) into a tree
 * allocated in `a`. `file` is stored as is in every position, so it must
 * outlive the tree. Reports lexical and syntax errors to d and recovers at the
 * next line; returns the tree even then (check ir_diag_errors). in_module
 * marks the declarations as coming from a `use`d module. */
ast_file *fe_parse(const char *file, const char *text, ast_arena *a, ir_diag *d, bool in_module);

#endif
