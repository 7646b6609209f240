/* bench_synth.c -- every pass of the llvm default set at opt-level 3, and the whole set, on
 * synthetic CNN-like graphs of about 10k, 100k and 1M op calls (issue #5's bench).
 *
 * The graph: blocks of nn.conv2d -> nn.bias_add -> nn.batch_norm -> get-item 0 -> nn.relu, a
 * residual add every second block and a dropout every fourth; every block has its own weight,
 * bias and batch-norm constants (4 channels, 8x8 maps), so SimplifyInference unpacks each
 * batch_norm, FoldConstant folds each block's scale and shift, CanonicalizeOps rewrites each
 * bias_add and FuseOps groups each block.  Every eighth block also computes its relu twice and
 * adds the two (work for EliminateCommonSubexpr).  The graph is built through the IR API and
 * typed once.
 *
 * Each pass function is called directly on what the passes before it produced (after an
 * untimed InferType when it needs types), like bench_onnx; the whole set runs through
 * gp_run_pipeline.  Prints ms (median of 5 runs; 3 at 1M) and ns per op call of the input graph,
 * and, per pass, the ratio of the largest to the smallest ns per call over the sizes.
 *   usage: bench_synth [max_calls] [plugin_dir] [pass]   (defaults: 1000000, build/plugins; with a
 *   pass name, the other passes run once and their figures are of one run).  With `pass` BYOC:
 *   AnnotateTarget, MergeCompilerRegions and PartitionGraph on the typed graphs, conv2d, relu and
 *   add supported by a test target (bias_add and batch_norm are not: regions alternate). */
#include "../ir/ir.h"
#include "../plugin/plugin.h"
#include "../registry/registry.h"
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CH 4
#define HW 8

static void die(const char *what) {
  fprintf(stderr, "bench_synth: %s: %s\n", what, gp_error_message());
  exit(1);
}

/* A float32 constant of the given shape filled with base + i * step. */
static GPExpr *constant(int32_t ndim, const int64_t *shape, float base, float step) {
  GPTensor *t = gp_tensor_alloc(GP_DT_F32, ndim, shape, true);
  if (!t) die("tensor");
  float *p = t->dl.data;
  int64_t n = 1;
  for (int32_t i = 0; i < ndim; i++) n *= shape[i];
  for (int64_t i = 0; i < n; i++) p[i] = base + step * (float)(i % 7);
  GPConstant *c = gp_constant_new(t);
  gp_release(t);
  return &c->base;
}

/* A call of op `name` taking over the references in args (attrs: keys[i] = vals[i]). */
static GPExpr *call(const char *name, int32_t nargs, GPExpr **args, int32_t nattrs, const char *const *keys,
                    const GPAttrValue *vals) {
  const GPOp *op = gp_op_get(name);
  if (!op) die(name);
  GPAttrs *attrs = gp_op_attrs_new(op, nattrs, keys, vals);
  if (!attrs && nattrs > 0) die(name);
  GPCall *c = gp_call_new((GPExpr *)op, nargs, args, attrs);
  gp_release(attrs);
  for (int32_t i = 0; i < nargs; i++) gp_release(args[i]);
  return &c->base;
}

