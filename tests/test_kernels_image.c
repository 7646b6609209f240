/* test_kernels_image.c -- the image kernels (eval/k_image.c) and their type relations
 * (ir/ops/ops_image.c) through gp_eval_op: hand-computed resize cases for every method and
 * coordinate mode, layouts, dtypes, strided inputs, errors; grid_sample and affine_grid. */
#include "nn_test_helpers.h"

#define FLOATS(...) \
  ((GPAttrValue){.kind = GP_ATTR_FLOATS, .n = (int32_t)(sizeof(VALS(__VA_ARGS__)) / sizeof(double)), .floats = VALS(__VA_ARGS__)})
#define STR(s) gp_attr_str(s)

/* ---- resize2d */

Test(kernels_image, resize2d_nearest_asymmetric_floor) {
  GPTensor *x = T32(DIMS(1, 1, 2, 2), VALS(1, 2, 3, 4));
  GPTensor *y = run1("image.resize2d",
                     KVS(KV("size", INTS(4, 4)), KV("method", STR("nearest_neighbor")),
                         KV("coordinate_transformation_mode", STR("asymmetric")), KV("rounding_method", STR("floor"))),
                     INS(x));
  EXPECT_SHAPE(y, 1, 1, 4, 4);
  EXPECT_VALS(y, 0, 1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4);
  gp_release(y);
  /* rounding "" with asymmetric is floor too; 3 -> 2 with half_pixel: 0.25, 1.75 -> round 0, 2 */
  GPTensor *x3 = T32(DIMS(1, 1, 1, 3), VALS(10, 20, 30));
  y = run1("image.resize2d",
           KVS(KV("size", INTS(1, 2)), KV("method", STR("nearest_neighbor")), KV("rounding_method", STR("round"))),
           INS(x3));
  EXPECT_VALS(y, 0, 10, 30);
  gp_release(y);
  /* round_prefer_floor vs round_prefer_ceil at exactly .5: 4 -> 2 asymmetric gives 0, 2; tf_half_pixel_for_nn gives 1, 3 */
  GPTensor *x4 = T32(DIMS(1, 1, 1, 4), VALS(1, 2, 3, 4));
  y = run1("image.resize2d",
           KVS(KV("size", INTS(1, 2)), KV("method", STR("nearest_neighbor")),
               KV("coordinate_transformation_mode", STR("tf_half_pixel_for_nn")), KV("rounding_method", STR("round_prefer_floor"))),
           INS(x4));
  EXPECT_VALS(y, 0, 2, 4); /* coords 1, 3 */
  gp_release(y);
  /* 4 -> 8 half_pixel: coords -0.25, 0.25, 0.75, 1.25, ... */
  y = run1("image.resize2d",
           KVS(KV("size", INTS(1, 8)), KV("method", STR("nearest_neighbor")), KV("rounding_method", STR("round_prefer_ceil"))),
           INS(x4));
  EXPECT_VALS(y, 0, 1, 1, 2, 2, 3, 3, 4, 4);
  gp_release(y);
  y = run1("image.resize2d",
           KVS(KV("size", INTS(1, 8)), KV("method", STR("nearest_neighbor")), KV("rounding_method", STR("ceil"))),
           INS(x4));
  EXPECT_VALS(y, 0, 1, 2, 2, 3, 3, 4, 4, 4);
  release_all((GPTensor *[]){x, x3, x4, y}, 4);
}

Test(kernels_image, resize2d_linear_modes) {
  GPTensor *x = T32(DIMS(1, 1, 2, 2), VALS(1, 2, 3, 4));
  GPTensor *y = run1("image.resize2d", KVS(KV("size", INTS(4, 4))), INS(x)); /* linear, half_pixel */
  EXPECT_SHAPE(y, 1, 1, 4, 4);
  EXPECT_VALS(y, 1e-6, 1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4);
  gp_release(y);
  y = run1("image.resize2d", KVS(KV("size", INTS(3, 3)), KV("coordinate_transformation_mode", STR("align_corners"))),
           INS(x));
  EXPECT_VALS(y, 1e-6, 1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4);
  gp_release(y);
  y = run1("image.resize2d", KVS(KV("size", INTS(1, 4)), KV("coordinate_transformation_mode", STR("asymmetric"))),
           INS(x));
  EXPECT_VALS(y, 1e-6, 1, 1.5, 2, 2); /* row 0: coords 0, 0.5, 1, 1.5 (clamped) */
  gp_release(y);
  /* pytorch_half_pixel with an output of 1: coordinate 0 */
  y = run1("image.resize2d", KVS(KV("size", INTS(1, 1)), KV("coordinate_transformation_mode", STR("pytorch_half_pixel"))),
           INS(x));
  EXPECT_VALS(y, 1e-6, 1);
  release_all((GPTensor *[]){x, y}, 2);
}

