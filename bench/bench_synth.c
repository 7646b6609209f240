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
#define SYNTH_PROG "bench_synth"
#include "synth_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NPASS BENCH_NSET
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
  GPPassContext *ctx = bench_ctx();
  if (only && !strcmp(only, "BYOC")) return bench_byoc(max_calls, ctx);
  double ms[NPASS + 2][MAX_SIZES], ns[NPASS + 2][MAX_SIZES]; /* the passes, the set, the walk */
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
      const char *name = kBenchSet[p];
      GPModule *in = strcmp(name, "InferType") && strcmp(name, "RemoveUnusedFunctions")
                         ? bench_call_pass("bench_synth", "InferType", cur, ctx)
                         : gp_retain(cur);
      GPModule *out = NULL;
      int reps = only && strcmp(only, name) ? 1 : runs;
      if (!strcmp(name, "CombineParallelConv2D")) { /* the walk alone: the node index of its input */
        GPFunctionExpr *fn = gp_module_lookup(in, "main");
        for (int r = 0; r < reps; r++) {
          GPNodeIndex ni;
          double t0 = bench_now_ms();
          if (gp_ni_build(&ni, &fn->base, GP_NI_LET_VALUE_FIRST) != 0) die("node index");
          t[r] = bench_now_ms() - t0;
          gp_ni_free(&ni);
        }
        ms[NPASS + 1][nsizes] = bench_median(t, reps);
      }
      for (int r = 0; r < reps; r++) {
        gp_release(out);
        gp_ni_cache_clear(); /* every timed run indexes its input afresh */
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
      gp_ni_cache_clear(); /* every timed run indexes its input afresh */
      double t0 = bench_now_ms();
      GPModule *out = gp_run_pipeline(m, NULL, ctx);
      t[r] = bench_now_ms() - t0;
      if (!out) die("default set");
      gp_release(out);
    }
    ms[NPASS][nsizes] = bench_median(t, reps);
    for (size_t p = 0; p <= NPASS + 1; p++) ns[p][nsizes] = ms[p][nsizes] * 1e6 / (double)calls;
    sizes[nsizes++] = calls;
    gp_release(m);
    fprintf(stderr, "bench_synth: %ld calls done\n", calls);
  }
  printf("bench_synth: llvm default set, opt-level 3, on CNN-like graphs; ms (ns per op call), median\n");
  printf("%-24s", "calls");
  for (int s = 0; s < nsizes; s++) printf(" %22ld", sizes[s]);
  printf("  max/min ns\n");
  for (size_t p = 0; p <= NPASS + 1; p++) {
    printf("%-24s", p < NPASS ? kBenchSet[p] : p == NPASS ? "default set (opt 3)" : "(one walk: node index)");
    double lo = 0, hi = 0;
    for (int s = 0; s < nsizes; s++) {
      printf(" %11.3f (%7.1f ns)", ms[p][s], ns[p][s]);
      if (lo == 0 || ns[p][s] < lo) lo = ns[p][s];
      if (ns[p][s] > hi) hi = ns[p][s];
    }
    if (hi < 1.0) /* under 1 ns per call at every size: the pass did not walk the graph */
      printf("  O(1)\n");
    else
      printf("  %.2f\n", lo > 0 ? hi / lo : 0.0);
  }
  printf("(max/min ns: the largest over the smallest ns per call across sizes; O(1): under 1 ns per call at "
         "every size, i.e. the pass saw from the functions' subtree facts that it had nothing to do; one walk: "
         "the host's node index of CombineParallelConv2D's input built afresh, the walk a pass that reads every "
         "node pays, which is all CombineParallelConv2D does when no node feeds three convolutions)\n");
  gp_ctx_free(ctx);
  gp_registry_shutdown();
  return 0;
}
