/* test_legalize.c -- Legalize: hooks registered at run time as packed functions and as typed C
 * functions through the libffi bridge (GPHostAPI.op_set_attr, GP_OP_ATTR_LEGALIZE), golden
 * before/after files (a conv2d rewritten into other calls, nested hooks that see their
 * arguments already legalized, Primitive functions), None keeps a call, every result that is
 * not a call is an error naming the op and the node, hook failures, removal, and release of
 * the hooks (deleters counted; LeakSanitizer in the san build). */
#include "test_helpers.h"

#include <stdio.h>

#define DATA "tests/data/passes/"
#define LEG "Legalize"

static const GPHostAPI *H_;

static void setup(void) {
  th_load_std();
  H_ = graphpass_host_api();
}
static void teardown(void) {
  gp_plugins_unload_all();
  gp_registry_shutdown(); /* drops whatever hook a failing test left set */
}

TestSuite(legalize, .init = setup, .fini = teardown);

/* ---- helpers */

static const GPOp *op(const char *name) {
  const GPOp *o = H_->op_get(name);
  cr_assert(o, "%s", H_->error_message());
  return o;
}

/* Set (f) or remove (NULL) the legalize hook of `name` through the host table. */
static void set_hook(const char *name, GPPackedFunc *f) {
  GPAny v = {0};
  if (f) {
    v.type_index = GP_TI_FUNCTION;
    v.v_obj = &f->obj;
  }
  cr_assert_eq(H_->op_set_attr(op(name), GP_OP_ATTR_LEGALIZE, &v, 10), 0, "%s", H_->error_message());
}

/* Register a packed hook; the op attribute holds the only reference afterwards. */
static void set_packed_hook(const char *name, GPPackedCFunc fn, void *self, void (*deleter)(void *)) {
  GPPackedFunc *f = H_->func_new(self, fn, deleter);
  cr_assert(f);
  set_hook(name, f);
  gp_release(f);
}

static GPExpr *call_of(const char *name, int32_t n, GPExpr *const *args, GPAttrs *attrs) {
  GPCall *c = H_->call_new((GPExpr *)op(name), n, args, attrs);
  cr_assert(c, "%s", H_->error_message());
  return &c->base;
}

static GPAttrs *str_attrs(const char *opname, int32_t n, const char *const *keys, const char *const *vals) {
  GPAttrValue v[4];
  for (int32_t i = 0; i < n; i++) v[i] = (GPAttrValue){.kind = GP_ATTR_STR, .s = vals[i]};
  GPAttrs *a = H_->op_attrs_new(op(opname), n, keys, v);
  cr_assert(a, "%s", H_->error_message());
  return a;
}

static GPExpr *layout_transform(GPExpr *x, const char *src, const char *dst) {
  const char *keys[2] = {"src_layout", "dst_layout"}, *vals[2] = {src, dst};
  GPAttrs *a = str_attrs("layout_transform", 2, keys, vals);
  GPExpr *c = call_of("layout_transform", 1, &x, a);
  gp_release(a);
  return c;
}

static GPAny any_obj(void *o) {
  GPAny a = {0};
  if (o) {
    a.type_index = ((GPObject *)o)->type_index;
    a.v_obj = o;
  }
  return a;
}

static int64_t dim(const GPType *t, int i) { return t->tensor.shape[i]; }

/* Run Legalize on a file; NULL with the error pending on failure. */
static GPModule *run_file(const char *path) {
  GPModule *in = th_parse_file(path);
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(in, LEG, ctx);
  gp_ctx_free(ctx);
  gp_release(in);
  return out;
}

/* ---- a packed hook: nn.conv2d NCHW/OIHW -> layout_transforms around an NHWC/HWIO conv2d */

static int conv_types_ok;

