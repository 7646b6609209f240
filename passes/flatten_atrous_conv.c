/* flatten_atrous_conv.c -- FlattenAtrousConv (opt-level 0), TVM v0.12's
 * src/relay/transforms/flatten_atrous_conv.cc: the atrous (dilated) convolution that
 * TensorFlow / TFLite models spell as
 *     nn.batch_to_space_nd(nn.conv2d(nn.space_to_batch_nd(x, block_shape=B, paddings=P), w),
 *                          block_shape=B, crops=C)
 * becomes one nn.conv2d(x, w, dilation=B, padding=...) with the inner conv's other attributes.
 *
 * Why it is the same function, per spatial dim (block b, paddings (p0, p1), crops (c0, c1),
 * kernel extent K): space_to_batch_nd puts xp[j * b + r] (xp: x padded with zeros) at position
 * j of batch block r; the unpadded stride-1 conv sums sub[j + k] = xp[(j + k) * b + r];
 * batch_to_space_nd puts block r's j at j * b + r and crops c0 off the front, so output o is
 * sum_k x[o + c0 - p0 + k * b]: the conv with dilation b and padding before p0 - c0.  The
 * lengths, H + p0 + p1 - (K - 1) * b - c0 - c1, agree when the padding after is p1 - c1.
 * TVM instead computes SAME padding from the data's shape and the dilated kernel; the two agree
 * whenever TVM's rewrite keeps the graph's meaning (TensorFlow's SAME atrous convolution, the
 * cases of test_pass_flatten_atrous_conv.py).  Here the padding is always the one derived above,
 * so e.g. a VALID atrous convolution (paddings = crops) flattens to padding 0 where TVM would
 * change the result's shape.
 *
 * Left alone (an --explain note names the rule, the batch_to_space_nd's location and why):
 *  - as TVM: a data layout other than NHWC (TVM's ICHECK, caught); a conv without kernel_size
 *    (TVM reads the kernel size from it); block_shape not of 2 values;
 *  - where TVM would rewrite into something else: block shapes of space_to_batch_nd and
 *    batch_to_space_nd that differ, a pad_value other than 0, an inner conv with strides,
 *    dilation or padding (TVM drops them), an out_layout other than NHWC, crops larger than
 *    the paddings (a negative conv padding);
 *  - by the pattern driver: a space_to_batch_nd or conv also used outside the match (TVM
 *    rewrites and keeps them for their other users).
 * TVM's qnn.conv2d case is not handled (there is no qnn.conv2d here).  TVM's rewriter also
 * requires the three calls to be consecutive in its post-order walk, so a weight computed by a
 * call is left alone there; the pattern here matches any weight.
 */
#include "pattern_pass.h"

#include <string.h>

#define PASS_NAME "FlattenAtrousConv"

typedef struct Plan {
  int64_t dilation[2];
  int64_t padding[4]; /* top, left, bottom, right */
} Plan;

/* The (2- or 4-value) INTS attribute key of call as 2 values, or false. */
static bool ints2(const GPExpr *call, const char *key, int64_t out[2]) {
  const GPAttrValue *v = pp_attr(call, key);
  if (!v || v->kind != GP_ATTR_INTS) return false;
  if (v->n == 1) out[0] = out[1] = v->ints[0];
  else if (v->n == 2) out[0] = v->ints[0], out[1] = v->ints[1];
  else return false;
  return true;
}

static bool all_equal(const GPAttrValue *v, int64_t want) {
  if (!v || v->kind != GP_ATTR_INTS) return false;
  for (int32_t i = 0; i < v->n; i++)
    if (v->ints[i] != want) return false;
  return true;
}

static const GPAttrValue *ints_n(const GPExpr *call, const char *key, int32_t n) {
  const GPAttrValue *v = pp_attr(call, key);
  return v && v->kind == GP_ATTR_INTS && v->n == n ? v : NULL;
}

/* From attributes only (the check sees the input graph, the rewrite the rebuilt one): 1 and
 * *p, or 0 after pp_decline. */
