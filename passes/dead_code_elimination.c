/* dead_code_elimination.c -- DeadCodeElimination (opt-level 1, requires InferType).
 * Works on let bindings, as TVM's: a binding whose name is never used is removed when its
 * value is pure; with `inline_once`, a pure binding used exactly once is inlined at its use.
 * `ignore_impurity` treats every value as pure.  A value is impure when it calls a stateful
 * op or anything that is not an op (a global, closure or var callee: we do not analyse
 * callees, so they are conservatively impure).  Linear: one post-order to count uses and
 * purity, one host rewrite; no recursion. */
#include "passes.h"

#include <stdint.h>

typedef struct {
  PMap uses;      /* var -> use count (as uintptr_t) */
  PMap impure;    /* node -> non-NULL when impure */
  PMap inline_of; /* var -> original value, for bindings to inline */
  PMap inlined;   /* original value -> its rewrite (owned reference), or PENDING */
  bool inline_once, ignore_impurity;
  int64_t removed, inlined_count;
} Dce;

/* Placeholder of a value to inline whose rewrite has not been seen yet. */
static char pending_mark;
#define PENDING ((void *)&pending_mark)

static void analyse(Dce *d, GPExpr **nodes, size_t count) {
  for (size_t k = 0; k < count; k++) {
    GPExpr *e = nodes[k];
    int32_t nc = gp_expr_num_children(e);
    bool impure = false;
    if (ekind(e) == GP_TI_CALL) {
      GPExpr *callee = ((GPCall *)e)->op;
      impure = ekind(callee) != GP_TI_OP || (((GPOp *)callee)->flags & GP_OP_STATEFUL);
    }
    for (int32_t i = 0; i < nc; i++) {
      GPExpr *c = gp_expr_child_at(e, i);
      if (ekind(c) == GP_TI_VAR && !gp_expr_is_binding(e, i))
        pmap_put(&d->uses, c, (void *)((uintptr_t)pmap_get(&d->uses, c) + 1));
      /* a closure's body does not run where the closure is built */
      if (ekind(e) != GP_TI_FUNCTION_EXPR && pmap_has(&d->impure, c)) impure = true;
    }
    if (impure) pmap_put(&d->impure, e, e);
  }
}

static bool removable(const Dce *d, const GPLet *l, uintptr_t uses) {
  bool pure = d->ignore_impurity || !pmap_has(&d->impure, l->value);
  return pure && (uses == 0 || (uses == 1 && d->inline_once));
}

static GPExpr *dce_rewrite(void *user, GPExpr *orig, GPExpr *rebuilt) {
  Dce *d = user;
  if (ekind(orig) == GP_TI_VAR) {
    GPExpr *value = pmap_get(&d->inline_of, orig);
    if (value) {
      GPExpr *repl = pmap_get(&d->inlined, value);
      d->inlined_count++;
      return gp_retain(repl && repl != PENDING ? repl : value);
    }
  } else if (ekind(orig) == GP_TI_LET) {
    GPLet *l = (GPLet *)orig;
    uintptr_t uses = (uintptr_t)pmap_get(&d->uses, l->var);
    if (removable(d, l, uses)) {
      d->removed++;
      return gp_retain(((GPLet *)rebuilt)->body);
    }
  }
  if (pmap_get(&d->inlined, orig) == PENDING) pmap_put(&d->inlined, orig, gp_retain(rebuilt));
  return std_keep(rebuilt);
}

static void dce_free(Dce *d) {
  for (size_t i = 0; i < d->inlined.cap; i++)
    if (d->inlined.slots[i].key && d->inlined.slots[i].val != PENDING) gp_release(d->inlined.slots[i].val);
  pmap_free(&d->uses);
  pmap_free(&d->impure);
  pmap_free(&d->inline_of);
  pmap_free(&d->inlined);
}

static int dce(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args("DeadCodeElimination", args, nargs, &mod, &ctx) != 0) return -1;
  bool inline_once = std_config_bool(ctx, "DeadCodeElimination.inline_once", false);
  bool ignore_impurity = std_config_bool(ctx, "DeadCodeElimination.ignore_impurity", false);
  GPModule *out = NULL;
  for (int32_t f = 0; f < mod->num_functions; f++) {
    Dce d = {.inline_once = inline_once, .ignore_impurity = ignore_impurity};
    GPExpr **nodes;
    size_t count;
    if (H->post_order(&mod->funcs[f]->base, &nodes, &count) != 0) goto fail;
    analyse(&d, nodes, count);
    bool any = false;
    for (size_t k = 0; k < count; k++) {
      if (ekind(nodes[k]) != GP_TI_LET) continue;
      GPLet *l = (GPLet *)nodes[k];
      uintptr_t uses = (uintptr_t)pmap_get(&d.uses, l->var);
      if (!removable(&d, l, uses)) continue;
      any = true;
      if (uses == 1) {
        pmap_put(&d.inline_of, l->var, l->value);
        pmap_put(&d.inlined, l->value, PENDING); /* filled by the rewrite */
      }
    }
    H->free(nodes);
    if (!any) {
      dce_free(&d);
      continue;
    }
    GPExpr *nf = H->rewrite(&mod->funcs[f]->base, dce_rewrite, &d);
    dce_free(&d);
    if (!nf) goto fail;
    if (!out) out = H->module_copy(mod);
    int rc = H->module_add(out, mod->gvars[f]->name, (GPFunctionExpr *)nf, 1);
    gp_release(nf);
    if (rc != 0) goto fail;
  }
  if (!out) return std_return_module(result, gp_retain(mod));
  /* Rebuilt nodes lost their types: re-type (cheap where nothing changed). */
  GPModule *typed = H->infer_types(out);
  gp_release(out);
  return std_return_module(result, typed);
fail:
  gp_release(out);
  return -1;
}

int std_register_dead_code_elimination(void) {
  static const char *const required[] = {"InferType"};
  GPConfigKey keys[] = {
      {.name = "inline_once", .type_index = GP_TI_BOOL, .default_value = {.type_index = GP_TI_BOOL, .v_int64 = 0},
       .help = "inline pure let-bound values used exactly once"},
      {.name = "ignore_impurity", .type_index = GP_TI_BOOL,
       .default_value = {.type_index = GP_TI_BOOL, .v_int64 = 0},
       .help = "treat every bound value as pure (remove unused impure bindings too)"},
  };
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = "DeadCodeElimination",
      .opt_level = 1,
      .kind = GP_PASS_TRANSFORM,
      .required = required,
      .num_required = 1,
      .config_keys = keys,
      .num_config_keys = 2,
      .func = dce,
      .help = "Remove unused pure let bindings; optionally inline those used once.",
  };
  return H->pass_register(&info, 0);
}
