/*
 * graphpass.h -- the stable C ABI of graphpass, version 1.0.
 *
 * This header is the whole contract between a host (the graphpass library, the `graphpass`
 * command, or any embedding compiler) and a plugin (a shared object that registers passes and
 * ops).  A third party builds a plugin or a host from this header and <dlpack/dlpack.h> alone.
 *
 * Rules that hold for every declaration below:
 *  - Versioning.  Every table and every args struct starts with `struct_size` (bytes, as compiled
 *    by the side that filled it) and `abi_version` (GP_ABI_VERSION as compiled).  Fields are only
 *    ever appended.  A reader accepts a larger struct, and checks GP_HAS_FIELD before reading a
 *    field that a newer minor version appended.  A host refuses a plugin whose major differs from
 *    its own or whose minor is below GP_ABI_MIN_MINOR.
 *  - Values cross as GPAny (16 bytes, laid out like tvm-ffi's TVMFFIAny, with its type indices
 *    for the kinds we share).  Unused bytes are zero.
 *  - Errors never unwind.  A call that fails returns -1 (or NULL) and leaves a kind and a message
 *    in the calling thread's error slot (GPHostAPI.error_*).  A call that succeeds leaves the
 *    slot alone.
 *  - Ownership.  "new reference" = the caller owns one reference and must release it.
 *    "borrowed" = valid while the caller keeps its own reference to the owner; never released.
 *    Constructors retain what they store; arguments passed to them stay owned by the caller.
 *  - Objects are immutable once built, except where a field says otherwise.  Reference counts
 *    are atomic, so objects may be shared between threads.
 */
#ifndef GRAPHPASS_H
#define GRAPHPASS_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* Versioning and export                                                                       */

#define GP_ABI_VERSION_MAJOR 1
#define GP_ABI_VERSION_MINOR 0
/* Oldest plugin minor this host accepts within the same major. */
#define GP_ABI_MIN_MINOR 0
#define GP_ABI_VERSION ((uint32_t)(GP_ABI_VERSION_MAJOR << 16 | GP_ABI_VERSION_MINOR))
#define GP_ABI_MAJOR_OF(v) ((uint32_t)(v) >> 16)
#define GP_ABI_MINOR_OF(v) ((uint32_t)(v)&0xffffu)

/* Size of a struct up to and including FIELD: what `struct_size` holds for that version. */
#define GP_STRUCT_SIZE(TYPE, FIELD) (offsetof(TYPE, FIELD) + sizeof(((TYPE *)0)->FIELD))
/* True when the struct PTR (with its struct_size) contains FIELD. */
#define GP_HAS_FIELD(PTR, TYPE, FIELD) ((PTR)->struct_size >= GP_STRUCT_SIZE(TYPE, FIELD))

#if defined(_WIN32)
#define GP_EXPORT __declspec(dllexport)
#else
#define GP_EXPORT __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------------------------------ */
/* Type indices (tvm-ffi's numbers below 128; ours from 128)                                   */

