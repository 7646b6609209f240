/* ops_transform.c -- shape transforms: concatenate, reshape, transpose, expand_dims, squeeze,
 * full/zeros/ones, strided_slice, split, layout_transform, shape_of, tile, repeat, broadcast_to, nn.pad,
 * nn.depth_to_space, nn.space_to_depth, nn.space_to_batch_nd, nn.batch_to_space_nd, stack,
 * reverse_sequence. */
#include "ir/ops/ops.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define N_ATTRS(a) ((int32_t)GP_ARRAY_LEN(a))

/* ------------------------------------------------------------------------------------------ */
/* concatenate                                                                                 */

static const GPAttrField k_concatenate_attrs[] = {GP_F_INT("axis", 0)};

static int concatenate_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                           int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *tup = args[0];
  if (!tup || tup->kind != GP_TYPE_TUPLE) {
    gp_error_set(GP_ERR_TYPE, "data must be a tuple of tensors, got %s", gp_ops_type(tup).s);
    return -1;
  }
  if (tup->n == 0) {
    gp_error_set(GP_ERR_TYPE, "data must be a non-empty tuple of tensors");
    return -1;
  }
  char what[32];
  const GPType *first = NULL;
  for (int32_t i = 0; i < tup->n; i++) {
    snprintf(what, sizeof what, "field %d of data", (int)i);
    const GPType *t = gp_ops_tensor(tup->tuple.fields, i, what);
    if (!t) return -1;
    if (!first) {
      first = t;
      continue;
    }
    if (t->n != first->n) {
      gp_error_set(GP_ERR_TYPE, "all tensors must have the same rank: field 0 has shape %s, field "
                                "%d has shape %s",
                   gp_ops_shape(first).s, (int)i, gp_ops_shape(t).s);
      return -1;
    }
    if (!gp_dtype_eq(t->tensor.dtype, first->tensor.dtype)) {
      gp_error_set(GP_ERR_TYPE, "all tensors must have the same dtype: field 0 is %s, field %d is %s",
                   gp_ops_dtype(first->tensor.dtype).s, (int)i, gp_ops_dtype(t->tensor.dtype).s);
      return -1;
    }
  }
  if (first->n == 0) {
    gp_error_set(GP_ERR_TYPE, "cannot concatenate scalars");
    return -1;
  }
  int32_t axis;
  if (gp_ops_axis(gp_ops_attr_int(op, attrs, "axis"), first->n, "axis", first, &axis) != 0)
    return -1;
  int64_t oshape[GP_OPS_MAX_RANK];
  for (int32_t d = 0; d < first->n; d++) {
    int64_t acc = d == axis ? 0 : -2; /* -2: no known value yet */
    bool any = false;
    for (int32_t i = 0; i < tup->n; i++) {
      int64_t v = tup->tuple.fields[i]->tensor.shape[d];
      if (v == GP_DIM_ANY) {
        any = true;
      } else if (d == axis) {
        acc += v;
      } else if (acc == -2) {
        acc = v;
      } else if (acc != v) {
        int32_t j = 0;
        while (tup->tuple.fields[j]->tensor.shape[d] != acc) j++;
        gp_error_set(GP_ERR_TYPE,
                     "shapes must match except on the concatenation axis %d: field %d has shape "
                     "%s, field %d has shape %s",
                     (int)axis, (int)j, gp_ops_shape(tup->tuple.fields[j]).s, (int)i,
                     gp_ops_shape(tup->tuple.fields[i]).s);
        return -1;
      }
    }
    oshape[d] = any ? GP_DIM_ANY : acc;
  }
  return gp_ops_ret(first->tensor.dtype, first->n, oshape, out);
}

/* ------------------------------------------------------------------------------------------ */
/* reshape                                                                                     */

static const GPAttrField k_reshape_attrs[] = {
    GP_F_REQ("newshape", GP_ATTR_INTS),
    GP_F_BOOL("allowzero", 0),
};

/* Relay's special values: 0 copy (unless allowzero), -1 infer, -2 copy the rest, -3 merge two,
 * -4 split one into the next two values (one may be -1). */
/* reverse (TVM's contrib_reverse_reshape, InferNewShape(..., reverse=true)): the special values
 * are read right to left: data's shape and newshape are reversed, and so is the result. */
static int reshape_rel_impl(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                            int32_t nargs, const GPType **out, bool reverse) {
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  int32_t n;
  const int64_t *ns_attr = gp_ops_attr_ints(op, attrs, "newshape", &n);
  if (n < 0) {
    gp_error_set(GP_ERR_TYPE, "attribute newshape is required");
    return -1;
  }
  if (reverse && n > GP_OPS_MAX_RANK * 2) {
    gp_error_set(GP_ERR_TYPE, "newshape has %d values; at most %d are supported", (int)n, GP_OPS_MAX_RANK * 2);
    return -1;
  }
  bool allowzero = gp_ops_attr_bool(op, attrs, "allowzero");
  int64_t rin[GP_OPS_MAX_RANK], rns[GP_OPS_MAX_RANK * 2];
  const int64_t *in = data->tensor.shape, *ns = ns_attr;
  if (reverse) {
    for (int32_t i = 0; i < data->n; i++) rin[i] = in[data->n - 1 - i];
    for (int32_t i = 0; i < n; i++) rns[i] = ns_attr[n - 1 - i];
    in = rin;
    ns = rns;
  }
  int32_t ni = data->n, src = 0, no = 0, infer = -1;
  int64_t o[GP_OPS_MAX_RANK];
  bool used_in[GP_OPS_MAX_RANK] = {false}, used_out[GP_OPS_MAX_RANK] = {false};
#define NS_ERR(...)                                                                           \
  do {                                                                                        \
    GPBuf b_ = {0};                                                                           \
    gp_buf_printf(&b_, __VA_ARGS__);                                                          \
    gp_error_set(GP_ERR_TYPE, "newshape %s for data (shape %s): %s", gp_ops_ints(n, ns_attr).s, \
                 gp_ops_shape(data).s, b_.data);                                              \
    gp_buf_free(&b_);                                                                         \
    return -1;                                                                                \
  } while (0)
  for (int32_t i = 0; i < n; i++) {
    int64_t v = ns[i];
    if (no >= GP_OPS_MAX_RANK) NS_ERR("too many dimensions");
    if (v > 0 || (v == 0 && allowzero)) {
      o[no++] = v;
      src++;
    } else if (v == 0) {
      if (src >= ni) NS_ERR("0 at position %d has no input dimension to copy", (int)i);
      used_in[src] = used_out[no] = true;
      o[no++] = in[src++];
    } else if (v == -1) {
      if (infer >= 0) NS_ERR("only one dimension can be -1");
      infer = no;
      o[no++] = 1;
      src++;
    } else if (v == -2) {
      while (src < ni) {
        if (no >= GP_OPS_MAX_RANK) NS_ERR("too many dimensions");
        used_in[src] = used_out[no] = true;
        o[no++] = in[src++];
      }
    } else if (v == -3) {
      if (src + 1 >= ni) NS_ERR("-3 at position %d needs two input dimensions to merge", (int)i);
      used_in[src] = used_in[src + 1] = used_out[no] = true;
      o[no++] = gp_ops_dim_mul(in[src], in[src + 1]);
      src += 2;
    } else if (v == -4) {
      if (i + 2 >= n) NS_ERR("-4 at position %d must be followed by two values", (int)i);
      if (src >= ni) NS_ERR("-4 at position %d has no input dimension to split", (int)i);
      if (no + 1 >= GP_OPS_MAX_RANK) NS_ERR("too many dimensions");
      int64_t d0 = in[src], d1 = ns[i + 1], d2 = ns[i + 2];
      used_in[src++] = true;
      i += 2;
      if ((d1 == -1 && d2 == -1) || d1 < -1 || d2 < -1 || d1 == 0 || d2 == 0)
        NS_ERR("-4 split values %lld, %lld must be positive (at most one -1)", (long long)d1,
               (long long)d2);
      int64_t k = d1 == -1 ? d2 : d2 == -1 ? d1 : gp_ops_dim_mul(d1, d2); /* known factor or product */
      if (k == GP_DIM_OVERFLOW) NS_ERR("-4 split values %lld * %lld overflow", (long long)d1, (long long)d2);
      if (d0 != GP_DIM_ANY && ((d1 == -1 || d2 == -1) ? d0 % k != 0 : k != d0))
        NS_ERR("-4 cannot split dimension %lld into %lld * %lld", (long long)d0,
               (long long)ns[i - 1], (long long)ns[i]);
      if (d1 == -1) d1 = d0 == GP_DIM_ANY ? GP_DIM_ANY : d0 / d2;
      if (d2 == -1) d2 = d0 == GP_DIM_ANY ? GP_DIM_ANY : d0 / d1;
      used_out[no] = used_out[no + 1] = true;
      o[no++] = d1;
      o[no++] = d2;
    } else {
      NS_ERR("unsupported value %lld", (long long)v);
    }
  }
  /* Element counts: known only when every dim involved is known. */
  int64_t in_rest = 1, out_rest = 1;
  for (int32_t i = 0; i < ni; i++)
    if (infer < 0 || !used_in[i]) in_rest = gp_ops_dim_mul(in_rest, in[i]);
  for (int32_t i = 0; i < no; i++)
    if (i != infer && (infer < 0 || !used_out[i])) out_rest = gp_ops_dim_mul(out_rest, o[i]);
  if (out_rest == GP_DIM_OVERFLOW || in_rest == GP_DIM_OVERFLOW)
    NS_ERR("the element count of %s overflows", gp_ops_dims(no, o).s);
  if (infer >= 0) {
    if (in_rest == GP_DIM_ANY || out_rest == GP_DIM_ANY)
      o[infer] = GP_DIM_ANY;
    else if (out_rest == 0 || in_rest % out_rest != 0)
      NS_ERR("cannot infer the -1 dimension: %lld elements are not divisible by %lld",
             (long long)in_rest, (long long)out_rest);
    else
      o[infer] = in_rest / out_rest;
  } else if (in_rest != GP_DIM_ANY && out_rest != GP_DIM_ANY && in_rest != out_rest) {
    NS_ERR("the result %s has %lld elements, data has %lld", gp_ops_dims(no, o).s,
           (long long)out_rest, (long long)in_rest);
  }
#undef NS_ERR
  if (reverse)
    for (int32_t i = 0; i < no / 2; i++) {
      int64_t t = o[i];
      o[i] = o[no - 1 - i];
      o[no - 1 - i] = t;
    }
  return gp_ops_ret(data->tensor.dtype, no, o, out);
}

