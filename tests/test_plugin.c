/* test_plugin.c -- the plugin loader, the host table, and the exported symbols of the shared
 * objects.  Runs from the repository root; the variant (build/, build/san/, build/clang/) is
 * the one this test binary belongs to (read from /proc/self/exe). */
#include "test_builders.h"
#include "ir/ir.h"
#include "plugin/plugin.h"
#include "registry/registry.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers */

static char g_variant[64];

/* "build", "build/san" or "build/clang" */
static const char *variant_dir(void) {
  if (g_variant[0]) return g_variant;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  if (strstr(exe, "/build/san/")) strcpy(g_variant, "build/san");
  else if (strstr(exe, "/build/clang/")) strcpy(g_variant, "build/clang");
  else strcpy(g_variant, "build");
  return g_variant;
}

static char *vpath(const char *rel) {
  GPBuf b = {0};
  gp_buf_printf(&b, "%s/%s", variant_dir(), rel);
  return gp_buf_take(&b);
}

static bool exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

static char *ext_path(void) { return vpath("tests/plugins/libext_plugin.so"); }
static char *ext2_path(void) { return vpath("tests/plugins/libext_plugin_major2.so"); }

static bool pass_registered(const char *name) {
  GPPassEntry *e = gp_pass_acquire(name);
  if (e) gp_pass_entry_release(e);
  return e != NULL;
}

static void copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb");
  cr_assert_not_null(in, "open %s", from);
  FILE *out = fopen(to, "wb");
  cr_assert_not_null(out, "create %s", to);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) cr_assert_eq(fwrite(buf, 1, n, out), n);
  fclose(in);
  fclose(out);
}

static char g_tmp[64];

static const char *tmpdir(void) {
  strcpy(g_tmp, "/tmp/gp_test_plugin_XXXXXX");
  cr_assert_not_null(mkdtemp(g_tmp));
  return g_tmp;
}

static void rm_rf(const char *dir) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

static char *join(const char *a, const char *b) {
  GPBuf buf = {0};
  gp_buf_printf(&buf, "%s/%s", a, b);
  return gp_buf_take(&buf);
}

/* Run fn(arg) with fd 2 redirected to a file; returns what was written (gp_malloc'd). */
static char *capture_stderr(int (*fn)(void *), void *arg, int *rc) {
  char path[] = "/tmp/gp_stderr_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  *rc = fn(arg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  off_t len = lseek(fd, 0, SEEK_END);
  char *text = gp_malloc((size_t)len + 1);
  cr_assert_eq(pread(fd, text, (size_t)len, 0), len);
  text[len] = '\0';
  close(fd);
  unlink(path);
  return text;
}

/* ---- loading */

Test(plugin, load_registers_with_origin) {
  char *p = ext_path();
  cr_assert(exists(p), "%s missing (build it with ninja)", p);
  cr_assert_eq(gp_plugin_load(p), 0, "%s", gp_error_message());
  cr_assert_eq(gp_error_kind(), GP_OK);

  GPPassEntry *e = gp_pass_acquire("ExtCountCalls");
  cr_assert_not_null(e);
  cr_assert_str_eq(e->origin, "ext_plugin");
  cr_assert_eq(e->info.opt_level, 1);
  cr_assert_eq(e->info.kind, GP_PASS_ANALYSIS);
  cr_assert_eq(e->info.num_required, 1);
  cr_assert_str_eq(e->info.required[0], "InferType");
  cr_assert_eq(e->info.num_config_keys, 1);
  gp_pass_entry_release(e);
  /* Registrations after the load are the host's again. */
  cr_assert_str_eq(gp_registry_origin(), "host");

  GPPluginInfo *list;
  cr_assert_eq(gp_plugin_list(&list), 1u);
  cr_assert_str_eq(list[0].name, "ext_plugin");
  cr_assert_str_eq(list[0].version, "0.1.0");
  cr_assert_eq(list[0].abi_version, GP_ABI_VERSION);
  char *real = realpath(p, NULL);
  cr_assert_str_eq(list[0].path, real);
  free(real);
  gp_free(list);

  /* Loading the same file again (also through another spelling) is a no-op. */
  cr_assert_eq(gp_plugin_load(p), 0);
  char *other = NULL;
  GPBuf b = {0};
  gp_buf_printf(&b, "./%s/tests/../tests/plugins/libext_plugin.so", variant_dir());
  other = gp_buf_take(&b);
  cr_assert_eq(gp_plugin_load(other), 0, "%s", gp_error_message());
  cr_assert_eq(gp_plugin_list(&list), 1u);
  gp_free(list);
  gp_free(other);

  gp_plugins_unload_all();
  cr_assert(!pass_registered("ExtCountCalls"));
  cr_assert_eq(gp_plugin_list(&list), 0u);
  cr_assert_null(list);
  /* and it can be loaded again */
  cr_assert_eq(gp_plugin_load(p), 0, "%s", gp_error_message());
  cr_assert(pass_registered("ExtCountCalls"));
  gp_plugins_unload_all();
  gp_free(p);
}

