/* cv_control.c -- ONNX control flow: If, Scan and Loop.
 *
 * If.  A condition known when importing (a constant, or computed from constants, shapes and
 * the input values the caller gave: see GPOnnxOptions) selects its branch, which is converted
 * alone and replaces the node, as FoldConstant would fold Relay's if with a constant condition
 * (and the branch not taken may be ill-typed for these inputs, as in ONNX's own function
 * bodies).  Otherwise both branches are converted and joined by Relay's if, which needs them to
 * have one type.
 *
 * Scan (opset 9 on) and Loop are unrolled: Relay has no loop but recursion, which neither the
 * evaluator nor the passes are built for, and the loops of ONNX models are short, over static
 * extents (a sequence axis, a trip count from the shapes).  Scan needs the scan axes' extents;
 * Loop needs its trip count and every iteration's condition known when importing.  Each
 * iteration converts the body again with its inputs bound to the iteration's values; scan
 * outputs are stacked.  OX_MAX_UNROLLED_NODES bounds the body nodes converted in all.
 */
#include "common/checked.h"
#include "frontend/onnx/onnx_impl.h"

#include <stdio.h>
#include <string.h>

#define OX_MAX_UNROLLED_NODES (1 << 20)
#define OX_MAX_ITERATIONS 100000

/* cond (a tensor of one bool) as a rank-0 bool for Relay's if. */
static GPExpr *scalar_cond(OxImporter *im, GPExpr *c) {
  char buf[32];
  if (!ox_is_bool(ox_dtype(c))) return ox_invalid("the condition must be bool, not %s", gp_dtype_str(ox_dtype(c), buf)), NULL;
  if (ox_rank(c) == 0) return c;
  for (int32_t i = 0; i < ox_rank(c); i++)
    if (ox_shape(c)[i] != 1) return ox_invalid("the condition must have one element"), NULL;
  const char *k[] = {"newshape"};
  GPAttrValue v[] = {gp_attr_ints(0, NULL)};
  return ox_call(im, "reshape", 1, &c, 1, k, v);
}

/* The value of a one-element tensor as a bool (-1 + error when it has another size). */
static int tensor_truth(const GPTensor *t, const char *what) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->dl.ndim; i++) n *= t->dl.shape[i];
  if (n != 1) return ox_invalid("%s must have one element (it has %lld)", what, (long long)n);
  return gp_tensor_get_f64(t, 0) != 0;
}

static int cv_if(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *cond = ox_req(n, 0);
  if (!cond) return -1;
  int32_t tin, tout, ein, eout;
  if (ox_subgraph_arity(n, "then_branch", &tin, &tout) != 0 || ox_subgraph_arity(n, "else_branch", &ein, &eout) != 0)
    return -1;
  if (tin || ein) return ox_invalid("the branches must take no inputs (they take %d and %d)", (int)tin, (int)ein);
  if (tout != n->nout || eout != n->nout)
    return ox_invalid("the node has %d outputs, its branches %d and %d", (int)n->nout, (int)tout, (int)eout);
  GPTensor *known = ox_try_const(im, cond);
  if (!known && gp_error_kind()) return -1;
  if (known) {
    int truth = tensor_truth(known, "the condition");
    if (truth < 0) return -1;
    return ox_subgraph(im, n, truth ? "then_branch" : "else_branch", 0, NULL, n->nout, out);
  }
  GPExpr *c = scalar_cond(im, cond);
  if (!c) return -1;
  GPExpr **te = ox_alloc(im, (size_t)(2 * n->nout + 1) * sizeof *te), **ee = te + n->nout;
  if (ox_subgraph(im, n, "then_branch", 0, NULL, n->nout, te) != 0 ||
      ox_subgraph(im, n, "else_branch", 0, NULL, n->nout, ee) != 0)
    return -1;
  /* an output that is an empty optional in one branch only: whether it holds a value is
   * decided at run time, which the IR's static structure cannot say (import.c's header) */
  for (int32_t i = 0; i < n->nout; i++)
    if (ox_is_none(im, te[i]) != ox_is_none(im, ee[i]))
      return ox_unsupported("output %d is an empty optional in one branch only and the condition is not known when "
                            "importing", (int)i);
  if (n->nout == 1) {
    out[0] = ox_if(im, c, te[0], ee[0]);
    if (out[0] && ox_is_none(im, te[0])) ox_mark_none(im, out[0]);
    return out[0] ? 0 : -1;
  }
  GPExpr *f = ox_if(im, c, ox_tuple(im, n->nout, te), ox_tuple(im, n->nout, ee));
  if (!f) return -1;
  for (int32_t i = 0; i < n->nout; i++) {
    if (!(out[i] = ox_get_item(im, f, i))) return -1;
    if (ox_is_none(im, te[i])) ox_mark_none(im, out[i]);
  }
  return 0;
}

