/* ops_image.c -- built-in image ops: image.resize1d, image.resize2d, image.resize3d (TVM v0.12's
 * Resize{1,2,3}DAttrs: size, roi, layout, method, coordinate_transformation_mode,
 * rounding_method, cubic_alpha, cubic_exclude, extrapolation_value, out_dtype), image.grid_sample
 * and image.affine_grid; and reinterpret (for ONNX's BitCast). */
#include "ir/ops/ops.h"

#include <stdio.h>
#include <string.h>

#define N_ATTRS(a) ((int32_t)GP_ARRAY_LEN(a))

/* ------------------------------------------------------------------------------------------ */
/* image.resize1d / 2d / 3d                                                                    */

#define RESIZE_ATTRS(layout)                                                                     \
  {                                                                                              \
    GP_F_NONE("size", GP_ATTR_INTS), GP_F_NONE("roi", GP_ATTR_FLOATS), GP_F_STR("layout", layout), \
        GP_F_STR("method", "linear"), GP_F_STR("coordinate_transformation_mode", "half_pixel"),   \
        GP_F_STR("rounding_method", "round"), GP_F_FLOAT("cubic_alpha", -0.5),                    \
        GP_F_INT("cubic_exclude", 0), GP_F_FLOAT("extrapolation_value", 0.0),                     \
        GP_F_DTYPE_VOID("out_dtype"),                                                             \
  }

static const GPAttrField k_resize1d_attrs[] = RESIZE_ATTRS("NCW");
static const GPAttrField k_resize2d_attrs[] = RESIZE_ATTRS("NCHW");
static const GPAttrField k_resize3d_attrs[] = RESIZE_ATTRS("NCDHW");

static bool str_in(const char *s, const char *const *set) {
  for (; *set; set++)
    if (strcmp(s, *set) == 0) return true;
  return false;
}

/* The spatial axes of a resize (`nsp` of them: W; H, W; D, H, W) in layout `attr` of data. */
static int resize_axes(const GPOp *op, const GPAttrs *attrs, const GPType *data, int32_t nsp,
                       int32_t *ax) {
  static const char *const letters[] = {"W", "HW", "DHW"};
  const char *ls = gp_ops_attr_str(op, attrs, "layout");
  GPLayout l;
  if (gp_layout_parse(ls, "layout", &l) != 0) return -1;
  const char *want = letters[nsp - 1];
  for (int32_t i = 0; i < nsp; i++) {
    char c = want[i];
    ax[i] = gp_layout_index(&l, c);
    if (ax[i] < 0 || gp_layout_index(&l, (char)(c - 'A' + 'a')) >= 0) {
      gp_error_set(GP_ERR_TYPE, "layout \"%s\" must have an unsplit %c axis", ls, c);
      return -1;
    }
  }
  if (l.n != data->n) {
    gp_error_set(GP_ERR_TYPE, "layout \"%s\" has %d axes, data has shape %s", ls, (int)l.n,
                 gp_ops_shape(data).s);
    return -1;
  }
  return 0;
}

/* Checks the string attributes and roi (shared with the kernel through the same rules). */
static int resize_check_attrs(const GPOp *op, const GPAttrs *attrs, int32_t nsp) {
  static const char *const methods[] = {"nearest_neighbor", "linear", "cubic", NULL};
  static const char *const modes[] = {"half_pixel",         "align_corners",
                                      "asymmetric",         "pytorch_half_pixel",
                                      "tf_half_pixel_for_nn", "tf_crop_and_resize", NULL};
  static const char *const roundings[] = {"",      "round",           "floor",
                                          "ceil",  "round_prefer_floor", "round_prefer_ceil",
                                          NULL};
  const char *m = gp_ops_attr_str(op, attrs, "method");
  const char *c = gp_ops_attr_str(op, attrs, "coordinate_transformation_mode");
  const char *r = gp_ops_attr_str(op, attrs, "rounding_method");
  if (!str_in(m, methods)) {
    gp_error_set(GP_ERR_TYPE, "method \"%s\" is not one of nearest_neighbor, linear, cubic", m);
    return -1;
  }
  if (!str_in(c, modes)) {
    gp_error_set(GP_ERR_TYPE,
                 "coordinate_transformation_mode \"%s\" is not one of half_pixel, align_corners, "
                 "asymmetric, pytorch_half_pixel, tf_half_pixel_for_nn, tf_crop_and_resize",
                 c);
    return -1;
  }
  if (!str_in(r, roundings)) {
    gp_error_set(GP_ERR_TYPE,
                 "rounding_method \"%s\" is not one of \"\", round, floor, ceil, "
                 "round_prefer_floor, round_prefer_ceil",
                 r);
    return -1;
  }
  const GPAttrValue *roi = gp_ops_attr(op, attrs, "roi");
  if (roi->kind != GP_ATTR_NONE) {
    if ((roi->kind != GP_ATTR_FLOATS && roi->kind != GP_ATTR_INTS) || roi->n != 2 * nsp) {
      gp_error_set(GP_ERR_TYPE, "roi must have %d values (starts, then ends), got %d",
                   (int)(2 * nsp), (int)(roi->kind == GP_ATTR_FLOATS || roi->kind == GP_ATTR_INTS ? roi->n : 1));
      return -1;
    }
  }
  return 0;
}

