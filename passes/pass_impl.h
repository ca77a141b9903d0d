/* pass_impl.h - what the passes' own files share, not part of passes.h:
 * ASSERT for broken invariants of the compiler itself (never for bad user
 * input, which gets a diagnostic): it names the place and aborts. */
#ifndef MGC_PASS_IMPL_H
#define MGC_PASS_IMPL_H

#include <stdio.h>
#include <stdlib.h>

#define ASSERT(c, ...)                                                             \
    do {                                                                           \
        if (!(c)) {                                                                \
            fprintf(stderr, "mgc: internal error at %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                          \
            fputc('\n', stderr);                                                   \
            abort();                                                               \
        }                                                                          \
    } while (0)

#endif
