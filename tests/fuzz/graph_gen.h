/* graph_gen.h -- CNN-like graphs built from fuzzer input bytes (fuzz_graphs, fuzz_opu): every
 * byte is a choice in building a graph through the IR API (the op, its operands among the values
 * made so far, its attributes, constants of random values or of the identities 0 and 1):
 * convolutions (grouped, depthwise, strided, dilated, three in parallel on one input), bias_add,
 * batch_norm, per-channel and scalar scales and shifts, activations, residual adds,
 * concatenations, splits, pools, transposes and layout_transforms, reshapes, casts, dense and
 * batch_matmul (three in parallel too), dilated convs as space_to_batch_nd / batch_to_space_nd,
 * layer / instance / group norms, identities (x + zeros_like(y), x * 1), reductions, squeeze /
 * expand_dims, 1 / sqrt(x), NHWC convs with channel-last scales and biases, conv2d_transpose,
 * pad, strided_slice, resize2d, prelu / leaky_relu, softmax / l2_normalize, channel reductions,
 * depth_to_space, NHWC pools; 3-D (NCW) and 5-D (NCDHW) values by reshape, where convolutions,
 * transposed convolutions and pools are 1-d / 3-d ones and scales per channel; one graph in four
 * binds its values with let; ifs whose branches
 * read outer values, closures applied in place, and global functions (a conv, a scale, a bias)
 * called once or twice.  Shapes are tracked here to choose operands; a wrong guess only makes a
 * graph that does not type, which is skipped. */
#ifndef GP_FUZZ_GRAPH_GEN_H
#define GP_FUZZ_GRAPH_GEN_H

#include "bench/bench_util.h" /* bench_rnd01; first: its parameters named ctx precede numerics_check.h's */
#include "numerics_check.h"
#include "eval/kernel.h" /* gp_f32_to_f16 */

#define MAXV 40  /* values a graph keeps to choose from */
#define STEPS 24 /* ops at most */

#define MAXND 5 /* NCDHW */

typedef struct {
  GPExpr *e;
  int32_t nd;
  int64_t s[MAXND];
} Val;

#define MAXFN 3 /* global functions besides @main */

/* The float dtype of the graph being built (gg_build): float32, or float16 for one input
 * length in 16; every constant, cast and parameter type takes it. */
static DLDataType gg_dt = {kDLFloat, 32, 1};

/* Element i of a float constant of dtype gg_dt := v. */
static void gg_store(GPTensor *t, int64_t i, float v) {
  if (gg_dt.bits == 16) ((uint16_t *)t->dl.data)[i] = gp_f32_to_f16(v);
  else ((float *)t->dl.data)[i] = v;
}

typedef struct {
  const uint8_t *p;
  size_t n, i;
  uint64_t rng; /* constant values */
  Val v[MAXV];
  int32_t nv;
  GPVar *param;             /* %x (borrowed) */
  int64_t pshape[4];        /* its shape */
  bool lets;                /* bind values with let (chosen per graph) */
  GPVar *lvar[STEPS * 4];   /* let bindings in order: lvar[k] = lval[k], nested around the body */
  GPExpr *lval[STEPS * 4];
  int32_t nlet;
  GPGlobalVar *gv[MAXFN];   /* global functions @f0.. and their definitions */
  GPFunctionExpr *gf[MAXFN];
  int32_t nfn;
} Gen;

/* The next choice in [0, k), 0 once the bytes run out. */
static uint32_t pick(Gen *g, uint32_t k) { return g->i < g->n ? g->p[g->i++] % k : 0; }

/* A value in [-1, 1) from the graph's constant stream (bench_rnd01's splitmix64). */
static float rnd(Gen *g) { return (float)(bench_rnd01(&g->rng) * 2.0 - 1.0); }

/* At most MAX_ELEMS elements: a bigger value or weight is not built (concatenations can double
 * the channels at every step). */
static bool small(int32_t nd, const int64_t *shape) {
  int64_t k = 1;
  for (int32_t i = 0; i < nd; i++) k *= shape[i];
  return k <= MAX_ELEMS;
}

/* A float constant (gg_dt): random in [lo, hi], or (by the next choice, one time in four) all
 * `ident` when ident >= 0 (an identity a rewrite may remove). */
static GPExpr *constant(Gen *g, int32_t nd, const int64_t *shape, float lo, float hi, float ident) {
  GPTensor *t = gp_tensor_alloc(gg_dt, nd, shape, true);
  if (!t) abort();
  int64_t k = 1;
  for (int32_t i = 0; i < nd; i++) k *= shape[i];
  bool same = ident >= 0 && pick(g, 4) == 0;
  for (int64_t i = 0; i < k; i++) gg_store(t, i, same ? ident : lo + (hi - lo) * (rnd(g) + 1.0f) * 0.5f);
  GPConstant *c = gp_constant_new(t);
  gp_release(t);
  return &c->base;
}

static GPExpr *scalar(float v) {
  GPTensor *t = gp_tensor_alloc(gg_dt, 0, NULL, true);
  if (!t) abort();
  gg_store(t, 0, v);
  GPConstant *c = gp_constant_new(t);
  gp_release(t);
  return &c->base;
}

/* A call of op `name` on args (references taken over) with attrs keys[i] = vals[i]. */
static GPExpr *call(const char *name, int32_t nargs, GPExpr **args, int32_t nattrs, const char *const *keys,
                    const GPAttrValue *vals) {
  GPExpr *c = gp_call_op(name, nargs, args, nattrs, keys, vals);
  if (!c) abort();
  for (int32_t i = 0; i < nargs; i++) gp_release(args[i]);
  return c;
}

static GPExpr *call1(const char *name, GPExpr *x) { return call(name, 1, &x, 0, NULL, NULL); }
static GPExpr *call2(const char *name, GPExpr *a, GPExpr *b) {
  GPExpr *args[2] = {a, b};
  return call(name, 2, args, 0, NULL, NULL);
}

/* Keeps e (a reference) as a value of the given shape; the oldest goes when full.  A value of
 * more than MAX_ELEMS elements is dropped.  In a graph of lets, a call is bound to a variable
 * (one time in two) and the variable kept instead. */
static void push(Gen *g, GPExpr *e, int32_t nd, const int64_t *s) {
  if (!small(nd, s)) {
    gp_release(e);
    return;
  }
  if (g->lets && gp_kind(e) == GP_TI_CALL && g->nlet < (int32_t)(sizeof g->lvar / sizeof *g->lvar) && pick(g, 2)) {
    char name[16];
    snprintf(name, sizeof name, "v%d", (int)g->nlet);
    GPVar *var = gp_var_new(name, NULL);
    g->lvar[g->nlet] = var;
    g->lval[g->nlet++] = e; /* the reference moves to the binding */
    e = gp_retain(&var->base);
  }
  if (g->nv == MAXV) {
    gp_release(g->v[0].e);
    memmove(g->v, g->v + 1, (MAXV - 1) * sizeof *g->v);
    g->nv--;
  }
  Val *v = &g->v[g->nv++];
  v->e = e;
  v->nd = nd;
  memcpy(v->s, s, (size_t)nd * sizeof *s);
}

