/* conv_bn_fuse.c -- ConvBnFuse (opt-level 2), Paddle Lite's lite_conv_bn_fuse_pass
 * (conv_bn_fuser.cc): get-item 0 of nn.batch_norm over nn.conv2d [+ nn.bias_add], every
 * parameter a constant, becomes nn.bias_add(nn.conv2d(x, w'), b'):
 *     alpha[c] = gamma[c] / sqrt(var[c] + epsilon)     (gamma = 1 when scale=False)
 *     w'[o, ...] = w[o, ...] * alpha[o]                 along the kernel layout's O axis
 *     b'[c] = (conv_bias[c] - mean[c]) * alpha[c] + beta[c]   (conv_bias 0 when absent,
 *                                                         beta 0 when center=False)
 * computed in float64 and stored in the weight's dtype (float32 or float64).  The new conv keeps
 * the old one's attributes; the bias_add's axis is the conv's output channel axis.
 * Left alone (with an --explain note):
 *  - a data or output layout that is not a permutation of NCHW, a kernel layout that is not a
 *    permutation of OIHW, or groups > 1 with a kernel layout other than OIHW (where O is not
 *    the output channel);
 *  - a batch_norm (or the bias_add) whose axis is not the conv's output channel axis;
 *  - constants without values, of a dtype other than float32 / float64, of differing dtypes,
 *    or not of C = the weight's O extent elements; a conv with another out_dtype;
 *  - a non-constant weight or batch_norm parameter (the pattern asks for constants);
 *  - a conv (or bias_add, or batch_norm) also used outside the match, e.g. the batch_norm's
 *    other outputs: the driver refuses interior uses (Paddle's AsIntermediate).
 * nn.conv2d_transpose (Paddle's conv2d_transpose case) is not handled. */
#include "pattern_pass.h"

#include <math.h>
#include <string.h>

#define PASS_NAME "ConvBnFuse"

/* What a match rewrites into, derived from attributes and constants only (so the check, on
 * the typed input graph, and the rewrite, on the rewritten graph, agree). */
typedef struct Plan {
  const GPExpr *conv, *bn, *bias_add;
  const GPTensor *w, *cb, *gamma, *beta, *mean, *var;
  int32_t ca;     /* output channel axis */
  int32_t ko;     /* kernel's O axis */
  int64_t c;      /* channels */
} Plan;

static int32_t norm_axis(int64_t axis, int32_t ndim) {
  return axis < -(int64_t)ndim || axis >= ndim ? -1 : (int32_t)(axis < 0 ? axis + ndim : axis);
}

static bool same_dtype(const GPTensor *a, const GPTensor *b) {
  return a->dl.dtype.code == b->dl.dtype.code && a->dl.dtype.bits == b->dl.dtype.bits;
}

/* 1 and *p filled, or 0 after pp_decline. */
static int plan(PPRun *r, const GPMatch *m, Plan *p) {
  memset(p, 0, sizeof *p);
  p->conv = pp_cap(m, "conv");
  p->bn = pp_cap(m, "bn");
  GPExpr *cb = pp_cap(m, "cb");
  const GPExpr *ba = ((const GPCall *)p->bn)->args[0];
  p->bias_add = ba != p->conv ? ba : NULL;
  const char *dl = pp_attr_str(p->conv, "data_layout", "NCHW"), *kl = pp_attr_str(p->conv, "kernel_layout", "OIHW");
  const char *ol = pp_attr_str(p->conv, "out_layout", "");
  if (!*ol) ol = dl;
  if (!pp_layout_plain(dl, "NCHW") || !pp_layout_plain(ol, "NCHW") || !pp_layout_plain(kl, "OIHW"))
    return pp_decline(r, m, "layouts %s / %s / %s are not permutations of NCHW and OIHW", dl, kl, ol);
  int64_t groups = pp_attr_int(p->conv, "groups", 1);
  if (groups != 1 && strcmp(kl, "OIHW") != 0)
    return pp_decline(r, m, "groups %lld with kernel layout %s (only OIHW for grouped convolutions)",
                      (long long)groups, kl);
  p->ca = pp_layout_axis(ol, 'C');
  p->ko = pp_layout_axis(kl, 'O');
  int32_t bn_axis = norm_axis(pp_attr_int(p->bn, "axis", 1), 4);
  if (bn_axis != p->ca)
    return pp_decline(r, m, "the batch_norm's axis %lld is not the conv's channel axis %d (layout %s)",
                      (long long)pp_attr_int(p->bn, "axis", 1), (int)p->ca, ol);
  if (p->bias_add && norm_axis(pp_attr_int(p->bias_add, "axis", 1), 4) != p->ca)
    return pp_decline(r, m, "the bias_add's axis %lld is not the conv's channel axis %d (layout %s)",
                      (long long)pp_attr_int(p->bias_add, "axis", 1), (int)p->ca, ol);
  const GPCall *bn = (const GPCall *)p->bn;
  p->w = pp_float_data(((const GPCall *)p->conv)->args[1]);
  p->gamma = pp_float_data(bn->args[1]);
  p->beta = pp_float_data(bn->args[2]);
  p->mean = pp_float_data(bn->args[3]);
  p->var = pp_float_data(bn->args[4]);
  p->cb = cb ? pp_float_data(cb) : NULL;
  if (!p->w || !p->gamma || !p->beta || !p->mean || !p->var || (cb && !p->cb))
    return pp_decline(r, m, "a constant has no values or is not float32 / float64");
  const GPTensor *all[6] = {p->gamma, p->beta, p->mean, p->var, p->cb, NULL};
  p->c = p->w->dl.ndim == 4 ? p->w->dl.shape[p->ko] : -1;
  for (int i = 0; all[i]; i++)
    if (!same_dtype(all[i], p->w) || pp_numel(all[i]) != p->c)
      return pp_decline(r, m, "the batch_norm parameters and the bias must be %lld values of the weight's dtype",
                        (long long)p->c);
  const GPAttrValue *od = pp_attr(p->conv, "out_dtype");
  if (od && od->kind == GP_ATTR_DTYPE && od->dtype.bits &&
      (od->dtype.code != p->w->dl.dtype.code || od->dtype.bits != p->w->dl.dtype.bits))
    return pp_decline(r, m, "the conv's out_dtype differs from the weight's dtype");
  return 1;
}

