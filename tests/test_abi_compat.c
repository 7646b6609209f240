/* test_abi_compat.c -- plugins built against the released 1.0, 1.1, 1.2, 1.3, 1.4 and 1.5 headers
 * (tests/abi/graphpass-1.<m>.h, from git history; sources tests/abi/plugin_1_<m>.c) still load
 * and run on this host: their passes run in a pipeline (instruments see them), their ops type
 * and (from 1.1) evaluate, their global functions answer, and they unload by name. */
#include "test_helpers.h"

static const GPHostAPI *H;

static void setup(void) { H = graphpass_host_api(); }
static void teardown(void) { gp_plugins_unload_all(); }

TestSuite(abi_compat, .init = setup, .fini = teardown);

static void load(int minor) {
  char rel[64];
  snprintf(rel, sizeof rel, "tests/abi/libplugin_1_%d.so", minor);
  char *p = th_path(rel);
  cr_assert_eq(H->plugin_load(p), 0, "plugin built with the 1.%d header: %s", minor, H->error_message());
  gp_free(p);
}

static int count(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
  return n;
}

static int ran;
static int count_ran(void *user, const GPPassEvent *ev) {
  (void)user;
  if (ev->ran && !strncmp(ev->pass_name, "Compat1", 7)) ran++;
  return 0;
}

Test(abi_compat, plugins_of_every_released_minor_load_and_run) {
  for (int m = 0; m <= 5; m++) load(m);
  GPPluginInfo *list;
  size_t n = gp_plugin_list(&list);
  cr_assert_eq(n, 6);
  for (size_t i = 0; i < n; i++) cr_assert_eq(GP_ABI_MINOR_OF(list[i].abi_version), i, "%s", list[i].name);
  gp_free(list);
  const char *text = "#[version = \"0.0.5\"]\n"
                     "def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {\n"
                     "  compat10.identity(compat11.identity(compat12.identity(compat13.identity(compat14.identity(compat15.identity(%x))))))\n"
                     "}\n";
  GPModule *m = H->parse(text, strlen(text), "compat.relay");
  cr_assert(m, "the old plugins' ops parse: %s", H->error_message());
  GPModule *typed = H->infer_types(m);
  cr_assert(typed, "and type: %s", H->error_message());
  GPPassContext *ctx = H->ctx_new();
  GPInstrument ins = {.struct_size = sizeof ins, .abi_version = GP_ABI_VERSION, .name = "count",
                      .after_pass = count_ran};
  cr_assert_eq(H->ctx_instrument_register(ctx, &ins), 0);
  GPModule *out = H->run_pipeline(typed, "Compat10Negate,Compat11Negate,Compat12Negate,Compat13Negate,Compat14Negate,Compat15Negate", ctx);
  cr_assert(out, "%s", H->error_message());
  GPModule *out_typed = H->infer_types(out);
  cr_assert(out_typed, "%s", H->error_message());
  gp_release(out_typed);
  cr_assert_eq(ran, 6);
  char *printed = H->print(out, 0);
  cr_assert_eq(count(printed, "negative("), 6, "%s", printed);
  H->free(printed);
  /* 1.1 and 1.2 set kernels: @main evaluates through them once the 1.0 op is gone */
  const char *text2 = "#[version = \"0.0.5\"]\n"
                      "def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {\n"
                      "  compat11.identity(compat12.identity(%x))\n"
                      "}\n";
  GPModule *m2 = H->parse(text2, strlen(text2), "compat2.relay");
  cr_assert(m2);
  GPModule *neg1 = H->run_pipeline(m2, "Compat11Negate", ctx);
  cr_assert(neg1, "%s", H->error_message());
  GPModule *neg = H->infer_types(neg1);
  cr_assert(neg, "%s", H->error_message());
  gp_release(neg1);
  int64_t shape[1] = {2};
  GPTensor *x = H->tensor_alloc((DLDataType){kDLFloat, 32, 1}, 1, shape, 1);
  ((float *)x->dl.data)[0] = 1.5f;
  ((float *)x->dl.data)[1] = -2.0f;
  GPTensor **outs = NULL;
  int32_t nout = 0;
  cr_assert_eq(H->eval_function(neg, NULL, 1, &x, &outs, &nout, NULL), 0, "%s", H->error_message());
  cr_assert_eq(nout, 1);
  cr_assert_float_eq(((float *)outs[0]->dl.data)[0], -1.5f, 0);
  cr_assert_float_eq(((float *)outs[0]->dl.data)[1], 2.0f, 0);
  gp_release(outs[0]);
  H->free(outs);
  gp_release(x);
  for (int k = 1; k <= 2; k++) {
    char name[32];
    snprintf(name, sizeof name, "compat1%d.answer", k);
    GPPackedFunc *f = H->func_get(name);
    cr_assert(f, "%s", name);
    GPAny r = {0};
    cr_assert_eq(f->call(f->self, NULL, 0, &r), 0);
    cr_assert_eq(r.v_int64, 42);
    gp_release(f);
  }
  /* unloading by name takes their passes and functions */
  for (int k = 0; k <= 2; k++) {
    char name[32];
    snprintf(name, sizeof name, "compat_1_%d", k);
    cr_assert_eq(H->plugin_unload(name), 0, "%s", H->error_message());
  }
  cr_assert_null(H->run_pipeline(m2, "Compat11Negate", ctx));
  cr_assert_eq(H->error_kind(), GP_ERR_NOT_FOUND);
  H->error_clear();
  cr_assert_null(H->func_get("compat11.answer"));
  gp_release(neg);
  gp_release(m2);
  gp_release(out);
  gp_release(typed);
  gp_release(m);
  H->ctx_free(ctx);
}

