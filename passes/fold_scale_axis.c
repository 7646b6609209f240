/* fold_scale_axis.c -- BackwardFoldScaleAxis, ForwardFoldScaleAxis and FoldScaleAxis (all
 * opt-level 3, requiring InferType), TVM v0.12's src/relay/transforms/fold_scale_axis.cc.  The
 * three live in one file because they share the analysis (TVM keeps them in one file too).
 *
 * A message is one channel axis plus "the scale must be positive" (a relu lies between the
 * scale and the weight); no message means no scale can be folded there.
 *  - Forward (a multiply by a per-channel / scalar constant feeding a conv2d / conv3d / dense):
 *    prep runs parents before children (reverse post-order): conv sends {C of data_layout} to
 *    its data (groups 1 or depthwise, plain layouts), dense {1} (2-d data), relu / leaky_relu
 *    pass their message on, positive; add / subtract pass it to the side that carries the
 *    channel axis when the other broadcasts along it alone; every other consumer (tuples, lets,
 *    ifs, functions, other ops, multiply itself) sends none.  A node's message is the
 *    intersection over its consumers.  The rewrite (children first) turns a multiply with a
 *    message whose other side broadcasts along the axis (squeezed to 1-d; a scalar becomes C
 *    copies) into "x scaled by s"; relu passes it on; add / subtract divide the other side by
 *    s; conv multiplies its weight along I (O for depthwise), dense along its K axis.
 *  - Backward (a multiply by a per-channel constant after a conv2d / conv3d / dense): prep runs
 *    children first: a call used exactly once (counting edges) gets a message from conv
 *    ({C of out_layout}), dense ({1}, 2-d), relu (positive), add / subtract (one side, or both
 *    with equal axes and shapes), bias_add (its axis attribute equals the message's axis, as
 *    written: TVM compares axis=-1 literally).  A multiply whose argument has a message and
 *    whose other side broadcasts along it (and is a non-negative constant when required) is
 *    removed: the scale moves down the chain, multiplying the other side of add / subtract,
 *    the bias of bias_add, and the weights of conv (along O) or dense (along its units axis).
 *  - FoldScaleAxis: Backward, Forward, then the registered FoldConstant (through the host).
 * When the weight (or bias) and the scale are constants with float32 / float64 data the new
 * constant is computed here (in float64, stored in the weight's dtype) instead of building
 * multiply(weight, expand_dims(squeeze(scale))) for FoldConstant, so the directional passes'
 * output is TVM's after FoldConstant; other operands get TVM's expressions.
 * Refused with a note: blocked layouts (NCHW4c, OIHW4o4i), grouped non-depthwise convs, dense
 * over data of rank other than 2 (TVM would scale the wrong axis), two consumers asking for
 * different axes (TVM's empty intersection trips an ICHECK), a non-constant scalar scale (no
 * repeat op here), dynamic dims, a weight whose dtype is not the scale's (TVM would build an
 * ill-typed multiply; backward checks the whole chain before it removes the multiply).
 * Linear in the graph: one post-order, arrays indexed by node id, one host rewrite; the
 * backward chains are walked with an explicit stack, each node once.  No recursion. */
#include "expr_build.h"
#include "pattern_pass.h"

#include <assert.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Loads at any alignment (constants may view a mapped file). */
static inline float ldf(const char *p) {
  float v;
  memcpy(&v, p, 4);
  return v;
}
static inline double ldd(const char *p) {
  double v;
  memcpy(&v, p, 8);
  return v;
}

#define FWD_NAME "ForwardFoldScaleAxis"
#define BWD_NAME "BackwardFoldScaleAxis"
#define ALL_NAME "FoldScaleAxis"

#define NO_ENTRY (-2)
#define NO_MSG (-1)

typedef enum { K_OTHER, K_RELU, K_ADDSUB, K_MULTIPLY, K_CONV, K_DENSE, K_BIAS_ADD } OpKind;

/* Notes kept until the pass ends (FoldScaleAxis's nested FoldConstant run would drop them). */
typedef struct Notes {
  char *buf;
  size_t len, cap;
} Notes;

