/* ops_nn.c -- neural-network ops: conv2d, dense, bias_add, batch_norm, dropout, pools, softmax,
 * lrn, batch_flatten, layer_norm, instance_norm, group_norm, l2_normalize. */
#include "ir/ops/ops.h"

#include <stdio.h>
#include <string.h>

/* An INTS attribute of two values (one value is replicated), each >= min. */
static int attr_pair(const GPOp *op, const GPAttrs *attrs, const char *key, int64_t min,
                     int64_t out[2]) {
  int32_t n;
  const int64_t *v = gp_ops_attr_ints(op, attrs, key, &n);
  if (n == 1 || n == 2) {
    out[0] = v[0];
    out[1] = v[n - 1];
    if (out[0] >= min && out[1] >= min) return 0;
    gp_error_set(GP_ERR_TYPE, "%s %s must be >= %lld", key, gp_ops_ints(n, v).s, (long long)min);
    return -1;
  }
  return gp_ops_ints_check(v, n, 2, min, key);
}

static int attr_pad(const GPOp *op, const GPAttrs *attrs, int64_t pad[4]) {
  int32_t n;
  const int64_t *v = gp_ops_attr_ints(op, attrs, "padding", &n);
  return gp_ops_pad4(v, n, "padding", pad);
}

/* Output extent of a window of `k` (dilated by `dil`) sliding with `stride` over `in` padded
 * by `pad` in total; ceil_mode rounds up.  -1 + error when the window does not fit. */
static int window_out(int64_t in, int64_t pad, int64_t k, int64_t dil, int64_t stride,
                      bool ceil_mode, const char *dim, const GPType *data, int64_t *out) {
  if (in == GP_DIM_ANY || k == GP_DIM_ANY) {
    *out = GP_DIM_ANY;
    return 0;
  }
  int64_t eff = (k - 1) * dil + 1;
  int64_t num = in + pad - eff;
  if (num < 0) {
    gp_error_set(GP_ERR_TYPE,
                 "the window of %s %lld (dilated to %lld) is larger than the padded input %s %lld "
                 "of data (shape %s)",
                 dim, (long long)k, (long long)eff, dim, (long long)(in + pad), gp_ops_shape(data).s);
    return -1;
  }
  if (ceil_mode) num += stride - 1;
  *out = num / stride + 1;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* nn.conv2d                                                                                   */

static const int64_t k_one2[] = {1, 1};
static const int64_t k_zero2[] = {0, 0};

static const GPAttrField k_conv2d_attrs[] = {
    GP_F_INTS("strides", k_one2),
    GP_F_INTS("padding", k_zero2),
    GP_F_INTS("dilation", k_one2),
    GP_F_INT("groups", 1),
    GP_F_NONE("channels", GP_ATTR_INT),
    GP_F_NONE("kernel_size", GP_ATTR_INTS),
    GP_F_STR("data_layout", "NCHW"),
    GP_F_STR("kernel_layout", "OIHW"),
    GP_F_STR("out_layout", ""),
    GP_F_DTYPE_VOID("out_dtype"),
};

#define P(c) ((c) - 'A')

static int conv2d_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                      int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  const GPType *weight = data ? gp_ops_tensor(args, 1, "weight") : NULL;
  if (!weight) return -1;
  int64_t strides[2], dilation[2], pad[4];
  if (attr_pair(op, attrs, "strides", 1, strides) != 0 ||
      attr_pair(op, attrs, "dilation", 1, dilation) != 0 || attr_pad(op, attrs, pad) != 0)
    return -1;
  int64_t groups = gp_ops_attr_int(op, attrs, "groups");
  if (groups < 1) {
    gp_error_set(GP_ERR_TYPE, "groups %lld must be >= 1", (long long)groups);
    return -1;
  }
  const char *out_layout_s = gp_ops_attr_str(op, attrs, "out_layout");
  GPLayout dl, kl, ol;
  if (gp_layout_parse(gp_ops_attr_str(op, attrs, "data_layout"), "data_layout", &dl) != 0 ||
      gp_layout_require(&dl, "NCHW", false, "data_layout") != 0 ||
      gp_layout_parse(gp_ops_attr_str(op, attrs, "kernel_layout"), "kernel_layout", &kl) != 0 ||
      gp_layout_require(&kl, "OIHW", false, "kernel_layout") != 0 ||
      gp_layout_parse(out_layout_s[0] ? out_layout_s : dl.text, "out_layout", &ol) != 0 ||
      gp_layout_require(&ol, "NCHW", false, "out_layout") != 0)
    return -1;
  int64_t d[26], w[26];
  if (gp_layout_to_primal(&dl, data, "data", d) != 0 ||
      gp_layout_to_primal(&kl, weight, "weight", w) != 0)
    return -1;

  int32_t nks;
  const int64_t *ks = gp_ops_attr_ints(op, attrs, "kernel_size", &nks);
  if (nks >= 0) {
    if (gp_ops_ints_check(ks, nks, 2, 1, "kernel_size") != 0) return -1;
    if ((w[P('H')] != GP_DIM_ANY && w[P('H')] != ks[0]) ||
        (w[P('W')] != GP_DIM_ANY && w[P('W')] != ks[1])) {
      gp_error_set(GP_ERR_TYPE, "kernel_size %s does not match weight (shape %s) in layout %s",
                   gp_ops_ints(nks, ks).s, gp_ops_shape(weight).s, kl.text);
      return -1;
    }
  }
  int64_t channels = w[P('O')];
  if (!gp_ops_attr_none(op, attrs, "channels")) {
    int64_t c = gp_ops_attr_int(op, attrs, "channels");
    if (channels != GP_DIM_ANY && channels != c) {
      gp_error_set(GP_ERR_TYPE,
                   "channels %lld does not match the output channels %lld of weight (shape %s)",
                   (long long)c, (long long)channels, gp_ops_shape(weight).s);
      return -1;
    }
    channels = c;
  }
  if (d[P('C')] != GP_DIM_ANY && w[P('I')] != GP_DIM_ANY && d[P('C')] != w[P('I')] * groups) {
    gp_error_set(GP_ERR_TYPE,
                 "input channels %lld of data (shape %s) do not match weight input channels %lld "
                 "* groups %lld",
                 (long long)d[P('C')], gp_ops_shape(data).s, (long long)w[P('I')],
                 (long long)groups);
    return -1;
  }
  if (channels != GP_DIM_ANY && channels % groups != 0) {
    gp_error_set(GP_ERR_TYPE, "output channels %lld of weight (shape %s) are not divisible by "
                              "groups %lld",
                 (long long)channels, gp_ops_shape(weight).s, (long long)groups);
    return -1;
  }
  int64_t o[26];
  for (int i = 0; i < 26; i++) o[i] = -2;
  o[P('N')] = d[P('N')];
  o[P('C')] = channels;
  if (window_out(d[P('H')], pad[0] + pad[2], w[P('H')], dilation[0], strides[0], false, "height",
                 data, &o[P('H')]) != 0 ||
      window_out(d[P('W')], pad[1] + pad[3], w[P('W')], dilation[1], strides[1], false, "width",
                 data, &o[P('W')]) != 0)
    return -1;
  int64_t oshape[GP_LAYOUT_MAX];
  if (gp_layout_from_primal(&ol, o, oshape) != 0) return -1;
  DLDataType odt = gp_ops_attr_dtype(op, attrs, "out_dtype");
  if (odt.bits == 0) odt = data->tensor.dtype;
  return gp_ops_ret(odt, ol.n, oshape, out);
}

/* ------------------------------------------------------------------------------------------ */
/* nn.dense                                                                                    */

static const GPAttrField k_dense_attrs[] = {
    GP_F_NONE("units", GP_ATTR_INT),
    GP_F_DTYPE_VOID("out_dtype"),
};

