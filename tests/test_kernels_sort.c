/* test_kernels_sort.c -- the kernels of topk, argsort, sort, cumsum, cumprod and reverse
 * (eval/k_sort.c) and their type relations: evaluated through gp_eval_op on constants, compared
 * with hand-computed values. */
#include "kernel_test_helpers.h"

#define DBLS(...) ((const double[]){__VA_ARGS__})
#define SCALAR 0, NULL
#define K(v) KV("k", gp_attr_int(v))
#define AXIS(v) KV("axis", gp_attr_int(v))
#define ASC(v) KV("is_ascend", gp_attr_bool(v))
#define RET(s) KV("ret_type", gp_attr_str(s))
#define DT(d) KV("dtype", gp_attr_dtype(d))
#define EXCLUSIVE KV("exclusive", gp_attr_bool(true))

/* Both results of a topk with ret_type "both". */
static void topk2(GPTensor *x, const KV *kv, int32_t nkv, int32_t threads, GPTensor **vals, GPTensor **idx) {
  GPTensor *outs[2];
  int n = eval_n("topk", 1, &x, false, kv, nkv, threads, outs, 2);
  cr_assert_eq(n, 2, "topk: %s", n < 0 ? gp_error_message() : "not two results");
  *vals = outs[0];
  *idx = outs[1];
}

/* ------------------------------------------------------------------------------------------ */
/* topk                                                                                        */

Test(ksort, topk_both_ties_lower_index_first) {
  GPTensor *x = mkf(SHAPE(5), FLOATS(1, 3, 2, 3, 0));
  GPTensor *v, *i;
  topk2(x, KVS(K(3)), 1, &v, &i);
  expect_f32(v, SHAPE(3), FLOATS(3, 3, 2));
  expect_ints(i, GP_DT_I32, SHAPE(3), I64S(1, 3, 2));
  topk2(x, KVS(K(2), ASC(true)), 1, &v, &i);
  expect_f32(v, SHAPE(2), FLOATS(0, 1));
  expect_ints(i, GP_DT_I32, SHAPE(2), I64S(4, 0));
  gp_release(x);
  x = mkf(SHAPE(4), FLOATS(2, 2, 2, 1));
  topk2(x, KVS(K(2), ASC(false)), 1, &v, &i);
  expect_ints(i, GP_DT_I32, SHAPE(2), I64S(0, 1));
  gp_release(v);
  topk2(x, KVS(K(3), ASC(true)), 1, &v, &i);
  expect_ints(i, GP_DT_I32, SHAPE(3), I64S(3, 0, 1));
  gp_release(v);
  gp_release(x);
}

Test(ksort, topk_axis_ret_type_dtype) {
  GPTensor *x = mkf(SHAPE(3, 2), FLOATS(1, 6, 5, 2, 3, 4));
  expect_f32(eval1("topk", x, KVS(K(2), AXIS(0), RET("values"))), SHAPE(2, 2), FLOATS(5, 6, 3, 4));
  expect_ints(eval1("topk", x, KVS(K(2), AXIS(-2), RET("indices"), DT(GP_DT_I64))), GP_DT_I64, SHAPE(2, 2),
              I64S(1, 0, 2, 2));
  expect_ints(eval1("topk", x, KVS(K(1), RET("indices"))), GP_DT_I32, SHAPE(3, 1), I64S(1, 0, 1));
  /* k < 1: the whole axis */
  expect_f32(eval1("topk", x, KVS(K(0), RET("values"))), SHAPE(3, 2), FLOATS(6, 1, 5, 2, 4, 3));
  gp_release(x);
}

Test(ksort, topk_strided_int_and_nan) {
  GPTensor *x = mk_strided(GP_DT_I64, SHAPE(2, 3), DIMS(4, 1), 8, (const int64_t[]){INT64_MAX, -1, INT64_MAX - 1, 5, 7, 6});
  GPTensor *v, *i;
  topk2(x, KVS(K(2)), 1, &v, &i);
  expect_ints(v, GP_DT_I64, SHAPE(2, 2), I64S(INT64_MAX, INT64_MAX - 1, 7, 6));
  expect_ints(i, GP_DT_I32, SHAPE(2, 2), I64S(0, 2, 1, 2));
  gp_release(x);
  x = mkf(SHAPE(4), FLOATS(1, NAN, 5, -INFINITY));
  topk2(x, KVS(K(2)), 1, &v, &i);
  expect_ints(i, GP_DT_I32, SHAPE(2), I64S(1, 2));
  gp_release(v);
  topk2(x, KVS(K(2), ASC(true)), 1, &v, &i);
  expect_ints(i, GP_DT_I32, SHAPE(2), I64S(3, 0));
  gp_release(v);
  gp_release(x);
}

