/* test_fuse_ops.c -- FuseOps: golden before/after tests (TVM v0.12's fusion rules, hand-derived
 * expectations in TVM's printed text), config keys, idempotence, errors and a 1M-node chain. */
#include "test_helpers.h"

#define DATA "tests/data/passes/"

static void setup(void) { th_load_std(); }
static void teardown(void) { gp_plugins_unload_all(); }

TestSuite(fuse_ops, .init = setup, .fini = teardown);

static void golden(const char *name, const char *after, const char *const *configs) {
  char before[256], want[256];
  snprintf(before, sizeof before, DATA "%s.before.relay", name);
  snprintf(want, sizeof want, DATA "%s.after.relay", after ? after : name);
  th_golden(before, want, "FuseOps", configs);
}

/* Counts the calls of Primitive functions reachable from @name, and the largest number of op
 * calls in one of them. */
static int64_t count_primitive_calls(const GPModule *m, const char *name, int64_t *largest) {
  const GPFunctionExpr *fn = gp_module_lookup(m, name);
  cr_assert_not_null(fn);
  GPExpr **order;
  size_t n;
  cr_assert_eq(gp_post_order(fn->body, &order, &n), 0, "%s", gp_error_message());
  int64_t count = 0;
  if (largest) *largest = 0;
  for (size_t i = 0; i < n; i++) {
    if (gp_kind(order[i]) != GP_TI_CALL) continue;
    const GPExpr *callee = GP_AS(const GPCall, order[i])->op;
    if (gp_kind(callee) != GP_TI_FUNCTION_EXPR) continue;
    const GPFunctionExpr *f = (const GPFunctionExpr *)callee;
    const GPAttrValue *p = f->attrs ? gp_attrs_get(f->attrs, "Primitive") : NULL;
    cr_assert(p && p->kind == GP_ATTR_INT && p->i == 1, "a fused function without Primitive=1");
    count++;
    if (largest) {
      /* op calls in the body: a body is a straight chain of calls here, walk it */
      int64_t ops = 0;
      GPExpr **inner;
      size_t ni;
      cr_assert_eq(gp_post_order(f->body, &inner, &ni), 0);
      for (size_t k = 0; k < ni; k++)
        if (gp_kind(inner[k]) == GP_TI_CALL) ops++;
      gp_free(inner);
      if (ops > *largest) *largest = ops;
    }
  }
  gp_free(order);
  return count;
}

/* ---- the seed: conv2d -> bias_add -> relu is one primitive function called once */

Test(fuse_ops, conv_bias_relu_is_one_function) {
  golden("fuse_conv_block", NULL, NULL);
  GPModule *in = th_parse_file(DATA "fuse_conv_block.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(in, "FuseOps", ctx);
  cr_assert(out, "%s", gp_error_message());
  int64_t largest;
  cr_assert_eq(count_primitive_calls(out, "main", &largest), 1);
  cr_assert_eq(largest, 3);
  cr_assert_eq(gp_verify(out), 0, "%s", gp_error_message());
  cr_assert_not_null(out->funcs[0]->body->checked_type, "FuseOps must leave a typed module");
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* TVM's fuse_opt_level follows the context: at opt level 0 every op is its own function */
Test(fuse_ops, opt_level_0_wraps_without_fusing) {
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 0), 0);
  th_golden_ctx(DATA "fuse_conv_block.before.relay", DATA "fuse_conv_block_opt0.after.relay", "FuseOps", ctx);
  gp_ctx_free(ctx);
}

/* ---- post-dominator shapes */

/* TVM's test_conv2d_fuse: a diamond after conv2d fuses into the add that joins it; the second
 * conv2d cannot join a group that already has an out-elemwise-fusable anchor */
Test(fuse_ops, diamond_and_one_anchor_per_group) { golden("fuse_diamond", NULL, NULL); }

/* a node whose consumers only meet at a tuple is not fused */
Test(fuse_ops, multi_consumer_meeting_at_a_tuple) { golden("fuse_multi_consumer", NULL, NULL); }

/* parallel injective branches (squeeze, transpose) fuse with their producer into the join */
Test(fuse_ops, multi_consumer_parallel_injective) { golden("fuse_parallel_injective", NULL, NULL); }

/* conv2d's consumers meet 5 levels down; the post-dominator pattern (broadcast: both branches
 * broadcast to a bigger shape below conv2d's direct consumers) is folded through the LCA's jump
 * pointers, so conv2d is not fused; everything else joins the final add */
