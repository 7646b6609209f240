/*
 * infer.c -- type inference over modules and expressions (gp_infer_types, gp_infer_expr).
 *
 * One iterative engine: an explicit stack of frames (node, state, inherited location) and a memo
 * (original node -> typed node, owned reference) shared by the whole module, so DAG sharing is
 * preserved (a node used twice maps to one typed node) and every use of a var maps to the one
 * (possibly rebuilt) binding.  Binders are processed before their scope: function params before
 * the body; a let's value, then its var (annotated from the value's type when it had none), then
 * the body.
 *
 * Global functions: a function whose params and return type are annotated has a known type from
 * the start.  Any other function is inferred on demand: when a reference to it is met before it
 * was inferred, the current function is suspended (its frames stay on the stack) and a context
 * for the callee is pushed on top.  A reference to a function that is itself suspended is a
 * recursion through functions without a declared return type: an error.
 *
 * Results: a node that may be reached twice (ref_count > 1) is memoized in a hash map; any
 * other node has a single parent, whose frame holds a slot per child on a slot stack, so walks
 * over tree-like graphs touch no table (flat cost per node from 10k to 10M nodes).
 *
 * Cheap re-runs: a node that already has a checked_type and whose children were all kept is
 * kept as is (no relation is run), so a typed module comes back sharing every function.
 */
#include "ir/ir.h"
#include "common/scratch.h"

#include <assert.h>
#include <string.h>

typedef struct {
  GPExpr *e;
  uint32_t state;
  uint32_t line, col; /* location of the node, or of the nearest ancestor that has one */
  int64_t slot;       /* where the result goes in the slot stack; -1: the memo map */
  int64_t base;       /* the children's slots (child order); -1 until allocated */
} IFrame;

typedef struct {
  int32_t fn;  /* function index */
  size_t base; /* frame stack height when the context started */
} ICtx;

typedef struct {
  const GPModule *m; /* NULL in expression mode */
  bool expr_mode;    /* typed nodes are leaves (gp_infer_expr) */
  GPExpr *root;      /* expression mode: the root (always (re)computed) */
  GPExpr *cur;       /* the node of the frame being processed */
  bool cur_done;     /* its memo entry was set */
  GPPtrMap memo;     /* shared original -> typed (owned reference) */
  GPExpr **slots;    /* slot stack: typed results of unshared children (owned references) */
  int64_t nslots, slots_cap;
  int64_t cur_slot;  /* the slot of the node being processed */
  GPPtrMap pending;  /* unannotated let vars whose value is being inferred -> non-NULL */
  IFrame *st;
  size_t n, cap;
  /* module mode */
  const GPType **gtypes; /* per function: known type (declared or inferred), or NULL */
  uint8_t *status;       /* 0 not started, 1 in progress, 2 done */
  ICtx *ctx;
  int32_t nctx, ctx_cap;
  int32_t cur_fn;
  /* scratch */
  GPExpr **kids;
  size_t kids_cap;
  const GPType **tys;
  size_t tys_cap;
} Infer;

/* ------------------------------------------------------------------------------------------ */
/* Small helpers                                                                               */

static void push_at(Infer *I, GPExpr *e, uint32_t line, uint32_t col, int64_t slot) {
  if (I->n == I->cap) {
    I->cap = I->cap ? I->cap * 2 : 64;
    I->st = gp_scratch_realloc(I->st, I->cap * sizeof *I->st);
  }
  /* a var's or global var's own location is where it is defined: keep the user's */
  if (e->line && gp_kind(e) != GP_TI_VAR && gp_kind(e) != GP_TI_GLOBAL_VAR) {
    line = e->line;
    col = e->col;
  }
  I->st[I->n++] = (IFrame){e, 0, line, col, slot, -1};
}

/* Push child `pos` of frame f's node: unshared children report into f's slot for them. */
static void push_child(Infer *I, const IFrame *f, int32_t pos, GPExpr *c, uint32_t line, uint32_t col) {
  push_at(I, c, line, col, f->base >= 0 && !gp_maybe_shared(c) ? f->base + pos : -1);
}

