/* std_plugin.c -- the entry of the standard pass plugin (build/plugins/libgp_std.so).
 * Its only exported symbol is graphpass_plugin_entry. */
#include "../passes/expr_build.h"

#include <string.h>

const GPHostAPI *gp_std_host;
GPExpr *gp_std_keep;

/* TVM v0.12's relay.build order (src/relay/backend/utils.cc, GetPassPrefix, then FuseOps),
 * with every pass that exists here: the passes whose opt-level is above the context's are
 * skipped by the registry with an --explain reason (CombineParallel* are level 4). */
#define CSE_SKIP "graphpass.cse_skip_int32_cast"
static const char default_llvm[] =
    "RemoveUnusedFunctions,Legalize,SimplifyInference,EliminateCommonSubexpr{skip=" CSE_SKIP "},"
    "CombineParallelConv2D,CombineParallelDense,CombineParallelBatchMatmul,FoldConstant,FoldScaleAxis,"
    "SimplifyExpr,CanonicalizeCast,CanonicalizeOps,FlattenAtrousConv,InferType,AlterOpLayout,SimplifyExprPostAlterOp,"
    "FoldConstant,FuseOps";

/* TVM's fskip for that EliminateCommonSubexpr: a cast to int32 is not merged with an equal one.
 * (In v0.12 the lambda then overwrites its result with false, so TVM merges them after all; this
 * keeps what the code says it intends.  Either way the numbers are the same.) */
static int cse_skip_int32_cast(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  bool skip = false;
  if (nargs == 1 && args[0].type_index == GP_TI_CALL && args[0].v_obj) {
    const GPCall *c = (const GPCall *)args[0].v_obj;
    const char *op = sb_op_name(&c->base);
    const GPAttrValue *dt = op && !strcmp(op, "cast") && c->attrs ? H->attrs_get(c->attrs, "dtype") : NULL;
    skip = dt && dt->kind == GP_ATTR_DTYPE && dt->dtype.code == kDLInt && dt->dtype.bits == 32 && dt->dtype.lanes == 1;
  }
  result->type_index = GP_TI_BOOL;
  result->v_int64 = skip;
  return 0;
}

static int register_cse_skip(void) {
  GPPackedFunc *f = H->func_new(NULL, cse_skip_int32_cast, NULL);
  int rc = f ? H->func_register(CSE_SKIP, f, 1) : -1;
  gp_release(f);
  return rc;
}


/* The llvm target: the reference evaluator runs every op, and composite functions (what
 * MergeComposite makes) like any other function. */
static const char *const llvm_composites[] = {"fc", "fc_relu", "conv2d_relu", "conv2d_relu6", "conv2d_leaky_relu"};

static int register_llvm_target(void) {
  if (!GP_HAS_FIELD(H, GPHostAPI, target_register)) return 0; /* a 1.1 host has no targets */
  GPTargetInfo t = {
      .struct_size = sizeof t,
      .abi_version = GP_ABI_VERSION,
      .name = "llvm",
      .help = "CPU; the reference evaluator runs every op and composite functions",
      .kernels = llvm_composites,
      .num_kernels = (int32_t)(sizeof llvm_composites / sizeof llvm_composites[0]),
      .flags = GP_TARGET_ALL_OPS,
  };
  return H->target_register(&t, 0);
}

static int std_initialize(const GPHostAPI *host) {
  if (!host || host->struct_size < GP_STRUCT_SIZE(GPHostAPI, plugin_load)) return -1;
  if (!GP_HAS_FIELD(host, GPHostAPI, rewrite_indexed)) { /* its passes index functions through 1.4's tables */
    host->error_set(GP_ERR_VERSION, "the standard plugin needs a graphpass host of ABI 1.4 or newer (this one is %u.%u)",
                    GP_ABI_MAJOR_OF(host->abi_version), GP_ABI_MINOR_OF(host->abi_version));
    return -1;
  }
  gp_std_host = host;
  gp_std_keep = GP_HAS_FIELD(host, GPHostAPI, rewrite_keep) ? host->rewrite_keep : NULL;
  int (*const regs[])(void) = {std_register_infer_type, std_register_remove_unused_functions,
                                std_register_dead_code_elimination, std_register_print_ir, std_register_fuse_ops,
                                std_register_fold_constant, std_register_legalize,
                                std_register_eliminate_common_subexpr,
                                std_register_simplify_inference, std_register_canonicalize_ops,
                                std_register_canonicalize_cast, std_register_merge_composite,
                                std_register_fc_fuse, std_register_conv_bn_fuse,
                                std_register_conv_elementwise_fuse, std_register_conv_activation_fuse,
                                std_register_annotate_target, std_register_merge_compiler_regions,
                                std_register_partition_graph, std_register_simplify_expr,
                                std_register_fold_scale_axis, std_register_combine_parallel_conv2d,
                                std_register_combine_parallel_dense, std_register_combine_parallel_batch_matmul,
                                std_register_flatten_atrous_conv, std_register_convert_layout,
                                std_register_alter_op_layout};
  for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++)
    if (regs[i]() != 0) return -1;
  if (register_llvm_target() != 0 || register_cse_skip() != 0) return -1;
  return H->opt_set_register("llvm", "default", default_llvm);
}

static const GPPluginAPI std_plugin = {
    .struct_size = sizeof(GPPluginAPI),
    .abi_version = GP_ABI_VERSION,
    .name = "std",
    .version = "0.1.0",
    .initialize = std_initialize,
    .finalize = 0, /* the host removes what it registered (passes, function, target, set) */
};

GP_EXPORT const GPPluginAPI *graphpass_plugin_entry(void) { return &std_plugin; }