/* stack(parts[0..count), axis); parts in order, or reversed when `reverse`. */
static GPExpr *stack_parts(OxImporter *im, GPExpr **parts, int64_t count, bool reverse, int64_t axis) {
  if (reverse)
    for (int64_t i = 0, j = count - 1; i < j; i++, j--) {
      GPExpr *t = parts[i];
      parts[i] = parts[j];
      parts[j] = t;
    }
  GPExpr *tup = ox_tuple(im, (int32_t)count, parts);
  const char *k[] = {"axis"};
  GPAttrValue v[] = {gp_attr_int(axis)};
  return tup ? ox_call(im, "stack", 1, &tup, 1, k, v) : NULL;
}

/* An int attribute list of `count` entries (default 0 each); -1 + error when its length is
 * wrong. */
static int int_list(OxImporter *im, const OxNode *n, const char *name, int32_t count, int64_t **out) {
  int32_t have;
  const int64_t *v = ox_attr_ints(n, name, &have);
  if (gp_error_kind()) return -1;
  *out = ox_alloc(im, (size_t)(count ? count : 1) * sizeof(int64_t));
  if (have < 0) return 0;
  if (have != count) return ox_invalid("attribute '%s' has %d entries, expected %d", name, (int)have, (int)count);
  memcpy(*out, v, (size_t)count * sizeof(int64_t));
  return 0;
}

static int check_unroll(const OxNode *n, int64_t iterations) {
  size_t body = ox_subgraph_size(n, "body");
  if (iterations > OX_MAX_ITERATIONS || (body && (size_t)iterations > OX_MAX_UNROLLED_NODES / body))
    return ox_unsupported("%lld iterations of a %zu-node body are more than the importer unrolls (%d nodes)",
                          (long long)iterations, body, OX_MAX_UNROLLED_NODES);
  return 0;
}

/* The unrolled scan: states init[0..ns), scan inputs xs[0..ms) along in_axes (normalized)
 * in in_dirs; out[0..ns) the final states, out[ns..ns+ks) the scan outputs stacked along
 * out_axes (may be negative) in out_dirs. */
