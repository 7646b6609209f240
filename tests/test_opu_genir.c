/* test_opu_genir.c -- GenIR and the OPU runtime through the plugin (build/plugins/libgp_opu.so):
 * a small network with seeded weights compiles for target opu; the files GenIR writes decode;
 * the simulator's outputs (the evaluator's external runner, ABI 1.3) agree with the float
 * evaluator on other inputs than the calibration ones; graphpass.ext.opu.artifacts hands out
 * the same program and blob; a large conv's blocked int8 weights are bit-exact (emitted over
 * the cores); unsupported shapes and bad configs fail naming what is wrong. */
#include "eval/eval.h"
#include "opu/isa.h"
#include "test_helpers.h"
#include "opu_models.h"

#include <sys/stat.h>
#include <unistd.h>

static void load_opu(void) {
  th_load_std();
  char *p = th_path("plugins/libgp_opu.so");
  int rc = gp_plugin_load(p);
  cr_assert_eq(rc, 0, "load %s: %s", p, gp_error_message());
  gp_free(p);
}

static GPModule *small_model(const char *file, uint64_t seed) {
  GPModule *m = th_parse_file(file);
  GPModule *r = opu_randomize_weights(m, seed);
  cr_assert_not_null(r, "%s", gp_error_message());
  gp_release(m);
  return r;
}

static GPPassContext *opu_ctx(const char *outdir) {
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_target(ctx, "opu"), 0, "%s", gp_error_message());
  cr_assert_eq(gp_ctx_set_config(ctx, "PrintIR.file", "/dev/null"), 0, "%s", gp_error_message());
  if (outdir) cr_assert_eq(gp_ctx_set_config(ctx, "GenIR.out", outdir), 0, "%s", gp_error_message());
  return ctx;
}

static GPTensor *eval1(const GPModule *m, GPTensor *in, int external) {
  GPTensor **outs = NULL;
  int32_t n = 0;
  GPEvalOptions o = {.struct_size = sizeof o, .abi_version = GP_ABI_VERSION, .num_threads = 1, .external = external};
  cr_assert_eq(gp_eval_function(m, "main", 1, &in, &outs, &n, &o), 0, "%s", gp_error_message());
  cr_assert_eq(n, 1);
  GPTensor *t = outs[0];
  gp_free(outs);
  return t;
}

static const GPFunctionExpr *opu_function(const GPModule *m, const char **name) {
  for (int32_t i = 0; i < m->num_functions; i++) {
    const GPAttrValue *c = m->funcs[i]->attrs ? gp_attrs_get(m->funcs[i]->attrs, "Compiler") : NULL;
    if (c && c->kind == GP_ATTR_STR && strcmp(c->s, "opu") == 0) {
      *name = m->gvars[i]->name;
      return m->funcs[i];
    }
  }
  return NULL;
}

