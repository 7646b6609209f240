/* k_transform.c -- reference kernels of the shape transforms: reshape, squeeze, expand_dims,
 * nn.batch_flatten, transpose, concatenate, split, strided_slice, layout_transform, full, zeros,
 * ones, shape_of, tile, broadcast_to, nn.pad, nn.depth_to_space / nn.space_to_depth,
 * nn.space_to_batch_nd / nn.batch_to_space_nd, stack and reverse_sequence.
 *
 * Transforms move bytes, so they dispatch on the element size (1, 2, 4 or 8 bytes), not on the
 * dtype.  Almost all of them reduce to one primitive, a copy between two strided views of the
 * same index space (KCopy below): reshape-like ops copy the input's row-major order into the
 * compact output, transpose permutes the source strides, strided_slice offsets and scales them,
 * concatenate / split offset one side along the axis, layout_transform splits axes into
 * (outer, inner) blocks.  The copy normalizes its dims (drops extent-1 dims, orders by the
 * destination's strides, merges dims contiguous on both sides) and then picks:
 *   - memcpy of contiguous runs when the innermost dim is contiguous on both sides;
 *   - a tiled 2-d transpose when the destination is contiguous along one dim and the source
 *     along another;
 *   - a strided element loop otherwise.
 * Large copies are split over rows / tiles with gp_k_parallel_for.  Offsets are int64 element
 * counts; a pointer is only formed for an element that exists. */
#include "eval/kernel.h"

#include <stdlib.h>

#define KC_MAX (2 * GP_K_MAX_RANK) /* layout_transform splits axes into up to 3 dims */
#define KC_GRAIN_BYTES ((int64_t)1 << 18) /* bytes per parallel chunk, at least */

/* ------------------------------------------------------------------------------------------ */
/* Arguments                                                                                   */

/* Element size of a dtype the transforms can move: lanes 1, bool (1 byte) or 8/16/32/64 bits. */
static int k_elem(DLDataType dt, const char *what, size_t *elem) {
  bool ok = dt.lanes == 1 && (dt.bits == 8 || dt.bits == 16 || dt.bits == 32 || dt.bits == 64 ||
                              (dt.bits == 1 && dt.code == kDLUInt));
  if (!ok) {
    char b[24];
    gp_error_set(GP_ERR_UNSUPPORTED, "%s: dtype %s is not supported", what, gp_dtype_str(dt, b));
    return -1;
  }
  *elem = dt.bits == 1 ? 1 : dt.bits / 8u;
  return 0;
}

static int k_counts(const GPKernelArgs *a, int32_t nin, int32_t nout) {
  if ((nin >= 0 && a->num_inputs != nin) || a->num_inputs < 0 || (nout >= 0 && a->num_outputs != nout) ||
      a->num_outputs < 1) {
    gp_error_set(GP_ERR_INTERNAL, "%d inputs and %d outputs, expected %d and %d", (int)a->num_inputs,
                 (int)a->num_outputs, (int)nin, (int)nout);
    return -1;
  }
  return 0;
}

static char *out_data(const DLTensor *t) { return (char *)t->data + t->byte_offset; }

/* Compact row-major strides (elements) of shape[0..nd). */
static void compact_strides(int32_t nd, const int64_t *shape, int64_t *st) {
  int64_t s = 1;
  for (int32_t i = nd - 1; i >= 0; i--) {
    st[i] = s;
    s *= shape[i];
  }
}

static int shape_mismatch(const char *what) {
  gp_error_set(GP_ERR_INTERNAL, "%s does not match the shape the type relation gives", what);
  return -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Typed element loops (memcpy of a constant size: no alignment assumptions, one load/store)  */

/* Tile edge of the tiled transpose: one 64-byte cache line of elements */
#define KC_TILE(SZ) (64 / (SZ))

typedef void (*StridedFn)(char *d, int64_t dst, const char *s, int64_t sst, int64_t n);
typedef void (*TileFn)(char *d, int64_t dps, const char *s, int64_t sqs, int64_t np, int64_t nq);
typedef void (*FillFn)(char *d, const unsigned char *pat, int64_t n);

#define K_LOOPS(SZ, T)                                                                          \
  static void strided_##SZ(char *d, int64_t dst, const char *s, int64_t sst, int64_t n) {       \
    for (int64_t i = 0; i < n; i++) {                                                           \
      T v;                                                                                      \
      memcpy(&v, s + i * sst * SZ, SZ);                                                         \
      memcpy(d + i * dst * SZ, &v, SZ);                                                         \
    }                                                                                           \
  }                                                                                             \
  /* One np x nq tile: d is contiguous along q with stride dps along p, s contiguous along p    \
   * with stride sqs along q.  A tile spans one cache line each way (KC_TILE). */               \
  static void tile_##SZ(char *d, int64_t dps, const char *s, int64_t sqs, int64_t np, int64_t nq) { \
    for (int64_t i = 0; i < np; i++) {                                                          \
      char *dr = d + i * dps * SZ;                                                              \
      const char *sr = s + i * SZ;                                                              \
      for (int64_t j = 0; j < nq; j++) {                                                        \
        T v;                                                                                    \
        memcpy(&v, sr + j * sqs * SZ, SZ);                                                      \
        memcpy(dr + j * SZ, &v, SZ);                                                            \
      }                                                                                         \
    }                                                                                           \
  }
#define K_FILL(SZ, T)                                                                           \
  static void fill_##SZ(char *d, const unsigned char *pat, int64_t n) {                         \
    T v;                                                                                        \
    memcpy(&v, pat, SZ);                                                                        \
    for (int64_t i = 0; i < n; i++) memcpy(d + i * SZ, &v, SZ);                                 \
  }

K_LOOPS(1, uint8_t)
K_LOOPS(2, uint16_t)
K_LOOPS(4, uint32_t)
K_LOOPS(8, uint64_t)
K_FILL(2, uint16_t) /* 1-byte fills are memset */
K_FILL(4, uint32_t)
K_FILL(8, uint64_t)
#undef K_LOOPS
#undef K_FILL

static StridedFn strided_fn(size_t elem) {
  return elem == 1 ? strided_1 : elem == 2 ? strided_2 : elem == 4 ? strided_4 : strided_8;
}
static TileFn tile_fn(size_t elem) {
  return elem == 1 ? tile_1 : elem == 2 ? tile_2 : elem == 4 ? tile_4 : tile_8;
}
static FillFn fill_fn(size_t elem) { return elem == 2 ? fill_2 : elem == 4 ? fill_4 : fill_8; }

/* ------------------------------------------------------------------------------------------ */
/* Strided copy                                                                                */

typedef struct KCopy {
  const char *src; /* the element with index 0 in every dim (must exist when any element does) */
  char *dst;
  int64_t elem;    /* 1, 2, 4 or 8 */
  int32_t nd;
  int64_t shape[KC_MAX];
  int64_t ss[KC_MAX]; /* source strides, elements (may be negative) */
  int64_t ds[KC_MAX]; /* destination strides, elements */
  /* filled by kc_run */
  int32_t p;          /* tiled path: the dim the source is contiguous along */
  int64_t tp, tq, tile, outer; /* tp, tq: blocks along p and q */
} KCopy;

static int64_t iabs64(int64_t v) { return v < 0 ? -v : v; }

/* Drop extent-1 dims, order by destination stride (largest first), merge dims contiguous on
 * both sides.  false: nothing to copy (some extent is 0). */
static bool kc_normalize(KCopy *c) {
  int32_t n = 0;
  for (int32_t a = 0; a < c->nd; a++) {
    if (c->shape[a] == 0) return false;
    if (c->shape[a] == 1) continue;
    c->shape[n] = c->shape[a], c->ss[n] = c->ss[a], c->ds[n] = c->ds[a];
    n++;
  }
  for (int32_t i = 1; i < n; i++) { /* stable insertion sort */
    int64_t sh = c->shape[i], s = c->ss[i], d = c->ds[i];
    int32_t j = i;
    while (j > 0 && iabs64(c->ds[j - 1]) < iabs64(d)) {
      c->shape[j] = c->shape[j - 1], c->ss[j] = c->ss[j - 1], c->ds[j] = c->ds[j - 1];
      j--;
    }
    c->shape[j] = sh, c->ss[j] = s, c->ds[j] = d;
  }
  int32_t m = 0;
  for (int32_t a = 0; a < n; a++) {
    if (m > 0 && c->ss[m - 1] == c->ss[a] * c->shape[a] && c->ds[m - 1] == c->ds[a] * c->shape[a]) {
      c->shape[m - 1] *= c->shape[a];
      c->ss[m - 1] = c->ss[a];
      c->ds[m - 1] = c->ds[a];
      continue;
    }
    c->shape[m] = c->shape[a], c->ss[m] = c->ss[a], c->ds[m] = c->ds[a];
    m++;
  }
  c->nd = m;
  return true;
}

