/* k_index.c -- kernels: take, gather, gather_nd, scatter_elements, scatter_nd, one_hot, trilu.
 *
 * Inputs may be strided: each is read through a compact copy (gp_k_compact) when it is not
 * compact.  Indices of any integer dtype are read as int64.  Every index is checked against its
 * bound before it is used: an index outside [-extent, extent) is GP_ERR_VALUE naming the index,
 * its position and the bound (take's "clip" and "wrap" modes map every index into range
 * instead; one_hot leaves a row all off_value, as ONNX says).  Negative indices count from the
 * end.  Data elements move as bytes (any dtype of 1, 2, 4 or 8 bytes, bool included); the
 * scatter reductions compute per dtype (float16 in float32; integers wrap). */
#include "common/checked.h"
#include "eval/kernel.h"

#include <math.h>
#include <stdio.h>

static char *out_data(const DLTensor *t) { return (char *)t->data + t->byte_offset; }

static int k_counts(const GPKernelArgs *a, int32_t nin, int32_t nout) {
  if (a->num_inputs != nin || a->num_outputs != nout) {
    gp_error_set(GP_ERR_INTERNAL, "%d inputs and %d outputs, expected %d and %d", (int)a->num_inputs,
                 (int)a->num_outputs, (int)nin, (int)nout);
    return -1;
  }
  return 0;
}

/* Bytes per element of a dtype that moves as bytes. */
static int k_elem(DLDataType dt, const char *what, size_t *elem) {
  bool ok = dt.lanes == 1 && (dt.bits == 8 || dt.bits == 16 || dt.bits == 32 || dt.bits == 64 ||
                              (dt.bits == 1 && dt.code == kDLUInt));
  if (!ok) {
    char b[24];
    gp_error_set(GP_ERR_UNSUPPORTED, "%s: dtype %s is not supported", what, gp_dtype_str(dt, b));
    return -1;
  }
  *elem = dt.bits == 1 ? 1 : dt.bits / 8u;
  return 0;
}

static int mismatch(const char *what) {
  gp_error_set(GP_ERR_INTERNAL, "%s does not match the shape the type relation gives", what);
  return -1;
}

/* The elements of integer tensor t as int64 (gp_malloc'd, numel >= 1 entries allocated). */
static int64_t *load_indices(const DLTensor *t, const char *what) {
  int k;
  if (gp_k_dtype_check(t->dtype, what, &k) != 0) return NULL;
  if (gp_k_is_float(k) || k == GP_K_BOOL) {
    char b[24];
    gp_error_set(GP_ERR_UNSUPPORTED, "%s: dtype %s is not an integer dtype", what, gp_dtype_str(t->dtype, b));
    return NULL;
  }
  int64_t n = gp_k_numel(t);
  int64_t *v = gp_malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
  void *scratch = NULL;
  const char *p = gp_k_compact(t, &scratch);
  size_t e = gp_k_elem_size(k);
  for (int64_t i = 0; i < n; i++) v[i] = gp_k_load_i64(p + (size_t)i * e, k);
  gp_free(scratch);
  return v;
}

/* Normalize index v against extent n ([-n, n) allowed); -1 + GP_ERR_VALUE otherwise. */
static int norm_index(int64_t v, int64_t n, int64_t pos, const char *what, int32_t axis, int64_t *out) {
  if (!gp_index_norm(v, n, out)) {
    gp_error_set(GP_ERR_VALUE,
                 "%s: index %lld (element %lld) is out of range [%lld, %lld) for axis %d of extent %lld",
                 what, (long long)v, (long long)pos, (long long)-n, (long long)n, (int)axis, (long long)n);
    return -1;
  }
  return 0;
}

static int64_t prod(const int64_t *s, int32_t from, int32_t to) {
  int64_t p = 1;
  for (int32_t i = from; i < to; i++) p *= s[i];
  return p;
}

static void compact_strides(int32_t nd, const int64_t *shape, int64_t *st) {
  int64_t s = 1;
  for (int32_t i = nd - 1; i >= 0; i--) {
    st[i] = s;
    s *= shape[i];
  }
}

/* ------------------------------------------------------------------------------------------ */
/* take                                                                                        */