Test(opu_genir, compiles_writes_and_simulates_close_to_float) {
  load_opu();
  char dir[] = "/tmp/gp_opu_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  GPModule *m = small_model("tests/data/opu/small.relay", 11);
  GPPassContext *ctx = opu_ctx(dir);
  GPModule *c = gp_run_pipeline(m, NULL, ctx);
  cr_assert_not_null(c, "%s", gp_error_message());
  const char *fname = NULL;
  const GPFunctionExpr *f = opu_function(c, &fname);
  cr_assert_not_null(f, "no Compiler=\"opu\" function");
  const GPAttrValue *rg = gp_attrs_get(f->attrs, "opu.ranges"), *pe = gp_attrs_get(f->attrs, "opu.pe");
  cr_assert(rg && rg->kind == GP_ATTR_FLOATS && rg->n > 10);
  cr_assert(pe && pe->kind == GP_ATTR_INTS && pe->n == 2 && pe->ints[0] == 16 && pe->ints[1] == 16);
  /* the files decode and agree with the manifest */
  GPBuf p = {0};
  gp_buf_printf(&p, "%s/%s.opu", dir, fname);
  size_t plen, wlen, mlen, llen;
  char *prog = th_read(p.data, &plen);
  gp_buf_free(&p);
  gp_buf_printf(&p, "%s/%s.wts", dir, fname);
  char *wts = th_read(p.data, &wlen);
  gp_buf_free(&p);
  gp_buf_printf(&p, "%s/%s.lst", dir, fname);
  char *lst = th_read(p.data, &llen);
  gp_buf_free(&p);
  gp_buf_printf(&p, "%s/manifest.json", dir);
  char *man = th_read(p.data, &mlen);
  OpuProgram d;
  char err[256] = "";
  cr_assert_eq(opu_program_decode((const uint8_t *)prog, plen, &d, err, sizeof err), 0, "%s", err);
  cr_assert_eq(d.weight_bytes, wlen);
  cr_assert(strstr(lst, "DEPTHWISE") || strstr(lst, "depthwise"), "%s", lst);
  cr_assert(strstr(lst, "ADD "), "%s", lst);
  cr_assert(strstr(man, "\"calibration\": \"deterministic inputs, seed 0\""), "%s", man);
  cr_assert(strstr(man, "\"dtype\": \"int8\""), "%s", man);
  /* the same bytes from the artifacts function, without files */
  GPPackedFunc *art = gp_func_get("graphpass.ext.opu.artifacts");
  cr_assert_not_null(art);
  GPAny arg = {.type_index = GP_TI_FUNCTION_EXPR, .v_obj = (GPObject *)&f->base.obj}, res = {0};
  cr_assert_eq(art->call(art->self, &arg, 1, &res), 0, "%s", gp_error_message());
  cr_assert_eq(res.type_index, GP_TI_ARRAY);
  const GPArray *arr = (const GPArray *)res.v_obj;
  cr_assert_eq(arr->size, 3);
  GPTensor *tp = (GPTensor *)arr->items[0].v_obj, *tw = (GPTensor *)arr->items[1].v_obj;
  cr_assert_eq(tp->dl.dtype.code, kDLUInt);
  cr_assert_eq(tp->dl.shape[0], (int64_t)plen);
  cr_assert_eq(memcmp(tp->dl.data, prog, plen), 0);
  cr_assert_eq(tw->dl.shape[0], (int64_t)wlen);
  cr_assert_eq(memcmp(tw->dl.data, wts, wlen), 0);
  DLManagedTensor *mt = gp_tensor_to_dlpack(tp);
  cr_assert_not_null(mt);
  cr_assert_eq(memcmp(mt->dl_tensor.data, prog, 4), 0);
  mt->deleter(mt);
  gp_any_clear(&res);
  gp_release(art);
  /* float vs simulator on inputs other than the calibration ones */
  GPTensor **rin = NULL;
  int32_t nr = 0;
  cr_assert_eq(gp_eval_random_inputs(c, "main", 5, &rin, &nr), 0);
  GPTensor *want = eval1(m, rin[0], 0), *got = eval1(c, rin[0], 1), *again = eval1(c, rin[0], 0);
  int64_t mism;
  double cos = opu_cosine(got, want, 4, &mism);
  cr_assert(cos >= 0.99, "cosine %f", cos);
  cr_assert_eq(mism, 0, "top-1 differs in %lld rows", (long long)mism);
  /* external off: the body in float, as before compilation */
  double e1 = 0;
  for (int i = 0; i < 8; i++) e1 = fmax(e1, fabs(((float *)again->dl.data)[i] - ((float *)want->dl.data)[i]));
  cr_assert(e1 < 1e-5, "float body changed by %g", e1);
  /* the simulator is not the float path: some output differs */
  cr_assert(memcmp(got->dl.data, want->dl.data, 8 * sizeof(float)) != 0);
  gp_release(want);
  gp_release(got);
  gp_release(again);
  gp_release(rin[0]);
  gp_free(rin);
  opu_program_free(&d);
  gp_free(prog);
  gp_free(wts);
  gp_free(lst);
  gp_free(man);
  gp_buf_free(&p);
  gp_release(c);
  gp_release(m);
  gp_ctx_free(ctx);
}

