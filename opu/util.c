/* util.c -- helpers shared by the OPU passes (see opu.h). */
#include "opu.h"

#include <stdio.h>
#include <string.h>

const GPHostAPI *opu_host;
#define H opu_host

int opu_pass_args(const char *pass, const GPAny *args, int32_t nargs, GPModule **mod, GPPassContext **ctx) {
  if (nargs != 2 || args[0].type_index != GP_TI_MODULE || !args[0].v_obj || args[1].type_index != GP_TI_OPAQUE_PTR) {
    H->error_set(GP_ERR_VALUE, "%s: expects (module, pass context), got %d arguments", pass, (int)nargs);
    return -1;
  }
  *mod = (GPModule *)args[0].v_obj;
  *ctx = (GPPassContext *)args[1].v_ptr;
  return 0;
}

int opu_return_module(GPAny *result, GPModule *mod) {
  if (!mod) return -1;
  result->type_index = GP_TI_MODULE;
  result->zero_padding = 0;
  result->v_obj = &mod->obj;
  return 0;
}

GPModule *opu_run_inner(const char *pass, const GPModule *mod, const char *pipeline, GPPassContext *ctx) {
  GPPassContext *inner = H->ctx_new();
  if (!inner) return NULL;
  GPModule *out = NULL;
  const char *target = ctx ? H->ctx_target(ctx) : NULL;
  if ((!target || H->ctx_set_target(inner, target) == 0) && H->ctx_set_opt_level(inner, 3) == 0)
    out = H->run_pipeline(mod, pipeline, inner);
  if (!out) {
    /* keep the kind, name the pass that ran the pipeline */
    int32_t kind = H->error_kind();
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", kind != GP_OK ? H->error_message() : "unknown error");
    H->error_set(kind != GP_OK ? kind : GP_ERR_PASS, "%s: running %s: %s", pass, pipeline, msg);
  }
  H->ctx_free(inner);
  return out;
}

const GPOp *opu_op(const char *name) { return H->op_get(name); }

bool opu_is_call(const GPExpr *e, const char *name) {
  if (!e || e->obj.type_index != GP_TI_CALL) return false;
  const GPExpr *op = ((const GPCall *)e)->op;
  return op->obj.type_index == GP_TI_OP && strcmp(((const GPOp *)op)->name, name) == 0;
}

const char *opu_where(const GPModule *mod, const GPExpr *e, char *buf, size_t size) {
  const char *src = mod && mod->source_name ? mod->source_name : "<input>";
  if (e && e->line)
    snprintf(buf, size, "%s:%u:%u", src, (unsigned)e->line, (unsigned)e->col);
  else
    snprintf(buf, size, "%s", src);
  return buf;
}
