/* test_registry.c -- the pass registry, contexts, pipelines, optimization sets, instruments. */
#include "registry/registry.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Test passes                                                                                 */

enum { RET_COPY = 0, RET_SAME, RET_INT, RET_NONE, RET_BAD_MODULE, RET_ILL_FORMED };

typedef struct TP {
  char name[64];
  int calls;
  bool fail;
  int ret;
  const char *read_key; /* config key read during the run (recorded in seen) */
  GPAny seen;
  char seen_str[64];
  const char *unregister_during; /* a pass to unregister while this one runs */
  bool error_but_ok;             /* sets an error, then succeeds */
  bool fail_silent;              /* fails without setting an error */
} TP;

static int g_deleted;                 /* self_deleter calls (atomic) */
static _Thread_local char t_order[4096]; /* "A,B,C," in call order, per thread */

static void tp_delete(void *self) {
  __atomic_fetch_add(&g_deleted, 1, __ATOMIC_RELAXED);
  free(self);
}

static int tp_call(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  TP *tp = self;
  cr_assert_eq(nargs, 2);
  cr_assert_eq(args[0].type_index, GP_TI_MODULE);
  cr_assert_eq(args[1].type_index, GP_TI_OPAQUE_PTR);
  __atomic_fetch_add(&tp->calls, 1, __ATOMIC_RELAXED);
  strncat(t_order, tp->name, sizeof t_order - strlen(t_order) - 2);
  strcat(t_order, ",");
  GPModule *m = (GPModule *)(void *)args[0].v_obj;
  GPPassContext *ctx = args[1].v_ptr;
  if (tp->read_key) {
    if (gp_ctx_get_config(ctx, tp->read_key, &tp->seen) != 0) return -1;
    if (tp->seen.type_index == GP_TI_RAW_STR) {
      snprintf(tp->seen_str, sizeof tp->seen_str, "%s", tp->seen.v_c_str);
      tp->seen.v_c_str = tp->seen_str;
    }
  }
  if (tp->unregister_during) cr_assert_eq(gp_pass_unregister(tp->unregister_during), 0);
  if (tp->fail) {
    gp_error_set(GP_ERR_VALUE, "kaboom in @main");
    return -1;
  }
  if (tp->fail_silent) return -1;
  if (tp->error_but_ok) gp_error_set(GP_ERR_VALUE, "stale error left by %s", tp->name);
  switch (tp->ret) {
  case RET_COPY: *result = gp_any_obj(gp_module_copy(m)); break;
  case RET_SAME: *result = gp_any_obj(gp_retain(m)); break;
  case RET_INT: *result = gp_any_int(42); break;
  case RET_NONE: break;
  case RET_BAD_MODULE: *result = gp_any_obj(gp_string_new("x", 1)); break;
  case RET_ILL_FORMED: { /* a function using a free variable */
    GPModule *c = gp_module_copy(m);
    GPVar *x = gp_var_new("x", NULL), *y = gp_var_new("y", NULL);
    GPFunctionExpr *fn = gp_function_new(1, &x, &y->base, NULL, NULL);
    cr_assert_eq(gp_module_add(c, "bad", fn, false), 0);
    gp_release(fn);
    gp_release(x);
    gp_release(y);
    *result = gp_any_obj(c);
    break;
  }
  }
  return 0;
}

typedef struct Spec {
  int opt_level;
  const char *const *required;
  const char *const *targets;
  const char *const *excluded;
  const GPConfigKey *keys;
  int nkeys;
  int kind; /* GPPassKind; 0 = transform */
  const char *const *kernels;
} Spec;

static int count(const char *const *a) {
  int n = 0;
  while (a && a[n]) n++;
  return n;
}

static TP *reg_spec(const char *name, Spec s) {
  TP *tp = calloc(1, sizeof *tp);
  snprintf(tp->name, sizeof tp->name, "%s", name);
  GPPassInfo info = {
      .struct_size = sizeof info,
      .abi_version = GP_ABI_VERSION,
      .name = name,
      .opt_level = s.opt_level,
      .kind = s.kind,
      .required = s.required,
      .num_required = count(s.required),
      .targets = s.targets,
      .num_targets = count(s.targets),
      .excluded_targets = s.excluded,
      .num_excluded_targets = count(s.excluded),
      .config_keys = s.keys,
      .num_config_keys = s.nkeys,
      .func = tp_call,
      .self = tp,
      .self_deleter = tp_delete,
      .help = "a test pass",
      .kernels = s.kernels,
      .num_kernels = count(s.kernels),
  };
  cr_assert_eq(gp_pass_register(&info, false, NULL), 0, "register %s: %s", name, gp_error_message());
  return tp;
}

#define REQ(...) ((const char *const[]){__VA_ARGS__, NULL})
static TP *reg(const char *name, int opt_level, const char *const *required) {
  return reg_spec(name, (Spec){.opt_level = opt_level, .required = required});
}

static GPModule *make_module(void) {
  GPModule *m = gp_module_new("test");
  int64_t shape[2] = {1, 3};
  GPVar *x = gp_var_new("x", gp_type_tensor(GP_DT_F32, 2, shape));
  GPFunctionExpr *fn = gp_function_new(1, &x, &x->base, NULL, NULL);
  cr_assert_eq(gp_module_add(m, "main", fn, false), 0);
  gp_release(fn);
  gp_release(x);
  return m;
}

/* A context writing to a memory stream. */
typedef struct Cap {
  char *buf;
  size_t len;
} Cap;

static GPPassContext *ctx_capture(Cap *c) {
  GPPassContext *ctx = gp_ctx_new();
  c->buf = NULL;
  c->len = 0;
  ctx->out = open_memstream(&c->buf, &c->len);
  return ctx;
}

static void ctx_done(GPPassContext *ctx, Cap *c) {
  if (ctx->out) fclose(ctx->out);
  gp_ctx_free(ctx);
  free(c->buf);
}

/* Run and expect success; returns the order string. */
static const char *run_ok(const char *pipeline, GPPassContext *ctx) {
  GPModule *m = make_module();
  t_order[0] = 0;
  GPModule *r = gp_run_pipeline(m, pipeline, ctx);
  cr_assert_not_null(r, "pipeline '%s': %s", pipeline ? pipeline : "(default)", gp_error_message());
  cr_assert_eq(m->obj.ref_count, r == m ? 2u : 1u);
  gp_release(r);
  gp_release(m);
  return t_order;
}

/* Run and expect failure of `kind` with `needle` in the message. */
static void run_err(const char *pipeline, GPPassContext *ctx, int kind, const char *needle) {
  GPModule *m = make_module();
  gp_error_clear();
  t_order[0] = 0;
  GPModule *r = gp_run_pipeline(m, pipeline, ctx);
  cr_assert_null(r, "pipeline '%s' should fail", pipeline);
  cr_assert_eq(gp_error_kind(), kind, "kind %d, message: %s", gp_error_kind(), gp_error_message());
  cr_assert(strstr(gp_error_message(), needle), "message '%s' lacks '%s'", gp_error_message(), needle);
  cr_assert_eq(m->obj.ref_count, 1u, "input module still referenced");
  cr_assert_eq(m->num_functions, 1);
  gp_release(m);
}

/* Drop every pass and set after each test (tests also run in one process under
 * tests/tsan/run_tsan.sh). */
static void fini(void) {
  gp_registry_shutdown();
  __atomic_store_n(&g_deleted, 0, __ATOMIC_RELAXED);
}

TestSuite(registry, .fini = fini);

/* ------------------------------------------------------------------------------------------ */
/* Registration                                                                                */

Test(registry, register_acquire_list_unregister) {
  char name[] = "Alpha";
  const char *req[] = {"Beta", NULL};
  reg("Beta", 0, NULL);
  TP *a = reg(name, 1, req);
  name[0] = 'X'; /* the registry copied the name */
  GPPassEntry *e = gp_pass_acquire("Alpha");
  cr_assert_not_null(e);
  cr_assert_str_eq(e->info.name, "Alpha");
  cr_assert_eq(e->info.opt_level, 1);
  cr_assert_eq(e->info.num_required, 1);
  cr_assert_str_eq(e->info.required[0], "Beta");
  cr_assert_neq((void *)e->info.required, (void *)req);
  cr_assert_str_eq(e->info.help, "a test pass");
  cr_assert_str_eq(e->origin, "host");
  cr_assert_eq(e->info.self, a);
  cr_assert_null(gp_pass_acquire("Xlpha"));

  GPPassEntry **all;
  size_t n = gp_pass_list(&all);
  cr_assert_eq(n, 2);
  cr_assert_str_eq(all[0]->info.name, "Alpha");
  cr_assert_str_eq(all[1]->info.name, "Beta");
  for (size_t i = 0; i < n; i++) gp_pass_entry_release(all[i]);
  gp_free(all);

  /* Unregistering keeps the acquired entry alive; the deleter runs at the last release. */
  cr_assert_eq(gp_pass_unregister("Alpha"), 0);
  cr_assert_null(gp_pass_acquire("Alpha"));
  cr_assert_eq(g_deleted, 0);
  cr_assert_str_eq(e->info.name, "Alpha");
  gp_pass_entry_release(e);
  cr_assert_eq(g_deleted, 1);

  cr_assert_eq(gp_pass_unregister("Alpha"), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_NOT_FOUND);
  cr_assert(strstr(gp_error_message(), "no such pass 'Alpha'"));
}

Test(registry, duplicate_and_override) {
  TP *a1 = reg("Dup", 0, NULL);
  GPPassInfo info = {.struct_size = sizeof info, .abi_version = GP_ABI_VERSION, .name = "Dup",
                     .func = tp_call, .self = calloc(1, sizeof(TP)), .self_deleter = tp_delete};
  cr_assert_eq(gp_pass_register(&info, false, "other"), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_VALUE);
  cr_assert(strstr(gp_error_message(), "pass 'Dup' is already registered (by host)"), "%s", gp_error_message());
  cr_assert_eq(g_deleted, 0); /* the registrant keeps self on failure */
  GPPassEntry *old = gp_pass_acquire("Dup");
  cr_assert_eq(gp_pass_register(&info, true, "other"), 0);
  GPPassEntry *e = gp_pass_acquire("Dup");
  cr_assert_eq(e->info.self, info.self);
  cr_assert_str_eq(e->origin, "other");
  cr_assert_eq(old->info.self, a1);
  cr_assert_eq(g_deleted, 0);
  gp_pass_entry_release(old);
  cr_assert_eq(g_deleted, 1);
  gp_pass_entry_release(e);
}