static int conv2d_to_nhwc(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  cr_assert_eq(nargs, 2);
  cr_assert_eq(args[0].type_index, GP_TI_CALL);
  cr_assert_eq(args[1].type_index, GP_TI_TYPE);
  GPCall *c = (GPCall *)args[0].v_obj;
  const GPType *ts = (const GPType *)args[1].v_obj;
  /* [data, weight, result] */
  conv_types_ok = ts->kind == GP_TYPE_TUPLE && ts->n == 3 && dim(ts->tuple.fields[0], 1) == 3 &&
                  dim(ts->tuple.fields[1], 0) == 4 && dim(ts->tuple.fields[2], 1) == 4 &&
                  dim(ts->tuple.fields[2], 3) == 5;
  const GPAttrValue *dl = H_->attrs_get(c->attrs, "data_layout");
  if (!dl || strcmp(dl->s, "NCHW") != 0) return 0; /* None: keep */
  GPExpr *x = layout_transform(c->args[0], "NCHW", "NHWC");
  GPExpr *w = layout_transform(c->args[1], "OIHW", "HWIO");
  /* the same attrs with the two layouts replaced */
  const GPAttrs *a = c->attrs;
  GPAttrValue *vals = gp_malloc((size_t)a->n * sizeof *vals);
  for (int32_t i = 0; i < a->n; i++) {
    vals[i] = a->values[i];
    if (!strcmp(a->keys[i], "data_layout")) vals[i].s = "NHWC";
    if (!strcmp(a->keys[i], "kernel_layout")) vals[i].s = "HWIO";
  }
  GPAttrs *na = H_->op_attrs_new(op("nn.conv2d"), a->n, a->keys, vals);
  gp_free(vals);
  cr_assert(na, "%s", H_->error_message());
  GPExpr *cargs[2] = {x, w};
  GPExpr *conv = call_of("nn.conv2d", 2, cargs, na);
  GPExpr *out = layout_transform(conv, "NHWC", "NCHW");
  gp_release(na);
  gp_release(x);
  gp_release(w);
  gp_release(conv);
  *result = any_obj(out); /* owned by the result */
  return 0;
}

Test(legalize, packed_hook_rewrites_conv2d) {
  set_packed_hook("nn.conv2d", conv2d_to_nhwc, NULL, NULL);
  th_golden(DATA "legalize_conv2d.before.relay", DATA "legalize_conv2d.after.relay", LEG, NULL);
  cr_assert(conv_types_ok, "the hook must see [data type, weight type, result type]");
  set_hook("nn.conv2d", NULL);
}

Test(legalize, replacement_takes_the_original_location) {
  set_packed_hook("nn.conv2d", conv2d_to_nhwc, NULL, NULL);
  GPModule *out = run_file(DATA "legalize_conv2d.before.relay");
  cr_assert(out, "%s", gp_error_message());
  const GPCall *relu = (const GPCall *)out->funcs[0]->body;
  const GPCall *lt = (const GPCall *)relu->args[0];
  cr_assert_str_eq(((const GPOp *)lt->op)->name, "layout_transform");
  cr_assert_eq(lt->base.line, 3, "the replacement of the conv2d on line 3 is on line %u", lt->base.line);
  cr_assert_eq(lt->base.col, relu->args[0]->col);
  cr_assert_not_null(lt->base.checked_type, "the output is re-typed");
  cr_assert_eq(gp_verify(out), 0, "%s", gp_error_message());
  gp_release(out);
  set_hook("nn.conv2d", NULL);
}

/* ---- a typed C hook through the libffi bridge: float subtract(a, b) -> add(a, negative(b)) */

static int c_hook_calls;

static GPObject *c_legalize_subtract(GPObject *call, GPObject *types) {
  c_hook_calls++;
  const GPType *ts = (const GPType *)types;
  const GPType *out = ts->tuple.fields[ts->n - 1];
  if (out->kind != GP_TYPE_TENSOR || out->tensor.dtype.code != kDLFloat) return NULL; /* None */
  GPCall *c = (GPCall *)call;
  GPExpr *neg = call_of("negative", 1, &c->args[1], NULL);
  GPExpr *args[2] = {c->args[0], neg};
  GPExpr *add = call_of("add", 2, args, NULL);
  gp_release(neg);
  return &add->obj; /* a new reference */
}

static void set_c_subtract_hook(void) {
  GPPackedFunc *f = H_->ffi_wrap((void *)(uintptr_t)c_legalize_subtract, "o(o,o)");
  cr_assert(f, "%s", H_->error_message());
  set_hook("subtract", f);
  gp_release(f);
}

Test(legalize, typed_c_hook_through_ffi_wrap_and_primitive_functions) {
  set_c_subtract_hook();
  /* @main's subtract and the one inside the Primitive function are legalized; the int32
   * subtract of @isub is kept (the hook returns NULL: None) */
  th_golden(DATA "legalize_subtract.before.relay", DATA "legalize_subtract.after.relay", LEG, NULL);
  cr_assert_eq(c_hook_calls, 3, "hook calls: %d", c_hook_calls);
  set_hook("subtract", NULL);
}

/* ---- nested: relu's hook sees its argument already legalized */

static char relu_arg_ops[2][32];
static int relu_calls;
static const GPType *relu_arg_types[2];

static int relu_to_maximum(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self, (void)nargs;
  GPCall *c = (GPCall *)args[0].v_obj;
  const GPType *ts = (const GPType *)args[1].v_obj;
  if (relu_calls < 2) {
    GPExpr *a = c->args[0];
    snprintf(relu_arg_ops[relu_calls], sizeof relu_arg_ops[0], "%s",
             gp_kind(a) == GP_TI_CALL ? ((const GPOp *)((GPCall *)a)->op)->name : "not a call");
    relu_arg_types[relu_calls] = ts->tuple.fields[0];
  }
  relu_calls++;
  GPTensor *t = H_->tensor_alloc((DLDataType){kDLFloat, 32, 1}, 0, NULL, 1);
  cr_assert(t);
  *(float *)t->dl.data = 0.0f;
  GPConstant *zero = H_->constant_new(t);
  gp_release(t);
  GPExpr *margs[2] = {c->args[0], &zero->base};
  GPExpr *m = call_of("maximum", 2, margs, NULL);
  gp_release(zero);
  *result = any_obj(m);
  return 0;
}