enum {
  /* POD values, stored inline in GPAny. */
  GP_TI_NONE = 0,
  GP_TI_INT = 1,         /* v_int64 */
  GP_TI_BOOL = 2,        /* v_int64 (0 or 1) */
  GP_TI_FLOAT = 3,       /* v_float64 */
  GP_TI_OPAQUE_PTR = 4,  /* v_ptr, not owned */
  GP_TI_DTYPE = 5,       /* v_dtype */
  GP_TI_DEVICE = 6,      /* v_device */
  GP_TI_DLTENSOR_PTR = 7,/* v_ptr: DLTensor*, borrowed */
  GP_TI_RAW_STR = 8,     /* v_c_str: NUL-terminated, borrowed */
  /* Objects (payload v_obj, GPObject*). */
  GP_TI_OBJECT = 64,
  GP_TI_STR = 65,        /* GPString */
  GP_TI_ERROR = 67,
  GP_TI_FUNCTION = 68,   /* GPPackedFunc */
  GP_TI_TENSOR = 70,     /* GPTensor */
  GP_TI_ARRAY = 71,      /* GPArray */
  /* graphpass objects: fixed numbers in tvm-ffi's dynamic range. */
  GP_TI_IR_BEGIN = 128,
  GP_TI_VAR = 128,
  GP_TI_GLOBAL_VAR = 129,
  GP_TI_CONSTANT = 130,
  GP_TI_CALL = 131,
  GP_TI_TUPLE = 132,
  GP_TI_TUPLE_GET_ITEM = 133,
  GP_TI_FUNCTION_EXPR = 134,
  GP_TI_LET = 135,
  GP_TI_IF = 136,
  GP_TI_OP = 137,
  GP_TI_IR_END = 138, /* one past the last expression kind */
  GP_TI_TYPE = 144,   /* GPType (interned, immortal) */
  GP_TI_ATTRS = 145,  /* GPAttrs */
  GP_TI_MODULE = 146, /* GPModule */
  GP_TI_PASS_CONTEXT = 147,
  GP_TI_DYNAMIC_BEGIN = 192 /* types a host or plugin registers at run time */
};

/* ------------------------------------------------------------------------------------------ */
/* Objects                                                                                     */

/* Reference count value of immortal objects (ops, types): retain and release do nothing. */
#define GP_REF_IMMORTAL 0xffffffffu

/* The header of every object.  `ref_count` is accessed only atomically (gp_retain /
 * gp_release below, or the table's functions); `deleter` is called once, by whoever drops the
 * last reference, and frees the object and releases what it holds. */
typedef struct GPObject {
  uint32_t ref_count;
  int32_t type_index;
  void (*deleter)(struct GPObject *self);
} GPObject;

static inline void *gp_retain(void *obj) {
  GPObject *o = (GPObject *)obj;
  if (o && __atomic_load_n(&o->ref_count, __ATOMIC_RELAXED) != GP_REF_IMMORTAL)
    __atomic_fetch_add(&o->ref_count, 1u, __ATOMIC_RELAXED);
  return obj;
}

static inline void gp_release(void *obj) {
  GPObject *o = (GPObject *)obj;
  if (!o || __atomic_load_n(&o->ref_count, __ATOMIC_RELAXED) == GP_REF_IMMORTAL) return;
  if (__atomic_fetch_sub(&o->ref_count, 1u, __ATOMIC_ACQ_REL) == 1u) o->deleter(o);
}

/* ------------------------------------------------------------------------------------------ */
/* Values                                                                                      */

typedef struct GPAny {
  int32_t type_index;
  uint32_t zero_padding;
  union {
    int64_t v_int64;
    double v_float64;
    void *v_ptr;
    const char *v_c_str;
    GPObject *v_obj;
    DLDataType v_dtype;
    DLDevice v_device;
  };
} GPAny;

#ifndef __cplusplus
_Static_assert(sizeof(GPAny) == 16, "GPAny must be 16 bytes");
_Static_assert(sizeof(GPObject) == 16, "GPObject must be 16 bytes");
#endif

/* A string object; `data` is NUL-terminated and owned by the object. */
typedef struct GPString {
  GPObject obj;
  size_t size;
  const char *data;
} GPString;

/* An array of values; the array owns the objects its items hold. */
typedef struct GPArray {
  GPObject obj;
  int64_t size;
  GPAny *items;
} GPArray;

/* A packed function: arguments borrowed; on success the callee has written an owned value to
 * *result (which the caller set to None before the call) and returns 0; on failure it returns
 * -1 with the thread's error set. */
typedef int (*GPPackedCFunc)(void *self, const GPAny *args, int32_t nargs, GPAny *result);

typedef struct GPPackedFunc {
  GPObject obj;
  void *self;                       /* owned; freed by self_deleter (may be NULL) */
  GPPackedCFunc call;
  void (*self_deleter)(void *self);
} GPPackedFunc;

