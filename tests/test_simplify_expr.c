/* test_simplify_expr.c -- SimplifyExpr and SimplifyExprPostAlterOp (passes/simplify_expr.c):
 * golden before/after files in tests/data/simplify_expr/ (TVM v0.12's
 * test_pass_simplify_expr.py cases, one pair per rewrite at least, refusals included) through
 * th_golden (structural equality with the typed expectation, the input unchanged, @main's
 * numbers the same before and after; with a ? dimension, on inputs of a shape the test gives);
 * the notes of the refusals; the fixed point (a chain that needs several rounds, and the round
 * bound); bad config values. */
#include "test_helpers.h"

#define SDATA "tests/data/simplify_expr/"

static void setup(void) { th_load_std(); }
static void teardown(void) { gp_plugins_unload_all(); }

TestSuite(simplify_expr, .init = setup, .fini = teardown);

static void golden_cfg(const char *name, const char *pipeline, const char *const *cfg) {
  char b[256], a[256];
  snprintf(b, sizeof b, SDATA "%s.before.relay", name);
  snprintf(a, sizeof a, SDATA "%s.after.relay", name);
  th_golden(b, a, pipeline, cfg);
}
static void golden(const char *name) { golden_cfg(name, "SimplifyExpr", NULL); }

/* golden() on an @main whose parameter `param` has ? dims: the numbers are compared on inputs
 * where it has the shape dims[0 .. ndim) (th_golden alone would skip the numeric check). */
static void golden_shaped(const char *name, const char *param, int32_t ndim, const int64_t *dims) {
  char b[256], a[256];
  snprintf(b, sizeof b, SDATA "%s.before.relay", name);
  snprintf(a, sizeof a, SDATA "%s.after.relay", name);
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_add_numerics_shape(ctx, param, ndim, dims), 0, "%s", gp_error_message());
  th_golden_ctx(b, a, "SimplifyExpr", ctx);
  gp_ctx_free(ctx);
}

/* The --explain of SimplifyExpr on SDATA file.before.relay has `note`. */
static void expect_note(const char *file, const char *note) {
  char path[256];
  snprintf(path, sizeof path, SDATA "%s.before.relay", file);
  GPModule *in = th_parse_file(path), *out;
  char *buf = th_explain(in, "SimplifyExpr", NULL, &out);
  cr_assert(out, "%s", gp_error_message());
  cr_expect(strstr(buf, note), "%s: no \"%s\" in\n%s", file, note, buf);
  gp_free(buf);
  gp_release(out);
  gp_release(in);
}

Test(simplify_expr, concretize_like_ops) {
  golden("concretize_zeros_like");
  golden("concretize_ones_like");
  golden("concretize_full_like");
  golden("concretize_reshape_like");
  golden("concretize_collapse_sum_like");
  golden("concretize_broadcast_to_like");
  golden("concretize_cast_like");
  /* x of shape (?, 4): the five *_like calls whose result is (?, 4) stay (TVM concretizes a
   * static result shape only); collapse_sum_like's result (4) is static and cast_like needs no
   * shape: both rewritten.  Numbers compared with x as (3, 4). */
  static const int64_t x34[2] = {3, 4};
  golden_shaped("concretize_like_dynamic", "x", 2, x34);
}

Test(simplify_expr, add_rsqrt_identity) {
  golden("simplify_add");
  golden("simplify_rsqrt");      /* 1 / sqrt(x): rsqrt, then 1 * rsqrt(x) is an identity */
  golden("eliminate_identity");  /* a broadcasting zeros and a non-zero constant are kept */
  golden("identity_tensors");    /* tensors of zeros / ones (not scalars) and a bias: all kept */
  /* TVM's IsScalar and TryToScalar: a float16 1, and zeros of shape (1, 1) in float16 and
   * float32, are identities; ones of shape (1, 1, 1) broadcast x to (1, 2, 3): kept */
  golden("identity_unit_shapes");
}

