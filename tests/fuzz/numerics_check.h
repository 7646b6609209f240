/* numerics_check.h -- the miscompile check of the numerics harnesses (fuzz_numerics: Relay text;
 * fuzz_graphs: graphs built from the input bytes).  A typed module that is small and tame goes,
 * with --verify-numerics, through the llvm target's default set at opt-level 4, through
 * ConvertLayout to NHWC (conv2d, conv2d_transpose; conv3d to NDHWC) and to mixed layouts (convolutions NCHW,
 * pools and resizes NHWC), each then SimplifyExpr and FoldConstant, and through Paddle Lite's
 * fusions.  Every pass that ran must keep @main's outputs on deterministic inputs within rtol
 * 1e-3 and atol 1e-4, or 1e-5 of the largest value @main computes when that is more: ONNX's
 * rtol, since the command's 1e-4 / 1e-5 flags a layer_norm over two close values (its float32
 * decomposition amplifies rounding by 1 / sqrt(variance), as in TVM) and an output that cancels
 * terms of 2000 moves by their ulp when a rewrite reassociates them.  A pass that changes the
 * outputs, or leaves a module that no longer evaluates, or changes its input module (the
 * context's check_immutable, before and after each pass), is a finding; any other refusal must carry a message
 * (GP_FUZZ_STATS=2 prints each).
 *
 * A parameter with ? dims is evaluated in the shape the harness gave the context
 * (gp_ctx_add_numerics_shape), else with each ? as 1.
 * A module with float16 values is compared at rtol 1e-2 and atol 1e-2 of its peak (nc_tolerance).
 * What is not compared (skipped before the run): @main with a parameter that is not a tensor, a
 * module with a tensor of more than 64k elements anywhere or a constant holding a value that is
 * not finite or above 1e4 in magnitude (weights of 1e38 that cancel in one order of a sum
 * overflow in another) (evaluation time) or of bfloat16 (its rounding is above any useful
 * tolerance), and one where a value @main computes on
 * the inputs (every call's, when the body is plain dataflow; else the outputs) is not finite
 * or above 1e4 in magnitude (a rewrite that TVM also makes, x * 0 -> 0, a scale folded into a
 * weight or a reassociated sum, may then change the outputs legitimately: inf * 0, an overflow
 * clipped away, or rounding at a scale where 1e-5 is below one ulp), or where a layer_norm,
 * instance_norm or group_norm (in plain dataflow) normalizes a group of nearly equal values,
 * 1 / sqrt(variance + epsilon) above 100 (ill_conditioned: it amplifies its input's rounding
 * beyond any tolerance). */
#ifndef GP_FUZZ_NUMERICS_CHECK_H
#define GP_FUZZ_NUMERICS_CHECK_H

#include "fuzz_common.h"

#include "eval/eval.h"
#include "eval/kernel.h" /* gp_f16_to_f32 */

#include <math.h>

#define MAX_ELEMS (64 * 1024)
#define MAX_MAGNITUDE 1e4

static GPPassContext *ctx; /* nc_init */
static bool nc_half;       /* the module small_enough saw last has float16 values */
static long nc_typed, nc_checked, nc_runs_ok; /* GP_FUZZ_STATS=1 prints them at exit */

/* NCHW convolutions to NHWC (NCDHW to NDHWC), with the layout_transforms at the boundaries and between them
 * cancelled by SimplifyExpr. */
static const char k_layout_pipeline[] =
    "ConvertLayout{desired_layouts=\"nn.conv2d=NHWC:default,nn.conv2d_transpose=NHWC:default,"
    "nn.conv3d=NDHWC:default\"},"
    "SimplifyExpr,FoldConstant";

/* Mixed layouts (the accelerator's NHWC -> NCHW step for convolutions, NHWC pools and resizes):
 * every op between them follows one side through its layout relation, with transforms where
 * the sides meet. */
static const char k_mixed_layout_pipeline[] =
    "ConvertLayout{desired_layouts=\"nn.conv2d=NCHW:default,nn.max_pool2d=NHWC,nn.avg_pool2d=NHWC,"
    "nn.global_max_pool2d=NHWC,nn.global_avg_pool2d=NHWC,image.resize2d=NHWC\"},SimplifyExpr,FoldConstant";

/* Paddle Lite's fusions (not in the llvm set): batch norms and elementwise ops into convs,
 * activations and dense into composites the evaluator runs, then dead code. */
