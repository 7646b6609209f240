/* test_byoc.c -- the BYOC trio AnnotateTarget, MergeCompilerRegions, PartitionGraph (TVM v0.12):
 * golden before/after text for each pass (every golden run also checks the numbers when the
 * graph can be evaluated: th_golden_ctx), the region cycle, op attributes (bool, predicate,
 * wrong kind), errors, the CLI's --target-ops and --stats, input immutability, FuseOps leaving
 * external functions alone, and a long chain (no recursion). */
#include "test_helpers.h"

#define DATA "tests/data/passes/"

static const char *const k_test_ops[] = {"nn.conv2d", "add", "nn.relu", "multiply", "subtract", "concatenate"};
static const char *const k_other_ops[] = {"tanh", "multiply"};

static void set_attr(const char *op, const char *key, GPAny v) {
  cr_assert_eq(gp_op_set_attr(gp_op_find(op), key, &v, 10), 0, "%s", gp_error_message());
}
static void clear_attr(const char *op, const char *key) {
  GPAny none = {0};
  gp_op_set_attr(gp_op_find(op), key, &none, 1000);
}

static void setup(void) {
  th_load_std();
  for (size_t i = 0; i < GP_ARRAY_LEN(k_test_ops); i++) set_attr(k_test_ops[i], "target.test", gp_any_bool(true));
  for (size_t i = 0; i < GP_ARRAY_LEN(k_other_ops); i++) set_attr(k_other_ops[i], "target.other", gp_any_bool(true));
}
static void teardown(void) {
  for (size_t i = 0; i < GP_ARRAY_LEN(k_test_ops); i++) clear_attr(k_test_ops[i], "target.test");
  for (size_t i = 0; i < GP_ARRAY_LEN(k_other_ops); i++) clear_attr(k_other_ops[i], "target.other");
  gp_plugins_unload_all();
}

TestSuite(byoc, .init = setup, .fini = teardown);

static const char *targets_of(const char *name) { return strcmp(name, "two_targets") == 0 ? "test,other" : "test"; }

/* The four goldens of one graph: each pass on its own input, and the trio end to end. */
static void golden_all(const char *name) {
  char b[256], a[256], m[256], p[256];
  snprintf(b, sizeof b, DATA "byoc_%s.before.relay", name);
  snprintf(a, sizeof a, DATA "byoc_%s.annotated.relay", name);
  snprintf(m, sizeof m, DATA "byoc_%s.merged.relay", name);
  snprintf(p, sizeof p, DATA "byoc_%s.partitioned.relay", name);
  const char *cfg[] = {"AnnotateTarget.targets", targets_of(name), NULL};
  th_golden(b, a, "AnnotateTarget", cfg);
  th_golden(a, m, "MergeCompilerRegions", NULL);
  th_golden(m, p, "PartitionGraph", NULL);
  th_golden(b, p, "AnnotateTarget,MergeCompilerRegions,PartitionGraph", cfg);
}

Test(byoc, chain_fully_supported_is_one_external_function) { golden_all("chain"); }
Test(byoc, mixed_ops_multiple_outputs_tuples_and_get_items) { golden_all("mixed"); }
Test(byoc, two_targets_in_priority_order) { golden_all("two_targets"); }
Test(byoc, composite_function_calls_go_to_their_target) { golden_all("composite"); }
Test(byoc, constants_are_bound_into_external_functions) { golden_all("const"); }
/* a let-bound value ends its region and its variable is an input to each reader (TVM begins
 * the value's own target there, a region that never ends: PartitionGraph refused it) */
Test(byoc, let_bound_values_leave_their_region) { golden_all("let"); }
/* a tuple built outside a region and read inside it moves in: its fields are the external
 * function's (tensor) parameters (TVM passes the tuple, which the evaluator's runners and the
 * OPU's GenIR refuse) */
Test(byoc, tuple_read_by_a_region_moves_into_it) { golden_all("tuple_in"); }
/* regions in a branch of an if and around it stay apart, and the relu feeding the if does not
 * merge with the multiply reading the if (a cycle through the if: TVM merges both) */
