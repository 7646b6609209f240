/* simplify_inference.c -- SimplifyInference (opt-level 0, requires InferType), TVM v0.12's
 * InferenceSimplifier:
 *  - get-item 0 of nn.batch_norm(x, gamma, beta, mean, var) becomes x * scale + shift:
 *      scale = divide(1, sqrt(add(var, eps)))      [then multiply(scale, gamma) when `scale`]
 *      shift = multiply(negative(mean), scale)     [then add(shift, beta) when `center`]
 *    both expanded to `axis` (expand_dims(v, axis=1, num_newaxis=ndim-axis-1), none when that is
 *    0), out = add(multiply(x, scale), shift).  With constant BN parameters FoldConstant then
 *    folds scale and shift into two constants.  Other get-items keep the batch_norm call;
 *    a batch_norm reached another way (a let-bound tuple) is left alone, as in TVM.
 *  - get-item 0 of nn.dropout(x) becomes x.
 *  - nn.layer_norm(x, gamma, beta): mean = mean(x, axis=[axis], keepdims=True),
 *    var = variance(x, mean, axis=[axis], keepdims=True),
 *    out = divide(subtract(x, mean), sqrt(add(var, eps))) [* expanded gamma] [+ expanded beta].
 *  - nn.instance_norm: the same over the axes 1..ndim-1 except `axis`.
 *  - nn.group_norm: x reshaped to (.., G, C/G, ..) at axis, normalized over the group's axes,
 *    reshaped back, then gamma / beta as above.  Needs a static shape (else kept, with a note).
 *  - nn.l2_normalize(x): divide(x, sqrt(maximum(sum(multiply(x, x), axis, keepdims=True), eps))).
 * eps is a scalar constant of data's dtype holding float32(epsilon) (TVM's MakeConstantScalar
 * of a float; for instance_norm since apache/tvm#9806, before v0.12).
 * Where we differ from TVM (which would build ill-typed or wrong IR there):
 *  - l2_normalize's eps constant has data's dtype too (TVM's is float32: the same for float32
 *    data, a type error for float16 / float64 data);
 *  - group_norm with the channel axis >= 2 also reduces the axes between 0 and the channel axis
 *    (TVM's reduce list then omits them, so NHWC normalized only over C/G); for axis 0 and 1 it
 *    is TVM's list exactly.
 * One host rewrite per function (children first, no recursion); the result is re-typed. */
#include "expr_build.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PASS_NAME "SimplifyInference"

typedef struct Simp {
  GPPassContext *ctx;
  const char *source;
  int64_t batch_norm, dropout, layer_norm, instance_norm, group_norm, l2_normalize, kept;
  bool untyped; /* a rewrite of the current function came back without a type */
  SBOps ops;    /* the ops the builders looked up */
} Simp;

static const GPAttrValue *attr(const GPCall *c, const char *key) {
  return c->attrs ? H->attrs_get(c->attrs, key) : NULL;
}
static int64_t attr_int(const GPCall *c, const char *key, int64_t dflt) {
  const GPAttrValue *v = attr(c, key);
  return v && (v->kind == GP_ATTR_INT || v->kind == GP_ATTR_BOOL) ? v->i : dflt;
}
static double attr_float(const GPCall *c, const char *key, double dflt) {
  const GPAttrValue *v = attr(c, key);
  if (v && v->kind == GP_ATTR_FLOAT) return v->f;
  return v && v->kind == GP_ATTR_INT ? (double)v->i : dflt;
}

/* Normalize axis into [0, ndim); -1 when out of range. */
static int32_t norm_axis(int64_t axis, int32_t ndim) {
  if (axis < -(int64_t)ndim || axis >= ndim) return -1;
  return (int32_t)(axis < 0 ? axis + ndim : axis);
}

/* The error of a failed decomposition: names the op and the node (the registry adds the
 * pass). */
