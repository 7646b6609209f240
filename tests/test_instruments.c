/* test_instruments.c -- an embedding host's view of a run, through the host table only (ABI 1.3):
 * instruments see every planned item (ran or skipped and why, its index, dependencies, timing,
 * whether the module changed, the notes, nested runs), a before_pass callback vetoes a pass or
 * stops the run, registration rules and the user data's lifetime; passes registered from a
 * packed function run in a pipeline and their errors name them; plugins_load_default reads
 * GRAPHPASS_PLUGIN_PATH. */
#include "test_helpers.h"

#include <stdint.h>
#include <unistd.h>

static const GPHostAPI *H;

static void setup(void) {
  H = graphpass_host_api();
  char *p = th_path("plugins/libgp_std.so");
  cr_assert_eq(H->plugin_load(p), 0, "%s", H->error_message());
  gp_free(p);
}
static void teardown(void) { gp_plugins_unload_all(); }

TestSuite(instruments, .init = setup, .fini = teardown);

static const char k_model[] =
    "#[version = \"0.0.5\"]\n"
    "def @main(%x: Tensor[(1, 3), float32]) -> Tensor[(1, 3), float32] {\n"
    "  %0 = add(1f, 2f);\n"
    "  %1 = add(%x, %0);\n"
    "  nn.relu(%1)\n"
    "}\n";

static GPModule *model(void) {
  GPModule *m = H->parse(k_model, strlen(k_model), "model.relay");
  cr_assert(m, "%s", H->error_message());
  return m;
}

/* ---- a recording instrument */

typedef struct Item {
  char name[64];
  int32_t index, dependency, ran_before, ran, failed, changed, num_notes, depth;
  char reason[160];
  char notes[512];  /* from the note callback, '|'-separated */
  char enotes[512]; /* from GPPassEvent.notes in after_pass */
  char error[256];  /* the thread's error during a failed after_pass */
  uint64_t ns;
  bool had_module, had_result;
} Item;

typedef struct Rec {
  Item items[64];
  int n;
  char target[32];
  int32_t opt_level;
  int begins, ends, end_failed, num_items, deleted;
  uint64_t run_ns;
  const char *veto;  /* a pass to veto in before_pass */
  const char *abort; /* a pass whose before_pass stops the run */
  char pipeline[512];
} Rec;

static Item *item_for(Rec *r, const GPPassEvent *ev) {
  for (int i = 0; i < r->n; i++)
    if (r->items[i].index == ev->index && r->items[i].depth == ev->depth && !strcmp(r->items[i].name, ev->pass_name))
      return &r->items[i];
  cr_assert_lt(r->n, 64);
  Item *it = &r->items[r->n++];
  memset(it, 0, sizeof *it);
  snprintf(it->name, sizeof it->name, "%s", ev->pass_name);
  it->index = ev->index;
  it->depth = ev->depth;
  return it;
}

static int rec_begin(void *user, const GPRunEvent *ev) {
  Rec *r = user;
  if (ev->depth == 0) {
    r->begins++;
    r->num_items = ev->num_items;
    snprintf(r->pipeline, sizeof r->pipeline, "%s", ev->pipeline);
    snprintf(r->target, sizeof r->target, "%s", ev->target);
    r->opt_level = ev->opt_level;
    cr_assert_not_null(ev->module);
  }
  return 0;
}

static int rec_before(void *user, const GPPassEvent *ev) {
  Rec *r = user;
  cr_assert_eq(ev->struct_size, sizeof(GPPassEvent));
  Item *it = item_for(r, ev);
  it->ran_before = ev->ran;
  it->dependency = ev->dependency;
  it->had_module = ev->module != NULL;
  if (r->abort && !strcmp(ev->pass_name, r->abort)) {
    H->error_set(GP_ERR_VALUE, "stopped before %s", ev->pass_name);
    return -1;
  }
  return r->veto && !strcmp(ev->pass_name, r->veto) ? 1 : 0;
}

static void rec_note(void *user, const GPPassEvent *ev, const char *text) {
  Item *it = item_for(user, ev);
  size_t n = strlen(it->notes);
  snprintf(it->notes + n, sizeof it->notes - n, "%s%s", n ? "|" : "", text);
}

