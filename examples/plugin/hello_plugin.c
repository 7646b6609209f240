/* hello_plugin.c -- a minimal out-of-tree plugin: it sees only <graphpass.h>.  It registers
 * HelloCountCalls, an analysis pass that leaves a note with the number of calls in @main and
 * returns its input, and HelloSquashRelu, a rewrite: nn.relu(nn.relu(x)) -> nn.relu(x) in every
 * function, through GPHostAPI.rewrite (a new module; the input is never changed).  Build and run
 * it with the installed library:
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

/* The rewrite callback: called for every node, children first; `rebuilt` is the node over its
 * children's rewrites.  A node is kept with the host's marker when it has one (ABI 1.5: no
 * reference count traffic on the many nodes a rewrite leaves alone), else by a new reference. */
static GPExpr *keep(GPExpr *rebuilt) {
  return GP_HAS_FIELD(H, GPHostAPI, rewrite_keep) ? H->rewrite_keep : gp_retain(rebuilt);
}

static int is_relu(const GPExpr *e, const GPOp *relu) {
  return e->obj.type_index == GP_TI_CALL && ((const GPCall *)e)->op == (const GPExpr *)relu;
}

static GPExpr *squash(void *user, GPExpr *orig, GPExpr *rebuilt) {
  (void)orig;
  const GPOp *relu = user;
  if (is_relu(rebuilt, relu) && is_relu(((const GPCall *)rebuilt)->args[0], relu))
    return gp_retain(((const GPCall *)rebuilt)->args[0]); /* the inner relu: a new reference */
  return keep(rebuilt);
}

static int squash_relu(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  if (nargs != 2 || args[0].type_index != GP_TI_MODULE) {
    H->error_set(GP_ERR_VALUE, "HelloSquashRelu: expected (module, context)");
    return -1;
  }
  const GPModule *mod = (const GPModule *)(const void *)args[0].v_obj;
  const GPOp *relu = H->op_get("nn.relu");
  GPModule *out = relu ? H->module_copy(mod) : NULL; /* shares the functions it does not replace */
  if (!out) return -1;
  for (int32_t i = 0; i < mod->num_functions; i++) {
    GPExpr *fn = H->rewrite(&mod->funcs[i]->base, squash, (void *)relu);
    int rc = fn ? H->module_add(out, mod->gvars[i]->name, (GPFunctionExpr *)fn, 1) : -1;
    if (fn) gp_release(fn);
    if (rc != 0) {
      gp_release(out);
      return -1;
    }
  }
  result->type_index = GP_TI_MODULE;
  result->v_obj = &out->obj;
  return 0;
}

static int hello_initialize(const GPHostAPI *host) {
  H = host;
  if (GP_ABI_MAJOR_OF(host->abi_version) != GP_ABI_VERSION_MAJOR) return -1;
  const GPPassInfo passes[] = {
      {.struct_size = sizeof(GPPassInfo), .abi_version = GP_ABI_VERSION, .name = "HelloCountCalls", .opt_level = 0,
       .kind = GP_PASS_ANALYSIS, .func = count_calls, .help = "notes the number of calls in @main"},
      {.struct_size = sizeof(GPPassInfo), .abi_version = GP_ABI_VERSION, .name = "HelloSquashRelu", .opt_level = 0,
       .kind = GP_PASS_TRANSFORM, .func = squash_relu, .help = "nn.relu(nn.relu(x)) -> nn.relu(x)"},
  };
  for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++)
    if (H->pass_register(&passes[i], 0) != 0) return -1;
  return 0;
}

static const GPPluginAPI k_plugin = {
    .struct_size = sizeof k_plugin,
    .abi_version = GP_ABI_VERSION,
    .name = "hello",
    .version = "1.0",
    .initialize = hello_initialize,
};

GP_EXPORT const GPPluginAPI *graphpass_plugin_entry(void) { return &k_plugin; }
