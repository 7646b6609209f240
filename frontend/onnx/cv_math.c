/*
 * cv_math.c -- ONNX converters: elementwise math, logic, comparison, cast, and the activation
 * functions that decompose into elementwise Relay ops (as TVM's from_onnx maps them).
 *
 * Direct maps: Abs Neg Sqrt Exp Log Sigmoid Tanh Floor Ceil Round Sign Erf Sin Cos Tan Asin Acos
 * Atan Sinh Cosh Asinh Acosh Atanh IsNaN Not, Add Sub Mul Div, Equal Less LessOrEqual Greater
 * GreaterOrEqual, And Or Xor, BitwiseAnd BitwiseOr BitwiseXor BitwiseNot, BitShift, Where,
 * LeakyRelu, Cast, CastLike.
 * Decomposed: Reciprocal (1 / x), IsInf (isinf and a sign test), Pow (mixed dtypes: computed in
 * the float one, the result in the base's dtype), Mod (floor_mod, or mod with fmod=1), Max Min
 * Mean (folds over the inputs), Clip (clip for the attrs of opsets < 11; maximum/minimum with
 * the optional inputs from 11, which keeps integers exact), Elu Selu Celu ThresholdedRelu
 * HardSigmoid HardSwish Softplus Softsign Mish Gelu PRelu Shrink Swish.
 */
#include "frontend/onnx/onnx_impl.h"
#include "ir/ops/ops.h"

#include <math.h>
#include <string.h>

/* A 0-d constant of e's dtype. */
static GPExpr *sc(OxImporter *im, GPExpr *like, double v) { return ox_scalar(im, ox_dtype(like), v); }

/* The builders below chain: a NULL argument (an earlier failure) gives NULL, error kept. */
static GPExpr *op1(OxImporter *im, const char *op, GPExpr *a) { return a ? ox_op1(im, op, a) : NULL; }
static GPExpr *op2(OxImporter *im, const char *op, GPExpr *a, GPExpr *b) {
  return a && b ? ox_op2(im, op, a, b) : NULL;
}
static GPExpr *mulc(OxImporter *im, GPExpr *a, double c) { return a ? op2(im, "multiply", a, sc(im, a, c)) : NULL; }
static GPExpr *addc(OxImporter *im, GPExpr *a, double c) { return a ? op2(im, "add", a, sc(im, a, c)) : NULL; }
static GPExpr *relu(OxImporter *im, GPExpr *a) { return a ? op2(im, "maximum", a, sc(im, a, 0)) : NULL; }
static GPExpr *clamp01(OxImporter *im, GPExpr *a) {
  return a ? op2(im, "minimum", op2(im, "maximum", a, sc(im, a, 0)), sc(im, a, 1)) : NULL;
}
/* Error unless e is a float tensor (the op is only defined on floats). */
static int need_float(const GPExpr *e, const char *what) {
  if (ox_is_float(ox_dtype(e))) return 0;
  char b[24];
  return ox_unsupported("%s: dtype %s (a float dtype is required)", what, gp_dtype_str(ox_dtype(e), b));
}

/* ------------------------------------------------------------------------------------------ */
/* Broadcasting before opset 7                                                                 */

static bool same_shape(const GPType *a, const GPType *b) {
  if (a->n != b->n) return false;
  for (int32_t i = 0; i < a->n; i++)
    if (a->tensor.shape[i] != b->tensor.shape[i]) return false;
  return true;
}

/* The second operand of a binary op of opsets 1 to 6 (Add Sub Mul Div Pow, And Or Xor, Equal
 * Greater Less; Gemm's C), as numpy broadcasting needs it.  Without broadcast=1 the shapes must
 * be equal.  With it, B's shape must be a contiguous run of A's starting at `axis` (default:
 * A's last dims), or B holds one element; B is reshaped to B's dims followed by a 1 for each of
 * A's dims after the run, which numpy then aligns with A.  Other opsets: b unchanged. */
