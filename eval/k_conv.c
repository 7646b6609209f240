/* k_conv.c -- the BLAS-backed kernels: nn.conv2d, nn.dense, nn.batch_matmul and nn.matmul
 * (registered by eval/k_nn.c).
 *
 * conv2d, float32/float64, lowered to GEMMs per batch item and group (P = OH * OW):
 *   NCHW + OIHW:  out[n][g] (Og x P)  = W_g (Og x K) * col (K x P),    K = (c, kh, kw)
 *   NHWC + HWIO:  out[n] (P x O)[g]   = col (P x K) * W (K x O)[g],    K = (kh, kw, c)
 *   NHWC + OHWI:  the same with W (O x K) transposed.
 * col is the im2col matrix, except for 1x1 stride-1 unpadded convolutions, where the input
 * itself is the operand.  NCHW rows with a horizontal stride are first split into their phases
 * so that im2col copies contiguous runs.  Large outputs (P >= MIN_BLOCKED_P) are cut into
 * blocks of output rows whose im2col fits in L2; each thread makes a block and multiplies it
 * with a single-threaded GEMM.  Small outputs run one im2col and a GEMM split over the threads.
 * float32 GEMMs are ours (eval/gemm.h: every output element computed the same way, so equal
 * weights give bit-equal channels) on our threads; float64 ones are OpenBLAS's cblas_dgemm (see
 * blas_threads).  Depthwise convolutions (one input channel per group) run a direct loop.
 * float16 (and mixed float dtypes) compute in float32 (float64 when any side is float64) and
 * convert on store; integer convolutions run a plain loop that accumulates in uint64 (wrapping,
 * no overflow UB).  A kernel layout that is another permutation of OIHW is repacked; other
 * layouts are refused.
 */
#include "eval/kernel.h"

#include "eval/blas.h"
#include "eval/gemm.h"
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>

/* Shared with eval/k_nn.c (no header of their own: kernel.h is not ours to extend). */
int gp_knn_conv2d(const GPKernelArgs *a, void *user);
int gp_knn_dense(const GPKernelArgs *a, void *user);
int gp_knn_convnd(const GPKernelArgs *a, void *user);
int gp_knn_conv_transpose(const GPKernelArgs *a, void *user);
int gp_knn_batch_matmul(const GPKernelArgs *a, void *user);
int gp_knn_matmul(const GPKernelArgs *a, void *user);
const void *gp_knn_load_as(const DLTensor *t, int k, void **scratch);
void gp_knn_store_from(DLTensor *out, const void *src, int ksrc);

/* ------------------------------------------------------------------------------------------ */
/* Shared helpers                                                                              */

/* t's elements, compact row-major, as kernel dtype k (F32, F64 or I64): t's own data when it is
 * already that, else a gp_malloc'd copy left in *scratch (free with gp_free). */
const void *gp_knn_load_as(const DLTensor *t, int k, void **scratch) {
  void *c = NULL;
  const char *src = gp_k_compact(t, &c);
  int kt = gp_k_dtype(t->dtype);
  if (kt == k) {
    *scratch = c;
    return src;
  }
  int64_t n = gp_k_numel(t);
  size_t es = gp_k_elem_size(kt), eo = gp_k_elem_size(k);
  char *dst = gp_malloc(n ? (size_t)n * eo : 1);
  if (k == GP_K_F32 && kt == GP_K_F16) {
    float *d = (float *)dst;
    for (int64_t i = 0; i < n; i++) {
      uint16_t h;
      memcpy(&h, src + i * 2, 2);
      d[i] = gp_f16_to_f32(h);
    }
  } else if (k == GP_K_F32) {
    float *d = (float *)dst;
    for (int64_t i = 0; i < n; i++) d[i] = (float)gp_k_load_f64(src + (size_t)i * es, kt);
  } else if (k == GP_K_F64) {
    double *d = (double *)dst;
    for (int64_t i = 0; i < n; i++) d[i] = gp_k_load_f64(src + (size_t)i * es, kt);
  } else {
    int64_t *d = (int64_t *)dst;
    for (int64_t i = 0; i < n; i++) d[i] = gp_k_load_i64(src + (size_t)i * es, kt);
  }
  gp_free(c);
  *scratch = dst;
  return dst;
}

/* Store compact src (kernel dtype ksrc: F32, F64 or I64) into the compact output out, converting
 * to out's dtype (integers wrap; floats into integers truncate and saturate). */
void gp_knn_store_from(DLTensor *out, const void *src, int ksrc) {
  int ko = gp_k_dtype(out->dtype);
  int64_t n = gp_k_numel(out);
  size_t eo = gp_k_elem_size(ko);
  char *dst = (char *)out->data + out->byte_offset;
  if (ko == ksrc) {
    memcpy(dst, src, (size_t)n * eo);
  } else if (ksrc == GP_K_F32 && ko == GP_K_F16) {
    const float *s = src;
    for (int64_t i = 0; i < n; i++) {
      uint16_t h = gp_f32_to_f16(s[i]);
      memcpy(dst + i * 2, &h, 2);
    }
  } else if (ksrc == GP_K_F32) {
    const float *s = src;
    for (int64_t i = 0; i < n; i++) gp_k_store_f64(dst + (size_t)i * eo, ko, s[i]);
  } else if (ksrc == GP_K_F64) {
    const double *s = src;
    for (int64_t i = 0; i < n; i++) gp_k_store_f64(dst + (size_t)i * eo, ko, s[i]);
  } else {
    const int64_t *s = src;
    for (int64_t i = 0; i < n; i++) gp_k_store_i64(dst + (size_t)i * eo, ko, s[i]);
  }
}

/* Threads (float64, OpenBLAS): OpenBLAS's own threading is best for one GEMM on small spatial
 * sizes (it shares the packed panels between its threads), but the workers of its pool spin for
 * about 0.1 s after each threaded call and then compete with any other thread for the cores.  So
 * a float64 kernel either runs its GEMMs on OpenBLAS's threads, or runs OpenBLAS single-threaded
 * inside its own threads (gp_k_parallel_for) for the large spatial sizes, where cache-sized
 * im2col blocks per thread win.  blas_threads() sets OpenBLAS's count and returns the previous
 * one for blas_restore() (both do nothing unless dbl).  float32 never touches OpenBLAS:
 * gp_sgemm runs on our threads. */
static int blas_threads(bool dbl, int n) {
  if (!dbl) return 0;
  int old = openblas_get_num_threads();
  if (n < 1) n = 1;
  if (old != n) openblas_set_num_threads(n);
  return old;
}

static void blas_restore(bool dbl, int old) {
  if (dbl && openblas_get_num_threads() != old) openblas_set_num_threads(old);
}

/* C += op(A) op(B), row-major.  float32: gp_sgemm on up to nthreads of our threads; float64:
 * cblas_dgemm on OpenBLAS's current thread count (nthreads unused).  Every C here is
 * zero-filled (the evaluator's outputs are, and the temporaries are calloc'd), and beta 1
 * spares OpenBLAS a pass that zeroes C. */
static void gemm(bool dbl, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                 const void *b, int64_t ldb, void *c, int64_t ldc, int32_t nthreads) {
  if (!dbl) {
    gp_sgemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, nthreads);
    return;
  }
  enum CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
  cblas_dgemm(CblasRowMajor, TA, TB, (blasint)m, (blasint)n, (blasint)k, 1.0, a, (blasint)lda, b, (blasint)ldb,
              1.0, c, (blasint)ldc);
}

/* One float64 GEMM (row-major C += op(A) op(B)) split over threads along the longer of M and
 * N, in chunks that are multiples of 16, each a single-threaded cblas_dgemm. */
typedef struct ParGemm {
  bool ta, tb, split_n;
  int64_t M, N, K, lda, ldb, ldc, chunk;
  const double *A, *B;
  double *C;
} ParGemm;

static void par_gemm_part(void *vctx, int64_t i0, int64_t i1) {
  const ParGemm *p = vctx;
  for (int64_t i = i0; i < i1; i++) {
    int64_t lo = i * p->chunk, hi = lo + p->chunk, dim = p->split_n ? p->N : p->M;
    if (hi > dim) hi = dim;
    if (p->split_n)
      gemm(true, p->ta, p->tb, p->M, hi - lo, p->K, p->A, p->lda, p->B + (p->tb ? lo * p->ldb : lo), p->ldb,
           p->C + lo, p->ldc, 1);
    else
      gemm(true, p->ta, p->tb, hi - lo, p->N, p->K, p->A + (p->ta ? lo : lo * p->lda), p->lda, p->B, p->ldb,
           p->C + lo * p->ldc, p->ldc, 1);
  }
}

/* Multiply-adds below which a float64 GEMM stays on the calling thread (a quarter of a
 * millisecond or so: starting a thread on an idle core, a virtual one above all, costs tens of
 * microseconds). */
#define PAR_GEMM_MIN_MACS (1 << 24)

/* C += op(A) op(B) on up to nthreads of our threads (float32: gp_sgemm splits it itself). */
static void par_gemm(int32_t nthreads, bool dbl, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                     const void *a, int64_t lda, const void *b, int64_t ldb, void *c, int64_t ldc) {
  if (!dbl) {
    gp_sgemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, nthreads);
    return;
  }
  ParGemm p = {ta, tb, n >= m, m, n, k, lda, ldb, ldc, 0, a, b, c};
  int64_t dim = p.split_n ? n : m;
  if (nthreads <= 1 || dim < 32 || m * n * k < PAR_GEMM_MIN_MACS) {
    gemm(true, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, 1);
    return;
  }
  p.chunk = ((dim + nthreads - 1) / nthreads + 15) / 16 * 16;
  gp_k_parallel_for(nthreads, (dim + p.chunk - 1) / p.chunk, 1, par_gemm_part, &p);
}

