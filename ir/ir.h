/*
 * ir.h -- the internal header of the graphpass host library (IR core, text format, services).
 *
 * Everything here is hidden (-fvisibility=hidden); the outside world sees only abi/graphpass.h
 * through graphpass_host_api().  Conventions:
 *  - Functions that can fail return NULL or -1 after gp_error_set(); success leaves the error
 *    slot untouched.
 *  - "new" in a comment = returns a new reference (caller releases with gp_release).
 *    Arguments are borrowed unless a comment says "takes".
 *  - Nothing recurses on graph depth: walks use explicit stacks (see gp_post_order).
 */
#ifndef GP_IR_H
#define GP_IR_H

#include "graphpass.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GP_FMT(a, b) __attribute__((format(printf, a, b)))
#define GP_UNUSED(x) ((void)(x))
#define GP_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------------------------ */
/* Memory (ir/util.c).  One allocator; out of memory aborts with a message (no partial states). */

void *gp_malloc(size_t size);
void *gp_calloc(size_t n, size_t size);
void *gp_realloc(void *p, size_t size);
void gp_free(void *p);
char *gp_strdup(const char *s);
char *gp_strndup(const char *s, size_t n);

/* Growable byte buffer.  `data` is always NUL-terminated once anything was written. */
typedef struct GPBuf {
  char *data;
  size_t len, cap;
} GPBuf;

void gp_buf_putc(GPBuf *b, char c);
void gp_buf_put(GPBuf *b, const char *s, size_t n);
void gp_buf_puts(GPBuf *b, const char *s);
void gp_buf_printf(GPBuf *b, const char *fmt, ...) GP_FMT(2, 3);
char *gp_buf_take(GPBuf *b); /* returns data (never NULL), resets b */
/* A whole file ('-': stdin), NUL-terminated (gp_free it), its length in *len; NULL + GP_ERR_IO
 * "<path>: cannot open: <why>" / "<path>: read error". */
char *gp_read_file(const char *path, size_t *len);
void gp_buf_free(GPBuf *b);

/* Growable array of pointers. */
typedef struct GPVec {
  void **items;
  size_t len, cap;
} GPVec;

void gp_vec_push(GPVec *v, void *p);
void *gp_vec_pop(GPVec *v);
void gp_vec_free(GPVec *v);

/* Open-addressing hash map from pointer (non-NULL) to pointer.  Key and value share a slot,
 * so a probe touches one cache line.  Iterate with: for i < cap, if (slots[i].key) ... */
typedef struct GPPtrMapSlot {
  void *key;
  void *val;
} GPPtrMapSlot;

typedef struct GPPtrMap {
  GPPtrMapSlot *slots;
  size_t len, cap; /* cap is 0 or a power of two */
} GPPtrMap;

/* Size the map for n entries without rehashing (call before a known number of puts). */
void gp_map_reserve(GPPtrMap *m, size_t n);

void *gp_map_get(const GPPtrMap *m, const void *key); /* NULL when absent */
bool gp_map_has(const GPPtrMap *m, const void *key);
void gp_map_put(GPPtrMap *m, const void *key, void *val);
void gp_map_free(GPPtrMap *m);

/* String-keyed map (keys copied, owned by the map). */
typedef struct GPStrMap {
  char **keys;
  void **vals;
  size_t len, cap;
} GPStrMap;

void *gp_strmap_get(const GPStrMap *m, const char *key);
bool gp_strmap_has(const GPStrMap *m, const char *key);
void gp_strmap_put(GPStrMap *m, const char *key, void *val);
void *gp_strmap_remove(GPStrMap *m, const char *key); /* returns the old value or NULL */
void gp_strmap_free(GPStrMap *m);                      /* frees keys, not values */

uint64_t gp_hash_bytes(const void *data, size_t n, uint64_t seed);
static inline uint64_t gp_hash_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

/* Node allocator (ir/pool.c): expression nodes, laid out in creation order in 64 KiB pages of
 * one size class, reused when freed.  gp_node_alloc returns zeroed, 8-byte aligned memory and
 * never NULL (out of memory aborts); gp_node_free may run on any thread.  Sanitizer builds and
 * GRAPHPASS_NODE_POOL=0 fall back to calloc/free. */
void *gp_node_alloc(size_t size);
void gp_node_free(void *p);
typedef struct GPNodePoolStats {
  size_t mapped_bytes; /* bytes of segments mapped now, pooled and huge */
  size_t segments;     /* segments mapped now */
  size_t live_bytes;   /* bytes handed out and not freed, by size class (a free from another
                        * thread counts once its owner has taken it back) */
} GPNodePoolStats;
/* Fills *st; returns false when the pool is off (calloc/free), and then *st is all zero. */
bool gp_node_pool_stats(GPNodePoolStats *st);
/* The pool page holding p, a block of GP_NODE_PAGE_SIZE bytes at p's address rounded down to
 * it (0 when p was not cut from a pool page: the pool is off, or p is a huge node).  A walk
 * keeps per-node data for such nodes in per-page arrays indexed by address, which it reads in
 * about the order it meets the nodes (gp_ni_build's shared nodes), instead of a hash table. */