static int reshape_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                       int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  return reshape_rel_impl(op, attrs, args, nargs, out, false);
}

static int reverse_reshape_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                               int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  return reshape_rel_impl(op, attrs, args, nargs, out, true);
}

/* ------------------------------------------------------------------------------------------ */
/* transpose, expand_dims, squeeze                                                             */

static const GPAttrField k_transpose_attrs[] = {GP_F_NONE("axes", GP_ATTR_INTS)};

static int transpose_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                         int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  int32_t n, nd = data->n;
  const int64_t *axes = gp_ops_attr_ints(op, attrs, "axes", &n);
  int64_t o[GP_OPS_MAX_RANK];
  if (n < 0 || (n == 0 && nd > 0)) { /* None (or []): reverse */
    for (int32_t i = 0; i < nd; i++) o[i] = data->tensor.shape[nd - 1 - i];
    return gp_ops_ret(data->tensor.dtype, nd, o, out);
  }
  if (n != nd) {
    gp_error_set(GP_ERR_TYPE, "axes %s must have one entry per dimension of data (shape %s)",
                 gp_ops_ints(n, axes).s, gp_ops_shape(data).s);
    return -1;
  }
  bool seen[GP_OPS_MAX_RANK] = {false};
  for (int32_t i = 0; i < n; i++) {
    int32_t a;
    if (gp_ops_axis(axes[i], nd, "axis", data, &a) != 0) return -1;
    if (seen[a]) {
      gp_error_set(GP_ERR_TYPE, "axes %s is not a permutation: axis %d repeats",
                   gp_ops_ints(n, axes).s, (int)a);
      return -1;
    }
    seen[a] = true;
    o[i] = data->tensor.shape[a];
  }
  return gp_ops_ret(data->tensor.dtype, nd, o, out);
}

static const GPAttrField k_expand_dims_attrs[] = {
    GP_F_REQ("axis", GP_ATTR_INT),
    GP_F_INT("num_newaxis", 1),
};

static int expand_dims_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                           int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  if (gp_ops_attr_none(op, attrs, "axis")) {
    gp_error_set(GP_ERR_TYPE, "attribute axis is required");
    return -1;
  }
  int64_t axis = gp_ops_attr_int(op, attrs, "axis");
  int64_t k = gp_ops_attr_int(op, attrs, "num_newaxis");
  int32_t nd = data->n;
  if (k < 0 || nd + k > GP_OPS_MAX_RANK) {
    gp_error_set(GP_ERR_TYPE, "num_newaxis %lld must be in [0, %d]", (long long)k,
                 GP_OPS_MAX_RANK - nd);
    return -1;
  }
  if (axis < -(int64_t)nd - 1 || axis > nd) {
    gp_error_set(GP_ERR_TYPE, "axis %lld is out of range [%d, %d] for data (shape %s)",
                 (long long)axis, -(int)nd - 1, (int)nd, gp_ops_shape(data).s);
    return -1;
  }
  int32_t a = (int32_t)(axis < 0 ? axis + nd + 1 : axis);
  int64_t o[GP_OPS_MAX_RANK];
  int32_t no = 0;
  for (int32_t i = 0; i < a; i++) o[no++] = data->tensor.shape[i];
  for (int64_t i = 0; i < k; i++) o[no++] = 1;
  for (int32_t i = a; i < nd; i++) o[no++] = data->tensor.shape[i];
  return gp_ops_ret(data->tensor.dtype, no, o, out);
}

static const GPAttrField k_squeeze_attrs[] = {GP_F_NONE("axis", GP_ATTR_INTS)};

static int squeeze_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                       int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  int32_t n, nd = data->n;
  const int64_t *axes = gp_ops_attr_ints(op, attrs, "axis", &n);
  bool drop[GP_OPS_MAX_RANK] = {false};
  if (n < 0) {
    for (int32_t i = 0; i < nd; i++) drop[i] = data->tensor.shape[i] == 1;
  } else {
    for (int32_t i = 0; i < n; i++) {
      int32_t a;
      if (gp_ops_axis(axes[i], nd, "axis", data, &a) != 0) return -1;
      int64_t d = data->tensor.shape[a];
      if (d != 1 && d != GP_DIM_ANY) {
        gp_error_set(GP_ERR_TYPE, "axis %d of data (shape %s) has extent %lld, not 1", (int)a,
                     gp_ops_shape(data).s, (long long)d);
        return -1;
      }
      drop[a] = true;
    }
  }
  int64_t o[GP_OPS_MAX_RANK];
  int32_t no = 0;
  for (int32_t i = 0; i < nd; i++)
    if (!drop[i]) o[no++] = data->tensor.shape[i];
  return gp_ops_ret(data->tensor.dtype, no, o, out);
}

/* ------------------------------------------------------------------------------------------ */
/* full, zeros, ones                                                                           */

static const GPAttrField k_init_attrs[] = {
    GP_F_REQ("shape", GP_ATTR_INTS),
    GP_F_DTYPE_VOID("dtype"),
};

static int init_shape(const GPOp *op, const GPAttrs *attrs, int32_t *n, const int64_t **shape) {
  *shape = gp_ops_attr_ints(op, attrs, "shape", n);
  if (*n < 0) {
    gp_error_set(GP_ERR_TYPE, "attribute shape is required");
    return -1;
  }
  if (*n > GP_OPS_MAX_RANK) {
    gp_error_set(GP_ERR_TYPE, "shape has rank %d; at most %d is supported", (int)*n, GP_OPS_MAX_RANK);
    return -1;
  }
  for (int32_t i = 0; i < *n; i++)
    if ((*shape)[i] < 0) {
      gp_error_set(GP_ERR_TYPE, "shape %s has a negative dimension", gp_ops_ints(*n, *shape).s);
      return -1;
    }
  return 0;
}