static int dense_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                     int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  const GPType *weight = data ? gp_ops_tensor(args, 1, "weight") : NULL;
  if (!weight) return -1;
  if (data->n < 1) {
    gp_error_set(GP_ERR_TYPE, "data must have rank >= 1, got a scalar");
    return -1;
  }
  if (weight->n != 2) {
    gp_error_set(GP_ERR_TYPE, "weight must have rank 2 (units, in_features), got shape %s",
                 gp_ops_shape(weight).s);
    return -1;
  }
  int64_t k = data->tensor.shape[data->n - 1], wk = weight->tensor.shape[1];
  if (k != GP_DIM_ANY && wk != GP_DIM_ANY && k != wk) {
    gp_error_set(GP_ERR_TYPE,
                 "input features %lld of data (shape %s) do not match in_features %lld of weight "
                 "(shape %s)",
                 (long long)k, gp_ops_shape(data).s, (long long)wk, gp_ops_shape(weight).s);
    return -1;
  }
  int64_t units = weight->tensor.shape[0];
  if (!gp_ops_attr_none(op, attrs, "units")) {
    int64_t u = gp_ops_attr_int(op, attrs, "units");
    if (units != GP_DIM_ANY && units != u) {
      gp_error_set(GP_ERR_TYPE, "units %lld does not match weight (shape %s)", (long long)u,
                   gp_ops_shape(weight).s);
      return -1;
    }
    units = u;
  }
  int64_t oshape[GP_OPS_MAX_RANK];
  memcpy(oshape, data->tensor.shape, (size_t)data->n * sizeof(int64_t));
  oshape[data->n - 1] = units;
  DLDataType odt = gp_ops_attr_dtype(op, attrs, "out_dtype");
  if (odt.bits == 0) odt = data->tensor.dtype;
  return gp_ops_ret(odt, data->n, oshape, out);
}

/* ------------------------------------------------------------------------------------------ */
/* nn.matmul (TVM's MatmulRel): tensor_a (..., K) [transpose_a: (..., K, M)], tensor_b (K, N)  */
/* [transpose_b: (N, K)] -> (..., N) [transpose_a: (..., M, N)].                               */

static const GPAttrField k_matmul_attrs[] = {
    GP_F_NONE("units", GP_ATTR_INT),
    GP_F_DTYPE_VOID("out_dtype"),
    GP_F_BOOL("transpose_a", 0),
    GP_F_BOOL("transpose_b", 0),
};

static int matmul_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                      int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *a = gp_ops_tensor(args, 0, "tensor_a");
  const GPType *b = a ? gp_ops_tensor(args, 1, "tensor_b") : NULL;
  if (!b) return -1;
  bool ta = gp_ops_attr_bool(op, attrs, "transpose_a"), tb = gp_ops_attr_bool(op, attrs, "transpose_b");
  if (a->n < (ta ? 2 : 1)) {
    gp_error_set(GP_ERR_TYPE, "tensor_a (shape %s) must have rank >= %d%s", gp_ops_shape(a).s, ta ? 2 : 1,
                 ta ? " with transpose_a" : "");
    return -1;
  }
  if (b->n != 2) {
    gp_error_set(GP_ERR_TYPE, "tensor_b must have rank 2, got shape %s", gp_ops_shape(b).s);
    return -1;
  }
  const int64_t *as = a->tensor.shape, *bs = b->tensor.shape;
  int64_t k = ta ? as[a->n - 2] : as[a->n - 1], bk = tb ? bs[1] : bs[0], units = tb ? bs[0] : bs[1];
  if (k != GP_DIM_ANY && bk != GP_DIM_ANY && k != bk) {
    gp_error_set(GP_ERR_TYPE,
                 "the reduction dims differ: %lld of tensor_a (shape %s, transpose_a %d) and %lld of "
                 "tensor_b (shape %s, transpose_b %d)",
                 (long long)k, gp_ops_shape(a).s, (int)ta, (long long)bk, gp_ops_shape(b).s, (int)tb);
    return -1;
  }
  if (!gp_ops_attr_none(op, attrs, "units")) {
    int64_t u = gp_ops_attr_int(op, attrs, "units");
    if (units != GP_DIM_ANY && units != u) {
      gp_error_set(GP_ERR_TYPE, "units %lld does not match tensor_b (shape %s, transpose_b %d)", (long long)u,
                   gp_ops_shape(b).s, (int)tb);
      return -1;
    }
    units = u;
  }
  int64_t oshape[GP_OPS_MAX_RANK];
  memcpy(oshape, as, (size_t)a->n * sizeof(int64_t));
  if (ta) oshape[a->n - 2] = as[a->n - 1];
  oshape[a->n - 1] = units;
  DLDataType odt = gp_ops_attr_dtype(op, attrs, "out_dtype");
  if (odt.bits == 0) odt = a->tensor.dtype;
  return gp_ops_ret(odt, a->n, oshape, out);
}

/* ------------------------------------------------------------------------------------------ */
/* nn.bias_add, nn.batch_norm                                                                  */

static const GPAttrField k_bias_add_attrs[] = {GP_F_INT("axis", 1)};

/* Error unless `vec` is the 1-d tensor (shape[axis]) of data's dtype. */
static int check_channel_vec(const GPType *data, int32_t axis, const GPType *vec, const char *nm) {
  int64_t c = data->tensor.shape[axis];
  if (vec->n != 1 || (vec->tensor.shape[0] != GP_DIM_ANY && c != GP_DIM_ANY &&
                      vec->tensor.shape[0] != c)) {
    gp_error_set(GP_ERR_TYPE, "%s (shape %s) must have shape (%lld): data (shape %s) at axis %d",
                 nm, gp_ops_shape(vec).s, (long long)c, gp_ops_shape(data).s, (int)axis);
    return -1;
  }
  return gp_ops_same_dtype(data, "data", vec, nm);
}

/* (data, vec) -> data, vec a vector along data's `axis` attribute (nn.bias_add, nn.prelu). */
static int channel_vec_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                           const GPType **out, const char *vec_name) {
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  const GPType *vec = data ? gp_ops_tensor(args, 1, vec_name) : NULL;
  int32_t axis;
  if (!vec || gp_ops_axis(gp_ops_attr_int(op, attrs, "axis"), data->n, "axis", data, &axis) != 0 ||
      check_channel_vec(data, axis, vec, vec_name) != 0)
    return -1;
  *out = data;
  return 0;
}

static int bias_add_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                        int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  return channel_vec_rel(op, attrs, args, nargs, out, "bias");
}

static const GPAttrField k_batch_norm_attrs[] = {
    GP_F_INT("axis", 1),
    GP_F_FLOAT("epsilon", 1e-5),
    GP_F_BOOL("center", 1),
    GP_F_BOOL("scale", 1),
};

static int batch_norm_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                          int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  static const char *const names[] = {"data", "gamma", "beta", "moving_mean", "moving_var"};
  if (gp_ops_nargs(nargs, 5) != 0) return -1;
  const GPType *t[5];
  for (int32_t i = 0; i < 5; i++)
    if (!(t[i] = gp_ops_tensor(args, i, names[i]))) return -1;
  int32_t axis;
  if (gp_ops_axis(gp_ops_attr_int(op, attrs, "axis"), t[0]->n, "axis", t[0], &axis) != 0)
    return -1;
  for (int32_t i = 1; i < 5; i++)
    if (check_channel_vec(t[0], axis, t[i], names[i]) != 0) return -1;
  const GPType *vec;
  if (gp_ops_ret(t[0]->tensor.dtype, 1, &t[0]->tensor.shape[axis], &vec) != 0) return -1;
  const GPType *fields[3] = {t[0], vec, vec};
  *out = gp_type_tuple(3, fields);
  return *out ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* nn.dropout                                                                                  */

static const GPAttrField k_dropout_attrs[] = {GP_F_FLOAT("rate", 0.5)};