Test(registry, invalid_registrations) {
  static const char *bad_names[] = {"", "a b", "a/b", "Ä", "x{y}"};
  for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++) {
    GPPassInfo info = {.struct_size = sizeof info, .abi_version = GP_ABI_VERSION, .name = bad_names[i],
                       .func = tp_call};
    cr_assert_eq(gp_pass_register(&info, false, NULL), -1);
    cr_assert_eq(gp_error_kind(), GP_ERR_VALUE, "%s", bad_names[i]);
    cr_assert(strstr(gp_error_message(), "invalid pass name"));
  }
  GPPassInfo info = {.struct_size = sizeof info, .abi_version = GP_ABI_VERSION, .name = "NoFunc"};
  cr_assert_eq(gp_pass_register(&info, false, NULL), -1);
  cr_assert(strstr(gp_error_message(), "func is NULL"));

  info.func = tp_call;
  info.struct_size = GP_STRUCT_SIZE(GPPassInfo, help) - 1;
  cr_assert_eq(gp_pass_register(&info, false, NULL), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_VERSION);
  cr_assert(strstr(gp_error_message(), "smaller than the ABI 1.0 size"));

  info.struct_size = sizeof info;
  info.abi_version = 2u << 16;
  cr_assert_eq(gp_pass_register(&info, false, NULL), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_VERSION);

  info.abi_version = GP_ABI_VERSION;
  const char *req[] = {"bad name"};
  info.required = req;
  info.num_required = 1;
  cr_assert_eq(gp_pass_register(&info, false, NULL), -1);
  cr_assert(strstr(gp_error_message(), "required[0]"), "%s", gp_error_message());
  info.required = NULL;
  cr_assert_eq(gp_pass_register(&info, false, NULL), -1); /* NULL array with a count */
  info.num_required = 0;

  GPConfigKey keys[2] = {{.name = "k", .type_index = GP_TI_INT, .default_value = {.type_index = GP_TI_FLOAT}},
                         {.name = "k", .type_index = GP_TI_INT}};
  info.config_keys = keys;
  info.num_config_keys = 1;
  cr_assert_eq(gp_pass_register(&info, false, NULL), -1);
  cr_assert(strstr(gp_error_message(), "default of config key 'k' does not have type int"), "%s", gp_error_message());
  keys[0].default_value = gp_any_int(3);
  info.num_config_keys = 2;
  cr_assert_eq(gp_pass_register(&info, false, NULL), -1);
  cr_assert(strstr(gp_error_message(), "declared twice"), "%s", gp_error_message());
  keys[1].type_index = GP_TI_DTYPE;
  keys[1].name = "j";
  cr_assert_eq(gp_pass_register(&info, false, NULL), -1);
  cr_assert(strstr(gp_error_message(), "type index"), "%s", gp_error_message());
  cr_assert_null(gp_pass_acquire("NoFunc"));
}

Test(registry, larger_struct_accepted) {
  struct {
    GPPassInfo info;
    void *future_field[4];
  } big;
  memset(&big, 0xab, sizeof big);
  big.info = (GPPassInfo){.struct_size = sizeof big, .abi_version = GP_ABI_VERSION | 7u, .name = "Newer",
                          .opt_level = 3, .func = tp_call};
  cr_assert_eq(gp_pass_register(&big.info, false, NULL), 0, "%s", gp_error_message());
  GPPassEntry *e = gp_pass_acquire("Newer");
  cr_assert_eq(e->info.struct_size, sizeof(GPPassInfo));
  cr_assert_eq(e->info.opt_level, 3);
  gp_pass_entry_release(e);
}

Test(registry, origin) {
  gp_registry_set_origin("libmyplugin");
  cr_assert_str_eq(gp_registry_origin(), "libmyplugin");
  reg("FromPlugin", 0, NULL);
  gp_registry_set_origin(NULL);
  cr_assert_str_eq(gp_registry_origin(), "host");
  GPPassInfo info = {.struct_size = sizeof info, .abi_version = GP_ABI_VERSION, .name = "Explicit",
                     .func = tp_call};
  cr_assert_eq(gp_pass_register(&info, false, "given"), 0);
  GPPassEntry *a = gp_pass_acquire("FromPlugin"), *b = gp_pass_acquire("Explicit");
  cr_assert_str_eq(a->origin, "libmyplugin");
  cr_assert_str_eq(b->origin, "given");
  gp_pass_entry_release(a);
  gp_pass_entry_release(b);
}

/* ------------------------------------------------------------------------------------------ */
/* Resolution                                                                                  */

Test(registry, required_chain_order) {
  reg("C", 0, NULL);
  reg("B", 0, REQ("C"));
  reg("A", 0, REQ("B"));
  reg("X", 0, NULL);
  reg("Y", 0, NULL);
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_str_eq(run_ok("A", ctx), "C,B,A,");
  cr_assert_str_eq(run_ok("X,A,Y", ctx), "X,C,B,A,Y,");
  cr_assert_str_eq(run_ok("C,X,A", ctx), "C,X,B,A,");
  /* Listed passes run where they are listed, each time: C runs as A's dependency and again. */
  cr_assert_str_eq(run_ok("Y,A,X,C", ctx), "Y,C,B,A,X,C,");
  gp_ctx_free(ctx);
}

Test(registry, repeats_and_valid_requirements) {
  reg("Common", 0, NULL);
  reg("P", 0, REQ("Common"));
  reg("Q", 0, REQ("Common", "P"));
  GPPassContext *ctx = gp_ctx_new();
  /* A transform dependency that ran once stays satisfied; listed passes run each time. */
  cr_assert_str_eq(run_ok("P,Q", ctx), "Common,P,Q,");
  cr_assert_str_eq(run_ok("Q,P,Q", ctx), "Common,P,Q,P,Q,");
  cr_assert_str_eq(run_ok("Common,Common", ctx), "Common,Common,");
  /* An analysis dependency is valid until a transform runs. */
  reg_spec("Types", (Spec){.kind = GP_PASS_ANALYSIS});
  reg_spec("Rewrite", (Spec){.required = REQ("Types")});
  reg_spec("Look", (Spec){.required = REQ("Types"), .kind = GP_PASS_ANALYSIS});
  reg_spec("Show", (Spec){.required = REQ("Types"), .kind = GP_PASS_DEBUG});
  cr_assert_str_eq(run_ok("Rewrite,Rewrite", ctx), "Types,Rewrite,Types,Rewrite,");
  cr_assert_str_eq(run_ok("Look,Show,Look", ctx), "Types,Look,Show,Look,");
  cr_assert_str_eq(run_ok("Look,Rewrite,Show", ctx), "Types,Look,Rewrite,Types,Show,");
  cr_assert_str_eq(run_ok("Types,Rewrite", ctx), "Types,Rewrite,");
  gp_ctx_free(ctx);
}

Test(registry, cycles) {
  reg("A", 0, REQ("B"));
  reg("B", 0, REQ("C"));
  reg("C", 0, REQ("A"));
  reg("Self", 0, REQ("Self"));
  reg("Entry", 0, REQ("B"));
  GPPassContext *ctx = gp_ctx_new();
  run_err("A", ctx, GP_ERR_VALUE, "A -> B -> C -> A");
  run_err("Entry", ctx, GP_ERR_VALUE, "cycle between passes: B -> C -> A -> B");
  run_err("Self", ctx, GP_ERR_VALUE, "Self -> Self");
  cr_assert_str_eq(t_order, "");
  gp_ctx_free(ctx);
}

Test(registry, missing_passes) {
  reg("FoldConstant", 2, NULL);
  reg("Fuse", 0, REQ("InferType"));
  GPPassContext *ctx = gp_ctx_new();
  run_err("FoldConstnt", ctx, GP_ERR_NOT_FOUND, "no such pass 'FoldConstnt'; did you mean 'FoldConstant'?");
  run_err("Fuse", ctx, GP_ERR_NOT_FOUND, "no such pass 'InferType' (required by Fuse)");
  run_err("FoldConstant,Zzzzzzzzzz", ctx, GP_ERR_NOT_FOUND, "no such pass 'Zzzzzzzzzz'");
  cr_assert_null(strstr(gp_error_message(), "did you mean"));
  cr_assert_str_eq(t_order, ""); /* nothing ran */
  gp_ctx_free(ctx);
}

/* ------------------------------------------------------------------------------------------ */
/* Enablement                                                                                  */

Test(registry, enablement_table) {
  reg("L0", 0, NULL);
  reg("L3", 3, NULL);
  GPPassEntry *l0 = gp_pass_acquire("L0"), *l3 = gp_pass_acquire("L3");
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(ctx->opt_level, 2);
  cr_assert(gp_pass_enabled(ctx, l0));
  cr_assert_not(gp_pass_enabled(ctx, l3));
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 3), 0);
  cr_assert(gp_pass_enabled(ctx, l3));
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 1), 0);
  cr_assert_eq(gp_ctx_require(ctx, "L3"), 0);
  cr_assert(gp_pass_enabled(ctx, l3)); /* required beats opt level */
  cr_assert_eq(gp_ctx_disable(ctx, "L3"), 0);
  cr_assert_not(gp_pass_enabled(ctx, l3)); /* disabled beats required */
  cr_assert_eq(gp_ctx_disable(ctx, "L0"), 0);
  cr_assert_not(gp_pass_enabled(ctx, l0));
  cr_assert_eq(gp_ctx_set_opt_level(ctx, -1), -1);
  cr_assert_eq(gp_ctx_disable(ctx, "bad name"), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_VALUE);
  cr_assert_eq(gp_ctx_disable(ctx, "L3"), 0); /* idempotent */
  cr_assert_eq(ctx->disabled.len, 2);
  gp_pass_entry_release(l0);
  gp_pass_entry_release(l3);
  gp_ctx_free(ctx);
}

