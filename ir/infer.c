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
 * kept as is (no relation is run), so a typed module comes back sharing every function; and a
 * typed closure (a node whose subtree is all typed: gp_expr_is_typed_closure, which every
 * node InferType returns becomes) is not walked at all.
 *
 * Parameters without a type annotation are solved from their uses (solve_params, below) when
 * do_function binds them; a function whose params are all typed never enters the solver.
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
  gp_expr_refresh_typed(typed); /* typed children (done before it) and a type: a typed closure */
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
  gp_expr_refresh_typed(typed);
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
    gp_expr_refresh_typed(rebuilt);
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

/* The type of a call of `callee` (not an op; its type ft) with argument types ty; NULL after
 * an error naming the callee. */
static const GPType *fn_call_type(Infer *I, const IFrame *f, const GPExpr *callee,
                                  const GPType *ft, const GPType *const *ty, int32_t nargs) {
  GPBuf msg = {0};
  if (!ft || ft->kind != GP_TYPE_FUNC) {
    gp_buf_puts(&msg, "the callee is not a function (its type is ");
    put_type(&msg, ft);
    gp_buf_puts(&msg, ")");
  } else if (ft->n != nargs) {
    gp_buf_printf(&msg, "expected %d argument%s, got %d", ft->n, ft->n == 1 ? "" : "s", nargs);
  } else {
    for (int32_t i = 0; i < nargs; i++) {
      if (ty[i] != ft->func.params[i]) {
        gp_buf_printf(&msg, "argument %d has type ", i);
        put_type(&msg, ty[i]);
        gp_buf_puts(&msg, ", expected ");
        put_type(&msg, ft->func.params[i]);
        break;
      }
    }
    if (!msg.len) return ft->func.ret;
  }
  GPBuf what = {0};
  callee_name(&what, callee);
  fail(I, f, what.data, &msg);
  gp_buf_free(&what);
  return NULL;
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
    t = fn_call_type(I, f, callee, callee->checked_type, ty, c->nargs);
    if (!t) return -1;
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

/* Field `index` of a value of type tt; NULL after an error. */
static const GPType *get_item_type(Infer *I, const IFrame *f, int32_t index, const GPType *tt) {
  GPBuf msg = {0};
  if (!tt || tt->kind != GP_TYPE_TUPLE) {
    gp_buf_printf(&msg, "index %d of a non-tuple of type ", index);
    put_type(&msg, tt);
    fail(I, f, "tuple get-item", &msg);
    return NULL;
  }
  if (index < 0 || index >= tt->n) {
    gp_buf_printf(&msg, "index %d out of range for a tuple of %d field%s (", index, tt->n,
                  tt->n == 1 ? "" : "s");
    put_type(&msg, tt);
    gp_buf_puts(&msg, ")");
    fail(I, f, "tuple get-item", &msg);
    return NULL;
  }
  return tt->tuple.fields[index];
}

static int do_get_item(Infer *I, IFrame *f) {
  GPTupleGetItem *g = GP_AS(GPTupleGetItem, f->e);
  if (children_first(I, f)) return 0;
  GPExpr **k = I->kids;
  const GPType *t = get_item_type(I, f, g->index, k[0]->checked_type);
  if (!t) return -1;
  GPExpr *r = gp_expr_with_children(f->e, k, false);
  if (!r) return -1;
  memo_put(I, f->e, finish(f->e, r, t));
  return 0;
}

/* The type of an if with condition type ct and branch types a, b; NULL after an error. */
static const GPType *if_type(Infer *I, const IFrame *f, const GPType *ct, const GPType *a,
                             const GPType *b) {
  GPBuf msg = {0};
  if (!is_bool_scalar(ct)) {
    gp_buf_puts(&msg, "the condition must be a bool scalar (Tensor[(), bool]), got ");
    put_type(&msg, ct);
    fail(I, f, "if", &msg);
    return NULL;
  }
  if (!a || a != b) {
    gp_buf_puts(&msg, "the branches have different types: ");
    put_type(&msg, a);
    gp_buf_puts(&msg, " and ");
    put_type(&msg, b);
    fail(I, f, "if", &msg);
    return NULL;
  }
  return a;
}

static int do_if(Infer *I, IFrame *f) {
  if (children_first(I, f)) return 0;
  GPExpr **k = I->kids;
  const GPType *t = if_type(I, f, k[0]->checked_type, k[1]->checked_type, k[2]->checked_type);
  if (!t) return -1;
  GPExpr *r = gp_expr_with_children(f->e, k, false);
  if (!r) return -1;
  memo_put(I, f->e, finish(f->e, r, t));
  return 0;
}

/* Whether a value of type `actual` may stand where `decl` is declared (a function's return type,
 * a let variable's annotation): the same type, or tensors of one dtype and rank whose dims agree
 * where both are known (a ? on either side unifies, as Relay's solver does: a pass that makes
 * the body's batch static under a declared (?, 9) keeps the declaration), tuples field by field. */
static bool type_fits(const GPType *decl, const GPType *actual) {
  if (decl == actual) return true;
  if (!decl || !actual || decl->kind != actual->kind || decl->n != actual->n) return false;
  if (decl->kind == GP_TYPE_TENSOR) {
    if (!gp_dtype_eq(decl->tensor.dtype, actual->tensor.dtype)) return false;
    for (int32_t i = 0; i < decl->n; i++) {
      int64_t a = decl->tensor.shape[i], b = actual->tensor.shape[i];
      if (a != b && a != GP_DIM_ANY && b != GP_DIM_ANY) return false;
    }
    return true;
  }
  if (decl->kind == GP_TYPE_TUPLE) {
    for (int32_t i = 0; i < decl->n; i++)
      if (!type_fits(decl->tuple.fields[i], actual->tuple.fields[i])) return false;
    return true;
  }
  return false;
}

/* The type of function fn with param types pty and body type bt (its declared return type when
 * it has one that bt fits); NULL after an error. */
static const GPType *function_type(Infer *I, const IFrame *f, const GPFunctionExpr *fn,
                                   const GPType *const *pty, const GPType *bt) {
  if (fn->ret_type && !type_fits(fn->ret_type, bt)) {
    GPBuf msg = {0};
    gp_buf_puts(&msg, "the body has type ");
    put_type(&msg, bt);
    gp_buf_puts(&msg, " but the declared return type is ");
    put_type(&msg, fn->ret_type);
    fail(I, f, "function", &msg);
    return NULL;
  }
  const GPType *t = gp_type_func(fn->nparams, pty, fn->ret_type ? fn->ret_type : bt);
  if (!t) fail_prefix(I, f, "function");
  return t;
}

static int let_mismatch(Infer *I, const IFrame *f, const GPVar *v, const GPType *annot,
                        const GPType *vt) {
  GPBuf msg = {0};
  gp_buf_printf(&msg, "%%%s is annotated ", v->name);
  put_type(&msg, annot);
  gp_buf_puts(&msg, " but its value has type ");
  put_type(&msg, vt);
  return fail(I, f, "let", &msg);
}

/* ------------------------------------------------------------------------------------------ */
/* Parameters without a type annotation (NNVM's InferShape, Relay's type solver): before a     */
/* function's params are bound, a param with no type is solved backwards from its uses.        */
/*                                                                                             */
/* A round walks the body once (iterative, post-order, each node once: linear), computing what  */
/* types it can with the params solved so far; a node whose type depends on an unknown param is */
/* unknown for the round.  A call of an op with an unknown argument asks the op's fill hook    */
/* (gp_op_fill: the argument types TVM's relations Assign, e.g. a conv2d weight from channels   */
/* and kernel_size); a call of a function of known type gives its param types.  A param        */
/* argument so determined is solved at once, so a chain (conv2d -> bias_add -> batch_norm)      */
/* solves in one round; a use that precedes the use that determines it waits for the next      */
/* round.  Rounds repeat while one solves a param (at most one per unknown param plus one):    */
/* the fixed point.  Then the params are bound with their types as annotations (TVM's InferType */
/* fills in a missing type_annotation, so the printer shows `%w: Tensor[...]`) and the usual    */
/* walk types the body.  Only a function with an untyped param pays: the engine calls this from */
/* do_function, where such a param used to be an error.                                       */
/*                                                                                             */
/* Errors: a relation failing in a round is reported as the usual walk would (the same walk    */
/* order and messages); when its arguments include a solved param that the call's own fill     */
/* wants of another type, it is a conflict naming the param, this call and the call that       */
/* solved it.  A param still unknown at the fixed point names the first call that needed it.   */

static const char k_unknown_tag;
#define S_UNKNOWN ((void *)&k_unknown_tag) /* a visited node whose type is unknown this round */

typedef struct {
  GPVar *p;
  const GPType *type;   /* solved type, or NULL */
  const GPExpr *by;     /* callee of the call that solved it */
  uint32_t by_line, by_col;
  const GPExpr *need;   /* callee of the first call that needed it while unknown */
  uint32_t need_line, need_col;
  int32_t need_arg;
} SParam;

typedef struct {
  GPPtrMap ty;   /* node -> const GPType *, or S_UNKNOWN (the current round) */
  GPPtrMap pidx; /* param under solve -> index + 1 in ps */
  SParam *ps;
  int32_t np, nsolved;
  IFrame *st;
  size_t n, cap;
  const GPType **args, **out; /* per-call scratch */
  size_t args_cap;
} Solver;

static void s_push(Solver *S, GPExpr *e, uint32_t line, uint32_t col) {
  if (S->n == S->cap) {
    S->cap = S->cap ? S->cap * 2 : 64;
    S->st = gp_realloc(S->st, S->cap * sizeof *S->st);
  }
  if (e->line && gp_kind(e) != GP_TI_VAR && gp_kind(e) != GP_TI_GLOBAL_VAR) {
    line = e->line;
    col = e->col;
  }
  S->st[S->n++] = (IFrame){e, 0, line, col, -1, -1};
}

static const GPType *s_get(const Solver *S, const void *e) {
  void *t = gp_map_get(&S->ty, e);
  return t == S_UNKNOWN ? NULL : t;
}

static void s_set(Solver *S, const void *e, const GPType *t) {
  gp_map_put(&S->ty, e, t ? (void *)t : S_UNKNOWN);
}

/* The param under solve that argument expression a is, or NULL. */
static SParam *s_param(Solver *S, const GPExpr *a) {
  if (gp_kind(a) != GP_TI_VAR) return NULL;
  uintptr_t k = (uintptr_t)gp_map_get(&S->pidx, a);
  return k ? &S->ps[k - 1] : NULL;
}

/* "<source>:<line>:<col>" of a location in the module, or "an unknown location". */
static void put_loc(Infer *I, GPBuf *b, uint32_t line, uint32_t col) {
  const char *src = I->m ? I->m->source_name : NULL;
  if (line)
    gp_buf_printf(b, "%s:%u:%u", src ? src : "<input>", line, col);
  else
    gp_buf_puts(b, "an unknown location");
}

static void put_callee(GPBuf *b, const GPExpr *callee) {
  if (gp_kind(callee) == GP_TI_OP)
    gp_buf_puts(b, GP_AS(const GPOp, callee)->name);
  else
    callee_name(b, callee);
}

static int s_conflict(Infer *I, const IFrame *f, const GPExpr *callee, const SParam *sp,
                      const GPType *want) {
  GPBuf msg = {0}, what = {0};
  gp_buf_printf(&msg, "parameter %%%s needs type ", sp->p->name);
  put_type(&msg, want);
  gp_buf_puts(&msg, " here, but ");
  put_callee(&msg, sp->by);
  gp_buf_puts(&msg, " at ");
  put_loc(I, &msg, sp->by_line, sp->by_col);
  gp_buf_puts(&msg, " inferred ");
  put_type(&msg, sp->type);
  put_callee(&what, callee);
  int r = fail(I, f, what.data, &msg);
  gp_buf_free(&what);
  return r;
}

static void s_solve(Solver *S, SParam *sp, const GPType *t, const GPExpr *callee, const IFrame *f) {
  sp->type = t;
  sp->by = callee;
  sp->by_line = f->line;
  sp->by_col = f->col;
  S->nsolved++;
  s_set(S, sp->p, t);
}

/* Record, for each argument that is a still unknown param, the first call that needed it. */
static void s_need(Solver *S, const GPCall *c, const IFrame *f, const GPType *const *ty) {
  for (int32_t i = 0; i < c->nargs; i++) {
    SParam *sp = ty[i] ? NULL : s_param(S, c->args[i]);
    if (sp && !sp->type && !sp->need) {
      sp->need = c->op;
      sp->need_line = f->line;
      sp->need_col = f->col;
      sp->need_arg = i;
    }
  }
}

/* A call whose relation rejected its argument types: a conflict when the op's fill wants another
 * type for an argument that is a solved param.  Returns -1 after reporting it, else 0. */
static int s_op_conflict(Infer *I, Solver *S, const IFrame *f, const GPCall *c, const GPOp *op,
                         GPTypeFillFn fill, const GPType **ty) {
  const GPType **out = S->out;
  bool any = false;
  for (int32_t i = 0; i < c->nargs; i++) {
    out[i] = NULL;
    if (s_param(S, c->args[i])) ty[i] = NULL, any = true;
  }
  if (!any || fill(op, c->attrs, ty, c->nargs, out) != 0) {
    gp_error_clear();
    return 0;
  }
  for (int32_t i = 0; i < c->nargs; i++) {
    SParam *sp = s_param(S, c->args[i]);
    if (sp && out[i] && out[i] != sp->type) return s_conflict(I, f, c->op, sp, out[i]);
  }
  return 0;
}

static int s_call(Infer *I, Solver *S, const IFrame *f) {
  const GPCall *c = GP_AS(const GPCall, f->e);
  int32_t n = c->nargs;
  if ((size_t)n > S->args_cap) {
    S->args_cap = (size_t)n < 16 ? 16 : (size_t)n;
    gp_free(S->args);
    gp_free(S->out);
    S->args = gp_malloc(S->args_cap * sizeof *S->args);
    S->out = gp_malloc(S->args_cap * sizeof *S->out);
  }
  const GPType **ty = S->args, **out = S->out;
  int32_t unknown = 0;
  for (int32_t i = 0; i < n; i++) unknown += !(ty[i] = s_get(S, c->args[i]));
  const GPType *t;
  if (gp_kind(c->op) == GP_TI_OP) {
    const GPOp *op = GP_AS(const GPOp, c->op);
    GPTypeFillFn fill = gp_op_fill(op);
    if (unknown && fill) {
      memset(out, 0, (size_t)n * sizeof *out);
      if (fill(op, c->attrs, ty, n, out) != 0) return fail_prefix(I, f, op->name);
      for (int32_t i = 0; i < n; i++) {
        SParam *sp = ty[i] ? NULL : s_param(S, c->args[i]);
        if (!sp || !out[i]) continue;
        if (!sp->type)
          s_solve(S, sp, out[i], c->op, f);
        else if (sp->type != out[i]) /* the same param twice in this call */
          return s_conflict(I, f, c->op, sp, out[i]);
      }
      unknown = 0;
      for (int32_t i = 0; i < n; i++) unknown += !(ty[i] = s_get(S, c->args[i]));
    }
    if (unknown) {
      s_need(S, c, f, ty);
      s_set(S, c, NULL);
      return 0;
    }
    t = gp_op_infer(op, c->attrs, ty, n);
    if (!t) {
      gp_error_clear();
      if (fill && s_op_conflict(I, S, f, c, op, fill, ty) < 0) return -1;
      for (int32_t i = 0; i < n; i++) ty[i] = s_get(S, c->args[i]);
      gp_op_infer(op, c->attrs, ty, n); /* the relation's message again */
      return fail_prefix(I, f, op->name);
    }
  } else {
    const GPType *ft = s_get(S, c->op);
    if (ft && ft->kind == GP_TYPE_FUNC && ft->n == n) {
      for (int32_t i = 0; i < n; i++) {
        SParam *sp = s_param(S, c->args[i]);
        if (!sp) continue;
        if (!sp->type) {
          s_solve(S, sp, ft->func.params[i], c->op, f);
          ty[i] = sp->type;
          unknown--;
        } else if (sp->type != ft->func.params[i]) {
          return s_conflict(I, f, c->op, sp, ft->func.params[i]);
        }
      }
    }
    if (!ft || unknown) {
      s_need(S, c, f, ty);
      s_set(S, c, NULL);
      return 0;
    }
    t = fn_call_type(I, f, c->op, ft, ty, n);
    if (!t) return -1;
  }
  s_set(S, c, t);
  return 0;
}

/* A var's type when it is not bound in the walk: typed by the enclosing walk, or annotated. */
static const GPType *s_free_var(Infer *I, const GPVar *v) {
  GPExpr *tv = memo_get(I, v);
  if (tv) return tv->checked_type;
  return v->type_annotation ? v->type_annotation : v->base.checked_type;
}

/* Bind the params of a nested function (their annotations; unknown otherwise). */
static void s_bind_params(Solver *S, const GPFunctionExpr *fn) {
  for (int32_t i = 0; i < fn->nparams; i++) {
    const GPVar *p = fn->params[i];
    if (gp_map_get(&S->pidx, p)) continue;
    s_set(S, p, p->type_annotation ? p->type_annotation : p->base.checked_type);
  }
}

/* One round over fn's body. */
static int s_round(Infer *I, Solver *S, const GPFunctionExpr *fn, const IFrame *ff) {
  gp_map_free(&S->ty);
  memset(&S->ty, 0, sizeof S->ty);
  for (int32_t i = 0; i < S->np; i++) s_set(S, S->ps[i].p, S->ps[i].type);
  s_bind_params(S, fn);
  S->n = 0;
  s_push(S, fn->body, ff->line, ff->col);
  GPExpr *kids[3];
  while (S->n) {
    IFrame *f = &S->st[S->n - 1];
    GPExpr *e = f->e;
    if (f->state == 0 && gp_map_has(&S->ty, e)) {
      S->n--;
      continue;
    }
    IFrame cur = *f;
    size_t at = S->n - 1;
    const GPType *t = NULL;
    bool done = true;
    switch (gp_kind(e)) {
    case GP_TI_VAR: t = s_free_var(I, GP_AS(const GPVar, e)); break;
    case GP_TI_GLOBAL_VAR: {
      const GPGlobalVar *g = GP_AS(const GPGlobalVar, e);
      int32_t j = I->m ? gp_module_find(I->m, g->name) : -1;
      t = I->m ? (j >= 0 ? I->gtypes[j] : NULL) : g->base.checked_type;
      break;
    }
    case GP_TI_CONSTANT: {
      const GPConstant *k = GP_AS(const GPConstant, e);
      t = k->base.checked_type;
      if (!t && k->data && !(t = gp_tensor_type(k->data))) gp_error_clear();
      break;
    }
    case GP_TI_OP: break;
    case GP_TI_CALL: {
      const GPCall *c = GP_AS(const GPCall, e);
      if (cur.state == 0) {
        S->st[at].state = 1;
        for (int32_t i = c->nargs - 1; i >= 0; i--) s_push(S, c->args[i], cur.line, cur.col);
        if (gp_kind(c->op) != GP_TI_OP) s_push(S, c->op, cur.line, cur.col);
        continue;
      }
      if (s_call(I, S, &cur) < 0) return -1;
      S->n = at;
      continue;
    }
    case GP_TI_TUPLE: {
      const GPTuple *tp = GP_AS(const GPTuple, e);
      if (cur.state == 0) {
        S->st[at].state = 1;
        for (int32_t i = tp->n - 1; i >= 0; i--) s_push(S, tp->fields[i], cur.line, cur.col);
        continue;
      }
      const GPType **ty = gp_malloc((size_t)(tp->n ? tp->n : 1) * sizeof *ty);
      bool known = true;
      for (int32_t i = 0; i < tp->n && known; i++) known = (ty[i] = s_get(S, tp->fields[i])) != NULL;
      if (known && !(t = gp_type_tuple(tp->n, ty))) {
        gp_free(ty);
        return fail_prefix(I, &cur, "tuple");
      }
      gp_free(ty);
      break;
    }
    case GP_TI_TUPLE_GET_ITEM: {
      const GPTupleGetItem *g = GP_AS(const GPTupleGetItem, e);
      if (cur.state == 0) {
        S->st[at].state = 1;
        s_push(S, g->tuple, cur.line, cur.col);
        continue;
      }
      const GPType *tt = s_get(S, g->tuple);
      if (tt && !(t = get_item_type(I, &cur, g->index, tt))) return -1;
      break;
    }
    case GP_TI_IF: {
      if (cur.state == 0) {
        S->st[at].state = 1;
        gp_expr_children(e, kids, 3);
        for (int32_t i = 2; i >= 0; i--) s_push(S, kids[i], cur.line, cur.col);
        continue;
      }
      gp_expr_children(e, kids, 3);
      const GPType *c0 = s_get(S, kids[0]), *a = s_get(S, kids[1]), *b = s_get(S, kids[2]);
      if (c0 && a && b && !(t = if_type(I, &cur, c0, a, b))) return -1;
      break;
    }
    case GP_TI_LET: {
      const GPLet *l = GP_AS(const GPLet, e);
      if (cur.state == 0) {
        S->st[at].state = 1;
        if (l->var->type_annotation) s_set(S, l->var, l->var->type_annotation);
        s_push(S, l->value, cur.line, cur.col);
        continue;
      }
      if (cur.state == 1) {
        S->st[at].state = 2;
        const GPType *vt = s_get(S, l->value);
        if (!l->var->type_annotation)
          s_set(S, l->var, vt);
        else if (vt && !type_fits(l->var->type_annotation, vt))
          return let_mismatch(I, &cur, l->var, l->var->type_annotation, vt);
        s_push(S, l->body, cur.line, cur.col);
        continue;
      }
      t = s_get(S, l->body);
      break;
    }
    case GP_TI_FUNCTION_EXPR: {
      const GPFunctionExpr *g = GP_AS(const GPFunctionExpr, e);
      if (cur.state == 0) {
        S->st[at].state = 1;
        s_bind_params(S, g);
        s_push(S, g->body, cur.line, cur.col);
        continue;
      }
      const GPType *bt = s_get(S, g->body);
      const GPType **ty = gp_malloc((size_t)(g->nparams ? g->nparams : 1) * sizeof *ty);
      bool known = bt != NULL;
      for (int32_t i = 0; i < g->nparams && known; i++) known = (ty[i] = s_get(S, g->params[i])) != NULL;
      if (known && !(t = function_type(I, &cur, g, ty, bt))) {
        gp_free(ty);
        return -1;
      }
      gp_free(ty);
      break;
    }
    default: done = false; break;
    }
    if (!done) {
      gp_error_set(GP_ERR_INTERNAL, "infer: unexpected object of type %s",
                   gp_type_index_name(gp_kind(e)));
      return -1;
    }
    s_set(S, e, t);
    S->n = at;
  }
  return 0;
}

static void s_free(Solver *S) {
  gp_map_free(&S->ty);
  gp_map_free(&S->pidx);
  gp_free(S->ps);
  gp_free(S->st);
  gp_free(S->args);
  gp_free(S->out);
}

/* The params of fn without a type, solved from their uses: a new array (per param; NULL for
 * the typed ones), or NULL after an error. */
static const GPType **solve_params(Infer *I, const IFrame *f, const GPFunctionExpr *fn) {
  Solver S;
  memset(&S, 0, sizeof S);
  S.ps = gp_calloc((size_t)fn->nparams, sizeof *S.ps);
  for (int32_t i = 0; i < fn->nparams; i++) {
    GPVar *p = fn->params[i];
    if (p->type_annotation || p->base.checked_type || gp_map_get(&S.pidx, p)) continue;
    S.ps[S.np].p = p;
    gp_map_put(&S.pidx, p, (void *)(uintptr_t)(S.np + 1));
    S.np++;
  }
  const GPType **res = NULL;
  for (;;) {
    int32_t before = S.nsolved;
    if (s_round(I, &S, fn, f) < 0) goto out;
    if (S.nsolved == S.np) break;
    if (S.nsolved > before) continue;
    const SParam *sp = &S.ps[0];
    while (sp->type) sp++; /* the first param still unknown */
    GPBuf msg = {0};
    if (sp->need) {
      IFrame nf = *f;
      nf.line = sp->need_line ? sp->need_line : sp->p->base.line;
      nf.col = sp->need_line ? sp->need_col : sp->p->base.col;
      GPBuf what = {0};
      put_callee(&what, sp->need);
      gp_buf_printf(&msg, "cannot infer the type of parameter %%%s (argument %d), which has no "
                          "type annotation",
                    sp->p->name, sp->need_arg);
      if (gp_kind(sp->need) == GP_TI_OP && gp_op_fill(GP_AS(const GPOp, sp->need)))
        gp_buf_printf(&msg, ": %s infers it only from attributes and argument types it does not have here",
                      GP_AS(const GPOp, sp->need)->name);
      fail(I, &nf, what.data, &msg);
      gp_buf_free(&what);
    } else {
      IFrame pf = *f;
      if (sp->p->base.line) {
        pf.line = sp->p->base.line;
        pf.col = sp->p->base.col;
      }
      gp_buf_printf(&msg, "parameter %%%s has no type annotation and no use determines its type",
                    sp->p->name);
      fail(I, &pf, "function", &msg);
    }
    goto out;
  }
  res = gp_calloc((size_t)fn->nparams, sizeof *res);
  for (int32_t i = 0; i < S.np; i++) {
    for (int32_t j = 0; j < fn->nparams; j++)
      if (fn->params[j] == S.ps[i].p) res[j] = S.ps[i].type;
  }
out:
  s_free(&S);
  return res;
}

static int do_function(Infer *I, IFrame *f) {
  GPFunctionExpr *fn = GP_AS(GPFunctionExpr, f->e);
  if (f->state == 0) {
    const GPType **solved = NULL;
    for (int32_t i = 0; i < fn->nparams; i++) {
      GPVar *p = fn->params[i];
      if (child_get(I, f, i, p)) continue;
      const GPType *t = p->type_annotation ? p->type_annotation : p->base.checked_type;
      if (!t) {
        /* the slow path: solve the untyped params from their uses, bind them annotated */
        if (!solved && !(solved = solve_params(I, f, fn))) return -1;
        GPVar *w = gp_var_new(p->name, solved[i]);
        w->base.line = p->base.line;
        w->base.col = p->base.col;
        memo_put_child(I, f, i, &p->base, &w->base);
        continue;
      }
      memo_put_child(I, f, i, &p->base, gp_expr_annotate(&p->base, t, p->base.line, p->base.col));
    }
    gp_free(solved);
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
  const GPType *t = function_type(I, f, fn, ty, bt);
  if (!t) return -1;
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
        w->base.line = v->base.line;
        w->base.col = v->base.col;
        memo_put_child(I, f, 0, &v->base, &w->base);
      }
    } else if (!type_fits(nv->checked_type, vt)) {
      return let_mismatch(I, f, v, nv->checked_type, vt);
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
      /* A typed closure (it and everything under it typed) is kept without a walk.  Not the
       * function being inferred: its frame finishes its context. */
      if (!I->expr_mode && gp_expr_is_typed_closure(e) && !(I->nctx && e == &I->m->funcs[I->cur_fn]->base)) {
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
  if (gp_module_check_shape(m) != 0) return NULL;
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
  /* A function that is a typed closure is kept as it is, its type known to its callers: O(1)
   * instead of a walk that would keep every node. */
  for (int32_t i = 0; i < nf; i++) {
    GPFunctionExpr *fn = m->funcs[i];
    if (!gp_expr_is_typed_closure(&fn->base)) continue;
    assert(fn->base.checked_type);
    gp_map_put(&I.memo, fn, gp_retain(fn));
    I.gtypes[i] = fn->base.checked_type;
    I.status[i] = 2;
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
    GPExpr *typed = memo_get(&I, m->funcs[i]); /* a typed closure: memo_put refreshed it */
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
