/* test_kernels_elemwise.c -- the reference kernels of the elementwise ops and of sum/mean
 * (eval/k_elemwise.c, eval/k_reduce.c), run through gp_eval_op (and gp_eval_call) on tensors
 * built from C arrays.  Expected values are computed by hand; the semantics are documented at
 * the top of each kernel file. */
#include "elem_test_helpers.h"

#define AXES(...) KV("axis", gp_attr_ints(NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__)))
#define AXES_EMPTY() KV("axis", gp_attr_ints(0, NULL))

static GPTensor *try_run_t(const char *name, const KV *kv, int32_t nkv, int32_t threads, GPTensor *a, GPTensor *b) {
  return try_run3(name, kv, nkv, threads, a, b, NULL);
}
#define RUN(name, kv, a, b) run_kv((name), kv, 1, (a), (b), NULL)
#define RUN_T(name, kv, threads, a, b) run_kv((name), kv, (threads), (a), (b), NULL)

/* ========================================================================================== */
/* Binary arithmetic                                                                           */

Test(kernels_elemwise, add_f32_same_shape) {
  GPTensor *r = RUN("add", NOKV, mk(F32, SH(2, 3), F32S(1, 2, 3, 4, 5, 6)), mk(F32, SH(2, 3), F32S(10, 20, 30, 40, 50, 60)));
  EXPECT_F(r, F32, SH(2, 3), F64S(11, 22, 33, 44, 55, 66), 0);
}

Test(kernels_elemwise, binary_f32_all_ops) {
#define A mk(F32, SH(4), F32S(6, -3, 2.5f, 0.5f))
#define B mk(F32, SH(4), F32S(4, 2, -2, 3))
  EXPECT_F(RUN("subtract", NOKV, A, B), F32, SH(4), F64S(2, -5, 4.5, -2.5), 0);
  EXPECT_F(RUN("multiply", NOKV, A, B), F32, SH(4), F64S(24, -6, -5, 1.5), 0);
  EXPECT_F(RUN("divide", NOKV, A, B), F32, SH(4), F64S(1.5, -1.5, -1.25, (double)(0.5f / 3.0f)), 0);
  EXPECT_F(RUN("maximum", NOKV, A, B), F32, SH(4), F64S(6, 2, 2.5, 3), 0);
  EXPECT_F(RUN("minimum", NOKV, A, B), F32, SH(4), F64S(4, -3, -2, 0.5), 0);
  EXPECT_F(RUN("power", NOKV, A, B), F32, SH(4), F64S(1296, 9, 0.16, 0.125), 1e-6);
#undef A
#undef B
}

Test(kernels_elemwise, binary_f64_all_ops) {
#define A mk(F64, SH(3), F64S(0.1, -8, 9))
#define B mk(F64, SH(3), F64S(0.2, 3, 0.5))
  EXPECT_F(RUN("add", NOKV, A, B), F64, SH(3), F64S(0.1 + 0.2, -5, 9.5), 0); /* 0.30000000000000004, not float's */
  EXPECT_F(RUN("subtract", NOKV, A, B), F64, SH(3), F64S(0.1 - 0.2, -11, 8.5), 0);
  EXPECT_F(RUN("multiply", NOKV, A, B), F64, SH(3), F64S(0.1 * 0.2, -24, 4.5), 0);
  EXPECT_F(RUN("divide", NOKV, A, B), F64, SH(3), F64S(0.5, -8.0 / 3.0, 18), 0);
  EXPECT_F(RUN("maximum", NOKV, A, B), F64, SH(3), F64S(0.2, 3, 9), 0);
  EXPECT_F(RUN("minimum", NOKV, A, B), F64, SH(3), F64S(0.1, -8, 0.5), 0);
  EXPECT_F(RUN("power", NOKV, A, B), F64, SH(3), F64S(pow(0.1, 0.2), -512, 3), 1e-15);
#undef A
#undef B
}

Test(kernels_elemwise, eval_call_on_constants) {
  GPConstant *a = gp_constant_new(mk(F32, SH(2), F32S(1.5f, 2)));
  GPConstant *b = gp_constant_new(mk(F32, SH(2), F32S(0.5f, -4)));
  gp_release(a->data), gp_release(b->data); /* the constants hold them */
  GPExpr *args[2] = {&a->base, &b->base};
  GPCall *call = gp_call_new((GPExpr *)gp_op_get("multiply"), 2, args, NULL);
  cr_assert(call);
  GPExpr *r = gp_eval_call(call);
  cr_assert(r, "eval_call: %s", gp_error_message());
  cr_assert_eq(gp_kind(r), GP_TI_CONSTANT);
  GPTensor *d = gp_retain(GP_AS(GPConstant, r)->data);
  EXPECT_F(d, F32, SH(2), F64S(0.75, -8), 0);
  gp_release(r), gp_release(call), gp_release(a), gp_release(b);
}

/* ---- broadcasting */

Test(kernels_elemwise, broadcast_row_both_ways) {
  EXPECT_F(RUN("add", NOKV, mk(F32, SH(2, 3), F32S(1, 2, 3, 4, 5, 6)), mk(F32, SH(3), F32S(10, 20, 30))), F32, SH(2, 3),
           F64S(11, 22, 33, 14, 25, 36), 0);
  EXPECT_F(RUN("subtract", NOKV, mk(F32, SH(3), F32S(10, 20, 30)), mk(F32, SH(2, 3), F32S(1, 2, 3, 4, 5, 6))), F32,
           SH(2, 3), F64S(9, 18, 27, 6, 15, 24), 0);
}

Test(kernels_elemwise, broadcast_column_times_row) {
  /* (3, 1) - (1, 4) -> (3, 4) */
  GPTensor *r = RUN("subtract", NOKV, mk(F64, SH(3, 1), F64S(100, 200, 300)), mk(F64, SH(1, 4), F64S(1, 2, 3, 4)));
  EXPECT_F(r, F64, SH(3, 4), F64S(99, 98, 97, 96, 199, 198, 197, 196, 299, 298, 297, 296), 0);
  /* and the other way round */
  r = RUN("subtract", NOKV, mk(F64, SH(1, 4), F64S(1, 2, 3, 4)), mk(F64, SH(3, 1), F64S(100, 200, 300)));
  EXPECT_F(r, F64, SH(3, 4), F64S(-99, -98, -97, -96, -199, -198, -197, -196, -299, -298, -297, -296), 0);
}

Test(kernels_elemwise, broadcast_rank_mismatch) {
  /* (2, 1, 3) * (4, 1) -> (2, 4, 3): out[i][j][k] = a[i][k] * b[j] */
  GPTensor *r = RUN("multiply", NOKV, mk(I32, SH(2, 1, 3), I32S(1, 2, 3, 4, 5, 6)), mk(I32, SH(4, 1), I32S(1, 10, 100, -1)));
  EXPECT_I(r, I32, SH(2, 4, 3),
           I64S(1, 2, 3, 10, 20, 30, 100, 200, 300, -1, -2, -3, 4, 5, 6, 40, 50, 60, 400, 500, 600, -4, -5, -6));
}

Test(kernels_elemwise, broadcast_scalars) {
  EXPECT_F(RUN("add", NOKV, mk(F32, S0, F32S(0.5f)), mk(F32, SH(2, 2), F32S(1, 2, 3, 4))), F32, SH(2, 2),
           F64S(1.5, 2.5, 3.5, 4.5), 0);
  EXPECT_F(RUN("divide", NOKV, mk(F32, SH(2, 2), F32S(1, 2, 3, 4)), mk(F32, S0, F32S(4))), F32, SH(2, 2),
           F64S(0.25, 0.5, 0.75, 1), 0);
  EXPECT_F(RUN("maximum", NOKV, mk(F32, SH(1), F32S(-1)), mk(F32, S0, F32S(7))), F32, SH(1), F64S(7), 0);
  EXPECT_I(RUN("subtract", NOKV, mk(I64, S0, I64S(5)), mk(I64, S0, I64S(7))), I64, S0, I64S(-2));
}

Test(kernels_elemwise, broadcast_int_outer) {
  GPTensor *r = RUN("maximum", NOKV, mk(I16, SH(2, 1), I16S(-5, 3)), mk(I16, SH(1, 3), I16S(-7, 0, 4)));
  EXPECT_I(r, I16, SH(2, 3), I64S(-5, 0, 4, 3, 3, 4));
}

/* ---- integer semantics */

