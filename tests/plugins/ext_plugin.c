/*
 * ext_plugin.c -- an out-of-tree test plugin: built with only `-I abi` (graphpass.h and
 * DLPack), reaching the host only through the GPHostAPI table it is given.
 *
 * Registers the analysis pass "ExtCountCalls" (opt-level 1, requires InferType) which counts
 * the call nodes of every function body, writes "ExtCountCalls: <n> calls" to stderr and
 * returns a copy of its input; and the config key "ExtCountCalls.verbose" (bool, default false)
 * which adds one line per function.
 *
 * With a 1.2 host it also registers the target "ext_npu" (kernels nn.dense, fc and fc_int8),
 * the pass "ExtFcFuse" bound to kernels "fc" and "fc_int8" (Paddle's BindKernel; the std llvm
 * target has fc but not fc_int8; returns a copy of its input), and the
 * pass "ExtOldMinor" through a GPPassInfo that claims ABI 1.1 (struct_size ends at `help`;
 * the 1.2 fields hold garbage the host must not read).
 *
 * Test hook: when the environment variable GP_EXT_PLUGIN_FAIL_INIT is set, initialize registers
 * its passes and target and then fails, so the host must unregister them and close the
 * plugin.
 *
 * Built a second time with -DGP_TEST_FAKE_MAJOR=2: the table then claims ABI 2.0 and the host
 * must refuse it.
 */
#include "graphpass.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GP_TEST_FAKE_MAJOR
#define EXT_ABI_VERSION ((uint32_t)((GP_TEST_FAKE_MAJOR) << 16 | 0))
#else
#define EXT_ABI_VERSION GP_ABI_VERSION
#endif

static const GPHostAPI *host;

static int count_calls(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  if (nargs < 1 || args[0].type_index != GP_TI_MODULE || !args[0].v_obj) {
    host->error_set(GP_ERR_VALUE, "ExtCountCalls: expected a module as argument 0");
    return -1;
  }
  const GPModule *mod = (const GPModule *)args[0].v_obj;
  const GPPassContext *ctx =
      nargs >= 2 && args[1].type_index == GP_TI_OPAQUE_PTR ? (const GPPassContext *)args[1].v_ptr
                                                           : NULL;
  int verbose = 0;
  if (ctx) {
    GPAny v;
    memset(&v, 0, sizeof v);
    if (host->ctx_get_config(ctx, "ExtCountCalls.verbose", &v) == 0)
      verbose = v.type_index == GP_TI_BOOL && v.v_int64 != 0;
    else
      host->error_clear();
  }
  int64_t total = 0;
  for (int32_t i = 0; i < mod->num_functions; i++) {
    GPExpr **nodes = NULL;
    size_t n = 0;
    if (host->post_order(mod->funcs[i]->body, &nodes, &n) != 0) return -1;
    int64_t calls = 0;
    for (size_t k = 0; k < n; k++)
      if (nodes[k]->obj.type_index == GP_TI_CALL) calls++;
    host->free(nodes);
    if (verbose) fprintf(stderr, "ExtCountCalls: @%s: %" PRId64 " calls\n", mod->gvars[i]->name, calls);
    total += calls;
  }
  fprintf(stderr, "ExtCountCalls: %" PRId64 " calls\n", total);
  GPModule *out = host->module_copy(mod);
  if (!out) return -1;
  result->type_index = GP_TI_MODULE;
  result->v_obj = &out->obj;
  return 0;
}

static int copy_module(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  if (nargs < 1 || args[0].type_index != GP_TI_MODULE || !args[0].v_obj) {
    host->error_set(GP_ERR_VALUE, "ext_plugin: expected a module as argument 0");
    return -1;
  }
  GPModule *out = host->module_copy((const GPModule *)args[0].v_obj);
  if (!out) return -1;
  result->type_index = GP_TI_MODULE;
  result->v_obj = &out->obj;
  return 0;
}

