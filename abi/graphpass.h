/*
 * graphpass.h -- the stable C ABI of graphpass, version 1.6.
 *
 * History: 1.0 first release; 1.1 appended op kernels (GPOpDef/GPOp.kernel, GPKernelArgs) and
 * evaluation (GPHostAPI.op_set_kernel .. tensor_to_dlpack); 1.2 appended patterns (GPPattern,
 * GPMatch, GPRewriteSpec, GPPatternTable; GPHostAPI.pattern_compile .. pattern_table_get) and
 * targets and kernels (GPPassInfo.kernels/num_kernels, GPTargetInfo, GPHostAPI.target_register
 * .. target_list) and plugin lifecycle (GPHostAPI.plugin_unload) and optimization sets
 * (GPHostAPI.opt_set_get, opt_set_list, ctx_set_opt_set); 1.3 appended instruments
 * (GPPassEvent, GPRunEvent, GPInstrument; GPHostAPI.ctx_instrument_register,
 * ctx_instrument_unregister), plugins_load_default and pass_register_packed, and queries and
 * ONNX import for hosts without the command (GPHostAPI.pass_list, onnx_import, object_retain,
 * object_release; GPOnnxImportOptions), pass output checks (ctx_set_check_immutable),
 * GPHostAPI.tensor_drop_pages (memory of constants that view a mapped file), plugin
 * dependencies (GPHostAPI.plugin_require) and external codegen (GPEvalOptions.external ..
 * observe_user: graphpass.ext.<Compiler>.run and value observers; GPHostAPI.tensor_read,
 * eval_random_inputs); 1.4 appended subtree facts (GPHostAPI.expr_may_call, expr_has_kind,
 * op_list_with_attr) and node indexes for passes (GPExprIndex, GPRewriteIdFn;
 * GPHostAPI.expr_index_new, expr_index_free, rewrite_indexed); 1.5 appended rewrites that keep
 * a node without a reference (GPHostAPI.rewrite_keep); 1.6 appended the deterministic inputs of
 * a function with `?` dims (GPHostAPI.eval_random_inputs_filled) and a subtree fact for
 * constant folding (GPHostAPI.expr_has_constant_call), and a pattern table entry's check and a
 * `target.<T>` op predicate (AnnotateTarget) may refuse with a reason (a string; GPPatternEntry).
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
#define GP_ABI_VERSION_MINOR 6
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
  GP_TI_PATTERN = 148,       /* GPPattern (since 1.2) */
  GP_TI_PATTERN_TABLE = 149, /* GPPatternTable (since 1.2) */
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
  /* shape, fields and params hold n entries and are never NULL (n == 0: no entries to read). */
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
 * are whatever was given (e.g. Primitive=1).  Immutable and shared: attrs_new returns one object
 * for equal sets (same keys in the same order, bit-equal values), so many calls may hold the same
 * one; never write through it. */
typedef struct GPAttrs {
  GPObject obj;
  int32_t n;
  const char *const *keys;
  const GPAttrValue *values;
} GPAttrs;

/* ------------------------------------------------------------------------------------------ */
/* IR: expressions.  Read the fields directly; build only through GPHostAPI constructors.      */
/* (Since 1.4 the host keeps facts about each expression's subtree just before its header, so an
 * expression is never allocated, copied or freed by a plugin: only the constructors make one.)  */

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

/* Arguments of an op kernel (since 1.1).  The evaluator fills it; a kernel reads it.
 *  - inputs: borrowed CPU tensors, valid for the call.  They may be strided (non-compact) and
 *    have a byte_offset; a kernel honours both, never writes them and never reads outside the
 *    elements their shape and strides address.  A tuple-typed argument (e.g. concatenate's) is
 *    flattened: its fields are consecutive inputs.
 *  - outputs: allocated by the evaluator before the call: compact row-major (strides NULL),
 *    64-byte aligned, zero-filled, with the shape and dtype that the op's type relation gives
 *    for these inputs.  One output, or one per field of a tuple-typed result.  The kernel writes
 *    every element.
 *  - Returns 0, or -1 after error_set() naming what it cannot compute (a dtype, an attribute
 *    value).  The evaluator prefixes the op name and the node. */
typedef struct GPKernelArgs {
  size_t struct_size;
  uint32_t abi_version;
  int32_t num_threads;            /* threads the kernel may use (>= 1) */
  const GPOp *op;
  const GPAttrs *attrs;           /* the call's attrs (NULL when the op has none); borrowed */
  int32_t num_inputs;
  int32_t num_outputs;
  const DLTensor *const *inputs;
  DLTensor *const *outputs;
} GPKernelArgs;

typedef int (*GPOpKernelFn)(const GPKernelArgs *args, void *user);

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
  /* Since 1.1.  The reference kernel the evaluator (and FoldConstant) runs; NULL: the op cannot
   * be evaluated until one is set with GPHostAPI.op_set_kernel. */
  GPOpKernelFn kernel;
  void *kernel_user;
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
  int32_t reserved;
  /* Since 1.1: the current kernel (see GPOpDef.kernel); read with atomic loads or through
   * the evaluator, since op_set_kernel may replace it. */
  GPOpKernelFn kernel;
  void *kernel_user;
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
 * input.
 *
 * Which targets a pass runs for (Paddle Lite's BindTargets / ExcludeTargets / BindKernel), all
 * checked against the context's target before the pass is planned, and reported by --explain
 * as "explain: <Pass>: skipped (<reason>)":
 *  - targets: when non-empty, only these ("target cuda not in [llvm, c]");
 *  - excluded_targets: never these, even when also listed in targets ("target llvm excluded");
 *  - kernels (since 1.2): only targets that have every one of these kernels (see
 *    GPTargetInfo; "target 'llvm' has no kernel 'fc'"); a target that is not registered has
 *    none.  A pass that rewrites into composites or ops a target may lack names them here.
 * A pass skipped this way that another pass requires does not stop the dependent. */
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
  /* Since 1.2 (read only when GP_HAS_FIELD(info, GPPassInfo, num_kernels); an older plugin's
   * pass binds to no kernel).  The kernels the pass binds to: op names ("nn.conv2d") or
   * composite names ("fc", "conv2d_relu"), each [A-Za-z0-9_.-]+. */
  const char *const *kernels;
  int32_t num_kernels;
} GPPassInfo;

