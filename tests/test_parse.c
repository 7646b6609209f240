/* test_parse.c -- the Relay text parser: golden inputs as TVM prints them (tests/data/parse),
 * structure and locations of what comes out, error messages with exact file:line:col, deep
 * and long inputs (no recursion), malformed input (truncation, byte flips), and the
 * print -> parse -> print fixed point. */
#include "test_helpers.h"

#include <math.h>
#include <time.h>

#define DATA "tests/data/parse/"

static GPModule *parse_golden(const char *name) {
  GPBuf p = {0};
  gp_buf_printf(&p, DATA "%s", name);
  GPModule *m = th_parse_file(p.data);
  cr_assert_str_eq(m->source_name, p.data);
  gp_buf_free(&p);
  return m;
}

static GPModule *parse_str(const char *text) { return gp_parse(text, strlen(text), "t.relay"); }

/* Parsing `text` fails with GP_ERR_PARSE and a message starting with `want`. */
static void expect_error(const char *text, const char *want) {
  GPModule *m = parse_str(text);
  if (m) {
    char *s = gp_print(m, 0);
    cr_assert_fail("parsed, expected error \"%s\":\n%s", want, s);
  }
  cr_assert_eq(gp_error_kind(), GP_ERR_PARSE, "kind %d: %s", gp_error_kind(), gp_error_message());
  cr_assert(strncmp(gp_error_message(), want, strlen(want)) == 0, "message\n  \"%s\"\nexpected to start with\n  \"%s\"",
            gp_error_message(), want);
  gp_error_clear();
}

static GPFunctionExpr *fn_of(GPModule *m, const char *name) {
  GPFunctionExpr *f = gp_module_lookup(m, name);
  cr_assert(f, "no @%s", name);
  return f;
}

static GPCall *as_call(GPExpr *e, const char *op) {
  cr_assert_eq(gp_kind(e), GP_TI_CALL, "expected a call of %s, got %s", op, gp_expr_kind_name(e));
  GPCall *c = GP_AS(GPCall, e);
  if (op) {
    cr_assert_eq(gp_kind(c->op), GP_TI_OP, "callee of %s is a %s", op, gp_expr_kind_name(c->op));
    cr_assert_str_eq(GP_AS(GPOp, c->op)->name, op);
  }
  return c;
}

static void expect_loc(const void *e, uint32_t line, uint32_t col) {
  const GPExpr *x = e;
  cr_assert(x->line == line && x->col == col, "%s at %u:%u, expected %u:%u", gp_expr_kind_name(x), x->line,
            x->col, line, col);
}

static void expect_ints(const GPAttrs *a, const char *key, int n, const int64_t *v) {
  const GPAttrValue *x = gp_attrs_get(a, key);
  cr_assert(x, "no attribute %s", key);
  cr_assert_eq(x->kind, GP_ATTR_INTS, "%s kind %d", key, x->kind);
  cr_assert_eq(x->n, n, "%s has %d values", key, x->n);
  for (int i = 0; i < n; i++) cr_assert_eq(x->ints[i], v[i], "%s[%d]", key, i);
}

static void expect_tensor_type(const GPTensor *t, DLDataType dt, int32_t ndim, const int64_t *shape) {
  cr_assert(gp_dtype_eq(t->dl.dtype, dt), "dtype code %d bits %d", t->dl.dtype.code, t->dl.dtype.bits);
  cr_assert_eq(t->dl.ndim, ndim);
  for (int32_t i = 0; i < ndim; i++) cr_assert_eq(t->dl.shape[i], shape[i], "dim %d", i);
}

/* ------------------------------------------------------------------------------------------ */
/* Golden inputs                                                                                */

Test(parse, conv_block_with_metadata) {
  GPModule *m = parse_golden("conv_block.relay");
  cr_assert_eq(m->num_functions, 1);
  GPFunctionExpr *f = fn_of(m, "main");
  expect_loc(f, 2, 1);
  cr_assert_eq(f->nparams, 1);
  cr_assert_str_eq(f->params[0]->name, "data");
  expect_loc(f->params[0], 2, 11);
  int64_t dshape[] = {1, 3, 32, 32};
  cr_assert_eq(f->params[0]->type_annotation, gp_type_tensor(GP_DT_F32, 4, dshape));
  int64_t oshape[] = {1, 16, 32, 32};
  cr_assert_eq(f->ret_type, gp_type_tensor(GP_DT_F32, 4, oshape));

  GPCall *relu = as_call(f->body, "nn.relu");
  expect_loc(relu, 7, 3);
  cr_assert_eq(gp_kind(relu->args[0]), GP_TI_TUPLE_GET_ITEM);
  GPTupleGetItem *gi = GP_AS(GPTupleGetItem, relu->args[0]);
  cr_assert_eq(gi->index, 0);
  expect_loc(gi, 6, 8);
  GPCall *bn = as_call(gi->tuple, "nn.batch_norm");
  expect_loc(bn, 5, 8);
  cr_assert_eq(bn->nargs, 5);
  cr_assert_eq(gp_attrs_float(bn->attrs, "epsilon", 0), 1e-05);
  cr_assert_eq(gp_attrs_int(bn->attrs, "axis", 0), 1); /* default filled in */
  /* meta[relay.Constant][1] is one object wherever it is referenced */
  GPCall *bias = as_call(bn->args[0], "nn.bias_add");
  cr_assert_eq(bias->args[1], bn->args[2]);
  cr_assert_eq(bias->args[1], bn->args[3]);
  cr_assert_eq(bn->args[1], bn->args[4]);
  cr_assert_neq(bn->args[1], bn->args[2]);
  expect_loc(bias->args[1], 4, 24); /* first reference */
  GPCall *conv = as_call(bias->args[0], "nn.conv2d");
  expect_loc(conv, 3, 8);
  cr_assert_eq(conv->args[0], &f->params[0]->base);
  cr_assert_eq(gp_attrs_int(conv->attrs, "channels", 0), 16);
  expect_ints(conv->attrs, "kernel_size", 2, (int64_t[]){1, 1});
  expect_ints(conv->attrs, "padding", 4, (int64_t[]){0, 0, 0, 0});
  expect_ints(conv->attrs, "strides", 2, (int64_t[]){1, 1}); /* default */
  cr_assert_str_eq(gp_attrs_get(conv->attrs, "data_layout")->s, "NCHW");
  GPConstant *w = GP_AS(GPConstant, conv->args[1]);
  cr_assert_eq(gp_kind(w), GP_TI_CONSTANT);
  expect_tensor_type(w->data, GP_DT_F32, 4, (int64_t[]){16, 3, 1, 1});
  cr_assert_not_null(w->data->dl.data);
  for (int i = 0; i < 48; i++) cr_assert_eq(gp_tensor_get_f64(w->data, i), 0.5 * i);
  GPConstant *b = GP_AS(GPConstant, bias->args[1]);
  cr_assert_float_eq(gp_tensor_get_f64(b->data, 3), 0.3, 1e-6);
  gp_release(m);
}

