/* test_kernels_sort.c -- the kernels of topk, argsort, sort, cumsum, cumprod and reverse
 * (eval/k_sort.c) and their type relations: evaluated through gp_eval_op on constants, compared
 * with hand-computed values. */
#include "eval/eval.h"
#include "eval/kernel.h"
#include "ir/ir.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int32_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define SHAPE(...) NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__)
#define FLOATS(...) ((const float[]){__VA_ARGS__})
#define I64S(...) ((const int64_t[]){__VA_ARGS__})
#define INTS(...) gp_attr_ints(NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

typedef struct KV {
  const char *key;
  GPAttrValue value;
} KV;
#define KV(k, v) ((KV){(k), (v)})
#define KVS(...) ((const KV[]){__VA_ARGS__}), ((int32_t)(sizeof((const KV[]){__VA_ARGS__}) / sizeof(KV)))
#define NOKV NULL, 0

static const DLDataType k_all_dtypes[] = {GP_DT_BOOL, GP_DT_U8,  GP_DT_I8,  GP_DT_I16, GP_DT_I32,
                                          GP_DT_I64,  GP_DT_F16, GP_DT_F32, GP_DT_F64};

static size_t esize(DLDataType dt) { return gp_dtype_bytes(dt); }

static int64_t count(int32_t nd, const int64_t *shape) {
  int64_t n = 1;
  for (int32_t i = 0; i < nd; i++) n *= shape[i];
  return n;
}

/* A compact tensor of nd/shape whose elements are copied from `data` (numel * esize bytes). */
static GPTensor *mk(DLDataType dt, int32_t nd, const int64_t *shape, const void *data) {
  GPTensor *t = gp_tensor_alloc(dt, nd, shape, true);
  cr_assert(t, "tensor_alloc: %s", gp_error_message());
  size_t n = (size_t)count(nd, shape) * esize(dt);
  if (n && data) memcpy(t->dl.data, data, n);
  return t;
}

static GPTensor *mkf(int32_t nd, const int64_t *shape, const float *v) { return mk(GP_DT_F32, nd, shape, v); }

/* Store integer v into element i of a compact buffer of dtype dt (floats: the value). */
static void put(void *base, DLDataType dt, int64_t i, int64_t v) {
  char *p = (char *)base + (size_t)i * esize(dt);
  if (dt.code == kDLFloat) {
    if (dt.bits == 32) {
      float f = (float)v;
      memcpy(p, &f, 4);
    } else if (dt.bits == 64) {
      double d = (double)v;
      memcpy(p, &d, 8);
    } else { /* float16 of a small integer (|v| < 2048): exact */
      uint16_t h = 0;
      if (v) {
        int64_t a = v < 0 ? -v : v;
        int e = 0;
        while ((a >> e) > 1) e++;
        uint16_t mant = (uint16_t)(((a << 10) >> e) & 0x3ff);
        h = (uint16_t)((v < 0 ? 0x8000 : 0) | (uint16_t)((e + 15) << 10) | mant);
      }
      memcpy(p, &h, 2);
    }
    return;
  }
  switch (esize(dt)) {
  case 1: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
  case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
  case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
  default: { uint64_t x = (uint64_t)v; memcpy(p, &x, 8); break; }
  }
}

/* A compact tensor with element i = i (as the dtype's value). */
static GPTensor *mk_iota(DLDataType dt, int32_t nd, const int64_t *shape) {
  GPTensor *t = mk(dt, nd, shape, NULL);
  int64_t n = count(nd, shape);
  for (int64_t i = 0; i < n; i++) put(t->dl.data, dt, i, i);
  return t;
}

/* A strided (non-compact) tensor over its own exactly sized buffer: strides in elements,
 * byte_offset in bytes; logical element i (row-major) holds the bytes of vals[i]; the gaps hold
 * 0x5a so that a read of a gap shows. */
typedef struct {
  DLManagedTensor m;
  int64_t shape[8], strides[8];
} Strided;

static void strided_deleter(DLManagedTensor *m) {
  free(m->dl_tensor.data);
  free(m->manager_ctx);
}

