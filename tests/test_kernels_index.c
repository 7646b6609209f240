/* test_kernels_index.c -- the index ops (ir/ops/ops_index.c, eval/k_index.c): take, gather,
 * gather_nd, scatter_elements, scatter_nd, one_hot and trilu against hand-computed values
 * (negative indices, empty tensors, rank 0, strided inputs, out-of-range errors). */
#include "eval/eval.h"
#include "ir/ir.h"

#include <criterion/criterion.h>
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
