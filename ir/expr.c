/* expr.c -- expression constructors, copies and the non-recursive destructor. */
#include "ir.h"

#include <string.h>

static void expr_free(GPObject *o);
static void expr_deleter(GPObject *o) { gp_object_drain(o, expr_free); }

/* Nodes come from the node allocator (ir/pool.c), which keeps them in creation order, each
 * after its summary word (see gp_expr_summary in ir.h). */
#define SUM_PREFIX sizeof(uint64_t)
static inline uint64_t *sum_word(const GPExpr *e) { return (uint64_t *)((char *)(uintptr_t)e - SUM_PREFIX); }

static void *expr_alloc(size_t size, int32_t ti) {
  GPObject *o = (GPObject *)((char *)gp_node_alloc(SUM_PREFIX + size) + SUM_PREFIX);
  o->ref_count = 1;
  o->type_index = ti;
  o->deleter = expr_deleter;
  *sum_word((GPExpr *)o) = GP_SUM_KIND(ti);
  return o;
}

bool gp_expr_refresh_typed_slow(GPExpr *e) {
  if (gp_kind(e) == GP_TI_OP) return true;
  uint64_t s = __atomic_load_n(sum_word(e), __ATOMIC_RELAXED);
  if (s & GP_SUM_TYPED) return true;
  if (!e->checked_type) return false;
  int32_t nk = gp_expr_num_children(e);
  for (int32_t i = 0; i < nk; i++)
    if (!gp_expr_is_typed_closure(gp_expr_child_at(e, i))) return false;
  __atomic_fetch_or(sum_word(e), GP_SUM_TYPED, __ATOMIC_RELAXED);
  return true;
}

bool gp_expr_refresh_typed_deep(GPExpr *e) {
  if (gp_expr_is_typed_closure(e)) return true;
  if (!e->checked_type) return false;
  typedef struct {
    GPExpr *x;
    bool expanded;
  } Frame;
  Frame small[64], *st = small;
  size_t n = 0, cap = 64;
  /* expanded nodes, each expanded once (a DAG may reach one twice): a short array, then a map */
  GPExpr *few[32];
  size_t nfew = 0;
  GPPtrMap seen = {0};
  st[n++] = (Frame){e, false};
  while (n) {
    Frame *f = &st[n - 1];
    GPExpr *x = f->x;
    if (f->expanded) { /* its typed children are done: it gets the bit unless one lacks it */
      gp_expr_refresh_typed(x);
      n--;
      continue;
    }
    f->expanded = true;
    if (nfew < 32) few[nfew++] = x;
    else gp_map_put(&seen, x, x);
    int32_t nk = gp_expr_num_children(x);
    for (int32_t i = 0; i < nk; i++) {
      GPExpr *c = gp_expr_child_at(x, i);
      if (gp_expr_is_typed_closure(c) || !c->checked_type) continue;
      bool done = false;
      for (size_t k = 0; k < nfew && !done; k++) done = few[k] == c;
      if (done || (seen.cap && gp_map_has(&seen, c))) continue;
      if (n == cap) {
        cap *= 2;
        st = st == small ? memcpy(gp_malloc(cap * sizeof *st), small, sizeof small) : gp_realloc(st, cap * sizeof *st);
      }
      st[n++] = (Frame){c, false};
    }
  }
  if (st != small) gp_free(st);
  gp_map_free(&seen);
  return gp_expr_is_typed_closure(e);
}

void gp_expr_mark_indexed(GPExpr *e) {
  if (gp_kind(e) != GP_TI_OP) __atomic_fetch_or(sum_word(e), GP_SUM_INDEXED, __ATOMIC_RELAXED);
}

/* A new node's word: its own kind, its children's facts and, when it is typed and so are they
 * all, the typed-closure bit.  Called by every constructor once the children are in place,
 * before the node is published. */