/* A target (since 1.2), given to GPHostAPI.target_register: a registry entry naming what the
 * target can run.  The registry copies every string and array.  Its optimization sets stay
 * where opt_set_register puts them and are listed with the target (`graphpass targets`). */
typedef struct GPTargetInfo {
  size_t struct_size;
  uint32_t abi_version;
  const char *name;              /* [A-Za-z0-9_.-]+, e.g. "llvm" */
  const char *help;              /* one line; may be NULL */
  const char *const *kernels;    /* the ops ("nn.conv2d") and composites ("fc") it has kernels
                                  * for, each [A-Za-z0-9_.-]+, none twice */
  int32_t num_kernels;
  uint32_t flags;                /* GP_TARGET_* */
} GPTargetInfo;

/* Target flags. */
enum {
  /* The target has a kernel for every registered op (now or later), e.g. the reference
   * evaluator's "llvm"; composites are still listed in `kernels`. */
  GP_TARGET_ALL_OPS = 1u << 0
};

/* ------------------------------------------------------------------------------------------ */
/* Patterns (since 1.2): TVM's DFPattern and Paddle Lite's pattern matcher as text             */

/* A pattern is text in Relay's own call syntax, compiled once (GPHostAPI.pattern_compile) and
 * matched many times:
 *
 *   pattern := alt
 *   alt     := postfix { '|' postfix }            alternatives, tried left to right; the first
 *                                                 that matches is kept (no retry later)
 *   postfix := primary { '.' INT } [ ':' type ]   get-item; a type condition on the node
 *   primary := '_'                                any expression
 *            | 'const' | 'var'                    a constant / a variable
 *            | '%' NAME [ '=' primary ]           a named capture: alone, any expression; with
 *                                                 '=', the node the primary matches.  The same
 *                                                 name twice must be the same node
 *            | OP '(' [ alt { ',' alt } ] ')' [ '{' key '=' value { ',' key '=' value } '}' ]
 *                                                 a call of a registered op with exactly these
 *                                                 arguments; each listed attribute must equal
 *                                                 value (Relay text syntax: 1, 1.5f, "NCHW",
 *                                                 True, [1, 1], "float32" for a dtype)
 *            | OP '?' '(' alt { ',' alt } ')'     an optional op: the call of OP whose first
 *                                                 argument matches the first (inner) pattern and
 *                                                 whose other arguments the others, if the node
 *                                                 is one; else the inner pattern itself:
 *                                                 nn.relu?(p), nn.bias_add?(p, _)
 *            | '(' alt ',' [ alt { ',' alt } ] ')'  a tuple of exactly these fields
 *            | '(' alt ')'                        grouping
 *   type    := 'Tensor' '[' '(' [ dim { ',' dim } ] ')' ',' DTYPE ']'  dim: INT or '?' (any)
 *
 * '#' starts a comment to the end of the line.  A type condition needs the node's
 * checked_type (run type inference first); an untyped node fails it.  Errors are GP_ERR_PARSE
 * "<source>:<line>:<col>: error: <what>" (an unknown op, an attribute the op does not have, a
 * value of the wrong kind, nesting deeper than 256).
 *
 * Cost: matching at one node visits each pattern node at most once per expression it is
 * tried against; optional ops and alternatives without captures below them remember their
 * failures, so the cost per node depends on the pattern alone, never on the graph. */
typedef struct GPPattern {
  GPObject obj;                      /* type_index GP_TI_PATTERN; immutable; thread-safe */
  const char *text;                  /* the source text, owned */
  int32_t num_captures;
  int32_t reserved;
  const char *const *capture_names;  /* in order of first appearance, without '%'; owned */
  /* host-private data follows */
} GPPattern;

/* One match of a pattern, filled by the host (read-only for the callee; valid during the call
 * that hands it out, or until freed for pattern_match).  Nodes are borrowed.
 *  - root: the node the pattern matched at.
 *  - nodes: the matched interior, in pattern pre-order (root first): calls, tuples, get-items,
 *    and constants matched by `const` (which a composite embeds rather than takes as input).
 *  - inputs: the distinct nodes matched by `_`, `var` and `%name` leaves, in the order the
 *    pattern meets them left to right (TVM's order of a composite's parameters).
 *  - captures: the node of each of the pattern's capture_names, NULL for a capture inside an
 *    alternative that did not match. */
typedef struct GPMatch {
  size_t struct_size;
  uint32_t abi_version;
  int32_t pattern_index;  /* index into GPRewriteSpec.patterns (0 for pattern_match) */
  const GPPattern *pattern;
  GPExpr *root;
  int32_t num_nodes;
  int32_t num_inputs;
  GPExpr *const *nodes;
  GPExpr *const *inputs;
  int32_t num_captures;
  int32_t reserved;
  GPExpr *const *captures;
} GPMatch;

/* Decide on a match during selection (nodes of the input graph, typed as given): 1 accept,
 * 0 decline (the match claims nothing), -1 abort with the thread's error set.  The answer must
 * follow from the match alone: after a round that rewrote, the host may also ask about matches
 * near the replacements in the round's result, to learn whether it is a fixed point (see
 * pattern_rewrite). */
typedef int (*GPMatchCheckFn)(void *user, const GPMatch *m);
/* Build the replacement of an accepted match: a new reference (e.g. made with call_new from
 * m->inputs), gp_retain(m->root) to keep it, or NULL + error to abort.  Every node of m is a
 * node of the rewritten graph: the input's node with its children replaced by their rewrites,
 * so an input that was itself the root of an earlier match is that match's replacement. */
typedef GPExpr *(*GPMatchRewriteFn)(void *user, const GPMatch *m);

/* What GPHostAPI.pattern_rewrite does (caller-owned; read during the call only). */
typedef struct GPRewriteSpec {
  size_t struct_size;
  uint32_t abi_version;
  int32_t num_patterns;
  int32_t reserved;
  const GPPattern *const *patterns; /* borrowed; pattern 0 claims its matches first */
  GPMatchCheckFn check;             /* may be NULL: accept every match */
  GPMatchRewriteFn rewrite;
  void *user;
  int64_t num_rewritten;            /* out: matches rewritten */
} GPRewriteSpec;