static int k_take(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, 2, 1) != 0) return -1;
  const DLTensor *data = a->inputs[0], *it = a->inputs[1];
  DLTensor *out = a->outputs[0];
  size_t e;
  if (k_elem(data->dtype, "data", &e) != 0) return -1;
  const char *mode = gp_ops_attr_str(a->op, a->attrs, "mode");
  int m = strcmp(mode, "clip") == 0 ? 0 : strcmp(mode, "wrap") == 0 ? 1 : strcmp(mode, "fast") == 0 ? 2 : -1;
  if (m < 0) {
    gp_error_set(GP_ERR_UNSUPPORTED, "mode \"%s\"", mode);
    return -1;
  }
  bool flat = gp_ops_attr_none(a->op, a->attrs, "axis");
  int32_t nd = data->ndim, axis = 0, bd = 0;
  if (!flat) {
    int64_t ax = gp_ops_attr_int(a->op, a->attrs, "axis");
    if (ax < -(int64_t)nd || ax >= nd) return mismatch("axis");
    axis = (int32_t)(ax < 0 ? ax + nd : ax);
    int64_t b = gp_ops_attr_int(a->op, a->attrs, "batch_dims");
    if (b < 0) b += it->ndim;
    if (b < 0 || b > axis || b > it->ndim) return mismatch("batch_dims");
    bd = (int32_t)b;
  }
  int64_t B = flat ? 1 : prod(data->shape, 0, bd), O = flat ? 1 : prod(data->shape, bd, axis);
  int64_t N = flat ? gp_k_numel(data) : data->shape[axis];
  int64_t inner = flat ? 1 : prod(data->shape, axis + 1, nd);
  int64_t I = prod(it->shape, bd, it->ndim);
  if (B * O * I * inner != gp_k_numel(out)) return mismatch("the result");
  if (gp_k_numel(out) == 0) return 0;
  int64_t *idx = load_indices(it, "indices");
  if (!idx) return -1;
  void *scratch = NULL;
  const char *src = gp_k_compact(data, &scratch);
  char *dst = out_data(out);
  int rc = 0;
  size_t row = (size_t)inner * e;
  for (int64_t b = 0; b < B && rc == 0; b++)
    for (int64_t o = 0; o < O && rc == 0; o++)
      for (int64_t i = 0; i < I; i++) {
        int64_t v = idx[b * I + i], j;
        if (m == 2 || N == 0) {
          if (norm_index(v, N, b * I + i, "indices", axis, &j) != 0) {
            rc = -1;
            break;
          }
        } else if (m == 0) {
          j = v < 0 ? 0 : v >= N ? N - 1 : v;
        } else {
          j = v % N;
          if (j < 0) j += N;
        }
        memcpy(dst + (size_t)((b * O + o) * I + i) * row, src + (size_t)(((b * O + o) * N + j) * inner) * e,
               row);
      }
  gp_free(scratch);
  gp_free(idx);
  return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* gather (GatherElements)                                                                     */

static int k_gather(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, 2, 1) != 0) return -1;
  const DLTensor *data = a->inputs[0], *it = a->inputs[1];
  DLTensor *out = a->outputs[0];
  size_t e;
  if (k_elem(data->dtype, "data", &e) != 0) return -1;
  int32_t nd = data->ndim;
  int64_t ax = gp_ops_attr_int(a->op, a->attrs, "axis");
  if (nd < 1 || it->ndim != nd || out->ndim != nd || ax < -(int64_t)nd || ax >= nd) return mismatch("indices");
  int32_t axis = (int32_t)(ax < 0 ? ax + nd : ax);
  for (int32_t d = 0; d < nd; d++) {
    if (out->shape[d] != it->shape[d]) return mismatch("the result");
    if (d != axis && it->shape[d] > data->shape[d]) {
      gp_error_set(GP_ERR_VALUE, "indices dim %d (extent %lld) exceeds data's (extent %lld)", (int)d,
                   (long long)it->shape[d], (long long)data->shape[d]);
      return -1;
    }
  }
  int64_t n = gp_k_numel(out);
  if (n == 0) return 0;
  int64_t *idx = load_indices(it, "indices");
  if (!idx) return -1;
  void *scratch = NULL;
  const char *src = gp_k_compact(data, &scratch);
  int64_t ds[GP_K_MAX_RANK], c[GP_K_MAX_RANK] = {0};
  compact_strides(nd, data->shape, ds);
  char *dst = out_data(out);
  int rc = 0;
  for (int64_t f = 0; f < n; f++) {
    int64_t j, off = 0;
    if (norm_index(idx[f], data->shape[axis], f, "indices", axis, &j) != 0) {
      rc = -1;
      break;
    }
    for (int32_t d = 0; d < nd; d++) off += (d == axis ? j : c[d]) * ds[d];
    memcpy(dst + (size_t)f * e, src + (size_t)off * e, e);
    for (int32_t d = nd - 1; d >= 0; d--) {
      if (++c[d] < it->shape[d]) break;
      c[d] = 0;
    }
  }
  gp_free(scratch);
  gp_free(idx);
  return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* gather_nd                                                                                   */

