/*
 * global_funcs.c -- global functions by name (GPHostAPI.func_register / func_get; TVM's
 * register_func / get_global_func).
 *
 * Rules:
 *  - a name is any non-empty string (copied); the function must be a GPPackedFunc object
 *    (GP_ERR_TYPE otherwise) and is retained by the registry;
 *  - registering a taken name is GP_ERR_VALUE naming it unless allow_override, which replaces
 *    (and releases) the old function;
 *  - f == NULL removes the name whatever allow_override says (TVM's remove_global_func needs
 *    no override either); removing a free name is GP_ERR_NOT_FOUND naming it;
 *  - gp_func_get returns a new reference, or NULL with no error when the name is free.
 *  - each name records its origin (gp_registry_origin(): the plugin initializing on this
 *    thread, else "host"); gp_funcs_unregister_origin drops every name a plugin registered.  A
 *    plugin's override of another origin's function is dropped too, not rolled back.
 * One rwlock guards the table.  Functions are released outside the lock, since their
 * self_deleter may call back into the registry. */
#include "registry.h"

#include <pthread.h>
#include <string.h>

static pthread_rwlock_t g_funcs_lock = PTHREAD_RWLOCK_INITIALIZER;
static GPStrMap g_funcs;   /* name -> GPPackedFunc* (one reference each) */
static GPStrMap g_origins; /* name -> origin (gp_strdup'd), same keys as g_funcs */

int gp_func_register(const char *name, GPPackedFunc *f, int allow_override) {
  if (!name || !name[0]) {
    gp_error_set(GP_ERR_VALUE, "func_register: the name must be a non-empty string");
    return -1;
  }
  if (f && f->obj.type_index != GP_TI_FUNCTION) {
    gp_error_set(GP_ERR_TYPE, "func_register: '%s': expected a function object, got type index %d", name,
                 (int)f->obj.type_index);
    return -1;
  }
  GPPackedFunc *old = NULL;
  char *origin = f ? gp_strdup(gp_registry_origin()) : NULL, *old_origin = NULL;
  int rc = 0;
  pthread_rwlock_wrlock(&g_funcs_lock);
  if (!f) {
    old = gp_strmap_remove(&g_funcs, name);
    old_origin = gp_strmap_remove(&g_origins, name);
    if (!old) rc = -1;
  } else if (gp_strmap_has(&g_funcs, name) && !allow_override) {
    rc = -2;
  } else {
    old = gp_strmap_get(&g_funcs, name);
    old_origin = gp_strmap_get(&g_origins, name);
    gp_strmap_put(&g_funcs, name, gp_retain(f));
    gp_strmap_put(&g_origins, name, origin);
    origin = NULL;
  }
  pthread_rwlock_unlock(&g_funcs_lock);
  gp_free(origin);
  gp_free(old_origin);
  gp_release(old); /* outside the lock */
  if (rc == -1) {
    gp_error_set(GP_ERR_NOT_FOUND, "func_register: cannot remove '%s': no global function has that name", name);
    return -1;
  }
  if (rc == -2) {
    gp_error_set(GP_ERR_VALUE, "func_register: a global function named '%s' is already registered (pass allow_override to replace it)",
                 name);
    return -1;
  }
  return 0;
}

GPPackedFunc *gp_func_get(const char *name) {
  if (!name) return NULL;
  pthread_rwlock_rdlock(&g_funcs_lock);
  GPPackedFunc *f = gp_strmap_get(&g_funcs, name);
  gp_retain(f);
  pthread_rwlock_unlock(&g_funcs_lock);
  return f;
}

size_t gp_func_count(void) {
  pthread_rwlock_rdlock(&g_funcs_lock);
  size_t n = g_funcs.len;
  pthread_rwlock_unlock(&g_funcs_lock);
  return n;
}

void gp_funcs_unregister_origin(const char *origin) {
  GPVec dead = {0};
  pthread_rwlock_wrlock(&g_funcs_lock);
  GPVec names = {0};
  for (size_t i = 0; i < g_origins.cap; i++)
    if (g_origins.keys && g_origins.keys[i] && strcmp(g_origins.vals[i], origin) == 0)
      gp_vec_push(&names, gp_strdup(g_origins.keys[i]));
  for (size_t i = 0; i < names.len; i++) {
    gp_free(gp_strmap_remove(&g_origins, names.items[i]));
    gp_vec_push(&dead, gp_strmap_remove(&g_funcs, names.items[i]));
    gp_free(names.items[i]);
  }
  pthread_rwlock_unlock(&g_funcs_lock);
  gp_vec_free(&names);
  for (size_t i = 0; i < dead.len; i++) gp_release(dead.items[i]); /* outside the lock */
  gp_vec_free(&dead);
}

void gp_funcs_shutdown(void) {
  pthread_rwlock_wrlock(&g_funcs_lock);
  GPStrMap all = g_funcs, origins = g_origins;
  g_funcs = (GPStrMap){0};
  g_origins = (GPStrMap){0};
  pthread_rwlock_unlock(&g_funcs_lock);
  for (size_t i = 0; i < all.cap; i++)
    if (all.keys && all.keys[i]) gp_release(all.vals[i]);
  for (size_t i = 0; i < origins.cap; i++)
    if (origins.keys && origins.keys[i]) gp_free(origins.vals[i]);
  gp_strmap_free(&all);
  gp_strmap_free(&origins);
}
