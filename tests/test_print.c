/* test_print.c -- gp_print / gp_print_expr: TVM's Relay text layout (bindings, numbering, attrs,
 * scalars, meta constants and the metadata section, closures, let, if, unique names, scopes)
 * and million-node graphs. */
#include "ir/ir.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- helpers */

static GPExpr *E(void *e) {
  cr_assert(e, "constructor failed: %s", gp_error_message());
  return (GPExpr *)e;
}

static const GPType *TT(int32_t nd, const int64_t *s) { return gp_type_tensor(GP_DT_F32, nd, s); }

static const GPType *T2(int64_t a, int64_t b) {
  int64_t s[2] = {a, b};
  return TT(2, s);
}

static GPVar *V(const char *name, const GPType *t) { return (GPVar *)E(gp_var_new(name, t)); }

static GPExpr *call(const char *op, int32_t n, GPExpr *const *args, GPAttrs *attrs) {
  return E(gp_call_new((GPExpr *)gp_op_get(op), n, args, attrs));
}

static GPExpr *call1(const char *op, GPExpr *a) { return call(op, 1, &a, NULL); }

static GPExpr *call2(const char *op, GPExpr *a, GPExpr *b) {
  GPExpr *args[2] = {a, b};
  return call(op, 2, args, NULL);
}

static GPFunctionExpr *fn(int32_t n, GPVar *const *params, GPExpr *body, GPAttrs *attrs) {
  return (GPFunctionExpr *)E(gp_function_new(n, params, body, NULL, attrs));
}

static GPModule *module1(GPFunctionExpr *f) {
  GPModule *m = gp_module_new(NULL);
  cr_assert_eq(gp_module_add(m, "main", f, false), 0);
  return m;
}

static void expect_print(const GPModule *m, int32_t flags, const char *want) {
  char *got = gp_print(m, flags);
  cr_assert(got, "print failed: %s", gp_error_message());
  cr_assert_str_eq(got, want, "\n--- got:\n%s\n--- want:\n%s", got, want);
  gp_free(got);
}

static GPExpr *scalar_f(DLDataType t, double v) {
  GPTensor *x = gp_tensor_scalar_f64(t, v);
  GPExpr *c = E(gp_constant_new(x));
  gp_release(x);
  return c;
}

static GPExpr *scalar_i(DLDataType t, int64_t v) {
  GPTensor *x = gp_tensor_scalar_i64(t, v);
  GPExpr *c = E(gp_constant_new(x));
  gp_release(x);
  return c;
}

static GPExpr *const_f32(int32_t nd, const int64_t *shape, const float *vals) {
  GPTensor *t = gp_tensor_alloc(GP_DT_F32, nd, shape, true);
  memcpy(t->dl.data, vals, gp_tensor_nbytes(t));
  GPExpr *c = E(gp_constant_new(t));
  gp_release(t);
  return c;
}

/* conv2d + bias_add + relu */
static GPModule *conv_block(void) {
  int64_t ds[4] = {1, 3, 8, 8}, ws[4] = {4, 3, 3, 3}, bs[1] = {4};
  GPVar *data = V("data", TT(4, ds)), *weight = V("weight", TT(4, ws)), *bias = V("bias", TT(1, bs));
  const GPOp *conv = gp_op_get("nn.conv2d");
  int64_t pad[4] = {1, 1, 1, 1}, ks[2] = {3, 3}, one[2] = {1, 1};
  const char *keys[5] = {"padding", "channels", "kernel_size", "strides", "data_layout"};
  GPAttrValue vals[5] = {gp_attr_ints(4, pad), gp_attr_int(4), gp_attr_ints(2, ks),
                         gp_attr_ints(2, one), gp_attr_str("NCHW")};
  GPAttrs *a = gp_op_attrs_new(conv, 5, keys, vals);
  cr_assert(a, "%s", gp_error_message());
  GPExpr *args[2] = {(GPExpr *)data, (GPExpr *)weight};
  GPExpr *c = E(gp_call_new((GPExpr *)conv, 2, args, a));
  GPExpr *b = call2("nn.bias_add", c, (GPExpr *)bias);
  GPExpr *r = call1("nn.relu", b);
  GPVar *ps[3] = {data, weight, bias};
  GPFunctionExpr *f = fn(3, ps, r, NULL);
  GPModule *m = module1(f);
  gp_release(f);
  gp_release(r);
  gp_release(b);
  gp_release(c);
  gp_release(a);
  for (int i = 0; i < 3; i++) gp_release(ps[i]);
  return m;
}

