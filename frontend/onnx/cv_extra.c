/* cv_extra.c -- ONNX converters for the ops outside the other tables:
 *   image: Resize, Upsample, GridSample, AffineGrid, RoiAlign, DeformConv, MaxUnpool;
 *   quantization: QuantizeLinear, DequantizeLinear (per tensor, per axis, blocked),
 *     DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv;
 *   signal: DFT, STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix;
 *   the rest: Einsum, Det, NonMaxSuppression, BitCast, TfIdfVectorizer, Adagrad / Momentum / Adam
 *     (ai.onnx.preview.training), Binarizer and TreeEnsemble (ai.onnx.ml).
 *
 * Resize maps to image.resize1d/2d/3d as TVM's from_onnx does when Relay's op computes the
 * same thing: the resized axes are the spatial axes of an NCW / NCHW / NCDHW input and each
 * scale is out / in exactly (Relay's op derives its coordinate scale from the sizes, ONNX from the
 * given scale).  Everything else -- other axes, inexact scales (floor(in * scale) != in *
 * scale), keep_aspect_ratio_policy, half_pixel_symmetric, antialias -- is computed as ONNX's
 * reference does it, one axis at a time: the interpolation is separable and linear, so each
 * axis is a matrix product with a (out x in) weight matrix built here (nn.dense on the axis
 * moved last).  The same idea (a fixed matrix through nn.dense) serves RoiAlign, DFT and STFT.
 *
 * The quantization ops decompose into Relay elementwise ops as TVM's qnn lowering does:
 * QuantizeLinear is clip(round(x / scale) + zero_point) cast to the output type; the integer
 * matrix ops run in int32 (cast, subtract the zero points, nn.dense / nn.conv2d with out_dtype
 * int32) and requantize in float32.
 *
 * Ops whose result shape depends on values (NonMaxSuppression) or whose structure does
 * (RoiAlign's boxes) read those inputs at import (ox_const) and are unsupported when they are
 * runtime values.  A few converters use ops of the other groups (round, max/min, comparisons,
 * scatter_elements); they check with have_op() and report GP_ERR_UNSUPPORTED naming the op
 * when it is missing. */
#include "common/checked.h"
#include "frontend/onnx/onnx_impl.h"

#include "eval/kernel.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define MAXR 8 /* ranks handled by the converters below */

static const DLDataType k_f32 = {kDLFloat, 32, 1};
static const DLDataType k_i32 = {kDLInt, 32, 1};

/* ------------------------------------------------------------------------------------------ */
/* Small builders                                                                              */

static GPExpr *mk_transpose(OxImporter *im, GPExpr *e, int32_t n, const int64_t *perm) {
  const char *keys[] = {"axes"};
  GPAttrValue vals[] = {gp_attr_ints(n, perm)};
  return ox_call(im, "transpose", 1, &e, 1, keys, vals);
}

static GPExpr *mk_reshape(OxImporter *im, GPExpr *e, int32_t n, const int64_t *shape) {
  const char *keys[] = {"newshape"};
  GPAttrValue vals[] = {gp_attr_ints(n, shape)};
  return ox_call(im, "reshape", 1, &e, 1, keys, vals);
}

static GPExpr *mk_clip(OxImporter *im, GPExpr *e, double lo, double hi) {
  const char *keys[] = {"a_min", "a_max"};
  GPAttrValue vals[] = {gp_attr_float(lo), gp_attr_float(hi)};
  return ox_call(im, "clip", 1, &e, 2, keys, vals);
}

static GPExpr *mk_dense(OxImporter *im, GPExpr *x, GPExpr *w, DLDataType out_dtype) {
  GPExpr *args[] = {x, w};
  const char *keys[] = {"out_dtype"};
  GPAttrValue vals[] = {gp_attr_dtype(out_dtype)};
  return ox_call(im, "nn.dense", 2, args, 1, keys, vals);
}

static bool have_op(const char *name) {
  const GPOp *op = gp_op_get(name);
  if (!op) gp_error_clear();
  return op != NULL;
}

/* round half to even: Relay's round when the op set has it, else (for |v| < 2^22 in float32,
 * 2^51 in float64, which the callers guarantee by clipping first) the trick
 * (v + 1.5 * 2^23) - 1.5 * 2^23 (2^52 in float64), exact in IEEE round-to-nearest-even. */
static GPExpr *mk_round(OxImporter *im, GPExpr *e) {
  if (have_op("round")) return ox_op1(im, "round", e);
  if (ox_dtype(e).bits == 16 && !(e = ox_cast(im, e, k_f32))) return NULL;
  GPExpr *c = ox_scalar(im, ox_dtype(e), ox_dtype(e).bits == 64 ? 6755399441055744.0 : 12582912.0);
  GPExpr *a = c ? ox_op2(im, "add", e, c) : NULL;
  return a ? ox_op2(im, "subtract", a, c) : NULL;
}

/* A constant of dtype dt and the given shape from doubles. */
static GPExpr *mk_const(OxImporter *im, DLDataType dt, int32_t ndim, const int64_t *shape, const double *v) {
  GPTensor *t = gp_tensor_alloc(dt, ndim, shape, true);
  if (!t) return NULL;
  int k = gp_k_dtype(dt);
  if (k < 0) {
    gp_release(t);
    return (void)ox_unsupported("dtype %s", gp_ops_dtype(dt).s), NULL;
  }
  size_t es = gp_k_elem_size(k);
  int64_t n = gp_k_numel(&t->dl);
  for (int64_t i = 0; i < n; i++) gp_k_store_f64((char *)t->dl.data + (size_t)i * es, k, v[i]);
  return ox_constant(im, t);
}

/* An input's compile-time values as doubles (pool-owned); *n = 0 when absent or empty. */
static int const_f64s(OxImporter *im, GPExpr *e, const char *what, const double **out, int64_t *n) {
  *out = NULL;
  *n = 0;
  if (!e) return 0;
  GPTensor *t = ox_const(im, e, what);
  if (!t) return -1;
  int64_t cnt = gp_k_numel(&t->dl);
  double *v = ox_alloc_n(im, cnt, 1, sizeof(double), what);
  if (!v) return -1;
  for (int64_t i = 0; i < cnt; i++) v[i] = gp_tensor_get_f64(t, i);
  *out = v;
  *n = cnt;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Resize, Upsample                                                                            */

typedef struct RzAxis {
  int64_t in, out;
  double scale; /* the coordinate scale (ONNX's scale_factor) */
  double start, end; /* roi */
  bool resized;
} RzAxis;

typedef struct RzAttrs {
  const char *mode;    /* nearest, linear, cubic */
  const char *coord;   /* coordinate_transformation_mode */
  const char *nearest; /* nearest_mode */
  double cubic_a, extrap;
  bool exclude, antialias;
} RzAttrs;

static double keys_cubic(double x, double A) {
  x = fabs(x);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0;
}

/* ONNX's input coordinate of output index x along axis a (reference op_resize.py). */
static double rz_coord(const RzAttrs *at, const RzAxis *a, double x, bool *outside) {
  double s = a->scale, in = (double)a->in, ow = s * in;
  const char *m = at->coord;
  *outside = false;
  if (strcmp(m, "align_corners") == 0) return ow == 1 ? 0 : x * (in - 1) / (ow - 1);
  if (strcmp(m, "asymmetric") == 0) return x / s;
  if (strcmp(m, "tf_crop_and_resize") == 0) {
    double v = ow == 1 ? (a->end - a->start) * (in - 1) / 2 : x * (a->end - a->start) * (in - 1) / (ow - 1);
    v += a->start * (in - 1);
    *outside = v < 0 || v > in - 1;
    return v;
  }
  if (strcmp(m, "pytorch_half_pixel") == 0) return ow == 1 ? -0.5 : (x + 0.5) / s - 0.5;
  if (strcmp(m, "half_pixel_symmetric") == 0) {
    double adj = (double)a->out / ow, center = in / 2, off = center * (1 - adj);
    return off + (x + 0.5) / s - 0.5;
  }
  if (strcmp(m, "tf_half_pixel_for_nn") == 0) return (x + 0.5) / s;
  return (x + 0.5) / s - 0.5; /* half_pixel */
}

static int64_t clampi(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }
static int64_t fidx(double v) { /* floor as an index, defined everywhere */
  if (isnan(v)) return 0;
  v = floor(v);
  return v > 1e15 ? (int64_t)1e15 : v < -1e15 ? -(int64_t)1e15 : (int64_t)v;
}

/* The (out x in) interpolation matrix of one axis into w (zeroed by the caller). */
static int rz_weights(const RzAttrs *at, const RzAxis *a, double *w) {
  int64_t I = a->in, hi = a->in - 1;
  bool nearest = strcmp(at->mode, "nearest") == 0, cubic = strcmp(at->mode, "cubic") == 0;
  double c[512];
  for (int64_t x = 0; x < a->out; x++) {
    bool outside;
    double xo = rz_coord(at, a, (double)x, &outside);
    double *row = w + x * I;
    if (outside)
      return ox_unsupported("tf_crop_and_resize with an roi outside the image on a path other than "
                            "image.resize (axes other than the spatial ones, or inexact scales)");
    if (nearest) {
      int64_t i;
      const char *nm = at->nearest;
      if (xo == floor(xo)) i = fidx(xo);
      else if (strcmp(nm, "round_prefer_ceil") == 0) i = fidx(xo + 0.5);
      else if (strcmp(nm, "floor") == 0) i = fidx(xo);
      else if (strcmp(nm, "ceil") == 0) i = fidx(xo) + 1;
      else i = -fidx(-(xo - 0.5)); /* round_prefer_floor: ceil(x - 0.5) */
      row[clampi(i, 0, hi)] += 1.0;
      continue;
    }
    int64_t i0 = fidx(xo);
    double r = isnan(xo) ? 0 : xo - (double)i0;
    double s = at->antialias && a->scale < 1 ? a->scale : 1.0;
    int64_t start, n;
    if (cubic) {
      start = fidx(-2 / s) + 1;
      n = 2 - 2 * start;
    } else {
      start = fidx(-1 / s) + 1;
      n = 2 - 2 * start;
    }
    if (n > 512) return ox_unsupported("antialias with a scale below 1/255");
    double sum = 0;
    for (int64_t k = 0; k < n; k++) {
      double arg = ((double)(start + k) - r) * s;
      double cf = cubic ? keys_cubic(arg, at->cubic_a) : fmax(0.0, fmin(1.0, 1 - fabs(arg)));
      int64_t idx = i0 + start + k;
      if (at->exclude && (idx < 0 || idx >= I)) cf = 0;
      c[k] = cf;
      sum += cf;
    }
    bool norm = s < 1 || at->exclude;
    for (int64_t k = 0; k < n; k++)
      row[clampi(i0 + start + k, 0, hi)] += norm && sum != 0 ? c[k] / sum : c[k];
  }
  return 0;
}

/* Resize every resized axis of x by a weight matrix (the ONNX reference's arithmetic). */
static GPExpr *rz_general(OxImporter *im, GPExpr *x, const RzAttrs *at, const RzAxis *ax, int32_t r) {
  DLDataType dt = ox_dtype(x);
  if (!ox_is_float(dt)) return (void)ox_unsupported("Resize of %s input outside image.resize's cases", gp_ops_dtype(dt).s), NULL;
  int64_t cur[MAXR];
  for (int32_t d = 0; d < r; d++) cur[d] = ax[d].in;
  for (int32_t d = 0; d < r; d++) {
    if (!ax[d].resized) continue;
    if (ax[d].in == 0 || ax[d].out == 0) return (void)ox_unsupported("Resize of an empty axis"), NULL;
    int64_t nw;
    double *w = OX_PROD(GP_MAX_TENSOR_ELEMS, &nw, "Resize's weights", ax[d].out, ax[d].in) == 0
                    ? ox_alloc_n(im, nw, 0, sizeof(double), "Resize's weights")
                    : NULL;
    if (!w) return NULL;
    if (rz_weights(at, &ax[d], w) != 0) return NULL;
    GPExpr *W = mk_const(im, dt, 2, (int64_t[]){ax[d].out, ax[d].in}, w);
    if (!W) return NULL;
    /* move axis d last, flatten, dense, restore */
    int64_t perm[MAXR], inv[MAXR], pshape[MAXR];
    int32_t k = 0;
    for (int32_t e = 0; e < r; e++)
      if (e != d) perm[k++] = e;
    perm[k] = d;
    for (int32_t e = 0; e < r; e++) inv[perm[e]] = e, pshape[e] = cur[perm[e]];
    GPExpr *t = x;
    bool last = d == r - 1;
    if (!last && !(t = mk_transpose(im, t, r, perm))) return NULL;
    int64_t rows = 1;
    for (int32_t e = 0; e < r - 1; e++) rows *= pshape[e];
    if (!(t = mk_reshape(im, t, 2, (int64_t[]){rows, ax[d].in}))) return NULL;
    if (!(t = mk_dense(im, t, W, dt))) return NULL;
    pshape[r - 1] = ax[d].out;
    if (!(t = mk_reshape(im, t, r, pshape))) return NULL;
    if (!last && !(t = mk_transpose(im, t, r, inv))) return NULL;
    cur[d] = ax[d].out;
    x = t;
  }
  return x;
}

/* image.resize{1,2,3}d when Relay's op computes what ONNX asks; NULL without error otherwise. */
static GPExpr *rz_relay(OxImporter *im, GPExpr *x, const RzAttrs *at, const RzAxis *ax, int32_t r,
                        bool *ok) {
  *ok = false;
  if (r < 3 || r > 5) return NULL;
  for (int32_t d = 0; d < r; d++) {
    if (d < 2 && ax[d].resized) return NULL;
    if (ax[d].resized && (double)ax[d].out != ax[d].scale * (double)ax[d].in) return NULL;
  }
  if (at->antialias && strcmp(at->mode, "nearest") != 0)
    for (int32_t d = 2; d < r; d++)
      if (ax[d].scale < 1) return NULL;
  const char *coord = at->coord;
  if (strcmp(coord, "half_pixel_symmetric") == 0) coord = "half_pixel"; /* same when exact */
  if (strcmp(coord, "pytorch_half_pixel") == 0 && strcmp(at->mode, "cubic") == 0)
    for (int32_t d = 2; d < r; d++)
      if (ax[d].out == 1) return NULL; /* ONNX -0.5, Relay 0 */
  int32_t nsp = r - 2;
  int64_t size[3];
  double roi[6];
  for (int32_t s = 0; s < nsp; s++) {
    size[s] = ax[2 + s].out;
    roi[s] = ax[2 + s].start;
    roi[nsp + s] = ax[2 + s].end;
  }
  static const char *const ops[] = {"image.resize1d", "image.resize2d", "image.resize3d"};
  static const char *const layouts[] = {"NCW", "NCHW", "NCDHW"};
  const char *method = strcmp(at->mode, "nearest") == 0 ? "nearest_neighbor" : at->mode;
  const char *keys[] = {"size", "roi", "layout", "method", "coordinate_transformation_mode",
                        "rounding_method", "cubic_alpha", "cubic_exclude", "extrapolation_value"};
  GPAttrValue vals[] = {
      gp_attr_ints(nsp, size),
      {.kind = GP_ATTR_FLOATS, .n = 2 * nsp, .floats = roi},
      gp_attr_str(layouts[nsp - 1]),
      gp_attr_str(method),
      gp_attr_str(coord),
      gp_attr_str(strcmp(at->mode, "nearest") == 0 ? at->nearest : ""),
      gp_attr_float(at->cubic_a),
      gp_attr_int(at->exclude),
      gp_attr_float(at->extrap),
  };
  *ok = true;
  return ox_call(im, ops[nsp - 1], 1, &x, (int32_t)GP_ARRAY_LEN(keys), keys, vals);
}

static int rz_finish(OxImporter *im, GPExpr *x, const RzAttrs *at, RzAxis *ax, int32_t r, GPExpr **out) {
  if (strcmp(at->mode, "nearest") != 0 && strcmp(at->mode, "linear") != 0 && strcmp(at->mode, "cubic") != 0)
    return ox_unsupported("mode \"%s\"", at->mode);
  static const char *const coords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                       "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                                       "tf_crop_and_resize"};
  bool known = false;
  for (size_t i = 0; i < GP_ARRAY_LEN(coords); i++) known |= strcmp(at->coord, coords[i]) == 0;
  if (!known) return ox_unsupported("coordinate_transformation_mode \"%s\"", at->coord);
  static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  known = false;
  for (size_t i = 0; i < GP_ARRAY_LEN(nms); i++) known |= strcmp(at->nearest, nms[i]) == 0;
  if (!known) return ox_unsupported("nearest_mode \"%s\"", at->nearest);
  bool any = false;
  for (int32_t d = 0; d < r; d++) {
    ax[d].resized = ax[d].out != ax[d].in || ax[d].scale != 1.0 ||
                    (strcmp(at->coord, "tf_crop_and_resize") == 0 && (ax[d].start != 0 || ax[d].end != 1));
    any |= ax[d].resized;
  }
  if (!any) {
    out[0] = x;
    return 0;
  }
  bool ok;
  GPExpr *y = rz_relay(im, x, at, ax, r, &ok);
  if (!ok) y = rz_general(im, x, at, ax, r);
  if (!y) return -1;
  out[0] = y;
  return 0;
}

static int cv_resize(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x || ox_static(x, "X") != 0) return -1;
  int32_t r = ox_rank(x);
  if (r < 1 || r > MAXR) return ox_unsupported("Resize of rank %d", (int)r);
  const int64_t *shape = ox_type(x)->tensor.shape;
  RzAttrs at;
  at.mode = ox_attr_str(im, n, "mode", "nearest");
  at.coord = n->opset >= 11 ? ox_attr_str(im, n, "coordinate_transformation_mode", "half_pixel") : "asymmetric";
  at.nearest = n->opset >= 11 ? ox_attr_str(im, n, "nearest_mode", "round_prefer_floor") : "floor";
  at.cubic_a = ox_attr_float(n, "cubic_coeff_a", -0.75);
  at.exclude = ox_attr_int(n, "exclude_outside", 0) != 0;
  at.extrap = ox_attr_float(n, "extrapolation_value", 0.0);
  at.antialias = ox_attr_int(n, "antialias", 0) != 0;
  const char *policy = ox_attr_str(im, n, "keep_aspect_ratio_policy", "stretch");
  if (gp_error_kind() != GP_OK) return -1;
  int32_t naxes;
  const int64_t *axes_attr = ox_attr_ints(n, "axes", &naxes);
  GPExpr *roi_e = n->opset >= 11 ? ox_in(n, 1) : NULL;
  GPExpr *scales_e = n->opset >= 11 ? ox_in(n, 2) : ox_in(n, 1);
  GPExpr *sizes_e = n->opset >= 11 ? ox_in(n, 3) : NULL;
  const double *roi, *scales;
  int64_t nroi, nscales;
  if (const_f64s(im, roi_e, "roi", &roi, &nroi) != 0 || const_f64s(im, scales_e, "scales", &scales, &nscales) != 0)
    return -1;
  const int64_t *sizes = NULL;
  int32_t nsizes = 0;
  if (sizes_e) {
    GPTensor *st = ox_const(im, sizes_e, "sizes");
    if (!st) return -1;
    if (gp_k_numel(&st->dl) > 0 && ox_const_ints(im, sizes_e, "sizes", &sizes, &nsizes) != 0) return -1;
  }
  int32_t na = naxes >= 0 ? naxes : r;
  int32_t axes[MAXR];
  bool seen[MAXR] = {false};
  for (int32_t i = 0; i < na; i++) {
    int64_t a = naxes >= 0 ? axes_attr[i] : i;
    if (a < 0) a += r;
    if (a < 0 || a >= r || seen[a]) return ox_invalid("axes: bad or repeated axis %lld for rank %d", (long long)(naxes >= 0 ? axes_attr[i] : i), (int)r);
    seen[a] = true;
    axes[i] = (int32_t)a;
  }
  RzAxis ax[MAXR];
  for (int32_t d = 0; d < r; d++) ax[d] = (RzAxis){shape[d], shape[d], 1.0, 0.0, 1.0, false};
  if (nroi > 0) {
    if (nroi != 2 * na) return ox_invalid("roi has %lld values, expected %d", (long long)nroi, (int)(2 * na));
    for (int32_t i = 0; i < na; i++) ax[axes[i]].start = roi[i], ax[axes[i]].end = roi[na + i];
  }
  if (nscales > 0 && nsizes > 0) return ox_invalid("only one of scales and sizes may be given");
  if (nscales > 0) {
    if (nscales != na) return ox_invalid("scales has %lld values, expected %d", (long long)nscales, (int)na);
    bool crop = strcmp(at.coord, "tf_crop_and_resize") == 0;
    for (int32_t i = 0; i < na; i++) {
      RzAxis *a = &ax[axes[i]];
      if (!(scales[i] > 0)) return ox_invalid("scales must be positive");
      a->scale = scales[i];
      double o = (double)a->in * (crop ? a->end - a->start : 1.0) * scales[i];
      if (!(o < 1e15)) return ox_unsupported("scale %g too large", scales[i]);
      a->out = (int64_t)floor(o);
    }
  } else if (nsizes > 0) {
    if (nsizes != na) return ox_invalid("sizes has %d values, expected %d", (int)nsizes, (int)na);
    if (strcmp(policy, "stretch") == 0) {
      for (int32_t i = 0; i < na; i++) {
        RzAxis *a = &ax[axes[i]];
        if (sizes[i] < 0) return ox_invalid("sizes must be >= 0");
        a->out = sizes[i];
        a->scale = a->in ? (double)sizes[i] / (double)a->in : 1.0;
      }
    } else if (strcmp(policy, "not_larger") == 0 || strcmp(policy, "not_smaller") == 0) {
      bool larger = strcmp(policy, "not_smaller") == 0;
      double s = larger ? 0 : INFINITY;
      for (int32_t i = 0; i < na; i++) {
        double v = (double)sizes[i] / (double)ax[axes[i]].in;
        s = larger ? fmax(s, v) : fmin(s, v);
      }
      for (int32_t i = 0; i < na; i++) {
        RzAxis *a = &ax[axes[i]];
        a->scale = s;
        a->out = (int64_t)floor(s * (double)a->in + 0.5);
      }
    } else {
      return ox_unsupported("keep_aspect_ratio_policy \"%s\"", policy);
    }
  } else {
    return ox_invalid("one of scales and sizes is required");
  }
  return rz_finish(im, x, &at, ax, r, out);
}

