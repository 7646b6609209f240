/* run.c -- running a pipeline: plan it (the items in order, each decided by target and TVM's
 * enablement, with the required passes added before an item where they are not valid any
 * more), call the passes, and run the instruments (timing, IR dumps, verification, numerics,
 * explain).
 *
 * A running pipeline holds a reference to every entry it resolved, so passes may be
 * unregistered (or re-registered) concurrently without affecting it.  The registry lock is never
 * held while a pass runs. */
#include "registry_impl.h"

#include "../eval/eval.h"

#include <math.h>
#include <string.h>
#include <time.h>

typedef struct Node {
  GPPassEntry *e;    /* owned reference */
  bool user;         /* listed in the pipeline (not only pulled in as a dependency) */
  GPVec cfg_keys;    /* char* full keys (owned) from the pipeline items */
  GPVec cfg_vals;    /* GPAny* (owned; NULL once the pass replaced it in the context) */
  bool run;
  char *why;         /* explain text (gp_malloc'd) */
  uint64_t ns;       /* time spent in the pass */
} Node;

typedef struct Run {
  Node *nodes;
  size_t n, cap;
} Run;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t add_node(Run *r, GPPassEntry *e) {
  if (r->n == r->cap) {
    r->cap = r->cap ? r->cap * 2 : 8;
    r->nodes = gp_realloc(r->nodes, r->cap * sizeof *r->nodes);
  }
  r->nodes[r->n] = (Node){.e = e};
  return r->n++;
}

static void run_free(Run *r) {
  for (size_t i = 0; i < r->n; i++) {
    Node *nd = &r->nodes[i];
    for (size_t k = 0; k < nd->cfg_keys.len; k++) {
      gp_free(nd->cfg_keys.items[k]);
      gp_free(nd->cfg_vals.items[k]);
    }
    gp_vec_free(&nd->cfg_keys);
    gp_vec_free(&nd->cfg_vals);
    gp_free(nd->why);
    gp_pass_entry_release(nd->e);
  }
  gp_free(r->nodes);
}

/* ---- decisions */

static bool has_name(const GPVec *v, const char *name) {
  for (size_t i = 0; i < v->len; i++)
    if (strcmp(v->items[i], name) == 0) return true;
  return false;
}

static char *fmt(const char *f, ...) GP_FMT(1, 2);
static char *fmt(const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  char tmp[1];
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(tmp, sizeof tmp, f, ap2);
  va_end(ap2);
  char *s = gp_malloc((size_t)n + 1);
  vsnprintf(s, (size_t)n + 1, f, ap);
  va_end(ap);
  return s;
}

/* Apply the `{key=value}` of a pipeline item to its node (parsed by the pass's key types). */
static int add_item_config(Node *nd, const GPPipelineItem *it) {
  const GPPassInfo *in = &nd->e->info;
  for (int32_t c = 0; c < it->nconfig; c++) {
    const char *w = it->keys[c];
    int32_t ki = -1;
    char *full = NULL;
    for (int32_t k = 0; k < in->num_config_keys && ki < 0; k++) {
      char *f = gp_config_full_key(in->name, &in->config_keys[k]);
      if (strcmp(f, w) == 0 || strcmp(in->config_keys[k].name, w) == 0) {
        ki = k;
        full = f;
      } else {
        gp_free(f);
      }
    }
    if (ki < 0) {
      GPBuf b = {0};
      for (int32_t k = 0; k < in->num_config_keys; k++) {
        char *f = gp_config_full_key(in->name, &in->config_keys[k]);
        gp_buf_printf(&b, "%s%s", k ? ", " : "", f);
        gp_free(f);
      }
      gp_error_set(GP_ERR_NOT_FOUND, "pass %s has no config key '%s' (its keys: %s)", in->name, w, b.len ? b.data : "none");
      gp_buf_free(&b);
      return -1;
    }
    GPAny *v = gp_config_parse_value(&in->config_keys[ki], full, it->values[c]);
    if (!v) {
      gp_free(full);
      return -1;
    }
    size_t k = 0;
    while (k < nd->cfg_keys.len && strcmp(nd->cfg_keys.items[k], full) != 0) k++;
    if (k < nd->cfg_keys.len) { /* the same key given twice in one item: the later value wins */
      gp_free(full);
      gp_free(nd->cfg_vals.items[k]);
      nd->cfg_vals.items[k] = v;
    } else {
      gp_vec_push(&nd->cfg_keys, full);
      gp_vec_push(&nd->cfg_vals, v);
    }
  }
  return 0;
}

