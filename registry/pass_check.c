/*
 * pass_check.c -- checks around every pass run_pipeline runs (registry/run.c calls them).
 *
 * A pass must not change its input module and must return a well-formed one (the ABI's
 * promise; a plugin's pass is code we do not control).  Always, in O(functions) plus the
 * verifier's linear walk of a module that is new: the input's function table (global vars and
 * functions, as pointers) is the same after the pass, and the returned module passes gp_verify
 * (no NULL function, names unique, vars bound once and in scope, types consistent).  With the
 * context's check_immutable (or verify_each), TVM's immutable-module check: the structural hash
 * of the input (gp_module_hash) before and after the pass must agree, which also catches a
 * node changed in place.  Failures are GP_ERR_PASS naming the pass.
 */
#include "registry/registry.h"

#include <string.h>

int gp_ctx_set_check_immutable(GPPassContext *ctx, int on) {
  if (!ctx) {
    gp_error_set(GP_ERR_VALUE, "ctx_set_check_immutable: NULL context");
    return -1;
  }
  ctx->check_immutable = on != 0;
  return 0;
}

void gp_pass_snap_take(GPPassSnap *s, const GPModule *in, const GPPassContext *ctx) {
  memset(s, 0, sizeof *s);
  s->in = in;
  s->n = in->num_functions;
  if (s->n > 0) {
    s->table = gp_malloc(2 * (size_t)s->n * sizeof(void *));
    memcpy(s->table, in->gvars, (size_t)s->n * sizeof(void *));
    memcpy(s->table + s->n, in->funcs, (size_t)s->n * sizeof(void *));
  }
  if (ctx->check_immutable || ctx->verify_each) {
    s->hashed = true;
    s->hash = gp_module_hash(in);
  }
}

int gp_pass_snap_check(GPPassSnap *s, const char *pass, const GPModule *out) {
  const GPModule *in = s->in;
  bool same = in->num_functions == s->n;
  for (int32_t i = 0; same && i < s->n; i++)
    same = (void *)in->gvars[i] == s->table[i] && (void *)in->funcs[i] == s->table[s->n + i];
  if (!same) {
    gp_error_set(GP_ERR_PASS, "pass %s changed its input module (its functions were replaced in place); "
                 "a pass must return a new module and leave its input as it was", pass);
    return -1;
  }
  if (s->hashed && gp_module_hash(in) != s->hash) {
    gp_error_set(GP_ERR_PASS, "pass %s changed its input module (its structural hash differs after the pass); "
                 "a pass must return a new module and leave its input as it was", pass);
    return -1;
  }
  if (out != in && gp_verify(out) != 0) {
    gp_error_prefix("pass %s returned an ill-formed module", pass);
    gp_error_set_kind(GP_ERR_PASS);
    return -1;
  }
  return 0;
}

void gp_pass_snap_free(GPPassSnap *s) {
  gp_free(s->table);
  s->table = NULL;
}