static bool blas_fits(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* The kernel dtype computations run in for float inputs a and b and output o: float64 when any
 * of them is float64, else float32. */
static int float_compute(int ka, int kb, int ko) {
  return ka == GP_K_F64 || kb == GP_K_F64 || ko == GP_K_F64 ? GP_K_F64 : GP_K_F32;
}

/* ------------------------------------------------------------------------------------------ */
/* conv2d geometry                                                                             */

typedef struct ConvGeom {
  int64_t N, C, H, W;    /* input */
  int64_t O, OH, OW;     /* output */
  int64_t KH, KW;        /* window */
  int64_t G, Ig, Og;     /* groups; input / output channels per group */
  int64_t sh, sw, dh, dw;
  int64_t pt, pl;        /* top and left padding (bottom/right are implied by OH, OW) */
  bool nhwc;
} ConvGeom;

/* The output positions o in [0, OUT) with 0 <= o * s - lo < IN, as [*o0, *o1). */
static void valid_range(int64_t OUT, int64_t IN, int64_t lo, int64_t s, int64_t *o0, int64_t *o1) {
  int64_t a = lo > 0 ? (lo + s - 1) / s : 0;
  int64_t b = IN + lo - 1 >= 0 ? (IN + lo - 1) / s + 1 : 0;
  if (b > OUT) b = OUT;
  if (a > b) a = b;
  *o0 = a;
  *o1 = b;
}

/* n elements of es bytes (4: float, 8: double) from src with element stride `stride` to dst. */
static inline void copy_strided(char *dst, const char *src, int64_t n, int64_t stride, size_t es) {
  if (stride == 1) {
    memcpy(dst, src, (size_t)n * es);
  } else if (es == 4) {
    float *d = (float *)dst;
    const float *s = (const float *)src;
    for (int64_t i = 0; i < n; i++) d[i] = s[i * stride];
  } else {
    double *d = (double *)dst;
    const double *s = (const double *)src;
    for (int64_t i = 0; i < n; i++) d[i] = s[i * stride];
  }
}

/* im2col of output rows [oh0, oh1) of one batch item and group. */
typedef struct Im2col {
  const ConvGeom *g;
  const char *x;  /* NCHW: the group's first channel in batch item n; NHWC: batch item n */
  int64_t c0;     /* NHWC: the group's first channel */
  int64_t oh0, oh1;
  char *col;
  size_t es;
  int64_t wq;     /* NCHW with sw > 1: x is phase-split (split_rows), wq columns per phase */
} Im2col;

/* NCHW with a horizontal stride sw > 1: each input row split into its sw phases (phase q holds
 * columns q, q + sw, ...; wq = ceil(W / sw) slots each), so that im2col copies contiguous runs
 * instead of gathering every sw-th element. */
typedef struct Split {
  const ConvGeom *g;
  const char *x;
  char *xs;
  size_t es;
  int64_t wq;
} Split;

static void split_rows(void *vctx, int64_t r0, int64_t r1) {
  const Split *c = vctx;
  const ConvGeom *g = c->g;
  size_t es = c->es;
  for (int64_t r = r0; r < r1; r++) { /* r = (n * C + ch) * H + ih */
    const char *src = c->x + (size_t)(r * g->W) * es;
    char *dst = c->xs + (size_t)(r * g->sw * c->wq) * es;
    for (int64_t q = 0; q < g->sw; q++, dst += c->wq * (int64_t)es) {
      int64_t n = g->W > q ? (g->W - q + g->sw - 1) / g->sw : 0;
      if (n) copy_strided(dst, src + q * (int64_t)es, n, g->sw, es);
      memset(dst + n * (int64_t)es, 0, (size_t)(c->wq - n) * es);
    }
  }
}

/* One im2col output row of OW elements: zeros in [0, ow0) and [ow1, OW), src's contiguous
 * ow1 - ow0 elements in between.  The zeros (the padding: a few elements) by loops, which
 * cost less than memset calls. */
static inline void put_row(char *dst, const char *src, int64_t ow0, int64_t ow1, int64_t OW, size_t es) {
  int64_t z0 = ow0 * (int64_t)es, z1 = (OW - ow1) * (int64_t)es;
  for (int64_t j = 0; j < z0; j++) dst[j] = 0;
  memcpy(dst + z0, src, (size_t)(ow1 - ow0) * es);
  for (int64_t j = 0; j < z1; j++) dst[ow1 * (int64_t)es + j] = 0;
}

/* NCHW: col is K x bw (bw = (oh1 - oh0) * OW), rows (c, kh, kw); fills rows [r0, r1). */
static void im2col_nchw(void *vctx, int64_t r0, int64_t r1) {
  const Im2col *c = vctx;
  const ConvGeom *g = c->g;
  size_t es = c->es, row = (size_t)g->OW * es;
  int64_t bw = (c->oh1 - c->oh0) * g->OW, KK = g->KH * g->KW;
  for (int64_t r = r0; r < r1; r++) {
    int64_t ci = r / KK, kh = (r / g->KW) % g->KH, kw = r % g->KW;
    const char *plane = c->x + (size_t)(ci * g->H * (c->wq ? g->sw * c->wq : g->W)) * es;
    char *dst = c->col + (size_t)(r * bw) * es;
    int64_t lo = g->pl - kw * g->dw, ow0, ow1;
    valid_range(g->OW, g->W, lo, g->sw, &ow0, &ow1);
    for (int64_t oh = c->oh0; oh < c->oh1; oh++, dst += row) {
      int64_t ih = oh * g->sh - g->pt + kh * g->dh;
      if (ih < 0 || ih >= g->H || ow0 >= ow1) {
        memset(dst, 0, row);
        continue;
      }
      int64_t iw0 = ow0 * g->sw - lo; /* >= 0 */
      if (c->wq) { /* phase iw0 % sw of row ih, from slot iw0 / sw on */
        put_row(dst, plane + (size_t)((ih * g->sw + iw0 % g->sw) * c->wq + iw0 / g->sw) * es, ow0, ow1, g->OW, es);
      } else if (g->sw == 1) {
        put_row(dst, plane + (size_t)(ih * g->W + iw0) * es, ow0, ow1, g->OW, es);
      } else {
        memset(dst, 0, (size_t)ow0 * es);
        copy_strided(dst + ow0 * (int64_t)es, plane + (size_t)(ih * g->W + iw0) * es, ow1 - ow0, g->sw, es);
        memset(dst + ow1 * (int64_t)es, 0, (size_t)(g->OW - ow1) * es);
      }
    }
  }
}

/* NHWC: col is bw x K, rows the output positions p of [oh0, oh1) (K in (kh, kw, c) order);
 * fills rows [q0, q1) (relative to oh0 * OW). */
static void im2col_nhwc(void *vctx, int64_t q0, int64_t q1) {
  const Im2col *c = vctx;
  const ConvGeom *g = c->g;
  size_t es = c->es, run = (size_t)g->Ig * es;
  int64_t K = g->KH * g->KW * g->Ig, pbase = c->oh0 * g->OW;
  for (int64_t q = q0; q < q1; q++) {
    int64_t p = pbase + q, oh = p / g->OW, ow = p % g->OW;
    char *dst = c->col + (size_t)(q * K) * es;
    for (int64_t kh = 0; kh < g->KH; kh++) {
      int64_t ih = oh * g->sh - g->pt + kh * g->dh;
      for (int64_t kw = 0; kw < g->KW; kw++, dst += run) {
        int64_t iw = ow * g->sw - g->pl + kw * g->dw;
        if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W)
          memset(dst, 0, run);
        else
          memcpy(dst, c->x + (size_t)((ih * g->W + iw) * g->C + c->c0) * es, run);
      }
    }
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Depthwise (Ig == 1): direct loops, float and double                                          */

typedef struct Dw {
  const ConvGeom *g;
  const void *x, *w; /* NCHW: w is (O, KH, KW); NHWC: w is (KH, KW, O) */
  void *y;
} Dw;

#define GP_DEFINE_DEPTHWISE(T, SFX)                                                              \
  static void dw_nchw_##SFX(void *vctx, int64_t q0, int64_t q1) {                                \
    const Dw *c = vctx;                                                                          \
    const ConvGeom *g = c->g;                                                                    \
    int64_t P = g->OH * g->OW;                                                                   \
    for (int64_t q = q0; q < q1; q++) { /* q = n * O + o */                                      \
      int64_t n = q / g->O, o = q % g->O;                                                        \
      const T *x = (const T *)c->x + (n * g->C + o / g->Og) * g->H * g->W;                       \
      const T *wk = (const T *)c->w + o * g->KH * g->KW;                                         \
      T *y = (T *)c->y + q * P;                                                                  \
      memset(y, 0, (size_t)P * sizeof(T));                                                       \
      for (int64_t kh = 0; kh < g->KH; kh++)                                                     \
        for (int64_t kw = 0; kw < g->KW; kw++) {                                                 \
          T v = wk[kh * g->KW + kw];                                                             \
          int64_t lo = g->pl - kw * g->dw, ow0, ow1;                                             \
          valid_range(g->OW, g->W, lo, g->sw, &ow0, &ow1);                                       \
          if (ow0 >= ow1) continue;                                                              \
          for (int64_t oh = 0; oh < g->OH; oh++) {                                               \
            int64_t ih = oh * g->sh - g->pt + kh * g->dh;                                        \
            if (ih < 0 || ih >= g->H) continue;                                                  \
            const T *xr = x + ih * g->W + ow0 * g->sw - lo;                                      \
            T *yr = y + oh * g->OW + ow0;                                                        \
            int64_t len = ow1 - ow0;                                                             \
            if (g->sw == 1)                                                                      \
              for (int64_t j = 0; j < len; j++) yr[j] += v * xr[j];                              \
            else                                                                                 \
              for (int64_t j = 0; j < len; j++) yr[j] += v * xr[j * g->sw];                      \
          }                                                                                      \
        }                                                                                        \
    }                                                                                            \
  }                                                                                              \
  static void dw_nhwc_##SFX(void *vctx, int64_t r0, int64_t r1) {                                \
    const Dw *c = vctx;                                                                          \
    const ConvGeom *g = c->g;                                                                    \
    for (int64_t r = r0; r < r1; r++) { /* r = n * OH + oh */                                    \
      int64_t n = r / g->OH, oh = r % g->OH;                                                     \
      for (int64_t ow = 0; ow < g->OW; ow++) {                                                   \
        T *y = (T *)c->y + (r * g->OW + ow) * g->O;                                              \
        memset(y, 0, (size_t)g->O * sizeof(T));                                                  \
        for (int64_t kh = 0; kh < g->KH; kh++) {                                                 \
          int64_t ih = oh * g->sh - g->pt + kh * g->dh;                                          \
          if (ih < 0 || ih >= g->H) continue;                                                    \
          for (int64_t kw = 0; kw < g->KW; kw++) {                                               \
            int64_t iw = ow * g->sw - g->pl + kw * g->dw;                                        \
            if (iw < 0 || iw >= g->W) continue;                                                  \
            const T *xp = (const T *)c->x + ((n * g->H + ih) * g->W + iw) * g->C;                \
            const T *wp = (const T *)c->w + (kh * g->KW + kw) * g->O;                            \
            if (g->Og == 1)                                                                      \
              for (int64_t o = 0; o < g->O; o++) y[o] += wp[o] * xp[o];                          \
            else                                                                                 \
              for (int64_t o = 0; o < g->O; o++) y[o] += wp[o] * xp[o / g->Og];                  \
          }                                                                                      \
        }                                                                                        \
      }                                                                                          \
    }                                                                                            \
  }

