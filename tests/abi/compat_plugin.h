/* compat_plugin.h -- the body of a plugin built against an old copy of abi/graphpass.h (included
 * by plugin_1_0.c and plugin_1_1.c right after their header): what a plugin of that version
 * could do, so that tests/test_abi_compat.c checks that the current host still loads and runs
 * it.  The headers are abi/graphpass.h as released (git show <commit>:abi/graphpass.h):
 * graphpass-1.0.h at 413cc5d, graphpass-1.1.h at 5f9ee48, graphpass-1.2.h at e57ba85, graphpass-1.3.h
 * at 5752c83, graphpass-1.4.h at 31607af, graphpass-1.5.h at 6d0f9c6.
 *
 * Every version: a pass Compat1<minor>Negate that wraps @main's body in negative(...) (a new
 * module; the input is never changed) and an op compat1<minor>.identity with a type relation.
 * From 1.1: the op also has a kernel (a copy of its input) and a global function
 * compat1<minor>.answer returning 42. */
#include <string.h>

#define STR2(x) #x
#define STR(x) STR2(x)
#define CP_NAME "compat_1_" STR(GP_ABI_VERSION_MINOR)
#define CP_PASS "Compat1" STR(GP_ABI_VERSION_MINOR) "Negate"
#define CP_OP "compat1" STR(GP_ABI_VERSION_MINOR) ".identity"
#define CP_FUNC "compat1" STR(GP_ABI_VERSION_MINOR) ".answer"

static const GPHostAPI *H;

static int negate(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  if (nargs != 2 || args[0].type_index != GP_TI_MODULE) {
    H->error_set(GP_ERR_VALUE, "expected (module, ctx)");
    return -1;
  }
  const GPModule *in = (const GPModule *)(const void *)args[0].v_obj;
  GPModule *out = H->module_new(in->source_name);
  if (!out) return -1;
  const GPOp *neg = H->op_get("negative");
  for (int32_t i = 0; i < in->num_functions; i++) {
    GPFunctionExpr *f = in->funcs[i];
    if (strcmp(in->gvars[i]->name, "main") != 0) {
      if (H->module_add(out, in->gvars[i]->name, f, 0) != 0) goto fail;
      continue;
    }
    GPExpr *arg = f->body;
    GPCall *c = neg ? H->call_new((GPExpr *)(void *)neg, 1, &arg, NULL) : NULL;
    GPFunctionExpr *g = c ? H->function_new(f->nparams, f->params, &c->base, f->ret_type, f->attrs) : NULL;
    gp_release(c);
    if (!g) goto fail;
    int rc = H->module_add(out, "main", g, 0);
    gp_release(g);
    if (rc != 0) goto fail;
  }
  result->type_index = GP_TI_MODULE;
  result->v_obj = &out->obj;
  return 0;
fail:
  gp_release(out);
  return -1;
}

static int identity_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *arg_types, int32_t nargs,
                        const GPType **out, void *user) {
  (void)op, (void)attrs, (void)user;
  if (nargs != 1) {
    H->error_set(GP_ERR_TYPE, "expects 1 argument");
    return -1;
  }
  *out = arg_types[0];
  return 0;
}

#if GP_ABI_VERSION_MINOR >= 1
static int identity_kernel(const GPKernelArgs *a, void *user) {
  (void)user;
  const DLTensor *x = a->inputs[0];
  DLTensor *y = a->outputs[0];
  if (x->dtype.code != kDLFloat || x->dtype.bits != 32 || x->strides) {
    H->error_set(GP_ERR_UNSUPPORTED, "compact float32 only");
    return -1;
  }
  int64_t n = 1;
  for (int32_t i = 0; i < x->ndim; i++) n *= x->shape[i];
  memcpy(y->data, (const char *)x->data + x->byte_offset, (size_t)n * 4);
  return 0;
}

static int answer(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self, (void)args, (void)nargs;
  result->type_index = GP_TI_INT;
  result->v_int64 = 42;
  return 0;
}
#endif

static int cp_initialize(const GPHostAPI *host) {
  H = host;
  GPPassInfo info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  info.abi_version = GP_ABI_VERSION;
  info.name = CP_PASS;
  info.opt_level = 0;
  info.kind = GP_PASS_TRANSFORM;
  info.func = negate;
  info.help = "wraps @main's body in negative (an ABI compatibility test)";
  if (H->pass_register(&info, 0) != 0) return -1;
  GPOpDef def;
  memset(&def, 0, sizeof def);
  def.struct_size = sizeof def;
  def.abi_version = GP_ABI_VERSION;
  def.name = CP_OP;
  def.num_inputs = 1;
  def.pattern = GP_PATTERN_ELEMWISE;
  def.type_rel = identity_rel;
  def.help = "identity (an ABI compatibility test)";
#if GP_ABI_VERSION_MINOR >= 1
  def.kernel = identity_kernel;
#endif
  if (!H->op_register(&def, 0)) return -1;
#if GP_ABI_VERSION_MINOR >= 1
  GPPackedFunc *f = H->func_new(NULL, answer, NULL);
  int rc = f ? H->func_register(CP_FUNC, f, 0) : -1;
  gp_release(f);
  if (rc != 0) return -1;
#endif
  return 0;
}

static const GPPluginAPI k_plugin = {
    .struct_size = sizeof(GPPluginAPI),
    .abi_version = GP_ABI_VERSION,
    .name = CP_NAME,
    .version = "1",
    .initialize = cp_initialize,
    .finalize = NULL,
};

GP_EXPORT const GPPluginAPI *graphpass_plugin_entry(void) { return &k_plugin; }