static int scan_core(OxImporter *im, const OxNode *n, int32_t ns, int32_t ms, int32_t ks, GPExpr *const *init,
                     GPExpr *const *xs, const int64_t *in_axes, const int64_t *in_dirs, const int64_t *out_axes,
                     const int64_t *out_dirs, GPExpr **out) {
  int64_t len = -1;
  for (int32_t j = 0; j < ms; j++) {
    int64_t e = ox_shape(xs[j])[in_axes[j]];
    if (e == GP_DIM_ANY) return ox_unsupported("scan input %d has an unknown extent on its scan axis", (int)j);
    if (len >= 0 && e != len)
      return ox_invalid("the scan inputs have different extents on their scan axes (%lld and %lld)", (long long)len,
                        (long long)e);
    len = e;
  }
  if (len == 0) return ox_unsupported("a Scan over 0 steps (its scan outputs' shapes are unknown)");
  if (check_unroll(n, len) != 0) return -1;
  int32_t bin = ns + ms, bout = ns + ks;
  GPExpr **binds = ox_alloc(im, (size_t)bin * sizeof *binds), **res = ox_alloc(im, (size_t)bout * sizeof *res);
  int64_t nparts;
  if (OX_PROD(GP_MAX_TENSOR_ELEMS, &nparts, "the scan outputs", ks ? ks : 1, len) != 0) return -1;
  GPExpr **parts = ox_alloc_n(im, nparts, 0, sizeof *parts, "the scan outputs");
  if (!parts) return -1;
  for (int32_t i = 0; i < ns; i++) binds[i] = init[i];
  for (int64_t t = 0; t < len; t++) {
    for (int32_t j = 0; j < ms; j++) {
      GPExpr *idx = ox_scalar(im, GP_DT_I64, (double)(in_dirs[j] ? len - 1 - t : t));
      GPExpr *args[2] = {xs[j], idx};
      const char *k[] = {"axis"};
      GPAttrValue v[] = {gp_attr_int(in_axes[j])};
      if (!idx || !(binds[ns + j] = ox_call(im, "take", 2, args, 1, k, v))) return -1;
    }
    if (ox_subgraph(im, n, "body", bin, binds, bout, res) != 0) return -1;
    for (int32_t i = 0; i < ns; i++) binds[i] = res[i];
    for (int32_t k = 0; k < ks; k++) parts[(int64_t)k * len + t] = res[ns + k];
  }
  for (int32_t i = 0; i < ns; i++) out[i] = binds[i];
  for (int32_t k = 0; k < ks; k++) {
    int32_t r = ox_rank(parts[(int64_t)k * len]) + 1;
    int64_t ax = out_axes[k];
    if (ax < -r || ax >= r)
      return ox_invalid("scan_output_axes[%d] = %lld is out of range for rank %d", (int)k, (long long)ax, (int)r);
    if (!(out[ns + k] = stack_parts(im, parts + (int64_t)k * len, len, out_dirs[k] != 0, ax < 0 ? ax + r : ax)))
      return -1;
  }
  return 0;
}

/* The body's counts against the node's: ns states, ms scan inputs, ks scan outputs. */
static int scan_counts(const OxNode *n, int32_t skip, int32_t *ns, int32_t *ms, int32_t *ks) {
  int64_t m = ox_attr_int(n, "num_scan_inputs", -1);
  int32_t bin, bout;
  if (gp_error_kind() || ox_subgraph_arity(n, "body", &bin, &bout) != 0) return -1;
  if (m < 1 || m > n->nin - skip)
    return ox_invalid("num_scan_inputs is %lld, the node has %d inputs", (long long)m, (int)n->nin);
  *ms = (int32_t)m;
  *ns = n->nin - skip - *ms;
  *ks = bout - *ns;
  if (bin != *ns + *ms || *ks < 0 || n->nout != bout)
    return ox_invalid("the body takes %d and gives %d values; the node has %d inputs (%d scanned) and %d outputs",
                      (int)bin, (int)bout, (int)n->nin, (int)*ms, (int)n->nout);
  return 0;
}

static int cv_scan(OxImporter *im, const OxNode *n, GPExpr **out) {
  int32_t ns, ms, ks;
  if (scan_counts(n, 0, &ns, &ms, &ks) != 0) return -1;
  int64_t *in_axes, *in_dirs, *out_axes, *out_dirs;
  if (int_list(im, n, "scan_input_axes", ms, &in_axes) || int_list(im, n, "scan_input_directions", ms, &in_dirs) ||
      int_list(im, n, "scan_output_axes", ks, &out_axes) || int_list(im, n, "scan_output_directions", ks, &out_dirs))
    return -1;
  for (int32_t i = 0; i < ns + ms; i++)
    if (!ox_req(n, i)) return -1;
  for (int32_t j = 0; j < ms; j++) {
    int32_t r = ox_rank(n->in[ns + j]);
    if (in_axes[j] < -r || in_axes[j] >= r)
      return ox_invalid("scan_input_axes[%d] = %lld is out of range for rank %d", (int)j, (long long)in_axes[j], (int)r);
    if (in_axes[j] < 0) in_axes[j] += r;
  }
  return scan_core(im, n, ns, ms, ks, n->in, n->in + ns, in_axes, in_dirs, out_axes, out_dirs, out);
}