Test(plugin, major_2_refused) {
  char *p = ext2_path();
  cr_assert(exists(p), "%s missing", p);
  cr_assert_eq(gp_plugin_load(p), -1);
  char want[1024];
  snprintf(want, sizeof want,
           "plugin %s was built for graphpass ABI 2.0; this host implements 1.%d (accepts 1.0 to "
           "1.x)",
           p, GP_ABI_VERSION_MINOR);
  cr_assert_eq(gp_error_kind(), GP_ERR_VERSION);
  cr_assert_str_eq(gp_error_message(), want);
  gp_error_clear();
  cr_assert(!pass_registered("ExtCountCalls"));
  GPPluginInfo *list;
  cr_assert_eq(gp_plugin_list(&list), 0u);
  /* the good one still loads afterwards */
  char *good = ext_path();
  cr_assert_eq(gp_plugin_load(good), 0, "%s", gp_error_message());
  gp_plugins_unload_all();
  gp_free(good);
  gp_free(p);
}

Test(plugin, missing_file_and_not_a_plugin) {
  cr_assert_eq(gp_plugin_load("no/such/plugin.so"), -1);
  expect_error(GP_ERR_IO, "plugin no/such/plugin.so: No such file or directory");
  cr_assert_eq(gp_plugin_load(""), -1);
  expect_error(GP_ERR_VALUE, "empty path");
  cr_assert_eq(gp_plugin_load("tests"), -1);
  expect_error(GP_ERR_IO, "not a regular file");

  /* libm: a shared object without the entry symbol.  Find its path through the loader. */
  void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (!h) h = dlopen("libm.so.6", RTLD_NOW);
  cr_assert_not_null(h);
  struct link_map *lm = NULL;
  cr_assert_eq(dlinfo(h, RTLD_DI_LINKMAP, &lm), 0);
  char *libm = gp_strdup(lm->l_name);
  dlclose(h);
  cr_assert_eq(gp_plugin_load(libm), -1);
  char want[512];
  snprintf(want, sizeof want, "plugin %s: no symbol 'graphpass_plugin_entry'", libm);
  expect_error(GP_ERR_IO, want);
  gp_free(libm);

  /* a file that is not a shared object at all */
  const char *d = tmpdir();
  char *junk = join(d, "junk.so");
  FILE *f = fopen(junk, "w");
  fputs("not an ELF file\n", f);
  fclose(f);
  cr_assert_eq(gp_plugin_load(junk), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_IO);
  cr_assert(strstr(gp_error_message(), "cannot load"), "%s", gp_error_message());
  gp_error_clear();
  gp_free(junk);
  rm_rf(d);
  GPPluginInfo *list;
  cr_assert_eq(gp_plugin_list(&list), 0u);
}

Test(plugin, same_name_from_two_files) {
  char *p = ext_path();
  const char *d = tmpdir();
  char *copy = join(d, "copy.so");
  copy_file(p, copy);
  cr_assert_eq(gp_plugin_load(p), 0, "%s", gp_error_message());
  cr_assert_eq(gp_plugin_load(copy), -1);
  expect_error(GP_ERR_VALUE, "a plugin named 'ext_plugin' is already loaded from");
  GPPluginInfo *list;
  cr_assert_eq(gp_plugin_list(&list), 1u);
  gp_free(list);
  /* a symlink to the loaded file is the same file */
  char *link = join(d, "link.so");
  char *real = realpath(p, NULL);
  cr_assert_eq(symlink(real, link), 0);
  cr_assert_eq(gp_plugin_load(link), 0, "%s", gp_error_message());
  cr_assert_eq(gp_plugin_list(&list), 1u);
  gp_free(list);
  free(real);
  gp_plugins_unload_all();
  gp_free(link);
  gp_free(copy);
  rm_rf(d);
  gp_free(p);
}

Test(plugin, failed_initialize_unregisters) {
  char *p = ext_path();
  setenv("GP_EXT_PLUGIN_FAIL_INIT", "1", 1);
  cr_assert_eq(gp_plugin_load(p), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_VALUE);
  cr_assert(strstr(gp_error_message(), "plugin ext_plugin ("), "%s", gp_error_message());
  cr_assert(strstr(gp_error_message(), "initialize failed: ext_plugin: asked to fail"), "%s",
            gp_error_message());
  gp_error_clear();
  cr_assert(!pass_registered("ExtCountCalls"), "the failed plugin's pass stayed registered");
  cr_assert(!pass_registered("ExtFcFuse"));
  cr_assert_eq(gp_target_has_kernel("ext_npu", "fc"), 0, "the failed plugin's target stayed registered");
  cr_assert_str_eq(gp_registry_origin(), "host");
  GPPluginInfo *list;
  cr_assert_eq(gp_plugin_list(&list), 0u);
  unsetenv("GP_EXT_PLUGIN_FAIL_INIT");
  cr_assert_eq(gp_plugin_load(p), 0, "%s", gp_error_message());
  cr_assert(pass_registered("ExtCountCalls"));
  gp_plugins_unload_all();
  gp_free(p);
}

/* ---- targets and kernels (ABI 1.2) */

static char *run_explain(const char *pipeline, const char *target) {
  GPModule *m = gp_module_new("t");
  GPPassContext *ctx = gp_ctx_new();
  char *buf = NULL;
  size_t len = 0;
  ctx->out = open_memstream(&buf, &len);
  ctx->explain = true;
  cr_assert_eq(gp_ctx_set_target(ctx, target), 0);
  GPModule *r = gp_run_pipeline(m, pipeline, ctx);
  cr_assert_not_null(r, "%s", gp_error_message());
  fclose(ctx->out);
  gp_ctx_free(ctx);
  gp_release(r);
  gp_release(m);
  char *copy = gp_strdup(buf);
  free(buf);
  return copy;
}

