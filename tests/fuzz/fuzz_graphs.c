/* fuzz_graphs.c -- miscompiles from graphs the input bytes describe (graph_gen.h): every graph
 * that types goes through numerics_check.h's check (the O4 set, ConvertLayout to NHWC and to
 * mixed layouts, Paddle Lite's fusions, under --verify-numerics).  Mutated Relay text seldom
 * types, so fuzz_numerics reaches few graphs a pass rewrites; here every byte is a choice. */
#include "graph_gen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 512) return -1;
  GPModule *typed = gg_build(data, size, GG_DYNAMIC);
  if (!typed) return 0;
  nc_check(typed);
  gp_release(typed);
  return 0;
}