static int cv_upsample(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x || ox_static(x, "X") != 0) return -1;
  int32_t r = ox_rank(x);
  if (r < 1 || r > MAXR) return ox_unsupported("Upsample of rank %d", (int)r);
  RzAttrs at = {0};
  at.mode = ox_attr_str(im, n, "mode", "nearest");
  if (strcmp(at.mode, "bilinear") == 0) at.mode = "linear";
  at.coord = "asymmetric";
  at.nearest = "floor";
  at.cubic_a = -0.75;
  const double *scales;
  int64_t ns;
  float fs[MAXR];
  double ds[MAXR];
  if (n->opset < 9) {
    int32_t c;
    const float *f = ox_attr_floats(n, "scales", &c);
    if (c != r) return ox_invalid("scales must have %d values", (int)r);
    memcpy(fs, f, (size_t)c * sizeof(float));
    for (int32_t i = 0; i < r; i++) ds[i] = fs[i];
    scales = ds;
    ns = r;
  } else if (const_f64s(im, ox_req(n, 1), "scales", &scales, &ns) != 0) {
    return -1;
  }
  if (ns != r) return ox_invalid("scales has %lld values, expected %d", (long long)ns, (int)r);
  RzAxis ax[MAXR];
  const int64_t *shape = ox_type(x)->tensor.shape;
  for (int32_t d = 0; d < r; d++) {
    if (!(scales[d] > 0)) return ox_invalid("scales must be positive");
    double o = floor((double)shape[d] * scales[d]);
    if (!(o < 1e15)) return ox_unsupported("scale %g too large", scales[d]);
    ax[d] = (RzAxis){shape[d], (int64_t)o, scales[d], 0.0, 1.0, false};
  }
  return rz_finish(im, x, &at, ax, r, out);
}

/* ------------------------------------------------------------------------------------------ */
/* GridSample, AffineGrid                                                                      */

static int cv_grid_sample(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *g = ox_req(n, 1);
  if (!x || !g) return -1;
  int32_t r = ox_rank(x);
  if (r != 4 && r != 5) return ox_unsupported("GridSample of rank %d (4 or 5 only)", (int)r);
  if (ox_rank(g) != r) return ox_invalid("grid must have rank %d", (int)r);
  const char *mode = ox_attr_str(im, n, "mode", n->opset >= 20 ? "linear" : "bilinear");
  const char *pad = ox_attr_str(im, n, "padding_mode", "zeros");
  int64_t align = ox_attr_int(n, "align_corners", 0);
  if (gp_error_kind() != GP_OK) return -1;
  const char *method = strcmp(mode, "bilinear") == 0 || strcmp(mode, "linear") == 0 ? "bilinear"
                       : strcmp(mode, "bicubic") == 0 || strcmp(mode, "cubic") == 0 ? "bicubic"
                       : strcmp(mode, "nearest") == 0                               ? "nearest"
                                                                                    : NULL;
  if (!method) return ox_unsupported("mode \"%s\"", mode);
  if (r == 5 && strcmp(method, "bicubic") == 0) return ox_unsupported("mode \"%s\" on 5-d input", mode);
  if (strcmp(pad, "zeros") != 0 && strcmp(pad, "border") != 0 && strcmp(pad, "reflection") != 0)
    return ox_unsupported("padding_mode \"%s\"", pad);
  if (!gp_dtype_eq(ox_dtype(x), ox_dtype(g))) {
    if (!ox_is_float(ox_dtype(x))) return ox_unsupported("GridSample of %s data", gp_ops_dtype(ox_dtype(x)).s);
    g = ox_cast(im, g, ox_dtype(x));
    if (!g) return -1;
  }
  static const int64_t p4[] = {0, 3, 1, 2}, p5[] = {0, 4, 1, 2, 3};
  GPExpr *gt = mk_transpose(im, g, r, r == 4 ? p4 : p5);
  if (!gt) return -1;
  GPExpr *args[] = {x, gt};
  const char *keys[] = {"method", "layout", "padding_mode", "align_corners"};
  GPAttrValue vals[] = {gp_attr_str(method), gp_attr_str(r == 4 ? "NCHW" : "NCDHW"), gp_attr_str(pad),
                        gp_attr_bool(align != 0)};
  out[0] = ox_call(im, "image.grid_sample", 2, args, 4, keys, vals);
  return out[0] ? 0 : -1;
}

static int cv_affine_grid(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *theta = ox_req(n, 0), *size_e = ox_req(n, 1);
  if (!theta || !size_e) return -1;
  const int64_t *size;
  int32_t ns;
  if (ox_const_ints(im, size_e, "size", &size, &ns) != 0) return -1;
  if (ns != 4 && ns != 5) return ox_invalid("size must have 4 or 5 values, got %d", (int)ns);
  bool align = ox_attr_int(n, "align_corners", 0) != 0;
  if (gp_error_kind() != GP_OK) return -1;
  DLDataType dt = ox_dtype(theta);
  if (!ox_is_float(dt)) return ox_unsupported("AffineGrid of %s theta", gp_ops_dtype(dt).s);
  int32_t nsp = ns - 2;
  int64_t N = size[0], pts = 1;
  for (int32_t i = 0; i < nsp; i++) {
    if (size[2 + i] < 1) return ox_invalid("size must be positive");
    if (!gp_mul_i64(pts, size[2 + i], &pts) || pts > (1 << 24)) return ox_unsupported("AffineGrid of more than 2^24 points");
  }
  if (ox_static(theta, "theta") != 0) return -1;
  const int64_t *ts = ox_type(theta)->tensor.shape;
  if (ox_rank(theta) != 3 || ts[0] != N || ts[1] != nsp || ts[2] != nsp + 1)
    return ox_invalid("theta must have shape (%lld, %d, %d), got %s", (long long)N, (int)nsp, (int)(nsp + 1),
                      gp_ops_shape(ox_type(theta)).s);
  if (pts > (1 << 24)) return ox_unsupported("AffineGrid of more than 2^24 points");
  /* base [pts, nsp + 1]: (x, y[, z], 1) with x along the last axis of size */
  int64_t nbase;
  double *base = OX_PROD(GP_MAX_TENSOR_ELEMS, &nbase, "AffineGrid", pts, nsp + 1) == 0
                     ? ox_alloc_n(im, nbase, 0, sizeof(double), "AffineGrid")
                     : NULL;
  if (!base) return -1;
  for (int64_t p = 0; p < pts; p++) {
    int64_t rem = p;
    for (int32_t i = nsp - 1; i >= 0; i--) { /* spatial axis i; coordinate index nsp - 1 - i */
      int64_t L = size[2 + i], k = rem % L;
      rem /= L;
      double v = align ? (L > 1 ? -1.0 + 2.0 * (double)k / (double)(L - 1) : 0.0)
                       : (2.0 * (double)k + 1.0) / (double)L - 1.0;
      base[p * (nsp + 1) + (nsp - 1 - i)] = v;
    }
    base[p * (nsp + 1) + nsp] = 1.0;
  }
  GPExpr *B = mk_const(im, dt, 2, (int64_t[]){pts, nsp + 1}, base);
  GPExpr *t2 = B ? mk_reshape(im, theta, 2, (int64_t[]){N * nsp, nsp + 1}) : NULL;
  GPExpr *d = t2 ? mk_dense(im, B, t2, dt) : NULL; /* [pts, N * nsp] */
  int64_t sh[6];
  for (int32_t i = 0; i < nsp; i++) sh[i] = size[2 + i];
  sh[nsp] = N, sh[nsp + 1] = nsp;
  GPExpr *rs = d ? mk_reshape(im, d, nsp + 2, sh) : NULL;
  int64_t perm[6];
  perm[0] = nsp;
  for (int32_t i = 0; i < nsp; i++) perm[1 + i] = i;
  perm[nsp + 1] = nsp + 1;
  out[0] = rs ? mk_transpose(im, rs, nsp + 2, perm) : NULL;
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Quantization                                                                                */

/* The saturation range of a quantized dtype; -1 (unsupported) for others. */
static int q_range(DLDataType dt, double *lo, double *hi) {
  if (dt.lanes != 1) return ox_unsupported("vector dtype");
  bool ok = (dt.code == kDLInt && (dt.bits == 2 || dt.bits == 4 || dt.bits == 8 || dt.bits == 16 || dt.bits == 32)) ||
            (dt.code == kDLUInt && (dt.bits == 2 || dt.bits == 4 || dt.bits == 8 || dt.bits == 16));
  if (!ok) return ox_unsupported("quantized dtype %s", gp_ops_dtype(dt).s);
  int64_t l, h;
  gp_dtype_int_range(dt, &l, &h);
  *lo = (double)l, *hi = (double)h;
  return 0;
}

/* The float8 / float4 types (quantized without rounding to integers). */
static bool q_narrow_float(DLDataType dt) {
  return dt.code != kDLInt && dt.code != kDLUInt && gp_dtype_is_storage(dt, NULL) && dt.code != kDLBfloat &&
         dt.code != GP_DL_FLOAT8_E8M0FNU;
}

/* scale / zero point e (0-d or 1-d) shaped to broadcast against a rank-r tensor along axis. */
static GPExpr *q_param(OxImporter *im, GPExpr *e, int32_t r, int64_t axis, const char *what) {
  int32_t pr = ox_rank(e);
  if (pr == 0) return e;
  if (pr != 1) return (void)ox_unsupported("%s of rank %d (blocked quantization)", what, (int)pr), NULL;
  int64_t len = ox_type(e)->tensor.shape[0];
  static const int64_t none[1] = {0};
  if (len == 1) return mk_reshape(im, e, 0, none);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) return (void)ox_invalid("axis out of range"), NULL;
  int64_t shape[MAXR];
  if (r > MAXR) return (void)ox_unsupported("rank %d", (int)r), NULL;
  for (int32_t i = 0; i < r; i++) shape[i] = i == axis ? len : 1;
  return mk_reshape(im, e, r, shape);
}

/* saturate(round(x / scale) + zp) as dtype qt; x, scale float; zp NULL or any dtype. */
static GPExpr *q_quantize(OxImporter *im, GPExpr *x, GPExpr *scale, GPExpr *zp, DLDataType qt) {
  double lo, hi;
  DLDataType ct = ox_dtype(x).bits == 64 ? ox_dtype(x) : k_f32;
  if (q_narrow_float(qt)) {
    /* ONNX's reference: x / scale cast (saturating) to the float8 type; float4 adds the zero
     * point first, float8 has none. */
    GPExpr *xf = ox_cast(im, x, ct), *sf = xf ? ox_cast(im, scale, ct) : NULL;
    GPExpr *v = sf ? ox_op2(im, "divide", xf, sf) : NULL;
    if (v && zp && qt.code == GP_DL_FLOAT4_E2M1FN) {
      GPExpr *zf = ox_cast(im, zp, ct);
      v = zf ? ox_op2(im, "add", v, zf) : NULL;
    }
    return v ? ox_cast(im, v, qt) : NULL;
  }
  if (q_range(qt, &lo, &hi) != 0) return NULL;
  GPExpr *xf = ox_cast(im, x, ct), *sf = xf ? ox_cast(im, scale, ct) : NULL;
  GPExpr *v = sf ? ox_op2(im, "divide", xf, sf) : NULL;
  /* clip first so that the rounding trick's range holds; saturation is unchanged */
  if (v && !(v = mk_clip(im, v, -4194304.0 - fmax(-lo, hi), 4194304.0 + fmax(-lo, hi)))) return NULL;
  if (v) v = mk_round(im, v);
  if (v && zp) {
    GPExpr *zf = ox_cast(im, zp, ct);
    v = zf ? ox_op2(im, "add", v, zf) : NULL;
  }
  if (v) v = mk_clip(im, v, lo, hi);
  return v ? ox_cast(im, v, qt) : NULL;
}

/* Blocked quantization (block_size > 0): x [.., D, ..] viewed as [.., D / bs, bs, ..] and the
 * scale / zero point [.., D / bs, ..] as [.., D / bs, 1, ..], which broadcast.  *xs gets x's
 * shape for the final reshape. */