/* ---- layout */

Test(print, conv_block) {
  GPModule *m = conv_block();
  expect_print(m, 0,
               "#[version = \"0.0.5\"]\n"
               "def @main(%data: Tensor[(1, 3, 8, 8), float32], %weight: Tensor[(4, 3, 3, 3), float32], "
               "%bias: Tensor[(4), float32]) {\n"
               "  %0 = nn.conv2d(%data, %weight, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);\n"
               "  %1 = nn.bias_add(%0, %bias);\n"
               "  nn.relu(%1)\n"
               "}\n");
  gp_release(m);
}

Test(print, conv_block_types) {
  GPModule *m0 = conv_block();
  GPModule *m = gp_infer_types(m0);
  cr_assert(m, "%s", gp_error_message());
  expect_print(m, GP_PRINT_TYPES,
               "#[version = \"0.0.5\"]\n"
               "def @main(%data: Tensor[(1, 3, 8, 8), float32] /* ty=Tensor[(1, 3, 8, 8), float32] */, "
               "%weight: Tensor[(4, 3, 3, 3), float32] /* ty=Tensor[(4, 3, 3, 3), float32] */, "
               "%bias: Tensor[(4), float32] /* ty=Tensor[(4), float32] */) -> Tensor[(1, 4, 8, 8), float32] {\n"
               "  %0 = nn.conv2d(%data, %weight, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]) "
               "/* ty=Tensor[(1, 4, 8, 8), float32] */;\n"
               "  %1 = nn.bias_add(%0, %bias) /* ty=Tensor[(1, 4, 8, 8), float32] */;\n"
               "  nn.relu(%1) /* ty=Tensor[(1, 4, 8, 8), float32] */\n"
               "}\n");
  /* the return type is known from the checked type even without the comments */
  expect_print(m, 0,
               "#[version = \"0.0.5\"]\n"
               "def @main(%data: Tensor[(1, 3, 8, 8), float32], %weight: Tensor[(4, 3, 3, 3), float32], "
               "%bias: Tensor[(4), float32]) -> Tensor[(1, 4, 8, 8), float32] {\n"
               "  %0 = nn.conv2d(%data, %weight, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);\n"
               "  %1 = nn.bias_add(%0, %bias);\n"
               "  nn.relu(%1)\n"
               "}\n");
  gp_release(m);
  gp_release(m0);
}

Test(print, tuples_and_items) {
  GPVar *x = V("x", T2(1, 3));
  GPExpr *r = call1("nn.relu", (GPExpr *)x), *s = call1("sigmoid", (GPExpr *)x);
  GPExpr *fs[2] = {r, s};
  GPExpr *t = E(gp_tuple_new(2, fs));
  GPExpr *g0 = E(gp_tuple_get_item_new(t, 0)), *g1 = E(gp_tuple_get_item_new(t, 1));
  GPExpr *a = call2("add", g0, g1);
  GPExpr *one[1] = {a};
  GPExpr *t1 = E(gp_tuple_new(1, one));
  GPFunctionExpr *f = fn(1, &x, t1, NULL);
  GPModule *m = module1(f);
  expect_print(m, 0,
               "#[version = \"0.0.5\"]\n"
               "def @main(%x: Tensor[(1, 3), float32]) {\n"
               "  %0 = nn.relu(%x);\n"
               "  %1 = sigmoid(%x);\n"
               "  %2 = (%0, %1);\n"
               "  %3 = %2.0;\n"
               "  %4 = %2.1;\n"
               "  %5 = add(%3, %4);\n"
               "  (%5,)\n"
               "}\n");
  gp_release(m);
  gp_release(f);
  gp_release(t1);
  gp_release(a);
  gp_release(g0);
  gp_release(g1);
  gp_release(t);
  gp_release(r);
  gp_release(s);
  gp_release(x);
}

