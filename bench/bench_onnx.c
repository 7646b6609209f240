/* bench_onnx.c -- the ONNX light models through the importer and the llvm default set at
 * opt-level 3: ms to import; ms of each pass of the set, run on what the passes before it
 * produced (each pass function called directly, after an untimed InferType when the pass needs
 * types; median of N runs on the same input, which no pass changes); the whole pipeline and
 * import + pipeline (median of N).  For FoldConstant and FoldScaleAxis (its folded weights), the
 * bytes it materializes ("makes") and the time to write them into fresh memory ("fresh write":
 * see fresh_write_ms), and the ratio: the floor of a pass that must write them.  Beside
 * ResNet-50's figures, TVM v0.12's on this
 * machine kind (issues #5 and #14) and the ratio; beside DenseNet-121's FoldScaleAxis, TVM's too
 * (a model file named densenet121*.onnx: bench/gen_model.c writes one).
 *   usage: bench_onnx [light_dir] [plugin_dir] [runs] [pass]
 *   (defaults: ../shared/onnx/light, build/plugins, 5; runs up to 1000).  With `pass`, only that
 *   pass is timed (the others run once, untimed), for profiling with perf.  With `pass` BYOC:
 *   AnnotateTarget, MergeCompilerRegions and PartitionGraph on ResNet-50 (conv2d, relu and add
 *   supported by a test target), as imported and after SimplifyInference,FoldConstant.
 *
 *   bench_onnx --import FILE [runs]: a real-weight model (bench/gen_real_weights.c): the median
 *   ms of reading FILE once (open, read into fresh memory) and of importing it, and their ratio.
 *   bench_onnx --rss FILE [plugin_dir]: imports FILE and runs the llvm default set at opt-level 3
 *   once, then prints the peak resident set (getrusage) and the initializers' bytes. */
#include "../eval/eval.h"
#include "../frontend/onnx/onnx.h"
#include "../ir/ir.h"
#include "../plugin/plugin.h"
#include "../registry/registry.h"
#include "bench_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


/* The tensors of the constants in `out` that are not constants of `in` (what FoldConstant
 * made), each once, in post order (the order the rewrite materialized them); borrowed from
 * `out`.  *bytes: their total size. */
static GPTensor **new_constants(const GPModule *in, const GPModule *out, size_t *count, size_t *bytes) {
  GPPtrMap old = {0};
  GPExpr **order;
  size_t n;
  for (int32_t f = 0; f < in->num_functions; f++) {
    if (gp_post_order(in->funcs[f]->body, &order, &n) != 0) exit(1);
    for (size_t i = 0; i < n; i++)
      if (gp_kind(order[i]) == GP_TI_CONSTANT) gp_map_put(&old, ((GPConstant *)order[i])->data, (void *)1);
    gp_free(order);
  }
  GPTensor **list = NULL;
  size_t len = 0, cap = 0;
  *bytes = 0;
  GPPtrMap seen = {0};
  for (int32_t f = 0; f < out->num_functions; f++) {
    if (gp_post_order(out->funcs[f]->body, &order, &n) != 0) exit(1);
    for (size_t i = 0; i < n; i++) {
      if (gp_kind(order[i]) != GP_TI_CONSTANT) continue;
      GPTensor *t = ((GPConstant *)order[i])->data;
      if (!t || gp_map_has(&old, t) || gp_map_has(&seen, t)) continue;
      gp_map_put(&seen, t, (void *)1);
      if (len == cap) cap = cap ? 2 * cap : 64, list = gp_realloc(list, cap * sizeof *list);
      list[len++] = t;
      *bytes += gp_tensor_nbytes(t);
    }
    gp_free(order);
  }
  gp_map_free(&old);
  gp_map_free(&seen);
  *count = len;
  return list;
}

/* The baseline of FoldConstant's figure: the time to write the bytes it materializes into
 * fresh memory allocated the way its constants are.  Per run: one gp_tensor_alloc (the
 * evaluator's allocation of an output) of each constant's dtype and shape, in the same order,
 * then a memset of its bytes; all stay alive until the run is over, as the constants do, and
 * the previous run's are released before the timing starts, as bench_model releases the
 * previous FoldConstant result.  Median ms of `runs`. */