static int dropout_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                       int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(op), GP_UNUSED(attrs), GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  const GPType *fields[2] = {data, data};
  *out = gp_type_tuple(2, fields);
  return *out ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Pools                                                                                       */

static const GPAttrField k_max_pool2d_attrs[] = {
    GP_F_REQ("pool_size", GP_ATTR_INTS),
    GP_F_INTS("strides", k_one2),
    GP_F_INTS("dilation", k_one2),
    GP_F_INTS("padding", k_zero2),
    GP_F_STR("layout", "NCHW"),
    GP_F_STR("out_layout", ""),
    GP_F_BOOL("ceil_mode", 0),
};

static const GPAttrField k_avg_pool2d_attrs[] = {
    GP_F_REQ("pool_size", GP_ATTR_INTS),
    GP_F_INTS("strides", k_one2),
    GP_F_INTS("dilation", k_one2),
    GP_F_INTS("padding", k_zero2),
    GP_F_STR("layout", "NCHW"),
    GP_F_STR("out_layout", ""),
    GP_F_BOOL("ceil_mode", 0),
    GP_F_BOOL("count_include_pad", 0),
};

static const GPAttrField k_global_pool2d_attrs[] = {
    GP_F_STR("layout", "NCHW"),
    GP_F_STR("out_layout", ""),
};

/* Parse the pool layout and find H and W, which must not be split; data's rank must match. */
static int pool_layout(const GPOp *op, const GPAttrs *attrs, const GPType *data, int32_t *h,
                       int32_t *w) {
  GPLayout l;
  if (gp_layout_parse(gp_ops_attr_str(op, attrs, "layout"), "layout", &l) != 0) return -1;
  *h = gp_layout_index(&l, 'H');
  *w = gp_layout_index(&l, 'W');
  if (*h < 0 || *w < 0 || gp_layout_index(&l, 'h') >= 0 || gp_layout_index(&l, 'w') >= 0) {
    gp_error_set(GP_ERR_TYPE, "layout \"%s\" must have axes H and W, which cannot be split", l.text);
    return -1;
  }
  if (data->n != l.n) {
    gp_error_set(GP_ERR_TYPE, "data has rank %d (shape %s) but layout %s has %d axes", (int)data->n,
                 gp_ops_shape(data).s, l.text, (int)l.n);
    return -1;
  }
  return 0;
}

static int pool2d_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                      int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  int32_t h, w;
  if (!data || pool_layout(op, attrs, data, &h, &w) != 0) return -1;
  int64_t pool[2], strides[2], dilation[2], pad[4];
  if (attr_pair(op, attrs, "pool_size", 1, pool) != 0 ||
      attr_pair(op, attrs, "strides", 1, strides) != 0 ||
      attr_pair(op, attrs, "dilation", 1, dilation) != 0 || attr_pad(op, attrs, pad) != 0)
    return -1;
  bool ceil_mode = gp_ops_attr_bool(op, attrs, "ceil_mode");
  int64_t oshape[GP_OPS_MAX_RANK];
  memcpy(oshape, data->tensor.shape, (size_t)data->n * sizeof(int64_t));
  if (window_out(data->tensor.shape[h], pad[0] + pad[2], pool[0], dilation[0], strides[0],
                 ceil_mode, "height", data, &oshape[h]) != 0 ||
      window_out(data->tensor.shape[w], pad[1] + pad[3], pool[1], dilation[1], strides[1],
                 ceil_mode, "width", data, &oshape[w]) != 0)
    return -1;
  return gp_ops_ret(data->tensor.dtype, data->n, oshape, out);
}

static int global_pool2d_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                             int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  int32_t h, w;
  if (!data || pool_layout(op, attrs, data, &h, &w) != 0) return -1;
  int64_t oshape[GP_OPS_MAX_RANK];
  memcpy(oshape, data->tensor.shape, (size_t)data->n * sizeof(int64_t));
  oshape[h] = oshape[w] = 1;
  return gp_ops_ret(data->tensor.dtype, data->n, oshape, out);
}

/* ------------------------------------------------------------------------------------------ */
/* nn.softmax, nn.lrn, nn.batch_flatten                                                        */

static const GPAttrField k_softmax_attrs[] = {GP_F_INT("axis", -1)};

static int softmax_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                       int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  int32_t axis;
  if (!data || gp_ops_axis(gp_ops_attr_int(op, attrs, "axis"), data->n, "axis", data, &axis) != 0)
    return -1;
  *out = data;
  return 0;
}

static const GPAttrField k_lrn_attrs[] = {
    GP_F_INT("size", 5),       GP_F_INT("axis", 1),       GP_F_FLOAT("bias", 2.0),
    GP_F_FLOAT("alpha", 1e-4), GP_F_FLOAT("beta", 0.75),
};

static int lrn_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                   const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  int32_t axis;
  if (!data || gp_ops_axis(gp_ops_attr_int(op, attrs, "axis"), data->n, "axis", data, &axis) != 0)
    return -1;
  int64_t size = gp_ops_attr_int(op, attrs, "size");
  if (size < 1) {
    gp_error_set(GP_ERR_TYPE, "size %lld must be >= 1", (long long)size);
    return -1;
  }
  *out = data;
  return 0;
}

static int batch_flatten_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                             int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(op), GP_UNUSED(attrs), GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  if (data->n < 1) {
    gp_error_set(GP_ERR_TYPE, "data must have rank >= 1, got a scalar");
    return -1;
  }
  int64_t oshape[2] = {data->tensor.shape[0], 1};
  for (int32_t i = 1; i < data->n; i++) oshape[1] = gp_ops_dim_mul(oshape[1], data->tensor.shape[i]);
  return gp_ops_ret(data->tensor.dtype, 2, oshape, out);
}

/* ------------------------------------------------------------------------------------------ */
/* nn.layer_norm, nn.instance_norm, nn.group_norm (args data, gamma, beta), nn.l2_normalize.   */
/* TVM registers no TOpPattern for them (FuseOps reads opaque); SimplifyInference decomposes   */
/* them.  gamma and beta are (C) vectors of data's dtype, C = data.shape[axis], checked even   */
/* when center / scale is off (TVM's relations assign those types regardless).                 */

static const GPAttrField k_layer_norm_attrs[] = {
    GP_F_INT("axis", -1),
    GP_F_FLOAT("epsilon", 1e-5),
    GP_F_BOOL("center", 1),
    GP_F_BOOL("scale", 1),
};

static const GPAttrField k_instance_norm_attrs[] = {
    GP_F_INT("axis", 1),
    GP_F_FLOAT("epsilon", 1e-5),
    GP_F_BOOL("center", 1),
    GP_F_BOOL("scale", 1),
};

static const GPAttrField k_group_norm_attrs[] = {
    GP_F_INT("num_groups", 0),
    GP_F_INT("axis", 1),
    GP_F_FLOAT("epsilon", 1e-5),
    GP_F_BOOL("center", 1),
    GP_F_BOOL("scale", 1),
};

static const GPAttrField k_l2_normalize_attrs[] = {
    GP_F_REQ("eps", GP_ATTR_FLOAT),
    GP_F_REQ("axis", GP_ATTR_INTS),
};

/* data, gamma, beta of a norm op; *axis normalized.  min_rank: data's least rank. */
static int norm_args(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                     int32_t nargs, int32_t min_rank, const char *rank_why, const GPType **data,
                     int32_t *axis) {
  static const char *const names[] = {"data", "gamma", "beta"};
  if (gp_ops_nargs(nargs, 3) != 0) return -1;
  const GPType *t[3];
  for (int32_t i = 0; i < 3; i++)
    if (!(t[i] = gp_ops_tensor(args, i, names[i]))) return -1;
  if (t[0]->n < min_rank) {
    gp_error_set(GP_ERR_TYPE, "data must have rank >= %d (%s), got shape %s", (int)min_rank,
                 rank_why, gp_ops_shape(t[0]).s);
    return -1;
  }
  if (gp_ops_axis(gp_ops_attr_int(op, attrs, "axis"), t[0]->n, "axis", t[0], axis) != 0) return -1;
  for (int32_t i = 1; i < 3; i++)
    if (check_channel_vec(t[0], *axis, t[i], names[i]) != 0) return -1;
  *data = t[0];
  return 0;
}