/* ---- planning
 *
 * The pipeline's items run in the order written, each time it is listed.  Before an item that
 * runs, its required passes (transitively, depth first, no recursion) are added unless they are
 * still valid: an analysis or debug pass stays valid until a transform pass runs after it; a
 * transform pass is valid once it ran anywhere earlier.  So `A,B` where both need InferType runs
 * InferType once when A only annotates, and again after A when A rewrites the graph (as TVM
 * does before every pass that requires it, but without its repeated runs on an unchanged
 * module).  A cycle or a missing pass is an error naming it; a required pass that is disabled is
 * an error naming both. */

typedef struct Plan {
  GPVec valid;     /* names (borrowed from entries) of analyses valid now */
  GPVec done_xf;   /* names of transform passes that ran */
} Plan;

static bool plan_satisfied(const Plan *pl, const GPPassEntry *e) {
  return has_name(e->info.kind == GP_PASS_TRANSFORM ? &pl->done_xf : &pl->valid, e->info.name);
}

static void plan_ran(Plan *pl, const GPPassEntry *e) {
  if (e->info.kind == GP_PASS_TRANSFORM) {
    pl->valid.len = 0;
    if (!has_name(&pl->done_xf, e->info.name)) gp_vec_push(&pl->done_xf, (void *)e->info.name);
  } else if (!has_name(&pl->valid, e->info.name)) {
    gp_vec_push(&pl->valid, (void *)e->info.name);
  }
}

typedef struct Frame {
  GPPassEntry *e; /* owned until appended as a node */
  int32_t next;   /* next index into e->info.required */
} Frame;

/* Add the requirements of `item` (already decided to run; its entry is borrowed) before it. */
static int add_requirements(Run *r, Plan *pl, GPPassEntry *item, const GPPassContext *ctx) {
  Frame *st = gp_malloc(sizeof *st * 8);
  size_t sn = 0, scap = 8;
  st[sn++] = (Frame){item, 0};
  int rc = 0;
  while (sn) {
    Frame *top = &st[sn - 1];
    if (top->next >= top->e->info.num_required) {
      if (sn == 1) break; /* the item itself: its caller appends it */
      GPPassEntry *d = top->e;
      size_t idx = add_node(r, d);
      r->nodes[idx].run = true;
      r->nodes[idx].why = fmt("required by %s", st[sn - 2].e->info.name);
      plan_ran(pl, d);
      sn--;
      continue;
    }
    const char *rn = top->e->info.required[top->next++];
    bool on_stack = false;
    for (size_t j = 0; j < sn && !on_stack; j++) {
      if (strcmp(st[j].e->info.name, rn) != 0) continue;
      on_stack = true;
      GPBuf b = {0};
      for (size_t k = j; k < sn; k++) gp_buf_printf(&b, "%s -> ", st[k].e->info.name);
      gp_buf_puts(&b, rn);
      gp_error_set(GP_ERR_VALUE, "dependency cycle between passes: %s", b.data);
      gp_buf_free(&b);
    }
    if (on_stack) {
      rc = -2; /* a registry defect, not the caller's pipeline */
      break;
    }
    GPPassEntry *d = gp_pass_acquire(rn);
    if (!d) {
      GPBuf b = {0};
      gp_buf_printf(&b, "required by %s", top->e->info.name);
      gp_reg_error_no_such_pass(rn, b.data);
      gp_buf_free(&b);
      rc = -1;
      break;
    }
    if (plan_satisfied(pl, d)) {
      gp_pass_entry_release(d);
      continue;
    }
    if (has_name(&ctx->disabled, rn)) {
      gp_error_set(GP_ERR_VALUE, "pass %s requires %s, which is disabled", top->e->info.name, rn);
      gp_pass_entry_release(d);
      rc = -1;
      break;
    }
    char *refused = gp_pass_target_refusal(&d->info, ctx->target);
    if (refused) { /* listed as skipped; the dependent still runs */
      size_t idx = add_node(r, d);
      r->nodes[idx].why = fmt("%s; required by %s", refused, top->e->info.name);
      gp_free(refused);
      continue;
    }
    if (sn == scap) {
      scap *= 2;
      st = gp_realloc(st, scap * sizeof *st);
    }
    st[sn++] = (Frame){d, 0};
  }
  for (size_t k = 1; k < sn; k++) gp_pass_entry_release(st[k].e); /* on error */
  gp_free(st);
  return rc;
}

