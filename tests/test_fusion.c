/* test_fusion.c -- Paddle Lite's fusions (passes/fc_fuse.c, conv_bn_fuse.c,
 * conv_elementwise_fuse.c, conv_activation_fuse.c on passes/pattern_pass.c).  Golden
 * before/after files in tests/data/fusion/ (the inputs from make_before.py, untyped: the passes
 * type them) run through th_golden: the result equals the expectation structurally, the input
 * module is unchanged, and @main evaluates to the same numbers before and after (within
 * --verify-numerics' tolerance).  bn_exact's expectation is computed by hand.  Then the
 * "left alone" cases, registration, targets, explain notes, errors, idempotence, and the ONNX
 * light models (skipped with the reason when ../shared/onnx is absent). */
#include "test_helpers.h"

#include <unistd.h>

#define FDATA "tests/data/fusion/"

static void setup(void) { th_load_std(); }
static void teardown(void) { gp_plugins_unload_all(); }

TestSuite(fusion, .init = setup, .fini = teardown);

static void golden(const char *before, const char *after, const char *pipeline) {
  char b[256], a[256];
  snprintf(b, sizeof b, FDATA "%s.before.relay", before);
  snprintf(a, sizeof a, FDATA "%s.after.relay", after);
  th_golden(b, a, pipeline, NULL);
}

static GPModule *run_ctx(const GPModule *in, const char *pipeline, GPPassContext *ctx) {
  return gp_run_pipeline(in, pipeline, ctx);
}

static GPModule *run(const GPModule *in, const char *pipeline) {
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = run_ctx(in, pipeline, ctx);
  gp_ctx_free(ctx);
  return out;
}

/* Calls of op `name` reachable from @main (composite bodies included). */
static int count_op(const GPModule *m, const char *name) {
  GPExpr **nodes;
  size_t n;
  cr_assert_eq(gp_post_order(&gp_module_lookup(m, "main")->base, &nodes, &n), 0);
  int k = 0;
  for (size_t i = 0; i < n; i++)
    if (gp_kind(nodes[i]) == GP_TI_CALL && gp_kind(GP_AS(GPCall, nodes[i])->op) == GP_TI_OP &&
        strcmp(GP_AS(GPOp, GP_AS(GPCall, nodes[i])->op)->name, name) == 0)
      k++;
  gp_free(nodes);
  return k;
}

/* The explain notes of running `pipeline` on the file `before` (a string to free). */
static char *explain(const char *before, const char *pipeline) {
  GPModule *in = th_parse_file(before), *out;
  char *text = th_explain(in, pipeline, NULL, &out);
  cr_assert(out, "%s: %s", pipeline, gp_error_message());
  gp_release(out);
  gp_release(in);
  return text;
}

/* ------------------------------------------------------------------------------------------ */
/* Registration                                                                                */

Test(fusion, registered_with_levels_targets_and_config) {
  static const struct {
    const char *name;
    int32_t level;
  } want[] = {{"FcFuse", 0}, {"ConvBnFuse", 2}, {"ConvElementwiseFuse", 2}, {"ConvActivationFuse", 0}};
  for (size_t i = 0; i < GP_ARRAY_LEN(want); i++) {
    GPPassEntry *e = gp_pass_acquire(want[i].name);
    cr_assert(e, "%s is not registered", want[i].name);
    cr_expect_eq(e->info.opt_level, want[i].level, "%s: opt-level %d", want[i].name, e->info.opt_level);
    cr_expect_eq(e->info.kind, GP_PASS_TRANSFORM);
    cr_expect_eq(e->info.num_targets, 0, "%s binds every target, as Paddle's kAny", want[i].name);
    cr_expect_eq(e->info.num_excluded_targets, 1, "%s", want[i].name);
    cr_expect_str_eq(e->info.excluded_targets[0], "xpu", "%s: Paddle excludes kXPU", want[i].name);
    cr_expect_str_eq(e->origin, "std");
    gp_pass_entry_release(e);
  }
  GPPassContext *ctx = gp_ctx_new();
  GPAny v = {0};
  cr_assert_eq(gp_ctx_get_config(ctx, "FcFuse.with_relu", &v), 0, "%s", gp_error_message());
  cr_assert_eq(v.type_index, GP_TI_BOOL);
  cr_assert_eq(v.v_int64, 1, "with_relu defaults to true, as Paddle's act_types hold relu");
  gp_ctx_free(ctx);
}

