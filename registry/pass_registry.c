/* pass_registry.c -- passes by name: registration (deep copies), reference-counted entries,
 * config key declarations, name suggestions.  One global mutex guards the table; it is never
 * held while a pass or a self_deleter runs. */
#include "registry_impl.h"
#include "../ir/pattern.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
/* Entries sorted by name (the registry's reference to each). */
static GPVec g_passes;

void gp_reg_lock(void) { pthread_mutex_lock(&g_lock); }
void gp_reg_unlock(void) { pthread_mutex_unlock(&g_lock); }

/* ---- names */

bool gp_reg_name_valid(const char *name) {
  if (!name || !*name) return false;
  for (const char *p = name; *p; p++) {
    char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '.' || c == '-'))
      return false;
  }
  return true;
}

size_t gp_edit_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  size_t *row = gp_malloc((m + 1) * sizeof *row);
  for (size_t j = 0; j <= m; j++) row[j] = j;
  for (size_t i = 1; i <= n; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= m; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] == b[j - 1] ? 0 : 1);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  size_t d = row[m];
  gp_free(row);
  return d;
}

static int ci_cmp(const char *a, const char *b) {
  for (;; a++, b++) {
    int x = (*a >= 'A' && *a <= 'Z') ? *a + 32 : *a, y = (*b >= 'A' && *b <= 'Z') ? *b + 32 : *b;
    if (x != y || !x) return x - y;
  }
}

/* Closest of `names` (n strings) to `name` within a tolerance, or NULL (borrowed). */
static const char *closest(const char *name, const char *const *names, size_t n) {
  const char *best = NULL;
  size_t best_d = (size_t)-1;
  for (size_t i = 0; i < n; i++) {
    size_t d = ci_cmp(name, names[i]) == 0 ? 0 : gp_edit_distance(name, names[i]);
    if (d < best_d) best_d = d, best = names[i];
  }
  size_t len = strlen(name), tol = len / 3 > 2 ? len / 3 : 2;
  return best && best_d <= tol ? best : NULL;
}

char *gp_reg_suggest(const char *name) {
  gp_reg_lock();
  const char **names = gp_malloc((g_passes.len + 1) * sizeof *names);
  for (size_t i = 0; i < g_passes.len; i++) names[i] = ((GPPassEntry *)g_passes.items[i])->info.name;
  const char *c = closest(name, names, g_passes.len);
  char *r = c ? gp_strdup(c) : NULL;
  gp_reg_unlock();
  gp_free(names);
  return r;
}

void gp_reg_error_no_such_pass(const char *name, const char *note) {
  char *s = gp_reg_suggest(name);
  GPBuf b = {0};
  gp_buf_printf(&b, "no such pass '%s'", name);
  if (note) gp_buf_printf(&b, " (%s)", note);
  if (s) gp_buf_printf(&b, "; did you mean '%s'?", s);
  gp_error_set(GP_ERR_NOT_FOUND, "%s", b.data);
  gp_buf_free(&b);
  gp_free(s);
}

/* ---- origin (per thread: the loader sets it around a plugin's initialize) */

static _Thread_local char t_origin[256];

void gp_registry_set_origin(const char *origin) {
  if (!origin) {
    t_origin[0] = 0;
    return;
  }
  size_t n = strlen(origin);
  if (n >= sizeof t_origin) n = sizeof t_origin - 1;
  memcpy(t_origin, origin, n);
  t_origin[n] = 0;
}

const char *gp_registry_origin(void) { return t_origin[0] ? t_origin : "host"; }

/* ---- entries */

static void free_strs(const char *const *a, int32_t n) {
  if (!a) return;
  for (int32_t i = 0; i < n; i++) gp_free((void *)a[i]);
  gp_free((void *)a);
}

static const char *const *dup_strs(const char *const *a, int32_t n) {
  if (n <= 0) return NULL;
  char **r = gp_malloc((size_t)n * sizeof *r);
  for (int32_t i = 0; i < n; i++) r[i] = gp_strdup(a[i]);
  return (const char *const *)r;
}

