/*
 * blas.h -- the BLAS the kernels call: OpenBLAS, loaded at the first call (eval/blas.c), with
 * the CBLAS names and constants the kernels use, so a kernel includes this instead of <cblas.h>.
 * The float64 GEMMs of conv2d, dense and batch_matmul use it; their float32 GEMMs are ours
 * (eval/gemm.h), which computes every output element the same way whatever OpenBLAS's core
 * type.  cblas_sgemm stays for comparisons (bench/bench_eval.c).
 *
 * Why loaded, not linked: OpenBLAS picks its kernels for the CPU when it is loaded, from
 * OPENBLAS_CORETYPE or its own detection.  Debian 12's OpenBLAS (0.3.21) does not recognize
 * AVX-512 on AMD CPUs (Zen 4) and picks its Haswell kernels there.  On such a CPU, when
 * OPENBLAS_CORETYPE is unset, we set it to SkylakeX before loading OpenBLAS.  Its SGEMM is 1.5-1.9x
 * faster on this machine's conv shapes.  Its micro-kernel also computes every output lane in the
 * same order: equal weights give bit-equal outputs, as ONNX Runtime's do.  Haswell's kernel rounds
 * alternate column blocks differently.
 *
 * When the process has already loaded OpenBLAS, the loaded copy is used as it is.  When there is
 * no OpenBLAS, the first call aborts with a message; gp_blas_available() lets callers check first.
 */
#ifndef GP_BLAS_H
#define GP_BLAS_H

#include <stdbool.h>

typedef int blasint;
enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112 };

/* True when OpenBLAS could be loaded (loads it on the first call; thread-safe). */
bool gp_blas_available(void);
/* "SkylakeX", "Haswell", ... (OpenBLAS's openblas_get_corename), or "none". */
const char *gp_blas_corename(void);

void gp_cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, blasint m,
                    blasint n, blasint k, float alpha, const float *a, blasint lda, const float *b, blasint ldb,
                    float beta, float *c, blasint ldc);
void gp_cblas_dgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, blasint m,
                    blasint n, blasint k, double alpha, const double *a, blasint lda, const double *b,
                    blasint ldb, double beta, double *c, blasint ldc);
int gp_openblas_get_num_threads(void);
void gp_openblas_set_num_threads(int n);

#define cblas_sgemm gp_cblas_sgemm
#define cblas_dgemm gp_cblas_dgemm
#define openblas_get_num_threads gp_openblas_get_num_threads
#define openblas_set_num_threads gp_openblas_set_num_threads

#endif /* GP_BLAS_H */