static int full_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                    const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *fill = gp_ops_tensor(args, 0, "fill_value");
  if (!fill) return -1;
  if (fill->n != 0) {
    gp_error_set(GP_ERR_TYPE, "fill_value must be a scalar, got shape %s", gp_ops_shape(fill).s);
    return -1;
  }
  int32_t n;
  const int64_t *shape;
  if (init_shape(op, attrs, &n, &shape) != 0) return -1;
  DLDataType dt = gp_ops_attr_dtype(op, attrs, "dtype");
  if (dt.bits == 0) dt = fill->tensor.dtype;
  return gp_ops_ret(dt, n, shape, out);
}

static int init_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                    const GPType **out, void *user) {
  GP_UNUSED(user), GP_UNUSED(args);
  if (gp_ops_nargs(nargs, 0) != 0) return -1;
  int32_t n;
  const int64_t *shape;
  if (init_shape(op, attrs, &n, &shape) != 0) return -1;
  DLDataType dt = gp_ops_attr_dtype(op, attrs, "dtype");
  if (dt.bits == 0) {
    gp_error_set(GP_ERR_TYPE, "attribute dtype is required");
    return -1;
  }
  return gp_ops_ret(dt, n, shape, out);
}

/* ------------------------------------------------------------------------------------------ */
/* strided_slice                                                                               */

static const GPAttrField k_strided_slice_attrs[] = {
    GP_F_REQ("begin", GP_ATTR_INTS),
    GP_F_REQ("end", GP_ATTR_INTS),
    GP_F_NONE("strides", GP_ATTR_INTS),
    GP_F_STR("slice_mode", "end"),
    GP_F_NONE("axes", GP_ATTR_INTS),
};

/* TVM's CanonicalizeIndex: negative counts from the end, then clamp to the valid range. */
static int64_t canon_index(int64_t i, int64_t extent, int64_t stride) {
  int64_t lo = stride < 0 ? -1 : 0, hi = stride < 0 ? extent - 1 : extent;
  if (i < 0) i += extent;
  return i < lo ? lo : i > hi ? hi : i;
}

static int strided_slice_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                             int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  int32_t nb, ne, ns, na, nd = data->n;
  const int64_t *begin = gp_ops_attr_ints(op, attrs, "begin", &nb);
  const int64_t *end = gp_ops_attr_ints(op, attrs, "end", &ne);
  const int64_t *strides = gp_ops_attr_ints(op, attrs, "strides", &ns);
  const int64_t *axes = gp_ops_attr_ints(op, attrs, "axes", &na);
  const char *mode = gp_ops_attr_str(op, attrs, "slice_mode");
  bool size_mode = strcmp(mode, "size") == 0;
  if (!size_mode && strcmp(mode, "end") != 0) {
    gp_error_set(GP_ERR_TYPE, "slice_mode \"%s\" must be \"end\" or \"size\"", mode);
    return -1;
  }
  if (nb < 0 || ne < 0) {
    gp_error_set(GP_ERR_TYPE, "attributes begin and end are required");
    return -1;
  }
  if (ns < 0) ns = 0;
  /* the sliced axes: `axes` when given (begin/end/strides then have one entry per axis), else
   * the leading ones */
  int32_t nsl = na >= 0 ? na : (nb > ne ? nb : ne);
  if (na >= 0 && (nb != na || ne != na || ns > na)) {
    gp_error_set(GP_ERR_TYPE, "begin %s, end %s and strides %s must have one entry per axis in %s",
                 gp_ops_ints(nb, begin).s, gp_ops_ints(ne, end).s, gp_ops_ints(ns, strides).s,
                 gp_ops_ints(na, axes).s);
    return -1;
  }
  if (nsl > nd) {
    gp_error_set(GP_ERR_TYPE, "begin %s and end %s have more entries than data (shape %s) has axes",
                 gp_ops_ints(nb, begin).s, gp_ops_ints(ne, end).s, gp_ops_shape(data).s);
    return -1;
  }
  int64_t o[GP_OPS_MAX_RANK];
  memcpy(o, data->tensor.shape, (size_t)nd * sizeof(int64_t));
  bool seen[GP_OPS_MAX_RANK] = {false};
  for (int32_t i = 0; i < nsl; i++) {
    int32_t a = i;
    if (na >= 0 && gp_ops_axis(axes[i], nd, "axes entry", data, &a) != 0) return -1;
    if (seen[a]) {
      gp_error_set(GP_ERR_TYPE, "axes %s repeats axis %d", gp_ops_ints(na, axes).s, (int)a);
      return -1;
    }
    seen[a] = true;
    int64_t stride = size_mode || i >= ns ? 1 : strides[i];
    if (stride == 0) {
      gp_error_set(GP_ERR_TYPE, "strides %s has a zero stride", gp_ops_ints(ns, strides).s);
      return -1;
    }
    int64_t extent = data->tensor.shape[a];
    if (extent == GP_DIM_ANY) {
      o[a] = GP_DIM_ANY;
      continue;
    }
    int64_t b = i < nb ? begin[i] : (stride > 0 ? 0 : INT64_MAX);
    int64_t e;
    if (i >= ne) /* as TVM: a missing end with a negative stride stops before index 0 */
      e = stride < 0 ? 0 : INT64_MAX;
    else if (size_mode)
      e = end[i] < 0 || end[i] > INT64_MAX - extent ? INT64_MAX : canon_index(b, extent, 1) + end[i];
    else
      e = end[i];
    int64_t cb = canon_index(b, extent, stride), ce = canon_index(e, extent, stride);
    if (stride > 0 ? cb > ce : cb < ce) {
      gp_error_set(GP_ERR_TYPE,
                   "begin %lld and end %lld (stride %lld) select a negative range on axis %d of "
                   "data (shape %s)",
                   (long long)b, (long long)e, (long long)stride, (int)a, gp_ops_shape(data).s);
      return -1;
    }
    o[a] = stride > 0 ? (ce - cb + stride - 1) / stride : (cb - ce - stride - 1) / -stride;
  }
  return gp_ops_ret(data->tensor.dtype, nd, o, out);
}

/* ------------------------------------------------------------------------------------------ */
/* split                                                                                       */

static const GPAttrField k_split_attrs[] = {
    GP_F_REQ("indices_or_sections", GP_ATTR_NONE), /* an INT (sections) or INTS (indices) */
    GP_F_INT("axis", 0),
};

static int split_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                     int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  int32_t axis;
  if (!data) return -1;
  if (data->n == 0) {
    gp_error_set(GP_ERR_TYPE, "cannot split a scalar");
    return -1;
  }
  if (gp_ops_axis(gp_ops_attr_int(op, attrs, "axis"), data->n, "axis", data, &axis) != 0)
    return -1;
  const GPAttrValue *ios = gp_ops_attr(op, attrs, "indices_or_sections");
  int64_t dim = data->tensor.shape[axis];
  int64_t o[GP_OPS_MAX_RANK];
  memcpy(o, data->tensor.shape, (size_t)data->n * sizeof(int64_t));
  GPVec fields = {0};
  int rc = -1;
  if (ios->kind == GP_ATTR_INT) {
    int64_t sections = ios->i;
    if (sections < 1 || sections > 1 << 20) {
      gp_error_set(GP_ERR_TYPE, "indices_or_sections %lld must be a positive number of sections",
                   (long long)sections);
      return -1;
    }
    if (dim != GP_DIM_ANY && dim % sections != 0) {
      gp_error_set(GP_ERR_TYPE,
                   "indices_or_sections %lld does not divide axis %d of data (shape %s), extent "
                   "%lld",
                   (long long)sections, (int)axis, gp_ops_shape(data).s, (long long)dim);
      return -1;
    }
    o[axis] = dim == GP_DIM_ANY ? GP_DIM_ANY : dim / sections;
    const GPType *t;
    if (gp_ops_ret(data->tensor.dtype, data->n, o, &t) != 0) return -1;
    for (int64_t i = 0; i < sections; i++) gp_vec_push(&fields, (void *)t);
  } else if (ios->kind == GP_ATTR_INTS) {
    int64_t prev = 0;
    for (int32_t i = 0; i <= ios->n; i++) {
      int64_t idx = i < ios->n ? ios->ints[i] : dim;
      if (i < ios->n && (idx <= prev || (dim != GP_DIM_ANY && idx >= dim))) {
        gp_error_set(GP_ERR_TYPE,
                     "indices_or_sections %s must be strictly ascending and inside (0, %lld), the "
                     "extent of axis %d of data (shape %s)",
                     gp_ops_ints(ios->n, ios->ints).s, (long long)dim, (int)axis,
                     gp_ops_shape(data).s);
        goto done;
      }
      o[axis] = idx == GP_DIM_ANY ? GP_DIM_ANY : idx - prev;
      prev = idx;
      const GPType *t;
      if (gp_ops_ret(data->tensor.dtype, data->n, o, &t) != 0) goto done;
      gp_vec_push(&fields, (void *)t);
    }
  } else {
    gp_error_set(GP_ERR_TYPE, "indices_or_sections must be an int (sections) or a list of ints "
                              "(indices)");
    return -1;
  }
  *out = gp_type_tuple((int32_t)fields.len, (const GPType *const *)fields.items);
  rc = *out ? 0 : -1;