static int rec_after(void *user, const GPPassEvent *ev) {
  Item *it = item_for(user, ev);
  it->ran = ev->ran;
  it->failed = ev->failed;
  it->changed = ev->changed;
  it->ns = ev->elapsed_ns;
  it->num_notes = ev->num_notes;
  it->had_result = ev->result != NULL;
  snprintf(it->reason, sizeof it->reason, "%s", ev->reason ? ev->reason : "");
  for (int32_t i = 0; i < ev->num_notes; i++) {
    size_t n = strlen(it->enotes);
    snprintf(it->enotes + n, sizeof it->enotes - n, "%s%s", n ? "|" : "", ev->notes[i]);
  }
  if (ev->failed) snprintf(it->error, sizeof it->error, "%s", H->error_message());
  if (ev->result) cr_assert_eq(ev->changed, ev->result != ev->module);
  return 0;
}

static void rec_end(void *user, const GPRunEvent *ev) {
  Rec *r = user;
  if (ev->depth) return;
  r->ends++;
  r->end_failed = ev->failed;
  r->run_ns = ev->elapsed_ns;
  cr_assert_eq(ev->failed, ev->module == NULL);
}

static void rec_deleted(void *user) { ((Rec *)user)->deleted++; }

static GPInstrument recorder(Rec *r, const char *name) {
  return (GPInstrument){
      .struct_size = sizeof(GPInstrument),
      .abi_version = GP_ABI_VERSION,
      .name = name,
      .user = r,
      .user_deleter = rec_deleted,
      .run_begin = rec_begin,
      .before_pass = rec_before,
      .note = rec_note,
      .after_pass = rec_after,
      .run_end = rec_end,
  };
}

static Item *find_item(Rec *r, const char *name, int32_t depth) {
  for (int i = 0; i < r->n; i++)
    if (!strcmp(r->items[i].name, name) && r->items[i].depth == depth) return &r->items[i];
  cr_assert_fail("no item %s at depth %d", name, depth);
  return NULL;
}

static int count_op(const GPModule *m, const char *op) {
  char *text = H->print(m, 0);
  int n = 0;
  size_t len = strlen(op);
  for (const char *p = text; (p = strstr(p, op)) != NULL; p += len) n++;
  H->free(text);
  return n;
}

/* ---- what a run shows */

Test(instruments, every_item_ran_or_skipped_with_its_reason_timing_and_notes) {
  cr_assert(GP_HAS_FIELD(H, GPHostAPI, pass_register_packed));
  Rec r = {0};
  GPPassContext *ctx = H->ctx_new();
  GPInstrument ins = recorder(&r, "rec");
  cr_assert_eq(H->ctx_instrument_register(ctx, &ins), 0, "%s", H->error_message());
  GPModule *m = model();
  GPModule *out = H->run_pipeline(m, "FoldConstant,CanonicalizeOps,FuseOps", ctx);
  cr_assert(out, "%s", H->error_message());
  cr_assert_eq(r.begins, 1);
  cr_assert_eq(r.ends, 1);
  cr_assert_eq(r.end_failed, 0);
  cr_assert_str_eq(r.pipeline, "FoldConstant,CanonicalizeOps,FuseOps");
  /* planned: FoldConstant, CanonicalizeOps (skipped: level 3), InferType (for FuseOps), FuseOps */
  cr_assert_eq(r.num_items, 4);
  cr_assert_eq(r.n, 4);
  static const char *const names[] = {"FoldConstant", "CanonicalizeOps", "InferType", "FuseOps"};
  for (int i = 0; i < 4; i++) {
    cr_assert_str_eq(r.items[i].name, names[i]);
    cr_assert_eq(r.items[i].index, i);
    cr_assert(r.items[i].had_module);
  }
  Item *fc = &r.items[0], *co = &r.items[1], *it = &r.items[2], *fo = &r.items[3];
  cr_assert(fc->ran_before && fc->ran && !fc->failed && fc->changed && fc->had_result);
  cr_assert_str_eq(fc->reason, "");
  cr_assert_gt(fc->ns, 0);
  cr_assert_str_eq(fc->notes, "folded 1 calls (4 bytes materialized)");
  cr_assert_str_eq(fc->enotes, fc->notes);
  cr_assert_eq(fc->num_notes, 1);
  cr_assert(!co->ran_before && !co->ran && !co->had_result);
  cr_assert_str_eq(co->reason, "opt-level 3 > context opt-level 2");
  cr_assert_eq(co->ns, 0);
  cr_assert(it->dependency && it->ran);
  cr_assert_str_eq(it->reason, "required by FuseOps");
  cr_assert(!fo->dependency && fo->ran && fo->changed);
  cr_assert_geq(r.run_ns, fc->ns + it->ns + fo->ns);
  gp_release(out);
  /* the same run again: the items are numbered alike */
  r.n = 0;
  out = H->run_pipeline(m, "FoldConstant,CanonicalizeOps,FuseOps", ctx);
  cr_assert(out);
  cr_assert_eq(r.n, 4);
  cr_assert_str_eq(r.items[2].name, "InferType");
  cr_assert_eq(r.items[2].index, 2);
  gp_release(out);
  gp_release(m);
  cr_assert_eq(r.deleted, 0);
  H->ctx_free(ctx);
  cr_assert_eq(r.deleted, 1, "the context owns the user data");
}

