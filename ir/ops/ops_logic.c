/*
 * ops_logic.c -- built-in ops: comparisons, logical and bitwise ops, shifts, the floor/trunc
 * division family, where.  Kernels and their semantics: eval/k_logic.c.
 *
 * Type relations as TVM v0.12's: comparisons broadcast their two same-dtype arguments to a bool
 * result (BroadcastCompRel); the others broadcast to the arguments' dtype (BroadcastRel);
 * logical_not and bitwise_not keep the argument type (IdentityRel); where broadcasts condition,
 * x and y together, with x and y of one dtype, to x's dtype (WhereRel).  Patterns: broadcast for
 * the binary ops and where, elementwise for the unary ones (TOpPattern).
 */
#include "ops.h"

/* Binary comparisons: bool result. */
#define GP_COMPARE_OPS(X)                                                     \
  X("equal", "Elementwise lhs == rhs with broadcasting (bool).")              \
  X("not_equal", "Elementwise lhs != rhs with broadcasting (bool).")          \
  X("less", "Elementwise lhs < rhs with broadcasting (bool).")                \
  X("less_equal", "Elementwise lhs <= rhs with broadcasting (bool).")         \
  X("greater", "Elementwise lhs > rhs with broadcasting (bool).")             \
  X("greater_equal", "Elementwise lhs >= rhs with broadcasting (bool).")

/* Binary ops whose result has the arguments' dtype. */
#define GP_LOGIC_BINARY_OPS(X)                                                                  \
  X("logical_and", "Elementwise logical and with broadcasting.")                                \
  X("logical_or", "Elementwise logical or with broadcasting.")                                  \
  X("logical_xor", "Elementwise logical xor with broadcasting.")                                \
  X("bitwise_and", "Elementwise bitwise and with broadcasting (integers, bool).")               \
  X("bitwise_or", "Elementwise bitwise or with broadcasting (integers, bool).")                 \
  X("bitwise_xor", "Elementwise bitwise xor with broadcasting (integers, bool).")               \
  X("left_shift", "Elementwise lhs << rhs with broadcasting (integers).")                       \
  X("right_shift", "Elementwise arithmetic lhs >> rhs with broadcasting (integers).")           \
  X("floor_divide", "Elementwise division rounded toward -inf, with broadcasting.")             \
  X("floor_mod", "Elementwise remainder of floor_divide (sign of rhs), with broadcasting.")     \
  X("trunc_divide", "Elementwise division rounded toward zero, with broadcasting.")             \
  X("trunc_mod", "Elementwise remainder of trunc_divide (sign of lhs), with broadcasting.")     \
  X("mod", "Elementwise truncated remainder (C's fmod and %), with broadcasting.")

#define GP_LOGIC_UNARY_OPS(X)                                   \
  X("logical_not", "Elementwise logical not.")                  \
  X("bitwise_not", "Elementwise bitwise not (integers, bool).")

static int binary_args(const GPType *const *args, int32_t nargs, const GPType **out) {
  if (gp_ops_nargs(nargs, 2) != 0) return -1;
  const GPType *a = gp_ops_tensor(args, 0, "lhs");
  const GPType *b = a ? gp_ops_tensor(args, 1, "rhs") : NULL;
  if (!b) return -1;
  return gp_ops_broadcast(a, "lhs", b, "rhs", out);
}

static int broadcast_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                         int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(op), GP_UNUSED(attrs), GP_UNUSED(user);
  return binary_args(args, nargs, out);
}

static int broadcast_comp_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args,
                              int32_t nargs, const GPType **out, void *user) {
  GP_UNUSED(op), GP_UNUSED(attrs), GP_UNUSED(user);
  const GPType *t = NULL;
  if (binary_args(args, nargs, &t) != 0) return -1;
  return gp_ops_ret(GP_DT_BOOL, t->n, t->tensor.shape, out);
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

static int where_rel(const GPOp *op, const GPAttrs *attrs, const GPType *const *args, int32_t nargs,
                     const GPType **out, void *user) {
  GP_UNUSED(op), GP_UNUSED(attrs), GP_UNUSED(user);
  if (gp_ops_nargs(nargs, 3) != 0) return -1;
  const GPType *c = gp_ops_tensor(args, 0, "condition");
  const GPType *x = c ? gp_ops_tensor(args, 1, "x") : NULL;
  const GPType *y = x ? gp_ops_tensor(args, 2, "y") : NULL;
  if (!y) return -1;
  const GPType *xy = NULL, *cx = NULL;
  if (gp_ops_broadcast(x, "x", y, "y", &xy) != 0) return -1;
  /* the condition's shape with x's dtype, so that gp_ops_broadcast compares shapes only */
  if (gp_ops_ret(x->tensor.dtype, c->n, c->tensor.shape, &cx) != 0) return -1;
  if (gp_ops_broadcast(cx, "condition", xy, "x and y broadcast", out) != 0) return -1;
  return 0;
}

void gp_ops_register_logic(void) {
#define GP_DEF_CMP(name, help) gp_ops_def(name, 2, GP_PATTERN_BROADCAST, 0, NULL, 0, broadcast_comp_rel, help);
  GP_COMPARE_OPS(GP_DEF_CMP)
#undef GP_DEF_CMP
#define GP_DEF_BIN(name, help) gp_ops_def(name, 2, GP_PATTERN_BROADCAST, 0, NULL, 0, broadcast_rel, help);
  GP_LOGIC_BINARY_OPS(GP_DEF_BIN)
#undef GP_DEF_BIN
#define GP_DEF_UN(name, help) gp_ops_def(name, 1, GP_PATTERN_ELEMWISE, 0, NULL, 0, identity_rel, help);
  GP_LOGIC_UNARY_OPS(GP_DEF_UN)
#undef GP_DEF_UN
  gp_ops_def("where", 3, GP_PATTERN_BROADCAST, 0, NULL, 0, where_rel,
             "Select x where condition is true (nonzero), else y; the three broadcast together.");
}
