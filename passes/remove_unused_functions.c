/* remove_unused_functions.c -- RemoveUnusedFunctions (opt-level 1): keep the global functions
 * reachable from the entry functions (config `entry_functions`, comma-separated, default
 * "main"), drop the rest.  Unlike TVM's, the input module is never changed. */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

/* Index of `name` in the module, or -1. */
static int32_t find_fn(const GPModule *m, const char *name, size_t len) {
  for (int32_t i = 0; i < m->num_functions; i++)
    if (strlen(m->gvars[i]->name) == len && memcmp(m->gvars[i]->name, name, len) == 0) return i;
  return -1;
}

static int remove_unused(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args("RemoveUnusedFunctions", args, nargs, &mod, &ctx) != 0) return -1;
  const char *entries = std_config_str(ctx, "RemoveUnusedFunctions.entry_functions", "main");
  int32_t n = mod->num_functions;
  char *live = calloc((size_t)(n ? n : 1), 1);
  int32_t *work = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  int32_t wlen = 0;
  for (const char *p = entries; *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    while (len && *p == ' ') p++, len--;
    while (len && p[len - 1] == ' ') len--;
    int32_t i = len ? find_fn(mod, p, len) : -1;
    if (i >= 0 && !live[i]) {
      live[i] = 1;
      work[wlen++] = i;
    }
    if (!end) break;
    p = end + 1;
  }
  if (wlen == 0 && n > 0) {
    free(live);
    free(work);
    H->error_set(GP_ERR_NOT_FOUND, "none of the entry functions (%s) is defined in the module", entries);
    return -1;
  }
  while (wlen) {
    int32_t f = work[--wlen];
    if (!std_has_kind(&mod->funcs[f]->base, GP_TI_GLOBAL_VAR)) continue; /* calls no global: O(1) */
    GPExpr **nodes;
    size_t count;
    if (H->post_order(&mod->funcs[f]->base, &nodes, &count) != 0) {
      free(live);
      free(work);
      return -1;
    }
    for (size_t k = 0; k < count; k++) {
      if (ekind(nodes[k]) != GP_TI_GLOBAL_VAR) continue;
      const char *name = ((GPGlobalVar *)nodes[k])->name;
      int32_t i = find_fn(mod, name, strlen(name));
      if (i >= 0 && !live[i]) {
        live[i] = 1;
        work[wlen++] = i;
      }
    }
    H->free(nodes);
  }
  free(work);
  int32_t kept = 0;
  for (int32_t i = 0; i < n; i++) kept += live[i];
  GPModule *out;
  if (kept == n) {
    out = gp_retain(mod);
  } else {
    out = H->module_new(mod->source_name);
    for (int32_t i = 0; i < n; i++)
      if (live[i] && H->module_add(out, mod->gvars[i]->name, mod->funcs[i], 0) != 0) {
        gp_release(out);
        free(live);
        return -1;
      }
  }
  free(live);
  return std_return_module(result, out);
}

int std_register_remove_unused_functions(void) {
  GPConfigKey keys[] = {{
      .name = "entry_functions",
      .type_index = GP_TI_RAW_STR,
      .default_value = {.type_index = GP_TI_RAW_STR, .v_c_str = "main"},
      .help = "comma-separated names of the functions to keep with everything they call",
  }};
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = "RemoveUnusedFunctions",
      .opt_level = 1,
      .kind = GP_PASS_TRANSFORM,
      .config_keys = keys,
      .num_config_keys = 1,
      .func = remove_unused,
      .help = "Remove global functions not reachable from the entry functions.",
  };
  return H->pass_register(&info, 0);
}
