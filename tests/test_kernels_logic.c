/* test_kernels_logic.c -- the kernels of ir/ops/ops_logic.c (eval/k_logic.c): comparisons,
 * logical and bitwise ops, shifts, the division family and where, run through gp_eval_op on
 * tensors built from C arrays.  Expected values are computed by hand; the semantics are
 * documented at the top of eval/k_logic.c. */
#include "elem_test_helpers.h"

#define RUN(name, a, b) run_kv((name), NOKV, 1, (a), (b), NULL)
#define RUN1(name, a) run_kv((name), NOKV, 1, (a), NULL, NULL)
#define WHERE(c, x, y) run_kv("where", NOKV, 1, (c), (x), (y))
#define TRY(name, a, b) try_run3((name), NOKV, 1, (a), (b), NULL)

/* ========================================================================================== */
/* Comparisons                                                                                 */

Test(kernels_logic, compare_f32_with_nan_and_signed_zero) {
#define A mk(F32, SH(5), F32S(1, 2, NAN, -0.0f, -INFINITY))
#define B mk(F32, SH(5), F32S(2, 2, NAN, 0.0f, -INFINITY))
  EXPECT_I(RUN("equal", A, B), BOOL, SH(5), I64S(0, 1, 0, 1, 1));
  EXPECT_I(RUN("not_equal", A, B), BOOL, SH(5), I64S(1, 0, 1, 0, 0));
  EXPECT_I(RUN("less", A, B), BOOL, SH(5), I64S(1, 0, 0, 0, 0));
  EXPECT_I(RUN("less_equal", A, B), BOOL, SH(5), I64S(1, 1, 0, 1, 1));
  EXPECT_I(RUN("greater", A, B), BOOL, SH(5), I64S(0, 0, 0, 0, 0));
  EXPECT_I(RUN("greater_equal", A, B), BOOL, SH(5), I64S(0, 1, 0, 1, 1));
#undef A
#undef B
}

Test(kernels_logic, compare_ints_f16_f64_bool) {
  EXPECT_I(RUN("less", mk(U8, SH(2), U8S(200, 5)), mk(U8, SH(2), U8S(100, 250))), BOOL, SH(2), I64S(0, 1));
  EXPECT_I(RUN("greater", mk(I64, SH(2), I64S(INT64_MIN, INT64_MAX)), mk(I64, SH(2), I64S(INT64_MAX, INT64_MIN))), BOOL,
           SH(2), I64S(0, 1));
  EXPECT_I(RUN("equal", mk(I8, SH(2), I8S(-128, 3)), mk(I8, SH(2), I8S(-128, -3))), BOOL, SH(2), I64S(1, 0));
  EXPECT_I(RUN("less_equal", mk(I16, SH(2), I16S(-1, 7)), mk(I16, S0, I16S(0))), BOOL, SH(2), I64S(1, 0));
  EXPECT_I(RUN("not_equal", mk(I32, SH(2), I32S(1, 2)), mk(I32, SH(2), I32S(1, 3))), BOOL, SH(2), I64S(0, 1));
  /* float16: 1.0 (0x3C00) vs 1.0009765625 (0x3C01) */
  EXPECT_I(RUN("less", mk(F16, SH(2), U16S(0x3C00, 0x7E00)), mk(F16, SH(2), U16S(0x3C01, 0x3C00))), BOOL, SH(2),
           I64S(1, 0));
  EXPECT_I(RUN("greater_equal", mk(F64, SH(2), F64S(0.1 + 0.2, 0.3)), mk(F64, SH(2), F64S(0.3, 0.3))), BOOL, SH(2),
           I64S(1, 1));
  EXPECT_I(RUN("equal", mk(BOOL, SH(4), U8S(0, 0, 1, 1)), mk(BOOL, SH(4), U8S(0, 1, 0, 1))), BOOL, SH(4),
           I64S(1, 0, 0, 1));
}

Test(kernels_logic, compare_broadcasting_rank0_empty) {
  /* (3, 1) vs (1, 4) -> (3, 4) */
  GPTensor *r = RUN("less", mk(I32, SH(3, 1), I32S(0, 2, 4)), mk(I32, SH(4), I32S(1, 2, 3, 4)));
  EXPECT_I(r, BOOL, SH(3, 4), I64S(1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0));
  EXPECT_I(RUN("equal", mk(F32, S0, F32S(2)), mk(F32, S0, F32S(2))), BOOL, S0, I64S(1));
  r = RUN("greater", mk(F32, SH(0, 3), NULL), mk(F32, SH(3), F32S(1, 2, 3)));
  expect_shape_at(r, BOOL, SH(0, 3), __LINE__);
  gp_release(r);
}

