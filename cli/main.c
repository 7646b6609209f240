/* main.c -- the `graphpass` command: list passes, optimize a module.
 * Exit status: 0 success; 1 bad input (file, text, plugin) or a registry defect (a dependency
 * cycle between registered passes); 2 usage (flags, pipeline, config); 3 a pass failed. */
#include "../ir/ir.h"
#include "../plugin/plugin.h"
#include "../registry/registry.h"
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { EXIT_OK = 0, EXIT_INPUT = 1, EXIT_USAGE = 2, EXIT_PASS = 3 };

static const char usage_text[] =
    "usage: graphpass passes [--plugin FILE]... [--target T]\n"
    "       graphpass targets [--plugin FILE]... [--no-default-plugins]\n"
    "       graphpass opt INPUT [-o OUTPUT [--params OUT.params]] [--input-params FILE]\n"
    "                 [--target T] [--opt-level N] [--pipeline P | --opt-set S]\n"
    "                 [--disable A,B] [--require A,B] [--config key=value]... [--plugin FILE]...\n"
    "                 [--time-passes] [--print-before-all] [--print-after-all]\n"
    "                 [--print-before A,B] [--print-after A,B] [--filter-print-funcs f,g]\n"
    "                 [--print-changed] [--opt-bisect-limit N | --bisect-numerics] [--report FILE.html]\n"
    "                 [--verify-each] [--explain]\n"
    "                 [--stats] [--no-types] [--no-default-plugins]\n"
    "                 [--verify-numerics [--rtol X] [--atol Y] [--seed N]]\n"
    "                 [--shape NAME=D,D,...]... [--target-ops NAME=op,op,...]...\n"
    "                 [--calibrate NAME=FILE]...\n"
    "       graphpass eval INPUT [--input NAME=FILE]... [--random-inputs SEED] [-o DIR]\n"
    "                 [--params FILE] [--plugin FILE]... [--threads N] [--no-default-plugins]\n"
    "                 [--shape NAME=D,...]... [--target T [--opt-level N] [--config key=value]...\n"
    "                 [--calibrate NAME=FILE]...]\n"
    "       graphpass dot INPUT [--function F] [--pipeline P] [--target T] [--opt-level N] [-o FILE]\n"
    "                 [--params FILE] [--plugin FILE]... [--no-default-plugins] [--shape NAME=D,...]...\n"
    "       graphpass onnx-test PATH... [--pipeline P] [--target T] [--opt-level N] [--rtol X] [--atol Y]\n"
    "                 [--verify-numerics] [--plugin FILE]... [--no-default-plugins]\n"
    "       graphpass --version | --help\n"
    "INPUT is Relay text (TVM's print(mod) format; '-' reads stdin) or an ONNX model (.onnx);\n"
    "--shape fixes the dims of an ONNX graph input; on Relay text it gives the shape of a parameter with ?\n"
    "dims for the inputs of --verify-numerics, --bisect-numerics and --random-inputs (other ? dims are 1).\n"
    "--input files are .npy or ONNX TensorProto (.pb).\n"
    "onnx-test runs ONNX's conformance tests (a test directory with model.onnx and\n"
    "test_data_set_*, a directory of them, or X.onnx beside X_output_0.pb) and prints\n"
    "PASS/FAIL/SKIP per test and a totals line; it exits 1 when a test failed.  It compares\n"
    "outputs as ONNX's runner does, |got - want| <= atol + rtol * |want| (rtol 1e-3, atol 1e-7);\n"
    "--rtol / --atol set the tolerance of all its comparisons, with --verify-numerics's too.\n"
    "--verify-numerics evaluates @main on deterministic inputs (from --seed, default 0) before\n"
    "the first pass and after each pass, and fails naming the first pass whose outputs differ\n"
    "beyond |got - want| <= atol + rtol * |want| (defaults: rtol 1e-4, atol 1e-5).\n"
    "--opt-set S runs the target's optimization set S (see `graphpass targets`) instead of its\n"
    "default set; an unknown set is an error listing the target's sets.\n"
    "--target-ops NAME=op,op,... marks the ops a BYOC target NAME supports (op attribute target.NAME)\n"
    "for AnnotateTarget, and adds NAME to AnnotateTarget.targets unless --config sets that key.\n"
    "--calibrate NAME=FILE (.npy/.pb; repeatable) gives GenIR (target opu) the calibration input of\n"
    "@main's parameter NAME (config GenIR.calibrate).  eval --target T compiles with T's set first,\n"
    "then runs its external functions (Compiler=\"T\") through graphpass.ext.T.run (the OPU simulator).\n";

