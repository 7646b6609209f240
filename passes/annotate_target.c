/* annotate_target.c -- AnnotateTarget (TVM v0.12's src/relay/transforms/annotate_target.cc with
 * include_non_call_ops=True): every call gets the first target of AnnotateTarget.targets (a
 * comma-separated list, in priority order) that supports it, or "default"; each argument edge
 * gets compiler_end(arg, <the argument's target>) (not for vars, constants, and calls without
 * arguments) and then compiler_begin(..., <the call's target>).  Tuples and get-items take the
 * target of their fields when all agree (else "default"); a function's body, a let's body and
 * the branches of an if get a compiler_end.  A let's value gets compiler_end(value, <its
 * target>) and compiler_begin(..., "default"): its variable is an input to each reader (TVM
 * begins the value's own target, a region that never ends).
 *
 * A target T supports
 *  - a call of an op whose op attribute `target.T` is the bool true, or a packed function that
 *    returns true when called with the call (TVM's FTVMAnnotateTarget);
 *  - a call of an op or a composite function that target T is registered with a kernel for
 *    (GPHostAPI.target_register), when the op has no target.T attribute;
 *  - a call of a composite function (attr Composite="T.<name>", as MergeComposite makes); the
 *    composite function itself is kept as it is.
 * With AnnotateTarget.include_non_call_ops=false (TVM's CallOpsTargetRewriter) tuples, get-items
 * and calls of local functions get compiler_ends on their children and stay outside every region.
 * Annotations already present (a second run) are kept: a call whose first argument is a
 * compiler_begin of a target other than "default" is left alone, and compiler_end keeps its
 * target.
 *
 * A target is unknown (an error naming it and the config key) when no op of the module has an
 * attribute target.T (of any value), no composite function of the module is named T.*, no
 * annotation and no function with Compiler="T" of the module names T, no function
 * relay.ext.T is registered (TVM's codegen hook) and T is not in the target registry.  An op attribute that is neither a
 * bool nor a packed function, a predicate that fails or returns neither a bool nor a string (a
 * refusal and its reason, ABI 1.6, shown by --explain) are errors naming the
 * pass, the op, the attribute and the call (source:line:col).  Linear: one host rewrite per
 * function, a hash map from rewritten nodes to their targets, op attributes looked up once per op. */
#include "byoc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PASS_NAME "AnnotateTarget"
#define TARGETS_KEY "AnnotateTarget.targets"
#define MAX_TARGETS 32
#define REFUSED_OPS 16 /* ops whose refused calls --explain lists by name */

/* Per op: how each target supports it. */
enum { SUP_NO = 0, SUP_YES = 1, SUP_PRED = 2 };
typedef struct OpSupport {
  uint8_t kind[MAX_TARGETS];
  GPPackedFunc *pred[MAX_TARGETS];
} OpSupport;

typedef struct Annot {
  const char *source;
  ByocOps ops;
  /* targets[0] is "default"; 1..ntargets the configured ones; more are added for compilers met
   * in existing annotations */
  const char *names[MAX_TARGETS + 64];
  int32_t nnames, ntargets;
  bool known[MAX_TARGETS + 1];
  GPAttrs *begin_attrs[MAX_TARGETS + 64], *end_attrs[MAX_TARGETS + 64];
  PMap target_of; /* rewritten node -> target index + 1 */
  PMap support;   /* op -> OpSupport* */
  int64_t supported_calls;
  /* calls a target's predicate refused (they stay on the host): per op, how many and where the
   * first is, for --explain (the first REFUSED_OPS ops; the rest only counted) */
  struct {
    const GPOp *op;
    int32_t target;
    int64_t n;
    char first[128];
    char why[160]; /* the first one's reason, when its predicate gave one */
  } refused[REFUSED_OPS];
  int32_t nrefused;
  int64_t refused_calls;
  bool untyped;        /* a result without a type: re-type */
  bool call_ops_only;  /* include_non_call_ops=false: TVM's CallOpsTargetRewriter */
} Annot;

