/*
 * k_reduce.c -- reference kernels of sum and mean (ir/ops/ops_reduce.c; TVM's ReduceRel), and of
 * max, min, prod, all, any, argmax and argmin (below).
 *
 * Axes: `axis` None reduces every axis (exclude does not apply); a list (negative entries count
 * from the end) reduces those axes, or with exclude=True every other axis; an empty list
 * reduces nothing (sum is then a copy), as the type relation says.  keepdims only changes the
 * output shape.
 *
 * Accumulation: float16/32/64 in double, integers and bool in 64-bit two's complement (wrapping,
 * computed unsigned), so sum of integers equals the sum wrapped into the dtype.  mean of floats
 * is sum / count rounded once into the dtype; mean of integers is the exact int64 sum divided
 * by count, truncated toward zero (TVM truncates too, but sums in the dtype first, so TVM's
 * mean of int8 [100, 100] wraps and ours is 100).  bool sums as 0/1 and stores x != 0 (sum is
 * "any", mean "all").  Over zero elements: sum 0; mean NaN for floats, 0 for integers.
 * Results do not depend on num_threads: the work splits into blocks fixed by the shapes alone
 * and partial sums combine in a fixed order.
 *
 * Method: size-1 axes are dropped and neighbours of the same kind (kept / reduced) merged when
 * the input is contiguous across them.  When the last axis is reduced, each output element sums
 * its reduced elements with an odometer whose inner loop runs along that axis.  When the last
 * axis is kept, outputs are taken in segments of up to K_SEG along it, accumulated side by side
 * (a vectorizable row add) while an odometer walks the reduced axes.  Large reductions are cut
 * into blocks of the reduced index space whose partial sums are added afterwards; (segment,
 * block) pairs are the units of gp_k_parallel_for.
 */
#include "eval/kernel.h"

#include <math.h>
#include <stdint.h>

#define K_GRAIN 65536     /* input elements per thread, at least */
#define K_SEG 1024        /* outputs accumulated side by side when the last axis is kept */
#define K_BLOCK_WORK 65536 /* input elements per block of a split reduction */
#define K_MAXR GP_K_MAX_RANK

typedef struct RJob {
  int32_t kd;
  bool mean, seg;
  const char *in;
  char *out;
  int64_t oel;
  int32_t nq; /* "outer" kept axes: all kept axes, or all but the last when seg */
  int64_t qext[K_MAXR], qstr[K_MAXR];
  int32_t nr; /* reduced axes; at least 1 unless seg */
  int64_t rext[K_MAXR], rstr[K_MAXR];
  int64_t kin, kstr, spr; /* seg: extent and stride of the last kept axis, segments per run */
  int64_t red_n, blk_len, nblk;
  void *part; /* out_n * nblk partial sums (double or uint64_t) when nblk > 1 */
} RJob;

static void put_f(const RJob *j, int64_t o, double s) {
  gp_k_store_f64(j->out + o * j->oel, j->kd, j->mean ? s / (double)j->red_n : s);
}

static void put_i(const RJob *j, int64_t o, uint64_t s) {
  int64_t v = (int64_t)s; /* two's complement */
  gp_k_store_i64(j->out + o * j->oel, j->kd, j->mean ? v / j->red_n : v);
}

/* The additive identity: -0.0 for doubles (-0.0 + x is x, also for x = -0.0), 0 for integers. */
#define K_ZERO(ACC) ((ACC)-0.0)

#define PUT(j, o, s) _Generic((s), double: put_f, uint64_t: put_i)((j), (o), (s))

/* X(dtype, storage type, accumulator, load expression of v) */
#define K_RED_TYPES(X)                                        \
  X(BOOL, uint8_t, uint64_t, (uint64_t)(v != 0))              \
  X(U8, uint8_t, uint64_t, (uint64_t)v)                       \
  X(I8, int8_t, uint64_t, (uint64_t)v)                        \
  X(I16, int16_t, uint64_t, (uint64_t)v)                      \
  X(I32, int32_t, uint64_t, (uint64_t)v)                      \
  X(I64, int64_t, uint64_t, (uint64_t)v)                      \
  X(F16, uint16_t, double, (double)gp_f16_to_f32(v))          \
  X(F32, float, double, (double)v)                            \
  X(F64, double, double, v)

