/* function_pass.c -- helpers for function-level passes (TVM's CreateFunctionPass): run a
 * per-function rewrite over a module, skipping the functions TVM v0.12's
 * FunctionPassNode::SkipFunction skips; describe nodes and values in error messages. */
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool std_function_skipped(const GPFunctionExpr *fn) {
  if (!fn->attrs) return false;
  /* TVM: func->GetAttr<String>(kCompiler).defined() || GetAttr<Integer>(kSkipOptimization, 0) != 0 */
  const GPAttrValue *c = H->attrs_get(fn->attrs, "Compiler");
  if (c && c->kind != GP_ATTR_NONE) return true;
  const GPAttrValue *s = H->attrs_get(fn->attrs, "SkipOptimization");
  if (!s) return false;
  switch (s->kind) {
  case GP_ATTR_INT:
  case GP_ATTR_BOOL: return s->i != 0;
  case GP_ATTR_FLOAT: return s->f != 0.0;
  default: return false;
  }
}

bool std_module_typed(const GPModule *m) {
  for (int32_t i = 0; i < m->num_functions; i++)
    if (!m->funcs[i]->base.checked_type || !m->funcs[i]->body->checked_type) return false;
  return true;
}

/* (The plugin needs a 1.4 host: std_initialize checks.) */
bool std_may_call(const GPExpr *e, const char *op_name) {
  const GPOp *op = H->op_get(op_name);
  if (!op) {
    H->error_clear(); /* an op nobody registered is called nowhere */
    return false;
  }
  return H->expr_may_call(e, op) != 0;
}

bool std_has_kind(const GPExpr *e, int32_t type_index) { return H->expr_has_kind(e, type_index) != 0; }

bool std_may_call_attr(const GPExpr *e, const char *key) {
  const GPOp *small[32], **ops = small;
  int32_t n = H->op_list_with_attr(key, small, 32);
  if (n < 0) {
    H->error_clear();
    return true;
  }
  if (n > 32) {
    ops = malloc((size_t)n * sizeof *ops);
    if (!ops) return true;
    n = H->op_list_with_attr(key, ops, n);
  }
  bool may = false;
  for (int32_t i = 0; i < n && !may; i++) may = H->expr_may_call(e, ops[i]) != 0;
  if (ops != small) free(ops);
  return may;
}

GPModule *std_function_pass(const GPModule *mod, StdFunctionRewrite run, void *user) {
  return std_function_pass_typed(mod, run, user, NULL);
}

GPModule *std_function_pass_typed(const GPModule *mod, StdFunctionRewrite run, void *user, const bool *untyped) {
  bool retype = false;
  GPModule *typed = std_module_typed(mod) ? gp_retain((GPModule *)mod) : H->infer_types(mod);
  if (!typed) return NULL;
  GPModule *out = NULL;
  for (int32_t fi = 0; fi < typed->num_functions; fi++) {
    GPFunctionExpr *fn = typed->funcs[fi];
    if (std_function_skipped(fn)) continue;
    GPExpr *nf = run(user, typed, fi);
    if (!nf) goto fail;
    retype = retype || !untyped || *untyped || !nf->checked_type;
    if (nf == &fn->base) {
      gp_release(nf);
      continue;
    }
    if (ekind(nf) != GP_TI_FUNCTION_EXPR) {
      gp_release(nf);
      H->error_set(GP_ERR_INTERNAL, "@%s was rewritten into a non-function", typed->gvars[fi]->name);
      goto fail;
    }
    if (!out) out = H->module_copy(typed);
    int rc = out ? H->module_add(out, typed->gvars[fi]->name, (GPFunctionExpr *)nf, 1) : -1;
    gp_release(nf);
    if (rc != 0) goto fail;
  }
  if (!out) return typed;
  gp_release(typed);
  if (!retype) return out;
  /* Rebuilt nodes lost their types: re-type (cheap where nothing changed). */
  GPModule *retyped = H->infer_types(out);
  gp_release(out);
  return retyped;
fail:
  gp_release(out);
  gp_release(typed);
  return NULL;
}

