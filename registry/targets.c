/* targets.c -- targets by name (ABI 1.2): what each target has kernels for (ops and
 * composites, or every op), which plugin registered it, and the check that a pass bound to
 * kernels (GPPassInfo.kernels, Paddle Lite's BindKernel) runs only for a target with all of
 * them.  Guarded by the registry lock (gp_reg_lock), like the passes and the optimization sets;
 * the op registry's lock is never taken while it is held. */
#include "registry_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct Target {
  char *name;
  char *help;     /* NULL when none */
  char *origin;   /* plugin name, or "host" */
  uint32_t flags; /* GP_TARGET_* */
  int32_t num_kernels;
  char **kernels; /* sorted, unique */
} Target;

static GPVec g_tg; /* Target*, sorted by name; registry lock */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void target_free(Target *t) {
  if (!t) return;
  for (int32_t i = 0; i < t->num_kernels; i++) gp_free(t->kernels[i]);
  gp_free(t->kernels);
  gp_free(t->name);
  gp_free(t->help);
  gp_free(t->origin);
  gp_free(t);
}

/* Index of `name`, or -(insertion point) - 1.  Lock held. */
static ptrdiff_t find_locked(const char *name) {
  size_t lo = 0, hi = g_tg.len;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(((Target *)g_tg.items[mid])->name, name);
    if (c == 0) return (ptrdiff_t)mid;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -(ptrdiff_t)lo - 1;
}

static bool listed(const Target *t, const char *kernel) {
  return t->num_kernels &&
         bsearch(&kernel, t->kernels, (size_t)t->num_kernels, sizeof *t->kernels, cmp_str) != NULL;
}

/* Checks and copies `info` into a new Target, or NULL + error. */
static Target *target_from_info(const GPTargetInfo *info, const char *origin) {
  if (!info) {
    gp_error_set(GP_ERR_VALUE, "target registration: info is NULL");
    return NULL;
  }
  size_t v12 = GP_STRUCT_SIZE(GPTargetInfo, flags);
  if (info->struct_size < v12) {
    gp_error_set(GP_ERR_VERSION,
                 "target registration: GPTargetInfo struct_size %zu is smaller than the ABI 1.2 size %zu",
                 info->struct_size, v12);
    return NULL;
  }
  if (GP_ABI_MAJOR_OF(info->abi_version) != GP_ABI_VERSION_MAJOR) {
    gp_error_set(GP_ERR_VERSION, "target registration: GPTargetInfo has ABI version %u.%u, host is %u.%u",
                 GP_ABI_MAJOR_OF(info->abi_version), GP_ABI_MINOR_OF(info->abi_version), GP_ABI_VERSION_MAJOR,
                 GP_ABI_VERSION_MINOR);
    return NULL;
  }
  /* Only the fields this host knows; a larger struct from a newer minor is accepted. */
  GPTargetInfo in;
  memset(&in, 0, sizeof in);
  memcpy(&in, info, sizeof in < info->struct_size ? sizeof in : info->struct_size);
  if (!gp_reg_name_valid(in.name)) {
    gp_error_set(GP_ERR_VALUE, "target registration: invalid target name '%s' (expected [A-Za-z0-9_.-]+)",
                 in.name ? in.name : "(null)");
    return NULL;
  }
  const char *nm = in.name;
  if (in.flags & ~(uint32_t)GP_TARGET_ALL_OPS) {
    gp_error_set(GP_ERR_VALUE, "target '%s': unknown flags 0x%x (known: GP_TARGET_ALL_OPS = 0x%x)", nm,
                 (unsigned)(in.flags & ~(uint32_t)GP_TARGET_ALL_OPS), (unsigned)GP_TARGET_ALL_OPS);
    return NULL;
  }
  if (in.num_kernels < 0) {
    gp_error_set(GP_ERR_VALUE, "target '%s': negative kernel count %d", nm, in.num_kernels);
    return NULL;
  }
  if (in.num_kernels > 0 && !in.kernels) {
    gp_error_set(GP_ERR_VALUE, "target '%s': kernels is NULL but its count is %d", nm, in.num_kernels);
    return NULL;
  }
  for (int32_t i = 0; i < in.num_kernels; i++) {
    if (!gp_reg_name_valid(in.kernels[i])) {
      gp_error_set(GP_ERR_VALUE, "target '%s': kernels[%d] is not a valid name ('%s')", nm, i,
                   in.kernels[i] ? in.kernels[i] : "(null)");
      return NULL;
    }
    for (int32_t j = 0; j < i; j++) {
      if (strcmp(in.kernels[i], in.kernels[j]) == 0) {
        gp_error_set(GP_ERR_VALUE, "target '%s': kernel '%s' is listed twice (kernels[%d] and kernels[%d])", nm,
                     in.kernels[i], j, i);
        return NULL;
      }
    }
  }
  Target *t = gp_calloc(1, sizeof *t);
  t->name = gp_strdup(nm);
  t->help = in.help ? gp_strdup(in.help) : NULL;
  t->origin = gp_strdup(origin ? origin : gp_registry_origin());
  t->flags = in.flags;
  t->num_kernels = in.num_kernels;
  if (in.num_kernels) {
    t->kernels = gp_malloc((size_t)in.num_kernels * sizeof *t->kernels);
    for (int32_t i = 0; i < in.num_kernels; i++) t->kernels[i] = gp_strdup(in.kernels[i]);
    qsort(t->kernels, (size_t)in.num_kernels, sizeof *t->kernels, cmp_str);
  }
  return t;
}