Test(kernels_elemwise, int_add_sub_mul_wrap) {
  EXPECT_I(RUN("add", NOKV, mk(I8, SH(3), I8S(127, -128, 100)), mk(I8, SH(3), I8S(1, -1, 100))), I8, SH(3),
           I64S(-128, 127, -56));
  EXPECT_I(RUN("multiply", NOKV, mk(I16, SH(2), I16S(300, -300)), mk(I16, SH(2), I16S(300, 300))), I16, SH(2),
           I64S(24464, -24464));
  EXPECT_I(RUN("multiply", NOKV, mk(I32, SH(2), I32S(65536, 46341)), mk(I32, SH(2), I32S(65536, 46341))), I32, SH(2),
           I64S(0, -2147479015));
  EXPECT_I(RUN("add", NOKV, mk(I64, SH(2), I64S(INT64_MAX, INT64_MIN)), mk(I64, SH(2), I64S(1, -1))), I64, SH(2),
           I64S(INT64_MIN, INT64_MAX));
  EXPECT_I(RUN("multiply", NOKV, mk(I64, SH(1), I64S(INT64_MAX)), mk(I64, SH(1), I64S(2))), I64, SH(1), I64S(-2));
  EXPECT_I(RUN("subtract", NOKV, mk(I64, SH(1), I64S(INT64_MIN)), mk(I64, SH(1), I64S(1))), I64, SH(1),
           I64S(INT64_MAX));
  EXPECT_I(RUN("subtract", NOKV, mk(U8, SH(3), U8S(3, 200, 16)), mk(U8, SH(3), U8S(5, 56, 0))), U8, SH(3),
           I64S(254, 144, 16));
  EXPECT_I(RUN("add", NOKV, mk(U8, SH(1), U8S(200)), mk(U8, SH(1), U8S(100))), U8, SH(1), I64S(44));
  EXPECT_I(RUN("multiply", NOKV, mk(U8, SH(1), U8S(16)), mk(U8, SH(1), U8S(17))), U8, SH(1), I64S(16));
}

Test(kernels_elemwise, int_divide_semantics) {
  GPTensor *r = RUN("divide", NOKV, mk(I32, SH(8), I32S(7, -7, 7, -7, 5, INT32_MIN, INT32_MIN, 0)),
                    mk(I32, SH(8), I32S(2, 2, -2, -2, 0, -1, 2, 0)));
  EXPECT_I(r, I32, SH(8), I64S(3, -3, -3, 3, 0, INT32_MIN, -1073741824, 0));
  EXPECT_I(RUN("divide", NOKV, mk(I8, SH(3), I8S(-128, -128, 127)), mk(I8, SH(3), I8S(-1, 0, -1))), I8, SH(3),
           I64S(-128, 0, -127));
  EXPECT_I(RUN("divide", NOKV, mk(I64, SH(3), I64S(INT64_MIN, INT64_MIN, -9)), mk(I64, SH(3), I64S(-1, 1, 4))), I64,
           SH(3), I64S(INT64_MIN, INT64_MIN, -2));
  EXPECT_I(RUN("divide", NOKV, mk(U8, SH(2), U8S(200, 255)), mk(U8, SH(2), U8S(7, 0))), U8, SH(2), I64S(28, 0));
  EXPECT_I(RUN("divide", NOKV, mk(I16, SH(2), I16S(-32768, 1)), mk(I16, SH(2), I16S(-1, 0))), I16, SH(2),
           I64S(-32768, 0));
}

Test(kernels_elemwise, int_power) {
  GPTensor *r = RUN("power", NOKV, mk(I32, SH(11), I32S(2, 2, 2, 1, -1, -1, 0, 0, -2, 3, 5)),
                    mk(I32, SH(11), I32S(10, 31, -1, -5, -3, -2, 0, -1, 3, 4, 0)));
  EXPECT_I(r, I32, SH(11), I64S(1024, INT32_MIN, 0, 1, -1, 1, 1, 0, -8, 81, 1));
  EXPECT_I(RUN("power", NOKV, mk(I8, SH(2), I8S(2, 3)), mk(I8, SH(2), I8S(7, 5))), I8, SH(2), I64S(-128, -13));
  /* 3^40 = 12157665459056928801 wraps to 12157665459056928801 - 2^64 */
  EXPECT_I(RUN("power", NOKV, mk(I64, SH(2), I64S(3, -1)), mk(I64, SH(2), I64S(40, INT64_MIN))), I64, SH(2),
           I64S(-6289078614652622815LL, 1));
  EXPECT_I(RUN("power", NOKV, mk(U8, SH(2), U8S(2, 255)), mk(U8, SH(2), U8S(9, 2))), U8, SH(2), I64S(0, 1));
}

Test(kernels_elemwise, int_maximum_minimum) {
  EXPECT_I(RUN("maximum", NOKV, mk(U8, SH(2), U8S(200, 5)), mk(U8, SH(2), U8S(100, 250))), U8, SH(2), I64S(200, 250));
  EXPECT_I(RUN("minimum", NOKV, mk(U8, SH(2), U8S(200, 5)), mk(U8, SH(2), U8S(100, 250))), U8, SH(2), I64S(100, 5));
  EXPECT_I(RUN("minimum", NOKV, mk(I64, SH(2), I64S(INT64_MIN, 3)), mk(I64, SH(2), I64S(INT64_MAX, -3))), I64, SH(2),
           I64S(INT64_MIN, -3));
}

Test(kernels_elemwise, bool_arithmetic) {
#define A mk(BOOL, SH(4), U8S(0, 0, 1, 1))
#define B mk(BOOL, SH(4), U8S(0, 1, 0, 1))
  EXPECT_I(RUN("add", NOKV, A, B), BOOL, SH(4), I64S(0, 1, 1, 1));      /* or */
  EXPECT_I(RUN("multiply", NOKV, A, B), BOOL, SH(4), I64S(0, 0, 0, 1)); /* and */
  EXPECT_I(RUN("subtract", NOKV, A, B), BOOL, SH(4), I64S(0, 1, 1, 0)); /* xor */
  EXPECT_I(RUN("divide", NOKV, A, B), BOOL, SH(4), I64S(0, 0, 0, 1));   /* x / 0 = 0 */
  EXPECT_I(RUN("maximum", NOKV, A, B), BOOL, SH(4), I64S(0, 1, 1, 1));
  EXPECT_I(RUN("power", NOKV, A, B), BOOL, SH(4), I64S(1, 0, 1, 1));
  EXPECT_I(RUN("negative", NOKV, A, NULL), BOOL, SH(4), I64S(0, 0, 1, 1));
  EXPECT_I(RUN("nn.relu", NOKV, B, NULL), BOOL, SH(4), I64S(0, 1, 0, 1));
#undef A
#undef B
}

/* ---- float specials */

Test(kernels_elemwise, nan_and_inf_binary) {
  const float nan = NAN, inf = INFINITY;
#define A mk(F32, SH(5), F32S(nan, 1, inf, 1, -1))
#define B mk(F32, SH(5), F32S(1, nan, -inf, 0, 0))
  EXPECT_F(RUN("maximum", NOKV, A, B), F32, SH(5), F64S(NAN, NAN, INFINITY, 1, 0), 0);
  EXPECT_F(RUN("minimum", NOKV, A, B), F32, SH(5), F64S(NAN, NAN, -INFINITY, 0, -1), 0);
  EXPECT_F(RUN("add", NOKV, A, B), F32, SH(5), F64S(NAN, NAN, NAN, 1, -1), 0);
  EXPECT_F(RUN("divide", NOKV, A, B), F32, SH(5), F64S(NAN, NAN, NAN, INFINITY, -INFINITY), 0);
  EXPECT_F(RUN("multiply", NOKV, A, B), F32, SH(5), F64S(NAN, NAN, -INFINITY, 0, -0.0), 0);
  /* pow(x, 0) = 1 and pow(1, NaN) = 1, as numpy */
  EXPECT_F(RUN("power", NOKV, A, B), F32, SH(5), F64S(NAN, 1, 0, 1, 1), 0);
#undef A
#undef B
  EXPECT_F(RUN("divide", NOKV, mk(F64, SH(1), F64S(0)), mk(F64, SH(1), F64S(0))), F64, SH(1), F64S(NAN), 0);
  EXPECT_F(RUN("maximum", NOKV, mk(F64, SH(2), F64S(NAN, 2)), mk(F64, SH(2), F64S(3, NAN))), F64, SH(2),
           F64S(NAN, NAN), 0);
}

Test(kernels_elemwise, nan_and_inf_unary) {
  const float nan = NAN, inf = INFINITY;
#define X mk(F32, SH(3), F32S(nan, inf, -inf))
  EXPECT_F(RUN("nn.relu", NOKV, X, NULL), F32, SH(3), F64S(NAN, INFINITY, 0), 0);
  EXPECT_F(RUN("clip", KVS(KV("a_min", gp_attr_float(-1)), KV("a_max", gp_attr_float(1))), X, NULL), F32, SH(3),
           F64S(NAN, 1, -1), 0);
  EXPECT_F(RUN("exp", NOKV, X, NULL), F32, SH(3), F64S(NAN, INFINITY, 0), 0);
  EXPECT_F(RUN("sigmoid", NOKV, X, NULL), F32, SH(3), F64S(NAN, 1, 0), 0);
  EXPECT_F(RUN("tanh", NOKV, X, NULL), F32, SH(3), F64S(NAN, 1, -1), 0);
  EXPECT_F(RUN("negative", NOKV, X, NULL), F32, SH(3), F64S(NAN, -INFINITY, INFINITY), 0);
  EXPECT_F(RUN("abs", NOKV, X, NULL), F32, SH(3), F64S(NAN, INFINITY, INFINITY), 0);
  EXPECT_F(RUN("nn.leaky_relu", NOKV, X, NULL), F32, SH(3), F64S(NAN, INFINITY, -INFINITY), 0);
  EXPECT_F(RUN("sqrt", NOKV, X, NULL), F32, SH(3), F64S(NAN, INFINITY, NAN), 0);
  EXPECT_F(RUN("rsqrt", NOKV, X, NULL), F32, SH(3), F64S(NAN, 0, NAN), 0);
#undef X
  EXPECT_F(RUN("log", NOKV, mk(F64, SH(3), F64S(0, -1, INFINITY)), NULL), F64, SH(3), F64S(-INFINITY, NAN, INFINITY), 0);
  EXPECT_F(RUN("rsqrt", NOKV, mk(F64, SH(1), F64S(0)), NULL), F64, SH(1), F64S(INFINITY), 0);
  EXPECT_F(RUN("sigmoid", NOKV, mk(F32, SH(2), F32S(-200, 200)), NULL), F32, SH(2), F64S(0, 1), 0);
}

