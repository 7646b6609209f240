/* onnx_test.c -- `graphpass onnx-test PATH...`: ONNX's conformance tests through the importer,
 * a pass pipeline and the evaluator.
 *
 * A PATH is a test directory (model.onnx, test_data_set_N/input_K.pb and output_K.pb), a
 * directory searched recursively for such directories and for light models, or a light model
 * X.onnx beside X_output_0.pb (its float inputs are arange(prod(S)).reshape(S) / prod(S), unknown
 * dims taken as 1).  One line per test:
 *   PASS name
 *   FAIL name: <why: the output, its largest absolute and relative error; or the error>
 *   SKIP name: <what we do not support>
 * then the skips counted by reason ("skipped: N x <reason>", the reason being the message's
 * last part, without the test's path and node), then "N passed, N failed, N skipped".  Exit
 * status 0 only when nothing failed (2: usage).  Test data of a sequence- or optional-typed
 * graph input or output is a SequenceProto / OptionalProto (the model's declared type says
 * which); its tensors are compared flattened, in order, after the structure (how many tensors
 * each output holds).
 * Outputs are compared as ONNX's runner does: |got - want| <= atol + rtol * |want| with rtol 1e-3,
 * atol 1e-7; dtype and shape must match exactly.  --rtol / --atol set the tolerance of every
 * comparison the run makes: with the expected outputs, and (--verify-numerics) each pass's
 * numbers with the graph's before it (default rtol 1e-4, atol 1e-5), as a model test of ONNX's
 * may: a deep network's outputs near 0 differ between runtimes, and between orders of the same
 * float sums, by more than 1e-7. */
#include "cli.h"
#include "../eval/eval.h"
#include "../registry/registry.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { OT_OK = 0, OT_FAIL = 1, OT_USAGE = 2 };
enum { R_PASS, R_FAIL, R_SKIP };

typedef struct {
  const char *pipeline, *target;
  int32_t opt_level; /* -1: the context's default */
  bool verify_numerics;
  double rtol, atol;
  bool rtol_set, atol_set; /* given: they apply to --verify-numerics too */
  int counts[3];
  GPStrMap reasons; /* skip reason -> count (as a pointer-sized integer) */
  GPVec reason_keys; /* the reasons in first-seen order (borrowed from the map's keys) */
} Run;

typedef struct {
  char **items;
  size_t n, cap;
} StrList;

static void sl_push(StrList *l, char *s) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 16;
    l->items = gp_realloc(l->items, l->cap * sizeof *l->items);
  }
  l->items[l->n++] = s;
}

static void sl_free(StrList *l) {
  for (size_t i = 0; i < l->n; i++) gp_free(l->items[i]);
  gp_free(l->items);
  *l = (StrList){0};
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char *join(const char *dir, const char *name) {
  GPBuf b = {0};
  gp_buf_printf(&b, "%s/%s", dir, name);
  return gp_buf_take(&b);
}

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Sorted entries of dir (without . and ..), or -1 + GP_ERR_IO. */
static int list_dir(const char *dir, StrList *out) {
  DIR *d = opendir(dir);
  if (!d) {
    gp_error_set(GP_ERR_IO, "%s: cannot read directory: %s", dir, strerror(errno));
    return -1;
  }
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) sl_push(out, gp_strdup(e->d_name));
  closedir(d);
  if (out->n) qsort(out->items, out->n, sizeof *out->items, cmp_str);
  return 0;
}