static int q_blocked(OxImporter *im, int64_t bs, int64_t axis, GPExpr **x, GPExpr **scale, GPExpr **zp,
                     int64_t *xs, int32_t *xr) {
  if (ox_static(*x, "x") != 0 || ox_static(*scale, "scale") != 0) return -1;
  int32_t r = ox_rank(*x);
  if (r < 1 || r >= MAXR) return ox_unsupported("blocked quantization of rank %d", (int)r);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) return ox_invalid("axis out of range for rank %d", (int)r);
  const int64_t *sh = ox_type(*x)->tensor.shape;
  int64_t D = sh[axis];
  if (bs < 1 || D % bs != 0)
    return ox_unsupported("block_size %lld that does not divide the axis extent %lld", (long long)bs, (long long)D);
  const GPType *st = ox_type(*scale);
  bool ok = st->n == r;
  for (int32_t i = 0; ok && i < r; i++) ok = st->tensor.shape[i] == (i == axis ? D / bs : sh[i]);
  if (!ok) return ox_invalid("scale of shape %s does not match x %s with block_size %lld", gp_ops_shape(st).s,
                             gp_ops_shape(ox_type(*x)).s, (long long)bs);
  int64_t ns[MAXR];
  for (int32_t i = 0, j = 0; i < r; i++) {
    if (i == axis) {
      ns[j++] = D / bs;
      ns[j++] = bs;
    } else {
      ns[j++] = sh[i];
    }
  }
  memcpy(xs, sh, (size_t)r * sizeof(int64_t));
  *xr = r;
  const char *ek[] = {"axis", "num_newaxis"};
  GPAttrValue ev[] = {gp_attr_int(axis + 1), gp_attr_int(1)};
  if (!(*x = mk_reshape(im, *x, r + 1, ns))) return -1;
  if (!(*scale = ox_call(im, "expand_dims", 1, scale, 2, ek, ev))) return -1;
  if (*zp && !(*zp = ox_call(im, "expand_dims", 1, zp, 2, ek, ev))) return -1;
  return 0;
}

static int cv_quantize(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *scale = ox_req(n, 1), *zp = ox_in(n, 2);
  if (!x || !scale) return -1;
  int64_t bs = ox_attr_int(n, "block_size", 0);
  int64_t axis = ox_attr_int(n, "axis", 1);
  int64_t odt = ox_attr_int(n, "output_dtype", 0);
  if (gp_error_kind() != GP_OK) return -1;
  DLDataType qt = {kDLUInt, 8, 1};
  if (zp) {
    qt = ox_dtype(zp);
  } else if (odt != 0) {
    if (ox_dtype_from_onnx((int32_t)odt, &qt) != 0) return -1;
  }
  if (!ox_is_float(ox_dtype(x))) return ox_unsupported("QuantizeLinear of %s input", gp_ops_dtype(ox_dtype(x)).s);
  if (q_narrow_float(qt) && qt.bits == 8 && ox_attr_int(n, "saturate", 1) == 0)
    return ox_unsupported("QuantizeLinear to %s with saturate=0", gp_ops_dtype(qt).s);
  int64_t xs[MAXR];
  int32_t xr = 0;
  GPExpr *s, *z = NULL;
  if (bs != 0) {
    if (q_blocked(im, bs, axis, &x, &scale, &zp, xs, &xr) != 0) return -1;
    s = scale, z = zp;
  } else {
    int32_t r = ox_rank(x);
    s = q_param(im, scale, r, axis, "y_scale");
    z = zp && s ? q_param(im, zp, r, axis, "y_zero_point") : NULL;
    if (!s || (zp && !z)) return -1;
  }
  GPExpr *y = q_quantize(im, x, s, z, qt);
  if (y && bs != 0) y = mk_reshape(im, y, xr, xs);
  out[0] = y;
  return out[0] ? 0 : -1;
}

static int cv_dequantize(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *scale = ox_req(n, 1), *zp = ox_in(n, 2);
  if (!x || !scale) return -1;
  int64_t bs = ox_attr_int(n, "block_size", 0);
  int64_t axis = ox_attr_int(n, "axis", 1);
  if (gp_error_kind() != GP_OK) return -1;
  double lo, hi;
  bool nf = q_narrow_float(ox_dtype(x)); /* float8 / float4: the zero point is not used */
  if (!nf && q_range(ox_dtype(x), &lo, &hi) != 0) return -1;
  if (nf) zp = NULL;
  DLDataType st = ox_dtype(scale);
  if (!ox_is_float(st)) return ox_unsupported("x_scale of %s", gp_ops_dtype(st).s);
  DLDataType ct = st.bits == 64 ? st : k_f32;
  int64_t xs[MAXR];
  int32_t xr = 0;
  GPExpr *s, *z = NULL;
  if (bs != 0) {
    if (q_blocked(im, bs, axis, &x, &scale, &zp, xs, &xr) != 0) return -1;
    s = scale, z = zp;
  } else {
    int32_t r = ox_rank(x);
    s = q_param(im, scale, r, axis, "x_scale");
    z = zp && s ? q_param(im, zp, r, axis, "x_zero_point") : NULL;
    if (!s || (zp && !z)) return -1;
  }
  GPExpr *v = ox_cast(im, x, ct);
  if (v && z) {
    GPExpr *zf = ox_cast(im, z, ct);
    v = zf ? ox_op2(im, "subtract", v, zf) : NULL;
  }
  GPExpr *sf = v ? ox_cast(im, s, ct) : NULL;
  v = sf ? ox_op2(im, "multiply", v, sf) : NULL;
  v = v ? ox_cast(im, v, st) : NULL;
  if (v && bs != 0) v = mk_reshape(im, v, xr, xs);
  out[0] = v;
  return out[0] ? 0 : -1;
}

static int cv_dynamic_quantize(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  if (!ox_is_float(ox_dtype(x))) return ox_unsupported("DynamicQuantizeLinear of %s", gp_ops_dtype(ox_dtype(x)).s);
  if (!have_op("max") || !have_op("min")) return ox_unsupported("DynamicQuantizeLinear needs the max/min reductions");
  GPExpr *xf = ox_cast(im, x, k_f32);
  if (!xf) return -1;
  const char *keys[] = {"axis", "keepdims", "exclude"};
  GPAttrValue vals[] = {{.kind = GP_ATTR_NONE}, gp_attr_bool(false), gp_attr_bool(false)};
  GPExpr *mx = ox_call(im, "max", 1, &xf, 3, keys, vals);
  GPExpr *mn = mx ? ox_call(im, "min", 1, &xf, 3, keys, vals) : NULL;
  GPExpr *zero = mn ? ox_scalar(im, k_f32, 0.0) : NULL;
  GPExpr *hi = zero ? ox_op2(im, "maximum", mx, zero) : NULL;
  GPExpr *lo = hi ? ox_op2(im, "minimum", mn, zero) : NULL;
  GPExpr *c255 = lo ? ox_scalar(im, k_f32, 255.0) : NULL;
  GPExpr *rng = c255 ? ox_op2(im, "subtract", hi, lo) : NULL;
  GPExpr *scale = rng ? ox_op2(im, "divide", rng, c255) : NULL;
  /* zero point: saturate(round((0 - lo) / scale)) */
  GPExpr *nl = scale ? ox_op2(im, "subtract", zero, lo) : NULL;
  GPExpr *zq = nl ? ox_op2(im, "divide", nl, scale) : NULL;
  if (zq) zq = mk_clip(im, zq, 0, 255);
  if (zq) zq = mk_round(im, zq);
  GPExpr *zp = zq ? ox_cast(im, zq, (DLDataType){kDLUInt, 8, 1}) : NULL;
  GPExpr *y = zp ? q_quantize(im, xf, scale, zp, (DLDataType){kDLUInt, 8, 1}) : NULL;
  if (!y) return -1;
  out[0] = y;
  if (n->nout > 1) out[1] = scale;
  if (n->nout > 2) out[2] = zp;
  return 0;
}

/* e - zp in int32 (zp NULL: e in int32); zp shaped by q_param along `axis` of rank r. */
static GPExpr *q_center(OxImporter *im, GPExpr *e, GPExpr *zp, int32_t r, int64_t axis, const char *what) {
  GPExpr *v = ox_cast(im, e, k_i32);
  if (!v || !zp) return v;
  GPExpr *z = q_param(im, zp, r, axis, what);
  GPExpr *zi = z ? ox_cast(im, z, k_i32) : NULL;
  return zi ? ox_op2(im, "subtract", v, zi) : NULL;
}

/* int32 matmul of 2-d (or N-d with a 2-d b) a @ b. */
static GPExpr *q_matmul(OxImporter *im, GPExpr *a, GPExpr *b) {
  int32_t ra = ox_rank(a), rb = ox_rank(b);
  if (ra < 2 || rb < 2 || ra >= MAXR || rb >= MAXR)
    return (void)ox_unsupported("integer MatMul of ranks %d and %d", (int)ra, (int)rb), NULL;
  if (ox_static(a, "A") != 0 || ox_static(b, "B") != 0) return NULL;
  if (rb != 2) {
    /* batched: a[..., M, K, 1] * b[..., 1, K, N] summed over K (numpy broadcasting of the batch) */
    const int64_t *as0 = ox_type(a)->tensor.shape, *bs0 = ox_type(b)->tensor.shape;
    if (as0[ra - 1] != bs0[rb - 2])
      return (void)ox_invalid("MatMul shapes %s and %s do not agree", gp_ops_shape(ox_type(a)).s, gp_ops_shape(ox_type(b)).s), NULL;
    const char *ek[] = {"axis", "num_newaxis"};
    GPAttrValue ea[] = {gp_attr_int(ra), gp_attr_int(1)}, eb[] = {gp_attr_int(rb - 2), gp_attr_int(1)};
    GPExpr *a3 = ox_call(im, "expand_dims", 1, &a, 2, ek, ea);
    GPExpr *b3 = a3 ? ox_call(im, "expand_dims", 1, &b, 2, ek, eb) : NULL;
    GPExpr *m = b3 ? ox_op2(im, "multiply", a3, b3) : NULL;
    if (!m) return NULL;
    const char *sk[] = {"axis", "keepdims", "exclude"};
    int64_t ax = ox_rank(m) - 2;
    GPAttrValue sv[] = {gp_attr_ints(1, &ax), gp_attr_bool(false), gp_attr_bool(false)};
    return ox_call(im, "sum", 1, &m, 3, sk, sv);
  }
  const int64_t *as = ox_type(a)->tensor.shape, *bs = ox_type(b)->tensor.shape;
  int64_t K = as[ra - 1], N = bs[1];
  if (bs[0] != K) return (void)ox_invalid("MatMul shapes %s and %s do not agree", gp_ops_shape(ox_type(a)).s, gp_ops_shape(ox_type(b)).s), NULL;
  int64_t M = 1;
  for (int32_t i = 0; i < ra - 1; i++) M *= as[i];
  GPExpr *a2 = ra == 2 ? a : mk_reshape(im, a, 2, (int64_t[]){M, K});
  GPExpr *bt = a2 ? mk_transpose(im, b, 2, (int64_t[]){1, 0}) : NULL;
  GPExpr *y = bt ? mk_dense(im, a2, bt, k_i32) : NULL;
  if (!y || ra == 2) return y;
  int64_t os[MAXR];
  for (int32_t i = 0; i < ra - 1; i++) os[i] = as[i];
  os[ra - 1] = N;
  return mk_reshape(im, y, ra, os);
}

static int cv_matmul_integer(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *a = ox_req(n, 0), *b = ox_req(n, 1);
  if (!a || !b) return -1;
  /* a's zero point is per row (axis -2 ... of a, 1-d over M) or scalar; b's per column */
  GPExpr *ac = q_center(im, a, ox_in(n, 2), ox_rank(a), ox_rank(a) >= 2 ? ox_rank(a) - 2 : 0, "a_zero_point");
  GPExpr *bc = ac ? q_center(im, b, ox_in(n, 3), ox_rank(b), ox_rank(b) - 1, "b_zero_point") : NULL;
  out[0] = bc ? q_matmul(im, ac, bc) : NULL;
  return out[0] ? 0 : -1;
}

/* nn.conv2d of int32 x and w with the node's Conv attributes (2-d only); bias-free. */
static GPExpr *q_conv(OxImporter *im, const OxNode *n, GPExpr *x, GPExpr *w) {
  if (ox_rank(x) != 4 || ox_rank(w) != 4) return (void)ox_unsupported("integer Conv of rank %d (2-d only)", (int)ox_rank(x)), NULL;
  if (ox_static(x, "x") != 0 || ox_static(w, "w") != 0) return NULL;
  const int64_t *xs = ox_type(x)->tensor.shape, *ws = ox_type(w)->tensor.shape;
  int32_t c;
  int64_t st[2] = {1, 1}, dl[2] = {1, 1}, pad[4] = {0, 0, 0, 0};
  const int64_t *v = ox_attr_ints(n, "strides", &c);
  if (c == 2) st[0] = v[0], st[1] = v[1];
  v = ox_attr_ints(n, "dilations", &c);
  if (c == 2) dl[0] = v[0], dl[1] = v[1];
  v = ox_attr_ints(n, "pads", &c);
  if (c == 4) pad[0] = v[0], pad[1] = v[1], pad[2] = v[2], pad[3] = v[3];
  int64_t groups = ox_attr_int(n, "group", 1);
  const char *ap = ox_attr_str(im, n, "auto_pad", "NOTSET");
  if (gp_error_kind() != GP_OK) return NULL;
  if (strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0) {
    for (int i = 0; i < 2; i++) {
      int64_t in = xs[2 + i], k = (ws[2 + i] - 1) * dl[i] + 1, o = (in + st[i] - 1) / st[i];
      int64_t tot = (o - 1) * st[i] + k - in;
      if (tot < 0) tot = 0;
      int64_t small = tot / 2, big = tot - small;
      pad[i] = strcmp(ap, "SAME_UPPER") == 0 ? small : big;
      pad[2 + i] = tot - pad[i];
    }
  } else if (strcmp(ap, "VALID") == 0) {
    memset(pad, 0, sizeof pad);
  } else if (strcmp(ap, "NOTSET") != 0) {
    return (void)ox_unsupported("auto_pad \"%s\"", ap), NULL;
  }
  GPExpr *args[] = {x, w};
  const char *keys[] = {"strides", "padding", "dilation", "groups", "channels", "kernel_size", "out_dtype"};
  GPAttrValue vals[] = {gp_attr_ints(2, st), gp_attr_ints(4, pad), gp_attr_ints(2, dl), gp_attr_int(groups),
                        gp_attr_int(ws[0]), gp_attr_ints(2, ws + 2), gp_attr_dtype(k_i32)};
  return ox_call(im, "nn.conv2d", 2, args, 7, keys, vals);
}

static int cv_conv_integer(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *w = ox_req(n, 1);
  if (!x || !w) return -1;
  GPExpr *xc = q_center(im, x, ox_in(n, 2), ox_rank(x), 1, "x_zero_point");
  GPExpr *wc = xc ? q_center(im, w, ox_in(n, 3), ox_rank(w), 0, "w_zero_point") : NULL;
  out[0] = wc ? q_conv(im, n, xc, wc) : NULL;
  return out[0] ? 0 : -1;
}

/* y = saturate(round(acc * (sa * sb / sy)) + zy) with acc int32 (ONNX's reference order). */
static GPExpr *q_requant(OxImporter *im, GPExpr *acc, GPExpr *sa, GPExpr *sb, GPExpr *sy, GPExpr *zy,
                         DLDataType qt) {
  double lo, hi;
  if (q_range(qt, &lo, &hi) != 0) return NULL;
  GPExpr *f = ox_cast(im, acc, k_f32);
  GPExpr *a = f ? ox_cast(im, sa, k_f32) : NULL, *b = a ? ox_cast(im, sb, k_f32) : NULL;
  GPExpr *y = b ? ox_cast(im, sy, k_f32) : NULL;
  GPExpr *m = y ? ox_op2(im, "multiply", a, b) : NULL;
  m = m ? ox_op2(im, "divide", m, y) : NULL;
  GPExpr *v = m ? ox_op2(im, "multiply", f, m) : NULL;
  if (v && zy) {
    GPExpr *z = ox_cast(im, zy, k_f32);
    v = z ? ox_op2(im, "add", v, z) : NULL;
  }
  if (v) v = mk_clip(im, v, lo - 1, hi + 1);
  if (v) v = mk_round(im, v);
  if (v) v = mk_clip(im, v, lo, hi);
  return v ? ox_cast(im, v, qt) : NULL;
}

static int cv_qlinear_matmul(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *in[8];
  for (int i = 0; i < 8; i++)
    if (!(in[i] = ox_req(n, i))) return -1;
  GPExpr *a = q_center(im, in[0], in[2], ox_rank(in[0]), ox_rank(in[0]) >= 2 ? ox_rank(in[0]) - 2 : 0, "a_zero_point");
  GPExpr *b = a ? q_center(im, in[3], in[5], ox_rank(in[3]), ox_rank(in[3]) - 1, "b_zero_point") : NULL;
  GPExpr *acc = b ? q_matmul(im, a, b) : NULL;
  if (!acc) return -1;
  int32_t r = ox_rank(acc);
  GPExpr *sa = q_param(im, in[1], r, r >= 2 ? r - 2 : 0, "a_scale");
  GPExpr *sb = sa ? q_param(im, in[4], r, r - 1, "b_scale") : NULL;
  GPExpr *sy = sb ? q_param(im, in[6], r, r - 1, "y_scale") : NULL;
  GPExpr *zy = sy ? q_param(im, in[7], r, r - 1, "y_zero_point") : NULL;
  out[0] = zy ? q_requant(im, acc, sa, sb, sy, zy, ox_dtype(in[7])) : NULL;
  return out[0] ? 0 : -1;
}

