/* ops_index.c -- built-in ops: take, gather, gather_nd, scatter_elements, scatter_nd, one_hot,
 * trilu (TVM v0.12's names, attributes, order and defaults). */
#include "ir/ops/ops.h"

#include <stdio.h>
#include <string.h>

#define N_ATTRS(a) ((int32_t)GP_ARRAY_LEN(a))

/* Error unless t has an integer dtype (indices). */
static int int_dtype(const GPType *t, const char *what) {
  DLDataType d = t->tensor.dtype;
  if ((d.code == kDLInt || d.code == kDLUInt) && d.bits >= 8 && d.lanes == 1) return 0;
  gp_error_set(GP_ERR_TYPE, "%s must have an integer dtype, got %s", what, gp_ops_dtype(d).s);
  return -1;
}

/* Two dims that must agree (unknown agrees with anything). */
static bool dim_ok(int64_t a, int64_t b) { return a == GP_DIM_ANY || b == GP_DIM_ANY || a == b; }

/* ------------------------------------------------------------------------------------------ */
/* take                                                                                        */

static const GPAttrField k_take_attrs[] = {
    GP_F_INT("batch_dims", 0),
    GP_F_NONE("axis", GP_ATTR_INT),
    GP_F_STR("mode", "clip"),
};

static int take_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                    const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data"), *idx = gp_ops_tensor(args, 1, "indices");
  if (!data || !idx || int_dtype(idx, "indices") != 0) return -1;
  const char *mode = gp_ops_attr_str(op, attrs, "mode");
  if (strcmp(mode, "clip") != 0 && strcmp(mode, "wrap") != 0 && strcmp(mode, "fast") != 0) {
    gp_error_set(GP_ERR_TYPE, "mode \"%s\" must be \"clip\", \"wrap\" or \"fast\"", mode);
    return -1;
  }
  if (gp_ops_attr_none(op, attrs, "axis")) /* flattened data */
    return gp_ops_ret(data->tensor.dtype, idx->n, idx->tensor.shape, out);
  if (data->n == 0) {
    gp_error_set(GP_ERR_TYPE, "data must have rank >= 1 when axis is given");
    return -1;
  }
  int32_t axis;
  if (gp_ops_axis(gp_ops_attr_int(op, attrs, "axis"), data->n, "axis", data, &axis) != 0) return -1;
  int64_t bd = gp_ops_attr_int(op, attrs, "batch_dims");
  if (bd < 0) bd += idx->n;
  if (bd < 0 || bd > idx->n || bd > axis) {
    gp_error_set(GP_ERR_TYPE,
                 "batch_dims %lld must be in [0, min(rank of indices %d, axis %d)] (data %s, indices %s)",
                 (long long)gp_ops_attr_int(op, attrs, "batch_dims"), (int)idx->n, (int)axis,
                 gp_ops_shape(data).s, gp_ops_shape(idx).s);
    return -1;
  }
  for (int32_t i = 0; i < bd; i++)
    if (!dim_ok(data->tensor.shape[i], idx->tensor.shape[i])) {
      gp_error_set(GP_ERR_TYPE, "batch dim %d differs: data %s, indices %s", (int)i, gp_ops_shape(data).s,
                   gp_ops_shape(idx).s);
      return -1;
    }
  int64_t o[GP_OPS_MAX_RANK];
  int32_t no = 0;
  if (data->n - 1 + idx->n - bd > GP_OPS_MAX_RANK) {
    gp_error_set(GP_ERR_TYPE, "the result would have rank > %d", GP_OPS_MAX_RANK);
    return -1;
  }
  for (int32_t i = 0; i < axis; i++) o[no++] = data->tensor.shape[i];
  for (int32_t i = (int32_t)bd; i < idx->n; i++) o[no++] = idx->tensor.shape[i];
  for (int32_t i = axis + 1; i < data->n; i++) o[no++] = data->tensor.shape[i];
  return gp_ops_ret(data->tensor.dtype, no, o, out);
}

/* ------------------------------------------------------------------------------------------ */
/* gather (ONNX GatherElements)                                                                */

static const GPAttrField k_gather_attrs[] = {GP_F_REQ("axis", GP_ATTR_INT)};

