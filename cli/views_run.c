/* views_run.c -- what `graphpass opt` shows of a run, built on the ABI 1.3 instruments (one
 * instrument, "graphpass.views", registered on the run's context like any host's):
 *
 *  --opt-bisect-limit N   every pass that would run is numbered (K = 1, 2, ... across the whole
 *                         pipeline: required passes and the runs a pass starts itself, such as
 *                         FoldScaleAxis's FoldConstant, included); runs after N are vetoed.
 *                         "BISECT: running pass (K) NAME on @fn" / "BISECT: NOT running pass
 *                         (K) NAME on @fn" on stderr, as LLVM's -opt-bisect-limit prints.
 *  --bisect-numerics      binary search over that limit for the first run after which @main's
 *                         outputs leave the tolerance of --verify-numerics (on the final module
 *                         of each trial only), naming it.
 *  --print-changed        after a pass whose result differs structurally from its input: a
 *                         unified diff of each changed function (each printed on its own, so
 *                         temporaries are numbered per function and an unrelated function's
 *                         renumbering is no change).
 *  --print-before/after(-all) with --filter-print-funcs=f,g: only those functions.
 *  --report FILE.html     the run's pipeline, per-pass times, reasons and notes, the op
 *                         histogram before and after, the diffs and the graph of @main after
 *                         each changed pass (SVG from Graphviz's dot when installed). */
#include "../eval/eval.h"
#include "../registry/registry.h"
#include "../views/views.h"
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_DEPTH 64
#define DOT_MAX_NODES 20000

typedef struct PassRec {
  char *name;
  int64_t run; /* K, 0 when it did not run */
  int32_t depth;
  bool ran, changed, failed;
  char *reason, *notes, *diff, *svg, *svg_note;
  double ms;
} PassRec;

struct Views {
  ViewOpts o;
  int64_t count;                /* runs numbered so far */
  int64_t k_at[MAX_DEPTH];      /* the K of the item running at each depth */
  GPVec recs;                   /* PassRec* (report, bisect names) */
  char *pipeline, *target, *status;
  int32_t opt_level;
  double total_ms;
  GPStrMap ops_before, ops_after; /* op name -> count */
  int have_dot;                 /* -1 unknown, 0 no, 1 yes */
};

/* ---- helpers */

static bool in_list(const GPVec *v, const char *s) {
  for (size_t i = 0; i < v->len; i++)
    if (strcmp(v->items[i], s) == 0) return true;
  return false;
}

static void split_into(GPVec *v, const char *list) {
  const char *p = list;
  while (*p) {
    const char *c = strchr(p, ',');
    size_t n = c ? (size_t)(c - p) : strlen(p);
    if (n && p[0] == '@') p++, n--;
    if (n) gp_vec_push(v, gp_strndup(p, n));
    p += n + (c ? 1 : 0);
    if (!c) break;
  }
}

void view_opts_free(ViewOpts *o) {
  GPVec *vs[3] = {&o->filter_funcs, &o->print_before, &o->print_after};
  for (int k = 0; k < 3; k++) {
    for (size_t i = 0; i < vs[k]->len; i++) gp_free(vs[k]->items[i]);
    gp_vec_free(vs[k]);
  }
}

void view_opts_add(GPVec *v, const char *list) { split_into(v, list); }

/* "@main" or "@main and 3 more functions" */
static void put_fns(FILE *f, const GPModule *m) {
  if (!m || !m->num_functions) {
    fputs("an empty module", f);
    return;
  }
  int32_t at = gp_module_find(m, "main");
  fprintf(f, "@%s", m->gvars[at >= 0 ? at : 0]->name);
  if (m->num_functions > 1)
    fprintf(f, " and %d more function%s", (int)m->num_functions - 1, m->num_functions > 2 ? "s" : "");
}

/* The text of one function printed as a module of its own (temporaries numbered from 0). */
static char *func_text(const char *name, GPFunctionExpr *fn, bool types) {
  GPModule *m = gp_module_new(NULL);
  if (gp_module_add(m, name, fn, false) != 0) {
    gp_release(m);
    return NULL;
  }
  char *t = gp_print(m, types ? GP_PRINT_TYPES : 0);
  gp_release(m);
  /* without the version line of the one-function module */
  char *nl = t && strncmp(t, "#[version", 9) == 0 ? strchr(t, '\n') : NULL;
  if (nl) memmove(t, nl + 1, strlen(nl + 1) + 1);
  return t;
}

