/* cv_nn.c -- ONNX converters: conv/pool variants, matmul, norms, softmax family.
 *
 * Conv, MaxPool, AveragePool and GlobalMaxPool are listed in cv_core.c's table; their
 * converters (1-d to 3-d, auto_pad, ONNX's ceil_mode) are here: ox_nn_conv ... below.  Everything maps to Relay ops as TVM's from_onnx does, or is decomposed into them
 * following the ONNX function bodies (LayerNormalization, RMSNormalization, GroupNormalization,
 * MeanVarianceNormalization, LpNormalization, LpPool).
 */
#include "frontend/onnx/onnx_impl.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Used by cv_core.c's table. */
int ox_nn_conv(OxImporter *im, const OxNode *n, GPExpr **out);
int ox_nn_max_pool(OxImporter *im, const OxNode *n, GPExpr **out);
int ox_nn_average_pool(OxImporter *im, const OxNode *n, GPExpr **out);
int ox_nn_global_max_pool(OxImporter *im, const OxNode *n, GPExpr **out);
int ox_nn_batch_norm_training(OxImporter *im, const OxNode *n, GPExpr **out);

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */

#define MAXA 16

typedef struct Attrs {
  int32_t n;
  const char *k[MAXA];
  GPAttrValue v[MAXA];
} Attrs;

static void a_put(Attrs *a, const char *k, GPAttrValue v) {
  if (a->n < MAXA) a->k[a->n] = k, a->v[a->n] = v, a->n++;
}

/* INTS copied into the importer's pool (attrs_new copies again; this keeps the caller's arrays
 * free to change). */
static GPAttrValue a_ints(OxImporter *im, int32_t n, const int64_t *v) {
  int64_t *c = ox_alloc(im, (size_t)(n > 0 ? n : 1) * sizeof(int64_t));
  if (c && n > 0) memcpy(c, v, (size_t)n * sizeof(int64_t));
  return gp_attr_ints(n, c);
}

static GPExpr *call(OxImporter *im, const char *op, int32_t nargs, GPExpr *const *args, const Attrs *a) {
  return ox_call(im, op, nargs, args, a ? a->n : 0, a ? a->k : NULL, a ? a->v : NULL);
}

static GPExpr *call1(OxImporter *im, const char *op, GPExpr *x, const Attrs *a) {
  if (!x) return NULL;
  return call(im, op, 1, &x, a);
}

static GPExpr *op2(OxImporter *im, const char *op, GPExpr *a, GPExpr *b) {
  if (!a || !b) return NULL;
  return ox_op2(im, op, a, b);
}

/* Reshape to shape (concrete dims, at most one -1; a 0 is an empty dim unless there is a -1). */
static GPExpr *reshape(OxImporter *im, GPExpr *x, int32_t n, const int64_t *shape) {
  bool zero = false, infer = false;
  for (int32_t i = 0; i < n; i++) zero |= shape[i] == 0, infer |= shape[i] == -1;
  Attrs a = {0};
  a_put(&a, "newshape", a_ints(im, n, shape));
  if (zero && !infer) a_put(&a, "allowzero", gp_attr_bool(true));
  return call1(im, "reshape", x, &a);
}

/* Reduction `op` (mean, sum) over axes [from, rank) with keepdims. */
static GPExpr *reduce_tail(OxImporter *im, const char *op, GPExpr *x, int32_t from) {
  if (!x) return NULL;
  int64_t axes[64];
  int32_t r = ox_rank(x), na = 0;
  for (int32_t i = from; i < r && na < 64; i++) axes[na++] = i;
  Attrs a = {0};
  a_put(&a, "axis", a_ints(im, na, axes));
  a_put(&a, "keepdims", gp_attr_bool(true));
  return call1(im, op, x, &a);
}

static GPExpr *reduce_axes(OxImporter *im, const char *op, GPExpr *x, int32_t na, const int64_t *axes) {
  Attrs a = {0};
  a_put(&a, "axis", a_ints(im, na, axes));
  a_put(&a, "keepdims", gp_attr_bool(true));
  return call1(im, op, x, &a);
}

static GPExpr *scalar_like(OxImporter *im, GPExpr *x, double v) {
  if (!x) return NULL;
  return ox_scalar(im, ox_dtype(x), v);
}

/* Normalize an axis of rank r; GP_ERR_VALUE naming attr when out of range. */
static int norm_axis(int64_t axis, int32_t r, const char *attr, int32_t *out) {
  if (axis < -(int64_t)r || axis >= r) {
    ox_invalid("%s %lld is out of range for rank %d", attr, (long long)axis, (int)r);
    return -1;
  }
  *out = (int32_t)(axis < 0 ? axis + r : axis);
  return 0;
}