Test(registry, enablement_in_pipelines) {
  reg("Infer", 0, NULL);
  reg("Heavy", 4, NULL);
  reg("Fuse", 0, REQ("Infer", "Heavy"));
  reg("O3", 3, REQ("Infer"));
  reg("Plain", 1, NULL);
  Cap cap;
  GPPassContext *ctx = ctx_capture(&cap);
  ctx->explain = true;
  /* Heavy (opt 4) runs because Fuse, which runs, requires it; O3 is skipped at level 2. */
  cr_assert_str_eq(run_ok("O3,Fuse,Plain", ctx), "Infer,Heavy,Fuse,Plain,");
  fflush(ctx->out);
  cr_assert_str_eq(cap.buf, "explain: O3: skipped (opt-level 3 > context opt-level 2)\n"
                            "explain: Infer: ran (required by Fuse)\n"
                            "explain: Heavy: ran (required by Fuse)\n"
                            "explain: Fuse: ran\n"
                            "explain: Plain: ran\n");
  /* A dependency of only skipped passes does not run. */
  cr_assert_str_eq(run_ok("O3", ctx), "");
  /* Required in the context. */
  cr_assert_eq(gp_ctx_require(ctx, "O3"), 0);
  cr_assert_str_eq(run_ok("O3", ctx), "Infer,O3,");
  /* Disabled wins; disabling a dependency of a running pass is an error naming both. */
  cr_assert_eq(gp_ctx_disable(ctx, "O3"), 0);
  cr_assert_str_eq(run_ok("O3,Plain", ctx), "Plain,");
  cr_assert_eq(gp_ctx_disable(ctx, "Heavy"), 0);
  run_err("Fuse", ctx, GP_ERR_VALUE, "pass Fuse requires Heavy, which is disabled");
  cr_assert_str_eq(t_order, "");
  /* ... but not when the dependent does not run either. */
  cr_assert_eq(gp_ctx_disable(ctx, "Fuse"), 0);
  cr_assert_str_eq(run_ok("Fuse,Plain", ctx), "Plain,");
  /* A disabled / required name that is not a registered pass is refused when it is named. */
  cr_assert_eq(gp_ctx_disable(ctx, "Plian"), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_NOT_FOUND);
  cr_assert_str_eq(gp_error_message(), "no pass named Plian is registered; load its plugin first");
  cr_assert_eq(gp_ctx_require(ctx, "Later"), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_NOT_FOUND);
  cr_assert_str_eq(gp_error_message(), "no pass named Later is registered; load its plugin first");
  cr_assert_eq(ctx->disabled.len, 3);
  cr_assert_eq(ctx->required.len, 1);
  ctx_done(ctx, &cap);

  /* ... and a named pass unregistered since is reported when a pipeline runs. */
  ctx = gp_ctx_new();
  reg("Later", 4, NULL);
  cr_assert_eq(gp_ctx_require(ctx, "Later"), 0);
  cr_assert_str_eq(run_ok("Plain,Later", ctx), "Plain,Later,");
  cr_assert_eq(gp_pass_unregister("Later"), 0);
  run_err("Plain", ctx, GP_ERR_NOT_FOUND, "no such pass 'Later' (in the context's required passes)");
  gp_ctx_free(ctx);
}

Test(registry, opt_level_range) {
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 4), 0);
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 7), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_VALUE);
  cr_assert_str_eq(gp_error_message(), "opt level 7 is above the highest level 4 (levels go from 0 to the highest "
                                       "opt_level of any registered pass, at least 4)");
  cr_assert_eq(ctx->opt_level, 4);
  reg("Deep", 9, NULL); /* a pass at level 9 makes levels up to 9 meaningful */
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 9), 0);
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 10), -1);
  cr_assert(strstr(gp_error_message(), "opt level 10 is above the highest level 9"), "%s", gp_error_message());
  cr_assert_eq(ctx->opt_level, 9);
  gp_ctx_free(ctx);
}

Test(registry, targets) {
  reg_spec("CudaOnly", (Spec){.targets = REQ("cuda", "rocm")});
  reg_spec("NotLlvm", (Spec){.excluded = REQ("llvm")});
  reg("Any", 0, NULL);
  Cap cap;
  GPPassContext *ctx = ctx_capture(&cap);
  ctx->explain = true;
  cr_assert_str_eq(run_ok("CudaOnly,NotLlvm,Any", ctx), "Any,");
  fflush(ctx->out);
  cr_assert_str_eq(cap.buf, "explain: CudaOnly: skipped (target llvm not in [cuda, rocm])\n"
                            "explain: NotLlvm: skipped (target llvm excluded)\n"
                            "explain: Any: ran\n");
  cr_assert_eq(gp_ctx_set_target(ctx, "cuda"), 0);
  cr_assert_str_eq(run_ok("CudaOnly,NotLlvm,Any", ctx), "CudaOnly,NotLlvm,Any,");
  cr_assert_eq(gp_ctx_set_target(ctx, "bad target"), -1);
  cr_assert_str_eq(ctx->target, "cuda");
  ctx_done(ctx, &cap);
}

/* ------------------------------------------------------------------------------------------ */
/* Targets and kernels (ABI 1.2)                                                               */

static int reg_target(const char *name, uint32_t flags, const char *const *kernels) {
  GPTargetInfo t = {.struct_size = sizeof t, .abi_version = GP_ABI_VERSION, .name = name, .help = "a test target",
                    .kernels = kernels, .num_kernels = count(kernels), .flags = flags};
  return gp_target_register(&t, false, NULL);
}

Test(registry, bind_targets_and_exclude_targets) {
  /* Paddle's BindTargets / ExcludeTargets: excluded wins over bound. */
  reg_spec("Bound", (Spec){.targets = REQ("arm", "x86")});
  reg_spec("BoundButExcluded", (Spec){.targets = REQ("arm", "x86"), .excluded = REQ("x86")});
  reg_spec("AllButArm", (Spec){.excluded = REQ("arm")});
  Cap cap;
  GPPassContext *ctx = ctx_capture(&cap);
  ctx->explain = true;
  cr_assert_eq(gp_ctx_set_target(ctx, "x86"), 0);
  cr_assert_str_eq(run_ok("Bound,BoundButExcluded,AllButArm", ctx), "Bound,AllButArm,");
  cr_assert_eq(gp_ctx_set_target(ctx, "arm"), 0);
  cr_assert_str_eq(run_ok("Bound,BoundButExcluded,AllButArm", ctx), "Bound,BoundButExcluded,");
  cr_assert_eq(gp_ctx_set_target(ctx, "opencl"), 0);
  cr_assert_str_eq(run_ok("Bound,BoundButExcluded,AllButArm", ctx), "AllButArm,");
  fflush(ctx->out);
  cr_assert_str_eq(cap.buf, "explain: Bound: ran\n"
                            "explain: BoundButExcluded: skipped (target x86 excluded)\n"
                            "explain: AllButArm: ran\n"
                            "explain: Bound: ran\n"
                            "explain: BoundButExcluded: ran\n"
                            "explain: AllButArm: skipped (target arm excluded)\n"
                            "explain: Bound: skipped (target opencl not in [arm, x86])\n"
                            "explain: BoundButExcluded: skipped (target opencl not in [arm, x86])\n"
                            "explain: AllButArm: ran\n");
  ctx_done(ctx, &cap);
}

Test(registry, kernel_bound_pass_runs_only_with_its_kernels) {
  cr_assert_eq(reg_target("npu", 0, REQ("nn.dense", "fc")), 0, "%s", gp_error_message());
  cr_assert_eq(reg_target("cpu", GP_TARGET_ALL_OPS, REQ("conv2d_relu")), 0, "%s", gp_error_message());
  TP *fc = reg_spec("FcFuse", (Spec){.kernels = REQ("fc")});
  TP *fcr = reg_spec("FcReluFuse", (Spec){.kernels = REQ("fc", "fc_relu", "nn.relu")});
  TP *conv = reg_spec("ConvOps", (Spec){.kernels = REQ("nn.conv2d", "conv2d_relu")});
  reg("Plain", 0, NULL);
  Cap cap;
  GPPassContext *ctx = ctx_capture(&cap);
  ctx->explain = true;
  cr_assert_eq(gp_ctx_set_target(ctx, "npu"), 0);
  cr_assert_str_eq(run_ok("FcFuse,FcReluFuse,ConvOps,Plain", ctx), "FcFuse,Plain,");
  cr_assert_eq(gp_ctx_set_target(ctx, "cpu"), 0); /* every op, plus conv2d_relu */
  cr_assert_str_eq(run_ok("FcFuse,FcReluFuse,ConvOps,Plain", ctx), "ConvOps,Plain,");
  cr_assert_eq(gp_ctx_set_target(ctx, "llvm"), 0); /* not registered here: no kernels */
  cr_assert_str_eq(run_ok("FcFuse,Plain", ctx), "Plain,");
  fflush(ctx->out);
  cr_assert_str_eq(cap.buf,
                   "explain: FcFuse: ran\n"
                   "explain: FcReluFuse: skipped (target 'npu' has no kernels 'fc_relu', 'nn.relu')\n"
                   "explain: ConvOps: skipped (target 'npu' has no kernels 'nn.conv2d', 'conv2d_relu')\n"
                   "explain: Plain: ran\n"
                   "explain: FcFuse: skipped (target 'cpu' has no kernel 'fc')\n"
                   "explain: FcReluFuse: skipped (target 'cpu' has no kernels 'fc', 'fc_relu')\n"
                   "explain: ConvOps: ran\n"
                   "explain: Plain: ran\n"
                   "explain: FcFuse: skipped (target 'llvm' is not registered, so it has no kernel 'fc')\n"
                   "explain: Plain: ran\n");
  cr_assert_eq(fc->calls, 1);
  cr_assert_eq(fcr->calls, 0);
  cr_assert_eq(conv->calls, 1);

  /* once the target gains the kernels, the pass runs */
  GPTargetInfo t = {.struct_size = sizeof t, .abi_version = GP_ABI_VERSION, .name = "npu",
                    .kernels = REQ("fc", "fc_relu", "nn.relu"), .num_kernels = 3};
  cr_assert_eq(gp_target_register(&t, true, NULL), 0, "%s", gp_error_message());
  cr_assert_eq(gp_ctx_set_target(ctx, "npu"), 0);
  cr_assert_str_eq(run_ok("FcReluFuse", ctx), "FcReluFuse,");
  /* a target and a kernel binding together: the target reason comes first */
  reg_spec("ArmFc", (Spec){.targets = REQ("arm"), .kernels = REQ("fc")});
  fclose(ctx->out);
  free(cap.buf);
  ctx->out = open_memstream(&cap.buf, &cap.len);
  cr_assert_str_eq(run_ok("ArmFc", ctx), "");
  fflush(ctx->out);
  cr_assert_str_eq(cap.buf, "explain: ArmFc: skipped (target npu not in [arm])\n");
  ctx_done(ctx, &cap);
}