/* Units [u0, u1): unit u is segment u / nblk (one output unless seg), block u % nblk. */
#define K_DEF_RED(D, ST, ACC, LOAD)                                                              \
  static inline ACC ld_##D(ST v) { return LOAD; }                                                \
  static void red_##D(void *ctx, int64_t u0, int64_t u1) {                                       \
    const RJob *j = ctx;                                                                         \
    const ST *in = (const ST *)(const void *)j->in;                                              \
    int64_t nblk = j->nblk, spr = j->spr;                                                        \
    int64_t s = u0 / nblk, blk = u0 - s * nblk;                                                  \
    int64_t q = s / spr, part = s - q * spr;                                                     \
    int64_t qidx[K_MAXR], qofs = 0, ridx[K_MAXR];                                                \
    for (int32_t a = 0; a < j->nq; a++) qidx[a] = 0;                                             \
    {                                                                                            \
      int64_t t = q;                                                                             \
      for (int32_t a = j->nq - 1; a >= 0 && t; a--) {                                            \
        qidx[a] = t % j->qext[a];                                                                \
        t /= j->qext[a];                                                                         \
        qofs += qidx[a] * j->qstr[a];                                                            \
      }                                                                                          \
    }                                                                                            \
    ACC acc[K_SEG];                                                                              \
    for (int64_t u = u0; u < u1; u++) {                                                          \
      int64_t ostart = q * j->kin + part * K_SEG;                                                \
      int64_t len = j->seg ? (j->kin - part * K_SEG < K_SEG ? j->kin - part * K_SEG : K_SEG) : 1; \
      const ST *base = in + qofs + part * K_SEG * j->kstr;                                       \
      int64_t r0 = blk * j->blk_len, r1 = r0 + j->blk_len < j->red_n ? r0 + j->blk_len : j->red_n; \
      int64_t rofs = 0;                                                                          \
      {                                                                                          \
        int64_t t = r0;                                                                          \
        for (int32_t a = j->nr - 1; a >= 0; a--) {                                               \
          ridx[a] = t % j->rext[a];                                                              \
          t /= j->rext[a];                                                                       \
          rofs += ridx[a] * j->rstr[a];                                                          \
        }                                                                                        \
      }                                                                                          \
      if (!j->seg) {                                                                             \
        /* the last axis is reduced: runs along it */                                            \
        int32_t ni = j->nr - 1;                                                                  \
        int64_t rin = j->rext[ni], rs = j->rstr[ni], ci = ridx[ni];                              \
        int64_t outer = rofs - ci * rs;                                                          \
        ACC sum = K_ZERO(ACC);                                                                   \
        for (int64_t r = r0; r < r1;) {                                                          \
          int64_t n = rin - ci < r1 - r ? rin - ci : r1 - r;                                     \
          const ST *p = base + outer + ci * rs;                                                  \
          if (rs == 1) { /* four lanes: no single dependency chain */                          \
            ACC s0 = K_ZERO(ACC), s1 = K_ZERO(ACC), s2 = K_ZERO(ACC), s3 = K_ZERO(ACC);          \
            int64_t k = 0;                                                                       \
            for (; k + 4 <= n; k += 4) {                                                         \
              s0 += ld_##D(p[k]);                                                                \
              s1 += ld_##D(p[k + 1]);                                                            \
              s2 += ld_##D(p[k + 2]);                                                            \
              s3 += ld_##D(p[k + 3]);                                                            \
            }                                                                                    \
            for (; k < n; k++) s0 += ld_##D(p[k]);                                               \
            sum += (s0 + s1) + (s2 + s3);                                                        \
          } else {                                                                               \
            for (int64_t k = 0; k < n; k++) sum += ld_##D(p[k * rs]);                            \
          }                                                                                      \
          r += n;                                                                                \
          ci += n;                                                                               \
          if (ci == rin && r < r1) {                                                             \
            ci = 0;                                                                              \
            for (int32_t a = ni - 1; a >= 0; a--) {                                              \
              outer += j->rstr[a];                                                               \
              if (++ridx[a] < j->rext[a]) break;                                                 \
              outer -= j->rstr[a] * j->rext[a];                                                  \
              ridx[a] = 0;                                                                       \
            }                                                                                    \
          }                                                                                      \
        }                                                                                        \
        acc[0] = sum;                                                                            \
      } else {                                                                                   \
        /* the last axis is kept: len outputs side by side, the reduced axes by odometer */      \
        int64_t ks = j->kstr;                                                                    \
        for (int64_t k = 0; k < len; k++) acc[k] = K_ZERO(ACC);                                  \
        for (int64_t r = r0; r < r1; r++) {                                                      \
          const ST *p = base + rofs;                                                             \
          if (ks == 1) {                                                                         \
            for (int64_t k = 0; k < len; k++) acc[k] += ld_##D(p[k]);                            \
          } else {                                                                               \
            for (int64_t k = 0; k < len; k++) acc[k] += ld_##D(p[k * ks]);                       \
          }                                                                                      \
          for (int32_t a = j->nr - 1; a >= 0; a--) {                                             \
            rofs += j->rstr[a];                                                                  \
            if (++ridx[a] < j->rext[a]) break;                                                   \
            rofs -= j->rstr[a] * j->rext[a];                                                     \
            ridx[a] = 0;                                                                         \
          }                                                                                      \
        }                                                                                        \
      }                                                                                          \
      if (nblk == 1) {                                                                           \
        for (int64_t k = 0; k < len; k++) PUT(j, ostart + k, acc[k]);                            \
      } else {                                                                                   \
        ACC *pp = (ACC *)j->part;                                                                \
        for (int64_t k = 0; k < len; k++) pp[(ostart + k) * nblk + blk] = acc[k];                \
      }                                                                                          \
      /* next unit: next block, else next segment */                                             \
      if (++blk < nblk) continue;                                                                \
      blk = 0;                                                                                   \
      if (++part < spr) continue;                                                                \
      part = 0;                                                                                  \
      q++;                                                                                       \
      for (int32_t a = j->nq - 1; a >= 0; a--) {                                                 \
        qofs += j->qstr[a];                                                                      \
        if (++qidx[a] < j->qext[a]) break;                                                       \
        qofs -= j->qstr[a] * j->qext[a];                                                         \
        qidx[a] = 0;                                                                             \
      }                                                                                          \
    }                                                                                            \
  }