static void sum_init(GPExpr *e) {
  uint64_t s = GP_SUM_KIND(gp_kind(e)), kids = GP_SUM_TYPED;
  int32_t nk = gp_expr_num_children(e);
  for (int32_t i = 0; i < nk; i++) {
    uint64_t k = gp_expr_summary(gp_expr_child_at(e, i));
    kids &= k;
    s |= k;
  }
  s &= ~(GP_SUM_TYPED | GP_SUM_KIDS_TYPED | GP_SUM_INDEXED);
  if (kids) s |= GP_SUM_KIDS_TYPED | (e->checked_type ? GP_SUM_TYPED : 0);
  if (gp_kind(e) == GP_TI_CALL && nk > 1 && gp_kind(GP_AS(GPCall, e)->op) == GP_TI_OP) {
    bool consts = true; /* child 0 is the callee */
    for (int32_t i = 1; i < nk && consts; i++) {
      int32_t k = gp_kind(gp_expr_child_at(e, i));
      consts = k == GP_TI_CONSTANT || k == GP_TI_TUPLE;
    }
    if (consts) s |= GP_SUM_CONST_CALL;
  }
  *sum_word(e) = s;
}

/* A var made by gp_var_new keeps its name in the same block, right after the struct, and a
 * function made by gp_function_new its params array: one allocation per node instead of two.
 * Copies (copy_with) own separate ones; expr_free tells them apart by address. */
static inline char *var_inline_name(GPVar *v) { return (char *)(v + 1); }
static inline GPVar **fn_inline_params(GPFunctionExpr *f) { return (GPVar **)(f + 1); }

/* Frees the node itself; children are released with gp_release_child, so a child whose count
 * drops to zero is queued on the drain loop instead of freed recursively. */
static void expr_free(GPObject *o) {
  GPExpr *e = (GPExpr *)o;
  if (gp_expr_summary(e) & GP_SUM_INDEXED) { /* before the address can be reused */
    gp_ni_forget(e);
    gp_pattern_fixed_forget(e);
  }
  switch (o->type_index) {
  case GP_TI_VAR: {
    GPVar *v = GP_AS(GPVar, e);
    if (v->name != var_inline_name(v)) gp_free((char *)v->name); /* a copy's own name */
    break;
  }
  case GP_TI_GLOBAL_VAR: gp_free((char *)GP_AS(GPGlobalVar, e)->name); break;
  case GP_TI_CONSTANT: gp_release_child(GP_AS(GPConstant, e)->data); break;
  case GP_TI_CALL: {
    GPCall *c = GP_AS(GPCall, e);
    gp_release_child(c->op);
    gp_release_child(c->attrs);
    for (int32_t i = 0; i < c->nargs; i++) gp_release_child(c->args[i]);
    break;
  }
  case GP_TI_TUPLE: {
    GPTuple *t = GP_AS(GPTuple, e);
    for (int32_t i = 0; i < t->n; i++) gp_release_child(t->fields[i]);
    break;
  }
  case GP_TI_TUPLE_GET_ITEM: gp_release_child(GP_AS(GPTupleGetItem, e)->tuple); break;
  case GP_TI_FUNCTION_EXPR: {
    GPFunctionExpr *f = GP_AS(GPFunctionExpr, e);
    for (int32_t i = 0; i < f->nparams; i++) gp_release_child(f->params[i]);
    if (f->params != fn_inline_params(f)) gp_free(f->params); /* a copy's own array */
    gp_release_child(f->body);
    gp_release_child(f->attrs);
    break;
  }
  case GP_TI_LET: {
    GPLet *l = GP_AS(GPLet, e);
    gp_release_child(l->var);
    gp_release_child(l->value);
    gp_release_child(l->body);
    break;
  }
  case GP_TI_IF: {
    GPIf *f = GP_AS(GPIf, e);
    gp_release_child(f->cond);
    gp_release_child(f->then_branch);
    gp_release_child(f->else_branch);
    break;
  }
  default: break;
  }
  gp_node_free(sum_word(e));
}

static bool check_expr(const void *e, const char *what) {
  if (!e || !gp_is_expr(e)) {
    gp_error_set(GP_ERR_VALUE, "%s: %s", what, e ? "not an expression" : "NULL expression");
    return false;
  }
  return true;
}

GPVar *gp_var_new(const char *name, const GPType *annotation) {
  const char *nm = name && *name ? name : "x";
  size_t len = strlen(nm);
  GPVar *v = expr_alloc(sizeof *v + len + 1, GP_TI_VAR);
  memcpy(var_inline_name(v), nm, len + 1);
  v->name = var_inline_name(v);
  v->type_annotation = annotation;
  v->base.checked_type = annotation;
  sum_init(&v->base);
  return v;
}