void die_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "graphpass: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n%s", usage_text);
}

int report(int code) {
  fprintf(stderr, "graphpass: error: %s\n", gp_error_message());
  gp_error_clear();
  return code;
}

/* Read a whole file ('-' = stdin) into a NUL-terminated buffer. */
char *read_file(const char *path, size_t *len) { return gp_read_file(path, len); }

/* The default plugins as a host loads them (GPHostAPI.plugins_load_default), then --plugin. */
int load_plugins(const PluginOpts *o) {
  if (!o->no_default_plugins && gp_plugins_load_default(NULL) != 0) return -1;
  for (int i = 0; i < o->nplugins; i++)
    if (gp_plugin_load(o->plugins[i]) != 0) return -1;
  return 0;
}

static void shutdown_all(void) {
  gp_plugins_unload_all();
  gp_registry_shutdown();
  gp_types_shutdown();
}

/* A run failed in a pass: when the user's module itself does not type-check, that is bad
 * input (exit 1) as a parse error is, reported with InferType's file:line:col message instead
 * of the pass's.  The error slot then holds that message; else it is left as it was. */
static bool input_type_error(const GPModule *mod) {
  char *pass_msg = gp_strdup(gp_error_message());
  int kind = gp_error_kind();
  gp_error_clear();
  GPModule *typed = gp_infer_types(mod);
  bool bad = !typed && gp_error_kind() == GP_ERR_TYPE;
  gp_release(typed);
  if (!bad) gp_error_set(kind, "%s", pass_msg);
  gp_free(pass_msg);
  return bad;
}

/* ---- graphpass passes */

static bool pass_runs_on(const GPPassEntry *e, const char *target) {
  if (!target) return true;
  char *refused = gp_pass_target_refusal(&e->info, target);
  gp_free(refused);
  return refused == NULL;
}

static void join(FILE *f, const char *const *items, int32_t n, const char *none) {
  if (!n) fputs(none, f);
  for (int32_t i = 0; i < n; i++) fprintf(f, "%s%s", i ? "," : "", items[i]);
}

static int cmd_passes(int argc, char **argv) {
  PluginOpts po = {0};
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--plugin") == 0 && i + 1 < argc && po.nplugins < 64) {
      po.plugins[po.nplugins++] = argv[++i];
    } else if (strcmp(argv[i], "--target") == 0 && i + 1 < argc) {
      po.target = argv[++i];
    } else if (strcmp(argv[i], "--no-default-plugins") == 0) {
      po.no_default_plugins = true;
    } else {
      die_usage("passes: unexpected argument '%s'", argv[i]);
      return EXIT_USAGE;
    }
  }
  if (load_plugins(&po) != 0) return report(EXIT_INPUT);
  GPPassEntry **list;
  size_t n = gp_pass_list(&list);
  printf("%-28s %-9s %-28s %-16s %s\n", "name", "opt-level", "required", "targets", "plugin");
  for (size_t i = 0; i < n; i++) {
    GPPassEntry *e = list[i];
    if (pass_runs_on(e, po.target)) {
      printf("%-28s %-9d ", e->info.name, (int)e->info.opt_level);
      char req[256] = "-", tg[256] = "all";
      FILE *m = fmemopen(req, sizeof req, "w");
      if (m) {
        join(m, e->info.required, e->info.num_required, "-");
        fclose(m);
      }
      m = fmemopen(tg, sizeof tg, "w");
      if (m) {
        join(m, e->info.targets, e->info.num_targets, "all");
        for (int32_t k = 0; k < e->info.num_excluded_targets; k++) fprintf(m, ",!%s", e->info.excluded_targets[k]);
        for (int32_t k = 0; k < e->info.num_kernels; k++) fprintf(m, "%s%s", k ? "," : ",kernels:", e->info.kernels[k]);
        fclose(m);
      }
      printf("%-28s %-16s %s\n", req, tg, e->origin);
    }
    gp_pass_entry_release(e);
  }
  gp_free(list);
  if (po.target) {
    char *set = gp_opt_set_get(po.target, "default");
    if (set) {
      printf("default set for %s: %s\n", po.target, set);
      gp_free(set);
    } else {
      gp_error_clear();
    }
  }
  return EXIT_OK;
}