/* The graph with about n op calls (a whole number of blocks); *calls gets the exact count. */
static GPModule *make_graph(long n, long *calls) {
  const int64_t xshape[4] = {1, CH, HW, HW}, wshape[4] = {CH, CH, 3, 3}, vshape[1] = {CH};
  GPVar *x = gp_var_new("x", gp_type_tensor(GP_DT_F32, 4, xshape));
  GPExpr *prev = gp_retain(&x->base), *skip = gp_retain(&x->base);
  const int64_t pad[4] = {1, 1, 1, 1}, ks[2] = {3, 3};
  const char *ckeys[3] = {"padding", "channels", "kernel_size"};
  GPAttrValue cvals[3] = {gp_attr_ints(4, pad), gp_attr_int(CH), gp_attr_ints(2, ks)};
  long count = 0;
  for (long block = 0; count < n; block++) {
    if (block % 2 == 0) {
      gp_release(skip);
      skip = gp_retain(prev);
    }
    GPExpr *a2[2] = {prev, constant(4, wshape, 0.01f, 0.001f)};
    GPExpr *y = call("nn.conv2d", 2, a2, 3, ckeys, cvals);
    GPExpr *b2[2] = {y, constant(1, vshape, 0.1f, 0.01f)};
    y = call("nn.bias_add", 2, b2, 0, NULL, NULL);
    GPExpr *bn[5] = {y, constant(1, vshape, 1.0f, 0.1f), constant(1, vshape, 0.0f, 0.1f),
                     constant(1, vshape, 0.5f, 0.01f), constant(1, vshape, 2.0f, 0.2f)};
    GPExpr *t = call("nn.batch_norm", 5, bn, 0, NULL, NULL);
    GPTupleGetItem *g = gp_tuple_get_item_new(t, 0);
    gp_release(t);
    GPExpr *r1[1] = {gp_retain(&g->base)};
    y = call("nn.relu", 1, r1, 0, NULL, NULL);
    count += 4;
    if (block % 8 == 7) { /* the same relu twice, added */
      GPExpr *r2[1] = {gp_retain(&g->base)};
      GPExpr *dup = call("nn.relu", 1, r2, 0, NULL, NULL);
      GPExpr *s2[2] = {y, dup};
      y = call("add", 2, s2, 0, NULL, NULL);
      count += 2;
    }
    gp_release(g);
    if (block % 4 == 3) {
      GPExpr *d1[1] = {y};
      GPExpr *d = call("nn.dropout", 1, d1, 0, NULL, NULL);
      GPTupleGetItem *d0 = gp_tuple_get_item_new(d, 0);
      gp_release(d);
      y = &d0->base;
      count++;
    }
    if (block % 2 == 1) {
      GPExpr *s2[2] = {y, gp_retain(skip)};
      y = call("add", 2, s2, 0, NULL, NULL);
      count++;
    }
    prev = y;
  }
  gp_release(skip);
  GPFunctionExpr *fn = gp_function_new(1, &x, prev, NULL, NULL);
  gp_release(prev);
  gp_release(x);
  GPModule *m = gp_module_new("synth");
  if (gp_module_add(m, "main", fn, false) != 0) die("module");
  gp_release(fn);
  *calls = count;
  return m;
}

static const char *const kSet[] = {"RemoveUnusedFunctions", "Legalize", "SimplifyInference", "EliminateCommonSubexpr",
                                   "FoldConstant", "CanonicalizeCast", "CanonicalizeOps", "InferType",
                                   "FoldConstant", "FuseOps"};
#define NPASS (sizeof kSet / sizeof kSet[0])
#define MAX_SIZES 4

static int bench_byoc(long max_calls, GPPassContext *ctx) {
  bench_byoc_setup("bench_synth", ctx);
  double ms[3][MAX_SIZES], ns[3][MAX_SIZES];
  long sizes[MAX_SIZES];
  int32_t ext[MAX_SIZES];
  int nsizes = 0;
  for (long target = 10000; target <= max_calls && nsizes < MAX_SIZES; target *= 10) {
    long calls;
    GPModule *raw = make_graph(target, &calls);
    GPModule *m = gp_run_pipeline(raw, "InferType", ctx);
    gp_release(raw);
    if (!m) die("InferType");
    double t[3];
    bench_byoc_trio("bench_synth", m, ctx, calls < 500000 ? 5 : 3, t, &ext[nsizes]);
    for (int p = 0; p < 3; p++) ms[p][nsizes] = t[p], ns[p][nsizes] = t[p] * 1e6 / (double)calls;
    sizes[nsizes++] = calls;
    gp_release(m);
    fprintf(stderr, "bench_synth: %ld calls done\n", calls);
  }
  printf("bench_synth: BYOC trio, conv2d/relu/add supported; ms (ns per op call), median\n");
  printf("%-24s", "calls");
  for (int s = 0; s < nsizes; s++) printf(" %22ld", sizes[s]);
  printf("  max/min ns\n%-24s", "external functions");
  for (int s = 0; s < nsizes; s++) printf(" %22d", (int)ext[s]);
  printf("\n");
  for (int p = 0; p < 3; p++) {
    printf("%-24s", bench_byoc_passes[p]);
    double lo = 0, hi = 0;
    for (int s = 0; s < nsizes; s++) {
      printf(" %11.3f (%7.1f ns)", ms[p][s], ns[p][s]);
      if (lo == 0 || ns[p][s] < lo) lo = ns[p][s];
      if (ns[p][s] > hi) hi = ns[p][s];
    }
    printf("  %.2f\n", lo > 0 ? hi / lo : 0.0);
  }
  gp_ctx_free(ctx);
  gp_registry_shutdown();
  return 0;
}

