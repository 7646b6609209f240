/* test_fold_scale_axis.c -- BackwardFoldScaleAxis, ForwardFoldScaleAxis, FoldScaleAxis (TVM
 * v0.12's fold_scale_axis.cc and test_pass_fold_scale_axis.py): golden before/after files in
 * tests/data/fold_scale_axis (inputs written by gen.py there), each through th_golden (the typed
 * expectation, the input left unchanged, @main's numbers before and after); the refusals; the
 * explain notes; an error naming the pass and the node; a deep chain (no recursion); large
 * weights folded bit for bit (the fold split over the cores); what folds in DenseNet-121 and a
 * tiny DenseNet and MobileNetV2 (bench/gen_model, through the command). */
#include "test_helpers.h"

#include <math.h>

#define DATA "tests/data/fold_scale_axis/"

static void setup(void) { th_load_std(); }
static void teardown(void) { gp_plugins_unload_all(); }

TestSuite(fold_scale_axis, .init = setup, .fini = teardown);

static void golden(const char *name, const char *pipeline) {
  GPBuf b = {0}, a = {0};
  gp_buf_printf(&b, DATA "%s.before.relay", name);
  gp_buf_printf(&a, DATA "%s.after.relay", name);
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 3), 0, "%s", gp_error_message());
  th_golden_ctx(b.data, a.data, pipeline, ctx);
  gp_ctx_free(ctx);
  gp_buf_free(&b);
  gp_buf_free(&a);
}

/* A refusal: the output equals the input (typed). */
static void unchanged(const char *name, const char *pipeline) {
  GPBuf b = {0};
  gp_buf_printf(&b, DATA "%s.before.relay", name);
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 3), 0, "%s", gp_error_message());
  th_golden_ctx(b.data, b.data, pipeline, ctx);
  gp_ctx_free(ctx);
  gp_buf_free(&b);
}

/* Run with --explain into a string; *out the result (may be NULL). */
static char *run_explained(const char *path, const char *pipeline, GPModule **out) {
  GPModule *in = th_parse_file(path);
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 3), 0);
  char *text = th_explain(in, pipeline, ctx, out);
  gp_ctx_free(ctx);
  gp_release(in);
  return text;
}

