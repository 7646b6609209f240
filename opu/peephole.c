/* peephole.c -- Peephole (target opu, opt-level 0, requires InferType): the seed's pattern
 * transformers, written on the host's pattern layer (GPHostAPI.pattern_compile /
 * pattern_rewrite), so each rewrite reads as its pattern.  Numbers are preserved: every new
 * constant is computed by the host's kernels (GPHostAPI.eval_call) from the matched constants.
 *
 *  PatternTransformer1  multiply(add(nn.conv2d(%x, %w=const), %c1=const), %c2=const)
 *                       -> add(nn.conv2d(%x, w * reshape(c2, [-1, 1, 1, 1])), c1 * c2)
 *      only for an NCHW / OIHW convolution of a 4-d float32 result whose c2 is a scalar or per
 *      output channel ((C, 1, 1), (1, C, 1, 1), (C,)... any shape whose only non-1 dim lies on
 *      the channel axis), and whose c1 broadcasts onto the result without growing it: then
 *      (conv(x, w) + c1) * c2 = conv(x, w * c2[o]) + c1 * c2 channel by channel.
 *  PatternTransformer2  add(add(%x, %c1=const), %c2=const) -> add(%x, c1 + c2)
 *      when c1 and c2 have x's dtype and c1 + c2 broadcasts onto the result without growing it.
 *  PatternTransformer3  add(concatenate((%a, %b), axis=1), %y)  (or add(%y, concatenate(...)))
 *                       -> add(nn.pad(%a, 0, channels [0, Cb]), add(nn.pad(%b, 0, channels [Ca, 0]), %y))
 *      a padded with zeros after its channels for b's, b before its own for a's: the two padded
 *      tensors sum to the concatenation, element for element (x + 0 is exact), so the result is
 *      concatenate + y.  For a concatenate of two fields on axis 1 (or its negative form).
 *  PatternTransformer5  nn.dense(%x, %w=const) with x (N, K), K <= 2048
 *                       -> reshape(nn.conv2d(reshape(%x, [N, K, 1, 1]), reshape(w, [U, K, 1, 1]),
 *                                            channels=U, kernel_size=[1, 1]), [N, U])
 *      (the accelerator computes a dense layer as a 1x1 convolution; a wider one stays a dense,
 *      on the host).
 *  PadActivation        clip(nn.pad(%x, %v=const)) -> nn.pad(clip(%x), clip(v)), and the same for
 *                       nn.relu (not one of the seed's): the activation is element-wise, so it
 *      moves before the pad exactly, with the fill clamped too.  For a constant pad of a float32
 *      scalar fill.  GenIR quantizes a pad in steps that hold its fill; a negative fill the
 *      activation would clamp away (a relu after a -0.87 pad) had widened those steps past the
 *      data's (0.0016), which then quantized to 0 (fuzz_opu).
 * (The seed's PatternTransformer4 is not part of the set.)  The patterns are applied together,
 * one rewrite walk per round, until a round rewrites nothing (a chain of n constant adds takes
 * about log2 n rounds); then FoldScaleAxis and FoldConstant run, as the seed does (in a context
 * at opt-level 3 of the same target).  Functions with a Compiler, Primitive or Composite
 * attribute are left alone.  `--explain` notes how many matches each transformer rewrote. */
#include "opu.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define H opu_host
#define PASS_NAME "Peephole"
#define MAX_DENSE_IN 2048

enum { P_T1, P_T2, P_T3A, P_T3B, P_T5, P_PAD_CLIP, P_PAD_RELU, N_PATTERNS };

static const char *const k_pattern_text[N_PATTERNS] = {
    "multiply(add(%conv=nn.conv2d(%x, %w=const), %c1=const), %c2=const)",
    "add(add(%x, %c1=const), %c2=const)",
    "add(%cat=concatenate((%a, %b)), %y)",
    "add(%y, %cat=concatenate((%a, %b)))",
    "%dense=nn.dense(%x, %w=const)",
    "clip(%pad=nn.pad(%x, %v=const))",
    "nn.relu(%pad=nn.pad(%x, %v=const))",
};
static const char *const k_transformer[N_PATTERNS] = {"PatternTransformer1", "PatternTransformer2",
                                                      "PatternTransformer3", "PatternTransformer3",
                                                      "PatternTransformer5", "PadActivation",
                                                      "PadActivation"};

static GPPattern *g_patterns[N_PATTERNS]; /* owned from registration until the pass goes */

typedef struct Run {
  const GPModule *mod;
  int64_t count[N_PATTERNS];
} Run;

/* ---- reading types */

