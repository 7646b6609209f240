/* cv_reduce.c -- ONNX converters: reductions, arg max/min, cumsum/cumprod, topk, hardmax.
 *
 * Reduce*: the axes come from the attribute `axes` (absent: every axis), or from ReduceSum-13 and
 * the others' opset 18 on, from the optional second input (a compile-time value).  Empty or
 * absent axes reduce every axis, unless noop_with_empty_axes=1 (then the data passes through).
 * keepdims defaults to 1.  The composite forms decompose as TVM's from_onnx does:
 *   ReduceL1 = sum(abs(x))            ReduceL2 = sqrt(sum(x * x))
 *   ReduceSumSquare = sum(x * x)      ReduceLogSum = log(sum(x))
 *   ReduceLogSumExp = log(sum(exp(x - m))) + m, m = max(x) (the numerically stable form).
 * ArgMax/ArgMin give Relay's int32 indices cast to ONNX's int64.  CumSum/CumProd with reverse
 * run between two reverses.  TopK sorts (sorted=0 allows any order, so sorted is what we give).
 * Hardmax is argmax along the axis turned into a one-hot with 1 - min(|iota - argmax|, 1).
 */
#include "frontend/onnx/onnx_impl.h"

#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Reductions                                                                                  */

typedef struct RAxes {
  bool all;  /* every axis (Relay's axis None) */
  bool noop; /* pass the data through */
  int32_t n;
  const int64_t *v;
} RAxes;

/* The axes of a Reduce* node; `input_since`: the opset from which they are an input. */
static int reduce_axes(OxImporter *im, const OxNode *n, int64_t input_since, RAxes *ax) {
  memset(ax, 0, sizeof *ax);
  int32_t cnt = -1;
  const int64_t *v = NULL;
  if (n->opset >= input_since) {
    GPExpr *a = ox_in(n, 1);
    if (a && ox_const_ints(im, a, "axes", &v, &cnt) != 0) return -1;
  } else {
    v = ox_attr_ints(n, "axes", &cnt);
  }
  if (cnt <= 0) {
    bool noop = n->opset >= input_since && ox_attr_int(n, "noop_with_empty_axes", 0) != 0;
    if (noop)
      ax->noop = true;
    else
      ax->all = true;
    return 0;
  }
  ax->n = cnt;
  ax->v = v;
  return 0;
}

static GPExpr *reduce_call(OxImporter *im, const char *op, GPExpr *x, const RAxes *ax, bool keep) {
  const char *keys[2];
  GPAttrValue vals[2];
  int32_t na = 0;
  keys[na] = "keepdims";
  vals[na++] = gp_attr_bool(keep);
  if (!ax->all) {
    keys[na] = "axis";
    vals[na++] = gp_attr_ints(ax->n, ax->v);
  }
  return ox_call(im, op, 1, &x, na, keys, vals);
}

typedef enum {
  R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LOGSUM, R_LOGSUMEXP, R_SUMSQUARE
} RKind;