static int target_index(Annot *A, const char *name) {
  for (int32_t i = 0; i < A->nnames; i++)
    if (strcmp(A->names[i], name) == 0) {
      if (i >= 1 && i <= A->ntargets) A->known[i] = true; /* met in an existing annotation */
      return i;
    }
  if (A->nnames >= (int32_t)(sizeof A->names / sizeof A->names[0])) return 0;
  A->names[A->nnames] = name; /* borrowed from an attrs object of the input, alive for the run */
  return A->nnames++;
}

/* The target of a rewritten node (TVM's op_expr_to_target_), or -1.  A node this run made with
 * arguments reads it from its first compiler_begin (whose attrs are this run's, one interned
 * object per target), so no map entry per node; calls without arguments and the inputs of
 * existing compiler_ends are in `target_of`. */
static int tgt_get(const Annot *A, const GPExpr *e) {
  const GPExpr *first = NULL;
  switch (ekind(e)) {
  case GP_TI_CALL: {
    const GPCall *c = (const GPCall *)e;
    if (c->op == &A->ops.begin->base || c->op == &A->ops.end->base) return -1;
    if (c->nargs) first = c->args[0];
    break;
  }
  case GP_TI_TUPLE:
    if (((const GPTuple *)e)->n) first = ((const GPTuple *)e)->fields[0];
    break;
  case GP_TI_TUPLE_GET_ITEM: first = ((const GPTupleGetItem *)e)->tuple; break;
  default: break;
  }
  if (first && byoc_ann(&A->ops, first) == 1) {
    const GPAttrs *a = ((const GPCall *)first)->attrs;
    for (int32_t t = 0; t < A->nnames; t++)
      if (a == A->begin_attrs[t]) return t;
  }
  return A->target_of.len ? (int)(intptr_t)pmap_get(&A->target_of, e) - 1 : -1;
}
static void tgt_put(Annot *A, const GPExpr *e, int t) {
  if (tgt_get(A, e) != t) pmap_put(&A->target_of, e, (void *)(intptr_t)(t + 1));
}

/* A new annotation call of x for target t (attrs cached per target). */
static GPExpr *annotate(Annot *A, int begin, GPExpr *x, int t) {
  GPAttrs **slot = begin ? &A->begin_attrs[t] : &A->end_attrs[t];
  const GPOp *op = begin ? A->ops.begin : A->ops.end;
  if (!*slot) {
    static const char *const keys[] = {"compiler"};
    GPAttrValue v = {.kind = GP_ATTR_STR, .s = A->names[t]};
    *slot = H->op_attrs_new(op, 1, keys, &v);
    if (!*slot) return NULL;
  }
  GPCall *c = H->call_new((GPExpr *)&op->base, 1, &x, *slot);
  if (!c || !x->checked_type) return c ? &c->base : NULL;
  /* an identity: x's type (so the result needs no re-typing) */
  GPExpr *r = H->expr_annotate(&c->base, x->checked_type, 0, 0);
  gp_release(c);
  return r;
}

/* A new node typed like orig (a new reference; n is consumed). */
static GPExpr *typed_like(GPExpr *n, const GPExpr *orig) {
  if (!n || !orig->checked_type) return n;
  GPExpr *r = H->expr_annotate(n, orig->checked_type, orig->line, orig->col);
  gp_release(n);
  return r;
}

/* Whether target T is registered with a kernel named `kernel` (an op or a composite). */
static bool target_kernel(const char *target, const char *kernel) {
  return GP_HAS_FIELD(H, GPHostAPI, target_has_kernel) && H->target_has_kernel(target, kernel) == 1;
}

/* Whether target T is in the target registry. */
static bool target_registered(const char *target) {
  if (!GP_HAS_FIELD(H, GPHostAPI, target_list)) return false;
  char **names = NULL;
  int32_t n = 0;
  bool found = false;
  if (H->target_list(&names, &n) != 0) {
    H->error_clear();
    return false;
  }
  for (int32_t i = 0; i < n && !found; i++) found = strcmp(names[i], target) == 0;
  H->free(names);
  return found;
}

