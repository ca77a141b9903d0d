/* check.h - tiny assertion helpers shared by the data and checkpoint tests. */
#ifndef MGC_TEST_CHECK_H
#define MGC_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

typedef struct {
    const char *name;
    void (*fn)(void);
} test_case;

/* Runs the case named argv[1], or every case, in a fresh temporary directory
 * dir made from `pattern` (a mkdtemp template) and removed after; 1 on any
 * failure or an unknown case name. */
static inline int run_cases(const test_case *cases, size_t n, char *dir, size_t cap, const char *pattern, int argc,
                     char **argv) {
    snprintf(dir, cap, "%s", pattern);
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    int ran = 0;
    for (size_t i = 0; i < n; i++)
        if (argc < 2 || !strcmp(argv[1], cases[i].name)) cases[i].fn(), ran++;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
    if (!ran) fprintf(stderr, "no case named %s\n", argc > 1 ? argv[1] : "");
    return failures || !ran ? 1 : 0;
}

#endif
