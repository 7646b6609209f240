/* simplify_expr.c -- SimplifyExpr and SimplifyExprPostAlterOp (opt-level 0), TVM v0.12's
 * src/relay/transforms/simplify_expr.cc on the pattern layer (pattern_pass.h): each pass is
 * TVM's list of rewrites, in TVM's order, as a table of rules (pattern text, check, rewrite)
 * applied repeatedly until a round rewrites nothing (TVM's RewritePatterns fixed-point loop).
 *
 * SimplifyExpr: ConcretizeZerosLike, ConcretizeOnesLike, ConcretizeFullLike,
 * ConcretizeReshapeLike, ConcretizeCollapseSumLike, ConcretizeBroadcastToLike,
 * ConcretizeCastLike, SimplifyAdd, SimplifyRSqrt, EliminateIdentity, SimplifyReshape,
 * SimplifyTranspose, SimplifySameCast, SimplifyConsecutiveCast, FullElementwise,
 * SwitchAddMultiply, SimplifyAdjacentMultiplyOrAdd, SimplifyClipAndConsecutiveCast,
 * SimplifyCastClip.  Left out: TVM's SimplifyDQArgMax / ArgMin / ArgSort (they match
 * qnn.dequantize, which the op set does not have).
 * SimplifyExprPostAlterOp: EliminateIdentity, SimplifyReshape, SimplifySameCast,
 * SimplifyConsecutiveCast, SimplifyClipAndConsecutiveCast, SimplifyCastClip.
 *
 * Rounds.  TVM sweeps the whole graph once per rewrite, in order, and repeats the list until the
 * graph stops changing (at most 100 sweeps).  Here one round runs the host's driver once with
 * every rule (rule 0 claiming its matches first, so on one node the earlier rewrite wins as in
 * TVM; a rewrite that needs another's output gets it in the next round) and re-types the
 * result.  Each round is linear in the graph; the rounds stop at the first round that rewrites
 * nothing, or after `max_rounds` (config, default 16), noted in --explain.
 *
 * Differences from TVM, all refusals: SimplifyTranspose folds transpose / layout_transform pairs
 * whose layouts are plain permutations (NCHW -> NHWC), and a layout_transform pair that is an
 * exact inverse (A -> B -> A, blocked layouts too), but leaves TVM's rank-changing folds
 * (FoldRankChangingLayoutTrans: transpose + NCHW -> NCHW4c into one layout_transform) alone;
 * FullElementwise matches the arithmetic broadcast ops (add, subtract, multiply, divide,
 * maximum, minimum, power), not every kBroadcast op, and refuses a full whose fill value's
 * dtype is not the result's (TVM would build an ill-typed call); an inverse pair of blocked
 * layout_transforms that pads an axis (12 channels through NCHW8c) is not the identity and is
 * kept; SimplifyReshape and ConcretizeReshapeLike keep a reshape whose result has a 0 where the
 * input has none (newshape's 0 copies the input's dimension: TVM states the shape anyway);
 * SimplifyAdd and FullElementwise's ones / zeros keep the op where no scalar constant of the
 * result's dtype can be made (sb_scalar_ok: the 2- and 4-bit integers, float8 / float4, vector
 * lanes), where TVM's MakeConstantScalar stops with "unknown data type".
 *
 * Differences from TVM that keep the numbers (TVM's rewrite changes them): SimplifyConsecutiveCast
 * drops the first cast only when it keeps every value (int -> uint, int32 -> float32 do not);
 * SimplifyClipAndConsecutiveCast only after a clip of integers (a float clip's fractions are
 * truncated by the first cast); SimplifyCastClip only after a cast to an integer dtype (a cast
 * to a float dtype may give an infinity, which the clip bounds). */
#include "pattern_pass.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define SE_NAME "SimplifyExpr"
#define SEPA_NAME "SimplifyExprPostAlterOp"
#define DEFAULT_ROUNDS 16

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */

static const GPType *tensor_type(const GPExpr *e) {
  const GPType *t = e ? e->checked_type : NULL;
  return t && t->kind == GP_TYPE_TENSOR ? t : NULL;
}

static bool static_shape(const GPType *t) {
  for (int32_t i = 0; i < t->n; i++)
    if (t->tensor.shape[i] < 0) return false;
  return true;
}

static const GPExpr *arg(const GPExpr *call, int32_t i) { return ((const GPCall *)call)->args[i]; }

/* The root's tensor type, or NULL + error (a rewrite on an untyped node). */
static const GPType *root_type(PPRun *r, const GPMatch *m) {
  const GPType *t = tensor_type(m->root);
  if (!t) pp_fail(r, m, "the matched call has no tensor type");
  return t;
}