/* Argument subtrees are visited before their users are bound (TVM's dataflow expansion). */
Test(print, binding_order) {
  GPVar *x = V("x", T2(1, 3));
  GPExpr *a1 = call1("nn.relu", (GPExpr *)x), *a = call1("sigmoid", a1);
  GPExpr *b1 = call1("exp", (GPExpr *)x), *b = call1("negative", b1);
  GPExpr *c = call2("add", a, b);
  GPFunctionExpr *f = fn(1, &x, c, NULL);
  GPModule *m = module1(f);
  expect_print(m, 0,
               "#[version = \"0.0.5\"]\n"
               "def @main(%x: Tensor[(1, 3), float32]) {\n"
               "  %0 = nn.relu(%x);\n"
               "  %1 = exp(%x);\n"
               "  %2 = sigmoid(%0);\n"
               "  %3 = negative(%1);\n"
               "  add(%2, %3)\n"
               "}\n");
  gp_release(m);
  gp_release(f);
  gp_release(c);
  gp_release(a);
  gp_release(a1);
  gp_release(b);
  gp_release(b1);
  gp_release(x);
}

Test(print, closure_primitive) {
  GPVar *x = V("x", T2(1, 3)), *p0 = V("p0", T2(1, 3));
  GPExpr *r = call1("nn.relu", (GPExpr *)p0);
  const char *k[1] = {"Primitive"};
  GPAttrValue v[1] = {gp_attr_int(1)};
  GPAttrs *at = gp_attrs_new(1, k, v);
  GPFunctionExpr *inner = fn(1, &p0, r, at);
  GPExpr *arg[1] = {(GPExpr *)x};
  GPExpr *c = E(gp_call_new((GPExpr *)inner, 1, arg, NULL));
  GPFunctionExpr *f = fn(1, &x, c, NULL);
  GPModule *m = module1(f);
  expect_print(m, 0,
               "#[version = \"0.0.5\"]\n"
               "def @main(%x: Tensor[(1, 3), float32]) {\n"
               "  %0 = fn (%p0: Tensor[(1, 3), float32], Primitive=1) {\n"
               "    nn.relu(%p0)\n"
               "  };\n"
               "  %0(%x)\n"
               "}\n");
  GPModule *mt = gp_infer_types(m);
  cr_assert(mt, "%s", gp_error_message());
  expect_print(mt, GP_PRINT_TYPES,
               "#[version = \"0.0.5\"]\n"
               "def @main(%x: Tensor[(1, 3), float32] /* ty=Tensor[(1, 3), float32] */) -> Tensor[(1, 3), float32] {\n"
               "  %0 = fn (%p0: Tensor[(1, 3), float32] /* ty=Tensor[(1, 3), float32] */, Primitive=1) "
               "-> Tensor[(1, 3), float32] {\n"
               "    nn.relu(%p0) /* ty=Tensor[(1, 3), float32] */\n"
               "  } /* ty=fn (Tensor[(1, 3), float32]) -> Tensor[(1, 3), float32] */;\n"
               "  %0(%x) /* ty=Tensor[(1, 3), float32] */\n"
               "}\n");
  gp_release(mt);
  gp_release(m);
  gp_release(f);
  gp_release(c);
  gp_release(inner);
  gp_release(at);
  gp_release(r);
  gp_release(x);
  gp_release(p0);
}

/* A node used only inside a closure is bound inside it; bindings of the closure body get their
 * numbers when the body is printed. */