GP_DEFINE_DEPTHWISE(float, f32)
GP_DEFINE_DEPTHWISE(double, f64)

/* ------------------------------------------------------------------------------------------ */
/* The float core                                                                              */

/* Work per thread chunk (elements) below which a loop stays on one thread. */
#define GRAIN_ELEMS 32768

static int64_t grain_for(int64_t per_item) {
  if (per_item < 1) per_item = 1;
  int64_t g = GRAIN_ELEMS / per_item;
  return g < 1 ? 1 : g;
}

/* One convolution's operands, for conv_block, conv_blocks and conv_direct_items. */
typedef struct ConvJob {
  const ConvGeom *g;
  bool dbl, wtrans;
  size_t es;
  const char *x, *w;
  char *y;
  int64_t rpb, nblk; /* output rows per block, blocks per (batch item, group) */
  int64_t wq;        /* NCHW: x is phase-split (see Split) when > 0 */
  int64_t items;     /* work items of conv_blocks / conv_direct_items ... */
  atomic_llong next; /* ... handed out one at a time (a thread slowed down takes fewer) */
} ConvJob;

/* im2col of output rows [oh0, oh1) of batch item n and group gi into col (on nthreads threads),
 * then its GEMM into y (split over gemm_threads threads; 1: one call, which OpenBLAS may thread). */
static void conv_block(const ConvJob *j, int64_t n, int64_t gi, int64_t oh0, int64_t oh1, char *col,
                       int32_t nthreads, int32_t gemm_threads) {
  const ConvGeom *g = j->g;
  size_t es = j->es;
  int64_t P = g->OH * g->OW, K = g->Ig * g->KH * g->KW, bw = (oh1 - oh0) * g->OW, p0 = oh0 * g->OW;
  if (g->nhwc) {
    Im2col ic = {g, j->x + (size_t)(n * g->H * g->W * g->C) * es, gi * g->Ig, oh0, oh1, col, es, 0};
    gp_k_parallel_for(nthreads, bw, grain_for(K), im2col_nhwc, &ic);
    const char *b = j->wtrans ? j->w + (size_t)(gi * g->Og * K) * es : j->w + (size_t)(gi * g->Og) * es;
    par_gemm(gemm_threads, j->dbl, false, j->wtrans, bw, g->Og, K, col, K, b, j->wtrans ? K : g->O,
             j->y + (size_t)((n * P + p0) * g->O + gi * g->Og) * es, g->O);
  } else {
    int64_t plane = g->H * (j->wq ? g->sw * j->wq : g->W);
    Im2col ic = {g, j->x + (size_t)((n * g->C + gi * g->Ig) * plane) * es, 0, oh0, oh1, col, es, j->wq};
    gp_k_parallel_for(nthreads, K, grain_for(bw), im2col_nchw, &ic);
    par_gemm(gemm_threads, j->dbl, false, false, g->Og, bw, K, j->w + (size_t)(gi * g->Og * K) * es, K, col, bw,
             j->y + (size_t)((n * g->O + gi * g->Og) * P + p0) * es, P);
  }
}

/* One thread's share of the work items (batch item, group, block of output rows): each im2col'd
 * into a cache-sized buffer and multiplied by a single-threaded GEMM on the thread that made it.
 * Runs once per thread (gp_k_parallel_for over the threads). */
static void conv_blocks(void *vctx, int64_t t0, int64_t t1) {
  GP_UNUSED(t0), GP_UNUSED(t1);
  ConvJob *j = vctx;
  const ConvGeom *g = j->g;
  int64_t K = g->Ig * g->KH * g->KW;
  char *col = gp_malloc((size_t)(K * j->rpb * g->OW) * j->es);
  for (int64_t i; (i = (int64_t)atomic_fetch_add(&j->next, 1)) < j->items;) {
    int64_t b = i % j->nblk, ng = i / j->nblk, oh0 = b * j->rpb;
    int64_t oh1 = oh0 + j->rpb < g->OH ? oh0 + j->rpb : g->OH;
    conv_block(j, ng / g->G, ng % g->G, oh0, oh1, col, 1, 1);
  }
  gp_free(col);
}

/* Bytes of the im2col block each thread works in (about half of a 1 MB L2). */
#define COL_BLOCK_BYTES (512 * 1024)
/* Output positions per batch item (NHWC 1x1: over the whole batch) from which the GEMMs run on
 * our threads in blocks; below it, one im2col of the item and a GEMM on OpenBLAS's threads. */
#define MIN_BLOCKED_P 256

/* The 1x1 stride-1 unpadded NCHW case: GEMMs straight on the input, one per (batch item,
 * group), when there are enough of them for the threads.  Runs once per thread. */
static void conv_direct_items(void *vctx, int64_t t0, int64_t t1) {
  GP_UNUSED(t0), GP_UNUSED(t1);
  ConvJob *j = vctx;
  const ConvGeom *g = j->g;
  size_t es = j->es;
  int64_t P = g->OH * g->OW, K = g->Ig;
  for (int64_t i; (i = (int64_t)atomic_fetch_add(&j->next, 1)) < j->items;) {
    int64_t n = i / g->G, gi = i % g->G;
    gemm(j->dbl, false, false, g->Og, P, K, j->w + (size_t)(gi * g->Og * K) * es, K,
         j->x + (size_t)((n * g->C + gi * g->Ig) * P) * es, P, j->y + (size_t)((n * g->O + gi * g->Og) * P) * es, P,
         1);
  }
}

/* x: compact input (layout per g->nhwc); w: canonical weight (NCHW: OIHW; NHWC: HWIO, or OHWI
 * when wtrans; depthwise NHWC: HWIO); y: compact output.  All of dtype float or double. */
static void conv_float(const ConvGeom *g, bool dbl, const char *x, const char *w, bool wtrans,
                       char *y, int32_t nthreads) {
  size_t es = dbl ? sizeof(double) : sizeof(float);
  int64_t P = g->OH * g->OW, K = g->Ig * g->KH * g->KW;
  if (g->Ig == 1 && g->G > 1) {
    Dw d = {g, x, w, y};
    if (g->nhwc)
      gp_k_parallel_for(nthreads, g->N * g->OH, grain_for(g->OW * g->O * g->KH * g->KW),
                        dbl ? dw_nhwc_f64 : dw_nhwc_f32, &d);
    else
      gp_k_parallel_for(nthreads, g->N * g->O, grain_for(P * g->KH * g->KW), dbl ? dw_nchw_f64 : dw_nchw_f32,
                        &d);
    return;
  }
  /* float32 always, float64 on large spatial sizes: on our threads (OpenBLAS single-threaded
   * inside); small float64 ones on OpenBLAS's threads */
  bool ours = !dbl || P * (g->nhwc ? g->N : 1) >= MIN_BLOCKED_P;
  int blas_old = blas_threads(dbl, ours ? 1 : nthreads);
  /* our threads for im2col and GEMM splits; 1 when OpenBLAS's spinning workers hold the cores */
  int32_t nt = ours ? nthreads : 1;
  ConvJob j = {g, dbl, wtrans, es, x, w, y, g->OH, 1, 0, 0, 0};
  bool direct = g->KH == 1 && g->KW == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pl == 0 &&
                g->OH == g->H && g->OW == g->W;
  if (direct && g->nhwc) { /* the input rows (n, h, w) of all batch items are the GEMM's rows */
    for (int64_t gi = 0; gi < g->G; gi++) {
      const char *b = wtrans ? w + (size_t)(gi * g->Og * K) * es : w + (size_t)(gi * g->Og) * es;
      par_gemm(nt, dbl, false, wtrans, g->N * P, g->Og, K, x + (size_t)(gi * g->Ig) * es, g->C, b,
               wtrans ? K : g->O, y + (size_t)(gi * g->Og) * es, g->O);
    }
  } else if (direct) {
    int64_t items = g->N * g->G;
    if (ours && items >= 2 * (int64_t)nthreads) {
      j.items = items;
      gp_k_parallel_for(nthreads, nthreads, 1, conv_direct_items, &j);
    } else {
      for (int64_t i = 0; i < items; i++) {
        int64_t n = i / g->G, gi = i % g->G;
        par_gemm(nt, dbl, false, false, g->Og, P, K, w + (size_t)(gi * g->Og * K) * es, K,
                 x + (size_t)((n * g->C + gi * g->Ig) * P) * es, P, y + (size_t)((n * g->O + gi * g->Og) * P) * es,
                 P);
      }
    }
  } else {
    char *xs = NULL;
    /* the phase split copies the whole input; it pays when im2col reads each input element
     * more than once (KH * KW > sh * sw: not for a 1x1 stride-2 convolution, which reads a
     * quarter of it) */
    if (!g->nhwc && g->sw > 1 && g->KH * g->KW > g->sh * g->sw) {
      Split sp = {g, x, NULL, es, (g->W + g->sw - 1) / g->sw};
      int64_t rows = g->N * g->C * g->H;
      xs = sp.xs = gp_malloc((size_t)(rows * g->sw * sp.wq) * es);
      gp_k_parallel_for(nt, rows, grain_for(g->W), split_rows, &sp);
      j.x = xs;
      j.wq = sp.wq;
    }
    if (P >= MIN_BLOCKED_P) {
      int64_t rpb = COL_BLOCK_BYTES / (K * g->OW * (int64_t)es);
      int64_t fair = (g->OH * g->N * g->G + nthreads - 1) / nthreads; /* rows per thread, at most */
      if (rpb > fair) rpb = fair;
      if (rpb > g->OH) rpb = g->OH;
      j.rpb = rpb < 1 ? 1 : rpb;
      j.nblk = (g->OH + j.rpb - 1) / j.rpb;
      j.items = g->N * g->G * j.nblk;
      gp_k_parallel_for(nthreads, j.items < nthreads ? j.items : nthreads, 1, conv_blocks, &j);
    } else {
      char *col = gp_malloc((size_t)(K * P) * es);
      for (int64_t n = 0; n < g->N; n++)
        for (int64_t gi = 0; gi < g->G; gi++) conv_block(&j, n, gi, 0, g->OH, col, nt, nt);
      gp_free(col);
    }
    gp_free(xs);
  }
  blas_restore(dbl, blas_old);
}

