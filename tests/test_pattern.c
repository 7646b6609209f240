/* test_pattern.c -- the pattern language (ir/pattern.c), the rewrite driver
 * (ir/pattern_rewrite.c), pattern tables and files (registry/pattern_tables.c) and MergeComposite
 * (passes/merge_composite.c).  Golden before/after files in tests/data/patterns/ (each with its
 * table, <name>.pat) run through th_golden: the result equals the expectation structurally,
 * the input is unchanged and @main evaluates to the same numbers before and after. */
#include "../ir/pattern.h"
#include "test_helpers.h"

#define PDATA "tests/data/patterns/"

static void setup(void) { th_load_std(); }
static void teardown(void) { gp_plugins_unload_all(); }

TestSuite(pattern_lang);
TestSuite(pattern_rewrite);
TestSuite(merge_composite, .init = setup, .fini = teardown);

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                      */

static GPPattern *compile(const char *text) {
  GPPattern *p = gp_pattern_compile(text, "test.pat", 1, 1);
  cr_assert(p, "compile '%s': %s", text, gp_error_message());
  return p;
}

static void compile_fails(const char *text, const char *msg) {
  gp_error_clear();
  GPPattern *p = gp_pattern_compile(text, "test.pat", 1, 1);
  cr_assert_null(p, "'%s' compiled", text);
  cr_assert_eq(gp_error_kind(), GP_ERR_PARSE, "'%s': kind %d", text, (int)gp_error_kind());
  cr_assert_str_eq(gp_error_message(), msg, "'%s': got \"%s\"", text, gp_error_message());
}

/* The typed body of @main of Relay text. */
typedef struct Prog {
  GPModule *mod;
  GPExpr *body;
} Prog;

static Prog prog(const char *text) {
  GPModule *m = gp_parse(text, strlen(text), "t.relay");
  cr_assert(m, "%s", gp_error_message());
  GPModule *t = gp_infer_types(m);
  cr_assert(t, "%s", gp_error_message());
  gp_release(m);
  return (Prog){t, gp_module_lookup(t, "main")->body};
}

static const char *op_of(const GPExpr *e) {
  if (gp_kind(e) != GP_TI_CALL || gp_kind(GP_AS(const GPCall, e)->op) != GP_TI_OP) return NULL;
  return GP_AS(const GPOp, GP_AS(const GPCall, e)->op)->name;
}

static void mc_golden(const char *name) {
  char before[256], after[256], pipe[300];
  snprintf(before, sizeof before, PDATA "%s.before.relay", name);
  snprintf(after, sizeof after, PDATA "%s.after.relay", name);
  snprintf(pipe, sizeof pipe, "MergeComposite{file=" PDATA "%s.pat}", name);
  th_golden(before, after, pipe, NULL);
}

static GPModule *run(GPModule *in, const char *pipeline) {
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(in, pipeline, ctx);
  gp_ctx_free(ctx);
  return out;
}

/* ------------------------------------------------------------------------------------------ */
/* The language: each construct through pattern_match                                          */

static const char k_graph[] =
    "#[version = \"0.0.5\"]\n"
    "def @main(%x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(4, 4, 3, 3), float32], %b: Tensor[(4), float32]) {\n"
    "  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);\n"
    "  %1 = nn.bias_add(%0, %b);\n"
    "  %2 = nn.relu(%1);\n"
    "  %3 = add(%2, %2);\n"
    "  %4 = (%3, %x);\n"
    "  %5 = concatenate(%4, axis=1);\n"
    "  %6 = split(%5, indices_or_sections=2, axis=1);\n"
    "  %6.1\n"
    "}\n";

/* The node of @main's body reached by following first arguments `depth` times. */
static GPExpr *down(GPExpr *e, int depth) {
  for (int i = 0; i < depth; i++) {
    if (gp_kind(e) == GP_TI_CALL) e = GP_AS(GPCall, e)->args[0];
    else if (gp_kind(e) == GP_TI_TUPLE_GET_ITEM) e = GP_AS(GPTupleGetItem, e)->tuple;
    else if (gp_kind(e) == GP_TI_TUPLE) e = GP_AS(GPTuple, e)->fields[0];
  }
  return e;
}

static int match(const char *pat, GPExpr *e, GPMatch **m) {
  GPPattern *p = compile(pat);
  int r = gp_pattern_match(p, e, m);
  cr_assert_geq(r, 0, "%s", gp_error_message());
  gp_release(p);
  return r;
}

