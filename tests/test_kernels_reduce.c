/* test_kernels_reduce.c -- the kernels of max, min, prod, all, any, argmax and argmin (and the
 * empty-axis identities of sum) in eval/k_reduce.c, and their type relations: evaluated through
 * gp_eval_op on constants, compared with hand-computed values. */
#include "kernel_test_helpers.h"

#define SCALAR 0, NULL
#define DBLS(...) ((const double[]){__VA_ARGS__})

#define AX(...) KV("axis", INTS(__VA_ARGS__))
#define KEEP KV("keepdims", gp_attr_bool(true))
#define EXCL KV("exclude", gp_attr_bool(true))
#define LAST KV("select_last_index", gp_attr_bool(true))

/* ------------------------------------------------------------------------------------------ */
/* max, min, prod, all, any                                                                    */

Test(kreduce, basic_axes_keepdims_exclude) {
  GPTensor *x = mkf(SHAPE(2, 3), FLOATS(1, 5, -2, 4, 0, 3));
  expect_f32(eval1("max", x, KVS(AX(1))), SHAPE(2), FLOATS(5, 4));
  expect_f32(eval1("min", x, KVS(AX(-1))), SHAPE(2), FLOATS(-2, 0));
  expect_f32(eval1("max", x, KVS(AX(0), KEEP)), SHAPE(1, 3), FLOATS(4, 5, 3));
  expect_f32(eval1("prod", x, KVS(AX(0))), SHAPE(3), FLOATS(4, 0, -6));
  expect_f32(eval1("prod", x, KVS(AX(0), EXCL)), SHAPE(2), FLOATS(-10, 0));
  expect_f32(eval1("max", x, NOKV), SCALAR, FLOATS(5));
  expect_f32(eval1("min", x, KVS(KEEP)), SHAPE(1, 1), FLOATS(-2));
  expect_f32(eval1("all", x, KVS(AX(1))), SHAPE(2), FLOATS(1, 0));
  expect_f32(eval1("any", x, KVS(AX(0))), SHAPE(3), FLOATS(1, 1, 1));
  /* axis [] reduces nothing */
  expect_f32(eval1("max", x, KVS(KV("axis", gp_attr_ints(0, NULL)))), SHAPE(2, 3), FLOATS(1, 5, -2, 4, 0, 3));
  gp_release(x);
}

Test(kreduce, bool_all_any) {
  GPTensor *x = mk(GP_DT_BOOL, SHAPE(2, 3), (const uint8_t[]){1, 1, 1, 0, 1, 0});
  expect_ints(eval1("all", x, KVS(AX(1))), GP_DT_BOOL, SHAPE(2), I64S(1, 0));
  expect_ints(eval1("any", x, KVS(AX(1))), GP_DT_BOOL, SHAPE(2), I64S(1, 1));
  expect_ints(eval1("all", x, KVS(AX(0))), GP_DT_BOOL, SHAPE(3), I64S(0, 1, 0));
  expect_ints(eval1("max", x, KVS(AX(0))), GP_DT_BOOL, SHAPE(3), I64S(1, 1, 1));
  expect_ints(eval1("min", x, KVS(AX(0))), GP_DT_BOOL, SHAPE(3), I64S(0, 1, 0));
  expect_ints(eval1("argmin", x, KVS(AX(1))), GP_DT_I32, SHAPE(2), I64S(0, 0));
  gp_release(x);
}

Test(kreduce, nan_propagates) {
  GPTensor *x = mkf(SHAPE(2, 3), FLOATS(1, NAN, 3, -1, 2, 0));
  expect_fv(eval1("max", x, KVS(AX(1))), GP_DT_F32, SHAPE(2), DBLS(NAN, 2));
  expect_fv(eval1("min", x, KVS(AX(1))), GP_DT_F32, SHAPE(2), DBLS(NAN, -1));
  expect_fv(eval1("max", x, KVS(AX(0))), GP_DT_F32, SHAPE(3), DBLS(1, NAN, 3));
  expect_fv(eval1("prod", x, KVS(AX(1))), GP_DT_F32, SHAPE(2), DBLS(NAN, -0.0));
  expect_ints(eval1("argmax", x, KVS(AX(1))), GP_DT_I32, SHAPE(2), I64S(1, 1));
  expect_ints(eval1("argmin", x, KVS(AX(1))), GP_DT_I32, SHAPE(2), I64S(1, 0));
  expect_ints(eval1("any", x, KVS(AX(1))), GP_DT_F32, SHAPE(2), I64S(1, 1));
  gp_release(x);
}

