/* load.c -- reading the inputs of the subcommands: modules (Relay text or ONNX) and tensors
 * (.npy or ONNX TensorProto), and the --shape option. */
#include "cli.h"
#include "../eval/eval.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

int shape_opt_add(ShapeOpts *s, const char *text) {
  const char *eq = strrchr(text, '=');
  if (!eq || eq == text) {
    gp_error_set(GP_ERR_VALUE, "--shape '%s' is not NAME=D,D,... (e.g. data=1,3,224,224)", text);
    return -1;
  }
  if (s->n == MAX_SHAPES) {
    gp_error_set(GP_ERR_VALUE, "--shape: at most %d of them", MAX_SHAPES);
    return -1;
  }
  int32_t nd = 0;
  const char *p = eq + 1;
  while (*p) {
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || errno || v < 0 || (*end && *end != ',') || nd == 64) {
      gp_error_set(GP_ERR_VALUE, "--shape '%s': dimension %d is not a non-negative integer%s", text, (int)nd,
                   nd == 64 ? " (at most 64 dims)" : "");
      return -1;
    }
    s->dims[s->n][nd++] = v;
    p = *end ? end + 1 : end;
    if (*end && !*p) {
      gp_error_set(GP_ERR_VALUE, "--shape '%s': a trailing comma", text);
      return -1;
    }
  }
  s->shapes[s->n] = (GPInputShape){.name = gp_strndup(text, (size_t)(eq - text)), .ndim = nd, .dims = s->dims[s->n]};
  s->n++;
  return 0;
}

void shape_opts_free(ShapeOpts *s) {
  for (int i = 0; i < s->n; i++) gp_free((void *)s->shapes[i].name);
  s->n = 0;
}

bool is_onnx_path(const char *path) { return ends_with(path, ".onnx"); }

int shape_opts_to_ctx(const ShapeOpts *s, GPPassContext *ctx) {
  for (int i = 0; i < s->n; i++)
    if (gp_ctx_add_numerics_shape(ctx, s->shapes[i].name, s->shapes[i].ndim, s->shapes[i].dims) != 0) return -1;
  return 0;
}

GPModule *load_module(const char *path, const ShapeOpts *shapes) { return load_module_params(path, shapes, NULL); }

GPModule *load_module_params(const char *path, const ShapeOpts *shapes, const char *params) {
  if (params && ends_with(path, ".onnx")) {
    gp_error_set(GP_ERR_VALUE, "a parameter file (%s) goes with Relay text, not with an ONNX model (%s)", params, path);
    return NULL;
  }
  if (ends_with(path, ".onnx")) {
    GPOnnxShape fixed[MAX_SHAPES];
    int32_t n = shapes ? shapes->n : 0;
    for (int32_t i = 0; i < n; i++)
      fixed[i] = (GPOnnxShape){.name = shapes->shapes[i].name, .ndim = shapes->shapes[i].ndim, .dims = shapes->shapes[i].dims};
    GPOnnxOptions o = {.nshapes = n, .shapes = n ? fixed : NULL};
    return gp_onnx_import_file(path, &o);
  }
  if (shapes && shapes->n) {
    gp_error_set(GP_ERR_VALUE, "--shape applies to ONNX models (.onnx), not to %s", path);
    return NULL;
  }
  size_t len;
  char *text = read_file(path, &len);
  if (!text) return NULL;
  GPParams pa = {0};
  GPTensor **tab = NULL;
  int64_t ntab = 0;
  if (params && (gp_params_load(params, &pa) != 0 || !(tab = gp_params_meta_table(&pa, params, &ntab)))) {
    gp_params_free(&pa);
    gp_free(text);
    return NULL;
  }
  GPModule *m = gp_parse_meta(text, len, strcmp(path, "-") == 0 ? "<stdin>" : path, tab, ntab);
  gp_free(tab);
  gp_params_free(&pa);
  gp_free(text);
  return m;
}

GPTensor *load_tensor(const char *path) {
  if (ends_with(path, ".pb")) return gp_onnx_read_tensor_file(path, NULL);
  return gp_npy_read(path);
}

int write_module(const GPModule *m, const char *path, const char *params, bool types) {
  return gp_save_text_params(m, (types ? GP_PRINT_TYPES : 0) | GP_PRINT_METADATA, path, params);
}

int ctx_opt_level_text(GPPassContext *ctx, const char *text) {
  char *end;
  long lvl = strtol(text, &end, 10);
  if (*end || end == text || lvl < 0 || lvl > INT32_MAX) {
    gp_error_set(GP_ERR_VALUE, "--opt-level '%s' is not a non-negative integer", text);
    return -1;
  }
  return gp_ctx_set_opt_level(ctx, (int32_t)lvl);
}

int ctx_configs(GPPassContext *ctx, const char *const *config, int n) {
  for (int i = 0; i < n; i++) {
    char *kv = gp_strdup(config[i]);
    char *eq = strchr(kv, '=');
    if (!eq) {
      gp_free(kv);
      gp_error_set(GP_ERR_VALUE, "--config '%s' is not key=value", config[i]);
      return -1;
    }
    *eq = 0;
    int rc = gp_ctx_set_config(ctx, kv, eq + 1);
    gp_free(kv);
    if (rc != 0) return -1;
  }
  return 0;
}