/* ------------------------------------------------------------------------------------------ */
/* Errors                                                                                      */

typedef enum {
  GP_OK = 0,
  GP_ERR_VALUE = 1,     /* a bad argument or config value */
  GP_ERR_TYPE = 2,      /* a type error in the IR */
  GP_ERR_PARSE = 3,     /* text or file syntax */
  GP_ERR_NOT_FOUND = 4, /* no such pass, op, function, key */
  GP_ERR_PASS = 5,      /* a pass failed (the message names it) */
  GP_ERR_VERSION = 6,   /* ABI version mismatch */
  GP_ERR_IO = 7,        /* file or dlopen */
  GP_ERR_VERIFY = 8,    /* the well-formedness verifier rejected a module */
  GP_ERR_MEMORY = 9,
  GP_ERR_INTERNAL = 10,
  GP_ERR_UNSUPPORTED = 11
} GPErrorKind;

/* ------------------------------------------------------------------------------------------ */
/* Tensors (DLPack)                                                                            */

/* A tensor object.  `dl` is a view of the data; `managed` (may be NULL) is the producer's
 * DLManagedTensor whose deleter runs exactly once, when the object is freed.  `dl.data` is NULL
 * for a tensor of known type without values (a constant printed as meta[...] by TVM).  The
 * shape and strides arrays are owned by the object.  Data is read-only once the tensor is
 * shared (ref_count > 1). */
typedef struct GPTensor {
  GPObject obj;
  DLTensor dl;
  DLManagedTensor *managed;
} GPTensor;

/* ------------------------------------------------------------------------------------------ */
/* IR: types (interned: equal types are the same pointer; immortal)                            */

typedef enum { GP_TYPE_TENSOR = 0, GP_TYPE_TUPLE = 1, GP_TYPE_FUNC = 2 } GPTypeKind;

/* A dimension that is unknown (printed `?`, TVM's Any). */
#define GP_DIM_ANY ((int64_t)-1)

typedef struct GPType {
  GPObject obj;          /* immortal */
  int32_t kind;          /* GPTypeKind */
  int32_t n;             /* tensor: ndim; tuple: fields; func: params */
  union {
    struct { DLDataType dtype; const int64_t *shape; } tensor;
    struct { const struct GPType *const *fields; } tuple;
    struct { const struct GPType *const *params; const struct GPType *ret; } func;
  };
} GPType;

/* ------------------------------------------------------------------------------------------ */
/* IR: attributes                                                                              */

typedef enum {
  GP_ATTR_NONE = 0,   /* absent / null */
  GP_ATTR_INT = 1,    /* i */
  GP_ATTR_FLOAT = 2,  /* f */
  GP_ATTR_BOOL = 3,   /* i (0 or 1) */
  GP_ATTR_STR = 4,    /* s */
  GP_ATTR_DTYPE = 5,  /* dtype; bits == 0 means "void" (unset, e.g. out_dtype="") */
  GP_ATTR_INTS = 6,   /* ints[n] (printed [1, 2]) */
  GP_ATTR_FLOATS = 7  /* floats[n] */
} GPAttrKind;

typedef struct GPAttrValue {
  int32_t kind; /* GPAttrKind */
  int32_t n;    /* element count of INTS / FLOATS */
  union {
    int64_t i;
    double f;
    const char *s;
    DLDataType dtype;
    const int64_t *ints;
    const double *floats;
  };
} GPAttrValue;

/* An attribute set: ordered keys and values, owned by the object.  For an op call the keys are
 * the op's schema fields in schema order, all present (defaults filled in); for a function they
 * are whatever was given (e.g. Primitive=1). */
typedef struct GPAttrs {
  GPObject obj;
  int32_t n;
  const char *const *keys;
  const GPAttrValue *values;
} GPAttrs;

/* ------------------------------------------------------------------------------------------ */
/* IR: expressions.  Read the fields directly; build only through GPHostAPI constructors.      */

