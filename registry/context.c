/* context.c -- pass contexts: opt level, target, required/disabled passes, typed config values,
 * instruments.  A context belongs to one thread at a time. */
#include "registry_impl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

GPPassContext *gp_ctx_new(void) {
  GPPassContext *c = gp_calloc(1, sizeof *c);
  c->opt_level = 2;
  c->target = gp_strdup("llvm");
  c->print_types = true;
  c->out = stderr;
  c->rtol = 1e-4;
  c->atol = 1e-5;
  return c;
}

static void free_names(GPVec *v) {
  for (size_t i = 0; i < v->len; i++) gp_free(v->items[i]);
  gp_vec_free(v);
}

void gp_ctx_free(GPPassContext *c) {
  if (!c) return;
  gp_free(c->target);
  gp_free(c->opt_set);
  free_names(&c->required);
  free_names(&c->disabled);
  free_names(&c->print_before);
  free_names(&c->print_after);
  for (size_t i = 0; i < c->config.cap; i++)
    if (c->config.keys[i]) gp_free(c->config.vals[i]);
  gp_strmap_free(&c->config);
  gp_free(c->timing_report);
  gp_ctx_instruments_clear(c);
  gp_ctx_notes_clear(c);
  gp_vec_free(&c->notes);
  for (int32_t i = 0; i < c->num_numerics_shapes; i++) {
    gp_free((void *)c->numerics_shapes[i].name);
    gp_free((void *)c->numerics_shapes[i].dims);
  }
  gp_free(c->numerics_shapes);
  gp_free(c);
}

int gp_ctx_add_numerics_shape(GPPassContext *c, const char *param, int32_t ndim, const int64_t *dims) {
  if (!c || !param || ndim < 0 || ndim > 64 || (ndim && !dims)) {
    gp_error_set(GP_ERR_VALUE, "numerics shape: a parameter name and 0 to 64 dims are needed");
    return -1;
  }
  for (int32_t d = 0; d < ndim; d++)
    if (dims[d] < 0) {
      gp_error_set(GP_ERR_VALUE, "numerics shape of %%%s: dim %d is %lld (negative)", param, (int)d, (long long)dims[d]);
      return -1;
    }
  GPInputShape *sh = NULL;
  for (int32_t i = 0; i < c->num_numerics_shapes && !sh; i++)
    if (strcmp(c->numerics_shapes[i].name, param) == 0) sh = &c->numerics_shapes[i];
  if (!sh) {
    c->numerics_shapes = gp_realloc(c->numerics_shapes, (size_t)(c->num_numerics_shapes + 1) * sizeof *sh);
    sh = &c->numerics_shapes[c->num_numerics_shapes++];
    *sh = (GPInputShape){.name = gp_strdup(param)};
  }
  int64_t *copy = gp_malloc((size_t)(ndim ? ndim : 1) * sizeof *copy);
  if (ndim) memcpy(copy, dims, (size_t)ndim * sizeof *copy);
  gp_free((void *)sh->dims);
  sh->dims = copy;
  sh->ndim = ndim;
  return 0;
}

/* ---- explain notes */