/* ------------------------------------------------------------------------------------------ */
/* The integer loop                                                                            */

typedef struct IntConv {
  const ConvGeom *g;
  const int64_t *x; /* compact, g's layout */
  const int64_t *w; /* OIHW */
  int64_t *y;       /* compact, g's layout */
} IntConv;

static void conv_int_rows(void *vctx, int64_t q0, int64_t q1) {
  const IntConv *c = vctx;
  const ConvGeom *g = c->g;
  for (int64_t q = q0; q < q1; q++) { /* q = n * O + o */
    int64_t n = q / g->O, o = q % g->O, c0 = (o / g->Og) * g->Ig;
    const int64_t *wk = c->w + o * g->Ig * g->KH * g->KW;
    for (int64_t oh = 0; oh < g->OH; oh++)
      for (int64_t ow = 0; ow < g->OW; ow++) {
        uint64_t acc = 0;
        for (int64_t ci = 0; ci < g->Ig; ci++)
          for (int64_t kh = 0; kh < g->KH; kh++) {
            int64_t ih = oh * g->sh - g->pt + kh * g->dh;
            if (ih < 0 || ih >= g->H) continue;
            for (int64_t kw = 0; kw < g->KW; kw++) {
              int64_t iw = ow * g->sw - g->pl + kw * g->dw;
              if (iw < 0 || iw >= g->W) continue;
              int64_t xi = g->nhwc ? ((n * g->H + ih) * g->W + iw) * g->C + c0 + ci
                                   : ((n * g->C + c0 + ci) * g->H + ih) * g->W + iw;
              acc += (uint64_t)c->x[xi] * (uint64_t)wk[(ci * g->KH + kh) * g->KW + kw];
            }
          }
        int64_t yi = g->nhwc ? ((n * g->OH + oh) * g->OW + ow) * g->O + o
                             : ((n * g->O + o) * g->OH + oh) * g->OW + ow;
        c->y[yi] = (int64_t)acc;
      }
  }
}

/* ------------------------------------------------------------------------------------------ */
/* nn.conv2d                                                                                   */

static int attr_pair(const GPKernelArgs *a, const char *key, int64_t out[2]) {
  int32_t n;
  const int64_t *v = gp_ops_attr_ints(a->op, a->attrs, key, &n);
  if (n != 1 && n != 2) {
    gp_error_set(GP_ERR_VALUE, "%s must have 1 or 2 values", key);
    return -1;
  }
  out[0] = v[0];
  out[1] = v[n - 1];
  if (out[0] < 1 || out[1] < 1) {
    gp_error_set(GP_ERR_VALUE, "%s must be >= 1", key);
    return -1;
  }
  return 0;
}

/* The kernel dtypes of data, weight and result of a conv2d / dense (`what`): bool and mixed
 * integer/float inputs are refused. */
static int gemm_dtypes(const DLTensor *xt, const DLTensor *wt, const DLTensor *yt, const char *what, int *kx,
                       int *kw, int *ky) {
  if (gp_k_dtype_check(xt->dtype, "data", kx) != 0 || gp_k_dtype_check(wt->dtype, "weight", kw) != 0 ||
      gp_k_dtype_check(yt->dtype, "out_dtype", ky) != 0)
    return -1;
  if (*kx == GP_K_BOOL || *kw == GP_K_BOOL || *ky == GP_K_BOOL) {
    gp_error_set(GP_ERR_UNSUPPORTED, "bool %s is not supported", what);
    return -1;
  }
  if (gp_k_is_float(*kx) != gp_k_is_float(*kw)) {
    char b1[24], b2[24];
    gp_error_set(GP_ERR_UNSUPPORTED, "data dtype %s with weight dtype %s is not supported",
                 gp_dtype_str(xt->dtype, b1), gp_dtype_str(wt->dtype, b2));
    return -1;
  }
  return 0;
}

/* Positions of O, I, H, W in a kernel layout that is a permutation of "OIHW"; -1 otherwise. */
static int kernel_layout_pos(const char *s, int32_t pos[4]) {
  static const char letters[] = "OIHW";
  if (strlen(s) != 4) return -1;
  for (int i = 0; i < 4; i++) {
    const char *p = strchr(s, letters[i]);
    if (!p) return -1;
    pos[i] = (int32_t)(p - s);
  }
  return 0;
}

/* True when strides st (for dims d, in O, I, H, W order) equal want wherever the dim exceeds 1. */
static bool strides_are(const int64_t d[4], const int64_t st[4], const int64_t want[4]) {
  for (int i = 0; i < 4; i++)
    if (d[i] > 1 && st[i] != want[i]) return false;
  return true;
}

static int convnd_common(const GPKernelArgs *a, bool transpose);
/* convnd_run's arguments beside the canonical data and result (gp_k_run_canonical's user). */
typedef struct {
  const int32_t *wpos;
  bool transpose;
} ConvNdRun;
static int convnd_run_canonical(const GPKernelArgs *a, const DLTensor *x, DLTensor *y, void *user);

