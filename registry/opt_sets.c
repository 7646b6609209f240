/* opt_sets.c -- optimization sets: per target, named pipeline strings; one of them (the
 * selected one, else "default") runs when no pipeline is given.  Guarded by the registry lock.
 * Each set records its origin (gp_registry_origin() when registered); when that plugin fails
 * or is unloaded its sets go (gp_opt_sets_unregister_origin) -- a set it replaced is not
 * restored. */
#include "registry_impl.h"

#include <string.h>

typedef struct TargetSets {
  char *target;
  GPVec names;     /* char*, sorted */
  GPVec pipelines; /* char*, parallel to names */
  GPVec origins;   /* char*, parallel to names */
  char *selected;  /* NULL: "default" */
} TargetSets;

static GPVec g_targets; /* TargetSets*, sorted by target */

/* Lock held. */
static ptrdiff_t find_target(const char *target) {
  for (size_t i = 0; i < g_targets.len; i++) {
    int c = strcmp(((TargetSets *)g_targets.items[i])->target, target);
    if (c == 0) return (ptrdiff_t)i;
    if (c > 0) return -(ptrdiff_t)i - 1;
  }
  return -(ptrdiff_t)g_targets.len - 1;
}

static ptrdiff_t find_set(const TargetSets *t, const char *set) {
  for (size_t i = 0; i < t->names.len; i++) {
    int c = strcmp(t->names.items[i], set);
    if (c == 0) return (ptrdiff_t)i;
    if (c > 0) return -(ptrdiff_t)i - 1;
  }
  return -(ptrdiff_t)t->names.len - 1;
}

static void vec_insert(GPVec *v, size_t at, void *p) {
  gp_vec_push(v, NULL);
  memmove(&v->items[at + 1], &v->items[at], (v->len - 1 - at) * sizeof(void *));
  v->items[at] = p;
}

/* Lock held: errors naming the known targets / the target's sets. */
static void err_no_target(const char *target) {
  GPBuf b = {0};
  for (size_t i = 0; i < g_targets.len; i++) {
    if (i) gp_buf_puts(&b, ", ");
    gp_buf_puts(&b, ((TargetSets *)g_targets.items[i])->target);
  }
  gp_error_set(GP_ERR_NOT_FOUND, "no optimization sets for target '%s' (known targets: %s)", target,
               b.len ? b.data : "none");
  gp_buf_free(&b);
}

static void err_no_set(const TargetSets *t, const char *set) {
  GPBuf b = {0};
  for (size_t i = 0; i < t->names.len; i++) {
    if (i) gp_buf_puts(&b, ", ");
    gp_buf_puts(&b, t->names.items[i]);
  }
  gp_error_set(GP_ERR_NOT_FOUND, "target '%s' has no optimization set '%s' (sets: %s)", t->target, set,
               b.len ? b.data : "none");
  gp_buf_free(&b);
}

int gp_opt_set_register(const char *target, const char *set, const char *pipeline) {
  if (!gp_reg_name_valid(target)) {
    gp_error_set(GP_ERR_VALUE, "optimization set: invalid target name '%s'", target ? target : "(null)");
    return -1;
  }
  if (!gp_reg_name_valid(set)) {
    gp_error_set(GP_ERR_VALUE, "optimization set: invalid set name '%s'", set ? set : "(null)");
    return -1;
  }
  if (!pipeline) {
    gp_error_set(GP_ERR_VALUE, "optimization set '%s' of target '%s': pipeline is NULL", set, target);
    return -1;
  }
  GPPipeline p;
  if (gp_pipeline_parse(pipeline, &p) != 0) {
    gp_error_prefix("optimization set '%s' of target '%s'", set, target);
    return -1;
  }
  /* Every pass must be registered and the dependencies plannable now, not at run time. */
  int crc = gp_pipeline_check(&p, target);
  gp_pipeline_free(&p);
  if (crc != 0) {
    gp_error_prefix("optimization set '%s' of target '%s'", set, target);
    return -1;
  }
  char *copy = gp_strdup(pipeline), *old = NULL, *origin = gp_strdup(gp_registry_origin());
  gp_reg_lock();
  ptrdiff_t ti = find_target(target);
  TargetSets *t;
  if (ti >= 0) {
    t = g_targets.items[ti];
  } else {
    t = gp_calloc(1, sizeof *t);
    t->target = gp_strdup(target);
    vec_insert(&g_targets, (size_t)(-ti - 1), t);
  }
  ptrdiff_t si = find_set(t, set);
  if (si >= 0) {
    old = t->pipelines.items[si];
    t->pipelines.items[si] = copy;
    gp_free(t->origins.items[si]);
    t->origins.items[si] = origin;
  } else {
    vec_insert(&t->names, (size_t)(-si - 1), gp_strdup(set));
    vec_insert(&t->pipelines, (size_t)(-si - 1), copy);
    vec_insert(&t->origins, (size_t)(-si - 1), origin);
  }
  gp_reg_unlock();
  gp_free(old);
  return 0;
}

