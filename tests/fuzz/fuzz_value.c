/* fuzz_value.c -- ONNX test data (frontend/onnx/tensor.c, gp_onnx_parse_value): the first byte
 * says which message the rest is (0 TensorProto, 1 SequenceProto, 2 OptionalProto, as the
 * conformance runner reads input_K.pb by the model's declared type); an accepted value's
 * tensors are counted and walked, a refused one must say why. */
#include "fuzz_common.h"
#include "frontend/onnx/onnx.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  gp_ops_init();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  GPOnnxValueKind kind = (GPOnnxValueKind)(data[0] % 3);
  GPOnnxValue *v = gp_onnx_parse_value(data + 1, size - 1, kind, "fuzz.pb");
  if (!v) {
    fz_expect_error("parse");
    return 0;
  }
  int32_t n = gp_onnx_value_leaves(v, NULL, 0);
  GPTensor **t = gp_malloc((size_t)(n ? n : 1) * sizeof *t);
  if (gp_onnx_value_leaves(v, t, 0) != n) abort();
  for (int32_t i = 0; i < n; i++)
    if (!t[i] || (t[i]->dl.ndim && !t[i]->dl.shape)) abort();
  gp_free(t);
  gp_onnx_value_free(v);
  return 0;
}
