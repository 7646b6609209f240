/* test_summary.c -- subtree facts (gp_expr_summary, ir/expr.c): the op Bloom filter never misses
 * an op that is called, absent ops are reported absent unless their bucket is shared with a
 * present one, kinds are exact, InferType's typed mark, the ABI 1.4 entries, and the passes
 * that skip in O(1) still give what a walk gives. */
#include "test_helpers.h"
#include "ir/ir.h"
#include "plugin/plugin.h"
#include "registry/registry.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static GPModule *parse(const char *text) {
  GPModule *m = gp_parse(text, strlen(text), "summary.relay");
  cr_assert(m, "%s", gp_error_message());
  return m;
}

/* Every op called under main: through a walk (the reference the summary must agree with). */
static void called_ops(GPExpr *root, bool *called, int32_t nops, uint32_t *kinds) {
  GPExpr **nodes;
  size_t n;
  cr_assert_eq(gp_post_order(root, &nodes, &n), 0);
  *kinds = 0;
  for (size_t i = 0; i < n; i++) {
    *kinds |= 1u << (gp_kind(nodes[i]) - GP_TI_VAR);
    if (gp_kind(nodes[i]) == GP_TI_CALL && gp_kind(GP_AS(GPCall, nodes[i])->op) == GP_TI_OP) {
      int32_t idx = GP_AS(const GPOp, GP_AS(GPCall, nodes[i])->op)->index;
      if (idx < nops) called[idx] = true;
    }
  }
  gp_free(nodes);
}

static const char *kText = "#[version = \"0.0.5\"]\n"
                           "def @main(%x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(4, 4, 3, 3), float32]) {\n"
                           "  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);\n"
                           "  %1 = nn.relu(%0);\n"
                           "  %2 = (%1, %x);\n"
                           "  %3 = concatenate(%2, axis=1);\n"
                           "  %4 = split(%3, indices_or_sections=2, axis=1);\n"
                           "  %5 = %4.0;\n"
                           "  add(%5, @g(%x))\n"
                           "}\n"
                           "def @g(%y: Tensor[(1, 4, 8, 8), float32]) {\n"
                           "  sigmoid(%y)\n"
                           "}\n";

Test(summary, agrees_with_a_walk) {
  gp_ops_init();
  GPModule *m = parse(kText);
  GPExpr *main = &gp_module_lookup(m, "main")->base;
  int32_t nops = 0;
  while (gp_op_at(nops)) nops++;
  cr_assert_gt(nops, 100);
  bool *called = calloc((size_t)nops, 1);
  uint32_t kinds;
  called_ops(main, called, nops, &kinds);
  uint64_t present = 0;
  for (int32_t i = 0; i < nops; i++)
    if (called[i]) present |= gp_summary_op_bit(gp_op_at(i));
  int32_t absent_reported = 0, absent = 0;
  for (int32_t i = 0; i < nops; i++) {
    const GPOp *op = gp_op_at(i);
    bool may = gp_expr_may_call(main, op);
    if (called[i]) {
      cr_assert(may, "%s is called but the summary says it is not", op->name);
      continue;
    }
    absent++;
    if (!may) absent_reported++;
    else cr_assert(gp_summary_op_bit(op) & present, "%s is reported without a shared bucket", op->name);
  }
  cr_assert_gt(absent_reported, absent / 2, "the filter tells most absent ops apart (%d of %d)", absent_reported,
               absent);
  cr_assert(!gp_expr_may_call(main, gp_op_get("sigmoid")) || (gp_summary_op_bit(gp_op_get("sigmoid")) & present),
            "@g's ops are not main's");
  for (int32_t k = GP_TI_VAR; k < GP_TI_IR_END; k++)
    cr_assert_eq(gp_expr_has_kind(main, k), (kinds >> (k - GP_TI_VAR) & 1u) != 0, "kind %s", gp_type_index_name(k));
  cr_assert(gp_expr_has_kind(main, GP_TI_GLOBAL_VAR));
  cr_assert_not(gp_expr_has_kind(&gp_module_lookup(m, "g")->base, GP_TI_GLOBAL_VAR));
  cr_assert_not(gp_expr_has_kind(main, GP_TI_LET));
  free(called);
  gp_release(m);
}