GPExpr *ox_legacy_bcast(OxImporter *im, const OxNode *n, GPExpr *a, GPExpr *b) {
  if (!a || !b || n->opset >= 7) return b;
  const GPType *ta = ox_type(a), *tb = ox_type(b);
  if (!ox_attr_int(n, "broadcast", 0)) {
    if (same_shape(ta, tb)) return b;
    return (void)ox_invalid("input B of shape %s differs from A's %s and broadcast is 0 (opset %d: no "
                            "implicit broadcasting)", gp_ops_shape(tb).s, gp_ops_shape(ta).s, (int)n->opset),
           NULL;
  }
  if (ox_static(a, "input A") != 0 || ox_static(b, "input B") != 0) return NULL;
  int64_t numel = 1;
  for (int32_t i = 0; i < tb->n; i++) numel *= tb->tensor.shape[i];
  if (numel == 1 && tb->n <= ta->n) return b; /* a scalar: numpy broadcasts it as is */
  int32_t ra = ta->n, rb = tb->n;
  int64_t axis = ox_has_attr(n, "axis") ? ox_attr_int(n, "axis", 0) : ra - rb;
  if (axis < 0) axis += ra;
  bool ok = rb <= ra && axis >= 0 && axis + rb <= ra;
  for (int32_t i = 0; ok && i < rb; i++) ok = tb->tensor.shape[i] == ta->tensor.shape[axis + i];
  if (!ok)
    return (void)ox_invalid("input B of shape %s is not a run of A's shape %s at axis %lld (opset %d "
                            "broadcasting)", gp_ops_shape(tb).s, gp_ops_shape(ta).s, (long long)axis,
                            (int)n->opset),
           NULL;
  int64_t shape[GP_OX_MAX_RANK];
  int32_t nr = (int32_t)(ra - axis);
  for (int32_t i = 0; i < nr; i++) shape[i] = i < rb ? tb->tensor.shape[i] : 1;
  if (nr == rb) return b;
  const char *keys[] = {"newshape"};
  GPAttrValue vals[] = {gp_attr_ints(nr, shape)};
  return ox_call(im, "reshape", 1, &b, 1, keys, vals);
}

/* Sum, Max, Min, Mean before opset 8 take inputs of one shape (no broadcasting). */
int ox_legacy_same_shapes(const OxNode *n, GPExpr *const *in, int32_t count) {
  if (n->opset >= 8) return 0;
  for (int32_t i = 1; i < count; i++)
    if (in[i] && in[0] && !same_shape(ox_type(in[0]), ox_type(in[i])))
      return ox_invalid("input %d of shape %s differs from input 0's %s (opset %d: no broadcasting)", (int)i,
                        gp_ops_shape(ox_type(in[i])).s, gp_ops_shape(ox_type(in[0])).s, (int)n->opset);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* One input, one Relay op; two inputs, one Relay op.                                          */

#define OX_UNARY(X)                \
  X(Abs, "abs")                    \
  X(Neg, "negative")               \
  X(Sqrt, "sqrt")                  \
  X(Exp, "exp")                    \
  X(Log, "log")                    \
  X(Sigmoid, "sigmoid")            \
  X(Tanh, "tanh")                  \
  X(Floor, "floor")                \
  X(Ceil, "ceil")                  \
  X(Round, "round")                \
  X(Sign, "sign")                  \
  X(Erf, "erf")                    \
  X(Sin, "sin")                    \
  X(Cos, "cos")                    \
  X(Tan, "tan")                    \
  X(Asin, "asin")                  \
  X(Acos, "acos")                  \
  X(Atan, "atan")                  \
  X(Sinh, "sinh")                  \
  X(Cosh, "cosh")                  \
  X(Asinh, "asinh")                \
  X(Acosh, "acosh")                \
  X(Atanh, "atanh")                \
  X(IsNaN, "isnan")                \
  X(Not, "logical_not")            \
  X(BitwiseNot, "bitwise_not")

#define OX_BINARY(X)                          \
  X(Add, "add")                               \
  X(Sub, "subtract")                          \
  X(Mul, "multiply")                          \
  X(Div, "divide")                            \
  X(Equal, "equal")                           \
  X(Less, "less")                             \
  X(LessOrEqual, "less_equal")                \
  X(Greater, "greater")                       \
  X(GreaterOrEqual, "greater_equal")          \
  X(And, "logical_and")                       \
  X(Or, "logical_or")                         \
  X(Xor, "logical_xor")                       \
  X(BitwiseAnd, "bitwise_and")                \
  X(BitwiseOr, "bitwise_or")                  \
  X(BitwiseXor, "bitwise_xor")

#define OX_DEF_UNARY(onnx, relay)                                      \
  static int cv_##onnx(OxImporter *im, const OxNode *n, GPExpr **out) { \
    GPExpr *x = ox_req(n, 0);                                          \
    if (!x) return -1;                                                 \
    out[0] = ox_op1(im, relay, x);                                     \
    return out[0] ? 0 : -1;                                            \
  }
