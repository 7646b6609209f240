/*
 * loader.c -- loading plugins (see plugin.h).
 */
#include "plugin.h"
#include "../ir/pattern.h"

#include "../registry/registry.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct Loaded {
  char *name;
  char *version;
  char *path; /* realpath */
  void *handle;
  uint32_t abi_version;
  void (*finalize)(void);
  bool keep_mapped; /* registered ops point into it: never dlclose */
} Loaded;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_mu;
static Loaded *g_list;
static size_t g_n, g_cap;

static void init_lock(void) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE); /* initialize may load plugins */
  pthread_mutex_init(&g_mu, &a);
  pthread_mutexattr_destroy(&a);
}

static void lock(void) {
  pthread_once(&g_once, init_lock);
  pthread_mutex_lock(&g_mu);
}

static void unlock(void) { pthread_mutex_unlock(&g_mu); }

/* Unregister everything whose origin is `origin`: passes, targets, pattern tables, global
 * functions, op attributes and kernels (each op's kernel falls back to the one before),
 * optimization sets.  Runs while the plugin is still mapped, so self_deleters and hook deleters
 * can run its code.  Leaves the error slot as it was. */
static void unregister_origin(const char *origin) {
  gp_ops_unregister_origin(origin);
  gp_funcs_unregister_origin(origin);
  gp_opt_sets_unregister_origin(origin);
  gp_targets_unregister_origin(origin);
  gp_pattern_tables_unregister_origin(origin);
  gp_pattern_fixed_forget(NULL); /* it may name this plugin's callbacks */
  GPPassEntry **list = NULL;
  size_t n = gp_pass_list(&list);
  GPVec names = {0};
  for (size_t i = 0; i < n; i++) {
    if (list[i]->origin && strcmp(list[i]->origin, origin) == 0)
      gp_vec_push(&names, gp_strdup(list[i]->info.name));
    gp_pass_entry_release(list[i]);
  }
  gp_free(list);
  int32_t kind = gp_error_kind();
  char *msg = kind != GP_OK ? gp_strdup(gp_error_message()) : NULL;
  for (size_t i = 0; i < names.len; i++) {
    (void)gp_pass_unregister(names.items[i]);
    gp_free(names.items[i]);
  }
  gp_vec_free(&names);
  if (kind != GP_OK) gp_error_set(kind, "%s", msg);
  else gp_error_clear();
  gp_free(msg);
}

static Loaded *find_by_path(const char *real) {
  for (size_t i = 0; i < g_n; i++)
    if (strcmp(g_list[i].path, real) == 0) return &g_list[i];
  return NULL;
}

static Loaded *find_by_name(const char *name) {
  for (size_t i = 0; i < g_n; i++)
    if (strcmp(g_list[i].name, name) == 0) return &g_list[i];
  return NULL;
}

/* Checks a plugin table; 0 or -1 with an error. */
static const uint32_t k_min_minor = GP_ABI_MIN_MINOR; /* a variable: no -Wtype-limits at 0 */

static int check_table(const char *path, const GPPluginAPI *api) {
  const uint32_t hmaj = GP_ABI_VERSION_MAJOR, hmin = GP_ABI_VERSION_MINOR;
  if (!api) {
    gp_error_set(GP_ERR_VALUE, "plugin %s: %s() returned NULL", path, GP_PLUGIN_ENTRY_SYMBOL);
    return -1;
  }
  if (api->struct_size < GP_STRUCT_SIZE(GPPluginAPI, abi_version)) {
    gp_error_set(GP_ERR_VERSION,
                 "plugin %s: its table is %zu bytes, too small to hold a version (not a graphpass "
                 "plugin table?)",
                 path, api->struct_size);
    return -1;
  }
  uint32_t maj = GP_ABI_MAJOR_OF(api->abi_version), min = GP_ABI_MINOR_OF(api->abi_version);
  if (maj != hmaj || min < k_min_minor) {
    gp_error_set(GP_ERR_VERSION,
                 "plugin %s was built for graphpass ABI %u.%u; this host implements %u.%u "
                 "(accepts %u.%u to %u.x)",
                 path, maj, min, hmaj, hmin, hmaj, k_min_minor, hmaj);
    return -1;
  }
  if (api->struct_size < GP_STRUCT_SIZE(GPPluginAPI, finalize)) {
    gp_error_set(GP_ERR_VERSION,
                 "plugin %s: its table is %zu bytes, smaller than the %zu bytes of ABI %u.0 "
                 "(the plugin claims %u.%u)",
                 path, api->struct_size, GP_STRUCT_SIZE(GPPluginAPI, finalize), hmaj, maj, min);
    return -1;
  }
  if (!api->name || !api->name[0]) {
    gp_error_set(GP_ERR_VALUE, "plugin %s: its table has no name", path);
    return -1;
  }
  if (strcmp(api->name, "host") == 0) {
    gp_error_set(GP_ERR_VALUE, "plugin %s: the name 'host' is reserved", path);
    return -1;
  }
  if (!api->initialize) {
    gp_error_set(GP_ERR_VALUE, "plugin %s (%s): its table has no initialize function", api->name,
                 path);
    return -1;
  }
  return 0;
}

