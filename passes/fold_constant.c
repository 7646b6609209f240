/* fold_constant.c -- FoldConstant (opt-level 2, no required passes), TVM v0.12's rules:
 *  - a call of an op whose every argument is a constant (or a tuple of constants) is evaluated
 *    by the host (GPHostAPI.eval_call) and replaced by the resulting constant (or tuple of
 *    constants);
 *  - refused: zero-argument calls (folding ones(shape=(4, 5)) only materializes data), callees
 *    that are not ops, stateful ops, non-computational ops, device_copy, ndarray_size, and
 *    every node inside a function with a non-zero Primitive attribute; also (beyond TVM)
 *    constants without values and results over `FoldConstant.max_bytes` (a note for --explain);
 *  - shape_of (and vm.shape_of) of an argument whose type has a static shape becomes a constant
 *    even when the argument is not constant; of a dynamic shape it is kept;
 *  - a get-item of a literal tuple is that field; an `if` with a constant condition is the
 *    branch it selects; a let whose value becomes a constant is dropped and its uses see the
 *    constant.
 * One host rewrite per function, children first, so chains fold completely in one pass.  The
 * module is typed first when it is not (shape_of reads the argument types; sizes come from the
 * checked types) and the result is re-typed.  Constants that are not folded stay the same
 * objects; the input module is never changed.  No recursion. */
#include "passes.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PASS_NAME "FoldConstant"
#define MAX_BYTES_KEY "FoldConstant.max_bytes"
#define DEFAULT_MAX_BYTES ((int64_t)1 << 30)

/* Placeholder of a let value whose rewrite has not been seen yet. */
static char pending_mark;
#define PENDING ((void *)&pending_mark)

typedef struct Fold {
  GPPassContext *ctx;
  const char *source;  /* the module's source name, or NULL */
  int64_t max_bytes;
  PMap inside;         /* nodes inside a Primitive function (and those functions) */
  PMap let_of;         /* let-bound var -> its let */
  PMap let_value;      /* a let's value -> its rewrite (owned reference) or PENDING */
  int64_t folded;      /* calls replaced by constants */
  int64_t bytes;       /* bytes of the constants they became */
  const GPOp *shape_of, *vm_shape_of, *device_copy, *ndarray_size; /* NULL when the host has none */
} Fold;

/* "<source>:<line>:<col>" of a node (or "an unknown location"). */
static const char *where(const Fold *f, const GPExpr *e, char *buf, size_t n) {
  if (!e->line)
    snprintf(buf, n, "an unknown location");
  else if (f->source)
    snprintf(buf, n, "%s:%u:%u", f->source, (unsigned)e->line, (unsigned)e->col);
  else
    snprintf(buf, n, "%u:%u", (unsigned)e->line, (unsigned)e->col);
  return buf;
}

static bool is_primitive(const GPExpr *e) {
  if (ekind(e) != GP_TI_FUNCTION_EXPR) return false;
  const GPFunctionExpr *fn = (const GPFunctionExpr *)e;
  if (!fn->attrs) return false;
  const GPAttrValue *v = H->attrs_get(fn->attrs, "Primitive");
  if (!v) return false;
  switch (v->kind) {
  case GP_ATTR_INT:
  case GP_ATTR_BOOL: return v->i != 0;
  case GP_ATTR_FLOAT: return v->f != 0.0;
  case GP_ATTR_STR: return v->s && *v->s && strcmp(v->s, "0") != 0;
  default: return false;
  }
}

/* Element count of a tensor, or -1 when it has an unknown dim. */
static int64_t numel_of(int32_t ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int32_t i = 0; i < ndim; i++) {
    if (shape[i] < 0) return -1;
    if (__builtin_mul_overflow(n, shape[i], &n)) return INT64_MAX;
  }
  return n;
}

static int64_t elem_bytes(DLDataType dt) { return ((int64_t)dt.bits * dt.lanes + 7) / 8; }

/* Bytes of a value of type t: a tensor or a tuple of tensors; -1 when unknown. Saturates. */
static int64_t type_bytes(const GPType *t) {
  if (!t) return -1;
  const GPType *const *fields = &t;
  int32_t n = 1;
  if (t->kind == GP_TYPE_TUPLE) fields = t->tuple.fields, n = t->n;
  int64_t sum = 0;
  for (int32_t i = 0; i < n; i++) {
    const GPType *ft = fields[i];
    if (ft->kind != GP_TYPE_TENSOR) return -1;
    int64_t k = numel_of(ft->n, ft->tensor.shape), b;
    if (k < 0) return -1;
    if (__builtin_mul_overflow(k, elem_bytes(ft->tensor.dtype), &b) || __builtin_add_overflow(sum, b, &sum))
      return INT64_MAX;
  }
  return sum;
}

