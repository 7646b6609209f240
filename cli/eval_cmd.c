/* eval_cmd.c -- `graphpass eval`: run @main of a module on .npy inputs (or deterministic random
 * ones), print a summary line per output, optionally write the outputs as .npy files.
 * Exit status as `opt`: 0 success; 1 bad input (file, text, inputs, evaluation); 2 usage. */
#include "cli.h"
#include "../eval/eval.h"
#include "../registry/registry.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { EV_OK = 0, EV_INPUT = 1, EV_USAGE = 2 };

#define MAX_BINDINGS 256

/* mkdir -p */
static int make_dirs(const char *dir) {
  char *p = gp_strdup(dir);
  int rc = 0;
  for (char *s = p + 1;; s++) {
    if (*s == '/' || !*s) {
      char c = *s;
      *s = 0;
      struct stat st;
      if (stat(p, &st) != 0) {
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
          gp_error_set(GP_ERR_IO, "%s: cannot create directory: %s", p, strerror(errno));
          rc = -1;
          break;
        }
      } else if (!S_ISDIR(st.st_mode)) {
        gp_error_set(GP_ERR_IO, "%s: not a directory", p);
        rc = -1;
        break;
      }
      *s = c;
      if (!c) break;
    }
  }
  gp_free(p);
  return rc;
}

static void print_shape(const GPTensor *t) {
  fputc('(', stdout);
  for (int32_t i = 0; i < t->dl.ndim; i++) printf("%s%" PRId64, i ? ", " : "", t->dl.shape[i]);
  fputc(')', stdout);
}

static void print_summary(int32_t i, const GPTensor *t) {
  char dt[24];
  printf("output %d: shape ", (int)i);
  print_shape(t);
  printf(" dtype %s", gp_dtype_str(t->dl.dtype, dt));
  int64_t n = 1;
  for (int32_t d = 0; d < t->dl.ndim; d++) n *= t->dl.shape[d];
  if (n == 0 || !t->dl.data) {
    printf(" min - max - mean -\n");
    return;
  }
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  bool nan = false;
  for (int64_t k = 0; k < n; k++) {
    double v = gp_tensor_get_f64(t, k);
    if (isnan(v)) {
      nan = true;
      continue;
    }
    if (v < lo) lo = v;
    if (v > hi) hi = v;
    sum += v;
  }
  printf(" min %.6g max %.6g mean %.6g%s\n", lo, hi, nan ? NAN : sum / (double)n, nan ? " (has NaN)" : "");
}

static const char *param_name(const GPVar *v) { return v->name ? v->name : ""; }

static void list_params(GPBuf *b, const GPFunctionExpr *fn) {
  for (int32_t i = 0; i < fn->nparams; i++) gp_buf_printf(b, "%s%%%s", i ? ", " : "", param_name(fn->params[i]));
  if (!fn->nparams) gp_buf_puts(b, "none");
}

/* --calibrate NAME=FILE options as the GenIR.calibrate config value "NAME=FILE;NAME=FILE"
 * (unless --config sets it); -1 + error on a malformed one. */
int calibrate_config(GPPassContext *ctx, const char *const *cal, int ncal) {
  if (!ncal || gp_strmap_get(&ctx->config, "GenIR.calibrate")) return 0;
  GPBuf b = {0};
  for (int i = 0; i < ncal; i++) {
    const char *eq = strchr(cal[i], '=');
    if (!eq || eq == cal[i] || !eq[1] || strchr(cal[i], ';')) {
      gp_buf_free(&b);
      gp_error_set(GP_ERR_VALUE, "--calibrate '%s' is not NAME=FILE (.npy or .pb; no ';')", cal[i]);
      return -1;
    }
    gp_buf_printf(&b, "%s%s", i ? ";" : "", cal[i]);
  }
  int rc = gp_ctx_set_config(ctx, "GenIR.calibrate", b.data);
  gp_buf_free(&b);
  return rc;
}

/* eval --target T: the context that compiles for T (opt-level, --config, --calibrate). */
static GPPassContext *compile_ctx(const char *target, const char *opt_level, const char *const *config, int nconfig,
                                  const char *const *cal, int ncal) {
  GPPassContext *ctx = gp_ctx_new();
  ctx->out = stderr;
  if (gp_ctx_set_target(ctx, target) != 0) goto fail;
  if ((opt_level && ctx_opt_level_text(ctx, opt_level) != 0) || ctx_configs(ctx, config, nconfig) != 0) goto fail;
  if (calibrate_config(ctx, cal, ncal) != 0) goto fail;
  /* the module a set prints for its codegen (PrintIR) is not what eval is about */
  if (!gp_strmap_get(&ctx->config, "PrintIR.file") && gp_ctx_set_config(ctx, "PrintIR.file", "/dev/null") != 0)
    gp_error_clear();
  return ctx;
fail:
  gp_ctx_free(ctx);
  return NULL;
}