/* ========================================================================================== */
/* Unary                                                                                       */

Test(kernels_elemwise, unary_f32_all_ops) {
  EXPECT_F(RUN("negative", NOKV, mk(F32, SH(2), F32S(1.5f, -2)), NULL), F32, SH(2), F64S(-1.5, 2), 0);
  EXPECT_F(RUN("sqrt", NOKV, mk(F32, SH(3), F32S(4, 2, 0)), NULL), F32, SH(3), F64S(2, (double)sqrtf(2), 0), 0);
  EXPECT_F(RUN("rsqrt", NOKV, mk(F32, SH(2), F32S(4, 0.25f)), NULL), F32, SH(2), F64S(0.5, 2), 0);
  EXPECT_F(RUN("exp", NOKV, mk(F32, SH(2), F32S(0, 1)), NULL), F32, SH(2), F64S(1, 2.718281828), 1e-6);
  EXPECT_F(RUN("log", NOKV, mk(F32, SH(2), F32S(1, 2.718281828f)), NULL), F32, SH(2), F64S(0, 1), 1e-6);
  EXPECT_F(RUN("abs", NOKV, mk(F32, SH(3), F32S(-3.5f, 2, -0.0f)), NULL), F32, SH(3), F64S(3.5, 2, 0), 0);
  EXPECT_F(RUN("sigmoid", NOKV, mk(F32, SH(3), F32S(0, 2, -2)), NULL), F32, SH(3), F64S(0.5, 0.8807970779778823, 0.11920292202211755),
           1e-6);
  EXPECT_F(RUN("tanh", NOKV, mk(F32, SH(2), F32S(0, 0.5f)), NULL), F32, SH(2), F64S(0, 0.46211715726000974), 1e-6);
  EXPECT_F(RUN("nn.relu", NOKV, mk(F32, SH(3), F32S(-1, 0, 2)), NULL), F32, SH(3), F64S(0, 0, 2), 0);
  EXPECT_F(RUN("nn.leaky_relu", KVS(KV("alpha", gp_attr_float(0.1))), mk(F32, SH(2), F32S(-10, 5)), NULL), F32, SH(2),
           F64S(-1, 5), 1e-7);
  /* the schema default alpha = 0.25 */
  EXPECT_F(RUN("nn.leaky_relu", NOKV, mk(F32, SH(2), F32S(-4, 0)), NULL), F32, SH(2), F64S(-1, 0), 0);
  EXPECT_F(RUN("clip", KVS(KV("a_min", gp_attr_float(-1)), KV("a_max", gp_attr_float(2.5))), mk(F32, SH(3), F32S(-3, 0, 3)), NULL),
           F32, SH(3), F64S(-1, 0, 2.5), 0);
  /* a_min > a_max: TVM's max(min(x, a_max), a_min) is a_min everywhere */
  EXPECT_F(RUN("clip", KVS(KV("a_min", gp_attr_float(2)), KV("a_max", gp_attr_float(1))), mk(F32, SH(2), F32S(0, 5)), NULL),
           F32, SH(2), F64S(2, 2), 0);
}

Test(kernels_elemwise, unary_f64_all_ops) {
  EXPECT_F(RUN("sqrt", NOKV, mk(F64, SH(1), F64S(2)), NULL), F64, SH(1), F64S(1.4142135623730951), 0);
  EXPECT_F(RUN("rsqrt", NOKV, mk(F64, SH(1), F64S(2)), NULL), F64, SH(1), F64S(1 / 1.4142135623730951), 0);
  EXPECT_F(RUN("exp", NOKV, mk(F64, SH(1), F64S(1)), NULL), F64, SH(1), F64S(2.718281828459045), 1e-15);
  EXPECT_F(RUN("log", NOKV, mk(F64, SH(1), F64S(10)), NULL), F64, SH(1), F64S(2.302585092994046), 1e-15);
  EXPECT_F(RUN("tanh", NOKV, mk(F64, SH(1), F64S(1)), NULL), F64, SH(1), F64S(0.7615941559557649), 1e-15);
  EXPECT_F(RUN("sigmoid", NOKV, mk(F64, SH(1), F64S(1)), NULL), F64, SH(1), F64S(0.7310585786300049), 1e-15);
  EXPECT_F(RUN("negative", NOKV, mk(F64, SH(1), F64S(1e300)), NULL), F64, SH(1), F64S(-1e300), 0);
  EXPECT_F(RUN("abs", NOKV, mk(F64, SH(1), F64S(-1e-300)), NULL), F64, SH(1), F64S(1e-300), 0);
  EXPECT_F(RUN("nn.relu", NOKV, mk(F64, SH(2), F64S(-1e-300, 1e-300)), NULL), F64, SH(2), F64S(0, 1e-300), 0);
  EXPECT_F(RUN("nn.leaky_relu", KVS(KV("alpha", gp_attr_float(0.1))), mk(F64, SH(1), F64S(-3)), NULL), F64, SH(1),
           F64S(-3 * 0.1), 0);
  /* the double bound, not float's: 0.1 stays 0.1 */
  EXPECT_F(RUN("clip", KVS(KV("a_min", gp_attr_float(0.1)), KV("a_max", gp_attr_float(0.7))), mk(F64, SH(2), F64S(0, 1)), NULL),
           F64, SH(2), F64S(0.1, 0.7), 0);
}

Test(kernels_elemwise, unary_int_exact_ops) {
  EXPECT_I(RUN("negative", NOKV, mk(I8, SH(4), I8S(-128, 5, 0, 127)), NULL), I8, SH(4), I64S(-128, -5, 0, -127));
  EXPECT_I(RUN("negative", NOKV, mk(U8, SH(3), U8S(1, 0, 255)), NULL), U8, SH(3), I64S(255, 0, 1));
  EXPECT_I(RUN("abs", NOKV, mk(I8, SH(3), I8S(-128, -5, 7)), NULL), I8, SH(3), I64S(-128, 5, 7));
  EXPECT_I(RUN("abs", NOKV, mk(I64, SH(2), I64S(INT64_MIN, -INT64_MAX)), NULL), I64, SH(2), I64S(INT64_MIN, INT64_MAX));
  EXPECT_I(RUN("abs", NOKV, mk(I32, SH(2), I32S(INT32_MIN, -3)), NULL), I32, SH(2), I64S(INT32_MIN, 3));
  EXPECT_I(RUN("nn.relu", NOKV, mk(I16, SH(3), I16S(-3, 0, 4)), NULL), I16, SH(3), I64S(0, 0, 4));
  EXPECT_I(RUN("nn.relu", NOKV, mk(I64, SH(2), I64S(INT64_MIN, INT64_MAX)), NULL), I64, SH(2), I64S(0, INT64_MAX));
}

Test(kernels_elemwise, unary_int_leaky_relu_and_clip) {
  /* alpha * x in double, truncated toward zero */
  EXPECT_I(RUN("nn.leaky_relu", NOKV, mk(I32, SH(4), I32S(-8, -7, 5, 0)), NULL), I32, SH(4), I64S(-2, -1, 5, 0));
  /* saturated to the dtype */
  EXPECT_I(RUN("nn.leaky_relu", KVS(KV("alpha", gp_attr_float(3))), mk(I8, SH(2), I8S(-100, 100)), NULL), I8, SH(2),
           I64S(-128, 100));
  GPTensor *r = RUN("clip", KVS(KV("a_min", gp_attr_float(-2.5)), KV("a_max", gp_attr_float(3.7))),
                    mk(I8, SH(7), I8S(-100, -3, -2, 0, 3, 4, 127)), NULL);
  EXPECT_I(r, I8, SH(7), I64S(-2, -2, -2, 0, 3, 3, 3));
  /* bounds beyond the dtype saturate (no wrap of 1000 into int8) */
  EXPECT_I(RUN("clip", KVS(KV("a_min", gp_attr_float(-1000)), KV("a_max", gp_attr_float(1000))),
               mk(I8, SH(2), I8S(-128, 127)), NULL),
           I8, SH(2), I64S(-128, 127));
  EXPECT_I(RUN("clip", KVS(KV("a_min", gp_attr_float(300)), KV("a_max", gp_attr_float(400))), mk(U8, SH(2), U8S(0, 255)), NULL),
           U8, SH(2), I64S(255, 255));
  EXPECT_I(RUN("clip", KVS(KV("a_min", gp_attr_float(-1e30)), KV("a_max", gp_attr_float(5))),
               mk(I64, SH(2), I64S(INT64_MIN, INT64_MAX)), NULL),
           I64, SH(2), I64S(INT64_MIN, 5));
}

