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

typedef enum {
    ONNX_OK = 0,
    ONNX_UNSUPPORTED, /* "model 'M': op 'X' (%N at FILE:L:C) has no ONNX mapping", or the model has no output */
    ONNX_IO,          /* path cannot be written (checked before any work; nothing overwritten) */
    ONNX_READ,        /* read failed (its message) */
} onnx_status;

/* Writes m's predict graph to path; on failure one line in err. */
onnx_status onnx_export(const ir_module *m, const char *path, onnx_read_fn read, void *ctx, char *err, size_t cap);

#endif