static int count_calls(const GPModule *m, const char *name) {
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

Test(fold_scale_axis, registered_at_level_3_requiring_infer_type) {
  static const char *const names[] = {"BackwardFoldScaleAxis", "ForwardFoldScaleAxis", "FoldScaleAxis"};
  for (size_t i = 0; i < GP_ARRAY_LEN(names); i++) {
    GPPassEntry *e = gp_pass_acquire(names[i]);
    cr_assert(e, "%s is not registered", names[i]);
    cr_expect_eq(e->info.opt_level, 3, "%s", names[i]);
    cr_expect_eq(e->info.num_required, 1, "%s", names[i]);
    cr_expect_str_eq(e->info.required[0], "InferType");
    cr_expect_str_eq(e->origin, "std");
    gp_pass_entry_release(e);
  }
}

/* ---- backward: the scale after conv2d / dense moves into the weights */

Test(fold_scale_axis, bwd_conv) { golden("bwd_conv", "BackwardFoldScaleAxis"); }
Test(fold_scale_axis, bwd_through_bias_add_and_relu) { golden("bwd_bias_relu", "BackwardFoldScaleAxis"); }
Test(fold_scale_axis, bwd_through_add_negative_scale) { golden("bwd_add_neg", "BackwardFoldScaleAxis"); }
Test(fold_scale_axis, bwd_dense) { golden("bwd_dense", "BackwardFoldScaleAxis"); }
Test(fold_scale_axis, bwd_dual_path_add_of_two_convs) { golden("bwd_dual_path", "BackwardFoldScaleAxis"); }
Test(fold_scale_axis, bwd_nhwc_hwio) { golden("bwd_nhwc", "BackwardFoldScaleAxis"); }
/* A scale that is not a constant: TVM's expressions, multiply(w, expand_dims(squeeze(s))) */
Test(fold_scale_axis, bwd_variable_scale_builds_tvm_expressions) {
  golden("bwd_var_scale", "BackwardFoldScaleAxis");
  GPModule *out;
  char *text = run_explained(DATA "bwd_var_scale.before.relay", "BackwardFoldScaleAxis", &out);
  cr_assert(out, "%s", gp_error_message());
  cr_expect_eq(count_calls(out, "squeeze"), 1);
  cr_expect_eq(count_calls(out, "expand_dims"), 1);
  cr_expect_eq(count_calls(out, "multiply"), 1);
  gp_free(text);
  gp_release(out);
}

/* refusals */
Test(fold_scale_axis, bwd_negative_scale_through_relu_is_kept) {
  unchanged("bwd_neg_relu", "BackwardFoldScaleAxis");
  GPModule *out;
  char *text = run_explained(DATA "bwd_neg_relu.before.relay", "BackwardFoldScaleAxis", &out);
  cr_assert(out, "%s", gp_error_message());
  cr_assert(strstr(text, "explain: BackwardFoldScaleAxis: note: kept multiply at " DATA
                         "bwd_neg_relu.before.relay:6:3: the scale is not a non-negative constant"),
            "%s", text);
  gp_free(text);
  gp_release(out);
}

Test(fold_scale_axis, bwd_conv_with_other_consumers_is_kept) {
  unchanged("bwd_other_consumer", "BackwardFoldScaleAxis");
  GPModule *out;
  char *text = run_explained(DATA "bwd_other_consumer.before.relay", "BackwardFoldScaleAxis", &out);
  cr_assert(out, "%s", gp_error_message());
  cr_assert(strstr(text, "note: kept multiply at " DATA "bwd_other_consumer.before.relay:4:8: its argument nn.conv2d at " DATA
                         "bwd_other_consumer.before.relay:3:8 has 2 uses"),
            "%s", text);
  gp_free(text);
  gp_release(out);
}

/* ---- forward: the scale before conv2d / dense moves into the weights */

Test(fold_scale_axis, fwd_through_relu) { golden("fwd_relu_conv", "ForwardFoldScaleAxis"); }
Test(fold_scale_axis, fwd_through_add) { golden("fwd_add_conv", "ForwardFoldScaleAxis"); }
Test(fold_scale_axis, fwd_dense) { golden("fwd_dense", "ForwardFoldScaleAxis"); }
Test(fold_scale_axis, fwd_scalar_scale) { golden("fwd_scalar", "ForwardFoldScaleAxis"); }
Test(fold_scale_axis, fwd_depthwise_along_o) { golden("fwd_depthwise", "ForwardFoldScaleAxis"); }

Test(fold_scale_axis, fwd_negative_scale_through_relu_is_kept) {
  unchanged("fwd_neg_relu", "ForwardFoldScaleAxis");
  GPModule *out;
  char *text = run_explained(DATA "fwd_neg_relu.before.relay", "ForwardFoldScaleAxis", &out);
  cr_assert(out, "%s", gp_error_message());
  cr_assert(strstr(text, "explain: ForwardFoldScaleAxis: note: kept multiply at " DATA
                         "fwd_neg_relu.before.relay:3:8: the scale is not a non-negative constant"),
            "%s", text);
  cr_assert(strstr(text, "note: forward: folded 0 scales into weights, kept 1 multiplies"), "%s", text);
  gp_free(text);
  gp_release(out);
}
Test(fold_scale_axis, fwd_scale_not_reaching_a_weight_is_kept) { unchanged("fwd_not_reaching", "ForwardFoldScaleAxis"); }
Test(fold_scale_axis, fwd_scale_with_other_consumers_is_kept) { unchanged("fwd_other_consumer", "ForwardFoldScaleAxis"); }
Test(fold_scale_axis, fwd_grouped_conv_is_kept) { unchanged("fwd_grouped", "ForwardFoldScaleAxis"); }

/* ---- FoldScaleAxis: backward, forward, FoldConstant */

Test(fold_scale_axis, fold_scale_axis_both_directions) {
  golden("fsa_chain", "FoldScaleAxis");
  GPModule *out;
  char *text = run_explained(DATA "fsa_chain.before.relay", "FoldScaleAxis", &out);
  cr_assert(out, "%s", gp_error_message());
  cr_expect_eq(count_calls(out, "multiply"), 0);
  cr_assert(strstr(text, "explain: FoldConstant: ran\n"), "%s", text);
  cr_assert(strstr(text, "explain: FoldScaleAxis: note: backward: folded 1 scales"), "%s", text);
  cr_assert(strstr(text, "explain: FoldScaleAxis: note: forward: folded 1 scales"), "%s", text);
  gp_free(text);
  gp_release(out);
}

Test(fold_scale_axis, skipped_below_opt_level_3) {
  GPModule *in = th_parse_file(DATA "fsa_chain.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(in, "FoldScaleAxis", ctx);
  cr_assert(out, "%s", gp_error_message());
  cr_expect_eq(count_calls(out, "multiply"), 2);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* ---- refusals: a weight of another dtype */

/* A weight whose dtype is not the scale's (a float64 weight, a float32 scale; TVM would build an
 * ill-typed multiply): the scale is not folded into it, the multiply stays, and --explain names
 * the weight's op, in both directions */
Test(fold_scale_axis, weight_of_another_dtype_keeps_the_multiply) {
  static const char *const names[] = {"dtype_fwd_kept", "dtype_bwd_kept"};
  static const char *const notes[] = {
      "kept a scale before nn.dense: the weight of nn.dense at " DATA "dtype_fwd_kept.before.relay:4:3 is float64 "
      "and the scale float32",
      "kept multiply at " DATA "dtype_bwd_kept.before.relay:4:3: the weight of nn.conv2d at " DATA
      "dtype_bwd_kept.before.relay:3:8 is float64 and the scale float32"};
  static const char *const passes[] = {"ForwardFoldScaleAxis", "BackwardFoldScaleAxis", "FoldScaleAxis"};
  for (size_t i = 0; i < GP_ARRAY_LEN(names); i++) {
    for (size_t p = 0; p < GP_ARRAY_LEN(passes); p++) unchanged(names[i], passes[p]);
    GPBuf path = {0};
    gp_buf_printf(&path, DATA "%s.before.relay", names[i]);
    GPModule *out;
    char *text = run_explained(path.data, "FoldScaleAxis", &out);
    cr_assert(out, "%s", gp_error_message());
    cr_expect(strstr(text, notes[i]), "%s", text);
    gp_free(text);
    gp_release(out);
    gp_buf_free(&path);
  }
}

/* ---- large weights: the fold's arithmetic (split over the cores from 1 MiB) is bit-exact */

/* every data-less constant filled with values in [0.5, 1.5) (k-th: frac(k * golden ratio)) */
static GPExpr *fill_constant(void *user, GPExpr *orig, GPExpr *rebuilt) {
  (void)user;
  if (gp_kind(orig) != GP_TI_CONSTANT || GP_AS(GPConstant, orig)->data->dl.data) return gp_retain(rebuilt);
  const GPTensor *t = GP_AS(GPConstant, orig)->data;
  GPTensor *nt = gp_tensor_alloc(t->dl.dtype, t->dl.ndim, t->dl.shape, true);
  int64_t n = 1;
  for (int32_t i = 0; i < t->dl.ndim; i++) n *= t->dl.shape[i];
  for (int64_t k = 0; k < n; k++) {
    double v = (double)(k + 1) * 0.6180339887498949;
    ((float *)nt->dl.data)[k] = (float)(0.5 + (v - floor(v)));
  }
  GPConstant *c = gp_constant_new(nt);
  GPExpr *r = gp_expr_annotate(&c->base, orig->checked_type, 0, 0);
  gp_release(c);
  gp_release(nt);
  return r;
}

Test(fold_scale_axis, large_weights_fold_bit_exactly) {
  GPModule *m0 = th_parse_file(DATA "large_weights.relay");
  GPExpr *nb = gp_rewrite(&m0->funcs[gp_module_find(m0, "main")]->base, fill_constant, NULL);
  cr_assert(nb, "%s", gp_error_message());
  GPModule *in = gp_module_copy(m0);
  cr_assert_eq(gp_module_add(in, "main", GP_AS(GPFunctionExpr, nb), true), 0, "%s", gp_error_message());
  gp_release(nb);
  gp_release(m0);
  /* the inputs: s1 (512), w1 (1024, 512), w2 (96, 1024 * 9), s2 (96) */
  const GPCall *mul2 = GP_AS(GPCall, gp_module_lookup(in, "main")->body);
  const GPCall *conv2 = GP_AS(GPCall, mul2->args[0]), *conv1 = GP_AS(GPCall, conv2->args[0]);
  const GPCall *mul1 = GP_AS(GPCall, conv1->args[0]);
  const float *s2 = GP_AS(GPConstant, mul2->args[1])->data->dl.data, *w2 = GP_AS(GPConstant, conv2->args[1])->data->dl.data;
  const float *w1 = GP_AS(GPConstant, conv1->args[1])->data->dl.data, *s1 = GP_AS(GPConstant, mul1->args[1])->data->dl.data;
  GPPassContext *ctx = gp_ctx_new();
  gp_ctx_set_opt_level(ctx, 3);
  GPModule *out = gp_run_pipeline(in, "FoldScaleAxis", ctx);
  cr_assert(out, "%s", gp_error_message());
  cr_expect_eq(count_calls(out, "multiply"), 0);
  const GPCall *c2 = GP_AS(GPCall, gp_module_lookup(out, "main")->body);
  cr_assert(gp_kind(c2->args[1]) == GP_TI_CONSTANT);
  const GPCall *c1 = GP_AS(GPCall, c2->args[0]);
  cr_assert(gp_kind(c1->args[1]) == GP_TI_CONSTANT && gp_kind(c1->args[0]) == GP_TI_VAR);
  const float *f2 = GP_AS(GPConstant, c2->args[1])->data->dl.data, *f1 = GP_AS(GPConstant, c1->args[1])->data->dl.data;
  int64_t bad1 = -1, bad2 = -1;
  for (int64_t k = 0; k < 1024 * 512 && bad1 < 0; k++) /* forward: along I */
    if (f1[k] != w1[k] * s1[k % 512]) bad1 = k;
  for (int64_t k = 0; k < 96 * 1024 * 9 && bad2 < 0; k++) /* backward: along O */
    if (f2[k] != w2[k] * s2[k / (1024 * 9)]) bad2 = k;
  cr_expect_eq(bad1, -1, "forward fold: element %lld differs", (long long)bad1);
  cr_expect_eq(bad2, -1, "backward fold: element %lld differs", (long long)bad2);
  /* the input is unchanged */
  cr_expect_eq(count_calls(in, "multiply"), 2);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* ---- a deep chain: dense -> multiply, 20000 times (no recursion on depth) */

Test(fold_scale_axis, deep_chain) {
  enum { N = 20000 };
  GPBuf b = {0};
  gp_buf_printf(&b, "#[version = \"0.0.5\"]\ndef @main(%%x: Tensor[(1, 1), float32], %%w: Tensor[(1, 1), float32]) {\n");
  gp_buf_printf(&b, "  %%0 = nn.dense(%%x, %%w, units=1);\n");
  for (int i = 0; i < N - 1; i++) {
    gp_buf_printf(&b, "  %%%d = multiply(%%%d, 2f);\n", 2 * i + 1, 2 * i);
    gp_buf_printf(&b, "  %%%d = nn.dense(%%%d, %%w, units=1);\n", 2 * i + 2, 2 * i + 1);
  }
  gp_buf_printf(&b, "  multiply(%%%d, 2f)\n}\n", 2 * N - 2);
  GPModule *in = gp_parse(b.data, b.len, "deep");
  cr_assert(in, "%s", gp_error_message());
  gp_buf_free(&b);
  GPPassContext *ctx = gp_ctx_new();
  gp_ctx_set_opt_level(ctx, 3);
  GPModule *out = gp_run_pipeline(in, "BackwardFoldScaleAxis", ctx);
  cr_assert(out, "%s", gp_error_message());
  /* every multiply moved into its dense's weight: multiply(%w, [[2f]]) */
  cr_expect_eq(count_calls(out, "nn.dense"), N);
  cr_expect_eq(count_calls(out, "multiply"), N);
  const GPFunctionExpr *fn = gp_module_lookup(out, "main");
  cr_expect_str_eq(GP_AS(GPOp, GP_AS(GPCall, fn->body)->op)->name, "nn.dense");
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* --explain notes a kept multiply that is a near miss (a scale-shaped operand, the other side a
 * conv used twice), not one that was never a scale (SiLU: x * sigmoid(x)). */
Test(fold_scale_axis, notes_only_near_misses) {
  GPModule *out;
  char *text = run_explained(DATA "kept_notes.before.relay", "BackwardFoldScaleAxis", &out);
  cr_assert(out, "%s", gp_error_message());
  int notes = 0;
  for (const char *p = text; (p = strstr(p, "kept multiply at")) != NULL; p++) notes++;
  cr_expect_eq(notes, 1, "%s", text);
  cr_expect(strstr(text, "kept multiply at " DATA "kept_notes.before.relay:8:8: its argument nn.conv2d at " DATA
                         "kept_notes.before.relay:7:8 has 2 uses"),
            "%s", text);
  gp_free(text);
  gp_release(out);
}

/* ---- whole models (bench/gen_model: torchvision's architectures).  DenseNets: every batch norm
 * but the last (norm5, ahead of the global pool) folds into a conv's weights, norm2 and norm0
 * backward into the conv before them, norm1 and the transitions' forward through a relu into the
 * conv after them (most of those after a dense block's concatenation).  MobileNetV2: every batch
 * norm follows its conv (depthwise ones too) and folds backward into it.  The numbers against
 * ONNX Runtime are tests/run.sh's; here, the tiny DenseNet's after each pass with
 * --verify-numerics. */

static void model_folds(const char *arch, const char *opts, bool verify, int bwd, int fwd, int kept, int multiplies_left) {
  char dir[] = "/tmp/gp_densenet_XXXXXX";
  cr_assert(mkdtemp(dir));
  GPBuf cmd = {0};
  char *out = NULL;
  gp_buf_printf(&cmd, "%s/bin/gen_model %s %s/m.onnx %s", th_build_dir(), arch, dir, opts);
  cr_assert_eq(th_run(cmd.data, &out), 0, "%s", out);
  gp_free(out);
  gp_buf_free(&cmd);
  gp_buf_printf(&cmd, "%s/bin/graphpass opt %s/m.onnx --opt-level 3 --explain%s", th_build_dir(), dir,
                verify ? " --verify-numerics" : "");
  cr_assert_eq(th_run(cmd.data, &out), 0, "%s", out);
  char want[160];
  snprintf(want, sizeof want, "FoldScaleAxis: note: backward: folded %d scales into weights, kept %d multiplies", bwd, kept);
  cr_expect(strstr(out, want), "want '%s' in:\n%s", want, out);
  snprintf(want, sizeof want, "FoldScaleAxis: note: forward: folded %d scales into weights, kept %d multiplies", fwd, kept);
  cr_expect(strstr(out, want), "want '%s' in:\n%s", want, out);
  if (verify) cr_expect(strstr(out, "explain: FoldScaleAxis: numerics ok"), "%s", out);
  int multiplies = 0;
  for (const char *p = out; (p = strstr(p, " multiply(")) != NULL; p++) multiplies++;
  cr_expect_eq(multiplies, multiplies_left, "%s", out);
  gp_free(out);
  gp_buf_free(&cmd);
  gp_buf_printf(&cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd.data), 0);
  gp_buf_free(&cmd);
}

Test(fold_scale_axis, densenet_tiny_folds_every_batch_norm_but_the_last) {
  model_folds("densenet", "--blocks 2,3 --growth 4 --init 8 --size 32 --classes 10", true, 6, 6, 0, 1);
}

Test(fold_scale_axis, densenet121_folds_every_batch_norm_but_the_last) { model_folds("densenet", "", false, 59, 61, 0, 1); }

Test(fold_scale_axis, mobilenet_v2_folds_every_batch_norm) { model_folds("mobilenet_v2", "", false, 52, 0, 0, 0); }

/* EfficientNet-B0: its 49 batch norms backward; the squeeze-and-excitation scales (not constants)
 * forward into the projecting convs, as TVM does; 16 SE multiplies kept each way (their conv is
 * used twice: by the SiLU's sigmoid too); the 49 SiLUs' x * sigmoid(x) and the 16 kept remain. */
Test(fold_scale_axis, efficientnet_b0_folds_every_batch_norm) {
  model_folds("efficientnet_b0", "", false, 49, 32, 16, 65);
}