int gp_target_register(const GPTargetInfo *info, bool allow_override, const char *origin) {
  Target *t = target_from_info(info, origin), *old = NULL;
  if (!t) return -1;
  int rc = 0;
  gp_reg_lock();
  ptrdiff_t at = find_locked(t->name);
  if (at >= 0 && !allow_override) {
    gp_error_set(GP_ERR_VALUE, "target '%s' is already registered (by %s)", t->name,
                 ((Target *)g_tg.items[at])->origin);
    rc = -1;
  } else if (at >= 0) {
    old = g_tg.items[at];
    g_tg.items[at] = t;
  } else {
    size_t ins = (size_t)(-at - 1);
    gp_vec_push(&g_tg, NULL);
    memmove(&g_tg.items[ins + 1], &g_tg.items[ins], (g_tg.len - 1 - ins) * sizeof(void *));
    g_tg.items[ins] = t;
  }
  gp_reg_unlock();
  if (rc != 0) target_free(t);
  target_free(old);
  return rc;
}

/* Remove entry `at`; lock held.  Returns it (the caller frees it after unlocking). */
static Target *remove_locked(ptrdiff_t at) {
  Target *t = g_tg.items[at];
  memmove(&g_tg.items[at], &g_tg.items[at + 1], (g_tg.len - (size_t)at - 1) * sizeof(void *));
  g_tg.len--;
  return t;
}

/* "(known targets: a, b)" or "(no target is registered)"; lock held. */
static void known_targets_locked(GPBuf *b) {
  if (!g_tg.len) {
    gp_buf_puts(b, "no target is registered");
    return;
  }
  gp_buf_puts(b, "known targets: ");
  for (size_t i = 0; i < g_tg.len; i++) gp_buf_printf(b, "%s%s", i ? ", " : "", ((Target *)g_tg.items[i])->name);
}

int gp_target_unregister(const char *name) {
  Target *t = NULL;
  GPBuf b = {0};
  gp_reg_lock();
  ptrdiff_t at = name ? find_locked(name) : -1;
  if (at >= 0)
    t = remove_locked(at);
  else
    known_targets_locked(&b);
  gp_reg_unlock();
  if (!t) {
    gp_error_set(GP_ERR_NOT_FOUND, "no such target '%s' (%s)", name ? name : "(null)", b.data);
    gp_buf_free(&b);
    return -1;
  }
  target_free(t);
  return 0;
}

void gp_targets_unregister_origin(const char *origin) {
  GPVec dead = {0};
  gp_reg_lock();
  for (size_t i = g_tg.len; i-- > 0;)
    if (strcmp(((Target *)g_tg.items[i])->origin, origin) == 0) gp_vec_push(&dead, remove_locked((ptrdiff_t)i));
  gp_reg_unlock();
  for (size_t i = 0; i < dead.len; i++) target_free(dead.items[i]);
  gp_vec_free(&dead);
}

/* How `target` stands on `kernel`, lock held: 1 listed, 0 missing, 2 an op name decides (the
 * target has every op), -1 the target is not registered. */
static int kernel_state_locked(const char *target, const char *kernel) {
  ptrdiff_t at = find_locked(target);
  if (at < 0) return -1;
  const Target *t = g_tg.items[at];
  if (listed(t, kernel)) return 1;
  return t->flags & GP_TARGET_ALL_OPS ? 2 : 0;
}

int gp_target_has_kernel(const char *target, const char *kernel) {
  if (!target || !kernel) {
    gp_error_set(GP_ERR_VALUE, "target_has_kernel: %s is NULL", !target ? "target" : "kernel");
    return -1;
  }
  gp_reg_lock();
  int st = kernel_state_locked(target, kernel);
  gp_reg_unlock();
  if (st == 2) return gp_op_find(kernel) != NULL; /* outside the registry lock */
  return st == 1;
}