/* One contiguous range [begin, end) of elements of a 1-d contiguous copy. */
static void kc_flat_body(void *ctx, int64_t begin, int64_t end) {
  const KCopy *c = ctx;
  memcpy(c->dst + begin * c->elem, c->src + begin * c->elem, (size_t)((end - begin) * c->elem));
}

/* Rows [begin, end) over dims 0..nd-2; the last dim is the row. */
static void kc_rows_body(void *ctx, int64_t begin, int64_t end) {
  const KCopy *c = ctx;
  int32_t q = c->nd - 1;
  int64_t idx[KC_MAX], so = 0, dof = 0, r = begin, e = c->elem, inner = c->shape[q];
  for (int32_t a = q - 1; a >= 0; a--) {
    idx[a] = r % c->shape[a];
    r /= c->shape[a];
    so += idx[a] * c->ss[a];
    dof += idx[a] * c->ds[a];
  }
  bool contiguous = c->ss[q] == 1 && c->ds[q] == 1;
  StridedFn fn = strided_fn((size_t)e);
  for (int64_t row = begin; row < end; row++) {
    if (contiguous)
      memcpy(c->dst + dof * e, c->src + so * e, (size_t)(inner * e));
    else
      fn(c->dst + dof * e, c->ds[q], c->src + so * e, c->ss[q], inner);
    for (int32_t a = q - 1; a >= 0; a--) {
      so += c->ss[a];
      dof += c->ds[a];
      if (++idx[a] < c->shape[a]) break;
      so -= c->ss[a] * c->shape[a];
      dof -= c->ds[a] * c->shape[a];
      idx[a] = 0;
    }
  }
}

/* Blocks [begin, end): block = (outer index, block along p, block along q), q = nd-1 innermost.
 * A block is KC_BLOCK x KC_BLOCK elements, copied tile by tile (the pages it touches stay in
 * the TLB while its tiles are done). */
#define KC_BLOCK 256

static void kc_tile_body(void *ctx, int64_t begin, int64_t end) {
  const KCopy *c = ctx;
  int32_t q = c->nd - 1, p = c->p;
  int64_t e = c->elem, T = c->tile;
  TileFn fn = tile_fn((size_t)e);
  for (int64_t it = begin; it < end; it++) {
    int64_t bq = it % c->tq, rest = it / c->tq, bp = rest % c->tp, oi = rest / c->tp;
    int64_t so = 0, dof = 0;
    for (int32_t a = q - 1; a >= 0 && oi; a--) {
      if (a == p) continue;
      int64_t i = oi % c->shape[a];
      oi /= c->shape[a];
      so += i * c->ss[a];
      dof += i * c->ds[a];
    }
    int64_t p1 = bp * KC_BLOCK + KC_BLOCK, q1 = bq * KC_BLOCK + KC_BLOCK;
    if (p1 > c->shape[p]) p1 = c->shape[p];
    if (q1 > c->shape[q]) q1 = c->shape[q];
    for (int64_t p0 = bp * KC_BLOCK; p0 < p1; p0 += T) {
      int64_t np = p1 - p0 < T ? p1 - p0 : T;
      for (int64_t q0 = bq * KC_BLOCK; q0 < q1; q0 += T) {
        int64_t nq = q1 - q0 < T ? q1 - q0 : T;
        fn(c->dst + (dof + p0 * c->ds[p] + q0) * e, c->ds[p], c->src + (so + p0 + q0 * c->ss[q]) * e,
           c->ss[q], np, nq);
      }
    }
  }
}

/* Copy every element of the index space c->shape from src to dst (c is clobbered). */
static void kc_run(KCopy *c, int32_t nthreads) {
  if (!kc_normalize(c)) return;
  int64_t e = c->elem;
  if (c->nd == 0) {
    memcpy(c->dst, c->src, (size_t)e);
    return;
  }
  int32_t q = c->nd - 1;
  if (c->nd == 1 && c->ss[0] == 1 && c->ds[0] == 1) {
    int64_t grain = KC_GRAIN_BYTES / e;
    gp_k_parallel_for(nthreads, c->shape[0], grain, kc_flat_body, c);
    return;
  }
  if (c->ds[q] == 1 && c->ss[q] != 1) {
    int32_t p = -1;
    for (int32_t a = q - 1; a >= 0; a--)
      if (c->ss[a] == 1) {
        p = a;
        break;
      }
    if (p >= 0 && c->shape[p] >= 4) {
      c->p = p;
      c->tile = KC_TILE(e);
      c->tp = (c->shape[p] + KC_BLOCK - 1) / KC_BLOCK;
      c->tq = (c->shape[q] + KC_BLOCK - 1) / KC_BLOCK;
      c->outer = 1;
      for (int32_t a = 0; a < q; a++)
        if (a != p) c->outer *= c->shape[a];
      int64_t items = c->outer * c->tp * c->tq;
      int64_t per_item = (c->shape[p] < KC_BLOCK ? c->shape[p] : KC_BLOCK) *
                         (c->shape[q] < KC_BLOCK ? c->shape[q] : KC_BLOCK) * e;
      gp_k_parallel_for(nthreads, items, KC_GRAIN_BYTES / per_item, kc_tile_body, c);
      return;
    }
  }
  int64_t rows = 1;
  for (int32_t a = 0; a < q; a++) rows *= c->shape[a];
  int64_t row_bytes = c->shape[q] * e;
  int64_t grain = row_bytes >= KC_GRAIN_BYTES ? 1 : KC_GRAIN_BYTES / row_bytes;
  gp_k_parallel_for(nthreads, rows, grain, kc_rows_body, c);
}

/* Source side of a copy from a view of t (shape and strides); numel must be > 0. */
static void kc_from_view(KCopy *c, const GPKView *v, size_t elem) {
  c->src = v->data;
  c->elem = (int64_t)elem;
  c->nd = v->ndim;
  for (int32_t a = 0; a < v->ndim; a++) c->shape[a] = v->shape[a], c->ss[a] = v->strides[a];
}

/* ------------------------------------------------------------------------------------------ */
/* Fill                                                                                        */

typedef struct {
  char *dst;
  const unsigned char *pat;
  size_t elem;
} FillCtx;

static void fill_body(void *ctx, int64_t begin, int64_t end) {
  const FillCtx *f = ctx;
  char *d = f->dst + begin * (int64_t)f->elem;
  bool zero = true;
  for (size_t i = 0; i < f->elem; i++) zero = zero && f->pat[i] == 0;
  if (zero || f->elem == 1)
    memset(d, f->pat[0], (size_t)(end - begin) * f->elem);
  else
    fill_fn(f->elem)(d, f->pat, end - begin);
}

static void k_fill(char *dst, int64_t n, const unsigned char *pat, size_t elem, int32_t nthreads) {
  FillCtx f = {dst, pat, elem};
  gp_k_parallel_for(nthreads, n, KC_GRAIN_BYTES / (int64_t)elem, fill_body, &f);
}

/* ------------------------------------------------------------------------------------------ */
/* reshape, squeeze, expand_dims, nn.batch_flatten: the input's row-major order, copied        */

/* reshape_like passes a second input (shape_like) whose data is not read. */
static int k_reshape(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, user ? 2 : 1, 1) != 0) return -1;
  const DLTensor *in = a->inputs[0];
  DLTensor *out = a->outputs[0];
  size_t elem, oelem;
  if (k_elem(in->dtype, "data", &elem) != 0 || k_elem(out->dtype, "result", &oelem) != 0) return -1;
  int64_t n = gp_k_numel(out);
  if (n != gp_k_numel(in) || elem != oelem) return shape_mismatch("the result");
  if (n == 0) return 0;
  GPKView v;
  gp_k_view(in, &v);
  KCopy c;
  kc_from_view(&c, &v, elem);
  c.dst = out_data(out);
  compact_strides(v.ndim, v.shape, c.ds);
  kc_run(&c, a->num_threads);
  return 0;
}

/* annotation.compiler_begin / compiler_end: identities; a tuple argument arrives as one input
 * per field and leaves as one output per field. */
