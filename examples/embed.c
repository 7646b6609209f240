/* embed.c -- a minimal embedding host: it sees only abi/graphpass.h and libgraphpass.so.
 * Loads plugins, parses a module, runs a pipeline with an instrument that reports each pass
 * (ran or skipped and why, its notes, its time) on stderr, prints the result.
 *   usage: embed PLUGINS [INPUT.relay|-] [PIPELINE]
 * PLUGINS is a plugin file, several joined by ',', or '-' for the default plugins
 * (GRAPHPASS_PLUGIN_PATH, else the plugin directory installed with libgraphpass.so); INPUT '-'
 * is a small module built in.  Build it out of tree with
 *   cc embed.c $(pkg-config --cflags --libs graphpass) -o embed */
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

/* The instrument: one line per planned pass, then its notes. */
static int report_pass(void *user, const GPPassEvent *ev) {
  (void)user;
  fprintf(stderr, "embed: [%d] %s %s", (int)ev->index, ev->pass_name, ev->ran ? "ran" : "skipped");
  if (ev->reason) fprintf(stderr, " (%s)", ev->reason);
  if (ev->ran) fprintf(stderr, " in %.0f us%s", (double)ev->elapsed_ns / 1000.0, ev->changed ? ", changed" : "");
  fputc('\n', stderr);
  for (int32_t i = 0; i < ev->num_notes; i++) fprintf(stderr, "embed: note: %s: %s\n", ev->pass_name, ev->notes[i]);
  return 0;
}

static int load_plugins(const GPHostAPI *api, const char *list) {
  if (strcmp(list, "-") == 0) {
    int32_t n = 0;
    if (api->plugins_load_default(&n) != 0) return -1;
    fprintf(stderr, "embed: %d default plugins\n", (int)n);
    return 0;
  }
  char *copy = malloc(strlen(list) + 1);
  if (!copy) return -1;
  strcpy(copy, list);
  int rc = 0;
  for (char *p = copy, *comma; rc == 0 && p; p = comma ? comma + 1 : NULL) {
    comma = strchr(p, ',');
    if (comma) *comma = '\0';
    if (*p) rc = api->plugin_load(p);
  }
  free(copy);
  return rc;
}

static int fail(const GPHostAPI *api, const char *what) {
  fprintf(stderr, "embed: %s: %s\n", what, api->error_message());
  api->error_clear();
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PLUGIN.so[,PLUGIN.so...]|- [INPUT.relay|-] [PIPELINE]\n", argv[0]);
    return 2;
  }
  const GPHostAPI *api = graphpass_host_api();
  /* A host checks the table it was handed before using fields newer than 1.0. */
  if (GP_ABI_MAJOR_OF(api->abi_version) != GP_ABI_VERSION_MAJOR ||
      !GP_HAS_FIELD(api, GPHostAPI, pass_register_packed)) { /* the 1.3 table: instruments */
    fprintf(stderr, "embed: libgraphpass ABI %u.%u is not compatible\n", GP_ABI_MAJOR_OF(api->abi_version),
            GP_ABI_MINOR_OF(api->abi_version));
    return 1;
  }
  if (load_plugins(api, argv[1]) != 0) return fail(api, "plugin");

  size_t len = strlen(fallback);
  char *text = NULL;
  const char *src = fallback, *name = "<embedded>";
  if (argc > 2 && strcmp(argv[2], "-") != 0) {
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
  GPInstrument ins = {.struct_size = sizeof ins, .abi_version = GP_ABI_VERSION, .name = "embed",
                      .after_pass = report_pass};
  if (api->ctx_instrument_register(ctx, &ins) != 0) {
    api->ctx_free(ctx);
    gp_release(mod);
    return fail(api, "instrument");
  }
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