static OpSupport *op_support(Annot *A, const GPOp *op, const GPExpr *call) {
  OpSupport *s = pmap_get(&A->support, op);
  if (s) return s;
  s = calloc(1, sizeof *s);
  if (!s) abort();
  pmap_put(&A->support, op, s);
  char key[160], loc[256];
  for (int32_t t = 1; t <= A->ntargets; t++) {
    snprintf(key, sizeof key, "target.%s", A->names[t]);
    GPAny v = {0};
    if (H->op_get_attr(op, key, &v) != 1) {
      /* no attribute: a registered target's kernels (ABI 1.2 target registry) */
      if (target_kernel(A->names[t], op->name)) {
        A->known[t] = true;
        s->kind[t - 1] = SUP_YES;
      }
      continue;
    }
    A->known[t] = true;
    if (v.type_index == GP_TI_BOOL) {
      s->kind[t - 1] = v.v_int64 ? SUP_YES : SUP_NO;
    } else if (v.type_index == GP_TI_FUNCTION && v.v_obj) {
      s->kind[t - 1] = SUP_PRED;
      s->pred[t - 1] = (GPPackedFunc *)v.v_obj; /* keeps the reference */
      continue;
    } else {
      char d[128];
      std_describe_any(&v, d, sizeof d);
      H->any_clear(&v);
      H->error_set(GP_ERR_PASS, "%s: op attribute %s of %s is %s; expected a bool or a packed function (at the call at %s)",
                   PASS_NAME, key, op->name, d, std_where(A->source, call, loc, sizeof loc));
      return NULL;
    }
    H->any_clear(&v);
  }
  return s;
}

/* Counts a call of op that target t's predicate refused, with its reason ("" when the
 * predicate gave none; see Annot.refused). */
static void refuse(Annot *A, const GPOp *op, int32_t t, const GPExpr *call, const char *why) {
  A->refused_calls++;
  int32_t i = 0;
  while (i < A->nrefused && (A->refused[i].op != op || A->refused[i].target != t)) i++;
  if (i == A->nrefused) {
    if (i == REFUSED_OPS) return;
    A->nrefused++;
    A->refused[i].op = op;
    A->refused[i].target = t;
    A->refused[i].n = 0;
    std_where(A->source, call, A->refused[i].first, sizeof A->refused[i].first);
    snprintf(A->refused[i].why, sizeof A->refused[i].why, "%s", why);
  }
  A->refused[i].n++;
}