done:
  gp_vec_free(&fields);
  return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* layout_transform                                                                            */

static const GPAttrField k_layout_transform_attrs[] = {
    GP_F_REQ("src_layout", GP_ATTR_STR),
    GP_F_REQ("dst_layout", GP_ATTR_STR),
};

static int layout_transform_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                                int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  GPLayout src, dst;
  if (gp_layout_parse(gp_ops_attr_str(op, attrs, "src_layout"), "src_layout", &src) != 0 ||
      gp_layout_parse(gp_ops_attr_str(op, attrs, "dst_layout"), "dst_layout", &dst) != 0)
    return -1;
  for (int32_t i = 0; i < src.n; i++)
    if (!src.factor[i] && gp_layout_index(&dst, src.axis[i]) < 0) {
      gp_error_set(GP_ERR_TYPE, "src_layout %s and dst_layout %s do not have the same axes (%c)",
                   src.text, dst.text, src.axis[i]);
      return -1;
    }
  for (int32_t i = 0; i < dst.n; i++)
    if (!dst.factor[i] && gp_layout_index(&src, dst.axis[i]) < 0) {
      gp_error_set(GP_ERR_TYPE, "src_layout %s and dst_layout %s do not have the same axes (%c)",
                   src.text, dst.text, dst.axis[i]);
      return -1;
    }
  int64_t primal[26], o[GP_LAYOUT_MAX];
  if (gp_layout_to_primal(&src, data, "data", primal) != 0 ||
      gp_layout_from_primal(&dst, primal, o) != 0)
    return -1;
  return gp_ops_ret(data->tensor.dtype, dst.n, o, out);
}

/* ------------------------------------------------------------------------------------------ */
/* shape_of                                                                                    */

/* TVM's ShapeOfAttrs: dtype, whose C++ default is unset (NullValue<DataType>()), so TVM prints
 * the usual shape_of(%x, dtype="int32") with its dtype; unset reads as int32, the default of the
 * Python API relay.shape_of(data, dtype="int32"). */
static const GPAttrField k_shape_of_attrs[] = {GP_F_DTYPE_VOID("dtype")};

/* TVM's ShapeOfRel: Tensor[(rank,), dtype] for data of any shape, unknown dims included; data
 * of rank 0 gives a rank-0 result (TVM's RankShape maps the empty shape to the empty shape). */
static int shape_of_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                        int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  DLDataType dt = gp_ops_attr_dtype(op, attrs, "dtype");
  if (dt.bits == 0) dt = GP_DT_I32;
  int64_t rank = data->n;
  return gp_ops_ret(dt, data->n ? 1 : 0, &rank, out);
}


/* ------------------------------------------------------------------------------------------ */
/* tile, broadcast_to                                                                          */

static const GPAttrField k_tile_attrs[] = {GP_F_REQ("reps", GP_ATTR_INTS)};

/* TVM's TileRel: the shorter of data's shape and reps is padded with leading 1s. */
static int tile_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                    const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  int32_t n;
  const int64_t *reps = gp_ops_attr_ints(op, attrs, "reps", &n);
  if (n < 0) {
    gp_error_set(GP_ERR_TYPE, "attribute reps is required");
    return -1;
  }
  if (n > GP_OPS_MAX_RANK) {
    gp_error_set(GP_ERR_TYPE, "reps %s has more than %d entries", gp_ops_ints(n, reps).s, GP_OPS_MAX_RANK);
    return -1;
  }
  for (int32_t i = 0; i < n; i++)
    if (reps[i] < 0) {
      gp_error_set(GP_ERR_TYPE, "reps %s has a negative entry", gp_ops_ints(n, reps).s);
      return -1;
    }
  int32_t nd = data->n, no = nd > n ? nd : n;
  int64_t o[GP_OPS_MAX_RANK];
  for (int32_t i = 0; i < no; i++) {
    int32_t di = i - (no - nd), ri = i - (no - n);
    int64_t d = di >= 0 ? data->tensor.shape[di] : 1, r = ri >= 0 ? reps[ri] : 1;
    if (d != GP_DIM_ANY && !gp_mul_i64(d, r, &o[i])) {
      gp_error_set(GP_ERR_TYPE, "reps %s overflows the shape of data %s", gp_ops_ints(n, reps).s,
                   gp_ops_shape(data).s);
      return -1;
    }
    if (d == GP_DIM_ANY) o[i] = GP_DIM_ANY;
  }
  return gp_ops_ret(data->tensor.dtype, no, o, out);
}

/* TVM's repeat (RepeatRel): each element repeated `repeats` times along `axis`
 * (-ndim-1 <= axis <= ndim as TVM checks; the axis must name a dim of data). */
static const GPAttrField k_repeat_attrs[] = {GP_F_REQ("repeats", GP_ATTR_INT), GP_F_REQ("axis", GP_ATTR_INT)};

static int repeat_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                      const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  int64_t repeats = gp_ops_attr_int(op, attrs, "repeats"), axis = gp_ops_attr_int(op, attrs, "axis");
  int32_t nd = data->n;
  if (repeats < 1) {
    gp_error_set(GP_ERR_TYPE, "repeats must be >= 1, got %lld", (long long)repeats);
    return -1;
  }
  if (axis < -(int64_t)nd || axis >= nd) {
    gp_error_set(GP_ERR_TYPE, "axis %lld is out of range for data of rank %d", (long long)axis, (int)nd);
    return -1;
  }
  int32_t pivot = (int32_t)(axis < 0 ? axis + nd : axis);
  int64_t o[GP_OPS_MAX_RANK];
  for (int32_t i = 0; i < nd; i++) o[i] = data->tensor.shape[i];
  if (o[pivot] != GP_DIM_ANY && !gp_mul_i64(o[pivot], repeats, &o[pivot])) {
    gp_error_set(GP_ERR_TYPE, "repeats %lld overflows the shape of data %s", (long long)repeats, gp_ops_shape(data).s);
    return -1;
  }
  return gp_ops_ret(data->tensor.dtype, nd, o, out);
}

static const GPAttrField k_broadcast_to_attrs[] = {
    GP_F_REQ("shape", GP_ATTR_INTS),
    GP_F_DTYPE_VOID("dtype"),
};

static int broadcast_to_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                            int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  int32_t n;
  const int64_t *shape;
  if (init_shape(op, attrs, &n, &shape) != 0) return -1;
  if (n < data->n) {
    gp_error_set(GP_ERR_TYPE, "shape %s has fewer dims than data %s", gp_ops_ints(n, shape).s,
                 gp_ops_shape(data).s);
    return -1;
  }
  for (int32_t i = 0; i < data->n; i++) {
    int64_t d = data->tensor.shape[i], s = shape[n - data->n + i];
    if (d != GP_DIM_ANY && d != 1 && d != s) {
      gp_error_set(GP_ERR_TYPE, "data %s cannot broadcast to shape %s", gp_ops_shape(data).s,
                   gp_ops_ints(n, shape).s);
      return -1;
    }
  }
  return gp_ops_ret(data->tensor.dtype, n, shape, out);
}

/* ------------------------------------------------------------------------------------------ */
/* The *_like ops (TVM v0.12 src/relay/op/tensor/transform.cc): the shape (or dtype) of their
 * result comes from another tensor's type; SimplifyExpr concretizes them.  collapse_sum_to is
 * what collapse_sum_like becomes.                                                              */

/* zeros_like, ones_like: TVM's IdentityRel */
static int like_identity_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                             int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(op), GP_UNUSED(attrs), GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *d = gp_ops_tensor(args, 0, "data");
  if (!d) return -1;
  *out = d;
  return 0;
}

