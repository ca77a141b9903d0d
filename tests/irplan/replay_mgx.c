/* replay_mgx.c - reads every plan given (the fuzzing seeds and every crash
 * input ever found): each either loads or fails with one line naming it. */
#include <stdio.h>
#include <string.h>

#include "../../ir/plan.h"

int main(int argc, char **argv) {
    int loaded = 0;
    for (int k = 1; k < argc; k++) {
        char err[512];
        ir_module *m = mgx_read(argv[k], err, sizeof err);
        if (m) {
            loaded++;
            ir_module_free(m);
        } else if (strncmp(err, argv[k], strlen(argv[k])) || strchr(err, '\n')) {
            fprintf(stderr, "%s: bad error message: %s\n", argv[k], err);
            return 1;
        }
    }
    printf("replayed %d plans, %d loaded\n", argc - 1, loaded);
    return argc > 1 ? 0 : 1;
}