int gp_knn_conv2d(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (a->num_inputs != 2 || a->num_outputs != 1) {
    gp_error_set(GP_ERR_VALUE, "expects 2 inputs and 1 output, got %d and %d", (int)a->num_inputs,
                 (int)a->num_outputs);
    return -1;
  }
  const DLTensor *xt = a->inputs[0], *wt = a->inputs[1];
  DLTensor *yt = a->outputs[0];
  int64_t strides[2], dil[2], pad[4];
  int32_t npad;
  const int64_t *pv = gp_ops_attr_ints(a->op, a->attrs, "padding", &npad);
  if (attr_pair(a, "strides", strides) != 0 || attr_pair(a, "dilation", dil) != 0 ||
      gp_ops_pad4(pv, npad, "padding", pad) != 0)
    return -1;
  int64_t groups = gp_ops_attr_int(a->op, a->attrs, "groups");
  const char *dl = gp_ops_attr_str(a->op, a->attrs, "data_layout");
  const char *kl = gp_ops_attr_str(a->op, a->attrs, "kernel_layout");
  const char *ol = gp_ops_attr_str(a->op, a->attrs, "out_layout");
  bool nhwc = strcmp(dl, "NHWC") == 0;
  int32_t dpos[5], opos[5];
  if (!gp_k_axes_of(dl, "NCHW", dpos) || (ol[0] && !gp_k_axes_of(ol, "NCHW", opos))) {
    gp_error_set(GP_ERR_UNSUPPORTED, "data_layout \"%s\" / out_layout \"%s\" is not supported (a permutation of NCHW)",
                 dl, ol);
    return -1;
  }
  /* other permutations (HWCN, ...) and an out_layout of its own: the N-d kernel, which gathers
   * them into NCHW */
  if ((!nhwc && strcmp(dl, "NCHW") != 0) || (ol[0] && strcmp(ol, dl) != 0)) return convnd_common(a, false);
  int32_t kp[4]; /* positions of O, I, H, W */
  if (kernel_layout_pos(kl, kp) != 0) {
    gp_error_set(GP_ERR_UNSUPPORTED, "kernel_layout \"%s\" is not supported (a permutation of OIHW)", kl);
    return -1;
  }
  if (xt->ndim != 4 || wt->ndim != 4 || yt->ndim != 4) {
    gp_error_set(GP_ERR_VALUE, "data, weight and result must have rank 4");
    return -1;
  }
  ConvGeom g = {0};
  g.nhwc = nhwc;
  g.N = xt->shape[0];
  g.C = xt->shape[nhwc ? 3 : 1];
  g.H = xt->shape[nhwc ? 1 : 2];
  g.W = xt->shape[nhwc ? 2 : 3];
  g.O = yt->shape[nhwc ? 3 : 1];
  g.OH = yt->shape[nhwc ? 1 : 2];
  g.OW = yt->shape[nhwc ? 2 : 3];
  int64_t wd[4]; /* O, I, H, W extents of the weight */
  for (int i = 0; i < 4; i++) wd[i] = wt->shape[kp[i]];
  g.KH = wd[2];
  g.KW = wd[3];
  g.G = groups;
  g.Ig = wd[1];
  g.sh = strides[0], g.sw = strides[1], g.dh = dil[0], g.dw = dil[1];
  g.pt = pad[0], g.pl = pad[1];
  int64_t hnum = g.H + pad[0] + pad[2] - (g.KH - 1) * g.dh - 1;
  int64_t wnum = g.W + pad[1] + pad[3] - (g.KW - 1) * g.dw - 1;
  if (groups < 1 || wd[0] != g.O || g.O % groups != 0 || g.Ig * groups != g.C ||
      yt->shape[0] != g.N || hnum < 0 || wnum < 0 || hnum / g.sh + 1 != g.OH ||
      wnum / g.sw + 1 != g.OW) {
    gp_error_set(GP_ERR_VALUE, "data, weight and result shapes do not agree with the attributes");
    return -1;
  }
  g.Og = g.O / groups;
  int64_t ny = g.N * g.O * g.OH * g.OW;
  if (ny == 0) return 0;

  int kx, kw, ky;
  if (gemm_dtypes(xt, wt, yt, "convolution", &kx, &kw, &ky) != 0) return -1;
  if (g.KH * g.KW * g.Ig == 0) { /* an empty sum: the zeroed output is the answer */
    memset((char *)yt->data + yt->byte_offset, 0, (size_t)ny * gp_k_elem_size(ky));
    return 0;
  }
  bool isf = gp_k_is_float(kx);
  int ct = isf ? float_compute(kx, kw, ky) : GP_K_I64;
  bool dw = g.Ig == 1 && g.G > 1;
  int64_t KK = g.KH * g.KW;
  if (isf && !dw &&
      (!blas_fits(g.Og) || !blas_fits(g.OH * g.OW * g.N) || !blas_fits(g.Ig * KK * g.Og) || !blas_fits(g.C) ||
       !blas_fits(g.O))) {
    gp_error_set(GP_ERR_UNSUPPORTED, "a convolution this large exceeds BLAS's int sizes");
    return -1;
  }
  /* the weight in canonical form */
  GPKView wv;
  gp_k_view(wt, &wv);
  int64_t wst[4];
  for (int i = 0; i < 4; i++) wst[i] = wv.strides[kp[i]];
  const int64_t oihw[4] = {g.Ig * KK, KK, g.KW, 1};
  const int64_t hwio[4] = {1, g.O, g.KW * g.Ig * g.O, g.Ig * g.O};
  const int64_t ohwi[4] = {KK * g.Ig, 1, g.KW * g.Ig, g.Ig};
  bool wtrans = false;
  const char *wp = NULL;
  char *wbuf = NULL;
  if (isf && kw == ct) {
    if (!nhwc && strides_are(wd, wst, oihw)) wp = wv.data;
    else if (nhwc && strides_are(wd, wst, hwio)) wp = wv.data;
    else if (nhwc && !dw && strides_are(wd, wst, ohwi)) wp = wv.data, wtrans = true;
  }
  if (!wp) { /* repack (and convert) into OIHW for NCHW and the integer loop, HWIO for NHWC */
    const int64_t *want = !isf || !nhwc ? oihw : hwio;
    size_t eo = gp_k_elem_size(ct);
    wbuf = gp_malloc((size_t)(g.O * g.Ig * KK) * eo);
    for (int64_t o = 0; o < g.O; o++)
      for (int64_t i = 0; i < g.Ig; i++)
        for (int64_t h = 0; h < g.KH; h++)
          for (int64_t w = 0; w < g.KW; w++) {
            const char *src = wv.data + (o * wst[0] + i * wst[1] + h * wst[2] + w * wst[3]) * (int64_t)wv.elem;
            char *dst = wbuf + (o * want[0] + i * want[1] + h * want[2] + w * want[3]) * (int64_t)eo;
            if (ct == GP_K_F32) {
              float f;
              if (kw == GP_K_F32)
                memcpy(&f, src, 4);
              else
                f = (float)gp_k_load_f64(src, kw);
              memcpy(dst, &f, 4);
            } else if (ct == GP_K_F64) {
              double d = gp_k_load_f64(src, kw);
              memcpy(dst, &d, 8);
            } else {
              int64_t v = gp_k_load_i64(src, kw);
              memcpy(dst, &v, 8);
            }
          }
    wp = wbuf;
  }
  void *xs = NULL;
  const char *xp = gp_knn_load_as(xt, ct, &xs);
  char *ybuf = NULL;
  char *yp = (char *)yt->data + yt->byte_offset;
  if (ky != ct) yp = ybuf = gp_calloc((size_t)ny, gp_k_elem_size(ct));
  int32_t nth = a->num_threads > 0 ? a->num_threads : 1;
  if (isf) {
    conv_float(&g, ct == GP_K_F64, xp, wp, wtrans, yp, nth);
  } else {
    IntConv ic = {&g, (const int64_t *)xp, (const int64_t *)wp, (int64_t *)yp};
    gp_k_parallel_for(nth, g.N * g.O, grain_for(g.OH * g.OW * g.Ig * KK), conv_int_rows, &ic);
  }
  if (ybuf) gp_knn_store_from(yt, ybuf, ct);
  gp_free(ybuf);
  gp_free(xs);
  gp_free(wbuf);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* nn.dense                                                                                    */

typedef struct IntDense {
  const int64_t *x, *w;
  int64_t *y;
  int64_t N, K;
} IntDense;

static void dense_int_rows(void *vctx, int64_t m0, int64_t m1) {
  const IntDense *c = vctx;
  for (int64_t m = m0; m < m1; m++)
    for (int64_t n = 0; n < c->N; n++) {
      uint64_t acc = 0;
      const int64_t *xr = c->x + m * c->K, *wr = c->w + n * c->K;
      for (int64_t k = 0; k < c->K; k++) acc += (uint64_t)xr[k] * (uint64_t)wr[k];
      c->y[m * c->N + n] = (int64_t)acc;
    }
}

int gp_knn_dense(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (a->num_inputs != 2 || a->num_outputs != 1) {
    gp_error_set(GP_ERR_VALUE, "expects 2 inputs and 1 output, got %d and %d", (int)a->num_inputs,
                 (int)a->num_outputs);
    return -1;
  }
  const DLTensor *xt = a->inputs[0], *wt = a->inputs[1];
  DLTensor *yt = a->outputs[0];
  if (xt->ndim < 1 || wt->ndim != 2 || yt->ndim != xt->ndim) {
    gp_error_set(GP_ERR_VALUE, "data must have rank >= 1 and weight rank 2");
    return -1;
  }
  int64_t K = xt->shape[xt->ndim - 1], N = wt->shape[0], M = 1;
  for (int32_t i = 0; i + 1 < xt->ndim; i++) M *= xt->shape[i];
  if (wt->shape[1] != K || yt->shape[yt->ndim - 1] != N) {
    gp_error_set(GP_ERR_VALUE, "data, weight and result shapes do not agree");
    return -1;
  }
  int kx, kw, ky;
  if (gemm_dtypes(xt, wt, yt, "dense", &kx, &kw, &ky) != 0) return -1;
  if (M * N == 0) return 0;
  if (K == 0) {
    memset((char *)yt->data + yt->byte_offset, 0, (size_t)(M * N) * gp_k_elem_size(ky));
    return 0;
  }
  bool isf = gp_k_is_float(kx);
  if (isf && (!blas_fits(M) || !blas_fits(N) || !blas_fits(K))) {
    gp_error_set(GP_ERR_UNSUPPORTED, "dense of (%lld x %lld) by (%lld x %lld) exceeds BLAS's int sizes",
                 (long long)M, (long long)K, (long long)N, (long long)K);
    return -1;
  }
  int ct = isf ? float_compute(kx, kw, ky) : GP_K_I64;
  int32_t nth = a->num_threads > 0 ? a->num_threads : 1;
  void *xs = NULL, *ws = NULL;
  char *ybuf = NULL;
  char *yp = (char *)yt->data + yt->byte_offset;
  if (ky != ct) yp = ybuf = gp_calloc((size_t)(M * N), gp_k_elem_size(ct));
  const void *xp = gp_knn_load_as(xt, ct, &xs);
  /* a weight with unit column stride and rows at least K apart is used in place (ldb) */
  GPKView wv;
  gp_k_view(wt, &wv);
  const void *wp;
  int64_t ldw = K;
  if (isf && kw == ct && (wv.strides[1] == 1 || K == 1) && (wv.strides[0] >= K || N == 1) &&
      blas_fits(wv.strides[0])) {
    wp = wv.data;
    ldw = N == 1 ? K : wv.strides[0];
  } else {
    wp = gp_knn_load_as(wt, ct, &ws);
  }
  if (isf) { /* on OpenBLAS's threads */
    bool dbl = ct == GP_K_F64;
    int blas_old = blas_threads(dbl, nth);
    gemm(dbl, false, true, M, N, K, xp, K, wp, ldw, yp, N, nth);
    blas_restore(dbl, blas_old);
  } else {
    IntDense d = {xp, wp, (int64_t *)yp, N, K};
    gp_k_parallel_for(nth, M, grain_for(N * K), dense_int_rows, &d);
  }
  if (ybuf) gp_knn_store_from(yt, ybuf, ct);
  gp_free(ybuf);
  gp_free(xs);
  gp_free(ws);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* N-d convolutions (nn.conv1d, nn.conv3d) and transposed convolutions (nn.conv{1,2,3}d_transpose),
 * channel-first data layouts only (NCW, NCHW, NCDHW).  Every case runs as a 3-d one (missing
 * leading spatial axes have extent 1).  Floats: per batch item and group, an im2col and a GEMM
 * (conv) or a GEMM and a col2im (transpose); integers: direct loops accumulating in uint64.    */

typedef struct ConvNd {
  int64_t N, C, O, G, Ig, Og;
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3];
  int64_t Pin, Pout, KK;
} ConvNd;

/* An INTS attribute of nd values (1 replicated), each >= min, into the last nd of out[3] (the
 * others fill). */
static int attr_nd3(const GPKernelArgs *a, const char *key, int32_t nd, int64_t min, int64_t fill,
                    int64_t out[3]) {
  int32_t n;
  const int64_t *v = gp_ops_attr_ints(a->op, a->attrs, key, &n);
  if (n != 1 && n != nd) {
    gp_error_set(GP_ERR_VALUE, "%s must have 1 or %d values", key, (int)nd);
    return -1;
  }
  for (int32_t i = 0; i < 3; i++) out[i] = fill;
  for (int32_t i = 0; i < nd; i++) {
    out[3 - nd + i] = v[n == 1 ? 0 : i];
    if (out[3 - nd + i] < min) {
      gp_error_set(GP_ERR_VALUE, "%s must be >= %lld", key, (long long)min);
      return -1;
    }
  }
  return 0;
}

static int attr_pad3(const GPKernelArgs *a, int32_t nd, int64_t pb[3], int64_t pe[3]) {
  int32_t n;
  const int64_t *v = gp_ops_attr_ints(a->op, a->attrs, "padding", &n);
  if (n != 1 && n != nd && n != 2 * nd) {
    gp_error_set(GP_ERR_VALUE, "padding must have 1, %d or %d values", (int)nd, (int)(2 * nd));
    return -1;
  }
  for (int32_t i = 0; i < 3; i++) pb[i] = pe[i] = 0;
  for (int32_t i = 0; i < nd; i++) {
    pb[3 - nd + i] = v[n == 1 ? 0 : i];
    pe[3 - nd + i] = v[n == 1 ? 0 : n == nd ? i : nd + i];
    if (pb[3 - nd + i] < 0 || pe[3 - nd + i] < 0) {
      gp_error_set(GP_ERR_VALUE, "padding must be >= 0");
      return -1;
    }
  }
  return 0;
}

/* The layouts of an N-d (transposed) convolution: data and out (empty: data's) permutations of
 * "NC" + spatial, positions of those axes into dpos / opos; the weight's a permutation of "OI" +
 * spatial, positions into wpos (O, I, then the spatial axes). */
static int convnd_layouts(const GPKernelArgs *a, int32_t nd, int32_t dpos[5], int32_t opos[5], int32_t wpos[5]) {
  static const char *const sp[4] = {"", "W", "HW", "DHW"};
  char want[8], kcanon[8];
  snprintf(want, sizeof want, "NC%s", sp[nd]);
  snprintf(kcanon, sizeof kcanon, "OI%s", sp[nd]);
  const char *dl = gp_ops_attr_str(a->op, a->attrs, "data_layout");
  const char *kl = gp_ops_attr_str(a->op, a->attrs, "kernel_layout");
  const char *ol = gp_ops_attr_str(a->op, a->attrs, "out_layout");
  if (!gp_k_axes_of(dl, want, dpos) || !gp_k_axes_of(ol[0] ? ol : dl, want, opos)) {
    gp_error_set(GP_ERR_UNSUPPORTED, "data_layout \"%s\" / out_layout \"%s\" is not supported (a permutation of %s)",
                 dl, ol, want);
    return -1;
  }
  if (!gp_k_axes_of(kl, kcanon, wpos)) {
    gp_error_set(GP_ERR_UNSUPPORTED, "kernel_layout \"%s\" is not supported (a permutation of %s)", kl, kcanon);
    return -1;
  }
  return 0;
}

/* The weight into canonical order (a0, a1, k...) as compute dtype ct, where (a0, a1) is (O, I)
 * for a convolution and (I, O) for a transposed one; gp_malloc'd. */
static void *convnd_weight(const DLTensor *wt, const int32_t wpos[5], int32_t nd, bool io, int ct) {
  GPKView wv;
  gp_k_view(wt, &wv);
  int32_t order[5];
  order[0] = wpos[io ? 1 : 0];
  order[1] = wpos[io ? 0 : 1];
  for (int32_t i = 0; i < nd; i++) order[2 + i] = wpos[2 + i];
  int32_t r = nd + 2;
  int64_t total = gp_k_numel(wt);
  size_t eo = gp_k_elem_size(ct);
  char *dst = gp_malloc(total ? (size_t)total * eo : 1);
  int kw = gp_k_dtype(wt->dtype);
  for (int64_t f = 0; f < total; f++) {
    int64_t rem = f, off = 0;
    for (int32_t i = r - 1; i >= 0; i--) {
      int64_t ext = wt->shape[order[i]];
      off += (rem % ext) * wv.strides[order[i]];
      rem /= ext;
    }
    const char *src = wv.data + off * (int64_t)wv.elem;
    if (ct == GP_K_F32) {
      float v = (float)gp_k_load_f64(src, kw);
      memcpy(dst + (size_t)f * eo, &v, 4);
    } else if (ct == GP_K_F64) {
      double v = gp_k_load_f64(src, kw);
      memcpy(dst + (size_t)f * eo, &v, 8);
    } else {
      int64_t v = gp_k_load_i64(src, kw);
      memcpy(dst + (size_t)f * eo, &v, 8);
    }
  }
  return dst;
}

typedef struct ConvNdJob {
  const ConvNd *g;
  const char *x; /* the current (batch item, group)'s input channels */
  char *col;
  const int64_t *xi; /* integer loops */
  const int64_t *wi;
  uint64_t *yi;
} ConvNdJob;

/* Rows r = (ci, kd, kh, kw) of the im2col matrix (K x Pout). */
#define GP_DEFINE_IM2COL_ND(T, SFX)                                                              \
  static void im2col_nd_##SFX(void *vctx, int64_t r0, int64_t r1) {                              \
    const ConvNdJob *j = vctx;                                                                   \
    const ConvNd *g = j->g;                                                                      \
    const T *x = (const T *)j->x;                                                                \
    T *col = (T *)j->col;                                                                        \
    for (int64_t r = r0; r < r1; r++) {                                                          \
      int64_t ci = r / g->KK, kk = r % g->KK;                                                    \
      int64_t kw = kk % g->k[2], kh = (kk / g->k[2]) % g->k[1], kd = kk / (g->k[2] * g->k[1]);   \
      const T *xc = x + ci * g->Pin;                                                             \
      T *row = col + r * g->Pout;                                                                \
      for (int64_t od = 0; od < g->out[0]; od++) {                                               \
        int64_t id = od * g->s[0] - g->pb[0] + kd * g->d[0];                                     \
        for (int64_t oh = 0; oh < g->out[1]; oh++) {                                             \
          int64_t ih = oh * g->s[1] - g->pb[1] + kh * g->d[1];                                   \
          T *dst = row + (od * g->out[1] + oh) * g->out[2];                                      \
          bool inside = id >= 0 && id < g->in[0] && ih >= 0 && ih < g->in[1];                    \
          for (int64_t ow = 0; ow < g->out[2]; ow++) {                                           \
            int64_t iw = ow * g->s[2] - g->pb[2] + kw * g->d[2];                                 \
            dst[ow] = inside && iw >= 0 && iw < g->in[2]                                         \
                          ? xc[(id * g->in[1] + ih) * g->in[2] + iw]                             \
                          : (T)0;                                                                \
          }                                                                                      \
        }                                                                                        \
      }                                                                                          \
    }                                                                                            \
  }                                                                                              \
  /* col2im: output channels [o0, o1) of the group gather rows (og, kd, kh, kw) of col          \
   * (Og*KK x Pin) into y (the group's output channels) */                                      \
  static void col2im_nd_##SFX(void *vctx, int64_t o0, int64_t o1) {                              \
    const ConvNdJob *j = vctx;                                                                   \
    const ConvNd *g = j->g;                                                                      \
    const T *col = (const T *)j->col;                                                            \
    T *y = (T *)j->x; /* (the output here) */                                                    \
    for (int64_t og = o0; og < o1; og++)                                                         \
      for (int64_t kk = 0; kk < g->KK; kk++) {                                                   \
        int64_t kw = kk % g->k[2], kh = (kk / g->k[2]) % g->k[1], kd = kk / (g->k[2] * g->k[1]); \
        const T *row = col + (og * g->KK + kk) * g->Pin;                                         \
        T *yc = y + og * g->Pout;                                                                \
        for (int64_t id = 0; id < g->in[0]; id++) {                                              \
          int64_t od = id * g->s[0] - g->pb[0] + kd * g->d[0];                                   \
          if (od < 0 || od >= g->out[0]) continue;                                               \
          for (int64_t ih = 0; ih < g->in[1]; ih++) {                                            \
            int64_t oh = ih * g->s[1] - g->pb[1] + kh * g->d[1];                                 \
            if (oh < 0 || oh >= g->out[1]) continue;                                             \
            const T *src = row + (id * g->in[1] + ih) * g->in[2];                                \
            T *dst = yc + (od * g->out[1] + oh) * g->out[2];                                     \
            for (int64_t iw = 0; iw < g->in[2]; iw++) {                                          \
              int64_t ow = iw * g->s[2] - g->pb[2] + kw * g->d[2];                               \
              if (ow >= 0 && ow < g->out[2]) dst[ow] += src[iw];                                 \
            }                                                                                    \
          }                                                                                      \
        }                                                                                        \
      }                                                                                          \
  }
