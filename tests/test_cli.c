/* test_cli.c -- the `graphpass` command and the embedding example, run as a user runs them. */
#include "test_helpers.h"

static char *cmd(const char *fmt, const char *a) {
  GPBuf b = {0};
  gp_buf_printf(&b, "%s/bin/graphpass ", th_build_dir());
  gp_buf_printf(&b, fmt, a, a, a);
  return gp_buf_take(&b);
}

static int run(const char *fmt, const char *arg, char **out) {
  char *c = cmd(fmt, arg ? arg : "");
  int rc = th_run(c, out);
  gp_free(c);
  return rc;
}

Test(cli, opt_on_the_bundled_example_with_stats) {
  char *out;
  int rc = run("opt examples/resnet_block.relay --opt-level 3 --stats", NULL, &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "stat functions 1\n"), "%s", out);
  cr_assert(strstr(out, "stat op:nn.conv2d 2\n"), "%s", out);
  cr_assert(strstr(out, "stat primitive_functions 8\n"), "%s", out);
  cr_assert_null(strstr(out, "stat op:nn.bias_add"), "%s", out);
  cr_assert(strstr(out, "stat calls "), "%s", out);
  cr_assert_null(strstr(out, "@add_func"), "%s", out);
  gp_free(out);
}

Test(cli, output_reparses_to_the_same_module) {
  char *out;
  char *tmp = th_path("tests/cli_out.relay");
  int rc = run("opt examples/resnet_block.relay -o %s", tmp, &out);
  cr_assert_eq(rc, 0, "%s", out);
  gp_free(out);
  GPModule *a = th_parse_file(tmp);
  GPBuf b = {0};
  gp_buf_printf(&b, "opt %s --pipeline PrintIR{show_types=false} --config PrintIR.file=/dev/null", tmp);
  rc = run("%s", b.data, &out);
  gp_buf_free(&b);
  cr_assert_eq(rc, 0, "%s", out);
  GPModule *c = gp_parse(out, strlen(out), "stdout");
  cr_assert(c, "%s\n%s", gp_error_message(), out);
  th_assert_module_eq(c, a);
  gp_release(a);
  gp_release(c);
  remove(tmp);
  gp_free(tmp);
  gp_free(out);
}

Test(cli, parse_error_has_location_and_exit_1) {
  char *out;
  int rc = run("opt tests/data/passes/../../../README.md", NULL, &out);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "README.md:1:1: error:") || strstr(out, "README.md:"), "%s", out);
  gp_free(out);
  rc = run("opt /nonexistent.relay", NULL, &out);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "/nonexistent.relay"), "%s", out);
  gp_free(out);
}

Test(cli, usage_errors_exit_2) {
  char *out;
  cr_assert_eq(run("opt", NULL, &out), 2, "%s", out);
  gp_free(out);
  cr_assert_eq(run("opt examples/resnet_block.relay --bogus", NULL, &out), 2, "%s", out);
  gp_free(out);
  cr_assert_eq(run("opt examples/resnet_block.relay --pipeline NoSuchPass", NULL, &out), 2, "%s", out);
  cr_assert(strstr(out, "NoSuchPass"), "%s", out);
  gp_free(out);
  cr_assert_eq(run("opt examples/resnet_block.relay --config Nope.key=1", NULL, &out), 2, "%s", out);
  cr_assert(strstr(out, "DeadCodeElimination.inline_once"), "valid keys should be listed: %s", out);
  gp_free(out);
  cr_assert_eq(run("frobnicate", NULL, &out), 2, "%s", out);
  gp_free(out);
}

Test(cli, pass_failure_exit_3_names_the_pass) {
  char *out;
  int rc = run("opt examples/resnet_block.relay --pipeline RemoveUnusedFunctions "
               "--config RemoveUnusedFunctions.entry_functions=nope",
               NULL, &out);
  cr_assert_eq(rc, 3, "%s", out);
  cr_assert(strstr(out, "RemoveUnusedFunctions"), "%s", out);
  gp_free(out);
}

/* Bad input is exit 1 with its location whichever stage finds it: the parser, InferType (the
 * user's module does not type-check: reported with InferType's file:line:col, not as the pass
 * that met it), or the ONNX importer (its per-node inference). */