static void entry_free(GPPassEntry *e) {
  GPPassInfo *in = &e->info;
  gp_free((void *)in->name);
  gp_free((void *)in->help);
  free_strs(in->required, in->num_required);
  free_strs(in->targets, in->num_targets);
  free_strs(in->excluded_targets, in->num_excluded_targets);
  free_strs(in->kernels, in->num_kernels);
  for (int32_t i = 0; i < in->num_config_keys; i++) {
    const GPConfigKey *k = &in->config_keys[i];
    gp_free((void *)k->name);
    gp_free((void *)k->help);
    if (k->type_index == GP_TI_RAW_STR) gp_free((void *)k->default_value.v_c_str);
  }
  gp_free((void *)in->config_keys);
  if (in->self_deleter) in->self_deleter(in->self);
  gp_free(e->origin);
  gp_free(e);
}

void gp_pass_entry_release(GPPassEntry *e) {
  if (!e) return;
  if (__atomic_fetch_sub(&e->refs, 1u, __ATOMIC_ACQ_REL) == 1u) entry_free(e);
}

static GPPassEntry *entry_retain(GPPassEntry *e) {
  __atomic_fetch_add(&e->refs, 1u, __ATOMIC_RELAXED);
  return e;
}

/* Index of `name` in g_passes, or -(insertion point) - 1.  Lock held. */
static ptrdiff_t find_locked(const char *name) {
  size_t lo = 0, hi = g_passes.len;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(((GPPassEntry *)g_passes.items[mid])->info.name, name);
    if (c == 0) return (ptrdiff_t)mid;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -(ptrdiff_t)lo - 1;
}

GPPassEntry *gp_pass_acquire(const char *name) {
  if (!name) return NULL;
  gp_reg_lock();
  ptrdiff_t i = find_locked(name);
  GPPassEntry *e = i >= 0 ? entry_retain(g_passes.items[i]) : NULL;
  gp_reg_unlock();
  return e;
}

int32_t gp_pass_max_opt_level(void) {
  int32_t m = 0;
  gp_reg_lock();
  for (size_t i = 0; i < g_passes.len; i++) {
    const GPPassEntry *e = g_passes.items[i];
    if (e->info.opt_level > m) m = e->info.opt_level;
  }
  gp_reg_unlock();
  return m;
}

size_t gp_pass_list(GPPassEntry ***out) {
  gp_reg_lock();
  size_t n = g_passes.len;
  GPPassEntry **a = gp_malloc((n ? n : 1) * sizeof *a);
  for (size_t i = 0; i < n; i++) a[i] = entry_retain(g_passes.items[i]);
  gp_reg_unlock();
  *out = a;
  return n;
}

static bool str_in(const char *const *a, int32_t n, const char *s) {
  for (int32_t i = 0; i < n; i++)
    if (strcmp(a[i], s) == 0) return true;
  return false;
}

char *gp_pass_target_refusal(const GPPassInfo *in, const char *target) {
  GPBuf b = {0};
  if (in->num_targets && !str_in(in->targets, in->num_targets, target)) {
    gp_buf_printf(&b, "target %s not in [", target);
    for (int32_t k = 0; k < in->num_targets; k++) gp_buf_printf(&b, "%s%s", k ? ", " : "", in->targets[k]);
    gp_buf_puts(&b, "]");
    return gp_buf_take(&b);
  }
  if (str_in(in->excluded_targets, in->num_excluded_targets, target)) {
    gp_buf_printf(&b, "target %s excluded", target);
    return gp_buf_take(&b);
  }
  /* Paddle Lite's BindKernel: the target must have every kernel the pass binds to. */
  return gp_target_missing_kernels(target, in->kernels, in->num_kernels);
}

/* A list field of a pass_list line: comma-separated, empty when n == 0. */
static void put_list(GPBuf *b, const char *const *a, int32_t n) {
  for (int32_t i = 0; i < n; i++) gp_buf_printf(b, "%s%s", i ? "," : "", a[i]);
  gp_buf_putc(b, '\t');
}

static const char *kind_name(int32_t kind) {
  switch (kind) {
  case GP_PASS_ANALYSIS: return "analysis";
  case GP_PASS_DEBUG: return "debug";
  default: return "transform";
  }
}

