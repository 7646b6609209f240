/*
 * plugin.h -- the plugin loader (plugin/loader.c).  Internal to the host library.
 *
 * A plugin is a shared object exporting GP_PLUGIN_ENTRY_SYMBOL (see abi/graphpass.h).  Loading
 * checks its table (size, ABI major and minor, name), makes the registry record the plugin's
 * name as the origin of what it registers, and calls initialize(gp_host_api()).  All functions
 * are thread-safe (one recursive lock: a plugin's initialize may itself load plugins).
 */
#ifndef GP_PLUGIN_H
#define GP_PLUGIN_H

#include "../ir/ir.h"

/* One loaded plugin.  Strings are owned by the loader and stay valid until the plugin is
 * unloaded (gp_plugin_unload, gp_plugins_unload_all). */
typedef struct GPPluginInfo {
  const char *name;    /* GPPluginAPI.name */
  const char *version; /* GPPluginAPI.version ("" when the plugin gave NULL) */
  const char *path;    /* realpath of the shared object */
  void *handle;        /* dlopen handle */
  uint32_t abi_version;
} GPPluginInfo;

/* Load the plugin at `path` (a file path; dlopen(RTLD_NOW | RTLD_LOCAL)).  0 on success.
 * Loading a file already loaded (same realpath) is a no-op success.  Errors:
 *  - GP_ERR_IO: the file is missing or dlopen fails ("plugin <path>: ..."), or the entry symbol
 *    is missing ("plugin <path>: no symbol 'graphpass_plugin_entry' ...");
 *  - GP_ERR_VERSION: the table is smaller than 1.0's, or "plugin <path> was built for graphpass
 *    ABI M.m; this host implements 1.0 (accepts 1.0 to 1.x)";
 *  - GP_ERR_VALUE: NULL table, name or initialize; a different file with the same plugin name
 *    already loaded;
 *  - initialize failing: its error (kind kept), prefixed "plugin <name> (<path>): initialize
 *    failed"; everything it registered (see gp_plugin_unload) is removed and the object is
 *    closed. */
int gp_plugin_load(const char *path);

/* Tests: plugins loaded from now on get a host table of ABI 1.`minor` (its struct_size and
 * abi_version, the later fields zeroed), as an older host would hand them; -1 restores this
 * host's.  For checking that a plugin keeps working on the oldest host it accepts. */
void gp_plugin_host_minor(int minor);

/* Load every regular file named `*.so` in `dir`, sorted by name (strcmp).  Stops at the first
 * failure (-1 with that plugin's error).  A missing directory is GP_ERR_IO. */
int gp_plugin_load_dir(const char *dir);

/* The loaded plugins in load order: *out is a gp_malloc'd array (gp_free it; the strings are
 * borrowed, see GPPluginInfo); returns the count (*out is NULL when 0). */
size_t gp_plugin_list(GPPluginInfo **out);

/* Unload the plugin named `name` (GPHostAPI.plugin_unload): remove everything whose origin is
 * the plugin (passes, targets, pattern tables, global functions, optimization sets, op
 * attributes, op kernels -- each op falls back to its previous kernel), run its finalize,
 * dlclose it (unless it registered ops), and forget it.  0, or -1 + GP_ERR_NOT_FOUND naming
 * it and the loaded plugins. */
int gp_plugin_unload(const char *name);

/* Unload every plugin in reverse load order: unregister the passes and targets whose origin is
 * the plugin, finalize(), dlclose.  (A plugin that registered ops stays mapped -- ops are immortal and keep
 * pointers into it -- but is forgotten.)  Call at exit so leak checkers stay quiet. */
void gp_plugins_unload_all(void);

/* The installed plugin directory, found from where the host code is (so a tree installed with
 * any PREFIX or DESTDIR finds its own plugins): the first existing of
 * <dir>/graphpass/plugins (<dir> holding libgraphpass.so: <libdir>/graphpass/plugins),
 * <dir>/../lib/graphpass/plugins (the command in <prefix>/bin) and <dir>/../plugins (build/lib,
 * build/bin, build/tests: build/plugins), canonicalized; gp_malloc'd, or NULL (no error) when
 * none exists. */
char *gp_plugin_installed_dir(void);

/* GPHostAPI.plugins_load_default: every plugin of each directory of $GRAPHPASS_PLUGIN_PATH
 * (colon-separated) when set and non-empty, else of gp_plugin_installed_dir() (none: 0
 * loaded).  A missing directory in the variable is GP_ERR_IO naming it; the first plugin that
 * fails stops it (its error).  *out_loaded (may be NULL): plugins newly loaded. */
int gp_plugins_load_default(int32_t *out_loaded);

/* $GRAPHPASS_PLUGIN_PATH as it is when set and non-empty, else gp_plugin_installed_dir();
 * gp_malloc'd; NULL + GP_ERR_IO when there is none. */
char *gp_plugin_default_dir(void);

/* GPHostAPI.plugin_require (ABI 1.3): a no-op when the plugin named `name` is loaded, else
 * gp_plugin_load("<gp_plugin_default_dir()>/libgp_<name>.so").  0, or -1 + error
 * (GP_ERR_VALUE bad name, GP_ERR_NOT_FOUND no such file or the file's plugin has another name,
 * else the load's error prefixed "plugin_require(<name>)"). */
int gp_plugin_require(const char *name);

#endif /* GP_PLUGIN_H */