/* Offset (elements, compact data) of the slice that index column y of idx (M rows of Y
 * columns) selects in batch b; -1 + error when an index is out of range. */
static int nd_offset(const DLTensor *data, const int64_t *ds, int32_t bd, int64_t M, const int64_t *idx,
                     int64_t Y, int64_t y, int64_t b, int64_t *off) {
  int64_t o = b * (bd > 0 ? ds[bd - 1] : 0);
  for (int64_t k = 0; k < M; k++) {
    int64_t j;
    int32_t ax = (int32_t)(bd + k);
    if (norm_index(idx[k * Y + y], data->shape[ax], k * Y + y, "indices", ax, &j) != 0) return -1;
    o += j * ds[ax];
  }
  *off = o;
  return 0;
}

static int k_gather_nd(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, 2, 1) != 0) return -1;
  const DLTensor *data = a->inputs[0], *it = a->inputs[1];
  DLTensor *out = a->outputs[0];
  size_t e;
  if (k_elem(data->dtype, "data", &e) != 0) return -1;
  int64_t bd64 = gp_ops_attr_int(a->op, a->attrs, "batch_dims");
  if (it->ndim < 1) return mismatch("indices");
  int64_t M = it->shape[0];
  if (bd64 < 0 || bd64 > it->ndim - 1 || bd64 + M > data->ndim) return mismatch("indices");
  int32_t bd = (int32_t)bd64, nd = data->ndim;
  int64_t Y = prod(it->shape, 1, it->ndim), B = prod(data->shape, 0, bd);
  int64_t inner = prod(data->shape, (int32_t)(bd + M), nd);
  if (Y * inner != gp_k_numel(out)) return mismatch("the result");
  if (gp_k_numel(out) == 0) return 0;
  int64_t Yb = B ? Y / B : 0; /* columns per batch */
  int64_t *idx = load_indices(it, "indices");
  if (!idx) return -1;
  void *scratch = NULL;
  const char *src = gp_k_compact(data, &scratch);
  int64_t ds[GP_K_MAX_RANK];
  compact_strides(nd, data->shape, ds);
  char *dst = out_data(out);
  int rc = 0;
  for (int64_t y = 0; y < Y; y++) {
    int64_t off;
    if (nd_offset(data, ds, bd, M, idx, Y, y, Yb ? y / Yb : 0, &off) != 0) {
      rc = -1;
      break;
    }
    memcpy(dst + (size_t)(y * inner) * e, src + (size_t)off * e, (size_t)inner * e);
  }
  gp_free(scratch);
  gp_free(idx);
  return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* scatter_elements, scatter_nd                                                                */

enum { RED_UPDATE, RED_ADD, RED_MUL, RED_MIN, RED_MAX };

static int reduction_of(const char *s) {
  return strcmp(s, "update") == 0 ? RED_UPDATE
         : strcmp(s, "add") == 0  ? RED_ADD
         : strcmp(s, "mul") == 0  ? RED_MUL
         : strcmp(s, "min") == 0  ? RED_MIN
         : strcmp(s, "max") == 0  ? RED_MAX
                                  : -1;
}