int main(int argc, char **argv) {
  long max_calls = argc > 1 ? atol(argv[1]) : 1000000;
  const char *plugin_dir = argc > 2 ? argv[2] : "build/plugins";
  const char *only = argc > 3 ? argv[3] : NULL; /* time only this pass (others run once) */
  gp_ops_init();
  if (gp_plugin_load_dir(plugin_dir) != 0) die(plugin_dir);
  GPPassContext *ctx = gp_ctx_new();
  gp_ctx_set_opt_level(ctx, 3);
  if (only && !strcmp(only, "BYOC")) return bench_byoc(max_calls, ctx);
  double ms[NPASS + 1][MAX_SIZES], ns[NPASS + 1][MAX_SIZES];
  long sizes[MAX_SIZES];
  int nsizes = 0;
  for (long target = 10000; target <= max_calls && nsizes < MAX_SIZES; target *= 10) {
    long calls;
    GPModule *raw = make_graph(target, &calls);
    GPModule *m = gp_run_pipeline(raw, "InferType", ctx);
    gp_release(raw);
    if (!m) die("InferType");
    int runs = calls < 500000 ? 5 : 3;
    double t[5];
    GPModule *cur = gp_retain(m);
    for (size_t p = 0; p < NPASS; p++) {
      const char *name = kSet[p];
      GPModule *in = strcmp(name, "InferType") && strcmp(name, "RemoveUnusedFunctions")
                         ? bench_call_pass("bench_synth", "InferType", cur, ctx)
                         : gp_retain(cur);
      GPModule *out = NULL;
      int reps = only && strcmp(only, name) ? 1 : runs;
      for (int r = 0; r < reps; r++) {
        gp_release(out);
        double t0 = bench_now_ms();
        out = bench_call_pass("bench_synth", name, in, ctx);
        t[r] = bench_now_ms() - t0;
      }
      ms[p][nsizes] = bench_median(t, reps);
      gp_release(in);
      gp_release(cur);
      cur = out;
    }
    gp_release(cur);
    int reps = only ? 1 : runs;
    for (int r = 0; r < reps; r++) {
      double t0 = bench_now_ms();
      GPModule *out = gp_run_pipeline(m, NULL, ctx);
      t[r] = bench_now_ms() - t0;
      if (!out) die("default set");
      gp_release(out);
    }
    ms[NPASS][nsizes] = bench_median(t, reps);
    for (size_t p = 0; p <= NPASS; p++) ns[p][nsizes] = ms[p][nsizes] * 1e6 / (double)calls;
    sizes[nsizes++] = calls;
    gp_release(m);
    fprintf(stderr, "bench_synth: %ld calls done\n", calls);
  }
  printf("bench_synth: llvm default set, opt-level 3, on CNN-like graphs; ms (ns per op call), median\n");
  printf("%-24s", "calls");
  for (int s = 0; s < nsizes; s++) printf(" %22ld", sizes[s]);
  printf("  max/min ns\n");
  for (size_t p = 0; p <= NPASS; p++) {
    printf("%-24s", p < NPASS ? kSet[p] : "default set (opt 3)");
    double lo = 0, hi = 0;
    for (int s = 0; s < nsizes; s++) {
      printf(" %11.3f (%7.1f ns)", ms[p][s], ns[p][s]);
      if (lo == 0 || ns[p][s] < lo) lo = ns[p][s];
      if (ns[p][s] > hi) hi = ns[p][s];
    }
    printf("  %.2f\n", lo > 0 ? hi / lo : 0.0);
  }
  gp_ctx_free(ctx);
  gp_registry_shutdown();
  return 0;
}
