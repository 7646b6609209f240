/* test_fold_constant.c -- FoldConstant (golden before/after files, every rule and refusal, the
 * size cap and its explain note, sharing of unchanged constants), explain notes, and
 * --verify-numerics (a correct pipeline passes; a wrong pass is caught and named). */
#include "test_helpers.h"

#include <stdio.h>

#define DATA "tests/data/passes/"
#define FC "FoldConstant"

static void setup(void) { th_load_std(); }
static void teardown(void) { gp_plugins_unload_all(); }

TestSuite(fold_constant, .init = setup, .fini = teardown);

/* before -> after */
static void fold(const char *name) {
  char before[256], after[256];
  snprintf(before, sizeof before, DATA "fold_constant_%s.before.relay", name);
  snprintf(after, sizeof after, DATA "fold_constant_%s.after.relay", name);
  th_golden(before, after, FC, NULL);
}

/* a refusal: the module comes back unchanged */
static void unchanged(const char *name) {
  char before[256];
  snprintf(before, sizeof before, DATA "fold_constant_%s.before.relay", name);
  th_golden(before, before, FC, NULL);
}

/* Run `pipeline` on `path` with explain on; returns what the run wrote (gp_malloc'd copy) and
 * the result module in *out (NULL on failure, the error left pending). */
static char *run_explained(const char *path, const char *pipeline, GPPassContext *ctx, GPModule **out) {
  GPModule *in = th_parse_file(path);
  char *text = th_explain(in, pipeline, ctx, out);
  gp_release(in);
  return text;
}

/* ---- the rules */

Test(fold_constant, chain_folds_completely_in_one_pass) { fold("chain"); }
Test(fold_constant, get_item_of_literal_tuple) { fold("get_item"); }
Test(fold_constant, if_with_constant_true) { fold("if_true"); }
Test(fold_constant, if_with_constant_false) { fold("if_false"); }
Test(fold_constant, let_bound_constants_inlined) { fold("let"); }
Test(fold_constant, tuples_of_folded_constants_stay_tuples) { fold("tuple"); }
Test(fold_constant, tuple_arguments_and_tuple_results) { fold("tuple_arg"); }
Test(fold_constant, shape_of_static_folds_dynamic_stays) { fold("shape_of"); }
Test(fold_constant, primitive_functions_untouched_closures_folded) { fold("primitive"); }

/* ---- the refusals */

Test(fold_constant, zero_argument_calls) { unchanged("zero_arg"); }
Test(fold_constant, non_op_callees) { unchanged("non_op_callee"); }
Test(fold_constant, stateful_ops) { unchanged("stateful"); }
Test(fold_constant, constants_without_data) { unchanged("no_data"); }
Test(fold_constant, if_with_a_variable_condition) { unchanged("if_var"); }

/* ---- the size cap and the explain notes */

Test(fold_constant, max_bytes_cap_with_explain_note) {
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_config(ctx, "FoldConstant.max_bytes", "8"), 0, "%s", gp_error_message());
  GPModule *out;
  char *text = run_explained(DATA "fold_constant_cap.before.relay", FC, ctx, &out);
  cr_assert(out, "%s", gp_error_message());
  cr_assert(strstr(text, "explain: FoldConstant: ran\n"), "%s", text);
  cr_assert(strstr(text, "explain: FoldConstant: note: not folded: add at " DATA
                         "fold_constant_cap.before.relay:3:8 would materialize 16 bytes, over "
                         "FoldConstant.max_bytes = 8\n"),
            "%s", text);
  cr_assert(strstr(text, "explain: FoldConstant: note: folded 1 calls (4 bytes materialized)\n"), "%s", text);
  /* notes come after the pass's "ran" line */
  cr_assert(strstr(text, "ran\n") < strstr(text, "note:"), "%s", text);
  gp_free(text);
  gp_release(out);
  gp_ctx_free(ctx);
  /* the same as a golden test (with --verify-numerics) */
  const char *cfg[] = {"FoldConstant.max_bytes", "8", NULL};
  th_golden(DATA "fold_constant_cap.before.relay", DATA "fold_constant_cap.after.relay", FC, cfg);
}