static const GPType *tensor_type(const GPExpr *e) {
  const GPType *t = e ? e->checked_type : NULL;
  return t && t->kind == GP_TYPE_TENSOR ? t : NULL;
}

static bool is_f32(const GPType *t) {
  return t && t->kind == GP_TYPE_TENSOR && t->tensor.dtype.code == kDLFloat && t->tensor.dtype.bits == 32 &&
         t->tensor.dtype.lanes == 1;
}

static bool same_dtype(const GPType *a, const GPType *b) {
  return a && b && a->tensor.dtype.code == b->tensor.dtype.code && a->tensor.dtype.bits == b->tensor.dtype.bits &&
         a->tensor.dtype.lanes == b->tensor.dtype.lanes;
}

static bool is_static(const GPType *t) {
  for (int32_t i = 0; i < t->n; i++)
    if (t->tensor.shape[i] < 0) return false;
  return true;
}

static int64_t numel(const GPType *t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->n; i++) n *= t->tensor.shape[i];
  return n;
}

/* Whether a constant of type c broadcasts onto `out` without growing it (rank at most out's,
 * each trailing-aligned dim 1 or equal). */
static bool fits_onto(const GPType *c, const GPType *out) {
  if (!c || !out || c->n > out->n || !is_static(c)) return false;
  for (int32_t i = 0; i < c->n; i++) {
    int64_t d = c->tensor.shape[c->n - 1 - i], o = out->tensor.shape[out->n - 1 - i];
    if (d != 1 && d != o) return false;
  }
  return true;
}

/* Whether c (fitting onto a 4-d out) is a scalar or varies only along the channel axis 1. */
static bool per_channel(const GPType *c, const GPType *out) {
  if (!fits_onto(c, out) || out->n != 4) return false;
  for (int32_t i = 0; i < c->n; i++) {
    int32_t axis = out->n - c->n + i;
    if (axis != 1 && c->tensor.shape[i] != 1) return false;
  }
  return true;
}

static const char *attr_str(const GPCall *c, const char *key) {
  const GPAttrValue *v = c->attrs ? H->attrs_get(c->attrs, key) : NULL;
  return v && v->kind == GP_ATTR_STR ? v->s : "";
}

/* ---- the checks (nodes of the input graph, typed) */

static bool check_t1(const GPMatch *m) {
  const GPCall *conv = (const GPCall *)opu_capture(m, "conv");
  const GPType *out = tensor_type(m->root), *w = tensor_type(opu_capture(m, "w"));
  const GPType *c1 = tensor_type(opu_capture(m, "c1")), *c2 = tensor_type(opu_capture(m, "c2"));
  if (!is_f32(out) || out->n != 4 || !is_static(out) || !is_f32(tensor_type(&conv->base)) || !is_f32(w) ||
      !is_f32(c1) || !is_f32(c2))
    return false;
  if (strcmp(attr_str(conv, "data_layout"), "NCHW") != 0 || strcmp(attr_str(conv, "kernel_layout"), "OIHW") != 0)
    return false;
  const char *ol = attr_str(conv, "out_layout");
  if (ol[0] && strcmp(ol, "NCHW") != 0) return false;
  /* the result keeps the convolution's shape: c1 and c2 do not grow it */
  if (!fits_onto(tensor_type(&conv->base), out) || tensor_type(&conv->base)->n != 4) return false;
  for (int32_t i = 0; i < 4; i++)
    if (tensor_type(&conv->base)->tensor.shape[i] != out->tensor.shape[i]) return false;
  return fits_onto(c1, out) && per_channel(c2, out) && (numel(c2) == 1 || numel(c2) == w->tensor.shape[0]);
}

static bool check_t2(const GPMatch *m) {
  const GPType *out = tensor_type(m->root), *x = tensor_type(opu_capture(m, "x"));
  const GPType *c1 = tensor_type(opu_capture(m, "c1")), *c2 = tensor_type(opu_capture(m, "c2"));
  if (!out || !x || !c1 || !c2 || !same_dtype(x, c1) || !same_dtype(x, c2) || !is_static(out)) return false;
  if (opu_capture(m, "x")->obj.type_index == GP_TI_CONSTANT) return false; /* FoldConstant's */
  /* x + (c1 + c2) has the same shape as the result when x already has it */
  if (x->n != out->n) return false;
  for (int32_t i = 0; i < x->n; i++)
    if (x->tensor.shape[i] != out->tensor.shape[i]) return false;
  return fits_onto(c1, out) && fits_onto(c2, out);
}

