/* gen_model.c -- writes a CNN as ONNX, with pseudo-random float32 weights as initializers
 * (raw_data), as torchvision exports it.  Three architectures:
 *  - densenet (default DenseNet-121): conv0 7x7/2, norm0, relu, max pool 3/2; dense blocks whose
 *    every layer concatenates all the block's feature maps so far and runs BN -> ReLU -> conv 1x1
 *    (bn_size * growth) -> BN -> ReLU -> conv 3x3 (growth); a transition (BN -> ReLU -> conv 1x1
 *    halving the channels -> average pool 2/2) between blocks; norm5, ReLU, global average pool,
 *    flatten and a Gemm classifier (blocks 6,12,24,16, growth 32, 64 initial channels: 8.06M
 *    weights, 32 MB).
 *  - mobilenet_v2: conv 3x3/2 (32), BN, ReLU6 (Clip 0..6); inverted residual blocks (t, c, n, s)
 *    = (1,16,1,1) (6,24,2,2) (6,32,3,2) (6,64,4,2) (6,96,3,1) (6,160,3,2) (6,320,1,1): conv 1x1
 *    expanding t times (when t > 1), BN, ReLU6, depthwise conv 3x3 (stride s), BN, ReLU6, conv
 *    1x1 projecting, BN, and an add of the block's input when the stride is 1 and the channels
 *    match; conv 1x1 (1280), BN, ReLU6, global average pool, flatten, Gemm (3.5M weights).
 *    --width P scales the channels by P percent, rounded as torchvision does (to multiples of 8).
 *  - efficientnet_b0: conv 3x3/2 (32), BN, SiLU (x * Sigmoid(x)); MBConv blocks (expand, kernel,
 *    stride, in, out, layers) = (1,3,1,32,16,1) (6,3,2,16,24,2) (6,5,2,24,40,2) (6,3,2,40,80,3)
 *    (6,5,1,80,112,3) (6,5,2,112,192,4) (6,3,1,192,320,1): conv 1x1 expanding, BN, SiLU, depthwise
 *    conv, BN, SiLU, squeeze and excitation (global pool, conv 1x1 with bias to in / 4, SiLU, conv
 *    1x1 with bias back, Sigmoid, multiply), conv 1x1 projecting, BN, and the add of the input
 *    when the stride is 1 and the channels match; conv 1x1 (1280), BN, SiLU, pool, flatten, Gemm
 *    (5.33M weights).
 * All take 224x224 images and 1000 classes unless --size / --classes say otherwise.
 *
 * The same arguments and seed always give the same file, byte for byte, so a test can build
 * the model at run time and compare with an output computed once by another runtime (ONNX
 * Runtime) from that file.  Weights: conv and Gemm He-uniform (+-sqrt(6 / fan_in)); batch-norm
 * scale and variance from [0.5, 1.5], bias and mean from [-0.05, 0.05]; Gemm bias 0.  Options
 * that would make more than 1e9 weights are refused before anything is allocated for them.
 *   build/bin/gen_model densenet /tmp/densenet121.onnx
 *   build/bin/gen_model densenet tiny.onnx --blocks 2,3 --growth 4 --init 8 --size 32 --classes 10
 *   build/bin/gen_model mobilenet_v2 /tmp/mobilenet_v2.onnx
 * usage: gen_model densenet OUT.onnx [--blocks L1,L2,...] [--growth G] [--bn-size B] [--init C] [common]
 *        gen_model mobilenet_v2 OUT.onnx [--width P] [common]
 *        gen_model efficientnet_b0 OUT.onnx [common]
 *        common: [--size S] [--classes K] [--seed N] */
#include "../frontend/onnx/onnx_impl.h"
#include "bench_util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- everything the model holds is allocated here and freed at exit */
static void **owned;
static size_t n_owned, cap_owned;

