/* test_cli_eval.c -- `graphpass eval` run as a user runs it: random inputs and output files
 * that parse back with the printed shape, --input with .npy files the test writes, and the
 * messages of missing, mismatched and unknown inputs. */
#include "test_helpers.h"
#include "eval/eval.h"

#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#define TWO "tests/data/eval/two_outputs.relay"

/* Run `graphpass <args>` (printf-style); output (stdout + stderr) in *out; exit status. */
static int gp(char **out, const char *fmt, ...) GP_FMT(2, 3);
static int gp(char **out, const char *fmt, ...) {
  GPBuf b = {0};
  gp_buf_printf(&b, "%s/bin/graphpass ", th_build_dir());
  va_list ap;
  va_start(ap, fmt);
  char tail[4096];
  vsnprintf(tail, sizeof tail, fmt, ap);
  va_end(ap);
  gp_buf_puts(&b, tail);
  int rc = th_run(b.data, out);
  gp_buf_free(&b);
  return rc;
}

/* A fresh directory path for this test process (not created). */
static char *tmp_dir(const char *name) {
  GPBuf b = {0};
  gp_buf_printf(&b, "%s/tests/cli_eval_%d_%s", th_build_dir(), (int)getpid(), name);
  return gp_buf_take(&b);
}

static void rm_rf(const char *dir) {
  GPBuf b = {0};
  gp_buf_printf(&b, "rm -rf '%s'", dir);
  cr_assert_eq(system(b.data), 0);
  gp_buf_free(&b);
}

static char *write_npy_f32(const char *dir, const char *name, int32_t ndim, const int64_t *shape, const float *v) {
  GPTensor *t = gp_tensor_alloc(GP_DT_F32, ndim, shape, true);
  memcpy(t->dl.data, v, gp_tensor_nbytes(t));
  GPBuf b = {0};
  gp_buf_printf(&b, "%s/%s", dir, name);
  cr_assert_eq(gp_npy_write(b.data, t), 0, "%s", gp_error_message());
  gp_release(t);
  return gp_buf_take(&b);
}

/* "(1, 10)" for shape {1, 10} */
static char *shape_str(const GPTensor *t) {
  GPBuf b = {0};
  gp_buf_putc(&b, '(');
  for (int32_t i = 0; i < t->dl.ndim; i++) gp_buf_printf(&b, "%s%lld", i ? ", " : "", (long long)t->dl.shape[i]);
  gp_buf_putc(&b, ')');
  return gp_buf_take(&b);
}

Test(cli_eval, resnet_block_with_random_inputs_writes_outputs, .timeout = 120) {
  gp_ops_init();
  char *dir = tmp_dir("resnet");
  char *sub = gp_strdup(dir);
  sub = gp_realloc(sub, strlen(dir) + 16);
  strcat(sub, "/nested/out");
  char *out;
  int rc = gp(&out, "eval examples/resnet_block.relay --random-inputs 1 -o %s", sub);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strncmp(out, "output 0: shape (1, 10) dtype float32 min ", 42) == 0, "%s", out);
  cr_assert(strstr(out, " max ") && strstr(out, " mean 0.1\n"), "softmax rows average 0.1: %s", out);
  cr_assert_null(strstr(out, "output 1:"), "%s", out);
  GPBuf p = {0};
  gp_buf_printf(&p, "%s/output_0.npy", sub);
  GPTensor *t = gp_npy_read(p.data);
  cr_assert(t, "%s", gp_error_message());
  char *s = shape_str(t);
  GPBuf line = {0};
  gp_buf_printf(&line, "output 0: shape %s dtype float32", s);
  cr_assert(strstr(out, line.data), "the file's shape %s is the printed one: %s", s, out);
  double sum = 0;
  for (int i = 0; i < 10; i++) sum += gp_tensor_get_f64(t, i);
  cr_assert(sum > 0.999 && sum < 1.001, "%g", sum);
  gp_free(out);

  /* the same seed gives the same values, whatever the threads */
  char *dir2 = tmp_dir("resnet2");
  rc = gp(&out, "eval examples/resnet_block.relay --random-inputs 1 --threads 1 -o %s", dir2);
  cr_assert_eq(rc, 0, "%s", out);
  gp_free(out);
  GPBuf p2 = {0};
  gp_buf_printf(&p2, "%s/output_0.npy", dir2);
  GPTensor *t2 = gp_npy_read(p2.data);
  cr_assert(t2, "%s", gp_error_message());
  double mabs;
  cr_assert_eq(gp_tensor_allclose(t2, t, 1e-5, 1e-6, &mabs, NULL, NULL), 1, "%g", mabs);
  gp_release(t2);
  /* another seed, other values */
  rc = gp(&out, "eval examples/resnet_block.relay --random-inputs 2 -o %s", dir2);
  cr_assert_eq(rc, 0, "%s", out);
  gp_free(out);
  t2 = gp_npy_read(p2.data);
  cr_assert_eq(gp_tensor_allclose(t2, t, 0, 0, NULL, NULL, NULL), 0);
  gp_release(t2);

  gp_release(t);
  gp_free(s);
  gp_buf_free(&line);
  gp_buf_free(&p);
  gp_buf_free(&p2);
  rm_rf(dir);
  rm_rf(dir2);
  gp_free(dir);
  gp_free(dir2);
  gp_free(sub);
}