static const char k_fusion_pipeline[] =
    "ConvBnFuse,ConvElementwiseFuse,ConvActivationFuse,FcFuse,DeadCodeElimination,FoldConstant";


/* A tensor type of at most MAX_ELEMS elements and a dtype whose rounding a tolerance allows
 * for: not bfloat16 (epsilon 8e-3).  float16 sets nc_half: its epsilon, ~1e-3, is above the
 * float32 rtol, so such a module is compared at float16's (nc_tolerance). */
static bool checkable(const GPType *t) {
  int64_t k = 1;
  for (int32_t i = 0; i < t->n; i++) k *= t->tensor.shape[i] == GP_DIM_ANY ? 2 : t->tensor.shape[i]; /* a ? dim: the generator bounds its size */
  DLDataType d = t->tensor.dtype;
  if (d.code == kDLFloat && d.bits == 16) nc_half = true;
  return k >= 0 && k <= MAX_ELEMS && d.code != kDLBfloat && !(d.code == kDLFloat && d.bits < 16);
}

/* Every float value in tensors[0..n) is finite and at most MAX_MAGNITUDE; *peak gets the
 * largest magnitude. */
static bool tame_values(GPTensor *const *ts, int32_t n, double *peak) {
  for (int32_t i = 0; i < n; i++) {
    const DLTensor *t = &ts[i]->dl;
    if (t->dtype.code != kDLFloat || (t->dtype.bits != 16 && t->dtype.bits != 32 && t->dtype.bits != 64) || !t->data)
      continue; /* a constant without data */
    int64_t k = 1;
    for (int32_t d = 0; d < t->ndim; d++) k *= t->shape[d];
    for (int64_t j = 0; j < k; j++) {
      double v = gp_tensor_get_f64(ts[i], j);
      if (!isfinite(v) || fabs(v) > MAX_MAGNITUDE) return false;
      if (fabs(v) > *peak) *peak = fabs(v);
    }
  }
  return true;
}

/* Every tensor type in the module (nodes' checked types, tuple fields) is checkable (nc_half:
 * whether one is float16). */
static bool small_enough(const GPModule *m) {
  nc_half = false;
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
      if (gp_kind(nodes[i]) == GP_TI_CONSTANT) { /* a weight of 1e38 cancelled in one sum order overflows in another */
        double peak = 0;
        GPTensor *data = ((const GPConstant *)nodes[i])->data;
        if (!(ok = tame_values(&data, 1, &peak))) break;
      }
      if (!t) continue;
      if (t->kind == GP_TYPE_TENSOR) {
        ok = checkable(t);
      } else if (t->kind == GP_TYPE_TUPLE) {
        for (int32_t j = 0; j < t->n && ok; j++)
          if (t->tuple.fields[j]->kind == GP_TYPE_TENSOR) ok = checkable(t->tuple.fields[j]);
      }
    }
    gp_free(nodes);
    if (!ok) return false;
  }
  return true;
}


/* @main with every call it makes as an output too, when its body is a plain dataflow graph
 * (no let, if or closure, whose nodes are not all in scope at the top); else @main itself. */
/* A copy of m whose @main returns (vals[0], ..., vals[n-1]) instead of its body, inside the
 * chain of lets its body opens (so that every let-bound value is in scope); a new reference. */
static GPModule *nc_probe_of(const GPModule *m, GPExpr *const *vals, size_t n) {
  const GPFunctionExpr *fn = gp_module_lookup(m, "main");
  GPTuple *all = gp_tuple_new((int32_t)n, vals);
  GPExpr *body = &all->base;
  size_t nlet = 0;
  for (const GPExpr *e = fn->body; gp_kind(e) == GP_TI_LET; e = ((const GPLet *)e)->body) nlet++;
  const GPLet **lets = gp_malloc((nlet ? nlet : 1) * sizeof *lets);
  nlet = 0;
  for (const GPExpr *e = fn->body; gp_kind(e) == GP_TI_LET; e = ((const GPLet *)e)->body) lets[nlet++] = (const GPLet *)e;
  while (nlet--) {
    GPLet *l = gp_let_new(lets[nlet]->var, lets[nlet]->value, body);
    gp_release(body);
    body = &l->base;
  }
  gp_free(lets);
  GPFunctionExpr *pf = gp_function_new(fn->nparams, fn->params, body, NULL, NULL);
  gp_release(body);
  GPModule *probe = gp_module_copy(m);
  if (gp_module_add(probe, "main", pf, true) != 0) abort();
  gp_release(pf);
  return probe;
}