static int cv_qlinear_conv(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *in[9];
  for (int i = 0; i < 8; i++)
    if (!(in[i] = ox_req(n, i))) return -1;
  in[8] = ox_in(n, 8);
  GPExpr *x = q_center(im, in[0], in[2], ox_rank(in[0]), 1, "x_zero_point");
  GPExpr *w = x ? q_center(im, in[3], in[5], ox_rank(in[3]), 0, "w_zero_point") : NULL;
  GPExpr *acc = w ? q_conv(im, n, x, w) : NULL;
  if (acc && in[8]) {
    GPExpr *bi = ox_cast(im, in[8], k_i32);
    GPExpr *bias = bi ? q_param(im, bi, 4, 1, "B") : NULL;
    acc = bias ? ox_op2(im, "add", acc, bias) : NULL;
  }
  if (!acc) return -1;
  GPExpr *sx = q_param(im, in[1], 4, 1, "x_scale");
  GPExpr *sw = sx ? q_param(im, in[4], 4, 1, "w_scale") : NULL;
  GPExpr *sy = sw ? q_param(im, in[6], 4, 1, "y_scale") : NULL;
  GPExpr *zy = sy ? q_param(im, in[7], 4, 1, "y_zero_point") : NULL;
  out[0] = zy ? q_requant(im, acc, sx, sw, sy, zy, ox_dtype(in[7])) : NULL;
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Einsum: every operand laid out on the equation's letters (repeated letters of one operand
 * reduced to their diagonal by an identity mask), multiplied with broadcasting, summed over the
 * letters the output lacks, transposed to the output's order. */

#define EIN_MAX 16

static GPExpr *ein_sum(OxImporter *im, GPExpr *e, int32_t n, const int64_t *axes) {
  const char *keys[] = {"axis", "keepdims", "exclude"};
  GPAttrValue vals[] = {gp_attr_ints(n, axes), gp_attr_bool(false), gp_attr_bool(false)};
  return ox_call(im, "sum", 1, &e, 3, keys, vals);
}

static int cv_einsum(OxImporter *im, const OxNode *n, GPExpr **out) {
  const char *eq = ox_attr_str(im, n, "equation", NULL);
  if (!eq) return gp_error_kind() != GP_OK ? -1 : ox_invalid("attribute equation is required");
  /* strip spaces */
  char buf[256];
  size_t bl = 0;
  for (const char *c = eq; *c; c++)
    if (*c != ' ') {
      if (bl + 1 >= sizeof buf) return ox_unsupported("equation longer than 255 characters");
      buf[bl++] = *c;
    }
  buf[bl] = 0;
  char *arrow = strstr(buf, "->");
  if (arrow) *arrow = 0;
  const char *rhs = arrow ? arrow + 2 : NULL;
  int32_t nops = n->nin;
  if (nops < 1 || nops > 4) return ox_unsupported("Einsum of %d operands", (int)nops);
  /* terms: letters per operand, ellipsis expanded into digits '0'.. (right-aligned) */
  char terms[4][EIN_MAX + 1];
  GPExpr *ops[4];
  int32_t E = 0;
  const char *p = buf;
  for (int32_t k = 0; k < nops; k++) {
    ops[k] = ox_req(n, k);
    if (!ops[k] || ox_static(ops[k], "Inputs") != 0) return -1;
    const char *end = strchr(p, ',');
    if (!end) end = p + strlen(p);
    if ((k < nops - 1) != (*end == ',')) return ox_invalid("equation \"%s\" does not have %d operands", eq, (int)nops);
    int32_t letters = 0;
    bool ell = false;
    for (const char *c = p; c < end; c++) {
      if (c[0] == '.' && c + 2 < end && c[1] == '.' && c[2] == '.') {
        if (ell) return ox_invalid("two ellipses in one operand");
        ell = true;
        c += 2;
      } else if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')) {
        letters++;
      } else {
        return ox_invalid("equation \"%s\": bad character '%c'", eq, *c);
      }
    }
    int32_t r = ox_rank(ops[k]);
    int32_t ne = r - letters;
    if (ne < 0 || (!ell && ne != 0) || r > EIN_MAX) return ox_invalid("operand %d of rank %d does not match \"%.*s\"", (int)k, (int)r, (int)(end - p), p);
    if (ne > E) E = ne;
    int32_t t = 0;
    for (const char *c = p; c < end; c++) {
      if (*c == '.') {
        for (int32_t i = 0; i < ne; i++) terms[k][t++] = (char)('0' + 10 - ne + i);
        c += 2;
      } else {
        terms[k][t++] = *c;
      }
    }
    terms[k][t] = 0;
    p = *end ? end + 1 : end;
  }
  if (E > 10) return ox_unsupported("ellipsis of more than 10 dimensions");
  /* output term */
  char oterm[EIN_MAX + 1];
  int32_t on = 0;
  if (rhs) {
    for (const char *c = rhs; *c; c++) {
      if (*c == '.') {
        if (strncmp(c, "...", 3) != 0) return ox_invalid("bad ellipsis in \"%s\"", eq);
        for (int32_t i = 0; i < E; i++) oterm[on++] = (char)('0' + 10 - E + i);
        c += 2;
      } else {
        if (on >= EIN_MAX) return ox_unsupported("too many output letters");
        oterm[on++] = *c;
      }
    }
  } else {
    for (int32_t i = 0; i < E; i++) oterm[on++] = (char)('0' + 10 - E + i);
    for (char c = 'A'; c <= 'z'; c++) {
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) continue;
      int cnt = 0;
      for (int32_t k = 0; k < nops; k++)
        for (const char *q = terms[k]; *q; q++) cnt += *q == c;
      if (cnt == 1) {
        if (on >= EIN_MAX) return ox_unsupported("too many output letters");
        oterm[on++] = c;
      }
    }
  }
  oterm[on] = 0;
  /* global letters: output letters first, then the summed ones */
  char glob[EIN_MAX * 4 + 1];
  int64_t gsize[EIN_MAX * 4];
  int32_t gn = 0;
  for (int32_t i = 0; i < on; i++) glob[gn++] = oterm[i];
  for (int32_t k = 0; k < nops; k++)
    for (const char *q = terms[k]; *q; q++)
      if (!memchr(glob, *q, (size_t)gn)) glob[gn++] = *q;
  if (gn > EIN_MAX) return ox_unsupported("Einsum over more than %d letters", EIN_MAX);
  for (int32_t i = 0; i < gn; i++) gsize[i] = 1;
  for (int32_t i = 0; i < on; i++)
    for (int32_t j = i + 1; j < on; j++)
      if (oterm[i] == oterm[j]) return ox_invalid("output letter '%c' repeated", oterm[i]);
  GPExpr *acc = NULL;
  for (int32_t k = 0; k < nops; k++) {
    GPExpr *e = ops[k];
    char t[EIN_MAX + 1];
    strcpy(t, terms[k]);
    int32_t r = (int32_t)strlen(t);
    int64_t sh[EIN_MAX];
    if (r) memcpy(sh, ox_type(e)->tensor.shape, (size_t)r * sizeof(int64_t));
    /* repeated letters: diagonal through an identity mask, then sum the second copy */
    for (int32_t i = 0; i < r; i++)
      for (int32_t j = i + 1; j < r; j++) {
        if (t[i] != t[j]) continue;
        if (sh[i] != sh[j]) return ox_invalid("letter '%c' has extents %lld and %lld", t[i], (long long)sh[i], (long long)sh[j]);
        int64_t ms[EIN_MAX], L = sh[i];
        for (int32_t a = 0; a < r; a++) ms[a] = a == i || a == j ? L : 1;
        if (L > 4096) return ox_unsupported("diagonal of extent %lld", (long long)L);
        int64_t neye;
        double *eye = OX_PROD(GP_MAX_TENSOR_ELEMS, &neye, "Einsum's diagonal", L, L) == 0
                          ? ox_alloc_n(im, neye, 0, sizeof(double), "Einsum's diagonal")
                          : NULL;
        if (!eye) return -1;
        for (int64_t a = 0; a < L * L; a++) eye[a] = a / L == a % L;
        GPExpr *mask = mk_const(im, ox_dtype(e), r, ms, eye);
        e = mask ? ox_op2(im, "multiply", e, mask) : NULL;
        e = e ? ein_sum(im, e, 1, (int64_t[]){j}) : NULL;
        if (!e) return -1;
        memmove(t + j, t + j + 1, (size_t)(r - j));
        memmove(sh + j, sh + j + 1, (size_t)(r - 1 - j) * sizeof(int64_t));
        r--;
        j--;
      }
    /* transpose into global order, reshape to all letters */
    int64_t perm[EIN_MAX], full[EIN_MAX];
    int32_t pn = 0;
    for (int32_t g = 0; g < gn; g++) {
      full[g] = 1;
      const char *q = memchr(t, glob[g], (size_t)r);
      if (!q) continue;
      int32_t a = (int32_t)(q - t);
      perm[pn++] = a;
      full[g] = sh[a];
      if (sh[a] != 1) {
        if (gsize[g] != 1 && gsize[g] != sh[a]) return ox_invalid("letter '%c' has extents %lld and %lld", glob[g], (long long)gsize[g], (long long)sh[a]);
        gsize[g] = sh[a];
      }
    }
    bool ident = true;
    for (int32_t a = 0; a < pn; a++) ident &= perm[a] == a;
    if (!ident && !(e = mk_transpose(im, e, pn, perm))) return -1;
    if (pn != gn && !(e = mk_reshape(im, e, gn, full))) return -1;
    acc = acc ? ox_op2(im, "multiply", acc, e) : e;
    if (!acc) return -1;
  }
  double total = 1;
  for (int32_t g = 0; g < gn; g++) total *= (double)gsize[g];
  if (total > (double)(1 << 26)) return ox_unsupported("Einsum through %g intermediate elements", total);
  if (gn > on) {
    int64_t axes[EIN_MAX];
    for (int32_t g = on; g < gn; g++) axes[g - on] = g;
    if (!(acc = ein_sum(im, acc, gn - on, axes))) return -1;
  }
  /* dims broadcast to 1 in every operand but kept in the output stay 1: expand to gsize */
  out[0] = acc;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* A sum reduction (axes NULL with n < 0: all axes). */

static GPExpr *red_sum(OxImporter *im, GPExpr *e, int32_t n, const int64_t *axes) {
  const char *keys[] = {"axis", "keepdims", "exclude"};
  GPAttrValue vals[] = {n < 0 ? (GPAttrValue){.kind = GP_ATTR_NONE} : gp_attr_ints(n, axes), gp_attr_bool(false),
                        gp_attr_bool(false)};
  return ox_call(im, "sum", 1, &e, 3, keys, vals);
}

/* ------------------------------------------------------------------------------------------ */
/* Signal ops: HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix (constants from their
 * compile-time inputs), DFT and STFT (static shapes: the transform along the axis is a matrix
 * product with cos / sin matrices, nn.dense on the axis moved last). */

static int window_dtype(const OxNode *n, DLDataType *dt) {
  int64_t odt = ox_attr_int(n, "output_datatype", 1);
  if (gp_error_kind() != GP_OK) return -1;
  return ox_dtype_from_onnx((int32_t)odt, dt);
}

static int cv_window(OxImporter *im, const OxNode *n, GPExpr **out, int kind) {
  GPExpr *se = ox_req(n, 0);
  double sz;
  DLDataType dt;
  if (!se || ox_const_scalar(im, se, "size", &sz) != 0 || window_dtype(n, &dt) != 0) return -1;
  bool periodic = ox_attr_int(n, "periodic", 1) != 0;
  if (gp_error_kind() != GP_OK) return -1;
  if (!(sz >= 0 && sz <= (double)(1 << 26))) return ox_unsupported("window size %g", sz);
  int64_t N = (int64_t)sz;
  double den = periodic ? (double)N : (double)N - 1;
  double *v = ox_alloc_n(im, N, 1, sizeof(double), "the window");
  if (!v) return -1;
  for (int64_t i = 0; i < N; i++) {
    double a = den > 0 ? 2 * M_PI * (double)i / den : 0;
    if (kind == 0) v[i] = 0.5 - 0.5 * cos(a);                              /* Hann */
    else if (kind == 1) v[i] = 25.0 / 46.0 - 21.0 / 46.0 * cos(a);         /* Hamming */
    else v[i] = 0.42 - 0.5 * cos(a) + 0.08 * cos(2 * a);                   /* Blackman */
  }
  out[0] = mk_const(im, dt, 1, &N, v);
  return out[0] ? 0 : -1;
}
static int cv_hann(OxImporter *im, const OxNode *n, GPExpr **out) { return cv_window(im, n, out, 0); }
static int cv_hamming(OxImporter *im, const OxNode *n, GPExpr **out) { return cv_window(im, n, out, 1); }
static int cv_blackman(OxImporter *im, const OxNode *n, GPExpr **out) { return cv_window(im, n, out, 2); }

static int cv_mel(OxImporter *im, const OxNode *n, GPExpr **out) {
  double nm, dl, sr, lo, hi;
  DLDataType dt;
  for (int i = 0; i < 5; i++)
    if (!ox_req(n, i)) return -1;
  if (ox_const_scalar(im, n->in[0], "num_mel_bins", &nm) != 0 || ox_const_scalar(im, n->in[1], "dft_length", &dl) != 0 ||
      ox_const_scalar(im, n->in[2], "sample_rate", &sr) != 0 ||
      ox_const_scalar(im, n->in[3], "lower_edge_hertz", &lo) != 0 ||
      ox_const_scalar(im, n->in[4], "upper_edge_hertz", &hi) != 0 || window_dtype(n, &dt) != 0)
    return -1;
  if (!(nm >= 1 && nm <= 4096 && dl >= 1 && dl <= (1 << 20) && sr >= 1))
    return ox_unsupported("MelWeightMatrix with num_mel_bins %g, dft_length %g, sample_rate %g", nm, dl, sr);
  int64_t M = (int64_t)nm, L = (int64_t)dl, S = gp_f64_to_i64_sat(sr), bins = L / 2 + 1;
  int64_t *fb = ox_alloc_n(im, M, 2, sizeof(int64_t), "MelWeightMatrix");
  if (!fb) return -1;
  double lm = 2595 * log10(1 + lo / 700), hm = 2595 * log10(1 + hi / 700), step = (hm - lm) / (double)(M + 2);
  for (int64_t i = 0; i < M + 2; i++) {
    double f = 700 * (pow(10, ((double)i * step + lm) / 2595) - 1);
    double b = floor((double)(L + 1) * f / (double)S);
    fb[i] = b < 0 ? 0 : b > (double)bins ? bins : (int64_t)b;
  }
  int64_t nwm;
  double *w = OX_PROD(GP_MAX_TENSOR_ELEMS, &nwm, "MelWeightMatrix", bins, M) == 0
                  ? ox_alloc_n(im, nwm, 0, sizeof(double), "MelWeightMatrix")
                  : NULL;
  if (!w) return -1;
  memset(w, 0, (size_t)(bins * M) * sizeof(double));
  for (int64_t i = 0; i < M; i++) {
    int64_t l = fb[i], c = fb[i + 1], h = fb[i + 2];
    if (c == l) {
      if (c < bins) w[c * M + i] = 1;
    } else {
      for (int64_t j = l; j <= c && j < bins; j++) w[j * M + i] = (double)(j - l) / (double)(c - l);
    }
    if (h > c)
      for (int64_t j = c; j < h && j < bins; j++) w[j * M + i] = (double)(h - j) / (double)(h - c);
  }
  out[0] = mk_const(im, dt, 2, (int64_t[]){bins, M}, w);
  return out[0] ? 0 : -1;
}

/* Last-axis slice [k, k + 1) of x (rank r), reshaped without that axis. */
static GPExpr *take_last(OxImporter *im, GPExpr *x, int64_t k) {
  int32_t r = ox_rank(x);
  int64_t b = k, e = k + 1, ax = r - 1;
  const char *keys[] = {"begin", "end", "axes"};
  GPAttrValue vals[] = {gp_attr_ints(1, &b), gp_attr_ints(1, &e), gp_attr_ints(1, &ax)};
  GPExpr *s = ox_call(im, "strided_slice", 1, &x, 3, keys, vals);
  return s ? mk_reshape(im, s, r - 1, ox_type(x)->tensor.shape) : NULL;
}

/* re / im [M, L] (im may be NULL) times the DFT matrices [K, L] with angle 2 pi k n / Ld;
 * result [M, K, 2]. */
static GPExpr *dft_rows(OxImporter *im, GPExpr *re, GPExpr *imag, int64_t K, int64_t L, int64_t Ld, bool inverse,
                        const double *win) {
  DLDataType dt = ox_dtype(re);
  int64_t kl;
  if (OX_PROD(GP_MAX_TENSOR_ELEMS, &kl, "the DFT matrix", K, L) != 0) return NULL;
  double *c = ox_alloc_n(im, kl, 0, sizeof(double), "the DFT matrix");
  double *sn = c ? ox_alloc_n(im, kl, 0, sizeof(double), "the DFT matrix") : NULL;
  if (!sn) return NULL;
  double sc = inverse ? 1.0 / (double)Ld : 1.0;
  for (int64_t k = 0; k < K; k++)
    for (int64_t i = 0; i < L; i++) {
      double wv = (win ? win[i] : 1.0) * sc;
      double a = 2 * M_PI * (double)((k * i) % Ld) / (double)Ld;
      bool in = i < Ld;
      c[k * L + i] = in ? cos(a) * wv : 0;
      sn[k * L + i] = in ? sin(a) * wv * (inverse ? -1 : 1) : 0; /* forward e^{-ia}: -sin goes to im */
    }
  GPExpr *Wc = mk_const(im, dt, 2, (int64_t[]){K, L}, c), *Ws = Wc ? mk_const(im, dt, 2, (int64_t[]){K, L}, sn) : NULL;
  if (!Ws) return NULL;
  /* forward: re' = re C + im S, im' = im C - re S (S = sin); inverse: S = -sin */
  GPExpr *rc = mk_dense(im, re, Wc, dt), *rs = rc ? mk_dense(im, re, Ws, dt) : NULL;
  GPExpr *ro = rc, *io = rs ? ox_op1(im, "negative", rs) : NULL;
  if (io && imag) {
    GPExpr *ic = mk_dense(im, imag, Wc, dt), *is = ic ? mk_dense(im, imag, Ws, dt) : NULL;
    ro = is ? ox_op2(im, "add", ro, is) : NULL;
    io = ro ? ox_op2(im, "add", io, ic) : NULL;
  }
  if (!io) return NULL;
  const char *ek[] = {"axis", "num_newaxis"};
  GPAttrValue ev[] = {gp_attr_int(2), gp_attr_int(1)};
  GPExpr *f[2] = {ox_call(im, "expand_dims", 1, &ro, 2, ek, ev), ox_call(im, "expand_dims", 1, &io, 2, ek, ev)};
  if (!f[0] || !f[1]) return NULL;
  GPExpr *t = ox_tuple(im, 2, f);
  const char *ck[] = {"axis"};
  GPAttrValue cv[] = {gp_attr_int(2)};
  return t ? ox_call(im, "concatenate", 1, &t, 1, ck, cv) : NULL;
}

