/* fuzz_npy.c -- .npy bytes (eval/npy.c): parsed; an accepted tensor is written back and read
 * again, and must compare equal. */
#include "fuzz_common.h"
#include "eval/eval.h"

#include <unistd.h>

static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  gp_ops_init();
  snprintf(path, sizeof path, "/tmp/gp_fuzz_npy_%d.npy", (int)getpid());
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  GPTensor *t = gp_npy_parse(data, size, "fuzz.npy");
  if (!t) {
    fz_expect_error("parse");
    return 0;
  }
  if (gp_npy_write(path, t) != 0) {
    fprintf(stderr, "fuzz: cannot write back an accepted tensor: %s\n", gp_error_message());
    abort();
  }
  GPTensor *back = gp_npy_read(path);
  if (!back || gp_tensor_type(back) != gp_tensor_type(t)) abort();
  gp_release(back);
  gp_release(t);
  unlink(path);
  return 0;
}
