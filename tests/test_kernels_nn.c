/* test_kernels_nn.c -- the neural-network kernels (eval/k_nn.c, eval/k_conv.c) run through
 * gp_eval_op and gp_eval_call: hand-computed small cases, conv2d and dense against naive
 * references on random shapes, pooling edge cases, numerics, dtypes, strided inputs, errors. */
#include "nn_test_helpers.h"

/* ---- conv2d: a naive reference over any layouts (letters permuted) */

typedef struct ConvCase {
  int64_t N, C, H, W, O, KH, KW, G, sh, sw, dh, dw, pad[4];
  const char *dl, *kl; /* data layout (NCHW or NHWC, also the output's), kernel layout */
} ConvCase;

static void perm_shape(const char *L, const char *canon, const int64_t d[4], int64_t out[4]) {
  for (int j = 0; j < 4; j++) out[j] = d[strchr(canon, L[j]) - canon];
}

static void conv_out_hw(const ConvCase *c, int64_t *OH, int64_t *OW) {
  *OH = (c->H + c->pad[0] + c->pad[2] - (c->KH - 1) * c->dh - 1) / c->sh + 1;
  *OW = (c->W + c->pad[1] + c->pad[3] - (c->KW - 1) * c->dw - 1) / c->sw + 1;
}

/* Element strides, in the canonical letter order, of a compact tensor laid out as L (a
 * permutation of canon) with canonical extents d. */
static void perm_strides(const char *L, const char *canon, const int64_t d[4], int64_t st[4]) {
  int64_t s = 1;
  for (int j = 3; j >= 0; j--) {
    int64_t k = strchr(canon, L[j]) - canon;
    st[k] = s;
    s *= d[k];
  }
}

static double *to_doubles(const GPTensor *t) {
  int64_t n = numel(t->dl.ndim, t->dl.shape);
  double *v = malloc((size_t)(n ? n : 1) * sizeof(double));
  for (int64_t i = 0; i < n; i++) v[i] = at(t, i);
  return v;
}

/* The reference, in double (exact for the small integers of the integer cases), into out (in
 * the data layout). */
static void conv_ref(const ConvCase *c, const GPTensor *x, const GPTensor *w, double *out) {
  int64_t OH, OW;
  conv_out_hw(c, &OH, &OW);
  int64_t Ig = c->C / c->G, Og = c->O / c->G;
  const int64_t xd[4] = {c->N, c->C, c->H, c->W}, wd[4] = {c->O, Ig, c->KH, c->KW}, yd[4] = {c->N, c->O, OH, OW};
  int64_t xs[4], ws[4], ys[4];
  perm_strides(c->dl, "NCHW", xd, xs);
  perm_strides(c->kl, "OIHW", wd, ws);
  perm_strides(c->dl, "NCHW", yd, ys);
  double *xv = to_doubles(x), *wv = to_doubles(w);
  for (int64_t n = 0; n < c->N; n++)
    for (int64_t o = 0; o < c->O; o++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          double acc = 0;
          for (int64_t ci = 0; ci < Ig; ci++)
            for (int64_t kh = 0; kh < c->KH; kh++)
              for (int64_t kw = 0; kw < c->KW; kw++) {
                int64_t ih = oh * c->sh - c->pad[0] + kh * c->dh, iw = ow * c->sw - c->pad[1] + kw * c->dw;
                if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W) continue;
                int64_t ch = (o / Og) * Ig + ci;
                acc += xv[n * xs[0] + ch * xs[1] + ih * xs[2] + iw * xs[3]] *
                       wv[o * ws[0] + ci * ws[1] + kh * ws[2] + kw * ws[3]];
              }
          out[n * ys[0] + o * ys[1] + oh * ys[2] + ow * ys[3]] = acc;
        }
  free(xv);
  free(wv);
}

static void conv_attrs(const ConvCase *c, KV *kv, int32_t *nkv) {
  int32_t n = 0;
  static int64_t st[2], dl[2], pd[4];
  st[0] = c->sh, st[1] = c->sw, dl[0] = c->dh, dl[1] = c->dw;
  memcpy(pd, c->pad, sizeof pd);
  kv[n++] = KV("strides", gp_attr_ints(2, st));
  kv[n++] = KV("padding", gp_attr_ints(4, pd));
  kv[n++] = KV("dilation", gp_attr_ints(2, dl));
  kv[n++] = KV("groups", gp_attr_int(c->G));
  kv[n++] = KV("data_layout", gp_attr_str(c->dl));
  kv[n++] = KV("kernel_layout", gp_attr_str(c->kl));
  *nkv = n;
}

/* Run case c on random data of dtype dt (out_dtype odt when bits != 0) and compare with the
 * reference; returns the max abs error. */
static double conv_check(const ConvCase *c, DLDataType dt, DLDataType odt, double tol) {
  int64_t Ig = c->C / c->G;
  int64_t xs[4], ws[4];
  perm_shape(c->dl, "NCHW", DIMS(c->N, c->C, c->H, c->W), xs);
  perm_shape(c->kl, "OIHW", DIMS(c->O, Ig, c->KH, c->KW), ws);
  double scale = dt.code == kDLFloat ? 1.0 : dt.bits == 16 ? 5.0 : 100.0;
  GPTensor *x = random_tensor(dt, 4, xs, scale), *w = random_tensor(dt, 4, ws, scale);
  KV kv[8];
  int32_t nkv;
  conv_attrs(c, kv, &nkv);
  if (odt.bits) kv[nkv++] = KV("out_dtype", gp_attr_dtype(odt));
  GPTensor *y = run1("nn.conv2d", kv, nkv, INS(x, w));
  int64_t OH, OW;
  conv_out_hw(c, &OH, &OW);
  int64_t ys[4];
  perm_shape(c->dl, "NCHW", DIMS(c->N, c->O, OH, OW), ys);
  expect_shape(y, 4, ys);
  int64_t n = numel(4, ys);
  double *ref = calloc((size_t)(n ? n : 1), sizeof(double));
  conv_ref(c, x, w, ref);
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double err = fabs(at(y, i) - ref[i]);
    if (err > worst) worst = err;
    cr_assert(err <= tol * (1.0 + fabs(ref[i])),
              "conv N%lld C%lld %lldx%lld O%lld k%lldx%lld g%lld s%lld,%lld d%lld,%lld p[%lld %lld %lld %lld] %s/%s: "
              "element %lld is %.8g, want %.8g",
              (long long)c->N, (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->O, (long long)c->KH,
              (long long)c->KW, (long long)c->G, (long long)c->sh, (long long)c->sw, (long long)c->dh,
              (long long)c->dw, (long long)c->pad[0], (long long)c->pad[1], (long long)c->pad[2],
              (long long)c->pad[3], c->dl, c->kl, (long long)i, at(y, i), ref[i]);
  }
  free(ref);
  gp_release(x);
  gp_release(w);
  gp_release(y);
  return worst;
}

