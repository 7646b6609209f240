/* cv_tensor.c -- ONNX converters: shape ops (Shape, Size, Squeeze, Unsqueeze, Transpose, Slice,
 * Split, Tile, Expand, Pad, CenterCropPad, DepthToSpace, SpaceToDepth), indexing (Gather,
 * GatherElements, GatherND, Scatter, ScatterElements, ScatterND, OneHot, Trilu, Compress,
 * NonZero, ReverseSequence) and constants computed at import (Range, EyeLike).
 *
 * Mapped to Relay ops as TVM's from_onnx does.  Values the Relay ops need as attributes (Slice's
 * starts, Tile's repeats, Expand's shape, ...) must be known when importing (ox_const); a value
 * that depends on a runtime input is GP_ERR_UNSUPPORTED (reported as a skip). */
#include "frontend/onnx/onnx_impl.h"

#include "eval/kernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */

#define MAXR GP_OPS_MAX_RANK

static int32_t rank_of(const GPExpr *e) { return ox_type(e)->n; }
static DLDataType dtype_of(const GPExpr *e) { return ox_type(e)->tensor.dtype; }
static const int64_t *shape_of(const GPExpr *e) { return ox_type(e)->tensor.shape; }

static bool static_shape(const GPExpr *e) {
  for (int32_t i = 0; i < rank_of(e); i++)
    if (shape_of(e)[i] == GP_DIM_ANY) return false;
  return true;
}

/* Normalize axis a against rank r ([-r, r)); GP_ERR_VALUE naming `what` otherwise. */
static int norm_axis(int64_t a, int32_t r, const char *what, int32_t *out) {
  *out = 0;
  if (a < -(int64_t)r || a >= r) {
    return ox_invalid("%s %lld is out of range for rank %d", what, (long long)a, (int)r);
  }
  *out = (int32_t)(a < 0 ? a + r : a);
  return 0;
}

static GPExpr *call_a(OxImporter *im, const char *op, int32_t nargs, GPExpr *const *args, int32_t na,
                      const char *const *keys, const GPAttrValue *vals) {
  return ox_call(im, op, nargs, args, na, keys, vals);
}

static GPExpr *call1(OxImporter *im, const char *op, GPExpr *a, const char *k, GPAttrValue v) {
  const char *keys[1] = {k};
  GPAttrValue vals[1] = {v};
  return call_a(im, op, 1, &a, 1, keys, vals);
}

/* strided_slice of x on `n` axes. */
static GPExpr *slice(OxImporter *im, GPExpr *x, int32_t n, const int64_t *axes, const int64_t *begin,
                     const int64_t *end, const int64_t *steps) {
  const char *keys[4] = {"begin", "end", "strides", "axes"};
  GPAttrValue vals[4] = {gp_attr_ints(n, begin), gp_attr_ints(n, end), gp_attr_ints(n, steps), gp_attr_ints(n, axes)};
  return call_a(im, "strided_slice", 1, &x, 4, keys, vals);
}

/* reshape to a static shape */
static GPExpr *reshape(OxImporter *im, GPExpr *x, int32_t n, const int64_t *shape) {
  const char *keys[2] = {"newshape", "allowzero"};
  GPAttrValue vals[2] = {gp_attr_ints(n, shape), gp_attr_bool(true)};
  return call_a(im, "reshape", 1, &x, 2, keys, vals);
}

/* e as a scalar: e itself when rank 0, reshape to () when it has one element. */
static GPExpr *as_scalar(OxImporter *im, GPExpr *e, const char *what) {
  if (rank_of(e) == 0) return e;
  int64_t n = 1;
  for (int32_t i = 0; i < rank_of(e); i++) n = gp_ops_dim_mul(n, shape_of(e)[i]);
  if (n != 1) {
    ox_invalid("%s must have one element, has shape %s", what, gp_ops_shape(ox_type(e)).s);
    return NULL;
  }
  return reshape(im, e, 0, NULL);
}

/* Integer list from the attribute `attr` (opset < since_input) or input `in` (else). *n = -1
 * when absent. */
static int ints_attr_or_input(OxImporter *im, const OxNode *n, const char *attr, int32_t in, int64_t since_input,
                              const int64_t **vals, int32_t *count) {
  if (n->opset < since_input) {
    *vals = ox_attr_ints(n, attr, count);
    return 0;
  }
  GPExpr *e = ox_in(n, in);
  if (!e) {
    *count = -1;
    *vals = NULL;
    return 0;
  }
  return ox_const_ints(im, e, attr, vals, count);
}

/* A new tensor constant of dtype dt and shape, zero-filled. */
static GPTensor *new_tensor(DLDataType dt, int32_t nd, const int64_t *shape) {
  return gp_tensor_alloc(dt, nd, shape, true);
}

/* ------------------------------------------------------------------------------------------ */
/* Shape, Size                                                                                 */

