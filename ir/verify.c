/*
 * verify.c -- the well-formedness verifier (gp_verify).
 *
 * Checks, iteratively and in linear time:
 *  - every var is bound exactly once in the whole module (function params, let vars);
 *  - every use of a var is in scope: inside the body of the function binding it, or inside the
 *    value or body of the let binding it (a let var is in scope in its own value, as in Relay,
 *    for recursive closures); global functions have no free vars;
 *  - every global var refers to a function of the module (by name);
 *  - where checked types are present they are consistent with the children's checked types
 *    (op calls: the relation's result; tuples, get-items, lets, ifs, functions, calls of
 *    functions, constants, annotated vars, global vars).
 *
 * Shared nodes (the IR is a DAG) are checked once, in the scope of their first visit.  Each node
 * also records one of its free vars, the one bound deepest (its "requirement"); every later use
 * of the node checks that this var is still in scope, which catches a subexpression shared into
 * a place outside the scope of a var it uses, at O(1) per edge.  (When the deepest free var of a
 * let or function body is the node's own binder, the requirement falls back to the other
 * children's, so the check never reports a false error; it may miss some.)
 *
 * Errors: GP_ERR_VERIFY "verify: @fn: <source>:<line>:<col>: <node>: <what>".
 */
#include "ir/ir.h"
#include "common/scratch.h"

#include <string.h>

typedef struct {
  const GPExpr *binder; /* the function or let binding the var */
  int32_t depth;        /* nesting depth of the binding (1 = outermost) */
  int32_t fn;           /* global function where it is bound */
  bool active;          /* currently in scope */
} VarInfo;

typedef struct {
  GPExpr *e;
  uint32_t state;
  uint32_t line, col; /* the node's location, or the nearest ancestor's */
  int64_t slot;       /* where the requirement goes in the slot stack; -1: the `done` map */
  int64_t base;       /* the children's slots (child order); -1 until allocated */
} VFrame;

typedef struct {
  const GPModule *m;
  int32_t cur_fn;
  GPPtrMap vars; /* var -> index + 1 into vi */
  VarInfo *vi;
  size_t nvi, vi_cap;
  GPPtrMap done; /* shared node -> requirement (a GPVar*) or the sentinel `none` */
  void **slots;  /* slot stack: requirements of unshared children (a node held by one
                  * reference has one parent, so only shared nodes need the map) */
  int64_t nslots, slots_cap;
  VFrame *st;
  size_t n, cap;
  int32_t depth;
  GPExpr **kids;
  size_t kids_cap;
  const GPType **tys;
  size_t tys_cap;
} Verify;

static char none_sentinel;
#define NONE ((void *)&none_sentinel)

static GPExpr **kids_buf(Verify *V, size_t n) {
  if (n > V->kids_cap) {
    V->kids_cap = n < 16 ? 16 : n;
    gp_free(V->kids);
    V->kids = gp_malloc(V->kids_cap * sizeof *V->kids);
  }
  return V->kids;
}

static const GPType **tys_buf(Verify *V, size_t n) {
  if (n > V->tys_cap) {
    V->tys_cap = n < 16 ? 16 : n;
    gp_free(V->tys);
    V->tys = gp_malloc(V->tys_cap * sizeof *V->tys);
  }
  return V->tys;
}

static void push(Verify *V, GPExpr *e, uint32_t line, uint32_t col, int64_t slot) {
  if (V->n == V->cap) {
    V->cap = V->cap ? V->cap * 2 : 64;
    V->st = gp_realloc(V->st, V->cap * sizeof *V->st);
  }
  /* a var's or global var's own location is where it is defined: keep the user's */
  if (e->line && gp_kind(e) != GP_TI_VAR && gp_kind(e) != GP_TI_GLOBAL_VAR) {
    line = e->line;
    col = e->col;
  }
  V->st[V->n++] = (VFrame){e, 0, line, col, slot, -1};
}

static void slots_alloc(Verify *V, VFrame *f, int32_t nk) {
  if (V->nslots + nk > V->slots_cap) {
    while (V->nslots + nk > V->slots_cap) V->slots_cap = V->slots_cap ? V->slots_cap * 2 : 256;
    V->slots = gp_scratch_realloc(V->slots, (size_t)V->slots_cap * sizeof *V->slots);
  }
  f->base = V->nslots;
  memset(V->slots + V->nslots, 0, (size_t)nk * sizeof *V->slots);
  V->nslots += nk;
}