/* A named, ordered list of patterns (TVM's MergeComposite table).  Immutable; entries owned. */
typedef struct GPPatternEntry {
  const char *name;       /* e.g. "dnnl.conv2d_relu": the Composite attribute it gives */
  GPPattern *pattern;
  GPPackedFunc *check;    /* may be NULL; called with [root (GPExpr*, the match's root in the
                           * input graph)], returns a bool (or an int: non-zero accepts), or,
                           * from a 1.6 host, a string: a decline, and why (MergeComposite's
                           * --explain note lists the declined matches with their reasons) */
} GPPatternEntry;

typedef struct GPPatternTable {
  GPObject obj; /* type_index GP_TI_PATTERN_TABLE */
  int32_t n;
  int32_t reserved;
  const GPPatternEntry *entries;
  const char *source_name; /* owned; the file it was read from, or NULL */
} GPPatternTable;

/* ------------------------------------------------------------------------------------------ */
/* Traversal helpers                                                                           */

/* Called by GPHostAPI.rewrite once per distinct node, children first (a let's value before its
 * var).  A var in a binding position whose replacement is not a var keeps its binding
 * occurrence, so a callback may replace the uses of a name by its value and drop the let.  `orig` is the node in the
 * input; `rebuilt` is the same node with its children replaced by their rewrites (it is `orig`
 * itself when no child changed).  Return a new reference to the replacement (return
 * gp_retain(rebuilt) to keep it, or, from a host with GPHostAPI.rewrite_keep (1.5), that value:
 * no reference), or NULL after error_set() to abort. */
typedef GPExpr *(*GPRewriteFn)(void *user, GPExpr *orig, GPExpr *rebuilt);

/* A node index (since 1.4; GPHostAPI.expr_index_new): every distinct node reachable from a root
 * numbered 0 .. num_nodes - 1 in the order GPHostAPI.post_order gives (children before
 * parents, a let's value before its var; the root is last), with each node's children as ids,
 * so that a pass keeps its per-node facts in arrays indexed by id instead of a pointer map.
 * Read-only, made and freed by the host (expr_index_free); the arrays stay valid until then,
 * and the nodes while the caller holds a reference to the root. */
typedef struct GPExprIndex {
  size_t struct_size;
  uint32_t abi_version;
  int32_t reserved;
  size_t num_nodes;
  GPExpr *const *nodes;       /* nodes[num_nodes - 1] is the root; borrowed */
  const int32_t *kid_offsets; /* num_nodes + 1 entries */
  const int32_t *kids;        /* the child ids of node i, in gp_expr_child_at order:
                               * kids[kid_offsets[i] .. kid_offsets[i + 1]) */
  const int32_t *tags;        /* per node: the callee's GPOp.index for a call of an op, else
                               * -(its type_index): a walk selecting ops reads no node */
} GPExprIndex;

/* Called by GPHostAPI.rewrite_indexed once per node of the index, in id order, like GPRewriteFn,
 * with the node's id and done[j], the replacement of every node j < id (borrowed, valid during
 * the walk), so a callback needs no map from node to id. */
typedef GPExpr *(*GPRewriteIdFn)(void *user, int32_t id, GPExpr *orig, GPExpr *rebuilt, GPExpr *const *done);

/* ------------------------------------------------------------------------------------------ */
/* Instruments (since 1.3): callbacks around every pass of a run                              */

/* What an instrument sees of one planned item of a run (GPInstrument.before_pass, note,
 * after_pass).  Filled by the host; every pointer is borrowed for the callback's duration
 * (retain a module to keep it; copy strings). */
typedef struct GPPassEvent {
  size_t struct_size;
  uint32_t abi_version;
  /* The item's position in the run's plan, 0-based: every planned item is counted, in the order
   * they come -- the pipeline's items and the required passes added before them (InferType
   * before Legalize), skipped ones too -- so the same pipeline, context and registry number
   * their items alike from run to run (what opt-bisect counts).  GPRunEvent.num_items is one
   * past the last. */
  int32_t index;
  int32_t kind;             /* GPPassKind of the pass */
  int32_t opt_level;        /* the pass's */
  const char *pass_name;
  /* 1 when the item was added as a requirement of a later item ("required by X"), 0 when the
   * pipeline lists it.  Vetoing a dependency leaves its dependent without it. */
  int32_t dependency;
  /* before_pass: 1 when the plan runs the pass (a veto can still skip it), 0 when it is skipped
   * (target, disabled, opt-level; a veto is then ignored).  note, after_pass: 1 when the pass
   * function was called (even if it failed), 0 when it was skipped. */
  int32_t ran;
  /* after_pass: 1 when the pass or a check after it (the command's --verify-each,
   * --verify-numerics) failed; the error is in the thread's slot (error_kind, error_message)
   * during the callback, and the run fails with it afterwards.  0 otherwise. */
  int32_t failed;
  /* after_pass: 1 when result is another module than `module`.  A pass returns its input when
   * it changed nothing; a new module may still be structurally equal (structural_equal). */
  int32_t changed;
  /* Why the pass runs or is skipped, as --explain prints it in parentheses: "required by
   * Legalize", "required", "disabled", "opt-level 3 > context opt-level 2", "target cuda not in
   * [llvm]", "skipped by instrument 'NAME'" (after a veto); NULL when it runs because the
   * context's opt-level enables it. */
  const char *reason;
  /* before_pass, note and after_pass: the module the pass is (or would have been) given. */
  const GPModule *module;
  /* after_pass: the module the pass returned (also when a check after it failed); NULL when
   * the pass was skipped or failed. */
  const GPModule *result;
  uint64_t elapsed_ns;      /* after_pass: time spent in the pass function (monotonic clock) */
  /* after_pass: the notes the pass left with ctx_note, in order (also given one by one to the
   * note callbacks); collected while the context has an instrument. */
  int32_t num_notes;
  /* 0 for the items of the run the host started; 1 for those of a run that one of its passes
   * started with the same context (FoldScaleAxis runs FoldConstant), and so on.  A nested run
   * numbers its items from 0 and has its own run_begin / run_end. */
  int32_t depth;
  const char *const *notes;
  /* after_pass: what the host's checks after the pass found, e.g. "numerics ok (max abs error
   * 0)" under the command's --verify-numerics; NULL when none ran. */
  const char *checks;
} GPPassEvent;

/* The start and the end of a run (GPInstrument.run_begin / run_end); borrowed like
 * GPPassEvent. */
