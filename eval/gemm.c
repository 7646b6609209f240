/* gemm.c -- single-precision GEMM of our own (see gemm.h for the contract).
 *
 * Why not OpenBLAS here: OpenBLAS's Haswell SGEMM kernel (this machine's environment sets
 * OPENBLAS_CORETYPE=Haswell) rounds alternate blocks of output columns differently, so two
 * output channels with equal weights can differ in their last bit; ONNX's SqueezeNet test (1000
 * equal logits of 9.5e9) then gets a wrong softmax.  Here every element of C goes through the
 * same operations: per block of KC k's, acc = 0, fused multiply-adds in increasing k, c += acc.
 *
 * Structure (BLIS's, with the vector dimension along N): for each KC block of K, for each MC
 * block of rows, op(A)'s block is packed into MR-row panels; for each NC block of columns,
 * op(B)'s block into NR-column panels (k-major, zero-padded to NR); then the micro-kernel runs
 * over (row panel, column panel) pairs, the row panel (in L1) outer, the column panels (in L2)
 * inner.  The AVX2 and AVX-512 paths keep A panels row by row, rows a fixed KC apart (packing a
 * row of A is a copy; the kernel reads row i at a constant displacement), the portable one k
 * by k.  The tile lives in registers and is added to C once per KC block; edge tiles compute on
 * zero-padded panels and store only their valid part (masked loads and stores, or a scratch
 * tile), and narrower variants of a kernel (fewer rows or vectors, for the last panels) do the
 * same operations per element, so an edge element gets exactly the operations of an inner one.
 *
 * Threads split N (or M, when it is longer) into chunks of whole panels, taken one at a time
 * from a counter; each thread packs what it multiplies.  Calls with m < GP_SGEMM_GEMV_M skip
 * packing (dot_rows / axpy_rows): each element is then computed by one function, the same for
 * all of them.
 *
 * Single-threaded on this machine's AMD EPYC (AVX-512; bench_eval and a GEMM loop, loaded
 * machine): the AVX-512 path does 115-210 GFLOP/s on ResNet-50's GEMMs, 1.5-2x OpenBLAS 0.3.21's
 * Haswell kernel and 0.9-1.1x its SkylakeX one; the AVX2 path 0.85-1.07x the Haswell kernel.
 */
#include "eval/gemm.h"

#include "eval/kernel.h"

#include <assert.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define GP_X86 1
#include <immintrin.h>
#endif

/* One micro-kernel call: the MR x NR tile of C at c (row stride ldc), of which the top-left
 * mr x nr part is inside C, += the packed A panel (MR rows of kc; layout per Path.a_rows) times
 * the packed B panel (kc x NR), as one KC block of the contract's sequence. */
typedef void (*KernelFn)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int64_t mr, int64_t nr);
/* c[j] += dot(x, row j of B) for j in [j0, j1), B n x k with row stride ldb (the tb GEMV). */
typedef void (*DotRowsFn)(int64_t k, const float *x, const float *b, int64_t ldb, float *c, int64_t j0, int64_t j1);
/* c[j] += sum_k x[k] b[k][j] for j in [j0, j1), B k x n with row stride ldb, in KC blocks. */
typedef void (*AxpyRowsFn)(int64_t k, int64_t kcb, const float *x, const float *b, int64_t ldb, float *c, int64_t j0,
                           int64_t j1);

/* Rows [p0, p0 + kc) of a row-major k x n B (row stride ldb), columns [j0, j0 + nc), into
 * nr-column panels (dst[panel][k][j]), columns past nc zeroed (the !tb case of pack_b). */
typedef void (*PackRowsFn)(const float *b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *dst);

/* The same from an n x k B (the tb case): columns [j0, j0 + nc) of op(B) are rows of B. */
typedef void (*PackColsFn)(const float *b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *dst);

/* One row-wise A panel from a k x m A (the ta case): rows [0, mr) of op(A) (mr <= MR) and k's
 * [0, kc) from a0 = &op(A)[0][0], row t to dst + t * kc_max. */
typedef void (*PackATFn)(const float *a0, int64_t lda, int64_t mr, int64_t kc, float *dst);

typedef struct Path {
  const char *name;
  int64_t mr, nr, kc, mc, nc; /* micro tile; blocks (mc a multiple of mr, nc of nr) */
  bool a_rows; /* A panels row by row (a[i * kc_max + k]), not k by k (a[k * mr + i]) */
  KernelFn kernel;
  DotRowsFn dot_rows;
  AxpyRowsFn axpy_rows;
  PackRowsFn pack_rows; /* NULL: the portable copy in pack_b */
  PackColsFn pack_cols; /* NULL: the portable transposition in pack_b */
  PackATFn pack_a_t;    /* a_rows only; NULL: the portable transposition in pack_a */
} Path;