/* TVM's FullLikeRel: data's type; fill_value a scalar */
static int full_like_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                         int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(op), GP_UNUSED(attrs), GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *d = gp_ops_tensor(args, 0, "data"), *fill = d ? gp_ops_tensor(args, 1, "fill_value") : NULL;
  if (!fill) return -1;
  if (fill->n != 0) {
    gp_error_set(GP_ERR_TYPE, "fill_value must be a scalar, got shape %s", gp_ops_shape(fill).s);
    return -1;
  }
  *out = d;
  return 0;
}

/* TVM's CastLikeRel: data's shape, dtype_like's dtype */
static int cast_like_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                         int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(op), GP_UNUSED(attrs), GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *d = gp_ops_tensor(args, 0, "data"), *like = d ? gp_ops_tensor(args, 1, "dtype_like") : NULL;
  if (!like) return -1;
  return gp_ops_ret(like->tensor.dtype, d->n, d->tensor.shape, out);
}

static const GPAttrField k_reshape_like_attrs[] = {
    GP_F_INT("lhs_begin", 0),
    GP_F_NONE("lhs_end", GP_ATTR_INT),
    GP_F_INT("rhs_begin", 0),
    GP_F_NONE("rhs_end", GP_ATTR_INT),
};

/* [begin, end) of a rank-n shape from attributes (None end: n; negative counts from the end). */
static int like_range(const GPOp *op, const GPAttrs *attrs, const char *bk, const char *ek, int32_t n,
                      const GPType *t, int32_t *b, int32_t *e) {
  int64_t bv = gp_ops_attr_int(op, attrs, bk);
  int64_t ev = gp_ops_attr_none(op, attrs, ek) ? n : gp_ops_attr_int(op, attrs, ek);
  if (bv < 0) bv += n;
  if (ev < 0) ev += n;
  if (bv < 0 || ev > n || bv > ev) {
    gp_error_set(GP_ERR_TYPE, "%s %lld and %s %lld are not a range of the dims of %s", bk,
                 (long long)gp_ops_attr_int(op, attrs, bk), ek, (long long)ev, gp_ops_shape(t).s);
    return -1;
  }
  *b = (int32_t)bv;
  *e = (int32_t)ev;
  return 0;
}

/* TVM's ReshapeLikeRel (infer_reshape_like): data[:lhs_begin] + shape_like[rhs_begin:rhs_end] +
 * data[lhs_end:], with as many elements as data when data's shape is static. */
static int reshape_like_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                            int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *d = gp_ops_tensor(args, 0, "data"), *like = d ? gp_ops_tensor(args, 1, "shape_like") : NULL;
  if (!like) return -1;
  int32_t lb, le, rb, re, no = 0;
  if (like_range(op, attrs, "lhs_begin", "lhs_end", d->n, d, &lb, &le) != 0 ||
      like_range(op, attrs, "rhs_begin", "rhs_end", like->n, like, &rb, &re) != 0)
    return -1;
  if (lb + (re - rb) + (d->n - le) > GP_OPS_MAX_RANK) {
    gp_error_set(GP_ERR_TYPE, "the result would have more than %d dims", GP_OPS_MAX_RANK);
    return -1;
  }
  int64_t o[GP_OPS_MAX_RANK];
  for (int32_t i = 0; i < lb; i++) o[no++] = d->tensor.shape[i];
  for (int32_t i = rb; i < re; i++) o[no++] = like->tensor.shape[i];
  for (int32_t i = le; i < d->n; i++) o[no++] = d->tensor.shape[i];
  int64_t nd = 1, nr = 1;
  for (int32_t i = 0; i < d->n; i++) nd = gp_ops_dim_mul(nd, d->tensor.shape[i]);
  for (int32_t i = 0; i < no; i++) nr = gp_ops_dim_mul(nr, o[i]);
  if (nr == GP_DIM_OVERFLOW) {
    gp_error_set(GP_ERR_TYPE, "the element count of the shape %s overflows", gp_ops_dims(no, o).s);
    return -1;
  }
  if (nd != GP_DIM_ANY && nr != GP_DIM_ANY && nd != nr) {
    gp_error_set(GP_ERR_TYPE, "data %s (%lld elements) cannot take the shape %s (%lld elements)",
                 gp_ops_shape(d).s, (long long)nd, gp_ops_dims(no, o).s, (long long)nr);
    return -1;
  }
  return gp_ops_ret(d->tensor.dtype, no, o, out);
}

/* Error unless `small` broadcasts to `big` (numpy rules), i.e. broadcast(small, big) == big. */
static int broadcasts_onto(const GPType *small, const char *sn, const GPType *big, const char *bn) {
  const GPType *b;
  if (gp_ops_broadcast(small, sn, big, bn, &b) != 0) return -1;
  bool same = b->n == big->n;
  for (int32_t i = 0; same && i < b->n; i++) same = b->tensor.shape[i] == big->tensor.shape[i];
  if (!same) {
    gp_error_set(GP_ERR_TYPE, "%s %s does not broadcast to %s %s", sn, gp_ops_shape(small).s, bn,
                 gp_ops_shape(big).s);
    return -1;
  }
  return 0;
}

/* TVM's BroadCastToLikeRel: broadcast_type's type, which data must broadcast to */
static int broadcast_to_like_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                                 int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(op), GP_UNUSED(attrs), GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *d = gp_ops_tensor(args, 0, "data"), *like = d ? gp_ops_tensor(args, 1, "broadcast_type") : NULL;
  if (!like || broadcasts_onto(d, "data", like, "broadcast_type") != 0) return -1;
  *out = like;
  return 0;
}

/* TVM's CollapseSumLikeRel: collapse_type's type, which must broadcast to data */
static int collapse_sum_like_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                                 int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(op), GP_UNUSED(attrs), GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *d = gp_ops_tensor(args, 0, "data"), *like = d ? gp_ops_tensor(args, 1, "collapse_type") : NULL;
  if (!like || broadcasts_onto(like, "collapse_type", d, "data") != 0) return -1;
  *out = like;
  return 0;
}

/* TVM's InitOpAttrs with shape optional (MakeCollapseSumTo sets it from a constant shape) */
static const GPAttrField k_collapse_sum_to_attrs[] = {
    GP_F_NONE("shape", GP_ATTR_INTS),
    GP_F_DTYPE_VOID("dtype"),
};

/* TVM's CollapseSumToRel: attribute shape (unknown dims when absent, as many as the 1-d shape
 * argument has entries) and data's dtype; the result must broadcast to data. */
static int collapse_sum_to_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                               int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *d = gp_ops_tensor(args, 0, "data"), *st = d ? gp_ops_tensor(args, 1, "shape") : NULL;
  if (!st) return -1;
  if (st->n != 1 || st->tensor.shape[0] == GP_DIM_ANY) {
    gp_error_set(GP_ERR_TYPE, "the shape argument must be 1-d of static length, got %s", gp_ops_shape(st).s);
    return -1;
  }
  int64_t o[GP_OPS_MAX_RANK];
  int32_t n;
  const int64_t *shape;
  if (gp_ops_attr_none(op, attrs, "shape")) {
    if (st->tensor.shape[0] > GP_OPS_MAX_RANK) {
      gp_error_set(GP_ERR_TYPE, "shape has %lld entries; at most %d are supported",
                   (long long)st->tensor.shape[0], GP_OPS_MAX_RANK);
      return -1;
    }
    n = (int32_t)st->tensor.shape[0];
    for (int32_t i = 0; i < n; i++) o[i] = GP_DIM_ANY;
    shape = o;
  } else if (init_shape(op, attrs, &n, &shape) != 0) {
    return -1;
  }
  const GPType *r;
  if (gp_ops_ret(d->tensor.dtype, n, shape, &r) != 0 || broadcasts_onto(r, "the result", d, "data") != 0)
    return -1;
  *out = r;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* nn.pad                                                                                      */

/* pad_width: TVM's Array<Array<Integer>> flattened, (before, after) per axis.  Negative widths
 * crop (ONNX Pad allows them).  pad_mode: constant, edge, reflect (TVM), and wrap. */
static const GPAttrField k_pad_attrs[] = {
    GP_F_REQ("pad_width", GP_ATTR_INTS),
    GP_F_STR("pad_mode", "constant"),
};

