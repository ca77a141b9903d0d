/* onnx.h - ONNX export (issue 16): the inference graph of one replica of a
 * plan (its predict program, outputs = what `mgc predict` writes) as an ONNX
 * model (opset 17), variables as initializers (docs/onnx.md). */
#ifndef MGC_EXPORT_ONNX_H
#define MGC_EXPORT_ONNX_H

#include <stdbool.h>
#include <stddef.h>

#include "../ir/ir.h"

enum { ONNX_OPSET = 17, ONNX_IR_VERSION = 8 };

/* Writes the value of variable node `node` (replica 0) into dst, which holds
 * ir_node_bytes of it; false after writing a message into err. */
typedef bool (*onnx_read_fn)(void *ctx, int node, void *dst, char *err, size_t cap);

/* Writes m's predict graph to path. On failure returns false with one line
 * in err: an op without an ONNX mapping ("plan 'M': op 'X' (%N, file:line)
 * has no ONNX mapping"), a model without outputs, an I/O error. */
bool onnx_export(const ir_module *m, const char *path, onnx_read_fn read, void *ctx, char *err, size_t cap);

#endif
