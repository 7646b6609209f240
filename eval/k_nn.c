/* k_nn.c -- kernels of the neural-network ops: bias_add, batch_norm (inference), dropout
 * (inference), max/avg/global-avg pooling, softmax, lrn; conv2d and dense are in
 * eval/k_conv.c.  All registered by gp_kernels_register_nn() (nn.batch_flatten is a reshape:
 * eval/k_transform.c).
 *
 * Inputs are read compact (gp_k_compact copies strided ones).  Computation runs in float for
 * float32 and float16 (rounded on store), in double for float64 and in int64 for the integer
 * dtypes (wrapping on store, as the integer ops of TVM do); ops that only make sense on floats
 * (batch_norm, softmax, lrn) refuse integers with GP_ERR_UNSUPPORTED.
 */
#include "eval/kernel.h"

#include <math.h>

/* Defined in eval/k_conv.c. */
int gp_knn_conv2d(const GPKernelArgs *a, void *user);
int gp_knn_dense(const GPKernelArgs *a, void *user);
int gp_knn_convnd(const GPKernelArgs *a, void *user);
int gp_knn_conv_transpose(const GPKernelArgs *a, void *user);
int gp_knn_batch_matmul(const GPKernelArgs *a, void *user);
int gp_knn_matmul(const GPKernelArgs *a, void *user);
const void *gp_knn_load_as(const DLTensor *t, int k, void **scratch);
void gp_knn_store_from(DLTensor *out, const void *src, int ksrc);

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */

static int64_t prod(const int64_t *shape, int32_t from, int32_t to) {
  int64_t n = 1;
  for (int32_t i = from; i < to; i++) n *= shape[i];
  return n;
}

static int check_io(const GPKernelArgs *a, int32_t nin, int32_t nout) {
  if (a->num_inputs != nin || a->num_outputs != nout) {
    gp_error_set(GP_ERR_VALUE, "expects %d inputs and %d outputs, got %d and %d", (int)nin, (int)nout,
                 (int)a->num_inputs, (int)a->num_outputs);
    return -1;
  }
  return 0;
}

/* The kind computations run in for dtype k: F32 for float16/32, F64, or I64 for integers. */
static int compute_kind(int k) { return k == GP_K_F16 || k == GP_K_F32 ? GP_K_F32 : k == GP_K_F64 ? GP_K_F64 : GP_K_I64; }

/* Kernel dtype of t, refusing bool and (unless ints) the integer dtypes. */
static int arith_dtype(const DLTensor *t, const char *what, bool ints, int *k) {
  if (gp_k_dtype_check(t->dtype, what, k) != 0) return -1;
  if (*k == GP_K_BOOL || (!ints && !gp_k_is_float(*k))) {
    char b[24];
    gp_error_set(GP_ERR_UNSUPPORTED, "%s: dtype %s is not supported (%s)", what, gp_dtype_str(t->dtype, b),
                 ints ? "numbers only" : "float16, float32 or float64");
    return -1;
  }
  return 0;
}

/* Where to compute an output of compute kind ck: the output itself when its dtype is ck, else a
 * temporary (*tmp) that out_done converts into it. */
static void *out_begin(DLTensor *t, int ck, void **tmp) {
  *tmp = NULL;
  if (gp_k_dtype(t->dtype) == ck) return (char *)t->data + t->byte_offset;
  int64_t n = gp_k_numel(t);
  return *tmp = gp_malloc(n ? (size_t)n * gp_k_elem_size(ck) : 1);
}

static void out_done(DLTensor *t, void *tmp, int ck) {
  if (tmp) gp_knn_store_from(t, tmp, ck);
  gp_free(tmp);
}

/* Copy t (any dtype, possibly strided) into the compact output out of the same dtype. */
static void copy_compact(DLTensor *out, const DLTensor *t) {
  void *s = NULL;
  const void *src = gp_k_compact(t, &s);
  size_t n = (size_t)gp_k_numel(t) * gp_dtype_bytes(t->dtype);
  if (n) memcpy((char *)out->data + out->byte_offset, src, n);
  gp_free(s);
}

static int norm_axis(int64_t axis, int32_t ndim, int32_t *out) {
  if (axis < -(int64_t)ndim || axis >= ndim) {
    gp_error_set(GP_ERR_VALUE, "axis %lld is out of range for rank %d", (long long)axis, (int)ndim);
    return -1;
  }
  *out = (int32_t)(axis < 0 ? axis + ndim : axis);
  return 0;
}

#define GRAIN_ELEMS 32768
static int64_t grain_for(int64_t per_item) {
  if (per_item < 1) per_item = 1;
  int64_t g = GRAIN_ELEMS / per_item;
  return g < 1 ? 1 : g;
}

static int32_t nthreads_of(const GPKernelArgs *a) { return a->num_threads > 0 ? a->num_threads : 1; }

/* Wrapping integer addition (no signed-overflow UB). */
static inline int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

/* ------------------------------------------------------------------------------------------ */
/* nn.bias_add: y[o, c, i] = x[o, c, i] + b[c]                                                 */

typedef struct BiasAdd {
  const void *x, *b;
  void *y;
  int64_t C, inner;
} BiasAdd;

#define GP_DEFINE_BIAS_ADD(T, SFX, ADD)                                                          \
  static void bias_add_##SFX(void *vctx, int64_t r0, int64_t r1) {                               \
    const BiasAdd *c = vctx;                                                                     \
    const T *x = c->x, *b = c->b;                                                                \
    T *y = c->y;                                                                                 \
    for (int64_t r = r0; r < r1; r++) { /* r = o * C + ch */                                     \
      T bv = b[r % c->C];                                                                        \
      const T *xr = x + r * c->inner;                                                            \
      T *yr = y + r * c->inner;                                                                  \
      for (int64_t i = 0; i < c->inner; i++) yr[i] = ADD(xr[i], bv);                            \
    }                                                                                            \
  }