Test(parse, two_functions_forward_reference_and_unused) {
  GPModule *m = parse_golden("two_funcs.relay");
  cr_assert_eq(m->num_functions, 3);
  cr_assert_str_eq(m->gvars[0]->name, "main");
  cr_assert_str_eq(m->gvars[1]->name, "add_func");
  cr_assert_str_eq(m->gvars[2]->name, "helper");
  GPFunctionExpr *f = fn_of(m, "main");
  GPCall *mul = as_call(f->body, "multiply");
  GPConstant *two = GP_AS(GPConstant, mul->args[1]);
  cr_assert_eq(gp_kind(two), GP_TI_CONSTANT);
  cr_assert(gp_dtype_eq(two->data->dl.dtype, GP_DT_F32));
  cr_assert_eq(two->data->dl.ndim, 0);
  cr_assert_eq(gp_tensor_get_f64(two->data, 0), 2.0);
  expect_loc(two, 6, 16);
  GPCall *sm = as_call(mul->args[0], "nn.softmax");
  cr_assert_eq(gp_attrs_int(sm->attrs, "axis", 0), -1);
  GPCall *h = as_call(sm->args[0], NULL);
  cr_assert_eq(gp_kind(h->op), GP_TI_GLOBAL_VAR);
  cr_assert_str_eq(GP_AS(GPGlobalVar, h->op)->name, "helper");
  cr_assert_eq(h->op, &m->gvars[2]->base, "call sites share the module's global var");
  cr_assert_null(h->attrs);
  GPCall *sub = as_call(fn_of(m, "helper")->body, "subtract");
  expect_loc(sub, 14, 3);
  gp_release(m);
}

Test(parse, primitive_closures) {
  GPModule *m = parse_golden("closures.relay");
  GPFunctionExpr *f = fn_of(m, "main");
  GPCall *outer = as_call(f->body, NULL);
  expect_loc(outer, 12, 3);
  cr_assert_eq(gp_kind(outer->op), GP_TI_FUNCTION_EXPR);
  GPFunctionExpr *pool = GP_AS(GPFunctionExpr, outer->op);
  expect_loc(pool, 9, 8);
  cr_assert_eq(pool->nparams, 1);
  cr_assert_str_eq(pool->params[0]->name, "p01");
  cr_assert_eq(pool->attrs->n, 1);
  cr_assert_str_eq(pool->attrs->keys[0], "Primitive");
  cr_assert_eq(pool->attrs->values[0].kind, GP_ATTR_INT);
  cr_assert_eq(pool->attrs->values[0].i, 1);
  GPCall *mp = as_call(pool->body, "nn.max_pool2d");
  cr_assert_eq(mp->args[0], &pool->params[0]->base);
  expect_ints(mp->attrs, "pool_size", 2, (int64_t[]){3, 3});
  GPCall *inner = as_call(outer->args[0], NULL);
  GPFunctionExpr *cbr = GP_AS(GPFunctionExpr, inner->op);
  cr_assert_eq(gp_kind(cbr), GP_TI_FUNCTION_EXPR);
  cr_assert_eq(cbr->nparams, 3);
  cr_assert_eq(cbr->attrs->n, 2);
  cr_assert_str_eq(gp_attrs_get(cbr->attrs, "hash")->s, "a1b2c3d4e5f60718");
  cr_assert_eq(gp_attrs_int(cbr->attrs, "Primitive", 0), 1);
  cr_assert_eq(inner->nargs, 3);
  for (int i = 0; i < 3; i++) cr_assert_eq(inner->args[i], &f->params[i]->base);
  GPCall *relu = as_call(cbr->body, "nn.relu");
  expect_loc(relu, 6, 5);
  GPCall *conv = as_call(as_call(relu->args[0], "nn.bias_add")->args[0], "nn.conv2d");
  cr_assert_eq(conv->args[0], &cbr->params[0]->base, "inner %%p0 is the closure's param");
  gp_release(m);
}

Test(parse, let_if_tuples_get_items) {
  GPModule *m = parse_golden("let_if.relay");
  GPFunctionExpr *f = fn_of(m, "main");
  cr_assert_eq(f->ret_type->kind, GP_TYPE_TUPLE);
  cr_assert_eq(f->params[0]->type_annotation, gp_type_scalar(GP_DT_BOOL));
  cr_assert_eq(gp_kind(f->body), GP_TI_LET);
  GPLet *lt = GP_AS(GPLet, f->body);
  expect_loc(lt, 3, 3);
  expect_loc(lt->var, 3, 7);
  cr_assert_str_eq(lt->var->name, "t");
  cr_assert_eq(lt->var->type_annotation->kind, GP_TYPE_TUPLE);
  cr_assert_eq(lt->var->type_annotation->n, 2);
  GPTuple *xy = GP_AS(GPTuple, lt->value);
  cr_assert_eq(gp_kind(xy), GP_TI_TUPLE);
  expect_loc(xy, 3, 64);
  cr_assert_eq(xy->n, 2);
  cr_assert_eq(gp_kind(lt->body), GP_TI_LET);
  GPLet *ls = GP_AS(GPLet, lt->body);
  cr_assert_str_eq(ls->var->name, "s");
  GPTuple *res = GP_AS(GPTuple, ls->body);
  cr_assert_eq(gp_kind(res), GP_TI_TUPLE);
  cr_assert_eq(res->n, 2);
  GPTupleGetItem *g1 = GP_AS(GPTupleGetItem, res->fields[0]);
  cr_assert_eq(gp_kind(g1), GP_TI_TUPLE_GET_ITEM);
  cr_assert_eq(g1->index, 1);
  cr_assert_eq(g1->tuple, &ls->var->base);
  GPTupleGetItem *g0 = GP_AS(GPTupleGetItem, res->fields[1]);
  cr_assert_eq(g0->index, 0);
  cr_assert_eq(g0->tuple, &ls->var->base);
  expect_loc(g0, 14, 10); /* (%s).0: at the '(' */
  GPTuple *sv = GP_AS(GPTuple, ls->value);
  GPIf *iff = GP_AS(GPIf, sv->fields[1]);
  cr_assert_eq(gp_kind(iff), GP_TI_IF);
  expect_loc(iff, 5, 8);
  cr_assert_eq(iff->cond, &f->params[0]->base);
  cr_assert_eq(gp_kind(iff->then_branch), GP_TI_LET);
  GPTupleGetItem *el = GP_AS(GPTupleGetItem, iff->else_branch);
  cr_assert_eq(gp_kind(el), GP_TI_TUPLE_GET_ITEM);
  cr_assert_eq(el->index, 1);
  cr_assert_eq(el->tuple, &lt->var->base);
  /* %2.0 of the 1-tuple (%1,) */
  GPTupleGetItem *g20 = GP_AS(GPTupleGetItem, sv->fields[0]);
  GPTuple *one = GP_AS(GPTuple, g20->tuple);
  cr_assert_eq(gp_kind(one), GP_TI_TUPLE);
  cr_assert_eq(one->n, 1);
  cr_assert_eq(one->fields[0], &iff->base);
  gp_release(m);
}

