/* test_npy.c -- .npy files (eval/npy.c): round trips of every dtype and rank 0, the exact
 * header numpy writes, Fortran order, format versions 2.0 and 3.0, and malformed files
 * (truncation, bad magic, big-endian and unsupported dtypes, byte flips) failing cleanly. */
#include "test_helpers.h"
#include "test_builders.h"
#include "eval/eval.h"

#include <unistd.h>

/* A temp path unique to this test process. */
static char *tmp_path(const char *name) {
  GPBuf b = {0};
  gp_buf_printf(&b, "%s/tests/npy_%d_%s", th_build_dir(), (int)getpid(), name);
  return gp_buf_take(&b);
}

/* The bytes of a .npy file: magic, version, header (dict padded to 64 with '\n'), data. */
static char *make_npy(int major, const char *dict, const void *data, size_t n, size_t *len) {
  GPBuf b = {0};
  gp_buf_put(&b, "\x93NUMPY", 6);
  gp_buf_putc(&b, (char)major);
  gp_buf_putc(&b, 0);
  size_t pre = major == 1 ? 10 : 12;
  size_t hl = strlen(dict) + 1;
  size_t pad = (64 - (pre + hl) % 64) % 64;
  hl += pad;
  for (size_t i = 0; i < pre - 8; i++) gp_buf_putc(&b, (char)((hl >> (8 * i)) & 0xff));
  gp_buf_puts(&b, dict);
  for (size_t i = 0; i < pad; i++) gp_buf_putc(&b, ' ');
  gp_buf_putc(&b, '\n');
  if (n) gp_buf_put(&b, data, n);
  *len = b.len;
  return gp_buf_take(&b);
}

static GPTensor *parse_ok(const char *bytes, size_t len) {
  GPTensor *t = gp_npy_parse(bytes, len, "x.npy");
  cr_assert(t, "%s", gp_error_message());
  return t;
}

static void parse_fails(const char *bytes, size_t len, int32_t kind, const char *needle) {
  GPTensor *t = gp_npy_parse(bytes, len, "x.npy");
  cr_assert_null(t, "should fail with \"%s\"", needle);
  cr_assert_eq(gp_error_kind(), kind, "kind %d: %s", gp_error_kind(), gp_error_message());
  cr_assert(strncmp(gp_error_message(), "x.npy: ", 7) == 0, "%s", gp_error_message());
  cr_assert(strstr(gp_error_message(), needle), "message \"%s\" lacks \"%s\"", gp_error_message(), needle);
  gp_error_clear();
}

/* ------------------------------------------------------------------------------------------ */

typedef struct {
  DLDataType dt;
  const char *descr;
} DtCase;

static const DtCase k_dtypes[] = {
    {GP_DT(kDLFloat, 32), "<f4"}, {GP_DT(kDLFloat, 64), "<f8"}, {GP_DT(kDLFloat, 16), "<f2"},
    {GP_DT(kDLInt, 8), "|i1"},    {GP_DT(kDLInt, 16), "<i2"},   {GP_DT(kDLInt, 32), "<i4"},
    {GP_DT(kDLInt, 64), "<i8"},   {GP_DT(kDLUInt, 8), "|u1"},   {GP_DT(kDLUInt, 1), "|b1"},
};

