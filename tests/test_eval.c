/* test_eval.c -- the whole-function evaluator (eval/eval.c): lets, ifs (only the chosen branch
 * runs), tuples, Primitive function calls, global calls, closures, recursion (deep and
 * runaway), input checks with exact messages, op errors naming the node, peak bytes, DLPack in
 * and out without copies, a 1M-node chain, deterministic inputs and allclose. */
#include "test_helpers.h"
#include "test_builders.h"
#include "eval/eval.h"

#include <math.h>

#define SRC "t.relay"

/* ------------------------------------------------------------------------------------------ */
/* helpers                                                                                     */

static GPModule *parse(const char *text) {
  gp_ops_init();
  GPModule *m = gp_parse(text, strlen(text), SRC);
  cr_assert(m, "parse: %s\n%s", gp_error_message(), text);
  return m;
}

static GPTensor *tensor_f32(int32_t ndim, const int64_t *shape, const float *v) {
  GPTensor *t = gp_tensor_alloc(GP_DT_F32, ndim, shape, true);
  cr_assert(t, "%s", gp_error_message());
  memcpy(t->dl.data, v, gp_tensor_nbytes(t));
  return t;
}

static GPTensor *vec_f32(int64_t n, const float *v) { return tensor_f32(1, &n, v); }

static GPTensor *scalar_bool(bool v) {
  GPTensor *t = gp_tensor_scalar_i64(GP_DT_BOOL, v);
  cr_assert(t);
  return t;
}

static void expect_f32(const GPTensor *t, int64_t n, const float *want) {
  cr_assert(gp_dtype_eq(t->dl.dtype, GP_DT_F32), "dtype");
  int64_t numel = 1;
  for (int32_t i = 0; i < t->dl.ndim; i++) numel *= t->dl.shape[i];
  cr_assert_eq(numel, n, "numel %lld, expected %lld", (long long)numel, (long long)n);
  for (int64_t i = 0; i < n; i++) {
    double g = gp_tensor_get_f64(t, i);
    cr_assert(fabs(g - want[i]) <= 1e-5 * (1 + fabs(want[i])), "element %lld: %g, expected %g", (long long)i, g,
              (double)want[i]);
  }
}

/* Evaluate @main; fails the test on error. */
static GPTensor **run_ok(const GPModule *m, int32_t nin, GPTensor *const *ins, int32_t *nout, GPEvalOptions *o) {
  GPTensor **outs = NULL;
  int rc = gp_eval_function(m, NULL, nin, ins, &outs, nout, o);
  cr_assert_eq(rc, 0, "eval: %s", gp_error_message());
  return outs;
}

/* Evaluate @main expecting an error of `kind` whose message is exactly `want` (or contains it
 * when `exact` is false). */
static void run_err(const GPModule *m, int32_t nin, GPTensor *const *ins, int32_t kind, const char *want,
                    bool exact) {
  GPTensor **outs = (GPTensor **)1;
  int32_t nout = 7;
  int rc = gp_eval_function(m, NULL, nin, ins, &outs, &nout, NULL);
  cr_assert_eq(rc, -1, "evaluation should fail with \"%s\"", want);
  cr_assert_null(outs);
  cr_assert_eq(nout, 0);
  cr_assert_eq(gp_error_kind(), kind, "kind %d (%s), expected %d", gp_error_kind(), gp_error_message(), kind);
  if (exact)
    cr_assert_str_eq(gp_error_message(), want);
  else
    cr_assert(strstr(gp_error_message(), want), "message \"%s\" lacks \"%s\"", gp_error_message(), want);
  gp_error_clear();
}

static void release_all(GPTensor **ts, int32_t n) {
  for (int32_t i = 0; i < n; i++) gp_release(ts[i]);
  gp_free(ts);
}

static const float X4[4] = {-2, -1, 1, 2};

/* Run a one-input (Tensor[(4), float32]) @main on X4 and compare its one output. */
static void check_x4(const char *text, const float *want) {
  GPModule *m = parse(text);
  GPTensor *x = vec_f32(4, X4);
  int32_t nout;
  GPTensor **o = run_ok(m, 1, &x, &nout, NULL);
  cr_assert_eq(nout, 1);
  expect_f32(o[0], 4, want);
  release_all(o, nout);
  gp_release(x);
  gp_release(m);
}

#define HDR "#[version = \"0.0.5\"]\n"
#define X4T "Tensor[(4), float32]"

/* ------------------------------------------------------------------------------------------ */
/* Relay constructs                                                                            */

Test(eval, let_chain) {
  const float want[4] = {0, 0, 6, 12};
  check_x4(HDR "def @main(%x: " X4T ") {\n"
               "  let %a = add(%x, %x);\n"
               "  let %b = multiply(%a, 3f);\n"
               "  let %unused = subtract(%a, %b);\n"
               "  let %c = %b;\n"
               "  nn.relu(%c)\n"
               "}\n",
           want);
}

Test(eval, graph_form_with_sharing) {
  /* %0 is read by two nodes: computed once */
  const char *text = HDR "def @main(%x: " X4T ") {\n"
                         "  %0 = add(%x, 1f);\n"
                         "  %1 = multiply(%0, %0);\n"
                         "  %2 = subtract(%1, %0);\n"
                         "  nn.relu(%2)\n"
                         "}\n";
  GPModule *m = parse(text);
  GPTensor *x = vec_f32(4, X4);
  GPEvalOptions o = {.struct_size = sizeof o, .abi_version = GP_ABI_VERSION};
  int32_t nout;
  GPTensor **out = run_ok(m, 1, &x, &nout, &o);
  const float want[4] = {2, 0, 2, 6};
  expect_f32(out[0], 4, want);
  cr_assert_eq(o.ops_run, 4, "ops_run %lld", (long long)o.ops_run);
  release_all(out, nout);
  gp_release(x);
  gp_release(m);
}

Test(eval, if_with_constant_condition) {
  const float t[4] = {-4, -2, 2, 4}, f[4] = {0, 0, 1, 2};
  check_x4(HDR "def @main(%x: " X4T ") {\n"
               "  if (True) { add(%x, %x) } else { nn.relu(%x) }\n"
               "}\n",
           t);
  check_x4(HDR "def @main(%x: " X4T ") {\n"
               "  if (False) { add(%x, %x) } else { nn.relu(%x) }\n"
               "}\n",
           f);
}

static const char k_if_var[] = HDR "def @main(%c: bool, %x: " X4T ") {\n"
                                   "  %0 = add(%x, 1f);\n"
                                   "  %1 = if (%c) {\n"
                                   "    let %a = multiply(%0, 2f);\n"
                                   "    nn.relu(%a)\n"
                                   "  } else {\n"
                                   "    %2 = subtract(%0, 1f);\n"
                                   "    %3 = negative(%2);\n"
                                   "    add(%3, %0)\n"
                                   "  };\n"
                                   "  add(%1, %0)\n"
                                   "}\n";

Test(eval, if_with_variable_condition_runs_only_the_chosen_branch) {
  GPModule *m = parse(k_if_var);
  GPTensor *x = vec_f32(4, X4);
  for (int c = 0; c < 2; c++) {
    GPTensor *in[2] = {scalar_bool(c), x};
    GPEvalOptions o = {.struct_size = sizeof o, .abi_version = GP_ABI_VERSION, .num_threads = 1};
    int32_t nout;
    GPTensor **out = run_ok(m, 2, in, &nout, &o);
    /* x+1 = {-1, 0, 2, 3} */
    const float yes[4] = {-1, 0, 6, 9}, no[4] = {0, 1, 3, 4};
    expect_f32(out[0], 4, c ? yes : no);
    /* add, then 2 (then) or 3 (else), then add */
    cr_assert_eq(o.ops_run, c ? 4 : 5, "ops_run %lld", (long long)o.ops_run);
    release_all(out, nout);
    gp_release(in[0]);
  }
  gp_release(x);
  gp_release(m);
}