Test(simplify_expr, reshape_transpose) {
  golden("simplify_reshape");
  golden("reshape_zero_dim");         /* a 0 in newshape copies the input's dimension: kept */
  golden("transpose_cancel");
  golden("transpose_merge");          /* default (reverse) and negative axes, five transposes */
  golden("transpose_pair_kept");      /* not the identity: one transpose */
  golden("layout_pairs");             /* a plain pair -> transpose; inverse pairs -> x */
  golden("layout_rank_change_kept");  /* TVM's rank-changing fold is not done */
  golden("layout_pair_padded_kept");  /* 12 channels in 8c blocks pad to 16: not an identity */
}

/* An inverse pair of blocked layout_transforms over an axis the block does not divide grows x
 * (12 channels through NCHW8c come back as 16): kept, with a note saying why. */
Test(simplify_expr, padded_layout_pair_is_kept_with_a_note) {
  GPModule *in = th_parse_file(SDATA "layout_pair_padded_kept.before.relay"), *out;
  char *buf = th_explain(in, "SimplifyExpr", NULL, &out);
  cr_assert(out, "%s", gp_error_message());
  cr_expect(strstr(buf, "left alone SimplifyTranspose at " SDATA "layout_pair_padded_kept.before.relay:4:"), "%s", buf);
  cr_expect(strstr(buf, "a blocked axis is padded"), "%s", buf);
  gp_free(buf);
  gp_release(out);
  gp_release(in);
}

Test(simplify_expr, casts_and_clips) {
  golden("same_cast");
  golden("consecutive_cast");
  golden("consecutive_cast_narrow"); /* float32 -> int32 -> float32 and int64 -> bool -> int32 kept */
  golden("clip_cast_cast");
  golden("cast_clip");               /* clip(0, 127) of an int8 is not int8's range: kept */
  /* Where TVM's rewrite changes the numbers, kept: int8 -> uint8 and int32 -> float32 change
   * values (uint8 -> int16 and int16 -> float32 do not: folded); a float clip's fractions are
   * truncated by the cast to uint8; a cast to float16 gives infinities the clip bounds. */
  golden("consecutive_cast_changes_values");
  golden("clip_cast_cast_float");
  golden("cast_clip_float");
}

Test(simplify_expr, full_and_constants) {
  golden("full_elementwise");  /* a full that x broadcasts to is kept */
  golden("switch_add_multiply");
  golden("adjacent_mul_add");
  /* a full of float64 2 and a full_like of int32 3 (concretized to full) beside float32 x: kept,
   * TVM's scalar would give an add / multiply of two dtypes */
  golden("full_elementwise_dtype_kept");
  /* x + x and op(x, ones / zeros) of uint16, uint32, uint64 and bfloat16: the scalar is made */
  golden("scalar_dtypes");
  /* of int4 no scalar constant is made (TVM stops: unknown data type): x + x, x - ones kept */
  golden("no_scalar_dtype_kept");
  /* a meta[relay.Constant] without a #[metadata] entry has no values to fold: kept (no numbers) */
  golden("constant_without_data_kept");
}