Test(parse, meta_constants_without_metadata) {
  GPModule *m = parse_golden("meta_nodata.relay");
  GPCall *add = as_call(fn_of(m, "main")->body, "add");
  GPConstant *b = GP_AS(GPConstant, add->args[1]);
  cr_assert_eq(gp_kind(b), GP_TI_CONSTANT);
  expect_tensor_type(b->data, GP_DT_F32, 1, (int64_t[]){10});
  cr_assert_null(b->data->dl.data);
  GPCall *dense = as_call(add->args[0], "nn.dense");
  GPConstant *w = GP_AS(GPConstant, dense->args[1]);
  expect_tensor_type(w->data, GP_DT_F32, 2, (int64_t[]){10, 64});
  cr_assert_null(w->data->dl.data);
  cr_assert_eq(gp_attrs_int(dense->attrs, "units", 0), 10);
  gp_release(m);
}

Test(parse, tvm_json_metadata_is_skipped) {
  GPModule *m = parse_golden("tvm_json_meta.relay");
  GPCall *add = as_call(fn_of(m, "main")->body, "add");
  GPConstant *c = GP_AS(GPConstant, add->args[1]);
  expect_tensor_type(c->data, GP_DT_F32, 1, (int64_t[]){3});
  cr_assert_null(c->data->dl.data);
  gp_release(m);
}

Test(parse, scalars_of_each_dtype) {
  GPModule *m = parse_golden("scalars.relay");
  GPFunctionExpr *f = fn_of(m, "main");
  cr_assert_eq(f->nparams, 0);
  cr_assert_null(f->ret_type);
  GPTuple *t = GP_AS(GPTuple, f->body);
  cr_assert_eq(gp_kind(t), GP_TI_TUPLE);
  struct {
    DLDataType dt;
    double v;
  } want[] = {{GP_DT_F32, 1},          {GP_DT_F32, 1.5},         {GP_DT_F32, -1},   {GP_DT_F32, 1e-05f},
              {GP_DT_I64, 0},          {GP_DT_I32, 3},           {GP_DT_F64, 1},    {GP_DT_F16, 1},
              {GP_DT_I8, 1},           {GP_DT_U8, 1},            {GP_DT_BOOL, 1},   {GP_DT_BOOL, 0},
              {GP_DT_I32, -2147483648.0}, {GP_DT_I64, 3000000000.0}, {GP_DT_I16, -7}, {GP_DT_U8, 255},
              {GP_DT_F32, 2.5},        {GP_DT_F32, INFINITY},    {GP_DT_F32, -INFINITY}};
  cr_assert_eq(t->n, (int32_t)GP_ARRAY_LEN(want));
  for (int i = 0; i < t->n; i++) {
    GPConstant *c = GP_AS(GPConstant, t->fields[i]);
    cr_assert_eq(gp_kind(c), GP_TI_CONSTANT, "field %d", i);
    cr_assert(gp_dtype_eq(c->data->dl.dtype, want[i].dt), "field %d: dtype code %d bits %d", i,
              c->data->dl.dtype.code, c->data->dl.dtype.bits);
    cr_assert_eq(c->data->dl.ndim, 0, "field %d", i);
    cr_assert_eq(gp_tensor_get_f64(c->data, 0), want[i].v, "field %d: %g", i, gp_tensor_get_f64(c->data, 0));
  }
  expect_loc(t->fields[0], 3, 4);
  expect_loc(t->fields[1], 3, 8);
  gp_release(m);
}

Test(parse, tvm_spellings) {
  GPModule *m = parse_golden("tvm_spellings.relay");
  GPFunctionExpr *f = fn_of(m, "main");
  cr_assert_str_eq(f->params[0]->name, "input.1");
  cr_assert_eq(f->params[0]->type_annotation, gp_type_tensor(GP_DT_F32, 2, (int64_t[]){1, 3}));
  GPCall *add = as_call(f->body, "add");
  GPTupleGetItem *gi = GP_AS(GPTupleGetItem, add->args[1]);
  cr_assert_eq(gp_kind(gi), GP_TI_TUPLE_GET_ITEM, "%%t.0 is a get-item: %%t.0 is not a bound name");
  cr_assert_eq(gi->tuple, &f->params[1]->base);
  GPCall *clip = as_call(add->args[0], "clip");
  cr_assert_eq(gp_attrs_float(clip->attrs, "a_min", 0), -INFINITY);
  cr_assert_eq(gp_attrs_float(clip->attrs, "a_max", 0), INFINITY);
  GPCall *lrelu = as_call(clip->args[0], "nn.leaky_relu");
  cr_assert_float_eq(gp_attrs_float(lrelu->attrs, "alpha", 0), 0.1, 1e-12);
  GPCall *rs = as_call(lrelu->args[0], "reshape");
  expect_ints(rs->attrs, "newshape", 2, (int64_t[]){1, -1});
  GPCall *a0 = as_call(rs->args[0], "add");
  cr_assert_eq(a0->args[0], &f->params[0]->base, "%%input.1 is the param");
  gp_release(m);
}

