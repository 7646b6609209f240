/* fuzz_opu.c -- the accelerator plugin's compile (target opu's default set: annotation,
 * partitioning, int8 quantization, GenIR's instruction streams) on the graphs graph_gen.h builds,
 * and its bit-exact simulator against the float evaluator.
 *
 * A graph that types, is small and tame (numerics_check.h) is compiled with --verify-numerics
 * (the external functions evaluate as their float bodies, so every pass of the set must keep
 * the numbers as in the other harnesses).  The compile either succeeds or refuses with a
 * message.  What compiled then runs end to end with the simulator (external functions through
 * graphpass.ext.opu.run) on the calibration inputs, and must run.  The harness registers its
 * own graphpass.ext.opu.run around the plugin's (checking_run), and a second run checks each
 * call of an external function where it is made (in @main, if branches, closures, global
 * functions) on the values the float module computes there: the simulator's outputs against
 * the float body's on the same inputs, each output of a region with several (a tuple) on its
 * own, by cosine similarity of at least
 * MIN_COSINE (int8 noise keeps it far above; a wrong layout, weight order or scale does not),
 * unless the float result is too flat to say (its spread below 1e-3 of its magnitude, or its
 * norm below 1e-3).  A call below MIN_COSINE is a finding unless the float body on its inputs
 * quantized as the driver quantizes them (int8 steps of max |x| / 127, the calibrated range on
 * these calibration inputs) is itself flat or within MIN_COSINE of the simulator: what input
 * quantization loses before any instruction runs is not a compile bug (a clip(0, 6) of small
 * positive values beside a pad fill of -0.87: they all round to 0 on the way in).  The whole
 * graph's outputs are not compared: a host op after the
 * accelerator (a group_norm of a narrow group) may amplify int8 noise without any bug.  Last,
 * the simulated module runs on other inputs than the calibration ones (values past the
 * calibrated ranges saturate), and must run. */
#include "graph_gen.h"
#include "tests/opu_models.h"

#define MIN_COSINE 0.9

static GPPassContext *octx; /* target opu */
static GPPackedFunc *opu_run; /* the plugin's runner, wrapped by checking_run */
static int checking_run(void *self, const GPAny *args, int32_t nargs, GPAny *res);
static long n_compiled, n_simulated, n_multi, n_outputs, n_input_bound, n_other;

static void opu_stats(void) {
  fprintf(stderr, "opu: %ld compiled, %ld calls simulated (%ld with several outputs), %ld outputs compared (%ld below "
                  "%.2f, explained by input quantization), %ld runs on other inputs\n", n_compiled, n_simulated, n_multi,
          n_outputs, n_input_bound, MIN_COSINE, n_other);
}

static void opu_init(void) {
  if (octx) return;
  if (getenv("GP_FUZZ_STATS")) atexit(opu_stats);
  octx = gp_ctx_new();
  if (gp_ctx_set_target(octx, "opu") != 0 || gp_ctx_set_config(octx, "PrintIR.file", "/dev/null") != 0) {
    fprintf(stderr, "fuzz_opu: no target opu (build/fuzz/plugins/libgp_opu.so): %s\n", gp_error_message());
    abort();
  }
  octx->verify_numerics = true;
  octx->check_immutable = true;
  octx->rtol = 1e-3;
  opu_run = gp_func_get("graphpass.ext.opu.run");
  GPPackedFunc *hook = gp_func_new(NULL, checking_run, NULL);
  if (!opu_run || !hook || gp_func_register("graphpass.ext.opu.run", hook, 1) != 0) {
    fprintf(stderr, "fuzz_opu: cannot wrap graphpass.ext.opu.run: %s\n", gp_error_message());
    abort();
  }
  gp_release(hook);
}

static void finding(const GPModule *m, const char *what, const char *msg) {
  char *text = gp_print(m, GP_PRINT_METADATA);
  fprintf(stderr, "fuzz: target opu: %s: %s\n%s\n", what, msg ? msg : "", text ? text : "");
  abort();
}

/* Whether float32 tensor a says something: at least two values, norm and spread not tiny. */
static bool telling(const GPTensor *a) {
  if (a->dl.dtype.code != kDLFloat || a->dl.dtype.bits != 32) return false;
  int64_t n = 1;
  for (int32_t i = 0; i < a->dl.ndim; i++) n *= a->dl.shape[i];
  const float *x = (const float *)a->dl.data;
  double lo = INFINITY, hi = -INFINITY, norm = 0;
  for (int64_t i = 0; i < n; i++) {
    lo = fmin(lo, x[i]), hi = fmax(hi, x[i]);
    norm += (double)x[i] * x[i];
  }
  double mag = fmax(fabs(lo), fabs(hi));
  return n >= 2 && sqrt(norm) >= 1e-3 && hi - lo >= 1e-3 * mag;
}

/* The cosine of b (the simulator's) to a (float), or NAN when a says nothing (or b is not
 * float32); GP_FUZZ_COSINE prints it, and the module when below its value. */