Test(simplify_expr, fixed_point_and_bound) {
  golden("fixed_point"); /* (x * 2 + 3) * 4: SwitchAddMultiply, then the multiplies merge */
  /* one round: only the switch */
  GPModule *in = th_parse_file(SDATA "fixed_point.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_config(ctx, "SimplifyExpr.max_rounds", "1"), 0, "%s", gp_error_message());
  GPModule *out = gp_run_pipeline(in, "SimplifyExpr", ctx);
  cr_assert(out, "%s", gp_error_message());
  char *text = gp_print(out, 0);
  cr_assert(strstr(text, "multiply(%1, 4f)") || strstr(text, "4f"), "%s", text);
  cr_assert(!strstr(text, "8f"), "one round must not reach the fixed point: %s", text);
  gp_free(text);
  gp_release(out);
  gp_ctx_free(ctx);
  /* the result is a fixed point: a second run changes nothing */
  ctx = gp_ctx_new();
  out = gp_run_pipeline(in, "SimplifyExpr,SimplifyExpr", ctx);
  GPModule *once = gp_run_pipeline(in, "SimplifyExpr", ctx);
  cr_assert(out && once, "%s", gp_error_message());
  th_assert_module_eq(out, once);
  gp_release(out);
  gp_release(once);
  gp_ctx_free(ctx);
  gp_release(in);
}

Test(simplify_expr, post_alter_op) {
  /* its list: identities, reshape and cast pairs, clip/cast; not the *_like or transpose ones */
  golden_cfg("eliminate_identity", "SimplifyExprPostAlterOp", NULL);
  golden_cfg("consecutive_cast", "SimplifyExprPostAlterOp", NULL);
  golden_cfg("clip_cast_cast", "SimplifyExprPostAlterOp", NULL);
  golden_cfg("simplify_reshape", "SimplifyExprPostAlterOp", NULL);
  golden_cfg("same_cast", "SimplifyExprPostAlterOp", NULL);       /* cast and cast_like to the same dtype */
  golden_cfg("cast_clip", "SimplifyExprPostAlterOp", NULL);       /* clip to uint8's range after the cast */
  golden_cfg("cast_clip_float", "SimplifyExprPostAlterOp", NULL); /* kept: float16's infinities */
  GPModule *in = th_parse_file(SDATA "transpose_cancel.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(in, "SimplifyExprPostAlterOp", ctx);
  cr_assert(out, "%s", gp_error_message());
  GPModule *typed = gp_infer_types(in);
  th_assert_module_eq(out, typed);
  gp_release(typed);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* A tensor of zeros or ones is not TVM's identity (a scalar): kept (the golden in
 * add_rsqrt_identity), and --explain says so for those two; a constant that is no identity at
 * all (a bias) is kept without a note. */
Test(simplify_expr, identity_tensors_are_kept_with_a_note) {
  GPModule *in = th_parse_file(SDATA "identity_tensors.before.relay"), *out;
  GPPassContext *ctx = gp_ctx_new();
  char *buf = th_explain(in, "SimplifyExpr", ctx, &out);
  cr_assert(out, "%s", gp_error_message());
  cr_expect(strstr(buf, "left alone EliminateIdentity at " SDATA "identity_tensors.before.relay:3:"), "%s", buf);
  cr_expect(strstr(buf, "the zero is a constant of shape (4), not a scalar"), "%s", buf);
  cr_expect(strstr(buf, "the one is a constant of shape (4), not a scalar"), "%s", buf);
  int notes = 0;
  for (const char *p = buf; (p = strstr(p, "left alone EliminateIdentity")) != NULL; p++) notes++;
  cr_expect_eq(notes, 2, "%s", buf);
  gp_free(buf);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

Test(simplify_expr, bad_config) {
  GPModule *in = th_parse_file(SDATA "fixed_point.before.relay");
  const char *vals[] = {"0", "-3", "1001"};
  for (size_t i = 0; i < 3; i++) {
    GPPassContext *ctx = gp_ctx_new();
    cr_assert_eq(gp_ctx_set_config(ctx, "SimplifyExpr.max_rounds", vals[i]), 0, "%s", gp_error_message());
    GPModule *out = gp_run_pipeline(in, "SimplifyExpr", ctx);
    cr_assert_null(out, "max_rounds=%s accepted", vals[i]);
    cr_assert(strstr(gp_error_message(), "SimplifyExpr") && strstr(gp_error_message(), "max_rounds"), "%s",
              gp_error_message());
    gp_error_clear();
    gp_ctx_free(ctx);
  }
  gp_release(in);
}

Test(simplify_expr, explain_notes) {
  GPModule *in = th_parse_file(SDATA "consecutive_cast_narrow.before.relay"), *out;
  char *buf = th_explain(in, "SimplifyExpr", NULL, &out);
  cr_assert(out, "%s", gp_error_message());
  cr_assert(strstr(buf, "SimplifyDQArg"), "%s", buf);
  cr_assert(strstr(buf, "left alone SimplifyConsecutiveCast at " SDATA "consecutive_cast_narrow.before.relay:"), "%s",
            buf);
  cr_assert(strstr(buf, "the first cast float32 -> int32 changes some values"), "%s", buf);
  gp_free(buf);
  gp_release(out);
  gp_release(in);
}

/* The casts and clips kept where TVM's rewrite changes the numbers say why. */
Test(simplify_expr, casts_kept_say_why) {
  static const struct {
    const char *file, *note;
  } cases[] = {
      {"consecutive_cast_changes_values", "left alone SimplifyConsecutiveCast at " SDATA
                                          "consecutive_cast_changes_values.before.relay:4:8: the first cast int8 -> uint8 changes some values"},
      {"consecutive_cast_changes_values", "the first cast int32 -> float32 changes some values"},
      {"clip_cast_cast_float", "left alone SimplifyClipAndConsecutiveCast at " SDATA
                               "clip_cast_cast_float.before.relay:6:3: the clip's values are float32: the first cast truncates them"},
      {"cast_clip_float", "left alone SimplifyCastClip at " SDATA
                          "cast_clip_float.before.relay:5:3: a cast to float16 may give an infinity, which the clip bounds"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) expect_note(cases[i].file, cases[i].note);
}

/* The other refusals say why: a result of shape (?, 4) (each *_like op), a fill of another
 * dtype, a dtype with no scalar constant, a constant without values. */
/* A match left alone is met again in every later round: noted and counted once. */
Test(simplify_expr, a_refusal_is_noted_once_over_the_rounds) {
  GPModule *in = th_parse_file(SDATA "full_elementwise_dtype_kept.before.relay"), *out;
  char *buf = th_explain(in, "SimplifyExpr", NULL, &out);
  cr_assert(out, "%s", gp_error_message());
  const char *at4 = "left alone FullElementwise at " SDATA "full_elementwise_dtype_kept.before.relay:4:8";
  const char *first = strstr(buf, at4);
  cr_assert(first, "%s", buf);
  cr_assert_null(strstr(first + 1, at4), "noted twice:\n%s", buf);
  cr_assert(strstr(buf, "rewrote 1 in 2 rounds (ConcretizeFullLike 1); left alone 2"), "%s", buf);
  gp_free(buf);
  gp_release(out);
  gp_release(in);
}

Test(simplify_expr, refusals_say_why) {
  static const char *const likes[] = {"ZerosLike at " SDATA "concretize_like_dynamic.before.relay:3:8",
                                      "OnesLike at " SDATA "concretize_like_dynamic.before.relay:4:8",
                                      "FullLike at " SDATA "concretize_like_dynamic.before.relay:5:8",
                                      "ReshapeLike at " SDATA "concretize_like_dynamic.before.relay:6:8",
                                      "BroadcastToLike at " SDATA "concretize_like_dynamic.before.relay:7:8"};
  for (size_t i = 0; i < GP_ARRAY_LEN(likes); i++) {
    char note[256];
    snprintf(note, sizeof note, "left alone Concretize%s: the result's shape (?, 4) is not static", likes[i]);
    expect_note("concretize_like_dynamic", note);
  }
  static const struct {
    const char *file, *note;
  } cases[] = {
      {"full_elementwise_dtype_kept", "left alone FullElementwise at " SDATA "full_elementwise_dtype_kept.before.relay:4:8: "
                                      "the fill value is not a scalar of the result's dtype float32"},
      {"full_elementwise_dtype_kept", "left alone FullElementwise at " SDATA "full_elementwise_dtype_kept.before.relay:6:8: "
                                      "the fill value is not a scalar of the result's dtype float32"},
      {"no_scalar_dtype_kept", "left alone SimplifyAdd at " SDATA "no_scalar_dtype_kept.before.relay:4:8: "
                               "no scalar constant of dtype int4"},
      {"no_scalar_dtype_kept", "left alone FullElementwise at " SDATA "no_scalar_dtype_kept.before.relay:6:8: "
                               "no scalar constant of dtype int4"},
      {"constant_without_data_kept", "left alone SwitchAddMultiply at " SDATA "constant_without_data_kept.before.relay:4:8: "
                                     "a constant has no data to fold"},
      {"constant_without_data_kept", "left alone SimplifyAdjacentMultiplyOrAdd at " SDATA
                                     "constant_without_data_kept.before.relay:6:8: a constant has no data to fold"},
  };
  for (size_t i = 0; i < GP_ARRAY_LEN(cases); i++) expect_note(cases[i].file, cases[i].note);
}

/* A round the driver settles (ir/pattern_rewrite.c: the result is a fixed point when nothing
 * matches near a replacement) ends the loop as a full confirming round would: the same
 * result on every golden input of these passes, with settling on and off. */
static void settled_equals_full(const char *path, GPModule *m, void *user) {
  int *runs = user;
  static const char *const pipes[] = {"SimplifyExpr", "SimplifyExprPostAlterOp", "FoldScaleAxis,SimplifyExpr"};
  for (size_t p = 0; p < GP_ARRAY_LEN(pipes); p++) {
    GPPassContext *ctx = gp_ctx_new();
    gp_pattern_fixed_enable(true);
    GPModule *a = gp_run_pipeline(m, pipes[p], ctx);
    if (!a) gp_error_clear();
    gp_pattern_fixed_enable(false);
    GPModule *b = gp_run_pipeline(m, pipes[p], ctx);
    if (!b) gp_error_clear();
    gp_pattern_fixed_enable(true);
    cr_assert_eq(!a, !b, "%s %s: one run failed", path, pipes[p]);
    if (a) th_assert_module_eq(a, b);
    *runs += a != NULL;
    gp_release(a);
    gp_release(b);
    gp_ctx_free(ctx);
  }
}

Test(simplify_expr, settled_rounds_equal_full_rounds) {
  static const char *const dirs[] = {"tests/data/simplify_expr", "tests/data/fold_scale_axis", "tests/data/passes",
                                     "tests/data/fusion", "tests/data/combine_parallel"};
  int runs = 0;
  th_each_relay(dirs, GP_ARRAY_LEN(dirs), ".before.relay", settled_equals_full, &runs);
  cr_assert_gt(runs, 60, "%d runs", runs);
}

/* Settled: a repeat of the same spec on the result returns it as it is (the memo), and a
 * different pass on it still runs in full. */
Test(simplify_expr, settled_result_is_returned_as_is) {
  GPModule *in = th_parse_file(SDATA "fixed_point.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  GPModule *once = gp_run_pipeline(in, "SimplifyExpr", ctx);
  cr_assert(once, "%s", gp_error_message());
  GPModule *twice = gp_run_pipeline(once, "SimplifyExpr", ctx);
  cr_assert(twice, "%s", gp_error_message());
  cr_assert_eq(twice->funcs[0], once->funcs[0]);
  gp_release(twice);
  gp_release(once);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* Opt-level 0 and InferType required, as TVM v0.12 registers both. */
Test(simplify_expr, registered_at_level0_requiring_infer_type) {
  static const char *const names[] = {"SimplifyExpr", "SimplifyExprPostAlterOp"};
  for (size_t i = 0; i < GP_ARRAY_LEN(names); i++) {
    GPPassEntry *e = gp_pass_acquire(names[i]);
    cr_assert(e, "%s is not registered", names[i]);
    cr_expect_eq(e->info.opt_level, 0, "%s", names[i]);
    cr_assert_eq(e->info.num_required, 1, "%s", names[i]);
    cr_expect_str_eq(e->info.required[0], "InferType", "%s", names[i]);
    gp_pass_entry_release(e);
  }
}
