/*
 * onnx.h -- the ONNX frontend: .onnx models into the IR (Relay's op names and attrs, as TVM's
 * from_onnx produces them), and serialized TensorProto files into tensors.
 *
 * The model is read with protobuf-c against frontend/onnx/onnx.proto (the part of ONNX's schema
 * we need).  Every expression the importer makes is typed (checked_type set), so the module it
 * returns is already type-correct; passes re-infer as they need.  Its location (line, col) is
 * (N, 1) for what node N of the model's graph (1-based) became, so passes' messages name the
 * node as "model.onnx:N:1"; a subgraph's nodes have their holder's; inputs and initializers none.
 *
 * Errors (gp_error_*), each naming the file and, for a node, its name, op type, domain and
 * opset:
 *   GP_ERR_IO           the file cannot be read (or an external data file)
 *   GP_ERR_PARSE        not a protobuf ModelProto / TensorProto (malformed or truncated)
 *   GP_ERR_VALUE        well-formed protobuf but an invalid model (a dangling input name, a
 *                       tensor whose data does not match its dims, a bad attribute value)
 *   GP_ERR_UNSUPPORTED  an op, domain, opset, dtype or attribute value we do not claim to
 *                       support (the message says which)
 *   GP_ERR_TYPE         the IR refused a converted node (shapes that do not agree)
 */
#ifndef GP_ONNX_H
#define GP_ONNX_H

#include "ir/ir.h"

/* A fixed shape for a graph input (`--shape NAME=1,3,224,224`). */
typedef struct GPOnnxShape {
  const char *name; /* the ONNX name of a graph input */
  int32_t ndim;
  const int64_t *dims; /* ndim values, each >= 0 */
} GPOnnxShape;

typedef struct GPOnnxOptions {
  /* Shapes that replace the declared ones of these graph inputs (unknown dims included). */
  int32_t nshapes;
  const GPOnnxShape *shapes;
  /* Values of graph inputs known when importing (the conformance runner's inputs): the input's
   * type is taken from its value, and a converter that needs a compile-time value of that
   * input (a Reshape's shape, a Slice's starts, ...) uses it.  The input stays a parameter of
   * @main.  value_names NULL binds the values in order to the graph inputs that are not
   * initializers (as ONNX's test runner does).  Borrowed for the call. */
  int32_t nvalues;
  const char *const *value_names;
  GPTensor *const *values;
  /* NULL, or nvalues entries beside values: entry i, when not NULL, is the value of a sequence-
   * or optional-typed graph input (values[i] is then not read and may be NULL).  Such an input
   * needs its value: its structure (the sequence's length, whether the optional holds a value)
   * becomes its parameter's type (see import.c).  Borrowed for the call. */
  const struct GPOnnxValue *const *structured;
} GPOnnxOptions;

/* Import a model.  `path` names the file in messages and is the base directory of external
 * data files.  opts may be NULL.  @main's parameters are the graph inputs that are not
 * initializers, in order, named after them (characters outside [A-Za-z0-9_/] become '_'); its
 * result is the graph's output, or a tuple of the outputs when there are several.  A new
 * module, or NULL + error. */
GPModule *gp_onnx_import_file(const char *path, const GPOnnxOptions *opts);
GPModule *gp_onnx_import(const void *data, size_t len, const char *path, const GPOnnxOptions *opts);

/* A serialized TensorProto (a test_data_set_N/input_0.pb file).  *name (when name != NULL) gets the
 * tensor's name, gp_malloc'd ("" when it has none).  A new tensor, or NULL + error. */
GPTensor *gp_onnx_read_tensor_file(const char *path, char **name);

/* A value of ONNX's test data: a tensor (TensorProto), a sequence (SequenceProto) or an
 * optional (OptionalProto) of values.  A tree that owns its parts. */
typedef enum { GP_ONNX_TENSOR = 0, GP_ONNX_SEQUENCE = 1, GP_ONNX_OPTIONAL = 2 } GPOnnxValueKind;
typedef struct GPOnnxValue {
  GPOnnxValueKind kind;
  GPTensor *tensor;          /* TENSOR: an owned reference */
  int32_t n;                 /* SEQUENCE: its length; OPTIONAL: 0 (empty) or 1 */
  struct GPOnnxValue *items; /* n values (an owned array) */
} GPOnnxValue;

/* Values nest at most this deep (a sequence of sequences of ... of tensors). */
#define GP_ONNX_MAX_VALUE_DEPTH 16

/* A serialized TensorProto, SequenceProto or OptionalProto (`kind` says which: the files carry
 * no tag; the graph's declared input / output type does) at data.  Errors: GP_ERR_PARSE
 * "<path>: not a serialized ONNX SequenceProto (...)" for bytes that do not parse, GP_ERR_VALUE
 * naming the element ("<path>: element 2: ...") for a proto that contradicts itself (an
 * elem_type that disagrees with its values, a tensor whose data does not match its dims),
 * GP_ERR_UNSUPPORTED for maps and sparse tensors.  A new tree (gp_onnx_value_free), or NULL. */
GPOnnxValue *gp_onnx_parse_value(const void *data, size_t len, GPOnnxValueKind kind, const char *path);
GPOnnxValue *gp_onnx_read_value_file(const char *path, GPOnnxValueKind kind);
void gp_onnx_value_free(GPOnnxValue *v); /* NULL: nothing */
/* The tensors of v in order (depth first; empty optionals and sequences give none): appends
 * borrowed references to out[*n..] (out may be NULL to count only); returns the new *n. */
int32_t gp_onnx_value_leaves(const GPOnnxValue *v, GPTensor **out, int32_t n);

/* What a model's graph takes and gives: the kinds of its inputs that are not initializers (in
 * order) and of its outputs, gp_malloc'd arrays (a map type is GP_ERR_UNSUPPORTED).  0, or -1
 * + error (the model does not parse). */
int gp_onnx_io_kinds(const char *path, int32_t *nin, GPOnnxValueKind **ins, int32_t *nout, GPOnnxValueKind **outs);

/* The sanitized parameter name the importer gives an ONNX graph input name, gp_malloc'd. */
char *gp_onnx_param_name(const char *onnx_name);

#endif /* GP_ONNX_H */