/* A constant whose values are known (a tensor without elements needs none). */
static bool constant_with_data(const GPExpr *e) {
  if (ekind(e) != GP_TI_CONSTANT) return false;
  const GPTensor *t = ((const GPConstant *)e)->data;
  return t && (t->dl.data || numel_of(t->dl.ndim, t->dl.shape) == 0);
}

/* What eval_call accepts: a constant with data, or a tuple of those. */
static bool foldable_arg(const GPExpr *e) {
  if (ekind(e) == GP_TI_TUPLE) {
    const GPTuple *t = (const GPTuple *)e;
    for (int32_t i = 0; i < t->n; i++)
      if (!constant_with_data(t->fields[i])) return false;
    return true;
  }
  return constant_with_data(e);
}

/* Replace the pending error by "cannot fold <op> at <where>: <message>" (same kind). */
static void error_at(const Fold *f, const GPCall *orig, const char *op_name) {
  int32_t kind = H->error_kind();
  const char *msg = H->error_message();
  size_t len = msg ? strlen(msg) : 0;
  char *copy = malloc(len + 1);
  if (copy) {
    memcpy(copy, msg ? msg : "", len + 1);
  }
  char loc[256];
  H->error_set(kind ? kind : GP_ERR_INTERNAL, "cannot fold %s at %s: %s", op_name, where(f, &orig->base, loc, sizeof loc),
               copy ? copy : "(out of memory)");
  free(copy);
}

/* Store the dims of a static shape into a 1-d tensor of dtype dt; false when dt is not an
 * integer or float32/64 type. */
static bool store_dims(GPTensor *t, DLDataType dt, int32_t n, const int64_t *dims) {
  char *p = (char *)t->dl.data + t->dl.byte_offset;
  if (dt.lanes != 1) return false;
  for (int32_t i = 0; i < n; i++) {
    int64_t d = dims[i];
    if (dt.code == kDLInt || dt.code == kDLUInt) {
      uint64_t u = (uint64_t)d; /* wraps like a cast for narrow types */
      switch (dt.bits) {
      case 8: { uint8_t v = (uint8_t)u; memcpy(p + i, &v, 1); break; }
      case 16: { uint16_t v = (uint16_t)u; memcpy(p + 2 * i, &v, 2); break; }
      case 32: { uint32_t v = (uint32_t)u; memcpy(p + 4 * i, &v, 4); break; }
      case 64: memcpy(p + 8 * i, &u, 8); break;
      default: return false;
      }
    } else if (dt.code == kDLFloat && dt.bits == 32) {
      float v = (float)d;
      memcpy(p + 4 * i, &v, 4);
    } else if (dt.code == kDLFloat && dt.bits == 64) {
      double v = (double)d;
      memcpy(p + 8 * i, &v, 8);
    } else {
      return false;
    }
  }
  return true;
}

/* shape_of(x) with a static x: the constant [d0, d1, ...] in the call's dtype (int32 unless
 * given).  The argument's type comes from the typed input (orig). */
static GPExpr *fold_shape_of(Fold *f, const GPCall *orig, GPExpr *rebuilt) {
  const GPOp *op = (const GPOp *)orig->op;
  if (orig->nargs != 1) return std_keep(rebuilt);
  const GPType *at = orig->args[0]->checked_type;
  if (!at || at->kind != GP_TYPE_TENSOR || numel_of(at->n, at->tensor.shape) < 0) return std_keep(rebuilt);
  DLDataType dt = {kDLInt, 32, 1};
  const GPAttrValue *v = orig->attrs ? H->attrs_get(orig->attrs, "dtype") : NULL;
  if (v && v->kind == GP_ATTR_DTYPE && v->dtype.bits) dt = v->dtype;
  int64_t rank = at->n;
  int64_t bytes = rank * elem_bytes(dt);
  char loc[256];
  if (bytes > f->max_bytes) {
    std_note(f->ctx, "not folded: %s at %s would materialize %lld bytes, over " MAX_BYTES_KEY " = %lld", op->name,
             where(f, &orig->base, loc, sizeof loc), (long long)bytes, (long long)f->max_bytes);
    return std_keep(rebuilt);
  }
  const GPType *rt = H->type_tensor(dt, 1, &rank);
  if (!rt) return NULL;
  GPTensor *t = H->tensor_alloc(dt, 1, &rank, 1);
  if (!t) return NULL;
  if (rank && !store_dims(t, dt, at->n, at->tensor.shape)) {
    gp_release(t);
    std_note(f->ctx, "not folded: %s at %s: dtype of %d bits, code %d is not supported", op->name,
             where(f, &orig->base, loc, sizeof loc), (int)dt.bits, (int)dt.code);
    return std_keep(rebuilt);
  }
  GPConstant *c = H->constant_new(t);
  gp_release(t);
  if (!c) return NULL;
  GPExpr *r = H->expr_annotate(&c->base, rt, orig->base.line, orig->base.col);
  gp_release(c);
  if (r) {
    f->folded++;
    f->bytes += bytes;
  }
  return r;
}

