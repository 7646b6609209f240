/* test_helpers.h -- shared by the test files: build paths, file reading, golden comparison. */
#ifndef GP_TEST_HELPERS_H
#define GP_TEST_HELPERS_H

#include "../ir/ir.h"
#include "../plugin/plugin.h"
#include "../registry/registry.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* build/ or build/san/, as tests/run.sh exports it. */
static inline const char *th_build_dir(void) {
  const char *d = getenv("GP_TEST_BUILD_DIR");
  return d && *d ? d : "build";
}

static inline char *th_path(const char *rel) {
  GPBuf b = {0};
  gp_buf_printf(&b, "%s/%s", th_build_dir(), rel);
  return gp_buf_take(&b);
}

static inline char *th_read(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  cr_assert(f, "cannot open %s", path);
  GPBuf b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) gp_buf_put(&b, chunk, n);
  fclose(f);
  if (len) *len = b.len;
  return gp_buf_take(&b);
}

static inline GPModule *th_parse_file(const char *path) {
  size_t len;
  char *text = th_read(path, &len);
  GPModule *m = gp_parse(text, len, path);
  gp_free(text);
  cr_assert(m, "parse %s: %s", path, gp_error_message());
  return m;
}

/* Loads the standard plugin once per test process. */
static inline void th_load_std(void) {
  char *p = th_path("plugins/libgp_std.so");
  int rc = gp_plugin_load(p);
  cr_assert_eq(rc, 0, "load %s: %s", p, gp_error_message());
  gp_free(p);
}

static inline void th_assert_module_eq(const GPModule *got, const GPModule *want) {
  if (!gp_module_equal(got, want)) {
    char *diff = gp_module_diff(got, want);
    char *g = gp_print(got, 0), *w = gp_print(want, 0);
    cr_assert_fail("modules differ: %s\n--- got:\n%s\n--- want:\n%s", diff ? diff : "?", g, w);
  }
}

/* Run `cmd` through the shell; capture stdout+stderr into *out; return the exit status. */
static inline int th_run(const char *cmd, char **out) {
  GPBuf b = {0};
  gp_buf_printf(&b, "%s 2>&1", cmd);
  FILE *p = popen(b.data, "r");
  gp_buf_free(&b);
  cr_assert(p, "popen %s", cmd);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, p)) > 0) gp_buf_put(&b, chunk, n);
  int st = pclose(p);
  *out = gp_buf_take(&b);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

#endif
