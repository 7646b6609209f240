/*
 * pass_check.c -- checks around every pass run_pipeline runs (registry/run.c calls them).
 *
 * A pass must not change its input module and must return a well-formed one (the ABI's
 * promise; a plugin's pass is code we do not control).  Always, in O(functions): the input's
 * function table (global vars and functions, as pointers) is the same after the pass, and the
 * returned module's own fields are sound (gp_module_check_shape: no NULL function or global var,
 * names unique).  For every pass but the bundled standard plugin's ("std", whose
 * passes the test suite verifies golden by golden), the functions the pass made also go through
 * the verifier (gp_verify_new: vars bound once and in scope, types consistent), a linear walk
 * of each new function.  The std passes skip that walk: on a 1M-call graph it doubled the
 * default set's time (bench_synth: 5.1 -> 11.0 us per call at 10k calls); --verify-each runs
 * gp_verify after every pass, std's included.  With the
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

void gp_pass_snap_take(GPPassSnap *s, const GPModule *in, const GPPassContext *ctx, const char *origin) {
  memset(s, 0, sizeof *s);
  s->verify = !origin || strcmp(origin, "std") != 0; /* a host's own passes are verified too */
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
  if (out != in && (s->verify ? gp_verify_new(out, in) : gp_module_check_shape(out)) != 0) {
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