static bool check_t3(const GPMatch *m) {
  const GPCall *cat = (const GPCall *)opu_capture(m, "cat");
  const GPType *out = tensor_type(m->root), *ct = tensor_type(&cat->base);
  const GPType *a = tensor_type(opu_capture(m, "a")), *b = tensor_type(opu_capture(m, "b"));
  if (!out || !ct || !a || !b || !is_static(ct) || !is_static(out) || ct->n < 2) return false;
  if (!same_dtype(a, ct) || !same_dtype(b, ct) || !same_dtype(ct, out) || ct->tensor.dtype.code != kDLFloat) return false;
  const GPAttrValue *ax = H->attrs_get(cat->attrs, "axis");
  if (!ax || ax->kind != GP_ATTR_INT) return false;
  int64_t axis = ax->i < 0 ? ax->i + ct->n : ax->i;
  return axis == 1;
}

static bool check_t5(const GPMatch *m) {
  const GPCall *d = (const GPCall *)opu_capture(m, "dense");
  const GPType *x = tensor_type(opu_capture(m, "x")), *w = tensor_type(opu_capture(m, "w")), *out = tensor_type(&d->base);
  if (!is_f32(x) || !is_f32(w) || !is_f32(out) || x->n != 2 || w->n != 2 || !is_static(x) || !is_static(w)) return false;
  const GPAttrValue *od = H->attrs_get(d->attrs, "out_dtype");
  if (od && od->kind == GP_ATTR_DTYPE && od->dtype.bits != 0 && !(od->dtype.code == kDLFloat && od->dtype.bits == 32))
    return false;
  return x->tensor.shape[1] <= MAX_DENSE_IN && w->tensor.shape[1] == x->tensor.shape[1];
}

static bool check_pad_act(const GPMatch *m) {
  const GPCall *pad = (const GPCall *)opu_capture(m, "pad");
  const GPType *x = tensor_type(opu_capture(m, "x")), *v = tensor_type(opu_capture(m, "v"));
  const GPTensor *vt = ((const GPConstant *)opu_capture(m, "v"))->data;
  const char *mode = attr_str(pad, "pad_mode");
  return is_f32(x) && is_f32(v) && v->n == 0 && vt && vt->dl.data && (!mode[0] || !strcmp(mode, "constant"));
}

static int check(void *user, const GPMatch *m) {
  (void)user;
  switch (m->pattern_index) {
  case P_T1: return check_t1(m);
  case P_T2: return check_t2(m);
  case P_T3A:
  case P_T3B: return check_t3(m);
  case P_T5: return check_t5(m);
  case P_PAD_CLIP:
  case P_PAD_RELU: return check_pad_act(m);
  default: return 0;
  }
}

/* ---- building */

static GPExpr *reshape(GPExpr *x, int32_t n, const int64_t *shape, bool evaluate) {
  static const char *const keys[] = {"newshape"};
  GPAttrValue v = {.kind = GP_ATTR_INTS, .n = n, .ints = shape};
  return (evaluate ? opu_fold_call : opu_call)("reshape", 1, &x, 1, keys, &v);
}

static GPExpr *binary(const char *op, GPExpr *a, GPExpr *b, bool evaluate) {
  GPExpr *args[2] = {a, b};
  return (evaluate ? opu_fold_call : opu_call)(op, 2, args, 0, NULL, NULL);
}

/* conv with another weight, same attrs */
static GPExpr *conv_with(const GPCall *conv, GPExpr *x, GPExpr *w) {
  GPExpr *args[2] = {x, w};
  GPCall *c = H->call_new(conv->op, 2, args, conv->attrs);
  return c ? &c->base : NULL;
}

static GPExpr *rewrite_t1(const GPMatch *m) {
  const GPCall *conv = (const GPCall *)opu_capture(m, "conv");
  static const int64_t per_o[4] = {-1, 1, 1, 1};
  GPExpr *c2r = reshape(opu_capture(m, "c2"), 4, per_o, true);
  GPExpr *w2 = c2r ? binary("multiply", opu_capture(m, "w"), c2r, true) : NULL;
  GPExpr *c12 = w2 ? binary("multiply", opu_capture(m, "c1"), opu_capture(m, "c2"), true) : NULL;
  GPExpr *nconv = c12 ? conv_with(conv, opu_capture(m, "x"), w2) : NULL;
  GPExpr *r = nconv ? binary("add", nconv, c12, false) : NULL;
  gp_release(c2r);
  gp_release(w2);
  gp_release(c12);
  gp_release(nconv);
  return r;
}

static GPExpr *rewrite_t2(const GPMatch *m) {
  GPExpr *c12 = binary("add", opu_capture(m, "c1"), opu_capture(m, "c2"), true);
  GPExpr *r = c12 ? binary("add", opu_capture(m, "x"), c12, false) : NULL;
  gp_release(c12);
  return r;
}