/* A random valid case in the given layouts; kind 0: groups 1, 1: grouped, 2: depthwise. */
static ConvCase random_case(const char *dl, const char *kl, int kind) {
  ConvCase c = {0};
  c.dl = dl, c.kl = kl;
  c.N = irand(1, 3);
  c.G = kind == 0 ? 1 : kind == 1 ? irand(2, 3) : irand(2, 5);
  int64_t Ig = kind == 2 ? 1 : irand(1, 4), Og = kind == 2 ? irand(1, 2) : irand(1, 4);
  c.C = Ig * c.G, c.O = Og * c.G;
  c.KH = irand(1, 3), c.KW = irand(1, 3);
  c.sh = irand(1, 2), c.sw = irand(1, 3);
  c.dh = irand(1, 2), c.dw = irand(1, 2);
  for (int i = 0; i < 4; i++) c.pad[i] = irand(0, 2);
  c.H = irand(1, 8), c.W = irand(1, 9);
  /* the padded input must hold the dilated window */
  while (c.H + c.pad[0] + c.pad[2] < (c.KH - 1) * c.dh + 1) c.H++;
  while (c.W + c.pad[1] + c.pad[3] < (c.KW - 1) * c.dw + 1) c.W++;
  return c;
}

/* ---- conv2d: hand-computed */

Test(kernels_nn, conv2d_hand_nchw) {
  GPTensor *x = T32(DIMS(1, 1, 3, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9));
  GPTensor *w = T32(DIMS(1, 1, 2, 2), VALS(1, 1, 1, 1));
  GPTensor *y = run1("nn.conv2d", NOKV, INS(x, w));
  EXPECT_SHAPE(y, 1, 1, 2, 2);
  EXPECT_VALS(y, 0, 12, 16, 24, 28);
  gp_release(y);
  /* padding 1, stride 2: windows at (-1,-1), (-1,1), (1,-1), (1,1) */
  y = run1("nn.conv2d", KVS(KV("padding", INTS(1)), KV("strides", INTS(2, 2))), INS(x, w));
  EXPECT_SHAPE(y, 1, 1, 2, 2);
  EXPECT_VALS(y, 0, 1, 2 + 3, 4 + 7, 5 + 6 + 8 + 9);
  gp_release(y);
  /* two output channels, weight [[1,0],[0,-1]] and [[0,2],[0,0]] */
  GPTensor *w2 = T32(DIMS(2, 1, 2, 2), VALS(1, 0, 0, -1, 0, 2, 0, 0));
  y = run1("nn.conv2d", NOKV, INS(x, w2));
  EXPECT_SHAPE(y, 1, 2, 2, 2);
  EXPECT_VALS(y, 0, 1 - 5, 2 - 6, 4 - 8, 5 - 9, 4, 6, 10, 12);
  release_all((GPTensor *[]){x, w, w2, y}, 4);
}

Test(kernels_nn, conv2d_hand_nhwc_dilation_groups) {
  /* NHWC 1x3x3x2 with channel 1 = 10 * channel 0; depthwise 2x2 kernel of ones, dilation 2 */
  double v[18];
  for (int i = 0; i < 9; i++) v[2 * i] = i + 1, v[2 * i + 1] = 10 * (i + 1);
  GPTensor *x = T32(DIMS(1, 3, 3, 2), v);
  GPTensor *w = T32(DIMS(2, 2, 1, 2), VALS(1, 1, 1, 1, 1, 1, 1, 1)); /* HWIO, I = 1 */
  GPTensor *y = run1("nn.conv2d",
                     KVS(KV("dilation", INTS(2)), KV("groups", gp_attr_int(2)), KV("data_layout", gp_attr_str("NHWC")),
                         KV("kernel_layout", gp_attr_str("HWIO"))),
                     INS(x, w));
  EXPECT_SHAPE(y, 1, 1, 1, 2);
  EXPECT_VALS(y, 0, 1 + 3 + 7 + 9, 200);
  release_all((GPTensor *[]){x, w, y}, 3);
}

/* ---- conv2d: GEMM/direct paths against the reference */

Test(kernels_nn, conv2d_random_vs_reference) {
  static const char *const layouts[][2] = {{"NCHW", "OIHW"}, {"NHWC", "HWIO"}, {"NHWC", "OHWI"},
                                           {"NCHW", "HWIO"}, {"NHWC", "IOHW"}, {"NCHW", "IHWO"}};
  rng_state = 12345;
  int cases = 0;
  for (size_t l = 0; l < GP_ARRAY_LEN(layouts); l++)
    for (int kind = 0; kind < 3; kind++)
      for (int r = 0; r < 6; r++) {
        ConvCase c = random_case(layouts[l][0], layouts[l][1], kind);
        conv_check(&c, GP_DT_F32, (DLDataType){0, 0, 0}, 1e-4);
        cases++;
      }
  cr_assert_eq(cases, 108);
}

Test(kernels_nn, conv2d_paths_fixed_shapes) {
  /* one of each path, in both layouts: 1x1 direct (and with bottom padding, not direct), 3x3
   * pad 1, stride 2, dilation 2, 7x7 stem-like, grouped, depthwise with multiplier 2, batch 3 */
  static const ConvCase base[] = {
      {2, 8, 5, 6, 4, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL, NULL},
      {2, 8, 5, 6, 4, 1, 1, 1, 1, 1, 1, 1, {0, 0, 1, 1}, NULL, NULL},
      {1, 6, 7, 7, 5, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, NULL, NULL},
      {3, 4, 9, 8, 6, 3, 3, 1, 2, 2, 1, 1, {1, 1, 1, 1}, NULL, NULL},
      {1, 4, 9, 9, 3, 3, 3, 1, 1, 1, 2, 2, {2, 2, 2, 2}, NULL, NULL},
      {1, 3, 15, 15, 4, 7, 7, 1, 2, 2, 1, 1, {3, 3, 3, 3}, NULL, NULL},
      {2, 1, 4, 4, 2, 1, 1, 1, 2, 2, 1, 1, {0, 0, 0, 0}, NULL, NULL},
      {2, 6, 6, 6, 9, 3, 3, 3, 1, 1, 1, 1, {1, 0, 1, 2}, NULL, NULL},
      {2, 5, 6, 7, 10, 3, 3, 5, 2, 1, 1, 2, {1, 1, 0, 1}, NULL, NULL},
      {3, 4, 5, 5, 4, 3, 3, 4, 1, 1, 1, 1, {1, 1, 1, 1}, NULL, NULL},
  };
  static const char *const layouts[][2] = {{"NCHW", "OIHW"}, {"NHWC", "HWIO"}, {"NHWC", "OHWI"}};
  for (size_t i = 0; i < GP_ARRAY_LEN(base); i++)
    for (size_t l = 0; l < GP_ARRAY_LEN(layouts); l++) {
      ConvCase c = base[i];
      c.dl = layouts[l][0], c.kl = layouts[l][1];
      conv_check(&c, GP_DT_F32, (DLDataType){0, 0, 0}, 1e-4);
    }
}

