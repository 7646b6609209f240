/* fuzz_onnx.c -- ONNX model bytes: import (no external data: the model's directory does not
 * exist), then InferType and print of what was imported. */
#include "fuzz_common.h"
#include "frontend/onnx/onnx.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  gp_ops_init();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536) return -1;
  GPModule *m = gp_onnx_import(data, size, "/nonexistent-fuzz-dir/fuzz.onnx", NULL);
  if (!m) {
    fz_expect_error("import");
    return 0;
  }
  GPModule *typed = gp_infer_types(m);
  if (typed) {
    char *t = gp_print(typed, GP_PRINT_TYPES);
    gp_free(t);
    gp_release(typed);
  } else {
    fz_expect_error("InferType of an imported model");
  }
  gp_release(m);
  return 0;
}