Test(registry, kernel_bound_requirement_is_skipped_not_fatal) {
  reg_target("npu", 0, REQ("fc"));
  reg_spec("NeedsRelu", (Spec){.kernels = REQ("fc_relu")});
  reg("User", 0, REQ("NeedsRelu"));
  Cap cap;
  GPPassContext *ctx = ctx_capture(&cap);
  ctx->explain = true;
  cr_assert_eq(gp_ctx_set_target(ctx, "npu"), 0);
  cr_assert_str_eq(run_ok("User", ctx), "User,");
  fflush(ctx->out);
  cr_assert_str_eq(cap.buf, "explain: NeedsRelu: skipped (target 'npu' has no kernel 'fc_relu'; required by User)\n"
                            "explain: User: ran\n");
  ctx_done(ctx, &cap);
}

Test(registry, target_has_kernel_and_list) {
  cr_assert_eq(reg_target("b_npu", 0, REQ("fc", "nn.dense")), 0);
  cr_assert_eq(reg_target("a_cpu", GP_TARGET_ALL_OPS, REQ("fc_relu")), 0);
  cr_assert_eq(gp_target_has_kernel("b_npu", "fc"), 1);
  cr_assert_eq(gp_target_has_kernel("b_npu", "nn.dense"), 1);
  cr_assert_eq(gp_target_has_kernel("b_npu", "nn.relu"), 0);
  cr_assert_eq(gp_target_has_kernel("a_cpu", "nn.relu"), 1);     /* an op */
  cr_assert_eq(gp_target_has_kernel("a_cpu", "fc_relu"), 1);     /* listed composite */
  cr_assert_eq(gp_target_has_kernel("a_cpu", "fc"), 0);          /* not an op, not listed */
  cr_assert_eq(gp_target_has_kernel("nowhere", "nn.relu"), 0);
  cr_assert_eq(gp_error_kind(), GP_OK);
  cr_assert_eq(gp_target_has_kernel(NULL, "fc"), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_VALUE);
  gp_error_clear();

  char **names = NULL;
  int32_t n = -1;
  cr_assert_eq(gp_target_names(&names, &n), 0);
  cr_assert_eq(n, 2);
  cr_assert_str_eq(names[0], "a_cpu");
  cr_assert_str_eq(names[1], "b_npu");
  gp_free(names); /* one block */
  cr_assert_eq(gp_target_names(NULL, &n), -1);

  cr_assert_eq(gp_target_unregister("a_cpu"), 0);
  cr_assert_eq(gp_target_has_kernel("a_cpu", "nn.relu"), 0);
  cr_assert_eq(gp_target_unregister("a_cpu"), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_NOT_FOUND);
  cr_assert_str_eq(gp_error_message(), "no such target 'a_cpu' (known targets: b_npu)");
  cr_assert_eq(gp_target_unregister("b_npu"), 0);
  cr_assert_eq(gp_target_unregister(NULL), -1);
  cr_assert_str_eq(gp_error_message(), "no such target '(null)' (no target is registered)");
  cr_assert_eq(gp_target_names(&names, &n), 0);
  cr_assert_eq(n, 0);
  cr_assert_null(names);
  gp_error_clear();
}

static void target_err(const GPTargetInfo *t, int kind, const char *msg) {
  gp_error_clear();
  cr_assert_eq(gp_target_register(t, false, NULL), -1, "should fail: %s", msg);
  cr_assert_eq(gp_error_kind(), kind, "%s", gp_error_message());
  cr_assert(strstr(gp_error_message(), msg), "message '%s' lacks '%s'", gp_error_message(), msg);
}

Test(registry, target_registration_errors) {
  target_err(NULL, GP_ERR_VALUE, "target registration: info is NULL");
  GPTargetInfo t = {.struct_size = sizeof t, .abi_version = GP_ABI_VERSION, .name = "x"};
  static const char *bad_names[] = {"", "a b", "a/b", "x{y}"};
  for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++) {
    t.name = bad_names[i];
    target_err(&t, GP_ERR_VALUE, "invalid target name");
  }
  t.name = NULL;
  target_err(&t, GP_ERR_VALUE, "invalid target name '(null)'");
  t.name = "x";
  t.struct_size = GP_STRUCT_SIZE(GPTargetInfo, flags) - 1;
  target_err(&t, GP_ERR_VERSION, "smaller than the ABI 1.2 size");
  t.struct_size = 0;
  target_err(&t, GP_ERR_VERSION, "struct_size 0");
  t.struct_size = sizeof t;
  t.abi_version = 2u << 16;
  target_err(&t, GP_ERR_VERSION, "ABI version 2.0");
  t.abi_version = GP_ABI_VERSION;
  t.flags = 0x6;
  target_err(&t, GP_ERR_VALUE, "target 'x': unknown flags 0x6");
  t.flags = 0;
  t.num_kernels = 2;
  target_err(&t, GP_ERR_VALUE, "target 'x': kernels is NULL but its count is 2");
  t.num_kernels = -1;
  target_err(&t, GP_ERR_VALUE, "negative kernel count -1");
  const char *ks[] = {"fc", NULL, "fc"};
  t.kernels = ks;
  t.num_kernels = 2;
  target_err(&t, GP_ERR_VALUE, "target 'x': kernels[1] is not a valid name ('(null)')");
  ks[1] = "bad kernel";
  target_err(&t, GP_ERR_VALUE, "kernels[1] is not a valid name ('bad kernel')");
  ks[1] = "fc_relu";
  t.num_kernels = 3;
  target_err(&t, GP_ERR_VALUE, "target 'x': kernel 'fc' is listed twice (kernels[0] and kernels[2])");
  char **names;
  int32_t n;
  cr_assert_eq(gp_target_names(&names, &n), 0);
  cr_assert_eq(n, 0, "nothing registered by the failures");

  /* duplicates: an error naming who has it, unless allow_override */
  t.num_kernels = 2;
  cr_assert_eq(gp_target_register(&t, false, "plugA"), 0, "%s", gp_error_message());
  gp_error_clear();
  cr_assert_eq(gp_target_register(&t, false, "plugB"), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_VALUE);
  cr_assert_str_eq(gp_error_message(), "target 'x' is already registered (by plugA)");
  cr_assert_eq(gp_target_register(&t, true, "plugB"), 0, "%s", gp_error_message());
  GPTargetView *v;
  size_t nv = gp_target_views(&v);
  cr_assert_eq(nv, 1);
  cr_assert_str_eq(v[0].origin, "plugB");
  gp_target_views_free(v, nv);

  /* a larger struct from a newer minor is accepted; fields past struct_size are not read */
  struct {
    GPTargetInfo info;
    void *future[4];
  } big;
  memset(&big, 0xab, sizeof big);
  big.info = (GPTargetInfo){.struct_size = sizeof big, .abi_version = GP_ABI_VERSION | 9u, .name = "newer"};
  cr_assert_eq(gp_target_register(&big.info, false, NULL), 0, "%s", gp_error_message());
}

Test(registry, older_minor_pass_info_has_no_kernels) {
  /* A 1.1 plugin's GPPassInfo ends at `help`; the bytes after it are not the plugin's. */
  size_t v11 = GP_STRUCT_SIZE(GPPassInfo, help);
  unsigned char *raw = malloc(sizeof(GPPassInfo));
  memset(raw, 0xab, sizeof(GPPassInfo));
  TP *tp = calloc(1, sizeof *tp);
  snprintf(tp->name, sizeof tp->name, "OldPlugin");
  GPPassInfo old = {.struct_size = v11, .abi_version = (1u << 16) | 1u, .name = "OldPlugin", .opt_level = 0,
                    .func = tp_call, .self = tp, .self_deleter = tp_delete};
  memcpy(raw, &old, v11);
  cr_assert_eq(gp_pass_register((const GPPassInfo *)(void *)raw, false, NULL), 0, "%s", gp_error_message());
  free(raw);
  GPPassEntry *e = gp_pass_acquire("OldPlugin");
  cr_assert_not_null(e);
  cr_assert_eq(e->info.num_kernels, 0);
  cr_assert_null(e->info.kernels);
  gp_pass_entry_release(e);
  /* it runs for any target, registered or not */
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_target(ctx, "anything"), 0);
  cr_assert_str_eq(run_ok("OldPlugin", ctx), "OldPlugin,");
  gp_ctx_free(ctx);

  /* kernel names are checked like pass names */
  GPPassInfo info = {.struct_size = sizeof info, .abi_version = GP_ABI_VERSION, .name = "BadKernels",
                     .func = tp_call, .kernels = (const char *const[]){"fc", "no good"}, .num_kernels = 2};
  cr_assert_eq(gp_pass_register(&info, false, NULL), -1);
  cr_assert_str_eq(gp_error_message(), "pass 'BadKernels': kernels[1] is not a valid name ('no good')");
  info.kernels = NULL;
  cr_assert_eq(gp_pass_register(&info, false, NULL), -1);
  cr_assert_str_eq(gp_error_message(), "pass 'BadKernels': kernels is NULL but its count is 2");
  info.num_kernels = -3;
  cr_assert_eq(gp_pass_register(&info, false, NULL), -1);
  cr_assert_str_eq(gp_error_message(), "pass 'BadKernels': negative kernels count -3");
  gp_error_clear();
  /* the registry keeps its own copy */
  const char *ks[] = {"fc", "fc_relu"};
  info.kernels = ks;
  info.num_kernels = 2;
  cr_assert_eq(gp_pass_register(&info, false, NULL), 0, "%s", gp_error_message());
  ks[0] = "changed";
  e = gp_pass_acquire("BadKernels");
  cr_assert_eq(e->info.num_kernels, 2);
  cr_assert_str_eq(e->info.kernels[0], "fc");
  cr_assert_str_eq(e->info.kernels[1], "fc_relu");
  gp_pass_entry_release(e);
}

