/* cv_core.c -- ONNX converters: the ops of the CNN models (Conv, Gemm, pools, BatchNorm, LRN,
 * Softmax, Dropout, Relu, Sum, Concat, Reshape, Flatten, ConstantOfShape, Constant, Identity),
 * mapped as TVM's from_onnx maps them. */
#include "frontend/onnx/onnx_impl.h"
#include "ir/ops/ops.h"

#include <string.h>

#define NKEYS(k) ((int32_t)GP_ARRAY_LEN(k))

/* ------------------------------------------------------------------------------------------ */
/* Conv and the pools (1-d to 3-d, auto_pad, ONNX's ceil_mode): frontend/onnx/cv_nn.c           */

int ox_nn_conv(OxImporter *im, const OxNode *n, GPExpr **out);
int ox_nn_max_pool(OxImporter *im, const OxNode *n, GPExpr **out);
int ox_nn_average_pool(OxImporter *im, const OxNode *n, GPExpr **out);
int ox_nn_global_max_pool(OxImporter *im, const OxNode *n, GPExpr **out);
int ox_nn_batch_norm_training(OxImporter *im, const OxNode *n, GPExpr **out);

static int cv_global_avg_pool(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  int32_t r = ox_rank(x);
  if (r < 3) return ox_invalid("GlobalAveragePool needs rank >= 3 (got %d)", (int)r);
  if (r == 4) {
    out[0] = ox_op1(im, "nn.global_avg_pool2d", x);
  } else {
    int64_t axes[64];
    for (int32_t i = 2; i < r; i++) axes[i - 2] = i;
    const char *k[] = {"axis", "keepdims"};
    GPAttrValue v[] = {gp_attr_ints(r - 2, axes), gp_attr_bool(true)};
    out[0] = ox_call(im, "mean", 1, &x, 2, k, v);
  }
  return out[0] ? 0 : -1;
}

static int cv_global_max_pool(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  int32_t r = ox_rank(x);
  if (r < 3) return ox_invalid("GlobalMaxPool needs rank >= 3 (got %d)", (int)r);
  if (gp_op_find("max")) {
    int64_t axes[64];
    for (int32_t i = 2; i < r; i++) axes[i - 2] = i;
    const char *k[] = {"axis", "keepdims"};
    GPAttrValue v[] = {gp_attr_ints(r - 2, axes), gp_attr_bool(true)};
    out[0] = ox_call(im, "max", 1, &x, 2, k, v);
    return out[0] ? 0 : -1;
  }
  return ox_nn_global_max_pool(im, n, out);
}

/* ------------------------------------------------------------------------------------------ */
/* Gemm, BatchNormalization, LRN, Softmax, Dropout                                             */

static GPExpr *transpose2(OxImporter *im, GPExpr *x) {
  int64_t perm[2] = {1, 0};
  const char *k[] = {"axes"};
  GPAttrValue v[] = {gp_attr_ints(2, perm)};
  return ox_call(im, "transpose", 1, &x, 1, k, v);
}

static int cv_gemm(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *a = ox_req(n, 0), *b = ox_req(n, 1), *c = ox_in(n, 2);
  if (!a || !b) return -1;
  if (ox_rank(a) != 2 || ox_rank(b) != 2)
    return ox_invalid("A and B must be 2-d (got ranks %d and %d)", (int)ox_rank(a), (int)ox_rank(b));
  double alpha = ox_attr_float(n, "alpha", 1.0), beta = ox_attr_float(n, "beta", 1.0);
  if (ox_attr_int(n, "transA", 0)) a = transpose2(im, a);
  if (!ox_attr_int(n, "transB", 0)) b = transpose2(im, b); /* nn.dense takes (N, K) */
  if (!a || !b) return -1;
  DLDataType dt = ox_dtype(a);
  if (alpha != 1.0) a = ox_op2(im, "multiply", a, ox_scalar(im, dt, alpha));
  GPExpr *y = ox_op2(im, "nn.dense", a, b);
  if (y && c) {
    if (!(c = ox_legacy_bcast(im, n, y, c))) return -1; /* opsets < 7: C by `broadcast` */
    if (beta != 1.0) c = ox_op2(im, "multiply", c, ox_scalar(im, ox_dtype(c), beta));
    y = ox_op2(im, "add", y, c);
  }
  out[0] = y;
  return y ? 0 : -1;
}

