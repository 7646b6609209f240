/* test_kernels_conv.c -- the N-d convolution, transposed convolution, batch_matmul, N-d pooling,
 * log_softmax, global max pooling and prelu kernels (eval/k_conv.c, eval/k_nn.c) through
 * gp_eval_op: hand-computed cases, naive references on random shapes, dtypes, errors. */
#include "nn_test_helpers.h"

static double *to_doubles(const GPTensor *t) {
  int64_t n = numel(t->dl.ndim, t->dl.shape);
  double *d = malloc((size_t)(n ? n : 1) * sizeof(double));
  for (int64_t i = 0; i < n; i++) d[i] = at(t, i);
  return d;
}

/* ---- naive references (double), NC + spatial, 3-d with leading extents 1 */

typedef struct NdCase {
  int32_t nd;
  int64_t N, C, O, G, in[3], k[3], s[3], d[3], pb[3], pe[3], op[3];
} NdCase;

static int64_t conv_out(const NdCase *c, int32_t i, bool tr) {
  if (tr) return (c->in[i] - 1) * c->s[i] - c->pb[i] - c->pe[i] + c->d[i] * (c->k[i] - 1) + c->op[i] + 1;
  return (c->in[i] + c->pb[i] + c->pe[i] - (c->k[i] - 1) * c->d[i] - 1) / c->s[i] + 1;
}

/* shapes of x, w, y (rank nd + 2) */
static void nd_shapes(const NdCase *c, bool tr, int64_t xs[5], int64_t ws[5], int64_t ys[5]) {
  xs[0] = c->N, xs[1] = c->C;
  ws[0] = tr ? c->C : c->O, ws[1] = tr ? c->O / c->G : c->C / c->G;
  ys[0] = c->N, ys[1] = c->O;
  for (int32_t i = 0; i < c->nd; i++) {
    int32_t j = 3 - c->nd + i;
    xs[2 + i] = c->in[j], ws[2 + i] = c->k[j], ys[2 + i] = conv_out(c, j, tr);
  }
}

static double *ref_conv(const NdCase *c, bool tr, const double *x, const double *w, int64_t ny) {
  double *y = calloc((size_t)ny, sizeof(double));
  int64_t out[3], Ig = c->C / c->G, Og = c->O / c->G;
  for (int i = 0; i < 3; i++) out[i] = conv_out(c, i, tr);
  for (int64_t n = 0; n < c->N; n++)
    for (int64_t ci = 0; ci < c->C; ci++)
      for (int64_t og = 0; og < Og; og++)
        for (int64_t a0 = 0; a0 < (tr ? c->in[0] : out[0]); a0++)
          for (int64_t a1 = 0; a1 < (tr ? c->in[1] : out[1]); a1++)
            for (int64_t a2 = 0; a2 < (tr ? c->in[2] : out[2]); a2++)
              for (int64_t kd = 0; kd < c->k[0]; kd++)
                for (int64_t kh = 0; kh < c->k[1]; kh++)
                  for (int64_t kw = 0; kw < c->k[2]; kw++) {
                    int64_t g = ci / Ig, o = g * Og + og;
                    int64_t b0 = a0 * c->s[0] - c->pb[0] + kd * c->d[0];
                    int64_t b1 = a1 * c->s[1] - c->pb[1] + kh * c->d[1];
                    int64_t b2 = a2 * c->s[2] - c->pb[2] + kw * c->d[2];
                    /* conv: a = output pos, b = input pos; transpose: a = input pos, b = output pos */
                    const int64_t *lim = tr ? out : c->in;
                    if (b0 < 0 || b0 >= lim[0] || b1 < 0 || b1 >= lim[1] || b2 < 0 || b2 >= lim[2]) continue;
                    int64_t kk = (kd * c->k[1] + kh) * c->k[2] + kw, KK = c->k[0] * c->k[1] * c->k[2];
                    double wv = tr ? w[(ci * Og + og) * KK + kk] : w[(o * Ig + ci % Ig) * KK + kk];
                    if (tr) {
                      double xv = x[((n * c->C + ci) * c->in[0] + a0) * c->in[1] * c->in[2] + a1 * c->in[2] + a2];
                      y[((n * c->O + o) * out[0] + b0) * out[1] * out[2] + b1 * out[2] + b2] += xv * wv;
                    } else {
                      double xv = x[((n * c->C + ci) * c->in[0] + b0) * c->in[1] * c->in[2] + b1 * c->in[2] + b2];
                      y[((n * c->O + o) * out[0] + a0) * out[1] * out[2] + a1 * out[2] + a2] += xv * wv;
                    }
                  }
  return y;
}