static int layer_norm_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                          int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  int32_t axis;
  if (norm_args(op, attrs, args, nargs, 1, "an axis to normalize", out, &axis) != 0) return -1;
  return 0;
}

static int instance_norm_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                             int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  int32_t axis;
  /* TVM: ICHECK_GT(ndim, 2) -- batch, channel and at least one axis to normalize over */
  return norm_args(op, attrs, args, nargs, 3, "batch, channel and at least one spatial axis", out,
                   &axis);
}

static int group_norm_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                          int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  int32_t axis;
  const GPType *data;
  if (norm_args(op, attrs, args, nargs, 1, "a channel axis", &data, &axis) != 0) return -1;
  int64_t groups = gp_ops_attr_int(op, attrs, "num_groups");
  int64_t c = data->tensor.shape[axis];
  if (groups < 1) {
    gp_error_set(GP_ERR_TYPE, "num_groups %lld must be >= 1", (long long)groups);
    return -1;
  }
  if (c != GP_DIM_ANY && c % groups != 0) {
    gp_error_set(GP_ERR_TYPE,
                 "the %lld channels of data (shape %s) at axis %d are not divisible by "
                 "num_groups %lld",
                 (long long)c, gp_ops_shape(data).s, (int)axis, (long long)groups);
    return -1;
  }
  *out = data;
  return 0;
}

static int l2_normalize_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                            int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  int32_t n;
  const int64_t *axes = gp_ops_attr_ints(op, attrs, "axis", &n);
  if (n < 0) {
    gp_error_set(GP_ERR_TYPE, "attribute axis is required (the axes to normalize over)");
    return -1;
  }
  bool seen[GP_OPS_MAX_RANK] = {false};
  for (int32_t i = 0; i < n; i++) {
    int32_t a;
    if (gp_ops_axis(axes[i], data->n, "axis", data, &a) != 0) return -1;
    if (seen[a]) {
      gp_error_set(GP_ERR_TYPE, "axis %s names axis %d twice", gp_ops_ints(n, axes).s, (int)a);
      return -1;
    }
    seen[a] = true;
  }
  *out = data;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* N-d variants: nn.conv1d / conv3d, nn.conv{1,2,3}d_transpose, nn.{max,avg}_pool{1,3}d.       */
/* nd spatial axes named by k_spatial[nd] ("W", "HW", "DHW").                                  */

static const char *const k_spatial[4] = {"", "W", "HW", "DHW"};

/* An INTS attribute of nd values (one value is replicated), each >= min. */
static int attr_nd(const GPOp *op, const GPAttrs *attrs, const char *key, int32_t nd, int64_t min,
                   int64_t out[3]) {
  int32_t n;
  const int64_t *v = gp_ops_attr_ints(op, attrs, key, &n);
  if (n != 1 && n != nd) {
    gp_error_set(GP_ERR_TYPE, "%s %s must have 1 or %d values", key,
                 n < 0 ? "None" : gp_ops_ints(n, v).s, (int)nd);
    return -1;
  }
  for (int32_t i = 0; i < nd; i++) {
    out[i] = v[n == 1 ? 0 : i];
    if (out[i] < min) {
      gp_error_set(GP_ERR_TYPE, "%s %s must be >= %lld", key, gp_ops_ints(n, v).s, (long long)min);
      return -1;
    }
  }
  return 0;
}

/* A padding of 1 (all sides), nd (both sides of each axis) or 2 * nd (all begins, then all
 * ends) values, each >= 0. */
static int attr_pad_nd(const GPOp *op, const GPAttrs *attrs, const char *key, int32_t nd,
                       int64_t pb[3], int64_t pe[3]) {
  int32_t n;
  const int64_t *v = gp_ops_attr_ints(op, attrs, key, &n);
  if (n != 1 && n != nd && n != 2 * nd) {
    gp_error_set(GP_ERR_TYPE, "%s %s must have 1, %d or %d values", key,
                 n < 0 ? "None" : gp_ops_ints(n, v).s, (int)nd, (int)(2 * nd));
    return -1;
  }
  for (int32_t i = 0; i < nd; i++) {
    pb[i] = v[n == 1 ? 0 : i];
    pe[i] = v[n == 1 ? 0 : n == nd ? i : nd + i];
    if (pb[i] < 0 || pe[i] < 0) {
      gp_error_set(GP_ERR_TYPE, "%s %s must be >= 0", key, gp_ops_ints(n, v).s);
      return -1;
    }
  }
  return 0;
}

static const int64_t k_one1[] = {1};
static const int64_t k_zero1[] = {0};
static const int64_t k_one3[] = {1, 1, 1};
static const int64_t k_zero3[] = {0, 0, 0};

#define CONV_ATTRS(one, zero, dl, kl)                                                            \
  {                                                                                              \
    GP_F_INTS("strides", one), GP_F_INTS("padding", zero), GP_F_INTS("dilation", one),           \
        GP_F_INT("groups", 1), GP_F_NONE("channels", GP_ATTR_INT),                               \
        GP_F_NONE("kernel_size", GP_ATTR_INTS), GP_F_STR("data_layout", dl),                     \
        GP_F_STR("kernel_layout", kl), GP_F_STR("out_layout", ""), GP_F_DTYPE_VOID("out_dtype"), \
  }
static const GPAttrField k_conv1d_attrs[] = CONV_ATTRS(k_one1, k_zero1, "NCW", "OIW");
static const GPAttrField k_conv3d_attrs[] = CONV_ATTRS(k_one3, k_zero3, "NCDHW", "OIDHW");

/* TVM v0.12's Conv{1,2,3}DTransposeAttrs (kernel_layout's I is data's channels, O the output
 * channels per group; by default IOW / IOHW / IODHW, the weight (C, channels / groups, k...)) */
#define CONVT_ATTRS(one, zero, dl, kl)                                                           \
  {                                                                                              \
    GP_F_NONE("channels", GP_ATTR_INT), GP_F_NONE("kernel_size", GP_ATTR_INTS),                  \
        GP_F_INTS("strides", one), GP_F_INTS("output_padding", zero),                            \
        GP_F_INTS("padding", zero), GP_F_INTS("dilation", one), GP_F_INT("groups", 1),           \
        GP_F_STR("data_layout", dl), GP_F_STR("kernel_layout", kl), GP_F_STR("out_layout", ""),  \
        GP_F_DTYPE_VOID("out_dtype"),                                                            \
  }
static const GPAttrField k_conv1d_transpose_attrs[] = CONVT_ATTRS(k_one1, k_zero1, "NCW", "IOW");
static const GPAttrField k_conv2d_transpose_attrs[] = CONVT_ATTRS(k_one2, k_zero2, "NCHW", "IOHW");
static const GPAttrField k_conv3d_transpose_attrs[] =
    CONVT_ATTRS(k_one3, k_zero3, "NCDHW", "IODHW");