#define GP_PLUS(a, b) ((a) + (b))
GP_DEFINE_BIAS_ADD(float, f32, GP_PLUS)
GP_DEFINE_BIAS_ADD(double, f64, GP_PLUS)
GP_DEFINE_BIAS_ADD(int64_t, i64, wrap_add)

static int k_bias_add(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (check_io(a, 2, 1) != 0) return -1;
  const DLTensor *xt = a->inputs[0], *bt = a->inputs[1];
  DLTensor *yt = a->outputs[0];
  int kx, kb;
  int32_t axis;
  if (arith_dtype(xt, "data", true, &kx) != 0 || arith_dtype(bt, "bias", true, &kb) != 0 ||
      norm_axis(gp_ops_attr_int(a->op, a->attrs, "axis"), xt->ndim, &axis) != 0)
    return -1;
  if (bt->ndim != 1 || bt->shape[0] != xt->shape[axis]) {
    gp_error_set(GP_ERR_VALUE, "bias must have shape (%lld)", (long long)xt->shape[axis]);
    return -1;
  }
  int64_t n = gp_k_numel(xt);
  if (n == 0) return 0;
  int ck = compute_kind(kx);
  void *xs = NULL, *bs = NULL, *tmp;
  BiasAdd c = {gp_knn_load_as(xt, ck, &xs), gp_knn_load_as(bt, ck, &bs), out_begin(yt, ck, &tmp),
               xt->shape[axis], prod(xt->shape, axis + 1, xt->ndim)};
  int64_t rows = n / c.inner;
  gp_k_parallel_for(nthreads_of(a), rows, grain_for(c.inner),
                    ck == GP_K_F32 ? bias_add_f32 : ck == GP_K_F64 ? bias_add_f64 : bias_add_i64, &c);
  out_done(yt, tmp, ck);
  gp_free(xs);
  gp_free(bs);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* nn.batch_norm (inference): y = (x - mean) / sqrt(var + eps) * gamma + beta, computed as
 * x * s + t per channel; outputs 1 and 2 are moving_mean and moving_var, as TVM returns them. */

typedef struct Affine {
  const void *x;
  void *y;
  const double *s, *t;
  int64_t C, inner;
} Affine;

#define GP_DEFINE_AFFINE(T, SFX)                                                                 \
  static void affine_##SFX(void *vctx, int64_t r0, int64_t r1) {                                 \
    const Affine *c = vctx;                                                                      \
    const T *x = c->x;                                                                           \
    T *y = c->y;                                                                                 \
    for (int64_t r = r0; r < r1; r++) {                                                          \
      T s = (T)c->s[r % c->C], t = (T)c->t[r % c->C];                                            \
      const T *xr = x + r * c->inner;                                                            \
      T *yr = y + r * c->inner;                                                                  \
      for (int64_t i = 0; i < c->inner; i++) yr[i] = xr[i] * s + t;                              \
    }                                                                                            \
  }
GP_DEFINE_AFFINE(float, f32)
GP_DEFINE_AFFINE(double, f64)