static GPAttrValue nd_ints(int32_t nd, const int64_t *v3) { return gp_attr_ints(nd, v3 + 3 - nd); }

/* v (N, C, P) as (N, P, C): the same tensor with its channels last (spatial axes in order). */
static double *channel_last(const double *v, int64_t N, int64_t C, int64_t P) {
  int64_t k = N * C * P;
  double *o = malloc((size_t)(k > 0 ? k : 1) * sizeof(double));
  for (int64_t n = 0; n < N; n++)
    for (int64_t ch = 0; ch < C; ch++)
      for (int64_t p = 0; p < P; p++) o[(n * P + p) * C + ch] = v[(n * C + ch) * P + p];
  return o;
}

/* Layouts of a case's data and result: NC + spatial; data channel-last (NWC, NHWC, NDHWC) and
 * its result too; data channel-last and result NC + spatial (out_layout). */
enum { L_CANON, L_LAST, L_LAST_TO_CANON };

static void check_case_in(const NdCase *c, bool tr, DLDataType dt, double tol, int lay) {
  static const char *const conv[4] = {NULL, "nn.conv1d", "nn.conv2d", "nn.conv3d"};
  static const char *const convt[4] = {NULL, "nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose"};
  static const char *const klt[4] = {NULL, "IOW", "IOHW", "IODHW"};
  static const char *const canon[4] = {NULL, "NCW", "NCHW", "NCDHW"}, *const last[4] = {NULL, "NWC", "NHWC", "NDHWC"};
  int64_t xs[5], ws[5], ys[5];
  nd_shapes(c, tr, xs, ws, ys);
  int32_t r = c->nd + 2;
  GPTensor *x = random_tensor(dt, r, xs, 4), *w = random_tensor(dt, r, ws, 4);
  int64_t pad[6];
  for (int32_t i = 0; i < c->nd; i++) pad[i] = c->pb[3 - c->nd + i], pad[c->nd + i] = c->pe[3 - c->nd + i];
  KV kv[10];
  int32_t nkv = 0;
  kv[nkv++] = KV("strides", nd_ints(c->nd, c->s));
  kv[nkv++] = KV("dilation", nd_ints(c->nd, c->d));
  kv[nkv++] = KV("padding", gp_attr_ints(2 * c->nd, pad));
  kv[nkv++] = KV("groups", gp_attr_int(c->G));
  if (tr) {
    kv[nkv++] = KV("output_padding", nd_ints(c->nd, c->op));
    kv[nkv++] = KV("kernel_layout", gp_attr_str(klt[c->nd]));
  }
  double *xd = to_doubles(x), *wd = to_doubles(w);
  int64_t ny = numel(r, ys), px = numel(c->nd, xs + 2), py = numel(c->nd, ys + 2);
  double *want = ref_conv(c, tr, xd, wd, ny);
  GPTensor *xin = x;
  if (lay != L_CANON) { /* the same data, channels last */
    kv[nkv++] = KV("data_layout", gp_attr_str(last[c->nd]));
    if (lay == L_LAST_TO_CANON) kv[nkv++] = KV("out_layout", gp_attr_str(canon[c->nd]));
    int64_t xl[5] = {xs[0]};
    memcpy(xl + 1, xs + 2, (size_t)c->nd * sizeof *xl);
    xl[r - 1] = xs[1];
    double *xv = channel_last(xd, xs[0], xs[1], px);
    xin = tensor(dt, r, xl, xv);
    free(xv);
    if (lay == L_LAST) {
      double *wl = channel_last(want, ys[0], ys[1], py);
      free(want);
      want = wl;
      int64_t yl[5] = {ys[0]};
      memcpy(yl + 1, ys + 2, (size_t)c->nd * sizeof *yl);
      yl[r - 1] = ys[1];
      memcpy(ys, yl, sizeof yl);
    }
  }
  GPTensor *y = run1(tr ? convt[c->nd] : conv[c->nd], kv, nkv, INS(xin, w));
  expect_shape(y, r, ys);
  expect_vals(y, want, ny, tol, __LINE__);
  free(xd), free(wd), free(want);
  if (xin != x) gp_release(xin);
  release_all((GPTensor *[]){x, w, y}, 3);
}