Test(pattern_lang, calls_captures_and_inputs) {
  Prog g = prog(k_graph);
  GPExpr *relu = down(g.body, 5); /* .1 -> split -> concat -> tuple -> add -> relu */
  cr_assert_str_eq(op_of(relu), "nn.relu");
  GPMatch *m = NULL;
  cr_assert_eq(match("nn.relu(nn.bias_add(%c=nn.conv2d(%data, _), %bias))", relu, &m), 1);
  cr_assert_eq(m->root, relu);
  cr_assert_eq(m->num_nodes, 3); /* relu, bias_add, conv2d: pre-order */
  cr_assert_str_eq(op_of(m->nodes[0]), "nn.relu");
  cr_assert_str_eq(op_of(m->nodes[1]), "nn.bias_add");
  cr_assert_str_eq(op_of(m->nodes[2]), "nn.conv2d");
  cr_assert_eq(m->num_inputs, 3); /* %x, %w, %b, left to right */
  const GPFunctionExpr *fn = gp_module_lookup(g.mod, "main");
  cr_assert_eq(m->inputs[0], &fn->params[0]->base);
  cr_assert_eq(m->inputs[1], &fn->params[1]->base);
  cr_assert_eq(m->inputs[2], &fn->params[2]->base);
  cr_assert_eq(m->num_captures, 3);
  cr_assert_eq(m->captures[0], m->nodes[2]); /* %c */
  cr_assert_eq(m->captures[1], m->inputs[0]); /* %data */
  cr_assert_eq(m->captures[2], m->inputs[2]); /* %bias */
  gp_free(m);
  /* the wrong op, the wrong arity */
  cr_assert_eq(match("nn.relu(nn.conv2d(_, _))", relu, &m), 0);
  cr_assert_null(m);
  cr_assert_eq(match("sigmoid(_)", relu, &m), 0);
  gp_release(g.mod);
}

Test(pattern_lang, same_capture_twice_is_the_same_node) {
  Prog g = prog(k_graph);
  GPExpr *add = down(g.body, 4);
  cr_assert_str_eq(op_of(add), "add");
  GPMatch *m = NULL;
  cr_assert_eq(match("add(%a, %a)", add, &m), 1);
  cr_assert_eq(m->num_inputs, 1, "one distinct input");
  gp_free(m);
  GPExpr *concat = down(g.body, 2);
  cr_assert_eq(match("concatenate((%a, %a))", concat, &m), 0, "the fields differ");
  cr_assert_eq(match("concatenate((%a, %b))", concat, &m), 1);
  cr_assert_eq(m->num_nodes, 2); /* the call and the tuple */
  gp_free(m);
  gp_release(g.mod);
}

Test(pattern_lang, tuples_get_items_const_and_var) {
  Prog g = prog(k_graph);
  GPMatch *m = NULL;
  cr_assert_eq(match("split(concatenate((_, var))).1", g.body, &m), 1);
  cr_assert_eq(m->num_nodes, 4);
  cr_assert_eq(m->num_inputs, 2);
  gp_free(m);
  cr_assert_eq(match("split(_).0", g.body, &m), 0, "index 1, not 0");
  cr_assert_eq(match("split(concatenate((_, const))).1", g.body, &m), 0, "%%x is a var");
  cr_assert_eq(match("split(concatenate((_, _, _))).1", g.body, &m), 0, "two fields");
  gp_release(g.mod);
}

Test(pattern_lang, attribute_and_type_conditions) {
  Prog g = prog(k_graph);
  GPExpr *conv = down(g.body, 7);
  cr_assert_str_eq(op_of(conv), "nn.conv2d");
  GPMatch *m = NULL;
  cr_assert_eq(match("nn.conv2d(_, _){padding=[1, 1, 1, 1], strides=[1, 1]}", conv, &m), 1);
  gp_free(m);
  cr_assert_eq(match("nn.conv2d(_, _){padding=[0, 0, 0, 0]}", conv, &m), 0);
  cr_assert_eq(match("nn.conv2d(_, _){data_layout=\"NCHW\", out_dtype=\"\"}", conv, &m), 1);
  gp_free(m);
  cr_assert_eq(match("nn.conv2d(_, _){data_layout=\"NHWC\"}", conv, &m), 0);
  cr_assert_eq(match("nn.conv2d(_, _) : Tensor[(1, 4, 8, 8), float32]", conv, &m), 1);
  gp_free(m);
  cr_assert_eq(match("nn.conv2d(_, _) : Tensor[(?, ?, ?, ?), float32]", conv, &m), 1);
  gp_free(m);
  cr_assert_eq(match("nn.conv2d(_, _) : Tensor[(?, ?, ?), float32]", conv, &m), 0, "rank 3");
  cr_assert_eq(match("nn.conv2d(_, _) : Tensor[(1, 4, 8, 8), float16]", conv, &m), 0, "dtype");
  cr_assert_eq(match("nn.conv2d(_ : Tensor[(1, 4, 8, 9), float32], _)", conv, &m), 0, "input's shape");
  /* the concat's axis is an int */
  cr_assert_eq(match("concatenate(_){axis=1}", down(g.body, 2), &m), 1);
  gp_free(m);
  gp_release(g.mod);
}

Test(pattern_lang, alternatives_and_optional_ops) {
  Prog g = prog(k_graph);
  GPExpr *relu = down(g.body, 5), *bias = down(g.body, 6);
  GPMatch *m = NULL;
  cr_assert_eq(match("sigmoid(_) | nn.relu(%y)", relu, &m), 1);
  cr_assert_eq(m->num_captures, 1);
  cr_assert_eq(m->captures[0], bias);
  gp_free(m);
  /* a capture bound in a failed alternative is unbound again */
  cr_assert_eq(match("nn.relu(nn.bias_add(%a=nn.relu(_), _)) | nn.relu(%b)", relu, &m), 1);
  cr_assert_null(m->captures[0]);
  cr_assert_eq(m->captures[1], bias);
  cr_assert_eq(m->num_nodes, 1, "nodes of the failed branch are dropped");
  gp_free(m);
  /* optional: taken when present, skipped otherwise */
  cr_assert_eq(match("nn.relu(nn.bias_add?(nn.conv2d(_, _), _))", relu, &m), 1);
  cr_assert_eq(m->num_nodes, 3);
  gp_free(m);
  cr_assert_eq(match("nn.bias_add(nn.relu?(nn.conv2d(_, _)), _)", bias, &m), 1);
  cr_assert_eq(m->num_nodes, 2);
  gp_free(m);
  gp_release(g.mod);
}