Test(instruments, the_run_event_names_the_set_that_runs) {
  Rec r = {0};
  GPPassContext *ctx = H->ctx_new();
  cr_assert_eq(H->ctx_set_opt_level(ctx, 1), 0);
  GPInstrument ins = recorder(&r, "rec");
  cr_assert_eq(H->ctx_instrument_register(ctx, &ins), 0);
  GPModule *m = model();
  GPModule *out = H->run_pipeline(m, NULL, ctx); /* llvm's default set */
  cr_assert(out, "%s", H->error_message());
  char *set = H->opt_set_get("llvm", NULL);
  cr_assert_str_eq(r.pipeline, set);
  H->free(set);
  cr_assert_str_eq(r.target, "llvm");
  cr_assert_eq(r.opt_level, 1);
  cr_assert_gt(r.num_items, 10);
  cr_assert_eq(r.n, r.num_items, "every planned item reaches the instrument");
  for (int i = 0; i < r.n; i++) cr_assert_eq(r.items[i].index, i);
  gp_release(out);
  gp_release(m);
  H->ctx_free(ctx);
}

Test(instruments, unchanged_module_and_no_notes_without_instruments) {
  Rec r = {0};
  GPPassContext *ctx = H->ctx_new();
  GPInstrument ins = recorder(&r, "rec");
  ins.user_deleter = NULL;
  cr_assert_eq(H->ctx_instrument_register(ctx, &ins), 0);
  GPModule *m = model();
  GPModule *once = H->run_pipeline(m, "FoldConstant", ctx);
  cr_assert(once);
  r.n = 0;
  GPModule *twice = H->run_pipeline(once, "FoldConstant", ctx);
  cr_assert(twice);
  cr_assert(r.items[0].ran && !r.items[0].changed, "nothing left to fold: the pass returns its input");
  cr_assert_eq(twice, once);
  cr_assert_eq(H->ctx_instrument_unregister(ctx, "rec"), 0);
  cr_assert_eq(r.deleted, 0, "no user_deleter: nothing to run");
  r.n = 0;
  gp_release(twice);
  twice = H->run_pipeline(m, "FoldConstant", ctx);
  cr_assert(twice);
  cr_assert_eq(r.n, 0, "unregistered: no callbacks");
  gp_release(twice);
  gp_release(once);
  gp_release(m);
  H->ctx_free(ctx);
}

Test(instruments, a_veto_skips_the_pass_and_later_instruments_see_why) {
  Rec a = {0}, b = {0};
  a.veto = "FoldConstant";
  GPPassContext *ctx = H->ctx_new();
  GPInstrument ia = recorder(&a, "bisect"), ib = recorder(&b, "watch");
  cr_assert_eq(H->ctx_instrument_register(ctx, &ia), 0);
  cr_assert_eq(H->ctx_instrument_register(ctx, &ib), 0);
  GPModule *m = model();
  GPModule *out = H->run_pipeline(m, "FoldConstant,InferType", ctx);
  cr_assert(out, "%s", H->error_message());
  cr_assert_eq(count_op(out, "add("), 2, "FoldConstant did not run: add(1f, 2f) is still there");
  Item *fa = find_item(&a, "FoldConstant", 0), *fb = find_item(&b, "FoldConstant", 0);
  cr_assert(fa->ran_before, "the plan ran it");
  cr_assert(!fa->ran && !fa->had_result && !fa->changed);
  cr_assert_str_eq(fa->reason, "skipped by instrument 'bisect'");
  cr_assert(!fb->ran_before, "an instrument after the veto sees the pass skipped");
  cr_assert_str_eq(fb->reason, "skipped by instrument 'bisect'");
  cr_assert(find_item(&b, "InferType", 0)->ran);
  gp_release(out);
  /* a veto of an item already skipped changes nothing */
  a.n = 0;
  a.veto = "CanonicalizeOps";
  out = H->run_pipeline(m, "CanonicalizeOps", ctx);
  cr_assert(out);
  cr_assert_str_eq(find_item(&a, "CanonicalizeOps", 0)->reason, "opt-level 3 > context opt-level 2");
  gp_release(out);
  gp_release(m);
  H->ctx_free(ctx);
  cr_assert_eq(a.deleted + b.deleted, 2);
}