static void check_case(const NdCase *c, bool tr, DLDataType dt, double tol) {
  check_case_in(c, tr, dt, tol, L_CANON);
}

/* ---- hand-computed cases */

Test(kernels_conv, conv1d_hand) {
  GPTensor *x = T32(DIMS(1, 1, 5), VALS(1, 2, 3, 4, 5));
  GPTensor *w = T32(DIMS(1, 1, 3), VALS(1, 0, -1));
  /* padded [0 1 2 3 4 5 0], windows at 0, 2, 4 */
  GPTensor *y = run1("nn.conv1d", KVS(KV("padding", INTS(1)), KV("strides", INTS(2))), INS(x, w));
  EXPECT_SHAPE(y, 1, 1, 3);
  EXPECT_VALS(y, 0, -2, -2, 4);
  gp_release(y);
  /* dilation 2: x[i] - x[i + 4] */
  y = run1("nn.conv1d", KVS(KV("dilation", INTS(2))), INS(x, w));
  EXPECT_SHAPE(y, 1, 1, 1);
  EXPECT_VALS(y, 0, -4);
  release_all((GPTensor *[]){x, w, y}, 3);
}

Test(kernels_conv, conv3d_hand) {
  GPTensor *x = T32(DIMS(1, 1, 2, 2, 2), VALS(1, 1, 1, 1, 1, 1, 1, 1));
  GPTensor *w = T32(DIMS(1, 1, 2, 2, 2), VALS(1, 1, 1, 1, 1, 1, 1, 1));
  GPTensor *y = run1("nn.conv3d", NOKV, INS(x, w));
  EXPECT_SHAPE(y, 1, 1, 1, 1, 1);
  EXPECT_VALS(y, 0, 8);
  gp_release(y);
  y = run1("nn.conv3d", KVS(KV("padding", INTS(1))), INS(x, w));
  EXPECT_SHAPE(y, 1, 1, 3, 3, 3);
  EXPECT_VALS(y, 0, 1, 2, 1, 2, 4, 2, 1, 2, 1, 2, 4, 2, 4, 8, 4, 2, 4, 2, 1, 2, 1, 2, 4, 2, 1, 2, 1);
  release_all((GPTensor *[]){x, w, y}, 3);
}

Test(kernels_conv, conv_transpose_hand) {
  GPTensor *x = T32(DIMS(1, 1, 2, 2), VALS(1, 2, 3, 4));
  GPTensor *w = T32(DIMS(1, 1, 2, 2), VALS(1, 1, 1, 1));
  GPTensor *y = run1("nn.conv2d_transpose", KVS(KV("strides", INTS(2, 2)), KV("kernel_layout", gp_attr_str("IOHW"))),
                     INS(x, w));
  EXPECT_SHAPE(y, 1, 1, 4, 4);
  EXPECT_VALS(y, 0, 1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4);
  gp_release(y);
  y = run1("nn.conv2d_transpose", NOKV, INS(x, w));
  EXPECT_SHAPE(y, 1, 1, 3, 3);
  EXPECT_VALS(y, 0, 1, 3, 2, 4, 10, 6, 3, 7, 4);
  gp_release(y);
  GPTensor *x1 = T32(DIMS(1, 1, 2), VALS(1, 2)), *w1 = T32(DIMS(1, 1, 3), VALS(1, 2, 3));
  y = run1("nn.conv1d_transpose", KVS(KV("strides", INTS(2))), INS(x1, w1));
  EXPECT_SHAPE(y, 1, 1, 5);
  EXPECT_VALS(y, 0, 1, 2, 5, 4, 6);
  gp_release(y);
  /* padding 1 crops one element each side; output_padding 1 adds one at the end */
  y = run1("nn.conv1d_transpose", KVS(KV("strides", INTS(2)), KV("padding", INTS(1)), KV("output_padding", INTS(1))),
           INS(x1, w1));
  EXPECT_SHAPE(y, 1, 1, 4);
  EXPECT_VALS(y, 0, 2, 5, 4, 6);
  release_all((GPTensor *[]){x, w, x1, w1, y}, 5);
}