/* 40 nested optional ops that never match: without remembered failures this is 2^40 tries. */
Test(pattern_lang, nested_optionals_cost_is_bounded, .timeout = 20) {
  GPBuf t = {0}, pat = {0};
  gp_buf_puts(&t, "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(4), float32]) {\n  %0 = nn.relu(%x);\n");
  for (int i = 1; i < 60; i++) gp_buf_printf(&t, "  %%%d = nn.relu(%%%d);\n", i, i - 1);
  gp_buf_puts(&t, "  %59\n}\n");
  for (int i = 0; i < 40; i++) gp_buf_puts(&pat, "nn.relu?(");
  gp_buf_puts(&pat, "const");
  for (int i = 0; i < 40; i++) gp_buf_puts(&pat, ")");
  Prog g = prog(t.data);
  GPMatch *m = NULL;
  cr_assert_eq(match(pat.data, g.body, &m), 0);
  gp_buf_free(&t);
  gp_buf_free(&pat);
  gp_release(g.mod);
}

Test(pattern_lang, comments_newlines_and_locations) {
  GPPattern *p = gp_pattern_compile("# conv then relu\nnn.relu(\n  nn.conv2d(_, _)  # the conv\n)", NULL, 1, 1);
  cr_assert(p, "%s", gp_error_message());
  gp_release(p);
  gp_error_clear();
  cr_assert_null(gp_pattern_compile("nn.relu(\n  nn.conv3x(_, _))", "f.pat", 7, 10));
  cr_assert_str_eq(gp_error_message(), "f.pat:8:3: error: unknown op 'nn.conv3x'");
  gp_error_clear();
  cr_assert_null(gp_pattern_compile("add(_, foo)", NULL, 3, 5));
  cr_assert_str_eq(gp_error_message(), "3:12: error: unknown op 'foo'");
}

Test(pattern_lang, bad_patterns) {
  compile_fails("", "test.pat:1:1: error: expected a pattern but found the end of the pattern");
  compile_fails("nn.relu(_", "test.pat:1:10: error: expected ',' or ')' closing the call but found the end of the pattern");
  compile_fails("nn.relu(_) )", "test.pat:1:12: error: unexpected ')' after the pattern");
  compile_fails("nn.relu", "test.pat:1:8: error: expected '(' after the op name (a call) but found the end of the pattern");
  compile_fails("add(_)", "test.pat:1:1: error: add takes 2 arguments, the pattern gives 1");
  compile_fails("nn.conv2d(_, _){padding=1}", "test.pat:1:25: error: attribute padding of nn.conv2d expects a list of ints, got an int");
  compile_fails("nn.conv2d(_, _){pad=[1]}",
                "test.pat:1:17: error: nn.conv2d has no attribute 'pad' (its attributes: strides, padding, dilation, "
                "groups, channels, kernel_size, data_layout, kernel_layout, out_layout, out_dtype)");
  compile_fails("nn.relu(_){x=1}", "test.pat:1:12: error: nn.relu has no attribute 'x' (it has no attributes)");
  compile_fails("nn.conv2d(_, _){groups=1, groups=2}", "test.pat:1:27: error: duplicate attribute groups");
  compile_fails("cast(_){dtype=\"flt32\"}", "test.pat:1:15: error: attribute dtype of cast: unknown dtype \"flt32\"");
  compile_fails("nn.conv2d(_, _){data_layout=\"NCHW}", "test.pat:1:29: error: unterminated string");
  compile_fails("_ : Tensor[(1, x), float32]", "test.pat:1:16: error: expected a number but found 'x), float32]'");
  compile_fails("_ : Tensor[(1, 2), floaty]", "test.pat:1:20: error: expected a dtype (float32, int8, ...) but found 'floaty]'");
  compile_fails("_ : float32 : float32", "test.pat:1:15: error: a second type condition on one pattern");
  compile_fails("%a=%b", "test.pat:1:1: error: a pattern has one capture name; %a names one that has %b");
  compile_fails("(_, _", "test.pat:1:6: error: expected ',' or ')' closing the tuple but found the end of the pattern");
  compile_fails("$", "test.pat:1:1: error: expected a pattern (_, const, var, %name, an op call or '(') but found '$'");
  compile_fails("_.x", "test.pat:1:1: error: unknown op '_.x'");
  compile_fails("nn.relu(_).x", "test.pat:1:11: error: unexpected '.x' after the pattern");
  GPBuf deep = {0};
  for (int i = 0; i < 300; i++) gp_buf_puts(&deep, "nn.relu(");
  gp_error_clear();
  cr_assert_null(gp_pattern_compile(deep.data, NULL, 1, 1));
  cr_assert(strstr(gp_error_message(), "the pattern nests deeper than 256 levels"), "%s", gp_error_message());
  gp_buf_free(&deep);
}

/* ------------------------------------------------------------------------------------------ */
/* The driver                                                                                   */

