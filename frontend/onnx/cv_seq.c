/* cv_seq.c -- ONNX sequences and optionals: SequenceConstruct, SequenceEmpty, SequenceAt,
 * SequenceInsert, SequenceErase, SequenceLength, ConcatFromSequence, SplitToSequence,
 * SequenceMap, Optional, OptionalHasElement, OptionalGetElement.
 *
 * A sequence is a Relay tuple of its tensors and an optional that holds a value is that value;
 * an empty optional is the empty tuple the importer remembers as none (import.c's header says
 * why).  So every structure is known when importing: a position (SequenceAt's, SequenceInsert's,
 * ...) must be a compile-time value (a constant, the caller's input values, shapes), a
 * sequence's length is a constant, and SequenceMap is unrolled over its elements like Loop.
 */
#include "common/checked.h"
#include "frontend/onnx/onnx_impl.h"

#include <string.h>

/* Sequences have at most this many elements (ox_tuple's bound). */
#define OX_MAX_SEQ 256

/* Input i as a sequence: its elements (pool-owned array of borrowed expressions), *len of
 * them.  A tuple expression gives its fields, anything else of tuple type get-items. */
static int seq_in(OxImporter *im, const OxNode *n, int32_t i, GPExpr ***elems, int32_t *len) {
  GPExpr *s = ox_req(n, i);
  if (!s) return -1;
  const GPType *t = ox_type(s);
  if (t->kind != GP_TYPE_TUPLE || ox_is_none(im, s))
    return ox_invalid("input %d is %s, not a sequence", (int)i, ox_is_none(im, s) ? "an empty optional" : "a tensor");
  *len = t->n;
  *elems = ox_alloc(im, (size_t)(t->n ? t->n : 1) * sizeof **elems);
  for (int32_t k = 0; k < t->n; k++) {
    if (gp_kind(s) == GP_TI_TUPLE) (*elems)[k] = ((GPTuple *)s)->fields[k];
    else if (!((*elems)[k] = ox_get_item(im, s, k))) return -1;
  }
  return 0;
}

/* A sequence of elems[0..len); every element a tensor of one dtype. */
static GPExpr *make_seq(OxImporter *im, int32_t len, GPExpr *const *elems) {
  if (len > OX_MAX_SEQ) {
    ox_unsupported("a sequence of %d elements (at most %d)", (int)len, OX_MAX_SEQ);
    return NULL;
  }
  for (int32_t k = 0; k < len; k++) {
    if (ox_type(elems[k])->kind != GP_TYPE_TENSOR) {
      ox_unsupported("a sequence whose element %d is not a tensor (sequences of sequences are not supported)", (int)k);
      return NULL;
    }
    if (k && !gp_dtype_eq(ox_dtype(elems[k]), ox_dtype(elems[0]))) {
      char a[24], b[24];
      ox_invalid("the sequence's elements have different dtypes (%s and %s)", gp_dtype_str(ox_dtype(elems[0]), a),
                 gp_dtype_str(ox_dtype(elems[k]), b));
      return NULL;
    }
  }
  return ox_tuple(im, len, elems);
}

/* A compile-time position (input i, a scalar integer) checked against [lo, hi], normalized by
 * adding len when negative. */
static int position(OxImporter *im, const OxNode *n, int32_t i, int64_t lo, int64_t hi, int64_t len, int64_t *out) {
  const int64_t *v;
  int32_t count;
  if (ox_const_ints(im, ox_in(n, i), "position", &v, &count) != 0) return -1;
  if (count != 1) return ox_invalid("position must be a scalar (it has %d values)", (int)count);
  if (v[0] < lo || v[0] > hi)
    return ox_invalid("position %lld is out of range [%lld, %lld] for a sequence of length %lld", (long long)v[0],
                      (long long)lo, (long long)hi, (long long)len);
  *out = v[0] < 0 ? v[0] + len : v[0];
  return 0;
}

