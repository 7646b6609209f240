/* import.c -- the ONNX importer: ModelProto -> module, node by node through the converter
 * tables; the builders, attribute getters and compile-time evaluation converters use.
 *
 * Sequences and optionals.  The IR has tensors, tuples and functions, no lists or option
 * types, and the importer fixes every structure when importing (Loop and Scan are unrolled,
 * an If with a known condition is replaced by its branch).  So an ONNX sequence is a Relay
 * tuple of its tensors, its length part of its type: SequenceConstruct makes a tuple,
 * SequenceAt is a get-item, SequenceInsert / SequenceErase make a new tuple, SequenceLength is
 * a constant (frontend/onnx/cv_seq.c).  An optional that holds a value IS that value (as in
 * ONNX's reference runtime, where an optional tensor and a tensor are the same thing at run
 * time); an empty optional is the empty tuple `()`, which the importer remembers as "none"
 * (ox_none / ox_is_none) so that OptionalHasElement is a constant and OptionalGetElement of
 * it an error naming the node.  A sequence- or optional-typed graph input needs its value
 * when importing (GPOnnxOptions.structured; the conformance runner reads it from the test
 * data): its parameter is typed by that value's structure -- e.g. a sequence of two float32
 * tensors of shape (2, 3) is `%x: (Tensor[(2, 3), float32], Tensor[(2, 3), float32])`, an
 * empty optional `%x: ()` -- and the evaluator takes a tuple-typed parameter's tensors
 * flattened in order (gp_eval_function), as it gives a tuple result flattened.  Graph
 * outputs are the same tuples; a graph with several outputs returns a tuple of them. */
#include "frontend/onnx/onnx_impl.h"
#include "eval/eval.h"
#include "common/checked.h"

#include <assert.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct OxImporter {
  const char *path; /* for messages */
  char *base_dir;   /* of external data */
  GPStrMap values;  /* ONNX value name -> GPExpr (owned reference) */
  GPStrMap known;   /* graph input name -> GPTensor (borrowed from the options) */
  GPPtrMap var_known; /* GPVar -> GPTensor (borrowed) */
  GPPtrMap memo;    /* GPExpr -> GPTensor (owned): compile-time values */
  GPVec memo_keys;  /* the memo's keys, retained so that no address is reused */
  GPVec pool;       /* expressions made for the current node (owned references) */
  GPVec objects;    /* tensors handed to converters (owned until the end) */
  GPVec allocs;     /* ox_alloc blocks */
  const Gponnx__ModelProto *model; /* opsets */
  GPStrMap structured; /* graph input name -> GPOnnxValue (borrowed from the options) */
  GPPtrMap none;      /* expressions that are empty optionals (keys retained in none_keys) */
  GPVec none_keys;
  GPPtrMap tensors; /* TensorProto -> GPTensor (borrowed from objects): a subgraph converted
                     * several times (an unrolled Scan or Loop) reads its tensors once */
  int32_t depth;    /* subgraphs being converted (nesting) */
  uint32_t line;    /* the location of what the builders make: see made() */
  /* gp_onnx_import_file: the mapped file and where each top-level initializer's raw_data lies
   * in it (ox_skeleton; len 0: in the proto) */
  OxMapping *map;
  const uint8_t *map_base;
  const OxSpan *spans;
  size_t nspans;
};

/* Subgraphs nest at most this deep (If inside Loop inside ...). */
#define OX_MAX_SUBGRAPH_DEPTH 32

/* ------------------------------------------------------------------------------------------ */
/* Errors                                                                                      */

static _Thread_local bool attr_type_error;

int ox_unsupported(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gp_error_setv(GP_ERR_UNSUPPORTED, fmt, ap);
  va_end(ap);
  return -1;
}

