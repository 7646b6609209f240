/* test_infer_params.c -- InferType solving parameters without a type annotation from their
 * uses (TVM's type solver: Conv2DRel, DenseRel, BiasAddRel, BatchNormRel, ... assigning argument
 * types): each op's backward step, chains, several rounds, conflicts, parameters that stay
 * unknown, and evaluation of a @main with untyped weights. */
#include "test_builders.h"
#include "ir/ir.h"
#include "eval/eval.h"

#include <criterion/criterion.h>
#include <string.h>

#define V "#[version = \"0.0.5\"]\n"

static GPModule *parse(const char *text) {
  GPModule *m = gp_parse(text, strlen(text), "t.relay");
  cr_assert(m, "parse: %s", gp_error_message());
  return m;
}

/* InferType on `src` prints (without type comments) as `want`; the result verifies, prints back
 * to an equal module, and a second InferType keeps every function. */
static void expect_typed(const char *src, const char *want) {
  GPModule *m = parse(src);
  GPModule *o = gp_infer_types(m);
  cr_assert(o, "%s", gp_error_message());
  char *got = gp_print(o, 0);
  cr_assert_str_eq(got, want);
  cr_assert_eq(gp_verify(o), 0, "%s", gp_error_message());
  GPModule *o2 = gp_infer_types(o);
  cr_assert(o2, "%s", gp_error_message());
  for (int32_t i = 0; i < o->num_functions; i++) cr_assert_eq(o2->funcs[i], o->funcs[i]);
  GPModule *back = parse(got);
  GPModule *back_t = gp_infer_types(back);
  cr_assert(back_t, "%s", gp_error_message());
  cr_assert(gp_module_equal(back_t, o), "the printed module parses back to another module");
  /* the input is unchanged */
  cr_assert_null(m->funcs[0]->params[m->funcs[0]->nparams - 1]->type_annotation);
  gp_free(got);
  gp_release(back_t);
  gp_release(back);
  gp_release(o2);
  gp_release(o);
  gp_release(m);
}

static void expect_infer_error(const char *src, const char *needle) {
  GPModule *m = parse(src);
  cr_assert_null(gp_infer_types(m));
  expect_error(GP_ERR_TYPE, needle);
  gp_release(m);
}

/* ---- each op */

Test(infer_params, conv2d) {
  expect_typed(V "def @main(%x: Tensor[(1, 3, 8, 8), float32], %w) {\n"
                 "  nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3])\n"
                 "}\n",
               V "def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(16, 3, 3, 3), float32]) -> "
                 "Tensor[(1, 16, 8, 8), float32] {\n"
                 "  nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3])\n"
                 "}\n");
}

/* NHWC data, HWIO weight, groups: (O: channels, I: C / groups) laid out as HWIO, data's dtype */
Test(infer_params, conv2d_layouts_and_groups) {
  expect_typed(V "def @main(%x: Tensor[(1, 8, 8, 6), float16], %w) {\n"
                 "  nn.conv2d(%x, %w, strides=[2, 2], groups=2, channels=4, kernel_size=[3, 1], "
                 "data_layout=\"NHWC\", kernel_layout=\"HWIO\")\n"
                 "}\n",
               V "def @main(%x: Tensor[(1, 8, 8, 6), float16], %w: Tensor[(3, 1, 3, 4), float16]) -> "
                 "Tensor[(1, 3, 4, 4), float16] {\n"
                 "  nn.conv2d(%x, %w, strides=[2, 2], groups=2, channels=4, kernel_size=[3, 1], "
                 "data_layout=\"NHWC\", kernel_layout=\"HWIO\")\n"
                 "}\n");
  /* depthwise: groups = channels = C */
  expect_typed(V "def @main(%x: Tensor[(1, 8, 5, 5), float32], %w) {\n"
                 "  nn.conv2d(%x, %w, groups=8, channels=8, kernel_size=[3, 3])\n"
                 "}\n",
               V "def @main(%x: Tensor[(1, 8, 5, 5), float32], %w: Tensor[(8, 1, 3, 3), float32]) -> "
                 "Tensor[(1, 8, 3, 3), float32] {\n"
                 "  nn.conv2d(%x, %w, groups=8, channels=8, kernel_size=[3, 3])\n"
                 "}\n");
}

