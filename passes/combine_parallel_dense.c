/* combine_parallel_dense.c -- CombineParallelDense (opt-level 4, requires InferType), TVM v0.12's
 * combine_parallel_dense.cc on the driver of combine_parallel.h.  Config
 * `CombineParallelDense.to_batch_matmul` (default true, TVM's to_batch default):
 *  - true (ParallelDenseToBatchCombiner): denses of one data with equal out_dtype and equal
 *    weight shapes become nn.batch_matmul(stack(data, ..), stack(weights, ..)) (transpose_b);
 *    a following elemwise / broadcast op whose other arguments have equal shapes and dtypes is
 *    folded in with those arguments stacked (a 1-d argument expanded to (1, j) first); the
 *    outputs are split along axis 0 and squeezed;
 *  - false (ParallelDenseToDenseCombiner): denses with equal out_dtype and weight shape[1]
 *    (the output sizes may differ) become one dense of the weights concatenated along axis 0
 *    (units = their sum); a following op's other arguments (same dtype and rank, no higher
 *    rank than the op's output, equal but for the last axis) are concatenated along their last
 *    axis, a scalar expanded to (1) and a last axis of 1 repeated to the branch's width first;
 *    each output is a strided_slice (slice_mode="size") of the last axis whose extent is the
 *    branch's dense width.
 * Beyond TVM (which would build ill-typed or wrong IR there): to_batch_matmul needs 2-d data
 * (batch_matmul is 3-d) and equal weight dtypes, folds no op with an axis / axes attribute and
 * no argument of rank 0 or above 2, and a folded level must give every branch's shape behind
 * the stacked axis; the dense combination takes a branch's width from its output's last axis
 * (TVM's shape[1] is not the width for data of rank 3) and checks each folded level's combined
 * type against the branches' (the slice axis must hold the sum of their widths). */
#include "combine_parallel.h"

#include <stdlib.h>
#include <string.h>

static const GPType *weight_type(const GPCall *c) { return cp_tensor_type(c->args[1]); }

static bool supported(const CPRun *r, const GPCall *c) {
  (void)r;
  const GPType *w = weight_type(c), *x = cp_tensor_type(c->args[0]);
  return w && x && w->n == 2 && c->nargs == 2;
}

static uint64_t key(const CPRun *r, const GPCall *c) {
  const GPType *w = weight_type(c);
  uint64_t h = cp_hash_attr(0xde45e, cp_attr(c, "out_dtype"));
  h = cp_mix(h, (uint64_t)w->tensor.dtype.code << 8 | w->tensor.dtype.bits);
  if (r->flag) h = cp_mix(h, (uint64_t)w->tensor.shape[0]);
  return cp_mix(h, (uint64_t)w->tensor.shape[1]);
}

static bool compatible(const CPRun *r, const GPCall *a, const GPCall *b) {
  const GPType *wa = weight_type(a), *wb = weight_type(b);
  if (!cp_attr_same(a, b, "out_dtype") || !cp_dtype_eq(wa->tensor.dtype, wb->tensor.dtype)) return false;
  if (wa->tensor.shape[1] != wb->tensor.shape[1]) return false;
  if (!r->flag) return true;
  return wa->tensor.shape[0] == wb->tensor.shape[0] && cp_tensor_type(a->args[0])->n == 2 &&
         cp_tensor_type(b->args[0])->n == 2;
}

static GPExpr *gather(CPRun *r, const CPGroup *g, int32_t depth, int32_t arg, const char *op, int64_t axis) {
  GPExpr *small[16] = {0};
  GPExpr **xs = g->n > 16 ? malloc((size_t)g->n * sizeof *xs) : small;
  if (!xs) abort();
  for (int32_t k = 0; k < g->n; k++) xs[k] = cp_at(g, k, depth)->args[arg];
  GPExpr *e = cp_join(r, op, g->n, xs, axis);
  if (xs != small) free(xs);
  return e;
}

/* ---- to batch_matmul */