/* The probe of m: @main returning every call it makes too when its body is plain dataflow
 * (*calls gets those calls, gp_malloc'd, in the order of the outputs; *ncalls of them), else
 * @main itself (*calls NULL). */
static GPModule *probe_module(const GPModule *m, GPExpr ***calls, size_t *ncalls) {
  const GPFunctionExpr *fn = gp_module_lookup(m, "main");
  GPExpr **nodes = NULL;
  size_t n = 0;
  *calls = NULL;
  *ncalls = 0;
  if (gp_post_order(fn->body, &nodes, &n) != 0) {
    gp_error_clear();
    return gp_retain((GPModule *)m);
  }
  size_t k = 0;
  bool plain = true;
  for (size_t i = 0; i < n && plain; i++) {
    int32_t kind = gp_kind(nodes[i]);
    plain = kind != GP_TI_LET && kind != GP_TI_IF && kind != GP_TI_FUNCTION_EXPR;
    const GPType *t = nodes[i]->checked_type;
    if (kind == GP_TI_CALL && t && t->kind == GP_TYPE_TENSOR) nodes[k++] = nodes[i];
  }
  GPModule *probe = NULL;
  if (plain) {
    probe = nc_probe_of(m, nodes, k);
    *calls = nodes;
    *ncalls = k;
    return probe;
  }
  gp_free(nodes);
  return gp_retain((GPModule *)m);
}

/* The smallest variance over the groups a norm normalizes in t (float32 or float16, compact): the
 * elements that agree on every axis not in `reduced`, and on axis split_axis (when >= 0) in
 * their index divided by `split` (group_norm's channels in groups of `split`). */
static double min_group_variance(const DLTensor *t, const bool *reduced, int32_t split_axis, int64_t split) {
  int64_t ngroups = 1, n = 1;
  for (int32_t d = 0; d < t->ndim; d++) {
    n *= t->shape[d];
    if (d == split_axis) ngroups *= t->shape[d] / split;
    else if (!reduced[d]) ngroups *= t->shape[d];
  }
  bool f16 = t->dtype.bits == 16;
  if (n == 0 || n == ngroups || t->dtype.code != kDLFloat || (t->dtype.bits != 32 && !f16))
    return INFINITY; /* a group of one value: it is its own mean exactly, the output beta */
  double *sum = gp_calloc((size_t)ngroups, sizeof *sum), *sq = gp_calloc((size_t)ngroups, sizeof *sq);
  const char *data = (const char *)t->data + t->byte_offset;
  for (int64_t i = 0; i < n; i++) {
    int64_t rem = i, g = 0, gmul = 1;
    for (int32_t d = t->ndim - 1; d >= 0; d--) {
      int64_t c = rem % t->shape[d];
      rem /= t->shape[d];
      if (d == split_axis) g += c / split * gmul, gmul *= t->shape[d] / split;
      else if (!reduced[d]) g += c * gmul, gmul *= t->shape[d];
    }
    double x = f16 ? gp_f16_to_f32(((const uint16_t *)data)[i]) : ((const float *)data)[i];
    sum[g] += x;
    sq[g] += x * x;
  }
  double per = (double)(n / ngroups), lo = INFINITY;
  for (int64_t g = 0; g < ngroups; g++) lo = fmin(lo, fmax(0.0, sq[g] / per - (sum[g] / per) * (sum[g] / per)));
  gp_free(sum);
  gp_free(sq);
  return lo;
}

/* Whether a norm in calls (their values vals, in order) divides by the standard deviation of a
 * group of nearly equal values: 1 / sqrt(variance + epsilon) above 100 then amplifies the
 * rounding of its input (a few ulp, which any reordered sum, e.g. a conv in another layout,
 * changes) beyond the tolerance: maximum(1, x) over a row is all 1 but for one value.  Such a
 * module is not compared (ToNCHWLayout moved a norm's output by 2e-4 from inputs 2e-6 apart). */