Test(infer_params, conv2d_transpose) {
  /* TVM's Conv2DTransposeRel: the default kernel_layout IOHW, weight (C, channels / groups, kh, kw) */
  expect_typed(V "def @main(%x: Tensor[(1, 4, 5, 5), float32], %w) {\n"
                 "  nn.conv2d_transpose(%x, %w, channels=6, kernel_size=[3, 3], strides=[2, 2], groups=2)\n"
                 "}\n",
               V "def @main(%x: Tensor[(1, 4, 5, 5), float32], %w: Tensor[(4, 3, 3, 3), float32]) -> "
                 "Tensor[(1, 6, 11, 11), float32] {\n"
                 "  nn.conv2d_transpose(%x, %w, channels=6, kernel_size=[3, 3], strides=[2, 2], groups=2)\n"
                 "}\n");
  /* the same weight stated the other way round */
  expect_typed(V "def @main(%x: Tensor[(1, 4, 5, 5), float32], %w) {\n"
                 "  nn.conv2d_transpose(%x, %w, channels=6, kernel_size=[3, 3], strides=[2, 2], groups=2, "
                 "kernel_layout=\"OIHW\")\n"
                 "}\n",
               V "def @main(%x: Tensor[(1, 4, 5, 5), float32], %w: Tensor[(3, 4, 3, 3), float32]) -> "
                 "Tensor[(1, 6, 11, 11), float32] {\n"
                 "  nn.conv2d_transpose(%x, %w, channels=6, kernel_size=[3, 3], strides=[2, 2], groups=2, "
                 "kernel_layout=\"OIHW\")\n"
                 "}\n");
}

Test(infer_params, conv1d_and_conv3d) {
  expect_typed(V "def @main(%x: Tensor[(2, 4, 10), float32], %w) {\n"
                 "  nn.conv1d(%x, %w, channels=5, kernel_size=[3])\n"
                 "}\n",
               V "def @main(%x: Tensor[(2, 4, 10), float32], %w: Tensor[(5, 4, 3), float32]) -> "
                 "Tensor[(2, 5, 8), float32] {\n"
                 "  nn.conv1d(%x, %w, channels=5, kernel_size=[3])\n"
                 "}\n");
  expect_typed(V "def @main(%x: Tensor[(1, 2, 4, 4, 4), float32], %w) {\n"
                 "  nn.conv3d(%x, %w, channels=3, kernel_size=[1, 2, 3])\n"
                 "}\n",
               V "def @main(%x: Tensor[(1, 2, 4, 4, 4), float32], %w: Tensor[(3, 2, 1, 2, 3), float32]) -> "
                 "Tensor[(1, 3, 4, 3, 2), float32] {\n"
                 "  nn.conv3d(%x, %w, channels=3, kernel_size=[1, 2, 3])\n"
                 "}\n");
}

Test(infer_params, dense_and_matmul) {
  expect_typed(V "def @main(%x: Tensor[(4, 7), float32], %w) {\n"
                 "  nn.dense(%x, %w, units=3)\n"
                 "}\n",
               V "def @main(%x: Tensor[(4, 7), float32], %w: Tensor[(3, 7), float32]) -> "
                 "Tensor[(4, 3), float32] {\n"
                 "  nn.dense(%x, %w, units=3)\n"
                 "}\n");
  /* nn.matmul: (K, units), (units, K) with transpose_b */
  expect_typed(V "def @main(%x: Tensor[(4, 7), float32], %w, %v) {\n"
                 "  %0 = nn.matmul(%x, %w, units=3);\n"
                 "  nn.matmul(%0, %v, units=2, transpose_b=True)\n"
                 "}\n",
               V "def @main(%x: Tensor[(4, 7), float32], %w: Tensor[(7, 3), float32], "
                 "%v: Tensor[(2, 3), float32]) -> Tensor[(4, 2), float32] {\n"
                 "  %0 = nn.matmul(%x, %w, units=3);\n"
                 "  nn.matmul(%0, %v, units=2, transpose_b=True)\n"
                 "}\n");
}