Test(kernels_nn, conv2d_large_spatial_paths) {
  /* output planes of >= 256 positions take the threaded paths: cache-sized im2col blocks (with a
   * remainder block), the phase split of strided rows, 1x1 GEMMs split over the threads */
  rng_state = 2024;
  static const ConvCase cases[] = {
      {1, 64, 32, 32, 3, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, "NCHW", "OIHW"},
      {1, 64, 32, 32, 3, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, "NHWC", "HWIO"},
      {1, 64, 32, 32, 3, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, "NHWC", "OHWI"},
      {2, 3, 40, 38, 4, 7, 7, 1, 2, 2, 1, 1, {3, 3, 3, 2}, "NCHW", "OIHW"},
      {2, 3, 40, 38, 4, 7, 7, 1, 2, 2, 1, 1, {3, 3, 3, 2}, "NHWC", "HWIO"},
      {2, 8, 18, 18, 6, 3, 3, 2, 1, 1, 2, 2, {2, 1, 2, 1}, "NCHW", "OIHW"},
      {2, 8, 18, 18, 6, 3, 3, 2, 1, 1, 2, 2, {2, 1, 2, 1}, "NHWC", "OHWI"},
      {1, 4, 30, 100, 5, 3, 5, 1, 1, 3, 1, 2, {1, 2, 1, 0}, "NCHW", "OIHW"},
      {1, 4, 9, 31, 5, 3, 3, 1, 1, 3, 1, 1, {1, 1, 1, 1}, "NCHW", "OIHW"},
      {1, 16, 14, 14, 8, 1, 1, 1, 2, 2, 1, 1, {0, 0, 0, 0}, "NCHW", "OIHW"},
      {4, 8, 16, 16, 6, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, "NCHW", "OIHW"},
      {1, 64, 20, 20, 48, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, "NCHW", "OIHW"},
      {1, 64, 20, 20, 48, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, "NHWC", "HWIO"},
      {1, 64, 20, 20, 48, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, "NHWC", "OHWI"},
      /* 1x1 GEMMs of >= 2^24 multiply-adds are split over the threads (columns, rows) */
      {1, 72, 64, 64, 64, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, "NCHW", "OIHW"},
      {1, 72, 64, 64, 64, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, "NHWC", "HWIO"},
  };
  for (size_t i = 0; i < GP_ARRAY_LEN(cases); i++) conv_check(&cases[i], GP_DT_F32, (DLDataType){0, 0, 0}, 1e-4);
  /* float64 through the blocked and phase-split paths */
  ConvCase d = {1, 8, 34, 34, 4, 3, 3, 1, 2, 2, 1, 1, {1, 1, 1, 1}, "NCHW", "OIHW"};
  conv_check(&d, GP_DT_F64, (DLDataType){0, 0, 0}, 1e-12);
  d.dl = "NHWC", d.kl = "HWIO";
  conv_check(&d, GP_DT_F64, (DLDataType){0, 0, 0}, 1e-12);
}

Test(kernels_nn, conv2d_float64_tight) {
  rng_state = 777;
  ConvCase c = {2, 6, 7, 6, 4, 3, 3, 2, 2, 1, 1, 2, {1, 2, 0, 1}, "NCHW", "OIHW"};
  double e = conv_check(&c, GP_DT_F64, (DLDataType){0, 0, 0}, 1e-12);
  c.dl = "NHWC", c.kl = "HWIO";
  e += conv_check(&c, GP_DT_F64, (DLDataType){0, 0, 0}, 1e-12);
  cr_assert(e < 1e-12, "float64 error %g", e);
  /* float32 inputs with out_dtype float64 compute in double */
  c.dl = "NCHW", c.kl = "OIHW";
  conv_check(&c, GP_DT_F32, GP_DT_F64, 1e-12);
}

Test(kernels_nn, conv2d_int8_to_int32) {
  rng_state = 99;
  ConvCase cases[] = {
      {2, 4, 5, 5, 3, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, "NCHW", "OIHW"},
      {1, 6, 6, 5, 4, 2, 3, 2, 2, 1, 1, 2, {0, 1, 2, 0}, "NHWC", "HWIO"},
      {1, 3, 4, 4, 3, 3, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, "NCHW", "OIHW"},
  };
  for (size_t i = 0; i < GP_ARRAY_LEN(cases); i++) conv_check(&cases[i], GP_DT_I8, GP_DT_I32, 0);
  /* int16 and int32 without out_dtype: exact while the values fit */
  conv_check(&cases[0], GP_DT_I16, (DLDataType){0, 0, 0}, 0);
  conv_check(&cases[1], GP_DT_I32, (DLDataType){0, 0, 0}, 0);
}

Test(kernels_nn, conv2d_int8_wraps) {
  /* 100*2 + 100*2 = 400 wraps to 400 - 512 = -112 in int8; exact in int32 */
  GPTensor *x = tensor(GP_DT_I8, 4, DIMS(1, 2, 1, 1), VALS(100, 100));
  GPTensor *w = tensor(GP_DT_I8, 4, DIMS(1, 2, 1, 1), VALS(2, 2));
  GPTensor *y = run1("nn.conv2d", NOKV, INS(x, w));
  cr_assert_eq(y->dl.dtype.bits, 8);
  EXPECT_VALS(y, 0, -112);
  gp_release(y);
  y = run1("nn.conv2d", KVS(KV("out_dtype", gp_attr_dtype(GP_DT_I32))), INS(x, w));
  cr_assert_eq(y->dl.dtype.bits, 32);
  EXPECT_VALS(y, 0, 400);
  /* int32 overflow wraps without UB */
  GPTensor *x32 = tensor(GP_DT_I32, 4, DIMS(1, 2, 1, 1), VALS(2147483647, 1));
  GPTensor *w32 = tensor(GP_DT_I32, 4, DIMS(1, 2, 1, 1), VALS(1, 1));
  GPTensor *y32 = run1("nn.conv2d", NOKV, INS(x32, w32));
  EXPECT_VALS(y32, 0, -2147483648.0);
  release_all((GPTensor *[]){x, w, y, x32, w32, y32}, 6);
}

