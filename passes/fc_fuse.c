/* fc_fuse.c -- FcFuse (opt-level 0), Paddle Lite's lite_fc_fuse_pass (fc_fuser.cc): a matrix
 * product plus a constant bias, optionally followed by nn.relu, becomes a call of a composite
 * function `fc` / `fc_relu` (PartitionedFromPattern and Composite attributes, MergeComposite's
 * form), which a target maps to its fc kernel.
 *  - The product is nn.dense(x, w), or nn.matmul(x, w) without transposes (Paddle's matmul
 *    teller: trans_x = trans_y = false).
 *  - The bias is a constant of shape (N) or (1, N), N the product's last dim (Paddle's
 *    inputs_teller1 and its "bias[0] must be 1" / "last dim equals W's" checks); the add must
 *    not broadcast the product to a larger shape.  Other biases are left alone (--explain says
 *    why).
 *  - FcFuse.with_relu (default true, as Paddle's act_types always hold "relu"): the fc_relu rule
 *    runs first, so a relu after the add is taken in when it is the add's only use; with false
 *    only `fc` is made.
 *  - Constants are embedded in the composite (the bias always; the weight when it is a constant,
 *    as Paddle's persistable W); non-constant inputs (x, a non-constant weight) are its
 *    parameters, in the order the pattern meets them.
 *  - A match whose interior (the product, the add) is also used outside is left alone: fusing
 *    would compute it twice (Paddle's AsIntermediate). */
#include "pattern_pass.h"

#include <stdio.h>

#define PASS_NAME "FcFuse"

/* The product: dense, or matmul without transposes; the weight embedded when constant. */
#define FC_MM "%mm=(nn.dense(_, const | _) | nn.matmul(_, const | _){transpose_a=False, transpose_b=False})"

static int fc_check(PPRun *r, const GPMatch *m) {
  const GPExpr *mm = pp_cap(m, "mm"), *b = pp_cap(m, "b"), *add = pp_cap(m, "add");
  const GPType *mt = mm->checked_type, *bt = b->checked_type;
  char bs[96], ms[96];
  if (!mt || !bt || mt->kind != GP_TYPE_TENSOR || bt->kind != GP_TYPE_TENSOR || mt->n < 1)
    return pp_decline(r, m, "the product or the bias is untyped");
  int64_t n = mt->tensor.shape[mt->n - 1];
  bool ok = (bt->n == 1 || (bt->n == 2 && bt->tensor.shape[0] == 1)) && n >= 0 && bt->tensor.shape[bt->n - 1] == n;
  if (!ok || add->checked_type != mt)
    return pp_decline(r, m, "the bias of shape %s is not (N) or (1, N) for the product of shape %s",
                      pp_shape(bt, bs, sizeof bs), pp_shape(mt, ms, sizeof ms));
  return 1;
}

static const PPRule k_rules[] = {
    {"fc_relu", "nn.relu(%add=add(" FC_MM ", %b=const))", fc_check, pp_composite},
    {"fc", "%add=add(" FC_MM ", %b=const)", fc_check, pp_composite},
};

static int fc_fuse(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPPassContext *ctx = nargs == 2 && args[1].type_index == GP_TI_OPAQUE_PTR ? args[1].v_ptr : NULL;
  bool with_relu = std_config_bool(ctx, PASS_NAME ".with_relu", true);
  return with_relu ? pp_run(PASS_NAME, k_rules, 2, NULL, args, nargs, result)
                   : pp_run(PASS_NAME, k_rules + 1, 1, NULL, args, nargs, result);
}

int std_register_fc_fuse(void) {
  static const GPConfigKey keys[] = {
      {.name = "with_relu", .type_index = GP_TI_BOOL, .default_value = {.type_index = GP_TI_BOOL, .v_int64 = 1},
       .help = "also fuse a following nn.relu into fc_relu"},
  };
  static const char *const excluded[] = {"xpu"}; /* Paddle: BindTargets(kAny), ExcludeTargets(kXPU) */
  static const char *const kernels[] = {"fc"};
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = PASS_NAME,
      .opt_level = 0,
      .kind = GP_PASS_TRANSFORM,
      .excluded_targets = excluded,
      .num_excluded_targets = 1,
      .config_keys = keys,
      .num_config_keys = 1,
      .func = fc_fuse,
      .kernels = kernels, /* Paddle: BindKernel("fc") */
      .num_kernels = 1,
      .help = "Paddle Lite's fc fusion: nn.dense / nn.matmul + constant bias [+ nn.relu] into a composite "
              "fc / fc_relu.",
  };
  return GP_HAS_FIELD(H, GPHostAPI, pattern_table_get) ? H->pass_register(&info, 0) : 0;
}
