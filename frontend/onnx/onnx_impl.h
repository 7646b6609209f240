/*
 * onnx_impl.h -- the ONNX importer's internals: what the converters (frontend/onnx/cv_*.c) are
 * written against.
 *
 * A converter turns one NodeProto into expressions.  Ownership is simple on purpose: every
 * expression a converter gets (node inputs) or makes through the ox_* builders below is
 * BORROWED -- the importer holds it in a per-node pool released after the node is done -- so a
 * converter never retains or releases.  Tensors from ox_const / ox_attr_tensor are borrowed the
 * same way (valid until the import ends).
 *
 * Every builder returns NULL (or -1) with the error set; the converter returns -1 at once and
 * the importer prefixes the node ("node 'conv1' (Conv, opset 11): ...").  So messages name the
 * input or attribute, not the node.  Use GP_ERR_UNSUPPORTED (ox_unsupported) for what we do not
 * claim to support -- an attribute value, a dtype, a mode -- and GP_ERR_VALUE (ox_invalid) for
 * a model that breaks ONNX's own rules.
 *
 * Types: every expression is typed (checked_type).  Shapes are static wherever the inputs'
 * shapes are; GP_DIM_ANY marks an unknown dim.
 */
#ifndef GP_ONNX_IMPL_H
#define GP_ONNX_IMPL_H

#include "common/checked.h"
#include "frontend/onnx/onnx.h"
#include "frontend/onnx/onnx.pb-c.h"

typedef struct OxImporter OxImporter;

typedef struct OxNode {
  const Gponnx__NodeProto *proto;
  const char *op_type;
  const char *domain; /* "" for the default domain ai.onnx */
  const char *name;   /* the node's name, or its first output's name when it has none */
  int64_t opset;      /* the model's opset for the node's domain */
  int32_t nin;        /* inputs as listed (trailing optional ones may be absent) */
  GPExpr *const *in;  /* in[i] NULL when input i is omitted (an empty name) */
  int32_t nout;       /* outputs as listed */
} OxNode;

/* out[0..n->nout): borrowed (pool) expressions; NULL allowed for an output whose name is empty
 * (not requested).  0, or -1 with the error set. */
typedef int (*OxConvertFn)(OxImporter *im, const OxNode *n, GPExpr **out);

typedef struct OxConverter {
  const char *op_type;
  const char *domain; /* NULL: ai.onnx */
  int32_t since;      /* the lowest opset this converter handles */
  OxConvertFn fn;
} OxConverter;

/* The converter tables, each ended by {NULL}.  An op may appear several times with different
 * `since`: the entry with the largest since <= the model's opset is used. */
extern const OxConverter ox_cv_core[];   /* cv_core.c: the ops of the CNN models (Conv, Gemm, pools, ...) */
extern const OxConverter ox_cv_math[];   /* cv_math.c: elementwise math, logic, comparison, cast */
extern const OxConverter ox_cv_reduce[]; /* cv_reduce.c: reductions, arg max/min, cumsum, topk */
extern const OxConverter ox_cv_tensor[]; /* cv_tensor.c: shape ops, slice, gather, scatter, pad, ... */
extern const OxConverter ox_cv_nn[];     /* cv_nn.c: conv/pool variants, matmul, norms, softmax family */
extern const OxConverter ox_cv_extra[];  /* cv_extra.c: resize, image ops, quantization, the rest */
extern const OxConverter ox_cv_control[]; /* cv_control.c: If, Scan, Loop */
extern const OxConverter ox_cv_seq[];     /* cv_seq.c: sequences and optionals */
/* An (op_type, domain) pair may appear in one table only (the importer checks at start-up). */

/* ------------------------------------------------------------------------------------------ */
/* Errors                                                                                      */

int ox_unsupported(const char *fmt, ...) GP_FMT(1, 2); /* GP_ERR_UNSUPPORTED; returns -1 */
int ox_invalid(const char *fmt, ...) GP_FMT(1, 2);     /* GP_ERR_VALUE; returns -1 */