typedef struct GPRunEvent {
  size_t struct_size;
  uint32_t abi_version;
  const char *pipeline;     /* the pipeline string run (the chosen set's when none was given) */
  const char *target;       /* the context's target */
  int32_t opt_level;        /* the context's opt-level */
  int32_t num_items;        /* planned items: GPPassEvent.index goes from 0 to num_items - 1 */
  /* run_begin: the input.  run_end: the result, NULL when the run failed (the error is then in
   * the thread's slot). */
  const GPModule *module;
  int32_t failed;           /* run_end: 1 when the run failed */
  int32_t depth;            /* as GPPassEvent.depth */
  uint64_t elapsed_ns;      /* run_end: the whole run, planning and instruments included */
} GPRunEvent;

/* An instrument (since 1.3; TVM's PassInstrument, LLVM's PassInstrumentation), registered on a
 * context with GPHostAPI.ctx_instrument_register.  Every callback may be NULL.  For each
 * run_pipeline with that context, in registration order for every callback:
 *   run_begin                      after planning (a pipeline that does not parse or plan
 *                                  fails before it, and no callback runs);
 *   per planned item, in order:
 *     before_pass                  for every item, skipped ones too (ev->ran says which);
 *                                  returns 0 to go on, 1 to skip a pass that would run (a veto:
 *                                  the later instruments still see the item, with ran = 0 and
 *                                  the reason "skipped by instrument 'NAME'"; ignored for an
 *                                  item already skipped), or -1 to stop the run with the
 *                                  thread's error set;
 *     note                         once per note the pass left, after the pass returns;
 *     after_pass                   for every item; 0, or -1 to stop the run with the error set
 *                                  (ignored after a failed item: the run fails with the pass's
 *                                  error);
 *   run_end                        once, when run_begin ran, whether the run succeeded or not.
 * A run stopped by a callback fails with its error prefixed "instrument NAME: ".  Callbacks run
 * on the thread that called run_pipeline; they may call the host table (print a module,
 * structural_equal, ...) but not register or unregister instruments of the running context
 * (GP_ERR_VALUE while it runs).  A pass that runs a pipeline with its context (FoldScaleAxis
 * runs FoldConstant) runs it under the same instruments, one `depth` deeper; its notes are
 * delivered with its own items. */
typedef struct GPInstrument {
  size_t struct_size;
  uint32_t abi_version;
  const char *name;  /* [A-Za-z0-9_.-]+, unique per context; copied */
  /* Passed to every callback.  After a successful registration the context owns it when
   * user_deleter is set: user_deleter(user) runs once, at ctx_instrument_unregister or
   * ctx_free.  A failed registration leaves it with the caller. */
  void *user;
  void (*user_deleter)(void *user);
  int (*run_begin)(void *user, const GPRunEvent *ev);
  int (*before_pass)(void *user, const GPPassEvent *ev);
  void (*note)(void *user, const GPPassEvent *ev, const char *text);
  int (*after_pass)(void *user, const GPPassEvent *ev);
  void (*run_end)(void *user, const GPRunEvent *ev);
} GPInstrument;

/* ------------------------------------------------------------------------------------------ */
/* The host table                                                                              */

/* Options and statistics of GPHostAPI.eval_function (since 1.1).  In: struct_size,
 * abi_version, num_threads (0: all cores).  Out: the rest, filled by the evaluator. */
typedef struct GPEvalOptions {
  size_t struct_size;
  uint32_t abi_version;
  int32_t num_threads;
  size_t peak_bytes;   /* out: the most bytes of intermediate tensors alive at once */
  int64_t ops_run;     /* out: op calls evaluated */
  /* ---- ABI 1.3 (external codegen): read by a 1.3 host only when GP_HAS_FIELD(opts,
   * GPEvalOptions, observe_user); zero-filled means off ---- */
  /* 1: a call of a global function whose attrs have Compiler="X" runs the global function
   * `graphpass.ext.X.run` when one is registered (the body is evaluated when none is), called
   * with args [the callee (GPFunctionExpr*, borrowed, as GP_TI_FUNCTION_EXPR), then one
   * GP_TI_DLTENSOR_PTR per parameter (borrowed CPU tensors, valid for the call; compact or
   * strided with byte_offset)], returning a GPTensor (GP_TI_TENSOR, owned by the result) for a
   * tensor-typed function or a GPArray of GPTensors (its fields in order) for a tuple-typed one;
   * the evaluator checks each against the function's declared result type (GP_ERR_VALUE naming
   * the function otherwise) and prefixes a failure with the calling node.  0: bodies are
   * evaluated (the float reference, e.g. for calibration or --verify-numerics). */
  int32_t external;
  int32_t reserved13;
  /* Called (when non-NULL) with each value as it is computed: the result of every op call, and
   * each parameter of every function frame as it is bound (node = the GPVar), in every frame
   * (global functions, closures; external bodies only when evaluated).  `node` is the node of
   * the module being evaluated (borrowed), `value` the tensor (borrowed, valid for the call;
   * tuple results are reported field by field with the same node and field = 0, 1, ...; a plain
   * tensor with field = -1).  Non-zero stops the evaluation with that error (set it). */
  int (*observe)(void *user, const GPExpr *node, int32_t field, const DLTensor *value);
  void *observe_user;
} GPEvalOptions;

/* Options of GPHostAPI.onnx_import (since 1.3; caller-owned, read during the call only).
 * Shapes that replace the declared ones of named graph inputs (a dynamic batch, `--shape
 * NAME=1,3,224,224`): shape_names[i] is an ONNX graph input name, shape_ndims[i] its rank and
 * shape_dims[i] its shape_ndims[i] dims (each >= 0). */