Test(kernels_elemwise, unary_int_float_math) {
  EXPECT_I(RUN("sqrt", NOKV, mk(I32, SH(4), I32S(10, 16, -4, 0)), NULL), I32, SH(4), I64S(3, 4, 0, 0));
  EXPECT_I(RUN("exp", NOKV, mk(I8, SH(3), I8S(0, 1, 10)), NULL), I8, SH(3), I64S(1, 2, 127));
  EXPECT_I(RUN("log", NOKV, mk(I32, SH(4), I32S(0, 1, 100, -1)), NULL), I32, SH(4), I64S(INT32_MIN, 0, 4, 0));
  EXPECT_I(RUN("rsqrt", NOKV, mk(I32, SH(3), I32S(0, 1, 4)), NULL), I32, SH(3), I64S(INT32_MAX, 1, 0));
  EXPECT_I(RUN("sigmoid", NOKV, mk(I32, SH(3), I32S(0, 50, -50)), NULL), I32, SH(3), I64S(0, 1, 0));
  EXPECT_I(RUN("tanh", NOKV, mk(I16, SH(4), I16S(0, 1, -1, 20)), NULL), I16, SH(4), I64S(0, 0, 0, 1));
  EXPECT_I(RUN("exp", NOKV, mk(U8, SH(2), U8S(5, 200)), NULL), U8, SH(2), I64S(148, 255));
  EXPECT_I(RUN("exp", NOKV, mk(I64, SH(1), I64S(100)), NULL), I64, SH(1), I64S(INT64_MAX));
}

/* ========================================================================================== */
/* float16                                                                                     */

Test(kernels_elemwise, f16_rounds_to_nearest_even) {
  /* 1 + 2^-11 is half an ulp above 1: ties to even (1); 1 + 3 * 2^-11 ties up to 1 + 2^-9 */
  GPTensor *r = RUN("add", NOKV, mk(F16, SH(3), U16S(0x3C00, 0x3C00, 0x3C00)), mk(F16, SH(3), U16S(0x1000, 0x1600, 0x1400)));
  EXPECT_H(r, SH(3), U16S(0x3C00, 0x3C02, 0x3C01));
  /* 60000 + 60000 overflows to inf; 65504 is the largest half */
  EXPECT_H(RUN("add", NOKV, mk(F16, SH(2), U16S(0x7B53, 0x7BFF)), mk(F16, SH(2), U16S(0x7B53, 0x0000))), SH(2),
           U16S(0x7C00, 0x7BFF));
  /* sqrt(2) = 1.41421356 -> 1.4140625; -(-2) = 2; relu(-inf) = 0; NaN stays NaN */
  EXPECT_H(RUN("sqrt", NOKV, mk(F16, SH(1), U16S(0x4000)), NULL), SH(1), U16S(0x3DA8));
  EXPECT_H(RUN("negative", NOKV, mk(F16, SH(2), U16S(0xC000, 0x3800)), NULL), SH(2), U16S(0x4000, 0xB800));
  EXPECT_H(RUN("nn.relu", NOKV, mk(F16, SH(3), U16S(0xFC00, 0x7E00, 0x4200)), NULL), SH(3), U16S(0x0000, 0x7E00, 0x4200));
  EXPECT_H(RUN("maximum", NOKV, mk(F16, SH(2), U16S(0x7E00, 0x4200)), mk(F16, SH(2), U16S(0x3C00, 0x4000))), SH(2),
           U16S(0x7E00, 0x4200));
  EXPECT_H(RUN("divide", NOKV, mk(F16, SH(2), U16S(0x3C00, 0xBC00)), mk(F16, SH(2), U16S(0x0000, 0x0000))), SH(2),
           U16S(0x7C00, 0xFC00));
  /* exp(1) = 2.71828 -> 2.71875 (0x4170) */
  EXPECT_H(RUN("exp", NOKV, mk(F16, SH(1), U16S(0x3C00)), NULL), SH(1), U16S(0x4170));
}

/* ========================================================================================== */
/* cast                                                                                        */

#define CAST_TO(dt) KVS(KV("dtype", gp_attr_dtype(dt)))

Test(kernels_elemwise, cast_float_to_int_truncates_and_saturates) {
  GPTensor *r = RUN("cast", CAST_TO(I8), mk(F32, SH(7), F32S(300, -300, NAN, -2.7f, 2.7f, INFINITY, -0.5f)), NULL);
  EXPECT_I(r, I8, SH(7), I64S(127, -128, 0, -2, 2, 127, 0));
  EXPECT_I(RUN("cast", CAST_TO(I64), mk(F64, SH(3), F64S(1e30, -1e30, 9007199254740993.0)), NULL), I64, SH(3),
           I64S(INT64_MAX, INT64_MIN, 9007199254740992));
  EXPECT_I(RUN("cast", CAST_TO(U8), mk(F32, SH(3), F32S(-1, 255.9f, 256)), NULL), U8, SH(3), I64S(0, 255, 255));
  EXPECT_I(RUN("cast", CAST_TO(I32), mk(F16, SH(2), U16S(0xC170, 0x7C00)), NULL), I32, SH(2), I64S(-2, INT32_MAX));
}

Test(kernels_elemwise, cast_int_to_int_wraps) {
  EXPECT_I(RUN("cast", CAST_TO(I8), mk(I32, SH(3), I32S(300, -129, 127)), NULL), I8, SH(3), I64S(44, 127, 127));
  EXPECT_I(RUN("cast", CAST_TO(I8), mk(U8, SH(2), U8S(200, 7)), NULL), I8, SH(2), I64S(-56, 7));
  EXPECT_I(RUN("cast", CAST_TO(U8), mk(I8, SH(2), I8S(-1, -128)), NULL), U8, SH(2), I64S(255, 128));
  EXPECT_I(RUN("cast", CAST_TO(I64), mk(I16, SH(1), I16S(-32768)), NULL), I64, SH(1), I64S(-32768));
  EXPECT_I(RUN("cast", CAST_TO(I16), mk(I64, SH(1), I64S(INT64_MIN + 65537)), NULL), I16, SH(1), I64S(1));
}

Test(kernels_elemwise, cast_to_and_from_bool) {
  EXPECT_I(RUN("cast", CAST_TO(BOOL), mk(F32, SH(5), F32S(0, -0.0f, NAN, 0.5f, -3)), NULL), BOOL, SH(5), I64S(0, 0, 1, 1, 1));
  EXPECT_I(RUN("cast", CAST_TO(BOOL), mk(I32, SH(3), I32S(0, 256, -1)), NULL), BOOL, SH(3), I64S(0, 1, 1));
  EXPECT_F(RUN("cast", CAST_TO(F32), mk(BOOL, SH(2), U8S(1, 0)), NULL), F32, SH(2), F64S(1, 0), 0);
  EXPECT_I(RUN("cast", CAST_TO(I64), mk(BOOL, SH(2), U8S(1, 0)), NULL), I64, SH(2), I64S(1, 0));
}

Test(kernels_elemwise, cast_between_floats_rounds_once) {
  /* int64 2^54 + 2^30 + 1 is above the float halfway point: direct rounding gives 2^54 + 2^31;
   * through double it would tie down to 2^54 */
  EXPECT_F(RUN("cast", CAST_TO(F32), mk(I64, SH(1), I64S((1LL << 54) + (1LL << 30) + 1)), NULL), F32, SH(1),
           F64S(18014400656965632.0), 0);
  /* double just above the half tie at 1 + 2^-11: rounds up (through float it would tie to 1) */
  EXPECT_H(RUN("cast", CAST_TO(F16), mk(F64, SH(3), F64S(1 + 0x1p-11 + 0x1p-40, 1 + 0x1p-11, 1 + 3 * 0x1p-11)), NULL), SH(3),
           U16S(0x3C01, 0x3C00, 0x3C02));
  EXPECT_H(RUN("cast", CAST_TO(F16), mk(I32, SH(3), I32S(70000, -2049, 3)), NULL), SH(3), U16S(0x7C00, 0xE800, 0x4200));
  EXPECT_F(RUN("cast", CAST_TO(F64), mk(F16, SH(2), U16S(0x3555, 0x0001)), NULL), F64, SH(2),
           F64S(0.333251953125, 0x1p-24), 0);
  EXPECT_F(RUN("cast", CAST_TO(F64), mk(F32, SH(1), F32S(0.1f)), NULL), F64, SH(1), F64S((double)0.1f), 0);
  EXPECT_F(RUN("cast", CAST_TO(F32), mk(F64, SH(2), F64S(1e300, 0.1)), NULL), F32, SH(2), F64S(INFINITY, (double)0.1f), 0);
  EXPECT_F(RUN("cast", CAST_TO(F32), mk(F32, SH(2), F32S(1.25f, NAN)), NULL), F32, SH(2), F64S(1.25, NAN), 0);
}

/* ========================================================================================== */
/* Shapes: empty, rank 0, strided, large                                                       */

Test(kernels_elemwise, empty_tensors) {
  GPTensor *r = RUN("add", NOKV, mk(F32, SH(0, 3), NULL), mk(F32, SH(3), F32S(1, 2, 3)));
  expect_shape_at(r, F32, SH(0, 3), __LINE__);
  gp_release(r);
  r = RUN("nn.relu", NOKV, mk(I32, SH(2, 0), NULL), NULL);
  expect_shape_at(r, I32, SH(2, 0), __LINE__);
  gp_release(r);
  r = RUN("cast", CAST_TO(I8), mk(F64, SH(0), NULL), NULL);
  expect_shape_at(r, I8, SH(0), __LINE__);
  gp_release(r);
  r = RUN("multiply", NOKV, mk(F16, SH(0), NULL), mk(F16, S0, U16S(0x3C00)));
  expect_shape_at(r, F16, SH(0), __LINE__);
  gp_release(r);
}

