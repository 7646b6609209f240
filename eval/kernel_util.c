/* kernel_util.c -- dtype dispatch, half floats, strided views, broadcasting and a parallel-for
 * shared by the kernels (see kernel.h). */
#include "eval/kernel.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gp_kernel_set(const char *op_name, GPOpKernelFn fn) {
  /* Runs inside gp_ops_init's pthread_once (gp_ops_register_builtin), so it must not call
   * gp_op_find, which would wait on that once forever: scan with gp_op_at, which does not. */
  const GPOp *op = NULL;
  for (int32_t i = 0; !op; i++) {
    const GPOp *o = gp_op_at(i);
    if (!o) break;
    if (strcmp(o->name, op_name) == 0) op = o; /* the first registration: built-ins come first */
  }
  if (!op || gp_op_set_kernel(op, fn, NULL) != 0) {
    fprintf(stderr, "graphpass: no built-in op '%s' to attach a kernel to\n", op_name);
    abort();
  }
}

void gp_kernels_register_builtin(void) {
  gp_kernels_register_elemwise();
  gp_kernels_register_reduce();
  gp_kernels_register_nn();
  gp_kernels_register_transform();
  gp_kernels_register_norm();
  gp_kernels_register_logic();
  gp_kernels_register_sort();
  gp_kernels_register_index();
  gp_kernels_register_image();
}

/* ------------------------------------------------------------------------------------------ */

int gp_k_dtype(DLDataType dt) {
  if (dt.lanes != 1) return -1;
  switch (dt.code) {
  case kDLFloat: return dt.bits == 16 ? GP_K_F16 : dt.bits == 32 ? GP_K_F32 : dt.bits == 64 ? GP_K_F64 : -1;
  case kDLInt:
    return dt.bits == 8 ? GP_K_I8 : dt.bits == 16 ? GP_K_I16 : dt.bits == 32 ? GP_K_I32 : dt.bits == 64 ? GP_K_I64 : -1;
  case kDLUInt:
    return dt.bits == 1 ? GP_K_BOOL : dt.bits == 8 ? GP_K_U8 : dt.bits == 16 ? GP_K_U16 : dt.bits == 32 ? GP_K_U32
           : dt.bits == 64 ? GP_K_U64 : -1;
  default: return -1;
  }
}

int gp_k_dtype_check(DLDataType dt, const char *what, int *out) {
  int k = gp_k_dtype(dt);
  if (k < 0) {
    char b[24];
    gp_error_set(GP_ERR_UNSUPPORTED, "%s: dtype %s is not supported", what, gp_dtype_str(dt, b));
    return -1;
  }
  *out = k;
  return 0;
}

size_t gp_k_elem_size(int k) {
  switch (k) {
#define GP_K_SIZE(name, ctype) \
  case GP_K_##name: return sizeof(ctype);
    GP_K_FOR_EACH_DTYPE(GP_K_SIZE)
#undef GP_K_SIZE
  default: return 0;
  }
}

float gp_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
  if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else if (exp) {
    x = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (!mant) {
    x = sign;
  } else { /* subnormal: normalize */
    int e = -1;
    do {
      e++;
      mant <<= 1;
    } while (!(mant & 0x400u));
    x = sign | ((uint32_t)(112 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}

uint16_t gp_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
  int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
  if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return (uint16_t)sign;
    mant |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - exp);
    uint32_t hm = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (hm & 1))) hm++;
    return (uint16_t)(sign | hm);
  }
  uint32_t hm = mant >> 13, rem = mant & 0x1fffu;
  uint32_t r = sign | ((uint32_t)exp << 10) | hm;
  if (rem > 0x1000u || (rem == 0x1000u && (hm & 1))) r++; /* may carry into the exponent: correct */
  return (uint16_t)r;
}

uint16_t gp_f64_to_f16(double d) {
  /* Round to odd into float (24 bits >= 11 + 2), then to nearest even into half: the same
   * result as rounding d directly. */
  float f = (float)d;
  if (!isnan(d) && (double)f != d) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if (fabs((double)f) > fabs(d)) x--; /* truncate toward zero (f is not 0 here) */
    x |= 1u;                             /* sticky bit */
    memcpy(&f, &x, 4);
  }
  return gp_f32_to_f16(f);
}