typedef struct Counter {
  int checks, rewrites, decline_every;
} Counter;

static int count_check(void *user, const GPMatch *m) {
  (void)m;
  Counter *c = user;
  c->checks++;
  return c->decline_every && c->checks % c->decline_every == 0 ? 0 : 1;
}

/* Replace the match by sigmoid(first input). */
static GPExpr *to_sigmoid(void *user, const GPMatch *m) {
  Counter *c = user;
  c->rewrites++;
  GPExpr *op = (GPExpr *)gp_op_get("sigmoid");
  return (GPExpr *)gp_call_new(op, 1, &m->inputs[0], NULL);
}

static GPExpr *rewrite_with(GPExpr *root, const char *pat, Counter *c, int64_t *n) {
  GPPattern *p = compile(pat);
  const GPPattern *ps[1] = {p};
  GPRewriteSpec spec = {.struct_size = sizeof spec, .abi_version = GP_ABI_VERSION, .num_patterns = 1,
                        .patterns = ps, .check = count_check, .rewrite = to_sigmoid, .user = c};
  GPExpr *out = gp_pattern_rewrite(root, &spec);
  *n = spec.num_rewritten;
  gp_release(p);
  return out;
}

Test(pattern_rewrite, consumers_first_no_overlap) {
  /* relu^5: relu(relu(_)) claims (5,4) then (3,2); relu 1 is left */
  Prog g = prog("#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(4), float32]) {\n"
                "  nn.relu(nn.relu(nn.relu(nn.relu(nn.relu(%x)))))\n}\n");
  Counter c = {0};
  int64_t n = 0;
  GPExpr *out = rewrite_with(g.body, "nn.relu(nn.relu(_))", &c, &n);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(n, 2);
  cr_assert_eq(c.rewrites, 2);
  char *txt = gp_print_expr(out, 0);
  cr_assert(strstr(txt, "sigmoid(sigmoid(nn.relu(%x)))") != NULL || strstr(txt, "nn.relu(%x)") != NULL, "%s", txt);
  cr_assert_eq(out->checked_type, g.body->checked_type, "the replacement takes the root's type");
  gp_free(txt);
  gp_release(out);
  gp_release(g.mod);
}

Test(pattern_rewrite, interior_used_outside_is_refused) {
  Prog g = prog("#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(4), float32]) {\n"
                "  %0 = nn.relu(%x);\n  %1 = nn.relu(%0);\n  add(%1, %0)\n}\n");
  Counter c = {0};
  int64_t n = 0;
  GPExpr *out = rewrite_with(g.body, "nn.relu(nn.relu(_))", &c, &n);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(n, 0);
  cr_assert_eq(c.checks, 0, "refused before the check");
  cr_assert_eq(out, g.body, "nothing matched: the root itself");
  gp_release(out);
  gp_release(g.mod);
}

Test(pattern_rewrite, declined_matches_claim_nothing) {
  Prog g = prog("#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(4), float32]) {\n"
                "  nn.relu(nn.relu(nn.relu(%x)))\n}\n");
  Counter c = {.decline_every = 1}; /* the first check declines, then accept */
  c.decline_every = 1;
  int64_t n = 0;
  /* decline every match: nothing rewritten, every node tried */
  GPExpr *out = rewrite_with(g.body, "nn.relu(nn.relu(_))", &c, &n);
  cr_assert_eq(n, 0);
  cr_assert_eq(c.checks, 2, "relu 3 and relu 2 were both offered");
  gp_release(out);
  gp_release(g.mod);
}

static GPExpr *fail_rewrite(void *user, const GPMatch *m) {
  (void)user;
  (void)m;
  gp_error_set(GP_ERR_VALUE, "no thanks");
  return NULL;
}

Test(pattern_rewrite, errors) {
  Prog g = prog("#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(4), float32]) {\n  nn.relu(%x)\n}\n");
  GPPattern *leaf = compile("%x"), *relu = compile("nn.relu(_)");
  const GPPattern *ps[1] = {leaf};
  GPRewriteSpec spec = {.struct_size = sizeof spec, .abi_version = GP_ABI_VERSION, .num_patterns = 1,
                        .patterns = ps, .rewrite = to_sigmoid};
  cr_assert_null(gp_pattern_rewrite(g.body, &spec));
  cr_assert_str_eq(gp_error_message(), "pattern_rewrite: pattern 0 (%x) matches a single leaf; its root must be a "
                                       "call, a tuple or a get-item");
  ps[0] = relu;
  spec.struct_size = 8;
  cr_assert_null(gp_pattern_rewrite(g.body, &spec));
  cr_assert(strstr(gp_error_message(), "struct_size"), "%s", gp_error_message());
  spec.struct_size = sizeof spec;
  spec.rewrite = fail_rewrite;
  cr_assert_null(gp_pattern_rewrite(g.body, &spec));
  cr_assert_str_eq(gp_error_message(), "no thanks");
  gp_release(leaf);
  gp_release(relu);
  gp_release(g.mod);
}

/* ------------------------------------------------------------------------------------------ */
/* MergeComposite                                                                               */

