/*
 * passes.h -- the internal header of the standard pass plugin (build/plugins/libgp_std.so).
 * The plugin reaches the host only through the GPHostAPI table it is handed at initialize;
 * it links nothing of the host library (only libc and libm).  Node fields are read directly
 * through the public layout of abi/graphpass.h.
 */
#ifndef GP_PASSES_H
#define GP_PASSES_H

#include "graphpass.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The host table, set once by the plugin's initialize (process lifetime). */
extern const GPHostAPI *gp_std_host;
#define H gp_std_host

/* ---- support.c: what every pass needs */

/* Pointer-keyed open-addressing map (plugin-local, libc allocator). */
typedef struct PMapSlot {
  const void *key;
  void *val;
} PMapSlot;
typedef struct PMap {
  PMapSlot *slots; /* key and value together: one cache line per probe */
  size_t len, cap;
} PMap;
void *pmap_get(const PMap *m, const void *key);
bool pmap_has(const PMap *m, const void *key);
void pmap_put(PMap *m, const void *key, void *val);
void pmap_free(PMap *m);

static inline int32_t ekind(const void *e) { return ((const GPObject *)e)->type_index; }

/* Unpack the pass calling convention: args = [module, context]. */
int std_pass_args(const char *pass, const GPAny *args, int32_t nargs, GPModule **mod, GPPassContext **ctx);
/* Store a new module reference as the pass result. */
int std_return_module(GPAny *result, GPModule *mod);
bool std_config_bool(GPPassContext *ctx, const char *key, bool dflt);
const char *std_config_str(GPPassContext *ctx, const char *key, const char *dflt);

/* ---- one registration function per pass file */
int std_register_infer_type(void);
int std_register_remove_unused_functions(void);
int std_register_dead_code_elimination(void);
int std_register_print_ir(void);

#endif
