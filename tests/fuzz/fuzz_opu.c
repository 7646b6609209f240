/* fuzz_opu.c -- the accelerator plugin's compile (target opu's default set: annotation,
 * partitioning, int8 quantization, GenIR's instruction streams) on the graphs graph_gen.h builds,
 * and its bit-exact simulator against the float evaluator.
 *
 * A graph that types, is small and tame (numerics_check.h) is compiled with --verify-numerics
 * (the external functions evaluate as their float bodies, so every pass of the set must keep
 * the numbers as in the other harnesses).  The compile either succeeds or refuses with a
 * message.  What compiled then runs end to end with the simulator (external functions through
 * graphpass.ext.opu.run) on the calibration inputs, and must run.  Each call of an external
 * function in a @main without ifs and closures (lets are fine) is then checked on its own: the
 * simulator on the call's float inputs against the float body, each output of a region with
 * several (a tuple) on its own, by cosine similarity of at least
 * MIN_COSINE (int8 noise keeps it far above; a wrong layout, weight order or scale does not),
 * unless the float result is too flat to say (its spread below 1e-3 of its magnitude, or its
 * norm below 1e-3).  A call below MIN_COSINE is a finding unless the float body on its inputs
 * quantized as the driver quantizes them (int8 steps of max |x| / 127, the calibrated range on
 * these calibration inputs) is itself flat or within MIN_COSINE of the simulator: what input
 * quantization loses before any instruction runs is not a compile bug (a clip(0, 6) of small
 * positive values beside a pad fill of -0.87: they all round to 0 on the way in).  The whole
 * graph's outputs are not compared: a host op after the
 * accelerator (a group_norm of a narrow group) may amplify int8 noise without any bug. */
#include "graph_gen.h"
#include "tests/opu_models.h"

#define MIN_COSINE 0.9

static GPPassContext *octx; /* target opu */
static long n_compiled, n_simulated, n_multi, n_outputs, n_input_bound;