char *gp_pass_list_text(const char *target) {
  GPPassEntry **list;
  size_t n = gp_pass_list(&list);
  GPBuf b = {0};
  for (size_t i = 0; i < n; i++) {
    const GPPassInfo *in = &list[i]->info;
    char *refused = target ? gp_pass_target_refusal(in, target) : NULL;
    if (!refused) {
      gp_buf_printf(&b, "%s\t%d\t%s\t", in->name, (int)in->opt_level, kind_name(in->kind));
      put_list(&b, in->required, in->num_required);
      put_list(&b, in->targets, in->num_targets);
      put_list(&b, in->excluded_targets, in->num_excluded_targets);
      put_list(&b, in->kernels, in->num_kernels);
      gp_buf_printf(&b, "%s\t", list[i]->origin);
      for (int32_t k = 0; k < in->num_config_keys; k++) {
        char *key = gp_config_full_key(in->name, &in->config_keys[k]);
        gp_buf_printf(&b, "%s%s:%s", k ? "," : "", key, gp_config_type_name(in->config_keys[k].type_index));
        gp_free(key);
      }
      gp_buf_putc(&b, '\t');
      for (const char *h = in->help ? in->help : ""; *h; h++) gp_buf_putc(&b, *h == '\t' || *h == '\n' || *h == '\r' ? ' ' : *h);
      gp_buf_putc(&b, '\n');
    }
    gp_free(refused);
    gp_pass_entry_release(list[i]);
  }
  gp_free(list);
  return gp_buf_take(&b);
}

char *gp_config_full_key(const char *pass, const GPConfigKey *k) {
  if (strchr(k->name, '.')) return gp_strdup(k->name);
  GPBuf b = {0};
  gp_buf_printf(&b, "%s.%s", pass, k->name);
  return gp_buf_take(&b);
}

const char *gp_config_type_name(int32_t ti) {
  switch (ti) {
  case GP_TI_INT: return "int";
  case GP_TI_BOOL: return "bool";
  case GP_TI_FLOAT: return "float";
  case GP_TI_RAW_STR: return "string";
  default: return "?";
  }
}

/* Normalize a declared default to the key's type (None -> the zero value; int -> bool/float).
 * Returns false when it cannot be converted. */
static bool normalize_default(int32_t ti, GPAny in, GPAny *out) {
  if (in.type_index == GP_TI_NONE) {
    *out = ti == GP_TI_INT ? gp_any_int(0)
           : ti == GP_TI_BOOL ? gp_any_bool(false)
           : ti == GP_TI_FLOAT ? gp_any_float(0.0)
                               : gp_any_str(NULL);
    if (ti == GP_TI_RAW_STR) out->v_c_str = gp_strdup("");
    return true;
  }
  if (ti == GP_TI_RAW_STR) {
    if (in.type_index != GP_TI_RAW_STR) return false;
    *out = gp_any_str(gp_strdup(in.v_c_str ? in.v_c_str : ""));
    return true;
  }
  if (ti == GP_TI_INT && in.type_index == GP_TI_INT) return *out = gp_any_int(in.v_int64), true;
  if (ti == GP_TI_BOOL && (in.type_index == GP_TI_BOOL || in.type_index == GP_TI_INT))
    return *out = gp_any_bool(in.v_int64 != 0), true;
  if (ti == GP_TI_FLOAT && in.type_index == GP_TI_FLOAT) return *out = gp_any_float(in.v_float64), true;
  if (ti == GP_TI_FLOAT && in.type_index == GP_TI_INT)
    return *out = gp_any_float((double)in.v_int64), true;
  return false;
}

static bool default_ok(int32_t ti, GPAny d) {
  switch (d.type_index) {
  case GP_TI_NONE: return true;
  case GP_TI_RAW_STR: return ti == GP_TI_RAW_STR;
  case GP_TI_INT: return ti != GP_TI_RAW_STR;
  case GP_TI_BOOL: return ti == GP_TI_BOOL;
  case GP_TI_FLOAT: return ti == GP_TI_FLOAT;
  default: return false;
  }
}