static int cv_reduce(OxImporter *im, const OxNode *n, GPExpr **out, RKind kind, int64_t input_since) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  RAxes ax;
  if (reduce_axes(im, n, input_since, &ax) != 0) return -1;
  bool keep = ox_attr_int(n, "keepdims", 1) != 0;
  if (ax.noop) { /* "equivalent to the input tensor" (the spec), for every Reduce* */
    out[0] = x;
    return 0;
  }
  GPExpr *y = NULL;
  switch (kind) {
  case R_SUM: y = reduce_call(im, "sum", x, &ax, keep); break;
  case R_MEAN: y = reduce_call(im, "mean", x, &ax, keep); break;
  case R_MAX: y = reduce_call(im, "max", x, &ax, keep); break;
  case R_MIN: y = reduce_call(im, "min", x, &ax, keep); break;
  case R_PROD: y = reduce_call(im, "prod", x, &ax, keep); break;
  case R_L1: {
    GPExpr *a = ox_op1(im, "abs", x);
    y = a ? reduce_call(im, "sum", a, &ax, keep) : NULL;
    break;
  }
  case R_L2:
  case R_SUMSQUARE: {
    GPExpr *sq = ox_op2(im, "multiply", x, x);
    y = sq ? reduce_call(im, "sum", sq, &ax, keep) : NULL;
    if (y && kind == R_L2) y = ox_op1(im, "sqrt", y);
    break;
  }
  case R_LOGSUM: {
    GPExpr *s = reduce_call(im, "sum", x, &ax, keep);
    y = s ? ox_op1(im, "log", s) : NULL;
    break;
  }
  case R_LOGSUMEXP: {
    if (!ox_is_float(ox_dtype(x))) return ox_unsupported("ReduceLogSumExp of a non-float input");
    GPExpr *mk = reduce_call(im, "max", x, &ax, true);
    GPExpr *m = mk ? reduce_call(im, "max", x, &ax, keep) : NULL;
    GPExpr *d = m ? ox_op2(im, "subtract", x, mk) : NULL;
    GPExpr *e = d ? ox_op1(im, "exp", d) : NULL;
    GPExpr *s = e ? reduce_call(im, "sum", e, &ax, keep) : NULL;
    GPExpr *l = s ? ox_op1(im, "log", s) : NULL;
    y = l ? ox_op2(im, "add", l, m) : NULL;
    break;
  }
  }
  if (!y) return -1;
  out[0] = y;
  return 0;
}

#define CV_REDUCE(name, KIND, SINCE)                                                             \
  static int cv_##name(OxImporter *im, const OxNode *n, GPExpr **out) {                           \
    return cv_reduce(im, n, out, KIND, SINCE);                                                    \
  }
CV_REDUCE(reduce_sum, R_SUM, 13)
CV_REDUCE(reduce_mean, R_MEAN, 18)
CV_REDUCE(reduce_max, R_MAX, 18)
CV_REDUCE(reduce_min, R_MIN, 18)
CV_REDUCE(reduce_prod, R_PROD, 18)
CV_REDUCE(reduce_l1, R_L1, 18)
CV_REDUCE(reduce_l2, R_L2, 18)
CV_REDUCE(reduce_log_sum, R_LOGSUM, 18)
CV_REDUCE(reduce_log_sum_exp, R_LOGSUMEXP, 18)
CV_REDUCE(reduce_sum_square, R_SUMSQUARE, 18)
#undef CV_REDUCE

/* ------------------------------------------------------------------------------------------ */
/* ArgMax, ArgMin                                                                              */

static int cv_arg(OxImporter *im, const OxNode *n, GPExpr **out, const char *op) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  int64_t axis = ox_attr_int(n, "axis", 0);
  const char *keys[3] = {"axis", "keepdims", "select_last_index"};
  GPAttrValue vals[3] = {gp_attr_ints(1, &axis), gp_attr_bool(ox_attr_int(n, "keepdims", 1) != 0),
                         gp_attr_bool(ox_attr_int(n, "select_last_index", 0) != 0)};
  GPExpr *y = ox_call(im, op, 1, &x, 3, keys, vals);
  y = y ? ox_cast(im, y, GP_DT_I64) : NULL;
  if (!y) return -1;
  out[0] = y;
  return 0;
}

static int cv_argmax(OxImporter *im, const OxNode *n, GPExpr **out) { return cv_arg(im, n, out, "argmax"); }
static int cv_argmin(OxImporter *im, const OxNode *n, GPExpr **out) { return cv_arg(im, n, out, "argmin"); }

/* ------------------------------------------------------------------------------------------ */
/* CumSum, CumProd                                                                             */

static GPExpr *reverse_call(OxImporter *im, GPExpr *x, int64_t axis) {
  const char *key = "axis";
  GPAttrValue v = gp_attr_int(axis);
  return ox_call(im, "reverse", 1, &x, 1, &key, &v);
}

