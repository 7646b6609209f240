/* kernel_test_helpers.h -- what the kernel test files share: tensors from literals (compact,
 * iota, strided), attributes as key/value lists, evaluation of one op through gp_eval_op, and
 * comparisons of results with hand-computed values. */
#ifndef GP_KERNEL_TEST_HELPERS_H
#define GP_KERNEL_TEST_HELPERS_H

#include "eval/eval.h"
#include "eval/kernel.h"
#include "ir/ir.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static inline size_t esize(DLDataType dt) { return gp_dtype_bytes(dt); }

static inline int64_t count(int32_t nd, const int64_t *shape) {
  int64_t n = 1;
  for (int32_t i = 0; i < nd; i++) n *= shape[i];
  return n;
}

/* A compact tensor of nd/shape whose elements are copied from `data` (numel * esize bytes). */
static inline GPTensor *mk(DLDataType dt, int32_t nd, const int64_t *shape, const void *data) {
  GPTensor *t = gp_tensor_alloc(dt, nd, shape, true);
  cr_assert(t, "tensor_alloc: %s", gp_error_message());
  size_t n = (size_t)count(nd, shape) * esize(dt);
  if (n && data) memcpy(t->dl.data, data, n);
  return t;
}

static inline GPTensor *mkf(int32_t nd, const int64_t *shape, const float *v) { return mk(GP_DT_F32, nd, shape, v); }

/* Store integer v into element i of a compact buffer of dtype dt (floats: the value). */
static inline void put(void *base, DLDataType dt, int64_t i, int64_t v) {
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
static inline GPTensor *mk_iota(DLDataType dt, int32_t nd, const int64_t *shape) {
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

static inline void strided_deleter(DLManagedTensor *m) {
  free(m->dl_tensor.data);
  free(m->manager_ctx);
}

static inline GPTensor *mk_strided(DLDataType dt, int32_t nd, const int64_t *shape, const int64_t *strides,
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

static inline GPAttrs *mk_attrs(const GPOp *op, const KV *kv, int32_t nkv) {
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
static inline int eval_n(const char *name, int32_t nin, GPTensor *const *ins, bool tuple_arg, const KV *kv,
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
static inline GPTensor *eval1t(const char *name, int32_t nin, GPTensor *const *ins, const KV *kv, int32_t nkv,
                        int32_t threads) {
  GPTensor *out[1];
  int n = eval_n(name, nin, ins, false, kv, nkv, threads, out, 1);
  cr_assert_eq(n, 1, "%s: %s", name, gp_error_message());
  return out[0];
}

static inline GPTensor *eval1(const char *name, GPTensor *in, const KV *kv, int32_t nkv) {
  return eval1t(name, in ? 1 : 0, &in, kv, nkv, 1);
}

/* Expect op to fail with `kind` and a message containing needle. */
static inline void eval_err(const char *name, int32_t nin, GPTensor *const *ins, const KV *kv, int32_t nkv,
                     int32_t kind, const char *needle) {
  GPTensor *out[4];
  int n = eval_n(name, nin, ins, false, kv, nkv, 1, out, 4);
  cr_assert_eq(n, -1, "%s: expected an error containing \"%s\"", name, needle);
  cr_assert_eq(gp_error_kind(), kind, "%s: error kind %d (%s), want %d", name, gp_error_kind(),
               gp_error_message(), kind);
  cr_assert(strstr(gp_error_message(), needle), "%s: \"%s\" lacks \"%s\"", name, gp_error_message(), needle);
  gp_error_clear();
}

static inline void expect_shape(const GPTensor *t, DLDataType dt, int32_t nd, const int64_t *shape) {
  char a[24], b[24];
  cr_assert(gp_dtype_eq(t->dl.dtype, dt), "dtype %s, want %s", gp_dtype_str(t->dl.dtype, a), gp_dtype_str(dt, b));
  cr_assert_eq(t->dl.ndim, nd, "rank %d, want %d", t->dl.ndim, nd);
  for (int32_t i = 0; i < nd; i++)
    cr_assert_eq(t->dl.shape[i], shape[i], "dim %d is %lld, want %lld", i, (long long)t->dl.shape[i],
                 (long long)shape[i]);
}

static inline void expect_f32(GPTensor *t, int32_t nd, const int64_t *shape, const float *want) {
  expect_shape(t, GP_DT_F32, nd, shape);
  const float *got = t->dl.data;
  for (int64_t i = 0, n = count(nd, shape); i < n; i++)
    cr_assert_eq(got[i], want[i], "element %lld is %g, want %g", (long long)i, got[i], want[i]);
  gp_release(t);
}

/* Element i of a compact tensor as int64 (floats truncated; float16 decoded for small ints). */
static inline int64_t get_i(const GPTensor *t, int64_t i) {
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

static inline void expect_ints(GPTensor *t, DLDataType dt, int32_t nd, const int64_t *shape, const int64_t *want) {
  expect_shape(t, dt, nd, shape);
  for (int64_t i = 0, n = count(nd, shape); i < n; i++)
    cr_assert_eq(get_i(t, i), want[i], "element %lld is %lld, want %lld", (long long)i, (long long)get_i(t, i),
                 (long long)want[i]);
  gp_release(t);
}

/* Element i of a compact float tensor (float16/32/64) as double. */
static inline double get_f(const GPTensor *t, int64_t i) {
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
static inline void expect_fv(GPTensor *t, DLDataType dt, int32_t nd, const int64_t *shape, const double *want) {
  expect_shape(t, dt, nd, shape);
  for (int64_t i = 0, n = count(nd, shape); i < n; i++) {
    double g = get_f(t, i);
    bool ok = isnan(want[i]) ? isnan(g) : g == want[i];
    cr_assert(ok, "element %lld is %g, want %g", (long long)i, g, want[i]);
  }
  gp_release(t);
}

#endif /* GP_KERNEL_TEST_HELPERS_H */