/* ------------------------------------------------------------------------------------------ */
/* Portable C                                                                                  */

#define G_MR 4
#define G_NR 16

static void kernel_generic(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int64_t mr,
                           int64_t nr) {
  float acc[G_MR][G_NR];
  memset(acc, 0, sizeof acc);
  for (int64_t k = 0; k < kc; k++, a += G_MR, b += G_NR)
    for (int i = 0; i < G_MR; i++)
      for (int j = 0; j < G_NR; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  for (int64_t i = 0; i < mr; i++)
    for (int64_t j = 0; j < nr; j++) c[i * ldc + j] += acc[i][j];
}

static void dot_rows_generic(int64_t k, const float *x, const float *b, int64_t ldb, float *c, int64_t j0,
                             int64_t j1) {
  for (int64_t j = j0; j < j1; j++) {
    const float *r = b + j * ldb;
    float acc = 0;
    for (int64_t p = 0; p < k; p++) acc = fmaf(x[p], r[p], acc);
    c[j] += acc;
  }
}

static void axpy_rows_generic(int64_t k, int64_t kcb, const float *x, const float *b, int64_t ldb, float *c,
                              int64_t j0, int64_t j1) {
  enum { W = 64 };
  for (int64_t j = j0; j < j1; j += W) {
    int64_t w = j1 - j < W ? j1 - j : W;
    for (int64_t p0 = 0; p0 < k; p0 += kcb) {
      int64_t p1 = p0 + kcb < k ? p0 + kcb : k;
      float acc[W] = {0};
      for (int64_t p = p0; p < p1; p++)
        for (int64_t q = 0; q < w; q++) acc[q] = fmaf(x[p], b[p * ldb + j + q], acc[q]);
      for (int64_t q = 0; q < w; q++) c[j + q] += acc[q];
    }
  }
}

static const Path PATH_GENERIC = {"generic", G_MR, G_NR, 256, 128, 512, false, kernel_generic, dot_rows_generic,
                                  axpy_rows_generic, NULL, NULL, NULL};

#ifdef GP_X86
/* ------------------------------------------------------------------------------------------ */
/* AVX2 + FMA: 6 x 16 tile in 12 ymm registers                                                 */

#define A2_MR 6
#define A2_NR 16
#define A2_KC 256 /* also the row stride of the packed A panels (a_rows) */

#define A2_TARGET __attribute__((target("avx2,fma")))

/* The mask of the first n of 8 lanes (n clamped to [0, 8]), for maskload/maskstore. */
A2_TARGET static inline __m256i a2_mask(int64_t n) {
  int v = n < 0 ? 0 : n > 8 ? 8 : (int)n;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(v), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* a is a row-wise A panel (row i at a + i * A2_KC).  Edge columns are masked. */
A2_TARGET static void kernel_avx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int64_t mr,
                                  int64_t nr) {
#define A2_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define A2_DECL(i) __m256 c##i##0 = _mm256_setzero_ps(), c##i##1 = _mm256_setzero_ps();
  A2_ROWS(A2_DECL)
#undef A2_DECL
  for (int64_t k = 0; k < kc; k++, a++, b += A2_NR) {
    __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#define A2_STEP(i)                                                                                                \
  {                                                                                                               \
    __m256 x = _mm256_broadcast_ss(a + i * A2_KC);                                                                \
    c##i##0 = _mm256_fmadd_ps(x, b0, c##i##0);                                                                    \
    c##i##1 = _mm256_fmadd_ps(x, b1, c##i##1);                                                                    \
  }
    A2_ROWS(A2_STEP)
#undef A2_STEP
  }
  __m256i m0 = a2_mask(nr), m1 = a2_mask(nr - 8);
#define A2_SAVE(i)                                                                                                \
  if (i < mr) {                                                                                                   \
    float *r = c + i * ldc;                                                                                       \
    if (nr == A2_NR) {                                                                                            \
      _mm256_storeu_ps(r, _mm256_add_ps(_mm256_loadu_ps(r), c##i##0));                                            \
      _mm256_storeu_ps(r + 8, _mm256_add_ps(_mm256_loadu_ps(r + 8), c##i##1));                                    \
    } else {                                                                                                      \
      _mm256_maskstore_ps(r, m0, _mm256_add_ps(_mm256_maskload_ps(r, m0), c##i##0));                              \
      if (nr > 8) _mm256_maskstore_ps(r + 8, m1, _mm256_add_ps(_mm256_maskload_ps(r + 8, m1), c##i##1));          \
    }                                                                                                             \
  }
  A2_ROWS(A2_SAVE)
#undef A2_SAVE
#undef A2_ROWS
}

/* The dot product of x and r over k, as 4 x 8 partial sums (k in steps of 32, then of 8, then
 * a masked step), summed in a fixed order: the same operations for every row. */
A2_TARGET static inline float a2_dot(int64_t k, const float *x, const float *r) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
  int64_t p = 0;
  for (; p + 32 <= k; p += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + p), _mm256_loadu_ps(r + p), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + p + 8), _mm256_loadu_ps(r + p + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + p + 16), _mm256_loadu_ps(r + p + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + p + 24), _mm256_loadu_ps(r + p + 24), s3);
  }
  for (; p + 8 <= k; p += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + p), _mm256_loadu_ps(r + p), s0);
  if (p < k) {
    __m256i m = a2_mask(k - p);
    s0 = _mm256_fmadd_ps(_mm256_maskload_ps(x + p, m), _mm256_maskload_ps(r + p, m), s0);
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
  return _mm_cvtss_f32(h);
}

A2_TARGET static void dot_rows_avx2(int64_t k, const float *x, const float *b, int64_t ldb, float *c, int64_t j0,
                                    int64_t j1) {
  for (int64_t j = j0; j < j1; j++) c[j] += a2_dot(k, x, b + j * ldb);
}

/* 32 columns at a time (4 vectors, masked at the right edge), in KC blocks of k. */
A2_TARGET static void axpy_rows_avx2(int64_t k, int64_t kcb, const float *x, const float *b, int64_t ldb, float *c,
                                     int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; j += 32) {
    int64_t w = j1 - j;
    __m256i m[4];
    for (int v = 0; v < 4; v++) m[v] = a2_mask(w - 8 * v);
    int nv = w >= 32 ? 4 : (int)((w + 7) / 8);
    for (int64_t p0 = 0; p0 < k; p0 += kcb) {
      int64_t p1 = p0 + kcb < k ? p0 + kcb : k;
      __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
      for (int64_t p = p0; p < p1; p++) {
        __m256 xv = _mm256_broadcast_ss(x + p);
        const float *r = b + p * ldb + j;
        s0 = _mm256_fmadd_ps(xv, _mm256_maskload_ps(r, m[0]), s0);
        if (nv > 1) s1 = _mm256_fmadd_ps(xv, _mm256_maskload_ps(r + 8, m[1]), s1);
        if (nv > 2) s2 = _mm256_fmadd_ps(xv, _mm256_maskload_ps(r + 16, m[2]), s2);
        if (nv > 3) s3 = _mm256_fmadd_ps(xv, _mm256_maskload_ps(r + 24, m[3]), s3);
      }
      __m256 sv[4] = {s0, s1, s2, s3};
      for (int v = 0; v < nv; v++)
        _mm256_maskstore_ps(c + j + 8 * v, m[v], _mm256_add_ps(_mm256_maskload_ps(c + j + 8 * v, m[v]), sv[v]));
    }
  }
}

/* pack_rows for A2_NR = 16: two vector copies per row and panel, masked at the right edge. */
A2_TARGET static void pack_rows_avx2(const float *b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
                                     float *dst) {
  int64_t full = nc / A2_NR * A2_NR, rest = nc - full;
  __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)rest), lane);
  __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)rest - 8), lane);
  for (int64_t k = 0; k < kc; k++) {
    const float *src = b + (p0 + k) * ldb + j0;
    float *d = dst + k * A2_NR;
    int64_t jr = 0;
    for (; jr < full; jr += A2_NR, d += kc * A2_NR) {
      _mm256_store_ps(d, _mm256_loadu_ps(src + jr));
      _mm256_store_ps(d + 8, _mm256_loadu_ps(src + jr + 8));
    }
    if (rest) {
      _mm256_store_ps(d, _mm256_maskload_ps(src + jr, m0));
      _mm256_store_ps(d + 8, rest > 8 ? _mm256_maskload_ps(src + jr + 8, m1) : _mm256_setzero_ps());
    }
  }
}

