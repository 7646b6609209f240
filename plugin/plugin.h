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

/* The default plugin directory: $GRAPHPASS_PLUGIN_PATH when set and non-empty (one directory),
 * else "<directory of the running executable>/../plugins" (canonicalized when it exists), via
 * /proc/self/exe.  gp_malloc'd; NULL + GP_ERR_IO when the executable's path is unknown. */
char *gp_plugin_default_dir(void);

/* GPHostAPI.plugin_require (ABI 1.3): a no-op when the plugin named `name` is loaded, else
 * gp_plugin_load("<gp_plugin_default_dir()>/libgp_<name>.so").  0, or -1 + error
 * (GP_ERR_VALUE bad name, GP_ERR_NOT_FOUND no such file or the file's plugin has another name,
 * else the load's error prefixed "plugin_require(<name>)"). */
int gp_plugin_require(const char *name);

#endif /* GP_PLUGIN_H */
