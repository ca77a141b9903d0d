/* ast.c - the arena every syntax tree lives in, and node builders. */
#include "ast.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CHUNK = 64 * 1024 };

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(max_align_t) unsigned char data[];
} chunk;

struct ast_arena {
    chunk *head;
};

ast_arena *ast_arena_new(void) {
    ast_arena *a = calloc(1, sizeof *a);
    if (!a) abort();
    return a;
}

void ast_arena_free(ast_arena *a) {
    if (!a) return;
    for (chunk *c = a->head, *next; c; c = next) next = c->next, free(c);
    free(a);
}

void *ast_alloc(ast_arena *a, size_t size) {
    size = (size + 15) & ~(size_t)15;
    chunk *c = a->head;
    if (!c || c->cap - c->used < size) {
        size_t cap = size > CHUNK ? size : CHUNK;
        c = malloc(sizeof *c + cap);
        if (!c) {
            fprintf(stderr, "mgc: out of memory\n");
            abort();
        }
        c->next = a->head, c->used = 0, c->cap = cap;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += size;
    return memset(p, 0, size);
}

const char *ast_strdup(ast_arena *a, const char *s, size_t n) {
    char *p = ast_alloc(a, n + 1);
    memcpy(p, s, n);
    return p;
}

ast_expr *ast_expr_new(ast_arena *a, ast_expr_kind kind, ir_loc loc) {
    ast_expr *e = ast_alloc(a, sizeof *e);
    e->kind = kind, e->loc = loc;
    return e;
}

ast_stmt *ast_stmt_new(ast_arena *a, ast_stmt_kind kind, ir_loc loc) {
    ast_stmt *s = ast_alloc(a, sizeof *s);
    s->kind = kind, s->loc = loc;
    return s;
}
