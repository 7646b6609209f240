/*
 * bad_pass_plugin.c -- an out-of-tree test plugin whose passes break the pass contract, for
 * the checks around every pass (registry/pass_check.c; the reproducers of issue #18):
 *  - "BadMutateInput": replaces every function of its *input* module in place (body -> its
 *    first parameter) and returns the input;
 *  - "BadDeepMutate": swaps the first two arguments of its input's @main body call in place
 *    (the function table unchanged: only the structural hash sees it) and returns a copy;
 *  - "BadNullFunction": returns a copy of its input whose first function is NULL;
 *  - "BadUnbound": returns a module whose @main uses a var no function binds.
 * Environment GP_BAD_PASS_RESTORE set: BadDeepMutate swaps the arguments back before returning
 * (a pass that restores what it touched is not reported).
 */
#include "graphpass.h"

#include <stdlib.h>
#include <string.h>

#ifdef GP_TEST_FAKE_MAJOR
#define BAD_ABI_VERSION ((uint32_t)((GP_TEST_FAKE_MAJOR) << 16 | 0))
#else
#define BAD_ABI_VERSION GP_ABI_VERSION
#endif

static const GPHostAPI *host;

static int ret_module(GPAny *r, GPModule *m) {
  if (!m) return -1;
  r->type_index = GP_TI_MODULE;
  r->zero_padding = 0;
  r->v_obj = &m->obj;
  return 0;
}

static int mutate_input(void *self, const GPAny *a, int32_t n, GPAny *r) {
  (void)self;
  (void)n;
  GPModule *m = (GPModule *)a[0].v_obj;
  for (int32_t i = 0; i < m->num_functions; i++) {
    GPFunctionExpr *f = m->funcs[i];
    if (f->nparams < 1) continue;
    GPFunctionExpr *g = host->function_new(f->nparams, f->params, (GPExpr *)f->params[0], NULL, f->attrs);
    if (!g) return -1;
    m->funcs[i] = g;
    gp_release(f);
  }
  gp_retain(m);
  return ret_module(r, m);
}

static int deep_mutate(void *self, const GPAny *a, int32_t n, GPAny *r) {
  (void)self;
  (void)n;
  GPModule *m = (GPModule *)a[0].v_obj;
  GPFunctionExpr *f = host->module_lookup(m, "main");
  if (!f || f->body->obj.type_index != GP_TI_CALL || ((GPCall *)f->body)->nargs < 2) {
    host->error_set(GP_ERR_VALUE, "BadDeepMutate: @main must be a call of two arguments");
    return -1;
  }
  GPCall *c = (GPCall *)f->body;
  GPExpr **args = (GPExpr **)c->args;
  GPExpr *t = args[0];
  args[0] = args[1];
  args[1] = t;
  if (getenv("GP_BAD_PASS_RESTORE")) {
    args[1] = args[0];
    args[0] = t;
  }
  return ret_module(r, host->module_copy(m));
}

static int null_function(void *self, const GPAny *a, int32_t n, GPAny *r) {
  (void)self;
  (void)n;
  GPModule *m = host->module_copy((const GPModule *)a[0].v_obj);
  if (!m) return -1;
  if (m->num_functions > 0) {
    gp_release(m->funcs[0]);
    m->funcs[0] = NULL;
  }
  return ret_module(r, m);
}

static int unbound(void *self, const GPAny *a, int32_t n, GPAny *r) {
  (void)self;
  (void)n;
  const GPModule *in = (const GPModule *)a[0].v_obj;
  GPFunctionExpr *f = host->module_lookup(in, "main");
  if (!f) {
    host->error_set(GP_ERR_VALUE, "BadUnbound: no @main");
    return -1;
  }
  GPVar *stray = host->var_new("stray", NULL);
  GPFunctionExpr *g = stray ? host->function_new(f->nparams, f->params, &stray->base, NULL, f->attrs) : NULL;
  if (stray) gp_release(stray);
  if (!g) return -1;
  GPModule *m = host->module_copy(in);
  if (!m || host->module_add(m, "main", g, 1) != 0) {
    gp_release(g);
    if (m) gp_release(m);
    return -1;
  }
  gp_release(g);
  return ret_module(r, m);
}

static int reg(const char *name, GPPackedCFunc f) {
  GPPassInfo info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  info.abi_version = GP_ABI_VERSION;
  info.name = name;
  info.opt_level = 0;
  info.kind = GP_PASS_TRANSFORM;
  info.func = f;
  info.help = "breaks the pass contract (test)";
  return host->pass_register(&info, 0);
}

static int init(const GPHostAPI *h) {
  host = h;
  return reg("BadMutateInput", mutate_input) || reg("BadDeepMutate", deep_mutate) ||
                 reg("BadNullFunction", null_function) || reg("BadUnbound", unbound)
             ? -1
             : 0;
}

static const GPPluginAPI api = {.struct_size = sizeof(GPPluginAPI), .abi_version = BAD_ABI_VERSION,
                                .name = "bad_pass_plugin", .version = "1", .initialize = init};

GP_EXPORT const GPPluginAPI *graphpass_plugin_entry(void) { return &api; }
