/* test_infer.c -- gp_infer_types / gp_infer_expr: typed results, sharing, globals, errors with
 * locations, the input left unchanged, cheap re-runs, and million-node graphs. */
#include "test_builders.h"
#include "ir/ir.h"

#include <criterion/criterion.h>
#include <string.h>

/* ---- helpers (every constructor result is owned by the test and released at the end) */

static GPExpr *bool_const(bool v) {
  GPTensor *t = gp_tensor_scalar_i64(GP_DT_BOOL, v);
  GPExpr *c = E(gp_constant_new(t));
  gp_release(t);
  return c;
}

static void rel(int n, ...) {
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) gp_release(va_arg(ap, void *));
  va_end(ap);
}

/* ---- typed results */

Test(infer, call_chain) {
  const GPType *t = T2(1, 3);
  GPVar *x = gp_var_new("x", t);
  GPExpr *a = call2("add", &x->base, &x->base);
  GPExpr *r = call1("nn.relu", a);
  GPFunctionExpr *f = fn1(x, r, NULL);
  GPModule *m = module1("main", f);
  GPModule *o = gp_infer_types(m);
  cr_assert(o, "%s", gp_error_message());
  GPFunctionExpr *of = o->funcs[0];
  cr_assert_neq(of, f);
  cr_assert_eq(of->ret_type, t, "the missing return type is filled in");
  cr_assert_eq(of->base.checked_type, gp_type_func(1, &t, t));
  GPCall *oc = GP_AS(GPCall, of->body);
  cr_assert_eq(oc->base.checked_type, t);
  cr_assert_eq(oc->args[0]->checked_type, t);
  GPCall *oa = GP_AS(GPCall, oc->args[0]);
  cr_assert_eq(oa->args[0], oa->args[1], "one var object for both uses");
  cr_assert_eq(oa->args[0], &of->params[0]->base, "uses point to the param");
  /* the input is unchanged */
  cr_assert_null(a->checked_type);
  cr_assert_null(r->checked_type);
  cr_assert_null(f->base.checked_type);
  cr_assert_null(f->ret_type);
  cr_assert_eq(m->funcs[0], f);
  cr_assert_eq(gp_verify(o), 0, "%s", gp_error_message());
  rel(6, o, m, f, r, a, x);
}

Test(infer, broadcast_shape) {
  GPVar *x = gp_var_new("x", T2(4, 3));
  GPVar *y = gp_var_new("y", T2(1, 3));
  GPVar *ps[2] = {x, y};
  GPExpr *a = call2("add", &x->base, &y->base);
  GPFunctionExpr *f = (GPFunctionExpr *)E(gp_function_new(2, ps, a, NULL, NULL));
  GPModule *m = module1("main", f);
  GPModule *o = gp_infer_types(m);
  cr_assert(o, "%s", gp_error_message());
  cr_assert_eq(o->funcs[0]->body->checked_type, T2(4, 3));
  rel(6, o, m, f, a, y, x);
}

Test(infer, tuples_and_get_items) {
  const GPType *t = T2(2, 6);
  GPVar *x = gp_var_new("x", t);
  GPExpr *r = call1("nn.relu", &x->base);
  GPExpr *fields[2] = {&x->base, r};
  GPExpr *tp = E(gp_tuple_new(2, fields));
  GPExpr *g1 = E(gp_tuple_get_item_new(tp, 1));
  /* split(x, 3, axis=1) -> 3 x Tensor[(2, 2)] */
  const GPOp *split = gp_op_get("split");
  const char *keys[2] = {"indices_or_sections", "axis"};
  GPAttrValue vals[2] = {gp_attr_int(3), gp_attr_int(1)};
  GPAttrs *at3 = gp_op_attrs_new(split, 2, keys, vals);
  cr_assert(at3, "%s", gp_error_message());
  GPExpr *xa[1] = {&x->base};
  GPExpr *sp = E(gp_call_new((GPExpr *)split, 1, xa, at3));
  GPExpr *g2 = E(gp_tuple_get_item_new(sp, 2));
  GPExpr *out[3] = {g1, g2, tp};
  GPExpr *body = E(gp_tuple_new(3, out));
  GPFunctionExpr *f = fn1(x, body, NULL);
  GPModule *m = module1("main", f);
  GPModule *o = gp_infer_types(m);
  cr_assert(o, "%s", gp_error_message());
  GPTuple *ob = GP_AS(GPTuple, o->funcs[0]->body);
  const GPType *tt[2] = {t, t};
  cr_assert_eq(ob->fields[0]->checked_type, t);
  cr_assert_eq(ob->fields[1]->checked_type, T2(2, 2));
  cr_assert_eq(ob->fields[2]->checked_type, gp_type_tuple(2, tt));
  cr_assert_eq(GP_AS(GPTupleGetItem, ob->fields[0])->tuple, ob->fields[2], "sharing kept");
  const GPType *sp_t = GP_AS(GPTupleGetItem, ob->fields[1])->tuple->checked_type;
  cr_assert_eq(sp_t->kind, GP_TYPE_TUPLE);
  cr_assert_eq(sp_t->n, 3);
  cr_assert_eq(gp_verify(o), 0, "%s", gp_error_message());
  rel(11, o, m, f, body, g2, sp, at3, g1, tp, r, x);
}

