/* util.c -- helpers shared by the OPU passes (see opu.h). */
#include "opu.h"
#include "isa.h"

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

int opu_attr_ints(const GPCall *c, const char *key, int64_t *out, int want, int64_t dflt) {
  const GPAttrValue *v = c->attrs ? H->attrs_get(c->attrs, key) : NULL;
  for (int i = 0; i < want; i++) out[i] = dflt;
  if (!v || v->kind != GP_ATTR_INTS || v->n == 0) return 0;
  if (v->n == want) {
    for (int i = 0; i < want; i++) out[i] = v->ints[i];
  } else if (v->n == 1) {
    for (int i = 0; i < want; i++) out[i] = v->ints[0];
  } else if (want == 4 && v->n == 2) {
    out[0] = out[2] = v->ints[0];
    out[1] = out[3] = v->ints[1];
  } else {
    return -1;
  }
  return 0;
}

int opu_window_ok(const GPCall *c, bool conv, char *why, size_t n) {
  int64_t k[2], st[2], dil[2], pad[4];
  if (opu_attr_ints(c, "strides", st, 2, 1) || opu_attr_ints(c, "dilation", dil, 2, 1) ||
      opu_attr_ints(c, "padding", pad, 4, 0) || (!conv && opu_attr_ints(c, "pool_size", k, 2, 1))) {
    snprintf(why, n, "%s, strides, dilation or padding has an unexpected length", conv ? "kernel" : "pool_size");
    return -1;
  }
  if (dil[0] != 1 || dil[1] != 1) {
    snprintf(why, n, "dilation (%lld, %lld); the OPU %s with dilation 1", (long long)dil[0], (long long)dil[1],
             conv ? "convolves" : "pools");
    return -1;
  }
  const GPType *x = c->nargs ? c->args[0]->checked_type : NULL, *w = conv && c->nargs > 1 ? c->args[1]->checked_type : NULL;
  if (conv) {
    if (!x || !w || x->kind != GP_TYPE_TENSOR || w->kind != GP_TYPE_TENSOR || x->n != 4 || w->n != 4) {
      snprintf(why, n, "conv2d needs 4-d data and weight");
      return -1;
    }
    k[0] = w->tensor.shape[2], k[1] = w->tensor.shape[3];
  }
  if (k[0] < 1 || k[1] < 1 || k[0] > OPU_MAX_KERNEL || k[1] > OPU_MAX_KERNEL || st[0] < 1 || st[1] < 1 ||
      st[0] > OPU_MAX_STRIDE || st[1] > OPU_MAX_STRIDE || pad[0] < 0 || pad[1] < 0 || pad[2] < 0 || pad[3] < 0 ||
      pad[0] >= k[0] || pad[2] >= k[0] || pad[1] >= k[1] || pad[3] >= k[1]) {
    snprintf(why, n,
             "%s %lldx%lld, strides (%lld, %lld), padding (%lld, %lld, %lld, %lld): the OPU takes %ss and strides "
             "up to %u and padding below the %s",
             conv ? "kernel" : "window", (long long)k[0], (long long)k[1], (long long)st[0], (long long)st[1],
             (long long)pad[0], (long long)pad[1], (long long)pad[2], (long long)pad[3], conv ? "kernel" : "window",
             OPU_MAX_KERNEL, conv ? "kernel" : "window");
    return -1;
  }
  if (conv) {
    const GPAttrValue *g = c->attrs ? H->attrs_get(c->attrs, "groups") : NULL;
    int64_t groups = g && g->kind == GP_ATTR_INT && g->i > 0 ? g->i : 1;
    uint64_t taps = (uint64_t)(x->tensor.shape[1] / groups) * (uint64_t)k[0] * (uint64_t)k[1];
    if (x->tensor.shape[1] < 0 || taps > OPU_MAX_TAPS) {
      snprintf(why, n, "%llu taps per output; the OPU's int32 accumulator takes at most %u", (unsigned long long)taps,
               OPU_MAX_TAPS);
      return -1;
    }
  }
  return 0;
}

int opu_pad_ok(const GPCall *c, char *why, size_t n) {
  const GPAttrValue *mode = c->attrs ? H->attrs_get(c->attrs, "pad_mode") : NULL;
  const GPAttrValue *pw = c->attrs ? H->attrs_get(c->attrs, "pad_width") : NULL;
  const GPType *xt = c->nargs ? c->args[0]->checked_type : NULL;
  if (mode && mode->kind == GP_ATTR_STR && mode->s && strcmp(mode->s, "constant") != 0) {
    snprintf(why, n, "pad_mode %s; the OPU pads with a constant", mode->s);
    return -1;
  }
  if (!pw || pw->kind != GP_ATTR_INTS || !xt || xt->kind != GP_TYPE_TENSOR || xt->n != 4 || pw->n != 8) {
    snprintf(why, n, "the OPU pads 4-d tensors (pad_width of 8 values)");
    return -1;
  }
  if (pw->ints[0] || pw->ints[1]) {
    snprintf(why, n, "it pads the batch axis; the OPU pads channels, rows and columns");
    return -1;
  }
  for (int k = 2; k < 8; k++)
    if (pw->ints[k] < 0 || pw->ints[k] > 65535) {
      snprintf(why, n, "a negative or huge pad");
      return -1;
    }
  if (c->nargs > 1) {
    const GPExpr *v = c->args[1];
    const GPTensor *t = v->obj.type_index == GP_TI_CONSTANT ? ((const GPConstant *)v)->data : NULL;
    if (!t) {
      snprintf(why, n, "the pad value is not a constant");
      return -1;
    }
    if (t->dl.ndim != 0 || t->dl.dtype.code != kDLFloat || t->dl.dtype.bits != 32 || t->dl.dtype.lanes != 1 || !t->dl.data) {
      snprintf(why, n, "the pad value is not a float32 scalar");
      return -1;
    }
  }
  return 0;
}