#define GP_NODE_PAGE_SIZE ((uintptr_t)1 << 16)
uintptr_t gp_node_pool_page(const void *p);

/* ------------------------------------------------------------------------------------------ */
/* Errors (ir/error.c): thread-local kind + message.                                           */

void gp_error_set(int32_t kind, const char *fmt, ...) GP_FMT(2, 3);
void gp_error_setv(int32_t kind, const char *fmt, va_list ap);
int32_t gp_error_kind(void);
const char *gp_error_message(void); /* "" when none */
void gp_error_clear(void);
/* Prepend "<prefix>: " to the pending message (keeps the kind); e.g. naming a pass. */
void gp_error_prefix(const char *fmt, ...) GP_FMT(1, 2);
/* Replace the pending error's kind (keeps the message). */
void gp_error_set_kind(int32_t kind);

/* ------------------------------------------------------------------------------------------ */
/* Objects (ir/object.c)                                                                       */

/* Allocate a zeroed object of `size` bytes with ref_count 1: from malloc (free it with gp_free),
 * or from the node pool (free it with gp_node_free; for IR objects that are many and read
 * together: expressions, attribute sets). */
void *gp_object_alloc(size_t size, int32_t type_index, void (*deleter)(GPObject *));
void *gp_node_object_alloc(size_t size, int32_t type_index, void (*deleter)(GPObject *));
/* Release a child from inside a deleter without recursion: when it drops to zero, it is queued
 * and freed by the outermost deleter's loop.  Use this (never gp_release) in deleters. */
void gp_release_child(void *obj);
/* Run `free_fn(obj)` now if no drain is active, else queue it; loop until the queue is empty. */
void gp_object_drain(GPObject *obj, void (*free_fn)(GPObject *));
const char *gp_type_index_name(int32_t type_index);

GPString *gp_string_new(const char *data, size_t size);
GPPackedFunc *gp_func_new(void *self, GPPackedCFunc call, void (*self_deleter)(void *));
int gp_func_call(GPPackedFunc *f, const GPAny *args, int32_t nargs, GPAny *result);
void gp_any_clear(GPAny *v);
GPAny gp_any_int(int64_t v);
GPAny gp_any_float(double v);
GPAny gp_any_bool(bool v);
GPAny gp_any_ptr(void *p);
GPAny gp_any_str(const char *s); /* raw string, borrowed */
GPAny gp_any_obj(void *obj);     /* borrowed: does not retain */

/* ------------------------------------------------------------------------------------------ */
/* Data types (ir/type.c)                                                                      */

/* Parse "float32", "int8", "bool", "uint8", "float16", "int64", ... (Relay spelling). */
int gp_dtype_parse(const char *s, size_t n, DLDataType *out);
/* Relay spelling into buf (at least 24 bytes); returns buf. */
const char *gp_dtype_str(DLDataType t, char *buf);
bool gp_dtype_eq(DLDataType a, DLDataType b);
size_t gp_dtype_bytes(DLDataType t); /* bytes per element (bits rounded up) * lanes */

#define GP_DT(code_, bits_) ((DLDataType){.code = (uint8_t)(code_), .bits = (uint8_t)(bits_), .lanes = 1})
#define GP_DT_F32 GP_DT(kDLFloat, 32)
#define GP_DT_F64 GP_DT(kDLFloat, 64)
#define GP_DT_F16 GP_DT(kDLFloat, 16)
#define GP_DT_I8 GP_DT(kDLInt, 8)
#define GP_DT_I16 GP_DT(kDLInt, 16)
#define GP_DT_I32 GP_DT(kDLInt, 32)
#define GP_DT_I64 GP_DT(kDLInt, 64)
#define GP_DT_U8 GP_DT(kDLUInt, 8)
/* bool is uint1 in Relay (printed "bool"); stored one byte per element. */
#define GP_DT_BOOL GP_DT(kDLUInt, 1)
#define GP_DT_U16 GP_DT(kDLUInt, 16)
#define GP_DT_U32 GP_DT(kDLUInt, 32)
#define GP_DT_U64 GP_DT(kDLUInt, 64)
#define GP_DT_BF16 GP_DT(kDLBfloat, 16)

/* The narrow float type codes of DLPack 1.1 (our <dlpack/dlpack.h> is older and lacks them; the
 * values are DLPack's).  Relay / tvm-ffi spell them float8_e4m3fn, float8_e4m3fnuz, float8_e5m2,
 * float8_e5m2fnuz, float8_e8m0fnu and float4_e2m1fn. */
