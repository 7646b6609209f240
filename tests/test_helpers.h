/* test_helpers.h -- shared by the test files: build paths, file reading, golden comparison. */
#ifndef GP_TEST_HELPERS_H
#define GP_TEST_HELPERS_H

#include "../ir/ir.h"
#include "../plugin/plugin.h"
#include "../registry/registry.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* build/ or build/san/, as tests/run.sh exports it. */
static inline const char *th_build_dir(void) {
  const char *d = getenv("GP_TEST_BUILD_DIR");
  return d && *d ? d : "build";
}

static inline char *th_path(const char *rel) {
  GPBuf b = {0};
  gp_buf_printf(&b, "%s/%s", th_build_dir(), rel);
  return gp_buf_take(&b);
}

static inline char *th_read(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  cr_assert(f, "cannot open %s", path);
  GPBuf b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) gp_buf_put(&b, chunk, n);
  fclose(f);
  if (len) *len = b.len;
  return gp_buf_take(&b);
}

/* What running `pipeline` on in with --explain writes (gp_free it).  ctx: NULL for a fresh
 * default context, else used with its explain and out set for the run and restored after.  The
 * result goes to *out (NULL on failure, the error pending), or is released when out is NULL. */
static inline char *th_explain(const GPModule *in, const char *pipeline, GPPassContext *ctx, GPModule **out) {
  GPPassContext *c = ctx ? ctx : gp_ctx_new();
  bool explain = c->explain;
  FILE *saved = c->out;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  cr_assert(f);
  c->explain = true;
  c->out = f;
  GPModule *res = gp_run_pipeline(in, pipeline, c);
  fclose(f);
  c->explain = explain;
  c->out = saved;
  if (!ctx) gp_ctx_free(c);
  if (out)
    *out = res;
  else
    gp_release(res);
  char *text = gp_malloc(len + 1);
  memcpy(text, buf, len + 1);
  free(buf);
  return text;
}

static inline GPModule *th_parse_file(const char *path) {
  size_t len;
  char *text = th_read(path, &len);
  GPModule *m = gp_parse(text, len, path);
  gp_free(text);
  cr_assert(m, "parse %s: %s", path, gp_error_message());
  return m;
}

/* Calls fn on every file of the folders dirs[0 .. ndirs) whose name ends with suffix (e.g.
 * ".before.relay") and that parses (the bad-input cases do not: skipped), with the parsed module
 * (released after fn); returns how many it parsed. */
static inline int th_each_relay(const char *const *dirs, size_t ndirs, const char *suffix,
                                void (*fn)(const char *path, GPModule *m, void *user), void *user) {
  int parsed = 0;
  size_t sl = strlen(suffix);
  for (size_t d = 0; d < ndirs; d++) {
    DIR *dp = opendir(dirs[d]);
    cr_assert(dp, "%s", dirs[d]);
    for (struct dirent *de; (de = readdir(dp));) {
      size_t len = strlen(de->d_name);
      if (len < sl || strcmp(de->d_name + len - sl, suffix) != 0) continue;
      char path[1024];
      snprintf(path, sizeof path, "%s/%s", dirs[d], de->d_name);
      size_t tlen;
      char *text = th_read(path, &tlen);
      gp_error_clear();
      GPModule *m = gp_parse(text, tlen, path);
      gp_free(text);
      if (!m) {
        gp_error_clear();
        continue;
      }
      fn(path, m, user);
      gp_release(m);
      parsed++;
    }
    closedir(dp);
  }
  return parsed;
}

/* Loads the standard plugin once per test process. */
static inline void th_load_std(void) {
  char *p = th_path("plugins/libgp_std.so");
  int rc = gp_plugin_load(p);
  cr_assert_eq(rc, 0, "load %s: %s", p, gp_error_message());
  gp_free(p);
}

static inline void th_assert_module_eq(const GPModule *got, const GPModule *want) {
  if (!gp_module_equal(got, want)) {
    char *diff = gp_module_diff(got, want);
    char *g = gp_print(got, 0), *w = gp_print(want, 0);
    cr_assert_fail("modules differ: %s\n--- got:\n%s\n--- want:\n%s", diff ? diff : "?", g, w);
  }
}

/* Whether @main exists and every parameter has a static tensor type (what --verify-numerics
 * needs to draw its inputs). */