Test(kernels_elemwise, rank0) {
  EXPECT_F(RUN("add", NOKV, mk(F32, S0, F32S(1.5f)), mk(F32, S0, F32S(2))), F32, S0, F64S(3.5), 0);
  EXPECT_I(RUN("negative", NOKV, mk(I8, S0, I8S(-128)), NULL), I8, S0, I64S(-128));
  EXPECT_F(RUN("sigmoid", NOKV, mk(F64, S0, F64S(0)), NULL), F64, S0, F64S(0.5), 0);
  EXPECT_I(RUN("cast", CAST_TO(I16), mk(F32, S0, F32S(-7.9f)), NULL), I16, S0, I64S(-7));
}

Test(kernels_elemwise, strided_input_with_byte_offset) {
  /* a 4x5 buffer 0..19; the view rows 1..3, columns 1 and 3: [[6, 8], [11, 13], [16, 18]] */
  float buf[20];
  for (int i = 0; i < 20; i++) buf[i] = (float)i;
  g_deleted = 0;
  GPTensor *v = mk_strided(F32, SH(3, 2), DIMS(5, 2), buf, sizeof buf, 6 * sizeof(float));
  GPTensor *r = RUN("negative", NOKV, gp_retain(v), NULL);
  EXPECT_F(r, F32, SH(3, 2), F64S(-6, -8, -11, -13, -16, -18), 0);
  r = RUN("add", NOKV, gp_retain(v), mk(F32, SH(2), F32S(100, 200)));
  EXPECT_F(r, F32, SH(3, 2), F64S(106, 208, 111, 213, 116, 218), 0);
  r = RUN("subtract", NOKV, mk(F32, SH(3, 1), F32S(0, 0, 1)), gp_retain(v));
  EXPECT_F(r, F32, SH(3, 2), F64S(-6, -8, -11, -13, -15, -17), 0);
  r = RUN("cast", CAST_TO(I8), gp_retain(v), NULL);
  EXPECT_I(r, I8, SH(3, 2), I64S(6, 8, 11, 13, 16, 18));
  cr_assert_eq(g_deleted, 0);
  gp_release(v);
  cr_assert_eq(g_deleted, 1, "the producer's deleter ran %d times", g_deleted);
}

Test(kernels_elemwise, strided_transposed_and_broadcast_stride) {
  /* a 2x3 buffer seen as its 3x2 transpose (strides 1, 3) */
  int32_t buf[6] = {1, 2, 3, 4, 5, 6};
  GPTensor *t = mk_strided(I32, SH(3, 2), DIMS(1, 3), buf, sizeof buf, 0);
  EXPECT_I(RUN("multiply", NOKV, t, mk(I32, SH(2), I32S(1, -1))), I32, SH(3, 2), I64S(1, -4, 2, -5, 3, -6));
  /* a zero stride (a producer's broadcast view) */
  int16_t one[1] = {7};
  GPTensor *z = mk_strided(I16, SH(2, 3), DIMS(0, 0), one, sizeof one, 0);
  EXPECT_I(RUN("abs", NOKV, z, NULL), I16, SH(2, 3), I64S(7, 7, 7, 7, 7, 7));
}

Test(kernels_elemwise, misaligned_byte_offset) {
  /* int32 elements at byte offset 2: read through an aligned copy (UBSan checks alignment) */
  unsigned char buf[2 + 3 * 4];
  int32_t vals[3] = {-5, 6, INT32_MIN};
  memcpy(buf + 2, vals, sizeof vals);
  GPTensor *t = mk_strided(I32, SH(3), DIMS(1), buf, sizeof buf, 2);
  EXPECT_I(RUN("abs", NOKV, gp_retain(t), NULL), I32, SH(3), I64S(5, 6, INT32_MIN));
  EXPECT_I(RUN("sum", NOKV, t, NULL), I32, S0, I64S(INT32_MIN + 1));
  /* strided and misaligned: every other element */
  unsigned char buf2[1 + 4 * 8];
  double d[4] = {1.5, 99, -2.5, 99};
  memcpy(buf2 + 1, d, sizeof d);
  GPTensor *s = mk_strided(F64, SH(2), DIMS(2), buf2, sizeof buf2, 1);
  EXPECT_F(RUN("add", NOKV, s, mk(F64, SH(2), F64S(1, 1))), F64, SH(2), F64S(2.5, -1.5), 0);
}

Test(kernels_elemwise, large_parallel_same_shape_and_rows) {
  enum { N = 300000 };
  float *a = malloc(N * sizeof(float)), *b = malloc(N * sizeof(float));
  for (int i = 0; i < N; i++) a[i] = (float)i, b[i] = (float)(2 * i);
  GPTensor *r = RUN_T("add", NOKV, 4, mk(F32, SH(N), a), mk(F32, SH(N), b));
  const float *d = r->dl.data;
  for (int i = 0; i < N; i++) cr_assert_eq(d[i], (float)(3 * i), "element %d: %g", i, (double)d[i]);
  gp_release(r);
  /* rows: (600, 500) + (500,) */
  r = RUN_T("subtract", NOKV, 4, mk(F32, SH(600, 500), a), mk(F32, SH(500), b));
  d = r->dl.data;
  for (int i = 0; i < 600 * 500; i++)
    cr_assert_eq(d[i], (float)i - (float)(2 * (i % 500)), "element %d: %g", i, (double)d[i]);
  gp_release(r);
  /* many short rows: (100000, 3) * (100000, 1) */
  r = RUN_T("multiply", NOKV, 3, mk(F32, SH(100000, 3), a), mk(F32, SH(100000, 1), b));
  d = r->dl.data;
  for (int i = 0; i < 300000; i++) cr_assert_eq(d[i], (float)i * (float)(2 * (i / 3)), "element %d", i);
  gp_release(r);
  /* unary and cast */
  r = RUN_T("cast", CAST_TO(I32), 4, mk(F32, SH(N), a), NULL);
  const int32_t *id = r->dl.data;
  for (int i = 0; i < N; i++) cr_assert_eq(id[i], i);
  gp_release(r);
  free(a), free(b);
}

/* ========================================================================================== */
/* Errors                                                                                      */

Test(kernels_elemwise, unsigned_and_storage_dtypes) {
  DLDataType u16 = GP_DT(kDLUInt, 16), bf16 = GP_DT(kDLBfloat, 16);
  /* uint16 wraps modulo 2^16 */
  GPTensor *r = try_run_t("add", NOKV, 1, mk(u16, SH(2), U16S(1, 65535)), mk(u16, SH(2), U16S(3, 2)));
  cr_assert_not_null(r, "%s", gp_error_message());
  cr_assert_eq(((uint16_t *)r->dl.data)[0], 4);
  cr_assert_eq(((uint16_t *)r->dl.data)[1], 1);
  gp_release(r);
  /* uint64 above 2^63 adds modulo 2^64 and compares unsigned */
  DLDataType u64 = GP_DT(kDLUInt, 64);
  uint64_t big[2] = {UINT64_C(1) << 63, 5}, one[2] = {1, 7};
  r = try_run_t("add", NOKV, 1, mk(u64, SH(2), big), mk(u64, SH(2), one));
  cr_assert_not_null(r, "%s", gp_error_message());
  cr_assert_eq(((uint64_t *)r->dl.data)[0], (UINT64_C(1) << 63) + 1);
  gp_release(r);
  r = try_run_t("greater", NOKV, 1, mk(u64, SH(2), big), mk(u64, SH(2), one));
  cr_assert_not_null(r, "%s", gp_error_message());
  cr_assert_eq(((uint8_t *)r->dl.data)[0], 1);
  cr_assert_eq(((uint8_t *)r->dl.data)[1], 0);
  gp_release(r);
  /* bfloat16 computes through float32: relu(-1) = 0, relu(1) = 1 */
  r = try_run_t("nn.relu", NOKV, 1, mk(bf16, SH(2), U16S(0xBF80, 0x3F80)), NULL);
  cr_assert_not_null(r, "%s", gp_error_message());
  cr_assert_eq(((uint16_t *)r->dl.data)[0], 0);
  cr_assert_eq(((uint16_t *)r->dl.data)[1], 0x3F80);
  gp_release(r);
  /* float -> uint16 saturates (as every float -> integer cast) */
  r = try_run_t("cast", CAST_TO(u16), 1, mk(F32, SH(2), F32S(70000, -3)), NULL);
  cr_assert_not_null(r, "%s", gp_error_message());
  cr_assert_eq(((uint16_t *)r->dl.data)[0], 65535);
  cr_assert_eq(((uint16_t *)r->dl.data)[1], 0);
  gp_release(r);
  /* float32 -> float8_e4m3fn: round to nearest even, saturating; back exactly */
  DLDataType f8 = GP_DT(GP_DL_FLOAT8_E4M3FN, 8);
  r = try_run_t("cast", CAST_TO(f8), 1, mk(F32, SH(4), F32S(1.0625f, 1000.0f, -0.0f, NAN)), NULL);
  cr_assert_not_null(r, "%s", gp_error_message());
  const uint8_t *b = r->dl.data;
  cr_assert_eq(b[0], 0x38); /* 1.0625 is halfway between 1 and 1.125: to even, 1 */
  cr_assert_eq(b[1], 0x7E); /* 448 */
  cr_assert_eq(b[2], 0x80);
  cr_assert_eq(b[3] & 0x7F, 0x7F);
  GPTensor *back = try_run_t("cast", CAST_TO(F32), 1, r, NULL);
  cr_assert_not_null(back, "%s", gp_error_message());
  cr_assert_float_eq(((float *)back->dl.data)[1], 448.0f, 0);
  cr_assert(isnan(((float *)back->dl.data)[3]));
  gp_release(back);
  /* int4 stores wrap to 4 bits, sign-extended */
  DLDataType i4 = GP_DT(kDLInt, 4);
  r = try_run_t("cast", CAST_TO(i4), 1, mk(I32, SH(3), I32S(7, 8, -9)), NULL);
  cr_assert_not_null(r, "%s", gp_error_message());
  cr_assert_eq(((int8_t *)r->dl.data)[0], 7);
  cr_assert_eq(((int8_t *)r->dl.data)[1], -8);
  cr_assert_eq(((int8_t *)r->dl.data)[2], 7);
  gp_release(r);
  /* dtypes that differ are the type relation's error, before any kernel */
  r = try_run_t("add", NOKV, 1, mk(F32, SH(1), F32S(1)), mk(F64, SH(1), F64S(1)));
  cr_assert_null(r);
  cr_assert_eq(gp_error_kind(), GP_ERR_TYPE, "%s", gp_error_message());
  gp_error_clear();
}