Test(kernels_logic, compare_strided) {
  /* 3x2 transpose of a 2x3 buffer: [[1, 4], [2, 5], [3, 6]] */
  int64_t buf[6] = {1, 2, 3, 4, 5, 6};
  GPTensor *t = mk_strided(I64, SH(3, 2), DIMS(1, 3), buf, sizeof buf, 0);
  EXPECT_I(RUN("greater", t, mk(I64, SH(3, 1), I64S(1, 4, 2))), BOOL, SH(3, 2), I64S(0, 1, 0, 1, 1, 1));
}

/* ========================================================================================== */
/* Logical                                                                                     */

Test(kernels_logic, logical_bool_and_truthiness) {
#define A mk(BOOL, SH(4), U8S(0, 0, 1, 1))
#define B mk(BOOL, SH(4), U8S(0, 1, 0, 1))
  EXPECT_I(RUN("logical_and", A, B), BOOL, SH(4), I64S(0, 0, 0, 1));
  EXPECT_I(RUN("logical_or", A, B), BOOL, SH(4), I64S(0, 1, 1, 1));
  EXPECT_I(RUN("logical_xor", A, B), BOOL, SH(4), I64S(0, 1, 1, 0));
  EXPECT_I(RUN1("logical_not", A), BOOL, SH(4), I64S(1, 1, 0, 0));
#undef A
#undef B
  /* other dtypes: nonzero is true (NaN too), result 1/0 in the same dtype */
  EXPECT_F(RUN("logical_and", mk(F32, SH(3), F32S(NAN, 0, 2)), mk(F32, SH(3), F32S(1, 1, -0.0f))), F32, SH(3),
           F64S(1, 0, 0), 0);
  EXPECT_I(RUN("logical_or", mk(I32, SH(2), I32S(0, 0)), mk(I32, SH(2), I32S(0, -5))), I32, SH(2), I64S(0, 1));
  EXPECT_F(RUN1("logical_not", mk(F64, SH(3), F64S(NAN, 0, -0.0))), F64, SH(3), F64S(0, 1, 1), 0);
  /* broadcasting */
  EXPECT_I(RUN("logical_xor", mk(BOOL, SH(2, 1), U8S(0, 1)), mk(BOOL, SH(2), U8S(0, 1))), BOOL, SH(2, 2),
           I64S(0, 1, 1, 0));
}

/* ========================================================================================== */
/* Bitwise and shifts                                                                          */

Test(kernels_logic, bitwise_ops) {
  EXPECT_I(RUN("bitwise_and", mk(I32, SH(2), I32S(12, -1)), mk(I32, SH(2), I32S(10, INT32_MIN))), I32, SH(2),
           I64S(8, INT32_MIN));
  EXPECT_I(RUN("bitwise_or", mk(U8, SH(2), U8S(0xF0, 1)), mk(U8, SH(2), U8S(0x0F, 2))), U8, SH(2), I64S(255, 3));
  EXPECT_I(RUN("bitwise_xor", mk(I8, SH(2), I8S(-1, 5)), mk(I8, SH(2), I8S(1, 3))), I8, SH(2), I64S(-2, 6));
  EXPECT_I(RUN1("bitwise_not", mk(U8, SH(3), U8S(0, 255, 0x0F))), U8, SH(3), I64S(255, 0, 0xF0));
  EXPECT_I(RUN1("bitwise_not", mk(I16, SH(2), I16S(0, INT16_MIN))), I16, SH(2), I64S(-1, INT16_MAX));
  EXPECT_I(RUN1("bitwise_not", mk(I64, SH(1), I64S(INT64_MAX))), I64, SH(1), I64S(INT64_MIN));
  EXPECT_I(RUN1("bitwise_not", mk(BOOL, SH(2), U8S(0, 1))), BOOL, SH(2), I64S(1, 0));
  EXPECT_I(RUN("bitwise_xor", mk(BOOL, SH(2), U8S(1, 1)), mk(BOOL, SH(2), U8S(0, 1))), BOOL, SH(2), I64S(1, 0));
}

