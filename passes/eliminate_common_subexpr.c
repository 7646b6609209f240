/* eliminate_common_subexpr.c -- EliminateCommonSubexpr (opt-level 3, requires InferType),
 * TVM v0.12's eliminate_common_subexpr.cc:
 *  - one host rewrite per function, children first; the table of earlier expressions is one
 *    per global function and spans its nested functions (Primitive ones included: TVM's
 *    MixedModeMutator visits everything, with one expr_map_); global functions with a
 *    `Compiler` attribute or SkipOptimization != 0 are left alone, as TVM's function passes do;
 *  - a call is replaced by an earlier one (after the earlier one's own replacement) when the
 *    callee is the same op, the attrs are structurally equal (what ir/attrs.c gp_attrs_eq
 *    decides: same keys in order, same kinds, equal values; a float equals itself when both are
 *    NaN; float arrays compare element by element with ==) and every argument is equivalent:
 *    the same node, or scalar constants (rank 0, with data) of the same dtype and bytes, or --
 *    when both arguments are tuples -- tuples whose fields are pairwise the same node or equal
 *    scalar constants (TVM's IsEquivalent);
 *  - a tuple get-item is replaced by an earlier get-item of the same (rewritten) tuple node and
 *    index;
 *  - never replaced (nor offered as candidates): calls without arguments, calls whose callee is
 *    not an op, calls of stateful ops, and nodes the skip predicate rejects;
 *  - `EliminateCommonSubexpr.skip` (string, default ""): the name of a global function
 *    (GPHostAPI.func_get) called with [the node: the call, or the get-item, as TVM calls fskip
 *    on both, after its children were rewritten] that returns a bool (an int is accepted):
 *    true = leave this node alone.  A missing function, a failing call or a result that is not
 *    a bool is an error naming the function and the node.
 * Linear expected time: candidates live in one open-addressing table keyed by a hash of
 * (op, attrs, argument identities / scalar values) or (tuple, index); no recursion.  The
 * result is re-typed when a node came back untyped; the input module is never changed. */
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PASS_NAME "EliminateCommonSubexpr"
#define SKIP_KEY "EliminateCommonSubexpr.skip"

typedef struct Cand {
  uint64_t hash;
  GPExpr *node; /* borrowed: a rewrite result, alive until the rewrite returns; NULL = empty */
  int32_t id;   /* its id in the function's node index */
} Cand;

typedef struct Ecse {
  const char *source;
  GPPackedFunc *skip; /* owned, may be NULL */
  const char *skip_name;
  /* Candidates of the current function.  A call (a get-item) can only equal an earlier one
   * that has the same node at its first argument that is neither a scalar constant nor a tuple
   * (at its tuple): so candidates are listed at that node's id (head / next, by id of the node
   * index), and a lookup reads the short list of one recent node instead of a table over the
   * whole function.  Calls without such an argument go to the hash table. */
  const GPExprIndex *ix;
  int32_t *rep;  /* id -> id of the node its rewrite is (itself, or the earlier equal one) */
  int32_t *head; /* id -> first candidate listed at it, or -1 */
  int32_t *next; /* candidate id -> next one at the same node, or -1 */
  Cand *slots;
  size_t len, cap; /* cap is 0 or a power of two */
  int64_t calls, items; /* replaced */
  bool untyped;         /* a rewrite of the current function came back without a type */
} Ecse;

/* ---- hashing */

