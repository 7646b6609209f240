/* test_rewrite_threads.c -- run under ThreadSanitizer by tests/tsan/run_tsan.sh (the Criterion
 * shim): two threads rewrite their own graphs to a fixed point at the same time, so the shared
 * node-index cache (gp_ni_acquire), the pattern driver's settled-round memo, the node pool and
 * the interned types are used from both at once.  Core only: no plugin. */
#include "../../ir/pattern.h"
#include "../../ir/ir.h"

#include "two_threads.h"

#include <criterion/criterion.h>
#include <string.h>

/* relu(relu(x)) -> sigmoid(x); add(x, x) -> x * 2 (one float32 constant per rewrite). */
static GPExpr *rewrite(void *user, const GPMatch *m) {
  (void)user;
  const GPOp *op = gp_op_get(m->root == NULL ? "sigmoid" : gp_kind(m->root) == GP_TI_CALL &&
                                 strcmp(GP_AS(const GPOp, GP_AS(const GPCall, m->root)->op)->name, "add") == 0
                                 ? "multiply"
                                 : "sigmoid");
  if (strcmp(op->name, "sigmoid") == 0) return (GPExpr *)gp_call_new((GPExpr *)op, 1, &m->inputs[0], NULL);
  GPTensor *t = gp_tensor_alloc((DLDataType){kDLFloat, 32, 1}, 0, NULL, true);
  *(float *)t->dl.data = 2.0f;
  GPConstant *c = gp_constant_new(t);
  gp_release(t);
  GPExpr *args[2] = {m->inputs[0], &c->base};
  GPExpr *r = (GPExpr *)gp_call_new((GPExpr *)op, 2, args, NULL);
  gp_release(c);
  return r;
}

typedef struct Arg {
  int rounds_total, rewritten, failures;
} Arg;

static void *worker(void *p) {
  Arg *a = p;
  GPPattern *pats[2] = {gp_pattern_compile("nn.relu(nn.relu(_))", "t.pat", 1, 1),
                        gp_pattern_compile("add(%x, %x)", "t.pat", 1, 1)};
  if (!pats[0] || !pats[1]) {
    a->failures++;
    return NULL;
  }
  for (int it = 0; it < 20; it++) {
    /* a chain of 200 blocks: relu(relu(add(y, y))) */
    GPVar *x = gp_var_new("x", gp_type_tensor((DLDataType){kDLFloat, 32, 1}, 0, NULL));
    GPExpr *y = gp_retain(&x->base);
    const GPOp *relu = gp_op_get("nn.relu"), *add = gp_op_get("add");
    for (int b = 0; b < 200; b++) {
      GPExpr *two[2] = {y, y};
      GPExpr *s = (GPExpr *)gp_call_new((GPExpr *)add, 2, two, NULL);
      gp_release(y);
      GPExpr *r1 = (GPExpr *)gp_call_new((GPExpr *)relu, 1, &s, NULL);
      gp_release(s);
      y = (GPExpr *)gp_call_new((GPExpr *)relu, 1, &r1, NULL);
      gp_release(r1);
    }
    GPRewriteSpec spec = {.struct_size = sizeof spec, .abi_version = GP_ABI_VERSION, .num_patterns = 2,
                          .patterns = (const GPPattern *const *)pats, .rewrite = rewrite};
    GPExpr *cur = y;
    for (int round = 0; round < 10; round++) {
      GPExpr *next = gp_pattern_rewrite(cur, &spec);
      if (!next) {
        a->failures++;
        break;
      }
      a->rounds_total++;
      a->rewritten += (int)spec.num_rewritten;
      bool same = next == cur;
      gp_release(cur);
      cur = next;
      if (same) break;
    }
    gp_release(cur);
    gp_release(x);
  }
  gp_release(pats[0]);
  gp_release(pats[1]);
  return NULL;
}

Test(rewrite, two_threads_to_a_fixed_point) {
  gp_ops_init();
  Arg a = {0}, b = {0};
  two_threads(worker, &a, &b);
  cr_assert_eq(a.failures + b.failures, 0);
  /* each graph: 200 relu pairs and 200 doubled adds, all in the first round */
  cr_assert_eq(a.rewritten, 20 * 400, "%d", a.rewritten);
  cr_assert_eq(b.rewritten, 20 * 400, "%d", b.rewritten);
}
