/* onnx_proto.c - the ONNX graph builder: protobuf-c messages of onnx.proto,
 * owned by one ox_builder, packed and written in one go. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/outfile.h"
#include "onnx.h"
#include "onnx_impl.h"

static void die_oom(void) {
    fputs("mgc: out of memory\n", stderr);
    abort();
}

/* grows *arr (of pointers) to hold one more */
static void push(void ***arr, size_t *n, size_t *cap, void *p) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        void **grown = realloc(*arr, *cap * sizeof *grown);
        if (!grown) die_oom();
        *arr = grown;
    }
    (*arr)[(*n)++] = p;
}

void *ox_alloc(ox_builder *b, size_t bytes) {
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) die_oom();
    push(&b->owned, &b->n_owned, &b->cap_owned, p);
    return p;
}

void ox_free(ox_builder *b) {
    for (size_t k = 0; k < b->n_owned; k++) free(b->owned[k]);
    free(b->owned);
    free(b->nodes);
    free(b->inits);
    free(b->inputs);
    free(b->outputs);
    *b = (ox_builder){0};
}

const char *ox_str(ox_builder *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = ox_alloc(b, (size_t)len + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)len + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* "mgc::" keeps them apart from the model's names (identifiers, scoped "dense/kernel") */
const char *ox_fresh(ox_builder *b, const char *hint) { return ox_str(b, "mgc::%s_%d", hint, b->fresh++); }

int ox_dtype(ir_dtype t) {
    switch (t) {
    case IR_F32: return ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    case IR_I32: return ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
    case IR_F64: return ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
    case IR_U8: return ONNX__TENSOR_PROTO__DATA_TYPE__UINT8;
    case IR_DTYPE_COUNT: break;
    }
    return ONNX__TENSOR_PROTO__DATA_TYPE__UNDEFINED;
}

Onnx__NodeProto *ox_node(ox_builder *b, const char *op_type, int n_in, const char *const *in, const char *out) {
    Onnx__NodeProto *n = ox_alloc(b, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = (char *)op_type;
    n->name = (char *)ox_fresh(b, op_type);
    n->n_input = (size_t)n_in;
    n->input = ox_alloc(b, (size_t)n_in * sizeof *n->input);
    for (int k = 0; k < n_in; k++) n->input[k] = (char *)in[k];
    n->n_output = 1;
    n->output = ox_alloc(b, sizeof *n->output);
    n->output[0] = (char *)(out ? out : ox_fresh(b, "t"));
    push((void ***)&b->nodes, &b->n_nodes, &b->cap_nodes, n);
    return n;
}

static Onnx__AttributeProto *attr(ox_builder *b, Onnx__NodeProto *n, const char *name,
                                  Onnx__AttributeProto__AttributeType type) {
    Onnx__AttributeProto *a = ox_alloc(b, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1, a->type = type;
    Onnx__AttributeProto **grown = ox_alloc(b, (n->n_attribute + 1) * sizeof *grown);
    if (n->n_attribute) memcpy(grown, n->attribute, n->n_attribute * sizeof *grown);
    grown[n->n_attribute++] = a;
    n->attribute = grown;
    return a;
}

void ox_attr_int(ox_builder *b, Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1, a->i = v;
}

void ox_attr_float(ox_builder *b, Onnx__NodeProto *n, const char *name, double v) {
    Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1, a->f = (float)v;
}

void ox_attr_ints(ox_builder *b, Onnx__NodeProto *n, const char *name, int count, const int64_t *v) {
    Onnx__AttributeProto *a = attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)count;
    a->ints = ox_alloc(b, (size_t)count * sizeof *a->ints);
    memcpy(a->ints, v, (size_t)count * sizeof *v);
}

const char *ox_op1(ox_builder *b, const char *op_type, const char *x) {
    return ox_node(b, op_type, 1, (const char *[]){x}, NULL)->output[0];
}

const char *ox_op2(ox_builder *b, const char *op_type, const char *x, const char *y) {
    return ox_node(b, op_type, 2, (const char *[]){x, y}, NULL)->output[0];
}

const char *ox_init(ox_builder *b, const char *name, int dtype, int rank, const int64_t *dims, const void *data,
                    size_t bytes) {
    Onnx__TensorProto *t = ox_alloc(b, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = (char *)(name ? name : ox_fresh(b, "c"));
    t->has_data_type = 1, t->data_type = dtype;
    t->n_dims = (size_t)rank;
    t->dims = ox_alloc(b, (size_t)rank * sizeof *t->dims);
    if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
    t->has_raw_data = 1;
    t->raw_data.len = bytes;
    t->raw_data.data = ox_alloc(b, bytes);
    if (data && bytes) memcpy(t->raw_data.data, data, bytes);
    push((void ***)&b->inits, &b->n_inits, &b->cap_inits, t);
    return t->name;
}

const char *ox_ints(ox_builder *b, int n, const int64_t *v) {
    int64_t dim = n;
    return ox_init(b, NULL, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, &dim, v, (size_t)n * sizeof *v);
}

const char *ox_scalar(ox_builder *b, ir_dtype t, double v) {
    union {
        float f;
        int32_t i;
        double d;
        uint8_t u;
    } x;
    switch (t) {
    case IR_F32: x.f = (float)v; break;
    case IR_I32: x.i = (int32_t)v; break;
    case IR_F64: x.d = v; break;
    default: x.u = (uint8_t)v; break;
    }
    return ox_init(b, NULL, ox_dtype(t), 0, NULL, &x, ir_dtype_size(t));
}

static Onnx__ValueInfoProto *value_info(ox_builder *b, const char *name, ir_dtype t, const ir_shape *s) {
    Onnx__ValueInfoProto *v = ox_alloc(b, sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = (char *)name;
    Onnx__TypeProto *type = ox_alloc(b, sizeof *type);
    onnx__type_proto__init(type);
    Onnx__TypeProto__Tensor *tensor = ox_alloc(b, sizeof *tensor);
    onnx__type_proto__tensor__init(tensor);
    tensor->has_elem_type = 1, tensor->elem_type = ox_dtype(t);
    Onnx__TensorShapeProto *shape = ox_alloc(b, sizeof *shape);
    onnx__tensor_shape_proto__init(shape);
    shape->n_dim = (size_t)s->rank;
    shape->dim = ox_alloc(b, (size_t)s->rank * sizeof *shape->dim);
    for (int d = 0; d < s->rank; d++) {
        Onnx__TensorShapeProto__Dimension *dim = ox_alloc(b, sizeof *dim);
        onnx__tensor_shape_proto__dimension__init(dim);
        dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dim->dim_value = s->dim[d];
        shape->dim[d] = dim;
    }
    tensor->shape = shape;
    type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    type->tensor_type = tensor;
    v->type = type;
    return v;
}

void ox_input(ox_builder *b, const char *name, ir_dtype t, const ir_shape *s) {
    push((void ***)&b->inputs, &b->n_inputs, &b->cap_inputs, value_info(b, name, t, s));
}

void ox_output(ox_builder *b, const char *name, ir_dtype t, const ir_shape *s) {
    push((void ***)&b->outputs, &b->n_outputs, &b->cap_outputs, value_info(b, name, t, s));
}

bool ox_write(ox_builder *b, const char *graph_name, const char *doc, const char *path, char *err, size_t cap) {
    Onnx__GraphProto graph;
    onnx__graph_proto__init(&graph);
    graph.name = (char *)graph_name;
    graph.doc_string = (char *)doc;
    graph.n_node = b->n_nodes, graph.node = b->nodes;
    graph.n_initializer = b->n_inits, graph.initializer = b->inits;
    graph.n_input = b->n_inputs, graph.input = b->inputs;
    graph.n_output = b->n_outputs, graph.output = b->outputs;
    Onnx__OperatorSetIdProto opset;
    onnx__operator_set_id_proto__init(&opset);
    opset.domain = "";
    opset.has_version = 1, opset.version = ONNX_OPSET;
    Onnx__OperatorSetIdProto *opsets[] = {&opset};
    Onnx__ModelProto model;
    onnx__model_proto__init(&model);
    model.has_ir_version = 1, model.ir_version = ONNX_IR_VERSION;
    model.n_opset_import = 1, model.opset_import = opsets;
    model.producer_name = "mgc";
    model.producer_version = "0.1";
    model.graph = &graph;

    size_t len = onnx__model_proto__get_packed_size(&model);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) die_oom();
    onnx__model_proto__pack(&model, buf);
    const void *parts[] = {buf};
    bool ok = ir_write_file_atomic(path, parts, &len, 1, err, cap) == 0; /* nothing overwritten by a failure */
    free(buf);
    return ok;
}