K_RED_TYPES(K_DEF_RED)
#undef K_DEF_RED

static void (*const k_red[GP_K_NUM_DTYPES])(void *, int64_t, int64_t) = {
#define K_CELL(D, ST, ACC, LOAD) [GP_K_##D] = red_##D,
    K_RED_TYPES(K_CELL)
#undef K_CELL
};

static int red_kernel(const GPKernelArgs *args, bool mean) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    gp_error_set(GP_ERR_INTERNAL, "kernel called with %d inputs and %d outputs (expected 1 and 1)",
                 (int)args->num_inputs, (int)args->num_outputs);
    return -1;
  }
  const DLTensor *t = args->inputs[0];
  DLTensor *out = args->outputs[0];
  RJob j;
  int kd;
  if (gp_k_dtype_check(t->dtype, "data", &kd) != 0) return -1;
  if (!gp_dtype_eq(out->dtype, t->dtype)) {
    char a[24], b[24];
    gp_error_set(GP_ERR_TYPE, "the result has dtype %s, expected %s", gp_dtype_str(out->dtype, a),
                 gp_dtype_str(t->dtype, b));
    return -1;
  }
  /* which axes reduce (as reduce_rel) */
  int32_t nd = t->ndim, n;
  const int64_t *axes = gp_ops_attr_ints(args->op, args->attrs, "axis", &n);
  bool red[K_MAXR] = {false};
  if (n < 0) {
    for (int32_t a = 0; a < nd; a++) red[a] = true;
  } else {
    for (int32_t i = 0; i < n; i++) {
      int64_t a = axes[i] < 0 ? axes[i] + nd : axes[i];
      if (a < 0 || a >= nd) {
        gp_error_set(GP_ERR_VALUE, "axis %lld is out of range for rank %d", (long long)axes[i], (int)nd);
        return -1;
      }
      red[a] = true;
    }
    if (gp_ops_attr_bool(args->op, args->attrs, "exclude"))
      for (int32_t a = 0; a < nd; a++) red[a] = !red[a];
  }
  GPKView v;
  gp_k_view(t, &v);
  int64_t red_n = 1, out_n = 1, out_numel = 1;
  for (int32_t a = 0; a < nd; a++) *(red[a] ? &red_n : &out_n) *= v.shape[a];
  for (int32_t a = 0; a < out->ndim; a++) out_numel *= out->shape[a];
  if (out_numel != out_n) {
    gp_error_set(GP_ERR_INTERNAL, "the result has %lld elements, expected %lld", (long long)out_numel,
                 (long long)out_n);
    return -1;
  }
  memset(&j, 0, sizeof j);
  j.kd = kd;
  j.mean = mean;
  j.out = (char *)out->data + out->byte_offset;
  j.oel = (int64_t)gp_dtype_bytes(out->dtype);
  j.red_n = red_n;
  if (out_n == 0) return 0;
  if (red_n == 0) { /* nothing to sum: 0, and the mean of nothing */
    for (int64_t o = 0; o < out_n; o++) {
      if (gp_k_is_float(kd))
        put_f(&j, o, mean ? NAN : 0.0);
      else
        gp_k_store_i64(j.out + o * j.oel, kd, 0);
    }
    return 0;
  }
  void *scratch = NULL;
  if ((uintptr_t)v.data % v.elem != 0) { /* misaligned (a producer's byte_offset): aligned copy */
    const void *src = gp_k_compact(t, &scratch);
    if (!scratch) {
      scratch = gp_malloc((size_t)v.numel * v.elem);
      memcpy(scratch, src, (size_t)v.numel * v.elem);
    }
    DLTensor c = *t;
    c.data = scratch;
    c.byte_offset = 0;
    c.strides = NULL;
    gp_k_view(&c, &v);
  }
  j.in = v.data;
  /* canonical axes: no size-1 axes, neighbours of one kind merged when contiguous */
  int32_t nc = 0;
  int64_t cext[K_MAXR], cstr[K_MAXR];
  bool cred[K_MAXR];
  for (int32_t a = 0; a < nd; a++) {
    if (v.shape[a] == 1) continue;
    if (nc > 0 && cred[nc - 1] == red[a] && cstr[nc - 1] == v.strides[a] * v.shape[a]) {
      cext[nc - 1] *= v.shape[a];
      cstr[nc - 1] = v.strides[a];
      continue;
    }
    cext[nc] = v.shape[a];
    cstr[nc] = v.strides[a];
    cred[nc] = red[a];
    nc++;
  }
  if (nc == 0) { /* a single element: reduce a pseudo axis of extent 1 */
    cext[0] = 1;
    cstr[0] = 0;
    cred[0] = true;
    nc = 1;
  }
  j.seg = !cred[nc - 1];
  for (int32_t a = 0; a < nc; a++) {
    if (cred[a]) {
      j.rext[j.nr] = cext[a];
      j.rstr[j.nr++] = cstr[a];
    } else if (j.seg && a == nc - 1) {
      j.kin = cext[a];
      j.kstr = cstr[a];
    } else {
      j.qext[j.nq] = cext[a];
      j.qstr[j.nq++] = cstr[a];
    }
  }
  int64_t seglen = 1, nseg = out_n;
  j.spr = 1;
  if (j.seg) {
    seglen = j.kin < K_SEG ? j.kin : K_SEG;
    j.spr = (j.kin + K_SEG - 1) / K_SEG;
    nseg = out_n / j.kin * j.spr;
  } else {
    j.kin = 1;
  }
  j.blk_len = K_BLOCK_WORK / seglen;
  if (j.blk_len < 1) j.blk_len = 1;
  if (j.blk_len > red_n) j.blk_len = red_n;
  j.nblk = (red_n + j.blk_len - 1) / j.blk_len;
  if (j.nblk > 1) j.part = gp_malloc((size_t)(out_n * j.nblk) * 8);
  int64_t work = seglen * j.blk_len, grain = K_GRAIN / work;
  gp_k_parallel_for(args->num_threads, nseg * j.nblk, grain < 1 ? 1 : grain, k_red[kd], &j);
  if (j.nblk > 1) { /* partial sums in block order */
    if (gp_k_is_float(kd)) {
      const double *pp = j.part;
      for (int64_t o = 0; o < out_n; o++) {
        double s = -0.0;
        for (int64_t b = 0; b < j.nblk; b++) s += pp[o * j.nblk + b];
        put_f(&j, o, s);
      }
    } else {
      const uint64_t *pp = j.part;
      for (int64_t o = 0; o < out_n; o++) {
        uint64_t s = 0;
        for (int64_t b = 0; b < j.nblk; b++) s += pp[o * j.nblk + b];
        put_i(&j, o, s);
      }
    }
    gp_free(j.part);
  }
  gp_free(scratch);
  return 0;
}

