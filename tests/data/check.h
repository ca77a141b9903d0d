/* check.h - tiny assertion helpers shared by the data and checkpoint tests. */
#ifndef MGC_TEST_CHECK_H
#define MGC_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
            failures++;                                                               \
        }                                                                             \
    } while (0)

/* The call must fail (-1 or NULL) with exactly the message want. */
#define CHECK_ERR(call_fails, err, want)                                                          \
    do {                                                                                          \
        if (!(call_fails)) {                                                                      \
            fprintf(stderr, "%s:%d: expected failure: %s\n", __FILE__, __LINE__, want);          \
            failures++;                                                                           \
        } else if (strcmp(err, want)) {                                                           \
            fprintf(stderr, "%s:%d: message\n  got:  %s\n  want: %s\n", __FILE__, __LINE__, err, \
                    want);                                                                        \
            failures++;                                                                           \
        }                                                                                         \
    } while (0)

#endif
