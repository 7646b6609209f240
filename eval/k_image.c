/* k_image.c -- kernels of the image ops: image.resize1d/2d/3d, image.grid_sample and
 * image.affine_grid; and reinterpret.
 *
 * Resize follows TVM's topi (python/tvm/topi/image/resize.py): each spatial axis maps an output
 * index x to an input coordinate by coordinate_transformation_mode (with scale = in / out), then
 * nearest_neighbor picks one index by rounding_method, linear blends the two neighbours and
 * cubic the four neighbours with Keys' spline (cubic_alpha; cubic_exclude drops the taps
 * outside the image and renormalizes).  Neighbour indices are clamped into the image; with
 * tf_crop_and_resize a coordinate outside [0, in - 1] gives extrapolation_value.  Every axis is
 * separable, so a table of (index, weight) taps per axis and output index is built first, then
 * each output element sums the products of its taps.  Linear and cubic compute in double; nearest
 * copies the element (any dtype).  Coordinates that are NaN or huge are clamped before they
 * become indices (no out-of-range float->int conversion). */
#include "eval/kernel.h"

#include <math.h>

static int check_io(const GPKernelArgs *a, int32_t nin, int32_t nout) {
  if (a->num_inputs != nin || a->num_outputs != nout) {
    gp_error_set(GP_ERR_VALUE, "expects %d inputs and %d outputs, got %d and %d", (int)nin,
                 (int)nout, (int)a->num_inputs, (int)a->num_outputs);
    return -1;
  }
  return 0;
}

static int32_t nthreads_of(const GPKernelArgs *a) { return a->num_threads > 0 ? a->num_threads : 1; }

/* floor(x) as an index, defined for every double: NaN -> 0, clamped to +-2^50. */
static int64_t idx_floor(double x) {
  if (isnan(x)) return 0;
  double f = floor(x);
  if (f > 1125899906842624.0) f = 1125899906842624.0;
  if (f < -1125899906842624.0) f = -1125899906842624.0;
  return (int64_t)f;
}