Test(kernels_image, resize2d_nhwc_and_dtypes) {
  /* 2 channels interleaved: channel 0 = 1..4, channel 1 = 10..40 */
  GPTensor *x = T32(DIMS(1, 2, 2, 2), VALS(1, 10, 2, 20, 3, 30, 4, 40));
  GPTensor *y = run1("image.resize2d",
                     KVS(KV("size", INTS(3, 3)), KV("layout", STR("NHWC")),
                         KV("coordinate_transformation_mode", STR("align_corners"))),
                     INS(x));
  EXPECT_SHAPE(y, 1, 3, 3, 2);
  EXPECT_VALS(y, 1e-6, 1, 10, 1.5, 15, 2, 20, 2, 20, 2.5, 25, 3, 30, 3, 30, 3.5, 35, 4, 40);
  gp_release(y);
  /* int32 linear truncates; out_dtype float32 keeps the fraction */
  GPTensor *xi = tensor(GP_DT_I32, 4, DIMS(1, 1, 1, 2), VALS(0, 3));
  y = run1("image.resize2d", KVS(KV("size", INTS(1, 3)), KV("coordinate_transformation_mode", STR("align_corners"))),
           INS(xi));
  cr_assert(gp_dtype_eq(y->dl.dtype, GP_DT_I32));
  EXPECT_VALS(y, 0, 0, 1, 3);
  gp_release(y);
  y = run1("image.resize2d",
           KVS(KV("size", INTS(1, 3)), KV("coordinate_transformation_mode", STR("align_corners")),
               KV("out_dtype", gp_attr_dtype(GP_DT_F32))),
           INS(xi));
  cr_assert(gp_dtype_eq(y->dl.dtype, GP_DT_F32));
  EXPECT_VALS(y, 0, 0, 1.5, 3);
  gp_release(y);
  /* float16, float64, int64 nearest (exact copies), bool */
  DLDataType dts[] = {GP_DT_F16, GP_DT_F64, GP_DT_I64, GP_DT_U8, GP_DT_I8, GP_DT_BOOL};
  for (size_t i = 0; i < GP_ARRAY_LEN(dts); i++) {
    GPTensor *xd = tensor(dts[i], 4, DIMS(1, 1, 1, 2), VALS(1, 0));
    y = run1("image.resize2d",
             KVS(KV("size", INTS(2, 4)), KV("method", STR("nearest_neighbor")),
                 KV("coordinate_transformation_mode", STR("asymmetric")), KV("rounding_method", STR("floor"))),
             INS(xd));
    cr_assert(gp_dtype_eq(y->dl.dtype, dts[i]));
    EXPECT_VALS(y, 0, 1, 1, 0, 0, 1, 1, 0, 0);
    gp_release(y);
    y = run1("image.resize2d", KVS(KV("size", INTS(1, 3)), KV("coordinate_transformation_mode", STR("align_corners"))),
             INS(xd));
    double mid = dts[i].code == kDLFloat ? 0.5 : dts[i].bits == 1 ? 1 : 0;
    EXPECT_VALS(y, 1e-3, 1, mid, 0);
    gp_release(y);
    gp_release(xd);
  }
  GPTensor *big = tensor(GP_DT_I64, 4, DIMS(1, 1, 1, 1), NULL);
  int64_t bv = INT64_MAX - 1;
  memcpy(big->dl.data, &bv, 8);
  y = run1("image.resize2d", KVS(KV("size", INTS(2, 2)), KV("method", STR("nearest_neighbor"))), INS(big));
  int64_t got;
  memcpy(&got, (char *)y->dl.data + 24, 8);
  cr_assert_eq(got, bv);
  release_all((GPTensor *[]){x, xi, big, y}, 4);
}