static int bn_check(PPRun *r, const GPMatch *m) {
  Plan p;
  return plan(r, m, &p);
}

static GPExpr *bn_rewrite(PPRun *r, const GPMatch *m) {
  Plan p;
  if (!plan(r, m, &p)) {
    pp_fail(r, m, "the match changed between selection and rewrite");
    return NULL;
  }
  const GPCall *conv = (const GPCall *)p.conv;
  double eps = pp_attr_float(p.bn, "epsilon", 1e-5);
  bool scale = pp_attr_int(p.bn, "scale", 1) != 0, center = pp_attr_int(p.bn, "center", 1) != 0;
  GPTensor *w = pp_tensor_new(p.w->dl.dtype, 4, p.w->dl.shape);
  GPTensor *b = w ? pp_tensor_new(p.w->dl.dtype, 1, &p.c) : NULL;
  double *alpha = gp_scratch_alloc(sizeof(double) * (size_t)(p.c ? p.c : 1));
  GPExpr *out = NULL;
  if (b) {
    for (int64_t c = 0; c < p.c; c++) {
      alpha[c] = (scale ? pp_get(p.gamma, c) : 1.0) / sqrt(pp_get(p.var, c) + eps);
      double cb = p.cb ? pp_get(p.cb, c) : 0.0;
      pp_set(b, c, (cb - pp_get(p.mean, c)) * alpha[c] + (center ? pp_get(p.beta, c) : 0.0));
    }
    int64_t inner = 1, n = pp_numel(p.w);
    for (int32_t d = p.ko + 1; d < 4; d++) inner *= p.w->dl.shape[d];
    for (int64_t i = 0; i < n; i++) pp_set(w, i, pp_get(p.w, i) * alpha[(i / inner) % p.c]);
    SBuild sb = {.ops = &r->ops};
    GPExpr *wc = pp_constant(w), *bc = wc ? pp_constant(b) : NULL;
    GPExpr *args[2] = {conv->args[0], wc};
    GPExpr *nc = bc ? (GPExpr *)H->call_new(conv->op, 2, args, conv->attrs) : NULL;
    static const char *const keys[] = {"axis"};
    GPAttrValue axis = {.kind = GP_ATTR_INT, .i = p.ca};
    GPExpr *ba_args[2] = {nc, bc};
    out = nc ? sb_finish(&sb, sb_call(&sb, "nn.bias_add", 2, ba_args, 1, keys, &axis)) : NULL;
    gp_release(nc);
    gp_release(wc);
    gp_release(bc);
  }
  gp_scratch_free(alpha);
  gp_release(w);
  gp_release(b);
  if (!out) pp_fail(r, m, "building the folded convolution failed");
  return out;
}

static const PPRule k_rules[] = {
    {"conv2d_batch_norm",
     "%bn=nn.batch_norm(nn.bias_add?(%conv=nn.conv2d(_, const), %cb=const), const, const, const, const).0",
     bn_check, bn_rewrite},
};

static int conv_bn_fuse(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  return pp_run(PASS_NAME, k_rules, 1, NULL, args, nargs, result);
}

int std_register_conv_bn_fuse(void) {
  static const char *const excluded[] = {"xpu"}; /* Paddle: BindTargets(kAny), ExcludeTargets(kXPU) */
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = PASS_NAME,
      .opt_level = 2,
      .kind = GP_PASS_TRANSFORM,
      .excluded_targets = excluded,
      .num_excluded_targets = 1,
      .func = conv_bn_fuse,
      /* kernels: Paddle binds none (BindKernel is not called for lite_conv_bn_fuse_pass) */
      .help = "Paddle Lite's conv+batch_norm fusion: fold constant batch_norm parameters into the conv2d's "
              "weights and a bias_add.",
  };
  return GP_HAS_FIELD(H, GPHostAPI, pattern_table_get) ? H->pass_register(&info, 0) : 0;
}