static double fresh_write_ms(GPTensor *const *ts, size_t count, int runs) {
  double *t = gp_malloc((size_t)runs * sizeof *t);
  GPTensor **made = gp_calloc(count ? count : 1, sizeof *made);
  for (int r = 0; r < runs; r++) {
    for (size_t i = 0; i < count; i++) gp_release(made[i]);
    gp_ni_cache_clear(); /* every timed run indexes its input afresh */
    double t0 = bench_now_ms();
    for (size_t i = 0; i < count; i++) {
      made[i] = gp_tensor_alloc(ts[i]->dl.dtype, ts[i]->dl.ndim, ts[i]->dl.shape, true);
      if (!made[i]) exit(1);
      memset(made[i]->dl.data, 1, gp_tensor_nbytes(ts[i]));
    }
    __asm__ volatile("" : : : "memory");
    t[r] = bench_now_ms() - t0;
  }
  for (size_t i = 0; i < count; i++) gp_release(made[i]);
  gp_free(made);
  double ms = bench_median(t, runs);
  gp_free(t);
  return ms;
}


/* TVM v0.12 on DenseNet-121 (issue #14), ms; 0 where not given. */
static double tvm_densenet_ms(const char *pass) { return !strcmp(pass, "FoldScaleAxis") ? 17700 : 0; }

/* TVM v0.12 on ResNet-50 (issues #5 and #14), ms; 0 where not given. */
static double tvm_ms(const char *pass, int index) {
  if (!strcmp(pass, "FoldScaleAxis")) return 131;
  if (!strcmp(pass, "CombineParallelConv2D")) return 25.1;
  if (!strcmp(pass, "InferType")) return 22.5;
  if (!strcmp(pass, "SimplifyInference")) return 29.9;
  if (!strcmp(pass, "FoldConstant") && index == 7) return 12500;
  if (!strcmp(pass, "EliminateCommonSubexpr")) return 28.7;
  if (!strcmp(pass, "CanonicalizeOps")) return 23.8;
  if (!strcmp(pass, "FuseOps")) return 33.6;
  return 0;
}

/* pass "BYOC": the trio on the imported model and on it after SimplifyInference,FoldConstant
 * (conv2d, relu and add supported by a test target). */
static void bench_model_byoc(const char *path, const char *base, int runs) {
  GPModule *m = gp_onnx_import_file(path, NULL);
  GPPassContext *ctx = bench_ctx();
  bench_byoc_setup("bench_onnx", ctx);
  const char *pre[2] = {"InferType", "SimplifyInference,FoldConstant,InferType"};
  for (int v = 0; m && v < 2; v++) {
    GPModule *in = gp_run_pipeline(m, pre[v], ctx);
    if (!in) break;
    double ms[3];
    int32_t ext;
    bench_byoc_trio("bench_onnx", in, ctx, runs, ms, &ext);
    printf("%-16s BYOC (conv2d/relu/add) after %-40s %d external functions\n", base, pre[v], (int)ext);
    for (int p = 0; p < 3; p++) printf("  %-24s %9.3f ms\n", bench_byoc_passes[p], ms[p]);
    gp_release(in);
  }
  if (!m || gp_error_kind()) {
    fprintf(stderr, "bench_onnx: %s\n", gp_error_message());
    exit(1);
  }
  gp_release(m);
  gp_ctx_free(ctx);
}

