/* data_impl.h - what runtime/tensor_files.c, dataset.c and loader.c share (not exported). */
#ifndef MGC_DATA_IMPL_H
#define MGC_DATA_IMPL_H

#include <stddef.h>

#include "data.h"

/* N examples of every input (dataset.c builds it, loader.c reads it). */
struct rt_dataset {
    int n;
    int64_t count;
    rt_tensor *t; /* t[i]: [count, per-example of input i] */
    char **source; /* source[i]: the file of input i */
};

/* Writes the message into err (cap bytes) and returns -1. */
int rt_data_fail(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Dims from axis `from` on as "32x32"; "scalars" for rank 0. */
const char *rt_dims_str(const ir_shape *s, int from, char *buf, size_t cap);

#endif