enum {
  GP_DL_FLOAT8_E4M3FN = 10,
  GP_DL_FLOAT8_E4M3FNUZ = 11,
  GP_DL_FLOAT8_E5M2 = 12,
  GP_DL_FLOAT8_E5M2FNUZ = 13,
  GP_DL_FLOAT8_E8M0FNU = 14,
  GP_DL_FLOAT4_E2M1FN = 17,
};

/* Storage dtypes: held in tensors (one byte per element for the 2-, 4- and 8-bit ones; int2 and
 * int4 sign-extended into it), converted, printed and compared, but computed through a compute
 * dtype: float32 for bfloat16 and the float8 / float4 types, int32 for int2/int4/uint2/uint4
 * (ir/dtype.c, the evaluator's gp_eval_op).  Returns false for a dtype kernels compute in. */
bool gp_dtype_is_storage(DLDataType t, DLDataType *compute);
/* A value of a storage float dtype (bfloat16, float8_*, float4_e2m1fn) as float, exactly. */
float gp_narrow_float_to_f32(DLDataType t, uint32_t bits);
/* float -> storage float dtype t.  Rounded to nearest even (float8_e8m0fnu: `round_mode` 0 up,
 * 1 nearest, 2 down, as ONNX's Cast).  saturate (ONNX's Cast/QuantizeLinear default): a value
 * beyond the largest finite one (or an infinity) becomes the largest finite one with its sign;
 * otherwise it becomes infinity (float8_e5m2) or NaN (types without infinities; float4_e2m1fn
 * has no NaN either and always saturates).  NaN stays NaN (float4_e2m1fn: -0, as ml_dtypes).
 * The fnuz types have no -0. */
uint32_t gp_f32_to_narrow_float(DLDataType t, float x, bool saturate, int round_mode);
/* The range of an integer dtype (bool: [0, 1]; uint64's hi is INT64_MAX: values above it are
 * not representable in int64). */
void gp_dtype_int_range(DLDataType t, int64_t *lo, int64_t *hi);

/* ------------------------------------------------------------------------------------------ */
/* Types (ir/type.c): interned, immortal, thread-safe.                                         */

const GPType *gp_type_tensor(DLDataType dtype, int32_t ndim, const int64_t *shape);
const GPType *gp_type_scalar(DLDataType dtype);
const GPType *gp_type_tuple(int32_t n, const GPType *const *fields);
const GPType *gp_type_func(int32_t nparams, const GPType *const *params, const GPType *ret);
/* TVM spelling: Tensor[(1, 3), float32], float32 (rank 0), (T1, T2), fn (T1) -> T2, ? dims. */
void gp_type_print(GPBuf *b, const GPType *t);
int64_t gp_type_numel(const GPType *t); /* -1 if any dim unknown or not a tensor */
/* "(1, 3, ?, 224)" for error messages (long shapes end in "..."). */
typedef struct GPDimsStr {
  char s[160];
} GPDimsStr;
GPDimsStr gp_dims_str(int32_t n, const int64_t *dims);
void gp_types_shutdown(void);            /* frees the intern table (process exit only) */

/* ------------------------------------------------------------------------------------------ */
/* Tensors (ir/tensor.c)                                                                       */

GPTensor *gp_tensor_from_dlpack(DLManagedTensor *managed); /* takes managed, even on error */
/* new; with_data: zeroed buffer (64-byte aligned) owned by the tensor; else data NULL. */
GPTensor *gp_tensor_alloc(DLDataType dtype, int32_t ndim, const int64_t *shape, bool with_data);
size_t gp_tensor_nbytes(const GPTensor *t);
/* Mark t as a view of a read-only file mapping (its producer knows): gp_tensor_drop_pages may
 * then hand its resident pages back to the OS (GPHostAPI.tensor_drop_pages). */
void gp_tensor_set_file_backed(GPTensor *t);
void gp_tensor_drop_pages(const GPTensor *t);
bool gp_tensor_is_compact(const GPTensor *t);
const GPType *gp_tensor_type(const GPTensor *t);
/* A scalar constant tensor of rank 0 (e.g. 1f, 0i64). */
GPTensor *gp_tensor_scalar_f64(DLDataType dtype, double v);
GPTensor *gp_tensor_scalar_i64(DLDataType dtype, int64_t v);
/* Read element i (row-major over the logical shape, honouring strides) as double / int64. */
double gp_tensor_get_f64(const GPTensor *t, int64_t i);
int64_t gp_tensor_get_i64(const GPTensor *t, int64_t i);
/* The largest |element| (NaNs skipped; 0 for an empty tensor or one without data). */
double gp_tensor_max_abs(const GPTensor *t);

/* ------------------------------------------------------------------------------------------ */
/* Attributes (ir/attrs.c)                                                                     */

