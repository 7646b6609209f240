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
 * One rwlock guards the table.  Functions are released outside the lock, since their
 * self_deleter may call back into the registry. */
#include "registry.h"

#include <pthread.h>
#include <string.h>

static pthread_rwlock_t g_funcs_lock = PTHREAD_RWLOCK_INITIALIZER;
static GPStrMap g_funcs; /* name -> GPPackedFunc* (one reference each) */

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
  int rc = 0;
  pthread_rwlock_wrlock(&g_funcs_lock);
  if (!f) {
    old = gp_strmap_remove(&g_funcs, name);
    if (!old) rc = -1;
  } else if (gp_strmap_has(&g_funcs, name) && !allow_override) {
    rc = -2;
  } else {
    old = gp_strmap_get(&g_funcs, name);
    gp_strmap_put(&g_funcs, name, gp_retain(f));
  }
  pthread_rwlock_unlock(&g_funcs_lock);
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

void gp_funcs_shutdown(void) {
  pthread_rwlock_wrlock(&g_funcs_lock);
  GPStrMap all = g_funcs;
  g_funcs = (GPStrMap){0};
  pthread_rwlock_unlock(&g_funcs_lock);
  for (size_t i = 0; i < all.cap; i++)
    if (all.keys && all.keys[i]) gp_release(all.vals[i]);
  gp_strmap_free(&all);
}