GPGlobalVar *gp_global_var_new(const char *name) {
  if (!name || !*name) {
    gp_error_set(GP_ERR_VALUE, "global var needs a name");
    return NULL;
  }
  GPGlobalVar *g = expr_alloc(sizeof *g, GP_TI_GLOBAL_VAR);
  g->name = gp_strdup(name);
  return g;
}

GPConstant *gp_constant_new(GPTensor *data) {
  if (!data || data->obj.type_index != GP_TI_TENSOR) {
    gp_error_set(GP_ERR_VALUE, "constant needs a tensor");
    return NULL;
  }
  const GPType *t = gp_tensor_type(data);
  if (!t) return NULL;
  GPConstant *c = expr_alloc(sizeof *c, GP_TI_CONSTANT);
  c->data = gp_retain(data);
  c->base.checked_type = t;
  sum_init(&c->base);
  return c;
}

GPCall *gp_call_new(GPExpr *op, int32_t nargs, GPExpr *const *args, GPAttrs *attrs) {
  if (!check_expr(op, "call: callee")) return NULL;
  int32_t k = gp_kind(op);
  if (k != GP_TI_OP && k != GP_TI_GLOBAL_VAR && k != GP_TI_FUNCTION_EXPR && k != GP_TI_VAR) {
    gp_error_set(GP_ERR_VALUE, "call: callee must be an op, global var, function or var, got %s",
                 gp_expr_kind_name(op));
    return NULL;
  }
  if (nargs < 0 || (nargs && !args)) {
    gp_error_set(GP_ERR_VALUE, "call: bad argument count %d", (int)nargs);
    return NULL;
  }
  for (int32_t i = 0; i < nargs; i++)
    if (!check_expr(args[i], "call: argument")) return NULL;
  if (attrs && attrs->obj.type_index != GP_TI_ATTRS) {
    gp_error_set(GP_ERR_VALUE, "call: attrs is not an attribute set");
    return NULL;
  }
  GPCall *c = expr_alloc(sizeof *c + (size_t)nargs * sizeof(GPExpr *), GP_TI_CALL);
  c->op = gp_retain(op);
  c->attrs = gp_retain(attrs);
  c->nargs = nargs;
  for (int32_t i = 0; i < nargs; i++) c->args[i] = gp_retain(args[i]);
  sum_init(&c->base);
  return c;
}

GPExpr *gp_call_op(const char *name, int32_t nargs, GPExpr *const *args, int32_t nattrs, const char *const *keys,
                   const GPAttrValue *vals) {
  const GPOp *op = gp_op_get(name);
  if (!op) return NULL;
  GPAttrs *attrs = gp_op_attrs_new(op, nattrs, keys, vals);
  if (!attrs && nattrs > 0) {
    gp_error_prefix("%s", name);
    return NULL;
  }
  GPCall *c = gp_call_new((GPExpr *)op, nargs, args, attrs);
  gp_release(attrs);
  return c ? &c->base : NULL;
}

GPTuple *gp_tuple_new(int32_t n, GPExpr *const *fields) {
  if (n < 0 || (n && !fields)) {
    gp_error_set(GP_ERR_VALUE, "tuple: bad field count %d", (int)n);
    return NULL;
  }
  for (int32_t i = 0; i < n; i++)
    if (!check_expr(fields[i], "tuple: field")) return NULL;
  GPTuple *t = expr_alloc(sizeof *t + (size_t)n * sizeof(GPExpr *), GP_TI_TUPLE);
  t->n = n;
  for (int32_t i = 0; i < n; i++) t->fields[i] = gp_retain(fields[i]);
  sum_init(&t->base);
  return t;
}

GPTupleGetItem *gp_tuple_get_item_new(GPExpr *tuple, int32_t index) {
  if (!check_expr(tuple, "tuple get-item")) return NULL;
  if (index < 0) {
    gp_error_set(GP_ERR_VALUE, "tuple get-item: negative index %d", (int)index);
    return NULL;
  }
  GPTupleGetItem *g = expr_alloc(sizeof *g, GP_TI_TUPLE_GET_ITEM);
  g->tuple = gp_retain(tuple);
  g->index = index;
  sum_init(&g->base);
  return g;
}