#define RED_INT(T, UT)                                                                         \
  static void red_##T(char *d, const char *s, int64_t n, int r) {                              \
    for (int64_t i = 0; i < n; i++) {                                                          \
      T x, y;                                                                                  \
      memcpy(&x, d + i * (int64_t)sizeof(T), sizeof(T));                                       \
      memcpy(&y, s + i * (int64_t)sizeof(T), sizeof(T));                                       \
      switch (r) {                                                                             \
      case RED_ADD: x = (T)(UT)((UT)x + (UT)y); break;                                         \
      case RED_MUL: x = (T)(UT)((UT)x * (UT)y); break;                                         \
      case RED_MIN: x = y < x ? y : x; break;                                                  \
      case RED_MAX: x = y > x ? y : x; break;                                                  \
      default: x = y; break;                                                                   \
      }                                                                                        \
      memcpy(d + i * (int64_t)sizeof(T), &x, sizeof(T));                                       \
    }                                                                                          \
  }
RED_INT(int8_t, uint32_t)
RED_INT(int16_t, uint32_t)
RED_INT(int32_t, uint32_t)
RED_INT(int64_t, uint64_t)
RED_INT(uint8_t, uint32_t)
RED_INT(uint16_t, uint32_t)
RED_INT(uint32_t, uint32_t)
RED_INT(uint64_t, uint64_t)
#undef RED_INT

static double red_f(double x, double y, int r) {
  switch (r) {
  case RED_ADD: return x + y;
  case RED_MUL: return x * y;
  case RED_MIN: return (y < x || isnan(y)) ? y : x;
  case RED_MAX: return (y > x || isnan(y)) ? y : x;
  default: return y;
  }
}

/* n elements of dtype k at d combined with those at s by reduction r. */
static void reduce_into(char *d, const char *s, int64_t n, int k, int r, size_t e) {
  if (r == RED_UPDATE) {
    memcpy(d, s, (size_t)n * e);
    return;
  }
  switch (k) {
  case GP_K_BOOL:
    for (int64_t i = 0; i < n; i++) {
      uint8_t x = d[i] != 0, y = s[i] != 0;
      d[i] = (char)(r == RED_ADD || r == RED_MAX ? (x | y) : (x & y));
    }
    break;
  case GP_K_U8: red_uint8_t(d, s, n, r); break;
  case GP_K_U16: red_uint16_t(d, s, n, r); break;
  case GP_K_U32: red_uint32_t(d, s, n, r); break;
  case GP_K_U64: red_uint64_t(d, s, n, r); break;
  case GP_K_I8: red_int8_t(d, s, n, r); break;
  case GP_K_I16: red_int16_t(d, s, n, r); break;
  case GP_K_I32: red_int32_t(d, s, n, r); break;
  case GP_K_I64: red_int64_t(d, s, n, r); break;
  case GP_K_F16:
    for (int64_t i = 0; i < n; i++) {
      uint16_t x, y;
      memcpy(&x, d + 2 * i, 2);
      memcpy(&y, s + 2 * i, 2);
      float v = (float)red_f(gp_f16_to_f32(x), gp_f16_to_f32(y), r);
      x = gp_f32_to_f16(v);
      memcpy(d + 2 * i, &x, 2);
    }
    break;
  case GP_K_F32:
    for (int64_t i = 0; i < n; i++) {
      float x, y;
      memcpy(&x, d + 4 * i, 4);
      memcpy(&y, s + 4 * i, 4);
      x = (float)red_f(x, y, r);
      memcpy(d + 4 * i, &x, 4);
    }
    break;
  default:
    for (int64_t i = 0; i < n; i++) {
      double x, y;
      memcpy(&x, d + 8 * i, 8);
      memcpy(&y, s + 8 * i, 8);
      x = red_f(x, y, r);
      memcpy(d + 8 * i, &x, 8);
    }
    break;
  }
}

/* Common start of the scatters: the result holds a copy of data; *upd the compact updates. */
static int scatter_begin(const GPKernelArgs *a, const char *red_attr, int *k, size_t *e, int *red,
                         const char **upd, void **scratch) {
  const DLTensor *data = a->inputs[0], *u = a->inputs[2];
  DLTensor *out = a->outputs[0];
  if (gp_k_dtype_check(data->dtype, "data", k) != 0) return -1;
  *e = gp_k_elem_size(*k);
  const char *rs = gp_ops_attr_str(a->op, a->attrs, red_attr);
  *red = reduction_of(rs);
  if (*red < 0) {
    gp_error_set(GP_ERR_UNSUPPORTED, "%s \"%s\"", red_attr, rs);
    return -1;
  }
  if (!gp_dtype_eq(u->dtype, data->dtype) || out->ndim != data->ndim || gp_k_numel(out) != gp_k_numel(data))
    return mismatch("the result");
  void *ds = NULL;
  const void *src = gp_k_compact(data, &ds);
  if (gp_k_numel(data) > 0) memcpy(out_data(out), src, (size_t)gp_k_numel(data) * *e);
  gp_free(ds);
  *upd = gp_k_compact(u, scratch);
  return 0;
}