/* ------------------------------------------------------------------------------------------ */
/* Inputs                                                                                      */

/* Input i, or NULL when omitted or i >= nin (no error). */
GPExpr *ox_in(const OxNode *n, int32_t i);
/* Input i, which the op requires: GP_ERR_VALUE naming it when missing. */
GPExpr *ox_req(const OxNode *n, int32_t i);
/* The type of e: a tensor type for every input a converter sees (the importer refuses a
 * sequence or optional input, a tuple, to every op but cv_seq.c's, Identity, If and Loop), and
 * for every expression it makes unless it made a tuple. */
static inline const GPType *ox_type(const GPExpr *e) { return e->checked_type; }
static inline int32_t ox_rank(const GPExpr *e) { return e->checked_type->n; }
static inline DLDataType ox_dtype(const GPExpr *e) { return e->checked_type->tensor.dtype; }
static inline const int64_t *ox_shape(const GPExpr *e) { return e->checked_type->tensor.shape; }
/* Error (GP_ERR_UNSUPPORTED, naming `what`) unless every dim of e's shape is known. */
int ox_static(const GPExpr *e, const char *what);

/* The compile-time value of e: a constant; a graph input whose value the caller gave
 * (GPOnnxOptions.values); shape_of of a static shape; or an op computed from those (evaluated
 * and memoized).  Borrowed.  GP_ERR_UNSUPPORTED naming `what` when e depends on a runtime
 * value. */
GPTensor *ox_const(OxImporter *im, GPExpr *e, const char *what);
/* ox_const of a 0-d or 1-d integer tensor as int64 values (pool-owned array, *count values). */
int ox_const_ints(OxImporter *im, GPExpr *e, const char *what, const int64_t **vals, int32_t *count);
/* ox_const of a tensor with one element, as a double. */
int ox_const_scalar(OxImporter *im, GPExpr *e, const char *what, double *v);

/* ox_const without an error: NULL when e's value is not known when importing (only a
 * GP_ERR_UNSUPPORTED is cleared; another error, e.g. a kernel's, stays pending). */
GPTensor *ox_try_const(OxImporter *im, GPExpr *e);

/* ------------------------------------------------------------------------------------------ */
/* Subgraphs (the GRAPH attributes of If, Loop and Scan)                                        */

/* The input and output counts of n's GRAPH attribute `attr` (-1 + error when missing). */
int ox_subgraph_arity(const OxNode *n, const char *attr, int32_t *nin, int32_t *nout);
/* Its node count (0 when missing). */
size_t ox_subgraph_size(const OxNode *n, const char *attr);
/* Convert the graph of attribute `attr` in the current scope: its inputs bound to
 * binds[0..nbind) (nbind must equal its input count), the enclosing graphs' names visible, its
 * own names (inputs, initializers, node outputs) dropped afterwards, so the same graph can be
 * converted again (an unrolled loop).  out[0..nout) get its outputs (borrowed; nout must equal
 * its output count).  Errors are prefixed with the attribute's name (and the inner node's). */
int ox_subgraph(OxImporter *im, const OxNode *n, const char *attr, int32_t nbind, GPExpr *const *binds,
                int32_t nout, GPExpr **out);
/* Relay's if (cond: a scalar bool); both branches must have the same type (GP_ERR_UNSUPPORTED
 * naming both otherwise). */
GPExpr *ox_if(OxImporter *im, GPExpr *cond, GPExpr *then_e, GPExpr *else_e);

/* ------------------------------------------------------------------------------------------ */
/* Attributes (absent -> the default; present with the wrong type -> GP_ERR_VALUE)            */