Test(kernels_logic, shifts_defined_everywhere) {
  EXPECT_I(RUN("left_shift", mk(I8, SH(6), I8S(1, 1, 1, 3, -1, 5)), mk(I8, SH(6), I8S(0, 7, 8, 100, 1, -1))), I8, SH(6),
           I64S(1, -128, 0, 0, -2, 0));
  EXPECT_I(RUN("right_shift", mk(I8, SH(6), I8S(-8, -8, -8, 8, 127, -1)), mk(I8, SH(6), I8S(1, 8, -1, 8, 6, 3))), I8,
           SH(6), I64S(-4, -1, -1, 0, 1, -1));
  EXPECT_I(RUN("right_shift", mk(U8, SH(3), U8S(255, 255, 128)), mk(U8, SH(3), U8S(1, 8, 7))), U8, SH(3),
           I64S(127, 0, 1));
  EXPECT_I(RUN("left_shift", mk(U8, SH(2), U8S(255, 1)), mk(U8, SH(2), U8S(1, 200))), U8, SH(2), I64S(254, 0));
  EXPECT_I(RUN("left_shift", mk(I64, SH(3), I64S(1, 1, 3)), mk(I64, SH(3), I64S(63, 64, INT64_MIN))), I64, SH(3),
           I64S(INT64_MIN, 0, 0));
  EXPECT_I(RUN("right_shift", mk(I64, SH(3), I64S(INT64_MIN, INT64_MAX, -3)), mk(I64, SH(3), I64S(63, 64, 1))), I64,
           SH(3), I64S(-1, 0, -2));
  EXPECT_I(RUN("left_shift", mk(I32, SH(2), I32S(1, 1)), mk(I32, SH(2), I32S(31, 32))), I32, SH(2),
           I64S(INT32_MIN, 0));
  /* broadcast shift count */
  EXPECT_I(RUN("left_shift", mk(I16, SH(3), I16S(1, 2, 3)), mk(I16, S0, I16S(4))), I16, SH(3), I64S(16, 32, 48));
}

Test(kernels_logic, bitwise_dtype_errors) {
  GPTensor *r = TRY("bitwise_and", mk(F32, SH(1), F32S(1)), mk(F32, SH(1), F32S(1)));
  EXPECT_ERR(r, GP_ERR_UNSUPPORTED, "lhs: dtype float32 is not supported (integer and bool dtypes only)");
  r = TRY("left_shift", mk(BOOL, SH(1), U8S(1)), mk(BOOL, SH(1), U8S(1)));
  EXPECT_ERR(r, GP_ERR_UNSUPPORTED, "dtype bool is not supported (integer dtypes only)");
  r = try_run3("bitwise_not", NULL, 0, 1, mk(F16, SH(1), U16S(0x3C00)), NULL, NULL);
  EXPECT_ERR(r, GP_ERR_UNSUPPORTED, "data: dtype float16 is not supported");
  /* mismatched dtypes: the type relation */
  r = TRY("less", mk(F32, SH(1), F32S(1)), mk(I32, SH(1), I32S(1)));
  cr_assert_null(r);
  cr_assert_eq(gp_error_kind(), GP_ERR_TYPE, "%s", gp_error_message());
  gp_error_clear();
  r = TRY("equal", mk(F32, SH(2), F32S(1, 2)), mk(F32, SH(3), F32S(1, 2, 3)));
  EXPECT_ERR(r, GP_ERR_TYPE, "do not broadcast");
}

/* ========================================================================================== */
/* Division family                                                                             */

Test(kernels_logic, int_floor_and_trunc_division) {
#define A mk(I32, SH(8), I32S(7, -7, 7, -7, 6, 5, INT32_MIN, INT32_MIN))
#define B mk(I32, SH(8), I32S(2, 2, -2, -2, -3, 0, -1, 3))
  EXPECT_I(RUN("floor_divide", A, B), I32, SH(8), I64S(3, -4, -4, 3, -2, 0, INT32_MIN, -715827883));
  EXPECT_I(RUN("floor_mod", A, B), I32, SH(8), I64S(1, 1, -1, -1, 0, 0, 0, 1));
  EXPECT_I(RUN("trunc_divide", A, B), I32, SH(8), I64S(3, -3, -3, 3, -2, 0, INT32_MIN, -715827882));
  EXPECT_I(RUN("trunc_mod", A, B), I32, SH(8), I64S(1, -1, 1, -1, 0, 0, 0, -2));
  EXPECT_I(RUN("mod", A, B), I32, SH(8), I64S(1, -1, 1, -1, 0, 0, 0, -2));
#undef A
#undef B
  EXPECT_I(RUN("floor_divide", mk(I8, SH(2), I8S(-128, -128)), mk(I8, SH(2), I8S(-1, 0))), I8, SH(2), I64S(-128, 0));
  EXPECT_I(RUN("floor_divide", mk(I64, SH(2), I64S(INT64_MIN, -1)), mk(I64, SH(2), I64S(-1, INT64_MAX))), I64, SH(2),
           I64S(INT64_MIN, -1));
  EXPECT_I(RUN("floor_mod", mk(I64, SH(2), I64S(INT64_MIN, -1)), mk(I64, SH(2), I64S(-1, INT64_MAX))), I64, SH(2),
           I64S(0, INT64_MAX - 1));
  EXPECT_I(RUN("floor_mod", mk(U8, SH(3), U8S(200, 7, 9)), mk(U8, SH(3), U8S(7, 0, 255))), U8, SH(3), I64S(4, 0, 9));
  EXPECT_I(RUN("mod", mk(I16, SH(2), I16S(-32768, 10)), mk(I16, SH(2), I16S(-1, 0))), I16, SH(2), I64S(0, 0));
  EXPECT_I(RUN("floor_divide", mk(BOOL, SH(2), U8S(1, 1)), mk(BOOL, SH(2), U8S(1, 0))), BOOL, SH(2), I64S(1, 0));
}

