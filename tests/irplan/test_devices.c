/* test_devices.c - the backend follows the replicas a process runs, and GPU
 * plans run on the GPUs they name (issue 10, part 6), without a GPU. */
#include <string.h>

#include "../../ir/devices.h"
#include "fixture.h"

static ir_module *plan_on(const ir_device *devices, int n) {
    ir_module *m = ir_module_new();
    m->n_devices = n;
    m->devices = malloc((size_t)n * sizeof *m->devices);
    for (int d = 0; d < n; d++) m->devices[d] = (ir_device){ir_intern(m, devices[d].name), devices[d].index};
    return m;
}

static void test_backend_kind(void) {
    char err[256];
    /* rank 1 of a two-worker GPU job: its replica is replica 1 */
    ir_module *m = plan_on((ir_device[]){{"gpu", 0}, {"gpu", 0}}, 2);
    CHECK_STR(ir_local_device_kind(m, 1, 1, err, sizeof err), "gpu");
    ir_module_free(m);
    /* a CPU worker beside a GPU worker: each follows its own replicas */
    m = plan_on((ir_device[]){{"gpu", 0}, {"cpu", 0}}, 2);
    CHECK_STR(ir_local_device_kind(m, 1, 1, err, sizeof err), "cpu");
    CHECK_STR(ir_local_device_kind(m, 0, 1, err, sizeof err), "gpu");
    CHECK(!ir_local_device_kind(m, 0, 2, err, sizeof err));
    CHECK_STR(err, "this process's replicas mix cpu and gpu devices (gpu:0 and cpu:0); a process runs one kind");
    ir_module_free(m);
}

static void test_gpu_ordinals(void) {
    char err[256];
    int ordinal[4];
    CHECK(ir_gpu_ordinals((int[]){2, 3}, 2, 0, 4, ordinal, err, sizeof err) == 0);
    CHECK(ordinal[0] == 2 && ordinal[1] == 3); /* gpu:2,gpu:3 run on GPUs 2 and 3, not 0 and 1 */
    CHECK(ir_gpu_ordinals((int[]){2, 3}, 2, 0, 2, ordinal, err, sizeof err) == -1);
    CHECK_STR(err, "gpu:2 is not here: 2 GPUs are visible");
    CHECK(ir_gpu_ordinals((int[]){0}, 1, 1, 2, ordinal, err, sizeof err) == 0);
    CHECK(ordinal[0] == 1); /* the second worker of a machine, on a one-GPU plan */
    CHECK(ir_gpu_ordinals((int[]){0}, 1, 2, 2, ordinal, err, sizeof err) == -1);
    CHECK_STR(err, "gpu:0 of worker 2 on this machine is CUDA device 2, but 2 GPUs are visible");
    CHECK(ir_gpu_ordinals((int[]){1, 1}, 2, 0, 4, ordinal, err, sizeof err) == -1);
    CHECK_STR(err, "gpu:1 appears twice among this process's devices");
}

int main(void) {
    test_backend_kind();
    test_gpu_ordinals();
    printf("devices: backend kind per process, GPU ordinals as the plan names them\n");
    return 0;
}