/* 0, or -1 + error; -2 + error for a dependency cycle between registered passes. */
static int plan(Run *r, const GPPipeline *p, const GPPassContext *ctx) {
  Plan pl = {0};
  int rc = 0;
  for (int32_t i = 0; i < p->n && rc == 0; i++) {
    const GPPipelineItem *it = &p->items[i];
    GPPassEntry *e = gp_pass_acquire(it->name);
    if (!e) {
      gp_reg_error_no_such_pass(it->name, NULL);
      rc = -1;
      break;
    }
    const GPPassInfo *in = &e->info;
    bool run = false;
    char *why = gp_pass_target_refusal(in, ctx->target);
    if (why) {
    } else if (has_name(&ctx->disabled, in->name)) {
      why = fmt("disabled");
    } else if (has_name(&ctx->required, in->name)) {
      run = true;
      why = fmt("required");
    } else if (ctx->opt_level >= in->opt_level) {
      run = true;
    } else {
      why = fmt("opt-level %d > context opt-level %d", in->opt_level, ctx->opt_level);
    }
    if (run && (rc = add_requirements(r, &pl, e, ctx)) != 0) {
      gp_free(why);
      gp_pass_entry_release(e);
      break;
    }
    size_t idx = add_node(r, e);
    Node *nd = &r->nodes[idx];
    nd->user = true;
    nd->run = run;
    nd->why = why;
    if (run) plan_ran(&pl, e);
    if (add_item_config(nd, it) != 0) rc = -1;
  }
  gp_vec_free(&pl.valid);
  gp_vec_free(&pl.done_xf);
  return rc;
}

int gp_pipeline_check(const GPPipeline *p, const char *target) {
  GPPassContext *ctx = gp_ctx_new();
  gp_free(ctx->target);
  ctx->target = gp_strdup(target);
  ctx->opt_level = INT32_MAX; /* every item runs, so every requirement is planned */
  Run r = {0};
  int rc = plan(&r, p, ctx);
  run_free(&r);
  gp_ctx_free(ctx);
  return rc < 0 ? -1 : 0;
}

/* ---- instruments */

static int dump(GPPassContext *ctx, const GPModule *m, const char *when, const char *name) {
  char *text = gp_print(m, ctx->print_types ? GP_PRINT_TYPES : 0);
  if (!text) {
    gp_error_prefix("printing the IR %s %s", when, name);
    return -1;
  }
  if (ctx->out) {
    size_t n = strlen(text);
    fprintf(ctx->out, "; IR %s %s:\n%s%s", when, name, text, n && text[n - 1] == '\n' ? "" : "\n");
    fflush(ctx->out);
  }
  gp_free(text);
  return 0;
}

static int check_names(const GPVec *v, const char *what) {
  for (size_t i = 0; i < v->len; i++) {
    GPPassEntry *e = gp_pass_acquire(v->items[i]);
    if (!e) {
      gp_reg_error_no_such_pass(v->items[i], what);
      return -1;
    }
    gp_pass_entry_release(e);
  }
  return 0;
}

/* ---- --verify-numerics */

typedef struct Numerics {
  GPTensor **inputs; /* owned references, one per @main parameter */
  int32_t nin;
  GPTensor **ref;    /* owned references: @main's outputs on the input module */
  int32_t nref;
  char dyn[160];     /* "; %x as (1, 3, 8, 8)" for the parameters with `?` dims, else "" */
} Numerics;