/* The target of a call (index into names; 0 = default), or -1 + error. */
static int call_target(Annot *A, GPExpr *orig) {
  const GPCall *c = (const GPCall *)orig;
  if (ekind(c->op) == GP_TI_OP) {
    const GPOp *op = (const GPOp *)c->op;
    OpSupport *s = op_support(A, op, orig);
    if (!s) return -1;
    int32_t refused_by = 0; /* the first target whose predicate refused the call */
    char why[160] = "";     /* and the reason it gave */
    for (int32_t t = 1; t <= A->ntargets; t++) {
      if (s->kind[t - 1] == SUP_YES) return t;
      if (s->kind[t - 1] != SUP_PRED) continue;
      GPPackedFunc *f = s->pred[t - 1];
      GPAny arg = {.type_index = GP_TI_CALL, .v_obj = (GPObject *)orig}, res = {0};
      char loc[256];
      if (f->call(f->self, &arg, 1, &res) != 0) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s", H->error_message() ? H->error_message() : "(no message)");
        H->error_set(GP_ERR_PASS, "%s: the predicate target.%s of %s failed on the call at %s: %s", PASS_NAME,
                     A->names[t], op->name, std_where(A->source, orig, loc, sizeof loc), msg);
        return -1;
      }
      /* a string (ABI 1.6): refused, and why; the first refusal's reason is kept */
      char reason[sizeof why];
      int ok = std_verdict(&res, reason, sizeof reason);
      if (ok < 0) {
        char d[128];
        std_describe_any(&res, d, sizeof d);
        H->any_clear(&res);
        H->error_set(GP_ERR_PASS, "%s: the predicate target.%s of %s returned %s for the call at %s; expected a bool "
                     "or a string (why it refuses)", PASS_NAME, A->names[t], op->name, d,
                     std_where(A->source, orig, loc, sizeof loc));
        return -1;
      }
      H->any_clear(&res);
      if (ok) return t;
      if (!refused_by) {
        refused_by = t;
        memcpy(why, reason, sizeof why);
      }
    }
    if (refused_by) refuse(A, op, refused_by, orig, why); /* no target took it: it stays on the host */
    return 0;
  }
  if (ekind(c->op) == GP_TI_FUNCTION_EXPR) {
    const GPFunctionExpr *fn = (const GPFunctionExpr *)c->op;
    const GPAttrValue *v = fn->attrs ? H->attrs_get(fn->attrs, "Composite") : NULL;
    if (v && v->kind == GP_ATTR_STR && v->s) {
      for (int32_t t = 1; t <= A->ntargets; t++) /* a registered target's composite kernel */
        if (target_kernel(A->names[t], v->s)) {
          A->known[t] = true;
          return t;
        }
      const char *dot = strchr(v->s, '.');
      if (dot) {
        size_t len = (size_t)(dot - v->s);
        for (int32_t t = 1; t <= A->ntargets; t++)
          if (strlen(A->names[t]) == len && strncmp(A->names[t], v->s, len) == 0) {
            A->known[t] = true;
            return t;
          }
      }
    }
  }
  return 0;
}

/* TVM's AnnotateArgs: out[i] = compiler_begin(compiler_end(arg)) etc.; *target is the given
 * target, or -1 to take the common target of the arguments.  New references in out. */
static int annotate_args(Annot *A, int32_t n, GPExpr *const *args, int *target, GPExpr **out) {
  int ref = -2;
  for (int32_t i = 0; i < n; i++) out[i] = NULL;
  for (int32_t i = 0; i < n; i++) {
    GPExpr *arg = args[i];
    int arg_t = 0;
    int ann = byoc_ann(&A->ops, arg);
    GPExpr *end;
    if (ann == 1) {
      GPExpr *inner = ((const GPCall *)arg)->args[0];
      if (strcmp(byoc_compiler(arg), BYOC_DEFAULT) != 0) {
        out[i] = gp_retain(arg); /* keep a begin of another target */
        end = NULL;
      } else {
        end = gp_retain(inner);
      }
      if (byoc_ann(&A->ops, inner) == 2) arg_t = target_index(A, byoc_compiler(inner));
    } else if ((arg_t = tgt_get(A, arg)) >= 0) {
      if (ekind(arg) == GP_TI_CALL && ((const GPCall *)arg)->nargs == 0)
        end = gp_retain(arg);
      else if (!(end = annotate(A, 0, arg, arg_t)))
        goto fail;
    } else {
      arg_t = 0;
      end = gp_retain(arg);
    }
    out[i] = out[i] ? out[i] : end;
    if (ref == -2)
      ref = arg_t;
    else if (ref != arg_t)
      ref = 0;
  }
  int t = *target >= 0 ? *target : ref;
  *target = t;
  if (ref == -2) return 0; /* no arguments */
  for (int32_t i = 0; i < n; i++) {
    if (byoc_ann(&A->ops, out[i]) == 1 && out[i] == args[i]) continue; /* a kept begin */
    GPExpr *b = annotate(A, 1, out[i], t);
    gp_release(out[i]);
    out[i] = b;
    if (!b) goto fail;
  }
  return 0;
fail:
  for (int32_t i = 0; i < n; i++) gp_release(out[i]), out[i] = NULL;
  return -1;
}