Test(instruments, a_callback_can_stop_the_run) {
  Rec r = {0};
  r.abort = "InferType";
  GPPassContext *ctx = H->ctx_new();
  GPInstrument ins = recorder(&r, "stopper");
  cr_assert_eq(H->ctx_instrument_register(ctx, &ins), 0);
  GPModule *m = model();
  cr_assert_null(H->run_pipeline(m, "FoldConstant,InferType", ctx));
  cr_assert_eq(H->error_kind(), GP_ERR_VALUE);
  cr_assert(strstr(H->error_message(), "instrument stopper: stopped before InferType"), "%s", H->error_message());
  H->error_clear();
  cr_assert_eq(r.ends, 1, "run_end runs on failure too");
  cr_assert_eq(r.end_failed, 1);
  gp_release(m);
  H->ctx_free(ctx);
}

Test(instruments, nested_runs_are_one_depth_deeper) {
  Rec r = {0};
  GPPassContext *ctx = H->ctx_new();
  cr_assert_eq(H->ctx_set_opt_level(ctx, 3), 0);
  GPInstrument ins = recorder(&r, "rec");
  cr_assert_eq(H->ctx_instrument_register(ctx, &ins), 0);
  GPModule *m = model();
  GPModule *out = H->run_pipeline(m, "FoldScaleAxis", ctx); /* runs FoldConstant itself */
  cr_assert(out, "%s", H->error_message());
  Item *fsa = find_item(&r, "FoldScaleAxis", 0), *fc = find_item(&r, "FoldConstant", 1);
  cr_assert(fsa->ran && fc->ran);
  cr_assert_eq(fc->index, 0);
  cr_assert_str_eq(fc->notes, "folded 1 calls (4 bytes materialized)");
  cr_assert_eq(r.begins, 1, "depth-0 begins only");
  cr_assert_eq(r.ends, 1);
  gp_release(out);
  gp_release(m);
  H->ctx_free(ctx);
}

/* ---- registration rules */

static int reg_during(void *user, const GPRunEvent *ev) {
  (void)ev;
  GPPassContext *ctx = user;
  GPInstrument other = {.struct_size = sizeof other, .abi_version = GP_ABI_VERSION, .name = "late"};
  if (H->ctx_instrument_register(ctx, &other) == 0) return 0;
  return -1; /* the refusal's error stops the run */
}

Test(instruments, registration_errors) {
  GPPassContext *ctx = H->ctx_new();
  Rec r = {0};
  GPInstrument ins = recorder(&r, "rec");
  cr_assert_eq(H->ctx_instrument_register(ctx, &ins), 0);
  cr_assert_eq(H->ctx_instrument_register(ctx, &ins), -1);
  cr_assert_eq(H->error_kind(), GP_ERR_VALUE);
  cr_assert(strstr(H->error_message(), "already has an instrument named 'rec'"), "%s", H->error_message());
  H->error_clear();
  GPInstrument bad = ins;
  bad.name = "has space";
  cr_assert_eq(H->ctx_instrument_register(ctx, &bad), -1);
  cr_assert_eq(H->error_kind(), GP_ERR_VALUE);
  H->error_clear();
  bad = ins;
  bad.name = "small";
  bad.struct_size = GP_STRUCT_SIZE(GPInstrument, after_pass);
  cr_assert_eq(H->ctx_instrument_register(ctx, &bad), -1);
  cr_assert_eq(H->error_kind(), GP_ERR_VERSION);
  H->error_clear();
  bad.struct_size = sizeof bad;
  bad.abi_version = 2u << 16;
  cr_assert_eq(H->ctx_instrument_register(ctx, &bad), -1);
  cr_assert_eq(H->error_kind(), GP_ERR_VERSION);
  H->error_clear();
  cr_assert_eq(H->ctx_instrument_unregister(ctx, "nope"), -1);
  cr_assert_eq(H->error_kind(), GP_ERR_NOT_FOUND);
  cr_assert(strstr(H->error_message(), "the context has: rec"), "%s", H->error_message());
  H->error_clear();
  cr_assert_eq(H->ctx_instrument_unregister(ctx, "rec"), 0);
  cr_assert_eq(r.deleted, 1);
  /* no registration while the context runs */
  GPInstrument during = {.struct_size = sizeof during,
                         .abi_version = GP_ABI_VERSION,
                         .name = "during",
                         .user = ctx,
                         .run_begin = reg_during};
  cr_assert_eq(H->ctx_instrument_register(ctx, &during), 0);
  GPModule *m = model();
  cr_assert_null(H->run_pipeline(m, "InferType", ctx));
  cr_assert(strstr(H->error_message(), "instrument during: ctx_instrument_register: instrument 'late': the context is "
                                       "running a pipeline"),
            "%s", H->error_message());
  H->error_clear();
  gp_release(m);
  H->ctx_free(ctx);
}