static void *own(void *p) {
  if (n_owned == cap_owned) {
    cap_owned = cap_owned ? 2 * cap_owned : 1024;
    owned = gp_realloc(owned, cap_owned * sizeof *owned);
  }
  return owned[n_owned++] = p;
}
static void *zalloc(size_t n) { return own(gp_calloc(1, n ? n : 1)); }

/* A name made from a printf format (owned). */
static char *nm(const char *fmt, ...) GP_FMT(1, 2);
static char *nm(const char *fmt, ...) {
  char buf[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  size_t n = strlen(buf);
  char *s = zalloc(n + 1);
  memcpy(s, buf, n);
  return s;
}

static uint64_t rng_state;
static double rnd01(void) { return bench_rnd01(&rng_state); }

/* ---- the graph under construction: its node and initializer arrays grow here (not owned:
 * freed at exit).  In a dry run (counting) initializers only count their weights. */
static Gponnx__GraphProto graph = GPONNX__GRAPH_PROTO__INIT;
static size_t cap_node, cap_init;
static double weight_count;
static bool counting;
static const char *clip_lo, *clip_hi; /* bn_relu6's bounds, made on first use */

/* A float32 initializer named `name` of the given dims, values from [lo, hi). */
static const char *initializer(const char *name, int32_t nd, const int64_t *dims, double lo, double hi) {
  double numel = 1;
  for (int32_t d = 0; d < nd; d++) numel *= (double)dims[d];
  weight_count += numel;
  if (counting) return name;
  Gponnx__TensorProto *t = zalloc(sizeof *t);
  gponnx__tensor_proto__init(t);
  t->name = (char *)name;
  t->has_data_type = 1;
  t->data_type = GPONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  t->n_dims = (size_t)nd;
  t->dims = zalloc((size_t)nd * sizeof *t->dims);
  for (int32_t d = 0; d < nd; d++) t->dims[d] = dims[d];
  size_t n = (size_t)numel;
  float *v = zalloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = (float)(lo + (hi - lo) * rnd01());
  t->has_raw_data = 1;
  t->raw_data.data = (uint8_t *)v;
  t->raw_data.len = n * sizeof *v;
  if (graph.n_initializer == cap_init) {
    cap_init = cap_init ? 2 * cap_init : 256;
    graph.initializer = gp_realloc(graph.initializer, cap_init * sizeof *graph.initializer);
  }
  graph.initializer[graph.n_initializer++] = t;
  return name;
}

/* Forgets the graph built so far (a dry run's). */
static void graph_reset(void) {
  for (size_t i = 0; i < n_owned; i++) gp_free(owned[i]);
  n_owned = 0;
  graph.n_node = graph.n_initializer = 0;
  weight_count = 0;
  clip_lo = clip_hi = NULL;
}

static Gponnx__AttributeProto *attr(const char *name, Gponnx__AttributeProto__AttributeType type) {
  Gponnx__AttributeProto *a = zalloc(sizeof *a);
  gponnx__attribute_proto__init(a);
  a->name = (char *)name;
  a->has_type = 1;
  a->type = type;
  return a;
}
static Gponnx__AttributeProto *attr_ints(const char *name, int64_t v0, int64_t v1, int32_t n) {
  Gponnx__AttributeProto *a = attr(name, GPONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->n_ints = (size_t)n;
  a->ints = zalloc((size_t)n * sizeof *a->ints);
  for (int32_t i = 0; i < n; i++) a->ints[i] = i % 2 ? v1 : v0;
  return a;
}
static Gponnx__AttributeProto *attr_int(const char *name, int64_t v) {
  Gponnx__AttributeProto *a = attr(name, GPONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->has_i = 1;
  a->i = v;
  return a;
}
static Gponnx__AttributeProto *attr_float(const char *name, float v) {
  Gponnx__AttributeProto *a = attr(name, GPONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  a->has_f = 1;
  a->f = v;
  return a;
}

/* Node `op` from nin inputs to one output, named `out`; nattr attributes follow. */
static const char *node(const char *op, const char *out, int32_t nin, const char *const *in, int32_t nattr, ...) {
  Gponnx__NodeProto *n = zalloc(sizeof *n);
  gponnx__node_proto__init(n);
  n->op_type = (char *)op;
  n->name = (char *)out;
  n->n_input = (size_t)nin;
  n->input = zalloc((size_t)nin * sizeof *n->input);
  for (int32_t i = 0; i < nin; i++) n->input[i] = (char *)in[i];
  n->n_output = 1;
  n->output = zalloc(sizeof *n->output);
  n->output[0] = (char *)out;
  n->n_attribute = (size_t)nattr;
  n->attribute = zalloc((size_t)nattr * sizeof *n->attribute);
  va_list ap;
  va_start(ap, nattr);
  for (int32_t i = 0; i < nattr; i++) n->attribute[i] = va_arg(ap, Gponnx__AttributeProto *);
  va_end(ap);
  if (graph.n_node == cap_node) {
    cap_node = cap_node ? 2 * cap_node : 256;
    graph.node = gp_realloc(graph.node, cap_node * sizeof *graph.node);
  }
  graph.node[graph.n_node++] = n;
  return out;
}

/* ---- layers, each named by its torchvision module path p */
static const char *conv_b(const char *p, const char *x, int64_t cin, int64_t cout, int64_t k, int64_t stride,
                          int64_t group, bool bias) {
  const int64_t wd[4] = {cout, cin / group, k, k}, bd[1] = {cout}, pad = k / 2;
  double a = sqrt(6.0 / (double)(cin / group * k * k));
  const char *in[3] = {x, initializer(nm("%s.weight", p), 4, wd, -a, a),
                       bias ? initializer(nm("%s.bias", p), 1, bd, -0.05, 0.05) : NULL};
  return node("Conv", nm("%s", p), bias ? 3 : 2, in, group == 1 ? 4 : 5, attr_ints("kernel_shape", k, k, 2),
              attr_ints("strides", stride, stride, 2), attr_ints("pads", pad, pad, 4), attr_ints("dilations", 1, 1, 2),
              attr_int("group", group));
}

static const char *conv(const char *p, const char *x, int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t group) {
  return conv_b(p, x, cin, cout, k, stride, group, false);
}

static const char *bn(const char *p, const char *x, int64_t c) {
  const int64_t d[1] = {c};
  const char *in[5] = {x, initializer(nm("%s.weight", p), 1, d, 0.5, 1.5), initializer(nm("%s.bias", p), 1, d, -0.05, 0.05),
                       initializer(nm("%s.running_mean", p), 1, d, -0.05, 0.05),
                       initializer(nm("%s.running_var", p), 1, d, 0.5, 1.5)};
  return node("BatchNormalization", nm("%s", p), 5, in, 1, attr_float("epsilon", 1e-5f));
}

static const char *bn_relu(const char *p, const char *x, int64_t c) {
  const char *y = bn(p, x, c);
  return node("Relu", nm("%s.relu", p), 1, &y, 0);
}

/* ReLU6 as torch exports it at opset 13: Clip(x, 0, 6), its bounds two scalar initializers that
 * every Clip shares. */
static const char *bn_relu6(const char *p, const char *x, int64_t c) {
  if (!clip_lo) {
    clip_lo = initializer("relu6.min", 0, NULL, 0, 0);
    clip_hi = initializer("relu6.max", 0, NULL, 6, 6);
  }
  const char *in[3] = {bn(p, x, c), clip_lo, clip_hi};
  return node("Clip", nm("%s.relu6", p), 3, in, 0);
}

/* SiLU as torch exports it at opset 13: x * Sigmoid(x). */
static const char *silu(const char *p, const char *x) {
  const char *in[2] = {x, node("Sigmoid", nm("%s.sigmoid", p), 1, &x, 0)};
  return node("Mul", nm("%s.silu", p), 2, in, 0);
}

static const char *concat(const char *out, int32_t n, const char *const *xs) {
  return node("Concat", out, n, xs, 1, attr_int("axis", 1));
}

/* Global average pool, flatten, Gemm to `classes` (named as torchvision's classifier). */
static void head(const char *x, int64_t c, int64_t classes) {
  x = node("GlobalAveragePool", "pool", 1, &x, 0);
  x = node("Flatten", "flatten", 1, &x, 1, attr_int("axis", 1));
  const int64_t wd[2] = {classes, c}, bd[1] = {classes};
  double lim = sqrt(6.0 / (double)c);
  const char *in[3] = {x, initializer("classifier.weight", 2, wd, -lim, lim), initializer("classifier.bias", 1, bd, 0, 0)};
  node("Gemm", "output", 3, in, 1, attr_int("transB", 1));
}

typedef struct {
  int32_t blocks[8], nblocks;
  int64_t growth, bn_size, init, width, size, classes;
  uint64_t seed;
} Arch;

static void build_densenet(const Arch *a) {
  const char *x = "data";
  x = conv("features.conv0", x, 3, a->init, 7, 2, 1);
  x = bn_relu("features.norm0", x, a->init);
  x = node("MaxPool", "features.pool0", 1, &x, 3, attr_ints("kernel_shape", 3, 3, 2), attr_ints("strides", 2, 2, 2),
           attr_ints("pads", 1, 1, 4));
  int64_t c = a->init;
  for (int32_t b = 0; b < a->nblocks; b++) {
    int32_t L = a->blocks[b];
    const char **feats = gp_malloc((size_t)(L + 1) * sizeof *feats);
    feats[0] = x;
    for (int32_t l = 0; l < L; l++) {
      const char *p = nm("features.denseblock%d.denselayer%d", b + 1, l + 1);
      const char *in = l == 0 ? feats[0] : concat(nm("%s.cat", p), l + 1, feats);
      int64_t cin = c + a->growth * l, mid = a->bn_size * a->growth;
      const char *y = bn_relu(nm("%s.norm1", p), in, cin);
      y = conv(nm("%s.conv1", p), y, cin, mid, 1, 1, 1);
      y = bn_relu(nm("%s.norm2", p), y, mid);
      feats[l + 1] = conv(nm("%s.conv2", p), y, mid, a->growth, 3, 1, 1);
    }
    x = concat(nm("features.denseblock%d", b + 1), L + 1, feats);
    gp_free(feats);
    c += a->growth * L;
    if (b + 1 < a->nblocks) {
      const char *p = nm("features.transition%d", b + 1);
      x = bn_relu(nm("%s.norm", p), x, c);
      x = conv(nm("%s.conv", p), x, c, c / 2, 1, 1, 1);
      x = node("AveragePool", nm("%s.pool", p), 1, &x, 2, attr_ints("kernel_shape", 2, 2, 2), attr_ints("strides", 2, 2, 2));
      c /= 2;
    }
  }
  head(bn_relu("features.norm5", x, c), c, a->classes);
}

/* torchvision's _make_divisible(v, 8): the nearest multiple of 8, at least 8, not more than
 * 10% below v. */
static int64_t divisible8(double v) {
  int64_t r = (int64_t)(v + 4) / 8 * 8;
  if (r < 8) r = 8;
  if ((double)r < 0.9 * v) r += 8;
  return r;
}

static void build_mobilenet_v2(const Arch *a) {
  static const int32_t setting[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                                        {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  double w = (double)a->width / 100;
  int64_t c = divisible8(32 * w), last = divisible8(1280 * (w > 1 ? w : 1));
  const char *x = conv("features.0.0", "data", 3, c, 3, 2, 1);
  x = bn_relu6("features.0.1", x, c);
  int32_t f = 1; /* features.f */
  for (int32_t k = 0; k < 7; k++) {
    int64_t cout = divisible8(setting[k][1] * w);
    for (int32_t i = 0; i < setting[k][2]; i++, f++) {
      int64_t stride = i == 0 ? setting[k][3] : 1, hidden = (int64_t)llround((double)c * setting[k][0]);
      const char *y = x;
      int32_t m = 0; /* features.f.conv.m */
      if (setting[k][0] != 1) {
        y = conv(nm("features.%d.conv.%d.0", f, m), y, c, hidden, 1, 1, 1);
        y = bn_relu6(nm("features.%d.conv.%d.1", f, m), y, hidden);
        m++;
      }
      y = conv(nm("features.%d.conv.%d.0", f, m), y, hidden, hidden, 3, stride, hidden);
      y = bn_relu6(nm("features.%d.conv.%d.1", f, m), y, hidden);
      m++;
      y = conv(nm("features.%d.conv.%d", f, m), y, hidden, cout, 1, 1, 1);
      y = bn(nm("features.%d.conv.%d", f, m + 1), y, cout);
      if (stride == 1 && c == cout) {
        const char *in[2] = {x, y};
        y = node("Add", nm("features.%d.add", f), 2, in, 0);
      }
      x = y;
      c = cout;
    }
  }
  x = conv(nm("features.%d.0", f), x, c, last, 1, 1, 1);
  head(bn_relu6(nm("features.%d.1", f), x, last), last, a->classes);
}

static Gponnx__ValueInfoProto *value_info(const char *name, int32_t nd, const int64_t *dims) {
  Gponnx__ValueInfoProto *v = zalloc(sizeof *v);
  gponnx__value_info_proto__init(v);
  v->name = (char *)name;
  Gponnx__TypeProto *t = zalloc(sizeof *t);
  gponnx__type_proto__init(t);
  Gponnx__TypeProto__Tensor *tt = zalloc(sizeof *tt);
  gponnx__type_proto__tensor__init(tt);
  tt->has_elem_type = 1;
  tt->elem_type = GPONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  Gponnx__TensorShapeProto *sh = zalloc(sizeof *sh);
  gponnx__tensor_shape_proto__init(sh);
  sh->n_dim = (size_t)nd;
  sh->dim = zalloc((size_t)nd * sizeof *sh->dim);
  for (int32_t i = 0; i < nd; i++) {
    Gponnx__TensorShapeProto__Dimension *d = zalloc(sizeof *d);
    gponnx__tensor_shape_proto__dimension__init(d);
    d->value_case = GPONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d->dim_value = dims[i];
    sh->dim[i] = d;
  }
  tt->shape = sh;
  t->value_case = GPONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  t->tensor_type = tt;
  v->type = t;
  return v;
}

/* torchvision's efficientnet_b0 (width and depth 1.0): MBConv blocks (expand ratio, kernel,
 * stride, in, out, layers); stochastic depth and dropout are the identity when inferring. */
static void build_efficientnet_b0(const Arch *a) {
  static const int32_t setting[7][6] = {{1, 3, 1, 32, 16, 1},   {6, 3, 2, 16, 24, 2},   {6, 5, 2, 24, 40, 2},
                                        {6, 3, 2, 40, 80, 3},   {6, 5, 1, 80, 112, 3},  {6, 5, 2, 112, 192, 4},
                                        {6, 3, 1, 192, 320, 1}};
  const char *x = conv("features.0.0", "data", 3, 32, 3, 2, 1);
  x = silu("features.0", bn("features.0.1", x, 32));
  for (int32_t k = 0; k < 7; k++) {
    const int32_t *st = setting[k];
    for (int32_t i = 0; i < st[5]; i++) {
      int64_t cin = i == 0 ? st[3] : st[4], cout = st[4], stride = i == 0 ? st[2] : 1, exp = cin * st[0];
      const char *p = nm("features.%d.%d.block", k + 1, i), *y = x;
      int32_t m = 0; /* block.m */
      if (exp != cin) {
        y = conv(nm("%s.%d.0", p, m), y, cin, exp, 1, 1, 1);
        y = silu(nm("%s.%d", p, m), bn(nm("%s.%d.1", p, m), y, exp));
        m++;
      }
      y = conv(nm("%s.%d.0", p, m), y, exp, exp, st[1], stride, exp);
      y = silu(nm("%s.%d", p, m), bn(nm("%s.%d.1", p, m), y, exp));
      m++;
      /* squeeze and excitation: pool, conv 1x1 to in / 4 (bias), SiLU, conv 1x1 back (bias), Sigmoid, scale */
      int64_t sq = cin / 4 > 1 ? cin / 4 : 1;
      const char *s = node("GlobalAveragePool", nm("%s.%d.avgpool", p, m), 1, &y, 0);
      s = silu(nm("%s.%d.fc1", p, m), conv_b(nm("%s.%d.fc1", p, m), s, exp, sq, 1, 1, 1, true));
      s = conv_b(nm("%s.%d.fc2", p, m), s, sq, exp, 1, 1, 1, true);
      s = node("Sigmoid", nm("%s.%d.scale", p, m), 1, &s, 0);
      const char *in[2] = {y, s};
      y = node("Mul", nm("%s.%d.mul", p, m), 2, in, 0);
      m++;
      y = bn(nm("%s.%d.1", p, m), conv(nm("%s.%d.0", p, m), y, exp, cout, 1, 1, 1), cout);
      if (stride == 1 && cin == cout) {
        const char *r[2] = {x, y};
        y = node("Add", nm("features.%d.%d.add", k + 1, i), 2, r, 0);
      }
      x = y;
    }
  }
  x = conv("features.8.0", x, 320, 1280, 1, 1, 1);
  head(silu("features.8", bn("features.8.1", x, 1280)), 1280, a->classes);
}

static int usage(void) {
  fprintf(stderr, "usage: gen_model densenet OUT.onnx [--blocks L1,L2,...] [--growth G] [--bn-size B] [--init C] [common]\n"
                  "       gen_model mobilenet_v2 OUT.onnx [--width P] [common]\n"
                  "       gen_model efficientnet_b0 OUT.onnx [common]\n"
                  "       common: [--size S] [--classes K] [--seed N]\n");
  return 2;
}

/* A positive integer option value, or -1. */
static int64_t posint(const char *s) {
  char *end;
  long long v = strtoll(s, &end, 10);
  return *s && !*end && v > 0 && v <= 1 << 20 ? v : -1;
}

/* --blocks L1,L2,...: 1 to 8 layer counts of 1 to 1000. */
static int parse_blocks(Arch *a, const char *v) {
  a->nblocks = 0;
  for (const char *s = v; *s;) {
    char *end;
    long l = strtol(s, &end, 10);
    if (end == s || l <= 0 || l > 1000 || a->nblocks == 8 || (*end && *end != ',')) return -1;
    a->blocks[a->nblocks++] = (int32_t)l;
    s = *end ? end + 1 : end;
  }
  return a->nblocks ? 0 : -1;
}

int main(int argc, char **argv) {
  Arch a = {.blocks = {6, 12, 24, 16}, .nblocks = 4, .growth = 32, .bn_size = 4, .init = 64, .width = 100, .size = 224,
            .classes = 1000, .seed = 1};
  if (argc < 3 || argv[2][0] == '-') return usage();
  const char *arch = argv[1], *path = argv[2];
  bool densenet = !strcmp(arch, "densenet"), mobilenet = !strcmp(arch, "mobilenet_v2");
  if (!densenet && !mobilenet && strcmp(arch, "efficientnet_b0") != 0) {
    fprintf(stderr, "gen_model: unknown architecture '%s' (densenet, mobilenet_v2, efficientnet_b0)\n", arch);
    return 2;
  }
  for (int i = 3; i < argc; i += 2) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    bool dense_only = !strcmp(o, "--blocks") || !strcmp(o, "--growth") || !strcmp(o, "--bn-size") || !strcmp(o, "--init");
    if ((dense_only && !densenet) || (!strcmp(o, "--width") && !mobilenet)) {
      fprintf(stderr, "gen_model: %s is an option of %s only\n", o, dense_only ? "densenet" : "mobilenet_v2");
      return 2;
    }
    if (!v) return usage();
    if (!strcmp(o, "--blocks")) {
      if (parse_blocks(&a, v) != 0) {
        fprintf(stderr, "gen_model: --blocks %s: want 1 to 8 layer counts, e.g. 6,12,24,16\n", v);
        return 2;
      }
      continue;
    }
    int64_t n = posint(v);
    if (n < 0) {
      fprintf(stderr, "gen_model: %s %s: want a positive integer\n", o, v);
      return 2;
    }
    if (!strcmp(o, "--growth")) a.growth = n;
    else if (!strcmp(o, "--bn-size")) a.bn_size = n;
    else if (!strcmp(o, "--init")) a.init = n;
    else if (!strcmp(o, "--width")) a.width = n;
    else if (!strcmp(o, "--size")) a.size = n;
    else if (!strcmp(o, "--classes")) a.classes = n;
    else if (!strcmp(o, "--seed")) a.seed = (uint64_t)n;
    else return usage();
  }
  if (densenet) { /* conv0 /2, pool0 /2, one /2 per transition: the last block's maps must not vanish */
    int64_t hw = a.size;
    for (int32_t k = 0; k < 2 + a.nblocks - 1; k++) hw = hw / 2 + (k < 2 ? hw % 2 : 0);
    if (hw < 1) {
      fprintf(stderr, "gen_model: --size %lld is too small for %d blocks\n", (long long)a.size, a.nblocks);
      return 2;
    }
  }
  void (*build)(const Arch *) = densenet ? build_densenet : mobilenet ? build_mobilenet_v2 : build_efficientnet_b0;
  counting = true; /* a dry run counts the weights first */
  build(&a);
  counting = false;
  int rc = 0;
  if (weight_count > 1e9) {
    fprintf(stderr, "gen_model: these options make %.3g weights (at most 1e9: 4 GB)\n", weight_count);
    rc = 2;
  } else {
    graph_reset();
    rng_state = a.seed;
    build(&a);
    const int64_t in_dims[4] = {1, 3, a.size, a.size}, out_dims[2] = {1, a.classes};
    Gponnx__ValueInfoProto *in = value_info("data", 4, in_dims), *out = value_info("output", 2, out_dims);
    graph.name = (char *)arch;
    graph.n_input = 1;
    graph.input = &in;
    graph.n_output = 1;
    graph.output = &out;
    Gponnx__OperatorSetIdProto opset = GPONNX__OPERATOR_SET_ID_PROTO__INIT;
    opset.domain = "";
    opset.has_version = 1;
    opset.version = 13;
    Gponnx__OperatorSetIdProto *opsets = &opset;
    Gponnx__ModelProto m = GPONNX__MODEL_PROTO__INIT;
    m.has_ir_version = 1;
    m.ir_version = 8;
    m.producer_name = "graphpass gen_model";
    m.n_opset_import = 1;
    m.opset_import = &opsets;
    m.graph = &graph;
    size_t len;
    if (ox_write_model(&m, path, &len) != 0) {
      fprintf(stderr, "gen_model: %s\n", gp_error_message());
      rc = 1;
    } else {
      printf("%s: %s, %zu nodes, %.2fM weights, %zu bytes\n", path, arch, graph.n_node, weight_count / 1e6, len);
    }
  }
  graph_reset();
  gp_free(graph.node);
  gp_free(graph.initializer);
  gp_free(owned);
  return rc;
}