/* TVM's InsertCompilerEndAndPropogateTarget: a new reference. */
static GPExpr *insert_end(Annot *A, GPExpr *e) {
  int t = tgt_get(A, e);
  if (t >= 0) {
    int k = ekind(e);
    if (k == GP_TI_TUPLE_GET_ITEM || (k == GP_TI_CALL && ((const GPCall *)e)->nargs > 0) ||
        (k == GP_TI_TUPLE && ((const GPTuple *)e)->n > 0)) {
      GPExpr *r = annotate(A, 0, e, t);
      if (r) tgt_put(A, r, t);
      return r;
    }
  } else if (byoc_ann(&A->ops, e) == 2 && strcmp(byoc_compiler(e), BYOC_DEFAULT) == 0) {
    GPExpr *inner = ((const GPCall *)e)->args[0];
    int it = tgt_get(A, inner);
    GPExpr *r = annotate(A, 0, inner, it < 0 ? 0 : it);
    if (r) tgt_put(A, r, it < 0 ? 0 : it);
    return r;
  }
  return gp_retain(e);
}

#define SMALL 8

/* include_non_call_ops=false: a node that is not an op call gets compiler_ends on its children
 * and no region of its own (TVM's CallOpsTargetRewriter); kids are n rewritten children. */
static GPExpr *ends_only(Annot *A, GPExpr *orig, GPExpr *rebuilt) {
  int32_t nk = gp_expr_num_children(rebuilt), first = ekind(rebuilt) == GP_TI_CALL ? 1 : 0;
  GPExpr *small[SMALL], **kids = nk <= SMALL ? small : malloc(sizeof(GPExpr *) * (size_t)nk);
  if (!kids) abort();
  int32_t k = 0;
  for (; k < nk; k++) {
    GPExpr *c = gp_expr_child_at(rebuilt, k);
    if (!(kids[k] = k < first ? gp_retain(c) : insert_end(A, c))) break;
  }
  GPExpr *n = NULL;
  if (k == nk) {
    switch (ekind(rebuilt)) {
    case GP_TI_CALL: {
      GPCall *c = H->call_new(kids[0], nk - 1, kids + 1, ((const GPCall *)rebuilt)->attrs);
      n = c ? &c->base : NULL;
      break;
    }
    case GP_TI_TUPLE: {
      GPTuple *t = H->tuple_new(nk, kids);
      n = t ? &t->base : NULL;
      break;
    }
    default: {
      GPTupleGetItem *g = H->tuple_get_item_new(kids[0], ((const GPTupleGetItem *)rebuilt)->index);
      n = g ? &g->base : NULL;
      break;
    }
    }
  }
  for (int32_t i = 0; i < k; i++) gp_release(kids[i]);
  if (kids != small) free(kids);
  return typed_like(n, orig);
}

static GPExpr *annot_node(Annot *A, GPExpr *orig, GPExpr *rebuilt);

/* Every result carries its type when it can (the input is typed; annotations are identities);
 * one that does not (e.g. a rebuilt node kept as it is) makes the pass re-type. */
static GPExpr *annot_rewrite(void *user, GPExpr *orig, GPExpr *rebuilt) {
  Annot *A = user;
  return std_note_typed(annot_node(A, orig, rebuilt), rebuilt, &A->untyped);
}