Test(fold_constant, default_cap_folds_everything_and_notes_are_dropped_without_explain) {
  GPModule *in = th_parse_file(DATA "fold_constant_cap.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ctx->out = f;
  GPModule *out = gp_run_pipeline(in, FC, ctx);
  fclose(f);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(len, 0, "nothing is written without explain: %s", buf);
  cr_assert_eq(ctx->notes.len, 0);
  /* both calls folded: add(%x, c) then add(.., 10f) */
  char *text = gp_print(out, 0);
  cr_assert(strstr(text, "add(%x, meta[relay.Constant][0])"), "%s", text);
  cr_assert(strstr(text, "10f"), "%s", text);
  gp_free(text);
  free(buf);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

Test(fold_constant, negative_max_bytes_is_an_error) {
  GPModule *in = th_parse_file(DATA "fold_constant_cap.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_config(ctx, "FoldConstant.max_bytes", "-1"), 0);
  cr_assert_null(gp_run_pipeline(in, FC, ctx));
  cr_assert_eq(gp_error_kind(), GP_ERR_PASS);
  cr_assert(strstr(gp_error_message(), "pass FoldConstant"), "%s", gp_error_message());
  cr_assert(strstr(gp_error_message(), "max_bytes"), "%s", gp_error_message());
  gp_error_clear();
  gp_release(in);
  gp_ctx_free(ctx);
}

Test(fold_constant, notes_through_the_host_table) {
  const GPHostAPI *h = graphpass_host_api();
  cr_assert(GP_HAS_FIELD(h, GPHostAPI, ctx_note) && h->ctx_note);
  GPPassContext *ctx = gp_ctx_new();
  h->ctx_note(ctx, "dropped %d", 1); /* no explain: dropped */
  cr_assert_eq(ctx->notes.len, 0);
  ctx->explain = true;
  h->ctx_note(ctx, "kept %d %s", 2, "x");
  cr_assert_eq(ctx->notes.len, 1);
  cr_assert_str_eq(ctx->notes.items[0], "kept 2 x");
  h->ctx_note(NULL, "no context");
  gp_ctx_free(ctx); /* frees the pending note */
}

/* ---- sharing: unchanged constants are the same objects, the same memory */

#define WEIGHT_MODEL                                                                                     \
  "#[version = \"0.0.5\"]\n"                                                                             \
  "def @main(%x: Tensor[(1, 4), float32]) -> Tensor[(1, 2), float32] {\n"                               \
  "  %0 = nn.dense(%x, meta[relay.Constant][0], units=2);\n"                                             \
  "  %1 = add(meta[relay.Constant][1], meta[relay.Constant][1]);\n"                                      \
  "  let %unused = negative(%x);\n"                                                                      \
  "  add(%0, %1)\n"                                                                                      \
  "}\n"                                                                                                  \
  "#[metadata]\n"                                                                                        \
  "relay.Constant[0] = float32 (2, 4) base64:AACAPwAAAEAAAEBAAACAQAAAoEAAAMBAAADgQAAAAEE=\n"             \
  "relay.Constant[1] = float32 (2) base64:AACAPwAAAEA=\n"

/* The constant argument of the first call of `op` in @main. */
static GPConstant *const_arg_of(const GPModule *m, const char *op, int32_t arg) {
  GPExpr **order;
  size_t n;
  cr_assert_eq(gp_post_order(&gp_module_lookup(m, "main")->base, &order, &n), 0);
  GPConstant *c = NULL;
  for (size_t i = 0; i < n && !c; i++) {
    GPCall *call = GP_AS(GPCall, order[i]);
    if (gp_kind(call) == GP_TI_CALL && gp_kind(call->op) == GP_TI_OP &&
        strcmp(GP_AS(GPOp, call->op)->name, op) == 0 && gp_kind(call->args[arg]) == GP_TI_CONSTANT)
      c = GP_AS(GPConstant, call->args[arg]);
  }
  gp_free(order);
  cr_assert(c, "no constant argument %d of %s", arg, op);
  return c;
}

Test(fold_constant, weight_is_the_same_memory_after_the_default_pipeline) {
  GPModule *in = gp_parse(WEIGHT_MODEL, strlen(WEIGHT_MODEL), "weights.relay");
  cr_assert(in, "%s", gp_error_message());
  GPPassContext *ctx = gp_ctx_new();
  char *set = gp_opt_set_get("llvm", "default");
  cr_assert(set && strstr(set, "FoldConstant"), "FoldConstant is in the default set: %s", set ? set : "");
  gp_free(set);
  ctx->verify_numerics = true;
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 3), 0);
  GPModule *out = gp_run_pipeline(in, NULL, ctx);
  cr_assert(out, "%s", gp_error_message());
  GPConstant *w_in = const_arg_of(in, "nn.dense", 1);
  /* After FuseOps the weight is an argument of the fused call: find it by shape. */
  GPExpr **order;
  size_t n;
  cr_assert_eq(gp_post_order(&gp_module_lookup(out, "main")->base, &order, &n), 0);
  GPConstant *w_out = NULL, *b_out = NULL;
  for (size_t i = 0; i < n; i++) {
    if (gp_kind(order[i]) != GP_TI_CONSTANT) continue;
    GPConstant *c = GP_AS(GPConstant, order[i]);
    if (c->data->dl.ndim == 2) w_out = c;
    if (c->data->dl.ndim == 1) b_out = c;
  }
  gp_free(order);
  cr_assert(w_out && b_out, "the weight and the folded bias are constants of the output");
  cr_assert_eq(w_in->data, w_out->data, "the weight tensor object was replaced");
  cr_assert_eq(w_in->data->dl.data, w_out->data->dl.data, "the weight was copied");
  /* the bias add(b, b) was folded into [2, 4] */
  cr_assert_float_eq(((const float *)b_out->data->dl.data)[0], 2.0f, 0);
  cr_assert_float_eq(((const float *)b_out->data->dl.data)[1], 4.0f, 0);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

Test(fold_constant, never_copies_what_it_does_not_change) {
  GPModule *parsed = gp_parse(WEIGHT_MODEL, strlen(WEIGHT_MODEL), "weights.relay");
  cr_assert(parsed, "%s", gp_error_message());
  GPModule *in = gp_infer_types(parsed); /* typed: constants already carry their types */
  cr_assert(in, "%s", gp_error_message());
  gp_release(parsed);
  GPConstant *w_in = const_arg_of(in, "nn.dense", 1);
  void *data = w_in->data->dl.data;
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(in, FC, ctx);
  cr_assert(out, "%s", gp_error_message());
  GPConstant *w_out = const_arg_of(out, "nn.dense", 1);
  cr_assert_eq(w_in, w_out, "the unchanged constant is the same object");
  cr_assert_eq(w_out->data->dl.data, data);
  /* the input still has its bias add of two constants */
  const GPConstant *b = const_arg_of(in, "add", 0);
  cr_assert_eq(b->data->dl.shape[0], 2);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

/* A typed module where nothing folds comes back as the same functions. */
Test(fold_constant, nothing_to_fold_returns_the_same_functions) {
  GPModule *parsed = th_parse_file(DATA "fold_constant_zero_arg.before.relay");
  GPModule *in = gp_infer_types(parsed);
  gp_release(parsed);
  GPModule *out = gp_run_pipeline(in, FC, NULL);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(out->funcs[0], in->funcs[0]);
  gp_release(out);
  gp_release(in);
}

/* ---- deep graphs: no recursion */

Test(fold_constant, long_chain_folds_without_recursion) {
  const int n = 100000;
  GPBuf b = {0};
  gp_buf_puts(&b, "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {\n");
  gp_buf_puts(&b, "  %0 = negative(meta[relay.Constant][0]);\n");
  for (int i = 1; i < n; i++) gp_buf_printf(&b, "  %%%d = negative(%%%d);\n", i, i - 1);
  gp_buf_printf(&b, "  add(%%x, %%%d)\n}\n#[metadata]\nrelay.Constant[0] = float32 (2) base64:AACAPwAAAEA=\n", n - 1);
  GPModule *in = gp_parse(b.data, b.len, "chain");
  gp_buf_free(&b);
  cr_assert(in, "%s", gp_error_message());
  GPModule *out = gp_run_pipeline(in, FC, NULL);
  cr_assert(out, "%s", gp_error_message());
  GPCall *body = GP_AS(GPCall, out->funcs[0]->body);
  cr_assert_eq(gp_kind(body), GP_TI_CALL);
  cr_assert_eq(gp_kind(body->args[1]), GP_TI_CONSTANT);
  const float *v = GP_AS(GPConstant, body->args[1])->data->dl.data;
  cr_assert(v[0] == 1.0f && v[1] == 2.0f, "an even number of negations: %g %g", v[0], v[1]);
  gp_release(out);
  gp_release(in);
}

/* ---- evaluation failures: a kernel error names the pass and the node; a missing kernel keeps
 * the call with a note */

static int same_type_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                         const GPType **out, void *user) {
  (void)op, (void)attrs, (void)nargs, (void)user;
  *out = args[0];
  return 0;
}

static int failing_kernel(const GPKernelArgs *args, void *user) {
  (void)args, (void)user;
  gp_error_set(GP_ERR_VALUE, "the test kernel refuses");
  return -1;
}

static void register_test_op(const char *name, GPOpKernelFn kernel) {
  GPOpDef def = {
      .struct_size = sizeof def,
      .abi_version = GP_ABI_VERSION,
      .name = name,
      .num_inputs = 1,
      .pattern = GP_PATTERN_ELEMWISE,
      .type_rel = same_type_rel,
      .help = "test op",
      .kernel = kernel,
  };
  gp_ops_init();
  cr_assert(gp_op_register(&def, false), "%s", gp_error_message());
}

#define TEST_OP_MODEL(op)                                                                     \
  "#[version = \"0.0.5\"]\n"                                                                  \
  "def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {\n"                          \
  "  %0 = " op "(meta[relay.Constant][0]);\n"                                                 \
  "  add(%x, %0)\n"                                                                           \
  "}\n"                                                                                       \
  "#[metadata]\n"                                                                             \
  "relay.Constant[0] = float32 (2) base64:AACAPwAAAEA=\n"

Test(fold_constant, kernel_error_names_pass_and_node) {
  register_test_op("test.fail", failing_kernel);
  const char *text = TEST_OP_MODEL("test.fail");
  GPModule *in = gp_parse(text, strlen(text), "fail.relay");
  cr_assert(in, "%s", gp_error_message());
  cr_assert_null(gp_run_pipeline(in, FC, NULL));
  cr_assert_eq(gp_error_kind(), GP_ERR_PASS);
  const char *msg = gp_error_message();
  cr_assert(strstr(msg, "pass FoldConstant"), "%s", msg);
  cr_assert(strstr(msg, "test.fail at fail.relay:3:8"), "%s", msg);
  cr_assert(strstr(msg, "the test kernel refuses"), "%s", msg);
  gp_error_clear();
  gp_release(in);
}

Test(fold_constant, op_without_kernel_is_kept_with_a_note) {
  register_test_op("test.nokernel", NULL);
  const char *text = TEST_OP_MODEL("test.nokernel");
  GPModule *in = gp_parse(text, strlen(text), "nokernel.relay");
  cr_assert(in, "%s", gp_error_message());
  GPModule *out;
  char *buf = th_explain(in, FC, NULL, &out);
  cr_assert(out, "%s", gp_error_message());
  th_assert_module_eq(out, in);
  cr_assert(strstr(buf, "explain: FoldConstant: note: not folded: test.nokernel at nokernel.relay:3:8"), "%s", buf);
  cr_assert(strstr(buf, "no kernel"), "%s", buf);
  cr_assert(strstr(buf, "folded 0 calls (0 bytes materialized)"), "%s", buf);
  gp_free(buf);
  gp_release(out);
  gp_release(in);
}

/* ---- --verify-numerics */

Test(fold_constant, verify_numerics_passes_a_correct_pipeline) {
  GPPassContext *ctx = gp_ctx_new();
  ctx->verify_numerics = true;
  GPModule *out;
  char *text = run_explained(DATA "fold_constant_chain.before.relay", "InferType,FoldConstant", ctx, &out);
  cr_assert(out, "%s", gp_error_message());
  cr_assert(strstr(text, "explain: InferType: numerics ok (max abs error 0"), "%s", text);
  cr_assert(strstr(text, "explain: FoldConstant: numerics ok (max abs error "), "%s", text);
  cr_assert(strstr(text, "explain: FoldConstant: note: folded 3 calls (36 bytes materialized)"), "%s", text);
  /* order: ran, notes, numerics */
  const char *ran = strstr(text, "explain: FoldConstant: ran");
  const char *nt = strstr(text, "explain: FoldConstant: note:");
  const char *ok = strstr(text, "explain: FoldConstant: numerics ok");
  cr_assert(ran && nt && ok && ran < nt && nt < ok, "%s", text);
  gp_free(text);
  gp_release(out);
  gp_ctx_free(ctx);
}

/* A deliberately wrong pass: every add becomes a subtract. */
static GPExpr *add_to_sub(void *user, GPExpr *orig, GPExpr *rebuilt) {
  (void)user, (void)orig;
  GPCall *c = GP_AS(GPCall, rebuilt);
  if (gp_kind(c) != GP_TI_CALL || c->op != (GPExpr *)gp_op_get("add")) return gp_retain(rebuilt);
  return (GPExpr *)gp_call_new((GPExpr *)gp_op_get("subtract"), c->nargs, c->args, c->attrs);
}

static int bad_pass(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self, (void)nargs;
  GPModule *m = (GPModule *)args[0].v_obj;
  GPModule *out = gp_module_copy(m);
  for (int32_t i = 0; i < m->num_functions; i++) {
    GPExpr *f = gp_rewrite(&m->funcs[i]->base, add_to_sub, NULL);
    if (!f) {
      gp_release(out);
      return -1;
    }
    gp_module_set(out, i, GP_AS(GPFunctionExpr, f));
    gp_release(f);
  }
  GPModule *typed = gp_infer_types(out);
  gp_release(out);
  if (!typed) return -1;
  result->type_index = GP_TI_MODULE;
  result->v_obj = &typed->obj;
  return 0;
}

static void register_bad_pass(void) {
  GPPassInfo info = {
      .struct_size = sizeof info,
      .abi_version = GP_ABI_VERSION,
      .name = "TestAddToSubtract",
      .opt_level = 0,
      .kind = GP_PASS_TRANSFORM,
      .func = bad_pass,
      .help = "wrong on purpose",
  };
  cr_assert_eq(gp_pass_register(&info, false, "test"), 0, "%s", gp_error_message());
}

Test(fold_constant, verify_numerics_catches_a_wrong_pass) {
  register_bad_pass();
  GPModule *in = th_parse_file(DATA "fold_constant_chain.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  ctx->verify_numerics = true;
  GPModule *out;
  char *buf = th_explain(in, "FoldConstant,TestAddToSubtract,DeadCodeElimination", ctx, &out);
  cr_assert_null(out);
  cr_assert_eq(gp_error_kind(), GP_ERR_PASS);
  const char *msg = gp_error_message();
  cr_assert(strstr(msg, "pass TestAddToSubtract changed the numbers of @main output 0: max abs error "), "%s", msg);
  cr_assert(strstr(msg, " at element "), "%s", msg);
  cr_assert(strstr(msg, "beyond rtol 0.0001 atol 1e-05; the output's values reach "), "%s", msg);
  gp_error_clear();
  /* FoldConstant was fine; DeadCodeElimination never ran */
  cr_assert(strstr(buf, "explain: FoldConstant: numerics ok"), "%s", buf);
  cr_assert_null(strstr(buf, "explain: TestAddToSubtract: numerics ok"), "%s", buf);
  cr_assert_null(strstr(buf, "DeadCodeElimination: numerics"), "%s", buf);
  gp_free(buf);
  /* without verification the wrong pass goes unnoticed */
  ctx->verify_numerics = false;
  out = gp_run_pipeline(in, "TestAddToSubtract", ctx);
  cr_assert(out, "%s", gp_error_message());
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
  gp_pass_unregister("TestAddToSubtract");
}

Test(fold_constant, verify_numerics_tolerances_and_seed) {
  register_bad_pass();
  /* subtract instead of add of a zero: no difference at all */
  const char *text = "#[version = \"0.0.5\"]\n"
                     "def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {\n"
                     "  add(%x, 0f)\n"
                     "}\n";
  GPModule *in = gp_parse(text, strlen(text), "zero.relay");
  cr_assert(in, "%s", gp_error_message());
  GPPassContext *ctx = gp_ctx_new();
  ctx->verify_numerics = true;
  ctx->seed = 7;
  GPModule *out = gp_run_pipeline(in, "TestAddToSubtract", ctx);
  cr_assert(out, "%s", gp_error_message());
  gp_release(out);
  gp_release(in);
  /* a huge tolerance lets the wrong pass through */
  in = th_parse_file(DATA "fold_constant_chain.before.relay");
  ctx->atol = 100.0;
  out = gp_run_pipeline(in, "TestAddToSubtract", ctx);
  cr_assert(out, "%s", gp_error_message());
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
  gp_pass_unregister("TestAddToSubtract");
}

/* A @main with ? dims is evaluated with each ? as 1, or in the shape the context gives the
 * parameter; a shape that does not fit, a bad shape and a non-tensor parameter are errors. */
Test(fold_constant, verify_numerics_of_a_dynamic_main) {
  GPModule *in = th_parse_file(DATA "fold_constant_shape_of.before.relay");
  GPPassContext *ctx = gp_ctx_new();
  ctx->verify_numerics = true;
  GPModule *out = gp_run_pipeline(in, FC, ctx);
  cr_assert_not_null(out, "%s", gp_error_message());
  gp_release(out);
  const int64_t y43[2] = {4, 3}, y24[2] = {2, 4}, neg[2] = {-1, 3};
  cr_assert_eq(gp_ctx_add_numerics_shape(ctx, "y", 2, y43), 0, "%s", gp_error_message());
  out = gp_run_pipeline(in, FC, ctx);
  cr_assert_not_null(out, "%s", gp_error_message());
  gp_release(out);
  cr_assert_eq(gp_ctx_add_numerics_shape(ctx, "y", 2, neg), -1);
  cr_assert(strstr(gp_error_message(), "dim 0 is -1"), "%s", gp_error_message());
  gp_error_clear();
  cr_assert_eq(gp_ctx_add_numerics_shape(ctx, "y", 2, y24), 0, "%s", gp_error_message()); /* replaces (4, 3) */
  cr_assert_null(gp_run_pipeline(in, FC, ctx));
  const char *msg = gp_error_message();
  cr_assert(strstr(msg, "the shape given for %y has 4 at dim 1; its type Tensor[(?, 3), float32] has 3"), "%s", msg);
  gp_error_clear();
  gp_release(in);
  const char *tup = "#[version = \"0.0.5\"]\ndef @main(%t: (Tensor[(3), float32], Tensor[(3), float32])) {\n  %t.0\n}\n";
  in = gp_parse(tup, strlen(tup), "tuple.relay");
  cr_assert(in, "%s", gp_error_message());
  cr_assert_null(gp_run_pipeline(in, FC, ctx));
  cr_assert(strstr(gp_error_message(), "parameter %t of @main has type (Tensor[(3), float32], Tensor[(3), float32]), not "
                                       "a tensor type"),
            "%s", gp_error_message());
  gp_error_clear();
  gp_release(in);
  /* no @main at all */
  const char *text = "#[version = \"0.0.5\"]\ndef @f(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {\n  %x\n}\n";
  in = gp_parse(text, strlen(text), "nomain.relay");
  cr_assert(in, "%s", gp_error_message());
  cr_assert_null(gp_run_pipeline(in, FC, ctx));
  cr_assert(strstr(gp_error_message(), "@main"), "%s", gp_error_message());
  gp_error_clear();
  gp_release(in);
  gp_ctx_free(ctx);
}

/* ---- the command */

static int graphpass(const char *args, char **out) {
  GPBuf b = {0};
  gp_buf_printf(&b, "%s/bin/graphpass %s", th_build_dir(), args);
  int rc = th_run(b.data, out);
  gp_buf_free(&b);
  return rc;
}

Test(fold_constant, cli_verify_numerics) {
  char *out;
  int rc = graphpass("opt " DATA "fold_constant_chain.before.relay --pipeline FoldConstant --verify-numerics "
                     "--rtol 1e-3 --atol 1e-6 --seed 3 --explain -o /dev/null",
                     &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "explain: FoldConstant: ran"), "%s", out);
  cr_assert(strstr(out, "explain: FoldConstant: note: folded 3 calls (36 bytes materialized)"), "%s", out);
  cr_assert(strstr(out, "explain: FoldConstant: numerics ok (max abs error "), "%s", out);
  gp_free(out);
  rc = graphpass("opt examples/resnet_block.relay --verify-numerics -o /dev/null", &out);
  cr_assert_eq(rc, 0, "%s", out);
  gp_free(out);
  rc = graphpass("opt " DATA "fold_constant_chain.before.relay --verify-numerics --rtol abc", &out);
  cr_assert_eq(rc, 2, "%s", out);
  cr_assert(strstr(out, "--rtol 'abc'"), "%s", out);
  gp_free(out);
  rc = graphpass("opt " DATA "fold_constant_chain.before.relay --atol 1", &out);
  cr_assert_eq(rc, 2, "%s", out);
  cr_assert(strstr(out, "need --verify-numerics"), "%s", out);
  gp_free(out);
  /* %y: Tensor[(?, 3)] is evaluated as (1, 3), or as --shape gives it */
  rc = graphpass("opt " DATA "fold_constant_shape_of.before.relay --verify-numerics --explain --pipeline FoldConstant", &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "FoldConstant: numerics ok (max abs error 0; %y as (1, 3))"), "%s", out);
  gp_free(out);
  rc = graphpass("opt " DATA "fold_constant_shape_of.before.relay --verify-numerics --explain --pipeline FoldConstant "
                 "--shape y=5,3", &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "%y as (5, 3))"), "%s", out);
  gp_free(out);
  rc = graphpass("--help", &out);
  cr_assert(strstr(out, "--verify-numerics"), "%s", out);
  gp_free(out);
}

