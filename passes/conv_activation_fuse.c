/* conv_activation_fuse.c -- ConvActivationFuse (opt-level 0), Paddle Lite's
 * lite_conv_activation_fuse_pass (conv_activation_fuser.cc): nn.conv2d, an optional
 * nn.bias_add (Paddle's has_bias true and false), then an activation becomes a call of a
 * composite function (MergeComposite's form) that a target maps to its conv kernel with a fused
 * activation:
 *   conv2d_relu:       nn.relu(...)
 *   conv2d_relu6:      clip(..., a_min=0, a_max=6)       (Paddle's relu6, threshold 6)
 *   conv2d_leaky_relu: nn.leaky_relu(...)                (any alpha; it stays in the body)
 * Paddle fuses relu everywhere and relu6 / leaky_relu on ARM, x86, OpenCL and Metal; here every
 * target but xpu gets all three.  Constants (the weight, the bias) are embedded in the
 * composite; the data and non-constant weights or biases are its parameters.  Left alone: a
 * bias_add whose axis is not the conv's output channel axis (then it is not a conv bias), and
 * (by the driver) a conv or bias_add also used outside the match.  nn.conv2d_transpose, prelu,
 * hard_swish and the other activations Paddle fuses on some targets are not handled. */
#include "pattern_pass.h"

#define PASS_NAME "ConvActivationFuse"

#define CONV_BIAS "nn.bias_add?(%conv=nn.conv2d(_, const | _), const | _)"

static int act_check(PPRun *r, const GPMatch *m) {
  const GPExpr *conv = pp_cap(m, "conv"), *x = ((const GPCall *)m->root)->args[0];
  if (x == conv) return 1;
  const char *ol = pp_attr_str(conv, "out_layout", "");
  if (!*ol) ol = pp_attr_str(conv, "data_layout", "NCHW");
  int64_t axis = pp_attr_int(x, "axis", 1);
  if (pp_layout_axis(ol, 'C') != (axis < 0 ? axis + 4 : axis))
    return pp_decline(r, m, "the bias_add's axis %lld is not the conv's channel axis (layout %s)", (long long)axis, ol);
  return 1;
}

static const PPRule k_rules[] = {
    {"conv2d_relu", "nn.relu(" CONV_BIAS ")", act_check, pp_composite},
    {"conv2d_relu6", "clip(" CONV_BIAS "){a_min=0f, a_max=6f}", act_check, pp_composite},
    {"conv2d_leaky_relu", "nn.leaky_relu(" CONV_BIAS ")", act_check, pp_composite},
};

static int conv_activation_fuse(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  return pp_run(PASS_NAME, k_rules, 3, NULL, args, nargs, result);
}

int std_register_conv_activation_fuse(void) {
  static const char *const excluded[] = {"xpu"}; /* Paddle: BindTargets(kAny), ExcludeTargets(kXPU) */
  static const char *const kernels[] = {"nn.conv2d"};
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = PASS_NAME,
      .opt_level = 0,
      .kind = GP_PASS_TRANSFORM,
      .excluded_targets = excluded,
      .num_excluded_targets = 1,
      .func = conv_activation_fuse,
      .kernels = kernels, /* Paddle: BindKernel("conv2d") */
      .num_kernels = 1,
      .help = "Paddle Lite's conv+activation fusion: nn.conv2d [+ nn.bias_add] + relu / relu6 / leaky_relu into "
              "a composite conv2d_relu / conv2d_relu6 / conv2d_leaky_relu.",
  };
  return GP_HAS_FIELD(H, GPHostAPI, pattern_table_get) ? H->pass_register(&info, 0) : 0;
}
