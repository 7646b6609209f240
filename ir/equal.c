/*
 * equal.c -- structural equality, hashing and first-difference reports.
 *
 * Equality is graph aware: compound nodes (call, tuple, get-item, function, let, if) of the two
 * sides are matched one to one, so a node used twice on one side must correspond to a single
 * node on the other.  Bound variables (function params, let vars) match positionally when their
 * binders are compared; free variables compare by pointer; global vars by name; ops by pointer;
 * attributes with gp_attrs_eq; constants by dtype, shape and bytes (constants without data by
 * type; constants are compared by value at every use, never matched one to one).  checked_type
 * and locations are ignored.  The walk is an explicit stack of pairs: linear, no recursion.
 *
 * The hash is a memoized bottom-up hash over the same fields (bound vars hash by binder kind,
 * position and annotation; free vars by pointer), so equal expressions hash equally.
 */
#include "ir/ir.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Equality                                                                                    */

typedef struct Pair {
  const GPExpr *a, *b;
} Pair;

typedef struct Cmp {
  GPPtrMap ab, ba;
  Pair *stack;
  size_t n, cap;
  GPBuf *why; /* reason for the first difference, or NULL */
} Cmp;

static void push_pair(Cmp *c, const GPExpr *a, const GPExpr *b) {
  if (c->n == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 64;
    c->stack = gp_realloc(c->stack, c->cap * sizeof(Pair));
  }
  c->stack[c->n++] = (Pair){a, b};
}

static void cmp_free(Cmp *c) {
  gp_map_free(&c->ab);
  gp_map_free(&c->ba);
  gp_free(c->stack);
  memset(c, 0, sizeof *c);
}

static void put_node(GPBuf *b, const GPExpr *e) {
  switch (gp_kind(e)) {
  case GP_TI_CALL: {
    const GPExpr *op = ((const GPCall *)e)->op;
    gp_buf_puts(b, "call ");
    if (gp_kind(op) == GP_TI_OP) gp_buf_puts(b, ((const GPOp *)op)->name);
    else if (gp_kind(op) == GP_TI_GLOBAL_VAR) gp_buf_printf(b, "@%s", ((const GPGlobalVar *)op)->name);
    else gp_buf_puts(b, gp_expr_kind_name(op));
    break;
  }
  case GP_TI_VAR: gp_buf_printf(b, "var %%%s", ((const GPVar *)e)->name ? ((const GPVar *)e)->name : ""); break;
  case GP_TI_GLOBAL_VAR: gp_buf_printf(b, "@%s", ((const GPGlobalVar *)e)->name); break;
  case GP_TI_OP: gp_buf_printf(b, "op %s", ((const GPOp *)e)->name); break;
  default: gp_buf_puts(b, gp_expr_kind_name(e)); break;
  }
}

static void put_loc(GPBuf *b, const GPExpr *a, const GPExpr *bb) {
  const GPExpr *e = a->line ? a : bb;
  if (e->line) gp_buf_printf(b, " at %u:%u", e->line, e->col);
}

/* Record the reason (first difference) when a report was asked for.  Returns false. */
static bool fail(Cmp *c, const GPExpr *a, const GPExpr *b, const char *fmt, ...) GP_FMT(4, 5);
static bool fail(Cmp *c, const GPExpr *a, const GPExpr *b, const char *fmt, ...) {
  if (!c->why) return false;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  gp_buf_puts(c->why, msg);
  put_loc(c->why, a, b);
  return false;
}

static bool fail_kind(Cmp *c, const GPExpr *a, const GPExpr *b) {
  if (!c->why) return false;
  GPBuf x = {0}, y = {0};
  put_node(&x, a);
  /* "call nn.relu vs nn.sigmoid" when both are op calls */
  if (gp_kind(a) == GP_TI_CALL && gp_kind(b) == GP_TI_CALL) {
    const GPExpr *op = ((const GPCall *)b)->op;
    if (gp_kind(op) == GP_TI_OP) gp_buf_puts(&y, ((const GPOp *)op)->name);
    else if (gp_kind(op) == GP_TI_GLOBAL_VAR) gp_buf_printf(&y, "@%s", ((const GPGlobalVar *)op)->name);
    else gp_buf_puts(&y, gp_expr_kind_name(op));
  } else {
    put_node(&y, b);
  }
  fail(c, a, b, "%s vs %s", x.data, y.data);
  gp_buf_free(&x);
  gp_buf_free(&y);
  return false;
}