Test(infer, closure_and_lets) {
  /* fn (%x) { let %f = fn (%y) { add(%y, %x) }; let %z = %f(%x); let %w = relu(%z); (%w, %w) } */
  const GPType *t = T2(1, 3);
  GPVar *x = gp_var_new("x", t);
  GPVar *y = gp_var_new("y", t);
  GPExpr *add = call2("add", &y->base, &x->base);
  GPFunctionExpr *inner = fn1(y, add, NULL);
  GPVar *fv = gp_var_new("f", NULL);
  GPVar *z = gp_var_new("z", NULL);
  GPVar *w = gp_var_new("w", NULL);
  GPExpr *xa[1] = {&x->base};
  GPExpr *cf = E(gp_call_new(&fv->base, 1, xa, NULL));
  GPExpr *rl = call1("nn.relu", &z->base);
  GPExpr *ww[2] = {&w->base, &w->base};
  GPExpr *tp = E(gp_tuple_new(2, ww));
  GPExpr *l3 = E(gp_let_new(w, rl, tp));
  GPExpr *l2 = E(gp_let_new(z, cf, l3));
  GPExpr *l1 = E(gp_let_new(fv, &inner->base, l2));
  GPFunctionExpr *f = fn1(x, l1, NULL);
  GPModule *m = module1("main", f);
  GPModule *o = gp_infer_types(m);
  cr_assert(o, "%s", gp_error_message());
  GPFunctionExpr *of = o->funcs[0];
  const GPType *tt[2] = {t, t};
  cr_assert_eq(of->ret_type, gp_type_tuple(2, tt));
  GPLet *o1 = GP_AS(GPLet, of->body);
  cr_assert_eq(o1->var->type_annotation, gp_type_func(1, &t, t), "let var annotated");
  cr_assert_eq(o1->var->base.checked_type, gp_type_func(1, &t, t));
  GPLet *o2 = GP_AS(GPLet, o1->body);
  GPCall *oc = GP_AS(GPCall, o2->value);
  cr_assert_eq(oc->op, &o1->var->base, "the call uses the rebuilt let var");
  cr_assert_eq(oc->base.checked_type, t);
  GPLet *o3 = GP_AS(GPLet, o2->body);
  cr_assert_eq(GP_AS(GPCall, o3->value)->args[0], &o2->var->base);
  GPTuple *ot = GP_AS(GPTuple, o3->body);
  cr_assert_eq(ot->fields[0], &o3->var->base);
  cr_assert_eq(ot->fields[1], &o3->var->base);
  GPFunctionExpr *oi = GP_AS(GPFunctionExpr, o1->value);
  cr_assert_eq(GP_AS(GPCall, oi->body)->args[1], &of->params[0]->base, "captured var rebound");
  cr_assert_null(z->base.checked_type, "input vars untouched");
  cr_assert_eq(gp_verify(o), 0, "%s", gp_error_message());
  rel(16, o, m, f, l1, l2, l3, tp, rl, cf, w, z, fv, inner, add, y, x);
}

Test(infer, if_expr) {
  const GPType *t = T2(1, 3);
  GPVar *x = gp_var_new("x", t);
  GPExpr *c = bool_const(true);
  GPExpr *r = call1("nn.relu", &x->base);
  GPExpr *i = E(gp_if_new(c, r, &x->base));
  GPFunctionExpr *f = fn1(x, i, NULL);
  GPModule *m = module1("main", f);
  GPModule *o = gp_infer_types(m);
  cr_assert(o, "%s", gp_error_message());
  cr_assert_eq(o->funcs[0]->body->checked_type, t);
  cr_assert_eq(gp_verify(o), 0, "%s", gp_error_message());
  rel(7, o, m, f, i, r, c, x);
}