void gp_ctx_note(GPPassContext *c, const char *fmt, ...) {
  if (!c || !(c->explain || c->collect_notes) || !fmt) return;
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  char tmp[1];
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap2);
  va_end(ap2);
  if (n >= 0) {
    char *s = gp_malloc((size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    gp_vec_push(&c->notes, s);
  }
  va_end(ap);
}

void gp_ctx_notes_clear(GPPassContext *c) {
  if (!c) return;
  for (size_t i = 0; i < c->notes.len; i++) gp_free(c->notes.items[i]);
  c->notes.len = 0;
}

int gp_ctx_set_opt_level(GPPassContext *c, int32_t level) {
  if (!c) {
    gp_error_set(GP_ERR_VALUE, "pass context is NULL");
    return -1;
  }
  if (level < 0) {
    gp_error_set(GP_ERR_VALUE, "opt level %d is negative", level);
    return -1;
  }
  int32_t max = gp_pass_max_opt_level();
  if (max < 4) max = 4;
  if (level > max) {
    gp_error_set(GP_ERR_VALUE, "opt level %d is above the highest level %d (levels go from 0 to the highest opt_level "
                 "of any registered pass, at least 4)", level, max);
    return -1;
  }
  c->opt_level = level;
  return 0;
}

int gp_ctx_set_target(GPPassContext *c, const char *target) {
  if (!c) {
    gp_error_set(GP_ERR_VALUE, "pass context is NULL");
    return -1;
  }
  if (!gp_reg_name_valid(target)) {
    gp_error_set(GP_ERR_VALUE, "invalid target name '%s' (expected [A-Za-z0-9_.-]+)",
                 target ? target : "(null)");
    return -1;
  }
  gp_free(c->target);
  c->target = gp_strdup(target);
  return 0;
}

int gp_ctx_set_opt_set(GPPassContext *c, const char *set) {
  if (!c) {
    gp_error_set(GP_ERR_VALUE, "pass context is NULL");
    return -1;
  }
  if (set && !gp_reg_name_valid(set)) {
    gp_error_set(GP_ERR_VALUE, "invalid optimization set name '%s' (expected [A-Za-z0-9_.-]+)", set);
    return -1;
  }
  if (set && gp_opt_set_check(c->target, set) < 0) return -1;
  gp_free(c->opt_set);
  c->opt_set = set ? gp_strdup(set) : NULL;
  return 0;
}

static bool has_name(const GPVec *v, const char *name) {
  for (size_t i = 0; i < v->len; i++)
    if (strcmp(v->items[i], name) == 0) return true;
  return false;
}

static int add_name(GPPassContext *c, GPVec *v, const char *name) {
  if (!c) {
    gp_error_set(GP_ERR_VALUE, "pass context is NULL");
    return -1;
  }
  if (!gp_reg_name_valid(name)) {
    gp_error_set(GP_ERR_VALUE, "invalid pass name '%s' (expected [A-Za-z0-9_.-]+)", name ? name : "(null)");
    return -1;
  }
  GPPassEntry *e = gp_pass_acquire(name);
  if (!e) {
    gp_error_set(GP_ERR_NOT_FOUND, "no pass named %s is registered; load its plugin first", name);
    return -1;
  }
  gp_pass_entry_release(e);
  if (!has_name(v, name)) gp_vec_push(v, gp_strdup(name));
  return 0;
}

/* The pass must be registered now; a run checks again (it may have been unregistered since). */
int gp_ctx_disable(GPPassContext *c, const char *name) { return add_name(c, c ? &c->disabled : NULL, name); }
int gp_ctx_require(GPPassContext *c, const char *name) { return add_name(c, c ? &c->required : NULL, name); }

bool gp_pass_enabled(const GPPassContext *c, const GPPassEntry *e) {
  if (has_name(&c->disabled, e->info.name)) return false;
  if (has_name(&c->required, e->info.name)) return true;
  return c->opt_level >= e->info.opt_level;
}

/* ---- config values */

GPAny *gp_config_parse_value(const GPConfigKey *k, const char *full_key, const char *text) {
  const char *expect = k->type_index == GP_TI_BOOL ? "bool (true/false/1/0)" : gp_config_type_name(k->type_index);
  if (!text) {
    gp_error_set(GP_ERR_VALUE, "config '%s': expected %s, got no value", full_key, expect);
    return NULL;
  }
  if (k->type_index == GP_TI_RAW_STR) {
    size_t n = strlen(text);
    GPAny *v = gp_malloc(sizeof(GPAny) + n + 1);
    char *s = (char *)(v + 1);
    memcpy(s, text, n + 1);
    *v = gp_any_str(s);
    return v;
  }
  GPAny r;
  bool ok = false;
  char *end = NULL;
  if (k->type_index == GP_TI_INT) {
    errno = 0;
    long long x = strtoll(text, &end, 10);
    ok = *text && end != text && !*end && errno == 0;
    r = gp_any_int(x);
    if (*text && end != text && !*end && errno == ERANGE) {
      gp_error_set(GP_ERR_VALUE, "config '%s': expected int, got '%s' (out of range)", full_key, text);
      return NULL;
    }
  } else if (k->type_index == GP_TI_BOOL) {
    if (strcasecmp(text, "true") == 0 || strcmp(text, "1") == 0) ok = true, r = gp_any_bool(true);
    else if (strcasecmp(text, "false") == 0 || strcmp(text, "0") == 0) ok = true, r = gp_any_bool(false);
  } else if (k->type_index == GP_TI_FLOAT) {
    errno = 0;
    double x = strtod(text, &end);
    ok = *text && end != text && !*end && !isnan(x) && !(errno == ERANGE && isinf(x));
    r = gp_any_float(x);
  }
  if (!ok) {
    gp_error_set(GP_ERR_VALUE, "config '%s': expected %s, got '%s'", full_key, expect, text);
    return NULL;
  }
  GPAny *v = gp_malloc(sizeof *v);
  *v = r;
  return v;
}

static void err_unknown_key(const char *key) {
  char *all = gp_config_all_keys();
  gp_error_set(GP_ERR_NOT_FOUND, "unknown config key '%s'; valid keys: %s", key, *all ? all : "(none declared)");
  gp_free(all);
}

int gp_ctx_set_config(GPPassContext *c, const char *key, const char *value) {
  if (!c || !key) {
    gp_error_set(GP_ERR_VALUE, "gp_ctx_set_config: NULL %s", c ? "key" : "context");
    return -1;
  }
  int32_t ki = 0;
  GPPassEntry *e = gp_config_find(key, &ki);
  if (!e) {
    err_unknown_key(key);
    return -1;
  }
  GPAny *v = gp_config_parse_value(&e->info.config_keys[ki], key, value);
  gp_pass_entry_release(e);
  if (!v) return -1;
  gp_free(gp_strmap_get(&c->config, key));
  gp_strmap_put(&c->config, key, v);
  return 0;
}

int gp_ctx_get_config(const GPPassContext *c, const char *key, GPAny *out) {
  if (!c || !key || !out) {
    gp_error_set(GP_ERR_VALUE, "gp_ctx_get_config: NULL argument");
    return -1;
  }
  const GPAny *v = gp_strmap_get(&c->config, key);
  if (v) {
    *out = *v;
    return 0;
  }
  int32_t ki = 0;
  GPPassEntry *e = gp_config_find(key, &ki);
  if (!e) {
    err_unknown_key(key);
    return -1;
  }
  /* Borrowed from the entry, which the registry (or the running pipeline) keeps alive. */
  *out = e->info.config_keys[ki].default_value;
  gp_pass_entry_release(e);
  return 0;
}