OX_UNARY(OX_DEF_UNARY)
#undef OX_DEF_UNARY

#define OX_DEF_BINARY(onnx, relay)                                     \
  static int cv_##onnx(OxImporter *im, const OxNode *n, GPExpr **out) { \
    GPExpr *a = ox_req(n, 0), *b = a ? ox_req(n, 1) : NULL;            \
    if (!b || !(b = ox_legacy_bcast(im, n, a, b))) return -1;          \
    out[0] = ox_op2(im, relay, a, b);                                  \
    return out[0] ? 0 : -1;                                            \
  }
OX_BINARY(OX_DEF_BINARY)
#undef OX_DEF_BINARY

/* ------------------------------------------------------------------------------------------ */
/* Arithmetic                                                                                  */

static int cv_Reciprocal(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  GPExpr *one = x ? sc(im, x, 1) : NULL;
  out[0] = one ? ox_op2(im, "divide", one, x) : NULL;
  return out[0] ? 0 : -1;
}

/* Pow(X: T, Y: T1) -> T.  Same dtypes: power.  A float and an integer: computed in the float
 * dtype (the integer operand cast to it), the result cast to X's dtype (truncated toward zero
 * for an integer X, as numpy's astype of the float result).  Two integer dtypes: in int64. */
static int cv_Pow(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *y = x ? ox_req(n, 1) : NULL;
  if (!y || !(y = ox_legacy_bcast(im, n, x, y))) return -1;
  DLDataType tx = ox_dtype(x), ty = ox_dtype(y);
  if (gp_dtype_eq(tx, ty)) {
    out[0] = ox_op2(im, "power", x, y);
    return out[0] ? 0 : -1;
  }
  DLDataType ct = ox_is_float(tx) ? tx : ox_is_float(ty) ? ty : GP_DT_I64;
  GPExpr *xc = ox_cast(im, x, ct), *yc = xc ? ox_cast(im, y, ct) : NULL;
  GPExpr *p = yc ? ox_op2(im, "power", xc, yc) : NULL;
  out[0] = p ? ox_cast(im, p, tx) : NULL;
  return out[0] ? 0 : -1;
}

/* Mod: fmod = 0 -> floor_mod (Python's %, the sign of the divisor); fmod = 1 -> mod (C's fmod,
 * the sign of the dividend). */
static int cv_Mod(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *a = ox_req(n, 0), *b = a ? ox_req(n, 1) : NULL;
  if (!b) return -1;
  int64_t fm = ox_attr_int(n, "fmod", 0);
  if (fm != 0 && fm != 1) return ox_invalid("attribute fmod is %lld (0 or 1)", (long long)fm);
  out[0] = ox_op2(im, fm ? "mod" : "floor_mod", a, b);
  return out[0] ? 0 : -1;
}

