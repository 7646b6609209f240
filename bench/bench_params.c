/* bench_params.c -- issue 17's speed goal for writing a real-weight model: ONNX import + the
 * llvm default set at opt-level 3 + writing the text without metadata and the constants as a
 * TVM parameter file, against reading and writing the model's bytes once (read() of the file,
 * write() of a copy).  Also times the old output (text with the base64 metadata section).
 *
 *   ninja build/bin/bench_params && ./build/bin/bench_params [light.onnx] [plugin_dir] [runs] [work_dir]
 *
 * The shared light ResNet-50 (../shared/onnx/light/resnet50.onnx) has its weights as
 * ConstantOfShape nodes; the benchmark first builds a real-weight copy of it
 * (<work_dir>/resnet50_real.onnx, default work_dir /tmp): every ConstantOfShape with a constant
 * shape becomes an initializer of that shape filled with pseudo-random values (raw_data), so
 * the file holds ResNet-50's 102 MB of float32 weights as a downloaded model does. */
#include "../frontend/onnx/onnx_impl.h"
#include "../plugin/plugin.h"
#include "bench_util.h"
#include "frontend/onnx/onnx.pb-c.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *prog = "bench_params";

static void die(const char *what) {
  fprintf(stderr, "%s: %s: %s\n", prog, what, gp_error_message());
  exit(1);
}

static const Gponnx__TensorProto *find_const(const Gponnx__GraphProto *g, const char *name) {
  for (size_t i = 0; i < g->n_initializer; i++)
    if (strcmp(g->initializer[i]->name, name) == 0) return g->initializer[i];
  for (size_t i = 0; i < g->n_node; i++) {
    const Gponnx__NodeProto *n = g->node[i];
    if (strcmp(n->op_type, "Constant") != 0 || n->n_output != 1 || strcmp(n->output[0], name) != 0) continue;
    for (size_t a = 0; a < n->n_attribute; a++)
      if (strcmp(n->attribute[a]->name, "value") == 0) return n->attribute[a]->t;
  }
  return NULL;
}

static int64_t shape_elem(const Gponnx__TensorProto *t, size_t i) {
  if (t->n_int64_data) return t->int64_data[i];
  int64_t v;
  memcpy(&v, t->raw_data.data + 8 * i, 8);
  return v;
}

/* The real-weight copy of a light model; returns the weight bytes it holds. */
static size_t make_real(const char *light, const char *out) {
  size_t len;
  char *bytes = gp_read_file(light, &len);
  if (!bytes) die(light);
  Gponnx__ModelProto *m = gponnx__model_proto__unpack(NULL, len, (const uint8_t *)bytes);
  gp_free(bytes);
  if (!m || !m->graph) {
    fprintf(stderr, "%s: %s is not an ONNX model\n", prog, light);
    exit(1);
  }
  Gponnx__GraphProto *g = m->graph;
  Gponnx__NodeProto **nodes = gp_malloc(sizeof *nodes * (g->n_node + 1));
  Gponnx__TensorProto **inits = gp_malloc(sizeof *inits * (g->n_initializer + g->n_node + 1));
  Gponnx__TensorProto *made = gp_calloc(g->n_node + 1, sizeof *made);
  size_t nn = 0, ni = g->n_initializer, nmade = 0, weight_bytes = 0;
  memcpy(inits, g->initializer, sizeof *inits * g->n_initializer);
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < g->n_node; i++) {
    Gponnx__NodeProto *n = g->node[i];
    const Gponnx__TensorProto *shape = NULL, *value = NULL;
    if (strcmp(n->op_type, "ConstantOfShape") == 0 && n->n_input == 1) shape = find_const(g, n->input[0]);
    if (!shape || (shape->n_int64_data == 0 && shape->raw_data.len == 0)) {
      nodes[nn++] = n;
      continue;
    }
    for (size_t a = 0; a < n->n_attribute; a++)
      if (strcmp(n->attribute[a]->name, "value") == 0) value = n->attribute[a]->t;
    int32_t dt = value && value->has_data_type ? value->data_type : GPONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    if (dt != GPONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
      nodes[nn++] = n;
      continue;
    }
    Gponnx__TensorProto *t = &made[nmade++];
    gponnx__tensor_proto__init(t);
    t->name = n->output[0];
    t->n_dims = shape->n_int64_data ? shape->n_int64_data : shape->raw_data.len / 8;
    t->dims = gp_malloc(sizeof(int64_t) * (t->n_dims + 1));
    size_t numel = 1;
    for (size_t d = 0; d < t->n_dims; d++) numel *= (size_t)(t->dims[d] = shape_elem(shape, d));
    t->has_data_type = 1;
    t->data_type = dt;
    t->has_raw_data = 1;
    t->raw_data.len = numel * 4;
    t->raw_data.data = gp_malloc(numel * 4 + 1);
    float *f = (float *)(void *)t->raw_data.data;
    for (size_t k = 0; k < numel; k++) {
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      f[k] = (float)((double)(rng >> 40) / (double)(1ull << 24) - 0.5) * 0.04f;
    }
    weight_bytes += numel * 4;
    inits[ni++] = t;
  }
  Gponnx__NodeProto **old_nodes = g->node;
  Gponnx__TensorProto **old_inits = g->initializer;
  size_t old_nn = g->n_node, old_ni = g->n_initializer;
  g->node = nodes, g->n_node = nn, g->initializer = inits, g->n_initializer = ni;
  int wrc = ox_write_model(m, out, NULL);
  g->node = old_nodes, g->n_node = old_nn, g->initializer = old_inits, g->n_initializer = old_ni;
  if (wrc != 0) {
    fprintf(stderr, "%s: %s\n", prog, gp_error_message());
    exit(1);
  }
  for (size_t k = 0; k < nmade; k++) {
    gp_free(made[k].dims);
    gp_free(made[k].raw_data.data);
  }
  gp_free(made);
  gp_free(nodes);
  gp_free(inits);
  gponnx__model_proto__free_unpacked(m, NULL);
  return weight_bytes;
}