GPAttrs *gp_attrs_new(int32_t n, const char *const *keys, const GPAttrValue *values);
/* Keys in the op's schema; missing ones get defaults; a required one missing, an unknown key or
 * a value of the wrong kind is GP_ERR_VALUE listing what was expected.  An INT given where
 * FLOAT is expected is converted; INTS accepted for FLOATS likewise.  Returns NULL (no error)
 * for an op with an empty schema when n == 0. */
GPAttrs *gp_op_attrs_new(const GPOp *op, int32_t n, const char *const *keys,
                         const GPAttrValue *values);
const GPAttrValue *gp_attrs_get(const GPAttrs *a, const char *key);
int64_t gp_attrs_int(const GPAttrs *a, const char *key, int64_t dflt);
double gp_attrs_float(const GPAttrs *a, const char *key, double dflt);
bool gp_attr_value_eq(const GPAttrValue *a, const GPAttrValue *b);
bool gp_attrs_eq(const GPAttrs *a, const GPAttrs *b); /* NULL == NULL; NULL != non-NULL */
uint64_t gp_attrs_hash(const GPAttrs *a);
/* Attribute value as TVM prints it: 1, 1f, True, "NCHW", [1, 1], float32 (dtype as string). */
void gp_attr_value_print(GPBuf *b, const GPAttrValue *v);
GPAttrValue gp_attr_int(int64_t v);
GPAttrValue gp_attr_float(double v);
GPAttrValue gp_attr_bool(bool v);
GPAttrValue gp_attr_str(const char *s);          /* borrowed; copied by attrs_new */
GPAttrValue gp_attr_ints(int32_t n, const int64_t *v); /* borrowed; copied by attrs_new */
GPAttrValue gp_attr_dtype(DLDataType t);
/* Whether attribute `key` of op `op` is one TVM holds as (before, after) pairs and prints nested,
 * [[0, 0], [1, 1]] (nn.pad's pad_width, space_to_batch_nd's paddings, ...): ours is the flat
 * array; the printer writes it in pairs and the parser flattens it. */
bool gp_attr_in_pairs(const char *op, const char *key);

/* ------------------------------------------------------------------------------------------ */
/* Ops (ir/op.c registry; ir/ops_*.c definitions)                                              */

/* Registers the built-in ops once (thread-safe); every entry point calls it. */
void gp_ops_init(void);
const GPOp *gp_op_get(const char *name);  /* NULL + GP_ERR_NOT_FOUND */
const GPOp *gp_op_find(const char *name); /* NULL, no error */
const GPOp *gp_op_register(const GPOpDef *def, bool allow_override);
int32_t gp_op_count(void);
const GPOp *gp_op_at(int32_t index);
/* Type-check a call of an op: arguments typed; runs the relation, prefixing errors with the op
 * name. */
const GPType *gp_op_infer(const GPOp *op, const GPAttrs *attrs, const GPType *const *arg_types,
                          int32_t nargs);
void gp_ops_register_builtin(void); /* ir/ops_*.c: all built-in ops (called by gp_ops_init) */
/* Set / read an op's kernel (the pair is read and written under the registry lock). */
int gp_op_set_kernel(const GPOp *op, GPOpKernelFn kernel, void *user);
/* The same, recording `origin` (a plugin name; NULL or "host": the host) -- see op.c. */
int gp_op_set_kernel_from(const GPOp *op, GPOpKernelFn kernel, void *user, const char *origin);
GPOpKernelFn gp_op_kernel(const GPOp *op, void **user);
/* Per-op attributes (GPHostAPI.op_set_attr / op_get_attr). */
int gp_op_set_attr(const GPOp *op, const char *key, const GPAny *value, int32_t plevel);
/* The same, recording `origin` (a plugin name; NULL or "host": the host). */
int gp_op_set_attr_from(const GPOp *op, const char *key, const GPAny *value, int32_t plevel,
                        const char *origin);
/* Remove every attribute and kernel layer `origin` set (the loader, when that plugin fails or
 * is unloaded): attributes go (a value they replaced is not restored); each op's kernel falls
 * back to the one it had before the plugin set it.  No-op for "host". */
void gp_ops_unregister_origin(const char *origin);
int gp_op_get_attr(const GPOp *op, const char *key, GPAny *out);
/* The ops with attribute key, in registry order: out[0 .. min(n, cap)), returns n (-1 + error
 * for a NULL key, or a NULL out with cap > 0).  GPHostAPI.op_list_with_attr. */
int32_t gp_op_list_with_attr(const char *key, const GPOp **out, int32_t cap);
/* Drop every op attribute (releasing hooks); called when plugins are unloaded at shutdown. */
void gp_op_attrs_clear(void);
/* Backward type inference of an op's arguments (TVM's relations that Assign argument types:
 * Conv2DRel's weight from channels and kernel_size, DenseRel's from units, BiasAddRel's and the
 * norms' vectors from data's axis).  Internal to the host (the ABI's GPTypeRelFn is unchanged);
 * InferType calls it only for a call with an argument of unknown type (a parameter without a
 * type annotation).  `args` holds NULL for each unknown argument; the hook stores what it can
 * determine into out[i] for those (out is zeroed by the caller, other entries are ignored).
 * Returns 0 (possibly filling nothing), or -1 + GP_ERR_TYPE when the attrs and the known
 * arguments admit no type (the message as a relation's, without the op name). */
