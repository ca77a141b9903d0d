/* test_cuda_init.c - the CUDA backend starts on a GPU machine and fails cleanly
 * (-1, one line naming cudaGetDeviceCount) on a machine without one; it has a
 * kernel for every op the CPU backend has. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/backend.h"
#include "../../runtime/cuda/cuda_backend.h"

static int failures;

static void expect(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n", what);
        failures++;
    }
}

/* no GPU: init must fail with exactly the reason rt_cuda_device_count gives */
static void without_gpu(rt_backend *b, const char *why) {
    const char *prefix = "no usable CUDA device (cudaGetDeviceCount: ";
    expect(b->i->init(b) == -1, "init returns -1 without a device");
    expect(strcmp(b->err, why) == 0, "init's message is the device-count reason");
    expect(strncmp(b->err, prefix, strlen(prefix)) == 0, "message names cudaGetDeviceCount");
    expect(strchr(b->err, '\n') == NULL && b->err[strlen(b->err) - 1] == ')', "message is one line");
    expect(b->impl == NULL, "failed init leaves no state behind");
    printf("init without a GPU: %s\n", b->err);
}

/* a GPU: init, an arena, a round trip through it, shutdown */
static void with_gpu(rt_backend *b) {
    float in[4] = {1, 2, 3, 4}, out[4] = {0};
    expect(b->i->init(b) == 0, b->err);
    if (failures) return;
    void *p = b->i->alloc(b, 0, sizeof in);
    expect(p != NULL, b->err);
    if (p) {
        expect(b->i->upload(b, 0, STREAM_COMPUTE, p, in, sizeof in) == 0, b->err);
        expect(b->i->download(b, 0, STREAM_COMPUTE, out, p, sizeof out) == 0, b->err);
        expect(b->i->sync(b) == 0, b->err);
        expect(memcmp(in, out, sizeof in) == 0, "upload/download round trip");
        b->i->dealloc(b, 0, p);
    }
    b->i->shutdown(b);
}

/* Both backends answer for a plan before it runs: every op with a CPU kernel
 * has a CUDA kernel (runs without a GPU: the tables are host code). */
static void same_ops(void) {
    rt_backend *cpu = rt_backend_cpu(), *cuda = rt_backend_cuda();
    char why[128];
    for (int op = 0; op < OP_COUNT; op++) {
        ir_node n = {.op = (ir_op)op, .dtype = IR_F32};
        if (!cpu->i->supports(&n, why, sizeof why)) continue;
        if (!cuda->i->supports(&n, why, sizeof why)) {
            fprintf(stderr, "FAIL: op '%s' has a CPU kernel and %s\n", ir_ops[op].name, why);
            failures++;
        }
    }
    ir_node i32_add = {.op = OP_ADD, .dtype = IR_I32};
    expect(!cpu->i->supports(&i32_add, why, sizeof why) && !strcmp(why, "the CPU kernel takes f32, got i32"),
           "the CPU backend refuses an i32 add, saying why");
    free(cpu), free(cuda);
}

int main(void) {
    same_ops();
    char why[256] = "";
    int n = rt_cuda_device_count(why, sizeof why);
    rt_backend *b = rt_backend_cuda();
    expect(b != NULL && strcmp(b->i->name, "cuda") == 0, "rt_backend_cuda() gives the cuda backend");
    if (!b) return 1;
    b->n_devices = 1;
    b->n_events = 4;
    if (n == 0) {
        expect(why[0] != '\0', "a reason when there is no device");
        without_gpu(b, why);
    } else {
        with_gpu(b);
    }
    free(b);
    return failures ? 1 : 0;
}