int cmd_eval(int argc, char **argv) {
  PluginOpts po = {0};
  ShapeOpts shapes = {0};
  const char *input = NULL, *outdir = NULL, *seed_text = NULL, *threads_text = NULL, *params = NULL, *opt_level = NULL;
  const char *bind[MAX_BINDINGS], *cal[MAX_BINDINGS], *config[64];
  int nbind = 0, ncal = 0, nconfig = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    bool has = i + 1 < argc;
    if (strcmp(a, "-o") == 0 || strcmp(a, "--input") == 0 || strcmp(a, "--random-inputs") == 0 ||
        strcmp(a, "--plugin") == 0 || strcmp(a, "--threads") == 0 || strcmp(a, "--shape") == 0 ||
        strcmp(a, "--params") == 0 || strcmp(a, "--target") == 0 || strcmp(a, "--calibrate") == 0 ||
        strcmp(a, "--config") == 0 || strcmp(a, "--opt-level") == 0) {
      if (!has) {
        die_usage("eval: %s needs a value", a);
        return EV_USAGE;
      }
      const char *v = argv[++i];
      if (strcmp(a, "-o") == 0) {
        outdir = v;
      } else if (strcmp(a, "--params") == 0) {
        params = v;
      } else if (strcmp(a, "--target") == 0) {
        po.target = v;
      } else if (strcmp(a, "--opt-level") == 0) {
        opt_level = v;
      } else if (strcmp(a, "--calibrate") == 0) {
        if (ncal == MAX_BINDINGS) {
          die_usage("eval: too many --calibrate options (at most %s)", "256");
          return EV_USAGE;
        }
        cal[ncal++] = v;
      } else if (strcmp(a, "--config") == 0) {
        if (nconfig == 64) {
          die_usage("eval: too many --config options (at most %s)", "64");
          return EV_USAGE;
        }
        config[nconfig++] = v;
      } else if (strcmp(a, "--random-inputs") == 0) {
        seed_text = v;
      } else if (strcmp(a, "--threads") == 0) {
        threads_text = v;
      } else if (strcmp(a, "--shape") == 0) {
        if (shape_opt_add(&shapes, v) != 0) {
          shape_opts_free(&shapes);
          return report(EV_USAGE);
        }
      } else if (strcmp(a, "--input") == 0) {
        if (nbind == MAX_BINDINGS) {
          die_usage("eval: too many --input options (at most %s)", "256");
          return EV_USAGE;
        }
        bind[nbind++] = v;
      } else {
        if (po.nplugins == (int)GP_ARRAY_LEN(po.plugins)) {
          die_usage("eval: too many --plugin options (at most %s)", "64");
          return EV_USAGE;
        }
        po.plugins[po.nplugins++] = v;
      }
    } else if (strcmp(a, "--no-default-plugins") == 0) {
      po.no_default_plugins = true;
    } else if (a[0] == '-' && a[1]) {
      die_usage("eval: unknown option '%s'", a);
      return EV_USAGE;
    } else if (!input) {
      input = a;
    } else {
      die_usage("eval: unexpected argument '%s'", a);
      return EV_USAGE;
    }
  }
  if (!input) {
    die_usage("eval: %s", "missing INPUT");
    return EV_USAGE;
  }
  uint64_t seed = 0;
  if (seed_text) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(seed_text, &end, 10);
    if (!*seed_text || *end || errno || seed_text[0] == '-') {
      die_usage("eval: --random-inputs '%s' is not a non-negative integer", seed_text);
      return EV_USAGE;
    }
    seed = (uint64_t)v;
  }
  GPEvalOptions opts = {.struct_size = sizeof opts, .abi_version = GP_ABI_VERSION};
  if (threads_text) {
    char *end;
    errno = 0;
    long v = strtol(threads_text, &end, 10);
    if (!*threads_text || *end || errno || v < 1 || v > 1024) {
      die_usage("eval: --threads '%s' is not an integer from 1 to 1024", threads_text);
      return EV_USAGE;
    }
    opts.num_threads = (int32_t)v;
  }
  for (int k = 0; k < nbind; k++)
    if (!strchr(bind[k], '=') || bind[k][0] == '=') {
      die_usage("eval: --input '%s' is not NAME=FILE (.npy or .pb)", bind[k]);
      return EV_USAGE;
    }
  if ((ncal || nconfig || opt_level) && !po.target) {
    die_usage("eval: %s need --target (they configure its compilation)", "--calibrate, --config and --opt-level");
    return EV_USAGE;
  }
  bool relay_shapes = shapes.n && !is_onnx_path(input); /* the shapes --random-inputs makes */
  if (relay_shapes && !seed_text) {
    die_usage("eval: %s", "--shape on Relay text gives the shapes of the inputs --random-inputs makes (parameters "
                          "with ? dims); --random-inputs is not given");
    shape_opts_free(&shapes);
    return EV_USAGE;
  }
  if (load_plugins(&po) != 0) return report(EV_INPUT);

  int code = EV_INPUT;
  GPModule *mod = NULL;
  GPFunctionExpr *fn = NULL;
  GPTensor **ins = NULL, **rnd = NULL, **outs = NULL;
  int32_t np = 0, nrnd = 0, nout = 0;
  mod = load_module_params(input, relay_shapes ? NULL : &shapes, params);
  if (!mod) goto fail;
  if (po.target) { /* compile for the target: its set, then external functions on its runner */
    GPPassContext *ctx = compile_ctx(po.target, opt_level, config, nconfig, cal, ncal);
    if (!ctx) {
      code = report(EV_USAGE);
      goto done;
    }
    GPModule *compiled = gp_run_pipeline(mod, NULL, ctx);
    gp_ctx_free(ctx);
    if (!compiled) goto fail;
    gp_release(mod);
    mod = compiled;
    opts.external = 1;
  }
  fn = gp_module_lookup(mod, "main");
  if (!fn) {
    gp_error_set(GP_ERR_NOT_FOUND, "%s: the module has no @main to evaluate", input);
    goto fail;
  }
  np = fn->nparams;
  ins = gp_calloc((size_t)(np ? np : 1), sizeof *ins);
  /* --input NAME=FILE: by parameter name (with or without the %) */
  for (int k = 0; k < nbind; k++) {
    const char *eq = strchr(bind[k], '=');
    const char *name = bind[k][0] == '%' ? bind[k] + 1 : bind[k];
    size_t nlen = (size_t)(eq - name);
    int32_t pi = -1;
    for (int32_t i = 0; i < np && pi < 0; i++) {
      const char *pn = param_name(fn->params[i]);
      if (strlen(pn) == nlen && strncmp(pn, name, nlen) == 0) pi = i;
    }
    if (pi < 0) { /* an ONNX input's own name */
      char *raw = gp_strndup(name, nlen), *pn = gp_onnx_param_name(raw);
      for (int32_t i = 0; i < np && pi < 0; i++)
        if (strcmp(param_name(fn->params[i]), pn) == 0) pi = i;
      gp_free(raw);
      gp_free(pn);
    }
    if (pi < 0) {
      GPBuf b = {0};
      list_params(&b, fn);
      gp_error_set(GP_ERR_VALUE, "--input %.*s: @main has no parameter %%%.*s (parameters: %s)", (int)nlen, name,
                   (int)nlen, name, b.data);
      gp_buf_free(&b);
      goto fail;
    }
    if (ins[pi]) {
      gp_error_set(GP_ERR_VALUE, "--input %.*s is given twice", (int)nlen, name);
      goto fail;
    }
    ins[pi] = load_tensor(eq + 1);
    if (!ins[pi]) {
      gp_error_prefix("--input %.*s", (int)nlen, name);
      goto fail;
    }
  }
  /* the rest: deterministic random values, or an error naming them */
  {
    GPBuf missing = {0};
    int nmissing = 0;
    for (int32_t i = 0; i < np; i++)
      if (!ins[i]) gp_buf_printf(&missing, "%s%%%s", nmissing++ ? ", " : "", param_name(fn->params[i]));
    if (nmissing && !seed_text) {
      gp_error_set(GP_ERR_VALUE,
                   "@main: no value for %s (give --input NAME=FILE.npy for each parameter, or --random-inputs SEED)",
                   missing.data);
      gp_buf_free(&missing);
      goto fail;
    }
    gp_buf_free(&missing);
    if (nmissing) {
      if (gp_eval_random_inputs_shaped(mod, "main", seed, shapes.shapes, relay_shapes ? shapes.n : 0, 1, &rnd, &nrnd) != 0)
        goto fail;
      for (int32_t i = 0; i < np; i++)
        if (!ins[i]) ins[i] = gp_retain(rnd[i]);
    }
  }
  if (gp_eval_function(mod, "main", np, ins, &outs, &nout, &opts) != 0) goto fail;
  if (outdir && make_dirs(outdir) != 0) goto fail;
  for (int32_t i = 0; i < nout; i++) {
    print_summary(i, outs[i]);
    if (outdir) {
      GPBuf p = {0};
      gp_buf_printf(&p, "%s/output_%d.npy", outdir, (int)i);
      int rc = gp_npy_write(p.data, outs[i]);
      gp_buf_free(&p);
      if (rc != 0) goto fail;
    }
  }
  code = EV_OK;
  goto done;
fail:
  code = report(EV_INPUT);
done:
  fflush(stdout);
  for (int32_t i = 0; i < nout; i++) gp_release(outs[i]);
  gp_free(outs);
  for (int32_t i = 0; i < nrnd; i++) gp_release(rnd[i]);
  gp_free(rnd);
  if (ins)
    for (int32_t i = 0; i < np; i++) gp_release(ins[i]);
  gp_free(ins);
  gp_release(mod);
  shape_opts_free(&shapes);
  return code;
}