static int cv_batch_norm(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *args[5];
  for (int32_t i = 0; i < 5; i++)
    if (!(args[i] = ox_req(n, i))) return -1;
  if (ox_attr_int(n, "training_mode", 0)) return ox_nn_batch_norm_training(im, n, out);
  if (n->opset < 7 && ox_attr_int(n, "spatial", 1) == 0) return ox_unsupported("spatial=0");
  for (int32_t i = 1; i < n->nout; i++)
    if (*n->proto->output[i]) return ox_unsupported("the training outputs of BatchNormalization (output %d)", (int)i);
  const char *k[] = {"axis", "epsilon"};
  GPAttrValue v[] = {gp_attr_int(1), gp_attr_float(ox_attr_float(n, "epsilon", 1e-5))};
  GPExpr *bn = ox_call(im, "nn.batch_norm", 5, args, 2, k, v);
  out[0] = ox_get_item(im, bn, 0);
  return out[0] ? 0 : -1;
}

static int cv_lrn(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  if (!ox_has_attr(n, "size")) return ox_invalid("attribute 'size' is required");
  const char *k[] = {"size", "axis", "alpha", "beta", "bias"};
  GPAttrValue v[] = {gp_attr_int(ox_attr_int(n, "size", 1)), gp_attr_int(1),
                     gp_attr_float(ox_attr_float(n, "alpha", 1e-4)), gp_attr_float(ox_attr_float(n, "beta", 0.75)),
                     gp_attr_float(ox_attr_float(n, "bias", 1.0))};
  out[0] = ox_call(im, "nn.lrn", 1, &x, NKEYS(k), k, v);
  return out[0] ? 0 : -1;
}

static GPExpr *reshape_to(OxImporter *im, GPExpr *x, int32_t n, const int64_t *shape) {
  const char *k[] = {"newshape"};
  GPAttrValue v[] = {gp_attr_ints(n, shape)};
  return ox_call(im, "reshape", 1, &x, 1, k, v);
}

/* Reshape to a concrete shape (no Relay codes: a 0 is an empty dim, not a copy: allowzero). */
static GPExpr *reshape_exact(OxImporter *im, GPExpr *x, int32_t n, const int64_t *shape) {
  bool zero = false;
  for (int32_t i = 0; i < n; i++) zero |= shape[i] == 0;
  const char *k[] = {"newshape", "allowzero"};
  GPAttrValue v[] = {gp_attr_ints(n, shape), gp_attr_bool(true)};
  return ox_call(im, "reshape", 1, &x, zero ? 2 : 1, k, v);
}