double gp_k_load_f64(const void *p, int k) {
  switch (k) {
  case GP_K_BOOL:
  case GP_K_U8: return *(const uint8_t *)p;
  case GP_K_U16: return *(const uint16_t *)p;
  case GP_K_U32: return *(const uint32_t *)p;
  case GP_K_U64: return (double)*(const uint64_t *)p;
  case GP_K_I8: return *(const int8_t *)p;
  case GP_K_I16: return *(const int16_t *)p;
  case GP_K_I32: return *(const int32_t *)p;
  case GP_K_I64: return (double)*(const int64_t *)p;
  case GP_K_F16: return gp_f16_to_f32(*(const uint16_t *)p);
  case GP_K_F32: return *(const float *)p;
  case GP_K_F64: return *(const double *)p;
  default: return 0;
  }
}

int64_t gp_k_load_i64(const void *p, int k) {
  switch (k) {
  case GP_K_BOOL:
  case GP_K_U8: return *(const uint8_t *)p;
  case GP_K_U16: return *(const uint16_t *)p;
  case GP_K_U32: return *(const uint32_t *)p;
  case GP_K_U64: return (int64_t)*(const uint64_t *)p; /* two's complement */
  case GP_K_I8: return *(const int8_t *)p;
  case GP_K_I16: return *(const int16_t *)p;
  case GP_K_I32: return *(const int32_t *)p;
  case GP_K_I64: return *(const int64_t *)p;
  default: {
    double d = gp_k_load_f64(p, k);
    if (isnan(d)) return 0;
    if (d >= 9223372036854775807.0) return INT64_MAX;
    if (d <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)d;
  }
  }
}

static int64_t sat_i64(double v, double lo, double hi) {
  if (isnan(v)) return 0;
  if (v <= lo) return (int64_t)lo;
  if (v >= hi) return (int64_t)hi;
  return (int64_t)v;
}

void gp_k_store_f64(void *p, int k, double v) {
  switch (k) {
  case GP_K_BOOL: *(uint8_t *)p = v != 0; break;
  case GP_K_U8: *(uint8_t *)p = (uint8_t)sat_i64(v, 0, 255); break;
  case GP_K_U16: *(uint16_t *)p = (uint16_t)sat_i64(v, 0, 65535); break;
  case GP_K_U32: *(uint32_t *)p = (uint32_t)sat_i64(v, 0, 4294967295.0); break;
  case GP_K_U64:
    *(uint64_t *)p = isnan(v) || v <= 0 ? 0 : v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v;
    break;
  case GP_K_I8: *(int8_t *)p = (int8_t)sat_i64(v, -128, 127); break;
  case GP_K_I16: *(int16_t *)p = (int16_t)sat_i64(v, -32768, 32767); break;
  case GP_K_I32: *(int32_t *)p = (int32_t)sat_i64(v, -2147483648.0, 2147483647.0); break;
  case GP_K_I64:
    *(int64_t *)p = isnan(v) ? 0 : v >= 9223372036854775807.0 ? INT64_MAX : v <= -9223372036854775808.0 ? INT64_MIN : (int64_t)v;
    break;
  case GP_K_F16: *(uint16_t *)p = gp_f64_to_f16(v); break;
  case GP_K_F32: *(float *)p = (float)v; break;
  case GP_K_F64: *(double *)p = v; break;
  default: break;
  }
}

void gp_k_store_i64(void *p, int k, int64_t v) {
  switch (k) {
  case GP_K_BOOL: *(uint8_t *)p = v != 0; break;
  case GP_K_U8: *(uint8_t *)p = (uint8_t)v; break;   /* wraps, as C's conversion */
  case GP_K_U16: *(uint16_t *)p = (uint16_t)v; break;
  case GP_K_U32: *(uint32_t *)p = (uint32_t)v; break;
  case GP_K_U64: *(uint64_t *)p = (uint64_t)v; break;
  case GP_K_I8: *(int8_t *)p = (int8_t)(uint8_t)v; break;
  case GP_K_I16: *(int16_t *)p = (int16_t)(uint16_t)v; break;
  case GP_K_I32: *(int32_t *)p = (int32_t)(uint32_t)v; break;
  case GP_K_I64: *(int64_t *)p = v; break;
  default: gp_k_store_f64(p, k, (double)v); break;
  }
}

/* ------------------------------------------------------------------------------------------ */

