/* cli.h -- what the `graphpass` subcommands share (defined in cli/main.c) and the subcommands
 * that live in files of their own. */
#ifndef GP_CLI_H
#define GP_CLI_H

#include "../ir/ir.h"

#include <stdbool.h>

typedef struct {
  const char *plugins[64];
  int nplugins;
  bool no_default_plugins;
  const char *target;
} PluginOpts;

/* "graphpass: <fmt with arg>" and the usage text, on stderr. */
void die_usage(const char *fmt, const char *arg);
/* Print the pending error as "graphpass: error: ...", clear it, return code. */
int report(int code);
/* A whole file ('-' = stdin), NUL-terminated, gp_malloc'd; NULL + GP_ERR_IO. */
char *read_file(const char *path, size_t *len);
/* The default plugin directory (unless disabled), then the explicit plugins. */
int load_plugins(const PluginOpts *o);

/* graphpass eval (cli/eval_cmd.c) */
int cmd_eval(int argc, char **argv);

#endif /* GP_CLI_H */
