/* test_ecse.c -- EliminateCommonSubexpr: golden before/after files for every rule (equal calls,
 * attrs, scalar constants, tuple arguments, get-items, refusals, cascades, nested and Primitive
 * functions, external functions), the skip predicate by name (golden, errors, get-items), the
 * opt-level, a long chain without recursion, and the input left unchanged. */
#include "test_builders.h"
#include "test_helpers.h"

#include <stdio.h>

#define DATA "tests/data/passes/"
#define ECSE "EliminateCommonSubexpr"

static void setup(void) { th_load_std(); }
static void teardown(void) {
  gp_plugins_unload_all();
  gp_registry_shutdown(); /* global functions the tests registered */
}

TestSuite(ecse, .init = setup, .fini = teardown);

/* before -> after at opt-level 3 (the pass's level), with optional "key", "value", ... */
static void golden3(const char *before, const char *after, const char *const *configs) {
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 3), 0);
  for (const char *const *c = configs; c && *c; c += 2)
    cr_assert_eq(gp_ctx_set_config(ctx, c[0], c[1]), 0, "%s", gp_error_message());
  th_golden_ctx(before, after, ECSE, ctx);
  gp_ctx_free(ctx);
}

static void ecse_golden(const char *name) {
  char before[256], after[256];
  snprintf(before, sizeof before, DATA "ecse_%s.before.relay", name);
  snprintf(after, sizeof after, DATA "ecse_%s.after.relay", name);
  golden3(before, after, NULL);
}

static void ecse_unchanged(const char *name) {
  char before[256];
  snprintf(before, sizeof before, DATA "ecse_%s.before.relay", name);
  golden3(before, before, NULL);
}

/* Run ECSE on a file at opt-level 3 with an optional skip predicate name; returns the result
 * (NULL with the error pending). */
static GPModule *run_file(const char *path, const char *skip) {
  GPModule *in = th_parse_file(path);
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 3), 0);
  if (skip) cr_assert_eq(gp_ctx_set_config(ctx, ECSE ".skip", skip), 0, "%s", gp_error_message());
  GPModule *out = gp_run_pipeline(in, ECSE, ctx);
  gp_ctx_free(ctx);
  gp_release(in);
  return out;
}

/* ---- the rules */

Test(ecse, equal_adds_are_merged_operand_order_matters) { ecse_golden("add"); }
Test(ecse, attrs_compared_structurally_with_defaults) { ecse_golden("attrs"); }
Test(ecse, equal_scalar_constants_but_not_equal_tensors) { ecse_golden("scalars"); }
Test(ecse, get_items_of_the_same_tuple_and_index) { ecse_golden("get_item"); }
Test(ecse, stateful_and_zero_argument_calls_are_kept) { ecse_unchanged("skipped"); }
Test(ecse, merging_cascades_through_calls_and_tuple_arguments) { ecse_golden("cascade"); }
/* A duplicate met after a user of its twin (relu, exp, relu, exp in post order), and calls
 * whose arguments are all scalar constants (found by hash, then the key of their users). */
Test(ecse, merges_a_duplicate_met_after_its_twins_user) { ecse_golden("interleaved"); }
Test(ecse, inside_primitive_functions_and_closures_not_function_calls) { ecse_golden("primitive"); }
Test(ecse, external_and_skip_optimization_functions_untouched) { ecse_golden("external"); }

Test(ecse, skipped_below_opt_level_3) {
  /* at the default opt-level 2 the pass is named but does not run */
  th_golden(DATA "ecse_add.before.relay", DATA "ecse_add.before.relay", ECSE, NULL);
}

Test(ecse, output_is_typed_and_verified) {
  GPModule *out = run_file(DATA "ecse_cascade.before.relay", NULL);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(gp_verify(out), 0, "%s", gp_error_message());
  GPExpr **nodes;
  size_t n;
  cr_assert_eq(gp_post_order(&out->funcs[0]->base, &nodes, &n), 0);
  size_t calls = 0;
  for (size_t i = 0; i < n; i++) {
    if (gp_kind(nodes[i]) != GP_TI_OP) cr_assert_not_null(nodes[i]->checked_type, "node %zu untyped", i);
    calls += gp_kind(nodes[i]) == GP_TI_CALL;
  }
  cr_assert_eq(calls, 6, "add, relu, exp, concatenate, subtract, sum: got %zu calls", calls);
  gp_free(nodes);
  /* the pass keeps types instead of re-typing: InferType finds nothing to redo */
  GPModule *again = gp_infer_types(out);
  cr_assert(again, "%s", gp_error_message());
  cr_expect_eq(again->funcs[0], out->funcs[0], "InferType rebuilt @main");
  gp_release(again);
  gp_release(out);
}

