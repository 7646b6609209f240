/* ops_sort.c -- built-in ops: topk, argsort, sort, cumsum, cumprod, reverse (TVM's TopKAttrs,
 * ArgsortAttrs, ScanopAttrs, ReverseAttrs and their relations). */
#include "ops.h"

#include <string.h>

#define N_ATTRS(a) ((int32_t)GP_ARRAY_LEN(a))
#define GP_F_DTYPE(nm, c, b) {(nm), GP_ATTR_DTYPE, 0, {.kind = GP_ATTR_DTYPE, .dtype = {(c), (b), 1}}, NULL}

/* The index dtype attribute `attr`: an integer (or float) dtype, not bool. */
static int index_dtype(const GPOp *op, const GPAttrs *attrs, const char *attr, DLDataType *out) {
  DLDataType dt = gp_ops_attr_dtype(op, attrs, attr);
  if (dt.bits == 0) dt = GP_DT_I32;
  if (dt.code == kDLUInt && dt.bits == 1) {
    gp_error_set(GP_ERR_TYPE, "attribute %s must be an integer dtype, got bool", attr);
    return -1;
  }
  *out = dt;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* topk                                                                                        */

static const GPAttrField k_topk_attrs[] = {
    GP_F_NONE("k", GP_ATTR_INT),
    GP_F_INT("axis", -1),
    GP_F_STR("ret_type", "both"),
    GP_F_BOOL("is_ascend", 0),
    GP_F_DTYPE("dtype", kDLInt, 32),
};

/* k None (given at run time in TVM) gives an unknown extent; k < 1 keeps the whole axis. */
static int topk_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                    const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  int32_t axis;
  if (gp_ops_axis(gp_ops_attr_int(op, attrs, "axis"), data->n, "axis", data, &axis) != 0) return -1;
  DLDataType idt;
  if (index_dtype(op, attrs, "dtype", &idt) != 0) return -1;
  int64_t shape[GP_OPS_MAX_RANK];
  memcpy(shape, data->tensor.shape, (size_t)data->n * sizeof *shape);
  if (gp_ops_attr_none(op, attrs, "k")) {
    shape[axis] = GP_DIM_ANY;
  } else {
    int64_t k = gp_ops_attr_int(op, attrs, "k");
    int64_t n = shape[axis];
    if (k >= 1) {
      if (n != GP_DIM_ANY && k > n) {
        gp_error_set(GP_ERR_TYPE, "k = %lld exceeds the extent %lld of axis %d of data (shape %s)",
                     (long long)k, (long long)n, (int)axis, gp_ops_shape(data).s);
        return -1;
      }
      shape[axis] = k;
    }
  }
  const char *rt = gp_ops_attr_str(op, attrs, "ret_type");
  const GPType *vals = NULL, *idx = NULL;
  if (gp_ops_ret(data->tensor.dtype, data->n, shape, &vals) != 0) return -1;
  if (gp_ops_ret(idt, data->n, shape, &idx) != 0) return -1;
  if (strcmp(rt, "both") == 0) {
    const GPType *fs[2] = {vals, idx};
    *out = gp_type_tuple(2, fs);
    return *out ? 0 : -1;
  }
  if (strcmp(rt, "values") == 0) {
    *out = vals;
    return 0;
  }
  if (strcmp(rt, "indices") == 0) {
    *out = idx;
    return 0;
  }
  gp_error_set(GP_ERR_TYPE, "attribute ret_type must be \"both\", \"values\" or \"indices\", got \"%s\"", rt);
  return -1;
}

/* ------------------------------------------------------------------------------------------ */
/* argsort, sort                                                                               */

static const GPAttrField k_argsort_attrs[] = {
    GP_F_INT("axis", -1),
    GP_F_BOOL("is_ascend", 1),
    GP_F_DTYPE("dtype", kDLInt, 32),
};