/* ========================================================================================== */
/* sum, mean                                                                                   */

static float g_iota24[24];
static GPTensor *iota24(DLDataType dt) { /* (2, 3, 4) with values 0..23 */
  for (int i = 0; i < 24; i++) g_iota24[i] = (float)i;
  GPTensor *t = mk(F32, SH(2, 3, 4), g_iota24);
  if (gp_dtype_eq(dt, F32)) return t;
  return RUN("cast", CAST_TO(dt), t, NULL);
}

Test(kernels_reduce, sum_all_and_keepdims) {
  EXPECT_F(RUN("sum", NOKV, mk(F32, SH(2, 3), F32S(1, 2, 3, 4, 5, 6)), NULL), F32, S0, F64S(21), 0);
  EXPECT_F(RUN("sum", KVS(KV("keepdims", gp_attr_bool(true))), mk(F32, SH(2, 3), F32S(1, 2, 3, 4, 5, 6)), NULL), F32,
           SH(1, 1), F64S(21), 0);
  EXPECT_F(RUN("mean", NOKV, mk(F32, SH(2, 3), F32S(1, 2, 3, 4, 5, 6)), NULL), F32, S0, F64S(3.5), 0);
}

Test(kernels_reduce, sum_single_axes_and_negative) {
#define X mk(F64, SH(2, 3), F64S(1, 2, 3, 4, 5, 6))
  EXPECT_F(RUN("sum", KVS(AXES(1)), X, NULL), F64, SH(2), F64S(6, 15), 0);
  EXPECT_F(RUN("sum", KVS(AXES(-1)), X, NULL), F64, SH(2), F64S(6, 15), 0);
  EXPECT_F(RUN("sum", KVS(AXES(0)), X, NULL), F64, SH(3), F64S(5, 7, 9), 0);
  EXPECT_F(RUN("sum", KVS(AXES(-2), KV("keepdims", gp_attr_bool(true))), X, NULL), F64, SH(1, 3), F64S(5, 7, 9), 0);
  EXPECT_F(RUN("mean", KVS(AXES(1)), X, NULL), F64, SH(2), F64S(2, 5), 0);
  EXPECT_F(RUN("mean", KVS(AXES(0)), X, NULL), F64, SH(3), F64S(2.5, 3.5, 4.5), 0);
  /* a single INT for axis */
  EXPECT_F(RUN("sum", KVS(KV("axis", gp_attr_int(-1))), X, NULL), F64, SH(2), F64S(6, 15), 0);
#undef X
}

Test(kernels_reduce, sum_multi_axes_exclude_keepdims) {
  /* (2, 3, 4) of 0..23: out[j] over i, k = 32j + 60 */
  EXPECT_F(RUN("sum", KVS(AXES(0, 2)), iota24(F32), NULL), F32, SH(3), F64S(60, 92, 124), 0);
  EXPECT_F(RUN("sum", KVS(AXES(-3, -1)), iota24(F32), NULL), F32, SH(3), F64S(60, 92, 124), 0);
  EXPECT_F(RUN("sum", KVS(AXES(1), KV("exclude", gp_attr_bool(true))), iota24(F32), NULL), F32, SH(3),
           F64S(60, 92, 124), 0);
  EXPECT_F(RUN("sum", KVS(AXES(1), KV("exclude", gp_attr_bool(true)), KV("keepdims", gp_attr_bool(true))), iota24(F32),
               NULL),
           F32, SH(1, 3, 1), F64S(60, 92, 124), 0);
  /* over the last two: 144i + 66; over the first two: 6k + 60 */
  EXPECT_F(RUN("sum", KVS(AXES(1, 2)), iota24(F32), NULL), F32, SH(2), F64S(66, 210), 0);
  EXPECT_F(RUN("sum", KVS(AXES(0, 1)), iota24(F32), NULL), F32, SH(4), F64S(60, 66, 72, 78), 0);
  EXPECT_F(RUN("mean", KVS(AXES(0, 1)), iota24(F32), NULL), F32, SH(4), F64S(10, 11, 12, 13), 0);
  EXPECT_F(RUN("mean", KVS(AXES(1), KV("keepdims", gp_attr_bool(true))), iota24(F32), NULL), F32, SH(2, 1, 4),
           F64S(4, 5, 6, 7, 16, 17, 18, 19), 0);
  /* an empty axis list reduces nothing (the type relation's reading); with exclude, everything */
  GPTensor *r = RUN("sum", KVS(AXES_EMPTY()), iota24(I32), NULL);
  int64_t want[24];
  for (int i = 0; i < 24; i++) want[i] = i;
  EXPECT_I(r, I32, SH(2, 3, 4), want);
  EXPECT_I(RUN("sum", KVS(AXES_EMPTY(), KV("exclude", gp_attr_bool(true))), iota24(I32), NULL), I32, S0, I64S(276));
}

Test(kernels_reduce, int_sum_wraps_and_mean_truncates) {
  EXPECT_I(RUN("mean", NOKV, mk(I32, SH(2), I32S(-7, 0)), NULL), I32, S0, I64S(-3));
  EXPECT_I(RUN("mean", NOKV, mk(I32, SH(2), I32S(7, 0)), NULL), I32, S0, I64S(3));
  EXPECT_I(RUN("mean", NOKV, mk(I8, SH(2), I8S(100, 100)), NULL), I8, S0, I64S(100)); /* exact in int64 */
  EXPECT_I(RUN("sum", NOKV, mk(I8, SH(2), I8S(100, 100)), NULL), I8, S0, I64S(-56));
  EXPECT_I(RUN("sum", NOKV, mk(I64, SH(2), I64S(INT64_MAX, 1)), NULL), I64, S0, I64S(INT64_MIN));
  EXPECT_I(RUN("sum", NOKV, mk(U8, SH(2), U8S(200, 100)), NULL), U8, S0, I64S(44));
  EXPECT_I(RUN("mean", NOKV, mk(U8, SH(3), U8S(255, 255, 254)), NULL), U8, S0, I64S(254));
  EXPECT_I(RUN("mean", KVS(AXES(1)), mk(I16, SH(2, 3), I16S(-1, -1, -2, 30000, 30000, 30000)), NULL), I16, SH(2),
           I64S(-1, 30000));
  EXPECT_I(RUN("sum", KVS(AXES(0)), mk(I64, SH(3, 2), I64S(INT64_MAX, 1, 1, 2, 5, 3)), NULL), I64, SH(2),
           I64S(INT64_MIN + 5, 6));
}

Test(kernels_reduce, bool_sum_any_mean_all) {
  EXPECT_I(RUN("sum", KVS(AXES(1)), mk(BOOL, SH(3, 2), U8S(0, 1, 0, 0, 1, 1)), NULL), BOOL, SH(3), I64S(1, 0, 1));
  EXPECT_I(RUN("mean", KVS(AXES(1)), mk(BOOL, SH(3, 2), U8S(0, 1, 0, 0, 1, 1)), NULL), BOOL, SH(3), I64S(0, 0, 1));
}

Test(kernels_reduce, empty_reductions) {
  EXPECT_F(RUN("sum", KVS(AXES(0)), mk(F32, SH(0, 3), NULL), NULL), F32, SH(3), F64S(0, 0, 0), 0);
  EXPECT_F(RUN("mean", KVS(AXES(0)), mk(F32, SH(0, 3), NULL), NULL), F32, SH(3), F64S(NAN, NAN, NAN), 0);
  EXPECT_F(RUN("mean", KVS(AXES(1)), mk(F16, SH(2, 0), NULL), NULL), F16, SH(2), F64S(NAN, NAN), 0);
  EXPECT_I(RUN("mean", KVS(AXES(0)), mk(I32, SH(0, 2), NULL), NULL), I32, SH(2), I64S(0, 0));
  EXPECT_I(RUN("sum", NOKV, mk(I64, SH(0), NULL), NULL), I64, S0, I64S(0));
  EXPECT_F(RUN("mean", NOKV, mk(F64, SH(0), NULL), NULL), F64, S0, F64S(NAN), 0);
  GPTensor *r = RUN("sum", KVS(AXES(0)), mk(F32, SH(2, 0), NULL), NULL);
  expect_shape_at(r, F32, SH(0), __LINE__);
  gp_release(r);
}

