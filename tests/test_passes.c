/* test_passes.c -- golden before/after tests of the standard plugin's passes, run through the
 * registry exactly as `graphpass opt` runs them. */
#include "test_helpers.h"
#include "registry/registry_impl.h"

#include <sys/wait.h>

#define DATA "tests/data/passes/"

static void setup(void) { th_load_std(); }
static void teardown(void) { gp_plugins_unload_all(); }

TestSuite(passes, .init = setup, .fini = teardown);

/* Run `pipeline` with optional "key=value" configs on `before`; compare with `after`; also
 * check that the input module printed the same before and after the run, and (when @main has
 * static parameter types) that the numbers of @main did not change (th_golden). */
static void golden(const char *before, const char *after, const char *pipeline, const char *const *configs) {
  th_golden(before, after, pipeline, configs);
}

Test(passes, remove_unused_functions_seed) {
  golden(DATA "ruf_seed.before.relay", DATA "ruf_seed.after.relay", "RemoveUnusedFunctions", NULL);
}

Test(passes, remove_unused_functions_transitive) {
  golden(DATA "ruf_transitive.before.relay", DATA "ruf_transitive.after.relay", "RemoveUnusedFunctions", NULL);
}

Test(passes, remove_unused_functions_custom_entries) {
  const char *cfg[] = {"RemoveUnusedFunctions.entry_functions", "main,add_func", NULL};
  golden(DATA "ruf_seed.before.relay", DATA "ruf_seed.before.relay", "RemoveUnusedFunctions", cfg);
}