static void slots_alloc(Infer *I, IFrame *f, int32_t nk) {
  if (I->nslots + nk > I->slots_cap) {
    while (I->nslots + nk > I->slots_cap) I->slots_cap = I->slots_cap ? I->slots_cap * 2 : 256;
    I->slots = gp_scratch_realloc(I->slots, (size_t)I->slots_cap * sizeof *I->slots);
  }
  f->base = I->nslots;
  memset(I->slots + I->nslots, 0, (size_t)nk * sizeof *I->slots);
  I->nslots += nk;
}

/* Release the slots from `base` up (a finished frame's children). */
static void slots_pop(Infer *I, int64_t base) {
  while (I->nslots > base) gp_release(I->slots[--I->nslots]);
}

static GPExpr **kids_buf(Infer *I, size_t n) {
  if (n > I->kids_cap) {
    I->kids_cap = n < 16 ? 16 : n;
    gp_free(I->kids);
    I->kids = gp_malloc(I->kids_cap * sizeof *I->kids);
  }
  return I->kids;
}

static const GPType **tys_buf(Infer *I, size_t n) {
  if (n > I->tys_cap) {
    I->tys_cap = n < 16 ? 16 : n;
    gp_free(I->tys);
    I->tys = gp_malloc(I->tys_cap * sizeof *I->tys);
  }
  return I->tys;
}

static GPExpr *memo_get(Infer *I, const void *e) { return gp_map_get(&I->memo, e); }

/* The typed child `pos` (node c) of frame f, or NULL when not done yet. */
static GPExpr *child_get(Infer *I, const IFrame *f, int32_t pos, const void *c) {
  GPExpr *t = f->base >= 0 ? I->slots[f->base + pos] : NULL;
  return t ? t : memo_get(I, c);
}

/* Takes the reference `typed`: the result of the node being processed.  Notes it is done. */
static void memo_put(Infer *I, GPExpr *orig, GPExpr *typed) {
  assert(orig == I->cur);
  if (I->cur_slot >= 0) {
    assert(!I->slots[I->cur_slot]);
    I->slots[I->cur_slot] = typed;
  } else {
    gp_map_put(&I->memo, orig, typed);
  }
  I->cur_done = true;
}

/* Takes the reference `typed`: the result of child `pos` (a binder) of frame f. */
static void memo_put_child(Infer *I, const IFrame *f, int32_t pos, GPExpr *orig, GPExpr *typed) {
  if (f->base >= 0 && !gp_maybe_shared(orig)) {
    assert(!I->slots[f->base + pos]);
    I->slots[f->base + pos] = typed;
  } else {
    gp_map_put(&I->memo, orig, typed);
  }
}

static bool is_bool_scalar(const GPType *t) {
  return t && t->kind == GP_TYPE_TENSOR && t->n == 0 && gp_dtype_eq(t->tensor.dtype, GP_DT_BOOL);
}

static void put_type(GPBuf *b, const GPType *t) {
  if (t)
    gp_type_print(b, t);
  else
    gp_buf_puts(b, "<untyped>");
}

/* "<source>:<line>:<col>: error: in @fn" (the parts that are known). */
static void error_head(Infer *I, GPBuf *b, uint32_t line, uint32_t col) {
  const char *src = I->m ? I->m->source_name : NULL;
  if (line) {
    gp_buf_printf(b, "%s:%u:%u: ", src ? src : "<input>", line, col);
  } else if (src) {
    gp_buf_printf(b, "%s: ", src);
  }
  gp_buf_puts(b, "error: ");
  if (I->m && I->cur_fn >= 0) gp_buf_printf(b, "in @%s: ", I->m->gvars[I->cur_fn]->name);
}