static int cv_dft(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x || ox_static(x, "input") != 0) return -1;
  int32_t r = ox_rank(x);
  DLDataType dt = ox_dtype(x);
  if (!ox_is_float(dt)) return ox_unsupported("DFT of %s", gp_ops_dtype(dt).s);
  const int64_t *xs = ox_type(x)->tensor.shape;
  if (r < 2 || r > MAXR || (xs[r - 1] != 1 && xs[r - 1] != 2)) return ox_invalid("input must end in a dimension of 1 or 2, got %s", gp_ops_shape(ox_type(x)).s);
  int64_t axis;
  if (n->opset >= 20) {
    axis = -2;
    if (ox_in(n, 2)) {
      double a;
      if (ox_const_scalar(im, n->in[2], "axis", &a) != 0) return -1;
      axis = gp_f64_to_i64_sat(a);
    }
  } else {
    axis = ox_attr_int(n, "axis", 1);
  }
  bool inverse = ox_attr_int(n, "inverse", 0) != 0, onesided = ox_attr_int(n, "onesided", 0) != 0;
  if (gp_error_kind() != GP_OK) return -1;
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r - 1) return ox_invalid("axis out of range for input %s", gp_ops_shape(ox_type(x)).s);
  int64_t L = xs[axis], Ld = inverse && onesided ? 2 * (L - 1) : L;
  if (ox_in(n, 1)) {
    double d;
    if (ox_const_scalar(im, n->in[1], "dft_length", &d) != 0) return -1;
    if (!(d >= 1 && d <= (1 << 20))) return ox_unsupported("dft_length %g", d);
    Ld = (int64_t)d;
  }
  int64_t K = inverse ? Ld : onesided ? Ld / 2 + 1 : Ld;
  if (Ld < 1) return ox_invalid("DFT of length %lld", (long long)Ld);
  if (K * L > (1 << 24)) return ox_unsupported("DFT of %lld x %lld", (long long)K, (long long)L);
  GPExpr *x64 = ox_cast(im, x, (DLDataType){kDLFloat, 64, 1}); /* numpy's fft computes in double */
  GPExpr *re = x64 ? take_last(im, x64, 0) : NULL, *imag = NULL;
  if (!re || (xs[r - 1] == 2 && !(imag = take_last(im, x64, 1)))) return -1;
  /* move axis last and flatten */
  int32_t rr = r - 1;
  int64_t perm[MAXR], inv[MAXR], ps[MAXR], M = 1;
  for (int32_t i = 0, k = 0; i < rr; i++)
    if (i != axis) perm[k++] = i;
  perm[rr - 1] = axis;
  for (int32_t i = 0; i < rr; i++) inv[perm[i]] = i, ps[i] = xs[perm[i]];
  for (int32_t i = 0; i < rr - 1; i++) M *= ps[i];
  bool last = axis == rr - 1;
  GPExpr *parts[2] = {re, imag};
  for (int i = 0; i < 2; i++) {
    if (!parts[i]) continue;
    if (!last && !(parts[i] = mk_transpose(im, parts[i], rr, perm))) return -1;
    if (!(parts[i] = mk_reshape(im, parts[i], 2, (int64_t[]){M, L}))) return -1;
  }
  GPExpr *y;
  int64_t cdim = 2;
  if (inverse && onesided) {
    /* irfft: the spectrum's upper half is the conjugate mirror of the lower: x[n] = sum_k
     * c_k (re_k cos - im_k sin) / Ld with c_k = 2 except for k = 0 and k = Ld / 2 */
    int64_t kl;
    if (OX_PROD(GP_MAX_TENSOR_ELEMS, &kl, "the inverse DFT matrix", K, L) != 0) return -1;
    double *cm = ox_alloc_n(im, kl, 0, sizeof(double), "the inverse DFT matrix");
    double *sm = cm ? ox_alloc_n(im, kl, 0, sizeof(double), "the inverse DFT matrix") : NULL;
    if (!sm) return -1;
    for (int64_t i = 0; i < K; i++)
      for (int64_t k = 0; k < L; k++) {
        bool used = k <= Ld / 2;
        double ck = k == 0 || 2 * k == Ld ? 1.0 : 2.0, a = 2 * M_PI * (double)((k * i) % Ld) / (double)Ld;
        cm[i * L + k] = used ? ck * cos(a) / (double)Ld : 0;
        sm[i * L + k] = used ? -ck * sin(a) / (double)Ld : 0;
      }
    const DLDataType f64 = {kDLFloat, 64, 1};
    GPExpr *Wc = mk_const(im, f64, 2, (int64_t[]){K, L}, cm), *Ws = Wc ? mk_const(im, f64, 2, (int64_t[]){K, L}, sm) : NULL;
    y = Ws ? mk_dense(im, parts[0], Wc, f64) : NULL;
    if (y && parts[1]) {
      GPExpr *t2 = mk_dense(im, parts[1], Ws, f64);
      y = t2 ? ox_op2(im, "add", y, t2) : NULL;
    }
    cdim = 1;
  } else {
    y = dft_rows(im, parts[0], parts[1], K, L, Ld, inverse, NULL);
  }
  if (!y) return -1;
  ps[rr - 1] = K;
  ps[rr] = cdim;
  if (!(y = mk_reshape(im, y, rr + 1, ps))) return -1;
  if (!last) {
    inv[rr] = rr;
    if (!(y = mk_transpose(im, y, rr + 1, inv))) return -1;
  }
  out[0] = ox_cast(im, y, dt);
  return out[0] ? 0 : -1;
}