Test(cli, type_errors_in_the_input_are_bad_input_exit_1) {
  static const char *const cases[][2] = {
      {"opt tests/data/cli/type_error.relay", "tests/data/cli/type_error.relay:3:3: error: in @main: add: shapes (2) of lhs"},
      {"opt tests/data/cli/type_error.relay --pipeline FuseOps,InferType", "type_error.relay:3:3: error: in @main: add:"},
      {"opt tests/data/cli/type_error.relay --opt-level 3 --verify-each", "type_error.relay:3:3: error: in @main: add:"},
      {"eval tests/data/cli/type_error.relay --random-inputs 1", "type_error.relay:3:3: error: in @main: add:"},
      {"opt tests/data/repro/relay/manual_reshape_dim_mul_overflow.relay",
       "manual_reshape_dim_mul_overflow.relay:3:3: error: in @main: reshape:"},
      {"opt tests/data/repro/onnx/attention_past_key_oob.min.onnx", "node 'Y' (Attention, opset 24): past_key"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *out;
    int rc = run("%s", cases[i][0], &out);
    cr_assert_eq(rc, 1, "%s: exit %d: %s", cases[i][0], rc, out);
    cr_assert(strstr(out, cases[i][1]), "%s: %s", cases[i][0], out);
    cr_assert_null(strstr(out, "pass InferType"), "%s: reported as a pass failure: %s", cases[i][0], out);
    gp_free(out);
  }
}

Test(cli, explain_and_time_passes) {
  char *out;
  int rc = run("opt examples/resnet_block.relay --explain --time-passes -o /dev/null", NULL, &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "explain: InferType: ran (required by Legalize)"), "%s", out);
  cr_assert(strstr(out, "explain: FuseOps: ran"), "%s", out);
  cr_assert(strstr(out, "explain: CanonicalizeOps: skipped (opt-level 3 > context opt-level 2)"), "%s", out);
  cr_assert(strstr(out, "\tFuseOps: "), "the timing tree lists FuseOps: %s", out);
  gp_free(out);
  rc = run("opt examples/resnet_block.relay --explain --opt-level 0 -o /dev/null", NULL, &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "explain: RemoveUnusedFunctions: skipped"), "%s", out);
  gp_free(out);
}

Test(cli, passes_lists_the_standard_plugin) {
  char *out;
  int rc = run("passes --target llvm", NULL, &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "DeadCodeElimination"), "%s", out);
  cr_assert(strstr(out, "InferType"), "%s", out);
  cr_assert(strstr(out, " std"), "origin plugin should be listed: %s", out);
  cr_assert(strstr(out, "default set for llvm: "), "%s", out);
  gp_free(out);
}

Test(cli, out_of_tree_plugin_runs_after_its_requirement) {
  char *plugin = th_path("tests/plugins/libext_plugin.so");
  char *out;
  GPBuf b = {0};
  gp_buf_printf(&b, "opt examples/resnet_block.relay --plugin %s --pipeline ExtCountCalls --explain -o /dev/null",
                plugin);
  int rc = run("%s", b.data, &out);
  gp_buf_free(&b);
  cr_assert_eq(rc, 0, "%s", out);
  const char *infer = strstr(out, "explain: InferType: ran");
  const char *ext = strstr(out, "explain: ExtCountCalls: ran");
  cr_assert(infer && ext && infer < ext, "InferType must run before ExtCountCalls:\n%s", out);
  cr_assert(strstr(out, "ExtCountCalls: "), "%s", out);
  gp_free(out);
  gp_free(plugin);
}

Test(cli, dependency_cycle_is_a_registry_error_exit_1) {
  char *plugin = th_path("tests/plugins/libext_plugin.so");
  setenv("GP_EXT_PLUGIN_CYCLE", "1", 1);
  GPBuf b = {0};
  gp_buf_printf(&b, "opt examples/resnet_block.relay --plugin %s --pipeline ExtCycleA -o /dev/null", plugin);
  char *out;
  cr_assert_eq(run("%s", b.data, &out), 1, "%s", out);
  cr_assert(strstr(out, "dependency cycle between passes: ExtCycleA -> ExtCycleB -> ExtCycleA"), "%s", out);
  gp_free(out);
  gp_buf_free(&b);
  gp_free(plugin);
}

Test(cli, unknown_disable_and_bad_opt_level_are_usage_errors) {
  char *out;
  cr_assert_eq(run("opt examples/resnet_block.relay --disable NoSuchPass -o /dev/null", NULL, &out), 2, "%s", out);
  cr_assert(strstr(out, "no pass named NoSuchPass is registered; load its plugin first"), "%s", out);
  gp_free(out);
  cr_assert_eq(run("opt examples/resnet_block.relay --opt-level 7 -o /dev/null", NULL, &out), 2, "%s", out);
  cr_assert(strstr(out, "opt level 7 is above the highest level 4"), "%s", out);
  gp_free(out);
}