Test(summary, rebuilt_nodes_recompute) {
  gp_ops_init();
  GPModule *m = parse(kText);
  GPFunctionExpr *g = gp_module_lookup(m, "g");
  const GPOp *exp_op = gp_op_get("exp");
  cr_assert_not(gp_expr_may_call(g->body, exp_op) && !(gp_summary_op_bit(exp_op) & gp_summary_op_bit(gp_op_get("sigmoid"))));
  /* sigmoid(%y) -> exp(sigmoid(%y)) through the constructors and a copy with new children */
  GPExpr *args[1] = {g->body};
  GPCall *e = gp_call_new((GPExpr *)exp_op, 1, args, NULL);
  cr_assert(gp_expr_may_call(&e->base, exp_op));
  cr_assert(gp_expr_may_call(&e->base, gp_op_get("sigmoid")));
  GPExpr *kids[2] = {&g->params[0]->base, &e->base};
  GPExpr *nf = gp_expr_with_children(&g->base, kids, false);
  cr_assert(gp_expr_may_call(nf, exp_op), "a copy with new children sums its new children");
  GPExpr *ann = gp_expr_annotate(&e->base, NULL, 3, 4);
  cr_assert_neq(ann, &e->base);
  cr_assert_eq(gp_expr_summary(ann), gp_expr_summary(&e->base), "a copy keeps the facts");
  gp_release(ann);
  gp_release(nf);
  gp_release(e);
  gp_release(m);
}

Test(summary, infer_type_marks_and_skips) {
  gp_ops_init();
  GPModule *m = parse(kText);
  for (int32_t i = 0; i < m->num_functions; i++) cr_assert_not(gp_expr_is_typed_closure(&m->funcs[i]->base));
  GPModule *t = gp_infer_types(m);
  cr_assert(t, "%s", gp_error_message());
  for (int32_t i = 0; i < t->num_functions; i++)
    cr_assert(gp_expr_is_typed_closure(&t->funcs[i]->base), "InferType marks @%s", t->gvars[i]->name);
  for (int32_t i = 0; i < m->num_functions; i++)
    cr_assert_not(gp_expr_is_typed_closure(&m->funcs[i]->base), "the input is not marked");
  GPModule *t2 = gp_infer_types(t);
  cr_assert(t2, "%s", gp_error_message());
  for (int32_t i = 0; i < t->num_functions; i++) cr_assert_eq(t2->funcs[i], t->funcs[i], "a marked function is kept");
  cr_assert(gp_module_equal(t2, t));
  /* a copy with the same type over typed children is a typed closure; a rebuilt node whose
   * type was dropped is not, nor is anything above it */
  GPFunctionExpr *g = gp_module_lookup(t, "g");
  GPExpr *copy = gp_expr_annotate(&g->base, g->base.checked_type, 99, 1);
  cr_assert(gp_expr_is_typed_closure(copy));
  GPVar *y2 = gp_var_new("y2", g->params[0]->type_annotation);
  cr_assert(gp_expr_is_typed_closure(&y2->base), "an annotated var is typed from the start");
  GPExpr *kids[2] = {GP_AS(GPCall, g->body)->op, &y2->base};
  GPExpr *body = gp_expr_with_children(g->body, kids, false);
  cr_assert_neq(body, g->body);
  cr_assert_not(gp_expr_is_typed_closure(body));
  GPExpr *fk[2] = {&g->params[0]->base, body};
  GPExpr *nf = gp_expr_with_children(&g->base, fk, true);
  cr_assert(nf->checked_type, "keep_type kept the function's type");
  cr_assert_not(gp_expr_is_typed_closure(nf), "a typed node over an untyped child is not a closure");
  gp_release(nf);
  gp_release(body);
  gp_release(y2);
  gp_release(copy);
  gp_release(t2);
  gp_release(t);
  gp_release(m);
}