static bool wanted(const ViewOpts *o, const char *fn) { return !o->filter_funcs.len || in_list(&o->filter_funcs, fn); }

/* Unified diffs of the functions that differ structurally between a and b. */
static void module_diff(GPBuf *out, const GPModule *a, const GPModule *b, const char *label, const ViewOpts *o) {
  const GPModule *ms[2] = {a, b};
  for (int side = 0; side < 2; side++) {
    const GPModule *m = ms[side];
    for (int32_t i = 0; m && i < m->num_functions; i++) {
      const char *name = m->gvars[i]->name;
      GPFunctionExpr *fa = a ? gp_module_lookup(a, name) : NULL, *fb = b ? gp_module_lookup(b, name) : NULL;
      if (side == 1 && fa) continue; /* done from a's side */
      if (!wanted(o, name) || fa == fb || (fa && fb && gp_expr_equal(&fa->base, &fb->base))) continue;
      char *ta = fa ? func_text(name, fa, o->types) : NULL, *tb = fb ? func_text(name, fb, o->types) : NULL;
      if ((fa && !ta) || (fb && !tb)) {
        gp_error_clear();
        gp_buf_printf(out, "(@%s could not be printed)\n", name);
      } else {
        GPBuf na = {0}, nb = {0};
        if (fa) gp_buf_printf(&na, "@%s before %s", name, label);
        else gp_buf_puts(&na, "/dev/null");
        if (fb) gp_buf_printf(&nb, "@%s after %s", name, label);
        else gp_buf_puts(&nb, "/dev/null");
        size_t before = out->len;
        gp_diff_unified(out, ta ? ta : "", ta ? strlen(ta) : 0, tb ? tb : "", tb ? strlen(tb) : 0, na.data, nb.data, 3);
        if (out->len == before)
          gp_buf_printf(out, "--- %s\n+++ %s\n(the text is the same: constant values changed)\n", na.data, nb.data);
        gp_buf_free(&na);
        gp_buf_free(&nb);
      }
      gp_free(ta);
      gp_free(tb);
    }
  }
}

static void print_funcs(FILE *f, const GPModule *m, const char *when, const char *name, int64_t k, const ViewOpts *o) {
  fprintf(f, "; IR %s (%lld) %s:\n", when, (long long)k, name);
  for (int32_t i = 0; i < m->num_functions; i++) {
    if (!wanted(o, m->gvars[i]->name)) continue;
    char *t = func_text(m->gvars[i]->name, m->funcs[i], o->types);
    if (!t) {
      gp_error_clear();
      continue;
    }
    fputs(t, f);
    gp_free(t);
  }
  fflush(f);
}

static void histogram(GPStrMap *h, const GPModule *m) {
  for (int32_t f = 0; m && f < m->num_functions; f++) {
    GPExpr **order;
    size_t n;
    if (gp_post_order(&m->funcs[f]->base, &order, &n) != 0) {
      gp_error_clear();
      continue;
    }
    for (size_t i = 0; i < n; i++) {
      if (gp_kind(order[i]) != GP_TI_CALL) continue;
      GPExpr *op = GP_AS(GPCall, order[i])->op;
      if (gp_kind(op) != GP_TI_OP) continue;
      const char *name = GP_AS(GPOp, op)->name;
      gp_strmap_put(h, name, (void *)((intptr_t)gp_strmap_get(h, name) + 1));
    }
    gp_free(order);
  }
}

static bool have_dot(Views *v) {
  if (v->have_dot < 0) v->have_dot = system("command -v dot >/dev/null 2>&1") == 0;
  return v->have_dot == 1;
}