static int require_float(GPExpr *x, const char *what) {
  if (!ox_is_float(ox_dtype(x))) {
    char b[24];
    return ox_unsupported("%s of dtype %s is not supported (floats only)", what, gp_dtype_str(ox_dtype(x), b));
  }
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Window attributes shared by Conv, ConvTranspose and the pools                               */

typedef struct Window {
  int32_t nd;
  int64_t k[3], s[3], d[3], pb[3], pe[3];
  const char *auto_pad;
} Window;

/* kernel_shape (or `kdefault` when absent and non-NULL), strides, dilations, pads, auto_pad for
 * the nd spatial axes. */
static int window_attrs(OxImporter *im, const OxNode *n, int32_t nd, const int64_t *kdefault, Window *w) {
  w->nd = nd;
  int32_t c;
  const int64_t *v = ox_attr_ints(n, "kernel_shape", &c);
  if (c < 0 && kdefault) v = kdefault, c = nd;
  if (c != nd) return ox_invalid("kernel_shape must have %d values (got %d)", (int)nd, (int)c);
  for (int32_t i = 0; i < nd; i++) {
    w->k[i] = v[i];
    if (v[i] < 1) return ox_invalid("kernel_shape values must be >= 1");
  }
  static const char *const names[2] = {"strides", "dilations"};
  for (int j = 0; j < 2; j++) {
    int64_t *dst = j == 0 ? w->s : w->d;
    v = ox_attr_ints(n, names[j], &c);
    if (c >= 0 && c != nd) return ox_invalid("%s must have %d values (got %d)", names[j], (int)nd, (int)c);
    for (int32_t i = 0; i < nd; i++) {
      dst[i] = c < 0 ? 1 : v[i];
      if (dst[i] < 1) return ox_invalid("%s values must be >= 1", names[j]);
    }
  }
  v = ox_attr_ints(n, "pads", &c);
  if (c >= 0 && c != 2 * nd) return ox_invalid("pads must have %d values (got %d)", (int)(2 * nd), (int)c);
  for (int32_t i = 0; i < nd; i++) {
    w->pb[i] = c < 0 ? 0 : v[i];
    w->pe[i] = c < 0 ? 0 : v[nd + i];
    if (w->pb[i] < 0 || w->pe[i] < 0) return ox_unsupported("negative pads are not supported");
  }
  w->auto_pad = ox_attr_str(im, n, "auto_pad", "NOTSET");
  if (!w->auto_pad) return -1;
  return 0;
}

/* Apply auto_pad SAME_UPPER / SAME_LOWER / VALID to w for the input x (spatial axes 2..). */
static int window_auto_pad(const Window *cw, Window *w, GPExpr *x) {
  GP_UNUSED(cw);
  const char *ap = w->auto_pad;
  if (!strcmp(ap, "NOTSET") || !ap[0]) return 0;
  if (!strcmp(ap, "VALID")) {
    for (int32_t i = 0; i < w->nd; i++) w->pb[i] = w->pe[i] = 0;
    return 0;
  }
  bool upper = !strcmp(ap, "SAME_UPPER");
  if (!upper && strcmp(ap, "SAME_LOWER") != 0) return ox_unsupported("auto_pad \"%s\" is not supported", ap);
  if (ox_static(x, "the input of a SAME auto_pad") != 0) return -1;
  for (int32_t i = 0; i < w->nd; i++) {
    int64_t in = ox_type(x)->tensor.shape[2 + i];
    int64_t o = (in + w->s[i] - 1) / w->s[i];
    int64_t total = (o - 1) * w->s[i] + (w->k[i] - 1) * w->d[i] + 1 - in;
    if (total < 0) total = 0;
    w->pb[i] = upper ? total / 2 : total - total / 2;
    w->pe[i] = total - w->pb[i];
  }
  return 0;
}

static void window_put(OxImporter *im, Attrs *a, const Window *w, const char *ksize, const char *dil) {
  int64_t pad[6];
  for (int32_t i = 0; i < w->nd; i++) pad[i] = w->pb[i], pad[w->nd + i] = w->pe[i];
  a_put(a, "strides", a_ints(im, w->nd, w->s));
  a_put(a, "padding", a_ints(im, 2 * w->nd, pad));
  if (dil) a_put(a, dil, a_ints(im, w->nd, w->d));
  if (ksize) a_put(a, ksize, a_ints(im, w->nd, w->k));
}

/* ------------------------------------------------------------------------------------------ */
/* Conv                                                                                        */

int ox_nn_conv(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *wt = x ? ox_req(n, 1) : NULL;
  if (!wt) return -1;
  GPExpr *b = ox_in(n, 2);
  int32_t r = ox_rank(x), nd = r - 2;
  if (nd < 1 || nd > 3) return ox_unsupported("Conv on input of rank %d is not supported (3 to 5)", (int)r);
  if (ox_rank(wt) != r) return ox_invalid("W has rank %d, X rank %d", (int)ox_rank(wt), (int)r);
  const int64_t *wshape = ox_type(wt)->tensor.shape;
  for (int32_t i = 0; i < nd + 2; i++)
    if (wshape[i] == GP_DIM_ANY) return ox_unsupported("W must have a static shape");
  Window w;
  if (window_attrs(im, n, nd, wshape + 2, &w) != 0 || window_auto_pad(NULL, &w, x) != 0) return -1;
  int64_t group = ox_attr_int(n, "group", 1);
  if (group < 1) return ox_invalid("group %lld must be >= 1", (long long)group);
  static const char *const ops[4] = {NULL, "nn.conv1d", "nn.conv2d", "nn.conv3d"};
  static const char *const dls[4] = {NULL, "NCW", "NCHW", "NCDHW"};
  static const char *const kls[4] = {NULL, "OIW", "OIHW", "OIDHW"};
  Attrs a = {0};
  window_put(im, &a, &w, "kernel_size", "dilation");
  a_put(&a, "groups", gp_attr_int(group));
  a_put(&a, "channels", gp_attr_int(wshape[0]));
  a_put(&a, "data_layout", gp_attr_str(dls[nd]));
  a_put(&a, "kernel_layout", gp_attr_str(kls[nd]));
  GPExpr *args[2] = {x, wt};
  GPExpr *y = call(im, ops[nd], 2, args, &a);
  if (y && b) {
    Attrs ab = {0};
    a_put(&ab, "axis", gp_attr_int(1));
    GPExpr *args2[2] = {y, b};
    y = call(im, "nn.bias_add", 2, args2, &ab);
  }
  out[0] = y;
  return y ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* ConvTranspose                                                                               */

static int cv_conv_transpose(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *wt = x ? ox_req(n, 1) : NULL;
  if (!wt) return -1;
  GPExpr *b = ox_in(n, 2);
  int32_t r = ox_rank(x), nd = r - 2;
  if (nd < 1 || nd > 3) return ox_unsupported("ConvTranspose on input of rank %d is not supported (3 to 5)", (int)r);
  if (ox_rank(wt) != r) return ox_invalid("W has rank %d, X rank %d", (int)ox_rank(wt), (int)r);
  const int64_t *wshape = ox_type(wt)->tensor.shape;
  for (int32_t i = 0; i < nd + 2; i++)
    if (wshape[i] == GP_DIM_ANY) return ox_unsupported("W must have a static shape");
  Window w;
  if (window_attrs(im, n, nd, wshape + 2, &w) != 0) return -1;
  int64_t group = ox_attr_int(n, "group", 1);
  if (group < 1) return ox_invalid("group %lld must be >= 1", (long long)group);
  int64_t opad[3] = {0, 0, 0};
  int32_t c;
  const int64_t *v = ox_attr_ints(n, "output_padding", &c);
  if (c >= 0 && c != nd) return ox_invalid("output_padding must have %d values", (int)nd);
  for (int32_t i = 0; c >= 0 && i < nd; i++) opad[i] = v[i];
  const int64_t *oshape = ox_attr_ints(n, "output_shape", &c);
  const char *ap = w.auto_pad;
  bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
  if (!same && strcmp(ap, "NOTSET") != 0 && strcmp(ap, "VALID") != 0 && ap[0])
    return ox_unsupported("auto_pad \"%s\" is not supported", ap);
  if (!strcmp(ap, "VALID"))
    for (int32_t i = 0; i < nd; i++) w.pb[i] = w.pe[i] = 0;
  if (c >= 0 || same) {
    if (ox_static(x, "the input of ConvTranspose with output_shape or SAME auto_pad") != 0) return -1;
    if (c >= 0 && c != nd && c != r) return ox_invalid("output_shape must have %d values", (int)nd);
    for (int32_t i = 0; i < nd; i++) {
      int64_t in = ox_type(x)->tensor.shape[2 + i];
      int64_t want = c >= 0 ? oshape[c == r ? 2 + i : i] : in * w.s[i];
      int64_t total = w.s[i] * (in - 1) + opad[i] + (w.k[i] - 1) * w.d[i] + 1 - want;
      if (total < 0) { /* the output extends beyond the last window: more output padding */
        opad[i] -= total;
        total = 0;
      }
      if (!strcmp(ap, "SAME_UPPER")) w.pb[i] = total / 2, w.pe[i] = total - total / 2;
      else w.pb[i] = total - total / 2, w.pe[i] = total / 2;
    }
  }
  static const char *const ops[4] = {NULL, "nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose"};
  static const char *const dls[4] = {NULL, "NCW", "NCHW", "NCDHW"};
  static const char *const kls[4] = {NULL, "IOW", "IOHW", "IODHW"};
  Attrs a = {0};
  a_put(&a, "channels", gp_attr_int(wshape[1] * group));
  a_put(&a, "kernel_size", a_ints(im, nd, w.k));
  a_put(&a, "output_padding", a_ints(im, nd, opad));
  window_put(im, &a, &w, NULL, "dilation");
  a_put(&a, "groups", gp_attr_int(group));
  a_put(&a, "data_layout", gp_attr_str(dls[nd]));
  a_put(&a, "kernel_layout", gp_attr_str(kls[nd]));
  GPExpr *args[2] = {x, wt};
  GPExpr *y = call(im, ops[nd], 2, args, &a);
  if (y && b) {
    Attrs ab = {0};
    a_put(&ab, "axis", gp_attr_int(1));
    GPExpr *args2[2] = {y, b};
    y = call(im, "nn.bias_add", 2, args2, &ab);
  }
  out[0] = y;
  return y ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Pools                                                                                       */

/* ONNX's output extent of a pooled axis (ceil_mode: a last window starting in the right padding
 * is dropped). */
static int64_t onnx_pool_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, bool ceil_mode) {
  int64_t eff = (k - 1) * d + 1, num = in + pb + pe - eff;
  if (num < 0) return 0;
  if (!ceil_mode) return num / s + 1;
  int64_t o = (num + s - 1) / s + 1;
  if ((o - 1) * s >= in + pb) o--;
  return o;
}

static int pool_common(OxImporter *im, const OxNode *n, GPExpr **out, bool is_max) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  if (is_max && n->nout > 1 && n->proto->output[1] && n->proto->output[1][0])
    return ox_unsupported("MaxPool's Indices output is not supported");
  int32_t r = ox_rank(x), nd = r - 2;
  if (nd < 1 || nd > 3) return ox_unsupported("pooling input of rank %d is not supported (3 to 5)", (int)r);
  Window w;
  if (window_attrs(im, n, nd, NULL, &w) != 0 || window_auto_pad(NULL, &w, x) != 0) return -1;
  if (ox_attr_int(n, "storage_order", 0) != 0) return ox_unsupported("storage_order 1 is not supported");
  bool ceil_mode = ox_attr_int(n, "ceil_mode", 0) != 0;
  static const char *const mops[4] = {NULL, "nn.max_pool1d", "nn.max_pool2d", "nn.max_pool3d"};
  static const char *const aops[4] = {NULL, "nn.avg_pool1d", "nn.avg_pool2d", "nn.avg_pool3d"};
  static const char *const ls[4] = {NULL, "NCW", "NCHW", "NCDHW"};
  Attrs a = {0};
  a_put(&a, "pool_size", a_ints(im, nd, w.k));
  window_put(im, &a, &w, NULL, "dilation");
  a_put(&a, "layout", gp_attr_str(ls[nd]));
  a_put(&a, "ceil_mode", gp_attr_bool(ceil_mode));
  if (!is_max) a_put(&a, "count_include_pad", gp_attr_bool(ox_attr_int(n, "count_include_pad", 0) != 0));
  GPExpr *y = call1(im, is_max ? mops[nd] : aops[nd], x, &a);
  if (!y) return -1;
  /* TVM's ceil_mode keeps a last window that starts in the right padding; ONNX drops it */
  if (ceil_mode) {
    const int64_t *xs = ox_type(x)->tensor.shape, *ys = ox_type(y)->tensor.shape;
    int64_t begin[5] = {0}, end[5];
    bool cut = false;
    for (int32_t i = 0; i < r; i++) end[i] = ys[i];
    for (int32_t i = 0; i < nd; i++) {
      if (xs[2 + i] == GP_DIM_ANY) continue;
      int64_t o = onnx_pool_out(xs[2 + i], w.k[i], w.s[i], w.d[i], w.pb[i], w.pe[i], true);
      if (o < ys[2 + i]) end[2 + i] = o, cut = true;
    }
    if (cut) {
      Attrs sa = {0};
      a_put(&sa, "begin", a_ints(im, r, begin));
      a_put(&sa, "end", a_ints(im, r, end));
      y = call1(im, "strided_slice", y, &sa);
    }
  }
  out[0] = y;
  return y ? 0 : -1;
}

int ox_nn_max_pool(OxImporter *im, const OxNode *n, GPExpr **out) { return pool_common(im, n, out, true); }
int ox_nn_average_pool(OxImporter *im, const OxNode *n, GPExpr **out) { return pool_common(im, n, out, false); }

int ox_nn_global_max_pool(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  int32_t r = ox_rank(x);
  if (r == 4) {
    out[0] = call1(im, "nn.global_max_pool2d", x, NULL);
    return out[0] ? 0 : -1;
  }
  if (r != 3 && r != 5) return ox_unsupported("GlobalMaxPool on rank %d is not supported (3 to 5)", (int)r);
  if (ox_static(x, "X of GlobalMaxPool") != 0) return -1;
  Attrs a = {0};
  a_put(&a, "pool_size", a_ints(im, r - 2, ox_type(x)->tensor.shape + 2));
  a_put(&a, "layout", gp_attr_str(r == 3 ? "NCW" : "NCDHW"));
  out[0] = call1(im, r == 3 ? "nn.max_pool1d" : "nn.max_pool3d", x, &a);
  return out[0] ? 0 : -1;
}

/* LpPool: (sum over the window of |x|^p)^(1/p), as avg_pool(|x|^p, count_include_pad) times the
 * window size (TVM's decomposition). */
static int cv_lp_pool(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x || require_float(x, "X") != 0) return -1;
  int32_t r = ox_rank(x), nd = r - 2;
  if (nd < 1 || nd > 3) return ox_unsupported("LpPool on input of rank %d is not supported (3 to 5)", (int)r);
  Window w;
  if (window_attrs(im, n, nd, NULL, &w) != 0 || window_auto_pad(NULL, &w, x) != 0) return -1;
  bool ceil_mode = ox_attr_int(n, "ceil_mode", 0) != 0;
  if (ceil_mode) return ox_unsupported("LpPool with ceil_mode is not supported");
  double p = (double)ox_attr_int(n, "p", 2);
  static const char *const aops[4] = {NULL, "nn.avg_pool1d", "nn.avg_pool2d", "nn.avg_pool3d"};
  static const char *const ls[4] = {NULL, "NCW", "NCHW", "NCDHW"};
  GPExpr *xp = op2(im, "power", ox_op1(im, "abs", x), scalar_like(im, x, p));
  Attrs a = {0};
  a_put(&a, "pool_size", a_ints(im, nd, w.k));
  window_put(im, &a, &w, NULL, "dilation");
  a_put(&a, "layout", gp_attr_str(ls[nd]));
  a_put(&a, "count_include_pad", gp_attr_bool(true));
  GPExpr *s = call1(im, aops[nd], xp, &a);
  double vol = 1;
  for (int32_t i = 0; i < nd; i++) vol *= (double)w.k[i];
  s = op2(im, "multiply", s, scalar_like(im, x, vol));
  out[0] = op2(im, "power", s, scalar_like(im, x, 1.0 / p));
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* MatMul, as TVM v0.12's from_onnx imports it (matmul_out_dtype):                             */
/*   2-d x 2-d:      nn.dense(a, transpose(b, axes=[1, 0]), out_dtype=T)                        */
/*   1-d with <= 2-d: squeeze(nn.matmul(expand_dims(a, 0) | a, expand_dims(b, 1) | b), axis)      */
/*   N-d x 2-d:      reshape(nn.dense(reshape(a, [-1, K]), transpose(b), out_dtype=T), out)     */
/*   otherwise:      broadcast_to each side whose batch dims differ from the broadcast ones,    */
/*                   flatten both to rank 3 (reshape [-1, r, c]), nn.batch_matmul(a, transpose( */
/*                   b, axes=[0, 2, 1]), out_dtype=T) (transpose_b, TVM's default NT form),     */
/*                   reshape to (batch..., M, N).                                               */
/* A 1-d operand beside a rank > 2 one gets shapes wrong in TVM v0.12 (its [K] is sliced as if */
/* it were a matrix); we promote it as numpy does (a: expand_dims axis 0, b: expand_dims axis */
/* 1), take the paths above and leave the promoted dim out of the final reshape.  Shapes must */
/* be static.  With an empty dim, the flattening reshapes list every dim (allowzero) instead  */
/* of -1, which Relay cannot infer for no elements.                                           */

#define MM_MAX_RANK 64

/* TVM's flatten_to_nd: x unchanged at rank nd, else reshape(x, [-1, last nd-1 dims]). */
static GPExpr *mm_flatten(OxImporter *im, GPExpr *x, int32_t nd) {
  if (!x || ox_rank(x) == nd) return x;
  int32_t r = ox_rank(x);
  const int64_t *s = ox_shape(x);
  int64_t ns[3] = {-1, 0, 0}, lead = 1;
  bool empty = false;
  for (int32_t i = 0; i < r; i++) empty |= s[i] == 0;
  for (int32_t i = 0; i <= r - nd; i++) lead *= s[i];
  if (empty) ns[0] = lead;
  for (int32_t i = 1; i < nd; i++) ns[i] = s[r - nd + i];
  return reshape(im, x, nd, ns);
}

static GPExpr *mm_expand(OxImporter *im, GPExpr *x, int64_t axis) {
  Attrs a = {0};
  a_put(&a, "axis", gp_attr_int(axis));
  a_put(&a, "num_newaxis", gp_attr_int(1));
  return call1(im, "expand_dims", x, &a);
}

/* rank < 3 on both sides: nn.dense, or nn.matmul between expand_dims and squeeze for 1-d. */
static int matmul_2d(OxImporter *im, GPExpr *a, GPExpr *b, GPExpr **out) {
  int32_t ra = ox_rank(a), rb = ox_rank(b);
  if (ra == 2 && rb == 2) {
    int64_t perm[2] = {1, 0};
    Attrs ta = {0}, da = {0};
    a_put(&ta, "axes", a_ints(im, 2, perm));
    a_put(&da, "out_dtype", gp_attr_dtype(ox_dtype(a)));
    GPExpr *args[2] = {a, call1(im, "transpose", b, &ta)};
    out[0] = args[1] ? call(im, "nn.dense", 2, args, &da) : NULL;
    return out[0] ? 0 : -1;
  }
  int64_t axes[2];
  int32_t na = 0;
  GPExpr *args[2] = {a, b};
  if (ra == 1) args[0] = mm_expand(im, a, 0), axes[na++] = 0;
  if (rb == 1) args[1] = mm_expand(im, b, 1), axes[na++] = -1;
  if (!args[0] || !args[1]) return -1;
  Attrs sa = {0};
  a_put(&sa, "axis", a_ints(im, na, axes));
  out[0] = call1(im, "squeeze", call(im, "nn.matmul", 2, args, NULL), &sa);
  return out[0] ? 0 : -1;
}

static int cv_matmul(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *a = ox_req(n, 0), *b = a ? ox_req(n, 1) : NULL;
  if (!b) return -1;
  if (ox_static(a, "A") != 0 || ox_static(b, "B") != 0) return -1;
  if (ox_is_bool(ox_dtype(a)) || ox_is_bool(ox_dtype(b))) return ox_unsupported("MatMul of bool is not supported");
  if (!gp_dtype_eq(ox_dtype(a), ox_dtype(b))) {
    char s1[24], s2[24];
    return ox_invalid("MatMul: A is %s but B is %s (they must have one type)", gp_dtype_str(ox_dtype(a), s1),
                      gp_dtype_str(ox_dtype(b), s2));
  }
  int32_t ra = ox_rank(a), rb = ox_rank(b);
  if (ra < 1 || rb < 1) return ox_invalid("MatMul operands must have rank >= 1 (got ranks %d and %d)", (int)ra, (int)rb);
  const int64_t *as = ox_shape(a), *bs = ox_shape(b);
  int64_t K = as[ra - 1], K2 = rb == 1 ? bs[0] : bs[rb - 2];
  if (K != K2) return ox_invalid("MatMul: A (rank %d) has %lld columns but B %lld rows", (int)ra, (long long)K, (long long)K2);
  if (ra <= 2 && rb <= 2) return matmul_2d(im, a, b, out);
  bool a1 = ra == 1, b1 = rb == 1;
  if (a1 && !(a = mm_expand(im, a, 0))) return -1;
  if (b1 && !(b = mm_expand(im, b, 1))) return -1;
  ra = ox_rank(a), rb = ox_rank(b), as = ox_shape(a), bs = ox_shape(b);
  int32_t r = ra > rb ? ra : rb, nbat = r - 2;
  if (r > MM_MAX_RANK) return ox_unsupported("MatMul of rank %d is not supported (at most %d)", (int)r, MM_MAX_RANK);
  int64_t bat[MM_MAX_RANK];
  for (int32_t i = 0; i < nbat; i++) { /* numpy's broadcast of the batch dims, ranks aligned right */
    int64_t da = i >= r - ra ? as[i - (r - ra)] : 1, db = i >= r - rb ? bs[i - (r - rb)] : 1;
    if (da != db && da != 1 && db != 1)
      return ox_invalid("MatMul: batch dims %lld and %lld do not broadcast", (long long)da, (long long)db);
    bat[i] = da == 1 ? db : da;
  }
  int64_t M = as[ra - 2], N = bs[rb - 1];
  Attrs oa = {0};
  a_put(&oa, "out_dtype", gp_attr_dtype(ox_dtype(a)));
  GPExpr *y;
  if (rb == 2) {
    GPExpr *args[2] = {mm_flatten(im, a, 2), call1(im, "transpose", b, NULL)};
    y = args[0] && args[1] ? call(im, "nn.dense", 2, args, &oa) : NULL;
  } else {
    GPExpr *ops[2] = {a, b};
    for (int j = 0; j < 2; j++) {
      int32_t rj = ox_rank(ops[j]);
      const int64_t *sj = ox_shape(ops[j]);
      int64_t want[MM_MAX_RANK];
      memcpy(want, bat, (size_t)nbat * sizeof(int64_t));
      want[nbat] = sj[rj - 2], want[nbat + 1] = sj[rj - 1];
      bool same = rj == r;
      for (int32_t i = 0; same && i < nbat; i++) same = sj[i] == want[i];
      if (!same) {
        Attrs ba = {0};
        a_put(&ba, "shape", a_ints(im, r, want));
        ops[j] = call1(im, "broadcast_to", ops[j], &ba);
      }
      ops[j] = mm_flatten(im, ops[j], 3);
    }
    int64_t perm[3] = {0, 2, 1};
    Attrs ta = {0};
    a_put(&ta, "axes", a_ints(im, 3, perm));
    ops[1] = call1(im, "transpose", ops[1], &ta);
    y = ops[0] && ops[1] ? call(im, "nn.batch_matmul", 2, ops, &oa) : NULL;
  }
  if (!y) return -1;
  int64_t os[MM_MAX_RANK];
  int32_t no = nbat;
  memcpy(os, bat, (size_t)nbat * sizeof(int64_t));
  if (!a1) os[no++] = M;
  if (!b1) os[no++] = N;
  out[0] = reshape(im, y, no, os);
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Softmax, LogSoftmax                                                                         */

/* opset < 13: coerce to 2-D at axis (default 1), apply along axis 1, reshape back. */
static int softmax_v1(OxImporter *im, const OxNode *n, GPExpr **out, const char *op) {
  GPExpr *x = ox_req(n, 0);
  if (!x || require_float(x, "input") != 0) return -1;
  int32_t r = ox_rank(x), axis;
  if (r == 0) return ox_invalid("input must have rank >= 1");
  if (norm_axis(ox_attr_int(n, "axis", 1), r, "axis", &axis) != 0) return -1;
  if (ox_static(x, "input") != 0) return -1;
  const int64_t *xs = ox_type(x)->tensor.shape;
  int64_t s2[2] = {1, 1};
  for (int32_t i = 0; i < r; i++) s2[i < axis ? 0 : 1] *= xs[i];
  Attrs a = {0};
  a_put(&a, "axis", gp_attr_int(1));
  GPExpr *y = call1(im, op, reshape(im, x, 2, s2), &a);
  out[0] = reshape(im, y, r, xs);
  return out[0] ? 0 : -1;
}

static int softmax_v13(OxImporter *im, const OxNode *n, GPExpr **out, const char *op) {
  GPExpr *x = ox_req(n, 0);
  if (!x || require_float(x, "input") != 0) return -1;
  int32_t axis;
  if (ox_rank(x) == 0) return ox_invalid("input must have rank >= 1");
  if (norm_axis(ox_attr_int(n, "axis", -1), ox_rank(x), "axis", &axis) != 0) return -1;
  Attrs a = {0};
  a_put(&a, "axis", gp_attr_int(axis));
  out[0] = call1(im, op, x, &a);
  return out[0] ? 0 : -1;
}

static int cv_log_softmax_v1(OxImporter *im, const OxNode *n, GPExpr **out) {
  return softmax_v1(im, n, out, "nn.log_softmax");
}
static int cv_log_softmax_v13(OxImporter *im, const OxNode *n, GPExpr **out) {
  return softmax_v13(im, n, out, "nn.log_softmax");
}

/* ------------------------------------------------------------------------------------------ */
/* Normalizations                                                                              */

/* The stash dtype (stash_type attribute, default 1 = FLOAT). */
static int stash_dtype(const OxNode *n, DLDataType *dt) {
  return ox_dtype_from_onnx((int32_t)ox_attr_int(n, "stash_type", 1), dt);
}

/* LayerNormalization (17): over axes [axis, rank); outputs Y, Mean, InvStdDev. */
static int cv_layer_norm(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *scale = x ? ox_req(n, 1) : NULL;
  if (!scale || require_float(x, "X") != 0) return -1;
  GPExpr *bias = ox_in(n, 2);
  int32_t axis;
  if (norm_axis(ox_attr_int(n, "axis", -1), ox_rank(x), "axis", &axis) != 0) return -1;
  double eps = ox_attr_float(n, "epsilon", 1e-5);
  DLDataType st, xdt = ox_dtype(x);
  if (stash_dtype(n, &st) != 0) return -1;
  if (!ox_is_float(st)) return ox_unsupported("stash_type of a non-float dtype is not supported");
  GPExpr *xu = ox_cast(im, x, st);
  GPExpr *mean = reduce_tail(im, "mean", xu, axis);
  GPExpr *d = op2(im, "subtract", xu, mean);
  GPExpr *var = reduce_tail(im, "mean", op2(im, "multiply", d, d), axis);
  GPExpr *inv = ox_op1(im, "rsqrt", op2(im, "add", var, scalar_like(im, var, eps)));
  GPExpr *y = ox_cast(im, op2(im, "multiply", d, inv), xdt);
  y = op2(im, "multiply", y, ox_cast(im, scale, xdt));
  if (bias) y = op2(im, "add", y, ox_cast(im, bias, xdt));
  if (!y) return -1;
  out[0] = y;
  if (n->nout > 1) out[1] = mean;
  if (n->nout > 2) out[2] = inv;
  return 0;
}

/* RMSNormalization (23): x / sqrt(mean(x^2 over [axis, rank)) + epsilon) * scale. */
static int cv_rms_norm(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *scale = x ? ox_req(n, 1) : NULL;
  if (!scale || require_float(x, "X") != 0) return -1;
  int32_t axis;
  if (norm_axis(ox_attr_int(n, "axis", -1), ox_rank(x), "axis", &axis) != 0) return -1;
  double eps = ox_attr_float(n, "epsilon", 1e-5);
  DLDataType st, xdt = ox_dtype(x);
  if (stash_dtype(n, &st) != 0) return -1;
  if (!ox_is_float(st)) return ox_unsupported("stash_type of a non-float dtype is not supported");
  GPExpr *xu = ox_cast(im, x, st);
  GPExpr *ms = reduce_tail(im, "mean", op2(im, "multiply", xu, xu), axis);
  GPExpr *inv = ox_op1(im, "rsqrt", op2(im, "add", ms, scalar_like(im, ms, eps)));
  GPExpr *y = ox_cast(im, op2(im, "multiply", xu, inv), xdt);
  out[0] = op2(im, "multiply", y, ox_cast(im, scale, xdt));
  return out[0] ? 0 : -1;
}

/* GroupNormalization: X (N, C, ...) viewed as (N, G, -1), normalized along the last axis;
 * scale and bias per group (opset 18) or per channel (opset 21). */
static int group_norm(OxImporter *im, const OxNode *n, GPExpr **out, bool per_channel) {
  GPExpr *x = ox_req(n, 0), *scale = x ? ox_req(n, 1) : NULL, *bias = scale ? ox_req(n, 2) : NULL;
  if (!bias || require_float(x, "X") != 0) return -1;
  if (ox_static(x, "X") != 0) return -1;
  int32_t r = ox_rank(x);
  if (r < 2) return ox_invalid("X must have rank >= 2");
  int64_t G = ox_attr_int(n, "num_groups", 0);
  const int64_t *xs = ox_type(x)->tensor.shape;
  if (G < 1 || xs[1] % G != 0)
    return ox_invalid("num_groups %lld does not divide the %lld channels", (long long)G, (long long)xs[1]);
  double eps = ox_attr_float(n, "epsilon", 1e-5);
  DLDataType st = ox_dtype(x), xdt = ox_dtype(x);
  if (per_channel && stash_dtype(n, &st) != 0) return -1;
  int64_t s3[3] = {xs[0], G, -1};
  GPExpr *xu = reshape(im, ox_cast(im, x, st), 3, s3);
  GPExpr *mean = reduce_tail(im, "mean", xu, 2);
  GPExpr *d = op2(im, "subtract", xu, mean);
  GPExpr *var = reduce_tail(im, "mean", op2(im, "multiply", d, d), 2);
  GPExpr *y = op2(im, "multiply", d, ox_op1(im, "rsqrt", op2(im, "add", var, scalar_like(im, var, eps))));
  y = ox_cast(im, y, xdt);
  int64_t vs[64];
  if (!per_channel) {
    int64_t g3[3] = {1, G, 1};
    y = op2(im, "multiply", y, reshape(im, ox_cast(im, scale, xdt), 3, g3));
    y = op2(im, "add", y, reshape(im, ox_cast(im, bias, xdt), 3, g3));
    out[0] = reshape(im, y, r, xs);
    return out[0] ? 0 : -1;
  }
  y = reshape(im, y, r, xs);
  vs[0] = xs[1];
  for (int32_t i = 2; i < r; i++) vs[i - 1] = 1;
  y = op2(im, "multiply", y, reshape(im, ox_cast(im, scale, xdt), r - 1, vs));
  out[0] = op2(im, "add", y, reshape(im, ox_cast(im, bias, xdt), r - 1, vs));
  return out[0] ? 0 : -1;
}

static int cv_group_norm18(OxImporter *im, const OxNode *n, GPExpr **out) { return group_norm(im, n, out, false); }
static int cv_group_norm21(OxImporter *im, const OxNode *n, GPExpr **out) { return group_norm(im, n, out, true); }

static int cv_instance_norm(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *scale = x ? ox_req(n, 1) : NULL, *bias = scale ? ox_req(n, 2) : NULL;
  if (!bias || require_float(x, "input") != 0) return -1;
  Attrs a = {0};
  a_put(&a, "axis", gp_attr_int(1));
  a_put(&a, "epsilon", gp_attr_float(ox_attr_float(n, "epsilon", 1e-5)));
  GPExpr *args[3] = {x, scale, bias};
  out[0] = call(im, "nn.instance_norm", 3, args, &a);
  return out[0] ? 0 : -1;
}

/* BatchNormalization with training_mode=1: batch statistics over all axes but 1; outputs Y,
 * running_mean = input_mean * momentum + mean * (1 - momentum), running_var likewise. */
int ox_nn_batch_norm_training(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *a[5];
  for (int32_t i = 0; i < 5; i++)
    if (!(a[i] = ox_req(n, i))) return -1;
  GPExpr *x = a[0];
  if (require_float(x, "X") != 0) return -1;
  int32_t r = ox_rank(x);
  if (r < 2) return ox_invalid("X must have rank >= 2");
  double eps = ox_attr_float(n, "epsilon", 1e-5), mom = ox_attr_float(n, "momentum", 0.9);
  int64_t axes[64], cs[64];
  int32_t na = 0;
  for (int32_t i = 0; i < r && i < 64; i++)
    if (i != 1) axes[na++] = i;
  for (int32_t i = 0; i < r - 1; i++) cs[i] = i == 0 ? -1 : 1; /* (C, 1, ...) */
  GPExpr *mean = reduce_axes(im, "mean", x, na, axes);
  GPExpr *d = op2(im, "subtract", x, mean);
  GPExpr *var = reduce_axes(im, "mean", op2(im, "multiply", d, d), na, axes);
  GPExpr *y = op2(im, "multiply", d, ox_op1(im, "rsqrt", op2(im, "add", var, scalar_like(im, x, eps))));
  y = op2(im, "multiply", y, reshape(im, a[1], r - 1, cs));
  out[0] = op2(im, "add", y, reshape(im, a[2], r - 1, cs));
  if (!out[0]) return -1;
  int64_t c1[1] = {-1};
  for (int32_t j = 0; j < 2 && j + 1 < n->nout; j++) {
    GPExpr *cur = reshape(im, j == 0 ? mean : var, 1, c1);
    GPExpr *run = op2(im, "add", op2(im, "multiply", a[3 + j], scalar_like(im, a[3 + j], mom)),
                      op2(im, "multiply", ox_cast(im, cur, ox_dtype(a[3 + j])), scalar_like(im, a[3 + j], 1.0 - mom)));
    if (!run) return -1;
    out[1 + j] = run;
  }
  return 0;
}

/* MeanVarianceNormalization: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over axes. */
static int cv_mvn(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x || require_float(x, "X") != 0) return -1;
  static const int64_t dflt[3] = {0, 2, 3};
  int32_t na;
  const int64_t *axes = ox_attr_ints(n, "axes", &na);
  if (na < 0) axes = dflt, na = 3;
  int64_t ax[64];
  if (na > 64) return ox_invalid("too many axes");
  for (int32_t i = 0; i < na; i++) {
    int32_t a;
    if (norm_axis(axes[i], ox_rank(x), "axes", &a) != 0) return -1;
    ax[i] = a;
  }
  GPExpr *mean = reduce_axes(im, "mean", x, na, ax);
  GPExpr *ex2 = reduce_axes(im, "mean", op2(im, "multiply", x, x), na, ax);
  GPExpr *var = op2(im, "subtract", ex2, op2(im, "multiply", mean, mean));
  GPExpr *sd = op2(im, "add", ox_op1(im, "sqrt", var), scalar_like(im, x, 1e-9));
  out[0] = op2(im, "divide", op2(im, "subtract", x, mean), sd);
  return out[0] ? 0 : -1;
}

/* LpNormalization: x / ||x||_p along axis (p 1 or 2); a zero vector stays zero. */
static int cv_lp_norm(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x || require_float(x, "input") != 0) return -1;
  int32_t axis;
  if (norm_axis(ox_attr_int(n, "axis", -1), ox_rank(x), "axis", &axis) != 0) return -1;
  int64_t p = ox_attr_int(n, "p", 2);
  int64_t ax[1] = {axis};
  GPExpr *norm;
  if (p == 1) norm = reduce_axes(im, "sum", ox_op1(im, "abs", x), 1, ax);
  else if (p == 2) norm = ox_op1(im, "sqrt", reduce_axes(im, "sum", op2(im, "multiply", x, x), 1, ax));
  else return ox_unsupported("p %lld is not supported (1 or 2)", (long long)p);
  /* a zero norm divides a zero vector: floor it at the dtype's least normal, giving 0 */
  DLDataType dt = ox_dtype(x);
  double tiny = dt.bits == 16 ? 6.103515625e-05 : dt.bits == 32 ? 1.17549435e-38 : 2.2250738585072014e-308;
  norm = op2(im, "maximum", norm, scalar_like(im, x, tiny));
  out[0] = op2(im, "divide", x, norm);
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Attention (23): decomposed as the reference does -- heads split (3-D inputs), past key/value
 * concatenated, a float bias from attn_mask (bool: log(mask) gives 0 / -inf) and the causal
 * triangle, grouped heads repeated, softmax(softcap(Q*sqrt(s) @ (K*sqrt(s))^T) + bias) @ V.   */

/* A constant (rows, cols) float32 tensor: -inf where a causal query i may not see key j
 * (j >= past and j - past > i), else 0. */
static GPExpr *causal_bias(OxImporter *im, int64_t rows, int64_t cols, int64_t past) {
  int64_t shape[2] = {rows, cols};
  GPTensor *t = gp_tensor_alloc(GP_DT_F32, 2, shape, true);
  if (!t) return NULL;
  float *v = (float *)((char *)t->dl.data + t->dl.byte_offset);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) v[i * cols + j] = (j >= past && j - past > i) ? -INFINITY : 0.0f;
  return ox_constant(im, t);
}

