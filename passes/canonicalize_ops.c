/* canonicalize_ops.c -- CanonicalizeOps (opt-level 3, requires InferType), TVM v0.12's
 * BiasAddSimplifier: nn.bias_add(x, b, axis) becomes add(x, expand_dims(b, axis=1,
 * num_newaxis=ndim-axis-1)) with axis normalized (negative counts from the end) and no
 * expand_dims when num_newaxis is 0 (bias on the last axis); ndim is the rank of x's checked
 * type.  One host rewrite per function (no recursion); the result is re-typed. */
#include "expr_build.h"

#include <stdio.h>
#include <string.h>

#define PASS_NAME "CanonicalizeOps"

typedef struct Canon {
  const char *source;
  int64_t rewritten;
} Canon;

static GPExpr *canon_rewrite(void *user, GPExpr *orig, GPExpr *rebuilt) {
  Canon *cn = user;
  const char *op = sb_op_name(rebuilt);
  if (!op || strcmp(op, "nn.bias_add") != 0) return std_keep(rebuilt);
  const GPCall *c = (const GPCall *)rebuilt;
  const GPCall *oc = (const GPCall *)orig;
  char loc[256];
  const GPType *t = oc->nargs == 2 ? oc->args[0]->checked_type : NULL;
  if (c->nargs != 2 || !t || t->kind != GP_TYPE_TENSOR) {
    H->error_set(GP_ERR_TYPE, "cannot canonicalize nn.bias_add at %s: the type of data is %s (run InferType first)",
                 sb_where(cn->source, orig, loc, sizeof loc), t ? "not a tensor type" : "unknown");
    return NULL;
  }
  const GPAttrValue *av = c->attrs ? H->attrs_get(c->attrs, "axis") : NULL;
  int64_t axis = av && av->kind == GP_ATTR_INT ? av->i : 1;
  if (axis < 0) axis += t->n;
  if (axis < 0 || axis >= t->n) {
    H->error_set(GP_ERR_TYPE, "cannot canonicalize nn.bias_add at %s: axis %lld is out of range for data of rank %d",
                 sb_where(cn->source, orig, loc, sizeof loc), (long long)(av ? av->i : 1), (int)t->n);
    return NULL;
  }
  SBuild b = {.at = orig};
  GPExpr *out = sb_call2(&b, "add", c->args[0], sb_expand_bias(&b, c->args[1], t->n, (int32_t)axis));
  GPExpr *res = sb_finish(&b, out);
  if (!res) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", H->error_message());
    H->error_set(H->error_kind() ? H->error_kind() : GP_ERR_INTERNAL, "cannot canonicalize nn.bias_add at %s: %s",
                 sb_where(cn->source, orig, loc, sizeof loc), msg);
    return NULL;
  }
  cn->rewritten++;
  return res;
}

static GPExpr *canon_function(void *user, const GPModule *mod, int32_t index) {
  Canon *cn = user;
  cn->source = mod->source_name;
  return H->rewrite(&mod->funcs[index]->base, canon_rewrite, cn);
}

static int canonicalize_ops(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args(PASS_NAME, args, nargs, &mod, &ctx) != 0) return -1;
  Canon cn = {0};
  GPModule *out = std_function_pass(mod, canon_function, &cn);
  if (!out) return -1;
  std_note(ctx, "rewrote %lld bias_add calls", (long long)cn.rewritten);
  return std_return_module(result, out);
}

int std_register_canonicalize_ops(void) {
  static const char *const required[] = {"InferType"};
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = PASS_NAME,
      .opt_level = 3,
      .kind = GP_PASS_TRANSFORM,
      .required = required,
      .num_required = 1,
      .func = canonicalize_ops,
      .help = "Rewrite nn.bias_add into expand_dims and add.",
  };
  return H->pass_register(&info, 0);
}
