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
 * Test hooks:
 *  - GP_EXT_PLUGIN_EXTRAS set: initialize also registers the global function
 *    "ext_plugin.answer" (returns 42; its self is freed by a deleter in this object), the
 *    attribute "ExtPlugin.tag" = 7 on op "add", a kernel for "add" that fails with "ext_plugin:
 *    add kernel", and the optimization set "ext_set" of target "llvm";
 *  - GP_EXT_PLUGIN_FAIL_INIT set: initialize registers its passes, target and the extras above
 *    and then fails, so the host must unregister them all and close the plugin;
 *  - finalize calls the global function "ext_plugin.test.finalized" when one is registered.
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

/* ---- the extras (test hooks GP_EXT_PLUGIN_EXTRAS and GP_EXT_PLUGIN_FAIL_INIT) */

static int answer(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)args;
  (void)nargs;
  result->type_index = GP_TI_INT;
  result->v_int64 = *(const int *)self;
  return 0;
}

static void free_self(void *self) { free(self); }

static int failing_add(const GPKernelArgs *args, void *user) {
  (void)args;
  (void)user;
  host->error_set(GP_ERR_VALUE, "ext_plugin: add kernel");
  return -1;
}

static int register_extras(void) {
  int *self = malloc(sizeof *self);
  if (!self) return -1;
  *self = 42;
  GPPackedFunc *f = host->func_new(self, answer, free_self);
  if (!f) {
    free(self);
    return -1;
  }
  int rc = host->func_register("ext_plugin.answer", f, 0);
  GPAny fa;
  memset(&fa, 0, sizeof fa);
  fa.type_index = GP_TI_FUNCTION;
  fa.v_obj = &f->obj;
  host->any_clear(&fa); /* the registry holds its own reference */
  if (rc != 0) return -1;
  const GPOp *add = host->op_get("add");
  if (!add) return -1;
  GPAny tag;
  memset(&tag, 0, sizeof tag);
  tag.type_index = GP_TI_INT;
  tag.v_int64 = 7;
  if (host->op_set_attr(add, "ExtPlugin.tag", &tag, 10) != 0) return -1;
  if (host->op_set_kernel(add, failing_add, NULL) != 0) return -1;
  return host->opt_set_register("llvm", "ext_set", "ExtFcFuse");
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
  if (getenv("GP_EXT_PLUGIN_CYCLE")) { /* two passes that require each other */
    static const char *const need_b[] = {"ExtCycleB"}, *const need_a[] = {"ExtCycleA"};
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    info.abi_version = GP_ABI_VERSION;
    info.kind = GP_PASS_TRANSFORM;
    info.func = copy_module;
    info.name = "ExtCycleA";
    info.required = need_b;
    info.num_required = 1;
    if (host->pass_register(&info, 0) != 0) return -1;
    info.name = "ExtCycleB";
    info.required = need_a;
    if (host->pass_register(&info, 0) != 0) return -1;
  }
  if (register_targets_and_kernels() != 0) return -1;
  if ((getenv("GP_EXT_PLUGIN_EXTRAS") || getenv("GP_EXT_PLUGIN_FAIL_INIT")) && register_extras() != 0)
    return -1;
  if (getenv("GP_EXT_PLUGIN_FAIL_INIT")) {
    host->error_set(GP_ERR_VALUE, "ext_plugin: asked to fail (GP_EXT_PLUGIN_FAIL_INIT)");
    return -1;
  }
  return 0;
}

static void ext_finalize(void) {
  GPPackedFunc *f = host ? host->func_get("ext_plugin.test.finalized") : NULL;
  if (f) {
    GPAny r, fa;
    memset(&r, 0, sizeof r);
    memset(&fa, 0, sizeof fa);
    (void)f->call(f->self, NULL, 0, &r);
    host->any_clear(&r);
    fa.type_index = GP_TI_FUNCTION;
    fa.v_obj = &f->obj;
    host->any_clear(&fa);
  }
  host = NULL;
}

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