/* The SVG of @main (else the first function) of m, typed for the shapes; or why not. */
static void draw(Views *v, const GPModule *m, PassRec *r) {
  if (!have_dot(v)) {
    r->svg_note = gp_strdup("Graphviz's dot is not installed (sh scripts/install-deps.sh installs it)");
    return;
  }
  if (!m || !m->num_functions) return;
  GPModule *typed = gp_infer_types(m);
  if (!typed) gp_error_clear();
  const GPModule *use = typed ? typed : m;
  int32_t at = gp_module_find(use, "main");
  if (at < 0) at = 0;
  GPExpr **order;
  size_t n = 0;
  if (gp_post_order(&use->funcs[at]->base, &order, &n) == 0) gp_free(order);
  else gp_error_clear();
  if (n > DOT_MAX_NODES) {
    GPBuf b = {0};
    gp_buf_printf(&b, "@%s has %zu nodes, too many to draw here (graphpass dot draws it)", use->gvars[at]->name, n);
    r->svg_note = gp_buf_take(&b);
    gp_release(typed);
    return;
  }
  GPBuf dot = {0};
  char path[] = "/tmp/gp_report_XXXXXX";
  int fd = -1;
  if (gp_dot_function(&dot, use->funcs[at], use->gvars[at]->name) != 0 || (fd = mkstemp(path)) < 0) {
    gp_error_clear();
    r->svg_note = gp_strdup("the graph could not be made");
  } else {
    size_t put = 0;
    while (put < dot.len) {
      ssize_t w = write(fd, dot.data + put, dot.len - put);
      if (w <= 0) break;
      put += (size_t)w;
    }
    close(fd);
    GPBuf cmd = {0}, svg = {0};
    /* Bounded layout effort (network simplex and crossing minimization iterations): graphs
     * with many-consumer nodes (after EliminateCommonSubexpr) otherwise take Graphviz minutes;
     * a graph still not laid out after a minute is left out with a note. */
    gp_buf_printf(&cmd, "timeout 60 dot -Tsvg -Gnslimit=2 -Gnslimit1=2 -Gmclimit=0.5 '%s' 2>/dev/null", path);
    FILE *p = popen(cmd.data, "r");
    if (p) {
      char chunk[65536];
      size_t k;
      while ((k = fread(chunk, 1, sizeof chunk, p)) > 0) gp_buf_put(&svg, chunk, k);
      int st = pclose(p);
      if (st == 0 && svg.len) r->svg = gp_buf_take(&svg);
    }
    if (!r->svg) r->svg_note = gp_strdup("Graphviz's dot failed on this graph or took more than a minute");
    gp_buf_free(&svg);
    gp_buf_free(&cmd);
    unlink(path);
  }
  gp_buf_free(&dot);
  gp_release(typed);
}

/* ---- the instrument */

static int v_run_begin(void *user, const GPRunEvent *ev) {
  Views *v = user;
  if (ev->depth) return 0;
  gp_free(v->pipeline);
  gp_free(v->target);
  v->pipeline = gp_strdup(ev->pipeline ? ev->pipeline : "");
  v->target = gp_strdup(ev->target ? ev->target : "");
  v->opt_level = ev->opt_level;
  if (v->o.report) histogram(&v->ops_before, ev->module);
  return 0;
}

static int v_before(void *user, const GPPassEvent *ev) {
  Views *v = user;
  if (!ev->ran) return 0;
  int64_t k = ++v->count;
  if (ev->depth >= 0 && ev->depth < MAX_DEPTH) v->k_at[ev->depth] = k;
  if (v->o.bisect_limit >= 0) {
    bool skip = k > v->o.bisect_limit;
    if (!v->o.quiet) {
      fprintf(v->o.out, "BISECT: %srunning pass (%lld) %s on ", skip ? "NOT " : "", (long long)k, ev->pass_name);
      put_fns(v->o.out, ev->module);
      fputc('\n', v->o.out);
      fflush(v->o.out);
    }
    if (skip) return 1;
  }
  if (v->o.filter_print && (v->o.pba || in_list(&v->o.print_before, ev->pass_name)))
    print_funcs(v->o.out, ev->module, "before", ev->pass_name, k, &v->o);
  return 0;
}