static void notes_add(Notes *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void notes_add(Notes *n, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  size_t need = (size_t)(k < 0 ? 0 : k >= (int)sizeof line ? (int)sizeof line - 1 : k) + 1;
  if (n->len + need > n->cap) {
    n->cap = (n->len + need) * 2;
    n->buf = gp_scratch_realloc(n->buf, n->cap);
  }
  memcpy(n->buf + n->len, line, need);
  n->len += need;
}

static void notes_flush(Notes *n, GPPassContext *ctx) {
  for (size_t i = 0; i < n->len; i += strlen(n->buf + i) + 1) std_note(ctx, "%s", n->buf + i);
  gp_scratch_free(n->buf);
  *n = (Notes){0};
}

typedef struct Fsa {
  const char *pass;
  Notes *notes;
  GPPassContext *ctx;
  const char *source;
  bool forward;
  GPExprIndex *ix; /* the function's node index (ABI 1.4): children by id, no pointer map */
  GPExpr *const *nodes;
  size_t n;
  uint8_t *kind;   /* per id: its OpKind */
  int32_t *axis;   /* message: axis, NO_MSG, NO_ENTRY */
  uint8_t *pos;    /* message requires a positive scale */
  uint32_t *refs;  /* backward: uses (edges) */
  int32_t *chain;  /* backward: fold id + 1 of the chain the node belongs to */
  GPExpr **value;  /* forward: the scaled value of node i */
  /* forward: the scale of node i's value; backward: per fold (indexed by the multiply) */
  GPExpr **scale;
  uint8_t *sside;  /* backward: the side of the multiply that carries the message */
  int64_t folded, kept;
  SBOps ops;
} Fsa;

static const char *where(const Fsa *s, const GPExpr *e, char *buf, size_t n) { return std_where(s->source, e, buf, n); }

/* The kind of a call of the op named op (NULL: not an op call); the binary kinds also need two
 * arguments (kinds() checks). */
static OpKind op_kind_of(const char *op) {
  if (!op) return K_OTHER;
  if (!strcmp(op, "nn.relu") || !strcmp(op, "nn.leaky_relu")) return K_RELU;
  if (!strcmp(op, "add") || !strcmp(op, "subtract")) return K_ADDSUB;
  if (!strcmp(op, "multiply")) return K_MULTIPLY;
  if (!strcmp(op, "nn.conv2d") || !strcmp(op, "nn.conv3d")) return K_CONV;
  if (!strcmp(op, "nn.dense")) return K_DENSE;
  if (!strcmp(op, "nn.bias_add")) return K_BIAS_ADD;
  return K_OTHER;
}

/* s->kind from the index's tags: each distinct op is classified once by name, then a node
 * costs a table read (and, for the binary kinds, its argument count from the index). */
static void kinds(Fsa *s) {
  int32_t maxop = -1;
  for (size_t k = 0; k < s->n; k++)
    if (s->ix->tags[k] > maxop) maxop = s->ix->tags[k];
  uint8_t *by_op = gp_scratch_alloc((size_t)maxop + 2);
  memset(by_op, 0xff, (size_t)maxop + 2);
  for (size_t k = 0; k < s->n; k++) {
    int32_t t = s->ix->tags[k];
    if (t < 0) {
      s->kind[k] = K_OTHER;
      continue;
    }
    if (by_op[t] == 0xff) by_op[t] = (uint8_t)op_kind_of(sb_op_name(s->nodes[k]));
    OpKind kk = (OpKind)by_op[t];
    if (kk != K_OTHER && kk != K_RELU && s->ix->kid_offsets[k + 1] - s->ix->kid_offsets[k] != 3) kk = K_OTHER; /* callee + 2 */
    s->kind[k] = (uint8_t)kk;
  }
  gp_scratch_free(by_op);
}

/* Child i of node k, and argument i of call k (child 0 is the callee), as ids. */
static inline int32_t kid_id(const Fsa *s, size_t k, int32_t i) { return s->ix->kids[s->ix->kid_offsets[k] + i]; }
static inline int32_t arg_id(const Fsa *s, size_t k, int32_t i) { return kid_id(s, k, 1 + i); }
static inline OpKind kind_at(const Fsa *s, int64_t id) { return (OpKind)s->kind[id]; }

/* The loops over ids below read a node, then its arguments' types and its attributes: each a
 * miss at 1M calls, one after the other.  Stepping to id k, they fetch node k + 2 * FSA_AHEAD
 * (in either direction: step -1 for forward_prep) and the arguments and attributes of node
 * k + FSA_AHEAD, whose node was fetched FSA_AHEAD steps before.  Only calls of a kind the pass
 * looks at (two arguments, or relu's one) have their arguments fetched. */
#define FSA_AHEAD 8
static inline void fsa_prefetch(const Fsa *s, size_t k, int step) {
  size_t far = k + (size_t)(2 * FSA_AHEAD * step), near = k + (size_t)(FSA_AHEAD * step);
  if (far < s->n) __builtin_prefetch(s->nodes[far]);
  if (near < s->n && s->kind[near] != K_OTHER) {
    const GPCall *c = (const GPCall *)s->nodes[near];
    for (int32_t a = 0; a < c->nargs && a < 2; a++) __builtin_prefetch(c->args[a]);
    if (c->attrs) __builtin_prefetch(c->attrs);
  }
}

static const GPType *ttype(const GPExpr *e) {
  const GPType *t = e->checked_type;
  return t && t->kind == GP_TYPE_TENSOR ? t : NULL;
}

/* A tensor that could scale one axis: every dim 1 but at most one (a scalar, a channel vector). */
static bool scale_shaped(const GPExpr *e) {
  const GPType *t = ttype(e);
  if (!t) return false;
  int32_t wide = 0;
  for (int32_t d = 0; d < t->n; d++) wide += t->tensor.shape[d] != 1;
  return wide <= 1;
}

/* ---- layouts */

typedef struct Conv {
  int32_t c;      /* channel axis of the data (forward) or output (backward) layout */
  int32_t ki, ko; /* kernel I and O axes */
  int32_t kndim;
  bool depthwise;
} Conv;

static bool plain_layout(const char *l) {
  for (const char *p = l; *p; p++)
    if (*p < 'A' || *p > 'Z') return false;
  return *l != 0;
}

/* Whether the conv's scale can fold (TVM's ConvForwardPrep / ConvBackwardPrep); *why when not. */
static bool conv_info(const GPExpr *call, bool forward, Conv *ci, const char **why) {
  bool is3d = !strcmp(sb_op_name(call), "nn.conv3d");
  const char *dl = pp_attr_str(call, "data_layout", is3d ? "NCDHW" : "NCHW");
  const char *kl = pp_attr_str(call, "kernel_layout", is3d ? "OIDHW" : "OIHW");
  const char *ol = pp_attr_str(call, "out_layout", "");
  if (!*ol) ol = dl;
  const char *l = forward ? dl : ol;
  if (!plain_layout(l) || !plain_layout(kl)) {
    *why = "a blocked layout (channel blocking is not handled)";
    return false;
  }
  ci->c = pp_layout_axis(l, 'C');
  ci->ki = pp_layout_axis(kl, 'I');
  ci->ko = pp_layout_axis(kl, 'O');
  ci->kndim = (int32_t)strlen(kl);
  if (ci->c < 0 || ci->ki < 0 || ci->ko < 0) {
    *why = "a layout without C, I or O";
    return false;
  }
  int64_t groups = pp_attr_int(call, "groups", 1);
  const GPType *wt = ttype(((const GPCall *)call)->args[1]);
  ci->depthwise = wt && wt->n == ci->kndim && wt->tensor.shape[ci->ko] == groups && wt->tensor.shape[ci->ki] == 1;
  if (groups != 1 && !ci->depthwise) {
    *why = "a grouped convolution that is not depthwise";
    return false;
  }
  return true;
}

/* ---- messages */

static void update(Fsa *s, int32_t j, int32_t axis, bool pos) {
  if (s->axis[j] == NO_ENTRY) {
    s->axis[j] = axis;
    s->pos[j] = axis >= 0 && pos;
  } else if (s->axis[j] != axis || axis < 0) { /* the intersection: differing axes leave none */
    s->axis[j] = NO_MSG;
    s->pos[j] = 0;
  } else {
    s->pos[j] = s->pos[j] || pos;
  }
}

static int32_t msg_of(const Fsa *s, int32_t j) { return s->axis[j] < 0 ? NO_MSG : s->axis[j]; }

/* TVM's MatchBroadcastToLeftAxes without a value: trhs matches tlhs at `axis` and is 1
 * elsewhere (right-aligned). */
static bool match_axes(const GPType *tl, const GPType *tr, int32_t axis) {
  if (!tl || !tr || tl->n < tr->n || axis < 0 || axis >= tl->n) return false;
  int32_t base = tl->n - tr->n;
  for (int32_t i = 0; i < tl->n; i++) {
    if (i == axis) {
      if (i < base || tl->tensor.shape[i] < 0 || tl->tensor.shape[i] != tr->tensor.shape[i - base]) return false;
    } else if (i >= base && tr->tensor.shape[i - base] != 1) {
      return false;
    }
  }
  return true;
}

static bool same_shape(const GPType *a, const GPType *b) {
  if (!a || !b || a->n != b->n) return false;
  for (int32_t i = 0; i < a->n; i++)
    if (a->tensor.shape[i] < 0 || a->tensor.shape[i] != b->tensor.shape[i]) return false;
  return true;
}

/* Forward prep: parents first. */
static void forward_prep(Fsa *s) {
  for (size_t k = s->n; k-- > 0;) {
    fsa_prefetch(s, k, -1);
    GPExpr *e = s->nodes[k];
    int32_t out = s->axis[k] >= 0 ? s->axis[k] : NO_MSG;
    bool pos = out >= 0 && s->pos[k];
    switch (ekind(e)) {
    case GP_TI_CALL: {
      const GPCall *c = (const GPCall *)e;
      switch (kind_at(s, k)) {
      case K_RELU: update(s, arg_id(s, k, 0), out, true); break;
      case K_ADDSUB: {
        const GPType *t0 = ttype(c->args[0]), *t1 = ttype(c->args[1]);
        if (out >= 0 && match_axes(t0, t1, out)) {
          update(s, arg_id(s, k, 0), out, pos);
          update(s, arg_id(s, k, 1), NO_MSG, false);
        } else if (out >= 0 && match_axes(t1, t0, out)) {
          update(s, arg_id(s, k, 0), NO_MSG, false);
          update(s, arg_id(s, k, 1), out, pos);
        } else {
          update(s, arg_id(s, k, 0), NO_MSG, false);
          update(s, arg_id(s, k, 1), NO_MSG, false);
        }
        break;
      }
      case K_CONV: {
        Conv ci;
        const char *why;
        update(s, arg_id(s, k, 0), conv_info(e, true, &ci, &why) ? ci.c : NO_MSG, false);
        update(s, arg_id(s, k, 1), NO_MSG, false);
        break;
      }
      case K_DENSE: {
        const GPType *t0 = ttype(c->args[0]);
        update(s, arg_id(s, k, 0), t0 && t0->n == 2 ? 1 : NO_MSG, false);
        update(s, arg_id(s, k, 1), NO_MSG, false);
        break;
      }
      default:
        for (int32_t i = 0; i < c->nargs; i++) update(s, arg_id(s, k, i), NO_MSG, false);
        break;
      }
      break;
    }
    case GP_TI_TUPLE:
      for (int32_t i = 0; i < ((const GPTuple *)e)->n; i++) update(s, kid_id(s, k, i), NO_MSG, false);
      break;
    case GP_TI_LET:
      update(s, kid_id(s, k, 1), NO_MSG, false);
      update(s, kid_id(s, k, 2), NO_MSG, false);
      break;
    case GP_TI_FUNCTION_EXPR: update(s, kid_id(s, k, ((const GPFunctionExpr *)e)->nparams), NO_MSG, false); break;
    case GP_TI_IF:
      update(s, kid_id(s, k, 0), NO_MSG, false);
      update(s, kid_id(s, k, 1), NO_MSG, false);
      update(s, kid_id(s, k, 2), NO_MSG, false);
      break;
    default: break; /* a get-item sends nothing (TVM's MixedModeVisitor default) */
    }
  }
}

/* Backward prep: children first; only calls used once get a message. */
static void backward_prep(Fsa *s) {
  for (size_t q = 0; q < (size_t)s->ix->kid_offsets[s->n]; q++) s->refs[s->ix->kids[q]]++;
  if (s->n) s->refs[s->n - 1]++; /* the root */
  for (size_t k = 0; k < s->n; k++) {
    fsa_prefetch(s, k, 1);
    OpKind kind = kind_at(s, k);
    if (kind == K_OTHER || kind == K_MULTIPLY || s->refs[k] != 1) continue;
    GPExpr *e = s->nodes[k];
    const GPCall *c = (const GPCall *)e;
    int32_t m0 = msg_of(s, arg_id(s, k, 0));
    int32_t out = NO_MSG;
    bool pos = false;
    switch (kind) {
    case K_RELU:
      out = m0;
      pos = true;
      break;
    case K_ADDSUB: {
      int32_t m1 = msg_of(s, arg_id(s, k, 1));
      const GPType *t0 = ttype(c->args[0]), *t1 = ttype(c->args[1]);
      int64_t j0 = arg_id(s, k, 0), j1 = arg_id(s, k, 1);
      if (m0 >= 0 && match_axes(t0, t1, m0)) out = m0, pos = s->pos[j0];
      else if (m1 >= 0 && match_axes(t1, t0, m1)) out = m1, pos = s->pos[j1];
      else if (m0 >= 0 && m0 == m1 && same_shape(t0, t1)) out = m0, pos = s->pos[j0];
      break;
    }
    case K_CONV: {
      Conv ci;
      const char *why;
      if (conv_info(e, false, &ci, &why)) out = ci.c;
      break;
    }
    case K_DENSE: {
      const GPType *t = ttype(e);
      if (t && t->n == 2) out = 1;
      break;
    }
    case K_BIAS_ADD:
      if (m0 >= 0 && pp_attr_int(e, "axis", 1) == m0) out = m0, pos = s->pos[arg_id(s, k, 0)];
      break;
    default: break;
    }
    if (out >= 0) {
      s->axis[k] = out;
      s->pos[k] = pos;
    }
  }
}

/* ---- building (constants folded here; other operands as TVM's expressions) */

/* A typed constant of t (t stays the caller's). */
static GPExpr *typed_constant(SBuild *b, GPTensor *t) {
  if (!t) {
    b->failed = true;
    return NULL;
  }
  const GPType *ty = H->type_tensor(t->dl.dtype, t->dl.ndim, t->dl.shape);
  GPConstant *c = ty ? H->constant_new(t) : NULL;
  if (!c) {
    b->failed = true;
    return NULL;
  }
  GPExpr *r = H->expr_annotate(&c->base, ty, 0, 0);
  gp_release(c);
  return sb_keep(b, r);
}

/* The constant x with a new shape (same element count): a copy of its data. */
static GPExpr *reshape_constant(SBuild *b, const GPTensor *x, int32_t ndim, const int64_t *shape) {
  GPTensor *t = pp_tensor_new(x->dl.dtype, ndim, shape);
  if (!t) {
    b->failed = true;
    return NULL;
  }
  int64_t n = pp_numel(x);
  size_t bytes = (size_t)n * ((x->dl.dtype.bits * x->dl.dtype.lanes + 7) / 8);
  if (bytes) memcpy(t->dl.data, (const char *)x->dl.data + x->dl.byte_offset, bytes);
  GPExpr *r = typed_constant(b, t);
  gp_release(t);
  return r;
}

/* expand_dims(x, axis, num) */
static GPExpr *mk_expand(Fsa *s, SBuild *b, GPExpr *x, int32_t axis, int32_t num) {
  (void)s;
  if (!x || b->failed) return NULL;
  if (num <= 0) return x;
  const GPTensor *c = pp_float_data(x);
  if (c && c->dl.ndim + num <= 16 && axis <= c->dl.ndim) {
    int64_t shape[16];
    int32_t nd = 0;
    for (int32_t i = 0; i < c->dl.ndim + num; i++)
      shape[nd++] = i < axis ? c->dl.shape[i] : i < axis + num ? 1 : c->dl.shape[i - num];
    return reshape_constant(b, c, nd, shape);
  }
  static const char *const keys[] = {"axis", "num_newaxis"};
  GPAttrValue vals[2] = {{.kind = GP_ATTR_INT, .i = axis}, {.kind = GP_ATTR_INT, .i = num}};
  return sb_call(b, "expand_dims", 1, &x, 2, keys, vals);
}

/* TVM's ExpandBiasToMatchAxis for one axis. */
static GPExpr *mk_expand_bias(Fsa *s, SBuild *b, GPExpr *x, int32_t ndim, int32_t axis) {
  return mk_expand(s, b, x, 1, ndim - axis - 1);
}

static GPExpr *mk_squeeze(SBuild *b, GPExpr *x, int32_t n, const int64_t *axes) {
  if (!x || b->failed) return NULL;
  const GPTensor *c = pp_float_data(x);
  if (c && c->dl.ndim <= 16) {
    int64_t shape[16];
    int32_t nd = 0;
    for (int32_t i = 0; i < c->dl.ndim; i++) {
      bool drop = false;
      for (int32_t j = 0; j < n; j++) drop = drop || axes[j] == i;
      if (!drop) shape[nd++] = c->dl.shape[i];
    }
    return reshape_constant(b, c, nd, shape);
  }
  static const char *const keys[] = {"axis"};
  GPAttrValue v = {.kind = GP_ATTR_INTS, .n = n, .ints = axes};
  return sb_call(b, "squeeze", 1, &x, 1, keys, &v);
}

/* ---- the fold's arithmetic: a weight times a per-channel scale
 * Kept apart from the graph walk.  A folded weight is rows of `inner` float32 values, row r
 * times scale s[r % ns] (backward: O rows of I*H*W times s[o]; forward: O*I rows of H*W
 * times s[i]).  Each weight value is read once and each folded value written once, in float32
 * as FoldConstant's multiply computes it (bit for bit); a large weight is split over the cores
 * (FoldPool; its fresh pages are faulted in by all of them, which is most of the cost). */

#if defined(__GNUC__) && !defined(__clang__)
#define FSA_VECTORIZE __attribute__((optimize("O3")))
#else
#define FSA_VECTORIZE
#endif

typedef struct ScaleRows {
  const char *w;       /* rows x inner float32, compact (any alignment) */
  const char *s;       /* ns float32 scales (any alignment) */
  float *o;            /* rows x inner, the folded weight */
  int64_t inner, ns;
  int64_t r0, r1;      /* this part's rows */
} ScaleRows;

FSA_VECTORIZE static void scale_row_f32(const char *restrict w, float s, float *restrict o, int64_t n) {
  for (int64_t k = 0; k < n; k++) o[k] = ldf(w + 4 * k) * s;
}

FSA_VECTORIZE static void mul_f32(const char *restrict w, const char *restrict s, float *restrict o, int64_t n) {
  for (int64_t k = 0; k < n; k++) o[k] = ldf(w + 4 * k) * ldf(s + 4 * k);
}

static void *scale_rows_part(void *arg) {
  const ScaleRows *j = arg;
  if (j->inner == 1) { /* rows of one value (a forward 1x1 conv: O x I): runs of the scale vector */
    for (int64_t r = j->r0; r < j->r1;) {
      int64_t si = r % j->ns, n = j->ns - si < j->r1 - r ? j->ns - si : j->r1 - r;
      mul_f32(j->w + 4 * r, j->s + 4 * si, j->o + r, n);
      r += n;
    }
    return NULL;
  }
  int64_t si = j->r0 % j->ns;
  for (int64_t r = j->r0; r < j->r1; r++) {
    scale_row_f32(j->w + 4 * r * j->inner, ldf(j->s + 4 * si), j->o + r * j->inner, j->inner);
    if (++si == j->ns) si = 0;
  }
  return NULL;
}

#define FSA_PAR_BYTES ((int64_t)1 << 20)   /* below 1 MiB of weight one thread does it */
#define FSA_UNIT_BYTES ((int64_t)1 << 18)  /* a unit of work: rows of about 256 KiB */
#define FSA_MAX_THREADS 8

/* The helper threads of one direction's run (run_direction): started at its first large
 * weight, stopped when it ends.  A weight is cut into units of rows that the caller and the
 * helpers claim in turn, so a helper the scheduler starts late takes fewer units instead of
 * being waited for at every weight. */
typedef struct FoldPool {
  pthread_mutex_t mu;
  pthread_cond_t cv;  /* helpers: units to claim or quit; the caller: all units done */
  pthread_t th[FSA_MAX_THREADS];
  int nth;            /* helpers running */
  bool init, quit;
  ScaleRows job;      /* the current weight (r0, r1 per unit) */
  int64_t rows, unit_rows, nunits, next, done;
} FoldPool;

static _Thread_local FoldPool *fold_pool; /* the running direction's, or NULL: one thread */

/* Claim and run units of the current weight while there are any; p->mu held. */
static void fold_units_locked(FoldPool *p) {
  while (p->next < p->nunits) {
    ScaleRows j = p->job;
    j.r0 = p->next++ * p->unit_rows;
    j.r1 = j.r0 + p->unit_rows < p->rows ? j.r0 + p->unit_rows : p->rows;
    pthread_mutex_unlock(&p->mu);
    scale_rows_part(&j);
    pthread_mutex_lock(&p->mu);
    if (++p->done == p->nunits) pthread_cond_broadcast(&p->cv);
  }
}

static void *fold_helper(void *arg) {
  FoldPool *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->quit && p->next >= p->nunits) pthread_cond_wait(&p->cv, &p->mu);
    if (p->quit) break;
    fold_units_locked(p);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

static void fold_pool_start(FoldPool *p) {
  p->init = true;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  long nproc = sysconf(_SC_NPROCESSORS_ONLN);
  for (long t = 1; t < nproc && p->nth < FSA_MAX_THREADS; t++) {
    if (pthread_create(&p->th[p->nth], NULL, fold_helper, p) != 0) break;
    p->nth++;
  }
}

static void fold_pool_stop(FoldPool *p) {
  if (!p->init) return;
  pthread_mutex_lock(&p->mu);
  p->quit = true;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  for (int t = 0; t < p->nth; t++) pthread_join(p->th[t], NULL);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
}

static void scale_rows_f32(const char *w, const char *s, float *o, int64_t rows, int64_t inner, int64_t ns) {
  FoldPool *p = fold_pool;
  ScaleRows job = {w, s, o, inner, ns, 0, rows};
  if (p && !p->init && rows * inner * 4 >= FSA_PAR_BYTES) fold_pool_start(p);
  if (!p || !p->nth || rows < 2 || rows * inner * 4 < FSA_PAR_BYTES) {
    scale_rows_part(&job);
    return;
  }
  pthread_mutex_lock(&p->mu);
  p->job = job;
  p->rows = rows;
  p->unit_rows = FSA_UNIT_BYTES / (inner * 4) > 0 ? FSA_UNIT_BYTES / (inner * 4) : 1;
  p->nunits = (rows + p->unit_rows - 1) / p->unit_rows;
  p->next = p->done = 0;
  pthread_cond_broadcast(&p->cv);
  fold_units_locked(p);
  while (p->done < p->nunits) pthread_cond_wait(&p->cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
}

/* Whether x op y over the broadcast shape (element strides sa of x, sc of y; 0 along broadcast
 * axes) is rows of a compact x times one value of a 1-d y each (ScaleRows): x has the whole
 * shape and y steps by one along one axis at most (unit axes aside); *rows, *inner, *ns when
 * so. */
static bool scale_rows_shape(int32_t nd, const int64_t *shape, const int64_t *sa, const int64_t *sc, int64_t *rows,
                             int64_t *inner, int64_t *ns) {
  int64_t step = 1, total = 1;
  int32_t axis = -1;
  for (int32_t i = nd - 1; i >= 0; i--) {
    if (shape[i] == 1) continue;
    if (sa[i] != step) return false; /* x is broadcast or not compact */
    step *= shape[i];
    if (sc[i] != 0) {
      if (axis >= 0 || sc[i] != 1) return false;
      axis = i;
    }
  }
  total = step;
  if (total == 0) return false;
  *inner = 1;
  for (int32_t i = nd - 1; i > axis; i--) *inner *= shape[i];
  *ns = axis >= 0 ? shape[axis] : 1;
  if (axis < 0) { /* one value for everything: rows of the last axis, to split */
    *inner = nd ? shape[nd - 1] : 1;
    if (*inner == 0) return false;
  }
  *rows = total / *inner;
  return true;
}

/* x op y with numpy broadcasting; folded when both are float constants of one dtype. */
static GPExpr *mk_binop(SBuild *b, const char *op, GPExpr *x, GPExpr *y) {
  if (!x || !y || b->failed) return NULL;
  const GPTensor *a = pp_float_data(x), *c = pp_float_data(y);
  if (!a || !c || a->dl.dtype.bits != c->dl.dtype.bits || a->dl.ndim > 16 || c->dl.ndim > 16)
    return sb_call2(b, op, x, y);
  int32_t nd = a->dl.ndim > c->dl.ndim ? a->dl.ndim : c->dl.ndim;
  int64_t shape[16], sa[16], sc[16], idx[16];
  for (int32_t i = nd - 1, ia = a->dl.ndim - 1, ic = c->dl.ndim - 1; i >= 0; i--, ia--, ic--) {
    int64_t da = ia >= 0 ? a->dl.shape[ia] : 1, dc = ic >= 0 ? c->dl.shape[ic] : 1;
    if (da != dc && da != 1 && dc != 1) return sb_call2(b, op, x, y); /* let InferType report it */
    shape[i] = da == 1 ? dc : da;
  }
  /* element strides, 0 along broadcast axes */
  int64_t ea = 1, ec = 1;
  for (int32_t i = nd - 1, ia = a->dl.ndim - 1, ic = c->dl.ndim - 1; i >= 0; i--, ia--, ic--) {
    int64_t da = ia >= 0 ? a->dl.shape[ia] : 1, dc = ic >= 0 ? c->dl.shape[ic] : 1;
    sa[i] = da == 1 ? 0 : ea;
    sc[i] = dc == 1 ? 0 : ec;
    ea *= da;
    ec *= dc;
    idx[i] = 0;
  }
  GPTensor *t = pp_tensor_new(a->dl.dtype, nd, shape);
  if (!t) {
    b->failed = true;
    return NULL;
  }
  /* Coalesce trailing axes along which both operands step alike (both compact, or both
   * broadcast): a weight (O, I, H, W) times a scale (O, 1, 1, 1) becomes rows of I*H*W times one
   * value, not O*I*H rows of W (the odometer per row cost more than the row). */
  while (nd >= 2 && sa[nd - 2] == sa[nd - 1] * shape[nd - 1] && sc[nd - 2] == sc[nd - 1] * shape[nd - 1]) {
    shape[nd - 2] *= shape[nd - 1];
    sa[nd - 2] = sa[nd - 1];
    sc[nd - 2] = sc[nd - 1];
    nd--;
  }
  int64_t total = pp_numel(t), pa = 0, pc = 0;
  bool div = !strcmp(op, "divide");
  bool f32 = a->dl.dtype.bits == 32;
  const char *pa0 = (const char *)a->dl.data + a->dl.byte_offset, *pc0 = (const char *)c->dl.data + c->dl.byte_offset;
  int64_t inner = nd ? shape[nd - 1] : 1, ia = nd ? sa[nd - 1] : 0, ic = nd ? sc[nd - 1] : 0;
  int64_t srows, sinner, sns;
  if (f32 && !div && scale_rows_shape(nd, shape, sa, sc, &srows, &sinner, &sns)) {
    scale_rows_f32(pa0, pc0, (float *)t->dl.data, srows, sinner, sns); /* the weight x scale fold */
    total = 0;
  }
  for (int64_t k = 0; k < total; k += inner) {
    /* one row along the last axis (compact output), then the odometer over the outer axes */
    /* The operands are read with memcpy: a constant may view a mapped file at any alignment
     * (the compiler makes these plain loads). */
    if (f32) { /* in float32, as FoldConstant's kernels compute it (TVM's result bit for bit) */
      const char *xa = pa0 + 4 * pa, *yc = pc0 + 4 * pc;
      float *o = (float *)t->dl.data + k;
      if (div)
        for (int64_t r = 0; r < inner; r++) o[r] = ldf(xa + 4 * r * ia) / ldf(yc + 4 * r * ic);
      else if (ic == 0) { /* a row times one value: the common case (weight x per-channel scale) */
        float s = ldf(yc);
        for (int64_t r = 0; r < inner; r++) o[r] = ldf(xa + 4 * r * ia) * s;
      } else
        for (int64_t r = 0; r < inner; r++) o[r] = ldf(xa + 4 * r * ia) * ldf(yc + 4 * r * ic);
    } else {
      const char *xa = pa0 + 8 * pa, *yc = pc0 + 8 * pc;
      double *o = (double *)t->dl.data + k;
      for (int64_t r = 0; r < inner; r++) {
        double u = ldd(xa + 8 * r * ia), w = ldd(yc + 8 * r * ic);
        o[r] = div ? u / w : u * w;
      }
    }
    for (int32_t i = nd - 2; i >= 0; i--) {
      pa += sa[i];
      pc += sc[i];
      if (++idx[i] < shape[i]) break;
      pa -= sa[i] * shape[i];
      pc -= sc[i] * shape[i];
      idx[i] = 0;
    }
  }
  /* The weight is read: a constant viewing the model file gives its pages back (ABI 1.3), so
   * the old and the folded weights are not both resident while the pass runs. */
  if (GP_HAS_FIELD(H, GPHostAPI, tensor_drop_pages) && H->tensor_drop_pages) {
    H->tensor_drop_pages(a);
    H->tensor_drop_pages(c);
  }
  GPExpr *r = typed_constant(b, t);
  gp_release(t);
  return r;
}

/* TVM's MatchBroadcastToLeftAxes with a value: the scale squeezed to 1-d (a scalar constant
 * repeated to the channel count), or NULL with *why (no error) when it does not match. */
static GPExpr *match_scale(Fsa *s, SBuild *b, const GPType *tl, const GPType *tr, int32_t axis, GPExpr *rhs,
                           const char **why) {
  (void)s;
  *why = "the scale does not broadcast along the channel axis alone";
  if (!tl || !tr || tl->n < tr->n || axis < 0 || axis >= tl->n) return NULL;
  if (tr->n == 0) {
    int64_t ch = tl->tensor.shape[axis];
    const GPTensor *c = pp_float_data(rhs);
    if (ch < 0) {
      *why = "the channel dimension is dynamic";
      return NULL;
    }
    if (!c) {
      *why = "a scalar scale that is not a float constant (no repeat op)";
      return NULL;
    }
    GPTensor *t = pp_tensor_new(c->dl.dtype, 1, &ch);
    if (!t) {
      b->failed = true;
      return NULL;
    }
    for (int64_t i = 0; i < ch; i++) pp_set(t, i, pp_get(c, 0));
    GPExpr *r = typed_constant(b, t);
    gp_release(t);
    return r;
  }
  if (!match_axes(tl, tr, axis)) return NULL;
  int32_t base = tl->n - tr->n, nsq = 0;
  int64_t sq[16];
  for (int32_t i = base; i < tl->n && nsq < 16; i++)
    if (i != axis) sq[nsq++] = i - base;
  return nsq ? mk_squeeze(b, rhs, nsq, sq) : rhs;
}

/* TVM's IsAllPositiveConstant (>= 0), through expand_dims / reshape / transpose / squeeze /
 * repeat. */
static bool all_positive(const GPExpr *e) {
  while (e && ekind(e) == GP_TI_CALL) {
    const char *op = sb_op_name(e);
    if (!op || (strcmp(op, "expand_dims") && strcmp(op, "reshape") && strcmp(op, "transpose") &&
                strcmp(op, "squeeze") && strcmp(op, "repeat")))
      return false;
    e = ((const GPCall *)e)->args[0];
  }
  if (!e || ekind(e) != GP_TI_CONSTANT) return false;
  const GPTensor *t = ((const GPConstant *)e)->data;
  if (!t || !t->dl.data || t->dl.dtype.lanes != 1 || t->dl.strides) return false;
  int64_t n = pp_numel(t);
  const char *p = (const char *)t->dl.data + t->dl.byte_offset;
  DLDataType dt = t->dl.dtype;
  for (int64_t i = 0; i < n; i++) {
    double v;
    if (dt.code == kDLFloat && dt.bits == 32) v = ldf(p + 4 * i);
    else if (dt.code == kDLFloat && dt.bits == 64) v = ldd(p + 8 * i);
    else if (dt.code == kDLInt && dt.bits == 8) v = ((const int8_t *)p)[i];
    else if (dt.code == kDLInt && dt.bits == 32) {
      int32_t x;
      memcpy(&x, p + 4 * i, 4);
      v = x;
    }
    else if (dt.code == kDLUInt && (dt.bits == 8 || dt.bits == 32)) v = 0;
    else return false;
    if (!(v >= 0)) return false;
  }
  return true;
}

/* A call of like's op and attrs on new arguments.  When each has the type of the argument it
 * replaces (a weight or bias scaled in place keeps its shape and dtype) the call has like's
 * type: typed here, the re-typing after the rewrite keeps the whole chain without a walk. */
static GPExpr *mk_call(SBuild *b, const GPCall *like, GPExpr *a0, GPExpr *a1) {
  if (!a0 || (like->nargs == 2 && !a1) || b->failed) return NULL;
  GPExpr *args[2] = {a0, a1};
  GPCall *c = H->call_new(like->op, like->nargs, args, like->attrs);
  bool same = c && like->base.checked_type;
  for (int32_t k = 0; k < like->nargs && same; k++)
    same = args[k]->checked_type && args[k]->checked_type == like->args[k]->checked_type;
  if (same) c->base.checked_type = like->base.checked_type;
  return sb_keep(b, (GPExpr *)c);
}

/* The pending error as "cannot fold ... at <node>: <message>". */
static void fail_at(const Fsa *s, const GPExpr *e, const char *what, const char *op) {
  char msg[512], loc[256];
  snprintf(msg, sizeof msg, "%s", H->error_kind() ? H->error_message() : "building the replacement failed");
  int32_t kind = H->error_kind();
  H->error_set(kind ? kind : GP_ERR_PASS, "cannot fold the scale %s%s%s at %s: %s", what,
               *op ? " " : "", op, where(s, e, loc, sizeof loc), msg);
}

/* Whether the weight's dtype is the scale's.  When not, TVM would build an ill-typed multiply;
 * here the scale is not folded into that weight (the multiply stays) and a note says why. */
static bool same_dtype(const GPExpr *w, const GPExpr *scale) {
  const GPType *tw = ttype(w), *ts = ttype(scale);
  return !tw || !ts || (tw->tensor.dtype.code == ts->tensor.dtype.code && tw->tensor.dtype.bits == ts->tensor.dtype.bits);
}

static const char *dtype_str(DLDataType d, char *buf, size_t n) {
  snprintf(buf, n, "%s%d", d.code == kDLFloat ? "float" : d.code == kDLBfloat ? "bfloat" : "int", (int)d.bits);
  return buf;
}

/* "the weight of <op> at <node> is float64 and the scale float32" into buf. */
static const char *dtype_why(const Fsa *s, const GPExpr *at, const GPExpr *w, const GPExpr *scale, char *buf, size_t n) {
  char loc[256], a[16], b[16];
  snprintf(buf, n, "the weight of %s at %s is %s and the scale %s", sb_op_name(at), where(s, at, loc, sizeof loc),
           dtype_str(ttype(w)->tensor.dtype, a, sizeof a), dtype_str(ttype(scale)->tensor.dtype, b, sizeof b));
  return buf;
}

/* ---- forward rewrite */

static GPExpr *fwd_node(Fsa *s, int32_t i, GPExpr *orig, GPExpr *rebuilt) {
  OpKind kind = kind_at(s, i);
  if (kind == K_OTHER || kind == K_BIAS_ADD) return std_keep(rebuilt);
  const GPCall *oc = (const GPCall *)orig, *rc = (const GPCall *)rebuilt;
  int64_t j0 = arg_id(s, (size_t)i, 0), j1 = oc->nargs > 1 ? arg_id(s, (size_t)i, 1) : -1;
  bool sc0 = j0 >= 0 && s->value[j0], sc1 = j1 >= 0 && s->value[j1];
  SBuild b = {.ops = &s->ops, .at = orig};
  char loc[256];
  switch (kind) {
  case K_MULTIPLY: {
    int32_t axis = s->axis[i];
    if (axis < 0 || sc0 || sc1) break;
    const GPType *t0 = ttype(oc->args[0]), *t1 = ttype(oc->args[1]);
    const char *why = NULL;
    GPExpr *sv = NULL, *val = NULL;
    GPExpr *sc = match_scale(s, &b, t0, t1, axis, rc->args[1], &why);
    if (sc && (!s->pos[i] || all_positive(sc))) {
      val = rc->args[0];
      sv = sc;
    } else {
      const char *why2 = NULL;
      if (sc) why = "the scale is not a non-negative constant and a relu lies between it and the weight";
      GPExpr *sc2 = b.failed ? NULL : match_scale(s, &b, t1, t0, axis, rc->args[0], &why2);
      if (!sc) why = why2;
      if (sc2 && (!s->pos[i] || all_positive(sc2))) {
        val = rc->args[1];
        sv = sc2;
      } else if (sc2) {
        why = "the scale is not a non-negative constant and a relu lies between it and the weight";
      }
    }
    if (b.failed) {
      sb_finish(&b, NULL);
      fail_at(s, orig, "of multiply", "");
      return NULL;
    }
    if (!sv) {
      notes_add(s->notes, "kept multiply at %s: %s", where(s, orig, loc, sizeof loc), why);
      s->kept++;
      sb_finish(&b, NULL);
      break;
    }
    s->scale[i] = sb_finish(&b, sv);
    s->value[i] = gp_retain(val);
    s->axis[i] = axis;
    break;
  }
  case K_RELU:
    if (!sc0) break;
    s->value[i] = sb_finish(&b, mk_call(&b, oc, s->value[j0], NULL));
    s->scale[i] = gp_retain(s->scale[j0]);
    s->axis[i] = s->axis[j0];
    if (!s->value[i]) goto fail;
    break;
  case K_ADDSUB: {
    if (sc0 == sc1) break; /* none, or both (prep never scales both sides) */
    int64_t j = sc0 ? j0 : j1;
    const GPType *ts = ttype(sc0 ? oc->args[0] : oc->args[1]);
    GPExpr *e = mk_expand_bias(s, &b, s->scale[j], ts->n, s->axis[j]);
    GPExpr *other = mk_binop(&b, "divide", sc0 ? rc->args[1] : rc->args[0], e);
    s->value[i] = sb_finish(&b, sc0 ? mk_call(&b, oc, s->value[j], other) : mk_call(&b, oc, other, s->value[j]));
    if (!s->value[i]) goto fail;
    s->scale[i] = gp_retain(s->scale[j]);
    s->axis[i] = s->axis[j];
    break;
  }
  case K_CONV:
  case K_DENSE: {
    if (!sc0 || sc1) break;
    GPExpr *wscale = s->scale[j0];
    if (kind == K_CONV) {
      Conv ci;
      const char *why;
      if (!conv_info(orig, true, &ci, &why)) break; /* cannot happen: prep asked */
      wscale = mk_expand_bias(s, &b, wscale, ci.kndim, ci.depthwise ? ci.ko : ci.ki);
    }
    if (!same_dtype(rc->args[1], s->scale[j0])) { /* the plain rebuild keeps the multiply */
      char why[512];
      notes_add(s->notes, "kept a scale before %s: %s", sb_op_name(orig),
                dtype_why(s, orig, rc->args[1], s->scale[j0], why, sizeof why));
      s->kept++;
      sb_finish(&b, NULL);
      break;
    }
    GPExpr *w = mk_binop(&b, "multiply", rc->args[1], wscale);
    GPExpr *r = sb_finish(&b, mk_call(&b, oc, s->value[j0], w));
    if (!r) goto fail;
    s->folded++;
    return r;
  }
  default: break;
  }
  /* a scaled node's placeholder is its plain rebuild: right wherever the scale is not taken */
  return std_keep(rebuilt);
fail:
  sb_finish(&b, NULL);
  fail_at(s, orig, "into", sb_op_name(orig));
  return NULL;
}

/* ---- backward */

/* Pushes the nodes of the chain just below x that the scale moves through: a relu's or a
 * bias_add's data, the sides of an add / subtract that carry a message; a conv or dense ends it
 * (its weight takes the scale). */
static void chain_push_below(const Fsa *s, size_t x, size_t *stack, size_t *top) {
  switch (kind_at(s, x)) {
  case K_RELU:
  case K_BIAS_ADD: stack[(*top)++] = (size_t)arg_id(s, x, 0); break;
  case K_ADDSUB:
    for (int i = 0; i < 2; i++)
      if (msg_of(s, arg_id(s, x, i)) >= 0) stack[(*top)++] = (size_t)arg_id(s, x, i);
    break;
  default: break;
  }
}

/* The conv or dense of the chain from node a whose weight's dtype is not the scale's, or NULL
 * (stack has room for the chain). */
static const GPExpr *weight_of_other_dtype(const Fsa *s, size_t *stack, size_t a, const GPExpr *sc) {
  size_t top = 0;
  stack[top++] = a;
  while (top) {
    size_t x = stack[--top];
    OpKind kind = kind_at(s, x);
    if ((kind == K_CONV || kind == K_DENSE) && !same_dtype(((const GPCall *)s->nodes[x])->args[1], sc))
      return s->nodes[x];
    chain_push_below(s, x, stack, &top);
  }
  return NULL;
}

/* Decide the folds: for each multiply whose argument carries a message, the scale and the
 * chain of nodes it moves through (each used once, so in one chain only). */
static int backward_decide(Fsa *s) {
  size_t *stack = gp_scratch_alloc(sizeof(size_t) * (s->n ? s->n : 1));
  for (size_t k = 0; k < s->n; k++) {
    fsa_prefetch(s, k, 1);
    if (kind_at(s, k) != K_MULTIPLY) continue;
    GPExpr *e = s->nodes[k];
    const GPCall *c = (const GPCall *)e;
    int32_t m0 = msg_of(s, arg_id(s, k, 0)), m1 = msg_of(s, arg_id(s, k, 1));
    char loc[256], loc2[256];
    if (m0 < 0 && m1 < 0) { /* a near miss: a scale whose other side would fold but has other uses */
      for (int i = 0; i < 2; i++) {
        int64_t a = arg_id(s, k, i);
        OpKind ak = kind_at(s, a);
        if (a >= 0 && s->refs[a] > 1 && ak != K_OTHER && ak != K_MULTIPLY && scale_shaped(c->args[1 - i])) {
          notes_add(s->notes, "kept multiply at %s: its argument %s at %s has %u uses", where(s, e, loc, sizeof loc),
                   sb_op_name(c->args[i]), where(s, c->args[i], loc2, sizeof loc2), (unsigned)s->refs[a]);
          s->kept++;
          break;
        }
      }
      continue;
    }
    int side = m0 >= 0 ? 0 : 1;
    int32_t axis = side ? m1 : m0;
    int64_t a = arg_id(s, k, side);
    SBuild b = {.ops = &s->ops, .at = e};
    const char *why = NULL;
    GPExpr *sc = match_scale(s, &b, ttype(c->args[side]), ttype(c->args[1 - side]), axis, c->args[1 - side], &why);
    if (b.failed) {
      sb_finish(&b, NULL);
      gp_scratch_free(stack);
      fail_at(s, e, "of multiply", "");
      return -1;
    }
    if (!sc || (s->pos[a] && !all_positive(sc))) {
      if (sc) why = "the scale is not a non-negative constant and a relu lies between it and the weight";
      notes_add(s->notes, "kept multiply at %s: %s", where(s, e, loc, sizeof loc), why);
      s->kept++;
      sb_finish(&b, NULL);
      continue;
    }
    const GPExpr *bad = weight_of_other_dtype(s, stack, (size_t)a, sc);
    if (bad) {
      char dwhy[512];
      notes_add(s->notes, "kept multiply at %s: %s", where(s, e, loc, sizeof loc),
                dtype_why(s, bad, ((const GPCall *)bad)->args[1], sc, dwhy, sizeof dwhy));
      s->kept++;
      sb_finish(&b, NULL);
      continue;
    }
    s->scale[k] = sb_finish(&b, sc);
    s->sside[k] = (uint8_t)side;
    size_t top = 0;
    stack[top++] = (size_t)a;
    while (top) {
      size_t x = stack[--top];
      s->chain[x] = (int32_t)k + 1;
      chain_push_below(s, x, stack, &top);
    }
  }
  gp_scratch_free(stack);
  return 0;
}

static GPExpr *bwd_node(Fsa *s, int32_t i, GPExpr *orig, GPExpr *rebuilt) {
  if (ekind(orig) != GP_TI_CALL) return std_keep(rebuilt);
  const GPCall *oc = (const GPCall *)orig, *rc = (const GPCall *)rebuilt;
  if (s->scale[i]) /* a folded multiply: its argument already carries the scale */
    return gp_retain(rc->args[s->sside[i]]);
  if (!s->chain[i]) return std_keep(rebuilt);
  int64_t f = s->chain[i] - 1;
  GPExpr *sc = s->scale[f];
  int32_t axis = msg_of(s, arg_id(s, (size_t)f, s->sside[f]));
  SBuild b = {.ops = &s->ops, .at = orig};
  GPExpr *out = NULL;
  switch (kind_at(s, i)) {
  case K_RELU: return std_keep(rebuilt);
  case K_ADDSUB: {
    bool m0 = msg_of(s, arg_id(s, (size_t)i, 0)) >= 0, m1 = msg_of(s, arg_id(s, (size_t)i, 1)) >= 0;
    if (m0 && m1) return std_keep(rebuilt);
    const GPType *ts = ttype(m0 ? oc->args[0] : oc->args[1]);
    GPExpr *e = mk_expand_bias(s, &b, sc, ts->n, axis);
    GPExpr *other = mk_binop(&b, "multiply", m0 ? rc->args[1] : rc->args[0], e);
    out = m0 ? mk_call(&b, oc, rc->args[0], other) : mk_call(&b, oc, other, rc->args[1]);
    break;
  }
  case K_BIAS_ADD: out = mk_call(&b, oc, rc->args[0], mk_binop(&b, "multiply", rc->args[1], sc)); break;
  case K_CONV:
  case K_DENSE: {
    GPExpr *w = sc;
    if (kind_at(s, i) == K_CONV) {
      Conv ci;
      const char *why;
      if (!conv_info(orig, false, &ci, &why)) return std_keep(rebuilt); /* cannot happen */
      w = mk_expand_bias(s, &b, sc, ci.kndim, ci.ko);
    } else {
      w = mk_expand_bias(s, &b, sc, 2, 0);
    }
    assert(same_dtype(rc->args[1], sc)); /* backward_decide keeps the multiply otherwise */
    out = mk_call(&b, oc, rc->args[0], mk_binop(&b, "multiply", rc->args[1], w));
    s->folded++;
    break;
  }
  default: return std_keep(rebuilt);
  }
  GPExpr *r = sb_finish(&b, out);
  if (!r) fail_at(s, orig, "into", sb_op_name(orig));
  return r;
}

static GPExpr *fsa_rewrite(void *user, int32_t id, GPExpr *orig, GPExpr *rebuilt, GPExpr *const *done) {
  (void)done;
  Fsa *s = user;
  return s->forward ? fwd_node(s, id, orig, rebuilt) : bwd_node(s, id, orig, rebuilt);
}

static void fsa_free(Fsa *s) {
  for (size_t k = 0; k < s->n; k++) {
    if (s->value) gp_release(s->value[k]);
    if (s->scale) gp_release(s->scale[k]);
  }
  gp_scratch_free(s->axis);
  gp_scratch_free(s->pos);
  gp_scratch_free(s->refs);
  gp_scratch_free(s->chain);
  gp_scratch_free(s->value);
  gp_scratch_free(s->scale);
  gp_scratch_free(s->sside);
  gp_scratch_free(s->kind);
  H->expr_index_free(s->ix);
  s->ix = NULL;
  s->kind = s->pos = s->sside = NULL;
  s->axis = s->chain = NULL;
  s->refs = NULL;
  s->nodes = NULL;
  s->value = s->scale = NULL;
}

static GPExpr *fsa_function(void *user, const GPModule *mod, int32_t index) {
  Fsa *s = user;
  s->source = mod->source_name;
  GPExpr *root = &mod->funcs[index]->base;
  if (!std_may_call(root, "multiply")) return gp_retain(root); /* both directions fold multiplies */
  if (!(s->ix = H->expr_index_new(root))) return NULL;
  s->nodes = s->ix->nodes;
  s->n = s->ix->num_nodes;
  size_t n = s->n ? s->n : 1;
  s->kind = gp_scratch_alloc(n);
  kinds(s);
  s->axis = gp_scratch_alloc(sizeof(int32_t) * n);
  for (size_t k = 0; k < n; k++) s->axis[k] = s->forward ? NO_ENTRY : NO_MSG;
  /* Only what the direction uses: at 1M calls each array of n pointers is 36 MB to zero. */
  s->pos = gp_scratch_zalloc(n, 1);
  s->scale = gp_scratch_zalloc(n, sizeof(GPExpr *));
  if (s->forward) {
    s->value = gp_scratch_zalloc(n, sizeof(GPExpr *));
  } else {
    s->refs = gp_scratch_zalloc(n, sizeof(uint32_t));
    s->chain = gp_scratch_zalloc(n, sizeof(int32_t));
    s->sside = gp_scratch_zalloc(n, 1);
  }
  GPExpr *out = NULL;
  bool any = false;
  if (s->forward) {
    if (s->n) s->axis[s->n - 1] = NO_MSG; /* the function itself */
    forward_prep(s);
    for (size_t k = 0; k < s->n && !any; k++) any = s->axis[k] >= 0 && kind_at(s, k) == K_MULTIPLY;
  } else {
    backward_prep(s);
    if (backward_decide(s) != 0) goto done;
    for (size_t k = 0; k < s->n && !any; k++) any = s->scale[k] != NULL;
  }
  out = any ? H->rewrite_indexed(s->ix, fsa_rewrite, s) : gp_retain(root);
done:
  fsa_free(s);
  return out;
}

static GPModule *run_direction(const GPModule *mod, GPPassContext *ctx, bool forward, const char *pass,
                               Notes *notes) {
  Fsa s = {.pass = pass, .ctx = ctx, .forward = forward, .notes = notes};
  FoldPool pool = {0}; /* helper threads for large weights (scale_rows_f32) */
  fold_pool = &pool;
  GPModule *out = std_function_pass(mod, fsa_function, &s);
  fold_pool = NULL;
  fold_pool_stop(&pool);
  if (out)
    notes_add(notes, "%s: folded %lld scales into weights, kept %lld multiplies", forward ? "forward" : "backward",
              (long long)s.folded, (long long)s.kept);
  return out;
}

static int forward_pass(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args(FWD_NAME, args, nargs, &mod, &ctx) != 0) return -1;
  Notes notes = {0};
  GPModule *out = run_direction(mod, ctx, true, FWD_NAME, &notes);
  notes_flush(&notes, ctx);
  return std_return_module(result, out);
}

static int backward_pass(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args(BWD_NAME, args, nargs, &mod, &ctx) != 0) return -1;
  Notes notes = {0};
  GPModule *out = run_direction(mod, ctx, false, BWD_NAME, &notes);
  notes_flush(&notes, ctx);
  return std_return_module(result, out);
}