Test(summary, abi_entries) {
  th_load_std();
  const GPHostAPI *h = gp_host_api();
  cr_assert(GP_HAS_FIELD(h, GPHostAPI, op_list_with_attr));
  GPModule *m = parse(kText);
  GPExpr *main = &gp_module_lookup(m, "main")->base;
  cr_assert_eq(h->expr_may_call(main, gp_op_get("nn.conv2d")), 1);
  cr_assert_eq(h->expr_may_call(NULL, gp_op_get("nn.conv2d")), 0);
  cr_assert_eq(h->expr_may_call(main, NULL), 0);
  cr_assert_eq(h->expr_may_call(main, (const GPOp *)main), 0, "a non-op is called nowhere");
  cr_assert_eq(h->expr_has_kind(main, GP_TI_TUPLE_GET_ITEM), 1);
  cr_assert_eq(h->expr_has_kind(main, GP_TI_IF), 0);
  cr_assert_eq(h->expr_has_kind(main, GP_TI_TENSOR), 0, "outside the expression kinds");
  cr_assert_eq(h->expr_has_kind(NULL, GP_TI_VAR), 0);
  /* op_list_with_attr: count, fill, bad arguments */
  GPAny yes = gp_any_bool(true);
  cr_assert_eq(gp_op_set_attr(gp_op_get("nn.relu"), "test.summary_key", &yes, 10), 0);
  cr_assert_eq(gp_op_set_attr(gp_op_get("add"), "test.summary_key", &yes, 10), 0);
  cr_assert_eq(h->op_list_with_attr("test.summary_key", NULL, 0), 2);
  const GPOp *ops[1];
  cr_assert_eq(h->op_list_with_attr("test.summary_key", ops, 1), 2, "n is the count, not what fits");
  cr_assert(ops[0] == gp_op_get("nn.relu") || ops[0] == gp_op_get("add"));
  cr_assert_eq(h->op_list_with_attr("test.no_such_key", ops, 1), 0);
  cr_assert_eq(h->op_list_with_attr(NULL, ops, 1), -1);
  cr_assert_eq(h->op_list_with_attr("test.summary_key", NULL, 1), -1);
  cr_assert(strstr(gp_error_message(), "op_list_with_attr"));
  GPAny none = {0};
  gp_op_set_attr(gp_op_get("nn.relu"), "test.summary_key", &none, 10);
  gp_op_set_attr(gp_op_get("add"), "test.summary_key", &none, 10);
  cr_assert_eq(h->op_list_with_attr("test.summary_key", NULL, 0), 0, "removed keys are not listed");
  gp_release(m);
}

/* GPHostAPI.expr_has_constant_call (ABI 1.6): a call of an op whose arguments (one at least)
 * are all constants or tuples, found under the node that holds it; the fact agrees with a walk
 * over each function; and FoldConstant, which skips a function without one (nor a let, an if,
 * a get-item of a tuple or a shape_of), still folds every function that has one. */