Test(infer_params, bias_add_and_prelu) {
  expect_typed(V "def @main(%x: Tensor[(2, 3, 5), float32], %b) {\n"
                 "  nn.bias_add(%x, %b, axis=-1)\n"
                 "}\n",
               V "def @main(%x: Tensor[(2, 3, 5), float32], %b: Tensor[(5), float32]) -> "
                 "Tensor[(2, 3, 5), float32] {\n"
                 "  nn.bias_add(%x, %b, axis=-1)\n"
                 "}\n");
  expect_typed(V "def @main(%x: Tensor[(2, 4, 3), float64], %a) {\n"
                 "  nn.prelu(%x, %a)\n"
                 "}\n",
               V "def @main(%x: Tensor[(2, 4, 3), float64], %a: Tensor[(4), float64]) -> "
                 "Tensor[(2, 4, 3), float64] {\n"
                 "  nn.prelu(%x, %a)\n"
                 "}\n");
}

Test(infer_params, batch_norm) {
  expect_typed(V "def @main(%x: Tensor[(2, 6, 4, 4), float32], %g, %b, %m: Tensor[(6), float32], %v) {\n"
                 "  %0 = nn.batch_norm(%x, %g, %b, %m, %v);\n"
                 "  %0.0\n"
                 "}\n",
               V "def @main(%x: Tensor[(2, 6, 4, 4), float32], %g: Tensor[(6), float32], "
                 "%b: Tensor[(6), float32], %m: Tensor[(6), float32], %v: Tensor[(6), float32]) -> "
                 "Tensor[(2, 6, 4, 4), float32] {\n"
                 "  %0 = nn.batch_norm(%x, %g, %b, %m, %v);\n"
                 "  %0.0\n"
                 "}\n");
}

Test(infer_params, layer_instance_group_norm) {
  expect_typed(V "def @main(%x: Tensor[(2, 5, 7), float32], %g, %b) {\n"
                 "  nn.layer_norm(%x, %g, %b)\n"
                 "}\n",
               V "def @main(%x: Tensor[(2, 5, 7), float32], %g: Tensor[(7), float32], "
                 "%b: Tensor[(7), float32]) -> Tensor[(2, 5, 7), float32] {\n"
                 "  nn.layer_norm(%x, %g, %b)\n"
                 "}\n");
  expect_typed(V "def @main(%x: Tensor[(2, 5, 7), float32], %g, %b) {\n"
                 "  nn.instance_norm(%x, %g, %b)\n"
                 "}\n",
               V "def @main(%x: Tensor[(2, 5, 7), float32], %g: Tensor[(5), float32], "
                 "%b: Tensor[(5), float32]) -> Tensor[(2, 5, 7), float32] {\n"
                 "  nn.instance_norm(%x, %g, %b)\n"
                 "}\n");
  expect_typed(V "def @main(%x: Tensor[(2, 6, 3, 3), float32], %g, %b) {\n"
                 "  nn.group_norm(%x, %g, %b, num_groups=3)\n"
                 "}\n",
               V "def @main(%x: Tensor[(2, 6, 3, 3), float32], %g: Tensor[(6), float32], "
                 "%b: Tensor[(6), float32]) -> Tensor[(2, 6, 3, 3), float32] {\n"
                 "  nn.group_norm(%x, %g, %b, num_groups=3)\n"
                 "}\n");
}

/* Non-default axes: each vector's length is data's extent on the op's axis (channels last),
 * and a negative axis counts from the end. */