Test(eval, the_branch_not_taken_is_never_evaluated) {
  /* the else branch reads a constant without values: evaluating it would fail */
  GPModule *m = parse(HDR "def @main(%c: bool, %x: " X4T ") {\n"
                          "  if (%c) { nn.relu(%x) } else { add(%x, meta[relay.Constant][0] /* ty=" X4T " */) }\n"
                          "}\n");
  GPTensor *x = vec_f32(4, X4);
  GPTensor *in[2] = {scalar_bool(true), x};
  int32_t nout;
  GPTensor **out = run_ok(m, 2, in, &nout, NULL);
  const float want[4] = {0, 0, 1, 2};
  expect_f32(out[0], 4, want);
  release_all(out, nout);
  gp_release(in[0]);
  in[0] = scalar_bool(false);
  run_err(m, 2, in, GP_ERR_VALUE, "has no values", false);
  gp_release(in[0]);
  gp_release(x);
  gp_release(m);
}

Test(eval, nested_ifs_sharing_values_across_branches) {
  GPModule *m = parse(HDR "def @main(%a: bool, %b: bool, %x: " X4T ") {\n"
                          "  %0 = add(%x, 10f);\n"
                          "  %1 = multiply(%x, 2f);\n"
                          "  if (%a) {\n"
                          "    if (%b) { add(%0, %1) } else { %0 }\n"
                          "  } else {\n"
                          "    if (%b) { %1 } else { subtract(%1, %0) }\n"
                          "  }\n"
                          "}\n");
  GPTensor *x = vec_f32(4, X4);
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++) {
      GPTensor *in[3] = {scalar_bool(a), scalar_bool(b), x};
      int32_t nout;
      GPEvalOptions o = {.struct_size = sizeof o, .abi_version = GP_ABI_VERSION};
      GPTensor **out = run_ok(m, 3, in, &nout, &o);
      float want[4];
      for (int i = 0; i < 4; i++) {
        float v0 = X4[i] + 10, v1 = X4[i] * 2;
        want[i] = a ? (b ? v0 + v1 : v0) : (b ? v1 : v1 - v0);
      }
      expect_f32(out[0], 4, want);
      release_all(out, nout);
      gp_release(in[0]);
      gp_release(in[1]);
    }
  gp_release(x);
  gp_release(m);
}

Test(eval, tuples_and_get_items_flattened_outputs) {
  GPModule *m = th_parse_file("tests/data/parse/let_if.relay");
  int64_t s[2] = {2, 3};
  const float xv[6] = {1, 2, 3, 4, 5, 6}, yv[6] = {10, 20, 30, 40, 50, 60};
  GPTensor *x = tensor_f32(2, s, xv), *y = tensor_f32(2, s, yv);
  for (int c = 0; c < 2; c++) {
    GPTensor *in[3] = {scalar_bool(c), x, y};
    int32_t nout;
    GPTensor **out = run_ok(m, 3, in, &nout, NULL);
    cr_assert_eq(nout, 2);
    float want[6];
    for (int i = 0; i < 6; i++) want[i] = c ? (xv[i] + yv[i]) * (xv[i] + yv[i]) : yv[i];
    expect_f32(out[0], 6, want);
    expect_f32(out[1], 6, want);
    cr_assert_eq(out[0]->dl.ndim, 2);
    if (!c) cr_assert_eq(out[0], y, "the else branch returns the input itself, uncopied");
    release_all(out, nout);
    gp_release(in[0]);
  }
  gp_release(x);
  gp_release(y);
  gp_release(m);
}

Test(eval, nested_tuple_result_is_flattened_in_order) {
  GPModule *m = parse(HDR "def @main(%x: " X4T ") {\n"
                          "  %0 = nn.relu(%x);\n"
                          "  %1 = (%0, (negative(%x), (%x,)), ());\n"
                          "  (%1.1, %1.0, %1)\n"
                          "}\n");
  GPTensor *x = vec_f32(4, X4);
  int32_t nout;
  GPTensor **out = run_ok(m, 1, &x, &nout, NULL);
  /* (%1.1 = (neg, (x,)), relu, (relu, (neg, (x,)), ())) */
  cr_assert_eq(nout, 6);
  const float relu[4] = {0, 0, 1, 2}, neg[4] = {2, 1, -1, -2};
  expect_f32(out[0], 4, neg);
  cr_assert_eq(out[1], x);
  expect_f32(out[2], 4, relu);
  expect_f32(out[3], 4, relu);
  cr_assert_eq(out[2], out[3], "one value, shared");
  cr_assert_eq(out[4], out[0]);
  cr_assert_eq(out[5], x);
  release_all(out, nout);
  gp_release(x);
  gp_release(m);
}

Test(eval, primitive_function_calls) {
  const float want[4] = {0, 0, 3, 5};
  check_x4(HDR "def @main(%x: " X4T ") {\n"
               "  %0 = fn (%p0: " X4T ", %p1: float32, Primitive=1) {\n"
               "    %4 = multiply(%p0, %p1);\n"
               "    add(%4, 1f)\n"
               "  };\n"
               "  %1 = %0(%x, 2f);\n"
               "  %2 = fn (%p01: " X4T ", Primitive=1) { nn.relu(%p01) };\n"
               "  %3 = %2(%1);\n"
               "  %3\n"
               "}\n",
           want);
}

Test(eval, fused_conv_block_from_the_parser_tests) {
  GPModule *m = th_parse_file("tests/data/parse/closures.relay");
  GPTensor **ins;
  int32_t nin;
  cr_assert_eq(gp_eval_random_inputs(m, NULL, 3, &ins, &nin), 0, "%s", gp_error_message());
  cr_assert_eq(nin, 3);
  int32_t nout;
  GPEvalOptions o = {.struct_size = sizeof o, .abi_version = GP_ABI_VERSION};
  GPTensor **out = run_ok(m, nin, ins, &nout, &o);
  cr_assert_eq(nout, 1);
  cr_assert_eq(out[0]->dl.ndim, 4);
  cr_assert_eq(out[0]->dl.shape[1], 4);
  cr_assert_eq(o.ops_run, 4);
  for (int64_t i = 0; i < 4 * 64; i++) cr_assert(gp_tensor_get_f64(out[0], i) >= 0, "after relu and max pool");
  release_all(out, nout);
  release_all(ins, nin);
  gp_release(m);
}

Test(eval, global_function_calls) {
  GPModule *m = th_parse_file("tests/data/parse/two_funcs.relay");
  int64_t s[2] = {1, 10};
  float xv[10], yv[10];
  for (int i = 0; i < 10; i++) xv[i] = (float)i, yv[i] = 1;
  GPTensor *in[2] = {tensor_f32(2, s, xv), tensor_f32(2, s, yv)};
  int32_t nout;
  GPTensor **out = run_ok(m, 2, in, &nout, NULL);
  double sum = 0;
  for (int i = 0; i < 10; i++) sum += gp_tensor_get_f64(out[0], i);
  cr_assert(fabs(sum - 2.0) < 1e-5, "softmax times 2 sums to 2: %g", sum);
  cr_assert(gp_tensor_get_f64(out[0], 9) > gp_tensor_get_f64(out[0], 8));
  release_all(out, nout);
  gp_release(in[0]);
  gp_release(in[1]);
  /* another function by name */
  GPTensor *a = vec_f32(10, xv), *b = vec_f32(10, yv);
  GPTensor *ab[2] = {a, b};
  GPTensor **o2;
  cr_assert_eq(gp_eval_function(m, "add_func", 2, ab, &o2, &nout, NULL), 0, "%s", gp_error_message());
  cr_assert_eq(gp_tensor_get_f64(o2[0], 3), 4.0);
  release_all(o2, nout);
  cr_assert_eq(gp_eval_function(m, "nope", 2, ab, &o2, &nout, NULL), -1);
  expect_error(GP_ERR_NOT_FOUND, "no function @nope");
  gp_release(a);
  gp_release(b);
  gp_release(m);
}

Test(eval, nested_calls_closures_and_captures) {
  /* @main -> @outer -> @inner -> a closure capturing %k (a value of @inner) and called twice */
  const float want[4] = {2, 3, 5, 6};
  check_x4(HDR "def @main(%x: " X4T ") -> " X4T " {\n"
               "  @outer(%x)\n"
               "}\n"
               "def @outer(%y: " X4T ") -> " X4T " {\n"
               "  %0 = @inner(%y, 1f);\n"
               "  add(%0, 2f)\n"
               "}\n"
               "def @inner(%z: " X4T ", %k: float32) -> " X4T " {\n"
               "  let %f = fn (%w: " X4T ") -> " X4T " { add(%w, %k) };\n"
               "  %1 = %f(%z);\n"
               "  let %g = @twice;\n"
               "  %g(%f, %1)\n"
               "}\n"
               "def @twice(%h: fn (" X4T ") -> " X4T ", %v: " X4T ") -> " X4T " {\n"
               "  %2 = %h(%v);\n"
               "  multiply(%2, 1f)\n"
               "}\n",
           want);
}