static void release_tensors(GPTensor **ts, int32_t n) {
  for (int32_t i = 0; i < n; i++) gp_release(ts[i]);
  gp_free(ts);
}

static void numerics_free(Numerics *nv) {
  release_tensors(nv->inputs, nv->nin);
  release_tensors(nv->ref, nv->nref);
  memset(nv, 0, sizeof *nv);
}

static int numerics_begin_typed(Numerics *nv, const GPModule *m, const GPFunctionExpr *fn,
                                const GPPassContext *ctx);

/* Inputs from the seed and the reference outputs of the input module. */
static int numerics_begin(Numerics *nv, const GPModule *m, const GPPassContext *ctx) {
  const GPFunctionExpr *fn = gp_module_lookup(m, "main");
  if (!fn) {
    gp_error_set(GP_ERR_VALUE, "--verify-numerics: the module has no @main to evaluate");
    return -1;
  }
  /* parameters without a type annotation: InferType solves them from their uses */
  GPModule *typed = NULL;
  for (int32_t i = 0; i < fn->nparams && !typed; i++) {
    const GPVar *p = fn->params[i];
    if (p->type_annotation || p->base.checked_type) continue;
    if (!(typed = gp_infer_types(m))) {
      gp_error_prefix("--verify-numerics: typing @main's parameters");
      return -1;
    }
    fn = gp_module_lookup(typed, "main");
  }
  int rc = numerics_begin_typed(nv, m, fn, ctx);
  gp_release(typed);
  return rc;
}

static int numerics_begin_typed(Numerics *nv, const GPModule *m, const GPFunctionExpr *fn,
                                const GPPassContext *ctx) {
  GPBuf dyn = {0}; /* the parameters with `?` dims, as evaluated */
  for (int32_t i = 0; i < fn->nparams; i++) {
    const GPVar *p = fn->params[i];
    const GPType *t = p->type_annotation;
    if (t && t->kind == GP_TYPE_TENSOR) continue;
    GPBuf b = {0};
    if (t)
      gp_type_print(&b, t);
    else
      gp_buf_puts(&b, "no type annotation");
    gp_error_set(GP_ERR_VALUE,
                 "--verify-numerics: parameter %%%s of @main has %s%s, not a tensor type; numerics can only be "
                 "verified when every parameter of @main is a tensor",
                 p->name, t ? "type " : "", b.data);
    gp_buf_free(&b);
    return -1;
  }
  if (gp_eval_random_inputs_shaped(m, "main", ctx->seed, ctx->numerics_shapes, ctx->num_numerics_shapes, 1,
                                   &nv->inputs, &nv->nin) != 0) {
    gp_error_prefix("--verify-numerics: inputs of @main");
    return -1;
  }
  for (int32_t i = 0; i < fn->nparams && i < nv->nin; i++) {
    const GPType *t = fn->params[i]->type_annotation;
    if (gp_type_numel(t) >= 0) continue;
    gp_buf_printf(&dyn, "%s%%%s as (", dyn.len ? ", " : "; ", fn->params[i]->name);
    for (int32_t d = 0; d < nv->inputs[i]->dl.ndim; d++)
      gp_buf_printf(&dyn, "%s%lld", d ? ", " : "", (long long)nv->inputs[i]->dl.shape[d]);
    gp_buf_puts(&dyn, ")");
  }
  snprintf(nv->dyn, sizeof nv->dyn, "%s", dyn.data ? dyn.data : "");
  gp_buf_free(&dyn);
  if (gp_eval_function(m, "main", nv->nin, nv->inputs, &nv->ref, &nv->nref, NULL) != 0) {
    nv->ref = NULL;
    nv->nref = 0;
    gp_error_prefix("--verify-numerics: evaluating @main of the input module");
    return -1;
  }
  return 0;
}

