/* test_pass_check.c -- the checks around every pass (registry/pass_check.c, issue #18): a pass
 * that changes its input (its function table, or a node in place: TVM's immutable-module check,
 * on with the context flag or --verify-each), or returns an ill-formed module (a NULL function,
 * an unbound var), fails the run naming the pass.  Passes from tests/plugins/bad_pass_plugin.c. */
#include "test_helpers.h"

static const char k_text[] = "#[version = \"0.0.5\"]\n"
                             "def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {\n"
                             "  subtract(%x, %y)\n"
                             "}\n";

static GPModule *load(void) {
  char *p = th_path("tests/plugins/libbad_pass_plugin.so");
  cr_assert_eq(gp_plugin_load(p), 0, "%s", gp_error_message());
  gp_free(p);
  GPModule *m = gp_parse(k_text, sizeof k_text - 1, "check.relay");
  cr_assert(m, "%s", gp_error_message());
  return m;
}

/* The pipeline fails with GP_ERR_PASS and a message containing `want`. */
static void expect_fail(GPModule *m, const char *pipeline, GPPassContext *ctx, const char *want) {
  GPModule *out = gp_run_pipeline(m, pipeline, ctx);
  cr_assert_null(out, "%s was accepted", pipeline);
  cr_assert_eq(gp_error_kind(), GP_ERR_PASS, "%s", gp_error_message());
  cr_assert(strstr(gp_error_message(), want), "'%s' lacks '%s'", gp_error_message(), want);
  gp_error_clear();
}

Test(pass_check, pass_replacing_its_input_functions_is_named) {
  GPModule *m = load();
  expect_fail(m, "BadMutateInput", NULL, "pass BadMutateInput changed its input module");
  gp_release(m);
}

Test(pass_check, in_place_node_change_needs_the_immutable_check) {
  GPModule *m = load();
  uint64_t h = gp_module_hash(m);
  /* without the check the function table is intact: not noticed (the cost is two hashes) */
  GPModule *out = gp_run_pipeline(m, "BadDeepMutate", NULL);
  cr_assert(out, "%s", gp_error_message());
  gp_release(out);
  cr_assert_neq(gp_module_hash(m), h, "the pass did change its input");
  /* with the host's flag (ABI 1.3) it is reported, naming the pass */
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_host_api()->ctx_set_check_immutable(ctx, 1), 0);
  expect_fail(m, "BadDeepMutate", ctx, "pass BadDeepMutate changed its input module (its structural hash differs");
  /* verify_each implies it */
  cr_assert_eq(gp_host_api()->ctx_set_check_immutable(ctx, 0), 0);
  ctx->verify_each = true;
  expect_fail(m, "BadDeepMutate", ctx, "structural hash differs");
  /* a pass that restores what it touched is fine */
  setenv("GP_BAD_PASS_RESTORE", "1", 1);
  out = gp_run_pipeline(m, "BadDeepMutate", ctx);
  cr_assert(out, "%s", gp_error_message());
  gp_release(out);
  cr_assert_eq(gp_host_api()->ctx_set_check_immutable(NULL, 1), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_VALUE);
  gp_error_clear();
  gp_ctx_free(ctx);
  gp_release(m);
}

Test(pass_check, null_function_in_a_pass_output_is_named) {
  th_load_std();
  GPModule *m = load();
  expect_fail(m, "BadNullFunction", NULL, "pass BadNullFunction returned an ill-formed module: verify: module: @main is NULL");
  /* and a good pass before it still leaves the caller's module as it was */
  uint64_t h = gp_module_hash(m);
  expect_fail(m, "InferType,BadNullFunction", NULL, "pass BadNullFunction returned an ill-formed module");
  cr_assert_eq(gp_module_hash(m), h);
  gp_release(m);
}

Test(pass_check, unbound_var_in_a_pass_output_is_named) {
  GPModule *m = load();
  expect_fail(m, "BadUnbound", NULL, "pass BadUnbound returned an ill-formed module: verify:");
  gp_release(m);
}

Test(pass_check, module_with_a_null_function_is_refused_everywhere) {
  GPModule *m = gp_parse(k_text, sizeof k_text - 1, "check.relay");
  cr_assert(m);
  GPFunctionExpr *f = m->funcs[0];
  m->funcs[0] = NULL;
  cr_assert_eq(gp_verify(m), -1);
  cr_assert(strstr(gp_error_message(), "verify: module: @main is NULL"), "%s", gp_error_message());
  gp_error_clear();
  cr_assert_null(gp_infer_types(m));
  cr_assert(strstr(gp_error_message(), "@main is NULL"), "%s", gp_error_message());
  gp_error_clear();
  cr_assert_null(gp_run_pipeline(m, "InferType", NULL));
  cr_assert(strstr(gp_error_message(), "run pipeline: the input module: verify: module: @main is NULL"), "%s",
            gp_error_message());
  gp_error_clear();
  m->funcs[0] = f;
  gp_release(m);
}

Test(pass_check, cli_names_the_pass_and_exits_3) {
  char *plugin = th_path("tests/plugins/libbad_pass_plugin.so");
  const char *cases[][3] = {
      {"BadNullFunction", "", "pass BadNullFunction returned an ill-formed module"},
      {"BadMutateInput", "", "pass BadMutateInput changed its input module"},
      {"BadDeepMutate", "--verify-each", "pass BadDeepMutate changed its input module"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    GPBuf b = {0};
    gp_buf_printf(&b, "%s/bin/graphpass opt tests/data/pass_check/sub.relay --plugin %s --pipeline %s %s",
                  th_build_dir(), plugin, cases[i][0], cases[i][1]);
    char *out;
    int rc = th_run(b.data, &out);
    cr_assert_eq(rc, 3, "%s: exit %d: %s", b.data, rc, out);
    cr_assert(strstr(out, cases[i][2]), "%s: %s", b.data, out);
    gp_buf_free(&b);
    gp_free(out);
  }
  gp_free(plugin);
}