static int cv_shape(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  int32_t r = rank_of(x);
  int64_t s = ox_attr_int(n, "start", 0), e = ox_attr_int(n, "end", r);
  if (s < 0) s += r;
  if (e < 0) e += r;
  s = s < 0 ? 0 : s > r ? r : s;
  e = e < 0 ? 0 : e > r ? r : e;
  if (e < s) e = s;
  if (static_shape(x)) {
    out[0] = ox_ints_const(im, (int32_t)(e - s), shape_of(x) + s);
    return out[0] ? 0 : -1;
  }
  GPExpr *sh = call1(im, "shape_of", x, "dtype", gp_attr_dtype(GP_DT_I64));
  if (!sh) return -1;
  if (s == 0 && e == r) {
    out[0] = sh;
    return 0;
  }
  int64_t ax = 0, one = 1;
  out[0] = slice(im, sh, 1, &ax, &s, &e, &one);
  return out[0] ? 0 : -1;
}

static int cv_size(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x || ox_static(x, "input") != 0) return -1;
  int64_t c = 1;
  for (int32_t i = 0; i < rank_of(x); i++) c *= shape_of(x)[i];
  GPTensor *t = gp_tensor_scalar_i64(GP_DT_I64, c);
  out[0] = t ? ox_constant(im, t) : NULL;
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Squeeze, Unsqueeze, Transpose                                                               */

static int cv_squeeze(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  const int64_t *axes;
  int32_t na;
  if (ints_attr_or_input(im, n, "axes", 1, 13, &axes, &na) != 0) return -1;
  if (na < 0) {
    out[0] = ox_op1(im, "squeeze", x);
  } else {
    int64_t norm[MAXR];
    if (na > rank_of(x)) return ox_invalid("axes has %d entries for rank %d", (int)na, (int)rank_of(x));
    for (int32_t i = 0; i < na; i++) {
      int32_t a;
      if (norm_axis(axes[i], rank_of(x), "axes entry", &a) != 0) return -1;
      norm[i] = a;
    }
    out[0] = call1(im, "squeeze", x, "axis", gp_attr_ints(na, norm));
  }
  return out[0] ? 0 : -1;
}

static int cv_unsqueeze(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  const int64_t *axes;
  int32_t na;
  if (ints_attr_or_input(im, n, "axes", 1, 13, &axes, &na) != 0) return -1;
  if (na < 0) return ox_invalid("axes is required");
  int32_t ro = rank_of(x) + na;
  if (ro > MAXR) return ox_unsupported("rank %d", (int)ro);
  bool at[MAXR] = {false};
  for (int32_t i = 0; i < na; i++) {
    int32_t a;
    if (norm_axis(axes[i], ro, "axes entry", &a) != 0) return -1;
    if (at[a]) return ox_invalid("axes repeats axis %d", (int)a);
    at[a] = true;
  }
  GPExpr *y = x;
  for (int32_t a = 0; a < ro && y; a++) {
    if (!at[a]) continue;
    const char *keys[2] = {"axis", "num_newaxis"};
    GPAttrValue vals[2] = {gp_attr_int(a), gp_attr_int(1)};
    y = call_a(im, "expand_dims", 1, &y, 2, keys, vals);
  }
  out[0] = y;
  return y ? 0 : -1;
}