Test(opu_genir, calibration_files_and_their_errors) {
  load_opu();
  char dir[] = "/tmp/gp_opu_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  GPModule *m = small_model("tests/data/opu/small.relay", 3);
  GPTensor **rin = NULL;
  int32_t nr = 0;
  cr_assert_eq(gp_eval_random_inputs(m, "main", 9, &rin, &nr), 0);
  GPBuf p = {0};
  gp_buf_printf(&p, "%s/cal.npy", dir);
  cr_assert_eq(gp_npy_write(p.data, rin[0]), 0);
  GPBuf spec = {0};
  gp_buf_printf(&spec, "data=%s", p.data);
  GPPassContext *ctx = opu_ctx(NULL);
  cr_assert_eq(gp_ctx_set_config(ctx, "GenIR.calibrate", spec.data), 0);
  GPModule *c = gp_run_pipeline(m, NULL, ctx);
  cr_assert_not_null(c, "%s", gp_error_message());
  gp_release(c);
  gp_ctx_free(ctx);
  /* a parameter @main does not have */
  ctx = opu_ctx(NULL);
  cr_assert_eq(gp_ctx_set_config(ctx, "GenIR.calibrate", "image=/nonexistent.npy"), 0);
  cr_assert_null(gp_run_pipeline(m, NULL, ctx));
  cr_assert(strstr(gp_error_message(), "@main has no parameter %image"), "%s", gp_error_message());
  gp_error_clear();
  gp_ctx_free(ctx);
  /* a missing file */
  ctx = opu_ctx(NULL);
  cr_assert_eq(gp_ctx_set_config(ctx, "GenIR.calibrate", "data=/nonexistent/cal.npy"), 0);
  cr_assert_null(gp_run_pipeline(m, NULL, ctx));
  cr_assert(strstr(gp_error_message(), "calibration input data") && strstr(gp_error_message(), "/nonexistent/cal.npy"),
            "%s", gp_error_message());
  gp_error_clear();
  gp_ctx_free(ctx);
  /* a bad PE array */
  ctx = opu_ctx(NULL);
  cr_assert_eq(gp_ctx_set_config(ctx, "GenIR.pe", "16by16"), 0);
  cr_assert_null(gp_run_pipeline(m, NULL, ctx));
  cr_assert(strstr(gp_error_message(), "GenIR.pe '16by16'"), "%s", gp_error_message());
  gp_error_clear();
  gp_ctx_free(ctx);
  /* another PE array changes the blob, not the results */
  ctx = opu_ctx(NULL);
  cr_assert_eq(gp_ctx_set_config(ctx, "GenIR.pe", "4x8"), 0);
  cr_assert_eq(gp_ctx_set_config(ctx, "GenIR.calibrate", spec.data), 0);
  GPModule *c48 = gp_run_pipeline(m, NULL, ctx);
  cr_assert_not_null(c48, "%s", gp_error_message());
  gp_ctx_free(ctx);
  ctx = opu_ctx(NULL);
  cr_assert_eq(gp_ctx_set_config(ctx, "GenIR.calibrate", spec.data), 0);
  GPModule *c16 = gp_run_pipeline(m, NULL, ctx);
  cr_assert_not_null(c16, "%s", gp_error_message());
  GPTensor *a = eval1(c48, rin[0], 1), *b = eval1(c16, rin[0], 1);
  cr_assert_eq(memcmp(a->dl.data, b->dl.data, 8 * sizeof(float)), 0);
  gp_release(a);
  gp_release(b);
  gp_release(c48);
  gp_release(c16);
  gp_ctx_free(ctx);
  gp_release(rin[0]);
  gp_free(rin);
  gp_buf_free(&p);
  gp_buf_free(&spec);
  gp_release(m);
}

/* A conv of 200 x 300 x 3 x 3 (540000 weights: GenIR splits it over the cores; neither count
 * a multiple of the 16 x 16 PE array): every byte of its blocked weights is the documented
 * quantization of its float weight (docs/OPU.md: per output channel, scale = max |w| / 127,
 * q = round(w / scale) ties away from zero) at opu_conv_weight_index, the padding zero. */