static int k_identity(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (a->num_inputs != a->num_outputs) {
    gp_error_set(GP_ERR_VALUE, "%d inputs for %d outputs", (int)a->num_inputs, (int)a->num_outputs);
    return -1;
  }
  for (int32_t i = 0; i < a->num_inputs; i++) {
    const DLTensor *in = a->inputs[i];
    DLTensor *out = a->outputs[i];
    size_t elem, oelem;
    if (k_elem(in->dtype, "data", &elem) != 0 || k_elem(out->dtype, "result", &oelem) != 0) return -1;
    int64_t n = gp_k_numel(out);
    if (n != gp_k_numel(in) || elem != oelem) return shape_mismatch("the result");
    if (n == 0) continue;
    GPKView v;
    gp_k_view(in, &v);
    KCopy c;
    kc_from_view(&c, &v, elem);
    c.dst = out_data(out);
    compact_strides(v.ndim, v.shape, c.ds);
    kc_run(&c, a->num_threads);
  }
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* transpose                                                                                   */

static int k_transpose(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, 1, 1) != 0) return -1;
  const DLTensor *in = a->inputs[0];
  DLTensor *out = a->outputs[0];
  size_t elem;
  if (k_elem(in->dtype, "data", &elem) != 0) return -1;
  int32_t nd = in->ndim, n;
  if (out->ndim != nd) return shape_mismatch("the result");
  const int64_t *axes = gp_ops_attr_ints(a->op, a->attrs, "axes", &n);
  int32_t perm[GP_K_MAX_RANK];
  if (n < 0 || (n == 0 && nd > 0)) {
    for (int32_t i = 0; i < nd; i++) perm[i] = nd - 1 - i;
  } else {
    if (n != nd) {
      gp_error_set(GP_ERR_VALUE, "axes has %d entries for data of rank %d", (int)n, (int)nd);
      return -1;
    }
    bool seen[GP_K_MAX_RANK] = {false};
    for (int32_t i = 0; i < nd; i++) {
      int64_t ax = axes[i] < 0 ? axes[i] + nd : axes[i];
      if (ax < 0 || ax >= nd || seen[ax]) {
        gp_error_set(GP_ERR_VALUE, "axes entry %lld is out of range or repeated", (long long)axes[i]);
        return -1;
      }
      seen[ax] = true;
      perm[i] = (int32_t)ax;
    }
  }
  for (int32_t i = 0; i < nd; i++)
    if (out->shape[i] != in->shape[perm[i]]) return shape_mismatch("the result");
  if (gp_k_numel(out) == 0) return 0;
  GPKView v;
  gp_k_view(in, &v);
  KCopy c;
  c.src = v.data;
  c.dst = out_data(out);
  c.elem = (int64_t)elem;
  c.nd = nd;
  for (int32_t i = 0; i < nd; i++) c.shape[i] = v.shape[perm[i]], c.ss[i] = v.strides[perm[i]];
  compact_strides(nd, c.shape, c.ds);
  kc_run(&c, a->num_threads);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* concatenate (the tuple's fields are the inputs), split (one output per field)               */

static int norm_axis(int64_t axis, int32_t nd, int32_t *out) {
  if (axis < -(int64_t)nd || axis >= nd) {
    gp_error_set(GP_ERR_VALUE, "axis %lld is out of range for rank %d", (long long)axis, (int)nd);
    return -1;
  }
  *out = (int32_t)(axis < 0 ? axis + nd : axis);
  return 0;
}

static int k_concatenate(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, -1, 1) != 0) return -1;
  DLTensor *out = a->outputs[0];
  size_t elem;
  if (k_elem(out->dtype, "result", &elem) != 0) return -1;
  int32_t nd = out->ndim, axis;
  if (a->num_inputs < 1 || nd < 1) return shape_mismatch("the result");
  if (norm_axis(gp_ops_attr_int(a->op, a->attrs, "axis"), nd, &axis) != 0) return -1;
  int64_t total = 0;
  for (int32_t k = 0; k < a->num_inputs; k++) {
    const DLTensor *in = a->inputs[k];
    size_t ie;
    if (k_elem(in->dtype, "data", &ie) != 0) return -1;
    if (ie != elem || in->ndim != nd) return shape_mismatch("a field of data");
    for (int32_t d = 0; d < nd; d++)
      if (d != axis && in->shape[d] != out->shape[d]) return shape_mismatch("a field of data");
    total += in->shape[axis];
  }
  if (total != out->shape[axis]) return shape_mismatch("the result");
  int64_t ost[GP_K_MAX_RANK], at = 0;
  compact_strides(nd, out->shape, ost);
  for (int32_t k = 0; k < a->num_inputs; k++) {
    const DLTensor *in = a->inputs[k];
    int64_t ext = in->shape[axis];
    if (gp_k_numel(in) > 0) {
      GPKView v;
      gp_k_view(in, &v);
      KCopy c;
      kc_from_view(&c, &v, elem);
      c.dst = out_data(out) + at * ost[axis] * (int64_t)elem;
      memcpy(c.ds, ost, (size_t)nd * sizeof(int64_t));
      kc_run(&c, a->num_threads);
    }
    at += ext;
  }
  return 0;
}

static int k_split(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, 1, -1) != 0) return -1;
  const DLTensor *in = a->inputs[0];
  size_t elem;
  if (k_elem(in->dtype, "data", &elem) != 0) return -1;
  int32_t nd = in->ndim, axis;
  if (nd < 1) return shape_mismatch("data");
  if (norm_axis(gp_ops_attr_int(a->op, a->attrs, "axis"), nd, &axis) != 0) return -1;
  int64_t total = 0;
  for (int32_t j = 0; j < a->num_outputs; j++) {
    const DLTensor *o = a->outputs[j];
    if (o->ndim != nd || o->dtype.bits != in->dtype.bits) return shape_mismatch("a result");
    for (int32_t d = 0; d < nd; d++)
      if (d != axis && o->shape[d] != in->shape[d]) return shape_mismatch("a result");
    total += o->shape[axis];
  }
  if (total > in->shape[axis]) return shape_mismatch("the results");
  if (gp_k_numel(in) == 0) return 0;
  GPKView v;
  gp_k_view(in, &v);
  int64_t at = 0;
  for (int32_t j = 0; j < a->num_outputs; j++) {
    DLTensor *o = a->outputs[j];
    if (gp_k_numel(o) > 0) {
      KCopy c;
      kc_from_view(&c, &v, elem);
      c.src = v.data + at * v.strides[axis] * (int64_t)elem;
      c.shape[axis] = o->shape[axis];
      c.dst = out_data(o);
      compact_strides(nd, o->shape, c.ds);
      kc_run(&c, a->num_threads);
    }
    at += o->shape[axis];
  }
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* strided_slice                                                                               */

/* TVM's CanonicalizeIndex (as the type relation uses it): negative counts from the end, then
 * clamp to [0, extent] for a positive stride, [-1, extent - 1] for a negative one. */
static int64_t canon_index(int64_t i, int64_t extent, int64_t stride) {
  int64_t lo = stride < 0 ? -1 : 0, hi = stride < 0 ? extent - 1 : extent;
  if (i < 0) i += extent;
  return i < lo ? lo : i > hi ? hi : i;
}