Test(summary, constant_call_fact) {
  th_load_std();
  const GPHostAPI *h = gp_host_api();
  cr_assert(GP_HAS_FIELD(h, GPHostAPI, expr_has_constant_call) && h->expr_has_constant_call);
  GPModule *m = parse("#[version = \"0.0.5\"]\n"
                      "def @none(%x: Tensor[(4), float32]) { %0 = add(%x, 1f); %1 = zeros(shape=[4], dtype=\"float32\"); "
                      "multiply(%0, %1) }\n"
                      "def @deep(%x: Tensor[(4), float32]) { %0 = add(1f, 2f); nn.relu(add(%x, %0)) }\n"
                      "def @tuple(%x: Tensor[(4), float32]) { %0 = ones(shape=[2], dtype=\"float32\"); "
                      "%1 = concatenate((meta[relay.Constant][0], meta[relay.Constant][0])); add(%x, %1) }\n"
                      "def @main(%x: Tensor[(4), float32]) { add(@none(%x), add(@deep(%x), @tuple(%x))) }\n"
                      "#[metadata]\nrelay.Constant[0] = float32 (2) base64:AACAPwAAAEA=\n");
  static const struct {
    const char *fn;
    int has;
  } want[] = {{"none", 0}, {"deep", 1}, {"tuple", 1}, {"main", 0}};
  for (size_t i = 0; i < GP_ARRAY_LEN(want); i++) {
    GPExpr *f = &gp_module_lookup(m, want[i].fn)->base;
    cr_assert_eq(h->expr_has_constant_call(f), want[i].has, "@%s", want[i].fn);
    GPExpr **nodes;
    size_t n;
    cr_assert_eq(gp_post_order(f, &nodes, &n), 0);
    int walk = 0;
    for (size_t k = 0; k < n; k++) {
      if (gp_kind(nodes[k]) != GP_TI_CALL || gp_kind(GP_AS(GPCall, nodes[k])->op) != GP_TI_OP) continue;
      const GPCall *c = GP_AS(GPCall, nodes[k]);
      bool all = c->nargs > 0;
      for (int32_t a = 0; a < c->nargs && all; a++)
        all = gp_kind(c->args[a]) == GP_TI_CONSTANT || gp_kind(c->args[a]) == GP_TI_TUPLE;
      walk |= all;
    }
    gp_free(nodes);
    cr_assert_eq(walk, want[i].has, "@%s: the walk disagrees", want[i].fn);
  }
  cr_assert_eq(h->expr_has_constant_call(NULL), 0);
  GPModule *typed = gp_infer_types(m);
  cr_assert(typed, "%s", gp_error_message());
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(typed, "FoldConstant", ctx);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(gp_module_lookup(out, "none"), gp_module_lookup(typed, "none"), "@none is left as it was");
  for (size_t i = 1; i <= 2; i++)
    cr_assert_eq(h->expr_has_constant_call(&gp_module_lookup(out, want[i].fn)->base), 0, "@%s folded", want[i].fn);
  gp_release(out);
  gp_ctx_free(ctx);
  gp_release(typed);
  gp_release(m);
}

/* The constant-call fact of every function of every golden input (tests/data, a directory deep)
 * is what a walk finds. */
static int fact_files(const char *dir, int (*each)(const char *path)) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "ls %s/*/*.relay 2>/dev/null", dir);
  FILE *ls = popen(cmd, "r");
  cr_assert(ls);
  char line[1024];
  int n = 0;
  while (fgets(line, sizeof line, ls)) {
    line[strcspn(line, "\n")] = 0;
    n += each(line);
  }
  pclose(ls);
  return n;
}

static int fact_agrees(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  char *text = malloc(1 << 20);
  size_t len = fread(text, 1, (1 << 20) - 1, f);
  fclose(f);
  text[len] = 0;
  GPModule *m = gp_parse(text, len, path);
  free(text);
  if (!m) { /* an input of an error test */
    gp_error_clear();
    return 0;
  }
  for (int32_t i = 0; i < m->num_functions; i++) {
    GPExpr *fn = &m->funcs[i]->base, **nodes;
    size_t n;
    cr_assert_eq(gp_post_order(fn, &nodes, &n), 0);
    bool walk = false;
    for (size_t k = 0; k < n && !walk; k++) {
      if (gp_kind(nodes[k]) != GP_TI_CALL || gp_kind(GP_AS(GPCall, nodes[k])->op) != GP_TI_OP) continue;
      const GPCall *c = GP_AS(GPCall, nodes[k]);
      bool all = c->nargs > 0;
      for (int32_t a = 0; a < c->nargs && all; a++)
        all = gp_kind(c->args[a]) == GP_TI_CONSTANT || gp_kind(c->args[a]) == GP_TI_TUPLE;
      walk = all;
    }
    gp_free(nodes);
    cr_assert_eq((gp_expr_summary(fn) & GP_SUM_CONST_CALL) != 0, walk, "%s: @%s", path, m->gvars[i]->name);
  }
  gp_release(m);
  return 1;
}

Test(summary, constant_call_fact_of_every_golden_input) {
  gp_ops_init();
  th_load_std(); /* the plugins' ops */
  int files = fact_files("tests/data", fact_agrees);
  cr_assert_gt(files, 200, "only %d inputs parsed", files);
}