static int k_batch_norm(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (check_io(a, 5, 3) != 0) return -1;
  static const char *const names[] = {"data", "gamma", "beta", "moving_mean", "moving_var"};
  int k[5];
  for (int i = 0; i < 5; i++)
    if (arith_dtype(a->inputs[i], names[i], false, &k[i]) != 0) return -1;
  const DLTensor *xt = a->inputs[0];
  int32_t axis;
  if (norm_axis(gp_ops_attr_int(a->op, a->attrs, "axis"), xt->ndim, &axis) != 0) return -1;
  int64_t C = xt->shape[axis];
  for (int i = 1; i < 5; i++)
    if (a->inputs[i]->ndim != 1 || a->inputs[i]->shape[0] != C) {
      gp_error_set(GP_ERR_VALUE, "%s must have shape (%lld)", names[i], (long long)C);
      return -1;
    }
  double eps = gp_ops_attr_float(a->op, a->attrs, "epsilon");
  bool center = gp_ops_attr_bool(a->op, a->attrs, "center"), scale = gp_ops_attr_bool(a->op, a->attrs, "scale");
  void *vs[4] = {NULL, NULL, NULL, NULL};
  const double *v[4];
  for (int i = 0; i < 4; i++) v[i] = gp_knn_load_as(a->inputs[i + 1], GP_K_F64, &vs[i]);
  double *st = gp_malloc((size_t)(2 * C + 1) * sizeof(double));
  for (int64_t c = 0; c < C; c++) {
    double s = 1.0 / sqrt(v[3][c] + eps);
    if (scale) s *= v[0][c];
    st[c] = s;
    st[C + c] = (center ? v[1][c] : 0.0) - v[2][c] * s;
  }
  for (int i = 0; i < 4; i++) gp_free(vs[i]);
  int64_t n = gp_k_numel(xt);
  if (n > 0) {
    int ck = compute_kind(k[0]);
    void *xs = NULL, *tmp;
    Affine c = {gp_knn_load_as(xt, ck, &xs), out_begin(a->outputs[0], ck, &tmp), st, st + C, C,
                prod(xt->shape, axis + 1, xt->ndim)};
    gp_k_parallel_for(nthreads_of(a), n / c.inner, grain_for(c.inner), ck == GP_K_F32 ? affine_f32 : affine_f64,
                      &c);
    out_done(a->outputs[0], tmp, ck);
    gp_free(xs);
  }
  gp_free(st);
  copy_compact(a->outputs[1], a->inputs[3]);
  copy_compact(a->outputs[2], a->inputs[4]);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* nn.dropout (inference): the input, and a mask of ones                                       */

static int k_dropout(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (check_io(a, 1, 2) != 0) return -1;
  int k;
  if (gp_k_dtype_check(a->inputs[0]->dtype, "data", &k) != 0) return -1;
  copy_compact(a->outputs[0], a->inputs[0]);
  DLTensor *m = a->outputs[1];
  int64_t n = gp_k_numel(m);
  size_t es = gp_k_elem_size(k);
  char *p = (char *)m->data + m->byte_offset;
  if (n == 0) return 0;
  gp_k_store_f64(p, k, 1.0);
  for (int64_t done = 1; done < n;) { /* doubling copies of the first element */
    int64_t c = done < n - done ? done : n - done;
    memcpy(p + (size_t)done * es, p, (size_t)c * es);
    done += c;
  }
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Pools.  The data is viewed as [outer, A, mid, B, inner] where A and B are H and W in layout
 * order; a work item is one output row (outer, mid, oh), all OW x inner outputs of it. */

typedef struct Pool {
  const void *x;
  void *y;
  int64_t outer, mid, inner;
  int64_t H, W, OH, OW;
  int64_t xsO, xsM, xsH, xsW; /* element strides of the input */
  int64_t ysO, ysM, ysH, ysW; /* and of the output */
  int64_t KH, KW, sh, sw, dh, dw, pt, pl, pb, pr;
  bool is_max, count_pad;
  int64_t lowest_i; /* max of a window of padding only, integer dtypes: the dtype's minimum */
} Pool;

/* Taps k in [0, K) with 0 <= start + k * d < IN, as [*k0, *k1). */
static void tap_range(int64_t K, int64_t IN, int64_t start, int64_t d, int64_t *k0, int64_t *k1) {
  int64_t a = start < 0 ? (-start + d - 1) / d : 0;
  int64_t b = IN - 1 - start >= 0 ? (IN - 1 - start) / d + 1 : 0;
  if (b > K) b = K;
  if (a > b) a = b;
  *k0 = a;
  *k1 = b;
}

/* TVM's divisor with count_include_pad along one axis: the taps up to the end of the padding
 * (excluding ceil_mode's extra), at least 0. */
static int64_t pad_taps(int64_t K, int64_t IN, int64_t start, int64_t d, int64_t pad_end) {
  int64_t end = start + (K - 1) * d, lim = IN + pad_end - 1;
  if (end > lim) end = lim;
  return end < start ? 0 : (end - start) / d + 1;
}

static inline float avg_f32(float acc, int64_t n) { return acc / (float)n; }
static inline double avg_f64(double acc, int64_t n) { return acc / (double)n; }
static inline int64_t avg_i64(int64_t acc, int64_t n) { return acc / n; }

#define GP_DEFINE_POOL(T, SFX, LOWEST, ADD)                                                      \
  static void pool_##SFX(void *vctx, int64_t t0, int64_t t1) {                                   \
    const Pool *p = vctx;                                                                        \
    const T *x = p->x;                                                                           \
    T *y = p->y;                                                                                 \
    for (int64_t t = t0; t < t1; t++) { /* t = (o * mid + m) * OH + oh */                        \
      int64_t oh = t % p->OH, om = t / p->OH, m = om % p->mid, o = om / p->mid;                  \
      const T *xb = x + o * p->xsO + m * p->xsM;                                                 \
      int64_t hs = oh * p->sh - p->pt, kh0, kh1;                                                 \
      tap_range(p->KH, p->H, hs, p->dh, &kh0, &kh1);                                             \
      for (int64_t ow = 0; ow < p->OW; ow++) {                                                   \
        T *yp = y + o * p->ysO + m * p->ysM + oh * p->ysH + ow * p->ysW;                         \
        int64_t ws = ow * p->sw - p->pl, kw0, kw1;                                               \
        tap_range(p->KW, p->W, ws, p->dw, &kw0, &kw1);                                           \
        T init = p->is_max ? (LOWEST) : (T)0;                                                    \
        for (int64_t e = 0; e < p->inner; e++) yp[e] = init;                                     \
        for (int64_t kh = kh0; kh < kh1; kh++)                                                   \
          for (int64_t kw = kw0; kw < kw1; kw++) {                                               \
            const T *xp = xb + (hs + kh * p->dh) * p->xsH + (ws + kw * p->dw) * p->xsW;          \
            if (p->is_max)                                                                       \
              for (int64_t e = 0; e < p->inner; e++) yp[e] = xp[e] > yp[e] ? xp[e] : yp[e];      \
            else                                                                                 \
              for (int64_t e = 0; e < p->inner; e++) yp[e] = ADD(yp[e], xp[e]);                  \
          }                                                                                      \
        if (!p->is_max) {                                                                        \
          int64_t cnt = p->count_pad ? pad_taps(p->KH, p->H, hs, p->dh, p->pb) *                 \
                                           pad_taps(p->KW, p->W, ws, p->dw, p->pr)               \
                                     : (kh1 - kh0) * (kw1 - kw0);                                \
          if (cnt < 1) cnt = 1;                                                                  \
          for (int64_t e = 0; e < p->inner; e++) yp[e] = avg_##SFX(yp[e], cnt);                  \
        }                                                                                        \
      }                                                                                          \
    }                                                                                            \
  }
GP_DEFINE_POOL(float, f32, -INFINITY, GP_PLUS)
GP_DEFINE_POOL(double, f64, -INFINITY, GP_PLUS)
GP_DEFINE_POOL(int64_t, i64, p->lowest_i, wrap_add)

static int64_t int_lowest(int k) {
  switch (k) {
  case GP_K_I8: return INT8_MIN;
  case GP_K_I16: return INT16_MIN;
  case GP_K_I32: return INT32_MIN;
  case GP_K_I64: return INT64_MIN;
  default: return 0; /* uint8 */
  }
}

/* Pool the H and W axes of the input (positions h and w) into the output; window attributes
 * in p (KH.. pr, is_max, count_pad) are filled by the caller. */
static int pool_run(const GPKernelArgs *a, int32_t h, int32_t w, Pool *p) {
  const DLTensor *xt = a->inputs[0];
  DLTensor *yt = a->outputs[0];
  int k;
  if (arith_dtype(xt, "data", true, &k) != 0) return -1;
  if (h < 0 || w < 0 || h >= xt->ndim || w >= xt->ndim || yt->ndim != xt->ndim) {
    gp_error_set(GP_ERR_VALUE, "layout does not match data of rank %d", (int)xt->ndim);
    return -1;
  }
  int32_t a0 = h < w ? h : w, a1 = h < w ? w : h, nd = xt->ndim;
  const int64_t *xs = xt->shape, *ys = yt->shape;
  p->H = xs[h], p->W = xs[w], p->OH = ys[h], p->OW = ys[w];
  p->outer = prod(xs, 0, a0);
  p->mid = prod(xs, a0 + 1, a1);
  p->inner = prod(xs, a1 + 1, nd);
  /* compact strides of [outer, A, mid, B, inner] */
  int64_t xA = xs[a0], xB = xs[a1], yA = ys[a0], yB = ys[a1];
  p->xsM = xB * p->inner, p->ysM = yB * p->inner;
  p->xsO = xA * p->mid * p->xsM, p->ysO = yA * p->mid * p->ysM;
  int64_t xsA = p->mid * p->xsM, ysA = p->mid * p->ysM;
  p->xsH = h == a0 ? xsA : p->inner, p->xsW = w == a0 ? xsA : p->inner;
  p->ysH = h == a0 ? ysA : p->inner, p->ysW = w == a0 ? ysA : p->inner;
  p->lowest_i = int_lowest(k);
  if (gp_k_numel(yt) == 0) return 0;
  int ck = compute_kind(k);
  void *xsc = NULL, *tmp;
  p->x = gp_knn_load_as(xt, ck, &xsc);
  p->y = out_begin(yt, ck, &tmp);
  int64_t items = p->outer * p->mid * p->OH;
  gp_k_parallel_for(nthreads_of(a), items, grain_for(p->OW * p->inner * p->KH * p->KW),
                    ck == GP_K_F32 ? pool_f32 : ck == GP_K_F64 ? pool_f64 : pool_i64, p);
  out_done(yt, tmp, ck);
  gp_free(xsc);
  return 0;
}

/* H and W positions of the "layout" attribute (they must not be split); out_layout must be empty
 * or the same. */
static int pool_layout(const GPKernelArgs *a, int32_t *h, int32_t *w) {
  const char *ls = gp_ops_attr_str(a->op, a->attrs, "layout");
  const char *ol = gp_ops_attr_str(a->op, a->attrs, "out_layout");
  GPLayout l;
  if (gp_layout_parse(ls, "layout", &l) != 0) return -1;
  *h = gp_layout_index(&l, 'H');
  *w = gp_layout_index(&l, 'W');
  if (*h < 0 || *w < 0 || gp_layout_index(&l, 'h') >= 0 || gp_layout_index(&l, 'w') >= 0) {
    gp_error_set(GP_ERR_UNSUPPORTED, "layout \"%s\" is not supported (it needs unsplit H and W)", ls);
    return -1;
  }
  if (ol[0] && strcmp(ol, ls) != 0) {
    gp_error_set(GP_ERR_UNSUPPORTED, "out_layout \"%s\" differs from layout \"%s\"", ol, ls);
    return -1;
  }
  return 0;
}

static int attr_pair(const GPKernelArgs *a, const char *key, int64_t out[2]) {
  int32_t n;
  const int64_t *v = gp_ops_attr_ints(a->op, a->attrs, key, &n);
  if (n != 1 && n != 2) {
    gp_error_set(GP_ERR_VALUE, "%s must have 1 or 2 values", key);
    return -1;
  }
  out[0] = v[0];
  out[1] = v[n - 1];
  if (out[0] < 1 || out[1] < 1) {
    gp_error_set(GP_ERR_VALUE, "%s must be >= 1", key);
    return -1;
  }
  return 0;
}

static int pool2d(const GPKernelArgs *a, bool is_max) {
  if (check_io(a, 1, 1) != 0) return -1;
  int32_t h, w, npad;
  int64_t ps[2], st[2], dil[2], pad[4];
  const int64_t *pv = gp_ops_attr_ints(a->op, a->attrs, "padding", &npad);
  if (pool_layout(a, &h, &w) != 0 || attr_pair(a, "pool_size", ps) != 0 || attr_pair(a, "strides", st) != 0 ||
      attr_pair(a, "dilation", dil) != 0 || gp_ops_pad4(pv, npad, "padding", pad) != 0)
    return -1;
  Pool p = {0};
  p.KH = ps[0], p.KW = ps[1], p.sh = st[0], p.sw = st[1], p.dh = dil[0], p.dw = dil[1];
  p.pt = pad[0], p.pl = pad[1], p.pb = pad[2], p.pr = pad[3];
  p.is_max = is_max;
  p.count_pad = !is_max && gp_ops_attr_bool(a->op, a->attrs, "count_include_pad");
  return pool_run(a, h, w, &p);
}

static int k_max_pool2d(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return pool2d(a, true);
}

static int k_avg_pool2d(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return pool2d(a, false);
}

static int global_pool2d(const GPKernelArgs *a, bool is_max) {
  if (check_io(a, 1, 1) != 0) return -1;
  int32_t h, w;
  if (pool_layout(a, &h, &w) != 0) return -1;
  const DLTensor *xt = a->inputs[0];
  if (h >= xt->ndim || w >= xt->ndim) {
    gp_error_set(GP_ERR_VALUE, "layout does not match data of rank %d", (int)xt->ndim);
    return -1;
  }
  Pool p = {0};
  p.KH = xt->shape[h], p.KW = xt->shape[w];
  p.sh = p.sw = p.dh = p.dw = 1;
  p.is_max = is_max;
  return pool_run(a, h, w, &p);
}

static int k_global_avg_pool2d(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return global_pool2d(a, false);
}

static int k_global_max_pool2d(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return global_pool2d(a, true);
}

/* ------------------------------------------------------------------------------------------ */
/* nn.softmax: exp(x - max) / sum, along axis                                                  */

typedef struct Softmax {
  const void *x;
  void *y;
  int64_t n, inner;
  bool log; /* nn.log_softmax: x - max - log(sum) */
} Softmax;

#define GP_DEFINE_SOFTMAX(T, SFX, EXP)                                                           \
  static void softmax_##SFX(void *vctx, int64_t o0, int64_t o1) {                                \
    const Softmax *c = vctx;                                                                     \
    int64_t n = c->n, in = c->inner;                                                             \
    double *sum = in > 1 ? gp_malloc((size_t)in * sizeof(double)) : NULL;                       \
    for (int64_t o = o0; o < o1; o++) {                                                          \
      const T *x = (const T *)c->x + o * n * in;                                                 \
      T *y = (T *)c->y + o * n * in;                                                             \
      if (in == 1) {                                                                             \
        T mx = x[0];                                                                             \
        for (int64_t j = 1; j < n; j++) mx = x[j] > mx ? x[j] : mx;                              \
        double s = 0;                                                                            \
        for (int64_t j = 0; j < n; j++) s += (double)(y[j] = EXP(x[j] - mx));                    \
        if (c->log) {                                                                            \
          double ls = log(s);                                                                    \
          for (int64_t j = 0; j < n; j++) y[j] = (T)((double)(x[j] - mx) - ls);                  \
          continue;                                                                              \
        }                                                                                        \
        T inv = (T)(1.0 / s);                                                                    \
        for (int64_t j = 0; j < n; j++) y[j] *= inv;                                             \
        continue;                                                                                \
      }                                                                                          \
      /* y's first row holds the running max, then each row its exp */                           \
      memcpy(y, x, (size_t)in * sizeof(T));                                                      \
      for (int64_t j = 1; j < n; j++)                                                            \
        for (int64_t i = 0; i < in; i++) y[i] = x[j * in + i] > y[i] ? x[j * in + i] : y[i];     \
      for (int64_t i = 0; i < in; i++) sum[i] = 0;                                               \
      for (int64_t j = n - 1; j >= 0; j--) /* row 0 last: it holds the max until then */         \
        for (int64_t i = 0; i < in; i++) {                                                       \
          T d = x[j * in + i] - y[i];                                                            \
          T e = EXP(d);                                                                          \
          sum[i] += (double)e;                                                                   \
          y[j * in + i] = c->log ? d : e;                                                        \
        }                                                                                        \
      if (c->log) {                                                                              \
        for (int64_t i = 0; i < in; i++) sum[i] = log(sum[i]);                                   \
        for (int64_t j = 0; j < n; j++)                                                          \
          for (int64_t i = 0; i < in; i++) y[j * in + i] = (T)((double)y[j * in + i] - sum[i]);  \
        continue;                                                                                \
      }                                                                                          \
      for (int64_t j = 0; j < n; j++)                                                            \
        for (int64_t i = 0; i < in; i++) y[j * in + i] = (T)((double)y[j * in + i] / sum[i]);   \
    }                                                                                            \
    gp_free(sum);                                                                                \
  }