Test(kernels_reduce, rank0_and_size1) {
  EXPECT_F(RUN("sum", NOKV, mk(F32, S0, F32S(5)), NULL), F32, S0, F64S(5), 0);
  EXPECT_I(RUN("mean", KVS(KV("keepdims", gp_attr_bool(true))), mk(I32, S0, I32S(-9)), NULL), I32, S0, I64S(-9));
  EXPECT_F(RUN("mean", KVS(AXES(1)), mk(F64, SH(1, 1, 1), F64S(2.5)), NULL), F64, SH(1, 1), F64S(2.5), 0);
  EXPECT_F(RUN("sum", KVS(AXES(1)), mk(F64, SH(3, 1), F64S(1, 2, 3)), NULL), F64, SH(3), F64S(1, 2, 3), 0);
}

Test(kernels_reduce, nan_inf_and_signed_zero) {
  EXPECT_F(RUN("sum", KVS(AXES(1)), mk(F32, SH(4, 2), F32S(1, NAN, INFINITY, 1, INFINITY, -INFINITY, 2, 3)), NULL),
           F32, SH(4), F64S(NAN, INFINITY, NAN, 5), 0);
  EXPECT_F(RUN("mean", NOKV, mk(F64, SH(2), F64S(-INFINITY, -INFINITY)), NULL), F64, S0, F64S(-INFINITY), 0);
  GPTensor *r = RUN("sum", NOKV, mk(F32, SH(2), F32S(-0.0f, -0.0f)), NULL);
  cr_assert(signbit(((const float *)r->dl.data)[0]), "sum of -0 is -0");
  gp_release(r);
}

Test(kernels_reduce, f16_accumulates_in_double) {
  /* 2048 + 1 + 1: half accumulation would give 2048; the exact 2050 is a half */
  EXPECT_H(RUN("sum", NOKV, mk(F16, SH(3), U16S(0x6800, 0x3C00, 0x3C00)), NULL), S0, U16S(0x6801));
  /* mean of 1 and 1 + 2^-10 ties to even (1); of 1, 1 + 2^-10, 1 + 2^-10 rounds up */
  EXPECT_H(RUN("mean", NOKV, mk(F16, SH(2), U16S(0x3C00, 0x3C01)), NULL), S0, U16S(0x3C00));
  EXPECT_H(RUN("mean", NOKV, mk(F16, SH(3), U16S(0x3C00, 0x3C01, 0x3C01)), NULL), S0, U16S(0x3C01));
  EXPECT_H(RUN("sum", NOKV, mk(F16, SH(2), U16S(0x7B53, 0x7B53)), NULL), S0, U16S(0x7C00));
  /* but the mean of two 60000s is 60000 (no overflow in between) */
  EXPECT_H(RUN("mean", NOKV, mk(F16, SH(2), U16S(0x7B53, 0x7B53)), NULL), S0, U16S(0x7B53));
}

Test(kernels_reduce, strided_input) {
  /* 4x3 buffer 0..11 seen as its 3x4 transpose, starting at row 0 (strides 1, 3), and a
   * column-1-and-2 window with a byte offset */
  float buf[12];
  for (int i = 0; i < 12; i++) buf[i] = (float)i;
  g_deleted = 0;
  GPTensor *t = mk_strided(F32, SH(3, 4), DIMS(1, 3), buf, sizeof buf, 0);
  /* t[i][j] = buf[i + 3j]: rows [0,3,6,9], [1,4,7,10], [2,5,8,11] */
  EXPECT_F(RUN("sum", KVS(AXES(1)), gp_retain(t), NULL), F32, SH(3), F64S(18, 22, 26), 0);
  EXPECT_F(RUN("sum", KVS(AXES(0)), gp_retain(t), NULL), F32, SH(4), F64S(3, 12, 21, 30), 0);
  EXPECT_F(RUN("mean", NOKV, t, NULL), F32, S0, F64S(5.5), 0);
  GPTensor *w = mk_strided(F32, SH(4, 2), DIMS(3, 1), buf, sizeof buf, sizeof(float));
  /* w = [[1,2],[4,5],[7,8],[10,11]] */
  EXPECT_F(RUN("sum", KVS(AXES(0)), gp_retain(w), NULL), F32, SH(2), F64S(22, 26), 0);
  EXPECT_F(RUN("mean", KVS(AXES(1)), w, NULL), F32, SH(4), F64S(1.5, 4.5, 7.5, 10.5), 0);
  cr_assert_eq(g_deleted, 2);
}

Test(kernels_reduce, large_split_reductions_are_thread_independent) {
  enum { N = 400000 };
  float *a = malloc(N * sizeof(float));
  for (int i = 0; i < N; i++) a[i] = 1.0f;
  /* exact totals through blocks */
  EXPECT_F(RUN_T("sum", NOKV, 4, mk(F32, SH(N), a), NULL), F32, S0, F64S(N), 0);
  EXPECT_F(RUN_T("mean", KVS(AXES(0)), 2, mk(F32, SH(N / 4, 4), a), NULL), F32, SH(4), F64S(1, 1, 1, 1), 0);
  for (int i = 0; i < N; i++) a[i] = (float)(((int64_t)i * 7919) % 1000) * 0.001f - 0.3f;
  /* the same bits with 1 and 4 threads, and 1 thread vs many blocks */
  GPTensor *r1 = RUN_T("sum", NOKV, 1, mk(F32, SH(N), a), NULL);
  GPTensor *r4 = RUN_T("sum", NOKV, 4, mk(F32, SH(N), a), NULL);
  cr_assert_eq(memcmp(r1->dl.data, r4->dl.data, 4), 0);
  double exact = 0;
  for (int i = 0; i < N; i++) exact += a[i];
  cr_assert(fabs(gp_tensor_get_f64(r1, 0) - exact) <= 1e-6 * fabs(exact) + 1e-3, "%g vs %g",
            gp_tensor_get_f64(r1, 0), exact);
  gp_release(r1), gp_release(r4);
  r1 = RUN_T("sum", KVS(AXES(0)), 1, mk(F32, SH(N / 500, 500), a), NULL);
  r4 = RUN_T("sum", KVS(AXES(0)), 4, mk(F32, SH(N / 500, 500), a), NULL);
  cr_assert_eq(memcmp(r1->dl.data, r4->dl.data, 500 * 4), 0);
  gp_release(r1), gp_release(r4);
  free(a);
}

Test(kernels_reduce, large_int_axes) {
  /* (70000, 3) int32 with values i % 7 on row i: column sums (several blocks, rows kept last) */
  enum { R = 70000 };
  int32_t *a = malloc(R * 3 * sizeof(int32_t));
  int64_t col = 0;
  for (int i = 0; i < R; i++) {
    for (int c = 0; c < 3; c++) a[i * 3 + c] = (i % 7) * (c + 1);
    col += i % 7;
  }
  EXPECT_I(RUN_T("sum", KVS(AXES(0)), 4, mk(I32, SH(R, 3), a), NULL), I32, SH(3), I64S(col, 2 * col, 3 * col));
  /* row sums of (300, 700) on 3 threads: the last axis reduced */
  for (int i = 0; i < 300 * 700; i++) a[i] = i % 700 - 350;
  GPTensor *r = RUN_T("sum", KVS(AXES(1)), 3, mk(I32, SH(300, 700), a), NULL);
  int64_t want[300];
  for (int i = 0; i < 300; i++) want[i] = -350;
  EXPECT_I(r, I32, SH(300), want);
  /* mean over the middle axis of (50, 2000, 2) f64, kept axes on both sides */
  double *d = malloc(50 * 2000 * 2 * sizeof(double));
  for (int i = 0; i < 50; i++)
    for (int j = 0; j < 2000; j++)
      for (int k = 0; k < 2; k++) d[(i * 2000 + j) * 2 + k] = i + (k ? -1.0 : 1.0) * (j % 2);
  r = RUN_T("mean", KVS(AXES(1)), 4, mk(F64, SH(50, 2000, 2), d), NULL);
  double wd[100];
  for (int i = 0; i < 50; i++) wd[2 * i] = i + 0.5, wd[2 * i + 1] = i - 0.5;
  EXPECT_F(r, F64, SH(50, 2), wd, 0);
  free(a), free(d);
}

/* ========================================================================================== */
/* Trigonometric, rounding, sign and the predicates                                            */

#define K_PI 3.14159265358979323846