Test(opu_genir, large_conv_weights_bit_exact_in_the_blocked_layout) {
  load_opu();
  char dir[] = "/tmp/gp_opu_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  GPModule *m = small_model("tests/data/opu/big_conv.relay", 5);
  GPPassContext *ctx = opu_ctx(dir);
  GPModule *c = gp_run_pipeline(m, NULL, ctx);
  cr_assert_not_null(c, "%s", gp_error_message());
  const char *fname = NULL;
  const GPFunctionExpr *f = opu_function(c, &fname);
  cr_assert_not_null(f, "no Compiler=\"opu\" function");
  const GPExpr *conv = f->body;
  while (!opu_is_op(conv, "nn.conv2d")) conv = GP_AS(GPCall, conv)->args[0];
  const GPTensor *w = GP_AS(GPConstant, GP_AS(GPCall, conv)->args[1])->data;
  const float *W = (const float *)w->dl.data;
  enum { OC = 200, IC = 300, KK = 9, R = 16, C = 16 };
  cr_assert_eq(w->dl.shape[0] * w->dl.shape[1] * w->dl.shape[2] * w->dl.shape[3], OC * IC * KK);
  GPBuf p = {0};
  size_t plen, wlen;
  gp_buf_printf(&p, "%s/%s.opu", dir, fname);
  char *prog = th_read(p.data, &plen);
  gp_buf_free(&p);
  gp_buf_printf(&p, "%s/%s.wts", dir, fname);
  char *wts = th_read(p.data, &wlen);
  OpuProgram d;
  char err[256] = "";
  cr_assert_eq(opu_program_decode((const uint8_t *)prog, plen, &d, err, sizeof err), 0, "%s", err);
  const OpuInstr *ci = NULL;
  for (uint32_t k = 0; k < d.num_instrs; k++)
    if (d.instrs[k].op == OPU_OP_CONV) ci = &d.instrs[k];
  cr_assert_not_null(ci);
  uint64_t bytes = opu_conv_weight_bytes(OC, IC, 1, 3, 3, 0, R, C);
  cr_assert_leq(ci->w_off + bytes, wlen);
  uint8_t *want = gp_calloc(bytes, 1);
  for (int o = 0; o < OC; o++) {
    const float *row = W + (size_t)o * IC * KK;
    float mx = 0;
    for (int k = 0; k < IC * KK; k++) mx = fabsf(row[k]) > mx ? fabsf(row[k]) : mx;
    cr_assert_gt(mx, 0);
    float inv = (float)(1.0 / ((double)mx / 127.0));
    for (int i = 0; i < IC; i++)
      for (int yx = 0; yx < KK; yx++) {
        float v = row[i * KK + yx] * inv;
        int32_t q = (int32_t)(v + copysignf(0.5f, v));
        q = q > 127 ? 127 : q < -127 ? -127 : q;
        want[opu_conv_weight_index(o, i, yx / 3, yx % 3, OC, IC, 1, 3, 3, 0, R, C)] = (uint8_t)(int8_t)q;
      }
  }
  size_t bad = bytes;
  for (size_t k = 0; k < bytes && bad == bytes; k++)
    if ((uint8_t)wts[ci->w_off + k] != want[k]) bad = k;
  cr_assert_eq(bad, bytes, "blob byte %zu (of the conv's %llu) is %d, want %d", bad, (unsigned long long)bytes,
               bad < bytes ? (int)(int8_t)wts[ci->w_off + bad] : 0, bad < bytes ? (int)(int8_t)want[bad] : 0);
  gp_free(want);
  opu_program_free(&d);
  gp_free(prog);
  gp_free(wts);
  gp_buf_free(&p);
  gp_buf_printf(&p, "rm -rf '%s'", dir);
  char *rm_out = NULL;
  cr_expect_eq(th_run(p.data, &rm_out), 0, "%s", rm_out);
  gp_free(rm_out);
  gp_buf_free(&p);
  gp_release(c);
  gp_release(m);
  gp_ctx_free(ctx);
}

/* file compiled for the OPU (an opu function made) and simulated on the calibration inputs:
 * the output (returned: the caller releases it) within cosine 0.999 of float. */
