/* test_opu_passes.c -- the OPU vendor plugin (build/plugins/libgp_opu.so, opu/): its passes
 * ToNCHWLayout, Peephole and CanonicalizeConcatPos on golden before/after files in
 * tests/data/opu (written by gen.py there; the expected files state new constants as the
 * constant expressions the rules compute, folded here by FoldConstant before the structural
 * comparison), each golden run with the numeric check (--verify-numerics after every pass);
 * refusals (before == after), errors naming the pass and the node; the target, its kernels and
 * its target.opu predicates (what stays on the host); the optimization set; and
 * `graphpass opt MODEL --target opu --verify-numerics` on the shared light models. */
#include "test_helpers.h"

#define DATA "tests/data/opu/"

static void load_opu(void) {
  char *p = th_path("plugins/libgp_opu.so");
  cr_assert_eq(gp_plugin_load(p), 0, "load %s: %s", p, gp_error_message());
  gp_free(p);
}

static void setup(void) {
  th_load_std();
  load_opu();
}

static void teardown(void) { gp_plugins_unload_all(); }

TestSuite(opu, .init = setup, .fini = teardown);

static GPPassContext *opu_ctx(void) {
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_target(ctx, "opu"), 0, "%s", gp_error_message());
  return ctx;
}

/* Run `pipeline` (target opu) on NAME.before.relay with the numeric check; compare with
 * NAME.after.relay whose constant expressions are folded first. */
static void golden(const char *name, const char *pipeline) {
  char b[256], a[256];
  snprintf(b, sizeof b, DATA "%s.before.relay", name);
  snprintf(a, sizeof a, DATA "%s.after.relay", name);
  GPModule *in = th_parse_file(b);
  char *in_text = th_text_before(in);
  GPPassContext *ctx = opu_ctx();
  ctx->verify_numerics = true;
  cr_assert(th_numerics_possible(in), "%s cannot be evaluated", b);
  GPModule *out = gp_run_pipeline(in, pipeline, ctx);
  cr_assert(out, "%s on %s (with --verify-numerics): %s", pipeline, b, gp_error_message());
  gp_ctx_free(ctx);
  GPModule *want_text = th_parse_file(a);
  GPPassContext *fctx = gp_ctx_new();
  GPModule *want = gp_run_pipeline(want_text, "InferType,FoldConstant", fctx);
  cr_assert(want, "folding %s: %s", a, gp_error_message());
  gp_ctx_free(fctx);
  gp_release(want_text);
  /* a pass that changed nothing returns its (untyped) input: compare typed modules */
  GPModule *typed = gp_infer_types(out);
  cr_assert(typed, "%s", gp_error_message());
  gp_release(out);
  out = typed;
  th_golden_finish(in, in_text, out, want);
}

/* An error of `pipeline` on `text` (target opu) whose message holds each of the needles. */
static void expect_error(const char *text, const char *pipeline, const char *const *needles) {
  GPModule *in = gp_parse(text, strlen(text), "bad.relay");
  cr_assert(in, "%s", gp_error_message());
  GPPassContext *ctx = opu_ctx();
  GPModule *out = gp_run_pipeline(in, pipeline, ctx);
  cr_assert_null(out, "%s succeeded on a bad module", pipeline);
  const char *msg = gp_error_message();
  for (const char *const *n = needles; *n; n++) cr_assert(strstr(msg, *n), "'%s' not in: %s", *n, msg);
  gp_ctx_free(ctx);
  gp_release(in);
}

/* ---- ToNCHWLayout */

Test(opu, to_nchw_conv_relu_pool_transforms_only_at_boundaries) { golden("nchw_conv_pool", "ToNCHWLayout"); }
Test(opu, to_nchw_leaves_nchw_graphs_alone) { golden("nchw_unchanged", "ToNCHWLayout"); }

/* Depthwise NHWC (HWOI weights) with a bias: numbers checked, the result is NCHW with OIHW
 * constant weights and a layout_transform only at the input and the output. */
