/* module.c -- modules: global functions by name, in definition order. */
#include "ir.h"

#include <string.h>

/* A module and, from INDEX_MIN functions on, a name -> index + 1 map, kept up to date by the
 * adds (which run only while the caller holds the sole reference), so a module of many
 * functions (PartitionGraph's external functions) finds a name in O(1) and adding n functions
 * costs O(n), not O(n^2).  Readers never write it. */
#define INDEX_MIN 32
typedef struct ModuleImpl {
  GPModule pub;
  GPStrMap names;
} ModuleImpl;

static void index_add(GPModule *m, int32_t i) {
  ModuleImpl *mi = (ModuleImpl *)m;
  if (m->num_functions < INDEX_MIN) return;
  if (!mi->names.len)
    for (int32_t k = 0; k < m->num_functions; k++) gp_strmap_put(&mi->names, m->gvars[k]->name, (void *)(intptr_t)(k + 1));
  else
    gp_strmap_put(&mi->names, m->gvars[i]->name, (void *)(intptr_t)(i + 1));
}

static void module_free(GPObject *o) {
  GPModule *m = (GPModule *)o;
  gp_strmap_free(&((ModuleImpl *)m)->names);
  for (int32_t i = 0; i < m->num_functions; i++) {
    gp_release(m->gvars[i]);
    gp_release(m->funcs[i]);
  }
  gp_free(m->gvars);
  gp_free(m->funcs);
  gp_free((char *)m->source_name);
  gp_free(m);
}

GPModule *gp_module_new(const char *source_name) {
  GPModule *m = gp_object_alloc(sizeof(ModuleImpl), GP_TI_MODULE, module_free);
  m->source_name = source_name ? gp_strdup(source_name) : NULL;
  return m;
}

int32_t gp_module_find(const GPModule *m, const char *name) {
  const ModuleImpl *mi = (const ModuleImpl *)m;
  if (mi->names.len) return (int32_t)(intptr_t)gp_strmap_get(&mi->names, name) - 1;
  for (int32_t i = 0; i < m->num_functions; i++)
    if (strcmp(m->gvars[i]->name, name) == 0) return i;
  return -1;
}

GPFunctionExpr *gp_module_lookup(const GPModule *m, const char *name) {
  int32_t i = gp_module_find(m, name);
  return i < 0 ? NULL : m->funcs[i];
}

int gp_module_add(GPModule *m, const char *name, GPFunctionExpr *fn, bool allow_override) {
  if (!name || !*name) {
    gp_error_set(GP_ERR_VALUE, "module_add: needs a module, a name and a function");
    return -1;
  }
  int32_t i = m ? gp_module_find(m, name) : -1;
  if (i >= 0) return gp_module_add_gvar(m, m->gvars[i], fn, allow_override);
  GPGlobalVar *g = gp_global_var_new(name);
  int rc = gp_module_add_gvar(m, g, fn, allow_override);
  gp_release(g);
  return rc;
}

int gp_module_add_gvar(GPModule *m, GPGlobalVar *g, GPFunctionExpr *fn, bool allow_override) {
  if (!m || m->obj.type_index != GP_TI_MODULE || !g || gp_kind(g) != GP_TI_GLOBAL_VAR || !fn ||
      gp_kind(fn) != GP_TI_FUNCTION_EXPR) {
    gp_error_set(GP_ERR_VALUE, "module_add: needs a module, a global var and a function");
    return -1;
  }
  int32_t i = gp_module_find(m, g->name);
  if (i >= 0) {
    if (!allow_override) {
      gp_error_set(GP_ERR_VALUE, "module already defines @%s", g->name);
      return -1;
    }
    gp_retain(g);
    gp_release(m->gvars[i]);
    m->gvars[i] = g;
    gp_module_set(m, i, fn);
    return 0;
  }
  gp_retain(g);
  if (m->num_functions == m->capacity) {
    m->capacity = m->capacity ? m->capacity * 2 : 4;
    m->gvars = gp_realloc(m->gvars, (size_t)m->capacity * sizeof *m->gvars);
    m->funcs = gp_realloc(m->funcs, (size_t)m->capacity * sizeof *m->funcs);
  }
  m->gvars[m->num_functions] = g;
  m->funcs[m->num_functions] = gp_retain(fn);
  m->num_functions++;
  index_add(m, m->num_functions - 1);
  return 0;
}

void gp_module_set(GPModule *m, int32_t i, GPFunctionExpr *fn) {
  gp_retain(fn);
  gp_release(m->funcs[i]);
  m->funcs[i] = fn;
}

GPModule *gp_module_copy(const GPModule *m) {
  GPModule *c = gp_module_new(m->source_name);
  c->capacity = m->num_functions;
  c->num_functions = m->num_functions;
  c->gvars = gp_malloc((size_t)(m->num_functions ? m->num_functions : 1) * sizeof *c->gvars);
  c->funcs = gp_malloc((size_t)(m->num_functions ? m->num_functions : 1) * sizeof *c->funcs);
  for (int32_t i = 0; i < m->num_functions; i++) {
    c->gvars[i] = gp_retain(m->gvars[i]);
    c->funcs[i] = gp_retain(m->funcs[i]);
  }
  if (c->num_functions >= INDEX_MIN) index_add(c, c->num_functions - 1);
  return c;
}