static void bench_model(const char *path, int runs, const char *only) {
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  bool resnet = strstr(base, "resnet50") != NULL, densenet = strncmp(base, "densenet121", 11) == 0;
  if (only && !strcmp(only, "BYOC")) {
    if (resnet) bench_model_byoc(path, base, runs);
    return;
  }
  double *t = gp_malloc((size_t)runs * sizeof *t);
  GPModule *m = NULL;
  int import_runs = only ? 1 : runs;
  for (int r = 0; r < import_runs; r++) {
    gp_release(m);
    gp_ni_cache_clear(); /* every timed run indexes its input afresh */
    double t0 = bench_now_ms();
    m = gp_onnx_import_file(path, NULL);
    t[r] = bench_now_ms() - t0;
    if (!m) {
      fprintf(stderr, "bench_onnx: %s\n", gp_error_message());
      exit(1);
    }
  }
  double import_ms = bench_median(t, import_runs);
  printf("%-16s import %8.2f ms%s\n", base, import_ms, resnet ? "   (TVM from_onnx 7700 ms)" : "");
  GPPassContext *ctx = bench_ctx();
  GPModule *cur = gp_retain(m);
  for (size_t i = 0; i < BENCH_NSET; i++) {
    const char *name = kBenchSet[i];
    GPModule *in = strcmp(name, "InferType") && strcmp(name, "RemoveUnusedFunctions") ? bench_call_pass("bench_onnx", "InferType", cur, ctx)
                                                                                      : gp_retain(cur);
    GPModule *out = NULL;
    int pass_runs = only && strcmp(only, name) ? 1 : runs;
    for (int r = 0; r < pass_runs; r++) {
      gp_release(out);
      gp_ni_cache_clear(); /* every timed run indexes its input afresh */
      double t0 = bench_now_ms();
      out = bench_call_pass("bench_onnx", name, in, ctx);
      t[r] = bench_now_ms() - t0;
    }
    if (pass_runs < runs) {
      gp_release(in);
      gp_release(cur);
      cur = out;
      continue;
    }
    double ms = bench_median(t, runs), tvm = resnet ? tvm_ms(name, (int)i) : densenet ? tvm_densenet_ms(name) : 0;
    printf("  %-24s %9.3f ms", name, ms);
    if (tvm > 0) printf("   TVM %8.1f ms  x%.0f", tvm, tvm / ms);
    if (!strcmp(name, "FoldConstant") || !strcmp(name, "FoldScaleAxis")) {
      size_t count, bytes;
      GPTensor **made = new_constants(in, out, &count, &bytes);
      if (bytes >= (1u << 20)) {
        double fresh = fresh_write_ms(made, count, runs);
        printf("   makes %.1f MB; fresh write %.2f ms (ratio %.2f)", bytes / 1e6, fresh, ms / fresh);
      }
      gp_free(made);
    }
    printf("\n");
    gp_release(in);
    gp_release(cur);
    cur = out;
  }
  gp_release(cur);
  if (only) {
    gp_free(t);
    gp_release(m);
    gp_ctx_free(ctx);
    return;
  }
  GPModule *whole = NULL;
  for (int r = 0; r < runs; r++) {
    gp_release(whole);
    gp_ni_cache_clear(); /* every timed run indexes its input afresh */
    double t0 = bench_now_ms();
    whole = gp_run_pipeline(m, NULL, ctx);
    t[r] = bench_now_ms() - t0;
    if (!whole) {
      fprintf(stderr, "bench_onnx: pipeline: %s\n", gp_error_message());
      exit(1);
    }
  }
  double pipe_ms = bench_median(t, runs);
  printf("  %-24s %9.3f ms%s\n", "default set (opt 3)", pipe_ms, resnet ? "   TVM 26000 ms" : "");
  printf("  %-24s %9.3f ms%s\n", "import + default set", import_ms + pipe_ms, resnet ? "   (goal < 50 ms, issue 14)" : "");
  gp_release(whole);
  gp_release(m);
  gp_ctx_free(ctx);
  gp_free(t);
}


/* ms to read the file once into fresh memory (the buffer is freed after). */
static double read_once_ms(const char *path) {
  gp_ni_cache_clear(); /* every timed run indexes its input afresh */
  double t0 = bench_now_ms();
  int fd = open(path, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    fprintf(stderr, "bench_onnx: %s: cannot open\n", path);
    exit(1);
  }
  size_t n = (size_t)st.st_size, got = 0;
  char *buf = malloc(n ? n : 1);
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r <= 0) exit(1);
    got += (size_t)r;
  }
  close(fd);
  double ms = bench_now_ms() - t0;
  free(buf);
  return ms;
}

/* The bytes of the module's constants (each tensor once). */
static double constant_bytes(const GPModule *m) {
  GPPtrMap seen = {0};
  double bytes = 0;
  for (int32_t f = 0; f < m->num_functions; f++) {
    GPExpr **order;
    size_t n;
    if (gp_post_order(m->funcs[f]->body, &order, &n) != 0) exit(1);
    for (size_t i = 0; i < n; i++) {
      if (gp_kind(order[i]) != GP_TI_CONSTANT) continue;
      GPTensor *t = ((GPConstant *)order[i])->data;
      if (!t || gp_map_has(&seen, t)) continue;
      gp_map_put(&seen, t, (void *)1);
      bytes += (double)gp_tensor_nbytes(t);
    }
    gp_free(order);
  }
  gp_map_free(&seen);
  return bytes;
}

