/* bench_eval.c -- the evaluator's speed on ResNet-50 shapes.
 *
 *   ./build/bin/bench_eval [runs] [kernels|resnet|all] [threads]
 *
 * (default: 7 runs, both parts, gp_eval_default_threads() threads; OpenBLAS gets as many)
 *
 * 1. For ResNet-50 convolutions (batch 1, NCHW float32; one NHWC) and dense 2048->1000: GFLOP/s
 *    of our kernel through gp_eval_op (output allocation included), of our gp_sgemm alone and
 *    of cblas_sgemm alone (on OpenBLAS's threads, with the core type OpenBLAS runs, which the
 *    header names) on the GEMM the convolution lowers to (same M, N, K, preallocated operands),
 *    and the ratio kernel / cblas_sgemm; medians of `runs` (default 7) after warm-up calls
 *    (time_pair).
 * 2. The time of gp_eval_function on a whole ResNet-50 (v1.5: stride in the 3x3 convolutions;
 *    224x224, batch 1, random weights, inference batch_norm) built with the IR constructors:
 *    median of `runs` (at least 3) after one warm-up run.
 */
#include "eval/eval.h"
#include "eval/kernel.h"
#include "ir/ir.h"

#include "eval/blas.h"
#include "eval/gemm.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* OpenBLAS's pool workers spin for about 0.1 s (2^28 cycles) after a threaded call (the sgemm
 * baselines) and would take a core from whatever runs next, so our runs start after this pause.
 * It busy-waits: after a sleep the (virtual) CPUs run slower for tens of milliseconds. */
