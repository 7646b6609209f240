/* bench_util.h -- what the pass benchmarks (bench_onnx, bench_synth) share: a monotonic clock,
 * the median of a set of runs, and calling a registered pass function directly. */
#ifndef GP_BENCH_UTIL_H
#define GP_BENCH_UTIL_H

#include "../ir/ir.h"
#include "../registry/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static inline int bench_cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The median of v[0..n) (sorts v). */
static inline double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
  return v[n / 2];
}

/* The module pass `name` makes of m (a new reference); exits naming `prog` on any error. */
static inline GPModule *bench_call_pass(const char *prog, const char *name, GPModule *m, GPPassContext *ctx) {
  GPPassEntry *e = gp_pass_acquire(name);
  if (!e) {
    fprintf(stderr, "%s: no pass %s\n", prog, name);
    exit(1);
  }
  GPAny args[2] = {{.type_index = GP_TI_MODULE, .v_obj = &m->obj}, {.type_index = GP_TI_OPAQUE_PTR, .v_ptr = ctx}};
  GPAny res = {0};
  if (e->info.func(e->info.self, args, 2, &res) != 0 || res.type_index != GP_TI_MODULE) {
    fprintf(stderr, "%s: %s: %s\n", prog, name, gp_error_message());
    exit(1);
  }
  gp_release(e);
  return (GPModule *)res.v_obj;
}

#endif /* GP_BENCH_UTIL_H */