static GPAttrValue ints_val(const GPType *t) {
  return (GPAttrValue){.kind = GP_ATTR_INTS, .n = t->n, .ints = t->tensor.shape};
}


static bool dt_eq(DLDataType a, DLDataType b) { return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes; }

static bool has_data(const GPExpr *e) {
  return ekind(e) == GP_TI_CONSTANT && ((const GPConstant *)e)->data && ((const GPConstant *)e)->data->dl.data;
}

/* ------------------------------------------------------------------------------------------ */
/* Concretize*Like: the *_like op becomes its explicit-shape form when the result's shape is
 * static (TVM's ConcretizeLikeRewrite). */

static int check_static(PPRun *r, const GPMatch *m) {
  const GPType *t = tensor_type(m->root);
  char buf[160];
  if (!t) return pp_decline(r, m, "the result is not a tensor");
  if (!static_shape(t)) return pp_decline(r, m, "the result's shape %s is not static", pp_shape(t, buf, sizeof buf));
  return 1;
}

/* A reshape of data to the root's static shape, stated as newshape = that shape: a 0 there means
 * "data's dimension here", so a zero-size dimension can be stated only where data has one too. */
static int check_newshape(PPRun *r, const GPMatch *m, const GPExpr *data) {
  if (check_static(r, m) != 1) return 0;
  const GPType *t = tensor_type(m->root), *d = tensor_type(data);
  for (int32_t i = 0; i < t->n; i++)
    if (t->tensor.shape[i] == 0 && (!d || i >= d->n || d->tensor.shape[i] != 0))
      return pp_decline(r, m, "the result's dimension %d is 0, which reshape's newshape cannot state (0 copies the input's)",
                        (int)i);
  return 1;
}

static int check_reshape(PPRun *r, const GPMatch *m) { return check_newshape(r, m, pp_cap(m, "x")); }
static int check_reshape_like(PPRun *r, const GPMatch *m) { return check_newshape(r, m, arg(m->root, 0)); }

static GPExpr *rw_init(PPRun *r, const GPMatch *m, const char *op, int32_t nargs, GPExpr *const *args) {
  const GPType *t = root_type(r, m);
  if (!t) return NULL;
  SBuild b = pp_build(r, m);
  const char *keys[2] = {"shape", "dtype"};
  GPAttrValue vals[2] = {ints_val(t), {.kind = GP_ATTR_DTYPE, .dtype = t->tensor.dtype}};
  return sb_finish(&b, sb_call(&b, op, nargs, args, 2, keys, vals));
}

static GPExpr *rw_zeros_like(PPRun *r, const GPMatch *m) { return rw_init(r, m, "zeros", 0, NULL); }
static GPExpr *rw_ones_like(PPRun *r, const GPMatch *m) { return rw_init(r, m, "ones", 0, NULL); }
static GPExpr *rw_full_like(PPRun *r, const GPMatch *m) {
  GPExpr *fill = (GPExpr *)arg(m->root, 1);
  return rw_init(r, m, "full", 1, &fill);
}

static GPExpr *rw_reshape_like(PPRun *r, const GPMatch *m) {
  const GPType *t = root_type(r, m);
  if (!t) return NULL;
  SBuild b = pp_build(r, m);
  const char *key = "newshape";
  GPAttrValue v = ints_val(t);
  GPExpr *data = (GPExpr *)arg(m->root, 0);
  return sb_finish(&b, sb_call(&b, "reshape", 1, &data, 1, &key, &v));
}

static GPExpr *rw_broadcast_to_like(PPRun *r, const GPMatch *m) {
  const GPType *t = root_type(r, m);
  if (!t) return NULL;
  SBuild b = pp_build(r, m);
  const char *key = "shape";
  GPAttrValue v = ints_val(t);
  GPExpr *data = (GPExpr *)arg(m->root, 0);
  return sb_finish(&b, sb_call(&b, "broadcast_to", 1, &data, 1, &key, &v));
}

/* collapse_sum_to(data, <the shape as an int32 constant>, shape=...) (TVM's MakeCollapseSumTo) */
static GPExpr *rw_collapse_sum_like(PPRun *r, const GPMatch *m) {
  const GPType *t = root_type(r, m);
  if (!t) return NULL;
  int64_t n = t->n;
  GPTensor *st = pp_tensor_new((DLDataType){kDLInt, 32, 1}, 1, &n);
  if (!st) return NULL;
  for (int32_t i = 0; i < t->n; i++) ((int32_t *)st->dl.data)[i] = (int32_t)t->tensor.shape[i];
  GPExpr *shape = pp_constant(st);
  gp_release(st);
  if (!shape) return NULL;
  SBuild b = pp_build(r, m);
  const char *key = "shape";
  GPAttrValue v = ints_val(t);
  GPExpr *args[2] = {(GPExpr *)arg(m->root, 0), shape};
  GPExpr *out = sb_finish(&b, sb_call(&b, "collapse_sum_to", 2, args, 1, &key, &v));
  gp_release(shape);
  return out;
}