static int cv_sequence_construct(OxImporter *im, const OxNode *n, GPExpr **out) {
  if (n->nin < 1) return ox_invalid("SequenceConstruct needs at least one input");
  for (int32_t i = 0; i < n->nin; i++) {
    if (!ox_req(n, i)) return -1;
    if (ox_type(n->in[i])->kind != GP_TYPE_TENSOR) return ox_invalid("input %d is not a tensor", (int)i);
  }
  out[0] = make_seq(im, n->nin, n->in);
  return out[0] ? 0 : -1;
}

static int cv_sequence_empty(OxImporter *im, const OxNode *n, GPExpr **out) {
  DLDataType dt;
  if (ox_dtype_from_onnx((int32_t)ox_attr_int(n, "dtype", 1), &dt) != 0) return -1;
  out[0] = ox_tuple(im, 0, NULL);
  return out[0] ? 0 : -1;
}

static int cv_sequence_length(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr **e;
  int32_t len;
  if (seq_in(im, n, 0, &e, &len) != 0) return -1;
  out[0] = ox_scalar(im, GP_DT_I64, (double)len);
  return out[0] ? 0 : -1;
}

static int cv_sequence_at(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr **e;
  int32_t len;
  int64_t p;
  if (seq_in(im, n, 0, &e, &len) != 0 || !ox_req(n, 1) || position(im, n, 1, -len, len - 1, len, &p) != 0) return -1;
  out[0] = e[p];
  return 0;
}

static int cv_sequence_insert(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr **e;
  int32_t len;
  int64_t p = -1;
  if (seq_in(im, n, 0, &e, &len) != 0) return -1;
  GPExpr *t = ox_req(n, 1);
  if (!t) return -1;
  if (ox_type(t)->kind != GP_TYPE_TENSOR) return ox_invalid("input 1 is not a tensor");
  if (ox_in(n, 2) && position(im, n, 2, -len, len, len, &p) != 0) return -1;
  if (p < 0) p = len;
  if (len + 1 > OX_MAX_SEQ) return ox_unsupported("a sequence of %d elements (at most %d)", (int)len + 1, OX_MAX_SEQ);
  GPExpr **f = ox_alloc(im, (size_t)(len + 1) * sizeof *f);
  for (int32_t k = 0, j = 0; k <= len; k++) f[k] = k == p ? t : e[j++];
  out[0] = make_seq(im, len + 1, f);
  return out[0] ? 0 : -1;
}

static int cv_sequence_erase(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr **e;
  int32_t len;
  int64_t p = -1;
  if (seq_in(im, n, 0, &e, &len) != 0) return -1;
  if (!len) return ox_invalid("SequenceErase of an empty sequence");
  if (ox_in(n, 1) && position(im, n, 1, -len, len - 1, len, &p) != 0) return -1;
  if (p < 0) p = len - 1;
  GPExpr **f = ox_alloc(im, (size_t)len * sizeof *f);
  for (int32_t k = 0, j = 0; k < len; k++)
    if (k != p) f[j++] = e[k];
  out[0] = ox_tuple(im, len - 1, f);
  return out[0] ? 0 : -1;
}

static int cv_concat_from_sequence(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr **e;
  int32_t len;
  if (seq_in(im, n, 0, &e, &len) != 0) return -1;
  if (!ox_has_attr(n, "axis")) return ox_invalid("the attribute 'axis' is required");
  int64_t axis = ox_attr_int(n, "axis", 0), new_axis = ox_attr_int(n, "new_axis", 0);
  if (new_axis != 0 && new_axis != 1) return ox_invalid("new_axis must be 0 or 1, not %lld", (long long)new_axis);
  if (!len) return ox_invalid("ConcatFromSequence of an empty sequence");
  int32_t r = ox_rank(e[0]) + (int32_t)new_axis;
  if (axis < -(int64_t)r || axis >= r)
    return ox_invalid("axis %lld is out of range for rank %d", (long long)axis, (int)r);
  GPExpr *t = ox_tuple(im, len, e);
  const char *k[] = {"axis"};
  GPAttrValue v[] = {gp_attr_int(axis < 0 ? axis + r : axis)};
  out[0] = t ? ox_call(im, new_axis ? "stack" : "concatenate", 1, &t, 1, k, v) : NULL;
  return out[0] ? 0 : -1;
}