Test(kernels_nn, conv2d_float16) {
  rng_state = 4242;
  ConvCase c = {2, 4, 6, 6, 3, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, "NCHW", "OIHW"};
  /* 36-term sums of values in [-1, 1): float16 keeps about 3 decimal digits */
  conv_check(&c, GP_DT_F16, (DLDataType){0, 0, 0}, 4e-3);
  c.dl = "NHWC", c.kl = "HWIO";
  conv_check(&c, GP_DT_F16, (DLDataType){0, 0, 0}, 4e-3);
  /* out_dtype float32: no rounding to half on store */
  c.dl = "NCHW", c.kl = "OIHW";
  conv_check(&c, GP_DT_F16, GP_DT_F32, 1e-5);
  /* hand: exact halves */
  GPTensor *x = tensor(GP_DT_F16, 4, DIMS(1, 1, 2, 2), VALS(0.5, 1.5, -2, 4));
  GPTensor *w = tensor(GP_DT_F16, 4, DIMS(1, 1, 2, 2), VALS(2, 1, 0.25, 1));
  GPTensor *y = run1("nn.conv2d", NOKV, INS(x, w));
  cr_assert_eq(y->dl.dtype.bits, 16);
  EXPECT_VALS(y, 0, 1 + 1.5 - 0.5 + 4);
  release_all((GPTensor *[]){x, w, y}, 3);
}

Test(kernels_nn, conv2d_strided_inputs) {
  /* NCHW data as a transposed view of an NHWC buffer with a byte offset; the weight as a view
   * with a gap between output channels; result equal to the compact run */
  rng_state = 5;
  const int64_t N = 2, C = 3, H = 5, W = 4, O = 4;
  GPTensor *xc = random_tensor(GP_DT_F32, 4, DIMS(N, C, H, W), 1.0);
  GPTensor *wc = random_tensor(GP_DT_F32, 4, DIMS(O, C, 3, 3), 1.0);
  int64_t off = 3, nx = N * H * W * C;
  float *buf = calloc((size_t)(off + nx), sizeof(float));
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t h = 0; h < H; h++)
        for (int64_t w = 0; w < W; w++)
          buf[off + ((n * H + h) * W + w) * C + c] = (float)at(xc, ((n * C + c) * H + h) * W + w);
  GPTensor *xv = make_view(GP_DT_F32, 4, DIMS(N, C, H, W), DIMS(H * W * C, 1, W * C, C), (uint64_t)off * 4, buf,
                           (size_t)(off + nx) * sizeof(float));
  int64_t ostride = C * 9 + 5; /* 5 floats of gap after each output channel */
  size_t wbytes = (size_t)((O - 1) * ostride + C * 9) * sizeof(float);
  float *wbuf = calloc(1, wbytes);
  for (int64_t o = 0; o < O; o++)
    for (int64_t i = 0; i < C * 9; i++) wbuf[o * ostride + i] = (float)at(wc, o * C * 9 + i);
  GPTensor *wv = make_view(GP_DT_F32, 4, DIMS(O, C, 3, 3), DIMS(ostride, 9, 3, 1), 0, wbuf, wbytes);
  cr_assert(!gp_tensor_is_compact(xv) && !gp_tensor_is_compact(wv));
  KV kv[] = {KV("padding", INTS(1, 0)), KV("strides", INTS(1, 2))};
  GPTensor *want = run1("nn.conv2d", kv, 2, INS(xc, wc));
  GPTensor *got = run1("nn.conv2d", kv, 2, INS(xv, wv));
  expect_same(got, want, 1e-6, 1e-6, "strided conv2d");
  free(buf);
  free(wbuf);
  release_all((GPTensor *[]){xc, wc, xv, wv, want, got}, 6);
}

Test(kernels_nn, conv2d_empty_batch_and_one_thread) {
  GPTensor *x = tensor(GP_DT_F32, 4, DIMS(0, 2, 4, 4), NULL);
  GPTensor *w = T32(DIMS(3, 2, 3, 3), NULL);
  GPTensor *y = run1("nn.conv2d", KVS(KV("padding", INTS(1))), INS(x, w));
  EXPECT_SHAPE(y, 0, 3, 4, 4);
  release_all((GPTensor *[]){x, w, y}, 3);
  /* one thread gives the same result as two */
  rng_state = 8;
  GPTensor *a = random_tensor(GP_DT_F32, 4, DIMS(2, 4, 9, 9), 1), *b = random_tensor(GP_DT_F32, 4, DIMS(5, 4, 3, 3), 1);
  GPTensor *o1[4], *o2[4];
  int32_t n1, n2;
  cr_assert_eq(run_op("nn.conv2d", NOKV, INS(a, b), 1, o1, &n1), 0);
  cr_assert_eq(run_op("nn.conv2d", NOKV, INS(a, b), 2, o2, &n2), 0);
  expect_same(o1[0], o2[0], 1e-6, 1e-6, "threads");
  release_all((GPTensor *[]){a, b, o1[0], o2[0]}, 4);
}

Test(kernels_nn, conv2d_unsupported) {
  GPTensor *x = T32(DIMS(1, 1, 2, 2, 4), NULL); /* NCHW4c: a blocked layout */
  GPTensor *w4 = T32(DIMS(4, 4, 1, 1), NULL), *w = T32(DIMS(4, 3, 1, 1), NULL);
  GPTensor *outs[4];
  int32_t nout;
  int rc = run_op("nn.conv2d", KVS(KV("data_layout", gp_attr_str("NCHW4c"))), INS(x, w4), 2, outs, &nout);
  cr_assert_eq(rc, -1);
  expect_error(GP_ERR_UNSUPPORTED, "NCHW4c");
  /* mixed integer data and float weight */
  GPTensor *xi = tensor(GP_DT_I8, 4, DIMS(1, 3, 2, 2), NULL);
  rc = run_op("nn.conv2d", NOKV, INS(xi, w), 2, outs, &nout);
  cr_assert_eq(rc, -1);
  expect_error(GP_ERR_UNSUPPORTED, "int8");
  /* bool */
  GPTensor *xb = tensor(GP_DT_BOOL, 4, DIMS(1, 3, 2, 2), NULL), *wb = tensor(GP_DT_BOOL, 4, DIMS(4, 3, 1, 1), NULL);
  rc = run_op("nn.conv2d", NOKV, INS(xb, wb), 2, outs, &nout);
  cr_assert_eq(rc, -1);
  expect_error(GP_ERR_UNSUPPORTED, "bool");
  release_all((GPTensor *[]){x, w4, w, xi, xb, wb}, 6);
}