/* Evaluate @main of `cur` (the result of pass `name`) and compare with the reference. */
static int numerics_check(const Numerics *nv, const GPModule *cur, bool unchanged, const char *name,
                          const GPPassContext *ctx, char *checks, size_t checks_len) {
  double worst_abs = 0.0;
  if (!unchanged) {
    GPTensor **got = NULL;
    int32_t ngot = 0;
    if (gp_eval_function(cur, "main", nv->nin, nv->inputs, &got, &ngot, NULL) != 0) {
      gp_error_prefix("pass %s: --verify-numerics: evaluating @main after the pass", name);
      gp_error_set_kind(GP_ERR_PASS);
      return -1;
    }
    int rc = 0;
    if (ngot != nv->nref) {
      gp_error_set(GP_ERR_PASS, "pass %s changed the number of @main outputs from %d to %d", name, (int)nv->nref,
                   (int)ngot);
      rc = -1;
    }
    for (int32_t i = 0; i < ngot && rc == 0; i++) {
      double max_abs = 0.0, max_rel = 0.0;
      int64_t worst = -1;
      int ok = gp_tensor_allclose(got[i], nv->ref[i], ctx->rtol, ctx->atol, &max_abs, &max_rel, &worst);
      if (ok < 0) {
        gp_error_prefix("pass %s changed @main output %d", name, (int)i);
        gp_error_set_kind(GP_ERR_PASS);
        rc = -1;
      } else if (ok == 0) {
        /* the output's scale says whether this is a float sum's order (a deep network's
         * outputs of 10 move by 1e-5 between orders) or a wrong pass */
        gp_error_set(GP_ERR_PASS,
                     "pass %s changed the numbers of @main output %d: max abs error %g (rel %g) at element %lld, "
                     "beyond rtol %g atol %g; the output's values reach %g",
                     name, (int)i, max_abs, max_rel, (long long)worst, ctx->rtol, ctx->atol,
                     gp_tensor_max_abs(nv->ref[i]));
        rc = -1;
      } else if (max_abs > worst_abs || isnan(max_abs)) {
        worst_abs = max_abs;
      }
    }
    release_tensors(got, ngot);
    if (rc != 0) return -1;
  }
  snprintf(checks, checks_len, "numerics ok (max abs error %g%s%s)", worst_abs, unchanged ? ", module unchanged" : "",
           nv->dyn);
  return 0;
}

/* ---- running one pass */

static GPModule *call_pass(GPPassContext *ctx, Node *nd, GPModule *cur) {
  const GPPassInfo *in = &nd->e->info;
  size_t nc = nd->cfg_keys.len;
  void **saved = nc ? gp_malloc(nc * sizeof *saved) : NULL;
  for (size_t k = 0; k < nc; k++) {
    saved[k] = gp_strmap_get(&ctx->config, nd->cfg_keys.items[k]);
    gp_strmap_put(&ctx->config, nd->cfg_keys.items[k], nd->cfg_vals.items[k]);
  }
  GPAny args[2] = {{.type_index = GP_TI_MODULE, .v_obj = &cur->obj}, gp_any_ptr(ctx)};
  GPAny res = {0};
  uint64_t t0 = now_ns();
  gp_error_clear(); /* a pass that fails without a message must not inherit an earlier one */
  int rc = in->func(in->self, args, 2, &res);
  nd->ns = now_ns() - t0;
  for (size_t k = 0; k < nc; k++) {
    const char *key = nd->cfg_keys.items[k];
    void *now = gp_strmap_get(&ctx->config, key);
    if (now != nd->cfg_vals.items[k]) { /* the pass set the key itself (freeing ours) */
      nd->cfg_vals.items[k] = NULL;
      gp_free(now);
    }
    if (saved[k])
      gp_strmap_put(&ctx->config, key, saved[k]);
    else
      gp_strmap_remove(&ctx->config, key);
  }
  gp_free(saved);
  if (rc != 0) {
    gp_any_clear(&res);
    if (!gp_error_kind()) gp_error_set(GP_ERR_INTERNAL, "failed without an error message");
    const char *msg = gp_error_message();
    size_t nl = strlen(in->name);
    if (strncmp(msg, in->name, nl) == 0 && msg[nl] == ':' && msg[nl + 1] == ' ') { /* it names itself */
      char *own = gp_strdup(msg);
      gp_error_set(GP_ERR_PASS, "pass %s", own);
      gp_free(own);
    } else {
      gp_error_prefix("pass %s", in->name);
    }
    gp_error_set_kind(GP_ERR_PASS);
    return NULL;
  }
  gp_error_clear(); /* a pass that succeeded leaves no error behind it */
  if (res.type_index != GP_TI_MODULE || !res.v_obj || res.v_obj->type_index != GP_TI_MODULE) {
    const char *what = res.type_index == GP_TI_NONE ? "nothing" : gp_type_index_name(res.type_index);
    gp_error_set(GP_ERR_PASS, "pass %s returned %s instead of a module", in->name, what ? what : "a non-module");
    gp_any_clear(&res);
    return NULL;
  }
  return (GPModule *)(void *)res.v_obj;
}

