/* combine_parallel_conv2d.c -- CombineParallelConv2D (opt-level 4, requires InferType), TVM
 * v0.12's combine_parallel_conv2d.cc on the driver of combine_parallel.h:
 *  - a branch starts at an nn.conv2d with groups == 1; two convolutions of one data combine
 *    when strides, padding, dilation, groups, data_layout, kernel_layout, out_dtype, out_layout
 *    and the kernel's H and W extents are equal;
 *  - the combined conv2d takes the weights concatenated along the kernel layout's O axis, the
 *    first conv's attributes and channels = the sum of the branches' O extents;
 *  - a following elemwise / broadcast op is folded in when its other arguments have the same
 *    dtype and rank, carry the branch's output channels at the channel axis (not broadcast
 *    there) and agree on the other axes; they are concatenated along that axis;
 *  - each branch's output is a strided_slice (slice_mode="size") of the channel axis.
 * Beyond TVM: a conv2d with groups != 1 never joins a group (TVM adds such a conv to a group
 * when its data also feeds a conv with groups == 1, and the combined grouped conv is wrong);
 * a folded level must keep every branch's shape apart from the channel axis (checked on the
 * combined type). */
#include "combine_parallel.h"

#include <stdlib.h>
#include <string.h>

static const char *str_attr(const GPCall *c, const char *key, const char *dflt) {
  const GPAttrValue *v = cp_attr(c, key);
  return v && v->kind == GP_ATTR_STR && v->s ? v->s : dflt;
}

/* Position of axis letter ch in layout, or -1. */
static int32_t axis_of(const char *layout, char ch) {
  const char *p = strchr(layout, ch);
  return p ? (int32_t)(p - layout) : -1;
}

static bool supported(const CPRun *r, const GPCall *c) {
  (void)r;
  return cp_attr_int(c, "groups", 1) == 1;
}

/* The kernel's extent along axis letter ch, or -2 when unknown. */
static int64_t kernel_dim(const GPCall *c, char ch) {
  const GPType *t = cp_tensor_type(c->args[1]);
  int32_t a = axis_of(str_attr(c, "kernel_layout", "OIHW"), ch);
  return t && a >= 0 && a < t->n ? t->tensor.shape[a] : -2;
}

static const char *const k_same[] = {"strides", "padding", "dilation", "groups", "data_layout",
                                     "kernel_layout", "out_dtype", "out_layout"};

static uint64_t key(const CPRun *r, const GPCall *c) {
  (void)r;
  uint64_t h = 0xc0117;
  for (size_t i = 0; i < sizeof k_same / sizeof *k_same; i++) h = cp_hash_attr(h, cp_attr(c, k_same[i]));
  return cp_mix(cp_mix(h, (uint64_t)kernel_dim(c, 'H')), (uint64_t)kernel_dim(c, 'W'));
}

static bool compatible(const CPRun *r, const GPCall *a, const GPCall *b) {
  (void)r;
  for (size_t i = 0; i < sizeof k_same / sizeof *k_same; i++)
    if (!cp_attr_same(a, b, k_same[i])) return false;
  int64_t ha = kernel_dim(a, 'H'), wa = kernel_dim(a, 'W');
  return ha != -2 && wa != -2 && ha == kernel_dim(b, 'H') && wa == kernel_dim(b, 'W');
}

static GPExpr *make_combined(CPRun *r, const CPGroup *g) {
  const GPCall *root = cp_at(g, 0, 0);
  int32_t o = axis_of(str_attr(root, "kernel_layout", "OIHW"), 'O');
  const char *ol = str_attr(root, "out_layout", "");
  int32_t cpos = axis_of(*ol ? ol : str_attr(root, "data_layout", "NCHW"), 'C');
  if (o < 0 || cpos < 0) {
    H->error_set(GP_ERR_UNSUPPORTED, "the layouts name no O (kernel) or C (output) axis");
    return NULL;
  }
  r->channel_pos = cpos;
  GPExpr *small[16] = {0};
  GPExpr **w = g->n > 16 ? malloc((size_t)g->n * sizeof *w) : small;
  if (!w) abort();
  int64_t channels = 0;
  for (int32_t k = 0; k < g->n; k++) {
    const GPCall *c = cp_at(g, k, 0);
    int64_t ch = kernel_dim(c, 'O');
    if (ch < 0) {
      if (w != small) free(w);
      H->error_set(GP_ERR_UNSUPPORTED, "a weight has no static output-channel extent");
      return NULL;
    }
    channels += ch;
    w[k] = c->args[1];
  }
  GPExpr *weight = cp_join(r, "concatenate", g->n, w, o);
  if (w != small) free(w);
  if (!weight) return NULL;
  GPAttrs *attrs = cp_attrs_with((const GPOp *)root->op, root->attrs, "channels",
                                 (GPAttrValue){.kind = GP_ATTR_INT, .i = channels});
  GPExpr *args[2] = {root->args[0], weight};
  GPExpr *conv = attrs ? cp_call_attrs(r, root->op, 2, args, attrs) : NULL;
  gp_release(attrs);
  gp_release(weight);
  return conv;
}