Test(registry, target_views_and_origin_removal) {
  reg("A", 0, NULL);
  reg("B", 0, NULL);
  cr_assert_eq(gp_opt_set_register("npu", "default", "A,B"), 0);
  cr_assert_eq(gp_opt_set_register("npu", "fast", "A"), 0);
  cr_assert_eq(gp_opt_set_register("gpu", "only", "B"), 0); /* sets, no target entry */
  cr_assert_eq(gp_opt_set_select("npu", "fast"), 0);
  GPTargetInfo t = {.struct_size = sizeof t, .abi_version = GP_ABI_VERSION, .name = "npu", .help = "an NPU",
                    .kernels = REQ("nn.dense", "fc"), .num_kernels = 2};
  cr_assert_eq(gp_target_register(&t, false, "plug"), 0);
  t.name = "cpu";
  t.flags = GP_TARGET_ALL_OPS;
  t.num_kernels = 0;
  t.help = NULL;
  cr_assert_eq(gp_target_register(&t, false, "host"), 0);
  GPTargetView *v;
  size_t n = gp_target_views(&v);
  cr_assert_eq(n, 3);
  cr_assert_str_eq(v[0].name, "cpu");
  cr_assert(v[0].registered);
  cr_assert_eq(v[0].flags, GP_TARGET_ALL_OPS);
  cr_assert_eq(v[0].num_sets, 0);
  cr_assert_null(v[0].default_set);
  cr_assert_null(v[0].help);
  cr_assert_str_eq(v[1].name, "gpu");
  cr_assert(!v[1].registered);
  cr_assert_null(v[1].origin);
  cr_assert_eq(v[1].num_sets, 1);
  cr_assert_null(v[1].default_set); /* no "default" set */
  cr_assert_str_eq(v[2].name, "npu");
  cr_assert_str_eq(v[2].origin, "plug");
  cr_assert_str_eq(v[2].help, "an NPU");
  cr_assert_eq(v[2].num_kernels, 2);
  cr_assert_str_eq(v[2].kernels[0], "fc"); /* sorted */
  cr_assert_str_eq(v[2].kernels[1], "nn.dense");
  cr_assert_eq(v[2].num_sets, 2);
  cr_assert_str_eq(v[2].set_names[0], "default");
  cr_assert_str_eq(v[2].set_pipelines[0], "A,B");
  cr_assert_str_eq(v[2].set_names[1], "fast");
  cr_assert_str_eq(v[2].default_set, "fast");
  gp_target_views_free(v, n);

  gp_targets_unregister_origin("plug");
  cr_assert_eq(gp_target_has_kernel("npu", "fc"), 0);
  cr_assert_eq(gp_target_has_kernel("cpu", "nn.dense"), 1);
}

/* ------------------------------------------------------------------------------------------ */
/* Optimization sets                                                                           */

Test(registry, ctx_chooses_its_opt_set) {
  reg("A", 0, NULL);
  reg("B", 0, NULL);
  cr_assert_eq(gp_opt_set_register("llvm", "default", "A"), 0);
  cr_assert_eq(gp_opt_set_register("llvm", "fast", "B"), 0);
  GPPassContext *ctx = gp_ctx_new(), *other = gp_ctx_new();
  cr_assert_str_eq(run_ok(NULL, ctx), "A,");
  cr_assert_eq(gp_ctx_set_opt_set(ctx, "fast"), 0);
  cr_assert_str_eq(run_ok(NULL, ctx), "B,");
  cr_assert_str_eq(run_ok(NULL, other), "A,"); /* per context, not global */
  cr_assert_str_eq(run_ok("A,A", ctx), "A,A,");  /* a given pipeline wins */
  /* known target: refused at set time, naming the target and its sets */
  cr_assert_eq(gp_ctx_set_opt_set(ctx, "slow"), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_NOT_FOUND);
  cr_assert_str_eq(gp_error_message(), "target 'llvm' has no optimization set 'slow' (sets: default, fast)");
  cr_assert_str_eq(run_ok(NULL, ctx), "B,"); /* the choice stayed */
  cr_assert_eq(gp_ctx_set_opt_set(ctx, "bad name"), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_VALUE);
  /* a target without sets (yet): refused when the pipeline runs */
  cr_assert_eq(gp_ctx_set_target(other, "npu"), 0);
  cr_assert_eq(gp_ctx_set_opt_set(other, "fast"), 0);
  cr_assert_eq(gp_opt_set_register("npu", "default", "A"), 0);
  run_err(NULL, other, GP_ERR_NOT_FOUND, "target 'npu' has no optimization set 'fast' (sets: default)");
  cr_assert_eq(gp_ctx_set_opt_set(other, NULL), 0); /* back to the default */
  cr_assert_str_eq(run_ok(NULL, other), "A,");
  gp_ctx_free(other);
  gp_ctx_free(ctx);
}

Test(registry, opt_set_register_validates) {
  reg("A", 0, NULL);
  reg("X", 0, REQ("Y"));
  reg("Y", 0, REQ("X"));
  reg("Z", 3, REQ("Gone"));
  cr_assert_eq(gp_opt_set_register("llvm", "fast", "A,Nope"), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_NOT_FOUND);
  cr_assert_str_eq(gp_error_message(), "optimization set 'fast' of target 'llvm': no such pass 'Nope'");
  cr_assert_eq(gp_opt_set_register("llvm", "cyc", "A,X"), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_VALUE);
  cr_assert_str_eq(gp_error_message(),
                   "optimization set 'cyc' of target 'llvm': dependency cycle between passes: X -> Y -> X");
  /* requirements are planned as at the highest opt level */
  cr_assert_eq(gp_opt_set_register("llvm", "deps", "Z"), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_NOT_FOUND);
  cr_assert_str_eq(gp_error_message(),
                   "optimization set 'deps' of target 'llvm': no such pass 'Gone' (required by Z)");
  cr_assert_eq(gp_opt_set_register("llvm", "cfg", "A{nokey=1}"), -1);
  cr_assert(strstr(gp_error_message(), "optimization set 'cfg' of target 'llvm': pass A has no config key 'nokey'"),
            "%s", gp_error_message());
  /* nothing was registered */
  char *list = gp_opt_set_list();
  cr_assert_str_eq(list, "");
  gp_free(list);
  cr_assert_eq(gp_opt_set_register("llvm", "fast", "A"), 0);
}

Test(registry, opt_sets) {
  reg("A", 0, NULL);
  reg("B", 0, NULL);
  reg("C", 0, NULL);
  cr_assert_eq(gp_opt_set_register("llvm", "default", "A,B"), 0);
  cr_assert_eq(gp_opt_set_register("llvm", "fast", "C"), 0);
  cr_assert_eq(gp_opt_set_register("cuda", "default", "B{}"), 0);
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_str_eq(run_ok(NULL, ctx), "A,B,");
  char *s = gp_opt_set_get("llvm", "fast");
  cr_assert_str_eq(s, "C");
  gp_free(s);
  cr_assert_null(gp_opt_set_get("llvm", "slow"));
  cr_assert_eq(gp_error_kind(), GP_ERR_NOT_FOUND);
  cr_assert(strstr(gp_error_message(), "target 'llvm' has no optimization set 'slow' (sets: default, fast)"),
            "%s", gp_error_message());
  /* Swap at run time. */
  cr_assert_eq(gp_opt_set_select("llvm", "fast"), 0);
  cr_assert_str_eq(run_ok(NULL, ctx), "C,");
  cr_assert_eq(gp_opt_set_register("llvm", "fast", "B,C"), 0); /* replace */
  cr_assert_str_eq(run_ok(NULL, ctx), "B,C,");
  cr_assert_eq(gp_opt_set_select("llvm", "nope"), -1);
  cr_assert_eq(gp_opt_set_select("llvm", "default"), 0);
  cr_assert_str_eq(run_ok(NULL, ctx), "A,B,");
  cr_assert_eq(gp_ctx_set_target(ctx, "cuda"), 0);
  cr_assert_str_eq(run_ok(NULL, ctx), "B,");
  char *list = gp_opt_set_list();
  cr_assert_str_eq(list, "cuda default B{}\nllvm default A,B\nllvm fast B,C\n");
  gp_free(list);
  /* A target without sets. */
  cr_assert_eq(gp_ctx_set_target(ctx, "hexagon"), 0);
  run_err(NULL, ctx, GP_ERR_NOT_FOUND, "no optimization sets for target 'hexagon' (known targets: cuda, llvm)");
  /* A target with sets but no default. */
  cr_assert_eq(gp_opt_set_register("hexagon", "O1", "A"), 0);
  run_err(NULL, ctx, GP_ERR_NOT_FOUND, "target 'hexagon' has no optimization set 'default' (sets: O1)");
  cr_assert_eq(gp_opt_set_select("hexagon", "O1"), 0);
  cr_assert_str_eq(run_ok(NULL, ctx), "A,");
  /* Bad registrations. */
  cr_assert_eq(gp_opt_set_register("llvm", "broken", "A,,B"), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_PARSE);
  cr_assert(strstr(gp_error_message(), "optimization set 'broken' of target 'llvm': pipeline:1:3: error:"),
            "%s", gp_error_message());
  cr_assert_eq(gp_opt_set_register("", "x", "A"), -1);
  cr_assert_eq(gp_opt_set_register("llvm", NULL, "A"), -1);
  gp_ctx_free(ctx);
}

/* ------------------------------------------------------------------------------------------ */
/* Config                                                                                      */

static const GPConfigKey fuse_keys[] = {
    {.name = "max_depth", .type_index = GP_TI_INT, .default_value = {.type_index = GP_TI_INT, .v_int64 = 256}},
    {.name = "relay.FuseOps.link_params", .type_index = GP_TI_BOOL},
    {.name = "ratio", .type_index = GP_TI_FLOAT, .default_value = {.type_index = GP_TI_INT, .v_int64 = 1}},
    {.name = "layout", .type_index = GP_TI_RAW_STR, .default_value = {.type_index = GP_TI_RAW_STR, .v_c_str = "NCHW"}},
};