Test(ksort, topk_threads_agree) {
  GPTensor *x = mk(GP_DT_F32, SHAPE(64, 500), NULL);
  float *p = x->dl.data;
  for (int64_t k = 0; k < 64 * 500; k++) p[k] = (float)((k * 7919) % 97);
  GPTensor *v1, *i1, *v4, *i4;
  topk2(x, KVS(K(10)), 1, &v1, &i1);
  topk2(x, KVS(K(10)), 4, &v4, &i4);
  cr_assert(memcmp(v1->dl.data, v4->dl.data, 64 * 10 * 4) == 0);
  cr_assert(memcmp(i1->dl.data, i4->dl.data, 64 * 10 * 4) == 0);
  /* row 0: values descending, ties in increasing index */
  const float *vv = v1->dl.data;
  const int32_t *ii = i1->dl.data;
  for (int k = 1; k < 10; k++) {
    cr_assert(vv[k - 1] >= vv[k]);
    if (vv[k - 1] == vv[k]) cr_assert(ii[k - 1] < ii[k]);
    cr_assert_eq(p[ii[k]], vv[k]);
  }
  gp_release(v1);
  gp_release(i1);
  gp_release(v4);
  gp_release(i4);
  gp_release(x);
}

Test(ksort, topk_errors) {
  GPTensor *x = mkf(SHAPE(3), FLOATS(1, 2, 3));
  eval_err("topk", 1, &x, KVS(K(4)), GP_ERR_TYPE, "exceeds");
  eval_err("topk", 1, &x, KVS(K(1), RET("both!")), GP_ERR_TYPE, "ret_type");
  eval_err("topk", 1, &x, KVS(K(1), AXIS(1)), GP_ERR_TYPE, "axis");
  gp_release(x);
  x = mkf(SCALAR, FLOATS(1));
  eval_err("topk", 1, &x, KVS(K(1)), GP_ERR_TYPE, "axis");
  gp_release(x);
}

/* ------------------------------------------------------------------------------------------ */
/* argsort, sort                                                                               */

Test(ksort, argsort_sort) {
  GPTensor *x = mkf(SHAPE(2, 3), FLOATS(3, 1, 2, 0, 0, -1));
  expect_ints(eval1("argsort", x, NOKV), GP_DT_I32, SHAPE(2, 3), I64S(1, 2, 0, 2, 0, 1));
  expect_ints(eval1("argsort", x, KVS(ASC(false))), GP_DT_I32, SHAPE(2, 3), I64S(0, 2, 1, 0, 1, 2));
  expect_ints(eval1("argsort", x, KVS(AXIS(0), DT(GP_DT_I64))), GP_DT_I64, SHAPE(2, 3), I64S(1, 1, 1, 0, 0, 0));
  expect_f32(eval1("sort", x, NOKV), SHAPE(2, 3), FLOATS(1, 2, 3, -1, 0, 0));
  expect_f32(eval1("sort", x, KVS(AXIS(0), ASC(false))), SHAPE(2, 3), FLOATS(3, 1, 2, 0, 0, -1));
  gp_release(x);
  x = mkf(SHAPE(4), FLOATS(2, NAN, -1, 0));
  expect_fv(eval1("sort", x, NOKV), GP_DT_F32, SHAPE(4), DBLS(-1, 0, 2, NAN));
  expect_fv(eval1("sort", x, KVS(ASC(false))), GP_DT_F32, SHAPE(4), DBLS(NAN, 2, 0, -1));
  gp_release(x);
}