GP_DEFINE_SOFTMAX(float, f32, expf)
GP_DEFINE_SOFTMAX(double, f64, exp)

static int softmax_common(const GPKernelArgs *a, bool log_) {
  if (check_io(a, 1, 1) != 0) return -1;
  const DLTensor *xt = a->inputs[0];
  int k;
  int32_t axis;
  if (arith_dtype(xt, "data", false, &k) != 0 ||
      norm_axis(gp_ops_attr_int(a->op, a->attrs, "axis"), xt->ndim, &axis) != 0)
    return -1;
  int64_t total = gp_k_numel(xt);
  if (total == 0) return 0;
  int ck = compute_kind(k);
  void *xs = NULL, *tmp;
  Softmax c = {gp_knn_load_as(xt, ck, &xs), out_begin(a->outputs[0], ck, &tmp), xt->shape[axis],
               prod(xt->shape, axis + 1, xt->ndim), log_};
  gp_k_parallel_for(nthreads_of(a), total / (c.n * c.inner), grain_for(c.n * c.inner * 4),
                    ck == GP_K_F32 ? softmax_f32 : softmax_f64, &c);
  out_done(a->outputs[0], tmp, ck);
  gp_free(xs);
  return 0;
}

static int k_softmax(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return softmax_common(a, false);
}