static GPExpr *fold_call(Fold *f, const GPCall *orig, GPExpr *rebuilt) {
  const GPCall *c = (const GPCall *)rebuilt;
  if (c->nargs == 0) return std_keep(rebuilt); /* ones(shape=...): folding only costs memory */
  if (ekind(c->op) != GP_TI_OP) return std_keep(rebuilt);
  const GPOp *op = (const GPOp *)c->op;
  if (op->flags & GP_OP_STATEFUL) return std_keep(rebuilt);
  if (op == f->shape_of || op == f->vm_shape_of) return fold_shape_of(f, orig, rebuilt);
  if (op->flags & GP_OP_NON_COMPUTATIONAL) return std_keep(rebuilt);
  if (op == f->device_copy || op == f->ndarray_size) return std_keep(rebuilt);
  for (int32_t i = 0; i < c->nargs; i++)
    if (!foldable_arg(c->args[i])) return std_keep(rebuilt);
  char loc[256];
  int64_t want = type_bytes(orig->base.checked_type);
  if (want > f->max_bytes) {
    std_note(f->ctx, "not folded: %s at %s would materialize %lld bytes, over " MAX_BYTES_KEY " = %lld", op->name,
             where(f, &orig->base, loc, sizeof loc), (long long)want, (long long)f->max_bytes);
    return std_keep(rebuilt);
  }
  GPExpr *r = H->eval_call(c);
  if (!r) {
    if (H->error_kind() == GP_ERR_UNSUPPORTED) { /* no kernel for this op or dtype: keep the call */
      std_note(f->ctx, "not folded: %s at %s: %s", op->name, where(f, &orig->base, loc, sizeof loc),
               H->error_message());
      H->error_clear();
      return std_keep(rebuilt);
    }
    error_at(f, orig, op->name);
    return NULL;
  }
  int64_t got = type_bytes(r->checked_type);
  if (got > f->max_bytes) { /* the checked type did not tell (unknown dims) */
    std_note(f->ctx, "not folded: %s at %s would materialize %lld bytes, over " MAX_BYTES_KEY " = %lld", op->name,
             where(f, &orig->base, loc, sizeof loc), (long long)got, (long long)f->max_bytes);
    gp_release(r);
    return std_keep(rebuilt);
  }
  f->folded++;
  if (got > 0 && __builtin_add_overflow(f->bytes, got, &f->bytes)) f->bytes = INT64_MAX;
  return r;
}

/* The truth of a constant condition: any non-zero byte of its first element; -1 when unknown. */
static int constant_truth(const GPExpr *e) {
  if (!constant_with_data(e)) return -1;
  const GPTensor *t = ((const GPConstant *)e)->data;
  if (numel_of(t->dl.ndim, t->dl.shape) < 1) return -1;
  const unsigned char *p = (const unsigned char *)t->dl.data + t->dl.byte_offset;
  int64_t n = elem_bytes(t->dl.dtype);
  for (int64_t i = 0; i < n; i++)
    if (p[i]) return 1;
  return 0;
}