static int v_after(void *user, const GPPassEvent *ev) {
  Views *v = user;
  int64_t k = ev->depth >= 0 && ev->depth < MAX_DEPTH ? v->k_at[ev->depth] : 0;
  bool ran = ev->ran != 0;
  if (!ran) k = 0;
  PassRec *r = NULL;
  if (v->o.report || v->o.keep_names) {
    r = gp_calloc(1, sizeof *r);
    r->name = gp_strdup(ev->pass_name);
    r->run = ran ? k : 0;
    r->depth = ev->depth;
    r->ran = ran;
    r->failed = ev->failed != 0;
    r->ms = (double)ev->elapsed_ns / 1e6;
    if (ev->reason) r->reason = gp_strdup(ev->reason);
    if (ev->num_notes) {
      GPBuf b = {0};
      for (int32_t i = 0; i < ev->num_notes; i++) gp_buf_printf(&b, "%s%s", i ? "\n" : "", ev->notes[i]);
      r->notes = gp_buf_take(&b);
    }
    gp_vec_push(&v->recs, r);
  }
  if (ran && !ev->failed && ev->changed && ev->result && ev->depth == 0 && (v->o.print_changed || v->o.report)) {
    GPBuf label = {0}, d = {0};
    gp_buf_printf(&label, "(%lld) %s", (long long)k, ev->pass_name);
    module_diff(&d, ev->module, ev->result, label.data, &v->o);
    if (d.len) {
      if (v->o.print_changed && ev->depth == 0) {
        fprintf(v->o.out, "; IR changed by (%lld) %s:\n%s", (long long)k, ev->pass_name, d.data);
        fflush(v->o.out);
      }
      if (r) {
        r->changed = true;
        if (ev->depth == 0) {
          r->diff = gp_buf_take(&d);
          draw(v, ev->result, r);
        }
      }
    }
    gp_buf_free(&d);
    gp_buf_free(&label);
  }
  if (ran && !ev->failed && ev->result && v->o.filter_print && (v->o.paa || in_list(&v->o.print_after, ev->pass_name)))
    print_funcs(v->o.out, ev->result, "after", ev->pass_name, k, &v->o);
  return 0;
}

static void v_run_end(void *user, const GPRunEvent *ev) {
  Views *v = user;
  if (ev->depth) return;
  v->total_ms = (double)ev->elapsed_ns / 1e6;
  gp_free(v->status);
  v->status = gp_strdup(ev->failed ? (gp_error_message() && *gp_error_message() ? gp_error_message() : "failed") : "ok");
  if (v->o.report && ev->module) histogram(&v->ops_after, ev->module);
}

Views *views_new(const ViewOpts *o) {
  Views *v = gp_calloc(1, sizeof *v);
  v->o = *o;
  v->have_dot = -1;
  return v;
}

static void rec_free(PassRec *r) {
  gp_free(r->name);
  gp_free(r->reason);
  gp_free(r->notes);
  gp_free(r->diff);
  gp_free(r->svg);
  gp_free(r->svg_note);
  gp_free(r);
}

void views_free(void *user) {
  Views *v = user;
  if (!v) return;
  for (size_t i = 0; i < v->recs.len; i++) rec_free(v->recs.items[i]);
  gp_vec_free(&v->recs);
  gp_free(v->pipeline);
  gp_free(v->target);
  gp_free(v->status);
  gp_strmap_free(&v->ops_before);
  gp_strmap_free(&v->ops_after);
  gp_free(v);
}

int views_register(GPPassContext *ctx, Views *v) {
  GPInstrument ins;
  memset(&ins, 0, sizeof ins);
  ins.struct_size = sizeof ins;
  ins.abi_version = GP_ABI_VERSION;
  ins.name = "graphpass.views";
  ins.user = v;
  ins.user_deleter = NULL; /* the command frees it after writing the report */
  ins.run_begin = v_run_begin;
  ins.before_pass = v_before;
  ins.after_pass = v_after;
  ins.run_end = v_run_end;
  return gp_ctx_instrument_register(ctx, &ins);
}

void views_unregister(GPPassContext *ctx) {
  if (gp_ctx_instrument_unregister(ctx, "graphpass.views") != 0) gp_error_clear();
}

static int op_rec_cmp(const void *a, const void *b) {
  return strcmp(((const GPReportOp *)a)->name, ((const GPReportOp *)b)->name);
}