/* Any permutation of NCHW computes what NCHW does: HWCN data, an NCHW result from NHWC data. */
Test(kernels_nn, conv2d_other_permutations) {
  GPTensor *x = T32(DIMS(1, 2, 2, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)); /* NCHW */
  GPTensor *w = T32(DIMS(2, 2, 1, 2), VALS(1, -1, 2, 0, 0, 1, 1, 1));
  GPTensor *want = run1("nn.conv2d", NOKV, INS(x, w));
  EXPECT_SHAPE(want, 1, 2, 2, 2);
  /* x as HWCN (2, 3, 2, 1) and NHWC (1, 2, 3, 2) */
  GPTensor *hwcn = T32(DIMS(2, 3, 2, 1), VALS(1, 7, 2, 8, 3, 9, 4, 10, 5, 11, 6, 12));
  GPTensor *nhwc = T32(DIMS(1, 2, 3, 2), VALS(1, 7, 2, 8, 3, 9, 4, 10, 5, 11, 6, 12));
  GPTensor *y = run1("nn.conv2d", KVS(KV("data_layout", gp_attr_str("HWCN"))), INS(hwcn, w));
  EXPECT_SHAPE(y, 2, 2, 2, 1); /* HWCN: y[h][w][o] = want[o][h][w] */
  for (int64_t o = 0; o < 2; o++)
    for (int64_t p = 0; p < 4; p++) cr_expect_eq(at(y, p * 2 + o), at(want, o * 4 + p));
  gp_release(y);
  y = run1("nn.conv2d", KVS(KV("data_layout", gp_attr_str("NHWC")), KV("out_layout", gp_attr_str("NCHW"))),
           INS(nhwc, w));
  EXPECT_SHAPE(y, 1, 2, 2, 2);
  for (int64_t i = 0; i < 8; i++) cr_expect_eq(at(y, i), at(want, i));
  release_all((GPTensor *[]){x, w, want, hwcn, nhwc, y}, 6);
}

Test(kernels_nn, conv2d_through_eval_call) {
  GPTensor *x = T32(DIMS(1, 1, 2, 2), VALS(1, 2, 3, 4));
  GPTensor *w = T32(DIMS(1, 1, 1, 1), VALS(3));
  GPConstant *cx = gp_constant_new(x), *cw = gp_constant_new(w);
  const GPOp *op = gp_op_get("nn.conv2d");
  GPExpr *args[2] = {&cx->base, &cw->base};
  GPAttrs *attrs = make_attrs(op, NULL, 0);
  GPCall *call = gp_call_new((GPExpr *)op, 2, args, attrs);
  cr_assert(call, "%s", gp_error_message());
  gp_release(attrs);
  GPExpr *r = gp_eval_call(call);
  cr_assert(r, "eval_call: %s", gp_error_message());
  cr_assert_eq(gp_kind(r), GP_TI_CONSTANT);
  GPTensor *y = GP_AS(GPConstant, r)->data;
  EXPECT_VALS(y, 0, 3, 6, 9, 12);
  gp_release(r);
  gp_release(call);
  release_all((GPTensor *[]){x, w}, 2);
  gp_release(cx);
  gp_release(cw);
}

/* ---- dense */

static void dense_ref(const GPTensor *x, const GPTensor *w, double *out, int64_t M, int64_t N, int64_t K) {
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      double s = 0;
      for (int64_t k = 0; k < K; k++) s += at(x, m * K + k) * at(w, n * K + k);
      out[m * N + n] = s;
    }
}