/* A random case of rank nd (1 to 3): groups, strides, dilations, paddings, output paddings; a
 * transposed one (tr) keeps its output non-empty. */
static NdCase random_case(int32_t nd, bool tr) {
  NdCase c = {0};
  c.nd = nd;
  c.G = irand(1, 2);
  c.C = c.G * irand(1, 3), c.O = c.G * irand(1, 3), c.N = irand(1, 2);
  for (int i = 0; i < 3; i++) {
    bool used = i >= 3 - c.nd;
    c.k[i] = used ? irand(1, 3) : 1;
    c.s[i] = used ? irand(1, 2) : 1;
    c.d[i] = used ? irand(1, 2) : 1;
    c.pb[i] = used ? irand(0, 2) : 0;
    c.pe[i] = used ? irand(0, 2) : 0;
    c.in[i] = used ? (c.k[i] - 1) * c.d[i] + irand(1, 4) : 1;
    int64_t mx = c.s[i] > c.d[i] ? c.s[i] : c.d[i];
    c.op[i] = used ? irand(0, mx - 1) : 0;
  }
  if (tr)
    for (int i = 0; i < 3; i++)
      if (conv_out(&c, i, true) < 1) c.pb[i] = c.pe[i] = 0;
  return c;
}

Test(kernels_conv, conv_nd_random_vs_reference) {
  for (int it = 0; it < 40; it++) {
    bool tr = it % 2 == 1;
    NdCase c = random_case((int32_t)irand(1, 3), tr);
    check_case(&c, tr, it % 4 == 2 ? GP_DT_F64 : GP_DT_F32, 1e-5);
    check_case(&c, tr, GP_DT_I32, 0);
  }
}

/* Data (and result) with the channels last: the same numbers as NC + spatial, for convolutions
 * and transposed ones of every rank (ConvertLayout makes NHWC conv2d_transposes and NDHWC
 * conv3ds; the transposed kernel had taken NC + spatial only). */
Test(kernels_conv, conv_nd_channel_last) {
  for (int it = 0; it < 36; it++) {
    bool tr = (it / 3) % 2 == 1;
    NdCase c = random_case((int32_t)(it % 3) + 1, tr);
    check_case_in(&c, tr, GP_DT_F32, 1e-5, (it / 6) % 2 ? L_LAST : L_LAST_TO_CANON);
    if (it % 4 == 0) check_case_in(&c, tr, GP_DT_I32, 0, L_LAST);
  }
}

Test(kernels_conv, conv_nd_float16) {
  NdCase c = {.nd = 1, .N = 1, .C = 2, .O = 2, .G = 1, .in = {1, 1, 6}, .k = {1, 1, 3}, .s = {1, 1, 1}, .d = {1, 1, 1},
              .pb = {0, 0, 1}, .pe = {0, 0, 1}, .op = {0, 0, 0}};
  check_case(&c, false, GP_DT_F16, 1e-2);
  check_case(&c, true, GP_DT_F16, 1e-2);
}

