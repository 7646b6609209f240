/* test_gemm.c -- our SGEMM (eval/gemm.c): against a naive double-accumulating reference on many
 * shapes (edges of every tile, K beyond a KC block, the four transpose combinations, leading
 * dimensions larger than the rows), bit-equal ties (equal rows of op(A) give equal rows of C,
 * equal columns of op(B) equal columns, across tile edges and threads), on every ISA path the
 * CPU has.  Matrices are allocated to their last element exactly, so the sanitizer build
 * catches a read or write past them; C's gaps (ldc > n) must stay untouched. */
#include <criterion/criterion.h>

#include "eval/gemm.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) { /* uniform in [-1, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((double)(rng >> 40) / 16777216.0 * 2.0 - 1.0);
}

/* A rows x cols matrix with row stride ld, allocated up to its last element (no slack). */
static float *mat(int64_t rows, int64_t cols, int64_t ld) {
  size_t n = (size_t)((rows - 1) * ld + cols);
  float *p = malloc(n * sizeof(float));
  cr_assert(p);
  for (size_t i = 0; i < n; i++) p[i] = frand();
  return p;
}

static const GPSgemmIsa ISAS[] = {GP_SGEMM_GENERIC, GP_SGEMM_AVX2, GP_SGEMM_AVX512};
#define NISA (sizeof ISAS / sizeof ISAS[0])

/* C += op(A) op(B) on `threads` threads with gaps of pad elements after each row of A, B and
 * C, checked against a double reference; C's gaps must keep their values. */
static void check_case(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t pad, int32_t threads) {
  int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  int64_t lda = ac + pad, ldb = bc + pad, ldc = n + pad;
  float *a = mat(ar, ac, lda), *b = mat(br, bc, ldb), *c = mat(m, n, ldc);
  size_t cn = (size_t)((m - 1) * ldc + n);
  float *c0 = malloc(cn * sizeof(float));
  memcpy(c0, c, cn * sizeof(float));
  gp_sgemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, threads);
  for (int64_t i = 0; i < m; i++) {
    for (int64_t j = 0; j < n; j++) {
      double want = c0[i * ldc + j], mag = fabs(want);
      for (int64_t p = 0; p < k; p++) {
        double x = ta ? a[p * lda + i] : a[i * lda + p], y = tb ? b[j * ldb + p] : b[p * ldb + j];
        want += x * y;
        mag += fabs(x * y);
      }
      double got = c[i * ldc + j];
      cr_assert(fabs(got - want) <= 1e-5 * mag + 1e-6,
                "%s ta=%d tb=%d %lldx%lldx%lld pad %lld threads %d: C[%lld][%lld] = %.9g, want %.9g",
                gp_sgemm_isa_name(), ta, tb, (long long)m, (long long)n, (long long)k, (long long)pad, threads,
                (long long)i, (long long)j, got, want);
    }
    for (int64_t j = n; j < ldc && i + 1 < m; j++)
      cr_assert(c[i * ldc + j] == c0[i * ldc + j], "the gap after row %lld of C was written", (long long)i);
  }
  free(a), free(b), free(c), free(c0);
}

static const int64_t SHAPES[][3] = {
    {1, 1, 1},     {1, 7, 3},      {2, 3, 5},     {3, 40, 17},   {4, 1, 1},     {5, 33, 2},   {7, 13, 5},
    {13, 17, 19},  {14, 32, 8},    {15, 33, 31},  {6, 16, 1},    {29, 47, 401}, {3, 100, 1000}, {1, 77, 300},
    {64, 49, 130}, {37, 65, 777},  {17, 129, 64}, {100, 1, 50},  {2, 200, 70},  {43, 16, 385},
};
#define NSHAPES (sizeof SHAPES / sizeof SHAPES[0])

static void check_all_shapes(GPSgemmIsa isa) {
  if (gp_sgemm_force_isa(isa) != 0) return; /* the CPU lacks it */
  for (size_t s = 0; s < NSHAPES; s++)
    for (int t = 0; t < 4; t++) {
      check_case(t & 1, t & 2, SHAPES[s][0], SHAPES[s][1], SHAPES[s][2], 0, 1);
      check_case(t & 1, t & 2, SHAPES[s][0], SHAPES[s][1], SHAPES[s][2], 3, 1);
    }
}

Test(gemm, generic_shapes) {
  cr_assert_eq(gp_sgemm_force_isa(GP_SGEMM_GENERIC), 0);
  cr_assert_str_eq(gp_sgemm_isa_name(), "generic");
  check_all_shapes(GP_SGEMM_GENERIC);
}
Test(gemm, avx2_shapes) { check_all_shapes(GP_SGEMM_AVX2); }
Test(gemm, avx512_shapes) { check_all_shapes(GP_SGEMM_AVX512); }

/* Large enough to be split over threads (M, then N the longer side; and the GEMV path). */
Test(gemm, threads) {
  for (size_t i = 0; i < NISA; i++) {
    if (gp_sgemm_force_isa(ISAS[i]) != 0) continue;
    check_case(false, false, 300, 50, 300, 0, 3);
    check_case(true, true, 60, 301, 250, 2, 2);
    check_case(false, true, 2, 3001, 800, 0, 2);
    check_case(true, false, 3, 2999, 700, 1, 3);
  }
}

