/* onnx_impl.h - what the files of the ONNX exporter share: a graph builder
 * over protobuf-c's generated onnx.proto messages (onnx_proto.c), used by
 * the op mapping (onnx.c). Seen only by export/. */
#ifndef MGC_ONNX_IMPL_H
#define MGC_ONNX_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/ir.h"
#include "onnx/onnx.pb-c.h"

/* A graph under construction. Every message, string and buffer is owned by
 * the builder (freed by ox_free); tensor names are strings the builder owns. */
typedef struct {
    void **owned;                       /* every allocation, freed at once */
    size_t n_owned, cap_owned;
    Onnx__NodeProto **nodes;
    size_t n_nodes, cap_nodes;
    Onnx__TensorProto **inits;
    size_t n_inits, cap_inits;
    Onnx__ValueInfoProto **inputs, **outputs;
    size_t n_inputs, n_outputs, cap_inputs, cap_outputs;
    int fresh;                          /* counter of generated names */
} ox_builder;

void ox_free(ox_builder *b);
/* zeroed memory owned by b */
void *ox_alloc(ox_builder *b, size_t bytes);
/* a formatted string owned by b */
const char *ox_str(ox_builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* a new tensor or node name "mgc::hint_N" */
const char *ox_fresh(ox_builder *b, const char *hint);

/* ONNX's TensorProto.DataType of an ir dtype */
int ox_dtype(ir_dtype t);

/* A node op_type(in...) -> out (a fresh name when out is NULL); its output name is node->output[0]. */
Onnx__NodeProto *ox_node(ox_builder *b, const char *op_type, int n_in, const char *const *in, const char *out);
void ox_attr_int(ox_builder *b, Onnx__NodeProto *n, const char *name, int64_t v);
void ox_attr_float(ox_builder *b, Onnx__NodeProto *n, const char *name, double v);
void ox_attr_ints(ox_builder *b, Onnx__NodeProto *n, const char *name, int count, const int64_t *v);

/* Shorthands returning the output name: op_type(x), op_type(x, y). */
const char *ox_op1(ox_builder *b, const char *op_type, const char *x);
const char *ox_op2(ox_builder *b, const char *op_type, const char *x, const char *y);

/* An initializer named name (fresh when NULL) of dtype (ONNX's) and dims; data
 * (bytes long, may be NULL for zeros) is copied. Returns its name. */
const char *ox_init(ox_builder *b, const char *name, int dtype, int rank, const int64_t *dims, const void *data,
                    size_t bytes);
/* An int64[n] initializer (a shape, axes, pads...) */
const char *ox_ints(ox_builder *b, int n, const int64_t *v);
/* A scalar initializer of ir dtype t */
const char *ox_scalar(ox_builder *b, ir_dtype t, double v);

/* Graph inputs and outputs: name of dtype t and shape s. */
void ox_input(ox_builder *b, const char *name, ir_dtype t, const ir_shape *s);
void ox_output(ox_builder *b, const char *name, ir_dtype t, const ir_shape *s);

/* Packs the model (opset ONNX_OPSET, graph name) and writes it to path
 * atomically (ir/outfile.h). */
bool ox_write(ox_builder *b, const char *graph_name, const char *doc, const char *path, char *err, size_t cap);

#endif