/* @main calls @f, defined after it, whose return type is inferred first. */
Test(infer, forward_global_call) {
  const GPType *t = T2(1, 3);
  GPVar *x = gp_var_new("x", t);
  GPGlobalVar *gf = gp_global_var_new("f");
  GPExpr *xa[1] = {&x->base};
  GPExpr *c = E(gp_call_new(&gf->base, 1, xa, NULL));
  GPFunctionExpr *mainf = fn1(x, c, NULL);
  GPVar *y = gp_var_new("y", t);
  GPExpr *r = call1("nn.relu", &y->base);
  GPFunctionExpr *ff = fn1(y, r, NULL);
  GPModule *m = module1("main", mainf);
  cr_assert_eq(gp_module_add(m, "f", ff, false), 0);
  GPModule *o = gp_infer_types(m);
  cr_assert(o, "%s", gp_error_message());
  const GPType *ft = gp_type_func(1, &t, t);
  cr_assert_eq(o->funcs[0]->base.checked_type, ft);
  cr_assert_eq(o->funcs[1]->base.checked_type, ft);
  GPCall *oc = GP_AS(GPCall, o->funcs[0]->body);
  cr_assert_eq(oc->op->checked_type, ft, "the global var is typed");
  cr_assert_eq(oc->base.checked_type, t);
  cr_assert_null(gf->base.checked_type);
  cr_assert_eq(gp_verify(o), 0, "%s", gp_error_message());
  rel(10, o, m, ff, r, y, mainf, c, gf, x, NULL);
}

/* A recursive function with a declared return type: fn(%n: bool, %x) -> T { if %n { @f(%n, relu(%x)) } else { %x } } */
Test(infer, recursive_with_return_type) {
  const GPType *t = T2(1, 3);
  GPVar *n = gp_var_new("n", gp_type_scalar(GP_DT_BOOL));
  GPVar *x = gp_var_new("x", t);
  GPGlobalVar *gf = gp_global_var_new("f");
  GPExpr *r = call1("nn.relu", &x->base);
  GPExpr *args[2] = {&n->base, r};
  GPExpr *c = E(gp_call_new(&gf->base, 2, args, NULL));
  GPExpr *i = E(gp_if_new(&n->base, c, &x->base));
  GPVar *ps[2] = {n, x};
  GPFunctionExpr *ff = (GPFunctionExpr *)E(gp_function_new(2, ps, i, t, NULL));
  GPModule *m = module1("f", ff);
  GPModule *o = gp_infer_types(m);
  cr_assert(o, "%s", gp_error_message());
  cr_assert_eq(o->funcs[0]->body->checked_type, t);
  cr_assert_eq(gp_verify(o), 0, "%s", gp_error_message());
  rel(9, o, m, ff, i, c, r, gf, x, n);
}

/* ---- errors */

Test(infer, error_shape_mismatch_in_add) {
  GPVar *x = gp_var_new("x", T2(2, 3));
  GPVar *y = gp_var_new("y", T2(4, 5));
  GPVar *ps[2] = {x, y};
  GPExpr *a = at(call2("add", &x->base, &y->base), 3, 7);
  GPExpr *r = at(call1("nn.relu", a), 4, 3);
  GPFunctionExpr *f = (GPFunctionExpr *)E(gp_function_new(2, ps, r, NULL, NULL));
  GPModule *m = module1("main", f);
  cr_assert_null(gp_infer_types(m));
  cr_assert_eq(gp_error_kind(), GP_ERR_TYPE);
  const char *msg = gp_error_message();
  cr_assert(strncmp(msg, "model.relay:3:7: error: in @main: add: ", 39) == 0, "%s", msg);
  expect_error(GP_ERR_TYPE, "broadcast");
  rel(6, m, f, r, a, y, x);
}

Test(infer, error_without_location) {
  GPVar *x = gp_var_new("x", T2(2, 3));
  GPVar *y = gp_var_new("y", T2(4, 5));
  GPVar *ps[2] = {x, y};
  GPExpr *a = call2("add", &x->base, &y->base);
  GPFunctionExpr *f = (GPFunctionExpr *)E(gp_function_new(2, ps, a, NULL, NULL));
  GPModule *m = module1("main", f);
  cr_assert_null(gp_infer_types(m));
  const char *msg = gp_error_message();
  cr_assert(strncmp(msg, "model.relay: error: in @main: add: ", 35) == 0, "%s", msg);
  gp_error_clear();
  rel(5, m, f, a, y, x);
}

Test(infer, error_location_inherited) {
  /* the failing node has no location: the nearest enclosing one is used */
  GPVar *x = gp_var_new("x", T2(2, 3));
  GPVar *y = gp_var_new("y", T2(4, 5));
  GPVar *ps[2] = {x, y};
  GPExpr *a = call2("add", &x->base, &y->base);
  GPExpr *r = at(call1("nn.relu", a), 9, 2);
  GPFunctionExpr *f = (GPFunctionExpr *)E(gp_function_new(2, ps, r, NULL, NULL));
  GPModule *m = module1("main", f);
  cr_assert_null(gp_infer_types(m));
  expect_error(GP_ERR_TYPE, "model.relay:9:2: error: in @main: add:");
  rel(6, m, f, r, a, y, x);
}