static bool ill_conditioned(GPExpr *const *calls, size_t ncalls, GPTensor *const *vals, const GPFunctionExpr *fn,
                            GPTensor *const *in) {
  for (size_t i = 0; i < ncalls; i++) {
    const GPCall *c = (const GPCall *)calls[i];
    if (gp_kind(c->op) != GP_TI_OP || c->nargs < 1) continue;
    const char *op = ((const GPOp *)c->op)->name;
    bool ln = !strcmp(op, "nn.layer_norm"), inn = !strcmp(op, "nn.instance_norm"), gn = !strcmp(op, "nn.group_norm");
    if (!ln && !inn && !gn) continue;
    const GPTensor *x = NULL; /* the norm's input: an earlier call's value, or a parameter */
    for (size_t j = 0; j < i && !x; j++)
      if (calls[j] == c->args[0]) x = vals[j];
    for (int32_t p = 0; p < fn->nparams && !x; p++)
      if (&fn->params[p]->base == c->args[0]) x = in[p];
    if (!x) continue;
    int32_t r = x->dl.ndim;
    bool reduced[16] = {false};
    if (r < 1 || r > 16) continue;
    int64_t axis = gp_attrs_int(c->attrs, "axis", ln ? -1 : 1);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) continue;
    int32_t split_axis = -1;
    int64_t split = 1;
    if (ln) {
      reduced[axis] = true;
    } else { /* every axis but the batch and the channels; group_norm: channels in groups */
      for (int32_t d = 1; d < r; d++) reduced[d] = d != axis;
      int64_t groups = gn ? gp_attrs_int(c->attrs, "num_groups", 1) : 0;
      if (gn && (groups < 1 || x->dl.shape[axis] % groups)) continue;
      if (gn) split_axis = (int32_t)axis, split = x->dl.shape[axis] / groups;
    }
    double eps = gp_attrs_float(c->attrs, "epsilon", 1e-5);
    double amp = 1.0 / sqrt(min_group_variance(&x->dl, reduced, split_axis, split) + eps);
    /* float16's rounding (2^-11 of a value) amplified tenfold reaches its 1% tolerance */
    if (amp > (x->dl.dtype.bits == 16 ? 10 : 100)) {
      const char *stats = getenv("GP_FUZZ_STATS");
      if (stats && strcmp(stats, "2") == 0)
        fprintf(stderr, "numerics: skipped: %s over nearly equal values amplifies rounding %.0fx\n", op, amp);
      return true;
    }
  }
  return false;
}

/* Whether some function of m has a float16 norm: SimplifyInference unpacks it into float16
 * arithmetic, exact only when the norm is well conditioned, which ill_conditioned judges from
 * the values of a plain-dataflow body alone. */
static bool has_f16_norm(const GPModule *m) {
  bool found = false;
  for (int32_t f = 0; f < m->num_functions && !found; f++) {
    GPExpr **nodes;
    size_t n;
    if (gp_post_order(&m->funcs[f]->base, &nodes, &n) != 0) {
      gp_error_clear();
      return true; /* cannot tell: do not compare */
    }
    for (size_t i = 0; i < n && !found; i++) {
      const GPExpr *e = nodes[i];
      if (gp_kind(e) != GP_TI_CALL || gp_kind(((const GPCall *)e)->op) != GP_TI_OP) continue;
      const char *op = ((const GPOp *)((const GPCall *)e)->op)->name;
      const GPType *t = e->checked_type;
      found = (!strcmp(op, "nn.layer_norm") || !strcmp(op, "nn.instance_norm") || !strcmp(op, "nn.group_norm")) &&
              t && t->kind == GP_TYPE_TENSOR && t->tensor.dtype.code == kDLFloat && t->tensor.dtype.bits == 16;
    }
    gp_free(nodes);
  }
  return found;
}

/* @main evaluates on the verifier's inputs, and every float value it computes (when its body
 * is plain dataflow) or returns is finite and of modest magnitude; a float16 norm is judged by
 * ill_conditioned, so a module whose values it cannot see (a body with closures) and that has
 * one is not compared. */
static bool tame(const GPModule *m, double *peak) {
  GPExpr **calls = NULL;
  size_t ncalls = 0;
  GPModule *probe = probe_module(m, &calls, &ncalls);
  GPTensor **in = NULL, **out = NULL;
  int32_t nin = 0, nout = 0;
  bool ok = gp_eval_random_inputs_shaped(probe, "main", ctx->seed, ctx->numerics_shapes, ctx->num_numerics_shapes, 1,
                                         &in, &nin) == 0 &&
            gp_eval_function(probe, "main", nin, in, &out, &nout, NULL) == 0;
  if (!ok) gp_error_clear();
  *peak = 0;
  ok = ok && tame_values(out, nout, peak);
  if (ok && calls && (size_t)nout >= ncalls)
    ok = !ill_conditioned(calls, ncalls, out, gp_module_lookup(probe, "main"), in);
  else if (ok && has_f16_norm(m))
    ok = false;
  gp_free(calls);
  for (int32_t i = 0; i < nin; i++) gp_release(in[i]);
  for (int32_t i = 0; i < nout; i++) gp_release(out[i]);
  gp_free(in);
  gp_free(out);
  gp_release(probe);
  return ok;
}