static void settle(void) {
  double t0 = now();
  while (now() - t0 < 0.15) {
  }
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die(const char *what) {
  fprintf(stderr, "bench_eval: %s: %s\n", what, gp_error_message());
  exit(1);
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static float frand(void) { /* uniform in [-1, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((double)(rng >> 40) / 16777216.0 * 2.0 - 1.0);
}

/* A float32 tensor of uniform values in [lo, hi). */
static GPTensor *rand_tensor(int32_t ndim, const int64_t *shape, float lo, float hi) {
  GPTensor *t = gp_tensor_alloc(GP_DT_F32, ndim, shape, true);
  if (!t) die("alloc");
  int64_t n = 1;
  for (int32_t i = 0; i < ndim; i++) n *= shape[i];
  float *p = t->dl.data;
  for (int64_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * (frand() + 1.0f) * 0.5f;
  return t;
}

/* Attribute lists. */
typedef struct KV {
  const char *key;
  GPAttrValue value;
} KV;

static GPAttrs *attrs_of(const GPOp *op, const KV *kv, int32_t n) {
  const char *keys[16];
  GPAttrValue vals[16];
  for (int32_t i = 0; i < n; i++) keys[i] = kv[i].key, vals[i] = kv[i].value;
  GPAttrs *a = gp_op_attrs_new(op, n, keys, vals);
  if (!a && gp_error_kind()) die(op->name);
  return a;
}

/* ------------------------------------------------------------------------------------------ */
/* Part 1: kernels against sgemm                                                               */

typedef struct ConvShape {
  const char *name;
  int64_t C, H, W, O, K, stride, pad;
  bool nhwc;
} ConvShape;

/* One kernel and its baseline GEMM. */
typedef struct Pair {
  const GPOp *op;
  GPAttrs *attrs;
  GPTensor *ins[2];
  int32_t threads;
  int64_t M, N, K; /* baseline: C (M x N) = A (M x K) * op(B) */
  bool trans_b;
  float *a, *b, *c;
} Pair;

static double run_ours(Pair *p) {
  GPTensor *outs[4];
  int32_t nout = 0;
  const GPType *ot;
  double t0 = now();
  if (gp_eval_op(p->op, p->attrs, 2, (const GPType *const[]){NULL, NULL}, 2, p->ins, p->threads, &ot, outs, 4,
                 &nout) != 0)
    die(p->op->name);
  double t = now() - t0;
  for (int32_t i = 0; i < nout; i++) gp_release(outs[i]);
  return t;
}

static double run_gp_sgemm(Pair *p) {
  double t0 = now();
  gp_sgemm(false, p->trans_b, p->M, p->N, p->K, p->a, p->K, p->b, p->trans_b ? p->K : p->N, p->c, p->N, p->threads);
  return now() - t0;
}

static double run_sgemm(Pair *p) {
  double t0 = now();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, p->trans_b ? CblasTrans : CblasNoTrans, (blasint)p->M, (blasint)p->N,
              (blasint)p->K, 1.0f, p->a, (blasint)p->K, p->b, p->trans_b ? (blasint)p->K : (blasint)p->N, 0.0f, p->c,
              (blasint)p->N);
  return now() - t0;
}

/* Calls before the timed ones: glibc's malloc adapts its thresholds to a new size of output
 * over the first few calls (until then each call maps and faults in fresh pages). */
#define WARMUP 10

/* Median times of ours, of gp_sgemm and of the baseline, in adjacent series (the machine may be
 * shared, so they run close in time): a pause (settle), WARMUP + runs calls of ours, as many of
 * gp_sgemm, then WARMUP + runs sgemm calls (the first ones wake OpenBLAS's pool). */
static void time_pair(Pair *p, int runs, double *ours, double *gp, double *base) {
  int64_t M = p->M, N = p->N, K = p->K;
  p->a = malloc(sizeof(float) * (size_t)(M * K)), p->b = malloc(sizeof(float) * (size_t)(K * N));
  p->c = calloc((size_t)(M * N), sizeof(float));
  for (int64_t i = 0; i < M * K; i++) p->a[i] = frand();
  for (int64_t i = 0; i < K * N; i++) p->b[i] = frand();
  double *to = malloc(sizeof(double) * (size_t)runs), *tb = malloc(sizeof(double) * (size_t)runs);
  double *tg = malloc(sizeof(double) * (size_t)runs);
  settle();
  for (int r = -WARMUP; r < runs; r++) {
    double t = run_ours(p);
    if (r >= 0) to[r] = t;
  }
  for (int r = -WARMUP; r < runs; r++) { /* C += A B: C only grows, as a sum of at most 17 products */
    double t = run_gp_sgemm(p);
    if (r >= 0) tg[r] = t;
  }
  openblas_set_num_threads(p->threads); /* the kernels restore it; for clarity */
  for (int r = -WARMUP; r < runs; r++) {
    double t = run_sgemm(p);
    if (r >= 0) tb[r] = t;
  }
  *ours = median(to, runs);
  *base = median(tb, runs);
  *gp = median(tg, runs);
  free(tg);
  free(to);
  free(tb);
  free(p->a);
  free(p->b);
  free(p->c);
}

static void bench_kernels(int32_t threads, int runs) {
  static const ConvShape shapes[] = {
      {"conv 7x7/2 3->64 @224 (stem)", 3, 224, 224, 64, 7, 2, 3, false},
      {"conv 1x1 64->64 @56", 64, 56, 56, 64, 1, 1, 0, false},
      {"conv 3x3 64->64 @56", 64, 56, 56, 64, 3, 1, 1, false},
      {"conv 1x1 256->64 @56", 256, 56, 56, 64, 1, 1, 0, false},
      {"conv 1x1 64->256 @56", 64, 56, 56, 256, 1, 1, 0, false},
      {"conv 3x3/2 128->128 @56", 128, 56, 56, 128, 3, 2, 1, false},
      {"conv 1x1/2 512->1024 @28", 512, 28, 28, 1024, 1, 2, 0, false},
      {"conv 3x3 256->256 @14", 256, 14, 14, 256, 3, 1, 1, false},
      {"conv 1x1 2048->512 @7", 2048, 7, 7, 512, 1, 1, 0, false},
      {"conv 3x3 512->512 @7", 512, 7, 7, 512, 3, 1, 1, false},
      {"conv 3x3 64->64 @56 NHWC", 64, 56, 56, 64, 3, 1, 1, true},
  };
  const GPOp *conv = gp_op_get("nn.conv2d"), *dense = gp_op_get("nn.dense");
  if (!conv || !dense) die("ops");
  printf("%-32s %6s %6s %6s  %9s %9s %10s %6s\n", "kernel (batch 1, float32)", "M", "N", "K", "ours GF/s",
         "gp_sgemm", "cblas_sgemm", "ratio");
  double worst = 1e9;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const ConvShape *s = &shapes[i];
    int64_t OH = (s->H + 2 * s->pad - s->K) / s->stride + 1, OW = (s->W + 2 * s->pad - s->K) / s->stride + 1;
    int64_t M = s->O, N = OH * OW, K = s->C * s->K * s->K;
    GPTensor *x = s->nhwc ? rand_tensor(4, (const int64_t[]){1, s->H, s->W, s->C}, -1, 1)
                          : rand_tensor(4, (const int64_t[]){1, s->C, s->H, s->W}, -1, 1);
    GPTensor *w = s->nhwc ? rand_tensor(4, (const int64_t[]){s->K, s->K, s->C, s->O}, -1, 1)
                          : rand_tensor(4, (const int64_t[]){s->O, s->C, s->K, s->K}, -1, 1);
    const int64_t st[2] = {s->stride, s->stride}, pd[4] = {s->pad, s->pad, s->pad, s->pad};
    KV kv[] = {{"strides", gp_attr_ints(2, st)},
               {"padding", gp_attr_ints(4, pd)},
               {"data_layout", gp_attr_str(s->nhwc ? "NHWC" : "NCHW")},
               {"kernel_layout", gp_attr_str(s->nhwc ? "HWIO" : "OIHW")}};
    GPAttrs *a = attrs_of(conv, kv, 4);
    /* NHWC lowers to (P x K) * (K x O): the same GEMM transposed */
    Pair p = {conv, a, {x, w}, threads, s->nhwc ? N : M, s->nhwc ? M : N, K, false, NULL, NULL, NULL};
    double tk, tp, tg;
    time_pair(&p, runs, &tk, &tp, &tg);
    double fl = 2.0 * (double)M * (double)N * (double)K;
    double r = tg / tk;
    if (r < worst) worst = r;
    printf("%-32s %6lld %6lld %6lld  %9.1f %9.1f %10.1f %5.0f%%\n", s->name, (long long)M, (long long)N, (long long)K,
           fl / tk * 1e-9, fl / tp * 1e-9, fl / tg * 1e-9, 100 * r);
    gp_release(a);
    gp_release(x);
    gp_release(w);
  }
  {
    GPTensor *x = rand_tensor(2, (const int64_t[]){1, 2048}, -1, 1);
    GPTensor *w = rand_tensor(2, (const int64_t[]){1000, 2048}, -1, 1);
    Pair p = {dense, NULL, {x, w}, threads, 1, 1000, 2048, true, NULL, NULL, NULL};
    double tk, tp, tg;
    time_pair(&p, runs, &tk, &tp, &tg);
    double fl = 2.0 * 1000 * 2048, r = tg / tk;
    if (r < worst) worst = r;
    printf("%-32s %6d %6d %6d  %9.1f %9.1f %10.1f %5.0f%%\n", "dense 2048->1000", 1, 1000, 2048, fl / tk * 1e-9,
           fl / tp * 1e-9, fl / tg * 1e-9, 100 * r);
    gp_release(x);
    gp_release(w);
  }
  printf("lowest ratio: %.0f%% (goal >= 70%%)\n\n", 100 * worst);
}

/* ------------------------------------------------------------------------------------------ */
/* Part 2: ResNet-50                                                                           */

typedef struct Net {
  const GPOp *conv, *bn, *relu, *add, *maxpool, *gap, *flatten, *dense, *bias_add, *softmax;
  int64_t params;
} Net;

static GPExpr *constant(Net *n, int32_t ndim, const int64_t *shape, float lo, float hi) {
  GPTensor *t = rand_tensor(ndim, shape, lo, hi);
  int64_t c = 1;
  for (int32_t i = 0; i < ndim; i++) c *= shape[i];
  n->params += c;
  GPConstant *k = gp_constant_new(t);
  gp_release(t);
  return &k->base;
}

/* call(op, args...) with attrs; takes (releases) the args and attrs. */
static GPExpr *call(const GPOp *op, int32_t nargs, GPExpr **args, GPAttrs *attrs) {
  GPCall *c = gp_call_new((GPExpr *)op, nargs, args, attrs);
  if (!c) die(op->name);
  for (int32_t i = 0; i < nargs; i++) gp_release(args[i]);
  gp_release(attrs);
  return &c->base;
}

/* conv (no bias) + batch_norm [+ relu]; takes x. */
static GPExpr *conv_bn(Net *n, GPExpr *x, int64_t cin, int64_t cout, int64_t k, int64_t stride, bool relu) {
  float bound = sqrtf(6.0f / (float)(cin * k * k)); /* He-uniform */
  GPExpr *w = constant(n, 4, (const int64_t[]){cout, cin, k, k}, -bound, bound);
  const int64_t st[2] = {stride, stride}, pd[2] = {k / 2, k / 2};
  KV kv[] = {{"strides", gp_attr_ints(2, st)}, {"padding", gp_attr_ints(2, pd)}, {"channels", gp_attr_int(cout)},
             {"kernel_size", gp_attr_ints(2, (const int64_t[]){k, k})}};
  GPExpr *y = call(n->conv, 2, (GPExpr *[]){x, w}, attrs_of(n->conv, kv, 4));
  const int64_t c1[1] = {cout};
  GPExpr *g = constant(n, 1, c1, 0.8f, 1.2f), *b = constant(n, 1, c1, -0.1f, 0.1f);
  GPExpr *m = constant(n, 1, c1, -0.1f, 0.1f), *v = constant(n, 1, c1, 0.8f, 1.2f);
  GPExpr *bn = call(n->bn, 5, (GPExpr *[]){y, g, b, m, v}, attrs_of(n->bn, NULL, 0));
  GPTupleGetItem *gi = gp_tuple_get_item_new(bn, 0);
  gp_release(bn);
  y = &gi->base;
  if (relu) y = call(n->relu, 1, (GPExpr *[]){y}, NULL);
  return y;
}

static GPExpr *bottleneck(Net *n, GPExpr *x, int64_t cin, int64_t width, int64_t stride) {
  int64_t cout = width * 4;
  GPExpr *shortcut;
  if (stride != 1 || cin != cout) {
    gp_retain(x);
    shortcut = conv_bn(n, x, cin, cout, 1, stride, false);
  } else {
    shortcut = gp_retain(x);
  }
  GPExpr *y = conv_bn(n, x, cin, width, 1, 1, true);
  y = conv_bn(n, y, width, width, 3, stride, true);
  y = conv_bn(n, y, width, cout, 1, 1, false);
  y = call(n->add, 2, (GPExpr *[]){y, shortcut}, NULL);
  return call(n->relu, 1, (GPExpr *[]){y}, NULL);
}

static GPModule *resnet50(Net *n) {
  n->conv = gp_op_get("nn.conv2d"), n->bn = gp_op_get("nn.batch_norm"), n->relu = gp_op_get("nn.relu");
  n->add = gp_op_get("add"), n->maxpool = gp_op_get("nn.max_pool2d"), n->gap = gp_op_get("nn.global_avg_pool2d");
  n->flatten = gp_op_get("nn.batch_flatten"), n->dense = gp_op_get("nn.dense"), n->bias_add = gp_op_get("nn.bias_add");
  n->softmax = gp_op_get("nn.softmax");
  if (!n->conv || !n->bn || !n->relu || !n->add || !n->maxpool || !n->gap || !n->flatten || !n->dense ||
      !n->bias_add || !n->softmax)
    die("ops");
  const GPType *in_t = gp_type_tensor(GP_DT_F32, 4, (const int64_t[]){1, 3, 224, 224});
  GPVar *data = gp_var_new("data", in_t);
  GPExpr *y = conv_bn(n, gp_retain(&data->base), 3, 64, 7, 2, true);
  KV mp[] = {{"pool_size", gp_attr_ints(2, (const int64_t[]){3, 3})},
             {"strides", gp_attr_ints(2, (const int64_t[]){2, 2})},
             {"padding", gp_attr_ints(2, (const int64_t[]){1, 1})}};
  y = call(n->maxpool, 1, (GPExpr *[]){y}, attrs_of(n->maxpool, mp, 3));
  static const int64_t blocks[4] = {3, 4, 6, 3}, widths[4] = {64, 128, 256, 512};
  int64_t cin = 64;
  for (int s = 0; s < 4; s++)
    for (int64_t b = 0; b < blocks[s]; b++) {
      y = bottleneck(n, y, cin, widths[s], b == 0 && s > 0 ? 2 : 1);
      cin = widths[s] * 4;
    }
  y = call(n->gap, 1, (GPExpr *[]){y}, attrs_of(n->gap, NULL, 0));
  y = call(n->flatten, 1, (GPExpr *[]){y}, NULL);
  float bound = sqrtf(1.0f / 2048.0f);
  GPExpr *w = constant(n, 2, (const int64_t[]){1000, 2048}, -bound, bound);
  y = call(n->dense, 2, (GPExpr *[]){y, w}, attrs_of(n->dense, (KV[]){{"units", gp_attr_int(1000)}}, 1));
  GPExpr *bias = constant(n, 1, (const int64_t[]){1000}, -0.1f, 0.1f);
  y = call(n->bias_add, 2, (GPExpr *[]){y, bias}, attrs_of(n->bias_add, NULL, 0));
  y = call(n->softmax, 1, (GPExpr *[]){y}, attrs_of(n->softmax, NULL, 0));
  GPFunctionExpr *f = gp_function_new(1, &data, y, NULL, NULL);
  if (!f) die("function");
  gp_release(y);
  gp_release(data);
  GPModule *m = gp_module_new("resnet50");
  if (gp_module_add(m, "main", f, false) != 0) die("module_add");
  gp_release(f);
  GPModule *typed = gp_infer_types(m);
  if (!typed) die("InferType");
  gp_release(m);
  return typed;
}

static void bench_resnet(int32_t threads, int runs) {
  Net n = {0};
  double t0 = now();
  GPModule *m = resnet50(&n);
  double tb = now() - t0;
  GPTensor *x = rand_tensor(4, (const int64_t[]){1, 3, 224, 224}, -1, 1);
  if (runs < 3) runs = 3;
  double *t = malloc(sizeof(double) * (size_t)runs);
  GPEvalOptions opts = {.struct_size = sizeof opts, .abi_version = GP_ABI_VERSION, .num_threads = threads};
  settle();
  double sum = 0;
  int best = 0;
  for (int r = -1; r < runs; r++) {
    GPTensor **outs = NULL;
    int32_t nout = 0;
    double s0 = now();
    if (gp_eval_function(m, "main", 1, &x, &outs, &nout, &opts) != 0) die("eval_function");
    double s1 = now();
    if (r >= 0) t[r] = s1 - s0;
    if (nout != 1 || outs[0]->dl.ndim != 2 || outs[0]->dl.shape[1] != 1000) {
      fprintf(stderr, "bench_eval: unexpected ResNet-50 result\n");
      exit(1);
    }
    const float *p = outs[0]->dl.data;
    sum = 0;
    best = 0;
    for (int i = 0; i < 1000; i++) {
      sum += p[i];
      if (p[i] > p[best]) best = i;
    }
    for (int32_t i = 0; i < nout; i++) gp_release(outs[i]);
    gp_free(outs);
  }
  printf("ResNet-50 (batch 1, NCHW float32, 224x224; %.1fM parameters; built and typed in %.0f ms)\n",
         (double)n.params * 1e-6, tb * 1e3);
  printf("  gp_eval_function, %d threads: median %.1f ms of %d runs (", (int)threads, median(t, runs) * 1e3, runs);
  for (int r = 0; r < runs; r++) printf("%s%.1f", r ? ", " : "", t[r] * 1e3);
  printf(" ms sorted); goal < 1000 ms\n");
  printf("  %lld ops run, peak intermediates %.1f MB; softmax sums to %.6f, argmax %d\n", (long long)opts.ops_run,
         (double)opts.peak_bytes / 1048576.0, sum, best);
  free(t);
  gp_release(x);
  gp_release(m);
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 7;
  if (runs < 1) runs = 1;
  int32_t threads = argc > 3 && atoi(argv[3]) > 0 ? atoi(argv[3]) : gp_eval_default_threads();
  const char *ct = getenv("OPENBLAS_CORETYPE");
  printf("bench_eval: %d threads, %d runs per figure (median); gp_sgemm path %s; cblas_sgemm is OpenBLAS's %s "
         "kernel (OPENBLAS_CORETYPE=%s)\n\n",
         (int)threads, runs, gp_sgemm_isa_name(), gp_blas_corename(), ct ? ct : "unset");
  const char *part = argc > 2 ? argv[2] : "";
  if (strcmp(part, "resnet") != 0) bench_kernels(threads, runs);
  if (strcmp(part, "kernels") != 0) bench_resnet(threads, runs);
  return 0;
}