/* Sets GP_ERR_TYPE "<head><what>: <message>" where the message is already in `msg`. */
static int fail(Infer *I, const IFrame *f, const char *what, GPBuf *msg) {
  GPBuf b = {0};
  error_head(I, &b, f->line, f->col);
  gp_buf_printf(&b, "%s: %s", what, msg->data ? msg->data : "");
  gp_error_set(GP_ERR_TYPE, "%s", b.data);
  gp_buf_free(&b);
  gp_buf_free(msg);
  return -1;
}

/* A pending error from a relation (already naming the op): prefix the location and function. */
static int fail_prefix(Infer *I, const IFrame *f, const char *what) {
  GPBuf b = {0};
  error_head(I, &b, f->line, f->col);
  b.len -= 2; /* drop the trailing ": "; gp_error_prefix adds it back */
  b.data[b.len] = 0;
  const char *msg = gp_error_message();
  size_t wl = strlen(what);
  if (strncmp(msg, what, wl) == 0 && msg[wl] == ':') {
    gp_error_prefix("%s", b.data);
  } else {
    gp_error_prefix("%s: %s", b.data, what);
  }
  gp_error_set_kind(GP_ERR_TYPE);
  gp_buf_free(&b);
  return -1;
}

/* A name for the callee of a non-op call, for messages: "@g", "%f", "fn". */
static void callee_name(GPBuf *b, const GPExpr *callee) {
  switch (gp_kind(callee)) {
  case GP_TI_GLOBAL_VAR: gp_buf_printf(b, "call @%s", GP_AS(const GPGlobalVar, callee)->name); break;
  case GP_TI_VAR: gp_buf_printf(b, "call %%%s", GP_AS(const GPVar, callee)->name); break;
  default: gp_buf_printf(b, "call of %s", gp_expr_kind_name(callee)); break;
  }
}

/* Give `rebuilt` (owned; either orig retained or a node built from it) the checked type and
 * orig's location; returns an owned reference. */
static GPExpr *finish(GPExpr *orig, GPExpr *rebuilt, const GPType *t) {
  if (rebuilt->checked_type == t) return rebuilt;
  if (rebuilt != orig && __atomic_load_n(&rebuilt->obj.ref_count, __ATOMIC_ACQUIRE) == 1) {
    /* Freshly built and not shared yet: complete it in place. */
    rebuilt->checked_type = t;
    rebuilt->line = orig->line;
    rebuilt->col = orig->col;
    return rebuilt;
  }
  GPExpr *r = gp_expr_annotate(rebuilt, t, orig->line, orig->col);
  gp_release(rebuilt);
  return r;
}

/* The typed children of e (from the memo) into I->kids; *changed when any differs. */
static int32_t typed_kids(Infer *I, const IFrame *f, bool *changed) {
  GPExpr *e = f->e;
  int32_t nk = gp_expr_num_children(e);
  GPExpr **k = kids_buf(I, (size_t)nk);
  gp_expr_children(e, k, nk);
  *changed = false;
  for (int32_t i = 0; i < nk; i++) {
    GPExpr *t = child_get(I, f, i, k[i]);
    if (!t) t = k[i]; /* cannot happen for a well-formed walk; keep the original */
    if (t != k[i]) *changed = true;
    k[i] = t;
  }
  return nk;
}

/* Push the children of e, last first (so the first runs first). */
static void push_kids(Infer *I, const IFrame *f) {
  int32_t nk = gp_expr_num_children(f->e);
  GPExpr **k = kids_buf(I, (size_t)nk);
  gp_expr_children(f->e, k, nk);
  /* push_child() may not touch I->kids, so k stays valid */
  for (int32_t i = nk - 1; i >= 0; i--) push_child(I, f, i, k[i], f->line, f->col); /* memo hits pop at once */
}

static bool keep_if_typed(Infer *I, GPExpr *e, bool changed) {
  if (!changed && e->checked_type) {
    memo_put(I, e, gp_retain(e));
    return true;
  }
  return false;
}

/* The common first half of a node rule over typed children.  Returns true when the step is
 * over: the children were just pushed, or none changed and the node was already typed (kept
 * as it is).  Otherwise the typed children are in I->kids. */
