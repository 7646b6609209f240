/* fuzz_numerics.c -- miscompiles, not crashes, from Relay text: what parses and types goes
 * through numerics_check.h's check (the O4 set and ConvertLayout to NHWC under
 * --verify-numerics). */
#include "numerics_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return -1;
  GPModule *m = gp_parse((const char *)data, size, "fuzz.relay");
  if (!m) {
    fz_expect_error("parse");
    return -1;
  }
  GPModule *typed = gp_infer_types(m);
  gp_release(m);
  if (!typed) {
    fz_expect_error("InferType");
    return -1;
  }
  nc_check(typed);
  gp_release(typed);
  return 0;
}