Test(merge_composite, golden_chain) { mc_golden("mc_chain"); }
Test(merge_composite, golden_capture) { mc_golden("mc_capture"); }
Test(merge_composite, golden_alternatives_and_optional) { mc_golden("mc_alt_opt"); }
Test(merge_composite, golden_attribute_and_type_conditions) { mc_golden("mc_attr_type"); }
Test(merge_composite, golden_tuple_get_item_const) { mc_golden("mc_tuple_const"); }
Test(merge_composite, golden_refusals_and_table_order) { mc_golden("mc_refuse"); }

Test(merge_composite, composites_are_not_matched_again) {
  GPModule *in = th_parse_file(PDATA "mc_chain.before.relay");
  GPModule *once = run(in, "MergeComposite{file=" PDATA "mc_chain.pat}");
  cr_assert(once, "%s", gp_error_message());
  GPModule *twice = run(once, "MergeComposite{file=" PDATA "mc_chain.pat}");
  cr_assert(twice, "%s", gp_error_message());
  th_assert_module_eq(twice, once);
  gp_release(twice);
  gp_release(once);
  gp_release(in);
}

/* A check on the root: accept only relus of 4 channels. */
static int check_channels(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  cr_assert_eq(nargs, 1);
  const GPExpr *root = (const GPExpr *)args[0].v_obj;
  cr_assert(root->checked_type, "the check sees the typed input graph");
  *result = gp_any_bool(root->checked_type->tensor.shape[1] == 4);
  return 0;
}

static int check_returns_int_list(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  (void)args;
  (void)nargs;
  *result = gp_any_float(1.5);
  return 0;
}

static void register_table(const char *name, GPPackedCFunc check) {
  GPPattern *p = compile("nn.relu(nn.conv2d(_, _))");
  GPPackedFunc *f = gp_func_new(NULL, check, NULL);
  const char *names[1] = {"conv_relu"};
  GPPattern *pats[1] = {p};
  GPPackedFunc *checks[1] = {f};
  GPPatternTable *t = gp_pattern_table_new(1, names, pats, checks);
  cr_assert(t, "%s", gp_error_message());
  cr_assert_eq(gp_pattern_table_register(name, t, 1), 0, "%s", gp_error_message());
  gp_release(t);
  gp_release(f);
  gp_release(p);
}

Test(merge_composite, registered_table_with_check) {
  register_table("test.channels", check_channels);
  GPModule *in = th_parse_file(PDATA "mc_alt_opt.before.relay"); /* 3 channels everywhere */
  GPModule *out = run(in, "MergeComposite{table=test.channels}");
  cr_assert(out, "%s", gp_error_message());
  char *t0 = gp_print(out, 0);
  cr_assert_null(strstr(t0, "Composite"), "every match declined: %s", t0);
  gp_free(t0);
  gp_release(out);
  gp_release(in);
  in = th_parse_file(PDATA "mc_chain.before.relay"); /* 4 channels */
  out = run(in, "MergeComposite{table=test.channels}");
  cr_assert(out, "%s", gp_error_message());
  char *txt = gp_print(out, 0);
  cr_assert(strstr(txt, "Composite=\"conv_relu\""), "%s", txt);
  gp_free(txt);
  gp_release(out);
  gp_release(in);
  cr_assert_eq(gp_pattern_table_register("test.channels", NULL, 0), 0);
  cr_assert_null(gp_pattern_table_get("test.channels"));
}

/* A check that says why it declines (ABI 1.6): a string is a decline with that reason. */
static int check_channels_why(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  cr_assert_eq(nargs, 1);
  const GPExpr *root = (const GPExpr *)args[0].v_obj;
  int64_t c = root->checked_type->tensor.shape[1];
  if (c == 4) {
    *result = gp_any_bool(true);
    return 0;
  }
  char why[64];
  snprintf(why, sizeof why, "%lld channels, not 4", (long long)c);
  GPString *s = gp_string_new(why, strlen(why));
  cr_assert(s);
  *result = (GPAny){.type_index = GP_TI_STR, .v_obj = &s->obj};
  return 0;
}

/* --explain counts each declined match once (the driver asks again about a declined match next
 * to a composite it made, to prove the fixed point) and shows where and why. */
Test(merge_composite, declines_are_explained) {
  GPModule *in = th_parse_file(PDATA "mc_declines.before.relay"); /* relus of 4, 3, 4, 3 channels */
  GPModule *out = NULL;
  register_table("test.why", check_channels_why);
  char *buf = th_explain(in, "MergeComposite{table=test.why}", NULL, &out);
  cr_assert(out, "%s", gp_error_message());
  cr_assert(strstr(buf, "merged 2 composites (conv_relu 2)"), "%s", buf);
  cr_assert(strstr(buf, "pattern 'conv_relu': 2 matches declined by its check (at " PDATA
                        "mc_declines.before.relay:10:3: 3 channels, not 4; at " PDATA
                        "mc_declines.before.relay:6:8: 3 channels, not 4)"),
            "%s", buf);
  gp_free(buf);
  gp_release(out);
  /* a bool declines without a reason */
  register_table("test.bool", check_channels);
  buf = th_explain(in, "MergeComposite{table=test.bool}", NULL, &out);
  cr_assert(out, "%s", gp_error_message());
  cr_assert(strstr(buf, "pattern 'conv_relu': 2 matches declined by its check (at " PDATA
                        "mc_declines.before.relay:10:3; at " PDATA "mc_declines.before.relay:6:8)"),
            "%s", buf);
  gp_free(buf);
  gp_release(out);
  cr_assert_eq(gp_pattern_table_register("test.why", NULL, 0), 0);
  cr_assert_eq(gp_pattern_table_register("test.bool", NULL, 0), 0);
  gp_release(in);
}