static int pad_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                   const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data"), *pv = gp_ops_tensor(args, 1, "pad_value");
  if (!data || !pv) return -1;
  if (pv->n != 0) {
    gp_error_set(GP_ERR_TYPE, "pad_value must be a scalar, got %s", gp_ops_shape(pv).s);
    return -1;
  }
  const char *mode = gp_ops_attr_str(op, attrs, "pad_mode");
  bool constant = strcmp(mode, "constant") == 0;
  if (!constant && strcmp(mode, "edge") != 0 && strcmp(mode, "reflect") != 0 && strcmp(mode, "wrap") != 0) {
    gp_error_set(GP_ERR_TYPE, "pad_mode \"%s\" must be constant, edge, reflect or wrap", mode);
    return -1;
  }
  int32_t n;
  const int64_t *pw = gp_ops_attr_ints(op, attrs, "pad_width", &n);
  if (n != 2 * data->n) {
    gp_error_set(GP_ERR_TYPE, "pad_width %s must have a (before, after) pair per dim of data %s",
                 gp_ops_ints(n < 0 ? 0 : n, pw).s, gp_ops_shape(data).s);
    return -1;
  }
  int64_t o[GP_OPS_MAX_RANK];
  for (int32_t i = 0; i < data->n; i++) {
    int64_t d = data->tensor.shape[i], b = pw[2 * i], a = pw[2 * i + 1];
    if (b < -((int64_t)1 << 40) || b > ((int64_t)1 << 40) || a < -((int64_t)1 << 40) || a > ((int64_t)1 << 40)) {
      gp_error_set(GP_ERR_TYPE, "pad_width %s is out of range", gp_ops_ints(n, pw).s);
      return -1;
    }
    if (d == GP_DIM_ANY) {
      o[i] = GP_DIM_ANY;
      continue;
    }
    if (d > ((int64_t)1 << 60) || d + a + b < 0 || (!constant && d == 0 && d + a + b > 0)) {
      gp_error_set(GP_ERR_TYPE, "pad_width %s does not fit dim %d of data %s (mode %s)", gp_ops_ints(n, pw).s,
                   (int)i, gp_ops_shape(data).s, mode);
      return -1;
    }
    o[i] = d + a + b;
  }
  return gp_ops_ret(data->tensor.dtype, data->n, o, out);
}

/* ------------------------------------------------------------------------------------------ */
/* nn.depth_to_space, nn.space_to_depth                                                        */

static const GPAttrField k_subpixel_attrs[] = {
    GP_F_INT("block_size", 1),
    GP_F_STR("layout", "NCHW"),
    GP_F_STR("mode", "DCR"),
};

static int subpixel_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                        int32_t nargs, const GPType **out, bool to_space) {
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  if (strcmp(gp_ops_attr_str(op, attrs, "layout"), "NCHW") != 0) {
    gp_error_set(GP_ERR_TYPE, "layout \"%s\": only NCHW is supported", gp_ops_attr_str(op, attrs, "layout"));
    return -1;
  }
  const char *mode = gp_ops_attr_str(op, attrs, "mode");
  if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0) {
    gp_error_set(GP_ERR_TYPE, "mode \"%s\" must be DCR or CRD", mode);
    return -1;
  }
  int64_t b = gp_ops_attr_int(op, attrs, "block_size");
  if (b < 1 || b > (1 << 20)) {
    gp_error_set(GP_ERR_TYPE, "block_size %lld must be positive", (long long)b);
    return -1;
  }
  if (data->n != 4) {
    gp_error_set(GP_ERR_TYPE, "data must have rank 4 (NCHW), got %s", gp_ops_shape(data).s);
    return -1;
  }
  const int64_t *s = data->tensor.shape;
  int64_t o[4] = {s[0], s[1], s[2], s[3]};
  if (to_space) {
    if (s[1] != GP_DIM_ANY && s[1] % (b * b) != 0) {
      gp_error_set(GP_ERR_TYPE, "the channels of data %s are not divisible by block_size^2 = %lld",
                   gp_ops_shape(data).s, (long long)(b * b));
      return -1;
    }
    o[1] = s[1] == GP_DIM_ANY ? GP_DIM_ANY : s[1] / (b * b);
    for (int32_t i = 2; i < 4; i++)
      if (s[i] != GP_DIM_ANY && !gp_mul_i64(s[i], b, &o[i])) {
        gp_error_set(GP_ERR_TYPE, "block_size %lld overflows the shape of data %s", (long long)b, gp_ops_shape(data).s);
        return -1;
      }
  } else {
    if ((s[2] != GP_DIM_ANY && s[2] % b != 0) || (s[3] != GP_DIM_ANY && s[3] % b != 0)) {
      gp_error_set(GP_ERR_TYPE, "the height and width of data %s are not divisible by block_size %lld",
                   gp_ops_shape(data).s, (long long)b);
      return -1;
    }
    if (s[1] != GP_DIM_ANY && !gp_mul_i64(s[1], b * b, &o[1])) {
      gp_error_set(GP_ERR_TYPE, "block_size %lld overflows the shape of data %s", (long long)b, gp_ops_shape(data).s);
      return -1;
    }
    o[2] = s[2] == GP_DIM_ANY ? GP_DIM_ANY : s[2] / b;
    o[3] = s[3] == GP_DIM_ANY ? GP_DIM_ANY : s[3] / b;
  }
  return gp_ops_ret(data->tensor.dtype, 4, o, out);
}

static int depth_to_space_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                              int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  return subpixel_rel(op, attrs, args, nargs, out, true);
}

static int space_to_depth_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                              int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  return subpixel_rel(op, attrs, args, nargs, out, false);
}

/* ------------------------------------------------------------------------------------------ */
/* nn.space_to_batch_nd, nn.batch_to_space_nd (TVM's SpaceToBatchND / BatchToSpaceND, nn.cc)   */

/* block_shape: one block size per spatial dim (dims 1..M of data); paddings / crops: TVM's
 * Array<Array<IndexExpr>> flattened like nn.pad's pad_width, (before, after) per spatial dim. */
static const int64_t k_block_one2[] = {1, 1};
static const GPAttrField k_space_to_batch_attrs[] = {
    GP_F_INTS("block_shape", k_block_one2),
    GP_F_REQ("paddings", GP_ATTR_INTS),
    GP_F_FLOAT("pad_value", 0.0),
};
static const GPAttrField k_batch_to_space_attrs[] = {
    GP_F_INTS("block_shape", k_block_one2),
    GP_F_REQ("crops", GP_ATTR_INTS),
};

#define SB_LIMIT ((int64_t)1 << 40)

/* block_shape and the (before, after) pairs of `pairs` (paddings or crops) for data: M spatial
 * dims, 1 <= M < rank, every block in [1, 2^40], every pair value in [0, 2^40]. */
static int space_batch_attrs(const GPOp *op, const GPAttrs *attrs, const GPType *data, const char *pairs,
                             int32_t *m, const int64_t **block, const int64_t **pv) {
  int32_t nb, np;
  const int64_t *b = gp_ops_attr_ints(op, attrs, "block_shape", &nb);
  const int64_t *p = gp_ops_attr_ints(op, attrs, pairs, &np);
  if (nb < 1) {
    gp_error_set(GP_ERR_TYPE, "block_shape must have at least one value, got %s",
                 nb < 0 ? "None" : gp_ops_ints(nb, b).s);
    return -1;
  }
  if (data->n < 2 || nb >= data->n) {
    gp_error_set(GP_ERR_TYPE, "data (shape %s) must have a batch dim and the %d spatial dims of block_shape %s",
                 gp_ops_shape(data).s, (int)nb, gp_ops_ints(nb, b).s);
    return -1;
  }
  for (int32_t i = 0; i < nb; i++)
    if (b[i] < 1 || b[i] > SB_LIMIT) {
      gp_error_set(GP_ERR_TYPE, "block_shape %s must be positive", gp_ops_ints(nb, b).s);
      return -1;
    }
  if (np != 2 * nb) {
    gp_error_set(GP_ERR_TYPE, "%s %s must have a (before, after) pair per spatial dim (%d for block_shape %s)",
                 pairs, np < 0 ? "None" : gp_ops_ints(np, p).s, (int)(2 * nb), gp_ops_ints(nb, b).s);
    return -1;
  }
  for (int32_t i = 0; i < np; i++)
    if (p[i] < 0 || p[i] > SB_LIMIT) {
      gp_error_set(GP_ERR_TYPE, "%s %s must not be negative", pairs, gp_ops_ints(np, p).s);
      return -1;
    }
  *m = nb;
  *block = b;
  *pv = p;
  return 0;
}

