/* test_simplify.c -- SimplifyInference, CanonicalizeOps, CanonicalizeCast (golden before/after
 * files, run through the registry as `graphpass opt` runs them; th_golden also checks that the
 * input module is unchanged and that @main evaluates to the same numbers before and after), the
 * seed example (a conv2d's batch_norm with constant parameters unpacked, then folded by
 * FoldConstant), the norm ops' type relations and their kernels against hand-computed values. */
#include "eval/eval.h"
#include "eval/kernel.h"
#include "test_helpers.h"

#include <math.h>

#define DATA "tests/data/passes/"

static void setup(void) { th_load_std(); }
static void teardown(void) { gp_plugins_unload_all(); }

TestSuite(simplify, .init = setup, .fini = teardown);
TestSuite(canon, .init = setup, .fini = teardown);
TestSuite(norm_ops);
TestSuite(norm_kernels);

static void golden(const char *before, const char *after, const char *pipeline) {
  th_golden(before, after, pipeline, NULL);
}

/* CanonicalizeOps and CanonicalizeCast have opt-level 3: a context at level 3 enables them. */
static void golden3(const char *before, const char *after, const char *pipeline) {
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 3), 0, "%s", gp_error_message());
  th_golden_ctx(before, after, pipeline, ctx);
  gp_ctx_free(ctx);
}

/* Run `pipeline` on the module in `path`; the result (fails the test on error). */
static GPModule *run_file(const char *path, const char *pipeline, int32_t opt_level) {
  GPModule *in = th_parse_file(path);
  GPPassContext *ctx = gp_ctx_new();
  gp_ctx_set_opt_level(ctx, opt_level);
  GPModule *out = gp_run_pipeline(in, pipeline, ctx);
  cr_assert(out, "%s on %s: %s", pipeline, path, gp_error_message());
  gp_ctx_free(ctx);
  gp_release(in);
  return out;
}

/* Count calls of op `name` in @main. */
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

/* ------------------------------------------------------------------------------------------ */
/* Registration                                                                                */

Test(simplify, registered_with_tvm_levels) {
  static const struct {
    const char *name;
    int32_t level;
  } want[] = {{"SimplifyInference", 0}, {"CanonicalizeOps", 3}, {"CanonicalizeCast", 3}};
  for (size_t i = 0; i < GP_ARRAY_LEN(want); i++) {
    GPPassEntry *e = gp_pass_acquire(want[i].name);
    cr_assert(e, "%s is not registered", want[i].name);
    cr_expect_eq(e->info.opt_level, want[i].level, "%s: opt-level %d", want[i].name, e->info.opt_level);
    cr_expect_eq(e->info.num_required, 1, "%s", want[i].name);
    cr_expect_str_eq(e->info.required[0], "InferType", "%s", want[i].name);
    cr_expect_str_eq(e->origin, "std");
    gp_pass_entry_release(e);
  }
}

/* At the default opt-level 2 a pipeline skips the level-3 passes (TVM's PassEnabled). */
Test(canon, level3_passes_skipped_at_level2) {
  GPModule *out = run_file(DATA "canon_ops_axis1.before.relay", "CanonicalizeOps", 2);
  cr_assert_eq(count_calls(out, "nn.bias_add"), 2);
  gp_release(out);
  out = run_file(DATA "canon_ops_axis1.before.relay", "CanonicalizeOps", 3);
  cr_assert_eq(count_calls(out, "nn.bias_add"), 0);
  cr_assert_eq(count_calls(out, "add"), 2);
  gp_release(out);
}

/* ------------------------------------------------------------------------------------------ */
/* SimplifyInference                                                                           */

Test(simplify, batch_norm_unpacked) {
  golden(DATA "simplify_bn.before.relay", DATA "simplify_bn.after.relay", "SimplifyInference");
}

Test(simplify, batch_norm_without_center_and_scale) {
  golden(DATA "simplify_bn_no_center_scale.before.relay", DATA "simplify_bn_no_center_scale.after.relay",
         "SimplifyInference");
}

Test(simplify, batch_norm_nhwc_needs_no_expand_dims) {
  golden(DATA "simplify_bn_nhwc.before.relay", DATA "simplify_bn_nhwc.after.relay", "SimplifyInference");
}

Test(simplify, batch_norm_other_items_keep_the_call) {
  golden(DATA "simplify_bn_item1.before.relay", DATA "simplify_bn_item1.after.relay", "SimplifyInference");
}

Test(simplify, dropout_becomes_its_input) {
  golden(DATA "simplify_dropout.before.relay", DATA "simplify_dropout.after.relay", "SimplifyInference");
}

Test(simplify, layer_norm) {
  golden(DATA "simplify_layer_norm.before.relay", DATA "simplify_layer_norm.after.relay", "SimplifyInference");
}

Test(simplify, layer_norm_axis1_epsilon_no_center) {
  golden(DATA "simplify_layer_norm_axis1.before.relay", DATA "simplify_layer_norm_axis1.after.relay",
         "SimplifyInference");
}

Test(simplify, instance_norm) {
  golden(DATA "simplify_instance_norm.before.relay", DATA "simplify_instance_norm.after.relay",
         "SimplifyInference");
}

Test(simplify, group_norm) {
  golden(DATA "simplify_group_norm.before.relay", DATA "simplify_group_norm.after.relay", "SimplifyInference");
}

