/* conv_elementwise_fuse.c -- ConvElementwiseFuse (opt-level 2), Paddle Lite's
 * lite_conv_elementwise_fuse_pass (conv_elementwise_fuser.cc): an add of a per-channel constant
 * to an nn.conv2d becomes the conv's bias:
 *   conv_bias_add: add(nn.bias_add(conv, cb), b) -> nn.bias_add(conv, cb + b)   (tried first,
 *                  as Paddle's conv_has_bias=true case; cb a constant of C values)
 *   conv_add:      add(conv, b)                  -> nn.bias_add(conv, b reshaped to (C))
 * b is "per channel" when, aligned to the conv's 4-d output from the right (broadcasting), its
 * dim at the output's channel axis is C or 1 and every other dim is 1: (C, 1, 1) or (1, C, 1, 1)
 * for NCHW, (C) or (1, 1, 1, C) for NHWC.  With a bias_add, a single value is also taken (and
 * repeated C times, as Paddle broadcasts a one-element bias onto conv_bias); without one, b must
 * have C values (Paddle's "numel equal to cout").  Values are summed in float64 and stored in
 * the conv's dtype.
 * Left alone (with an --explain note): another bias shape (one that broadcasts the output to a
 * larger shape, or varies along another axis), constants without values or of another dtype than
 * float32 / float64, an output layout that is not a permutation of NCHW, a bias_add on another
 * axis, and (by the driver) a conv or bias_add also used outside the match.
 * nn.conv2d_transpose (Paddle's conv2d_transpose case) is not handled. */
#include "pattern_pass.h"

#include <string.h>

#define PASS_NAME "ConvElementwiseFuse"

/* The channel axis and count of the conv's output, or 0 after pp_decline. */
static int out_channels(PPRun *r, const GPMatch *m, const GPExpr *conv, int32_t *ca, int64_t *c) {
  const char *ol = pp_attr_str(conv, "out_layout", "");
  if (!*ol) ol = pp_attr_str(conv, "data_layout", "NCHW");
  if (!pp_layout_plain(ol, "NCHW")) return pp_decline(r, m, "the conv's output layout %s is not a permutation of NCHW", ol);
  const GPType *t = conv->checked_type;
  *ca = pp_layout_axis(ol, 'C');
  if (!t || t->kind != GP_TYPE_TENSOR || t->n != 4 || t->tensor.shape[*ca] < 0)
    return pp_decline(r, m, "the conv's output type is unknown or has no static channel count");
  *c = t->tensor.shape[*ca];
  return 1;
}

/* Whether constant b (typed, with values of a float dtype) is per channel for a 4-d output with
 * C channels at axis ca (with `scalar`, a single value is too); 1, or 0 after pp_decline. */
static int per_channel(PPRun *r, const GPMatch *m, const GPExpr *b, const GPType *conv_t, int32_t ca, int64_t c,
                       bool scalar) {
  const GPTensor *t = pp_float_data(b);
  char bs[96], os[96];
  if (!t) return pp_decline(r, m, "the added constant has no values or is not float32 / float64");
  int32_t nd = t->dl.ndim;
  bool ok = nd <= 4 && t->dl.dtype.bits == conv_t->tensor.dtype.bits && t->dl.dtype.code == conv_t->tensor.dtype.code;
  for (int32_t j = 0; j < nd && ok; j++) {
    int32_t oj = j + 4 - nd;
    int64_t d = t->dl.shape[j];
    ok = oj == ca ? d == c || (scalar && d == 1) : d == 1;
  }
  ok = ok && (scalar || pp_numel(t) == c);
  if (!ok)
    return pp_decline(r, m, "the added constant of shape %s is not per channel for the conv's output %s",
                      pp_shape(b->checked_type, bs, sizeof bs), pp_shape(conv_t, os, sizeof os));
  return 1;
}