static void fail(const Simp *s, const GPExpr *orig, const char *op, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail(const Simp *s, const GPExpr *orig, const char *op, const char *fmt, ...) {
  char why[512], loc[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  int32_t kind = H->error_kind();
  H->error_set(kind && kind != GP_ERR_PASS ? kind : GP_ERR_TYPE, "cannot simplify %s at %s: %s", op,
               sb_where(s->source, orig, loc, sizeof loc), why);
}

/* The (tensor) type of data: `t` (the checked type of the node being replaced, which for every
 * rule here is data's type), or NULL + error. */
static const GPType *data_type(const Simp *s, const GPExpr *orig, const char *op, const GPType *t) {
  if (t && t->kind == GP_TYPE_TENSOR) return t;
  H->error_clear();
  fail(s, orig, op, "the type of data is %s (run InferType first)", t ? "not a tensor type" : "unknown");
  return NULL;
}

/* The builder's last error as text (copied: error_set may reuse the buffer). */
static void fail_build(const Simp *s, const GPExpr *orig, const char *op) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s", H->error_kind() ? H->error_message() : "building the replacement failed");
  fail(s, orig, op, "%s", msg);
}

static GPExpr *unpack_batch_norm(Simp *s, const GPExpr *orig, const GPCall *bn, const GPType *t) {
  int32_t axis = norm_axis(attr_int(bn, "axis", 1), t->n);
  if (axis < 0 || bn->nargs != 5) {
    H->error_clear();
    fail(s, orig, "nn.batch_norm", "axis %lld is out of range for data of rank %d",
         (long long)attr_int(bn, "axis", 1), (int)t->n);
    return NULL;
  }
  DLDataType dt = t->tensor.dtype;
  GPExpr *const *a = bn->args; /* data, gamma, beta, moving_mean, moving_var */
  SBuild b = {.ops = &s->ops, .at = orig};
  GPExpr *eps = sb_scalar(&b, dt, (float)attr_float(bn, "epsilon", 1e-5));
  GPExpr *scale = sb_call2(&b, "divide", sb_scalar(&b, dt, 1.0f),
                           sb_call1(&b, "sqrt", sb_call2(&b, "add", a[4], eps)));
  if (attr_int(bn, "scale", 1)) scale = sb_call2(&b, "multiply", scale, a[1]);
  GPExpr *shift = sb_call2(&b, "multiply", sb_call1(&b, "negative", a[3]), scale);
  if (attr_int(bn, "center", 1)) shift = sb_call2(&b, "add", shift, a[2]);
  scale = sb_expand_bias(&b, scale, t->n, axis);
  shift = sb_expand_bias(&b, shift, t->n, axis);
  GPExpr *out = sb_call2(&b, "add", sb_call2(&b, "multiply", a[0], scale), shift);
  GPExpr *res = sb_finish(&b, out);
  if (!res) fail_build(s, orig, "nn.batch_norm");
  else s->batch_norm++;
  return res;
}

/* (x - mean) / sqrt(var + eps) over axes (raw values as the attribute gives them), as TVM's
 * Mean / Variance / Sqrt / Divide sequence; x is borrowed from the builder or the caller. */
static GPExpr *standardize(SBuild *b, GPExpr *x, DLDataType dt, double epsilon, int32_t naxes,
                           const int64_t *axes) {
  GPExpr *eps = sb_scalar(b, dt, (float)epsilon);
  GPExpr *mean = sb_reduce(b, "mean", x, naxes, axes);
  static const char *const keys[] = {"axis", "keepdims", "exclude", "unbiased"};
  GPAttrValue vals[4] = {{.kind = GP_ATTR_INTS, .n = naxes, .ints = axes},
                         {.kind = GP_ATTR_BOOL, .i = 1},
                         {.kind = GP_ATTR_BOOL, .i = 0},
                         {.kind = GP_ATTR_BOOL, .i = 0}};
  GPExpr *xm[2] = {x, mean};
  GPExpr *var = sb_call(b, "variance", 2, xm, 4, keys, vals);
  GPExpr *denom = sb_call1(b, "sqrt", sb_call2(b, "add", var, eps));
  return sb_call2(b, "divide", sb_call2(b, "subtract", x, mean), denom);
}

/* out [* gamma] [+ beta], both expanded to axis. */
static GPExpr *affine(SBuild *b, const GPCall *c, GPExpr *out, int32_t ndim, int32_t axis) {
  if (attr_int(c, "scale", 1)) out = sb_call2(b, "multiply", out, sb_expand_bias(b, c->args[1], ndim, axis));
  if (attr_int(c, "center", 1)) out = sb_call2(b, "add", out, sb_expand_bias(b, c->args[2], ndim, axis));
  return out;
}

static GPExpr *unpack_norm(Simp *s, const GPExpr *orig, const GPCall *c, const char *op, const GPType *t) {
  int64_t raw_axis = attr_int(c, "axis", strcmp(op, "nn.layer_norm") == 0 ? -1 : 1);
  int32_t axis = norm_axis(raw_axis, t->n);
  if (axis < 0 || c->nargs != 3 || t->n > 64) {
    H->error_clear();
    fail(s, orig, op, "axis %lld is out of range for data of rank %d", (long long)raw_axis, (int)t->n);
    return NULL;
  }
  DLDataType dt = t->tensor.dtype;
  double epsilon = attr_float(c, "epsilon", 1e-5);
  int64_t axes[72];
  int32_t naxes = 0;
  SBuild b = {.ops = &s->ops, .at = orig};
  GPExpr *out;
  if (strcmp(op, "nn.layer_norm") == 0) {
    out = standardize(&b, c->args[0], dt, epsilon, 1, &raw_axis);
  } else if (strcmp(op, "nn.instance_norm") == 0) {
    for (int32_t i = 1; i < t->n; i++)
      if (i != axis) axes[naxes++] = i;
    out = standardize(&b, c->args[0], dt, epsilon, naxes, axes);
  } else { /* nn.group_norm */
    int64_t groups = attr_int(c, "num_groups", 0), ch = t->tensor.shape[axis];
    bool static_shape = true, empty = false;
    for (int32_t i = 0; i < t->n; i++) {
      static_shape = static_shape && t->tensor.shape[i] >= 0;
      empty = empty || t->tensor.shape[i] == 0;
    }
    if (!static_shape || empty) { /* empty: a 0 in the reshapes' newshape would copy another dimension */
      char loc[256];
      std_note(s->ctx, "kept nn.group_norm at %s: data has %s", sb_where(s->source, orig, loc, sizeof loc),
               empty ? "no elements (a 0 in reshape's newshape copies the input's dimension)" : "a dynamic shape");
      s->kept++;
      return gp_retain((GPExpr *)c);
    }
    if (groups < 1 || ch % groups != 0) {
      H->error_clear();
      fail(s, orig, op, "num_groups %lld must be >= 1 and divide the %lld channels", (long long)groups,
           (long long)ch);
      return NULL;
    }
    int64_t new_shape[72], old_shape[72];
    int32_t nn = 0;
    for (int32_t i = 0; i < t->n; i++) {
      old_shape[i] = t->tensor.shape[i];
      if (i == axis) {
        new_shape[nn++] = groups;
        new_shape[nn++] = ch / groups;
      } else {
        new_shape[nn++] = t->tensor.shape[i];
      }
    }
    /* TVM: the C/G axis and every axis after it; beyond TVM, for axis >= 2, also 1..axis-1 */
    for (int32_t i = 1; i < axis; i++) axes[naxes++] = i;
    for (int32_t i = axis; i < t->n; i++) axes[naxes++] = i + 1;
    static const char *const rkeys[] = {"newshape"};
    GPAttrValue rv = {.kind = GP_ATTR_INTS, .n = nn, .ints = new_shape};
    GPExpr *x = sb_call(&b, "reshape", 1, &c->args[0], 1, rkeys, &rv);
    out = standardize(&b, x, dt, epsilon, naxes, axes);
    rv = (GPAttrValue){.kind = GP_ATTR_INTS, .n = t->n, .ints = old_shape};
    out = sb_call(&b, "reshape", 1, &out, 1, rkeys, &rv);
  }
  out = affine(&b, c, out, t->n, axis);
  GPExpr *res = sb_finish(&b, out);
  if (!res)
    fail_build(s, orig, op);
  else if (strcmp(op, "nn.layer_norm") == 0)
    s->layer_norm++;
  else if (strcmp(op, "nn.instance_norm") == 0)
    s->instance_norm++;
  else
    s->group_norm++;
  return res;
}

static GPExpr *unpack_l2(Simp *s, const GPExpr *orig, const GPCall *c, const GPType *t) {
  const GPAttrValue *ax = attr(c, "axis");
  int64_t one;
  int32_t n = 0;
  const int64_t *axes = NULL;
  if (ax && ax->kind == GP_ATTR_INTS) {
    n = ax->n;
    axes = ax->ints;
  } else if (ax && ax->kind == GP_ATTR_INT) {
    one = ax->i;
    n = 1;
    axes = &one;
  }
  SBuild b = {.ops = &s->ops, .at = orig};
  GPExpr *x = c->args[0];
  GPExpr *eps = sb_scalar(&b, t->tensor.dtype, (float)attr_float(c, "eps", 0.0));
  GPExpr *sum = sb_reduce(&b, "sum", sb_call2(&b, "multiply", x, x), n, axes);
  GPExpr *out = sb_call2(&b, "divide", x, sb_call1(&b, "sqrt", sb_call2(&b, "maximum", sum, eps)));
  GPExpr *res = sb_finish(&b, out);
  if (!res) fail_build(s, orig, "nn.l2_normalize");
  else s->l2_normalize++;
  return res;
}

static GPExpr *simp_node(Simp *s, GPExpr *orig, GPExpr *rebuilt) {
  if (ekind(rebuilt) == GP_TI_TUPLE_GET_ITEM) {
    const GPTupleGetItem *g = (const GPTupleGetItem *)rebuilt;
    const char *op = sb_op_name(g->tuple);
    if (g->index != 0 || !op) return std_keep(rebuilt);
    const GPCall *c = (const GPCall *)g->tuple;
    if (strcmp(op, "nn.batch_norm") == 0) {
      const GPType *t = data_type(s, orig, op, orig->checked_type);
      return t ? unpack_batch_norm(s, orig, c, t) : NULL;
    }
    if (strcmp(op, "nn.dropout") == 0 && c->nargs == 1) {
      s->dropout++;
      return gp_retain(c->args[0]);
    }
    return std_keep(rebuilt);
  }
  const char *op = sb_op_name(rebuilt);
  if (!op) return std_keep(rebuilt);
  const GPCall *c = (const GPCall *)rebuilt;
  bool norm = strcmp(op, "nn.layer_norm") == 0 || strcmp(op, "nn.instance_norm") == 0 ||
              strcmp(op, "nn.group_norm") == 0;
  bool l2 = !norm && strcmp(op, "nn.l2_normalize") == 0 && c->nargs == 1;
  if (!norm && !l2) return std_keep(rebuilt);
  const GPType *t = data_type(s, orig, op, orig->checked_type);
  if (!t) return NULL;
  return norm ? unpack_norm(s, orig, c, op, t) : unpack_l2(s, orig, c, t);
}

/* Rewrites keep their types where they can (the builder types what it makes), so the result
 * needs no re-typing when every node came back typed. */
static GPExpr *simp_rewrite(void *user, GPExpr *orig, GPExpr *rebuilt) {
  Simp *s = user;
  return std_note_typed(simp_node(s, orig, rebuilt), rebuilt, &s->untyped);
}

static GPExpr *simp_function(void *user, const GPModule *mod, int32_t index) {
  Simp *s = user;
  s->source = mod->source_name;
  s->untyped = false;
  return H->rewrite(&mod->funcs[index]->base, simp_rewrite, s);
}

static int simplify_inference(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args(PASS_NAME, args, nargs, &mod, &ctx) != 0) return -1;
  Simp s = {.ctx = ctx};
  GPModule *out = std_function_pass_typed(mod, simp_function, &s, &s.untyped);
  if (!out) return -1;
  std_note(s.ctx,
           "unpacked %lld batch_norm, %lld dropout, %lld layer_norm, %lld instance_norm, %lld group_norm, "
           "%lld l2_normalize",
           (long long)s.batch_norm, (long long)s.dropout, (long long)s.layer_norm, (long long)s.instance_norm,
           (long long)s.group_norm, (long long)s.l2_normalize);
  return std_return_module(result, out);
}

int std_register_simplify_inference(void) {
  static const char *const required[] = {"InferType"};
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = PASS_NAME,
      .opt_level = 0,
      .kind = GP_PASS_TRANSFORM,
      .required = required,
      .num_required = 1,
      .func = simplify_inference,
      .help = "Unpack inference-time batch_norm and dropout; decompose layer_norm, instance_norm, "
              "group_norm and l2_normalize into elementwise ops and reductions.",
  };
  return H->pass_register(&info, 0);
}