static GPTensor *simulate_close(const char *file) {
  GPModule *m = th_parse_file(file);
  GPPassContext *ctx = opu_ctx(NULL);
  GPModule *c = gp_run_pipeline(m, NULL, ctx);
  cr_assert_not_null(c, "%s", gp_error_message());
  const char *fname = NULL;
  cr_assert_not_null(opu_function(c, &fname));
  GPTensor **rin = NULL;
  int32_t nr = 0;
  cr_assert_eq(gp_eval_random_inputs(c, "main", 0, &rin, &nr), 0);
  GPTensor *want = eval1(m, rin[0], 0), *got = eval1(c, rin[0], 1);
  int64_t mism;
  double cos = opu_cosine(got, want, 0, &mism);
  cr_assert(cos >= 0.999, "%s: cosine %f", file, cos);
  gp_release(want);
  gp_release(rin[0]);
  gp_free(rin);
  gp_release(c);
  gp_ctx_free(ctx);
  gp_release(m);
  return got;
}

/* The simulator follows the float evaluator on file's model (simulate_close, result dropped). */
static void expect_simulates_close(const char *file) {
  load_opu();
  gp_release(simulate_close(file));
}

/* A pad whose fill lies outside its input's steps (below 0 after a relu): the input is first
 * requantized into signed steps, so the border is the fill (it had been clamped to 0). */
Test(opu_genir, pad_with_a_fill_below_a_relu) {
  load_opu();
  GPTensor *got = simulate_close("tests/data/opu/pad_negative.relay");
  const float *g = (const float *)got->dl.data;
  for (int k = 0; k < 7; k++) /* the first row of each channel is border */
    cr_assert(fabsf(g[k] + 0.75f) < 0.01f, "border %d is %f", k, (double)g[k]);
  gp_release(got);
}

/* A conv whose input spans 1e-9 with a bias of 1: the bias in accumulator steps would pass 2^30,
 * so the weights take a coarser step (the bias had been clamped away). */
Test(opu_genir, bias_far_above_a_tiny_input) {
  load_opu();
  GPTensor *got = simulate_close("tests/data/opu/tiny_input_bias.relay");
  cr_assert(fabsf(((const float *)got->dl.data)[0] - 0.5f) < 0.01f, "%f", (double)((const float *)got->dl.data)[0]);
  gp_release(got);
}

/* A concatenate of an input that was all zeros on calibration (its default step 1/127) and one
 * of range ~0.01: the output's steps follow the calibrated ranges (the zeros' step had made
 * them 1/127, and the second input rounded to 0: cosine 0, found by fuzz_opu). */
Test(opu_genir, concatenate_with_an_all_zero_input) {
  expect_simulates_close("tests/data/opu/concat_zero_input.relay");
}

/* The same through reshapes: a view of an all-zero input keeps its default steps' flag, so it
 * adds no range either (a reshape had taken its 1.0: the other input rounded to 0). */
Test(opu_genir, concatenate_with_a_reshaped_all_zero_input) {
  expect_simulates_close("tests/data/opu/concat_zero_reshaped.relay");
}

/* Three padded average pools whose averages shrink far below their input's range: each goes
 * into steps of its own range, the division rescaling it (ISA 1.1; in the input's steps the
 * last two had kept one or two steps: cosine 0.86, found by fuzz_opu). */
Test(opu_genir, averages_far_below_their_input_keep_their_precision) {
  expect_simulates_close("tests/data/opu/padded_avg_pools.relay");
}

/* A concatenate of a small conv output and a reshape of the function's input: the reshape, a
 * view, had no calibrated range of its own then (the evaluator did not observe views), and
 * taking that 0 had clamped the input's values to the conv's range (cosine 0.89, fuzz_opu,
 * after the first all-zero input fix above); now its tensor's scale gives its range. */
Test(opu_genir, concatenate_of_a_reshaped_input_keeps_its_range) {
  expect_simulates_close("tests/data/opu/concat_reshaped_input.relay");
}

/* Calls with a dynamic batch stay on the host (the instruction stream needs static sizes; GenIR
 * had failed the whole compile on them), while the static branch still goes to the OPU and
 * compiles: calibration fills the ? with 1. */
