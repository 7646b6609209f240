/* test_equal.c -- gp_expr_equal / gp_expr_hash / gp_module_equal / gp_module_hash /
 * gp_module_diff: renaming, ops, attrs, constants, shapes, graph sharing, million-node chains. */
#include "test_builders.h"
#include "ir/ir.h"

#include <criterion/criterion.h>
#include <string.h>

static GPVar *V(const char *name, const GPType *t) { return (GPVar *)E(gp_var_new(name, t)); }

static GPExpr *cf32(float v0, float v1) {
  int64_t sh[1] = {2};
  GPTensor *t = gp_tensor_alloc(GP_DT_F32, 1, sh, true);
  ((float *)t->dl.data)[0] = v0;
  ((float *)t->dl.data)[1] = v1;
  GPExpr *c = E(gp_constant_new(t));
  gp_release(t);
  return c;
}

/* @main(%<pname>) { op2(op1(%p), const) } with set location on the outer call */
static GPModule *mod(const char *pname, const char *op1, const char *op2, GPExpr *cst, int64_t cols) {
  GPVar *p = V(pname, T2(1, cols));
  GPExpr *a = call1(op1, (GPExpr *)p);
  GPExpr *b = call2(op2, a, cst);
  b->line = 3, b->col = 5;
  a->line = 3, a->col = 9;
  GPFunctionExpr *f = (GPFunctionExpr *)E(gp_function_new(1, &p, b, NULL, NULL));
  GPModule *m = gp_module_new(NULL);
  cr_assert_eq(gp_module_add(m, "main", f, false), 0);
  gp_release(f);
  gp_release(b);
  gp_release(a);
  gp_release(p);
  return m;
}

static void expect_diff(const GPModule *a, const GPModule *b, const char *needle) {
  cr_assert(!gp_module_equal(a, b));
  char *d = gp_module_diff(a, b);
  cr_assert(d);
  cr_assert(strstr(d, needle), "diff \"%s\" lacks \"%s\"", d, needle);
  gp_free(d);
}

Test(equal, renamed_vars_equal) {
  GPExpr *c1 = cf32(1, 2), *c2 = cf32(1, 2);
  GPModule *a = mod("x", "nn.relu", "add", c1, 2), *b = mod("y", "nn.relu", "add", c2, 2);
  cr_assert(gp_module_equal(a, b));
  cr_assert_null(gp_module_diff(a, b));
  cr_assert_eq(gp_module_hash(a), gp_module_hash(b));
  cr_assert(gp_expr_equal((GPExpr *)a->funcs[0], (GPExpr *)b->funcs[0]));
  cr_assert_eq(gp_expr_hash((GPExpr *)a->funcs[0]), gp_expr_hash((GPExpr *)b->funcs[0]));
  gp_release(a);
  gp_release(b);
  gp_release(c1);
  gp_release(c2);
}

Test(equal, different_op) {
  GPExpr *c = cf32(1, 2);
  GPModule *a = mod("x", "nn.relu", "add", c, 2), *b = mod("x", "sigmoid", "add", c, 2);
  expect_diff(a, b, "@main: call nn.relu vs sigmoid at 3:9");
  cr_assert_neq(gp_module_hash(a), gp_module_hash(b));
  gp_release(a);
  gp_release(b);
  gp_release(c);
}

Test(equal, different_constant_and_shape) {
  GPExpr *c1 = cf32(1, 2), *c2 = cf32(1, 3);
  GPModule *a = mod("x", "nn.relu", "add", c1, 2), *b = mod("x", "nn.relu", "add", c2, 2);
  expect_diff(a, b, "constant values differ at element 1");
  GPModule *d = mod("x", "nn.relu", "add", c1, 3);
  expect_diff(a, d, "annotation Tensor[(1, 2), float32] vs Tensor[(1, 3), float32]");
  gp_release(a);
  gp_release(b);
  gp_release(d);
  gp_release(c1);
  gp_release(c2);
}