GPFunctionExpr *gp_function_new(int32_t nparams, GPVar *const *params, GPExpr *body, const GPType *ret_type,
                                GPAttrs *attrs) {
  if (nparams < 0 || (nparams && !params)) {
    gp_error_set(GP_ERR_VALUE, "function: bad parameter count %d", (int)nparams);
    return NULL;
  }
  for (int32_t i = 0; i < nparams; i++)
    if (!params[i] || gp_kind(params[i]) != GP_TI_VAR) {
      gp_error_set(GP_ERR_VALUE, "function: parameter %d is not a var", (int)i);
      return NULL;
    }
  if (!check_expr(body, "function: body")) return NULL;
  GPFunctionExpr *f = expr_alloc(sizeof *f + (size_t)nparams * sizeof(GPVar *), GP_TI_FUNCTION_EXPR);
  f->nparams = nparams;
  f->params = nparams ? fn_inline_params(f) : NULL;
  for (int32_t i = 0; i < nparams; i++) f->params[i] = gp_retain(params[i]);
  f->body = gp_retain(body);
  f->ret_type = ret_type;
  f->attrs = gp_retain(attrs);
  sum_init(&f->base);
  return f;
}

GPLet *gp_let_new(GPVar *var, GPExpr *value, GPExpr *body) {
  if (!var || gp_kind(var) != GP_TI_VAR) {
    gp_error_set(GP_ERR_VALUE, "let: the bound name is not a var");
    return NULL;
  }
  if (!check_expr(value, "let: value") || !check_expr(body, "let: body")) return NULL;
  GPLet *l = expr_alloc(sizeof *l, GP_TI_LET);
  l->var = gp_retain(var);
  l->value = gp_retain(value);
  l->body = gp_retain(body);
  sum_init(&l->base);
  return l;
}

GPIf *gp_if_new(GPExpr *cond, GPExpr *then_branch, GPExpr *else_branch) {
  if (!check_expr(cond, "if: condition") || !check_expr(then_branch, "if: then branch") ||
      !check_expr(else_branch, "if: else branch"))
    return NULL;
  GPIf *f = expr_alloc(sizeof *f, GP_TI_IF);
  f->cond = gp_retain(cond);
  f->then_branch = gp_retain(then_branch);
  f->else_branch = gp_retain(else_branch);
  sum_init(&f->base);
  return f;
}

int32_t gp_expr_children(const GPExpr *e, GPExpr **out, int32_t cap) {
  int32_t n = gp_expr_num_children(e);
  for (int32_t i = 0; i < n && i < cap; i++) out[i] = gp_expr_child_at(e, i);
  return n;
}

static size_t expr_size(const GPExpr *e) {
  switch (gp_kind(e)) {
  case GP_TI_VAR: return sizeof(GPVar);
  case GP_TI_GLOBAL_VAR: return sizeof(GPGlobalVar);
  case GP_TI_CONSTANT: return sizeof(GPConstant);
  case GP_TI_CALL: return sizeof(GPCall) + (size_t)((const GPCall *)e)->nargs * sizeof(GPExpr *);
  case GP_TI_TUPLE: return sizeof(GPTuple) + (size_t)((const GPTuple *)e)->n * sizeof(GPExpr *);
  case GP_TI_TUPLE_GET_ITEM: return sizeof(GPTupleGetItem);
  case GP_TI_FUNCTION_EXPR: return sizeof(GPFunctionExpr);
  case GP_TI_LET: return sizeof(GPLet);
  case GP_TI_IF: return sizeof(GPIf);
  default: return 0;
  }
}