typedef struct GPExpr {
  GPObject obj;               /* type_index is one of GP_TI_VAR .. GP_TI_OP */
  const GPType *checked_type; /* NULL until type inference has run; interned */
  uint32_t line, col;         /* source location (1-based), 0 when unknown */
} GPExpr;

typedef struct GPVar {
  GPExpr base;
  const char *name;              /* name hint, owned; identity is the pointer, not the name */
  const GPType *type_annotation; /* may be NULL */
} GPVar;

typedef struct GPGlobalVar {
  GPExpr base;
  const char *name; /* owned */
} GPGlobalVar;

typedef struct GPConstant {
  GPExpr base;
  GPTensor *data; /* owned reference */
} GPConstant;

/* Op patterns (TVM's TOpPattern). */
enum {
  GP_PATTERN_ELEMWISE = 0,
  GP_PATTERN_BROADCAST = 1,
  GP_PATTERN_INJECTIVE = 2,
  GP_PATTERN_COMM_REDUCE = 3,
  GP_PATTERN_OUT_ELEMWISE_FUSABLE = 4,
  GP_PATTERN_TUPLE = 7,
  GP_PATTERN_OPAQUE = 8
};

/* Op flags. */
enum {
  GP_OP_NON_COMPUTATIONAL = 1u << 0,
  GP_OP_STATEFUL = 1u << 1,
  GP_OP_RESHAPE_ONLY = 1u << 2
};

typedef struct GPOp GPOp;
typedef struct GPOpDef GPOpDef;

/* The type relation of an op: given the argument types (all known) and the call's attrs, store
 * the output type in *out (interned) and return 0; or return -1 after error_set() with a
 * message that names the offending argument or attribute (the host prefixes location and op). */
typedef int (*GPTypeRelFn)(const GPOp *op, const GPAttrs *attrs, const GPType *const *arg_types,
                           int32_t nargs, const GPType **out, void *user);

/* An attribute field of an op's schema. */
typedef struct GPAttrField {
  const char *name;
  int32_t kind;             /* GPAttrKind */
  int32_t required;         /* 1: no default; the call must give it */
  GPAttrValue default_value;
  const char *help;
} GPAttrField;

/* The definition of an op, passed to GPHostAPI.op_register (which copies what it needs). */
struct GPOpDef {
  size_t struct_size;
  uint32_t abi_version;
  const char *name;        /* Relay's name, e.g. "nn.conv2d" */
  int32_t num_inputs;      /* -1: any number */
  int32_t pattern;         /* GP_PATTERN_* */
  uint32_t flags;          /* GP_OP_* */
  const GPAttrField *attrs;
  int32_t num_attrs;
  GPTypeRelFn type_rel;
  void *type_rel_user;
  const char *help;
};

/* A registered op (immortal).  `def` is the host's copy of the definition. */
struct GPOp {
  GPExpr base;
  const char *name;
  int32_t num_inputs;
  int32_t pattern;
  uint32_t flags;
  int32_t num_attrs;
  const GPAttrField *attrs;
  GPTypeRelFn type_rel;
  void *type_rel_user;
  const char *help;
  int32_t index; /* dense index in the op registry, stable for the process */
};

typedef struct GPCall {
  GPExpr base;
  GPExpr *op;      /* an GPOp, GPGlobalVar, GPFunctionExpr or GPVar; owned reference */
  GPAttrs *attrs;  /* owned reference; NULL when the op has no attrs or the callee is not an op */
  int32_t nargs;
  int32_t reserved;
  GPExpr *args[];  /* owned references */
} GPCall;

typedef struct GPTuple {
  GPExpr base;
  int32_t n;
  int32_t reserved;
  GPExpr *fields[]; /* owned references */
} GPTuple;

typedef struct GPTupleGetItem {
  GPExpr base;
  GPExpr *tuple; /* owned */
  int32_t index;
  int32_t reserved;
} GPTupleGetItem;