/* The passes that skip in O(1) give the module a walk gives: the input back, unchanged. */
Test(summary, skipping_passes_return_their_input) {
  th_load_std();
  GPModule *m0 = parse(kText);
  GPPassContext *ctx = gp_ctx_new();
  GPModule *m = gp_run_pipeline(m0, "InferType", ctx);
  cr_assert(m, "%s", gp_error_message());
  static const char *const passes[] = {"FlattenAtrousConv", "CombineParallelDense", "CombineParallelBatchMatmul",
                                       "CanonicalizeCast", "AlterOpLayout", "Legalize", "InferType"};
  for (size_t i = 0; i < sizeof passes / sizeof *passes; i++) {
    GPModule *o = gp_run_pipeline(m, passes[i], ctx);
    cr_assert(o, "%s: %s", passes[i], gp_error_message());
    for (int32_t f = 0; f < m->num_functions; f++)
      cr_assert_eq(o->funcs[f], m->funcs[f], "%s keeps @%s", passes[i], m->gvars[f]->name);
    gp_release(o);
  }
  /* RemoveUnusedFunctions still follows @main's call of @g, and drops an uncalled function */
  GPModule *r = gp_run_pipeline(m, "RemoveUnusedFunctions", ctx);
  cr_assert(r, "%s", gp_error_message());
  cr_assert_eq(r->num_functions, 2);
  gp_release(r);
  GPModule *u = parse("#[version = \"0.0.5\"]\ndef @main(%x: float32) { %x }\ndef @h(%y: float32) { %y }\n");
  r = gp_run_pipeline(u, "RemoveUnusedFunctions", ctx);
  cr_assert(r, "%s", gp_error_message());
  cr_assert_eq(r->num_functions, 1);
  cr_assert_str_eq(r->gvars[0]->name, "main");
  gp_release(r);
  gp_release(u);
  gp_ctx_free(ctx);
  gp_release(m);
  gp_release(m0);
}

/* The invariant the bit stands for, checked locally at every node of typed modules (so it holds
 * for whole subtrees by induction): a node with the bit is typed and so are its children. */
static void check_closures(const GPModule *m) {
  for (int32_t f = 0; f < m->num_functions; f++) {
    GPExpr **nodes;
    size_t n;
    cr_assert_eq(gp_post_order(&m->funcs[f]->base, &nodes, &n), 0);
    size_t with = 0;
    for (size_t i = 0; i < n; i++) {
      GPExpr *e = nodes[i];
      if (gp_kind(e) == GP_TI_OP || !gp_expr_is_typed_closure(e)) continue;
      with++;
      cr_assert(e->checked_type, "a %s with the bit has no type", gp_expr_kind_name(e));
      for (int32_t k = 0; k < gp_expr_num_children(e); k++)
        cr_assert(gp_expr_is_typed_closure(gp_expr_child_at(e, k)), "a %s with the bit has a child without",
                  gp_expr_kind_name(e));
    }
    cr_assert_gt(with, 0);
    cr_assert(gp_expr_is_typed_closure(&m->funcs[f]->base), "@%s after InferType is a typed closure",
              m->gvars[f]->name);
    gp_free(nodes);
  }
}

typedef struct SetRun {
  GPPassContext *ctx;
  int ran;
  long nodes;
} SetRun;

static void closures_after_the_set(const char *path, GPModule *m, void *user) {
  SetRun *sr = user;
  GPModule *o = gp_run_pipeline(m, NULL, sr->ctx);
  if (!o) { /* a golden input the llvm set refuses (e.g. untyped on purpose): not this test's */
    gp_error_clear();
    return;
  }
  GPModule *typed = gp_infer_types(o);
  cr_assert(typed, "%s", gp_error_message());
  check_closures(typed);
  GPModule *again = gp_infer_types(typed);
  cr_assert(again, "%s", gp_error_message());
  for (int32_t f = 0; f < o->num_functions; f++) cr_assert_eq(again->funcs[f], typed->funcs[f], "%s", path);
  gp_release(again);
  gp_release(typed);
  gp_release(o);
  sr->ran++;
}