const char *std_where(const char *source, const GPExpr *e, char *buf, size_t n) {
  if (!e || !e->line)
    snprintf(buf, n, "an unknown location");
  else if (source)
    snprintf(buf, n, "%s:%u:%u", source, (unsigned)e->line, (unsigned)e->col);
  else
    snprintf(buf, n, "%u:%u", (unsigned)e->line, (unsigned)e->col);
  return buf;
}

const char *std_kind_name(int32_t type_index) {
  switch (type_index) {
  case GP_TI_NONE: return "None";
  case GP_TI_INT: return "an int";
  case GP_TI_BOOL: return "a bool";
  case GP_TI_FLOAT: return "a float";
  case GP_TI_OPAQUE_PTR: return "an opaque pointer";
  case GP_TI_DTYPE: return "a dtype";
  case GP_TI_DEVICE: return "a device";
  case GP_TI_DLTENSOR_PTR: return "a DLTensor pointer";
  case GP_TI_RAW_STR:
  case GP_TI_STR: return "a string";
  case GP_TI_ERROR: return "an error";
  case GP_TI_FUNCTION: return "a packed function";
  case GP_TI_TENSOR: return "a tensor";
  case GP_TI_ARRAY: return "an array";
  case GP_TI_VAR: return "a var";
  case GP_TI_GLOBAL_VAR: return "a global var";
  case GP_TI_CONSTANT: return "a constant";
  case GP_TI_CALL: return "a call";
  case GP_TI_TUPLE: return "a tuple";
  case GP_TI_TUPLE_GET_ITEM: return "a tuple get-item";
  case GP_TI_FUNCTION_EXPR: return "a function";
  case GP_TI_LET: return "a let";
  case GP_TI_IF: return "an if";
  case GP_TI_OP: return "an op";
  case GP_TI_TYPE: return "a type";
  case GP_TI_ATTRS: return "attributes";
  case GP_TI_MODULE: return "a module";
  case GP_TI_PASS_CONTEXT: return "a pass context";
  default: return type_index >= GP_TI_OBJECT ? "an object" : "a value";
  }
}

void std_describe_any(const GPAny *v, char *buf, size_t n) {
  switch (v->type_index) {
  case GP_TI_INT: snprintf(buf, n, "an int (%lld)", (long long)v->v_int64); break;
  case GP_TI_BOOL: snprintf(buf, n, "a bool (%s)", v->v_int64 ? "true" : "false"); break;
  case GP_TI_FLOAT: snprintf(buf, n, "a float (%g)", v->v_float64); break;
  case GP_TI_RAW_STR: snprintf(buf, n, "a string (\"%.60s\")", v->v_c_str ? v->v_c_str : ""); break;
  case GP_TI_STR:
    snprintf(buf, n, "a string (\"%.60s\")", v->v_obj ? ((const GPString *)v->v_obj)->data : "");
    break;
  default: {
    const char *k = std_kind_name(v->type_index);
    if (v->type_index >= GP_TI_OBJECT && !v->v_obj)
      snprintf(buf, n, "a null object (type index %d)", (int)v->type_index);
    else if (!strcmp(k, "an object") || !strcmp(k, "a value"))
      snprintf(buf, n, "%s of type index %d", k, (int)v->type_index);
    else
      snprintf(buf, n, "%s", k);
    break;
  }
  }
}

/* Take the pending error and set it again as "<prefix>: <message>" (same kind). */
void std_error_prefix(const char *prefix) {
  int32_t kind = H->error_kind();
  const char *msg = H->error_message();
  if (!msg || !*msg) msg = "(no message)";
  size_t len = strlen(msg);
  char *copy = malloc(len + 1);
  if (copy) memcpy(copy, msg, len + 1);
  H->error_set(kind ? kind : GP_ERR_INTERNAL, "%s: %s", prefix, copy ? copy : "(out of memory)");
  free(copy);
}