/* gp_plugin_host_minor (tests): the table a plugin loaded as if by an older host gets.  Static,
 * since a plugin keeps its table; one at a time (the next such load rewrites it). */
static GPHostAPI older_table;
static _Atomic int older_minor = -1;

void gp_plugin_host_minor(int minor) { atomic_store(&older_minor, minor); }

/* A 1.minor host table's size: up to the last field of that minor's released header
 * (tests/abi/graphpass-1.<minor>.h). */
static size_t host_size_of_minor(int minor) {
  switch (minor) {
  case 0: return GP_STRUCT_SIZE(GPHostAPI, ffi_closure_free);
  case 1: return GP_STRUCT_SIZE(GPHostAPI, func_get);
  case 2: return GP_STRUCT_SIZE(GPHostAPI, ctx_set_opt_set);
  case 3: return GP_STRUCT_SIZE(GPHostAPI, eval_random_inputs);
  case 4: return GP_STRUCT_SIZE(GPHostAPI, rewrite_indexed);
  case 5: return GP_STRUCT_SIZE(GPHostAPI, rewrite_keep);
  default: return sizeof(GPHostAPI);
  }
}

static const GPHostAPI *older_host(const GPHostAPI *host) {
  int minor = atomic_load(&older_minor);
  if (minor < 0 || minor >= GP_ABI_VERSION_MINOR) return host;
  size_t size = host_size_of_minor(minor);
  memset(&older_table, 0, sizeof older_table);
  memcpy(&older_table, host, size);
  older_table.struct_size = size;
  older_table.abi_version = (uint32_t)(GP_ABI_VERSION_MAJOR << 16 | (uint32_t)minor);
  return &older_table;
}

static int load_locked(const char *path, const char *real) {
  if (find_by_path(real)) return 0; /* already loaded: no-op */

  dlerror();
  void *handle = dlopen(real, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *e = dlerror();
    gp_error_set(GP_ERR_IO, "plugin %s: cannot load: %s", path, e ? e : "unknown dlopen error");
    return -1;
  }
  dlerror();
  void *sym = dlsym(handle, GP_PLUGIN_ENTRY_SYMBOL);
  if (!sym) {
    gp_error_set(GP_ERR_IO, "plugin %s: no symbol '%s' (not a graphpass plugin?)", path,
                 GP_PLUGIN_ENTRY_SYMBOL);
    dlclose(handle);
    return -1;
  }
  GPPluginEntryFn entry;
  memcpy(&entry, &sym, sizeof entry); /* POSIX: dlsym results convert to function pointers */
  const GPPluginAPI *api = entry();
  if (check_table(path, api) < 0) {
    dlclose(handle);
    return -1;
  }
  Loaded *same = find_by_name(api->name);
  if (same) {
    gp_error_set(GP_ERR_VALUE, "plugin %s: a plugin named '%s' is already loaded from %s", path,
                 api->name, same->path);
    dlclose(handle);
    return -1;
  }

  /* Copy what we keep before running plugin code. */
  char *name = gp_strdup(api->name);
  char *prev_origin = gp_strdup(gp_registry_origin() ? gp_registry_origin() : "host");
  const GPHostAPI *host = older_host(gp_host_api()); /* also registers the built-in ops */
  int32_t ops_before = gp_op_count();
  gp_registry_set_origin(name);
  int rc = api->initialize(host);
  gp_registry_set_origin(prev_origin);
  gp_free(prev_origin);
  bool keep_mapped = gp_op_count() != ops_before;

  if (rc != 0) {
    int32_t kind = gp_error_kind();
    char *msg = gp_strdup(kind != GP_OK ? gp_error_message() : "");
    unregister_origin(name);
    if (!keep_mapped) dlclose(handle);
    if (kind != GP_OK)
      gp_error_set(kind, "plugin %s (%s): initialize failed: %s", name, path, msg);
    else
      gp_error_set(GP_ERR_VALUE, "plugin %s (%s): initialize failed (returned %d without an error)",
                   name, path, rc);
    gp_free(msg);
    gp_free(name);
    return -1;
  }

  if (g_n == g_cap) {
    g_cap = g_cap ? g_cap * 2 : 8;
    g_list = gp_realloc(g_list, g_cap * sizeof *g_list);
  }
  Loaded *l = &g_list[g_n++];
  l->name = name;
  l->version = gp_strdup(api->version ? api->version : "");
  l->path = gp_strdup(real);
  l->handle = handle;
  l->abi_version = api->abi_version;
  l->finalize = api->finalize;
  l->keep_mapped = keep_mapped;
  return 0;
}