static int gather_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                      const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data"), *idx = gp_ops_tensor(args, 1, "indices");
  if (!data || !idx || int_dtype(idx, "indices") != 0) return -1;
  if (data->n != idx->n || data->n == 0) {
    gp_error_set(GP_ERR_TYPE, "data %s and indices %s must have the same rank >= 1", gp_ops_shape(data).s,
                 gp_ops_shape(idx).s);
    return -1;
  }
  int32_t axis;
  if (gp_ops_axis(gp_ops_attr_int(op, attrs, "axis"), data->n, "axis", data, &axis) != 0) return -1;
  return gp_ops_ret(data->tensor.dtype, idx->n, idx->tensor.shape, out);
}

/* ------------------------------------------------------------------------------------------ */
/* gather_nd: indices (M, Y...) -> Y... + data.shape[batch_dims + M:]                          */

static const GPAttrField k_gather_nd_attrs[] = {
    GP_F_INT("batch_dims", 0),
    GP_F_NONE("index_rank", GP_ATTR_INT),
};

static int gather_nd_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                         int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data"), *idx = gp_ops_tensor(args, 1, "indices");
  if (!data || !idx || int_dtype(idx, "indices") != 0) return -1;
  if (idx->n < 1) {
    gp_error_set(GP_ERR_TYPE, "indices must have rank >= 1, got %s", gp_ops_shape(idx).s);
    return -1;
  }
  int64_t m = idx->tensor.shape[0];
  if (!gp_ops_attr_none(op, attrs, "index_rank")) {
    int64_t r = gp_ops_attr_int(op, attrs, "index_rank");
    if (m != GP_DIM_ANY && m != r) {
      gp_error_set(GP_ERR_TYPE, "index_rank %lld differs from the first dim of indices %s", (long long)r,
                   gp_ops_shape(idx).s);
      return -1;
    }
    m = r;
  }
  if (m == GP_DIM_ANY) {
    gp_error_set(GP_ERR_TYPE, "the first dim of indices %s must be known (or index_rank given)",
                 gp_ops_shape(idx).s);
    return -1;
  }
  int64_t bd = gp_ops_attr_int(op, attrs, "batch_dims");
  if (bd < 0 || bd > idx->n - 1 || m < 0 || bd + m > data->n) {
    gp_error_set(GP_ERR_TYPE, "batch_dims %lld and index rank %lld do not fit data %s and indices %s",
                 (long long)bd, (long long)m, gp_ops_shape(data).s, gp_ops_shape(idx).s);
    return -1;
  }
  for (int32_t i = 0; i < bd; i++)
    if (!dim_ok(data->tensor.shape[i], idx->tensor.shape[i + 1])) {
      gp_error_set(GP_ERR_TYPE, "batch dim %d differs: data %s, indices %s", (int)i, gp_ops_shape(data).s,
                   gp_ops_shape(idx).s);
      return -1;
    }
  int64_t o[GP_OPS_MAX_RANK];
  int32_t no = 0;
  if (idx->n - 1 + data->n - bd - m > GP_OPS_MAX_RANK) {
    gp_error_set(GP_ERR_TYPE, "the result would have rank > %d", GP_OPS_MAX_RANK);
    return -1;
  }
  for (int32_t i = 1; i < idx->n; i++) o[no++] = idx->tensor.shape[i];
  for (int64_t i = bd + m; i < data->n; i++) o[no++] = data->tensor.shape[i];
  return gp_ops_ret(data->tensor.dtype, no, o, out);
}

/* ------------------------------------------------------------------------------------------ */
/* scatter_elements, scatter_nd                                                                */

static const GPAttrField k_scatter_elements_attrs[] = {
    GP_F_INT("axis", 0),
    GP_F_STR("reduction", "update"),
};

static int reduction_ok(const char *r, const char *attr) {
  static const char *const ok[] = {"update", "add", "mul", "min", "max"};
  for (size_t i = 0; i < GP_ARRAY_LEN(ok); i++)
    if (strcmp(r, ok[i]) == 0) return 0;
  gp_error_set(GP_ERR_TYPE, "%s \"%s\" must be one of update, add, mul, min, max", attr, r);
  return -1;
}