Test(kernels_image, resize_cubic) {
  GPTensor *x = T32(DIMS(1, 1, 6), VALS(0, 1, 2, 3, 4, 5));
  /* align_corners 6 -> 11: coordinates x / 2; cubic reproduces lines inside, edges clamp */
  GPTensor *y = run1("image.resize1d",
                     KVS(KV("size", INTS(11)), KV("method", STR("cubic")),
                         KV("coordinate_transformation_mode", STR("align_corners"))),
                     INS(x));
  EXPECT_SHAPE(y, 1, 1, 11);
  /* at 0.5: taps (0, 0, 1, 2) weights (-1/16, 9/16, 9/16, -1/16) -> 0.4375; 4.5 mirrors: 5 - 0.4375 */
  EXPECT_VALS(y, 1e-6, 0, 0.4375, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5625, 5);
  gp_release(y);
  y = run1("image.resize1d",
           KVS(KV("size", INTS(11)), KV("method", STR("cubic")), KV("coordinate_transformation_mode", STR("align_corners")),
               KV("cubic_exclude", gp_attr_int(1))),
           INS(x));
  double e = (0.5625 - 0.125) / 1.0625;
  EXPECT_VALS(y, 1e-6, 0, e, 1, 1.5, 2, 2.5, 3, 3.5, 4, 5 - e, 5);
  gp_release(y);
  /* alpha -0.75 at t = 0.5: weights (-3/32, 19/32, 19/32, -3/32) */
  y = run1("image.resize1d",
           KVS(KV("size", INTS(11)), KV("method", STR("cubic")), KV("coordinate_transformation_mode", STR("align_corners")),
               KV("cubic_alpha", gp_attr_float(-0.75))),
           INS(x));
  EXPECT_VALS(y, 1e-6, 0, 19.0 / 32 - 6.0 / 32, 1, 1.5, 2, 2.5, 3, 3.5, 4, 5 - (13.0 / 32), 5);
  release_all((GPTensor *[]){x, y}, 2);
}

Test(kernels_image, resize_crop_and_resize_extrapolation) {
  GPTensor *x = T32(DIMS(1, 1, 4), VALS(0, 10, 20, 30));
  GPTensor *y = run1("image.resize1d",
                     KVS(KV("size", INTS(3)), KV("roi", FLOATS(0.5, 1.5)),
                         KV("coordinate_transformation_mode", STR("tf_crop_and_resize")),
                         KV("extrapolation_value", gp_attr_float(-1))),
                     INS(x));
  EXPECT_VALS(y, 1e-6, 15, 30, -1); /* coordinates 1.5, 3, 4.5 */
  gp_release(y);
  /* an output of 1: the middle of the box, (0.25 + 0.75) / 2 * 3 = 1.5 */
  y = run1("image.resize1d",
           KVS(KV("size", INTS(1)), KV("roi", FLOATS(0.25, 0.75)),
               KV("coordinate_transformation_mode", STR("tf_crop_and_resize"))),
           INS(x));
  EXPECT_VALS(y, 1e-6, 15);
  release_all((GPTensor *[]){x, y}, 2);
}

Test(kernels_image, resize3d_linear) {
  /* 2x2x2 -> 3x3x3 align_corners: trilinear of v = 4d + 2h + w */
  double v[8];
  for (int i = 0; i < 8; i++) v[i] = i;
  GPTensor *x = T32(DIMS(1, 1, 2, 2, 2), v);
  GPTensor *y = run1("image.resize3d",
                     KVS(KV("size", INTS(3, 3, 3)), KV("coordinate_transformation_mode", STR("align_corners"))),
                     INS(x));
  EXPECT_SHAPE(y, 1, 1, 3, 3, 3);
  for (int d = 0; d < 3; d++)
    for (int h = 0; h < 3; h++)
      for (int w = 0; w < 3; w++) {
        double want = 4 * d * 0.5 + 2 * h * 0.5 + w * 0.5;
        cr_assert_float_eq(at(y, (d * 3 + h) * 3 + w), want, 1e-6);
      }
  release_all((GPTensor *[]){x, y}, 2);
}

Test(kernels_image, resize_strided_input) {
  /* a transposed view: logical [1, 1, 3, 4] with strides (12, 12, 1, 3) */
  GPTensor *c = random_tensor(GP_DT_F32, 4, DIMS(1, 1, 3, 4), 1.0);
  float buf[12];
  for (int h = 0; h < 3; h++)
    for (int w = 0; w < 4; w++) buf[w * 3 + h] = (float)at(c, h * 4 + w);
  float padded[13];
  padded[0] = 0;
  memcpy(padded + 1, buf, sizeof buf);
  GPTensor *v = make_view(GP_DT_F32, 4, DIMS(1, 1, 3, 4), DIMS(12, 12, 1, 3), 4, padded, sizeof padded);
  const char *methods[] = {"nearest_neighbor", "linear", "cubic"};
  for (int m = 0; m < 3; m++) {
    GPTensor *a = run1("image.resize2d", KVS(KV("size", INTS(5, 7)), KV("method", STR(methods[m]))), INS(c));
    GPTensor *b = run1("image.resize2d", KVS(KV("size", INTS(5, 7)), KV("method", STR(methods[m]))), INS(v));
    expect_same(b, a, 0, 0, methods[m]);
    release_all((GPTensor *[]){a, b}, 2);
  }
  release_all((GPTensor *[]){c, v}, 2);
}