int gp_plugin_load(const char *path) {
  if (!path || !path[0]) {
    gp_error_set(GP_ERR_VALUE, "plugin_load: empty path");
    return -1;
  }
  char *real = realpath(path, NULL);
  if (!real) {
    gp_error_set(GP_ERR_IO, "plugin %s: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (stat(real, &st) != 0 || !S_ISREG(st.st_mode)) {
    gp_error_set(GP_ERR_IO, "plugin %s: not a regular file", path);
    free(real);
    return -1;
  }
  lock();
  int rc = load_locked(path, real);
  unlock();
  free(real);
  return rc;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int gp_plugin_load_dir(const char *dir) {
  if (!dir || !dir[0]) {
    gp_error_set(GP_ERR_VALUE, "plugin directory: empty path");
    return -1;
  }
  DIR *d = opendir(dir);
  if (!d) {
    gp_error_set(GP_ERR_IO, "plugin directory %s: %s", dir, strerror(errno));
    return -1;
  }
  GPVec names = {0};
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    size_t n = strlen(de->d_name);
    if (n > 3 && strcmp(de->d_name + n - 3, ".so") == 0) gp_vec_push(&names, gp_strdup(de->d_name));
  }
  closedir(d);
  if (names.len) qsort(names.items, names.len, sizeof(void *), cmp_str);
  int rc = 0;
  GPBuf path = {0};
  for (size_t i = 0; i < names.len; i++) {
    if (rc == 0) {
      path.len = 0;
      gp_buf_printf(&path, "%s/%s", dir, (const char *)names.items[i]);
      struct stat st;
      if (stat(path.data, &st) == 0 && S_ISREG(st.st_mode) && gp_plugin_load(path.data) < 0)
        rc = -1;
    }
    gp_free(names.items[i]);
  }
  gp_buf_free(&path);
  gp_vec_free(&names);
  return rc;
}

size_t gp_plugin_list(GPPluginInfo **out) {
  lock();
  size_t n = g_n;
  GPPluginInfo *arr = n ? gp_malloc(n * sizeof *arr) : NULL;
  for (size_t i = 0; i < n; i++) {
    arr[i].name = g_list[i].name;
    arr[i].version = g_list[i].version;
    arr[i].path = g_list[i].path;
    arr[i].handle = g_list[i].handle;
    arr[i].abi_version = g_list[i].abi_version;
  }
  unlock();
  *out = arr;
  return n;
}

/* Lock held: unregister, finalize, close and forget g_list[i]. */
static void unload_at(size_t i) {
  Loaded *l = &g_list[i];
  unregister_origin(l->name); /* self_deleters run while the code is still mapped */
  if (l->finalize) l->finalize();
  if (!l->keep_mapped) dlclose(l->handle);
  gp_free(l->name);
  gp_free(l->version);
  gp_free(l->path);
  memmove(&g_list[i], &g_list[i + 1], (g_n - 1 - i) * sizeof *g_list);
  g_n--;
}

int gp_plugin_unload(const char *name) {
  if (!name || !name[0]) {
    gp_error_set(GP_ERR_VALUE, "plugin_unload: empty plugin name");
    return -1;
  }
  lock();
  Loaded *l = find_by_name(name);
  if (!l) {
    GPBuf b = {0};
    for (size_t i = 0; i < g_n; i++) {
      if (i) gp_buf_puts(&b, ", ");
      gp_buf_puts(&b, g_list[i].name);
    }
    unlock();
    gp_error_set(GP_ERR_NOT_FOUND, "plugin_unload: no plugin named '%s' is loaded (loaded: %s)", name,
                 b.len ? b.data : "none");
    gp_buf_free(&b);
    return -1;
  }
  unload_at((size_t)(l - g_list));
  unlock();
  return 0;
}

void gp_plugins_unload_all(void) {
  lock();
  while (g_n > 0) unload_at(g_n - 1);
  gp_free(g_list);
  g_list = NULL;
  g_cap = 0;
  unlock();
}

/* The real path of the object holding this code: libgraphpass.so, or the executable that links
 * the host library statically (its link map entry has an empty name). */
static char *host_object_path(void) {
  Dl_info info;
  struct link_map *lm = NULL;
  const char *name = NULL;
  if (dladdr1((void *)host_object_path, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm && lm->l_name && lm->l_name[0])
    name = lm->l_name;
  char *real = realpath(name ? name : "/proc/self/exe", NULL);
  if (!real) return NULL;
  char *r = gp_strdup(real);
  free(real);
  return r;
}

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

char *gp_plugin_installed_dir(void) {
  char *obj = host_object_path();
  if (!obj) return NULL;
  char *slash = strrchr(obj, '/');
  if (slash) *slash = '\0';
  const char *dir = slash ? (obj[0] ? obj : "/") : ".";
  /* <libdir>/graphpass/plugins beside the library; <prefix>/lib/graphpass/plugins from the
   * command in <prefix>/bin; build/plugins from build/lib or build/bin (the build tree). */
  static const char *const rel[] = {"graphpass/plugins", "../lib/graphpass/plugins", "../plugins"};
  char *found = NULL;
  GPBuf b = {0};
  for (size_t i = 0; i < sizeof rel / sizeof rel[0] && !found; i++) {
    b.len = 0;
    gp_buf_printf(&b, "%s/%s", dir, rel[i]);
    if (!is_dir(b.data)) continue;
    char *real = realpath(b.data, NULL);
    found = gp_strdup(real ? real : b.data);
    free(real);
  }
  gp_buf_free(&b);
  gp_free(obj);
  return found;
}

int gp_plugins_load_default(int32_t *out_loaded) {
  if (out_loaded) *out_loaded = 0;
  size_t before = 0;
  lock();
  before = g_n;
  unlock();
  const char *env = getenv("GRAPHPASS_PLUGIN_PATH");
  int rc = 0;
  if (env && env[0]) {
    const char *p = env;
    while (rc == 0) {
      const char *colon = strchr(p, ':');
      size_t len = colon ? (size_t)(colon - p) : strlen(p);
      if (len) {
        char *dir = gp_strndup(p, len);
        if (!is_dir(dir)) {
          gp_error_set(GP_ERR_IO, "GRAPHPASS_PLUGIN_PATH: %s is not a directory", dir);
          rc = -1;
        } else {
          rc = gp_plugin_load_dir(dir);
        }
        gp_free(dir);
      }
      if (!colon) break;
      p = colon + 1;
    }
  } else {
    char *dir = gp_plugin_installed_dir();
    if (dir) rc = gp_plugin_load_dir(dir);
    gp_free(dir);
  }
  lock();
  size_t after = g_n;
  unlock();
  if (out_loaded) *out_loaded = (int32_t)(after > before ? after - before : 0);
  return rc;
}

char *gp_plugin_default_dir(void) {
  const char *env = getenv("GRAPHPASS_PLUGIN_PATH");
  if (env && env[0]) return gp_strdup(env);
  char *dir = gp_plugin_installed_dir();
  if (dir) return dir;
  gp_error_set(GP_ERR_IO, "plugin directory: none beside %s", "the host library or the executable");
  return NULL;
}

int gp_plugin_require(const char *name) {
  if (!name || !name[0] || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != strlen(name)) {
    gp_error_set(GP_ERR_VALUE, "plugin_require: bad plugin name '%s' (expected [A-Za-z0-9_-]+)", name ? name : "(null)");
    return -1;
  }
  lock();
  bool loaded = find_by_name(name) != NULL;
  unlock();
  if (loaded) return 0;
  char *dir = gp_plugin_default_dir();
  if (!dir) {
    gp_error_prefix("plugin_require(%s)", name);
    return -1;
  }
  GPBuf b = {0};
  gp_buf_printf(&b, "%s/libgp_%s.so", dir, name);
  gp_free(dir);
  char *path = gp_buf_take(&b);
  struct stat st;
  int rc;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
    gp_error_set(GP_ERR_NOT_FOUND, "plugin_require(%s): no plugin '%s' is loaded and %s is not a file (set GRAPHPASS_PLUGIN_PATH, or load it first)",
                 name, name, path);
    rc = -1;
  } else if ((rc = gp_plugin_load(path)) != 0) {
    gp_error_prefix("plugin_require(%s)", name);
  } else {
    lock();
    loaded = find_by_name(name) != NULL;
    unlock();
    if (!loaded) {
      gp_error_set(GP_ERR_NOT_FOUND, "plugin_require(%s): %s loaded, but its plugin is not named '%s'", name, path, name);
      rc = -1;
    }
  }
  gp_free(path);
  return rc;
}