static int kern_sum(const GPKernelArgs *args, void *user) {
  (void)user;
  return red_kernel(args, false);
}

static int kern_mean(const GPKernelArgs *args, void *user) {
  (void)user;
  return red_kernel(args, true);
}

/* ------------------------------------------------------------------------------------------ */
/* max, min, prod, all, any, argmax, argmin
 *
 * One output element at a time (outputs split across threads): its reduced elements are walked
 * by an odometer whose inner loop runs along the last reduced axis.  Floats compare and
 * multiply in double, integers in int64 (prod wraps: it multiplies in uint64 and stores the low
 * bits, which equals the product wrapped into the dtype).  max/min propagate NaN (numpy's
 * maximum.reduce); argmax/argmin take the first NaN as the extreme (numpy), and give the index
 * in row-major order over the reduced axes.  Over zero elements the result is the identity:
 * max -inf / the dtype's lowest, min +inf / its highest, prod 1, all true, any false, and arg
 * max/min 0. */

enum { G_MAX, G_MIN, G_PROD, G_ALL, G_ANY, G_ARGMAX, G_ARGMIN };

typedef struct GJob {
  int op, kd, okd;
  bool last; /* select_last_index */
  const char *in;
  char *out;
  size_t oel;
  int32_t nq, nr;
  int64_t qext[K_MAXR], qstr[K_MAXR], rext[K_MAXR], rstr[K_MAXR];
} GJob;