Test(eval, a_closure_returned_from_a_function_keeps_its_captures) {
  const float want[4] = {-3, -1, 3, 5};
  check_x4(HDR "def @main(%x: " X4T ") -> " X4T " {\n"
               "  let %f = @make(%x);\n"
               "  %f(%x)\n"
               "}\n"
               "def @make(%a: " X4T ") -> fn (" X4T ") -> " X4T " {\n"
               "  %1 = add(%a, 1f);\n"
               "  fn (%b: " X4T ") -> " X4T " { add(%b, %1) }\n"
               "}\n",
           want);
}

Test(eval, meta_constant_without_data_is_a_clear_error) {
  GPModule *m = th_parse_file("tests/data/parse/meta_nodata.relay");
  float xv[64] = {0};
  int64_t s[2] = {1, 64};
  GPTensor *x = tensor_f32(2, s, xv);
  run_err(m, 1, &x,
          GP_ERR_VALUE,
          "tests/data/parse/meta_nodata.relay:3:21: in @main: constant of type Tensor[(10, 64), float32] has no "
          "values (a meta[relay.Constant] reference without a #[metadata] entry)",
          true);
  gp_release(x);
  gp_release(m);
}

/* ------------------------------------------------------------------------------------------ */
/* Inputs                                                                                      */

static const char k_three[] = HDR "def @main(%x: Tensor[(1, 3, 224, 224), float32], %y: Tensor[(?, 3), int32], "
                                  "%s: float32) {\n"
                                  "  (%x, %y, %s)\n"
                                  "}\n";

Test(eval, input_count_mismatch) {
  GPModule *m = parse(k_three);
  int64_t s[4] = {1, 3, 224, 224};
  GPTensor *x = gp_tensor_alloc(GP_DT_F32, 4, s, true);
  run_err(m, 1, &x, GP_ERR_VALUE, "@main: expected 3 inputs (%x, %y, %s), got 1", true);
  gp_release(x);
  gp_release(m);
}

Test(eval, input_shape_and_dtype_mismatch) {
  GPModule *m = parse(k_three);
  int64_t sx[4] = {1, 3, 224, 223}, sy[2] = {5, 3}, sy2[2] = {7, 3};
  GPTensor *in[3] = {gp_tensor_alloc(GP_DT_F32, 4, sx, true), gp_tensor_alloc(GP_DT_I32, 2, sy, true),
                     gp_tensor_scalar_f64(GP_DT_F32, 1.5)};
  run_err(m, 3, in, GP_ERR_VALUE,
          "@main: input %x: expected Tensor[(1, 3, 224, 224), float32], got Tensor[(1, 3, 224, 223), float32]", true);
  gp_release(in[0]);
  sx[3] = 224;
  in[0] = gp_tensor_alloc(GP_DT_F16, 4, sx, true);
  run_err(m, 3, in, GP_ERR_VALUE,
          "@main: input %x: expected Tensor[(1, 3, 224, 224), float32], got Tensor[(1, 3, 224, 224), float16]", true);
  gp_release(in[0]);
  in[0] = gp_tensor_alloc(GP_DT_F32, 4, sx, true);
  gp_release(in[2]);
  in[2] = gp_tensor_alloc(GP_DT_F32, 1, sy, true);
  run_err(m, 3, in, GP_ERR_VALUE, "@main: input %s: expected float32, got Tensor[(5), float32]", true);
  gp_release(in[2]);
  in[2] = gp_tensor_scalar_f64(GP_DT_F32, 1.5);
  /* an unknown dimension accepts any extent */
  int32_t nout;
  GPTensor **out = run_ok(m, 3, in, &nout, NULL);
  cr_assert_eq(nout, 3);
  for (int i = 0; i < 3; i++) cr_assert_eq(out[i], in[i], "inputs pass through uncopied");
  release_all(out, nout);
  gp_release(in[1]);
  in[1] = gp_tensor_alloc(GP_DT_I32, 2, sy2, true);
  out = run_ok(m, 3, in, &nout, NULL);
  release_all(out, nout);
  gp_release(in[1]);
  in[1] = gp_tensor_alloc(GP_DT_I32, 2, (int64_t[]){5, 4}, true);
  run_err(m, 3, in, GP_ERR_VALUE, "@main: input %y: expected Tensor[(?, 3), int32], got Tensor[(5, 4), int32]",
          true);
  for (int i = 0; i < 3; i++) gp_release(in[i]);
  gp_release(m);
}

Test(eval, input_without_data) {
  GPModule *m = parse(HDR "def @main(%x: " X4T ") { nn.relu(%x) }\n");
  int64_t s = 4;
  GPTensor *x = gp_tensor_alloc(GP_DT_F32, 1, &s, false);
  run_err(m, 1, &x, GP_ERR_VALUE, "@main: input %x has no data", true);
  gp_release(x);
  gp_release(m);
}

/* ------------------------------------------------------------------------------------------ */
/* Errors name the node                                                                        */

static int k_fail(const GPKernelArgs *a, void *user) {
  (void)a, (void)user;
  gp_error_set(GP_ERR_UNSUPPORTED, "this kernel always fails");
  return -1;
}

static int same_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                    const GPType **out, void *user) {
  (void)op, (void)attrs, (void)nargs, (void)user;
  *out = args[0];
  return 0;
}

static void register_test_op(const char *name, GPOpKernelFn k) {
  gp_ops_init();
  GPOpDef d = {.struct_size = sizeof d, .abi_version = GP_ABI_VERSION, .name = name, .num_inputs = 1,
               .pattern = GP_PATTERN_OPAQUE, .type_rel = same_rel, .kernel = k};
  cr_assert(gp_op_register(&d, true), "%s", gp_error_message());
}

Test(eval, op_errors_name_the_location_and_function) {
  register_test_op("test.fails", k_fail);
  register_test_op("test.nokernel", NULL);
  GPModule *m = parse(HDR "def @main(%x: " X4T ") {\n"
                          "  %0 = nn.relu(%x);\n"
                          "  @helper(%0)\n"
                          "}\n"
                          "def @helper(%y: " X4T ") {\n"
                          "  %1 = negative(%y);\n"
                          "  test.fails(%1)\n"
                          "}\n"
                          "def @other(%y: " X4T ") {\n"
                          "  %2 = fn (%p: " X4T ", Primitive=1) {\n"
                          "    test.nokernel(%p)\n"
                          "  };\n"
                          "  %2(%y)\n"
                          "}\n");
  GPTensor *x = vec_f32(4, X4);
  run_err(m, 1, &x, GP_ERR_UNSUPPORTED, "t.relay:8:3: in @helper: test.fails: this kernel always fails", true);
  GPTensor **o;
  int32_t n;
  cr_assert_eq(gp_eval_function(m, "other", 1, &x, &o, &n, NULL), -1);
  expect_error(GP_ERR_UNSUPPORTED, "t.relay:12:5: in @other: test.nokernel: the op has no kernel");
  gp_release(x);
  gp_release(m);
}

Test(eval, type_errors_come_from_inference) {
  GPModule *m = parse(HDR "def @main(%x: " X4T ", %y: Tensor[(3), float32]) {\n"
                          "  add(%x, %y)\n"
                          "}\n");
  GPTensor *x = vec_f32(4, X4), *y = vec_f32(3, X4);
  GPTensor *in[2] = {x, y};
  run_err(m, 2, in, GP_ERR_TYPE, "t.relay:3:3: error: in @main: add", false);
  gp_release(x);
  gp_release(y);
  gp_release(m);
}

/* ------------------------------------------------------------------------------------------ */
/* Recursion                                                                                   */

/* test.dec: int32 scalar minus one; test.pos: int32 scalar > 0, as bool */
static int k_dec(const GPKernelArgs *a, void *user) {
  (void)user;
  int32_t v;
  memcpy(&v, (const char *)a->inputs[0]->data + a->inputs[0]->byte_offset, 4);
  v--;
  memcpy(a->outputs[0]->data, &v, 4);
  return 0;
}