/* ---- graphpass opt */

typedef struct {
  const char *name;
  int64_t count;
} OpCount;

static int op_count_cmp(const void *a, const void *b) {
  return strcmp(((const OpCount *)a)->name, ((const OpCount *)b)->name);
}

/* "stat external:<compiler> N": global functions with a Compiler attribute, per compiler. */
static void print_external_stats(const GPModule *m) {
  OpCount *ext = gp_malloc(sizeof(OpCount) * (size_t)(m->num_functions ? m->num_functions : 1));
  int32_t k = 0;
  for (int32_t f = 0; f < m->num_functions; f++) {
    const GPAttrValue *c = m->funcs[f]->attrs ? gp_attrs_get(m->funcs[f]->attrs, "Compiler") : NULL;
    if (!c || c->kind != GP_ATTR_STR || !c->s) continue;
    int32_t i = 0;
    while (i < k && strcmp(ext[i].name, c->s) != 0) i++;
    if (i == k) ext[k++] = (OpCount){c->s, 0};
    ext[i].count++;
  }
  qsort(ext, (size_t)k, sizeof *ext, op_count_cmp);
  for (int32_t i = 0; i < k; i++) printf("stat external:%s %lld\n", ext[i].name, (long long)ext[i].count);
  gp_free(ext);
}

static void print_stats(const GPModule *m) {
  int64_t calls = 0, primitive = 0, nodes = 0;
  GPStrMap composites = {0}; /* name -> count */
  int32_t nops = gp_op_count();
  int64_t *per_op = gp_calloc((size_t)(nops ? nops : 1), sizeof(int64_t));
  for (int32_t f = 0; f < m->num_functions; f++) {
    GPExpr **order;
    size_t n;
    if (gp_post_order(&m->funcs[f]->base, &order, &n) != 0) continue;
    for (size_t i = 0; i < n; i++) {
      GPExpr *e = order[i];
      if (gp_kind(e) == GP_TI_OP) continue;
      nodes++;
      if (gp_kind(e) == GP_TI_CALL) {
        calls++;
        GPExpr *op = GP_AS(GPCall, e)->op;
        if (gp_kind(op) == GP_TI_OP) {
          int32_t idx = GP_AS(GPOp, op)->index;
          if (idx >= 0 && idx < nops) per_op[idx]++;
        }
      } else if (gp_kind(e) == GP_TI_FUNCTION_EXPR) {
        const GPAttrs *fa = GP_AS(GPFunctionExpr, e)->attrs;
        const GPAttrValue *v = gp_attrs_get(fa, "Primitive");
        if (v && v->i) primitive++;
        const GPAttrValue *c = gp_attrs_get(fa, "Composite");
        if (c && c->kind == GP_ATTR_STR) {
          intptr_t k = (intptr_t)gp_strmap_get(&composites, c->s);
          gp_strmap_put(&composites, c->s, (void *)(k + 1));
        }
      }
    }
    gp_free(order);
  }
  printf("stat functions %d\n", (int)m->num_functions);
  printf("stat nodes %lld\n", (long long)nodes);
  printf("stat calls %lld\n", (long long)calls);
  printf("stat primitive_functions %lld\n", (long long)primitive);
  print_external_stats(m);
  OpCount *oc = gp_malloc(sizeof(OpCount) * (size_t)(nops ? nops : 1));
  int32_t k = 0;
  for (int32_t i = 0; i < nops; i++)
    if (per_op[i]) oc[k++] = (OpCount){gp_op_at(i)->name, per_op[i]};
  qsort(oc, (size_t)k, sizeof *oc, op_count_cmp);
  for (int32_t i = 0; i < k; i++) printf("stat op:%s %lld\n", oc[i].name, (long long)oc[i].count);
  gp_free(oc);
  oc = gp_malloc(sizeof(OpCount) * (composites.len ? composites.len : 1));
  k = 0;
  for (size_t i = 0; i < composites.cap; i++)
    if (composites.keys[i]) oc[k++] = (OpCount){composites.keys[i], (int64_t)(intptr_t)composites.vals[i]};
  qsort(oc, (size_t)k, sizeof *oc, op_count_cmp);
  for (int32_t i = 0; i < k; i++) printf("stat composite:%s %lld\n", oc[i].name, (long long)oc[i].count);
  gp_free(oc);
  gp_strmap_free(&composites);
  gp_free(per_op);
}