Test(infer, error_bad_get_item_index) {
  GPVar *x = gp_var_new("x", T2(1, 3));
  GPExpr *fs[2] = {&x->base, &x->base};
  GPExpr *tp = E(gp_tuple_new(2, fs));
  GPExpr *g = at(E(gp_tuple_get_item_new(tp, 2)), 2, 5);
  GPFunctionExpr *f = fn1(x, g, NULL);
  GPModule *m = module1("main", f);
  cr_assert_null(gp_infer_types(m));
  expect_error(GP_ERR_TYPE, "model.relay:2:5: error: in @main: tuple get-item: index 2 out of range");
  /* get-item of a non-tuple */
  GPExpr *g0 = at(E(gp_tuple_get_item_new(&x->base, 0)), 6, 1);
  GPVar *x2 = gp_var_new("x2", T2(1, 3));
  GPFunctionExpr *f2 = fn1(x2, g0, NULL);
  GPModule *m2 = module1("main", f2);
  cr_assert_null(gp_infer_types(m2));
  expect_error(GP_ERR_TYPE, "non-tuple");
  rel(9, m2, f2, x2, g0, m, f, g, tp, x);
}

Test(infer, error_if_cond_not_bool) {
  const GPType *t = T2(1, 3);
  GPVar *x = gp_var_new("x", t);
  GPExpr *i = at(E(gp_if_new(&x->base, &x->base, &x->base)), 5, 3);
  GPFunctionExpr *f = fn1(x, i, NULL);
  GPModule *m = module1("main", f);
  cr_assert_null(gp_infer_types(m));
  expect_error(GP_ERR_TYPE, "model.relay:5:3: error: in @main: if: the condition must be a bool");
  /* branches of different types */
  GPExpr *c = bool_const(false);
  GPVar *y = gp_var_new("y", T2(2, 2));
  GPVar *ps[2] = {x, y};
  GPExpr *i2 = E(gp_if_new(c, &x->base, &y->base));
  GPFunctionExpr *f2 = (GPFunctionExpr *)E(gp_function_new(2, ps, i2, NULL, NULL));
  GPModule *m2 = module1("main", f2);
  cr_assert_null(gp_infer_types(m2));
  expect_error(GP_ERR_TYPE, "branches have different types");
  rel(9, m2, f2, i2, y, c, m, f, i, x);
}

Test(infer, error_unannotated_param) {
  GPVar *x = gp_var_new("x", NULL);
  at(&x->base, 1, 15);
  GPExpr *r = call1("nn.relu", &x->base);
  GPFunctionExpr *f = fn1(x, r, NULL);
  GPModule *m = module1("main", f);
  cr_assert_null(gp_infer_types(m));
  expect_error(GP_ERR_TYPE, "model.relay:1:15: error: in @main: nn.relu: cannot infer the type of parameter %x "
                            "(argument 0), which has no type annotation");
  rel(4, m, f, r, x);
}

Test(infer, error_ret_type_mismatch) {
  GPVar *x = gp_var_new("x", T2(1, 3));
  GPFunctionExpr *f = fn1(x, &x->base, T2(3, 1));
  GPModule *m = module1("main", f);
  cr_assert_null(gp_infer_types(m));
  expect_error(GP_ERR_TYPE, "declared return type");
  rel(3, m, f, x);
}

/* A ? in a declared return type or a let annotation unifies with a known dim (a pass such as
 * CanonicalizeOps can make (1, ?) into (1, 9): fuzz_graphs with a dynamic batch); the declared
 * type stays the function's, and known dims that differ are still an error. */