static int k_strided_slice(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, 1, 1) != 0) return -1;
  const DLTensor *in = a->inputs[0];
  DLTensor *out = a->outputs[0];
  size_t elem;
  if (k_elem(in->dtype, "data", &elem) != 0) return -1;
  int32_t nd = in->ndim;
  if (out->ndim != nd) return shape_mismatch("the result");
  const GPOp *op = a->op;
  int32_t nb, ne, ns, na;
  const int64_t *begin = gp_ops_attr_ints(op, a->attrs, "begin", &nb);
  (void)gp_ops_attr_ints(op, a->attrs, "end", &ne); /* only its length: the result's shape gives the counts */
  const int64_t *strides = gp_ops_attr_ints(op, a->attrs, "strides", &ns);
  const int64_t *axes = gp_ops_attr_ints(op, a->attrs, "axes", &na);
  const char *mode = gp_ops_attr_str(op, a->attrs, "slice_mode");
  bool size_mode = strcmp(mode, "size") == 0;
  if (!size_mode && strcmp(mode, "end") != 0) {
    gp_error_set(GP_ERR_UNSUPPORTED, "slice_mode \"%s\" (only \"end\" and \"size\")", mode);
    return -1;
  }
  if (nb < 0) nb = 0;
  if (ne < 0) ne = 0;
  if (ns < 0) ns = 0;
  int32_t nsl = na >= 0 ? na : (nb > ne ? nb : ne);
  if (nsl > nd || (na >= 0 && nb < na)) {
    gp_error_set(GP_ERR_VALUE, "begin, end and axes do not fit data of rank %d", (int)nd);
    return -1;
  }
  int64_t start[GP_K_MAX_RANK], step[GP_K_MAX_RANK];
  for (int32_t d = 0; d < nd; d++) start[d] = 0, step[d] = 1;
  for (int32_t i = 0; i < nsl; i++) {
    int32_t ax = i;
    if (na >= 0 && norm_axis(axes[i], nd, &ax) != 0) return -1;
    int64_t stride = size_mode || i >= ns ? 1 : strides[i];
    if (stride == 0) {
      gp_error_set(GP_ERR_VALUE, "stride 0 on axis %d", (int)ax);
      return -1;
    }
    int64_t b = i < nb ? begin[i] : (stride > 0 ? 0 : INT64_MAX);
    start[ax] = canon_index(b, in->shape[ax], stride);
    step[ax] = stride;
  }
  /* every element the result addresses must be inside data */
  for (int32_t d = 0; d < nd; d++) {
    int64_t n = out->shape[d], ext = in->shape[d], last;
    if (n == 0) continue;
    if (n == 1) step[d] = 1; /* never stepped: keep the stride product small */
    if (start[d] < 0 || start[d] >= ext || __builtin_mul_overflow(n - 1, step[d], &last) ||
        __builtin_add_overflow(last, start[d], &last) || last < 0 || last >= ext) {
      gp_error_set(GP_ERR_INTERNAL, "axis %d: %lld elements from %lld by %lld leave [0, %lld)", (int)d,
                   (long long)n, (long long)start[d], (long long)step[d], (long long)ext);
      return -1;
    }
  }
  if (gp_k_numel(out) == 0) return 0;
  GPKView v;
  gp_k_view(in, &v);
  KCopy c;
  int64_t off = 0;
  for (int32_t d = 0; d < nd; d++) {
    off += start[d] * v.strides[d];
    c.shape[d] = out->shape[d];
    c.ss[d] = v.strides[d] * step[d];
  }
  c.src = v.data + off * (int64_t)elem;
  c.dst = out_data(out);
  c.elem = (int64_t)elem;
  c.nd = nd;
  compact_strides(nd, out->shape, c.ds);
  kc_run(&c, a->num_threads);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* layout_transform                                                                            */

/* As TVM's topi.layout_transform: each destination element reads the source element at the
 * same primal coordinates, or 0 when those fall outside the source (the padding of a split axis
 * whose extent the block does not divide, e.g. 20 channels -> NCHW16c has 2 blocks of 16, the
 * last 12 channels zero).  Each primal axis X becomes one to three dims on which both sides'
 * offsets are linear: X; (X / f, X % f) when one side blocks it by f (or both by the same f);
 * (X / F, X % F / f, X % f) when both block it and f divides F.  A destination block that
 * overruns the source splits the copy into regions (full blocks, then the partial last one).
 * Blocks whose factors do not divide each other take a per-element path. */

typedef struct {
  int32_t outer, reduced; /* vdims of the padded axis: outer block index, the one the tail cuts */
  int64_t full, rem;      /* full blocks; extent of `reduced` in the last, partial block */
} LTPad;

typedef struct {
  char x;              /* primal letter */
  int32_t si, sj, di, dj; /* axis positions (sj, dj: the block axis or -1) */
  int64_t fs, fd;      /* block factors (0: not blocked) */
} LTAxis;

static void lt_gather(const DLTensor *in, const GPKView *v, DLTensor *out, size_t elem, const LTAxis *ax,
                      int32_t nax) {
  int32_t nd = out->ndim;
  int64_t n = gp_k_numel(out), idx[GP_LAYOUT_MAX] = {0}, e = (int64_t)elem;
  char *dst = out_data(out);
  for (int64_t flat = 0; flat < n; flat++, dst += e) {
    int64_t off = 0;
    bool inside = true;
    for (int32_t k = 0; k < nax && inside; k++) {
      const LTAxis *x = &ax[k];
      int64_t px = x->dj >= 0 ? idx[x->di] * x->fd + idx[x->dj] : idx[x->di];
      int64_t so = x->fs ? px / x->fs : px;
      if (so >= in->shape[x->si]) inside = false;
      off += so * v->strides[x->si];
      if (x->fs) off += (px % x->fs) * v->strides[x->sj];
    }
    if (inside)
      memcpy(dst, v->data + off * e, elem);
    else
      memset(dst, 0, elem);
    for (int32_t d = nd - 1; d >= 0; d--) {
      if (++idx[d] < out->shape[d]) break;
      idx[d] = 0;
    }
  }
}

static int k_layout_transform(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, 1, 1) != 0) return -1;
  const DLTensor *in = a->inputs[0];
  DLTensor *out = a->outputs[0];
  size_t elem;
  if (k_elem(in->dtype, "data", &elem) != 0) return -1;
  GPLayout src, dst;
  if (gp_layout_parse(gp_ops_attr_str(a->op, a->attrs, "src_layout"), "src_layout", &src) != 0 ||
      gp_layout_parse(gp_ops_attr_str(a->op, a->attrs, "dst_layout"), "dst_layout", &dst) != 0)
    return -1;
  if (in->ndim != src.n || out->ndim != dst.n) return shape_mismatch("data or the result");
  /* the primal axes and their blocks, checked against both shapes */
  LTAxis ax[GP_LAYOUT_MAX];
  int32_t nax = 0;
  for (int32_t i = 0; i < src.n; i++) {
    if (src.factor[i]) continue;
    LTAxis *x = &ax[nax++];
    x->x = src.axis[i];
    char sub = (char)(x->x - 'A' + 'a');
    x->si = i;
    x->sj = gp_layout_index(&src, sub);
    x->di = gp_layout_index(&dst, x->x);
    x->dj = gp_layout_index(&dst, sub);
    x->fs = x->sj >= 0 ? src.factor[x->sj] : 0;
    x->fd = x->dj >= 0 ? dst.factor[x->dj] : 0;
    if (x->di < 0) return shape_mismatch("dst_layout");
    if (x->sj >= 0 && in->shape[x->sj] != x->fs) return shape_mismatch("data");
    int64_t px = in->shape[i] * (x->fs ? x->fs : 1);
    int64_t want = x->fd ? (px + x->fd - 1) / x->fd : px;
    if (out->shape[x->di] != want || (x->dj >= 0 && out->shape[x->dj] != x->fd)) return shape_mismatch("the result");
  }
  int32_t covered = 0;
  for (int32_t k = 0; k < nax; k++) covered += 1 + (ax[k].dj >= 0);
  if (covered != dst.n) return shape_mismatch("dst_layout");
  if (gp_k_numel(out) == 0) return 0;
  if (gp_k_numel(in) == 0) { /* cannot happen with a primal extent 0 (the result is empty too) */
    memset(out_data(out), 0, (size_t)gp_k_numel(out) * elem);
    return 0;
  }
  GPKView v;
  gp_k_view(in, &v);
  int64_t ost[GP_LAYOUT_MAX];
  compact_strides(out->ndim, out->shape, ost);
  KCopy c;
  c.nd = 0;
  c.elem = (int64_t)elem;
  LTPad pads[8];
  int32_t npad = 0;
  bool gather = false;