/* Apply a comma-separated list through fn. */
static int each_name(GPPassContext *ctx, const char *list, int (*fn)(GPPassContext *, const char *)) {
  char *copy = gp_strdup(list);
  int rc = 0;
  for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save))
    rc = fn(ctx, tok);
  gp_free(copy);
  return rc;
}

static int add_print_before(GPPassContext *c, const char *n) {
  gp_vec_push(&c->print_before, gp_strdup(n));
  return 0;
}
static int add_print_after(GPPassContext *c, const char *n) {
  gp_vec_push(&c->print_after, gp_strdup(n));
  return 0;
}

/* A tolerance: a finite number >= 0. */
int parse_tolerance(const char *flag, const char *text, double *out) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (*end || end == text || errno || !(v >= 0.0) || v == HUGE_VAL) {
    gp_error_set(GP_ERR_VALUE, "%s '%s' is not a finite number >= 0", flag, text);
    return -1;
  }
  *out = v;
  return 0;
}

/* --target-ops NAME=op,op,...: op attribute target.NAME = true on each op; the NAMEs become
 * AnnotateTarget.targets unless --config set it. */
static int apply_target_ops(GPPassContext *ctx, const char *const *vals, int n) {
  GPBuf names = {0};
  int rc = -1;
  for (int i = 0; i < n; i++) {
    const char *v = vals[i], *eq = strchr(v, '=');
    if (!eq) {
      gp_error_set(GP_ERR_VALUE, "--target-ops '%s': expected NAME=op,op,... (no '=')", v);
      goto done;
    }
    size_t nl = (size_t)(eq - v);
    if (nl == 0) {
      gp_error_set(GP_ERR_VALUE, "--target-ops '%s': the target NAME before '=' is empty", v);
      goto done;
    }
    for (size_t k = 0; k < nl; k++) {
      char c = v[k];
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) {
        gp_error_set(GP_ERR_VALUE, "--target-ops '%s': target '%.*s' is not a name ([A-Za-z0-9_-]+)", v, (int)nl, v);
        goto done;
      }
    }
    if (!eq[1]) {
      gp_error_set(GP_ERR_VALUE, "--target-ops '%s': the op list after '=' is empty", v);
      goto done;
    }
    char key[160];
    snprintf(key, sizeof key, "target.%.*s", (int)(nl < 120 ? nl : 120), v);
    const char *p = eq + 1;
    while (true) {
      const char *c = strchr(p, ',');
      size_t len = c ? (size_t)(c - p) : strlen(p);
      if (len == 0) {
        gp_error_set(GP_ERR_VALUE, "--target-ops '%s': an empty op name in the list", v);
        goto done;
      }
      char *name = gp_strndup(p, len);
      const GPOp *op = gp_op_find(name);
      if (!op) {
        gp_error_set(GP_ERR_VALUE, "--target-ops '%s': unknown op '%s'", v, name);
        gp_free(name);
        goto done;
      }
      gp_free(name);
      GPAny t = gp_any_bool(true);
      if (gp_op_set_attr(op, key, &t, 10) != 0) goto done;
      if (!c) break;
      p = c + 1;
    }
    gp_buf_printf(&names, "%s%.*s", names.len ? "," : "", (int)nl, v);
  }
  rc = 0;
  if (!gp_strmap_get(&ctx->config, "AnnotateTarget.targets"))
    rc = gp_ctx_set_config(ctx, "AnnotateTarget.targets", names.len ? names.data : "");