Test(plugin, targets_and_kernel_bound_passes) {
  char *p = ext_path();
  cr_assert_eq(gp_plugin_load(p), 0, "%s", gp_error_message());
  /* the plugin's target, with its origin */
  GPTargetView *v;
  size_t n = gp_target_views(&v);
  cr_assert_eq(n, 1);
  cr_assert_str_eq(v[0].name, "ext_npu");
  cr_assert_str_eq(v[0].origin, "ext_plugin");
  cr_assert_eq(v[0].num_kernels, 3);
  gp_target_views_free(v, n);
  /* ExtFcFuse binds kernel fc: runs for ext_npu, skipped elsewhere with the reason */
  char *out = run_explain("ExtFcFuse", "ext_npu");
  cr_assert_str_eq(out, "explain: ExtFcFuse: ran\n");
  gp_free(out);
  out = run_explain("ExtFcFuse", "llvm");
  cr_assert_str_eq(out, "explain: ExtFcFuse: skipped (target 'llvm' is not registered, so it has no kernels 'fc', 'fc_int8')\n");
  gp_free(out);
  /* a 1.1 GPPassInfo registers; the garbage after its struct_size is not read */
  GPPassEntry *e = gp_pass_acquire("ExtOldMinor");
  cr_assert_not_null(e);
  cr_assert_eq(e->info.num_kernels, 0);
  cr_assert_null(e->info.kernels);
  cr_assert_str_eq(e->origin, "ext_plugin");
  gp_pass_entry_release(e);
  out = run_explain("ExtOldMinor", "ext_npu");
  cr_assert_str_eq(out, "explain: ExtOldMinor: ran\n");
  gp_free(out);
  /* through the host table */
  const GPHostAPI *h = graphpass_host_api();
  cr_assert(GP_HAS_FIELD(h, GPHostAPI, target_list));
  cr_assert_eq(h->target_has_kernel("ext_npu", "nn.dense"), 1);
  cr_assert_eq(h->target_has_kernel("ext_npu", "nn.relu"), 0);
  char **names;
  int32_t count;
  cr_assert_eq(h->target_list(&names, &count), 0);
  cr_assert_eq(count, 1);
  cr_assert_str_eq(names[0], "ext_npu");
  h->free(names);
  /* unloading removes the plugin's targets and passes */
  gp_plugins_unload_all();
  cr_assert_eq(gp_target_has_kernel("ext_npu", "fc"), 0);
  cr_assert(!pass_registered("ExtFcFuse"));
  cr_assert(!pass_registered("ExtOldMinor"));
  gp_free(p);
}

Test(plugin, std_registers_llvm_target) {
  char *p = vpath("plugins/libgp_std.so");
  cr_assert_eq(gp_plugin_load(p), 0, "%s", gp_error_message());
  const GPHostAPI *h = graphpass_host_api();
  cr_assert_eq(h->target_has_kernel("llvm", "nn.conv2d"), 1); /* every op */
  cr_assert_eq(h->target_has_kernel("llvm", "nn.batch_norm"), 1);
  static const char *const composites[] = {"fc", "fc_relu", "conv2d_relu", "conv2d_relu6", "conv2d_leaky_relu"};
  for (size_t i = 0; i < sizeof composites / sizeof *composites; i++)
    cr_assert_eq(h->target_has_kernel("llvm", composites[i]), 1, "%s", composites[i]);
  cr_assert_eq(h->target_has_kernel("llvm", "no_such_composite"), 0);
  GPTargetView *v;
  size_t n = gp_target_views(&v);
  cr_assert_eq(n, 1);
  cr_assert_str_eq(v[0].origin, "std");
  cr_assert_eq(v[0].flags, GP_TARGET_ALL_OPS);
  cr_assert_str_eq(v[0].default_set, "default");
  gp_target_views_free(v, n);
  /* registering llvm again is an error naming the owner */
  GPTargetInfo t = {.struct_size = sizeof t, .abi_version = GP_ABI_VERSION, .name = "llvm"};
  cr_assert_eq(h->target_register(&t, 0), -1);
  cr_assert_str_eq(h->error_message(), "target 'llvm' is already registered (by std)");
  h->error_clear();
  gp_plugins_unload_all();
  cr_assert_eq(h->target_has_kernel("llvm", "fc"), 0);
  gp_free(p);
}

Test(plugin, load_dir_sorted) {
  char *p = ext_path(), *p2 = ext2_path();
  const char *d = tmpdir();
  char *a = join(d, "a_ext.so"), *b = join(d, "b_major2.so"), *txt = join(d, "readme.txt");
  copy_file(p, a);
  copy_file(p, txt); /* not *.so: ignored */
  cr_assert_eq(gp_plugin_load_dir(d), 0, "%s", gp_error_message());
  GPPluginInfo *list;
  cr_assert_eq(gp_plugin_list(&list), 1u);
  cr_assert(strstr(list[0].path, "a_ext.so"));
  gp_free(list);
  gp_plugins_unload_all();
  /* the major-2 copy sorts after a_ext.so: a_ext loads, then the error names b_major2.so */
  copy_file(p2, b);
  cr_assert_eq(gp_plugin_load_dir(d), -1);
  cr_assert_eq(gp_error_kind(), GP_ERR_VERSION);
  cr_assert(strstr(gp_error_message(), "b_major2.so was built for graphpass ABI 2.0"), "%s",
            gp_error_message());
  gp_error_clear();
  cr_assert_eq(gp_plugin_list(&list), 1u);
  gp_free(list);
  gp_plugins_unload_all();
  cr_assert_eq(gp_plugin_load_dir("/no/such/dir"), -1);
  expect_error(GP_ERR_IO, "plugin directory /no/such/dir: No such file or directory");
  rm_rf(d);
  gp_free(a);
  gp_free(b);
  gp_free(txt);
  gp_free(p);
  gp_free(p2);
}