#define VDIM(ext, s, d) (c.shape[c.nd] = (ext), c.ss[c.nd] = (s), c.ds[c.nd] = (d), c.nd++)
  for (int32_t k = 0; k < nax && !gather; k++) {
    const LTAxis *x = &ax[k];
    int64_t S = in->shape[x->si], sO = v.strides[x->si], sI = x->sj >= 0 ? v.strides[x->sj] : 0;
    int64_t dO = ost[x->di], dI = x->dj >= 0 ? ost[x->dj] : 0, fs = x->fs, fd = x->fd;
    if (!fs && !fd) {
      VDIM(S, sO, dO);
    } else if (!fs) { /* X -> (X / fd, X % fd) */
      int64_t full = S / fd, rem = S % fd;
      if (rem) {
        if (npad == (int32_t)GP_ARRAY_LEN(pads)) gather = true;
        else pads[npad++] = (LTPad){c.nd, c.nd + 1, full, rem};
      }
      VDIM(full, fd * sO, dO);
      VDIM(fd, sO, dI);
    } else if (!fd) { /* (X / fs, X % fs) -> X */
      VDIM(S, sO, fs * dO);
      VDIM(fs, sI, dO);
    } else if (fs == fd) {
      VDIM(S, sO, dO);
      VDIM(fs, sI, dI);
    } else if (fd % fs == 0) { /* destination blocks are m source blocks */
      int64_t m = fd / fs, full = S / m, rem = S % m;
      if (rem) {
        if (npad == (int32_t)GP_ARRAY_LEN(pads)) gather = true;
        else pads[npad++] = (LTPad){c.nd, c.nd + 1, full, rem};
      }
      VDIM(full, m * sO, dO);
      VDIM(m, sO, fs * dI);
      VDIM(fs, sI, dI);
    } else if (fs % fd == 0) { /* source blocks are m destination blocks */
      int64_t m = fs / fd;
      VDIM(S, sO, m * dO);
      VDIM(m, fd * sI, dO);
      VDIM(fd, sI, dI);
    } else {
      gather = true;
    }
  }
#undef VDIM
  if (gather) {
    lt_gather(in, &v, out, elem, ax, nax);
    return 0;
  }
  char *obase = out_data(out);
  if (npad) memset(obase, 0, (size_t)gp_k_numel(out) * elem);
  /* region r: bit k set = the partial last block of padded axis k */
  for (uint32_t r = 0; r < (1u << npad); r++) {
    KCopy rc = c;
    int64_t soff = 0, doff = 0;
    for (int32_t k = 0; k < npad; k++) {
      const LTPad *pd = &pads[k];
      if (r >> k & 1u) {
        soff += pd->full * c.ss[pd->outer];
        doff += pd->full * c.ds[pd->outer];
        rc.shape[pd->outer] = 1;
        rc.shape[pd->reduced] = pd->rem;
      }
    }
    bool empty = false;
    for (int32_t d = 0; d < rc.nd; d++) empty = empty || rc.shape[d] == 0;
    if (empty) continue;
    rc.src = v.data + soff * (int64_t)elem;
    rc.dst = obase + doff * (int64_t)elem;
    kc_run(&rc, a->num_threads);
  }
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* full, zeros, ones                                                                           */

/* One element of dtype `to` holding the value of the element at p (dtype `from`), converted as
 * TVM's cast: same dtype copies the bytes; float to integer truncates (saturating here). */
static int convert_elem(const void *p, DLDataType from, DLDataType to, unsigned char *pat) {
  size_t fe, te;
  if (k_elem(from, "fill_value", &fe) != 0 || k_elem(to, "result", &te) != 0) return -1;
  memset(pat, 0, 8);
  if (gp_dtype_eq(from, to)) {
    memcpy(pat, p, te);
    return 0;
  }
  int kf, kt;
  if (gp_k_dtype_check(from, "fill_value", &kf) != 0 || gp_k_dtype_check(to, "result", &kt) != 0) return -1;
  if (gp_k_is_float(kf))
    gp_k_store_f64(pat, kt, gp_k_load_f64(p, kf));
  else
    gp_k_store_i64(pat, kt, gp_k_load_i64(p, kf));
  return 0;
}

/* full_like (user non-NULL): inputs (data, fill_value); data is not read. */
static int k_full(const GPKernelArgs *a, void *user) {
  if (k_counts(a, user ? 2 : 1, 1) != 0) return -1;
  const DLTensor *fill = a->inputs[user ? 1 : 0];
  DLTensor *out = a->outputs[0];
  if (gp_k_numel(fill) != 1) return shape_mismatch("fill_value");
  unsigned char pat[8];
  size_t elem;
  if (k_elem(out->dtype, "result", &elem) != 0) return -1;
  GPKView v;
  gp_k_view(fill, &v);
  if (convert_elem(v.data, fill->dtype, out->dtype, pat) != 0) return -1;
  int64_t n = gp_k_numel(out);
  if (n > 0) k_fill(out_data(out), n, pat, elem, a->num_threads);
  return 0;
}

/* zeros_like / ones_like pass data (user non-NULL: one input, its data not read). */
static int k_zeros(const GPKernelArgs *a, void *user) {
  if (k_counts(a, user ? 1 : 0, 1) != 0) return -1;
  DLTensor *out = a->outputs[0];
  size_t elem;
  if (k_elem(out->dtype, "result", &elem) != 0) return -1;
  int64_t n = gp_k_numel(out);
  static const unsigned char zero[8] = {0};
  if (n > 0) k_fill(out_data(out), n, zero, elem, a->num_threads);
  return 0;
}

static int k_ones(const GPKernelArgs *a, void *user) {
  if (k_counts(a, user ? 1 : 0, 1) != 0) return -1;
  DLTensor *out = a->outputs[0];
  size_t elem;
  if (k_elem(out->dtype, "result", &elem) != 0) return -1;
  unsigned char pat[8] = {0};
  int8_t one = 1;
  if (convert_elem(&one, GP_DT_I8, out->dtype, pat) != 0) return -1;
  int64_t n = gp_k_numel(out);
  if (n > 0) k_fill(out_data(out), n, pat, elem, a->num_threads);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* shape_of                                                                                    */

/* The input's extents in the result's dtype (the type relation's: attribute dtype, unset reads
 * as int32); integers wrap as C's conversion, like TVM's cast.  A rank-0 input gives a rank-0
 * result (TVM's RankShape), written 0. */
static int k_shape_of(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, 1, 1) != 0) return -1;
  const DLTensor *in = a->inputs[0];
  DLTensor *out = a->outputs[0];
  int k;
  if (gp_k_dtype_check(out->dtype, "result", &k) != 0) return -1;
  int64_t n = gp_k_numel(out);
  if (n != (in->ndim ? in->ndim : 1)) return shape_mismatch("the result");
  size_t elem = gp_k_elem_size(k);
  char *d = out_data(out);
  for (int64_t i = 0; i < n; i++) gp_k_store_i64(d + i * (int64_t)elem, k, i < in->ndim ? in->shape[i] : 0);
  return 0;
}


/* ------------------------------------------------------------------------------------------ */
/* tile, broadcast_to: copies whose source strides are 0 along repeated axes                  */

static int k_tile(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, 1, 1) != 0) return -1;
  const DLTensor *in = a->inputs[0];
  DLTensor *out = a->outputs[0];
  size_t elem;
  if (k_elem(in->dtype, "data", &elem) != 0) return -1;
  int32_t no = out->ndim, nd = in->ndim;
  if (no < nd) return shape_mismatch("the result");
  if (gp_k_numel(out) == 0) return 0;
  GPKView v;
  gp_k_view(in, &v);
  /* index space (r0, d0, r1, d1, ...): dst compact, src stride 0 along each r */
  KCopy c;
  c.src = v.data;
  c.dst = out_data(out);
  c.elem = (int64_t)elem;
  c.nd = 2 * no;
  int64_t ost[GP_K_MAX_RANK];
  compact_strides(no, out->shape, ost);
  for (int32_t i = 0; i < no; i++) {
    int32_t di = i - (no - nd);
    int64_t d = di >= 0 ? in->shape[di] : 1;
    if (d == 0 || out->shape[i] % d != 0) return shape_mismatch("the result");
    c.shape[2 * i] = out->shape[i] / d;
    c.ss[2 * i] = 0;
    c.ds[2 * i] = d * ost[i];
    c.shape[2 * i + 1] = d;
    c.ss[2 * i + 1] = di >= 0 ? v.strides[di] : 0;
    c.ds[2 * i + 1] = ost[i];
  }
  kc_run(&c, a->num_threads);
  return 0;
}