Test(opu_genir, dynamic_batch_stays_on_the_host) {
  load_opu();
  GPModule *m = th_parse_file("tests/data/opu/dynamic_batch.relay");
  GPPassContext *ctx = opu_ctx(NULL);
  GPModule *c = NULL;
  char *notes = th_explain(m, NULL, ctx, &c);
  cr_assert_not_null(c, "%s", gp_error_message());
  /* --explain says which calls stayed on the host and where, and how calibration filled the ? */
  cr_assert(strstr(notes, "2 calls stay on the host, their target's predicate refused them") &&
                strstr(notes, "nn.conv2d: 1 (target opu; the first at tests/data/opu/dynamic_batch.relay:3:8: its "
                              "result has a dynamic dim (the instruction stream needs every size))") &&
                strstr(notes, "nn.relu: 1 (target opu; the first at tests/data/opu/dynamic_batch.relay:4:8: its "
                              "result has a dynamic dim (the instruction stream needs every size))") &&
                strstr(notes, "%x as (1, 2, 4, 4)"),
            "%s", notes);
  gp_free(notes);
  char *text = gp_print(c, 0);
  const GPFunctionExpr *mf = gp_module_lookup(c, "main");
  char *main_text = gp_print_expr(&mf->base, 0);
  cr_assert(strstr(main_text, "nn.conv2d") && strstr(main_text, "nn.relu(%0)"),
            "the dynamic conv and relu are not on the host: %s", text);
  const char *fname = NULL;
  const GPFunctionExpr *f = opu_function(c, &fname);
  cr_assert_not_null(f, "the static relu did not go to the OPU: %s", text);
  gp_free(main_text);
  gp_free(text);
  gp_release(c);
  gp_ctx_free(ctx);
  gp_release(m);
}

/* On a 1.5 host (no eval_random_inputs_filled) a @main with ? dims cannot be calibrated on the
 * deterministic inputs: the error says what is missing and what to give instead. */
Test(opu_genir, dynamic_batch_on_a_1_5_host_says_what_is_missing) {
  th_load_std();
  gp_plugin_host_minor(5);
  char *p = th_path("plugins/libgp_opu.so");
  int rc = gp_plugin_load(p);
  gp_plugin_host_minor(-1);
  cr_assert_eq(rc, 0, "load %s as by a 1.5 host: %s", p, gp_error_message());
  gp_free(p);
  GPModule *m = th_parse_file("tests/data/opu/dynamic_batch.relay");
  GPPassContext *ctx = opu_ctx(NULL);
  cr_assert_null(gp_run_pipeline(m, NULL, ctx));
  cr_assert(strstr(gp_error_message(), "pass GenIR: the deterministic calibration inputs: @main has `?` dims (%x as (1, 2, 4, 4)); filling them needs a graphpass host "
                                       "of ABI 1.6 (eval_random_inputs_filled): give calibration inputs "
                                       "(GenIR.calibrate)"),
            "%s", gp_error_message());
  gp_error_clear();
  gp_ctx_free(ctx);
  gp_release(m);
}

/* A graph that does not evaluate with its ? dims as 1 (a reshape to 3 rows): calibration fails
 * saying so and what to give, and the pass's name comes once (GenIR's messages name it, and
 * the pipeline's "pass GenIR" had been put before that again). */
Test(opu_genir, calibration_of_a_dynamic_batch_says_what_to_give) {
  load_opu();
  GPModule *m = th_parse_file("tests/data/opu/dynamic_batch_reshape.relay");
  GPPassContext *ctx = opu_ctx(NULL);
  cr_assert_null(gp_run_pipeline(m, NULL, ctx));
  const char *msg = gp_error_message();
  cr_assert(strstr(msg, "pass GenIR: calibration (evaluating @main in float)") && strstr(msg, "not divisible by 3") &&
                strstr(msg, "? dims were taken as 1") && strstr(msg, "--calibrate NAME=FILE") &&
                !strstr(msg, "GenIR: GenIR"),
            "%s", msg);
  gp_error_clear();
  gp_ctx_free(ctx);
  gp_release(m);
}

/* A conv the OPU does not run (dilation 2) stays on the host: the target's predicate refuses it
 * (GenIR had failed the whole compile), and the relu after it still goes to the OPU. */