GP_DEFINE_IM2COL_ND(float, f32)
GP_DEFINE_IM2COL_ND(double, f64)

/* Integer convolution: items q = n * O + o. */
static void convnd_int(void *vctx, int64_t q0, int64_t q1) {
  const ConvNdJob *j = vctx;
  const ConvNd *g = j->g;
  for (int64_t q = q0; q < q1; q++) {
    int64_t n = q / g->O, o = q % g->O, c0 = (o / g->Og) * g->Ig;
    const int64_t *wk = j->wi + o * g->Ig * g->KK;
    uint64_t *y = j->yi + q * g->Pout;
    for (int64_t p = 0; p < g->Pout; p++) {
      int64_t ow = p % g->out[2], oh = (p / g->out[2]) % g->out[1], od = p / (g->out[2] * g->out[1]);
      uint64_t acc = 0;
      for (int64_t ci = 0; ci < g->Ig; ci++) {
        const int64_t *xc = j->xi + (n * g->C + c0 + ci) * g->Pin;
        for (int64_t kk = 0; kk < g->KK; kk++) {
          int64_t kw = kk % g->k[2], kh = (kk / g->k[2]) % g->k[1], kd = kk / (g->k[2] * g->k[1]);
          int64_t id = od * g->s[0] - g->pb[0] + kd * g->d[0];
          int64_t ih = oh * g->s[1] - g->pb[1] + kh * g->d[1];
          int64_t iw = ow * g->s[2] - g->pb[2] + kw * g->d[2];
          if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1] || iw < 0 || iw >= g->in[2]) continue;
          acc += (uint64_t)xc[(id * g->in[1] + ih) * g->in[2] + iw] * (uint64_t)wk[ci * g->KK + kk];
        }
      }
      y[p] = acc;
    }
  }
}

