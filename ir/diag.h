/* diag.h - user-facing diagnostics: "file:line:col: error: msg", the source
 * line and a caret; counted so that one run reports several. Shared by the
 * frontend and the passes (every IR node keeps its source position). */
#ifndef MGC_DIAG_H
#define MGC_DIAG_H

#include <stdio.h>

#include "ir.h"

typedef struct ir_diag ir_diag;

ir_diag *ir_diag_new(FILE *out);
void ir_diag_free(ir_diag *d);
/* Registers the text of a source file so that messages can quote its lines. */
void ir_diag_add_source(ir_diag *d, const char *file, const char *text);
void ir_diag_error(ir_diag *d, ir_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void ir_diag_note(ir_diag *d, ir_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int ir_diag_errors(const ir_diag *d);

#endif