static int k_pos(const GPKernelArgs *a, void *user) {
  (void)user;
  int32_t v;
  memcpy(&v, (const char *)a->inputs[0]->data + a->inputs[0]->byte_offset, 4);
  *(uint8_t *)a->outputs[0]->data = v > 0;
  return 0;
}

static int bool_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                    const GPType **out, void *user) {
  (void)op, (void)attrs, (void)nargs, (void)user, (void)args;
  *out = gp_type_scalar(GP_DT_BOOL);
  return 0;
}

static void register_counting_ops(void) {
  register_test_op("test.dec", k_dec);
  GPOpDef d = {.struct_size = sizeof d, .abi_version = GP_ABI_VERSION, .name = "test.pos", .num_inputs = 1,
               .pattern = GP_PATTERN_OPAQUE, .type_rel = bool_rel, .kernel = k_pos};
  cr_assert(gp_op_register(&d, true), "%s", gp_error_message());
}

static const char k_countdown[] = HDR "def @main(%n: int32, %x: " X4T ") -> " X4T " {\n"
                                      "  @loop(%n, %x)\n"
                                      "}\n"
                                      "def @loop(%i: int32, %acc: " X4T ") -> " X4T " {\n"
                                      "  if (test.pos(%i)) {\n"
                                      "    %0 = add(%acc, 1f);\n"
                                      "    @loop(test.dec(%i), %0)\n"
                                      "  } else {\n"
                                      "    %acc\n"
                                      "  }\n"
                                      "}\n";

Test(eval, deep_recursion_uses_no_c_stack, .timeout = 120) {
  register_counting_ops();
  GPModule *m = parse(k_countdown);
  GPTensor *x = vec_f32(4, X4);
  GPTensor *in[2] = {gp_tensor_scalar_i64(GP_DT_I32, 50000), x};
  GPEvalOptions o = {.struct_size = sizeof o, .abi_version = GP_ABI_VERSION, .num_threads = 1};
  int32_t nout;
  GPTensor **out = run_ok(m, 2, in, &nout, &o);
  const float want[4] = {49998, 49999, 50001, 50002};
  expect_f32(out[0], 4, want);
  cr_assert_eq(o.ops_run, 50000 * 3 + 1);
  /* every level's accumulator is dropped once the recursive call took it */
  cr_assert(o.peak_bytes <= 4 * 16 * 4, "peak %zu", o.peak_bytes);
  release_all(out, nout);
  gp_release(in[0]);
  gp_release(x);
  gp_release(m);
}

Test(eval, runaway_recursion_is_an_error) {
  GPModule *m = parse(HDR "def @main(%x: " X4T ") -> " X4T " {\n"
                          "  @f(%x)\n"
                          "}\n"
                          "def @f(%y: " X4T ") -> " X4T " {\n"
                          "  %0 = nn.relu(%y);\n"
                          "  @f(%0)\n"
                          "}\n");
  GPTensor *x = vec_f32(4, X4);
  run_err(m, 1, &x, GP_ERR_VALUE, "t.relay:7:3: in @f: call depth exceeds 100000 at @f", false);
  gp_release(x);
  gp_release(m);
}

extern size_t gp_eval_max_frame_slots;

Test(eval, runaway_recursion_of_a_big_function_is_bounded_by_memory) {
  /* the else branch never runs but every frame has a slot per node of @f */
  GPBuf b = {0};
  gp_buf_puts(&b, HDR "def @main(%x: " X4T ") -> " X4T " { @f(%x) }\n"
                      "def @f(%y: " X4T ") -> " X4T " {\n"
                      "  if (True) { @f(%y) } else {\n    %0 = nn.relu(%y);\n");
  for (int i = 1; i < 1000; i++) gp_buf_printf(&b, "    %%%d = negative(%%%d);\n", i, i - 1);
  gp_buf_puts(&b, "    %999\n  }\n}\n");
  GPModule *m = parse(b.data);
  gp_buf_free(&b);
  gp_eval_max_frame_slots = 100000;
  GPTensor *x = vec_f32(4, X4);
  run_err(m, 1, &x, GP_ERR_VALUE,
          "t.relay:4:15: in @f: call depth exceeds 100 at @f: the active calls would hold more than 100000 node "
          "slots (runaway recursion?)",
          true);
  gp_release(x);
  gp_release(m);
}

Test(eval, recursive_closure_bound_by_let) {
  /* let %f = fn (%i, %a) { if (test.pos(%i)) { %f(test.dec(%i), add(%a, 1f)) } else { %a } }; %f(%n, %x)
   * (built directly: the text parser does not resolve a let's name inside its own value) */
  register_counting_ops();
  int64_t four = 4;
  const GPType *t4 = gp_type_tensor(GP_DT_F32, 1, &four), *ti = gp_type_scalar(GP_DT_I32);
  const GPType *ps[2] = {ti, t4};
  GPVar *n = gp_var_new("n", ti), *x = gp_var_new("x", t4), *f = gp_var_new("f", gp_type_func(2, ps, t4));
  GPVar *i = gp_var_new("i", ti), *a = gp_var_new("a", t4);
  GPExpr *pos = E(gp_call_new((GPExpr *)gp_op_get("test.pos"), 1, (GPExpr *[]){&i->base}, NULL));
  GPExpr *dec = E(gp_call_new((GPExpr *)gp_op_get("test.dec"), 1, (GPExpr *[]){&i->base}, NULL));
  GPTensor *one_t = gp_tensor_scalar_f64(GP_DT_F32, 1);
  GPExpr *one = E(gp_constant_new(one_t));
  GPExpr *inc = E(gp_call_new((GPExpr *)gp_op_get("add"), 2, (GPExpr *[]){&a->base, one}, NULL));
  GPExpr *rec = E(gp_call_new(&f->base, 2, (GPExpr *[]){dec, inc}, NULL));
  GPExpr *body = E(gp_if_new(pos, rec, &a->base));
  GPExpr *lam = E(gp_function_new(2, (GPVar *[]){i, a}, body, t4, NULL));
  GPExpr *use_f = E(gp_call_new(&f->base, 2, (GPExpr *[]){&n->base, &x->base}, NULL));
  GPExpr *let = E(gp_let_new(f, lam, use_f));
  GPFunctionExpr *main_fn = (GPFunctionExpr *)E(gp_function_new(2, (GPVar *[]){n, x}, let, t4, NULL));
  GPModule *m = gp_module_new("built");
  cr_assert_eq(gp_module_add(m, "main", main_fn, false), 0, "%s", gp_error_message());
  GPExpr *parts[] = {&n->base, &x->base, &f->base, &i->base, &a->base, pos, dec, one, inc, rec, body, lam,
                     use_f, let, &main_fn->base};
  for (size_t k = 0; k < GP_ARRAY_LEN(parts); k++) gp_release(parts[k]);
  gp_release(one_t);

  const float want[4] = {8, 9, 11, 12};
  GPTensor *xv = vec_f32(4, X4);
  GPTensor *in[2] = {gp_tensor_scalar_i64(GP_DT_I32, 10), xv};
  int32_t nout;
  GPEvalOptions o = {.struct_size = sizeof o, .abi_version = GP_ABI_VERSION};
  GPTensor **out = run_ok(m, 2, in, &nout, &o);
  expect_f32(out[0], 4, want);
  cr_assert_eq(o.ops_run, 10 * 3 + 1);
  release_all(out, nout);
  gp_release(in[0]);
  gp_release(xv);
  gp_release(m);
}

/* ------------------------------------------------------------------------------------------ */
/* Memory                                                                                      */

Test(eval, peak_bytes_below_the_sum_of_intermediates) {
  GPBuf b = {0};
  gp_buf_puts(&b, HDR "def @main(%x: Tensor[(1000), float32]) {\n");
  gp_buf_puts(&b, "  %0 = nn.relu(%x);\n");
  for (int i = 1; i < 20; i++) gp_buf_printf(&b, "  %%%d = %s(%%%d);\n", i, i % 2 ? "negative" : "nn.relu", i - 1);
  gp_buf_puts(&b, "  %19\n}\n");
  GPModule *m = parse(b.data);
  gp_buf_free(&b);
  int64_t n = 1000;
  GPTensor *x = gp_tensor_alloc(GP_DT_F32, 1, &n, true);
  GPEvalOptions o = {.struct_size = sizeof o, .abi_version = GP_ABI_VERSION};
  int32_t nout;
  GPTensor **out = run_ok(m, 1, &x, &nout, &o);
  cr_assert_eq(o.ops_run, 20);
  cr_assert_eq(o.peak_bytes, 2 * 4000, "peak %zu: one input and one output alive at a time", o.peak_bytes);
  cr_assert_lt(o.peak_bytes, 20 * 4000);
  release_all(out, nout);
  gp_release(x);
  gp_release(m);
}