/* The body runs for every reduced element with `x` (double or int64) and `r` (its row-major
 * index over the reduced axes). */
#define G_WALK(ST, CONV, ...)                                                                    \
  do {                                                                                           \
    int64_t ridx_[K_MAXR] = {0}, rofs_ = 0, r = 0;                                               \
    int32_t ni_ = j->nr - 1;                                                                     \
    int64_t rin_ = j->rext[ni_], rs_ = j->rstr[ni_];                                             \
    for (;;) {                                                                                   \
      const ST *p_ = base + rofs_;                                                               \
      for (int64_t k_ = 0; k_ < rin_; k_++, r++) {                                               \
        ST v_ = p_[k_ * rs_];                                                                    \
        CONV;                                                                                    \
        __VA_ARGS__;                                                                             \
      }                                                                                          \
      int32_t a_ = ni_ - 1;                                                                      \
      for (; a_ >= 0; a_--) {                                                                    \
        rofs_ += j->rstr[a_];                                                                    \
        if (++ridx_[a_] < j->rext[a_]) break;                                                    \
        rofs_ -= j->rstr[a_] * j->rext[a_];                                                      \
        ridx_[a_] = 0;                                                                           \
      }                                                                                          \
      if (a_ < 0) break;                                                                         \
    }                                                                                            \
  } while (0)