static bool children_first(Infer *I, IFrame *f) {
  if (f->state == 0) {
    f->state = 1;
    push_kids(I, f);
    return true;
  }
  bool changed;
  typed_kids(I, f, &changed);
  return keep_if_typed(I, f->e, changed);
}

/* ------------------------------------------------------------------------------------------ */
/* Node rules.  Each returns 0 when the node is done (memo entry set) or the frame was advanced
 * (children pushed), -1 on error, 1 when the frame must stay (a callee function was pushed). */

static int do_var(Infer *I, IFrame *f) {
  GPVar *v = GP_AS(GPVar, f->e);
  if (gp_map_get(&I->pending, v)) {
    GPBuf msg = {0};
    gp_buf_printf(&msg, "%%%s is used in its own value; give it a type annotation", v->name);
    return fail(I, f, "let", &msg);
  }
  const GPType *t = v->type_annotation ? v->type_annotation : v->base.checked_type;
  if (!t) {
    GPBuf msg = {0};
    gp_buf_printf(&msg, "%%%s is not bound here and has no type annotation", v->name);
    return fail(I, f, "var", &msg);
  }
  memo_put(I, f->e, gp_expr_annotate(f->e, t, f->e->line, f->e->col));
  return 0;
}

static int start_function(Infer *I, int32_t j);

static int do_global_var(Infer *I, IFrame *f) {
  GPGlobalVar *g = GP_AS(GPGlobalVar, f->e);
  if (!I->m) {
    if (g->base.checked_type) {
      memo_put(I, f->e, gp_retain(f->e));
      return 0;
    }
    GPBuf msg = {0};
    gp_buf_printf(&msg, "@%s has no type (infer the module's types first)", g->name);
    return fail(I, f, "global var", &msg);
  }
  int32_t j = gp_module_find(I->m, g->name);
  if (j < 0) {
    GPBuf msg = {0};
    gp_buf_printf(&msg, "@%s is not defined in the module", g->name);
    return fail(I, f, "global var", &msg);
  }
  const GPType *t = I->gtypes[j];
  if (!t) {
    if (I->status[j] == 1) {
      GPBuf msg = {0};
      gp_buf_printf(&msg,
                    "recursive reference to @%s, which has no declared return type (annotate "
                    "its return type to allow recursion)",
                    g->name);
      return fail(I, f, "global var", &msg);
    }
    if (start_function(I, j) < 0) return -1;
    return 1;
  }
  memo_put(I, f->e, gp_expr_annotate(f->e, t, f->e->line, f->e->col));
  return 0;
}

static int do_constant(Infer *I, IFrame *f) {
  GPConstant *c = GP_AS(GPConstant, f->e);
  if (c->base.checked_type) {
    memo_put(I, f->e, gp_retain(f->e));
    return 0;
  }
  const GPType *t = c->data ? gp_tensor_type(c->data) : NULL;
  if (!t) {
    GPBuf msg = {0};
    gp_buf_printf(&msg, "cannot type the constant's data%s%s", gp_error_kind() ? ": " : "",
                  gp_error_kind() ? gp_error_message() : "");
    return fail(I, f, "constant", &msg);
  }
  memo_put(I, f->e, gp_expr_annotate(f->e, t, f->e->line, f->e->col));
  return 0;
}