Test(npy, round_trip_of_every_dtype_with_numpys_header) {
  gp_ops_init();
  int64_t shape[3] = {2, 3, 5};
  for (size_t d = 0; d < GP_ARRAY_LEN(k_dtypes); d++) {
    GPTensor *t = gp_tensor_alloc(k_dtypes[d].dt, 3, shape, true);
    cr_assert(t);
    unsigned char *p = t->dl.data;
    size_t nb = gp_tensor_nbytes(t);
    for (size_t i = 0; i < nb; i++) p[i] = (unsigned char)(i * 37 + d);
    if (k_dtypes[d].dt.bits == 1)
      for (size_t i = 0; i < nb; i++) p[i] &= 1;
    char *path = tmp_path("rt.npy");
    cr_assert_eq(gp_npy_write(path, t), 0, "%s", gp_error_message());
    size_t len;
    char *bytes = th_read(path, &len);
    /* numpy's layout: version 1.0, header to a multiple of 64, ending in '\n' */
    cr_assert_eq(memcmp(bytes, "\x93NUMPY\x01\x00", 8), 0);
    size_t hl = (unsigned char)bytes[8] | (size_t)(unsigned char)bytes[9] << 8;
    cr_assert_eq((10 + hl) % 64, 0, "header length %zu", hl);
    cr_assert_eq(bytes[10 + hl - 1], '\n');
    GPBuf want = {0};
    gp_buf_printf(&want, "{'descr': '%s', 'fortran_order': False, 'shape': (2, 3, 5), }", k_dtypes[d].descr);
    cr_assert_eq(strncmp(bytes + 10, want.data, want.len), 0, "header %.*s", (int)hl, bytes + 10);
    for (size_t i = 10 + want.len; i < 10 + hl - 1; i++) cr_assert_eq(bytes[i], ' ');
    cr_assert_eq(len, 10 + hl + nb);
    gp_buf_free(&want);
    GPTensor *back = gp_npy_read(path);
    cr_assert(back, "%s", gp_error_message());
    cr_assert(gp_dtype_eq(back->dl.dtype, t->dl.dtype));
    cr_assert_eq(back->dl.ndim, 3);
    for (int i = 0; i < 3; i++) cr_assert_eq(back->dl.shape[i], shape[i]);
    cr_assert_eq(memcmp(back->dl.data, t->dl.data, nb), 0, "dtype %s", k_dtypes[d].descr);
    gp_release(back);
    gp_release(t);
    gp_free(bytes);
    remove(path);
    gp_free(path);
  }
}

Test(npy, rank_0_and_rank_1_shapes) {
  gp_ops_init();
  GPTensor *s = gp_tensor_scalar_f64(GP_DT_F64, 2.5);
  char *path = tmp_path("r0.npy");
  cr_assert_eq(gp_npy_write(path, s), 0, "%s", gp_error_message());
  size_t len;
  char *bytes = th_read(path, &len);
  cr_assert(strstr(bytes + 10, "'shape': (), }"), "%s", bytes + 10);
  gp_free(bytes);
  GPTensor *back = gp_npy_read(path);
  cr_assert(back, "%s", gp_error_message());
  cr_assert_eq(back->dl.ndim, 0);
  cr_assert_eq(gp_tensor_get_f64(back, 0), 2.5);
  gp_release(back);
  gp_release(s);

  int64_t n = 3;
  GPTensor *v = gp_tensor_alloc(GP_DT_I64, 1, &n, true);
  ((int64_t *)v->dl.data)[2] = -7;
  cr_assert_eq(gp_npy_write(path, v), 0);
  bytes = th_read(path, &len);
  cr_assert(strstr(bytes + 10, "'shape': (3,), }"), "numpy's 1-tuple: %s", bytes + 10);
  gp_free(bytes);
  back = gp_npy_read(path);
  cr_assert_eq(back->dl.ndim, 1);
  cr_assert_eq(gp_tensor_get_i64(back, 2), -7);
  gp_release(back);
  gp_release(v);

  /* zero elements */
  int64_t z[2] = {0, 4};
  GPTensor *e = gp_tensor_alloc(GP_DT_F32, 2, z, true);
  cr_assert_eq(gp_npy_write(path, e), 0, "%s", gp_error_message());
  back = gp_npy_read(path);
  cr_assert(back, "%s", gp_error_message());
  cr_assert_eq(back->dl.shape[0], 0);
  cr_assert_eq(back->dl.shape[1], 4);
  gp_release(back);
  gp_release(e);
  remove(path);
  gp_free(path);
}

Test(npy, strided_tensor_is_written_in_c_order) {
  gp_ops_init();
  int64_t s[2] = {2, 3};
  const float v[6] = {0, 1, 2, 3, 4, 5}; /* viewed as the 3x2 data transposed */
  GPTensor *base = gp_tensor_alloc(GP_DT_F32, 2, s, true);
  memcpy(base->dl.data, v, sizeof v);
  int64_t tshape[2] = {3, 2}, tstrides[2] = {1, 3};
  DLManagedTensor view = {.dl_tensor = base->dl};
  view.dl_tensor.shape = tshape;
  view.dl_tensor.strides = tstrides;
  GPTensor *t = gp_tensor_from_dlpack(&view);
  cr_assert(t, "%s", gp_error_message());
  char *path = tmp_path("strided.npy");
  cr_assert_eq(gp_npy_write(path, t), 0, "%s", gp_error_message());
  GPTensor *back = gp_npy_read(path);
  const float want[6] = {0, 3, 1, 4, 2, 5};
  cr_assert_eq(memcmp(back->dl.data, want, sizeof want), 0);
  gp_release(back);
  gp_release(t);
  gp_release(base);
  remove(path);
  gp_free(path);
}