/* An operand: one of the last few values, most often the last. */
static Val *operand(Gen *g) {
  int32_t back = (int32_t)pick(g, 8);
  back = back < 4 ? 0 : back - 3;
  return &g->v[g->nv - 1 - (back < g->nv ? back : g->nv - 1)];
}

/* Another value of v's shape, or NULL. */
static Val *same_shape(Gen *g, const Val *v) {
  int32_t start = (int32_t)pick(g, (uint32_t)g->nv);
  for (int32_t k = 0; k < g->nv; k++) {
    Val *w = &g->v[(start + k) % g->nv];
    if (w != v && w->nd == v->nd && memcmp(w->s, v->s, (size_t)v->nd * sizeof *v->s) == 0) return w;
  }
  return NULL;
}

static GPExpr *ref(const Val *v) { return gp_retain(v->e); }

/* An N-d convolution on x (3-D NCW, 4-D NCHW or 5-D NCDHW: conv1d / conv2d / conv3d in their
 * default layouts): out channels o, kernel k, stride st, padding p, dilation d, groups gr, the
 * same along every spatial axis. */
static void conv(Gen *g, const Val *x, int64_t o, int64_t k, int64_t st, int64_t p, int64_t d, int64_t gr) {
  static const char *const ops[3] = {"nn.conv1d", "nn.conv2d", "nn.conv3d"};
  int32_t sp = x->nd - 2;
  if (sp < 1 || sp > 3) return;
  int64_t c = x->s[1];
  if (gr < 1 || c % gr || o % gr) gr = 1;
  int64_t ek = d * (k - 1) + 1, ws[MAXND] = {o, c / gr}, os[MAXND] = {x->s[0], o}, pad[6], ks[3], strides[3], dil[3];
  for (int32_t i = 0; i < sp; i++) {
    if (x->s[2 + i] + 2 * p < ek) return;
    ws[2 + i] = k;
    os[2 + i] = (x->s[2 + i] + 2 * p - ek) / st + 1;
    pad[i] = pad[sp + i] = p;
    ks[i] = k, strides[i] = st, dil[i] = d;
  }
  if (!small(x->nd, ws) || !small(x->nd, os)) return;
  const char *keys[6] = {"strides", "padding", "dilation", "groups", "channels", "kernel_size"};
  GPAttrValue vals[6] = {gp_attr_ints(sp, strides), gp_attr_ints(2 * sp, pad), gp_attr_ints(sp, dil),
                         gp_attr_int(gr), gp_attr_int(o), gp_attr_ints(sp, ks)};
  GPExpr *args[2] = {ref(x), constant(g, x->nd, ws, -0.5f, 0.5f, -1)};
  push(g, call(ops[sp - 1], 2, args, 6, keys, vals), x->nd, os);
}

/* A per-channel constant for x (C, 1, ...: axis 1 of x broadcast), of rank nd - 1. */
static GPExpr *per_channel(Gen *g, const Val *x, float lo, float hi, float ident) {
  int64_t cs[MAXND - 1] = {x->s[1], 1, 1, 1};
  return constant(g, x->nd - 1, cs, lo, hi, ident);
}

/* Whether y has x's shape but (perhaps) on axis 1: they concatenate along the channels. */
static bool joins(const Val *x, const Val *y) {
  if (y == x || y->nd != x->nd || y->s[0] != x->s[0]) return false;
  for (int32_t i = 2; i < x->nd; i++)
    if (y->s[i] != x->s[i]) return false;
  return true;
}

/* %x (which no pass changes, so a value at an integer boundary cannot move across it) times 8
 * clipped, cast to int8 / uint8 / int32 and back, and times 1 / 8: SimplifyClipAndConsecutiveCast
 * and SimplifyConsecutiveCast when the clip is the integer dtype's range (kept: the casts
 * truncate), or SimplifyCastClip when the clip comes after the integer cast (removed). */
static void quantized_param(Gen *g, bool clip_after) {
  static const DLDataType ints[3] = {{kDLInt, 8, 1}, {kDLUInt, 8, 1}, {kDLInt, 32, 1}};
  uint32_t which = pick(g, 3);
  DLDataType it = ints[which];
  bool full_range = pick(g, 2);
  double lo = which == 1 ? 0 : which == 0 ? -128 : -2147483648.0, hi = which == 1 ? 255 : which == 0 ? 127 : 2147483647.0;
  if (!full_range) lo = which == 1 ? 0 : -6, hi = 6;
  const char *ck[2] = {"a_min", "a_max"}, *dk = "dtype";
  GPAttrValue cv[2] = {gp_attr_float(lo), gp_attr_float(hi)}, iv = gp_attr_dtype(it),
              fv = gp_attr_dtype(gg_dt);
  GPExpr *a = call2("multiply", gp_retain(&g->param->base), scalar(8.0f));
  if (!clip_after) a = call("clip", 1, &a, 2, ck, cv);
  a = call("cast", 1, &a, 1, &dk, &iv);
  if (clip_after) a = call("clip", 1, &a, 2, ck, cv);
  a = call("cast", 1, &a, 1, &dk, &fv);
  push(g, call2("multiply", a, scalar(0.125f)), 4, g->pshape);
}

/* The *_like ops SimplifyExpr concretizes, each giving a value of x's shape: x * full_like(x, k),
 * x + broadcast_to_like(per-channel shift, x), x + collapse_sum_like(x, per-channel) (the
 * channel sums), reshape_like(reshape(x, (N, -1)), x), cast_like(x, y). */
static void like_ops(Gen *g, const Val *x) {
  bool chan = x->nd == 4 || x->nd == 5;
  int32_t nd = x->nd;
  int64_t shape[MAXND]; /* push may move x */
  memcpy(shape, x->s, sizeof shape);
  GPExpr *e;
  switch (pick(g, 5)) {
  case 0:
    e = call2("multiply", ref(x), call2("full_like", ref(x), scalar(0.5f + (rnd(g) + 1) * 0.5f)));
    break;
  case 1:
    if (!chan) return;
    e = call2("add", ref(x), call2("broadcast_to_like", per_channel(g, x, -1, 1, 0), ref(x)));
    break;
  case 2:
    if (!chan) return;
    e = call2("add", ref(x), call2("collapse_sum_like", ref(x), per_channel(g, x, -1, 1, 0)));
    break;
  case 3: {
    if (x->nd < 2) return;
    const int64_t ns[2] = {x->s[0], -1};
    const char *key = "newshape";
    GPAttrValue v = gp_attr_ints(2, ns);
    GPExpr *a = ref(x);
    e = call2("reshape_like", call("reshape", 1, &a, 1, &key, &v), ref(x));
    break;
  }
  default: {
    Val *y = same_shape(g, x);
    e = call2("cast_like", ref(x), ref(y ? y : x));
    break;
  }
  }
  push(g, e, nd, shape);
}