Test(registry, config_set_get) {
  char layout_default[] = "NCHW";
  GPConfigKey keys[4];
  memcpy(keys, fuse_keys, sizeof keys);
  keys[3].default_value.v_c_str = layout_default;
  reg_spec("FuseOps", (Spec){.keys = keys, .nkeys = 4});
  layout_default[0] = 'X'; /* copied */
  reg_spec("Other", (Spec){.keys = (GPConfigKey[]){{.name = "level", .type_index = GP_TI_INT}}, .nkeys = 1});
  GPPassContext *ctx = gp_ctx_new();
  GPAny v;
  cr_assert_eq(gp_ctx_get_config(ctx, "FuseOps.max_depth", &v), 0);
  cr_assert_eq(v.type_index, GP_TI_INT);
  cr_assert_eq(v.v_int64, 256);
  cr_assert_eq(gp_ctx_get_config(ctx, "relay.FuseOps.link_params", &v), 0);
  cr_assert_eq(v.type_index, GP_TI_BOOL);
  cr_assert_eq(v.v_int64, 0);
  cr_assert_eq(gp_ctx_get_config(ctx, "FuseOps.ratio", &v), 0);
  cr_assert_eq(v.type_index, GP_TI_FLOAT);
  cr_assert_float_eq(v.v_float64, 1.0, 1e-12);
  cr_assert_eq(gp_ctx_get_config(ctx, "FuseOps.layout", &v), 0);
  cr_assert_str_eq(v.v_c_str, "NCHW");

  cr_assert_eq(gp_ctx_set_config(ctx, "FuseOps.max_depth", "-12"), 0);
  cr_assert_eq(gp_ctx_set_config(ctx, "FuseOps.max_depth", "30"), 0); /* replaces */
  cr_assert_eq(gp_ctx_get_config(ctx, "FuseOps.max_depth", &v), 0);
  cr_assert_eq(v.v_int64, 30);
  static const char *trues[] = {"true", "1", "True"}, *falses[] = {"false", "0", "FALSE"};
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(gp_ctx_set_config(ctx, "relay.FuseOps.link_params", trues[i]), 0);
    cr_assert_eq(gp_ctx_get_config(ctx, "relay.FuseOps.link_params", &v), 0);
    cr_assert_eq(v.v_int64, 1);
    cr_assert_eq(gp_ctx_set_config(ctx, "relay.FuseOps.link_params", falses[i]), 0);
    cr_assert_eq(gp_ctx_get_config(ctx, "relay.FuseOps.link_params", &v), 0);
    cr_assert_eq(v.v_int64, 0);
  }
  cr_assert_eq(gp_ctx_set_config(ctx, "FuseOps.ratio", "0.25"), 0);
  cr_assert_eq(gp_ctx_get_config(ctx, "FuseOps.ratio", &v), 0);
  cr_assert_float_eq(v.v_float64, 0.25, 1e-12);
  cr_assert_eq(gp_ctx_set_config(ctx, "FuseOps.layout", "NHWC, really"), 0);
  cr_assert_eq(gp_ctx_get_config(ctx, "FuseOps.layout", &v), 0);
  cr_assert_str_eq(v.v_c_str, "NHWC, really");

  /* Type errors name the expected type and leave the old value. */
  struct { const char *key, *val, *msg; } bad[] = {
      {"FuseOps.max_depth", "abc", "config 'FuseOps.max_depth': expected int, got 'abc'"},
      {"FuseOps.max_depth", "1.5", "expected int"},
      {"FuseOps.max_depth", "", "expected int"},
      {"FuseOps.max_depth", "99999999999999999999", "out of range"},
      {"relay.FuseOps.link_params", "yes", "expected bool (true/false/1/0), got 'yes'"},
      {"FuseOps.ratio", "fast", "expected float, got 'fast'"},
      {"FuseOps.ratio", "nan", "expected float"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_assert_eq(gp_ctx_set_config(ctx, bad[i].key, bad[i].val), -1);
    cr_assert_eq(gp_error_kind(), GP_ERR_VALUE);
    cr_assert(strstr(gp_error_message(), bad[i].msg), "%s", gp_error_message());
  }
  cr_assert_eq(gp_ctx_get_config(ctx, "FuseOps.max_depth", &v), 0);
  cr_assert_eq(v.v_int64, 30);

  /* Unknown keys list the valid ones, sorted. */
  const char *expect = "unknown config key 'FuseOps.depth'; valid keys: FuseOps.layout, FuseOps.max_depth, "
                       "FuseOps.ratio, Other.level, relay.FuseOps.link_params";
  cr_assert_eq(gp_ctx_set_config(ctx, "FuseOps.depth", "1"), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_NOT_FOUND);
  cr_assert_str_eq(gp_error_message(), expect);
  cr_assert_eq(gp_ctx_get_config(ctx, "FuseOps.depth", &v), -1);
  cr_assert_str_eq(gp_error_message(), expect);
  cr_assert_eq(gp_ctx_set_config(ctx, "max_depth", "1"), -1); /* relative keys are not global */
  cr_assert_eq(gp_ctx_set_config(ctx, "FuseOps.link_params", "1"), -1); /* declared with a dot */
  gp_ctx_free(ctx);
}

Test(registry, config_key_conflicts) {
  reg_spec("FuseOps", (Spec){.keys = fuse_keys, .nkeys = 4});
  GPPassInfo info = {.struct_size = sizeof info, .abi_version = GP_ABI_VERSION, .name = "Thief",
                     .func = tp_call, .config_keys = &fuse_keys[1], .num_config_keys = 1};
  cr_assert_eq(gp_pass_register(&info, false, NULL), -1);
  cr_assert(strstr(gp_error_message(), "config key 'relay.FuseOps.link_params' is already declared by pass 'FuseOps'"),
            "%s", gp_error_message());
  /* Overriding the declaring pass itself is fine. */
  info.name = "FuseOps";
  cr_assert_eq(gp_pass_register(&info, true, NULL), 0, "%s", gp_error_message());
  GPPassContext *ctx = gp_ctx_new();
  GPAny v;
  cr_assert_eq(gp_ctx_get_config(ctx, "FuseOps.max_depth", &v), -1); /* gone with the old entry */
  cr_assert_eq(gp_ctx_get_config(ctx, "relay.FuseOps.link_params", &v), 0);
  gp_ctx_free(ctx);
}

Test(registry, pipeline_item_config) {
  TP *f = reg_spec("FuseOps", (Spec){.keys = fuse_keys, .nkeys = 4});
  TP *o = reg_spec("Other", (Spec){.keys = (GPConfigKey[]){{.name = "level", .type_index = GP_TI_INT}}, .nkeys = 1});
  f->read_key = "FuseOps.max_depth";
  o->read_key = "FuseOps.max_depth";
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_config(ctx, "FuseOps.max_depth", "7"), 0);
  cr_assert_str_eq(run_ok("FuseOps{max_depth=3},Other", ctx), "FuseOps,Other,");
  cr_assert_eq(f->seen.v_int64, 3);
  cr_assert_eq(o->seen.v_int64, 7); /* only for that pass */
  GPAny v;
  cr_assert_eq(gp_ctx_get_config(ctx, "FuseOps.max_depth", &v), 0);
  cr_assert_eq(v.v_int64, 7); /* restored */

  /* Full keys, strings with commas, a key not set in the context (removed afterwards). */
  f->read_key = "FuseOps.layout";
  cr_assert_str_eq(run_ok(" FuseOps { FuseOps.layout = \"N,C\" , relay.FuseOps.link_params=1 } ", ctx),
                   "FuseOps,");
  cr_assert_str_eq(f->seen_str, "N,C");
  cr_assert_null(gp_strmap_get(&ctx->config, "FuseOps.layout"));
  cr_assert_eq(gp_ctx_get_config(ctx, "FuseOps.layout", &v), 0);
  cr_assert_str_eq(v.v_c_str, "NCHW");

  run_err("FuseOps{depth=1}", ctx, GP_ERR_NOT_FOUND, "pass FuseOps has no config key 'depth' (its keys: "
                                                      "FuseOps.max_depth, relay.FuseOps.link_params, "
                                                      "FuseOps.ratio, FuseOps.layout)");
  run_err("Other{max_depth=1}", ctx, GP_ERR_NOT_FOUND, "pass Other has no config key 'max_depth'");
  run_err("FuseOps{max_depth=deep}", ctx, GP_ERR_VALUE, "config 'FuseOps.max_depth': expected int, got 'deep'");
  cr_assert_str_eq(t_order, "");
  gp_ctx_free(ctx);
}

/* ------------------------------------------------------------------------------------------ */
/* Pipeline syntax                                                                             */