static GPExpr *fold_rewrite(void *user, GPExpr *orig, GPExpr *rebuilt) {
  Fold *f = user;
  GPExpr *res = NULL;
  if (pmap_has(&f->inside, orig)) return std_keep(rebuilt);
  switch (ekind(orig)) {
  case GP_TI_VAR: { /* a use (or the binding) of a let-bound name whose value became a constant */
    const GPLet *l = pmap_get(&f->let_of, orig);
    GPExpr *v = l ? pmap_get(&f->let_value, l->value) : NULL;
    res = v && v != PENDING && ekind(v) == GP_TI_CONSTANT ? gp_retain(v) : std_keep(rebuilt);
    break;
  }
  case GP_TI_LET: { /* the uses of its name became the constant (unless one is inside a
                     * Primitive function, which is never rewritten: then keep the binding) */
    const GPLet *l = (const GPLet *)rebuilt;
    bool inline_it = ekind(l->value) == GP_TI_CONSTANT && !pmap_has(&f->inside, ((const GPLet *)orig)->var);
    res = inline_it ? gp_retain(l->body) : std_keep(rebuilt);
    break;
  }
  case GP_TI_CALL: res = fold_call(f, (const GPCall *)orig, rebuilt); break;
  case GP_TI_TUPLE_GET_ITEM: {
    const GPTupleGetItem *g = (const GPTupleGetItem *)rebuilt;
    if (ekind(g->tuple) == GP_TI_TUPLE && g->index >= 0 && g->index < ((const GPTuple *)g->tuple)->n)
      res = gp_retain(((const GPTuple *)g->tuple)->fields[g->index]);
    else
      res = std_keep(rebuilt);
    break;
  }
  case GP_TI_IF: {
    const GPIf *i = (const GPIf *)rebuilt;
    int truth = constant_truth(i->cond);
    res = truth < 0 ? std_keep(rebuilt) : gp_retain(truth ? i->then_branch : i->else_branch);
    break;
  }
  default: res = std_keep(rebuilt); break;
  }
  if (res && pmap_get(&f->let_value, orig) == PENDING) pmap_put(&f->let_value, orig, gp_retain(std_kept(res, rebuilt)));
  return res;
}

static void fold_free(Fold *f) {
  for (size_t i = 0; i < f->let_value.cap; i++)
    if (f->let_value.slots[i].key && f->let_value.slots[i].val != PENDING) gp_release(f->let_value.slots[i].val);
  pmap_free(&f->inside);
  pmap_free(&f->let_of);
  pmap_free(&f->let_value);
}

/* Mark what lies inside Primitive functions; record let bindings.  Reverse post-order visits
 * every parent before its children. */
/* fold_rewrite over the node index the analysis read (one index per function, not two). */
static GPExpr *fold_rewrite_id(void *user, int32_t id, GPExpr *orig, GPExpr *rebuilt, GPExpr *const *done) {
  (void)id;
  (void)done;
  return fold_rewrite(user, orig, rebuilt);
}

/* Whether any node of ix may fold (see fold_rewrite), from the index's tags and child ids
 * alone: a call of an op with arguments that are all constants or tuples, a shape_of, a
 * get-item of a literal tuple, an if or a let.  Without one nothing changes (a rewrite only
 * rebuilds the nodes above a change). */
static bool any_candidate(const GPExprIndex *ix, const GPOp *so, const GPOp *vso) {
  int32_t shape_of = so ? so->index : INT32_MIN, vm_shape_of = vso ? vso->index : INT32_MIN;
  for (size_t i = 0; i < ix->num_nodes; i++) {
    int32_t t = ix->tags[i];
    const int32_t *kid = ix->kids + ix->kid_offsets[i];
    int32_t nk = ix->kid_offsets[i + 1] - ix->kid_offsets[i];
    if (t == -GP_TI_LET || t == -GP_TI_IF) return true;
    if (t == -GP_TI_TUPLE_GET_ITEM && ix->tags[kid[0]] == -GP_TI_TUPLE) return true;
    if (t < 0 || nk < 2) continue; /* not a call of an op, or no arguments */
    if (t == shape_of || t == vm_shape_of) return true;
    bool all = true;
    for (int32_t a = 1; a < nk && all; a++) all = ix->tags[kid[a]] == -GP_TI_CONSTANT || ix->tags[kid[a]] == -GP_TI_TUPLE;
    if (all) return true;
  }
  return false;
}

/* any_candidate from the subtree facts, without a walk (ABI 1.6): true when no node of root
 * could be folded. */
static bool nothing_to_fold(const GPExpr *root, const GPOp *so, const GPOp *vso) {
  if (!GP_HAS_FIELD(H, GPHostAPI, expr_has_constant_call) || !H->expr_has_constant_call) return false;
  return !H->expr_has_constant_call(root) && !H->expr_has_kind(root, GP_TI_LET) && !H->expr_has_kind(root, GP_TI_IF) &&
         !(H->expr_has_kind(root, GP_TI_TUPLE_GET_ITEM) && H->expr_has_kind(root, GP_TI_TUPLE)) &&
         !(so && H->expr_may_call(root, so)) && !(vso && H->expr_may_call(root, vso));
}

