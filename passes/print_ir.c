/* print_ir.c -- PrintIR (debug, opt-level 0): writes the module as text to stderr, or to the
 * file named by `PrintIR.file`; returns its input unchanged. */
#include "passes.h"

#include <stdio.h>
#include <string.h>

static int print_ir(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args("PrintIR", args, nargs, &mod, &ctx) != 0) return -1;
  const char *path = std_config_str(ctx, "PrintIR.file", "");
  bool types = std_config_bool(ctx, "PrintIR.show_types", true);
  char *text = H->print(mod, types ? GP_PRINT_TYPES : 0);
  if (!text) return -1;
  FILE *f = path[0] ? fopen(path, "a") : stderr;
  if (!f) {
    H->free(text);
    H->error_set(GP_ERR_IO, "PrintIR: cannot open '%s' for appending", path);
    return -1;
  }
  fputs("; PrintIR\n", f);
  fputs(text, f);
  if (path[0]) fclose(f);
  H->free(text);
  return std_return_module(result, gp_retain(mod));
}

int std_register_print_ir(void) {
  GPConfigKey keys[] = {
      {.name = "file", .type_index = GP_TI_RAW_STR, .default_value = {.type_index = GP_TI_RAW_STR, .v_c_str = ""},
       .help = "append to this file instead of stderr"},
      {.name = "show_types", .type_index = GP_TI_BOOL, .default_value = {.type_index = GP_TI_BOOL, .v_int64 = 1},
       .help = "print the ty= comments"},
  };
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = "PrintIR",
      .opt_level = 0,
      .kind = GP_PASS_DEBUG,
      .config_keys = keys,
      .num_config_keys = 2,
      .func = print_ir,
      .help = "Print the module as text (debugging).",
  };
  return H->pass_register(&info, 0);
}