/* The thread count changes how the work is split, never a result's bits. */
Test(gemm, threads_do_not_change_bits) {
  static const int64_t shapes[][3] = {{300, 50, 700}, {60, 301, 250}, {2, 3001, 800}};
  for (size_t i = 0; i < NISA; i++) {
    if (gp_sgemm_force_isa(ISAS[i]) != 0) continue;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
      float *a = mat(m, k, k), *b = mat(n, k, k), *c1 = calloc((size_t)(m * n), sizeof(float));
      float *c3 = calloc((size_t)(m * n), sizeof(float));
      gp_sgemm(false, true, m, n, k, a, k, b, k, c1, n, 1);
      gp_sgemm(false, true, m, n, k, a, k, b, k, c3, n, 3);
      cr_assert(!memcmp(c1, c3, (size_t)(m * n) * sizeof(float)), "%s %lldx%lldx%lld", gp_sgemm_isa_name(),
                (long long)m, (long long)n, (long long)k);
      free(a), free(b), free(c1), free(c3);
    }
  }
}

Test(gemm, auto_path) {
  cr_assert_eq(gp_sgemm_force_isa(GP_SGEMM_AUTO), 0);
  const char *name = gp_sgemm_isa_name();
  cr_assert(!strcmp(name, "avx512") || !strcmp(name, "avx2") || !strcmp(name, "generic"));
  check_case(false, false, 20, 40, 30, 1, 1);
}

/* Equal rows of op(A) (row 0 repeated, with large values of both signs so rounding differs
 * with the order of operations) must give bit-equal rows of C; likewise equal columns of op(B)
 * and columns of C. */
static void check_ties(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int32_t threads) {
  int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  float *a = mat(ar, ac, ac), *b = mat(br, bc, bc), *c = calloc((size_t)(m * n), sizeof(float));
  for (int64_t i = 0; i < ar * ac; i++) a[i] *= 1e4f;
  for (int64_t i = 0; i < m; i++) /* row i of op(A) = row 0 */
    for (int64_t p = 0; p < k; p++) {
      if (ta)
        a[p * ac + i] = a[p * ac];
      else
        a[i * ac + p] = a[p];
    }
  gp_sgemm(ta, tb, m, n, k, a, ac, b, bc, c, n, threads);
  for (int64_t i = 1; i < m; i++)
    cr_assert(!memcmp(c + i * n, c, (size_t)n * sizeof(float)), "%s ta=%d tb=%d %lldx%lldx%lld: row %lld differs",
              gp_sgemm_isa_name(), ta, tb, (long long)m, (long long)n, (long long)k, (long long)i);
  /* now equal columns of op(B) (column 0 repeated) */
  for (int64_t j = 0; j < n; j++)
    for (int64_t p = 0; p < k; p++) {
      if (tb)
        b[j * bc + p] = b[p];
      else
        b[p * bc + j] = b[p * bc];
    }
  float *a2 = mat(ar, ac, ac);
  memset(c, 0, (size_t)(m * n) * sizeof(float));
  gp_sgemm(ta, tb, m, n, k, a2, ac, b, bc, c, n, threads);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 1; j < n; j++)
      cr_assert(c[i * n + j] == c[i * n], "%s ta=%d tb=%d %lldx%lldx%lld: C[%lld][%lld] != C[%lld][0]",
                gp_sgemm_isa_name(), ta, tb, (long long)m, (long long)n, (long long)k, (long long)i, (long long)j,
                (long long)i);
  free(a), free(a2), free(b), free(c);
}

Test(gemm, ties) {
  for (size_t i = 0; i < NISA; i++) {
    if (gp_sgemm_force_isa(ISAS[i]) != 0) continue;
    for (int t = 0; t < 4; t++) {
      check_ties(t & 1, t & 2, 31, 70, 500, 1);   /* row and column tile edges, two KC blocks */
      check_ties(t & 1, t & 2, 301, 45, 400, 2);  /* split over M */
      check_ties(t & 1, t & 2, 45, 333, 400, 3);  /* split over N */
      check_ties(t & 1, t & 2, 2, 1000, 2100, 2); /* the GEMV path */
    }
  }
}

/* The SqueezeNet case: equal weights, equal large sums. */
Test(gemm, equal_weights_large_sums) {
  int64_t m = 1000, n = 169, k = 512;
  float *w = malloc((size_t)(m * k) * sizeof(float)), *x = mat(k, n, n), *c = calloc((size_t)(m * n), sizeof(float));
  for (int64_t i = 0; i < m * k; i++) w[i] = 0.02f;
  for (int64_t i = 0; i < k * n; i++) x[i] = (x[i] + 1.0f) * 5e5f;
  gp_sgemm(false, false, m, n, k, w, k, x, n, c, n, 2);
  for (int64_t i = 1; i < m; i++) cr_assert(!memcmp(c + i * n, c, (size_t)n * sizeof(float)), "row %lld", (long long)i);
  free(w), free(x), free(c);
}

Test(gemm, empty_does_nothing) {
  float c = 5;
  gp_sgemm(false, false, 1, 1, 0, NULL, 1, NULL, 1, &c, 1, 1);
  gp_sgemm(false, false, 0, 1, 4, NULL, 4, NULL, 1, &c, 1, 1);
  cr_assert_eq(c, 5.0f);
}
