/* test_fashion.c - smoke test on the real Fashion-MNIST files (exit 77 = skipped when absent). */
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "../../runtime/data.h"
#include "check.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : RT_DEFAULT_DATA_DIR;
    struct stat st;
    if (stat(dir, &st) != 0) return fprintf(stderr, "%s missing: skipped\n", dir), 77;
    rt_input_spec in[2] = {{"label", IR_I32, {0, {0}}}, {"image", IR_F32, {3, {28, 28, 1}}}};
    char err[512];
    double t0 = now();
    rt_dataset *train = rt_dataset_from_dir(dir, "train", in, 2, err, sizeof err);
    double t1 = now();
    rt_dataset *test = rt_dataset_from_dir(dir, "test", in, 2, err, sizeof err);
    if (!train || !test) return fprintf(stderr, "%s\n", err), 1;
    CHECK(rt_dataset_count(train) == 60000 && rt_dataset_count(test) == 10000);
    const rt_tensor *lab = rt_dataset_tensor(train, 0), *img = rt_dataset_tensor(train, 1);
    int hist[10] = {0};
    for (int i = 0; i < 60000; i++) {
        int32_t y = ((int32_t *)lab->data)[i];
        CHECK(y >= 0 && y < 10);
        if (y >= 0 && y < 10) hist[y]++;
    }
    for (int k = 0; k < 10; k++) CHECK(hist[k] == 6000);
    float lo = 1, hi = 0;
    for (int64_t i = 0; i < 60000 * 784; i++) {
        float v = ((float *)img->data)[i];
        lo = v < lo ? v : lo, hi = v > hi ? v : hi;
    }
    CHECK(lo == 0.0f && hi == 1.0f);
    rt_loader *l = rt_loader_new(train, &(rt_loader_opts){.batch = 64, .seed = 1, .shuffle = true}, err, sizeof err);
    double t2 = now();
    int64_t steps = rt_loader_steps_per_epoch(l), sum = 0;
    for (int64_t s = 0; s < steps; s++) sum += rt_loader_next(l)->valid;
    double t3 = now();
    CHECK(steps == 937 && sum == 937 * 64);
    printf("train set loaded in %.2f s; one epoch of %lld batches of 64 in %.3f s (%.0f images/s)\n", t1 - t0,
           (long long)steps, t3 - t2, sum / (t3 - t2));
    rt_loader_free(l);
    rt_dataset_free(train);
    rt_dataset_free(test);
    return failures ? 1 : 0;
}
