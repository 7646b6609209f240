/* fuzz_numerics.c -- miscompiles, not crashes: Relay text that types and whose @main is small
 * enough to evaluate goes through the llvm target's default set at opt-level 4 with
 * --verify-numerics, so every pass that ran must keep @main's outputs on deterministic inputs
 * (rtol 1e-4, atol 1e-5).  A pass that changes them, or leaves a module that no longer
 * evaluates, is a finding; any other refusal must carry a message.
 *
 * What is not compared (skipped before the run): @main without static parameter types, a
 * module with a tensor of more than 64k elements anywhere (evaluation time), and one whose
 * outputs on the inputs reach non-finite values or magnitudes above 1e4 (a rewrite that TVM
 * also makes, x * 0 -> 0 or a reassociated sum, may then change them legitimately: inf * 0,
 * or rounding at a scale where 1e-4 is below one ulp of the sum's terms). */
#include "fuzz_common.h"

#include "eval/eval.h"

#include <math.h>

#define MAX_ELEMS (64 * 1024)
#define MAX_MAGNITUDE 1e4

static GPPassContext *ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  gp_ops_init();
  fz_load_std();
  ctx = gp_ctx_new();
  gp_ctx_set_opt_level(ctx, 4);
  if (gp_ctx_set_config(ctx, "FoldConstant.max_bytes", "65536") != 0) abort();
  ctx->verify_numerics = true;
  return 0;
}

/* Every tensor type in the module (nodes' checked types, tuple fields) has at most MAX_ELEMS
 * elements and a static shape. */
static bool small_enough(const GPModule *m) {
  for (int32_t f = 0; f < m->num_functions; f++) {
    GPExpr **nodes = NULL;
    size_t n = 0;
    if (gp_post_order(&m->funcs[f]->base, &nodes, &n) != 0) {
      gp_error_clear();
      return false;
    }
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
      const GPType *t = nodes[i]->checked_type;
      if (!t) continue;
      if (t->kind == GP_TYPE_TENSOR) {
        int64_t k = gp_type_numel(t);
        ok = k >= 0 && k <= MAX_ELEMS;
      } else if (t->kind == GP_TYPE_TUPLE) {
        for (int32_t j = 0; j < t->n && ok; j++)
          if (t->tuple.fields[j]->kind == GP_TYPE_TENSOR) {
            int64_t k = gp_type_numel(t->tuple.fields[j]);
            ok = k >= 0 && k <= MAX_ELEMS;
          }
      }
    }
    gp_free(nodes);
    if (!ok) return false;
  }
  return true;
}

/* @main evaluates on the verifier's inputs to finite float outputs of modest magnitude. */
static bool tame_outputs(const GPModule *m) {
  GPTensor **in = NULL, **out = NULL;
  int32_t nin = 0, nout = 0;
  bool ok = gp_eval_random_inputs(m, "main", ctx->seed, &in, &nin) == 0 &&
            gp_eval_function(m, "main", nin, in, &out, &nout, NULL) == 0;
  if (!ok) gp_error_clear();
  for (int32_t i = 0; i < nout && ok; i++) {
    const DLTensor *t = &out[i]->dl;
    if (t->dtype.code != kDLFloat || (t->dtype.bits != 32 && t->dtype.bits != 64)) continue;
    int64_t k = 1;
    for (int32_t d = 0; d < t->ndim; d++) k *= t->shape[d];
    for (int64_t j = 0; j < k && ok; j++) {
      double v = t->dtype.bits == 32 ? (double)((const float *)t->data)[j] : ((const double *)t->data)[j];
      ok = isfinite(v) && fabs(v) <= MAX_MAGNITUDE;
    }
  }
  for (int32_t i = 0; i < nin; i++) gp_release(in[i]);
  for (int32_t i = 0; i < nout; i++) gp_release(out[i]);
  gp_free(in);
  gp_free(out);
  return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return -1;
  GPModule *m = gp_parse((const char *)data, size, "fuzz.relay");
  if (!m) {
    fz_expect_error("parse");
    return -1;
  }
  GPModule *typed = gp_infer_types(m);
  gp_release(m);
  if (!typed) {
    fz_expect_error("InferType");
    return -1;
  }
  if (!gp_module_lookup(typed, "main") || !small_enough(typed) || !tame_outputs(typed)) {
    gp_release(typed);
    return -1;
  }
  GPModule *out = gp_run_pipeline(typed, NULL, ctx);
  if (out) {
    gp_release(out);
  } else {
    const char *msg = gp_error_message();
    if (msg && (strstr(msg, "changed the numbers") || strstr(msg, "changed the number of") ||
                strstr(msg, "changed @main output") || strstr(msg, "evaluating @main after the pass"))) {
      char *text = gp_print(typed, GP_PRINT_METADATA);
      fprintf(stderr, "fuzz: a pass changed the numbers: %s\n%s\n", msg, text ? text : "");
      abort();
    }
    fz_expect_error("the default set");
  }
  gp_release(typed);
  return 0;
}