#define G_FLOAT_BODY(ST, CONV)                                                                   \
  switch (j->op) {                                                                               \
  case G_MAX: {                                                                                  \
    double acc = -INFINITY;                                                                      \
    G_WALK(ST, CONV, if (x > acc || x != x) acc = x);                                            \
    gp_k_store_f64(dst, j->okd, acc);                                                            \
    break;                                                                                       \
  }                                                                                              \
  case G_MIN: {                                                                                  \
    double acc = INFINITY;                                                                       \
    G_WALK(ST, CONV, if (x < acc || x != x) acc = x);                                            \
    gp_k_store_f64(dst, j->okd, acc);                                                            \
    break;                                                                                       \
  }                                                                                              \
  case G_PROD: {                                                                                 \
    double acc = 1.0;                                                                            \
    G_WALK(ST, CONV, acc *= x);                                                                  \
    gp_k_store_f64(dst, j->okd, acc);                                                            \
    break;                                                                                       \
  }                                                                                              \
  case G_ALL: {                                                                                  \
    int64_t acc = 1;                                                                             \
    G_WALK(ST, CONV, if (x == 0) acc = 0);                                                       \
    gp_k_store_i64(dst, j->okd, acc);                                                            \
    break;                                                                                       \
  }                                                                                              \
  case G_ANY: {                                                                                  \
    int64_t acc = 0;                                                                             \
    G_WALK(ST, CONV, if (x != 0) acc = 1);                                                       \
    gp_k_store_i64(dst, j->okd, acc);                                                            \
    break;                                                                                       \
  }                                                                                              \
  default: {                                                                                     \
    double best = 0;                                                                             \
    int64_t bi = -1;                                                                             \
    bool mx = j->op == G_ARGMAX, last = j->last;                                                 \
    G_WALK(ST, CONV, {                                                                           \
      bool take;                                                                                 \
      if (bi < 0)                                                                                \
        take = true;                                                                             \
      else if (best != best)                                                                     \
        take = false;                                                                            \
      else if (x != x)                                                                           \
        take = true;                                                                             \
      else                                                                                       \
        take = mx ? (last ? x >= best : x > best) : (last ? x <= best : x < best);               \
      if (take) best = x, bi = r;                                                                \
    });                                                                                          \
    gp_k_store_i64(dst, j->okd, bi < 0 ? 0 : bi);                                                \
    break;                                                                                       \
  }                                                                                              \
  }

#define G_INT_BODY(ST, CONV, LO, HI)                                                             \
  switch (j->op) {                                                                               \
  case G_MAX: {                                                                                  \
    int64_t acc = (LO);                                                                          \
    G_WALK(ST, CONV, if (x > acc) acc = x);                                                      \
    gp_k_store_i64(dst, j->okd, acc);                                                            \
    break;                                                                                       \
  }                                                                                              \
  case G_MIN: {                                                                                  \
    int64_t acc = (HI);                                                                          \
    G_WALK(ST, CONV, if (x < acc) acc = x);                                                      \
    gp_k_store_i64(dst, j->okd, acc);                                                            \
    break;                                                                                       \
  }                                                                                              \
  case G_PROD: {                                                                                 \
    uint64_t acc = 1;                                                                            \
    G_WALK(ST, CONV, acc *= (uint64_t)x);                                                        \
    gp_k_store_i64(dst, j->okd, (int64_t)acc);                                                   \
    break;                                                                                       \
  }                                                                                              \
  case G_ALL: {                                                                                  \
    int64_t acc = 1;                                                                             \
    G_WALK(ST, CONV, if (x == 0) acc = 0);                                                       \
    gp_k_store_i64(dst, j->okd, acc);                                                            \
    break;                                                                                       \
  }                                                                                              \
  case G_ANY: {                                                                                  \
    int64_t acc = 0;                                                                             \
    G_WALK(ST, CONV, if (x != 0) acc = 1);                                                       \
    gp_k_store_i64(dst, j->okd, acc);                                                            \
    break;                                                                                       \
  }                                                                                              \
  default: {                                                                                     \
    int64_t best = 0, bi = -1;                                                                   \
    bool mx = j->op == G_ARGMAX, last = j->last;                                                 \
    G_WALK(ST, CONV, {                                                                           \
      bool take = bi < 0 || (mx ? (last ? x >= best : x > best) : (last ? x <= best : x < best)); \
      if (take) best = x, bi = r;                                                                \
    });                                                                                          \
    gp_k_store_i64(dst, j->okd, bi < 0 ? 0 : bi);                                                \
    break;                                                                                       \
  }                                                                                              \
  }

