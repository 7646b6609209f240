/* cli.h -- what the `graphpass` subcommands share (defined in cli/main.c) and the subcommands
 * that live in files of their own. */
#ifndef GP_CLI_H
#define GP_CLI_H

#include "../ir/ir.h"
#include "../frontend/onnx/onnx.h"
#include "../registry/registry.h"

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
  GPInputShape shapes[MAX_SHAPES]; /* .name gp_malloc'd and owned here; .dims points into dims */
  int64_t dims[MAX_SHAPES][64];
  int n;
} ShapeOpts;
/* Parse one --shape value into s; -1 + GP_ERR_VALUE saying what is wrong. */
int shape_opt_add(ShapeOpts *s, const char *text);
/* Whether path names an ONNX model (.onnx): there --shape fixes the import's dims; on Relay text
 * it gives the shapes of the inputs --verify-numerics, --bisect-numerics and --random-inputs make
 * for parameters with `?` dims (shape_opts_to_ctx: into ctx's numerics shapes). */
bool is_onnx_path(const char *path);
int shape_opts_to_ctx(const ShapeOpts *s, GPPassContext *ctx);
void shape_opts_free(ShapeOpts *s);
/* An input file as a module: a .onnx model through the ONNX frontend (with the --shape
 * options), else Relay text ('-' = stdin).  NULL + error. */
GPModule *load_module(const char *path, const ShapeOpts *shapes);
/* load_module, with Relay text's constants from a parameter file (TVM's save_param_dict
 * format, names relay.Constant[<i>]) when `params` is not NULL. */
GPModule *load_module_params(const char *path, const ShapeOpts *shapes, const char *params);
/* Write m as Relay text to `path` ('-' or NULL: stdout); with `params`, the text has no
 * metadata section and the constants go to that file (TVM's save_param_dict format). */
int write_module(const GPModule *m, const char *path, const char *params, bool types);
/* A tensor file: .npy, or .pb (a serialized ONNX TensorProto).  NULL + error. */
GPTensor *load_tensor(const char *path);

/* graphpass onnx-test (cli/onnx_test.c) */
int cmd_onnx_test(int argc, char **argv);
/* *out = the number text (flag names it in the error): a finite number >= 0, else -1 and an error. */
int parse_tolerance(const char *flag, const char *text, double *out);

/* graphpass targets (cli/targets_cmd.c) */
int cmd_targets(int argc, char **argv);

/* What `graphpass opt` shows of a run through an instrument (cli/views_run.c). */
typedef struct ViewOpts {
  long long bisect_limit; /* --opt-bisect-limit; -1: none */
  bool quiet;             /* no BISECT lines (the trials of --bisect-numerics) */
  bool keep_names;        /* record every item (the names of the runs) */
  bool print_changed;
  bool filter_print;      /* --filter-print-funcs: --print-before/after(-all) go through here */
  bool pba, paa;
  bool types;
  GPVec filter_funcs, print_before, print_after; /* char* (owned) */
  const char *report;     /* --report FILE.html */
  FILE *out;              /* where the lines go (stderr) */
} ViewOpts;
typedef struct Views Views;
void view_opts_add(GPVec *v, const char *list); /* comma-separated names, '@' dropped */
void view_opts_free(ViewOpts *o);
Views *views_new(const ViewOpts *o);
void views_free(void *v);
/* Register / unregister the instrument "graphpass.views" (v stays the caller's). */
int views_register(GPPassContext *ctx, Views *v);
void views_unregister(GPPassContext *ctx);
/* Write the --report page of the run v saw. */
int views_write_report(Views *v, const char *title);
/* --bisect-numerics: 0 when no run changes @main's numbers, 3 naming the first that does
 * (error set), 1/2 on other errors (error set). */
int views_bisect_numerics(const GPModule *mod, const char *pipeline, GPPassContext *ctx, const ViewOpts *o,
                          double rtol, double atol, uint64_t seed);

/* The context options every subcommand that runs passes takes (cli/load.c): --opt-level TEXT
 * (a non-negative integer; the context checks the range) and --config key=value, each
 * applied to ctx; -1 + error (GP_ERR_VALUE naming the option, or the context's). */
int ctx_opt_level_text(GPPassContext *ctx, const char *text);
int ctx_configs(GPPassContext *ctx, const char *const *config, int n);

/* graphpass dot (cli/dot_cmd.c) */
int cmd_dot(int argc, char **argv);

/* graphpass eval (cli/eval_cmd.c) */
int cmd_eval(int argc, char **argv);
/* --calibrate NAME=FILE options into the GenIR.calibrate config ("NAME=FILE;...") unless a
 * --config set it (cli/eval_cmd.c); -1 + error. */
int calibrate_config(GPPassContext *ctx, const char *const *cal, int ncal);

#endif /* GP_CLI_H */