static int k_log_softmax(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return softmax_common(a, true);
}

/* ------------------------------------------------------------------------------------------ */
/* nn.lrn (TVM): y = x / (bias + alpha / size * sum(x^2 over channels [c - size/2,
 * c - size/2 + size)))^beta                                                                   */

typedef struct Lrn {
  const void *x;
  void *y;
  int64_t C, inner, size;
  double alpha, beta, bias;
} Lrn;

#define GP_DEFINE_LRN(T, SFX)                                                                    \
  static void lrn_##SFX(void *vctx, int64_t r0, int64_t r1) {                                    \
    const Lrn *c = vctx;                                                                         \
    for (int64_t r = r0; r < r1; r++) { /* r = o * C + ch */                                     \
      int64_t o = r / c->C, ch = r % c->C;                                                       \
      int64_t lo = ch - c->size / 2, hi = lo + c->size;                                          \
      if (lo < 0) lo = 0;                                                                        \
      if (hi > c->C) hi = c->C;                                                                  \
      const T *xo = (const T *)c->x + o * c->C * c->inner;                                       \
      T *yr = (T *)c->y + r * c->inner;                                                          \
      for (int64_t i = 0; i < c->inner; i++) {                                                   \
        double s = 0;                                                                            \
        for (int64_t q = lo; q < hi; q++) {                                                      \
          double v = (double)xo[q * c->inner + i];                                               \
          s += v * v;                                                                            \
        }                                                                                        \
        double d = pow(c->bias + c->alpha * s / (double)c->size, c->beta);                       \
        yr[i] = (T)((double)xo[ch * c->inner + i] / d);                                          \
      }                                                                                          \
    }                                                                                            \
  }
GP_DEFINE_LRN(float, f32)
GP_DEFINE_LRN(double, f64)