static bool arg_compatible(CPRun *r, const GPCall *a, const GPCall *b, int32_t index) {
  const GPType *ta = cp_tensor_type(a->args[index]), *tb = cp_tensor_type(b->args[index]);
  const GPType *oa = cp_tensor_type(&a->base), *ob = cp_tensor_type(&b->base);
  if (!ta || !tb || !oa || !ob) return false;
  if (!cp_dtype_eq(ta->tensor.dtype, tb->tensor.dtype) || ta->n != tb->n) return false;
  int32_t acp = r->channel_pos - oa->n + ta->n;
  if (acp < 0 || acp > r->channel_pos || r->channel_pos >= oa->n || r->channel_pos >= ob->n) return false;
  if (ta->tensor.shape[acp] != oa->tensor.shape[r->channel_pos] ||
      tb->tensor.shape[acp] != ob->tensor.shape[r->channel_pos])
    return false;
  for (int32_t i = 0; i < ta->n; i++)
    if (i != acp && ta->tensor.shape[i] != tb->tensor.shape[i]) return false;
  return true;
}

/* concatenated along the argument's channel axis (the output's, aligned to the right) */
static GPExpr *join_arg(CPRun *r, const CPGroup *g, int32_t depth, int32_t arg, int32_t parent) {
  (void)parent;
  const GPCall *call = cp_at(g, 0, depth);
  int32_t acp = r->channel_pos - cp_tensor_type(&call->base)->n + cp_tensor_type(call->args[arg])->n;
  return cp_join_args(r, g, depth, arg, "concatenate", acp);
}

static bool level_ok(CPRun *r, const GPExpr *data, const CPGroup *g, int32_t depth) {
  const GPType *t = cp_tensor_type(data);
  int32_t c = r->channel_pos;
  if (!t || c >= t->n) return false;
  int64_t sum = 0;
  for (int32_t k = 0; k < g->n; k++) {
    const GPType *o = cp_tensor_type(&cp_at(g, k, depth)->base);
    if (!o || o->n != t->n || !cp_dtype_eq(o->tensor.dtype, t->tensor.dtype)) return false;
    for (int32_t i = 0; i < t->n; i++)
      if (i != c && o->tensor.shape[i] != t->tensor.shape[i]) return false;
    sum += o->tensor.shape[c];
  }
  return sum == t->tensor.shape[c];
}

static int update_output(CPRun *r, GPExpr *data, const CPGroup *g, int32_t depth, GPExpr **out) {
  (void)depth;
  int32_t c = r->channel_pos;
  int64_t begin[64], end[64];
  if (c >= 63) {
    H->error_set(GP_ERR_UNSUPPORTED, "channel axis %d", (int)c);
    return -1;
  }
  for (int32_t i = 0; i < c; i++) {
    begin[i] = 0;
    end[i] = -1;
  }
  int64_t index = 0;
  for (int32_t k = 0; k < g->n; k++) {
    int64_t ch = kernel_dim(cp_at(g, k, 0), 'O');
    begin[c] = index;
    end[c] = ch;
    index += ch;
    if (!(out[k] = cp_slice(r, data, c + 1, begin, end))) return -1;
  }
  return 0;
}

static const CPCombiner k_conv2d = {
    .pass = "CombineParallelConv2D",
    .op = "nn.conv2d",
    .help = "Combine parallel nn.conv2d ops of one input (and the elemwise/broadcast ops after them) into one "
            "conv2d whose output is sliced back (TVM's CombineParallelConv2D).",
    .supported = supported,
    .key = key,
    .compatible = compatible,
    .make_combined = make_combined,
    .arg_compatible = arg_compatible,
    .join_arg = join_arg,
    .level_ok = level_ok,
    .update_output = update_output,
};

int std_register_combine_parallel_conv2d(void) { return cp_register(&k_conv2d); }