static int cv_scan(OxImporter *im, const OxNode *n, GPExpr **out, const char *op) {
  GPExpr *x = ox_req(n, 0), *a = x ? ox_req(n, 1) : NULL;
  if (!a) return -1;
  double av;
  if (ox_const_scalar(im, a, "axis", &av) != 0) return -1;
  int64_t axis = (int64_t)av;
  int32_t r = ox_rank(x);
  if (axis < -r || axis >= r || r == 0)
    return ox_invalid("axis %lld is out of range for rank %d", (long long)axis, (int)r);
  if (axis < 0) axis += r;
  bool rev = ox_attr_int(n, "reverse", 0) != 0;
  if (rev && !(x = reverse_call(im, x, axis))) return -1;
  const char *keys[2] = {"axis", "exclusive"};
  GPAttrValue vals[2] = {gp_attr_int(axis), gp_attr_bool(ox_attr_int(n, "exclusive", 0) != 0)};
  GPExpr *y = ox_call(im, op, 1, &x, 2, keys, vals);
  if (y && rev) y = reverse_call(im, y, axis);
  if (!y) return -1;
  out[0] = y;
  return 0;
}

static int cv_cumsum(OxImporter *im, const OxNode *n, GPExpr **out) { return cv_scan(im, n, out, "cumsum"); }
static int cv_cumprod(OxImporter *im, const OxNode *n, GPExpr **out) { return cv_scan(im, n, out, "cumprod"); }

/* ------------------------------------------------------------------------------------------ */
/* TopK                                                                                        */