Test(infer_params, norms_and_prelu_on_other_axes) {
  expect_typed(V "def @main(%x: Tensor[(2, 4, 4, 6), float32], %g, %b, %m, %v) {\n"
                 "  %0 = nn.batch_norm(%x, %g, %b, %m, %v, axis=3);\n"
                 "  %0.0\n"
                 "}\n",
               V "def @main(%x: Tensor[(2, 4, 4, 6), float32], %g: Tensor[(6), float32], "
                 "%b: Tensor[(6), float32], %m: Tensor[(6), float32], %v: Tensor[(6), float32]) -> "
                 "Tensor[(2, 4, 4, 6), float32] {\n"
                 "  %0 = nn.batch_norm(%x, %g, %b, %m, %v, axis=3);\n"
                 "  %0.0\n"
                 "}\n");
  expect_typed(V "def @main(%x: Tensor[(2, 4, 3), float32], %a) {\n"
                 "  nn.prelu(%x, %a, axis=2)\n"
                 "}\n",
               V "def @main(%x: Tensor[(2, 4, 3), float32], %a: Tensor[(3), float32]) -> "
                 "Tensor[(2, 4, 3), float32] {\n"
                 "  nn.prelu(%x, %a, axis=2)\n"
                 "}\n");
  expect_typed(V "def @main(%x: Tensor[(2, 5, 7), float32], %g, %b) {\n"
                 "  nn.instance_norm(%x, %g, %b, axis=-1)\n"
                 "}\n",
               V "def @main(%x: Tensor[(2, 5, 7), float32], %g: Tensor[(7), float32], "
                 "%b: Tensor[(7), float32]) -> Tensor[(2, 5, 7), float32] {\n"
                 "  nn.instance_norm(%x, %g, %b, axis=-1)\n"
                 "}\n");
  expect_typed(V "def @main(%x: Tensor[(2, 3, 3, 8), float32], %g, %b) {\n"
                 "  nn.group_norm(%x, %g, %b, num_groups=4, axis=3)\n"
                 "}\n",
               V "def @main(%x: Tensor[(2, 3, 3, 8), float32], %g: Tensor[(8), float32], "
                 "%b: Tensor[(8), float32]) -> Tensor[(2, 3, 3, 8), float32] {\n"
                 "  nn.group_norm(%x, %g, %b, num_groups=4, axis=3)\n"
                 "}\n");
  expect_typed(V "def @main(%x: Tensor[(2, 5, 7), float32], %g, %b) {\n"
                 "  nn.layer_norm(%x, %g, %b, axis=1)\n"
                 "}\n",
               V "def @main(%x: Tensor[(2, 5, 7), float32], %g: Tensor[(5), float32], "
                 "%b: Tensor[(5), float32]) -> Tensor[(2, 5, 7), float32] {\n"
                 "  nn.layer_norm(%x, %g, %b, axis=1)\n"
                 "}\n");
}

/* Kernel layouts other than OIHW / HWIO: the weight's dims are (O, I, H, W) laid out as the
 * kernel_layout says. */
Test(infer_params, conv2d_kernel_layouts_ohwi_and_hwoi) {
  expect_typed(V "def @main(%x: Tensor[(1, 6, 6, 3), float32], %w) {\n"
                 "  nn.conv2d(%x, %w, channels=4, kernel_size=[3, 2], data_layout=\"NHWC\", kernel_layout=\"OHWI\")\n"
                 "}\n",
               V "def @main(%x: Tensor[(1, 6, 6, 3), float32], %w: Tensor[(4, 3, 2, 3), float32]) -> "
                 "Tensor[(1, 4, 5, 4), float32] {\n"
                 "  nn.conv2d(%x, %w, channels=4, kernel_size=[3, 2], data_layout=\"NHWC\", kernel_layout=\"OHWI\")\n"
                 "}\n");
  expect_typed(V "def @main(%x: Tensor[(1, 6, 6, 4), float32], %w) {\n"
                 "  nn.conv2d(%x, %w, groups=4, channels=4, kernel_size=[3, 3], data_layout=\"NHWC\", "
                 "kernel_layout=\"HWOI\")\n"
                 "}\n",
               V "def @main(%x: Tensor[(1, 6, 6, 4), float32], %w: Tensor[(3, 3, 4, 1), float32]) -> "
                 "Tensor[(1, 4, 4, 4), float32] {\n"
                 "  nn.conv2d(%x, %w, groups=4, channels=4, kernel_size=[3, 3], data_layout=\"NHWC\", "
                 "kernel_layout=\"HWOI\")\n"
                 "}\n");
}

/* ---- chains and rounds */