Test(legalize, nested_hooks_see_legalized_arguments) {
  set_c_subtract_hook();
  set_packed_hook("nn.relu", relu_to_maximum, NULL, NULL);
  th_golden(DATA "legalize_nested.before.relay", DATA "legalize_nested.after.relay", LEG, NULL);
  cr_assert_eq(relu_calls, 2);
  /* one relu's argument was the subtract, which its own hook had already turned into an add;
   * the types are the original argument's (the subtract's), known before legalization */
  int k = strcmp(relu_arg_ops[0], "add") == 0 ? 0 : 1;
  cr_assert_str_eq(relu_arg_ops[k], "add", "%s / %s", relu_arg_ops[0], relu_arg_ops[1]);
  cr_assert_str_eq(relu_arg_ops[1 - k], "not a call");
  cr_assert_not_null(relu_arg_types[k]);
  cr_assert_eq(relu_arg_types[k]->n, 2);
  cr_assert_eq(dim(relu_arg_types[k], 0), 2);
  cr_assert_eq(dim(relu_arg_types[k], 1), 3);
  set_hook("nn.relu", NULL);
  set_hook("subtract", NULL);
}

/* ---- None keeps the call */

static int none_calls;
static int returns_none(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self, (void)args, (void)nargs, (void)result;
  none_calls++;
  return 0;
}

Test(legalize, none_keeps_every_call) {
  set_packed_hook("subtract", returns_none, NULL, NULL);
  set_packed_hook("nn.relu", returns_none, NULL, NULL);
  th_golden(DATA "legalize_subtract.before.relay", DATA "legalize_subtract.before.relay", LEG, NULL);
  /* @isub's subtract, @main's subtract, the Primitive function's subtract, the relu */
  cr_assert_eq(none_calls, 4, "hook calls: %d", none_calls);
  set_hook("subtract", NULL);
  set_hook("nn.relu", NULL);
}

Test(legalize, no_hooks_returns_the_same_functions) {
  GPModule *in = th_parse_file(DATA "legalize_conv2d.before.relay");
  GPModule *typed = gp_infer_types(in);
  cr_assert(typed, "%s", gp_error_message());
  GPPassContext *ctx = gp_ctx_new();
  GPModule *out = gp_run_pipeline(typed, LEG, ctx);
  cr_assert(out, "%s", gp_error_message());
  cr_assert_eq(out->funcs[0], typed->funcs[0], "nothing to legalize: the function is not rebuilt");
  gp_release(out);
  gp_ctx_free(ctx);
  gp_release(typed);
  gp_release(in);
}

/* ---- results that are not calls, failures */

static int returns_kind; /* 0 tuple, 1 constant, 2 int, 3 var argument, 4 fail */
static int bad_hook(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self, (void)nargs;
  GPCall *c = (GPCall *)args[0].v_obj;
  switch (returns_kind) {
  case 0: *result = any_obj(H_->tuple_new(c->nargs, c->args)); break;
  case 1: {
    GPTensor *t = H_->tensor_alloc((DLDataType){kDLFloat, 32, 1}, 0, NULL, 1);
    *result = any_obj(H_->constant_new(t));
    gp_release(t);
    break;
  }
  case 2: *result = gp_any_int(7); break;
  case 3: *result = any_obj(gp_retain(c->args[0])); break; /* a var: still not a call */
  default: H_->error_set(GP_ERR_VALUE, "the hook gave up"); return -1;
  }
  return 0;
}

static void expect_bad_on(int kind, const char *opname, const char *where, const char *what) {
  returns_kind = kind;
  set_packed_hook(opname, bad_hook, NULL, NULL);
  GPModule *out = run_file(DATA "legalize_conv2d.before.relay");
  cr_assert_null(out, "a hook returning %s must fail the pass", what);
  const char *m = gp_error_message();
  cr_assert_eq(gp_error_kind(), GP_ERR_PASS, "%s", m);
  cr_assert(strstr(m, "pass " LEG), "names the pass: %s", m);
  cr_assert(strstr(m, opname), "names the op: %s", m);
  cr_assert(strstr(m, where), "names the node (%s): %s", where, m);
  cr_assert(strstr(m, what), "says what came back (%s): %s", what, m);
  gp_error_clear();
  set_hook(opname, NULL);
}

