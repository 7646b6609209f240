/* elem_test_helpers.h -- shared by the elementwise and logic kernel tests: tensors from C
 * arrays (mk, and mk_strided over a DLPack producer whose deleter counts its calls in
 * g_deleted), running one op through gp_eval_op (try_run3, run_kv), and checks that name the
 * test line (EXPECT_F, EXPECT_I, EXPECT_H, EXPECT_ERR; each releases the tensor it checks).
 * Include it once per test file: g_deleted is that file's own counter. */
#ifndef GP_ELEM_TEST_HELPERS_H
#define GP_ELEM_TEST_HELPERS_H

#include "eval/eval.h"
#include "eval/kernel.h"
#include "ir/ir.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- building tensors */

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int32_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define SH(...) NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__) /* rank and shape */
#define S0 0, NULL                                    /* rank 0 */
#define F32S(...) ((const float[]){__VA_ARGS__})
#define F64S(...) ((const double[]){__VA_ARGS__})
#define I8S(...) ((const int8_t[]){__VA_ARGS__})
#define I16S(...) ((const int16_t[]){__VA_ARGS__})
#define I32S(...) ((const int32_t[]){__VA_ARGS__})
#define I64S(...) ((const int64_t[]){__VA_ARGS__})
#define U8S(...) ((const uint8_t[]){__VA_ARGS__})
#define U16S(...) ((const uint16_t[]){__VA_ARGS__}) /* float16 bits */

static inline GPTensor *mk(DLDataType dt, int32_t nd, const int64_t *shape, const void *vals) {
  GPTensor *t = gp_tensor_alloc(dt, nd, shape, true);
  cr_assert(t, "tensor_alloc: %s", gp_error_message());
  size_t nb = gp_tensor_nbytes(t);
  if (nb) memcpy(t->dl.data, vals, nb);
  return t;
}

/* A tensor over a copy of `buf` (nbytes) with explicit strides and byte_offset, through
 * gp_tensor_from_dlpack; the deleter counts its calls in g_deleted. */
static int g_deleted;

typedef struct Managed {
  DLManagedTensor m;
  int64_t shape[8], strides[8];
  void *buf;
} Managed;

static inline void managed_deleter(DLManagedTensor *m) {
  Managed *x = m->manager_ctx;
  free(x->buf);
  free(x);
  g_deleted++;
}

static inline GPTensor *mk_strided(DLDataType dt, int32_t nd, const int64_t *shape, const int64_t *strides,
                                   const void *buf, size_t nbytes, uint64_t byte_offset) {
  Managed *x = calloc(1, sizeof *x);
  x->buf = malloc(nbytes);
  memcpy(x->buf, buf, nbytes);
  for (int32_t i = 0; i < nd; i++) x->shape[i] = shape[i], x->strides[i] = strides[i];
  x->m.dl_tensor = (DLTensor){.data = x->buf, .device = {kDLCPU, 0}, .ndim = nd, .dtype = dt,
                              .shape = x->shape, .strides = x->strides, .byte_offset = byte_offset};
  x->m.manager_ctx = x;
  x->m.deleter = managed_deleter;
  GPTensor *t = gp_tensor_from_dlpack(&x->m);
  cr_assert(t, "from_dlpack: %s", gp_error_message());
  return t;
}

/* ---- running ops */

typedef struct KV {
  const char *key;
  GPAttrValue value;
} KV;
#define KV(k, v) ((KV){(k), (v)})
#define KVS(...) ((const KV[]){__VA_ARGS__}), ((int32_t)(sizeof((const KV[]){__VA_ARGS__}) / sizeof(KV)))
#define NOKV NULL, 0

/* Evaluate op on its inputs (a, then b and c unless NULL) with `threads` threads; releases the
 * inputs.  Returns the result (new reference), or NULL with the error pending. */
static inline GPTensor *try_run3(const char *name, const KV *kv, int32_t nkv, int32_t threads, GPTensor *a,
                                 GPTensor *b, GPTensor *c) {
  gp_error_clear();
  const GPOp *op = gp_op_get(name);
  cr_assert(op, "no op %s", name);
  const char *keys[8];
  GPAttrValue vals[8];
  cr_assert(nkv <= 8);
  for (int32_t i = 0; i < nkv; i++) keys[i] = kv[i].key, vals[i] = kv[i].value;
  GPAttrs *attrs = gp_op_attrs_new(op, nkv, keys, vals);
  cr_assert(attrs || gp_error_kind() == GP_OK, "attrs of %s: %s", name, gp_error_message());
  GPTensor *in[3] = {a, b, c};
  int32_t nin = c ? 3 : b ? 2 : 1;
  const GPType *types[3] = {gp_tensor_type(a), b ? gp_tensor_type(b) : NULL, c ? gp_tensor_type(c) : NULL};
  const GPType *ot = NULL;
  GPTensor *outs[2] = {NULL, NULL};
  int32_t nout = 0;
  int rc = gp_eval_op(op, attrs, nin, types, nin, in, threads, &ot, outs, 2, &nout);
  gp_release(attrs);
  gp_release(a);
  gp_release(b);
  gp_release(c);
  if (rc != 0) {
    cr_assert_eq(nout, 0);
    return NULL;
  }
  cr_assert_eq(nout, 1);
  cr_assert(ot && ot->kind == GP_TYPE_TENSOR);
  return outs[0];
}