Test(registry, pipeline_parse) {
  GPPipeline p;
  cr_assert_eq(gp_pipeline_parse("  A ,\tB{ k = v1 , k2=\"x, \\\"y\\\"\" },C{}  ", &p), 0, "%s", gp_error_message());
  cr_assert_eq(p.n, 3);
  cr_assert_str_eq(p.items[0].name, "A");
  cr_assert_eq(p.items[0].col, 3);
  cr_assert_str_eq(p.items[1].name, "B");
  cr_assert_eq(p.items[1].col, 7);
  cr_assert_eq(p.items[1].nconfig, 2);
  cr_assert_str_eq(p.items[1].keys[0], "k");
  cr_assert_str_eq(p.items[1].values[0], "v1");
  cr_assert_str_eq(p.items[1].keys[1], "k2");
  cr_assert_str_eq(p.items[1].values[1], "x, \"y\"");
  cr_assert_str_eq(p.items[2].name, "C");
  cr_assert_eq(p.items[2].nconfig, 0);
  gp_pipeline_free(&p);
  cr_assert_eq(gp_pipeline_parse("   ", &p), 0);
  cr_assert_eq(p.n, 0);
  gp_pipeline_free(&p);
  cr_assert_eq(gp_pipeline_parse("relay.FuseOps,qnn-Legalize{a.b=1.5e3}", &p), 0);
  cr_assert_str_eq(p.items[1].values[0], "1.5e3");
  gp_pipeline_free(&p);

  struct { const char *text, *msg; } bad[] = {
      {"A,,B", "pipeline:1:3: error: expected a pass name, found ','"},
      {"A,", "pipeline:1:3: error: expected a pass name, found end of input"},
      {",A", "pipeline:1:1: error: expected a pass name, found ','"},
      {"A B", "pipeline:1:3: error: expected ',' between passes, found 'B'"},
      {"A;B", "pipeline:1:2: error: expected ',' between passes, found ';'"},
      {"A{k=1", "pipeline:1:2: error: unterminated '{' (expected '}')"},
      {"A{k=1 B}", "pipeline:1:7: error: expected ',' or '}', found 'B'"},
      {"A{k=a{b}", "pipeline:1:6: error: expected ',' or '}', found '{'"},
      {"A{=1}", "pipeline:1:3: error: expected a config key, found '='"},
      {"A{k}", "pipeline:1:4: error: expected '=' after 'k', found '}'"},
      {"A{k=}", "pipeline:1:5: error: expected a value for 'k', found '}'"},
      {"A{k=1,k=2}", "pipeline:1:7: error: duplicate config key 'k'"},
      {"A{k=\"open}", "pipeline:1:5: error: unterminated string for 'k'"},
      {"A,\n  B C", "pipeline:2:5: error: expected ',' between passes, found 'C'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    p.n = 99;
    cr_assert_eq(gp_pipeline_parse(bad[i].text, &p), -1, "%s", bad[i].text);
    cr_assert_eq(gp_error_kind(), GP_ERR_PARSE);
    cr_assert_str_eq(gp_error_message(), bad[i].msg);
    cr_assert_eq(p.n, 0);
  }
  /* gp_run_pipeline reports the same errors. */
  reg("A", 0, NULL);
  GPPassContext *ctx = gp_ctx_new();
  run_err("A,,A", ctx, GP_ERR_PARSE, "pipeline:1:3: error: expected a pass name");
  cr_assert_str_eq(run_ok("", ctx), ""); /* an empty pipeline returns the input */
  gp_ctx_free(ctx);
}

/* ------------------------------------------------------------------------------------------ */
/* Running                                                                                     */

Test(registry, failure_leaves_input_and_leaks_nothing) {
  reg("First", 0, NULL);
  TP *boom = reg("Boom", 0, NULL);
  reg("Last", 0, NULL);
  boom->fail = true;
  GPPassContext *ctx = gp_ctx_new();
  run_err("First,Boom,Last", ctx, GP_ERR_PASS, "pass Boom: kaboom in @main");
  cr_assert_str_eq(gp_error_message(), "pass Boom: kaboom in @main");
  cr_assert_str_eq(t_order, "First,Boom,");
  boom->fail = false;
  boom->ret = RET_INT;
  run_err("First,Boom,Last", ctx, GP_ERR_PASS, "pass Boom returned int instead of a module");
  boom->ret = RET_NONE;
  run_err("Boom", ctx, GP_ERR_PASS, "pass Boom returned nothing instead of a module");
  boom->ret = RET_BAD_MODULE;
  run_err("First,Boom", ctx, GP_ERR_PASS, "pass Boom returned str instead of a module");
  /* A pass returning its input retained; the pipeline result is a new reference. */
  boom->ret = RET_SAME;
  GPModule *m = make_module();
  GPModule *r = gp_run_pipeline(m, "Boom", ctx);
  cr_assert_eq(r, m);
  cr_assert_eq(m->obj.ref_count, 2u);
  gp_release(r);
  r = gp_run_pipeline(m, "First,Boom,Last", ctx);
  cr_assert_not_null(r);
  cr_assert_neq(r, m);
  cr_assert_eq(r->obj.ref_count, 1u);
  cr_assert_eq(m->obj.ref_count, 1u);
  gp_release(r);
  gp_release(m);
  gp_ctx_free(ctx);
}

Test(registry, null_context_and_module) {
  reg("A", 0, NULL);
  GPModule *m = make_module();
  GPModule *r = gp_run_pipeline(m, "A", NULL);
  cr_assert_not_null(r);
  gp_release(r);
  cr_assert_null(gp_run_pipeline(NULL, "A", NULL));
  cr_assert_eq(gp_error_kind(), GP_ERR_VALUE);
  gp_release(m);
}

Test(registry, unregister_during_run) {
  TP *a = reg("A", 0, NULL);
  reg("B", 0, NULL);
  a->unregister_during = "B";
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_str_eq(run_ok("A,B", ctx), "A,B,"); /* B was resolved before A ran */
  cr_assert_null(gp_pass_acquire("B"));
  cr_assert_eq(g_deleted, 1); /* B's self freed once the pipeline let go */
  gp_ctx_free(ctx);
}

Test(registry, timing_report) {
  reg("A", 0, NULL);
  reg("B", 0, REQ("A"));
  Cap cap;
  GPPassContext *ctx = ctx_capture(&cap);
  ctx->time_passes = true;
  run_ok("B", ctx);
  fflush(ctx->out);
  cr_assert_not_null(ctx->timing_report);
  const char *t = ctx->timing_report;
  cr_assert_eq(strncmp(t, "pipeline: ", 10), 0, "%s", t);
  cr_assert(strstr(t, "us ["), "%s", t);
  cr_assert(strstr(t, "(100.00%; 100.00%)\n"), "%s", t);
  const char *a = strstr(t, "\tA: "), *b = strstr(t, "\tB: ");
  cr_assert(a && b && a < b, "%s", t);
  cr_assert(strstr(a, "us] ("), "%s", t);
  cr_assert_str_eq(cap.buf, t); /* also written to ctx->out */
  /* Each run replaces the report. */
  run_ok("A", ctx);
  cr_assert_null(strstr(ctx->timing_report, "\tB: "));
  ctx_done(ctx, &cap);
}

Test(registry, print_instruments) {
  reg("A", 0, NULL);
  reg("B", 0, NULL);
  Cap cap;
  GPPassContext *ctx = ctx_capture(&cap);
  GPModule *m = make_module();
  char *typed = gp_print(m, GP_PRINT_TYPES), *plain = gp_print(m, 0);
  cr_assert_not_null(typed);
  const char *nl_t = typed[strlen(typed) - 1] == '\n' ? "" : "\n";
  const char *nl_p = plain[strlen(plain) - 1] == '\n' ? "" : "\n";
  char expect[8192];

  ctx->print_before_all = true;
  run_ok("A,B", ctx);
  fflush(ctx->out);
  snprintf(expect, sizeof expect, "; IR before A:\n%s%s; IR before B:\n%s%s", typed, nl_t, typed, nl_t);
  cr_assert_str_eq(cap.buf, expect);
  ctx_done(ctx, &cap);

  ctx = ctx_capture(&cap);
  ctx->print_after_all = true;
  ctx->print_types = false;
  run_ok("A", ctx);
  fflush(ctx->out);
  snprintf(expect, sizeof expect, "; IR after A:\n%s%s", plain, nl_p);
  cr_assert_str_eq(cap.buf, expect);
  ctx_done(ctx, &cap);

  ctx = ctx_capture(&cap);
  gp_vec_push(&ctx->print_before, gp_strdup("B"));
  gp_vec_push(&ctx->print_after, gp_strdup("A"));
  run_ok("A,B", ctx);
  fflush(ctx->out);
  snprintf(expect, sizeof expect, "; IR after A:\n%s%s; IR before B:\n%s%s", typed, nl_t, typed, nl_t);
  cr_assert_str_eq(cap.buf, expect);
  gp_vec_push(&ctx->print_after, gp_strdup("C"));
  run_err("A", ctx, GP_ERR_NOT_FOUND, "no such pass 'C' (in the context's print-after passes)");
  ctx_done(ctx, &cap);
  gp_free(typed);
  gp_free(plain);
  gp_release(m);
}

Test(registry, verify_each) {
  reg("A", 0, NULL);
  TP *bad = reg("Bad", 0, NULL);
  bad->ret = RET_ILL_FORMED;
  GPPassContext *ctx = gp_ctx_new();
  /* every module a pass returns is verified (registry/pass_check.c), with or without verify_each */
  run_err("A,Bad", ctx, GP_ERR_PASS, "pass Bad returned an ill-formed module: verify: ");
  cr_assert_str_eq(t_order, "A,Bad,");
  ctx->verify_each = true;
  run_ok("A", ctx);
  run_err("A,Bad,A", ctx, GP_ERR_PASS, "pass Bad returned an ill-formed module: verify: ");
  cr_assert_str_eq(t_order, "A,Bad,");
  gp_ctx_free(ctx);
}

/* ------------------------------------------------------------------------------------------ */
/* Threads                                                                                     */

typedef struct ThreadArg {
  int iters;
  int ok;
  char order[256];
  char err[256];
} ThreadArg;

static void *thread_run(void *p) {
  ThreadArg *ta = p;
  GPPassContext *ctx = gp_ctx_new();
  ctx->out = NULL;
  ctx->time_passes = true;
  gp_ctx_set_config(ctx, "Chain.depth", "5");
  GPModule *m = gp_module_new("thread");
  for (int i = 0; i < ta->iters; i++) {
    t_order[0] = 0;
    GPModule *r = gp_run_pipeline(m, "Chain{depth=9},Tail", ctx);
    if (!r) {
      snprintf(ta->err, sizeof ta->err, "%s", gp_error_message());
      break;
    }
    gp_release(r);
    size_t n = strnlen(t_order, sizeof ta->order - 1);
    memcpy(ta->order, t_order, n);
    ta->order[n] = 0;
    ta->ok++;
  }
  gp_release(m);
  gp_ctx_free(ctx);
  return NULL;
}

static void *thread_churn(void *p) {
  int *stop = p;
  GPPassInfo info = {.struct_size = sizeof info, .abi_version = GP_ABI_VERSION, .name = "Churn",
                     .func = tp_call};
  while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
    gp_pass_register(&info, true, NULL);
    gp_pass_unregister("Churn");
    gp_opt_set_register("llvm", "default", "Head");
  }
  return NULL;
}

static void *thread_target_churn(void *p) {
  int *stop = p;
  GPTargetInfo t = {.struct_size = sizeof t, .abi_version = GP_ABI_VERSION, .name = "npu",
                    .kernels = (const char *const[]){"fc"}, .num_kernels = 1};
  while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
    gp_target_register(&t, true, NULL);
    gp_target_unregister("npu");
    gp_target_register(&t, false, NULL);
    GPTargetView *v;
    size_t n = gp_target_views(&v);
    gp_target_views_free(v, n);
    gp_targets_unregister_origin("host");
  }
  return NULL;
}

typedef struct KArg {
  int iters, ran, skipped;
  char err[256];
} KArg;

static void *thread_kernel_run(void *p) {
  KArg *ka = p;
  GPPassContext *ctx = gp_ctx_new();
  ctx->out = NULL;
  gp_ctx_set_target(ctx, "npu");
  GPModule *m = gp_module_new("thread");
  for (int i = 0; i < ka->iters; i++) {
    t_order[0] = 0;
    GPModule *r = gp_run_pipeline(m, "FcFuse", ctx);
    if (!r) {
      snprintf(ka->err, sizeof ka->err, "%s", gp_error_message());
      break;
    }
    gp_release(r);
    if (strcmp(t_order, "FcFuse,") == 0) ka->ran++;
    else ka->skipped++;
    if (gp_target_has_kernel("npu", "fc") < 0) break;
  }
  gp_release(m);
  gp_ctx_free(ctx);
  return NULL;
}

