/* plan.h - the .mgx plan file: write a module, read it back (docs/plan-format.md). */
#ifndef MGC_PLAN_H
#define MGC_PLAN_H

#include "ir.h"

#define MGX_MAGIC "MGXPLAN\0"
enum { MGX_VERSION = 6 }; /* 2: ops by name; 3: learning-rate schedule, epochs; 4: clipnorm, global_clipnorm,
                             initial_accumulator_value, named outputs;
                             5: sparse_grads; 6: fused programs, no_fuse (issue 14) */

/* Writes atomically (temp file, fsync, rename). Returns 0, or -1 with a
 * one-line message in err ("PATH: cannot write: No space left on device"). */
int mgx_write(const ir_module *m, const char *path, char *err, size_t cap);

/* Reads and verifies a plan. Returns NULL with a one-line message naming the
 * file and the problem in err ("m.mgx: section 'graph': CRC mismatch"). */
ir_module *mgx_read(const char *path, char *err, size_t cap);

/* Same from memory (for tests and fuzzing); name is used in messages. */
ir_module *mgx_read_mem(const void *data, size_t size, const char *name, char *err, size_t cap);

/* What the runtime relies on beyond ir_verify: devices, a global batch of
 * batch_per_replica x devices on axis 0 of every input (at most
 * IR_MAX_INPUTS, on the host), loss, metrics (at most IR_MAX_METRICS) and
 * output on every replica, the report all-reduce when training, every other
 * node in its device's arena, arenas no larger than their tensors, and one
 * schedule list per (program, device, stream). Returns 0, or -1 with
 * "NAME: invalid plan: ..." in err. */
int mgx_check_runnable(const ir_module *m, const char *name, char *err, size_t cap);

/* A message quoting names read from a file stays one line: control bytes
 * become '?' (a name may hold anything, even a newline). */
void mgx_one_line(char *msg);

#endif