/* X(dtype, storage, float?, conversion of v_ to x, lowest, highest) */
#define G_TYPES(X)                                                                               \
  X(BOOL, uint8_t, 0, int64_t x = v_ != 0, 0, 1)                                                 \
  X(U8, uint8_t, 0, int64_t x = v_, 0, 255)                                                      \
  X(I8, int8_t, 0, int64_t x = v_, -128, 127)                                                    \
  X(I16, int16_t, 0, int64_t x = v_, -32768, 32767)                                              \
  X(I32, int32_t, 0, int64_t x = v_, INT32_MIN, INT32_MAX)                                       \
  X(I64, int64_t, 0, int64_t x = v_, INT64_MIN, INT64_MAX)                                       \
  X(F16, uint16_t, 1, double x = (double)gp_f16_to_f32(v_), 0, 0)                                \
  X(F32, float, 1, double x = (double)v_, 0, 0)                                                  \
  X(F64, double, 1, double x = v_, 0, 0)

#define G_DEF(D, ST, ISF, CONV, LO, HI)                                                          \
  static void g_##D(void *ctx, int64_t o0, int64_t o1) {                                         \
    const GJob *j = ctx;                                                                         \
    const ST *in = (const ST *)(const void *)j->in;                                              \
    for (int64_t o = o0; o < o1; o++) {                                                          \
      int64_t qofs = 0, t = o;                                                                   \
      for (int32_t a = j->nq - 1; a >= 0; a--) {                                                 \
        qofs += (t % j->qext[a]) * j->qstr[a];                                                   \
        t /= j->qext[a];                                                                         \
      }                                                                                          \
      const ST *base = in + qofs;                                                                \
      char *dst = j->out + (size_t)o * j->oel;                                                   \
      if (ISF) {                                                                                 \
        G_FLOAT_BODY(ST, CONV)                                                                   \
      } else {                                                                                   \
        G_INT_BODY(ST, CONV, LO, HI)                                                             \
      }                                                                                          \
    }                                                                                            \
  }

/* The float and integer bodies are both compiled for every dtype; the one that does not apply
 * is dead code (ISF is a constant), with conversions that are still well defined. */
G_TYPES(G_DEF)
#undef G_DEF

static void (*const k_g[GP_K_NUM_DTYPES])(void *, int64_t, int64_t) = {
#define K_CELL(D, ST, ISF, CONV, LO, HI) [GP_K_##D] = g_##D,
    G_TYPES(K_CELL)
#undef K_CELL
};

