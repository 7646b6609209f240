/* bench_opu.c -- the OPU target on the shared light models with seeded random weights
 * (tests/opu_models.h: He-normal convolutions, batch-norm variances in [0.5, 1.5)): per model,
 * the opu set's time without GenIR, GenIR's time (calibration in float included, and alone),
 * the float evaluator's time and the simulator's (whole @main with the opu functions on
 * graphpass.ext.opu.run), the cosine of the outputs and whether the top-1 agrees.  Calibration
 * input: uniform [0, 1) images from seed 1; test input: seed 2 (never the calibration one).
 * Softmax calls of @main are dropped, so that logits are compared.
 *
 *   usage: bench_opu [--check] [--threads N] [--runs N] [--time-passes] [--compile-only]
 *                    [--out DIR] [light_dir] [model...]
 *   (defaults: ../shared/onnx/light, all five models, all cores)
 * --time-passes prints the per-pass split of the set and of GenIR on stderr (the timing
 * instrument of `graphpass opt --time-passes`); --compile-only skips the evaluations (for
 * profiling the set and GenIR alone: perf record ./build/bin/bench_opu --compile-only resnet50);
 * --out DIR has GenIR write its files there (GenIR.out) and adds the column "write ms".
 *
 * --check exits 1 when a model's cosine is below 0.99 or its top-1 differs (tests/run.sh runs
 * it when ../shared/onnx is present). */
#include "../eval/eval.h"
#include "../frontend/onnx/onnx.h"
#include "../ir/ir.h"
#include "../plugin/plugin.h"
#include "../registry/registry.h"
#include "../tests/opu_models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* the process's CPU time, all threads */
static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what) {
  fprintf(stderr, "bench_opu: %s: %s\n", what, gp_error_message());
  exit(2);
}

/* uniform [0, 1) images for every parameter of @main */
static GPTensor **images(const GPModule *m, uint64_t seed, int32_t *n) {
  GPTensor **in = NULL;
  if (gp_eval_random_inputs(m, "main", seed, &in, n) != 0) die("inputs");
  for (int32_t i = 0; i < *n; i++) {
    if (in[i]->dl.dtype.code != kDLFloat || in[i]->dl.dtype.bits != 32) continue;
    float *d = in[i]->dl.data;
    int64_t k = 1;
    for (int32_t j = 0; j < in[i]->dl.ndim; j++) k *= in[i]->dl.shape[j];
    for (int64_t j = 0; j < k; j++) d[j] = 0.5f * (d[j] + 1.0f);
  }
  return in;
}

/* Output 0 of @main; *ms the fastest of `runs` runs. */
static GPTensor *eval_out0(const GPModule *m, GPTensor **in, int32_t n, int external, int threads, int runs,
                           double *ms) {
  GPTensor *t = NULL;
  *ms = 1e300;
  for (int r = 0; r < runs; r++) {
    GPTensor **outs = NULL;
    int32_t no = 0;
    GPEvalOptions o = {.struct_size = sizeof o, .abi_version = GP_ABI_VERSION, .num_threads = threads,
                       .external = external};
    double t0 = now_ms();
    if (gp_eval_function(m, "main", n, in, &outs, &no, &o) != 0) die(external ? "opu evaluation" : "float evaluation");
    double dt = now_ms() - t0;
    if (dt < *ms) *ms = dt;
    for (int32_t i = 1; i < no; i++) gp_release(outs[i]);
    gp_release(t);
    t = outs[0];
    gp_free(outs);
  }
  return t;
}

static GPExpr *drop_softmax(void *user, GPExpr *orig, GPExpr *rebuilt) {
  (void)user;
  (void)orig;
  if (opu_is_op(rebuilt, "nn.softmax")) return gp_retain(GP_AS(GPCall, rebuilt)->args[0]);
  return gp_retain(rebuilt);
}

/* "<key> X ms" in text, or -1 */
static double note_ms(const char *text, const char *key) {
  const char *p = text ? strstr(text, key) : NULL;
  return p ? atof(p + strlen(key)) : -1;
}

