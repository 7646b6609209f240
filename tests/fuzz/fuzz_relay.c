/* fuzz_relay.c -- Relay text: parse, InferType, print, and when it types, the llvm target's
 * default set at opt-level 4 (so the CombineParallel passes run too; FoldConstant capped at
 * 64 KiB so a folded constant stays small); the printed module must parse back, and the typed
 * module must print the same after the set as before it (a pass never mutates its input). */
#include "fuzz_common.h"

static GPPassContext *ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  gp_ops_init();
  fz_load_std();
  ctx = gp_ctx_new();
  gp_ctx_set_opt_level(ctx, 4);
  if (gp_ctx_set_config(ctx, "FoldConstant.max_bytes", "65536") != 0) abort();
  return 0;
}

static void roundtrip(const GPModule *m) {
  char *text = gp_print(m, GP_PRINT_TYPES | GP_PRINT_METADATA);
  if (!text) abort();
  GPModule *back = gp_parse(text, strlen(text), "printed");
  if (!back) {
    fprintf(stderr, "fuzz: the printed module does not parse: %s\n%s\n", gp_error_message(), text);
    abort();
  }
  gp_release(back);
  gp_free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 16384) return -1;
  GPModule *m = gp_parse((const char *)data, size, "fuzz.relay");
  if (!m) {
    fz_expect_error("parse");
    return 0;
  }
  GPModule *typed = gp_infer_types(m);
  if (!typed) {
    fz_expect_error("InferType");
    char *t = gp_print(m, 0);
    gp_free(t);
    gp_release(m);
    return 0;
  }
  roundtrip(typed);
  char *before = gp_print(typed, GP_PRINT_TYPES | GP_PRINT_METADATA);
  if (!before) abort();
  GPModule *out = gp_run_pipeline(typed, NULL, ctx);
  char *after = gp_print(typed, GP_PRINT_TYPES | GP_PRINT_METADATA);
  if (!after) abort();
  if (strcmp(before, after) != 0) {
    fprintf(stderr, "fuzz: the default set changed its input:\n%s\n--- became ---\n%s\n", before, after);
    abort();
  }
  gp_free(before);
  gp_free(after);
  if (out) {
    roundtrip(out);
    gp_release(out);
  } else {
    fz_expect_error("the default set");
  }
  gp_release(typed);
  gp_release(m);
  return 0;
}
