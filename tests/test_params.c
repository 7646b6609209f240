/* test_params.c -- parameter files in TVM's save_param_dict format (ir/params.c): the writer
 * matches a golden file built from TVM's format description by tests/data/params/make_golden.py
 * (independently of our code) byte for byte, the reader gives back its tensors, `graphpass opt
 * -o OUT.relay --params OUT.params` round-trips a module bit-exactly, and damaged files are
 * errors naming the byte offset. */
#include "test_helpers.h"

#include <unistd.h>

#define GOLDEN "tests/data/params/golden.params"

static GPTensor *tensor(DLDataType dt, int32_t nd, const int64_t *shape, const void *data, size_t n) {
  GPTensor *t = gp_tensor_alloc(dt, nd, shape, true);
  cr_assert(t);
  cr_assert_eq(gp_tensor_nbytes(t), n);
  memcpy(t->dl.data, data, n);
  return t;
}

/* the three tensors of make_golden.py */
static void golden_tensors(GPTensor *ts[3]) {
  float f[6] = {1.5f, -2.0f, 0.0f, 3.25f, 1e-3f, -0.0f};
  int64_t i64[2] = {7, -1};
  uint8_t b[3] = {1, 0, 1};
  int64_t s23[2] = {2, 3}, s2 = 2, s3 = 3;
  ts[0] = tensor(GP_DT_F32, 2, s23, f, sizeof f);
  ts[1] = tensor(GP_DT(kDLInt, 64), 1, &s2, i64, sizeof i64);
  ts[2] = tensor(GP_DT_BOOL, 1, &s3, b, sizeof b);
}

static const char *const golden_names[3] = {"relay.Constant[0]", "relay.Constant[1]", "relay.Constant[2]"};

Test(params, writer_matches_tvm_layout_golden) {
  GPTensor *ts[3];
  golden_tensors(ts);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  cr_assert_eq(gp_params_write(f, "mem", 3, golden_names, ts), 0, "%s", gp_error_message());
  fclose(f);
  size_t glen;
  char *want = th_read(GOLDEN, &glen);
  cr_assert_eq(len, glen, "size %zu, golden %zu", len, glen);
  for (size_t i = 0; i < len; i++) cr_assert_eq((uint8_t)buf[i], (uint8_t)want[i], "byte %zu differs", i);
  free(buf);
  gp_free(want);
  for (int i = 0; i < 3; i++) gp_release(ts[i]);
}

Test(params, reader_reads_the_golden_file) {
  GPParams p;
  cr_assert_eq(gp_params_load(GOLDEN, &p), 0, "%s", gp_error_message());
  cr_assert_eq(p.n, 3);
  GPTensor *ts[3];
  golden_tensors(ts);
  for (int i = 0; i < 3; i++) {
    cr_assert_str_eq(p.names[i], golden_names[i]);
    cr_assert(gp_dtype_eq(p.tensors[i]->dl.dtype, ts[i]->dl.dtype), "dtype of %d", i);
    cr_assert_eq(p.tensors[i]->dl.ndim, ts[i]->dl.ndim);
    for (int32_t d = 0; d < ts[i]->dl.ndim; d++) cr_assert_eq(p.tensors[i]->dl.shape[d], ts[i]->dl.shape[d]);
    cr_assert_eq(memcmp(p.tensors[i]->dl.data, ts[i]->dl.data, gp_tensor_nbytes(ts[i])), 0, "data of %d", i);
    gp_release(ts[i]);
  }
  gp_params_free(&p);
}

/* The golden file cut or altered at a few places: an error with the byte offset, no leak. */
static void expect_bad(const char *bytes, size_t n, const char *want) {
  FILE *f = fmemopen((void *)bytes, n ? n : 1, "rb");
  cr_assert(f);
  GPParams p;
  cr_assert_eq(gp_params_read(f, n, "bad.params", &p), -1);
  fclose(f);
  cr_assert_eq(p.n, 0);
  cr_assert(strstr(gp_error_message(), want), "error '%s' should contain '%s'", gp_error_message(), want);
  cr_assert(strstr(gp_error_message(), "bad.params: byte "), "%s", gp_error_message());
  gp_error_clear();
}

Test(params, damaged_files_are_errors_with_their_offset) {
  size_t len;
  char *g = th_read(GOLDEN, &len);
  for (size_t cut = 0; cut < len; cut += 7) expect_bad(g, cut, "");
  char *c = gp_malloc(len + 1);
  memcpy(c, g, len);
  c[0] ^= 1;
  expect_bad(c, len, "magic");
  memcpy(c, g, len);
  c[16] = 9; /* nine names */
  expect_bad(c, len, "");
  memcpy(c, g, len);
  c[len] = 0;
  expect_bad(c, len + 1, "1 bytes after the last array");
  memcpy(c, g, len);
  c[0x8a] = 3; /* dtype code of array 0: 3 is not a dtype */
  expect_bad(c, len, "unsupported dtype");
  gp_free(c);
  gp_free(g);
}