static int conv_nd_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                       int32_t nargs, const GPType **out, int32_t nd, bool transpose) {
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  const GPType *weight = data ? gp_ops_tensor(args, 1, "weight") : NULL;
  if (!weight) return -1;
  const char *sp = k_spatial[nd];
  char dprim[8], kprim[8];
  snprintf(dprim, sizeof dprim, "NC%s", sp);
  snprintf(kprim, sizeof kprim, "OI%s", sp);
  int64_t strides[3], dilation[3], pb[3], pe[3], opad[3] = {0, 0, 0};
  if (attr_nd(op, attrs, "strides", nd, 1, strides) != 0 ||
      attr_nd(op, attrs, "dilation", nd, 1, dilation) != 0 ||
      attr_pad_nd(op, attrs, "padding", nd, pb, pe) != 0 ||
      (transpose && attr_nd(op, attrs, "output_padding", nd, 0, opad) != 0))
    return -1;
  int64_t groups = gp_ops_attr_int(op, attrs, "groups");
  if (groups < 1) {
    gp_error_set(GP_ERR_TYPE, "groups %lld must be >= 1", (long long)groups);
    return -1;
  }
  const char *out_layout_s = gp_ops_attr_str(op, attrs, "out_layout");
  GPLayout dl, kl, ol;
  if (gp_layout_parse(gp_ops_attr_str(op, attrs, "data_layout"), "data_layout", &dl) != 0 ||
      gp_layout_require(&dl, dprim, false, "data_layout") != 0 ||
      gp_layout_parse(gp_ops_attr_str(op, attrs, "kernel_layout"), "kernel_layout", &kl) != 0 ||
      gp_layout_require(&kl, kprim, false, "kernel_layout") != 0 ||
      gp_layout_parse(out_layout_s[0] ? out_layout_s : dl.text, "out_layout", &ol) != 0 ||
      gp_layout_require(&ol, dprim, false, "out_layout") != 0)
    return -1;
  int64_t d[26], w[26];
  if (gp_layout_to_primal(&dl, data, "data", d) != 0 ||
      gp_layout_to_primal(&kl, weight, "weight", w) != 0)
    return -1;
  int32_t nks;
  const int64_t *ks = gp_ops_attr_ints(op, attrs, "kernel_size", &nks);
  if (nks >= 0) {
    if (gp_ops_ints_check(ks, nks, nd, 1, "kernel_size") != 0) return -1;
    for (int32_t i = 0; i < nd; i++)
      if (w[P(sp[i])] != GP_DIM_ANY && w[P(sp[i])] != ks[i]) {
        gp_error_set(GP_ERR_TYPE, "kernel_size %s does not match weight (shape %s) in layout %s",
                     gp_ops_ints(nks, ks).s, gp_ops_shape(weight).s, kl.text);
        return -1;
      }
  }
  /* conv: weight (O, C / groups, k...); transpose: weight (C, O / groups, k...) */
  int64_t win = transpose ? w[P('I')] : gp_ops_dim_mul(w[P('I')], groups);
  int64_t channels = transpose ? gp_ops_dim_mul(w[P('O')], groups) : w[P('O')];
  if (d[P('C')] != GP_DIM_ANY && win != GP_DIM_ANY && d[P('C')] != win) {
    gp_error_set(GP_ERR_TYPE,
                 "input channels %lld of data (shape %s) do not match weight (shape %s, layout %s) "
                 "with groups %lld",
                 (long long)d[P('C')], gp_ops_shape(data).s, gp_ops_shape(weight).s, kl.text,
                 (long long)groups);
    return -1;
  }
  if (!transpose && channels != GP_DIM_ANY && channels % groups != 0) {
    gp_error_set(GP_ERR_TYPE, "output channels %lld of weight (shape %s) are not divisible by "
                              "groups %lld",
                 (long long)channels, gp_ops_shape(weight).s, (long long)groups);
    return -1;
  }
  if (transpose && d[P('C')] != GP_DIM_ANY && d[P('C')] % groups != 0) {
    gp_error_set(GP_ERR_TYPE, "input channels %lld of data (shape %s) are not divisible by "
                              "groups %lld",
                 (long long)d[P('C')], gp_ops_shape(data).s, (long long)groups);
    return -1;
  }
  if (!gp_ops_attr_none(op, attrs, "channels")) {
    int64_t c = gp_ops_attr_int(op, attrs, "channels");
    if (channels != GP_DIM_ANY && channels != c) {
      gp_error_set(GP_ERR_TYPE, "channels %lld does not match the %lld output channels of weight "
                                "(shape %s) with groups %lld",
                   (long long)c, (long long)channels, gp_ops_shape(weight).s, (long long)groups);
      return -1;
    }
    channels = c;
  }
  static const char *const dim_names[3] = {"depth", "height", "width"};
  int64_t o[26];
  for (int i = 0; i < 26; i++) o[i] = -2;
  o[P('N')] = d[P('N')];
  o[P('C')] = channels;
  for (int32_t i = 0; i < nd; i++) {
    int64_t in = d[P(sp[i])], k = w[P(sp[i])];
    const char *dn = dim_names[3 - nd + i];
    if (!transpose) {
      if (window_out(in, pb[i] + pe[i], k, dilation[i], strides[i], false, dn, data,
                     &o[P(sp[i])]) != 0)
        return -1;
      continue;
    }
    if (in == GP_DIM_ANY || k == GP_DIM_ANY) {
      o[P(sp[i])] = GP_DIM_ANY;
      continue;
    }
    int64_t v = (in - 1) * strides[i] - pb[i] - pe[i] + dilation[i] * (k - 1) + opad[i] + 1;
    if (v < 1) {
      gp_error_set(GP_ERR_TYPE, "the output %s %lld is empty: data (shape %s), weight (shape %s), "
                                "padding %lld + %lld",
                   dn, (long long)v, gp_ops_shape(data).s, gp_ops_shape(weight).s,
                   (long long)pb[i], (long long)pe[i]);
      return -1;
    }
    o[P(sp[i])] = v;
  }
  int64_t oshape[GP_LAYOUT_MAX];
  if (gp_layout_from_primal(&ol, o, oshape) != 0) return -1;
  DLDataType odt = gp_ops_attr_dtype(op, attrs, "out_dtype");
  if (odt.bits == 0) odt = data->tensor.dtype;
  return gp_ops_ret(odt, ol.n, oshape, out);
}

#define CONV_REL(name, nd, tr)                                                                   \
  static int name(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs, \
                  const GPType **out, void *user) {                                              \
    GP_UNUSED(user);                                                                             \
    return conv_nd_rel(op, attrs, args, nargs, out, nd, tr);                                     \
  }
CONV_REL(conv1d_rel, 1, false)
CONV_REL(conv3d_rel, 3, false)
CONV_REL(conv1d_transpose_rel, 1, true)
CONV_REL(conv2d_transpose_rel, 2, true)
CONV_REL(conv3d_transpose_rel, 3, true)

#define MAX_POOL_ATTRS(one, zero, l)                                                             \
  {                                                                                              \
    GP_F_REQ("pool_size", GP_ATTR_INTS), GP_F_INTS("strides", one), GP_F_INTS("dilation", one),  \
        GP_F_INTS("padding", zero), GP_F_STR("layout", l), GP_F_STR("out_layout", ""),           \
        GP_F_BOOL("ceil_mode", 0),                                                               \
  }
#define AVG_POOL_ATTRS(one, zero, l)                                                             \
  {                                                                                              \
    GP_F_REQ("pool_size", GP_ATTR_INTS), GP_F_INTS("strides", one), GP_F_INTS("dilation", one),  \
        GP_F_INTS("padding", zero), GP_F_STR("layout", l), GP_F_STR("out_layout", ""),           \
        GP_F_BOOL("ceil_mode", 0), GP_F_BOOL("count_include_pad", 0),                            \
  }
static const GPAttrField k_max_pool1d_attrs[] = MAX_POOL_ATTRS(k_one1, k_zero1, "NCW");
static const GPAttrField k_avg_pool1d_attrs[] = AVG_POOL_ATTRS(k_one1, k_zero1, "NCW");
static const GPAttrField k_max_pool3d_attrs[] = MAX_POOL_ATTRS(k_one3, k_zero3, "NCDHW");
static const GPAttrField k_avg_pool3d_attrs[] = AVG_POOL_ATTRS(k_one3, k_zero3, "NCDHW");