static inline bool th_main_static(const GPModule *m) {
  const GPFunctionExpr *fn = gp_module_lookup(m, "main");
  if (!fn) return false;
  for (int32_t i = 0; i < fn->nparams; i++) {
    const GPType *t = fn->params[i]->type_annotation;
    if (!t || t->kind != GP_TYPE_TENSOR || gp_type_numel(t) < 0) return false;
  }
  return true;
}

/* Whether --verify-numerics can evaluate m: @main static, and every constant has values (a
 * meta[relay.Constant] reference without a #[metadata] entry has none). */
static inline bool th_numerics_possible(const GPModule *m) {
  if (!th_main_static(m)) return false;
  bool ok = true;
  for (int32_t f = 0; f < m->num_functions && ok; f++) {
    GPExpr **order;
    size_t n;
    cr_assert_eq(gp_post_order(&m->funcs[f]->base, &order, &n), 0);
    for (size_t i = 0; i < n && ok; i++) {
      if (gp_kind(order[i]) != GP_TI_CONSTANT) continue;
      const GPTensor *t = GP_AS(GPConstant, order[i])->data;
      ok = t->dl.data || gp_tensor_nbytes(t) == 0;
    }
    gp_free(order);
  }
  return ok;
}

/* The text a test keeps of a module before a run, to check afterwards that the run left it as
 * it was (th_assert_unchanged). */
static inline char *th_text_before(const GPModule *m) { return gp_print(m, GP_PRINT_TYPES | GP_PRINT_METADATA); }

/* m still prints as `before` (from th_text_before); frees before. */
static inline void th_assert_unchanged(const GPModule *m, char *before, const char *what) {
  char *now = th_text_before(m);
  cr_assert_str_eq(before, now, "%s", what);
  gp_free(before);
  gp_free(now);
}

/* The end of a golden test: out equals want, and in still prints as in_text (its text before
 * the run); releases all four. */
static inline void th_golden_finish(GPModule *in, char *in_text, GPModule *out, GPModule *want) {
  th_assert_module_eq(out, want);
  th_assert_unchanged(in, in_text, "the pass changed its input module");
  gp_release(want);
  gp_release(out);
  gp_release(in);
}

/* The golden test of a pass pipeline: run `pipeline` on `before` with `ctx` (the caller's
 * configs and instruments; verify_numerics is turned on when @main has static parameter
 * types and every constant has values, or when the caller gave the context the shapes of
 * @main's parameters with ? dims (gp_ctx_add_numerics_shape; every other ? is 1), so every
 * golden test also checks that the pipeline keeps the numbers); compare with
 * the typed `after`; check that the input module printed the same before and after the run. */
static inline void th_golden_ctx(const char *before, const char *after, const char *pipeline, GPPassContext *ctx) {
  GPModule *in = th_parse_file(before);
  char *in_text = th_text_before(in);
  ctx->verify_numerics = ctx->num_numerics_shapes > 0 || th_numerics_possible(in);
  GPModule *out = gp_run_pipeline(in, pipeline, ctx);
  cr_assert(out, "%s on %s%s: %s", pipeline, before, ctx->verify_numerics ? " (with --verify-numerics)" : "",
            gp_error_message());
  /* as TVM's tests do (run_infer_type(expected)): compare with the typed expectation */
  GPModule *want_text = th_parse_file(after);
  GPModule *want = gp_infer_types(want_text);
  cr_assert(want, "%s", gp_error_message());
  gp_release(want_text);
  th_golden_finish(in, in_text, out, want);
}

/* th_golden_ctx with a fresh context and optional "key", "value", ..., NULL configs. */
static inline void th_golden(const char *before, const char *after, const char *pipeline, const char *const *configs) {
  GPPassContext *ctx = gp_ctx_new();
  for (const char *const *c = configs; c && *c; c += 2)
    cr_assert_eq(gp_ctx_set_config(ctx, c[0], c[1]), 0, "%s", gp_error_message());
  th_golden_ctx(before, after, pipeline, ctx);
  gp_ctx_free(ctx);
}

/* Run `cmd` through the shell; capture stdout+stderr into *out; return the exit status. */
static inline int th_run(const char *cmd, char **out) {
  GPBuf b = {0};
  gp_buf_printf(&b, "%s 2>&1", cmd);
  FILE *p = popen(b.data, "r");
  gp_buf_free(&b);
  cr_assert(p, "popen %s", cmd);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, p)) > 0) gp_buf_put(&b, chunk, n);
  int st = pclose(p);
  *out = gp_buf_take(&b);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

#endif