static int resize_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                      int32_t nargs, const GPType **out, int32_t nsp) {
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  int32_t ax[3];
  if (resize_axes(op, attrs, data, nsp, ax) != 0) return -1;
  if (resize_check_attrs(op, attrs, nsp) != 0) return -1;
  int32_t n;
  const int64_t *size = gp_ops_attr_ints(op, attrs, "size", &n);
  if (n != nsp) {
    gp_error_set(GP_ERR_TYPE, "size must have %d values, got %s", (int)nsp,
                 n < 0 ? "None" : gp_ops_ints(n, size).s);
    return -1;
  }
  int64_t oshape[GP_OPS_MAX_RANK];
  memcpy(oshape, data->tensor.shape, (size_t)data->n * sizeof(int64_t));
  for (int32_t i = 0; i < nsp; i++) {
    if (size[i] < 1 && size[i] != GP_DIM_ANY) {
      gp_error_set(GP_ERR_TYPE, "size %s must be positive (data has shape %s)",
                   gp_ops_ints(n, size).s, gp_ops_shape(data).s);
      return -1;
    }
    oshape[ax[i]] = size[i];
  }
  DLDataType odt = gp_ops_attr_dtype(op, attrs, "out_dtype");
  if (odt.bits == 0) odt = data->tensor.dtype;
  return gp_ops_ret(odt, data->n, oshape, out);
}

#define RESIZE_REL(N)                                                                           \
  static int resize##N##d_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,  \
                              int32_t nargs, const GPType **out, void *user) {                  \
    GP_UNUSED(user);                                                                            \
    return resize_rel(op, attrs, args, nargs, out, N);                                          \
  }
RESIZE_REL(1)
RESIZE_REL(2)
RESIZE_REL(3)
#undef RESIZE_REL

/* ------------------------------------------------------------------------------------------ */
/* image.grid_sample(data, grid): data [N, C, (D,) H, W], grid [N, 2|3, (D,) H', W']           */

static const GPAttrField k_grid_sample_attrs[] = {
    GP_F_STR("method", "bilinear"),
    GP_F_STR("layout", "NCHW"),
    GP_F_STR("padding_mode", "zeros"),
    GP_F_BOOL("align_corners", 1),
};

static int grid_sample_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                           int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  const GPType *grid = gp_ops_tensor(args, 1, "grid");
  if (!data || !grid) return -1;
  const char *ls = gp_ops_attr_str(op, attrs, "layout");
  int32_t nsp;
  if (strcmp(ls, "NCHW") == 0) {
    nsp = 2;
  } else if (strcmp(ls, "NCDHW") == 0) {
    nsp = 3;
  } else {
    gp_error_set(GP_ERR_TYPE, "layout \"%s\" is not one of NCHW, NCDHW", ls);
    return -1;
  }
  static const char *const methods[] = {"nearest", "bilinear", "bicubic", NULL};
  static const char *const pads[] = {"zeros", "border", "reflection", NULL};
  const char *m = gp_ops_attr_str(op, attrs, "method");
  const char *p = gp_ops_attr_str(op, attrs, "padding_mode");
  if (!str_in(m, methods) || (nsp == 3 && strcmp(m, "bicubic") == 0)) {
    gp_error_set(GP_ERR_TYPE, "method \"%s\" is not one of nearest, bilinear%s", m,
                 nsp == 2 ? ", bicubic" : " (layout NCDHW)");
    return -1;
  }
  if (!str_in(p, pads)) {
    gp_error_set(GP_ERR_TYPE, "padding_mode \"%s\" is not one of zeros, border, reflection", p);
    return -1;
  }
  if (data->n != nsp + 2 || grid->n != nsp + 2) {
    gp_error_set(GP_ERR_TYPE, "layout %s needs data and grid of rank %d, got data %s and grid %s",
                 ls, (int)(nsp + 2), gp_ops_shape(data).s, gp_ops_shape(grid).s);
    return -1;
  }
  const int64_t *ds = data->tensor.shape, *gs = grid->tensor.shape;
  if ((gs[1] != GP_DIM_ANY && gs[1] != nsp) ||
      (ds[0] != GP_DIM_ANY && gs[0] != GP_DIM_ANY && ds[0] != gs[0])) {
    gp_error_set(GP_ERR_TYPE, "grid must have shape (N, %d, ...) with data's N: data %s, grid %s",
                 (int)nsp, gp_ops_shape(data).s, gp_ops_shape(grid).s);
    return -1;
  }
  if (!gp_dtype_eq(data->tensor.dtype, grid->tensor.dtype)) {
    gp_error_set(GP_ERR_TYPE, "data and grid must have the same dtype: data %s, grid %s",
                 gp_ops_dtype(data->tensor.dtype).s, gp_ops_dtype(grid->tensor.dtype).s);
    return -1;
  }
  int64_t oshape[5];
  oshape[0] = ds[0] == GP_DIM_ANY ? gs[0] : ds[0];
  oshape[1] = ds[1];
  for (int32_t i = 0; i < nsp; i++) oshape[2 + i] = gs[2 + i];
  return gp_ops_ret(data->tensor.dtype, nsp + 2, oshape, out);
}

