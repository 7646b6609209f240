/* fuzz_common.h -- shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.c; see run.sh).
 *
 * Each harness feeds one kind of untrusted input to graphpass through the same calls the
 * command uses, and checks that it is either accepted or refused with an error message; any
 * crash, sanitizer report, leak or hang is a finding.  Built by `ninja fuzz-build` with clang
 * -fsanitize=fuzzer,address,undefined into build/fuzz/bin/. */
#ifndef GP_FUZZ_COMMON_H
#define GP_FUZZ_COMMON_H

#include "ir/ir.h"
#include "ir/ops/ops.h"
#include "plugin/plugin.h"
#include "registry/registry.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* An error was set, with a message (a refusal must say why). */
static inline void fz_expect_error(const char *what) {
  const char *m = gp_error_message();
  if (!m || !*m) {
    fprintf(stderr, "fuzz: %s failed without an error message\n", what);
    abort();
  }
  gp_error_clear();
}

/* The standard plugin (build/fuzz/plugins, beside bin/), for the harnesses that run passes. */
static inline void fz_load_std(void) {
  char *dir = gp_plugin_default_dir();
  if (!dir || gp_plugin_load_dir(dir) != 0) {
    fprintf(stderr, "fuzz: cannot load the plugins in %s: %s\n", dir ? dir : "?", gp_error_message());
    abort();
  }
  gp_free(dir);
}

#endif