void gp_k_view(const DLTensor *t, GPKView *v) {
  v->data = (char *)t->data + t->byte_offset;
  v->ndim = t->ndim;
  v->kdt = gp_k_dtype(t->dtype);
  v->elem = gp_dtype_bytes(t->dtype);
  v->numel = 1;
  v->compact = true;
  int64_t expect = 1;
  for (int32_t i = t->ndim - 1; i >= 0; i--) {
    v->shape[i] = t->shape[i];
    v->strides[i] = t->strides ? t->strides[i] : expect;
    if (t->shape[i] != 1 && v->strides[i] != expect) v->compact = false;
    expect *= t->shape[i];
  }
  for (int32_t i = 0; i < t->ndim; i++) v->numel *= t->shape[i];
}

int64_t gp_k_offset_of(const GPKView *v, int64_t flat) {
  if (v->compact) return flat;
  int64_t off = 0;
  for (int32_t i = v->ndim - 1; i >= 0 && flat; i--) {
    int64_t d = v->shape[i];
    off += (flat % d) * v->strides[i];
    flat /= d;
  }
  return off;
}

const void *gp_k_compact(const DLTensor *t, void **scratch) {
  *scratch = NULL;
  GPKView v;
  gp_k_view(t, &v);
  if (v.compact) return v.data;
  char *out = gp_malloc(v.numel ? (size_t)v.numel * v.elem : 1);
  if (!v.numel) {
    *scratch = out;
    return out;
  }
  /* odometer over all but the last axis, contiguous copies of the last when its stride is 1 */
  int32_t nd = v.ndim;
  int64_t inner = v.shape[nd - 1], ist = v.strides[nd - 1];
  int64_t idx[GP_K_MAX_RANK] = {0};
  int64_t off = 0;
  char *dst = out;
  for (int64_t r = 0, rows = v.numel / inner; r < rows; r++) {
    if (ist == 1) {
      memcpy(dst, v.data + off * (int64_t)v.elem, (size_t)inner * v.elem);
      dst += inner * (int64_t)v.elem;
    } else {
      for (int64_t j = 0; j < inner; j++, dst += v.elem) memcpy(dst, v.data + (off + j * ist) * (int64_t)v.elem, v.elem);
    }
    for (int32_t a = nd - 2; a >= 0; a--) {
      off += v.strides[a];
      if (++idx[a] < v.shape[a]) break;
      off -= v.strides[a] * v.shape[a];
      idx[a] = 0;
    }
  }
  *scratch = out;
  return out;
}

/* ------------------------------------------------------------------------------------------ */

int gp_k_bcast_init(GPKBcast *b, const DLTensor *out, int32_t nin, const GPKView *const *in) {
  if (nin > GP_K_BCAST_MAX) {
    gp_error_set(GP_ERR_UNSUPPORTED, "broadcast of %d inputs (at most %d)", (int)nin, GP_K_BCAST_MAX);
    return -1;
  }
  b->nin = nin;
  b->ndim = out->ndim;
  for (int32_t a = 0; a < out->ndim; a++) b->shape[a] = out->shape[a];
  for (int32_t i = 0; i < nin; i++) {
    const GPKView *v = in[i];
    if (v->ndim > out->ndim) goto bad;
    for (int32_t a = 0; a < out->ndim; a++) {
      int32_t ia = a - (out->ndim - v->ndim);
      if (ia < 0) {
        b->stride[i][a] = 0;
      } else if (v->shape[ia] == out->shape[a]) {
        b->stride[i][a] = out->shape[a] == 1 ? 0 : v->strides[ia];
      } else if (v->shape[ia] == 1) {
        b->stride[i][a] = 0;
      } else {
        goto bad;
      }
    }
    continue;
  bad:
    gp_error_set(GP_ERR_VALUE, "input %d of rank %d cannot broadcast to the output shape", (int)i, (int)v->ndim);
    return -1;
  }
  int64_t numel = 1;
  for (int32_t a = 0; a < out->ndim; a++) numel *= out->shape[a];
  b->inner = out->ndim ? out->shape[out->ndim - 1] : 1;
  b->rows = b->inner ? numel / b->inner : 0;
  for (int32_t i = 0; i < nin; i++) b->inner_stride[i] = out->ndim ? b->stride[i][out->ndim - 1] : 0;
  return 0;
}

void gp_k_bcast_row(const GPKBcast *b, int64_t row, int64_t *offs) {
  for (int32_t i = 0; i < b->nin; i++) offs[i] = 0;
  for (int32_t a = b->ndim - 2; a >= 0 && row; a--) {
    int64_t d = b->shape[a], r = row % d;
    row /= d;
    for (int32_t i = 0; i < b->nin; i++) offs[i] += r * b->stride[i][a];
  }
}