Test(parse, version_header_optional_and_comments) {
  const char *text = "// a comment\n/* block /* nested */ still comment */\n"
                     "def @main(%x: int64) -> int64 { negative(%x) // trailing\n}\n";
  GPModule *m = parse_str(text);
  cr_assert(m, "%s", gp_error_message());
  cr_assert_str_eq(m->source_name, "t.relay");
  GPCall *c = as_call(fn_of(m, "main")->body, "negative");
  expect_loc(c, 3, 33);
  gp_release(m);
  m = parse_str("");
  cr_assert(m, "%s", gp_error_message());
  cr_assert_eq(m->num_functions, 0);
  gp_release(m);
}

Test(parse, types_of_every_shape) {
  const char *text = "def @main(%a: Tensor[(?, 3), float32], %b: Tensor[(64), float16], %c: (int64, (bool,), ()),\n"
                     "          %d: fn (Tensor[(2), float32], int8) -> (), %e: Tensor[(), uint8], %f: Tensor[(2, 1i64), int32]) {\n"
                     "  %a\n}\n";
  GPModule *m = parse_str(text);
  cr_assert(m, "%s", gp_error_message());
  GPFunctionExpr *f = fn_of(m, "main");
  const GPType *a = f->params[0]->type_annotation;
  cr_assert_eq(a->kind, GP_TYPE_TENSOR);
  cr_assert_eq(a->tensor.shape[0], GP_DIM_ANY);
  cr_assert_eq(a->tensor.shape[1], 3);
  cr_assert_eq(f->params[1]->type_annotation, gp_type_tensor(GP_DT_F16, 1, (int64_t[]){64}));
  const GPType *c = f->params[2]->type_annotation;
  cr_assert_eq(c->kind, GP_TYPE_TUPLE);
  cr_assert_eq(c->n, 3);
  cr_assert_eq(c->tuple.fields[0], gp_type_scalar(GP_DT_I64));
  cr_assert_eq(c->tuple.fields[1]->n, 1);
  cr_assert_eq(c->tuple.fields[2], gp_type_tuple(0, NULL));
  const GPType *d = f->params[3]->type_annotation;
  cr_assert_eq(d->kind, GP_TYPE_FUNC);
  cr_assert_eq(d->n, 2);
  cr_assert_eq(d->func.ret, gp_type_tuple(0, NULL));
  cr_assert_eq(f->params[4]->type_annotation, gp_type_scalar(GP_DT_U8));
  cr_assert_eq(f->params[5]->type_annotation, gp_type_tensor(GP_DT_I32, 2, (int64_t[]){2, 1}));
  gp_release(m);
}

Test(parse, attribute_values) {
  const char *text =
      "def @main(%x: Tensor[(1, 3, 4, 4), float32], %w: Tensor[(3, 3, 1, 1), float32]) {\n"
      "  %0 = nn.conv2d(%x, %w, strides=[1i64, 1i64], padding=[0, 0, 0, 0], channels=3, kernel_size=[1, 1], "
      "data_layout=\"NCHW\", out_dtype=\"\");\n"
      "  %1 = cast(%0, dtype=\"float16\");\n"
      "  %2 = clip(%1, a_min=0, a_max=6f);\n"
      "  %3 = nn.max_pool2d(%2, pool_size=[1, 1], ceil_mode=False,);\n"
      "  strided_slice(%3, begin=[0, 0], end=[1, 3], strides=[1, 1], axes=None)\n"
      "}\n";
  GPModule *m = parse_str(text);
  cr_assert(m, "%s", gp_error_message());
  GPCall *ss = as_call(fn_of(m, "main")->body, "strided_slice");
  cr_assert_eq(gp_attrs_get(ss->attrs, "axes")->kind, GP_ATTR_NONE);
  GPCall *mp = as_call(ss->args[0], "nn.max_pool2d");
  cr_assert_eq(gp_attrs_get(mp->attrs, "ceil_mode")->kind, GP_ATTR_BOOL);
  cr_assert_eq(gp_attrs_get(mp->attrs, "ceil_mode")->i, 0);
  GPCall *clip = as_call(mp->args[0], "clip");
  cr_assert_eq(gp_attrs_get(clip->attrs, "a_min")->kind, GP_ATTR_FLOAT);
  cr_assert_eq(gp_attrs_float(clip->attrs, "a_max", 0), 6.0);
  GPCall *cast = as_call(clip->args[0], "cast");
  cr_assert(gp_dtype_eq(gp_attrs_get(cast->attrs, "dtype")->dtype, GP_DT_F16));
  GPCall *conv = as_call(cast->args[0], "nn.conv2d");
  cr_assert_eq(gp_attrs_get(conv->attrs, "out_dtype")->dtype.bits, 0);
  expect_ints(conv->attrs, "strides", 2, (int64_t[]){1, 1});
  gp_release(m);
  m = parse_str("def @main(%x: Tensor[(1, 3), float32]) { squeeze(%x, axis=[]) }");
  cr_assert(m, "%s", gp_error_message());
  expect_ints(as_call(fn_of(m, "main")->body, "squeeze")->attrs, "axis", 0, NULL);
  gp_release(m);
}

/* TVM prints pad_width, paddings and crops as nested (before, after) pairs: they parse (flat,
 * as the other spelling) and print the same way back */
Test(parse, nested_pairs_as_tvm_prints_them) {
  const char *text = "#[version = \"0.0.5\"]\n"
                     "def @main(%x: Tensor[(1, 8, 8, 2), float32]) {\n"
                     "  %0 = nn.pad(%x, 0f, pad_width=[[0, 0], [1, 2], [1, 2], [0, 0]]);\n"
                     "  %1 = nn.space_to_batch_nd(%0, block_shape=[2, 2], paddings=[[2, 3], [2, 3]]);\n"
                     "  nn.batch_to_space_nd(%1, block_shape=[2, 2], crops=[[0, 1], [0, 1]])\n"
                     "}\n";
  GPModule *m = parse_str(text);
  cr_assert(m, "%s", gp_error_message());
  GPCall *b2s = as_call(fn_of(m, "main")->body, "nn.batch_to_space_nd");
  expect_ints(b2s->attrs, "crops", 4, (int64_t[]){0, 1, 0, 1});
  GPCall *pad = as_call(as_call(b2s->args[0], "nn.space_to_batch_nd")->args[0], "nn.pad");
  expect_ints(pad->attrs, "pad_width", 8, (int64_t[]){0, 0, 1, 2, 1, 2, 0, 0});
  char *out = gp_print(m, 0);
  cr_assert_str_eq(out, text);
  gp_free(out);
  gp_release(m);
  m = parse_str("def @main(%x: Tensor[(1, 3), float32]) { nn.pad(%x, 0f, pad_width=[0, 0, 1, 1]) }");
  cr_assert(m, "%s", gp_error_message());
  expect_ints(as_call(fn_of(m, "main")->body, "nn.pad")->attrs, "pad_width", 4, (int64_t[]){0, 0, 1, 1});
  gp_release(m);
}