static int do_call(Infer *I, IFrame *f) {
  GPCall *c = GP_AS(GPCall, f->e);
  if (children_first(I, f)) return 0;
  GPExpr **k = I->kids;
  GPExpr *callee = k[0];
  const GPType **ty = tys_buf(I, (size_t)c->nargs);
  for (int32_t i = 0; i < c->nargs; i++) ty[i] = k[1 + i]->checked_type;
  const GPType *t = NULL;
  if (gp_kind(callee) == GP_TI_OP) {
    const GPOp *op = GP_AS(const GPOp, callee);
    for (int32_t i = 0; i < c->nargs; i++) {
      if (!ty[i]) {
        GPBuf msg = {0};
        gp_buf_printf(&msg, "argument %d has no type", i);
        return fail(I, f, op->name, &msg);
      }
    }
    t = gp_op_infer(op, c->attrs, ty, c->nargs);
    if (!t) return fail_prefix(I, f, op->name);
  } else {
    const GPType *ft = callee->checked_type;
    GPBuf what = {0};
    callee_name(&what, callee);
    GPBuf msg = {0};
    if (!ft || ft->kind != GP_TYPE_FUNC) {
      gp_buf_puts(&msg, "the callee is not a function (its type is ");
      put_type(&msg, ft);
      gp_buf_puts(&msg, ")");
    } else if (ft->n != c->nargs) {
      gp_buf_printf(&msg, "expected %d argument%s, got %d", ft->n, ft->n == 1 ? "" : "s",
                    c->nargs);
    } else {
      for (int32_t i = 0; i < c->nargs; i++) {
        if (ty[i] != ft->func.params[i]) {
          gp_buf_printf(&msg, "argument %d has type ", i);
          put_type(&msg, ty[i]);
          gp_buf_puts(&msg, ", expected ");
          put_type(&msg, ft->func.params[i]);
          break;
        }
      }
      if (!msg.len) t = ft->func.ret;
    }
    if (!t) {
      int r = fail(I, f, what.data, &msg);
      gp_buf_free(&what);
      return r;
    }
    gp_buf_free(&what);
  }
  GPExpr *r = gp_expr_with_children(f->e, k, false);
  if (!r) return -1;
  memo_put(I, f->e, finish(f->e, r, t));
  return 0;
}

static int do_tuple(Infer *I, IFrame *f) {
  GPTuple *tp = GP_AS(GPTuple, f->e);
  if (children_first(I, f)) return 0;
  GPExpr **k = I->kids;
  const GPType **ty = tys_buf(I, (size_t)tp->n);
  for (int32_t i = 0; i < tp->n; i++) {
    ty[i] = k[i]->checked_type;
    if (!ty[i]) {
      GPBuf msg = {0};
      gp_buf_printf(&msg, "field %d has no type", i);
      return fail(I, f, "tuple", &msg);
    }
  }
  const GPType *t = gp_type_tuple(tp->n, ty);
  if (!t) return fail_prefix(I, f, "tuple");
  GPExpr *r = gp_expr_with_children(f->e, k, false);
  if (!r) return -1;
  memo_put(I, f->e, finish(f->e, r, t));
  return 0;
}

static int do_get_item(Infer *I, IFrame *f) {
  GPTupleGetItem *g = GP_AS(GPTupleGetItem, f->e);
  if (children_first(I, f)) return 0;
  GPExpr **k = I->kids;
  const GPType *tt = k[0]->checked_type;
  GPBuf msg = {0};
  if (!tt || tt->kind != GP_TYPE_TUPLE) {
    gp_buf_printf(&msg, "index %d of a non-tuple of type ", g->index);
    put_type(&msg, tt);
    return fail(I, f, "tuple get-item", &msg);
  }
  if (g->index < 0 || g->index >= tt->n) {
    gp_buf_printf(&msg, "index %d out of range for a tuple of %d field%s (", g->index, tt->n,
                  tt->n == 1 ? "" : "s");
    put_type(&msg, tt);
    gp_buf_puts(&msg, ")");
    return fail(I, f, "tuple get-item", &msg);
  }
  GPExpr *r = gp_expr_with_children(f->e, k, false);
  if (!r) return -1;
  memo_put(I, f->e, finish(f->e, r, tt->tuple.fields[g->index]));
  return 0;
}

