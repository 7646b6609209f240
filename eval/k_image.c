/* k_image.c -- kernels of the image ops: image.resize1d/2d/3d, image.grid_sample and
 * image.affine_grid.
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

void gp_kernels_register_image(void) {
  gp_kernel_set("image.resize1d", k_resize1d);
  gp_kernel_set("image.resize2d", k_resize2d);
  gp_kernel_set("image.resize3d", k_resize3d);
}