static const Path PATH_AVX2 = {"avx2", A2_MR, A2_NR, A2_KC, 1020, 512, true, kernel_avx2, dot_rows_avx2,
                               axpy_rows_avx2, pack_rows_avx2, NULL, NULL};

/* ------------------------------------------------------------------------------------------ */
/* AVX-512: 14 x 32 tile in 28 zmm registers (14 x 16 for panels of at most 16 valid columns)  */

#define Z_MR 14
#define Z_NR 32
#define Z_KC 384 /* also the row stride of the packed A panels (a_rows), so a[i * Z_KC] */

#define Z_TARGET __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma")))

#define Z_ROWS14(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)
#define Z_ROWS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define Z_ROWS4(X) X(0) X(1) X(2) X(3)

/* The mask of the first n of 16 lanes (n clamped to [0, 16]). */
Z_TARGET static inline __mmask16 z_mask(int64_t n) {
  return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

/* The kernels, by the rows they compute (ROWS: 14, or 8 or 4 for a last panel with fewer
 * valid rows) and the vectors per row (2: nr in (16, 32]; 1: nr in [1, 16], the panel still
 * Z_NR wide).  a is a row-wise A panel (row i at a + i * Z_KC: constant displacements from one
 * pointer).  Every variant gives each element the same operations. */
#define Z2_DECL(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = _mm512_setzero_ps();
#define Z2_STEP(i)                                                                                                \
  {                                                                                                               \
    __m512 x = _mm512_set1_ps(a[i * Z_KC]);                                                                       \
    c##i##0 = _mm512_fmadd_ps(x, b0, c##i##0);                                                                    \
    c##i##1 = _mm512_fmadd_ps(x, b1, c##i##1);                                                                    \
  }
#define Z2_SAVE(i)                                                                                                \
  if (i < mr) {                                                                                                   \
    float *r = c + i * ldc;                                                                                       \
    _mm512_storeu_ps(r, _mm512_add_ps(_mm512_loadu_ps(r), c##i##0));                                              \
    _mm512_mask_storeu_ps(r + 16, m1, _mm512_add_ps(_mm512_maskz_loadu_ps(m1, r + 16), c##i##1));                 \
  }
#define Z_KERNEL2(name, ROWS)                                                                                     \
  Z_TARGET static void name(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int64_t mr,        \
                            int64_t nr) {                                                                         \
    ROWS(Z2_DECL)                                                                                                 \
    for (int64_t k = 0; k < kc; k++, a++, b += Z_NR) {                                                            \
      __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);                                                 \
      ROWS(Z2_STEP)                                                                                               \
    }                                                                                                             \
    __mmask16 m1 = z_mask(nr - 16);                                                                               \
    ROWS(Z2_SAVE)                                                                                                 \
  }

#define Z1_DECL(i) __m512 c##i = _mm512_setzero_ps();
#define Z1_STEP(i) c##i = _mm512_fmadd_ps(_mm512_set1_ps(a[i * Z_KC]), b0, c##i);
#define Z1_SAVE(i)                                                                                                \
  if (i < mr) {                                                                                                   \
    float *r = c + i * ldc;                                                                                       \
    _mm512_mask_storeu_ps(r, m0, _mm512_add_ps(_mm512_maskz_loadu_ps(m0, r), c##i));                              \
  }
#define Z_KERNEL1(name, ROWS)                                                                                     \
  Z_TARGET static void name(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int64_t mr,        \
                            int64_t nr) {                                                                         \
    ROWS(Z1_DECL)                                                                                                 \
    for (int64_t k = 0; k < kc; k++, a++, b += Z_NR) {                                                            \
      __m512 b0 = _mm512_load_ps(b);                                                                              \
      ROWS(Z1_STEP)                                                                                               \
    }                                                                                                             \
    __mmask16 m0 = z_mask(nr);                                                                                    \
    ROWS(Z1_SAVE)                                                                                                 \
  }

Z_KERNEL2(kernel_z2_14, Z_ROWS14)
Z_KERNEL2(kernel_z2_8, Z_ROWS8)
Z_KERNEL2(kernel_z2_4, Z_ROWS4)
Z_KERNEL1(kernel_z1_14, Z_ROWS14)
Z_KERNEL1(kernel_z1_8, Z_ROWS8)
Z_KERNEL1(kernel_z1_4, Z_ROWS4)

static void kernel_avx512(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int64_t mr,
                          int64_t nr) {
  static const KernelFn k2[3] = {kernel_z2_4, kernel_z2_8, kernel_z2_14};
  static const KernelFn k1[3] = {kernel_z1_4, kernel_z1_8, kernel_z1_14};
  int rows = mr <= 4 ? 0 : mr <= 8 ? 1 : 2;
  (nr > 16 ? k2 : k1)[rows](kc, a, b, c, ldc, mr, nr);
}

/* The dot product of x and r over k, as 4 x 16 partial sums (k in steps of 64, then of 16,
 * then a masked step), summed in a fixed order: the same operations for every row. */
Z_TARGET static inline float z_dot(int64_t k, const float *x, const float *r) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
  int64_t p = 0;
  for (; p + 64 <= k; p += 64) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + p), _mm512_loadu_ps(r + p), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + p + 16), _mm512_loadu_ps(r + p + 16), s1);
    s2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + p + 32), _mm512_loadu_ps(r + p + 32), s2);
    s3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + p + 48), _mm512_loadu_ps(r + p + 48), s3);
  }
  for (; p + 16 <= k; p += 16) s0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + p), _mm512_loadu_ps(r + p), s0);
  if (p < k) {
    __mmask16 m = z_mask(k - p);
    s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + p), _mm512_maskz_loadu_ps(m, r + p), s0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