Test(kernels_logic, float_floor_and_trunc_division) {
#define A mk(F64, SH(6), F64S(7, -7, 7, -7, 5.5, 1))
#define B mk(F64, SH(6), F64S(2, 2, -2, -2, 0, 0))
  EXPECT_F(RUN("floor_divide", A, B), F64, SH(6), F64S(3, -4, -4, 3, INFINITY, INFINITY), 0);
  EXPECT_F(RUN("floor_mod", A, B), F64, SH(6), F64S(1, 1, -1, -1, NAN, NAN), 0);
  EXPECT_F(RUN("trunc_divide", A, B), F64, SH(6), F64S(3, -3, -3, 3, INFINITY, INFINITY), 0);
  EXPECT_F(RUN("mod", A, B), F64, SH(6), F64S(1, -1, 1, -1, NAN, NAN), 0);
  EXPECT_F(RUN("trunc_mod", A, B), F64, SH(6), F64S(1, -1, 1, -1, NAN, NAN), 0);
#undef A
#undef B
  /* signed zeros: Python's -4.0 % 2.0 = 0.0, 4.0 % -2.0 = -0.0; fmod keeps the lhs's sign */
  GPTensor *r = RUN("floor_mod", mk(F32, SH(3), F32S(-4, 4, 5.5f)), mk(F32, SH(3), F32S(2, -2, -2)));
  cr_assert(!signbit(gp_tensor_get_f64(r, 0)) && signbit(gp_tensor_get_f64(r, 1)));
  EXPECT_F(r, F32, SH(3), F64S(0, 0, -0.5), 0);
  r = RUN("mod", mk(F32, SH(2), F32S(-4, 5.5f)), mk(F32, SH(2), F32S(2, -2)));
  cr_assert(signbit(gp_tensor_get_f64(r, 0)));
  EXPECT_F(r, F32, SH(2), F64S(0, 1.5), 0);
  /* float16: 7 (0x4700) floor_mod -2 (0xC000) = -1 (0xBC00); floor_divide = -4 (0xC400) */
  EXPECT_H(RUN("floor_mod", mk(F16, SH(1), U16S(0x4700)), mk(F16, SH(1), U16S(0xC000))), SH(1), U16S(0xBC00));
  EXPECT_H(RUN("floor_divide", mk(F16, SH(1), U16S(0x4700)), mk(F16, SH(1), U16S(0xC000))), SH(1), U16S(0xC400));
  EXPECT_F(RUN("floor_mod", mk(F64, SH(2), F64S(INFINITY, 3)), mk(F64, SH(2), F64S(2, INFINITY))), F64, SH(2),
           F64S(NAN, 3), 0);
}

/* ========================================================================================== */
/* where                                                                                       */