/* "X_output_0.pb" beside "X.onnx", gp_malloc'd, or NULL when there is none. */
static char *light_output(const char *model) {
  GPBuf b = {0};
  gp_buf_put(&b, model, strlen(model) - 5);
  gp_buf_puts(&b, "_output_0.pb");
  char *p = gp_buf_take(&b);
  if (is_file(p)) return p;
  gp_free(p);
  return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Running one test                                                                            */

/* The reason a skip message gives: its last part after ": " (the path, the node and the
 * input it names stripped). */
static const char *skip_reason(const char *why) {
  const char *r = why;
  for (const char *p = strstr(why, ": "); p; p = strstr(p + 2, ": ")) r = p + 2;
  return r;
}

static void result(Run *r, int kind, const char *name, const char *why) {
  static const char *const tag[] = {"PASS", "FAIL", "SKIP"};
  r->counts[kind]++;
  if (kind == R_SKIP) {
    const char *reason = skip_reason(why ? why : "no reason given");
    intptr_t c = (intptr_t)gp_strmap_get(&r->reasons, reason);
    gp_strmap_put(&r->reasons, reason, (void *)(c + 1));
    if (!c) gp_vec_push(&r->reason_keys, gp_strdup(reason));
  }
  if (why) printf("%s %s: %s\n", tag[kind], name, why);
  else printf("%s %s\n", tag[kind], name);
  fflush(stdout);
}

/* The pending error as a result: SKIP when it says we do not support something, else FAIL. */
static void result_error(Run *r, const char *name) {
  int kind = gp_error_kind() == GP_ERR_UNSUPPORTED ? R_SKIP : R_FAIL;
  const char *msg = gp_error_message();
  /* A pass that failed on something unsupported says so in its message. */
  if (kind == R_FAIL && gp_error_kind() == GP_ERR_PASS && strstr(msg, "is not supported")) kind = R_SKIP;
  result(r, kind, name, *msg ? msg : "failed without a message");
  gp_error_clear();
}

/* The test data of one side (input_K.pb or output_K.pb, K = 0, 1, ...), each read as the
 * model declares it (kinds[K]; a tensor past the declared ones). */
typedef struct Values {
  int32_t n;
  GPOnnxValue **v;
  int32_t nflat;
  GPTensor **flat;         /* the tensors of all values in order (borrowed from v) */
  GPTensor **tensors;      /* per value: its tensor, or NULL for a sequence / optional */
  const GPOnnxValue **structured; /* per value: NULL for a tensor, else the value */
} Values;

static void values_free(Values *vs) {
  for (int32_t i = 0; i < vs->n; i++) gp_onnx_value_free(vs->v[i]);
  gp_free(vs->v);
  gp_free(vs->flat);
  gp_free(vs->tensors);
  gp_free(vs->structured);
  *vs = (Values){0};
}

static int read_values(const char *dir, const char *prefix, const GPOnnxValueKind *kinds, int32_t nkinds, Values *vs) {
  *vs = (Values){0};
  for (int k = 0;; k++) {
    GPBuf b = {0};
    gp_buf_printf(&b, "%s/%s_%d.pb", dir, prefix, k);
    char *p = gp_buf_take(&b);
    if (!is_file(p)) {
      gp_free(p);
      break;
    }
    GPOnnxValue *v = gp_onnx_read_value_file(p, k < nkinds ? kinds[k] : GP_ONNX_TENSOR);
    gp_free(p);
    if (!v) {
      values_free(vs);
      return -1;
    }
    vs->v = gp_realloc(vs->v, (size_t)(k + 1) * sizeof *vs->v);
    vs->v[vs->n++] = v;
  }
  int32_t total = 0;
  for (int32_t i = 0; i < vs->n; i++) total = gp_onnx_value_leaves(vs->v[i], NULL, total);
  size_t n1 = (size_t)(vs->n ? vs->n : 1);
  vs->flat = gp_malloc((size_t)(total ? total : 1) * sizeof *vs->flat);
  vs->tensors = gp_calloc(n1, sizeof *vs->tensors);
  vs->structured = gp_calloc(n1, sizeof *vs->structured);
  for (int32_t i = 0; i < vs->n; i++) {
    vs->nflat = gp_onnx_value_leaves(vs->v[i], vs->flat, vs->nflat);
    if (vs->v[i]->kind == GP_ONNX_TENSOR) vs->tensors[i] = vs->v[i]->tensor;
    else vs->structured[i] = vs->v[i];
  }
  return 0;
}

static void free_tensors(GPTensor **t, int32_t n) {
  for (int32_t i = 0; i < n; i++) gp_release(t[i]);
  gp_free(t);
}

/* Tensors a value of type t holds (a tuple's fields flattened). */
static int32_t type_leaves(const GPType *t) {
  GPVec st = {0};
  int32_t n = 0;
  gp_vec_push(&st, (void *)t);
  while (st.len) {
    const GPType *x = gp_vec_pop(&st);
    if (x->kind == GP_TYPE_TUPLE)
      for (int32_t i = 0; i < x->n; i++) gp_vec_push(&st, (void *)x->tuple.fields[i]);
    else n++;
  }
  gp_vec_free(&st);
  return n;
}

static GPPassContext *make_ctx(const Run *r) {
  GPPassContext *ctx = gp_ctx_new();
  if (r->target && gp_ctx_set_target(ctx, r->target) != 0) {
    gp_ctx_free(ctx);
    return NULL;
  }
  if (r->opt_level >= 0 && gp_ctx_set_opt_level(ctx, r->opt_level) != 0) {
    gp_ctx_free(ctx);
    return NULL;
  }
  ctx->verify_numerics = r->verify_numerics;
  if (r->rtol_set) ctx->rtol = r->rtol;
  if (r->atol_set) ctx->atol = r->atol;
  ctx->out = stderr;
  return ctx;
}

static void fmt_shape(GPBuf *b, const GPTensor *t) {
  gp_buf_putc(b, '(');
  for (int32_t i = 0; i < t->dl.ndim; i++) gp_buf_printf(b, "%s%lld", i ? ", " : "", (long long)t->dl.shape[i]);
  gp_buf_putc(b, ')');
}

/* Import (with the inputs' values), optimize, evaluate, compare.  `only_first` compares output
 * 0 only (light models).  in: the test's inputs; want: the expected outputs, flattened, and
 * per output how many tensors it holds (want_leaves, nouts of them; NULL: not checked). */
static void run_one(Run *r, const char *name, const char *model, const Values *in, GPTensor **want, int32_t nwant,
                    const int32_t *want_leaves, int32_t nouts, bool only_first) {
  GPOnnxOptions o = {.nvalues = in->n, .values = in->tensors, .structured = in->structured};
  int32_t nin = in->nflat;
  GPTensor *const *ins = in->flat;
  GPModule *m = gp_onnx_import_file(model, &o), *opt = NULL;
  GPTensor **got = NULL;
  int32_t ngot = 0;
  GPPassContext *ctx = NULL;
  if (!m) goto error;
  GPFunctionExpr *fn = gp_module_lookup(m, "main");
  if (fn->nparams != in->n) {
    gp_error_set(GP_ERR_VALUE, "the model has %d inputs that are not initializers, the test gives %d",
                 (int)fn->nparams, (int)in->n);
    goto error;
  }
  if (want_leaves) {
    /* the structure: each output holds as many tensors as the test's (a sequence's length,
     * whether an optional holds a value) */
    const GPType *rt = fn->ret_type ? fn->ret_type : fn->body->checked_type;
    for (int32_t k = 0; rt && k < nouts; k++) {
      const GPType *ot = nouts == 1 ? rt : rt->kind == GP_TYPE_TUPLE && k < rt->n ? rt->tuple.fields[k] : NULL;
      int32_t have = ot ? type_leaves(ot) : -1;
      if (have != want_leaves[k]) {
        GPBuf b = {0};
        gp_buf_printf(&b, "output %d holds %d tensors, the test expects %d", (int)k, (int)have, (int)want_leaves[k]);
        result(r, R_FAIL, name, b.data);
        gp_buf_free(&b);
        goto done;
      }
    }
  }
  ctx = make_ctx(r);
  if (!ctx) goto error;
  opt = gp_run_pipeline(m, r->pipeline, ctx);
  if (!opt) goto error;
  if (gp_eval_function(opt, "main", nin, ins, &got, &ngot, NULL) != 0) goto error;
  if (!only_first && ngot != nwant) {
    GPBuf b = {0};
    gp_buf_printf(&b, "%d outputs, the test expects %d", (int)ngot, (int)nwant);
    result(r, R_FAIL, name, b.data);
    gp_buf_free(&b);
    goto done;
  }
  for (int32_t i = 0; i < (only_first ? 1 : nwant) && i < ngot; i++) {
    GPBuf b = {0};
    char d1[24], d2[24];
    if (!gp_dtype_eq(got[i]->dl.dtype, want[i]->dl.dtype)) {
      gp_buf_printf(&b, "output %d: dtype %s, expected %s", (int)i, gp_dtype_str(got[i]->dl.dtype, d1),
                    gp_dtype_str(want[i]->dl.dtype, d2));
    } else {
      bool same = got[i]->dl.ndim == want[i]->dl.ndim;
      for (int32_t d = 0; same && d < got[i]->dl.ndim; d++) same = got[i]->dl.shape[d] == want[i]->dl.shape[d];
      if (!same) {
        gp_buf_printf(&b, "output %d: shape ", (int)i);
        fmt_shape(&b, got[i]);
        gp_buf_puts(&b, ", expected ");
        fmt_shape(&b, want[i]);
      } else {
        double ma, mr;
        int64_t worst;
        int ok = gp_tensor_allclose(got[i], want[i], r->rtol, r->atol, &ma, &mr, &worst);
        if (ok < 0) {
          gp_buf_printf(&b, "output %d: %s", (int)i, gp_error_message());
          gp_error_clear();
        } else if (!ok) {
          gp_buf_printf(&b, "output %d: max abs error %.3g, max rel error %.3g (element %lld: got %.9g, expected %.9g)",
                        (int)i, ma, mr, (long long)worst, gp_tensor_get_f64(got[i], worst),
                        gp_tensor_get_f64(want[i], worst));
        }
      }
    }
    if (b.len) {
      result(r, R_FAIL, name, b.data);
      gp_buf_free(&b);
      goto done;
    }
    gp_buf_free(&b);
  }
  result(r, R_PASS, name, NULL);
  goto done;
error:
  result_error(r, name);
done:
  free_tensors(got, ngot);
  gp_release(opt);
  gp_release(m);
  if (ctx) gp_ctx_free(ctx);
}

static void run_test_dir(Run *r, const char *dir) {
  const char *name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
  char *model = join(dir, "model.onnx");
  StrList entries = {0};
  GPOnnxValueKind *ikinds = NULL, *okinds = NULL;
  int32_t nik = 0, nok = 0;
  if (list_dir(dir, &entries) != 0 || gp_onnx_io_kinds(model, &nik, &ikinds, &nok, &okinds) != 0) {
    result_error(r, name);
    sl_free(&entries);
    gp_free(model);
    return;
  }
  int sets = 0;
  for (size_t i = 0; i < entries.n; i++) {
    if (strncmp(entries.items[i], "test_data_set_", 14) != 0) continue;
    char *set = join(dir, entries.items[i]);
    Values ins = {0}, outs = {0};
    GPBuf tname = {0};
    gp_buf_puts(&tname, name);
    if (sets) gp_buf_printf(&tname, "/%s", entries.items[i]);
    if (read_values(set, "input", ikinds, nik, &ins) != 0 || read_values(set, "output", okinds, nok, &outs) != 0) {
      /* Test data of a kind we do not read (string tensors): when the model itself is
       * something we do not support, that is the reason to give.  Malformed data fails. */
      char *why = gp_strdup(gp_error_message());
      int32_t kind = gp_error_kind();
      if (kind == GP_ERR_UNSUPPORTED) {
        GPModule *probe = gp_onnx_import_file(model, NULL);
        if (probe || gp_error_kind() != GP_ERR_UNSUPPORTED) gp_error_set(kind, "%s", why);
        gp_release(probe);
      }
      gp_free(why);
      result_error(r, tname.data);
    } else {
      int32_t *leaves = gp_malloc((size_t)(outs.n ? outs.n : 1) * sizeof *leaves);
      for (int32_t k = 0; k < outs.n; k++) leaves[k] = gp_onnx_value_leaves(outs.v[k], NULL, 0);
      run_one(r, tname.data, model, &ins, outs.flat, outs.nflat, leaves, outs.n, false);
      gp_free(leaves);
    }
    sets++;
    values_free(&ins);
    values_free(&outs);
    gp_buf_free(&tname);
    gp_free(set);
  }
  if (!sets) {
    gp_error_set(GP_ERR_VALUE, "%s: no test_data_set_* directory", dir);
    result_error(r, name);
  }
  gp_free(ikinds);
  gp_free(okinds);
  sl_free(&entries);
  gp_free(model);
}

/* A light model: inputs made as ONNX's runner makes them. */
static void run_light(Run *r, const char *model, const char *expected) {
  const char *base = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
  char *name = gp_strndup(base, strlen(base) - 5);
  GPTensor *want = NULL, **ins = NULL;
  int32_t nin = 0;
  GPModule *m = gp_onnx_import_file(model, NULL);
  if (!m) goto error;
  want = gp_onnx_read_tensor_file(expected, NULL);
  if (!want) goto error;
  GPFunctionExpr *fn = gp_module_lookup(m, "main");
  nin = fn->nparams;
  ins = gp_calloc((size_t)(nin ? nin : 1), sizeof *ins);
  for (int32_t i = 0; i < nin; i++) {
    const GPType *t = fn->params[i]->base.checked_type;
    if (t->kind != GP_TYPE_TENSOR || t->tensor.dtype.code != kDLFloat || t->tensor.dtype.bits != 32) {
      gp_error_set(GP_ERR_UNSUPPORTED, "input %%%s is not float32 (the runner makes float inputs only)",
                   fn->params[i]->name);
      goto error;
    }
    int64_t shape[64], total = 1;
    for (int32_t d = 0; d < t->n; d++) {
      shape[d] = t->tensor.shape[d] == GP_DIM_ANY ? 1 : t->tensor.shape[d];
      total *= shape[d];
    }
    ins[i] = gp_tensor_alloc(GP_DT_F32, t->n, shape, true);
    float *p = ins[i]->dl.data;
    for (int64_t k = 0; k < total; k++) p[k] = (float)k / (float)total;
  }
  gp_release(m);
  m = NULL;
  {
    GPTensor **tens = gp_calloc((size_t)(nin ? nin : 1), sizeof *tens);
    for (int32_t i = 0; i < nin; i++) tens[i] = ins[i];
    Values in = {.n = nin, .nflat = nin, .flat = ins, .tensors = tens};
    run_one(r, name, model, &in, &want, 1, NULL, 1, true);
    gp_free(tens);
  }
  goto done;
error:
  result_error(r, name);
done:
  if (ins)
    for (int32_t i = 0; i < nin; i++) gp_release(ins[i]);
  gp_free(ins);
  gp_release(want);
  gp_release(m);
  gp_free(name);
}

/* A PATH: a test directory, a light model, or a directory searched recursively (explicit
 * stack; entries in sorted order). */
static int run_path(Run *r, const char *path) {
  StrList stack = {0};
  char *top_path = gp_strdup(path);
  for (size_t n = strlen(top_path); n > 1 && top_path[n - 1] == '/'; n--) top_path[n - 1] = 0;
  sl_push(&stack, top_path);
  bool top = true;
  int rc = 0;
  while (stack.n) {
    char *p = stack.items[--stack.n];
    if (ends_with(p, ".onnx") && is_file(p)) {
      char *exp = light_output(p);
      if (exp) run_light(r, p, exp);
      else if (top) {
        gp_error_set(GP_ERR_VALUE, "%s: a model without %.*s_output_0.pb beside it", p, (int)(strlen(p) - 5), p);
        rc = -1;
      }
      gp_free(exp);
    } else if (is_dir(p)) {
      char *model = join(p, "model.onnx");
      bool test = is_file(model);
      gp_free(model);
      if (test) {
        run_test_dir(r, p);
      } else {
        StrList entries = {0};
        if (list_dir(p, &entries) != 0) {
          rc = -1;
        } else {
          for (size_t i = entries.n; i-- > 0;) { /* pushed in reverse: popped in order */
            char *c = join(p, entries.items[i]);
            if (is_dir(c) || ends_with(c, ".onnx")) sl_push(&stack, c);
            else gp_free(c);
          }
        }
        sl_free(&entries);
      }
    } else if (top) {
      gp_error_set(GP_ERR_IO, "%s: not a test directory, a directory of tests or a model X.onnx with "
                   "X_output_0.pb", p);
      rc = -1;
    }
    gp_free(p);
    top = false;
    if (rc) break;
  }
  sl_free(&stack);
  return rc;
}

static void print_reasons(Run *r);

int cmd_onnx_test(int argc, char **argv) {
  PluginOpts po = {0};
  Run r = {.opt_level = -1, .rtol = 1e-3, .atol = 1e-7};
  const char *paths[256];
  int npaths = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    bool has = i + 1 < argc;
    if (strcmp(a, "--pipeline") == 0 || strcmp(a, "--target") == 0 || strcmp(a, "--opt-level") == 0 ||
        strcmp(a, "--plugin") == 0 || strcmp(a, "--rtol") == 0 || strcmp(a, "--atol") == 0) {
      if (!has) {
        die_usage("onnx-test: %s needs a value", a);
        return OT_USAGE;
      }
      const char *v = argv[++i];
      if (strcmp(a, "--pipeline") == 0) r.pipeline = v;
      else if (strcmp(a, "--target") == 0) r.target = po.target = v;
      else if (strcmp(a, "--rtol") == 0 || strcmp(a, "--atol") == 0) {
        bool rel = a[2] == 'r';
        if (parse_tolerance(a, v, rel ? &r.rtol : &r.atol) != 0) {
          die_usage("onnx-test: %s", gp_error_message());
          return OT_USAGE;
        }
        *(rel ? &r.rtol_set : &r.atol_set) = true;
      } else if (strcmp(a, "--plugin") == 0) {
        if (po.nplugins == (int)GP_ARRAY_LEN(po.plugins)) {
          die_usage("onnx-test: too many --plugin options (at most %s)", "64");
          return OT_USAGE;
        }
        po.plugins[po.nplugins++] = v;
      } else {
        char *end;
        long lvl = strtol(v, &end, 10);
        if (!*v || *end || lvl < 0 || lvl > INT32_MAX) { /* the context checks the range */
          die_usage("onnx-test: --opt-level '%s' is not a non-negative integer", v);
          return OT_USAGE;
        }
        r.opt_level = (int32_t)lvl;
      }
    } else if (strcmp(a, "--verify-numerics") == 0) {
      r.verify_numerics = true;
    } else if (strcmp(a, "--no-default-plugins") == 0) {
      po.no_default_plugins = true;
    } else if (a[0] == '-' && a[1]) {
      die_usage("onnx-test: unknown option '%s'", a);
      return OT_USAGE;
    } else if (npaths == (int)GP_ARRAY_LEN(paths)) {
      die_usage("onnx-test: too many paths (at most %s)", "256");
      return OT_USAGE;
    } else {
      paths[npaths++] = a;
    }
  }
  if (!npaths) {
    die_usage("onnx-test: %s", "missing PATH");
    return OT_USAGE;
  }
  if (load_plugins(&po) != 0) return report(OT_USAGE);
  for (int i = 0; i < npaths; i++)
    if (run_path(&r, paths[i]) != 0) {
      int rc = report(OT_USAGE);
      print_reasons(&r);
      return rc;
    }
  print_reasons(&r);
  printf("%d passed, %d failed, %d skipped\n", r.counts[R_PASS], r.counts[R_FAIL], r.counts[R_SKIP]);
  return r.counts[R_FAIL] ? OT_FAIL : OT_OK;
}

/* The skips by reason, most frequent first (ties in first-seen order); frees the tally. */
static void print_reasons(Run *rp) {
  Run r = *rp;
  size_t nr = r.reason_keys.len;
  for (size_t i = 1; i < nr; i++)
    for (size_t j = i; j > 0; j--) {
      intptr_t a = (intptr_t)gp_strmap_get(&r.reasons, r.reason_keys.items[j - 1]);
      intptr_t b = (intptr_t)gp_strmap_get(&r.reasons, r.reason_keys.items[j]);
      if (a >= b) break;
      void *t = r.reason_keys.items[j - 1];
      r.reason_keys.items[j - 1] = r.reason_keys.items[j];
      r.reason_keys.items[j] = t;
    }
  for (size_t i = 0; i < nr; i++) {
    printf("skipped: %d x %s\n", (int)(intptr_t)gp_strmap_get(&r.reasons, r.reason_keys.items[i]),
           (const char *)r.reason_keys.items[i]);
    gp_free(r.reason_keys.items[i]);
  }
  gp_vec_free(&r.reason_keys);
  gp_strmap_free(&r.reasons);
  rp->reason_keys = (GPVec){0};
  rp->reasons = (GPStrMap){0};
}