/* nn.pad of x (rank n, dtype of x) with `before` / `after` channels on axis 1, value 0 */
static GPExpr *pad_channels(GPExpr *x, const GPType *t, int64_t before, int64_t after) {
  int64_t widths[2 * 8] = {0};
  if (t->n > 8) {
    H->error_set(GP_ERR_UNSUPPORTED, "rank %d above 8", (int)t->n);
    return NULL;
  }
  widths[2] = before;
  widths[3] = after;
  GPTensor *zero = H->tensor_alloc(t->tensor.dtype, 0, NULL, 1); /* zero-filled scalar */
  GPConstant *z = zero ? H->constant_new(zero) : NULL;
  gp_release(zero);
  if (!z) return NULL;
  static const char *const keys[] = {"pad_width"};
  GPAttrValue v = {.kind = GP_ATTR_INTS, .n = 2 * t->n, .ints = widths};
  GPExpr *args[2] = {x, &z->base};
  GPExpr *r = opu_call("nn.pad", 2, args, 1, keys, &v);
  gp_release(z);
  return r;
}

static GPExpr *rewrite_t3(const GPMatch *m) {
  /* the types come from the captured nodes: a and b of the rewritten graph may be new (a
   * replacement from an earlier match) and untyped, so read them from the concatenate's fields
   * in the input graph (same shapes) -- the match's nodes are rewritten, so use the tuple's */
  const GPCall *cat = (const GPCall *)opu_capture(m, "cat");
  const GPTuple *tup = (const GPTuple *)cat->args[0];
  const GPType *ta = tensor_type(tup->fields[0]), *tb = tensor_type(tup->fields[1]);
  if (!ta || !tb) {
    H->error_set(GP_ERR_TYPE, "the fields of the concatenate are not typed");
    return NULL;
  }
  GPExpr *pa = pad_channels(opu_capture(m, "a"), ta, 0, tb->tensor.shape[1]);
  GPExpr *pb = pa ? pad_channels(opu_capture(m, "b"), tb, ta->tensor.shape[1], 0) : NULL;
  GPExpr *inner = pb ? binary("add", pb, opu_capture(m, "y"), false) : NULL;
  GPExpr *r = inner ? binary("add", pa, inner, false) : NULL;
  gp_release(pa);
  gp_release(pb);
  gp_release(inner);
  return r;
}

static GPExpr *rewrite_t5(const GPMatch *m) {
  const GPCall *d = (const GPCall *)opu_capture(m, "dense");
  const GPType *wt = tensor_type(((const GPCall *)d)->args[1]);
  const GPType *xt = tensor_type(((const GPCall *)d)->args[0]);
  if (!wt || !xt) {
    H->error_set(GP_ERR_TYPE, "the dense's arguments are not typed");
    return NULL;
  }
  int64_t n = xt->tensor.shape[0], k = xt->tensor.shape[1], u = wt->tensor.shape[0];
  const int64_t xs[4] = {n, k, 1, 1}, ws[4] = {u, k, 1, 1}, os[2] = {n, u};
  GPExpr *x4 = reshape(opu_capture(m, "x"), 4, xs, false);
  GPExpr *w4 = x4 ? reshape(opu_capture(m, "w"), 4, ws, true) : NULL;
  GPExpr *conv = NULL;
  if (w4) {
    static const char *const keys[] = {"channels", "kernel_size"};
    static const int64_t ks[2] = {1, 1};
    GPAttrValue vals[2] = {{.kind = GP_ATTR_INT, .i = u}, {.kind = GP_ATTR_INTS, .n = 2, .ints = ks}};
    GPExpr *args[2] = {x4, w4};
    conv = opu_call("nn.conv2d", 2, args, 2, keys, vals);
  }
  GPExpr *r = conv ? reshape(conv, 2, os, false) : NULL;
  gp_release(x4);
  gp_release(w4);
  gp_release(conv);
  return r;
}

