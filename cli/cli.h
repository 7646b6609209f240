/* cli.h -- what the `graphpass` subcommands share (defined in cli/main.c) and the subcommands
 * that live in files of their own. */
#ifndef GP_CLI_H
#define GP_CLI_H

#include "../ir/ir.h"
#include "../frontend/onnx/onnx.h"

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

/* --shape NAME=D,D,... options (cli/load.c). */
#define MAX_SHAPES 64
typedef struct {
  GPOnnxShape shapes[MAX_SHAPES];
  int64_t dims[MAX_SHAPES][64];
  char *names[MAX_SHAPES];
  int n;
} ShapeOpts;
/* Parse one --shape value into s; -1 + GP_ERR_VALUE saying what is wrong. */
int shape_opt_add(ShapeOpts *s, const char *text);
void shape_opts_free(ShapeOpts *s);
/* An input file as a module: a .onnx model through the ONNX frontend (with the --shape
 * options), else Relay text ('-' = stdin).  NULL + error. */
GPModule *load_module(const char *path, const ShapeOpts *shapes);
/* A tensor file: .npy, or .pb (a serialized ONNX TensorProto).  NULL + error. */
GPTensor *load_tensor(const char *path);

/* graphpass onnx-test (cli/onnx_test.c) */
int cmd_onnx_test(int argc, char **argv);

/* graphpass targets (cli/targets_cmd.c) */
int cmd_targets(int argc, char **argv);

/* graphpass eval (cli/eval_cmd.c) */
int cmd_eval(int argc, char **argv);
/* --calibrate NAME=FILE options into the GenIR.calibrate config ("NAME=FILE;...") unless a
 * --config set it (cli/eval_cmd.c); -1 + error. */
int calibrate_config(GPPassContext *ctx, const char *const *cal, int ncal);

#endif /* GP_CLI_H */