static const char *k_chain =
    V "def @main(%x: Tensor[(1, 3, 8, 8), float32], %w1, %b1, %g, %be, %mm, %mv, %w2, %a, %d, %db) {\n"
      "  %0 = nn.conv2d(%x, %w1, padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3]);\n"
      "  %1 = nn.bias_add(%0, %b1);\n"
      "  %2 = nn.batch_norm(%1, %g, %be, %mm, %mv);\n"
      "  %3 = nn.conv2d(%2.0, %w2, strides=[2, 2], channels=4, kernel_size=[1, 1]);\n"
      "  %4 = nn.prelu(%3, %a);\n"
      "  %5 = nn.batch_flatten(%4);\n"
      "  %6 = nn.dense(%5, %d, units=10);\n"
      "  nn.bias_add(%6, %db)\n"
      "}\n";

Test(infer_params, chain_untyped_everywhere) {
  expect_typed(k_chain,
               V "def @main(%x: Tensor[(1, 3, 8, 8), float32], %w1: Tensor[(8, 3, 3, 3), float32], "
                 "%b1: Tensor[(8), float32], %g: Tensor[(8), float32], %be: Tensor[(8), float32], "
                 "%mm: Tensor[(8), float32], %mv: Tensor[(8), float32], %w2: Tensor[(4, 8, 1, 1), float32], "
                 "%a: Tensor[(4), float32], %d: Tensor[(10, 64), float32], %db: Tensor[(10), float32]) -> "
                 "Tensor[(1, 10), float32] {\n"
                 "  %0 = nn.conv2d(%x, %w1, padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3]);\n"
                 "  %1 = nn.bias_add(%0, %b1);\n"
                 "  %2 = nn.batch_norm(%1, %g, %be, %mm, %mv);\n"
                 "  %3 = %2.0;\n"
                 "  %4 = nn.conv2d(%3, %w2, strides=[2, 2], channels=4, kernel_size=[1, 1]);\n"
                 "  %5 = nn.prelu(%4, %a);\n"
                 "  %6 = nn.batch_flatten(%5);\n"
                 "  %7 = nn.dense(%6, %d, units=10);\n"
                 "  nn.bias_add(%7, %db)\n"
                 "}\n");
}

/* Uses that come before the use that determines a param wait for the next round: %a in round 1,
 * %b (from %a's type) in round 2, %c (from %b's) in round 3; add(%c, %b) is typed at the end. */
Test(infer_params, several_rounds) {
  expect_typed(V "def @main(%x: Tensor[(2, 8), float32], %a, %b, %c) {\n"
                 "  %0 = add(%c, %b);\n"
                 "  %1 = nn.bias_add(%b, %c, axis=0);\n"
                 "  %2 = nn.bias_add(%a, %b, axis=0);\n"
                 "  %3 = nn.bias_add(%x, %a);\n"
                 "  (%0, %1, %2, %3)\n"
                 "}\n",
               V "def @main(%x: Tensor[(2, 8), float32], %a: Tensor[(8), float32], %b: Tensor[(8), float32], "
                 "%c: Tensor[(8), float32]) -> (Tensor[(8), float32], Tensor[(8), float32], "
                 "Tensor[(8), float32], Tensor[(2, 8), float32]) {\n"
                 "  %0 = add(%c, %b);\n"
                 "  %1 = nn.bias_add(%b, %c, axis=0);\n"
                 "  %2 = nn.bias_add(%a, %b, axis=0);\n"
                 "  %3 = nn.bias_add(%x, %a);\n"
                 "  (%0, %1, %2, %3)\n"
                 "}\n");
}

/* A param used inside a closure, lets, and a call of a typed global function. */
Test(infer_params, closures_lets_and_global_calls) {
  expect_typed(V "def @main(%x: Tensor[(1, 4), float32], %w, %b, %v) {\n"
                 "  let %f = fn (%y: Tensor[(1, 4), float32]) {\n"
                 "    nn.dense(%y, %w, units=2)\n"
                 "  };\n"
                 "  let %z = %f(%x);\n"
                 "  %0 = nn.bias_add(%z, %b);\n"
                 "  @g(%0, %v)\n"
                 "}\n"
                 "def @g(%p: Tensor[(1, 2), float32], %q: Tensor[(1, 2), float32]) -> Tensor[(1, 2), float32] {\n"
                 "  add(%p, %q)\n"
                 "}\n",
               V "def @main(%x: Tensor[(1, 4), float32], %w: Tensor[(2, 4), float32], "
                 "%b: Tensor[(2), float32], %v: Tensor[(1, 2), float32]) -> Tensor[(1, 2), float32] {\n"
                 "  let %f: fn (Tensor[(1, 4), float32]) -> Tensor[(1, 2), float32] = fn (%y: Tensor[(1, 4), float32]) -> Tensor[(1, 2), float32] {\n"
                 "    nn.dense(%y, %w, units=2)\n"
                 "  };\n"
                 "  let %z: Tensor[(1, 2), float32] = %f(%x);\n"
                 "  %0 = nn.bias_add(%z, %b);\n"
                 "  @g(%0, %v)\n"
                 "}\n"
                 "\n"
                 "def @g(%p: Tensor[(1, 2), float32], %q: Tensor[(1, 2), float32]) -> Tensor[(1, 2), float32] {\n"
                 "  add(%p, %q)\n"
                 "}\n");
}