/* Max, Min, Mean, (Sum is cv_core's): a left fold with multi-way broadcasting. */
static GPExpr *fold(OxImporter *im, const OxNode *n, const char *op) {
  GPExpr *acc = ox_req(n, 0), *first = acc;
  for (int32_t i = 1; acc && i < n->nin; i++) {
    GPExpr *e = ox_req(n, i);
    if (e && ox_legacy_same_shapes(n, (GPExpr *[]){first, e}, 2) != 0) return NULL;
    acc = e ? ox_op2(im, op, acc, e) : NULL;
  }
  return acc;
}
static int cv_Max(OxImporter *im, const OxNode *n, GPExpr **out) {
  out[0] = fold(im, n, "maximum");
  return out[0] ? 0 : -1;
}
static int cv_Min(OxImporter *im, const OxNode *n, GPExpr **out) {
  out[0] = fold(im, n, "minimum");
  return out[0] ? 0 : -1;
}
static int cv_Mean(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *s = fold(im, n, "add");
  GPExpr *k = s ? sc(im, s, (double)n->nin) : NULL;
  out[0] = k ? ox_op2(im, "divide", s, k) : NULL;
  return out[0] ? 0 : -1;
}

/* Clip before opset 11: attributes min/max (defaults -+FLT_MAX), TVM's clip. */
static int cv_Clip1(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  double lo = ox_attr_float(n, "min", -3.4028234663852886e38);
  double hi = ox_attr_float(n, "max", 3.4028234663852886e38);
  const char *keys[2] = {"a_min", "a_max"};
  GPAttrValue vals[2] = {{.kind = GP_ATTR_FLOAT, .f = lo}, {.kind = GP_ATTR_FLOAT, .f = hi}};
  out[0] = ox_call(im, "clip", 1, &x, 2, keys, vals);
  return out[0] ? 0 : -1;
}

/* Clip from opset 11: optional inputs min and max (0-d, x's dtype): maximum then minimum, exact
 * for every dtype; min > max gives max, as the spec says. */
