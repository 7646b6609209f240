/* gen_real_weights.c -- a real-weight model from a light one: every ConstantOfShape whose shape
 * is an initializer becomes a float32 initializer of that shape holding pseudo-random values
 * (raw_data), so the file carries its weights as a downloaded model does (ResNet-50: 102 MB).
 * Running variances and batch-norm scales ("riv", "_s_0") are drawn from [0.5, 1.5], the rest
 * from [-0.05, 0.05].  For bench_onnx's import figures and the peak-RSS measurement:
 *   build/bin/gen_real_weights ../shared/onnx/light/resnet50.onnx /tmp/resnet50_real.onnx
 *   /usr/bin/time -v build/bin/graphpass opt /tmp/resnet50_real.onnx --opt-level 3 -o /dev/null
 * usage: gen_real_weights IN.onnx OUT.onnx [seed] */
#include "../frontend/onnx/onnx_impl.h"
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;
static double rnd01(void) { return bench_rnd01(&rng_state); }

static Gponnx__TensorProto *find_init(Gponnx__GraphProto *g, const char *name) {
  for (size_t i = 0; i < g->n_initializer; i++)
    if (g->initializer[i]->name && !strcmp(g->initializer[i]->name, name)) return g->initializer[i];
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: gen_real_weights IN.onnx OUT.onnx [seed]\n");
    return 2;
  }
  rng_state = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
  void *data;
  size_t len;
  if (ox_read_whole_file(argv[1], &data, &len) != 0) {
    fprintf(stderr, "gen_real_weights: %s\n", gp_error_message());
    return 1;
  }
  Gponnx__ModelProto *m = gponnx__model_proto__unpack(NULL, len, data);
  gp_free(data);
  if (!m || !m->graph) {
    fprintf(stderr, "gen_real_weights: %s: not an ONNX model\n", argv[1]);
    return 1;
  }
  Gponnx__GraphProto *g = m->graph;
  size_t n_node = g->n_node, n_init = g->n_initializer;
  Gponnx__NodeProto **nodes = g->node;
  Gponnx__TensorProto **inits = g->initializer;
  Gponnx__NodeProto **keep = gp_malloc((n_node + 1) * sizeof *keep);
  Gponnx__TensorProto **made = gp_malloc((n_node + 1) * sizeof *made);
  size_t nk = 0, nm = 0;
  double bytes = 0;
  for (size_t i = 0; i < n_node; i++) {
    Gponnx__NodeProto *n = nodes[i];
    Gponnx__TensorProto *shape = n->op_type && !strcmp(n->op_type, "ConstantOfShape") && n->n_input == 1 && n->n_output == 1
                                     ? find_init(g, n->input[0]) : NULL;
    if (!shape || shape->data_type != 7) {
      keep[nk++] = n;
      continue;
    }
    Gponnx__TensorProto *t = gp_calloc(1, sizeof *t);
    gponnx__tensor_proto__init(t);
    t->name = n->output[0];
    t->has_data_type = 1;
    t->data_type = 1;
    size_t nd = shape->n_int64_data ? shape->n_int64_data : shape->raw_data.len / 8;
    const int64_t *dims = shape->n_int64_data ? shape->int64_data : (const int64_t *)(const void *)shape->raw_data.data;
    t->n_dims = nd;
    t->dims = gp_malloc((nd ? nd : 1) * sizeof(int64_t));
    size_t numel = 1;
    for (size_t d = 0; d < nd; d++) numel *= (size_t)(t->dims[d] = dims[d]);
    float *v = gp_malloc((numel ? numel : 1) * sizeof(float));
    bool positive = strstr(t->name, "riv") || strstr(t->name, "_s_0") || strstr(t->name, "var");
    for (size_t k = 0; k < numel; k++) v[k] = positive ? (float)(0.5 + rnd01()) : (float)(0.1 * rnd01() - 0.05);
    t->has_raw_data = 1;
    t->raw_data.data = (uint8_t *)v;
    t->raw_data.len = numel * sizeof(float);
    bytes += (double)t->raw_data.len;
    made[nm++] = t;
  }
  /* the shape initializers stay (unused: the importer drops them); the new ones follow */
  Gponnx__TensorProto **all = gp_malloc((n_init + nm + 1) * sizeof *all);
  memcpy(all, inits, n_init * sizeof *all);
  memcpy(all + n_init, made, nm * sizeof *all);
  g->node = keep, g->n_node = nk;
  g->initializer = all, g->n_initializer = n_init + nm;
  size_t out_len;
  int rc = 0;
  if (ox_write_model(m, argv[2], &out_len) != 0) {
    fprintf(stderr, "gen_real_weights: %s\n", gp_error_message());
    rc = 1;
  } else {
    printf("%s: %zu initializers made from ConstantOfShape, %.1f MB of weights, %zu bytes\n", argv[2], nm, bytes / 1e6,
           out_len);
  }
  g->node = nodes, g->n_node = n_node;
  g->initializer = inits, g->n_initializer = n_init;
  for (size_t i = 0; i < nm; i++) {
    made[i]->name = NULL; /* borrowed from the node */
    gp_free(made[i]->dims);
    gp_free(made[i]->raw_data.data);
    gp_free(made[i]);
  }
  gp_free(all);
  gp_free(made);
  gp_free(keep);
  gponnx__model_proto__free_unpacked(m, NULL);
  return rc;
}