Test(fuse_ops, deep_post_dominator_pattern) { golden("fuse_deep_lca", NULL, NULL); }

/* ---- tuples */

/* phase 1 fuses the tuple into concatenate, phase 2 the elemwise fields into that group */
Test(fuse_ops, tuple_feeding_concatenate) { golden("fuse_concat", NULL, NULL); }

/* TVM's test_inception_like: fields that carry a conv2d anchor stay out of the concat group */
Test(fuse_ops, anchored_fields_stay_out_of_concat) { golden("fuse_inception", NULL, NULL); }

/* split -> get-items -> elemwise -> add: one group; a group whose root is a get-item gets a
 * function too (Primitive=0 when it has no call) */
Test(fuse_ops, get_items) {
  golden("fuse_get_item", NULL, NULL);
  golden("fuse_get_item_root", NULL, NULL);
}

/* ---- reductions and broadcasts */

/* add fuses into sum (a comm-reduce sink); exp after the sum is not fused into it */
Test(fuse_ops, reduction_is_a_sink_only) { golden("fuse_reduce", NULL, NULL); }

/* conv2d whose consumer broadcasts to another shape is not an elemwise edge: conv2d stays alone,
 * the add fuses with the relu */
Test(fuse_ops, out_elemwise_then_broadcast_to_other_shape) { golden("fuse_broadcast_shape", NULL, NULL); }

/* ---- config keys */

Test(fuse_ops, max_depth_limits_groups) {
  golden("fuse_chain", NULL, NULL);
  const char *two[] = {"FuseOps.max_depth", "2", NULL};
  golden("fuse_chain", "fuse_chain_depth2", two);
  const char *three[] = {"FuseOps.max_depth", "3", NULL};
  golden("fuse_chain", "fuse_chain_depth3", three);
}

Test(fuse_ops, max_depth_in_pipeline_string) {
  th_golden(DATA "fuse_chain.before.relay", DATA "fuse_chain_depth2.after.relay", "FuseOps{max_depth=2}", NULL);
}