/* Record the requirement of the node of frame f (checked). */
static void done_put(Verify *V, const VFrame *f, void *req) {
  if (f->slot >= 0)
    V->slots[f->slot] = req;
  else
    gp_map_put(&V->done, f->e, req);
  if (f->base >= 0) V->nslots = f->base; /* its children's slots are no longer needed */
}

static VarInfo *info(Verify *V, const void *var) {
  size_t i = (size_t)(uintptr_t)gp_map_get(&V->vars, var);
  return i ? &V->vi[i - 1] : NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Errors                                                                                      */

static void put_type(GPBuf *b, const GPType *t) {
  if (t)
    gp_type_print(b, t);
  else
    gp_buf_puts(b, "<untyped>");
}

/* A name for a node in messages: "call add", "var %x", "let %x", "global var @g", "tuple". */
static void node_name(GPBuf *b, const GPExpr *e) {
  switch (gp_kind(e)) {
  case GP_TI_CALL: {
    const GPExpr *op = GP_AS(const GPCall, e)->op;
    if (gp_kind(op) == GP_TI_OP)
      gp_buf_printf(b, "call %s", GP_AS(const GPOp, op)->name);
    else if (gp_kind(op) == GP_TI_GLOBAL_VAR)
      gp_buf_printf(b, "call @%s", GP_AS(const GPGlobalVar, op)->name);
    else if (gp_kind(op) == GP_TI_VAR)
      gp_buf_printf(b, "call %%%s", GP_AS(const GPVar, op)->name);
    else
      gp_buf_puts(b, "call of a function");
    break;
  }
  case GP_TI_VAR: gp_buf_printf(b, "var %%%s", GP_AS(const GPVar, e)->name); break;
  case GP_TI_LET: gp_buf_printf(b, "let %%%s", GP_AS(const GPLet, e)->var->name); break;
  case GP_TI_GLOBAL_VAR: gp_buf_printf(b, "global var @%s", GP_AS(const GPGlobalVar, e)->name); break;
  default: gp_buf_puts(b, gp_expr_kind_name(e)); break;
  }
}

/* "verify: @fn: <loc>: " into b. */
static void head(Verify *V, GPBuf *b, uint32_t line, uint32_t col) {
  gp_buf_puts(b, "verify: ");
  if (V->cur_fn >= 0) gp_buf_printf(b, "@%s: ", V->m->gvars[V->cur_fn]->name);
  if (line) gp_buf_printf(b, "%s:%u:%u: ", V->m->source_name ? V->m->source_name : "<input>", line, col);
}

/* GP_ERR_VERIFY: head, then `msg` (taken). */
static int fail(Verify *V, uint32_t line, uint32_t col, GPBuf *msg) {
  GPBuf b = {0};
  head(V, &b, line, col);
  gp_buf_puts(&b, msg->data ? msg->data : "");
  gp_error_set(GP_ERR_VERIFY, "%s", b.data);
  gp_buf_free(&b);
  gp_buf_free(msg);
  return -1;
}

/* "<node>: checked type X differs from Y (<why>)". */
static int type_mismatch(Verify *V, const VFrame *f, const GPType *have, const GPType *want,
                         const char *why) {
  GPBuf msg = {0};
  node_name(&msg, f->e);
  gp_buf_puts(&msg, ": checked type ");
  put_type(&msg, have);
  gp_buf_puts(&msg, " differs from ");
  put_type(&msg, want);
  gp_buf_printf(&msg, " (%s)", why);
  return fail(V, f->line, f->col, &msg);
}

/* ------------------------------------------------------------------------------------------ */
/* Binding and uses                                                                            */

static int bind(Verify *V, GPVar *v, const GPExpr *binder, const VFrame *f) {
  uint32_t line = v->base.line ? v->base.line : f->line, col = v->base.line ? v->base.col : f->col;
  VarInfo *old = info(V, v);
  if (old) {
    GPBuf msg = {0};
    gp_buf_printf(&msg, "var %%%s is bound twice", v->name);
    if (old->fn != V->cur_fn && old->fn >= 0)
      gp_buf_printf(&msg, " (also in @%s)", V->m->gvars[old->fn]->name);
    return fail(V, line, col, &msg);
  }
  if (v->type_annotation && v->base.checked_type && v->type_annotation != v->base.checked_type) {
    GPBuf msg = {0};
    gp_buf_printf(&msg, "var %%%s: checked type ", v->name);
    put_type(&msg, v->base.checked_type);
    gp_buf_puts(&msg, " differs from its annotation ");
    put_type(&msg, v->type_annotation);
    return fail(V, line, col, &msg);
  }
  if (V->nvi == V->vi_cap) {
    V->vi_cap = V->vi_cap ? V->vi_cap * 2 : 64;
    V->vi = gp_realloc(V->vi, V->vi_cap * sizeof *V->vi);
  }
  V->vi[V->nvi++] = (VarInfo){binder, ++V->depth, V->cur_fn, true};
  gp_map_put(&V->vars, v, (void *)(uintptr_t)V->nvi);
  return 0;
}

static void unbind(Verify *V, GPVar *v) {
  VarInfo *vi = info(V, v);
  if (vi) vi->active = false;
  V->depth--;
}

/* A use of `c` (f: its frame, located at the user when c is a var): checks the scope of a var
 * use or of a node checked before; returns 1 when c still has to be checked, 0 when fine, -1 on
 * error. */
static int use(Verify *V, GPExpr *c, const VFrame *f) {
  if (gp_kind(c) == GP_TI_VAR) {
    GPVar *v = GP_AS(GPVar, c);
    VarInfo *vi = info(V, v);
    GPBuf msg = {0};
    if (!vi) {
      gp_buf_printf(&msg, "var %%%s is free (not bound by any enclosing function or let)",
                    v->name);
      return fail(V, f->line, f->col, &msg);
    }
    if (!vi->active) {
      gp_buf_printf(&msg, "var %%%s used outside its scope", v->name);
      return fail(V, f->line, f->col, &msg);
    }
    return 0;
  }
  void *req = gp_map_get(&V->done, c);
  if (!req) return 1;
  if (req != NONE) {
    VarInfo *vi = info(V, req);
    if (vi && !vi->active) {
      GPBuf msg = {0};
      gp_buf_printf(&msg, "var %%%s used outside its scope (through a shared ",
                    GP_AS(GPVar, req)->name);
      node_name(&msg, c);
      gp_buf_puts(&msg, ")");
      uint32_t line = c->line ? c->line : f->line, col = c->line ? c->col : f->col;
      return fail(V, line, col, &msg);
    }
  }
  return 0;
}

/* Visit child c of the node of frame f: checked when its frame is popped, so uses are checked
 * in children order. */
static int visit(Verify *V, GPExpr *c, const VFrame *f, int32_t pos) {
  push(V, c, f->line, f->col, f->base >= 0 && !gp_maybe_shared(c) ? f->base + pos : -1);
  return 0;
}

/* The requirement of child `pos` (node c) of frame f (its deepest free var), or NULL. */
static GPVar *req_of(Verify *V, const VFrame *f, int32_t pos, GPExpr *c) {
  if (gp_kind(c) == GP_TI_VAR) return info(V, c) ? GP_AS(GPVar, c) : NULL;
  void *r = f->base >= 0 ? V->slots[f->base + pos] : NULL;
  if (!r) r = gp_map_get(&V->done, c);
  return r && r != NONE ? r : NULL;
}

static GPVar *deeper(Verify *V, GPVar *a, GPVar *b) {
  if (!a) return b;
  if (!b) return a;
  return info(V, a)->depth >= info(V, b)->depth ? a : b;
}

/* ------------------------------------------------------------------------------------------ */
/* Type consistency of a node whose children are checked.                                      */

static bool is_bool_scalar(const GPType *t) {
  return t && t->kind == GP_TYPE_TENSOR && t->n == 0 && gp_dtype_eq(t->tensor.dtype, GP_DT_BOOL);
}

static int check_types(Verify *V, const VFrame *f) {
  GPExpr *e = f->e;
  const GPType *t = e->checked_type;
  if (!t) return 0;
  switch (gp_kind(e)) {
  case GP_TI_CONSTANT: {
    GPConstant *c = GP_AS(GPConstant, e);
    if (!c->data) return 0;
    const GPType *want = gp_tensor_type(c->data);
    if (!want) {
      gp_error_clear();
      return 0;
    }
    return want == t ? 0 : type_mismatch(V, f, t, want, "the type of its data");
  }
  case GP_TI_GLOBAL_VAR: {
    int32_t j = gp_module_find(V->m, GP_AS(GPGlobalVar, e)->name);
    const GPType *want = j >= 0 ? V->m->funcs[j]->base.checked_type : NULL;
    return !want || want == t ? 0 : type_mismatch(V, f, t, want, "the function's type");
  }
  case GP_TI_CALL: {
    GPCall *c = GP_AS(GPCall, e);
    const GPType **ty = tys_buf(V, (size_t)c->nargs);
    for (int32_t i = 0; i < c->nargs; i++)
      if (!(ty[i] = c->args[i]->checked_type)) return 0;
    if (gp_kind(c->op) == GP_TI_OP) {
      const GPType *want = gp_op_infer(GP_AS(const GPOp, c->op), c->attrs, ty, c->nargs);
      if (!want) {
        GPBuf msg = {0};
        node_name(&msg, e);
        gp_buf_puts(&msg, ": checked type ");
        put_type(&msg, t);
        gp_buf_printf(&msg, ", but its arguments do not type-check: %s", gp_error_message());
        gp_error_clear();
        return fail(V, f->line, f->col, &msg);
      }
      return want == t ? 0 : type_mismatch(V, f, t, want, "what its op gives for its arguments");
    }
    const GPType *ft = c->op->checked_type;
    if (!ft) return 0;
    GPBuf msg = {0};
    if (ft->kind != GP_TYPE_FUNC) {
      node_name(&msg, e);
      gp_buf_puts(&msg, ": the callee's checked type is not a function: ");
      put_type(&msg, ft);
      return fail(V, f->line, f->col, &msg);
    }
    if (ft->n != c->nargs) {
      node_name(&msg, e);
      gp_buf_printf(&msg, ": %d arguments for a function of %d parameters", c->nargs, ft->n);
      return fail(V, f->line, f->col, &msg);
    }
    for (int32_t i = 0; i < c->nargs; i++)
      if (ty[i] != ft->func.params[i]) {
        node_name(&msg, e);
        gp_buf_printf(&msg, ": argument %d has checked type ", i);
        put_type(&msg, ty[i]);
        gp_buf_puts(&msg, ", the parameter ");
        put_type(&msg, ft->func.params[i]);
        return fail(V, f->line, f->col, &msg);
      }
    return ft->func.ret == t ? 0 : type_mismatch(V, f, t, ft->func.ret, "the callee's return type");
  }
  case GP_TI_TUPLE: {
    GPTuple *tp = GP_AS(GPTuple, e);
    const GPType **ty = tys_buf(V, (size_t)tp->n);
    for (int32_t i = 0; i < tp->n; i++)
      if (!(ty[i] = tp->fields[i]->checked_type)) return 0;
    const GPType *want = gp_type_tuple(tp->n, ty);
    return want == t ? 0 : type_mismatch(V, f, t, want, "the tuple of its fields' types");
  }
  case GP_TI_TUPLE_GET_ITEM: {
    GPTupleGetItem *g = GP_AS(GPTupleGetItem, e);
    const GPType *tt = g->tuple->checked_type;
    if (!tt) return 0;
    if (tt->kind != GP_TYPE_TUPLE || g->index < 0 || g->index >= tt->n) {
      GPBuf msg = {0};
      gp_buf_printf(&msg, "tuple get-item: index %d is not a field of ", g->index);
      put_type(&msg, tt);
      return fail(V, f->line, f->col, &msg);
    }
    const GPType *want = tt->tuple.fields[g->index];
    return want == t ? 0 : type_mismatch(V, f, t, want, "the field's type");
  }
  case GP_TI_LET: {
    GPLet *l = GP_AS(GPLet, e);
    const GPType *vt = l->var->base.checked_type, *xt = l->value->checked_type;
    if (vt && xt && vt != xt) {
      GPBuf msg = {0};
      node_name(&msg, e);
      gp_buf_puts(&msg, ": the var's checked type ");
      put_type(&msg, vt);
      gp_buf_puts(&msg, " differs from its value's ");
      put_type(&msg, xt);
      return fail(V, f->line, f->col, &msg);
    }
    const GPType *bt = l->body->checked_type;
    return !bt || bt == t ? 0 : type_mismatch(V, f, t, bt, "the type of its body");
  }
  case GP_TI_IF: {
    GPIf *i = GP_AS(GPIf, e);
    const GPType *ct = i->cond->checked_type;
    if (ct && !is_bool_scalar(ct)) {
      GPBuf msg = {0};
      gp_buf_puts(&msg, "if: the condition's checked type is ");
      put_type(&msg, ct);
      gp_buf_puts(&msg, ", not a bool scalar");
      return fail(V, f->line, f->col, &msg);
    }
    const GPType *a = i->then_branch->checked_type, *b = i->else_branch->checked_type;
    if (a && a != t) return type_mismatch(V, f, t, a, "the type of its then branch");
    if (b && b != t) return type_mismatch(V, f, t, b, "the type of its else branch");
    return 0;
  }
  case GP_TI_FUNCTION_EXPR: {
    GPFunctionExpr *fn = GP_AS(GPFunctionExpr, e);
    const GPType *bt = fn->body->checked_type;
    if (fn->ret_type && bt && fn->ret_type != bt) {
      GPBuf msg = {0};
      gp_buf_puts(&msg, "function: the body's checked type ");
      put_type(&msg, bt);
      gp_buf_puts(&msg, " differs from the return type annotation ");
      put_type(&msg, fn->ret_type);
      return fail(V, f->line, f->col, &msg);
    }
    if (!bt) return 0;
    const GPType **ty = tys_buf(V, (size_t)fn->nparams);
    for (int32_t i = 0; i < fn->nparams; i++)
      if (!(ty[i] = fn->params[i]->base.checked_type)) return 0;
    const GPType *want = gp_type_func(fn->nparams, ty, bt);
    return want == t ? 0 : type_mismatch(V, f, t, want, "its params' and body's types");
  }
  default: return 0;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* The walk                                                                                    */

static int step(Verify *V, size_t at) {
  VFrame *sf = &V->st[at];
  bool revisit = sf->state == 0 && (gp_kind(sf->e) == GP_TI_VAR || (sf->slot < 0 && gp_map_has(&V->done, sf->e)));
  if (sf->state == 0 && !revisit) {
    int32_t nk = gp_expr_num_children(sf->e);
    if (nk > 0) slots_alloc(V, sf, nk);
  }
  VFrame f = *sf;
  GPExpr *e = f.e;
  if (f.state == 0) {
    if (revisit) {
      /* a use of a var, or of a node checked before: check the scope */
      V->n = at;
      return use(V, e, &f) < 0 ? -1 : 0;
    }
    switch (gp_kind(e)) {
    case GP_TI_OP:
      done_put(V, &f, NONE);
      V->n = at;
      return 0;
    case GP_TI_GLOBAL_VAR: {
      GPGlobalVar *g = GP_AS(GPGlobalVar, e);
      if (gp_module_find(V->m, g->name) < 0) {
        GPBuf msg = {0};
        gp_buf_printf(&msg, "global var @%s is not defined in the module", g->name);
        return fail(V, f.line, f.col, &msg);
      }
      if (check_types(V, &f) < 0) return -1;
      done_put(V, &f, NONE);
      V->n = at;
      return 0;
    }
    case GP_TI_CONSTANT:
      if (check_types(V, &f) < 0) return -1;
      done_put(V, &f, NONE);
      V->n = at;
      return 0;
    case GP_TI_FUNCTION_EXPR: {
      GPFunctionExpr *fn = GP_AS(GPFunctionExpr, e);
      for (int32_t i = 0; i < fn->nparams; i++)
        if (bind(V, fn->params[i], e, &f) < 0) return -1;
      V->st[at].state = 1;
      return visit(V, fn->body, &f, fn->nparams);
    }
    case GP_TI_LET: {
      GPLet *l = GP_AS(GPLet, e);
      if (bind(V, l->var, e, &f) < 0) return -1;
      V->st[at].state = 1;
      return visit(V, l->value, &f, 1);
    }
    default: {
      V->st[at].state = 1;
      int32_t nk = gp_expr_num_children(e);
      GPExpr **k = kids_buf(V, (size_t)nk);
      gp_expr_children(e, k, nk);
      /* last first, so that the first child is checked first (push does not touch V->kids) */
      for (int32_t i = nk - 1; i >= 0; i--)
        if (gp_kind(k[i]) != GP_TI_OP) visit(V, k[i], &f, i);
      return 0;
    }
    }
  }
  if (gp_kind(e) == GP_TI_LET && f.state == 1) {
    V->st[at].state = 2;
    return visit(V, GP_AS(GPLet, e)->body, &f, 2);
  }
  /* All children checked: requirement, types, end of scopes. */
  GPVar *req = NULL;
  switch (gp_kind(e)) {
  case GP_TI_FUNCTION_EXPR: {
    GPFunctionExpr *fn = GP_AS(GPFunctionExpr, e);
    GPVar *r = req_of(V, &f, fn->nparams, fn->body);
    if (r && info(V, r)->binder != e) req = r;
    break;
  }
  case GP_TI_LET: {
    GPLet *l = GP_AS(GPLet, e);
    GPVar *a = req_of(V, &f, 1, l->value), *b = req_of(V, &f, 2, l->body);
    if (a == l->var) a = NULL;
    if (b == l->var) b = NULL;
    req = deeper(V, a, b);
    break;
  }
  default: {
    int32_t nk = gp_expr_num_children(e);
    GPExpr **k = kids_buf(V, (size_t)nk);
    gp_expr_children(e, k, nk);
    for (int32_t i = 0; i < nk; i++) req = deeper(V, req, req_of(V, &f, i, k[i]));
    break;
  }
  }
  if (check_types(V, &f) < 0) return -1;
  if (gp_kind(e) == GP_TI_FUNCTION_EXPR) {
    GPFunctionExpr *fn = GP_AS(GPFunctionExpr, e);
    for (int32_t i = fn->nparams - 1; i >= 0; i--) unbind(V, fn->params[i]);
  } else if (gp_kind(e) == GP_TI_LET) {
    unbind(V, GP_AS(GPLet, e)->var);
  }
  done_put(V, &f, req ? (void *)req : NONE);
  V->n = at;
  return 0;
}

int gp_module_check_shape(const GPModule *m) {
  if (!m) {
    gp_error_set(GP_ERR_VERIFY, "verify: module: NULL module");
    return -1;
  }
  if (m->obj.type_index != GP_TI_MODULE) {
    gp_error_set(GP_ERR_VERIFY, "verify: module: object of type index %d is not a module", (int)m->obj.type_index);
    return -1;
  }
  if (m->num_functions < 0 || m->num_functions > m->capacity || (m->num_functions && (!m->gvars || !m->funcs))) {
    gp_error_set(GP_ERR_VERIFY, "verify: module: %d functions with capacity %d", (int)m->num_functions,
                 (int)m->capacity);
    return -1;
  }
  GPStrMap names = {0};
  int rc = 0;
  for (int32_t i = 0; i < m->num_functions && rc == 0; i++) {
    const GPGlobalVar *g = m->gvars[i];
    const GPFunctionExpr *f = m->funcs[i];
    if (!g || !g->name) {
      gp_error_set(GP_ERR_VERIFY, "verify: module: function %d has no global var", (int)i);
      rc = -1;
    } else if (!f) {
      gp_error_set(GP_ERR_VERIFY, "verify: module: @%s is NULL", g->name);
      rc = -1;
    } else if (gp_kind(&f->base) != GP_TI_FUNCTION_EXPR) {
      gp_error_set(GP_ERR_VERIFY, "verify: module: @%s is not a function", g->name);
      rc = -1;
    } else if (gp_strmap_has(&names, g->name)) {
      gp_error_set(GP_ERR_VERIFY, "verify: module: @%s is defined twice", g->name);
      rc = -1;
    } else {
      gp_strmap_put(&names, g->name, NULL);
    }
  }
  gp_strmap_free(&names);
  return rc;
}

int gp_verify(const GPModule *m) { return gp_verify_new(m, NULL); }

int gp_verify_new(const GPModule *m, const GPModule *old) {
  if (!m) {
    gp_error_set(GP_ERR_VALUE, "verify: NULL module");
    return -1;
  }
  if (gp_module_check_shape(m) != 0) return -1;
  gp_ops_init();
  Verify V;
  memset(&V, 0, sizeof V);
  V.m = m;
  V.cur_fn = -1;
  int rc = 0;
  for (int32_t i = 0; i < m->num_functions && rc == 0; i++) {
    if (old && gp_module_lookup(old, m->gvars[i]->name) == m->funcs[i]) continue; /* verified before */
    V.cur_fn = i;
    GPExpr *root = &m->funcs[i]->base;
    push(&V, root, root->line, root->col, -1);
    while (V.n > 0 && rc == 0) rc = step(&V, V.n - 1);
  }
  gp_map_free(&V.vars);
  gp_map_free(&V.done);
  gp_scratch_free(V.slots);
  gp_free(V.vi);
  gp_free(V.st);
  gp_free(V.kids);
  gp_free(V.tys);
  return rc;
}