char *gp_opt_set_get(const char *target, const char *set) {
  char *r = NULL;
  gp_reg_lock();
  ptrdiff_t ti = target ? find_target(target) : -1;
  if (ti < 0) {
    err_no_target(target ? target : "(null)");
  } else {
    TargetSets *t = g_targets.items[ti];
    if (!set) set = t->selected ? t->selected : "default";
    ptrdiff_t si = find_set(t, set);
    if (si < 0)
      err_no_set(t, set);
    else
      r = gp_strdup(t->pipelines.items[si]);
  }
  gp_reg_unlock();
  return r;
}

char *gp_opt_set_default(const char *target) {
  return gp_opt_set_get(target, NULL);
}

int gp_opt_set_select(const char *target, const char *set) {
  int rc = -1;
  gp_reg_lock();
  ptrdiff_t ti = target ? find_target(target) : -1;
  if (ti < 0) {
    err_no_target(target ? target : "(null)");
  } else {
    TargetSets *t = g_targets.items[ti];
    if (!set || find_set(t, set) < 0) {
      err_no_set(t, set ? set : "(null)");
    } else {
      gp_free(t->selected);
      t->selected = gp_strdup(set);
      rc = 0;
    }
  }
  gp_reg_unlock();
  return rc;
}

int gp_opt_set_check(const char *target, const char *set) {
  int rc = 0;
  gp_reg_lock();
  ptrdiff_t ti = target ? find_target(target) : -1;
  if (ti >= 0) {
    const TargetSets *t = g_targets.items[ti];
    if (find_set(t, set) >= 0) {
      rc = 1;
    } else {
      err_no_set(t, set);
      rc = -1;
    }
  }
  gp_reg_unlock();
  return rc;
}

char *gp_opt_set_list(void) {
  GPBuf b = {0};
  gp_reg_lock();
  for (size_t i = 0; i < g_targets.len; i++) {
    TargetSets *t = g_targets.items[i];
    for (size_t j = 0; j < t->names.len; j++)
      gp_buf_printf(&b, "%s %s %s\n", t->target, (char *)t->names.items[j], (char *)t->pipelines.items[j]);
  }
  gp_reg_unlock();
  return gp_buf_take(&b);
}

void gp_opt_set_targets_locked(GPVec *names) {
  for (size_t i = 0; i < g_targets.len; i++) gp_vec_push(names, gp_strdup(((TargetSets *)g_targets.items[i])->target));
}

char *gp_opt_sets_of_locked(const char *target, GPVec *names, GPVec *pipelines) {
  ptrdiff_t ti = find_target(target);
  if (ti < 0) return NULL;
  const TargetSets *t = g_targets.items[ti];
  for (size_t i = 0; i < t->names.len; i++) {
    gp_vec_push(names, t->names.items[i]);
    gp_vec_push(pipelines, t->pipelines.items[i]);
  }
  const char *def = t->selected ? t->selected : "default";
  return find_set(t, def) >= 0 ? gp_strdup(def) : NULL;
}

static void target_sets_free(TargetSets *t) {
  for (size_t j = 0; j < t->names.len; j++) {
    gp_free(t->names.items[j]);
    gp_free(t->pipelines.items[j]);
    gp_free(t->origins.items[j]);
  }
  gp_vec_free(&t->names);
  gp_vec_free(&t->pipelines);
  gp_vec_free(&t->origins);
  gp_free(t->selected);
  gp_free(t->target);
  gp_free(t);
}

static void vec_erase(GPVec *v, size_t at) {
  memmove(&v->items[at], &v->items[at + 1], (v->len - 1 - at) * sizeof(void *));
  v->len--;
}

void gp_opt_sets_unregister_origin(const char *origin) {
  gp_reg_lock();
  for (size_t i = g_targets.len; i-- > 0;) {
    TargetSets *t = g_targets.items[i];
    for (size_t j = t->names.len; j-- > 0;) {
      if (strcmp(t->origins.items[j], origin) != 0) continue;
      if (t->selected && strcmp(t->selected, t->names.items[j]) == 0) {
        gp_free(t->selected);
        t->selected = NULL;
      }
      gp_free(t->names.items[j]);
      gp_free(t->pipelines.items[j]);
      gp_free(t->origins.items[j]);
      vec_erase(&t->names, j);
      vec_erase(&t->pipelines, j);
      vec_erase(&t->origins, j);
    }
    if (t->names.len == 0) {
      vec_erase(&g_targets, i);
      target_sets_free(t);
    }
  }
  gp_reg_unlock();
}

void gp_opt_sets_shutdown(void) {
  gp_reg_lock();
  GPVec all = g_targets;
  g_targets = (GPVec){0};
  gp_reg_unlock();
  for (size_t i = 0; i < all.len; i++) target_sets_free(all.items[i]);
  gp_vec_free(&all);
}