Test(infer, declared_types_with_unknown_dims_fit_known_ones) {
  const int64_t any9[2] = {1, GP_DIM_ANY}, anyr[2] = {GP_DIM_ANY, 3};
  const GPType *t1any = gp_type_tensor((DLDataType){kDLFloat, 32, 1}, 2, any9);
  const GPType *tany3 = gp_type_tensor((DLDataType){kDLFloat, 32, 1}, 2, anyr);
  GPVar *x = gp_var_new("x", T2(1, 3));
  GPFunctionExpr *f = fn1(x, &x->base, t1any);
  GPModule *m = module1("main", f);
  GPModule *typed = gp_infer_types(m);
  cr_assert_not_null(typed, "%s", gp_error_message());
  const GPType *ft = gp_module_lookup(typed, "main")->base.checked_type;
  cr_assert_eq(ft->func.ret, t1any, "the declared (1, ?) is the function's return type");
  gp_release(typed);
  rel(3, m, f, x);
  GPVar *y = gp_var_new("y", T2(2, 3));
  GPVar *v = gp_var_new("v", tany3);
  GPExpr *l = E(gp_let_new(v, &y->base, &v->base));
  f = fn1(y, l, NULL);
  m = module1("main", f);
  typed = gp_infer_types(m);
  cr_assert_not_null(typed, "%s", gp_error_message());
  gp_release(typed);
  rel(5, m, f, l, v, y);
  GPVar *z = gp_var_new("z", T2(1, 3));
  f = fn1(z, &z->base, tany3); /* (?, 3) and (1, 3): fits */
  m = module1("main", f);
  typed = gp_infer_types(m);
  cr_assert_not_null(typed, "%s", gp_error_message());
  gp_release(typed);
  rel(3, m, f, z);
  GPVar *w = gp_var_new("w", T2(1, 4));
  f = fn1(w, &w->base, t1any); /* (1, ?) and (1, 4): fits; (2, ?) would not */
  m = module1("main", f);
  typed = gp_infer_types(m);
  cr_assert_not_null(typed, "%s", gp_error_message());
  gp_release(typed);
  rel(3, m, f, w);
  const int64_t two_any[2] = {2, GP_DIM_ANY};
  GPVar *u = gp_var_new("u", T2(1, 4));
  f = fn1(u, &u->base, gp_type_tensor((DLDataType){kDLFloat, 32, 1}, 2, two_any));
  m = module1("main", f);
  cr_assert_null(gp_infer_types(m));
  expect_error(GP_ERR_TYPE, "declared return type");
  rel(3, m, f, u);
}

Test(infer, error_let_annotation_mismatch) {
  GPVar *x = gp_var_new("x", T2(1, 3));
  GPVar *v = gp_var_new("v", T2(3, 3));
  GPExpr *l = E(gp_let_new(v, &x->base, &v->base));
  GPFunctionExpr *f = fn1(x, l, NULL);
  GPModule *m = module1("main", f);
  cr_assert_null(gp_infer_types(m));
  expect_error(GP_ERR_TYPE, "let: %v is annotated");
  rel(5, m, f, l, v, x);
}

Test(infer, error_recursive_without_return_type) {
  const GPType *t = T2(1, 3);
  GPVar *x = gp_var_new("x", t);
  GPGlobalVar *gf = gp_global_var_new("f");
  GPExpr *xa[1] = {&x->base};
  GPExpr *c = at(E(gp_call_new(&gf->base, 1, xa, NULL)), 2, 3);
  GPFunctionExpr *ff = fn1(x, c, NULL);
  GPModule *m = module1("f", ff);
  cr_assert_null(gp_infer_types(m));
  expect_error(GP_ERR_TYPE, "in @f: global var: recursive reference to @f");
  rel(5, m, ff, c, gf, x);
}

Test(infer, error_mutual_recursion_without_return_types) {
  const GPType *t = T2(1, 3);
  GPVar *x = gp_var_new("x", t), *y = gp_var_new("y", t);
  GPGlobalVar *gf = gp_global_var_new("f"), *gg = gp_global_var_new("g");
  GPExpr *xa[1] = {&x->base}, *ya[1] = {&y->base};
  GPExpr *cg = E(gp_call_new(&gg->base, 1, xa, NULL));
  GPExpr *cf = E(gp_call_new(&gf->base, 1, ya, NULL));
  GPFunctionExpr *ff = fn1(x, cg, NULL), *fg = fn1(y, cf, NULL);
  GPModule *m = module1("f", ff);
  cr_assert_eq(gp_module_add(m, "g", fg, false), 0);
  cr_assert_null(gp_infer_types(m));
  expect_error(GP_ERR_TYPE, "recursive reference to @f");
  /* with a declared return type on one of them it works */
  GPFunctionExpr *fg2 = fn1(y, cf, t);
  GPModule *m2 = module1("f", ff);
  cr_assert_eq(gp_module_add(m2, "g", fg2, false), 0);
  GPModule *o = gp_infer_types(m2);
  cr_assert(o, "%s", gp_error_message());
  cr_assert_eq(o->funcs[0]->ret_type, t);
  rel(13, o, m2, fg2, m, fg, ff, cf, cg, gg, gf, y, x, NULL);
}

Test(infer, error_missing_global) {
  GPVar *x = gp_var_new("x", T2(1, 3));
  GPGlobalVar *gh = gp_global_var_new("nope");
  GPExpr *xa[1] = {&x->base};
  GPExpr *c = E(gp_call_new(&gh->base, 1, xa, NULL));
  GPFunctionExpr *f = fn1(x, c, NULL);
  GPModule *m = module1("main", f);
  cr_assert_null(gp_infer_types(m));
  expect_error(GP_ERR_TYPE, "@nope is not defined");
  rel(5, m, f, c, gh, x);
}