static void put_shape(GPBuf *b, const DLTensor *t) {
  char dt[24];
  gp_buf_printf(b, "%s (", gp_dtype_str(t->dtype, dt));
  for (int32_t i = 0; i < t->ndim; i++) gp_buf_printf(b, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
  gp_buf_putc(b, ')');
}

/* Bytes of element k (row-major over the logical shape) of t. */
static const uint8_t *elem_ptr(const GPTensor *t, int64_t k, size_t es) {
  const DLTensor *dl = &t->dl;
  const uint8_t *base = (const uint8_t *)dl->data + dl->byte_offset;
  if (!dl->strides) return base + (size_t)k * es;
  int64_t off = 0;
  for (int32_t d = dl->ndim - 1; d >= 0; d--) {
    int64_t i = dl->shape[d] ? k % dl->shape[d] : 0;
    k = dl->shape[d] ? k / dl->shape[d] : 0;
    off += i * dl->strides[d];
  }
  return base + off * (int64_t)es;
}

static bool const_eq(Cmp *c, const GPConstant *x, const GPConstant *y) {
  const GPTensor *tx = x->data, *ty = y->data;
  const GPExpr *ex = &x->base, *ey = &y->base;
  if (!tx || !ty) {
    if (tx != ty) return fail(c, ex, ey, "constant with and without a tensor");
    return true;
  }
  const DLTensor *a = &tx->dl, *b = &ty->dl;
  bool same = gp_dtype_eq(a->dtype, b->dtype) && a->ndim == b->ndim;
  for (int32_t i = 0; same && i < a->ndim; i++) same = a->shape[i] == b->shape[i];
  if (!same) {
    if (!c->why) return false;
    GPBuf sa = {0}, sb = {0};
    put_shape(&sa, a);
    put_shape(&sb, b);
    fail(c, ex, ey, "constant %s vs %s", sa.data, sb.data);
    gp_buf_free(&sa);
    gp_buf_free(&sb);
    return false;
  }
  if (!a->data || !b->data) {
    if (a->data != b->data) return fail(c, ex, ey, "constant with and without data");
    return true;
  }
  size_t es = gp_dtype_bytes(a->dtype);
  int64_t numel = 1;
  for (int32_t i = 0; i < a->ndim; i++) numel *= a->shape[i];
  if (gp_tensor_is_compact(tx) && gp_tensor_is_compact(ty)) {
    const uint8_t *pa = (const uint8_t *)a->data + a->byte_offset;
    const uint8_t *pb = (const uint8_t *)b->data + b->byte_offset;
    if (memcmp(pa, pb, (size_t)numel * es) == 0) return true;
  }
  for (int64_t k = 0; k < numel; k++) {
    if (memcmp(elem_ptr(tx, k, es), elem_ptr(ty, k, es), es) != 0) {
      if (a->dtype.code == kDLFloat)
        return fail(c, ex, ey, "constant values differ at element %lld (%g vs %g)", (long long)k,
                    gp_tensor_get_f64(tx, k), gp_tensor_get_f64(ty, k));
      return fail(c, ex, ey, "constant values differ at element %lld (%lld vs %lld)",
                  (long long)k, (long long)gp_tensor_get_i64(tx, k),
                  (long long)gp_tensor_get_i64(ty, k));
    }
  }
  return true;
}

/* An op call's attributes that say nothing beyond the schema defaults (NULL included): such a
 * call equals one built without attributes. */
static bool attrs_default(const GPExpr *op, const GPAttrs *a) {
  if (!a) return true;
  if (!op || gp_kind(op) != GP_TI_OP) return false;
  const GPOp *o = (const GPOp *)op;
  for (int32_t i = 0; i < a->n; i++) {
    const GPAttrField *fld = NULL;
    for (int32_t j = 0; j < o->num_attrs && !fld; j++)
      if (strcmp(o->attrs[j].name, a->keys[i]) == 0) fld = &o->attrs[j];
    if (!fld || fld->required || !gp_attr_value_eq(&a->values[i], &fld->default_value)) return false;
  }
  return true;
}

static bool attrs_eq(Cmp *c, const GPExpr *ea, const GPExpr *eb, const GPAttrs *a,
                     const GPAttrs *b, const char *what) {
  if (gp_attrs_eq(a, b)) return true;
  if (gp_kind(ea) == GP_TI_CALL && attrs_default(((const GPCall *)ea)->op, a) &&
      attrs_default(((const GPCall *)eb)->op, b))
    return true;
  if (!c->why) return false;
  GPBuf m = {0};
  put_node(&m, ea);
  gp_buf_printf(&m, ": %s differ", what);
  if (!a || !b) {
    gp_buf_puts(&m, a ? " (set vs none)" : " (none vs set)");
  } else {
    /* first key whose value differs or is missing */
    for (int32_t i = 0; i < a->n; i++) {
      const GPAttrValue *vb = gp_attrs_get(b, a->keys[i]);
      if (vb && gp_attr_value_eq(&a->values[i], vb)) continue;
      gp_buf_printf(&m, " (%s=", a->keys[i]);
      gp_attr_value_print(&m, &a->values[i]);
      gp_buf_puts(&m, " vs ");
      if (vb) gp_attr_value_print(&m, vb);
      else gp_buf_puts(&m, "absent");
      gp_buf_putc(&m, ')');
      break;
    }
    if (a->n != b->n) gp_buf_printf(&m, " (%d vs %d keys)", (int)a->n, (int)b->n);
  }
  fail(c, ea, eb, "%s", m.data);
  gp_buf_free(&m);
  return false;
}

static bool type_eq(Cmp *c, const GPExpr *ea, const GPExpr *eb, const GPType *x, const GPType *y,
                    const char *what) {
  if (x == y) return true;
  if (!c->why) return false;
  GPBuf sx = {0}, sy = {0};
  if (x) gp_type_print(&sx, x);
  else gp_buf_puts(&sx, "none");
  if (y) gp_type_print(&sy, y);
  else gp_buf_puts(&sy, "none");
  GPBuf m = {0};
  put_node(&m, ea);
  fail(c, ea, eb, "%s: %s %s vs %s", m.data, what, sx.data, sy.data);
  gp_buf_free(&m);
  gp_buf_free(&sx);
  gp_buf_free(&sy);
  return false;
}

/* Match a binding occurrence (param or let var). */
static bool bind_var(Cmp *c, const GPVar *a, const GPVar *b) {
  const GPExpr *ma = gp_map_get(&c->ab, a), *mb = gp_map_get(&c->ba, b);
  if (ma || mb) {
    if (ma != &b->base || mb != &a->base)
      return fail(c, &a->base, &b->base, "var %%%s bound twice", a->name ? a->name : "");
    return true;
  }
  if (!type_eq(c, &a->base, &b->base, a->type_annotation, b->type_annotation, "annotation"))
    return false;
  gp_map_put(&c->ab, a, (void *)b);
  gp_map_put(&c->ba, b, (void *)a);
  return true;
}

static bool cmp_run(Cmp *c, const GPExpr *root_a, const GPExpr *root_b) {
  push_pair(c, root_a, root_b);
  while (c->n) {
    Pair pr = c->stack[--c->n];
    const GPExpr *a = pr.a, *b = pr.b;
    int32_t k = gp_kind(a);
    if (k != gp_kind(b)) return fail_kind(c, a, b);
    switch (k) {
    case GP_TI_OP:
      if (a != b) return fail(c, a, b, "op %s vs %s", ((const GPOp *)a)->name, ((const GPOp *)b)->name);
      continue;
    case GP_TI_GLOBAL_VAR:
      if (strcmp(((const GPGlobalVar *)a)->name, ((const GPGlobalVar *)b)->name) != 0)
        return fail_kind(c, a, b);
      continue;
    case GP_TI_CONSTANT:
      if (a != b && !const_eq(c, (const GPConstant *)a, (const GPConstant *)b)) return false;
      continue;
    case GP_TI_VAR: {
      const GPExpr *ma = gp_map_get(&c->ab, a), *mb = gp_map_get(&c->ba, b);
      if (ma || mb) {
        if (ma != b || mb != a) {
          if (!c->why) return false;
          const char *na = ((const GPVar *)a)->name, *nb = ((const GPVar *)b)->name;
          return fail(c, a, b, "var %%%s vs %%%s", na ? na : "", nb ? nb : "");
        }
        continue;
      }
      if (a != b) {
        const char *na = ((const GPVar *)a)->name, *nb = ((const GPVar *)b)->name;
        return fail(c, a, b, "free var %%%s vs %%%s", na ? na : "", nb ? nb : "");
      }
      gp_map_put(&c->ab, a, (void *)b);
      gp_map_put(&c->ba, b, (void *)a);
      continue;
    }
    default: break;
    }
    /* compound: one-to-one matching */
    const GPExpr *ma = gp_map_get(&c->ab, a), *mb = gp_map_get(&c->ba, b);
    if (ma || mb) {
      if (ma == b && mb == a) continue;
      if (!c->why) return false;
      GPBuf m = {0};
      put_node(&m, a);
      fail(c, a, b, "%s: sharing differs (a node used more than once on one side only)", m.data);
      gp_buf_free(&m);
      return false;
    }
    gp_map_put(&c->ab, a, (void *)b);
    gp_map_put(&c->ba, b, (void *)a);
    switch (k) {
    case GP_TI_CALL: {
      const GPCall *x = (const GPCall *)a, *y = (const GPCall *)b;
      if (gp_kind(x->op) == GP_TI_OP || gp_kind(y->op) == GP_TI_OP) {
        if (x->op != y->op) return fail_kind(c, a, b);
      }
      if (x->nargs != y->nargs) {
        GPBuf m = {0};
        put_node(&m, a);
        fail(c, a, b, "%s: %d vs %d arguments", m.data ? m.data : "", (int)x->nargs, (int)y->nargs);
        gp_buf_free(&m);
        return false;
      }
      if (!attrs_eq(c, a, b, x->attrs, y->attrs, "attributes")) return false;
      for (int32_t i = x->nargs - 1; i >= 0; i--) push_pair(c, x->args[i], y->args[i]);
      if (gp_kind(x->op) != GP_TI_OP) push_pair(c, x->op, y->op);
      break;
    }
    case GP_TI_TUPLE: {
      const GPTuple *x = (const GPTuple *)a, *y = (const GPTuple *)b;
      if (x->n != y->n) return fail(c, a, b, "tuple of %d vs %d fields", (int)x->n, (int)y->n);
      for (int32_t i = x->n - 1; i >= 0; i--) push_pair(c, x->fields[i], y->fields[i]);
      break;
    }
    case GP_TI_TUPLE_GET_ITEM: {
      const GPTupleGetItem *x = (const GPTupleGetItem *)a, *y = (const GPTupleGetItem *)b;
      if (x->index != y->index)
        return fail(c, a, b, "tuple item .%d vs .%d", (int)x->index, (int)y->index);
      push_pair(c, x->tuple, y->tuple);
      break;
    }
    case GP_TI_FUNCTION_EXPR: {
      const GPFunctionExpr *x = (const GPFunctionExpr *)a, *y = (const GPFunctionExpr *)b;
      if (x->nparams != y->nparams)
        return fail(c, a, b, "function of %d vs %d params", (int)x->nparams, (int)y->nparams);
      if (!type_eq(c, a, b, x->ret_type, y->ret_type, "return type")) return false;
      if (!attrs_eq(c, a, b, x->attrs, y->attrs, "attributes")) return false;
      for (int32_t i = 0; i < x->nparams; i++)
        if (!bind_var(c, x->params[i], y->params[i])) return false;
      push_pair(c, x->body, y->body);
      break;
    }
    case GP_TI_LET: {
      const GPLet *x = (const GPLet *)a, *y = (const GPLet *)b;
      if (!bind_var(c, x->var, y->var)) return false;
      push_pair(c, x->body, y->body);
      push_pair(c, x->value, y->value);
      break;
    }
    case GP_TI_IF: {
      const GPIf *x = (const GPIf *)a, *y = (const GPIf *)b;
      push_pair(c, x->else_branch, y->else_branch);
      push_pair(c, x->then_branch, y->then_branch);
      push_pair(c, x->cond, y->cond);
      break;
    }
    default: return fail_kind(c, a, b);
    }
  }
  return true;
}

bool gp_expr_equal(const GPExpr *a, const GPExpr *b) {
  if (a == b) return true;
  if (!a || !b) return false;
  Cmp c;
  memset(&c, 0, sizeof c);
  bool r = cmp_run(&c, a, b);
  cmp_free(&c);
  return r;
}

/* Compare modules; with why set, the first difference is described there. */
static bool module_cmp(const GPModule *a, const GPModule *b, GPBuf *why) {
  if (a == b) return true;
  if (!a || !b) {
    if (why) gp_buf_puts(why, "module vs NULL");
    return false;
  }
  int32_t n = a->num_functions < b->num_functions ? a->num_functions : b->num_functions;
  for (int32_t i = 0; i < n; i++) {
    if (strcmp(a->gvars[i]->name, b->gvars[i]->name) != 0) {
      if (why) gp_buf_printf(why, "function %d: @%s vs @%s", (int)i, a->gvars[i]->name, b->gvars[i]->name);
      return false;
    }
    Cmp c;
    memset(&c, 0, sizeof c);
    GPBuf r = {0};
    c.why = why ? &r : NULL;
    bool ok = cmp_run(&c, (const GPExpr *)a->funcs[i], (const GPExpr *)b->funcs[i]);
    cmp_free(&c);
    if (!ok) {
      if (why) gp_buf_printf(why, "@%s: %s", a->gvars[i]->name, r.data ? r.data : "differs");
      gp_buf_free(&r);
      return false;
    }
    gp_buf_free(&r);
  }
  if (a->num_functions != b->num_functions) {
    if (why) {
      const GPModule *m = a->num_functions > n ? a : b;
      gp_buf_printf(why, "%d vs %d functions (@%s only in %s)", (int)a->num_functions,
                    (int)b->num_functions, m->gvars[n]->name, m == a ? "the first" : "the second");
    }
    return false;
  }
  return true;
}

bool gp_module_equal(const GPModule *a, const GPModule *b) { return module_cmp(a, b, NULL); }

char *gp_module_diff(const GPModule *a, const GPModule *b) {
  GPBuf why = {0};
  if (module_cmp(a, b, &why)) {
    gp_buf_free(&why);
    return NULL;
  }
  if (!why.len) gp_buf_puts(&why, "modules differ");
  return gp_buf_take(&why);
}

/* ------------------------------------------------------------------------------------------ */
/* Hashing                                                                                     */

static uint64_t hash_str(const char *s) { return gp_hash_bytes(s, strlen(s), 0x51ed27u); }

static uint64_t hash_ptr(const void *p) {
  uintptr_t v = (uintptr_t)p;
  return gp_hash_bytes(&v, sizeof v, 0x7f4a7c15u);
}

static uint64_t hash_const(const GPConstant *c) {
  const GPTensor *t = c->data;
  uint64_t h = 0xc0257a47u;
  if (!t) return h;
  const DLTensor *dl = &t->dl;
  h = gp_hash_mix(h, (uint64_t)dl->dtype.code << 16 | (uint64_t)dl->dtype.bits << 8 | dl->dtype.lanes);
  h = gp_hash_mix(h, (uint64_t)dl->ndim);
  int64_t numel = 1;
  for (int32_t i = 0; i < dl->ndim; i++) {
    h = gp_hash_mix(h, (uint64_t)dl->shape[i]);
    numel *= dl->shape[i];
  }
  if (!dl->data) return gp_hash_mix(h, 0x6e6f6461u);
  size_t es = gp_dtype_bytes(dl->dtype);
  if (gp_tensor_is_compact(t)) {
    return gp_hash_mix(h, gp_hash_bytes((const uint8_t *)dl->data + dl->byte_offset, (size_t)numel * es, 1));
  }
  uint64_t d = 1;
  for (int64_t k = 0; k < numel; k++) d = gp_hash_mix(d, gp_hash_bytes(elem_ptr(t, k, es), es, 1));
  return gp_hash_mix(h, d);
}

/* Bottom-up over the post order of root.  Bound vars hash by binder kind and position. */
static uint64_t hash_expr(const GPExpr *root) {
  GPNodeIndex ni;
  if (gp_ni_build(&ni, (GPExpr *)root, 0) != 0) return 0;
  size_t n = ni.n;
  uint64_t *h = gp_malloc((n ? n : 1) * sizeof(uint64_t));
  uint64_t *tag = gp_calloc(n ? n : 1, sizeof(uint64_t));
  for (size_t i = 0; i < n; i++) {
    const GPExpr *e = ni.nodes[i];
    if (gp_kind(e) == GP_TI_FUNCTION_EXPR) {
      const GPFunctionExpr *f = (const GPFunctionExpr *)e;
      for (int32_t j = 0; j < f->nparams; j++) tag[gp_ni_kid(&ni, (int32_t)i, j)] = ((uint64_t)j << 1) + 1;
    } else if (gp_kind(e) == GP_TI_LET) {
      tag[gp_ni_kid(&ni, (int32_t)i, 0)] = 2;
    }
  }
  for (size_t i = 0; i < n; i++) {
    const GPExpr *e = ni.nodes[i];
    uint64_t v = (uint64_t)gp_kind(e) * 0x9e3779b97f4a7c15ull;
    switch (gp_kind(e)) {
    case GP_TI_VAR: {
      const GPVar *x = (const GPVar *)e;
      v = gp_hash_mix(v, tag[i] ? tag[i] : hash_ptr(x));
      v = gp_hash_mix(v, hash_ptr(x->type_annotation));
      break;
    }
    case GP_TI_GLOBAL_VAR: v = gp_hash_mix(v, hash_str(((const GPGlobalVar *)e)->name)); break;
    case GP_TI_OP: v = gp_hash_mix(v, hash_str(((const GPOp *)e)->name)); break;
    case GP_TI_CONSTANT: v = gp_hash_mix(v, hash_const((const GPConstant *)e)); break;
    case GP_TI_CALL: {
      const GPCall *x = (const GPCall *)e;
      v = gp_hash_mix(v, gp_attrs_hash(attrs_default(x->op, x->attrs) ? NULL : x->attrs));
      break;
    }
    case GP_TI_TUPLE_GET_ITEM: v = gp_hash_mix(v, (uint64_t)((const GPTupleGetItem *)e)->index); break;
    case GP_TI_FUNCTION_EXPR: {
      const GPFunctionExpr *x = (const GPFunctionExpr *)e;
      v = gp_hash_mix(v, hash_ptr(x->ret_type));
      v = gp_hash_mix(v, gp_attrs_hash(x->attrs));
      break;
    }
    default: break;
    }
    /* children in gp_expr_children order (with their count) */
    v = gp_hash_mix(v, (uint64_t)(ni.kid_off[i + 1] - ni.kid_off[i]));
    for (int32_t j = ni.kid_off[i]; j < ni.kid_off[i + 1]; j++) v = gp_hash_mix(v, h[ni.kids[j]]);
    h[i] = v;
  }
  uint64_t r = n ? h[n - 1] : 0;
  gp_free(h);
  gp_free(tag);
  gp_ni_free(&ni);
  return r;
}

uint64_t gp_expr_hash(const GPExpr *e) {
  if (!e) return 0;
  return hash_expr(e);
}

uint64_t gp_module_hash(const GPModule *m) {
  uint64_t h = 0x6d6f64756c65ull;
  if (!m) return h;
  h = gp_hash_mix(h, (uint64_t)m->num_functions);
  for (int32_t i = 0; i < m->num_functions; i++) {
    h = gp_hash_mix(h, hash_str(m->gvars[i]->name));
    h = gp_hash_mix(h, gp_expr_hash((const GPExpr *)m->funcs[i]));
  }
  return h;
}