static int import_mode(const char *path, int runs) {
  double *tr = gp_malloc((size_t)runs * sizeof *tr), *ti = gp_malloc((size_t)runs * sizeof *ti);
  for (int r = 0; r < runs; r++) {
    tr[r] = read_once_ms(path);
    gp_ni_cache_clear(); /* every timed run indexes its input afresh */
    double t0 = bench_now_ms();
    GPModule *m = gp_onnx_import_file(path, NULL);
    ti[r] = bench_now_ms() - t0;
    if (!m) {
      fprintf(stderr, "bench_onnx: %s\n", gp_error_message());
      return 1;
    }
    gp_release(m);
  }
  double read_ms = bench_median(tr, runs), imp_ms = bench_median(ti, runs);
  printf("%s: read once %.2f ms, import %.2f ms (import / read %.2f; goal <= 0.5), median of %d\n", path, read_ms,
         imp_ms, imp_ms / read_ms, runs);
  gp_free(tr);
  gp_free(ti);
  return 0;
}

static int rss_mode(const char *path) {
  GPModule *m = gp_onnx_import_file(path, NULL);
  if (!m) {
    fprintf(stderr, "bench_onnx: %s\n", gp_error_message());
    return 1;
  }
  double weights = constant_bytes(m);
  GPPassContext *ctx = bench_ctx();
  GPModule *opt = gp_run_pipeline(m, NULL, ctx);
  if (!opt) {
    fprintf(stderr, "bench_onnx: pipeline: %s\n", gp_error_message());
    return 1;
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("%s: import + default set (opt 3): peak RSS %.1f MB for %.1f MB of constants (ratio %.2f; goal <= 1.2)\n",
         path, ru.ru_maxrss / 1024.0, weights / 1e6, ru.ru_maxrss * 1024.0 / weights);
  gp_release(opt);
  gp_release(m);
  gp_ctx_free(ctx);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 2 && (!strcmp(argv[1], "--import") || !strcmp(argv[1], "--rss"))) {
    gp_ops_init();
    if (gp_plugin_load_dir(argc > 3 && !strcmp(argv[1], "--rss") ? argv[3] : "build/plugins") != 0) {
      fprintf(stderr, "bench_onnx: %s\n", gp_error_message());
      return 1;
    }
    int runs = !strcmp(argv[1], "--import") && argc > 3 ? atoi(argv[3]) : 11;
    if (runs < 1 || runs > 1000) runs = 11;
    int rc = !strcmp(argv[1], "--import") ? import_mode(argv[2], runs) : rss_mode(argv[2]);
    gp_registry_shutdown();
    return rc;
  }
  const char *dir = argc > 1 ? argv[1] : "../shared/onnx/light";
  const char *plugin_dir = argc > 2 ? argv[2] : "build/plugins";
  int runs = argc > 3 ? atoi(argv[3]) : 5;
  if (runs < 1 || runs > 1000) runs = 5;
  /* A fixed mmap threshold (glibc otherwise raises it when a large block is freed): every
   * buffer of 128 KiB or more is fresh memory from the kernel in every run, as in a single
   * real run, for FoldConstant and for its baseline alike; smaller ones come from the heap. */
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  const char *only = argc > 4 ? argv[4] : NULL;
  gp_ops_init();
  if (gp_plugin_load_dir(plugin_dir) != 0) {
    fprintf(stderr, "bench_onnx: %s\n", gp_error_message());
    return 1;
  }
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "bench_onnx: %s: cannot open (the ONNX light models live in ../shared/onnx/light)\n", dir);
    return 1;
  }
  char *names[64];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < 64) {
    size_t len = strlen(e->d_name);
    if (len > 5 && !strcmp(e->d_name + len - 5, ".onnx")) names[n++] = gp_strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, bench_cmp_str);
  printf("bench_onnx: %d runs per figure (median); ms\n", runs);
  printf("FoldConstant, FoldScaleAxis: \"fresh write\" = for each constant it makes, a fresh gp_tensor_alloc of its shape\n"
         "  (as the evaluator allocates it) and a memset of its bytes, all kept alive, as the constants are;\n"
         "  buffers >= 128 KiB are fresh pages in every run (M_MMAP_THRESHOLD fixed at 128 KiB)\n");
  for (int i = 0; i < n; i++) {
    GPBuf p = {0};
    gp_buf_printf(&p, "%s/%s", dir, names[i]);
    bench_model(p.data, runs, only);
    gp_buf_free(&p);
    gp_free(names[i]);
  }
  gp_registry_shutdown();
  return 0;
}