typedef int (*GPTypeFillFn)(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                            int32_t nargs, const GPType **out);
int gp_op_set_fill(const GPOp *op, GPTypeFillFn fill);
GPTypeFillFn gp_op_fill(const GPOp *op); /* NULL when the op has none */

/* ------------------------------------------------------------------------------------------ */
/* Expressions (ir/expr.c).  Constructors return new references, retain their arguments. */

GPVar *gp_var_new(const char *name, const GPType *annotation);
GPGlobalVar *gp_global_var_new(const char *name);
GPConstant *gp_constant_new(GPTensor *data);
GPCall *gp_call_new(GPExpr *op, int32_t nargs, GPExpr *const *args, GPAttrs *attrs);
/* A call of the registered op `name` with attrs keys[i] = vals[i] (gp_op_attrs_new: the
 * schema's defaults for the rest); NULL + error for an unknown op (GP_ERR_NOT_FOUND) or a bad
 * attribute (GP_ERR_VALUE, prefixed with the op's name). */
GPExpr *gp_call_op(const char *name, int32_t nargs, GPExpr *const *args, int32_t nattrs, const char *const *keys,
                   const GPAttrValue *vals);
GPTuple *gp_tuple_new(int32_t n, GPExpr *const *fields);
GPTupleGetItem *gp_tuple_get_item_new(GPExpr *tuple, int32_t index);
GPFunctionExpr *gp_function_new(int32_t nparams, GPVar *const *params, GPExpr *body,
                                const GPType *ret_type, GPAttrs *attrs);
GPLet *gp_let_new(GPVar *var, GPExpr *value, GPExpr *body);
GPIf *gp_if_new(GPExpr *cond, GPExpr *then_branch, GPExpr *else_branch);
/* A copy of e with the given checked type and location (shares children); e retained when
 * nothing changes. */
GPExpr *gp_expr_annotate(GPExpr *e, const GPType *checked_type, uint32_t line, uint32_t col);
/* A copy of e with children replaced: kids[i] in the order gp_expr_children gives; returns e
 * retained when every kid is the same pointer.  Keeps checked_type only when keep_type. */
GPExpr *gp_expr_with_children(GPExpr *e, GPExpr *const *kids, bool keep_type);

static inline int32_t gp_kind(const void *e) { return ((const GPObject *)e)->type_index; }

/* Subtree facts (ir/expr.c).  Every expression made by the constructors above carries, in a
 * word just before its header, what its subtree (the node itself included) contains:
 *  - bits 0..47: a Bloom filter of the ops it calls (bit gp_summary_op_bit(op)): a clear bit
 *    means no call of any op hashed there, so "may call op" has false positives, never false
 *    negatives;
 *  - bits 48..57: the expression kinds present (bit 48 + kind - GP_TI_VAR, ops included);
 *  - bit 60 (GP_SUM_CONST_CALL): a call of an op with at least one argument, each a constant or
 *    a tuple (what FoldConstant may fold, with lets, ifs, get-items of tuples and shape_of);
 *  - bit 62 (GP_SUM_KIDS_TYPED): every child was a typed closure when the node was made (so
 *    typing the node in place makes it one without a look at its children);
 *  - bit 63 (GP_SUM_TYPED, "typed closure"): the node and every node under it have a
 *    checked_type (ops count as typed).  Set when the node is made with its type and typed
 *    children, or later by gp_expr_refresh_typed once a type is given to a fresh node in place
 *    (InferType, the rewriter) or InferType keeps a typed node.  Types are never cleared from a
 *    node, so the bit stays true for the node's life; a node typed behind the host's back (a
 *    plugin writing checked_type) just lacks it, and InferType walks it as before.
 * The word is computed when the node is made, from its children's words (which the constructor
 * reads anyway), so asking "may this function call nn.dense?" costs O(1): a pass uses it to skip
 * work, never to decide a rewrite.  Ops (immortal, made by the registry) have no word: their
 * summary is their own bit. */