typedef struct GPFunctionExpr {
  GPExpr base;
  int32_t nparams;
  int32_t reserved;
  GPVar **params;        /* owned array of owned references */
  GPExpr *body;          /* owned */
  const GPType *ret_type;/* annotation; may be NULL */
  GPAttrs *attrs;        /* owned; may be NULL (e.g. Primitive=1) */
} GPFunctionExpr;

typedef struct GPLet {
  GPExpr base;
  GPVar *var;    /* owned */
  GPExpr *value; /* owned */
  GPExpr *body;  /* owned */
} GPLet;

typedef struct GPIf {
  GPExpr base;
  GPExpr *cond, *then_branch, *else_branch; /* owned */
} GPIf;

/* The children of an expression, in a fixed order that every walker shares:
 * call: op, then args; tuple: fields; get-item: tuple; function: params, then body;
 * let: var, value, body; if: cond, then, else; var, global var, constant, op: none.
 * Inline so hosts and plugins read the public layout through one definition. */
static inline int32_t gp_expr_num_children(const GPExpr *e) {
  switch (e->obj.type_index) {
  case GP_TI_CALL: return 1 + ((const GPCall *)e)->nargs;
  case GP_TI_TUPLE: return ((const GPTuple *)e)->n;
  case GP_TI_TUPLE_GET_ITEM: return 1;
  case GP_TI_FUNCTION_EXPR: return ((const GPFunctionExpr *)e)->nparams + 1;
  case GP_TI_LET:
  case GP_TI_IF: return 3;
  default: return 0;
  }
}

/* Child i (0 <= i < gp_expr_num_children(e)), borrowed. */
static inline GPExpr *gp_expr_child_at(const GPExpr *e, int32_t i) {
  switch (e->obj.type_index) {
  case GP_TI_CALL: return i == 0 ? ((const GPCall *)e)->op : ((const GPCall *)e)->args[i - 1];
  case GP_TI_TUPLE: return ((const GPTuple *)e)->fields[i];
  case GP_TI_TUPLE_GET_ITEM: return ((const GPTupleGetItem *)e)->tuple;
  case GP_TI_FUNCTION_EXPR: {
    const GPFunctionExpr *f = (const GPFunctionExpr *)e;
    return i < f->nparams ? (GPExpr *)f->params[i] : f->body;
  }
  case GP_TI_LET: {
    const GPLet *l = (const GPLet *)e;
    return i == 0 ? (GPExpr *)l->var : i == 1 ? l->value : l->body;
  }
  case GP_TI_IF: {
    const GPIf *f = (const GPIf *)e;
    return i == 0 ? f->cond : i == 1 ? f->then_branch : f->else_branch;
  }
  default: return NULL;
  }
}

/* Non-zero when child i of e binds a name (a let's var, a function's params), not a use. */
static inline int gp_expr_is_binding(const GPExpr *e, int32_t i) {
  if (e->obj.type_index == GP_TI_LET) return i == 0;
  if (e->obj.type_index == GP_TI_FUNCTION_EXPR) return i < ((const GPFunctionExpr *)e)->nparams;
  return 0;
}

/* A module: global functions in definition order.  Immutable once shared. */
typedef struct GPModule {
  GPObject obj;
  int32_t num_functions;
  int32_t capacity;
  GPGlobalVar **gvars;     /* owned references; names unique */
  GPFunctionExpr **funcs;  /* owned references; funcs[i] is the definition of gvars[i] */
  const char *source_name; /* owned; file the module was read from, or NULL */
} GPModule;

/* ------------------------------------------------------------------------------------------ */
/* Passes                                                                                      */

typedef enum {
  GP_PASS_TRANSFORM = 0, /* rewrites the graph */
  GP_PASS_ANALYSIS = 1,  /* only annotates (types, attributes) */
  GP_PASS_DEBUG = 2      /* prints or checks; returns its input */
} GPPassKind;

/* A configuration key a pass reads.  The full key is "<pass name>.<name>" unless `name`
 * already contains a dot. */