static int ew_check(PPRun *r, const GPMatch *m) {
  const GPExpr *conv = pp_cap(m, "conv"), *ba = pp_cap(m, "ba");
  int32_t ca = 0;
  int64_t c = 0;
  if (!out_channels(r, m, conv, &ca, &c) || !per_channel(r, m, pp_cap(m, "b"), conv->checked_type, ca, c, ba != NULL))
    return 0;
  if (m->root->checked_type != conv->checked_type) return pp_decline(r, m, "the add changes the conv's type");
  if (ba) {
    const GPTensor *cb = pp_float_data(pp_cap(m, "cb"));
    int64_t axis = pp_attr_int(ba, "axis", 1);
    if ((axis < 0 ? axis + 4 : axis) != ca)
      return pp_decline(r, m, "the bias_add's axis %lld is not the conv's channel axis %d", (long long)axis, (int)ca);
    if (!cb || pp_numel(cb) != c || cb->dl.dtype.bits != conv->checked_type->tensor.dtype.bits)
      return pp_decline(r, m, "the bias_add's bias has no values or is not %lld values of the conv's dtype", (long long)c);
  }
  return 1;
}

/* nn.bias_add(conv, cb + b) with b's values repeated to C when it has one; cb may be NULL. */
static GPExpr *ew_rewrite(PPRun *r, const GPMatch *m) {
  const GPExpr *conv = pp_cap(m, "conv"), *ba = pp_cap(m, "ba");
  const GPTensor *b = pp_float_data(pp_cap(m, "b")), *cb = ba ? pp_float_data(pp_cap(m, "cb")) : NULL;
  /* the channel count from the values (the rewritten graph is not typed) */
  int64_t c = cb ? pp_numel(cb) : pp_numel(b);
  if (!b || (ba && !cb) || (cb && pp_numel(b) != 1 && pp_numel(b) != c)) {
    pp_fail(r, m, "the match changed between selection and rewrite");
    return NULL;
  }
  int32_t ca = 1;
  if (ba) {
    int64_t axis = pp_attr_int(ba, "axis", 1);
    ca = (int32_t)(axis < 0 ? axis + 4 : axis);
  } else {
    const char *ol = pp_attr_str(conv, "out_layout", "");
    ca = pp_layout_axis(*ol ? ol : pp_attr_str(conv, "data_layout", "NCHW"), 'C');
  }
  GPTensor *nb = pp_tensor_new(b->dl.dtype, 1, &c);
  GPExpr *out = NULL;
  if (nb) {
    int64_t nbv = pp_numel(b);
    for (int64_t i = 0; i < c; i++) pp_set(nb, i, (cb ? pp_get(cb, i) : 0.0) + pp_get(b, nbv == 1 ? 0 : i));
    GPExpr *bc = pp_constant(nb);
    SBuild sb = {.ops = &r->ops};
    static const char *const keys[] = {"axis"};
    GPAttrValue axis = {.kind = GP_ATTR_INT, .i = ca};
    GPExpr *args[2] = {(GPExpr *)conv, bc};
    out = bc ? sb_finish(&sb, sb_call(&sb, "nn.bias_add", 2, args, 1, keys, &axis)) : NULL;
    gp_release(bc);
  }
  gp_release(nb);
  if (!out) pp_fail(r, m, "building the bias_add failed");
  return out;
}

static const PPRule k_rules[] = {
    {"conv_bias_add", "add(%ba=nn.bias_add(%conv=nn.conv2d(_, _), %cb=const), %b=const)", ew_check, ew_rewrite},
    {"conv_add", "add(%conv=nn.conv2d(_, _), %b=const)", ew_check, ew_rewrite},
};

static int conv_elementwise_fuse(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  return pp_run(PASS_NAME, k_rules, 2, NULL, args, nargs, result);
}

int std_register_conv_elementwise_fuse(void) {
  static const char *const excluded[] = {"xpu"}; /* Paddle: BindTargets(kAny), ExcludeTargets(kXPU) */
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = PASS_NAME,
      .opt_level = 2,
      .kind = GP_PASS_TRANSFORM,
      .excluded_targets = excluded,
      .num_excluded_targets = 1,
      .func = conv_elementwise_fuse,
      /* kernels: Paddle binds none (BindKernel is not called for lite_conv_elementwise_fuse_pass) */
      .help = "Paddle Lite's conv+elementwise_add fusion: an add of a per-channel constant to nn.conv2d "
              "becomes its nn.bias_add.",
  };
  return GP_HAS_FIELD(H, GPHostAPI, pattern_table_get) ? H->pass_register(&info, 0) : 0;
}