/* full / ones / zeros (of x's shape, or per channel) as an operand of an arithmetic op
 * (FullElementwise): x * ones, x + zeros, x - full(k), maximum(x, full(k)), full(k) * x. */
static void full_operand(Gen *g, const Val *x) {
  static const char *const ops[4] = {"multiply", "add", "subtract", "maximum"};
  int64_t cs[MAXND - 1] = {x->s[1], 1, 1, 1};
  bool chan = (x->nd == 4 || x->nd == 5) && pick(g, 2);
  int32_t nd = chan ? x->nd - 1 : x->nd;
  const int64_t *shape = chan ? cs : x->s;
  uint32_t op = pick(g, 4), kind = pick(g, 3); /* ones, zeros, full */
  int32_t xnd = x->nd;
  int64_t xs[MAXND]; /* push may move x */
  memcpy(xs, x->s, sizeof xs);
  const char *keys[2] = {"shape", "dtype"};
  GPAttrValue vals[2] = {gp_attr_ints(nd, shape), gp_attr_dtype(gg_dt)};
  GPExpr *f;
  if (kind == 2) {
    GPExpr *k = scalar(rnd(g));
    f = call("full", 1, &k, 2, keys, vals);
  } else {
    f = call(kind ? "zeros" : "ones", 0, NULL, 2, keys, vals);
  }
  push(g, pick(g, 4) ? call2(ops[op], ref(x), f) : call2(ops[op], f, ref(x)), xnd, xs);
}

