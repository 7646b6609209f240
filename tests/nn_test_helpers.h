/* nn_test_helpers.h -- what the nn, conv and image kernel tests share: tensors from literals,
 * attributes, evaluation of one op through gp_eval_op, comparisons with expected values, and
 * strided DLPack views (make_view) with a tolerance check (expect_same). */
#ifndef GP_NN_TEST_HELPERS_H
#define GP_NN_TEST_HELPERS_H

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
#define VALS(...) ((const double[]){__VA_ARGS__})
#define INTS(...) gp_attr_ints(NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

typedef struct KV {
  const char *key;
  GPAttrValue value;
} KV;
#define KV(k, v) ((KV){(k), (v)})
#define KVS(...) ((const KV[]){__VA_ARGS__}), ((int32_t)(sizeof((const KV[]){__VA_ARGS__}) / sizeof(KV)))
#define NOKV NULL, 0
#define INS(...) ((GPTensor *const[]){__VA_ARGS__}), ((int32_t)(sizeof((GPTensor *const[]){__VA_ARGS__}) / sizeof(GPTensor *)))

static inline int64_t numel(int32_t ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int32_t i = 0; i < ndim; i++) n *= shape[i];
  return n;
}

/* A compact tensor of dtype dt from doubles (NULL: zeros); values convert as gp_k_store_f64. */
static inline GPTensor *tensor(DLDataType dt, int32_t ndim, const int64_t *shape, const double *vals) {
  GPTensor *t = gp_tensor_alloc(dt, ndim, shape, true);
  cr_assert(t, "alloc: %s", gp_error_message());
  int k = gp_k_dtype(dt);
  cr_assert(k >= 0);
  size_t es = gp_k_elem_size(k);
  if (vals)
    for (int64_t i = 0, n = numel(ndim, shape); i < n; i++) gp_k_store_f64((char *)t->dl.data + i * es, k, vals[i]);
  return t;
}
#define T32(shape, vals) tensor(GP_DT_F32, (int32_t)(sizeof(shape) / sizeof(int64_t)), (shape), (vals))

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static inline double urand(void) { /* uniform in [-1, 1) */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}
static inline int64_t irand(int64_t lo, int64_t hi) { /* in [lo, hi] */
  return lo + (int64_t)((urand() + 1.0) / 2.0 * (double)(hi - lo + 1)) % (hi - lo + 1);
}

static inline GPTensor *random_tensor(DLDataType dt, int32_t ndim, const int64_t *shape, double scale) {
  int64_t n = numel(ndim, shape);
  double *v = calloc((size_t)(n ? n : 1), sizeof(double));
  for (int64_t i = 0; i < n; i++) v[i] = dt.code == kDLFloat ? urand() * scale : (double)irand(-(int64_t)scale, (int64_t)scale);
  GPTensor *t = tensor(dt, ndim, shape, v);
  free(v);
  return t;
}

static inline double at(const GPTensor *t, int64_t i) { return gp_tensor_get_f64(t, i); }

static inline GPAttrs *make_attrs(const GPOp *op, const KV *kv, int32_t nkv) {
  const char *keys[16];
  GPAttrValue vals[16];
  cr_assert(nkv <= 16);
  for (int32_t i = 0; i < nkv; i++) keys[i] = kv[i].key, vals[i] = kv[i].value;
  GPAttrs *attrs = gp_op_attrs_new(op, nkv, keys, vals);
  cr_assert(attrs || gp_error_kind() == GP_OK, "attrs: %s", gp_error_message());
  return attrs;
}

/* Run op on inputs (one per argument); 0 and outputs in outs[0..*nout), or -1 with the error. */
static inline int run_op(const char *name, const KV *kv, int32_t nkv, GPTensor *const *ins, int32_t nin,
                  int32_t nthreads, GPTensor **outs, int32_t *nout) {
  gp_error_clear();
  const GPOp *op = gp_op_get(name);
  cr_assert(op, "no op %s", name);
  GPAttrs *attrs = make_attrs(op, kv, nkv);
  const GPType *types[8] = {NULL};
  const GPType *out_type = NULL;
  cr_assert(nin <= 8);
  int rc = gp_eval_op(op, attrs, nin, types, nin, ins, nthreads, &out_type, outs, 4, nout);
  gp_release(attrs);
  return rc;
}