/* A constant float32 tensor of `shape` filled with v. */
static GPExpr *filled(OxImporter *im, int32_t nd, const int64_t *shape, float v) {
  GPTensor *t = gp_tensor_alloc(GP_DT_F32, nd, shape, true);
  if (!t) return NULL;
  float *p = (float *)((char *)t->dl.data + t->dl.byte_offset);
  int64_t cnt = 1;
  for (int32_t i = 0; i < nd; i++) cnt *= shape[i];
  for (int64_t i = 0; i < cnt; i++) p[i] = v;
  return ox_constant(im, t);
}

/* A constant float32 tensor of shape (1, rows, cols): i - j + off at (0, i, j). */
static GPExpr *index_diff(OxImporter *im, const int64_t shape[3], int64_t off) {
  GPTensor *t = gp_tensor_alloc(GP_DT_F32, 3, shape, true);
  if (!t) return NULL;
  float *p = (float *)((char *)t->dl.data + t->dl.byte_offset);
  for (int64_t i = 0; i < shape[1]; i++)
    for (int64_t j = 0; j < shape[2]; j++) p[i * shape[2] + j] = (float)(i - j + off);
  return ox_constant(im, t);
}

static GPExpr *clip01(OxImporter *im, GPExpr *x) {
  Attrs ca = {0};
  a_put(&ca, "a_min", gp_attr_float(0.0));
  a_put(&ca, "a_max", gp_attr_float(1.0));
  return call1(im, "clip", x, &ca);
}