static int space_to_batch_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                              const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  int32_t m;
  const int64_t *b, *p;
  if (space_batch_attrs(op, attrs, data, "paddings", &m, &b, &p) != 0) return -1;
  const int64_t *s = data->tensor.shape;
  int64_t o[GP_OPS_MAX_RANK], prod = 1;
  for (int32_t i = 0; i < m; i++) {
    if (!gp_mul_i64(prod, b[i], &prod) || prod > SB_LIMIT) {
      gp_error_set(GP_ERR_TYPE, "block_shape %s is too large", gp_ops_ints(m, b).s);
      return -1;
    }
    int64_t d = s[i + 1];
    if (d == GP_DIM_ANY) {
      o[i + 1] = GP_DIM_ANY;
      continue;
    }
    if (d > ((int64_t)1 << 60)) {
      gp_error_set(GP_ERR_TYPE, "spatial dim %d of data (shape %s) is too large", (int)(i + 1), gp_ops_shape(data).s);
      return -1;
    }
    int64_t padded = d + p[2 * i] + p[2 * i + 1];
    if (padded % b[i] != 0) {
      gp_error_set(GP_ERR_TYPE,
                   "spatial dim %d of data (shape %s) padded by paddings %s is %lld, not divisible by "
                   "block_shape[%d] = %lld",
                   (int)(i + 1), gp_ops_shape(data).s, gp_ops_ints(2 * m, p).s, (long long)padded, (int)i,
                   (long long)b[i]);
      return -1;
    }
    o[i + 1] = padded / b[i];
  }
  if (s[0] != GP_DIM_ANY && !gp_mul_i64(s[0], prod, &o[0])) {
    gp_error_set(GP_ERR_TYPE, "block_shape %s overflows the batch of data %s", gp_ops_ints(m, b).s,
                 gp_ops_shape(data).s);
    return -1;
  }
  if (s[0] == GP_DIM_ANY) o[0] = GP_DIM_ANY;
  for (int32_t i = m + 1; i < data->n; i++) o[i] = s[i];
  return gp_ops_ret(data->tensor.dtype, data->n, o, out);
}

static int batch_to_space_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                              const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  int32_t m;
  const int64_t *b, *c;
  if (space_batch_attrs(op, attrs, data, "crops", &m, &b, &c) != 0) return -1;
  const int64_t *s = data->tensor.shape;
  int64_t o[GP_OPS_MAX_RANK], prod = 1;
  for (int32_t i = 0; i < m; i++) {
    if (!gp_mul_i64(prod, b[i], &prod) || prod > SB_LIMIT) {
      gp_error_set(GP_ERR_TYPE, "block_shape %s is too large", gp_ops_ints(m, b).s);
      return -1;
    }
    int64_t d = s[i + 1];
    if (d == GP_DIM_ANY) {
      o[i + 1] = GP_DIM_ANY;
      continue;
    }
    int64_t full;
    if (!gp_mul_i64(d, b[i], &full) || full <= c[2 * i] + c[2 * i + 1]) {
      gp_error_set(GP_ERR_TYPE,
                   "crops %s crop all of spatial dim %d of data (shape %s) times block_shape[%d] = %lld",
                   gp_ops_ints(2 * m, c).s, (int)(i + 1), gp_ops_shape(data).s, (int)i, (long long)b[i]);
      return -1;
    }
    o[i + 1] = full - c[2 * i] - c[2 * i + 1];
  }
  if (s[0] != GP_DIM_ANY && s[0] % prod != 0) {
    gp_error_set(GP_ERR_TYPE, "the batch of data (shape %s) is not divisible by the product %lld of block_shape %s",
                 gp_ops_shape(data).s, (long long)prod, gp_ops_ints(m, b).s);
    return -1;
  }
  o[0] = s[0] == GP_DIM_ANY ? GP_DIM_ANY : s[0] / prod;
  for (int32_t i = m + 1; i < data->n; i++) o[i] = s[i];
  return gp_ops_ret(data->tensor.dtype, data->n, o, out);
}
#undef SB_LIMIT

/* ------------------------------------------------------------------------------------------ */
/* stack, reverse_sequence                                                                     */

static const GPAttrField k_stack_attrs[] = {GP_F_INT("axis", 0)};

static int stack_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                     const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *tup = args[0];
  if (!tup || tup->kind != GP_TYPE_TUPLE || tup->n == 0) {
    gp_error_set(GP_ERR_TYPE, "data must be a non-empty tuple of tensors, got %s", gp_ops_type(tup).s);
    return -1;
  }
  char what[32];
  const GPType *first = NULL;
  int64_t o[GP_OPS_MAX_RANK];
  for (int32_t i = 0; i < tup->n; i++) {
    snprintf(what, sizeof what, "field %d of data", (int)i);
    const GPType *t = gp_ops_tensor(tup->tuple.fields, i, what);
    if (!t) return -1;
    if (!first) {
      first = t;
      if (t->n + 1 > GP_OPS_MAX_RANK) {
        gp_error_set(GP_ERR_TYPE, "the result would have rank > %d", GP_OPS_MAX_RANK);
        return -1;
      }
      if (t->n) memcpy(o, t->tensor.shape, (size_t)t->n * sizeof(int64_t));
      continue;
    }
    bool ok = t->n == first->n && gp_dtype_eq(t->tensor.dtype, first->tensor.dtype);
    for (int32_t d = 0; ok && d < t->n; d++) {
      int64_t v = t->tensor.shape[d];
      if (v != GP_DIM_ANY && o[d] != GP_DIM_ANY && v != o[d]) ok = false;
      if (o[d] == GP_DIM_ANY) o[d] = v;
    }
    if (!ok) {
      gp_error_set(GP_ERR_TYPE, "all fields must have the same shape and dtype: field 0 is %s, field %d is %s",
                   gp_ops_type(first).s, (int)i, gp_ops_type(t).s);
      return -1;
    }
  }
  int32_t nd = first->n;
  int64_t axis = gp_ops_attr_int(op, attrs, "axis");
  if (axis < -(int64_t)nd - 1 || axis > nd) {
    gp_error_set(GP_ERR_TYPE, "axis %lld is out of range [%d, %d] for fields of shape %s", (long long)axis,
                 -(int)nd - 1, (int)nd, gp_ops_shape(first).s);
    return -1;
  }
  int32_t a = (int32_t)(axis < 0 ? axis + nd + 1 : axis);
  memmove(o + a + 1, o + a, (size_t)(nd - a) * sizeof(int64_t));
  o[a] = tup->n;
  return gp_ops_ret(first->tensor.dtype, nd + 1, o, out);
}

static const GPAttrField k_reverse_sequence_attrs[] = {
    GP_F_INT("seq_axis", 1),
    GP_F_INT("batch_axis", 0),
};

static int reverse_sequence_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                                int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data"), *len = gp_ops_tensor(args, 1, "seq_lengths");
  if (!data || !len) return -1;
  DLDataType ld = len->tensor.dtype;
  if (ld.code != kDLInt && !(ld.code == kDLUInt && ld.bits >= 8)) {
    gp_error_set(GP_ERR_TYPE, "seq_lengths must have an integer dtype, got %s", gp_ops_dtype(ld).s);
    return -1;
  }
  if (data->n < 2) {
    gp_error_set(GP_ERR_TYPE, "data must have rank >= 2, got %s", gp_ops_shape(data).s);
    return -1;
  }
  int32_t sa, ba;
  if (gp_ops_axis(gp_ops_attr_int(op, attrs, "seq_axis"), data->n, "seq_axis", data, &sa) != 0 ||
      gp_ops_axis(gp_ops_attr_int(op, attrs, "batch_axis"), data->n, "batch_axis", data, &ba) != 0)
    return -1;
  if (sa == ba) {
    gp_error_set(GP_ERR_TYPE, "seq_axis and batch_axis are both %d", (int)sa);
    return -1;
  }
  int64_t bdim = data->tensor.shape[ba];
  if (len->n != 1 || (bdim != GP_DIM_ANY && len->tensor.shape[0] != GP_DIM_ANY && len->tensor.shape[0] != bdim)) {
    gp_error_set(GP_ERR_TYPE, "seq_lengths %s must be 1-d with one entry per batch (data %s, batch_axis %d)",
                 gp_ops_shape(len).s, gp_ops_shape(data).s, (int)ba);
    return -1;
  }
  return gp_ops_ret(data->tensor.dtype, data->n, data->tensor.shape, out);
}
/* ------------------------------------------------------------------------------------------ */