static GPExpr *annot_node(Annot *A, GPExpr *orig, GPExpr *rebuilt) {
  switch (ekind(rebuilt)) {
  case GP_TI_CALL: {
    const GPCall *pc = (const GPCall *)rebuilt;
    int ann = byoc_ann(&A->ops, orig);
    if (ann == 1) {
      target_index(A, byoc_compiler(rebuilt));
      return std_keep(rebuilt);
    }
    if (ann == 2) {
      GPExpr *in = pc->args[0];
      if (tgt_get(A, in) < 0) tgt_put(A, in, target_index(A, byoc_compiler(rebuilt)));
      return std_keep(rebuilt);
    }
    const GPCall *oc = (const GPCall *)orig;
    if (oc->nargs && byoc_ann(&A->ops, oc->args[0]) == 1 && strcmp(byoc_compiler(oc->args[0]), BYOC_DEFAULT) != 0)
      return std_keep(rebuilt);
    if (A->call_ops_only && ekind(pc->op) == GP_TI_VAR) return ends_only(A, orig, rebuilt);
    int t = call_target(A, orig);
    if (t < 0) return NULL;
    GPExpr *small[SMALL], **args = pc->nargs <= SMALL ? small : malloc(sizeof(GPExpr *) * (size_t)pc->nargs);
    if (!args) abort();
    GPExpr *res = NULL;
    if (annotate_args(A, pc->nargs, pc->args, &t, args) == 0) {
      GPCall *nc = H->call_new(pc->op, pc->nargs, args, pc->attrs);
      for (int32_t i = 0; i < pc->nargs; i++) gp_release(args[i]);
      if (nc) {
        res = H->expr_annotate(&nc->base, orig->checked_type, orig->line, orig->col);
        gp_release(nc);
      }
    }
    if (args != small) free(args);
    if (res) {
      tgt_put(A, res, t);
      if (t > 0) A->supported_calls++;
    }
    return res;
  }
  case GP_TI_TUPLE: {
    const GPTuple *tp = (const GPTuple *)rebuilt;
    if (tp->n == 0) return std_keep(rebuilt);
    if (A->call_ops_only) return ends_only(A, orig, rebuilt);
    GPExpr *small[SMALL], **fs = tp->n <= SMALL ? small : malloc(sizeof(GPExpr *) * (size_t)tp->n);
    if (!fs) abort();
    int t = -1;
    GPExpr *res = NULL;
    if (annotate_args(A, tp->n, tp->fields, &t, fs) == 0) {
      GPTuple *nt = H->tuple_new(tp->n, fs);
      for (int32_t i = 0; i < tp->n; i++) gp_release(fs[i]);
      res = typed_like(nt ? &nt->base : NULL, orig);
    }
    if (fs != small) free(fs);
    if (res) tgt_put(A, res, t);
    return res;
  }
  case GP_TI_TUPLE_GET_ITEM: {
    const GPTupleGetItem *g = (const GPTupleGetItem *)rebuilt;
    if (A->call_ops_only) return ends_only(A, orig, rebuilt);
    int t = -1;
    GPExpr *a;
    if (annotate_args(A, 1, &g->tuple, &t, &a) != 0) return NULL;
    GPTupleGetItem *ng = H->tuple_get_item_new(a, g->index);
    gp_release(a);
    GPExpr *r = typed_like(ng ? &ng->base : NULL, orig);
    if (r) tgt_put(A, r, t);
    return r;
  }
  case GP_TI_FUNCTION_EXPR: {
    const GPFunctionExpr *of = (const GPFunctionExpr *)orig;
    if (of->attrs && H->attrs_get(of->attrs, "Composite")) return gp_retain(orig); /* don't step in */
    const GPFunctionExpr *f = (const GPFunctionExpr *)rebuilt;
    GPExpr *body = insert_end(A, f->body);
    if (!body) return NULL;
    GPFunctionExpr *nf = H->function_new(f->nparams, f->params, body, f->ret_type, f->attrs);
    gp_release(body);
    return typed_like(nf ? &nf->base : NULL, orig);
  }
  case GP_TI_LET: {
    const GPLet *l = (const GPLet *)rebuilt;
    GPExpr *body = insert_end(A, l->body);
    if (!body) return NULL;
    GPExpr *value;
    if (ekind(l->value) == GP_TI_FUNCTION_EXPR) {
      value = gp_retain(l->value);
    } else {
      /* the value leaves its region and the variable is an input to whoever reads it: a begin
       * of "default" (TVM begins the value's own target, a region that never ends, which
       * PartitionGraph then refuses) */
      int t = 0;
      if (annotate_args(A, 1, &l->value, &t, &value) != 0) {
        gp_release(body);
        return NULL;
      }
    }
    GPLet *nl = H->let_new(l->var, value, body);
    gp_release(value);
    gp_release(body);
    return typed_like(nl ? &nl->base : NULL, orig);
  }
  case GP_TI_IF: {
    const GPIf *f = (const GPIf *)rebuilt;
    GPExpr *c = insert_end(A, f->cond);
    GPExpr *a = c ? insert_end(A, f->then_branch) : NULL;
    GPExpr *b = a ? insert_end(A, f->else_branch) : NULL;
    GPIf *ni = b ? H->if_new(c, a, b) : NULL;
    gp_release(c), gp_release(a), gp_release(b);
    return typed_like(ni ? &ni->base : NULL, orig);
  }
  default: return std_keep(rebuilt);
  }
}