Test(parse, shadowing_scopes_and_free_var) {
  /* graph numbers restart inside a closure (a new scope); let may shadow a param */
  const char *text = "def @main(%x: float32) {\n"
                     "  %0 = add(%x, 1f);\n"
                     "  %1 = fn (%y: float32) { %0 = multiply(%y, %y); %0 };\n"
                     "  let %x = %1(%0);\n"
                     "  free_var %z: float32;\n"
                     "  add(%x, %0)\n"
                     "}\n";
  GPModule *m = parse_str(text);
  cr_assert(m, "%s", gp_error_message());
  GPFunctionExpr *f = fn_of(m, "main");
  GPLet *lt = GP_AS(GPLet, f->body);
  cr_assert_eq(gp_kind(lt), GP_TI_LET);
  GPCall *add = as_call(lt->body, "add");
  cr_assert_eq(add->args[0], &lt->var->base, "%%x is the let var");
  GPCall *outer0 = as_call(add->args[1], "add");
  cr_assert_eq(outer0->args[0], &f->params[0]->base);
  GPCall *call = as_call(lt->value, NULL);
  cr_assert_eq(call->args[0], &outer0->base, "outer %%0 after the closure");
  GPFunctionExpr *clo = GP_AS(GPFunctionExpr, call->op);
  as_call(clo->body, "multiply");
  gp_release(m);
}

Test(parse, parse_expr_with_free_vars) {
  GPVar *x = gp_var_new("x", gp_type_scalar(GP_DT_F32));
  GPVar *y = gp_var_new("conv1.weight", NULL);
  GPVar *vars[] = {x, y};
  const char *text = "%0 = add(%x, %conv1.weight);\n(%0, multiply(%0, meta[relay.Constant][0] /* ty=float32 */)).1";
  GPExpr *e = gp_parse_expr(text, strlen(text), 2, vars);
  cr_assert(e, "%s", gp_error_message());
  GPTupleGetItem *gi = GP_AS(GPTupleGetItem, e);
  cr_assert_eq(gp_kind(gi), GP_TI_TUPLE_GET_ITEM);
  expect_loc(gi, 2, 1);
  GPCall *mul = as_call(GP_AS(GPTuple, gi->tuple)->fields[1], "multiply");
  GPCall *add = as_call(mul->args[0], "add");
  cr_assert_eq(add->args[0], &x->base);
  cr_assert_eq(add->args[1], &y->base);
  cr_assert_null(GP_AS(GPConstant, mul->args[1])->data->dl.data);
  gp_release(e);
  e = gp_parse_expr("%y", 2, 1, vars);
  cr_assert_null(e);
  cr_assert_eq(gp_error_kind(), GP_ERR_PARSE);
  cr_assert_str_eq(gp_error_message(), "<expr>:1:1: error: undefined variable '%y'");
  gp_error_clear();
  gp_release(x);
  gp_release(y);
}

/* ------------------------------------------------------------------------------------------ */
/* Errors: kind and exact location                                                             */

#define MAIN "def @main(%x: float32) {\n"