Test(kernels_image, resize_errors) {
  GPTensor *x = T32(DIMS(1, 1, 2, 2), VALS(1, 2, 3, 4));
  GPTensor *outs[4];
  int32_t nout;
  cr_assert_eq(run_op("image.resize2d", KVS(KV("size", INTS(4))), INS(x), 1, outs, &nout), -1);
  expect_error(GP_ERR_TYPE, "size must have 2 values");
  cr_assert_eq(run_op("image.resize2d", KVS(KV("size", INTS(4, 4)), KV("method", STR("bilinear"))), INS(x), 1, outs, &nout), -1);
  expect_error(GP_ERR_TYPE, "method \"bilinear\"");
  cr_assert_eq(run_op("image.resize2d",
                      KVS(KV("size", INTS(4, 4)), KV("coordinate_transformation_mode", STR("half_pixel_symmetric"))),
                      INS(x), 1, outs, &nout),
               -1);
  expect_error(GP_ERR_TYPE, "coordinate_transformation_mode");
  cr_assert_eq(run_op("image.resize2d", KVS(KV("size", INTS(4, 4)), KV("roi", FLOATS(0, 1))), INS(x), 1, outs, &nout), -1);
  expect_error(GP_ERR_TYPE, "roi must have 4 values");
  cr_assert_eq(run_op("image.resize2d", KVS(KV("size", INTS(4, 4)), KV("layout", STR("NCW"))), INS(x), 1, outs, &nout), -1);
  expect_error(GP_ERR_TYPE, "layout");
  cr_assert_eq(run_op("image.resize1d", KVS(KV("size", INTS(4))), INS(x), 1, outs, &nout), -1);
  expect_error(GP_ERR_TYPE, "layout \"NCW\" has 3 axes");
  GPTensor *e = T32(DIMS(1, 1, 0, 2), NULL);
  cr_assert_eq(run_op("image.resize2d", KVS(KV("size", INTS(3, 3))), INS(e), 1, outs, &nout), -1);
  expect_error(GP_ERR_VALUE, "cannot resize an empty axis");
  release_all((GPTensor *[]){x, e}, 2);
}

/* ---- grid_sample, affine_grid */