static int validate_strs(const char *pass, const char *what, const char *const *a, int32_t n,
                         bool pass_names) {
  if (n < 0) {
    gp_error_set(GP_ERR_VALUE, "pass '%s': negative %s count %d", pass, what, n);
    return -1;
  }
  if (n > 0 && !a) {
    gp_error_set(GP_ERR_VALUE, "pass '%s': %s is NULL but its count is %d", pass, what, n);
    return -1;
  }
  for (int32_t i = 0; i < n; i++) {
    if (!a[i] || !*a[i] || (pass_names && !gp_reg_name_valid(a[i]))) {
      gp_error_set(GP_ERR_VALUE, "pass '%s': %s[%d] is not a valid name ('%s')", pass, what, i,
                   a[i] ? a[i] : "(null)");
      return -1;
    }
  }
  return 0;
}

/* Checks and deep-copies `info` into a new entry (refs 1), or NULL + error. */
static GPPassEntry *entry_from_info(const GPPassInfo *info, const char *origin) {
  if (!info) {
    gp_error_set(GP_ERR_VALUE, "pass registration: info is NULL");
    return NULL;
  }
  if (GP_ABI_MAJOR_OF(info->abi_version) != GP_ABI_VERSION_MAJOR) {
    gp_error_set(GP_ERR_VERSION, "pass registration: GPPassInfo has ABI version %u.%u, host is %u.%u",
                 GP_ABI_MAJOR_OF(info->abi_version), GP_ABI_MINOR_OF(info->abi_version),
                 GP_ABI_VERSION_MAJOR, GP_ABI_VERSION_MINOR);
    return NULL;
  }
  size_t v10 = GP_STRUCT_SIZE(GPPassInfo, help);
  if (info->struct_size < v10) {
    gp_error_set(GP_ERR_VERSION,
                 "pass registration: GPPassInfo struct_size %zu is smaller than the ABI 1.0 size %zu",
                 info->struct_size, v10);
    return NULL;
  }
  /* Only the fields this host knows; a larger struct from a newer minor is accepted, and the
   * fields an older minor lacks stay zero. */
  GPPassInfo in;
  memset(&in, 0, sizeof in);
  memcpy(&in, info, sizeof in < info->struct_size ? sizeof in : info->struct_size);
  if (!GP_HAS_FIELD(info, GPPassInfo, num_kernels)) { /* a 1.0 / 1.1 descriptor */
    in.kernels = NULL;
    in.num_kernels = 0;
  }
  if (!gp_reg_name_valid(in.name)) {
    gp_error_set(GP_ERR_VALUE, "pass registration: invalid pass name '%s' (expected [A-Za-z0-9_.-]+)",
                 in.name ? in.name : "(null)");
    return NULL;
  }
  const char *nm = in.name;
  if (!in.func) {
    gp_error_set(GP_ERR_VALUE, "pass '%s': func is NULL", nm);
    return NULL;
  }
  if (in.kind < GP_PASS_TRANSFORM || in.kind > GP_PASS_DEBUG) {
    gp_error_set(GP_ERR_VALUE, "pass '%s': unknown kind %d", nm, in.kind);
    return NULL;
  }
  if (in.opt_level < 0) {
    gp_error_set(GP_ERR_VALUE, "pass '%s': negative opt_level %d", nm, in.opt_level);
    return NULL;
  }
  if (validate_strs(nm, "required", in.required, in.num_required, true) ||
      validate_strs(nm, "targets", in.targets, in.num_targets, false) ||
      validate_strs(nm, "excluded_targets", in.excluded_targets, in.num_excluded_targets, false) ||
      validate_strs(nm, "kernels", in.kernels, in.num_kernels, true))
    return NULL;
  if (in.num_config_keys < 0 || (in.num_config_keys > 0 && !in.config_keys)) {
    gp_error_set(GP_ERR_VALUE, "pass '%s': bad config_keys (count %d)", nm, in.num_config_keys);
    return NULL;
  }
  for (int32_t i = 0; i < in.num_config_keys; i++) {
    const GPConfigKey *k = &in.config_keys[i];
    if (!gp_reg_name_valid(k->name) || k->name[0] == '.' || k->name[strlen(k->name) - 1] == '.') {
      gp_error_set(GP_ERR_VALUE, "pass '%s': config key %d has an invalid name '%s'", nm, i,
                   k->name ? k->name : "(null)");
      return NULL;
    }
    if (k->type_index != GP_TI_INT && k->type_index != GP_TI_BOOL && k->type_index != GP_TI_FLOAT &&
        k->type_index != GP_TI_RAW_STR) {
      gp_error_set(GP_ERR_VALUE,
                   "pass '%s': config key '%s' has type index %d (expected int, bool, float or string)",
                   nm, k->name, k->type_index);
      return NULL;
    }
    if (!default_ok(k->type_index, k->default_value)) {
      gp_error_set(GP_ERR_VALUE, "pass '%s': the default of config key '%s' does not have type %s", nm, k->name,
                   gp_config_type_name(k->type_index));
      return NULL;
    }
    for (int32_t j = 0; j < i; j++) {
      char *a = gp_config_full_key(nm, k), *b = gp_config_full_key(nm, &in.config_keys[j]);
      bool same = strcmp(a, b) == 0;
      gp_free(a);
      gp_free(b);
      if (same) {
        gp_error_set(GP_ERR_VALUE, "pass '%s': config key '%s' is declared twice", nm, k->name);
        return NULL;
      }
    }
  }

  GPPassEntry *e = gp_calloc(1, sizeof *e);
  e->refs = 1;
  e->origin = gp_strdup(origin ? origin : gp_registry_origin());
  GPPassInfo *o = &e->info;
  *o = in;
  o->struct_size = sizeof *o;
  o->abi_version = GP_ABI_VERSION;
  o->name = gp_strdup(in.name);
  o->help = in.help ? gp_strdup(in.help) : NULL;
  o->required = dup_strs(in.required, in.num_required);
  o->num_required = in.num_required;
  o->targets = dup_strs(in.targets, in.num_targets);
  o->excluded_targets = dup_strs(in.excluded_targets, in.num_excluded_targets);
  o->kernels = dup_strs(in.kernels, in.num_kernels);
  GPConfigKey *keys = in.num_config_keys ? gp_calloc((size_t)in.num_config_keys, sizeof *keys) : NULL;
  for (int32_t i = 0; i < in.num_config_keys; i++) {
    const GPConfigKey *k = &in.config_keys[i];
    keys[i].name = gp_strdup(k->name);
    keys[i].type_index = k->type_index;
    keys[i].help = k->help ? gp_strdup(k->help) : NULL;
    normalize_default(k->type_index, k->default_value, &keys[i].default_value);
  }
  o->config_keys = keys;
  return e;
}