static int sort_common(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                       const GPType **data) {
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  *data = gp_ops_tensor(args, 0, "data");
  if (!*data) return -1;
  int32_t axis;
  return gp_ops_axis(gp_ops_attr_int(op, attrs, "axis"), (*data)->n, "axis", *data, &axis);
}

static int argsort_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                       int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  const GPType *data;
  DLDataType idt;
  if (sort_common(op, attrs, args, nargs, &data) != 0) return -1;
  if (index_dtype(op, attrs, "dtype", &idt) != 0) return -1;
  return gp_ops_ret(idt, data->n, data->tensor.shape, out);
}

static int sort_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                    const GPType **out, void *user) {
  GP_UNUSED(user);
  const GPType *data;
  if (sort_common(op, attrs, args, nargs, &data) != 0) return -1;
  *out = data;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* cumsum, cumprod (ScanopAttrs: axis None scans the flattened data)                           */

static const GPAttrField k_scan_attrs[] = {
    GP_F_NONE("axis", GP_ATTR_INT),
    GP_F_DTYPE_VOID("dtype"),
    GP_F_BOOL("exclusive", 0),
};

static int scan_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                    const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  DLDataType dt = gp_ops_attr_dtype(op, attrs, "dtype");
  if (dt.bits == 0) dt = data->tensor.dtype;
  if (gp_ops_attr_none(op, attrs, "axis")) {
    int64_t n = 1;
    for (int32_t i = 0; i < data->n; i++) n = gp_ops_dim_mul(n, data->tensor.shape[i]);
    return gp_ops_ret(dt, 1, &n, out);
  }
  int32_t axis;
  if (gp_ops_axis(gp_ops_attr_int(op, attrs, "axis"), data->n, "axis", data, &axis) != 0) return -1;
  return gp_ops_ret(dt, data->n, data->tensor.shape, out);
}

/* ------------------------------------------------------------------------------------------ */
/* reverse                                                                                     */

static const GPAttrField k_reverse_attrs[] = {GP_F_NONE("axis", GP_ATTR_INT)};

static int reverse_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                       const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  if (gp_ops_attr_none(op, attrs, "axis")) {
    gp_error_set(GP_ERR_TYPE, "attribute axis is required (data has shape %s)", gp_ops_shape(data).s);
    return -1;
  }
  int32_t axis;
  if (gp_ops_axis(gp_ops_attr_int(op, attrs, "axis"), data->n, "axis", data, &axis) != 0) return -1;
  *out = data;
  return 0;
}

void gp_ops_register_sort(void) {
  gp_ops_def("topk", 1, GP_PATTERN_OPAQUE, 0, k_topk_attrs, N_ATTRS(k_topk_attrs), topk_rel,
             "The k largest (or smallest, is_ascend) elements along axis and/or their indices; "
             "equal elements keep the lower index first.");
  gp_ops_def("argsort", 1, GP_PATTERN_OPAQUE, 0, k_argsort_attrs, N_ATTRS(k_argsort_attrs),
             argsort_rel, "Indices that sort data along axis (stable).");
  gp_ops_def("sort", 1, GP_PATTERN_OPAQUE, 0, k_argsort_attrs, N_ATTRS(k_argsort_attrs), sort_rel,
             "data sorted along axis.");
  gp_ops_def("cumsum", 1, GP_PATTERN_OPAQUE, 0, k_scan_attrs, N_ATTRS(k_scan_attrs), scan_rel,
             "Cumulative sum along axis (the flattened data when axis is None), in dtype.");
  gp_ops_def("cumprod", 1, GP_PATTERN_OPAQUE, 0, k_scan_attrs, N_ATTRS(k_scan_attrs), scan_rel,
             "Cumulative product along axis (the flattened data when axis is None), in dtype.");
  gp_ops_def("reverse", 1, GP_PATTERN_INJECTIVE, 0, k_reverse_attrs, N_ATTRS(k_reverse_attrs),
             reverse_rel, "Reverse the order of elements along axis.");
}