Test(parse_errors, unknown_operator) {
  expect_error(MAIN "  %0 = foo.bar(%x);\n  %0\n}\n", "t.relay:2:8: error: unknown operator 'foo.bar'");
}
Test(parse_errors, undefined_variable) {
  expect_error(MAIN "  add(%x, %y)\n}\n", "t.relay:2:11: error: undefined variable '%y'");
}
Test(parse_errors, undefined_graph_binding) {
  expect_error(MAIN "  %0 = add(%x, %x);\n  add(%0, %1)\n}\n", "t.relay:3:11: error: undefined graph binding '%1'");
}
Test(parse_errors, rebinding_in_same_scope) {
  expect_error(MAIN "  %0 = add(%x, %x);\n  %0 = add(%0, %x);\n  %0\n}\n",
               "t.relay:3:3: error: '%0' is already bound in this scope");
}
Test(parse_errors, undefined_global) {
  expect_error(MAIN "  @nope(%x)\n}\n", "t.relay:2:3: error: undefined global function @nope");
}
Test(parse_errors, duplicate_def) {
  expect_error(MAIN "  %x\n}\ndef @main() { 1f }\n", "t.relay:4:5: error: @main is already defined at line 1");
}
Test(parse_errors, duplicate_parameter) {
  expect_error("def @main(%x: float32, %x: float32) { %x }", "t.relay:1:24: error: duplicate parameter '%x'");
}
Test(parse_errors, bad_version) {
  expect_error("#[version = \"0.0.4\"]\ndef @main() { 1f }", "t.relay:1:1: error: unsupported text format version");
}
Test(parse_errors, missing_close_paren) {
  expect_error(MAIN "  add(%x, %x {\n}\n", "t.relay:2:14: error: expected ',' or ')' after call argument, got '{'");
}
Test(parse_errors, truncated) {
  expect_error(MAIN "  add(%x,", "t.relay:2:10: error: expected an expression, got end of input");
  expect_error("def @main(%x: Tensor[(1, ", "t.relay:1:26: error: expected a dimension (integer or '?'), got end of input");
  expect_error("def @main(", "t.relay:1:11: error: expected a parameter ('%name') or ')', got end of input");
}
Test(parse_errors, bad_numbers) {
  expect_error(MAIN "  add(%x, 1.5q)\n}\n", "t.relay:2:11: error: invalid numeric literal '1.5q'");
  expect_error(MAIN "  add(%x, 12abc)\n}\n", "t.relay:2:11: error: invalid numeric literal '12abc'");
  expect_error(MAIN "  add(%x, 1f8)\n}\n", "t.relay:2:11: error: invalid float width in '1f8'");
  expect_error(MAIN "  add(%x, 1e400f)\n}\n", "t.relay:2:11: error: floating point literal '1e400f' is out of range for float32");
  expect_error(MAIN "  add(%x, 1e39f)\n}\n", "t.relay:2:11: error: floating point literal '1e39f' is out of range for float32");
}
Test(parse_errors, huge_ints) {
  expect_error(MAIN "  add(%x, 99999999999999999999)\n}\n",
               "t.relay:2:11: error: integer literal '99999999999999999999' is out of range for int64");
  expect_error(MAIN "  add(%x, 300i8)\n}\n", "t.relay:2:11: error: integer literal '300i8' is out of range for int8");
  expect_error(MAIN "  add(%x, -1u8)\n}\n", "t.relay:2:11: error: integer literal '-1u8' is out of range for uint8");
  expect_error(MAIN "  %99999999999999999999 = add(%x, %x);\n}\n", "t.relay:2:3: error: graph binding number is too large");
}
Test(parse_errors, unterminated_string_and_comment) {
  expect_error(MAIN "  nn.conv2d(%x, %x, data_layout=\"NCHW)\n}\n", "t.relay:2:33: error: unterminated string literal");
  expect_error(MAIN "  /* open /* nested */\n  %x\n}\n", "t.relay:2:3: error: unterminated comment");
}
Test(parse_errors, nul_and_invalid_bytes) {
  const char text[] = "def @main(%x: float32) {\n  add(%x,\0 %x)\n}\n";
  GPModule *m = gp_parse(text, sizeof text - 1, "t.relay");
  cr_assert_null(m);
  cr_assert_str_eq(gp_error_message(), "t.relay:2:10: error: unexpected byte 0x00");
  gp_error_clear();
  expect_error(MAIN "  add(%x, \xc3\x28)\n}\n", "t.relay:2:11: error: unexpected byte 0xc3");
  expect_error("def @main() { %0 = (); %0 }\ndef @f() -> () { () }\n"
               "def @g(%x: Tensor[(1, 3, 4, 4), float32]) { nn.max_pool2d(%x, layout=\"N\xff\") }",
               "t.relay:3:70: error: invalid UTF-8 in string literal");
}
Test(parse_errors, attribute_errors) {
  expect_error(MAIN "  nn.relu(%x, alpha=1)\n}\n", "t.relay:2:3: error: nn.relu takes no attributes, got 'alpha'");
  expect_error(MAIN "  nn.softmax(%x, axsi=1)\n}\n", "t.relay:2:3: error: nn.softmax has no attribute 'axsi' (valid: axis)");
  expect_error(MAIN "  transpose(%x, axes=[[0, 1]])\n}\n",
               "t.relay:2:23: error: nested arrays are not supported in attribute values (only in pad_width, paddings, crops)");
  expect_error(MAIN "  nn.softmax(%x, axis=1, axis=2)\n}\n", "t.relay:2:26: error: duplicate attribute 'axis'");
  expect_error(MAIN "  %0 = fn (%y: float32) { %y };\n  %0(%x, foo=1)\n}\n",
               "t.relay:3:10: error: attributes are only allowed in calls of operators");
  expect_error(MAIN "  cast(%x, dtype=\"flot32\")\n}\n", "t.relay:2:3: error: cast: attribute 'dtype': unknown data type");
}
Test(parse_errors, bad_types) {
  expect_error("def @main(%x: Tensor[(1, 2), floaty]) { %x }", "t.relay:1:30: error: unknown data type 'floaty'");
  expect_error("def @main(%x: Tansor[(1, 2), float32]) { %x }", "t.relay:1:15: error: unknown type 'Tansor'");
  expect_error("def @main(%x: (float32, int8) { %x }", "t.relay:1:31: error: expected ',' or ')' after parameter, got '{'");
  expect_error("def @main(%x: (float32 int8)) { %x }", "t.relay:1:24: error: expected ',' or ')' in tuple type, got 'int8'");
}
Test(parse_errors, metadata_errors) {
  /* no entry, no type */
  expect_error(MAIN "  add(%x, meta[relay.Constant][0])\n}\n",
               "t.relay:2:11: error: meta[relay.Constant][0] has no metadata entry and no /* ty=... */ type annotation");
  /* entry disagrees with the reference's annotation */
  expect_error(MAIN "  add(%x, meta[relay.Constant][0] /* ty=Tensor[(2), float32] */)\n}\n"
                    "#[metadata]\nrelay.Constant[0] = float32 (3) base64:AACAPwAAAEAAAEBA\n",
               "t.relay:2:11: error: meta[relay.Constant][0]: the metadata entry has type Tensor[(3), float32] but the "
               "reference is annotated Tensor[(2), float32]");
  /* byte count */
  expect_error(MAIN "  %x\n}\n#[metadata]\nrelay.Constant[0] = float32 (4) base64:AACAPwAAAEAAAEBA\n",
               "t.relay:5:40: error: relay.Constant[0]: 12 bytes of data is too few for float32 with this shape");
  expect_error(MAIN "  %x\n}\n#[metadata]\nrelay.Constant[0] = float32 (1, 3) base64:AACAPwAAAEAAAEB\n",
               "t.relay:5:43: error: relay.Constant[0]: base64 data length is not a multiple of 4");
  expect_error(MAIN "  %x\n}\n#[metadata]\nrelay.Constant[0] = float32 (3) base64:AACAPwAAAEAAAEBA\n"
                    "relay.Constant[0] = float32 (3) base64:AACAPwAAAEAAAEBA\n",
               "t.relay:6:1: error: duplicate metadata entry relay.Constant[0]");
  expect_error(MAIN "  %x\n}\n#[metadata]\nrelay.Constant[0] = float32 (3) base64:AACAP!AAAEAAAEBA\n",
               "t.relay:5:45: error: invalid base64 character");
  /* a TVM meta attribute reference */
  expect_error(MAIN "  nn.conv2d(%x, %x, meta[relay.attrs.Conv2DAttrs][0])\n}\n",
               "t.relay:2:21: error: unsupported meta reference meta['relay.attrs.Conv2DAttrs'][0]");
  /* the same constant with two annotations */
  expect_error(MAIN "  add(meta[relay.Constant][0] /* ty=float32 */, meta[relay.Constant][0] /* ty=int8 */)\n}\n",
               "t.relay:2:49: error: meta[relay.Constant][0] is annotated int8 here but float32 elsewhere");
}
Test(parse_errors, structure) {
  expect_error("#[version = \"0.0.5\"]\nfn @main() { 1f }", "t.relay:2:1: error: expected 'def' or end of input, got 'fn'");
  expect_error(MAIN "  %0 = add(%x, %x)\n  %0\n}\n", "t.relay:3:3: error: expected ';' after the bound expression, got '%0'");
  expect_error(MAIN "  if (%x) { %x }\n}\n", "t.relay:3:1: error: expected 'else' after the then branch, got '}'");
  expect_error(MAIN "  (%x).a\n}\n", "t.relay:2:8: error: expected a tuple index after '.', got 'a'");
  expect_error(MAIN "  (%x, %x\n}\n", "t.relay:3:1: error: expected ',' or ')' in tuple, got '}'");
  expect_error(MAIN "  %0 = (%x,);\n  %0.0(%x)\n}\n", "t.relay:3:3: error: cannot call a tuple get-item");
  expect_error(MAIN "  %x + %x\n}\n", "t.relay:2:6: error: unexpected character '+'");
  expect_error("#[foo]\n", "t.relay:1:1: error: unsupported attribute 'foo'");
  expect_error("def @main() { 1f }\n#[version = \"0.0.5\"]\n", "t.relay:2:1: error: the version header must come first");
}