Test(kernels_nn, dense_hand_and_units) {
  GPTensor *x = T32(DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  GPTensor *w = T32(DIMS(2, 3), VALS(1, 0, -1, 2, 1, 0));
  GPTensor *y = run1("nn.dense", KVS(KV("units", gp_attr_int(2))), INS(x, w));
  EXPECT_SHAPE(y, 2, 2);
  EXPECT_VALS(y, 0, -2, 4, -2, 13);
  release_all((GPTensor *[]){x, w, y}, 3);
}

Test(kernels_nn, dense_random_batched_f64_f16) {
  rng_state = 31;
  const int64_t K = 37, N = 11;
  GPTensor *x = random_tensor(GP_DT_F32, 3, DIMS(2, 3, K), 1), *w = random_tensor(GP_DT_F32, 2, DIMS(N, K), 1);
  GPTensor *y = run1("nn.dense", NOKV, INS(x, w));
  EXPECT_SHAPE(y, 2, 3, N);
  double ref[6 * 11];
  dense_ref(x, w, ref, 6, N, K);
  expect_vals(y, ref, 6 * N, 1e-5, __LINE__);
  gp_release(y);
  /* float64, and float16 computed in float32 */
  GPTensor *xd = random_tensor(GP_DT_F64, 2, DIMS(4, K), 1), *wd = random_tensor(GP_DT_F64, 2, DIMS(N, K), 1);
  y = run1("nn.dense", NOKV, INS(xd, wd));
  dense_ref(xd, wd, ref, 4, N, K);
  expect_vals(y, ref, 4 * N, 1e-13, __LINE__);
  gp_release(y);
  GPTensor *xh = random_tensor(GP_DT_F16, 2, DIMS(4, K), 1), *wh = random_tensor(GP_DT_F16, 2, DIMS(N, K), 1);
  y = run1("nn.dense", NOKV, INS(xh, wh));
  cr_assert_eq(y->dl.dtype.bits, 16);
  dense_ref(xh, wh, ref, 4, N, K);
  expect_vals(y, ref, 4 * N, 4e-3, __LINE__);
  release_all((GPTensor *[]){x, w, xd, wd, xh, wh, y}, 7);
}

Test(kernels_nn, dense_int8_and_strided_weight_and_empty) {
  GPTensor *x = tensor(GP_DT_I8, 2, DIMS(1, 3), VALS(127, -128, 5));
  GPTensor *w = tensor(GP_DT_I8, 2, DIMS(2, 3), VALS(127, 127, 1, -1, 2, 3));
  GPTensor *y = run1("nn.dense", KVS(KV("out_dtype", gp_attr_dtype(GP_DT_I32))), INS(x, w));
  EXPECT_VALS(y, 0, 127 * 127 - 128 * 127 + 5, -127 - 256 + 15);
  gp_release(y);
  /* weight rows 5 apart (ldb in place) and a transposed weight view (copied) */
  rng_state = 3;
  GPTensor *xf = random_tensor(GP_DT_F32, 2, DIMS(3, 4), 1), *wc = random_tensor(GP_DT_F32, 2, DIMS(2, 4), 1);
  float rows[2 * 5 - 1], cols[8];
  for (int n = 0; n < 2; n++)
    for (int k = 0; k < 4; k++) rows[n * 5 + k] = cols[k * 2 + n] = (float)at(wc, n * 4 + k);
  rows[4] = 1e30f;
  GPTensor *wr = make_view(GP_DT_F32, 2, DIMS(2, 4), DIMS(5, 1), 0, rows, sizeof rows);
  GPTensor *wt = make_view(GP_DT_F32, 2, DIMS(2, 4), DIMS(1, 2), 0, cols, sizeof cols);
  GPTensor *want = run1("nn.dense", NOKV, INS(xf, wc));
  GPTensor *g1 = run1("nn.dense", NOKV, INS(xf, wr)), *g2 = run1("nn.dense", NOKV, INS(xf, wt));
  expect_same(g1, want, 1e-6, 1e-6, "row-strided weight");
  expect_same(g2, want, 1e-6, 1e-6, "transposed weight");
  /* empty batch */
  GPTensor *x0 = tensor(GP_DT_F32, 2, DIMS(0, 4), NULL);
  GPTensor *y0 = run1("nn.dense", NOKV, INS(x0, wc));
  EXPECT_SHAPE(y0, 0, 2);
  release_all((GPTensor *[]){x, w, xf, wc, wr, wt, want, g1, g2, x0, y0}, 11);
}

/* ---- bias_add, batch_norm, dropout */

Test(kernels_nn, bias_add_axes_and_ints) {
  GPTensor *x = T32(DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  GPTensor *b3 = T32(DIMS(3), VALS(10, 20, 30)), *b2 = T32(DIMS(2), VALS(100, 200));
  GPTensor *y = run1("nn.bias_add", KVS(KV("axis", gp_attr_int(-1))), INS(x, b3));
  EXPECT_VALS(y, 0, 11, 22, 33, 14, 25, 36);
  gp_release(y);
  y = run1("nn.bias_add", KVS(KV("axis", gp_attr_int(0))), INS(x, b2));
  EXPECT_VALS(y, 0, 101, 102, 103, 204, 205, 206);
  gp_release(y);
  GPTensor *xi = tensor(GP_DT_I32, 2, DIMS(1, 2), VALS(2147483647, -5));
  GPTensor *bi = tensor(GP_DT_I32, 1, DIMS(2), VALS(1, 3));
  y = run1("nn.bias_add", NOKV, INS(xi, bi));
  EXPECT_VALS(y, 0, -2147483648.0, -2);
  release_all((GPTensor *[]){x, b3, b2, xi, bi, y}, 6);
}

static GPTensor *bn_outs[3];

static void run_bn(const KV *kv, int32_t nkv, GPTensor *x) {
  GPTensor *g = T32(DIMS(2), VALS(2, 0.5)), *b = T32(DIMS(2), VALS(1, -1)), *m = T32(DIMS(2), VALS(1, 2)),
           *v = T32(DIMS(2), VALS(3, 0));
  int32_t nout;
  int rc = run_op("nn.batch_norm", kv, nkv, INS(x, g, b, m, v), 2, bn_outs, &nout);
  cr_assert_eq(rc, 0, "%s", gp_error_message());
  cr_assert_eq(nout, 3);
  EXPECT_VALS(bn_outs[1], 0, 1, 2);
  EXPECT_VALS(bn_outs[2], 0, 3, 0);
  release_all((GPTensor *[]){g, b, m, v, bn_outs[1], bn_outs[2]}, 6);
}

Test(kernels_nn, batch_norm_inference) {
  GPTensor *x = T32(DIMS(1, 2, 1, 2), VALS(1, 2, 3, 4));
  run_bn(KVS(KV("epsilon", gp_attr_float(1))), x);
  EXPECT_VALS(bn_outs[0], 1e-6, 1, 2, -0.5, 0);
  gp_release(bn_outs[0]);
  run_bn(KVS(KV("epsilon", gp_attr_float(1)), KV("center", gp_attr_bool(false))), x);
  EXPECT_VALS(bn_outs[0], 1e-6, 0, 1, 0.5, 1);
  gp_release(bn_outs[0]);
  run_bn(KVS(KV("epsilon", gp_attr_float(1)), KV("scale", gp_attr_bool(false))), x);
  EXPECT_VALS(bn_outs[0], 1e-6, 1, 1.5, 0, 1);
  gp_release(bn_outs[0]);
  /* channels last (axis -1) */
  GPTensor *xl = T32(DIMS(1, 2, 2), VALS(1, 3, 2, 4));
  run_bn(KVS(KV("epsilon", gp_attr_float(1)), KV("axis", gp_attr_int(-1))), xl);
  EXPECT_VALS(bn_outs[0], 1e-6, 1, -0.5, 2, 0);
  gp_release(bn_outs[0]);
  /* integers are refused */
  GPTensor *xi = tensor(GP_DT_I32, 2, DIMS(1, 2), NULL), *vi = tensor(GP_DT_I32, 1, DIMS(2), NULL);
  GPTensor *outs[4];
  int32_t nout;
  cr_assert_eq(run_op("nn.batch_norm", NOKV, INS(xi, vi, vi, vi, vi), 2, outs, &nout), -1);
  expect_error(GP_ERR_UNSUPPORTED, "int32");
  release_all((GPTensor *[]){x, xl, xi, vi}, 4);
}

Test(kernels_nn, dropout_inference) {
  GPTensor *x = T32(DIMS(5), VALS(1, -2, 3, 0, 5));
  GPTensor *outs[4];
  int32_t nout;
  cr_assert_eq(run_op("nn.dropout", KVS(KV("rate", gp_attr_float(0.3))), INS(x), 2, outs, &nout), 0);
  cr_assert_eq(nout, 2);
  EXPECT_VALS(outs[0], 0, 1, -2, 3, 0, 5);
  EXPECT_VALS(outs[1], 0, 1, 1, 1, 1, 1);
  release_all((GPTensor *[]){x, outs[0], outs[1]}, 3);
}

/* ---- pools */

static double seq[25] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13,
                         14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25};

Test(kernels_nn, max_pool2d_hand_padding_ceil) {
  GPTensor *x = T32(DIMS(1, 1, 4, 4), seq);
  GPTensor *y = run1("nn.max_pool2d", KVS(KV("pool_size", INTS(2, 2)), KV("strides", INTS(2, 2))), INS(x));
  EXPECT_SHAPE(y, 1, 1, 2, 2);
  EXPECT_VALS(y, 0, 6, 8, 14, 16);
  gp_release(y);
  /* all negative: padded cells are never the max */
  double neg[16];
  for (int i = 0; i < 16; i++) neg[i] = -(i + 1);
  GPTensor *xn = T32(DIMS(1, 1, 4, 4), neg);
  y = run1("nn.max_pool2d", KVS(KV("pool_size", INTS(3)), KV("padding", INTS(1))), INS(xn));
  EXPECT_SHAPE(y, 1, 1, 4, 4);
  EXPECT_VALS(y, 0, -1, -1, -2, -3, -1, -1, -2, -3, -5, -5, -6, -7, -9, -9, -10, -11);
  gp_release(y);
  /* ceil_mode: 5x5, pool 2, stride 2 -> 3x3; the last window holds only row/column 4 */
  double neg25[25];
  for (int i = 0; i < 25; i++) neg25[i] = -(i + 1);
  GPTensor *x5 = T32(DIMS(1, 1, 5, 5), neg25);
  KV kv[] = {KV("pool_size", INTS(2)), KV("strides", INTS(2)), KV("ceil_mode", gp_attr_bool(true))};
  y = run1("nn.max_pool2d", kv, 3, INS(x5));
  EXPECT_SHAPE(y, 1, 1, 3, 3);
  EXPECT_VALS(y, 0, -1, -3, -5, -11, -13, -15, -21, -23, -25);
  gp_release(y);
  kv[2] = KV("ceil_mode", gp_attr_bool(false));
  y = run1("nn.max_pool2d", kv, 3, INS(x5));
  EXPECT_SHAPE(y, 1, 1, 2, 2);
  gp_release(y);
  /* dilation 2: taps 0 and 2 */
  y = run1("nn.max_pool2d", KVS(KV("pool_size", INTS(2)), KV("dilation", INTS(2))), INS(x));
  EXPECT_SHAPE(y, 1, 1, 2, 2);
  EXPECT_VALS(y, 0, 11, 12, 15, 16);
  release_all((GPTensor *[]){x, xn, x5, y}, 4);
}

Test(kernels_nn, max_pool2d_window_of_padding_only_and_ints) {
  /* ceil_mode with stride 3 and pool 1 over 4: the window at 6 is all padding -> -inf (TVM
   * pads with the dtype's lowest value); int8 gives -128 there */
  GPTensor *x = T32(DIMS(1, 1, 1, 4), VALS(1, 2, 3, 4));
  KV kv[] = {KV("pool_size", INTS(1)), KV("strides", INTS(3)), KV("ceil_mode", gp_attr_bool(true)),
             KV("padding", INTS(0, 0, 0, 3))};
  GPTensor *y = run1("nn.max_pool2d", kv, 4, INS(x));
  EXPECT_SHAPE(y, 1, 1, 1, 3);
  cr_assert(at(y, 0) == 1 && at(y, 1) == 4 && isinf(at(y, 2)) && at(y, 2) < 0);
  gp_release(y);
  GPTensor *xi = tensor(GP_DT_I8, 4, DIMS(1, 1, 1, 4), VALS(-3, 7, -100, 5));
  y = run1("nn.max_pool2d", kv, 4, INS(xi));
  EXPECT_VALS(y, 0, -3, 5, -128);
  release_all((GPTensor *[]){x, xi, y}, 3);
}

Test(kernels_nn, avg_pool2d_count_include_pad_and_ceil) {
  GPTensor *x = T32(DIMS(1, 1, 3, 3), seq);
  KV kv[] = {KV("pool_size", INTS(2)), KV("padding", INTS(1)), KV("count_include_pad", gp_attr_bool(false))};
  GPTensor *y = run1("nn.avg_pool2d", kv, 3, INS(x));
  EXPECT_SHAPE(y, 1, 1, 4, 4);
  EXPECT_VALS(y, 1e-6, 1, 1.5, 2.5, 3, 2.5, 3, 4, 4.5, 5.5, 6, 7, 7.5, 7, 7.5, 8.5, 9);
  gp_release(y);
  kv[2] = KV("count_include_pad", gp_attr_bool(true));
  y = run1("nn.avg_pool2d", kv, 3, INS(x));
  EXPECT_VALS(y, 1e-6, 0.25, 0.75, 1.25, 0.75, 1.25, 3, 4, 2.25, 2.75, 6, 7, 3.75, 1.75, 3.75, 4.25, 2.25);
  gp_release(y);
  /* ceil_mode: 5x5, pool 2, stride 2, padding 1 -> 4x4.  With count_include_pad the divisor
   * counts the real padding but not ceil_mode's extra (TVM): the last row's windows cover
   * padded row 5 and the extra row 6 -> divisor 1 (x 2 columns) and sum 0. */
  GPTensor *x5 = T32(DIMS(1, 1, 5, 5), seq);
  KV kc[] = {KV("pool_size", INTS(2)), KV("strides", INTS(2)), KV("padding", INTS(1)),
             KV("ceil_mode", gp_attr_bool(true)), KV("count_include_pad", gp_attr_bool(true))};
  y = run1("nn.avg_pool2d", kc, 5, INS(x5));
  EXPECT_SHAPE(y, 1, 1, 4, 4);
  EXPECT_VALS(y, 1e-6, 1 / 4.0, (2 + 3) / 4.0, (4 + 5) / 4.0, 0, (6 + 11) / 4.0, (7 + 8 + 12 + 13) / 4.0,
              (9 + 10 + 14 + 15) / 4.0, 0, (16 + 21) / 4.0, (17 + 18 + 22 + 23) / 4.0, (19 + 20 + 24 + 25) / 4.0, 0,
              0, 0, 0, 0);
  gp_release(y);
  kc[4] = KV("count_include_pad", gp_attr_bool(false));
  y = run1("nn.avg_pool2d", kc, 5, INS(x5));
  EXPECT_VALS(y, 1e-6, 1, 2.5, 4.5, 0, 8.5, 10, 12, 0, 18.5, 20, 22, 0, 0, 0, 0, 0);
  gp_release(y);
  /* ceil_mode without padding: the corner window holds x[4][4] only, divisor 1 either way */
  KV kd[] = {KV("pool_size", INTS(2)), KV("strides", INTS(2)), KV("ceil_mode", gp_attr_bool(true)),
             KV("count_include_pad", gp_attr_bool(true))};
  y = run1("nn.avg_pool2d", kd, 4, INS(x5));
  EXPECT_SHAPE(y, 1, 1, 3, 3);
  EXPECT_VALS(y, 1e-6, 4, 6, 7.5, 14, 16, 17.5, 21.5, 23.5, 25);
  release_all((GPTensor *[]){x, x5, y}, 3);
}

Test(kernels_nn, pools_nhwc_equal_nchw) {
  rng_state = 77;
  const int64_t N = 2, C = 3, H = 7, W = 6;
  GPTensor *xc = random_tensor(GP_DT_F32, 4, DIMS(N, C, H, W), 1);
  double *v = malloc(sizeof(double) * (size_t)(N * C * H * W));
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t h = 0; h < H; h++)
        for (int64_t w = 0; w < W; w++) v[((n * H + h) * W + w) * C + c] = at(xc, ((n * C + c) * H + h) * W + w);
  GPTensor *xl = T32(DIMS(N, H, W, C), v);
  free(v);
  static const char *const ops[] = {"nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d"};
  for (int i = 0; i < 3; i++) {
    KV kv[] = {KV("layout", gp_attr_str("NCHW")), KV("pool_size", INTS(3, 2)), KV("strides", INTS(2, 1)),
               KV("padding", INTS(1, 0, 2, 1)), KV("ceil_mode", gp_attr_bool(true))};
    int32_t nkv = i == 2 ? 1 : 5;
    GPTensor *a = run1(ops[i], kv, nkv, INS(xc));
    kv[0] = KV("layout", gp_attr_str("NHWC"));
    GPTensor *b = run1(ops[i], kv, nkv, INS(xl));
    int64_t OH = a->dl.shape[2], OW = a->dl.shape[3];
    EXPECT_SHAPE(b, N, OH, OW, C);
    for (int64_t n = 0; n < N; n++)
      for (int64_t c = 0; c < C; c++)
        for (int64_t h = 0; h < OH; h++)
          for (int64_t w = 0; w < OW; w++)
          {
            double va = at(a, ((n * C + c) * OH + h) * OW + w), vb = at(b, ((n * OH + h) * OW + w) * C + c);
            cr_assert(va == vb || fabs(va - vb) <= 1e-6, "%s: %g vs %g", ops[i], va, vb); /* -inf == -inf */
          }
    release_all((GPTensor *[]){a, b}, 2);
  }
  release_all((GPTensor *[]){xc, xl}, 2);
}