enum { GP_SUM_OP_BUCKETS = 48, GP_SUM_KIND_SHIFT = 48 };
#define GP_SUM_TYPED (1ull << 63)
#define GP_SUM_KIDS_TYPED (1ull << 62) /* every child was a typed closure when the node was made */
#define GP_SUM_INDEXED (1ull << 61)    /* the node may key a host cache (shared index, pattern fixed point) */
#define GP_SUM_CONST_CALL (1ull << 60) /* a call of an op on constants / tuples only (see above) */
_Static_assert(GP_SUM_KIND_SHIFT + (GP_TI_IR_END - GP_TI_VAR) <= 60, "the kind bits reach GP_SUM_CONST_CALL");
#define GP_SUM_KIND(k) (1ull << (GP_SUM_KIND_SHIFT + (k) - GP_TI_VAR))
#define GP_SUM_KINDS (((1ull << (GP_TI_IR_END - GP_TI_VAR)) - 1) << GP_SUM_KIND_SHIFT)
static inline uint64_t gp_summary_op_bit(const GPOp *op) {
  uint32_t h = (uint32_t)op->index * 2654435761u; /* Fibonacci hashing: neighbours spread */
  return 1ull << ((uint64_t)h * GP_SUM_OP_BUCKETS >> 32);
}
static inline uint64_t gp_expr_summary(const GPExpr *e) {
  if (((const GPObject *)e)->type_index == GP_TI_OP)
    return gp_summary_op_bit((const GPOp *)e) | GP_SUM_KIND(GP_TI_OP) | GP_SUM_TYPED;
  return __atomic_load_n((const uint64_t *)(const void *)e - 1, __ATOMIC_RELAXED); /* the word before it */
}
/* False when no call of op is reachable from e (exact); true when one may be. */
static inline bool gp_expr_may_call(const GPExpr *e, const GPOp *op) {
  return (gp_expr_summary(e) & gp_summary_op_bit(op)) != 0;
}
/* Whether a node of `kind` (GP_TI_VAR .. GP_TI_OP) is reachable from e (exact). */
static inline bool gp_expr_has_kind(const GPExpr *e, int32_t kind) {
  return (gp_expr_summary(e) & GP_SUM_KIND(kind)) != 0;
}
/* Sets e's typed-closure bit when e has a checked_type and every child has the bit; returns
 * whether e has it now.  For a node given its type in place after construction. */
bool gp_expr_refresh_typed_slow(GPExpr *e);
static inline bool gp_expr_refresh_typed(GPExpr *e) {
  uint64_t s = gp_expr_summary(e);
  if (s & GP_SUM_TYPED) return true;
  if ((s & GP_SUM_KIDS_TYPED) && e->checked_type) {
    __atomic_fetch_or((uint64_t *)(void *)e - 1, GP_SUM_TYPED, __ATOMIC_RELAXED);
    return true;
  }
  return gp_expr_refresh_typed_slow(e);
}
/* The same for e and the typed nodes under it that lack the bit (a replacement a plugin built
 * and typed itself): an explicit-stack walk that stops at typed closures and untyped nodes, so
 * its cost is the size of that region, each node once. */
bool gp_expr_refresh_typed_deep(GPExpr *e);
static inline bool gp_expr_is_typed_closure(const GPExpr *e) { return (gp_expr_summary(e) & GP_SUM_TYPED) != 0; }
static inline bool gp_is_expr(const void *o) {
  int32_t k = gp_kind(o);
  return k >= GP_TI_IR_BEGIN && k < GP_TI_IR_END;
}
#define GP_AS(T, e) ((T *)(e))

/* Children of e in gp_expr_child_at order (abi/graphpass.h), copied into out (at most `cap`);
 * returns the total count. */
int32_t gp_expr_children(const GPExpr *e, GPExpr **out, int32_t cap);
const char *gp_expr_kind_name(const GPExpr *e); /* "call", "var", ... */

/* ------------------------------------------------------------------------------------------ */
/* Traversal (ir/visit.c).  Iterative.                                                          */

/* A dense numbering of the distinct nodes reachable from root: nodes[] children before parents
 * (post-DFS order), root last; the children of node i, in gp_expr_child_at order, are the ids
 * kids[kid_off[i] .. kid_off[i + 1]).  The DFS enters children in gp_expr_child_at order, or
 * with GP_NI_LET_VALUE_FIRST a let's value before its var (gp_post_order's order).
 * Only nodes that may be reached twice (ref_count > 1) are looked up in a visited map: a node
 * held by a single reference has a single parent.  The map keeps a node of the node pool in an
 * array of its page's own, read in about the order the walk meets the nodes (see visit.c). */
typedef struct GPNodeIndex {
  GPExpr **nodes;
  size_t n;
  int32_t *kid_off; /* n + 1 entries */
  int32_t *kids;
  /* per id: the callee op's index for a call of an op, else -(the node's kind): a walk that
   * selects by op or kind reads this dense array instead of every node */
  int32_t *tag;
} GPNodeIndex;

enum { GP_NI_LET_VALUE_FIRST = 1 };

/* 0, or -1 + error (root not an expression; more than INT32_MAX nodes). */
int gp_ni_build(GPNodeIndex *ni, GPExpr *root, int flags);
void gp_ni_free(GPNodeIndex *ni);
/* The GP_NI_LET_VALUE_FIRST index of root, read-only and shared: passes that run one after the
 * other on a function the first left unchanged index it once.  A small cache keyed by the root
 * node (immutable, so its index never changes); an entry goes when its root is freed
 * (gp_ni_forget, from the root's deleter) or is evicted while nobody uses it.  The caller holds
 * a reference to root until gp_ni_release.  NULL + error as gp_ni_build. */