Test(print, nested_closures) {
  GPVar *x = V("x", T2(1, 3)), *p = V("p", T2(1, 3)), *q = V("q", T2(1, 3));
  GPExpr *q1 = call1("nn.relu", (GPExpr *)q), *q2 = call2("add", q1, q1);
  GPFunctionExpr *g = fn(1, &q, q2, NULL);
  GPExpr *pa[1] = {(GPExpr *)p};
  GPExpr *gc = E(gp_call_new((GPExpr *)g, 1, pa, NULL));
  GPExpr *p2 = call2("multiply", gc, gc);
  GPFunctionExpr *h = fn(1, &p, p2, NULL);
  GPExpr *xa[1] = {(GPExpr *)x};
  GPExpr *hc = E(gp_call_new((GPExpr *)h, 1, xa, NULL));
  GPFunctionExpr *f = fn(1, &x, hc, NULL);
  GPModule *m = module1(f);
  expect_print(m, 0,
               "#[version = \"0.0.5\"]\n"
               "def @main(%x: Tensor[(1, 3), float32]) {\n"
               "  %3 = fn (%p: Tensor[(1, 3), float32]) {\n"
               "    %1 = fn (%q: Tensor[(1, 3), float32]) {\n"
               "      %0 = nn.relu(%q);\n"
               "      add(%0, %0)\n"
               "    };\n"
               "    %2 = %1(%p);\n"
               "    multiply(%2, %2)\n"
               "  };\n"
               "  %3(%x)\n"
               "}\n");
  gp_release(m);
  gp_release(f);
  gp_release(hc);
  gp_release(h);
  gp_release(p2);
  gp_release(gc);
  gp_release(g);
  gp_release(q2);
  gp_release(q1);
  gp_release(x);
  gp_release(p);
  gp_release(q);
}

Test(print, let_chain) {
  GPVar *x = V("x", T2(1, 3)), *y = V("y", NULL), *z = V("z", T2(1, 3));
  GPExpr *r = call1("nn.relu", (GPExpr *)x);
  GPExpr *s = call1("sigmoid", (GPExpr *)y), *e = call1("exp", s);
  GPExpr *body = call2("add", (GPExpr *)z, (GPExpr *)z);
  GPExpr *l2 = E(gp_let_new(z, e, body));
  GPExpr *l1 = E(gp_let_new(y, r, l2));
  GPFunctionExpr *f = fn(1, &x, l1, NULL);
  GPModule *m = module1(f);
  expect_print(m, 0,
               "#[version = \"0.0.5\"]\n"
               "def @main(%x: Tensor[(1, 3), float32]) {\n"
               "  let %y = nn.relu(%x);\n"
               "  %0 = sigmoid(%y);\n"
               "  let %z: Tensor[(1, 3), float32] = exp(%0);\n"
               "  add(%z, %z)\n"
               "}\n");
  gp_release(m);
  gp_release(f);
  gp_release(l1);
  gp_release(l2);
  gp_release(body);
  gp_release(e);
  gp_release(s);
  gp_release(r);
  gp_release(x);
  gp_release(y);
  gp_release(z);
}

Test(print, if_else) {
  GPVar *c = V("c", gp_type_scalar(GP_DT_BOOL)), *x = V("x", T2(1, 3));
  GPExpr *r = call1("nn.relu", (GPExpr *)x), *s = call1("sigmoid", (GPExpr *)x);
  GPExpr *i = E(gp_if_new((GPExpr *)c, r, s));
  GPVar *ps[2] = {c, x};
  GPFunctionExpr *f = fn(2, ps, i, NULL);
  GPModule *m = module1(f);
  expect_print(m, 0,
               "#[version = \"0.0.5\"]\n"
               "def @main(%c: bool, %x: Tensor[(1, 3), float32]) {\n"
               "  if (%c) {\n"
               "    nn.relu(%x)\n"
               "  } else {\n"
               "    sigmoid(%x)\n"
               "  }\n"
               "}\n");
  gp_release(m);
  gp_release(f);
  gp_release(i);
  gp_release(r);
  gp_release(s);
  gp_release(c);
  gp_release(x);
}

/* A node used in both branches is bound before the if, in the scope enclosing both. */
Test(print, shared_across_branches) {
  GPVar *c = V("c", gp_type_scalar(GP_DT_BOOL)), *x = V("x", T2(1, 3));
  GPExpr *n = call1("nn.relu", (GPExpr *)x);
  GPExpr *a = call2("add", n, n);
  GPExpr *i = E(gp_if_new((GPExpr *)c, a, n));
  GPVar *ps[2] = {c, x};
  GPFunctionExpr *f = fn(2, ps, i, NULL);
  GPModule *m = module1(f);
  expect_print(m, 0,
               "#[version = \"0.0.5\"]\n"
               "def @main(%c: bool, %x: Tensor[(1, 3), float32]) {\n"
               "  %0 = nn.relu(%x);\n"
               "  if (%c) {\n"
               "    add(%0, %0)\n"
               "  } else {\n"
               "    %0\n"
               "  }\n"
               "}\n");
  gp_release(m);
  gp_release(f);
  gp_release(i);
  gp_release(a);
  gp_release(n);
  gp_release(c);
  gp_release(x);
}