/* Softmax before opset 13: the input is coerced to 2-d at `axis`. */
static int cv_softmax_old(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  int32_t r = ox_rank(x);
  int64_t axis = ox_attr_int(n, "axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r || (r > 0 && axis == r)) return ox_invalid("axis %lld out of range for rank %d", (long long)axis, (int)r);
  const char *k[] = {"axis"};
  GPAttrValue v[] = {gp_attr_int(-1)};
  if (axis == r - 1 || r == 0) {
    out[0] = ox_call(im, "nn.softmax", 1, &x, 1, k, v);
    return out[0] ? 0 : -1;
  }
  if (ox_static(x, "the input") != 0) return -1;
  int64_t d[2] = {1, 1};
  for (int32_t i = 0; i < r; i++) d[i >= axis] *= ox_shape(x)[i];
  GPExpr *y = ox_call(im, "nn.softmax", 1, (GPExpr *[]){reshape_exact(im, x, 2, d)}, 1, k, v);
  out[0] = y ? reshape_exact(im, y, r, ox_shape(x)) : NULL;
  return out[0] ? 0 : -1;
}

static int cv_softmax(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  const char *k[] = {"axis"};
  GPAttrValue v[] = {gp_attr_int(ox_attr_int(n, "axis", -1))};
  out[0] = ox_call(im, "nn.softmax", 1, &x, 1, k, v);
  return out[0] ? 0 : -1;
}

static int cv_dropout(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  if (n->opset >= 12 && ox_in(n, 2)) {
    double training;
    if (ox_const_scalar(im, ox_in(n, 2), "training_mode", &training) != 0) return -1;
    /* training with a ratio known to be 0 drops nothing: y = x / (1 - 0), the mask all true */
    double ratio = 0.5;
    if (training != 0 && ox_in(n, 1) && ox_const_scalar(im, ox_in(n, 1), "ratio", &ratio) != 0) return -1;
    if (training != 0 && ratio != 0) return ox_unsupported("training_mode=True (random dropout)");
  }
  if (n->opset < 7 && ox_attr_int(n, "is_test", 0) == 0) return ox_unsupported("is_test=0 (random dropout)");
  out[0] = x;
  if (n->nout > 1 && *n->proto->output[1]) {
    if (ox_static(x, "the input (for the mask output)") != 0) return -1;
    DLDataType mt = n->opset >= 10 ? GP_DT_BOOL : ox_dtype(x);
    GPTensor *t = gp_tensor_alloc(mt, ox_rank(x), ox_shape(x), true);
    int64_t cnt = 1;
    for (int32_t i = 0; i < ox_rank(x); i++) cnt *= ox_shape(x)[i];
    for (int64_t i = 0; i < cnt; i++) {
      if (mt.bits == 1) ((uint8_t *)t->dl.data)[i] = 1;
      else if (mt.code == kDLFloat && mt.bits == 32) ((float *)t->dl.data)[i] = 1.0f;
      else if (mt.code == kDLFloat && mt.bits == 64) ((double *)t->dl.data)[i] = 1.0;
      else {
        gp_release(t);
        return ox_unsupported("a mask output of dtype other than bool, float32, float64");
      }
    }
    out[1] = ox_constant(im, t);
    if (!out[1]) return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Relu, Sum, Concat, Reshape, Flatten                                                         */

static int cv_relu(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  out[0] = x ? ox_op1(im, "nn.relu", x) : NULL;
  return out[0] ? 0 : -1;
}

static int cv_sum(OxImporter *im, const OxNode *n, GPExpr **out) {
  if (n->nin < 1) return ox_invalid("Sum needs at least one input");
  GPExpr *acc = ox_req(n, 0), *first = acc;
  for (int32_t i = 1; acc && i < n->nin; i++) {
    GPExpr *b = ox_req(n, i);
    if (b && ox_legacy_same_shapes(n, (GPExpr *[]){first, b}, 2) != 0) return -1;
    acc = b ? ox_op2(im, "add", acc, b) : NULL;
  }
  out[0] = acc;
  return acc ? 0 : -1;
}

static int cv_concat(OxImporter *im, const OxNode *n, GPExpr **out) {
  if (n->nin < 1) return ox_invalid("Concat needs at least one input");
  GPExpr **xs = ox_alloc(im, (size_t)n->nin * sizeof *xs);
  for (int32_t i = 0; i < n->nin; i++)
    if (!(xs[i] = ox_req(n, i))) return -1;
  if (n->opset >= 4 && !ox_has_attr(n, "axis")) return ox_invalid("attribute 'axis' is required");
  const char *k[] = {"axis"};
  GPAttrValue v[] = {gp_attr_int(ox_attr_int(n, "axis", 1))};
  GPExpr *t = ox_tuple(im, n->nin, xs);
  out[0] = t ? ox_call(im, "concatenate", 1, &t, 1, k, v) : NULL;
  return out[0] ? 0 : -1;
}

static int reshape_common(OxImporter *im, GPExpr *x, int32_t ns, const int64_t *s, bool allowzero, GPExpr **out) {
  int32_t r = ox_rank(x);
  const int64_t *in = ox_shape(x);
  int64_t *shape = ox_alloc(im, (size_t)(ns ? ns : 1) * sizeof(int64_t));
  int32_t infer = -1;
  bool known = true;
  for (int32_t i = 0; i < r; i++) known &= in[i] != GP_DIM_ANY;
  int64_t prod = 1;
  for (int32_t i = 0; i < ns; i++) {
    int64_t d = s[i];
    if (d == 0 && !allowzero) {
      if (i >= r) return ox_invalid("shape[%d] is 0 (copy) but the input has rank %d", (int)i, (int)r);
      d = in[i];
    }
    if (d == -1) {
      if (infer >= 0) return ox_invalid("shape has more than one -1");
      infer = i;
    } else if (d < 0 && d != GP_DIM_ANY) {
      return ox_invalid("shape[%d] is %lld", (int)i, (long long)s[i]);
    }
    if (allowzero && d == 0 && infer >= 0) return ox_invalid("shape has both 0 and -1 with allowzero=1");
    shape[i] = d;
    if (d != -1) prod = gp_ops_dim_mul(prod, d);
    if (prod == GP_DIM_OVERFLOW) return ox_invalid("the element count of shape %s overflows", gp_ops_dims(ns, s).s);
  }
  if (!known) {
    /* Relay's codes: 0 copies a dim, -1 infers (allowzero false). */
    if (allowzero) return ox_unsupported("Reshape with allowzero=1 of an input with unknown dims");
    int64_t *codes = ox_alloc(im, (size_t)(ns ? ns : 1) * sizeof(int64_t));
    for (int32_t i = 0; i < ns; i++) codes[i] = s[i];
    out[0] = reshape_to(im, x, ns, codes);
    return out[0] ? 0 : -1;
  }
  int64_t total = 1; /* bounded: x has a valid tensor type */
  for (int32_t i = 0; i < r; i++) total = gp_ops_dim_mul(total, in[i]);
  if (infer >= 0) {
    if (prod == 0 || total % prod != 0)
      return ox_invalid("cannot reshape %lld elements into a shape with -1 and known product %lld", (long long)total,
                        (long long)prod);
    shape[infer] = total / prod;
  } else if (prod != total) {
    return ox_invalid("cannot reshape %lld elements into a shape of %lld elements", (long long)total, (long long)prod);
  }
  out[0] = reshape_exact(im, x, ns, shape);
  return out[0] ? 0 : -1;
}

static int cv_reshape(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  const int64_t *s;
  int32_t ns;
  if (n->opset < 5) {
    s = ox_attr_ints(n, "shape", &ns);
    if (!s) return ox_invalid("attribute 'shape' is required");
  } else if (ox_const_ints(im, ox_req(n, 1), "the shape input", &s, &ns) != 0) {
    return -1;
  }
  return reshape_common(im, x, ns, s, n->opset >= 14 && ox_attr_int(n, "allowzero", 0) != 0, out);
}

static int cv_flatten(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  int32_t r = ox_rank(x);
  int64_t axis = ox_attr_int(n, "axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r) return ox_invalid("axis %lld out of range for rank %d", (long long)ox_attr_int(n, "axis", 1), (int)r);
  if (axis == 1 && r >= 2) {
    out[0] = ox_op1(im, "nn.batch_flatten", x);
    return out[0] ? 0 : -1;
  }
  int64_t d[2] = {1, 1};
  for (int32_t i = 0; i < r; i++) d[i >= axis] = (d[i >= axis] == GP_DIM_ANY || ox_shape(x)[i] == GP_DIM_ANY) ? GP_DIM_ANY : d[i >= axis] * ox_shape(x)[i];
  if (d[0] == GP_DIM_ANY && d[1] == GP_DIM_ANY) return ox_unsupported("Flatten with unknown dims on both sides of axis");
  int64_t codes[2] = {d[0] == GP_DIM_ANY ? -1 : d[0], d[1] == GP_DIM_ANY ? -1 : d[1]};
  out[0] = reshape_to(im, x, 2, codes);
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* ConstantOfShape, Constant, Identity                                                         */

static int cv_constant_of_shape(OxImporter *im, const OxNode *n, GPExpr **out) {
  const int64_t *s;
  int32_t ns;
  if (ox_const_ints(im, ox_req(n, 0), "the shape input", &s, &ns) != 0) return -1;
  for (int32_t i = 0; i < ns; i++)
    if (s[i] < 0) return ox_invalid("shape[%d] is negative (%lld)", (int)i, (long long)s[i]);
  GPTensor *val = ox_attr_tensor(im, n, "value");
  GPExpr *fill;
  if (val) {
    int64_t cnt = 1;
    for (int32_t i = 0; i < val->dl.ndim; i++) cnt *= val->dl.shape[i];
    if (cnt != 1) return ox_invalid("attribute 'value' must hold one element (it has %lld)", (long long)cnt);
    GPTensor *sc = gp_tensor_alloc(val->dl.dtype, 0, NULL, true);
    memcpy(sc->dl.data, (char *)val->dl.data + val->dl.byte_offset, gp_dtype_bytes(val->dl.dtype));
    fill = ox_constant(im, sc);
  } else {
    if (gp_error_kind()) return -1;
    fill = ox_scalar(im, GP_DT_F32, 0.0);
  }
  if (!fill) return -1;
  const char *k[] = {"shape", "dtype"};
  GPAttrValue v[] = {gp_attr_ints(ns, s), gp_attr_dtype(ox_dtype(fill))};
  out[0] = ox_call(im, "full", 1, &fill, 2, k, v);
  return out[0] ? 0 : -1;
}

static int cv_constant(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPTensor *t = ox_attr_tensor(im, n, "value");
  if (t) {
    out[0] = ox_constant(im, gp_retain(t));
    return out[0] ? 0 : -1;
  }
  if (gp_error_kind()) return -1;
  int32_t c;
  if (ox_has_attr(n, "value_float")) {
    out[0] = ox_scalar(im, GP_DT_F32, ox_attr_float(n, "value_float", 0));
  } else if (ox_has_attr(n, "value_int")) {
    out[0] = ox_scalar(im, GP_DT_I64, (double)ox_attr_int(n, "value_int", 0));
    if (out[0]) ((int64_t *)((GPConstant *)out[0])->data->dl.data)[0] = ox_attr_int(n, "value_int", 0);
  } else if (ox_has_attr(n, "value_ints")) {
    const int64_t *v = ox_attr_ints(n, "value_ints", &c);
    out[0] = ox_ints_const(im, c < 0 ? 0 : c, v);
  } else if (ox_has_attr(n, "value_floats")) {
    const float *v = ox_attr_floats(n, "value_floats", &c);
    int64_t len = c < 0 ? 0 : c;
    GPTensor *ft = gp_tensor_alloc(GP_DT_F32, 1, &len, true);
    if (len) memcpy(ft->dl.data, v, (size_t)len * sizeof(float));
    out[0] = ox_constant(im, ft);
  } else if (ox_has_attr(n, "sparse_value")) {
    return ox_unsupported("Constant with a sparse_value");
  } else if (ox_has_attr(n, "value_string") || ox_has_attr(n, "value_strings")) {
    return ox_unsupported("string constants");
  } else {
    return ox_invalid("Constant has none of value, value_float(s), value_int(s)");
  }
  return out[0] ? 0 : -1;
}

static int cv_identity(OxImporter *im, const OxNode *n, GPExpr **out) {
  (void)im;
  out[0] = ox_req(n, 0);
  return out[0] ? 0 : -1;
}

const OxConverter ox_cv_core[] = {
    {"Conv", NULL, 1, ox_nn_conv},
    {"MaxPool", NULL, 1, ox_nn_max_pool},
    {"AveragePool", NULL, 1, ox_nn_average_pool},
    {"GlobalAveragePool", NULL, 1, cv_global_avg_pool},
    {"GlobalMaxPool", NULL, 1, cv_global_max_pool},
    {"Gemm", NULL, 1, cv_gemm},
    {"BatchNormalization", NULL, 1, cv_batch_norm},
    {"LRN", NULL, 1, cv_lrn},
    {"Softmax", NULL, 1, cv_softmax_old},
    {"Softmax", NULL, 13, cv_softmax},
    {"Dropout", NULL, 1, cv_dropout},
    {"Relu", NULL, 1, cv_relu},
    {"Sum", NULL, 1, cv_sum},
    {"Concat", NULL, 1, cv_concat},
    {"Reshape", NULL, 1, cv_reshape},
    {"Flatten", NULL, 1, cv_flatten},
    {"ConstantOfShape", NULL, 9, cv_constant_of_shape},
    {"Constant", NULL, 1, cv_constant},
    {"Identity", NULL, 1, cv_identity},
    {NULL, NULL, 0, NULL},
};