/* Nothing to fold (no call over constants only, no shape_of, get-item of a literal tuple, if or
 * let): the functions come back as they were, without a rewrite; and one candidate deep in a
 * chain is still found. */
Test(fold_constant, nothing_to_fold_keeps_the_functions) {
  static const char text[] = "#[version = \"0.0.5\"]\n"
                             "def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {\n"
                             "  %0 = add(%x, %y);\n"
                             "  %1 = nn.relu(%0);\n"
                             "  %2 = split(%1, indices_or_sections=2);\n"
                             "  %3 = %2.0;\n"
                             "  multiply(%3, %3)\n"
                             "}\n";
  GPModule *m = gp_parse(text, sizeof text - 1, "nothing.relay");
  cr_assert(m, "%s", gp_error_message());
  GPPassContext *ctx = gp_ctx_new();
  GPModule *t = gp_run_pipeline(m, "InferType", ctx);
  GPModule *o = gp_run_pipeline(t, FC, ctx);
  cr_assert(o, "%s", gp_error_message());
  cr_assert_eq(o->funcs[0], t->funcs[0]);
  gp_release(o);
  static const char text2[] = "#[version = \"0.0.5\"]\n"
                              "def @main(%x: Tensor[(4), float32]) {\n"
                              "  %0 = add(%x, %x);\n"
                              "  %1 = nn.relu(%0);\n"
                              "  %2 = negative(2f);\n"
                              "  add(%1, %2)\n"
                              "}\n";
  GPModule *m2 = gp_parse(text2, sizeof text2 - 1, "one.relay");
  cr_assert(m2, "%s", gp_error_message());
  o = gp_run_pipeline(m2, FC, ctx);
  cr_assert(o, "%s", gp_error_message());
  char *p = gp_print(o, 0);
  cr_assert(strstr(p, "-2f") && !strstr(p, "negative"), "%s", p);
  gp_free(p);
  gp_release(o);
  gp_release(m2);
  gp_release(t);
  gp_release(m);
  gp_ctx_free(ctx);
}