Test(eval, let_chain_releases_values_too) {
  GPBuf b = {0};
  gp_buf_puts(&b, HDR "def @main(%x: Tensor[(1000), float32]) {\n");
  gp_buf_puts(&b, "  let %v0 = nn.relu(%x);\n");
  for (int i = 1; i < 20; i++) gp_buf_printf(&b, "  let %%v%d = negative(%%v%d);\n", i, i - 1);
  gp_buf_puts(&b, "  %v19\n}\n");
  GPModule *m = parse(b.data);
  gp_buf_free(&b);
  int64_t n = 1000;
  GPTensor *x = gp_tensor_alloc(GP_DT_F32, 1, &n, true);
  GPEvalOptions o = {.struct_size = sizeof o, .abi_version = GP_ABI_VERSION};
  int32_t nout;
  GPTensor **out = run_ok(m, 1, &x, &nout, &o);
  cr_assert_eq(o.peak_bytes, 2 * 4000, "peak %zu", o.peak_bytes);
  release_all(out, nout);
  gp_release(x);
  gp_release(m);
}

/* ------------------------------------------------------------------------------------------ */
/* DLPack                                                                                      */

typedef struct {
  DLManagedTensor m;
  int64_t shape[1];
  float data[4];
  int *deleted;
} Owned;

static void owned_deleter(DLManagedTensor *self) {
  Owned *o = (Owned *)self;
  (*o->deleted)++;
  free(o);
}

static GPTensor *owned_tensor(int *deleted) {
  Owned *o = calloc(1, sizeof *o);
  o->shape[0] = 4;
  memcpy(o->data, X4, sizeof X4);
  o->deleted = deleted;
  o->m.dl_tensor = (DLTensor){.data = o->data, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1},
                              .shape = o->shape};
  o->m.manager_ctx = o;
  o->m.deleter = owned_deleter;
  GPTensor *t = gp_tensor_from_dlpack(&o->m);
  cr_assert(t, "%s", gp_error_message());
  return t;
}

Test(eval, dlpack_input_is_not_copied_and_deleted_once) {
  int deleted = 0;
  GPTensor *x = owned_tensor(&deleted);
  GPModule *m = parse(HDR "def @main(%x: " X4T ", %c: bool) {\n"
                          "  let %t = (%x, nn.relu(%x));\n"
                          "  %0 = if (%c) { %t.0 } else { %x };\n"
                          "  (%0, %t.1, %x)\n"
                          "}\n");
  GPTensor *c = scalar_bool(true);
  GPTensor *in[2] = {x, c};
  int32_t nout;
  GPTensor **out = run_ok(m, 2, in, &nout, NULL);
  cr_assert_eq(nout, 3);
  cr_assert_eq(out[0], x);
  cr_assert_eq(out[2], x);
  cr_assert_eq(out[0]->dl.data, x->dl.data);
  gp_release(x);
  gp_release(c);
  gp_release(m);
  cr_assert_eq(deleted, 0, "the outputs still hold the input");
  gp_release(out[0]);
  gp_release(out[1]);
  cr_assert_eq(deleted, 0);
  gp_release(out[2]);
  cr_assert_eq(deleted, 1, "deleted once, after the last reference");
  gp_free(out);
}

Test(eval, reshape_of_a_dlpack_input_is_a_view_not_a_copy) {
  int deleted = 0;
  GPTensor *x = owned_tensor(&deleted);
  GPModule *m = parse(HDR "def @main(%x: " X4T ") {\n"
                          "  %0 = reshape(%x, newshape=[2, 2]);\n"
                          "  %1 = reshape(%0, newshape=[-1]);\n"
                          "  (%0, nn.relu(%1))\n"
                          "}\n");
  int32_t nout;
  GPTensor **out = run_ok(m, 1, &x, &nout, NULL);
  cr_assert_eq(nout, 2);
  cr_assert_eq(out[0]->dl.ndim, 2);
  cr_assert_eq(out[0]->dl.shape[1], 2);
  cr_assert_eq((char *)out[0]->dl.data + out[0]->dl.byte_offset, (char *)x->dl.data + x->dl.byte_offset,
               "the same bytes");
  expect_f32(out[0], 4, X4);
  const float relu[4] = {0, 0, 1, 2};
  expect_f32(out[1], 4, relu);
  gp_release(x);
  gp_release(m);
  gp_release(out[1]);
  cr_assert_eq(deleted, 0, "the reshaped output still views the input");
  gp_release(out[0]);
  cr_assert_eq(deleted, 1);
  gp_free(out);
}

/* The value observer (GPEvalOptions.observe) sees every parameter and every op call's result,
 * a reshape that is a view of its input's bytes included (it had been skipped: GenIR's
 * calibration saw no range for reshapes). */
typedef struct {
  int seen;
  const GPExpr *want;
  int64_t shape1;
  float first;
} Observed;

static int observe_count(void *user, const GPExpr *node, int32_t field, const DLTensor *v) {
  Observed *o = user;
  cr_assert_eq(field, -1);
  o->seen++;
  if (node == o->want) {
    o->shape1 = v->ndim == 2 ? v->shape[1] : -1;
    o->first = ((const float *)((const char *)v->data + v->byte_offset))[0];
  }
  return 0;
}

Test(eval, the_observer_sees_reshape_views) {
  GPModule *m = parse(HDR "def @main(%x: " X4T ") {\n"
                          "  %0 = nn.relu(%x);\n"
                          "  %1 = reshape(%0, newshape=[1, 4]);\n"
                          "  nn.relu(%1)\n"
                          "}\n");
  GPModule *typed = gp_infer_types(m); /* typed: the evaluator reports this module's nodes */
  cr_assert(typed, "%s", gp_error_message());
  gp_release(m);
  m = typed;
  const GPFunctionExpr *f = gp_module_lookup(m, "main");
  const GPCall *last = (const GPCall *)f->body;
  Observed ob = {.want = last->args[0], .shape1 = 0};
  GPEvalOptions o = {.struct_size = sizeof o, .abi_version = GP_ABI_VERSION, .observe = observe_count, .observe_user = &ob};
  GPTensor *x = tensor_f32(1, (int64_t[]){4}, X4);
  int32_t nout;
  GPTensor **out = run_ok(m, 1, &x, &nout, &o);
  cr_assert_eq(ob.seen, 4, "the parameter and three calls, saw %d", ob.seen);
  cr_assert_eq(ob.shape1, 4, "the reshape was not observed with its shape");
  cr_assert_eq(ob.first, 0.0f);
  gp_release(out[0]);
  gp_free(out);
  gp_release(x);
  gp_release(m);
}

Test(eval, dlpack_input_released_by_the_evaluator_on_error) {
  int deleted = 0;
  GPTensor *x = owned_tensor(&deleted);
  GPModule *m = parse(HDR "def @main(%x: " X4T ") {\n"
                          "  add(%x, meta[relay.Constant][0] /* ty=" X4T " */)\n"
                          "}\n");
  run_err(m, 1, &x, GP_ERR_VALUE, "has no values", false);
  cr_assert_eq(deleted, 0);
  gp_release(x);
  cr_assert_eq(deleted, 1);
  gp_release(m);
}

