/* to_nchw_layout.c -- ToNCHWLayout (target opu, opt-level 0): the accelerator computes in NCHW
 * with OIHW weights, so graphs written in NHWC (TensorFlow / TFLite exports) are converted.  The
 * host's ConvertLayout does the work (run through GPHostAPI.run_pipeline in a context of the
 * same target at opt-level 3): convolutions to NCHW data with OIHW weights (depthwise included),
 * poolings to NCHW, every other op following its producers, layout_transforms only at the
 * function's boundaries (inputs, outputs, ops without a layout relation); then FoldConstant turns
 * the transforms of constant weights into OIHW constants, so the weights stay constants for the
 * target's predicates and for codegen.
 *
 * A module without a convolution or pooling in another layout than NCHW is returned as it is
 * (nothing runs, so e.g. bias_add is not canonicalized here).  Errors are ConvertLayout's
 * (naming the node), prefixed "ToNCHWLayout: running ...". */
#include "opu.h"

#include <string.h>

#define H opu_host
#define PASS_NAME "ToNCHWLayout"

static const char k_pipeline[] =
    "ConvertLayout{desired_layouts=\"nn.conv2d=NCHW:OIHW,nn.max_pool2d=NCHW,nn.avg_pool2d=NCHW,"
    "nn.global_max_pool2d=NCHW,nn.global_avg_pool2d=NCHW\"},FoldConstant";

/* The layout attribute of a convolution or pooling call, or NULL for other nodes. */
static const char *layout_of(const GPExpr *e) {
  if (e->obj.type_index != GP_TI_CALL) return NULL;
  const GPCall *c = (const GPCall *)e;
  if (c->op->obj.type_index != GP_TI_OP || !c->attrs) return NULL;
  const char *name = ((const GPOp *)c->op)->name;
  const char *key = NULL;
  if (!strcmp(name, "nn.conv2d")) key = "data_layout";
  else if (!strcmp(name, "nn.max_pool2d") || !strcmp(name, "nn.avg_pool2d") || !strcmp(name, "nn.global_max_pool2d") ||
           !strcmp(name, "nn.global_avg_pool2d"))
    key = "layout";
  if (!key) return NULL;
  const GPAttrValue *v = H->attrs_get(c->attrs, key);
  return v && v->kind == GP_ATTR_STR ? v->s : NULL;
}

static const char *kernel_layout_of(const GPExpr *e) {
  if (!opu_is_call(e, "nn.conv2d")) return NULL;
  const GPAttrValue *v = H->attrs_get(((const GPCall *)e)->attrs, "kernel_layout");
  return v && v->kind == GP_ATTR_STR ? v->s : NULL;
}

/* Number of convolutions / poolings not in NCHW (OIHW weights), or -1 + error. */
static int64_t count_other_layouts(const GPModule *mod) {
  int64_t n = 0;
  for (int32_t f = 0; f < mod->num_functions; f++) {
    GPExpr **order = NULL;
    size_t cnt = 0;
    if (H->post_order(&mod->funcs[f]->base, &order, &cnt) != 0) return -1;
    for (size_t i = 0; i < cnt; i++) {
      const char *l = layout_of(order[i]), *k = kernel_layout_of(order[i]);
      if ((l && strcmp(l, "NCHW") != 0) || (k && strcmp(k, "OIHW") != 0)) n++;
    }
    H->free(order);
  }
  return n;
}

static int to_nchw_layout(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (opu_pass_args(PASS_NAME, args, nargs, &mod, &ctx) != 0) return -1;
  int64_t n = count_other_layouts(mod);
  if (n < 0) return -1;
  if (n == 0) {
    H->ctx_note(ctx, "every convolution and pooling is NCHW already: unchanged");
    return opu_return_module(result, (GPModule *)gp_retain(mod));
  }
  GPModule *out = opu_run_inner(PASS_NAME, mod, k_pipeline, ctx);
  if (!out) return -1;
  H->ctx_note(ctx, "%lld convolutions / poolings converted to NCHW", (long long)n);
  return opu_return_module(result, out);
}

int opu_register_to_nchw_layout(const GPHostAPI *host) {
  GPPassInfo info = opu_pass_info(PASS_NAME, to_nchw_layout, NULL, false);
  info.help = "OPU: NHWC convolution graphs to NCHW with OIHW weights (ConvertLayout underneath, "
              "layout_transforms only at the boundaries; constant weights folded).";
  return host->pass_register(&info, 0);
}
