/* hello_plugin.c -- a minimal out-of-tree plugin: it sees only <graphpass.h>.  It registers
 * HelloCountCalls, an analysis pass that leaves a note with the number of calls in @main and
 * returns its input.  Build and run it with the installed library:
 *   cc -shared -fPIC $(pkg-config --cflags graphpass) hello_plugin.c -o libhello.so
 *   embed libhello.so - HelloCountCalls          (examples/embed.c; or install it into
 *                                                 $(pkg-config --variable=plugindir graphpass)) */
#include <graphpass.h>

#include <stdlib.h>

static const GPHostAPI *H;

static int count_calls(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  if (nargs != 2 || args[0].type_index != GP_TI_MODULE) {
    H->error_set(GP_ERR_VALUE, "HelloCountCalls: expected (module, context)");
    return -1;
  }
  GPModule *mod = (GPModule *)(void *)args[0].v_obj;
  GPPassContext *ctx = args[1].v_ptr;
  GPFunctionExpr *main_fn = H->module_lookup(mod, "main");
  size_t calls = 0;
  if (main_fn) {
    GPExpr **nodes = NULL;
    size_t n = 0;
    if (H->post_order(&main_fn->base, &nodes, &n) != 0) return -1;
    for (size_t i = 0; i < n; i++) calls += nodes[i]->obj.type_index == GP_TI_CALL;
    H->free(nodes);
  }
  H->ctx_note(ctx, "%zu calls in @main", calls);
  result->type_index = GP_TI_MODULE;
  result->v_obj = gp_retain(&mod->obj); /* nothing changed: the input, retained */
  return 0;
}

static int hello_initialize(const GPHostAPI *host) {
  H = host;
  if (GP_ABI_MAJOR_OF(host->abi_version) != GP_ABI_VERSION_MAJOR) return -1;
  GPPassInfo info = {
      .struct_size = sizeof info,
      .abi_version = GP_ABI_VERSION,
      .name = "HelloCountCalls",
      .opt_level = 0,
      .kind = GP_PASS_ANALYSIS,
      .func = count_calls,
      .help = "notes the number of calls in @main",
  };
  return H->pass_register(&info, 0);
}

static const GPPluginAPI k_plugin = {
    .struct_size = sizeof k_plugin,
    .abi_version = GP_ABI_VERSION,
    .name = "hello",
    .version = "1.0",
    .initialize = hello_initialize,
};

GP_EXPORT const GPPluginAPI *graphpass_plugin_entry(void) { return &k_plugin; }