typedef struct GPConfigKey {
  const char *name;
  int32_t type_index;   /* GP_TI_INT, GP_TI_BOOL, GP_TI_FLOAT or GP_TI_RAW_STR */
  GPAny default_value;
  const char *help;
} GPConfigKey;

typedef struct GPPassContext GPPassContext; /* opaque; read through GPHostAPI.ctx_* */

/* A pass descriptor, given to GPHostAPI.pass_register.  The registry copies every string and
 * array; the descriptor may be freed after the call.  `func` is called with args
 * [GPModule* (borrowed), GPPassContext* (opaque ptr)] and must return a new module reference
 * in result (it may return its input, retained, when nothing changed).  It never mutates its
 * input. */
typedef struct GPPassInfo {
  size_t struct_size;
  uint32_t abi_version;
  const char *name;
  int32_t opt_level;
  int32_t kind;                            /* GPPassKind */
  const char *const *required;             /* passes that must run before this one */
  int32_t num_required;
  const char *const *targets;              /* runs only for these targets; none = all */
  int32_t num_targets;
  const char *const *excluded_targets;     /* never runs for these */
  int32_t num_excluded_targets;
  const GPConfigKey *config_keys;
  int32_t num_config_keys;
  GPPackedCFunc func;
  void *self;                              /* owned by the registry after success */
  void (*self_deleter)(void *self);        /* called when the pass is unregistered */
  const char *help;
} GPPassInfo;

/* ------------------------------------------------------------------------------------------ */
/* Traversal helpers                                                                           */

/* Called by GPHostAPI.rewrite once per distinct node, children first (a let's value before its
 * var).  A var in a binding position whose replacement is not a var keeps its binding
 * occurrence, so a callback may replace the uses of a name by its value and drop the let.  `orig` is the node in the
 * input; `rebuilt` is the same node with its children replaced by their rewrites (it is `orig`
 * itself when no child changed).  Return a new reference to the replacement (return
 * gp_retain(rebuilt) to keep it), or NULL after error_set() to abort. */
typedef GPExpr *(*GPRewriteFn)(void *user, GPExpr *orig, GPExpr *rebuilt);

/* ------------------------------------------------------------------------------------------ */
/* The host table                                                                              */

typedef struct GPHostAPI GPHostAPI;
struct GPHostAPI {
  size_t struct_size;
  uint32_t abi_version;

  /* Errors (thread-local).  error_set formats like printf. */
  void (*error_set)(int32_t kind, const char *fmt, ...);
  int32_t (*error_kind)(void);          /* GP_OK when no error is pending */
  const char *(*error_message)(void);   /* borrowed; valid until the next error call */
  void (*error_clear)(void);

  /* Memory: what the host returns as a plain buffer is freed with `free`. */
  void *(*alloc)(size_t size);
  void (*free)(void *ptr);

  /* Values */
  GPString *(*string_new)(const char *data, size_t size);              /* new reference */
  GPPackedFunc *(*func_new)(void *self, GPPackedCFunc call, void (*self_deleter)(void *));
  void (*any_clear)(GPAny *value);  /* releases an object payload and sets None */

  /* Types (interned; immortal; NULL + error on bad input) */
  const GPType *(*type_tensor)(DLDataType dtype, int32_t ndim, const int64_t *shape);
  const GPType *(*type_tuple)(int32_t n, const GPType *const *fields);
  const GPType *(*type_func)(int32_t nparams, const GPType *const *params, const GPType *ret);

  /* Tensors */
  GPTensor *(*tensor_from_dlpack)(DLManagedTensor *managed); /* takes ownership, even on error */
  GPTensor *(*tensor_alloc)(DLDataType dtype, int32_t ndim, const int64_t *shape, int with_data);

