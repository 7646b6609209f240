/* test_kernels_transform.c -- the reference kernels of the shape transforms (eval/k_transform.c)
 * and the shape_of op: evaluated through gp_eval_op / gp_eval_call on constants, compared with
 * hand-computed values (or, for large inputs, with the index formula). */
#include "kernel_test_helpers.h"
#include "eval/eval.h"
#include "ir/ir.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */

/* A compact tensor whose element i holds the bytes of a value unique to i (bool: i % 2), so a
 * wrongly sized or misplaced copy shows. */
static void pattern_bytes(DLDataType dt, int64_t i, unsigned char *out) {
  size_t e = esize(dt);
  if (dt.code == kDLUInt && dt.bits == 1) {
    out[0] = (unsigned char)(i % 2);
    return;
  }
  for (size_t j = 0; j < e; j++) out[j] = (unsigned char)((i * 37 + (int64_t)j * 101 + 7) & 0xff);
}

static GPTensor *mk_pattern(DLDataType dt, int32_t nd, const int64_t *shape) {
  GPTensor *t = mk(dt, nd, shape, NULL);
  int64_t n = count(nd, shape);
  for (int64_t i = 0; i < n; i++) pattern_bytes(dt, i, (unsigned char *)t->dl.data + (size_t)i * esize(dt));
  return t;
}

/* Element `oi` of out must hold the pattern of input element `ii`. */
static void expect_pattern_at(const GPTensor *out, int64_t oi, int64_t ii) {
  unsigned char want[8];
  size_t e = esize(out->dl.dtype);
  pattern_bytes(out->dl.dtype, ii, want);
  const unsigned char *got = (const unsigned char *)out->dl.data + (size_t)oi * e;
  char b[24];
  cr_assert(memcmp(got, want, e) == 0, "%s: element %lld is not input element %lld",
            gp_dtype_str(out->dl.dtype, b), (long long)oi, (long long)ii);
}

/* ------------------------------------------------------------------------------------------ */
/* reshape, squeeze, expand_dims, nn.batch_flatten                                             */

Test(ktransform, reshape_row_major) {
  GPTensor *x = mkf(SHAPE(2, 3), FLOATS(0, 1, 2, 3, 4, 5));
  expect_f32(eval1("reshape", x, KVS(KV("newshape", INTS(3, -1)))), SHAPE(3, 2), FLOATS(0, 1, 2, 3, 4, 5));
  expect_f32(eval1("reshape", x, KVS(KV("newshape", INTS(-1)))), SHAPE(6), FLOATS(0, 1, 2, 3, 4, 5));
  expect_f32(eval1("reshape", x, KVS(KV("newshape", INTS(0, 1, 3)))), SHAPE(2, 1, 3), FLOATS(0, 1, 2, 3, 4, 5));
  gp_release(x);
}

Test(ktransform, reshape_allowzero) {
  /* allowzero: 0 is a zero extent, not "copy the input's dim" */
  int64_t s[2] = {0, 6};
  GPTensor *x = mk(GP_DT_F32, 2, s, NULL);
  GPTensor *y = eval1("reshape", x, KVS(KV("newshape", INTS(0, 3, 2)), KV("allowzero", gp_attr_bool(true))));
  expect_shape(y, GP_DT_F32, SHAPE(0, 3, 2));
  gp_release(y);
  y = eval1("reshape", x, KVS(KV("newshape", INTS(0, 2, 3))));
  expect_shape(y, GP_DT_F32, SHAPE(0, 2, 3));
  gp_release(y);
  gp_release(x);
  x = mkf(SHAPE(2, 3), FLOATS(1, 2, 3, 4, 5, 6));
  expect_f32(eval1("reshape", x, KVS(KV("newshape", INTS(3, 2)), KV("allowzero", gp_attr_bool(true)))),
             SHAPE(3, 2), FLOATS(1, 2, 3, 4, 5, 6));
  gp_release(x);
}

Test(ktransform, reshape_strided_input_with_byte_offset) {
  /* logical (2, 3) with row stride 5 and column stride 2, 12 bytes in */
  GPTensor *x = mk_strided(GP_DT_F32, SHAPE(2, 3), DIMS(5, 2), 12, FLOATS(10, 11, 12, 13, 14, 15));
  expect_f32(eval1("reshape", x, KVS(KV("newshape", INTS(6)))), SHAPE(6), FLOATS(10, 11, 12, 13, 14, 15));
  expect_f32(eval1("nn.batch_flatten", x, NOKV), SHAPE(2, 3), FLOATS(10, 11, 12, 13, 14, 15));
  expect_f32(eval1("expand_dims", x, KVS(KV("axis", gp_attr_int(-1)))), SHAPE(2, 3, 1),
             FLOATS(10, 11, 12, 13, 14, 15));
  gp_release(x);
}

Test(ktransform, reshape_every_dtype_size) {
  for (size_t k = 0; k < GP_ARRAY_LEN(k_all_dtypes); k++) {
    DLDataType dt = k_all_dtypes[k];
    GPTensor *x = mk_pattern(dt, SHAPE(4, 5));
    GPTensor *y = eval1("reshape", x, KVS(KV("newshape", INTS(5, 2, 2))));
    expect_shape(y, dt, SHAPE(5, 2, 2));
    for (int64_t i = 0; i < 20; i++) expect_pattern_at(y, i, i);
    gp_release(y);
    gp_release(x);
  }
}

Test(ktransform, squeeze_expand_dims_batch_flatten) {
  GPTensor *x = mkf(SHAPE(1, 3, 1), FLOATS(7, 8, 9));
  expect_f32(eval1("squeeze", x, NOKV), SHAPE(3), FLOATS(7, 8, 9));
  expect_f32(eval1("squeeze", x, KVS(KV("axis", INTS(-1)))), SHAPE(1, 3), FLOATS(7, 8, 9));
  expect_f32(eval1("expand_dims", x, KVS(KV("axis", gp_attr_int(1)), KV("num_newaxis", gp_attr_int(2)))),
             SHAPE(1, 1, 1, 3, 1), FLOATS(7, 8, 9));
  expect_f32(eval1("nn.batch_flatten", x, NOKV), SHAPE(1, 3), FLOATS(7, 8, 9));
  gp_release(x);
}

Test(ktransform, rank0_reshape_expand_squeeze) {
  float v = 4.5f;
  GPTensor *s = mk(GP_DT_F32, 0, NULL, &v);
  expect_f32(eval1("reshape", s, KVS(KV("newshape", INTS(1, 1)))), SHAPE(1, 1), FLOATS(4.5f));
  expect_f32(eval1("expand_dims", s, KVS(KV("axis", gp_attr_int(0)))), SHAPE(1), FLOATS(4.5f));
  GPTensor *t = eval1("transpose", s, NOKV);
  expect_shape(t, GP_DT_F32, 0, NULL);
  cr_assert_eq(*(float *)t->dl.data, 4.5f);
  gp_release(t);
  GPTensor *one = mkf(SHAPE(1, 1), FLOATS(-2));
  t = eval1("squeeze", one, NOKV);
  expect_shape(t, GP_DT_F32, 0, NULL);
  cr_assert_eq(*(float *)t->dl.data, -2.0f);
  gp_release(t);
  gp_release(one);
  gp_release(s);
}

Test(ktransform, empty_tensors) {
  int64_t s03[2] = {0, 3};
  GPTensor *x = mk(GP_DT_I32, 2, s03, NULL);
  GPTensor *y = eval1("reshape", x, KVS(KV("newshape", INTS(3, 0)), KV("allowzero", gp_attr_bool(true))));
  expect_shape(y, GP_DT_I32, SHAPE(3, 0));
  gp_release(y);
  y = eval1("reshape", x, KVS(KV("newshape", INTS(-1, 1))));
  expect_shape(y, GP_DT_I32, SHAPE(0, 1));
  gp_release(y);
  y = eval1("transpose", x, NOKV);
  expect_shape(y, GP_DT_I32, SHAPE(3, 0));
  gp_release(y);
  y = eval1("strided_slice", x, KVS(KV("begin", INTS(0, 1)), KV("end", INTS(0, 3))));
  expect_shape(y, GP_DT_I32, SHAPE(0, 2));
  gp_release(y);
  GPTensor *outs[2];
  cr_assert_eq(eval_n("split", 1, &x, false, KVS(KV("indices_or_sections", INTS(1)), KV("axis", gp_attr_int(1))), 1,
                      outs, 2),
               2, "%s", gp_error_message());
  expect_shape(outs[0], GP_DT_I32, SHAPE(0, 1));
  expect_shape(outs[1], GP_DT_I32, SHAPE(0, 2));
  gp_release(outs[0]);
  gp_release(outs[1]);
  int64_t s0311[4] = {0, 3, 1, 1};
  GPTensor *x4 = mk(GP_DT_I32, 4, s0311, NULL);
  y = eval1("layout_transform", x4,
            KVS(KV("src_layout", gp_attr_str("NCHW")), KV("dst_layout", gp_attr_str("NCHW4c"))));
  expect_shape(y, GP_DT_I32, SHAPE(0, 1, 1, 1, 4));
  gp_release(y);
  gp_release(x4);
  /* an empty field among non-empty ones */
  int64_t s20[2] = {2, 0};
  GPTensor *fields[3] = {mk(GP_DT_I32, 2, s20, NULL), mk_iota(GP_DT_I32, SHAPE(2, 2)), mk(GP_DT_I32, 2, s20, NULL)};
  cr_assert_eq(eval_n("concatenate", 3, fields, true, KVS(KV("axis", gp_attr_int(1))), 1, outs, 1), 1, "%s",
               gp_error_message());
  expect_ints(outs[0], GP_DT_I32, SHAPE(2, 2), I64S(0, 1, 2, 3));
  for (int i = 0; i < 3; i++) gp_release(fields[i]);
  gp_release(x);
}