int main(int argc, char **argv) {
  int check = 0, threads = 0, runs = 3, time_passes = 0, compile_only = 0;
  const char *outdir = NULL;
  const char *dir = "../shared/onnx/light";
  const char *models[8];
  int nmodels = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--check"))
      check = 1;
    else if (!strcmp(argv[i], "--time-passes"))
      time_passes = 1;
    else if (!strcmp(argv[i], "--compile-only"))
      compile_only = 1;
    else if (!strcmp(argv[i], "--out") && i + 1 < argc)
      outdir = argv[++i];
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
      runs = atoi(argv[++i]) > 0 ? atoi(argv[i]) : 1;
    else if (nmodels == 0 && strchr(argv[i], '/'))
      dir = argv[i];
    else if (nmodels < 8)
      models[nmodels++] = argv[i];
  }
  if (!nmodels) {
    static const char *all[] = {"bvlc_alexnet", "inception_v1", "resnet50", "squeezenet", "vgg19"};
    for (int i = 0; i < 5; i++) models[nmodels++] = all[i];
  }
  gp_ops_init();
  if (gp_plugin_load("build/plugins/libgp_std.so") != 0 || gp_plugin_load("build/plugins/libgp_opu.so") != 0)
    die("loading build/plugins/libgp_std.so and libgp_opu.so");
  char tmp[] = "/tmp/gp_bench_opu_XXXXXX";
  if (!mkdtemp(tmp)) die("mkdtemp");
  char *set = gp_opt_set_get("opu", NULL);
  if (!set) die("the opu set");
  /* the set without its last pass (GenIR), to time GenIR alone */
  char *pre = gp_strdup(set);
  char *last = strrchr(pre, ',');
  if (!last || strcmp(last + 1, "GenIR") != 0) die("the opu set does not end with GenIR");
  *last = 0;
  int bad = 0;
  printf("%-13s %9s %9s %9s %9s %9s %9s %9s %9s %7s %9s %5s\n", "model", "set ms", "set cpu", "GenIR ms", "calib ms",
         "emit ms", "emit cpu", "float ms", "opu ms", "ratio", "cosine", "top1");
  if (outdir) printf("(--out: the last column is write ms, GenIR writing its files)\n");
  for (int mi = 0; mi < nmodels; mi++) {
    GPBuf path = {0};
    gp_buf_printf(&path, "%s/%s.onnx", dir, models[mi]);
    GPModule *m0 = gp_onnx_import_file(path.data, NULL);
    if (!m0) die(path.data);
    gp_buf_free(&path);
    GPPassContext *fc = gp_ctx_new();
    GPModule *m1 = gp_run_pipeline(m0, "FoldConstant", fc);
    gp_ctx_free(fc);
    if (!m1) die("FoldConstant");
    GPModule *m = opu_randomize_weights(m1, 1234 + (uint64_t)mi);
    if (!m) die("random weights");
    { /* compare logits: softmax calls of @main are dropped (monotonic: top-1 is kept) */
      int32_t mi2 = gp_module_find(m, "main");
      GPExpr *nb = gp_rewrite(&m->funcs[mi2]->base, drop_softmax, NULL);
      if (!nb || gp_module_add(m, "main", GP_AS(GPFunctionExpr, nb), true) != 0) die("dropping the softmax");
      gp_release(nb);
    }
    int32_t nin = 0, nt = 0;
    GPTensor **cal = images(m, 1, &nin), **test = images(m, 2, &nt);
    GPBuf spec = {0};
    for (int32_t i = 0; i < nin; i++) {
      GPBuf f = {0};
      gp_buf_printf(&f, "%s/%s_cal%d.npy", tmp, models[mi], (int)i);
      if (gp_npy_write(f.data, cal[i]) != 0) die("writing the calibration input");
      gp_buf_printf(&spec, "%s%s=%s", i ? ";" : "", m->funcs[gp_module_find(m, "main")]->params[i]->name, f.data);
      gp_buf_free(&f);
    }
    GPPassContext *ctx = gp_ctx_new();
    if (gp_ctx_set_target(ctx, "opu") || gp_ctx_set_opt_level(ctx, 3) ||
        gp_ctx_set_config(ctx, "PrintIR.file", "/dev/null") || gp_ctx_set_config(ctx, "GenIR.calibrate", spec.data))
      die("context");
    if (outdir && gp_ctx_set_config(ctx, "GenIR.out", outdir)) die("GenIR.out");
    if (time_passes) {
      GPInstrument tm = gp_instrument_timing(stderr, NULL);
      if (gp_ctx_instrument_register(ctx, &tm) != 0) die("the timing instrument");
    }
    double t0 = now_ms(), u0 = cpu_ms();
    GPModule *p = gp_run_pipeline(m, pre, ctx);
    if (!p) die("the opu set");
    double t1 = now_ms(), set_cpu = cpu_ms() - u0;
    char *notes = NULL;
    size_t notes_len = 0;
    FILE *mem = open_memstream(&notes, &notes_len);
    ctx->explain = true;
    ctx->out = mem;
    GPModule *c = gp_run_pipeline(p, "GenIR", ctx);
    if (!c) die("GenIR");
    double t2 = now_ms();
    fclose(mem);
    double cal_ms = note_ms(notes, "calibration "), emit_ms = note_ms(notes, "quantize+emit "),
           emit_cpu = note_ms(notes, "(CPU "), write_ms = -1;
    if (outdir && notes && strstr(notes, ", written to ")) write_ms = note_ms(strstr(notes, ", written to "), " in ");
    free(notes);
    if (compile_only) {
      printf("%-13s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f", models[mi], t1 - t0, set_cpu, t2 - t1, cal_ms, emit_ms,
             emit_cpu);
    } else {
      double fms, oms, warm;
      gp_release(eval_out0(c, test, nt, 1, threads, 1, &warm)); /* compiles and caches the programs */
      GPTensor *want = eval_out0(m, test, nt, 0, threads, runs, &fms);
      GPTensor *got = eval_out0(c, test, nt, 1, threads, runs, &oms);
      int64_t row = want->dl.ndim ? want->dl.shape[want->dl.ndim - 1] : 1, mism = 0;
      double cos = opu_cosine(got, want, row, &mism);
      int ok = cos >= 0.99 && mism == 0;
      bad |= !ok;
      printf("%-13s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %7.2f %9.5f %5s", models[mi], t1 - t0, set_cpu,
             t2 - t1, cal_ms, emit_ms, emit_cpu, fms, oms, oms / fms, cos, mism ? "DIFF" : "same");
      gp_release(want);
      gp_release(got);
    }
    if (outdir) printf(" %9.1f", write_ms);
    printf("\n");
    fflush(stdout);
    gp_release(c);
    gp_release(p);
    gp_ctx_free(ctx);
    for (int32_t i = 0; i < nin; i++) gp_release(cal[i]);
    for (int32_t i = 0; i < nt; i++) gp_release(test[i]);
    gp_free(cal);
    gp_free(test);
    gp_buf_free(&spec);
    gp_release(m);
  }
  printf("(set ms / cpu: the opu set without GenIR at opt-level 3, wall and CPU time of all threads; GenIR ms: all of GenIR; calib ms: its float calibration "
         "run; emit ms / cpu: its quantization and emission, wall and CPU time of all threads (GenIR's note; it uses every core for large weights); float / opu ms: @main on the evaluator / with the "
         "opu functions on the simulator (programs cached), fastest of %d; ratio: opu / float)\n", runs);
  gp_free(pre);
  free(set);
  if (check && bad) {
    fprintf(stderr, "bench_opu: a model's cosine is below 0.99 or its top-1 differs\n");
    return 1;
  }
  return 0;
}