static int scatter_elements_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                                int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 3) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data"), *idx = gp_ops_tensor(args, 1, "indices"),
               *upd = gp_ops_tensor(args, 2, "updates");
  if (!data || !idx || !upd || int_dtype(idx, "indices") != 0) return -1;
  if (gp_ops_same_dtype(data, "data", upd, "updates") != 0) return -1;
  if (reduction_ok(gp_ops_attr_str(op, attrs, "reduction"), "reduction") != 0) return -1;
  if (data->n != idx->n || idx->n != upd->n || data->n == 0) {
    gp_error_set(GP_ERR_TYPE, "data %s, indices %s and updates %s must have the same rank >= 1",
                 gp_ops_shape(data).s, gp_ops_shape(idx).s, gp_ops_shape(upd).s);
    return -1;
  }
  for (int32_t i = 0; i < idx->n; i++)
    if (!dim_ok(idx->tensor.shape[i], upd->tensor.shape[i])) {
      gp_error_set(GP_ERR_TYPE, "indices %s and updates %s must have the same shape", gp_ops_shape(idx).s,
                   gp_ops_shape(upd).s);
      return -1;
    }
  int32_t axis;
  if (gp_ops_axis(gp_ops_attr_int(op, attrs, "axis"), data->n, "axis", data, &axis) != 0) return -1;
  return gp_ops_ret(data->tensor.dtype, data->n, data->tensor.shape, out);
}

static const GPAttrField k_scatter_nd_attrs[] = {GP_F_STR("mode", "update")};

/* indices (M, Y...), updates Y... + data.shape[M:] */
static int scatter_nd_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                          int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 3) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data"), *idx = gp_ops_tensor(args, 1, "indices"),
               *upd = gp_ops_tensor(args, 2, "updates");
  if (!data || !idx || !upd || int_dtype(idx, "indices") != 0) return -1;
  if (gp_ops_same_dtype(data, "data", upd, "updates") != 0) return -1;
  if (reduction_ok(gp_ops_attr_str(op, attrs, "mode"), "mode") != 0) return -1;
  if (idx->n < 1) {
    gp_error_set(GP_ERR_TYPE, "indices must have rank >= 1, got %s", gp_ops_shape(idx).s);
    return -1;
  }
  int64_t m = idx->tensor.shape[0];
  if (m != GP_DIM_ANY) {
    bool ok = m <= data->n && upd->n == idx->n - 1 + data->n - m;
    for (int32_t i = 1; ok && i < idx->n; i++) ok = dim_ok(idx->tensor.shape[i], upd->tensor.shape[i - 1]);
    for (int64_t i = m; ok && i < data->n; i++)
      ok = dim_ok(data->tensor.shape[i], upd->tensor.shape[idx->n - 1 + i - m]);
    if (!ok) {
      gp_error_set(GP_ERR_TYPE,
                   "updates %s must have shape indices.shape[1:] + data.shape[M:] (data %s, indices %s)",
                   gp_ops_shape(upd).s, gp_ops_shape(data).s, gp_ops_shape(idx).s);
      return -1;
    }
  }
  return gp_ops_ret(data->tensor.dtype, data->n, data->tensor.shape, out);
}

/* ------------------------------------------------------------------------------------------ */
/* one_hot                                                                                     */

static const GPAttrField k_one_hot_attrs[] = {
    GP_F_REQ("depth", GP_ATTR_INT),
    GP_F_INT("axis", -1),
    GP_F_DTYPE_VOID("dtype"),
};