static void expect_bad(int kind, const char *what) {
  expect_bad_on(kind, "nn.relu", "legalize_conv2d.before.relay:4:3", what);
}

Test(legalize, hook_returning_a_tuple_is_an_error) { expect_bad(0, "returned a tuple; a hook must return a call"); }
Test(legalize, hook_returning_a_constant_is_an_error) { expect_bad(1, "returned a constant"); }
Test(legalize, hook_returning_an_int_is_an_error) { expect_bad(2, "returned an int (7)"); }
Test(legalize, hook_failure_is_prefixed) {
  expect_bad(4, "the legalize hook of nn.relu failed at tests/data/passes/legalize_conv2d.before.relay:4:3: the hook gave up");
}
Test(legalize, hook_returning_its_argument_var_is_an_error) {
  /* the conv2d's first argument is %x: an expression, but not a call */
  expect_bad_on(3, "nn.conv2d", "legalize_conv2d.before.relay:3:8", "returned a var");
}

Test(legalize, attribute_that_is_not_a_function_is_an_error) {
  GPAny v = gp_any_int(3);
  cr_assert_eq(H_->op_set_attr(op("nn.relu"), GP_OP_ATTR_LEGALIZE, &v, 10), 0);
  GPModule *out = run_file(DATA "legalize_conv2d.before.relay");
  cr_assert_null(out);
  const char *m = gp_error_message();
  cr_assert(strstr(m, "pass " LEG) && strstr(m, "op nn.relu at") && strstr(m, "an int (3), not a packed function"),
            "%s", m);
  gp_error_clear();
  GPAny none = {0};
  cr_assert_eq(H_->op_set_attr(op("nn.relu"), GP_OP_ATTR_LEGALIZE, &none, 10), 0);
}

/* ---- removal and release */

typedef struct Counted {
  int *deleted;
} Counted;

static void counted_delete(void *self) {
  Counted *c = self;
  (*c->deleted)++;
  gp_free(c);
}

static GPPackedFunc *counted_hook(GPPackedCFunc fn, int *deleted) {
  Counted *c = gp_malloc(sizeof *c);
  c->deleted = deleted;
  GPPackedFunc *f = H_->func_new(c, fn, counted_delete);
  cr_assert(f);
  return f;
}

Test(legalize, removing_the_hook_restores_the_call_and_releases_it) {
  int deleted = 0;
  GPPackedFunc *f = counted_hook(conv2d_to_nhwc, &deleted);
  set_hook("nn.conv2d", f);
  gp_release(f); /* the op attribute holds the only reference now */
  GPModule *out = run_file(DATA "legalize_conv2d.before.relay");
  cr_assert(out, "%s", gp_error_message());
  const GPCall *relu = (const GPCall *)out->funcs[0]->body;
  cr_assert_str_eq(((const GPOp *)((const GPCall *)relu->args[0])->op)->name, "layout_transform");
  gp_release(out);
  cr_assert_eq(deleted, 0, "still set");
  set_hook("nn.conv2d", NULL);
  cr_assert_eq(deleted, 1, "removing the attribute releases the hook (the pass kept no reference)");
  /* without the hook the conv2d stays */
  th_golden(DATA "legalize_conv2d.before.relay", DATA "legalize_conv2d.before.relay", LEG, NULL);
}

Test(legalize, replaced_and_remaining_hooks_are_released) {
  int d1 = 0, d2 = 0, d3 = 0;
  GPPackedFunc *f1 = counted_hook(returns_none, &d1), *f2 = counted_hook(returns_none, &d2);
  set_hook("nn.relu", f1);
  gp_release(f1);
  GPAny v = any_obj(f2);
  /* a lower level cannot replace it; a higher one does and releases the old hook */
  cr_assert_eq(H_->op_set_attr(op("nn.relu"), GP_OP_ATTR_LEGALIZE, &v, 5), -1);
  H_->error_clear();
  cr_assert_eq(d1, 0);
  cr_assert_eq(H_->op_set_attr(op("nn.relu"), GP_OP_ATTR_LEGALIZE, &v, 20), 0, "%s", H_->error_message());
  gp_release(f2);
  cr_assert_eq(d1, 1);
  GPPackedFunc *f3 = counted_hook(returns_none, &d3);
  v = any_obj(f3);
  cr_assert_eq(H_->op_set_attr(op("subtract"), GP_OP_ATTR_LEGALIZE, &v, 10), 0);
  gp_release(f3);
  GPModule *out = run_file(DATA "legalize_subtract.before.relay");
  cr_assert(out, "%s", gp_error_message());
  gp_release(out);
  cr_assert_eq(d2 + d3, 0);
  /* what is still set goes at registry shutdown */
  gp_registry_shutdown();
  cr_assert_eq(d2, 1);
  cr_assert_eq(d3, 1);
}