/* A node used by a closure and by its enclosing scope is bound outside the closure. */
Test(print, shared_with_closure) {
  GPVar *x = V("x", T2(1, 3)), *p = V("p", T2(1, 3));
  GPExpr *n = call1("nn.relu", (GPExpr *)x);
  GPExpr *pb = call2("add", (GPExpr *)p, n);
  GPFunctionExpr *g = fn(1, &p, pb, NULL);
  GPExpr *fs[2] = {(GPExpr *)g, n};
  GPExpr *t = E(gp_tuple_new(2, fs));
  GPFunctionExpr *f = fn(1, &x, t, NULL);
  GPModule *m = module1(f);
  expect_print(m, 0,
               "#[version = \"0.0.5\"]\n"
               "def @main(%x: Tensor[(1, 3), float32]) {\n"
               "  %0 = nn.relu(%x);\n"
               "  %1 = fn (%p: Tensor[(1, 3), float32]) {\n"
               "    add(%p, %0)\n"
               "  };\n"
               "  (%1, %0)\n"
               "}\n");
  gp_release(m);
  gp_release(f);
  gp_release(t);
  gp_release(g);
  gp_release(pb);
  gp_release(n);
  gp_release(x);
  gp_release(p);
}

Test(print, scalars) {
  GPExpr *fs[9] = {scalar_f(GP_DT_F32, 1.0),  scalar_i(GP_DT_I64, 0), scalar_i(GP_DT_I32, 3),
                   scalar_i(GP_DT_BOOL, 1),   scalar_f(GP_DT_F64, 1.0), scalar_f(GP_DT_F16, 1.0),
                   scalar_i(GP_DT_I8, 1),     scalar_i(GP_DT_U8, 1),  scalar_f(GP_DT_F32, -0.5)};
  GPExpr *t = E(gp_tuple_new(9, fs));
  GPFunctionExpr *f = fn(0, NULL, t, NULL);
  GPModule *m = module1(f);
  expect_print(m, 0,
               "#[version = \"0.0.5\"]\n"
               "def @main() {\n"
               "  (1f, 0i64, 3, True, 1f64, 1f16, 1i8, 1u8, -0.5f)\n"
               "}\n");
  GPModule *mt = gp_infer_types(m);
  cr_assert(mt, "%s", gp_error_message());
  char *s = gp_print(mt, GP_PRINT_TYPES);
  cr_assert(strstr(s, "(1f /* ty=float32 */, 0i64 /* ty=int64 */, 3 /* ty=int32 */, True /* ty=bool */"),
            "%s", s);
  gp_free(s);
  gp_release(mt);
  gp_release(m);
  gp_release(f);
  gp_release(t);
  for (int i = 0; i < 9; i++) gp_release(fs[i]);
}

Test(print, meta_constants) {
  GPVar *x = V("x", T2(1, 3));
  int64_t sh[2] = {1, 3};
  float v0[3] = {1, 2, 3}, v1[3] = {4, 5, 6};
  GPExpr *c0 = const_f32(2, sh, v0), *c1 = const_f32(2, sh, v1);
  GPExpr *a = call2("add", (GPExpr *)x, c0);
  GPExpr *b = call2("multiply", a, c1);
  GPExpr *d = call2("subtract", b, c0);
  GPFunctionExpr *f = fn(1, &x, d, NULL);
  GPModule *m = module1(f);
  const char *body = "#[version = \"0.0.5\"]\n"
                     "def @main(%x: Tensor[(1, 3), float32]) {\n"
                     "  %0 = add(%x, meta[relay.Constant][0]);\n"
                     "  %1 = multiply(%0, meta[relay.Constant][1]);\n"
                     "  subtract(%1, meta[relay.Constant][0])\n"
                     "}\n";
  expect_print(m, 0, body);
  char want[1024];
  snprintf(want, sizeof want,
           "%s#[metadata]\n"
           "relay.Constant[0] = float32 (1, 3) base64:AACAPwAAAEAAAEBA\n"
           "relay.Constant[1] = float32 (1, 3) base64:AACAQAAAoEAAAMBA\n",
           body);
  expect_print(m, GP_PRINT_METADATA, want);
  GPModule *mt = gp_infer_types(m);
  cr_assert(mt, "%s", gp_error_message());
  char *s = gp_print(mt, GP_PRINT_TYPES);
  cr_assert(strstr(s, "  %0 = add(%x, meta[relay.Constant][0] /* ty=Tensor[(1, 3), float32] */) "
                      "/* ty=Tensor[(1, 3), float32] */;\n"),
            "%s", s);
  cr_assert(strstr(s, "  subtract(%1, meta[relay.Constant][0] /* ty=Tensor[(1, 3), float32] */) "
                      "/* ty=Tensor[(1, 3), float32] */\n"),
            "%s", s);
  gp_free(s);
  gp_release(mt);
  gp_release(m);
  gp_release(f);
  gp_release(d);
  gp_release(b);
  gp_release(a);
  gp_release(c0);
  gp_release(c1);
  gp_release(x);
}