Test(kreduce, empty_axis_gives_identity) {
  GPTensor *x = mk(GP_DT_F32, SHAPE(2, 0), NULL);
  expect_fv(eval1("max", x, KVS(AX(1))), GP_DT_F32, SHAPE(2), DBLS(-INFINITY, -INFINITY));
  expect_fv(eval1("min", x, KVS(AX(1), KEEP)), GP_DT_F32, SHAPE(2, 1), DBLS(INFINITY, INFINITY));
  expect_fv(eval1("prod", x, KVS(AX(1))), GP_DT_F32, SHAPE(2), DBLS(1, 1));
  expect_fv(eval1("sum", x, KVS(AX(1))), GP_DT_F32, SHAPE(2), DBLS(0, 0));
  expect_fv(eval1("all", x, KVS(AX(1))), GP_DT_F32, SHAPE(2), DBLS(1, 1));
  expect_fv(eval1("any", x, KVS(AX(1))), GP_DT_F32, SHAPE(2), DBLS(0, 0));
  /* reducing the non-empty axis gives an empty result */
  GPTensor *y = eval1("max", x, KVS(AX(0)));
  expect_shape(y, GP_DT_F32, SHAPE(0));
  gp_release(y);
  gp_release(x);
  x = mk(GP_DT_I32, SHAPE(0, 2), NULL);
  expect_ints(eval1("max", x, KVS(AX(0))), GP_DT_I32, SHAPE(2), I64S(INT32_MIN, INT32_MIN));
  expect_ints(eval1("min", x, KVS(AX(0))), GP_DT_I32, SHAPE(2), I64S(INT32_MAX, INT32_MAX));
  expect_ints(eval1("prod", x, KVS(AX(0))), GP_DT_I32, SHAPE(2), I64S(1, 1));
  gp_release(x);
  x = mk(GP_DT_U8, SHAPE(0), NULL);
  expect_ints(eval1("max", x, NOKV), GP_DT_U8, SCALAR, I64S(0));
  expect_ints(eval1("min", x, NOKV), GP_DT_U8, SCALAR, I64S(255));
  gp_release(x);
  x = mk(GP_DT_I64, SHAPE(0), NULL);
  expect_ints(eval1("max", x, NOKV), GP_DT_I64, SCALAR, I64S(INT64_MIN));
  expect_ints(eval1("min", x, NOKV), GP_DT_I64, SCALAR, I64S(INT64_MAX));
  gp_release(x);
  x = mk(GP_DT_I8, SHAPE(0), NULL);
  expect_ints(eval1("max", x, NOKV), GP_DT_I8, SCALAR, I64S(-128));
  expect_ints(eval1("min", x, NOKV), GP_DT_I8, SCALAR, I64S(127));
  gp_release(x);
}

Test(kreduce, rank0) {
  GPTensor *x = mkf(SCALAR, FLOATS(7));
  expect_f32(eval1("max", x, NOKV), SCALAR, FLOATS(7));
  expect_f32(eval1("prod", x, KVS(KEEP)), SCALAR, FLOATS(7));
  expect_ints(eval1("argmax", x, NOKV), GP_DT_I32, SCALAR, I64S(0));
  eval_err("max", 1, &x, KVS(AX(0)), GP_ERR_TYPE, "axis");
  gp_release(x);
}