static GPExpr *transpose4(OxImporter *im, GPExpr *x, const int64_t axes[4]) {
  Attrs a = {0};
  a_put(&a, "axes", a_ints(im, 4, axes));
  return call1(im, "transpose", x, &a);
}

/* (B, S, H * d) -> (B, H, S, d) */
static GPExpr *split_heads(OxImporter *im, GPExpr *x, int64_t heads, const char *what) {
  const int64_t *s = ox_type(x)->tensor.shape;
  if (heads < 1 || s[2] % heads != 0) {
    ox_invalid("the hidden size %lld of %s is not divisible by %lld heads", (long long)s[2], what, (long long)heads);
    return NULL;
  }
  int64_t s4[4] = {s[0], s[1], heads, s[2] / heads};
  static const int64_t perm[4] = {0, 2, 1, 3};
  return transpose4(im, reshape(im, x, 4, s4), perm);
}

static GPExpr *concat2(OxImporter *im, GPExpr *a, GPExpr *b, int64_t axis) {
  if (!a || !b) return NULL;
  GPExpr *f[2] = {a, b};
  GPExpr *t = ox_tuple(im, 2, f);
  Attrs at = {0};
  a_put(&at, "axis", gp_attr_int(axis));
  return call1(im, "concatenate", t, &at);
}

/* (B, Hkv, S, d) -> (B, Hkv * rep, S, d), each head repeated rep times in a row. */
static GPExpr *repeat_heads(OxImporter *im, GPExpr *x, int64_t rep) {
  const int64_t *s = ox_type(x)->tensor.shape;
  int64_t s5[5] = {s[0], s[1], 1, s[2], s[3]};
  GPExpr *x5 = reshape(im, x, 5, s5);
  if (!x5 || rep > 4096) return NULL;
  GPExpr **f = ox_alloc(im, (size_t)rep * sizeof(GPExpr *));
  if (!f) return NULL;
  for (int64_t i = 0; i < rep; i++) f[i] = x5;
  Attrs at = {0};
  a_put(&at, "axis", gp_attr_int(2));
  GPExpr *c = call1(im, "concatenate", ox_tuple(im, (int32_t)rep, f), &at);
  int64_t s4[4] = {s[0], s[1] * rep, s[2], s[3]};
  return reshape(im, c, 4, s4);
}

/* (B, H, M, K) x (B, H, N, K)^T (tb) or (B, H, K, N) -> (B, H, M, N) */
static GPExpr *bmm4(OxImporter *im, GPExpr *a, GPExpr *b, bool tb) {
  if (!a || !b) return NULL;
  const int64_t *as = ox_type(a)->tensor.shape, *bs = ox_type(b)->tensor.shape;
  int64_t a3[3] = {as[0] * as[1], as[2], as[3]}, b3[3] = {bs[0] * bs[1], bs[2], bs[3]};
  Attrs ma = {0};
  a_put(&ma, "transpose_a", gp_attr_bool(false));
  a_put(&ma, "transpose_b", gp_attr_bool(tb));
  GPExpr *args[2] = {reshape(im, a, 3, a3), reshape(im, b, 3, b3)};
  if (!args[0] || !args[1]) return NULL;
  GPExpr *y = call(im, "nn.batch_matmul", 2, args, &ma);
  int64_t o4[4] = {as[0], as[1], as[2], tb ? bs[2] : bs[3]};
  return reshape(im, y, 4, o4);
}