static int do_if(Infer *I, IFrame *f) {
  if (children_first(I, f)) return 0;
  GPExpr **k = I->kids;
  const GPType *ct = k[0]->checked_type, *a = k[1]->checked_type, *b = k[2]->checked_type;
  GPBuf msg = {0};
  if (!is_bool_scalar(ct)) {
    gp_buf_puts(&msg, "the condition must be a bool scalar (Tensor[(), bool]), got ");
    put_type(&msg, ct);
    return fail(I, f, "if", &msg);
  }
  if (!a || a != b) {
    gp_buf_puts(&msg, "the branches have different types: ");
    put_type(&msg, a);
    gp_buf_puts(&msg, " and ");
    put_type(&msg, b);
    return fail(I, f, "if", &msg);
  }
  GPExpr *r = gp_expr_with_children(f->e, k, false);
  if (!r) return -1;
  memo_put(I, f->e, finish(f->e, r, a));
  return 0;
}

static int do_function(Infer *I, IFrame *f) {
  GPFunctionExpr *fn = GP_AS(GPFunctionExpr, f->e);
  if (f->state == 0) {
    for (int32_t i = 0; i < fn->nparams; i++) {
      GPVar *p = fn->params[i];
      if (child_get(I, f, i, p)) continue;
      const GPType *t = p->type_annotation ? p->type_annotation : p->base.checked_type;
      if (!t) {
        GPBuf msg = {0};
        gp_buf_printf(&msg, "parameter %%%s has no type annotation", p->name);
        IFrame pf = *f;
        if (p->base.line) {
          pf.line = p->base.line;
          pf.col = p->base.col;
        }
        return fail(I, &pf, "function", &msg);
      }
      memo_put_child(I, f, i, &p->base, gp_expr_annotate(&p->base, t, p->base.line, p->base.col));
    }
    f->state = 1;
    push_child(I, f, fn->nparams, fn->body, f->line, f->col);
    return 0;
  }
  bool changed;
  int32_t nk = typed_kids(I, f, &changed);
  GPExpr **k = I->kids;
  if (!changed && fn->base.checked_type && fn->ret_type) {
    memo_put(I, f->e, gp_retain(f->e));
    return 0;
  }
  const GPType **ty = tys_buf(I, (size_t)fn->nparams);
  for (int32_t i = 0; i < fn->nparams; i++) ty[i] = k[i]->checked_type;
  GPExpr *body = k[nk - 1];
  const GPType *bt = body->checked_type;
  if (fn->ret_type && fn->ret_type != bt) {
    GPBuf msg = {0};
    gp_buf_puts(&msg, "the body has type ");
    put_type(&msg, bt);
    gp_buf_puts(&msg, " but the declared return type is ");
    put_type(&msg, fn->ret_type);
    return fail(I, f, "function", &msg);
  }
  const GPType *t = gp_type_func(fn->nparams, ty, bt);
  if (!t) return fail_prefix(I, f, "function");
  GPExpr *r;
  if (fn->ret_type) {
    r = gp_expr_with_children(f->e, k, false);
  } else {
    /* TVM's InferType fills in the missing return type annotation. */
    r = &gp_function_new(fn->nparams, (GPVar *const *)k, body, bt, fn->attrs)->base;
  }
  if (!r) return -1;
  memo_put(I, f->e, finish(f->e, r, t));
  return 0;
}