/* ------------------------------------------------------------------------------------------ */
/* Size and depth                                                                               */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

Test(parse_big, million_binding_chain, .timeout = 120) {
  const int n = 1000000;
  GPBuf b = {0};
  gp_buf_puts(&b, "#[version = \"0.0.5\"]\ndef @main(%x: Tensor[(1, 3), float32]) -> Tensor[(1, 3), float32] {\n");
  gp_buf_puts(&b, "  %0 = add(%x, %x) /* ty=Tensor[(1, 3), float32] */;\n");
  for (int i = 1; i < n; i++) gp_buf_printf(&b, "  %%%d = add(%%%d, %%x) /* ty=Tensor[(1, 3), float32] */;\n", i, i - 1);
  gp_buf_printf(&b, "  %%%d\n}\n", n - 1);
  double t0 = now();
  GPModule *m = gp_parse(b.data, b.len, "chain.relay");
  double dt = now() - t0;
  cr_assert(m, "%s", gp_error_message());
  cr_log_info("parsed %d bindings (%zu MB) in %.3f s", n, b.len >> 20, dt);
  gp_buf_free(&b);
  GPFunctionExpr *f = fn_of(m, "main");
  GPExpr *e = f->body;
  int depth = 0;
  while (gp_kind(e) == GP_TI_CALL) {
    GPCall *c = GP_AS(GPCall, e);
    cr_assert_eq(c->args[1], &f->params[0]->base);
    e = c->args[0];
    depth++;
  }
  cr_assert_eq(depth, n + 0);
  cr_assert_eq(e, &f->params[0]->base);
  expect_loc(f->body, (uint32_t)n + 2, 13); /* where %999999 was bound */
  gp_release(m);
}

Test(parse_big, deeply_nested_calls_parens_tuples_types, .timeout = 120) {
  const int d = 100000;
  GPBuf b = {0};
  gp_buf_puts(&b, "def @main(%x: float32) {\n  ");
  for (int i = 0; i < d; i++) gp_buf_puts(&b, "add(");
  gp_buf_puts(&b, "%x");
  for (int i = 0; i < d; i++) gp_buf_puts(&b, ", %x)");
  gp_buf_puts(&b, "\n}\n");
  GPModule *m = gp_parse(b.data, b.len, "deep.relay");
  gp_buf_free(&b);
  cr_assert(m, "%s", gp_error_message());
  GPExpr *e = fn_of(m, "main")->body;
  int depth = 0;
  while (gp_kind(e) == GP_TI_CALL) e = GP_AS(GPCall, e)->args[0], depth++;
  cr_assert_eq(depth, d);
  gp_release(m);

  /* parentheses, tuples and types */
  gp_buf_puts(&b, "def @main(%x: ");
  for (int i = 0; i < d; i++) gp_buf_puts(&b, "(");
  gp_buf_puts(&b, "float32");
  for (int i = 0; i < d; i++) gp_buf_puts(&b, ",)");
  gp_buf_puts(&b, ") {\n  ");
  for (int i = 0; i < d; i++) gp_buf_puts(&b, "((%x, ");
  gp_buf_puts(&b, "%x");
  for (int i = 0; i < d; i++) gp_buf_puts(&b, "))");
  gp_buf_puts(&b, "\n}\n");
  m = gp_parse(b.data, b.len, "deep.relay");
  gp_buf_free(&b);
  cr_assert(m, "%s", gp_error_message());
  const GPType *t = fn_of(m, "main")->params[0]->type_annotation;
  depth = 0;
  while (t->kind == GP_TYPE_TUPLE) t = t->tuple.fields[0], depth++;
  cr_assert_eq(depth, d);
  gp_release(m);

  /* nested closures and ifs */
  gp_buf_puts(&b, "def @main(%x: bool) {\n");
  for (int i = 0; i < d / 2; i++) gp_buf_puts(&b, "if (%x) { fn () { ");
  gp_buf_puts(&b, "%x");
  for (int i = 0; i < d / 2; i++) gp_buf_puts(&b, " } } else { %x }");
  gp_buf_puts(&b, "\n}\n");
  m = gp_parse(b.data, b.len, "deep.relay");
  gp_buf_free(&b);
  cr_assert(m, "%s", gp_error_message());
  gp_release(m);
}

/* ------------------------------------------------------------------------------------------ */
/* Malformed input: every prefix and random byte changes fail cleanly (or parse)                */

static const char *k_golden[] = {"conv_block.relay", "two_funcs.relay", "closures.relay", "let_if.relay",
                                 "meta_nodata.relay", "scalars.relay", "tvm_json_meta.relay",
                                 "tvm_spellings.relay"};

static void parse_or_clean_error(const char *text, size_t len) {
  GPModule *m = gp_parse(text, len, "f.relay");
  if (m) {
    gp_release(m);
    return;
  }
  cr_assert_eq(gp_error_kind(), GP_ERR_PARSE, "kind %d: %s", gp_error_kind(), gp_error_message());
  cr_assert(strncmp(gp_error_message(), "f.relay:", 8) == 0 && strstr(gp_error_message(), ": error: "), "%s",
            gp_error_message());
  gp_error_clear();
}

Test(parse_fuzz, every_prefix_of_the_golden_files, .timeout = 300) {
  for (size_t g = 0; g < GP_ARRAY_LEN(k_golden); g++) {
    GPBuf p = {0};
    gp_buf_printf(&p, DATA "%s", k_golden[g]);
    size_t len;
    char *text = th_read(p.data, &len);
    gp_buf_free(&p);
    for (size_t i = 0; i <= len; i++) {
      char *copy = gp_malloc(i ? i : 1); /* exact size: ASan catches reads past the end */
      memcpy(copy, text, i);
      parse_or_clean_error(copy, i);
      gp_free(copy);
    }
    gp_free(text);
  }
}