static int pool_nd_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                       int32_t nargs, const GPType **out, int32_t nd) {
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *data = gp_ops_tensor(args, 0, "data");
  if (!data) return -1;
  const char *sp = k_spatial[nd];
  GPLayout l;
  if (gp_layout_parse(gp_ops_attr_str(op, attrs, "layout"), "layout", &l) != 0) return -1;
  int32_t pos[3];
  for (int32_t i = 0; i < nd; i++) {
    pos[i] = gp_layout_index(&l, sp[i]);
    if (pos[i] < 0 || gp_layout_index(&l, (char)(sp[i] - 'A' + 'a')) >= 0) {
      gp_error_set(GP_ERR_TYPE, "layout \"%s\" must have the axes %s, which cannot be split", l.text,
                   sp);
      return -1;
    }
  }
  if (data->n != l.n) {
    gp_error_set(GP_ERR_TYPE, "data has rank %d (shape %s) but layout %s has %d axes", (int)data->n,
                 gp_ops_shape(data).s, l.text, (int)l.n);
    return -1;
  }
  int64_t pool[3], strides[3], dilation[3], pb[3], pe[3];
  if (attr_nd(op, attrs, "pool_size", nd, 1, pool) != 0 ||
      attr_nd(op, attrs, "strides", nd, 1, strides) != 0 ||
      attr_nd(op, attrs, "dilation", nd, 1, dilation) != 0 ||
      attr_pad_nd(op, attrs, "padding", nd, pb, pe) != 0)
    return -1;
  static const char *const dim_names[3] = {"depth", "height", "width"};
  bool ceil_mode = gp_ops_attr_bool(op, attrs, "ceil_mode");
  int64_t oshape[GP_OPS_MAX_RANK];
  memcpy(oshape, data->tensor.shape, (size_t)data->n * sizeof(int64_t));
  for (int32_t i = 0; i < nd; i++)
    if (window_out(data->tensor.shape[pos[i]], pb[i] + pe[i], pool[i], dilation[i], strides[i],
                   ceil_mode, dim_names[3 - nd + i], data, &oshape[pos[i]]) != 0)
      return -1;
  return gp_ops_ret(data->tensor.dtype, data->n, oshape, out);
}

static int pool1d_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                      int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  return pool_nd_rel(op, attrs, args, nargs, out, 1);
}

static int pool3d_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                      int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  return pool_nd_rel(op, attrs, args, nargs, out, 3);
}

/* ------------------------------------------------------------------------------------------ */
/* nn.batch_matmul: x (B, M, K) [transpose_a: (B, K, M)], y (B, K, N) [transpose_b: (B, N, K)] */
/* -> (B, M, N); a batch of 1 broadcasts.                                                      */

static const GPAttrField k_batch_matmul_attrs[] = {
    GP_F_DTYPE_VOID("out_dtype"),
    GP_F_BOOL("transpose_a", 0),
    GP_F_BOOL("transpose_b", 1),
};

static int batch_matmul_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                            int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *x = gp_ops_tensor(args, 0, "tensor_a");
  const GPType *y = x ? gp_ops_tensor(args, 1, "tensor_b") : NULL;
  if (!y) return -1;
  if (x->n != 3 || y->n != 3) {
    gp_error_set(GP_ERR_TYPE, "tensor_a (shape %s) and tensor_b (shape %s) must have rank 3",
                 gp_ops_shape(x).s, gp_ops_shape(y).s);
    return -1;
  }
  if (gp_ops_same_dtype(x, "tensor_a", y, "tensor_b") != 0) return -1;
  bool ta = gp_ops_attr_bool(op, attrs, "transpose_a"), tb = gp_ops_attr_bool(op, attrs, "transpose_b");
  const int64_t *xs = x->tensor.shape, *ys = y->tensor.shape;
  int64_t b1 = xs[0], b2 = ys[0], M = ta ? xs[2] : xs[1], K1 = ta ? xs[1] : xs[2];
  int64_t K2 = tb ? ys[2] : ys[1], N = tb ? ys[1] : ys[2];
  if (K1 != GP_DIM_ANY && K2 != GP_DIM_ANY && K1 != K2) {
    gp_error_set(GP_ERR_TYPE,
                 "the reduction dims differ: %lld of tensor_a (shape %s, transpose_a %d) and %lld "
                 "of tensor_b (shape %s, transpose_b %d)",
                 (long long)K1, gp_ops_shape(x).s, (int)ta, (long long)K2, gp_ops_shape(y).s, (int)tb);
    return -1;
  }
  int64_t b;
  if (b1 == 1) b = b2;
  else if (b2 == 1) b = b1;
  else if (b1 == GP_DIM_ANY || b2 == GP_DIM_ANY) b = b1 == GP_DIM_ANY ? b2 : b1;
  else if (b1 == b2) b = b1;
  else {
    gp_error_set(GP_ERR_TYPE, "batch dims %lld of tensor_a (shape %s) and %lld of tensor_b (shape "
                              "%s) do not broadcast",
                 (long long)b1, gp_ops_shape(x).s, (long long)b2, gp_ops_shape(y).s);
    return -1;
  }
  int64_t oshape[3] = {b, M, N};
  DLDataType odt = gp_ops_attr_dtype(op, attrs, "out_dtype");
  if (odt.bits == 0) odt = x->tensor.dtype;
  return gp_ops_ret(odt, 3, oshape, out);
}

/* ------------------------------------------------------------------------------------------ */
/* nn.prelu: data >= 0 ? data : alpha[c] * data, c the index along axis                        */

static const GPAttrField k_prelu_attrs[] = {GP_F_INT("axis", 1)};

static int prelu_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                     int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  return channel_vec_rel(op, attrs, args, nargs, out, "alpha");
}

/* ------------------------------------------------------------------------------------------ */
/* nn.nll_loss(predictions (N, C, d...), targets (N, d...), weights (C)): TVM's NLLLossRel      */

static const GPAttrField k_nll_loss_attrs[] = {
    GP_F_STR("reduction", "mean"),
    GP_F_INT("ignore_index", -100),
};

static int nll_loss_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                        int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 3) != 0) return -1;
  const GPType *p = gp_ops_tensor(args, 0, "predictions");
  const GPType *t = p ? gp_ops_tensor(args, 1, "targets") : NULL;
  const GPType *w = t ? gp_ops_tensor(args, 2, "weights") : NULL;
  if (!w) return -1;
  if (p->n < 2 || t->n != p->n - 1 || w->n != 1) {
    gp_error_set(GP_ERR_TYPE,
                 "predictions (shape %s) must be (N, C, d...), targets (shape %s) (N, d...) and "
                 "weights (shape %s) (C)",
                 gp_ops_shape(p).s, gp_ops_shape(t).s, gp_ops_shape(w).s);
    return -1;
  }
  const int64_t *ps = p->tensor.shape, *ts = t->tensor.shape;
  for (int32_t i = 0; i < t->n; i++) {
    int64_t a = ps[i == 0 ? 0 : i + 1], b = ts[i];
    if (a != GP_DIM_ANY && b != GP_DIM_ANY && a != b) {
      gp_error_set(GP_ERR_TYPE, "targets (shape %s) do not match predictions (shape %s) without axis 1",
                   gp_ops_shape(t).s, gp_ops_shape(p).s);
      return -1;
    }
  }
  if (ps[1] != GP_DIM_ANY && w->tensor.shape[0] != GP_DIM_ANY && ps[1] != w->tensor.shape[0]) {
    gp_error_set(GP_ERR_TYPE, "weights (shape %s) must have the %lld classes of predictions (shape %s)",
                 gp_ops_shape(w).s, (long long)ps[1], gp_ops_shape(p).s);
    return -1;
  }
  if (gp_ops_same_dtype(p, "predictions", w, "weights") != 0) return -1;
  DLDataType td = t->tensor.dtype;
  if (td.code != kDLInt && td.code != kDLUInt) {
    gp_error_set(GP_ERR_TYPE, "targets must be integers, got %s", gp_ops_dtype(td).s);
    return -1;
  }
  const char *red = gp_ops_attr_str(op, attrs, "reduction");
  if (!strcmp(red, "none")) return gp_ops_ret(p->tensor.dtype, t->n, ts, out);
  if (strcmp(red, "mean") != 0 && strcmp(red, "sum") != 0) {
    gp_error_set(GP_ERR_TYPE, "reduction \"%s\" must be \"mean\", \"sum\" or \"none\"", red);
    return -1;
  }
  return gp_ops_ret(p->tensor.dtype, 0, NULL, out);
}

