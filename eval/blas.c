/* blas.c -- OpenBLAS, loaded at the first call with the kernels chosen for the CPU (see blas.h). */
#include "eval/blas.h"

#include <cpuid.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*SgemmFn)(int, int, int, blasint, blasint, blasint, float, const float *, blasint,
                        const float *, blasint, float, float *, blasint);
typedef void (*DgemmFn)(int, int, int, blasint, blasint, blasint, double, const double *, blasint,
                        const double *, blasint, double, double *, blasint);

static struct {
  void *handle;
  SgemmFn sgemm;
  DgemmFn dgemm;
  int (*get_threads)(void);
  void (*set_threads)(int);
  char *(*corename)(void);
} B;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* AVX-512 F, CD, BW, DQ and VL (what OpenBLAS's SkylakeX kernels use), with the OS saving the
 * ZMM state (XCR0 bits 1, 2, 5, 6, 7). */
static bool cpu_has_avx512(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false; /* OSXSAVE */
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 0xE6) != 0xE6) return false;
  if (__get_cpuid_max(0, NULL) < 7) return false;
  __cpuid_count(7, 0, a, b, c, d);
  const unsigned need = (1u << 16) | (1u << 28) | (1u << 30) | (1u << 17) | (1u << 31); /* F CD BW DQ VL */
  return (b & need) == need;
}

static void load(void) {
  if (!getenv("OPENBLAS_CORETYPE") && cpu_has_avx512()) setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
  const char *names[] = {"libopenblas.so.0", "libopenblas.so"};
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !B.handle; i++)
    B.handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!B.handle) return;
  B.sgemm = (SgemmFn)dlsym(B.handle, "cblas_sgemm");
  B.dgemm = (DgemmFn)dlsym(B.handle, "cblas_dgemm");
  B.get_threads = (int (*)(void))dlsym(B.handle, "openblas_get_num_threads");
  B.set_threads = (void (*)(int))dlsym(B.handle, "openblas_set_num_threads");
  B.corename = (char *(*)(void))dlsym(B.handle, "openblas_get_corename");
  if (!B.sgemm || !B.dgemm || !B.get_threads || !B.set_threads) B.handle = NULL;
}

bool gp_blas_available(void) {
  pthread_once(&once, load);
  return B.handle != NULL;
}

static void need(void) {
  if (!gp_blas_available()) {
    fprintf(stderr, "graphpass: OpenBLAS (libopenblas.so.0) cannot be loaded: %s\n", dlerror());
    abort();
  }
}

const char *gp_blas_corename(void) {
  if (!gp_blas_available() || !B.corename) return "none";
  return B.corename();
}

void gp_cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, blasint m,
                    blasint n, blasint k, float alpha, const float *a, blasint lda, const float *b, blasint ldb,
                    float beta, float *c, blasint ldc) {
  need();
  B.sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gp_cblas_dgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, blasint m,
                    blasint n, blasint k, double alpha, const double *a, blasint lda, const double *b,
                    blasint ldb, double beta, double *c, blasint ldc) {
  need();
  B.dgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

int gp_openblas_get_num_threads(void) {
  need();
  return B.get_threads();
}

void gp_openblas_set_num_threads(int n) {
  need();
  B.set_threads(n);
}