Test(kernels_image, grid_sample_hand) {
  GPTensor *x = T32(DIMS(1, 1, 2, 2), VALS(1, 2, 3, 4));
  /* x coordinates, then y coordinates, for 4 output points */
  GPTensor *g = T32(DIMS(1, 2, 1, 4), VALS(-1, 1, 0, 1, -1, 1, 0, -1));
  GPTensor *y = run1("image.grid_sample", NOKV, INS(x, g)); /* bilinear, zeros, align_corners */
  EXPECT_SHAPE(y, 1, 1, 1, 4);
  EXPECT_VALS(y, 1e-6, 1, 4, 2.5, 2);
  gp_release(y);
  GPTensor *g2 = T32(DIMS(1, 2, 1, 2), VALS(-1, 3, -1, 0)); /* (-1, -1) and (3, 0) */
  y = run1("image.grid_sample", KVS(KV("align_corners", gp_attr_bool(false))), INS(x, g2));
  /* (-1,-1) -> (-0.5,-0.5): a quarter of x[0,0]; (3, 0) -> x 3.5 (all zeros) */
  EXPECT_VALS(y, 1e-6, 0.25, 0);
  gp_release(y);
  y = run1("image.grid_sample", KVS(KV("align_corners", gp_attr_bool(false)), KV("padding_mode", STR("border"))),
           INS(x, g2));
  EXPECT_VALS(y, 1e-6, 1, 3); /* (3, 0): x clamped to 1, y = 0.5 -> (2 + 4) / 2 */
  gp_release(y);
  y = run1("image.grid_sample", KVS(KV("align_corners", gp_attr_bool(false)), KV("padding_mode", STR("reflection"))),
           INS(x, g2));
  /* (3, 0): x 3.5 reflects about 1.5 to -0.5 -> taps -1 (reflected to 0) and 0: x[., 0] = (1 + 3) / 2 */
  EXPECT_VALS(y, 1e-6, 1, 2);
  gp_release(y);
  GPTensor *g3 = T32(DIMS(1, 2, 1, 2), VALS(0, 0.2, 0, 0));
  y = run1("image.grid_sample", KVS(KV("method", STR("nearest"))), INS(x, g3));
  EXPECT_VALS(y, 0, 1, 2); /* 0.5 rounds to even 0; 0.6 to 1 */
  gp_release(y);
  /* bicubic at a pixel centre reproduces it */
  GPTensor *x4 = T32(DIMS(1, 1, 4, 4), VALS(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  GPTensor *g4 = T32(DIMS(1, 2, 1, 2), VALS(-1.0 / 3, 1.0 / 3, -1.0 / 3, 1.0 / 3));
  y = run1("image.grid_sample", KVS(KV("method", STR("bicubic"))), INS(x4, g4));
  EXPECT_VALS(y, 1e-5, 5, 10);
  gp_release(y);
  cr_assert_eq(run_op("image.grid_sample", KVS(KV("method", STR("linear"))), INS(x, g), 1, (GPTensor *[4]){0}, &(int32_t){0}), -1);
  expect_error(GP_ERR_TYPE, "method \"linear\"");
  release_all((GPTensor *[]){x, g, g2, g3, x4, g4}, 6);
}

Test(kernels_image, grid_sample_3d) {
  double v[8];
  for (int i = 0; i < 8; i++) v[i] = i; /* 4z + 2y + x */
  GPTensor *x = T32(DIMS(1, 1, 2, 2, 2), v);
  GPTensor *g = T32(DIMS(1, 3, 1, 1, 2), VALS(0, 1, 0, -1, 0, 1)); /* (x, y, z) = (0,0,0), (1,-1,1) */
  GPTensor *y = run1("image.grid_sample", KVS(KV("layout", STR("NCDHW"))), INS(x, g));
  EXPECT_SHAPE(y, 1, 1, 1, 1, 2);
  EXPECT_VALS(y, 1e-6, 3.5, 5);
  release_all((GPTensor *[]){x, g, y}, 3);
}

Test(kernels_image, affine_grid_identity) {
  GPTensor *t = T32(DIMS(1, 2, 3), VALS(1, 0, 0, 0, 1, 0));
  GPTensor *y = run1("image.affine_grid", KVS(KV("target_shape", INTS(2, 3))), INS(t));
  EXPECT_SHAPE(y, 1, 2, 2, 3);
  EXPECT_VALS(y, 1e-6, -1, 0, 1, -1, 0, 1, -1, -1, -1, 1, 1, 1);
  release_all((GPTensor *[]){t, y}, 2);
}

/* ---- reinterpret */

Test(kernels_image, reinterpret_bits) {
  GPTensor *x = T32(DIMS(2), VALS(1.0, -2.0));
  GPTensor *y = run1("reinterpret", KVS(KV("dtype", gp_attr_dtype(GP_DT_I32))), INS(x));
  cr_assert(gp_dtype_eq(y->dl.dtype, GP_DT_I32));
  EXPECT_VALS(y, 0, 0x3f800000, (double)(int32_t)0xc0000000u);
  gp_release(y);
  /* strided: every other element of a float64 buffer, as int64 */
  double buf[4] = {1.0, 9.0, 0.5, 9.0};
  GPTensor *v = make_view(GP_DT_F64, 1, DIMS(2), DIMS(2), 0, buf, sizeof buf);
  y = run1("reinterpret", KVS(KV("dtype", gp_attr_dtype(GP_DT_I64))), INS(v));
  int64_t got[2], want[2];
  memcpy(got, y->dl.data, sizeof got);
  memcpy(&want[0], &buf[0], 8);
  memcpy(&want[1], &buf[2], 8);
  cr_assert(got[0] == want[0] && got[1] == want[1]);
  gp_release(y);
  /* uint8 -> bool keeps 0 / 1 */
  GPTensor *u = tensor(GP_DT_U8, 1, DIMS(3), VALS(0, 1, 7));
  y = run1("reinterpret", KVS(KV("dtype", gp_attr_dtype(GP_DT_BOOL))), INS(u));
  EXPECT_VALS(y, 0, 0, 1, 1);
  gp_release(y);
  GPTensor *outs[4];
  int32_t nout;
  cr_assert_eq(run_op("reinterpret", KVS(KV("dtype", gp_attr_dtype(GP_DT_I64))), INS(x), 1, outs, &nout), -1);
  expect_error(GP_ERR_TYPE, "another width");
  release_all((GPTensor *[]){x, v, u}, 3);
}