static int cv_stft(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *step_e = ox_req(n, 1);
  if (!x || !step_e || ox_static(x, "signal") != 0) return -1;
  DLDataType dt = ox_dtype(x);
  if (!ox_is_float(dt)) return ox_unsupported("STFT of %s", gp_ops_dtype(dt).s);
  const int64_t *xs = ox_type(x)->tensor.shape;
  if (ox_rank(x) != 3 || (xs[2] != 1 && xs[2] != 2)) return ox_invalid("signal must be [batch, length, 1 or 2]");
  double stepd, fld = -1;
  if (ox_const_scalar(im, step_e, "frame_step", &stepd) != 0) return -1;
  const double *win = NULL;
  int64_t nwin = 0;
  if (const_f64s(im, ox_in(n, 2), "window", &win, &nwin) != 0) return -1;
  if (ox_in(n, 3) && ox_const_scalar(im, n->in[3], "frame_length", &fld) != 0) return -1;
  bool onesided = ox_attr_int(n, "onesided", 1) != 0;
  if (gp_error_kind() != GP_OK) return -1;
  int64_t B = xs[0], len = xs[1];
  int64_t fl = fld > 0 ? gp_f64_to_i64_sat(fld) : nwin > 0 ? nwin : 0;
  if (fl < 1 || fl > len || !(stepd >= 1)) return ox_invalid("bad frame_length / frame_step for a signal of %lld", (long long)len);
  if (nwin > 0 && nwin != fl) return ox_invalid("window has %lld values, frame_length is %lld", (long long)nwin, (long long)fl);
  int64_t step = gp_f64_to_i64_sat(stepd), frames = (len - fl) / step + 1, K = onesided ? fl / 2 + 1 : fl;
  int64_t nmat;
  if (OX_PROD(1 << 24, &nmat, "STFT's matrix", frames, K, len) != 0) return -1;
  /* one matrix over the whole signal: row (f, k) holds the windowed DFT row at offset f * step */
  double *base = ox_alloc_n(im, fl, 0, sizeof(double), "STFT's window");
  if (!base) return -1;
  for (int64_t i = 0; i < fl; i++) base[i] = win ? win[i] : 1.0;
  const DLDataType f64 = {kDLFloat, 64, 1};
  GPExpr *x64 = ox_cast(im, x, f64);
  GPExpr *re = x64 ? take_last(im, x64, 0) : NULL, *imag = NULL;
  if (!re || (xs[2] == 2 && !(imag = take_last(im, x64, 1)))) return -1;
  double *c = ox_alloc_n(im, nmat, 0, sizeof(double), "STFT's matrix");
  double *sn = c ? ox_alloc_n(im, nmat, 0, sizeof(double), "STFT's matrix") : NULL;
  if (!sn) return -1;
  memset(c, 0, (size_t)(frames * K * len) * sizeof(double));
  memset(sn, 0, (size_t)(frames * K * len) * sizeof(double));
  for (int64_t f = 0; f < frames; f++)
    for (int64_t k = 0; k < K; k++)
      for (int64_t i = 0; i < fl; i++) {
        double a = 2 * M_PI * (double)((k * i) % fl) / (double)fl;
        int64_t row = f * K + k, col = f * step + i;
        c[row * len + col] = cos(a) * base[i];
        sn[row * len + col] = sin(a) * base[i];
      }
  GPExpr *Wc = mk_const(im, f64, 2, (int64_t[]){frames * K, len}, c);
  GPExpr *Ws = Wc ? mk_const(im, f64, 2, (int64_t[]){frames * K, len}, sn) : NULL;
  if (!Ws) return -1;
  GPExpr *rc = mk_dense(im, re, Wc, f64), *rs = rc ? mk_dense(im, re, Ws, f64) : NULL;
  GPExpr *ro = rc, *io = rs ? ox_op1(im, "negative", rs) : NULL;
  if (io && imag) {
    GPExpr *ic = mk_dense(im, imag, Wc, f64), *is = ic ? mk_dense(im, imag, Ws, f64) : NULL;
    ro = is ? ox_op2(im, "add", ro, is) : NULL;
    io = ro ? ox_op2(im, "add", io, ic) : NULL;
  }
  if (!io) return -1;
  const char *ek[] = {"axis", "num_newaxis"};
  GPAttrValue ev[] = {gp_attr_int(2), gp_attr_int(1)};
  GPExpr *f2[2] = {ox_call(im, "expand_dims", 1, &ro, 2, ek, ev), ox_call(im, "expand_dims", 1, &io, 2, ek, ev)};
  if (!f2[0] || !f2[1]) return -1;
  GPExpr *t = ox_tuple(im, 2, f2);
  const char *ck[] = {"axis"};
  GPAttrValue cv[] = {gp_attr_int(2)};
  GPExpr *y = t ? ox_call(im, "concatenate", 1, &t, 1, ck, cv) : NULL; /* [B, frames * K, 2] */
  y = y ? mk_reshape(im, y, 4, (int64_t[]){B, frames, K, 2}) : NULL;
  out[0] = y ? ox_cast(im, y, dt) : NULL;
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* NonMaxSuppression: its result's shape depends on the values, so it is computed here when
 * every input is known at import (constants or given input values), as ONNX's reference does
 * (float32 box arithmetic, ties in score to the lower box index); else unsupported. */

static bool nms_suppress(const float *b1, const float *b2, int64_t cpb, float thr) {
  float x1a, x1b, x2a, x2b, y1a, y1b, y2a, y2b;
  if (cpb == 0) {
    x1a = fminf(b1[1], b1[3]), x1b = fmaxf(b1[1], b1[3]), x2a = fminf(b2[1], b2[3]), x2b = fmaxf(b2[1], b2[3]);
    y1a = fminf(b1[0], b1[2]), y1b = fmaxf(b1[0], b1[2]), y2a = fminf(b2[0], b2[2]), y2b = fmaxf(b2[0], b2[2]);
  } else {
    float w1 = b1[2] / 2, h1 = b1[3] / 2, w2 = b2[2] / 2, h2 = b2[3] / 2;
    x1a = b1[0] - w1, x1b = b1[0] + w1, x2a = b2[0] - w2, x2b = b2[0] + w2;
    y1a = b1[1] - h1, y1b = b1[1] + h1, y2a = b2[1] - h2, y2b = b2[1] + h2;
  }
  float ixa = fmaxf(x1a, x2a), ixb = fminf(x1b, x2b);
  if (ixb <= ixa) return false;
  float iya = fmaxf(y1a, y2a), iyb = fminf(y1b, y2b);
  if (iyb <= iya) return false;
  float inter = (ixb - ixa) * (iyb - iya);
  if (inter <= 0) return false;
  float a1 = (x1b - x1a) * (y1b - y1a), a2 = (x2b - x2a) * (y2b - y2a), uni = a1 + a2 - inter;
  if (a1 <= 0 || a2 <= 0 || uni <= 0) return false;
  return inter / uni > thr;
}

static int cv_nms(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *be = ox_req(n, 0), *se = ox_req(n, 1);
  if (!be || !se) return -1;
  GPTensor *bt = ox_const(im, be, "boxes"), *st = bt ? ox_const(im, se, "scores") : NULL;
  if (!st) return -1;
  int64_t maxo = 0;
  double iou = 0, sthr = 0;
  bool has_sthr = false;
  const double *v;
  int64_t nv;
  if (const_f64s(im, ox_in(n, 2), "max_output_boxes_per_class", &v, &nv) != 0) return -1;
  if (nv > 0) maxo = v[0] > 0 ? (v[0] > 1e15 ? (int64_t)1e15 : (int64_t)v[0]) : 0;
  if (const_f64s(im, ox_in(n, 3), "iou_threshold", &v, &nv) != 0) return -1;
  if (nv > 0) iou = v[0];
  if (const_f64s(im, ox_in(n, 4), "score_threshold", &v, &nv) != 0) return -1;
  if (nv > 0) sthr = v[0], has_sthr = true;
  int64_t cpb = ox_attr_int(n, "center_point_box", 0);
  if (gp_error_kind() != GP_OK) return -1;
  if (bt->dl.ndim != 3 || bt->dl.shape[2] != 4 || st->dl.ndim != 3 || st->dl.shape[0] != bt->dl.shape[0] ||
      st->dl.shape[2] != bt->dl.shape[1])
    return ox_invalid("boxes [B, N, 4] and scores [B, C, N] do not agree");
  int64_t B = bt->dl.shape[0], Nb = bt->dl.shape[1], C = st->dl.shape[1];
  int64_t nbox, nall, ncoord;
  if (OX_PROD(1 << 22, &nbox, "NonMaxSuppression's boxes", B, Nb) != 0 ||
      OX_PROD(1 << 24, &nall, "NonMaxSuppression's scores", B, C, Nb) != 0 ||
      OX_PROD(GP_MAX_TENSOR_ELEMS, &ncoord, "NonMaxSuppression's boxes", nbox, 4) != 0)
    return -1;
  float *boxes = ox_alloc_n(im, ncoord, 1, sizeof(float), "NonMaxSuppression's boxes");
  int64_t *cand = boxes ? ox_alloc_n(im, Nb, 1, sizeof(int64_t), "NonMaxSuppression") : NULL;
  float *sc = cand ? ox_alloc_n(im, Nb, 1, sizeof(float), "NonMaxSuppression") : NULL;
  int64_t *sel = sc ? ox_alloc_n(im, Nb, 1, sizeof(int64_t), "NonMaxSuppression") : NULL;
  if (!sel) return -1;
  for (int64_t i = 0; i < ncoord; i++) boxes[i] = (float)gp_tensor_get_f64(bt, i);
  GPBuf res = {0};
  int64_t count = 0;
  float thr = (float)iou, sth = (float)sthr;
  for (int64_t b = 0; b < B; b++)
    for (int64_t c = 0; c < C; c++) {
      int64_t nc = 0;
      for (int64_t i = 0; i < Nb; i++) {
        sc[i] = (float)gp_tensor_get_f64(st, (b * C + c) * Nb + i);
        if (!has_sthr || sc[i] > sth) cand[nc++] = i;
      }
      /* insertion sort: score descending, index ascending (stable on the index order) */
      for (int64_t i = 1; i < nc; i++) {
        int64_t x = cand[i], j = i;
        while (j > 0 && sc[cand[j - 1]] < sc[x]) {
          cand[j] = cand[j - 1];
          j--;
        }
        cand[j] = x;
      }
      int64_t ns = 0;
      for (int64_t i = 0; i < nc && ns < maxo; i++) {
        bool keep = true;
        for (int64_t k = 0; k < ns && keep; k++)
          keep = !nms_suppress(boxes + (b * Nb + cand[i]) * 4, boxes + (b * Nb + sel[k]) * 4, cpb, thr);
        if (!keep) continue;
        sel[ns++] = cand[i];
        int64_t row[3] = {b, c, cand[i]};
        gp_buf_put(&res, (const char *)row, sizeof row);
        count++;
      }
    }
  const DLDataType i64 = {kDLInt, 64, 1};
  int64_t shape[2] = {count, 3};
  GPTensor *t = gp_tensor_alloc(i64, 2, shape, true);
  if (!t) {
    gp_buf_free(&res);
    return -1;
  }
  if (count) memcpy(t->dl.data, res.data, (size_t)count * 3 * sizeof(int64_t));
  gp_buf_free(&res);
  out[0] = ox_constant(im, t);
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Slices and concatenation shared by the converters below. */

static GPExpr *slice_last(OxImporter *im, GPExpr *x, int64_t b, int64_t e, int64_t step) {
  int64_t ax = ox_rank(x) - 1;
  const char *keys[] = {"begin", "end", "strides", "axes"};
  GPAttrValue vals[] = {gp_attr_ints(1, &b), gp_attr_ints(1, &e), gp_attr_ints(1, &step), gp_attr_ints(1, &ax)};
  return ox_call(im, "strided_slice", 1, &x, 4, keys, vals);
}

static GPExpr *concat2(OxImporter *im, GPExpr *a, GPExpr *b, int64_t axis) {
  GPExpr *f[2] = {a, b};
  GPExpr *t = ox_tuple(im, 2, f);
  const char *ck[] = {"axis"};
  GPAttrValue cv[] = {gp_attr_int(axis)};
  return t ? ox_call(im, "concatenate", 1, &t, 1, ck, cv) : NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* RoiAlign: with the rois and batch indices known at import, each output (avg) is a fixed
 * weighted sum of input pixels (ONNX's reference sampling), so the op is one nn.dense:
 * X as [C, N * H * W] times a [R * OH * OW, N * H * W] matrix; max takes the weighted corner
 * samples the same way and reduces them with max. */

static int cv_roi_align(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *re = ox_req(n, 1), *be = ox_req(n, 2);
  if (!x || !re || !be || ox_static(x, "X") != 0) return -1;
  const char *mode = ox_attr_str(im, n, "mode", "avg");
  const char *ctm = n->opset >= 16 ? ox_attr_str(im, n, "coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
  int64_t OH = ox_attr_int(n, "output_height", 1), OW = ox_attr_int(n, "output_width", 1);
  int64_t sr = ox_attr_int(n, "sampling_ratio", 0);
  double ss = ox_attr_float(n, "spatial_scale", 1.0);
  if (gp_error_kind() != GP_OK) return -1;
  bool is_max = strcmp(mode, "max") == 0;
  if (!is_max && strcmp(mode, "avg") != 0) return ox_unsupported("RoiAlign mode \"%s\"", mode);
  if (is_max && !have_op("max")) return ox_unsupported("RoiAlign mode \"max\" needs the max reduction");
  bool half = strcmp(ctm, "half_pixel") == 0;
  if (!half && strcmp(ctm, "output_half_pixel") != 0) return ox_unsupported("coordinate_transformation_mode \"%s\"", ctm);
  GPTensor *rt = ox_const(im, re, "rois"), *bt = rt ? ox_const(im, be, "batch_indices") : NULL;
  if (!bt) return -1;
  const int64_t *xs = ox_type(x)->tensor.shape;
  if (ox_rank(x) != 4 || rt->dl.ndim != 2 || rt->dl.shape[1] != 4 || bt->dl.ndim != 1 || bt->dl.shape[0] != rt->dl.shape[0])
    return ox_invalid("X [N, C, H, W], rois [R, 4] and batch_indices [R] do not agree");
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], R = rt->dl.shape[0], P = OH * OW, HW = H * W;
  if (OH < 1 || OW < 1 || H < 1 || W < 1) return ox_invalid("empty RoiAlign");
  double off = half ? 0.5 : 0.0;
  /* max mode: one row per (roi, bin, sample, corner) -- the reference's value is the max over
   * samples of the max over corners of weight * pixel (0 for a sample outside the map) -- then a
   * max over the last axis; every roi must have the same sampling grid */
  int64_t G = 1;
  for (int64_t r = 0; is_max && r < R; r++) {
    double rw = (gp_tensor_get_f64(rt, r * 4 + 2) - gp_tensor_get_f64(rt, r * 4)) * ss;
    double rh = (gp_tensor_get_f64(rt, r * 4 + 3) - gp_tensor_get_f64(rt, r * 4 + 1)) * ss;
    if (!half) rw = fmax(rw, 1.0), rh = fmax(rh, 1.0);
    double gh = sr > 0 ? (double)sr : ceil(rh / (double)OH), gw = sr > 0 ? (double)sr : ceil(rw / (double)OW);
    if (!(gh >= 0 && gh < 4096 && gw >= 0 && gw < 4096)) return ox_unsupported("RoiAlign sampling grid %g x %g", gh, gw);
    if (r > 0 && (int64_t)(gh * gw) != G) return ox_unsupported("RoiAlign mode \"max\" with sampling grids of different sizes");
    G = (int64_t)(gh * gw);
  }
  if (G < 1) G = 1;
  int64_t rows, nw;
  if ((is_max ? OX_PROD(1 << 24, &rows, "RoiAlign", R, P, G, 4) : OX_PROD(1 << 24, &rows, "RoiAlign", R, P)) != 0 ||
      OX_PROD(1 << 24, &nw, "RoiAlign's sampling matrix", rows, N, HW) != 0)
    return -1;
  double *w = ox_alloc_n(im, nw, 0, sizeof(double), "RoiAlign's sampling matrix");
  if (!w) return -1;
  memset(w, 0, (size_t)(rows * N * HW) * sizeof(double));
  for (int64_t r = 0; r < R; r++) {
    int64_t b = gp_tensor_get_i64(bt, r);
    if (b < 0 || b >= N) return ox_invalid("batch index %lld out of [0, %lld)", (long long)b, (long long)N);
    double sw = gp_tensor_get_f64(rt, r * 4) * ss - off, sh = gp_tensor_get_f64(rt, r * 4 + 1) * ss - off;
    double ew = gp_tensor_get_f64(rt, r * 4 + 2) * ss - off, eh = gp_tensor_get_f64(rt, r * 4 + 3) * ss - off;
    double rw = ew - sw, rh = eh - sh;
    if (!half) rw = fmax(rw, 1.0), rh = fmax(rh, 1.0);
    double bh = rh / (double)OH, bw = rw / (double)OW;
    double gh = sr > 0 ? (double)sr : ceil(rh / (double)OH), gw = sr > 0 ? (double)sr : ceil(rw / (double)OW);
    if (!(gh >= 0 && gh < 4096 && gw >= 0 && gw < 4096)) return ox_unsupported("RoiAlign sampling grid %g x %g", gh, gw);
    int64_t gH = (int64_t)gh, gW = (int64_t)gw, cnt = gH * gW > 1 ? gH * gW : 1;
    for (int64_t ph = 0; ph < OH; ph++)
      for (int64_t pw = 0; pw < OW; pw++) {
        double *row = w + ((r * P) + ph * OW + pw) * (is_max ? 4 * G : 1) * (N * HW) + b * HW;
        for (int64_t iy = 0; iy < gH; iy++)
          for (int64_t ix = 0; ix < gW; ix++) {
            double *mrow = row + (iy * gW + ix) * 4 * (N * HW);
            double y = sh + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gH;
            double xx = sw + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gW;
            if (y < -1.0 || y > (double)H || xx < -1.0 || xx > (double)W) continue;
            y = fmax(y, 0), xx = fmax(xx, 0);
            int64_t yl = (int64_t)y, xl = (int64_t)xx, yh, xh;
            if (yl >= H - 1) yh = yl = H - 1, y = (double)yl;
            else yh = yl + 1;
            if (xl >= W - 1) xh = xl = W - 1, xx = (double)xl;
            else xh = xl + 1;
            double ly = y - (double)yl, lx = xx - (double)xl, hy = 1 - ly, hx = 1 - lx, k = 1.0 / (double)cnt;
            if (is_max) {
              mrow[yl * W + xl] = hy * hx;
              mrow[N * HW + yl * W + xh] = hy * lx;
              mrow[2 * N * HW + yh * W + xl] = ly * hx;
              mrow[3 * N * HW + yh * W + xh] = ly * lx;
              continue;
            }
            row[yl * W + xl] += hy * hx * k;
            row[yl * W + xh] += hy * lx * k;
            row[yh * W + xl] += ly * hx * k;
            row[yh * W + xh] += ly * lx * k;
          }
      }
  }
  DLDataType dt = ox_dtype(x);
  if (!ox_is_float(dt)) return ox_unsupported("RoiAlign of %s", gp_ops_dtype(dt).s);
  static const int64_t p102[] = {1, 0, 2}, p1023[] = {1, 0, 2, 3};
  GPExpr *Wm = mk_const(im, dt, 2, (int64_t[]){rows, N * HW}, w);
  GPExpr *x3 = Wm ? mk_reshape(im, x, 3, (int64_t[]){N, C, HW}) : NULL;
  GPExpr *xt = x3 ? mk_transpose(im, x3, 3, p102) : NULL;
  GPExpr *x2 = xt ? mk_reshape(im, xt, 2, (int64_t[]){C, N * HW}) : NULL;
  GPExpr *y = x2 ? mk_dense(im, x2, Wm, dt) : NULL;
  if (y && is_max) {
    y = mk_reshape(im, y, 3, (int64_t[]){C, R * P, 4 * G});
    const char *keys[] = {"axis", "keepdims", "exclude"};
    int64_t a2 = 2;
    GPAttrValue vals[] = {gp_attr_ints(1, &a2), gp_attr_bool(false), gp_attr_bool(false)};
    y = y ? ox_call(im, "max", 1, &y, 3, keys, vals) : NULL;
  }
  GPExpr *y4 = y ? mk_reshape(im, y, 4, (int64_t[]){C, R, OH, OW}) : NULL;
  out[0] = y4 ? mk_transpose(im, y4, 4, p1023) : NULL;
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Stacking along a new axis. */

static GPExpr *stack0(OxImporter *im, GPExpr **items, int64_t n, int64_t axis) {
  const char *ek[] = {"axis", "num_newaxis"};
  GPAttrValue ev[] = {gp_attr_int(axis), gp_attr_int(1)};
  GPExpr **f = ox_alloc_n(im, n, 1, sizeof(GPExpr *), "stack");
  if (!f) return NULL;
  for (int64_t i = 0; i < n; i++)
    if (!(f[i] = ox_call(im, "expand_dims", 1, &items[i], 2, ek, ev))) return NULL;
  if (n == 1) return f[0];
  GPExpr *t = ox_tuple(im, (int32_t)n, f);
  const char *ck[] = {"axis"};
  GPAttrValue cv[] = {gp_attr_int(axis)};
  return t ? ox_call(im, "concatenate", 1, &t, 1, ck, cv) : NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* MaxUnpool, BitCast */

/* MaxUnpool: zeros of the output shape with X written at the flat indices I (scatter_elements
 * on the flattened tensors). */
static int cv_max_unpool(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *ind = ox_req(n, 1), *ose = ox_in(n, 2);
  if (!x || !ind || ox_static(x, "X") != 0) return -1;
  int32_t r = ox_rank(x), nk, ns, np;
  const int64_t *ks = ox_attr_ints(n, "kernel_shape", &nk), *st = ox_attr_ints(n, "strides", &ns);
  const int64_t *pd = ox_attr_ints(n, "pads", &np);
  if (gp_error_kind() != GP_OK) return -1;
  if (r < 3 || r > MAXR || nk != r - 2) return ox_invalid("kernel_shape must have %d values", (int)(r - 2));
  if (!have_op("scatter_elements")) return ox_unsupported("MaxUnpool needs scatter_elements");
  const int64_t *xs = ox_type(x)->tensor.shape;
  /* the indices address the inferred shape; output_shape pads it with zeros at the end */
  int64_t is[MAXR], os[MAXR], total = 1;
  is[0] = xs[0], is[1] = xs[1];
  for (int32_t i = 0; i < r - 2; i++) {
    int64_t s_ = ns == r - 2 ? st[i] : 1, pb = np == 2 * (r - 2) ? pd[i] : 0, pe = np == 2 * (r - 2) ? pd[r - 2 + i] : 0;
    int64_t v;
    if (!gp_mul_i64(xs[2 + i] - 1, s_, &v) || !gp_add_i64(v, ks[i], &v) || !gp_add_i64(v, -pb, &v) ||
        !gp_add_i64(v, -pe, &v) || pb == INT64_MIN || pe == INT64_MIN)
      return ox_unsupported("the output extent of spatial axis %d overflows (input %lld, stride %lld, kernel %lld, "
                            "pads %lld, %lld)", (int)i, (long long)xs[2 + i], (long long)s_, (long long)ks[i],
                            (long long)pb, (long long)pe);
    is[2 + i] = v;
  }
  memcpy(os, is, (size_t)r * sizeof(int64_t));
  if (ose) {
    const int64_t *v;
    int32_t c;
    if (ox_const_ints(im, ose, "output_shape", &v, &c) != 0) return -1;
    if (c != r) return ox_invalid("output_shape must have %d values", (int)r);
    for (int32_t i = 0; i < r; i++)
      if (v[i] < is[i] || (i < 2 && v[i] != is[i])) return ox_unsupported("output_shape %s smaller than the inferred shape", gp_ops_ints(c, v).s);
    memcpy(os, v, (size_t)r * sizeof(int64_t));
  }
  for (int32_t i = 0; i < r; i++) {
    if (is[i] < 0) return ox_invalid("negative output dimension");
  }
  if (ox_prod(1 << 26, &total, "MaxUnpool's output", r, is) != 0) return -1;
  double *z = ox_alloc_n(im, total, 1, sizeof(double), "MaxUnpool's output");
  if (!z) return -1;
  int64_t cnt = gp_k_numel(&(DLTensor){.ndim = r, .shape = (int64_t *)xs});
  GPExpr *zero = mk_const(im, ox_dtype(x), 1, &total, z);
  GPExpr *i1 = zero ? mk_reshape(im, ind, 1, &cnt) : NULL, *x1 = i1 ? mk_reshape(im, x, 1, &cnt) : NULL;
  if (!x1) return -1;
  GPExpr *args[] = {zero, i1, x1};
  const char *keys[] = {"axis"};
  GPAttrValue vals[] = {gp_attr_int(0)};
  GPExpr *sc = ox_call(im, "scatter_elements", 3, args, 1, keys, vals);
  GPExpr *y = sc ? mk_reshape(im, sc, r, is) : NULL;
  int64_t cur[MAXR];
  memcpy(cur, is, (size_t)r * sizeof(int64_t));
  for (int32_t d = 2; y && d < r; d++) {
    if (os[d] == cur[d]) continue;
    int64_t zs[MAXR], zn = 1;
    memcpy(zs, cur, (size_t)r * sizeof(int64_t));
    zs[d] = os[d] - cur[d];
    if (ox_prod(1 << 26, &zn, "MaxUnpool's output_shape", r, zs) != 0) return -1;
    double *zz = ox_alloc_n(im, zn, 1, sizeof(double), "MaxUnpool's output_shape");
    if (!zz) return -1;
    GPExpr *zc = mk_const(im, ox_dtype(x), r, zs, zz);
    y = zc ? concat2(im, y, zc, d) : NULL;
    cur[d] = os[d];
  }
  out[0] = y;
  return y ? 0 : -1;
}

/* BitCast: reinterpret (same width only). */
static int cv_bitcast(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  int64_t to = ox_attr_int(n, "to", 0);
  if (gp_error_kind() != GP_OK) return -1;
  DLDataType dt;
  if (ox_dtype_from_onnx((int32_t)to, &dt) != 0) return -1;
  DLDataType st = ox_dtype(x);
  if ((dt.bits == 1 ? 8 : dt.bits) != (st.bits == 1 ? 8 : st.bits))
    return ox_unsupported("BitCast between widths %d and %d", (int)st.bits, (int)dt.bits);
  if (gp_dtype_eq(dt, st)) {
    out[0] = x;
    return 0;
  }
  const char *keys[] = {"dtype"};
  GPAttrValue vals[] = {gp_attr_dtype(dt)};
  out[0] = ox_call(im, "reinterpret", 1, &x, 1, keys, vals);
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* ai.onnx.preview.training: Adagrad, Momentum, Adam (the spec's update formulas, elementwise;
 * the step count T is read at import where the formula branches on it). */

static GPExpr *sc_of(OxImporter *im, GPExpr *like, double v) { return ox_scalar(im, ox_dtype(like), v); }
static GPExpr *mul_s(OxImporter *im, GPExpr *e, double v) {
  if (!e) return NULL;
  GPExpr *c = sc_of(im, e, v);
  return c ? ox_op2(im, "multiply", e, c) : NULL;
}
static GPExpr *add2(OxImporter *im, GPExpr *a, GPExpr *b) { return a && b ? ox_op2(im, "add", a, b) : NULL; }
/* mul_s and add2 take NULL (an earlier failure) and pass it on */

/* norm_coefficient * x + g */
static GPExpr *g_reg(OxImporter *im, GPExpr *x, GPExpr *g, double nc) {
  if (nc == 0.0) return g;
  return add2(im, mul_s(im, x, nc), g);
}

static int train_common(OxImporter *im, const OxNode *n, int groups, int64_t *cnt, GPExpr **R, double *T) {
  if (n->nin < 2 + groups || (n->nin - 2) % groups) return ox_invalid("expected R, T and %d groups of tensors", groups);
  *cnt = (n->nin - 2) / groups;
  GPExpr *r = ox_req(n, 0), *t = ox_req(n, 1);
  if (!r || !t) return -1;
  if (ox_const_scalar(im, t, "T", T) != 0) return -1;
  *R = r;
  return 0;
}

static int cv_adagrad(OxImporter *im, const OxNode *n, GPExpr **out) {
  int64_t cnt;
  GPExpr *R;
  double T;
  if (train_common(im, n, 3, &cnt, &R, &T) != 0) return -1;
  double decay = ox_attr_float(n, "decay_factor", 0.0), eps = ox_attr_float(n, "epsilon", 0.0), nc = ox_attr_float(n, "norm_coefficient", 0.0);
  if (gp_error_kind() != GP_OK) return -1;
  for (int64_t i = 0; i < cnt; i++) {
    GPExpr *x = ox_req(n, (int32_t)(2 + i)), *g = ox_req(n, (int32_t)(2 + cnt + i)), *h = ox_req(n, (int32_t)(2 + 2 * cnt + i));
    if (!x || !g || !h) return -1;
    GPExpr *r = ox_cast(im, R, ox_dtype(x));
    r = r ? mul_s(im, r, 1.0 / (1.0 + T * decay)) : NULL;
    GPExpr *gr = g_reg(im, x, g, nc), *g2 = gr ? ox_op2(im, "multiply", gr, gr) : NULL;
    GPExpr *hn = add2(im, h, g2);
    GPExpr *ha = hn ? ox_op1(im, "sqrt", hn) : NULL;
    ha = ha ? add2(im, ha, sc_of(im, ha, eps)) : NULL;
    GPExpr *rg = ha && r ? ox_op2(im, "multiply", r, gr) : NULL;
    GPExpr *upd = rg ? ox_op2(im, "divide", rg, ha) : NULL;
    GPExpr *xn = upd ? ox_op2(im, "subtract", x, upd) : NULL;
    if (!xn) return -1;
    if (i < n->nout) out[i] = xn;
    if (cnt + i < n->nout) out[cnt + i] = hn;
  }
  return 0;
}

static int cv_momentum(OxImporter *im, const OxNode *n, GPExpr **out) {
  int64_t cnt;
  GPExpr *R;
  double T;
  if (train_common(im, n, 3, &cnt, &R, &T) != 0) return -1;
  double alpha = ox_attr_float(n, "alpha", 0.0), beta = ox_attr_float(n, "beta", 0.0), nc = ox_attr_float(n, "norm_coefficient", 0.0);
  const char *mode = ox_attr_str(im, n, "mode", "standard");
  if (gp_error_kind() != GP_OK) return -1;
  bool nesterov = strcmp(mode, "nesterov") == 0;
  if (!nesterov && strcmp(mode, "standard") != 0) return ox_invalid("mode \"%s\"", mode);
  double ba = T > 0 ? beta : 1.0;
  for (int64_t i = 0; i < cnt; i++) {
    GPExpr *x = ox_req(n, (int32_t)(2 + i)), *g = ox_req(n, (int32_t)(2 + cnt + i)), *v = ox_req(n, (int32_t)(2 + 2 * cnt + i));
    if (!x || !g || !v) return -1;
    GPExpr *r = ox_cast(im, R, ox_dtype(x));
    GPExpr *gr = g_reg(im, x, g, nc);
    GPExpr *vn = gr ? add2(im, mul_s(im, v, alpha), mul_s(im, gr, ba)) : NULL;
    GPExpr *step = nesterov && vn ? add2(im, gr, mul_s(im, vn, alpha)) : vn;
    GPExpr *rs = step && r ? ox_op2(im, "multiply", r, step) : NULL;
    GPExpr *xn = rs ? ox_op2(im, "subtract", x, rs) : NULL;
    if (!xn) return -1;
    if (i < n->nout) out[i] = xn;
    if (cnt + i < n->nout) out[cnt + i] = vn;
  }
  return 0;
}

static int cv_adam(OxImporter *im, const OxNode *n, GPExpr **out) {
  int64_t cnt;
  GPExpr *R;
  double T;
  if (train_common(im, n, 4, &cnt, &R, &T) != 0) return -1;
  double alpha = ox_attr_float(n, "alpha", 0.9f), beta = ox_attr_float(n, "beta", 0.999f), eps = ox_attr_float(n, "epsilon", 1e-6f);
  double nc = ox_attr_float(n, "norm_coefficient", 0.0), ncp = ox_attr_float(n, "norm_coefficient_post", 0.0);
  if (gp_error_kind() != GP_OK) return -1;
  double radj = T > 0 ? sqrt(1 - pow(beta, T)) / (1 - pow(alpha, T)) : 1.0;
  for (int64_t i = 0; i < cnt; i++) {
    GPExpr *x = ox_req(n, (int32_t)(2 + i)), *g = ox_req(n, (int32_t)(2 + cnt + i));
    GPExpr *v = ox_req(n, (int32_t)(2 + 2 * cnt + i)), *h = ox_req(n, (int32_t)(2 + 3 * cnt + i));
    if (!x || !g || !v || !h) return -1;
    GPExpr *r = ox_cast(im, R, ox_dtype(x));
    r = r ? mul_s(im, r, radj) : NULL;
    GPExpr *gr = g_reg(im, x, g, nc);
    GPExpr *vn = gr ? add2(im, mul_s(im, v, alpha), mul_s(im, gr, 1 - alpha)) : NULL;
    GPExpr *g2 = vn ? ox_op2(im, "multiply", gr, gr) : NULL;
    GPExpr *hn = g2 ? add2(im, mul_s(im, h, beta), mul_s(im, g2, 1 - beta)) : NULL;
    GPExpr *hs = hn ? ox_op1(im, "sqrt", hn) : NULL;
    hs = hs ? add2(im, hs, sc_of(im, hs, eps)) : NULL;
    GPExpr *q = hs ? ox_op2(im, "divide", vn, hs) : NULL;
    GPExpr *rq = q && r ? ox_op2(im, "multiply", r, q) : NULL;
    GPExpr *xn = rq ? ox_op2(im, "subtract", x, rq) : NULL;
    if (xn && ncp != 0.0) xn = mul_s(im, xn, 1 - ncp);
    if (!xn) return -1;
    if (i < n->nout) out[i] = xn;
    if (cnt + i < n->nout) out[cnt + i] = vn;
    if (2 * cnt + i < n->nout) out[2 * cnt + i] = hn;
  }
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* DeformConv (2-d): for every kernel tap, the input sampled bilinearly (zeros outside) at the
 * tap's position plus its offset -- image.grid_sample on a grid built from the offsets --
 * times the mask, then a 1x1 nn.conv2d with that tap's weights; the taps summed, plus bias. */

static GPExpr *chan_slice(OxImporter *im, GPExpr *e, int64_t b, int64_t en) {
  int64_t ax = 1;
  const char *keys[] = {"begin", "end", "axes"};
  GPAttrValue vals[] = {gp_attr_ints(1, &b), gp_attr_ints(1, &en), gp_attr_ints(1, &ax)};
  return ox_call(im, "strided_slice", 1, &e, 3, keys, vals);
}

static int cv_deform_conv(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *w = ox_req(n, 1), *off = ox_req(n, 2), *b = ox_in(n, 3), *mask = ox_in(n, 4);
  if (!x || !w || !off || ox_static(x, "X") != 0 || ox_static(w, "W") != 0 || ox_static(off, "offset") != 0) return -1;
  if (ox_rank(x) != 4 || ox_rank(w) != 4 || ox_rank(off) != 4) return ox_unsupported("DeformConv of rank %d (2-d only)", (int)ox_rank(x));
  DLDataType dt = ox_dtype(x);
  if (!ox_is_float(dt)) return ox_unsupported("DeformConv of %s", gp_ops_dtype(dt).s);
  int32_t c;
  int64_t st[2] = {1, 1}, dl[2] = {1, 1}, pad[4] = {0, 0, 0, 0};
  const int64_t *v = ox_attr_ints(n, "strides", &c);
  if (c == 2) st[0] = v[0], st[1] = v[1];
  v = ox_attr_ints(n, "dilations", &c);
  if (c == 2) dl[0] = v[0], dl[1] = v[1];
  v = ox_attr_ints(n, "pads", &c);
  if (c == 4) pad[0] = v[0], pad[1] = v[1], pad[2] = v[2], pad[3] = v[3];
  int64_t group = ox_attr_int(n, "group", 1), og = ox_attr_int(n, "offset_group", 1);
  if (gp_error_kind() != GP_OK) return -1;
  const int64_t *xs = ox_type(x)->tensor.shape, *ws = ox_type(w)->tensor.shape, *os = ox_type(off)->tensor.shape;
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], KH = ws[2], KW = ws[3], K, wc, ok2, taps;
  if (OX_PROD(GP_MAX_TYPE_ELEMS, &K, "DeformConv's kernel", KH, KW) != 0) return -1;
  if (group < 1 || og < 1 || !gp_mul_i64(ws[1], group, &wc) || !gp_mul_i64(og, K, &taps) || !gp_mul_i64(taps, 2, &ok2))
    return ox_unsupported("DeformConv with group %lld, offset_group %lld and a %lld x %lld kernel: the products overflow",
                          (long long)group, (long long)og, (long long)KH, (long long)KW);
  if (C % og || C % group || wc != C || O % group)
    return ox_invalid("channels %lld, groups %lld, offset_group %lld and W %s do not agree", (long long)C, (long long)group,
                      (long long)og, gp_ops_shape(ox_type(w)).s);
  int64_t OH = (H + pad[0] + pad[2] - (dl[0] * (KH - 1) + 1)) / st[0] + 1;
  int64_t OW = (W + pad[1] + pad[3] - (dl[1] * (KW - 1) + 1)) / st[1] + 1;
  if (OH < 1 || OW < 1 || os[0] != N || os[1] != ok2 || os[2] != OH || os[3] != OW)
    return ox_invalid("offset %s does not match output (%lld, %lld, %lld, %lld)", gp_ops_shape(ox_type(off)).s,
                      (long long)N, (long long)ok2, (long long)OH, (long long)OW);
  if (taps > 1024) return ox_unsupported("DeformConv with %lld taps", (long long)taps);
  int64_t Cg = C / og, npix;
  if (OX_PROD(GP_MAX_TENSOR_ELEMS, &npix, "DeformConv's output", OH, OW) != 0) return -1;
  double *by = ox_alloc_n(im, npix, 0, sizeof(double), "DeformConv's grid");
  double *bx = by ? ox_alloc_n(im, npix, 0, sizeof(double), "DeformConv's grid") : NULL;
  if (!bx) return -1;
  GPExpr *acc = NULL;
  for (int64_t i = 0; i < KH; i++)
    for (int64_t j = 0; j < KW; j++) {
      int64_t k = i * KW + j;
      /* normalized (align_corners = False) base coordinates: (2 p + 1) / size - 1 */
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          double y = (double)(oh * st[0] - pad[0] + i * dl[0]), xx = (double)(ow * st[1] - pad[1] + j * dl[1]);
          by[oh * OW + ow] = (2 * y + 1) / (double)H - 1;
          bx[oh * OW + ow] = (2 * xx + 1) / (double)W - 1;
        }
      GPExpr *BY = mk_const(im, dt, 4, (int64_t[]){1, 1, OH, OW}, by), *BX = BY ? mk_const(im, dt, 4, (int64_t[]){1, 1, OH, OW}, bx) : NULL;
      if (!BX) return -1;
      GPExpr **parts = ox_alloc_n(im, og, 0, sizeof(GPExpr *), "DeformConv's offset groups");
      if (!parts) return -1;
      for (int64_t g = 0; g < og; g++) {
        int64_t oc = (g * K + k) * 2;
        GPExpr *dy = chan_slice(im, off, oc, oc + 1), *dx = dy ? chan_slice(im, off, oc + 1, oc + 2) : NULL;
        GPExpr *ny = dx ? add2(im, BY, mul_s(im, dy, 2.0 / (double)H)) : NULL;
        GPExpr *nx = ny ? add2(im, BX, mul_s(im, dx, 2.0 / (double)W)) : NULL;
        GPExpr *grid = nx ? concat2(im, nx, ny, 1) : NULL;
        GPExpr *xg = grid ? (og == 1 ? x : chan_slice(im, x, g * Cg, (g + 1) * Cg)) : NULL;
        if (!xg) return -1;
        GPExpr *args[] = {xg, grid};
        const char *keys[] = {"method", "layout", "padding_mode", "align_corners"};
        GPAttrValue vals[] = {gp_attr_str("bilinear"), gp_attr_str("NCHW"), gp_attr_str("zeros"), gp_attr_bool(false)};
        GPExpr *smp = ox_call(im, "image.grid_sample", 2, args, 4, keys, vals);
        if (smp && mask) {
          GPExpr *m = chan_slice(im, mask, g * K + k, g * K + k + 1);
          smp = m ? ox_op2(im, "multiply", smp, m) : NULL;
        }
        if (!(parts[g] = smp)) return -1;
      }
      GPExpr *S = parts[0];
      if (og > 1) {
        GPExpr *t = ox_tuple(im, (int32_t)og, parts);
        const char *ck[] = {"axis"};
        GPAttrValue cv[] = {gp_attr_int(1)};
        S = t ? ox_call(im, "concatenate", 1, &t, 1, ck, cv) : NULL;
      }
      /* W[:, :, i, j] as [O, C / group, 1, 1] */
      int64_t bgn[2] = {i, j}, end[2] = {i + 1, j + 1}, axs[2] = {2, 3};
      const char *keys[] = {"begin", "end", "axes"};
      GPAttrValue vals[] = {gp_attr_ints(2, bgn), gp_attr_ints(2, end), gp_attr_ints(2, axs)};
      GPExpr *wk = S ? ox_call(im, "strided_slice", 1, &w, 3, keys, vals) : NULL;
      if (!wk) return -1;
      GPExpr *cargs[] = {S, wk};
      int64_t one2[2] = {1, 1};
      const char *ckeys[] = {"groups", "channels", "kernel_size"};
      GPAttrValue cvals[] = {gp_attr_int(group), gp_attr_int(O), gp_attr_ints(2, one2)};
      GPExpr *y = ox_call(im, "nn.conv2d", 2, cargs, 3, ckeys, cvals);
      if (!y) return -1;
      acc = acc ? ox_op2(im, "add", acc, y) : y;
      if (!acc) return -1;
    }
  if (b) {
    GPExpr *br = mk_reshape(im, b, 3, (int64_t[]){O, 1, 1});
    acc = br ? ox_op2(im, "add", acc, br) : NULL;
  }
  out[0] = acc;
  return acc ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* ai.onnx.ml: Binarizer (x > threshold as x's dtype). */

static int cv_binarizer(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  double t = ox_attr_float(n, "threshold", 0.0);
  if (gp_error_kind() != GP_OK) return -1;
  if (!have_op("greater")) return ox_unsupported("Binarizer needs greater");
  GPExpr *th = ox_scalar(im, ox_dtype(x), t);
  GPExpr *g = th ? ox_op2(im, "greater", x, th) : NULL;
  out[0] = g ? ox_cast(im, g, ox_dtype(x)) : NULL;
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* TfIdfVectorizer (integer pool): the count of n-gram g with skip distance d in a row is
 * sum_i prod_j [x[i + j d] == g_j] -- equal masks per pool token, shifted slices multiplied and
 * summed -- over d = 1 .. max_skip_count + 1 (unigrams once), as ONNX's reference counts; then
 * TF / IDF / TFIDF weighting. */

static int cv_tfidf(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x || ox_static(x, "X") != 0) return -1;
  int64_t maxg = ox_attr_int(n, "max_gram_length", 0), ming = ox_attr_int(n, "min_gram_length", 0);
  int64_t maxskip = ox_attr_int(n, "max_skip_count", 0);
  const char *mode = ox_attr_str(im, n, "mode", "TF");
  int32_t ncnt, nidx, npool, nw;
  const int64_t *cnts = ox_attr_ints(n, "ngram_counts", &ncnt), *idxs = ox_attr_ints(n, "ngram_indexes", &nidx);
  const int64_t *pool = ox_attr_ints(n, "pool_int64s", &npool);
  const float *wts = ox_attr_floats(n, "weights", &nw);
  if (gp_error_kind() != GP_OK) return -1;
  if (npool < 0) return ox_unsupported("TfIdfVectorizer without pool_int64s (strings)");
  if (!ox_is_int(ox_dtype(x))) return ox_unsupported("TfIdfVectorizer of %s input", gp_ops_dtype(ox_dtype(x)).s);
  int tfm = strcmp(mode, "TF") == 0 ? 0 : strcmp(mode, "IDF") == 0 ? 1 : strcmp(mode, "TFIDF") == 0 ? 2 : -1;
  if (tfm < 0) return ox_invalid("mode \"%s\"", mode);
  if (ncnt < 1 || nidx < 1 || ming < 1 || maxg < ming || maxskip < 0 || maxskip > 64) return ox_invalid("bad n-gram attributes");
  if (!have_op("equal")) return ox_unsupported("TfIdfVectorizer needs equal");
  int64_t osz = 0;
  for (int32_t i = 0; i < nidx; i++) {
    if (idxs[i] < 0 || idxs[i] > (1 << 20)) return ox_invalid("ngram_indexes out of range");
    if (idxs[i] + 1 > osz) osz = idxs[i] + 1;
  }
  if (nw > 0 && nw < osz) return ox_invalid("weights has %d values for %lld outputs", (int)nw, (long long)osz);
  int32_t r = ox_rank(x);
  const int64_t *xs = ox_type(x)->tensor.shape;
  if (r < 1 || r > 2) return ox_invalid("X must be [C] or [B, C]");
  int64_t B = r == 2 ? xs[0] : 1, C = xs[r - 1];
  GPExpr *x2 = r == 2 ? x : mk_reshape(im, x, 2, (int64_t[]){1, C});
  if (!x2) return -1;
  GPExpr **col = ox_alloc_n(im, osz, 0, sizeof(GPExpr *), "TfIdfVectorizer's outputs");
  /* equal masks per distinct token (memoized by linear search; pools are small) */
  int64_t *tok = col ? ox_alloc_n(im, npool, 1, sizeof(int64_t), "TfIdfVectorizer's pool") : NULL;
  GPExpr **eq = tok ? ox_alloc_n(im, npool, 1, sizeof(GPExpr *), "TfIdfVectorizer's pool") : NULL;
  if (!eq) return -1;
  int32_t ntok = 0;
  int64_t id = 0, ops_budget = 0;
  for (int32_t lvl = 0; lvl < ncnt; lvl++) {
    int64_t m = lvl + 1, b = cnts[lvl], e = lvl + 1 < ncnt ? cnts[lvl + 1] : npool;
    if (b < 0 || e > npool || e < b) return ox_invalid("ngram_counts out of range");
    int64_t grams = (e - b) / m;
    for (int64_t gi = 0; gi < grams; gi++, id++) {
      if (m < ming || m > maxg) continue;
      if (id >= nidx) return ox_invalid("more n-grams than ngram_indexes");
      const int64_t *g = pool + b + gi * m;
      GPExpr *cnt = NULL;
      for (int64_t d = 1; d <= (m == 1 ? 1 : maxskip + 1); d++) {
        int64_t L = C - (m - 1) * d;
        if (L <= 0) continue;
        if (++ops_budget > 20000) return ox_unsupported("TfIdfVectorizer with too many n-gram / skip pairs");
        GPExpr *prod = NULL;
        for (int64_t j = 0; j < m; j++) {
          int32_t t = 0;
          while (t < ntok && tok[t] != g[j]) t++;
          if (t == ntok) {
            GPExpr *k = ox_scalar(im, ox_dtype(x2), (double)g[j]);
            GPExpr *q = k ? ox_op2(im, "equal", x2, k) : NULL;
            if (!(eq[t] = q ? ox_cast(im, q, k_f32) : NULL)) return -1;
            tok[ntok++] = g[j];
          }
          GPExpr *sl = L == C ? eq[t] : slice_last(im, eq[t], j * d, j * d + L, 1);
          prod = prod ? ox_op2(im, "multiply", prod, sl) : sl;
          if (!prod) return -1;
        }
        static const int64_t ax1[] = {1};
        GPExpr *sm = red_sum(im, prod, 1, ax1); /* [B] */
        cnt = cnt ? ox_op2(im, "add", cnt, sm) : sm;
        if (!cnt) return -1;
      }
      if (!cnt) continue;
      int64_t oi = idxs[id];
      col[oi] = col[oi] ? ox_op2(im, "add", col[oi], cnt) : cnt;
      if (!col[oi]) return -1;
    }
  }
  double *z = ox_alloc_n(im, B, 1, sizeof(double), "TfIdfVectorizer's zeros");
  if (!z) return -1;
  for (int64_t i = 0; i < osz; i++)
    if (!col[i] && !(col[i] = mk_const(im, k_f32, 1, &B, z))) return -1;
  GPExpr *y = stack0(im, col, osz, 1); /* [B, osz] */
  if (y && tfm == 1) y = mk_clip(im, y, 0, 1);
  if (y && tfm != 0 && nw > 0) {
    double *wv = ox_alloc_n(im, osz, 0, sizeof(double), "TfIdfVectorizer's weights");
    if (!wv) return -1;
    for (int64_t i = 0; i < osz; i++) wv[i] = wts[i];
    GPExpr *W = mk_const(im, k_f32, 2, (int64_t[]){1, osz}, wv);
    y = W ? ox_op2(im, "multiply", y, W) : NULL;
  }
  out[0] = y && r == 1 ? mk_reshape(im, y, 1, &osz) : y;
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* TreeEnsemble (ai.onnx.ml 5): every leaf's indicator is the product of its path's branch
 * conditions (comparison ops cast to float; set membership summed equal masks), so
 * Y[:, target] = sum over leaves of weight * indicator (SUM; AVERAGE divides by the number of
 * trees).  The trees are walked with an explicit stack. */

typedef struct TeItem {
  int64_t idx;
  bool leaf;
  GPExpr *path; /* [N, 1] float indicator, NULL for 1 */
} TeItem;

static int cv_tree_ensemble(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x || ox_static(x, "X") != 0) return -1;
  int64_t agg = ox_attr_int(n, "aggregate_function", 1), post = ox_attr_int(n, "post_transform", 0);
  int64_t ntg = ox_attr_int(n, "n_targets", 0);
  int32_t nf, nfl, ntl, ntn, nfn, nlt, nr, nmt;
  const int64_t *feat = ox_attr_ints(n, "nodes_featureids", &nf), *tnode = ox_attr_ints(n, "nodes_truenodeids", &ntn);
  const int64_t *fnode = ox_attr_ints(n, "nodes_falsenodeids", &nfn), *tleaf = ox_attr_ints(n, "nodes_trueleafs", &ntl);
  const int64_t *fleaf = ox_attr_ints(n, "nodes_falseleafs", &nfl), *ltgt = ox_attr_ints(n, "leaf_targetids", &nlt);
  const int64_t *roots = ox_attr_ints(n, "tree_roots", &nr), *mtt = ox_attr_ints(n, "nodes_missing_value_tracks_true", &nmt);
  if (gp_error_kind() != GP_OK) return -1;
  GPTensor *splits = ox_attr_tensor(im, n, "nodes_splits");
  GPTensor *modes = splits ? ox_attr_tensor(im, n, "nodes_modes") : NULL;
  GPTensor *lw = modes ? ox_attr_tensor(im, n, "leaf_weights") : NULL;
  if (!lw) return gp_error_kind() != GP_OK ? -1 : ox_invalid("nodes_splits, nodes_modes and leaf_weights are required");
  GPTensor *mv = ox_attr_tensor(im, n, "membership_values");
  if (!mv && gp_error_kind() != GP_OK) return -1;
  if (agg != 0 && agg != 1) return ox_unsupported("aggregate_function %lld (SUM and AVERAGE only)", (long long)agg);
  if (post != 0) return ox_unsupported("post_transform %lld", (long long)post);
  int64_t nn = gp_k_numel(&splits->dl), nl = gp_k_numel(&lw->dl);
  if (nf != nn || ntn != nn || nfn != nn || ntl != nn || nfl != nn || gp_k_numel(&modes->dl) != nn || nlt != nl || nr < 1 ||
      ntg < 1 || ntg > 4096)
    return ox_invalid("inconsistent tree attributes");
  for (int32_t i = 0; i < nmt; i++)
    if (mtt[i]) return ox_unsupported("nodes_missing_value_tracks_true");
  if (ox_rank(x) != 2) return ox_invalid("X must be [N, F]");
  DLDataType dt = ox_dtype(x);
  if (!ox_is_float(dt)) return ox_unsupported("TreeEnsemble of %s", gp_ops_dtype(dt).s);
  static const char *const cmp[] = {"less_equal", "less", "greater_equal", "greater", "equal", "not_equal", "equal"};
  for (int i = 0; i < 7; i++)
    if (!have_op(cmp[i])) return ox_unsupported("TreeEnsemble needs %s", cmp[i]);
  int64_t N = ox_type(x)->tensor.shape[0], F = ox_type(x)->tensor.shape[1];
  /* membership sets, in node order: values up to a NaN (or a 0, as the reference's loop) */
  int64_t *mset = ox_alloc_n(im, nn, 1, sizeof(int64_t), "TreeEnsemble's nodes");
  int64_t *mlen = mset ? ox_alloc_n(im, nn, 1, sizeof(int64_t), "TreeEnsemble's nodes") : NULL;
  if (!mlen) return -1;
  int64_t mpos = 0, mcount = mv ? gp_k_numel(&mv->dl) : 0;
  for (int64_t i = 0; i < nn; i++) {
    mset[i] = mpos, mlen[i] = 0;
    if (gp_tensor_get_i64(modes, i) != 6) continue;
    if (!mv) return ox_invalid("set membership node without membership_values");
    while (mpos < mcount) {
      double v = gp_tensor_get_f64(mv, mpos++);
      if (isnan(v) || v == 0) break;
      mlen[i]++;
    }
  }
  int64_t cap;
  if (!gp_add_i64(nn, nl, &cap) || !gp_add_i64(cap, 2, &cap) || !gp_mul_i64(cap, 2, &cap))
    return ox_unsupported("TreeEnsemble of %lld nodes and %lld leaves", (long long)nn, (long long)nl);
  GPExpr **col = ox_alloc_n(im, ntg, 0, sizeof(GPExpr *), "TreeEnsemble's targets");
  TeItem *stack = col ? ox_alloc_n(im, cap, 0, sizeof(TeItem), "TreeEnsemble's walk") : NULL;
  if (!stack) return -1;
  int64_t budget = 0;
  double scale = agg == 0 ? 1.0 / (double)nr : 1.0;
  for (int32_t ti = 0; ti < nr; ti++) {
    int64_t r0 = roots[ti];
    if (r0 < 0 || r0 >= nn) return ox_invalid("tree root %lld out of range", (long long)r0);
    int64_t sp = 0;
    stack[sp++] = (TeItem){r0, tleaf[r0] && fleaf[r0] && tnode[r0] == fnode[r0], NULL};
    while (sp > 0) {
      TeItem it = stack[--sp];
      if (++budget > 100000) return ox_unsupported("TreeEnsemble with more than 100000 paths");
      if (it.leaf) {
        if (it.idx < 0 || it.idx >= nl) return ox_invalid("leaf %lld out of range", (long long)it.idx);
        int64_t t = ltgt[it.idx];
        if (t < 0 || t >= ntg) return ox_invalid("leaf target %lld out of range", (long long)t);
        double w = gp_tensor_get_f64(lw, it.idx) * scale;
        GPExpr *c;
        if (it.path) {
          c = mul_s(im, it.path, w);
        } else {
          double *wv = ox_alloc_n(im, N, 1, sizeof(double), "TreeEnsemble's weights");
          if (!wv) return -1;
          for (int64_t i = 0; i < N; i++) wv[i] = w;
          c = mk_const(im, dt, 2, (int64_t[]){N, 1}, wv);
        }
        col[t] = col[t] ? add2(im, col[t], c) : c;
        if (!col[t]) return -1;
        continue;
      }
      int64_t i = it.idx;
      if (i < 0 || i >= nn || feat[i] < 0 || feat[i] >= F) return ox_invalid("node %lld out of range", (long long)i);
      GPExpr *xf = slice_last(im, x, feat[i], feat[i] + 1, 1); /* [N, 1] */
      int64_t mode = gp_tensor_get_i64(modes, i);
      GPExpr *cond = NULL;
      if (mode >= 0 && mode <= 5) {
        GPExpr *sv = xf ? ox_scalar(im, dt, gp_tensor_get_f64(splits, i)) : NULL;
        GPExpr *q = sv ? ox_op2(im, cmp[mode], xf, sv) : NULL;
        cond = q ? ox_cast(im, q, dt) : NULL;
      } else if (mode == 6) {
        double *zz = ox_alloc_n(im, N, 1, sizeof(double), "TreeEnsemble's zeros");
        if (!zz) return -1;
        cond = xf ? mk_const(im, dt, 2, (int64_t[]){N, 1}, zz) : NULL;
        for (int64_t k = 0; cond && k < mlen[i]; k++) {
          GPExpr *sv = ox_scalar(im, dt, gp_tensor_get_f64(mv, mset[i] + k));
          GPExpr *q = sv ? ox_op2(im, "equal", xf, sv) : NULL;
          cond = q ? ox_op2(im, "maximum", cond, ox_cast(im, q, dt)) : NULL;
        }
      } else {
        return ox_invalid("node mode %lld", (long long)mode);
      }
      GPExpr *one = cond ? ox_scalar(im, dt, 1.0) : NULL;
      GPExpr *ncond = one ? ox_op2(im, "subtract", one, cond) : NULL;
      if (!ncond) return -1;
      GPExpr *pt = it.path ? ox_op2(im, "multiply", it.path, cond) : cond;
      GPExpr *pf = it.path ? ox_op2(im, "multiply", it.path, ncond) : ncond;
      if (!pt || !pf || sp + 2 > cap) return pt && pf ? ox_unsupported("TreeEnsemble too deep") : -1;
      stack[sp++] = (TeItem){fnode[i], fleaf[i] != 0, pf};
      stack[sp++] = (TeItem){tnode[i], tleaf[i] != 0, pt};
    }
  }
  double *z = ox_alloc_n(im, N, 1, sizeof(double), "TreeEnsemble's zeros");
  if (!z) return -1;
  for (int64_t t = 0; t < ntg; t++)
    if (!col[t] && !(col[t] = mk_const(im, dt, 2, (int64_t[]){N, 1}, z))) return -1;
  GPExpr *y = col[0];
  if (ntg > 1) {
    GPExpr *tup = ox_tuple(im, (int32_t)ntg, col);
    const char *ck[] = {"axis"};
    GPAttrValue cv[] = {gp_attr_int(1)};
    y = tup ? ox_call(im, "concatenate", 1, &tup, 1, ck, cv) : NULL;
  }
  out[0] = y;
  return y ? 0 : -1;
}

/* Det of [..., M, M] for M <= 4: the Leibniz sum over the M! permutations of products of
 * elements (each element a strided_slice of the last two axes). */
static int cv_det(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x || ox_static(x, "X") != 0) return -1;
  int32_t r = ox_rank(x);
  const int64_t *xs = ox_type(x)->tensor.shape;
  if (r < 2 || r > MAXR || xs[r - 1] != xs[r - 2]) return ox_invalid("X must be [..., M, M], got %s", gp_ops_shape(ox_type(x)).s);
  if (!ox_is_float(ox_dtype(x))) return ox_unsupported("Det of %s", gp_ops_dtype(ox_dtype(x)).s);
  int64_t M = xs[r - 1];
  if (M < 1 || M > 4) return ox_unsupported("Det of %lld x %lld matrices (at most 4 x 4)", (long long)M, (long long)M);
  GPExpr *el[16];
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < M; j++) {
      int64_t b[2] = {i, j}, e[2] = {i + 1, j + 1}, a[2] = {r - 2, r - 1};
      const char *keys[] = {"begin", "end", "axes"};
      GPAttrValue vals[] = {gp_attr_ints(2, b), gp_attr_ints(2, e), gp_attr_ints(2, a)};
      GPExpr *sl = ox_call(im, "strided_slice", 1, &x, 3, keys, vals);
      if (!(el[i * M + j] = sl ? mk_reshape(im, sl, r - 2, xs) : NULL)) return -1;
    }
  /* permutations in lexicographic order with their signs */
  int64_t perm[4] = {0, 1, 2, 3};
  GPExpr *acc = NULL;
  for (;;) {
    int inv = 0;
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = i + 1; j < M; j++) inv += perm[i] > perm[j];
    GPExpr *t = el[perm[0]];
    for (int64_t i = 1; i < M && t; i++) t = ox_op2(im, "multiply", t, el[i * M + perm[i]]);
    if (!t) return -1;
    acc = !acc ? (inv % 2 ? ox_op1(im, "negative", t) : t) : ox_op2(im, inv % 2 ? "subtract" : "add", acc, t);
    if (!acc) return -1;
    /* next permutation */
    int64_t k = M - 2;
    while (k >= 0 && perm[k] > perm[k + 1]) k--;
    if (k < 0) break;
    int64_t l = M - 1;
    while (perm[l] < perm[k]) l--;
    int64_t tmp = perm[k];
    perm[k] = perm[l], perm[l] = tmp;
    for (int64_t a = k + 1, b = M - 1; a < b; a++, b--) tmp = perm[a], perm[a] = perm[b], perm[b] = tmp;
  }
  out[0] = acc;
  return 0;
}

const OxConverter ox_cv_extra[] = {
    {"Resize", NULL, 10, cv_resize},
    {"Upsample", NULL, 7, cv_upsample},
    {"GridSample", NULL, 16, cv_grid_sample},
    {"AffineGrid", NULL, 20, cv_affine_grid},
    {"QuantizeLinear", NULL, 10, cv_quantize},
    {"DequantizeLinear", NULL, 10, cv_dequantize},
    {"DynamicQuantizeLinear", NULL, 11, cv_dynamic_quantize},
    {"MatMulInteger", NULL, 10, cv_matmul_integer},
    {"ConvInteger", NULL, 10, cv_conv_integer},
    {"QLinearMatMul", NULL, 10, cv_qlinear_matmul},
    {"QLinearConv", NULL, 10, cv_qlinear_conv},
    {"Einsum", NULL, 12, cv_einsum},
    {"HannWindow", NULL, 17, cv_hann},
    {"HammingWindow", NULL, 17, cv_hamming},
    {"BlackmanWindow", NULL, 17, cv_blackman},
    {"MelWeightMatrix", NULL, 17, cv_mel},
    {"DFT", NULL, 17, cv_dft},
    {"STFT", NULL, 17, cv_stft},
    {"NonMaxSuppression", NULL, 10, cv_nms},
    {"RoiAlign", NULL, 10, cv_roi_align},
    {"MaxUnpool", NULL, 9, cv_max_unpool},
    {"BitCast", NULL, 1, cv_bitcast},
    {"DeformConv", NULL, 19, cv_deform_conv},
    {"Binarizer", "ai.onnx.ml", 1, cv_binarizer},
    {"TfIdfVectorizer", NULL, 9, cv_tfidf},
    {"TreeEnsemble", "ai.onnx.ml", 5, cv_tree_ensemble},
    {"Det", NULL, 11, cv_det},
    {"Adagrad", "ai.onnx.preview.training", 1, cv_adagrad},
    {"Momentum", "ai.onnx.preview.training", 1, cv_momentum},
    {"Adam", "ai.onnx.preview.training", 1, cv_adam},
    {NULL, NULL, 0, NULL},
};