static GPExpr *batch_make_combined(CPRun *r, const CPGroup *g) {
  const GPCall *root = cp_at(g, 0, 0);
  GPExpr *x = gather(r, g, 0, 0, "stack", 0);
  GPExpr *w = x ? gather(r, g, 0, 1, "stack", 0) : NULL;
  GPExpr *res = NULL;
  if (w) {
    static const char *const keys[] = {"out_dtype", "transpose_a", "transpose_b"};
    const GPAttrValue *od = cp_attr(root, "out_dtype");
    GPAttrValue v[3] = {od ? *od : (GPAttrValue){.kind = GP_ATTR_DTYPE}, {.kind = GP_ATTR_BOOL, .i = 0},
                        {.kind = GP_ATTR_BOOL, .i = 1}};
    GPExpr *args[2] = {x, w};
    res = cp_call(r, "nn.batch_matmul", 2, args, 3, keys, v);
  }
  gp_release(x);
  gp_release(w);
  return res;
}

static bool batch_arg_compatible(const GPCall *a, const GPCall *b, int32_t index) {
  const GPType *ta = cp_tensor_type(a->args[index]), *tb = cp_tensor_type(b->args[index]);
  if (!ta || !tb || !cp_dtype_eq(ta->tensor.dtype, tb->tensor.dtype) || ta->n != tb->n) return false;
  if (ta->n < 1 || ta->n > 2) return false; /* beyond TVM: stacked, these broadcast as before */
  for (int32_t i = 0; i < ta->n; i++)
    if (ta->tensor.shape[i] != tb->tensor.shape[i]) return false;
  return true;
}

/* stacked on a new axis 0; a vector (a bias) first becomes a row */
static GPExpr *batch_join_arg(CPRun *r, const CPGroup *g, int32_t depth, int32_t arg, int32_t parent) {
  (void)parent;
  GPExpr *small[16] = {0};
  GPExpr **xs = g->n > 16 ? malloc((size_t)g->n * sizeof *xs) : small;
  if (!xs) abort();
  int32_t made = 0;
  bool ok = true;
  for (int32_t k = 0; k < g->n && ok; k++) {
    GPExpr *a = cp_at(g, k, depth)->args[arg];
    a = cp_tensor_type(a)->n == 1 ? cp_expand_dims(r, a, 0, 1) : gp_retain(a);
    ok = a != NULL;
    xs[made++] = a;
  }
  GPExpr *res = ok ? cp_join(r, "stack", g->n, xs, 0) : NULL;
  for (int32_t k = 0; k < made; k++) gp_release(xs[k]);
  if (xs != small) free(xs);
  return res;
}

static bool batch_level_ok(const GPExpr *data, const CPGroup *g, int32_t depth) {
  const GPCall *call = cp_at(g, 0, depth);
  if (cp_attr(call, "axis") || cp_attr(call, "axes")) return false;
  const GPType *t = cp_tensor_type(data);
  if (!t || t->n != 3 || t->tensor.shape[0] != g->n) return false;
  for (int32_t k = 0; k < g->n; k++) {
    const GPType *o = cp_tensor_type(&cp_at(g, k, depth)->base);
    if (!o || o->n != 2 || !cp_dtype_eq(o->tensor.dtype, t->tensor.dtype) || o->tensor.shape[0] != t->tensor.shape[1] ||
        o->tensor.shape[1] != t->tensor.shape[2])
      return false;
  }
  return true;
}

static int batch_update_output(CPRun *r, GPExpr *data, const CPGroup *g, GPExpr **out) {
  static const char *const skeys[] = {"indices_or_sections", "axis"};
  GPAttrValue sv[2] = {{.kind = GP_ATTR_INT, .i = g->n}, {.kind = GP_ATTR_INT, .i = 0}};
  GPExpr *split = cp_call(r, "split", 1, &data, 2, skeys, sv);
  if (!split) return -1;
  static const char *const qkeys[] = {"axis"};
  int64_t zero = 0;
  GPAttrValue qv = {.kind = GP_ATTR_INTS, .n = 1, .ints = &zero};
  int rc = 0;
  for (int32_t k = 0; k < g->n && rc == 0; k++) {
    GPTupleGetItem *item = H->tuple_get_item_new(split, k);
    if (!item) {
      rc = -1;
      break;
    }
    item->base.checked_type = split->checked_type->tuple.fields[k];
    GPExpr *ie = &item->base;
    out[k] = cp_call(r, "squeeze", 1, &ie, 1, qkeys, &qv);
    gp_release(item);
    if (!out[k]) rc = -1;
  }
  gp_release(split);
  return rc;
}

/* ---- to one dense */