Test(fuse_ops, negative_max_depth_is_an_error) {
  GPModule *in = th_parse_file(DATA "fuse_chain.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_config(ctx, "FuseOps.max_depth", "-1"), 0, "%s", gp_error_message());
  GPModule *out = gp_run_pipeline(in, "FuseOps", ctx);
  cr_assert_null(out);
  cr_assert_eq(gp_error_kind(), GP_ERR_PASS);
  cr_assert(strstr(gp_error_message(), "FuseOps"), "%s", gp_error_message());
  cr_assert(strstr(gp_error_message(), "max_depth"), "%s", gp_error_message());
  gp_error_clear();
  gp_release(in);
  gp_ctx_free(ctx);
}

Test(fuse_ops, link_params) {
  golden("fuse_link_params", NULL, NULL);
  const char *cfg[] = {"FuseOps.link_params", "true", NULL};
  golden("fuse_link_params", "fuse_link_params_linked", cfg);
}

/* ---- constants, boundaries, existing functions */

/* float32 scalars fuse into the body; an int8 scalar is not a "simple" constant for TVM: it
 * becomes a parameter */
Test(fuse_ops, scalar_constants) { golden("fuse_scalar_const", NULL, NULL); }

/* a let value may be a sink (exp fuses into it) but nothing fuses across the let var or into
 * the if's branches, condition or result; a let value that also feeds an op stays a group root
 * (@shared) */
Test(fuse_ops, let_and_if_are_boundaries) { golden("fuse_let_if", NULL, NULL); }

/* an existing Primitive function (nested or global) is left alone */
Test(fuse_ops, primitive_functions_untouched) { golden("fuse_primitive", NULL, NULL); }

/* a group of reshape-only ops is marked relay.reshape_only=1 */
Test(fuse_ops, reshape_only_attribute) { golden("fuse_reshape_only", NULL, NULL); }

/* running FuseOps on its own output changes nothing (except, as in TVM, around a Primitive=0
 * function: only a non-zero Primitive attribute makes the pass leave a function alone) */
Test(fuse_ops, idempotent) {
  static const char *const names[] = {"fuse_conv_block", "fuse_diamond", "fuse_concat", "fuse_let_if",
                                      "fuse_primitive", "fuse_reshape_only"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char path[256];
    snprintf(path, sizeof path, DATA "%s.after.relay", names[i]);
    th_golden(path, path, "FuseOps", NULL);
  }
}

/* FuseOps types the nodes it builds instead of re-running InferType: every node of the output
 * has a type, and the types equal those a fresh InferType gives the untyped output */
Test(fuse_ops, output_types_equal_fresh_inference) {
  static const char *const names[] = {"fuse_conv_block", "fuse_diamond", "fuse_concat", "fuse_let_if",
                                      "fuse_get_item_root", "fuse_link_params", "fuse_scalar_const",
                                      "fuse_reshape_only", "fuse_primitive"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char path[256];
    snprintf(path, sizeof path, DATA "%s.before.relay", names[i]);
    GPModule *in = th_parse_file(path);
    GPPassContext *ctx = gp_ctx_new();
    GPModule *out = gp_run_pipeline(in, "FuseOps", ctx);
    cr_assert(out, "%s: %s", names[i], gp_error_message());
    for (int32_t f = 0; f < out->num_functions; f++) {
      GPExpr **order;
      size_t n;
      cr_assert_eq(gp_post_order(&out->funcs[f]->base, &order, &n), 0);
      for (size_t k = 0; k < n; k++)
        if (gp_kind(order[k]) != GP_TI_OP && gp_kind(order[k]) != GP_TI_GLOBAL_VAR)
          cr_assert_not_null(order[k]->checked_type, "%s: an untyped %s", names[i], gp_expr_kind_name(order[k]));
      gp_free(order);
    }
    char *got = gp_print(out, GP_PRINT_TYPES | GP_PRINT_METADATA);
    char *plain = gp_print(out, GP_PRINT_METADATA);
    GPModule *reparsed = gp_parse(plain, strlen(plain), "reparsed");
    cr_assert(reparsed, "%s: %s", names[i], gp_error_message());
    GPModule *fresh = gp_infer_types(reparsed);
    cr_assert(fresh, "%s: %s", names[i], gp_error_message());
    char *want = gp_print(fresh, GP_PRINT_TYPES | GP_PRINT_METADATA);
    cr_assert_str_eq(got, want, "%s: types differ from a fresh InferType", names[i]);
    gp_free(got);
    gp_free(plain);
    gp_free(want);
    gp_release(fresh);
    gp_release(reparsed);
    gp_release(out);
    gp_release(in);
    gp_ctx_free(ctx);
  }
}

/* ---- scale */

/* 1M-node add/relu chain: no stack overflow; groups of max_depth (256) nodes, as TVM's
 * test_fuse_max: ceil(1000000 / 256) = 3907 functions */
Test(fuse_ops, million_node_chain, .timeout = 600) {
  const long n = 1000000;
  GPBuf b = {0};
  gp_buf_puts(&b, "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {\n");
  gp_buf_puts(&b, "  %0 = add(%x, %x);\n");
  for (long i = 1; i < n; i++) {
    if (i % 2)
      gp_buf_printf(&b, "  %%%ld = nn.relu(%%%ld);\n", i, i - 1);
    else
      gp_buf_printf(&b, "  %%%ld = add(%%%ld, %%x);\n", i, i - 1);
  }
  gp_buf_printf(&b, "  %%%ld\n}\n", n - 1);
  GPModule *in = gp_parse(b.data, b.len, "chain");
  gp_buf_free(&b);
  cr_assert(in, "%s", gp_error_message());
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(in, "FuseOps", ctx);
  cr_assert(out, "%s", gp_error_message());
  int64_t largest;
  int64_t count = count_primitive_calls(out, "main", &largest);
  cr_assert_eq(count, (n + 255) / 256, "expected %ld primitive functions, got %lld", (n + 255) / 256, (long long)count);
  cr_assert_eq(largest, 256);
  /* and with a small max_depth: groups of 2 */
  cr_assert_eq(gp_ctx_set_config(ctx, "FuseOps.max_depth", "2"), 0);
  GPModule *two = gp_run_pipeline(in, "FuseOps", ctx);
  cr_assert(two, "%s", gp_error_message());
  cr_assert_eq(count_primitive_calls(two, "main", NULL), n / 2);
  gp_release(two);
  /* runs after the first reuse the scratch it freed, its arrays growing into mappings of
   * other sizes: the same input gives the same output */
  cr_assert_eq(gp_ctx_set_config(ctx, "FuseOps.max_depth", "256"), 0);
  GPModule *again = gp_run_pipeline(in, "FuseOps", ctx);
  cr_assert(again, "%s", gp_error_message());
  cr_assert(gp_module_equal(out, again), "a second run gave another output");
  gp_release(again);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}