  /* Attributes.  attrs_new: a free-form set (function attrs).  op_attrs_new: the op's schema,
   * defaults filled in, kinds checked; keys not in the schema are an error listing the valid
   * ones. */
  GPAttrs *(*attrs_new)(int32_t n, const char *const *keys, const GPAttrValue *values);
  GPAttrs *(*op_attrs_new)(const GPOp *op, int32_t n, const char *const *keys,
                           const GPAttrValue *values);
  const GPAttrValue *(*attrs_get)(const GPAttrs *attrs, const char *key); /* NULL if absent */

  /* Ops */
  const GPOp *(*op_get)(const char *name);                   /* NULL + error if unknown */
  const GPOp *(*op_register)(const GPOpDef *def, int allow_override);

  /* Expressions: new references, NULL + error on bad input.  Arguments are borrowed. */
  GPVar *(*var_new)(const char *name, const GPType *annotation);
  GPGlobalVar *(*global_var_new)(const char *name);
  GPConstant *(*constant_new)(GPTensor *data);
  GPCall *(*call_new)(GPExpr *op, int32_t nargs, GPExpr *const *args, GPAttrs *attrs);
  GPTuple *(*tuple_new)(int32_t n, GPExpr *const *fields);
  GPTupleGetItem *(*tuple_get_item_new)(GPExpr *tuple, int32_t index);
  GPFunctionExpr *(*function_new)(int32_t nparams, GPVar *const *params, GPExpr *body,
                                  const GPType *ret_type, GPAttrs *attrs);
  GPLet *(*let_new)(GPVar *var, GPExpr *value, GPExpr *body);
  GPIf *(*if_new)(GPExpr *cond, GPExpr *then_branch, GPExpr *else_branch);
  /* A copy of a node (same children) with checked_type and location set.  Returns `e`
   * retained when nothing would change. */
  GPExpr *(*expr_annotate)(GPExpr *e, const GPType *checked_type, uint32_t line, uint32_t col);

  /* Traversal.  post_order: every distinct node reachable from root, children before parents,
   * in a host-allocated array (free with `free`).  rewrite: see GPRewriteFn.  Neither recurses
   * on depth. */
  int (*post_order)(GPExpr *root, GPExpr ***out_nodes, size_t *out_count);
  GPExpr *(*rewrite)(GPExpr *root, GPRewriteFn fn, void *user);

  /* Modules.  module_new returns an empty module owned by the caller; module_add may be used
   * only while the caller holds the sole reference. */
  GPModule *(*module_new)(const char *source_name);
  int (*module_add)(GPModule *mod, const char *name, GPFunctionExpr *fn, int allow_override);
  GPFunctionExpr *(*module_lookup)(const GPModule *mod, const char *name); /* borrowed */
  GPModule *(*module_copy)(const GPModule *mod); /* shallow: shares functions; new reference */

  /* Services over modules */
  GPModule *(*infer_types)(const GPModule *mod);  /* new module, every expr typed */
  int (*verify)(const GPModule *mod);             /* 0 well formed, -1 + error naming the node */
  GPModule *(*parse)(const char *text, size_t len, const char *source_name);
  char *(*print)(const GPModule *mod, int32_t flags); /* free with `free` */
  int (*structural_equal)(const GPModule *a, const GPModule *b);
  uint64_t (*structural_hash)(const GPModule *mod);

  /* Passes and pipelines */
  int (*pass_register)(const GPPassInfo *info, int allow_override);
  int (*pass_unregister)(const char *name);
  /* Register (or replace) the named optimization set `set` of `target`: a pipeline string. */
  int (*opt_set_register)(const char *target, const char *set, const char *pipeline);

  /* Pass contexts (opaque; owned by whoever created them) */
  GPPassContext *(*ctx_new)(void);
  void (*ctx_free)(GPPassContext *ctx);
  int32_t (*ctx_opt_level)(const GPPassContext *ctx);
  const char *(*ctx_target)(const GPPassContext *ctx);
  int (*ctx_set_opt_level)(GPPassContext *ctx, int32_t level);
  int (*ctx_set_target)(GPPassContext *ctx, const char *target);
  int (*ctx_set_config)(GPPassContext *ctx, const char *key, const char *value); /* parsed */
  int (*ctx_get_config)(const GPPassContext *ctx, const char *key, GPAny *out);  /* borrowed */
  int (*ctx_disable)(GPPassContext *ctx, const char *pass_name);
  int (*ctx_require)(GPPassContext *ctx, const char *pass_name);