/* repeat: index space (.., d_p, r, ..): dst compact, src stride 0 along r. */
static int k_repeat(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, 1, 1) != 0) return -1;
  const DLTensor *in = a->inputs[0];
  DLTensor *out = a->outputs[0];
  size_t elem;
  if (k_elem(in->dtype, "data", &elem) != 0) return -1;
  int32_t nd = in->ndim;
  if (out->ndim != nd || nd < 1) return shape_mismatch("the result");
  if (gp_k_numel(out) == 0) return 0;
  const GPAttrValue *ax = a->attrs ? gp_attrs_get(a->attrs, "axis") : NULL;
  int64_t axis = ax ? ax->i : 0;
  int32_t p = (int32_t)(axis < 0 ? axis + nd : axis);
  if (p < 0 || p >= nd || in->shape[p] == 0 || out->shape[p] % in->shape[p] != 0) return shape_mismatch("the result");
  int64_t r = out->shape[p] / in->shape[p];
  GPKView v;
  gp_k_view(in, &v);
  KCopy c;
  c.src = v.data;
  c.dst = out_data(out);
  c.elem = (int64_t)elem;
  c.nd = nd + 1;
  int64_t ost[GP_K_MAX_RANK];
  compact_strides(nd, out->shape, ost);
  for (int32_t i = 0, k = 0; i < nd; i++) {
    if (out->shape[i] != (i == p ? in->shape[i] * r : in->shape[i])) return shape_mismatch("the result");
    c.shape[k] = in->shape[i];
    c.ss[k] = v.strides[i];
    c.ds[k++] = i == p ? r * ost[i] : ost[i];
    if (i == p) {
      c.shape[k] = r;
      c.ss[k] = 0;
      c.ds[k++] = ost[i];
    }
  }
  kc_run(&c, a->num_threads);
  return 0;
}

/* broadcast_to_like (user non-NULL) passes broadcast_type, not read. */
static int k_broadcast_to(const GPKernelArgs *a, void *user) {
  if (k_counts(a, user ? 2 : 1, 1) != 0) return -1;
  const DLTensor *in = a->inputs[0];
  DLTensor *out = a->outputs[0];
  size_t elem;
  if (k_elem(in->dtype, "data", &elem) != 0) return -1;
  int32_t no = out->ndim, nd = in->ndim;
  if (no < nd) return shape_mismatch("the result");
  for (int32_t i = 0; i < nd; i++) {
    int64_t d = in->shape[i], o = out->shape[no - nd + i];
    if (d != 1 && d != o) return shape_mismatch("the result");
  }
  if (gp_k_numel(out) == 0) return 0;
  GPKView v;
  gp_k_view(in, &v);
  KCopy c;
  c.src = v.data;
  c.dst = out_data(out);
  c.elem = (int64_t)elem;
  c.nd = no;
  compact_strides(no, out->shape, c.ds);
  for (int32_t i = 0; i < no; i++) {
    int32_t di = i - (no - nd);
    c.shape[i] = out->shape[i];
    c.ss[i] = di >= 0 && in->shape[di] != 1 ? v.strides[di] : 0;
  }
  kc_run(&c, a->num_threads);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* collapse_sum_like, collapse_sum_to: the sum of data over the axes the result broadcasts
 * along (TVM's topi::collapse_sum); the second input is not read.  Floats accumulate in
 * double, integers in int64 (wrapping as the store converts). */

static int k_collapse_sum(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, 2, 1) != 0) return -1;
  const DLTensor *in = a->inputs[0];
  DLTensor *out = a->outputs[0];
  int ki, ko;
  if (gp_k_dtype_check(in->dtype, "data", &ki) != 0 || gp_k_dtype_check(out->dtype, "result", &ko) != 0) return -1;
  int32_t nd = in->ndim, no = out->ndim;
  if (no > nd) return shape_mismatch("the result");
  for (int32_t i = 0; i < no; i++) {
    int64_t o = out->shape[i], d = in->shape[nd - no + i];
    if (o != 1 && o != d) return shape_mismatch("the result");
  }
  int64_t nout = gp_k_numel(out), nin = gp_k_numel(in);
  if (nout == 0) return 0;
  bool fl = gp_k_is_float(ki);
  double *accf = fl ? gp_malloc((size_t)nout * sizeof(double)) : NULL;
  int64_t *acci = fl ? NULL : gp_malloc((size_t)nout * sizeof(int64_t));
  for (int64_t j = 0; j < nout; j++) {
    if (fl) accf[j] = 0;
    else acci[j] = 0;
  }
  GPKView v;
  gp_k_view(in, &v);
  int64_t ost[GP_K_MAX_RANK], idx[GP_K_MAX_RANK] = {0};
  compact_strides(no, out->shape, ost);
  for (int64_t f = 0; f < nin; f++) {
    int64_t o = 0, off = 0;
    for (int32_t i = 0; i < nd; i++) {
      off += idx[i] * v.strides[i];
      int32_t oi = i - (nd - no);
      if (oi >= 0 && out->shape[oi] != 1) o += idx[i] * ost[oi];
    }
    const char *p = v.data + off * (int64_t)v.elem;
    if (fl) accf[o] += gp_k_load_f64(p, ki);
    else acci[o] = (int64_t)((uint64_t)acci[o] + (uint64_t)gp_k_load_i64(p, ki));
    for (int32_t i = nd - 1; i >= 0; i--) { /* next row-major index */
      if (++idx[i] < in->shape[i]) break;
      idx[i] = 0;
    }
  }
  char *dst = out_data(out);
  size_t oe = gp_k_elem_size(ko);
  for (int64_t j = 0; j < nout; j++) {
    if (fl) gp_k_store_f64(dst + j * (int64_t)oe, ko, accf[j]);
    else gp_k_store_i64(dst + j * (int64_t)oe, ko, acci[j]);
  }
  gp_free(accf);
  gp_free(acci);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* nn.pad                                                                                      */

enum { PAD_CONSTANT, PAD_EDGE, PAD_REFLECT, PAD_WRAP };

/* Source index along an axis of extent d for output index o shifted by `before`; -1: pad value. */
static int64_t pad_src(int64_t o, int64_t before, int64_t d, int mode) {
  int64_t i = o - before;
  if (i >= 0 && i < d) return i;
  switch (mode) {
  case PAD_EDGE: return i < 0 ? 0 : d - 1;
  case PAD_REFLECT: {
    if (d == 1) return 0;
    int64_t p = 2 * (d - 1), m = i % p;
    if (m < 0) m += p;
    return m >= d ? p - m : m;
  }
  case PAD_WRAP: {
    int64_t m = i % d;
    return m < 0 ? m + d : m;
  }
  default: return -1;
  }
}

static int k_pad(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, 2, 1) != 0) return -1;
  const DLTensor *in = a->inputs[0];
  DLTensor *out = a->outputs[0];
  size_t elem;
  if (k_elem(in->dtype, "data", &elem) != 0) return -1;
  const char *ms = gp_ops_attr_str(a->op, a->attrs, "pad_mode");
  int mode = strcmp(ms, "constant") == 0 ? PAD_CONSTANT
             : strcmp(ms, "edge") == 0   ? PAD_EDGE
             : strcmp(ms, "reflect") == 0 ? PAD_REFLECT
             : strcmp(ms, "wrap") == 0    ? PAD_WRAP
                                          : -1;
  if (mode < 0) {
    gp_error_set(GP_ERR_UNSUPPORTED, "pad_mode \"%s\"", ms);
    return -1;
  }
  int32_t nd = in->ndim, n;
  const int64_t *pw = gp_ops_attr_ints(a->op, a->attrs, "pad_width", &n);
  if (n != 2 * nd || out->ndim != nd) return shape_mismatch("the result");
  for (int32_t i = 0; i < nd; i++) {
    if (out->shape[i] != in->shape[i] + pw[2 * i] + pw[2 * i + 1]) return shape_mismatch("the result");
    if (in->shape[i] == 0 && out->shape[i] > 0 && mode != PAD_CONSTANT) {
      gp_error_set(GP_ERR_VALUE, "pad_mode %s cannot pad an empty axis %d", ms, (int)i);
      return -1;
    }
  }
  unsigned char pat[8];
  if (gp_k_numel(a->inputs[1]) != 1) return shape_mismatch("pad_value");
  GPKView pv;
  gp_k_view(a->inputs[1], &pv);
  if (convert_elem(pv.data, a->inputs[1]->dtype, out->dtype, pat) != 0) return -1;
  int64_t total = gp_k_numel(out);
  if (total == 0) return 0;
  GPKView v;
  gp_k_view(in, &v);
  int64_t inner = out->shape[nd - 1 >= 0 ? nd - 1 : 0];
  if (nd == 0) {
    memcpy(out_data(out), v.data, elem);
    return 0;
  }
  /* per output row: map the outer coordinates, then each element of the row */
  int64_t rows = total / inner, idx[GP_K_MAX_RANK] = {0}, e = (int64_t)elem;
  int64_t *col = gp_malloc((size_t)inner * sizeof(int64_t));
  int32_t q = nd - 1;
  for (int64_t j = 0; j < inner; j++) col[j] = pad_src(j, pw[2 * q], in->shape[q], mode);
  char *dst = out_data(out);
  for (int64_t r = 0; r < rows; r++, dst += inner * e) {
    int64_t off = 0;
    bool pad = false;
    for (int32_t d = 0; d < q; d++) {
      int64_t s = pad_src(idx[d], pw[2 * d], in->shape[d], mode);
      if (s < 0) pad = true;
      else off += s * v.strides[d];
    }
    if (pad) {
      if (elem == 1) memset(dst, pat[0], (size_t)inner);
      else for (int64_t j = 0; j < inner; j++) memcpy(dst + j * e, pat, elem);
    } else {
      const char *src = v.data + off * e;
      for (int64_t j = 0; j < inner; j++)
        memcpy(dst + j * e, col[j] < 0 ? (const char *)pat : src + col[j] * v.strides[q] * e, elem);
    }
    for (int32_t d = q - 1; d >= 0; d--) {
      if (++idx[d] < out->shape[d]) break;
      idx[d] = 0;
    }
  }
  gp_free(col);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* nn.depth_to_space, nn.space_to_depth: 6-d strided copies                                    */

