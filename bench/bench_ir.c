/* bench_ir.c -- IR throughput: parse, InferType, verify, print and DeadCodeElimination on a
 * synthetic chain (alternating add/relu) and a wide random DAG, from 1k to 1M nodes.
 * Prints ns per node (median of repeats) and live IR bytes per call node.
 *   usage: bench_ir [max_nodes] [plugin_dir]     (defaults: 1000000, build/plugins) */
#include "../ir/ir.h"
#include "../plugin/plugin.h"
#include "../registry/registry.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static char *make_text(long n, int dag, size_t *len) {
  GPBuf b = {0};
  gp_buf_puts(&b, "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(1, 64), float32]) -> Tensor[(1, 64), float32] {\n");
  gp_buf_puts(&b, "  %0 = add(%x, %x);\n");
  uint64_t rng = 88172645463325252ull;
  for (long i = 1; i < n; i++) {
    if (!dag) {
      if (i % 2)
        gp_buf_printf(&b, "  %%%ld = nn.relu(%%%ld);\n", i, i - 1);
      else
        gp_buf_printf(&b, "  %%%ld = add(%%%ld, %%x);\n", i, i - 1);
    } else {
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      long window = i < 1000 ? i : 1000;
      long j = i - 1 - (long)(rng % (uint64_t)window);
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      long k = i - 1 - (long)(rng % (uint64_t)window);
      /* the previous node is always used, so the graph stays connected to the output */
      static const char *ops[] = {"add", "multiply", "subtract", "maximum"};
      if (rng % 5 == 0)
        gp_buf_printf(&b, "  %%%ld = nn.relu(%%%ld);\n", i, i - 1);
      else
        gp_buf_printf(&b, "  %%%ld = %s(%%%ld, %s%%%ld);\n", i, ops[rng % 4], i - 1, j == k ? "" : "", j);
      (void)k;
    }
  }
  gp_buf_printf(&b, "  %%%ld\n}\n", n - 1);
  *len = b.len;
  return gp_buf_take(&b);
}

typedef struct {
  double parse, infer, verify, print, dce;
} Times;

static void run_once(const char *text, size_t len, long n, Times *t, size_t *bytes_per_node) {
  struct mallinfo2 before = mallinfo2();
  GPNodePoolStats pool_before, pool_after; /* nodes and attribute sets live in the node pool */
  gp_node_pool_stats(&pool_before);
  double t0 = now_ns();
  GPModule *m = gp_parse(text, len, "bench");
  double t1 = now_ns();
  if (!m) {
    fprintf(stderr, "bench: parse: %s\n", gp_error_message());
    exit(1);
  }
  struct mallinfo2 after = mallinfo2();
  gp_node_pool_stats(&pool_after);
  if (bytes_per_node)
    *bytes_per_node = (after.uordblks + after.hblkhd - before.uordblks - before.hblkhd + pool_after.live_bytes -
                       pool_before.live_bytes) / (size_t)n;
  GPPassContext *ctx = gp_ctx_new();
  double t2 = now_ns();
  GPModule *typed = gp_run_pipeline(m, "InferType", ctx);
  double t3 = now_ns();
  if (!typed) {
    fprintf(stderr, "bench: InferType: %s\n", gp_error_message());
    exit(1);
  }
  int vrc = gp_verify(typed);
  double t4 = now_ns();
  if (vrc != 0) {
    fprintf(stderr, "bench: verify: %s\n", gp_error_message());
    exit(1);
  }
  char *printed = gp_print(typed, GP_PRINT_TYPES);
  double t5 = now_ns();
  GPModule *dce = gp_run_pipeline(typed, "DeadCodeElimination", ctx);
  double t6 = now_ns();
  if (!dce) {
    fprintf(stderr, "bench: DCE: %s\n", gp_error_message());
    exit(1);
  }
  t->parse = (t1 - t0) / n;
  t->infer = (t3 - t2) / n;
  t->verify = (t4 - t3) / n;
  t->print = (t5 - t4) / n;
  t->dce = (t6 - t5) / n;
  gp_free(printed);
  gp_release(dce);
  gp_release(typed);
  gp_release(m);
  gp_ctx_free(ctx);
}

int main(int argc, char **argv) {
  long max_nodes = argc > 1 ? atol(argv[1]) : 1000000;
  const char *plugin_dir = argc > 2 ? argv[2] : "build/plugins";
  gp_ops_init();
  if (gp_plugin_load_dir(plugin_dir) != 0) {
    fprintf(stderr, "bench: %s\n", gp_error_message());
    return 1;
  }
  printf("%-6s %8s %9s %9s %9s %9s %9s %9s  (ns/node, median)\n", "graph", "nodes", "parse", "infer", "verify",
         "print", "dce", "B/node");
  for (int dag = 0; dag < 2; dag++) {
    for (long n = 1000; n <= max_nodes; n *= 10) {
      size_t len;
      char *text = make_text(n, dag, &len);
      int reps = n <= 10000 ? 9 : n <= 100000 ? 5 : 3;
      double s[5][9];
      size_t bpn = 0;
      for (int r = 0; r < reps; r++) {
        Times t;
        run_once(text, len, n, &t, r == 0 ? &bpn : NULL);
        s[0][r] = t.parse, s[1][r] = t.infer, s[2][r] = t.verify, s[3][r] = t.print, s[4][r] = t.dce;
      }
      double med[5];
      for (int k = 0; k < 5; k++) {
        qsort(s[k], (size_t)reps, sizeof(double), cmp_double);
        med[k] = s[k][reps / 2];
      }
      printf("%-6s %8ld %9.1f %9.1f %9.1f %9.1f %9.1f %9zu\n", dag ? "dag" : "chain", n, med[0], med[1], med[2],
             med[3], med[4], bpn);
      fflush(stdout);
      gp_free(text);
    }
  }
  gp_plugins_unload_all();
  gp_registry_shutdown();
  gp_types_shutdown();
  return 0;
}
