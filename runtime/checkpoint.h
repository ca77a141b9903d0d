/* checkpoint.h - safetensors checkpoints: deterministic atomic save, fully validated load.
 *
 * File layout (https://github.com/huggingface/safetensors): an 8-byte
 * little-endian header length N, N bytes of JSON
 *   {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [784, 128],
 *    "data_offsets": [begin, end]}, ...}
 * then the data section: raw little-endian tensors; offsets are relative to it.
 */
#ifndef MGC_CHECKPOINT_H
#define MGC_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "../ir/ir.h"

/* One named tensor (saving: the caller's data; loading: owned by the handle). */
typedef struct {
    const char *name;
    ir_dtype dtype;  /* F32, I32, F64, U8 */
    ir_shape shape;
    const void *data;
} rt_ck_tensor;

/* Writes the tensors (sorted by name, data in that order) and the metadata
 * string pairs meta[2k] -> meta[2k+1] (sorted by key), header padded with
 * spaces to a multiple of 8 bytes: the same tensors give the same bytes.
 * Atomic (ir/outfile.h): on failure the old file survives. */
int rt_checkpoint_save(const char *path, const rt_ck_tensor *tensors, int n, const char *const *meta, int n_meta,
                       char *err, size_t cap);

typedef struct rt_checkpoint rt_checkpoint;

/* Reads and validates the whole file: header length against the file size,
 * JSON, known dtypes, shapes against byte spans, offsets in range, ordered,
 * not overlapping and covering the data section exactly. */
rt_checkpoint *rt_checkpoint_load(const char *path, char *err, size_t cap);
/* The same over a buffer; name stands for the path in messages. */
rt_checkpoint *rt_checkpoint_load_mem(const void *buf, size_t len, const char *name, char *err, size_t cap);
void rt_checkpoint_free(rt_checkpoint *ck);

int rt_checkpoint_count(const rt_checkpoint *ck);
/* Tensors sorted by name; i < count. Data is aligned for its dtype. */
const rt_ck_tensor *rt_checkpoint_at(const rt_checkpoint *ck, int i);
/* NULL when absent. */
const rt_ck_tensor *rt_checkpoint_find(const rt_checkpoint *ck, const char *name);
/* Value of a "__metadata__" key, NULL when absent. */
const char *rt_checkpoint_meta(const rt_checkpoint *ck, const char *key);

#endif