static GPExpr *annot_function(void *user, const GPModule *mod, int32_t index) {
  Annot *A = user;
  A->source = mod->source_name;
  A->untyped = false;
  return H->rewrite(&mod->funcs[index]->base, annot_rewrite, A);
}

/* Splits the config value into A->names[1..]; -1 + error on an empty or bad list. */
static int parse_targets(Annot *A, char *list) {
  A->names[0] = BYOC_DEFAULT;
  A->nnames = 1;
  for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    while (*tok == ' ') tok++;
    char *e = tok + strlen(tok);
    while (e > tok && e[-1] == ' ') *--e = 0;
    if (!*tok) continue;
    for (const char *p = tok; *p; p++)
      if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-')) {
        H->error_set(GP_ERR_VALUE, "%s: config %s: target '%s' is not a name ([A-Za-z0-9_-]+)", PASS_NAME, TARGETS_KEY, tok);
        return -1;
      }
    if (!strcmp(tok, BYOC_DEFAULT)) {
      H->error_set(GP_ERR_VALUE, "%s: config %s: '%s' is reserved for the ops no target takes", PASS_NAME, TARGETS_KEY, tok);
      return -1;
    }
    if (A->nnames > MAX_TARGETS) {
      H->error_set(GP_ERR_VALUE, "%s: config %s: more than %d targets", PASS_NAME, TARGETS_KEY, MAX_TARGETS);
      return -1;
    }
    bool dup = false;
    for (int32_t i = 1; i < A->nnames; i++) dup = dup || !strcmp(A->names[i], tok);
    if (!dup) A->names[A->nnames++] = tok;
  }
  A->ntargets = A->nnames - 1;
  if (!A->ntargets) {
    H->error_set(GP_ERR_VALUE,
                 "%s: config %s is empty: name the targets, e.g. --config %s=dnnl or --target-ops dnnl=nn.conv2d,nn.relu",
                 PASS_NAME, TARGETS_KEY, TARGETS_KEY);
    return -1;
  }
  return 0;
}

static void annot_free(Annot *A) {
  for (size_t i = 0; i < A->support.cap; i++) {
    OpSupport *s = A->support.slots[i].val;
    if (!A->support.slots[i].key || !s) continue;
    for (int32_t t = 0; t < MAX_TARGETS; t++) gp_release(s->pred[t]);
    free(s);
  }
  pmap_free(&A->support);
  pmap_free(&A->target_of);
  for (size_t i = 0; i < sizeof A->begin_attrs / sizeof A->begin_attrs[0]; i++) {
    gp_release(A->begin_attrs[i]);
    gp_release(A->end_attrs[i]);
  }
}