int views_write_report(Views *v, const char *title) {
  size_t n = v->recs.len;
  GPReportPass *ps = gp_calloc(n ? n : 1, sizeof *ps);
  for (size_t i = 0; i < n; i++) {
    const PassRec *r = v->recs.items[i];
    GPBuf nm = {0};
    ps[i] = (GPReportPass){.name = r->name, .index = r->run, .depth = r->depth, .ran = r->ran,
                           .changed = r->changed && r->depth == 0, .failed = r->failed,
                           .reason = r->reason, .ms = r->ms, .notes = r->notes, .diff = r->diff, .svg = r->svg,
                           .svg_note = r->svg_note};
    if (r->depth) { /* a run a pass started itself: say so */
      for (size_t j = i + 1; j < n; j++) {
        const PassRec *o = v->recs.items[j];
        if (o->depth < r->depth) {
          gp_buf_printf(&nm, "%s (inside %s)", r->name, o->name);
          break;
        }
      }
      if (nm.len) ps[i].name = gp_buf_take(&nm); /* freed below */
    }
    gp_buf_free(&nm);
  }
  size_t cap = v->ops_before.len + v->ops_after.len + 1, nops = 0;
  GPReportOp *ops = gp_calloc(cap, sizeof *ops);
  GPStrMap *maps[2] = {&v->ops_before, &v->ops_after};
  for (int s = 0; s < 2; s++)
    for (size_t i = 0; i < maps[s]->cap; i++) {
      const char *k = maps[s]->keys[i];
      if (!k || (s == 1 && gp_strmap_has(&v->ops_before, k))) continue;
      ops[nops++] = (GPReportOp){k, (int64_t)(intptr_t)gp_strmap_get(&v->ops_before, k),
                                 (int64_t)(intptr_t)gp_strmap_get(&v->ops_after, k)};
    }
  qsort(ops, nops, sizeof *ops, op_rec_cmp);
  GPReport rep = {.title = title, .pipeline = v->pipeline ? v->pipeline : "", .target = v->target ? v->target : "",
                  .opt_level = v->opt_level, .total_ms = v->total_ms, .status = v->status ? v->status : "not run",
                  .npasses = (int64_t)n, .passes = ps, .nops = (int64_t)nops, .ops = ops};
  GPBuf html = {0};
  gp_report_html(&html, &rep);
  for (size_t i = 0; i < n; i++)
    if (ps[i].name != ((const PassRec *)v->recs.items[i])->name) gp_free((void *)ps[i].name);
  gp_free(ps);
  gp_free(ops);
  int rc = 0;
  FILE *f = fopen(v->o.report, "wb");
  if (!f || fwrite(html.data, 1, html.len, f) != html.len) rc = -1;
  if (f && fclose(f) != 0) rc = -1;
  if (rc) gp_error_set(GP_ERR_IO, "--report %s: cannot write: %s", v->o.report, strerror(errno));
  gp_buf_free(&html);
  return rc;
}

/* ---- --bisect-numerics */

typedef struct Ref {
  GPTensor **in, **out;
  int32_t nin, nout;
} Ref;

static void tensors_free(GPTensor **t, int32_t n) {
  for (int32_t i = 0; i < n; i++) gp_release(t[i]);
  gp_free(t);
}

/* 1 within tolerance, 0 not (*why set), -1 error. */
static int compare(const Ref *ref, const GPModule *m, double rtol, double atol, char *why, size_t nwhy) {
  GPTensor **got = NULL;
  int32_t ngot = 0;
  if (gp_eval_function(m, "main", ref->nin, ref->in, &got, &ngot, NULL) != 0) return -1;
  int ok = 1;
  if (ngot != ref->nout) {
    snprintf(why, nwhy, "@main has %d outputs instead of %d", (int)ngot, (int)ref->nout);
    ok = 0;
  }
  for (int32_t i = 0; i < ngot && ok == 1; i++) {
    double ma = 0, mr = 0;
    int64_t worst = -1;
    int c = gp_tensor_allclose(got[i], ref->out[i], rtol, atol, &ma, &mr, &worst);
    if (c < 0) {
      snprintf(why, nwhy, "@main output %d: %s", (int)i, gp_error_message());
      gp_error_clear();
      ok = 0;
    } else if (c == 0) {
      snprintf(why, nwhy,
               "@main output %d: max abs error %g (rel %g) at element %lld, beyond rtol %g atol %g; the output's values "
               "reach %g",
               (int)i, ma, mr, (long long)worst, rtol, atol, gp_tensor_max_abs(ref->out[i]));
      ok = 0;
    }
  }
  tensors_free(got, ngot);
  return ok;
}

/* One trial: the pipeline with the limit; the module, or NULL + error.  *count: runs numbered. */
static GPModule *trial(const GPModule *m, const char *pipeline, GPPassContext *ctx, const ViewOpts *base,
                       int64_t limit, bool keep_names, Views **keep) {
  ViewOpts o = *base;
  o.bisect_limit = limit;
  o.quiet = true;
  o.report = NULL;
  o.print_changed = false;
  o.filter_print = false;
  o.keep_names = keep_names;
  Views *v = views_new(&o);
  if (views_register(ctx, v) != 0) {
    views_free(v);
    return NULL;
  }
  GPModule *out = gp_run_pipeline(m, pipeline, ctx);
  views_unregister(ctx);
  if (keep)
    *keep = v;
  else
    views_free(v);
  return out;
}