/* Opset 8: inputs (sequence_lens, states..., scan inputs...), all with a batch axis 0 and the
 * scan axis 1; each batch item is scanned on its own and the results stacked on axis 0.
 * sequence_lens, when given, must be known and equal to the scan extent. */
static int cv_scan8(OxImporter *im, const OxNode *n, GPExpr **out) {
  int32_t ns, ms, ks;
  if (scan_counts(n, 1, &ns, &ms, &ks) != 0) return -1;
  int64_t *dirs, *zeros;
  if (int_list(im, n, "directions", ms, &dirs) || int_list(im, n, "scan_output_axes", ks, &zeros)) return -1;
  memset(zeros, 0, (size_t)(ks ? ks : 1) * sizeof *zeros);
  GPExpr *const *ins = n->in + 1;
  int64_t batch = -1;
  for (int32_t i = 0; i < ns + ms; i++) {
    if (!ox_req(n, 1 + i)) return -1;
    if (ox_rank(ins[i]) < (i < ns ? 1 : 2))
      return ox_invalid("input %d must have a batch axis%s", (int)(1 + i), i < ns ? "" : " and a scan axis");
    int64_t b = ox_shape(ins[i])[0];
    if (b == GP_DIM_ANY) return ox_unsupported("input %d has an unknown batch size", (int)(1 + i));
    if (batch >= 0 && b != batch) return ox_invalid("the inputs have different batch sizes");
    batch = b;
  }
  if (batch <= 0) return ox_unsupported("a Scan over an empty batch");
  if (ox_in(n, 0)) {
    GPTensor *t = ox_try_const(im, n->in[0]);
    if (!t) return gp_error_kind() ? -1 : ox_unsupported("sequence_lens is not known when importing");
    if (t->dl.ndim != 1) return ox_invalid("sequence_lens must be 1-d");
    int64_t want = ms ? ox_shape(ins[ns])[1] : -1;
    for (int64_t b = 0; b < batch && b < t->dl.shape[0]; b++)
      if (gp_tensor_get_i64(t, b) != want) return ox_unsupported("sequence_lens shorter than the scan axis");
  }
  if (check_unroll(n, batch) != 0) return -1;
  int32_t nall = ns + ms, nres = ns + ks;
  GPExpr **item = ox_alloc(im, (size_t)nall * sizeof *item), **res = ox_alloc(im, (size_t)nres * sizeof *res);
  int64_t nper;
  if (OX_PROD(GP_MAX_TENSOR_ELEMS, &nper, "the scan results", nres, batch) != 0) return -1;
  GPExpr **per = ox_alloc_n(im, nper, 0, sizeof *per, "the scan results");
  if (!per) return -1;
  int64_t *axes1 = ox_alloc(im, (size_t)(ms ? ms : 1) * sizeof *axes1);
  for (int32_t j = 0; j < ms; j++) axes1[j] = 0;
  for (int64_t b = 0; b < batch; b++) {
    for (int32_t i = 0; i < nall; i++) {
      GPExpr *args[2] = {ins[i], ox_scalar(im, GP_DT_I64, (double)b)};
      const char *k[] = {"axis"};
      GPAttrValue v[] = {gp_attr_int(0)};
      if (!args[1] || !(item[i] = ox_call(im, "take", 2, args, 1, k, v))) return -1;
    }
    if (scan_core(im, n, ns, ms, ks, item, item + ns, axes1, dirs, zeros, zeros, res) != 0) return -1;
    for (int32_t r = 0; r < nres; r++) per[(int64_t)r * batch + b] = res[r];
  }
  for (int32_t r = 0; r < nres; r++)
    if (!(out[r] = stack_parts(im, per + (int64_t)r * batch, batch, false, 0))) return -1;
  return 0;
}