Test(merge_composite, errors) {
  GPModule *in = th_parse_file(PDATA "mc_chain.before.relay");
  cr_assert_null(run(in, "MergeComposite"));
  cr_assert(strstr(gp_error_message(), "MergeComposite needs a pattern table: MergeComposite{table=NAME} or "
                                       "MergeComposite{file=PATH}"), "%s", gp_error_message());
  cr_assert_null(run(in, "MergeComposite{table=nope}"));
  cr_assert(strstr(gp_error_message(), "no pattern table named 'nope' is registered"), "%s", gp_error_message());
  cr_assert_null(run(in, "MergeComposite{file=/nonexistent.pat}"));
  cr_assert(strstr(gp_error_message(), "cannot read the pattern file: /nonexistent.pat: cannot open: No such file"), "%s", gp_error_message());
  cr_assert_null(run(in, "MergeComposite{file=" PDATA "bad_op.pat}"));
  cr_assert(strstr(gp_error_message(), PDATA "bad_op.pat:3:26: error: unknown op 'nn.conv3d_typo'"), "%s",
            gp_error_message());
  register_table("test.badcheck", check_returns_int_list);
  cr_assert_null(run(in, "MergeComposite{table=test.badcheck}"));
  cr_assert(strstr(gp_error_message(), "the check of pattern 'conv_relu' at " PDATA
                                       "mc_chain.before.relay:7:8 returned a float (1.5), expected a bool"),
            "%s", gp_error_message());
  cr_assert_eq(gp_pattern_table_register("test.badcheck", NULL, 0), 0);
  gp_release(in);
}