/* The width of branch k's dense (its output's last axis), or -1. */
static int64_t width(const CPGroup *g, int32_t k) {
  const GPType *o = cp_tensor_type(&cp_at(g, k, 0)->base);
  return o && o->n >= 1 ? o->tensor.shape[o->n - 1] : -1;
}

static GPExpr *dense_make_combined(CPRun *r, const CPGroup *g) {
  const GPCall *root = cp_at(g, 0, 0);
  int64_t units = 0;
  for (int32_t k = 0; k < g->n; k++) {
    int64_t d = weight_type(cp_at(g, k, 0))->tensor.shape[0];
    if (d < 0 || width(g, k) != d) {
      H->error_set(GP_ERR_UNSUPPORTED, "a weight has no static output extent");
      return NULL;
    }
    units += d;
  }
  GPExpr *w = gather(r, g, 0, 1, "concatenate", 0);
  if (!w) return NULL;
  static const char *const keys[] = {"units", "out_dtype"};
  const GPAttrValue *od = cp_attr(root, "out_dtype");
  GPAttrValue v[2] = {{.kind = GP_ATTR_INT, .i = units}, od ? *od : (GPAttrValue){.kind = GP_ATTR_DTYPE}};
  GPExpr *args[2] = {root->args[0], w};
  GPExpr *res = cp_call(r, "nn.dense", 2, args, 2, keys, v);
  gp_release(w);
  return res;
}

static bool dense_arg_compatible(const GPCall *a, const GPCall *b, int32_t index) {
  const GPType *ta = cp_tensor_type(a->args[index]), *tb = cp_tensor_type(b->args[index]);
  const GPType *oa = cp_tensor_type(&a->base), *ob = cp_tensor_type(&b->base);
  if (!ta || !tb || !oa || !ob) return false;
  if (!cp_dtype_eq(ta->tensor.dtype, tb->tensor.dtype) || ta->n != tb->n) return false;
  if (oa->n < ta->n || ob->n < tb->n) return false;
  for (int32_t i = 0; i + 1 < ta->n; i++)
    if (ta->tensor.shape[i] != tb->tensor.shape[i]) return false;
  return true;
}

/* concatenated along the argument's last axis; a scalar, or a last axis of 1 against a wider
 * output, is first repeated to the branch's width */
static GPExpr *dense_join_arg(CPRun *r, const CPGroup *g, int32_t depth, int32_t arg, int32_t parent) {
  int32_t arg_ndim = cp_tensor_type(cp_at(g, 0, depth)->args[arg])->n;
  int64_t axis = arg_ndim == 0 ? 0 : arg_ndim - 1;
  GPExpr *small[16] = {0};
  GPExpr **xs = g->n > 16 ? malloc((size_t)g->n * sizeof *xs) : small;
  if (!xs) abort();
  int32_t made = 0;
  bool ok = true;
  for (int32_t k = 0; k < g->n && ok; k++) {
    const GPCall *c = cp_at(g, k, depth);
    const GPType *pt = cp_tensor_type(c->args[parent]);
    int64_t out_dim = pt && pt->n >= 1 ? pt->tensor.shape[pt->n - 1] : -1;
    if (out_dim < 0) {
      ok = false;
      break;
    }
    GPExpr *a = gp_retain(c->args[arg]);
    const GPType *at = cp_tensor_type(a);
    bool repeat = false;
    if (at->n == 0) {
      GPExpr *e = cp_expand_dims(r, a, -1, 1);
      gp_release(a);
      a = e;
      repeat = true;
    } else if (out_dim > 1 && at->tensor.shape[at->n - 1] == 1) {
      repeat = true;
    }
    if (a && repeat) {
      static const char *const keys[] = {"repeats", "axis"};
      GPAttrValue v[2] = {{.kind = GP_ATTR_INT, .i = out_dim}, {.kind = GP_ATTR_INT, .i = axis}};
      GPExpr *e = cp_call(r, "repeat", 1, &a, 2, keys, v);
      gp_release(a);
      a = e;
    }
    if (!a) {
      ok = false;
      break;
    }
    xs[made++] = a;
  }
  GPExpr *res = ok ? cp_join(r, "concatenate", g->n, xs, axis) : NULL;
  for (int32_t k = 0; k < made; k++) gp_release(xs[k]);
  if (xs != small) free(xs);
  return res;
}