static inline uint64_t mix(uint64_t h, uint64_t v) {
  v *= 0xff51afd7ed558ccdull;
  v ^= v >> 33;
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

static uint64_t hash_bytes(const void *p, size_t n, uint64_t h) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t hash_str(const char *s, uint64_t h) { return hash_bytes(s, strlen(s), h ^ 0xcbf29ce484222325ull); }

/* A float the way gp_attr_value_eq compares it: -0 == 0, NaN == NaN. */
static uint64_t float_bits(double f) {
  if (f == 0) f = 0;
  if (f != f) return 0x7ff8000000000000ull;
  uint64_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static uint64_t attrs_hash(const GPAttrs *a) {
  if (!a) return 0x51ed270b27c1d3b1ull;
  uint64_t h = (uint64_t)a->n;
  for (int32_t i = 0; i < a->n; i++) {
    const GPAttrValue *v = &a->values[i];
    h = mix(h, hash_str(a->keys[i], 1));
    h = mix(h, (uint64_t)v->kind);
    switch (v->kind) {
    case GP_ATTR_INT:
    case GP_ATTR_BOOL: h = mix(h, (uint64_t)v->i); break;
    case GP_ATTR_FLOAT: h = mix(h, float_bits(v->f)); break;
    case GP_ATTR_STR: h = mix(h, hash_str(v->s ? v->s : "", 2)); break;
    case GP_ATTR_DTYPE: h = mix(h, (uint64_t)v->dtype.code << 24 | (uint64_t)v->dtype.bits << 16 | v->dtype.lanes); break;
    case GP_ATTR_INTS:
      h = mix(h, (uint64_t)v->n);
      for (int32_t k = 0; k < v->n; k++) h = mix(h, (uint64_t)v->ints[k]);
      break;
    case GP_ATTR_FLOATS:
      h = mix(h, (uint64_t)v->n);
      for (int32_t k = 0; k < v->n; k++) h = mix(h, float_bits(v->floats[k]));
      break;
    default: break;
    }
  }
  return h;
}

/* ---- equality (the semantics of ir/attrs.c gp_attrs_eq, through the public layout) */

static bool dtype_eq(DLDataType a, DLDataType b) { return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes; }

static bool attr_value_eq(const GPAttrValue *a, const GPAttrValue *b) {
  if (a->kind != b->kind) return false;
  switch (a->kind) {
  case GP_ATTR_NONE: return true;
  case GP_ATTR_INT:
  case GP_ATTR_BOOL: return a->i == b->i;
  case GP_ATTR_FLOAT: return a->f == b->f || (a->f != a->f && b->f != b->f);
  case GP_ATTR_STR: return strcmp(a->s ? a->s : "", b->s ? b->s : "") == 0;
  case GP_ATTR_DTYPE: return dtype_eq(a->dtype, b->dtype);
  case GP_ATTR_INTS:
    return a->n == b->n && (!a->n || memcmp(a->ints, b->ints, (size_t)a->n * sizeof *a->ints) == 0);
  case GP_ATTR_FLOATS:
    if (a->n != b->n) return false;
    for (int32_t i = 0; i < a->n; i++)
      if (a->floats[i] != b->floats[i]) return false;
    return true;
  default: return false;
  }
}

static bool attrs_eq(const GPAttrs *a, const GPAttrs *b) {
  if (a == b) return true;
  if (!a || !b || a->n != b->n) return false;
  for (int32_t i = 0; i < a->n; i++)
    if (strcmp(a->keys[i], b->keys[i]) != 0 || !attr_value_eq(&a->values[i], &b->values[i])) return false;
  return true;
}

/* The bytes of a scalar constant with data (rank 0), or NULL. */
static const unsigned char *scalar_bytes(const GPExpr *e, size_t *n) {
  if (ekind(e) != GP_TI_CONSTANT) return NULL;
  const GPTensor *t = ((const GPConstant *)e)->data;
  if (!t || t->dl.ndim != 0 || !t->dl.data) return NULL;
  *n = ((size_t)t->dl.dtype.bits * t->dl.dtype.lanes + 7) / 8;
  return (const unsigned char *)t->dl.data + t->dl.byte_offset;
}

/* Whether e may be equivalent to another node than itself as an argument (arg_equivalent):
 * a scalar constant or a tuple.  From its type, without reading a constant's tensor. */
static bool arg_by_value(const GPExpr *e) {
  int32_t k = ekind(e);
  if (k == GP_TI_TUPLE) return true;
  if (k != GP_TI_CONSTANT) return false;
  const GPType *t = e->checked_type;
  return !t || (t->kind == GP_TYPE_TENSOR && t->n == 0);
}

/* TVM's IsEqualScalar: both scalar constants of the same dtype and bytes. */
static bool equal_scalar(const GPExpr *a, const GPExpr *b) {
  size_t na, nb;
  const unsigned char *pa = scalar_bytes(a, &na), *pb = scalar_bytes(b, &nb);
  if (!pa || !pb) return false;
  const DLTensor *ta = &((const GPConstant *)a)->data->dl, *tb = &((const GPConstant *)b)->data->dl;
  return dtype_eq(ta->dtype, tb->dtype) && memcmp(pa, pb, na) == 0;
}

static bool same_or_equal_scalar(const GPExpr *a, const GPExpr *b) { return a == b || equal_scalar(a, b); }

/* TVM's IsEquivalent: tuples field by field, anything else by identity or scalar value. */
static bool arg_equivalent(const GPExpr *a, const GPExpr *b) {
  if (ekind(a) == GP_TI_TUPLE && ekind(b) == GP_TI_TUPLE) {
    const GPTuple *x = (const GPTuple *)a, *y = (const GPTuple *)b;
    if (x->n != y->n) return false;
    for (int32_t i = 0; i < x->n; i++)
      if (!same_or_equal_scalar(x->fields[i], y->fields[i])) return false;
    return true;
  }
  return same_or_equal_scalar(a, b);
}

/* Hash of an argument consistent with arg_equivalent. */
static uint64_t atom_hash(const GPExpr *e) {
  size_t n;
  const unsigned char *p = scalar_bytes(e, &n);
  if (!p) return mix(0x1234567ull, (uint64_t)(uintptr_t)e);
  DLDataType dt = ((const GPConstant *)e)->data->dl.dtype;
  uint64_t h = mix(0xc0c0c0ull, (uint64_t)dt.code << 24 | (uint64_t)dt.bits << 16 | dt.lanes);
  return mix(h, hash_bytes(p, n, 0xcbf29ce484222325ull));
}

static uint64_t arg_hash(const GPExpr *e) {
  if (ekind(e) != GP_TI_TUPLE) return atom_hash(e);
  const GPTuple *t = (const GPTuple *)e;
  uint64_t h = mix(0x7777ull, (uint64_t)t->n);
  for (int32_t i = 0; i < t->n; i++) h = mix(h, atom_hash(t->fields[i]));
  return h;
}

static uint64_t call_hash(const GPCall *c) {
  uint64_t h = mix(0xca11ull, (uint64_t)(uintptr_t)c->op);
  h = mix(h, attrs_hash(c->attrs));
  h = mix(h, (uint64_t)c->nargs);
  for (int32_t i = 0; i < c->nargs; i++) h = mix(h, arg_hash(c->args[i]));
  return h;
}

static uint64_t item_hash(const GPTupleGetItem *g) {
  return mix(mix(0x9e7ull, (uint64_t)(uintptr_t)g->tuple), (uint64_t)(uint32_t)g->index);
}

static bool equivalent(const GPExpr *a, const GPExpr *b) {
  if (ekind(a) != ekind(b)) return false;
  if (ekind(a) == GP_TI_TUPLE_GET_ITEM) {
    const GPTupleGetItem *x = (const GPTupleGetItem *)a, *y = (const GPTupleGetItem *)b;
    return x->tuple == y->tuple && x->index == y->index;
  }
  const GPCall *x = (const GPCall *)a, *y = (const GPCall *)b;
  if (x->op != y->op || x->nargs != y->nargs || !attrs_eq(x->attrs, y->attrs)) return false;
  for (int32_t i = 0; i < x->nargs; i++)
    if (!arg_equivalent(x->args[i], y->args[i])) return false;
  return true;
}

/* ---- the candidate table */

static const Cand *table_find(const Ecse *s, uint64_t h, const GPExpr *e) {
  if (!s->cap) return NULL;
  for (size_t i = (size_t)h & (s->cap - 1); s->slots[i].node; i = (i + 1) & (s->cap - 1))
    if (s->slots[i].hash == h && equivalent(s->slots[i].node, e)) return &s->slots[i];
  return NULL;
}

static int table_add(Ecse *s, uint64_t h, GPExpr *e, int32_t id) {
  if ((s->len + 1) * 4 > s->cap * 3) {
    size_t ncap = s->cap ? s->cap * 2 : 64;
    Cand *ns = calloc(ncap, sizeof *ns);
    if (!ns) {
      H->error_set(GP_ERR_MEMORY, PASS_NAME ": out of memory");
      return -1;
    }
    for (size_t i = 0; i < s->cap; i++) {
      if (!s->slots[i].node) continue;
      size_t j = (size_t)s->slots[i].hash & (ncap - 1);
      while (ns[j].node) j = (j + 1) & (ncap - 1);
      ns[j] = s->slots[i];
    }
    free(s->slots);
    s->slots = ns;
    s->cap = ncap;
  }
  size_t j = (size_t)h & (s->cap - 1);
  while (s->slots[j].node) j = (j + 1) & (s->cap - 1);
  s->slots[j] = (Cand){h, e, id};
  s->len++;
  return 0;
}

static void table_clear(Ecse *s) {
  free(s->slots);
  s->slots = NULL;
  s->len = s->cap = 0;
}

/* ---- the rewrite */

/* 1: skip the node, 0: consider it, -1: error. */
static int skip_node(Ecse *s, GPExpr *orig, GPExpr *node) {
  if (!s->skip) return 0;
  GPAny arg = {.type_index = ekind(node), .v_obj = &node->obj};
  GPAny res = {0};
  char loc[256], msg[640];
  if (s->skip->call(s->skip->self, &arg, 1, &res) != 0) {
    H->any_clear(&res);
    if (!H->error_kind()) H->error_set(GP_ERR_INTERNAL, "the predicate failed without an error");
    snprintf(msg, sizeof msg, "skip predicate '%s' failed on %s at %s", s->skip_name, std_kind_name(ekind(node)),
             std_where(s->source, orig, loc, sizeof loc));
    std_error_prefix(msg);
    return -1;
  }
  if (res.type_index != GP_TI_BOOL && res.type_index != GP_TI_INT) {
    char what[160];
    std_describe_any(&res, what, sizeof what);
    H->any_clear(&res);
    H->error_set(GP_ERR_TYPE, "skip predicate '%s' returned %s for %s at %s; it must return a bool", s->skip_name, what,
                 std_kind_name(ekind(node)), std_where(s->source, orig, loc, sizeof loc));
    return -1;
  }
  return res.v_int64 != 0;
}

static GPExpr *ecse_node(Ecse *s, int32_t id, GPExpr *orig, GPExpr *rebuilt, GPExpr *const *done) {
  s->rep[id] = id;
  int32_t key = -1; /* the id the candidate is listed at, or -1: the table */
  const int32_t *kids = s->ix->kids + s->ix->kid_offsets[id];
  if (ekind(rebuilt) == GP_TI_CALL) {
    const GPCall *c = (const GPCall *)rebuilt;
    if (c->nargs == 0 || ekind(c->op) != GP_TI_OP || (((const GPOp *)c->op)->flags & GP_OP_STATEFUL))
      return std_keep(rebuilt);
    for (int32_t a = 0; a < c->nargs && key < 0; a++)
      if (!arg_by_value(c->args[a])) key = s->rep[kids[1 + a]];
  } else if (ekind(rebuilt) == GP_TI_TUPLE_GET_ITEM) {
    key = s->rep[kids[0]];
  } else {
    return std_keep(rebuilt);
  }
  int skip = skip_node(s, orig, rebuilt);
  if (skip < 0) return NULL;
  if (skip) return std_keep(rebuilt);
  GPExpr *earlier = NULL;
  uint64_t h = 0;
  if (key >= 0) {
    for (int32_t j = s->head[key]; j >= 0 && !earlier; j = s->next[j])
      if (equivalent(done[j], rebuilt)) earlier = done[j], s->rep[id] = j;
  } else {
    h = ekind(rebuilt) == GP_TI_CALL ? call_hash((const GPCall *)rebuilt) : item_hash((const GPTupleGetItem *)rebuilt);
    const Cand *c = table_find(s, h, rebuilt);
    if (c) earlier = c->node, s->rep[id] = c->id;
  }
  if (earlier) {
    if (ekind(rebuilt) == GP_TI_CALL)
      s->calls++;
    else
      s->items++;
    return gp_retain(earlier);
  }
  if (key >= 0) {
    s->next[id] = s->head[key];
    s->head[key] = id;
  } else if (table_add(s, h, rebuilt, id) != 0) {
    return NULL;
  }
  return std_keep(rebuilt);
}

/* A replacement is an equal earlier node (same op, attrs and argument types: the same type), so
 * the rewrite keeps every type and the result needs no re-typing when all came back typed. */
static GPExpr *ecse_rewrite(void *user, int32_t id, GPExpr *orig, GPExpr *rebuilt, GPExpr *const *done) {
  Ecse *s = user;
  return std_note_typed(ecse_node(s, id, orig, rebuilt, done), rebuilt, &s->untyped);
}

static GPExpr *ecse_function(void *user, const GPModule *mod, int32_t index) {
  Ecse *s = user;
  s->untyped = false;
  GPExprIndex *ix = H->expr_index_new(&mod->funcs[index]->base);
  if (!ix) return NULL;
  size_t n = ix->num_nodes ? ix->num_nodes : 1;
  s->ix = ix;
  s->rep = malloc(n * sizeof *s->rep);
  s->head = malloc(n * sizeof *s->head);
  s->next = malloc(n * sizeof *s->next);
  if (!s->rep || !s->head || !s->next) abort();
  memset(s->head, 0xff, n * sizeof *s->head);
  GPExpr *r = H->rewrite_indexed(ix, ecse_rewrite, s);
  table_clear(s); /* one table and one set of lists per global function; its nodes die with the rewrite */
  free(s->rep);
  free(s->head);
  free(s->next);
  s->rep = s->head = s->next = NULL;
  s->ix = NULL;
  H->expr_index_free(ix);
  return r;
}

static int ecse(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args(PASS_NAME, args, nargs, &mod, &ctx) != 0) return -1;
  Ecse s = {.source = mod->source_name};
  const char *skip = std_config_str(ctx, SKIP_KEY, "");
  if (skip && *skip) {
    if (!GP_HAS_FIELD(H, GPHostAPI, func_get) || !H->func_get) {
      H->error_set(GP_ERR_UNSUPPORTED, SKIP_KEY ": the host has no global functions (GPHostAPI.func_get)");
      return -1;
    }
    s.skip = H->func_get(skip);
    if (!s.skip) {
      H->error_set(GP_ERR_NOT_FOUND, SKIP_KEY ": no global function named '%s'", skip);
      return -1;
    }
    s.skip_name = skip;
  }
  GPModule *out = std_function_pass_typed(mod, ecse_function, &s, &s.untyped);
  table_clear(&s);
  gp_release(s.skip);
  if (!out) return -1;
  std_note(ctx, "replaced %lld calls and %lld tuple get-items by earlier equal ones", (long long)s.calls,
           (long long)s.items);
  return std_return_module(result, out);
}

int std_register_eliminate_common_subexpr(void) {
  static const char *const required[] = {"InferType"};
  GPConfigKey keys[] = {
      {.name = "skip", .type_index = GP_TI_RAW_STR, .default_value = {.type_index = GP_TI_RAW_STR, .v_c_str = ""},
       .help = "name of a global function called with each candidate call or get-item; true leaves it alone"},
  };
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = PASS_NAME,
      .opt_level = 3,
      .kind = GP_PASS_TRANSFORM,
      .required = required,
      .num_required = 1,
      .config_keys = keys,
      .num_config_keys = 1,
      .func = ecse,
      .help = "Replace a call (same op, equal attrs, same arguments) or tuple get-item by an earlier equal one.",
  };
  return H->pass_register(&info, 0);
}