Test(ecse, nothing_to_merge_returns_the_same_functions) {
  GPModule *in = th_parse_file(DATA "ecse_skipped.before.relay");
  GPModule *typed = gp_infer_types(in);
  cr_assert(typed, "%s", gp_error_message());
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 3), 0);
  GPModule *out = gp_run_pipeline(typed, ECSE, ctx);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(out->funcs[0], typed->funcs[0], "an unchanged function must not be rebuilt");
  gp_release(out);
  gp_ctx_free(ctx);
  gp_release(typed);
  gp_release(in);
}

/* ---- the skip predicate */

static int skip_calls_of_relu(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  cr_assert_eq(nargs, 1);
  bool skip = false;
  if (args[0].type_index == GP_TI_CALL) {
    const GPCall *c = (const GPCall *)args[0].v_obj;
    skip = gp_kind(c->op) == GP_TI_OP && strcmp(((const GPOp *)c->op)->name, "nn.relu") == 0;
  }
  *result = gp_any_bool(skip);
  return 0;
}

static void register_fn(const char *name, GPPackedCFunc fn, void *self) {
  GPPackedFunc *f = gp_func_new(self, fn, NULL);
  const GPHostAPI *h = graphpass_host_api();
  cr_assert_eq(h->func_register(name, f, 0), 0, "%s", gp_error_message());
  gp_release(f); /* the registry holds its own reference */
}

Test(ecse, skip_predicate_by_name) {
  register_fn("test.ecse.skip_relu", skip_calls_of_relu, NULL);
  const char *cfg[] = {ECSE ".skip", "test.ecse.skip_relu", NULL};
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 3), 0);
  for (const char *const *c = cfg; *c; c += 2) cr_assert_eq(gp_ctx_set_config(ctx, c[0], c[1]), 0);
  /* the relus stay apart, so nothing above them merges either; the adds still merge */
  th_golden_ctx(DATA "ecse_cascade.before.relay", DATA "ecse_skip_relu.after.relay", ECSE, ctx);
  gp_ctx_free(ctx);
}

/* Counts what it is called with; skips every get-item. */
static int count_kinds(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  int *seen = self; /* [calls, get-items, other] */
  cr_assert_eq(nargs, 1);
  int32_t k = args[0].type_index;
  seen[k == GP_TI_CALL ? 0 : k == GP_TI_TUPLE_GET_ITEM ? 1 : 2]++;
  *result = gp_any_bool(k == GP_TI_TUPLE_GET_ITEM);
  return 0;
}

Test(ecse, skip_predicate_sees_calls_and_get_items) {
  int seen[3] = {0, 0, 0};
  register_fn("test.ecse.count", count_kinds, seen);
  GPModule *out = run_file(DATA "ecse_get_item.before.relay", "test.ecse.count");
  cr_assert(out, "%s", gp_error_message());
  /* calls offered: 2 splits + 5 adds + 1 split = 8 (the second split merges, so the
   * predicate sees each distinct node once); get-items: 7 */
  cr_assert_eq(seen[0], 8, "calls seen: %d", seen[0]);
  cr_assert_eq(seen[1], 7, "get-items seen: %d", seen[1]);
  cr_assert_eq(seen[2], 0);
  /* every get-item was skipped: 7 remain; both splits of %x merged into one */
  GPExpr **nodes;
  size_t n;
  cr_assert_eq(gp_post_order(&out->funcs[0]->base, &nodes, &n), 0);
  int items = 0, splits = 0;
  for (size_t i = 0; i < n; i++) {
    items += gp_kind(nodes[i]) == GP_TI_TUPLE_GET_ITEM;
    if (gp_kind(nodes[i]) == GP_TI_CALL && !strcmp(((GPOp *)((GPCall *)nodes[i])->op)->name, "split")) splits++;
  }
  cr_assert_eq(items, 7, "get-items left: %d", items);
  cr_assert_eq(splits, 2, "splits left: %d (one of %%x, one of the add)", splits);
  gp_free(nodes);
  gp_release(out);
}

Test(ecse, skip_predicate_unknown_name) {
  GPModule *out = run_file(DATA "ecse_add.before.relay", "test.ecse.nope");
  cr_assert_null(out);
  cr_assert_eq(gp_error_kind(), GP_ERR_PASS);
  cr_assert(strstr(gp_error_message(), ECSE), "%s", gp_error_message());
  cr_assert(strstr(gp_error_message(), "no global function named 'test.ecse.nope'"), "%s", gp_error_message());
  gp_error_clear();
}