static int k_lrn(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (check_io(a, 1, 1) != 0) return -1;
  const DLTensor *xt = a->inputs[0];
  int k;
  int32_t axis;
  if (arith_dtype(xt, "data", false, &k) != 0 ||
      norm_axis(gp_ops_attr_int(a->op, a->attrs, "axis"), xt->ndim, &axis) != 0)
    return -1;
  int64_t size = gp_ops_attr_int(a->op, a->attrs, "size");
  if (size < 1) {
    gp_error_set(GP_ERR_VALUE, "size %lld must be >= 1", (long long)size);
    return -1;
  }
  int64_t total = gp_k_numel(xt);
  if (total == 0) return 0;
  int ck = compute_kind(k);
  void *xs = NULL, *tmp;
  Lrn c = {gp_knn_load_as(xt, ck, &xs),
           out_begin(a->outputs[0], ck, &tmp),
           xt->shape[axis],
           prod(xt->shape, axis + 1, xt->ndim),
           size,
           gp_ops_attr_float(a->op, a->attrs, "alpha"),
           gp_ops_attr_float(a->op, a->attrs, "beta"),
           gp_ops_attr_float(a->op, a->attrs, "bias")};
  gp_k_parallel_for(nthreads_of(a), total / c.inner, grain_for(c.inner * size), ck == GP_K_F32 ? lrn_f32 : lrn_f64,
                    &c);
  out_done(a->outputs[0], tmp, ck);
  gp_free(xs);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* nn.{max,avg}_pool{1,3}d: run as 3-d pools over [outer, D, H, W] (1-d: D = H = 1), the spatial
 * axes last (other layouts through a copy, see poolnd).  Items are output rows (o, od, oh). */

typedef struct PoolNd {
  const void *x;
  void *y;
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
  bool is_max, count_pad;
  int64_t lowest_i;
} PoolNd;

#define GP_DEFINE_POOL_ND(T, SFX, LOWEST, ADD)                                                   \
  static void poolnd_##SFX(void *vctx, int64_t t0, int64_t t1) {                                 \
    const PoolNd *p = vctx;                                                                      \
    int64_t plane = p->in[0] * p->in[1] * p->in[2];                                              \
    for (int64_t t = t0; t < t1; t++) { /* t = (o * OD + od) * OH + oh */                        \
      int64_t oh = t % p->out[1], od = (t / p->out[1]) % p->out[0], o = t / (p->out[1] * p->out[0]); \
      const T *x = (const T *)p->x + o * plane;                                                  \
      T *y = (T *)p->y + t * p->out[2];                                                          \
      int64_t ds = od * p->s[0] - p->pb[0], hs = oh * p->s[1] - p->pb[1], kd0, kd1, kh0, kh1;     \
      tap_range(p->k[0], p->in[0], ds, p->d[0], &kd0, &kd1);                                     \
      tap_range(p->k[1], p->in[1], hs, p->d[1], &kh0, &kh1);                                     \
      for (int64_t ow = 0; ow < p->out[2]; ow++) {                                               \
        int64_t ws = ow * p->s[2] - p->pb[2], kw0, kw1;                                          \
        tap_range(p->k[2], p->in[2], ws, p->d[2], &kw0, &kw1);                                   \
        T acc = p->is_max ? (LOWEST) : (T)0;                                                     \
        for (int64_t kd = kd0; kd < kd1; kd++)                                                   \
          for (int64_t kh = kh0; kh < kh1; kh++) {                                               \
            const T *xr = x + ((ds + kd * p->d[0]) * p->in[1] + hs + kh * p->d[1]) * p->in[2];   \
            for (int64_t kw = kw0; kw < kw1; kw++) {                                             \
              T v = xr[ws + kw * p->d[2]];                                                       \
              if (p->is_max) acc = v > acc ? v : acc;                                            \
              else acc = ADD(acc, v);                                                            \
            }                                                                                    \
          }                                                                                      \
        if (!p->is_max) {                                                                        \
          int64_t cnt = p->count_pad ? pad_taps(p->k[0], p->in[0], ds, p->d[0], p->pe[0]) *      \
                                           pad_taps(p->k[1], p->in[1], hs, p->d[1], p->pe[1]) *  \
                                           pad_taps(p->k[2], p->in[2], ws, p->d[2], p->pe[2])    \
                                     : (kd1 - kd0) * (kh1 - kh0) * (kw1 - kw0);                  \
          if (cnt < 1) cnt = 1;                                                                  \
          acc = avg_##SFX(acc, cnt);                                                             \
        }                                                                                        \
        y[ow] = acc;                                                                             \
      }                                                                                          \
    }                                                                                            \
  }
GP_DEFINE_POOL_ND(float, f32, -INFINITY, GP_PLUS)
GP_DEFINE_POOL_ND(double, f64, -INFINITY, GP_PLUS)
GP_DEFINE_POOL_ND(int64_t, i64, p->lowest_i, wrap_add)

/* An INTS attribute of nd values (1 replicated) into the last nd of out[3] (the others fill). */
static int attr_nd3(const GPKernelArgs *a, const char *key, int32_t nd, int64_t min, int64_t fill, int64_t out[3]) {
  int32_t n;
  const int64_t *v = gp_ops_attr_ints(a->op, a->attrs, key, &n);
  if (n != 1 && n != nd) {
    gp_error_set(GP_ERR_VALUE, "%s must have 1 or %d values", key, (int)nd);
    return -1;
  }
  for (int32_t i = 0; i < 3; i++) out[i] = fill;
  for (int32_t i = 0; i < nd; i++) {
    out[3 - nd + i] = v[n == 1 ? 0 : i];
    if (out[3 - nd + i] < min) {
      gp_error_set(GP_ERR_VALUE, "%s must be >= %lld", key, (long long)min);
      return -1;
    }
  }
  return 0;
}