/* The level-2 passes run at the default level 2 by name, and not at level 1. */
Test(fusion, opt_levels) {
  GPModule *in = th_parse_file(FDATA "bn_exact.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 1), 0);
  GPModule *out = run_ctx(in, "ConvBnFuse", ctx);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(count_op(out, "nn.batch_norm"), 1, "skipped at level 1");
  gp_release(out);
  gp_ctx_free(ctx);
  out = run(in, "ConvBnFuse");
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(count_op(out, "nn.batch_norm"), 0, "ran at the default level 2");
  gp_release(out);
  gp_release(in);
}

/* ------------------------------------------------------------------------------------------ */
/* FcFuse                                                                                      */

Test(fusion, fc_chain) { golden("fc_chain", "fc_chain", "FcFuse"); }
Test(fusion, fc_without_relu) {
  static const char *const cfg[] = {"FcFuse.with_relu", "false", NULL};
  th_golden(FDATA "fc_chain.before.relay", FDATA "fc_chain_no_relu.after.relay", "FcFuse", cfg);
}
/* nn.matmul without transposes; a transposed one is left alone (Paddle's teller); a
 * non-constant weight becomes a parameter of the composite. */
Test(fusion, fc_matmul_and_weight_param) { golden("fc_matmul", "fc_matmul", "FcFuse"); }
/* A (2, 4) bias, a non-constant bias, a product also used by sigmoid: left alone; a relu
 * whose add is also an output: fc without the relu. */
Test(fusion, fc_left_alone) {
  golden("fc_left_alone", "fc_left_alone", "FcFuse");
  char *ex = explain(FDATA "fc_left_alone.before.relay", "FcFuse");
  cr_assert(strstr(ex, "explain: FcFuse: note: left alone fc at " FDATA "fc_left_alone.before.relay:4:8: the bias "
                       "of shape (2, 4) is not (N) or (1, N) for the product of shape (2, 4)"), "%s", ex);
  cr_assert(strstr(ex, "explain: FcFuse: note: fused 1 (fc_relu 0, fc 1); left alone 1"), "%s", ex);
  gp_free(ex);
}

/* ------------------------------------------------------------------------------------------ */
/* ConvBnFuse                                                                                  */

Test(fusion, bn_exact_by_hand) { golden("bn_exact", "bn_exact", "ConvBnFuse"); }
/* NCHW: plain, after a bias_add, with strides, scale=False and center=False. */
Test(fusion, bn_nchw) { golden("bn_nchw", "bn_nchw", "ConvBnFuse"); }
/* Depthwise (groups = channels) and grouped (groups 2) convolutions. */
Test(fusion, bn_groups) { golden("bn_groups", "bn_groups", "ConvBnFuse"); }
/* NHWC / HWIO: batch_norm axis 3 and -1. */
Test(fusion, bn_nhwc) { golden("bn_nhwc", "bn_nhwc", "ConvBnFuse"); }
/* A non-constant weight, a non-constant gamma, a conv also feeding sigmoid, a batch_norm on
 * axis 2, a batch_norm whose second output is used: all left alone. */
Test(fusion, bn_left_alone) {
  golden("bn_left_alone", "bn_left_alone", "ConvBnFuse");
  char *ex = explain(FDATA "bn_left_alone.before.relay", "ConvBnFuse");
  cr_assert(strstr(ex, "left alone conv2d_batch_norm at " FDATA "bn_left_alone.before.relay:15:9: the batch_norm's "
                       "axis 2 is not the conv's channel axis 1 (layout NCHW)"), "%s", ex);
  cr_assert(strstr(ex, "fused 0 (conv2d_batch_norm 0); left alone 1"), "%s", ex);
  gp_free(ex);
}

/* ------------------------------------------------------------------------------------------ */
/* ConvElementwiseFuse                                                                         */

/* (C, 1, 1) and (1, C, 1, 1) adds; adds after a bias_add merged into it, one of a single value. */
Test(fusion, ew_nchw) { golden("ew_nchw", "ew_nchw", "ConvElementwiseFuse"); }
Test(fusion, ew_nhwc) { golden("ew_nhwc", "ew_nhwc", "ConvElementwiseFuse"); }
/* Constants varying along W, broadcasting the batch, a single value without a bias_add; a
 * non-constant add; a conv also feeding sigmoid: left alone. */
Test(fusion, ew_left_alone) {
  golden("ew_left_alone", "ew_left_alone", "ConvElementwiseFuse");
  char *ex = explain(FDATA "ew_left_alone.before.relay", "ConvElementwiseFuse");
  cr_assert(strstr(ex, "left alone conv_add at " FDATA "ew_left_alone.before.relay:4:8: the added constant of shape "
                       "(1, 1, 5) is not per channel for the conv's output (1, 4, 5, 5)"), "%s", ex);
  cr_assert(strstr(ex, "fused 0 (conv_bias_add 0, conv_add 0); left alone 3"), "%s", ex);
  gp_free(ex);
}

/* ------------------------------------------------------------------------------------------ */
/* ConvActivationFuse                                                                          */

/* relu with a bias, relu6 without, leaky_relu, non-constant weight and bias as parameters;
 * clip to 5 and a conv also feeding sigmoid left alone. */
Test(fusion, act) { golden("act", "act", "ConvActivationFuse"); }
Test(fusion, act_bias_on_another_axis) {
  golden("act_bias_axis", "act_bias_axis", "ConvActivationFuse");
  char *ex = explain(FDATA "act_bias_axis.before.relay", "ConvActivationFuse");
  cr_assert(strstr(ex, "left alone conv2d_relu at " FDATA "act_bias_axis.before.relay:5:3: the bias_add's axis 3 is "
                       "not the conv's channel axis (layout NCHW)"), "%s", ex);
  gp_free(ex);
}

/* ------------------------------------------------------------------------------------------ */
/* Together, idempotence, typed input, targets, errors                                         */

Test(fusion, pipeline_of_all_four) {
  golden("pipeline", "pipeline", "ConvBnFuse,ConvElementwiseFuse,ConvActivationFuse,FcFuse");
}

Test(fusion, second_run_changes_nothing) {
  static const struct {
    const char *file, *pass;
  } cases[] = {{"fc_chain", "FcFuse"},
               {"bn_nchw", "ConvBnFuse"},
               {"ew_nchw", "ConvElementwiseFuse"},
               {"act", "ConvActivationFuse"},
               {"pipeline", "ConvBnFuse,ConvElementwiseFuse,ConvActivationFuse,FcFuse"}};
  for (size_t i = 0; i < GP_ARRAY_LEN(cases); i++) {
    char path[256];
    snprintf(path, sizeof path, FDATA "%s.before.relay", cases[i].file);
    GPModule *in = th_parse_file(path);
    GPModule *once = run(in, cases[i].pass);
    cr_assert(once, "%s: %s", cases[i].pass, gp_error_message());
    GPModule *twice = run(once, cases[i].pass);
    cr_assert(twice, "%s: %s", cases[i].pass, gp_error_message());
    th_assert_module_eq(twice, once);
    gp_release(twice);
    gp_release(once);
    gp_release(in);
  }
}

/* The goldens' inputs are untyped; a typed input gives the same result. */
Test(fusion, typed_input_same_result) {
  GPModule *in = th_parse_file(FDATA "pipeline.before.relay");
  GPModule *typed = gp_infer_types(in);
  cr_assert(typed, "%s", gp_error_message());
  const char *p = "ConvBnFuse,ConvElementwiseFuse,ConvActivationFuse,FcFuse";
  GPModule *a = run(in, p), *b = run(typed, p);
  cr_assert(a && b, "%s", gp_error_message());
  th_assert_module_eq(a, b);
  gp_release(a);
  gp_release(b);
  gp_release(typed);
  gp_release(in);
}

Test(fusion, excluded_target_skips) {
  GPModule *in = th_parse_file(FDATA "pipeline.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_target(ctx, "xpu"), 0);
  GPModule *out = run_ctx(in, "ConvBnFuse,ConvElementwiseFuse,ConvActivationFuse,FcFuse", ctx);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(count_op(out, "nn.batch_norm"), 2, "nothing ran for xpu");
  gp_release(out);
  gp_ctx_free(ctx);
  gp_release(in);
}

Test(fusion, errors) {
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_neq(gp_ctx_set_config(ctx, "FcFuse.with_relu", "maybe"), 0);
  cr_assert(strstr(gp_error_message(), "config 'FcFuse.with_relu': expected bool (true/false/1/0), got 'maybe'"), "%s",
            gp_error_message());
  cr_assert_neq(gp_ctx_set_config(ctx, "FcFuse.relu", "true"), 0, "an unknown key");
  gp_ctx_free(ctx);
  /* an ill-typed input: the pass (re-typing it) names itself and the node */
  GPModule *in = th_parse_file(FDATA "ill_typed.relay");
  static const char *const passes[] = {"FcFuse", "ConvBnFuse", "ConvElementwiseFuse", "ConvActivationFuse"};
  for (size_t i = 0; i < GP_ARRAY_LEN(passes); i++) {
    cr_assert_null(run(in, passes[i]));
    char want[128];
    snprintf(want, sizeof want, "pass %s: " FDATA "ill_typed.relay:3:8: error:", passes[i]);
    cr_assert(strstr(gp_error_message(), want), "%s: %s", passes[i], gp_error_message());
    cr_assert(strstr(gp_error_message(), "nn.conv2d: input channels 3"), "%s", gp_error_message());
  }
  gp_release(in);
}

Test(fusion, cli_with_config_and_explain) {
  GPBuf b = {0};
  gp_buf_printf(&b, "%s/bin/graphpass opt " FDATA "fc_chain.before.relay --pipeline FcFuse --config FcFuse.with_relu=0 "
                    "--explain --stats -o /dev/null", th_build_dir());
  char *out;
  int rc = th_run(b.data, &out);
  gp_buf_free(&b);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "explain: FcFuse: note: fused 2 (fc 2); left alone 0"), "%s", out);
  cr_assert(strstr(out, "stat composite:fc 2\n"), "%s", out);
  free(out);
  gp_buf_printf(&b, "%s/bin/graphpass opt " FDATA "fc_chain.before.relay --pipeline FcFuse --config FcFuse.with_relu=2",
                th_build_dir());
  rc = th_run(b.data, &out);
  gp_buf_free(&b);
  cr_assert_neq(rc, 0, "%s", out);
  cr_assert(strstr(out, "FcFuse.with_relu"), "%s", out);
  free(out);
}

