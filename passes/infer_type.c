/* infer_type.c -- InferType (opt-level 0): every expression gets its checked type.
 * The inference engine is the host's (the parser, verifier and other passes share it); this
 * pass is its entry in the registry. */
#include "passes.h"

static int infer_type(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args("InferType", args, nargs, &mod, &ctx) != 0) return -1;
  return std_return_module(result, H->infer_types(mod));
}

int std_register_infer_type(void) {
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = "InferType",
      .opt_level = 0,
      .kind = GP_PASS_ANALYSIS,
      .func = infer_type,
      .help = "Infer the type of every expression (shapes and dtypes through the op relations).",
  };
  return H->pass_register(&info, 0);
}