/* ---- instruments (GPInstrument, ABI 1.3) */

typedef struct Instr {
  const GPInstrument **v; /* the context's, then the explain / timing of ctx->explain, time_passes */
  size_t n;
  GPInstrument explain, timing;
  bool begun;             /* run_begin was called: run_end must be */
} Instr;

static void instr_init(Instr *in, GPPassContext *ctx) {
  size_t cap = ctx->instruments.len + 2;
  in->v = gp_malloc(cap * sizeof *in->v);
  for (size_t i = 0; i < ctx->instruments.len; i++)
    in->v[in->n++] = &((GPInstrumentEntry *)ctx->instruments.items[i])->ins;
  if (ctx->explain) {
    in->explain = gp_instrument_explain(ctx->out);
    in->v[in->n++] = &in->explain;
  }
  if (ctx->time_passes) {
    in->timing = gp_instrument_timing(ctx->out, &ctx->timing_report);
    in->v[in->n++] = &in->timing;
  }
}

static void instr_free(Instr *in) {
  if (in->timing.user_deleter) in->timing.user_deleter(in->timing.user);
  gp_free(in->v);
}

/* The thread's pending error, kept across callbacks that may use (and clear) the error slot. */
typedef struct SavedError {
  int32_t kind;
  char *msg;
} SavedError;

static SavedError error_save(void) {
  SavedError e = {gp_error_kind(), NULL};
  if (e.kind) e.msg = gp_strdup(gp_error_message());
  return e;
}

static void error_restore(SavedError *e) {
  if (e->kind) gp_error_set(e->kind, "%s", e->msg);
  gp_free(e->msg);
  e->msg = NULL;
}

static void instr_failed(const GPInstrument *ins, const char *when) {
  if (!gp_error_kind()) gp_error_set(GP_ERR_INTERNAL, "%s failed without an error message", when);
  gp_error_prefix("instrument %s", ins->name);
}

static GPPassEvent pass_event(const Node *nd, size_t i, const GPModule *cur, int32_t depth) {
  const GPPassInfo *in = &nd->e->info;
  return (GPPassEvent){
      .struct_size = sizeof(GPPassEvent),
      .abi_version = GP_ABI_VERSION,
      .index = (int32_t)i,
      .kind = in->kind,
      .opt_level = in->opt_level,
      .pass_name = in->name,
      .dependency = !nd->user,
      .ran = nd->run,
      .reason = nd->why,
      .module = cur,
      .depth = depth,
  };
}

/* before_pass of every instrument; a veto turns the node off.  0, or -1 + error. */
static int instr_before(Instr *in, Node *nd, size_t i, const GPModule *cur, int32_t depth) {
  GPPassEvent ev = pass_event(nd, i, cur, depth);
  for (size_t k = 0; k < in->n; k++) {
    const GPInstrument *ins = in->v[k];
    if (!ins->before_pass) continue;
    int rc = ins->before_pass(ins->user, &ev);
    if (rc < 0) {
      instr_failed(ins, "before_pass");
      return -1;
    }
    if (rc > 0 && nd->run) {
      nd->run = false;
      gp_free(nd->why);
      nd->why = fmt("skipped by instrument '%s'", ins->name);
      ev.ran = 0;
      ev.reason = nd->why;
    }
  }
  return 0;
}