Test(infer, error_call_arity_and_arg_type) {
  const GPType *t = T2(1, 3);
  GPVar *y = gp_var_new("y", t);
  GPFunctionExpr *g = fn1(y, &y->base, t);
  GPVar *x = gp_var_new("x", T2(2, 3));
  GPGlobalVar *gg = gp_global_var_new("g");
  GPExpr *xa[1] = {&x->base};
  GPExpr *c = E(gp_call_new(&gg->base, 1, xa, NULL));
  GPFunctionExpr *f = fn1(x, c, NULL);
  GPModule *m = module1("main", f);
  cr_assert_eq(gp_module_add(m, "g", g, false), 0);
  cr_assert_null(gp_infer_types(m));
  expect_error(GP_ERR_TYPE, "call @g: argument 0 has type Tensor[(2, 3), float32], expected");
  rel(7, m, f, c, gg, x, g, y);
}

/* ---- re-runs and gp_infer_expr */

Test(infer, rerun_is_cheap_and_equal) {
  const GPType *t = T2(1, 3);
  GPVar *x = gp_var_new("x", t);
  GPVar *v = gp_var_new("v", NULL);
  GPExpr *r = call1("nn.relu", &x->base);
  GPExpr *a = call2("add", &v->base, &v->base);
  GPExpr *l = E(gp_let_new(v, r, a));
  GPFunctionExpr *f = fn1(x, l, NULL);
  GPModule *m = module1("main", f);
  GPModule *o1 = gp_infer_types(m);
  cr_assert(o1, "%s", gp_error_message());
  GPModule *o2 = gp_infer_types(o1);
  cr_assert(o2, "%s", gp_error_message());
  cr_assert_neq(o2, o1, "a new module");
  cr_assert_eq(o2->funcs[0], o1->funcs[0], "the same function object when nothing changes");
  cr_assert_eq(o2->funcs[0]->body->checked_type, t);
  rel(9, o2, o1, m, f, l, a, r, v, x);
}

Test(infer, infer_expr_builds_typed_copy) {
  const GPType *t = T2(1, 3);
  GPVar *x = gp_var_new("x", t);
  GPExpr *r = call1("nn.relu", &x->base);
  GPExpr *tr = gp_infer_expr(r);
  cr_assert(tr, "%s", gp_error_message());
  cr_assert_neq(tr, r);
  cr_assert_eq(tr->checked_type, t);
  cr_assert_null(r->checked_type);
  /* a new node over typed children: O(1), children kept */
  GPExpr *a = call2("add", tr, tr);
  GPExpr *ta = gp_infer_expr(a);
  cr_assert(ta, "%s", gp_error_message());
  cr_assert_eq(ta->checked_type, t);
  cr_assert_eq(GP_AS(GPCall, ta)->args[0], tr);
  /* a typed node comes back as is */
  GPExpr *again = gp_infer_expr(ta);
  cr_assert_eq(again, ta);
  /* errors */
  GPVar *y = gp_var_new("y", T2(5, 5));
  GPExpr *bad = call2("add", tr, &y->base);
  cr_assert_null(gp_infer_expr(bad));
  expect_error(GP_ERR_TYPE, "error: add:");
  rel(9, bad, y, again, ta, a, tr, r, x, NULL);
}

/* ---- big graphs */

#define BIG 1000000

Test(infer, million_node_chain, .timeout = 120) {
  const GPType *t = T2(1, 4);
  GPVar *x = gp_var_new("x", t);
  const GPOp *relu = gp_op_get("nn.relu");
  GPExpr *cur = gp_retain(&x->base);
  for (int i = 0; i < BIG; i++) {
    GPExpr *nx = E(gp_call_new((GPExpr *)relu, 1, &cur, NULL));
    gp_release(cur);
    cur = nx;
  }
  GPFunctionExpr *f = fn1(x, cur, NULL);
  GPModule *m = module1("main", f);
  GPModule *o = gp_infer_types(m);
  cr_assert(o, "%s", gp_error_message());
  cr_assert_eq(o->funcs[0]->body->checked_type, t);
  cr_assert_eq(gp_verify(o), 0, "%s", gp_error_message());
  cr_assert_eq(gp_verify(m), 0, "%s", gp_error_message());
  GPModule *o2 = gp_infer_types(o);
  cr_assert(o2, "%s", gp_error_message());
  cr_assert_eq(o2->funcs[0], o->funcs[0]);
  rel(6, o2, o, m, f, cur, x);
}