static double follows(const GPModule *m, const GPTensor *a, const GPTensor *b, const char *fname) {
  if (!telling(a) || b->dl.dtype.code != kDLFloat || b->dl.dtype.bits != 32) return NAN;
  int64_t mism;
  double cos = opu_cosine(b, a, 0, &mism);
  const char *show = getenv("GP_FUZZ_COSINE"); /* prints each cosine; a module too when below the value */
  if (show) {
    fprintf(stderr, "cosine %.6f @%s\n", cos, fname);
    if (cos < atof(show)) {
      char *text = gp_print(m, GP_PRINT_METADATA);
      fprintf(stderr, "%s\n", text ? text : "");
      gp_free(text);
    }
  }
  return cos;
}

/* t (float32) rounded to symmetric int8 steps of max |t| / 127, as the driver quantizes an
 * input; a new tensor (t itself, retained, for another dtype). */
static GPTensor *quantized(GPTensor *t) {
  if (t->dl.dtype.code != kDLFloat || t->dl.dtype.bits != 32) return gp_retain(t);
  int64_t n = 1;
  for (int32_t i = 0; i < t->dl.ndim; i++) n *= t->dl.shape[i];
  const float *x = (const float *)t->dl.data;
  double mag = 0;
  for (int64_t i = 0; i < n; i++) mag = fmax(mag, fabs((double)x[i]));
  GPTensor *q = gp_tensor_alloc(t->dl.dtype, t->dl.ndim, t->dl.shape, true);
  if (!q) abort();
  float *y = (float *)q->dl.data;
  double step = mag / 127;
  for (int64_t i = 0; i < n; i++) y[i] = step > 0 ? (float)(round((double)x[i] / step) * step) : x[i];
  return q;
}

/* A compact copy of a DLTensor the evaluator hands the runner (borrowed, maybe strided). */
static GPTensor *copy_of(const DLTensor *t) {
  GPTensor *c = gp_tensor_alloc(t->dtype, t->ndim, t->shape, true);
  if (!c) abort();
  void *scratch = NULL;
  const void *p = gp_k_compact(t, &scratch);
  memcpy(c->dl.data, p, gp_tensor_nbytes(c));
  gp_free(scratch);
  return c;
}

/* Output j of nres of @fname (of c) on inputs in[0..nargs): the simulator's got against the
 * float body's want; below MIN_COSINE, the float body on the inputs quantized as the driver
 * quantizes them decides whether the compile lost it. */
static void check_output(const GPModule *m, const GPModule *c, const char *fname, int32_t nargs, GPTensor **in,
                         const GPTensor *want, const GPTensor *got, int32_t j, int32_t nres) {
  double cos = follows(m, want, got, fname);
  if (isnan(cos)) return;
  n_outputs++;
  if (cos >= MIN_COSINE) return;
  GPEvalOptions host = {.struct_size = sizeof host, .abi_version = GP_ABI_VERSION, .num_threads = 1, .external = 0};
  GPTensor **qin = gp_malloc((size_t)(nargs ? nargs : 1) * sizeof *qin), **ref = NULL;
  for (int32_t a = 0; a < nargs; a++) qin[a] = quantized(in[a]);
  int32_t nr = 0;
  if (gp_eval_function(c, fname, nargs, qin, &ref, &nr, &host) != 0 || nr != nres)
    finding(m, "the float body does not evaluate on quantized inputs", gp_error_message());
  double qcos = telling(ref[j]) ? opu_cosine(got, ref[j], 0, &(int64_t){0}) : 1.0;
  if (qcos >= MIN_COSINE) {
    n_input_bound++;
  } else {
    char msg[200];
    snprintf(msg, sizeof msg, "@%s output %d of %d: cosine %.4f of the simulator to the float body (%.4f on quantized "
             "inputs; below %.2f)", fname, (int)j, (int)nres, cos, qcos, MIN_COSINE);
    finding(m, "the simulator is far from float", msg);
  }
  for (int32_t a = 0; a < nargs; a++) gp_release(qin[a]);
  gp_free(qin);
  for (int32_t r = 0; r < nr; r++) gp_release(ref[r]);
  gp_free(ref);
}

/* The modules of the run in progress (the float one, for findings, and the compiled one,
 * whose functions the calls name). */
static const GPModule *run_m, *run_c;

/* graphpass.ext.opu.run as the harness registers it: the plugin's runner (the simulator); while
 * run_c is set, also the float body of the same function on the same inputs, each output
 * compared, and the float outputs returned in place of the simulator's, so that every later
 * call gets the inputs the float module computes (those calibration saw: a value past its
 * calibrated range after int8 noise upstream, amplified by a host layer_norm, saturates without
 * any bug).  Every call the run makes is checked where it is made: in @main, in if branches, in
 * closures and global functions, with one output or several. */
