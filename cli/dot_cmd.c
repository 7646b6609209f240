/* dot_cmd.c -- `graphpass dot INPUT [--function F] [--pipeline P] ...`: Graphviz DOT of one
 * function of a module (after the pipeline when one is given; typed by InferType so that op
 * nodes show their output shapes), on stdout or in `-o FILE`.  `dot -Tsvg` renders it. */
#include "../registry/registry.h"
#include "../views/views.h"
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { D_OK = 0, D_INPUT = 1, D_USAGE = 2, D_PASS = 3 };

int cmd_dot(int argc, char **argv) {
  PluginOpts po = {0};
  ShapeOpts shapes = {0};
  const char *input = NULL, *func = "main", *pipeline = NULL, *output = NULL, *opt_level = NULL, *params = NULL;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    bool has = i + 1 < argc;
    if (strcmp(a, "--function") == 0 || strcmp(a, "--pipeline") == 0 || strcmp(a, "-o") == 0 ||
        strcmp(a, "--plugin") == 0 || strcmp(a, "--target") == 0 || strcmp(a, "--opt-level") == 0 ||
        strcmp(a, "--shape") == 0 || strcmp(a, "--params") == 0) {
      if (!has) {
        die_usage("dot: %s needs a value", a);
        shape_opts_free(&shapes);
        return D_USAGE;
      }
      const char *v = argv[++i];
      if (strcmp(a, "--function") == 0) func = v[0] == '@' ? v + 1 : v;
      else if (strcmp(a, "--pipeline") == 0) pipeline = v;
      else if (strcmp(a, "-o") == 0) output = v;
      else if (strcmp(a, "--target") == 0) po.target = v;
      else if (strcmp(a, "--opt-level") == 0) opt_level = v;
      else if (strcmp(a, "--params") == 0) params = v;
      else if (strcmp(a, "--shape") == 0) {
        if (shape_opt_add(&shapes, v) != 0) {
          shape_opts_free(&shapes);
          return report(D_USAGE);
        }
      } else {
        if (po.nplugins == (int)GP_ARRAY_LEN(po.plugins)) {
          die_usage("dot: too many --plugin options (at most %s)", "64");
          shape_opts_free(&shapes);
          return D_USAGE;
        }
        po.plugins[po.nplugins++] = v;
      }
    } else if (strcmp(a, "--no-default-plugins") == 0) {
      po.no_default_plugins = true;
    } else if (a[0] == '-' && a[1]) {
      die_usage("dot: unknown option '%s'", a);
      shape_opts_free(&shapes);
      return D_USAGE;
    } else if (!input) {
      input = a;
    } else {
      die_usage("dot: unexpected argument '%s'", a);
      shape_opts_free(&shapes);
      return D_USAGE;
    }
  }
  if (!input) {
    die_usage("dot: %s", "missing INPUT");
    return D_USAGE;
  }
  int code = D_OK;
  GPPassContext *ctx = NULL;
  GPModule *mod = NULL, *run = NULL, *typed = NULL;
  GPBuf dot = {0};
  if (load_plugins(&po) != 0) {
    code = report(D_INPUT);
    goto done;
  }
  if (!(mod = load_module_params(input, &shapes, params))) {
    code = report(D_INPUT);
    goto done;
  }
  if (pipeline || po.target || opt_level) {
    ctx = gp_ctx_new();
    ctx->out = stderr;
    if (po.target && gp_ctx_set_target(ctx, po.target) != 0) {
      code = report(D_USAGE);
      goto done;
    }
    if (opt_level && ctx_opt_level_text(ctx, opt_level) != 0) {
      code = report(D_USAGE);
      goto done;
    }
    if (pipeline || opt_level || po.target) {
      run = gp_run_pipeline(mod, pipeline, ctx);
      if (!run) {
        code = report(gp_error_kind() == GP_ERR_PASS ? D_PASS : ctx->registry_error ? D_INPUT : D_USAGE);
        goto done;
      }
    }
  }
  typed = gp_infer_types(run ? run : mod);
  if (!typed) {
    gp_error_prefix("dot: typing the module");
    code = report(D_INPUT);
    goto done;
  }
  const GPFunctionExpr *fn = gp_module_lookup(typed, func);
  if (!fn) {
    GPBuf names = {0};
    for (int32_t i = 0; i < typed->num_functions; i++)
      gp_buf_printf(&names, "%s@%s", i ? ", " : "", typed->gvars[i]->name);
    gp_error_set(GP_ERR_NOT_FOUND, "dot: no function @%s (the module has %s)", func, names.len ? names.data : "none");
    gp_buf_free(&names);
    code = report(D_USAGE);
    goto done;
  }
  if (gp_dot_function(&dot, fn, func) != 0) {
    code = report(D_INPUT);
    goto done;
  }
  FILE *f = output && strcmp(output, "-") != 0 ? fopen(output, "wb") : stdout;
  if (!f) {
    gp_error_set(GP_ERR_IO, "%s: cannot write: %s", output, strerror(errno));
    code = report(D_INPUT);
    goto done;
  }
  fwrite(dot.data, 1, dot.len, f);
  if (f != stdout) fclose(f);
done:
  gp_buf_free(&dot);
  gp_release(typed);
  gp_release(run);
  gp_release(mod);
  gp_ctx_free(ctx);
  shape_opts_free(&shapes);
  return code;
}
