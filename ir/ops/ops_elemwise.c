/* ops_elemwise.c -- broadcasting binary arithmetic and elementwise unary ops. */
#include "ir/ops/ops.h"

/* Binary ops with numpy broadcasting (TVM's BroadcastRel): name, help. */
#define GP_BINARY_OPS(X)                                   \
  X("add", "Elementwise addition with broadcasting.")      \
  X("subtract", "Elementwise subtraction with broadcasting.") \
  X("multiply", "Elementwise multiplication with broadcasting.") \
  X("divide", "Elementwise division with broadcasting.")   \
  X("maximum", "Elementwise maximum with broadcasting.")   \
  X("minimum", "Elementwise minimum with broadcasting.")   \
  X("power", "Elementwise power with broadcasting.")

/* Unary ops whose result type is the argument type (TVM's IdentityRel): name, help. */
#define GP_UNARY_OPS(X)                               \
  X("negative", "Elementwise negation.")              \
  X("sqrt", "Elementwise square root.")               \
  X("rsqrt", "Elementwise reciprocal square root.")   \
  X("exp", "Elementwise exponential.")                \
  X("log", "Elementwise natural logarithm.")          \
  X("abs", "Elementwise absolute value.")             \
  X("sigmoid", "Elementwise logistic sigmoid.")       \
  X("tanh", "Elementwise hyperbolic tangent.")        \
  X("nn.relu", "Rectified linear unit: max(x, 0).")  \
  X("sin", "Elementwise sine.")                       \
  X("cos", "Elementwise cosine.")                     \
  X("tan", "Elementwise tangent.")                    \
  X("asin", "Elementwise arc sine.")                  \
  X("acos", "Elementwise arc cosine.")                \
  X("atan", "Elementwise arc tangent.")               \
  X("sinh", "Elementwise hyperbolic sine.")           \
  X("cosh", "Elementwise hyperbolic cosine.")         \
  X("asinh", "Elementwise inverse hyperbolic sine.")  \
  X("acosh", "Elementwise inverse hyperbolic cosine.") \
  X("atanh", "Elementwise inverse hyperbolic tangent.") \
  X("erf", "Elementwise Gauss error function.")       \
  X("floor", "Elementwise floor (round toward -inf).") \
  X("ceil", "Elementwise ceiling (round toward +inf).") \
  X("round", "Elementwise rounding to nearest, ties to even.") \
  X("trunc", "Elementwise truncation toward zero.")   \
  X("sign", "Elementwise sign: -1, 0 or 1 (NaN and signed zeros kept).")

/* Unary predicates whose result is bool of the argument's shape (TVM's IdentityCompRel). */
#define GP_UNARY_PRED_OPS(X)                                  \
  X("isnan", "Elementwise test for NaN (bool).")              \
  X("isinf", "Elementwise test for +-inf (bool).")            \
  X("isfinite", "Elementwise test for a finite value (bool).")

static int broadcast_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                         int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(op), GP_UNUSED(attrs), GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *a = gp_ops_tensor(args, 0, "lhs");
  const GPType *b = a ? gp_ops_tensor(args, 1, "rhs") : NULL;
  if (!b) return -1;
  return gp_ops_broadcast(a, "lhs", b, "rhs", out);
}

static int identity_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                        int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(op), GP_UNUSED(attrs), GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *d = gp_ops_tensor(args, 0, "data");
  if (!d) return -1;
  *out = d;
  return 0;
}

static int identity_comp_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                             int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(op), GP_UNUSED(attrs), GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *d = gp_ops_tensor(args, 0, "data");
  if (!d) return -1;
  return gp_ops_ret(GP_DT_BOOL, d->n, d->tensor.shape, out);
}

static int cast_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                    const GPType **out, void *user) {
  GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 1) != 0) return -1;
  const GPType *d = gp_ops_tensor(args, 0, "data");
  if (!d) return -1;
  DLDataType dt = gp_ops_attr_dtype(op, attrs, "dtype");
  if (dt.bits == 0) {
    gp_error_set(GP_ERR_TYPE, "attribute dtype is required (the target data type)");
    return -1;
  }
  return gp_ops_ret(dt, d->n, d->tensor.shape, out);
}

static const GPAttrField k_leaky_relu_attrs[] = {
    /* TVM's LeakyReluAttrs default (the Python wrapper passes 0.01 explicitly) */
    GP_F_FLOAT("alpha", 0.25),
};

static const GPAttrField k_clip_attrs[] = {
    GP_F_REQ("a_min", GP_ATTR_FLOAT),
    GP_F_REQ("a_max", GP_ATTR_FLOAT),
};

static const GPAttrField k_cast_attrs[] = {
    GP_F_REQ("dtype", GP_ATTR_DTYPE),
};

void gp_ops_register_elemwise(void) {
#define GP_DEF_BINARY(name, help) \
  gp_ops_def(name, 2, GP_PATTERN_BROADCAST, 0, NULL, 0, broadcast_rel, help);
  GP_BINARY_OPS(GP_DEF_BINARY)
#undef GP_DEF_BINARY
#define GP_DEF_UNARY(name, help) \
  gp_ops_def(name, 1, GP_PATTERN_ELEMWISE, 0, NULL, 0, identity_rel, help);
  GP_UNARY_OPS(GP_DEF_UNARY)
#undef GP_DEF_UNARY
#define GP_DEF_PRED(name, help) \
  gp_ops_def(name, 1, GP_PATTERN_ELEMWISE, 0, NULL, 0, identity_comp_rel, help);
  GP_UNARY_PRED_OPS(GP_DEF_PRED)
#undef GP_DEF_PRED
  gp_ops_def("nn.leaky_relu", 1, GP_PATTERN_ELEMWISE, 0, k_leaky_relu_attrs,
             (int32_t)GP_ARRAY_LEN(k_leaky_relu_attrs), identity_rel,
             "Leaky ReLU: x if x > 0 else alpha * x.");
  gp_ops_def("clip", 1, GP_PATTERN_ELEMWISE, 0, k_clip_attrs, (int32_t)GP_ARRAY_LEN(k_clip_attrs),
             identity_rel, "Clamp every element into [a_min, a_max].");
  gp_ops_def("cast", 1, GP_PATTERN_ELEMWISE, 0, k_cast_attrs, (int32_t)GP_ARRAY_LEN(k_cast_attrs),
             cast_rel, "Convert every element to dtype.");
}