/* Non-compact tensors are written compact; a 1-d shape prints as (n); odd byte counts pad. */
Test(print, metadata_strided_and_padding) {
  int64_t sh[2] = {2, 2};
  GPTensor *t = gp_tensor_alloc(GP_DT_U8, 2, sh, true);
  uint8_t *d = t->dl.data;
  d[0] = 1, d[1] = 2, d[2] = 3, d[3] = 4;
  /* transpose view through strides */
  int64_t *st = gp_malloc(2 * sizeof(int64_t));
  st[0] = 1, st[1] = 2;
  int64_t *old = t->dl.strides;
  t->dl.strides = st;
  GPExpr *c = E(gp_constant_new(t));
  int64_t s1[1] = {5};
  GPTensor *t5 = gp_tensor_alloc(GP_DT_U8, 1, s1, true);
  memcpy(t5->dl.data, "hello", 5);
  GPExpr *c5 = E(gp_constant_new(t5));
  GPExpr *fs[2] = {c, c5};
  GPExpr *tu = E(gp_tuple_new(2, fs));
  char *s = gp_print_expr(tu, GP_PRINT_METADATA);
  cr_assert_str_eq(s,
                   "(meta[relay.Constant][0], meta[relay.Constant][1])\n"
                   "#[metadata]\n"
                   "relay.Constant[0] = uint8 (2, 2) base64:AQMCBA==\n"
                   "relay.Constant[1] = uint8 (5) base64:aGVsbG8=\n");
  gp_free(s);
  gp_release(tu);
  gp_release(c);
  gp_release(c5);
  t->dl.strides = old;
  gp_free(st);
  gp_release(t);
  gp_release(t5);
}

/* A constant without data prints as meta but has no metadata line. */
Test(print, constant_without_data) {
  int64_t sh[2] = {1, 3};
  GPTensor *t = gp_tensor_alloc(GP_DT_F32, 2, sh, false);
  GPExpr *c = E(gp_constant_new(t));
  char *s = gp_print_expr(c, GP_PRINT_METADATA);
  cr_assert_str_eq(s, "meta[relay.Constant][0]");
  gp_free(s);
  gp_release(c);
  gp_release(t);
}

Test(print, unique_names) {
  GPVar *x1 = V("x", T2(1, 3)), *x2 = V("x", T2(1, 3)), *x3 = V("x1", T2(1, 3)), *e = V("0abc", NULL),
        *u = V("_u", NULL);
  GPExpr *a = call2("add", (GPExpr *)x1, (GPExpr *)x2);
  GPExpr *b = call2("add", a, (GPExpr *)x3);
  GPExpr *fs[3] = {b, (GPExpr *)e, (GPExpr *)u};
  GPExpr *t = E(gp_tuple_new(3, fs));
  GPVar *ps[5] = {x1, x2, x3, e, u};
  GPFunctionExpr *f = fn(5, ps, t, NULL);
  GPVar *y = V("x", NULL);
  GPFunctionExpr *g = fn(1, &y, (GPExpr *)y, NULL);
  GPModule *m = gp_module_new(NULL);
  cr_assert_eq(gp_module_add(m, "main", f, false), 0);
  cr_assert_eq(gp_module_add(m, "other", g, false), 0);
  expect_print(m, 0,
               "#[version = \"0.0.5\"]\n"
               "def @main(%x: Tensor[(1, 3), float32], %x1: Tensor[(1, 3), float32], "
               "%x11: Tensor[(1, 3), float32], %v0abc, %v_u) {\n"
               "  %0 = add(%x, %x1);\n"
               "  %1 = add(%0, %x11);\n"
               "  (%1, %v0abc, %v_u)\n"
               "}\n"
               "\n"
               "def @other(%x2) {\n"
               "  %x2\n"
               "}\n");
  gp_release(m);
  gp_release(f);
  gp_release(g);
  gp_release(t);
  gp_release(b);
  gp_release(a);
  gp_release(x1);
  gp_release(x2);
  gp_release(x3);
  gp_release(e);
  gp_release(u);
  gp_release(y);
}

