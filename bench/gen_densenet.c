/* gen_densenet.c -- writes a DenseNet as ONNX, with pseudo-random float32 weights as
 * initializers (raw_data), as torchvision's densenet121 exports it: conv0 7x7/2, norm0, relu,
 * max pool 3/2; dense blocks whose every layer concatenates all the block's feature maps so far
 * and runs BN -> ReLU -> conv 1x1 (bn_size * growth) -> BN -> ReLU -> conv 3x3 (growth); a
 * transition (BN -> ReLU -> conv 1x1 halving the channels -> average pool 2/2) between blocks;
 * norm5, ReLU, global average pool, flatten and a Gemm classifier.  The default is DenseNet-121
 * (blocks 6,12,24,16, growth 32, 64 initial channels, 224x224, 1000 classes: 8.0M weights, 32 MB).
 *
 * The same arguments and seed always give the same file, byte for byte, so a test can build
 * the model at run time and compare with an output computed once by another runtime (ONNX
 * Runtime) from that file.  Weights: conv and Gemm He-uniform (+-sqrt(6 / fan_in)); batch-norm
 * scale and variance from [0.5, 1.5], bias and mean from [-0.05, 0.05]; Gemm bias 0.
 *   build/bin/gen_densenet /tmp/densenet121.onnx
 *   build/bin/gen_densenet tiny.onnx --blocks 2,3 --growth 4 --init 8 --size 32 --classes 10
 * usage: gen_densenet OUT.onnx [--blocks L1,L2,...] [--growth G] [--bn-size B] [--init C]
 *                              [--size S] [--classes K] [--seed N] */
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
 * freed at exit) */
static Gponnx__GraphProto graph = GPONNX__GRAPH_PROTO__INIT;
static size_t cap_node, cap_init;
static double weight_count;

/* A float32 initializer named `name` of the given dims, values from [lo, hi). */
static const char *initializer(const char *name, int32_t nd, const int64_t *dims, double lo, double hi) {
  Gponnx__TensorProto *t = zalloc(sizeof *t);
  gponnx__tensor_proto__init(t);
  t->name = (char *)name;
  t->has_data_type = 1;
  t->data_type = GPONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  t->n_dims = (size_t)nd;
  t->dims = zalloc((size_t)nd * sizeof *t->dims);
  size_t numel = 1;
  for (int32_t d = 0; d < nd; d++) numel *= (size_t)(t->dims[d] = dims[d]);
  float *v = zalloc(numel * sizeof *v);
  for (size_t i = 0; i < numel; i++) v[i] = (float)(lo + (hi - lo) * rnd01());
  t->has_raw_data = 1;
  t->raw_data.data = (uint8_t *)v;
  t->raw_data.len = numel * sizeof *v;
  weight_count += (double)numel;
  if (graph.n_initializer == cap_init) {
    cap_init = cap_init ? 2 * cap_init : 256;
    graph.initializer = gp_realloc(graph.initializer, cap_init * sizeof *graph.initializer);
  }
  graph.initializer[graph.n_initializer++] = t;
  return name;
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
static const char *conv(const char *p, const char *x, int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t pad) {
  const int64_t wd[4] = {cout, cin, k, k};
  double a = sqrt(6.0 / (double)(cin * k * k));
  const char *in[2] = {x, initializer(nm("%s.weight", p), 4, wd, -a, a)};
  return node("Conv", nm("%s", p), 2, in, 4, attr_ints("kernel_shape", k, k, 2), attr_ints("strides", stride, stride, 2),
              attr_ints("pads", pad, pad, 4), attr_ints("dilations", 1, 1, 2));
}

static const char *bn_relu(const char *p, const char *x, int64_t c) {
  const int64_t d[1] = {c};
  const char *in[5] = {x, initializer(nm("%s.weight", p), 1, d, 0.5, 1.5), initializer(nm("%s.bias", p), 1, d, -0.05, 0.05),
                       initializer(nm("%s.running_mean", p), 1, d, -0.05, 0.05),
                       initializer(nm("%s.running_var", p), 1, d, 0.5, 1.5)};
  const char *y = node("BatchNormalization", nm("%s", p), 5, in, 1, attr_float("epsilon", 1e-5f));
  return node("Relu", nm("%s.relu", p), 1, &y, 0);
}

static const char *concat(const char *out, int32_t n, const char *const *xs) {
  return node("Concat", out, n, xs, 1, attr_int("axis", 1));
}

typedef struct {
  int32_t blocks[8], nblocks;
  int64_t growth, bn_size, init, size, classes;
  uint64_t seed;
} Arch;

static void build(const Arch *a) {
  const char *x = "data";
  x = conv("features.conv0", x, 3, a->init, 7, 2, 3);
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
      y = conv(nm("%s.conv1", p), y, cin, mid, 1, 1, 0);
      y = bn_relu(nm("%s.norm2", p), y, mid);
      feats[l + 1] = conv(nm("%s.conv2", p), y, mid, a->growth, 3, 1, 1);
    }
    x = concat(nm("features.denseblock%d", b + 1), L + 1, feats);
    gp_free(feats);
    c += a->growth * L;
    if (b + 1 < a->nblocks) {
      const char *p = nm("features.transition%d", b + 1);
      x = bn_relu(nm("%s.norm", p), x, c);
      x = conv(nm("%s.conv", p), x, c, c / 2, 1, 1, 0);
      x = node("AveragePool", nm("%s.pool", p), 1, &x, 2, attr_ints("kernel_shape", 2, 2, 2), attr_ints("strides", 2, 2, 2));
      c /= 2;
    }
  }
  x = bn_relu("features.norm5", x, c);
  x = node("GlobalAveragePool", "pool", 1, &x, 0);
  x = node("Flatten", "flatten", 1, &x, 1, attr_int("axis", 1));
  const int64_t wd[2] = {a->classes, c}, bd[1] = {a->classes};
  double lim = sqrt(6.0 / (double)c);
  const char *in[3] = {x, initializer("classifier.weight", 2, wd, -lim, lim), initializer("classifier.bias", 1, bd, 0, 0)};
  node("Gemm", "output", 3, in, 1, attr_int("transB", 1));
}