static int gen_kernel(const GPKernelArgs *args, int op) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    gp_error_set(GP_ERR_INTERNAL, "kernel called with %d inputs and %d outputs (expected 1 and 1)",
                 (int)args->num_inputs, (int)args->num_outputs);
    return -1;
  }
  const DLTensor *t = args->inputs[0];
  DLTensor *out = args->outputs[0];
  bool arg = op == G_ARGMAX || op == G_ARGMIN;
  GJob j;
  memset(&j, 0, sizeof j);
  j.op = op;
  if (gp_k_dtype_check(t->dtype, "data", &j.kd) != 0) return -1;
  if (gp_k_dtype_check(out->dtype, "the result", &j.okd) != 0) return -1;
  if (!arg && !gp_dtype_eq(out->dtype, t->dtype)) {
    char a[24], b[24];
    gp_error_set(GP_ERR_TYPE, "the result has dtype %s, expected %s", gp_dtype_str(out->dtype, a),
                 gp_dtype_str(t->dtype, b));
    return -1;
  }
  if (arg) j.last = gp_ops_attr_bool(args->op, args->attrs, "select_last_index");
  int32_t nd = t->ndim, n;
  const int64_t *axes = gp_ops_attr_ints(args->op, args->attrs, "axis", &n);
  bool red[K_MAXR] = {false};
  if (n < 0) {
    for (int32_t a = 0; a < nd; a++) red[a] = true;
  } else {
    for (int32_t i = 0; i < n; i++) {
      int64_t a = axes[i] < 0 ? axes[i] + nd : axes[i];
      if (a < 0 || a >= nd) {
        gp_error_set(GP_ERR_VALUE, "axis %lld is out of range for rank %d", (long long)axes[i], (int)nd);
        return -1;
      }
      red[a] = true;
    }
    if (gp_ops_attr_bool(args->op, args->attrs, "exclude"))
      for (int32_t a = 0; a < nd; a++) red[a] = !red[a];
  }
  GPKView v;
  gp_k_view(t, &v);
  int64_t red_n = 1, out_n = 1;
  for (int32_t a = 0; a < nd; a++) *(red[a] ? &red_n : &out_n) *= v.shape[a];
  if (gp_k_numel(out) != out_n) {
    gp_error_set(GP_ERR_INTERNAL, "the result has %lld elements, expected %lld", (long long)gp_k_numel(out),
                 (long long)out_n);
    return -1;
  }
  j.out = (char *)out->data + out->byte_offset;
  j.oel = gp_dtype_bytes(out->dtype);
  if (out_n == 0) return 0;
  if (red_n == 0) { /* the identity */
    for (int64_t o = 0; o < out_n; o++) {
      char *dst = j.out + (size_t)o * j.oel;
      bool f = gp_k_is_float(j.kd);
      switch (op) {
      case G_MAX:
        if (f) gp_k_store_f64(dst, j.okd, -INFINITY);
        else gp_k_store_i64(dst, j.okd, j.kd == GP_K_I8 ? -128 : j.kd == GP_K_I16 ? -32768 : j.kd == GP_K_I32 ? INT32_MIN : j.kd == GP_K_I64 ? INT64_MIN : 0);
        break;
      case G_MIN:
        if (f) gp_k_store_f64(dst, j.okd, INFINITY);
        else gp_k_store_i64(dst, j.okd, j.kd == GP_K_I8 ? 127 : j.kd == GP_K_I16 ? 32767 : j.kd == GP_K_I32 ? INT32_MAX : j.kd == GP_K_I64 ? INT64_MAX : j.kd == GP_K_U8 ? 255 : 1);
        break;
      case G_PROD:
      case G_ALL: gp_k_store_i64(dst, j.okd, 1); break;
      default: gp_k_store_i64(dst, j.okd, 0); break;
      }
    }
    return 0;
  }
  void *scratch = NULL;
  if ((uintptr_t)v.data % v.elem != 0) { /* misaligned: an aligned compact copy */
    const void *src = gp_k_compact(t, &scratch);
    if (!scratch) {
      scratch = gp_malloc((size_t)v.numel * v.elem);
      memcpy(scratch, src, (size_t)v.numel * v.elem);
    }
    DLTensor c = *t;
    c.data = scratch;
    c.byte_offset = 0;
    c.strides = NULL;
    gp_k_view(&c, &v);
  }
  j.in = v.data;
  for (int32_t a = 0; a < nd; a++) {
    if (red[a]) {
      j.rext[j.nr] = v.shape[a];
      j.rstr[j.nr++] = v.strides[a];
    } else {
      j.qext[j.nq] = v.shape[a];
      j.qstr[j.nq++] = v.strides[a];
    }
  }
  if (j.nr == 0) { /* nothing reduced: one element per output */
    j.rext[0] = 1;
    j.rstr[0] = 0;
    j.nr = 1;
  }
  int64_t grain = K_GRAIN / red_n;
  gp_k_parallel_for(args->num_threads, out_n, grain < 1 ? 1 : grain, k_g[j.kd], &j);
  gp_free(scratch);
  return 0;
}

#define G_KERN(name, OP)                                                                         \
  static int kern_##name(const GPKernelArgs *args, void *user) {                                 \
    (void)user;                                                                                  \
    return gen_kernel(args, OP);                                                                 \
  }
G_KERN(max, G_MAX)
G_KERN(min, G_MIN)
G_KERN(prod, G_PROD)
G_KERN(all, G_ALL)
G_KERN(any, G_ANY)
G_KERN(argmax, G_ARGMAX)
G_KERN(argmin, G_ARGMIN)
#undef G_KERN

void gp_kernels_register_reduce(void) {
  gp_kernel_set("sum", kern_sum);
  gp_kernel_set("mean", kern_mean);
  gp_kernel_set("max", kern_max);
  gp_kernel_set("min", kern_min);
  gp_kernel_set("prod", kern_prod);
  gp_kernel_set("all", kern_all);
  gp_kernel_set("any", kern_any);
  gp_kernel_set("argmax", kern_argmax);
  gp_kernel_set("argmin", kern_argmin);
}