static int k_scatter_elements(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, 3, 1) != 0) return -1;
  const DLTensor *data = a->inputs[0], *it = a->inputs[1], *u = a->inputs[2];
  int32_t nd = data->ndim;
  int64_t ax = gp_ops_attr_int(a->op, a->attrs, "axis");
  if (nd < 1 || it->ndim != nd || u->ndim != nd || ax < -(int64_t)nd || ax >= nd) return mismatch("indices");
  int32_t axis = (int32_t)(ax < 0 ? ax + nd : ax);
  for (int32_t d = 0; d < nd; d++) {
    if (u->shape[d] != it->shape[d]) return mismatch("updates");
    if (d != axis && it->shape[d] > data->shape[d]) {
      gp_error_set(GP_ERR_VALUE, "indices dim %d (extent %lld) exceeds data's (extent %lld)", (int)d,
                   (long long)it->shape[d], (long long)data->shape[d]);
      return -1;
    }
  }
  int k, red;
  size_t e;
  const char *upd;
  void *scratch = NULL;
  if (scatter_begin(a, "reduction", &k, &e, &red, &upd, &scratch) != 0) return -1;
  int64_t n = gp_k_numel(it);
  int64_t *idx = n ? load_indices(it, "indices") : NULL;
  if (n && !idx) {
    gp_free(scratch);
    return -1;
  }
  int64_t ds[GP_K_MAX_RANK], c[GP_K_MAX_RANK] = {0};
  compact_strides(nd, data->shape, ds);
  char *dst = out_data(a->outputs[0]);
  int rc = 0;
  for (int64_t f = 0; f < n; f++) {
    int64_t j, off = 0;
    if (norm_index(idx[f], data->shape[axis], f, "indices", axis, &j) != 0) {
      rc = -1;
      break;
    }
    for (int32_t d = 0; d < nd; d++) off += (d == axis ? j : c[d]) * ds[d];
    reduce_into(dst + (size_t)off * e, upd + (size_t)f * e, 1, k, red, e);
    for (int32_t d = nd - 1; d >= 0; d--) {
      if (++c[d] < it->shape[d]) break;
      c[d] = 0;
    }
  }
  gp_free(scratch);
  gp_free(idx);
  return rc;
}

static int k_scatter_nd(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, 3, 1) != 0) return -1;
  const DLTensor *data = a->inputs[0], *it = a->inputs[1], *u = a->inputs[2];
  if (it->ndim < 1 || it->shape[0] > data->ndim) return mismatch("indices");
  int64_t M = it->shape[0], Y = prod(it->shape, 1, it->ndim);
  int32_t nd = data->ndim;
  int64_t inner = prod(data->shape, (int32_t)M, nd);
  if (gp_k_numel(u) != Y * inner) return mismatch("updates");
  int k, red;
  size_t e;
  const char *upd;
  void *scratch = NULL;
  if (scatter_begin(a, "mode", &k, &e, &red, &upd, &scratch) != 0) return -1;
  if (Y * inner == 0) {
    gp_free(scratch);
    return 0;
  }
  int64_t *idx = load_indices(it, "indices");
  if (!idx) {
    gp_free(scratch);
    return -1;
  }
  int64_t ds[GP_K_MAX_RANK];
  compact_strides(nd, data->shape, ds);
  char *dst = out_data(a->outputs[0]);
  int rc = 0;
  for (int64_t y = 0; y < Y; y++) {
    int64_t off;
    if (nd_offset(data, ds, 0, M, idx, Y, y, 0, &off) != 0) {
      rc = -1;
      break;
    }
    reduce_into(dst + (size_t)off * e, upd + (size_t)(y * inner) * e, inner, k, red, e);
  }
  gp_free(scratch);
  gp_free(idx);
  return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* one_hot                                                                                     */