static GPTensor *mk_strided(DLDataType dt, int32_t nd, const int64_t *shape, const int64_t *strides,
                            uint64_t byte_offset, const void *vals) {
  cr_assert(nd <= 8);
  Strided *s = calloc(1, sizeof *s);
  int64_t maxoff = 0, n = count(nd, shape);
  for (int32_t i = 0; i < nd; i++) {
    s->shape[i] = shape[i];
    s->strides[i] = strides[i];
    maxoff += (shape[i] - 1) * strides[i];
  }
  size_t e = esize(dt), bytes = byte_offset + (size_t)(n ? maxoff + 1 : 0) * e;
  char *buf = malloc(bytes ? bytes : 1);
  memset(buf, 0x5a, bytes ? bytes : 1);
  int64_t idx[8] = {0};
  for (int64_t f = 0; f < n; f++) {
    int64_t off = 0;
    for (int32_t i = 0; i < nd; i++) off += idx[i] * strides[i];
    memcpy(buf + byte_offset + (size_t)off * e, (const char *)vals + (size_t)f * e, e);
    for (int32_t i = nd - 1; i >= 0; i--) {
      if (++idx[i] < shape[i]) break;
      idx[i] = 0;
    }
  }
  s->m.dl_tensor = (DLTensor){.data = buf,
                              .device = {kDLCPU, 0},
                              .ndim = nd,
                              .dtype = dt,
                              .shape = s->shape,
                              .strides = s->strides,
                              .byte_offset = byte_offset};
  s->m.manager_ctx = s;
  s->m.deleter = strided_deleter;
  GPTensor *t = gp_tensor_from_dlpack(&s->m);
  cr_assert(t, "from_dlpack: %s", gp_error_message());
  cr_assert(!gp_tensor_is_compact(t), "the test tensor should be strided");
  return t;
}

static GPAttrs *mk_attrs(const GPOp *op, const KV *kv, int32_t nkv) {
  const char *keys[16];
  GPAttrValue vals[16];
  cr_assert(nkv <= 16);
  for (int32_t i = 0; i < nkv; i++) keys[i] = kv[i].key, vals[i] = kv[i].value;
  gp_error_clear();
  GPAttrs *a = gp_op_attrs_new(op, nkv, keys, vals);
  cr_assert(a || gp_error_kind() == GP_OK, "attrs: %s", gp_error_message());
  return a;
}

/* Evaluate op on inputs with gp_eval_op and `threads` threads; tuple_arg: the inputs are the
 * fields of one tuple argument (concatenate).  Returns -1 (error pending) or the number of
 * outputs (new references in outs). */
static int eval_n(const char *name, int32_t nin, GPTensor *const *ins, bool tuple_arg, const KV *kv,
                  int32_t nkv, int32_t threads, GPTensor **outs, int32_t max_out) {
  const GPOp *op = gp_op_get(name);
  cr_assert(op, "no op %s", name);
  GPAttrs *attrs = mk_attrs(op, kv, nkv);
  const GPType *types[16];
  cr_assert(nin <= 16);
  int32_t nargs = nin;
  if (tuple_arg) {
    const GPType *fs[16];
    for (int32_t i = 0; i < nin; i++) fs[i] = gp_tensor_type(ins[i]);
    types[0] = gp_type_tuple(nin, fs);
    nargs = 1;
  } else {
    for (int32_t i = 0; i < nin; i++) types[i] = gp_tensor_type(ins[i]);
  }
  const GPType *out_type = NULL;
  int32_t nout = 0;
  gp_error_clear();
  int rc = gp_eval_op(op, attrs, nargs, types, nin, ins, threads, &out_type, outs, max_out, &nout);
  gp_release(attrs);
  return rc != 0 ? -1 : nout;
}

/* The single result of op (test fails on error). */
static GPTensor *eval1t(const char *name, int32_t nin, GPTensor *const *ins, const KV *kv, int32_t nkv,
                        int32_t threads) {
  GPTensor *out[1];
  int n = eval_n(name, nin, ins, false, kv, nkv, threads, out, 1);
  cr_assert_eq(n, 1, "%s: %s", name, gp_error_message());
  return out[0];
}

static GPTensor *eval1(const char *name, GPTensor *in, const KV *kv, int32_t nkv) {
  return eval1t(name, in ? 1 : 0, &in, kv, nkv, 1);
}

/* Expect op to fail with `kind` and a message containing needle. */
static void eval_err(const char *name, int32_t nin, GPTensor *const *ins, const KV *kv, int32_t nkv,
                     int32_t kind, const char *needle) {
  GPTensor *out[4];
  int n = eval_n(name, nin, ins, false, kv, nkv, 1, out, 4);
  cr_assert_eq(n, -1, "%s: expected an error containing \"%s\"", name, needle);
  cr_assert_eq(gp_error_kind(), kind, "%s: error kind %d (%s), want %d", name, gp_error_kind(),
               gp_error_message(), kind);
  cr_assert(strstr(gp_error_message(), needle), "%s: \"%s\" lacks \"%s\"", name, gp_error_message(), needle);
  gp_error_clear();
}