/* Integer transposed convolution: items q = n * O + o (the weight is (C, Og, k...)). */
static void convnd_t_int(void *vctx, int64_t q0, int64_t q1) {
  const ConvNdJob *j = vctx;
  const ConvNd *g = j->g;
  for (int64_t q = q0; q < q1; q++) {
    int64_t n = q / g->O, o = q % g->O, gi = o / g->Og, og = o % g->Og;
    uint64_t *y = j->yi + q * g->Pout;
    for (int64_t ci = 0; ci < g->Ig; ci++) {
      int64_t c = gi * g->Ig + ci;
      const int64_t *xc = j->xi + (n * g->C + c) * g->Pin;
      const int64_t *wk = j->wi + (c * g->Og + og) * g->KK;
      for (int64_t kk = 0; kk < g->KK; kk++) {
        int64_t kw = kk % g->k[2], kh = (kk / g->k[2]) % g->k[1], kd = kk / (g->k[2] * g->k[1]);
        uint64_t wv = (uint64_t)wk[kk];
        for (int64_t p = 0; p < g->Pin; p++) {
          int64_t iw = p % g->in[2], ih = (p / g->in[2]) % g->in[1], id = p / (g->in[2] * g->in[1]);
          int64_t od = id * g->s[0] - g->pb[0] + kd * g->d[0];
          int64_t oh = ih * g->s[1] - g->pb[1] + kh * g->d[1];
          int64_t ow = iw * g->s[2] - g->pb[2] + kw * g->d[2];
          if (od < 0 || od >= g->out[0] || oh < 0 || oh >= g->out[1] || ow < 0 || ow >= g->out[2]) continue;
          y[(od * g->out[1] + oh) * g->out[2] + ow] += (uint64_t)xc[p] * wv;
        }
      }
    }
  }
}

static int convnd_run(const GPKernelArgs *a, const DLTensor *xt, DLTensor *yt, const int32_t *wpos,
                      bool transpose);

/* Checks the arity and ranks, and runs the convolution in "NC" + spatial order: data and
 * result in another permutation (NWC, NHWC, NDHWC, ...) are gathered into and scattered from
 * canonical copies. */
static int convnd_common(const GPKernelArgs *a, bool transpose) {
  if (a->num_inputs != 2 || a->num_outputs != 1) {
    gp_error_set(GP_ERR_VALUE, "expects 2 inputs and 1 output, got %d and %d", (int)a->num_inputs,
                 (int)a->num_outputs);
    return -1;
  }
  const DLTensor *xt = a->inputs[0], *wt = a->inputs[1];
  DLTensor *yt = a->outputs[0];
  int32_t nd = xt->ndim - 2;
  if (nd < 1 || nd > 3 || wt->ndim != xt->ndim || yt->ndim != xt->ndim) {
    gp_error_set(GP_ERR_VALUE, "data, weight and result must have the same rank, 3 to 5");
    return -1;
  }
  int32_t dpos[5], opos[5], wpos[5];
  if (convnd_layouts(a, nd, dpos, opos, wpos) != 0) return -1;
  ConvNdRun run = {wpos, transpose};
  return gp_k_run_canonical(a, xt, dpos, yt, opos, convnd_run_canonical, &run);
}

/* The convolution of xt (canonical "NC" + spatial) into yt (the same order). */
static int convnd_run(const GPKernelArgs *a, const DLTensor *xt, DLTensor *yt, const int32_t *wpos,
                      bool transpose) {
  const DLTensor *wt = a->inputs[1];
  int32_t nd = xt->ndim - 2;
  ConvNd g = {0};
  int64_t pe[3], opad[3] = {0, 0, 0};
  if (attr_nd3(a, "strides", nd, 1, 1, g.s) != 0 ||
      attr_nd3(a, "dilation", nd, 1, 1, g.d) != 0 || attr_pad3(a, nd, g.pb, pe) != 0 ||
      (transpose && attr_nd3(a, "output_padding", nd, 0, 0, opad) != 0))
    return -1;
  g.G = gp_ops_attr_int(a->op, a->attrs, "groups");
  g.N = xt->shape[0], g.C = xt->shape[1], g.O = yt->shape[1];
  int64_t w0 = wt->shape[wpos[transpose ? 1 : 0]], w1 = wt->shape[wpos[transpose ? 0 : 1]];
  bool ok = g.G >= 1 && yt->shape[0] == g.N && g.C % g.G == 0 && g.O % g.G == 0;
  for (int32_t i = 0; i < 3; i++) g.in[i] = g.out[i] = g.k[i] = 1;
  for (int32_t i = 0; i < nd; i++) {
    int32_t j = 3 - nd + i;
    g.in[j] = xt->shape[2 + i], g.out[j] = yt->shape[2 + i], g.k[j] = wt->shape[wpos[2 + i]];
    int64_t want;
    if (transpose) {
      want = (g.in[j] - 1) * g.s[j] - g.pb[j] - pe[j] + g.d[j] * (g.k[j] - 1) + opad[j] + 1;
    } else {
      int64_t num = g.in[j] + g.pb[j] + pe[j] - (g.k[j] - 1) * g.d[j] - 1;
      want = num < 0 ? -1 : num / g.s[j] + 1;
    }
    if (want != g.out[j]) ok = false;
  }
  if (ok) {
    g.Ig = g.C / g.G, g.Og = g.O / g.G;
    /* conv: weight (O, Ig, k...); transpose: weight (C, Og, k...) */
    ok = transpose ? (w0 == g.C && w1 == g.Og) : (w0 == g.O && w1 == g.Ig);
  }
  if (!ok) {
    gp_error_set(GP_ERR_VALUE, "data, weight and result shapes do not agree with the attributes");
    return -1;
  }
  g.KK = g.k[0] * g.k[1] * g.k[2];
  g.Pin = g.in[0] * g.in[1] * g.in[2];
  g.Pout = g.out[0] * g.out[1] * g.out[2];
  int64_t ny = g.N * g.O * g.Pout;
  if (ny == 0) return 0;
  int kx, kw, ky;
  if (gemm_dtypes(xt, wt, yt, "convolution", &kx, &kw, &ky) != 0) return -1;
  if (g.Ig * g.KK == 0 || g.Pin == 0) {
    memset((char *)yt->data + yt->byte_offset, 0, (size_t)ny * gp_k_elem_size(ky));
    return 0;
  }
  bool isf = gp_k_is_float(kx);
  int ct = isf ? float_compute(kx, kw, ky) : GP_K_I64;
  bool dbl = ct == GP_K_F64;
  int64_t K = g.Ig * g.KK;
  if (isf && (!blas_fits(K) || !blas_fits(g.Pout) || !blas_fits(g.Pin) || !blas_fits(g.Og * g.KK) ||
              !blas_fits(g.Og))) {
    gp_error_set(GP_ERR_UNSUPPORTED, "a convolution this large exceeds BLAS's int sizes");
    return -1;
  }
  char *w = convnd_weight(wt, wpos, nd, transpose, ct);
  void *xs = NULL;
  const char *x = gp_knn_load_as(xt, ct, &xs);
  size_t es = gp_k_elem_size(ct);
  char *ybuf = NULL;
  char *y = (char *)yt->data + yt->byte_offset;
  if (ky != ct) y = ybuf = gp_calloc((size_t)ny, es);
  int32_t nth = a->num_threads > 0 ? a->num_threads : 1;
  ConvNdJob j = {&g, NULL, NULL, NULL, NULL, NULL};
  if (!isf) {
    j.xi = (const int64_t *)x, j.wi = (const int64_t *)w, j.yi = (uint64_t *)y; /* int64 buffer: same bits */
    gp_k_parallel_for(nth, g.N * g.O, grain_for(g.Pout * K), transpose ? convnd_t_int : convnd_int, &j);
  } else if (!transpose) {
    int blas_old = blas_threads(dbl, nth);
    char *col = gp_malloc((size_t)(K * g.Pout) * es);
    j.col = col;
    for (int64_t n = 0; n < g.N; n++)
      for (int64_t gi = 0; gi < g.G; gi++) {
        j.x = x + (size_t)((n * g.C + gi * g.Ig) * g.Pin) * es;
        gp_k_parallel_for(nth, K, grain_for(g.Pout), dbl ? im2col_nd_f64 : im2col_nd_f32, &j);
        gemm(dbl, false, false, g.Og, g.Pout, K, w + (size_t)(gi * g.Og * K) * es, K, col, g.Pout,
             y + (size_t)((n * g.O + gi * g.Og) * g.Pout) * es, g.Pout, nth);
      }
    gp_free(col);
    blas_restore(dbl, blas_old);
  } else {
    int blas_old = blas_threads(dbl, nth);
    int64_t R = g.Og * g.KK;
    char *col = gp_malloc((size_t)(R * g.Pin) * es);
    j.col = col;
    for (int64_t n = 0; n < g.N; n++)
      for (int64_t gi = 0; gi < g.G; gi++) {
        memset(col, 0, (size_t)(R * g.Pin) * es);
        /* col (R x Pin) = W_g^T (R x Ig) * x_g (Ig x Pin); W_g is (Ig x R) */
        gemm(dbl, true, false, R, g.Pin, g.Ig, w + (size_t)(gi * g.Ig * R) * es, R,
             x + (size_t)((n * g.C + gi * g.Ig) * g.Pin) * es, g.Pin, col, g.Pin, nth);
        j.x = y + (size_t)((n * g.O + gi * g.Og) * g.Pout) * es;
        gp_k_parallel_for(nth, g.Og, grain_for(g.KK * g.Pin), dbl ? col2im_nd_f64 : col2im_nd_f32, &j);
      }
    gp_free(col);
    blas_restore(dbl, blas_old);
  }
  if (ybuf) gp_knn_store_from(yt, ybuf, ct);
  gp_free(ybuf);
  gp_free(xs);
  gp_free(w);
  return 0;
}