/* Whether a pipeline's error is a miscompile, not a refusal: a pass changed the numbers or
 * left a module that does not evaluate (--verify-numerics), or changed its input module (the
 * context's check_immutable: its structural hash, constants' bytes included, before and after
 * each pass). */
static bool nc_miscompiled(const char *msg) {
  return msg && (strstr(msg, "changed the numbers") || strstr(msg, "changed the number of") ||
                 strstr(msg, "changed @main output") || strstr(msg, "evaluating @main after the pass") ||
                 strstr(msg, "changed its input module"));
}

/* Run pipeline (NULL: the default set) with --verify-numerics; a miscompile (nc_miscompiled)
 * is a finding; any other failure must say why. */
static void run_checked(const GPModule *typed, const char *pipeline) {
  GPModule *out = gp_run_pipeline(typed, pipeline, ctx);
  if (out) {
    nc_runs_ok++;
    gp_release(out);
    return;
  }
  const char *msg = gp_error_message();
  if (nc_miscompiled(msg)) {
    char *text = gp_print(typed, GP_PRINT_METADATA);
    fprintf(stderr, "fuzz: %s: a miscompile: %s\n%s\n", pipeline ? pipeline : "the default set", msg,
            text ? text : "");
    abort();
  }
  const char *stats = getenv("GP_FUZZ_STATS");
  if (stats && strcmp(stats, "2") == 0) fprintf(stderr, "numerics: refused: %s\n", msg ? msg : "");
  fz_expect_error(pipeline ? pipeline : "the default set");
}

static void nc_stats(void) {
  if (!nc_typed) return; /* a harness with a check of its own (fuzz_opu) */
  fprintf(stderr, "numerics: %ld typed modules, %ld checked, %ld of %ld runs passed\n", nc_typed, nc_checked,
          nc_runs_ok, 4 * nc_checked);
}

/* The context both pipelines run with (the harnesses' LLVMFuzzerInitialize, below). */
static void nc_init(void) {
  if (getenv("GP_FUZZ_STATS")) atexit(nc_stats);
  gp_ops_init();
  fz_load_std();
  ctx = gp_ctx_new();
  gp_ctx_set_opt_level(ctx, 4);
  if (gp_ctx_set_config(ctx, "FoldConstant.max_bytes", "65536") != 0) abort();
  ctx->verify_numerics = true;
  ctx->check_immutable = true; /* a pass that changes its input module fails, naming itself */
  ctx->rtol = 1e-3;
  ctx->atol = 1e-4;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  nc_init();
  return 0;
}

/* The tolerance of a comparison on a module whose largest computed magnitude is peak.
 * Rounding is absolute at the scale of the values summed: an output that cancels terms of
 * 2000 is off by a few ulp of 2000 (~1e-3 in float32) whatever the order.  In float16 every
 * op rounds to 2^-11 relative, and a weight with a scale folded in rounds once more, so a sum
 * of tens of terms moves by some 1e-2 of its terms' scale: such a module is compared at rtol
 * 1e-2 and atol 1e-2 of its peak (a wrong layout, axis or dropped op still moves it by O(1)). */
static void nc_tolerance(GPPassContext *c, double peak) {
  c->rtol = nc_half ? 1e-2 : 1e-3;
  c->atol = nc_half ? fmax(1e-3, 1e-2 * peak) : fmax(1e-4, 1e-5 * peak);
}

/* The check of one typed module (borrowed): skipped unless small and tame. */
static inline void nc_check(const GPModule *typed) {
  nc_typed++;
  double peak = 0;
  if (!gp_module_lookup(typed, "main") || !small_enough(typed) || !tame(typed, &peak)) return;
  nc_tolerance(ctx, peak);
  nc_checked++;
  run_checked(typed, NULL);
  run_checked(typed, k_layout_pipeline);
  run_checked(typed, k_mixed_layout_pipeline);
  run_checked(typed, k_fusion_pipeline);
}

#endif
