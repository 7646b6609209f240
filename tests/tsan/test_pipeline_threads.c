/* test_pipeline_threads.c -- run under ThreadSanitizer by tests/tsan/run_tsan.sh (the Criterion
 * shim), with the standard plugin built with -fsanitize=thread: two threads each compile their
 * own model with the llvm default set at opt-level 3 at the same time (as a host compiling two
 * models at once does), so every pass of the set, the pass registry, the shared node-index
 * cache, the pattern driver, the evaluator FoldConstant uses, the node pool and the interned
 * types run from both threads.  Each thread's result must equal the one-thread result. */
#include "../../ir/ir.h"
#include "../../plugin/plugin.h"
#include "../../registry/registry.h"
#define SYNTH_PROG "test_pipeline_threads"
#include "../../bench/synth_graph.h"

#include "two_threads.h"

#include <criterion/criterion.h>

typedef struct Job {
  long calls; /* the model's size: about this many op calls */
  GPModule *out; /* the set's result */
  int failures;
} Job;

static GPModule *compile(long target) {
  long calls;
  GPModule *raw = make_graph(target, &calls);
  GPPassContext *ctx = gp_ctx_new();
  gp_ctx_set_opt_level(ctx, 3);
  GPModule *typed = gp_run_pipeline(raw, "InferType", ctx);
  GPModule *out = typed ? gp_run_pipeline(typed, NULL, ctx) : NULL;
  gp_release(typed);
  gp_release(raw);
  gp_ctx_free(ctx);
  return out;
}

static void *worker(void *p) {
  Job *j = p;
  for (int it = 0; it < 3 && !j->failures; it++) {
    GPModule *out = compile(j->calls);
    if (!out) {
      j->failures++;
      break;
    }
    gp_release(j->out);
    j->out = out;
  }
  return NULL;
}

static void setup(void) {
  gp_ops_init();
  cr_assert_eq(gp_plugin_load("build/tsan/plugins/libgp_std.so"), 0, "%s", gp_error_message());
}
static void teardown(void) { gp_plugins_unload_all(); }
TestSuite(pipeline, .init = setup, .fini = teardown);

Test(pipeline, two_threads_compile_with_the_default_set) {
  GPModule *want = compile(2000);
  cr_assert(want, "%s", gp_error_message());
  Job a = {2000, NULL, 0}, b = {2000, NULL, 0};
  two_threads(worker, &a, &b);
  cr_assert_eq(a.failures + b.failures, 0);
  cr_assert(gp_module_equal(a.out, want), "thread 1's result differs from one thread's");
  cr_assert(gp_module_equal(b.out, want), "thread 2's result differs from one thread's");
  gp_release(a.out);
  gp_release(b.out);
  gp_release(want);
}