typedef struct GPOnnxImportOptions {
  size_t struct_size;
  uint32_t abi_version;
  int32_t num_shapes;
  const char *const *shape_names;
  const int32_t *shape_ndims;
  const int64_t *const *shape_dims;
} GPOnnxImportOptions;

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
  /* Register (or replace) the named optimization set `set` of `target`: a pipeline string.
   * A target's default set is named "default" (it runs when no pipeline is given, unless
   * another set is chosen).  The pipeline is checked now: its syntax (GP_ERR_PARSE), every pass
   * and every pass it requires registered (GP_ERR_NOT_FOUND naming the pass and the set), no
   * dependency cycle and valid {key=value} (GP_ERR_VALUE) -- so a plugin registers its passes
   * before its sets. */
  int (*opt_set_register)(const char *target, const char *set, const char *pipeline);

  /* Pass contexts (opaque; owned by whoever created them).  A fresh context has opt-level 2,
   * target "llvm", no optimization set chosen (a run without a pipeline runs the target's
   * default set, "default"), nothing disabled or required, no config values (every key reads
   * its pass's default) and no instruments (1.3; so no notes are kept).  The host library
   * loads no plugin by itself (see plugins_load_default).  ctx_set_opt_level accepts 0 .. max(4, the highest opt_level of any
   * registered pass) (GP_ERR_VALUE otherwise); ctx_disable / ctx_require need a registered pass
   * (GP_ERR_NOT_FOUND "no pass named X is registered; load its plugin first"). */
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
   * NULL + error (GP_ERR_PASS naming the pass) on failure; `mod` is never changed.  Every
   * module a pass returns is verified (since 1.3: a NULL function, an unbound var... fails the
   * run naming the pass), and so is the input's function table after each pass; see
   * ctx_set_check_immutable for the structural check of the input. */
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

  /* ---- since 1.1: evaluation ---- */

  /* Set (or replace) the kernel of a registered op; `user` is passed back to it and must stay
   * valid while the kernel is set. */
  int (*op_set_kernel)(const GPOp *op, GPOpKernelFn kernel, void *user);
  /* Evaluate one call of an op whose arguments are constants with data, or tuples of such
   * constants.  Returns a new constant, or a new tuple of constants for a tuple-typed result.
   * NULL + error (GP_ERR_UNSUPPORTED: no kernel / dtype; GP_ERR_TYPE; GP_ERR_VALUE) naming the
   * op. */
  GPExpr *(*eval_call)(const GPCall *call);
  /* Evaluate function `name` of mod (NULL: "main") on the given inputs, one per parameter, in
   * order (a tuple-typed parameter, e.g. an imported ONNX sequence, takes its fields'
   * tensors, nested tuples flattened, in order); each must match the parameter's type
   * (shape, dtype; else GP_ERR_VALUE naming the parameter and both types).  On success *outputs is a host array (free with `free`) of
   * *num_outputs new tensor references: the result, or the fields of a tuple result in order
   * (nested tuples flattened).  opts may be NULL. */
  int (*eval_function)(const GPModule *mod, const char *name, int32_t num_inputs,
                       GPTensor *const *inputs, GPTensor ***outputs, int32_t *num_outputs,
                       GPEvalOptions *opts);
  /* A DLManagedTensor viewing t's data (no copy) that holds a reference to t until its deleter
   * runs; the caller owns it and must call its deleter once.  NULL + error when t has no data. */
  DLManagedTensor *(*tensor_to_dlpack)(GPTensor *t);
  /* A note from the running pass (printf-style), e.g. why a match was left alone.  Since 1.3 the
   * notes go to the context's instruments after the pass returns (GPInstrument.note,
   * GPPassEvent.notes); --explain prints them as "explain: <Pass>: note: <message>".  Dropped
   * when the context has no instrument. */
  void (*ctx_note)(GPPassContext *ctx, const char *fmt, ...);

  /* Per-op attributes by key (TVM's Op::SetAttr), e.g. GP_OP_ATTR_LEGALIZE.  op_set_attr copies
   * a POD value, retains an object value (a raw string is copied into a GPString), and replaces
   * an existing value only when plevel >= the level it was set with (GP_ERR_VALUE otherwise);
   * None removes the key.  op_get_attr: 1 and *out = a new reference (release with any_clear)
   * when set, 0 and *out = None when not.  A 1.2 host removes what a plugin set when the plugin
   * fails or is unloaded; a plugin that also runs on a 1.1 host removes its function values (sets
   * None) in its finalize, since the code goes away with the plugin. */
  int (*op_set_attr)(const GPOp *op, const char *key, const GPAny *value, int32_t plevel);
  int (*op_get_attr)(const GPOp *op, const char *key, GPAny *out);

  /* Global functions by name (TVM's register_func), e.g. a skip predicate that a pass config
   * names.  func_register retains f (NULL removes the name); a name already taken is
   * GP_ERR_VALUE unless allow_override.  func_get: a new reference, or NULL (no error) when the
   * name is free.  Like op attributes: removed with the plugin by a 1.2 host, in its finalize by
   * a plugin that also runs on a 1.1 host. */
  int (*func_register)(const char *name, GPPackedFunc *f, int allow_override);
  GPPackedFunc *(*func_get)(const char *name);
  /* ---- since 1.2: patterns ---- */

  /* Compile pattern text (see GPPattern).  source_name, line and col say where the text starts
   * (for messages; NULL, 1, 1 for a plain string).  New reference, or NULL + GP_ERR_PARSE. */
  GPPattern *(*pattern_compile)(const char *text, const char *source_name, uint32_t line,
                                uint32_t col);
  /* Match p at e (structure only: uses outside the match are not looked at).  1 and *out = a
   * host-allocated match (free with `free`; its arrays live in the same block), 0 (no match,
   * *out = NULL), or -1 + error. */
  int (*pattern_match)(const GPPattern *p, GPExpr *e, GPMatch **out);
  /* The rewrite driver over one expression (a function, or a function's body): one walk over
   * the graph per pattern, consumers before producers (TVM's partitioner order), selects the
   * matches; a match is refused when one of its interior nodes (not its root, not an embedded
   * constant) is claimed by an earlier match or used by a node outside the match.  Matches are
   * not made inside nested functions that carry a Composite, Primitive or Compiler attribute.
   * Then one rebuilding walk calls spec->rewrite on each accepted match, producers first.  A new
   * reference to the rewritten expression (root retained when nothing matched), or NULL +
   * error; root is never changed.  spec->num_rewritten is set on success.  Nodes built by the
   * callbacks have no checked_type unless the callback gave one: re-run type inference.  A
   * caller repeating a spec to a fixed point may find a repeat return its root at once (0
   * rewritten): the round that made that root proved, from the places it changed, that a
   * further round with the same patterns, callbacks and user would rewrite nothing. */
  GPExpr *(*pattern_rewrite)(GPExpr *root, GPRewriteSpec *spec);
  /* Pattern tables.  pattern_table_new: entries from parallel arrays (checks may be NULL, or
   * hold NULLs); names must be non-empty and distinct.  pattern_table_read: a pattern file,
   * one `name: pattern` per line, '#' comments, blank lines; errors at file:line:col.
   * pattern_table_register: under `name`, retained (NULL removes the name; a taken name is
   * GP_ERR_VALUE unless allow_override); a plugin's tables are removed with it.
   * pattern_table_get: a new reference, or NULL (no error) when the name is free. */
  GPPatternTable *(*pattern_table_new)(int32_t n, const char *const *names,
                                       GPPattern *const *patterns, GPPackedFunc *const *checks);
  GPPatternTable *(*pattern_table_read)(const char *path);
  int (*pattern_table_register)(const char *name, GPPatternTable *table, int allow_override);
  GPPatternTable *(*pattern_table_get)(const char *name);

  /* ---- since 1.2: targets and kernels ---- */

  /* Register a target (see GPTargetInfo); its origin is the registering plugin ("host" for
   * the host), and a plugin's targets are removed when it is unloaded.  A name already
   * registered is GP_ERR_VALUE naming its origin unless allow_override; a bad name, flag or
   * kernel list is GP_ERR_VALUE naming the field; a struct_size below 1.2's or another major is
   * GP_ERR_VERSION. */
  int (*target_register)(const GPTargetInfo *info, int allow_override);
  /* GP_ERR_NOT_FOUND naming the target when it is not registered. */
  int (*target_unregister)(const char *name);
  /* 1 when `target` is registered and has a kernel named `kernel` (listed, or an op name with
   * GP_TARGET_ALL_OPS), 0 when not (no error; an unregistered target has no kernel), -1 +
   * GP_ERR_VALUE when an argument is NULL. */
  int (*target_has_kernel)(const char *target, const char *kernel);
  /* The registered targets' names, sorted: *out_names is one host allocation holding the
   * array and the strings (free it with `free`), *out_count the count (NULL array when 0). */
  int (*target_list)(char ***out_names, int32_t *out_count);

  /* ---- since 1.2: plugin lifecycle ---- */

  /* Unload the loaded plugin named `name` (its GPPluginAPI.name): everything it registered
   * goes -- passes, targets, pattern tables, global functions, optimization sets, op
   * attributes and kernels (each op gets back the kernel it had before the plugin set one) --
   * then its finalize runs and the object is closed (a plugin that registered ops stays mapped,
   * since ops are immortal).  It can be loaded again afterwards.  GP_ERR_NOT_FOUND naming it
   * when no plugin of that name is loaded.  The caller makes sure nothing of the plugin is
   * running or held (a pass in flight, a GPPackedFunc obtained from func_get). */
  int (*plugin_unload)(const char *name);

  /* ---- since 1.2: optimization sets ---- */

  /* The pipeline string of `target`'s set `set` (NULL: the target's default -- "default" unless
   * another was selected), host-allocated (free with `free`); NULL + GP_ERR_NOT_FOUND naming the
   * target and listing its sets (or the known targets). */
  char *(*opt_set_get)(const char *target, const char *set);
  /* Every set, one line "target set pipeline\n" each, sorted by target then set;
   * host-allocated (free with `free`; "" when there are none). */
  char *(*opt_set_list)(void);
  /* Choose the set that run_pipeline with a NULL pipeline runs for the context's target
   * (NULL: back to the target's default).  A set the target does not have is GP_ERR_NOT_FOUND
   * naming the target and its sets: now when the target has sets, else when the pipeline runs. */
  int (*ctx_set_opt_set)(GPPassContext *ctx, const char *set);

  /* ---- since 1.3: instruments, default plugins, packed passes ---- */

  /* Add an instrument to a context (see GPInstrument; the table is copied, the name too).
   * GP_ERR_VALUE for a NULL argument, a bad or taken name, or while the context runs;
   * GP_ERR_VERSION for a struct_size below 1.3's GPInstrument or another major.  Instruments
   * apply to every later run with the context and go with ctx_free. */
  int (*ctx_instrument_register)(GPPassContext *ctx, const GPInstrument *instrument);
  /* Remove the instrument named `name` (its user_deleter runs).  GP_ERR_NOT_FOUND naming the
   * context's instruments when there is none of that name; GP_ERR_VALUE while the context
   * runs. */
  int (*ctx_instrument_unregister)(GPPassContext *ctx, const char *name);

  /* Load the default plugins: every `*.so` in each directory of $GRAPHPASS_PLUGIN_PATH
   * (colon-separated; empty entries are skipped; each directory's files in strcmp order, the
   * directories in the order given) when it is set and not empty, else in the installed plugin
   * directory: <libdir>/graphpass/plugins beside the libgraphpass.so that is running (pkg-config
   * --variable=plugindir graphpass), or <dir>/../plugins in a build tree (build/plugins beside
   * build/lib).  The library loads nothing by itself: a host calls this once, after
   * graphpass_host_api(), when it wants the plugins a user installed (the `graphpass` command
   * does the same unless --no-default-plugins).  Plugins already loaded are skipped (as
   * plugin_load).  *out_loaded (may be NULL) gets the number of plugins this call loaded.
   * Errors: a directory named in $GRAPHPASS_PLUGIN_PATH that is missing (GP_ERR_IO naming it);
   * the first plugin that fails to load (its error).  A missing default directory is not an
   * error (0 plugins). */
  int (*plugins_load_default)(int32_t *out_loaded);

  /* Register a pass whose function is a packed function (a host written in Python, say).
   * `info` is read as for pass_register, except info->func, self and self_deleter, which must
   * be NULL/0 (GP_ERR_VALUE otherwise).  `f` is called like GPPassInfo.func: args [GPModule*
   * (GP_TI_MODULE, borrowed), GPPassContext* (GP_TI_OPAQUE_PTR)], and must return a new module
   * reference in *result (its input, retained, when nothing changed) or -1 with the thread's
   * error set, which the run reports as GP_ERR_PASS "pass <Name>: <message>".  Lifetime: on
   * success the registry holds its own reference to f (the caller keeps and releases its own)
   * until the pass is unregistered (pass_unregister, or unloading the plugin that registered
   * it) and no running pipeline still holds the pass; then f is released, so whatever f->self
   * holds (an interpreter's callable) must stay usable until then.  On failure f is not
   * retained. */
  int (*pass_register_packed)(const GPPassInfo *info, GPPackedFunc *f, int allow_override);

  /* ---- ABI 1.3: queries and ONNX import (for hosts without the command: the Python package) */

  /* The registered passes (NULL target), or only those that run for `target` (bound to it, not
   * excluding it, and the target has every kernel they bind to: `graphpass passes --target T`),
   * sorted by name, one line each, host-allocated (free with `free`; "" when none).  A line is
   * ten fields separated by tabs, lists comma-separated and empty when there is nothing:
   *   name, opt_level, kind (transform|analysis|debug), required, targets, excluded_targets,
   *   kernels, origin (the plugin's name or "host"), config keys (each "<full key>:<type>",
   *   type int|bool|float|string), help (tabs and newlines as spaces)
   * followed by '\n'.  Never fails for a non-NULL target (an unregistered one gets the passes
   * that bind no target and no kernel). */
  char *(*pass_list)(const char *target);
  /* Import an ONNX model (opsets 7 to 27; the command's importer: @main's parameters are the
   * graph inputs that are not initializers, named after them with characters outside
   * [A-Za-z0-9_/] as '_'; initializers become constants).  data/size: the serialized
   * ModelProto (borrowed for the call); data NULL reads the file `path`.  `path` names the
   * model in messages and is the base directory of external data files (may be NULL with
   * data).  opts may be NULL.  A new module, or NULL + error naming the file and the node:
   * GP_ERR_IO (unreadable), GP_ERR_PARSE (not a ModelProto), GP_ERR_VALUE (an invalid model or
   * option), GP_ERR_UNSUPPORTED (an op, opset or dtype), GP_ERR_TYPE, GP_ERR_VERSION (opts from
   * another major or smaller than 1.3's). */
  GPModule *(*onnx_import)(const void *data, size_t size, const char *path,
                           const GPOnnxImportOptions *opts);
  /* gp_retain / gp_release as functions, for hosts that cannot use the inline ones (ctypes,
   * cffi's ABI mode): atomic; NULL and immortal objects are no-ops; object_retain returns obj. */
  void *(*object_retain)(void *obj);
  void (*object_release)(void *obj);
  /* ---- ABI 1.3: pass output checks ---- */

  /* TVM's immutable-module check (its "testing.immutable_module" option): when on, run_pipeline
   * takes a structural hash of each pass's input module before the pass and again after it,
   * and fails naming the pass (GP_ERR_PASS "pass <Name> changed its input module ...") when
   * they differ.  Off by default (it costs two hashes of the module per pass); on for the
   * command's --verify-each.  Whatever the flag, every module a pass returns is checked (no
   * NULL function or global var, the verifier's well-formedness; GP_ERR_PASS "pass <Name>
   * returned an ill-formed module: ...") and the input's function table must be the same
   * afterwards.  on != 0 turns the check on.  0, or -1 + GP_ERR_VALUE when ctx is NULL. */
  int (*ctx_set_check_immutable)(GPPassContext *ctx, int on);
  /* ABI 1.3: memory of file-backed constants (read only when GP_HAS_FIELD(H, GPHostAPI,
   * tensor_drop_pages)) */

  /* A hint that t's values will not be read again soon (a pass that has just made a new tensor
   * from them).  When t views a read-only file mapping (an ONNX model's weights are imported in
   * place), the resident pages that lie wholly inside t's bytes are handed back to the OS; a
   * later read faults them back in from the file, so t's values never change and t stays
   * valid.  For any other tensor, or NULL, nothing happens.  Borrowed; thread-safe. */
  void (*tensor_drop_pages)(const GPTensor *t);
  /* ---- ABI 1.3 (plugin dependencies): read only when GP_HAS_FIELD(host, GPHostAPI,
   * plugin_require) ---- */

  /* Make sure the plugin named `name` (its GPPluginAPI.name) is loaded, for a plugin whose
   * optimization sets or passes build on another plugin's passes (a vendor's set that runs the
   * standard plugin's FoldConstant, ConvertLayout, ...; opt_set_register checks every pass of a
   * set, and a plugin directory loads in name order).  A no-op success when it is loaded;
   * otherwise the host loads "lib" "gp_" <name> ".so" from its plugin directory
   * ($GRAPHPASS_PLUGIN_PATH when set, else <directory of the running executable>/../plugins).
   * Callable from initialize (what the required plugin registers is its own, not the caller's).
   * `name` is [A-Za-z0-9_-]+ (GP_ERR_VALUE otherwise); a missing file is GP_ERR_NOT_FOUND naming
   * the plugin and the path looked at; a failing load keeps that load's error, prefixed with
   * "plugin_require(<name>)". */
  int (*plugin_require)(const char *name);

  /* ---- ABI 1.3 (external codegen: what an accelerator vendor's codegen and runtime need):
   * read only when GP_HAS_FIELD(host, GPHostAPI, eval_random_inputs) ---- */

  /* A tensor from a file: .npy (versions 1.0-3.0) or, for a name ending in .pb, an ONNX
   * TensorProto.  New reference, or NULL + GP_ERR_IO / GP_ERR_PARSE naming the path (e.g.
   * calibration inputs a pass reads from a path in its config). */
  GPTensor *(*tensor_read)(const char *path);
  /* The deterministic inputs of function `name` (NULL: "main") of mod for `seed`, the ones
   * --verify-numerics uses (floats uniform in [-1, 1), integers in [0, 10), bools 0/1): one per
   * parameter, each must have a static tensor type (GP_ERR_VALUE naming it; --verify-numerics
   * itself also takes ? dims, as 1 or in the shape the command gives).  *inputs is a host
   * array (free with `free`) of *num_inputs new references. */
  int (*eval_random_inputs)(const GPModule *mod, const char *name, uint64_t seed, GPTensor ***inputs,
                            int32_t *num_inputs);

  /* ---- ABI 1.4 (subtree facts: what a pass may skip in O(1)): read only when
   * GP_HAS_FIELD(host, GPHostAPI, op_list_with_attr) ---- */

  /* Whether a call of `op` may be reachable from e (e itself included): 0 when certainly not,
   * 1 when it may be.  O(1): every expression carries a summary of its subtree, made when the
   * node is constructed (a Bloom filter of the ops it calls: 1 may be a false positive, 0 is
   * exact).  For skipping a function that cannot hold what a pass rewrites (a module without
   * nn.dense skips CombineParallelDense without a walk); never for deciding a rewrite.  e and
   * op are borrowed; 0 when either is NULL or not an expression / op.  Thread-safe. */
  int (*expr_may_call)(const GPExpr *e, const GPOp *op);
  /* Whether a node of kind `type_index` (GP_TI_VAR .. GP_TI_OP) is reachable from e (e itself
   * included); exact and O(1) (e.g. no GP_TI_GLOBAL_VAR under a function: it calls no other
   * global function).  0 for a NULL e or a type index outside that range. */
  int (*expr_has_kind)(const GPExpr *e, int32_t type_index);
  /* The ops that have attribute `key` (set with op_set_attr, at any level), in registry order:
   * fills out[0 .. min(n, cap)) with borrowed (immortal) ops and returns n, their number (cap 0
   * counts).  With expr_may_call, a hook-driven pass (AlterOpLayout, Legalize) finds out in
   * O(hooked ops) that a function calls no hooked op.  -1 + GP_ERR_VALUE for a NULL key, a
   * negative cap or a NULL out with cap > 0.  Thread-safe. */
  int32_t (*op_list_with_attr)(const char *key, const GPOp **out, int32_t cap);
  /* The node index of root (see GPExprIndex), or NULL + error (root not an expression; more
   * than INT32_MAX nodes).  O(nodes); free it with expr_index_free (NULL is a no-op), on any
   * thread. */
  GPExprIndex *(*expr_index_new)(GPExpr *root);
  void (*expr_index_free)(GPExprIndex *index);
  /* GPHostAPI.rewrite over an index from expr_index_new (of the root to rewrite), calling fn
   * with each node's id (see GPRewriteIdFn); fn NULL rebuilds nothing.  Returns the root's
   * replacement (a new reference) or NULL + error.  The index is not changed. */
  GPExpr *(*rewrite_indexed)(const GPExprIndex *index, GPRewriteIdFn fn, void *user);

  /* ---- ABI 1.5 (rewrites without reference counting): read only when
   * GP_HAS_FIELD(host, GPHostAPI, rewrite_keep) ---- */

  /* A marker, not an object (never retain, release or read through it; constant while the host
   * is loaded): a GPRewriteFn or GPRewriteIdFn given to rewrite or rewrite_indexed may return
   * it instead of gp_retain(rebuilt) to keep `rebuilt` as the node's rewrite.  Most nodes are
   * kept, and each reference count change is an atomic operation on a node the walk otherwise
   * only reads: the two a kept node cost (the callback's retain, the rewriter's release) were
   * most of an unchanged node's time in a big graph.  Only a host with this field takes it. */
  GPExpr *rewrite_keep;

  /* ---- ABI 1.6 (inputs for a function with `?` dims): read only when
   * GP_HAS_FIELD(host, GPHostAPI, eval_random_inputs_filled) ---- */

  /* eval_random_inputs for a function whose parameters may have `?` dims: each `?` is any_dim
   * (>= 1), as --verify-numerics fills them; a static parameter gets the tensor
   * eval_random_inputs gives it (the values depend on the seed, the parameter's position and
   * its shape alone).  GP_ERR_VALUE for any_dim < 1, a parameter without a tensor type or a
   * NULL mod / inputs / num_inputs; GP_ERR_NOT_FOUND for a missing function.  *inputs is a
   * host array (free with `free`) of *num_inputs new references. */
  int (*eval_random_inputs_filled)(const GPModule *mod, const char *name, uint64_t seed, int64_t any_dim,
                                   GPTensor ***inputs, int32_t *num_inputs);
  /* Whether a call of an op with at least one argument, every argument a constant or a tuple,
   * is reachable from e (e itself included): exact and O(1), a subtree fact like expr_has_kind.
   * With expr_has_kind (let, if, tuple_get_item) and expr_may_call (shape_of) a constant folder
   * learns without a walk that a function has nothing it could fold.  0 for a NULL e or one
   * that is not an expression.  Thread-safe. */
  int (*expr_has_constant_call)(const GPExpr *e);
};