/* Run op and return its single (or first) output; fails the test on error. */
static inline GPTensor *run1(const char *name, const KV *kv, int32_t nkv, GPTensor *const *ins, int32_t nin) {
  GPTensor *outs[4];
  int32_t nout = 0;
  int rc = run_op(name, kv, nkv, ins, nin, 2, outs, &nout);
  cr_assert_eq(rc, 0, "%s: %s", name, gp_error_message());
  for (int32_t i = 1; i < nout; i++) gp_release(outs[i]);
  return outs[0];
}

static inline void release_all(GPTensor *const *ts, int32_t n) {
  for (int32_t i = 0; i < n; i++) gp_release(ts[i]);
}

static inline void expect_shape(const GPTensor *t, int32_t ndim, const int64_t *shape) {
  cr_assert_eq(t->dl.ndim, ndim, "rank %d, want %d", (int)t->dl.ndim, (int)ndim);
  for (int32_t i = 0; i < ndim; i++)
    cr_assert_eq(t->dl.shape[i], shape[i], "dim %d is %lld, want %lld", (int)i, (long long)t->dl.shape[i],
                 (long long)shape[i]);
}
#define EXPECT_SHAPE(t, ...) expect_shape((t), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

static inline void expect_vals(const GPTensor *t, const double *want, int64_t n, double tol, int line) {
  cr_assert_eq(numel(t->dl.ndim, t->dl.shape), n, "line %d: %lld elements, want %lld", line,
               (long long)numel(t->dl.ndim, t->dl.shape), (long long)n);
  for (int64_t i = 0; i < n; i++) {
    double g = at(t, i);
    cr_assert(fabs(g - want[i]) <= tol * (1.0 + fabs(want[i])), "line %d: element %lld is %.9g, want %.9g", line,
              (long long)i, g, want[i]);
  }
}
#define EXPECT_VALS(t, tol, ...) \
  expect_vals((t), VALS(__VA_ARGS__), (int64_t)(sizeof(VALS(__VA_ARGS__)) / sizeof(double)), (tol), __LINE__)

static inline void expect_error(int32_t kind, const char *needle) {
  cr_assert_eq(gp_error_kind(), kind, "error kind %d, expected %d (%s)", gp_error_kind(), kind, gp_error_message());
  cr_assert(strstr(gp_error_message(), needle), "message \"%s\" lacks \"%s\"", gp_error_message(), needle);
  gp_error_clear();
}

/* A tensor viewing a fresh buffer (a copy of `bytes` bytes of src) with explicit strides (in
 * elements) and a byte offset, through gp_tensor_from_dlpack; the buffer is exactly that big, so
 * ASan catches a kernel reading past the elements the strides address. */
typedef struct View {
  DLManagedTensor m;
  int64_t shape[8], strides[8];
} View;

static inline void view_deleter(DLManagedTensor *m) {
  free(m->dl_tensor.data);
  free(m->manager_ctx);
}

static inline GPTensor *make_view(DLDataType dt, int32_t ndim, const int64_t *shape, const int64_t *strides,
                           uint64_t byte_offset, const void *src, size_t bytes) {
  View *v = calloc(1, sizeof *v);
  memcpy(v->shape, shape, (size_t)ndim * sizeof(int64_t));
  memcpy(v->strides, strides, (size_t)ndim * sizeof(int64_t));
  void *buf = malloc(bytes);
  memcpy(buf, src, bytes);
  v->m.manager_ctx = v;
  v->m.deleter = view_deleter;
  v->m.dl_tensor = (DLTensor){.data = buf, .device = {kDLCPU, 0}, .ndim = ndim, .dtype = dt,
                              .shape = v->shape, .strides = v->strides, .byte_offset = byte_offset};
  GPTensor *t = gp_tensor_from_dlpack(&v->m);
  cr_assert(t, "view: %s", gp_error_message());
  return t;
}

static inline void expect_same(const GPTensor *got, const GPTensor *want, double rtol, double atol, const char *what) {
  double ma = 0, mr = 0;
  int64_t worst = -1;
  int r = gp_tensor_allclose(got, want, rtol, atol, &ma, &mr, &worst);
  cr_assert_eq(r, 1, "%s: differs (rc %d, max abs %g, max rel %g at %lld): %s", what, r, ma, mr, (long long)worst,
               gp_error_message());
}

#endif /* GP_NN_TEST_HELPERS_H */