Test(registry, two_threads_targets) {
  reg_spec("FcFuse", (Spec){.kernels = REQ("fc")});
  KArg a = {.iters = 300}, b = {.iters = 300};
  int stop = 0;
  pthread_t ta, tb, tc;
  pthread_create(&tc, NULL, thread_target_churn, &stop);
  pthread_create(&ta, NULL, thread_kernel_run, &a);
  pthread_create(&tb, NULL, thread_kernel_run, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  pthread_join(tc, NULL);
  cr_assert_eq(a.ran + a.skipped, 300, "%s", a.err);
  cr_assert_eq(b.ran + b.skipped, 300, "%s", b.err);
}

Test(registry, two_threads_concurrently) {
  reg("Head", 0, NULL);
  reg_spec("Chain", (Spec){.required = REQ("Head"),
                           .keys = (GPConfigKey[]){{.name = "depth", .type_index = GP_TI_INT}}, .nkeys = 1});
  TP *tail = reg("Tail", 0, REQ("Chain"));
  ThreadArg a = {.iters = 300}, b = {.iters = 300};
  int stop = 0;
  pthread_t ta, tb, tc;
  pthread_create(&tc, NULL, thread_churn, &stop);
  pthread_create(&ta, NULL, thread_run, &a);
  pthread_create(&tb, NULL, thread_run, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  pthread_join(tc, NULL);
  cr_assert_eq(a.ok, 300, "%s", a.err);
  cr_assert_eq(b.ok, 300, "%s", b.err);
  cr_assert_str_eq(a.order, "Head,Chain,Tail,");
  cr_assert_str_eq(b.order, "Head,Chain,Tail,");
  cr_assert_eq(__atomic_load_n(&tail->calls, __ATOMIC_RELAXED), 600);
}

/* The error slot between passes: a pass that fails without a message is not reported with an
 * earlier pass's leftover, and a successful run leaves no error kind set (issue #16, item 9). */
Test(registry, error_slot_is_cleared_between_passes) {
  TP *ok = reg("ErrorButOk", 0, NULL);
  ok->ret = RET_COPY;
  ok->error_but_ok = true;
  TP *silent = reg("FailSilent", 0, NULL);
  silent->fail_silent = true;
  GPModule *m = gp_module_new("t");
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(m, "ErrorButOk", ctx);
  cr_assert_not_null(out);
  cr_assert_eq(gp_error_kind(), GP_OK, "a successful run left: %s", gp_error_message());
  gp_release(out);
  cr_assert_null(gp_run_pipeline(m, "ErrorButOk,FailSilent", ctx));
  cr_assert_eq(gp_error_kind(), GP_ERR_PASS);
  cr_assert_str_eq(gp_error_message(), "pass FailSilent: failed without an error message");
  gp_ctx_free(ctx);
  gp_release(m);
  gp_pass_unregister("ErrorButOk");
  gp_pass_unregister("FailSilent");
}

/* ---- removal by origin (what the loader does when a plugin fails or is unloaded) */

static int k_one(const GPKernelArgs *a, void *u) {
  GP_UNUSED(a);
  GP_UNUSED(u);
  return 1;
}

static int k_two(const GPKernelArgs *a, void *u) {
  GP_UNUSED(a);
  GP_UNUSED(u);
  return 2;
}

static int ret_none(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  GP_UNUSED(self);
  GP_UNUSED(args);
  GP_UNUSED(nargs);
  GP_UNUSED(result);
  return 0;
}

Test(registry, unregister_origin_kernels_stack) {
  gp_ops_init();
  const GPOp *op = gp_op_get("multiply");
  void *u0 = NULL, *u = NULL;
  GPOpKernelFn base = gp_op_kernel(op, &u0);
  int ua, ub;
  cr_assert_eq(gp_op_set_kernel_from(op, k_one, &ua, "plug_a"), 0);
  cr_assert_eq(gp_op_set_kernel_from(op, k_two, &ub, "plug_b"), 0);
  cr_assert(gp_op_kernel(op, &u) == k_two && u == &ub);
  gp_ops_unregister_origin("plug_a"); /* not on top: b's stays */
  cr_assert(gp_op_kernel(op, &u) == k_two && u == &ub);
  cr_assert_eq(gp_op_set_kernel_from(op, k_one, &ua, "plug_a"), 0);
  cr_assert_eq(gp_op_set_kernel_from(op, k_two, &ub, "plug_b"), 0); /* b again: moves to the top */
  gp_ops_unregister_origin("plug_b");
  cr_assert(gp_op_kernel(op, &u) == k_one && u == &ua);
  gp_ops_unregister_origin("plug_a");
  cr_assert(gp_op_kernel(op, &u) == base && u == u0, "the op's own kernel is back");
  gp_ops_unregister_origin("host"); /* a no-op */
  cr_assert(gp_op_kernel(op, &u) == base && u == u0);
}

Test(registry, unregister_origin_attrs_funcs_sets) {
  gp_ops_init();
  reg("InferType", 0, NULL);
  const GPOp *op = gp_op_get("multiply");
  GPAny one = gp_any_int(1), two = gp_any_int(2), got;
  cr_assert_eq(gp_op_set_attr(op, "T.host", &one, 10), 0);
  cr_assert_eq(gp_op_set_attr(op, "T.over", &one, 10), 0);
  cr_assert_eq(gp_op_set_attr_from(op, "T.plug", &two, 10, "plug"), 0);
  cr_assert_eq(gp_op_set_attr_from(op, "T.over", &two, 11, "plug"), 0);
  gp_registry_set_origin("plug");
  GPPackedFunc *f = gp_func_new(NULL, ret_none, NULL);
  cr_assert_eq(gp_func_register("t.plug", f, 0), 0);
  cr_assert_eq(gp_opt_set_register("tgt", "plugset", "InferType"), 0);
  cr_assert_eq(gp_opt_set_select("tgt", "plugset"), 0);
  gp_registry_set_origin(NULL);
  cr_assert_eq(gp_func_register("t.host", f, 0), 0);
  cr_assert_eq(gp_opt_set_register("tgt", "default", "InferType"), 0);
  gp_release(f);

  gp_ops_unregister_origin("plug");
  gp_funcs_unregister_origin("plug");
  gp_opt_sets_unregister_origin("plug");
  cr_assert_eq(gp_op_get_attr(op, "T.host", &got), 1);
  cr_assert_eq(got.v_int64, 1);
  cr_assert_eq(gp_op_get_attr(op, "T.plug", &got), 0);
  cr_assert_eq(gp_op_get_attr(op, "T.over", &got), 0, "a plugin's override is removed, not rolled back");
  GPPackedFunc *g = gp_func_get("t.plug");
  cr_assert_null(g);
  g = gp_func_get("t.host");
  cr_assert_not_null(g);
  gp_release(g);
  char *s = gp_opt_set_get("tgt", "plugset");
  cr_assert_null(s);
  gp_error_clear();
  s = gp_opt_set_get("tgt", NULL); /* the selection went with the set: "default" runs again */
  cr_assert_str_eq(s, "InferType");
  gp_free(s);
  gp_opt_sets_unregister_origin("host");
  s = gp_opt_set_get("tgt", NULL);
  cr_assert_null(s, "a target left without sets is forgotten");
  cr_assert_eq(gp_error_kind(), GP_ERR_NOT_FOUND);
  gp_error_clear();
  gp_registry_shutdown();
}

/* One thread keeps registering as a plugin and removing everything of that origin while another
 * reads (and, as the host, registers) the same functions, attributes, kernels and sets. */
static void *thread_origin_churn(void *p) {
  int *stop = p;
  const GPOp *op = gp_op_get("subtract");
  GPAny v = gp_any_int(3);
  for (int i = 0; i < 200 || !__atomic_load_n(stop, __ATOMIC_ACQUIRE); i++) {
    gp_registry_set_origin("churn");
    GPPackedFunc *f = gp_func_new(NULL, ret_none, NULL);
    (void)gp_func_register("t.churn", f, 1);
    gp_release(f);
    (void)gp_opt_set_register("tgt_churn", "s", "InferType");
    (void)gp_op_set_attr_from(op, "T.churn", &v, 10, "churn");
    (void)gp_op_set_kernel_from(op, k_one, NULL, "churn");
    gp_registry_set_origin(NULL);
    gp_ops_unregister_origin("churn");
    gp_funcs_unregister_origin("churn");
    gp_opt_sets_unregister_origin("churn");
    if (i > 100000) break;
  }
  return NULL;
}

static void *thread_origin_read(void *p) {
  int *bad = p;
  const GPOp *op = gp_op_get("subtract");
  GPAny got, v = gp_any_int(4);
  for (int i = 0; i < 300; i++) {
    GPPackedFunc *f = gp_func_get("t.churn");
    gp_release(f);
    if (gp_op_get_attr(op, "T.churn", &got) == 1 && got.v_int64 != 3) (*bad)++;
    void *u;
    GPOpKernelFn k = gp_op_kernel(op, &u);
    if (!k) (*bad)++;
    char *s = gp_opt_set_get("tgt_churn", "s");
    gp_free(s);
    gp_error_clear();
    (void)gp_op_set_attr(op, "T.host", &v, 10);
  }
  return NULL;
}

Test(registry, two_threads_unregister_origin) {
  gp_ops_init();
  reg("InferType", 0, NULL);
  const GPOp *op = gp_op_get("subtract");
  void *u0, *u;
  GPOpKernelFn base = gp_op_kernel(op, &u0);
  int stop = 0, bad = 0;
  pthread_t tc, tr;
  pthread_create(&tc, NULL, thread_origin_churn, &stop);
  pthread_create(&tr, NULL, thread_origin_read, &bad);
  pthread_join(tr, NULL);
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  pthread_join(tc, NULL);
  cr_assert_eq(bad, 0);
  cr_assert(gp_op_kernel(op, &u) == base && u == u0);
  cr_assert_null(gp_func_get("t.churn"));
  gp_registry_shutdown();
}
