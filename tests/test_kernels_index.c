/* test_kernels_index.c -- the index ops (ir/ops/ops_index.c, eval/k_index.c): take, gather,
 * gather_nd, scatter_elements, scatter_nd, one_hot and trilu against hand-computed values
 * (negative indices, empty tensors, rank 0, strided inputs, out-of-range errors). */
#include "kernel_test_helpers.h"
#include "eval/eval.h"
#include "ir/ir.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define I32S(...) ((const int32_t[]){__VA_ARGS__})
static GPTensor *i32t(int32_t nd, const int64_t *shape, const int32_t *v) { return mk(GP_DT_I32, nd, shape, v); }
static GPTensor *i64t(int32_t nd, const int64_t *shape, const int64_t *v) { return mk(GP_DT_I64, nd, shape, v); }

static GPTensor *eval2(const char *name, GPTensor *x, GPTensor *y, const KV *kv, int32_t nkv) {
  GPTensor *ins[2] = {x, y};
  return eval1t(name, 2, ins, kv, nkv, 1);
}

static GPTensor *eval3(const char *name, GPTensor *x, GPTensor *y, GPTensor *z, const KV *kv, int32_t nkv) {
  GPTensor *ins[3] = {x, y, z};
  return eval1t(name, 3, ins, kv, nkv, 1);
}

/* ------------------------------------------------------------------------------------------ */
/* take                                                                                        */

Test(kindex, take_axis_negative_indices) {
  GPTensor *x = mkf(SHAPE(3, 2), FLOATS(0, 1, 2, 3, 4, 5));
  GPTensor *i = i64t(SHAPE(2, 2), I64S(0, -1, 2, 1));
  expect_f32(eval2("take", x, i, KVS(KV("axis", gp_attr_int(0)), KV("mode", gp_attr_str("fast")))),
             SHAPE(2, 2, 2), FLOATS(0, 1, 4, 5, 4, 5, 2, 3));
  expect_f32(eval2("take", x, i, KVS(KV("axis", gp_attr_int(-1)), KV("mode", gp_attr_str("wrap")))),
             SHAPE(3, 2, 2), FLOATS(0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5));
  /* clip: -1 -> 0, 2 -> 1 */
  expect_f32(eval2("take", x, i, KVS(KV("axis", gp_attr_int(1)))), SHAPE(3, 2, 2),
             FLOATS(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5));
  /* no axis: flattened data */
  expect_f32(eval2("take", x, i, KVS(KV("mode", gp_attr_str("fast")))), SHAPE(2, 2), FLOATS(0, 5, 2, 1));
  gp_release(x), gp_release(i);
}

Test(kindex, take_rank0_index_and_batch_dims) {
  GPTensor *x = mkf(SHAPE(2, 3), FLOATS(0, 1, 2, 3, 4, 5));
  GPTensor *s = i32t(0, NULL, I32S(1));
  expect_f32(eval2("take", x, s, KVS(KV("axis", gp_attr_int(0)))), SHAPE(3), FLOATS(3, 4, 5));
  GPTensor *i = i64t(SHAPE(2, 2), I64S(2, 0, 1, 1));
  expect_f32(eval2("take", x, i, KVS(KV("axis", gp_attr_int(1)), KV("batch_dims", gp_attr_int(1)))), SHAPE(2, 2),
             FLOATS(2, 0, 4, 4));
  gp_release(x), gp_release(s), gp_release(i);
}

Test(kindex, take_out_of_range_is_an_error) {
  GPTensor *x = mkf(SHAPE(3), FLOATS(0, 1, 2));
  GPTensor *i = i64t(SHAPE(2), I64S(1, 3));
  GPTensor *ins[2] = {x, i};
  eval_err("take", 2, ins, KVS(KV("axis", gp_attr_int(0)), KV("mode", gp_attr_str("fast"))), GP_ERR_VALUE,
           "index 3 (element 1) is out of range [-3, 3)");
  gp_release(i);
  i = i64t(SHAPE(1), I64S(-4));
  ins[1] = i;
  eval_err("take", 2, ins, KVS(KV("axis", gp_attr_int(0)), KV("mode", gp_attr_str("fast"))), GP_ERR_VALUE,
           "index -4");
  gp_release(x), gp_release(i);
}