static int64_t clamp_i(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ------------------------------------------------------------------------------------------ */
/* Resize                                                                                      */

enum { RM_NEAREST, RM_LINEAR, RM_CUBIC };

typedef struct RAxis {
  int32_t axis;     /* position in data */
  int64_t in, out;
  int64_t *idx;     /* out * ntap input indices (clamped) */
  double *w;        /* out * ntap weights */
  uint8_t *outside; /* out flags: extrapolate (tf_crop_and_resize) */
} RAxis;

typedef struct Resize {
  GPKView x;
  char *y;
  int ky, ntap, nsp;
  int64_t ndim;
  int64_t oshape[GP_K_MAX_RANK];
  bool spatial[GP_K_MAX_RANK];
  int32_t sp_of[GP_K_MAX_RANK]; /* axis -> index into ax */
  RAxis ax[3];
  double extrap;
  bool copy; /* nearest with the same dtype: copy bytes */
} Resize;

/* TVM's get_inx: the input coordinate of output index x. */
static double resize_coord(const char *mode, double x, int64_t in, int64_t out, double start,
                           double end) {
  double scale = (double)in / (double)out;
  if (strcmp(mode, "half_pixel") == 0) return (x + 0.5) * scale - 0.5;
  if (strcmp(mode, "align_corners") == 0)
    return out > 1 ? (double)(in - 1) / (double)(out - 1) * x : 0.0;
  if (strcmp(mode, "asymmetric") == 0) return scale * x;
  if (strcmp(mode, "pytorch_half_pixel") == 0) return out > 1 ? (x + 0.5) * scale - 0.5 : 0.0;
  if (strcmp(mode, "tf_half_pixel_for_nn") == 0) return (x + 0.5) * scale;
  /* tf_crop_and_resize */
  if (out > 1) return start * (double)(in - 1) + x * (end - start) * (double)(in - 1) / (double)(out - 1);
  return 0.5 * (start + end) * (double)(in - 1);
}

/* TVM's get_closest_index. */
static int64_t resize_round(const char *r, double x) {
  if (strcmp(r, "round") == 0) {
    /* te.round rounds half to even */
    if (isnan(x)) return 0;
    return idx_floor(nearbyint(x));
  }
  if (strcmp(r, "round_prefer_floor") == 0) return -idx_floor(-(x - 0.5)); /* ceil(x - 0.5) */
  if (strcmp(r, "round_prefer_ceil") == 0) return idx_floor(x + 0.5);
  if (strcmp(r, "ceil") == 0) return -idx_floor(-(x - 1e-5));
  return idx_floor(x + 1e-5); /* floor */
}

static void cubic_weights(double t, double a, double w[4]) {
  double t2 = t * t, t3 = t2 * t;
  w[0] = a * (t3 - 2 * t2 + t);
  w[1] = (a + 2) * t3 - (3 + a) * t2 + 1;
  w[2] = -(a + 2) * t3 + (3 + 2 * a) * t2 - a * t;
  w[3] = -a * t3 + a * t2;
}

static void resize_taps(const GPKernelArgs *a, Resize *r, RAxis *ax, double start, double end,
                        int method) {
  const char *mode = gp_ops_attr_str(a->op, a->attrs, "coordinate_transformation_mode");
  const char *rounding = gp_ops_attr_str(a->op, a->attrs, "rounding_method");
  double alpha = gp_ops_attr_float(a->op, a->attrs, "cubic_alpha");
  bool exclude = gp_ops_attr_int(a->op, a->attrs, "cubic_exclude") != 0;
  bool crop = strcmp(mode, "tf_crop_and_resize") == 0;
  if (!rounding[0]) rounding = strcmp(mode, "align_corners") == 0 ? "round" : "floor";
  int nt = r->ntap;
  int64_t hi = ax->in - 1;
  for (int64_t o = 0; o < ax->out; o++) {
    double c = resize_coord(mode, (double)o, ax->in, ax->out, start, end);
    int64_t *id = ax->idx + o * nt;
    double *w = ax->w + o * nt;
    ax->outside[o] = crop && (c < 0 || c > (double)hi || isnan(c));
    if (method == RM_NEAREST) {
      id[0] = clamp_i(resize_round(rounding, c), 0, hi);
      w[0] = 1.0;
    } else if (method == RM_LINEAR) {
      int64_t i0 = idx_floor(c);
      double f = isnan(c) ? 0.0 : c - (double)i0;
      id[0] = clamp_i(i0, 0, hi);
      id[1] = clamp_i(i0 + 1, 0, hi);
      w[0] = 1.0 - f;
      w[1] = f;
    } else {
      int64_t i0 = idx_floor(c);
      double f = isnan(c) ? 0.0 : c - (double)i0;
      cubic_weights(f, alpha, w);
      double sum = 0;
      for (int t = 0; t < 4; t++) {
        int64_t i = i0 - 1 + t;
        if (exclude && (i < 0 || i > hi)) w[t] = 0.0;
        sum += w[t];
        id[t] = clamp_i(i, 0, hi);
      }
      if (exclude && sum != 0)
        for (int t = 0; t < 4; t++) w[t] /= sum;
    }
  }
}

static void resize_body(void *vctx, int64_t begin, int64_t end) {
  const Resize *r = vctx;
  int32_t nd = (int32_t)r->ndim;
  int64_t coord[GP_K_MAX_RANK];
  int64_t rem = begin;
  for (int32_t d = nd - 1; d >= 0; d--) {
    coord[d] = r->oshape[d] ? rem % r->oshape[d] : 0;
    rem = r->oshape[d] ? rem / r->oshape[d] : 0;
  }
  size_t ye = gp_k_elem_size(r->ky), xe = r->x.elem;
  int nt = r->ntap, nsp = r->nsp;
  int ncomb = 1;
  for (int s = 0; s < nsp; s++) ncomb *= nt;
  for (int64_t f = begin; f < end; f++) {
    int64_t base = 0;
    bool outside = false;
    for (int32_t d = 0; d < nd; d++)
      if (!r->spatial[d]) base += coord[d] * r->x.strides[d];
    for (int s = 0; s < nsp; s++) outside |= r->ax[s].outside[coord[r->ax[s].axis]] != 0;
    char *yp = r->y + (size_t)f * ye;
    if (outside) {
      gp_k_store_f64(yp, r->ky, r->extrap);
    } else if (r->copy) {
      int64_t off = base;
      for (int s = 0; s < nsp; s++)
        off += r->ax[s].idx[coord[r->ax[s].axis]] * r->x.strides[r->ax[s].axis];
      memcpy(yp, r->x.data + off * (int64_t)xe, xe);
    } else {
      double acc = 0;
      for (int c = 0; c < ncomb; c++) {
        int64_t off = base;
        double w = 1.0;
        int cc = c;
        for (int s = nsp - 1; s >= 0; s--) {
          int t = cc % nt;
          cc /= nt;
          const RAxis *ax = &r->ax[s];
          int64_t o = coord[ax->axis];
          off += ax->idx[o * nt + t] * r->x.strides[ax->axis];
          w *= ax->w[o * nt + t];
        }
        if (w != 0.0) acc += w * gp_k_load_f64(r->x.data + off * (int64_t)xe, r->x.kdt);
      }
      gp_k_store_f64(yp, r->ky, acc);
    }
    for (int32_t d = nd - 1; d >= 0; d--) { /* odometer */
      if (++coord[d] < r->oshape[d]) break;
      coord[d] = 0;
    }
  }
}

static int k_resize(const GPKernelArgs *a, int32_t nsp) {
  if (check_io(a, 1, 1) != 0) return -1;
  const DLTensor *xt = a->inputs[0];
  DLTensor *yt = a->outputs[0];
  Resize r;
  memset(&r, 0, sizeof r);
  int kx;
  if (gp_k_dtype_check(xt->dtype, "data", &kx) != 0 ||
      gp_k_dtype_check(yt->dtype, "out_dtype", &r.ky) != 0)
    return -1;
  const char *ms = gp_ops_attr_str(a->op, a->attrs, "method");
  int method = strcmp(ms, "nearest_neighbor") == 0 ? RM_NEAREST
               : strcmp(ms, "linear") == 0         ? RM_LINEAR
               : strcmp(ms, "cubic") == 0          ? RM_CUBIC
                                                   : -1;
  if (method < 0) {
    gp_error_set(GP_ERR_UNSUPPORTED, "method \"%s\" is not supported", ms);
    return -1;
  }
  static const char *const letters[] = {"W", "HW", "DHW"};
  GPLayout l;
  if (gp_layout_parse(gp_ops_attr_str(a->op, a->attrs, "layout"), "layout", &l) != 0) return -1;
  if (l.n != xt->ndim || yt->ndim != xt->ndim) {
    gp_error_set(GP_ERR_VALUE, "layout does not match data of rank %d", (int)xt->ndim);
    return -1;
  }
  gp_k_view(xt, &r.x);
  r.y = (char *)yt->data + yt->byte_offset;
  r.nsp = nsp;
  r.ndim = xt->ndim;
  r.ntap = method == RM_NEAREST ? 1 : method == RM_LINEAR ? 2 : 4;
  r.extrap = gp_ops_attr_float(a->op, a->attrs, "extrapolation_value");
  r.copy = method == RM_NEAREST && r.ky == kx;
  for (int32_t d = 0; d < xt->ndim; d++) r.oshape[d] = yt->shape[d];
  const GPAttrValue *roi = gp_ops_attr(a->op, a->attrs, "roi");
  bool has_roi = (roi->kind == GP_ATTR_FLOATS || roi->kind == GP_ATTR_INTS) && roi->n == 2 * nsp;
  int64_t numel = gp_k_numel(yt);
  for (int32_t s = 0; s < nsp; s++) {
    int32_t axis = gp_layout_index(&l, letters[nsp - 1][s]);
    if (axis < 0) {
      gp_error_set(GP_ERR_VALUE, "layout has no %c axis", letters[nsp - 1][s]);
      return -1;
    }
    RAxis *ax = &r.ax[s];
    ax->axis = axis;
    ax->in = xt->shape[axis];
    ax->out = yt->shape[axis];
    r.spatial[axis] = true;
    if (ax->in == 0 && numel > 0) {
      gp_error_set(GP_ERR_VALUE, "cannot resize an empty axis %d to %lld", (int)axis,
                   (long long)ax->out);
      return -1;
    }
  }
  for (int32_t d = 0; d < xt->ndim; d++)
    if (!r.spatial[d] && yt->shape[d] != xt->shape[d]) {
      gp_error_set(GP_ERR_VALUE, "output shape does not match data on axis %d", (int)d);
      return -1;
    }
  if (numel == 0) return 0;
  for (int32_t s = 0; s < nsp; s++) {
    RAxis *ax = &r.ax[s];
    ax->idx = gp_malloc((size_t)(ax->out * r.ntap) * sizeof(int64_t));
    ax->w = gp_malloc((size_t)(ax->out * r.ntap) * sizeof(double));
    ax->outside = gp_malloc((size_t)ax->out);
    double start = 0, end = 1;
    if (has_roi) {
      start = roi->kind == GP_ATTR_FLOATS ? roi->floats[s] : (double)roi->ints[s];
      end = roi->kind == GP_ATTR_FLOATS ? roi->floats[nsp + s] : (double)roi->ints[nsp + s];
    }
    resize_taps(a, &r, ax, start, end, method);
  }
  int64_t per = (int64_t)r.ntap * (nsp == 1 ? 1 : nsp == 2 ? r.ntap : r.ntap * r.ntap);
  int64_t grain = 16384 / per;
  gp_k_parallel_for(nthreads_of(a), numel, grain < 1 ? 1 : grain, resize_body, &r);
  for (int32_t s = 0; s < nsp; s++) {
    gp_free(r.ax[s].idx);
    gp_free(r.ax[s].w);
    gp_free(r.ax[s].outside);
  }
  return 0;
}

static int k_resize1d(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return k_resize(a, 1);
}
static int k_resize2d(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return k_resize(a, 2);
}
static int k_resize3d(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return k_resize(a, 3);
}

/* ------------------------------------------------------------------------------------------ */
/* image.grid_sample (PyTorch's / ONNX's grid_sample): data [N, C, (D,) H, W], grid
 * [N, nsp, (D',) H', W'] with grid[:, 0] the x (W) coordinate, grid[:, 1] y, grid[:, 2] z, in
 * [-1, 1].  A coordinate denormalizes to ((v + 1) / 2) * (size - 1) (align_corners) or
 * ((v + 1) * size - 1) / 2; nearest rounds it half to even; outside the borders, border padding
 * clamps it and reflection reflects it; each tap then reads 0 outside the image (zeros), the
 * clamped index (border) or the reflected index (reflection).  bicubic uses alpha -0.75. */

enum { GS_NEAREST, GS_LINEAR, GS_CUBIC };
enum { GS_ZEROS, GS_BORDER, GS_REFLECT };

typedef struct GridSample {
  GPKView x, g;
  char *y;
  int ky, method, pad, nsp, ntap;
  bool align;
  int64_t N, C, in[3], out[3], opos; /* opos: output positions per (n, c) */
} GridSample;

static double gs_reflect(double x, double lo, double hi) {
  double rng = hi - lo;
  if (!(rng > 0)) return lo;
  if (x < lo) {
    double dx = lo - x, n = floor(dx / rng), r = dx - n * rng;
    return fmod(n, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi, n = floor(dx / rng), r = dx - n * rng;
    return fmod(n, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

/* The index a tap reads, or -1 for a zero. */
static int64_t gs_tap(const GridSample *s, int64_t i, int64_t size) {
  if (i >= 0 && i < size) return i;
  if (s->pad == GS_ZEROS) return -1;
  if (s->pad == GS_BORDER) return clamp_i(i, 0, size - 1);
  double lo = s->align ? 0.0 : -0.5, hi = s->align ? (double)size - 1 : (double)size - 0.5;
  return clamp_i(idx_floor(gs_reflect((double)i, lo, hi) + 0.0), 0, size - 1);
}

static void gs_cubic(double t, double w[4]) {
  const double A = -0.75;
  double x0 = t + 1, x1 = t, x2 = 1 - t, x3 = 2 - t;
  w[0] = ((A * x0 - 5 * A) * x0 + 8 * A) * x0 - 4 * A;
  w[1] = ((A + 2) * x1 - (A + 3)) * x1 * x1 + 1;
  w[2] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
  w[3] = ((A * x3 - 5 * A) * x3 + 8 * A) * x3 - 4 * A;
}

static void gs_body(void *vctx, int64_t begin, int64_t end) {
  const GridSample *s = vctx;
  int nsp = s->nsp, nt = s->ntap;
  size_t ye = gp_k_elem_size(s->ky);
  for (int64_t item = begin; item < end; item++) { /* item = n * opos + p */
    int64_t n = item / s->opos, p = item % s->opos;
    int64_t pc[3], rem = p;
    for (int d = nsp - 1; d >= 0; d--) {
      pc[d] = rem % s->out[d];
      rem /= s->out[d];
    }
    int64_t idx[3][4];
    double w[3][4];
    for (int d = 0; d < nsp; d++) { /* spatial dim d (D, H, W order) <- grid channel nsp-1-d */
      int64_t goff = n * s->g.strides[0] + (int64_t)(nsp - 1 - d) * s->g.strides[1];
      for (int e = 0; e < nsp; e++) goff += pc[e] * s->g.strides[2 + e];
      double v = gp_k_load_f64(s->g.data + goff * (int64_t)s->g.elem, s->g.kdt);
      double size = (double)s->in[d];
      double c = s->align ? (v + 1) / 2.0 * (size - 1) : ((v + 1) * size - 1) / 2.0;
      if (s->method == GS_NEAREST) c = isnan(c) ? c : nearbyint(c);
      double lo = s->align ? 0.0 : -0.5, hi = s->align ? size - 1 : size - 0.5;
      if (c < lo || c > hi) {
        if (s->pad == GS_BORDER) c = c < 0 ? 0 : c > size - 1 ? size - 1 : c;
        else if (s->pad == GS_REFLECT) c = gs_reflect(c, lo, hi);
      }
      int64_t i0 = idx_floor(c);
      double f = isnan(c) ? 0.0 : c - (double)i0;
      if (s->method == GS_NEAREST) {
        idx[d][0] = gs_tap(s, i0, s->in[d]);
        w[d][0] = 1;
      } else if (s->method == GS_LINEAR) {
        idx[d][0] = gs_tap(s, i0, s->in[d]);
        idx[d][1] = gs_tap(s, i0 + 1, s->in[d]);
        w[d][0] = 1 - f;
        w[d][1] = f;
      } else {
        for (int t = 0; t < 4; t++) idx[d][t] = gs_tap(s, i0 - 1 + t, s->in[d]);
        gs_cubic(f, w[d]);
      }
    }
    int ncomb = 1;
    for (int d = 0; d < nsp; d++) ncomb *= nt;
    for (int64_t ch = 0; ch < s->C; ch++) {
      int64_t base = n * s->x.strides[0] + ch * s->x.strides[1];
      double acc = 0;
      for (int cb = 0; cb < ncomb; cb++) {
        int64_t off = base;
        double ww = 1;
        bool zero = false;
        int cc = cb;
        for (int d = nsp - 1; d >= 0; d--) {
          int t = cc % nt;
          cc /= nt;
          if (idx[d][t] < 0) zero = true;
          off += idx[d][t] * s->x.strides[2 + d];
          ww *= w[d][t];
        }
        if (!zero && ww != 0.0) acc += ww * gp_k_load_f64(s->x.data + off * (int64_t)s->x.elem, s->x.kdt);
      }
      gp_k_store_f64(s->y + (size_t)((n * s->C + ch) * s->opos + p) * ye, s->ky, acc);
    }
  }
}

static int k_grid_sample(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (check_io(a, 2, 1) != 0) return -1;
  const DLTensor *xt = a->inputs[0], *gt = a->inputs[1];
  DLTensor *yt = a->outputs[0];
  GridSample s;
  memset(&s, 0, sizeof s);
  int kx, kg;
  if (gp_k_dtype_check(xt->dtype, "data", &kx) != 0 || gp_k_dtype_check(gt->dtype, "grid", &kg) != 0 ||
      gp_k_dtype_check(yt->dtype, "output", &s.ky) != 0)
    return -1;
  const char *m = gp_ops_attr_str(a->op, a->attrs, "method");
  const char *p = gp_ops_attr_str(a->op, a->attrs, "padding_mode");
  s.method = strcmp(m, "nearest") == 0 ? GS_NEAREST : strcmp(m, "bilinear") == 0 ? GS_LINEAR
             : strcmp(m, "bicubic") == 0 ? GS_CUBIC : -1;
  s.pad = strcmp(p, "zeros") == 0 ? GS_ZEROS : strcmp(p, "border") == 0 ? GS_BORDER
          : strcmp(p, "reflection") == 0 ? GS_REFLECT : -1;
  if (s.method < 0 || s.pad < 0) {
    gp_error_set(GP_ERR_UNSUPPORTED, "method \"%s\" / padding_mode \"%s\" is not supported", m, p);
    return -1;
  }
  s.align = gp_ops_attr_bool(a->op, a->attrs, "align_corners");
  s.nsp = xt->ndim - 2;
  if (s.nsp < 2 || s.nsp > 3 || gt->ndim != xt->ndim || yt->ndim != xt->ndim || gt->shape[1] != s.nsp ||
      gt->shape[0] != xt->shape[0]) {
    gp_error_set(GP_ERR_VALUE, "data and grid shapes do not match");
    return -1;
  }
  s.ntap = s.method == GS_NEAREST ? 1 : s.method == GS_LINEAR ? 2 : 4;
  s.N = xt->shape[0];
  s.C = xt->shape[1];
  s.opos = 1;
  for (int d = 0; d < s.nsp; d++) {
    s.in[d] = xt->shape[2 + d];
    s.out[d] = yt->shape[2 + d];
    s.opos *= s.out[d];
  }
  if (gp_k_numel(yt) == 0) return 0;
  for (int d = 0; d < s.nsp; d++)
    if (s.in[d] == 0) {
      gp_error_set(GP_ERR_VALUE, "cannot sample an empty data axis %d", (int)(2 + d));
      return -1;
    }
  gp_k_view(xt, &s.x);
  gp_k_view(gt, &s.g);
  s.y = (char *)yt->data + yt->byte_offset;
  int64_t grain = 4096 / (s.C * (s.ntap == 4 ? 16 : 4) + 1);
  gp_k_parallel_for(nthreads_of(a), s.N * s.opos, grain < 1 ? 1 : grain, gs_body, &s);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* image.affine_grid: out[n, 0, h, w] = t[n, 0, 0] * x_w + t[n, 0, 1] * y_h + t[n, 0, 2], out[n,
 * 1] likewise with row 1, where x_w and y_h are evenly spaced in [-1, 1] (TVM: align_corners). */

static int k_affine_grid(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (check_io(a, 1, 1) != 0) return -1;
  const DLTensor *tt = a->inputs[0];
  DLTensor *yt = a->outputs[0];
  int kt, ky;
  if (gp_k_dtype_check(tt->dtype, "data", &kt) != 0 || gp_k_dtype_check(yt->dtype, "output", &ky) != 0)
    return -1;
  if (tt->ndim != 3 || yt->ndim != 4 || tt->shape[1] != 2 || tt->shape[2] != 3) {
    gp_error_set(GP_ERR_VALUE, "data must have shape (N, 2, 3)");
    return -1;
  }
  GPKView t;
  gp_k_view(tt, &t);
  int64_t N = yt->shape[0], H = yt->shape[2], W = yt->shape[3];
  size_t ye = gp_k_elem_size(ky);
  char *y = (char *)yt->data + yt->byte_offset;
  for (int64_t n = 0; n < N; n++)
    for (int r = 0; r < 2; r++) {
      double th[3];
      for (int j = 0; j < 3; j++)
        th[j] = gp_k_load_f64(t.data + (n * t.strides[0] + r * t.strides[1] + j * t.strides[2]) * (int64_t)t.elem, t.kdt);
      for (int64_t h = 0; h < H; h++) {
        double yv = H > 1 ? -1.0 + 2.0 * (double)h / (double)(H - 1) : -1.0;
        for (int64_t w = 0; w < W; w++) {
          double xv = W > 1 ? -1.0 + 2.0 * (double)w / (double)(W - 1) : -1.0;
          gp_k_store_f64(y + (size_t)(((n * 2 + r) * H + h) * W + w) * ye, ky, th[0] * xv + th[1] * yv + th[2]);
        }
      }
    }
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* reinterpret: a byte copy of the (possibly strided) input into the compact output. */

static int k_reinterpret(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (check_io(a, 1, 1) != 0) return -1;
  const DLTensor *xt = a->inputs[0];
  DLTensor *yt = a->outputs[0];
  int kx, ky;
  if (gp_k_dtype_check(xt->dtype, "data", &kx) != 0 || gp_k_dtype_check(yt->dtype, "dtype", &ky) != 0) return -1;
  if (gp_k_elem_size(kx) != gp_k_elem_size(ky) || gp_k_numel(xt) != gp_k_numel(yt)) {
    gp_error_set(GP_ERR_VALUE, "data and output sizes differ");
    return -1;
  }
  void *scratch = NULL;
  const void *src = gp_k_compact(xt, &scratch);
  size_t nb = (size_t)gp_k_numel(xt) * gp_k_elem_size(kx);
  if (nb) memcpy((char *)yt->data + yt->byte_offset, src, nb);
  gp_free(scratch);
  if (ky == GP_K_BOOL) { /* bool holds 0 or 1 */
    uint8_t *p = (uint8_t *)yt->data + yt->byte_offset;
    for (size_t i = 0; i < nb; i++) p[i] = p[i] != 0;
  }
  return 0;
}

void gp_kernels_register_image(void) {
  gp_kernel_set("image.resize1d", k_resize1d);
  gp_kernel_set("image.resize2d", k_resize2d);
  gp_kernel_set("image.resize3d", k_resize3d);
  gp_kernel_set("image.grid_sample", k_grid_sample);
  gp_kernel_set("image.affine_grid", k_affine_grid);
  gp_kernel_set("reinterpret", k_reinterpret);
}