/* The pool of xt into yt, whose last nd axes are the spatial ones (p's windows set). */
static int poolnd_run(const GPKernelArgs *a, PoolNd *p, const DLTensor *xt, DLTensor *yt, int32_t nd, int k) {
  int32_t r = xt->ndim;
  for (int32_t i = 0; i < 3; i++) p->in[i] = p->out[i] = 1;
  for (int32_t i = 0; i < nd; i++) p->in[3 - nd + i] = xt->shape[r - nd + i], p->out[3 - nd + i] = yt->shape[r - nd + i];
  int64_t outer = prod(xt->shape, 0, r - nd);
  if (gp_k_numel(yt) == 0) return 0;
  int ck = compute_kind(k);
  void *xsc = NULL, *tmp;
  p->x = gp_knn_load_as(xt, ck, &xsc);
  p->y = out_begin(yt, ck, &tmp);
  gp_k_parallel_for(nthreads_of(a), outer * p->out[0] * p->out[1],
                    grain_for(p->out[2] * p->k[0] * p->k[1] * p->k[2]),
                    ck == GP_K_F32 ? poolnd_f32 : ck == GP_K_F64 ? poolnd_f64 : poolnd_i64, p);
  out_done(yt, tmp, ck);
  gp_free(xsc);
  return 0;
}

typedef struct {
  PoolNd *p;
  int32_t nd;
  int k;
} PoolNdRun;
static int poolnd_run_canonical(const GPKernelArgs *a, const DLTensor *x, DLTensor *y, void *user) {
  const PoolNdRun *r = user;
  return poolnd_run(a, r->p, x, y, r->nd, r->k);
}

/* A layout whose last axes are the spatial ones (NCDHW, CNDHW) runs in place; another
 * permutation of NC + spatial (NDHWC, NWC) runs on a copy gathered into NC + spatial order, its
 * result scattered back. */
static int poolnd(const GPKernelArgs *a, int32_t nd, bool is_max) {
  static const char *const sp[4] = {"", "W", "HW", "DHW"};
  if (check_io(a, 1, 1) != 0) return -1;
  const DLTensor *xt = a->inputs[0];
  DLTensor *yt = a->outputs[0];
  const char *ls = gp_ops_attr_str(a->op, a->attrs, "layout");
  const char *ol = gp_ops_attr_str(a->op, a->attrs, "out_layout");
  const char *canon = nd == 1 ? "NCW" : "NCDHW";
  size_t ll = strlen(ls);
  bool last = ll == (size_t)xt->ndim && ll >= (size_t)nd && strcmp(ls + ll - nd, sp[nd]) == 0 &&
              !strpbrk(ls, "abcdefghijklmnopqrstuvwxyz0123456789");
  int32_t pos[5];
  bool perm = !last && ll == (size_t)xt->ndim && gp_k_axes_of(ls, canon, pos);
  if ((!last && !perm) || (ol[0] && strcmp(ol, ls) != 0)) {
    gp_error_set(GP_ERR_UNSUPPORTED,
                 "layout \"%s\" is not supported (the last axes must be %s, unsplit, or the axes those of %s)", ls,
                 sp[nd], canon);
    return -1;
  }
  int k;
  if (arith_dtype(xt, "data", true, &k) != 0) return -1;
  PoolNd p = {0};
  if (attr_nd3(a, "pool_size", nd, 1, 1, p.k) != 0 || attr_nd3(a, "strides", nd, 1, 1, p.s) != 0 ||
      attr_nd3(a, "dilation", nd, 1, 1, p.d) != 0)
    return -1;
  int32_t np;
  const int64_t *pv = gp_ops_attr_ints(a->op, a->attrs, "padding", &np);
  if (np != 1 && np != nd && np != 2 * nd) {
    gp_error_set(GP_ERR_VALUE, "padding must have 1, %d or %d values", (int)nd, (int)(2 * nd));
    return -1;
  }
  for (int32_t i = 0; i < nd; i++) {
    int32_t j = 3 - nd + i;
    p.pb[j] = pv[np == 1 ? 0 : i];
    p.pe[j] = pv[np == 1 ? 0 : np == nd ? i : nd + i];
  }
  int32_t r = xt->ndim;
  if (yt->ndim != r) {
    gp_error_set(GP_ERR_VALUE, "result rank differs from data's");
    return -1;
  }
  p.is_max = is_max;
  p.count_pad = !is_max && gp_ops_attr_bool(a->op, a->attrs, "count_include_pad");
  p.lowest_i = int_lowest(k);
  if (last) return poolnd_run(a, &p, xt, yt, nd, k);
  PoolNdRun run = {&p, nd, k};
  return gp_k_run_canonical(a, xt, pos, yt, pos, poolnd_run_canonical, &run);
}

static int k_max_pool1d(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return poolnd(a, 1, true);
}
static int k_avg_pool1d(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return poolnd(a, 1, false);
}
static int k_max_pool3d(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return poolnd(a, 3, true);
}
static int k_avg_pool3d(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return poolnd(a, 3, false);
}

/* ------------------------------------------------------------------------------------------ */
/* nn.prelu: y = x < 0 ? alpha[c] * x : x                                                      */

#define GP_DEFINE_PRELU(T, SFX, MUL)                                                             \
  static void prelu_##SFX(void *vctx, int64_t r0, int64_t r1) {                                  \
    const BiasAdd *c = vctx;                                                                     \
    const T *x = c->x, *al = c->b;                                                               \
    T *y = c->y;                                                                                 \
    for (int64_t r = r0; r < r1; r++) {                                                          \
      T av = al[r % c->C];                                                                       \
      const T *xr = x + r * c->inner;                                                            \
      T *yr = y + r * c->inner;                                                                  \
      for (int64_t i = 0; i < c->inner; i++) yr[i] = xr[i] < 0 ? MUL(av, xr[i]) : xr[i];         \
    }                                                                                            \
  }
#define GP_TIMES(a, b) ((a) * (b))
static inline int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
GP_DEFINE_PRELU(float, f32, GP_TIMES)
GP_DEFINE_PRELU(double, f64, GP_TIMES)
GP_DEFINE_PRELU(int64_t, i64, wrap_mul)