Test(plugin, default_dir) {
  setenv("GRAPHPASS_PLUGIN_PATH", "/opt/gp/plugins", 1);
  char *d = gp_plugin_default_dir();
  cr_assert_str_eq(d, "/opt/gp/plugins");
  gp_free(d);
  unsetenv("GRAPHPASS_PLUGIN_PATH");
  d = gp_plugin_default_dir();
  cr_assert_not_null(d);
  /* the test binary is <variant>/tests/test_x, so the directory is <variant>/plugins */
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  cr_assert(n > 0);
  exe[n] = '\0';
  *strrchr(exe, '/') = '\0';
  cr_assert(strlen(exe) > 6 && !strcmp(exe + strlen(exe) - 6, "/tests"), "%s", exe);
  char *want = join(exe, "../plugins");
  char *real = realpath(want, NULL);
  cr_assert_str_eq(d, real ? real : want);
  free(real);
  gp_free(want);
  gp_free(d);
}

/* ---- running the plugin's pass */

typedef struct RunArgs {
  GPPassEntry *e;
  GPModule *m;
  GPPassContext *ctx;
  GPAny res;
} RunArgs;

static int run_entry(void *p) {
  RunArgs *r = p;
  GPAny args[2] = {gp_any_obj(r->m), gp_any_ptr(r->ctx)};
  r->res = (GPAny){0};
  return r->e->info.func(r->e->info.self, args, 2, &r->res);
}

static GPModule *two_call_module(void) {
  int64_t shape[2] = {1, 3};
  const GPType *t = gp_type_tensor(GP_DT_F32, 2, shape);
  GPVar *x = gp_var_new("x", t);
  GPExpr *xa[2] = {&x->base, &x->base};
  GPCall *add = gp_call_new((GPExpr *)gp_op_get("add"), 2, xa, NULL);
  cr_assert_not_null(add, "%s", gp_error_message());
  GPExpr *ra[1] = {&add->base};
  GPCall *relu = gp_call_new((GPExpr *)gp_op_get("nn.relu"), 1, ra, NULL);
  cr_assert_not_null(relu, "%s", gp_error_message());
  GPFunctionExpr *fn = gp_function_new(1, &x, &relu->base, NULL, NULL);
  GPModule *m = gp_module_new(NULL);
  cr_assert_eq(gp_module_add(m, "main", fn, false), 0);
  gp_release(fn);
  gp_release(relu);
  gp_release(add);
  gp_release(x);
  return m;
}

Test(plugin, pass_runs_through_host_table) {
  gp_ops_init();
  char *p = ext_path();
  cr_assert_eq(gp_plugin_load(p), 0, "%s", gp_error_message());
  RunArgs r = {0};
  r.e = gp_pass_acquire("ExtCountCalls");
  cr_assert_not_null(r.e);
  r.m = two_call_module();
  r.ctx = gp_ctx_new();
  int rc;
  char *out = capture_stderr(run_entry, &r, &rc);
  cr_assert_eq(rc, 0, "%s", gp_error_message());
  cr_assert_str_eq(out, "ExtCountCalls: 2 calls\n");
  gp_free(out);
  cr_assert_eq(r.res.type_index, GP_TI_MODULE);
  GPModule *m2 = (GPModule *)r.res.v_obj;
  cr_assert_neq(m2, r.m);
  cr_assert_eq(m2->num_functions, 1);
  cr_assert_eq(m2->funcs[0], r.m->funcs[0]); /* a shallow copy */
  gp_any_clear(&r.res);

  /* the plugin's config key */
  cr_assert_eq(gp_ctx_set_config(r.ctx, "ExtCountCalls.verbose", "true"), 0, "%s",
               gp_error_message());
  out = capture_stderr(run_entry, &r, &rc);
  cr_assert_eq(rc, 0, "%s", gp_error_message());
  cr_assert_str_eq(out, "ExtCountCalls: @main: 2 calls\nExtCountCalls: 2 calls\n");
  gp_free(out);
  gp_any_clear(&r.res);
  cr_assert_eq(gp_ctx_set_config(r.ctx, "ExtCountCalls.verbose", "7"), -1);
  gp_error_clear();

  gp_ctx_free(r.ctx);
  gp_release(r.m);
  gp_pass_entry_release(r.e);
  gp_plugins_unload_all();
  gp_free(p);
}

typedef struct PipeArgs {
  GPModule *m, *out;
  GPPassContext *ctx;
} PipeArgs;

static int run_pipe(void *p) {
  PipeArgs *a = p;
  a->out = gp_run_pipeline(a->m, "ExtCountCalls", a->ctx);
  return a->out ? 0 : -1;
}