Test(ksort, sort_every_dtype) {
  for (size_t k = 0; k < GP_ARRAY_LEN(k_all_dtypes); k++) {
    DLDataType dt = k_all_dtypes[k];
    bool b = dt.code == kDLUInt && dt.bits == 1;
    GPTensor *x = mk(dt, SHAPE(4), NULL);
    int64_t vals[4] = {1, 0, 1, 0};
    if (!b) vals[0] = 3, vals[2] = 2;
    for (int i = 0; i < 4; i++) put(x->dl.data, dt, i, vals[i]);
    if (b)
      expect_ints(eval1("argsort", x, NOKV), GP_DT_I32, SHAPE(4), I64S(1, 3, 0, 2));
    else
      expect_ints(eval1("argsort", x, NOKV), GP_DT_I32, SHAPE(4), I64S(1, 3, 2, 0));
    if (b)
      expect_ints(eval1("sort", x, KVS(ASC(false))), dt, SHAPE(4), I64S(1, 1, 0, 0));
    else
      expect_ints(eval1("sort", x, KVS(ASC(false))), dt, SHAPE(4), I64S(3, 2, 0, 0));
    gp_release(x);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* cumsum, cumprod                                                                             */

Test(ksort, cumsum_axes_and_flatten) {
  GPTensor *x = mkf(SHAPE(2, 3), FLOATS(1, 2, 3, 4, 5, 6));
  expect_f32(eval1("cumsum", x, NOKV), SHAPE(6), FLOATS(1, 3, 6, 10, 15, 21));
  expect_f32(eval1("cumsum", x, KVS(AXIS(1))), SHAPE(2, 3), FLOATS(1, 3, 6, 4, 9, 15));
  expect_f32(eval1("cumsum", x, KVS(AXIS(-2))), SHAPE(2, 3), FLOATS(1, 2, 3, 5, 7, 9));
  expect_f32(eval1("cumsum", x, KVS(AXIS(1), EXCLUSIVE)), SHAPE(2, 3), FLOATS(0, 1, 3, 0, 4, 9));
  expect_f32(eval1("cumprod", x, KVS(AXIS(1))), SHAPE(2, 3), FLOATS(1, 2, 6, 4, 20, 120));
  expect_f32(eval1("cumprod", x, KVS(AXIS(0), EXCLUSIVE)), SHAPE(2, 3), FLOATS(1, 1, 1, 1, 2, 3));
  expect_ints(eval1("cumsum", x, KVS(AXIS(1), DT(GP_DT_I64))), GP_DT_I64, SHAPE(2, 3), I64S(1, 3, 6, 4, 9, 15));
  gp_release(x);
  x = mkf(SCALAR, FLOATS(4));
  expect_f32(eval1("cumsum", x, NOKV), SHAPE(1), FLOATS(4));
  eval_err("cumsum", 1, &x, KVS(AXIS(0)), GP_ERR_TYPE, "axis");
  gp_release(x);
  x = mk(GP_DT_F32, SHAPE(2, 0), NULL);
  GPTensor *y = eval1("cumsum", x, KVS(AXIS(1)));
  expect_shape(y, GP_DT_F32, SHAPE(2, 0));
  gp_release(y);
  y = eval1("cumprod", x, NOKV);
  expect_shape(y, GP_DT_F32, SHAPE(0));
  gp_release(y);
  gp_release(x);
}

Test(ksort, cumsum_int_wraps_and_strided) {
  GPTensor *x = mk(GP_DT_I8, SHAPE(3), (const int8_t[]){100, 100, 100});
  expect_ints(eval1("cumsum", x, NOKV), GP_DT_I8, SHAPE(3), I64S(100, -56, 44));
  expect_ints(eval1("cumprod", x, NOKV), GP_DT_I8, SHAPE(3), I64S(100, 16, 64));
  expect_ints(eval1("cumsum", x, KVS(DT(GP_DT_I32))), GP_DT_I32, SHAPE(3), I64S(100, 200, 300));
  gp_release(x);
  x = mk(GP_DT_I64, SHAPE(2), (const int64_t[]){INT64_MAX, 2});
  expect_ints(eval1("cumsum", x, NOKV), GP_DT_I64, SHAPE(2), I64S(INT64_MAX, INT64_MIN + 1));
  gp_release(x);
  x = mk_strided(GP_DT_F64, SHAPE(2, 2), DIMS(1, 2), 8, (const double[]){1, 2, 3, 4});
  expect_fv(eval1("cumsum", x, KVS(AXIS(0))), GP_DT_F64, SHAPE(2, 2), DBLS(1, 2, 4, 6));
  expect_fv(eval1("cumprod", x, KVS(AXIS(1), EXCLUSIVE)), GP_DT_F64, SHAPE(2, 2), DBLS(1, 1, 1, 3));
  gp_release(x);
  x = mk(GP_DT_BOOL, SHAPE(3), (const uint8_t[]){0, 1, 0});
  expect_ints(eval1("cumsum", x, NOKV), GP_DT_BOOL, SHAPE(3), I64S(0, 1, 1));
  expect_ints(eval1("cumsum", x, KVS(DT(GP_DT_I32))), GP_DT_I32, SHAPE(3), I64S(0, 1, 1));
  gp_release(x);
}

Test(ksort, cumsum_every_dtype) {
  for (size_t k = 1; k < GP_ARRAY_LEN(k_all_dtypes); k++) {
    DLDataType dt = k_all_dtypes[k];
    GPTensor *x = mk_iota(dt, SHAPE(2, 3));
    expect_ints(eval1("cumsum", x, KVS(AXIS(1))), dt, SHAPE(2, 3), I64S(0, 1, 3, 3, 7, 12));
    expect_ints(eval1("cumprod", x, KVS(AXIS(0))), dt, SHAPE(2, 3), I64S(0, 1, 2, 0, 4, 10));
    gp_release(x);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* reverse                                                                                     */

Test(ksort, reverse) {
  GPTensor *x = mkf(SHAPE(2, 3), FLOATS(1, 2, 3, 4, 5, 6));
  expect_f32(eval1("reverse", x, KVS(AXIS(0))), SHAPE(2, 3), FLOATS(4, 5, 6, 1, 2, 3));
  expect_f32(eval1("reverse", x, KVS(AXIS(-1))), SHAPE(2, 3), FLOATS(3, 2, 1, 6, 5, 4));
  eval_err("reverse", 1, &x, NOKV, GP_ERR_TYPE, "axis is required");
  eval_err("reverse", 1, &x, KVS(AXIS(2)), GP_ERR_TYPE, "axis");
  gp_release(x);
  x = mk_strided(GP_DT_I16, SHAPE(3), DIMS(2), 2, (const int16_t[]){7, -8, 9});
  expect_ints(eval1("reverse", x, KVS(AXIS(0))), GP_DT_I16, SHAPE(3), I64S(9, -8, 7));
  gp_release(x);
}