Test(cli_eval, inputs_from_npy_files) {
  gp_ops_init();
  char *dir = tmp_dir("inputs");
  cr_assert_eq(mkdir(dir, 0777), 0);
  int64_t sx[2] = {2, 3}, sy = 3;
  const float xv[6] = {-1, 2, -3, 4, -5, 6}, yv[3] = {10, 20, 30};
  char *x = write_npy_f32(dir, "x.npy", 2, sx, xv), *y = write_npy_f32(dir, "y.npy", 1, &sy, yv);
  char *out;
  int rc = gp(&out, "eval " TWO " --input x=%s --input %%y=%s -o %s", x, y, dir);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert_str_eq(out, "output 0: shape (2, 3) dtype float32 min 9 max 36 mean 20.5\n"
                        "output 1: shape (2, 3) dtype float32 min 0 max 6 mean 2\n");
  gp_free(out);
  const float sum[6] = {9, 22, 27, 14, 15, 36}, relu[6] = {0, 2, 0, 4, 0, 6};
  for (int k = 0; k < 2; k++) {
    GPBuf p = {0};
    gp_buf_printf(&p, "%s/output_%d.npy", dir, k);
    GPTensor *t = gp_npy_read(p.data);
    cr_assert(t, "%s", gp_error_message());
    cr_assert_eq(t->dl.ndim, 2);
    cr_assert_eq(memcmp(t->dl.data, k ? relu : sum, sizeof sum), 0);
    gp_release(t);
    gp_buf_free(&p);
  }
  /* one given, the other random */
  rc = gp(&out, "eval " TWO " --input x=%s --random-inputs 5", x);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "output 1: shape (2, 3) dtype float32 min 0 max 6 mean 2\n"), "%s", out);
  gp_free(out);
  /* from stdin */
  rc = gp(&out, "eval - --input x=%s --input y=%s < " TWO, x, y);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "output 0: shape (2, 3) dtype float32 min 9 max 36 mean 20.5\n"), "%s", out);
  gp_free(out);
  rm_rf(dir);
  gp_free(dir);
  gp_free(x);
  gp_free(y);
}

Test(cli_eval, missing_mismatched_and_unknown_inputs) {
  gp_ops_init();
  char *dir = tmp_dir("bad");
  cr_assert_eq(mkdir(dir, 0777), 0);
  int64_t s32[2] = {3, 2}, s23[2] = {2, 3}, sy = 3;
  const float v[6] = {0};
  char *wrong = write_npy_f32(dir, "wrong.npy", 2, s32, v), *x = write_npy_f32(dir, "x.npy", 2, s23, v);
  char *y = write_npy_f32(dir, "y.npy", 1, &sy, v);
  char *out;

  int rc = gp(&out, "eval " TWO " --input x=%s", x);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "graphpass: error: @main: no value for %y (give --input NAME=FILE.npy for each parameter, "
                        "or --random-inputs SEED)"),
            "%s", out);
  gp_free(out);

  rc = gp(&out, "eval " TWO);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "no value for %x, %y"), "%s", out);
  gp_free(out);

  rc = gp(&out, "eval " TWO " --input x=%s --input y=%s", wrong, y);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "graphpass: error: @main: input %x: expected Tensor[(2, 3), float32], got Tensor[(3, 2), "
                        "float32]\n"),
            "%s", out);
  gp_free(out);

  rc = gp(&out, "eval " TWO " --input x=%s --input z=%s", x, y);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "graphpass: error: --input z: @main has no parameter %z (parameters: %x, %y)"), "%s", out);
  gp_free(out);

  rc = gp(&out, "eval " TWO " --input x=%s --input x=%s", x, x);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "--input x is given twice"), "%s", out);
  gp_free(out);

  rc = gp(&out, "eval " TWO " --input x=%s/none.npy --input y=%s", dir, y);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "--input x: ") && strstr(out, "none.npy: cannot open"), "%s", out);
  gp_free(out);

  rc = gp(&out, "eval " TWO " --input x=%s --input y=" TWO, x);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "two_outputs.relay: not a .npy file"), "%s", out);
  gp_free(out);

  rc = gp(&out, "eval /nonexistent.relay --random-inputs 1");
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "/nonexistent.relay: cannot open"), "%s", out);
  gp_free(out);

  rm_rf(dir);
  gp_free(dir);
  gp_free(wrong);
  gp_free(x);
  gp_free(y);
}

/* Weights without type annotations: InferType solves them (conv2d from channels and
 * kernel_size, dense from units, the vectors from data's axis), so eval draws their values and
 * --verify-numerics evaluates the model before and after the passes. */