/* ---- passes from packed functions */

typedef struct PyPass {
  int calls;
  int released;
  bool fail;
} PyPass;

/* A pass as a Python host would give it: (module, ctx) -> module; removes @unused. */
static int py_pass(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  PyPass *p = self;
  p->calls++;
  cr_assert_eq(nargs, 2);
  cr_assert_eq(args[0].type_index, GP_TI_MODULE);
  cr_assert_eq(args[1].type_index, GP_TI_OPAQUE_PTR);
  GPPassContext *ctx = args[1].v_ptr;
  cr_assert_eq(H->ctx_opt_level(ctx), 2);
  if (p->fail) {
    H->error_set(GP_ERR_VALUE, "the callable raised ValueError");
    return -1;
  }
  const GPModule *in = (const GPModule *)(const void *)args[0].v_obj;
  H->ctx_note(ctx, "saw %d functions", (int)in->num_functions);
  GPModule *out = H->module_new(in->source_name);
  for (int32_t i = 0; i < in->num_functions; i++)
    if (strcmp(in->gvars[i]->name, "unused") != 0) H->module_add(out, in->gvars[i]->name, in->funcs[i], 0);
  result->type_index = GP_TI_MODULE;
  result->v_obj = &out->obj;
  return 0;
}

static void py_release(void *self) { ((PyPass *)self)->released++; }

static GPPassInfo py_info(const char *name) {
  static const char *const req[] = {"InferType"};
  return (GPPassInfo){
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = name,
      .opt_level = 0,
      .kind = GP_PASS_TRANSFORM,
      .required = req,
      .num_required = 1,
      .help = "drops @unused (a packed function)",
  };
}

Test(instruments, a_packed_function_pass_runs_in_a_pipeline) {
  PyPass p = {0};
  GPPackedFunc *f = H->func_new(&p, py_pass, py_release);
  GPPassInfo info = py_info("PyDropUnused");
  cr_assert_eq(H->pass_register_packed(&info, f, 0), 0, "%s", H->error_message());
  const char *text = "#[version = \"0.0.5\"]\n"
                     "def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] { nn.relu(%x) }\n"
                     "def @unused(%y: Tensor[(2), float32]) -> Tensor[(2), float32] { exp(%y) }\n";
  GPModule *m = H->parse(text, strlen(text), "two.relay");
  cr_assert(m);
  Rec r = {0};
  GPPassContext *ctx = H->ctx_new();
  GPInstrument ins = recorder(&r, "rec");
  cr_assert_eq(H->ctx_instrument_register(ctx, &ins), 0);
  GPModule *out = H->run_pipeline(m, "PyDropUnused,FoldConstant", ctx);
  cr_assert(out, "%s", H->error_message());
  cr_assert_eq(out->num_functions, 1);
  cr_assert_eq(m->num_functions, 2, "the input is unchanged");
  cr_assert_eq(p.calls, 1);
  Item *py = find_item(&r, "PyDropUnused", 0);
  cr_assert(py->ran && py->changed);
  cr_assert_str_eq(py->notes, "saw 2 functions");
  cr_assert_eq(find_item(&r, "InferType", 0)->index, 0, "its requirement came first");
  gp_release(out);
  /* its error names it */
  p.fail = true;
  cr_assert_null(H->run_pipeline(m, "PyDropUnused", ctx));
  cr_assert_eq(H->error_kind(), GP_ERR_PASS);
  cr_assert(strstr(H->error_message(), "pass PyDropUnused: the callable raised ValueError"), "%s",
            H->error_message());
  Item *failed = find_item(&r, "PyDropUnused", 0);
  cr_assert(failed->failed && !failed->had_result);
  cr_assert(strstr(failed->error, "the callable raised ValueError"), "after_pass sees the error: %s", failed->error);
  H->error_clear();
  /* lifetime: the registry holds its own reference until the pass is unregistered */
  gp_release(f);
  cr_assert_eq(p.released, 0);
  cr_assert_eq(H->pass_unregister("PyDropUnused"), 0);
  cr_assert_eq(p.released, 1);
  gp_release(m);
  H->ctx_free(ctx);
}