static int cv_transpose(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  int32_t np;
  const int64_t *perm = ox_attr_ints(n, "perm", &np);
  if (np < 0) {
    out[0] = ox_op1(im, "transpose", x);
  } else {
    out[0] = call1(im, "transpose", x, "axes", gp_attr_ints(np, perm));
  }
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Slice                                                                                       */

static int cv_slice(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  const int64_t *starts, *ends, *axes = NULL, *steps = NULL;
  int32_t ns, ne, na = -1, nst = -1;
  if (n->opset < 10) {
    starts = ox_attr_ints(n, "starts", &ns);
    ends = ox_attr_ints(n, "ends", &ne);
    axes = ox_attr_ints(n, "axes", &na);
  } else {
    if (!ox_req(n, 1) || !ox_req(n, 2)) return -1;
    if (ox_const_ints(im, ox_in(n, 1), "starts", &starts, &ns) != 0 ||
        ox_const_ints(im, ox_in(n, 2), "ends", &ends, &ne) != 0)
      return -1;
    if (ox_in(n, 3) && ox_const_ints(im, ox_in(n, 3), "axes", &axes, &na) != 0) return -1;
    if (ox_in(n, 4) && ox_const_ints(im, ox_in(n, 4), "steps", &steps, &nst) != 0) return -1;
  }
  if (ns < 0 || ne < 0 || ns != ne) return ox_invalid("starts and ends must have the same length");
  if ((na >= 0 && na != ns) || (nst >= 0 && nst != ns))
    return ox_invalid("axes and steps must have one entry per entry of starts");
  int32_t r = rank_of(x);
  if (ns > r) return ox_invalid("starts has %d entries for rank %d", (int)ns, (int)r);
  int64_t ax[MAXR], b[MAXR], e[MAXR], st[MAXR];
  for (int32_t i = 0; i < ns; i++) {
    int32_t a = i;
    if (na >= 0 && norm_axis(axes[i], r, "axes entry", &a) != 0) return -1;
    int64_t s = steps ? steps[i] : 1;
    if (s == 0) return ox_invalid("steps has a zero entry");
    ax[i] = a;
    st[i] = s;
    int64_t d = shape_of(x)[a], bi = starts[i], ei = ends[i];
    if (d == GP_DIM_ANY) {
      b[i] = bi, e[i] = ei;
      continue;
    }
    if (bi < 0) bi += d;
    if (ei < 0) ei += d;
    if (s > 0) {
      bi = bi < 0 ? 0 : bi > d ? d : bi;
      ei = ei < 0 ? 0 : ei > d ? d : ei;
      if (ei < bi) ei = bi;
    } else {
      bi = bi < 0 ? 0 : bi > d - 1 ? d - 1 : bi;
      ei = ei < -1 ? -1 : ei > d - 1 ? d - 1 : ei;
      if (ei > bi) ei = bi;
      if (ei == -1) ei = -d - 1; /* "before index 0" in strided_slice's terms */
      if (d == 0) bi = 0, ei = 0, st[i] = 1;
    }
    b[i] = bi, e[i] = ei;
  }
  out[0] = slice(im, x, ns, ax, b, e, st);
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Split                                                                                       */

static int cv_split(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  int32_t r = rank_of(x), axis;
  if (norm_axis(ox_attr_int(n, "axis", 0), r, "axis", &axis) != 0) return -1;
  int64_t d = shape_of(x)[axis];
  if (d == GP_DIM_ANY) return ox_unsupported("Split of an axis of unknown extent");
  const int64_t *split;
  int32_t nsplit;
  if (n->opset < 13) {
    split = ox_attr_ints(n, "split", &nsplit);
  } else {
    split = NULL, nsplit = -1;
    if (ox_in(n, 1) && ox_const_ints(im, ox_in(n, 1), "split", &split, &nsplit) != 0) return -1;
  }
  int32_t nout = n->nout;
  int64_t *sizes = ox_alloc(im, (size_t)(nout > 0 ? nout : 1) * sizeof(int64_t));
  if (nsplit >= 0) {
    if (nsplit != nout) return ox_invalid("split has %d entries for %d outputs", (int)nsplit, (int)nout);
    int64_t total = 0;
    for (int32_t i = 0; i < nout; i++) {
      if (split[i] < 0) return ox_invalid("split has a negative entry");
      sizes[i] = split[i];
      total += split[i];
    }
    if (total != d) return ox_invalid("split sums to %lld, the axis has extent %lld", (long long)total, (long long)d);
  } else {
    int64_t parts = n->opset >= 18 && ox_has_attr(n, "num_outputs") ? ox_attr_int(n, "num_outputs", nout) : nout;
    if (parts != nout || parts < 1) return ox_invalid("num_outputs %lld for %d outputs", (long long)parts, (int)nout);
    int64_t chunk = n->opset >= 18 ? (d + parts - 1) / parts : d / parts;
    if (n->opset < 18 && d % parts != 0)
      return ox_invalid("axis extent %lld is not divisible into %lld outputs", (long long)d, (long long)parts);
    for (int32_t i = 0; i < nout; i++) {
      int64_t left = d - chunk * i;
      sizes[i] = left < 0 ? 0 : left < chunk ? left : chunk;
    }
  }
  int64_t at = 0, a64 = axis, one = 1;
  for (int32_t i = 0; i < nout; i++) {
    int64_t end = at + sizes[i];
    out[i] = slice(im, x, 1, &a64, &at, &end, &one);
    if (!out[i]) return -1;
    at = end;
  }
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Gather family                                                                               */

static int cv_gather(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *i = ox_req(n, 1);
  if (!x || !i) return -1;
  int32_t axis;
  if (norm_axis(ox_attr_int(n, "axis", 0), rank_of(x), "axis", &axis) != 0) return -1;
  GPExpr *args[2] = {x, i};
  const char *keys[2] = {"axis", "mode"};
  GPAttrValue vals[2] = {gp_attr_int(axis), gp_attr_str("fast")};
  out[0] = call_a(im, "take", 2, args, 2, keys, vals);
  return out[0] ? 0 : -1;
}

static int cv_gather_elements(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *i = ox_req(n, 1);
  if (!x || !i) return -1;
  int32_t axis;
  if (norm_axis(ox_attr_int(n, "axis", 0), rank_of(x), "axis", &axis) != 0) return -1;
  GPExpr *args[2] = {x, i};
  const char *keys[1] = {"axis"};
  GPAttrValue vals[1] = {gp_attr_int(axis)};
  out[0] = call_a(im, "gather", 2, args, 1, keys, vals);
  return out[0] ? 0 : -1;
}

/* indices (..., M) -> (M, ...) */
static GPExpr *last_axis_first(OxImporter *im, GPExpr *i) {
  int32_t r = rank_of(i);
  if (r < 1) {
    ox_invalid("indices must have rank >= 1");
    return NULL;
  }
  int64_t perm[MAXR];
  perm[0] = r - 1;
  for (int32_t k = 1; k < r; k++) perm[k] = k - 1;
  return call1(im, "transpose", i, "axes", gp_attr_ints(r, perm));
}

static int cv_gather_nd(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *i = ox_req(n, 1);
  if (!x || !i) return -1;
  GPExpr *it = last_axis_first(im, i);
  if (!it) return -1;
  GPExpr *args[2] = {x, it};
  const char *keys[1] = {"batch_dims"};
  GPAttrValue vals[1] = {gp_attr_int(ox_attr_int(n, "batch_dims", 0))};
  out[0] = call_a(im, "gather_nd", 2, args, 1, keys, vals);
  return out[0] ? 0 : -1;
}

static const char *reduction(OxImporter *im, const OxNode *n) {
  const char *r = ox_attr_str(im, n, "reduction", "none");
  if (strcmp(r, "none") == 0) return "update";
  if (strcmp(r, "add") == 0 || strcmp(r, "mul") == 0 || strcmp(r, "min") == 0 || strcmp(r, "max") == 0) return r;
  ox_unsupported("reduction \"%s\"", r);
  return NULL;
}

static int cv_scatter_elements(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *i = ox_req(n, 1), *u = ox_req(n, 2);
  if (!x || !i || !u) return -1;
  int32_t axis;
  if (norm_axis(ox_attr_int(n, "axis", 0), rank_of(x), "axis", &axis) != 0) return -1;
  const char *red = reduction(im, n);
  if (!red) return -1;
  GPExpr *args[3] = {x, i, u};
  const char *keys[2] = {"axis", "reduction"};
  GPAttrValue vals[2] = {gp_attr_int(axis), gp_attr_str(red)};
  out[0] = call_a(im, "scatter_elements", 3, args, 2, keys, vals);
  return out[0] ? 0 : -1;
}

static int cv_scatter_nd(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *i = ox_req(n, 1), *u = ox_req(n, 2);
  if (!x || !i || !u) return -1;
  const char *red = reduction(im, n);
  if (!red) return -1;
  GPExpr *it = last_axis_first(im, i);
  if (!it) return -1;
  GPExpr *args[3] = {x, it, u};
  const char *keys[1] = {"mode"};
  GPAttrValue vals[1] = {gp_attr_str(red)};
  out[0] = call_a(im, "scatter_nd", 3, args, 1, keys, vals);
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Tile, Expand                                                                                */

static int cv_tile(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *r = ox_req(n, 1);
  if (!x || !r) return -1;
  const int64_t *reps;
  int32_t nr;
  if (ox_const_ints(im, r, "repeats", &reps, &nr) != 0) return -1;
  if (nr != rank_of(x)) return ox_invalid("repeats has %d entries for rank %d", (int)nr, (int)rank_of(x));
  out[0] = call1(im, "tile", x, "reps", gp_attr_ints(nr, reps));
  return out[0] ? 0 : -1;
}

static int cv_expand(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *s = ox_req(n, 1);
  if (!x || !s) return -1;
  const int64_t *shape;
  int32_t ns;
  if (ox_const_ints(im, s, "shape", &shape, &ns) != 0) return -1;
  if (ox_static(x, "input") != 0) return -1;
  int32_t r = rank_of(x), no = r > ns ? r : ns;
  if (no > MAXR) return ox_unsupported("rank %d", (int)no);
  int64_t o[MAXR];
  for (int32_t i = 0; i < no; i++) {
    int32_t xi = i - (no - r), si = i - (no - ns);
    int64_t a = xi >= 0 ? shape_of(x)[xi] : 1, b = si >= 0 ? shape[si] : 1;
    if (a != b && a != 1 && b != 1)
      return ox_invalid("input %s cannot broadcast with shape %s", gp_ops_shape(ox_type(x)).s,
                        gp_ops_ints(ns, shape).s);
    o[i] = a == 1 ? b : a;
  }
  out[0] = call1(im, "broadcast_to", x, "shape", gp_attr_ints(no, o));
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Pad, CenterCropPad                                                                          */

static GPExpr *pad_call(OxImporter *im, GPExpr *x, GPExpr *value, const int64_t *pw, const char *mode) {
  GPExpr *args[2] = {x, value};
  const char *keys[2] = {"pad_width", "pad_mode"};
  GPAttrValue vals[2] = {gp_attr_ints(2 * rank_of(x), pw), gp_attr_str(mode)};
  return call_a(im, "nn.pad", 2, args, 2, keys, vals);
}

static int cv_pad(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  int32_t r = rank_of(x);
  const char *mode = ox_attr_str(im, n, "mode", "constant");
  if (strcmp(mode, "constant") != 0 && strcmp(mode, "reflect") != 0 && strcmp(mode, "edge") != 0 &&
      strcmp(mode, "wrap") != 0)
    return ox_unsupported("mode \"%s\"", mode);
  const int64_t *pads, *axes = NULL;
  int32_t np, na = -1;
  GPExpr *value;
  if (n->opset < 11) {
    pads = ox_attr_ints(n, n->opset < 2 ? "paddings" : "pads", &np);
    value = ox_scalar(im, dtype_of(x), ox_attr_float(n, "value", 0.0));
  } else {
    if (!ox_req(n, 1) || ox_const_ints(im, ox_in(n, 1), "pads", &pads, &np) != 0) return -1;
    GPExpr *v = ox_in(n, 2);
    value = v ? as_scalar(im, v, "constant_value") : ox_scalar(im, dtype_of(x), 0.0);
    if (ox_in(n, 3) && ox_const_ints(im, ox_in(n, 3), "axes", &axes, &na) != 0) return -1;
  }
  if (!value) return -1;
  int32_t nax = na >= 0 ? na : r;
  if (np != 2 * nax) return ox_invalid("pads has %d entries, expected %d", (int)np, (int)(2 * nax));
  int64_t pw[2 * MAXR] = {0};
  for (int32_t i = 0; i < nax; i++) {
    int32_t a = i;
    if (na >= 0 && norm_axis(axes[i], r, "axes entry", &a) != 0) return -1;
    pw[2 * a] = pads[i];
    pw[2 * a + 1] = pads[i + nax];
  }
  out[0] = pad_call(im, x, value, pw, mode);
  return out[0] ? 0 : -1;
}

static int cv_center_crop_pad(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *s = ox_req(n, 1);
  if (!x || !s) return -1;
  if (ox_static(x, "input_data") != 0) return -1;
  const int64_t *shape, *axes;
  int32_t ns, na, r = rank_of(x);
  if (ox_const_ints(im, s, "shape", &shape, &ns) != 0) return -1;
  axes = ox_attr_ints(n, "axes", &na);
  int32_t nax = na >= 0 ? na : r;
  if (ns != nax) return ox_invalid("shape has %d entries for %d axes", (int)ns, (int)nax);
  if (nax > r) return ox_invalid("axes has %d entries for rank %d", (int)nax, (int)r);
  int64_t sa[MAXR], sb[MAXR], se[MAXR], ss[MAXR], pw[2 * MAXR] = {0};
  int32_t nsl = 0;
  bool pad = false;
  for (int32_t i = 0; i < nax; i++) {
    int32_t a = i;
    if (na >= 0 && norm_axis(axes[i], r, "axes entry", &a) != 0) return -1;
    int64_t d = shape_of(x)[a], t = shape[i];
    if (t < 0) return ox_invalid("shape has a negative entry");
    if (t < d) {
      int64_t b = (d - t) / 2;
      sa[nsl] = a, sb[nsl] = b, se[nsl] = b + t, ss[nsl] = 1;
      nsl++;
    } else if (t > d) {
      pw[2 * a] = (t - d) / 2;
      pw[2 * a + 1] = t - d - (t - d) / 2;
      pad = true;
    }
  }
  GPExpr *y = x;
  if (nsl) y = slice(im, y, nsl, sa, sb, se, ss);
  if (y && pad) {
    GPExpr *zero = ox_scalar(im, dtype_of(x), 0.0);
    y = zero ? pad_call(im, y, zero, pw, "constant") : NULL;
  }
  out[0] = y;
  return y ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* DepthToSpace, SpaceToDepth, ReverseSequence                                                 */

static int subpixel(OxImporter *im, const OxNode *n, GPExpr **out, const char *op, const char *mode) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  if (!ox_has_attr(n, "blocksize")) return ox_invalid("blocksize is required");
  const char *keys[3] = {"block_size", "layout", "mode"};
  GPAttrValue vals[3] = {gp_attr_int(ox_attr_int(n, "blocksize", 1)), gp_attr_str("NCHW"), gp_attr_str(mode)};
  out[0] = call_a(im, op, 1, &x, 3, keys, vals);
  return out[0] ? 0 : -1;
}

static int cv_depth_to_space(OxImporter *im, const OxNode *n, GPExpr **out) {
  const char *mode = ox_attr_str(im, n, "mode", "DCR");
  if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0) return ox_unsupported("mode \"%s\"", mode);
  return subpixel(im, n, out, "nn.depth_to_space", mode);
}

static int cv_space_to_depth(OxImporter *im, const OxNode *n, GPExpr **out) {
  return subpixel(im, n, out, "nn.space_to_depth", "DCR");
}

static int cv_reverse_sequence(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *l = ox_req(n, 1);
  if (!x || !l) return -1;
  GPExpr *args[2] = {x, l};
  const char *keys[2] = {"seq_axis", "batch_axis"};
  GPAttrValue vals[2] = {gp_attr_int(ox_attr_int(n, "time_axis", 0)), gp_attr_int(ox_attr_int(n, "batch_axis", 1))};
  out[0] = call_a(im, "reverse_sequence", 2, args, 2, keys, vals);
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* OneHot, Trilu                                                                               */

static int cv_one_hot(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *i = ox_req(n, 0), *dp = ox_req(n, 1), *v = ox_req(n, 2);
  if (!i || !dp || !v) return -1;
  double depth;
  if (ox_const_scalar(im, dp, "depth", &depth) != 0) return -1;
  if (!(depth >= 0 && depth < 1e9)) return ox_invalid("depth %g is out of range", depth);
  if (rank_of(v) != 1 || shape_of(v)[0] != 2) return ox_invalid("values must have shape (2)");
  GPExpr *idx = ox_cast(im, i, GP_DT_I64);
  GPExpr *k0 = ox_scalar(im, GP_DT_I64, 0), *k1 = ox_scalar(im, GP_DT_I64, 1);
  if (!idx || !k0 || !k1) return -1;
  const char *tk[2] = {"axis", "mode"};
  GPAttrValue tv[2] = {gp_attr_int(0), gp_attr_str("fast")};
  GPExpr *a0[2] = {v, k0}, *a1[2] = {v, k1};
  GPExpr *off = call_a(im, "take", 2, a0, 2, tk, tv), *on = call_a(im, "take", 2, a1, 2, tk, tv);
  if (!off || !on) return -1;
  GPExpr *args[3] = {idx, on, off};
  const char *keys[3] = {"depth", "axis", "dtype"};
  GPAttrValue vals[3] = {gp_attr_int((int64_t)depth), gp_attr_int(ox_attr_int(n, "axis", -1)),
                         gp_attr_dtype(dtype_of(v))};
  out[0] = call_a(im, "one_hot", 3, args, 3, keys, vals);
  return out[0] ? 0 : -1;
}

static int cv_trilu(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *k = ox_in(n, 1);
  if (!x) return -1;
  k = k ? as_scalar(im, k, "k") : ox_scalar(im, GP_DT_I64, 0);
  if (!k) return -1;
  GPExpr *args[2] = {x, k};
  const char *keys[1] = {"upper"};
  GPAttrValue vals[1] = {gp_attr_bool(ox_attr_int(n, "upper", 1) != 0)};
  out[0] = call_a(im, "trilu", 2, args, 1, keys, vals);
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Constants at import: Range, EyeLike, NonZero; Compress with a constant condition            */

static int cv_range(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *s = ox_req(n, 0), *l = ox_req(n, 1), *d = ox_req(n, 2);
  if (!s || !l || !d) return -1;
  DLDataType dt = dtype_of(s);
  int k;
  if (gp_k_dtype_check(dt, "start", &k) != 0) return -1;
  double start, limit, delta;
  if (ox_const_scalar(im, s, "start", &start) != 0 || ox_const_scalar(im, l, "limit", &limit) != 0 ||
      ox_const_scalar(im, d, "delta", &delta) != 0)
    return -1;
  if (delta == 0 || isnan(delta) || isnan(start) || isnan(limit)) return ox_invalid("delta must be nonzero");
  const double big = 9007199254740992.0; /* 2^53: integers exact in double */
  if (!gp_k_is_float(k) && (fabs(start) > big || fabs(limit) > big || fabs(delta) > big))
    return ox_unsupported("Range with integer values beyond 2^53");
  double cnt = ceil((limit - start) / delta);
  if (cnt < 0) cnt = 0;
  if (cnt > (double)(1 << 26)) return ox_unsupported("Range of %g elements", cnt);
  int64_t num = (int64_t)cnt;
  GPTensor *t = new_tensor(dt, 1, &num);
  if (!t) return -1;
  size_t e = gp_k_elem_size(k);
  for (int64_t i = 0; i < num; i++) {
    char *p = (char *)t->dl.data + (size_t)i * e;
    if (gp_k_is_float(k))
      gp_k_store_f64(p, k, start + (double)i * delta);
    else
      gp_k_store_i64(p, k, (int64_t)start + i * (int64_t)delta);
  }
  out[0] = ox_constant(im, t);
  return out[0] ? 0 : -1;
}

static int cv_eye_like(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  if (ox_static(x, "input") != 0) return -1;
  if (rank_of(x) != 2) return ox_invalid("input must have rank 2");
  DLDataType dt = dtype_of(x);
  if (ox_has_attr(n, "dtype") && ox_dtype_from_onnx((int32_t)ox_attr_int(n, "dtype", 1), &dt) != 0) return -1;
  int kd;
  if (gp_k_dtype_check(dt, "dtype", &kd) != 0) return -1;
  int64_t k = ox_attr_int(n, "k", 0), R = shape_of(x)[0], C = shape_of(x)[1];
  GPTensor *t = new_tensor(dt, 2, shape_of(x));
  if (!t) return -1;
  size_t e = gp_k_elem_size(kd);
  for (int64_t r = 0; r < R; r++) {
    if (k > C || k < -R) break;
    int64_t c = r + k;
    if (c >= 0 && c < C) gp_k_store_i64((char *)t->dl.data + (size_t)(r * C + c) * e, kd, 1);
  }
  out[0] = ox_constant(im, t);
  return out[0] ? 0 : -1;
}

static int cv_non_zero(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  GPTensor *v = ox_const(im, x, "input (NonZero has a data-dependent shape)");
  if (!v) return -1;
  int32_t r = v->dl.ndim;
  int64_t total = 1, nz = 0;
  for (int32_t i = 0; i < r; i++) total *= v->dl.shape[i];
  for (int64_t i = 0; i < total; i++) nz += gp_tensor_get_f64(v, i) != 0;
  int64_t shape[2] = {r, nz};
  GPTensor *t = new_tensor(GP_DT_I64, 2, shape);
  if (!t) return -1;
  int64_t *o = t->dl.data, j = 0;
  for (int64_t i = 0; i < total; i++) {
    if (gp_tensor_get_f64(v, i) == 0) continue;
    int64_t rest = i;
    for (int32_t d = r - 1; d >= 0; d--) {
      o[d * nz + j] = rest % v->dl.shape[d];
      rest /= v->dl.shape[d];
    }
    j++;
  }
  out[0] = ox_constant(im, t);
  return out[0] ? 0 : -1;
}

static int cv_compress(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *c = ox_req(n, 1);
  if (!x || !c) return -1;
  GPTensor *cv = ox_const(im, c, "condition (Compress has a data-dependent shape)");
  if (!cv) return -1;
  if (ox_static(x, "input") != 0) return -1;
  bool has_axis = ox_has_attr(n, "axis");
  int32_t axis = 0;
  GPExpr *data = x;
  int64_t extent;
  if (has_axis) {
    if (norm_axis(ox_attr_int(n, "axis", 0), rank_of(x), "axis", &axis) != 0) return -1;
    extent = shape_of(x)[axis];
  } else {
    extent = 1;
    for (int32_t i = 0; i < rank_of(x); i++) extent *= shape_of(x)[i];
    int64_t m1 = extent;
    data = reshape(im, x, 1, &m1);
    if (!data) return -1;
  }
  int64_t nc = gp_k_numel(&cv->dl), cnt = 0;
  if (nc > extent) return ox_invalid("condition has %lld entries, the axis %lld", (long long)nc, (long long)extent);
  int64_t *idx = ox_alloc(im, (size_t)(nc > 0 ? nc : 1) * sizeof(int64_t));
  for (int64_t i = 0; i < nc; i++)
    if (gp_tensor_get_f64(cv, i) != 0) idx[cnt++] = i;
  GPExpr *ie = ox_ints_const(im, (int32_t)cnt, idx);
  if (!ie) return -1;
  GPExpr *args[2] = {data, ie};
  const char *keys[2] = {"axis", "mode"};
  GPAttrValue vals[2] = {gp_attr_int(axis), gp_attr_str("fast")};
  out[0] = call_a(im, "take", 2, args, 2, keys, vals);
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Unique (input known at import), TensorScatter (write_indices known), ArrayFeatureExtractor  */

typedef struct {
  const GPTensor *t;
  int64_t outer, len, inner; /* slices along the axis: outer x [len] x inner */
} UqCtx;

/* Compare slice a and slice b (indices along the axis) lexicographically. */
static int uq_cmp(const UqCtx *c, int64_t a, int64_t b) {
  for (int64_t o = 0; o < c->outer; o++)
    for (int64_t i = 0; i < c->inner; i++) {
      double x = gp_tensor_get_f64(c->t, (o * c->len + a) * c->inner + i);
      double y = gp_tensor_get_f64(c->t, (o * c->len + b) * c->inner + i);
      if (x < y) return -1;
      if (x > y) return 1;
    }
  return 0;
}

static int cv_unique(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  GPTensor *v = ox_const(im, x, "X (Unique has a data-dependent shape)");
  if (!v) return -1;
  bool has_axis = ox_has_attr(n, "axis"), sorted = ox_attr_int(n, "sorted", 1) != 0;
  int32_t r = v->dl.ndim, axis = 0;
  UqCtx c = {v, 1, 1, 1};
  GPExpr *data = x;
  if (has_axis) {
    if (norm_axis(ox_attr_int(n, "axis", 0), r, "axis", &axis) != 0) return -1;
    for (int32_t i = 0; i < r; i++) {
      if (i < axis) c.outer *= v->dl.shape[i];
      else if (i == axis) c.len = v->dl.shape[i];
      else c.inner *= v->dl.shape[i];
    }
  } else {
    c.len = gp_k_numel(&v->dl);
    int64_t m1 = c.len;
    data = reshape(im, x, 1, &m1);
    if (!data) return -1;
  }
  int64_t L = c.len;
  if (L > (1 << 20)) return ox_unsupported("Unique of %lld slices", (long long)L);
  size_t sz = (size_t)(L > 0 ? L : 1) * sizeof(int64_t);
  int64_t *first = ox_alloc(im, sz), *inv = ox_alloc(im, sz), *cnt = ox_alloc(im, sz), *order = ox_alloc(im, sz);
  int64_t nu = 0;
  /* unique slices in order of first occurrence */
  for (int64_t i = 0; i < L; i++) {
    int64_t k = 0;
    while (k < nu && uq_cmp(&c, first[k], i) != 0) k++;
    if (k == nu) first[nu] = i, cnt[nu] = 0, nu++;
    cnt[k]++;
    inv[i] = k;
  }
  for (int64_t k = 0; k < nu; k++) order[k] = k;
  if (sorted) /* insertion sort of the unique slices (stable) */
    for (int64_t i = 1; i < nu; i++) {
      int64_t o = order[i], j = i;
      while (j > 0 && uq_cmp(&c, first[order[j - 1]], first[o]) > 0) order[j] = order[j - 1], j--;
      order[j] = o;
    }
  int64_t *rank = ox_alloc(im, sz), *fi = ox_alloc(im, sz), *ci = ox_alloc(im, sz), *ii = ox_alloc(im, sz);
  for (int64_t k = 0; k < nu; k++) rank[order[k]] = k, fi[k] = first[order[k]], ci[k] = cnt[order[k]];
  for (int64_t i = 0; i < L; i++) ii[i] = rank[inv[i]];
  GPExpr *ie = ox_ints_const(im, (int32_t)nu, fi);
  if (!ie) return -1;
  GPExpr *args[2] = {data, ie};
  const char *keys[2] = {"axis", "mode"};
  GPAttrValue vals[2] = {gp_attr_int(axis), gp_attr_str("fast")};
  out[0] = call_a(im, "take", 2, args, 2, keys, vals);
  if (!out[0]) return -1;
  if (n->nout > 1 && !(out[1] = ox_ints_const(im, (int32_t)nu, fi))) return -1;
  if (n->nout > 2 && !(out[2] = ox_ints_const(im, (int32_t)L, ii))) return -1;
  if (n->nout > 3 && !(out[3] = ox_ints_const(im, (int32_t)nu, ci))) return -1;
  return 0;
}

static int cv_tensor_scatter(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *past = ox_req(n, 0), *upd = ox_req(n, 1), *wi = ox_in(n, 2);
  if (!past || !upd) return -1;
  if (ox_static(past, "past_cache") != 0 || ox_static(upd, "update") != 0) return -1;
  int32_t r = rank_of(past), axis;
  if (r < 2 || rank_of(upd) != r) return ox_invalid("past_cache and update must have the same rank >= 2");
  if (norm_axis(ox_attr_int(n, "axis", -2), r, "axis", &axis) != 0) return -1;
  if (axis == 0) return ox_invalid("axis must not be the batch axis 0");
  const char *mode = ox_attr_str(im, n, "mode", "linear");
  bool circular = strcmp(mode, "circular") == 0;
  if (!circular && strcmp(mode, "linear") != 0) return ox_unsupported("mode \"%s\"", mode);
  int64_t B = shape_of(upd)[0], L = shape_of(past)[axis];
  const int64_t *w = NULL;
  int32_t nw = 0;
  if (wi && ox_const_ints(im, wi, "write_indices", &w, &nw) != 0) return -1;
  if (w && nw != B) return ox_invalid("write_indices has %d entries for batch %lld", (int)nw, (long long)B);
  GPTensor *t = new_tensor(GP_DT_I64, r, shape_of(upd));
  if (!t) return -1;
  int64_t total = gp_k_numel(&t->dl), *o = t->dl.data, idx[MAXR] = {0};
  for (int64_t f = 0; f < total; f++) {
    int64_t p = (w ? w[idx[0]] : 0) + idx[axis];
    if (circular && L > 0) p = ((p % L) + L) % L;
    o[f] = p;
    for (int32_t d = r - 1; d >= 0; d--) {
      if (++idx[d] < shape_of(upd)[d]) break;
      idx[d] = 0;
    }
  }
  GPExpr *ie = ox_constant(im, t);
  if (!ie) return -1;
  GPExpr *args[3] = {past, ie, upd};
  const char *keys[2] = {"axis", "reduction"};
  GPAttrValue vals[2] = {gp_attr_int(axis), gp_attr_str("update")};
  out[0] = call_a(im, "scatter_elements", 3, args, 2, keys, vals);
  return out[0] ? 0 : -1;
}

static int cv_array_feature_extractor(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0), *i = ox_req(n, 1);
  if (!x || !i) return -1;
  if (rank_of(x) < 1) return ox_invalid("X must have rank >= 1");
  if (rank_of(i) != 1) {
    int64_t m1 = -1;
    const char *k[1] = {"newshape"};
    GPAttrValue vv[1] = {gp_attr_ints(1, &m1)};
    i = call_a(im, "reshape", 1, &i, 1, k, vv);
    if (!i) return -1;
  }
  GPExpr *args[2] = {x, i};
  const char *keys[2] = {"axis", "mode"};
  GPAttrValue vals[2] = {gp_attr_int(rank_of(x) - 1), gp_attr_str("fast")};
  out[0] = call_a(im, "take", 2, args, 2, keys, vals);
  return out[0] ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */

const OxConverter ox_cv_tensor[] = {
    {"Shape", NULL, 1, cv_shape},
    {"Size", NULL, 1, cv_size},
    {"Squeeze", NULL, 1, cv_squeeze},
    {"Unsqueeze", NULL, 1, cv_unsqueeze},
    {"Transpose", NULL, 1, cv_transpose},
    {"Slice", NULL, 1, cv_slice},
    {"Split", NULL, 1, cv_split},
    {"Gather", NULL, 1, cv_gather},
    {"GatherElements", NULL, 11, cv_gather_elements},
    {"GatherND", NULL, 11, cv_gather_nd},
    {"Scatter", NULL, 9, cv_scatter_elements},
    {"ScatterElements", NULL, 11, cv_scatter_elements},
    {"ScatterND", NULL, 11, cv_scatter_nd},
    {"Tile", NULL, 6, cv_tile},
    {"Expand", NULL, 8, cv_expand},
    {"Pad", NULL, 1, cv_pad},
    {"CenterCropPad", NULL, 18, cv_center_crop_pad},
    {"DepthToSpace", NULL, 1, cv_depth_to_space},
    {"SpaceToDepth", NULL, 1, cv_space_to_depth},
    {"ReverseSequence", NULL, 10, cv_reverse_sequence},
    {"OneHot", NULL, 9, cv_one_hot},
    {"Trilu", NULL, 14, cv_trilu},
    {"Range", NULL, 11, cv_range},
    {"EyeLike", NULL, 9, cv_eye_like},
    {"NonZero", NULL, 9, cv_non_zero},
    {"Compress", NULL, 9, cv_compress},
    {"Unique", NULL, 11, cv_unique},
    {"TensorScatter", NULL, 24, cv_tensor_scatter},
    {"ArrayFeatureExtractor", "ai.onnx.ml", 1, cv_array_feature_extractor},
    {NULL, NULL, 0, NULL},
};
