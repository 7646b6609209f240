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

GPExpr *opu_call(const char *name, int32_t nargs, GPExpr *const *args, int32_t nattrs, const char *const *keys,
                 const GPAttrValue *vals) {
  const GPOp *op = H->op_get(name);
  if (!op) return NULL;
  GPAttrs *attrs = NULL; /* an op without an attribute schema takes none */
  if (op->num_attrs > 0 && !(attrs = H->op_attrs_new(op, nattrs, keys, vals))) return NULL;
  GPCall *c = H->call_new((GPExpr *)&op->base, nargs, args, attrs);
  gp_release(attrs);
  return c ? &c->base : NULL;
}

GPExpr *opu_fold_call(const char *name, int32_t nargs, GPExpr *const *args, int32_t nattrs, const char *const *keys,
                      const GPAttrValue *vals) {
  GPExpr *c = opu_call(name, nargs, args, nattrs, keys, vals);
  if (!c) return NULL;
  GPExpr *r = H->eval_call((const GPCall *)c);
  gp_release(c);
  return r;
}

GPExpr *opu_capture(const GPMatch *m, const char *name) {
  for (int32_t i = 0; i < m->num_captures; i++)
    if (strcmp(m->pattern->capture_names[i], name) == 0) return m->captures[i];
  return NULL;
}

static bool skipped_function(const GPFunctionExpr *f) {
  if (!f->attrs) return false;
  static const char *const keys[] = {"Compiler", "Primitive", "Composite"};
  for (int i = 0; i < 3; i++)
    if (H->attrs_get(f->attrs, keys[i])) return true;
  return false;
}

/* One round over every function: a new module (or mod retained when nothing matched). */
static GPModule *round_once(const GPModule *mod, GPRewriteSpec *spec, int64_t *rewritten) {
  GPModule *out = NULL;
  *rewritten = 0;
  for (int32_t i = 0; i < mod->num_functions; i++) {
    if (skipped_function(mod->funcs[i])) continue;
    spec->num_rewritten = 0;
    GPExpr *nf = H->pattern_rewrite(&mod->funcs[i]->base, spec);
    if (!nf) {
      gp_release(out);
      return NULL;
    }
    if (nf != &mod->funcs[i]->base) {
      if (!out && !(out = H->module_copy(mod))) {
        gp_release(nf);
        return NULL;
      }
      if (H->module_add(out, mod->gvars[i]->name, (GPFunctionExpr *)nf, 1) != 0) {
        gp_release(nf);
        gp_release(out);
        return NULL;
      }
    }
    gp_release(nf);
    *rewritten += spec->num_rewritten;
  }
  return out ? out : (GPModule *)gp_retain((void *)mod);
}

GPModule *opu_rewrite_rounds(const char *pass, const GPModule *mod, GPRewriteSpec *spec, int64_t *total) {
  spec->struct_size = sizeof *spec;
  spec->abi_version = GP_ABI_VERSION;
  *total = 0;
  GPModule *cur = (GPModule *)gp_retain((void *)mod);
  for (int round = 0; round < 64; round++) {
    GPModule *typed = H->infer_types(cur);
    gp_release(cur);
    if (!typed) {
      char msg[2048];
      snprintf(msg, sizeof msg, "%s", H->error_message());
      H->error_set(GP_ERR_PASS, "%s: typing the module: %s", pass, msg);
      return NULL;
    }
    int64_t n = 0;
    cur = round_once(typed, spec, &n);
    if (!cur) {
      gp_release(typed);
      return NULL;
    }
    if (n == 0) {
      gp_release(cur); /* typed, retained */
      return typed;
    }
    gp_release(typed);
    *total += n;
  }
  GPModule *typed = H->infer_types(cur);
  gp_release(cur);
  return typed;
}

GPPassInfo opu_pass_info(const char *name, GPPackedCFunc func, const char *help, bool typed) {
  static const char *const targets[] = {"opu"};
  static const char *const required[] = {"InferType"};
  GPPassInfo info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  info.abi_version = GP_ABI_VERSION;
  info.name = name;
  info.opt_level = 0;
  info.kind = GP_PASS_TRANSFORM;
  info.targets = targets;
  info.num_targets = 1;
  info.required = typed ? required : NULL;
  info.num_required = typed ? 1 : 0;
  info.func = func;
  info.help = help;
  return info;
}