Test(parse_fuzz, random_byte_changes, .timeout = 300) {
  static const char alphabet[] = "()[]{},;:=.%@-?#\"/*0123456789aefinux \n\0\xff";
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (size_t g = 0; g < GP_ARRAY_LEN(k_golden); g++) {
    GPBuf p = {0};
    gp_buf_printf(&p, DATA "%s", k_golden[g]);
    size_t len;
    char *text = th_read(p.data, &len);
    gp_buf_free(&p);
    for (int round = 0; round < 400; round++) {
      char *copy = gp_malloc(len);
      memcpy(copy, text, len);
      int changes = 1 + round % 3;
      for (int k = 0; k < changes; k++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        size_t at = (size_t)(s % len);
        copy[at] = alphabet[(s >> 32) % (sizeof alphabet - 1)];
      }
      parse_or_clean_error(copy, len);
      gp_free(copy);
    }
    gp_free(text);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* print -> parse -> print                                                                      */

Test(parse_print, fixed_point_on_golden_files) {
  /* without types a meta reference whose constant has no data has no type to reparse with */
  int32_t flag_sets[] = {GP_PRINT_TYPES | GP_PRINT_METADATA, GP_PRINT_TYPES};
  for (size_t g = 0; g < GP_ARRAY_LEN(k_golden); g++) {
    GPModule *m1 = parse_golden(k_golden[g]);
    for (size_t k = 0; k < GP_ARRAY_LEN(flag_sets); k++) {
      int32_t flags = flag_sets[k];
      char *s1 = gp_print(m1, flags);
      GPModule *m2 = gp_parse(s1, strlen(s1), "printed.relay");
      cr_assert(m2, "%s: reparse of the printed text failed: %s\n%s", k_golden[g], gp_error_message(), s1);
      char *s2 = gp_print(m2, flags);
      cr_assert_str_eq(s2, s1, "%s: print(parse(print(m))) differs", k_golden[g]);
      if (flags & GP_PRINT_METADATA) th_assert_module_eq(m2, m1);
      gp_free(s1);
      gp_free(s2);
      gp_release(m2);
    }
    gp_release(m1);
  }
}

Test(parse_print, fixed_point_on_the_example) {
  GPModule *m1 = th_parse_file("examples/resnet_block.relay");
  char *s1 = gp_print(m1, GP_PRINT_TYPES | GP_PRINT_METADATA);
  GPModule *m2 = gp_parse(s1, strlen(s1), "printed.relay");
  cr_assert(m2, "%s", gp_error_message());
  char *s2 = gp_print(m2, GP_PRINT_TYPES | GP_PRINT_METADATA);
  cr_assert_str_eq(s2, s1);
  th_assert_module_eq(m2, m1);
  gp_free(s1);
  gp_free(s2);
  gp_release(m1);
  gp_release(m2);
}

/* A dtype that does not exist is an error at its position: float33, int7, uint1 (only bool is
 * one bit), bfloat32, float8 without its format; the narrow types that exist parse and print
 * back. */
Test(parse_errors, dtypes_that_do_not_exist) {
  expect_error("def @main(%x: Tensor[(1), float33]) { %x }", "t.relay:1:27: error: unknown data type 'float33'");
  expect_error("def @main(%x: Tensor[(1), int7]) { %x }", "t.relay:1:27: error: unknown data type 'int7'");
  expect_error("def @main(%x: Tensor[(1), uint1]) { %x }", "t.relay:1:27: error: unknown data type 'uint1'");
  expect_error("def @main(%x: Tensor[(1), bfloat32]) { %x }", "t.relay:1:27: error: unknown data type 'bfloat32'");
  expect_error("def @main(%x: Tensor[(1), float8]) { %x }", "t.relay:1:27: error: unknown data type 'float8'");
  expect_error("def @main(%x: int7) { %x }", "t.relay:1:15: error: unknown type 'int7'");
  expect_error(MAIN "  cast(%x, dtype=\"float33\")\n}\n", "t.relay:2:");
}

Test(parse, narrow_and_unsigned_dtypes_round_trip) {
  const char *text = "def @main(%a: Tensor[(2), float8_e4m3fn], %b: Tensor[(2), float8_e5m2fnuz], %c: Tensor[(2), int4], "
                     "%d: Tensor[(2), uint2], %e: Tensor[(2), uint64], %f: Tensor[(2), float4_e2m1fn], "
                     "%g: Tensor[(2), bfloat16], %h: Tensor[(2), float8_e8m0fnu]) {\n  %a\n}\n";
  GPModule *m = parse_str(text);
  cr_assert(m, "%s", gp_error_message());
  GPFunctionExpr *f = fn_of(m, "main");
  cr_assert_eq(f->params[0]->type_annotation, gp_type_tensor(GP_DT(GP_DL_FLOAT8_E4M3FN, 8), 1, (int64_t[]){2}));
  cr_assert_eq(f->params[2]->type_annotation, gp_type_tensor(GP_DT(kDLInt, 4), 1, (int64_t[]){2}));
  cr_assert_eq(f->params[4]->type_annotation, gp_type_tensor(GP_DT_U64, 1, (int64_t[]){2}));
  char *s = gp_print(m, 0);
  cr_assert(strstr(s, "float8_e4m3fn]") && strstr(s, "float8_e5m2fnuz]") && strstr(s, "int4]") &&
                strstr(s, "uint2]") && strstr(s, "float4_e2m1fn]") && strstr(s, "bfloat16]") &&
                strstr(s, "float8_e8m0fnu]"),
            "%s", s);
  gp_free(s);
  gp_release(m);
}

/* A call without arguments as the first value of a function (found by fuzz_relay: the value
 * stack was still NULL and its address was computed from it, undefined behaviour that UBSan
 * reports); the truncated text is an error at its end, the complete one parses. */
Test(parse, call_without_arguments_before_any_value) {
  GPModule *m = parse_str("\ndef @mY (){sinh()");
  cr_assert_null(m);
  cr_assert(strstr(gp_error_message(), "t.relay:2:18: error: expected '}'"), "%s", gp_error_message());
  gp_error_clear();
  m = parse_str("def @f() { zeros(shape=[2], dtype=\"float32\") }");
  cr_assert(m, "%s", gp_error_message());
  gp_release(m);
}
