/* test_combine_parallel.c -- CombineParallelConv2D, CombineParallelDense and
 * CombineParallelBatchMatmul (TVM v0.12's tests/python/relay/test_pass_combine_parallel_*.py as
 * golden before/after files, run at opt-level 4 through th_golden_ctx: structural equality with
 * the typed expectation, input unchanged, @main's numbers unchanged), refusals, registration
 * and config errors. */
#include "test_helpers.h"

#define DATA "tests/data/combine_parallel/"

static void setup(void) { th_load_std(); }
static void teardown(void) { gp_plugins_unload_all(); }

TestSuite(combine, .init = setup, .fini = teardown);

/* golden test at opt-level 4 with "key", "value", ..., NULL configs */
static void golden(const char *name, const char *pipeline, const char *const *configs) {
  char before[256], after[256];
  snprintf(before, sizeof before, DATA "%s.before.relay", name);
  snprintf(after, sizeof after, DATA "%s.after.relay", name);
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 4), 0, "%s", gp_error_message());
  for (const char *const *c = configs; c && *c; c += 2)
    cr_assert_eq(gp_ctx_set_config(ctx, c[0], c[1]), 0, "%s", gp_error_message());
  th_golden_ctx(before, after, pipeline, ctx);
  cr_assert(ctx->verify_numerics, "%s: the numeric check did not run", name);
  gp_ctx_free(ctx);
}

#define CFG(...) ((const char *const[]){__VA_ARGS__, NULL})
#define CONV "CombineParallelConv2D"
#define DENSE "CombineParallelDense"
#define BMM "CombineParallelBatchMatmul"

Test(combine, registered_at_level4_requiring_infer_type) {
  static const char *const names[] = {CONV, DENSE, BMM};
  for (size_t i = 0; i < GP_ARRAY_LEN(names); i++) {
    GPPassEntry *e = gp_pass_acquire(names[i]);
    cr_assert(e, "%s is not registered", names[i]);
    cr_expect_eq(e->info.opt_level, 4, "%s", names[i]);
    cr_expect_eq(e->info.num_required, 1);
    cr_expect_str_eq(e->info.required[0], "InferType");
    cr_expect_str_eq(e->info.config_keys[0].name, "min_num_branches");
    cr_expect_eq(e->info.config_keys[0].default_value.v_int64, 3);
    cr_expect_eq(e->info.num_config_keys, i == 1 ? 2 : 1, "%s", names[i]);
    gp_pass_entry_release(e);
  }
}

/* ---- conv2d */

Test(combine, conv2d_combines_compatible_branches_and_keeps_the_3x3) {
  golden("conv2d", CONV, CFG(CONV ".min_num_branches", "2"));
}

Test(combine, conv2d_folds_scale_and_relu_not_the_lone_bias) {
  golden("conv2d_scale_relu", CONV, CFG(CONV ".min_num_branches", "2"));
}

Test(combine, conv2d_broadcast_scale_is_not_folded) {
  golden("conv2d_scale", CONV, CFG(CONV ".min_num_branches", "2"));
}

Test(combine, conv2d_multiple_blocks_chain) { golden("conv2d_blocks", CONV, CFG(CONV ".min_num_branches", "2")); }

Test(combine, conv2d_nhwc_hwio_with_bias_default_min) { golden("conv2d_nhwc", CONV, NULL); }

/* Different strides and kernel sizes are not combined; two branches are below the default 3. */
Test(combine, conv2d_refusals) { golden("conv2d_refused", CONV, NULL); }