const GPNodeIndex *gp_ni_acquire(GPExpr *root);
void gp_expr_mark_indexed(GPExpr *e); /* sets GP_SUM_INDEXED: e keys a host cache (index, pattern fixed point) */
void gp_ni_release(const GPNodeIndex *ni);
void gp_ni_forget(const GPExpr *root);
/* The pattern driver's fixed-point memo (ir/pattern_rewrite.c): forget what it knows of root
 * (its deleter, through GP_SUM_INDEXED), or everything (NULL: a plugin's callbacks go). */
void gp_pattern_fixed_forget(const GPExpr *root);
/* Off: the driver settles nothing and every round is a full one (tests compare the two). */
void gp_pattern_fixed_enable(bool on);
/* Drops every cached index nobody uses (benchmarks: each timed run starts cold). */
void gp_ni_cache_clear(void);
static inline int32_t gp_ni_kid(const GPNodeIndex *ni, int32_t i, int32_t j) {
  return ni->kids[ni->kid_off[i] + j];
}
/* True when e may have more than one reference (so a walk can meet it twice). */
static inline bool gp_maybe_shared(const void *e) {
  return __atomic_load_n(&((const GPObject *)e)->ref_count, __ATOMIC_RELAXED) != 1u;
}

/* Every distinct node reachable from root, children before parents (post-DFS order, children
 * visited in gp_expr_children order, except a let's value before its var).  Ops are included.
 * *out is gp_malloc'd. */
int gp_post_order(GPExpr *root, GPExpr ***out, size_t *count);
/* See GPRewriteFn.  fn may be NULL (identity, i.e. rebuild nothing).  The rebuilt node passed
 * to fn, when a child changed, keeps the node's checked_type if every new child has the checked
 * type of the child it replaces (the same type InferType would give it), else has none.  A var in a binding position (let var,
 * function param) whose replacement is not a var keeps its binding occurrence, so a callback
 * may replace uses of a name by its value and then drop the let. */
GPExpr *gp_rewrite(GPExpr *root, GPRewriteFn fn, void *user);
/* GPHostAPI.rewrite_keep: what fn returns to keep `rebuilt` without a reference.  A static,
 * immortal node of type index 0 (not an expression), so that a caller who reads, retains or
 * releases it by mistake sees "not an expression" and changes nothing. */
extern GPExpr gp_rewrite_keep_mark;
#define gp_rewrite_keep (&gp_rewrite_keep_mark)
/* gp_rewrite over an index built with GP_NI_LET_VALUE_FIRST: fn gets the node's id and
 * done[j], the rewrite of every node j < id (borrowed; valid until the walk ends). */
GPExpr *gp_rewrite_indexed(const GPNodeIndex *ni, GPRewriteIdFn fn, void *user);
/* gp_rewrite_indexed that, when it succeeds, calls done with the result and the rewrite of every
 * id (res[0 .. ni->n), all alive during the call, borrowed) before it lets them go. */
typedef void (*GPRewriteDoneFn)(void *user, GPExpr *result, GPExpr *const *res);
GPExpr *gp_rewrite_indexed_then(const GPNodeIndex *ni, GPRewriteIdFn fn, void *user, GPRewriteDoneFn done,
                                void *done_user);

/* ------------------------------------------------------------------------------------------ */
/* Modules (ir/module.c)                                                                       */

GPModule *gp_module_new(const char *source_name);
int gp_module_add(GPModule *m, const char *name, GPFunctionExpr *fn, bool allow_override);
/* The same with the caller's global var object (retained), so call sites and the module share
 * one object per name (the parser's need). */
int gp_module_add_gvar(GPModule *m, GPGlobalVar *g, GPFunctionExpr *fn, bool allow_override);
int32_t gp_module_find(const GPModule *m, const char *name); /* index or -1 */
GPFunctionExpr *gp_module_lookup(const GPModule *m, const char *name); /* borrowed, NULL */
GPModule *gp_module_copy(const GPModule *m); /* new; shares functions */
/* Replace function i (caller holds the sole reference to m). */
void gp_module_set(GPModule *m, int32_t i, GPFunctionExpr *fn);

/* ------------------------------------------------------------------------------------------ */
/* Parameter files in TVM's save_param_dict format (ir/params.c; layout in its header). */

typedef struct GPParams {
  int64_t n;
  char **names;       /* owned */
  GPTensor **tensors; /* owned references, compact, 64-byte aligned */
} GPParams;
/* Write n named tensors (with data, lanes 1) to f; `what` names the destination in errors.
 * GP_ERR_VALUE for a tensor without data, GP_ERR_IO for a write error. */