Test(pattern_lang, pattern_files) {
  static const struct {
    const char *text, *msg;
  } bad[] = {
      {"a: nn.relu(_)\nb nn.relu(_)\n", "f.pat:2:3: error: expected 'name: pattern' (a name of [A-Za-z0-9_.-])"},
      {"a: nn.relu(_)\na: sigmoid(_)\n", "f.pat:2:1: error: a second pattern named 'a'"},
      {"# only a comment\n\n", "f.pat: error: no patterns (expected lines 'name: pattern')"},
      {"  a: nn.relu(_)\n", "f.pat:1:3: error: an indented line continues an entry, but no entry starts above it"},
      {"a: nn.relu(\n    nn.conv2d(_, _){groups=x})\n", "f.pat:2:28: error: expected an attribute value (number, "
                                                       "string, True, False, None or [...]) but found 'x})'"},
      {"a*: nn.relu(_)\n", "f.pat:1:1: error: expected 'name: pattern' (a name of [A-Za-z0-9_.-])"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gp_error_clear();
    cr_assert_null(gp_pattern_table_parse(bad[i].text, strlen(bad[i].text), "f.pat"), "%s", bad[i].text);
    cr_assert_str_eq(gp_error_message(), bad[i].msg, "got \"%s\"", gp_error_message());
  }
  const char *good = "# table\nconv_relu: nn.relu(\n  nn.conv2d(_, _))  # continued\n\ndense: nn.dense(_, _)\n";
  GPPatternTable *t = gp_pattern_table_parse(good, strlen(good), "f.pat");
  cr_assert(t, "%s", gp_error_message());
  cr_assert_eq(t->n, 2);
  cr_assert_str_eq(t->entries[0].name, "conv_relu");
  cr_assert_str_eq(t->entries[1].name, "dense");
  cr_assert_str_eq(t->source_name, "f.pat");
  gp_release(t);
}

/* ------------------------------------------------------------------------------------------ */
/* An out-of-tree plugin (tests/plugins/pattern_plugin.c, built from abi/ alone)                */

TestSuite(pattern_plugin);

Test(pattern_plugin, rewrites_and_tables_through_the_abi) {
  th_load_std();
  char *path = th_path("tests/plugins/libpattern_plugin.so");
  cr_assert_eq(gp_plugin_load(path), 0, "%s", gp_error_message());
  gp_free(path);
  static const char text[] = "#[version = \"0.0.5\"]\n"
                          "def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 1, 1), float32]) {\n"
                          "  %0 = negative(negative(%x));\n"
                          "  %1 = nn.relu(nn.conv2d(%0, %w));\n"
                          "  %2 = sigmoid(%1);\n"
                          "  %3 = sigmoid(reshape(%2, newshape=[-1]));\n"
                          "  (%3, negative(%1))\n"
                          "}\n";
  GPModule *in = gp_parse(text, strlen(text), "in.relay");
  cr_assert(in, "%s", gp_error_message());
  GPModule *out = run(in, "ExtDropDoubleNegative,MergeComposite{table=ext.activations}");
  cr_assert(out, "%s", gp_error_message());
  char *txt = gp_print(out, 0);
  cr_assert_null(strstr(txt, "negative(negative"), "%s", txt);
  cr_assert(strstr(txt, "(%x, %w)"), "negative(negative(%%x)) replaced by %%x: %s", txt);
  cr_assert(strstr(txt, "Composite=\"ext.conv_relu\""), "%s", txt);
  /* one sigmoid of rank 4 merged; the rank-1 one refused by the plugin's check */
  const char *s1 = strstr(txt, "Composite=\"ext.sigmoid\"");
  cr_assert(s1, "%s", txt);
  cr_assert_null(strstr(s1 + 1, "Composite=\"ext.sigmoid\""), "%s", txt);
  gp_free(txt);
  gp_release(out);
  gp_release(in);
  GPPatternTable *t = gp_pattern_table_get("ext.activations");
  cr_assert_not_null(t);
  gp_release(t);
  gp_plugins_unload_all();
  cr_assert_null(gp_pattern_table_get("ext.activations"), "the plugin removed its table when unloaded");
}

Test(pattern_plugin, its_tables_go_with_it_without_finalize) {
  setenv("GP_PATTERN_PLUGIN_KEEP_TABLE", "1", 1);
  char *path = th_path("tests/plugins/libpattern_plugin.so");
  cr_assert_eq(gp_plugin_load(path), 0, "%s", gp_error_message());
  gp_free(path);
  GPPatternTable *t = gp_pattern_table_get("ext.activations");
  cr_assert_not_null(t);
  gp_release(t); /* the registry's reference is the last one */
  gp_plugins_unload_all();
  cr_assert_null(gp_pattern_table_get("ext.activations"));
}

/* The composites carry the types InferType gives them (MergeComposite skips the re-typing):
 * the output printed with types equals its own text re-parsed and typed afresh. */
Test(merge_composite, composites_are_typed_as_infer_types_them) {
  static const char *const names[] = {"mc_chain", "mc_capture", "mc_alt_opt", "mc_attr_type", "mc_tuple_const",
                                      "mc_refuse"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char before[256], pipe[300];
    snprintf(before, sizeof before, PDATA "%s.before.relay", names[i]);
    snprintf(pipe, sizeof pipe, "MergeComposite{file=" PDATA "%s.pat}", names[i]);
    GPModule *in = th_parse_file(before);
    GPModule *out = run(in, pipe);
    cr_assert(out, "%s", gp_error_message());
    char *typed = gp_print(out, GP_PRINT_TYPES | GP_PRINT_METADATA);
    char *plain = gp_print(out, GP_PRINT_METADATA);
    GPModule *re = gp_parse(plain, strlen(plain), "re.relay");
    cr_assert(re, "%s", gp_error_message());
    GPModule *fresh = gp_infer_types(re);
    cr_assert(fresh, "%s", gp_error_message());
    char *want = gp_print(fresh, GP_PRINT_TYPES | GP_PRINT_METADATA);
    cr_assert_str_eq(typed, want, "%s", names[i]);
    gp_free(typed);
    gp_free(plain);
    gp_free(want);
    gp_release(fresh);
    gp_release(re);
    gp_release(out);
    gp_release(in);
  }
}

/* Token soup: every string compiles or fails with a located parse error, never crashes (run
 * under ASan/UBSan too); what compiles is matched at every node of a graph. */
Test(pattern_lang, random_token_soup, .timeout = 60) {
  static const char *const toks[] = {"nn.relu", "nn.conv2d", "add", "(", ")", "(", ")", ",", ",", "_", "const",
                                     "var", "%a", "%b", "%a=", "|", "?", ".0", ".1", ":", "Tensor[(1, ?), float32]",
                                     "{", "}", "padding=[1, 1, 1, 1]", "axis=1", "=", "\"NCHW\"", "#c\n", " ", "\n",
                                     "split", "concatenate", "1.5f", "-3", "[", "]", "True", "None", "float32", "@",
                                     "\"", "nn.bias_add?"};
  Prog g = prog(k_graph);
  GPExpr **nodes;
  size_t nn;
  cr_assert_eq(gp_post_order(g.body, &nodes, &nn), 0);
  uint64_t x = 88172645463325252ull;
  int compiled = 0;
  for (int it = 0; it < 20000; it++) {
    GPBuf b = {0};
    gp_buf_puts(&b, "");
    int len = 1 + (int)(it % 12);
    for (int k = 0; k < len; k++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      gp_buf_puts(&b, toks[x % (sizeof toks / sizeof toks[0])]);
    }
    gp_error_clear();
    GPPattern *p = gp_pattern_compile(b.data, "soup", 1, 1);
    if (!p) {
      cr_assert_eq(gp_error_kind(), GP_ERR_PARSE, "'%s': %s", b.data, gp_error_message());
      cr_assert(strncmp(gp_error_message(), "soup:1:", 7) == 0 || strncmp(gp_error_message(), "soup:2:", 7) == 0 ||
                    strstr(gp_error_message(), "soup:"),
                "'%s': %s", b.data, gp_error_message());
    } else {
      compiled++;
      for (size_t i = 0; i < nn; i++) {
        GPMatch *m = NULL;
        int r = gp_pattern_match(p, nodes[i], &m);
        cr_assert_geq(r, 0);
        if (r) {
          cr_assert_eq(m->root, nodes[i]);
          cr_assert_geq(m->num_nodes + m->num_inputs, 1);
          gp_free(m);
        }
      }
      gp_release(p);
    }
    gp_buf_free(&b);
  }
  cr_assert_gt(compiled, 100, "the soup compiled too rarely to exercise the matcher (%d)", compiled);
  gp_free(nodes);
  gp_release(g.mod);
}

/* ------------------------------------------------------------------------------------------ */
/* The index prefilter (gp_pattern_prematch): never rejects a node the matcher accepts, and
 * rejects most nodes the matcher refuses from the tags alone.                                  */

typedef struct Pre {
  GPPattern **p;
  const char *const *text;
  int np;
  long matched, refused, rejected;
} Pre;

static void prematch_each_node(const char *path, GPModule *m, void *user) {
  Pre *pr = user;
  for (int32_t f = 0; f < m->num_functions; f++) {
    GPNodeIndex ni;
    cr_assert_eq(gp_ni_build(&ni, &m->funcs[f]->base, GP_NI_LET_VALUE_FIRST), 0);
    for (int k = 0; k < pr->np; k++) {
      GPMatcher mt;
      gp_matcher_init(&mt, pr->p[k]);
      for (size_t i = 0; i < ni.n; i++) {
        if (gp_kind(ni.nodes[i]) == GP_TI_OP) continue;
        bool pre = gp_pattern_prematch(pr->p[k], &ni, (int32_t)i);
        if (gp_matcher_run(&mt, ni.nodes[i])) {
          cr_assert(pre, "%s: the prefilter rejects a match of '%s' at node %zu", path, pr->text[k], i);
          pr->matched++;
        } else {
          pr->refused++;
          pr->rejected += !pre;
        }
      }
      gp_matcher_free(&mt);
    }
    gp_ni_free(&ni);
  }
}

Test(pattern_lang, prematch_never_rejects_a_match) {
  static const char *const pats[] = {
      "add(%x, %x)",
      "add(%x, zeros() | zeros_like(_) | const) | add(zeros() | zeros_like(_) | const, %x) | multiply(%x, const)",
      "multiply((multiply(%x, %c1=const) | multiply(%c1=const, %x)), %c2=const) | add(add(%x, %c1=const), %c2=const)",
      "nn.relu(nn.bias_add?(nn.conv2d(_, _), _))",
      "cast(%c=cast(_)) | cast_like(%c=cast(_), _)",
      "reshape(reshape(%x) | contrib_reverse_reshape(%x))",
      "divide(%n, sqrt(%x))",
      "clip(%cast=cast(_))",
      "%t=(_, _).0 | nn.batch_norm(_, _, _, _, _).0",
      "concatenate((_, _)) | nn.dense(nn.relu?(_), const)",
  };
  enum { NP = sizeof pats / sizeof *pats };
  GPPattern *p[NP];
  for (int k = 0; k < NP; k++) p[k] = compile(pats[k]);
  static const char *const dirs[] = {"tests/data/simplify_expr", "tests/data/fold_scale_axis", "tests/data/fusion",
                                     "tests/data/patterns", "tests/data/passes"};
  Pre pr = {.p = p, .text = pats, .np = NP};
  th_each_relay(dirs, GP_ARRAY_LEN(dirs), ".relay", prematch_each_node, &pr);
  for (int k = 0; k < NP; k++) gp_release(p[k]);
  cr_assert_gt(pr.matched, 50, "%ld matches", pr.matched);
  cr_assert_gt(pr.rejected * 10, pr.refused * 9, "the prefilter rejected %ld of %ld refusals", pr.rejected, pr.refused);
}

/* Accepts a match unless its input is the var %y. */
static int check_not_y(void *user, const GPMatch *m) {
  Counter *c = user;
  c->checks++;
  const GPExpr *in = m->inputs[0];
  return !(gp_kind(in) == GP_TI_VAR && strcmp(GP_AS(const GPVar, in)->name, "y") == 0);
}

/* A round that rewrote and finds nothing near its replacements is settled: the same spec on
 * its result returns it without a round (the declined match far away is not checked again);
 * with settling off the repeat is a full round that checks it again. */
Test(pattern_rewrite, a_settled_round_is_not_repeated) {
  static const char text[] = "#[version = \"0.0.5\"]\n"
                             "def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {\n"
                             "  (nn.relu(nn.relu(%x)), nn.relu(nn.relu(%y)))\n}\n";
  for (int on = 1; on >= 0; on--) {
    gp_pattern_fixed_enable(on);
    Prog g = prog(text);
    GPPattern *p = compile("nn.relu(nn.relu(_))");
    const GPPattern *ps[1] = {p};
    Counter c = {0};
    GPRewriteSpec spec = {.struct_size = sizeof spec, .abi_version = GP_ABI_VERSION, .num_patterns = 1,
                          .patterns = ps, .check = check_not_y, .rewrite = to_sigmoid, .user = &c};
    GPExpr *r1 = gp_pattern_rewrite(g.body, &spec);
    cr_assert(r1, "%s", gp_error_message());
    cr_assert_eq(spec.num_rewritten, 1);
    cr_assert_eq(c.checks, 2);
    GPExpr *r2 = gp_pattern_rewrite(r1, &spec);
    cr_assert_eq(r2, r1);
    cr_assert_eq(spec.num_rewritten, 0);
    cr_assert_eq(c.checks, on ? 2 : 3, "settling %s: %d checks", on ? "on" : "off", c.checks);
    gp_release(r2);
    gp_release(r1);
    gp_release(p);
    gp_release(g.mod);
  }
  gp_pattern_fixed_enable(true);
}