/* TVM's Sequential({BackwardFoldScaleAxis, ForwardFoldScaleAxis, FoldConstant}). */
static int fold_scale_axis(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args(ALL_NAME, args, nargs, &mod, &ctx) != 0) return -1;
  Notes notes = {0};
  GPModule *b = run_direction(mod, ctx, false, ALL_NAME, &notes);
  GPModule *f = b ? run_direction(b, ctx, true, ALL_NAME, &notes) : NULL;
  gp_release(b);
  GPModule *c = f ? H->run_pipeline(f, "FoldConstant", ctx) : NULL;
  gp_release(f);
  notes_flush(&notes, ctx);
  return std_return_module(result, c);
}

static int reg(const char *name, GPPackedCFunc fn, const char *help) {
  static const char *const required[] = {"InferType"};
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = name,
      .opt_level = 3,
      .kind = GP_PASS_TRANSFORM,
      .required = required,
      .num_required = 1,
      .func = fn,
      .help = help,
  };
  return H->pass_register(&info, 0);
}

int std_register_fold_scale_axis(void) {
  if (reg(BWD_NAME, backward_pass,
          "Fold a per-channel multiply after conv2d / conv3d / dense (through relu, add, bias_add) into the "
          "weights (TVM's BackwardFoldScaleAxis).") != 0)
    return -1;
  if (reg(FWD_NAME, forward_pass,
          "Fold a per-channel multiply before conv2d / conv3d / dense (through relu, add) into the weights "
          "(TVM's ForwardFoldScaleAxis).") != 0)
    return -1;
  return reg(ALL_NAME, fold_scale_axis,
             "BackwardFoldScaleAxis, ForwardFoldScaleAxis, then FoldConstant (TVM's FoldScaleAxis).");
}