static int cv_split_to_sequence(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  int32_t r = ox_rank(x);
  int64_t axis = ox_attr_int(n, "axis", 0), keepdims = ox_attr_int(n, "keepdims", 1);
  if (axis < -(int64_t)r || axis >= r) return ox_invalid("axis %lld is out of range for rank %d", (long long)axis, (int)r);
  if (axis < 0) axis += r;
  int64_t d = ox_shape(x)[axis];
  if (d == GP_DIM_ANY) return ox_unsupported("SplitToSequence of an axis of unknown extent");
  const int64_t *split = NULL;
  int32_t nsplit = -1;
  bool scalar_split = false;
  if (ox_in(n, 1)) {
    if (ox_const_ints(im, n->in[1], "split", &split, &nsplit) != 0) return -1;
    scalar_split = ox_rank(n->in[1]) == 0;
  }
  int64_t parts;
  if (!split) parts = d;
  else if (scalar_split) {
    if (split[0] <= 0) return ox_invalid("split must be positive, not %lld", (long long)split[0]);
    parts = d ? (d + split[0] - 1) / split[0] : 0;
  } else parts = nsplit;
  if (parts > OX_MAX_SEQ) return ox_unsupported("a sequence of %lld elements (at most %d)", (long long)parts, OX_MAX_SEQ);
  GPExpr **f = ox_alloc(im, (size_t)(parts ? parts : 1) * sizeof *f);
  int64_t at = 0, one = 1;
  for (int64_t i = 0; i < parts; i++) {
    int64_t size = !split ? 1 : scalar_split ? (d - at < split[0] ? d - at : split[0]) : split[i];
    if (size < 0) return ox_invalid("split has a negative entry");
    if (size > d - at) return ox_invalid("split sums to more than the axis extent %lld", (long long)d);
    int64_t end = at + size;
    const char *keys[4] = {"begin", "end", "strides", "axes"};
    GPAttrValue vals[4] = {gp_attr_ints(1, &at), gp_attr_ints(1, &end), gp_attr_ints(1, &one), gp_attr_ints(1, &axis)};
    f[i] = ox_call(im, "strided_slice", 1, &x, 4, keys, vals);
    if (f[i] && !split && !keepdims) {
      const char *sk[] = {"axis"};
      GPAttrValue sv[] = {gp_attr_ints(1, &axis)};
      f[i] = ox_call(im, "squeeze", 1, &f[i], 1, sk, sv);
    }
    if (!f[i]) return -1;
    at = end;
  }
  if (at != d) return ox_invalid("split sums to %lld, the axis has extent %lld", (long long)at, (long long)d);
  out[0] = make_seq(im, (int32_t)parts, f);
  return out[0] ? 0 : -1;
}

/* SequenceMap: the body applied to the i-th element of every sequence input (and to every
 * tensor input whole), unrolled; output k is the sequence of the body's k-th outputs. */