Test(passes, remove_unused_functions_missing_entry_fails) {
  GPModule *in = th_parse_file(DATA "ruf_seed.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_config(ctx, "RemoveUnusedFunctions.entry_functions", "nope"), 0);
  GPModule *out = gp_run_pipeline(in, "RemoveUnusedFunctions", ctx);
  cr_assert_null(out);
  cr_assert_eq(gp_error_kind(), GP_ERR_PASS);
  cr_assert(strstr(gp_error_message(), "RemoveUnusedFunctions"), "%s", gp_error_message());
  cr_assert(strstr(gp_error_message(), "nope"), "%s", gp_error_message());
  gp_error_clear();
  gp_release(in);
  gp_ctx_free(ctx);
}

Test(passes, dce_removes_unused_pure_bindings) {
  golden(DATA "dce_unused.before.relay", DATA "dce_unused.after.relay", "DeadCodeElimination", NULL);
}

Test(passes, dce_inline_once) {
  const char *cfg[] = {"DeadCodeElimination.inline_once", "true", NULL};
  golden(DATA "dce_unused.before.relay", DATA "dce_inline_once.after.relay", "DeadCodeElimination", cfg);
}

Test(passes, dce_keeps_impure_bindings) {
  golden(DATA "dce_impure.before.relay", DATA "dce_impure.after.relay", "DeadCodeElimination", NULL);
}

Test(passes, dce_ignore_impurity) {
  const char *cfg[] = {"DeadCodeElimination.ignore_impurity", "1", NULL};
  golden(DATA "dce_impure.before.relay", DATA "dce_impure_ignored.after.relay", "DeadCodeElimination", cfg);
}

Test(passes, dce_inside_closures) {
  golden(DATA "dce_nested.before.relay", DATA "dce_nested.after.relay", "DeadCodeElimination", NULL);
}

Test(passes, dce_output_is_typed) {
  GPModule *in = th_parse_file(DATA "dce_unused.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(in, "DeadCodeElimination", ctx);
  cr_assert(out, "%s", gp_error_message());
  const GPExpr *body = out->funcs[0]->body;
  cr_assert_not_null(body->checked_type, "DCE must leave a typed module");
  cr_assert_eq(gp_verify(out), 0, "%s", gp_error_message());
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

Test(passes, infer_type_types_every_node) {
  GPModule *in = th_parse_file(DATA "infer_block.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(in, "InferType", ctx);
  cr_assert(out, "%s", gp_error_message());
  GPExpr **order;
  size_t n;
  cr_assert_eq(gp_post_order(&out->funcs[0]->base, &order, &n), 0);
  for (size_t i = 0; i < n; i++)
    if (gp_kind(order[i]) != GP_TI_OP) cr_assert_not_null(order[i]->checked_type, "node %zu untyped", i);
  GPBuf b = {0};
  gp_type_print(&b, out->funcs[0]->body->checked_type);
  cr_assert_str_eq(b.data, "Tensor[(1, 4, 8, 8), float32]");
  gp_buf_free(&b);
  gp_free(order);
  /* the input is untouched */
  cr_assert_null(in->funcs[0]->body->checked_type);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

Test(passes, print_ir_returns_its_input) {
  GPModule *in = th_parse_file(DATA "ruf_seed.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  char *tmp = th_path("tests/print_ir_out.txt");
  remove(tmp);
  cr_assert_eq(gp_ctx_set_config(ctx, "PrintIR.file", tmp), 0, "%s", gp_error_message());
  GPModule *out = gp_run_pipeline(in, "PrintIR", ctx);
  cr_assert(out, "%s", gp_error_message());
  th_assert_module_eq(out, in);
  char *text = th_read(tmp, NULL);
  cr_assert(strstr(text, "def @add_func"), "%s", text);
  remove(tmp);
  gp_free(text);
  gp_free(tmp);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

Test(passes, default_set_of_llvm) {
  GPModule *in = th_parse_file("examples/resnet_block.relay");
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 3), 0);
  char *set = gp_opt_set_default("llvm");
  cr_assert_str_eq(set, "RemoveUnusedFunctions,Legalize,SimplifyInference,"
                        "EliminateCommonSubexpr{skip=graphpass.cse_skip_int32_cast},CombineParallelConv2D,"
                        "CombineParallelDense,CombineParallelBatchMatmul,FoldConstant,FoldScaleAxis,SimplifyExpr,"
                        "CanonicalizeCast,CanonicalizeOps,FlattenAtrousConv,InferType,AlterOpLayout,"
                        "SimplifyExprPostAlterOp,FoldConstant,FuseOps");
  gp_free(set);
  GPModule *out = gp_run_pipeline(in, NULL, ctx);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(out->num_functions, 1);
  cr_assert_null(gp_module_lookup(out, "add_func"));
  char *text = gp_print(out, 0);
  cr_assert_null(strstr(text, "nn.bias_add"), "CanonicalizeOps ran:\n%s", text);
  int prims = 0;
  for (const char *p = text; (p = strstr(p, "Primitive=1")); p++) prims++;
  /* conv+bias+relu, the dead multiply, conv+bias+add+relu, pool, global pool, flatten,
   * dense+bias, softmax */
  cr_assert_eq(prims, 8, "%s", text);
  cr_assert(strstr(text, "nn.conv2d(%p0, %p1, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]);\n"
                         "    %1 = expand_dims(%p2, axis=1, num_newaxis=2);\n"
                         "    %2 = add(%0, %1);\n"
                         "    nn.relu(%2)"),
            "the first conv, its bias and relu are one primitive function:\n%s", text);
  gp_free(text);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* A 100k-deep let chain where every other binding is dead: no stack overflow, linear. */
Test(passes, dce_long_let_chain) {
  const int n = 100000;
  GPBuf b = {0};
  gp_buf_puts(&b, "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {\n");
  gp_buf_puts(&b, "  let %v0 = negative(%x);\n");
  for (int i = 1; i < n; i++) {
    if (i % 2)
      gp_buf_printf(&b, "  let %%d%d = exp(%%v%d);\n", i, i - 1);
    else
      gp_buf_printf(&b, "  let %%v%d = negative(%%v%d);\n", i, i - 2);
  }
  gp_buf_printf(&b, "  %%v%d\n}\n", (n - 1) % 2 ? n - 2 : n - 1);
  GPModule *in = gp_parse(b.data, b.len, "chain");
  gp_buf_free(&b);
  cr_assert(in, "%s", gp_error_message());
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(in, "DeadCodeElimination", ctx);
  cr_assert(out, "%s", gp_error_message());
  int lets = 0;
  for (const GPExpr *e = out->funcs[0]->body; gp_kind(e) == GP_TI_LET; e = GP_AS(const GPLet, e)->body) lets++;
  cr_assert_eq(lets, n / 2, "expected %d live lets, got %d", n / 2, lets);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* The default set's EliminateCommonSubexpr skips casts to int32 (TVM's fskip in GetPassPrefix)
 * and still merges other equal casts. */
Test(passes, default_cse_skips_casts_to_int32) {
  static const char text[] = "#[version = \"0.0.5\"]\n"
                             "def @main(%x: Tensor[(4), float32]) {\n"
                             "  %0 = cast(%x, dtype=\"int32\");\n"
                             "  %1 = cast(%x, dtype=\"int32\");\n"
                             "  %2 = cast(%x, dtype=\"float16\");\n"
                             "  %3 = cast(%x, dtype=\"float16\");\n"
                             "  (add(%0, %1), add(%2, %3))\n"
                             "}\n";
  GPModule *in = gp_parse(text, strlen(text), "cse.relay");
  cr_assert(in, "%s", gp_error_message());
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 3), 0);
  GPModule *out = gp_run_pipeline(in, "EliminateCommonSubexpr{skip=graphpass.cse_skip_int32_cast}", ctx);
  cr_assert(out, "%s", gp_error_message());
  char *t = gp_print(out, 0);
  int i32 = 0, f16 = 0;
  for (const char *p = t; (p = strstr(p, "dtype=\"int32\"")); p++) i32++;
  for (const char *p = t; (p = strstr(p, "dtype=\"float16\"")); p++) f16++;
  cr_assert_eq(i32, 2, "both int32 casts kept:\n%s", t);
  cr_assert_eq(f16, 1, "the float16 casts merged:\n%s", t);
  gp_free(t);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}