/* ---- errors */

Test(infer_params, conflicting_requirements) {
  expect_infer_error(V "def @main(%x: Tensor[(1, 8, 4, 4), float32], %y: Tensor[(1, 16, 4, 4), float32], %b) {\n"
                       "  %0 = nn.bias_add(%x, %b);\n"
                       "  %1 = nn.bias_add(%y, %b);\n"
                       "  (%0, %1)\n"
                       "}\n",
                     "t.relay:4:8: error: in @main: nn.bias_add: parameter %b needs type Tensor[(16), float32] "
                     "here, but nn.bias_add at t.relay:3:8 inferred Tensor[(8), float32]");
  /* a conv weight and a dense weight */
  expect_infer_error(V "def @main(%x: Tensor[(1, 2, 3, 3), float32], %w) {\n"
                       "  %0 = nn.conv2d(%x, %w, channels=4, kernel_size=[1, 1]);\n"
                       "  %1 = nn.batch_flatten(%0);\n"
                       "  nn.dense(%1, %w, units=4)\n"
                       "}\n",
                     "t.relay:5:3: error: in @main: nn.dense: parameter %w needs type Tensor[(4, 36), float32] "
                     "here, but nn.conv2d at t.relay:3:8 inferred Tensor[(4, 2, 1, 1), float32]");
  /* the same param twice in one call */
  expect_infer_error(V "def @main(%x: Tensor[(1, 3), float32], %w) {\n"
                       "  %0 = nn.dense(%x, %w, units=3);\n"
                       "  nn.dense(%0, %w, units=2)\n"
                       "}\n",
                     "t.relay:4:3: error: in @main: nn.dense: parameter %w needs type Tensor[(2, 3), float32] "
                     "here, but nn.dense at t.relay:3:8 inferred Tensor[(3, 3), float32]");
  /* an op's and a typed function's */
  expect_infer_error(V "def @main(%x: Tensor[(1, 3), float32], %b) {\n"
                       "  %0 = nn.bias_add(%x, %b);\n"
                       "  (%0, @g(%b))\n"
                       "}\n"
                       "def @g(%p: Tensor[(4), float32]) -> Tensor[(4), float32] { %p }\n",
                     "t.relay:4:8: error: in @main: call @g: parameter %b needs type Tensor[(4), float32] "
                     "here, but nn.bias_add at t.relay:3:8 inferred Tensor[(3), float32]");
}

