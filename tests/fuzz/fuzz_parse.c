/* fuzz_parse.c - libFuzzer target: model source through the lexer, parser,
 * elaboration (with the stdlib) and shape inference; diagnostics go to /dev/null.
 * Every node of an elaborated module must infer again without error. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../passes/passes.h"

#ifndef MGC_FUZZ_STDLIB
#define MGC_FUZZ_STDLIB "stdlib"
#endif

/* Weak until the shapes pass is in the tree: called when it is linked. */
bool pass_shapes(ir_module *m, ir_diag *d, const pass_options *o) __attribute__((weak));

static char src_path[64];
static FILE *devnull;

static void remove_src(void) {
    unlink(src_path);
}

/* pass_elaborate reads a path: the input goes to a per-process file, in
 * memory-backed /dev/shm when there is one. */
static int setup(void) {
    if (devnull) return 0;
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(src_path, sizeof src_path, "%s/mgc_fuzz_%ld.mg", dir, (long)getpid());
    devnull = fopen("/dev/null", "w");
    if (!devnull) return -1;
    atexit(remove_src);
    return 0;
}

static int write_src(const uint8_t *data, size_t size) {
    FILE *f = fopen(src_path, "wb");
    if (!f) return -1;
    size_t put = fwrite(data, 1, size, f);
    return fclose(f) == 0 && put == size ? 0 : -1;
}

/* Elaboration's types are those the op table's shape rules give. */
static void check_inference(ir_module *m) {
    char err[256];
    for (int i = 0; i < m->g.n; i++)
        if (!ir_infer_node(m, i, err, sizeof err)) {
            fprintf(stderr, "fuzz_parse: node %d of an elaborated module re-infers with an error: %s\n", i, err);
            abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (setup() < 0 || write_src(data, size) < 0) {
        perror("fuzz_parse: temp file");
        abort();
    }
    pass_options o = {.n_devices = 1, .cross_device = XDEV_RING, .bucket_bytes = 4 << 20, .quiet = true};
    ir_diag *d = ir_diag_new(devnull);
    ir_module *m = pass_elaborate(src_path, MGC_FUZZ_STDLIB, d, &o);
    if (m) check_inference(m);
    if (m && pass_shapes) pass_shapes(m, d, &o);
    ir_module_free(m);
    ir_diag_free(d);
    return 0;
}
