/* bench_passes.c -- FuseOps throughput on synthetic graphs of 10k to 10M op calls:
 *  - cnn:   conv2d -> bias_add -> relu blocks, a residual add every second block;
 *  - chain: alternating add / relu (the add also reads the input).
 * Each graph is parsed and typed once; the pass function is then called directly on the typed
 * module (no pipeline, no required InferType re-run), so a run is FuseOps itself: indexing,
 * post-dominator tree, partition, rewrite and the re-typing of its output.
 *
 * This machine's speed drifts by up to 1.5x over a minute (other tenants), so the sizes are
 * measured in interleaved rounds: all graphs are built first, then each round runs every size
 * (10k: median of 15 runs, 100k: of 5, then one run), and a size's figure is the median over
 * 5 rounds (3 when a 10M run takes over 10 s).  Printed: ms per run and ns per op call, by the
 * wall clock and by the thread's CPU time (which does not count waiting for a core), then the
 * ratio of the largest to the smallest ns/node, of the medians and as the median of the
 * rounds' own ratios.
 *   usage: bench_passes [max_calls] [plugin_dir] [cnn|chain]
 *   (defaults: 10000000, build/plugins, both graphs) */
#include "../plugin/plugin.h"
#include "bench_util.h"

#include <string.h>

static double now_ns(void) { return bench_now_ms() * 1e6; }

/* CPU time of this thread (FuseOps runs on the calling thread): unlike the wall clock, it does
 * not count the time the thread waits for a core on a loaded machine. */
static double cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Text of a graph with n op calls. */
static char *make_text(long n, int cnn, size_t *len) {
  GPBuf b = {0};
  if (!cnn) {
    gp_buf_puts(&b, "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(1, 64), float32]) -> Tensor[(1, 64), float32] {\n");
    gp_buf_puts(&b, "  %0 = add(%x, %x);\n");
    for (long i = 1; i < n; i++) {
      if (i % 2)
        gp_buf_printf(&b, "  %%%ld = nn.relu(%%%ld);\n", i, i - 1);
      else
        gp_buf_printf(&b, "  %%%ld = add(%%%ld, %%x);\n", i, i - 1);
    }
    gp_buf_printf(&b, "  %%%ld\n}\n", n - 1);
  } else {
    gp_buf_puts(&b, "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(4, 4, 3, 3), "
                    "float32], %b: Tensor[(4), float32]) -> Tensor[(1, 4, 8, 8), float32] {\n");
    long id = 0;
    char prev[32] = "%x", skip[32] = "%x";
    for (long block = 0; id < n; block++) {
      if (block % 2 == 0) snprintf(skip, sizeof skip, "%s", prev);
      gp_buf_printf(&b, "  %%%ld = nn.conv2d(%s, %%w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);\n", id, prev);
      id++;
      if (id >= n) break;
      gp_buf_printf(&b, "  %%%ld = nn.bias_add(%%%ld, %%b);\n", id, id - 1);
      id++;
      if (id >= n) break;
      gp_buf_printf(&b, "  %%%ld = nn.relu(%%%ld);\n", id, id - 1);
      id++;
      if (block % 2 == 1 && id < n) {
        gp_buf_printf(&b, "  %%%ld = add(%%%ld, %s);\n", id, id - 1, skip);
        id++;
      }
      snprintf(prev, sizeof prev, "%%%ld", id - 1);
    }
    gp_buf_printf(&b, "  %%%ld\n}\n", id - 1);
  }
  *len = b.len;
  return gp_buf_take(&b);
}

static GPModule *run_pass(const GPPassEntry *e, GPModule *m, GPPassContext *ctx) {
  GPAny args[2] = {{.type_index = GP_TI_MODULE, .v_obj = &m->obj}, {.type_index = GP_TI_OPAQUE_PTR, .v_ptr = ctx}};
  GPAny res = {0};
  if (e->info.func(e->info.self, args, 2, &res) != 0 || res.type_index != GP_TI_MODULE) {
    fprintf(stderr, "bench: FuseOps: %s\n", gp_error_message());
    exit(1);
  }
  return (GPModule *)res.v_obj;
}

static long count_functions(const GPModule *m) {
  GPExpr **order;
  size_t n;
  if (gp_post_order(m->funcs[0]->body, &order, &n) != 0) return -1;
  long count = 0;
  for (size_t i = 0; i < n; i++)
    if (gp_kind(order[i]) == GP_TI_FUNCTION_EXPR) count++;
  gp_free(order);
  return count;
}

enum { MAX_SIZES = 8, MAX_ROUNDS = 5 };