Test(infer, million_let_chain, .timeout = 120) {
  /* let %v1 = relu(%x); let %v2 = relu(%v1); ... %vN, built inside out */
  const GPType *t = T2(1, 4);
  GPVar *x = gp_var_new("x", t);
  const GPOp *relu = gp_op_get("nn.relu");
  GPVar **vs = gp_malloc(sizeof(GPVar *) * BIG);
  GPExpr **vals = gp_malloc(sizeof(GPExpr *) * BIG);
  GPExpr *prev = &x->base;
  for (int i = 0; i < BIG; i++) {
    vs[i] = gp_var_new("v", NULL);
    vals[i] = E(gp_call_new((GPExpr *)relu, 1, &prev, NULL));
    prev = &vs[i]->base;
  }
  GPExpr *body = gp_retain(&vs[BIG - 1]->base);
  for (int i = BIG - 1; i >= 0; i--) {
    GPExpr *l = E(gp_let_new(vs[i], vals[i], body));
    gp_release(body);
    gp_release(vals[i]);
    gp_release(vs[i]);
    body = l;
  }
  gp_free(vals);
  gp_free(vs);
  GPFunctionExpr *f = fn1(x, body, NULL);
  GPModule *m = module1("main", f);
  cr_assert_eq(gp_verify(m), 0, "%s", gp_error_message());
  GPModule *o = gp_infer_types(m);
  cr_assert(o, "%s", gp_error_message());
  cr_assert_eq(o->funcs[0]->body->checked_type, t);
  cr_assert_eq(o->funcs[0]->ret_type, t);
  cr_assert_eq(gp_verify(o), 0, "%s", gp_error_message());
  rel(5, o, m, f, body, x);
}

Test(infer, deep_if_and_closure_nesting, .timeout = 120) {
  /* if (c) { if (c) { ... relu(x) ... } else { x } } else { x }, 1M deep */
  const GPType *t = T2(1, 4);
  GPVar *x = gp_var_new("x", t);
  GPExpr *c = bool_const(true);
  GPExpr *cur = call1("nn.relu", &x->base);
  for (int i = 0; i < BIG; i++) {
    GPExpr *n = E(gp_if_new(c, cur, &x->base));
    gp_release(cur);
    cur = n;
  }
  GPFunctionExpr *f = fn1(x, cur, NULL);
  GPModule *m = module1("main", f);
  GPModule *o = gp_infer_types(m);
  cr_assert(o, "%s", gp_error_message());
  cr_assert_eq(o->funcs[0]->body->checked_type, t);
  cr_assert_eq(gp_verify(o), 0, "%s", gp_error_message());
  rel(6, o, m, f, cur, c, x);
  /* (fn (%p) { (fn (%p') { ... add(%p'', %y) ... })(%p) })(%y): closures nested 300k deep,
   * the innermost capturing the outermost param */
  GPVar *y = gp_var_new("y", t);
  GPVar *p = gp_var_new("p", t);
  GPExpr *body = call2("add", &p->base, &y->base);
  GPVar *prevp = p;
  for (int i = 0; i < 300000; i++) {
    GPFunctionExpr *fn = fn1(prevp, body, NULL);
    GPVar *np = gp_var_new("p", t);
    GPExpr *arg[1] = {i == 300000 - 1 ? &y->base : &np->base};
    GPExpr *cl = E(gp_call_new(&fn->base, 1, arg, NULL));
    gp_release(fn);
    gp_release(body);
    gp_release(prevp);
    body = cl;
    prevp = np;
  }
  gp_release(prevp);
  GPFunctionExpr *g = fn1(y, body, NULL);
  GPModule *m2 = module1("main", g);
  cr_assert_eq(gp_verify(m2), 0, "%s", gp_error_message());
  GPModule *o2 = gp_infer_types(m2);
  cr_assert(o2, "%s", gp_error_message());
  cr_assert_eq(o2->funcs[0]->body->checked_type, t);
  cr_assert_eq(gp_verify(o2), 0, "%s", gp_error_message());
  rel(5, o2, m2, g, body, y);
}

/* ---- parsed programs */

static GPModule *parse(const char *text) {
  GPModule *m = gp_parse(text, strlen(text), "t.relay");
  cr_assert(m, "parse: %s", gp_error_message());
  return m;
}

static void expect_infer_error(const char *text, const char *needle) {
  GPModule *m = parse(text);
  cr_assert_null(gp_infer_types(m));
  expect_error(GP_ERR_TYPE, needle);
  gp_release(m);
}