Test(kindex, take_empty_and_strided) {
  int64_t e0[1] = {0};
  GPTensor *x = mkf(SHAPE(3), FLOATS(7, 8, 9));
  GPTensor *i = mk(GP_DT_I64, 1, e0, NULL);
  GPTensor *y = eval2("take", x, i, KVS(KV("axis", gp_attr_int(0))));
  expect_shape(y, GP_DT_F32, SHAPE(0));
  gp_release(y), gp_release(i);
  /* strided data (2, 3) with row stride 4, strided indices */
  GPTensor *xs = mk_strided(GP_DT_F32, SHAPE(2, 3), DIMS(4, 1), 4, FLOATS(0, 1, 2, 3, 4, 5));
  GPTensor *is = mk_strided(GP_DT_I32, SHAPE(2), DIMS(2), 0, (const int32_t[]){2, 0});
  expect_f32(eval2("take", xs, is, KVS(KV("axis", gp_attr_int(1)))), SHAPE(2, 2), FLOATS(2, 0, 5, 3));
  gp_release(x), gp_release(xs), gp_release(is);
}

Test(kindex, take_every_dtype) {
  for (size_t k = 0; k < GP_ARRAY_LEN(k_all_dtypes); k++) {
    DLDataType dt = k_all_dtypes[k];
    GPTensor *x = mk_iota(dt, SHAPE(4));
    if (dt.bits == 1) {
      gp_release(x);
      x = mk(dt, SHAPE(4), (const uint8_t[]){0, 1, 0, 1});
    }
    GPTensor *i = i64t(SHAPE(3), I64S(3, -3, 0));
    GPTensor *y = eval2("take", x, i, KVS(KV("axis", gp_attr_int(0)), KV("mode", gp_attr_str("fast"))));
    if (dt.bits == 1)
      expect_ints(y, dt, SHAPE(3), I64S(1, 1, 0));
    else
      expect_ints(y, dt, SHAPE(3), I64S(3, 1, 0));
    gp_release(x), gp_release(i);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* gather, gather_nd                                                                           */

Test(kindex, gather_elements) {
  GPTensor *x = mkf(SHAPE(2, 2), FLOATS(1, 2, 3, 4));
  GPTensor *i = i64t(SHAPE(2, 2), I64S(0, 0, 1, 0));
  expect_f32(eval2("gather", x, i, KVS(KV("axis", gp_attr_int(1)))), SHAPE(2, 2), FLOATS(1, 1, 4, 3));
  gp_release(i);
  i = i64t(SHAPE(1, 2), I64S(-1, 0));
  expect_f32(eval2("gather", x, i, KVS(KV("axis", gp_attr_int(0)))), SHAPE(1, 2), FLOATS(3, 2));
  gp_release(i);
  i = i64t(SHAPE(1, 2), I64S(2, 0));
  GPTensor *ins[2] = {x, i};
  eval_err("gather", 2, ins, KVS(KV("axis", gp_attr_int(0))), GP_ERR_VALUE, "index 2 (element 0)");
  gp_release(x), gp_release(i);
}

Test(kindex, gather_nd_and_batch_dims) {
  GPTensor *x = i32t(SHAPE(2, 2), I32S(0, 1, 2, 3));
  /* indices (M=2, Y=2): points (0,0), (1,1) */
  GPTensor *i = i64t(SHAPE(2, 2), I64S(0, 1, 0, 1));
  expect_ints(eval2("gather_nd", x, i, NOKV), GP_DT_I32, SHAPE(2), I64S(0, 3));
  gp_release(i);
  /* M = 1: rows 1 and -2 (=0) */
  i = i64t(SHAPE(1, 2), I64S(1, -2));
  expect_ints(eval2("gather_nd", x, i, NOKV), GP_DT_I32, SHAPE(2, 2), I64S(2, 3, 0, 1));
  gp_release(i);
  /* batch_dims 1: data (2, 2), indices (1, 2) -> out[b] = data[b, idx[0, b]] */
  i = i64t(SHAPE(1, 2), I64S(1, 0));
  expect_ints(eval2("gather_nd", x, i, KVS(KV("batch_dims", gp_attr_int(1)))), GP_DT_I32, SHAPE(2), I64S(1, 2));
  gp_release(i);
  i = i64t(SHAPE(2, 1), I64S(0, 2));
  GPTensor *ins[2] = {x, i};
  eval_err("gather_nd", 2, ins, NOKV, GP_ERR_VALUE, "index 2");
  gp_release(x), gp_release(i);
}

/* ------------------------------------------------------------------------------------------ */
/* scatter_elements, scatter_nd                                                                */

Test(kindex, scatter_elements_reductions) {
  GPTensor *x = mkf(SHAPE(1, 5), FLOATS(1, 2, 3, 4, 5));
  GPTensor *i = i64t(SHAPE(1, 2), I64S(1, -2));
  GPTensor *u = mkf(SHAPE(1, 2), FLOATS(10, 20));
  expect_f32(eval3("scatter_elements", x, i, u, KVS(KV("axis", gp_attr_int(1)))), SHAPE(1, 5),
             FLOATS(1, 10, 3, 20, 5));
  gp_release(i), gp_release(u);
  i = i64t(SHAPE(1, 2), I64S(1, 1));
  u = mkf(SHAPE(1, 2), FLOATS(10, 20));
  expect_f32(eval3("scatter_elements", x, i, u, KVS(KV("axis", gp_attr_int(1)), KV("reduction", gp_attr_str("add")))),
             SHAPE(1, 5), FLOATS(1, 32, 3, 4, 5));
  expect_f32(eval3("scatter_elements", x, i, u, KVS(KV("axis", gp_attr_int(1)), KV("reduction", gp_attr_str("mul")))),
             SHAPE(1, 5), FLOATS(1, 400, 3, 4, 5));
  expect_f32(eval3("scatter_elements", x, i, u, KVS(KV("axis", gp_attr_int(1)), KV("reduction", gp_attr_str("max")))),
             SHAPE(1, 5), FLOATS(1, 20, 3, 4, 5));
  expect_f32(eval3("scatter_elements", x, i, u, KVS(KV("axis", gp_attr_int(1)), KV("reduction", gp_attr_str("min")))),
             SHAPE(1, 5), FLOATS(1, 2, 3, 4, 5));
  gp_release(i);
  i = i64t(SHAPE(1, 2), I64S(1, 5));
  GPTensor *ins[3] = {x, i, u};
  eval_err("scatter_elements", 3, ins, KVS(KV("axis", gp_attr_int(1))), GP_ERR_VALUE, "index 5 (element 1)");
  gp_release(x), gp_release(i), gp_release(u);
}

Test(kindex, scatter_elements_int_wraps) {
  GPTensor *x = mk(GP_DT_I8, SHAPE(2), (const int8_t[]){120, 5});
  GPTensor *i = i64t(SHAPE(1), I64S(0));
  GPTensor *u = mk(GP_DT_I8, SHAPE(1), (const int8_t[]){10});
  expect_ints(eval3("scatter_elements", x, i, u, KVS(KV("reduction", gp_attr_str("add")))), GP_DT_I8, SHAPE(2),
              I64S(-126, 5));
  gp_release(x), gp_release(i), gp_release(u);
}

Test(kindex, scatter_nd_modes) {
  GPTensor *x = mkf(SHAPE(4), FLOATS(1, 2, 3, 4));
  GPTensor *i = i64t(SHAPE(1, 3), I64S(3, 1, -1));
  GPTensor *u = mkf(SHAPE(3), FLOATS(10, 20, 30));
  expect_f32(eval3("scatter_nd", x, i, u, NOKV), SHAPE(4), FLOATS(1, 20, 3, 30));
  expect_f32(eval3("scatter_nd", x, i, u, KVS(KV("mode", gp_attr_str("add")))), SHAPE(4), FLOATS(1, 22, 3, 44));
  gp_release(x), gp_release(i), gp_release(u);
  /* slices: data (2, 2), indices (1, 1) -> row 1 */
  x = mkf(SHAPE(2, 2), FLOATS(1, 2, 3, 4));
  i = i64t(SHAPE(1, 1), I64S(1));
  u = mkf(SHAPE(1, 2), FLOATS(7, 8));
  expect_f32(eval3("scatter_nd", x, i, u, KVS(KV("mode", gp_attr_str("mul")))), SHAPE(2, 2), FLOATS(1, 2, 21, 32));
  gp_release(i);
  i = i64t(SHAPE(1, 1), I64S(-3));
  GPTensor *ins[3] = {x, i, u};
  eval_err("scatter_nd", 3, ins, NOKV, GP_ERR_VALUE, "index -3");
  gp_release(x), gp_release(i), gp_release(u);
}

/* ------------------------------------------------------------------------------------------ */
/* one_hot, trilu                                                                              */

Test(kindex, one_hot_axes_and_negative) {
  GPTensor *i = i64t(SHAPE(3), I64S(0, -1, 5));
  GPTensor *on = mkf(0, NULL, FLOATS(3)), *off = mkf(0, NULL, FLOATS(1));
  expect_f32(eval3("one_hot", i, on, off, KVS(KV("depth", gp_attr_int(3)))), SHAPE(3, 3),
             FLOATS(3, 1, 1, 1, 1, 3, 1, 1, 1));
  expect_f32(eval3("one_hot", i, on, off, KVS(KV("depth", gp_attr_int(3)), KV("axis", gp_attr_int(0)))), SHAPE(3, 3),
             FLOATS(3, 1, 1, 1, 1, 1, 1, 3, 1));
  GPTensor *y = eval3("one_hot", i, on, off, KVS(KV("depth", gp_attr_int(2)), KV("dtype", gp_attr_dtype(GP_DT_I32))));
  expect_ints(y, GP_DT_I32, SHAPE(3, 2), I64S(3, 1, 1, 3, 1, 1));
  gp_release(i), gp_release(on), gp_release(off);
}

Test(kindex, trilu_upper_lower_k) {
  GPTensor *x = mkf(SHAPE(3, 3), FLOATS(1, 2, 3, 4, 5, 6, 7, 8, 9));
  GPTensor *k0 = i64t(0, NULL, I64S(0)), *k1 = i64t(SHAPE(1), I64S(-1));
  expect_f32(eval2("trilu", x, k0, NOKV), SHAPE(3, 3), FLOATS(1, 2, 3, 0, 5, 6, 0, 0, 9));
  expect_f32(eval2("trilu", x, k0, KVS(KV("upper", gp_attr_bool(false)))), SHAPE(3, 3), FLOATS(1, 0, 0, 4, 5, 0, 7, 8, 9));
  expect_f32(eval2("trilu", x, k1, NOKV), SHAPE(3, 3), FLOATS(1, 2, 3, 4, 5, 6, 0, 8, 9));
  expect_f32(eval2("trilu", x, k1, KVS(KV("upper", gp_attr_bool(false)))), SHAPE(3, 3), FLOATS(0, 0, 0, 4, 0, 0, 7, 8, 0));
  GPTensor *xs = mk_strided(GP_DT_F32, SHAPE(2, 2), DIMS(1, 2), 0, FLOATS(1, 2, 3, 4));
  expect_f32(eval2("trilu", xs, k0, NOKV), SHAPE(2, 2), FLOATS(1, 2, 0, 4));
  gp_release(x), gp_release(k0), gp_release(k1), gp_release(xs);
}

Test(kindex, type_errors) {
  const GPOp *op = gp_op_get("take");
  const GPType *args[2] = {gp_type_tensor(GP_DT_F32, 1, DIMS(3)), gp_type_tensor(GP_DT_F32, 1, DIMS(2))};
  gp_error_clear();
  const GPType *t = gp_op_infer(op, NULL, args, 2);
  cr_assert_null(t);
  cr_assert(strstr(gp_error_message(), "indices must have an integer dtype"), "%s", gp_error_message());
  gp_error_clear();
}