static int cv_attention(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *q = ox_req(n, 0), *k = q ? ox_req(n, 1) : NULL, *v = k ? ox_req(n, 2) : NULL;
  if (!v || require_float(q, "Q") != 0) return -1;
  GPExpr *mask = ox_in(n, 3), *pk = ox_in(n, 4), *pv = ox_in(n, 5);
  GPExpr *nonpad = ox_in(n, 6);
  if (ox_static(q, "Q") != 0 || ox_static(k, "K") != 0 || ox_static(v, "V") != 0 ||
      (mask && ox_static(mask, "attn_mask") != 0) || (pk && ox_static(pk, "past_key") != 0) ||
      (pv && ox_static(pv, "past_value") != 0))
    return -1;
  int32_t r = ox_rank(q);
  if ((r != 3 && r != 4) || ox_rank(k) != r || ox_rank(v) != r)
    return ox_invalid("Q, K and V must all have rank 3 or all rank 4");
  if ((pk != NULL) != (pv != NULL)) return ox_invalid("past_key and past_value go together");
  if (pk && (ox_rank(pk) != 4 || ox_rank(pv) != 4))
    return ox_invalid("past_key and past_value must have rank 4 (batch, heads, past, head size), have ranks %d and %d",
                      (int)ox_rank(pk), (int)ox_rank(pv));
  DLDataType qdt = ox_dtype(q);
  if (r == 3) {
    int64_t hq = ox_attr_int(n, "q_num_heads", 0), hkv = ox_attr_int(n, "kv_num_heads", 0);
    q = split_heads(im, q, hq, "Q");
    k = q ? split_heads(im, k, hkv, "K") : NULL;
    v = k ? split_heads(im, v, hkv, "V") : NULL;
    if (!v) return -1;
  }
  const int64_t *qs = ox_type(q)->tensor.shape;
  int64_t B = qs[0], Hq = qs[1], Sq = qs[2], hd = qs[3];
  double scale = ox_has_attr(n, "scale") ? ox_attr_float(n, "scale", 1.0) : 1.0 / sqrt((double)hd);
  GPExpr *sq = ox_scalar(im, qdt, sqrt(scale));
  int64_t past = 0;
  if (pk) {
    past = ox_type(pk)->tensor.shape[2];
    k = concat2(im, pk, k, 2);
    v = concat2(im, pv, v, 2);
    if (!k || !v) return -1;
  }
  GPExpr *present_k = k, *present_v = v;
  int64_t Hkv = ox_type(k)->tensor.shape[1], Skv = ox_type(k)->tensor.shape[2];
  if (Hq != Hkv) {
    if (Hkv < 1 || Hq % Hkv != 0 || ox_type(v)->tensor.shape[1] != Hkv)
      return ox_invalid("%lld query heads cannot share %lld key/value heads", (long long)Hq, (long long)Hkv);
    k = repeat_heads(im, k, Hq / Hkv);
    v = repeat_heads(im, v, Hq / Hkv);
    if (!k || !v) return -1;
  }
  /* the bias */
  GPExpr *bias = NULL;
  if (mask) {
    int32_t mr = ox_rank(mask);
    if (mr < 2) return ox_invalid("attn_mask must have rank >= 2");
    bias = ox_is_bool(ox_dtype(mask)) ? ox_op1(im, "log", ox_cast(im, mask, GP_DT_F32)) : ox_cast(im, mask, GP_DT_F32);
    int64_t lm = ox_type(mask)->tensor.shape[mr - 1];
    if (lm < Skv) {
      int64_t ps[8];
      if (mr > 8) return ox_unsupported("attn_mask of rank %d is not supported", (int)mr);
      memcpy(ps, ox_type(mask)->tensor.shape, (size_t)mr * sizeof(int64_t));
      ps[mr - 1] = Skv - lm;
      bias = concat2(im, bias, filled(im, mr, ps, -INFINITY), mr - 1);
    } else if (lm > Skv) {
      return ox_invalid("attn_mask has %lld keys but there are %lld", (long long)lm, (long long)Skv);
    }
  }
  GPExpr *lens = NULL; /* nonpad_kv_seqlen as float (B, 1, 1) */
  if (nonpad) {
    if (ox_rank(nonpad) != 1 || ox_static(nonpad, "nonpad_kv_seqlen") != 0 || ox_type(nonpad)->tensor.shape[0] != B)
      return ox_invalid("nonpad_kv_seqlen must have shape (%lld)", (long long)B);
    int64_t b3[3] = {B, 1, 1};
    lens = reshape(im, ox_cast(im, nonpad, GP_DT_F32), 3, b3);
    if (!lens) return -1;
  }
  if (ox_attr_int(n, "is_causal", 0)) {
    GPExpr *c;
    if (!pk && lens) { /* per batch item: key j visible to query i iff j <= i + len - Sq */
      int64_t shp[3] = {1, Sq, Skv};
      GPExpr *d = index_diff(im, shp, 1 - Sq);
      int64_t s4[4] = {B, 1, Sq, Skv};
      c = ox_op1(im, "log", reshape(im, clip01(im, op2(im, "add", d, lens)), 4, s4));
    } else {
      c = causal_bias(im, Sq, Skv, past);
    }
    bias = bias ? op2(im, "add", bias, c) : c;
  }
  if (lens) { /* keys j >= len are padding */
    int64_t shp[3] = {1, 1, Skv};
    GPExpr *d = index_diff(im, shp, 0);
    int64_t s4[4] = {B, 1, 1, Skv};
    GPExpr *pm = ox_op1(im, "log", reshape(im, clip01(im, op2(im, "add", d, lens)), 4, s4));
    bias = bias ? op2(im, "add", bias, pm) : pm;
  }
  if (mask || lens || ox_attr_int(n, "is_causal", 0)) {
    if (!bias) return -1;
  }
  /* scores */
  GPExpr *qk = bmm4(im, op2(im, "multiply", q, sq), op2(im, "multiply", k, sq), true);
  double softcap = ox_attr_float(n, "softcap", 0.0);
  if (qk && softcap > 0) {
    GPExpr *c = ox_scalar(im, qdt, softcap);
    qk = op2(im, "multiply", ox_op1(im, "tanh", op2(im, "divide", qk, c)), c);
  }
  if (!qk) return -1;
  int64_t mode = ox_attr_int(n, "qk_matmul_output_mode", 0);
  /* the softmax runs in softmax_precision (default: float32 for float16, else Q's dtype) */
  DLDataType sdt = qdt.bits == 16 ? GP_DT_F32 : qdt;
  if (ox_has_attr(n, "softmax_precision") &&
      ox_dtype_from_onnx((int32_t)ox_attr_int(n, "softmax_precision", 1), &sdt) != 0)
    return -1;
  if (!ox_is_float(sdt)) return ox_unsupported("a non-float softmax_precision is not supported");
  GPExpr *sm_in = ox_cast(im, qk, sdt), *qkb = qk, *guard = NULL;
  if (bias) {
    /* -inf in the bias would make a fully masked row NaN; ONNX wants it zero.  So the softmax
     * sees the bias floored at a large finite negative, and rows with no finite bias entry
     * (sum(exp(bias)) == 0) are multiplied by 0 afterwards. */
    qkb = op2(im, "add", qk, ox_cast(im, bias, qdt));
    GPExpr *b32 = ox_cast(im, bias, sdt);
    double floor_v = sdt.bits == 16 ? -30000.0 : -1e30;
    GPExpr *fin = op2(im, "maximum", b32, ox_scalar(im, sdt, floor_v));
    sm_in = op2(im, "add", sm_in, fin);
    int64_t last = ox_rank(bias) - 1;
    Attrs ra = {0};
    a_put(&ra, "axis", a_ints(im, 1, &last));
    a_put(&ra, "keepdims", gp_attr_bool(true));
    GPExpr *cnt = call1(im, "sum", ox_op1(im, "exp", b32), &ra);
    cnt = op2(im, "multiply", cnt, ox_scalar(im, sdt, sdt.bits == 16 ? 60000.0 : 1e30));
    Attrs ca = {0};
    a_put(&ca, "a_min", gp_attr_float(0.0));
    a_put(&ca, "a_max", gp_attr_float(1.0));
    guard = call1(im, "clip", cnt, &ca);
    if (!qkb || !sm_in || !guard) return -1;
  }
  Attrs sa = {0};
  a_put(&sa, "axis", gp_attr_int(-1));
  GPExpr *p = call1(im, "nn.softmax", sm_in, &sa);
  if (guard) p = op2(im, "multiply", p, guard);
  p = p ? ox_cast(im, p, qdt) : NULL;
  GPExpr *y = bmm4(im, p, v, false);
  if (!y) return -1;
  if (r == 3) {
    static const int64_t perm[4] = {0, 2, 1, 3};
    int64_t dv = ox_type(y)->tensor.shape[3];
    int64_t s3[3] = {B, Sq, Hq * dv};
    y = reshape(im, transpose4(im, y, perm), 3, s3);
    if (!y) return -1;
  }
  out[0] = y;
  if (n->nout > 1) out[1] = present_k;
  if (n->nout > 2) out[2] = present_v;
  if (n->nout > 3) out[3] = mode == 3 ? p : mode == 2 ? qkb : qk;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss: nn.nll_loss (after nn.log_softmax along */
/* axis 1 for the latter); missing weights are ones, a missing ignore_index matches nothing.   */

static GPExpr *nll(OxImporter *im, const OxNode *n, GPExpr *logp, GPExpr *target, GPExpr *weight) {
  if (!logp || !target) return NULL;
  if (ox_rank(logp) < 2) {
    ox_invalid("the input must have rank >= 2 (N, C, ...)");
    return NULL;
  }
  if (!weight) {
    int64_t c = ox_type(logp)->tensor.shape[1];
    if (c == GP_DIM_ANY) {
      ox_unsupported("the class count (axis 1 of the input) must be known when there are no weights");
      return NULL;
    }
    weight = ox_cast(im, filled(im, 1, &c, 1.0f), ox_dtype(logp));
  }
  const char *red = ox_attr_str(im, n, "reduction", "mean");
  if (!red) return NULL;
  if (strcmp(red, "mean") != 0 && strcmp(red, "sum") != 0 && strcmp(red, "none") != 0) {
    ox_invalid("reduction \"%s\" is not mean, sum or none", red);
    return NULL;
  }
  Attrs a = {0};
  a_put(&a, "reduction", gp_attr_str(red));
  a_put(&a, "ignore_index", gp_attr_int(ox_has_attr(n, "ignore_index") ? ox_attr_int(n, "ignore_index", 0) : INT64_MIN));
  GPExpr *args[3] = {logp, target, weight};
  if (!weight) return NULL;
  return call(im, "nn.nll_loss", 3, args, &a);
}

static int cv_nll_loss(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *t = x ? ox_req(n, 1) : NULL;
  if (!t || require_float(x, "input") != 0) return -1;
  out[0] = nll(im, n, x, t, ox_in(n, 2));
  return out[0] ? 0 : -1;
}

static int cv_softmax_ce_loss(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *t = x ? ox_req(n, 1) : NULL;
  if (!t || require_float(x, "scores") != 0) return -1;
  if (ox_rank(x) < 2) return ox_invalid("scores must have rank >= 2 (N, C, ...)");
  Attrs a = {0};
  a_put(&a, "axis", gp_attr_int(1));
  GPExpr *logp = call1(im, "nn.log_softmax", x, &a);
  out[0] = nll(im, n, logp, t, ox_in(n, 2));
  if (!out[0]) return -1;
  if (n->nout > 1) out[1] = logp;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* CausalConvWithState: input (B, C, L), weight (C, 1, K), bias (C), past_state (B, C, K - 1)  */
/* (zeros when absent): a depthwise nn.conv1d over concat(past_state, input), an optional      */
/* silu; present_state is the last K - 1 steps of that concatenation.                          */

static int cv_causal_conv_with_state(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *w = x ? ox_req(n, 1) : NULL;
  if (!w || require_float(x, "input") != 0) return -1;
  GPExpr *bias = ox_in(n, 2), *past = ox_in(n, 3);
  if (ox_rank(x) != 3 || ox_rank(w) != 3) return ox_invalid("input and weight must have rank 3");
  if (ox_static(x, "input") != 0 || ox_static(w, "weight") != 0) return -1;
  const int64_t *xs = ox_type(x)->tensor.shape, *ws = ox_type(w)->tensor.shape;
  int64_t B = xs[0], C = xs[1], L = xs[2], K = ws[2];
  if (ws[0] != C || ws[1] != 1 || K < 1)
    return ox_invalid("weight (%lld, %lld, %lld) must be (C, 1, K) for %lld channels", (long long)ws[0],
                      (long long)ws[1], (long long)K, (long long)C);
  const char *act = ox_attr_str(im, n, "activation", "none");
  if (!act) return -1;
  bool silu = !strcmp(act, "silu") || !strcmp(act, "swish");
  if (!silu && strcmp(act, "none") != 0 && act[0])
    return ox_unsupported("activation \"%s\" is not supported (none, silu, swish)", act);
  GPExpr *padded = x;
  if (K > 1) {
    if (!past) {
      int64_t ps[3] = {B, C, K - 1};
      past = ox_cast(im, filled(im, 3, ps, 0.0f), ox_dtype(x));
    }
    padded = concat2(im, ox_cast(im, past, ox_dtype(x)), x, 2);
    if (!padded) return -1;
  }
  Attrs a = {0};
  int64_t k1[1] = {K};
  a_put(&a, "groups", gp_attr_int(C));
  a_put(&a, "channels", gp_attr_int(C));
  a_put(&a, "kernel_size", a_ints(im, 1, k1));
  GPExpr *args[2] = {padded, w};
  GPExpr *y = call(im, "nn.conv1d", 2, args, &a);
  if (y && bias) {
    Attrs ab = {0};
    a_put(&ab, "axis", gp_attr_int(1));
    GPExpr *args2[2] = {y, bias};
    y = call(im, "nn.bias_add", 2, args2, &ab);
  }
  if (y && silu) y = op2(im, "multiply", y, ox_op1(im, "sigmoid", y));
  if (!y) return -1;
  out[0] = y;
  if (n->nout > 1) {
    int64_t begin[3] = {0, 0, L}, end[3] = {B, C, L + K - 1};
    Attrs sa = {0};
    a_put(&sa, "begin", a_ints(im, 3, begin));
    a_put(&sa, "end", a_ints(im, 3, end));
    out[1] = call1(im, "strided_slice", padded, &sa);
    if (!out[1]) return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* SwiGLU(a, b) = Swish(a, alpha) * b = a * sigmoid(alpha * a) * b                              */

static int cv_swiglu(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *a = ox_req(n, 0), *b = a ? ox_req(n, 1) : NULL;
  if (!b || require_float(a, "the gate input") != 0) return -1;
  double alpha = ox_attr_float(n, "alpha", 1.0);
  GPExpr *g = ox_op1(im, "sigmoid", alpha == 1.0 ? a : op2(im, "multiply", a, scalar_like(im, a, alpha)));
  out[0] = op2(im, "multiply", op2(im, "multiply", a, g), b);
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* RotaryEmbedding (23): X (B, H, S, d) or (B, S, H * d); cos/sin (B, S, r / 2), or
 * (positions, r / 2) taken at position_ids (B, S).  The first r = rotary_embedding_dim (all d
 * when 0) features rotate as pairs (x[i], x[i + r/2]), or (x[2i], x[2i+1]) when interleaved.   */

static GPExpr *slice_last(OxImporter *im, GPExpr *x, int64_t begin, int64_t end, int64_t step) {
  int32_t r = ox_rank(x);
  int64_t b[8] = {0}, e[8], st[8];
  const int64_t *s = ox_type(x)->tensor.shape;
  for (int32_t i = 0; i < r; i++) e[i] = s[i], st[i] = 1;
  b[r - 1] = begin, e[r - 1] = end, st[r - 1] = step;
  Attrs a = {0};
  a_put(&a, "begin", a_ints(im, r, b));
  a_put(&a, "end", a_ints(im, r, e));
  a_put(&a, "strides", a_ints(im, r, st));
  return call1(im, "strided_slice", x, &a);
}

static int cv_rotary_embedding(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *cs = x ? ox_req(n, 1) : NULL, *sn = cs ? ox_req(n, 2) : NULL;
  if (!sn || require_float(x, "X") != 0) return -1;
  GPExpr *pos = ox_in(n, 3);
  if (ox_static(x, "X") != 0) return -1;
  int32_t r = ox_rank(x);
  if (r != 3 && r != 4) return ox_invalid("X must have rank 3 or 4");
  const int64_t *xs = ox_type(x)->tensor.shape;
  int64_t B = xs[0], S, H, d;
  GPExpr *x4; /* (B, H, S, d) or, from 3-d input, (B, S, H, d) */
  if (r == 4) {
    H = xs[1], S = xs[2], d = xs[3], x4 = x;
  } else {
    H = ox_attr_int(n, "num_heads", 0);
    if (H < 1 || xs[2] % H != 0) return ox_invalid("num_heads %lld does not divide the hidden size %lld", (long long)H, (long long)xs[2]);
    S = xs[1], d = xs[2] / H;
    int64_t s4[4] = {B, S, H, d};
    x4 = reshape(im, x, 4, s4);
  }
  int64_t rd = ox_attr_int(n, "rotary_embedding_dim", 0);
  if (rd == 0) rd = d;
  if (rd < 2 || rd > d || rd % 2 != 0) return ox_invalid("rotary_embedding_dim %lld is not an even size <= %lld", (long long)rd, (long long)d);
  if (pos) {
    if (!gp_op_find("take")) return ox_unsupported("RotaryEmbedding with position_ids needs the take op");
    Attrs ta = {0};
    a_put(&ta, "axis", gp_attr_int(0));
    GPExpr *ca[2] = {cs, pos}, *sa[2] = {sn, pos};
    cs = call(im, "take", 2, ca, &ta);
    sn = cs ? call(im, "take", 2, sa, &ta) : NULL;
    if (!sn) return -1;
  }
  if (ox_rank(cs) != 3 || ox_static(cs, "cos_cache") != 0) return ox_invalid("cos_cache must be (B, S, r / 2)");
  int64_t half = rd / 2;
  int64_t c4[4] = {B, r == 4 ? 1 : S, r == 4 ? S : 1, half};
  /* caches may be wider than r / 2: use their first r / 2 features */
  if (ox_type(cs)->tensor.shape[2] != half) {
    cs = slice_last(im, cs, 0, half, 1);
    sn = slice_last(im, sn, 0, half, 1);
  }
  GPExpr *cosv = ox_cast(im, reshape(im, cs, 4, c4), ox_dtype(x)), *sinv = ox_cast(im, reshape(im, sn, 4, c4), ox_dtype(x));
  bool inter = ox_attr_int(n, "interleaved", 0) != 0;
  GPExpr *x1 = inter ? slice_last(im, x4, 0, rd, 2) : slice_last(im, x4, 0, half, 1);
  GPExpr *x2 = inter ? slice_last(im, x4, 1, rd, 2) : slice_last(im, x4, half, rd, 1);
  GPExpr *re = op2(im, "subtract", op2(im, "multiply", cosv, x1), op2(im, "multiply", sinv, x2));
  GPExpr *imv = op2(im, "add", op2(im, "multiply", sinv, x1), op2(im, "multiply", cosv, x2));
  if (!re || !imv) return -1;
  const int64_t *s4 = ox_type(x4)->tensor.shape;
  GPExpr *rot;
  if (inter) { /* (..., half, 2) -> (..., rd) */
    int64_t e5[5] = {s4[0], s4[1], s4[2], half, 1}, r4[4] = {s4[0], s4[1], s4[2], rd};
    rot = reshape(im, concat2(im, reshape(im, re, 5, e5), reshape(im, imv, 5, e5), 4), 4, r4);
  } else {
    rot = concat2(im, re, imv, 3);
  }
  if (rd < d) rot = concat2(im, rot, slice_last(im, x4, rd, d, 1), 3);
  out[0] = r == 4 ? rot : reshape(im, rot, 3, xs);
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* RNN, GRU, LSTM: unrolled over the (static) sequence.  X W^T + Wb + Rb for all steps is one
 * nn.dense; each step adds H R^T (nn.dense) and applies the gate equations of the spec.        */

enum { RNN_PLAIN, RNN_GRU, RNN_LSTM };

typedef struct RnnActs {
  const char *f[3]; /* per direction: 3 activations (LSTM), 2 (GRU), 1 (RNN) */
} RnnActs;

static GPExpr *rnn_act(OxImporter *im, const char *name, GPExpr *x) {
  if (!x) return NULL;
  if (!strcmp(name, "Sigmoid")) return ox_op1(im, "sigmoid", x);
  if (!strcmp(name, "Tanh")) return ox_op1(im, "tanh", x);
  if (!strcmp(name, "Relu")) return ox_op1(im, "nn.relu", x);
  ox_unsupported("the activation %s is not supported (Sigmoid, Tanh, Relu)", name);
  return NULL;
}

static GPExpr *rnn_clip(OxImporter *im, GPExpr *x, double clip) {
  if (!x || clip <= 0) return x;
  Attrs a = {0};
  a_put(&a, "a_min", gp_attr_float(-clip));
  a_put(&a, "a_max", gp_attr_float(clip));
  return call1(im, "clip", x, &a);
}

/* x[..., lo:hi] along axis `axis` of a static tensor. */
static GPExpr *slice_axis(OxImporter *im, GPExpr *x, int32_t axis, int64_t lo, int64_t hi) {
  if (!x) return NULL;
  int32_t r = ox_rank(x);
  int64_t b[8] = {0}, e[8];
  const int64_t *s = ox_type(x)->tensor.shape;
  for (int32_t i = 0; i < r; i++) e[i] = s[i];
  b[axis] = lo, e[axis] = hi;
  Attrs a = {0};
  a_put(&a, "begin", a_ints(im, r, b));
  a_put(&a, "end", a_ints(im, r, e));
  return call1(im, "strided_slice", x, &a);
}

static GPExpr *dense(OxImporter *im, GPExpr *x, GPExpr *w) {
  if (!x || !w) return NULL;
  GPExpr *args[2] = {x, w};
  return call(im, "nn.dense", 2, args, NULL);
}

static GPExpr *concat_n(OxImporter *im, int32_t n, GPExpr **f, int64_t axis) {
  for (int32_t i = 0; i < n; i++)
    if (!f[i]) return NULL;
  Attrs at = {0};
  a_put(&at, "axis", gp_attr_int(axis));
  return call1(im, "concatenate", ox_tuple(im, n, f), &at);
}

static int rnn_common(OxImporter *im, const OxNode *n, GPExpr **out, int kind) {
  static const int32_t gates_of[3] = {1, 3, 4};
  int32_t G = gates_of[kind];
  GPExpr *x = ox_req(n, 0), *W = x ? ox_req(n, 1) : NULL, *R = W ? ox_req(n, 2) : NULL;
  if (!R || require_float(x, "X") != 0) return -1;
  GPExpr *B = ox_in(n, 3), *seq = ox_in(n, 4), *h0 = ox_in(n, 5), *c0 = kind == RNN_LSTM ? ox_in(n, 6) : NULL;
  GPExpr *P = kind == RNN_LSTM ? ox_in(n, 7) : NULL;
  if (ox_static(x, "X") != 0 || ox_static(W, "W") != 0 || ox_static(R, "R") != 0) return -1;
  if (ox_rank(x) != 3 || ox_rank(W) != 3 || ox_rank(R) != 3) return ox_invalid("X, W and R must have rank 3");
  int64_t layout = ox_attr_int(n, "layout", 0);
  if (layout == 1) {
    static const int64_t perm[3] = {1, 0, 2};
    Attrs ta = {0};
    a_put(&ta, "axes", a_ints(im, 3, perm));
    x = call1(im, "transpose", x, &ta);
    if (h0) h0 = call1(im, "transpose", h0, &ta);
    if (c0) c0 = call1(im, "transpose", c0, &ta);
    if (!x || (ox_in(n, 5) && !h0) || (kind == RNN_LSTM && ox_in(n, 6) && !c0)) return -1;
  }
  const int64_t *xs = ox_type(x)->tensor.shape;
  int64_t S = xs[0], Bn = xs[1], I = xs[2];
  int64_t H = ox_attr_int(n, "hidden_size", ox_type(R)->tensor.shape[2]);
  const char *dir = ox_attr_str(im, n, "direction", "forward");
  if (!dir) return -1;
  int32_t nd = !strcmp(dir, "bidirectional") ? 2 : 1;
  bool reverse_only = !strcmp(dir, "reverse");
  if (nd == 1 && !reverse_only && strcmp(dir, "forward") != 0) return ox_invalid("direction \"%s\"", dir);
  const int64_t *wsh = ox_type(W)->tensor.shape;
  if (wsh[0] != nd || wsh[1] != G * H || wsh[2] != I)
    return ox_invalid("W has shape (%lld, %lld, %lld), want (%d, %lld, %lld)", (long long)wsh[0], (long long)wsh[1],
                      (long long)wsh[2], (int)nd, (long long)(G * H), (long long)I);
  if (S < 1 || S > 4096) return ox_unsupported("a sequence of %lld steps is not supported", (long long)S);
  if (seq) {
    const int64_t *sl;
    int32_t ns;
    if (ox_const_ints(im, seq, "sequence_lens", &sl, &ns) != 0) return -1;
    for (int32_t i = 0; i < ns; i++)
      if (sl[i] != S) return ox_unsupported("sequence_lens shorter than the sequence are not supported");
  }
  if (kind == RNN_LSTM && ox_attr_int(n, "input_forget", 0)) return ox_unsupported("input_forget=1 is not supported");
  if (ox_has_attr(n, "activation_alpha") || ox_has_attr(n, "activation_beta"))
    return ox_unsupported("activation_alpha/activation_beta are not supported");
  static const char *const dflt[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
  int32_t nact = kind == RNN_PLAIN ? 1 : kind == RNN_GRU ? 2 : 3;
  const char *acts[2][3];
  for (int32_t d = 0; d < nd; d++)
    for (int32_t j = 0; j < nact; j++) acts[d][j] = dflt[kind][j];
  if (ox_has_attr(n, "activations")) {
    /* STRINGS attribute: read through the proto */
    const Gponnx__AttributeProto *ap = NULL;
    for (size_t i = 0; i < n->proto->n_attribute; i++)
      if (!strcmp(n->proto->attribute[i]->name, "activations")) ap = n->proto->attribute[i];
    if (!ap || ap->n_strings != (size_t)(nact * nd)) return ox_invalid("activations must have %d values", (int)(nact * nd));
    for (int32_t d = 0; d < nd; d++)
      for (int32_t j = 0; j < nact; j++) {
        const ProtobufCBinaryData *b = &ap->strings[d * nact + j];
        char *c = ox_alloc(im, b->len + 1);
        if (!c) return -1;
        memcpy(c, b->data, b->len);
        c[b->len] = 0;
        acts[d][j] = c;
      }
  }
  double clip = ox_attr_float(n, "clip", 0.0);
  bool lbr = kind == RNN_GRU && ox_attr_int(n, "linear_before_reset", 0) != 0;
  DLDataType dt = ox_dtype(x);
  int64_t s2[2] = {S * Bn, I}, wd2[2] = {G * H, I}, rd2[2] = {G * H, H}, bh[2] = {Bn, H}, gh1[1] = {G * H};
  GPExpr *x2 = reshape(im, x, 2, s2);
  GPExpr *ys[2], *yh[2], *yc[2];
  for (int32_t d = 0; d < nd; d++) {
    bool rev = reverse_only || d == 1;
    GPExpr *Wd = reshape(im, slice_axis(im, W, 0, d, d + 1), 2, wd2);
    GPExpr *Rd = reshape(im, slice_axis(im, R, 0, d, d + 1), 2, rd2);
    GPExpr *xw = dense(im, x2, Wd); /* (S * B, G * H) */
    GPExpr *rb = NULL;
    if (B) {
      GPExpr *bd = slice_axis(im, B, 0, d, d + 1);
      int64_t b2[1] = {2 * G * H};
      bd = reshape(im, bd, 1, b2);
      GPExpr *wb = slice_axis(im, bd, 0, 0, G * H);
      rb = reshape(im, slice_axis(im, bd, 0, G * H, 2 * G * H), 1, gh1);
      xw = op2(im, "add", xw, reshape(im, wb, 1, gh1));
      if (kind != RNN_GRU) { /* Rb is outside every product: fold it in now */
        xw = op2(im, "add", xw, rb);
        rb = NULL;
      }
    }
    int64_t s3[3] = {S, Bn, G * H};
    xw = reshape(im, xw, 3, s3);
    if (!xw) return -1;
    GPExpr *h = h0 ? reshape(im, slice_axis(im, h0, 0, d, d + 1), 2, bh) : ox_cast(im, filled(im, 2, bh, 0.0f), dt);
    GPExpr *c = NULL;
    if (kind == RNN_LSTM) c = c0 ? reshape(im, slice_axis(im, c0, 0, d, d + 1), 2, bh) : ox_cast(im, filled(im, 2, bh, 0.0f), dt);
    GPExpr *pi = NULL, *po = NULL, *pf = NULL;
    if (P) {
      int64_t p1[1] = {3 * H};
      GPExpr *pd = reshape(im, slice_axis(im, P, 0, d, d + 1), 1, p1);
      pi = slice_axis(im, pd, 0, 0, H), po = slice_axis(im, pd, 0, H, 2 * H), pf = slice_axis(im, pd, 0, 2 * H, 3 * H);
    }
    GPExpr **steps = ox_alloc(im, (size_t)S * sizeof(GPExpr *));
    if (!steps || !h || (kind == RNN_LSTM && !c)) return -1;
    for (int64_t k = 0; k < S; k++) {
      int64_t t = rev ? S - 1 - k : k;
      GPExpr *xt = reshape(im, slice_axis(im, xw, 0, t, t + 1), 2, (int64_t[2]){Bn, G * H});
      if (kind == RNN_PLAIN) {
        h = rnn_act(im, acts[d][0], rnn_clip(im, op2(im, "add", xt, dense(im, h, Rd)), clip));
      } else if (kind == RNN_GRU) {
        GPExpr *Rzr = slice_axis(im, Rd, 0, 0, 2 * H), *Rh = slice_axis(im, Rd, 0, 2 * H, 3 * H);
        GPExpr *hr = dense(im, h, Rzr); /* (B, 2H) */
        if (rb) hr = op2(im, "add", hr, slice_axis(im, rb, 0, 0, 2 * H));
        GPExpr *zr = op2(im, "add", slice_axis(im, xt, 1, 0, 2 * H), hr);
        GPExpr *z = rnn_act(im, acts[d][0], rnn_clip(im, slice_axis(im, zr, 1, 0, H), clip));
        GPExpr *r = rnn_act(im, acts[d][0], rnn_clip(im, slice_axis(im, zr, 1, H, 2 * H), clip));
        GPExpr *rbh = rb ? slice_axis(im, rb, 0, 2 * H, 3 * H) : NULL;
        GPExpr *hh;
        if (lbr) {
          hh = dense(im, h, Rh);
          if (rbh) hh = op2(im, "add", hh, rbh);
          hh = op2(im, "multiply", r, hh);
        } else {
          hh = dense(im, op2(im, "multiply", r, h), Rh);
          if (rbh) hh = op2(im, "add", hh, rbh);
        }
        GPExpr *ht = rnn_act(im, acts[d][1], rnn_clip(im, op2(im, "add", slice_axis(im, xt, 1, 2 * H, 3 * H), hh), clip));
        /* H = (1 - z) * ht + z * H = ht + z * (H - ht) */
        h = op2(im, "add", ht, op2(im, "multiply", z, op2(im, "subtract", h, ht)));
      } else {
        GPExpr *g = op2(im, "add", xt, dense(im, h, Rd)); /* gates i, o, f, c */
        GPExpr *gi = slice_axis(im, g, 1, 0, H), *go = slice_axis(im, g, 1, H, 2 * H);
        GPExpr *gf = slice_axis(im, g, 1, 2 * H, 3 * H), *gc = slice_axis(im, g, 1, 3 * H, 4 * H);
        if (pi) gi = op2(im, "add", gi, op2(im, "multiply", pi, c));
        if (pf) gf = op2(im, "add", gf, op2(im, "multiply", pf, c));
        GPExpr *it = rnn_act(im, acts[d][0], rnn_clip(im, gi, clip));
        GPExpr *ft = rnn_act(im, acts[d][0], rnn_clip(im, gf, clip));
        GPExpr *ct = rnn_act(im, acts[d][1], rnn_clip(im, gc, clip));
        c = op2(im, "add", op2(im, "multiply", ft, c), op2(im, "multiply", it, ct));
        if (po) go = op2(im, "add", go, op2(im, "multiply", po, c));
        GPExpr *ot = rnn_act(im, acts[d][0], rnn_clip(im, go, clip));
        h = op2(im, "multiply", ot, rnn_act(im, acts[d][2], c));
      }
      if (!h) return -1;
      steps[t] = reshape(im, h, 4, (int64_t[4]){1, 1, Bn, H});
    }
    ys[d] = concat_n(im, (int32_t)S, steps, 0); /* (S, 1, B, H) */
    yh[d] = reshape(im, h, 3, (int64_t[3]){1, Bn, H});
    yc[d] = kind == RNN_LSTM ? reshape(im, c, 3, (int64_t[3]){1, Bn, H}) : NULL;
    if (!ys[d] || !yh[d] || (kind == RNN_LSTM && !yc[d])) return -1;
  }
  GPExpr *Y = nd == 2 ? concat_n(im, 2, ys, 1) : ys[0];
  GPExpr *Yh = nd == 2 ? concat_n(im, 2, yh, 0) : yh[0];
  GPExpr *Yc = kind == RNN_LSTM ? (nd == 2 ? concat_n(im, 2, yc, 0) : yc[0]) : NULL;
  if (!Y || !Yh || (kind == RNN_LSTM && !Yc)) return -1;
  if (layout == 1) {
    static const int64_t p4[4] = {2, 0, 1, 3}, p3[3] = {1, 0, 2};
    Attrs a4 = {0}, a3 = {0};
    a_put(&a4, "axes", a_ints(im, 4, p4));
    a_put(&a3, "axes", a_ints(im, 3, p3));
    Y = call1(im, "transpose", Y, &a4);
    Yh = call1(im, "transpose", Yh, &a3);
    if (Yc) Yc = call1(im, "transpose", Yc, &a3);
    if (!Y || !Yh || (kind == RNN_LSTM && !Yc)) return -1;
  }
  out[0] = Y;
  if (n->nout > 1) out[1] = Yh;
  if (n->nout > 2 && kind == RNN_LSTM) out[2] = Yc;
  return 0;
}

static int cv_rnn(OxImporter *im, const OxNode *n, GPExpr **out) { return rnn_common(im, n, out, RNN_PLAIN); }
static int cv_gru(OxImporter *im, const OxNode *n, GPExpr **out) { return rnn_common(im, n, out, RNN_GRU); }
static int cv_lstm(OxImporter *im, const OxNode *n, GPExpr **out) { return rnn_common(im, n, out, RNN_LSTM); }

/* ------------------------------------------------------------------------------------------ */
/* LinearAttention: the reference recurrence unrolled over T, in float32.  State S (B, Hkv, dk,
 * dv); per step: S *= exp(decay) (gated), v = beta * (v - k_e^T S) (delta), S += k v^T, and
 * o = scale * q S (key/value heads repeated for grouped query heads).                         */

/* (B, T, H * c) -> (B, H, T, c) as float32 */
static GPExpr *heads4(OxImporter *im, GPExpr *x, int64_t heads, const char *what) {
  if (!x) return NULL;
  if (ox_rank(x) != 3 || ox_static(x, what) != 0) {
    if (ox_rank(x) != 3) ox_invalid("%s must have rank 3 (B, T, H * d)", what);
    return NULL;
  }
  return split_heads(im, ox_cast(im, x, GP_DT_F32), heads, what);
}

static GPExpr *step4(OxImporter *im, GPExpr *x, int64_t i) { return slice_axis(im, x, 2, i, i + 1); }

static int cv_linear_attention(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *q = ox_req(n, 0), *k = q ? ox_req(n, 1) : NULL, *v = k ? ox_req(n, 2) : NULL;
  if (!v || require_float(q, "query") != 0) return -1;
  GPExpr *past = ox_in(n, 3), *decay = ox_in(n, 4), *beta = ox_in(n, 5), *erase = ox_in(n, 6);
  const char *rule = ox_attr_str(im, n, "update_rule", "gated_delta");
  if (!rule) return -1;
  bool gating = !strcmp(rule, "gated") || !strcmp(rule, "gated_delta");
  bool delta = !strcmp(rule, "delta") || !strcmp(rule, "gated_delta");
  if (!gating && !delta && strcmp(rule, "linear") != 0) return ox_invalid("update_rule \"%s\"", rule);
  if (gating != (decay != NULL)) return ox_invalid("update_rule %s %s the decay input", rule, gating ? "needs" : "forbids");
  if (delta != (beta != NULL)) return ox_invalid("update_rule %s %s the beta input", rule, delta ? "needs" : "forbids");
  if (erase && !delta) return ox_invalid("update_rule %s forbids erase_gate", rule);
  int64_t hq = ox_attr_int(n, "q_num_heads", 0), hkv = ox_attr_int(n, "kv_num_heads", 0);
  if (hq < 1 || hkv < 1 || hq % hkv != 0) return ox_invalid("q_num_heads %lld must be a positive multiple of kv_num_heads %lld", (long long)hq, (long long)hkv);
  DLDataType odt = ox_dtype(q);
  GPExpr *q4 = heads4(im, q, hq, "query"), *k4 = q4 ? heads4(im, k, hkv, "key") : NULL;
  GPExpr *v4 = k4 ? heads4(im, v, hkv, "value") : NULL;
  if (!v4) return -1;
  const int64_t *qs = ox_type(q4)->tensor.shape;
  int64_t B = qs[0], T = qs[2], dk = qs[3], dv = ox_type(v4)->tensor.shape[3];
  if (T < 1 || T > 4096) return ox_unsupported("a sequence of %lld steps is not supported", (long long)T);
  GPExpr *d4 = NULL, *b4 = NULL, *e4 = NULL;
  if (decay) {
    if (ox_rank(decay) != 3 || ox_static(decay, "decay") != 0) return ox_invalid("decay must have rank 3");
    int64_t last = ox_type(decay)->tensor.shape[2];
    if (last == hkv) {
      int64_t s4[4] = {B, T, hkv, 1};
      static const int64_t perm[4] = {0, 2, 1, 3};
      d4 = transpose4(im, reshape(im, ox_cast(im, decay, GP_DT_F32), 4, s4), perm);
    } else if (last == hkv * dk) {
      d4 = heads4(im, decay, hkv, "decay");
    } else {
      return ox_invalid("decay's last dim %lld must be kv_num_heads or kv_num_heads * d_k", (long long)last);
    }
    if (!d4) return -1;
  }
  if (beta) {
    if (ox_rank(beta) != 3 || ox_static(beta, "beta") != 0) return ox_invalid("beta must have rank 3");
    int64_t last = ox_type(beta)->tensor.shape[2];
    if (last != hkv && last != 1) return ox_invalid("beta's last dim %lld must be kv_num_heads or 1", (long long)last);
    int64_t s4[4] = {B, T, last, 1};
    static const int64_t perm[4] = {0, 2, 1, 3};
    b4 = transpose4(im, reshape(im, ox_cast(im, beta, GP_DT_F32), 4, s4), perm);
    if (!b4) return -1;
  }
  if (erase && !(e4 = heads4(im, erase, hkv, "erase_gate"))) return -1;
  int64_t ss[4] = {B, hkv, dk, dv};
  GPExpr *S = past ? ox_cast(im, past, GP_DT_F32) : filled(im, 4, ss, 0.0f);
  if (!S) return -1;
  double scale = ox_attr_float(n, "scale", 0.0);
  if (scale == 0.0) scale = 1.0 / sqrt((double)dk);
  GPExpr *sc = ox_scalar(im, GP_DT_F32, scale);
  GPExpr **outs = ox_alloc(im, (size_t)T * sizeof(GPExpr *));
  if (!outs) return -1;
  int64_t kcol[4] = {B, hkv, dk, 1};
  for (int64_t i = 0; i < T; i++) {
    GPExpr *kt = step4(im, k4, i), *vt = step4(im, v4, i), *qt = step4(im, q4, i); /* (B, H, 1, d) */
    if (gating) {
      GPExpr *g = ox_op1(im, "exp", step4(im, d4, i)); /* (B, Hkv, 1, dk | 1) */
      int64_t gs[4] = {B, hkv, ox_type(d4)->tensor.shape[3], 1};
      S = op2(im, "multiply", S, reshape(im, g, 4, gs));
    }
    if (delta) {
      GPExpr *ke = e4 ? op2(im, "multiply", step4(im, e4, i), kt) : kt;
      GPExpr *got = bmm4(im, ke, S, false); /* (B, Hkv, 1, dv) */
      vt = op2(im, "multiply", step4(im, b4, i), op2(im, "subtract", vt, got));
    }
    S = op2(im, "add", S, op2(im, "multiply", reshape(im, kt, 4, kcol), vt));
    GPExpr *Sr = hq == hkv ? S : repeat_heads(im, S, hq / hkv);
    outs[i] = op2(im, "multiply", bmm4(im, qt, Sr, false), sc); /* (B, Hq, 1, dv) */
    if (!outs[i]) return -1;
  }
  GPExpr *o = concat_n(im, (int32_t)T, outs, 2);
  static const int64_t perm[4] = {0, 2, 1, 3};
  int64_t o3[3] = {B, T, hq * dv};
  out[0] = ox_cast(im, reshape(im, transpose4(im, o, perm), 3, o3), odt);
  if (!out[0]) return -1;
  if (n->nout > 1) out[1] = ox_cast(im, S, past ? ox_dtype(past) : odt);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* FlexAttention (ai.onnx.preview) without score_mod / prob_mod graphs: softmax(Q K^T * scale) V
 * over 4-d (B, H, L, E) inputs, key/value heads repeated for grouped query heads.              */

static int cv_flex_attention(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *q = ox_req(n, 0), *k = q ? ox_req(n, 1) : NULL, *v = k ? ox_req(n, 2) : NULL;
  if (!v || require_float(q, "Q") != 0) return -1;
  if (ox_has_attr(n, "score_mod") || ox_has_attr(n, "prob_mod"))
    return ox_unsupported("FlexAttention's score_mod / prob_mod graphs are not supported");
  if (ox_static(q, "Q") != 0 || ox_static(k, "K") != 0 || ox_static(v, "V") != 0) return -1;
  if (ox_rank(q) != 4 || ox_rank(k) != 4 || ox_rank(v) != 4) return ox_invalid("Q, K and V must have rank 4");
  int64_t hq = ox_type(q)->tensor.shape[1], hkv = ox_type(k)->tensor.shape[1], E = ox_type(q)->tensor.shape[3];
  if (hkv < 1 || hq % hkv != 0 || ox_type(v)->tensor.shape[1] != hkv)
    return ox_invalid("%lld query heads cannot share %lld key/value heads", (long long)hq, (long long)hkv);
  if (hq != hkv) {
    k = repeat_heads(im, k, hq / hkv);
    v = repeat_heads(im, v, hq / hkv);
    if (!k || !v) return -1;
  }
  DLDataType dt = ox_dtype(q), sdt = dt.bits == 16 ? GP_DT_F32 : dt;
  double scale = ox_has_attr(n, "scale") ? ox_attr_float(n, "scale", 1.0) : 1.0 / sqrt((double)E);
  GPExpr *qk = ox_cast(im, bmm4(im, q, k, true), sdt);
  qk = op2(im, "multiply", qk, ox_scalar(im, sdt, scale));
  Attrs sa = {0};
  a_put(&sa, "axis", gp_attr_int(-1));
  GPExpr *p = ox_cast(im, call1(im, "nn.softmax", qk, &sa), dt);
  out[0] = bmm4(im, p, v, false);
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Col2Im: a transposed convolution of the blocks (N, C * K, L1, L2, ...) with a one-hot weight
 * (C * K, 1, k...) in C groups, which adds each block element back to its image position.      */

static int cv_col2im(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *is = x ? ox_req(n, 1) : NULL, *bs = is ? ox_req(n, 2) : NULL;
  if (!bs || require_float(x, "input") != 0) return -1;
  if (ox_rank(x) != 3 || ox_static(x, "input") != 0) return ox_invalid("input must be a static (N, C * K, L)");
  const int64_t *img, *blk;
  int32_t ni, nb;
  if (ox_const_ints(im, is, "image_shape", &img, &ni) != 0 || ox_const_ints(im, bs, "block_shape", &blk, &nb) != 0)
    return -1;
  if (ni != nb || ni < 1 || ni > 3) return ox_unsupported("Col2Im with %d spatial dims is not supported (1 to 3)", (int)ni);
  int32_t nd = ni;
  int64_t s[3], d[3], pb[3], pe[3], L[3], K = 1, Ltot = 1;
  int32_t c;
  const int64_t *v;
  v = ox_attr_ints(n, "strides", &c);
  for (int32_t i = 0; i < nd; i++) s[i] = c == nd ? v[i] : 1;
  v = ox_attr_ints(n, "dilations", &c);
  for (int32_t i = 0; i < nd; i++) d[i] = c == nd ? v[i] : 1;
  v = ox_attr_ints(n, "pads", &c);
  for (int32_t i = 0; i < nd; i++) pb[i] = c == 2 * nd ? v[i] : 0, pe[i] = c == 2 * nd ? v[nd + i] : 0;
  for (int32_t i = 0; i < nd; i++) {
    if (blk[i] < 1 || s[i] < 1 || d[i] < 1 || pb[i] < 0 || pe[i] < 0) return ox_invalid("invalid block_shape, strides, dilations or pads");
    int64_t num = img[i] + pb[i] + pe[i] - d[i] * (blk[i] - 1) - 1;
    if (num < 0) return ox_invalid("the block does not fit the padded image");
    L[i] = num / s[i] + 1;
    K *= blk[i], Ltot *= L[i];
  }
  const int64_t *xs = ox_type(x)->tensor.shape;
  if (xs[1] % K != 0 || xs[2] != Ltot)
    return ox_invalid("input (%lld, %lld, %lld) does not match %lld block elements and %lld blocks", (long long)xs[0],
                      (long long)xs[1], (long long)xs[2], (long long)K, (long long)Ltot);
  int64_t N = xs[0], C = xs[1] / K;
  int64_t xsh[5] = {N, C * K, 0, 0, 0}, wsh[5] = {C * K, 1, 0, 0, 0}, opad[3];
  for (int32_t i = 0; i < nd; i++) {
    xsh[2 + i] = L[i], wsh[2 + i] = blk[i];
    opad[i] = img[i] - ((L[i] - 1) * s[i] - pb[i] - pe[i] + d[i] * (blk[i] - 1) + 1);
  }
  GPTensor *wt = gp_tensor_alloc(ox_dtype(x), nd + 2, wsh, true);
  if (!wt) return -1;
  char *wp = (char *)wt->dl.data + wt->dl.byte_offset;
  size_t es = gp_dtype_bytes(ox_dtype(x));
  memset(wp, 0, (size_t)(C * K * K) * es);
  for (int64_t ch = 0; ch < C * K; ch++) { /* weight[c * K + k, 0, k] = 1 */
    int64_t k = ch % K;
    char *dst = wp + (size_t)(ch * K + k) * es;
    if (es == 2) {
      uint16_t one = 0x3c00;
      memcpy(dst, &one, 2);
    } else if (es == 4) {
      float one = 1.0f;
      memcpy(dst, &one, 4);
    } else {
      double one = 1.0;
      memcpy(dst, &one, 8);
    }
  }
  GPExpr *w = ox_constant(im, wt);
  static const char *const ops[4] = {NULL, "nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose"};
  static const char *const dls[4] = {NULL, "NCW", "NCHW", "NCDHW"};
  static const char *const kls[4] = {NULL, "IOW", "IOHW", "IODHW"};
  int64_t pad[6];
  for (int32_t i = 0; i < nd; i++) pad[i] = pb[i], pad[nd + i] = pe[i];
  Attrs a = {0};
  a_put(&a, "channels", gp_attr_int(C));
  a_put(&a, "kernel_size", a_ints(im, nd, blk));
  a_put(&a, "strides", a_ints(im, nd, s));
  a_put(&a, "output_padding", a_ints(im, nd, opad));
  a_put(&a, "padding", a_ints(im, 2 * nd, pad));
  a_put(&a, "dilation", a_ints(im, nd, d));
  a_put(&a, "groups", gp_attr_int(C));
  a_put(&a, "data_layout", gp_attr_str(dls[nd]));
  a_put(&a, "kernel_layout", gp_attr_str(kls[nd]));
  GPExpr *args[2] = {reshape(im, x, nd + 2, xsh), w};
  if (!args[0] || !w) return -1;
  out[0] = call(im, ops[nd], 2, args, &a);
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */

const OxConverter ox_cv_nn[] = {
    {"Col2Im", NULL, 18, cv_col2im},
    {"FlexAttention", "ai.onnx.preview", 1, cv_flex_attention},
    {"LinearAttention", NULL, 1, cv_linear_attention},
    {"RNN", NULL, 1, cv_rnn},
    {"GRU", NULL, 1, cv_gru},
    {"LSTM", NULL, 1, cv_lstm},
    {"SwiGLU", NULL, 1, cv_swiglu},
    {"RotaryEmbedding", NULL, 23, cv_rotary_embedding},
    {"CausalConvWithState", NULL, 1, cv_causal_conv_with_state},
    {"NegativeLogLikelihoodLoss", NULL, 12, cv_nll_loss},
    {"SoftmaxCrossEntropyLoss", NULL, 12, cv_softmax_ce_loss},
    {"Attention", NULL, 23, cv_attention},
    {"ConvTranspose", NULL, 1, cv_conv_transpose},
    {"MatMul", NULL, 1, cv_matmul},
    {"LogSoftmax", NULL, 1, cv_log_softmax_v1},
    {"LogSoftmax", NULL, 13, cv_log_softmax_v13},
    {"LayerNormalization", NULL, 17, cv_layer_norm},
    {"RMSNormalization", NULL, 23, cv_rms_norm},
    {"GroupNormalization", NULL, 18, cv_group_norm18},
    {"GroupNormalization", NULL, 21, cv_group_norm21},
    {"InstanceNormalization", NULL, 1, cv_instance_norm},
    {"MeanVarianceNormalization", NULL, 9, cv_mvn},
    {"LpNormalization", NULL, 1, cv_lp_norm},
    {"LpPool", NULL, 1, cv_lp_pool},
    {NULL, NULL, 0, NULL},
};