/* ------------------------------------------------------------------------------------------ */
/* transpose                                                                                   */

Test(ktransform, transpose_default_reverses) {
  GPTensor *x = mkf(SHAPE(2, 3), FLOATS(0, 1, 2, 3, 4, 5));
  expect_f32(eval1("transpose", x, NOKV), SHAPE(3, 2), FLOATS(0, 3, 1, 4, 2, 5));
  /* an empty axes list means reverse as well */
  GPTensor *y = eval1("transpose", x, KVS(KV("axes", gp_attr_ints(0, NULL))));
  expect_f32(y, SHAPE(3, 2), FLOATS(0, 3, 1, 4, 2, 5));
  gp_release(x);
}

Test(ktransform, transpose_negative_axes) {
  GPTensor *x = mk_iota(GP_DT_F32, SHAPE(2, 2, 3));
  expect_f32(eval1("transpose", x, KVS(KV("axes", INTS(1, 0, -1)))), SHAPE(2, 2, 3),
             FLOATS(0, 1, 2, 6, 7, 8, 3, 4, 5, 9, 10, 11));
  expect_f32(eval1("transpose", x, KVS(KV("axes", INTS(-1, -3, -2)))), SHAPE(3, 2, 2),
             FLOATS(0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11));
  gp_release(x);
}

Test(ktransform, transpose_strided_input) {
  /* a logical (3, 2) stored column-major (strides 1, 3), 4 bytes in */
  GPTensor *x = mk_strided(GP_DT_F32, SHAPE(3, 2), DIMS(1, 3), 4, FLOATS(0, 1, 2, 3, 4, 5));
  expect_f32(eval1("transpose", x, NOKV), SHAPE(2, 3), FLOATS(0, 2, 4, 1, 3, 5));
  expect_f32(eval1("transpose", x, KVS(KV("axes", INTS(0, 1)))), SHAPE(3, 2), FLOATS(0, 1, 2, 3, 4, 5));
  gp_release(x);
}

Test(ktransform, transpose_every_dtype_size_tiled) {
  /* 37 x 70 crosses tile borders in both dims; bfloat16 and uint16 move as 2-byte elements */
  DLDataType extra[] = {GP_DT(kDLBfloat, 16), GP_DT(kDLUInt, 16)};
  for (size_t k = 0; k < GP_ARRAY_LEN(k_all_dtypes) + GP_ARRAY_LEN(extra); k++) {
    DLDataType dt = k < GP_ARRAY_LEN(k_all_dtypes) ? k_all_dtypes[k] : extra[k - GP_ARRAY_LEN(k_all_dtypes)];
    GPTensor *x = mk_pattern(dt, SHAPE(37, 70));
    GPTensor *y = eval1t("transpose", 1, &x, NOKV, 3);
    expect_shape(y, dt, SHAPE(70, 37));
    for (int64_t j = 0; j < 70; j++)
      for (int64_t i = 0; i < 37; i++) expect_pattern_at(y, j * 37 + i, i * 70 + j);
    gp_release(y);
    gp_release(x);
  }
}

Test(ktransform, transpose_4d_threads) {
  /* NCHW -> NHWC-like permutation of a tensor large enough to be split over threads */
  int64_t N = 2, C = 3, H = 67, W = 129;
  GPTensor *x = mk_iota(GP_DT_I32, SHAPE(2, 3, 67, 129));
  GPTensor *y = eval1t("transpose", 1, &x, KVS(KV("axes", INTS(0, -2, -1, 1))), 4);
  expect_shape(y, GP_DT_I32, SHAPE(2, 67, 129, 3));
  const int32_t *o = y->dl.data;
  for (int64_t n = 0; n < N; n++)
    for (int64_t h = 0; h < H; h++)
      for (int64_t w = 0; w < W; w++)
        for (int64_t c = 0; c < C; c++) {
          int64_t want = ((n * C + c) * H + h) * W + w;
          cr_assert_eq(o[((n * H + h) * W + w) * C + c], want, "at n%lld c%lld h%lld w%lld", (long long)n,
                       (long long)c, (long long)h, (long long)w);
        }
  gp_release(y);
  /* a large 2-d transpose on 4 threads */
  GPTensor *m = mk_iota(GP_DT_I32, SHAPE(1000, 777));
  y = eval1t("transpose", 1, &m, NOKV, 4);
  o = y->dl.data;
  for (int64_t j = 0; j < 777; j++)
    for (int64_t i = 0; i < 1000; i++) cr_assert_eq(o[j * 1000 + i], i * 777 + j);
  gp_release(y);
  gp_release(m);
  gp_release(x);
}

/* ------------------------------------------------------------------------------------------ */
/* concatenate                                                                                 */

static GPTensor *concat(int32_t n, GPTensor *const *fields, int64_t axis, int32_t threads) {
  GPTensor *out[1];
  int r = eval_n("concatenate", n, fields, true, KVS(KV("axis", gp_attr_int(axis))), threads, out, 1);
  cr_assert_eq(r, 1, "concatenate: %s", gp_error_message());
  return out[0];
}

Test(ktransform, concatenate_axes) {
  GPTensor *f[3] = {mkf(SHAPE(1, 2), FLOATS(1, 2)), mkf(SHAPE(2, 2), FLOATS(3, 4, 5, 6)), NULL};
  expect_f32(concat(2, f, 0, 1), SHAPE(3, 2), FLOATS(1, 2, 3, 4, 5, 6));
  expect_f32(concat(2, f, -2, 1), SHAPE(3, 2), FLOATS(1, 2, 3, 4, 5, 6));
  gp_release(f[0]);
  f[0] = mkf(SHAPE(2, 1), FLOATS(1, 2));
  f[2] = mkf(SHAPE(2, 3), FLOATS(7, 8, 9, 10, 11, 12));
  expect_f32(concat(3, f, -1, 1), SHAPE(2, 6), FLOATS(1, 3, 4, 7, 8, 9, 2, 5, 6, 10, 11, 12));
  expect_f32(concat(2, f, 1, 1), SHAPE(2, 3), FLOATS(1, 3, 4, 2, 5, 6));
  for (int i = 0; i < 3; i++) gp_release(f[i]);
}

Test(ktransform, concatenate_strided_field_every_dtype_size) {
  for (size_t k = 0; k < GP_ARRAY_LEN(k_all_dtypes); k++) {
    DLDataType dt = k_all_dtypes[k];
    GPTensor *a = mk_pattern(dt, SHAPE(2, 3));
    /* b: logical (2, 2) holding pattern values 6..9, stored with strides (7, 3), 8 bytes in */
    GPTensor *pat = mk_pattern(dt, SHAPE(10));
    GPTensor *b = mk_strided(dt, SHAPE(2, 2), DIMS(7, 3), 8, (const char *)pat->dl.data + 6 * esize(dt));
    GPTensor *f[2] = {a, b};
    GPTensor *y = concat(2, f, 1, 1);
    expect_shape(y, dt, SHAPE(2, 5));
    static const int64_t want[10] = {0, 1, 2, 6, 7, 3, 4, 5, 8, 9};
    for (int64_t i = 0; i < 10; i++) expect_pattern_at(y, i, want[i]);
    gp_release(y);
    gp_release(a);
    gp_release(b);
    gp_release(pat);
  }
}

Test(ktransform, concatenate_rank3_middle_axis_threads) {
  GPTensor *a = mk_iota(GP_DT_I64, SHAPE(3, 400, 300));
  GPTensor *b = mk_iota(GP_DT_I64, SHAPE(3, 100, 300));
  GPTensor *f[2] = {a, b};
  GPTensor *y = concat(2, f, 1, 4);
  expect_shape(y, GP_DT_I64, SHAPE(3, 500, 300));
  const int64_t *o = y->dl.data;
  for (int64_t i = 0; i < 3; i++)
    for (int64_t j = 0; j < 500; j++)
      for (int64_t k = 0; k < 300; k += 7) {
        int64_t want = j < 400 ? (i * 400 + j) * 300 + k : (i * 100 + (j - 400)) * 300 + k;
        cr_assert_eq(o[(i * 500 + j) * 300 + k], want);
      }
  gp_release(y);
  gp_release(a);
  gp_release(b);
}

/* ------------------------------------------------------------------------------------------ */
/* split                                                                                       */

Test(ktransform, split_sections) {
  GPTensor *x = mk_iota(GP_DT_F32, SHAPE(2, 6));
  GPTensor *o[4];
  cr_assert_eq(eval_n("split", 1, &x, false, KVS(KV("indices_or_sections", gp_attr_int(3)), KV("axis", gp_attr_int(1))),
                      1, o, 4),
               3, "%s", gp_error_message());
  expect_f32(o[0], SHAPE(2, 2), FLOATS(0, 1, 6, 7));
  expect_f32(o[1], SHAPE(2, 2), FLOATS(2, 3, 8, 9));
  expect_f32(o[2], SHAPE(2, 2), FLOATS(4, 5, 10, 11));
  cr_assert_eq(eval_n("split", 1, &x, false, KVS(KV("indices_or_sections", gp_attr_int(2))), 1, o, 4), 2);
  expect_f32(o[0], SHAPE(1, 6), FLOATS(0, 1, 2, 3, 4, 5));
  expect_f32(o[1], SHAPE(1, 6), FLOATS(6, 7, 8, 9, 10, 11));
  gp_release(x);
}