static int checking_run(void *self, const GPAny *args, int32_t nargs, GPAny *res) {
  (void)self;
  int rc = opu_run->call(opu_run->self, args, nargs, res);
  if (rc != 0 || !run_c) return rc;
  const GPObject *callee = (const GPObject *)args[0].v_obj;
  const char *fname = NULL;
  for (int32_t f = 0; f < run_c->num_functions && !fname; f++)
    if (&run_c->funcs[f]->base.obj == callee) fname = run_c->gvars[f]->name;
  if (!fname) finding(run_m, "the runner was called with a function the module does not have", NULL);
  int32_t n = nargs - 1;
  GPTensor **in = gp_malloc((size_t)(n ? n : 1) * sizeof *in), **want = NULL;
  for (int32_t a = 0; a < n; a++) in[a] = copy_of((const DLTensor *)args[a + 1].v_ptr);
  int32_t nw = 0;
  GPEvalOptions host = {.struct_size = sizeof host, .abi_version = GP_ABI_VERSION, .num_threads = 1, .external = 0};
  if (gp_eval_function(run_c, fname, n, in, &want, &nw, &host) != 0)
    finding(run_m, "the float body does not evaluate on the simulated run's inputs", gp_error_message());
  const GPArray *arr = res->type_index == GP_TI_ARRAY ? (const GPArray *)res->v_obj : NULL;
  int32_t ng = arr ? (int32_t)arr->size : 1;
  if (ng != nw) finding(run_m, "the simulator returns another number of outputs than the float body", fname);
  n_simulated++;
  if (ng > 1) n_multi++;
  for (int32_t j = 0; j < ng; j++) {
    GPAny *g = arr ? &((GPArray *)arr)->items[j] : res;
    if (g->type_index != GP_TI_TENSOR) continue;
    check_output(run_m, run_c, fname, n, in, want[j], (const GPTensor *)g->v_obj, j, nw);
    gp_release(g->v_obj); /* the float output goes on (the array is the runner's new one, ours) */
    g->v_obj = gp_retain(want[j]);
  }
  for (int32_t a = 0; a < n; a++) gp_release(in[a]);
  for (int32_t j = 0; j < nw; j++) gp_release(want[j]);
  gp_free(in);
  gp_free(want);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 512) return -1;
  opu_init();
  GPModule *m = gg_build(data, size, GG_DYNAMIC_ONES); /* dynamic shapes stay on the host; GenIR calibrates ? as 1 */
  if (!m) return 0;
  double peak = 0;
  if (!gp_module_lookup(m, "main") || !small_enough(m) || !tame(m, &peak)) {
    gp_release(m);
    return 0;
  }
  nc_tolerance(octx, peak);
  GPModule *c = gp_run_pipeline(m, NULL, octx);
  if (!c) {
    const char *msg = gp_error_message();
    if (nc_miscompiled(msg)) finding(m, "a miscompile", msg);
    const char *stats = getenv("GP_FUZZ_STATS");
    if (stats && strcmp(stats, "2") == 0) fprintf(stderr, "opu: refused: %s\n", msg ? msg : "");
    fz_expect_error("target opu's set");
    gp_release(m);
    return 0;
  }
  n_compiled++;
  GPTensor **in = NULL, **got = NULL;
  int32_t nin = 0, ng = 0;
  GPEvalOptions sim = {.struct_size = sizeof sim, .abi_version = GP_ABI_VERSION, .num_threads = 1, .external = 1};
  /* the calibration inputs (GenIR.seed 0): a range the calibration never saw (a value that was 0
   * on them) is not a compile bug */
  if (gp_eval_random_inputs_shaped(m, "main", 0, NULL, 0, 1, &in, &nin) != 0) /* ? as 1, as GenIR calibrates */
    finding(m, "no inputs for the float module", gp_error_message());
  if (gp_eval_function(c, "main", nin, in, &got, &ng, &sim) != 0) finding(m, "the simulated module fails", gp_error_message());
  for (int32_t k = 0; k < ng; k++) gp_release(got[k]);
  gp_free(got);
  got = NULL;
  run_m = m, run_c = c; /* again, checking_run comparing each call on the float module's values */
  if (gp_eval_function(c, "main", nin, in, &got, &ng, &sim) != 0) finding(m, "the checked run fails", gp_error_message());
  run_m = run_c = NULL;
  for (int32_t k = 0; k < nin; k++) gp_release(in[k]);
  for (int32_t k = 0; k < ng; k++) gp_release(got[k]);
  gp_free(in);
  gp_free(got);
  /* inputs calibration never saw (seed 1; values past the calibrated ranges saturate): the
   * simulated module must still run (the numbers are not compared: saturation is no bug) */
  in = got = NULL;
  nin = ng = 0;
  if (gp_eval_random_inputs_shaped(m, "main", 1, NULL, 0, 1, &in, &nin) != 0 ||
      gp_eval_function(c, "main", nin, in, &got, &ng, &sim) != 0)
    finding(m, "the simulated module fails on inputs other than the calibration ones", gp_error_message());
  n_other++;
  for (int32_t k = 0; k < nin; k++) gp_release(in[k]);
  for (int32_t k = 0; k < ng; k++) gp_release(got[k]);
  gp_free(in);
  gp_free(got);
  gp_release(c);
  gp_release(m);
  return 0;
}