bool ox_has_attr(const OxNode *n, const char *name);
int64_t ox_attr_int(const OxNode *n, const char *name, int64_t dflt);
double ox_attr_float(const OxNode *n, const char *name, double dflt);
/* Pool-owned NUL-terminated copy of a STRING attribute, or dflt. */
const char *ox_attr_str(OxImporter *im, const OxNode *n, const char *name, const char *dflt);
/* INTS / FLOATS: *count = -1 when absent; the array is the proto's own (valid for the import). */
const int64_t *ox_attr_ints(const OxNode *n, const char *name, int32_t *count);
const float *ox_attr_floats(const OxNode *n, const char *name, int32_t *count);
/* A TENSOR attribute as a tensor (borrowed), or NULL when absent (no error) / invalid (error:
 * check gp_error_kind()). */
GPTensor *ox_attr_tensor(OxImporter *im, const OxNode *n, const char *name);
/* A getter that finds its attribute stored with another type sets GP_ERR_VALUE (naming the
 * attribute, both types) and returns dflt; the importer fails the node when the converter
 * returns, so converters need not check. */

/* ------------------------------------------------------------------------------------------ */
/* Dtypes                                                                                      */

/* ONNX TensorProto.DataType -> DLDataType; GP_ERR_UNSUPPORTED naming the type otherwise. */
int ox_dtype_from_onnx(int32_t onnx_type, DLDataType *out);
const char *ox_onnx_type_name(int32_t onnx_type); /* "FLOAT", "BFLOAT16", "type 99" (static) */
static inline bool ox_is_float(DLDataType t) { return t.code == kDLFloat || (t.code == kDLBfloat && t.bits == 16); }
static inline bool ox_is_int(DLDataType t) { return t.code == kDLInt || (t.code == kDLUInt && t.bits > 1); }
static inline bool ox_is_bool(DLDataType t) { return t.code == kDLUInt && t.bits == 1; }

/* ------------------------------------------------------------------------------------------ */
/* Builders (results borrowed; typed; NULL + error)                                            */

/* A call of op `op` on args with attrs keys[i] = vals[i]; infers its type now. */
GPExpr *ox_call(OxImporter *im, const char *op, int32_t nargs, GPExpr *const *args, int32_t nattrs,
                const char *const *keys, const GPAttrValue *vals);
/* Shorthands without attrs. */
GPExpr *ox_op1(OxImporter *im, const char *op, GPExpr *a);
GPExpr *ox_op2(OxImporter *im, const char *op, GPExpr *a, GPExpr *b);
/* A constant taking over the reference `t` (even on error). */
GPExpr *ox_constant(OxImporter *im, GPTensor *t);
/* A scalar (0-d) constant of dtype dt. */
GPExpr *ox_scalar(OxImporter *im, DLDataType dt, double v);
/* A 1-d int64 constant. */
GPExpr *ox_ints_const(OxImporter *im, int32_t n, const int64_t *v);
GPExpr *ox_tuple(OxImporter *im, int32_t n, GPExpr *const *fields);
GPExpr *ox_get_item(OxImporter *im, GPExpr *tuple, int32_t index);
/* Empty optionals (see import.c's header: an optional holding a value is that value, an empty
 * one the empty tuple remembered as "none").  ox_none makes one; ox_mark_none marks e as one
 * (a graph input, a branch's result); ox_is_none asks. */
GPExpr *ox_none(OxImporter *im);
void ox_mark_none(OxImporter *im, GPExpr *e);
bool ox_is_none(OxImporter *im, const GPExpr *e);
/* Opsets before 7 (cv_math.c): the B operand of a binary op broadcast by the `broadcast` /
 * `axis` attributes (b itself from opset 7 on; NULL + error when the shapes do not fit), and
 * the one-shape rule of Sum/Max/Min/Mean before opset 8 (-1 + error). */