Test(kernels_nn, global_avg_pool2d_hand) {
  GPTensor *x = T32(DIMS(1, 2, 2, 2), VALS(1, 2, 3, 4, 10, 20, 30, 40));
  GPTensor *y = run1("nn.global_avg_pool2d", NOKV, INS(x));
  EXPECT_SHAPE(y, 1, 2, 1, 1);
  EXPECT_VALS(y, 1e-6, 2.5, 25);
  gp_release(y);
  /* int32: truncating division, as TVM's integer div */
  GPTensor *xi = tensor(GP_DT_I32, 4, DIMS(1, 1, 1, 3), VALS(1, 2, 4));
  y = run1("nn.global_avg_pool2d", NOKV, INS(xi));
  EXPECT_VALS(y, 0, 2);
  release_all((GPTensor *[]){x, xi, y}, 3);
}

/* ---- softmax, lrn */

Test(kernels_nn, softmax_large_values_and_axes) {
  GPTensor *x = T32(DIMS(1, 3), VALS(1000, 1001, 1002));
  GPTensor *y = run1("nn.softmax", NOKV, INS(x));
  EXPECT_VALS(y, 1e-5, 0.0900305732, 0.2447284711, 0.6652409558);
  gp_release(y);
  /* axis -2 on (3, 2): columns */
  GPTensor *x2 = T32(DIMS(3, 2), VALS(0, -1e4, 1, -1e4 + 2, 2, -1e4 + 1));
  y = run1("nn.softmax", KVS(KV("axis", gp_attr_int(-2))), INS(x2));
  EXPECT_VALS(y, 1e-5, 0.0900305732, 0.0900305732, 0.2447284711, 0.6652409558, 0.6652409558, 0.2447284711);
  gp_release(y);
  /* float64 and float16 */
  GPTensor *xd = tensor(GP_DT_F64, 1, DIMS(2), VALS(-7e300, 0)), *xh = tensor(GP_DT_F16, 1, DIMS(2), VALS(60000, 60000));
  y = run1("nn.softmax", NOKV, INS(xd));
  EXPECT_VALS(y, 0, 0, 1);
  gp_release(y);
  y = run1("nn.softmax", NOKV, INS(xh));
  EXPECT_VALS(y, 0, 0.5, 0.5);
  gp_release(y);
  /* empty batch; integer refused */
  GPTensor *x0 = T32(DIMS(0, 5), NULL);
  y = run1("nn.softmax", NOKV, INS(x0));
  EXPECT_SHAPE(y, 0, 5);
  gp_release(y);
  GPTensor *xi = tensor(GP_DT_I32, 1, DIMS(2), NULL);
  GPTensor *outs[4];
  int32_t nout;
  cr_assert_eq(run_op("nn.softmax", NOKV, INS(xi), 2, outs, &nout), -1);
  expect_error(GP_ERR_UNSUPPORTED, "int32");
  release_all((GPTensor *[]){x, x2, xd, xh, x0, xi}, 6);
}