static void step(Gen *g) {
  Val *x = operand(g);
  int64_t s[MAXND];
  memcpy(s, x->s, sizeof s);
  bool four = x->nd == 4, five = x->nd == 5, conv_nd = x->nd >= 3; /* NCW, NCHW, NCDHW */
  int64_t c = x->nd >= 2 ? x->s[1] : 1;
  const int64_t chan[3] = {c, 1, 1};
  switch (pick(g, 44)) {
  case 0:
  case 1: /* conv2d (conv1d on 3-D, conv3d on 5-D) */
    if (!conv_nd) return;
    {
      int64_t gr = pick(g, 3) == 0 ? c : 1, o = (int64_t)pick(g, 6) + 1;
      if (gr == c) o = c * (pick(g, 2) + 1);
      conv(g, x, o, pick(g, 2) ? 3 : 1, pick(g, 3) ? 1 : 2, pick(g, 2), pick(g, 4) ? 1 : 2, gr);
    }
    return;
  case 2: /* three parallel convs of one kernel shape (CombineParallelConv2D), joined or not */
    if (!four) return;
    {
      int64_t k = pick(g, 2) ? 3 : 1, p = k == 3, o = (int64_t)pick(g, 4) + 1;
      bool same_o = pick(g, 2);
      for (int32_t b = 0; b < 3; b++) conv(g, x, same_o ? o : o + b, k, 1, p, 1, 1);
      if (g->nv >= 3 && pick(g, 2)) { /* a concatenate of the three */
        Val *a = &g->v[g->nv - 3], *b = &g->v[g->nv - 2], *d = &g->v[g->nv - 1];
        GPExpr *f[3] = {a->e, b->e, d->e};
        GPTuple *t = gp_tuple_new(3, f);
        int64_t os[4] = {a->s[0], a->s[1] + b->s[1] + d->s[1], a->s[2], a->s[3]};
        const char *key = "axis";
        GPAttrValue ax = gp_attr_int(1);
        GPExpr *arg = &t->base;
        push(g, call("concatenate", 1, &arg, 1, &key, &ax), 4, os);
      }
    }
    return;
  case 3: /* bias_add */
    push(g, call2("nn.bias_add", ref(x), constant(g, 1, &c, -1, 1, 0)), x->nd, s);
    return;
  case 4: /* batch_norm, its first field */
    if (x->nd < 2) return;
    {
      GPExpr *args[5] = {ref(x), constant(g, 1, &c, 0.5f, 1.5f, 1), constant(g, 1, &c, -1, 1, 0),
                         constant(g, 1, &c, -1, 1, 0), constant(g, 1, &c, 0.5f, 2.0f, 1)};
      GPExpr *bn = call("nn.batch_norm", 5, args, 0, NULL, NULL);
      GPTupleGetItem *gi = gp_tuple_get_item_new(bn, 0);
      gp_release(bn);
      push(g, &gi->base, x->nd, s);
    }
    return;
  case 5:
    push(g, call1("nn.relu", ref(x)), x->nd, s);
    return;
  case 6: {
    const char *keys[2] = {"a_min", "a_max"};
    GPAttrValue vals[2] = {gp_attr_float(0), gp_attr_float(6)};
    GPExpr *a = ref(x);
    push(g, call("clip", 1, &a, 2, keys, vals), x->nd, s);
    return;
  }
  case 7:
  case 8: /* a per-channel (4-D, 5-D), per-column (2-D, 3-D) or scalar scale or shift */
  {
    const char *op = pick(g, 3) ? "multiply" : "add";
    bool mul = op[0] == 'm';
    GPExpr *k = pick(g, 4) == 0 ? scalar(mul ? 0.5f + (rnd(g) + 1) : rnd(g))
                : four || five ? per_channel(g, x, mul ? 0.25f : -1, mul ? 2.0f : 1, mul ? 1 : 0)
                               : constant(g, 1, &x->s[x->nd - 1], mul ? 0.25f : -1, mul ? 2.0f : 1, mul ? 1 : 0);
    push(g, pick(g, 4) ? call2(op, ref(x), k) : call2(op, k, ref(x)), x->nd, s);
    return;
  }
  case 9: /* a residual add or a product of two values of one shape */
  {
    Val *y = same_shape(g, x);
    if (y) push(g, call2(pick(g, 3) ? "add" : "multiply", ref(x), ref(y)), x->nd, s);
    return;
  }
  case 10: /* concatenate along channels */
    if (!conv_nd) return;
    for (int32_t k = 0; k < g->nv; k++) {
      Val *y = &g->v[k];
      if (!joins(x, y)) continue;
      GPExpr *f[2] = {x->e, y->e};
      GPTuple *t = gp_tuple_new(2, f);
      int64_t os[MAXND];
      memcpy(os, s, sizeof os);
      os[1] += y->s[1];
      const char *key = "axis";
      GPAttrValue ax = gp_attr_int(1);
      GPExpr *arg = &t->base;
      push(g, call("concatenate", 1, &arg, 1, &key, &ax), x->nd, os);
      return;
    }
    return;
  case 11: /* max / avg pool (1-d on 3-D, 3-d on 5-D) */
    if (!conv_nd) return;
    {
      static const char *const ops[2][3] = {{"nn.avg_pool1d", "nn.avg_pool2d", "nn.avg_pool3d"},
                                            {"nn.max_pool1d", "nn.max_pool2d", "nn.max_pool3d"}};
      int32_t sp = x->nd - 2;
      for (int32_t i = 0; i < sp; i++)
        if (s[2 + i] < 2) return;
      bool halve = pick(g, 2);
      int64_t ps[3], st[3], pad[6], os[MAXND] = {s[0], s[1]};
      for (int32_t i = 0; i < sp; i++) {
        ps[i] = halve ? 2 : 3, st[i] = halve ? 2 : 1, pad[i] = pad[sp + i] = !halve;
        os[2 + i] = halve ? s[2 + i] / 2 : s[2 + i];
      }
      const char *keys[3] = {"pool_size", "strides", "padding"};
      GPAttrValue vals[3] = {gp_attr_ints(sp, ps), gp_attr_ints(sp, st), gp_attr_ints(2 * sp, pad)};
      GPExpr *a = ref(x);
      push(g, call(ops[pick(g, 2)][sp - 1], 1, &a, 3, keys, vals), x->nd, os);
    }
    return;
  case 12:
    if (!four) return;
    {
      int64_t os[4] = {s[0], s[1], 1, 1};
      push(g, call1("nn.global_avg_pool2d", ref(x)), 4, os);
    }
    return;
  case 13: /* batch_flatten, then (often) a dense */
    if (!four) return;
    {
      int64_t os[2] = {s[0], s[1] * s[2] * s[3]};
      push(g, call1("nn.batch_flatten", ref(x)), 2, os);
    }
    return;
  case 14:
  case 15: /* dense (and two or three in parallel: CombineParallelDense) */
    if (x->nd != 2) return;
    {
      int32_t nb = pick(g, 3) == 0 ? 3 : 1;
      int64_t u = (int64_t)pick(g, 6) + 1;
      const int64_t wsize[2] = {u, s[1]};
      if (!small(2, wsize)) return;
      for (int32_t b = 0; b < nb; b++) {
        const int64_t ws[2] = {u, s[1]}, os[2] = {s[0], u};
        const char *key = "units";
        GPAttrValue uv = gp_attr_int(u);
        GPExpr *args[2] = {ref(x), constant(g, 2, ws, -0.5f, 0.5f, -1)};
        push(g, call("nn.dense", 2, args, 1, &key, &uv), 2, os);
      }
    }
    return;
  case 16: /* a transpose, often undone later by another */
    if (!four) return;
    {
      static const int64_t perms[3][4] = {{0, 2, 3, 1}, {0, 3, 1, 2}, {0, 1, 3, 2}};
      const int64_t *pm = perms[pick(g, 3)];
      int64_t os[4] = {s[pm[0]], s[pm[1]], s[pm[2]], s[pm[3]]};
      const char *key = "axes";
      GPAttrValue av = gp_attr_ints(4, pm);
      GPExpr *a = ref(x);
      push(g, call("transpose", 1, &a, 1, &key, &av), 4, os);
    }
    return;
  case 17: /* layout_transform NCHW <-> NHWC */
    if (!four) return;
    {
      bool to = pick(g, 2);
      int64_t os[4] = {s[0], to ? s[2] : s[3], to ? s[3] : s[1], to ? s[1] : s[2]};
      const char *keys[2] = {"src_layout", "dst_layout"};
      GPAttrValue vals[2] = {gp_attr_str(to ? "NCHW" : "NHWC"), gp_attr_str(to ? "NHWC" : "NCHW")};
      GPExpr *a = ref(x);
      push(g, call("layout_transform", 1, &a, 2, keys, vals), 4, os);
    }
    return;
  case 18: /* SiLU: x * sigmoid(x) */
    push(g, call2("multiply", ref(x), call1("sigmoid", ref(x))), x->nd, s);
    return;
  case 19: /* reshape to 2-D and (later, often) back */
    if (four) {
      const int64_t ns[2] = {s[0], -1}, os[2] = {s[0], s[1] * s[2] * s[3]};
      const char *key = "newshape";
      GPAttrValue v = gp_attr_ints(2, ns);
      GPExpr *a = ref(x);
      push(g, call("reshape", 1, &a, 1, &key, &v), 2, os);
    } else if (x->nd == 2 && s[1] % 4 == 0) {
      const int64_t ns[4] = {s[0], s[1] / 4, 2, 2};
      const char *key = "newshape";
      GPAttrValue v = gp_attr_ints(4, ns);
      GPExpr *a = ref(x);
      push(g, call("reshape", 1, &a, 1, &key, &v), 4, ns);
    }
    return;
  case 20: /* split along channels, both halves kept */
    if (!four || s[1] % 2) return;
    {
      const char *keys[2] = {"indices_or_sections", "axis"};
      GPAttrValue vals[2] = {gp_attr_int(2), gp_attr_int(1)};
      GPExpr *a = ref(x);
      GPExpr *sp = call("split", 1, &a, 2, keys, vals);
      int64_t os[4] = {s[0], s[1] / 2, s[2], s[3]};
      for (int32_t k = 0; k < 2; k++) push(g, &gp_tuple_get_item_new(sp, k)->base, 4, os);
      gp_release(sp);
    }
    return;
  case 21: { /* dropout's first field */
    GPExpr *d = call1("nn.dropout", ref(x));
    push(g, &gp_tuple_get_item_new(d, 0)->base, x->nd, s);
    gp_release(d);
    return;
  }
  case 22: { /* casts: to the graph's dtype (the same), or through a wider one (float64; float32
             * in a float16 graph); or %x quantized (below) */
    const char *key = "dtype";
    GPAttrValue wide = gp_attr_dtype((DLDataType){kDLFloat, gg_dt.bits == 16 ? 32 : 64, 1}), same = gp_attr_dtype(gg_dt);
    uint32_t how = pick(g, 4);
    if (how < 2) {
      GPExpr *a = ref(x);
      if (how) a = call("cast", 1, &a, 1, &key, &wide);
      push(g, call("cast", 1, &a, 1, &key, &same), x->nd, s);
    } else {
      quantized_param(g, how == 3);
    }
    return;
  }
  case 23: /* a per-channel divide or subtract */
    if (!four && !five) return;
    push(g, call2(pick(g, 2) ? "divide" : "subtract", ref(x), per_channel(g, x, 0.5f, 2.0f, 1)), x->nd, s);
    return;
  case 24: /* a dilated conv as space_to_batch_nd, conv2d, batch_to_space_nd (NHWC; FlattenAtrousConv) */
    if (!four) return;
    {
      int64_t n = s[0], h = s[2], w = s[3], o = (int64_t)pick(g, 4) + 1;
      const char *lk[2] = {"src_layout", "dst_layout"};
      GPAttrValue to_nhwc[2] = {gp_attr_str("NCHW"), gp_attr_str("NHWC")}, to_nchw[2] = {to_nhwc[1], to_nhwc[0]};
      GPExpr *a = ref(x);
      a = call("layout_transform", 1, &a, 2, lk, to_nhwc);
      const int64_t blk[2] = {2, 2}, pads[4] = {2, 2 + h % 2, 2, 2 + w % 2}, crops[4] = {0, h % 2, 0, w % 2};
      const char *sk[2] = {"block_shape", "paddings"}, *bk[2] = {"block_shape", "crops"};
      GPAttrValue sv[2] = {gp_attr_ints(2, blk), gp_attr_ints(4, pads)}, bv[2] = {gp_attr_ints(2, blk), gp_attr_ints(4, crops)};
      a = call("nn.space_to_batch_nd", 1, &a, 2, sk, sv);
      const int64_t ws[4] = {3, 3, c, o}, ks[2] = {3, 3};
      if (!small(4, ws)) {
        gp_release(a);
        return;
      }
      const char *ck[4] = {"channels", "kernel_size", "data_layout", "kernel_layout"};
      GPAttrValue cv[4] = {gp_attr_int(o), gp_attr_ints(2, ks), gp_attr_str("NHWC"), gp_attr_str("HWIO")};
      GPExpr *args[2] = {a, constant(g, 4, ws, -0.5f, 0.5f, -1)};
      a = call("nn.conv2d", 2, args, 4, ck, cv);
      a = call("nn.batch_to_space_nd", 1, &a, 2, bk, bv);
      const int64_t os[4] = {n, o, h, w};
      push(g, call("layout_transform", 1, &a, 2, lk, to_nchw), 4, os);
    }
    return;
  case 25: /* an identity the rewrites remove: x + zeros_like(y), x * ones_like(y), x + 0, x * 1; or
             * *_like ops and fulls as operands (below) */
  {
    uint32_t how = pick(g, 4);
    if (how >= 2) {
      (how == 2 ? like_ops : full_operand)(g, x);
      return;
    }
    Val *y = same_shape(g, x);
    bool mul = pick(g, 2);
    GPExpr *k = y && pick(g, 2) ? call1(mul ? "ones_like" : "zeros_like", ref(y)) : scalar(mul ? 1.0f : 0.0f);
    push(g, call2(mul ? "multiply" : "add", ref(x), k), x->nd, s);
    return;
  }
  case 26: /* layer_norm (last axis), instance_norm and group_norm (channels): SimplifyInference */
  {
    uint32_t which = pick(g, 3);
    if (which && !four) return;
    int64_t dim = which ? c : s[x->nd - 1];
    int64_t groups = c % 2 == 0 ? 2 : 1;
    const char *gk[1] = {"num_groups"};
    const char *ak[1] = {"axis"};
    GPAttrValue gv = gp_attr_int(groups), av = gp_attr_int(-1);
    GPExpr *args[3] = {ref(x), constant(g, 1, &dim, 0.5f, 1.5f, 1), constant(g, 1, &dim, -1, 1, 0)};
    if (which == 0) push(g, call("nn.layer_norm", 3, args, 1, ak, &av), x->nd, s);
    else if (which == 1) push(g, call("nn.instance_norm", 3, args, 0, NULL, NULL), 4, s);
    else push(g, call("nn.group_norm", 3, args, 1, gk, &gv), 4, s);
    return;
  }
  case 27: /* three batch_matmuls on one input (CombineParallelBatchMatmul), from 4-D as (N*C, H, W) */
    if (!four) return;
    {
      const int64_t bs[3] = {s[0] * s[1], s[2], s[3]}, wsize[3] = {bs[0], 4, bs[2]};
      if (!small(3, wsize)) return;
      const char *rk = "newshape";
      GPAttrValue rv = gp_attr_ints(3, bs);
      GPExpr *a = ref(x);
      GPExpr *r = call("reshape", 1, &a, 1, &rk, &rv);
      int64_t u = (int64_t)pick(g, 4) + 1;
      for (int32_t b = 0; b < 3; b++) {
        const int64_t ws[3] = {bs[0], u, bs[2]}, os[3] = {bs[0], bs[1], u};
        GPExpr *args[2] = {gp_retain(r), constant(g, 3, ws, -0.5f, 0.5f, -1)};
        push(g, call("nn.batch_matmul", 2, args, 0, NULL, NULL), 3, os);
      }
      gp_release(r);
    }
    return;
  case 28: /* mean over the spatial axes, kept */
    if (!four) return;
    {
      const int64_t axes[2] = {2, 3}, os[4] = {s[0], s[1], 1, 1};
      const char *keys[2] = {"axis", "keepdims"};
      GPAttrValue vals[2] = {gp_attr_ints(2, axes), gp_attr_bool(true)};
      GPExpr *a = ref(x);
      push(g, call(pick(g, 2) ? "mean" : "max", 1, &a, 2, keys, vals), 4, os);
    }
    return;
  case 29: /* squeeze a pooled (N, C, 1, 1) to (N, C), or expand (N, C) back */
    if (four && s[2] == 1 && s[3] == 1) {
      const int64_t axes[2] = {2, 3}, os[2] = {s[0], s[1]};
      const char *key = "axis";
      GPAttrValue v = gp_attr_ints(2, axes);
      GPExpr *a = ref(x);
      push(g, call("squeeze", 1, &a, 1, &key, &v), 2, os);
    } else if (x->nd == 2) {
      const int64_t os[4] = {s[0], s[1], 1, 1};
      const char *keys[2] = {"axis", "num_newaxis"};
      GPAttrValue vals[2] = {gp_attr_int(2), gp_attr_int(2)};
      GPExpr *a = ref(x);
      push(g, call("expand_dims", 1, &a, 2, keys, vals), 4, os);
    } else if (conv_nd) { /* NCHW to NCDHW (H split in two when even) or NCW; NCDHW or NCW back to 4-D */
      int32_t nd = 4;
      int64_t ns[MAXND] = {s[0], s[1], s[2], s[3], 1};
      if (four && pick(g, 2)) {
        nd = 5;
        ns[2] = s[2] % 2 ? 1 : 2, ns[3] = s[2] % 2 ? s[2] : s[2] / 2, ns[4] = s[3];
      } else if (four) {
        nd = 3;
        ns[2] = s[2] * s[3];
      } else if (five) {
        ns[2] = s[2] * s[3], ns[3] = s[4];
      } else {
        ns[3] = 1;
      }
      const char *key = "newshape";
      GPAttrValue v = gp_attr_ints(nd, ns);
      GPExpr *a = ref(x);
      push(g, call("reshape", 1, &a, 1, &key, &v), nd, ns);
    }
    return;
  case 31: /* an NHWC conv with a channel-last scale and bias_add (axis 3), between transforms */
    if (!four) return;
    {
      int64_t o = (int64_t)pick(g, 4) + 1;
      const char *lk[2] = {"src_layout", "dst_layout"};
      GPAttrValue to_nhwc[2] = {gp_attr_str("NCHW"), gp_attr_str("NHWC")}, to_nchw[2] = {to_nhwc[1], to_nhwc[0]};
      GPExpr *a = ref(x);
      a = call("layout_transform", 1, &a, 2, lk, to_nhwc);
      const int64_t ws[4] = {3, 3, c, o}, ks[2] = {3, 3}, pad[4] = {1, 1, 1, 1};
      if (!small(4, ws)) {
        gp_release(a);
        return;
      }
      const char *ck[5] = {"padding", "channels", "kernel_size", "data_layout", "kernel_layout"};
      GPAttrValue cv[5] = {gp_attr_ints(4, pad), gp_attr_int(o), gp_attr_ints(2, ks), gp_attr_str("NHWC"),
                           gp_attr_str("HWIO")};
      GPExpr *args[2] = {a, constant(g, 4, ws, -0.5f, 0.5f, -1)};
      a = call("nn.conv2d", 2, args, 5, ck, cv);
      if (pick(g, 2)) a = call2("multiply", a, constant(g, 1, &o, 0.25f, 2.0f, 1));
      if (pick(g, 2)) {
        const char *bk = "axis";
        GPAttrValue bv = gp_attr_int(3);
        GPExpr *bargs[2] = {a, constant(g, 1, &o, -1, 1, 0)};
        a = call("nn.bias_add", 2, bargs, 1, &bk, &bv);
      }
      if (pick(g, 2)) a = call1("nn.relu", a);
      const int64_t os[4] = {s[0], o, s[2], s[3]};
      push(g, call("layout_transform", 1, &a, 2, lk, to_nchw), 4, os);
    }
    return;
  case 32: /* conv2d_transpose (conv1d_ / conv3d_transpose on 3-D / 5-D): strided (with
             * output_padding), padded, grouped or depthwise */
    if (!conv_nd) return;
    {
      static const char *const ops[3] = {"nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose"};
      int32_t sp = x->nd - 2;
      int64_t k = (int64_t)pick(g, 3) + 1, st = pick(g, 2) ? 1 : 2, p = pick(g, 2) && k > 1;
      int64_t opad = st == 2 ? (int64_t)pick(g, 2) : 0, gr = pick(g, 4) == 0 ? c : 1;
      int64_t o = gr == c ? c : (int64_t)pick(g, 6) + 1;
      int64_t ws[MAXND] = {c, o / gr}, os[MAXND] = {s[0], o}, ks[3], strides[3], pad[6], op2[3];
      for (int32_t i = 0; i < sp; i++) {
        ws[2 + i] = k;
        os[2 + i] = (s[2 + i] - 1) * st - 2 * p + k + opad;
        if (os[2 + i] < 1) return;
        ks[i] = k, strides[i] = st, pad[i] = pad[sp + i] = p, op2[i] = opad;
      }
      if (!small(x->nd, ws) || !small(x->nd, os)) return;
      const char *keys[6] = {"channels", "kernel_size", "strides", "padding", "output_padding", "groups"};
      GPAttrValue vals[6] = {gp_attr_int(o),            gp_attr_ints(sp, ks),     gp_attr_ints(sp, strides),
                             gp_attr_ints(2 * sp, pad), gp_attr_ints(sp, op2),    gp_attr_int(gr)};
      GPExpr *args[2] = {ref(x), constant(g, x->nd, ws, -0.5f, 0.5f, -1)};
      push(g, call(ops[sp - 1], 2, args, 6, keys, vals), x->nd, os);
    }
    return;
  case 33: /* nn.pad of the spatial axes (constant, edge or reflect), or of the channels */
    if (!four) return;
    {
      uint32_t mode = pick(g, 3);
      int64_t pc = mode == 0 && pick(g, 3) == 0 ? 1 : 0, t = pick(g, 2), b = pick(g, 2) + 1 - t, l = pick(g, 2),
              r = pick(g, 2);
      if (mode == 2 && (s[2] < 2 || s[3] < 2)) mode = 1;
      const int64_t pw[8] = {0, 0, pc, 0, t, b, l, r}, os[4] = {s[0], s[1] + pc, s[2] + t + b, s[3] + l + r};
      const char *keys[2] = {"pad_width", "pad_mode"};
      static const char *const modes[3] = {"constant", "edge", "reflect"};
      GPAttrValue vals[2] = {gp_attr_ints(8, pw), gp_attr_str(modes[mode])};
      GPExpr *args[2] = {ref(x), scalar(pick(g, 2) ? 0.0f : rnd(g))};
      push(g, call("nn.pad", 2, args, 2, keys, vals), 4, os);
    }
    return;
  case 34: /* strided_slice of the channels, or (with axes) of the spatial axes */
    if (!four) return;
    if (pick(g, 2)) {
      int64_t b = (int64_t)pick(g, (uint32_t)c), st = pick(g, 2) + 1;
      const int64_t begin[4] = {0, b, 0, 0}, end[4] = {s[0], c, s[2], s[3]}, strides[4] = {1, st, 1, 1},
                    os[4] = {s[0], (c - b + st - 1) / st, s[2], s[3]};
      const char *keys[3] = {"begin", "end", "strides"};
      GPAttrValue vals[3] = {gp_attr_ints(4, begin), gp_attr_ints(4, end), gp_attr_ints(4, strides)};
      GPExpr *a = ref(x);
      push(g, call("strided_slice", 1, &a, 3, keys, vals), 4, os);
    } else {
      if (s[2] < 3 || s[3] < 3) return;
      int64_t st = pick(g, 2) + 1; /* rows and columns 1 .. -1 (the last excluded) */
      const int64_t begin[2] = {1, 1}, end[2] = {-1, -1}, strides[2] = {st, st}, axes[2] = {2, 3},
                    os[4] = {s[0], s[1], (s[2] - 2 + st - 1) / st, (s[3] - 2 + st - 1) / st};
      const char *keys[4] = {"begin", "end", "strides", "axes"};
      GPAttrValue vals[4] = {gp_attr_ints(2, begin), gp_attr_ints(2, end), gp_attr_ints(2, strides),
                             gp_attr_ints(2, axes)};
      GPExpr *a = ref(x);
      push(g, call("strided_slice", 1, &a, 4, keys, vals), 4, os);
    }
    return;
  case 35: /* image.resize2d: up, down or by one; nearest, linear or cubic */
    if (!four) return;
    {
      uint32_t how = pick(g, 3);
      int64_t h = how == 0 ? 2 * s[2] : how == 1 ? s[2] + 1 : (s[2] + 1) / 2;
      int64_t w = how == 0 ? 2 * s[3] : how == 1 ? s[3] + 1 : (s[3] + 1) / 2;
      const int64_t size[2] = {h, w}, os[4] = {s[0], s[1], h, w};
      /* a quarter of the cap: a cubic resize costs 16 taps per output, and under the fuzz build's
       * coverage tracing four chained upsamplings to 64k outputs took 24 s (CI's timeout: 20) */
      if (!small(4, os) || os[0] * os[1] * h * w > MAX_ELEMS / 4) return;
      static const char *const methods[3] = {"nearest_neighbor", "linear", "cubic"};
      static const char *const modes[3] = {"half_pixel", "align_corners", "asymmetric"};
      uint32_t m = pick(g, 3);
      const char *keys[4] = {"size", "method", "coordinate_transformation_mode", "rounding_method"};
      GPAttrValue vals[4] = {gp_attr_ints(2, size), gp_attr_str(methods[m]), gp_attr_str(modes[pick(g, 3)]),
                             gp_attr_str(m == 0 ? (pick(g, 2) ? "floor" : "round") : "")};
      GPExpr *a = ref(x);
      push(g, call("image.resize2d", 1, &a, 4, keys, vals), 4, os);
    }
    return;
  case 36: /* prelu (per-channel slopes, axis 1) or leaky_relu */
    if (x->nd < 2) return;
    if (pick(g, 2)) {
      push(g, call2("nn.prelu", ref(x), constant(g, 1, &c, 0, 0.5f, 0)), x->nd, s);
    } else {
      const char *key = "alpha";
      GPAttrValue v = gp_attr_float(0.1);
      GPExpr *a = ref(x);
      push(g, call("nn.leaky_relu", 1, &a, 1, &key, &v), x->nd, s);
    }
    return;
  case 37: /* softmax / log_softmax over the channels or the last axis; l2_normalize over the channels */
    if (x->nd < 2) return;
    {
      uint32_t which = pick(g, 3);
      GPExpr *a = ref(x);
      if (which == 2) {
        const char *keys[2] = {"eps", "axis"};
        const int64_t axis = 1;
        GPAttrValue vals[2] = {gp_attr_float(1e-6), gp_attr_ints(1, &axis)};
        push(g, call("nn.l2_normalize", 1, &a, 2, keys, vals), x->nd, s);
      } else {
        const char *key = "axis";
        GPAttrValue v = gp_attr_int(pick(g, 2) ? 1 : -1);
        push(g, call(which ? "nn.log_softmax" : "nn.softmax", 1, &a, 1, &key, &v), x->nd, s);
      }
    }
    return;
  case 38: /* sum / mean / max / min over the channels, kept or dropped */
    if (!four) return;
    {
      static const char *const ops[4] = {"sum", "mean", "max", "min"};
      bool keep = pick(g, 2);
      const int64_t axis = 1, os[4] = {s[0], keep ? 1 : s[2], keep ? s[2] : s[3], s[3]};
      const char *keys[2] = {"axis", "keepdims"};
      GPAttrValue vals[2] = {gp_attr_ints(1, &axis), gp_attr_bool(keep)};
      GPExpr *a = ref(x);
      push(g, call(ops[pick(g, 4)], 1, &a, 2, keys, vals), keep ? 4 : 3, os);
    }
    return;
  case 39: /* global_max_pool2d, depth_to_space / space_to_depth, or a pool in NHWC between transforms */
    if (!four) return;
    switch (pick(g, 4)) {
    case 0: {
      int64_t os[4] = {s[0], s[1], 1, 1};
      push(g, call1("nn.global_max_pool2d", ref(x)), 4, os);
      return;
    }
    case 1:
      if (c % 4 == 0) {
        const char *keys[2] = {"block_size", "mode"};
        GPAttrValue vals[2] = {gp_attr_int(2), gp_attr_str(pick(g, 2) ? "DCR" : "CRD")};
        const int64_t os[4] = {s[0], c / 4, 2 * s[2], 2 * s[3]};
        GPExpr *a = ref(x);
        push(g, call("nn.depth_to_space", 1, &a, 2, keys, vals), 4, os);
      }
      return;
    case 2:
      if (s[2] % 2 == 0 && s[3] % 2 == 0) {
        const char *key = "block_size";
        GPAttrValue v = gp_attr_int(2);
        const int64_t os[4] = {s[0], 4 * c, s[2] / 2, s[3] / 2};
        GPExpr *a = ref(x);
        push(g, call("nn.space_to_depth", 1, &a, 1, &key, &v), 4, os);
      }
      return;
    default: {
      if (s[2] < 2 || s[3] < 2) return;
      const char *lk[2] = {"src_layout", "dst_layout"};
      GPAttrValue to_nhwc[2] = {gp_attr_str("NCHW"), gp_attr_str("NHWC")}, to_nchw[2] = {to_nhwc[1], to_nhwc[0]};
      GPExpr *a = ref(x);
      a = call("layout_transform", 1, &a, 2, lk, to_nhwc);
      const int64_t ps[2] = {2, 2}, st[2] = {2, 2};
      const char *keys[3] = {"pool_size", "strides", "layout"};
      GPAttrValue vals[3] = {gp_attr_ints(2, ps), gp_attr_ints(2, st), gp_attr_str("NHWC")};
      a = call(pick(g, 2) ? "nn.max_pool2d" : "nn.avg_pool2d", 1, &a, 3, keys, vals);
      const int64_t os[4] = {s[0], s[1], s[2] / 2, s[3] / 2};
      push(g, call("layout_transform", 1, &a, 2, lk, to_nchw), 4, os);
      return;
    }
    }
  case 40: /* if (sum(%x) > k) then f(x) else h(y): both branches read values from outside.  The
             * condition reads the parameter only: a rewrite may round a computed value
             * differently, and a sum of normalized values is ~0 either side of 0. */
  {
    Val *y = same_shape(g, x);
    GPExpr *a = gp_retain(&g->param->base);
    GPExpr *sum = call("sum", 1, &a, 0, NULL, NULL);
    GPExpr *cond = call2(pick(g, 2) ? "greater" : "less", sum, scalar(rnd(g) * 4));
    GPExpr *then = pick(g, 2) ? call1("nn.relu", ref(x)) : call2("multiply", ref(x), scalar(2.0f));
    GPExpr *els = y ? call2("add", ref(x), ref(y)) : call1("negative", ref(x));
    GPIf *ife = gp_if_new(cond, then, els);
    gp_release(cond);
    gp_release(then);
    gp_release(els);
    push(g, &ife->base, x->nd, s);
    return;
  }
  case 41: /* a closure applied in place: (fn (%p) { relu(p * k + b) })(x) */
  case 42: /* a global function @fK (a 1x1 conv, a scale, a bias and relu on 4-D), called once or twice */
  {
    const GPType *t = gp_type_tensor(gg_dt, x->nd, x->s);
    GPVar *p = gp_var_new("p", t);
    GPExpr *b = &p->base;
    gp_retain(b);
    bool global = pick(g, 2) && g->nfn < MAXFN;
    if (global && four) {
      const int64_t ws[4] = {c, c, 1, 1}, ks[2] = {1, 1};
      const char *ck[2] = {"channels", "kernel_size"};
      GPAttrValue cv[2] = {gp_attr_int(c), gp_attr_ints(2, ks)};
      if (small(4, ws)) {
        GPExpr *args[2] = {b, constant(g, 4, ws, -0.5f, 0.5f, -1)};
        b = call("nn.conv2d", 2, args, 2, ck, cv);
      }
    }
    b = call2("multiply", b, four ? constant(g, 3, chan, 0.25f, 2.0f, 1) : scalar(0.5f + (rnd(g) + 1)));
    b = call2("add", b, four ? constant(g, 3, chan, -1, 1, 0) : scalar(rnd(g)));
    b = call1("nn.relu", b);
    GPFunctionExpr *fn = gp_function_new(1, &p, b, NULL, NULL);
    gp_release(b);
    gp_release(p);
    GPExpr *callee;
    if (global) {
      char name[8];
      snprintf(name, sizeof name, "f%d", (int)g->nfn);
      GPGlobalVar *gvar = gp_global_var_new(name);
      g->gv[g->nfn] = gvar;
      g->gf[g->nfn++] = fn;
      callee = &gvar->base;
    } else {
      callee = &fn->base;
    }
    GPExpr *xa = ref(x);
    GPCall *k = gp_call_new(callee, 1, &xa, NULL);
    gp_release(xa);
    Val *y = global ? same_shape(g, x) : NULL;
    GPCall *k2 = NULL;
    if (y && pick(g, 2)) { /* a second call site */
      GPExpr *ya = ref(y);
      k2 = gp_call_new(callee, 1, &ya, NULL);
      gp_release(ya);
    }
    if (!global) gp_release(callee);
    push(g, &k->base, x->nd, s);
    if (k2) push(g, &k2->base, x->nd, s);
    return;
  }
  case 43: /* a 3x3 pool of stride 2: padding 1 or (0, 1), ceil_mode, count_include_pad */
    if (!four) return;
    {
      bool ceil = pick(g, 2), asym = pick(g, 2), incl = pick(g, 2), avg = pick(g, 2);
      int64_t pb = asym ? 0 : 1, pe = 1, os[4] = {s[0], s[1], 0, 0};
      for (int k = 0; k < 2; k++) {
        int64_t in = s[2 + k], span = in + pb + pe - 3;
        if (span < 0) return;
        os[2 + k] = ceil ? (span + 1) / 2 + 1 : span / 2 + 1; /* TVM's Pool2DRel: no last-window rule */
      }
      const int64_t ps[2] = {3, 3}, st[2] = {2, 2}, pad[4] = {pb, pb, pe, pe};
      const char *keys[5] = {"pool_size", "strides", "padding", "ceil_mode", "count_include_pad"};
      GPAttrValue vals[5] = {gp_attr_ints(2, ps), gp_attr_ints(2, st), gp_attr_ints(4, pad), gp_attr_bool(ceil),
                             gp_attr_bool(incl)};
      GPExpr *a = ref(x);
      push(g, call(avg ? "nn.avg_pool2d" : "nn.max_pool2d", 1, &a, avg ? 5 : 4, keys, vals), 4, os);
    }
    return;
  default: /* 30: sqrt of a positive value, divided into 1 (SimplifyRSqrt) or x */
  {
    GPExpr *pos = call2("add", call1("nn.relu", ref(x)), scalar(1.0f));
    GPExpr *sq = call1("sqrt", pos);
    push(g, call2("divide", pick(g, 2) ? scalar(1.0f) : ref(x), sq), x->nd, s);
    return;
  }
  }
}