Test(kreduce, strided_input) {
  GPTensor *x = mk_strided(GP_DT_F32, SHAPE(2, 3), DIMS(5, 2), 12, FLOATS(3, 9, 1, 2, 8, 6));
  expect_f32(eval1("max", x, KVS(AX(0))), SHAPE(3), FLOATS(3, 9, 6));
  expect_f32(eval1("min", x, KVS(AX(1))), SHAPE(2), FLOATS(1, 2));
  expect_f32(eval1("prod", x, NOKV), SCALAR, FLOATS(3 * 9 * 1 * 2 * 8 * 6));
  expect_ints(eval1("argmax", x, KVS(AX(1))), GP_DT_I32, SHAPE(2), I64S(1, 1));
  expect_ints(eval1("argmin", x, KVS(AX(0))), GP_DT_I32, SHAPE(3), I64S(1, 1, 0));
  gp_release(x);
  /* int16 with a byte offset that misaligns the data */
  x = mk_strided(GP_DT_I16, SHAPE(2, 2), DIMS(3, 1), 1, (const int16_t[]){-5, 4, 300, -7});
  expect_ints(eval1("max", x, KVS(AX(1))), GP_DT_I16, SHAPE(2), I64S(4, 300));
  expect_ints(eval1("argmin", x, KVS(AX(0))), GP_DT_I32, SHAPE(2), I64S(0, 1));
  gp_release(x);
}

Test(kreduce, int_prod_wraps) {
  GPTensor *x = mk(GP_DT_I8, SHAPE(2, 2), (const int8_t[]){16, 16, -128, -1});
  expect_ints(eval1("prod", x, KVS(AX(1))), GP_DT_I8, SHAPE(2), I64S(0, -128));
  gp_release(x);
  x = mk(GP_DT_I32, SHAPE(3), (const int32_t[]){65536, 65536, 3});
  expect_ints(eval1("prod", x, NOKV), GP_DT_I32, SCALAR, I64S(0));
  gp_release(x);
  x = mk(GP_DT_I64, SHAPE(3), (const int64_t[]){INT64_MAX, INT64_MAX, -1});
  expect_ints(eval1("prod", x, NOKV), GP_DT_I64, SCALAR, I64S(-1));
  gp_release(x);
  x = mk(GP_DT_U8, SHAPE(2), (const uint8_t[]){200, 3});
  expect_ints(eval1("prod", x, NOKV), GP_DT_U8, SCALAR, I64S(600 % 256));
  gp_release(x);
}

Test(kreduce, argmax_ties_and_last_index) {
  GPTensor *x = mkf(SHAPE(2, 4), FLOATS(1, 3, 3, 2, 0, -1, 0, -1));
  expect_ints(eval1("argmax", x, KVS(AX(1))), GP_DT_I32, SHAPE(2), I64S(1, 0));
  expect_ints(eval1("argmax", x, KVS(AX(1), LAST)), GP_DT_I32, SHAPE(2), I64S(2, 2));
  expect_ints(eval1("argmin", x, KVS(AX(1))), GP_DT_I32, SHAPE(2), I64S(0, 1));
  expect_ints(eval1("argmin", x, KVS(AX(-1), LAST, KEEP)), GP_DT_I32, SHAPE(2, 1), I64S(0, 3));
  expect_ints(eval1("argmax", x, KVS(AX(0))), GP_DT_I32, SHAPE(4), I64S(0, 0, 0, 0));
  expect_ints(eval1("argmax", x, NOKV), GP_DT_I32, SCALAR, I64S(1));
  expect_ints(eval1("argmax", x, KVS(AX(1), EXCL)), GP_DT_I32, SHAPE(4), I64S(0, 0, 0, 0));
  gp_release(x);
}

Test(kreduce, argmax_several_axes_row_major_index) {
  GPTensor *x = mkf(SHAPE(2, 2, 2), FLOATS(0, 1, 5, 2, 9, 3, 4, 1));
  /* over axes (1, 2): index i1 * 2 + i2 */
  expect_ints(eval1("argmax", x, KVS(AX(1, 2))), GP_DT_I32, SHAPE(2), I64S(2, 0));
  expect_ints(eval1("argmin", x, KVS(AX(2, 1))), GP_DT_I32, SHAPE(2), I64S(0, 3));
  /* over axes (0, 2) of a (2, 2, 2): index i0 * 2 + i2, kept axis 1 */
  expect_ints(eval1("argmax", x, KVS(AX(0, 2))), GP_DT_I32, SHAPE(2), I64S(2, 0));
  gp_release(x);
}