static int subpixel(const GPKernelArgs *a, bool to_space) {
  if (k_counts(a, 1, 1) != 0) return -1;
  const DLTensor *in = a->inputs[0];
  DLTensor *out = a->outputs[0];
  size_t elem;
  if (k_elem(in->dtype, "data", &elem) != 0) return -1;
  int64_t b = gp_ops_attr_int(a->op, a->attrs, "block_size");
  bool crd = strcmp(gp_ops_attr_str(a->op, a->attrs, "mode"), "CRD") == 0;
  if (in->ndim != 4 || out->ndim != 4 || b < 1) return shape_mismatch("the result");
  if (gp_k_numel(out) == 0) return 0;
  if (gp_k_numel(out) != gp_k_numel(in)) return shape_mismatch("the result");
  GPKView v;
  gp_k_view(in, &v);
  KCopy c;
  c.src = v.data;
  c.dst = out_data(out);
  c.elem = (int64_t)elem;
  c.nd = 6;
  const int64_t *s = v.strides;
  if (to_space) { /* out (N, C', H, b, W, b), in channel (i*b + j)*C' + c (DCR) or c*b*b + i*b + j */
    int64_t C2 = out->shape[1], H = in->shape[2], W = in->shape[3];
    int64_t sh[6] = {in->shape[0], C2, H, b, W, b};
    int64_t ss[6] = {s[0], crd ? b * b * s[1] : s[1], s[2], crd ? b * s[1] : b * C2 * s[1], s[3],
                     crd ? s[1] : C2 * s[1]};
    memcpy(c.shape, sh, sizeof sh);
    memcpy(c.ss, ss, sizeof ss);
  } else { /* out (N, b, b, C, H', W'), channel (i*b + j)*C + c; in (n, c, h*b + i, w*b + j) */
    int64_t C = in->shape[1], H2 = out->shape[2], W2 = out->shape[3];
    int64_t sh[6] = {in->shape[0], b, b, C, H2, W2};
    int64_t ss[6] = {s[0], s[2], s[3], s[1], b * s[2], b * s[3]};
    memcpy(c.shape, sh, sizeof sh);
    memcpy(c.ss, ss, sizeof ss);
  }
  compact_strides(6, c.shape, c.ds);
  kc_run(&c, a->num_threads);
  return 0;
}

static int k_depth_to_space(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return subpixel(a, true);
}

static int k_space_to_depth(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return subpixel(a, false);
}

/* ------------------------------------------------------------------------------------------ */
/* nn.space_to_batch_nd, nn.batch_to_space_nd                                                  */

/* TVM's topi (include/tvm/topi/nn.h) with M spatial dims, block b[k], P = prod(b), batch N:
 *   space_to_batch_nd: out[(r * N) + n, j_1, ..., j_M, rest] = padded[n, j_k * b_k + r_k, rest]
 *   batch_to_space_nd: out[n, o_1, ..., o_M, rest] = in[(r * N') + n, (o_k + c_k) / b_k, rest]
 *                      with r_k = (o_k + c_k) % b_k, N' = N / P, c_k the crop before dim k
 * where r is the block offset (r_1, ..., r_M) in row-major order (r_M fastest).  One output row
 * (the trailing `rest` dims, compact) is one memcpy from the compact input, or the pad value. */
typedef struct SBCtx {
  const char *src;
  char *dst;
  size_t elem;
  bool to_batch;      /* space_to_batch_nd */
  int32_t m;
  int64_t rest;       /* elements per row */
  int64_t nbatch;     /* N of space_to_batch's input, N' of batch_to_space's output */
  const int64_t *block, *pairs; /* paddings or crops, (before, after) per spatial dim */
  const int64_t *ishape, *oshape;
  const unsigned char *pat;
} SBCtx;

static void sb_rows(void *ctx, int64_t begin, int64_t end) {
  const SBCtx *c = ctx;
  int64_t e = (int64_t)c->elem, rb = c->rest * e;
  for (int64_t row = begin; row < end; row++) {
    int64_t q = row, sp[GP_K_MAX_RANK];
    for (int32_t k = c->m; k >= 1; k--) {
      sp[k] = q % c->oshape[k];
      q /= c->oshape[k];
    }
    char *d = c->dst + row * rb;
    int64_t src = 0;
    bool pad = false;
    if (c->to_batch) { /* q: output batch = blk * N + n */
      int64_t n = q % c->nbatch, blk = q / c->nbatch, r[GP_K_MAX_RANK];
      for (int32_t k = c->m; k >= 1; k--) {
        r[k] = blk % c->block[k - 1];
        blk /= c->block[k - 1];
      }
      src = n;
      for (int32_t k = 1; k <= c->m; k++) {
        int64_t i = sp[k] * c->block[k - 1] + r[k] - c->pairs[2 * (k - 1)];
        if (i < 0 || i >= c->ishape[k]) pad = true;
        src = src * c->ishape[k] + i;
      }
    } else { /* q: output batch n */
      int64_t blk = 0, in_sp[GP_K_MAX_RANK];
      for (int32_t k = 1; k <= c->m; k++) {
        int64_t o = sp[k] + c->pairs[2 * (k - 1)];
        blk = blk * c->block[k - 1] + o % c->block[k - 1];
        in_sp[k] = o / c->block[k - 1];
      }
      src = blk * c->nbatch + q;
      for (int32_t k = 1; k <= c->m; k++) src = src * c->ishape[k] + in_sp[k];
    }
    if (!pad) {
      memcpy(d, c->src + src * rb, (size_t)rb);
    } else if (e == 1) {
      memset(d, c->pat[0], (size_t)c->rest);
    } else {
      for (int64_t j = 0; j < c->rest; j++) memcpy(d + j * e, c->pat, c->elem);
    }
  }
}

static int space_batch(const GPKernelArgs *a, bool to_batch) {
  if (k_counts(a, 1, 1) != 0) return -1;
  const DLTensor *in = a->inputs[0];
  DLTensor *out = a->outputs[0];
  size_t elem;
  if (k_elem(in->dtype, "data", &elem) != 0) return -1;
  int32_t m, np, nd = in->ndim;
  const int64_t *block = gp_ops_attr_ints(a->op, a->attrs, "block_shape", &m);
  const int64_t *pairs = gp_ops_attr_ints(a->op, a->attrs, to_batch ? "paddings" : "crops", &np);
  if (m < 1 || m >= nd || np != 2 * m || out->ndim != nd) return shape_mismatch("the result");
  int64_t prod = 1;
  for (int32_t k = 0; k < m; k++) prod *= block[k];
  int64_t nbatch = to_batch ? in->shape[0] : out->shape[0];
  if ((to_batch ? out->shape[0] : in->shape[0]) != nbatch * prod) return shape_mismatch("the result");
  for (int32_t k = 1; k <= m; k++) {
    int64_t b = block[k - 1], p0 = pairs[2 * (k - 1)], p1 = pairs[2 * (k - 1) + 1];
    int64_t want = to_batch ? (in->shape[k] + p0 + p1) / b : in->shape[k] * b - p0 - p1;
    if (out->shape[k] != want || (to_batch && (in->shape[k] + p0 + p1) % b != 0))
      return shape_mismatch("the result");
  }
  int64_t rest = 1;
  for (int32_t k = m + 1; k < nd; k++) {
    if (out->shape[k] != in->shape[k]) return shape_mismatch("the result");
    rest *= in->shape[k];
  }
  unsigned char pat[8] = {0};
  double pv = to_batch ? gp_ops_attr_float(a->op, a->attrs, "pad_value") : 0.0;
  if (pv != 0.0) { /* zero is all-zero bytes in every dtype moved here */
    int kt;
    if (gp_k_dtype_check(out->dtype, "result", &kt) != 0) return -1;
    gp_k_store_f64(pat, kt, pv);
  }
  int64_t n = gp_k_numel(out);
  if (n == 0) return 0;
  void *scratch = NULL;
  const char *src = gp_k_compact(in, &scratch);
  SBCtx c = {.src = src, .dst = out_data(out), .elem = elem, .to_batch = to_batch, .m = m, .rest = rest,
             .nbatch = nbatch, .block = block, .pairs = pairs, .ishape = in->shape, .oshape = out->shape,
             .pat = pat};
  int64_t row_bytes = rest * (int64_t)elem;
  int64_t grain = row_bytes >= KC_GRAIN_BYTES ? 1 : KC_GRAIN_BYTES / row_bytes;
  gp_k_parallel_for(a->num_threads, n / rest, grain, sb_rows, &c);
  gp_free(scratch);
  return 0;
}