Test(eval, tensor_to_dlpack_round_trip) {
  int64_t s[2] = {2, 2};
  const float v[4] = {1, 2, 3, 4};
  GPTensor *t = tensor_f32(2, s, v);
  DLManagedTensor *mt = gp_tensor_to_dlpack(t);
  cr_assert(mt, "%s", gp_error_message());
  cr_assert_eq(mt->dl_tensor.data, t->dl.data, "no copy");
  cr_assert_eq(mt->dl_tensor.ndim, 2);
  cr_assert_neq(mt->dl_tensor.shape, t->dl.shape, "the shape array belongs to the managed tensor");
  cr_assert_eq(mt->dl_tensor.shape[1], 2);
  cr_assert_eq(t->obj.ref_count, 2u, "the managed tensor holds a reference");
  gp_release(t); /* the DLPack view keeps it alive */
  GPTensor *back = gp_tensor_from_dlpack(mt);
  cr_assert(back, "%s", gp_error_message());
  cr_assert_eq(gp_tensor_get_f64(back, 3), 4.0);
  expect_f32(back, 4, v);
  gp_release(back); /* runs the deleter, which drops the last reference of t */

  /* a tensor without data cannot be exported */
  GPTensor *nd = gp_tensor_alloc(GP_DT_F32, 2, s, false);
  cr_assert_null(gp_tensor_to_dlpack(nd));
  expect_error(GP_ERR_VALUE, "has no data");
  gp_release(nd);

  /* through the host table, with the deleter called by the consumer */
  const GPHostAPI *h = gp_host_api();
  cr_assert(h->tensor_to_dlpack && h->eval_function);
  GPTensor *u = tensor_f32(2, s, v);
  DLManagedTensor *mu = h->tensor_to_dlpack(u);
  gp_release(u);
  cr_assert_eq(((float *)mu->dl_tensor.data)[2], 3.0f);
  mu->deleter(mu);
}

Test(eval, host_api_eval_function) {
  const GPHostAPI *h = gp_host_api();
  GPModule *m = parse(HDR "def @main(%x: " X4T ") { (nn.relu(%x), negative(%x)) }\n");
  GPTensor *x = vec_f32(4, X4);
  GPTensor **out;
  int32_t nout;
  GPEvalOptions o = {.struct_size = GP_STRUCT_SIZE(GPEvalOptions, num_threads), .abi_version = GP_ABI_VERSION,
                     .num_threads = 1, .peak_bytes = 12345};
  cr_assert_eq(h->eval_function(m, NULL, 1, &x, &out, &nout, &o), 0, "%s", h->error_message());
  cr_assert_eq(o.peak_bytes, 12345, "an older struct without the field is not written past its size");
  cr_assert_eq(nout, 2);
  const float neg[4] = {2, 1, -1, -2};
  expect_f32(out[1], 4, neg);
  gp_release(out[0]);
  gp_release(out[1]);
  h->free(out);
  gp_release(x);
  gp_release(m);
}

/* ------------------------------------------------------------------------------------------ */
/* Scale                                                                                       */

Test(eval, million_node_chain, .timeout = 300) {
  const int n = 1000000;
  GPBuf b = {0};
  gp_buf_puts(&b, HDR "def @main(%x: Tensor[(2), float32]) {\n  %0 = add(%x, 1f);\n");
  for (int i = 1; i < n; i++) {
    if (i % 2)
      gp_buf_printf(&b, "  %%%d = nn.relu(%%%d);\n", i, i - 1);
    else
      gp_buf_printf(&b, "  %%%d = add(%%%d, 1f);\n", i, i - 1);
  }
  gp_buf_printf(&b, "  %%%d\n}\n", n - 1);
  gp_ops_init();
  GPModule *m = gp_parse(b.data, b.len, "chain.relay");
  gp_buf_free(&b);
  cr_assert(m, "%s", gp_error_message());
  const float xv[2] = {-3, 5};
  GPTensor *x = vec_f32(2, xv);
  GPEvalOptions o = {.struct_size = sizeof o, .abi_version = GP_ABI_VERSION, .num_threads = 1};
  int32_t nout;
  GPTensor **out = run_ok(m, 1, &x, &nout, &o);
  const float want[2] = {n / 2 - 1, 5 + n / 2};
  expect_f32(out[0], 2, want);
  cr_assert_eq(o.ops_run, n);
  cr_assert_eq(o.peak_bytes, 16);
  release_all(out, nout);
  gp_release(x);
  gp_release(m);
}

/* ------------------------------------------------------------------------------------------ */
/* Deterministic inputs and comparison                                                         */

/* Parameters with ? dims: each ? from the shape given for the parameter, else any_dim; a shape
 * that does not fit the type, or names no parameter, is an error saying which. */
