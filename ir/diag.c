/* diag.c - "file:line:col: error: msg" with the source line and a caret. */
#include "diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *file, *text;
} source;

struct ir_diag {
    FILE *out;
    int errors;
    source *src;
    int n_src;
};

ir_diag *ir_diag_new(FILE *out) {
    ir_diag *d = calloc(1, sizeof *d);
    if (!d) abort();
    d->out = out;
    return d;
}

void ir_diag_free(ir_diag *d) {
    if (!d) return;
    for (int i = 0; i < d->n_src; i++) free(d->src[i].file), free(d->src[i].text);
    free(d->src);
    free(d);
}

void ir_diag_add_source(ir_diag *d, const char *file, const char *text) {
    d->src = realloc(d->src, (size_t)(d->n_src + 1) * sizeof *d->src);
    if (!d->src) abort();
    d->src[d->n_src++] = (source){strdup(file), strdup(text)};
}

/* Prints line `line` of the file, then a caret under column `col`. */
static void quote(ir_diag *d, ir_loc loc) {
    for (int i = d->n_src - 1; i >= 0; i--) {
        if (!loc.file || strcmp(d->src[i].file, loc.file)) continue;
        const char *p = d->src[i].text;
        for (int l = 1; l < loc.line && p; l++) {
            p = strchr(p, '\n');
            if (p) p++;
        }
        if (!p || !*p) return;
        int len = (int)strcspn(p, "\n");
        fprintf(d->out, "%.*s\n", len, p);
        for (int c = 1; c < loc.col && c <= len; c++) fputc(p[c - 1] == '\t' ? '\t' : ' ', d->out);
        fputs("^\n", d->out);
        return;
    }
}

static void report(ir_diag *d, ir_loc loc, const char *kind, const char *fmt, va_list ap) {
    if (loc.file && loc.line > 0) fprintf(d->out, "%s:%d:%d: %s: ", loc.file, loc.line, loc.col, kind);
    else fprintf(d->out, "mgc: %s: ", kind);
    vfprintf(d->out, fmt, ap);
    fputc('\n', d->out);
    if (loc.file && loc.line > 0) quote(d, loc);
}

void ir_diag_error(ir_diag *d, ir_loc loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    report(d, loc, "error", fmt, ap);
    va_end(ap);
    d->errors++;
}

void ir_diag_note(ir_diag *d, ir_loc loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    report(d, loc, "note", fmt, ap);
    va_end(ap);
}

int ir_diag_errors(const ir_diag *d) { return d->errors; }