static int one_hot_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                       int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 3) != 0) return -1;
  const GPType *idx = gp_ops_tensor(args, 0, "indices"), *on = gp_ops_tensor(args, 1, "on_value"),
               *off = gp_ops_tensor(args, 2, "off_value");
  if (!idx || !on || !off || int_dtype(idx, "indices") != 0) return -1;
  if (on->n != 0 || off->n != 0) {
    gp_error_set(GP_ERR_TYPE, "on_value %s and off_value %s must be scalars", gp_ops_shape(on).s,
                 gp_ops_shape(off).s);
    return -1;
  }
  int64_t depth = gp_ops_attr_int(op, attrs, "depth");
  if (depth < 0) {
    gp_error_set(GP_ERR_TYPE, "depth %lld must be >= 0", (long long)depth);
    return -1;
  }
  int64_t axis = gp_ops_attr_int(op, attrs, "axis");
  int32_t nd = idx->n;
  if (nd + 1 > GP_OPS_MAX_RANK || axis < -(int64_t)nd - 1 || axis > nd) {
    gp_error_set(GP_ERR_TYPE, "axis %lld is out of range [%d, %d] for indices %s", (long long)axis,
                 -(int)nd - 1, (int)nd, gp_ops_shape(idx).s);
    return -1;
  }
  int32_t a = (int32_t)(axis < 0 ? axis + nd + 1 : axis);
  DLDataType dt = gp_ops_attr_dtype(op, attrs, "dtype");
  if (dt.bits == 0) dt = on->tensor.dtype;
  int64_t o[GP_OPS_MAX_RANK];
  int32_t no = 0;
  for (int32_t i = 0; i < a; i++) o[no++] = idx->tensor.shape[i];
  o[no++] = depth;
  for (int32_t i = a; i < nd; i++) o[no++] = idx->tensor.shape[i];
  return gp_ops_ret(dt, no, o, out);
}

/* ------------------------------------------------------------------------------------------ */
/* trilu                                                                                       */

static const GPAttrField k_trilu_attrs[] = {GP_F_BOOL("upper", 1)};

static int trilu_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                     const GPType **out, void *user) {
  GP_UNUSED(user), GP_UNUSED(op), GP_UNUSED(attrs);
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data"), *k = gp_ops_tensor(args, 1, "k");
  if (!data || !k || int_dtype(k, "k") != 0) return -1;
  if (data->n < 2) {
    gp_error_set(GP_ERR_TYPE, "data must have rank >= 2, got %s", gp_ops_shape(data).s);
    return -1;
  }
  if (k->n > 1 || (k->n == 1 && k->tensor.shape[0] != 1 && k->tensor.shape[0] != GP_DIM_ANY)) {
    gp_error_set(GP_ERR_TYPE, "k must be a scalar, got %s", gp_ops_shape(k).s);
    return -1;
  }
  return gp_ops_ret(data->tensor.dtype, data->n, data->tensor.shape, out);
}

/* ------------------------------------------------------------------------------------------ */

void gp_ops_register_index(void) {
  gp_ops_def("take", 2, GP_PATTERN_INJECTIVE, 0, k_take_attrs, N_ATTRS(k_take_attrs), take_rel,
             "Take elements of data at indices along axis (flattened data when axis is None).");
  gp_ops_def("gather", 2, GP_PATTERN_INJECTIVE, 0, k_gather_attrs, N_ATTRS(k_gather_attrs), gather_rel,
             "Gather elements of data along axis at indices of the same rank (GatherElements).");
  gp_ops_def("gather_nd", 2, GP_PATTERN_INJECTIVE, 0, k_gather_nd_attrs, N_ATTRS(k_gather_nd_attrs),
             gather_nd_rel, "Gather slices of data at indices of shape (M, Y...).");
  gp_ops_def("scatter_elements", 3, GP_PATTERN_OPAQUE, 0, k_scatter_elements_attrs,
             N_ATTRS(k_scatter_elements_attrs), scatter_elements_rel,
             "Scatter updates into data along axis at indices (reduction update/add/mul/min/max).");
  gp_ops_def("scatter_nd", 3, GP_PATTERN_OPAQUE, 0, k_scatter_nd_attrs, N_ATTRS(k_scatter_nd_attrs),
             scatter_nd_rel, "Scatter updates into data at indices of shape (M, Y...).");
  gp_ops_def("one_hot", 3, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0, k_one_hot_attrs, N_ATTRS(k_one_hot_attrs),
             one_hot_rel, "One-hot encoding of indices with depth entries along axis.");
  gp_ops_def("trilu", 2, GP_PATTERN_INJECTIVE, 0, k_trilu_attrs, N_ATTRS(k_trilu_attrs), trilu_rel,
             "Keep the upper (or lower) triangle of the last two dims from diagonal k.");
}