Test(cli_eval, untyped_weights, .timeout = 120) {
  char *out;
  int rc = gp(&out, "eval tests/data/eval/untyped_weights.relay --random-inputs 3");
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "output 0: shape (1, 10) dtype float32"), "%s", out);
  gp_free(out);
  rc = gp(&out, "opt tests/data/eval/untyped_weights.relay --opt-level 3 --verify-numerics --no-types");
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "%w1: Tensor[(8, 3, 3, 3), float32]") && strstr(out, "%d: Tensor[(10, 64), float32]"),
            "%s", out);
  gp_free(out);
}

Test(cli_eval, usage_errors_exit_2) {
  char *out;
  static const char *const bad[] = {
      "eval",
      "eval " TWO " --random-inputs",
      "eval " TWO " --random-inputs -1",
      "eval " TWO " --random-inputs x1",
      "eval " TWO " --threads 0",
      "eval " TWO " --input x.npy",
      "eval " TWO " --bogus",
      "eval " TWO " " TWO,
  };
  for (size_t i = 0; i < GP_ARRAY_LEN(bad); i++) {
    int rc = gp(&out, "%s", bad[i]);
    cr_assert_eq(rc, 2, "%s: %s", bad[i], out);
    cr_assert(strstr(out, "graphpass eval INPUT"), "usage shown: %s", out);
    gp_free(out);
  }
  cr_assert_eq(gp(&out, "--help"), 0);
  cr_assert(strstr(out, "graphpass eval INPUT [--input NAME=FILE]... [--random-inputs SEED] [-o DIR]"), "%s", out);
  gp_free(out);
}

/* eval --target opu: compiled with the opu set, the opu functions on the simulator; outputs
 * written as eval writes them, close to the float ones; --calibrate files; usage errors. */
#define OPU_SMALL "tests/data/opu/small_weights.relay"

Test(cli_eval, target_opu_runs_the_simulator) {
  char *dir = tmp_dir("opu"), *out = NULL;
  int rc = gp(&out, "eval " OPU_SMALL " --random-inputs 4 -o %s/f", dir);
  cr_assert_eq(rc, 0, "%s", out);
  gp_free(out);
  rc = gp(&out, "eval " OPU_SMALL " --random-inputs 3 -o %s/cal", dir);
  cr_assert_eq(rc, 0, "%s", out);
  gp_free(out);
  /* calibrate on one input (seed 3's), evaluate on another (seed 4's) */
  rc = gp(&out, "eval " OPU_SMALL " --target opu --calibrate data=%s/cal/output_0.npy --random-inputs 4 -o %s/q", dir,
          dir);
  cr_assert_neq(rc, 0, "calibrating with a file of the output's shape must fail: %s", out);
  cr_assert(strstr(out, "data"), "%s", out);
  gp_free(out);
  GPBuf p = {0};
  gp_buf_printf(&p, "%s/cal_in.npy", dir);
  GPModule *m = th_parse_file(OPU_SMALL);
  GPTensor **rin = NULL;
  int32_t nr = 0;
  cr_assert_eq(gp_eval_random_inputs(m, "main", 3, &rin, &nr), 0);
  cr_assert_eq(gp_npy_write(p.data, rin[0]), 0);
  rc = gp(&out, "eval " OPU_SMALL " --target opu --calibrate data=%s --random-inputs 4 -o %s/q", p.data, dir);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "output 0: shape (1, 4) dtype float32"), "%s", out);
  gp_free(out);
  GPBuf fq = {0}, ff = {0};
  gp_buf_printf(&fq, "%s/q/output_0.npy", dir);
  gp_buf_printf(&ff, "%s/f/output_0.npy", dir);
  GPTensor *q = gp_npy_read(fq.data), *f = gp_npy_read(ff.data);
  cr_assert(q && f, "%s", gp_error_message());
  double num = 0, da = 0, db = 0;
  for (int i = 0; i < 4; i++) {
    double a = ((float *)q->dl.data)[i], b = ((float *)f->dl.data)[i];
    num += a * b;
    da += a * a;
    db += b * b;
  }
  cr_assert(num / sqrt(da * db) > 0.99, "cosine %f", num / sqrt(da * db));
  cr_assert(memcmp(q->dl.data, f->dl.data, 4 * sizeof(float)) != 0, "the simulator did not run");
  /* usage: --calibrate without --target */
  rc = gp(&out, "eval " OPU_SMALL " --calibrate data=%s --random-inputs 4", p.data);
  cr_assert_eq(rc, 2, "%s", out);
  cr_assert(strstr(out, "need --target"), "%s", out);
  gp_free(out);
  /* opt --calibrate with a bad item */
  rc = gp(&out, "opt " OPU_SMALL " --target opu --calibrate data -o /dev/null");
  cr_assert_eq(rc, 2, "%s", out);
  cr_assert(strstr(out, "--calibrate 'data' is not NAME=FILE"), "%s", out);
  gp_free(out);
  gp_release(q);
  gp_release(f);
  gp_release(rin[0]);
  gp_free(rin);
  gp_release(m);
  gp_buf_free(&p);
  gp_buf_free(&fq);
  gp_buf_free(&ff);
  rm_rf(dir);
  gp_free(dir);
}