GPExpr *ox_legacy_bcast(OxImporter *im, const OxNode *n, GPExpr *a, GPExpr *b);
int ox_legacy_same_shapes(const OxNode *n, GPExpr *const *in, int32_t count);
/* cast(e, dtype) unless e already has dtype dt (then e itself). */
GPExpr *ox_cast(OxImporter *im, GPExpr *e, DLDataType dt);
/* A pool-owned scratch allocation (freed when the import ends). */
void *ox_alloc(OxImporter *im, size_t size);
/* count elements of elem bytes each (count + extra, extra >= 0), sized through common/checked.h:
 * NULL + GP_ERR_UNSUPPORTED naming `what` when the count is negative or the size overflows or
 * exceeds GP_MAX_TENSOR_ELEMS elements or OX_MAX_SCRATCH_BYTES.  Zeroed. */
#define OX_MAX_SCRATCH_BYTES ((size_t)1 << 32)
void *ox_alloc_n(OxImporter *im, int64_t count, int64_t extra, size_t elem, const char *what);
/* *out = f[0] * ... * f[n-1] through gp_mul_i64: -1 + GP_ERR_UNSUPPORTED naming `what` when a
 * factor is negative, the product overflows or it exceeds limit.  OX_PROD lists the factors. */
int ox_prod(int64_t limit, int64_t *out, const char *what, int32_t n, const int64_t *f);
#define OX_PROD(limit, out, what, ...)                                                                        \
  ox_prod(limit, out, what, (int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

/* ------------------------------------------------------------------------------------------ */
/* Tensors and files (frontend/onnx/tensor.c)                                                  */

#define GP_OX_MAX_RANK 64
/* A TensorProto as a new tensor.  raw_data is taken over (the proto's field is cleared), not
 * copied; external data is mapped from base_dir/location and viewed in place.  NULL + error
 * naming the tensor. */
GPTensor *ox_tensor_from_proto(Gponnx__TensorProto *tp, const char *base_dir);

/* A mapped file, refcounted: the importer holds one reference while it runs and every tensor
 * that views the file holds one, so the mapping lives while any constant uses it.
 * ox_mapping_new takes over a mapping made with mmap (munmap at the last release). */
typedef struct OxMapping OxMapping;
OxMapping *ox_mapping_new(void *base, size_t len);
void ox_mapping_retain(OxMapping *mp);
void ox_mapping_release(OxMapping *mp); /* NULL: nothing */
/* Where a tensor's raw_data lies in a mapped model file (ox_skeleton left it out). */
typedef struct OxRawView {
  OxMapping *map;
  const uint8_t *data;
  size_t len;
} OxRawView;
/* ox_tensor_from_proto with the raw_data at `view` (NULL: the proto's own): the tensor views
 * the mapping in place, at any alignment (DLPack's byte_offset past a 256-byte aligned data
 * pointer); copied only where it must be converted (bool normalized to 0/1, 2- and 4-bit types
 * unpacked).  Little-endian hosts only, as the whole frontend. */
GPTensor *ox_tensor_from_proto_view(Gponnx__TensorProto *tp, const char *base_dir, const OxRawView *view);

/* The serialized ModelProto at data without the payloads of its graph's initializers' raw_data
 * of at least OX_VIEW_MIN bytes (written as empty raw_data), so that unpacking it copies no
 * weights; (*spans)[i] is where initializer i's payload lies in data (len 0: in the skeleton).
 * Only the top-level graph's initializers are left out (Constant nodes and subgraphs keep
 * theirs).  -1 when data is not well-formed protobuf wire format (the caller unpacks data as
 * it is, and protobuf-c reports the error); no error is set. */
#define OX_VIEW_MIN 4096
typedef struct OxSpan {
  size_t off, len;
} OxSpan;
int ox_skeleton(const uint8_t *data, size_t len, uint8_t **out, size_t *out_len, OxSpan **spans, size_t *nspans);
/* A whole file into a gp_malloc'd buffer; -1 + GP_ERR_IO. */
int ox_read_whole_file(const char *path, void **data, size_t *len);
/* Model m packed into file path (created or truncated); *len (when len is not NULL) gets its
 * bytes; -1 + GP_ERR_IO. */
int ox_write_model(const Gponnx__ModelProto *m, const char *path, size_t *len);

#endif /* GP_ONNX_IMPL_H */
