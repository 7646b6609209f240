/* embed.c -- a minimal embedding host: it sees only abi/graphpass.h and libgraphpass.so.
 * Loads the standard plugin, parses a module, runs a pipeline, prints the result.
 *   usage: embed PLUGIN.so [INPUT.relay] [PIPELINE] */
#include <graphpass.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char fallback[] =
    "#[version = \"0.0.5\"]\n"
    "def @main(%x: Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32] {\n"
    "  let %dead = negative(%x);\n"
    "  nn.relu(%x)\n"
    "}\n"
    "def @unused(%y: Tensor[(2), float32]) -> Tensor[(2), float32] {\n"
    "  exp(%y)\n"
    "}\n";

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0, got;
  char *buf = malloc(cap);
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) {
        free(buf);
        buf = NULL;
      }
      buf = nb;
    }
  }
  fclose(f);
  *len = n;
  return buf;
}

static int fail(const GPHostAPI *api, const char *what) {
  fprintf(stderr, "embed: %s: %s\n", what, api->error_message());
  api->error_clear();
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PLUGIN.so [INPUT.relay] [PIPELINE]\n", argv[0]);
    return 2;
  }
  const GPHostAPI *api = graphpass_host_api();
  /* A host checks the table it was handed before using fields newer than 1.0. */
  if (GP_ABI_MAJOR_OF(api->abi_version) != GP_ABI_VERSION_MAJOR ||
      !GP_HAS_FIELD(api, GPHostAPI, plugin_load)) {
    fprintf(stderr, "embed: libgraphpass ABI %u.%u is not compatible\n", GP_ABI_MAJOR_OF(api->abi_version),
            GP_ABI_MINOR_OF(api->abi_version));
    return 1;
  }
  if (api->plugin_load(argv[1]) != 0) return fail(api, "plugin");

  size_t len = strlen(fallback);
  char *text = NULL;
  const char *src = fallback, *name = "<embedded>";
  if (argc > 2) {
    text = slurp(argv[2], &len);
    if (!text) {
      fprintf(stderr, "embed: cannot read %s\n", argv[2]);
      return 1;
    }
    src = text;
    name = argv[2];
  }
  GPModule *mod = api->parse(src, len, name);
  free(text);
  if (!mod) return fail(api, "parse");

  GPPassContext *ctx = api->ctx_new();
  api->ctx_set_opt_level(ctx, 3);
  const char *pipeline = argc > 3 ? argv[3] : "RemoveUnusedFunctions,DeadCodeElimination";
  GPModule *out = api->run_pipeline(mod, pipeline, ctx);
  api->ctx_free(ctx);
  gp_release(mod);
  if (!out) return fail(api, "pipeline");

  char *printed = api->print(out, GP_PRINT_TYPES);
  if (printed) fputs(printed, stdout);
  api->free(printed);
  printf("functions: %d\n", (int)out->num_functions);
  gp_release(out);
  return 0;
}