Test(ktransform, split_indices_negative_axis) {
  GPTensor *x = mk_iota(GP_DT_F32, SHAPE(2, 6));
  GPTensor *o[4];
  cr_assert_eq(eval_n("split", 1, &x, false, KVS(KV("indices_or_sections", INTS(1, 4)), KV("axis", gp_attr_int(-1))),
                      1, o, 4),
               3, "%s", gp_error_message());
  expect_f32(o[0], SHAPE(2, 1), FLOATS(0, 6));
  expect_f32(o[1], SHAPE(2, 3), FLOATS(1, 2, 3, 7, 8, 9));
  expect_f32(o[2], SHAPE(2, 2), FLOATS(4, 5, 10, 11));
  gp_release(x);
}

Test(ktransform, split_strided_input) {
  /* logical (4, 2) with strides (2, 9): columns interleaved with a big gap */
  GPTensor *x = mk_strided(GP_DT_F64, SHAPE(4, 2), DIMS(2, 9), 16, (const double[]){0, 1, 2, 3, 4, 5, 6, 7});
  GPTensor *o[4];
  cr_assert_eq(eval_n("split", 1, &x, false, KVS(KV("indices_or_sections", INTS(1, 3))), 1, o, 4), 3, "%s",
               gp_error_message());
  expect_ints(o[0], GP_DT_F64, SHAPE(1, 2), I64S(0, 1));
  expect_ints(o[1], GP_DT_F64, SHAPE(2, 2), I64S(2, 3, 4, 5));
  expect_ints(o[2], GP_DT_F64, SHAPE(1, 2), I64S(6, 7));
  gp_release(x);
}

Test(ktransform, split_large_threads) {
  GPTensor *x = mk_iota(GP_DT_I32, SHAPE(3000, 256));
  GPTensor *o[3];
  cr_assert_eq(eval_n("split", 1, &x, false, KVS(KV("indices_or_sections", gp_attr_int(3))), 4, o, 3), 3);
  for (int j = 0; j < 3; j++) {
    expect_shape(o[j], GP_DT_I32, SHAPE(1000, 256));
    const int32_t *p = o[j]->dl.data;
    for (int64_t i = 0; i < 1000 * 256; i += 13) cr_assert_eq(p[i], j * 1000 * 256 + i);
    gp_release(o[j]);
  }
  gp_release(x);
}

/* ------------------------------------------------------------------------------------------ */
/* strided_slice                                                                               */

static GPTensor *slice(GPTensor *x, const KV *kv, int32_t nkv) { return eval1("strided_slice", x, kv, nkv); }

Test(ktransform, strided_slice_basic_and_missing_entries) {
  GPTensor *x = mk_iota(GP_DT_F32, SHAPE(4, 5));
  expect_f32(slice(x, KVS(KV("begin", INTS(1, 1)), KV("end", INTS(3, 4)))), SHAPE(2, 3), FLOATS(6, 7, 8, 11, 12, 13));
  /* fewer strides than axes: the rest are 1 */
  expect_f32(slice(x, KVS(KV("begin", INTS(0, 1)), KV("end", INTS(4, 3)), KV("strides", INTS(2)))), SHAPE(2, 2),
             FLOATS(1, 2, 11, 12));
  /* fewer ends than begins: the axis runs to its end */
  expect_f32(slice(x, KVS(KV("begin", INTS(2, 3)), KV("end", INTS(3)))), SHAPE(1, 2), FLOATS(13, 14));
  /* only the leading axis */
  expect_f32(slice(x, KVS(KV("begin", INTS(3)), KV("end", INTS(4)))), SHAPE(1, 5), FLOATS(15, 16, 17, 18, 19));
  gp_release(x);
}

Test(ktransform, strided_slice_negative_strides) {
  GPTensor *x = mk_iota(GP_DT_F32, SHAPE(10));
  expect_f32(slice(x, KVS(KV("begin", INTS(8)), KV("end", INTS(2)), KV("strides", INTS(-2)))), SHAPE(3),
             FLOATS(8, 6, 4));
  /* begin -1 is 9, end -11 clamps to -1 (one before 0): the whole axis reversed */
  expect_f32(slice(x, KVS(KV("begin", INTS(-1)), KV("end", INTS(-11)), KV("strides", INTS(-1)))), SHAPE(10),
             FLOATS(9, 8, 7, 6, 5, 4, 3, 2, 1, 0));
  /* begin past the end clamps to 9 for a negative stride */
  expect_f32(slice(x, KVS(KV("begin", INTS(100)), KV("end", INTS(-100)), KV("strides", INTS(-3)))), SHAPE(4),
             FLOATS(9, 6, 3, 0));
  expect_f32(slice(x, KVS(KV("begin", INTS(-3)), KV("end", INTS(0)), KV("strides", INTS(-1)))), SHAPE(7),
             FLOATS(7, 6, 5, 4, 3, 2, 1));
  gp_release(x);
}