static void opu_stats(void) {
  fprintf(stderr, "opu: %ld compiled, %ld calls simulated (%ld with several outputs), %ld outputs compared (%ld below "
                  "%.2f, explained by input quantization)\n", n_compiled, n_simulated, n_multi, n_outputs, n_input_bound,
          MIN_COSINE);
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
  octx->rtol = 1e-3;
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

static const char *compiler_of(const GPModule *c, const GPExpr *callee) {
  if (gp_kind(callee) != GP_TI_GLOBAL_VAR) return NULL;
  const GPFunctionExpr *f = gp_module_lookup(c, ((const GPGlobalVar *)callee)->name);
  const GPAttrValue *a = f && f->attrs ? gp_attrs_get(f->attrs, "Compiler") : NULL;
  return a && a->kind == GP_ATTR_STR ? a->s : NULL;
}

static bool is_tensor(const GPExpr *e) { return e->checked_type && e->checked_type->kind == GP_TYPE_TENSOR; }

/* The number of tensors a call returns (1, or a region's several outputs: the fields of its
 * tuple), or 0 when an argument or a result is not a tensor. */
static int32_t tensor_results(const GPCall *k) {
  for (int32_t a = 0; a < k->nargs; a++)
    if (!is_tensor(k->args[a])) return 0;
  const GPType *t = k->base.checked_type;
  if (!t || t->kind == GP_TYPE_TENSOR) return t ? 1 : 0;
  if (t->kind != GP_TYPE_TUPLE || t->n < 1) return 0;
  for (int32_t j = 0; j < t->n; j++)
    if (t->tuple.fields[j]->kind != GP_TYPE_TENSOR) return 0;
  return t->n;
}

/* Output j of nres of a call of @fname (wt's fz_wrap) on float inputs in[0..nargs): the
 * simulator's got against the float want; below MIN_COSINE, the float body on the inputs
 * quantized as the driver quantizes them decides whether the compile lost it. */
static void check_output(const GPModule *m, const GPModule *wt, int32_t nargs, GPTensor **in, const GPTensor *want,
                         const GPTensor *got, int32_t j, int32_t nres, const char *fname) {
  double cos = follows(m, want, got, fname);
  if (isnan(cos)) return;
  n_outputs++;
  if (cos >= MIN_COSINE) return;
  GPEvalOptions host = {.struct_size = sizeof host, .abi_version = GP_ABI_VERSION, .num_threads = 1, .external = 0};
  GPTensor **qin = gp_malloc((size_t)(nargs ? nargs : 1) * sizeof *qin), **ref = NULL;
  for (int32_t a = 0; a < nargs; a++) qin[a] = quantized(in[a]);
  int32_t nr = 0;
  if (gp_eval_function(wt, "fz_wrap", nargs, qin, &ref, &nr, &host) != 0 || nr != nres)
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

/* Each call of an OPU function in c's @main (without ifs or closures): the simulator on the
 * call's float inputs (a probe of @main returning every argument, inside its lets) against the
 * float result. */
static void check_calls(const GPModule *m, const GPModule *c, int32_t nin, GPTensor **in) {
  const GPFunctionExpr *fn = gp_module_lookup(c, "main");
  GPExpr **nodes = NULL;
  size_t n = 0;
  if (gp_post_order(fn->body, &nodes, &n) != 0) {
    gp_error_clear();
    return;
  }
  size_t nvals = 0, ncalls = 0;
  bool plain = true;
  for (size_t i = 0; i < n && plain; i++) {
    int32_t kind = gp_kind(nodes[i]);
    plain = kind != GP_TI_IF && kind != GP_TI_FUNCTION_EXPR; /* lets: probed inside the innermost body */
    if (kind == GP_TI_CALL && compiler_of(c, ((const GPCall *)nodes[i])->op) && tensor_results((const GPCall *)nodes[i])) {
      const GPCall *k = (const GPCall *)nodes[i];
      nvals += (size_t)k->nargs + (size_t)tensor_results(k);
      nodes[ncalls++] = nodes[i];
    }
  }
  if (!plain || !ncalls) {
    gp_free(nodes);
    return;
  }
  GPExpr **vals = gp_malloc(nvals * sizeof *vals);
  size_t v = 0;
  for (size_t i = 0; i < ncalls; i++) {
    const GPCall *k = (const GPCall *)nodes[i];
    for (int32_t a = 0; a < k->nargs; a++) vals[v++] = k->args[a];
    vals[v++] = nodes[i];
  }
  size_t nflat = nvals; /* the probe's outputs: a tuple result counts its fields */
  nvals = v;
  GPModule *probe = nc_probe_of(c, vals, nvals); /* inside @main's lets */
  GPModule *typed = gp_infer_types(probe);
  gp_release(probe);
  GPTensor **out = NULL;
  int32_t nout = 0;
  GPEvalOptions host = {.struct_size = sizeof host, .abi_version = GP_ABI_VERSION, .num_threads = 1, .external = 0};
  if (!typed || gp_eval_function(typed, "main", nin, in, &out, &nout, &host) != 0 || (size_t)nout != nflat)
    finding(m, "the probe of the compiled module does not evaluate", typed ? gp_error_message() : "it does not type");
  v = 0;
  for (size_t i = 0; i < ncalls; i++) { /* fz_wrap(%a0, ...) = @f(%a0, ...), run with the simulator */
    const GPCall *k = (const GPCall *)nodes[i];
    GPVar **ps = gp_malloc((size_t)(k->nargs ? k->nargs : 1) * sizeof *ps);
    for (int32_t a = 0; a < k->nargs; a++) ps[a] = gp_var_new("a", gp_tensor_type(out[v + (size_t)a]));
    GPCall *call = gp_call_new(k->op, k->nargs, (GPExpr *const *)ps, NULL);
    GPFunctionExpr *wf = gp_function_new(k->nargs, ps, &call->base, NULL, NULL);
    GPModule *w = gp_module_copy(c);
    if (gp_module_add(w, "fz_wrap", wf, true) != 0) abort();
    GPModule *wt = gp_infer_types(w);
    GPTensor **got = NULL;
    int32_t ng = 0;
    GPEvalOptions sim = host;
    sim.external = 1;
    const char *fname = ((const GPGlobalVar *)k->op)->name;
    if (!wt || gp_eval_function(wt, "fz_wrap", k->nargs, out + v, &got, &ng, &sim) != 0)
      finding(m, "the simulator fails on a call's float inputs", gp_error_message());
    n_simulated++;
    int32_t nres = tensor_results(k);
    if (nres > 1) n_multi++;
    if (ng != nres) finding(m, "the simulator returns another number of outputs than the call's type", fname);
    for (int32_t j = 0; j < nres; j++) /* each output of the region */
      check_output(m, wt, k->nargs, out + v, out[v + (size_t)k->nargs + (size_t)j], got[j], j, nres, fname);
    for (int32_t j = 0; j < ng; j++) gp_release(got[j]);
    gp_free(got);
    gp_release(wt);
    gp_release(w);
    gp_release(wf);
    gp_release(call);
    for (int32_t a = 0; a < k->nargs; a++) gp_release(ps[a]);
    gp_free(ps);
    v += (size_t)k->nargs + (size_t)nres;
  }
  for (int32_t j = 0; j < nout; j++) gp_release(out[j]);
  gp_free(out);
  gp_release(typed);
  gp_free(vals);
  gp_free(nodes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 512) return -1;
  opu_init();
  GPModule *m = gg_build(data, size, false); /* GenIR needs static shapes */
  if (!m) return 0;
  double peak = 0;
  if (!gp_module_lookup(m, "main") || !small_enough(m) || !tame(m, &peak)) {
    gp_release(m);
    return 0;
  }
  octx->atol = fmax(1e-4, 1e-5 * peak);
  GPModule *c = gp_run_pipeline(m, NULL, octx);
  if (!c) {
    const char *msg = gp_error_message();
    if (msg && (strstr(msg, "changed the numbers") || strstr(msg, "changed the number of") ||
                strstr(msg, "changed @main output") || strstr(msg, "evaluating @main after the pass")))
      finding(m, "a pass changed the numbers", msg);
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
  if (gp_eval_random_inputs(m, "main", 0, &in, &nin) != 0) finding(m, "no inputs for the float module", gp_error_message());
  if (gp_eval_function(c, "main", nin, in, &got, &ng, &sim) != 0) finding(m, "the simulated module fails", gp_error_message());
  check_calls(m, c, nin, in);
  for (int32_t k = 0; k < nin; k++) gp_release(in[k]);
  for (int32_t k = 0; k < ng; k++) gp_release(got[k]);
  gp_free(in);
  gp_free(got);
  gp_release(c);
  gp_release(m);
  return 0;
}