/* ------------------------------------------------------------------------------------------ */
/* Backward inference (GPTypeFillFn): the argument types TVM's relations Assign from data and   */
/* the attrs when the argument's type is unknown.  Every hook needs data (argument 0) typed.    */

static const GPType *fill_data(const GPType *const *args, int32_t nargs, int32_t want) {
  if (nargs != want || !args[0] || args[0]->kind != GP_TYPE_TENSOR) return NULL;
  return args[0];
}

/* Every unknown argument but data is the vector (data.shape[axis]) of data's dtype (BiasAddRel,
 * PReluRel, BatchNormRel, LayerNormRel, InstanceNormRel, GroupNormRel). */
static int vec_fill(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                    const GPType **out, int32_t want) {
  const GPType *data = fill_data(args, nargs, want);
  if (!data) return 0;
  int32_t axis;
  const GPType *vec;
  if (gp_ops_axis(gp_ops_attr_int(op, attrs, "axis"), data->n, "axis", data, &axis) != 0 ||
      gp_ops_ret(data->tensor.dtype, 1, &data->tensor.shape[axis], &vec) != 0)
    return -1;
  for (int32_t i = 1; i < nargs; i++)
    if (!args[i]) out[i] = vec;
  return 0;
}

#define VEC_FILL(name, want)                                                                   \
  static int name(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,             \
                  int32_t nargs, const GPType **out) {                                         \
    return vec_fill(op, attrs, args, nargs, out, want);                                        \
  }
VEC_FILL(channel_vec_fill, 2) /* nn.bias_add, nn.prelu */
VEC_FILL(batch_norm_fill, 5)
VEC_FILL(norm_fill, 3) /* nn.layer_norm, nn.instance_norm, nn.group_norm */

/* Conv{1,2,3}DRel and Conv{1,2,3}DTransposeRel: with channels and kernel_size given, the weight
 * is (O: channels, I: C / groups, k...) for a convolution and (I: C, O: channels / groups, k...)
 * for a transposed one, C being data's channels, laid out in kernel_layout, of data's dtype.
 * (TVM refuses groups > 1 with an unknown conv2d weight, since it cannot tell a depthwise
 * weight from a grouped one; the layout letters decide that here, as the forward relation
 * reads them.) */
static int conv_fill(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                     int32_t nargs, const GPType **out, int32_t nd, bool transpose) {
  const GPType *data = fill_data(args, nargs, 2);
  if (!data || args[1]) return 0;
  int32_t nks;
  const int64_t *ks = gp_ops_attr_ints(op, attrs, "kernel_size", &nks);
  if (nks < 0 || gp_ops_attr_none(op, attrs, "channels")) return 0; /* TVM: weight needed */
  if (gp_ops_ints_check(ks, nks, nd, 1, "kernel_size") != 0) return -1;
  int64_t groups = gp_ops_attr_int(op, attrs, "groups");
  int64_t channels = gp_ops_attr_int(op, attrs, "channels");
  if (groups < 1 || channels < 1) {
    gp_error_set(GP_ERR_TYPE, "cannot infer weight: groups %lld and channels %lld must be >= 1",
                 (long long)groups, (long long)channels);
    return -1;
  }
  const char *sp = k_spatial[nd];
  char dprim[8], kprim[8];
  snprintf(dprim, sizeof dprim, "NC%s", sp);
  snprintf(kprim, sizeof kprim, "OI%s", sp);
  GPLayout dl, kl;
  if (gp_layout_parse(gp_ops_attr_str(op, attrs, "data_layout"), "data_layout", &dl) != 0 ||
      gp_layout_require(&dl, dprim, false, "data_layout") != 0 ||
      gp_layout_parse(gp_ops_attr_str(op, attrs, "kernel_layout"), "kernel_layout", &kl) != 0 ||
      gp_layout_require(&kl, kprim, false, "kernel_layout") != 0)
    return -1;
  int64_t d[26], w[26];
  if (gp_layout_to_primal(&dl, data, "data", d) != 0) return -1;
  int64_t c = d[P('C')];
  if (transpose && channels % groups != 0) {
    gp_error_set(GP_ERR_TYPE, "cannot infer weight: channels %lld are not divisible by groups %lld",
                 (long long)channels, (long long)groups);
    return -1;
  }
  if (!transpose && c != GP_DIM_ANY && c % groups != 0) {
    gp_error_set(GP_ERR_TYPE,
                 "cannot infer weight: the input channels %lld of data (shape %s) are not "
                 "divisible by groups %lld",
                 (long long)c, gp_ops_shape(data).s, (long long)groups);
    return -1;
  }
  for (int i = 0; i < 26; i++) w[i] = -2;
  w[P('O')] = transpose ? channels / groups : channels;
  w[P('I')] = transpose || c == GP_DIM_ANY ? c : c / groups;
  for (int32_t i = 0; i < nd; i++) w[P(sp[i])] = ks[i];
  int64_t wshape[GP_LAYOUT_MAX];
  if (gp_layout_from_primal(&kl, w, wshape) != 0) return -1;
  return gp_ops_ret(data->tensor.dtype, kl.n, wshape, &out[1]);
}

#define CONV_FILL(name, nd, tr)                                                                \
  static int name(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,             \
                  int32_t nargs, const GPType **out) {                                         \
    return conv_fill(op, attrs, args, nargs, out, nd, tr);                                     \
  }
CONV_FILL(conv1d_fill, 1, false)
CONV_FILL(conv2d_fill, 2, false)
CONV_FILL(conv3d_fill, 3, false)
CONV_FILL(conv1d_transpose_fill, 1, true)
CONV_FILL(conv2d_transpose_fill, 2, true)
CONV_FILL(conv3d_transpose_fill, 3, true)

/* DenseRel / MatmulRel: with units given, the weight is (units, K) ((K, units) for nn.matmul
 * without transpose_b), K the reduction dim of data, of data's dtype. */
static int dense_fill(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                      int32_t nargs, const GPType **out) {
  const GPType *data = fill_data(args, nargs, 2);
  if (!data || args[1] || gp_ops_attr_none(op, attrs, "units")) return 0;
  bool matmul = strcmp(op->name, "nn.matmul") == 0;
  bool ta = matmul && gp_ops_attr_bool(op, attrs, "transpose_a");
  bool tb = !matmul || gp_ops_attr_bool(op, attrs, "transpose_b");
  if (data->n < (ta ? 2 : 1)) {
    gp_error_set(GP_ERR_TYPE, "cannot infer weight: data (shape %s) must have rank >= %d",
                 gp_ops_shape(data).s, ta ? 2 : 1);
    return -1;
  }
  int64_t k = data->tensor.shape[data->n - (ta ? 2 : 1)];
  int64_t units = gp_ops_attr_int(op, attrs, "units");
  int64_t wshape[2] = {tb ? units : k, tb ? k : units};
  return gp_ops_ret(data->tensor.dtype, 2, wshape, &out[1]);
}

#define N_ATTRS(a) ((int32_t)GP_ARRAY_LEN(a))