static int cv_sequence_map(OxImporter *im, const OxNode *n, GPExpr **out) {
  int32_t bin, bout;
  if (ox_subgraph_arity(n, "body", &bin, &bout) != 0) return -1;
  if (bin != n->nin || bout != n->nout)
    return ox_invalid("the body takes %d and gives %d values; the node has %d inputs and %d outputs", (int)bin,
                      (int)bout, (int)n->nin, (int)n->nout);
  GPExpr ***elems = ox_alloc(im, (size_t)(bin ? bin : 1) * sizeof *elems);
  int32_t len = -1;
  for (int32_t j = 0; j < n->nin; j++) {
    GPExpr *x = ox_req(n, j);
    if (!x) return -1;
    if (j > 0 && ox_type(x)->kind == GP_TYPE_TENSOR) continue; /* applied whole */
    int32_t l;
    if (seq_in(im, n, j, &elems[j], &l) != 0) return -1;
    if (len >= 0 && l != len)
      return ox_invalid("input %d has %d elements, input 0 has %d", (int)j, (int)l, (int)len);
    len = l;
  }
  if (len < 0) return ox_invalid("SequenceMap needs a sequence as input 0");
  int64_t unrolled;
  if (OX_PROD(1 << 20, &unrolled, "the unrolled SequenceMap's nodes", (int64_t)ox_subgraph_size(n, "body"), len) != 0)
    return -1;
  GPExpr **binds = ox_alloc(im, (size_t)(bin ? bin : 1) * sizeof *binds);
  GPExpr **res = ox_alloc(im, (size_t)(bout ? bout : 1) * sizeof *res);
  int64_t ncols;
  if (OX_PROD(GP_MAX_TENSOR_ELEMS, &ncols, "SequenceMap's outputs", bout, len) != 0) return -1;
  GPExpr **cols = ox_alloc_n(im, ncols, 0, sizeof *cols, "SequenceMap's outputs");
  if (!cols) return -1;
  for (int32_t i = 0; i < len; i++) {
    for (int32_t j = 0; j < bin; j++) binds[j] = elems[j] ? elems[j][i] : n->in[j];
    if (ox_subgraph(im, n, "body", bin, binds, bout, res) != 0) return -1;
    for (int32_t k = 0; k < bout; k++) cols[(size_t)k * (size_t)len + (size_t)i] = res[k];
  }
  for (int32_t k = 0; k < bout; k++)
    if (!(out[k] = make_seq(im, len, cols + (size_t)k * (size_t)len))) return gp_error_prefix("output %d", (int)k), -1;
  return 0;
}

static int cv_optional(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_in(n, 0);
  if (x) {
    out[0] = x; /* an optional that holds x is x */
    return 0;
  }
  if (!ox_has_attr(n, "type")) return ox_invalid("an Optional without an input needs its 'type' attribute");
  out[0] = ox_none(im);
  return out[0] ? 0 : -1;
}

static int cv_optional_has_element(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_in(n, 0);
  out[0] = ox_scalar(im, GP_DT_BOOL, x && !ox_is_none(im, x));
  return out[0] ? 0 : -1;
}

static int cv_optional_get_element(OxImporter *im, const OxNode *n, GPExpr **out) {
  GPExpr *x = ox_req(n, 0);
  if (!x) return -1;
  if (ox_is_none(im, x)) return ox_invalid("the optional input is empty (OptionalGetElement of an empty optional)");
  out[0] = x;
  return 0;
}

const OxConverter ox_cv_seq[] = {
    {"SequenceConstruct", NULL, 11, cv_sequence_construct},
    {"SequenceEmpty", NULL, 11, cv_sequence_empty},
    {"SequenceLength", NULL, 11, cv_sequence_length},
    {"SequenceAt", NULL, 11, cv_sequence_at},
    {"SequenceInsert", NULL, 11, cv_sequence_insert},
    {"SequenceErase", NULL, 11, cv_sequence_erase},
    {"ConcatFromSequence", NULL, 11, cv_concat_from_sequence},
    {"SplitToSequence", NULL, 11, cv_split_to_sequence},
    {"SequenceMap", NULL, 17, cv_sequence_map},
    {"Optional", NULL, 15, cv_optional},
    {"OptionalHasElement", NULL, 15, cv_optional_has_element},
    {"OptionalGetElement", NULL, 15, cv_optional_get_element},
    {NULL, NULL, 0, NULL},
};