static int annotate_target(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args(PASS_NAME, args, nargs, &mod, &ctx) != 0) return -1;
  const char *cfg = std_config_str(ctx, TARGETS_KEY, "");
  size_t len = strlen(cfg);
  char *list = malloc(len + 1);
  if (!list) abort();
  memcpy(list, cfg, len + 1);
  Annot *A = calloc(1, sizeof *A);
  if (!A) abort();
  GPModule *out = NULL;
  A->call_ops_only = !std_config_bool(ctx, "AnnotateTarget.include_non_call_ops", true);
  if (parse_targets(A, list) != 0 || byoc_ops(&A->ops) != 0) goto done;
  out = std_function_pass_typed(mod, annot_function, A, &A->untyped);
  if (!out) goto done;
  for (int32_t f = 0; f < mod->num_functions; f++) { /* an external function of T makes T known */
    const GPFunctionExpr *fn = mod->funcs[f];
    const GPAttrValue *c = fn->attrs ? H->attrs_get(fn->attrs, "Compiler") : NULL;
    if (!c || c->kind != GP_ATTR_STR || !c->s) continue;
    for (int32_t t = 1; t <= A->ntargets; t++)
      if (!strcmp(c->s, A->names[t])) A->known[t] = true;
  }
  for (int32_t t = 1; t <= A->ntargets; t++) {
    if (A->known[t] || target_registered(A->names[t])) continue;
    char fname[160];
    snprintf(fname, sizeof fname, "relay.ext.%s", A->names[t]);
    GPPackedFunc *f = H->func_get(fname);
    if (f) {
      gp_release(f);
      continue;
    }
    H->error_set(GP_ERR_VALUE,
                 "%s: unknown target '%s' in %s: no op of the module has an attribute target.%s, no composite "
                 "function is named %s.*, no function relay.ext.%s is registered, and no target %s is",
                 PASS_NAME, A->names[t], TARGETS_KEY, A->names[t], A->names[t], A->names[t], A->names[t]);
    gp_release(out);
    out = NULL;
    goto done;
  }
  std_note(ctx, "%lld calls annotated for a target", (long long)A->supported_calls);
  if (A->refused_calls) { /* what stays on the host though its op has a kernel there, and where */
    char buf[1536];
    size_t k = 0;
    int64_t listed = 0;
    for (int32_t i = 0; i < A->nrefused && k < sizeof buf; i++) {
      int w = snprintf(buf + k, sizeof buf - k, "%s%s: %lld (target %s; the first at %s%s%s)", i ? "; " : "",
                       A->refused[i].op->name, (long long)A->refused[i].n, A->names[A->refused[i].target],
                       A->refused[i].first, A->refused[i].why[0] ? ": " : "", A->refused[i].why);
      k += w > 0 ? (size_t)w : 0;
      listed += A->refused[i].n;
    }
    if (k >= sizeof buf) k = sizeof buf - 1;
    buf[k] = 0;
    std_note(ctx, "%lld calls stay on the host, their target's predicate refused them (shape, layout, dtype or "
             "attributes it does not run): %s%s", (long long)A->refused_calls, buf,
             listed < A->refused_calls ? "; and calls of other ops" : "");
  }
done:
  annot_free(A);
  free(A);
  free(list);
  return out ? std_return_module(result, out) : -1;
}

int std_register_annotate_target(void) {
  static const char *const required[] = {"InferType"};
  static const GPConfigKey keys[] = {
      {.name = "targets",
       .type_index = GP_TI_RAW_STR,
       .default_value = {.type_index = GP_TI_RAW_STR, .v_c_str = ""},
       .help = "comma-separated targets, in priority order (an op supported by several goes to the first)"},
      {.name = "include_non_call_ops",
       .type_index = GP_TI_BOOL,
       .default_value = {.type_index = GP_TI_BOOL, .v_int64 = 1},
       .help = "annotate tuples and get-items too (TVM's default); false: only op calls get regions"},
  };
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = PASS_NAME,
      .opt_level = 0,
      .kind = GP_PASS_TRANSFORM,
      .required = required,
      .num_required = 1,
      .config_keys = keys,
      .num_config_keys = 2,
      .func = annotate_target,
      .help = "Annotate the calls each BYOC target supports with compiler_begin/compiler_end (TVM's AnnotateTarget).",
  };
  return H->pass_register(&info, 0);
}