Test(params, names_must_be_meta_constants) {
  GPParams p = {0};
  cr_assert_eq(gp_params_load(GOLDEN, &p), 0);
  gp_free(p.names[1]);
  p.names[1] = gp_strdup("conv1_weight");
  int64_t n;
  cr_assert_null(gp_params_meta_table(&p, "x.params", &n));
  cr_assert(strstr(gp_error_message(), "'conv1_weight' is not named relay.Constant[<index>]"), "%s",
            gp_error_message());
  gp_error_clear();
  gp_params_free(&p);
}

/* graphpass opt with --params: the text has no metadata section, and reading text + params back
 * gives the module the full text gives, bit for bit; so does a second write. */
Test(params, cli_round_trip_is_bit_exact) {
  char dir[] = "/tmp/gp_params_XXXXXX";
  cr_assert(mkdtemp(dir));
  char *bin = th_path("bin/graphpass");
  GPBuf cmd = {0};
  char *out;
  const char *model = "tests/data/params/consts.relay";
  gp_buf_printf(&cmd, "%s opt %s --pipeline FoldConstant -o %s/a.relay --params %s/a.params && "
                "%s opt %s --pipeline FoldConstant -o %s/full.relay && "
                "%s opt %s/a.relay --input-params %s/a.params --pipeline InferType -o %s/b.relay --params %s/b.params",
                bin, model, dir, dir, bin, model, dir, bin, dir, dir, dir, dir);
  int rc = th_run(cmd.data, &out);
  cr_assert_eq(rc, 0, "%s\n%s", cmd.data, out);
  gp_free(out);
  char p[4200];
  snprintf(p, sizeof p, "%s/a.relay", dir);
  char *text = th_read(p, NULL);
  cr_assert_null(strstr(text, "#[metadata]"), "no metadata with --params:\n%s", text);
  cr_assert(strstr(text, "meta[relay.Constant][0]"), "%s", text);
  gp_free(text);
  /* the params file rewritten from what was read back is byte-identical */
  size_t la, lb;
  snprintf(p, sizeof p, "%s/a.params", dir);
  char *a = th_read(p, &la);
  snprintf(p, sizeof p, "%s/b.params", dir);
  char *b = th_read(p, &lb);
  cr_assert(la > 100 && la == lb && memcmp(a, b, la) == 0, "params differ (%zu vs %zu bytes)", la, lb);
  gp_free(a);
  gp_free(b);
  /* text + params parse to the module the metadata text gives */
  snprintf(p, sizeof p, "%s/full.relay", dir);
  GPModule *full = th_parse_file(p);
  GPParams pa;
  snprintf(p, sizeof p, "%s/a.params", dir);
  cr_assert_eq(gp_params_load(p, &pa), 0, "%s", gp_error_message());
  int64_t nt;
  GPTensor **tab = gp_params_meta_table(&pa, p, &nt);
  cr_assert(tab && nt >= 1);
  snprintf(p, sizeof p, "%s/a.relay", dir);
  size_t tl;
  char *t = th_read(p, &tl);
  GPModule *back = gp_parse_meta(t, tl, p, tab, nt);
  cr_assert(back, "%s", gp_error_message());
  th_assert_module_eq(back, full);
  gp_free(t);
  gp_free(tab);
  gp_params_free(&pa);
  gp_release(back);
  gp_release(full);
  /* eval reads the params too: the same outputs as from the text with metadata */
  gp_buf_free(&cmd);
  gp_buf_printf(&cmd, "%s eval %s/a.relay --params %s/a.params --random-inputs 3 && %s eval %s/full.relay --random-inputs 3",
                bin, dir, dir, bin, dir);
  rc = th_run(cmd.data, &out);
  cr_assert_eq(rc, 0, "%s", out);
  char *second = strstr(out, "output 0:");
  cr_assert(second && (second = strstr(second + 1, "output 0:")), "%s", out);
  size_t first_len = (size_t)(second - out);
  cr_assert(first_len > 0 && strncmp(out, second, first_len) == 0, "eval with --params differs:\n%s", out);
  gp_free(out);
  /* the text's own metadata entry and a params entry for one index clash */
  gp_buf_free(&cmd);
  gp_buf_printf(&cmd, "%s opt %s/full.relay --input-params %s/a.params --pipeline InferType -o /dev/null", bin, dir,
                dir);
  rc = th_run(cmd.data, &out);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "duplicate metadata entry relay.Constant[0] (the parameter file has it too)"), "%s", out);
  gp_free(out);
  gp_buf_free(&cmd);
  gp_buf_printf(&cmd, "rm -rf %s", dir);
  cr_assert_eq(system(cmd.data), 0);
  gp_buf_free(&cmd);
  gp_free(bin);
}

Test(params, cli_params_needs_an_output_file) {
  char *bin = th_path("bin/graphpass");
  GPBuf cmd = {0};
  gp_buf_printf(&cmd, "%s opt tests/data/params/consts.relay --params /tmp/x.params", bin);
  char *out;
  cr_assert_eq(th_run(cmd.data, &out), 2, "%s", out);
  cr_assert(strstr(out, "needs -o OUT.relay"), "%s", out);
  gp_free(out);
  gp_buf_free(&cmd);
  gp_free(bin);
}