/* try_run3 that asserts success. */
static inline GPTensor *run_kv(const char *name, const KV *kv, int32_t nkv, int32_t threads, GPTensor *a,
                               GPTensor *b, GPTensor *c) {
  GPTensor *r = try_run3(name, kv, nkv, threads, a, b, c);
  cr_assert(r, "%s failed: %s", name, gp_error_message());
  return r;
}

static inline void expect_err_at(GPTensor *got, int32_t kind, const char *needle, int line) {
  cr_assert_null(got, "line %d: expected an error containing \"%s\"", line, needle);
  cr_assert_eq(gp_error_kind(), kind, "line %d: error kind %d, expected %d (%s)", line, gp_error_kind(), kind,
               gp_error_message());
  cr_assert(strstr(gp_error_message(), needle), "line %d: message \"%s\" lacks \"%s\"", line, gp_error_message(),
            needle);
  gp_error_clear();
}
#define EXPECT_ERR(got, kind, needle) expect_err_at((got), (kind), (needle), __LINE__)

/* ---- checking results (each releases t) */

static inline void expect_shape_at(const GPTensor *t, DLDataType dt, int32_t nd, const int64_t *shape, int line) {
  char a[24], b[24];
  cr_assert(gp_dtype_eq(t->dl.dtype, dt), "line %d: dtype %s, expected %s", line, gp_dtype_str(t->dl.dtype, a),
            gp_dtype_str(dt, b));
  cr_assert_eq(t->dl.ndim, nd, "line %d: rank %d, expected %d", line, (int)t->dl.ndim, (int)nd);
  for (int32_t i = 0; i < nd; i++)
    cr_assert_eq(t->dl.shape[i], shape[i], "line %d: dim %d is %lld, expected %lld", line, (int)i,
                 (long long)t->dl.shape[i], (long long)shape[i]);
  cr_assert(gp_tensor_is_compact(t), "line %d: result not compact", line);
}

static inline int64_t numel_of(int32_t nd, const int64_t *shape) {
  int64_t n = 1;
  for (int32_t i = 0; i < nd; i++) n *= shape[i];
  return n;
}

/* Values as doubles: NaN matches NaN, infinities exactly, else |got - want| <= tol * max(1, |want|). */
static inline void expect_f_at(GPTensor *t, DLDataType dt, int32_t nd, const int64_t *shape, const double *want,
                               double tol, int line) {
  expect_shape_at(t, dt, nd, shape, line);
  for (int64_t i = 0, n = numel_of(nd, shape); i < n; i++) {
    double g = gp_tensor_get_f64(t, i), w = want[i];
    bool ok = isnan(w) ? isnan(g) : isinf(w) ? g == w : fabs(g - w) <= tol * fmax(1.0, fabs(w));
    cr_assert(ok, "line %d: element %lld is %.17g, expected %.17g", line, (long long)i, g, w);
  }
  gp_release(t);
}
#define EXPECT_F(t, dt, sh, want, tol) expect_f_at((t), (dt), sh, (want), (tol), __LINE__)

static inline void expect_i_at(GPTensor *t, DLDataType dt, int32_t nd, const int64_t *shape, const int64_t *want,
                               int line) {
  expect_shape_at(t, dt, nd, shape, line);
  for (int64_t i = 0, n = numel_of(nd, shape); i < n; i++) {
    int64_t g = gp_tensor_get_i64(t, i);
    cr_assert_eq(g, want[i], "line %d: element %lld is %lld, expected %lld", line, (long long)i, (long long)g,
                 (long long)want[i]);
  }
  gp_release(t);
}
#define EXPECT_I(t, dt, sh, want) expect_i_at((t), (dt), sh, (want), __LINE__)

static inline void expect_h_at(GPTensor *t, int32_t nd, const int64_t *shape, const uint16_t *want, int line) {
  expect_shape_at(t, GP_DT_F16, nd, shape, line);
  const uint16_t *d = t->dl.data;
  for (int64_t i = 0, n = numel_of(nd, shape); i < n; i++)
    cr_assert_eq(d[i], want[i], "line %d: element %lld is 0x%04x, expected 0x%04x", line, (long long)i, d[i],
                 want[i]);
  gp_release(t);
}
#define EXPECT_H(t, sh, want) expect_h_at((t), sh, (want), __LINE__)

#define F32 GP_DT_F32
#define F64 GP_DT_F64
#define F16 GP_DT_F16
#define I8 GP_DT_I8
#define I16 GP_DT_I16
#define I32 GP_DT_I32
#define I64 GP_DT_I64
#define U8 GP_DT_U8
#define BOOL GP_DT_BOOL

#endif /* GP_ELEM_TEST_HELPERS_H */
