/* plugin.c -- the entry of the OPU plugin (build/plugins/libgp_opu.so); its only exported
 * symbol is graphpass_plugin_entry.  See opu.h for what it registers. */
#include "opu.h"

#include <string.h>

#define H opu_host

/* The optimization set `default` of target opu: the seed's OPU stack.  The standard plugin's
 * passes first (the ones above the context's opt-level are skipped by the registry: FoldScaleAxis
 * is level 3, CombineParallel* level 4), then the OPU passes, then the BYOC partitioning that
 * puts what target.opu accepts into Compiler="opu" functions, then PrintIR (the IR the codegen
 * reads, to stderr or PrintIR.file). */
static const char k_default_set[] =
    "Legalize,SimplifyInference,EliminateCommonSubexpr,CombineParallelConv2D,CombineParallelDense,"
    "FoldConstant,FoldScaleAxis,CanonicalizeCast,CanonicalizeOps,"
    "ToNCHWLayout,Peephole,CanonicalizeConcatPos,"
    "AnnotateTarget{targets=opu},MergeCompilerRegions,PartitionGraph,"
    "PrintIR"
    /* GenIR goes here: ",GenIR" -- opu_genir_register (opu/genir.c, declared in opu.h) is then
     * added at the end of regs[] in opu_initialize, before the set is registered */
    ;

static int opu_initialize(const GPHostAPI *host) {
  if (!host || GP_ABI_MAJOR_OF(host->abi_version) != GP_ABI_VERSION_MAJOR ||
      !GP_HAS_FIELD(host, GPHostAPI, ctx_set_opt_set)) {
    if (host && GP_HAS_FIELD(host, GPHostAPI, error_set))
      host->error_set(GP_ERR_VERSION, "the opu plugin needs graphpass ABI %d.2 or later", GP_ABI_VERSION_MAJOR);
    return -1;
  }
  opu_host = host;
  /* the set runs the standard plugin's passes: load it first when the host can (ABI 1.3) */
  if (GP_HAS_FIELD(host, GPHostAPI, plugin_require) && host->plugin_require("std") != 0) return -1;
  int (*const regs[])(const GPHostAPI *) = {
      opu_register_target,
      opu_register_to_nchw_layout,
      opu_register_peephole,
      opu_register_canonicalize_concat_pos,
  };
  for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++)
    if (regs[i](host) != 0) return -1;
  return host->opt_set_register("opu", "default", k_default_set);
}

static void opu_finalize(void) { opu_host = NULL; }

static const GPPluginAPI opu_plugin = {
    .struct_size = sizeof(GPPluginAPI),
    .abi_version = GP_ABI_VERSION,
    .name = "opu",
    .version = "0.1.0",
    .initialize = opu_initialize,
    .finalize = opu_finalize, /* the host removes what it registered (target, attrs, passes, set) */
};

GP_EXPORT const GPPluginAPI *graphpass_plugin_entry(void);

GP_EXPORT const GPPluginAPI *graphpass_plugin_entry(void) { return &opu_plugin; }