static int cv_topk(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  int64_t k;
  if (n->opset < 10) {
    if (!ox_has_attr(n, "k")) return ox_invalid("attribute k is required");
    k = ox_attr_int(n, "k", 0);
  } else {
    GPExpr *ke = ox_req(n, 1);
    const int64_t *kv;
    int32_t kc;
    if (!ke || ox_const_ints(im, ke, "K", &kv, &kc) != 0) return -1;
    if (kc != 1) return ox_invalid("input K must hold one value, got %d", (int)kc);
    k = kv[0];
  }
  int64_t axis = ox_attr_int(n, "axis", -1);
  int32_t r = ox_rank(x);
  if (axis < -r || axis >= r) return ox_invalid("axis %lld is out of range for rank %d", (long long)axis, (int)r);
  if (axis < 0) axis += r;
  int64_t ext = ox_type(x)->tensor.shape[axis];
  if (k < 0 || (ext != GP_DIM_ANY && k > ext))
    return ox_invalid("K = %lld is outside [0, %lld]", (long long)k, (long long)ext);
  if (k == 0) return ox_unsupported("K = 0 (empty results)");
  bool largest = n->opset < 11 || ox_attr_int(n, "largest", 1) != 0;
  const char *keys[5] = {"k", "axis", "ret_type", "is_ascend", "dtype"};
  GPAttrValue vals[5] = {gp_attr_int(k), gp_attr_int(axis), gp_attr_str("both"), gp_attr_bool(!largest),
                         gp_attr_dtype(GP_DT_I64)};
  GPExpr *t = ox_call(im, "topk", 1, &x, 5, keys, vals);
  if (!t) return -1;
  for (int32_t i = 0; i < 2 && i < n->nout; i++)
    if (!(out[i] = ox_get_item(im, t, i))) return -1;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Hardmax                                                                                     */

/* one-hot along `axis` of x (rank r) at the first maximum. */
static GPExpr *hardmax_axis(OxImporter *im, GPExpr *x, int32_t axis) {
  const GPType *t = ox_type(x);
  int32_t r = t->n;
  int64_t ext = t->tensor.shape[axis];
  int64_t ax = axis;
  const char *keys[2] = {"axis", "keepdims"};
  GPAttrValue vals[2] = {gp_attr_ints(1, &ax), gp_attr_bool(true)};
  GPExpr *am = ox_call(im, "argmax", 1, &x, 2, keys, vals);
  if (!am) return NULL;
  /* iota along axis: shape (1, .., ext, .., 1), int32 */
  int64_t *shape = ox_alloc(im, (size_t)r * sizeof *shape);
  for (int32_t i = 0; i < r; i++) shape[i] = i == axis ? ext : 1;
  GPTensor *iota = gp_tensor_alloc(GP_DT_I32, r, shape, true);
  if (!iota) return NULL;
  for (int64_t i = 0; i < ext; i++) ((int32_t *)iota->dl.data)[i] = (int32_t)i;
  GPExpr *io = ox_constant(im, iota);
  GPExpr *d = io ? ox_op2(im, "subtract", io, am) : NULL;
  GPExpr *a = d ? ox_op1(im, "abs", d) : NULL;
  GPExpr *one = a ? ox_scalar(im, GP_DT_I32, 1) : NULL;
  GPExpr *m = one ? ox_op2(im, "minimum", a, one) : NULL;
  GPExpr *h = m ? ox_op2(im, "subtract", one, m) : NULL;
  return h ? ox_cast(im, h, t->tensor.dtype) : NULL;
}

static int cv_hardmax(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  int32_t r = ox_rank(x);
  int64_t axis = ox_attr_int(n, "axis", n->opset >= 13 ? -1 : 1);
  if (axis < -r || axis >= r) return ox_invalid("axis %lld is out of range for rank %d", (long long)axis, (int)r);
  if (axis < 0) axis += r;
  if (ox_static(x, "input") != 0) return -1;
  if (n->opset >= 13) {
    GPExpr *y = hardmax_axis(im, x, (int32_t)axis);
    if (!y) return -1;
    out[0] = y;
    return 0;
  }
  /* before 13: over the input coerced to 2-d at axis */
  const int64_t *s = ox_type(x)->tensor.shape;
  int64_t rows = 1, cols = 1;
  for (int32_t i = 0; i < r; i++) *(i < axis ? &rows : &cols) *= s[i];
  int64_t two[2] = {rows, cols};
  const char *key = "newshape";
  GPAttrValue v = gp_attr_ints(2, two);
  GPExpr *x2 = ox_call(im, "reshape", 1, &x, 1, &key, &v);
  GPExpr *h = x2 ? hardmax_axis(im, x2, 1) : NULL;
  if (!h) return -1;
  v = gp_attr_ints(r, s);
  GPExpr *y = ox_call(im, "reshape", 1, &h, 1, &key, &v);
  if (!y) return -1;
  out[0] = y;
  return 0;
}

const OxConverter ox_cv_reduce[] = {
    {"ReduceSum", NULL, 1, cv_reduce_sum},
    {"ReduceMean", NULL, 1, cv_reduce_mean},
    {"ReduceMax", NULL, 1, cv_reduce_max},
    {"ReduceMin", NULL, 1, cv_reduce_min},
    {"ReduceProd", NULL, 1, cv_reduce_prod},
    {"ReduceL1", NULL, 1, cv_reduce_l1},
    {"ReduceL2", NULL, 1, cv_reduce_l2},
    {"ReduceLogSum", NULL, 1, cv_reduce_log_sum},
    {"ReduceLogSumExp", NULL, 1, cv_reduce_log_sum_exp},
    {"ReduceSumSquare", NULL, 1, cv_reduce_sum_square},
    {"ArgMax", NULL, 1, cv_argmax},
    {"ArgMin", NULL, 1, cv_argmin},
    {"CumSum", NULL, 11, cv_cumsum},
    {"CumProd", NULL, 1, cv_cumprod},
    {"TopK", NULL, 1, cv_topk},
    {"Hardmax", NULL, 1, cv_hardmax},
    {NULL, NULL, 0, NULL},
};