Test(eval, random_inputs_fill_dynamic_dims) {
  GPModule *m = parse(HDR "def @main(%a: Tensor[(?, 3), float32], %b: Tensor[(2, ?, ?), int32]) { %a }\n");
  GPTensor **in;
  int32_t n;
  cr_assert_eq(gp_eval_random_inputs(m, NULL, 1, &in, &n), -1);
  cr_assert(strstr(gp_error_message(), "%a has type Tensor[(?, 3), float32], not a static tensor type") &&
                strstr(gp_error_message(), "give its shape"),
            "%s", gp_error_message());
  cr_assert_eq(gp_eval_random_inputs_shaped(m, NULL, 1, NULL, 0, 1, &in, &n), 0, "%s", gp_error_message());
  cr_assert_eq(n, 2);
  cr_assert(in[0]->dl.shape[0] == 1 && in[0]->dl.shape[1] == 3);
  cr_assert(in[1]->dl.shape[0] == 2 && in[1]->dl.shape[1] == 1 && in[1]->dl.shape[2] == 1);
  for (int32_t k = 0; k < n; k++) gp_release(in[k]);
  gp_free(in);
  const int64_t a43[2] = {4, 3}, a44[2] = {4, 4}, a4[1] = {4};
  GPInputShape sh = {"a", 2, a43};
  cr_assert_eq(gp_eval_random_inputs_shaped(m, NULL, 1, &sh, 1, 2, &in, &n), 0, "%s", gp_error_message());
  cr_assert(in[0]->dl.shape[0] == 4 && in[0]->dl.shape[1] == 3);
  cr_assert(in[1]->dl.shape[1] == 2 && in[1]->dl.shape[2] == 2);
  for (int32_t k = 0; k < n; k++) gp_release(in[k]);
  gp_free(in);
  const struct {
    GPInputShape sh;
    const char *msg;
  } bad[] = {{{"a", 2, a44}, "the shape given for %a has 4 at dim 1; its type Tensor[(?, 3), float32] has 3"},
             {{"a", 1, a4}, "the shape given for %a has 1 dims; its type Tensor[(?, 3), float32] has 2"},
             {{"z", 1, a4}, "@main has no parameter %z"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    in = (GPTensor **)&n; /* must be reset */
    cr_assert_eq(gp_eval_random_inputs_shaped(m, NULL, 1, &bad[i].sh, 1, 1, &in, &n), -1);
    cr_assert_null(in);
    cr_assert(strstr(gp_error_message(), bad[i].msg), "%s", gp_error_message());
  }
  gp_release(m);
}

/* GPHostAPI.eval_random_inputs_filled (ABI 1.6): each ? is any_dim, and the values are those
 * eval_random_inputs gives a @main whose parameters have the filled static types. */
Test(eval, host_random_inputs_filled) {
  const GPHostAPI *H = graphpass_host_api();
  cr_assert(GP_HAS_FIELD(H, GPHostAPI, eval_random_inputs_filled) && H->eval_random_inputs_filled);
  GPModule *m = parse(HDR "def @main(%a: Tensor[(?, 3), float32], %b: Tensor[(2, ?), int32]) { %a }\n");
  GPModule *s = parse(HDR "def @main(%a: Tensor[(2, 3), float32], %b: Tensor[(2, 2), int32]) { %a }\n");
  GPTensor **in, **want;
  int32_t n, nw;
  cr_assert_eq(H->eval_random_inputs_filled(m, "main", 7, 2, &in, &n), 0, "%s", gp_error_message());
  cr_assert_eq(H->eval_random_inputs(s, "main", 7, &want, &nw), 0, "%s", gp_error_message());
  cr_assert_eq(n, 2);
  cr_assert_eq(nw, 2);
  for (int32_t k = 0; k < n; k++) {
    cr_assert_eq(in[k]->dl.ndim, 2);
    cr_assert(in[k]->dl.shape[0] == 2 && in[k]->dl.shape[1] == (k ? 2 : 3));
    cr_assert_eq(memcmp(in[k]->dl.data, want[k]->dl.data, gp_tensor_nbytes(want[k])), 0, "parameter %d", (int)k);
    gp_release(in[k]);
    gp_release(want[k]);
  }
  free(in);
  free(want);
  in = (GPTensor **)&n;
  cr_assert_eq(H->eval_random_inputs_filled(m, "main", 7, 0, &in, &n), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_VALUE);
  cr_assert(strstr(gp_error_message(), "eval_random_inputs_filled: any_dim must be >= 1, got 0"), "%s",
            gp_error_message());
  cr_assert_eq(H->eval_random_inputs_filled(NULL, "main", 7, 1, &in, &n), -1);
  cr_assert(strstr(gp_error_message(), "eval_random_inputs_filled: mod, inputs and num_inputs must not be NULL"),
            "%s", gp_error_message());
  cr_assert_eq(H->eval_random_inputs_filled(m, "nope", 7, 1, &in, &n), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_NOT_FOUND);
  cr_assert(strstr(gp_error_message(), "@nope"), "%s", gp_error_message());
  gp_release(s);
  gp_release(m);
}

Test(eval, random_inputs_are_deterministic_and_in_range) {
  GPModule *m = parse(HDR "def @main(%a: Tensor[(3, 50), float32], %b: Tensor[(100), int64], %c: Tensor[(64), bool], "
                          "%d: Tensor[(10), float16], %e: uint8) { %a }\n");
  GPTensor **i1, **i2, **i3;
  int32_t n1, n2, n3;
  cr_assert_eq(gp_eval_random_inputs(m, NULL, 42, &i1, &n1), 0, "%s", gp_error_message());
  cr_assert_eq(gp_eval_random_inputs(m, "main", 42, &i2, &n2), 0);
  cr_assert_eq(gp_eval_random_inputs(m, NULL, 43, &i3, &n3), 0);
  cr_assert_eq(n1, 5);
  cr_assert_eq(i1[0]->dl.shape[1], 50);
  bool differ = false;
  for (int32_t k = 0; k < n1; k++) {
    cr_assert_eq(gp_tensor_nbytes(i1[k]), gp_tensor_nbytes(i2[k]));
    cr_assert_eq(memcmp(i1[k]->dl.data, i2[k]->dl.data, gp_tensor_nbytes(i1[k])), 0, "same seed, same values");
    differ |= memcmp(i1[k]->dl.data, i3[k]->dl.data, gp_tensor_nbytes(i1[k])) != 0;
  }
  cr_assert(differ);
  double lo = 1, hi = -1;
  for (int64_t j = 0; j < 150; j++) {
    double v = gp_tensor_get_f64(i1[0], j);
    cr_assert(v >= -1 && v < 1);
    lo = fmin(lo, v), hi = fmax(hi, v);
  }
  cr_assert(lo < -0.5 && hi > 0.5, "spread over [-1, 1): %g %g", lo, hi);
  int seen[10] = {0};
  for (int64_t j = 0; j < 100; j++) {
    int64_t v = gp_tensor_get_i64(i1[1], j);
    cr_assert(v >= 0 && v < 10);
    seen[v]++;
  }
  int distinct = 0;
  for (int j = 0; j < 10; j++) distinct += seen[j] > 0;
  cr_assert_geq(distinct, 6);
  int ones = 0;
  for (int64_t j = 0; j < 64; j++) {
    uint8_t v = ((uint8_t *)i1[2]->dl.data)[j];
    cr_assert(v == 0 || v == 1);
    ones += v;
  }
  cr_assert(ones > 8 && ones < 56);
  for (int64_t j = 0; j < 10; j++) cr_assert(fabs(gp_tensor_get_f64(i1[3], j)) <= 1);
  cr_assert_lt(gp_tensor_get_i64(i1[4], 0), 10);
  release_all(i1, n1);
  release_all(i2, n2);
  release_all(i3, n3);
  gp_release(m);

  m = parse(HDR "def @main(%x: Tensor[(?, 3), float32]) { %x }\n");
  GPTensor **ii = (GPTensor **)1;
  int32_t ni = 3;
  cr_assert_eq(gp_eval_random_inputs(m, NULL, 1, &ii, &ni), -1);
  cr_assert_null(ii);
  expect_error(GP_ERR_VALUE, "%x has type Tensor[(?, 3), float32]");
  gp_release(m);
}

Test(eval, allclose) {
  const float a[4] = {1, 2, NAN, INFINITY}, b[4] = {1, 2.001f, NAN, INFINITY};
  GPTensor *ta = vec_f32(4, a), *tb = vec_f32(4, b);
  double mabs, mrel;
  int64_t worst;
  cr_assert_eq(gp_tensor_allclose(ta, tb, 1e-2, 0, &mabs, &mrel, &worst), 1);
  cr_assert(mabs > 0.0009 && mabs < 0.0011, "%g", mabs);
  cr_assert_eq(worst, 1);
  cr_assert_eq(gp_tensor_allclose(ta, tb, 1e-5, 1e-5, &mabs, &mrel, &worst), 0);
  cr_assert_eq(worst, 1);
  cr_assert(mrel > 4e-4 && mrel < 6e-4, "%g", mrel);
  const float c[4] = {1, 2.001f, 0, -INFINITY};
  GPTensor *tc = vec_f32(4, c);
  cr_assert_eq(gp_tensor_allclose(tb, tc, 1, 1, &mabs, NULL, &worst), 0, "NaN vs number, inf vs -inf");
  cr_assert_eq(worst, 2);
  cr_assert(isinf(mabs));
  /* integers: exact unless a tolerance */
  int64_t n = 3;
  GPTensor *i1 = gp_tensor_alloc(GP_DT_I32, 1, &n, true), *i2 = gp_tensor_alloc(GP_DT_I32, 1, &n, true);
  ((int32_t *)i1->dl.data)[1] = 5;
  ((int32_t *)i2->dl.data)[1] = 6;
  cr_assert_eq(gp_tensor_allclose(i1, i2, 0, 0, &mabs, NULL, &worst), 0);
  cr_assert_eq(mabs, 1.0);
  cr_assert_eq(worst, 1);
  cr_assert_eq(gp_tensor_allclose(i1, i2, 0, 1, NULL, NULL, NULL), 1);
  /* shape or dtype mismatch */
  cr_assert_eq(gp_tensor_allclose(ta, i1, 0, 0, NULL, NULL, NULL), -1);
  expect_error(GP_ERR_VALUE, "Tensor[(4), float32] and Tensor[(3), int32] differ");
  /* strided views compare by logical element */
  int64_t s2[2] = {2, 2};
  const float sq[4] = {1, 2, 3, 4}, tr[4] = {1, 3, 2, 4};
  GPTensor *m1 = tensor_f32(2, s2, sq), *m2 = tensor_f32(2, s2, tr);
  int64_t strides[2] = {1, 2};
  DLManagedTensor view = {.dl_tensor = m2->dl};
  view.dl_tensor.strides = strides;
  GPTensor *tv = gp_tensor_from_dlpack(&view); /* no deleter: m2 keeps the data */
  cr_assert_eq(gp_tensor_allclose(m1, tv, 0, 0, NULL, NULL, NULL), 1);
  gp_release(tv);
  gp_release(m1);
  gp_release(m2);
  gp_release(i1);
  gp_release(i2);
  gp_release(ta);
  gp_release(tb);
  gp_release(tc);
}

/* ------------------------------------------------------------------------------------------ */
/* Random programs: lets, graph sharing across branches, nested ifs, tuples, Primitive
 * functions and capturing closures.  The generator computes the expected value of every
 * binding under each of the 8 assignments of the conditions %c0..%c2 as it writes the text;
 * the evaluator must agree, for every assignment, and release every value it computed.
 * GP_DUMP_PROG=<n> prints program n. */

extern size_t gp_eval_leftover_values;

#define NA 8
typedef struct {
  float v[NA][4];
} Sym;

typedef struct {
  char name[24];
  Sym s;
} Binding;

typedef struct {
  GPBuf *out;
  uint64_t rng;
  int counter;
  Binding vis[512];
  int nvis;
} Gen;

static uint32_t rnd(Gen *g, uint32_t n) {
  g->rng = g->rng * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(g->rng >> 33) % n;
}

static const Binding *pick(Gen *g, int lo) { return &g->vis[lo + (int)rnd(g, (uint32_t)(g->nvis - lo))]; }

static void push_vis(Gen *g, const char *name, const Sym *s) {
  cr_assert_lt(g->nvis, 512);
  snprintf(g->vis[g->nvis].name, sizeof g->vis[0].name, "%s", name);
  g->vis[g->nvis++].s = *s;
}

/* An op over visible values (from index lo): its text into `e`, its value into *s. */
static void gen_op(Gen *g, int lo, GPBuf *e, Sym *s) {
  const Binding *a = pick(g, lo), *b = pick(g, lo);
  int k = (int)rnd(g, 5);
  for (int i = 0; i < NA; i++)
    for (int j = 0; j < 4; j++) {
      float x = a->s.v[i][j], y = b->s.v[i][j];
      s->v[i][j] = k == 0 ? x + y : k == 1 ? x * 0.5f : k == 2 ? -x : k == 3 ? (x > 0 ? x : 0) : x + 1.0f;
    }
  switch (k) {
  case 0: gp_buf_printf(e, "add(%s, %s)", a->name, b->name); break;
  case 1: gp_buf_printf(e, "multiply(%s, 0.5f)", a->name); break;
  case 2: gp_buf_printf(e, "negative(%s)", a->name); break;
  case 3: gp_buf_printf(e, "nn.relu(%s)", a->name); break;
  default: gp_buf_printf(e, "add(%s, 1f)", a->name); break;
  }
}

/* A block "{ stmts; expr }" body (without braces) whose names are visible from index lo;
 * its value into *s.  Names it binds are popped when it ends. */
static void gen_block(Gen *g, int lo, int depth, Sym *s) {
  int mark = g->nvis;
  GPBuf *o = g->out;
  int nst = 1 + (int)rnd(g, depth ? 3 : 6);
  for (int st = 0; st < nst; st++) {
    int kind = (int)rnd(g, depth < 3 ? 7 : 3);
    char name[24];
    Sym v;
    GPBuf e = {0};
    switch (kind) {
    case 0:
    case 1: { /* graph binding or let of an op */
      gen_op(g, lo, &e, &v);
      if (kind == 0)
        snprintf(name, sizeof name, "%%%d", g->counter++);
      else
        snprintf(name, sizeof name, "%%v%d", g->counter++);
      gp_buf_printf(o, "%s%s = %s;\n", kind ? "let " : "", name, e.data);
      break;
    }
    case 2: { /* a tuple and a get-item */
      const Binding *a = pick(g, lo), *b = pick(g, lo);
      int t = g->counter++;
      snprintf(name, sizeof name, "%%%d", g->counter++);
      int which = (int)rnd(g, 2);
      gp_buf_printf(o, "%%%d = (%s, %s);\n%s = %%%d.%d;\n", t, a->name, b->name, name, t, which);
      v = which ? b->s : a->s;
      break;
    }
    case 3:
    case 4: { /* if */
      int c = (int)rnd(g, 3);
      bool as_let = kind == 4;
      if (as_let)
        snprintf(name, sizeof name, "%%v%d", g->counter++);
      else
        snprintf(name, sizeof name, "%%%d", g->counter++);
      gp_buf_printf(o, "%s%s = if (%%c%d) {\n", as_let ? "let " : "", name, c);
      Sym th, el;
      gen_block(g, lo, depth + 1, &th);
      gp_buf_puts(o, "} else {\n");
      gen_block(g, lo, depth + 1, &el);
      gp_buf_puts(o, "};\n");
      for (int i = 0; i < NA; i++) memcpy(v.v[i], (i >> c) & 1 ? th.v[i] : el.v[i], sizeof v.v[i]);
      break;
    }
    case 5: { /* a Primitive function of one argument, called once */
      const Binding *arg = pick(g, lo);
      Sym argv = arg->s;
      char argname[24];
      snprintf(argname, sizeof argname, "%s", arg->name);
      int f = g->counter++;
      char p[24];
      snprintf(p, sizeof p, "%%p%d", g->counter++);
      gp_buf_printf(o, "%%%d = fn (%s: Tensor[(4), float32], Primitive=1) {\n", f, p);
      int inner = g->nvis;
      push_vis(g, p, &argv);
      gen_block(g, inner, depth + 1, &v);
      g->nvis = inner;
      snprintf(name, sizeof name, "%%%d", g->counter++);
      gp_buf_printf(o, "};\n%s = %%%d(%s);\n", name, f, argname);
      break;
    }
    default: { /* a closure capturing the visible names, bound by a let, called once */
      const Binding *arg = pick(g, lo);
      Sym argv = arg->s;
      char argname[24];
      snprintf(argname, sizeof argname, "%s", arg->name);
      int f = g->counter++;
      char q[24];
      snprintf(q, sizeof q, "%%q%d", g->counter++);
      gp_buf_printf(o, "let %%g%d = fn (%s: Tensor[(4), float32]) {\n", f, q);
      int inner = g->nvis;
      push_vis(g, q, &argv);
      gen_block(g, lo, depth + 1, &v);
      g->nvis = inner;
      snprintf(name, sizeof name, "%%%d", g->counter++);
      gp_buf_printf(o, "};\n%s = %%g%d(%s);\n", name, f, argname);
      break;
    }
    }
    gp_buf_free(&e);
    push_vis(g, name, &v);
  }
  /* the block's value: a visible name or an op */
  if (rnd(g, 2)) {
    const Binding *r = pick(g, lo);
    gp_buf_printf(o, "%s\n", r->name);
    *s = r->s;
  } else {
    GPBuf e = {0};
    gen_op(g, lo, &e, s);
    gp_buf_printf(o, "%s\n", e.data);
    gp_buf_free(&e);
  }
  g->nvis = mark;
}

Test(eval, random_programs_agree_with_their_generator, .timeout = 300) {
  gp_ops_init();
  const float xv[4] = {-1.5f, 0.25f, 2, -3}, yv[4] = {4, -0.5f, 0, 1.25f};
  GPTensor *x = vec_f32(4, xv), *y = vec_f32(4, yv);
  for (int prog = 0; prog < 300; prog++) {
    GPBuf text = {0};
    Gen g = {.out = &text, .rng = 0x9e3779b97f4a7c15ull * (uint64_t)(prog + 1)};
    Sym sx, sy;
    for (int i = 0; i < NA; i++) memcpy(sx.v[i], xv, sizeof xv), memcpy(sy.v[i], yv, sizeof yv);
    push_vis(&g, "%x", &sx);
    push_vis(&g, "%y", &sy);
    gp_buf_puts(&text, HDR "def @main(%x: " X4T ", %y: " X4T ", %c0: bool, %c1: bool, %c2: bool) {\n");
    Sym res;
    GPBuf body = {0};
    g.out = &body;
    gen_block(&g, 0, 0, &res);
    gp_buf_puts(&text, body.data);
    gp_buf_puts(&text, "}\n");
    gp_buf_free(&body);
    if (getenv("GP_DUMP_PROG") && atoi(getenv("GP_DUMP_PROG")) == prog) fputs(text.data, stderr);
    GPModule *m = gp_parse(text.data, text.len, "rand.relay");
    cr_assert(m, "program %d: %s\n%s", prog, gp_error_message(), text.data);
    for (int a = 0; a < NA; a++) {
      GPTensor *in[5] = {x, y, scalar_bool(a & 1), scalar_bool(a & 2), scalar_bool(a & 4)};
      GPTensor **out = NULL;
      int32_t nout = 0;
      size_t left = gp_eval_leftover_values;
      int rc = gp_eval_function(m, NULL, 5, in, &out, &nout, NULL);
      cr_assert_eq(rc, 0, "program %d, conditions %d: %s\n%s", prog, a, gp_error_message(), text.data);
      cr_assert_eq(nout, 1);
      for (int j = 0; j < 4; j++) {
        double got = gp_tensor_get_f64(out[0], j), want = res.v[a][j];
        cr_assert(fabs(got - want) <= 1e-5 * (1 + fabs(want)), "program %d, conditions %d, element %d: %g, want %g\n%s",
                  prog, a, j, got, want, text.data);
      }
      cr_assert_eq(gp_eval_leftover_values, left, "program %d, conditions %d: values left in a frame\n%s", prog, a,
                   text.data);
      release_all(out, nout);
      for (int k = 2; k < 5; k++) gp_release(in[k]);
    }
    gp_release(m);
    gp_buf_free(&text);
  }
  gp_release(x);
  gp_release(y);
}
