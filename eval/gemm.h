/*
 * gemm.h -- our single-precision GEMM (eval/gemm.c), used by conv2d, dense and batch_matmul.
 *
 * gp_sgemm computes row-major C += op(A) op(B) with this contract: every element of C is
 * computed by the same sequence of floating-point operations, whatever its position (tile, edge
 * tile, thread), so equal rows of op(A) give bit-equal rows of C and equal columns of op(B)
 * give bit-equal columns.  (OpenBLAS's Haswell SGEMM kernel does not: it rounds alternate
 * blocks of outputs differently.)  The sequence, for every element: for each block of KC
 * consecutive k (KC fixed per ISA path), acc = 0, acc = fma(a_ik, b_kj, acc) in increasing k,
 * then c = c + acc; calls with m < GP_SGEMM_GEMV_M (the GEMV path) use one other sequence for
 * all their elements.
 *
 * Paths, chosen at run time: AVX-512 (14x32 micro-kernel), AVX2+FMA (6x16), portable C.
 * Never reads or writes outside the matrices (edges are zero-padded in the packed panels and
 * only their valid part is stored).  Threads split M or N, never K, so a call's result does
 * not depend on its thread count.
 */
#ifndef GP_GEMM_H
#define GP_GEMM_H

#include <stdbool.h>
#include <stdint.h>

/* op(A) is m x k (A is k x m, row stride lda, when ta; else m x k), op(B) is k x n (B is n x k
 * when tb); C is m x n with row stride ldc.  lda, ldb, ldc >= the row lengths they stride.
 * Runs on up to nthreads threads (gp_k_parallel_for); small products stay on the caller. */
void gp_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
              int64_t ldb, float *c, int64_t ldc, int32_t nthreads);

/* The ISA paths.  GP_SGEMM_AUTO: the best the CPU supports (the default). */
typedef enum GPSgemmIsa { GP_SGEMM_AUTO, GP_SGEMM_GENERIC, GP_SGEMM_AVX2, GP_SGEMM_AVX512 } GPSgemmIsa;

/* For tests and benchmarks: force a path for the following calls (process-wide, not for use
 * while another thread calls gp_sgemm).  Returns -1 (and changes nothing) when the CPU lacks it. */
int gp_sgemm_force_isa(GPSgemmIsa isa);
/* The path calls take now: "avx512", "avx2" or "generic". */
const char *gp_sgemm_isa_name(void);

/* Calls with fewer rows than this take the GEMV path (no packing). */
#define GP_SGEMM_GEMV_M 4

#endif /* GP_GEMM_H */