/* The weights build(a) makes, counted as it makes them (in double: options can overflow). */
static double weight_total(const Arch *a) {
  double c = (double)a->init, g = (double)a->growth, mid = (double)(a->bn_size * a->growth);
  double n = 3 * c * 49 + 4 * c; /* conv0, norm0 */
  for (int32_t b = 0; b < a->nblocks; b++) {
    for (int32_t l = 0; l < a->blocks[b]; l++) {
      double cin = c + g * l;
      n += 4 * cin + cin * mid + 4 * mid + mid * g * 9;
    }
    c += g * a->blocks[b];
    if (b + 1 < a->nblocks) {
      n += 4 * c + c * (double)((int64_t)c / 2);
      c = (double)((int64_t)c / 2);
    }
  }
  return n + 4 * c + c * (double)a->classes + (double)a->classes; /* norm5, classifier */
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

static int usage(void) {
  fprintf(stderr, "usage: gen_densenet OUT.onnx [--blocks L1,L2,...] [--growth G] [--bn-size B] [--init C] [--size S]\n"
                  "                    [--classes K] [--seed N]\n");
  return 2;
}

/* A positive integer option value, or -1. */
static int64_t posint(const char *s) {
  char *end;
  long long v = strtoll(s, &end, 10);
  return *s && !*end && v > 0 && v <= 1 << 20 ? v : -1;
}

int main(int argc, char **argv) {
  Arch a = {{6, 12, 24, 16}, 4, 32, 4, 64, 224, 1000, 1};
  if (argc < 2 || argv[1][0] == '-') return usage();
  for (int i = 2; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return usage();
    i++;
    int64_t n = posint(v);
    if (!strcmp(o, "--blocks")) {
      a.nblocks = 0;
      for (const char *s = v; *s;) {
        char *end;
        long l = strtol(s, &end, 10);
        if (end == s || l <= 0 || l > 1000 || a.nblocks == 8 || (*end && *end != ',')) {
          fprintf(stderr, "gen_densenet: --blocks %s: want 1 to 8 layer counts, e.g. 6,12,24,16\n", v);
          return 2;
        }
        a.blocks[a.nblocks++] = (int32_t)l;
        s = *end ? end + 1 : end;
      }
      if (!a.nblocks) return usage();
      continue;
    }
    if (n < 0) {
      fprintf(stderr, "gen_densenet: %s %s: want a positive integer\n", o, v);
      return 2;
    }
    if (!strcmp(o, "--growth")) a.growth = n;
    else if (!strcmp(o, "--bn-size")) a.bn_size = n;
    else if (!strcmp(o, "--init")) a.init = n;
    else if (!strcmp(o, "--size")) a.size = n;
    else if (!strcmp(o, "--classes")) a.classes = n;
    else if (!strcmp(o, "--seed")) a.seed = (uint64_t)n;
    else return usage();
  }
  /* conv0 /2, pool0 /2, one /2 per transition: the last block's maps must not vanish */
  int64_t hw = a.size;
  for (int32_t k = 0; k < 2 + a.nblocks - 1; k++) hw = hw / 2 + (k < 2 ? hw % 2 : 0);
  if (hw < 1) {
    fprintf(stderr, "gen_densenet: --size %lld is too small for %d blocks\n", (long long)a.size, a.nblocks);
    return 2;
  }
  double total = weight_total(&a);
  if (total > 1e9) {
    fprintf(stderr, "gen_densenet: these options make %.3g weights (at most 1e9: 4 GB)\n", total);
    return 2;
  }
  rng_state = a.seed;
  build(&a);
  const int64_t in_dims[4] = {1, 3, a.size, a.size}, out_dims[2] = {1, a.classes};
  Gponnx__ValueInfoProto *in = value_info("data", 4, in_dims), *out = value_info("output", 2, out_dims);
  graph.name = "densenet";
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
  m.producer_name = "graphpass gen_densenet";
  m.n_opset_import = 1;
  m.opset_import = &opsets;
  m.graph = &graph;
  size_t len;
  int rc = 0;
  if (ox_write_model(&m, argv[1], &len) != 0) {
    fprintf(stderr, "gen_densenet: %s\n", gp_error_message());
    rc = 1;
  } else {
    printf("%s: %zu nodes, %.2fM weights, %zu bytes\n", argv[1], graph.n_node, weight_count / 1e6, len);
  }
  gp_free(graph.node);
  gp_free(graph.initializer);
  for (size_t i = 0; i < n_owned; i++) gp_free(owned[i]);
  gp_free(owned);
  return rc;
}