Test(kernels_nn, softmax_strided_input) {
  /* a (2, 3) view with row stride 4 and column stride 1, offset 1 element */
  float buf[9] = {99, 1, 2, 3, 99, 4, 4, 4};
  GPTensor *v = make_view(GP_DT_F32, 2, DIMS(2, 3), DIMS(4, 1), 4, buf, 8 * sizeof(float));
  GPTensor *y = run1("nn.softmax", NOKV, INS(v));
  EXPECT_VALS(y, 1e-6, 0.0900305732, 0.2447284711, 0.6652409558, 1 / 3.0, 1 / 3.0, 1 / 3.0);
  release_all((GPTensor *[]){v, y}, 2);
}

Test(kernels_nn, lrn_tvm_formula) {
  GPTensor *x = T32(DIMS(1, 3, 1, 1), VALS(1, 2, 3));
  GPTensor *y = run1("nn.lrn",
                     KVS(KV("size", gp_attr_int(3)), KV("alpha", gp_attr_float(0.3)), KV("beta", gp_attr_float(0.75)),
                         KV("bias", gp_attr_float(2))),
                     INS(x));
  EXPECT_VALS(y, 1e-6, 1 / pow(2.5, 0.75), 2 / pow(3.4, 0.75), 3 / pow(3.3, 0.75));
  gp_release(y);
  /* even size 2: window [c - 1, c] */
  y = run1("nn.lrn",
           KVS(KV("size", gp_attr_int(2)), KV("alpha", gp_attr_float(0.3)), KV("beta", gp_attr_float(0.5)),
               KV("bias", gp_attr_float(1))),
           INS(x));
  EXPECT_VALS(y, 1e-6, 1 / sqrt(1 + 0.15 * 1), 2 / sqrt(1 + 0.15 * 5), 3 / sqrt(1 + 0.15 * 13));
  gp_release(y);
  /* axis -1 on (2, 3) */
  GPTensor *x2 = T32(DIMS(2, 3), VALS(1, 2, 3, 1, 2, 3));
  y = run1("nn.lrn",
           KVS(KV("axis", gp_attr_int(-1)), KV("size", gp_attr_int(3)), KV("alpha", gp_attr_float(0.3)),
               KV("beta", gp_attr_float(0.75)), KV("bias", gp_attr_float(2))),
           INS(x2));
  EXPECT_VALS(y, 1e-6, 1 / pow(2.5, 0.75), 2 / pow(3.4, 0.75), 3 / pow(3.3, 0.75), 1 / pow(2.5, 0.75),
              2 / pow(3.4, 0.75), 3 / pow(3.3, 0.75));
  release_all((GPTensor *[]){x, x2, y}, 3);
}