Test(kernels_logic, where_three_way_broadcast) {
  /* condition (2, 1), x (3), y rank 0 -> (2, 3) */
  GPTensor *r = WHERE(mk(BOOL, SH(2, 1), U8S(1, 0)), mk(F32, SH(3), F32S(1, 2, 3)), mk(F32, S0, F32S(-1)));
  EXPECT_F(r, F32, SH(2, 3), F64S(1, 2, 3, -1, -1, -1), 0);
  /* condition (3) broadcasts into x (2, 3), y (2, 1) */
  r = WHERE(mk(BOOL, SH(3), U8S(1, 0, 1)), mk(I64, SH(2, 3), I64S(1, 2, 3, 4, 5, 6)), mk(I64, SH(2, 1), I64S(-7, -8)));
  EXPECT_I(r, I64, SH(2, 3), I64S(1, -7, 3, 4, -8, 6));
  /* all rank 0 */
  EXPECT_I(WHERE(mk(BOOL, S0, U8S(0)), mk(I8, S0, I8S(1)), mk(I8, S0, I8S(2))), I8, S0, I64S(2));
  /* empty */
  r = WHERE(mk(BOOL, SH(0), NULL), mk(F64, SH(1), F64S(1)), mk(F64, SH(1), F64S(2)));
  expect_shape_at(r, F64, SH(0), __LINE__);
  gp_release(r);
}

Test(kernels_logic, where_dtypes_and_bits) {
  /* non-bool conditions: nonzero (and NaN) is true */
  EXPECT_I(WHERE(mk(F32, SH(3), F32S(NAN, 0, -0.0f)), mk(I16, SH(3), I16S(1, 2, 3)), mk(I16, SH(3), I16S(-1, -2, -3))),
           I16, SH(3), I64S(1, -2, -3));
  EXPECT_I(WHERE(mk(I64, SH(2), I64S(0, INT64_MIN)), mk(U8, SH(2), U8S(10, 20)), mk(U8, SH(2), U8S(30, 40))), U8,
           SH(2), I64S(30, 20));
  /* the bits of the chosen element: -0 and NaN pass through */
  GPTensor *r = WHERE(mk(BOOL, SH(2), U8S(1, 0)), mk(F64, SH(2), F64S(-0.0, 1)), mk(F64, SH(2), F64S(5, NAN)));
  cr_assert(signbit(gp_tensor_get_f64(r, 0)));
  EXPECT_F(r, F64, SH(2), F64S(0, NAN), 0);
  EXPECT_H(WHERE(mk(F16, SH(2), U16S(0x3C00, 0)), mk(F16, SH(2), U16S(0x1234, 0x5678)), mk(F16, SH(2), U16S(1, 2))),
           SH(2), U16S(0x1234, 2));
  EXPECT_I(WHERE(mk(BOOL, SH(2), U8S(1, 0)), mk(BOOL, SH(2), U8S(0, 0)), mk(BOOL, SH(2), U8S(1, 1))), BOOL, SH(2),
           I64S(0, 1));
  EXPECT_I(WHERE(mk(BOOL, SH(2), U8S(1, 0)), mk(I32, SH(2), I32S(INT32_MIN, 0)), mk(I32, SH(2), I32S(0, INT32_MAX))),
           I32, SH(2), I64S(INT32_MIN, INT32_MAX));
}

Test(kernels_logic, where_strided_and_errors) {
  /* x: every other element of a buffer */
  float xb[6] = {1, 99, 2, 99, 3, 99};
  GPTensor *x = mk_strided(F32, SH(3), DIMS(2), xb, sizeof xb, 0);
  uint8_t cb[6] = {9, 1, 0, 1, 0, 0};
  GPTensor *c = mk_strided(BOOL, SH(3), DIMS(2), cb, sizeof cb, 1); /* 1, 1, 0 */
  EXPECT_F(WHERE(c, x, mk(F32, SH(3), F32S(7, 8, 9))), F32, SH(3), F64S(1, 2, 9), 0);
  GPTensor *r = try_run3("where", NULL, 0, 1, mk(BOOL, SH(2), U8S(1, 0)), mk(F32, SH(2), F32S(1, 2)),
                         mk(F64, SH(2), F64S(1, 2)));
  cr_assert_null(r);
  cr_assert_eq(gp_error_kind(), GP_ERR_TYPE, "%s", gp_error_message());
  gp_error_clear();
  r = try_run3("where", NULL, 0, 1, mk(BOOL, SH(4), U8S(1, 0, 1, 0)), mk(F32, SH(2), F32S(1, 2)),
               mk(F32, SH(2), F32S(1, 2)));
  EXPECT_ERR(r, GP_ERR_TYPE, "condition");
}