/* With the standard plugin (InferType) loaded too, the pass runs in a pipeline. */
Test(plugin, pass_runs_in_pipeline_with_std_plugin) {
  gp_ops_init();
  char *std = vpath("plugins/libgp_std.so");
  if (!exists(std)) cr_skip_test("%s not built yet: skipping the pipeline run", std);
  char *p = ext_path();
  cr_assert_eq(gp_plugin_load(std), 0, "%s", gp_error_message());
  cr_assert_eq(gp_plugin_load(p), 0, "%s", gp_error_message());
  GPPluginInfo *list;
  cr_assert_eq(gp_plugin_list(&list), 2u);
  cr_assert_str_eq(list[1].name, "ext_plugin");
  gp_free(list);
  PipeArgs a = {two_call_module(), NULL, gp_ctx_new()};
  int rc;
  char *out = capture_stderr(run_pipe, &a, &rc);
  cr_assert_eq(rc, 0, "%s", gp_error_message());
  cr_assert(strstr(out, "ExtCountCalls: 2 calls\n"), "stderr: %s", out);
  cr_assert_not_null(a.out->funcs[0]->body->checked_type, "InferType did not run first");
  gp_free(out);
  gp_release(a.out);
  gp_release(a.m);
  gp_ctx_free(a.ctx);
  gp_plugins_unload_all();
  gp_free(p);
  gp_free(std);
}

/* ---- the host table */

Test(plugin, host_table) {
  const GPHostAPI *h = gp_host_api();
  cr_assert_eq(h->struct_size, sizeof(GPHostAPI));
  cr_assert_eq(h->abi_version, GP_ABI_VERSION);
  /* every slot is filled */
  const void *const *slots = (const void *const *)((const char *)h + offsetof(GPHostAPI, error_set));
  size_t nslots = (sizeof(GPHostAPI) - offsetof(GPHostAPI, error_set)) / sizeof(void *);
  for (size_t i = 0; i < nslots; i++) cr_assert_not_null(slots[i], "host table slot %zu is NULL", i);
  cr_assert_not_null(h->op_get("add"), "%s", h->error_message());
  cr_assert_null(h->op_get("no.such.op"));
  cr_assert_eq(h->error_kind(), GP_ERR_NOT_FOUND);
  h->error_clear();
  h->error_set(GP_ERR_PASS, "x=%d", 5);
  cr_assert_str_eq(h->error_message(), "x=5");
  h->error_clear();
  GPPassContext *c = h->ctx_new();
  cr_assert_eq(h->ctx_opt_level(c), 2);
  cr_assert_eq(h->ctx_set_opt_level(c, 3), 0);
  cr_assert_eq(h->ctx_opt_level(c), 3);
  cr_assert_str_eq(h->ctx_target(c), "llvm");
  h->ctx_free(c);
}

/* ---- exported and imported symbols */

/* Lines of `nm -D <flags> <file>`: each "<addr> <T> <sym>" or "<T> <sym>". Returns a
 * gp_malloc'd report of the offending symbols ("" when none). */
static char *nm_check(const char *flags, const char *file, bool (*ok)(char type, const char *sym)) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "nm -D %s '%s' 2>/dev/null", flags, file);
  FILE *f = popen(cmd, "r");
  cr_assert_not_null(f);
  GPBuf bad = {0};
  gp_buf_puts(&bad, "");
  char line[1024];
  int nlines = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    char *tok[3];
    int nt = 0;
    for (char *s = strtok(line, " \t"); s && nt < 3; s = strtok(NULL, " \t")) tok[nt++] = s;
    if (nt < 2) continue;
    char type = tok[nt - 2][0];
    const char *sym = tok[nt - 1];
    nlines++;
    if (!ok(type, sym)) gp_buf_printf(&bad, " %c:%s", type, sym);
  }
  cr_assert_eq(pclose(f), 0, "%s failed", cmd);
  cr_assert(nlines > 0, "%s printed nothing", cmd);
  return gp_buf_take(&bad);
}

static bool linker_symbol(const char *s) {
  return !strcmp(s, "_init") || !strcmp(s, "_fini") || !strcmp(s, "_edata") ||
         !strcmp(s, "_end") || !strcmp(s, "__bss_start");
}

static bool host_export_ok(char type, const char *sym) {
  (void)type;
  return !strcmp(sym, "graphpass_host_api") || linker_symbol(sym);
}

static bool plugin_export_ok(char type, const char *sym) {
  (void)type;
  return !strcmp(sym, "graphpass_plugin_entry") || linker_symbol(sym);
}

/* In the san variant a plugin links the sanitizer runtimes, which define (unversioned) their
 * entry points and the interceptors of libc functions: accept what they define. */
static bool sanitizer_defines(const char *sym) {
  static const char *const rts[] = {"libasan.so.8", "libubsan.so.1"};
  for (size_t i = 0; i < sizeof rts / sizeof rts[0]; i++) {
    void *h = dlopen(rts[i], RTLD_LAZY | RTLD_NOLOAD);
    if (!h) continue;
    void *p = dlsym(h, sym);
    dlclose(h);
    if (p) return true;
  }
  return false;
}

/* Imports of a plugin: versioned symbols of glibc (libc, libm, libdl, libpthread) or libffi;
 * the usual weak hooks; sanitizer runtime entry points in the san variant. */
static bool plugin_import_ok(char type, const char *sym) {
  const char *at = strchr(sym, '@');
  if (at && (!strncmp(at, "@GLIBC_", 7) || !strncmp(at, "@@GLIBC_", 8) ||
             !strncmp(at, "@LIBFFI_", 8) || !strncmp(at, "@@LIBFFI_", 9)))
    return true;
  size_t n = at ? (size_t)(at - sym) : strlen(sym);
  static const char *const weak[] = {"_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable",
                                     "__gmon_start__", "__cxa_finalize"};
  if (type == 'w' || type == 'v')
    for (size_t i = 0; i < sizeof weak / sizeof weak[0]; i++)
      if (strlen(weak[i]) == n && !strncmp(sym, weak[i], n)) return true;
  if (strstr(variant_dir(), "san") && !at && strncmp(sym, "gp_", 3) != 0 &&
      strncmp(sym, "graphpass_", 10) != 0)
    return sanitizer_defines(sym); /* __asan_*, __ubsan_*, and interceptors such as memset */
  return false;
}

