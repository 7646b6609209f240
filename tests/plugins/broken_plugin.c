/*
 * broken_plugin.c -- a test plugin with a deliberately wrong pass, for --opt-bisect-limit and
 * --bisect-numerics (built with only `-I abi`, like every test plugin).
 *
 * Registers:
 *  - "TestSkewRelu" (transform, opt-level 0): every nn.relu(x) becomes add(nn.relu(x), 0.5f),
 *    so the module still types and runs but its numbers change (the bug bisection must find);
 *  - "TestCopy" (transform, opt-level 0): returns a copy of its input (a harmless pass to
 *    surround it with).
 */
#include "graphpass.h"

#include <string.h>

static const GPHostAPI *host;

static GPExpr *skew(void *user, GPExpr *orig, GPExpr *rebuilt) {
  (void)orig;
  const GPOp *relu = user;
  if (rebuilt->obj.type_index != GP_TI_CALL || ((GPCall *)rebuilt)->op != (GPExpr *)relu)
    return gp_retain(rebuilt);
  GPTensor *t = host->tensor_alloc((DLDataType){kDLFloat, 32, 1}, 0, NULL, 1);
  if (!t) return NULL;
  float half = 0.5f;
  memcpy(t->dl.data, &half, sizeof half);
  GPConstant *c = host->constant_new(t);
  gp_release(t);
  if (!c) return NULL;
  const GPOp *add = host->op_get("add");
  GPExpr *args[2] = {rebuilt, &c->base};
  GPCall *call = add ? host->call_new((GPExpr *)add, 2, args, NULL) : NULL;
  gp_release(c);
  return call ? &call->base : NULL;
}

static int skew_relu(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  if (nargs < 1 || args[0].type_index != GP_TI_MODULE || !args[0].v_obj) {
    host->error_set(GP_ERR_VALUE, "TestSkewRelu: expected a module as argument 0");
    return -1;
  }
  const GPModule *in = (const GPModule *)args[0].v_obj;
  const GPOp *relu = host->op_get("nn.relu");
  if (!relu) return -1;
  GPModule *out = host->module_new(in->source_name);
  if (!out) return -1;
  for (int32_t i = 0; i < in->num_functions; i++) {
    GPExpr *f = host->rewrite(&in->funcs[i]->base, skew, (void *)relu);
    if (!f) {
      gp_release(out);
      return -1;
    }
    int rc = host->module_add(out, in->gvars[i]->name, (GPFunctionExpr *)f, 0);
    gp_release(f);
    if (rc != 0) {
      gp_release(out);
      return -1;
    }
  }
  result->type_index = GP_TI_MODULE;
  result->v_obj = &out->obj;
  return 0;
}

static int copy_module(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  if (nargs < 1 || args[0].type_index != GP_TI_MODULE || !args[0].v_obj) {
    host->error_set(GP_ERR_VALUE, "TestCopy: expected a module as argument 0");
    return -1;
  }
  GPModule *out = host->module_copy((const GPModule *)args[0].v_obj);
  if (!out) return -1;
  result->type_index = GP_TI_MODULE;
  result->v_obj = &out->obj;
  return 0;
}

static int reg(const char *name, GPPackedCFunc fn, const char *help) {
  GPPassInfo info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  info.abi_version = GP_ABI_VERSION;
  info.name = name;
  info.kind = GP_PASS_TRANSFORM;
  info.func = fn;
  info.help = help;
  return host->pass_register(&info, 0);
}

static int broken_initialize(const GPHostAPI *h) {
  if (!h || GP_ABI_MAJOR_OF(h->abi_version) != GP_ABI_VERSION_MAJOR || !GP_HAS_FIELD(h, GPHostAPI, rewrite)) {
    if (h && GP_HAS_FIELD(h, GPHostAPI, error_set))
      h->error_set(GP_ERR_VERSION, "broken_plugin needs graphpass ABI %d.x", GP_ABI_VERSION_MAJOR);
    return -1;
  }
  host = h;
  if (reg("TestSkewRelu", skew_relu, "adds 0.5 after every nn.relu: a deliberately wrong pass (test plugin)") != 0)
    return -1;
  return reg("TestCopy", copy_module, "returns a copy of its input (test plugin)");
}

static void broken_finalize(void) { host = NULL; }

#ifdef GP_TEST_FAKE_MAJOR
#define BROKEN_ABI_VERSION ((uint32_t)((GP_TEST_FAKE_MAJOR) << 16 | 0))
#else
#define BROKEN_ABI_VERSION GP_ABI_VERSION
#endif

static const GPPluginAPI broken_api = {
    .struct_size = sizeof(GPPluginAPI),
    .abi_version = BROKEN_ABI_VERSION,
    .name = "broken_plugin",
    .version = "0.1.0",
    .initialize = broken_initialize,
    .finalize = broken_finalize,
};

GP_EXPORT const GPPluginAPI *graphpass_plugin_entry(void);

GP_EXPORT const GPPluginAPI *graphpass_plugin_entry(void) { return &broken_api; }