Test(summary, typed_closure_invariant_through_the_default_set) {
  th_load_std();
  static const char *const dirs[] = {"tests/data/fold_scale_axis", "tests/data/combine_parallel",
                                     "tests/data/fusion", "tests/data/convert_layout"};
  SetRun sr = {.ctx = gp_ctx_new()};
  gp_ctx_set_opt_level(sr.ctx, 3);
  th_each_relay(dirs, GP_ARRAY_LEN(dirs), ".before.relay", closures_after_the_set, &sr);
  cr_assert_gt(sr.ran, 20, "ran the set on %d inputs", sr.ran);
  GPModule *m = parse(kText);
  GPModule *o = gp_run_pipeline(m, "FoldConstant,InferType", sr.ctx);
  cr_assert(o, "%s", gp_error_message());
  check_closures(o);
  gp_release(o);
  gp_release(m);
  gp_ctx_free(sr.ctx);
}

/* A copy of e's function without any type (every node rebuilt untyped, children first). */
static GPExpr *untype(void *user, GPExpr *orig, GPExpr *rebuilt) {
  (void)user;
  (void)orig;
  if (gp_kind(rebuilt) == GP_TI_OP) return gp_retain(rebuilt);
  return gp_expr_annotate(rebuilt, NULL, rebuilt->line, rebuilt->col);
}

/* Types a pass gave or kept (builders type their calls, the rewriter keeps a rebuilt node's type,
 * FoldScaleAxis types a call over a scaled weight, InferType keeps typed closures) are the types
 * InferType infers for the same graph from scratch. */
static void types_as_inferred(const char *path, GPModule *m, void *user) {
  SetRun *sr = user;
  static const char *const sets[] = {NULL, "FoldScaleAxis", "SimplifyExpr", "CanonicalizeOps,FoldConstant"};
  for (size_t s = 0; s < GP_ARRAY_LEN(sets); s++) {
    const char *name = sets[s] ? sets[s] : "the default set";
    GPModule *o = gp_run_pipeline(m, sets[s], sr->ctx);
    if (!o) { /* an input this set refuses: not this test's */
      gp_error_clear();
      continue;
    }
    GPModule *bare = gp_module_copy(o);
    for (int32_t f = 0; f < o->num_functions; f++) {
      GPExpr *u = gp_rewrite(&o->funcs[f]->base, untype, NULL);
      cr_assert(u, "%s", gp_error_message());
      cr_assert_eq(gp_module_add(bare, o->gvars[f]->name, (GPFunctionExpr *)u, true), 0);
      gp_release(u);
    }
    GPModule *fresh = gp_infer_types(bare);
    cr_assert(fresh, "%s after %s: %s", path, name, gp_error_message());
    for (int32_t f = 0; f < o->num_functions; f++) {
      GPExpr **a, **b;
      size_t na, nb;
      cr_assert_eq(gp_post_order(&o->funcs[f]->base, &a, &na), 0);
      cr_assert_eq(gp_post_order(&fresh->funcs[f]->base, &b, &nb), 0);
      cr_assert_eq(na, nb, "%s", path);
      for (size_t i = 0; i < na; i++) {
        cr_assert_eq(gp_kind(a[i]), gp_kind(b[i]), "%s", path);
        if (gp_kind(a[i]) == GP_TI_OP) continue;
        cr_assert_eq(a[i]->checked_type, b[i]->checked_type, "%s after %s: a %s kept a type InferType does not give",
                     path, name, gp_expr_kind_name(a[i]));
        sr->nodes++;
      }
      gp_free(a);
      gp_free(b);
    }
    gp_release(fresh);
    gp_release(bare);
    gp_release(o);
  }
}

Test(summary, kept_types_are_inferred_types) {
  th_load_std();
  static const char *const dirs[] = {"tests/data/fold_scale_axis", "tests/data/simplify_expr",
                                     "tests/data/combine_parallel", "tests/data/fusion", "tests/data/passes"};
  SetRun sr = {.ctx = gp_ctx_new()};
  gp_ctx_set_opt_level(sr.ctx, 3);
  th_each_relay(dirs, GP_ARRAY_LEN(dirs), ".before.relay", types_as_inferred, &sr);
  cr_assert_gt(sr.nodes, 1000, "%ld nodes compared", sr.nodes);
  gp_ctx_free(sr.ctx);
}