done:
  gp_buf_free(&names);
  return rc;
}

static int cmd_opt(int argc, char **argv) {
  PluginOpts po = {0};
  ShapeOpts shapes = {0};
  const char *input = NULL, *output = NULL, *pipeline = NULL, *opt_level = NULL, *opt_set = NULL;
  const char *params_out = NULL, *params_in = NULL, *bisect_limit = NULL, *report_path = NULL;
  const char *filter_funcs[32];
  int nfilter = 0;
  bool print_changed = false, bisect_numerics = false;
  const char *rtol = NULL, *atol = NULL, *seed = NULL;
  bool verify_numerics = false;
  const char *disable[32], *require[32], *config[64], *pbefore[32], *pafter[32], *target_ops[32], *cal[256];
  int ndisable = 0, nrequire = 0, nconfig = 0, npbefore = 0, npafter = 0, ntarget_ops = 0, ncal = 0;
  bool time_passes = false, pba = false, paa = false, verify_each = false, explain = false, stats = false,
       types = true;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    bool has = i + 1 < argc;
#define TAKE(var)                                      \
  do {                                                 \
    if (!has) {                                        \
      die_usage("opt: %s needs a value", a);           \
      return EXIT_USAGE;                               \
    }                                                  \
    var = argv[++i];                                   \
  } while (0)
#define TAKE_LIST(arr, n)                              \
  do {                                                 \
    if (!has || n >= (int)GP_ARRAY_LEN(arr)) {         \
      die_usage("opt: %s needs a value", a);           \
      return EXIT_USAGE;                               \
    }                                                  \
    arr[n++] = argv[++i];                              \
  } while (0)
    if (strcmp(a, "-o") == 0) TAKE(output);
    else if (strcmp(a, "--params") == 0) TAKE(params_out);
    else if (strcmp(a, "--input-params") == 0) TAKE(params_in);
    else if (strcmp(a, "--opt-bisect-limit") == 0) TAKE(bisect_limit);
    else if (strcmp(a, "--bisect-numerics") == 0) bisect_numerics = true;
    else if (strcmp(a, "--print-changed") == 0) print_changed = true;
    else if (strcmp(a, "--filter-print-funcs") == 0) TAKE_LIST(filter_funcs, nfilter);
    else if (strcmp(a, "--report") == 0) TAKE(report_path);
    else if (strcmp(a, "--target") == 0) TAKE(po.target);
    else if (strcmp(a, "--opt-level") == 0) TAKE(opt_level);
    else if (strcmp(a, "--pipeline") == 0) TAKE(pipeline);
    else if (strcmp(a, "--opt-set") == 0) TAKE(opt_set);
    else if (strcmp(a, "--disable") == 0) TAKE_LIST(disable, ndisable);
    else if (strcmp(a, "--require") == 0) TAKE_LIST(require, nrequire);
    else if (strcmp(a, "--config") == 0) TAKE_LIST(config, nconfig);
    else if (strcmp(a, "--calibrate") == 0) TAKE_LIST(cal, ncal);
    else if (strcmp(a, "--plugin") == 0) TAKE_LIST(po.plugins, po.nplugins);
    else if (strcmp(a, "--target-ops") == 0) TAKE_LIST(target_ops, ntarget_ops);
    else if (strcmp(a, "--print-before") == 0) TAKE_LIST(pbefore, npbefore);
    else if (strcmp(a, "--print-after") == 0) TAKE_LIST(pafter, npafter);
    else if (strcmp(a, "--time-passes") == 0) time_passes = true;
    else if (strcmp(a, "--print-before-all") == 0) pba = true;
    else if (strcmp(a, "--print-after-all") == 0) paa = true;
    else if (strcmp(a, "--verify-each") == 0) verify_each = true;
    else if (strcmp(a, "--explain") == 0) explain = true;
    else if (strcmp(a, "--verify-numerics") == 0) verify_numerics = true;
    else if (strcmp(a, "--rtol") == 0) TAKE(rtol);
    else if (strcmp(a, "--atol") == 0) TAKE(atol);
    else if (strcmp(a, "--seed") == 0) TAKE(seed);
    else if (strcmp(a, "--shape") == 0) {
      if (!has) {
        die_usage("opt: %s needs a value", a);
        return EXIT_USAGE;
      }
      if (shape_opt_add(&shapes, argv[++i]) != 0) {
        shape_opts_free(&shapes);
        return report(EXIT_USAGE);
      }
    }
    else if (strcmp(a, "--stats") == 0) stats = true;
    else if (strcmp(a, "--no-types") == 0) types = false;
    else if (strcmp(a, "--no-default-plugins") == 0) po.no_default_plugins = true;
    else if (a[0] == '-' && a[1]) {
      die_usage("opt: unknown option '%s'", a);
      return EXIT_USAGE;
    } else if (!input) input = a;
    else {
      die_usage("opt: unexpected argument '%s'", a);
      return EXIT_USAGE;
    }
#undef TAKE
#undef TAKE_LIST
  }
  if (!input) {
    die_usage("opt: %s", "missing INPUT");
    return EXIT_USAGE;
  }
  if (params_out && (!output || strcmp(output, "-") == 0)) {
    die_usage("opt: %s", "--params FILE writes the constants of the output: it needs -o OUT.relay (a file)");
    return EXIT_USAGE;
  }
  if (load_plugins(&po) != 0) return report(EXIT_INPUT);

  GPPassContext *ctx = gp_ctx_new();
  int code = EXIT_OK;
  GPModule *mod = NULL, *out = NULL;
  ViewOpts vo = {.bisect_limit = -1, .print_changed = print_changed, .report = report_path, .types = types,
                 .out = stderr, .filter_print = nfilter > 0, .pba = pba, .paa = paa};
  Views *views = NULL;
  for (int i = 0; i < nfilter; i++) view_opts_add(&vo.filter_funcs, filter_funcs[i]);
  if (bisect_limit) {
    char *end;
    errno = 0;
    long long v = strtoll(bisect_limit, &end, 10);
    if (*end || end == bisect_limit || errno || v < 0) {
      gp_error_set(GP_ERR_VALUE, "--opt-bisect-limit '%s' is not a non-negative integer", bisect_limit);
      goto usage_error;
    }
    vo.bisect_limit = v;
  }
  if (bisect_numerics && bisect_limit) {
    gp_error_set(GP_ERR_VALUE, "--bisect-numerics chooses the limit itself: drop --opt-bisect-limit");
    goto usage_error;
  }
  if (po.target && gp_ctx_set_target(ctx, po.target) != 0) goto usage_error;
  if (opt_set && pipeline) {
    gp_error_set(GP_ERR_VALUE, "--opt-set %s and --pipeline both say what to run; give one", opt_set);
    goto usage_error;
  }
  if (opt_set && gp_ctx_set_opt_set(ctx, opt_set) != 0) goto usage_error;
  if (opt_level && ctx_opt_level_text(ctx, opt_level) != 0) goto usage_error;
  for (int i = 0; i < ndisable; i++)
    if (each_name(ctx, disable[i], gp_ctx_disable) != 0) goto usage_error;
  for (int i = 0; i < nrequire; i++)
    if (each_name(ctx, require[i], gp_ctx_require) != 0) goto usage_error;
  /* with --filter-print-funcs the views instrument prints (only those functions) */
  for (int i = 0; i < npbefore; i++)
    if (nfilter) view_opts_add(&vo.print_before, pbefore[i]);
    else each_name(ctx, pbefore[i], add_print_before);
  for (int i = 0; i < npafter; i++)
    if (nfilter) view_opts_add(&vo.print_after, pafter[i]);
    else each_name(ctx, pafter[i], add_print_after);
  for (size_t i = 0; i < vo.print_before.len + vo.print_after.len; i++) {
    const char *n = i < vo.print_before.len ? vo.print_before.items[i] : vo.print_after.items[i - vo.print_before.len];
    GPPassEntry *e = gp_pass_acquire(n);
    if (!e) {
      gp_error_set(GP_ERR_NOT_FOUND, "--print-%s: no pass named '%s'", i < vo.print_before.len ? "before" : "after", n);
      goto usage_error;
    }
    gp_pass_entry_release(e);
  }
  if (ctx_configs(ctx, config, nconfig) != 0) goto usage_error;
  if (ntarget_ops && apply_target_ops(ctx, target_ops, ntarget_ops) != 0) goto usage_error;
  if (calibrate_config(ctx, cal, ncal) != 0) goto usage_error;
  /* --explain and --time-passes are instruments, registered as a host registers its own. */
  if (explain) {
    GPInstrument ex = gp_instrument_explain(stderr);
    if (gp_ctx_instrument_register(ctx, &ex) != 0) goto usage_error;
  }
  if (time_passes) {
    GPInstrument tm = gp_instrument_timing(stderr, NULL);
    if (gp_ctx_instrument_register(ctx, &tm) != 0) {
      tm.user_deleter(tm.user);
      goto usage_error;
    }
  }
  ctx->print_before_all = pba && !nfilter;
  ctx->print_after_all = paa && !nfilter;
  ctx->verify_each = verify_each; /* which also turns on the immutable-module check */
  ctx->print_types = types;
  ctx->verify_numerics = verify_numerics;
  if ((rtol || atol || seed) && !verify_numerics && !bisect_numerics) {
    gp_error_set(GP_ERR_VALUE, "--rtol, --atol and --seed need --verify-numerics or --bisect-numerics");
    goto usage_error;
  }
  if ((rtol && parse_tolerance("--rtol", rtol, &ctx->rtol) != 0) ||
      (atol && parse_tolerance("--atol", atol, &ctx->atol) != 0))
    goto usage_error;
  if (seed) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(seed, &end, 10);
    if (*end || end == seed || errno || seed[0] == '-') {
      gp_error_set(GP_ERR_VALUE, "--seed '%s' is not a non-negative integer", seed);
      goto usage_error;
    }
    ctx->seed = (uint64_t)v;
  }
  ctx->out = stderr;

  if (shapes.n && !is_onnx_path(input)) { /* the shapes of the inputs the numerics are checked on */
    if (!verify_numerics && !bisect_numerics) {
      gp_error_set(GP_ERR_VALUE, "--shape on Relay text gives the shapes of @main's inputs for --verify-numerics or "
                                 "--bisect-numerics (parameters with ? dims); neither is given");
      goto usage_error;
    }
    if (shape_opts_to_ctx(&shapes, ctx) != 0) goto usage_error;
  }
  mod = load_module_params(input, is_onnx_path(input) ? &shapes : NULL, params_in);
  if (!mod) {
    code = report(EXIT_INPUT);
    goto done;
  }
  if (bisect_numerics) {
    int bc = views_bisect_numerics(mod, pipeline, ctx, &vo, ctx->rtol, ctx->atol, ctx->seed);
    if (bc != 0) {
      code = report(bc);
      goto done;
    }
  }
  if (vo.bisect_limit >= 0 || vo.print_changed || vo.filter_print || vo.report) {
    views = views_new(&vo);
    if (views_register(ctx, views) != 0) goto usage_error;
  }
  out = gp_run_pipeline(mod, pipeline, ctx);
  if (views && vo.report) {
    /* the run's error outlives writing the report */
    char *msg = out ? NULL : gp_strdup(gp_error_message());
    int32_t kind = out ? GP_OK : gp_error_kind();
    bool reg = ctx->registry_error;
    if (views_write_report(views, input) != 0) {
      gp_free(msg);
      code = report(EXIT_INPUT);
      goto done;
    }
    if (msg) gp_error_set(kind, "%s", msg);
    gp_free(msg);
    ctx->registry_error = reg;
  }
  if (!out) {
    if (gp_error_kind() == GP_ERR_PASS && input_type_error(mod)) {
      code = report(EXIT_INPUT);
      goto done;
    }
    code = report(gp_error_kind() == GP_ERR_PASS ? EXIT_PASS : ctx->registry_error ? EXIT_INPUT : EXIT_USAGE);
    goto done;
  }
  if (write_module(out, output, params_out, types) != 0) {
    code = report(EXIT_INPUT);
    goto done;
  }
  if (stats) print_stats(out);
  goto done;