/* data with no elements: a 0 in the reshapes' newshape would copy another dimension, so that
 * group_norm is kept (the other one is unpacked) */
Test(simplify, group_norm_of_empty_data_is_kept) {
  golden(DATA "simplify_group_norm_empty.before.relay", DATA "simplify_group_norm_empty.after.relay",
         "SimplifyInference");
}

Test(simplify, group_norm_channel_last) {
  golden(DATA "simplify_group_norm_nhwc.before.relay", DATA "simplify_group_norm_nhwc.after.relay",
         "SimplifyInference");
}

Test(simplify, l2_normalize) {
  golden(DATA "simplify_l2_normalize.before.relay", DATA "simplify_l2_normalize.after.relay",
         "SimplifyInference");
}

/* Nothing to simplify: the pass returns its input. */
Test(simplify, nothing_to_do_returns_input) {
  GPModule *in = th_parse_file(DATA "canon_ops_rank2.before.relay");
  GPModule *typed = gp_infer_types(in);
  cr_assert(typed, "%s", gp_error_message());
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(typed, "SimplifyInference", ctx);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(out->funcs[0], typed->funcs[0], "an unchanged function must be shared, not rebuilt");
  gp_release(out);
  gp_release(typed);
  gp_release(in);
  gp_ctx_free(ctx);
}

static const char k_dynamic_group_norm[] =
    "#[version = \"0.0.5\"]\n"
    "def @main(%x: Tensor[(?, 4, 3), float32], %g: Tensor[(4), float32]) -> Tensor[(?, 4, 3), float32] {\n"
    "  nn.group_norm(%x, %g, %g, num_groups=2)\n"
    "}\n";

/* What replaces a batch_norm takes its location, so later passes' messages (FoldScaleAxis's
 * kept multiplies, a type error) still name the line the batch_norm was on. */