/* TVM's slice axis of branch k at depth: the last axis whose extent is the dense's width. */
static int32_t slice_axis(const CPGroup *g, int32_t k, int32_t depth) {
  const GPType *o = cp_tensor_type(&cp_at(g, k, depth)->base);
  int64_t wd = width(g, k);
  for (int32_t i = o ? o->n - 1 : -1; i >= 0; i--)
    if (o->tensor.shape[i] == wd) return i;
  return -1;
}

static bool dense_level_ok(const GPExpr *data, const CPGroup *g, int32_t depth) {
  const GPType *t = cp_tensor_type(data);
  int32_t s = slice_axis(g, 0, depth);
  if (!t || s < 0 || s >= t->n) return false;
  int64_t sum = 0;
  for (int32_t k = 0; k < g->n; k++) {
    const GPType *o = cp_tensor_type(&cp_at(g, k, depth)->base);
    if (slice_axis(g, k, depth) != s || o->n != t->n || !cp_dtype_eq(o->tensor.dtype, t->tensor.dtype)) return false;
    for (int32_t i = 0; i < t->n; i++)
      if (i != s && o->tensor.shape[i] != t->tensor.shape[i]) return false;
    sum += width(g, k);
  }
  return sum == t->tensor.shape[s];
}

static int dense_update_output(CPRun *r, GPExpr *data, const CPGroup *g, int32_t depth, GPExpr **out) {
  int64_t index = 0, begin[64], end[64];
  for (int32_t k = 0; k < g->n; k++) {
    const GPType *o = cp_tensor_type(&cp_at(g, k, depth)->base);
    int32_t s = slice_axis(g, k, depth);
    if (s < 0 || o->n > 64) {
      H->error_set(GP_ERR_INTERNAL, "no axis of the branch's output has the dense's width");
      return -1;
    }
    for (int32_t i = 0; i < o->n; i++) {
      begin[i] = 0;
      end[i] = -1;
    }
    begin[s] = index;
    end[s] = width(g, k);
    index += width(g, k);
    if (!(out[k] = cp_slice(r, data, o->n, begin, end))) return -1;
  }
  return 0;
}

/* ---- the pass */

static GPExpr *make_combined(CPRun *r, const CPGroup *g) {
  return r->flag ? batch_make_combined(r, g) : dense_make_combined(r, g);
}
static bool arg_compatible(CPRun *r, const GPCall *a, const GPCall *b, int32_t index) {
  return r->flag ? batch_arg_compatible(a, b, index) : dense_arg_compatible(a, b, index);
}
static GPExpr *join_arg(CPRun *r, const CPGroup *g, int32_t depth, int32_t arg, int32_t parent) {
  return r->flag ? batch_join_arg(r, g, depth, arg, parent) : dense_join_arg(r, g, depth, arg, parent);
}
static bool level_ok(CPRun *r, const GPExpr *data, const CPGroup *g, int32_t depth) {
  return r->flag ? batch_level_ok(data, g, depth) : dense_level_ok(data, g, depth);
}
static int update_output(CPRun *r, GPExpr *data, const CPGroup *g, int32_t depth, GPExpr **out) {
  return r->flag ? batch_update_output(r, data, g, out) : dense_update_output(r, data, g, depth, out);
}

static int read_config(CPRun *r, GPPassContext *ctx) {
  r->flag = std_config_bool(ctx, "CombineParallelDense.to_batch_matmul", true);
  return 0;
}

static const GPConfigKey k_keys[] = {
    {.name = "to_batch_matmul",
     .type_index = GP_TI_BOOL,
     .default_value = {.type_index = GP_TI_BOOL, .v_int64 = 1},
     .help = "true: stack into one nn.batch_matmul (TVM's default); false: concatenate the weights into one "
             "nn.dense and slice"},
};

static const CPCombiner k_dense = {
    .pass = "CombineParallelDense",
    .op = "nn.dense",
    .help = "Combine parallel nn.dense ops of one input (and the elemwise/broadcast ops after them) into one "
            "batch_matmul or dense (TVM's CombineParallelDense).",
    .supported = supported,
    .key = key,
    .compatible = compatible,
    .make_combined = make_combined,
    .arg_compatible = arg_compatible,
    .join_arg = join_arg,
    .level_ok = level_ok,
    .update_output = update_output,
    .extra_keys = k_keys,
    .num_extra_keys = 1,
    .read_config = read_config,
};

int std_register_combine_parallel_dense(void) { return cp_register(&k_dense); }