Test(instruments, packed_pass_registration_errors) {
  PyPass p = {0};
  GPPackedFunc *f = H->func_new(&p, py_pass, py_release);
  GPPassInfo info = py_info("PyBad");
  info.func = py_pass;
  cr_assert_eq(H->pass_register_packed(&info, f, 0), -1);
  cr_assert_eq(H->error_kind(), GP_ERR_VALUE);
  cr_assert(strstr(H->error_message(), "pass PyBad: func, self and self_deleter must be NULL"), "%s",
            H->error_message());
  H->error_clear();
  info = py_info("FoldConstant"); /* taken */
  cr_assert_eq(H->pass_register_packed(&info, f, 0), -1);
  cr_assert(strstr(H->error_message(), "already registered"), "%s", H->error_message());
  H->error_clear();
  cr_assert_eq(H->pass_register_packed(&info, NULL, 0), -1);
  H->error_clear();
  gp_release(f);
  cr_assert_eq(p.released, 1, "a failed registration keeps no reference");
}

/* ---- default plugins */

static void copy_to(const char *rel, const char *dir) {
  char *from = th_path(rel);
  GPBuf c = {0};
  gp_buf_printf(&c, "cp '%s' '%s/'", from, dir);
  cr_assert_eq(system(c.data), 0, "%s", c.data);
  gp_buf_free(&c);
  gp_free(from);
}

Test(instruments, plugins_load_default_reads_the_path_variable) {
  char d1[] = "/tmp/gp_test_ppath_XXXXXX", d2[] = "/tmp/gp_test_ppath_XXXXXX";
  cr_assert(mkdtemp(d1) && mkdtemp(d2));
  copy_to("tests/plugins/libext_plugin.so", d1);
  copy_to("tests/plugins/libpattern_plugin.so", d2);
  GPBuf b = {0};
  gp_buf_printf(&b, "%s::%s:", d1, d2); /* empty entries are skipped */
  setenv("GRAPHPASS_PLUGIN_PATH", b.data, 1);
  int32_t n = -1;
  cr_assert_eq(H->plugins_load_default(&n), 0, "%s", H->error_message());
  cr_assert_eq(n, 2);
  cr_assert_eq(H->plugin_unload("ext_plugin"), 0, "%s", H->error_message());
  cr_assert_eq(H->plugin_unload("pattern_plugin"), 0, "%s", H->error_message());
  /* a second call loads what is not loaded */
  cr_assert_eq(H->plugins_load_default(&n), 0);
  cr_assert_eq(n, 2);
  cr_assert_eq(H->plugins_load_default(&n), 0);
  cr_assert_eq(n, 0);
  /* a plugin that fails stops it, with its error */
  copy_to("tests/plugins/libext_plugin_major2.so", d2);
  cr_assert_eq(H->plugins_load_default(&n), -1);
  cr_assert_eq(H->error_kind(), GP_ERR_VERSION, "%s", H->error_message());
  H->error_clear();
  setenv("GRAPHPASS_PLUGIN_PATH", "/no/such/dir", 1);
  cr_assert_eq(H->plugins_load_default(&n), -1);
  cr_assert_eq(H->error_kind(), GP_ERR_IO);
  cr_assert(strstr(H->error_message(), "GRAPHPASS_PLUGIN_PATH: /no/such/dir is not a directory"), "%s",
            H->error_message());
  H->error_clear();
  /* unset: the plugin directory of this build (build/plugins), where std is loaded already */
  unsetenv("GRAPHPASS_PLUGIN_PATH");
  cr_assert_eq(H->plugins_load_default(&n), 0, "%s", H->error_message());
  cr_assert_eq(n, 0);
  gp_buf_free(&b);
  gp_plugins_unload_all();
  b = (GPBuf){0};
  gp_buf_printf(&b, "rm -rf '%s' '%s'", d1, d2);
  cr_assert_eq(system(b.data), 0);
  gp_buf_free(&b);
}