Test(npy, fortran_order_is_read_into_c_order) {
  gp_ops_init();
  /* a 2x3 array [[0, 1, 2], [3, 4, 5]] stored column-major: 0 3 1 4 2 5 */
  const int32_t colmajor[6] = {0, 3, 1, 4, 2, 5};
  size_t len;
  char *f = make_npy(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", colmajor, sizeof colmajor, &len);
  GPTensor *t = parse_ok(f, len);
  cr_assert_eq(t->dl.shape[0], 2);
  for (int i = 0; i < 6; i++) cr_assert_eq(gp_tensor_get_i64(t, i), i, "element %d", i);
  gp_release(t);
  gp_free(f);
  /* rank 3: shape (2, 3, 4), element [i][j][k] = 100i + 10j + k */
  int16_t fdata[24];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++) fdata[i + 2 * j + 6 * k] = (int16_t)(100 * i + 10 * j + k);
  f = make_npy(1, "{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3, 4)}", fdata, sizeof fdata, &len);
  t = parse_ok(f, len);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++) cr_assert_eq(gp_tensor_get_i64(t, i * 12 + j * 4 + k), 100 * i + 10 * j + k);
  gp_release(t);
  gp_free(f);
}

Test(npy, versions_2_and_3_and_header_spellings) {
  gp_ops_init();
  const double d[2] = {1.5, -2};
  for (int major = 2; major <= 3; major++) {
    size_t len;
    char *f = make_npy(major, "{\"descr\": \"<f8\", \"shape\": (2,), \"fortran_order\": False}", d, sizeof d, &len);
    GPTensor *t = parse_ok(f, len);
    cr_assert_eq(t->dl.ndim, 1);
    cr_assert_eq(gp_tensor_get_f64(t, 1), -2.0);
    gp_release(t);
    gp_free(f);
  }
  /* '=' (native, little-endian here), '<' on a one-byte type, '|i1' */
  const unsigned char bytes[3] = {0, 2, 255};
  const char *dicts[] = {"{'descr': '=u1', 'fortran_order': False, 'shape': (3,), }",
                         "{'descr': '<u1', 'fortran_order': False, 'shape': (3,), }",
                         "{'descr': '|i1', 'fortran_order': False, 'shape': (3,), }",
                         "{'descr': '>i1', 'fortran_order': False, 'shape': (3,), }",
                         "{'descr':'|b1','fortran_order':False,'shape':(3,)}"};
  for (size_t k = 0; k < GP_ARRAY_LEN(dicts); k++) {
    size_t len;
    char *f = make_npy(1, dicts[k], bytes, 3, &len);
    GPTensor *t = parse_ok(f, len);
    int64_t last = gp_tensor_get_i64(t, 2);
    if (k < 2) cr_assert_eq(last, 255);
    if (k == 2 || k == 3) cr_assert_eq(last, -1);
    if (k == 4) {
      cr_assert(gp_dtype_eq(t->dl.dtype, GP_DT_BOOL));
      cr_assert_eq(((uint8_t *)t->dl.data)[1], 1, "bools are 0 or 1");
    }
    gp_release(t);
    gp_free(f);
  }
}