Test(kernels_conv, batch_matmul) {
  GPTensor *x = T32(DIMS(2, 2, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8));
  GPTensor *y1 = T32(DIMS(1, 2, 2), VALS(1, 0, 1, 1));
  GPTensor *z = run1("nn.batch_matmul", KVS(KV("transpose_b", gp_attr_bool(false))), INS(x, y1));
  EXPECT_SHAPE(z, 2, 2, 2);
  EXPECT_VALS(z, 0, 3, 2, 7, 4, 11, 6, 15, 8);
  gp_release(z);
  z = run1("nn.batch_matmul", NOKV, INS(x, y1)); /* transpose_b by default */
  EXPECT_VALS(z, 0, 1, 3, 3, 7, 5, 11, 7, 15);
  gp_release(z);
  /* transpose_a, with the batch-1 operand first */
  z = run1("nn.batch_matmul", KVS(KV("transpose_a", gp_attr_bool(true)), KV("transpose_b", gp_attr_bool(false))),
           INS(y1, x));
  /* y1^T = [[1,1],[0,1]] */
  EXPECT_VALS(z, 0, 4, 6, 3, 4, 12, 14, 7, 8);
  gp_release(z);
  GPTensor *xi = tensor(GP_DT_I32, 3, DIMS(2, 2, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8));
  GPTensor *yi = tensor(GP_DT_I32, 3, DIMS(1, 2, 2), VALS(1, 0, 1, 1));
  z = run1("nn.batch_matmul", KVS(KV("transpose_b", gp_attr_bool(false))), INS(xi, yi));
  cr_assert_eq(z->dl.dtype.code, kDLInt);
  EXPECT_VALS(z, 0, 3, 2, 7, 4, 11, 6, 15, 8);
  gp_release(z);
  /* mismatched reduction dims: a type error */
  GPTensor *bad = T32(DIMS(2, 3, 2), NULL);
  GPTensor *outs[4];
  int32_t nout;
  cr_assert_eq(run_op("nn.batch_matmul", KVS(KV("transpose_b", gp_attr_bool(false))), INS(x, bad), 1, outs, &nout),
               -1);
  expect_error(GP_ERR_TYPE, "reduction");
  release_all((GPTensor *[]){x, y1, xi, yi, bad}, 5);
}