/* The value of the one element of t, stored as dtype k into pat. */
static int scalar_as(const DLTensor *t, int k, unsigned char *pat, const char *what) {
  int kt;
  if (gp_k_dtype_check(t->dtype, what, &kt) != 0) return -1;
  if (gp_k_numel(t) != 1) return mismatch(what);
  GPKView v;
  gp_k_view(t, &v);
  memset(pat, 0, 8);
  if (gp_k_is_float(kt))
    gp_k_store_f64(pat, k, gp_k_load_f64(v.data, kt));
  else
    gp_k_store_i64(pat, k, gp_k_load_i64(v.data, kt));
  return 0;
}

static int k_one_hot(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, 3, 1) != 0) return -1;
  const DLTensor *it = a->inputs[0];
  DLTensor *out = a->outputs[0];
  int k;
  if (gp_k_dtype_check(out->dtype, "result", &k) != 0) return -1;
  size_t e = gp_k_elem_size(k);
  unsigned char on[8], off[8];
  if (scalar_as(a->inputs[1], k, on, "on_value") != 0 || scalar_as(a->inputs[2], k, off, "off_value") != 0)
    return -1;
  int32_t nd = it->ndim;
  int64_t depth = gp_ops_attr_int(a->op, a->attrs, "depth"), axis = gp_ops_attr_int(a->op, a->attrs, "axis");
  if (axis < 0) axis += nd + 1;
  if (axis < 0 || axis > nd || out->ndim != nd + 1 || out->shape[axis] != depth) return mismatch("the result");
  int64_t outer = prod(it->shape, 0, (int32_t)axis), inner = prod(it->shape, (int32_t)axis, nd);
  int64_t n = gp_k_numel(out);
  if (n != outer * depth * inner) return mismatch("the result");
  if (n == 0) return 0;
  int64_t *idx = load_indices(it, "indices");
  if (!idx) return -1;
  char *dst = out_data(out);
  for (int64_t i = 0; i < n; i++) memcpy(dst + (size_t)i * e, off, e);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t v = idx[o * inner + i];
      if (v < 0 && v >= -depth) v += depth;
      if (v < 0 || v >= depth) continue;
      memcpy(dst + (size_t)((o * depth + v) * inner + i) * e, on, e);
    }
  gp_free(idx);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* trilu                                                                                       */

static int k_trilu(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, 2, 1) != 0) return -1;
  const DLTensor *data = a->inputs[0];
  DLTensor *out = a->outputs[0];
  size_t e;
  if (k_elem(data->dtype, "data", &e) != 0) return -1;
  int32_t nd = data->ndim;
  if (nd < 2 || gp_k_numel(out) != gp_k_numel(data)) return mismatch("the result");
  if (gp_k_numel(a->inputs[1]) != 1) {
    gp_error_set(GP_ERR_VALUE, "k must have one element, has %lld", (long long)gp_k_numel(a->inputs[1]));
    return -1;
  }
  int64_t *kv = load_indices(a->inputs[1], "k");
  if (!kv) return -1;
  int64_t kk = kv[0];
  gp_free(kv);
  bool upper = gp_ops_attr_bool(a->op, a->attrs, "upper");
  int64_t R = data->shape[nd - 2], C = data->shape[nd - 1], B = prod(data->shape, 0, nd - 2);
  if (R * C * B == 0) return 0;
  void *scratch = NULL;
  const char *src = gp_k_compact(data, &scratch);
  char *dst = out_data(out);
  for (int64_t b = 0; b < B; b++)
    for (int64_t r = 0; r < R; r++)
      for (int64_t c = 0; c < C; c++) {
        int64_t d = c - r;
        bool keep = upper ? d >= kk : d <= kk;
        size_t off = (size_t)((b * R + r) * C + c) * e;
        if (keep)
          memcpy(dst + off, src + off, e);
        else
          memset(dst + off, 0, e);
      }
  gp_free(scratch);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */

void gp_kernels_register_index(void) {
  gp_kernel_set("take", k_take);
  gp_kernel_set("gather", k_gather);
  gp_kernel_set("gather_nd", k_gather_nd);
  gp_kernel_set("scatter_elements", k_scatter_elements);
  gp_kernel_set("scatter_nd", k_scatter_nd);
  gp_kernel_set("one_hot", k_one_hot);
  gp_kernel_set("trilu", k_trilu);
}