Test(cli, plugin_of_another_major_is_refused) {
  char *plugin = th_path("tests/plugins/libext_plugin_major2.so");
  char *out;
  GPBuf b = {0};
  gp_buf_printf(&b, "passes --plugin %s", plugin);
  int rc = run("%s", b.data, &out);
  gp_buf_free(&b);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "2.0") && strstr(out, "1.0"), "message must name both versions: %s", out);
  gp_free(out);
  gp_free(plugin);
}

Test(cli, embedding_example) {
  GPBuf b = {0};
  gp_buf_printf(&b, "%s/bin/embed %s/plugins/libgp_std.so", th_build_dir(), th_build_dir());
  char *out;
  int rc = th_run(b.data, &out);
  gp_buf_free(&b);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "functions: 1"), "%s", out);
  cr_assert_null(strstr(out, "%dead"), "%s", out);
  gp_free(out);
}

Test(cli, targets_lists_sets_and_kernels) {
  char *plugin = th_path("tests/plugins/libext_plugin.so");
  char *out;
  GPBuf b = {0};
  gp_buf_printf(&b, "targets --plugin %s", plugin);
  int rc = run("%s", b.data, &out);
  gp_buf_free(&b);
  cr_assert_eq(rc, 0, "%s", out);
  /* one block per target, sorted by name, blank line between */
  cr_assert(strstr(out, "target ext_npu (plugin ext_plugin)\n"
                        "  a test accelerator (ext_plugin)\n"
                        "  optimization sets: none\n"
                        "  kernels:\n"
                        "    ops: nn.dense\n"
                        "    composites: fc, fc_int8\n"
                        "\n"
                        "target llvm (plugin std)\n"),
            "%s", out);
  cr_assert(strstr(out, "  optimization sets:\n    default (runs by default): RemoveUnusedFunctions,"), "%s", out);
  cr_assert(strstr(out, "  kernels:\n    ops: all ops\n"
                        "    composites: conv2d_leaky_relu, conv2d_relu, conv2d_relu6, fc, fc_relu\n"),
            "%s", out);
  gp_free(out);

  rc = run("targets --no-default-plugins", NULL, &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert_str_eq(out, "no targets (load a plugin that registers one)\n");
  gp_free(out);
  rc = run("targets --bogus", NULL, &out);
  cr_assert_eq(rc, 2, "%s", out);
  cr_assert(strstr(out, "targets: unexpected argument '--bogus'"), "%s", out);
  gp_free(out);
  rc = run("targets --plugin", NULL, &out);
  cr_assert_eq(rc, 2, "%s", out);
  cr_assert(strstr(out, "targets: --plugin needs a value"), "%s", out);
  gp_free(out);
  gp_free(plugin);
}

Test(cli, kernel_bound_pass_explained_and_filtered) {
  char *plugin = th_path("tests/plugins/libext_plugin.so");
  char *out;
  GPBuf b = {0};
  gp_buf_printf(&b, "opt examples/resnet_block.relay --plugin %s --pipeline ExtFcFuse,ExtOldMinor --explain -o /dev/null",
                plugin);
  int rc = run("%s", b.data, &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "explain: ExtFcFuse: skipped (target 'llvm' has no kernel 'fc_int8')\n"
                        "explain: ExtOldMinor: ran\n"),
            "%s", out);
  gp_free(out);
  gp_buf_puts(&b, " --target ext_npu");
  rc = run("%s", b.data, &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "explain: ExtFcFuse: ran\n"), "%s", out);
  gp_free(out);
  /* `passes --target` lists only what runs there */
  b.len = 0;
  gp_buf_printf(&b, "passes --plugin %s --target ext_npu", plugin);
  rc = run("%s", b.data, &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "all,kernels:fc,fc_int8"), "%s", out);
  gp_free(out);
  b.len = 0;
  gp_buf_printf(&b, "passes --plugin %s --target llvm", plugin);
  rc = run("%s", b.data, &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert_null(strstr(out, "ExtFcFuse"), "%s", out);
  cr_assert(strstr(out, "ExtOldMinor"), "%s", out);
  gp_free(out);
  gp_buf_free(&b);
  gp_free(plugin);
}