Z_TARGET static void dot_rows_avx512(int64_t k, const float *x, const float *b, int64_t ldb, float *c, int64_t j0,
                                     int64_t j1) {
  for (int64_t j = j0; j < j1; j++) c[j] += z_dot(k, x, b + j * ldb);
}

/* 64 columns at a time (4 vectors, masked at the right edge), in KC blocks of k. */
Z_TARGET static void axpy_rows_avx512(int64_t k, int64_t kcb, const float *x, const float *b, int64_t ldb, float *c,
                                      int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; j += 64) {
    __mmask16 m[4];
    for (int v = 0; v < 4; v++) m[v] = z_mask(j1 - j - 16 * v);
    for (int64_t p0 = 0; p0 < k; p0 += kcb) {
      int64_t p1 = p0 + kcb < k ? p0 + kcb : k;
      __m512 s[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
      for (int64_t p = p0; p < p1; p++) {
        __m512 xv = _mm512_set1_ps(x[p]);
        const float *r = b + p * ldb + j;
        for (int v = 0; v < 4; v++)
          if (m[v]) s[v] = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(m[v], r + 16 * v), s[v]);
      }
      for (int v = 0; v < 4; v++)
        if (m[v]) {
          float *cv = c + j + 16 * v;
          _mm512_mask_storeu_ps(cv, m[v], _mm512_add_ps(_mm512_maskz_loadu_ps(m[v], cv), s[v]));
        }
    }
  }
}