Test(kernels_logic, large_parallel) {
  enum { N = 300000 };
  int32_t *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
  for (int i = 0; i < N; i++) a[i] = i - N / 2, b[i] = (i % 7) - 3;
  GPTensor *r = run_kv("floor_mod", NOKV, 4, mk(I32, SH(N), a), mk(I32, SH(N), b), NULL);
  GPTensor *c = run_kv("less", NOKV, 4, mk(I32, SH(N), a), mk(I32, SH(N), b), NULL);
  const int32_t *d = r->dl.data;
  const uint8_t *cd = c->dl.data;
  for (int i = 0; i < N; i++) {
    int32_t x = a[i], y = b[i], want = 0;
    if (y != 0) {
      want = x % y;
      if (want != 0 && ((want < 0) != (y < 0))) want += y;
    }
    cr_assert_eq(d[i], want, "element %d", i);
    cr_assert_eq(cd[i], x < y, "element %d", i);
  }
  gp_release(r), gp_release(c);
  free(a), free(b);
}

/* ========================================================================================== */
/* Type relations and patterns (gp_op_infer directly)                                          */

static const GPType *infer_n(const char *name, int32_t nargs, const GPType *const *args) {
  gp_error_clear();
  const GPOp *op = gp_op_get(name);
  cr_assert(op, "no op %s", name);
  return gp_op_infer(op, NULL, args, nargs);
}
#define TY(dt, ...) gp_type_tensor((dt), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))
#define TARGS(...) ((const GPType *const[]){__VA_ARGS__})

Test(kernels_logic, type_relations_and_patterns) {
  const int64_t A = GP_DIM_ANY;
  /* comparisons: bool, broadcast, unknown dims propagate */
  const GPType *t = infer_n("less", 2, TARGS(TY(F32, A, 1, 3), TY(F32, 4, 1)));
  cr_assert_eq(t, TY(BOOL, A, 4, 3), "%s", gp_error_message());
  t = infer_n("equal", 2, TARGS(TY(I8, 2, A), TY(I8, 2, 5)));
  cr_assert_eq(t, TY(BOOL, 2, 5), "%s", gp_error_message());
  /* the others keep the dtype */
  cr_assert_eq(infer_n("floor_mod", 2, TARGS(TY(I32, 3), gp_type_tensor(I32, 0, NULL))), TY(I32, 3));
  cr_assert_eq(infer_n("bitwise_not", 1, TARGS(TY(U8, A, 2))), TY(U8, A, 2));
  /* the unary predicates of ops_elemwise */
  cr_assert_eq(infer_n("isnan", 1, TARGS(TY(F16, 2, A))), TY(BOOL, 2, A));
  cr_assert_eq(infer_n("round", 1, TARGS(TY(F64, 7))), TY(F64, 7));
  /* where: three-way broadcasting, x's dtype; condition any dtype */
  t = infer_n("where", 3, TARGS(TY(BOOL, 2, 1, 1), TY(F32, 3, 1), TY(F32, 4)));
  cr_assert_eq(t, TY(F32, 2, 3, 4), "%s", gp_error_message());
  t = infer_n("where", 3, TARGS(TY(F32, A), TY(I64, 1), TY(I64, 1)));
  cr_assert_eq(t, TY(I64, A), "%s", gp_error_message());
  /* errors name the arguments and the shapes */
  cr_assert_null(infer_n("where", 3, TARGS(TY(BOOL, 3), TY(F32, 2), TY(F32, 2))));
  cr_assert(strstr(gp_error_message(), "condition") && strstr(gp_error_message(), "(3)"), "%s", gp_error_message());
  cr_assert_null(infer_n("where", 3, TARGS(TY(BOOL, 2), TY(F32, 2), TY(I32, 2))));
  cr_assert(strstr(gp_error_message(), "y"), "%s", gp_error_message());
  cr_assert_null(infer_n("greater", 2, TARGS(TY(F32, 2, 3), TY(F32, 4))));
  cr_assert(strstr(gp_error_message(), "(2, 3)") && strstr(gp_error_message(), "(4)"), "%s", gp_error_message());
  cr_assert_null(infer_n("where", 2, TARGS(TY(BOOL, 2), TY(F32, 2))));
  gp_error_clear();
  /* patterns as TVM's */
  cr_assert_eq(gp_op_get("less")->pattern, GP_PATTERN_BROADCAST);
  cr_assert_eq(gp_op_get("where")->pattern, GP_PATTERN_BROADCAST);
  cr_assert_eq(gp_op_get("right_shift")->pattern, GP_PATTERN_BROADCAST);
  cr_assert_eq(gp_op_get("logical_not")->pattern, GP_PATTERN_ELEMWISE);
  cr_assert_eq(gp_op_get("isfinite")->pattern, GP_PATTERN_ELEMWISE);
  cr_assert_eq(gp_op_get("sin")->pattern, GP_PATTERN_ELEMWISE);
}