Test(infer_params, stays_unknown) {
  /* TVM's Conv2DRel needs channels and kernel_size to infer the weight */
  expect_infer_error(V "def @main(%x: Tensor[(1, 8, 4, 4), float32], %w) {\n"
                       "  %0 = nn.conv2d(%x, %w, kernel_size=[3, 3]);\n"
                       "  nn.relu(%0)\n"
                       "}\n",
                     "t.relay:3:8: error: in @main: nn.conv2d: cannot infer the type of parameter %w "
                     "(argument 1), which has no type annotation: nn.conv2d infers it only from attributes");
  expect_infer_error(V "def @main(%x: Tensor[(1, 8), float32], %w) {\n"
                       "  nn.dense(%x, %w)\n"
                       "}\n",
                     "t.relay:3:3: error: in @main: nn.dense: cannot infer the type of parameter %w (argument 1)");
  /* an op without backward inference */
  expect_infer_error(V "def @main(%x, %y: Tensor[(1, 8), float32]) {\n"
                       "  add(%x, %y)\n"
                       "}\n",
                     "t.relay:3:3: error: in @main: add: cannot infer the type of parameter %x (argument 0), "
                     "which has no type annotation");
  /* data itself unknown: the first call that needed a param is named */
  expect_infer_error(V "def @main(%x, %b) {\n"
                       "  nn.bias_add(%x, %b)\n"
                       "}\n",
                     "t.relay:3:3: error: in @main: nn.bias_add: cannot infer the type of parameter %x (argument 0)");
  /* no use at all, or only uses that are not calls */
  expect_infer_error(V "def @main(%x, %y: Tensor[(1, 8), float32]) {\n"
                       "  %y\n"
                       "}\n",
                     "t.relay:2:11: error: in @main: function: parameter %x has no type annotation and no use "
                     "determines its type");
  /* a let var is not solved through its value (only parameters are) */
  expect_infer_error(V "def @main(%x: Tensor[(1, 8), float32], %b) {\n"
                       "  let %c = %b;\n"
                       "  nn.bias_add(%x, %c)\n"
                       "}\n",
                     "t.relay:2:40: error: in @main: function: parameter %b has no type annotation and no use "
                     "determines its type");
}

Test(infer_params, fill_errors_have_locations) {
  expect_infer_error(V "def @main(%x: Tensor[(1, 3, 4, 4), float32], %w) {\n"
                       "  nn.conv2d(%x, %w, groups=2, channels=4, kernel_size=[1, 1])\n"
                       "}\n",
                     "t.relay:3:3: error: in @main: nn.conv2d: cannot infer weight: the input channels 3 of data "
                     "(shape (1, 3, 4, 4)) are not divisible by groups 2");
  expect_infer_error(V "def @main(%x: Tensor[(1, 3), float32], %b) {\n"
                       "  nn.bias_add(%x, %b, axis=2)\n"
                       "}\n",
                     "t.relay:3:3: error: in @main: nn.bias_add: axis");
  /* a relation error in a round is reported as the usual walk reports it */
  expect_infer_error(V "def @main(%x: Tensor[(1, 3), float32], %y: Tensor[(2, 4), float32], %b) {\n"
                       "  %0 = add(%x, %y);\n"
                       "  nn.bias_add(%0, %b)\n"
                       "}\n",
                     "t.relay:3:8: error: in @main: add: shapes (1, 3) of lhs and (2, 4) of rhs");
}

/* ---- evaluation */

Test(infer_params, eval_untyped_weights) {
  GPModule *m = parse(k_chain);
  GPTensor **ins = NULL, **outs = NULL, **outs2 = NULL;
  int32_t nin = 0, nout = 0, nout2 = 0;
  cr_assert_eq(gp_eval_random_inputs(m, "main", 7, &ins, &nin), 0, "%s", gp_error_message());
  cr_assert_eq(nin, 11);
  cr_assert_eq(ins[1]->dl.ndim, 4);
  cr_assert_eq(ins[9]->dl.shape[1], 64);
  cr_assert_eq(gp_eval_function(m, "main", nin, ins, &outs, &nout, NULL), 0, "%s", gp_error_message());
  cr_assert_eq(nout, 1);
  cr_assert_eq(outs[0]->dl.shape[1], 10);
  /* the same values as the annotated module InferType prints */
  GPModule *typed = gp_infer_types(m);
  cr_assert(typed);
  char *text = gp_print(typed, 0);
  GPModule *m2 = parse(text);
  cr_assert_eq(gp_eval_function(m2, "main", nin, ins, &outs2, &nout2, NULL), 0, "%s", gp_error_message());
  cr_assert_eq(nout2, 1);
  cr_assert_eq(memcmp(outs[0]->dl.data, outs2[0]->dl.data, 10 * sizeof(float)), 0);
  gp_release(outs2[0]);
  gp_free(outs2);
  gp_release(outs[0]);
  gp_free(outs);
  for (int32_t i = 0; i < nin; i++) gp_release(ins[i]);
  gp_free(ins);
  gp_free(text);
  gp_release(m2);
  gp_release(typed);
  gp_release(m);
}