Test(infer, parsed_program) {
  GPModule *m = parse("#[version = \"0.0.5\"]\n"
                      "def @main(%x: Tensor[(1, 3), float32], %c: bool) {\n"
                      "  %0 = fn (%y: Tensor[(1, 3), float32]) { add(%y, %x) };\n"
                      "  %1 = if (%c) { %0(%x) } else { nn.relu(%x) };\n"
                      "  %2 = split(%1, indices_or_sections=3, axis=1);\n"
                      "  (%2.0, @g(%2.2))\n"
                      "}\n"
                      "def @g(%a: Tensor[(1, 1), float32]) {\n"
                      "  let %v = negative(%a);\n"
                      "  multiply(%v, %v)\n"
                      "}\n");
  GPModule *o = gp_infer_types(m);
  cr_assert(o, "%s", gp_error_message());
  const GPType *t11 = T2(1, 1);
  const GPType *tt[2] = {t11, t11};
  cr_assert_eq(o->funcs[0]->ret_type, gp_type_tuple(2, tt));
  cr_assert_eq(o->funcs[1]->ret_type, t11);
  cr_assert_eq(gp_verify(o), 0, "%s", gp_error_message());
  GPModule *o2 = gp_infer_types(o);
  cr_assert(o2, "%s", gp_error_message());
  cr_assert_eq(o2->funcs[0], o->funcs[0]);
  cr_assert_eq(o2->funcs[1], o->funcs[1]);
  cr_assert(gp_module_equal(o, o2));
  rel(3, o2, o, m);
}

Test(infer, parsed_errors_have_locations) {
  expect_infer_error("#[version = \"0.0.5\"]\n"
                     "def @main(%x: Tensor[(1, 3), float32], %y: Tensor[(2, 4), float32]) {\n"
                     "  %0 = nn.relu(%x);\n"
                     "  add(%0, %y)\n"
                     "}\n",
                     "t.relay:4:3: error: in @main: add: shapes (1, 3) of lhs and (2, 4) of rhs");
  expect_infer_error("#[version = \"0.0.5\"]\n"
                     "def @main(%x: Tensor[(1, 3), float32]) {\n"
                     "  if (%x) { %x } else { %x }\n"
                     "}\n",
                     "t.relay:3:3: error: in @main: if: the condition must be a bool scalar");
  expect_infer_error("#[version = \"0.0.5\"]\n"
                     "def @main(%x: Tensor[(1, 3), float32]) {\n"
                     "  @f(%x)\n"
                     "}\n"
                     "def @f(%x: Tensor[(1, 3), float32]) {\n"
                     "  nn.relu(@f(%x))\n"
                     "}\n",
                     "t.relay:6:11: error: in @f: global var: recursive reference to @f");
  expect_infer_error("#[version = \"0.0.5\"]\n"
                     "def @main(%x) {\n"
                     "  nn.relu(%x)\n"
                     "}\n",
                     "t.relay:3:3: error: in @main: nn.relu: cannot infer the type of parameter %x (argument 0)");
  expect_infer_error("#[version = \"0.0.5\"]\n"
                     "def @main(%x: Tensor[(1, 3), float32]) {\n"
                     "  %0 = (%x, %x);\n"
                     "  %0.2\n"
                     "}\n",
                     "t.relay:4:3: error: in @main: tuple get-item: index 2 out of range for a tuple of 2 fields");
}

/* Nodes held by one reference report to their parent's slot, shared ones go through the memo
 * map: a diamond under unshared parents must still type the shared node once, and an unused
 * (single-reference) let var and param must come back typed. */
Test(infer, shared_and_unshared_nodes_mix) {
  const char *src = "#[version = \"0.0.5\"]\n"
                    "def @main(%x: Tensor[(2, 3), float32], %unused: Tensor[(1), int8]) {\n"
                    "  %0 = add(%x, %x);\n"
                    "  %1 = nn.relu(%0);\n"
                    "  %2 = negative(%0);\n"
                    "  let %dead = multiply(%1, %2);\n"
                    "  subtract(%1, %2)\n"
                    "}\n";
  GPModule *m = gp_parse(src, strlen(src), "mix");
  cr_assert(m, "%s", gp_error_message());
  GPModule *o = gp_infer_types(m);
  cr_assert(o, "%s", gp_error_message());
  GPLet *l = GP_AS(GPLet, o->funcs[0]->body);
  cr_assert_eq(gp_kind(l), GP_TI_LET);
  cr_assert(l->var->base.checked_type, "the unused let var is typed");
  cr_assert(o->funcs[0]->params[1]->base.checked_type, "the unused param is typed");
  GPCall *sub = GP_AS(GPCall, l->body), *mul = GP_AS(GPCall, l->value);
  cr_assert_eq(sub->args[0], mul->args[0], "relu typed once");
  GPCall *relu = GP_AS(GPCall, sub->args[0]), *neg = GP_AS(GPCall, sub->args[1]);
  cr_assert_eq(relu->args[0], neg->args[0], "the shared add is typed once");
  cr_assert_eq(relu->args[0]->checked_type, T2(2, 3));
  /* a second run over the typed module keeps everything */
  GPModule *o2 = gp_infer_types(o);
  cr_assert(o2, "%s", gp_error_message());
  cr_assert_eq(o2->funcs[0], o->funcs[0]);
  gp_release(o2);
  gp_release(o);
  gp_release(m);
}