Test(ktransform, strided_slice_clamping) {
  GPTensor *x = mk_iota(GP_DT_F32, SHAPE(10));
  expect_f32(slice(x, KVS(KV("begin", INTS(-100)), KV("end", INTS(100)))), SHAPE(10),
             FLOATS(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
  expect_f32(slice(x, KVS(KV("begin", INTS(2)), KV("end", INTS(100)), KV("strides", INTS(3)))), SHAPE(3),
             FLOATS(2, 5, 8));
  expect_f32(slice(x, KVS(KV("begin", INTS(-4)), KV("end", INTS(-1)))), SHAPE(3), FLOATS(6, 7, 8));
  GPTensor *e = slice(x, KVS(KV("begin", INTS(3)), KV("end", INTS(3))));
  expect_shape(e, GP_DT_F32, SHAPE(0));
  gp_release(e);
  e = slice(x, KVS(KV("begin", INTS(20)), KV("end", INTS(30))));
  expect_shape(e, GP_DT_F32, SHAPE(0));
  gp_release(e);
  gp_release(x);
}

Test(ktransform, strided_slice_size_mode) {
  GPTensor *x = mk_iota(GP_DT_F32, SHAPE(4, 3));
  /* size -1: to the end; strides are ignored in size mode */
  expect_f32(slice(x, KVS(KV("begin", INTS(1, 0)), KV("end", INTS(2, -1)), KV("strides", INTS(2, 2)),
                         KV("slice_mode", gp_attr_str("size")))),
             SHAPE(2, 3), FLOATS(3, 4, 5, 6, 7, 8));
  expect_f32(slice(x, KVS(KV("begin", INTS(-1, 1)), KV("end", INTS(1, 2)), KV("slice_mode", gp_attr_str("size")))),
             SHAPE(1, 2), FLOATS(10, 11));
  /* a size past the end clamps */
  expect_f32(slice(x, KVS(KV("begin", INTS(3)), KV("end", INTS(5)), KV("slice_mode", gp_attr_str("size")))),
             SHAPE(1, 3), FLOATS(9, 10, 11));
  gp_release(x);
}

Test(ktransform, strided_slice_axes) {
  GPTensor *x = mk_iota(GP_DT_F32, SHAPE(2, 4));
  expect_f32(slice(x, KVS(KV("begin", INTS(1)), KV("end", INTS(3)), KV("axes", INTS(1)))), SHAPE(2, 2),
             FLOATS(1, 2, 5, 6));
  expect_f32(slice(x, KVS(KV("begin", INTS(1)), KV("end", INTS(2)), KV("axes", INTS(-2)))), SHAPE(1, 4),
             FLOATS(4, 5, 6, 7));
  expect_f32(slice(x, KVS(KV("begin", INTS(3, 1)), KV("end", INTS(0, 0)), KV("strides", INTS(-2, -1)),
                         KV("axes", INTS(1, 0)))),
             SHAPE(1, 2), FLOATS(7, 5));
  gp_release(x);
}

Test(ktransform, strided_slice_strided_input_negative_strides) {
  /* logical (3, 4) = 0..11 with strides (9, 2), 8 bytes in */
  GPTensor *x = mk_strided(GP_DT_I16, SHAPE(3, 4), DIMS(9, 2), 8,
                           (const int16_t[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  expect_ints(slice(x, KVS(KV("begin", INTS(2, 3)), KV("end", INTS(-4, -5)), KV("strides", INTS(-1, -2)))),
              GP_DT_I16, SHAPE(3, 2), I64S(11, 9, 7, 5, 3, 1));
  expect_ints(slice(x, KVS(KV("begin", INTS(1, 1)), KV("end", INTS(3, 4)), KV("strides", INTS(1, 2)))), GP_DT_I16,
              SHAPE(2, 2), I64S(5, 7, 9, 11));
  gp_release(x);
}

Test(ktransform, strided_slice_every_dtype_size) {
  for (size_t k = 0; k < GP_ARRAY_LEN(k_all_dtypes); k++) {
    DLDataType dt = k_all_dtypes[k];
    GPTensor *x = mk_pattern(dt, SHAPE(3, 8));
    GPTensor *y = slice(x, KVS(KV("begin", INTS(0, 1)), KV("end", INTS(3, 8)), KV("strides", INTS(1, 3))));
    expect_shape(y, dt, SHAPE(3, 3));
    for (int64_t r = 0; r < 3; r++)
      for (int64_t c = 0; c < 3; c++) expect_pattern_at(y, r * 3 + c, r * 8 + 1 + 3 * c);
    gp_release(y);
    y = slice(x, KVS(KV("begin", INTS(2, 6)), KV("end", INTS(0, 1)), KV("strides", INTS(-1, -4))));
    expect_shape(y, dt, SHAPE(2, 2));
    static const int64_t want[4] = {22, 18, 14, 10};
    for (int64_t i = 0; i < 4; i++) expect_pattern_at(y, i, want[i]);
    gp_release(y);
    gp_release(x);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* layout_transform                                                                            */

static GPTensor *relayout(GPTensor *x, const char *src, const char *dst, int32_t threads) {
  return eval1t("layout_transform", 1, &x,
                KVS(KV("src_layout", gp_attr_str(src)), KV("dst_layout", gp_attr_str(dst))), threads);
}

/* The oracle: element by element through the primal coordinates (0 outside the source). */
typedef struct {
  int32_t n;
  char ax[16];
  int64_t f[16];
} Lay;

static Lay lay(const char *s) {
  Lay l = {0};
  int64_t f = 0;
  for (; *s; s++) {
    if (*s >= '0' && *s <= '9') {
      f = f * 10 + (*s - '0');
      continue;
    }
    l.ax[l.n] = *s;
    l.f[l.n++] = f;
    f = 0;
  }
  return l;
}

static int32_t lay_find(const Lay *l, char c) {
  for (int32_t i = 0; i < l->n; i++)
    if (l->ax[i] == c) return i;
  return -1;
}

static void expect_relayout(const GPTensor *in, const char *src, const char *dst, const GPTensor *out) {
  Lay s = lay(src), d = lay(dst);
  size_t e = esize(in->dl.dtype);
  cr_assert_eq(out->dl.ndim, d.n);
  int64_t n = count(out->dl.ndim, out->dl.shape), idx[16] = {0};
  for (int64_t flat = 0; flat < n; flat++) {
    int64_t prim[26] = {0};
    for (int32_t i = 0; i < d.n; i++) {
      char c = d.ax[i];
      if (c >= 'A' && c <= 'Z') {
        int32_t sub = lay_find(&d, (char)(c - 'A' + 'a'));
        prim[c - 'A'] += idx[i] * (sub >= 0 ? d.f[sub] : 1);
      } else {
        prim[c - 'a'] += idx[i];
      }
    }
    int64_t off = 0;
    bool inside = true;
    for (int32_t i = 0; i < s.n; i++) {
      char c = s.ax[i];
      int64_t si;
      if (c >= 'A' && c <= 'Z') {
        int32_t sub = lay_find(&s, (char)(c - 'A' + 'a'));
        si = sub >= 0 ? prim[c - 'A'] / s.f[sub] : prim[c - 'A'];
        if (si >= in->dl.shape[i]) inside = false;
      } else {
        si = prim[c - 'a'] % s.f[i];
      }
      off = off * in->dl.shape[i] + si;
    }
    const unsigned char *got = (const unsigned char *)out->dl.data + (size_t)flat * e;
    unsigned char zero[8] = {0};
    const void *want = inside ? (const unsigned char *)in->dl.data + (size_t)off * e : zero;
    cr_assert(memcmp(got, want, e) == 0, "%s -> %s: element %lld %s", src, dst, (long long)flat,
              inside ? "differs from its source" : "is padding but not 0");
    for (int32_t i = d.n - 1; i >= 0; i--) {
      if (++idx[i] < out->dl.shape[i]) break;
      idx[i] = 0;
    }
  }
}

Test(ktransform, layout_nchw_nhwc_by_hand) {
  GPTensor *x = mk_iota(GP_DT_F32, SHAPE(1, 2, 2, 2));
  GPTensor *y = relayout(x, "NCHW", "NHWC", 1);
  GPTensor *z = relayout(y, "NHWC", "NCHW", 1);
  expect_f32(y, SHAPE(1, 2, 2, 2), FLOATS(0, 4, 1, 5, 2, 6, 3, 7));
  expect_f32(z, SHAPE(1, 2, 2, 2), FLOATS(0, 1, 2, 3, 4, 5, 6, 7));
  gp_release(x);
}

Test(ktransform, layout_blocked_padding_by_hand) {
  /* 5 channels in blocks of 4: the second block holds channel 4 and three zeros */
  GPTensor *x = mkf(SHAPE(1, 5, 1, 1), FLOATS(1, 2, 3, 4, 5));
  GPTensor *y = relayout(x, "NCHW", "NCHW4c", 1);
  GPTensor *z = relayout(y, "NCHW4c", "NCHW", 1);
  expect_f32(y, SHAPE(1, 2, 1, 1, 4), FLOATS(1, 2, 3, 4, 5, 0, 0, 0));
  expect_f32(z, SHAPE(1, 8, 1, 1), FLOATS(1, 2, 3, 4, 5, 0, 0, 0));
  gp_release(x);
}

Test(ktransform, layout_nchw16c_round_trip_20_channels) {
  int64_t N = 2, C = 20, H = 3, W = 5;
  GPTensor *x = mk(GP_DT_F32, SHAPE(2, 20, 3, 5), NULL);
  float *xv = x->dl.data;
  for (int64_t i = 0; i < N * C * H * W; i++) xv[i] = (float)(i + 1); /* no zeros in the data */
  GPTensor *y = relayout(x, "NCHW", "NCHW16c", 1);
  expect_shape(y, GP_DT_F32, SHAPE(2, 2, 3, 5, 16));
  const float *yv = y->dl.data;
  for (int64_t n = 0; n < N; n++)
    for (int64_t co = 0; co < 2; co++)
      for (int64_t h = 0; h < H; h++)
        for (int64_t w = 0; w < W; w++)
          for (int64_t ci = 0; ci < 16; ci++) {
            int64_t c = co * 16 + ci;
            float want = c < C ? xv[((n * C + c) * H + h) * W + w] : 0.0f;
            cr_assert_eq(yv[(((n * 2 + co) * H + h) * W + w) * 16 + ci], want, "n%lld c%lld h%lld w%lld",
                         (long long)n, (long long)c, (long long)h, (long long)w);
          }
  /* back: 32 channels (TVM's shape), the first 20 the input, the rest the zero padding */
  GPTensor *z = relayout(y, "NCHW16c", "NCHW", 1);
  expect_shape(z, GP_DT_F32, SHAPE(2, 32, 3, 5));
  const float *zv = z->dl.data;
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < 32; c++)
      for (int64_t hw = 0; hw < H * W; hw++)
        cr_assert_eq(zv[(n * 32 + c) * H * W + hw], c < C ? xv[(n * C + c) * H * W + hw] : 0.0f);
  /* and sliced back to 20 channels it is the input */
  GPTensor *s = slice(z, KVS(KV("begin", INTS(0)), KV("end", INTS(20)), KV("axes", INTS(1))));
  expect_shape(s, GP_DT_F32, SHAPE(2, 20, 3, 5));
  cr_assert(memcmp(s->dl.data, x->dl.data, (size_t)(N * C * H * W) * 4) == 0);
  gp_release(s);
  gp_release(z);
  gp_release(y);
  gp_release(x);
}

Test(ktransform, layout_every_dtype_size) {
  for (size_t k = 0; k < GP_ARRAY_LEN(k_all_dtypes); k++) {
    DLDataType dt = k_all_dtypes[k];
    GPTensor *x = mk_pattern(dt, SHAPE(2, 20, 3, 4));
    GPTensor *y = relayout(x, "NCHW", "NCHW16c", 1);
    expect_shape(y, dt, SHAPE(2, 2, 3, 4, 16));
    expect_relayout(x, "NCHW", "NCHW16c", y);
    GPTensor *z = relayout(y, "NCHW16c", "NHWC", 1);
    expect_shape(z, dt, SHAPE(2, 3, 4, 32));
    expect_relayout(y, "NCHW16c", "NHWC", z);
    gp_release(z);
    gp_release(y);
    gp_release(x);
  }
}

Test(ktransform, layout_between_block_sizes) {
  /* 4c -> 16c: 5 blocks of 4 make 2 of 16, the last padded; 16c -> 4c: exact */
  GPTensor *x = mk_pattern(GP_DT_I32, SHAPE(1, 5, 2, 3, 4));
  GPTensor *y = relayout(x, "NCHW4c", "NCHW16c", 1);
  expect_shape(y, GP_DT_I32, SHAPE(1, 2, 2, 3, 16));
  expect_relayout(x, "NCHW4c", "NCHW16c", y);
  GPTensor *z = relayout(y, "NCHW16c", "NCHW4c", 1);
  expect_shape(z, GP_DT_I32, SHAPE(1, 8, 2, 3, 4));
  expect_relayout(y, "NCHW16c", "NCHW4c", z);
  /* block sizes that do not divide each other: 3c -> 2c (6 channels -> 3 blocks of 2) */
  GPTensor *a = mk_iota(GP_DT_I32, SHAPE(1, 2, 1, 2, 3));
  GPTensor *b = relayout(a, "NCHW3c", "NCHW2c", 1);
  /* channel c at w: a[c / 3][w][c % 3] = (c / 3) * 6 + w * 3 + c % 3 */
  expect_ints(b, GP_DT_I32, SHAPE(1, 3, 1, 2, 2), I64S(0, 1, 3, 4, 2, 6, 5, 9, 7, 8, 10, 11));
  /* 3 channels (one block of 3) -> blocks of 2: the second block is channel 2 and padding */
  GPTensor *a1 = mk_iota(GP_DT_I32, SHAPE(1, 1, 1, 2, 3));
  expect_ints(relayout(a1, "NCHW3c", "NCHW2c", 1), GP_DT_I32, SHAPE(1, 2, 1, 2, 2), I64S(0, 1, 3, 4, 2, 0, 5, 0));
  gp_release(a1);
  /* the same block on both sides, the primal axes permuted */
  GPTensor *same = relayout(x, "NCHW4c", "NHWC4c", 1);
  expect_shape(same, GP_DT_I32, SHAPE(1, 2, 3, 5, 4));
  expect_relayout(x, "NCHW4c", "NHWC4c", same);
  gp_release(same);
  /* a blocked layout with a permutation, and a padded one onto two blocked axes */
  GPTensor *c = relayout(x, "NCHW4c", "NHWC8c", 1);
  expect_shape(c, GP_DT_I32, SHAPE(1, 2, 3, 3, 8));
  expect_relayout(x, "NCHW4c", "NHWC8c", c);
  GPTensor *p = mk_pattern(GP_DT_I8, SHAPE(3, 5, 7, 2));
  GPTensor *q = relayout(p, "NCHW", "NCHW2n4c3h", 1);
  expect_shape(q, GP_DT_I8, SHAPE(2, 2, 3, 2, 2, 4, 3));
  expect_relayout(p, "NCHW", "NCHW2n4c3h", q);
  gp_release(q);
  gp_release(p);
  gp_release(c);
  gp_release(a);
  gp_release(z);
  gp_release(y);
  gp_release(x);
}

Test(ktransform, layout_strided_input_and_threads) {
  /* a strided NCHW view (channel stride padded) to NCHW16c */
  float vals[1 * 3 * 2 * 2];
  for (int i = 0; i < 12; i++) vals[i] = (float)(i + 1);
  GPTensor *x = mk_strided(GP_DT_F32, SHAPE(1, 3, 2, 2), DIMS(40, 10, 3, 1), 4, vals);
  GPTensor *y = relayout(x, "NCHW", "NCHW16c", 1);
  float want[1 * 1 * 2 * 2 * 16] = {0};
  for (int c = 0; c < 3; c++)
    for (int hw = 0; hw < 4; hw++) want[hw * 16 + c] = vals[c * 4 + hw];
  expect_f32(y, SHAPE(1, 1, 2, 2, 16), want);
  gp_release(x);
  /* large enough for several threads */
  GPTensor *big = mk_iota(GP_DT_F32, SHAPE(2, 20, 64, 64));
  y = relayout(big, "NCHW", "NCHW16c", 4);
  expect_relayout(big, "NCHW", "NCHW16c", y);
  GPTensor *z = relayout(y, "NCHW16c", "NHWC", 4);
  expect_relayout(y, "NCHW16c", "NHWC", z);
  gp_release(z);
  gp_release(y);
  gp_release(big);
}

/* ------------------------------------------------------------------------------------------ */
/* full, zeros, ones                                                                           */

static GPTensor *full(GPTensor *fill, const KV *kv, int32_t nkv, int32_t threads) {
  return eval1t("full", 1, &fill, kv, nkv, threads);
}

Test(ktransform, full_values_and_casts) {
  float f = 2.75f;
  GPTensor *v = mk(GP_DT_F32, 0, NULL, &f);
  expect_f32(full(v, KVS(KV("shape", INTS(2, 3))), 1), SHAPE(2, 3), FLOATS(2.75f, 2.75f, 2.75f, 2.75f, 2.75f, 2.75f));
  expect_ints(full(v, KVS(KV("shape", INTS(3)), KV("dtype", gp_attr_dtype(GP_DT_I32))), 1), GP_DT_I32, SHAPE(3),
              I64S(2, 2, 2));
  expect_ints(full(v, KVS(KV("shape", INTS(2)), KV("dtype", gp_attr_dtype(GP_DT_BOOL))), 1), GP_DT_BOOL, SHAPE(2),
              I64S(1, 1));
  GPTensor *h = full(v, KVS(KV("shape", INTS(2)), KV("dtype", gp_attr_dtype(GP_DT_F16))), 1);
  expect_shape(h, GP_DT_F16, SHAPE(2));
  cr_assert_eq(((uint16_t *)h->dl.data)[1], 0x4180); /* 2.75 in float16 */
  gp_release(h);
  gp_release(v);
  f = -2.75f;
  v = mk(GP_DT_F32, 0, NULL, &f);
  expect_ints(full(v, KVS(KV("shape", INTS(2)), KV("dtype", gp_attr_dtype(GP_DT_I8))), 1), GP_DT_I8, SHAPE(2),
              I64S(-2, -2));
  gp_release(v);
  int64_t big = ((int64_t)1 << 40) + 3;
  v = mk(GP_DT_I64, 0, NULL, &big);
  expect_ints(full(v, KVS(KV("shape", INTS(1, 2))), 1), GP_DT_I64, SHAPE(1, 2), I64S(big, big));
  expect_ints(full(v, KVS(KV("shape", INTS(1)), KV("dtype", gp_attr_dtype(GP_DT_F64))), 1), GP_DT_F64, SHAPE(1),
              I64S(big));
  gp_release(v);
}

Test(ktransform, full_rank0_empty_and_every_dtype) {
  for (size_t k = 0; k < GP_ARRAY_LEN(k_all_dtypes); k++) {
    DLDataType dt = k_all_dtypes[k];
    unsigned char b[8];
    pattern_bytes(dt, 5, b);
    GPTensor *v = mk(dt, 0, NULL, b);
    GPTensor *y = full(v, KVS(KV("shape", INTS(3, 3))), 1);
    expect_shape(y, dt, SHAPE(3, 3));
    for (int64_t i = 0; i < 9; i++) expect_pattern_at(y, i, 5);
    gp_release(y);
    y = full(v, KVS(KV("shape", gp_attr_ints(0, NULL))), 1);
    expect_shape(y, dt, 0, NULL);
    expect_pattern_at(y, 0, 5);
    gp_release(y);
    y = full(v, KVS(KV("shape", INTS(0, 3))), 1);
    expect_shape(y, dt, SHAPE(0, 3));
    gp_release(y);
    gp_release(v);
  }
}

Test(ktransform, full_large_threads) {
  double d = -0.5;
  GPTensor *v = mk(GP_DT_F64, 0, NULL, &d);
  GPTensor *y = full(v, KVS(KV("shape", INTS(1024, 1027))), 4);
  const double *p = y->dl.data;
  for (int64_t i = 0; i < 1024 * 1027; i++) cr_assert_eq(p[i], -0.5);
  gp_release(y);
  gp_release(v);
}

Test(ktransform, zeros_ones_every_dtype) {
  for (size_t k = 0; k < GP_ARRAY_LEN(k_all_dtypes); k++) {
    DLDataType dt = k_all_dtypes[k];
    GPTensor *o = eval1("ones", NULL, KVS(KV("shape", INTS(2, 3)), KV("dtype", gp_attr_dtype(dt))));
    expect_ints(o, dt, SHAPE(2, 3), I64S(1, 1, 1, 1, 1, 1));
    GPTensor *z = eval1("zeros", NULL, KVS(KV("shape", INTS(5)), KV("dtype", gp_attr_dtype(dt))));
    expect_ints(z, dt, SHAPE(5), I64S(0, 0, 0, 0, 0));
  }
  GPTensor *h = eval1("ones", NULL, KVS(KV("shape", INTS(2)), KV("dtype", gp_attr_dtype(GP_DT_F16))));
  cr_assert_eq(((uint16_t *)h->dl.data)[0], 0x3c00);
  cr_assert_eq(((uint16_t *)h->dl.data)[1], 0x3c00);
  gp_release(h);
  GPTensor *s = eval1("ones", NULL, KVS(KV("shape", gp_attr_ints(0, NULL)), KV("dtype", gp_attr_dtype(GP_DT_F32))));
  expect_f32(s, 0, NULL, FLOATS(1));
}

Test(ktransform, storage_dtypes) {
  /* bfloat16 is computed through float32 (gp_eval_op): ones, and full from a bfloat16 value */
  DLDataType bf16 = GP_DT(kDLBfloat, 16);
  GPTensor *y = eval1t("ones", 0, NULL, KVS(KV("shape", INTS(2)), KV("dtype", gp_attr_dtype(bf16))), 1);
  expect_shape(y, bf16, SHAPE(2));
  cr_assert_eq(((uint16_t *)y->dl.data)[1], 0x3f80);
  gp_release(y);
  GPTensor *v = mk(bf16, 0, NULL, (const uint16_t[]){0x4040});
  y = eval1t("full", 1, &v, KVS(KV("shape", INTS(2)), KV("dtype", gp_attr_dtype(GP_DT_F32))), 1);
  cr_assert_float_eq(((float *)y->dl.data)[1], 3.0f, 0);
  gp_release(y);
  y = full(v, KVS(KV("shape", INTS(2))), 1);
  cr_assert_eq(((uint16_t *)y->dl.data)[1], 0x4040);
  gp_release(y);
  gp_release(v);
}

/* ------------------------------------------------------------------------------------------ */
/* shape_of                                                                                    */

Test(ktransform, shape_of_values) {
  GPTensor *x = mk(GP_DT_F32, SHAPE(2, 3, 4), NULL);
  expect_ints(eval1("shape_of", x, NOKV), GP_DT_I32, SHAPE(3), I64S(2, 3, 4));
  expect_ints(eval1("shape_of", x, KVS(KV("dtype", gp_attr_dtype(GP_DT_I64)))), GP_DT_I64, SHAPE(3), I64S(2, 3, 4));
  expect_ints(eval1("shape_of", x, KVS(KV("dtype", gp_attr_str("float32")))), GP_DT_F32, SHAPE(3), I64S(2, 3, 4));
  gp_release(x);
  int64_t s[2] = {0, 5};
  x = mk(GP_DT_I8, 2, s, NULL);
  expect_ints(eval1("shape_of", x, NOKV), GP_DT_I32, SHAPE(2), I64S(0, 5));
  gp_release(x);
  x = mk_strided(GP_DT_U8, SHAPE(3, 7), DIMS(1, 3), 0, (const uint8_t[21]){0});
  expect_ints(eval1("shape_of", x, KVS(KV("dtype", gp_attr_dtype(GP_DT_I16)))), GP_DT_I16, SHAPE(2), I64S(3, 7));
  gp_release(x);
  /* rank 0: TVM's relation gives a rank-0 result */
  bool b = true;
  x = mk(GP_DT_BOOL, 0, NULL, &b);
  GPTensor *y = eval1("shape_of", x, NOKV);
  expect_shape(y, GP_DT_I32, 0, NULL);
  cr_assert_eq(get_i(y, 0), 0);
  gp_release(y);
  gp_release(x);
}

static const GPType *infer_shape_of(const GPType *arg, const KV *kv, int32_t nkv) {
  const GPOp *op = gp_op_get("shape_of");
  GPAttrs *attrs = mk_attrs(op, kv, nkv);
  gp_error_clear();
  const GPType *t = gp_op_infer(op, attrs, &arg, 1);
  gp_release(attrs);
  return t;
}

Test(ktransform, shape_of_op_and_type_relation) {
  const GPOp *op = gp_op_get("shape_of");
  cr_assert(op);
  cr_expect_eq(op->pattern, GP_PATTERN_OPAQUE);
  cr_expect_eq(op->flags, 0u);
  cr_expect_eq(op->num_inputs, 1);
  cr_assert_eq(op->num_attrs, 1);
  cr_expect_str_eq(op->attrs[0].name, "dtype");
  /* TVM's ShapeOfAttrs default: unset (read as int32) */
  cr_expect_eq(op->attrs[0].kind, GP_ATTR_DTYPE);
  cr_expect_eq(op->attrs[0].default_value.dtype.bits, 0);
  int64_t two = 2, three = 3, dyn[2] = {GP_DIM_ANY, 3}, st[3] = {2, 3, 4};
  cr_expect_eq(infer_shape_of(gp_type_tensor(GP_DT_F32, 3, st), NOKV), gp_type_tensor(GP_DT_I32, 1, &three));
  cr_expect_eq(infer_shape_of(gp_type_tensor(GP_DT_F32, 2, dyn), NOKV), gp_type_tensor(GP_DT_I32, 1, &two));
  cr_expect_eq(infer_shape_of(gp_type_tensor(GP_DT_I8, 2, dyn), KVS(KV("dtype", gp_attr_dtype(GP_DT_I64)))),
               gp_type_tensor(GP_DT_I64, 1, &two));
  cr_expect_eq(infer_shape_of(gp_type_tensor(GP_DT_F32, 2, dyn), KVS(KV("dtype", gp_attr_str("int64")))),
               gp_type_tensor(GP_DT_I64, 1, &two));
  cr_expect_eq(infer_shape_of(gp_type_scalar(GP_DT_F32), NOKV), gp_type_scalar(GP_DT_I32));
  cr_expect_eq(infer_shape_of(gp_type_tensor(GP_DT_F32, 3, st), KVS(KV("dtype", gp_attr_str("")))),
               gp_type_tensor(GP_DT_I32, 1, &three));
  const GPType *fields[2] = {gp_type_scalar(GP_DT_F32), gp_type_scalar(GP_DT_F32)};
  cr_expect_null(infer_shape_of(gp_type_tuple(2, fields), NOKV));
  cr_expect_eq(gp_error_kind(), GP_ERR_TYPE, "%s", gp_error_message());
  cr_expect(strstr(gp_error_message(), "data"), "%s", gp_error_message());
  gp_error_clear();
}

/* ------------------------------------------------------------------------------------------ */
/* Through gp_eval_call (FoldConstant's entry): tuple argument and tuple result                 */

Test(ktransform, eval_call_concatenate_and_split) {
  GPTensor *a = mkf(SHAPE(1, 2), FLOATS(1, 2)), *b = mkf(SHAPE(1, 2), FLOATS(3, 4));
  GPExpr *ca = (GPExpr *)gp_constant_new(a), *cb = (GPExpr *)gp_constant_new(b);
  GPExpr *fields[2] = {ca, cb};
  GPExpr *tup = (GPExpr *)gp_tuple_new(2, fields);
  const GPOp *op = gp_op_get("concatenate");
  GPAttrs *attrs = mk_attrs(op, KVS(KV("axis", gp_attr_int(-1))));
  GPCall *call = gp_call_new((GPExpr *)op, 1, &tup, attrs);
  GPExpr *r = gp_eval_call(call);
  cr_assert(r, "%s", gp_error_message());
  cr_assert_eq(gp_kind(r), GP_TI_CONSTANT);
  GPTensor *t = gp_retain(GP_AS(GPConstant, r)->data);
  expect_f32(t, SHAPE(1, 4), FLOATS(1, 2, 3, 4));
  /* split the result back: a tuple of constants */
  GPAttrs *sattrs = mk_attrs(gp_op_get("split"), KVS(KV("indices_or_sections", INTS(1, 3)), KV("axis", gp_attr_int(1))));
  GPCall *scall = gp_call_new((GPExpr *)gp_op_get("split"), 1, &r, sattrs);
  GPExpr *sr = gp_eval_call(scall);
  cr_assert(sr, "%s", gp_error_message());
  cr_assert_eq(gp_kind(sr), GP_TI_TUPLE);
  GPTuple *st = GP_AS(GPTuple, sr);
  cr_assert_eq(st->n, 3);
  expect_f32(gp_retain(GP_AS(GPConstant, st->fields[0])->data), SHAPE(1, 1), FLOATS(1));
  expect_f32(gp_retain(GP_AS(GPConstant, st->fields[1])->data), SHAPE(1, 2), FLOATS(2, 3));
  expect_f32(gp_retain(GP_AS(GPConstant, st->fields[2])->data), SHAPE(1, 1), FLOATS(4));
  cr_assert(sr->checked_type && sr->checked_type->kind == GP_TYPE_TUPLE);
  gp_release(sr);
  gp_release(scall);
  gp_release(sattrs);
  gp_release(r);
  gp_release(call);
  gp_release(attrs);
  gp_release(tup);
  gp_release(ca);
  gp_release(cb);
  gp_release(a);
  gp_release(b);
}

Test(ktransform, reshape_large_strided_threads) {
  /* a (512, 1000) view with strides (2048, 2): every other element of a wider buffer */
  int64_t n = 512 * 1000;
  int32_t *vals = malloc((size_t)n * 4);
  for (int64_t i = 0; i < n; i++) vals[i] = (int32_t)(i * 3 + 1);
  GPTensor *x = mk_strided(GP_DT_I32, SHAPE(512, 1000), DIMS(2048, 2), 0, vals);
  GPTensor *y = eval1t("reshape", 1, &x, KVS(KV("newshape", INTS(1000, -1))), 4);
  expect_shape(y, GP_DT_I32, SHAPE(1000, 512));
  cr_assert(memcmp(y->dl.data, vals, (size_t)n * 4) == 0);
  gp_release(y);
  /* a contiguous large reshape */
  GPTensor *c = mk_iota(GP_DT_I32, SHAPE(1000, 1000));
  y = eval1t("reshape", 1, &c, KVS(KV("newshape", INTS(-1))), 4);
  for (int64_t i = 0; i < 1000000; i++) cr_assert_eq(((int32_t *)y->dl.data)[i], i);
  gp_release(y);
  gp_release(c);
  gp_release(x);
  free(vals);
}

Test(ktransform, shape_of_text_round_trip) {
  /* as TVM prints it: the dtype is always written (its C++ default is unset) */
  const char *text = "#[version = \"0.0.5\"]\n"
                     "def @main(%x: Tensor[(?, 3), float32]) -> Tensor[(2), int32] {\n"
                     "  shape_of(%x, dtype=\"int32\")\n"
                     "}\n";
  GPModule *m = gp_parse(text, strlen(text), "shape_of.relay");
  cr_assert(m, "%s", gp_error_message());
  GPModule *t = gp_infer_types(m);
  cr_assert(t, "%s", gp_error_message());
  char *s = gp_print(t, 0);
  cr_expect_str_eq(s, text);
  GPFunctionExpr *f = gp_module_lookup(t, "main");
  int64_t two = 2;
  cr_expect_eq(f->body->checked_type, gp_type_tensor(GP_DT_I32, 1, &two));
  gp_free(s);
  gp_release(t);
  gp_release(m);
}

/* ------------------------------------------------------------------------------------------ */
/* tile, broadcast_to, nn.pad, depth_to_space / space_to_depth, stack, reverse_sequence        */

Test(ktransform, tile_reps_and_rank_extension) {
  GPTensor *x = mkf(SHAPE(2, 2), FLOATS(1, 2, 3, 4));
  expect_f32(eval1("tile", x, KVS(KV("reps", INTS(1, 2)))), SHAPE(2, 4), FLOATS(1, 2, 1, 2, 3, 4, 3, 4));
  expect_f32(eval1("tile", x, KVS(KV("reps", INTS(2, 1, 1)))), SHAPE(2, 2, 2), FLOATS(1, 2, 3, 4, 1, 2, 3, 4));
  expect_f32(eval1("tile", x, KVS(KV("reps", INTS(2)))), SHAPE(2, 4), FLOATS(1, 2, 1, 2, 3, 4, 3, 4));
  GPTensor *y = eval1("tile", x, KVS(KV("reps", INTS(0, 3))));
  expect_shape(y, GP_DT_F32, SHAPE(0, 6));
  gp_release(y);
  gp_release(x);
  GPTensor *xs = mk_strided(GP_DT_F32, SHAPE(2, 2), DIMS(1, 2), 0, FLOATS(1, 2, 3, 4));
  expect_f32(eval1("tile", xs, KVS(KV("reps", INTS(2, 1)))), SHAPE(4, 2), FLOATS(1, 2, 3, 4, 1, 2, 3, 4));
  gp_release(xs);
}

Test(ktransform, repeat_values_and_strided_input) {
  GPTensor *x = mkf(SHAPE(2, 2), FLOATS(1, 2, 3, 4));
  expect_f32(eval1("repeat", x, KVS(KV("repeats", gp_attr_int(2)), KV("axis", gp_attr_int(1)))), SHAPE(2, 4),
             FLOATS(1, 1, 2, 2, 3, 3, 4, 4));
  expect_f32(eval1("repeat", x, KVS(KV("repeats", gp_attr_int(3)), KV("axis", gp_attr_int(-2)))), SHAPE(6, 2),
             FLOATS(1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4));
  gp_release(x);
  GPTensor *xs = mk_strided(GP_DT_F32, SHAPE(2, 2), DIMS(1, 2), 0, FLOATS(1, 2, 3, 4));
  expect_f32(eval1("repeat", xs, KVS(KV("repeats", gp_attr_int(2)), KV("axis", gp_attr_int(0)))), SHAPE(4, 2),
             FLOATS(1, 2, 1, 2, 3, 4, 3, 4));
  gp_release(xs);
}

Test(ktransform, broadcast_to_values) {
  GPTensor *x = mkf(SHAPE(2, 1), FLOATS(1, 2));
  expect_f32(eval1("broadcast_to", x, KVS(KV("shape", INTS(2, 2, 3)))), SHAPE(2, 2, 3),
             FLOATS(1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2));
  GPTensor *s = mkf(0, NULL, FLOATS(7));
  expect_f32(eval1("broadcast_to", s, KVS(KV("shape", INTS(3)))), SHAPE(3), FLOATS(7, 7, 7));
  GPTensor *ins[1] = {x};
  eval_err("broadcast_to", 1, ins, KVS(KV("shape", INTS(3, 3))), GP_ERR_TYPE, "cannot broadcast");
  gp_release(x), gp_release(s);
}

static GPTensor *eval_pad(GPTensor *x, float v, const KV *kv, int32_t nkv) {
  GPTensor *pv = mkf(0, NULL, &v);
  GPTensor *ins[2] = {x, pv};
  GPTensor *y = eval1t("nn.pad", 2, ins, kv, nkv, 1);
  gp_release(pv);
  return y;
}

Test(ktransform, pad_modes) {
  GPTensor *x = mkf(SHAPE(3), FLOATS(1, 2, 3));
  expect_f32(eval_pad(x, 9, KVS(KV("pad_width", INTS(2, 1)))), SHAPE(6), FLOATS(9, 9, 1, 2, 3, 9));
  expect_f32(eval_pad(x, 9, KVS(KV("pad_width", INTS(2, 1)), KV("pad_mode", gp_attr_str("edge")))), SHAPE(6),
             FLOATS(1, 1, 1, 2, 3, 3));
  expect_f32(eval_pad(x, 9, KVS(KV("pad_width", INTS(2, 2)), KV("pad_mode", gp_attr_str("reflect")))), SHAPE(7),
             FLOATS(3, 2, 1, 2, 3, 2, 1));
  expect_f32(eval_pad(x, 9, KVS(KV("pad_width", INTS(2, 1)), KV("pad_mode", gp_attr_str("wrap")))), SHAPE(6),
             FLOATS(2, 3, 1, 2, 3, 1));
  /* negative widths crop */
  expect_f32(eval_pad(x, 9, KVS(KV("pad_width", INTS(-1, 1)))), SHAPE(3), FLOATS(2, 3, 9));
  gp_release(x);
  GPTensor *m = mkf(SHAPE(2, 2), FLOATS(1, 2, 3, 4));
  expect_f32(eval_pad(m, 0, KVS(KV("pad_width", INTS(1, 0, 0, 1)))), SHAPE(3, 3), FLOATS(0, 0, 0, 1, 2, 0, 3, 4, 0));
  expect_f32(eval_pad(m, 0, KVS(KV("pad_width", INTS(1, 0, 0, 1)), KV("pad_mode", gp_attr_str("edge")))), SHAPE(3, 3),
             FLOATS(1, 2, 2, 1, 2, 2, 3, 4, 4));
  gp_release(m);
}

Test(ktransform, depth_space_round_trip) {
  /* (1, 4, 1, 1) DCR -> (1, 1, 2, 2): channel (i*2 + j) */
  GPTensor *x = mkf(SHAPE(1, 4, 1, 1), FLOATS(0, 1, 2, 3));
  expect_f32(eval1("nn.depth_to_space", x, KVS(KV("block_size", gp_attr_int(2)))), SHAPE(1, 1, 2, 2),
             FLOATS(0, 1, 2, 3));
  gp_release(x);
  /* (1, 8, 1, 1): DCR channel (i*2+j)*2 + c; CRD c*4 + i*2 + j */
  float v8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  x = mkf(SHAPE(1, 8, 1, 1), v8);
  expect_f32(eval1("nn.depth_to_space", x, KVS(KV("block_size", gp_attr_int(2)))), SHAPE(1, 2, 2, 2),
             FLOATS(0, 2, 4, 6, 1, 3, 5, 7));
  expect_f32(eval1("nn.depth_to_space", x, KVS(KV("block_size", gp_attr_int(2)), KV("mode", gp_attr_str("CRD")))),
             SHAPE(1, 2, 2, 2), FLOATS(0, 1, 2, 3, 4, 5, 6, 7));
  GPTensor *y = eval1("nn.depth_to_space", x, KVS(KV("block_size", gp_attr_int(2))));
  expect_f32(eval1("nn.space_to_depth", y, KVS(KV("block_size", gp_attr_int(2)))), SHAPE(1, 8, 1, 1), v8);
  gp_release(y), gp_release(x);
}

/* nn.space_to_batch_nd / nn.batch_to_space_nd: output batch (r * N) + n, r the block offset
 * (row-major over the spatial dims); values worked out by hand from TVM's topi definition. */
Test(ktransform, space_to_batch_nd_values) {
  /* TVM's doc example: (1, 2, 2, 1), block (2, 2) -> (4, 1, 1, 1) [1, 2, 3, 4], and back */
  GPTensor *x = mkf(SHAPE(1, 2, 2, 1), FLOATS(1, 2, 3, 4));
  GPTensor *y = eval1("nn.space_to_batch_nd", x, KVS(KV("block_shape", INTS(2, 2)), KV("paddings", INTS(0, 0, 0, 0))));
  expect_f32(eval1("nn.batch_to_space_nd", y, KVS(KV("block_shape", INTS(2, 2)), KV("crops", INTS(0, 0, 0, 0)))),
             SHAPE(1, 2, 2, 1), FLOATS(1, 2, 3, 4));
  expect_f32(y, SHAPE(4, 1, 1, 1), FLOATS(1, 2, 3, 4));
  gp_release(x);
  /* one spatial dim, N = 2: rows a = [1, 2, 3], b = [4, 5, 6] padded before by 1 with 9 are
   * [9, 1, 2, 3] and [9, 4, 5, 6]; batch (r, n): (0, a) [9, 2], (0, b) [9, 5], (1, a) [1, 3],
   * (1, b) [4, 6] */
  x = mkf(SHAPE(2, 3, 1), FLOATS(1, 2, 3, 4, 5, 6));
  y = eval1("nn.space_to_batch_nd", x,
            KVS(KV("block_shape", INTS(2)), KV("paddings", INTS(1, 0)), KV("pad_value", gp_attr_float(9))));
  expect_f32(eval1("nn.batch_to_space_nd", y, KVS(KV("block_shape", INTS(2)), KV("crops", INTS(1, 0)))),
             SHAPE(2, 3, 1), FLOATS(1, 2, 3, 4, 5, 6));
  expect_f32(y, SHAPE(4, 2, 1), FLOATS(9, 2, 9, 5, 1, 3, 4, 6));
  gp_release(x);
  /* (1, 2, 2, 2) = 0..7 (h, w, c), W padded by 1 on both sides with -1: row h0 is
   * [P, (0, 1), (2, 3), P], row h1 [P, (4, 5), (6, 7), P]; batch (r1, r2) takes row r1 and
   * columns r2, r2 + 2 */
  x = mkf(SHAPE(1, 2, 2, 2), FLOATS(0, 1, 2, 3, 4, 5, 6, 7));
  y = eval1("nn.space_to_batch_nd", x,
            KVS(KV("block_shape", INTS(2, 2)), KV("paddings", INTS(0, 0, 1, 1)), KV("pad_value", gp_attr_float(-1))));
  expect_f32(eval1("nn.batch_to_space_nd", y, KVS(KV("block_shape", INTS(2, 2)), KV("crops", INTS(0, 0, 1, 1)))),
             SHAPE(1, 2, 2, 2), FLOATS(0, 1, 2, 3, 4, 5, 6, 7));
  /* crops that keep the padding: (1, 2, 4, 2), the padded input */
  expect_f32(eval1("nn.batch_to_space_nd", y, KVS(KV("block_shape", INTS(2, 2)), KV("crops", INTS(0, 0, 0, 0)))),
             SHAPE(1, 2, 4, 2), FLOATS(-1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7, -1, -1));
  expect_f32(y, SHAPE(4, 1, 2, 2), FLOATS(-1, -1, 2, 3, 0, 1, -1, -1, -1, -1, 6, 7, 4, 5, -1, -1));
  gp_release(x);
}

Test(ktransform, space_to_batch_nd_int_strided) {
  /* int8 with pad_value -3 (no channel dim: rows of one element) */
  GPTensor *x = mk_iota(GP_DT_I8, SHAPE(1, 2, 2));
  GPTensor *y = eval1("nn.space_to_batch_nd", x,
                      KVS(KV("block_shape", INTS(2, 2)), KV("paddings", INTS(0, 2, 1, 1)), KV("pad_value", gp_attr_float(-3))));
  /* padded (4, 4): [-3 0 1 -3 / -3 2 3 -3 / -3 ... ]; batch (r1, r2) = rows r1, r1 + 2, columns r2, r2 + 2 */
  expect_ints(y, GP_DT_I8, SHAPE(4, 2, 2), I64S(-3, 1, -3, -3, 0, -3, -3, -3, -3, 3, -3, -3, 2, -3, -3, -3));
  gp_release(x);
  /* a strided (2, 3) input (row stride 5, column stride 2), block (3), crops nothing */
  x = mk_strided(GP_DT_F32, SHAPE(3, 2), DIMS(5, 2), 12, FLOATS(10, 11, 12, 13, 14, 15));
  expect_f32(eval1("nn.batch_to_space_nd", x, KVS(KV("block_shape", INTS(3)), KV("crops", INTS(0, 1)))), SHAPE(1, 5),
             FLOATS(10, 12, 14, 11, 13));
  gp_release(x);
}

Test(ktransform, stack_axes) {
  GPTensor *a = mkf(SHAPE(2), FLOATS(1, 2)), *b = mkf(SHAPE(2), FLOATS(3, 4));
  GPTensor *ins[2] = {a, b}, *out[1];
  cr_assert_eq(eval_n("stack", 2, ins, true, NOKV, 1, out, 1), 1, "%s", gp_error_message());
  expect_f32(out[0], SHAPE(2, 2), FLOATS(1, 2, 3, 4));
  cr_assert_eq(eval_n("stack", 2, ins, true, KVS(KV("axis", gp_attr_int(-1))), 1, out, 1), 1, "%s", gp_error_message());
  expect_f32(out[0], SHAPE(2, 2), FLOATS(1, 3, 2, 4));
  gp_release(a), gp_release(b);
}

Test(ktransform, reverse_sequence_values_and_errors) {
  GPTensor *x = mkf(SHAPE(2, 3), FLOATS(0, 1, 2, 3, 4, 5));
  GPTensor *l = mk(GP_DT_I64, SHAPE(2), I64S(2, 3));
  GPTensor *ins[2] = {x, l};
  expect_f32(eval1t("reverse_sequence", 2, ins, NOKV, 1), SHAPE(2, 3), FLOATS(1, 0, 2, 5, 4, 3));
  gp_release(l);
  l = mk(GP_DT_I64, SHAPE(3), I64S(1, 2, 0));
  ins[1] = l;
  expect_f32(eval1t("reverse_sequence", 2, ins, KVS(KV("seq_axis", gp_attr_int(0)), KV("batch_axis", gp_attr_int(1))), 1),
             SHAPE(2, 3), FLOATS(0, 4, 2, 3, 1, 5));
  gp_release(l);
  l = mk(GP_DT_I64, SHAPE(2), I64S(4, 1));
  ins[1] = l;
  eval_err("reverse_sequence", 2, ins, NOKV, GP_ERR_VALUE, "seq_lengths[0] = 4 is out of range [0, 3]");
  gp_release(l), gp_release(x);
}

/* ------------------------------------------------------------------------------------------ */
/* The *_like ops, collapse_sum_to, contrib_reverse_reshape (SimplifyExpr's inputs)            */

Test(ktransform, zeros_ones_full_like) {
  GPTensor *x = mkf(SHAPE(2, 2), FLOATS(5, 6, 7, 8));
  expect_f32(eval1("zeros_like", x, NOKV), SHAPE(2, 2), FLOATS(0, 0, 0, 0));
  expect_f32(eval1("ones_like", x, NOKV), SHAPE(2, 2), FLOATS(1, 1, 1, 1));
  GPTensor *i = mk_iota(GP_DT_I32, SHAPE(3));
  expect_ints(eval1("ones_like", i, NOKV), GP_DT_I32, SHAPE(3), I64S(1, 1, 1));
  int64_t none[1] = {0};
  GPTensor *fill = mkf(0, none, FLOATS(2.5f));
  GPTensor *ins[2] = {x, fill};
  expect_f32(eval1t("full_like", 2, ins, NOKV, 1), SHAPE(2, 2), FLOATS(2.5f, 2.5f, 2.5f, 2.5f));
  ins[0] = i; /* data's dtype: the fill value is converted (truncated) */
  expect_ints(eval1t("full_like", 2, ins, NOKV, 1), GP_DT_I32, SHAPE(3), I64S(2, 2, 2));
  gp_release(x), gp_release(i), gp_release(fill);
}

Test(ktransform, cast_like) {
  GPTensor *x = mkf(SHAPE(3), FLOATS(1.5f, -2.75f, 3));
  GPTensor *like = mk_iota(GP_DT_I64, SHAPE(2, 2));
  GPTensor *ins[2] = {x, like};
  expect_ints(eval1t("cast_like", 2, ins, NOKV, 1), GP_DT_I64, SHAPE(3), I64S(1, -2, 3));
  gp_release(x), gp_release(like);
}

Test(ktransform, reshape_like_and_reverse_reshape) {
  GPTensor *x = mk_iota(GP_DT_F32, SHAPE(2, 3, 4));
  GPTensor *like = mkf(SHAPE(6, 2, 2), NULL);
  GPTensor *ins[2] = {x, like};
  GPTensor *y = eval1t("reshape_like", 2, ins, NOKV, 1);
  expect_shape(y, GP_DT_F32, SHAPE(6, 2, 2));
  for (int i = 0; i < 24; i++) cr_assert_eq(((float *)y->dl.data)[i], (float)i);
  gp_release(y);
  /* lhs_begin=2, rhs_begin=1: (2, 3) + (2, 2) */
  y = eval1t("reshape_like", 2, ins, KVS(KV("lhs_begin", gp_attr_int(2)), KV("rhs_begin", gp_attr_int(1))), 1);
  expect_shape(y, GP_DT_F32, SHAPE(2, 3, 2, 2));
  gp_release(y);
  /* (10, 5, 4) by (-1, 0): reshape gives (40, 5), reverse_reshape (50, 4) (0 copies the last dim) */
  GPTensor *z = mk_iota(GP_DT_F32, SHAPE(10, 5, 4));
  y = eval1("contrib_reverse_reshape", z, KVS(KV("newshape", INTS(-1, 0))));
  expect_shape(y, GP_DT_F32, SHAPE(50, 4));
  for (int i = 0; i < 200; i++) cr_assert_eq(((float *)y->dl.data)[i], (float)i);
  gp_release(y);
  y = eval1("reshape", z, KVS(KV("newshape", INTS(-1, 0))));
  expect_shape(y, GP_DT_F32, SHAPE(40, 5));
  gp_release(y);
  gp_release(x), gp_release(like), gp_release(z);
}

Test(ktransform, broadcast_to_like) {
  GPTensor *x = mkf(SHAPE(3), FLOATS(1, 2, 3));
  GPTensor *like = mkf(SHAPE(2, 3), NULL);
  GPTensor *ins[2] = {x, like};
  expect_f32(eval1t("broadcast_to_like", 2, ins, NOKV, 1), SHAPE(2, 3), FLOATS(1, 2, 3, 1, 2, 3));
  gp_release(x), gp_release(like);
}

Test(ktransform, collapse_sum_like_and_to) {
  GPTensor *x = mk_iota(GP_DT_F32, SHAPE(2, 3));
  GPTensor *like = mkf(SHAPE(3), NULL);
  GPTensor *ins[2] = {x, like};
  expect_f32(eval1t("collapse_sum_like", 2, ins, NOKV, 1), SHAPE(3), FLOATS(3, 5, 7));
  GPTensor *col = mkf(SHAPE(2, 1), NULL);
  ins[1] = col;
  expect_f32(eval1t("collapse_sum_like", 2, ins, NOKV, 1), SHAPE(2, 1), FLOATS(3, 12));
  int32_t sv[1] = {3};
  GPTensor *shape = mk(GP_DT_I32, SHAPE(1), sv);
  ins[1] = shape;
  expect_f32(eval1t("collapse_sum_to", 2, ins, KVS(KV("shape", INTS(3))), 1), SHAPE(3), FLOATS(3, 5, 7));
  GPTensor *xi = mk_iota(GP_DT_I32, SHAPE(2, 2, 3));
  ins[0] = xi;
  expect_ints(eval1t("collapse_sum_to", 2, ins, KVS(KV("shape", INTS(3))), 1), GP_DT_I32, SHAPE(3), I64S(18, 22, 26));
  /* the result must broadcast back to data */
  GPTensor *bad = mkf(SHAPE(4), NULL);
  ins[0] = x, ins[1] = bad;
  eval_err("collapse_sum_like", 2, ins, NOKV, GP_ERR_TYPE, "do not broadcast");
  gp_release(x), gp_release(like), gp_release(col), gp_release(shape), gp_release(xi), gp_release(bad);
}