static int convnd_run_canonical(const GPKernelArgs *a, const DLTensor *x, DLTensor *y, void *user) {
  const ConvNdRun *r = user;
  return convnd_run(a, x, y, r->wpos, r->transpose);
}

int gp_knn_convnd(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return convnd_common(a, false);
}

int gp_knn_conv_transpose(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  return convnd_common(a, true);
}

/* ------------------------------------------------------------------------------------------ */
/* nn.batch_matmul                                                                             */

typedef struct IntBmm {
  const int64_t *x, *y;
  int64_t *z;
  int64_t B1, B2, M, N, K;
  bool ta, tb;
} IntBmm;

static void bmm_int_rows(void *vctx, int64_t r0, int64_t r1) {
  const IntBmm *c = vctx;
  for (int64_t r = r0; r < r1; r++) { /* r = b * M + m */
    int64_t b = r / c->M, m = r % c->M;
    const int64_t *x = c->x + (c->B1 == 1 ? 0 : b) * c->M * c->K;
    const int64_t *y = c->y + (c->B2 == 1 ? 0 : b) * c->K * c->N;
    for (int64_t n = 0; n < c->N; n++) {
      uint64_t acc = 0;
      for (int64_t k = 0; k < c->K; k++)
        acc += (uint64_t)x[c->ta ? k * c->M + m : m * c->K + k] * (uint64_t)y[c->tb ? n * c->K + k : k * c->N + n];
      c->z[r * c->N + n] = (int64_t)acc;
    }
  }
}

/* float32 batches, each a single-threaded gp_sgemm, spread over the threads (for batches too
 * small to split one by one). */
typedef struct BmmF32 {
  const float *x, *y;
  float *z;
  int64_t B1, B2, M, N, K;
  bool ta, tb;
} BmmF32;

static void bmm_f32_items(void *vctx, int64_t b0, int64_t b1) {
  const BmmF32 *c = vctx;
  for (int64_t b = b0; b < b1; b++)
    gp_sgemm(c->ta, c->tb, c->M, c->N, c->K, c->x + (c->B1 == 1 ? 0 : b) * c->M * c->K, c->ta ? c->M : c->K,
             c->y + (c->B2 == 1 ? 0 : b) * c->K * c->N, c->tb ? c->K : c->N, c->z + b * c->M * c->N, c->N, 1);
}

/* Multiply-adds per batch item below which float32 batch_matmul spreads the items over the
 * threads instead of splitting each item's GEMM. */
#define BMM_ITEM_MACS (1 << 22)

/* z (B, M, N) = x (B1, M, K) [ta: (B1, K, M)] * y (B2, K, N) [tb: (B2, N, K)], x and y compact
 * as given, a batch of 1 broadcast (B1, B2 each B or 1); `what` names the op in errors. */
static int bmm_run(const DLTensor *xt, const DLTensor *wt, DLTensor *zt, int64_t B1, int64_t B2, int64_t B, int64_t M,
                   int64_t N, int64_t K, bool ta, bool tb, int32_t nth, const char *what) {
  int kx, kw, kz;
  if (gemm_dtypes(xt, wt, zt, what, &kx, &kw, &kz) != 0) return -1;
  int64_t nz = B * M * N;
  if (nz == 0) return 0;
  if (K == 0) {
    memset((char *)zt->data + zt->byte_offset, 0, (size_t)nz * gp_k_elem_size(kz));
    return 0;
  }
  bool isf = gp_k_is_float(kx);
  if (isf && (!blas_fits(M) || !blas_fits(N) || !blas_fits(K))) {
    gp_error_set(GP_ERR_UNSUPPORTED, "%s this large exceeds BLAS's int sizes", what);
    return -1;
  }
  int ct = isf ? float_compute(kx, kw, kz) : GP_K_I64;
  size_t es = gp_k_elem_size(ct);
  void *xs = NULL, *ws = NULL;
  const char *xp = gp_knn_load_as(xt, ct, &xs), *wp = gp_knn_load_as(wt, ct, &ws);
  char *zbuf = NULL;
  char *zp = (char *)zt->data + zt->byte_offset;
  if (kz != ct) zp = zbuf = gp_calloc((size_t)nz, es);
  if (isf && ct == GP_K_F32 && B > 1 && M * N * K < BMM_ITEM_MACS) {
    BmmF32 c = {(const float *)xp, (const float *)wp, (float *)zp, B1, B2, M, N, K, ta, tb};
    gp_k_parallel_for(nth, B, grain_for(M * N * K / 64), bmm_f32_items, &c);
  } else if (isf) {
    bool dbl = ct == GP_K_F64;
    int blas_old = blas_threads(dbl, nth);
    for (int64_t b = 0; b < B; b++)
      gemm(dbl, ta, tb, M, N, K, xp + (size_t)((B1 == 1 ? 0 : b) * M * K) * es, ta ? M : K,
           wp + (size_t)((B2 == 1 ? 0 : b) * K * N) * es, tb ? K : N, zp + (size_t)(b * M * N) * es, N, nth);
    blas_restore(dbl, blas_old);
  } else {
    IntBmm c = {(const int64_t *)xp, (const int64_t *)wp, (int64_t *)zp, B1, B2, M, N, K, ta, tb};
    gp_k_parallel_for(nth, B * M, grain_for(N * K), bmm_int_rows, &c);
  }
  if (zbuf) gp_knn_store_from(zt, zbuf, ct);
  gp_free(zbuf);
  gp_free(xs);
  gp_free(ws);
  return 0;
}

int gp_knn_batch_matmul(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (a->num_inputs != 2 || a->num_outputs != 1) {
    gp_error_set(GP_ERR_VALUE, "expects 2 inputs and 1 output, got %d and %d", (int)a->num_inputs,
                 (int)a->num_outputs);
    return -1;
  }
  const DLTensor *xt = a->inputs[0], *wt = a->inputs[1];
  DLTensor *zt = a->outputs[0];
  if (xt->ndim != 3 || wt->ndim != 3 || zt->ndim != 3) {
    gp_error_set(GP_ERR_VALUE, "tensor_a, tensor_b and result must have rank 3");
    return -1;
  }
  bool ta = gp_ops_attr_bool(a->op, a->attrs, "transpose_a"), tb = gp_ops_attr_bool(a->op, a->attrs, "transpose_b");
  int64_t B1 = xt->shape[0], B2 = wt->shape[0], M = ta ? xt->shape[2] : xt->shape[1];
  int64_t K = ta ? xt->shape[1] : xt->shape[2], N = tb ? wt->shape[1] : wt->shape[2];
  int64_t K2 = tb ? wt->shape[2] : wt->shape[1], B = zt->shape[0];
  if (K2 != K || zt->shape[1] != M || zt->shape[2] != N || (B1 != B && B1 != 1) || (B2 != B && B2 != 1)) {
    gp_error_set(GP_ERR_VALUE, "tensor_a, tensor_b and result shapes do not agree");
    return -1;
  }
  int32_t nth = a->num_threads > 0 ? a->num_threads : 1;
  return bmm_run(xt, wt, zt, B1, B2, B, M, N, K, ta, tb, nth, "batch_matmul");
}

/* ------------------------------------------------------------------------------------------ */
/* nn.matmul: tensor_a (..., M, K) [transpose_a: (..., K, M)] times tensor_b (K, N)            */
/* [transpose_b: (N, K)].  Without transpose_a the leading dims are rows of one GEMM; with it, */
/* each (K, M) matrix is a batch item against the one tensor_b.                                */

int gp_knn_matmul(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  if (a->num_inputs != 2 || a->num_outputs != 1) {
    gp_error_set(GP_ERR_VALUE, "expects 2 inputs and 1 output, got %d and %d", (int)a->num_inputs,
                 (int)a->num_outputs);
    return -1;
  }
  const DLTensor *xt = a->inputs[0], *wt = a->inputs[1];
  DLTensor *zt = a->outputs[0];
  bool ta = gp_ops_attr_bool(a->op, a->attrs, "transpose_a"), tb = gp_ops_attr_bool(a->op, a->attrs, "transpose_b");
  int32_t r = xt->ndim;
  if (r < (ta ? 2 : 1) || wt->ndim != 2 || zt->ndim != r) {
    gp_error_set(GP_ERR_VALUE, "tensor_a must have rank >= %d, tensor_b rank 2 and the result tensor_a's rank",
                 ta ? 2 : 1);
    return -1;
  }
  int64_t lead = 1;
  for (int32_t i = 0; i < r - (ta ? 2 : 1); i++) lead *= xt->shape[i];
  int64_t K = ta ? xt->shape[r - 2] : xt->shape[r - 1], N = tb ? wt->shape[0] : wt->shape[1];
  int64_t K2 = tb ? wt->shape[1] : wt->shape[0], M = ta ? xt->shape[r - 1] : lead, B = ta ? lead : 1;
  if (K2 != K || zt->shape[r - 1] != N || (ta && zt->shape[r - 2] != M)) {
    gp_error_set(GP_ERR_VALUE, "tensor_a, tensor_b and result shapes do not agree");
    return -1;
  }
  int32_t nth = a->num_threads > 0 ? a->num_threads : 1;
  return bmm_run(xt, wt, zt, B, 1, B, M, N, K, ta, tb, nth, "matmul");
}