Test(opu, to_nchw_depthwise) {
  GPModule *in = th_parse_file(DATA "nchw_depthwise.before.relay");
  GPPassContext *ctx = opu_ctx();
  ctx->verify_numerics = true;
  GPModule *out = gp_run_pipeline(in, "ToNCHWLayout", ctx);
  cr_assert(out, "%s", gp_error_message());
  char *text = gp_print(out, 0);
  cr_assert(strstr(text, "groups=4"), "%s", text);
  cr_assert_null(strstr(text, "NHWC\", kernel_layout"), "%s", text);
  cr_assert_null(strstr(text, "HWOI"), "%s", text);
  int transforms = 0;
  for (const char *p = text; (p = strstr(p, "layout_transform(")); p++) transforms++;
  cr_assert_eq(transforms, 2, "%s", text);
  const GPFunctionExpr *fn = gp_module_lookup(out, "main");
  const GPCall *root = (const GPCall *)fn->body;
  cr_assert(gp_kind(root) == GP_TI_CALL && strcmp(((const GPOp *)root->op)->name, "layout_transform") == 0);
  gp_free(text);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

Test(opu, to_nchw_error_names_the_pass_and_node) {
  static const char bad[] =
      "#[version = \"0.0.5\"]\n"
      "def @main(%x: Tensor[(1, 6, 6, 3), float32], %w: Tensor[(3, 3, 5, 4), float32]) {\n"
      "  nn.conv2d(%x, %w, channels=4, kernel_size=[3, 3], data_layout=\"NHWC\", kernel_layout=\"HWIO\")\n"
      "}\n";
  const char *needles[] = {"ToNCHWLayout", "bad.relay:3:", NULL};
  expect_error(bad, "ToNCHWLayout", needles);
}

/* ---- Peephole */

Test(opu, peephole_pt1_scale_into_conv_weights) { golden("pt1_conv_add_mul", "Peephole"); }
Test(opu, peephole_pt1_depthwise_scalar_scale) { golden("pt1_depthwise_scalar", "Peephole"); }
Test(opu, peephole_pt1_refuses_a_spatial_scale) { golden("pt1_refused_spatial", "Peephole"); }
Test(opu, peephole_pt1_refuses_a_shared_add) { golden("pt1_refused_shared", "Peephole"); }
Test(opu, peephole_pt2_constant_add_chain) { golden("pt2_add_chain", "Peephole"); }
Test(opu, peephole_pt3_concat_add_as_padded_adds) { golden("pt3_concat_add", "Peephole"); }
Test(opu, peephole_pt3_bias_first_negative_axis) { golden("pt3_bias_first", "Peephole"); }
Test(opu, peephole_pt3_refuses_other_axes) { golden("pt3_refused_axis2", "Peephole"); }
/* an activation moves before a constant pad, fill clamped too (twice through a chain); a pad
 * with another use and an edge pad stay */
Test(opu, peephole_pad_activation) { golden("pad_activation", "Peephole"); }
Test(opu, peephole_pt5_dense_as_1x1_conv) { golden("pt5_dense", "Peephole"); }
Test(opu, peephole_pt5_refuses_more_than_2048_inputs) { golden("pt5_refused_wide", "Peephole"); }

Test(opu, peephole_error_names_the_pass_and_node) {
  static const char bad[] =
      "#[version = \"0.0.5\"]\n"
      "def @main(%x: Tensor[(1, 4, 6, 6), float32], %y: Tensor[(1, 3, 6, 6), float32]) {\n"
      "  %0 = nn.relu(%x);\n"
      "  add(%0, %y)\n"
      "}\n";
  /* the required InferType runs first and names the node */
  const char *needles[] = {"InferType", "bad.relay:4:3", "add", NULL};
  expect_error(bad, "Peephole", needles);
}

/* A rewrite that cannot compute its constants (no values) names the pass, the transformer and
 * the node; the input is unchanged. */
static void expect_file_error(const char *path, const char *pipeline, const char *const *needles) {
  size_t len;
  char *text = th_read(path, &len);
  GPModule *in = gp_parse(text, len, path);
  cr_assert(in, "%s", gp_error_message());
  char *before = gp_print(in, GP_PRINT_TYPES);
  GPPassContext *ctx = opu_ctx();
  GPModule *out = gp_run_pipeline(in, pipeline, ctx);
  cr_assert_null(out);
  const char *msg = gp_error_message();
  for (const char *const *n = needles; *n; n++) cr_assert(strstr(msg, *n), "'%s' not in: %s", *n, msg);
  char *after = gp_print(in, GP_PRINT_TYPES);
  cr_assert_str_eq(before, after);
  gp_free(before);
  gp_free(after);
  gp_free(text);
  gp_ctx_free(ctx);
  gp_release(in);
}

Test(opu, peephole_rewrite_error_names_transformer_and_node) {
  const char *needles[] = {"Peephole: PatternTransformer1 at " DATA "pt1_no_values.relay:5:3", NULL};
  expect_file_error(DATA "pt1_no_values.relay", "Peephole", needles);
}

/* ---- CanonicalizeConcatPos */

Test(opu, concat_pos_relu_moves_onto_inputs) { golden("ccp_relu", "CanonicalizeConcatPos"); }
Test(opu, concat_pos_chain_of_two) { golden("ccp_clip_relu", "CanonicalizeConcatPos"); }
Test(opu, concat_pos_per_channel_scale_is_sliced) { golden("ccp_scale", "CanonicalizeConcatPos"); }
Test(opu, concat_pos_constant_first_and_broadcast_constant) { golden("ccp_shift_first", "CanonicalizeConcatPos"); }
Test(opu, concat_pos_refuses_shared_concat_and_non_channel_ops) { golden("ccp_refused", "CanonicalizeConcatPos"); }

Test(opu, concat_pos_error_names_the_pass_and_node) {
  static const char bad[] =
      "#[version = \"0.0.5\"]\n"
      "def @main(%a: Tensor[(1, 2, 4, 4), float32], %b: Tensor[(1, 3, 4, 5), float32]) {\n"
      "  %0 = (%a, %b);\n"
      "  %1 = concatenate(%0, axis=1);\n"
      "  nn.relu(%1)\n"
      "}\n";
  const char *needles[] = {"InferType", "bad.relay:4:8", "concatenate", NULL};
  expect_error(bad, "CanonicalizeConcatPos", needles);
}

Test(opu, concat_pos_rewrite_error_names_the_node) {
  const char *needles[] = {"CanonicalizeConcatPos: at " DATA "ccp_no_values.relay:5:3", NULL};
  expect_file_error(DATA "ccp_no_values.relay", "CanonicalizeConcatPos", needles);
}

/* The passes are bound to target opu: under llvm they are skipped. */
Test(opu, passes_run_only_for_target_opu) {
  GPModule *in = th_parse_file(DATA "ccp_relu.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(in, "CanonicalizeConcatPos,Peephole,ToNCHWLayout", ctx);
  cr_assert(out, "%s", gp_error_message());
  char *a = gp_print(in, 0), *b = gp_print(out, 0);
  cr_assert_str_eq(a, b);
  gp_free(a);
  gp_free(b);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* ---- the target: kernels, predicates, partitioning */

Test(opu, target_registered_with_kernels_and_default_set) {
  cr_assert_eq(gp_target_has_kernel("opu", "nn.conv2d"), 1);
  cr_assert_eq(gp_target_has_kernel("opu", "concatenate"), 1);
  cr_assert_eq(gp_target_has_kernel("opu", "nn.softmax"), 0);
  cr_assert_eq(gp_target_has_kernel("opu", "nn.dense"), 0);
  char *set = gp_opt_set_get("opu", NULL);
  cr_assert(set, "%s", gp_error_message());
  cr_assert(strstr(set, "Legalize,SimplifyInference,EliminateCommonSubexpr,CombineParallelConv2D,CombineParallelDense,"
                        "FoldConstant,FoldScaleAxis,CanonicalizeCast,CanonicalizeOps,ToNCHWLayout,Peephole,"
                        "CanonicalizeConcatPos,AnnotateTarget{targets=opu},MergeCompilerRegions,PartitionGraph,PrintIR"),
            "%s", set);
  gp_free(set);
}

/* Partition a module through AnnotateTarget / MergeCompilerRegions / PartitionGraph for opu and
 * return the printed result (no types). */
static char *partition(const char *path) {
  GPModule *in = th_parse_file(path);
  GPPassContext *ctx = opu_ctx();
  ctx->verify_numerics = th_numerics_possible(in);
  GPModule *out = gp_run_pipeline(in, "AnnotateTarget{targets=opu},MergeCompilerRegions,PartitionGraph", ctx);
  cr_assert(out, "%s", gp_error_message());
  char *s = gp_print(out, 0);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
  return s;
}

static int count(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p++) n++;
  return n;
}

/* The main function's text (from "def @main" to the next "def" or the end). */
static char *main_of(const char *s) {
  const char *m = strstr(s, "def @main");
  cr_assert(m);
  const char *end = strstr(m + 1, "\ndef ");
  size_t n = end ? (size_t)(end - m) : strlen(m);
  char *r = gp_malloc(n + 1);
  memcpy(r, m, n);
  r[n] = 0;
  return r;
}

Test(opu, supported_region_becomes_one_opu_function_rest_on_host) {
  char *s = partition(DATA "part_mixed.before.relay");
  cr_assert_eq(count(s, "Compiler=\"opu\""), 2, "%s", s);
  char *m = main_of(s);
  cr_assert_eq(count(m, "nn.softmax("), 1, "%s", s);
  cr_assert_eq(count(m, "nn.conv2d("), 0, "%s", s);
  gp_free(m);
  gp_free(s);
}

/* The target.opu predicates: a convolution whose weight is not a constant, one in NHWC, an
 * int32 add, a multiply of two activations and a concatenate on another axis stay on the
 * host, whatever the target's kernel list says. */
Test(opu, unsupported_shapes_layouts_dtypes_stay_on_the_host) {
  char *s = partition(DATA "part_host.before.relay");
  cr_assert_eq(count(s, "Compiler=\"opu\""), 0, "%s", s);
  gp_free(s);
}

/* ---- the whole set on the shared light models through the command */

static void light_model(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "../shared/onnx/light/%s.onnx", name);
  FILE *f = fopen(path, "rb");
  if (!f) cr_skip_test("%s is absent (the shared ONNX models are not on this machine)", path);
  fclose(f);
  /* --verify-numerics evaluates the model after every pass (vgg19: 20 GFLOP each, 34 s plain):
   * the plain build checks the numbers, the sanitizer build the same path without them */
  bool numerics = strstr(th_build_dir(), "san") == NULL;
  char *bin = th_path("bin/graphpass");
  char irname[128];
  snprintf(irname, sizeof irname, "tests/opu_%s.ir", name);
  char *ir = th_path(irname);
  remove(ir); /* PrintIR appends */
  GPBuf cmd = {0};
  gp_buf_printf(&cmd, "%s opt %s --target opu --opt-level 3 --config PrintIR.file=%s -o /dev/null --stats%s", bin, path,
                ir, numerics ? " --verify-numerics" : "");
  char *out = NULL;
  int rc = th_run(cmd.data, &out);
  cr_assert_eq(rc, 0, "%s: exit %d\n%s", cmd.data, rc, out);
  const char *ext = strstr(out, "stat external:opu ");
  cr_assert(ext && atoi(ext + strlen("stat external:opu ")) >= 1, "%s", out);
  /* the IR after the set (PrintIR): opu functions hold every convolution, @main none */
  char *text = th_read(ir, NULL);
  cr_assert(count(text, "Compiler=\"opu\"") >= 1, "%s", text);
  char *m = main_of(text);
  cr_assert_eq(count(m, "nn.conv2d("), 0, "%s", m);
  cr_assert(count(text, "nn.conv2d(") >= 1, "%s", text);
  gp_free(m);
  gp_free(text);
  remove(ir);
  gp_free(ir);
  gp_free(out);
  gp_buf_free(&cmd);
  gp_free(bin);
}

Test(opu, light_squeezenet) { light_model("squeezenet"); }
Test(opu, light_resnet50) { light_model("resnet50"); }
Test(opu, light_inception_v1) { light_model("inception_v1"); }
Test(opu, light_bvlc_alexnet) { light_model("bvlc_alexnet"); }
Test(opu, light_vgg19) { light_model("vgg19"); }

/* ---- loading: the opu plugin alone brings the std plugin (ABI 1.3 plugin_require); unloading
 * it removes its target, attributes, passes and set */

static void unload_all(void) { gp_plugins_unload_all(); }
TestSuite(opu_load, .fini = unload_all);

Test(opu_load, alone_requires_std_and_unloads_cleanly) {
  load_opu();
  GPPluginInfo *list = NULL;
  size_t n = gp_plugin_list(&list);
  bool std = false, opu = false;
  for (size_t i = 0; i < n; i++) {
    std = std || strcmp(list[i].name, "std") == 0;
    opu = opu || strcmp(list[i].name, "opu") == 0;
  }
  gp_free(list);
  cr_assert(std && opu, "%zu plugins loaded", n);
  const GPOp *conv = gp_op_find("nn.conv2d");
  GPAny v = {0};
  cr_assert_eq(gp_op_get_attr(conv, "target.opu", &v), 1);
  gp_any_clear(&v);
  const GPHostAPI *h = gp_host_api();
  cr_assert_eq(h->plugin_unload("opu"), 0, "%s", gp_error_message());
  cr_assert_eq(gp_target_has_kernel("opu", "nn.conv2d"), 0);
  cr_assert_eq(gp_op_get_attr(conv, "target.opu", &v), 0);
  cr_assert_null(gp_opt_set_get("opu", NULL));
  gp_error_clear();
  /* the std plugin stays; opu loads again */
  load_opu();
  cr_assert_eq(gp_target_has_kernel("opu", "nn.conv2d"), 1);
}

Test(opu_load, plugin_require_errors) {
  const GPHostAPI *h = gp_host_api();
  cr_assert_eq(h->plugin_require("no_such_plugin"), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_NOT_FOUND);
  cr_assert(strstr(gp_error_message(), "libgp_no_such_plugin.so"), "%s", gp_error_message());
  cr_assert_eq(h->plugin_require("../std"), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_VALUE);
  cr_assert_eq(h->plugin_require(NULL), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_VALUE);
  cr_assert_eq(h->plugin_require("std"), 0, "%s", gp_error_message());
  cr_assert_eq(h->plugin_require("std"), 0, "%s", gp_error_message()); /* loaded: a no-op */
}