/* A copy of e whose children are kids (retained; NULL kids = e's own). */
static GPExpr *copy_with(const GPExpr *e, GPExpr *const *kids) {
  size_t size = expr_size(e);
  GPExpr *n = expr_alloc(size, gp_kind(e));
  memcpy(n, e, size);
  n->obj.ref_count = 1;
  GPExpr *own[8];
  GPExpr **cur = own;
  int32_t nk = gp_expr_num_children(e);
  if (nk > 8) cur = gp_malloc((size_t)nk * sizeof(GPExpr *));
  gp_expr_children(e, cur, nk);
  GPExpr *const *src = kids ? kids : cur;
  switch (gp_kind(e)) {
  case GP_TI_VAR: GP_AS(GPVar, n)->name = gp_strdup(GP_AS(const GPVar, e)->name); break;
  case GP_TI_GLOBAL_VAR: GP_AS(GPGlobalVar, n)->name = gp_strdup(GP_AS(const GPGlobalVar, e)->name); break;
  case GP_TI_CONSTANT: gp_retain(GP_AS(GPConstant, n)->data); break;
  case GP_TI_CALL: {
    GPCall *c = GP_AS(GPCall, n);
    gp_retain(c->attrs);
    c->op = gp_retain(src[0]);
    for (int32_t i = 0; i < c->nargs; i++) c->args[i] = gp_retain(src[1 + i]);
    break;
  }
  case GP_TI_TUPLE: {
    GPTuple *t = GP_AS(GPTuple, n);
    for (int32_t i = 0; i < t->n; i++) t->fields[i] = gp_retain(src[i]);
    break;
  }
  case GP_TI_TUPLE_GET_ITEM: GP_AS(GPTupleGetItem, n)->tuple = gp_retain(src[0]); break;
  case GP_TI_FUNCTION_EXPR: {
    GPFunctionExpr *f = GP_AS(GPFunctionExpr, n);
    f->params = f->nparams ? gp_malloc((size_t)f->nparams * sizeof(GPVar *)) : NULL;
    for (int32_t i = 0; i < f->nparams; i++) f->params[i] = gp_retain(src[i]);
    f->body = gp_retain(src[f->nparams]);
    gp_retain(f->attrs);
    break;
  }
  case GP_TI_LET: {
    GPLet *l = GP_AS(GPLet, n);
    l->var = gp_retain(src[0]);
    l->value = gp_retain(src[1]);
    l->body = gp_retain(src[2]);
    break;
  }
  case GP_TI_IF: {
    GPIf *f = GP_AS(GPIf, n);
    f->cond = gp_retain(src[0]);
    f->then_branch = gp_retain(src[1]);
    f->else_branch = gp_retain(src[2]);
    break;
  }
  default: break;
  }
  if (cur != own) gp_free(cur);
  sum_init(n);
  return n;
}

GPExpr *gp_expr_annotate(GPExpr *e, const GPType *checked_type, uint32_t line, uint32_t col) {
  if (gp_kind(e) == GP_TI_OP) return e; /* ops are shared and immortal */
  if (e->checked_type == checked_type && e->line == line && e->col == col) return gp_retain(e);
  GPExpr *n = copy_with(e, NULL);
  n->checked_type = checked_type;
  n->line = line;
  n->col = col;
  sum_init(n);
  return n;
}

GPExpr *gp_expr_with_children(GPExpr *e, GPExpr *const *kids, bool keep_type) {
  int32_t nk = gp_expr_num_children(e);
  GPExpr *own[8];
  GPExpr **cur = nk > 8 ? gp_malloc((size_t)nk * sizeof(GPExpr *)) : own;
  gp_expr_children(e, cur, nk);
  bool same = true;
  for (int32_t i = 0; i < nk && same; i++) same = cur[i] == kids[i];
  if (cur != own) gp_free(cur);
  if (same) return gp_retain(e);
  for (int32_t i = 0; i < nk; i++)
    if (!check_expr(kids[i], "rebuild: child")) return NULL;
  if (gp_kind(e) == GP_TI_FUNCTION_EXPR || gp_kind(e) == GP_TI_LET) {
    int32_t np = gp_kind(e) == GP_TI_LET ? 1 : GP_AS(GPFunctionExpr, e)->nparams;
    for (int32_t i = 0; i < np; i++)
      if (gp_kind(kids[i]) != GP_TI_VAR) {
        gp_error_set(GP_ERR_VALUE, "rebuild: a bound name must stay a var");
        return NULL;
      }
  }
  GPExpr *n = copy_with(e, kids);
  if (!keep_type && gp_kind(e) != GP_TI_VAR && gp_kind(e) != GP_TI_CONSTANT) {
    n->checked_type = NULL;
    sum_init(n);
  }
  return n;
}

const char *gp_expr_kind_name(const GPExpr *e) {
  switch (gp_kind(e)) {
  case GP_TI_VAR: return "var";
  case GP_TI_GLOBAL_VAR: return "global var";
  case GP_TI_CONSTANT: return "constant";
  case GP_TI_CALL: return "call";
  case GP_TI_TUPLE: return "tuple";
  case GP_TI_TUPLE_GET_ITEM: return "tuple get-item";
  case GP_TI_FUNCTION_EXPR: return "function";
  case GP_TI_LET: return "let";
  case GP_TI_IF: return "if";
  case GP_TI_OP: return "op";
  default: return "unknown";
  }
}