/* ConcretizeCastLike: any shape, static or not */
static int check_tensor(PPRun *r, const GPMatch *m) {
  return tensor_type(m->root) ? 1 : pp_decline(r, m, "the result is not a tensor");
}

static GPExpr *cast_to(PPRun *r, const GPMatch *m, GPExpr *data, DLDataType dt) {
  SBuild b = pp_build(r, m);
  const char *key = "dtype";
  GPAttrValue v = {.kind = GP_ATTR_DTYPE, .dtype = dt};
  return sb_finish(&b, sb_call(&b, "cast", 1, &data, 1, &key, &v));
}

static GPExpr *rw_cast_like(PPRun *r, const GPMatch *m) {
  const GPType *t = root_type(r, m);
  return t ? cast_to(r, m, (GPExpr *)arg(m->root, 0), t->tensor.dtype) : NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* SimplifyAdd (x + x -> x * 2), SimplifyRSqrt (n / sqrt(x) -> n * rsqrt(x))                   */

static int check_add(PPRun *r, const GPMatch *m) {
  const GPType *t = tensor_type(m->root);
  char buf[24];
  if (!t) return pp_decline(r, m, "the result is not a tensor");
  if (!sb_scalar_ok(t->tensor.dtype))
    return pp_decline(r, m, "no scalar constant of dtype %s", sb_dtype_str(t->tensor.dtype, buf, sizeof buf));
  return 1;
}

static GPExpr *rw_add(PPRun *r, const GPMatch *m) {
  const GPType *t = root_type(r, m);
  if (!t) return NULL;
  SBuild b = pp_build(r, m);
  return sb_finish(&b, sb_call2(&b, "multiply", pp_cap(m, "x"), sb_scalar(&b, t->tensor.dtype, 2)));
}

static GPExpr *rw_rsqrt(PPRun *r, const GPMatch *m) {
  SBuild b = pp_build(r, m);
  return sb_finish(&b, sb_call2(&b, "multiply", pp_cap(m, "n"), sb_call1(&b, "rsqrt", pp_cap(m, "x"))));
}

/* ------------------------------------------------------------------------------------------ */
/* EliminateIdentity: x + 0, 0 + x, x * 1, 1 * x, x - 0, x / 1 -> x when x has the result's type
 * (the zero / one: zeros(), zeros_like(_), ones(), ones_like(_), or a scalar constant). */

#define ZEROS "zeros() | zeros_like(_) | const"
#define ONES "ones() | ones_like(_) | const"
#define IDENTITY_PATTERN                                                                            \
  "add(%x, " ZEROS ") | add(" ZEROS ", %x) | multiply(%x, " ONES ") | multiply(" ONES ", %x) | "   \
  "subtract(%x, " ZEROS ") | divide(%x, " ONES ")"

/* True when e is a float constant with data whose every element is v. */
static bool all_elements(const GPExpr *e, double v) {
  const GPTensor *t = pp_float_data(e);
  if (!t) return false;
  int64_t n = pp_numel(t);
  for (int64_t i = 0; i < n; i++)
    if (pp_get(t, i) != v) return false;
  return n > 0;
}

static int check_identity(PPRun *r, const GPMatch *m) {
  const GPExpr *x = pp_cap(m, "x"), *root = m->root;
  const GPExpr *other = arg(root, 1) == x ? arg(root, 0) : arg(root, 1);
  const char *op = sb_op_name(root);
  if (ekind(other) == GP_TI_CONSTANT) {
    double v, want = strcmp(op, "add") == 0 || strcmp(op, "subtract") == 0 ? 0.0 : 1.0;
    if (!sb_scalar_value(other, &v)) { /* TVM folds a scalar only: a tensor of zeros / ones is a near miss */
      char a[160];
      if (!all_elements(other, want)) return 0; /* e.g. a bias: not an identity, nothing to say */
      return pp_decline(r, m, "the %s is a constant of shape %s, not a scalar", want == 0 ? "zero" : "one",
                        pp_shape(other->checked_type, a, sizeof a));
    }
    if (v != want) return 0; /* not an identity: nothing to say */
  }
  const GPType *xt = x->checked_type, *t = m->root->checked_type;
  char a[160], b[160];
  if (!xt || xt != t)
    return pp_decline(r, m, "x %s is broadcast to %s", pp_shape(xt, a, sizeof a), pp_shape(t, b, sizeof b));
  return 1;
}

static GPExpr *rw_capture_x(PPRun *r, const GPMatch *m) {
  (void)r;
  return gp_retain(pp_cap(m, "x"));
}

/* ------------------------------------------------------------------------------------------ */
/* SimplifyReshape: two reshapes (or contrib_reverse_reshape) -> one reshape to the static shape */

#define RESHAPE_INNER "(reshape(%x) | contrib_reverse_reshape(%x))"
#define RESHAPE_PATTERN "reshape(" RESHAPE_INNER ") | contrib_reverse_reshape(" RESHAPE_INNER ")"

static GPExpr *rw_reshape(PPRun *r, const GPMatch *m) {
  const GPType *t = root_type(r, m);
  if (!t) return NULL;
  SBuild b = pp_build(r, m);
  const char *key = "newshape";
  GPAttrValue v = ints_val(t);
  GPExpr *x = pp_cap(m, "x");
  return sb_finish(&b, sb_call(&b, "reshape", 1, &x, 1, &key, &v));
}

/* ------------------------------------------------------------------------------------------ */
/* SimplifyTranspose: two transposes / plain layout_transforms -> one transpose, or x          */

#define TRANS_INNER "(transpose(%x) | layout_transform(%x))"
#define TRANSPOSE_PATTERN "transpose(" TRANS_INNER ") | layout_transform(" TRANS_INNER ")"

static bool layout_plain(const char *l) {
  size_t n = strlen(l);
  if (n == 0 || n > 26) return false;
  for (size_t i = 0; i < n; i++)
    if (l[i] < 'A' || l[i] > 'Z' || strchr(l + i + 1, l[i])) return false;
  return true;
}

/* TVM's GetTransposeAxisOrder: the axes of call (rank nd) into ax; false with *why when the call
 * cannot be read as a permutation. */
static bool axis_order(const GPExpr *call, int32_t nd, int64_t *ax, const char **why) {
  if (strcmp(sb_op_name(call), "transpose") == 0) {
    const GPAttrValue *a = pp_attr(call, "axes");
    if (!a || a->kind != GP_ATTR_INTS || a->n == 0) {
      for (int32_t i = 0; i < nd; i++) ax[i] = nd - 1 - i;
      return true;
    }
    if (a->n != nd) return *why = "the axes do not match the rank", false;
    for (int32_t i = 0; i < nd; i++) ax[i] = a->ints[i] < 0 ? a->ints[i] + nd : a->ints[i];
    return true;
  }
  const char *src = pp_attr_str(call, "src_layout", ""), *dst = pp_attr_str(call, "dst_layout", "");
  if (!layout_plain(src) || !layout_plain(dst) || strlen(src) != strlen(dst) || (int32_t)strlen(src) != nd)
    return *why = "a blocked or rank-changing layout_transform (TVM's rank-changing fold is not done here)", false;
  for (int32_t i = 0; i < nd; i++) {
    const char *p = strchr(src, dst[i]);
    if (!p) return *why = "the layouts have different axes", false;
    ax[i] = p - src;
  }
  return true;
}

/* 1: the composed permutation in ax (identity: *ident); 2: an exact inverse layout_transform
 * pair (x itself); 0 + *why: left alone. */
static int compose(const GPMatch *m, int64_t *ax, int32_t *nd, bool *ident, const char **why) {
  const GPExpr *outer = m->root, *inner = arg(outer, 0);
  if (strcmp(sb_op_name(outer), "layout_transform") == 0 && strcmp(sb_op_name(inner), "layout_transform") == 0 &&
      strcmp(pp_attr_str(outer, "src_layout", "?"), pp_attr_str(inner, "dst_layout", "!")) == 0 &&
      strcmp(pp_attr_str(outer, "dst_layout", "?"), pp_attr_str(inner, "src_layout", "!")) == 0) {
    /* a blocked layout whose factor does not divide its axis pads it: the round trip grows x */
    const GPType *tx = tensor_type(pp_cap(m, "x"));
    if (!tx || tx != tensor_type(outer))
      return *why = "the pair is not an identity: x's shape is not the result's (a blocked axis is padded)", 0;
    return 2;
  }
  const GPType *t = tensor_type(pp_cap(m, "x"));
  if (!t) return *why = "x is not a tensor", 0;
  *nd = t->n;
  if (*nd > 64) return *why = "rank above 64", 0;
  int64_t a1[64], a2[64];
  if (!axis_order(outer, *nd, a2, why) || !axis_order(inner, *nd, a1, why)) return 0;
  *ident = true;
  for (int32_t i = 0; i < *nd; i++) {
    if (a2[i] < 0 || a2[i] >= *nd || a1[a2[i]] < 0 || a1[a2[i]] >= *nd) return *why = "an axis is out of range", 0;
    ax[i] = a1[a2[i]];
    *ident = *ident && ax[i] == i;
  }
  return 1;
}

static int check_transpose(PPRun *r, const GPMatch *m) {
  int64_t ax[64];
  int32_t nd;
  bool ident;
  const char *why = "";
  return compose(m, ax, &nd, &ident, &why) ? 1 : pp_decline(r, m, "%s", why);
}

static GPExpr *rw_transpose(PPRun *r, const GPMatch *m) {
  int64_t ax[64];
  int32_t nd = 0;
  bool ident = false;
  const char *why = "";
  int k = compose(m, ax, &nd, &ident, &why);
  if (!k) {
    pp_fail(r, m, "%s", why);
    return NULL;
  }
  GPExpr *x = pp_cap(m, "x");
  if (k == 2 || ident) return gp_retain(x);
  SBuild b = pp_build(r, m);
  const char *key = "axes";
  GPAttrValue v = {.kind = GP_ATTR_INTS, .n = nd, .ints = ax};
  return sb_finish(&b, sb_call(&b, "transpose", 1, &x, 1, &key, &v));
}

/* ------------------------------------------------------------------------------------------ */
/* SimplifySameCast, SimplifyConsecutiveCast                                                    */

#define CAST_OF(x) "(cast_like(" x ", _) | cast(" x "))"

static int check_same_cast(PPRun *r, const GPMatch *m) {
  const GPType *d = tensor_type(pp_cap(m, "data")), *t = tensor_type(m->root);
  (void)r;
  return d && t && dt_eq(d->tensor.dtype, t->tensor.dtype); /* else: a real cast, nothing to say */
}

static GPExpr *rw_capture_data(PPRun *r, const GPMatch *m) {
  (void)r;
  return gp_retain(pp_cap(m, "data"));
}

/* Whether every value of `from` is a value of `to` (the cast changes no value).  TVM's
 * IsWidenCast also calls int -> uint of as many bits a widening, and int / uint -> float of as
 * many bits: int8 -1 became uint8 255 and int32 16777217 became float32 16777216, which the
 * rewrite then dropped. */
static bool widen(DLDataType from, DLDataType to) {
  if (from.lanes != to.lanes) return false;
  if (from.code == to.code) return from.bits <= to.bits;
  if (from.code == kDLBfloat || to.code == kDLBfloat) return false;
  if (from.code == kDLUInt && to.code == kDLInt) return from.bits < to.bits;
  if ((from.code == kDLInt || from.code == kDLUInt) && to.code == kDLFloat) {
    int32_t digits = to.bits == 16 ? 11 : to.bits == 32 ? 24 : to.bits == 64 ? 53 : 0; /* significand */
    return (from.code == kDLInt ? from.bits - 1 : from.bits) <= digits;
  }
  return false;
}

static int check_consecutive_cast(PPRun *r, const GPMatch *m) {
  const GPType *d = tensor_type(pp_cap(m, "data")), *c1 = tensor_type(pp_cap(m, "c1"));
  char a[24], b[24];
  if (!d || !c1 || !tensor_type(m->root)) return pp_decline(r, m, "untyped");
  if (!widen(d->tensor.dtype, c1->tensor.dtype))
    return pp_decline(r, m, "the first cast %s -> %s changes some values", sb_dtype_str(d->tensor.dtype, a, sizeof a),
                      sb_dtype_str(c1->tensor.dtype, b, sizeof b));
  return 1;
}

static GPExpr *rw_consecutive_cast(PPRun *r, const GPMatch *m) {
  const GPType *t = root_type(r, m);
  return t ? cast_to(r, m, pp_cap(m, "data"), t->tensor.dtype) : NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* FullElementwise: op(full-like, x) -> op(scalar, x) when x has the result's type             */

#define FULLS "(full(const) | full_like(_, const) | ones() | ones_like(_) | zeros() | zeros_like(_))"
#define FE(op) op "(%f=" FULLS ", %x) | " op "(%x, %f=" FULLS ")"
#define FULL_PATTERN \
  FE("add") " | " FE("subtract") " | " FE("multiply") " | " FE("divide") " | " FE("maximum") " | " FE("minimum") " | " FE("power")

/* The fill constant of f (full / full_like), or NULL for ones / zeros (*v set). */
static GPExpr *fill_of(const GPExpr *f, double *v) {
  const char *op = sb_op_name(f);
  if (strcmp(op, "full") == 0) return (GPExpr *)arg(f, 0);
  if (strcmp(op, "full_like") == 0) return (GPExpr *)arg(f, 1);
  *v = strncmp(op, "ones", 4) == 0 ? 1 : 0;
  return NULL;
}

static int check_full(PPRun *r, const GPMatch *m) {
  const GPType *xt = pp_cap(m, "x")->checked_type, *t = tensor_type(m->root);
  char a[160], b[160];
  if (!t || xt != t)
    return pp_decline(r, m, "x %s is broadcast to %s", pp_shape(xt, a, sizeof a), pp_shape(t, b, sizeof b));
  double v;
  GPExpr *fill = fill_of(pp_cap(m, "f"), &v);
  const GPType *ft = fill ? tensor_type(fill) : NULL;
  if (fill && (!ft || ft->n != 0 || !dt_eq(ft->tensor.dtype, t->tensor.dtype)))
    return pp_decline(r, m, "the fill value is not a scalar of the result's dtype %s", sb_dtype_str(t->tensor.dtype, a, sizeof a));
  if (!fill && !sb_scalar_ok(t->tensor.dtype))
    return pp_decline(r, m, "no scalar constant of dtype %s", sb_dtype_str(t->tensor.dtype, a, sizeof a));
  return 1;
}

static GPExpr *rw_full(PPRun *r, const GPMatch *m) {
  const GPType *t = root_type(r, m);
  if (!t) return NULL;
  const GPCall *c = (const GPCall *)m->root;
  GPExpr *f = pp_cap(m, "f"), *x = pp_cap(m, "x");
  double v = 0;
  GPExpr *fill = fill_of(f, &v);
  SBuild b = pp_build(r, m);
  GPExpr *val = fill ? fill : sb_scalar(&b, t->tensor.dtype, v);
  GPExpr *out = NULL;
  if (val) {
    GPExpr *args[2] = {c->args[0] == f ? val : x, c->args[0] == f ? x : val};
    out = (GPExpr *)H->call_new(c->op, 2, args, c->attrs);
  }
  GPExpr *done = sb_finish(&b, out);
  gp_release(out);
  return done;
}

/* ------------------------------------------------------------------------------------------ */
/* SwitchAddMultiply ((x + c1) * c2 -> x * c2 + c1 * c2), SimplifyAdjacentMultiplyOrAdd
 * (x * c1 * c2 -> x * (c1 * c2), x + c1 + c2 -> x + (c1 + c2)); the constants fold now.       */

#define ADD_XC "(add(%x, %c1=const) | add(%c1=const, %x))"
#define MUL_XC "(multiply(%x, %c1=const) | multiply(%c1=const, %x))"
#define SWITCH_PATTERN "multiply(" ADD_XC ", %c2=const) | multiply(%c2=const, " ADD_XC ")"
#define ADJACENT_PATTERN                                                                   \
  "multiply(" MUL_XC ", %c2=const) | multiply(%c2=const, " MUL_XC ") | add(" ADD_XC ", %c2=const) | " \
  "add(%c2=const, " ADD_XC ")"

static int check_consts(PPRun *r, const GPMatch *m) {
  if (ekind(pp_cap(m, "x")) == GP_TI_CONSTANT) return 0; /* TVM: x a constant, left to FoldConstant */
  if (!has_data(pp_cap(m, "c1")) || !has_data(pp_cap(m, "c2")))
    return pp_decline(r, m, "a constant has no data to fold");
  return 1;
}

/* op(c1, c2) evaluated: a new constant, or NULL + error. */
static GPExpr *fold(PPRun *r, const GPMatch *m, const char *op) {
  SBuild b = pp_build(r, m);
  GPExpr *call = sb_call2(&b, op, pp_cap(m, "c1"), pp_cap(m, "c2"));
  GPExpr *c = call ? H->eval_call((const GPCall *)call) : NULL;
  GPExpr *done = sb_finish(&b, call);
  gp_release(done);
  if (!c) std_error_prefix("folding the constants");
  return c;
}

static GPExpr *rw_switch(PPRun *r, const GPMatch *m) {
  GPExpr *c = fold(r, m, "multiply");
  if (!c) return NULL;
  SBuild b = pp_build(r, m);
  GPExpr *out = sb_finish(&b, sb_call2(&b, "add", sb_call2(&b, "multiply", pp_cap(m, "x"), pp_cap(m, "c2")), c));
  gp_release(c);
  return out;
}

static GPExpr *rw_adjacent(PPRun *r, const GPMatch *m) {
  const char *op = sb_op_name(m->root);
  GPExpr *c = fold(r, m, op);
  if (!c) return NULL;
  SBuild b = pp_build(r, m);
  GPExpr *out = sb_finish(&b, sb_call2(&b, op, pp_cap(m, "x"), c));
  gp_release(c);
  return out;
}

/* ------------------------------------------------------------------------------------------ */
/* SimplifyClipAndConsecutiveCast, SimplifyCastClip: a clip to exactly a dtype's range         */

/* TVM's CheckDataTypeMaxMinValue */
static bool dtype_range_is(DLDataType d, double lo, double hi) {
  double mn, mx;
  if (d.lanes != 1) return false;
  if (d.code == kDLInt && d.bits >= 1 && d.bits <= 64) {
    mx = ldexp(1.0, d.bits - 1) - 1;
    mn = -ldexp(1.0, d.bits - 1);
  } else if (d.code == kDLUInt && d.bits >= 1 && d.bits <= 64) {
    mx = ldexp(1.0, d.bits) - 1;
    mn = 0;
  } else if (d.code == kDLFloat && (d.bits == 16 || d.bits == 32 || d.bits == 64)) {
    mx = d.bits == 16 ? 65504.0 : d.bits == 32 ? (double)FLT_MAX : DBL_MAX;
    mn = -mx;
  } else {
    return false;
  }
  return mx == hi && mn == lo;
}

static bool integral(DLDataType d) { return d.code == kDLInt || d.code == kDLUInt; }

/* The casts are the identity on the clip's values when those are integers in the first cast's
 * integer range.  TVM also drops them after a float clip, whose fractions the first cast
 * truncates (clip(x, 0, 255) -> uint8 -> float32 kept 2.7 where the casts make 2). */
static int check_clip_cast_cast(PPRun *r, const GPMatch *m) {
  const GPExpr *clip = pp_cap(m, "clip");
  const GPType *ct = tensor_type(clip), *c1 = tensor_type(pp_cap(m, "cast1")), *t = tensor_type(m->root);
  char a[24];
  if (!ct || !c1 || !t || !dt_eq(ct->tensor.dtype, t->tensor.dtype) || !integral(c1->tensor.dtype) ||
      !dtype_range_is(c1->tensor.dtype, pp_attr_float(clip, "a_min", NAN), pp_attr_float(clip, "a_max", NAN)))
    return 0;
  if (!integral(ct->tensor.dtype))
    return pp_decline(r, m, "the clip's values are %s: the first cast truncates them", sb_dtype_str(ct->tensor.dtype, a, sizeof a));
  return 1;
}

static GPExpr *rw_capture_clip(PPRun *r, const GPMatch *m) {
  (void)r;
  return gp_retain(pp_cap(m, "clip"));
}

/* A cast to an integer dtype gives values in its range: a clip to that range does nothing.
 * TVM also drops a clip to a float dtype's finite range, which maps an infinity (float32 1e5
 * cast to float16) to the largest finite value: kept here. */
static int check_cast_clip(PPRun *r, const GPMatch *m) {
  const GPType *ct = tensor_type(pp_cap(m, "cast"));
  char a[24];
  if (!ct || !dtype_range_is(ct->tensor.dtype, pp_attr_float(m->root, "a_min", NAN), pp_attr_float(m->root, "a_max", NAN)))
    return 0;
  if (!integral(ct->tensor.dtype))
    return pp_decline(r, m, "a cast to %s may give an infinity, which the clip bounds", sb_dtype_str(ct->tensor.dtype, a, sizeof a));
  return 1;
}

static GPExpr *rw_capture_cast(PPRun *r, const GPMatch *m) {
  (void)r;
  return gp_retain(pp_cap(m, "cast"));
}

/* ------------------------------------------------------------------------------------------ */
/* The lists                                                                                   */

#define R_IDENTITY {"EliminateIdentity", IDENTITY_PATTERN, check_identity, rw_capture_x}
#define R_RESHAPE {"SimplifyReshape", RESHAPE_PATTERN, check_reshape, rw_reshape}
#define R_SAME_CAST {"SimplifySameCast", CAST_OF("%data"), check_same_cast, rw_capture_data}
#define R_CONSEC_CAST \
  {"SimplifyConsecutiveCast", "cast_like(%c1=" CAST_OF("%data") ", _) | cast(%c1=" CAST_OF("%data") ")", \
   check_consecutive_cast, rw_consecutive_cast}
#define R_CLIP_CAST_CAST \
  {"SimplifyClipAndConsecutiveCast", "cast(%cast1=cast(%clip=clip(_)))", check_clip_cast_cast, rw_capture_clip}
#define R_CAST_CLIP {"SimplifyCastClip", "clip(%cast=cast(_))", check_cast_clip, rw_capture_cast}

static const PPRule k_simplify[] = {
    {"ConcretizeZerosLike", "zeros_like(_)", check_static, rw_zeros_like},
    {"ConcretizeOnesLike", "ones_like(_)", check_static, rw_ones_like},
    {"ConcretizeFullLike", "full_like(_, _)", check_static, rw_full_like},
    {"ConcretizeReshapeLike", "reshape_like(_, _)", check_reshape_like, rw_reshape_like},
    {"ConcretizeCollapseSumLike", "collapse_sum_like(_, _)", check_static, rw_collapse_sum_like},
    {"ConcretizeBroadcastToLike", "broadcast_to_like(_, _)", check_static, rw_broadcast_to_like},
    {"ConcretizeCastLike", "cast_like(_, _)", check_tensor, rw_cast_like},
    {"SimplifyAdd", "add(%x, %x)", check_add, rw_add},
    {"SimplifyRSqrt", "divide(%n, sqrt(%x))", NULL, rw_rsqrt},
    R_IDENTITY,
    R_RESHAPE,
    {"SimplifyTranspose", TRANSPOSE_PATTERN, check_transpose, rw_transpose},
    R_SAME_CAST,
    R_CONSEC_CAST,
    {"FullElementwise", FULL_PATTERN, check_full, rw_full},
    {"SwitchAddMultiply", SWITCH_PATTERN, check_consts, rw_switch},
    {"SimplifyAdjacentMultiplyOrAdd", ADJACENT_PATTERN, check_consts, rw_adjacent},
    R_CLIP_CAST_CAST,
    R_CAST_CLIP,
};

static const PPRule k_post_alter_op[] = {R_IDENTITY, R_RESHAPE, R_SAME_CAST, R_CONSEC_CAST, R_CLIP_CAST_CAST, R_CAST_CLIP};

static int run(const char *pass, const PPRule *rules, int32_t n, const GPAny *args, int32_t nargs, GPAny *result) {
  GPPassContext *ctx = nargs == 2 && args[1].type_index == GP_TI_OPAQUE_PTR ? args[1].v_ptr : NULL;
  char key[64];
  snprintf(key, sizeof key, "%s.max_rounds", pass);
  int64_t rounds = std_config_int(ctx, key, DEFAULT_ROUNDS);
  if (rounds < 1 || rounds > 1000) {
    H->error_set(GP_ERR_VALUE, "%s is %lld; it must be in 1..1000", key, (long long)rounds);
    return -1;
  }
  if (rules == k_simplify)
    std_note(ctx, "TVM's SimplifyDQArgMax/ArgMin/ArgSort are not included (no qnn ops)");
  return pp_run_fixed(pass, rules, n, NULL, (int32_t)rounds, args, nargs, result);
}

static int simplify_expr(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  return run(SE_NAME, k_simplify, (int32_t)(sizeof k_simplify / sizeof k_simplify[0]), args, nargs, result);
}

static int simplify_expr_post_alter_op(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  return run(SEPA_NAME, k_post_alter_op, (int32_t)(sizeof k_post_alter_op / sizeof k_post_alter_op[0]), args, nargs, result);
}

/* Both at opt-level 0 requiring InferType, as TVM registers them. */
static int reg(const char *name, GPPackedCFunc fn, const char *help) {
  static const char *const required[] = {"InferType"};
  GPConfigKey keys[] = {
      {.name = "max_rounds", .type_index = GP_TI_INT,
       .default_value = {.type_index = GP_TI_INT, .v_int64 = DEFAULT_ROUNDS},
       .help = "stop after this many rounds of the rewrite list if no fixed point was reached (1..1000; each "
               "round is linear)"},
  };
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = name,
      .opt_level = 0,
      .kind = GP_PASS_TRANSFORM,
      .required = required,
      .num_required = 1,
      .config_keys = keys,
      .num_config_keys = 1,
      .func = fn,
      .help = help,
  };
  return H->pass_register(&info, 0);
}

int std_register_simplify_expr(void) {
  if (!GP_HAS_FIELD(H, GPHostAPI, pattern_table_get)) return 0;
  if (reg(SE_NAME, simplify_expr,
          "TVM's SimplifyExpr: concretize *_like ops, x+x, n/sqrt(x), identities, reshape/transpose/cast pairs, "
          "full+elementwise, constant add/multiply chains, redundant clip/cast; to a fixed point.") != 0)
    return -1;
  return reg(SEPA_NAME, simplify_expr_post_alter_op,
             "TVM's SimplifyExprPostAlterOp: identities, reshape and cast pairs, redundant clip/cast; to a fixed "
             "point.");
}
