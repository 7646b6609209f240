/*
 * bad_entry_plugin.c -- an out-of-tree test plugin whose entry table is wrong in the way the
 * environment variable GP_BAD_ENTRY names (tests/test_bad_input.c, the plugin catalog):
 *   null      graphpass_plugin_entry returns NULL
 *   tiny      the table's struct_size is too small to hold a version
 *   short     the table claims the current ABI but ends before `finalize`
 *   old       the table claims ABI 1.0 minus one minor (major 1, minor 0 is accepted: 0.9 is not)
 *   noname    the table has no name
 *   host      the table is named "host" (reserved)
 *   noinit    the table has no initialize function
 *   fail      initialize fails with an error message
 *   silent    initialize fails without one
 *   badpass   initialize registers a pass without a function (the host refuses it; init fails)
 * unset: a valid plugin "bad_entry_plugin" that registers nothing.
 */
#include "graphpass.h"

#include <stdlib.h>
#include <string.h>

static const GPHostAPI *host;

static const char *mode(void) {
  const char *m = getenv("GP_BAD_ENTRY");
  return m ? m : "";
}

static int init(const GPHostAPI *h) {
  host = h;
  if (strcmp(mode(), "fail") == 0) {
    h->error_set(GP_ERR_VALUE, "bad_entry_plugin: refusing to start");
    return -1;
  }
  if (strcmp(mode(), "silent") == 0) return -1;
  if (strcmp(mode(), "badpass") == 0) {
    GPPassInfo info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    info.abi_version = GP_ABI_VERSION;
    info.name = "BadEntryNoFunc";
    info.kind = GP_PASS_TRANSFORM;
    return h->pass_register(&info, 0);
  }
  return 0;
}

static GPPluginAPI api = {.struct_size = sizeof(GPPluginAPI), .abi_version = GP_ABI_VERSION,
                          .name = "bad_entry_plugin", .version = "1", .initialize = init};

GP_EXPORT const GPPluginAPI *graphpass_plugin_entry(void) {
  const char *m = mode();
  if (strcmp(m, "null") == 0) return NULL;
  if (strcmp(m, "tiny") == 0) api.struct_size = 4;
  if (strcmp(m, "short") == 0) api.struct_size = offsetof(GPPluginAPI, initialize);
  if (strcmp(m, "old") == 0) api.abi_version = 0 << 16 | 9;
  if (strcmp(m, "noname") == 0) api.name = NULL;
  if (strcmp(m, "host") == 0) api.name = "host";
  if (strcmp(m, "noinit") == 0) api.initialize = NULL;
#ifdef GP_TEST_FAKE_MAJOR
  api.abi_version = (uint32_t)GP_TEST_FAKE_MAJOR << 16;
#endif
  return &api;
}