int gp_pass_register(const GPPassInfo *info, bool allow_override, const char *origin) {
  GPPassEntry *e = entry_from_info(info, origin);
  if (!e) return -1;
  const char *nm = e->info.name;
  /* Full keys of the new pass, to check against other passes' declarations. */
  char **full = gp_malloc(((size_t)e->info.num_config_keys + 1) * sizeof *full);
  for (int32_t i = 0; i < e->info.num_config_keys; i++)
    full[i] = gp_config_full_key(nm, &e->info.config_keys[i]);

  GPPassEntry *old = NULL;
  int rc = 0;
  gp_reg_lock();
  ptrdiff_t at = find_locked(nm);
  if (at >= 0 && !allow_override) {
    GPPassEntry *x = g_passes.items[at];
    gp_error_set(GP_ERR_VALUE, "pass '%s' is already registered (by %s)", nm, x->origin);
    rc = -1;
  }
  for (size_t p = 0; rc == 0 && p < g_passes.len; p++) {
    GPPassEntry *x = g_passes.items[p];
    if ((ptrdiff_t)p == at) continue; /* being replaced */
    for (int32_t i = 0; rc == 0 && i < x->info.num_config_keys; i++) {
      char *fk = gp_config_full_key(x->info.name, &x->info.config_keys[i]);
      for (int32_t j = 0; j < e->info.num_config_keys; j++) {
        if (strcmp(fk, full[j]) == 0) {
          gp_error_set(GP_ERR_VALUE, "pass '%s': config key '%s' is already declared by pass '%s'", nm,
                       fk, x->info.name);
          rc = -1;
          break;
        }
      }
      gp_free(fk);
    }
  }
  if (rc == 0) {
    if (at >= 0) {
      old = g_passes.items[at];
      g_passes.items[at] = e;
    } else {
      size_t ins = (size_t)(-at - 1);
      gp_vec_push(&g_passes, NULL);
      memmove(&g_passes.items[ins + 1], &g_passes.items[ins], (g_passes.len - 1 - ins) * sizeof(void *));
      g_passes.items[ins] = e;
    }
  }
  gp_reg_unlock();
  for (int32_t i = 0; i < e->info.num_config_keys; i++) gp_free(full[i]);
  gp_free(full);
  if (rc != 0) {
    /* The registrant keeps `self` on failure. */
    e->info.self_deleter = NULL;
    gp_pass_entry_release(e);
    return -1;
  }
  gp_pass_entry_release(old);
  return 0;
}