int ox_invalid(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gp_error_setv(GP_ERR_VALUE, fmt, ap);
  va_end(ap);
  return -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Pools                                                                                       */

void *ox_alloc(OxImporter *im, size_t size) {
  void *p = gp_calloc(1, size ? size : 1);
  gp_vec_push(&im->allocs, p);
  return p;
}

int ox_prod(int64_t limit, int64_t *out, const char *what, int32_t n, const int64_t *f) {
  int64_t p = 1;
  for (int32_t i = 0; i < n; i++) {
    if (f[i] < 0) return ox_invalid("%s: a negative extent %lld", what, (long long)f[i]);
    if (!gp_mul_i64(p, f[i], &p) || p > limit)
      return ox_unsupported("%s: %d extents whose product overflows or exceeds %lld", what, (int)n, (long long)limit);
  }
  *out = p;
  return 0;
}

void *ox_alloc_n(OxImporter *im, int64_t count, int64_t extra, size_t elem, const char *what) {
  int64_t total;
  size_t bytes;
  if (count < 0 || extra < 0 || !gp_add_i64(count, extra, &total) || total > GP_MAX_TENSOR_ELEMS ||
      !gp_count_bytes(total, elem, &bytes) || bytes > OX_MAX_SCRATCH_BYTES) {
    ox_unsupported("%s: %lld elements of %zu bytes are more than the importer allocates", what, (long long)count, elem);
    return NULL;
  }
  return ox_alloc(im, bytes);
}

static GPExpr *pooled(OxImporter *im, GPExpr *e) {
  if (e) gp_vec_push(&im->pool, e);
  return e;
}

/* A node a builder just made (its only reference is ours), given the location of the top-level
 * node being converted: line = its 1-based position in the model's graph, col 1 (so a pass's
 * message reads "model.onnx:153:1"); nodes of a subgraph have the location of the node that
 * holds it; initializers and graph inputs have none. */
static GPExpr *made(OxImporter *im, GPExpr *e) {
  if (e) {
    assert(!gp_maybe_shared(e)); /* fresh: no one else sees it yet */
    e->line = im->line;
    e->col = im->line ? 1 : 0;
  }
  return pooled(im, e);
}

/* Release the pool's expressions from index mark on (a subgraph's nodes release theirs while
 * the node that holds the subgraph keeps its own). */
static void pool_release_to(OxImporter *im, size_t mark) {
  for (size_t i = mark; i < im->pool.len; i++) gp_release(im->pool.items[i]);
  im->pool.len = mark;
}

static void pool_release(OxImporter *im) { pool_release_to(im, 0); }

/* ------------------------------------------------------------------------------------------ */
/* Inputs                                                                                      */

GPExpr *ox_in(const OxNode *n, int32_t i) { return i >= 0 && i < n->nin ? n->in[i] : NULL; }

GPExpr *ox_req(const OxNode *n, int32_t i) {
  GPExpr *e = ox_in(n, i);
  if (!e) ox_invalid("input %d is required but missing", (int)i);
  return e;
}

int ox_static(const GPExpr *e, const char *what) {
  const GPType *t = e->checked_type;
  if (t->kind != GP_TYPE_TENSOR) return ox_invalid("%s is not a tensor", what);
  for (int32_t i = 0; i < t->n; i++)
    if (t->tensor.shape[i] == GP_DIM_ANY)
      return ox_unsupported("%s has an unknown dimension %d (fix it with --shape)", what, (int)i);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Compile-time values                                                                         */

static const GPOp *op_shape_of;

/* The value of a leaf, a new reference, or NULL (no error) when e is not a leaf we can value. */
static GPTensor *leaf_value(OxImporter *im, GPExpr *e) {
  int32_t k = gp_kind(e);
  if (k == GP_TI_CONSTANT) return gp_retain(((GPConstant *)e)->data);
  if (k == GP_TI_VAR) {
    GPTensor *t = gp_map_get(&im->var_known, e);
    return t ? gp_retain(t) : NULL;
  }
  if (k == GP_TI_CALL && ((GPCall *)e)->op == (GPExpr *)op_shape_of) {
    GPCall *c = (GPCall *)e;
    const GPType *at = c->args[0]->checked_type;
    if (at->kind != GP_TYPE_TENSOR) return NULL;
    for (int32_t i = 0; i < at->n; i++)
      if (at->tensor.shape[i] == GP_DIM_ANY) return NULL;
    DLDataType dt = e->checked_type->tensor.dtype;
    int64_t n = at->n;
    GPTensor *t = gp_tensor_alloc(dt, 1, &n, true);
    for (int32_t i = 0; i < at->n; i++) {
      if (dt.bits == 64) ((int64_t *)t->dl.data)[i] = at->tensor.shape[i];
      else ((int32_t *)t->dl.data)[i] = (int32_t)at->tensor.shape[i];
    }
    return t;
  }
  return NULL;
}

/* Evaluate e (a tensor-typed expression) bottom-up with an explicit stack, memoizing every
 * tensor-valued node.  Tuples are valued field by field through their get-items. */
static GPTensor *const_eval(OxImporter *im, GPExpr *root, const char *what) {
  GPTensor *have = gp_map_get(&im->memo, root);
  if (have) return have;
  GPVec stack = {0};
  gp_vec_push(&stack, root);
  GPTensor *result = NULL;
  while (stack.len) {
    GPExpr *e = stack.items[stack.len - 1];
    if (gp_map_get(&im->memo, e)) {
      stack.len--;
      continue;
    }
    GPTensor *v = leaf_value(im, e);
    if (!v) {
      int32_t k = gp_kind(e);
      /* The node whose arguments are evaluated: a call of an op, or a get-item of a call. */
      GPCall *c = NULL;
      int32_t item = -1;
      if (k == GP_TI_CALL) c = (GPCall *)e;
      else if (k == GP_TI_TUPLE_GET_ITEM && gp_kind(((GPTupleGetItem *)e)->tuple) == GP_TI_CALL) {
        c = (GPCall *)((GPTupleGetItem *)e)->tuple;
        item = ((GPTupleGetItem *)e)->index;
      } else if (k == GP_TI_TUPLE_GET_ITEM && gp_kind(((GPTupleGetItem *)e)->tuple) == GP_TI_TUPLE) {
        GPExpr *f = ((GPTuple *)((GPTupleGetItem *)e)->tuple)->fields[((GPTupleGetItem *)e)->index];
        GPTensor *fv = gp_map_get(&im->memo, f);
        if (!fv) {
          gp_vec_push(&stack, f);
          continue;
        }
        v = gp_retain(fv);
      }
      if (!v && (!c || gp_kind(c->op) != GP_TI_OP)) {
        ox_unsupported("%s must be known when importing (a shape or parameter input), but it "
                       "depends on a runtime value (%s)", what, gp_expr_kind_name(e));
        goto done;
      }
      if (!v) {
        /* Arguments first (tuple arguments field by field). */
        bool pending = false;
        for (int32_t i = 0; i < c->nargs; i++) {
          GPExpr *a = c->args[i];
          if (gp_kind(a) == GP_TI_TUPLE) {
            GPTuple *tu = (GPTuple *)a;
            for (int32_t j = 0; j < tu->n; j++)
              if (!gp_map_get(&im->memo, tu->fields[j])) {
                gp_vec_push(&stack, tu->fields[j]);
                pending = true;
              }
          } else if (!gp_map_get(&im->memo, a)) {
            gp_vec_push(&stack, a);
            pending = true;
          }
        }
        if (pending) continue;
        GPTensor *ins[256];
        const GPType *types[64];
        int32_t nin = 0;
        if (c->nargs > 64) {
          ox_unsupported("%s: a call of %d arguments cannot be evaluated when importing", what, (int)c->nargs);
          goto done;
        }
        for (int32_t i = 0; i < c->nargs; i++) {
          GPExpr *a = c->args[i];
          types[i] = a->checked_type;
          if (gp_kind(a) == GP_TI_TUPLE) {
            GPTuple *tu = (GPTuple *)a;
            for (int32_t j = 0; j < tu->n && nin < 256; j++) ins[nin++] = gp_map_get(&im->memo, tu->fields[j]);
          } else if (nin < 256) {
            ins[nin++] = gp_map_get(&im->memo, a);
          }
        }
        GPTensor *outs[64];
        int32_t nout = 0;
        const GPType *ot;
        if (gp_eval_op((const GPOp *)c->op, c->attrs, c->nargs, types, nin, ins, 1, &ot, outs, 64, &nout) != 0) {
          gp_error_prefix("evaluating %s when importing", what);
          goto done;
        }
        /* Memoize the call's outputs: a tensor result under the call, tuple fields under the
         * get-item asked for (others are recomputed if asked; rare). */
        for (int32_t j = 0; j < nout; j++) {
          if ((item < 0 && j == 0) || j == item) v = outs[j];
          else gp_release(outs[j]);
        }
        if (!v) {
          ox_invalid("%s: field %d of a %d-field result", what, (int)item, (int)nout);
          goto done;
        }
      }
    }
    gp_map_put(&im->memo, e, v);
    gp_vec_push(&im->memo_keys, gp_retain(e));
    stack.len--;
  }
  result = gp_map_get(&im->memo, root);
done:
  gp_vec_free(&stack);
  return result;
}

GPTensor *ox_const(OxImporter *im, GPExpr *e, const char *what) {
  if (!e) {
    ox_invalid("%s is missing", what);
    return NULL;
  }
  if (gp_kind(e) == GP_TI_CONSTANT) return ((GPConstant *)e)->data;
  return const_eval(im, e, what);
}

int ox_const_ints(OxImporter *im, GPExpr *e, const char *what, const int64_t **vals, int32_t *count) {
  GPTensor *t = ox_const(im, e, what);
  if (!t) return -1;
  DLDataType dt = t->dl.dtype;
  if (t->dl.ndim > 1 || !(dt.code == kDLInt || (dt.code == kDLUInt && dt.bits > 1)))
    return ox_invalid("%s must be a 0-d or 1-d integer tensor", what);
  int64_t n = t->dl.ndim ? t->dl.shape[0] : 1;
  if (n > INT32_MAX) return ox_invalid("%s has too many values", what);
  int64_t *v = ox_alloc(im, (size_t)n * sizeof(int64_t));
  for (int64_t i = 0; i < n; i++) v[i] = gp_tensor_get_i64(t, i);
  *vals = v;
  *count = (int32_t)n;
  return 0;
}

int ox_const_scalar(OxImporter *im, GPExpr *e, const char *what, double *v) {
  GPTensor *t = ox_const(im, e, what);
  if (!t) return -1;
  int64_t n = 1;
  for (int32_t i = 0; i < t->dl.ndim; i++) n *= t->dl.shape[i];
  if (n != 1) return ox_invalid("%s must have exactly one element (it has %lld)", what, (long long)n);
  *v = gp_tensor_get_f64(t, 0);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Attributes                                                                                  */

static const Gponnx__AttributeProto *find_attr(const OxNode *n, const char *name) {
  const Gponnx__NodeProto *p = n->proto;
  for (size_t i = 0; i < p->n_attribute; i++)
    if (p->attribute[i]->name && strcmp(p->attribute[i]->name, name) == 0) return p->attribute[i];
  return NULL;
}

static const char *attr_type_name(int t) {
  static const char *const names[] = {"UNDEFINED", "FLOAT", "INT",    "STRING",  "TENSOR",
                                      "GRAPH",     "FLOATS", "INTS",  "STRINGS", "TENSORS",
                                      "GRAPHS",    "SPARSE_TENSOR", "SPARSE_TENSORS",
                                      "TYPE_PROTO", "TYPE_PROTOS"};
  return t >= 0 && t < (int)GP_ARRAY_LEN(names) ? names[t] : "unknown";
}

/* The attribute when it has type `want`; NULL when absent; NULL + error when typed otherwise.
 * Files that omit `type` (old exporters) are judged by which field is set. */
static const Gponnx__AttributeProto *typed_attr(const OxNode *n, const char *name, int want) {
  const Gponnx__AttributeProto *a = find_attr(n, name);
  if (!a) return NULL;
  int t = a->has_type ? (int)a->type : 0;
  if (!t) {
    if (a->has_f) t = 1;
    else if (a->has_i) t = 2;
    else if (a->has_s) t = 3;
    else if (a->t) t = 4;
    else if (a->g) t = 5;
    else if (a->n_floats) t = 6;
    else if (a->n_ints) t = 7;
    else if (a->n_strings) t = 8;
    if (!t) t = want; /* an empty list */
  }
  if (t == want) return a;
  if (!attr_type_error) {
    gp_error_set(GP_ERR_VALUE, "attribute '%s' is %s, expected %s", name, attr_type_name(t),
                 attr_type_name(want));
    attr_type_error = true;
  }
  return NULL;
}

bool ox_has_attr(const OxNode *n, const char *name) { return find_attr(n, name) != NULL; }

int64_t ox_attr_int(const OxNode *n, const char *name, int64_t dflt) {
  const Gponnx__AttributeProto *a = typed_attr(n, name, GPONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  return a ? a->i : dflt;
}

double ox_attr_float(const OxNode *n, const char *name, double dflt) {
  const Gponnx__AttributeProto *a = typed_attr(n, name, GPONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  return a ? a->f : dflt;
}

const char *ox_attr_str(OxImporter *im, const OxNode *n, const char *name, const char *dflt) {
  const Gponnx__AttributeProto *a = typed_attr(n, name, GPONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
  if (!a) return dflt;
  char *s = ox_alloc(im, a->s.len + 1);
  if (a->s.len) memcpy(s, a->s.data, a->s.len);
  return s;
}

const int64_t *ox_attr_ints(const OxNode *n, const char *name, int32_t *count) {
  const Gponnx__AttributeProto *a = typed_attr(n, name, GPONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  *count = a ? (int32_t)a->n_ints : -1;
  return a ? a->ints : NULL;
}

const float *ox_attr_floats(const OxNode *n, const char *name, int32_t *count) {
  const Gponnx__AttributeProto *a = typed_attr(n, name, GPONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
  *count = a ? (int32_t)a->n_floats : -1;
  return a ? a->floats : NULL;
}

/* The tensor of TensorProto tp, read once (its raw_data is taken over by the first read);
 * borrowed (owned by im->objects). */
static GPTensor *proto_tensor(OxImporter *im, Gponnx__TensorProto *tp) {
  GPTensor *t = gp_map_get(&im->tensors, tp);
  if (t) return t;
  t = ox_tensor_from_proto(tp, im->base_dir);
  if (!t) return NULL;
  gp_vec_push(&im->objects, t);
  gp_map_put(&im->tensors, tp, t);
  return t;
}

GPTensor *ox_attr_tensor(OxImporter *im, const OxNode *n, const char *name) {
  const Gponnx__AttributeProto *a = typed_attr(n, name, GPONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
  if (!a || !a->t) return NULL;
  GPTensor *t = proto_tensor(im, a->t);
  if (!t) gp_error_prefix("attribute '%s'", name);
  return t;
}

/* ------------------------------------------------------------------------------------------ */
/* Builders                                                                                    */

GPExpr *ox_call(OxImporter *im, const char *opname, int32_t nargs, GPExpr *const *args, int32_t nattrs,
                const char *const *keys, const GPAttrValue *vals) {
  for (int32_t i = 0; i < nargs; i++)
    if (!args[i]) {
      if (!gp_error_kind()) gp_error_set(GP_ERR_INTERNAL, "%s: argument %d is missing", opname, (int)i);
      return NULL;
    }
  GPExpr *e = gp_call_op(opname, nargs, args, nattrs, keys, vals);
  if (!e) return NULL;
  GPCall *c = (GPCall *)e;
  const GPType *types[64];
  if (nargs > 64) {
    gp_release(e);
    gp_error_set(GP_ERR_UNSUPPORTED, "%s: %d arguments (at most 64)", opname, (int)nargs);
    return NULL;
  }
  for (int32_t i = 0; i < nargs; i++) types[i] = args[i]->checked_type;
  const GPType *t = gp_op_infer((const GPOp *)c->op, c->attrs, types, nargs);
  if (!t) {
    gp_release(e);
    return NULL;
  }
  c->base.checked_type = t;
  return made(im, e);
}

GPExpr *ox_op1(OxImporter *im, const char *op, GPExpr *a) { return ox_call(im, op, 1, &a, 0, NULL, NULL); }

GPExpr *ox_op2(OxImporter *im, const char *op, GPExpr *a, GPExpr *b) {
  GPExpr *args[2] = {a, b};
  return ox_call(im, op, 2, args, 0, NULL, NULL);
}

GPExpr *ox_constant(OxImporter *im, GPTensor *t) {
  if (!t) return NULL;
  GPConstant *c = gp_constant_new(t);
  gp_release(t);
  return c ? made(im, &c->base) : NULL;
}

GPExpr *ox_scalar(OxImporter *im, DLDataType dt, double v) {
  GPTensor *t = gp_tensor_scalar_f64(dt, v);
  return t ? ox_constant(im, t) : NULL;
}

GPExpr *ox_ints_const(OxImporter *im, int32_t n, const int64_t *v) {
  int64_t len = n;
  GPTensor *t = gp_tensor_alloc(GP_DT_I64, 1, &len, true);
  if (n) memcpy(t->dl.data, v, (size_t)n * sizeof(int64_t));
  return ox_constant(im, t);
}

GPExpr *ox_tuple(OxImporter *im, int32_t n, GPExpr *const *fields) {
  const GPType *types[256];
  if (n > 256) {
    gp_error_set(GP_ERR_UNSUPPORTED, "a tuple of %d fields (at most 256)", (int)n);
    return NULL;
  }
  for (int32_t i = 0; i < n; i++) {
    if (!fields[i]) return NULL;
    types[i] = fields[i]->checked_type;
  }
  GPTuple *t = gp_tuple_new(n, fields);
  if (!t) return NULL;
  t->base.checked_type = gp_type_tuple(n, types);
  return made(im, &t->base);
}

void ox_mark_none(OxImporter *im, GPExpr *e) {
  if (!e || gp_map_get(&im->none, e)) return;
  gp_map_put(&im->none, e, (void *)1);
  gp_vec_push(&im->none_keys, gp_retain(e));
}

bool ox_is_none(OxImporter *im, const GPExpr *e) { return e && gp_map_get(&im->none, e) != NULL; }

GPExpr *ox_none(OxImporter *im) {
  GPExpr *e = ox_tuple(im, 0, NULL);
  ox_mark_none(im, e);
  return e;
}

GPExpr *ox_get_item(OxImporter *im, GPExpr *tuple, int32_t index) {
  if (!tuple) return NULL;
  const GPType *tt = tuple->checked_type;
  if (tt->kind != GP_TYPE_TUPLE || index < 0 || index >= tt->n) {
    gp_error_set(GP_ERR_INTERNAL, "get-item %d of a value that is not a tuple of that many fields", (int)index);
    return NULL;
  }
  GPTupleGetItem *g = gp_tuple_get_item_new(tuple, index);
  if (!g) return NULL;
  g->base.checked_type = tt->tuple.fields[index];
  return made(im, &g->base);
}

GPExpr *ox_cast(OxImporter *im, GPExpr *e, DLDataType dt) {
  if (!e) return NULL;
  if (gp_dtype_eq(ox_dtype(e), dt)) return e;
  const char *k[] = {"dtype"};
  GPAttrValue v[] = {gp_attr_dtype(dt)};
  return ox_call(im, "cast", 1, &e, 1, k, v);
}

/* ------------------------------------------------------------------------------------------ */
/* Converter lookup                                                                            */

typedef struct {
  char *key; /* "domain\x1fop_type" */
  const OxConverter *entries[8];
  int32_t n;
  const OxConverter *table; /* which table defines it */
} CvSlot;

static GPStrMap cv_map;
static pthread_once_t cv_once = PTHREAD_ONCE_INIT;
static CvSlot *cv_slots;
static size_t cv_nslots;

static const char *norm_domain(const char *d) {
  return !d || !*d || strcmp(d, "ai.onnx") == 0 ? "" : d;
}

static char *cv_key(const char *domain, const char *op) {
  GPBuf b = {0};
  gp_buf_printf(&b, "%s\x1f%s", norm_domain(domain), op);
  return gp_buf_take(&b);
}

static void cv_build(void) {
  const OxConverter *const tables[] = {ox_cv_core,  ox_cv_math,    ox_cv_reduce, ox_cv_tensor,
                                       ox_cv_nn,    ox_cv_extra,   ox_cv_control, ox_cv_seq};
  size_t total = 0;
  for (size_t t = 0; t < GP_ARRAY_LEN(tables); t++)
    for (const OxConverter *c = tables[t]; c->op_type; c++) total++;
  cv_slots = calloc(total ? total : 1, sizeof *cv_slots);
  if (!cv_slots) abort();
  for (size_t t = 0; t < GP_ARRAY_LEN(tables); t++)
    for (const OxConverter *c = tables[t]; c->op_type; c++) {
      char *key = cv_key(c->domain, c->op_type);
      CvSlot *s = gp_strmap_get(&cv_map, key);
      if (!s) {
        s = &cv_slots[cv_nslots++];
        s->key = key;
        s->table = tables[t];
        gp_strmap_put(&cv_map, key, s);
      } else {
        gp_free(key);
        if (s->table != tables[t] || s->n == (int32_t)GP_ARRAY_LEN(s->entries)) {
          fprintf(stderr, "graphpass: ONNX converter tables: %s defined twice or too often\n", c->op_type);
          abort();
        }
      }
      s->entries[s->n++] = c;
    }
}

/* The converter for (domain, op) at `opset`; NULL + GP_ERR_UNSUPPORTED. */
static const OxConverter *cv_find(const char *domain, const char *op, int64_t opset) {
  pthread_once(&cv_once, cv_build);
  char *key = cv_key(domain, op);
  CvSlot *s = gp_strmap_get(&cv_map, key);
  gp_free(key);
  const char *d = *norm_domain(domain) ? domain : "ai.onnx";
  if (!s) {
    gp_error_set(GP_ERR_UNSUPPORTED, "unsupported op %s (domain '%s', opset %lld)", op, d, (long long)opset);
    return NULL;
  }
  const OxConverter *best = NULL;
  int32_t lowest = INT32_MAX;
  for (int32_t i = 0; i < s->n; i++) {
    if (s->entries[i]->since <= opset && (!best || s->entries[i]->since > best->since)) best = s->entries[i];
    if (s->entries[i]->since < lowest) lowest = s->entries[i]->since;
  }
  if (!best)
    gp_error_set(GP_ERR_UNSUPPORTED, "unsupported op %s at opset %lld (domain '%s'; supported from opset %d)",
                 op, (long long)opset, d, (int)lowest);
  return best;
}

/* ------------------------------------------------------------------------------------------ */
/* The graph                                                                                   */

char *gp_onnx_param_name(const char *s) {
  size_t n = strlen(s);
  char *out = gp_malloc(n + 2);
  size_t j = 0;
  if (!n || (s[0] >= '0' && s[0] <= '9')) out[j++] = '_';
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '/';
    out[j++] = ok ? c : '_';
  }
  out[j] = 0;
  return out;
}

static int64_t model_opset(const Gponnx__ModelProto *m, const char *domain) {
  const char *want = norm_domain(domain);
  for (size_t i = 0; i < m->n_opset_import; i++)
    if (strcmp(norm_domain(m->opset_import[i]->domain), want) == 0)
      return m->opset_import[i]->has_version ? m->opset_import[i]->version : 1;
  return -1;
}

/* The type of a sequence / optional value: a tuple of the elements' types for a sequence, the
 * value's type for an optional that holds one, () for an empty one (post-order over an
 * explicit stack). */
static const GPType *value_type(const GPOnnxValue *root) {
  GPVec order = {0}, st = {0};
  gp_vec_push(&st, (void *)root);
  while (st.len) {
    const GPOnnxValue *x = gp_vec_pop(&st);
    gp_vec_push(&order, (void *)x);
    for (int32_t i = 0; i < x->n; i++) gp_vec_push(&st, &x->items[i]);
  }
  GPPtrMap types = {0};
  for (size_t k = order.len; k-- > 0;) { /* children come after their parent in `order` */
    const GPOnnxValue *x = order.items[k];
    const GPType *t;
    if (x->kind == GP_ONNX_TENSOR) {
      t = gp_tensor_type(x->tensor);
    } else if (x->kind == GP_ONNX_OPTIONAL && x->n == 1) {
      t = gp_map_get(&types, &x->items[0]);
    } else {
      const GPType *small[16];
      const GPType **f = x->n <= 16 ? small : gp_malloc((size_t)x->n * sizeof *f);
      for (int32_t i = 0; i < x->n; i++) f[i] = gp_map_get(&types, &x->items[i]);
      t = gp_type_tuple(x->n, f);
      if (f != small) gp_free(f);
    }
    gp_map_put(&types, (void *)x, (void *)t);
  }
  const GPType *t = gp_map_get(&types, (void *)root);
  gp_map_free(&types);
  gp_vec_free(&order);
  gp_vec_free(&st);
  return t;
}

/* The declared type of a graph input, with the options' shape override or known value; *none
 * is set for an empty optional. */
static const GPType *input_type(OxImporter *im, const Gponnx__ValueInfoProto *vi, const GPOnnxOptions *o, bool *none) {
  const char *name = vi->name;
  const Gponnx__TypeProto *tp = vi->type;
  bool seq = tp && tp->value_case == GPONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
  bool opt = tp && tp->value_case == GPONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
  if (seq || opt) {
    const GPOnnxValue *v = gp_strmap_get(&im->structured, name);
    if (!v && gp_strmap_get(&im->known, name)) {
      gp_error_set(GP_ERR_VALUE, "graph input '%s' is %s, the value given is a tensor", name,
                   seq ? "a sequence" : "an optional");
      return NULL;
    }
    if (!v) {
      gp_error_set(GP_ERR_UNSUPPORTED, "graph input '%s' is %s: its structure (%s) is part of its type in the IR, "
                   "so its value must be given when importing", name, seq ? "a sequence" : "an optional",
                   seq ? "the length" : "whether it holds a value");
      return NULL;
    }
    if ((seq && v->kind != GP_ONNX_SEQUENCE) || (opt && v->kind == GP_ONNX_TENSOR)) {
      gp_error_set(GP_ERR_VALUE, "graph input '%s' is %s, the value given is %s", name, seq ? "a sequence" : "an optional",
                   v->kind == GP_ONNX_TENSOR ? "a tensor" : v->kind == GP_ONNX_SEQUENCE ? "a sequence" : "an optional");
      return NULL;
    }
    *none = v->kind == GP_ONNX_OPTIONAL && v->n == 0;
    return value_type(v);
  }
  if (gp_strmap_get(&im->structured, name)) {
    gp_error_set(GP_ERR_VALUE, "graph input '%s' is a tensor, the value given is a sequence or an optional", name);
    return NULL;
  }
  GPTensor *known = gp_strmap_get(&im->known, name);
  if (known) return gp_tensor_type(known);
  if (!tp || tp->value_case != GPONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
    gp_error_set(GP_ERR_UNSUPPORTED, "graph input '%s' is %s (only tensors, sequences and optionals are supported)",
                 name, !tp ? "of no type" : "a map or a sparse tensor");
    return NULL;
  }
  const Gponnx__TypeProto__Tensor *tt = tp->tensor_type;
  DLDataType dt;
  if (!tt->has_elem_type) {
    gp_error_set(GP_ERR_VALUE, "graph input '%s' has no element type", name);
    return NULL;
  }
  if (ox_dtype_from_onnx(tt->elem_type, &dt) != 0) {
    gp_error_prefix("graph input '%s'", name);
    return NULL;
  }
  int64_t dims[GP_OX_MAX_RANK];
  int32_t ndim = 0;
  for (int32_t s = 0; o && s < o->nshapes; s++)
    if (strcmp(o->shapes[s].name, name) == 0) {
      if (o->shapes[s].ndim > GP_OX_MAX_RANK) {
        gp_error_set(GP_ERR_VALUE, "--shape %s: rank %d exceeds %d", name, (int)o->shapes[s].ndim, GP_OX_MAX_RANK);
        return NULL;
      }
      ndim = o->shapes[s].ndim;
      memcpy(dims, o->shapes[s].dims, (size_t)ndim * sizeof(int64_t));
      return gp_type_tensor(dt, ndim, dims);
    }
  if (!tt->shape) {
    gp_error_set(GP_ERR_UNSUPPORTED, "graph input '%s' has no shape (give one with --shape %s=...)", name, name);
    return NULL;
  }
  if (tt->shape->n_dim > GP_OX_MAX_RANK) {
    gp_error_set(GP_ERR_UNSUPPORTED, "graph input '%s': rank %zu exceeds %d", name, tt->shape->n_dim, GP_OX_MAX_RANK);
    return NULL;
  }
  ndim = (int32_t)tt->shape->n_dim;
  for (int32_t i = 0; i < ndim; i++) {
    const Gponnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
    dims[i] = d->value_case == GPONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0 ? d->dim_value
                                                                                                          : GP_DIM_ANY;
  }
  return gp_type_tensor(dt, ndim, dims);
}

/* The ops whose inputs may be sequences or optionals (cv_seq.c's, and the ones that pass values
 * through: Identity, Loop's states). */
static bool takes_sequences(const OxNode *n) {
  static const char *const ops[] = {"Identity", "Loop", "If"};
  if (*n->domain) return false;
  for (size_t i = 0; i < GP_ARRAY_LEN(ops); i++)
    if (strcmp(n->op_type, ops[i]) == 0) return true;
  for (const OxConverter *c = ox_cv_seq; c->op_type; c++)
    if (strcmp(n->op_type, c->op_type) == 0) return true;
  return false;
}

static int convert_node_at(OxImporter *im, const Gponnx__NodeProto *p, size_t index) {
  const Gponnx__ModelProto *m = im->model;
  size_t mark = im->pool.len;
  OxNode n = {.proto = p};
  n.op_type = p->op_type ? p->op_type : "";
  n.domain = norm_domain(p->domain);
  n.name = p->name && *p->name ? p->name : p->n_output && *p->output[0] ? p->output[0] : "";
  char idx[32];
  if (!*n.name) {
    snprintf(idx, sizeof idx, "#%zu", index);
    n.name = idx;
  }
  n.opset = model_opset(m, n.domain);
  int rc = -1;
  GPExpr *ins[512], *outs[512] = {0};
  if (p->n_input > 512 || p->n_output > 512) {
    gp_error_set(GP_ERR_UNSUPPORTED, "%zu inputs and %zu outputs (at most 512 each)", p->n_input, p->n_output);
    goto fail;
  }
  if (!*n.op_type) {
    gp_error_set(GP_ERR_VALUE, "no op_type");
    goto fail;
  }
  if (n.opset < 0) {
    gp_error_set(GP_ERR_UNSUPPORTED, "unsupported op %s: the model imports no opset of domain '%s'", n.op_type,
                 *n.domain ? n.domain : "ai.onnx");
    goto fail;
  }
  n.nin = (int32_t)p->n_input;
  n.nout = (int32_t)p->n_output;
  for (int32_t i = 0; i < n.nin; i++) {
    const char *iname = p->input[i];
    if (!*iname) {
      ins[i] = NULL;
      continue;
    }
    ins[i] = gp_strmap_get(&im->values, iname);
    if (!ins[i]) {
      gp_error_set(GP_ERR_VALUE, "input '%s' is not produced by an earlier node, an initializer or a graph input", iname);
      goto fail;
    }
  }
  n.in = ins;
  const OxConverter *cv = cv_find(n.domain, n.op_type, n.opset);
  if (!cv) goto fail;
  /* Sequences and optionals (tuples, see the header) go only to the ops that take them; every
   * other converter reads its inputs as tensors. */
  if (!takes_sequences(&n))
    for (int32_t i = 0; i < n.nin; i++)
      if (ins[i] && ins[i]->checked_type->kind != GP_TYPE_TENSOR) {
        gp_error_set(GP_ERR_VALUE, "input %d ('%s') is %s, and %s takes tensors", (int)i, p->input[i],
                     ox_is_none(im, ins[i]) ? "an empty optional" : "a sequence", n.op_type);
        goto fail;
      }
  attr_type_error = false;
  rc = cv->fn(im, &n, outs);
  if (rc == 0 && attr_type_error) rc = -1; /* the getter's error is pending */
  if (rc != 0) {
    if (!gp_error_kind()) gp_error_set(GP_ERR_INTERNAL, "converter failed without saying why");
    goto fail;
  }
  for (int32_t i = 0; i < n.nout; i++) {
    const char *oname = p->output[i];
    if (!*oname) continue;
    if (!outs[i]) {
      gp_error_set(GP_ERR_UNSUPPORTED, "output %d ('%s') is not supported", (int)i, oname);
      rc = -1;
      goto fail;
    }
    if (gp_strmap_has(&im->values, oname)) {
      gp_error_set(GP_ERR_VALUE, "output '%s' is already defined (ONNX graphs assign each name once)", oname);
      rc = -1;
      goto fail;
    }
    gp_strmap_put(&im->values, oname, gp_retain(outs[i]));
  }
  pool_release_to(im, mark);
  return 0;
fail:
  gp_error_prefix("node '%s' (%s%s%s, opset %lld)", n.name, *n.domain ? n.domain : "", *n.domain ? "." : "",
                  n.op_type, (long long)n.opset);
  pool_release_to(im, mark);
  return -1;
}

/* Node `index` of the graph being converted; what it makes has its location when the graph is
 * the model's own (see made()). */
static int convert_node(OxImporter *im, const Gponnx__NodeProto *p, size_t index) {
  uint32_t outer = im->line;
  if (im->depth == 0) im->line = index < UINT32_MAX ? (uint32_t)index + 1 : 0;
  int rc = convert_node_at(im, p, index);
  im->line = outer;
  return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Subgraphs                                                                                   */

static const Gponnx__GraphProto *graph_attr(const OxNode *n, const char *attr) {
  const Gponnx__AttributeProto *a = typed_attr(n, attr, GPONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
  if (!a) {
    if (!attr_type_error) ox_invalid("the graph attribute '%s' is missing", attr);
    return NULL;
  }
  if (!a->g) ox_invalid("attribute '%s' holds no graph", attr);
  return a->g;
}

int ox_subgraph_arity(const OxNode *n, const char *attr, int32_t *nin, int32_t *nout) {
  const Gponnx__GraphProto *g = graph_attr(n, attr);
  if (!g) return -1;
  if (g->n_input > INT32_MAX || g->n_output > INT32_MAX) return ox_invalid("attribute '%s': too many inputs", attr);
  *nin = (int32_t)g->n_input;
  *nout = (int32_t)g->n_output;
  return 0;
}

size_t ox_subgraph_size(const OxNode *n, const char *attr) {
  const Gponnx__AttributeProto *a = find_attr(n, attr);
  return a && a->g ? a->g->n_node : 0;
}

/* The names a subgraph defines (inputs, initializers, node outputs), each with what it shadows
 * of the enclosing scopes (an owned reference, or NULL). */
typedef struct Shadow {
  const char *name;
  GPExpr *outer;
} Shadow;

int ox_subgraph(OxImporter *im, const OxNode *n, const char *attr, int32_t nbind, GPExpr *const *binds,
                int32_t nout, GPExpr **out) {
  const Gponnx__GraphProto *g = graph_attr(n, attr);
  if (!g) return -1;
  if ((size_t)nbind != g->n_input)
    return ox_invalid("attribute '%s': the graph has %zu inputs, the op binds %d", attr, g->n_input, (int)nbind);
  if ((size_t)nout != g->n_output)
    return ox_invalid("attribute '%s': the graph has %zu outputs, the op needs %d", attr, g->n_output, (int)nout);
  if (im->depth >= OX_MAX_SUBGRAPH_DEPTH)
    return ox_unsupported("attribute '%s': subgraphs nested more than %d deep", attr, OX_MAX_SUBGRAPH_DEPTH);
  bool saved_attr_error = attr_type_error;
  size_t ndef = g->n_input + g->n_initializer;
  for (size_t i = 0; i < g->n_node; i++) ndef += g->node[i]->n_output;
  Shadow *sh = gp_calloc(ndef ? ndef : 1, sizeof *sh);
  size_t k = 0;
  for (size_t i = 0; i < g->n_input; i++) sh[k++].name = g->input[i]->name ? g->input[i]->name : "";
  for (size_t i = 0; i < g->n_initializer; i++) sh[k++].name = g->initializer[i]->name ? g->initializer[i]->name : "";
  for (size_t i = 0; i < g->n_node; i++)
    for (size_t j = 0; j < g->node[i]->n_output; j++) sh[k++].name = g->node[i]->output[j];
  assert(k == ndef);
  for (size_t i = 0; i < ndef; i++)
    if (*sh[i].name) sh[i].outer = gp_strmap_remove(&im->values, sh[i].name);
  int rc = -1;
  im->depth++;
  for (size_t i = 0; i < g->n_input; i++) {
    if (!*sh[i].name) {
      ox_invalid("input %zu has no name", i);
      goto done;
    }
    if (gp_strmap_has(&im->values, sh[i].name)) {
      ox_invalid("input '%s' is defined twice", sh[i].name);
      goto done;
    }
    gp_strmap_put(&im->values, sh[i].name, gp_retain(binds[i]));
  }
  for (size_t i = 0; i < g->n_initializer; i++) {
    const char *name = sh[g->n_input + i].name;
    if (!*name || gp_strmap_has(&im->values, name)) {
      ox_invalid("initializer %zu ('%s') has no name or is defined twice", i, name);
      goto done;
    }
    GPTensor *t = proto_tensor(im, g->initializer[i]);
    GPConstant *c = t ? gp_constant_new(t) : NULL;
    if (!c) {
      gp_error_prefix("initializer '%s'", name);
      goto done;
    }
    gp_strmap_put(&im->values, name, c);
  }
  for (size_t i = 0; i < g->n_node; i++)
    if (convert_node(im, g->node[i], i) != 0) goto done;
  for (int32_t i = 0; i < nout; i++) {
    const char *name = g->output[i]->name ? g->output[i]->name : "";
    GPExpr *e = gp_strmap_get(&im->values, name);
    if (!e) {
      ox_invalid("output '%s' is not produced by any node, initializer or input", name);
      goto done;
    }
    out[i] = pooled(im, gp_retain(e));
  }
  rc = 0;
done:
  im->depth--;
  for (size_t i = 0; i < ndef; i++)
    if (*sh[i].name) gp_release(gp_strmap_remove(&im->values, sh[i].name));
  for (size_t i = 0; i < ndef; i++)
    if (sh[i].outer) gp_strmap_put(&im->values, sh[i].name, sh[i].outer);
  gp_free(sh);
  if (rc != 0) gp_error_prefix("%s", attr);
  attr_type_error = saved_attr_error;
  return rc;
}

GPTensor *ox_try_const(OxImporter *im, GPExpr *e) {
  if (!e) return NULL;
  GPTensor *t = ox_const(im, e, "a value");
  if (!t && gp_error_kind() == GP_ERR_UNSUPPORTED) gp_error_clear();
  return t;
}

GPExpr *ox_if(OxImporter *im, GPExpr *cond, GPExpr *then_e, GPExpr *else_e) {
  if (!cond || !then_e || !else_e) return NULL;
  if (then_e->checked_type != else_e->checked_type) {
    GPBuf a = {0}, b = {0};
    gp_type_print(&a, then_e->checked_type);
    gp_type_print(&b, else_e->checked_type);
    ox_unsupported("the branches give different types (%s and %s) and the condition is not known when importing",
                   a.data, b.data);
    gp_buf_free(&a);
    gp_buf_free(&b);
    return NULL;
  }
  GPIf *f = gp_if_new(cond, then_e, else_e);
  if (!f) return NULL;
  f->base.checked_type = then_e->checked_type;
  return made(im, &f->base);
}

static void importer_free(OxImporter *im) {
  pool_release(im);
  gp_vec_free(&im->pool);
  /* values: every entry's value is an owned reference (keys are freed by the map) */
  for (size_t i = 0; i < im->values.cap; i++)
    if (im->values.keys && im->values.keys[i]) gp_release(im->values.vals[i]);
  gp_strmap_free(&im->values);
  gp_strmap_free(&im->known);
  gp_strmap_free(&im->structured);
  for (size_t i = 0; i < im->none_keys.len; i++) gp_release(im->none_keys.items[i]);
  gp_vec_free(&im->none_keys);
  gp_map_free(&im->none);
  gp_map_free(&im->var_known);
  for (size_t i = 0; i < im->memo_keys.len; i++) {
    gp_release(gp_map_get(&im->memo, im->memo_keys.items[i]));
    gp_release(im->memo_keys.items[i]);
  }
  gp_vec_free(&im->memo_keys);
  gp_map_free(&im->memo);
  for (size_t i = 0; i < im->objects.len; i++) gp_release(im->objects.items[i]);
  gp_vec_free(&im->objects);
  for (size_t i = 0; i < im->allocs.len; i++) gp_free(im->allocs.items[i]);
  gp_vec_free(&im->allocs);
  gp_map_free(&im->tensors);
  gp_free(im->base_dir);
}

static GPModule *import_model(OxImporter *im, Gponnx__ModelProto *m, const GPOnnxOptions *o) {
  const Gponnx__GraphProto *g = m->graph;
  if (!g) {
    gp_error_set(GP_ERR_VALUE, "the model has no graph");
    return NULL;
  }
  if (model_opset(m, "") < 0 && m->n_opset_import == 0) {
    gp_error_set(GP_ERR_VALUE, "the model imports no opset");
    return NULL;
  }
  if (o && o->value_names)
    for (int32_t i = 0; i < o->nvalues; i++) {
      if (o->structured && o->structured[i]) gp_strmap_put(&im->structured, o->value_names[i], (void *)o->structured[i]);
      else gp_strmap_put(&im->known, o->value_names[i], o->values[i]);
    }
  /* Initializers: constants. */
  for (size_t i = 0; i < g->n_initializer; i++) {
    Gponnx__TensorProto *tp = g->initializer[i];
    if (!tp->name || !*tp->name) {
      gp_error_set(GP_ERR_VALUE, "initializer %zu has no name", i);
      return NULL;
    }
    const OxSpan *sp = i < im->nspans && im->spans[i].len ? &im->spans[i] : NULL;
    OxRawView view = {im->map, sp ? im->map_base + sp->off : NULL, sp ? sp->len : 0};
    GPTensor *t = ox_tensor_from_proto_view(tp, im->base_dir, sp ? &view : NULL);
    if (!t) {
      gp_error_prefix("initializer '%s'", tp->name);
      return NULL;
    }
    GPConstant *c = gp_constant_new(t);
    gp_release(t);
    if (!c) return NULL;
    GPExpr *old = gp_strmap_get(&im->values, tp->name);
    if (old) {
      gp_release(c);
      gp_error_set(GP_ERR_VALUE, "initializer '%s' is defined twice", tp->name);
      return NULL;
    }
    gp_strmap_put(&im->values, tp->name, c);
  }
  /* Graph inputs that are not initializers: parameters of @main. */
  GPVec params = {0};
  GPModule *mod = NULL;
  for (size_t i = 0; i < g->n_input; i++) {
    const Gponnx__ValueInfoProto *vi = g->input[i];
    if (!vi->name || !*vi->name) {
      gp_error_set(GP_ERR_VALUE, "graph input %zu has no name", i);
      goto out;
    }
    if (gp_strmap_has(&im->values, vi->name)) continue; /* an initializer: a constant */
    if (o && !o->value_names && (int32_t)params.len < o->nvalues) {
      if (o->structured && o->structured[params.len])
        gp_strmap_put(&im->structured, vi->name, (void *)o->structured[params.len]);
      else if (o->values[params.len])
        gp_strmap_put(&im->known, vi->name, o->values[params.len]);
    }
    bool none = false;
    const GPType *t = input_type(im, vi, o, &none);
    if (!t) goto out;
    char *pname = gp_onnx_param_name(vi->name);
    GPVar *v = gp_var_new(pname, t);
    gp_free(pname);
    if (none) ox_mark_none(im, &v->base);
    gp_vec_push(&params, v);
    gp_strmap_put(&im->values, vi->name, gp_retain(v));
    GPTensor *known = gp_strmap_get(&im->known, vi->name);
    if (known) gp_map_put(&im->var_known, v, known);
  }
  for (size_t i = 0; i < g->n_node; i++)
    if (convert_node(im, g->node[i], i) != 0) goto out;
  if (g->n_output == 0) {
    gp_error_set(GP_ERR_VALUE, "the graph has no outputs");
    goto out;
  }
  GPExpr *body;
  GPExpr **fields = gp_malloc(g->n_output * sizeof *fields);
  for (size_t i = 0; i < g->n_output; i++) {
    const char *name = g->output[i]->name ? g->output[i]->name : "";
    fields[i] = gp_strmap_get(&im->values, name);
    if (!fields[i]) {
      gp_free(fields);
      gp_error_set(GP_ERR_VALUE, "graph output '%s' is not produced by any node, initializer or input", name);
      goto out;
    }
  }
  if (g->n_output == 1) {
    body = gp_retain(fields[0]);
  } else {
    body = ox_tuple(im, (int32_t)g->n_output, fields);
    if (body) gp_retain(body);
  }
  gp_free(fields);
  pool_release(im);
  if (!body) goto out;
  GPFunctionExpr *fn = gp_function_new((int32_t)params.len, (GPVar *const *)params.items, body, body->checked_type, NULL);
  gp_release(body);
  if (!fn) goto out;
  {
    const GPType *ptypes[1024];
    const GPType **pt = params.len <= 1024 ? ptypes : gp_malloc(params.len * sizeof *pt);
    for (size_t i = 0; i < params.len; i++) pt[i] = ((GPExpr *)params.items[i])->checked_type;
    fn->base.checked_type = gp_type_func((int32_t)params.len, pt, body->checked_type);
    if (pt != ptypes) gp_free(pt);
  }
  mod = gp_module_new(im->path);
  if (gp_module_add(mod, "main", fn, false) != 0) {
    gp_release(mod);
    mod = NULL;
  }
  gp_release(fn);
out:
  for (size_t i = 0; i < params.len; i++) gp_release(params.items[i]);
  gp_vec_free(&params);
  return mod;
}

/* Import the serialized model at data; with `map`, data is the skeleton (ox_skeleton) of the
 * mapped file and spans say where the initializers' weights lie in it. */
static GPModule *import_bytes(const void *data, size_t len, const char *path, const GPOnnxOptions *opts,
                              OxMapping *map, const uint8_t *map_base, const OxSpan *spans, size_t nspans) {
  gp_ops_init();
  if (!op_shape_of) op_shape_of = gp_op_find("shape_of");
  const char *src = path ? path : "<memory>";
  Gponnx__ModelProto *m = gponnx__model_proto__unpack(NULL, len, data);
  if (!m) {
    gp_error_set(GP_ERR_PARSE, "%s: not an ONNX model (protobuf parse failed: the file is malformed or truncated)", src);
    return NULL;
  }
  OxImporter im = {.path = src, .model = m, .map = map, .map_base = map_base, .spans = spans, .nspans = nspans};
  im.base_dir = gp_strdup(src);
  char *slash = strrchr(im.base_dir, '/');
  if (slash) *slash = 0;
  else strcpy(im.base_dir, ".");
  GPModule *mod = import_model(&im, m, opts);
  if (!mod) gp_error_prefix("%s", src);
  importer_free(&im);
  gponnx__model_proto__free_unpacked(m, NULL);
  return mod;
}

GPModule *gp_onnx_import(const void *data, size_t len, const char *path, const GPOnnxOptions *opts) {
  return import_bytes(data, len, path, opts, NULL, NULL, NULL, 0);
}

/* The file is mapped, not read: its initializers' weights stay in the mapping and constants
 * view them in place (the mapping lives while any of them does).  A file that cannot be mapped
 * (or is not protobuf) is read as before. */
GPModule *gp_onnx_import_file(const char *path, const GPOnnxOptions *opts) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  void *base = MAP_FAILED;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
    base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (fd >= 0) close(fd);
  if (base != MAP_FAILED) {
    size_t size = (size_t)st.st_size;
    OxMapping *map = ox_mapping_new(base, size);
    uint8_t *skel = NULL;
    size_t skel_len = 0, nspans = 0;
    OxSpan *spans = NULL;
    GPModule *m;
    if (ox_skeleton(base, size, &skel, &skel_len, &spans, &nspans) == 0)
      m = import_bytes(skel, skel_len, path, opts, map, base, spans, nspans);
    else
      m = import_bytes(base, size, path, opts, NULL, NULL, NULL, 0);
    gp_free(skel);
    gp_free(spans);
    ox_mapping_release(map);
    return m;
  }
  void *data;
  size_t len;
  if (ox_read_whole_file(path, &data, &len) != 0) return NULL;
  GPModule *m = gp_onnx_import(data, len, path, opts);
  gp_free(data);
  return m;
}

static GPOnnxValueKind type_kind(const Gponnx__TypeProto *tp) {
  if (tp && tp->value_case == GPONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) return GP_ONNX_SEQUENCE;
  if (tp && tp->value_case == GPONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE) return GP_ONNX_OPTIONAL;
  return GP_ONNX_TENSOR; /* a tensor, or a type the importer reports itself */
}

int gp_onnx_io_kinds(const char *path, int32_t *nin, GPOnnxValueKind **ins, int32_t *nout, GPOnnxValueKind **outs) {
  *nin = *nout = 0;
  *ins = *outs = NULL;
  void *data;
  size_t len;
  if (ox_read_whole_file(path, &data, &len) != 0) return -1;
  Gponnx__ModelProto *m = gponnx__model_proto__unpack(NULL, len, data);
  gp_free(data);
  if (!m || !m->graph) {
    gp_error_set(GP_ERR_PARSE, "%s: not an ONNX model (%s)", path,
                 m ? "it has no graph" : "protobuf parse failed: the file is malformed or truncated");
    if (m) gponnx__model_proto__free_unpacked(m, NULL);
    return -1;
  }
  const Gponnx__GraphProto *g = m->graph;
  GPStrMap inits = {0};
  for (size_t i = 0; i < g->n_initializer; i++)
    if (g->initializer[i]->name) gp_strmap_put(&inits, g->initializer[i]->name, (void *)1);
  *ins = gp_malloc((g->n_input ? g->n_input : 1) * sizeof **ins);
  *outs = gp_malloc((g->n_output ? g->n_output : 1) * sizeof **outs);
  for (size_t i = 0; i < g->n_input; i++)
    if (!g->input[i]->name || !gp_strmap_has(&inits, g->input[i]->name)) (*ins)[(*nin)++] = type_kind(g->input[i]->type);
  for (size_t i = 0; i < g->n_output; i++) (*outs)[(*nout)++] = type_kind(g->output[i]->type);
  gp_strmap_free(&inits);
  gponnx__model_proto__free_unpacked(m, NULL);
  return 0;
}