Test(cli, opt_set_chooses_a_targets_set) {
  char *plugin = th_path("tests/plugins/libext_plugin.so");
  char *out;
  GPBuf b = {0};
  /* with GP_EXT_PLUGIN_EXTRAS the test plugin registers llvm's set "ext_set" = ExtFcFuse */
  gp_buf_printf(&b, "env GP_EXT_PLUGIN_EXTRAS=1 %s/bin/graphpass opt examples/resnet_block.relay --plugin %s "
                    "--opt-set ext_set --explain -o /dev/null",
                th_build_dir(), plugin);
  int rc = th_run(b.data, &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "explain: ExtFcFuse: skipped (target 'llvm' has no kernel 'fc_int8')\n"), "%s", out);
  cr_assert_null(strstr(out, "explain: FuseOps"), "only the set's passes run: %s", out);
  gp_free(out);
  /* the default set by name is the same as none */
  rc = run("opt examples/resnet_block.relay --opt-set default --explain -o /dev/null", NULL, &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "explain: FuseOps: ran"), "%s", out);
  gp_free(out);
  /* an unknown set: a usage error listing the target's sets */
  rc = run("opt examples/resnet_block.relay --opt-set fast -o /dev/null", NULL, &out);
  cr_assert_eq(rc, 2, "%s", out);
  cr_assert(strstr(out, "graphpass: error: target 'llvm' has no optimization set 'fast' (sets: default)"), "%s", out);
  gp_free(out);
  rc = run("opt examples/resnet_block.relay --opt-set default --pipeline FuseOps -o /dev/null", NULL, &out);
  cr_assert_eq(rc, 2, "%s", out);
  cr_assert(strstr(out, "--opt-set default and --pipeline both say what to run"), "%s", out);
  gp_free(out);
  rc = run("opt examples/resnet_block.relay --opt-set", NULL, &out);
  cr_assert_eq(rc, 2, "%s", out);
  cr_assert(strstr(out, "opt: --opt-set needs a value"), "%s", out);
  gp_free(out);
  gp_buf_free(&b);
  gp_free(plugin);
}

Test(cli, explain_and_time_passes_are_instruments) {
  char *out;
  int rc = run("opt examples/resnet_block.relay --pipeline FoldConstant,CanonicalizeOps,FuseOps --explain "
               "--time-passes -o /dev/null",
               NULL, &out);
  cr_assert_eq(rc, 0, "%s", out);
  /* one line per planned item, in order, skipped ones included; the report after the run */
  const char *fc = strstr(out, "explain: FoldConstant: ran\n");
  const char *co = strstr(out, "explain: CanonicalizeOps: skipped (opt-level 3 > context opt-level 2)\n");
  const char *it = strstr(out, "explain: InferType: ran (required by FuseOps)\n");
  const char *fo = strstr(out, "explain: FuseOps: ran\n");
  const char *rep = strstr(out, "pipeline: ");
  cr_assert(fc && co && it && fo && rep && fc < co && co < it && it < fo && fo < rep, "%s", out);
  cr_assert(strstr(rep, "\tFuseOps: "), "%s", out);
  cr_assert_null(strstr(rep, "\tCanonicalizeOps: "), "skipped passes are not timed: %s", out);
  gp_free(out);
}

/* A dynamic batch: --verify-numerics evaluates each ? as 1 or as --shape gives it (on Relay text
 * --shape is the inputs' shape, so it needs a numerics option or --random-inputs). */
Test(cli, dynamic_batch_numerics_and_shapes) {
  char *out;
  int rc = run("opt tests/data/numerics/dynamic_batch.relay --opt-level 3 --verify-numerics --explain -o /dev/null", NULL,
               &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "FuseOps: numerics ok (max abs error 0; %x as (1, 2, 4, 4))"), "%s", out);
  gp_free(out);
  rc = run("opt tests/data/numerics/dynamic_batch.relay --opt-level 3 --verify-numerics --explain --shape x=3,2,4,4 "
           "-o /dev/null", NULL, &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "FuseOps: numerics ok (max abs error 0; %x as (3, 2, 4, 4))"), "%s", out);
  gp_free(out);
  rc = run("opt tests/data/numerics/dynamic_batch.relay --shape x=3,2,4,4", NULL, &out);
  cr_assert_eq(rc, 2, "%s", out);
  cr_assert(strstr(out, "--shape on Relay text gives the shapes of @main's inputs for --verify-numerics"), "%s", out);
  gp_free(out);
  rc = run("opt tests/data/numerics/dynamic_batch.relay --verify-numerics --shape x=3,5,4,4", NULL, &out);
  cr_assert_eq(rc, 2, "%s", out);
  cr_assert(strstr(out, "the shape given for %x has 5 at dim 1"), "%s", out);
  gp_free(out);
  rc = run("eval tests/data/numerics/dynamic_batch.relay --random-inputs 0 --shape x=3,2,4,4", NULL, &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "output 0: shape (3, 48)"), "%s", out);
  gp_free(out);
  rc = run("eval tests/data/numerics/dynamic_batch.relay --shape x=3,2,4,4 --input w=x.npy", NULL, &out);
  cr_assert_eq(rc, 2, "%s", out);
  cr_assert(strstr(out, "--random-inputs is not given"), "%s", out);
  gp_free(out);
}