/* The legalize hook of an op (read by the Legalize pass): a GPPackedFunc called with
 * [call (GPCall*, its arguments already legalized; borrowed), types (a tuple GPType of the
 * original argument types followed by the call's type)], returning a new expression to replace
 * the call, or None to keep it.  A C function "o(o,o)" can be wrapped with ffi_wrap. */
#define GP_OP_ATTR_LEGALIZE "FTVMLegalize"

/* The alter-layout hook of an op (read by the AlterOpLayout pass), called like the legalize hook
 * with [call (the call with its arguments in the layouts their producers now give and the
 * attributes its layout relation chose; borrowed), types (a tuple GPType of the original
 * argument types followed by the call's type)], returning a new call (e.g. the op with other
 * data / kernel layouts; the pass inserts the layout_transforms its arguments need), or None to
 * keep the call. */
#define GP_OP_ATTR_ALTER_OP_LAYOUT "FTVMAlterOpLayout"

/* The target predicate of an op for BYOC target T (TVM's FTVMAnnotateTarget, read by the
 * AnnotateTarget pass) is its attribute "target.T": a bool, or a GPPackedFunc called with
 * [call (the typed call; borrowed)] returning a bool, or (read by a 1.6 host's AnnotateTarget)
 * a string: a refusal, and why (--explain shows it beside the first refused call of the op). */