char *gp_target_missing_kernels(const char *target, const char *const *kernels, int32_t n) {
  if (n <= 0) return NULL;
  int *st = gp_malloc((size_t)n * sizeof *st);
  gp_reg_lock();
  for (int32_t i = 0; i < n; i++) st[i] = kernel_state_locked(target, kernels[i]);
  gp_reg_unlock();
  GPBuf b = {0};
  int32_t missing = 0;
  for (int32_t i = 0; i < n; i++) {
    bool has = st[i] == 1 || (st[i] == 2 && gp_op_find(kernels[i]) != NULL);
    if (has) continue;
    gp_buf_printf(&b, "%s'%s'", missing ? ", " : "", kernels[i]);
    missing++;
  }
  char *why = NULL;
  if (missing) {
    GPBuf w = {0};
    gp_buf_printf(&w, "target '%s' %shas no kernel%s %s", target, st[0] == -1 ? "is not registered, so it " : "",
                  missing > 1 ? "s" : "", b.data);
    why = gp_buf_take(&w);
  }
  gp_buf_free(&b);
  gp_free(st);
  return why;
}

int gp_target_names(char ***out_names, int32_t *out_count) {
  if (!out_names || !out_count) {
    gp_error_set(GP_ERR_VALUE, "target_list: %s is NULL", !out_names ? "out_names" : "out_count");
    return -1;
  }
  gp_reg_lock();
  size_t n = g_tg.len, bytes = n * sizeof(char *);
  for (size_t i = 0; i < n; i++) bytes += strlen(((Target *)g_tg.items[i])->name) + 1;
  char **arr = NULL;
  if (n) {
    arr = gp_malloc(bytes);
    char *p = (char *)(arr + n);
    for (size_t i = 0; i < n; i++) {
      const char *nm = ((Target *)g_tg.items[i])->name;
      size_t len = strlen(nm) + 1;
      memcpy(p, nm, len);
      arr[i] = p;
      p += len;
    }
  }
  gp_reg_unlock();
  *out_names = arr;
  *out_count = (int32_t)n;
  return 0;
}

/* ---- views (graphpass targets) */

static char **dup_vec(const GPVec *v) {
  char **a = gp_malloc((v->len ? v->len : 1) * sizeof *a);
  for (size_t i = 0; i < v->len; i++) a[i] = gp_strdup(v->items[i]);
  return a;
}

size_t gp_target_views(GPTargetView **out) {
  GPVec names = {0};
  gp_reg_lock();
  /* the union of the registered targets and the targets that have optimization sets */
  for (size_t i = 0; i < g_tg.len; i++) gp_vec_push(&names, gp_strdup(((Target *)g_tg.items[i])->name));
  GPVec set_targets = {0};
  gp_opt_set_targets_locked(&set_targets);
  for (size_t i = 0; i < set_targets.len; i++) {
    if (find_locked(set_targets.items[i]) >= 0)
      gp_free(set_targets.items[i]);
    else
      gp_vec_push(&names, set_targets.items[i]);
  }
  gp_vec_free(&set_targets);
  if (names.len) qsort(names.items, names.len, sizeof(void *), cmp_str);
  GPTargetView *v = gp_calloc(names.len ? names.len : 1, sizeof *v);
  for (size_t i = 0; i < names.len; i++) {
    GPTargetView *x = &v[i];
    x->name = names.items[i];
    ptrdiff_t at = find_locked(x->name);
    if (at >= 0) {
      const Target *t = g_tg.items[at];
      x->registered = true;
      x->help = t->help ? gp_strdup(t->help) : NULL;
      x->origin = gp_strdup(t->origin);
      x->flags = t->flags;
      x->num_kernels = t->num_kernels;
      x->kernels = gp_malloc(((size_t)t->num_kernels + 1) * sizeof *x->kernels);
      for (int32_t k = 0; k < t->num_kernels; k++) x->kernels[k] = gp_strdup(t->kernels[k]);
    }
    GPVec sn = {0}, sp = {0};
    x->default_set = gp_opt_sets_of_locked(x->name, &sn, &sp);
    x->num_sets = (int32_t)sn.len;
    x->set_names = dup_vec(&sn);
    x->set_pipelines = dup_vec(&sp);
    gp_vec_free(&sn);
    gp_vec_free(&sp);
  }
  gp_reg_unlock();
  size_t n = names.len;
  gp_vec_free(&names);
  *out = v;
  return n;
}

void gp_target_views_free(GPTargetView *v, size_t n) {
  if (!v) return;
  for (size_t i = 0; i < n; i++) {
    GPTargetView *x = &v[i];
    for (int32_t k = 0; k < x->num_kernels; k++) gp_free(x->kernels[k]);
    gp_free(x->kernels);
    for (int32_t k = 0; k < x->num_sets; k++) {
      gp_free(x->set_names[k]);
      gp_free(x->set_pipelines[k]);
    }
    gp_free(x->set_names);
    gp_free(x->set_pipelines);
    gp_free(x->default_set);
    gp_free(x->name);
    gp_free(x->help);
    gp_free(x->origin);
  }
  gp_free(v);
}

void gp_targets_shutdown(void) {
  gp_reg_lock();
  GPVec all = g_tg;
  g_tg = (GPVec){0};
  gp_reg_unlock();
  for (size_t i = 0; i < all.len; i++) target_free(all.items[i]);
  gp_vec_free(&all);
}
