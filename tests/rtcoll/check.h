/* check.h - the runtime tests' CHECK(cond, fmt, ...): reports a failed
 * condition with its file, line and a message, counts it in `failures`, and
 * goes on (each test's main returns failures != 0). */
#ifndef MGC_TESTS_RTCOLL_CHECK_H
#define MGC_TESTS_RTCOLL_CHECK_H

#include <stdio.h>

static int failures;
#define CHECK(cond, ...)                                                         \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                        \
            fputc('\n', stderr);                                                 \
            failures++;                                                          \
        }                                                                        \
    } while (0)

#endif
