/* ops_reduce.c -- reductions: sum, mean, max, min, prod, all, any, variance, argmax, argmin
 * (TVM's ReduceRel, VarianceRel, ArgReduceRel). */
#include "ir/ops/ops.h"

static const GPAttrField k_reduce_attrs[] = {
    GP_F_NONE("axis", GP_ATTR_INTS),
    GP_F_BOOL("keepdims", 0),
    GP_F_BOOL("exclude", 0),
};

/* The result of reducing data as axis/exclude/keepdims say, with dtype dt. */
static int reduce_shape(const GPOp *op, const GPAttrs *attrs, const GPType *data, DLDataType dt,
                        const GPType **out) {
  int32_t n, nd = data->n;
  const int64_t *axes = gp_ops_attr_ints(op, attrs, "axis", &n);
  bool reduce[GP_OPS_MAX_RANK] = {false};
  if (n < 0) { /* None: every axis (exclude does not apply) */
    for (int32_t i = 0; i < nd; i++) reduce[i] = true;
  } else {
    for (int32_t i = 0; i < n; i++) {
      int32_t a;
      if (gp_ops_axis(axes[i], nd, "axis", data, &a) != 0) return -1;
      if (reduce[a]) {
        gp_error_set(GP_ERR_TYPE, "axis %s names axis %d twice", gp_ops_ints(n, axes).s, (int)a);
        return -1;
      }
      reduce[a] = true;
    }
    if (gp_ops_attr_bool(op, attrs, "exclude"))
      for (int32_t i = 0; i < nd; i++) reduce[i] = !reduce[i];
  }
  bool keepdims = gp_ops_attr_bool(op, attrs, "keepdims");
  int64_t o[GP_OPS_MAX_RANK];
  int32_t no = 0;
  for (int32_t i = 0; i < nd; i++) {
    if (!reduce[i])
      o[no++] = data->tensor.shape[i];
    else if (keepdims)
      o[no++] = 1;
  }
  return gp_ops_ret(dt, no, o, out);
}

static int reduce_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                      int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  return reduce_shape(op, attrs, data, data->tensor.dtype, out);
}

/* argmax / argmin: TVM's ArgReduceAttrs (axis, keepdims, select_last_index, exclude) and
 * ArgReduceRel: the reduced shape, int32 indices (row-major over the reduced axes). */
static const GPAttrField k_arg_reduce_attrs[] = {
    GP_F_NONE("axis", GP_ATTR_INTS),
    GP_F_BOOL("keepdims", 0),
    GP_F_BOOL("select_last_index", 0),
    GP_F_BOOL("exclude", 0),
};

static int arg_reduce_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                          int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  return reduce_shape(op, attrs, data, GP_DT_I32, out);
}

/* variance(data, mean): TVM's VarianceAttrs and VarianceRel.  mean has data's rank and
 * broadcasts to it (mean(data, axis, keepdims=True) does); the result is sum((data - mean)^2)
 * over axis divided by the count (minus one when unbiased), shaped as the reductions are. */
static const GPAttrField k_variance_attrs[] = {
    GP_F_NONE("axis", GP_ATTR_INTS),
    GP_F_BOOL("keepdims", 0),
    GP_F_BOOL("exclude", 0),
    GP_F_BOOL("unbiased", 0),
};

static int variance_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                        int32_t nargs, const GPType **out, void *user) {
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  const GPType *mean = data ? gp_ops_tensor(args, 1, "mean") : NULL;
  if (!mean) return -1;
  if (data->n == 0) {
    gp_error_set(GP_ERR_TYPE, "data must have rank >= 1, got a scalar");
    return -1;
  }
  if (gp_ops_same_dtype(data, "data", mean, "mean") != 0) return -1;
  bool ok = mean->n == data->n;
  for (int32_t i = 0; ok && i < data->n; i++) {
    int64_t m = mean->tensor.shape[i], d = data->tensor.shape[i];
    ok = m == 1 || m == d || m == GP_DIM_ANY || d == GP_DIM_ANY;
  }
  if (!ok) {
    gp_error_set(GP_ERR_TYPE,
                 "mean (shape %s) must have the rank of data (shape %s) and broadcast to it",
                 gp_ops_shape(mean).s, gp_ops_shape(data).s);
    return -1;
  }
  return reduce_rel(op, attrs, args, 1, out, user);
}

void gp_ops_register_reduce(void) {
  gp_ops_def("sum", 1, GP_PATTERN_COMM_REDUCE, 0, k_reduce_attrs,
             (int32_t)GP_ARRAY_LEN(k_reduce_attrs), reduce_rel, "Sum over axis.");
  gp_ops_def("mean", 1, GP_PATTERN_COMM_REDUCE, 0, k_reduce_attrs,
             (int32_t)GP_ARRAY_LEN(k_reduce_attrs), reduce_rel, "Mean over axis.");
  gp_ops_def("max", 1, GP_PATTERN_COMM_REDUCE, 0, k_reduce_attrs,
             (int32_t)GP_ARRAY_LEN(k_reduce_attrs), reduce_rel, "Maximum over axis (NaN wins).");
  gp_ops_def("min", 1, GP_PATTERN_COMM_REDUCE, 0, k_reduce_attrs,
             (int32_t)GP_ARRAY_LEN(k_reduce_attrs), reduce_rel, "Minimum over axis (NaN wins).");
  gp_ops_def("prod", 1, GP_PATTERN_COMM_REDUCE, 0, k_reduce_attrs,
             (int32_t)GP_ARRAY_LEN(k_reduce_attrs), reduce_rel, "Product over axis.");
  gp_ops_def("all", 1, GP_PATTERN_COMM_REDUCE, 0, k_reduce_attrs,
             (int32_t)GP_ARRAY_LEN(k_reduce_attrs), reduce_rel,
             "Logical and over axis (an element is true when non-zero).");
  gp_ops_def("any", 1, GP_PATTERN_COMM_REDUCE, 0, k_reduce_attrs,
             (int32_t)GP_ARRAY_LEN(k_reduce_attrs), reduce_rel,
             "Logical or over axis (an element is true when non-zero).");
  gp_ops_def("argmax", 1, GP_PATTERN_COMM_REDUCE, 0, k_arg_reduce_attrs,
             (int32_t)GP_ARRAY_LEN(k_arg_reduce_attrs), arg_reduce_rel,
             "Index (int32) of the maximum over axis; the first unless select_last_index.");
  gp_ops_def("argmin", 1, GP_PATTERN_COMM_REDUCE, 0, k_arg_reduce_attrs,
             (int32_t)GP_ARRAY_LEN(k_arg_reduce_attrs), arg_reduce_rel,
             "Index (int32) of the minimum over axis; the first unless select_last_index.");
  gp_ops_def("variance", 2, GP_PATTERN_COMM_REDUCE, 0, k_variance_attrs,
             (int32_t)GP_ARRAY_LEN(k_variance_attrs), variance_rel,
             "Variance over axis of data around mean (its mean with keepdims=True).");
}