Test(kreduce, every_dtype) {
  for (size_t k = 1; k < GP_ARRAY_LEN(k_all_dtypes); k++) { /* all but bool (tested above) */
    DLDataType dt = k_all_dtypes[k];
    GPTensor *x = mk_iota(dt, SHAPE(2, 3));
    expect_ints(eval1("max", x, KVS(AX(1))), dt, SHAPE(2), I64S(2, 5));
    expect_ints(eval1("min", x, KVS(AX(1))), dt, SHAPE(2), I64S(0, 3));
    expect_ints(eval1("prod", x, KVS(AX(0))), dt, SHAPE(3), I64S(0, 4, 10));
    expect_ints(eval1("all", x, KVS(AX(0))), dt, SHAPE(3), I64S(0, 1, 1));
    expect_ints(eval1("any", x, KVS(AX(1))), dt, SHAPE(2), I64S(1, 1));
    expect_ints(eval1("argmax", x, KVS(AX(0))), GP_DT_I32, SHAPE(3), I64S(1, 1, 1));
    expect_ints(eval1("argmin", x, KVS(AX(1))), GP_DT_I32, SHAPE(2), I64S(0, 0));
    gp_release(x);
  }
}

Test(kreduce, float16_rounding) {
  /* 3 * 0.1 (float16 0.0999755859375) computed in float32 and rounded once */
  double want = (double)gp_f16_to_f32(gp_f32_to_f16((float)((double)gp_f16_to_f32(gp_f32_to_f16(0.1f)) * 3.0)));
  uint16_t v[2] = {gp_f32_to_f16(0.1f), gp_f32_to_f16(3.0f)};
  GPTensor *x = mk(GP_DT_F16, SHAPE(2), v);
  expect_fv(eval1("prod", x, NOKV), GP_DT_F16, SCALAR, DBLS(want));
  gp_release(x);
}

Test(kreduce, threads_agree) {
  int64_t rows = 300, cols = 700;
  GPTensor *x = mk(GP_DT_F32, SHAPE(300, 700), NULL);
  float *p = x->dl.data;
  for (int64_t i = 0; i < rows * cols; i++) p[i] = (float)((i * 7919) % 1013) - 500.0f;
  const char *ops[] = {"max", "min", "argmax", "argmin", "prod", "any"};
  for (size_t o = 0; o < GP_ARRAY_LEN(ops); o++) {
    for (int ax = 0; ax < 2; ax++) {
      GPTensor *a = eval1t(ops[o], 1, &x, KVS(KV("axis", gp_attr_ints(1, (const int64_t[]){ax}))), 1);
      GPTensor *b = eval1t(ops[o], 1, &x, KVS(KV("axis", gp_attr_ints(1, (const int64_t[]){ax}))), 4);
      cr_assert(memcmp(a->dl.data, b->dl.data, (size_t)count(a->dl.ndim, a->dl.shape) * esize(a->dl.dtype)) == 0,
                "%s axis %d differs with 4 threads", ops[o], ax);
      gp_release(a);
      gp_release(b);
    }
  }
  /* spot checks of max along axis 1 by direct computation */
  GPTensor *m = eval1t("max", 1, &x, KVS(AX(1)), 3);
  for (int64_t r = 0; r < rows; r += 37) {
    float best = -INFINITY;
    for (int64_t c = 0; c < cols; c++) best = p[r * cols + c] > best ? p[r * cols + c] : best;
    cr_assert_eq(((float *)m->dl.data)[r], best);
  }
  gp_release(m);
  gp_release(x);
}

Test(kreduce, type_errors) {
  GPTensor *x = mkf(SHAPE(2, 3), FLOATS(1, 2, 3, 4, 5, 6));
  eval_err("max", 1, &x, KVS(AX(2)), GP_ERR_TYPE, "axis");
  eval_err("argmax", 1, &x, KVS(AX(1, -1)), GP_ERR_TYPE, "twice");
  gp_release(x);
}