Test(opu_genir, unsupported_shape_stays_on_the_host) {
  load_opu();
  GPModule *m = small_model("tests/data/opu/dilated.relay", 1);
  GPPassContext *ctx = opu_ctx(NULL);
  GPModule *c = NULL;
  char *notes = th_explain(m, NULL, ctx, &c);
  cr_assert_not_null(c, "%s", gp_error_message());
  /* the predicate says why (ABI 1.6), and --explain shows it beside the first call */
  cr_assert(strstr(notes, "nn.conv2d: 1 (target opu; the first at tests/data/opu/dilated.relay:") &&
                strstr(notes, "dilation"),
            "%s", notes);
  gp_free(notes);
  const char *fname = NULL;
  const GPFunctionExpr *f = opu_function(c, &fname);
  cr_assert_not_null(f, "no Compiler=\"opu\" function");
  char *text = gp_print(c, 0);
  const char *conv = strstr(text, "nn.conv2d"), *opu = strstr(text, "Compiler=\"opu\"");
  cr_assert(conv && opu && conv < opu, "the conv is not in @main: %s", text);
  cr_assert_null(strstr(opu, "nn.conv2d"), "%s", text);
  gp_free(text);
  gp_release(c);
  gp_ctx_free(ctx);
  gp_release(m);
}

/* Calls GenIR cannot run stay on the host (fuzz_opu: each had failed the whole compile): a pad of
 * a 3-d tensor (Peephole's rewrite of an add of a concatenate makes such pads) and an add of a
 * constant of the output's shape (a folded full: not a per-channel bias, not an activation). */
Test(opu_genir, pad_3d_and_add_of_a_full_constant_stay_on_the_host) {
  load_opu();
  static const struct {
    const char *file, *host;
  } cases[] = {{"tests/data/opu/pad_3d.relay", "nn.pad("}, {"tests/data/opu/add_full_constant.relay", "add("}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    GPModule *m = th_parse_file(cases[i].file);
    GPPassContext *ctx = opu_ctx(NULL);
    GPModule *c = gp_run_pipeline(m, NULL, ctx);
    cr_assert_not_null(c, "%s: %s", cases[i].file, gp_error_message());
    const char *fname = NULL;
    cr_assert_not_null(opu_function(c, &fname), "%s: no Compiler=\"opu\" function", cases[i].file);
    char *text = gp_print(c, 0);
    const char *host = strstr(text, cases[i].host), *opu = strstr(text, "Compiler=\"opu\"");
    cr_assert(host && opu && host < opu, "%s: %s is not in @main: %s", cases[i].file, cases[i].host, text);
    cr_assert_null(strstr(opu, cases[i].host), "%s", text);
    gp_free(text);
    gp_release(c);
    gp_ctx_free(ctx);
    gp_release(m);
  }
}

/* GenIR itself names the node of a function given to it with a conv it cannot run. */
Test(opu_genir, unsupported_shape_names_the_node) {
  load_opu();
  GPModule *m = small_model("tests/data/opu/dilated_partitioned.relay", 1);
  GPPassContext *ctx = opu_ctx(NULL);
  GPModule *c = gp_run_pipeline(m, "GenIR", ctx);
  cr_assert_null(c);
  const char *msg = gp_error_message();
  cr_assert(strstr(msg, "GenIR") && strstr(msg, "nn.conv2d") && strstr(msg, "dilation (2, 2)"), "%s", msg);
  cr_assert(strstr(msg, "dilated_partitioned.relay:7:"), "no location in: %s", msg);
  gp_error_clear();
  gp_ctx_free(ctx);
  gp_release(m);
}

Test(opu_genir, runner_refuses_a_function_without_genir) {
  load_opu();
  GPModule *m = small_model("tests/data/opu/small.relay", 2);
  GPPassContext *ctx = opu_ctx(NULL);
  GPModule *c = gp_run_pipeline(m, "AnnotateTarget{targets=opu},MergeCompilerRegions,PartitionGraph", ctx);
  cr_assert_not_null(c, "%s", gp_error_message());
  GPTensor **rin = NULL;
  int32_t nr = 0;
  cr_assert_eq(gp_eval_random_inputs(c, "main", 5, &rin, &nr), 0);
  GPTensor **outs = NULL;
  int32_t n = 0;
  GPEvalOptions o = {.struct_size = sizeof o, .abi_version = GP_ABI_VERSION, .external = 1};
  cr_assert_eq(gp_eval_function(c, "main", 1, rin, &outs, &n, &o), -1);
  cr_assert(strstr(gp_error_message(), "opu.ranges") && strstr(gp_error_message(), "graphpass.ext.opu.run"), "%s",
            gp_error_message());
  gp_error_clear();
  gp_release(rin[0]);
  gp_free(rin);
  gp_release(c);
  gp_release(m);
  gp_ctx_free(ctx);
}