/* note and after_pass of every instrument.  0, or -1 + error (the run stops). */
static int instr_after(Instr *in, GPPassEvent *ev, const GPVec *notes) {
  ev->num_notes = (int32_t)notes->len;
  ev->notes = (const char *const *)notes->items;
  for (size_t k = 0; k < in->n; k++) {
    const GPInstrument *ins = in->v[k];
    if (ins->note)
      for (size_t j = 0; j < notes->len; j++) ins->note(ins->user, ev, notes->items[j]);
  }
  for (size_t k = 0; k < in->n; k++) {
    const GPInstrument *ins = in->v[k];
    if (ins->after_pass && ins->after_pass(ins->user, ev) != 0) {
      instr_failed(ins, "after_pass");
      return -1;
    }
  }
  return 0;
}

static GPRunEvent run_event(const char *pipeline, const GPPassContext *ctx, const Run *r, const GPModule *m) {
  return (GPRunEvent){
      .struct_size = sizeof(GPRunEvent),
      .abi_version = GP_ABI_VERSION,
      .pipeline = pipeline,
      .target = ctx->target,
      .opt_level = ctx->opt_level,
      .num_items = (int32_t)r->n,
      .module = m,
      .depth = ctx->run_depth - 1,
  };
}

static int instr_begin(Instr *in, GPRunEvent *ev) {
  in->begun = true;
  for (size_t k = 0; k < in->n; k++) {
    const GPInstrument *ins = in->v[k];
    if (ins->run_begin && ins->run_begin(ins->user, ev) != 0) {
      instr_failed(ins, "run_begin");
      return -1;
    }
  }
  return 0;
}

static void instr_end(Instr *in, GPRunEvent *ev) {
  if (!in->begun) return;
  in->begun = false;
  SavedError se = error_save();
  for (size_t k = 0; k < in->n; k++) {
    const GPInstrument *ins = in->v[k];
    if (ins->run_end) ins->run_end(ins->user, ev);
  }
  gp_error_clear();
  error_restore(&se);
}

/* ---- the run */

/* Undo what entering the run did (nothing when it did not get that far: depth < 0). */
static void run_leave(GPPassContext *ctx, int32_t depth, GPVec *outer_notes) {
  if (depth < 0) return;
  gp_ctx_notes_clear(ctx);
  gp_vec_free(&ctx->notes);
  ctx->notes = *outer_notes;
  ctx->run_depth = depth;
  if (!depth) ctx->collect_notes = false;
}

/* call_pass with the checks of registry/pass_check.c around it. */
static GPModule *call_pass_checked(GPPassContext *ctx, Node *nd, GPModule *cur) {
  GPPassSnap snap;
  gp_pass_snap_take(&snap, cur, ctx, nd->e->origin);
  GPModule *next = call_pass(ctx, nd, cur);
  if (next && gp_pass_snap_check(&snap, nd->e->info.name, next) != 0) {
    gp_release(next);
    next = NULL;
  }
  gp_pass_snap_free(&snap);
  return next;
}

