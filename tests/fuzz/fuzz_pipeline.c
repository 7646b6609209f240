/* fuzz_pipeline.c -- pipeline strings (`A,B{key=value},C`): parsed, then run on a small fixed
 * module with the standard plugin's passes, so names, config keys and typed values are all
 * checked.  The input's first line, when it has two, is also tried as a --config key=value. */
#include "fuzz_common.h"

static GPModule *mod;

static const char k_module[] =
    "#[version = \"0.0.5\"]\n"
    "def @main(%x: Tensor[(1, 4, 6, 6), float32], %w: Tensor[(4, 4, 3, 3), float32]) {\n"
    "  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);\n"
    "  %1 = add(%0, 1f);\n"
    "  %2 = nn.relu(%1);\n"
    "  multiply(%2, 2f)\n"
    "}\n";

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  gp_ops_init();
  fz_load_std();
  mod = gp_parse(k_module, sizeof k_module - 1, "fixed");
  if (!mod) abort();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return -1;
  char *text = gp_strndup((const char *)data, size);
  if (strlen(text) != size) { /* an embedded NUL: not a C string */
    gp_free(text);
    return -1;
  }
  GPPipeline pl;
  if (gp_pipeline_parse(text, &pl) == 0) gp_pipeline_free(&pl);
  else fz_expect_error("pipeline parse");
  GPPassContext *ctx = gp_ctx_new();
  char *nl = strchr(text, '\n'), *pipeline = text;
  if (nl) {
    *nl = 0;
    pipeline = nl + 1;
    char *eq = strchr(text, '=');
    if (eq) {
      *eq = 0;
      if (gp_ctx_set_config(ctx, text, eq + 1) != 0) fz_expect_error("config");
    }
  }
  GPModule *out = gp_run_pipeline(mod, pipeline, ctx);
  if (out) gp_release(out);
  else fz_expect_error("run");
  gp_ctx_free(ctx);
  gp_free(text);
  return 0;
}
