/* test_verify.c -- gp_verify: well-formed modules pass; binding twice, out-of-scope uses (also
 * through shared nodes), free vars, missing globals and inconsistent checked types are rejected
 * with the function, the location and the node named; million-node graphs. */
#define TH_SOURCE_NAME "net.relay"
#include "test_builders.h"
#include "ir/ir.h"

#include <criterion/criterion.h>
#include <string.h>

static void expect_verify_error(const GPModule *m, const char *needle) {
  cr_assert_eq(gp_verify(m), -1, "verify accepted a bad module");
  cr_assert_eq(gp_error_kind(), GP_ERR_VERIFY, "kind %d: %s", gp_error_kind(), gp_error_message());
  cr_assert(strstr(gp_error_message(), needle), "message \"%s\" lacks \"%s\"", gp_error_message(),
            needle);
  gp_error_clear();
}

static void rel(int n, ...) {
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) gp_release(va_arg(ap, void *));
  va_end(ap);
}

Test(verify, accepts_good_modules) {
  const GPType *t = T2(1, 3);
  GPVar *x = gp_var_new("x", t), *v = gp_var_new("v", NULL), *y = gp_var_new("y", t);
  GPExpr *r = call1("nn.relu", &x->base);
  /* closure capturing %x and %v */
  GPExpr *a = call2("add", &y->base, &v->base);
  GPExpr *a2 = call2("add", a, &x->base);
  GPFunctionExpr *inner = fn1(y, a2, NULL);
  GPExpr *va[1] = {r};
  GPExpr *ci = E(gp_call_new(&inner->base, 1, va, NULL));
  GPExpr *l = E(gp_let_new(v, r, ci));
  GPFunctionExpr *f = fn1(x, l, NULL);
  GPModule *m = module1("main", f);
  /* a second function calling @main */
  GPVar *z = gp_var_new("z", t);
  GPGlobalVar *gm = gp_global_var_new("main");
  GPExpr *za[1] = {&z->base};
  GPExpr *cm = E(gp_call_new(&gm->base, 1, za, NULL));
  GPFunctionExpr *g = fn1(z, cm, NULL);
  cr_assert_eq(gp_module_add(m, "g", g, false), 0);
  cr_assert_eq(gp_verify(m), 0, "%s", gp_error_message());
  GPModule *o = gp_infer_types(m);
  cr_assert(o, "%s", gp_error_message());
  cr_assert_eq(gp_verify(o), 0, "%s", gp_error_message());
  rel(17, o, m, g, cm, gm, z, f, l, ci, inner, a2, a, r, y, v, x, NULL);
}

Test(verify, rejects_var_bound_twice) {
  const GPType *t = T2(1, 3);
  GPVar *x = gp_var_new("x", t);
  GPFunctionExpr *f = fn1(x, &x->base, NULL);
  GPFunctionExpr *g = fn1(x, &x->base, NULL); /* the same param object in a second function */
  GPModule *m = module1("main", f);
  cr_assert_eq(gp_module_add(m, "g", g, false), 0);
  expect_verify_error(m, "verify: @g: var %x is bound twice (also in @main)");
  /* a let var bound by two lets */
  GPVar *p = gp_var_new("p", t), *v = gp_var_new("v", NULL);
  GPExpr *l1 = E(gp_let_new(v, &p->base, &v->base));
  GPExpr *l2 = at(E(gp_let_new(v, l1, &v->base)), 4, 9);
  GPFunctionExpr *h = fn1(p, l2, NULL);
  GPModule *m2 = module1("main", h);
  expect_verify_error(m2, "verify: @main: net.relay:4:9: var %v is bound twice");
  rel(10, m2, h, l2, l1, v, p, m, g, f, x);
}

Test(verify, rejects_out_of_scope_use) {
  /* (let %v = %x; %v, %v): the second %v is outside the let */
  const GPType *t = T2(1, 3);
  GPVar *x = gp_var_new("x", t), *v = gp_var_new("v", NULL);
  GPExpr *l = E(gp_let_new(v, &x->base, &v->base));
  GPExpr *fs[2] = {l, &v->base};
  GPExpr *tp = at(E(gp_tuple_new(2, fs)), 7, 2);
  GPFunctionExpr *f = fn1(x, tp, NULL);
  GPModule *m = module1("main", f);
  expect_verify_error(m, "verify: @main: net.relay:7:2: var %v used outside its scope");
  rel(6, m, f, tp, l, v, x);
}

Test(verify, rejects_shared_node_out_of_scope) {
  /* r = relu(%v) is used inside the let (first) and, shared, outside it */
  const GPType *t = T2(1, 3);
  GPVar *x = gp_var_new("x", t), *v = gp_var_new("v", NULL);
  GPExpr *r = at(call1("nn.relu", &v->base), 3, 4);
  GPExpr *l = E(gp_let_new(v, &x->base, r));
  GPExpr *fs[2] = {l, r};
  GPExpr *tp = E(gp_tuple_new(2, fs));
  GPFunctionExpr *f = fn1(x, tp, NULL);
  GPModule *m = module1("main", f);
  expect_verify_error(m, "net.relay:3:4: var %v used outside its scope (through a shared call nn.relu)");
  rel(7, m, f, tp, l, r, v, x);
}