static int do_let(Infer *I, IFrame *f) {
  GPLet *l = GP_AS(GPLet, f->e);
  GPVar *v = l->var;
  if (f->state == 0) {
    if (!child_get(I, f, 0, v)) {
      const GPType *t = v->type_annotation;
      if (t) {
        /* annotated: bound before the value (a recursive closure may use it) */
        memo_put_child(I, f, 0, &v->base, gp_expr_annotate(&v->base, t, v->base.line, v->base.col));
      } else if (v->base.checked_type && I->expr_mode) {
        memo_put_child(I, f, 0, &v->base, gp_retain(v));
      } else {
        gp_map_put(&I->pending, v, v);
      }
    }
    f->state = 1;
    push_child(I, f, 1, l->value, f->line, f->col);
    return 0;
  }
  if (f->state == 1) {
    GPExpr *val = child_get(I, f, 1, l->value);
    const GPType *vt = val->checked_type;
    GPExpr *nv = child_get(I, f, 0, v);
    if (!nv) {
      gp_map_put(&I->pending, v, NULL);
      if (!vt) {
        GPBuf msg = {0};
        gp_buf_printf(&msg, "the value of %%%s has no type", v->name);
        return fail(I, f, "let", &msg);
      }
      if (v->base.checked_type == vt) {
        memo_put_child(I, f, 0, &v->base, gp_retain(v));
      } else {
        GPVar *w = gp_var_new(v->name, vt);
        w->base.checked_type = vt;
        w->base.line = v->base.line;
        w->base.col = v->base.col;
        memo_put_child(I, f, 0, &v->base, &w->base);
      }
    } else if (nv->checked_type != vt) {
      GPBuf msg = {0};
      gp_buf_printf(&msg, "%%%s is annotated ", v->name);
      put_type(&msg, nv->checked_type);
      gp_buf_puts(&msg, " but its value has type ");
      put_type(&msg, vt);
      return fail(I, f, "let", &msg);
    }
    f->state = 2;
    push_child(I, f, 2, l->body, f->line, f->col);
    return 0;
  }
  bool changed;
  typed_kids(I, f, &changed);
  if (keep_if_typed(I, f->e, changed)) return 0;
  GPExpr **k = I->kids;
  const GPType *t = k[2]->checked_type;
  GPExpr *r = gp_expr_with_children(f->e, k, false);
  if (!r) return -1;
  memo_put(I, f->e, finish(f->e, r, t));
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The engine                                                                                  */

static int start_function(Infer *I, int32_t j) {
  if (I->nctx == I->ctx_cap) {
    I->ctx_cap = I->ctx_cap ? I->ctx_cap * 2 : 8;
    I->ctx = gp_realloc(I->ctx, (size_t)I->ctx_cap * sizeof *I->ctx);
  }
  I->status[j] = 1;
  I->ctx[I->nctx++] = (ICtx){j, I->n};
  I->cur_fn = j;
  GPExpr *root = &I->m->funcs[j]->base;
  push_at(I, root, root->line, root->col, -1);
  return 0;
}

/* Process frames down to height `base`.  In module mode, contexts are finished as their frames
 * run out. */
static int run(Infer *I, size_t base) {
  for (;;) {
    if (I->m) {
      while (I->nctx > 0 && I->n == I->ctx[I->nctx - 1].base) {
        ICtx c = I->ctx[--I->nctx];
        GPExpr *typed = memo_get(I, I->m->funcs[c.fn]);
        I->gtypes[c.fn] = typed->checked_type;
        I->status[c.fn] = 2;
        I->cur_fn = I->nctx ? I->ctx[I->nctx - 1].fn : -1;
      }
    }
    if (I->n <= base) return 0;
    IFrame *f = &I->st[I->n - 1];
    GPExpr *e = f->e;
    I->cur = e;
    I->cur_slot = f->slot;
    if (f->state == 0) {
      if (f->slot < 0 && gp_map_has(&I->memo, e)) {
        I->n--;
        continue;
      }
      if (I->expr_mode && e != I->root && (e->checked_type || gp_kind(e) == GP_TI_OP)) {
        memo_put(I, e, gp_retain(e));
        I->n--;
        continue;
      }
      int32_t nk = gp_expr_num_children(e);
      if (nk > 0) slots_alloc(I, f, nk);
    }
    /* Frames may move when children are pushed: work on a copy, write the state back. */
    IFrame cur = *f;
    size_t at = I->n - 1;
    int r;
    I->cur_done = false;
    switch (gp_kind(e)) {
    case GP_TI_OP: memo_put(I, e, gp_retain(e)); r = 0; break;
    case GP_TI_VAR: r = do_var(I, &cur); break;
    case GP_TI_GLOBAL_VAR: r = do_global_var(I, &cur); break;
    case GP_TI_CONSTANT: r = do_constant(I, &cur); break;
    case GP_TI_CALL: r = do_call(I, &cur); break;
    case GP_TI_TUPLE: r = do_tuple(I, &cur); break;
    case GP_TI_TUPLE_GET_ITEM: r = do_get_item(I, &cur); break;
    case GP_TI_FUNCTION_EXPR: r = do_function(I, &cur); break;
    case GP_TI_LET: r = do_let(I, &cur); break;
    case GP_TI_IF: r = do_if(I, &cur); break;
    default:
      gp_error_set(GP_ERR_INTERNAL, "infer: unexpected object of type %s",
                   gp_type_index_name(gp_kind(e)));
      return -1;
    }
    if (r < 0) return -1;
    if (r == 1) continue; /* a callee function was pushed above this frame */
    if (I->cur_done) {
      /* finished: a handler that finishes a node pushes nothing, so the frame is on top */
      if (cur.base >= 0) slots_pop(I, cur.base);
      I->n = at;
      continue;
    }
    I->st[at].state = cur.state;
  }
}

static void infer_free(Infer *I) {
  for (size_t i = 0; i < I->memo.cap; i++)
    if (I->memo.slots[i].key) gp_release(I->memo.slots[i].val);
  gp_map_free(&I->memo);
  slots_pop(I, 0);
  gp_scratch_free(I->slots);
  gp_map_free(&I->pending);
  gp_scratch_free(I->st);
  gp_free(I->gtypes);
  gp_free(I->status);
  gp_free(I->ctx);
  gp_free(I->kids);
  gp_free(I->tys);
}

GPModule *gp_infer_types(const GPModule *m) {
  if (!m) {
    gp_error_set(GP_ERR_VALUE, "infer_types: NULL module");
    return NULL;
  }
  gp_ops_init();
  Infer I;
  memset(&I, 0, sizeof I);
  I.m = m;
  I.cur_fn = -1;
  int32_t nf = m->num_functions;
  I.gtypes = gp_calloc((size_t)(nf ? nf : 1), sizeof *I.gtypes);
  I.status = gp_calloc((size_t)(nf ? nf : 1), 1);
  /* Declared types: every param annotated and a return type. */
  for (int32_t i = 0; i < nf; i++) {
    GPFunctionExpr *fn = m->funcs[i];
    if (!fn->ret_type) continue;
    const GPType **ty = tys_buf(&I, (size_t)fn->nparams);
    bool ok = true;
    for (int32_t p = 0; p < fn->nparams && ok; p++) {
      ty[p] = fn->params[p]->type_annotation;
      ok = ty[p] != NULL;
    }
    if (ok) I.gtypes[i] = gp_type_func(fn->nparams, ty, fn->ret_type);
    if (!I.gtypes[i]) gp_error_clear();
  }
  for (int32_t i = 0; i < nf; i++) {
    if (I.status[i]) continue;
    start_function(&I, i);
    if (run(&I, 0) < 0) {
      infer_free(&I);
      return NULL;
    }
  }
  GPModule *out = gp_module_copy(m);
  for (int32_t i = 0; i < nf; i++) {
    GPExpr *typed = memo_get(&I, m->funcs[i]);
    if (typed != &m->funcs[i]->base) gp_module_set(out, i, GP_AS(GPFunctionExpr, typed));
  }
  infer_free(&I);
  return out;
}

GPExpr *gp_infer_expr(GPExpr *e) {
  if (!e) {
    gp_error_set(GP_ERR_VALUE, "infer_expr: NULL expression");
    return NULL;
  }
  if (e->checked_type || gp_kind(e) == GP_TI_OP) return gp_retain(e);
  gp_ops_init();
  Infer I;
  memset(&I, 0, sizeof I);
  I.expr_mode = true;
  I.root = e;
  I.cur_fn = -1;
  push_at(&I, e, e->line, e->col, -1);
  GPExpr *r = NULL;
  if (run(&I, 0) == 0) r = gp_retain(memo_get(&I, e));
  infer_free(&I);
  return r;
}