static int returns_a_string(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self, (void)args, (void)nargs;
  GPString *s = gp_string_new("yes", 3);
  *result = gp_any_obj(s);
  result->type_index = GP_TI_STR;
  return 0;
}

Test(ecse, skip_predicate_must_return_a_bool) {
  register_fn("test.ecse.str", returns_a_string, NULL);
  GPModule *out = run_file(DATA "ecse_add.before.relay", "test.ecse.str");
  cr_assert_null(out);
  const char *m = gp_error_message();
  cr_assert(strstr(m, ECSE) && strstr(m, "'test.ecse.str'") && strstr(m, "a string (\"yes\")") &&
                strstr(m, "ecse_add.before.relay:3:"),
            "%s", m);
  gp_error_clear();
}

static int fails(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self, (void)args, (void)nargs, (void)result;
  gp_error_set(GP_ERR_VALUE, "predicate exploded");
  return -1;
}

Test(ecse, skip_predicate_failure_names_it_and_the_node) {
  register_fn("test.ecse.fail", fails, NULL);
  GPModule *out = run_file(DATA "ecse_add.before.relay", "test.ecse.fail");
  cr_assert_null(out);
  const char *m = gp_error_message();
  cr_assert(strstr(m, ECSE) && strstr(m, "skip predicate 'test.ecse.fail' failed on a call at") &&
                strstr(m, "ecse_add.before.relay:3:") && strstr(m, "predicate exploded"),
            "%s", m);
  gp_error_clear();
}

static bool c_skip_add(GPObject *node) {
  const GPCall *c = (const GPCall *)node;
  return node->type_index == GP_TI_CALL && !strcmp(((const GPOp *)c->op)->name, "add");
}

Test(ecse, typed_c_predicate_through_ffi_wrap) {
  const GPHostAPI *h = graphpass_host_api();
  GPPackedFunc *f = h->ffi_wrap((void *)(uintptr_t)c_skip_add, "b(o)");
  cr_assert(f, "%s", gp_error_message());
  cr_assert_eq(h->func_register("test.ecse.c_skip_add", f, 0), 0, "%s", gp_error_message());
  gp_release(f);
  /* the adds are skipped: nothing merges in ecse_add */
  const char *cfg[] = {ECSE ".skip", "test.ecse.c_skip_add", NULL};
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 3), 0);
  cr_assert_eq(gp_ctx_set_config(ctx, cfg[0], cfg[1]), 0);
  th_golden_ctx(DATA "ecse_add.before.relay", DATA "ecse_add.before.relay", ECSE, ctx);
  gp_ctx_free(ctx);
}

/* ---- scale */

/* Two identical chains of `depth` alternating add/relu over %x; ECSE merges them into one. */
Test(ecse, long_duplicated_chain_merges_without_recursion) {
  const int64_t depth = 200000;
  GPVar *x = gp_var_new("x", T2(1, 4));
  GPExpr *a = gp_retain(&x->base), *b = gp_retain(&x->base);
  for (int64_t i = 0; i < depth; i++) {
    const char *op = i % 2 ? "nn.relu" : "exp";
    GPExpr *na = call1(op, a), *nb = call1(op, b);
    gp_release(a);
    gp_release(b);
    a = na;
    b = nb;
  }
  GPExpr *body = call2("add", a, b);
  gp_release(a);
  gp_release(b);
  GPFunctionExpr *fn = fn1(x, body, NULL);
  gp_release(body);
  gp_release(x);
  GPModule *in = module1("main", fn);
  gp_release(fn);
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 3), 0);
  GPModule *out = gp_run_pipeline(in, ECSE, ctx);
  cr_assert(out, "%s", gp_error_message());
  const GPCall *top = (const GPCall *)out->funcs[0]->body;
  cr_assert_eq(gp_kind(top), GP_TI_CALL);
  cr_assert_eq(top->args[0], top->args[1], "the two chains must become one");
  GPExpr **nodes;
  size_t n;
  cr_assert_eq(gp_post_order(&out->funcs[0]->base, &nodes, &n), 0);
  size_t calls = 0;
  for (size_t i = 0; i < n; i++) calls += gp_kind(nodes[i]) == GP_TI_CALL;
  cr_assert_eq(calls, (size_t)depth + 1, "%zu calls", calls);
  gp_free(nodes);
  gp_release(out);
  gp_ctx_free(ctx);
  gp_release(in);
}