GPModule *gp_run_pipeline(const GPModule *m, const char *pipeline, GPPassContext *ctx) {
  uint64_t t_start = now_ns();
  if (!m) {
    gp_error_set(GP_ERR_VALUE, "run pipeline: module is NULL");
    return NULL;
  }
  if (gp_module_check_shape(m) != 0) {
    gp_error_prefix("run pipeline: the input module");
    return NULL;
  }
  GPPassContext *own_ctx = NULL;
  if (!ctx) ctx = own_ctx = gp_ctx_new();
  ctx->registry_error = false;
  char *default_pipeline = NULL;
  if (!pipeline) {
    default_pipeline = ctx->opt_set ? gp_opt_set_get(ctx->target, ctx->opt_set) : gp_opt_set_default(ctx->target);
    if (!default_pipeline) {
      gp_ctx_free(own_ctx);
      return NULL;
    }
    pipeline = default_pipeline;
  }
  GPPipeline p = {0};
  Run r = {0};
  Numerics nv = {0};
  Instr ins = {0};
  GPModule *cur = NULL;
  GPRunEvent rev = {0};
  GPVec outer_notes = {0};
  int32_t depth = -1; /* >= 0 once the run counts in ctx->run_depth */
  if (gp_pipeline_parse(pipeline, &p) != 0) goto fail;
  if (check_names(&ctx->disabled, "in the context's disabled passes") ||
      check_names(&ctx->required, "in the context's required passes") ||
      check_names(&ctx->print_before, "in the context's print-before passes") ||
      check_names(&ctx->print_after, "in the context's print-after passes"))
    goto fail;
  int prc = plan(&r, &p, ctx);
  if (prc != 0) {
    ctx->registry_error = prc == -2;
    goto fail;
  }
  if (ctx->verify_numerics) {
    bool any = false;
    for (size_t i = 0; i < r.n; i++) any = any || r.nodes[i].run;
    if (any && numerics_begin(&nv, m, ctx) != 0) goto fail;
  }

  /* A run that a pass starts with its context (depth > 0) keeps the outer pass's notes aside. */
  outer_notes = ctx->notes;
  ctx->notes = (GPVec){0};
  depth = ctx->run_depth++;
  instr_init(&ins, ctx);
  if (!depth) ctx->collect_notes = ins.n > 0;
  cur = gp_retain((void *)m);
  rev = run_event(pipeline, ctx, &r, m);
  if (instr_begin(&ins, &rev) != 0) goto fail;
  for (size_t i = 0; i < r.n; i++) {
    Node *nd = &r.nodes[i];
    const char *name = nd->e->info.name;
    if (instr_before(&ins, nd, i, cur, depth) != 0) goto fail;
    if (!nd->run) {
      GPPassEvent ev = pass_event(nd, i, cur, depth);
      GPVec none = {0};
      if (instr_after(&ins, &ev, &none) != 0) goto fail;
      continue;
    }
    if ((ctx->print_before_all || has_name(&ctx->print_before, name)) && dump(ctx, cur, "before", name) != 0)
      goto fail;
    gp_ctx_notes_clear(ctx);
    GPModule *next = call_pass_checked(ctx, nd, cur);
    GPPassEvent ev = pass_event(nd, i, cur, depth);
    ev.elapsed_ns = nd->ns;
    ev.result = next;
    ev.changed = next && next != cur;
    char checks[384];
    bool ok = next != NULL;
    if (ok && ctx->verify_numerics) {
      ok = numerics_check(&nv, next, next == cur, name, ctx, checks, sizeof checks) == 0;
      if (ok) ev.checks = checks;
    }
    if (ok && ctx->verify_each && gp_verify(next) != 0) {
      gp_error_prefix("pass %s produced an ill-formed module", name);
      gp_error_set_kind(GP_ERR_PASS);
      ok = false;
    }
    ev.failed = !ok;
    if (!ok) {
      SavedError se = error_save();
      instr_after(&ins, &ev, &ctx->notes); /* an instrument's own error yields to the pass's */
      gp_error_clear();
      error_restore(&se);
    } else if (instr_after(&ins, &ev, &ctx->notes) != 0) {
      ok = false;
    }
    gp_ctx_notes_clear(ctx);
    if (next) {
      gp_release(cur);
      cur = next;
    }
    if (!ok) goto fail;
    if ((ctx->print_after_all || has_name(&ctx->print_after, name)) && dump(ctx, cur, "after", name) != 0)
      goto fail;
  }
  rev.module = cur;
  rev.elapsed_ns = now_ns() - t_start;
  instr_end(&ins, &rev);
  instr_free(&ins);
  run_leave(ctx, depth, &outer_notes);
  numerics_free(&nv);
  run_free(&r);
  gp_pipeline_free(&p);
  gp_free(default_pipeline);
  gp_ctx_free(own_ctx);
  return cur;

fail:
  rev.module = NULL;
  rev.failed = 1;
  rev.elapsed_ns = now_ns() - t_start;
  instr_end(&ins, &rev);
  instr_free(&ins);
  run_leave(ctx, depth, &outer_notes);
  gp_release(cur);
  numerics_free(&nv);
  run_free(&r);
  gp_pipeline_free(&p);
  gp_free(default_pipeline);
  gp_ctx_free(own_ctx);
  return NULL;
}
