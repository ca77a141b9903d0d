/* data.h - host tensors, IDX and NPY files (tensor_files.c), datasets bound to model inputs (dataset.c), a prefetching batch loader (loader.c).
 *
 * Every function that can fail returns -1 (or NULL) and writes one line naming
 * the file and the problem into err (cap bytes); none of them exits.
 */
#ifndef MGC_DATA_H
#define MGC_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ir/ir.h"

/* A host tensor that owns its data (malloc'd, C order, native byte order). */
typedef struct {
    ir_dtype dtype;
    ir_shape shape;
    void *data;
} rt_tensor;

/* Frees t->data and zeroes t; safe on a zeroed tensor. */
void rt_tensor_free(rt_tensor *t);
int64_t rt_tensor_bytes(const rt_tensor *t);

/* Limit on the elements of any tensor read from a file (2^31). */
#define RT_MAX_ELEMENTS ((int64_t)1 << 31)

/* ---- IDX (gzip or raw; detected by the gzip magic) ----
 * Element types: u8 -> U8; i8, i16, i32 -> I32; f32, f64 -> F32. */
int rt_load_idx(const char *path, rt_tensor *out, char *err, size_t cap);
/* The same over a buffer; name stands for the path in messages. */
int rt_load_idx_mem(const void *buf, size_t len, const char *name, rt_tensor *out, char *err, size_t cap);

/* ---- NPY (versions 1-3, C order, little-endian) ----
 * '<f4' -> F32, '<f8' -> F64, '<i4' -> I32, '<i8' -> I32 (every value must
 * fit), '|u1' -> U8. rt_save_npy writes version 1, atomically. */
int rt_load_npy(const char *path, rt_tensor *out, char *err, size_t cap);
int rt_load_npy_mem(const void *buf, size_t len, const char *name, rt_tensor *out, char *err, size_t cap);
int rt_save_npy(const char *path, const rt_tensor *t, char *err, size_t cap);

/* IDX or NPY, chosen by the file's magic (gzip, IDX 00 00, or \x93NUMPY). */
int rt_load_tensor_file(const char *path, rt_tensor *out, char *err, size_t cap);

/* All of path in a malloc'd buffer (one NUL byte past len). */
unsigned char *rt_read_file(const char *path, size_t *len, char *err, size_t cap);

/* ---- datasets ---- */

/* What the model declares for one input: name, dtype and the shape of ONE
 * example (the input's shape without the batch axis; rank 0 for i32[batch]). */
typedef struct {
    const char *name;
    ir_dtype dtype;
    ir_shape shape;
} rt_input_spec;

#define RT_DEFAULT_DATA_DIR "/usr/share/datasets/fashion-mnist"

/* N examples for each model input, converted to the input's dtype (u8 -> f32
 * scales by 1/255) and reshaped to [N, per-example shape...]. */
typedef struct rt_dataset rt_dataset;

/* From the IDX quartet in dir (each file raw or .gz); split is "train" or
 * "test" (t10k-*). The model must have two inputs: images go to the f32 one,
 * labels to the i32 one. dir NULL means RT_DEFAULT_DATA_DIR. */
rt_dataset *rt_dataset_from_dir(const char *dir, const char *split, const rt_input_spec *inputs,
                                int n_inputs, char *err, size_t cap);

/* From "name=FILE" bindings, one per model input (IDX or NPY by magic). */
rt_dataset *rt_dataset_from_bindings(const char *const *bindings, int n_bindings,
                                     const rt_input_spec *inputs, int n_inputs, char *err, size_t cap);

/* From tensors already in memory (copied and converted); names[i] labels
 * tensors[i] in messages and tensors[i] is bound to inputs[i]. */
rt_dataset *rt_dataset_from_tensors(const rt_tensor *tensors, const char *const *names,
                                    const rt_input_spec *inputs, int n_inputs, char *err, size_t cap);

