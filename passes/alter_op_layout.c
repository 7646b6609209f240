/* alter_op_layout.c -- AlterOpLayout (opt-level 3, requires InferType), TVM v0.12's
 * alter_op_layout.cc on the layout rewriter of layout.c: a call whose op has a
 * GP_OP_ATTR_ALTER_OP_LAYOUT ("FTVMAlterOpLayout") attribute, a packed function, is handed to
 * it as [the call with its arguments in their producers' new layouts and the attributes its
 * layout relation chose, a tuple GPType of the original argument types and the call's type];
 * the hook returns a call (usually the op with other layouts) or None (keep it).  The new call's
 * layout relation says what layouts its inputs need; layout_transforms are inserted where they
 * differ from what the producers give, and the ops downstream follow the new layouts through
 * their relations.  A hook that returns anything but a call of an op is an error naming the op
 * and the node.  Ops without a hook keep their attributes; when no call of the module has one
 * (the llvm target registers none) the module is returned unchanged, with a note. */
#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PASS_NAME "AlterOpLayout"

typedef struct Alt {
  const char *source;
  StdHooks hooks; /* FTVMAlterOpLayout per op */
  int64_t hooked, replaced;
  LayStats stats;
} Alt;

/* The op's hook (borrowed), NULL when none, or NULL + error naming the op (*err). */
static GPPackedFunc *hook_of(Alt *a, const GPOp *op, bool *err) {
  GPPackedFunc *f = std_hook_of(&a->hooks, op, err);
  if (*err) {
    char prefix[160];
    snprintf(prefix, sizeof prefix, "op %s", op->name);
    std_error_prefix(prefix);
  }
  return f;
}

static int alter(void *user, const GPCall *orig, GPAttrs *attrs, GPExpr *const *args, GPExpr **out) {
  Alt *a = user;
  const GPOp *op = (const GPOp *)orig->op;
  bool err = false;
  GPPackedFunc *hook = hook_of(a, op, &err);
  if (!hook) return err ? -1 : 0;
  a->hooked++;
  char loc[256];
  const GPType *small[16], **tys = orig->nargs < 16 ? small : malloc((size_t)(orig->nargs + 1) * sizeof *tys);
  if (!tys) {
    H->error_set(GP_ERR_MEMORY, "out of memory");
    return -1;
  }
  for (int32_t i = 0; i < orig->nargs; i++) tys[i] = orig->args[i]->checked_type;
  tys[orig->nargs] = orig->base.checked_type;
  const GPType *tt = H->type_tuple(orig->nargs + 1, tys);
  if (tys != small) free((void *)tys);
  if (!tt) return -1;
  GPCall *call = H->call_new(orig->op, orig->nargs, args, attrs);
  if (!call) return -1;
  GPAny in[2] = {{.type_index = GP_TI_CALL, .v_obj = &call->base.obj},
                 {.type_index = GP_TI_TYPE, .v_obj = (GPObject *)&tt->obj}};
  GPAny res = {0};
  int rc = hook->call(hook->self, in, 2, &res);
  gp_release(call);
  if (rc != 0) {
    H->any_clear(&res);
    if (!H->error_kind()) H->error_set(GP_ERR_INTERNAL, "the hook failed without an error");
    char prefix[512];
    snprintf(prefix, sizeof prefix, "the " GP_OP_ATTR_ALTER_OP_LAYOUT " hook of %s failed at %s", op->name,
             std_where(a->source, &orig->base, loc, sizeof loc));
    std_error_prefix(prefix);
    return -1;
  }
  if (res.type_index == GP_TI_NONE) return 0;
  if (res.type_index != GP_TI_CALL || !res.v_obj || ekind(res.v_obj) != GP_TI_CALL ||
      ekind(((GPCall *)res.v_obj)->op) != GP_TI_OP) {
    char what[160];
    std_describe_any(&res, what, sizeof what);
    if (res.type_index == GP_TI_CALL && res.v_obj) snprintf(what, sizeof what, "a call of a non-op");
    H->any_clear(&res);
    H->error_set(GP_ERR_VALUE,
                 "the " GP_OP_ATTR_ALTER_OP_LAYOUT " hook of %s at %s returned %s; a hook must return a call of an "
                 "op (or None to keep the call)",
                 op->name, std_where(a->source, &orig->base, loc, sizeof loc), what);
    return -1;
  }
  a->replaced++;
  *out = (GPExpr *)res.v_obj;
  return 0;
}

/* Whether some call in the function has an op with a hook (so that a module without any is
 * returned as it is). */
static int any_hook(Alt *a, GPExpr *root) {
  GPExpr **nodes;
  size_t n;
  if (H->post_order(root, &nodes, &n) != 0) return -1;
  int found = 0;
  for (size_t i = 0; i < n && !found; i++) {
    if (ekind(nodes[i]) != GP_TI_CALL || ekind(((GPCall *)nodes[i])->op) != GP_TI_OP) continue;
    bool err = false;
    if (hook_of(a, (const GPOp *)((GPCall *)nodes[i])->op, &err)) found = 1;
    else if (err) found = -1;
  }
  free(nodes);
  return found;
}

static GPExpr *alt_function(void *user, const GPModule *mod, int32_t index) {
  Alt *a = user;
  GPExpr *root = &mod->funcs[index]->base;
  int any = std_may_call_attr(root, GP_OP_ATTR_ALTER_OP_LAYOUT) ? any_hook(a, root) : 0; /* O(1) without */
  if (any < 0) return NULL;
  if (!any) return gp_retain(root);
  return lay_rewrite_function(PASS_NAME, mod, index, alter, a, &a->stats);
}

static int alter_op_layout(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args(PASS_NAME, args, nargs, &mod, &ctx) != 0) return -1;
  if (!GP_HAS_FIELD(H, GPHostAPI, op_get_attr) || !H->op_get_attr) {
    H->error_set(GP_ERR_UNSUPPORTED, "the host has no op attributes (GPHostAPI.op_get_attr)");
    return -1;
  }
  Alt a = {.source = mod->source_name, .hooks = {.key = GP_OP_ATTR_ALTER_OP_LAYOUT}};
  GPModule *out = std_function_pass(mod, alt_function, &a);
  std_hooks_free(&a.hooks);
  if (!out) return -1;
  if (!a.hooked) {
    const char *t = ctx ? H->ctx_target(ctx) : NULL;
    std_note(ctx, "target %s registers no " GP_OP_ATTR_ALTER_OP_LAYOUT " hook here: layouts unchanged (NCHW stays NCHW)",
             t && *t ? t : "llvm");
  } else {
    std_note(ctx, "%lld of %lld calls with a " GP_OP_ATTR_ALTER_OP_LAYOUT " hook altered, %lld layout_transforms inserted",
             (long long)a.replaced, (long long)a.hooked, (long long)a.stats.transforms);
  }
  return std_return_module(result, out);
}

int std_register_alter_op_layout(void) {
  static const char *const required[] = {"InferType"};
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = PASS_NAME,
      .opt_level = 3,
      .kind = GP_PASS_TRANSFORM,
      .required = required,
      .num_required = 1,
      .func = alter_op_layout,
      .help = "Replace calls of ops that have an alter-layout hook (op attribute " GP_OP_ATTR_ALTER_OP_LAYOUT
              ") by the call it returns, inserting layout_transforms at the boundaries (TVM's AlterOpLayout).",
  };
  return H->pass_register(&info, 0);
}