/* ------------------------------------------------------------------------------------------ */
/* The ONNX light models (../shared/onnx/light, or $GP_TEST_ONNX_DIR/light)                     */

/* Their weights are `full(...)` calls until FoldConstant makes them constants. */
Test(fusion, onnx_light_models, .timeout = 600) {
  static const struct {
    const char *name;
    const char *want[6];
  } models[] = {
      {"resnet50", {"fused 53 (conv2d_batch_norm 53)", "fused 0 (conv_bias_add 0, conv_add 0)",
                    "fused 33 (conv2d_relu 33, conv2d_relu6 0, conv2d_leaky_relu 0)", "fused 1 (fc_relu 0, fc 1)"}},
      {"squeezenet", {"fused 0 (conv2d_batch_norm 0)", "fused 0 (conv_bias_add 0, conv_add 0)",
                      "fused 26 (conv2d_relu 26, conv2d_relu6 0, conv2d_leaky_relu 0)", "fused 0 (fc_relu 0, fc 0)"}},
      {"inception_v1", {"fused 0 (conv2d_batch_norm 0)", "fused 0 (conv_bias_add 0, conv_add 0)",
                        "fused 57 (conv2d_relu 57, conv2d_relu6 0, conv2d_leaky_relu 0)", "fused 1 (fc_relu 0, fc 1)"}},
  };
  const char *env = getenv("GP_TEST_ONNX_DIR");
  GPBuf dir = {0};
  gp_buf_printf(&dir, "%s/light", env && *env ? env : "../shared/onnx");
  GPBuf probe = {0};
  gp_buf_printf(&probe, "%s/resnet50.onnx", dir.data);
  bool present = access(probe.data, R_OK) == 0;
  gp_buf_free(&probe);
  if (!present) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", dir.data);
    gp_buf_free(&dir);
    cr_skip_test("%s has no light models (ONNX's test data; set GP_TEST_ONNX_DIR): fusions not checked", msg);
  }
  for (size_t i = 0; i < GP_ARRAY_LEN(models); i++) {
    GPBuf c = {0};
    gp_buf_printf(&c, "%s/bin/graphpass opt %s/%s.onnx --pipeline FoldConstant,ConvBnFuse,ConvElementwiseFuse,"
                      "ConvActivationFuse,FcFuse --verify-numerics --explain --stats -o /dev/null",
                  th_build_dir(), dir.data, models[i].name);
    char *out;
    int rc = th_run(c.data, &out);
    gp_buf_free(&c);
    cr_assert_eq(rc, 0, "%s: %s", models[i].name, out);
    for (int k = 0; k < 4; k++) cr_assert(strstr(out, models[i].want[k]), "%s: no '%s' in\n%s", models[i].name,
                                          models[i].want[k], out);
    static const char *const passes[] = {"ConvBnFuse", "ConvElementwiseFuse", "ConvActivationFuse", "FcFuse"};
    for (int k = 0; k < 4; k++) {
      char ok[96];
      snprintf(ok, sizeof ok, "explain: %s: numerics ok", passes[k]);
      cr_assert(strstr(out, ok), "%s: no '%s' in\n%s", models[i].name, ok, out);
    }
    free(out);
  }
  gp_buf_free(&dir);
}