Test(byoc, regions_do_not_cross_an_if) { golden_all("if"); }
/* a region read by a let's value (relu, before %v0) and an add after a later binding (%v1) stay
 * apart: merged, the region would be called before %v0 with an argument that %v1 computes
 * (fuzz_opu: "a call node is shared in a way the evaluator cannot order") */
Test(byoc, regions_do_not_span_a_let_binding) { golden_all("let_order"); }


/* A (supported) -> B (unsupported) -> C (supported), and C reads A directly: merging A and C would
 * make a cycle through B, so they stay two regions (two external functions). */
Test(byoc, region_cycle_is_not_merged) {
  golden_all("cycle");
  GPModule *in = th_parse_file(DATA "byoc_cycle.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_config(ctx, "AnnotateTarget.targets", "test"), 0);
  GPModule *out = gp_run_pipeline(in, "AnnotateTarget,MergeCompilerRegions,PartitionGraph", ctx);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(out->num_functions, 3);
  cr_assert_eq(gp_verify(out), 0, "%s", gp_error_message());
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* A supported region joined by an unsupported branch that does not read it merges with its
 * consumer (TVM: not in the consumer's restrictions); the consumer after a second unsupported
 * op does not (that op reads the merged region). */
Test(byoc, join_of_an_independent_unsupported_branch_merges) { golden_all("join"); }

/* include_non_call_ops=false (TVM's CallOpsTargetRewriter): tuples and get-items get compiler_ends
 * on their fields and no region; the partition comes out the same here. */
Test(byoc, call_ops_only_annotation) {
  const char *cfg[] = {"AnnotateTarget.targets", "test", "AnnotateTarget.include_non_call_ops", "false", NULL};
  th_golden(DATA "byoc_mixed.before.relay", DATA "byoc_mixed.callops.annotated.relay", "AnnotateTarget", cfg);
  th_golden(DATA "byoc_mixed.before.relay", DATA "byoc_mixed.partitioned.relay",
            "AnnotateTarget,MergeCompilerRegions,PartitionGraph", cfg);
}

/* PartitionGraph with bind_constants=false passes the constant as an argument. */
Test(byoc, bind_constants_off_passes_constants) {
  GPModule *in = th_parse_file(DATA "byoc_const.merged.relay");
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_config(ctx, "PartitionGraph.bind_constants", "false"), 0);
  GPModule *out = gp_run_pipeline(in, "PartitionGraph", ctx);
  cr_assert(out, "%s", gp_error_message());
  const GPFunctionExpr *f = gp_module_lookup(out, "tvmgen_default_test_main_0");
  cr_assert_not_null(f);
  cr_assert_eq(f->nparams, 2);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* The external functions' attributes are TVM's. */
Test(byoc, external_function_attributes) {
  GPModule *in = th_parse_file(DATA "byoc_chain.merged.relay");
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_config(ctx, "PartitionGraph.mod_name", "my-mod"), 0);
  GPModule *out = gp_run_pipeline(in, "PartitionGraph", ctx);
  cr_assert(out, "%s", gp_error_message());
  const GPFunctionExpr *f = gp_module_lookup(out, "tvmgen_my_mod_test_main_0");
  cr_assert_not_null(f, "%s", gp_print(out, 0));
  const GPAttrValue *v = gp_attrs_get(f->attrs, "Compiler");
  cr_assert(v && v->kind == GP_ATTR_STR && !strcmp(v->s, "test"));
  v = gp_attrs_get(f->attrs, "global_symbol");
  cr_assert(v && v->kind == GP_ATTR_STR && !strcmp(v->s, "tvmgen_my_mod_test_main_0"));
  v = gp_attrs_get(f->attrs, "Primitive");
  cr_assert(v && v->kind == GP_ATTR_INT && v->i == 1);
  v = gp_attrs_get(f->attrs, "Inline");
  cr_assert(v && v->kind == GP_ATTR_INT && v->i == 1);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* Standard passes skip functions with a Compiler attribute: FuseOps fuses nothing inside them. */
Test(byoc, fuse_ops_leaves_external_functions_alone) {
  GPModule *in = th_parse_file(DATA "byoc_mixed.partitioned.relay");
  GPModule *typed = gp_infer_types(in);
  cr_assert(typed, "%s", gp_error_message());
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(typed, "FuseOps", ctx);
  cr_assert(out, "%s", gp_error_message());
  const char *ext = "tvmgen_default_test_main_0";
  cr_assert_eq(gp_module_lookup(out, ext), gp_module_lookup(typed, ext), "FuseOps rewrote the external function");
  gp_release(out);
  gp_release(typed);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* ---- predicates and op attributes */

static int pred_true(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  cr_assert_eq(nargs, 1);
  cr_assert_eq(args[0].type_index, GP_TI_CALL);
  *result = gp_any_bool(true);
  return 0;
}
static int pred_fail(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self, (void)args, (void)nargs, (void)result;
  gp_error_set(GP_ERR_VALUE, "layout not supported");
  return -1;
}

static void set_pred(const char *op, const char *key, GPPackedCFunc fn) {
  GPPackedFunc *f = gp_func_new(NULL, fn, NULL);
  GPAny v = {.type_index = GP_TI_FUNCTION, .v_obj = (GPObject *)f};
  set_attr(op, key, v);
  gp_release(f);
}

/* A predicate that returns true supports the call like a bool attribute. */
Test(byoc, predicate_attribute_supports_the_call) {
  set_pred("nn.relu", "target.pred", pred_true);
  set_pred("add", "target.pred", pred_true);
  GPModule *in = th_parse_file(DATA "byoc_cycle.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_config(ctx, "AnnotateTarget.targets", "pred"), 0);
  GPModule *out = gp_run_pipeline(in, "AnnotateTarget,MergeCompilerRegions,PartitionGraph", ctx);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_not_null(gp_module_lookup(out, "tvmgen_default_pred_main_0"));
  cr_assert_not_null(gp_module_lookup(out, "tvmgen_default_pred_main_1"));
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
  clear_attr("nn.relu", "target.pred");
  clear_attr("add", "target.pred");
}

static int pred_false(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self, (void)args, (void)nargs;
  *result = gp_any_bool(false);
  return 0;
}

/* --explain counts the calls a predicate refused that stay on the host, with where the first
 * is; a call one target refuses and a later one takes is not among them. */
Test(byoc, explain_names_refused_calls_left_on_the_host) {
  set_pred("nn.relu", "target.no", pred_false);
  set_pred("add", "target.no", pred_false);
  set_pred("add", "target.yes", pred_true);
  GPModule *in = th_parse_file(DATA "byoc_cycle.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_config(ctx, "AnnotateTarget.targets", "no,yes"), 0);
  GPModule *out = NULL;
  char *buf = th_explain(in, "AnnotateTarget", ctx, &out);
  cr_assert(out, "%s", gp_error_message());
  cr_expect(strstr(buf, "1 calls stay on the host, their target's predicate refused them") &&
                strstr(buf, "nn.relu: 1 (target no; the first at " DATA "byoc_cycle.before.relay:3:8)") &&
                !strstr(buf, "add: 1"),
            "%s", buf);
  gp_free(buf);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
  clear_attr("nn.relu", "target.no");
  clear_attr("add", "target.no");
  clear_attr("add", "target.yes");
}

/* A target of the target registry (ABI 1.2) supports the ops it has kernels for, without op
 * attributes, and is a known target. */
Test(byoc, registered_target_kernels_support_the_call) {
  static const char *const kernels[] = {"nn.relu", "add"};
  GPTargetInfo ti = {.struct_size = sizeof ti, .abi_version = GP_ABI_VERSION, .name = "reg",
                     .kernels = kernels, .num_kernels = 2};
  cr_assert_eq(gp_target_register(&ti, false, "host"), 0, "%s", gp_error_message());
  GPModule *in = th_parse_file(DATA "byoc_cycle.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_config(ctx, "AnnotateTarget.targets", "reg"), 0);
  GPModule *out = gp_run_pipeline(in, "AnnotateTarget,MergeCompilerRegions,PartitionGraph", ctx);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_not_null(gp_module_lookup(out, "tvmgen_default_reg_main_0"));
  cr_assert_not_null(gp_module_lookup(out, "tvmgen_default_reg_main_1"));
  gp_release(out);
  /* registered without kernels the module uses: known, nothing annotated, no error */
  cr_assert_eq(gp_target_unregister("reg"), 0);
  ti.num_kernels = 0;
  ti.kernels = NULL;
  cr_assert_eq(gp_target_register(&ti, false, "host"), 0, "%s", gp_error_message());
  out = gp_run_pipeline(in, "AnnotateTarget,MergeCompilerRegions,PartitionGraph", ctx);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_null(gp_module_lookup(out, "tvmgen_default_reg_main_0"));
  gp_release(out);
  cr_assert_eq(gp_target_unregister("reg"), 0);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* Runs `pipeline` on `file` expecting a failure whose message holds every one of `parts`; checks
 * that the input module is unchanged. */
static void expect_error(const char *file, const char *pipeline, const char *targets, const char *const *parts) {
  GPModule *in = th_parse_file(file);
  char *before = th_text_before(in);
  GPPassContext *ctx = gp_ctx_new();
  if (targets) cr_assert_eq(gp_ctx_set_config(ctx, "AnnotateTarget.targets", targets), 0, "%s", gp_error_message());
  GPModule *out = gp_run_pipeline(in, pipeline, ctx);
  cr_assert_null(out, "%s should fail on %s", pipeline, file);
  const char *msg = gp_error_message();
  for (const char *const *p = parts; *p; p++) cr_assert(strstr(msg, *p), "'%s' not in: %s", *p, msg);
  gp_error_clear();
  th_assert_unchanged(in, before, "a failing pass changed its input");
  gp_release(in);
  gp_ctx_free(ctx);
}

Test(byoc, failing_predicate_names_pass_op_and_node) {
  set_pred("nn.relu", "target.pred", pred_fail);
  const char *parts[] = {"AnnotateTarget", "target.pred", "nn.relu", DATA "byoc_cycle.before.relay:3:", "layout not supported", NULL};
  expect_error(DATA "byoc_cycle.before.relay", "AnnotateTarget", "pred", parts);
  clear_attr("nn.relu", "target.pred");
}

Test(byoc, attribute_of_the_wrong_kind_is_an_error) {
  set_attr("nn.relu", "target.bad", gp_any_int(3));
  const char *parts[] = {"AnnotateTarget", "target.bad", "nn.relu", "an int (3)", "expected a bool or a packed function",
                         DATA "byoc_cycle.before.relay:3:", NULL};
  expect_error(DATA "byoc_cycle.before.relay", "AnnotateTarget", "bad", parts);
  clear_attr("nn.relu", "target.bad");
}

Test(byoc, unknown_target_in_config) {
  const char *parts[] = {"AnnotateTarget", "unknown target 'nosuch'", "AnnotateTarget.targets", NULL};
  expect_error(DATA "byoc_cycle.before.relay", "AnnotateTarget", "test,nosuch", parts);
}

Test(byoc, empty_targets_config) {
  const char *parts[] = {"AnnotateTarget", "AnnotateTarget.targets is empty", NULL};
  expect_error(DATA "byoc_cycle.before.relay", "AnnotateTarget", NULL, parts);
  const char *parts2[] = {"AnnotateTarget", "not a name", NULL};
  expect_error(DATA "byoc_cycle.before.relay", "AnnotateTarget", "te st", parts2);
}

Test(byoc, compiler_end_without_region_names_pass_and_node) {
  const char *parts[] = {"MergeCompilerRegions", "compiler_end", DATA "byoc_bad_end.relay:3:", NULL};
  expect_error(DATA "byoc_bad_end.relay", "MergeCompilerRegions", NULL, parts);
  const char *parts2[] = {"PartitionGraph", "compiler_end", DATA "byoc_bad_end.relay:3:", NULL};
  expect_error(DATA "byoc_bad_end.relay", "PartitionGraph", NULL, parts2);
}

/* hand-written annotations whose region spans an if: PartitionGraph names the node (it had
 * failed with "NULL expression") */
Test(byoc, region_across_an_if_is_an_error) {
  const char *parts[] = {"PartitionGraph", "both sides of an if", DATA "byoc_bad_if.relay:6:", NULL};
  expect_error(DATA "byoc_bad_if.relay", "PartitionGraph", NULL, parts);
}

/* Annotating twice changes nothing the second time (existing annotations are kept). */
Test(byoc, annotate_twice_is_stable) {
  static const char *const names[] = {"chain", "mixed", "cycle", "two_targets", "composite", "const", "join"};
  for (size_t i = 0; i < GP_ARRAY_LEN(names); i++) {
    char a[256];
    snprintf(a, sizeof a, DATA "byoc_%s.annotated.relay", names[i]);
    const char *cfg[] = {"AnnotateTarget.targets", targets_of(names[i]), NULL};
    th_golden(a, a, "AnnotateTarget", cfg);
  }
}

/* The trio on its own output changes nothing: external functions are skipped (and make their
 * target known), what is left in @main is unsupported. */
Test(byoc, partitioning_twice_changes_nothing) {
  const char *cfg[] = {"AnnotateTarget.targets", "test", NULL};
  th_golden(DATA "byoc_mixed.partitioned.relay", DATA "byoc_mixed.partitioned.relay",
            "AnnotateTarget,MergeCompilerRegions,PartitionGraph", cfg);
}

/* ---- long graphs: no recursion, one region per run of supported ops */

static GPModule *alternating_chain(int64_t n, int64_t period) {
  GPBuf b = {0};
  gp_buf_printf(&b, "#[version = \"0.0.5\"]\ndef @main(%%x: Tensor[(1, 4), float32]) -> Tensor[(1, 4), float32] {\n");
  gp_buf_printf(&b, "  %%0 = nn.relu(%%x);\n");
  for (int64_t i = 1; i < n; i++)
    gp_buf_printf(&b, "  %%%lld = %s(%%%lld);\n", (long long)i, i % period == 0 ? "tanh" : "nn.relu", (long long)(i - 1));
  gp_buf_printf(&b, "  %%%lld\n}\n", (long long)(n - 1));
  GPModule *m = gp_parse(b.data, b.len, "chain");
  gp_buf_free(&b);
  cr_assert(m, "%s", gp_error_message());
  return m;
}

Test(byoc, long_alternating_chain) {
  const int64_t n = 200000, period = 10;
  GPModule *in = alternating_chain(n, period);
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_config(ctx, "AnnotateTarget.targets", "test"), 0);
  GPModule *out = gp_run_pipeline(in, "AnnotateTarget,MergeCompilerRegions,PartitionGraph", ctx);
  cr_assert(out, "%s", gp_error_message());
  /* runs of 9 relus between tanhs: one external function each (the first run has 10) */
  cr_assert_eq(out->num_functions, 1 + n / period, "%d functions", (int)out->num_functions);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

Test(byoc, long_supported_chain_is_one_region) {
  const int64_t n = 200000;
  GPModule *in = alternating_chain(n, n + 1);
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_config(ctx, "AnnotateTarget.targets", "test"), 0);
  GPModule *out = gp_run_pipeline(in, "AnnotateTarget,MergeCompilerRegions,PartitionGraph", ctx);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(out->num_functions, 2);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* Modules index their names from 32 functions on (PartitionGraph adds one per region): lookups,
 * overrides and copies stay right across the switch. */
Test(byoc, module_name_index) {
  GPModule *m = gp_module_new("idx");
  GPVar *x = gp_var_new("x", NULL);
  GPFunctionExpr *f = gp_function_new(1, &x, &x->base, NULL, NULL);
  char name[32];
  for (int i = 0; i < 100; i++) {
    snprintf(name, sizeof name, "f%d", i);
    cr_assert_eq(gp_module_add(m, name, f, false), 0);
    cr_assert_eq(gp_module_find(m, name), i);
    cr_assert_eq(gp_module_find(m, "f0"), 0);
  }
  cr_assert_eq(gp_module_find(m, "nosuch"), -1);
  cr_assert_neq(gp_module_add(m, "f50", f, false), 0, "a duplicate name must be refused");
  gp_error_clear();
  cr_assert_eq(gp_module_add(m, "f50", f, true), 0);
  cr_assert_eq(gp_module_find(m, "f50"), 50);
  GPModule *c = gp_module_copy(m);
  for (int i = 0; i < 100; i++) {
    snprintf(name, sizeof name, "f%d", i);
    cr_assert_eq(gp_module_find(c, name), i);
  }
  cr_assert_eq(gp_module_add(c, "g", f, false), 0);
  cr_assert_eq(gp_module_find(c, "g"), 100);
  cr_assert_eq(gp_module_find(m, "g"), -1);
  gp_release(c);
  gp_release(m);
  gp_release(f);
  gp_release(x);
}

/* ---- the command line */

static int run_cli(const char *args, char **out) {
  GPBuf b = {0};
  gp_buf_printf(&b, "%s/bin/graphpass %s", th_build_dir(), args);
  int rc = th_run(b.data, out);
  gp_buf_free(&b);
  return rc;
}

Test(byoc, cli_target_ops_and_external_stats) {
  char *out;
  int rc = run_cli("opt " DATA "byoc_two_targets.before.relay --pipeline AnnotateTarget,MergeCompilerRegions,PartitionGraph "
                   "--target-ops test=add,multiply --target-ops other=tanh --verify-numerics --stats",
                   &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "stat external:other 2\n"), "%s", out);
  cr_assert(strstr(out, "stat external:test 2\n"), "%s", out);
  cr_assert(strstr(out, "Compiler=\"other\""), "%s", out);
  gp_free(out);
  /* --config AnnotateTarget.targets wins over the names of --target-ops */
  rc = run_cli("opt " DATA "byoc_two_targets.before.relay --pipeline AnnotateTarget,MergeCompilerRegions,PartitionGraph "
               "--target-ops test=add,multiply --target-ops other=tanh --config AnnotateTarget.targets=other --stats",
               &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "stat external:other 2\n"), "%s", out);
  cr_assert_null(strstr(out, "stat external:test"), "%s", out);
  gp_free(out);
}

Test(byoc, cli_bad_target_ops_values) {
  struct {
    const char *value, *want;
  } cases[] = {
      {"test", "--target-ops 'test': expected NAME=op,op,... (no '=')"},
      {"test=", "--target-ops 'test=': the op list after '=' is empty"},
      {"=add", "--target-ops '=add': the target NAME before '=' is empty"},
      {"test=add,nn.nosuch", "--target-ops 'test=add,nn.nosuch': unknown op 'nn.nosuch'"},
      {"test=add,,tanh", "--target-ops 'test=add,,tanh': an empty op name in the list"},
      {"te/st=add", "--target-ops 'te/st=add': target 'te/st' is not a name"},
  };
  for (size_t i = 0; i < GP_ARRAY_LEN(cases); i++) {
    char args[512], *out;
    snprintf(args, sizeof args, "opt " DATA "byoc_chain.before.relay --pipeline AnnotateTarget --target-ops '%s'",
             cases[i].value);
    int rc = run_cli(args, &out);
    cr_expect_eq(rc, 2, "%s: exit %d: %s", cases[i].value, rc, out);
    cr_expect(strstr(out, cases[i].want), "%s: %s", cases[i].value, out);
    gp_free(out);
  }
}