/* nn.pad(act(x), act(v)): the activation's call on x with its attrs, and its value on v */
static GPExpr *rewrite_pad_act(const GPMatch *m) {
  const GPCall *act = (const GPCall *)m->root, *pad = (const GPCall *)opu_capture(m, "pad");
  GPExpr *x = opu_capture(m, "x");
  const GPTensor *vt = ((const GPConstant *)opu_capture(m, "v"))->data;
  float v;
  memcpy(&v, (const char *)vt->dl.data + vt->dl.byte_offset, 4);
  double lo = 0, hi = INFINITY; /* nn.relu */
  if (m->pattern_index == P_PAD_CLIP) {
    const GPAttrValue *a = H->attrs_get(act->attrs, "a_min"), *b = H->attrs_get(act->attrs, "a_max");
    lo = a && a->kind == GP_ATTR_FLOAT ? a->f : -INFINITY;
    hi = b && b->kind == GP_ATTR_FLOAT ? b->f : INFINITY;
  }
  float av = (float)fmin(fmax((double)v, lo), hi); /* as the float32 kernels clamp */
  GPTensor *t = H->tensor_alloc(vt->dl.dtype, 0, NULL, 1);
  GPConstant *c = t ? H->constant_new(t) : NULL;
  gp_release(t);
  if (!c) return NULL;
  memcpy(c->data->dl.data, &av, 4);
  GPCall *ax = H->call_new(act->op, 1, &x, act->attrs);
  GPExpr *args[2] = {ax ? &ax->base : NULL, &c->base};
  GPCall *r = ax ? H->call_new(pad->op, 2, args, pad->attrs) : NULL;
  gp_release(ax);
  gp_release(c);
  return r ? &r->base : NULL;
}

static GPExpr *rewrite(void *user, const GPMatch *m) {
  Run *run = user;
  GPExpr *r = NULL;
  switch (m->pattern_index) {
  case P_T1: r = rewrite_t1(m); break;
  case P_T2: r = rewrite_t2(m); break;
  case P_T3A:
  case P_T3B: r = rewrite_t3(m); break;
  case P_T5: r = rewrite_t5(m); break;
  case P_PAD_CLIP:
  case P_PAD_RELU: r = rewrite_pad_act(m); break;
  default: H->error_set(GP_ERR_INTERNAL, "unknown pattern %d", (int)m->pattern_index);
  }
  if (!r) {
    char where[512], msg[1024];
    snprintf(msg, sizeof msg, "%s", H->error_kind() != GP_OK ? H->error_message() : "failed");
    H->error_set(GP_ERR_PASS, "%s: %s at %s: %s", PASS_NAME, k_transformer[m->pattern_index],
                 opu_where(run->mod, m->root, where, sizeof where), msg);
    return NULL;
  }
  run->count[m->pattern_index]++;
  return r;
}

/* ---- the pass */

static int peephole(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (opu_pass_args(PASS_NAME, args, nargs, &mod, &ctx) != 0) return -1;
  Run run;
  memset(&run, 0, sizeof run);
  run.mod = mod;
  GPRewriteSpec spec;
  memset(&spec, 0, sizeof spec);
  spec.num_patterns = N_PATTERNS;
  spec.patterns = (const GPPattern *const *)g_patterns;
  spec.check = check;
  spec.rewrite = rewrite;
  spec.user = &run;
  int64_t total = 0;
  GPModule *cur = opu_rewrite_rounds(PASS_NAME, mod, &spec, &total);
  if (!cur) return -1;
  run.count[P_T3A] += run.count[P_T3B]; /* one transformer, two argument orders */
  run.count[P_PAD_CLIP] += run.count[P_PAD_RELU];
  for (int i = 0; i < N_PATTERNS; i++)
    if (i != P_T3B && i != P_PAD_RELU && run.count[i]) H->ctx_note(ctx, "%s: %lld rewritten", k_transformer[i], (long long)run.count[i]);
  GPModule *out = opu_run_inner(PASS_NAME, cur, "InferType,FoldScaleAxis,FoldConstant", ctx);
  gp_release(cur);
  return opu_return_module(result, out);
}

static void release_patterns(void *self) {
  (void)self;
  for (int i = 0; i < N_PATTERNS; i++) {
    gp_release(g_patterns[i]);
    g_patterns[i] = NULL;
  }
}

int opu_register_peephole(const GPHostAPI *host) {
  for (int i = 0; i < N_PATTERNS; i++) {
    g_patterns[i] = host->pattern_compile(k_pattern_text[i], "opu/peephole.c", 1, 1);
    if (!g_patterns[i]) {
      release_patterns(NULL);
      return -1;
    }
  }
  GPPassInfo info = opu_pass_info(PASS_NAME, peephole, NULL, true);
  info.self_deleter = release_patterns;
  info.help = "OPU: (conv + c1) * c2 into the weights, constant add chains, add of a channel concatenate as "
              "adds of padded inputs, dense (<= 2048 inputs) as a 1x1 conv2d; then FoldScaleAxis, FoldConstant.";
  if (host->pass_register(&info, 0) != 0) {
    release_patterns(NULL); /* self_deleter is not called when registration fails */
    return -1;
  }
  return 0;
}