/* A dense network trained on scikit-learn's digits (tests/opu_digits.py, generated into the
 * build directory; regenerated when the script is newer): int8 accuracy on the 300 held-out
 * images within 1 point of float, calibrated on 300 training images. */
static double accuracy(const GPTensor *logits, const GPTensor *labels) {
  const float *l = logits->dl.data;
  const int64_t *y = labels->dl.data;
  int64_t n = logits->dl.shape[0], k = logits->dl.shape[1], ok = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t best = 0;
    for (int64_t j = 1; j < k; j++)
      if (l[i * k + j] > l[i * k + best]) best = j;
    ok += best == y[i];
  }
  return (double)ok / (double)n;
}

static bool newer(const char *a, const char *b) {
  struct stat sa, sb;
  if (stat(a, &sa) != 0) return false;
  if (stat(b, &sb) != 0) return true;
  return sa.st_mtime > sb.st_mtime;
}

Test(opu_genir, digits_int8_accuracy_within_one_point_of_float, .timeout = 120) {
  load_opu();
  char *dir = th_path("tests/opu_digits");
  GPBuf f = {0};
  gp_buf_printf(&f, "%s/digits.relay", dir);
  if (!newer(f.data, "tests/opu_digits.py")) {
    const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    GPBuf cmd = {0};
    gp_buf_printf(&cmd, "%s tests/opu_digits.py %s", py, dir);
    char *out = NULL;
    int rc = th_run(cmd.data, &out);
    gp_buf_free(&cmd);
    if (rc == 77) {
      cr_log_warn("skipped: %s", out);
      gp_free(out);
      gp_free(dir);
      gp_buf_free(&f);
      cr_skip_test("numpy or scikit-learn is missing (sh scripts/install-deps.sh installs them)");
    }
    cr_assert_eq(rc, 0, "tests/opu_digits.py failed: %s", out);
    gp_free(out);
  }
  GPModule *m = th_parse_file(f.data);
  GPBuf p = {0};
  gp_buf_printf(&p, "x=%s/digits_cal.npy", dir);
  GPPassContext *ctx = opu_ctx(NULL);
  cr_assert_eq(gp_ctx_set_config(ctx, "GenIR.calibrate", p.data), 0);
  GPModule *c = gp_run_pipeline(m, NULL, ctx);
  cr_assert_not_null(c, "%s", gp_error_message());
  const char *fname;
  cr_assert_not_null(opu_function(c, &fname), "the network is not on the OPU");
  gp_buf_free(&p);
  gp_buf_printf(&p, "%s/digits_test.npy", dir);
  GPTensor *x = gp_npy_read(p.data);
  gp_buf_free(&p);
  gp_buf_printf(&p, "%s/digits_labels.npy", dir);
  GPTensor *y = gp_npy_read(p.data);
  cr_assert(x && y, "%s", gp_error_message());
  GPTensor *lf = eval1(m, x, 0), *lq = eval1(c, x, 1);
  double af = accuracy(lf, y), aq = accuracy(lq, y);
  cr_log_info("digits: float accuracy %.4f, int8 (OPU simulator) %.4f", af, aq);
  cr_assert(af > 0.9, "float accuracy %.4f: the generator did not train", af);
  cr_assert(fabs(af - aq) <= 0.01, "float %.4f vs int8 %.4f: more than 1 point apart", af, aq);
  gp_release(lf);
  gp_release(lq);
  gp_release(x);
  gp_release(y);
  gp_release(c);
  gp_release(m);
  gp_ctx_free(ctx);
  gp_buf_free(&p);
  gp_buf_free(&f);
  gp_free(dir);
}