/* ------------------------------------------------------------------------------------------ */
/* image.affine_grid(data [N, 2, 3]) -> [N, 2, H, W] (align_corners=True coordinates)           */

static const GPAttrField k_affine_grid_attrs[] = {GP_F_NONE("target_shape", GP_ATTR_INTS)};

static int affine_grid_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                           int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  int32_t n;
  const int64_t *ts = gp_ops_attr_ints(op, attrs, "target_shape", &n);
  if (n != 2) {
    gp_error_set(GP_ERR_TYPE, "target_shape must have 2 values, got %s",
                 n < 0 ? "None" : gp_ops_ints(n, ts).s);
    return -1;
  }
  const int64_t *ds = data->tensor.shape;
  if (data->n != 3 || (ds[1] != GP_DIM_ANY && ds[1] != 2) || (ds[2] != GP_DIM_ANY && ds[2] != 3)) {
    gp_error_set(GP_ERR_TYPE, "data must have shape (N, 2, 3), got %s", gp_ops_shape(data).s);
    return -1;
  }
  if (!(data->tensor.dtype.code == kDLFloat)) {
    gp_error_set(GP_ERR_TYPE, "data must be a float tensor, got %s",
                 gp_ops_dtype(data->tensor.dtype).s);
    return -1;
  }
  int64_t oshape[4] = {ds[0], 2, ts[0], ts[1]};
  return gp_ops_ret(data->tensor.dtype, 4, oshape, out);
}

/* ------------------------------------------------------------------------------------------ */
/* reinterpret(data; dtype): the same bytes read as another dtype of the same width (TVM's
 * relay.reinterpret, CastAttrs).  Kept here with the converters' other helpers' ops; bool and
 * uint8 share their one-byte storage. */

static const GPAttrField k_reinterpret_attrs[] = {GP_F_REQ("dtype", GP_ATTR_DTYPE)};

static int storage_bits(DLDataType t) { return t.bits == 1 ? 8 : t.bits; }

static int reinterpret_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                           int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *d = gp_ops_tensor(args, 0, "data");
  if (!d) return -1;
  DLDataType dt = gp_ops_attr_dtype(op, attrs, "dtype");
  if (dt.bits == 0) {
    gp_error_set(GP_ERR_TYPE, "attribute dtype is required (the target data type)");
    return -1;
  }
  if (storage_bits(dt) * dt.lanes != storage_bits(d->tensor.dtype) * d->tensor.dtype.lanes) {
    gp_error_set(GP_ERR_TYPE, "dtype %s has another width than data's %s",
                 gp_ops_dtype(dt).s, gp_ops_dtype(d->tensor.dtype).s);
    return -1;
  }
  return gp_ops_ret(dt, d->n, d->tensor.shape, out);
}

void gp_ops_register_image(void) {
  gp_ops_def("image.resize1d", 1, GP_PATTERN_INJECTIVE, 0, k_resize1d_attrs,
             N_ATTRS(k_resize1d_attrs), resize1d_rel, "1-d resize (the W axis of layout).");
  gp_ops_def("image.resize2d", 1, GP_PATTERN_INJECTIVE, 0, k_resize2d_attrs,
             N_ATTRS(k_resize2d_attrs), resize2d_rel, "2-d resize (the H and W axes of layout).");
  gp_ops_def("image.resize3d", 1, GP_PATTERN_INJECTIVE, 0, k_resize3d_attrs,
             N_ATTRS(k_resize3d_attrs), resize3d_rel, "3-d resize (the D, H and W axes of layout).");
  gp_ops_def("image.grid_sample", 2, GP_PATTERN_INJECTIVE, 0, k_grid_sample_attrs,
             N_ATTRS(k_grid_sample_attrs), grid_sample_rel,
             "Samples data at the normalized coordinates of grid.");
  gp_ops_def("image.affine_grid", 1, GP_PATTERN_INJECTIVE, 0, k_affine_grid_attrs,
             N_ATTRS(k_affine_grid_attrs), affine_grid_rel,
             "A sampling grid from batched 2x3 affine matrices.");
  gp_ops_def("reinterpret", 1, GP_PATTERN_ELEMWISE, 0, k_reinterpret_attrs,
             N_ATTRS(k_reinterpret_attrs), reinterpret_rel,
             "The same bytes read as another dtype of the same width.");
}