Test(simplify, replacement_takes_the_batch_norm_location) {
  static const char text[] = "#[version = \"0.0.5\"]\n"
                             "def @main(%x: Tensor[(1, 2, 3, 3), float32], %g: Tensor[(2), float32]) {\n"
                             "  %0 = nn.batch_norm(%x, %g, %g, %g, %g);\n"
                             "  %0.0\n"
                             "}\n";
  GPModule *in = gp_parse(text, strlen(text), "bn.relay");
  cr_assert(in, "%s", gp_error_message());
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(in, "SimplifyInference", ctx);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(count_calls(out, "nn.batch_norm"), 0);
  GPExpr **nodes;
  size_t n;
  cr_assert_eq(gp_post_order(&gp_module_lookup(out, "main")->base, &nodes, &n), 0);
  int calls = 0;
  for (size_t i = 0; i < n; i++)
    if (gp_kind(nodes[i]) == GP_TI_CALL) {
      calls++;
      cr_expect(nodes[i]->line == 3 || nodes[i]->line == 4, "%s at line %u",
                GP_AS(GPOp, GP_AS(GPCall, nodes[i])->op)->name, nodes[i]->line);
    }
  cr_expect_geq(calls, 4, "multiply, add, the scale's divide and sqrt, ...");
  gp_free(nodes);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* group_norm's reshape needs static dims: kept (TVM would crash), with an explain note. */
Test(simplify, group_norm_with_dynamic_shape_is_kept) {
  GPModule *in = gp_parse(k_dynamic_group_norm, strlen(k_dynamic_group_norm), "dyn.relay");
  cr_assert(in, "%s", gp_error_message());
  GPModule *out;
  char *buf = th_explain(in, "SimplifyInference", NULL, &out);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(count_calls(out, "nn.group_norm"), 1);
  cr_assert(strstr(buf, "kept nn.group_norm at dyn.relay:3:3: data has a dynamic shape"), "%s", buf);
  gp_free(buf);
  gp_release(out);
  gp_release(in);
}

#define BN_TEXT(dt)                                                                                 \
  "#[version = \"0.0.5\"]\n"                                                                        \
  "def @main(%x: Tensor[(2, 4), " dt "], %g: Tensor[(4), " dt "]) -> Tensor[(2, 4), " dt "] {\n"    \
  "  %0 = nn.batch_norm(%x, %g, %g, %g, %g);\n"                                                     \
  "  %0.0\n"                                                                                        \
  "}\n"
static const char k_f8_batch_norm[] = BN_TEXT("float8_e4m3fn");
static const char k_bf16_batch_norm[] = BN_TEXT("bfloat16");

/* A failure names the pass, the op and the node: no scalar epsilon of float8_e4m3fn is made
 * (TVM's MakeConstantScalar has none either).  Of bfloat16 one is made, as in TVM. */
Test(simplify, error_names_pass_and_node) {
  GPModule *in = gp_parse(k_f8_batch_norm, strlen(k_f8_batch_norm), "f8.relay");
  cr_assert(in, "%s", gp_error_message());
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(in, "SimplifyInference", ctx);
  cr_assert_null(out);
  cr_assert_eq(gp_error_kind(), GP_ERR_PASS);
  const char *msg = gp_error_message();
  cr_assert(strstr(msg, "SimplifyInference"), "%s", msg);
  cr_assert(strstr(msg, "nn.batch_norm at f8.relay:4:3"), "%s", msg);
  cr_assert(strstr(msg, "scalar constant of dtype float8_e4m3fn"), "%s", msg);
  gp_error_clear();
  gp_release(in);
  in = gp_parse(k_bf16_batch_norm, strlen(k_bf16_batch_norm), "bf16.relay");
  cr_assert(in, "%s", gp_error_message());
  out = gp_run_pipeline(in, "SimplifyInference", ctx);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(count_calls(out, "nn.batch_norm"), 0);
  gp_release(out);
  gp_error_clear();
  gp_release(in);
  gp_ctx_free(ctx);
}

/* ------------------------------------------------------------------------------------------ */
/* The seed: conv2d + batch_norm with constant weights and parameters                          */

Test(simplify, conv_batch_norm_unpacked) {
  golden(DATA "simplify_conv_bn.before.relay", DATA "simplify_conv_bn.after.relay", "SimplifyInference");
}

/* SimplifyInference types what it builds and the rewrite keeps the types of the nodes above
 * it, so the pass skips the re-typing: its result must still be typed everywhere, with types
 * the verifier finds consistent (each node's type is what its children's types give), and
 * InferType must find nothing to change. */
Test(simplify, result_typed_without_retyping) {
  static const char *const files[] = {"simplify_conv_bn", "simplify_bn", "simplify_bn_nhwc", "simplify_layer_norm",
                                      "simplify_instance_norm", "simplify_group_norm", "simplify_group_norm_nhwc",
                                      "simplify_dropout"};
  for (size_t f = 0; f < GP_ARRAY_LEN(files); f++) {
    char path[256];
    snprintf(path, sizeof path, DATA "%s.before.relay", files[f]);
    GPModule *out = run_file(path, "SimplifyInference", 2);
    GPExpr **nodes;
    size_t n;
    cr_assert_eq(gp_post_order(&gp_module_lookup(out, "main")->base, &nodes, &n), 0);
    for (size_t i = 0; i < n; i++)
      cr_expect(gp_kind(nodes[i]) == GP_TI_OP || nodes[i]->checked_type, "%s: node %zu (%s) has no type", files[f], i,
                gp_expr_kind_name(nodes[i]));
    gp_free(nodes);
    cr_expect_eq(gp_verify(out), 0, "%s: %s", files[f], gp_error_message());
    GPModule *again = gp_infer_types(out);
    cr_assert(again, "%s: %s", files[f], gp_error_message());
    cr_expect_eq(again->funcs[0], out->funcs[0], "%s: InferType rebuilt @main", files[f]);
    gp_release(again);
    gp_release(out);
  }
}

static const GPTensor *const_data(const GPExpr *e) {
  cr_assert_eq(gp_kind(e), GP_TI_CONSTANT, "expected a constant, got type index %d", gp_kind(e));
  const GPTensor *t = GP_AS(const GPConstant, e)->data;
  cr_assert(t && t->dl.data, "constant without data");
  return t;
}

/* With FoldConstant after it, scale and shift become two (3, 1, 1) constants whose values are
 * gamma / sqrt(var + eps) and beta - mean * scale, computed here from the input's constants. */
Test(simplify, conv_batch_norm_folds_to_multiply_add) {
  golden(DATA "simplify_conv_bn.before.relay", DATA "simplify_conv_bn_folded.after.relay",
         "SimplifyInference,FoldConstant");
  GPModule *in = th_parse_file(DATA "simplify_conv_bn.before.relay");
  GPModule *out = run_file(DATA "simplify_conv_bn.before.relay", "SimplifyInference,FoldConstant", 2);
  /* in: relu(%1.0), %1 = batch_norm(conv, gamma, beta, mean, var, epsilon=0.001) */
  const GPCall *relu = GP_AS(const GPCall, in->funcs[0]->body);
  const GPTupleGetItem *item = GP_AS(const GPTupleGetItem, relu->args[0]);
  const GPCall *bn = GP_AS(const GPCall, item->tuple);
  const GPTensor *gamma = const_data(bn->args[1]), *beta = const_data(bn->args[2]);
  const GPTensor *mean = const_data(bn->args[3]), *var = const_data(bn->args[4]);
  /* out: relu(add(multiply(conv2d, S), B)) */
  const GPCall *orelu = GP_AS(const GPCall, out->funcs[0]->body);
  const GPCall *add = GP_AS(const GPCall, orelu->args[0]);
  cr_assert_eq(gp_kind(add), GP_TI_CALL);
  cr_assert_str_eq(GP_AS(GPOp, add->op)->name, "add");
  const GPCall *mul = GP_AS(const GPCall, add->args[0]);
  cr_assert_str_eq(GP_AS(GPOp, mul->op)->name, "multiply");
  cr_assert_str_eq(GP_AS(GPOp, GP_AS(GPCall, mul->args[0])->op)->name, "nn.conv2d");
  const GPTensor *S = const_data(mul->args[1]), *B = const_data(add->args[1]);
  cr_assert_eq(S->dl.ndim, 3);
  cr_assert_eq(S->dl.shape[0], 3);
  cr_assert_eq(S->dl.shape[1], 1);
  cr_assert_eq(S->dl.shape[2], 1);
  for (int64_t c = 0; c < 3; c++) {
    double s = gp_tensor_get_f64(gamma, c) / sqrt(gp_tensor_get_f64(var, c) + 0.001);
    double b = gp_tensor_get_f64(beta, c) - gp_tensor_get_f64(mean, c) * s;
    cr_expect(fabs(gp_tensor_get_f64(S, c) - s) <= 1e-6 * (1 + fabs(s)), "scale[%lld] %.9g, want %.9g", (long long)c,
              gp_tensor_get_f64(S, c), s);
    cr_expect(fabs(gp_tensor_get_f64(B, c) - b) <= 1e-6 * (1 + fabs(b)), "shift[%lld] %.9g, want %.9g", (long long)c,
              gp_tensor_get_f64(B, c), b);
  }
  /* hand-computed for gamma (1.5, 0.5, -2), var (0.5, 2, 0.25) */
  cr_expect(fabs(gp_tensor_get_f64(S, 0) - 2.1192021) < 1e-6);
  cr_expect(fabs(gp_tensor_get_f64(S, 2) + 3.9920242) < 1e-6);
  cr_assert_eq(count_calls(out, "nn.batch_norm"), 0);
  cr_assert_eq(count_calls(out, "expand_dims"), 0);
  gp_release(out);
  gp_release(in);
}

/* ------------------------------------------------------------------------------------------ */
/* CanonicalizeOps                                                                             */

Test(canon, bias_add_axis1_and_axis2) {
  golden3(DATA "canon_ops_axis1.before.relay", DATA "canon_ops_axis1.after.relay", "CanonicalizeOps");
}

Test(canon, bias_add_negative_axes) {
  golden3(DATA "canon_ops_axis_neg1.before.relay", DATA "canon_ops_axis_neg1.after.relay", "CanonicalizeOps");
}

Test(canon, bias_add_rank2) {
  golden3(DATA "canon_ops_rank2.before.relay", DATA "canon_ops_rank2.after.relay", "CanonicalizeOps");
}

/* ------------------------------------------------------------------------------------------ */
/* CanonicalizeCast                                                                            */

Test(canon, upcast_with_two_elemwise_consumers_duplicated) {
  golden3(DATA "canon_cast_dup.before.relay", DATA "canon_cast_dup.after.relay", "CanonicalizeCast");
}

/* TVM's order: add visits the cast first (keeps it), then exp (gets the copy); softmax, not
 * elementwise, shares the original with add. */
Test(canon, upcast_copies_follow_tvm_visit_order) {
  golden3(DATA "canon_cast_order.before.relay", DATA "canon_cast_order.after.relay", "CanonicalizeCast");
}

Test(canon, upcast_used_twice_by_one_call) {
  golden3(DATA "canon_cast_same_call.before.relay", DATA "canon_cast_same_call.after.relay", "CanonicalizeCast");
}

Test(canon, downcast_and_same_width_untouched) {
  golden3(DATA "canon_cast_down.before.relay", DATA "canon_cast_down.before.relay", "CanonicalizeCast");
}

Test(canon, single_consumer_untouched) {
  golden3(DATA "canon_cast_single.before.relay", DATA "canon_cast_single.before.relay", "CanonicalizeCast");
}

Test(canon, non_elemwise_consumers_untouched) {
  golden3(DATA "canon_cast_non_elemwise.before.relay", DATA "canon_cast_non_elemwise.before.relay",
          "CanonicalizeCast");
  GPModule *out = run_file(DATA "canon_cast_non_elemwise.before.relay", "CanonicalizeCast", 3);
  cr_assert_eq(count_calls(out, "cast"), 1);
  gp_release(out);
}

/* A deep chain: each level's cast has two elementwise consumers; no recursion on depth. */
Test(canon, long_chain_no_recursion) {
  const int n = 20000;
  GPBuf b = {0};
  gp_buf_puts(&b, "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(4), float16]) -> Tensor[(4), float16] {\n");
  gp_buf_puts(&b, "  %0 = negative(%x);\n"); /* level i: %3i+1 = cast up, %3i+2 = add, %3i+3 = cast down */
  for (int i = 0; i < n; i++) {
    gp_buf_printf(&b, "  %%%d = cast(%%%d, dtype=\"float32\");\n", 3 * i + 1, 3 * i);
    gp_buf_printf(&b, "  %%%d = add(%%%d, %%%d);\n", 3 * i + 2, 3 * i + 1, 3 * i + 1);
    gp_buf_printf(&b, "  %%%d = cast(%%%d, dtype=\"float16\");\n", 3 * i + 3, 3 * i + 2);
  }
  gp_buf_printf(&b, "  %%%d\n}\n", 3 * n);
  GPModule *in = gp_parse(b.data, b.len, "chain");
  gp_buf_free(&b);
  cr_assert(in, "%s", gp_error_message());
  GPPassContext *ctx = gp_ctx_new();
  gp_ctx_set_opt_level(ctx, 3);
  GPModule *out = gp_run_pipeline(in, "CanonicalizeCast", ctx);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(count_calls(out, "cast"), 3 * n);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* ------------------------------------------------------------------------------------------ */
/* The norm ops: patterns, schemas, type relations                                             */

Test(norm_ops, opaque_patterns_and_defaults) {
  static const char *const names[] = {"nn.layer_norm", "nn.instance_norm", "nn.group_norm", "nn.l2_normalize"};
  for (size_t i = 0; i < GP_ARRAY_LEN(names); i++) {
    const GPOp *op = gp_op_get(names[i]);
    cr_assert(op, "no op %s", names[i]);
    cr_expect_eq(op->pattern, GP_PATTERN_OPAQUE, "%s: FuseOps must not fuse it", names[i]);
    cr_expect_eq(op->num_inputs, i < 3 ? 3 : 1, "%s", names[i]);
    cr_expect_not_null(op->kernel, "%s has no kernel", names[i]);
  }
  const GPOp *ln = gp_op_get("nn.layer_norm");
  cr_expect_eq(ln->attrs[0].default_value.i, -1);
  cr_expect_eq(ln->attrs[1].default_value.f, 1e-5);
  const GPOp *gn = gp_op_get("nn.group_norm");
  cr_expect_str_eq(gn->attrs[0].name, "num_groups");
  cr_expect_str_eq(gn->attrs[1].name, "axis");
  cr_expect_eq(gn->attrs[1].default_value.i, 1);
  const GPOp *l2 = gp_op_get("nn.l2_normalize");
  cr_expect_str_eq(l2->attrs[0].name, "eps");
  cr_expect(l2->attrs[0].required && l2->attrs[1].required);
  const GPOp *var = gp_op_get("variance");
  cr_assert(var);
  cr_expect_eq(var->pattern, GP_PATTERN_COMM_REDUCE);
  cr_expect_str_eq(var->attrs[3].name, "unbiased");
}

/* Type-check `body` of a one-function module with params `params`; the body's type or NULL. */
static const GPType *infer(const char *params, const char *body, char **err) {
  GPBuf b = {0};
  gp_buf_printf(&b, "#[version = \"0.0.5\"]\ndef @main(%s) {\n  %s\n}\n", params, body);
  GPModule *m = gp_parse(b.data, b.len, "t.relay");
  gp_buf_free(&b);
  cr_assert(m, "%s", gp_error_message());
  GPModule *t = gp_infer_types(m);
  gp_release(m);
  *err = NULL;
  if (!t) {
    cr_assert_eq(gp_error_kind(), GP_ERR_TYPE, "%s", gp_error_message());
    *err = gp_strdup(gp_error_message());
    gp_error_clear();
    return NULL;
  }
  const GPType *ty = t->funcs[0]->body->checked_type;
  gp_release(t);
  return ty;
}

static void expect_type(const char *params, const char *body, const char *want) {
  char *err;
  const GPType *t = infer(params, body, &err);
  cr_assert(t, "%s: %s", body, err);
  GPBuf b = {0};
  gp_type_print(&b, t);
  cr_expect_str_eq(b.data, want, "%s", body);
  gp_buf_free(&b);
}

static void expect_type_error(const char *params, const char *body, const char *needle) {
  char *err;
  const GPType *t = infer(params, body, &err);
  cr_assert_null(t, "%s: expected an error with \"%s\"", body, needle);
  cr_expect(strstr(err, needle), "%s: \"%s\" lacks \"%s\"", body, err, needle);
  gp_free(err);
}

#define P3 "%x: Tensor[(2, 4, 3), float32], %g: Tensor[(4), float32], %b: Tensor[(4), float32]"

Test(norm_ops, type_relations) {
  expect_type(P3, "nn.layer_norm(%x, %b, %b, axis=1)", "Tensor[(2, 4, 3), float32]");
  expect_type(P3, "nn.instance_norm(%x, %g, %b)", "Tensor[(2, 4, 3), float32]");
  expect_type(P3, "nn.group_norm(%x, %g, %b, num_groups=2)", "Tensor[(2, 4, 3), float32]");
  expect_type(P3, "nn.l2_normalize(%x, eps=1e-12f, axis=[0, -1])", "Tensor[(2, 4, 3), float32]");
  expect_type("%x: Tensor[(2, 4, 3), float32], %m: Tensor[(2, 1, 3), float32]",
              "variance(%x, %m, axis=[1], keepdims=True)", "Tensor[(2, 1, 3), float32]");
  expect_type("%x: Tensor[(2, 4, 3), float32], %m: Tensor[(2, 1, 3), float32]", "variance(%x, %m, axis=[1])",
              "Tensor[(2, 3), float32]");
}

Test(norm_ops, type_errors_name_the_argument) {
  /* layer_norm's default axis is -1 (3 channels), gamma has 4 */
  expect_type_error(P3, "nn.layer_norm(%x, %g, %b)", "gamma (shape (4)) must have shape (3)");
  expect_type_error("%x: Tensor[(2, 4, 3), float32], %g: Tensor[(4), float32], %b: Tensor[(4), float16]",
                    "nn.instance_norm(%x, %g, %b)", "beta (float16)");
  expect_type_error("%x: Tensor[(2, 4), float32], %g: Tensor[(4), float32]", "nn.instance_norm(%x, %g, %g)",
                    "rank >= 3");
  expect_type_error(P3, "nn.group_norm(%x, %g, %b)", "num_groups 0 must be >= 1");
  expect_type_error(P3, "nn.group_norm(%x, %g, %b, num_groups=3)", "not divisible by num_groups 3");
  expect_type_error(P3, "nn.layer_norm(%x, %g, %b, axis=3)", "axis 3 is out of range");
  expect_type_error(P3, "nn.l2_normalize(%x, eps=1f, axis=[3])", "axis 3 is out of range");
  expect_type_error(P3, "nn.l2_normalize(%x, eps=1f, axis=[1, -2])", "names axis 1 twice");
  expect_type_error("%x: Tensor[(2, 4, 3), float32], %m: Tensor[(2, 2, 3), float32]", "variance(%x, %m, axis=[1])",
                    "mean (shape (2, 2, 3)) must have the rank of data");
}

/* ------------------------------------------------------------------------------------------ */
/* Kernels against hand-computed values                                                        */

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int32_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define VALS(...) ((const double[]){__VA_ARGS__})
#define NVALS(...) ((int64_t)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double)))

/* float32(1e-5), the epsilon the kernels use (as the decompositions' scalar constants hold). */
static const double EPS = 9.99999974737875e-06;

static GPTensor *tensor(DLDataType dt, int32_t ndim, const int64_t *shape, const double *vals) {
  GPTensor *t = gp_tensor_alloc(dt, ndim, shape, true);
  cr_assert(t, "%s", gp_error_message());
  int k = gp_k_dtype(dt);
  int64_t n = 1;
  for (int32_t i = 0; i < ndim; i++) n *= shape[i];
  for (int64_t i = 0; i < n; i++) gp_k_store_f64((char *)t->dl.data + i * (int64_t)gp_k_elem_size(k), k, vals[i]);
  return t;
}
#define TENSOR(dt, shape, vals) tensor((dt), (int32_t)(sizeof(shape) / sizeof(int64_t)), (shape), (vals))

typedef struct KV {
  const char *key;
  GPAttrValue v;
} KV;

/* Run op on ins with attrs; its output (fails the test on error). */
static GPTensor *run(const char *name, const KV *kv, int32_t nkv, GPTensor *const *ins, int32_t nin) {
  const GPOp *op = gp_op_get(name);
  cr_assert(op);
  const char *keys[8];
  GPAttrValue vals[8];
  for (int32_t i = 0; i < nkv; i++) keys[i] = kv[i].key, vals[i] = kv[i].v;
  GPAttrs *attrs = gp_op_attrs_new(op, nkv, keys, vals);
  cr_assert(attrs, "%s", gp_error_message());
  const GPType *types[4] = {NULL};
  const GPType *ot;
  GPTensor *outs[2];
  int32_t nout = 0;
  int rc = gp_eval_op(op, attrs, nin, types, nin, ins, 1, &ot, outs, 2, &nout);
  gp_release(attrs);
  cr_assert_eq(rc, 0, "%s: %s", name, gp_error_message());
  cr_assert_eq(nout, 1);
  return outs[0];
}

static void expect_vals(const GPTensor *t, const double *want, int64_t n, double tol, int line) {
  int64_t numel = 1;
  for (int32_t i = 0; i < t->dl.ndim; i++) numel *= t->dl.shape[i];
  cr_assert_eq(numel, n, "line %d: %lld elements, want %lld", line, (long long)numel, (long long)n);
  for (int64_t i = 0; i < n; i++) {
    double g = gp_tensor_get_f64(t, i);
    cr_expect(fabs(g - want[i]) <= tol * (1 + fabs(want[i])), "line %d: element %lld is %.9g, want %.9g", line,
              (long long)i, g, want[i]);
  }
}
#define EXPECT_VALS(t, tol, ...) expect_vals((t), VALS(__VA_ARGS__), NVALS(__VA_ARGS__), (tol), __LINE__)

static void release_all(GPTensor **ts, int n) {
  for (int i = 0; i < n; i++) gp_release(ts[i]);
}

#define INT_ATTR(k, x) {(k), {.kind = GP_ATTR_INT, .i = (x)}}
#define BOOL_ATTR(k, x) {(k), {.kind = GP_ATTR_BOOL, .i = (x)}}
#define FLOAT_ATTR(k, x) {(k), {.kind = GP_ATTR_FLOAT, .f = (x)}}
#define INTS_ATTR(k, ...) {(k), {.kind = GP_ATTR_INTS, .n = NDIMS(__VA_ARGS__), .ints = DIMS(__VA_ARGS__)}}

Test(norm_kernels, layer_norm_hand_computed) {
  static const int64_t xs[] = {2, 4}, vs[] = {4};
  GPTensor *in[3] = {TENSOR(GP_DT_F32, xs, VALS(1, 2, 3, 4, 2, 2, 2, 2)), TENSOR(GP_DT_F32, vs, VALS(1, 2, 1, 1)),
                     TENSOR(GP_DT_F32, vs, VALS(0, 0, 0, 1))};
  GPTensor *out = run("nn.layer_norm", NULL, 0, in, 3);
  double d = sqrt(1.25 + EPS); /* row 0: mean 2.5, variance 1.25 */
  /* row 1 is constant: variance 0, (x - mean) = 0, so only beta remains */
  EXPECT_VALS(out, 1e-6, -1.5 / d, 2 * -0.5 / d, 0.5 / d, 1.5 / d + 1, 0, 0, 0, 1);
  gp_release(out);
  /* center=False, scale=False: plain standardization */
  KV kv[] = {BOOL_ATTR("center", 0), BOOL_ATTR("scale", 0)};
  out = run("nn.layer_norm", kv, 2, in, 3);
  EXPECT_VALS(out, 1e-6, -1.5 / d, -0.5 / d, 0.5 / d, 1.5 / d, 0, 0, 0, 0);
  gp_release(out);
  release_all(in, 3);
}

/* Two-pass statistics in double: a large offset does not cancel (a one-pass float32
 * E[x^2] - E[x]^2 gives garbage here). */
Test(norm_kernels, layer_norm_large_offset) {
  static const int64_t xs[] = {1, 4}, vs[] = {4};
  GPTensor *in[3] = {TENSOR(GP_DT_F32, xs, VALS(10001, 10002, 10003, 10004)), TENSOR(GP_DT_F32, vs, VALS(1, 1, 1, 1)),
                     TENSOR(GP_DT_F32, vs, VALS(0, 0, 0, 0))};
  GPTensor *out = run("nn.layer_norm", NULL, 0, in, 3);
  double d = sqrt(1.25 + EPS);
  EXPECT_VALS(out, 1e-6, -1.5 / d, -0.5 / d, 0.5 / d, 1.5 / d);
  gp_release(out);
  release_all(in, 3);
}

Test(norm_kernels, layer_norm_float64_and_float16) {
  static const int64_t xs[] = {1, 4}, vs[] = {4};
  GPTensor *in[3] = {TENSOR(GP_DT_F64, xs, VALS(1, 2, 3, 4)), TENSOR(GP_DT_F64, vs, VALS(1, 1, 1, 1)),
                     TENSOR(GP_DT_F64, vs, VALS(0, 0, 0, 0.5))};
  GPTensor *out = run("nn.layer_norm", NULL, 0, in, 3);
  cr_assert_eq(out->dl.dtype.bits, 64);
  double d = sqrt(1.25 + EPS);
  EXPECT_VALS(out, 1e-14, -1.5 / d, -0.5 / d, 0.5 / d, 1.5 / d + 0.5);
  gp_release(out);
  release_all(in, 3);
  GPTensor *h[3] = {TENSOR(GP_DT_F16, xs, VALS(1, 2, 3, 4)), TENSOR(GP_DT_F16, vs, VALS(1, 1, 1, 1)),
                    TENSOR(GP_DT_F16, vs, VALS(0, 0, 0, 0.5))};
  out = run("nn.layer_norm", NULL, 0, h, 3);
  cr_assert_eq(out->dl.dtype.bits, 16);
  EXPECT_VALS(out, 1e-3, -1.5 / d, -0.5 / d, 0.5 / d, 1.5 / d + 0.5);
  gp_release(out);
  release_all(h, 3);
}

/* A transposed (strided) view gives what its compact copy gives. */
Test(norm_kernels, strided_input) {
  /* buffer (2, 4) row-major; the view is its transpose (4, 2): strides (1, 4) */
  static float buf[8] = {1, 2, 3, 4, 8, 6, 4, 2};
  static int64_t shape[2] = {4, 2}, strides[2] = {1, 4};
  DLManagedTensor m = {.dl_tensor = {.data = buf, .device = {kDLCPU, 0}, .ndim = 2, .dtype = GP_DT_F32,
                                     .shape = shape, .strides = strides}};
  m.deleter = NULL;
  GPTensor *view = gp_tensor_from_dlpack(&m);
  cr_assert(view, "%s", gp_error_message());
  static const int64_t vs[] = {4};
  GPTensor *g = TENSOR(GP_DT_F32, vs, VALS(1, 1, 1, 1)), *b = TENSOR(GP_DT_F32, vs, VALS(0, 0, 0, 0));
  KV kv[] = {INT_ATTR("axis", 0)};
  GPTensor *in[3] = {view, g, b};
  GPTensor *out = run("nn.layer_norm", kv, 1, in, 3);
  /* column 0 of the view is 1, 2, 3, 4; column 1 is 8, 6, 4, 2 (mean 5, variance 5) */
  double d0 = sqrt(1.25 + EPS), d1 = sqrt(5 + EPS);
  EXPECT_VALS(out, 1e-6, -1.5 / d0, 3 / d1, -0.5 / d0, 1 / d1, 0.5 / d0, -1 / d1, 1.5 / d0, -3 / d1);
  gp_release(out);
  release_all(in, 3);
}

Test(norm_kernels, instance_norm_hand_computed) {
  static const int64_t xs[] = {1, 2, 2}, vs[] = {2};
  GPTensor *in[3] = {TENSOR(GP_DT_F32, xs, VALS(1, 3, 0, 4)), TENSOR(GP_DT_F32, vs, VALS(2, 1)),
                     TENSOR(GP_DT_F32, vs, VALS(0, 0.5))};
  GPTensor *out = run("nn.instance_norm", NULL, 0, in, 3);
  /* channel 0: 1, 3 (mean 2, variance 1); channel 1: 0, 4 (mean 2, variance 4) */
  double d0 = sqrt(1 + EPS), d1 = sqrt(4 + EPS);
  EXPECT_VALS(out, 1e-6, 2 * -1 / d0, 2 * 1 / d0, -2 / d1 + 0.5, 2 / d1 + 0.5);
  gp_release(out);
  release_all(in, 3);
}

Test(norm_kernels, group_norm_hand_computed) {
  static const int64_t xs[] = {1, 4, 1}, vs[] = {4};
  GPTensor *in[3] = {TENSOR(GP_DT_F32, xs, VALS(1, 3, 5, 9)), TENSOR(GP_DT_F32, vs, VALS(1, 2, 3, 4)),
                     TENSOR(GP_DT_F32, vs, VALS(0, 0, 0, 10))};
  KV kv[] = {INT_ATTR("num_groups", 2)};
  GPTensor *out = run("nn.group_norm", kv, 1, in, 3);
  /* group 0: 1, 3 (mean 2, variance 1); group 1: 5, 9 (mean 7, variance 4) */
  double d0 = sqrt(1 + EPS), d1 = sqrt(4 + EPS);
  EXPECT_VALS(out, 1e-6, -1 / d0, 2 * 1 / d0, 3 * -2 / d1, 4 * 2 / d1 + 10);
  gp_release(out);
  release_all(in, 3);
}

/* Channel last: a group's statistics span its channels and the spatial axis. */
Test(norm_kernels, group_norm_channel_last) {
  static const int64_t xs[] = {1, 2, 4}, vs[] = {4};
  GPTensor *in[3] = {TENSOR(GP_DT_F32, xs, VALS(1, 3, 5, 9, 2, 2, 7, 7)), TENSOR(GP_DT_F32, vs, VALS(1, 1, 1, 1)),
                     TENSOR(GP_DT_F32, vs, VALS(0, 0, 0, 0))};
  KV kv[] = {INT_ATTR("num_groups", 2), INT_ATTR("axis", 2)};
  GPTensor *out = run("nn.group_norm", kv, 2, in, 3);
  /* group 0: 1, 3, 2, 2 (mean 2, variance 0.5); group 1: 5, 9, 7, 7 (mean 7, variance 2) */
  double d0 = sqrt(0.5 + EPS), d1 = sqrt(2 + EPS);
  EXPECT_VALS(out, 1e-6, -1 / d0, 1 / d0, -2 / d1, 2 / d1, 0, 0, 0, 0);
  gp_release(out);
  release_all(in, 3);
}

Test(norm_kernels, l2_normalize_hand_computed) {
  static const int64_t xs[] = {3, 2};
  GPTensor *x = TENSOR(GP_DT_F32, xs, VALS(3, 4, 0, 0, 1e-6, 0));
  KV kv[] = {FLOAT_ATTR("eps", 1e-10), INTS_ATTR("axis", 1)};
  GPTensor *out = run("nn.l2_normalize", kv, 2, &x, 1);
  /* row 0: norm 5; row 1: 0 / sqrt(1e-10); row 2: sum 1e-12 < eps, so 1e-6 / sqrt(1e-10) */
  EXPECT_VALS(out, 1e-6, 0.6, 0.8, 0, 0, 0.1, 0);
  gp_release(out);
  KV big[] = {FLOAT_ATTR("eps", 1.0), INTS_ATTR("axis", 0, 1)};
  out = run("nn.l2_normalize", big, 2, &x, 1); /* sum 25 + 1e-12 over everything: sqrt 5 */
  EXPECT_VALS(out, 1e-6, 0.6, 0.8, 0, 0, 2e-7, 0);
  gp_release(out);
  gp_release(x);
}

Test(norm_kernels, variance_hand_computed) {
  static const int64_t xs[] = {2, 4}, ms[] = {2, 1};
  GPTensor *in[2] = {TENSOR(GP_DT_F32, xs, VALS(1, 2, 3, 4, 0, 0, 0, 8)), TENSOR(GP_DT_F32, ms, VALS(2.5, 2))};
  KV kv[] = {INTS_ATTR("axis", 1), BOOL_ATTR("keepdims", 1)};
  GPTensor *out = run("variance", kv, 2, in, 2);
  cr_assert_eq(out->dl.ndim, 2);
  EXPECT_VALS(out, 1e-7, 1.25, 12); /* (4 + 4 + 4 + 36) / 4 */
  gp_release(out);
  KV ub[] = {INTS_ATTR("axis", 1), BOOL_ATTR("unbiased", 1)};
  out = run("variance", ub, 2, in, 2);
  cr_assert_eq(out->dl.ndim, 1);
  EXPECT_VALS(out, 1e-7, 5.0 / 3, 16);
  gp_release(out);
  release_all(in, 2);
}

Test(norm_kernels, integer_data_unsupported) {
  static const int64_t xs[] = {1, 2}, vs[] = {2};
  GPTensor *in[3] = {TENSOR(GP_DT_I32, xs, VALS(1, 2)), TENSOR(GP_DT_I32, vs, VALS(1, 1)),
                     TENSOR(GP_DT_I32, vs, VALS(0, 0))};
  const GPOp *op = gp_op_get("nn.layer_norm");
  GPAttrs *attrs = gp_op_attrs_new(op, 0, NULL, NULL);
  const GPType *types[3] = {NULL}, *ot;
  GPTensor *outs[1];
  int32_t nout;
  cr_assert_eq(gp_eval_op(op, attrs, 3, types, 3, in, 1, &ot, outs, 1, &nout), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_UNSUPPORTED, "%s", gp_error_message());
  cr_assert(strstr(gp_error_message(), "int32"), "%s", gp_error_message());
  gp_error_clear();
  gp_release(attrs);
  release_all(in, 3);
}
