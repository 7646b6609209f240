/* legalize.c -- Legalize (opt-level 1, requires InferType), TVM v0.12's legalize.cc:
 *  - one host rewrite per function (children first, so a hook sees its arguments already
 *    legalized), into nested functions too (Primitive ones included: TVM's PostOrderRewrite
 *    visits everything); global functions with a `Compiler` attribute or SkipOptimization != 0
 *    are left alone, as TVM's function passes do;
 *  - for a call whose callee is an op with a GP_OP_ATTR_LEGALIZE ("FTVMLegalize") attribute
 *    (GPHostAPI.op_get_attr), the hook is called with [the call with its arguments already
 *    legalized, a tuple GPType of the original arguments' types followed by the call's type];
 *  - the hook returns None: the call is kept; a call: it replaces the original one (and gets the
 *    original's source location when it has none and nobody else holds it);
 *  - anything else is an error.  TVM checks `legalized_value.as<CallNode>()` ("Can only replace
 *    the original operator with another call node"), so a tuple, a constant, a var or any other
 *    expression is rejected as well as non-expressions; the message names the op, the node's
 *    location and what came back.  A hook that fails has its error prefixed the same way;
 *  - the attribute value must be a packed function (ffi_wrap gives one for a C function
 *    "o(o,o)"); anything else is an error naming the op.  Each op's hook is looked up once per
 *    run, so a run sees one consistent hook per op.
 * The module is typed first when it is not, and the result is re-typed (a hook that builds an
 * ill-typed call fails there, naming the node).  The input module is never changed.  No
 * recursion. */
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PASS_NAME "Legalize"

/* Cache marker of an op without a hook. */
typedef struct Leg {
  const char *source; /* the module's source name, or NULL */
  StdHooks hooks;     /* FTVMLegalize per op */
  int64_t calls;      /* calls whose op has a hook */
  int64_t replaced;   /* calls the hook replaced */
} Leg;

static const GPType *hook_types(const Leg *l, const GPCall *c, const GPOp *op) {
  const GPType *small[16];
  int32_t n = c->nargs + 1;
  const GPType **tys = n <= 16 ? small : malloc((size_t)n * sizeof *tys);
  if (!tys) {
    H->error_set(GP_ERR_MEMORY, "out of memory");
    return NULL;
  }
  const GPType *tt = NULL;
  for (int32_t i = 0; i < n; i++) {
    const GPExpr *e = i < c->nargs ? c->args[i] : &c->base;
    tys[i] = e->checked_type;
    if (!tys[i]) {
      char loc[256];
      if (i < c->nargs)
        H->error_set(GP_ERR_TYPE, "op %s at %s: argument %d has no type; run InferType first", op->name,
                     std_where(l->source, &c->base, loc, sizeof loc), (int)i);
      else
        H->error_set(GP_ERR_TYPE, "op %s at %s: the call has no type; run InferType first", op->name,
                     std_where(l->source, &c->base, loc, sizeof loc));
      goto done;
    }
  }
  tt = H->type_tuple(n, tys);
done:
  if (tys != small) free((void *)tys);
  return tt;
}

static GPExpr *leg_rewrite(void *user, GPExpr *orig, GPExpr *rebuilt) {
  Leg *l = user;
  if (ekind(orig) != GP_TI_CALL || ekind(((GPCall *)orig)->op) != GP_TI_OP) return std_keep(rebuilt);
  const GPCall *oc = (const GPCall *)orig;
  const GPOp *op = (const GPOp *)oc->op;
  bool err = false;
  GPPackedFunc *hook = std_hook_of(&l->hooks, op, &err);
  char loc[256], prefix[512];
  if (!hook) {
    if (!err) return std_keep(rebuilt);
    snprintf(prefix, sizeof prefix, "op %s at %s", op->name, std_where(l->source, orig, loc, sizeof loc));
    std_error_prefix(prefix);
    return NULL;
  }
  l->calls++;
  const GPType *tt = hook_types(l, oc, op);
  if (!tt) return NULL;
  GPAny args[2] = {{.type_index = GP_TI_CALL, .v_obj = &rebuilt->obj},
                   {.type_index = GP_TI_TYPE, .v_obj = (GPObject *)&tt->obj}};
  GPAny res = {0};
  if (hook->call(hook->self, args, 2, &res) != 0) {
    H->any_clear(&res);
    if (!H->error_kind()) H->error_set(GP_ERR_INTERNAL, "the hook failed without an error");
    snprintf(prefix, sizeof prefix, "the legalize hook of %s failed at %s", op->name,
             std_where(l->source, orig, loc, sizeof loc));
    std_error_prefix(prefix);
    return NULL;
  }
  if (res.type_index == GP_TI_NONE) return std_keep(rebuilt);
  if (res.type_index != GP_TI_CALL || !res.v_obj || res.v_obj->type_index != GP_TI_CALL) {
    char what[160];
    std_describe_any(&res, what, sizeof what);
    H->any_clear(&res);
    H->error_set(GP_ERR_VALUE,
                 "the legalize hook of %s at %s returned %s; a hook must return a call (or None to keep the call)",
                 op->name, std_where(l->source, orig, loc, sizeof loc), what);
    return NULL;
  }
  GPExpr *repl = (GPExpr *)res.v_obj; /* owned */
  if (repl != rebuilt) l->replaced++;
  /* A fresh call (nobody else holds it) takes the original's location, so that later errors
   * point at the source; a shared one is left alone (copying it would split the sharing). */
  if (!repl->line && orig->line && __atomic_load_n(&repl->obj.ref_count, __ATOMIC_ACQUIRE) == 1) {
    GPExpr *located = H->expr_annotate(repl, repl->checked_type, orig->line, orig->col);
    gp_release(repl);
    repl = located;
  }
  return repl;
}

static void leg_free(Leg *l) { std_hooks_free(&l->hooks); }

static GPExpr *leg_function(void *user, const GPModule *mod, int32_t index) {
  GPExpr *root = &mod->funcs[index]->base;
  if (!std_may_call_attr(root, GP_OP_ATTR_LEGALIZE)) return gp_retain(root); /* no hooked op: O(1) */
  return H->rewrite(root, leg_rewrite, user);
}

static int legalize(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args(PASS_NAME, args, nargs, &mod, &ctx) != 0) return -1;
  if (!GP_HAS_FIELD(H, GPHostAPI, op_get_attr) || !H->op_get_attr) {
    H->error_set(GP_ERR_UNSUPPORTED, "the host has no op attributes (GPHostAPI.op_get_attr)");
    return -1;
  }
  Leg l = {.source = mod->source_name, .hooks = {.key = GP_OP_ATTR_LEGALIZE}};
  GPModule *out = std_function_pass(mod, leg_function, &l);
  leg_free(&l);
  if (!out) return -1;
  std_note(ctx, "%lld of %lld calls with a legalize hook replaced", (long long)l.replaced, (long long)l.calls);
  return std_return_module(result, out);
}

int std_register_legalize(void) {
  static const char *const required[] = {"InferType"};
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = PASS_NAME,
      .opt_level = 1,
      .kind = GP_PASS_TRANSFORM,
      .required = required,
      .num_required = 1,
      .func = legalize,
      .help = "Replace calls of ops that have a legalize hook (op attribute " GP_OP_ATTR_LEGALIZE
              ") by the call the hook returns.",
  };
  return H->pass_register(&info, 0);
}