/* The standard plugin on the oldest host it accepts (1.4, without rewrite_keep): its rewriting
 * passes keep nodes by reference there and give the golden results; a 1.3 host is refused. */
Test(abi_compat, the_standard_plugin_runs_on_the_oldest_host_it_accepts) {
  gp_plugin_host_minor(3);
  char *p = th_path("plugins/libgp_std.so");
  cr_assert_neq(gp_plugin_load(p), 0, "a 1.3 host lacks the node index the plugin's passes use");
  cr_assert_eq(gp_error_kind(), GP_ERR_VERSION);
  cr_assert(strstr(gp_error_message(), "1.4 or newer (this one is 1.3)"), "%s", gp_error_message());
  gp_error_clear();
  gp_plugin_host_minor(4);
  cr_assert_eq(gp_plugin_load(p), 0, "%s", gp_error_message());
  gp_plugin_host_minor(-1);
  gp_free(p);
  static const struct {
    const char *golden, *pipeline; /* tests/data/<golden>.before.relay -> .after.relay */
  } g[] = {
      {"passes/ecse_cascade", "EliminateCommonSubexpr"},   {"passes/fold_constant_chain", "FoldConstant"},
      {"passes/fold_constant_if_true", "FoldConstant"},    {"passes/simplify_bn", "SimplifyInference"},
      {"passes/canon_ops_axis1", "CanonicalizeOps"},       {"passes/canon_cast_order", "CanonicalizeCast"},
      {"passes/dce_unused", "DeadCodeElimination"},        {"fold_scale_axis/bwd_conv", "FoldScaleAxis"},
      {"simplify_expr/adjacent_mul_add", "SimplifyExpr"},
  };
  for (size_t i = 0; i < GP_ARRAY_LEN(g); i++) {
    char before[128], after[128];
    snprintf(before, sizeof before, "tests/data/%s.before.relay", g[i].golden);
    snprintf(after, sizeof after, "tests/data/%s.after.relay", g[i].golden);
    GPPassContext *ctx = gp_ctx_new();
    cr_assert_eq(gp_ctx_set_opt_level(ctx, 3), 0);
    th_golden_ctx(before, after, g[i].pipeline, ctx);
    gp_ctx_free(ctx);
  }
}