  /* Run a pipeline string (NULL: the target's default set) on `mod`; a new module on success,
   * NULL + error (GP_ERR_PASS naming the pass) on failure; `mod` is never changed. */
  GPModule *(*run_pipeline)(const GPModule *mod, const char *pipeline, GPPassContext *ctx);

  /* Plugins: load a shared object by path (checks versions, calls its initialize; the passes it
   * registers record the plugin's name as their origin).  Loading a file that is already loaded
   * (same real path) is a no-op success; another file with an already loaded name is an error. */
  int (*plugin_load)(const char *path);

  /* C interop through libffi.  A signature is "<ret>(<param>,...)" with at most 16 params and
   * the codes v (void; return only), b (C bool), i32, i64, u32, u64, f32, f64, p (void *),
   * s (const char *), o (GPObject *); e.g. "i64(i32,f64,p,s,o)".  A malformed signature is
   * GP_ERR_VALUE naming its column.
   *
   * ffi_wrap: a packed function (new reference) that converts its GPAny arguments (count and
   * type checked: GP_ERR_VALUE / GP_ERR_TYPE naming the argument) and calls `fnptr`, which must
   * stay valid (its shared object loaded) while the packed function lives.  'o' arguments are
   * borrowed by the C function; an 'o' return must be a new reference (the result owns it); an
   * 's' return is copied into a GPString; 'p' returns an opaque pointer (NULL becomes None).
   * Only 'o', 'p' and 's' returns can report failure: NULL with the thread's error set.
   *
   * ffi_closure: a C function pointer with that signature which packs its arguments into GPAny
   * (NULL p/s/o become None), calls `f` and converts the result back.  On failure the function
   * returns zero/NULL and leaves the error in the thread's slot (callers check error_kind).  An
   * 'o' result is returned as a new reference; an 's' result stays valid until the next call of
   * the same closure or its release.  `f` is retained (the caller keeps its own reference).
   * *out_handle receives the owner of the code; the pointer is valid until
   * ffi_closure_free(handle).  NULL + error on failure. */
  GPPackedFunc *(*ffi_wrap)(void *fnptr, const char *signature);
  void *(*ffi_closure)(GPPackedFunc *f, const char *signature, void **out_handle);
  void (*ffi_closure_free)(void *handle); /* NULL is a no-op; releases f */
};

/* Print flags. */
enum {
  GP_PRINT_TYPES = 1 << 0,     /* print the `ty=...` type comments */
  GP_PRINT_METADATA = 1 << 1   /* append the constants' values (metadata section) */
};

/* ------------------------------------------------------------------------------------------ */
/* The plugin table                                                                            */

/* The one symbol a plugin exports. */
#define GP_PLUGIN_ENTRY_SYMBOL "graphpass_plugin_entry"

typedef struct GPPluginAPI {
  size_t struct_size;
  uint32_t abi_version;     /* GP_ABI_VERSION the plugin was compiled with */
  const char *name;         /* static */
  const char *version;      /* the plugin's own version string, static */
  /* Called once after the version check with the host's table, which stays valid until
   * finalize returns.  Registers passes, ops and optimization sets.  0 on success. */
  int (*initialize)(const GPHostAPI *host);
  /* Called once before the plugin is unloaded (may be NULL). */
  void (*finalize)(void);
} GPPluginAPI;

typedef const GPPluginAPI *(*GPPluginEntryFn)(void);

/* The host library's one exported entry: its table (process lifetime, not owned). */
GP_EXPORT const GPHostAPI *graphpass_host_api(void);

#ifdef __cplusplus
}
#endif
#endif /* GRAPHPASS_H */