static void analyse(Fold *f, const GPExprIndex *ix) {
  GPExpr *const *nodes = ix->nodes;
  for (size_t k = ix->num_nodes; k-- > 0;) {
    /* only lets, functions and what lies inside a Primitive one: the rest is judged from the
     * index's tags without reading the node */
    if (ix->tags[k] != -GP_TI_LET && ix->tags[k] != -GP_TI_FUNCTION_EXPR && !f->inside.len) continue;
    GPExpr *e = nodes[k];
    if (ekind(e) == GP_TI_LET) {
      const GPLet *l = (const GPLet *)e;
      pmap_put(&f->let_of, l->var, (void *)l);
      pmap_put(&f->let_value, l->value, PENDING);
    }
    bool in = pmap_has(&f->inside, e);
    if (!in && is_primitive(e)) {
      pmap_put(&f->inside, e, e);
      in = true;
    }
    if (!in) continue;
    int32_t nc = gp_expr_num_children(e);
    for (int32_t i = 0; i < nc; i++) {
      GPExpr *c = gp_expr_child_at(e, i);
      pmap_put(&f->inside, c, c);
    }
  }
}

static int fold_constant(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args(PASS_NAME, args, nargs, &mod, &ctx) != 0) return -1;
  if (!GP_HAS_FIELD(H, GPHostAPI, eval_call) || !H->eval_call) {
    H->error_set(GP_ERR_UNSUPPORTED, "the host cannot evaluate calls (GPHostAPI.eval_call needs ABI 1.1)");
    return -1;
  }
  int64_t max_bytes = std_config_int(ctx, MAX_BYTES_KEY, DEFAULT_MAX_BYTES);
  if (max_bytes < 0) {
    H->error_set(GP_ERR_VALUE, MAX_BYTES_KEY " is %lld; it must be >= 0", (long long)max_bytes);
    return -1;
  }
  GPModule *typed = std_module_typed(mod) ? gp_retain(mod) : H->infer_types(mod);
  if (!typed) return -1;
  GPModule *out = NULL;
  int64_t folded = 0, bytes = 0;
  const GPOp *so = H->op_get("shape_of"), *vso = H->op_get("vm.shape_of"), *dc = H->op_get("device_copy"),
             *nsz = H->op_get("ndarray_size");
  H->error_clear(); /* an op this host does not have: no call of it either */
  for (int32_t fi = 0; fi < typed->num_functions; fi++) {
    Fold f = {.ctx = ctx, .source = typed->source_name, .max_bytes = max_bytes, .shape_of = so, .vm_shape_of = vso,
              .device_copy = dc, .ndarray_size = nsz};
    GPExpr *root = &typed->funcs[fi]->base;
    if (nothing_to_fold(root, so, vso)) continue;
    GPExprIndex *ix = H->expr_index_new(root);
    if (!ix) goto fail;
    if (!any_candidate(ix, so, vso)) {
      H->expr_index_free(ix);
      continue;
    }
    analyse(&f, ix);
    GPExpr *nf = H->rewrite_indexed(ix, fold_rewrite_id, &f);
    H->expr_index_free(ix);
    folded += f.folded;
    if (__builtin_add_overflow(bytes, f.bytes, &bytes)) bytes = INT64_MAX;
    fold_free(&f);
    if (!nf) goto fail;
    if (nf == root) {
      gp_release(nf);
      continue;
    }
    if (ekind(nf) != GP_TI_FUNCTION_EXPR) { /* cannot happen: functions are never replaced */
      gp_release(nf);
      H->error_set(GP_ERR_INTERNAL, "@%s was rewritten into a non-function", typed->gvars[fi]->name);
      goto fail;
    }
    if (!out) out = H->module_copy(typed);
    int rc = out ? H->module_add(out, typed->gvars[fi]->name, (GPFunctionExpr *)nf, 1) : -1;
    gp_release(nf);
    if (rc != 0) goto fail;
  }
  {
    Fold f = {.ctx = ctx};
    std_note(f.ctx, "folded %lld calls (%lld bytes materialized)", (long long)folded, (long long)bytes);
  }
  if (!out) return std_return_module(result, typed);
  gp_release(typed);
  GPModule *retyped = H->infer_types(out);
  gp_release(out);
  return std_return_module(result, retyped);
fail:
  gp_release(out);
  gp_release(typed);
  return -1;
}

int std_register_fold_constant(void) {
  GPConfigKey keys[] = {
      {.name = "max_bytes", .type_index = GP_TI_INT,
       .default_value = {.type_index = GP_TI_INT, .v_int64 = DEFAULT_MAX_BYTES},
       .help = "do not fold a call whose result would take more bytes than this (default 1 GiB)"},
  };
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = PASS_NAME,
      .opt_level = 2,
      .kind = GP_PASS_TRANSFORM,
      .config_keys = keys,
      .num_config_keys = 1,
      .func = fold_constant,
      .help = "Evaluate calls of ops on constants at compile time (TVM's FoldConstant rules).",
  };
  return H->pass_register(&info, 0);
}