Test(kernels_elemwise, trig_and_hyperbolic_f32_f64) {
  EXPECT_F(RUN("sin", NOKV, mk(F32, SH(3), F32S(0, 1.5707964f, -1)), NULL), F32, SH(3), F64S(0, 1, sin(-1.0)), 1e-6);
  EXPECT_F(RUN("cos", NOKV, mk(F64, SH(2), F64S(0, K_PI)), NULL), F64, SH(2), F64S(1, -1), 1e-15);
  EXPECT_F(RUN("tan", NOKV, mk(F64, SH(2), F64S(0, K_PI / 4)), NULL), F64, SH(2), F64S(0, 1), 1e-15);
  EXPECT_F(RUN("asin", NOKV, mk(F32, SH(3), F32S(1, 0, 2)), NULL), F32, SH(3), F64S(K_PI / 2, 0, NAN), 1e-6);
  EXPECT_F(RUN("acos", NOKV, mk(F64, SH(2), F64S(1, -1)), NULL), F64, SH(2), F64S(0, K_PI), 1e-15);
  EXPECT_F(RUN("atan", NOKV, mk(F64, SH(3), F64S(1, INFINITY, -INFINITY)), NULL), F64, SH(3),
           F64S(K_PI / 4, K_PI / 2, -K_PI / 2), 1e-15);
  EXPECT_F(RUN("sinh", NOKV, mk(F64, SH(2), F64S(0, 1)), NULL), F64, SH(2), F64S(0, sinh(1.0)), 1e-15);
  EXPECT_F(RUN("cosh", NOKV, mk(F32, SH(2), F32S(0, 100)), NULL), F32, SH(2), F64S(1, INFINITY), 1e-6);
  EXPECT_F(RUN("asinh", NOKV, mk(F64, SH(2), F64S(0, -1)), NULL), F64, SH(2), F64S(0, asinh(-1.0)), 1e-15);
  EXPECT_F(RUN("acosh", NOKV, mk(F64, SH(3), F64S(1, 2, 0.5)), NULL), F64, SH(3), F64S(0, acosh(2.0), NAN), 1e-15);
  EXPECT_F(RUN("atanh", NOKV, mk(F64, SH(3), F64S(0, 1, -1)), NULL), F64, SH(3), F64S(0, INFINITY, -INFINITY), 0);
  EXPECT_F(RUN("erf", NOKV, mk(F64, SH(4), F64S(0, 1, -INFINITY, NAN)), NULL), F64, SH(4),
           F64S(0, 0.8427007929497149, -1, NAN), 1e-15);
  /* float16 computes in float32: sin(0.5) = 0.4794 -> 0x37AC */
  EXPECT_H(RUN("sin", NOKV, mk(F16, SH(1), U16S(0x3800)), NULL), SH(1), U16S(0x37AC));
}

Test(kernels_elemwise, rounding_half_to_even_and_signed_zero) {
  EXPECT_F(RUN("round", NOKV, mk(F32, SH(8), F32S(0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, -2.6f, 1e20f)), NULL), F32,
           SH(8), F64S(0, 2, 2, -0.0, -2, 2, -3, 1e20), 1e-7);
  GPTensor *r = RUN("round", NOKV, mk(F64, SH(2), F64S(-0.5, 0.49999999999999994)), NULL);
  cr_assert(signbit(gp_tensor_get_f64(r, 0)) && gp_tensor_get_f64(r, 0) == 0, "round(-0.5) is -0");
  EXPECT_F(r, F64, SH(2), F64S(0, 0), 0);
  EXPECT_F(RUN("floor", NOKV, mk(F64, SH(5), F64S(-1.5, 1.5, -0.0, INFINITY, NAN)), NULL), F64, SH(5),
           F64S(-2, 1, 0, INFINITY, NAN), 0);
  EXPECT_F(RUN("ceil", NOKV, mk(F32, SH(3), F32S(-1.5f, 1.2f, -0.2f)), NULL), F32, SH(3), F64S(-1, 2, 0), 0);
  r = RUN("ceil", NOKV, mk(F32, SH(1), F32S(-0.2f)), NULL);
  cr_assert(signbit(gp_tensor_get_f64(r, 0)), "ceil(-0.2) is -0");
  gp_release(r);
  EXPECT_F(RUN("trunc", NOKV, mk(F64, SH(3), F64S(-1.7, 1.7, 0)), NULL), F64, SH(3), F64S(-1, 1, 0), 0);
  /* float16: 2.5 (0x4100) -> 2 (0x4000); -1.5 (0xBE00) -> -2 (0xC000) */
  EXPECT_H(RUN("round", NOKV, mk(F16, SH(2), U16S(0x4100, 0xBE00)), NULL), SH(2), U16S(0x4000, 0xC000));
}

Test(kernels_elemwise, sign_all_dtypes) {
  GPTensor *r = RUN("sign", NOKV, mk(F32, SH(6), F32S(-3, 0, -0.0f, 2, NAN, -INFINITY)), NULL);
  cr_assert(signbit(gp_tensor_get_f64(r, 2)), "sign(-0) is -0");
  EXPECT_F(r, F32, SH(6), F64S(-1, 0, 0, 1, NAN, -1), 0);
  EXPECT_I(RUN("sign", NOKV, mk(I8, SH(3), I8S(-128, 0, 127)), NULL), I8, SH(3), I64S(-1, 0, 1));
  EXPECT_I(RUN("sign", NOKV, mk(I64, SH(2), I64S(INT64_MIN, 5)), NULL), I64, SH(2), I64S(-1, 1));
  EXPECT_I(RUN("sign", NOKV, mk(U8, SH(2), U8S(0, 200)), NULL), U8, SH(2), I64S(0, 1));
  EXPECT_I(RUN("sign", NOKV, mk(BOOL, SH(2), U8S(0, 1)), NULL), BOOL, SH(2), I64S(0, 1));
}

Test(kernels_elemwise, int_rounding_identity_and_trig_saturate) {
  EXPECT_I(RUN("floor", NOKV, mk(I32, SH(2), I32S(INT32_MIN, 7)), NULL), I32, SH(2), I64S(INT32_MIN, 7));
  EXPECT_I(RUN("ceil", NOKV, mk(U8, SH(1), U8S(255)), NULL), U8, SH(1), I64S(255));
  EXPECT_I(RUN("round", NOKV, mk(I64, SH(1), I64S(INT64_MAX)), NULL), I64, SH(1), I64S(INT64_MAX));
  EXPECT_I(RUN("trunc", NOKV, mk(I16, SH(1), I16S(-5)), NULL), I16, SH(1), I64S(-5));
  /* computed in double, truncated and saturated: cosh(100) -> INT32_MAX, acosh(0) NaN -> 0 */
  EXPECT_I(RUN("cosh", NOKV, mk(I32, SH(1), I32S(100)), NULL), I32, SH(1), I64S(INT32_MAX));
  EXPECT_I(RUN("acosh", NOKV, mk(I32, SH(1), I32S(0)), NULL), I32, SH(1), I64S(0));
  EXPECT_I(RUN("erf", NOKV, mk(I8, SH(3), I8S(-5, 0, 5)), NULL), I8, SH(3), I64S(0, 0, 0)); /* +-0.99.. truncate */
  EXPECT_I(RUN("sinh", NOKV, mk(I8, SH(2), I8S(3, -100)), NULL), I8, SH(2), I64S(10, -128));
}

Test(kernels_elemwise, predicates_nan_inf_finite) {
#define A mk(F32, SH(6), F32S(0, -0.0f, NAN, INFINITY, -INFINITY, 3e38f))
  EXPECT_I(RUN("isnan", NOKV, A, NULL), BOOL, SH(6), I64S(0, 0, 1, 0, 0, 0));
  EXPECT_I(RUN("isinf", NOKV, A, NULL), BOOL, SH(6), I64S(0, 0, 0, 1, 1, 0));
  EXPECT_I(RUN("isfinite", NOKV, A, NULL), BOOL, SH(6), I64S(1, 1, 0, 0, 0, 1));
#undef A
  /* float16: 0x7C00 inf, 0xFE00 NaN, 0x7BFF max finite */
  EXPECT_I(RUN("isinf", NOKV, mk(F16, SH(3), U16S(0x7C00, 0xFE00, 0x7BFF)), NULL), BOOL, SH(3), I64S(1, 0, 0));
  EXPECT_I(RUN("isnan", NOKV, mk(F64, SH(2), F64S(NAN, 1)), NULL), BOOL, SH(2), I64S(1, 0));
  EXPECT_I(RUN("isnan", NOKV, mk(I32, SH(2), I32S(1, 2)), NULL), BOOL, SH(2), I64S(0, 0));
  EXPECT_I(RUN("isfinite", NOKV, mk(U8, SH(1), U8S(1)), NULL), BOOL, SH(1), I64S(1));
  /* rank 0, empty and strided */
  EXPECT_I(RUN("isinf", NOKV, mk(F64, S0, F64S(-INFINITY)), NULL), BOOL, S0, I64S(1));
  GPTensor *r = RUN("isnan", NOKV, mk(F32, SH(0, 2), NULL), NULL);
  expect_shape_at(r, BOOL, SH(0, 2), __LINE__);
  gp_release(r);
  double buf[4] = {NAN, 1, 2, NAN};
  EXPECT_I(RUN("isnan", NOKV, mk_strided(F64, SH(2), DIMS(3), buf, sizeof buf, 0), NULL), BOOL, SH(2), I64S(1, 1));
}

Test(kernels_elemwise, new_unary_strided_and_empty) {
  float buf[6] = {0.5f, 9, 1.5f, 9, 2.5f, 9};
  GPTensor *v = mk_strided(F32, SH(3), DIMS(2), buf, sizeof buf, 0);
  EXPECT_F(RUN("round", NOKV, gp_retain(v), NULL), F32, SH(3), F64S(0, 2, 2), 0);
  EXPECT_F(RUN("floor", NOKV, v, NULL), F32, SH(3), F64S(0, 1, 2), 0);
  GPTensor *r = RUN("atan", NOKV, mk(F64, SH(0), NULL), NULL);
  expect_shape_at(r, F64, SH(0), __LINE__);
  gp_release(r);
}