static int k_space_to_batch_nd(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return space_batch(a, true);
}

static int k_batch_to_space_nd(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return space_batch(a, false);
}

/* ------------------------------------------------------------------------------------------ */
/* stack, reverse_sequence                                                                     */

static int k_stack(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, -1, 1) != 0) return -1;
  DLTensor *out = a->outputs[0];
  size_t elem;
  if (k_elem(out->dtype, "result", &elem) != 0) return -1;
  int32_t no = out->ndim, nd = no - 1, axis;
  if (nd < 0) return shape_mismatch("the result");
  if (norm_axis(gp_ops_attr_int(a->op, a->attrs, "axis"), no, &axis) != 0) return -1;
  if (out->shape[axis] != a->num_inputs) return shape_mismatch("the result");
  int64_t ost[GP_K_MAX_RANK];
  compact_strides(no, out->shape, ost);
  for (int32_t k = 0; k < a->num_inputs; k++) {
    const DLTensor *in = a->inputs[k];
    size_t ie;
    if (k_elem(in->dtype, "data", &ie) != 0) return -1;
    if (ie != elem || in->ndim != nd) return shape_mismatch("a field of data");
    for (int32_t d = 0; d < nd; d++)
      if (in->shape[d] != out->shape[d < axis ? d : d + 1]) return shape_mismatch("a field of data");
    if (gp_k_numel(in) == 0) continue;
    GPKView v;
    gp_k_view(in, &v);
    KCopy c;
    kc_from_view(&c, &v, elem);
    c.dst = out_data(out) + (int64_t)k * ost[axis] * (int64_t)elem;
    for (int32_t d = 0; d < nd; d++) c.ds[d] = ost[d < axis ? d : d + 1];
    kc_run(&c, a->num_threads);
  }
  return 0;
}

static int k_reverse_sequence(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (k_counts(a, 2, 1) != 0) return -1;
  const DLTensor *in = a->inputs[0], *lt = a->inputs[1];
  DLTensor *out = a->outputs[0];
  size_t elem;
  if (k_elem(in->dtype, "data", &elem) != 0) return -1;
  int32_t nd = in->ndim, sa, ba;
  if (nd < 2 || out->ndim != nd) return shape_mismatch("the result");
  if (norm_axis(gp_ops_attr_int(a->op, a->attrs, "seq_axis"), nd, &sa) != 0 ||
      norm_axis(gp_ops_attr_int(a->op, a->attrs, "batch_axis"), nd, &ba) != 0)
    return -1;
  int lk;
  if (gp_k_dtype_check(lt->dtype, "seq_lengths", &lk) != 0) return -1;
  if (lt->ndim != 1 || lt->shape[0] != in->shape[ba]) return shape_mismatch("seq_lengths");
  int64_t n = gp_k_numel(out);
  if (n == 0) return 0;
  GPKView v, lv;
  gp_k_view(in, &v);
  gp_k_view(lt, &lv);
  int64_t T = in->shape[sa];
  for (int64_t b = 0; b < in->shape[ba]; b++) {
    int64_t L = gp_k_load_i64(lv.data + b * lv.strides[0] * (int64_t)lv.elem, lk);
    if (L < 0 || L > T) {
      gp_error_set(GP_ERR_VALUE, "seq_lengths[%lld] = %lld is out of range [0, %lld]", (long long)b, (long long)L,
                   (long long)T);
      return -1;
    }
  }
  int64_t idx[GP_K_MAX_RANK] = {0}, e = (int64_t)elem;
  char *dst = out_data(out);
  for (int64_t f = 0; f < n; f++, dst += e) {
    int64_t L = gp_k_load_i64(lv.data + idx[ba] * lv.strides[0] * (int64_t)lv.elem, lk), off = 0;
    for (int32_t d = 0; d < nd; d++) {
      int64_t i = idx[d];
      if (d == sa && i < L) i = L - 1 - i;
      off += i * v.strides[d];
    }
    memcpy(dst, v.data + off * e, elem);
    for (int32_t d = nd - 1; d >= 0; d--) {
      if (++idx[d] < out->shape[d]) break;
      idx[d] = 0;
    }
  }
  return 0;
}
/* ------------------------------------------------------------------------------------------ */

/* The *_like forms: the kernel of their concrete op, told (user non-NULL) to expect the extra
 * input whose data it does not read. */
static const int k_like = 1;
static int k_reshape_like(const GPKernelArgs *a, void *u) { GP_UNUSED(u); return k_reshape(a, (void *)&k_like); }
static int k_zeros_like(const GPKernelArgs *a, void *u) { GP_UNUSED(u); return k_zeros(a, (void *)&k_like); }
static int k_ones_like(const GPKernelArgs *a, void *u) { GP_UNUSED(u); return k_ones(a, (void *)&k_like); }
static int k_full_like(const GPKernelArgs *a, void *u) { GP_UNUSED(u); return k_full(a, (void *)&k_like); }
static int k_broadcast_to_like(const GPKernelArgs *a, void *u) {
  GP_UNUSED(u);
  return k_broadcast_to(a, (void *)&k_like);
}

void gp_kernels_register_transform(void) {
  gp_kernel_set("reshape", k_reshape);
  gp_kernel_set("annotation.compiler_begin", k_identity);
  gp_kernel_set("annotation.compiler_end", k_identity);
  gp_kernel_set("squeeze", k_reshape);
  gp_kernel_set("expand_dims", k_reshape);
  gp_kernel_set("nn.batch_flatten", k_reshape);
  gp_kernel_set("transpose", k_transpose);
  gp_kernel_set("concatenate", k_concatenate);
  gp_kernel_set("split", k_split);
  gp_kernel_set("strided_slice", k_strided_slice);
  gp_kernel_set("layout_transform", k_layout_transform);
  gp_kernel_set("full", k_full);
  gp_kernel_set("zeros", k_zeros);
  gp_kernel_set("ones", k_ones);
  gp_kernel_set("shape_of", k_shape_of);
  gp_kernel_set("tile", k_tile);
  gp_kernel_set("repeat", k_repeat);
  gp_kernel_set("broadcast_to", k_broadcast_to);
  gp_kernel_set("nn.pad", k_pad);
  gp_kernel_set("collapse_sum_like", k_collapse_sum);
  gp_kernel_set("collapse_sum_to", k_collapse_sum);
  gp_kernel_set("contrib_reverse_reshape", k_reshape);
  gp_kernel_set("reshape_like", k_reshape_like);
  gp_kernel_set("zeros_like", k_zeros_like);
  gp_kernel_set("ones_like", k_ones_like);
  gp_kernel_set("full_like", k_full_like);
  gp_kernel_set("broadcast_to_like", k_broadcast_to_like);
  gp_kernel_set("nn.depth_to_space", k_depth_to_space);
  gp_kernel_set("nn.space_to_depth", k_space_to_depth);
  gp_kernel_set("nn.space_to_batch_nd", k_space_to_batch_nd);
  gp_kernel_set("nn.batch_to_space_nd", k_batch_to_space_nd);
  gp_kernel_set("stack", k_stack);
  gp_kernel_set("reverse_sequence", k_reverse_sequence);
}
