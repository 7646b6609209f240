/* bench_patterns.c -- MergeComposite with a three-pattern table (TVM DNNL-style: conv2d
 * [+ bias_add] + batch_norm + relu, conv2d [+ bias_add] + batch_norm, add + relu) on the ONNX light models and on
 * bench_synth's CNN-like graphs of about 10k, 100k and 1M op calls.
 *
 * The pass function is called directly on the typed module (bench_util.h), so a figure is the
 * pass itself: the selection walks, the rebuild and the re-typing of what changed.  Prints ms
 * (median of runs) and, for the synthetic graphs, ns per op call of the input and the ratio of
 * the largest to the smallest ns per call over the sizes.
 *   usage: bench_patterns [max_calls] [plugin_dir] [light_dir] [runs]
 *   (defaults: 1000000, build/plugins, ../shared/onnx/light, 21) */
#include "../frontend/onnx/onnx.h"
#include "../ir/pattern.h"
#include "../plugin/plugin.h"
#include "bench_util.h"
#define SYNTH_PROG "bench_patterns"
#include "synth_graph.h"

#include <dirent.h>
#include <string.h>

static const char *const kNames[3] = {"conv2d_bn_relu", "conv2d_bn", "add_relu"};
static const char *const kPatterns[3] = {
    "nn.relu(nn.batch_norm(nn.bias_add?(nn.conv2d(_, _), _), _, _, _, _).0)",
    "nn.batch_norm(nn.bias_add?(nn.conv2d(_, _), _), _, _, _, _).0",
    "nn.relu(add(_, _))",
};

static void register_table(void) {
  GPPattern *p[3];
  for (int i = 0; i < 3; i++)
    if (!(p[i] = gp_pattern_compile(kPatterns[i], "bench", 1, 1))) die("pattern");
  GPPatternTable *t = gp_pattern_table_new(3, kNames, p, NULL);
  if (!t || gp_pattern_table_register("bench.dnnl", t, 1) != 0) die("table");
  gp_release(t);
  for (int i = 0; i < 3; i++) gp_release(p[i]);
}

/* Median ms of `runs` MergeComposite runs on m; *composites gets the number made. */
static double time_merge(GPModule *m, GPPassContext *ctx, int runs, long *composites) {
  double *t = gp_malloc((size_t)runs * sizeof *t);
  GPModule *out = NULL;
  for (int r = 0; r < runs; r++) {
    gp_release(out);
    double t0 = bench_now_ms();
    out = bench_call_pass("bench_patterns", "MergeComposite", m, ctx);
    t[r] = bench_now_ms() - t0;
  }
  long n = 0;
  GPExpr **nodes;
  size_t cnt;
  if (gp_post_order(&gp_module_lookup(out, "main")->base, &nodes, &cnt) != 0) die("post_order");
  for (size_t i = 0; i < cnt; i++)
    if (gp_kind(nodes[i]) == GP_TI_FUNCTION_EXPR && gp_attrs_get(GP_AS(GPFunctionExpr, nodes[i])->attrs, "Composite"))
      n++;
  gp_free(nodes);
  gp_release(out);
  *composites = n;
  double med = bench_median(t, runs);
  gp_free(t);
  return med;
}

int main(int argc, char **argv) {
  long max_calls = argc > 1 ? atol(argv[1]) : 1000000;
  const char *plugin_dir = argc > 2 ? argv[2] : "build/plugins";
  const char *light = argc > 3 ? argv[3] : "../shared/onnx/light";
  int runs = argc > 4 ? atoi(argv[4]) : 21;
  if (runs < 1 || runs > 1000) runs = 21;
  gp_ops_init();
  if (gp_plugin_load_dir(plugin_dir) != 0) die(plugin_dir);
  register_table();
  GPPassContext *ctx = gp_ctx_new();
  if (gp_ctx_set_config(ctx, "MergeComposite.table", "bench.dnnl") != 0) die("config");
  printf("bench_patterns: MergeComposite with 3 patterns (%s | %s | %s); median ms\n", kNames[0], kNames[1],
         kNames[2]);
  DIR *d = opendir(light);
  if (!d) {
    printf("light models: skipped (%s is absent)\n", light);
  } else {
    struct dirent *e;
    char *names[64];
    int n = 0;
    while ((e = readdir(d)) && n < 64) {
      size_t len = strlen(e->d_name);
      if (len > 5 && !strcmp(e->d_name + len - 5, ".onnx")) names[n++] = gp_strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, bench_cmp_str);
    for (int i = 0; i < n; i++) {
      GPBuf p = {0};
      gp_buf_printf(&p, "%s/%s", light, names[i]);
      GPModule *raw = gp_onnx_import_file(p.data, NULL);
      if (!raw) die(p.data);
      GPModule *m = gp_infer_types(raw);
      gp_release(raw);
      if (!m) die("InferType");
      long made = 0;
      double ms = time_merge(m, ctx, runs, &made);
      printf("%-20s %8.3f ms  %4ld composites\n", names[i], ms, made);
      gp_release(m);
      gp_buf_free(&p);
      gp_free(names[i]);
    }
  }
  long sizes[4];
  double ns[4];
  int ns_n = 0;
  for (long target = 10000; target <= max_calls && ns_n < 4; target *= 10) {
    long calls;
    GPModule *raw = make_graph(target, &calls);
    GPModule *m = gp_infer_types(raw);
    gp_release(raw);
    if (!m) die("InferType");
    long made = 0;
    double ms = time_merge(m, ctx, calls < 500000 ? 5 : 3, &made);
    sizes[ns_n] = calls;
    ns[ns_n++] = ms * 1e6 / (double)calls;
    printf("synth %8ld calls %10.3f ms  %7.1f ns/call  %6ld composites\n", calls, ms, ns[ns_n - 1], made);
    gp_release(m);
  }
  double lo = 0, hi = 0;
  for (int i = 0; i < ns_n; i++) {
    if (lo == 0 || ns[i] < lo) lo = ns[i];
    if (ns[i] > hi) hi = ns[i];
  }
  if (ns_n > 1) printf("synth max/min ns per call %ld..%ld: %.2f\n", sizes[0], sizes[ns_n - 1], hi / lo);
  gp_ctx_free(ctx);
  gp_registry_shutdown();
  return 0;
}