/* The 1.2 additions: a target, a kernel-bound pass, and a pass registered the 1.1 way. */
static int register_targets_and_kernels(void) {
  if (!GP_HAS_FIELD(host, GPHostAPI, target_list)) return 0; /* a 1.1 host */
  static const char *const npu_kernels[] = {"nn.dense", "fc", "fc_int8"};
  GPTargetInfo t;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  t.abi_version = GP_ABI_VERSION;
  t.name = "ext_npu";
  t.help = "a test accelerator (ext_plugin)";
  t.kernels = npu_kernels;
  t.num_kernels = 3;
  if (host->target_register(&t, 0) != 0) return -1;

  static const char *const fc[] = {"fc", "fc_int8"};
  GPPassInfo info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  info.abi_version = GP_ABI_VERSION;
  info.name = "ExtFcFuse";
  info.kind = GP_PASS_TRANSFORM;
  info.func = copy_module;
  info.help = "needs kernels fc and fc_int8 (test plugin)";
  info.kernels = fc;
  info.num_kernels = 2;
  if (host->pass_register(&info, 0) != 0) return -1;

  memset(&info, 0, sizeof info);
  info.struct_size = GP_STRUCT_SIZE(GPPassInfo, help); /* as a 1.1 plugin fills it */
  info.abi_version = (uint32_t)(GP_ABI_VERSION_MAJOR << 16 | 1);
  info.name = "ExtOldMinor";
  info.kind = GP_PASS_TRANSFORM;
  info.func = copy_module;
  info.help = "registered with a 1.1 GPPassInfo (test plugin)";
  memset((char *)&info + info.struct_size, 0xab, sizeof info - info.struct_size); /* not ours */
  return host->pass_register(&info, 0);
}

static int ext_initialize(const GPHostAPI *h) {
  /* A plugin checks that the host table has every field it uses. */
  if (!h || GP_ABI_MAJOR_OF(h->abi_version) != GP_ABI_VERSION_MAJOR ||
      !GP_HAS_FIELD(h, GPHostAPI, plugin_load)) {
    if (h && GP_HAS_FIELD(h, GPHostAPI, error_set))
      h->error_set(GP_ERR_VERSION, "ext_plugin needs graphpass ABI %d.x", GP_ABI_VERSION_MAJOR);
    return -1;
  }
  host = h;
  static const char *const required[] = {"InferType"};
  GPConfigKey keys[1];
  memset(keys, 0, sizeof keys);
  keys[0].name = "verbose";
  keys[0].type_index = GP_TI_BOOL;
  keys[0].default_value.type_index = GP_TI_BOOL;
  keys[0].default_value.v_int64 = 0;
  keys[0].help = "print the count of every function too";
  GPPassInfo info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  info.abi_version = GP_ABI_VERSION;
  info.name = "ExtCountCalls";
  info.opt_level = 1;
  info.kind = GP_PASS_ANALYSIS;
  info.required = required;
  info.num_required = 1;
  info.config_keys = keys;
  info.num_config_keys = 1;
  info.func = count_calls;
  info.help = "count the call nodes of the module (test plugin)";
  if (host->pass_register(&info, 0) != 0) return -1;
  if (register_targets_and_kernels() != 0) return -1;
  if (getenv("GP_EXT_PLUGIN_FAIL_INIT")) {
    host->error_set(GP_ERR_VALUE, "ext_plugin: asked to fail (GP_EXT_PLUGIN_FAIL_INIT)");
    return -1;
  }
  return 0;
}

static void ext_finalize(void) { host = NULL; }

static const GPPluginAPI ext_api = {
    .struct_size = sizeof(GPPluginAPI),
    .abi_version = EXT_ABI_VERSION,
    .name = "ext_plugin",
    .version = "0.1.0",
    .initialize = ext_initialize,
    .finalize = ext_finalize,
};

GP_EXPORT const GPPluginAPI *graphpass_plugin_entry(void);

GP_EXPORT const GPPluginAPI *graphpass_plugin_entry(void) { return &ext_api; }