static int k_prelu(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (check_io(a, 2, 1) != 0) return -1;
  const DLTensor *xt = a->inputs[0], *bt = a->inputs[1];
  DLTensor *yt = a->outputs[0];
  int kx, kb;
  int32_t axis;
  if (arith_dtype(xt, "data", true, &kx) != 0 || arith_dtype(bt, "alpha", true, &kb) != 0 ||
      norm_axis(gp_ops_attr_int(a->op, a->attrs, "axis"), xt->ndim, &axis) != 0)
    return -1;
  if (bt->ndim != 1 || bt->shape[0] != xt->shape[axis]) {
    gp_error_set(GP_ERR_VALUE, "alpha must have shape (%lld)", (long long)xt->shape[axis]);
    return -1;
  }
  int64_t n = gp_k_numel(xt);
  if (n == 0) return 0;
  int ck = compute_kind(kx);
  void *xs = NULL, *bs = NULL, *tmp;
  BiasAdd c = {gp_knn_load_as(xt, ck, &xs), gp_knn_load_as(bt, ck, &bs), out_begin(yt, ck, &tmp),
               xt->shape[axis], prod(xt->shape, axis + 1, xt->ndim)};
  gp_k_parallel_for(nthreads_of(a), n / c.inner, grain_for(c.inner),
                    ck == GP_K_F32 ? prelu_f32 : ck == GP_K_F64 ? prelu_f64 : prelu_i64, &c);
  out_done(yt, tmp, ck);
  gp_free(xs);
  gp_free(bs);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* nn.nll_loss: computed in double (sums in order); a target outside [0, C) that is not
 * ignore_index is GP_ERR_VALUE.                                                               */

static int k_nll_loss(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (check_io(a, 3, 1) != 0) return -1;
  const DLTensor *pt = a->inputs[0], *tt = a->inputs[1], *wt = a->inputs[2];
  DLTensor *yt = a->outputs[0];
  int kp, kt, kw, ky;
  if (arith_dtype(pt, "predictions", false, &kp) != 0 || arith_dtype(wt, "weights", false, &kw) != 0 ||
      gp_k_dtype_check(tt->dtype, "targets", &kt) != 0 || arith_dtype(yt, "result", false, &ky) != 0)
    return -1;
  if (gp_k_is_float(kt) || kt == GP_K_BOOL) {
    gp_error_set(GP_ERR_UNSUPPORTED, "targets must be integers");
    return -1;
  }
  int32_t r = pt->ndim;
  if (r < 2 || tt->ndim != r - 1 || wt->ndim != 1 || wt->shape[0] != pt->shape[1]) {
    gp_error_set(GP_ERR_VALUE, "predictions, targets and weights shapes do not agree");
    return -1;
  }
  const char *red = gp_ops_attr_str(a->op, a->attrs, "reduction");
  int64_t ignore = gp_ops_attr_int(a->op, a->attrs, "ignore_index");
  bool none = !strcmp(red, "none"), mean = !strcmp(red, "mean");
  int64_t N = pt->shape[0], C = pt->shape[1], D = prod(pt->shape, 2, r);
  void *ps = NULL, *ts = NULL, *ws = NULL;
  const double *p = gp_knn_load_as(pt, GP_K_F64, &ps), *w = gp_knn_load_as(wt, GP_K_F64, &ws);
  const int64_t *t = gp_knn_load_as(tt, GP_K_I64, &ts);
  int64_t ny = none ? N * D : 1;
  double *y = gp_malloc((size_t)(ny ? ny : 1) * sizeof(double));
  double sum = 0, wsum = 0;
  int rc = 0;
  for (int64_t n = 0; n < N && rc == 0; n++)
    for (int64_t d = 0; d < D; d++) {
      int64_t c = t[n * D + d];
      double l = 0, wv = 0;
      if (c != ignore) {
        if (c < 0 || c >= C) {
          gp_error_set(GP_ERR_VALUE, "target %lld is outside [0, %lld) and is not ignore_index %lld", (long long)c,
                       (long long)C, (long long)ignore);
          rc = -1;
          break;
        }
        wv = w[c];
        l = -p[(n * C + c) * D + d] * wv;
      }
      if (none) y[n * D + d] = l;
      sum += l, wsum += wv;
    }
  if (rc == 0) {
    if (!none) y[0] = mean ? sum / wsum : sum;
    if (ny > 0) gp_knn_store_from(yt, y, GP_K_F64);
  }
  gp_free(y);
  gp_free(ps);
  gp_free(ts);
  gp_free(ws);
  return rc;
}

/* ------------------------------------------------------------------------------------------ */

void gp_kernels_register_nn(void) {
  gp_kernel_set("nn.nll_loss", k_nll_loss);
  gp_kernel_set("nn.conv1d", gp_knn_convnd);
  gp_kernel_set("nn.conv3d", gp_knn_convnd);
  gp_kernel_set("nn.conv1d_transpose", gp_knn_conv_transpose);
  gp_kernel_set("nn.conv2d_transpose", gp_knn_conv_transpose);
  gp_kernel_set("nn.conv3d_transpose", gp_knn_conv_transpose);
  gp_kernel_set("nn.batch_matmul", gp_knn_batch_matmul);
  gp_kernel_set("nn.matmul", gp_knn_matmul);
  gp_kernel_set("nn.log_softmax", k_log_softmax);
  gp_kernel_set("nn.max_pool1d", k_max_pool1d);
  gp_kernel_set("nn.avg_pool1d", k_avg_pool1d);
  gp_kernel_set("nn.max_pool3d", k_max_pool3d);
  gp_kernel_set("nn.avg_pool3d", k_avg_pool3d);
  gp_kernel_set("nn.global_max_pool2d", k_global_max_pool2d);
  gp_kernel_set("nn.prelu", k_prelu);
  gp_kernel_set("nn.conv2d", gp_knn_conv2d);
  gp_kernel_set("nn.dense", gp_knn_dense);
  gp_kernel_set("nn.bias_add", k_bias_add);
  gp_kernel_set("nn.batch_norm", k_batch_norm);
  gp_kernel_set("nn.dropout", k_dropout);
  gp_kernel_set("nn.max_pool2d", k_max_pool2d);
  gp_kernel_set("nn.avg_pool2d", k_avg_pool2d);
  gp_kernel_set("nn.global_avg_pool2d", k_global_avg_pool2d);
  gp_kernel_set("nn.softmax", k_softmax);
  gp_kernel_set("nn.lrn", k_lrn);
}