Test(print, expr_free_vars) {
  GPVar *x = V("x", T2(1, 3));
  GPExpr *r = call1("nn.relu", (GPExpr *)x), *a = call2("add", r, r);
  char *s = gp_print_expr(a, 0);
  cr_assert_str_eq(s, "free_var %x: Tensor[(1, 3), float32];\n%0 = nn.relu(%x);\nadd(%0, %0)");
  gp_free(s);
  gp_release(a);
  gp_release(r);
  gp_release(x);
}

Test(print, empty_module) {
  GPModule *m = gp_module_new(NULL);
  expect_print(m, GP_PRINT_TYPES | GP_PRINT_METADATA, "#[version = \"0.0.5\"]\n");
  gp_release(m);
}

/* ---- scale: a million-node chain, no recursion, well under a second */

Test(print, million_chain, .timeout = 60) {
  GPVar *x = V("x", T2(1, 3));
  GPExpr *cur = gp_retain(x);
  const char *ops[2] = {"nn.relu", "negative"};
  for (int i = 0; i < 1000000; i++) {
    GPExpr *n = call1(ops[i & 1], cur);
    gp_release(cur);
    cur = n;
  }
  GPFunctionExpr *f = fn(1, &x, cur, NULL);
  GPModule *m = module1(f);
  gp_release(f);
  gp_release(cur);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  char *s = gp_print(m, 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  cr_assert(s);
  cr_assert(strstr(s, "  %0 = nn.relu(%x);\n  %1 = negative(%0);\n"));
  cr_assert(strstr(s, "  %999998 = nn.relu(%999997);\n  negative(%999998)\n}\n"));
  gp_free(s);
  cr_log_info("printed 1M nodes in %.3f s", secs);
#if defined(__SANITIZE_ADDRESS__)
  GP_UNUSED(secs); /* sanitizers make timing meaningless */
#else
  cr_expect(secs < 3.0, "printing 1M nodes took %.3f s", secs); /* ~0.5 s on an idle machine */
#endif
  gp_release(m);
  gp_release(x);
}

Test(print, deep_let_and_if_nesting, .timeout = 60) {
  /* 200k nested lets (flat text) and 2k nested ifs (indented text) */
  GPVar *x = V("x", T2(1, 3));
  GPExpr *body = gp_retain(x);
  for (int i = 0; i < 200000; i++) {
    GPVar *v = V("v", NULL);
    GPExpr *val = call1("nn.relu", (GPExpr *)x);
    GPExpr *l = E(gp_let_new(v, val, body));
    gp_release(body);
    gp_release(val);
    gp_release(v);
    body = l;
  }
  char *s = gp_print_expr(body, 0);
  cr_assert(s);
  cr_assert(!strncmp(s, "free_var %x: Tensor[(1, 3), float32];\nlet %v = nn.relu(%x);\nlet %v1 = ", 70), "%.80s", s);
  gp_free(s);
  gp_release(body);
  GPVar *c = V("c", gp_type_scalar(GP_DT_BOOL));
  GPExpr *e = gp_retain(x);
  for (int i = 0; i < 2000; i++) {
    GPExpr *r = call1("nn.relu", e);
    GPExpr *n = E(gp_if_new((GPExpr *)c, r, e));
    gp_release(r);
    gp_release(e);
    e = n;
  }
  s = gp_print_expr(e, 0);
  cr_assert(s);
  gp_free(s);
  gp_release(e);
  gp_release(c);
  gp_release(x);
}

/* ---- round trip through the parser: print -> parse -> print is a fixed point, and the
 * parsed module is structurally equal (metadata carries the constant values) */

static void round_trip(GPModule *m, int32_t flags) {
  char *s1 = gp_print(m, flags | GP_PRINT_METADATA);
  GPModule *m2 = gp_parse(s1, strlen(s1), "rt.relay");
  cr_assert(m2, "parse failed: %s\n%s", gp_error_message(), s1);
  if (flags & GP_PRINT_TYPES) { /* comments are not read back: type the parsed module again */
    GPModule *m2t = gp_infer_types(m2);
    cr_assert(m2t, "%s", gp_error_message());
    gp_release(m2);
    m2 = m2t;
  }
  char *s2 = gp_print(m2, flags | GP_PRINT_METADATA);
  cr_assert_str_eq(s2, s1, "\n--- reprinted:\n%s\n--- printed:\n%s", s2, s1);
  char *d = gp_module_diff(m, m2);
  cr_assert_null(d, "round trip differs: %s\n%s", d, s1);
  gp_free(s1);
  gp_free(s2);
  gp_release(m2);
}

Test(print, round_trip) {
  GPModule *m = conv_block();
  round_trip(m, 0);
  GPModule *mt = gp_infer_types(m);
  cr_assert(mt, "%s", gp_error_message());
  round_trip(mt, GP_PRINT_TYPES);
  gp_release(mt);
  gp_release(m);

  /* closure, let, if, tuples, scalars, meta constants, shadowed names */
  GPVar *x = V("x", T2(1, 3)), *x2 = V("x", T2(1, 3)), *c = V("c", gp_type_scalar(GP_DT_BOOL));
  GPVar *p0 = V("p0", T2(1, 3)), *y = V("y", NULL);
  GPExpr *r = call1("nn.relu", (GPExpr *)p0);
  const char *k[1] = {"Primitive"};
  GPAttrValue v[1] = {gp_attr_int(1)};
  GPAttrs *at = gp_attrs_new(1, k, v);
  GPFunctionExpr *inner = fn(1, &p0, r, at);
  GPExpr *arg[1] = {(GPExpr *)x};
  GPExpr *call_in = E(gp_call_new((GPExpr *)inner, 1, arg, NULL));
  int64_t sh[2] = {1, 3};
  float vals[3] = {0.25f, -1.5f, 3.0f};
  GPExpr *cst = const_f32(2, sh, vals);
  GPExpr *half = scalar_f(GP_DT_F32, 0.5);
  GPExpr *a = call2("add", (GPExpr *)y, cst);
  GPExpr *b = call2("multiply", a, half);
  GPExpr *s = call2("subtract", b, (GPExpr *)x2);
  GPExpr *fs[2] = {s, a};
  GPExpr *tu = E(gp_tuple_new(2, fs));
  GPExpr *g0 = E(gp_tuple_get_item_new(tu, 0));
  GPExpr *ng = call1("negative", g0);
  GPExpr *ife = E(gp_if_new((GPExpr *)c, g0, ng));
  GPExpr *let = E(gp_let_new(y, call_in, ife));
  GPVar *ps[3] = {x, x2, c};
  GPFunctionExpr *f = fn(3, ps, let, NULL);
  GPModule *m3 = module1(f);
  round_trip(m3, 0);
  GPModule *m3t = gp_infer_types(m3);
  cr_assert(m3t, "%s", gp_error_message());
  round_trip(m3t, GP_PRINT_TYPES);
  gp_release(m3t);
  gp_release(m3);
  gp_release(f);
  gp_release(let);
  gp_release(ife);
  gp_release(ng);
  gp_release(g0);
  gp_release(tu);
  gp_release(s);
  gp_release(b);
  gp_release(a);
  gp_release(half);
  gp_release(cst);
  gp_release(call_in);
  gp_release(inner);
  gp_release(at);
  gp_release(r);
  gp_release(x);
  gp_release(x2);
  gp_release(c);
  gp_release(p0);
  gp_release(y);
}