Test(combine, conv2d_two_branches_combine_with_min_2) {
  GPPassContext *ctx = gp_ctx_new();
  gp_ctx_set_opt_level(ctx, 4);
  cr_assert_eq(gp_ctx_set_config(ctx, CONV ".min_num_branches", "2"), 0);
  GPModule *in = th_parse_file(DATA "conv2d_refused.before.relay");
  GPModule *out = gp_run_pipeline(in, CONV, ctx);
  cr_assert(out, "%s", gp_error_message());
  char *text = gp_print(out, 0);
  cr_expect(strstr(text, "channels=8"), "the relu'd pair was not combined:\n%s", text);
  cr_expect(!strstr(text, "channels=12"), "incompatible convs were combined:\n%s", text);
  gp_free(text);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* n 1x1 convs of one input: whether CombineParallelConv2D with min_num_branches `min` combines
 * them.  The pass counts a node's convs in a byte while min fits one (saturating at 255), in
 * four bytes above: both sides of both bounds. */
static bool combines_fan(int n, int min) {
  size_t cap = 256 + (size_t)n * 96, len = 0;
  char *text = malloc(cap);
  cr_assert(text);
  len += (size_t)snprintf(text + len, cap - len,
                          "#[version = \"0.0.5\"]\ndef @main(%%x: Tensor[(1, 2, 4, 4), float32], "
                          "%%w: Tensor[(2, 2, 1, 1), float32]) {\n");
  for (int i = 0; i < n; i++) len += (size_t)snprintf(text + len, cap - len, "  %%%d = nn.conv2d(%%x, %%w);\n", i);
  len += (size_t)snprintf(text + len, cap - len, "  (");
  for (int i = 0; i < n; i++) len += (size_t)snprintf(text + len, cap - len, "%s%%%d", i ? ", " : "", i);
  len += (size_t)snprintf(text + len, cap - len, ")\n}\n");
  cr_assert_lt(len, cap);
  GPModule *in = gp_parse(text, len, "fan.relay");
  cr_assert(in, "%s", gp_error_message());
  free(text);
  GPPassContext *ctx = gp_ctx_new();
  gp_ctx_set_opt_level(ctx, 4);
  char v[16];
  snprintf(v, sizeof v, "%d", min);
  cr_assert_eq(gp_ctx_set_config(ctx, CONV ".min_num_branches", v), 0);
  GPModule *out = gp_run_pipeline(in, CONV, ctx);
  cr_assert(out, "%s", gp_error_message());
  char *printed = gp_print(out, 0);
  bool combined = strstr(printed, "concatenate") != NULL;
  gp_free(printed);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
  return combined;
}

Test(combine, conv2d_min_branches_past_a_byte) {
  cr_expect(combines_fan(300, 3), "300 branches, min 3: not combined");
  cr_expect(combines_fan(255, 255), "255 branches, min 255: not combined");
  cr_expect(!combines_fan(254, 255), "254 branches, min 255: combined");
  cr_expect(combines_fan(300, 256), "300 branches, min 256: not combined");
  cr_expect(!combines_fan(255, 256), "255 branches, min 256: combined");
}

/* At the default opt-level 2 the level-4 passes do not run. */
Test(combine, skipped_below_level4) {
  GPModule *in = th_parse_file(DATA "conv2d_nhwc.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(in, CONV, ctx);
  cr_assert(out, "%s", gp_error_message());
  char *text = gp_print(out, 0);
  cr_expect(!strstr(text, "concatenate"), "%s", text);
  gp_free(text);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* ---- dense */

Test(combine, dense_to_batch_matmul) { golden("dense_batch", DENSE, CFG(DENSE ".min_num_branches", "2")); }

Test(combine, dense_to_batch_matmul_folds_bias_and_scale_not_reshape) {
  golden("dense_batch_bias_scale", DENSE, CFG(DENSE ".min_num_branches", "2"));
}

Test(combine, dense_flat_different_widths) {
  golden("dense_flat", DENSE, CFG(DENSE ".to_batch_matmul", "false"));
}

Test(combine, dense_flat_bias_and_scalar_scale_repeated) {
  golden("dense_flat_bias", DENSE, CFG(DENSE ".to_batch_matmul", "false", DENSE ".min_num_branches", "2"));
}

Test(combine, dense_flat_slice_axis_after_expand_dims) {
  golden("dense_flat_expand_dims", DENSE, CFG(DENSE ".to_batch_matmul", "false", DENSE ".min_num_branches", "2"));
}

/* ---- batch_matmul */

Test(combine, batch_matmul_with_bias) { golden("bmm", BMM, NULL); }

Test(combine, batch_matmul_scale_of_one_is_not_folded) { golden("bmm_scale_refused", BMM, NULL); }

/* ---- config errors */

static void expect_config_error(const char *pass, const char *key, const char *value, const char *want) {
  GPModule *in = th_parse_file(DATA "conv2d.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  gp_ctx_set_opt_level(ctx, 4);
  int rc = gp_ctx_set_config(ctx, key, value);
  GPModule *out = rc == 0 ? gp_run_pipeline(in, pass, ctx) : NULL;
  cr_assert_null(out, "%s=%s was accepted", key, value);
  cr_expect(strstr(gp_error_message(), want), "message: %s (want '%s')", gp_error_message(), want);
  cr_expect(strstr(gp_error_message(), key), "message does not name %s: %s", key, gp_error_message());
  gp_release(in);
  gp_ctx_free(ctx);
}

Test(combine, min_num_branches_must_be_positive) {
  expect_config_error(CONV, CONV ".min_num_branches", "0", "must be >= 1, got 0");
  expect_config_error(DENSE, DENSE ".min_num_branches", "-2", "must be >= 1, got -2");
  expect_config_error(BMM, BMM ".min_num_branches", "0", CONV[0] ? "must be >= 1" : "");
}

Test(combine, min_num_branches_must_be_an_int) {
  expect_config_error(CONV, CONV ".min_num_branches", "three", "");
  expect_config_error(DENSE, DENSE ".to_batch_matmul", "maybe", "");
}