int gp_pass_unregister(const char *name) {
  GPPassEntry *e = NULL;
  gp_reg_lock();
  ptrdiff_t at = name ? find_locked(name) : -1;
  if (at >= 0) {
    e = g_passes.items[at];
    memmove(&g_passes.items[at], &g_passes.items[at + 1], (g_passes.len - (size_t)at - 1) * sizeof(void *));
    g_passes.len--;
  }
  gp_reg_unlock();
  if (!e) {
    gp_reg_error_no_such_pass(name ? name : "(null)", NULL);
    return -1;
  }
  gp_pass_entry_release(e);
  return 0;
}

/* ---- config declarations */

GPPassEntry *gp_config_find(const char *full_key, int32_t *key_index) {
  GPPassEntry *found = NULL;
  const char *dot = strchr(full_key, '.');
  if (!dot) return NULL;
  gp_reg_lock();
  for (size_t p = 0; !found && p < g_passes.len; p++) {
    GPPassEntry *x = g_passes.items[p];
    size_t nl = strlen(x->info.name);
    bool prefix = strncmp(full_key, x->info.name, nl) == 0 && full_key[nl] == '.';
    for (int32_t i = 0; i < x->info.num_config_keys; i++) {
      const char *kn = x->info.config_keys[i].name;
      bool match = strchr(kn, '.') ? strcmp(kn, full_key) == 0 : prefix && strcmp(full_key + nl + 1, kn) == 0;
      if (match) {
        found = entry_retain(x);
        *key_index = i;
        break;
      }
    }
  }
  gp_reg_unlock();
  return found;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *gp_config_all_keys(void) {
  GPVec keys = {0};
  gp_reg_lock();
  for (size_t p = 0; p < g_passes.len; p++) {
    GPPassEntry *x = g_passes.items[p];
    for (int32_t i = 0; i < x->info.num_config_keys; i++)
      gp_vec_push(&keys, gp_config_full_key(x->info.name, &x->info.config_keys[i]));
  }
  gp_reg_unlock();
  if (keys.len) qsort(keys.items, keys.len, sizeof(void *), cmp_str);
  GPBuf b = {0};
  for (size_t i = 0; i < keys.len; i++) {
    if (i) gp_buf_puts(&b, ", ");
    gp_buf_puts(&b, keys.items[i]);
    gp_free(keys.items[i]);
  }
  gp_vec_free(&keys);
  return gp_buf_take(&b);
}

/* ---- shutdown */

void gp_registry_shutdown(void) {
  gp_reg_lock();
  GPVec all = g_passes;
  g_passes = (GPVec){0};
  gp_reg_unlock();
  for (size_t i = 0; i < all.len; i++) gp_pass_entry_release(all.items[i]);
  gp_vec_free(&all);
  gp_opt_sets_shutdown();
  gp_targets_shutdown();
  gp_op_attrs_clear();
  gp_funcs_shutdown();
  gp_pattern_tables_shutdown();
}