int gp_params_write(FILE *f, const char *what, int64_t n, const char *const *names, GPTensor *const *tensors);
int gp_params_save(const char *path, int64_t n, const char *const *names, GPTensor *const *tensors);
/* Read `size` bytes of f (the whole file); GP_ERR_PARSE "<what>: byte <offset>: <problem>"
 * for a file that is not one, is truncated or has trailing bytes.  *out is empty on error. */
int gp_params_read(FILE *f, uint64_t size, const char *what, GPParams *out);
int gp_params_load(const char *path, GPParams *out);
void gp_params_free(GPParams *p);
/* Print m as Relay text (gp_print `flags`) to text_path (NULL or "-": stdout); with params_path,
 * without the metadata section, and the constants with data go to params_path named
 * relay.Constant[<i>] (their meta index; constants without data stay typed placeholders). */
int gp_save_text_params(const GPModule *m, int32_t flags, const char *text_path, const char *params_path);
/* The parameters as a metadata table for gp_parse_meta: names must be relay.Constant[<i>]
 * (what `graphpass opt --params` writes); the table (gp_free it) borrows p's tensors; entry i
 * is NULL where no parameter has index i.  NULL + GP_ERR_VALUE naming a parameter otherwise. */
GPTensor **gp_params_meta_table(const GPParams *p, const char *what, int64_t *n_out);

/* ------------------------------------------------------------------------------------------ */
/* Text format (ir/parse.c, ir/print.c)                                                         */

/* Parse Relay text (TVM's print(mod) output, plus our #[metadata] section).  Errors:
 * GP_ERR_PARSE "<source>:<line>:<col>: error: <what>".  Unresolved meta[relay.Constant][i]
 * references become constants of the annotated type without data. */
GPModule *gp_parse(const char *text, size_t len, const char *source_name);
/* Parse one expression (for tests): free variables must be declared in `vars` (may be 0). */
GPExpr *gp_parse_expr(const char *text, size_t len, int32_t nvars, GPVar *const *vars);
char *gp_print(const GPModule *m, int32_t flags); /* gp_malloc'd */
/* gp_print that also lists the constants printed as meta[relay.Constant][i], in index order
 * (borrowed from m; NULL-free; those without data included) into *meta (caller frees the vec). */
char *gp_print_meta(const GPModule *m, int32_t flags, GPVec *meta);
/* gp_parse with a metadata table given beside the text (a parameter file read back):
 * meta[relay.Constant][i] resolves to meta[i] when i < nmeta and meta[i] != NULL (borrowed;
 * the constant retains it); the text's own #[metadata] entry for such an index is an error. */
GPModule *gp_parse_meta(const char *text, size_t len, const char *source_name, GPTensor *const *meta,
                        int64_t nmeta);
char *gp_print_expr(const GPExpr *e, int32_t flags);

/* ------------------------------------------------------------------------------------------ */
/* Structural equality and hashing (ir/equal.c): up to renaming of bound variables.
 * Free variables compare by pointer.  Constants compare by dtype, shape and bytes (two
 * constants without data compare by type).  checked_type is ignored. */

bool gp_expr_equal(const GPExpr *a, const GPExpr *b);
uint64_t gp_expr_hash(const GPExpr *e);
bool gp_module_equal(const GPModule *a, const GPModule *b); /* same names, same order */
uint64_t gp_module_hash(const GPModule *m);
/* When not equal, a one-line description of the first difference (gp_malloc'd), else NULL. */
char *gp_module_diff(const GPModule *a, const GPModule *b);

/* ------------------------------------------------------------------------------------------ */
/* Type inference (ir/infer.c) and the verifier (ir/verify.c)                                   */

/* New module where every expression has checked_type.  Errors GP_ERR_TYPE:
 * "<source>:<line>:<col>: error: in @fn: <op>: <what>". */
GPModule *gp_infer_types(const GPModule *m);
/* Type of an expression whose children are typed (used by passes that build new nodes). */
GPExpr *gp_infer_expr(GPExpr *e);
/* 0 when well formed; else -1 with GP_ERR_VERIFY naming the function and node.  Starts with
 * gp_module_check_shape. */
int gp_verify(const GPModule *m);
/* gp_verify of only the functions of m that are not (pointer-equal to) old's function of the
 * same name: what a pass made, when its input `old` was well formed.  old may be NULL (all). */
int gp_verify_new(const GPModule *m, const GPModule *old);
/* The module's own fields, in O(number of functions): a count within its capacity, every
 * global var and function present (non-NULL), a function expression, named uniquely.  0, or -1
 * with GP_ERR_VERIFY "verify: module: <what>". */
int gp_module_check_shape(const GPModule *m);

/* ------------------------------------------------------------------------------------------ */
/* The host table (plugin/host_api.c)                                                          */

const GPHostAPI *gp_host_api(void);

#endif /* GP_IR_H */