/* nn.matmul: 2-d, N-d tensor_a, each transpose, integers, and its type errors */
Test(kernels_conv, matmul) {
  GPTensor *x = T32(DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  GPTensor *w = T32(DIMS(3, 2), VALS(1, 0, 0, 1, 1, 1));
  GPTensor *z = run1("nn.matmul", NOKV, INS(x, w));
  EXPECT_SHAPE(z, 2, 2);
  EXPECT_VALS(z, 0, 4, 5, 10, 11);
  gp_release(z);
  /* transpose_b: w^T (2, 3) used as (N, K) = the same product with x */
  GPTensor *wt = T32(DIMS(2, 3), VALS(1, 0, 1, 0, 1, 1));
  z = run1("nn.matmul", KVS(KV("transpose_b", gp_attr_bool(true))), INS(x, wt));
  EXPECT_VALS(z, 0, 4, 5, 10, 11);
  gp_release(z);
  /* transpose_a: x^T (3, 2) given as x2 (3, 2) -> x2^T (2, 3) * w */
  GPTensor *x2 = T32(DIMS(3, 2), VALS(1, 4, 2, 5, 3, 6));
  z = run1("nn.matmul", KVS(KV("transpose_a", gp_attr_bool(true))), INS(x2, w));
  EXPECT_SHAPE(z, 2, 2);
  EXPECT_VALS(z, 0, 4, 5, 10, 11);
  gp_release(z);
  /* rank-3 tensor_a: leading dims are rows; with transpose_a each item is transposed */
  GPTensor *x3 = T32(DIMS(2, 1, 3), VALS(1, 2, 3, 4, 5, 6));
  z = run1("nn.matmul", NOKV, INS(x3, w));
  EXPECT_SHAPE(z, 2, 1, 2);
  EXPECT_VALS(z, 0, 4, 5, 10, 11);
  gp_release(z);
  GPTensor *x3t = T32(DIMS(2, 3, 1), VALS(1, 2, 3, 4, 5, 6));
  z = run1("nn.matmul", KVS(KV("transpose_a", gp_attr_bool(true))), INS(x3t, w));
  EXPECT_SHAPE(z, 2, 1, 2);
  EXPECT_VALS(z, 0, 4, 5, 10, 11);
  gp_release(z);
  GPTensor *xi = tensor(GP_DT_I32, 2, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  GPTensor *wi = tensor(GP_DT_I32, 2, DIMS(3, 2), VALS(1, 0, 0, 1, 1, 1));
  z = run1("nn.matmul", NOKV, INS(xi, wi));
  cr_assert_eq(z->dl.dtype.code, kDLInt);
  EXPECT_VALS(z, 0, 4, 5, 10, 11);
  gp_release(z);
  GPTensor *outs[4];
  int32_t nout;
  /* mismatched reduction dims, a rank-3 tensor_b, units that disagree: type errors */
  cr_assert_eq(run_op("nn.matmul", NOKV, INS(x, x), 1, outs, &nout), -1);
  expect_error(GP_ERR_TYPE, "reduction dims differ");
  cr_assert_eq(run_op("nn.matmul", NOKV, INS(x, x3), 1, outs, &nout), -1);
  expect_error(GP_ERR_TYPE, "tensor_b must have rank 2");
  cr_assert_eq(run_op("nn.matmul", KVS(KV("units", gp_attr_int(3))), INS(x, w), 1, outs, &nout), -1);
  expect_error(GP_ERR_TYPE, "units 3");
  release_all((GPTensor *[]){x, w, wt, x2, x3, x3t, xi, wi}, 8);
}

Test(kernels_conv, log_softmax) {
  GPTensor *x = T32(DIMS(1, 3), VALS(1, 2, 3));
  GPTensor *y = run1("nn.log_softmax", NOKV, INS(x));
  EXPECT_VALS(y, 1e-6, -2.40760596, -1.40760596, -0.40760596);
  gp_release(y);
  GPTensor *x2 = tensor(GP_DT_F64, 2, DIMS(3, 2), VALS(1, 0, 2, 0, 3, 0));
  y = run1("nn.log_softmax", KVS(KV("axis", gp_attr_int(0))), INS(x2));
  EXPECT_VALS(y, 1e-7, -2.40760596, -1.09861229, -1.40760596, -1.09861229, -0.40760596, -1.09861229);
  release_all((GPTensor *[]){x, x2, y}, 3);
}

Test(kernels_conv, pool1d) {
  GPTensor *x = T32(DIMS(1, 1, 5), VALS(1, 3, 2, 5, 4));
  GPTensor *y = run1("nn.max_pool1d", KVS(KV("pool_size", INTS(2)), KV("strides", INTS(2)), KV("ceil_mode", gp_attr_bool(true))),
                     INS(x));
  EXPECT_SHAPE(y, 1, 1, 3);
  EXPECT_VALS(y, 0, 3, 5, 4);
  gp_release(y);
  GPTensor *x3 = T32(DIMS(1, 1, 3), VALS(1, 2, 3));
  y = run1("nn.avg_pool1d", KVS(KV("pool_size", INTS(3)), KV("padding", INTS(1))), INS(x3));
  EXPECT_VALS(y, 1e-6, 1.5, 2, 2.5);
  gp_release(y);
  y = run1("nn.avg_pool1d", KVS(KV("pool_size", INTS(3)), KV("padding", INTS(1)), KV("count_include_pad", gp_attr_bool(true))),
           INS(x3));
  EXPECT_VALS(y, 1e-6, 1, 2, 5.0 / 3);
  gp_release(y);
  /* dilation 2 over [1 3 2 5 4]: max(x[i], x[i+2]) */
  y = run1("nn.max_pool1d", KVS(KV("pool_size", INTS(2)), KV("dilation", INTS(2))), INS(x));
  EXPECT_VALS(y, 0, 2, 5, 4);
  gp_release(y);
  GPTensor *xi = tensor(GP_DT_I8, 3, DIMS(1, 1, 3), VALS(-5, -7, -1));
  y = run1("nn.max_pool1d", KVS(KV("pool_size", INTS(2)), KV("padding", INTS(1))), INS(xi));
  EXPECT_VALS(y, 0, -5, -5, -1, -1);
  release_all((GPTensor *[]){x, x3, xi, y}, 4);
}

/* A 1-d / 3-d pool in a channel-last layout (NWC, NDHWC: the fuzzers' ConvertLayout of a conv3d
 * to NDHWC gives the pool after it that layout) equals the NC + spatial pool, channels moved. */
Test(kernels_conv, pool_nd_channel_last) {
  static const char *const ops[2][4] = {{NULL, "nn.avg_pool1d", NULL, "nn.avg_pool3d"},
                                        {NULL, "nn.max_pool1d", NULL, "nn.max_pool3d"}};
  static const char *const last[4] = {NULL, "NWC", NULL, "NDHWC"};
  for (int32_t nd = 1; nd <= 3; nd += 2)
    for (int it = 0; it < 4; it++) {
      bool is_max = it % 2, incl = it / 2;
      int64_t xs[5] = {2, 3, 5, 4, 6}, k[3] = {3, 3, 3}, st[3] = {2, 2, 2}, pad[6] = {1, 0, 1, 1, 1, 0};
      if (nd == 1) xs[2] = 7;
      int32_t r = nd + 2;
      GPTensor *x = random_tensor(GP_DT_F32, r, xs, 4);
      KV kv[5] = {KV("pool_size", gp_attr_ints(nd, k)), KV("strides", gp_attr_ints(nd, st)),
                  KV("padding", gp_attr_ints(2 * nd, pad)), KV("count_include_pad", gp_attr_bool(incl))};
      GPTensor *y = run1(ops[is_max][nd], kv, is_max ? 3 : 4, INS(x));
      int64_t px = numel(nd, xs + 2), py = numel(nd, y->dl.shape + 2), ys[5];
      memcpy(ys, y->dl.shape, (size_t)r * sizeof *ys);
      double *xd = to_doubles(x), *yd = to_doubles(y);
      double *xl = channel_last(xd, xs[0], xs[1], px), *want = channel_last(yd, ys[0], ys[1], py);
      int64_t xls[5] = {xs[0]}, yls[5] = {ys[0]};
      memcpy(xls + 1, xs + 2, (size_t)nd * sizeof *xls);
      memcpy(yls + 1, ys + 2, (size_t)nd * sizeof *yls);
      xls[r - 1] = xs[1], yls[r - 1] = ys[1];
      GPTensor *xin = tensor(GP_DT_F32, r, xls, xl);
      kv[is_max ? 3 : 4] = KV("layout", gp_attr_str(last[nd]));
      GPTensor *yl = run1(ops[is_max][nd], kv, is_max ? 4 : 5, INS(xin));
      expect_shape(yl, r, yls);
      expect_vals(yl, want, numel(r, yls), 1e-6, __LINE__);
      free(xd), free(yd), free(xl), free(want);
      release_all((GPTensor *[]){x, y, xin, yl}, 4);
    }
}

Test(kernels_conv, pool3d_global_max) {
  GPTensor *x = T32(DIMS(1, 1, 2, 2, 2), VALS(0, 1, 2, 3, 4, 5, 6, 7));
  GPTensor *y = run1("nn.max_pool3d", KVS(KV("pool_size", INTS(2))), INS(x));
  EXPECT_SHAPE(y, 1, 1, 1, 1, 1);
  EXPECT_VALS(y, 0, 7);
  gp_release(y);
  y = run1("nn.avg_pool3d", KVS(KV("pool_size", INTS(2, 2, 1))), INS(x));
  EXPECT_SHAPE(y, 1, 1, 1, 1, 2);
  EXPECT_VALS(y, 1e-6, 3, 4);
  gp_release(y);
  GPTensor *x2 = T32(DIMS(1, 2, 2, 2), VALS(1, -2, 3, 0, -1, -5, -3, -4));
  y = run1("nn.global_max_pool2d", NOKV, INS(x2));
  EXPECT_SHAPE(y, 1, 2, 1, 1);
  EXPECT_VALS(y, 0, 3, -1);
  release_all((GPTensor *[]){x, x2, y}, 3);
}

Test(kernels_conv, prelu) {
  GPTensor *x = T32(DIMS(1, 2, 2), VALS(-2, 3, -4, 5));
  GPTensor *al = T32(DIMS(2), VALS(0.5, 0.25));
  GPTensor *y = run1("nn.prelu", NOKV, INS(x, al));
  EXPECT_VALS(y, 0, -1, 3, -1, 5);
  GPTensor *al2 = T32(DIMS(3), VALS(1, 1, 1));
  GPTensor *outs[4];
  int32_t nout;
  cr_assert_eq(run_op("nn.prelu", NOKV, INS(x, al2), 1, outs, &nout), -1);
  expect_error(GP_ERR_TYPE, "alpha");
  release_all((GPTensor *[]){x, al, al2, y}, 4);
}

Test(kernels_conv, type_errors) {
  GPTensor *outs[4];
  int32_t nout;
  GPTensor *x = T32(DIMS(1, 3, 5), NULL), *w = T32(DIMS(2, 2, 3), NULL);
  cr_assert_eq(run_op("nn.conv1d", NOKV, INS(x, w), 1, outs, &nout), -1);
  expect_error(GP_ERR_TYPE, "input channels");
  GPTensor *w2 = T32(DIMS(2, 3, 9), NULL);
  cr_assert_eq(run_op("nn.conv1d", NOKV, INS(x, w2), 1, outs, &nout), -1);
  expect_error(GP_ERR_TYPE, "window");
  GPTensor *x5 = T32(DIMS(1, 1, 2, 2, 2), NULL);
  cr_assert_eq(run_op("nn.max_pool3d", KVS(KV("pool_size", INTS(2, 2))), INS(x5), 1, outs, &nout), -1);
  expect_error(GP_ERR_TYPE, "pool_size");
  release_all((GPTensor *[]){x, w, w2, x5}, 4);
}

Test(kernels_conv, nll_loss) {
  /* log-probabilities of 3 items over 2 classes; targets 1, 0, 1; weights 2, 3 */
  GPTensor *p = T32(DIMS(3, 2), VALS(-1, -2, -3, -4, -5, -6));
  GPTensor *t = tensor(GP_DT_I64, 1, DIMS(3), VALS(1, 0, 1));
  GPTensor *w = T32(DIMS(2), VALS(2, 3));
  GPTensor *y = run1("nn.nll_loss", KVS(KV("reduction", gp_attr_str("none"))), INS(p, t, w));
  EXPECT_SHAPE(y, 3);
  EXPECT_VALS(y, 0, 6, 6, 18);
  gp_release(y);
  y = run1("nn.nll_loss", KVS(KV("reduction", gp_attr_str("sum"))), INS(p, t, w));
  EXPECT_SHAPE(y);
  EXPECT_VALS(y, 0, 30);
  gp_release(y);
  y = run1("nn.nll_loss", NOKV, INS(p, t, w)); /* mean: 30 / (3 + 2 + 3) */
  EXPECT_VALS(y, 1e-6, 3.75);
  gp_release(y);
  /* ignore_index 0 drops the second item: (6 + 18) / 6 */
  y = run1("nn.nll_loss", KVS(KV("ignore_index", gp_attr_int(0))), INS(p, t, w));
  EXPECT_VALS(y, 1e-6, 4);
  gp_release(y);
  GPTensor *bad = tensor(GP_DT_I64, 1, DIMS(3), VALS(1, 2, 1));
  GPTensor *outs[4];
  int32_t nout;
  cr_assert_eq(run_op("nn.nll_loss", NOKV, INS(p, bad, w), 1, outs, &nout), -1);
  expect_error(GP_ERR_VALUE, "outside");
  release_all((GPTensor *[]){p, t, w, bad}, 4);
}