/* ------------------------------------------------------------------------------------------ */

typedef struct {
  void (*fn)(void *ctx, int64_t begin, int64_t end);
  void *ctx;
  int64_t begin, end;
} Chunk;

static void *chunk_main(void *p) {
  Chunk *c = p;
  c->fn(c->ctx, c->begin, c->end);
  return NULL;
}

void gp_k_parallel_for(int32_t nthreads, int64_t n, int64_t grain,
                       void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int64_t parts = (n + grain - 1) / grain;
  if (nthreads > 64) nthreads = 64;
  if (parts > nthreads) parts = nthreads;
  if (parts <= 1) {
    fn(ctx, 0, n);
    return;
  }
  Chunk ch[64];
  pthread_t th[64];
  bool started[64] = {false};
  int64_t per = n / parts, extra = n % parts, at = 0;
  for (int64_t p = 0; p < parts; p++) {
    int64_t len = per + (p < extra);
    ch[p] = (Chunk){fn, ctx, at, at + len};
    at += len;
  }
  for (int64_t p = 1; p < parts; p++) started[p] = pthread_create(&th[p], NULL, chunk_main, &ch[p]) == 0;
  fn(ctx, ch[0].begin, ch[0].end);
  for (int64_t p = 1; p < parts; p++) {
    if (started[p])
      pthread_join(th[p], NULL);
    else
      fn(ctx, ch[p].begin, ch[p].end); /* could not start a thread: run it here */
  }
}

bool gp_k_axes_of(const char *s, const char *canon, int32_t pos[5]) {
  size_t r = strlen(canon);
  if (r > 5 || strlen(s) != r) return false;
  for (size_t i = 0; i < r; i++) {
    const char *p = strchr(s, canon[i]);
    if (!p) return false;
    pos[i] = (int32_t)(p - s);
  }
  return true;
}

void gp_k_permute_copy(const GPKView *v, const int64_t *cshape, const int32_t *pos, int32_t r, char *c, bool to_canon) {
  int64_t total = 1;
  for (int32_t i = 0; i < r; i++) total *= cshape[i];
  for (int64_t f = 0; f < total; f++) {
    int64_t rem = f, off = 0;
    for (int32_t i = r - 1; i >= 0; i--) {
      off += (rem % cshape[i]) * v->strides[pos[i]];
      rem /= cshape[i];
    }
    char *vp = v->data + off * (int64_t)v->elem, *cp = c + (size_t)f * v->elem;
    if (to_canon) memcpy(cp, vp, v->elem);
    else memcpy(vp, cp, v->elem);
  }
}

static bool is_identity(const int32_t *pos, int32_t r) {
  for (int32_t i = 0; i < r; i++)
    if (pos[i] != i) return false;
  return true;
}

int gp_k_run_canonical(const GPKernelArgs *a, const DLTensor *x, const int32_t *xpos, DLTensor *y,
                       const int32_t *ypos, GPKCanonRun run, void *user) {
  int32_t r = x->ndim;
  assert(r >= 1 && r <= 5 && y->ndim == r);
  bool xi = is_identity(xpos, r), yi = is_identity(ypos, r);
  if (xi && yi) return run(a, x, y, user);
  int64_t xs[5], ys[5];
  for (int32_t i = 0; i < r; i++) xs[i] = x->shape[xpos[i]], ys[i] = y->shape[ypos[i]];
  DLTensor xc = *x, yc = *y;
  GPKView xv, yv;
  gp_k_view(x, &xv);
  gp_k_view(y, &yv);
  char *xbuf = NULL, *ybuf = NULL;
  if (!xi) {
    xbuf = gp_malloc(xv.numel ? (size_t)xv.numel * xv.elem : 1);
    gp_k_permute_copy(&xv, xs, xpos, r, xbuf, true);
    xc.data = xbuf, xc.shape = xs, xc.strides = NULL, xc.byte_offset = 0;
  }
  if (!yi) {
    ybuf = gp_calloc(yv.numel ? (size_t)yv.numel : 1, yv.elem); /* zeroed, as the evaluator's results */
    yc.data = ybuf, yc.shape = ys, yc.strides = NULL, yc.byte_offset = 0;
  }
  int rc = run(a, &xc, &yc, user);
  if (rc == 0 && !yi) gp_k_permute_copy(&yv, ys, ypos, r, ybuf, false);
  gp_free(xbuf);
  gp_free(ybuf);
  return rc;
}