void rt_dataset_free(rt_dataset *ds);
int64_t rt_dataset_count(const rt_dataset *ds);
int rt_dataset_inputs(const rt_dataset *ds);
/* Input i as [N, per-example...] in the model's dtype. */
const rt_tensor *rt_dataset_tensor(const rt_dataset *ds, int i);
/* The file (or name) input i came from. */
const char *rt_dataset_source(const rt_dataset *ds, int i);
/* Every value of input i (i32) lies in [0, limit): else -1 and
 * "FILE: WHAT V of example E is outside [0, LIMIT)" in err. */
int rt_dataset_check_range(const rt_dataset *ds, int i, int64_t limit, const char *what, char *err, size_t cap);

/* ---- text (docs/runtime.md, "Text data") ----
 * The bytes of path as tokens 0..255; path may be a directory: its regular
 * files in name order, concatenated, skipping symlinks and files holding a
 * NUL byte (not text). The last RT_TEXT_VALID_PERCENT of the bytes
 * (rt_text_valid_bytes) are the "test" split, the rest "train". A part of P
 * bytes gives rt_text_examples(P, T) = floor((P - 1) / T) examples: example e
 * holds tokens p[eT, eT+T) and labels p[eT+1, eT+T+1), each i32 [T].
 * inputs: two i32 [T] specs, labels the index of the labels one; or one
 * (tokens only) with labels -1. path NULL or "" means RT_DEFAULT_TEXT_DIR. */
#define RT_DEFAULT_TEXT_DIR "/usr/share/games/fortunes"
#define RT_TEXT_VALID_PERCENT 10
#define RT_TEXT_MAX_CONTEXT 65536
rt_dataset *rt_dataset_from_text(const char *path, const char *split, int64_t context, const rt_input_spec *inputs,
                                 int n_inputs, int labels, char *err, size_t cap);
int64_t rt_text_valid_bytes(int64_t len);
int64_t rt_text_examples(int64_t part, int64_t context);

/* ---- batch loader ----
 * Yields global batches of `batch` examples, one contiguous host buffer per
 * input ([batch, per-example...]). Order within an epoch is rt_permutation(seed,
 * epoch) when shuffling, else 0..N-1. The next batch is assembled on a worker
 * thread while the caller uses the current one (two buffers). */
typedef struct {
    int64_t batch;      /* global batch B */
    uint64_t seed;
    bool shuffle;
    bool keep_partial;  /* keep the last partial batch: zero padded, batch.valid < B */
    int64_t row_begin;  /* this process's rows of each global batch: [row_begin, */
    int64_t rows;       /*   row_begin + rows); rows 0 means all B rows */
} rt_loader_opts;

typedef struct {
    int64_t epoch, step;  /* position of this batch (step within its epoch) */
    int64_t valid;        /* real examples among this process's rows; the rest are zeros */
    int n;                /* number of inputs */
    void **data;          /* data[i]: [rows, per-example...] of input i */
} rt_batch;

typedef struct rt_loader rt_loader;

/* The loader borrows ds, which must outlive it. */
rt_loader *rt_loader_new(const rt_dataset *ds, const rt_loader_opts *opts, char *err, size_t cap);
/* floor(N / B), or ceil with keep_partial. */
int64_t rt_loader_steps_per_epoch(const rt_loader *l);
/* The next batch returned will be (epoch, step); for resuming a run. */
int rt_loader_seek(rt_loader *l, int64_t epoch, int64_t step, char *err, size_t cap);
/* Blocks until the next batch is ready; it stays valid until the next call.
 * After an epoch's last step comes step 0 of the next epoch. */
const rt_batch *rt_loader_next(rt_loader *l);
/* Joins the worker thread. */
void rt_loader_free(rt_loader *l);

/* The shuffle: Fisher-Yates over 0..n-1 driven by splitmix64 seeded with
 * splitmix64(seed) ^ epoch (see dataset.c); depends only on (seed, epoch, n). */
void rt_permutation(uint64_t seed, int64_t epoch, int64_t n, int64_t *perm);

#endif