static void expect_shape(const GPTensor *t, DLDataType dt, int32_t nd, const int64_t *shape) {
  char a[24], b[24];
  cr_assert(gp_dtype_eq(t->dl.dtype, dt), "dtype %s, want %s", gp_dtype_str(t->dl.dtype, a), gp_dtype_str(dt, b));
  cr_assert_eq(t->dl.ndim, nd, "rank %d, want %d", t->dl.ndim, nd);
  for (int32_t i = 0; i < nd; i++)
    cr_assert_eq(t->dl.shape[i], shape[i], "dim %d is %lld, want %lld", i, (long long)t->dl.shape[i],
                 (long long)shape[i]);
}

static void expect_f32(GPTensor *t, int32_t nd, const int64_t *shape, const float *want) {
  expect_shape(t, GP_DT_F32, nd, shape);
  const float *got = t->dl.data;
  for (int64_t i = 0, n = count(nd, shape); i < n; i++)
    cr_assert_eq(got[i], want[i], "element %lld is %g, want %g", (long long)i, got[i], want[i]);
  gp_release(t);
}

/* Element i of a compact tensor as int64 (floats truncated; float16 decoded for small ints). */
static int64_t get_i(const GPTensor *t, int64_t i) {
  DLDataType dt = t->dl.dtype;
  const char *p = (const char *)t->dl.data + (size_t)i * esize(dt);
  if (dt.code == kDLFloat) {
    if (dt.bits == 32) {
      float f;
      memcpy(&f, p, 4);
      return (int64_t)f;
    }
    if (dt.bits == 64) {
      double d;
      memcpy(&d, p, 8);
      return (int64_t)d;
    }
    uint16_t h;
    memcpy(&h, p, 2);
    int e = (h >> 10) & 0x1f;
    int64_t m = h & 0x3ff;
    int64_t v = e == 0 ? 0 : ((m | 0x400) << e) >> 25; /* integers only */
    return h & 0x8000 ? -v : v;
  }
  bool sgn = dt.code == kDLInt;
  switch (esize(dt)) {
  case 1: { uint8_t x; memcpy(&x, p, 1); return sgn ? (int64_t)(int8_t)x : (int64_t)x; }
  case 2: { uint16_t x; memcpy(&x, p, 2); return sgn ? (int64_t)(int16_t)x : (int64_t)x; }
  case 4: { uint32_t x; memcpy(&x, p, 4); return sgn ? (int64_t)(int32_t)x : (int64_t)x; }
  default: { int64_t x; memcpy(&x, p, 8); return x; }
  }
}

static void expect_ints(GPTensor *t, DLDataType dt, int32_t nd, const int64_t *shape, const int64_t *want) {
  expect_shape(t, dt, nd, shape);
  for (int64_t i = 0, n = count(nd, shape); i < n; i++)
    cr_assert_eq(get_i(t, i), want[i], "element %lld is %lld, want %lld", (long long)i, (long long)get_i(t, i),
                 (long long)want[i]);
  gp_release(t);
}

/* Element i of a compact float tensor (float16/32/64) as double. */
static double get_f(const GPTensor *t, int64_t i) {
  DLDataType dt = t->dl.dtype;
  const char *p = (const char *)t->dl.data + (size_t)i * esize(dt);
  if (dt.bits == 32) {
    float f;
    memcpy(&f, p, 4);
    return f;
  }
  if (dt.bits == 64) {
    double d;
    memcpy(&d, p, 8);
    return d;
  }
  uint16_t x;
  memcpy(&x, p, 2);
  return gp_f16_to_f32(x);
}

/* Float results, NaN equal to NaN; releases t. */
static void expect_fv(GPTensor *t, DLDataType dt, int32_t nd, const int64_t *shape, const double *want) {
  expect_shape(t, dt, nd, shape);
  for (int64_t i = 0, n = count(nd, shape); i < n; i++) {
    double g = get_f(t, i);
    bool ok = isnan(want[i]) ? isnan(g) : g == want[i];
    cr_assert(ok, "element %lld is %g, want %g", (long long)i, g, want[i]);
  }
  gp_release(t);
}
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