Test(symbols, libgraphpass_exports_only_host_api) {
  char *lib = vpath("lib/libgraphpass.so");
  if (!exists(lib)) {
    cr_skip_test("%s not built yet: skipping the export check", lib);
  }
  char *bad = nm_check("--defined-only", lib, host_export_ok);
  cr_assert_str_eq(bad, "", "%s exports more than graphpass_host_api:%s", lib, bad);
  gp_free(bad);
  /* and the symbol resolves to a table */
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  cr_assert_not_null(h, "%s", dlerror());
  void *sym = dlsym(h, "graphpass_host_api");
  cr_assert_not_null(sym);
  const GPHostAPI *(*get)(void);
  memcpy(&get, &sym, sizeof get);
  const GPHostAPI *t = get();
  cr_assert_eq(t->abi_version, GP_ABI_VERSION);
  cr_assert_eq(t->struct_size, sizeof(GPHostAPI));
  /* No dlclose: that copy of the library now holds its op registry (process lifetime), which
   * must stay reachable for the leak checkers. */
  gp_free(lib);
}

static void check_plugin_symbols(const char *lib) {
  char *bad = nm_check("--defined-only", lib, plugin_export_ok);
  cr_assert_str_eq(bad, "", "%s exports more than graphpass_plugin_entry:%s", lib, bad);
  gp_free(bad);
  bad = nm_check("--undefined-only", lib, plugin_import_ok);
  cr_assert_str_eq(bad, "", "%s imports symbols outside libc/libm/libdl/libpthread/libffi:%s",
                   lib, bad);
  gp_free(bad);
}

Test(symbols, std_plugin_exports_and_imports) {
  char *lib = vpath("plugins/libgp_std.so");
  if (!exists(lib)) {
    cr_skip_test("%s not built yet: skipping the symbol check", lib);
  }
  check_plugin_symbols(lib);
  gp_free(lib);
}

/* The OPU vendor plugin (opu/): only its entry out, only libc / libm in -- the host's services
 * come through the GPHostAPI table. */
Test(symbols, opu_plugin_exports_and_imports) {
  char *lib = vpath("plugins/libgp_opu.so");
  if (!exists(lib)) {
    cr_skip_test("%s not built yet: skipping the symbol check", lib);
  }
  check_plugin_symbols(lib);
  gp_free(lib);
}

Test(symbols, test_plugin_exports_and_imports) {
  char *lib = ext_path();
  cr_assert(exists(lib), "%s missing", lib);
  check_plugin_symbols(lib);
  gp_free(lib);
}

/* ---- plugin lifecycle: everything a plugin registered goes with it (issue #16) */

#include "eval/eval.h"

/* Evaluates @main(%x) = add(%x, %x) on [1, 2, 3, 4]: 0 and the outputs checked, or -1 with the
 * error left in the slot. */
static int eval_add_twice(void) {
  const char *text = "#[version = \"0.0.5\"]\n"
                     "def @main(%x: Tensor[(4), float32]) {\n"
                     "  add(%x, %x)\n"
                     "}\n";
  GPModule *m = gp_parse(text, strlen(text), "lifecycle.relay");
  cr_assert(m, "%s", gp_error_message());
  int64_t shape[1] = {4};
  GPTensor *x = gp_tensor_alloc(GP_DT_F32, 1, shape, true);
  cr_assert(x, "%s", gp_error_message());
  const float xv[4] = {1, 2, 3, 4};
  memcpy(x->dl.data, xv, sizeof xv);
  GPTensor **outs = NULL;
  int32_t nout = 0;
  int rc = gp_eval_function(m, NULL, 1, &x, &outs, &nout, NULL);
  if (rc == 0) {
    cr_assert_eq(nout, 1);
    for (int i = 0; i < 4; i++) cr_assert_eq(gp_tensor_get_f64(outs[0], i), 2.0 * xv[i]);
    for (int32_t i = 0; i < nout; i++) gp_release(outs[i]);
    gp_free(outs);
  }
  gp_release(x);
  gp_release(m);
  return rc;
}

/* Asserts that none of ext_plugin's extras (see tests/plugins/ext_plugin.c) is registered and
 * that "add" runs `kernel` again. */
static void assert_extras_gone(GPOpKernelFn kernel, void *user) {
  cr_assert_null(gp_func_get("ext_plugin.answer"), "the plugin's global function stayed registered");
  const GPOp *add = gp_op_get("add");
  GPAny v;
  cr_assert_eq(gp_op_get_attr(add, "ExtPlugin.tag", &v), 0, "the plugin's op attribute stayed set");
  void *u = NULL;
  cr_assert(gp_op_kernel(add, &u) == kernel && u == user, "add did not get its previous kernel back");
  char *set = gp_opt_set_get("llvm", "ext_set");
  cr_assert_null(set, "the plugin's optimization set stayed registered: %s", set);
  expect_error(GP_ERR_NOT_FOUND, "optimization set");
  gp_error_clear();
  cr_assert(!pass_registered("ExtCountCalls"));
  cr_assert_eq(gp_target_has_kernel("ext_npu", "fc"), 0);
  cr_assert_eq(eval_add_twice(), 0, "%s", gp_error_message());
}