usage_error:
  code = report(EXIT_USAGE);
done:
  gp_release(out);
  gp_release(mod);
  gp_ctx_free(ctx);
  views_free(views);
  view_opts_free(&vo);
  shape_opts_free(&shapes);
  return code;
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    fputs(usage_text, argc < 2 ? stderr : stdout);
    return argc < 2 ? EXIT_USAGE : EXIT_OK;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("graphpass 0.1.0 (ABI %d.%d)\n", GP_ABI_VERSION_MAJOR, GP_ABI_VERSION_MINOR);
    return EXIT_OK;
  }
  gp_ops_init();
  /* --flag=value is --flag value (LLVM's spelling: --print-after=A,B, --opt-bisect-limit=5) */
  char **args = gp_malloc(sizeof(char *) * (size_t)(2 * argc + 1));
  char **owned = gp_malloc(sizeof(char *) * (size_t)(argc + 1));
  int nargs = 0, nowned = 0;
  for (int i = 0; i < argc; i++) {
    char *eq = i >= 2 && strncmp(argv[i], "--", 2) == 0 ? strchr(argv[i], '=') : NULL;
    if (eq && eq > argv[i] + 2) {
      owned[nowned] = gp_strndup(argv[i], (size_t)(eq - argv[i]));
      args[nargs++] = owned[nowned++];
      args[nargs++] = eq + 1;
    } else {
      args[nargs++] = argv[i];
    }
  }
  args[nargs] = NULL;
  argc = nargs;
  argv = args;
  int rc;
  if (strcmp(argv[1], "passes") == 0)
    rc = cmd_passes(argc - 2, argv + 2);
  else if (strcmp(argv[1], "targets") == 0)
    rc = cmd_targets(argc - 2, argv + 2);
  else if (strcmp(argv[1], "opt") == 0)
    rc = cmd_opt(argc - 2, argv + 2);
  else if (strcmp(argv[1], "eval") == 0)
    rc = cmd_eval(argc - 2, argv + 2);
  else if (strcmp(argv[1], "dot") == 0)
    rc = cmd_dot(argc - 2, argv + 2);
  else if (strcmp(argv[1], "onnx-test") == 0)
    rc = cmd_onnx_test(argc - 2, argv + 2);
  else {
    die_usage("unknown command '%s'", argv[1]);
    rc = EXIT_USAGE;
  }
  fflush(stdout);
  shutdown_all();
  for (int i = 0; i < nowned; i++) gp_free(owned[i]);
  gp_free(owned);
  gp_free(args);
  return rc;
}