Test(equal, different_attrs) {
  GPVar *x = V("x", T2(1, 4));
  const GPOp *sm = gp_op_get("nn.softmax");
  const char *k[1] = {"axis"};
  GPAttrValue v0[1] = {gp_attr_int(0)}, v1[1] = {gp_attr_int(1)};
  GPAttrs *a0 = gp_op_attrs_new(sm, 1, k, v0), *a1 = gp_op_attrs_new(sm, 1, k, v1);
  cr_assert(a0 && a1, "%s", gp_error_message());
  GPExpr *arg[1] = {(GPExpr *)x};
  GPExpr *s0 = E(gp_call_new((GPExpr *)sm, 1, arg, a0)), *s1 = E(gp_call_new((GPExpr *)sm, 1, arg, a1));
  cr_assert(!gp_expr_equal(s0, s1));
  GPExpr *s0b = E(gp_call_new((GPExpr *)sm, 1, arg, a0));
  cr_assert(gp_expr_equal(s0, s0b));
  cr_assert_eq(gp_expr_hash(s0), gp_expr_hash(s0b));
  GPFunctionExpr *f0 = (GPFunctionExpr *)E(gp_function_new(1, &x, s0, NULL, NULL));
  GPFunctionExpr *f1 = (GPFunctionExpr *)E(gp_function_new(1, &x, s1, NULL, NULL));
  GPModule *m0 = gp_module_new(NULL), *m1 = gp_module_new(NULL);
  gp_module_add(m0, "main", f0, false);
  gp_module_add(m1, "main", f1, false);
  expect_diff(m0, m1, "call nn.softmax: attributes differ (axis=0 vs 1)");
  gp_release(m0);
  gp_release(m1);
  gp_release(f0);
  gp_release(f1);
  gp_release(s0);
  gp_release(s0b);
  gp_release(s1);
  gp_release(a0);
  gp_release(a1);
  gp_release(x);
}

/* Free vars compare by pointer; bound ones positionally. */
Test(equal, free_and_bound_vars) {
  GPVar *x = V("x", NULL), *y = V("x", NULL);
  GPExpr *rx = call1("nn.relu", (GPExpr *)x), *ry = call1("nn.relu", (GPExpr *)y);
  cr_assert(!gp_expr_equal(rx, ry));
  GPFunctionExpr *fx = (GPFunctionExpr *)E(gp_function_new(1, &x, rx, NULL, NULL));
  GPFunctionExpr *fy = (GPFunctionExpr *)E(gp_function_new(1, &y, ry, NULL, NULL));
  cr_assert(gp_expr_equal((GPExpr *)fx, (GPExpr *)fy));
  cr_assert_eq(gp_expr_hash((GPExpr *)fx), gp_expr_hash((GPExpr *)fy));
  /* swapped params are not equal */
  GPVar *a = V("a", NULL), *b = V("b", NULL), *c = V("a", NULL), *d = V("b", NULL);
  GPExpr *s1 = call2("subtract", (GPExpr *)a, (GPExpr *)b), *s2 = call2("subtract", (GPExpr *)d, (GPExpr *)c);
  GPVar *p1[2] = {a, b}, *p2[2] = {c, d};
  GPFunctionExpr *g1 = (GPFunctionExpr *)E(gp_function_new(2, p1, s1, NULL, NULL));
  GPFunctionExpr *g2 = (GPFunctionExpr *)E(gp_function_new(2, p2, s2, NULL, NULL));
  cr_assert(!gp_expr_equal((GPExpr *)g1, (GPExpr *)g2));
  /* let vars map positionally */
  GPExpr *l1 = E(gp_let_new(a, rx, (GPExpr *)a)), *l2 = E(gp_let_new(c, rx, (GPExpr *)c));
  cr_assert(gp_expr_equal(l1, l2));
  cr_assert_eq(gp_expr_hash(l1), gp_expr_hash(l2));
  GPExpr *l3 = E(gp_let_new(c, rx, rx));
  cr_assert(!gp_expr_equal(l1, l3));
  gp_release(l1);
  gp_release(l2);
  gp_release(l3);
  gp_release(g1);
  gp_release(g2);
  gp_release(s1);
  gp_release(s2);
  gp_release(fx);
  gp_release(fy);
  gp_release(rx);
  gp_release(ry);
  gp_release(a);
  gp_release(b);
  gp_release(c);
  gp_release(d);
  gp_release(x);
  gp_release(y);
}