static int plan(PPRun *r, const GPMatch *m, Plan *p) {
  const GPExpr *b2s = m->root, *conv = pp_cap(m, "conv"), *s2b = pp_cap(m, "s2b");
  const char *dl = pp_attr_str(conv, "data_layout", "NCHW"), *ol = pp_attr_str(conv, "out_layout", "");
  if (strcmp(dl, "NHWC") != 0) return pp_decline(r, m, "the conv's data layout is %s, not NHWC", dl);
  if (*ol && strcmp(ol, "NHWC") != 0) return pp_decline(r, m, "the conv's out_layout is %s, not NHWC", ol);
  if (!ints_n(conv, "kernel_size", 2)) return pp_decline(r, m, "the conv has no kernel_size (TVM reads it)");
  const GPAttrValue *bb = ints_n(b2s, "block_shape", 2), *sb = ints_n(s2b, "block_shape", 2);
  const GPAttrValue *crops = ints_n(b2s, "crops", 4), *pads = ints_n(s2b, "paddings", 4);
  if (!bb || !sb || !crops || !pads)
    return pp_decline(r, m, "block_shape, paddings and crops are not for the 2 spatial dims of NHWC");
  if (bb->ints[0] != sb->ints[0] || bb->ints[1] != sb->ints[1])
    return pp_decline(r, m, "block_shape [%lld, %lld] of nn.space_to_batch_nd differs from [%lld, %lld]",
                      (long long)sb->ints[0], (long long)sb->ints[1], (long long)bb->ints[0], (long long)bb->ints[1]);
  if (pp_attr_float(s2b, "pad_value", 0.0) != 0.0)
    return pp_decline(r, m, "nn.space_to_batch_nd pads with %g, not 0", pp_attr_float(s2b, "pad_value", 0.0));
  int64_t st[2], di[2];
  if (!ints2(conv, "strides", st) || st[0] != 1 || st[1] != 1 || !ints2(conv, "dilation", di) || di[0] != 1 ||
      di[1] != 1 || !all_equal(pp_attr(conv, "padding"), 0))
    return pp_decline(r, m, "the inner conv has strides, dilation or padding");
  for (int32_t k = 0; k < 2; k++) {
    int64_t before = pads->ints[2 * k] - crops->ints[2 * k], after = pads->ints[2 * k + 1] - crops->ints[2 * k + 1];
    if (before < 0 || after < 0)
      return pp_decline(r, m, "crops [%lld, %lld] of spatial dim %d exceed paddings [%lld, %lld]",
                        (long long)crops->ints[2 * k], (long long)crops->ints[2 * k + 1], (int)(k + 1),
                        (long long)pads->ints[2 * k], (long long)pads->ints[2 * k + 1]);
    p->dilation[k] = bb->ints[k];
    p->padding[k] = before;
    p->padding[k + 2] = after;
  }
  return 1;
}

static int fac_check(PPRun *r, const GPMatch *m) {
  Plan p;
  return plan(r, m, &p);
}

static GPExpr *fac_rewrite(PPRun *r, const GPMatch *m) {
  Plan p;
  if (!plan(r, m, &p)) {
    pp_fail(r, m, "the match changed between selection and rewrite");
    return NULL;
  }
  const GPCall *conv = (const GPCall *)pp_cap(m, "conv");
  const GPAttrs *a = conv->attrs;
  if (!a || a->n > 30) {
    pp_fail(r, m, "the conv has unexpected attributes");
    return NULL;
  }
  const char *keys[32];
  GPAttrValue vals[32];
  bool seen_pad = false, seen_dil = false;
  GPAttrValue pad = {.kind = GP_ATTR_INTS, .n = 4, .ints = p.padding};
  GPAttrValue dil = {.kind = GP_ATTR_INTS, .n = 2, .ints = p.dilation};
  int32_t n = 0;
  for (int32_t i = 0; i < a->n; i++, n++) {
    keys[n] = a->keys[i];
    vals[n] = a->values[i];
    if (strcmp(a->keys[i], "padding") == 0) vals[n] = pad, seen_pad = true;
    if (strcmp(a->keys[i], "dilation") == 0) vals[n] = dil, seen_dil = true;
  }
  if (!seen_pad) keys[n] = "padding", vals[n++] = pad;
  if (!seen_dil) keys[n] = "dilation", vals[n++] = dil;
  GPAttrs *attrs = H->op_attrs_new((const GPOp *)conv->op, n, keys, vals);
  GPExpr *args[2] = {pp_cap(m, "x"), pp_cap(m, "w")};
  GPExpr *out = attrs ? (GPExpr *)H->call_new(conv->op, 2, args, attrs) : NULL;
  gp_release(attrs);
  if (!out) pp_fail(r, m, "building the dilated convolution failed");
  return out;
}

static const PPRule k_rules[] = {
    {"atrous_conv2d", "nn.batch_to_space_nd(%conv=nn.conv2d(%s2b=nn.space_to_batch_nd(%x), %w))", fac_check,
     fac_rewrite},
};

static int flatten_atrous_conv(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  return pp_run(PASS_NAME, k_rules, 1, NULL, args, nargs, result);
}

int std_register_flatten_atrous_conv(void) {
  static const char *const required[] = {"InferType"};
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = PASS_NAME,
      .opt_level = 0,
      .kind = GP_PASS_TRANSFORM,
      .required = required,
      .num_required = 1,
      .func = flatten_atrous_conv,
      .help = "TVM's FlattenAtrousConv: nn.space_to_batch_nd + nn.conv2d + nn.batch_to_space_nd (NHWC) into one "
              "nn.conv2d with dilation = block_shape and the padding the paddings and crops leave.",
  };
  return GP_HAS_FIELD(H, GPHostAPI, pattern_table_get) ? H->pass_register(&info, 0) : 0;
}