Test(plugin, failed_initialize_removes_functions_attrs_kernels_sets) {
  char *p = ext_path();
  const GPOp *add = gp_op_get("add");
  void *user = NULL;
  GPOpKernelFn kernel = gp_op_kernel(add, &user);
  cr_assert_not_null(kernel);
  setenv("GP_EXT_PLUGIN_FAIL_INIT", "1", 1);
  cr_assert_eq(gp_plugin_load(p), -1);
  expect_error(GP_ERR_VALUE, "initialize failed: ext_plugin: asked to fail");
  gp_error_clear();
  unsetenv("GP_EXT_PLUGIN_FAIL_INIT");
  assert_extras_gone(kernel, user);
  gp_free(p);
}

static int g_finalized;

static int on_finalized(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  GP_UNUSED(self);
  GP_UNUSED(args);
  GP_UNUSED(nargs);
  GP_UNUSED(result);
  g_finalized++;
  return 0;
}

Test(plugin, host_api_opt_sets) {
  const GPHostAPI *h = gp_host_api();
  cr_assert(GP_HAS_FIELD(h, GPHostAPI, ctx_set_opt_set));
  char *p = ext_path();
  cr_assert_eq(h->plugin_load(p), 0, "%s", gp_error_message());
  cr_assert_eq(h->opt_set_register("ext_npu", "default", "ExtFcFuse"), 0, "%s", gp_error_message());
  cr_assert_eq(h->opt_set_register("ext_npu", "lean", "ExtFcFuse,ExtFcFuse"), 0, "%s", gp_error_message());
  cr_assert_eq(h->opt_set_register("ext_npu", "typo", "ExtFcFuze"), -1);
  cr_assert_eq(h->error_kind(), GP_ERR_NOT_FOUND);
  cr_assert_str_eq(h->error_message(),
                   "optimization set 'typo' of target 'ext_npu': no such pass 'ExtFcFuze'; did you mean 'ExtFcFuse'?");
  char *s = h->opt_set_get("ext_npu", NULL); /* the default */
  cr_assert_str_eq(s, "ExtFcFuse");
  free(s);
  s = h->opt_set_get("ext_npu", "lean");
  cr_assert_str_eq(s, "ExtFcFuse,ExtFcFuse");
  free(s);
  cr_assert_null(h->opt_set_get("ext_npu", "fast"));
  cr_assert_eq(h->error_kind(), GP_ERR_NOT_FOUND);
  cr_assert_str_eq(h->error_message(), "target 'ext_npu' has no optimization set 'fast' (sets: default, lean)");
  s = h->opt_set_list();
  cr_assert_str_eq(s, "ext_npu default ExtFcFuse\next_npu lean ExtFcFuse,ExtFcFuse\n");
  free(s);
  GPPassContext *c = h->ctx_new();
  cr_assert_eq(h->ctx_set_target(c, "ext_npu"), 0);
  cr_assert_eq(h->ctx_set_opt_set(c, "fast"), -1);
  cr_assert_str_eq(h->error_message(), "target 'ext_npu' has no optimization set 'fast' (sets: default, lean)");
  cr_assert_eq(h->ctx_set_opt_set(c, "lean"), 0);
  char *buf = NULL;
  size_t len = 0;
  c->out = open_memstream(&buf, &len);
  c->explain = true;
  const char *text = "def @main(%x: Tensor[(2), float32]) { %x }";
  GPModule *m = gp_parse(text, strlen(text), "m.relay");
  cr_assert_not_null(m, "%s", gp_error_message());
  GPModule *r = h->run_pipeline(m, NULL, c); /* runs "lean", not "default" */
  cr_assert_not_null(r, "%s", gp_error_message());
  fclose(c->out);
  cr_assert_str_eq(buf, "explain: ExtFcFuse: ran\nexplain: ExtFcFuse: ran\n");
  free(buf);
  gp_release(r);
  gp_release(m);
  h->ctx_free(c);
  cr_assert_eq(h->plugin_unload("ext_plugin"), 0, "%s", gp_error_message());
  gp_free(p);
}