/* add(r, r) with r shared vs add(r1, r2) with two equal copies: different graphs. */
Test(equal, dag_sharing) {
  GPVar *x = V("x", NULL);
  GPExpr *r = call1("nn.relu", (GPExpr *)x), *r1 = call1("nn.relu", (GPExpr *)x), *r2 = call1("nn.relu", (GPExpr *)x);
  GPExpr *shared = call2("add", r, r), *copies = call2("add", r1, r2), *shared2 = call2("add", r1, r1);
  cr_assert(!gp_expr_equal(shared, copies));
  cr_assert(!gp_expr_equal(copies, shared));
  cr_assert(gp_expr_equal(shared, shared2));
  cr_assert_eq(gp_expr_hash(shared), gp_expr_hash(shared2));
  GPFunctionExpr *fa = (GPFunctionExpr *)E(gp_function_new(1, &x, shared, NULL, NULL));
  GPFunctionExpr *fb = (GPFunctionExpr *)E(gp_function_new(1, &x, copies, NULL, NULL));
  GPModule *ma = gp_module_new(NULL), *mb = gp_module_new(NULL);
  gp_module_add(ma, "main", fa, false);
  gp_module_add(mb, "main", fb, false);
  expect_diff(ma, mb, "sharing differs");
  gp_release(ma);
  gp_release(mb);
  gp_release(fa);
  gp_release(fb);
  gp_release(shared);
  gp_release(shared2);
  gp_release(copies);
  gp_release(r);
  gp_release(r1);
  gp_release(r2);
  gp_release(x);
}

Test(equal, module_names_and_counts) {
  GPExpr *c = cf32(1, 2);
  GPModule *a = mod("x", "nn.relu", "add", c, 2);
  GPModule *b = gp_module_new(NULL);
  gp_module_add(b, "other", a->funcs[0], false);
  expect_diff(a, b, "@main vs @other");
  GPModule *e = gp_module_new(NULL);
  expect_diff(a, e, "1 vs 0 functions");
  gp_release(a);
  gp_release(b);
  gp_release(e);
  gp_release(c);
}

static GPExpr *chain(GPVar *x, int n) {
  GPExpr *cur = gp_retain(x);
  for (int i = 0; i < n; i++) {
    GPExpr *nx = call1(i % 3 ? "nn.relu" : "negative", cur);
    gp_release(cur);
    cur = nx;
  }
  return cur;
}

Test(equal, million_chain, .timeout = 60) {
  GPVar *x = V("x", T2(1, 3)), *y = V("y", T2(1, 3));
  GPExpr *ca = chain(x, 1000000), *cb = chain(y, 1000000);
  GPFunctionExpr *fa = (GPFunctionExpr *)E(gp_function_new(1, &x, ca, NULL, NULL));
  GPFunctionExpr *fb = (GPFunctionExpr *)E(gp_function_new(1, &y, cb, NULL, NULL));
  cr_assert(gp_expr_equal((GPExpr *)fa, (GPExpr *)fb));
  cr_assert_eq(gp_expr_hash((GPExpr *)fa), gp_expr_hash((GPExpr *)fb));
  GPExpr *cc = chain(x, 999999);
  GPFunctionExpr *fc = (GPFunctionExpr *)E(gp_function_new(1, &x, cc, NULL, NULL));
  cr_assert(!gp_expr_equal((GPExpr *)fa, (GPExpr *)fc));
  gp_release(fa);
  gp_release(fb);
  gp_release(fc);
  gp_release(ca);
  gp_release(cb);
  gp_release(cc);
  gp_release(x);
  gp_release(y);
}