int main(int argc, char **argv) {
  long max_nodes = argc > 1 ? atol(argv[1]) : 10000000;
  const char *plugin_dir = argc > 2 ? argv[2] : "build/plugins";
  const char *only = argc > 3 ? argv[3] : NULL;
  gp_ops_init();
  if (gp_plugin_load_dir(plugin_dir) != 0) {
    fprintf(stderr, "bench: %s\n", gp_error_message());
    return 1;
  }
  GPPassEntry *e = gp_pass_acquire("FuseOps");
  if (!e) {
    fprintf(stderr, "bench: no FuseOps pass in %s\n", plugin_dir);
    return 1;
  }
  GPPassContext *ctx = gp_ctx_new();
  printf("FuseOps (max_depth 256); cpu: thread CPU time (not counting waits for a core); median over rounds\n"
         "%-6s %9s %6s %11s %9s %9s %10s\n",
         "graph", "calls", "rounds", "ms/run", "ns/node", "cpu ns/n", "functions");
  for (int cnn = 1; cnn >= 0; cnn--) {
    if (only && strcmp(only, cnn ? "cnn" : "chain") != 0) continue;
    long sizes[MAX_SIZES];
    GPModule *typed[MAX_SIZES];
    long functions[MAX_SIZES];
    int ns = 0;
    for (long n = max_nodes < 10000 ? max_nodes : 10000; n <= max_nodes && ns < MAX_SIZES; n *= 10) {
      size_t len;
      char *text = make_text(n, cnn, &len);
      GPModule *m = gp_parse(text, len, "bench");
      gp_free(text);
      if (!m) {
        fprintf(stderr, "bench: parse: %s\n", gp_error_message());
        return 1;
      }
      typed[ns] = gp_run_pipeline(m, "InferType", ctx);
      gp_release(m);
      if (!typed[ns]) {
        fprintf(stderr, "bench: InferType: %s\n", gp_error_message());
        return 1;
      }
      GPModule *out = run_pass(e, typed[ns], ctx); /* a warm-up run, and the count */
      functions[ns] = count_functions(out);
      gp_release(out);
      sizes[ns++] = n;
    }
    double wall[MAX_SIZES][MAX_ROUNDS], cpu[MAX_SIZES][MAX_ROUNDS], ratio[MAX_ROUNDS], cratio[MAX_ROUNDS];
    int rounds = MAX_ROUNDS;
    for (int r = 0; r < rounds; r++) {
      for (int i = 0; i < ns; i++) {
        long n = sizes[i];
        int k = n <= 10000 ? 15 : n <= 100000 ? 5 : 1;
        double t[15], c[15];
        for (int j = 0; j < k; j++) {
          double t0 = now_ns(), c0 = cpu_ns();
          GPModule *out = run_pass(e, typed[i], ctx);
          t[j] = now_ns() - t0;
          c[j] = cpu_ns() - c0;
          gp_release(out);
        }
        wall[i][r] = bench_median(t, k) / (double)n;
        cpu[i][r] = bench_median(c, k) / (double)n;
        if (r == 0 && n >= 10000000 && wall[i][r] * (double)n > 10e9) rounds = 3; /* slow: fewer rounds */
      }
      double lo = wall[0][r], hi = lo, clo = cpu[0][r], chi = clo;
      for (int i = 1; i < ns; i++) {
        lo = wall[i][r] < lo ? wall[i][r] : lo, hi = wall[i][r] > hi ? wall[i][r] : hi;
        clo = cpu[i][r] < clo ? cpu[i][r] : clo, chi = cpu[i][r] > chi ? cpu[i][r] : chi;
      }
      ratio[r] = hi / lo;
      cratio[r] = chi / clo;
    }
    double lo = 0, hi = 0, clo = 0, chi = 0;
    for (int i = 0; i < ns; i++) {
      double per = bench_median(wall[i], rounds), cper = bench_median(cpu[i], rounds);
      if (lo == 0 || per < lo) lo = per;
      if (per > hi) hi = per;
      if (clo == 0 || cper < clo) clo = cper;
      if (cper > chi) chi = cper;
      printf("%-6s %9ld %6d %11.2f %9.1f %9.1f %10ld\n", cnn ? "cnn" : "chain", sizes[i], rounds,
             per * (double)sizes[i] / 1e6, per, cper, functions[i]);
      gp_release(typed[i]);
    }
    printf("%-6s max/min ns per node: %.2f (cpu %.2f); median of the rounds' ratios: %.2f (cpu %.2f)\n",
           cnn ? "cnn" : "chain", lo > 0 ? hi / lo : 0.0, clo > 0 ? chi / clo : 0.0, bench_median(ratio, rounds),
           bench_median(cratio, rounds));
    fflush(stdout);
  }
  gp_ctx_free(ctx);
  gp_pass_entry_release(e);
  gp_plugins_unload_all();
  gp_registry_shutdown();
  gp_types_shutdown();
  return 0;
}
