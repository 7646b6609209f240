/* bench_util.h -- what the pass benchmarks (bench_onnx, bench_synth) share: a monotonic clock,
 * the median of a set of runs, and calling a registered pass function directly; and the
 * pseudo-random weights of the model generators (gen_real_weights, gen_model). */
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

/* A uniform double in [0, 1) from *state (splitmix64): the same sequence on every machine. */
static inline double bench_rnd01(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  z ^= z >> 31;
  return (double)(z >> 11) / 9007199254740992.0;
}

static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static inline int bench_cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The llvm default set's passes in order (plugin/std_plugin.c), each timed by itself; and the
 * context both benchmarks run them with: opt-level 3, the set's EliminateCommonSubexpr skip. */
static const char *const kBenchSet[] = {
    "RemoveUnusedFunctions", "Legalize", "SimplifyInference", "EliminateCommonSubexpr", "CombineParallelConv2D",
    "CombineParallelDense", "CombineParallelBatchMatmul", "FoldConstant", "FoldScaleAxis", "SimplifyExpr",
    "CanonicalizeCast", "CanonicalizeOps", "FlattenAtrousConv", "InferType", "AlterOpLayout", "SimplifyExprPostAlterOp",
    "FoldConstant", "FuseOps"};
#define BENCH_NSET (sizeof kBenchSet / sizeof kBenchSet[0])

static inline GPPassContext *bench_ctx(void) {
  GPPassContext *ctx = gp_ctx_new();
  gp_ctx_set_opt_level(ctx, 3);
  gp_ctx_set_config(ctx, "EliminateCommonSubexpr.skip", "graphpass.cse_skip_int32_cast");
  return ctx;
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

/* ---- the BYOC trio (bench_onnx and bench_synth with the pass argument "BYOC") */

static const char *const bench_byoc_passes[3] = {"AnnotateTarget", "MergeCompilerRegions", "PartitionGraph"};

/* Marks conv2d, relu and add as supported by target "bench" (op attribute target.bench) and
 * names it in ctx's AnnotateTarget.targets. */
static inline void bench_byoc_setup(const char *prog, GPPassContext *ctx) {
  static const char *const ops[] = {"nn.conv2d", "nn.relu", "add"};
  GPAny yes = gp_any_bool(true);
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (gp_op_set_attr(gp_op_get(ops[i]), "target.bench", &yes, 10) != 0) {
      fprintf(stderr, "%s: %s\n", prog, gp_error_message());
      exit(1);
    }
  if (gp_ctx_set_config(ctx, "AnnotateTarget.targets", "bench") != 0) {
    fprintf(stderr, "%s: %s\n", prog, gp_error_message());
    exit(1);
  }
}

/* Times each pass of the trio (median of `runs`) on what the one before made from the typed m;
 * ms[3] = the three medians; *externals = the functions PartitionGraph lifted. */
static inline void bench_byoc_trio(const char *prog, GPModule *m, GPPassContext *ctx, int runs, double ms[3],
                                   int32_t *externals) {
  double *t = malloc(sizeof(double) * (size_t)runs);
  if (!t) exit(1);
  GPModule *cur = gp_retain(m);
  for (int p = 0; p < 3; p++) {
    GPModule *out = NULL;
    for (int r = 0; r < runs; r++) {
      gp_release(out);
      gp_ni_cache_clear(); /* every timed run indexes its input afresh */
      double t0 = bench_now_ms();
      out = bench_call_pass(prog, bench_byoc_passes[p], cur, ctx);
      t[r] = bench_now_ms() - t0;
    }
    ms[p] = bench_median(t, runs);
    gp_release(cur);
    cur = out;
  }
  *externals = cur->num_functions - m->num_functions;
  gp_release(cur);
  free(t);
}

#endif /* GP_BENCH_UTIL_H */