Test(plugin, plugin_unload_removes_everything) {
  const GPHostAPI *h = gp_host_api();
  char *p = ext_path();
  const GPOp *add = gp_op_get("add");
  void *user = NULL;
  GPOpKernelFn kernel = gp_op_kernel(add, &user);
  GPPackedFunc *fin = gp_func_new(NULL, on_finalized, NULL);
  cr_assert_eq(gp_func_register("ext_plugin.test.finalized", fin, 0), 0, "%s", gp_error_message());
  gp_release(fin);

  setenv("GP_EXT_PLUGIN_EXTRAS", "1", 1);
  cr_assert_eq(h->plugin_load(p), 0, "%s", gp_error_message());
  /* everything is there while it is loaded */
  GPPackedFunc *f = gp_func_get("ext_plugin.answer");
  cr_assert_not_null(f);
  GPAny r = {0};
  cr_assert_eq(gp_func_call(f, NULL, 0, &r), 0, "%s", gp_error_message());
  cr_assert_eq(r.v_int64, 42);
  gp_release(f);
  GPAny v;
  cr_assert_eq(gp_op_get_attr(add, "ExtPlugin.tag", &v), 1);
  cr_assert_eq(v.v_int64, 7);
  char *set = gp_opt_set_get("llvm", "ext_set");
  cr_assert_str_eq(set, "ExtFcFuse");
  gp_free(set);
  cr_assert(pass_registered("ExtCountCalls"));
  cr_assert_eq(eval_add_twice(), -1);
  cr_assert(strstr(gp_error_message(), "ext_plugin: add kernel"), "%s", gp_error_message());
  gp_error_clear();

  /* unload: everything goes, finalize ran */
  cr_assert_eq(h->plugin_unload("ext_plugin"), 0, "%s", gp_error_message());
  cr_assert_eq(g_finalized, 1);
  GPPluginInfo *list;
  cr_assert_eq(gp_plugin_list(&list), 0u);
  assert_extras_gone(kernel, user);

  /* a second unload names it */
  cr_assert_eq(h->plugin_unload("ext_plugin"), -1);
  expect_error(GP_ERR_NOT_FOUND, "plugin_unload: no plugin named 'ext_plugin' is loaded (loaded: none)");
  gp_error_clear();

  /* and it loads again */
  cr_assert_eq(h->plugin_load(p), 0, "%s", gp_error_message());
  f = gp_func_get("ext_plugin.answer");
  cr_assert_not_null(f);
  gp_release(f);
  cr_assert(pass_registered("ExtCountCalls"));
  unsetenv("GP_EXT_PLUGIN_EXTRAS");
  gp_plugins_unload_all();
  cr_assert_eq(g_finalized, 2);
  assert_extras_gone(kernel, user);
  cr_assert_eq(gp_func_register("ext_plugin.test.finalized", NULL, 0), 0);
  gp_free(p);
}

/* ---- ABI 1.3: pass_list, object_retain / object_release */

static int ql_identity(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  GP_UNUSED(self);
  GP_UNUSED(nargs);
  result->type_index = GP_TI_MODULE;
  result->v_obj = gp_retain(args[0].v_obj);
  return 0;
}

Test(plugin, host_api_pass_list) {
  const GPHostAPI *h = gp_host_api();
  cr_assert(GP_HAS_FIELD(h, GPHostAPI, pass_list));
  const char *req[] = {"QlBase"}, *tg[] = {"npu", "llvm"}, *ex[] = {"xpu"}, *kn[] = {"fc"};
  GPConfigKey keys[] = {{"width", GP_TI_INT, {.type_index = GP_TI_INT, .v_int64 = 4}, "w"},
                        {"Other.flag", GP_TI_BOOL, {.type_index = GP_TI_BOOL}, NULL}};
  GPPassInfo base = {.struct_size = sizeof base, .abi_version = GP_ABI_VERSION, .name = "QlBase",
                     .kind = GP_PASS_ANALYSIS, .func = ql_identity, .help = "base\tpass\nline two"};
  GPPassInfo in = {.struct_size = sizeof in, .abi_version = GP_ABI_VERSION, .name = "QlPass", .opt_level = 3,
                   .required = req, .num_required = 1, .targets = tg, .num_targets = 2, .excluded_targets = ex,
                   .num_excluded_targets = 1, .config_keys = keys, .num_config_keys = 2, .func = ql_identity,
                   .help = "a pass", .kernels = kn, .num_kernels = 1};
  cr_assert_eq(h->pass_register(&base, 0), 0, "%s", gp_error_message());
  cr_assert_eq(h->pass_register(&in, 0), 0, "%s", gp_error_message());
  char *all = h->pass_list(NULL);
  cr_assert(strstr(all, "QlBase\t0\tanalysis\t\t\t\t\thost\t\tbase pass line two\n"), "%s", all);
  cr_assert(strstr(all, "QlPass\t3\ttransform\tQlBase\tnpu,llvm\txpu\tfc\thost\tQlPass.width:int,Other.flag:bool\ta pass\n"),
            "%s", all);
  cr_assert(strstr(all, "QlBase") < strstr(all, "QlPass")); /* sorted by name */
  free(all);
  /* by target: llvm has the fc kernel when the std plugin is loaded; npu is not registered (no
   * kernels); xpu is excluded */
  char *npu = h->pass_list("npu"), *xpu = h->pass_list("xpu"), *cuda = h->pass_list("cuda");
  cr_assert(strstr(npu, "QlBase\t") && !strstr(npu, "QlPass\t"), "%s", npu);
  cr_assert(strstr(xpu, "QlBase\t") && !strstr(xpu, "QlPass\t"), "%s", xpu);
  cr_assert(strstr(cuda, "QlBase\t") && !strstr(cuda, "QlPass\t"), "%s", cuda);
  free(npu);
  free(xpu);
  free(cuda);
  cr_assert_eq(h->pass_unregister("QlPass"), 0);
  cr_assert_eq(h->pass_unregister("QlBase"), 0);
  all = h->pass_list(NULL);
  cr_assert_null(strstr(all, "QlPass"));
  free(all);
}

Test(plugin, host_api_object_retain_release) {
  const GPHostAPI *h = gp_host_api();
  cr_assert(GP_HAS_FIELD(h, GPHostAPI, object_release));
  GPString *s = h->string_new("abc", 3);
  cr_assert_eq(h->object_retain(s), s);
  cr_assert_eq(s->obj.ref_count, 2u);
  h->object_release(s);
  cr_assert_eq(s->obj.ref_count, 1u);
  h->object_retain(NULL);
  h->object_release(NULL);
  const GPOp *op = h->op_get("add"); /* immortal: no-ops */
  h->object_retain((void *)op);
  h->object_release((void *)op);
  cr_assert_eq(op->base.obj.ref_count, GP_REF_IMMORTAL);
  h->object_release(s);
}
