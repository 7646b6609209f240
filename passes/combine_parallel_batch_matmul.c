/* combine_parallel_batch_matmul.c -- CombineParallelBatchMatmul (opt-level 4, requires
 * InferType), TVM v0.12's combine_parallel_batch_matmul.cc on the driver of combine_parallel.h:
 *  - batch_matmuls of one data combine when both have transpose_a=False, transpose_b=True (TVM
 *    supports only that form), equal dtypes of the second argument and of the result, a 3-d
 *    second argument with equal batch extent, and equal out_dtype;
 *  - the combined batch_matmul takes the second arguments concatenated along axis 1;
 *  - a following elemwise / broadcast op has its other arguments concatenated along the last
 *    axis; each output is a strided_slice (slice_mode="size") of the last axis.
 * Beyond TVM (which folds any such op, and builds ill-typed IR when an argument does not carry
 * the branch's width on its last axis): a folded level must have the combined type the
 * branches' give (batch and rows equal, the sum of their widths last). */
#include "combine_parallel.h"

#include <stdlib.h>

static bool supported(const CPRun *r, const GPCall *c) {
  (void)r;
  return c->nargs == 2 && cp_tensor_type(c->args[1]) && cp_tensor_type(&c->base);
}

static uint64_t key(const CPRun *r, const GPCall *c) {
  (void)r;
  const GPType *w = cp_tensor_type(c->args[1]);
  uint64_t h = cp_hash_attr(0xba7c4, cp_attr(c, "out_dtype"));
  h = cp_mix(h, (uint64_t)w->n);
  return cp_mix(h, w->n >= 1 ? (uint64_t)w->tensor.shape[0] : 0);
}

static bool compatible(const CPRun *r, const GPCall *a, const GPCall *b) {
  (void)r;
  if (cp_attr_int(a, "transpose_a", 0) || !cp_attr_int(a, "transpose_b", 1) || cp_attr_int(b, "transpose_a", 0) ||
      !cp_attr_int(b, "transpose_b", 1))
    return false;
  const GPType *wa = cp_tensor_type(a->args[1]), *wb = cp_tensor_type(b->args[1]);
  const GPType *oa = cp_tensor_type(&a->base), *ob = cp_tensor_type(&b->base);
  return cp_dtype_eq(wa->tensor.dtype, wb->tensor.dtype) && cp_dtype_eq(oa->tensor.dtype, ob->tensor.dtype) &&
         wa->n == 3 && wb->n == 3 && wa->tensor.shape[0] == wb->tensor.shape[0] && cp_attr_same(a, b, "out_dtype");
}

static int64_t features(const CPGroup *g, int32_t k) { return cp_tensor_type(cp_at(g, k, 0)->args[1])->tensor.shape[1]; }

static GPExpr *make_combined(CPRun *r, const CPGroup *g) {
  const GPCall *root = cp_at(g, 0, 0);
  for (int32_t k = 0; k < g->n; k++)
    if (features(g, k) < 0) {
      H->error_set(GP_ERR_UNSUPPORTED, "a second argument has no static extent on axis 1");
      return NULL;
    }
  GPExpr *w = cp_join_args(r, g, 0, 1, "concatenate", 1);
  if (!w) return NULL;
  GPExpr *args[2] = {root->args[0], w};
  GPExpr *res = cp_call_attrs(r, root->op, 2, args, root->attrs);
  gp_release(w);
  return res;
}

static bool arg_compatible(CPRun *r, const GPCall *a, const GPCall *b, int32_t index) {
  (void)r;
  return cp_tensor_type(a->args[index]) && cp_tensor_type(b->args[index]);
}

static GPExpr *join_arg(CPRun *r, const CPGroup *g, int32_t depth, int32_t arg, int32_t parent) {
  (void)parent;
  return cp_join_args(r, g, depth, arg, "concatenate", -1);
}

static bool level_ok(CPRun *r, const GPExpr *data, const CPGroup *g, int32_t depth) {
  (void)r;
  const GPType *t = cp_tensor_type(data);
  if (!t || t->n != 3) return false;
  int64_t sum = 0;
  for (int32_t k = 0; k < g->n; k++) {
    const GPType *o = cp_tensor_type(&cp_at(g, k, depth)->base);
    if (!o || o->n != 3 || !cp_dtype_eq(o->tensor.dtype, t->tensor.dtype) || o->tensor.shape[0] != t->tensor.shape[0] ||
        o->tensor.shape[1] != t->tensor.shape[1] || o->tensor.shape[2] != features(g, k))
      return false;
    sum += features(g, k);
  }
  return sum == t->tensor.shape[2];
}

static int update_output(CPRun *r, GPExpr *data, const CPGroup *g, int32_t depth, GPExpr **out) {
  (void)depth;
  int64_t index = 0;
  for (int32_t k = 0; k < g->n; k++) {
    int64_t f = features(g, k);
    int64_t begin[3] = {0, 0, index}, end[3] = {-1, -1, f};
    index += f;
    if (!(out[k] = cp_slice(r, data, 3, begin, end))) return -1;
  }
  return 0;
}

static const CPCombiner k_bmm = {
    .pass = "CombineParallelBatchMatmul",
    .op = "nn.batch_matmul",
    .help = "Combine parallel nn.batch_matmul ops of one input (and the elemwise/broadcast ops after them) into "
            "one batch_matmul whose output is sliced back (TVM's CombineParallelBatchMatmul).",
    .supported = supported,
    .key = key,
    .compatible = compatible,
    .make_combined = make_combined,
    .arg_compatible = arg_compatible,
    .join_arg = join_arg,
    .level_ok = level_ok,
    .update_output = update_output,
};

int std_register_combine_parallel_batch_matmul(void) { return cp_register(&k_bmm); }