void gp_ops_register_nn(void) {
  gp_ops_def("nn.conv2d", 2, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0, k_conv2d_attrs,
             N_ATTRS(k_conv2d_attrs), conv2d_rel, "2-d convolution (NCHW/OIHW, NHWC/HWIO, ...).");
  gp_ops_def("nn.dense", 2, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0, k_dense_attrs,
             N_ATTRS(k_dense_attrs), dense_rel, "Fully connected layer: data * weight^T.");
  gp_ops_def("nn.bias_add", 2, GP_PATTERN_BROADCAST, 0, k_bias_add_attrs,
             N_ATTRS(k_bias_add_attrs), bias_add_rel, "Add a 1-d bias along axis.");
  gp_ops_def("nn.batch_norm", 5, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0, k_batch_norm_attrs,
             N_ATTRS(k_batch_norm_attrs), batch_norm_rel,
             "Batch normalization (inference); returns (out, mean, var).");
  /* TVM marks dropout TOpIsStateful (random), so CSE and constant folding leave it alone */
  gp_ops_def("nn.dropout", 1, GP_PATTERN_OPAQUE, GP_OP_STATEFUL, k_dropout_attrs,
             N_ATTRS(k_dropout_attrs), dropout_rel, "Dropout; returns (out, mask).");
  gp_ops_def("nn.max_pool2d", 1, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0, k_max_pool2d_attrs,
             N_ATTRS(k_max_pool2d_attrs), pool2d_rel, "2-d max pooling.");
  gp_ops_def("nn.avg_pool2d", 1, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0, k_avg_pool2d_attrs,
             N_ATTRS(k_avg_pool2d_attrs), pool2d_rel, "2-d average pooling.");
  gp_ops_def("nn.global_avg_pool2d", 1, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0,
             k_global_pool2d_attrs, N_ATTRS(k_global_pool2d_attrs), global_pool2d_rel,
             "2-d global average pooling.");
  gp_ops_def("nn.softmax", 1, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0, k_softmax_attrs,
             N_ATTRS(k_softmax_attrs), softmax_rel, "Softmax along axis.");
  gp_ops_def("nn.lrn", 1, GP_PATTERN_OPAQUE, 0, k_lrn_attrs, N_ATTRS(k_lrn_attrs), lrn_rel,
             "Local response normalization along axis.");
  gp_ops_def("nn.batch_flatten", 1, GP_PATTERN_INJECTIVE, 0, NULL, 0, batch_flatten_rel,
             "Flatten all axes but the first.");
  gp_ops_def("nn.layer_norm", 3, GP_PATTERN_OPAQUE, 0, k_layer_norm_attrs,
             N_ATTRS(k_layer_norm_attrs), layer_norm_rel,
             "Layer normalization along axis; args data, gamma, beta.");
  gp_ops_def("nn.instance_norm", 3, GP_PATTERN_OPAQUE, 0, k_instance_norm_attrs,
             N_ATTRS(k_instance_norm_attrs), instance_norm_rel,
             "Instance normalization over the axes but batch (0) and channel (axis).");
  gp_ops_def("nn.group_norm", 3, GP_PATTERN_OPAQUE, 0, k_group_norm_attrs,
             N_ATTRS(k_group_norm_attrs), group_norm_rel,
             "Group normalization: channels at axis split into num_groups groups.");
  gp_ops_def("nn.l2_normalize", 1, GP_PATTERN_OPAQUE, 0, k_l2_normalize_attrs,
             N_ATTRS(k_l2_normalize_attrs), l2_normalize_rel,
             "x / sqrt(max(sum(x * x, axis), eps)).");
  gp_ops_def("nn.conv1d", 2, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0, k_conv1d_attrs,
             N_ATTRS(k_conv1d_attrs), conv1d_rel, "1-d convolution (NCW/OIW).");
  gp_ops_def("nn.conv3d", 2, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0, k_conv3d_attrs,
             N_ATTRS(k_conv3d_attrs), conv3d_rel, "3-d convolution (NCDHW/OIDHW).");
  gp_ops_def("nn.conv1d_transpose", 2, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0,
             k_conv1d_transpose_attrs, N_ATTRS(k_conv1d_transpose_attrs), conv1d_transpose_rel,
             "1-d transposed convolution (NCW; weight IOW).");
  gp_ops_def("nn.conv2d_transpose", 2, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0,
             k_conv2d_transpose_attrs, N_ATTRS(k_conv2d_transpose_attrs), conv2d_transpose_rel,
             "2-d transposed convolution (NCHW; weight IOHW).");
  gp_ops_def("nn.conv3d_transpose", 2, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0,
             k_conv3d_transpose_attrs, N_ATTRS(k_conv3d_transpose_attrs), conv3d_transpose_rel,
             "3-d transposed convolution (NCDHW; weight IODHW).");
  gp_ops_def("nn.batch_matmul", 2, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0, k_batch_matmul_attrs,
             N_ATTRS(k_batch_matmul_attrs), batch_matmul_rel,
             "Batched matrix product of rank-3 tensors (batch 1 broadcasts).");
  gp_ops_def("nn.matmul", 2, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0, k_matmul_attrs,
             N_ATTRS(k_matmul_attrs), matmul_rel,
             "Matrix product tensor_a * tensor_b, either side optionally transposed.");
  gp_ops_def("nn.log_softmax", 1, GP_PATTERN_OPAQUE, 0, k_softmax_attrs, N_ATTRS(k_softmax_attrs),
             softmax_rel, "log(softmax(x)) along axis.");
  gp_ops_def("nn.max_pool1d", 1, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0, k_max_pool1d_attrs,
             N_ATTRS(k_max_pool1d_attrs), pool1d_rel, "1-d max pooling.");
  gp_ops_def("nn.avg_pool1d", 1, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0, k_avg_pool1d_attrs,
             N_ATTRS(k_avg_pool1d_attrs), pool1d_rel, "1-d average pooling.");
  gp_ops_def("nn.max_pool3d", 1, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0, k_max_pool3d_attrs,
             N_ATTRS(k_max_pool3d_attrs), pool3d_rel, "3-d max pooling.");
  gp_ops_def("nn.avg_pool3d", 1, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0, k_avg_pool3d_attrs,
             N_ATTRS(k_avg_pool3d_attrs), pool3d_rel, "3-d average pooling.");
  gp_ops_def("nn.global_max_pool2d", 1, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0,
             k_global_pool2d_attrs, N_ATTRS(k_global_pool2d_attrs), global_pool2d_rel,
             "2-d global max pooling.");
  gp_ops_def("nn.prelu", 2, GP_PATTERN_BROADCAST, 0, k_prelu_attrs, N_ATTRS(k_prelu_attrs),
             prelu_rel, "Parametric ReLU: alpha (a vector along axis) scales the negatives.");
  gp_ops_def("nn.nll_loss", 3, GP_PATTERN_OUT_ELEMWISE_FUSABLE, 0, k_nll_loss_attrs,
             N_ATTRS(k_nll_loss_attrs), nll_loss_rel,
             "Negative log likelihood loss: -predictions[n, targets[n, d...], d...] * "
             "weights[target], reduced by reduction (mean divides by the summed weights).");
  gp_ops_set_fill("nn.conv1d", conv1d_fill);
  gp_ops_set_fill("nn.conv2d", conv2d_fill);
  gp_ops_set_fill("nn.conv3d", conv3d_fill);
  gp_ops_set_fill("nn.conv1d_transpose", conv1d_transpose_fill);
  gp_ops_set_fill("nn.conv2d_transpose", conv2d_transpose_fill);
  gp_ops_set_fill("nn.conv3d_transpose", conv3d_transpose_fill);
  gp_ops_set_fill("nn.dense", dense_fill);
  gp_ops_set_fill("nn.matmul", dense_fill);
  gp_ops_set_fill("nn.bias_add", channel_vec_fill);
  gp_ops_set_fill("nn.prelu", channel_vec_fill);
  gp_ops_set_fill("nn.batch_norm", batch_norm_fill);
  gp_ops_set_fill("nn.layer_norm", norm_fill);
  gp_ops_set_fill("nn.instance_norm", norm_fill);
  gp_ops_set_fill("nn.group_norm", norm_fill);
}