/* The config key of EliminateCommonSubexpr's skip predicate (TVM's fskip).  Its value names a
 * global function (func_register), e.g. `EliminateCommonSubexpr{skip=graphpass.cse_skip_int32_cast}`
 * in a pipeline (the llvm default set does this) or ctx_set_config(ctx, GP_CSE_SKIP_KEY, name).
 * The function is looked up when the pass starts (GP_ERR_NOT_FOUND naming it when no function has
 * that name) and called as a GPPackedFunc once per candidate node:
 *   args:   [node]: a GPCall (type_index GP_TI_CALL) or a GPTupleGetItem
 *           (GP_TI_TUPLE_GET_ITEM), borrowed, its children already rewritten; nargs == 1;
 *   result: a bool (GP_TI_BOOL; GP_TI_INT is accepted, non-zero = true): true leaves the node
 *           alone (it is neither replaced nor offered as a candidate), false lets the pass
 *           merge it with an equal earlier node;
 *   error:  -1 with the thread's error set, or a result of another type, fails the pass with
 *           an error naming the function and the node (file:line:col).
 * The standard plugin registers graphpass.cse_skip_int32_cast: true for cast(dtype="int32"). */
#define GP_CSE_SKIP_KEY "EliminateCommonSubexpr.skip"

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
   * finalize returns.  Registers passes, ops, optimization sets and targets.  0 on success. */
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
