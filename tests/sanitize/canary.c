/* canary.c - one deliberate bug per mode, so the sanitized suite proves that a
 * finding really fails a test (heap overflow, leak, signed overflow). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int sink;
static void *volatile held;

static int overflow(void) {
    char *p = malloc(8);
    volatile int i = 8;
    p[i] = 1; /* one past the end */
    sink = p[0];
    free(p);
    return 0;
}

static int leak(void) {
    held = malloc(77);
    held = NULL; /* the only pointer to it is gone */
    return 0;
}

static int signed_overflow(void) {
    volatile int x = INT_MAX;
    sink = x + 1;
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "overflow")) return overflow();
    if (!strcmp(mode, "leak")) return leak();
    if (!strcmp(mode, "ub")) return signed_overflow();
    fprintf(stderr, "usage: canary overflow|leak|ub\n");
    return 2;
}