static const char *run_name(const Views *v, int64_t k, GPBuf *b) {
  for (size_t i = 0; i < v->recs.len; i++) {
    const PassRec *r = v->recs.items[i];
    if (r->run != k) continue;
    gp_buf_puts(b, r->name);
    if (r->depth)
      for (size_t j = i + 1; j < v->recs.len; j++) {
        const PassRec *o = v->recs.items[j];
        if (o->depth < r->depth) {
          gp_buf_printf(b, " (inside %s)", o->name);
          break;
        }
      }
    return b->data;
  }
  return "?";
}

int views_bisect_numerics(const GPModule *mod, const char *pipeline, GPPassContext *ctx, const ViewOpts *o,
                          double rtol, double atol, uint64_t seed) {
  FILE *out = o->out;
  Ref ref = {0};
  GPModule *typed = NULL;
  const GPModule *m = mod;
  const GPFunctionExpr *fn = gp_module_lookup(mod, "main");
  if (!fn) {
    gp_error_set(GP_ERR_VALUE, "--bisect-numerics: the module has no @main to evaluate");
    return 1;
  }
  for (int32_t i = 0; i < fn->nparams && !typed; i++)
    if (!fn->params[i]->type_annotation && !fn->params[i]->base.checked_type) {
      if (!(typed = gp_infer_types(mod))) {
        gp_error_prefix("--bisect-numerics: typing @main's parameters");
        return 1;
      }
      m = typed;
    }
  bool verify = ctx->verify_numerics;
  ctx->verify_numerics = false; /* only the final module of each trial is evaluated */
  int code = 0;
  Views *names = NULL;
  GPModule *full = NULL;
  if (gp_eval_random_inputs_shaped(m, "main", seed, ctx->numerics_shapes, ctx->num_numerics_shapes, 1, &ref.in,
                                   &ref.nin) != 0 ||
      gp_eval_function(m, "main", ref.nin, ref.in, &ref.out, &ref.nout, NULL) != 0) {
    gp_error_prefix("--bisect-numerics: evaluating @main of the input module");
    code = 1;
    goto done;
  }
  full = trial(m, pipeline, ctx, o, -1, true, &names);
  if (!full) {
    code = gp_error_kind() == GP_ERR_PASS ? 3 : 2;
    goto done;
  }
  int64_t total = names->count;
  char why[512] = "";
  int c = compare(&ref, full, rtol, atol, why, sizeof why);
  if (c < 0) {
    gp_error_prefix("--bisect-numerics: evaluating @main after all %lld runs", (long long)total);
    code = 3;
    goto done;
  }
  if (c == 1) {
    fprintf(out, "BISECT: @main's outputs stay within tolerance after all %lld runs: no bad run\n", (long long)total);
    goto done;
  }
  /* limit lo is good (lo = 0: nothing ran), hi is bad */
  int64_t lo = 0, hi = total;
  fprintf(out, "BISECT: %lld runs; after all of them %s\n", (long long)total, why);
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    GPModule *t = trial(m, pipeline, ctx, o, mid, false, NULL);
    if (!t) {
      gp_error_prefix("--bisect-numerics: the run with --opt-bisect-limit %lld", (long long)mid);
      code = gp_error_kind() == GP_ERR_PASS ? 3 : 2;
      goto done;
    }
    char w2[512] = "";
    int cc = compare(&ref, t, rtol, atol, w2, sizeof w2);
    gp_release(t);
    if (cc < 0) {
      gp_error_prefix("--bisect-numerics: evaluating @main with --opt-bisect-limit %lld", (long long)mid);
      code = 3;
      goto done;
    }
    fprintf(out, "BISECT: --opt-bisect-limit %lld: %s\n", (long long)mid, cc ? "good" : "bad");
    if (cc) {
      lo = mid;
    } else {
      hi = mid;
      snprintf(why, sizeof why, "%s", w2);
    }
  }
  GPBuf nb = {0};
  const char *name = run_name(names, hi, &nb);
  fprintf(out, "BISECT: the first bad run is (%lld) %s\n", (long long)hi, name);
  fflush(out);
  gp_error_set(GP_ERR_PASS, "--bisect-numerics: pass %s (run %lld) changes the numbers of %s", name, (long long)hi, why);
  gp_buf_free(&nb);
  code = 3;
done:
  ctx->verify_numerics = verify;
  gp_release(full);
  views_free(names);
  tensors_free(ref.in, ref.nin);
  tensors_free(ref.out, ref.nout);
  gp_release(typed);
  return code;
}
