/* pass_impl.h - what the passes' own files share, not part of passes.h:
 * ASSERT for broken invariants of the compiler itself (never for bad user
 * input, which gets a diagnostic): it names the place and aborts; and the
 * dead-node walk the dce and cse passes run. */
#ifndef MGC_PASS_IMPL_H
#define MGC_PASS_IMPL_H

#include <stdio.h>
#include <stdlib.h>

#include "../ir/ir.h"

#define ASSERT(c, ...)                                                             \
    do {                                                                           \
        if (!(c)) {                                                                \
            fprintf(stderr, "mgc: internal error at %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                          \
            fputc('\n', stderr);                                                   \
            abort();                                                               \
        }                                                                          \
    } while (0)

/* Removes the nodes nothing live reads, compacting the graph in index order
 * (passes/dce.c; the cse pass removes what it merged with it too). */
void dce_remove_dead(ir_module *m);

#endif
