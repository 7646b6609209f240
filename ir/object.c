/* object.c -- object allocation, non-recursive freeing, strings, packed functions, values.
 *
 * Freeing a 10M-node chain must not recurse: every expression deleter goes through
 * gp_object_drain, which frees at once when no drain is running on this thread, and otherwise
 * queues the object for the running drain's loop.  A child released from inside a free
 * function whose count drops to zero is therefore queued, never freed recursively. */
#include "ir.h"

#include <string.h>

typedef struct {
  GPObject *obj;
  void (*free_fn)(GPObject *);
} Pending;

static _Thread_local struct {
  int active;
  Pending *items;
  size_t len, cap;
} drain;

static void *object_init(GPObject *o, int32_t type_index, void (*deleter)(GPObject *)) {
  o->ref_count = 1;
  o->type_index = type_index;
  o->deleter = deleter;
  return o;
}

void *gp_object_alloc(size_t size, int32_t type_index, void (*deleter)(GPObject *)) {
  return object_init(gp_calloc(1, size), type_index, deleter);
}

void *gp_node_object_alloc(size_t size, int32_t type_index, void (*deleter)(GPObject *)) {
  return object_init(gp_node_alloc(size), type_index, deleter);
}

void gp_release_child(void *obj) { gp_release(obj); }

void gp_object_drain(GPObject *obj, void (*free_fn)(GPObject *)) {
  if (drain.active) {
    if (drain.len == drain.cap) {
      drain.cap = drain.cap ? drain.cap * 2 : 256;
      drain.items = gp_realloc(drain.items, drain.cap * sizeof(Pending));
    }
    drain.items[drain.len++] = (Pending){obj, free_fn};
    return;
  }
  drain.active = 1;
  free_fn(obj);
  while (drain.len) {
    Pending p = drain.items[--drain.len];
    p.free_fn(p.obj);
  }
  gp_free(drain.items);
  drain.items = NULL;
  drain.cap = 0;
  drain.active = 0;
}

const char *gp_type_index_name(int32_t ti) {
  switch (ti) {
  case GP_TI_NONE: return "None";
  case GP_TI_INT: return "int";
  case GP_TI_BOOL: return "bool";
  case GP_TI_FLOAT: return "float";
  case GP_TI_OPAQUE_PTR: return "opaque pointer";
  case GP_TI_DTYPE: return "dtype";
  case GP_TI_DEVICE: return "device";
  case GP_TI_DLTENSOR_PTR: return "DLTensor*";
  case GP_TI_RAW_STR: return "string";
  case GP_TI_OBJECT: return "object";
  case GP_TI_STR: return "str";
  case GP_TI_ERROR: return "error";
  case GP_TI_FUNCTION: return "function";
  case GP_TI_TENSOR: return "tensor";
  case GP_TI_ARRAY: return "array";
  case GP_TI_VAR: return "relay.Var";
  case GP_TI_GLOBAL_VAR: return "relay.GlobalVar";
  case GP_TI_CONSTANT: return "relay.Constant";
  case GP_TI_CALL: return "relay.Call";
  case GP_TI_TUPLE: return "relay.Tuple";
  case GP_TI_TUPLE_GET_ITEM: return "relay.TupleGetItem";
  case GP_TI_FUNCTION_EXPR: return "relay.Function";
  case GP_TI_LET: return "relay.Let";
  case GP_TI_IF: return "relay.If";
  case GP_TI_OP: return "relay.Op";
  case GP_TI_TYPE: return "relay.Type";
  case GP_TI_ATTRS: return "Attrs";
  case GP_TI_MODULE: return "IRModule";
  case GP_TI_PASS_CONTEXT: return "PassContext";
  default: return ti >= GP_TI_DYNAMIC_BEGIN ? "dynamic object" : "unknown";
  }
}

/* ---- strings */

static void string_delete(GPObject *o) { gp_free(o); }

GPString *gp_string_new(const char *data, size_t size) {
  GPString *s = gp_object_alloc(sizeof(GPString) + size + 1, GP_TI_STR, string_delete);
  char *d = (char *)(s + 1);
  if (size) memcpy(d, data, size);
  d[size] = 0;
  s->size = size;
  s->data = d;
  return s;
}

/* ---- packed functions */

static void func_delete(GPObject *o) {
  GPPackedFunc *f = (GPPackedFunc *)o;
  if (f->self_deleter) f->self_deleter(f->self);
  gp_free(f);
}

GPPackedFunc *gp_func_new(void *self, GPPackedCFunc call, void (*self_deleter)(void *)) {
  if (!call) {
    gp_error_set(GP_ERR_VALUE, "func_new: the call function is NULL");
    return NULL;
  }
  GPPackedFunc *f = gp_object_alloc(sizeof *f, GP_TI_FUNCTION, func_delete);
  f->self = self;
  f->call = call;
  f->self_deleter = self_deleter;
  return f;
}

int gp_func_call(GPPackedFunc *f, const GPAny *args, int32_t nargs, GPAny *result) {
  *result = (GPAny){0};
  int rc = f->call(f->self, args, nargs, result);
  if (rc != 0) {
    gp_any_clear(result);
    if (!gp_error_kind()) gp_error_set(GP_ERR_INTERNAL, "packed function failed without an error message");
    return -1;
  }
  return 0;
}

/* ---- values */

void gp_any_clear(GPAny *v) {
  if (v->type_index >= GP_TI_OBJECT) gp_release(v->v_obj);
  *v = (GPAny){0};
}

GPAny gp_any_int(int64_t x) { return (GPAny){.type_index = GP_TI_INT, .v_int64 = x}; }
GPAny gp_any_float(double x) { return (GPAny){.type_index = GP_TI_FLOAT, .v_float64 = x}; }
GPAny gp_any_bool(bool x) { return (GPAny){.type_index = GP_TI_BOOL, .v_int64 = x ? 1 : 0}; }
GPAny gp_any_ptr(void *p) { return (GPAny){.type_index = GP_TI_OPAQUE_PTR, .v_ptr = p}; }
GPAny gp_any_str(const char *s) { return (GPAny){.type_index = GP_TI_RAW_STR, .v_c_str = s}; }

GPAny gp_any_obj(void *obj) {
  if (!obj) return (GPAny){0};
  return (GPAny){.type_index = ((GPObject *)obj)->type_index, .v_obj = obj};
}