Test(npy, malformed_files_fail_cleanly) {
  gp_ops_init();
  const float v[2] = {1, 2};
  size_t len;
  char *f = make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", v, sizeof v, &len);
  /* every truncation */
  for (size_t n = 0; n < len; n++) {
    GPTensor *t = gp_npy_parse(f, n, "x.npy");
    cr_assert_null(t, "prefix of %zu bytes parsed", n);
    cr_assert_eq(gp_error_kind(), GP_ERR_PARSE, "prefix %zu: %s", n, gp_error_message());
    cr_assert(strncmp(gp_error_message(), "x.npy: ", 7) == 0, "%s", gp_error_message());
    gp_error_clear();
  }
  parse_fails(f, len - 1, GP_ERR_PARSE, "truncated .npy data: 7 bytes, expected 8");
  parse_fails(f, 20, GP_ERR_PARSE, "truncated .npy header");
  /* trailing bytes */
  char *g = gp_malloc(len + 3);
  memcpy(g, f, len);
  memset(g + len, 0, 3);
  parse_fails(g, len + 3, GP_ERR_PARSE, "3 bytes after the .npy data");
  gp_free(g);
  /* bad magic */
  char *h = gp_malloc(len);
  memcpy(h, f, len);
  h[1] = 'M';
  parse_fails(h, len, GP_ERR_PARSE, "not a .npy file (bad magic string)");
  memcpy(h, f, len);
  h[6] = 9;
  parse_fails(h, len, GP_ERR_UNSUPPORTED, "version 9.0");
  gp_free(h);
  /* random byte flips in the header: parse, or fail with a message, never crash */
  uint64_t st = 12345;
  for (int k = 0; k < 3000; k++) {
    char *x = gp_malloc(len);
    memcpy(x, f, len);
    for (int j = 0; j < 1 + k % 3; j++) {
      st = st * 6364136223846793005ull + 1442695040888963407ull;
      x[(st >> 33) % len] = (char)(st >> 20);
    }
    GPTensor *t = gp_npy_parse(x, len, "x.npy");
    if (t) {
      gp_release(t);
    } else {
      int32_t kind = gp_error_kind();
      cr_assert(kind == GP_ERR_PARSE || kind == GP_ERR_UNSUPPORTED, "kind %d: %s", kind, gp_error_message());
      cr_assert(strncmp(gp_error_message(), "x.npy: ", 7) == 0, "%s", gp_error_message());
      gp_error_clear();
    }
    gp_free(x);
  }
  gp_free(f);

  /* headers */
  static const struct {
    const char *dict;
    int32_t kind;
    const char *needle;
  } bad[] = {
      {"{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", GP_ERR_UNSUPPORTED, "big-endian dtype '>f4'"},
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", GP_ERR_UNSUPPORTED, "dtype '<c8' is not supported"},
      {"{'descr': '<u4', 'fortran_order': False, 'shape': (2,), }", GP_ERR_UNSUPPORTED, "dtype '<u4'"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", GP_ERR_UNSUPPORTED, "structured"},
      {"{'descr': '<f4', 'shape': (2,), }", GP_ERR_PARSE, "no 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False}", GP_ERR_PARSE, "no 'shape'"},
      {"{'fortran_order': False, 'shape': (2,)}", GP_ERR_PARSE, "no 'descr'"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}", GP_ERR_PARSE, "'fortran_order' is not True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1)}", GP_ERR_PARSE, "bad dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", GP_ERR_PARSE, "'shape' is not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", GP_ERR_PARSE, "unknown key 'x'"},
      {"['descr']", GP_ERR_PARSE, "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} extra", GP_ERR_PARSE, "text after the dictionary"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999)}", GP_ERR_PARSE, "too many"},
  };
  for (size_t k = 0; k < GP_ARRAY_LEN(bad); k++) {
    char *y = make_npy(1, bad[k].dict, v, sizeof v, &len);
    parse_fails(y, len, bad[k].kind, bad[k].needle);
    gp_free(y);
  }
}

Test(npy, file_errors) {
  gp_ops_init();
  cr_assert_null(gp_npy_read("/nonexistent/dir/a.npy"));
  expect_error(GP_ERR_IO, "/nonexistent/dir/a.npy: cannot open");
  GPTensor *t = gp_tensor_scalar_f64(GP_DT_F32, 1);
  cr_assert_eq(gp_npy_write("/nonexistent/dir/a.npy", t), -1);
  expect_error(GP_ERR_IO, "/nonexistent/dir/a.npy: cannot write");
  gp_release(t);
  int64_t s = 2;
  GPTensor *nd = gp_tensor_alloc(GP_DT_F32, 1, &s, false);
  char *path = tmp_path("nodata.npy");
  cr_assert_eq(gp_npy_write(path, nd), -1);
  expect_error(GP_ERR_VALUE, "has no data");
  gp_release(nd);
  GPTensor *bf = gp_tensor_alloc(GP_DT(kDLBfloat, 16), 1, &s, true);
  cr_assert_eq(gp_npy_write(path, bf), -1);
  expect_error(GP_ERR_UNSUPPORTED, "cannot write dtype bfloat16");
  gp_release(bf);
  gp_free(path);
}