static int cv_loop(OxImporter *im, const OxNode *n, GPExpr **out) {
  int32_t bin, bout;
  if (ox_subgraph_arity(n, "body", &bin, &bout) != 0) return -1;
  int32_t nc = n->nin - 2, ks = bout - 1 - nc;
  if (nc < 0 || bin != nc + 2 || ks < 0 || n->nout != nc + ks)
    return ox_invalid("the body takes %d and gives %d values; the node has %d inputs and %d outputs", (int)bin,
                      (int)bout, (int)n->nin, (int)n->nout);
  int64_t trips = -1; /* -1: no trip count */
  if (ox_in(n, 0)) {
    GPTensor *t = ox_try_const(im, n->in[0]);
    if (!t) return gp_error_kind() ? -1 : ox_unsupported("the trip count is not known when importing");
    trips = (int64_t)gp_tensor_get_f64(t, 0);
    if (trips < 0) trips = 0;
  }
  int cond = 1;
  if (ox_in(n, 1)) {
    GPTensor *t = ox_try_const(im, n->in[1]);
    if (!t) return gp_error_kind() ? -1 : ox_unsupported("the loop condition is not known when importing");
    if ((cond = tensor_truth(t, "the loop condition")) < 0) return -1;
  }
  int64_t bound = trips >= 0 ? trips : OX_MAX_ITERATIONS + 1;
  if (trips >= 0 && check_unroll(n, trips) != 0) return -1;
  GPExpr **binds = ox_alloc(im, (size_t)bin * sizeof *binds), **res = ox_alloc(im, (size_t)bout * sizeof *res);
  GPVec parts = {0}; /* per scan output k, per iteration: index it * ks + k */
  int rc = -1;
  for (int32_t i = 0; i < nc; i++)
    if (!(binds[2 + i] = ox_req(n, 2 + i))) goto done;
  int64_t it = 0;
  for (; it < bound && cond; it++) {
    if (trips < 0 && check_unroll(n, it + 1) != 0) goto done;
    binds[0] = ox_scalar(im, GP_DT_I64, (double)it);
    binds[1] = ox_scalar(im, GP_DT_BOOL, 1);
    if (!binds[0] || !binds[1] || ox_subgraph(im, n, "body", bin, binds, bout, res) != 0) goto done;
    GPTensor *c = ox_try_const(im, res[0]);
    if (!c) {
      if (!gp_error_kind()) ox_unsupported("the condition of iteration %lld is not known when importing", (long long)it);
      goto done;
    }
    if ((cond = tensor_truth(c, "the body's condition")) < 0) goto done;
    for (int32_t i = 0; i < nc; i++) binds[2 + i] = res[1 + i];
    for (int32_t k = 0; k < ks; k++) gp_vec_push(&parts, res[1 + nc + k]);
  }
  if (ks && it == 0) {
    ox_unsupported("a Loop that runs no iteration has scan outputs of unknown shape");
    goto done;
  }
  for (int32_t i = 0; i < nc; i++) out[i] = binds[2 + i];
  for (int32_t k = 0; k < ks; k++) {
    GPExpr **col = ox_alloc(im, (size_t)it * sizeof *col);
    for (int64_t j = 0; j < it; j++) col[j] = parts.items[j * ks + k];
    if (!(out[nc + k] = stack_parts(im, col, it, false, 0))) goto done;
  }
  rc = 0;
done:
  gp_vec_free(&parts);
  return rc;
}

const OxConverter ox_cv_control[] = {
    {"If", NULL, 1, cv_if},
    {"Scan", NULL, 8, cv_scan8},
    {"Scan", NULL, 9, cv_scan},
    {"Loop", NULL, 1, cv_loop},
    {NULL, NULL, 0, NULL},
};