/* Which dims of %x may be ? (gg_build). */
typedef enum {
  GG_STATIC,      /* none */
  GG_DYNAMIC,     /* by the input's length: the batch, or the batch, height and width */
  GG_DYNAMIC_ONES /* the same, where the size drawn is 1 (a harness that evaluates ? as 1) */
} GGDynamic;

/* The typed module data describes (a new reference), or NULL when its shapes do not type (a
 * wrong guess here, not a finding).  GP_FUZZ_PRINT prints it (a reproducer's Relay text).
 * With GG_DYNAMIC, an input whose length is 7 mod 16 gives %x a dynamic batch, Tensor[(?, C, H,
 * W)], and one whose length is 11 mod 16 dynamic batch and spatial dims, Tensor[(?, C, ?, ?)]
 * (the length, not a byte: the other inputs build the graphs they built before); the graph is
 * built for the shape drawn, and numerics_check.h evaluates %x in that shape.  One whose length
 * is 13 mod 16 builds the graph in float16 (%x, constants and casts; numerics_check.h compares
 * such a module at float16's tolerance). */
static GPModule *gg_build(const uint8_t *data, size_t size, GGDynamic dynamic) {
  Gen g = {.p = data, .n = size, .rng = 0x5eed};
  gg_dt = (DLDataType){kDLFloat, size % 16 == 13 ? 16 : 32, 1};
  const int64_t xs[4] = {(int64_t)pick(&g, 2) + 1, (int64_t)pick(&g, 6) + 1, (int64_t)pick(&g, 6) + 3,
                         (int64_t)pick(&g, 6) + 3};
  g.lets = pick(&g, 4) == 0;
  bool dynamic_ok = dynamic != GG_STATIC, ones = dynamic == GG_DYNAMIC_ONES;
  bool dyn_batch = dynamic_ok && (size % 16 == 7 || size % 16 == 11) && (!ones || xs[0] == 1);
  bool dyn_hw = dynamic_ok && size % 16 == 11 && (!ones || (xs[2] == 1 && xs[3] == 1));
  int64_t xt[4] = {dyn_batch ? GP_DIM_ANY : xs[0], xs[1], dyn_hw ? GP_DIM_ANY : xs[2], dyn_hw ? GP_DIM_ANY : xs[3]};
  if (gp_ctx_add_numerics_shape(ctx, "x", 4, xs) != 0) abort(); /* the inputs' shape where %x has ? dims */
  GPVar *x = gp_var_new("x", gp_type_tensor(gg_dt, 4, xt));
  g.param = x;
  memcpy(g.pshape, xs, sizeof xs);
  push(&g, gp_retain(&x->base), 4, xs);
  for (int32_t k = 0; k < STEPS && g.i < g.n; k++) step(&g);
  GPExpr *body;
  if (g.nv >= 2 && pick(&g, 4) == 0) { /* two outputs */
    GPExpr *f[2] = {g.v[g.nv - 2].e, g.v[g.nv - 1].e};
    body = &gp_tuple_new(2, f)->base;
  } else {
    body = gp_retain(g.v[g.nv - 1].e);
  }
  for (int32_t k = g.nlet - 1; k >= 0; k--) { /* the bindings, innermost last */
    GPLet *l = gp_let_new(g.lvar[k], g.lval[k], body);
    gp_release(body);
    gp_release(g.lvar[k]);
    gp_release(g.lval[k]);
    body = &l->base;
  }
  GPFunctionExpr *fn = gp_function_new(1, &x, body, NULL, NULL);
  gp_release(body);
  gp_release(x);
  for (int32_t k = 0; k < g.nv; k++) gp_release(g.v[k].e);
  GPModule *m = gp_module_new("fuzz_graphs");
  if (gp_module_add(m, "main", fn, false) != 0) abort();
  gp_release(fn);
  for (int32_t k = 0; k < g.nfn; k++) {
    if (gp_module_add_gvar(m, g.gv[k], g.gf[k], false) != 0) abort();
    gp_release(g.gv[k]);
    gp_release(g.gf[k]);
  }
  GPModule *typed = gp_infer_types(m);
  gp_release(m);
  if (!typed) { /* a shape guessed wrong above: not a finding */
    fz_expect_error("InferType");
    return NULL;
  }
  if (getenv("GP_FUZZ_PRINT")) {
    char *text = gp_print(typed, GP_PRINT_METADATA);
    fprintf(stderr, "%s\n", text ? text : gp_error_message());
    gp_free(text);
  }
  return typed;
}

#endif