static int cv_Clip11(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  GPExpr *lo = ox_in(n, 1), *hi = ox_in(n, 2), *r = x;
  if (lo) r = ox_op2(im, "maximum", r, lo);
  if (r && hi) r = ox_op2(im, "minimum", r, hi);
  out[0] = r;
  return r ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Logic                                                                                       */

static int cv_IsInf(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  int64_t neg = ox_attr_int(n, "detect_negative", 1), pos = ox_attr_int(n, "detect_positive", 1);
  GPExpr *inf = ox_op1(im, "isinf", x);
  if (!inf) return -1;
  if (neg && pos) {
    out[0] = inf;
    return 0;
  }
  /* one sign: isinf(x) and x < 0 (or x > 0); neither: isinf(x) and not isinf(x), all false */
  GPExpr *side = neg ? op2(im, "less", x, sc(im, x, 0)) : pos ? op2(im, "greater", x, sc(im, x, 0))
                                                            : op1(im, "logical_not", inf);
  out[0] = op2(im, "logical_and", inf, side);
  return out[0] ? 0 : -1;
}

static int cv_BitShift(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *a = ox_req(n, 0), *b = a ? ox_req(n, 1) : NULL;
  if (!b) return -1;
  const char *dir = ox_attr_str(im, n, "direction", "");
  const char *op = strcmp(dir, "LEFT") == 0 ? "left_shift" : strcmp(dir, "RIGHT") == 0 ? "right_shift" : NULL;
  if (!op) return ox_invalid("attribute direction is \"%s\" (LEFT or RIGHT)", dir);
  out[0] = ox_op2(im, op, a, b);
  return out[0] ? 0 : -1;
}

static int cv_Where(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *args[3];
  for (int32_t i = 0; i < 3; i++)
    if (!(args[i] = ox_req(n, i))) return -1;
  out[0] = ox_call(im, "where", 3, args, 0, NULL, NULL);
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Cast                                                                                        */

/* Cast to dt.  Relay's cast to a float8 type saturates (ONNX's default, saturate=1); with
 * saturate=0 (opset 19) a value that rounds beyond the largest finite one, or an infinity,
 * becomes infinity (float8_e5m2, with its sign) or NaN: where(|x| beyond the rounding
 * boundary, that value, cast(x)).  The boundary is halfway to the next binade's first value:
 * beyond it for e4m3fn (448's mantissa is even, so the tie rounds down to it), from it on for
 * the others (their largest mantissa is odd). */
static GPExpr *cast_to(OxImporter *im, const OxNode *n, GPExpr *x, DLDataType dt) {
  const char *rm = ox_attr_str(im, n, "round_mode", "up");
  if (dt.code == GP_DL_FLOAT8_E8M0FNU && rm && strcmp(rm, "up") != 0) {
    gp_error_set(GP_ERR_UNSUPPORTED, "Cast to FLOAT8E8M0 with round_mode '%s' (only 'up', the default, is "
                 "supported)", rm);
    return NULL;
  }
  GPExpr *y = ox_cast(im, x, dt);
  bool f8 = dt.code == GP_DL_FLOAT8_E4M3FN || dt.code == GP_DL_FLOAT8_E4M3FNUZ || dt.code == GP_DL_FLOAT8_E5M2 ||
            dt.code == GP_DL_FLOAT8_E5M2FNUZ;
  DLDataType xt = ox_dtype(x);
  if (!y || !f8 || ox_attr_int(n, "saturate", 1) != 0 || !ox_is_float(xt) || gp_dtype_eq(xt, dt)) return y;
  double bound = dt.code == GP_DL_FLOAT8_E4M3FN ? 464.0 : dt.code == GP_DL_FLOAT8_E4M3FNUZ ? 248.0 : 61440.0;
  GPExpr *ax = ox_op1(im, "abs", x);
  GPExpr *far = ax ? ox_op2(im, dt.code == GP_DL_FLOAT8_E4M3FN ? "greater" : "greater_equal", ax,
                            ox_scalar(im, xt, bound)) : NULL;
  GPExpr *ov;
  if (dt.code == GP_DL_FLOAT8_E5M2) {
    GPExpr *neg = ox_op2(im, "less", x, ox_scalar(im, xt, 0.0));
    ov = neg ? ox_call(im, "where", 3, (GPExpr *[]){neg, ox_scalar(im, dt, -INFINITY), ox_scalar(im, dt, INFINITY)},
                       0, NULL, NULL)
             : NULL;
  } else {
    ov = ox_scalar(im, dt, NAN);
  }
  return far && ov ? ox_call(im, "where", 3, (GPExpr *[]){far, ov, y}, 0, NULL, NULL) : NULL;
}

static int cv_Cast(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  if (!ox_has_attr(n, "to")) return ox_invalid("attribute to is required");
  DLDataType dt;
  if (ox_dtype_from_onnx((int32_t)ox_attr_int(n, "to", 0), &dt) != 0) return -1;
  out[0] = cast_to(im, n, x, dt);
  return out[0] ? 0 : -1;
}

static int cv_CastLike(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *like = x ? ox_req(n, 1) : NULL;
  if (!like) return -1;
  out[0] = cast_to(im, n, x, ox_dtype(like));
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Activations                                                                                 */

/* The float input of an activation (others are unsupported, naming the dtype). */
static GPExpr *fin(const OxNode *n) {
  GPExpr *x = ox_req(n, 0);
  return x && need_float(x, "input X") == 0 ? x : NULL;
}
static GPExpr *where3(OxImporter *im, GPExpr *c, GPExpr *a, GPExpr *b) {
  return c && a && b ? ox_call(im, "where", 3, (GPExpr *[]){c, a, b}, 0, NULL, NULL) : NULL;
}
#define DONE(e) return (out[0] = (e)) ? 0 : -1

static int cv_LeakyRelu(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  const char *keys[1] = {"alpha"};
  GPAttrValue vals[1] = {{.kind = GP_ATTR_FLOAT, .f = ox_attr_float(n, "alpha", 0.01)}};
  DONE(ox_call(im, "nn.leaky_relu", 1, &x, 1, keys, vals));
}

/* x > 0 ? x : alpha * (exp(x) - 1) */
static GPExpr *elu(OxImporter *im, GPExpr *x, double alpha) {
  GPExpr *neg = mulc(im, addc(im, op1(im, "exp", x), -1), alpha);
  return where3(im, op2(im, "greater", x, sc(im, x, 0)), x, neg);
}

static int cv_Elu(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = fin(n);
  if (!x) return -1;
  DLDataType xt = ox_dtype(x); /* bfloat16: in float32, rounded once (as Celu) */
  if (xt.code == kDLBfloat) x = ox_cast(im, x, GP_DT_F32);
  GPExpr *y = x ? elu(im, x, ox_attr_float(n, "alpha", 1.0)) : NULL;
  DONE(y ? ox_cast(im, y, xt) : NULL);
}

static int cv_Selu(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = fin(n);
  if (!x) return -1;
  double alpha = ox_attr_float(n, "alpha", 1.67326319217681884765625);
  double gamma = ox_attr_float(n, "gamma", 1.05070102214813232421875);
  DONE(mulc(im, elu(im, x, alpha), gamma));
}

/* max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) */
static int cv_Celu(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = fin(n);
  if (!x) return -1;
  double alpha = ox_attr_float(n, "alpha", 1.0);
  /* bfloat16 computes in float32 and rounds once, as ONNX's reference (rounding every step to
   * bfloat16's 8 bits would be off by more than its rtol) */
  DLDataType xt = ox_dtype(x);
  if (xt.code == kDLBfloat) x = ox_cast(im, x, GP_DT_F32);
  GPExpr *e = mulc(im, addc(im, op1(im, "exp", op2(im, "divide", x, sc(im, x, alpha))), -1), alpha);
  GPExpr *y = op2(im, "add", relu(im, x), op2(im, "minimum", e, sc(im, x, 0)));
  DONE(y ? ox_cast(im, y, xt) : NULL);
}

static int cv_ThresholdedRelu(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = fin(n);
  if (!x) return -1;
  double alpha = ox_attr_float(n, "alpha", 1.0);
  DONE(where3(im, op2(im, "greater", x, sc(im, x, alpha)), x, sc(im, x, 0)));
}

static int cv_HardSigmoid(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = fin(n);
  if (!x) return -1;
  double alpha = ox_attr_float(n, "alpha", 0.2), beta = ox_attr_float(n, "beta", 0.5);
  DONE(clamp01(im, addc(im, mulc(im, x, alpha), beta)));
}

/* x * max(0, min(1, x / 6 + 0.5)) */
static int cv_HardSwish(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = fin(n);
  if (!x) return -1;
  DONE(op2(im, "multiply", x, clamp01(im, addc(im, mulc(im, x, 1.0 / 6.0), 0.5))));
}

/* log(exp(x) + 1) */
static GPExpr *softplus(OxImporter *im, GPExpr *x) { return op1(im, "log", addc(im, op1(im, "exp", x), 1)); }

static int cv_Softplus(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = fin(n);
  if (!x) return -1;
  DONE(softplus(im, x));
}

static int cv_Softsign(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = fin(n);
  if (!x) return -1;
  DONE(op2(im, "divide", x, addc(im, op1(im, "abs", x), 1)));
}

static int cv_Mish(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = fin(n);
  if (!x) return -1;
  DONE(op2(im, "multiply", x, op1(im, "tanh", softplus(im, x))));
}

/* approximate "none": 0.5 x (1 + erf(x / sqrt(2)));
 * "tanh": 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) */
static int cv_Gelu(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = fin(n);
  if (!x) return -1;
  const char *approx = ox_attr_str(im, n, "approximate", "none");
  GPExpr *inner;
  if (strcmp(approx, "none") == 0) {
    inner = op1(im, "erf", mulc(im, x, 0.70710678118654752440));
  } else if (strcmp(approx, "tanh") == 0) {
    GPExpr *x3 = op2(im, "multiply", op2(im, "multiply", x, x), x);
    inner = op1(im, "tanh", mulc(im, op2(im, "add", x, mulc(im, x3, 0.044715)), 0.79788456080286535588));
  } else {
    return ox_unsupported("attribute approximate is \"%s\" (none or tanh)", approx);
  }
  DONE(op2(im, "multiply", mulc(im, x, 0.5), addc(im, inner, 1)));
}

/* x < 0 ? slope * x : x, slope broadcast to x (unidirectionally). */
static int cv_PRelu(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *slope = x ? ox_req(n, 1) : NULL;
  if (!slope) return -1;
  const GPType *tx = ox_type(x), *ts = ox_type(slope);
  if (n->opset < 7 && ts->n == 1 && tx->n >= 2 && ts->tensor.shape[0] != 1) {
    /* opsets 1 and 6: a 1-d slope runs along the channel axis (1), not the last one */
    if (ts->tensor.shape[0] != tx->tensor.shape[1])
      return ox_invalid("input slope of %lld values for input X of shape %s (one per channel, axis 1)",
                        (long long)ts->tensor.shape[0], gp_ops_shape(tx).s);
    int64_t shape[GP_OX_MAX_RANK];
    for (int32_t i = 0; i < tx->n - 1; i++) shape[i] = i == 0 ? ts->tensor.shape[0] : 1;
    const char *keys[] = {"newshape"};
    GPAttrValue vals[] = {gp_attr_ints(tx->n - 1, shape)};
    if (!(slope = ox_call(im, "reshape", 1, &slope, 1, keys, vals))) return -1;
    ts = ox_type(slope);
  }
  if (ts->n > tx->n)
    return ox_invalid("input slope of shape %s does not broadcast to input X of shape %s", gp_ops_shape(ts).s,
                      gp_ops_shape(tx).s);
  DONE(where3(im, op2(im, "less", x, sc(im, x, 0)), op2(im, "multiply", x, slope), x));
}

/* x < -lambd ? x + bias : x > lambd ? x - bias : 0 */
static int cv_Shrink(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  double lambd = ox_attr_float(n, "lambd", 0.5), bias = ox_attr_float(n, "bias", 0.0);
  GPExpr *inner = where3(im, op2(im, "greater", x, sc(im, x, lambd)), addc(im, x, -bias), sc(im, x, 0));
  DONE(where3(im, op2(im, "less", x, sc(im, x, -lambd)), addc(im, x, bias), inner));
}

/* x * sigmoid(alpha * x) */
static int cv_Swish(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = fin(n);
  if (!x) return -1;
  double alpha = ox_attr_float(n, "alpha", 1.0);
  DONE(op2(im, "multiply", x, op1(im, "sigmoid", alpha == 1.0 ? x : mulc(im, x, alpha))));
}

/* ------------------------------------------------------------------------------------------ */

#define OX_ENTRY(onnx, relay) {#onnx, NULL, 1, cv_##onnx},

const OxConverter ox_cv_math[] = {
    OX_UNARY(OX_ENTRY)
    OX_BINARY(OX_ENTRY)
    {"Reciprocal", NULL, 1, cv_Reciprocal},
    {"Pow", NULL, 1, cv_Pow},
    {"Mod", NULL, 1, cv_Mod},
    {"Max", NULL, 1, cv_Max},
    {"Min", NULL, 1, cv_Min},
    {"Mean", NULL, 1, cv_Mean},
    {"Clip", NULL, 1, cv_Clip1},
    {"Clip", NULL, 11, cv_Clip11},
    {"IsInf", NULL, 1, cv_IsInf},
    {"BitShift", NULL, 1, cv_BitShift},
    {"Where", NULL, 1, cv_Where},
    {"Cast", NULL, 1, cv_Cast},
    {"CastLike", NULL, 1, cv_CastLike},
    {"LeakyRelu", NULL, 1, cv_LeakyRelu},
    {"Elu", NULL, 1, cv_Elu},
    {"Selu", NULL, 1, cv_Selu},
    {"Celu", NULL, 1, cv_Celu},
    {"ThresholdedRelu", NULL, 1, cv_ThresholdedRelu},
    {"HardSigmoid", NULL, 1, cv_HardSigmoid},
    {"HardSwish", NULL, 1, cv_HardSwish},
    {"Softplus", NULL, 1, cv_Softplus},
    {"Softsign", NULL, 1, cv_Softsign},
    {"Mish", NULL, 1, cv_Mish},
    {"Gelu", NULL, 1, cv_Gelu},
    {"PRelu", NULL, 1, cv_PRelu},
    {"Shrink", NULL, 1, cv_Shrink},
    {"Swish", NULL, 1, cv_Swish},
    {NULL, NULL, 0, NULL},
};