Test(verify, accepts_closed_let_shared_across_scopes) {
  /* a closed let shared under two different lets is fine (no false positive) */
  const GPType *t = T2(1, 3);
  GPVar *x = gp_var_new("x", t), *a = gp_var_new("a", NULL), *b = gp_var_new("b", NULL);
  GPVar *c = gp_var_new("c", NULL);
  GPExpr *inner = E(gp_let_new(c, &x->base, &c->base)); /* uses %x only (bound outside both) */
  GPExpr *la = E(gp_let_new(a, &x->base, inner));
  GPExpr *lb = E(gp_let_new(b, &x->base, inner));
  GPExpr *fs[2] = {la, lb};
  GPExpr *tp = E(gp_tuple_new(2, fs));
  GPFunctionExpr *f = fn1(x, tp, NULL);
  GPModule *m = module1("main", f);
  cr_assert_eq(gp_verify(m), 0, "%s", gp_error_message());
  rel(10, m, f, tp, lb, la, inner, c, b, a, x);
}

Test(verify, rejects_free_var_and_missing_global) {
  const GPType *t = T2(1, 3);
  GPVar *x = gp_var_new("x", t), *free_v = gp_var_new("w", t);
  GPExpr *a = at(call2("add", &x->base, &free_v->base), 2, 8);
  GPFunctionExpr *f = fn1(x, a, NULL);
  GPModule *m = module1("main", f);
  expect_verify_error(m, "verify: @main: net.relay:2:8: var %w is free");
  GPVar *y = gp_var_new("y", t);
  GPGlobalVar *gh = gp_global_var_new("missing");
  GPExpr *ya[1] = {&y->base};
  GPExpr *c = at(E(gp_call_new(&gh->base, 1, ya, NULL)), 5, 1);
  GPFunctionExpr *g = fn1(y, c, NULL);
  GPModule *m2 = module1("main", g);
  expect_verify_error(m2, "verify: @main: net.relay:5:1: global var @missing is not defined");
  rel(10, m2, g, c, gh, y, m, f, a, free_v, x);
}

Test(verify, rejects_inconsistent_checked_types) {
  const GPType *t = T2(1, 3);
  GPVar *x = gp_var_new("x", t);
  GPExpr *r = call1("nn.relu", &x->base);
  GPFunctionExpr *f = fn1(x, r, NULL);
  GPModule *m = module1("main", f);
  GPModule *o = gp_infer_types(m);
  cr_assert(o, "%s", gp_error_message());
  cr_assert_eq(gp_verify(o), 0, "%s", gp_error_message());
  /* a call whose checked type is not what relu gives */
  GPFunctionExpr *of = o->funcs[0];
  GPExpr *bad = gp_expr_annotate(of->body, T2(3, 1), 6, 6);
  GPFunctionExpr *f2 = fn1(of->params[0], bad, NULL);
  GPModule *m2 = module1("main", f2);
  expect_verify_error(m2, "verify: @main: net.relay:6:6: call nn.relu: checked type Tensor[(3, 1), float32] differs from Tensor[(1, 3), float32]");
  /* a function whose checked type disagrees with its body */
  GPExpr *badf = gp_expr_annotate(&of->base, gp_type_func(1, &t, T2(2, 2)), 0, 0);
  GPModule *m3 = module1("main", (GPFunctionExpr *)badf);
  expect_verify_error(m3, "function: checked type");
  /* a tuple typed wrongly */
  GPExpr *fs[2] = {of->body, of->body};
  GPExpr *tp = E(gp_tuple_new(2, fs));
  GPExpr *tpt = gp_expr_annotate(tp, t, 0, 0);
  GPFunctionExpr *f4 = fn1(of->params[0], tpt, NULL);
  GPModule *m4 = module1("main", f4);
  expect_verify_error(m4, "tuple: checked type");
  rel(13, m4, f4, tpt, tp, m3, badf, m2, f2, bad, o, m, f, r);
  gp_release(x);
}

Test(verify, million_node_chain_and_let_chain, .timeout = 120) {
  const GPType *t = T2(1, 2);
  GPVar *x = gp_var_new("x", t);
  const GPOp *neg = gp_op_get("negative");
  GPExpr *cur = gp_retain(&x->base);
  for (int i = 0; i < 1000000; i++) {
    GPExpr *nx = E(gp_call_new((GPExpr *)neg, 1, &cur, NULL));
    gp_release(cur);
    cur = nx;
  }
  GPFunctionExpr *f = fn1(x, cur, NULL);
  GPModule *m = module1("main", f);
  cr_assert_eq(gp_verify(m), 0, "%s", gp_error_message());
  rel(4, m, f, cur, x);
  /* let chain where the last use is out of scope of the first binding */
  GPVar *y = gp_var_new("y", t);
  GPVar *v0 = gp_var_new("v0", NULL);
  GPExpr *body = gp_retain(&v0->base);
  for (int i = 0; i < 1000000; i++) {
    GPVar *v = gp_var_new("v", NULL);
    GPExpr *l = E(gp_let_new(v, &y->base, body));
    gp_release(body);
    gp_release(v);
    body = l;
  }
  GPExpr *l0 = E(gp_let_new(v0, &y->base, body));
  GPFunctionExpr *g = fn1(y, l0, NULL);
  GPModule *m2 = module1("main", g);
  cr_assert_eq(gp_verify(m2), 0, "%s", gp_error_message());
  GPExpr *fs[2] = {l0, &v0->base};
  GPExpr *tp = E(gp_tuple_new(2, fs));
  GPFunctionExpr *g2 = fn1(y, tp, NULL);
  GPModule *m3 = module1("main", g2);
  expect_verify_error(m3, "var %v0 used outside its scope");
  rel(9, m3, g2, tp, m2, g, l0, body, v0, y);
}
