/* test_kernels_reduce.c -- the kernels of max, min, prod, all, any, argmax and argmin (and the
 * empty-axis identities of sum) in eval/k_reduce.c, and their type relations: evaluated through
 * gp_eval_op on constants, compared with hand-computed values. */
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