void gp_ops_register_transform(void) {
  gp_ops_def("concatenate", 1, GP_PATTERN_INJECTIVE, 0, k_concatenate_attrs,
             N_ATTRS(k_concatenate_attrs), concatenate_rel,
             "Concatenate a tuple of tensors along axis.");
  gp_ops_def("reshape", 1, GP_PATTERN_INJECTIVE, GP_OP_RESHAPE_ONLY, k_reshape_attrs,
             N_ATTRS(k_reshape_attrs), reshape_rel,
             "Reshape (newshape special values 0, -1, -2, -3, -4).");
  gp_ops_def("transpose", 1, GP_PATTERN_INJECTIVE, 0, k_transpose_attrs,
             N_ATTRS(k_transpose_attrs), transpose_rel, "Permute axes (reverse when None).");
  gp_ops_def("expand_dims", 1, GP_PATTERN_BROADCAST, 0, k_expand_dims_attrs,
             N_ATTRS(k_expand_dims_attrs), expand_dims_rel,
             "Insert num_newaxis axes of extent 1 at axis.");
  gp_ops_def("squeeze", 1, GP_PATTERN_INJECTIVE, 0, k_squeeze_attrs, N_ATTRS(k_squeeze_attrs),
             squeeze_rel, "Remove axes of extent 1 (all when axis is None).");
  gp_ops_def("full", 1, GP_PATTERN_ELEMWISE, 0, k_init_attrs, N_ATTRS(k_init_attrs), full_rel,
             "A tensor of shape filled with the scalar fill_value.");
  gp_ops_def("zeros", 0, GP_PATTERN_ELEMWISE, 0, k_init_attrs, N_ATTRS(k_init_attrs), init_rel,
             "A tensor of zeros.");
  gp_ops_def("ones", 0, GP_PATTERN_ELEMWISE, 0, k_init_attrs, N_ATTRS(k_init_attrs), init_rel,
             "A tensor of ones.");
  gp_ops_def("strided_slice", 1, GP_PATTERN_INJECTIVE, 0, k_strided_slice_attrs,
             N_ATTRS(k_strided_slice_attrs), strided_slice_rel,
             "Slice with begin, end and strides (negative indices count from the end).");
  gp_ops_def("split", 1, GP_PATTERN_INJECTIVE, 0, k_split_attrs, N_ATTRS(k_split_attrs),
             split_rel, "Split into equal sections or at indices along axis; returns a tuple.");
  gp_ops_def("layout_transform", 1, GP_PATTERN_INJECTIVE, 0, k_layout_transform_attrs,
             N_ATTRS(k_layout_transform_attrs), layout_transform_rel,
             "Change the data layout (e.g. NCHW -> NHWC, NCHW -> NCHW16c).");
  /* As TVM (src/relay/op/tensor/unary.cc): TOpPattern kOpaque ("won't be performance critical,
   * and it makes things easier for dynamic shape func"), TOpIsStateful false, and no
   * TNonComputational (TVM sets that flag on vm.shape_of only). */
  gp_ops_def("shape_of", 1, GP_PATTERN_OPAQUE, 0, k_shape_of_attrs, N_ATTRS(k_shape_of_attrs),
             shape_of_rel, "The shape of data as a 1-d tensor of dtype (rank-0 data: a scalar).");
  gp_ops_def("tile", 1, GP_PATTERN_INJECTIVE, 0, k_tile_attrs, N_ATTRS(k_tile_attrs), tile_rel,
             "Repeat data reps times along each axis.");
  gp_ops_def("repeat", 1, GP_PATTERN_BROADCAST, 0, k_repeat_attrs, N_ATTRS(k_repeat_attrs), repeat_rel,
             "Repeat each element repeats times along axis.");
  gp_ops_def("broadcast_to", 1, GP_PATTERN_BROADCAST, 0, k_broadcast_to_attrs, N_ATTRS(k_broadcast_to_attrs),
             broadcast_to_rel, "Broadcast data to shape (numpy rules).");
  gp_ops_def("contrib_reverse_reshape", 1, GP_PATTERN_INJECTIVE, GP_OP_RESHAPE_ONLY, k_reshape_attrs,
             N_ATTRS(k_reshape_attrs), reverse_reshape_rel,
             "Reshape with the special values of newshape read right to left.");
  gp_ops_def("zeros_like", 1, GP_PATTERN_ELEMWISE, 0, NULL, 0, like_identity_rel,
             "Zeros of data's shape and dtype.");
  gp_ops_def("ones_like", 1, GP_PATTERN_ELEMWISE, 0, NULL, 0, like_identity_rel,
             "Ones of data's shape and dtype.");
  gp_ops_def("full_like", 2, GP_PATTERN_ELEMWISE, 0, NULL, 0, full_like_rel,
             "The scalar fill_value in data's shape and dtype.");
  gp_ops_def("cast_like", 2, GP_PATTERN_ELEMWISE, 0, NULL, 0, cast_like_rel,
             "Cast data to the dtype of dtype_like.");
  gp_ops_def("reshape_like", 2, GP_PATTERN_INJECTIVE, 0, k_reshape_like_attrs, N_ATTRS(k_reshape_like_attrs),
             reshape_like_rel, "Reshape data[lhs_begin:lhs_end] to shape_like[rhs_begin:rhs_end]'s dims.");
  gp_ops_def("broadcast_to_like", 2, GP_PATTERN_BROADCAST, 0, NULL, 0, broadcast_to_like_rel,
             "Broadcast data to the shape of broadcast_type.");
  gp_ops_def("collapse_sum_like", 2, GP_PATTERN_COMM_REDUCE, 0, NULL, 0, collapse_sum_like_rel,
             "Sum data over the broadcast axes down to the shape of collapse_type.");
  gp_ops_def("collapse_sum_to", 2, GP_PATTERN_COMM_REDUCE, 0, k_collapse_sum_to_attrs,
             N_ATTRS(k_collapse_sum_to_attrs), collapse_sum_to_rel,
             "Sum data over the broadcast axes down to shape.");
  gp_ops_def("nn.pad", 2, GP_PATTERN_INJECTIVE, 0, k_pad_attrs, N_ATTRS(k_pad_attrs), pad_rel,
             "Pad data by pad_width (before, after per axis) with pad_value, or edge/reflect/wrap.");
  gp_ops_def("nn.depth_to_space", 1, GP_PATTERN_INJECTIVE, 0, k_subpixel_attrs, N_ATTRS(k_subpixel_attrs),
             depth_to_space_rel, "Rearrange channel blocks into spatial blocks (NCHW; mode DCR or CRD).");
  gp_ops_def("nn.space_to_depth", 1, GP_PATTERN_INJECTIVE, 0, k_subpixel_attrs, N_ATTRS(k_subpixel_attrs),
             space_to_depth_rel, "Rearrange spatial blocks into channels (NCHW).");
  gp_ops_def("nn.space_to_batch_nd", 1, GP_PATTERN_INJECTIVE, 0, k_space_to_batch_attrs,
             N_ATTRS(k_space_to_batch_attrs), space_to_batch_rel,
             "Pad the spatial dims (1..M) by paddings and move blocks of block_shape into the batch.");
  gp_ops_def("nn.batch_to_space_nd", 1, GP_PATTERN_INJECTIVE, 0, k_batch_to_space_attrs,
             N_ATTRS(k_batch_to_space_attrs), batch_to_space_rel,
             "Move batch blocks of block_shape into the spatial dims (1..M), then crop them by crops.");
  gp_ops_def("stack", 1, GP_PATTERN_INJECTIVE, 0, k_stack_attrs, N_ATTRS(k_stack_attrs), stack_rel,
             "Stack a tuple of same-shaped tensors along a new axis.");
  gp_ops_def("reverse_sequence", 2, GP_PATTERN_INJECTIVE, 0, k_reverse_sequence_attrs,
             N_ATTRS(k_reverse_sequence_attrs), reverse_sequence_rel,
             "Reverse the first seq_lengths[b] elements along seq_axis of each batch b.");
}