/* read() the whole file, write() it to `copy` (no fsync: page cache, as the outputs below). */
static double read_write_once(const char *path, const char *copy) {
  double t0 = bench_now_ms();
  int fd = open(path, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) die(path);
  size_t n = (size_t)st.st_size, got = 0;
  char *buf = malloc(n + 1);
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  int out = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  size_t put = 0;
  while (out >= 0 && put < got) {
    ssize_t w = write(out, buf + put, got - put);
    if (w <= 0) break;
    put += (size_t)w;
  }
  if (out >= 0) close(out);
  free(buf);
  return bench_now_ms() - t0;
}

static size_t file_size(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 ? (size_t)st.st_size : 0;
}

int main(int argc, char **argv) {
  const char *light = argc > 1 ? argv[1] : "../shared/onnx/light/resnet50.onnx";
  const char *plugins = argc > 2 ? argv[2] : "build/plugins";
  int runs = argc > 3 ? atoi(argv[3]) : 5;
  const char *work = argc > 4 ? argv[4] : "/tmp";
  if (runs < 1) runs = 1;
  if (access(light, R_OK) != 0) {
    fprintf(stderr, "%s: %s not found (the light models are in ../shared/onnx/light)\n", prog, light);
    return 1;
  }
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  gp_ops_init();
  if (gp_plugin_load_dir(plugins) != 0) die(plugins);
  char real[512], copy[512], text[512], params[512], meta[512];
  snprintf(real, sizeof real, "%s/resnet50_real.onnx", work);
  snprintf(copy, sizeof copy, "%s/resnet50_real.copy", work);
  snprintf(text, sizeof text, "%s/resnet50_real.relay", work);
  snprintf(params, sizeof params, "%s/resnet50_real.params", work);
  snprintf(meta, sizeof meta, "%s/resnet50_real.meta.relay", work);
  size_t wb = make_real(light, real);
  printf("real-weight model: %s, %.1f MB (%.1f MB of float32 weights made from %s)\n", real,
         (double)file_size(real) / 1e6, (double)wb / 1e6, light);
  double *base = gp_malloc(sizeof(double) * (size_t)runs), *imp = gp_malloc(sizeof(double) * (size_t)runs);
  double *set = gp_malloc(sizeof(double) * (size_t)runs), *wr = gp_malloc(sizeof(double) * (size_t)runs);
  double *tot = gp_malloc(sizeof(double) * (size_t)runs), *old = gp_malloc(sizeof(double) * (size_t)runs);
  read_write_once(real, copy); /* warm the page cache */
  for (int r = 0; r < runs; r++) {
    base[r] = read_write_once(real, copy);
    GPPassContext *ctx = bench_ctx();
    double t0 = bench_now_ms();
    GPModule *m = gp_onnx_import_file(real, NULL);
    if (!m) die("import");
    double t1 = bench_now_ms();
    GPModule *o = gp_run_pipeline(m, NULL, ctx);
    if (!o) die("the default set");
    double t2 = bench_now_ms();
    if (gp_save_text_params(o, GP_PRINT_TYPES, text, params) != 0) die("writing");
    double t3 = bench_now_ms();
    imp[r] = t1 - t0, set[r] = t2 - t1, wr[r] = t3 - t2, tot[r] = t3 - t0;
    double t4 = bench_now_ms();
    if (gp_save_text_params(o, GP_PRINT_TYPES | GP_PRINT_METADATA, meta, NULL) != 0) die("writing with metadata");
    old[r] = bench_now_ms() - t4;
    gp_release(o);
    gp_release(m);
    gp_ctx_free(ctx);
  }
  double b = bench_median(base, runs), t = bench_median(tot, runs);
  printf("read + write the model's bytes once: %.1f ms (median of %d)\n", b, runs);
  printf("import %.1f ms + set %.1f ms + write text and params %.1f ms = %.1f ms (median of each)\n",
         bench_median(imp, runs), bench_median(set, runs), bench_median(wr, runs), t);
  printf("  text %.2f MB, params %.1f MB\n", (double)file_size(text) / 1e6, (double)file_size(params) / 1e6);
  printf("ratio to reading and writing the bytes once: %.2fx (goal: within 2x)\n", t / b);
  printf("old output, text with the metadata section (%.1f MB): %.1f ms to write\n", (double)file_size(meta) / 1e6,
         bench_median(old, runs));
  unlink(copy);
  gp_free(base), gp_free(imp), gp_free(set), gp_free(wr), gp_free(tot), gp_free(old);
  gp_plugins_unload_all();
  gp_registry_shutdown();
  return 0;
}