/* pack_rows for Z_NR = 32: two vector copies per row and panel; the last panel's masked loads
 * read only inside B and store zeros past nc. */
Z_TARGET static void pack_rows_avx512(const float *b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
                                      float *dst) {
  int64_t full = nc / Z_NR * Z_NR;
  __mmask16 m0 = z_mask(nc - full), m1 = z_mask(nc - full - 16);
  for (int64_t k = 0; k < kc; k++) {
    const float *src = b + (p0 + k) * ldb + j0;
    float *d = dst + k * Z_NR;
    int64_t jr = 0;
    for (; jr < full; jr += Z_NR, d += kc * Z_NR) {
      _mm512_store_ps(d, _mm512_loadu_ps(src + jr));
      _mm512_store_ps(d + 16, _mm512_loadu_ps(src + jr + 16));
    }
    if (jr < nc) {
      _mm512_store_ps(d, _mm512_maskz_loadu_ps(m0, src + jr));
      _mm512_store_ps(d + 16, m1 ? _mm512_maskz_loadu_ps(m1, src + jr + 16) : _mm512_setzero_ps());
    }
  }
}

/* r[0..15] (16 rows of 16) transposed in place: r[t] becomes element t of every row. */
Z_TARGET static inline void z_transpose16(__m512 r[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  /* u[4i + q], 128-bit lane L: element 4L + q of rows 4i .. 4i + 3 */
  for (int i = 0; i < 4; i++) {
    u[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int q = 0; q < 4; q++) {
    __m512 a0 = _mm512_shuffle_f32x4(u[q], u[4 + q], 0x88), a1 = _mm512_shuffle_f32x4(u[q], u[4 + q], 0xDD);
    __m512 b0 = _mm512_shuffle_f32x4(u[8 + q], u[12 + q], 0x88), b1 = _mm512_shuffle_f32x4(u[8 + q], u[12 + q], 0xDD);
    r[q] = _mm512_shuffle_f32x4(a0, b0, 0x88);
    r[8 + q] = _mm512_shuffle_f32x4(a0, b0, 0xDD);
    r[4 + q] = _mm512_shuffle_f32x4(a1, b1, 0x88);
    r[12 + q] = _mm512_shuffle_f32x4(a1, b1, 0xDD);
  }
}

/* pack_cols for Z_NR = 32: 16 x 16 blocks of B (16 rows j, 16 k's; masked past kc, zero rows
 * past nc) transposed into the panels. */
Z_TARGET static void pack_cols_avx512(const float *b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
                                      float *dst) {
  for (int64_t jr = 0; jr < nc; jr += Z_NR) {
    float *pd = dst + jr * kc;
    for (int64_t h = 0; h < Z_NR; h += 16) {
      int64_t rows = nc - jr - h;
      if (rows > 16) rows = 16;
      for (int64_t k0 = 0; k0 < kc; k0 += 16) {
        int64_t kk = kc - k0 < 16 ? kc - k0 : 16;
        __mmask16 m = z_mask(kk);
        __m512 r[16];
        for (int64_t t = 0; t < 16; t++)
          r[t] = t < rows ? _mm512_maskz_loadu_ps(m, b + (j0 + jr + h + t) * ldb + p0 + k0) : _mm512_setzero_ps();
        z_transpose16(r);
        for (int64_t t = 0; t < kk; t++) _mm512_store_ps(pd + (k0 + t) * Z_NR + h, r[t]);
      }
    }
  }
}

/* pack_a_t for Z_MR <= 16: 16 x 16 blocks of A (16 k's, mr i's; masked) transposed. */
Z_TARGET static void pack_a_t_avx512(const float *a0, int64_t lda, int64_t mr, int64_t kc, float *dst) {
  __mmask16 mi = z_mask(mr);
  for (int64_t k0 = 0; k0 < kc; k0 += 16) {
    int64_t kk = kc - k0 < 16 ? kc - k0 : 16;
    __mmask16 mk = z_mask(kk);
    __m512 r[16];
    for (int64_t t = 0; t < 16; t++)
      r[t] = t < kk ? _mm512_maskz_loadu_ps(mi, a0 + (k0 + t) * lda) : _mm512_setzero_ps();
    z_transpose16(r);
    for (int64_t t = 0; t < mr; t++) _mm512_mask_storeu_ps(dst + t * Z_KC + k0, mk, r[t]);
  }
}

static const Path PATH_AVX512 = {"avx512", Z_MR, Z_NR, Z_KC, 336, 384, true, kernel_avx512, dot_rows_avx512,
                                 axpy_rows_avx512, pack_rows_avx512, pack_cols_avx512, pack_a_t_avx512};
#endif /* GP_X86 */

/* ------------------------------------------------------------------------------------------ */
/* Path selection                                                                              */

static bool cpu_has(GPSgemmIsa isa) {
#ifdef GP_X86
  __builtin_cpu_init();
  if (isa == GP_SGEMM_AVX2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (isa == GP_SGEMM_AVX512)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma");
#endif
  return isa == GP_SGEMM_GENERIC;
}

static _Atomic(int) forced = GP_SGEMM_AUTO;

int gp_sgemm_force_isa(GPSgemmIsa isa) {
  if (isa != GP_SGEMM_AUTO && !cpu_has(isa)) return -1;
  forced = (int)isa;
  return 0;
}

static const Path *path_now(void) {
  int f = forced;
#ifdef GP_X86
  if (f == GP_SGEMM_AVX512 || (f == GP_SGEMM_AUTO && cpu_has(GP_SGEMM_AVX512))) return &PATH_AVX512;
  if (f == GP_SGEMM_AVX2 || (f == GP_SGEMM_AUTO && cpu_has(GP_SGEMM_AVX2))) return &PATH_AVX2;
#endif
  return &PATH_GENERIC;
}

const char *gp_sgemm_isa_name(void) { return path_now()->name; }

/* ------------------------------------------------------------------------------------------ */
/* Packing                                                                                     */

typedef struct Gemm {
  const Path *p;
  bool ta, tb;
  int64_t m, n, k, lda, ldb, ldc;
  const float *a, *b;
  float *c;
  int64_t chunk, chunks; /* threads: rows (split_m) or columns per chunk; how many */
  bool split_m;
  atomic_llong next; /* the next chunk to take (a thread slowed down takes fewer) */
} Gemm;

/* The floats one packed A panel takes: MR rows of kc (k-wise) or of the path's kc (row-wise). */
static int64_t a_panel(const Path *p, int64_t kc) { return p->mr * (p->a_rows ? p->kc : kc); }

/* One row-wise panel (row i at dst + i * p->kc) of mr rows of op(A) from a0 = &op(A)[0][0];
 * rows mr .. MR - 1 zeroed. */
static void pack_a_rows(const Path *p, bool ta, const float *a0, int64_t lda, int64_t mr, int64_t kc, float *dst) {
  const int64_t KS = p->kc;
  assert(mr >= 1 && mr <= p->mr && kc >= 1 && kc <= KS);
  if (ta && p->pack_a_t) {
    p->pack_a_t(a0, lda, mr, kc, dst);
  } else {
    for (int64_t i = 0; i < mr; i++) {
      float *d = dst + i * KS;
      if (!ta)
        memcpy(d, a0 + i * lda, (size_t)kc * sizeof(float));
      else
        for (int64_t k = 0; k < kc; k++) d[k] = a0[k * lda + i];
    }
  }
  for (int64_t i = mr; i < p->mr; i++) memset(dst + i * KS, 0, (size_t)kc * sizeof(float));
}

/* One k-major panel (dst[k * MR + i]) of mr rows of op(A) from a0; rows mr .. MR - 1 zeroed. */
static void pack_a_kmajor(int64_t MR, bool ta, const float *a0, int64_t lda, int64_t mr, int64_t kc, float *dst) {
  if (mr < MR) memset(dst, 0, (size_t)(kc * MR) * sizeof(float));
  if (!ta) {
    for (int64_t i = 0; i < mr; i++)
      for (int64_t k = 0; k < kc; k++) dst[k * MR + i] = a0[i * lda + k];
  } else {
    for (int64_t k = 0; k < kc; k++) memcpy(dst + k * MR, a0 + k * lda, (size_t)mr * sizeof(float));
  }
}

/* Rows [i0, i0 + mc) x k's [p0, p0 + kc) of op(A) into MR-row panels, rows past mc zeroed:
 * k-wise (dst[panel][k][i]) or, with a_rows, row-wise (dst[panel][i][k], rows p->kc apart). */
static void pack_a(const Gemm *g, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float *dst) {
  const Path *p = g->p;
  const int64_t MR = p->mr;
  for (int64_t ir = 0; ir < mc; ir += MR, dst += a_panel(p, kc)) {
    int64_t mr = mc - ir < MR ? mc - ir : MR;
    const float *a0 = g->ta ? g->a + p0 * g->lda + i0 + ir : g->a + (i0 + ir) * g->lda + p0; /* element (0, 0) */
    if (p->a_rows)
      pack_a_rows(p, g->ta, a0, g->lda, mr, kc, dst);
    else
      pack_a_kmajor(MR, g->ta, a0, g->lda, mr, kc, dst);
  }
}

/* k's [p0, p0 + kc) x columns [j0, j0 + nc) of op(B) into NR-column panels (dst[panel][k][j]),
 * columns past nc zeroed. */
static void pack_b(const Gemm *g, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *dst) {
  const int64_t NR = g->p->nr;
  if (!g->tb && g->p->pack_rows) {
    g->p->pack_rows(g->b, g->ldb, p0, kc, j0, nc, dst);
    return;
  }
  if (g->tb && g->p->pack_cols) {
    g->p->pack_cols(g->b, g->ldb, p0, kc, j0, nc, dst);
    return;
  }
  int64_t full = nc / NR * NR;
  if (full < nc) memset(dst + full * kc, 0, (size_t)(kc * NR) * sizeof(float));
  if (!g->tb) {
    for (int64_t k = 0; k < kc; k++) {
      const float *src = g->b + (p0 + k) * g->ldb + j0;
      int64_t jr = 0;
      for (; jr < full; jr += NR) memcpy(dst + jr * kc + k * NR, src + jr, (size_t)NR * sizeof(float));
      if (jr < nc) memcpy(dst + jr * kc + k * NR, src + jr, (size_t)(nc - jr) * sizeof(float));
    }
  } else {
    for (int64_t jr = 0; jr < nc; jr += NR) {
      int64_t nr = nc - jr < NR ? nc - jr : NR;
      for (int64_t j = 0; j < nr; j++) {
        const float *src = g->b + (j0 + jr + j) * g->ldb + p0;
        for (int64_t k = 0; k < kc; k++) dst[jr * kc + k * NR + j] = src[k];
      }
    }
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Drivers                                                                                     */

static int64_t min64(int64_t x, int64_t y) { return x < y ? x : y; }
static int64_t round_up(int64_t x, int64_t r) { return (x + r - 1) / r * r; }

/* A 64-byte aligned view of a gp_malloc'd buffer of at least n floats (*raw is what to free). */
static float *aligned_floats(int64_t n, void **raw) {
  *raw = gp_malloc((size_t)n * sizeof(float) + 64);
  uintptr_t u = ((uintptr_t)*raw + 63) & ~(uintptr_t)63;
  return (float *)u;
}

/* A thread's packing buffers, for blocks of at most mspan x nspan of C. */
typedef struct Bufs {
  void *araw, *braw; /* what to free */
  float *ap, *bp;
} Bufs;

static void bufs_init(const Gemm *g, int64_t mspan, int64_t nspan, Bufs *bf) {
  const Path *p = g->p;
  int64_t kcap = min64(g->k, p->kc), mcap = min64(round_up(mspan, p->mr), p->mc);
  int64_t ncap = min64(round_up(nspan, p->nr), p->nc);
  bf->ap = aligned_floats(mcap / p->mr * a_panel(p, kcap), &bf->araw);
  bf->bp = aligned_floats(ncap * kcap, &bf->braw);
}

static void bufs_free(Bufs *bf) {
  gp_free(bf->araw);
  gp_free(bf->braw);
}

/* C[m0, m1) x [n0, n1) += op(A) op(B), on the calling thread, with buffers for that size. */
static void gemm_block(const Gemm *g, const Bufs *bf, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  const Path *p = g->p;
  float *ap = bf->ap, *bp = bf->bp;
  assert(m0 < m1 && n0 < n1 && m1 <= g->m && n1 <= g->n);
  for (int64_t pc = 0; pc < g->k; pc += p->kc) {
    int64_t kc = min64(g->k - pc, p->kc);
    for (int64_t ic = m0; ic < m1; ic += p->mc) {
      int64_t mc = min64(m1 - ic, p->mc);
      pack_a(g, ic, mc, pc, kc, ap);
      for (int64_t jc = n0; jc < n1; jc += p->nc) {
        int64_t nc = min64(n1 - jc, p->nc);
        pack_b(g, pc, kc, jc, nc, bp);
        for (int64_t ir = 0; ir < mc; ir += p->mr) {
          float *crow = g->c + (ic + ir) * g->ldc + jc;
          for (int64_t jr = 0; jr < nc; jr += p->nr)
            p->kernel(kc, ap + ir / p->mr * a_panel(p, kc), bp + jr * kc, crow + jr, g->ldc, min64(p->mr, mc - ir),
                      min64(p->nr, nc - jr));
        }
      }
    }
  }
}

/* Rows of op(A) with m < GP_SGEMM_GEMV_M: each row of C from one pass over B. */
static void gemv_block(const Gemm *g, int64_t n0, int64_t n1) {
  void *raw = NULL;
  float *x = g->ta ? gp_malloc((size_t)g->k * sizeof(float)) : NULL;
  raw = x;
  for (int64_t i = 0; i < g->m; i++) {
    const float *xi = g->a + i * g->lda;
    if (g->ta) {
      for (int64_t p = 0; p < g->k; p++) x[p] = g->a[p * g->lda + i];
      xi = x;
    }
    float *ci = g->c + i * g->ldc;
    if (g->tb)
      g->p->dot_rows(g->k, xi, g->b, g->ldb, ci, n0, n1);
    else
      g->p->axpy_rows(g->k, g->p->kc, xi, g->b, g->ldb, ci, n0, n1);
  }
  gp_free(raw);
}

/* One thread's work: chunks taken one at a time until none is left (runs once per thread). */
static void run_worker(void *ctx, int64_t t0, int64_t t1) {
  GP_UNUSED(t0), GP_UNUSED(t1);
  Gemm *g = ctx;
  bool gemv = g->m < GP_SGEMM_GEMV_M;
  Bufs bf = {0};
  if (!gemv) bufs_init(g, g->split_m ? g->chunk : g->m, g->split_m ? g->n : g->chunk, &bf);
  for (int64_t i; (i = (int64_t)atomic_fetch_add(&g->next, 1)) < g->chunks;) {
    int64_t lo = i * g->chunk, hi = min64(lo + g->chunk, g->split_m ? g->m : g->n);
    if (gemv)
      gemv_block(g, lo, hi);
    else if (g->split_m)
      gemm_block(g, &bf, lo, hi, 0, g->n);
    else
      gemm_block(g, &bf, 0, g->m, lo, hi);
  }
  if (!gemv) bufs_free(&bf);
}

/* Multiply-adds below which a call stays on the calling thread (starting a thread costs tens
 * of microseconds). */
#define PAR_MIN_MACS (1 << 22)
#define CHUNKS_PER_THREAD 4
#define MIN_CHUNK 96

void gp_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
              int64_t ldb, float *c, int64_t ldc, int32_t nthreads) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  assert(lda >= (ta ? m : k) && ldb >= (tb ? k : n) && ldc >= n);
  Gemm g = {path_now(), ta, tb, m, n, k, lda, ldb, ldc, a, b, c, 0, 0, false, 0};
  if (nthreads < 1 || (double)m * (double)n * (double)k < PAR_MIN_MACS) nthreads = 1;
  /* chunks of whole panels: columns for the GEMV path and when N is the longer side; up to
   * CHUNKS_PER_THREAD per thread, so that a thread that started late or shares its core takes
   * fewer, but at least MIN_CHUNK long (each chunk repacks the other operand) */
  g.split_m = m >= GP_SGEMM_GEMV_M && m > n;
  int64_t dim = g.split_m ? m : n, unit = g.split_m ? g.p->mr : (m < GP_SGEMM_GEMV_M ? 64 : g.p->nr);
  int64_t want = nthreads == 1 ? 1 : min64((int64_t)nthreads * CHUNKS_PER_THREAD, dim / MIN_CHUNK);
  if (want < nthreads) want = nthreads;
  g.chunk = round_up((dim + want - 1) / want, unit);
  g.chunks = (dim + g.chunk - 1) / g.chunk;
  int32_t workers = g.chunks < nthreads ? (int32_t)g.chunks : nthreads;
  gp_k_parallel_for(workers, workers, 1, run_worker, &g);
}
