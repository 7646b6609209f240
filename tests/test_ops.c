/* test_ops.c -- the built-in op set: schemas, patterns, and type relations (shape inference and
 * error messages), called directly through gp_op_get + gp_op_attrs_new + gp_op_infer. */
#include "ir/ir.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

/* ---- helpers */

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int32_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define TY(dt, ...) gp_type_tensor((dt), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))
#define F32(...) TY(GP_DT_F32, __VA_ARGS__)
#define SCALAR(dt) gp_type_scalar(dt)
#define ANY GP_DIM_ANY
#define TUP(...)                                                                                \
  gp_type_tuple((int32_t)(sizeof((const GPType *const[]){__VA_ARGS__}) / sizeof(GPType *)),   \
                (const GPType *const[]){__VA_ARGS__})
#define INTS(...) gp_attr_ints(NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))
#define ARGS(...) ((const GPType *const[]){__VA_ARGS__})
#define NARGS(...) ((int32_t)(sizeof((const GPType *const[]){__VA_ARGS__}) / sizeof(GPType *)))

/* Attribute lists: KV("key", value), ... */
typedef struct KV {
  const char *key;
  GPAttrValue value;
} KV;
#define KV(k, v) ((KV){(k), (v)})
#define KVS(...) ((const KV[]){__VA_ARGS__}), ((int32_t)(sizeof((const KV[]){__VA_ARGS__}) / sizeof(KV)))
#define NOKV NULL, 0

static const GPType *infer(const char *name, const GPType *const *args, int32_t nargs,
                           const KV *kv, int32_t nkv) {
  gp_error_clear();
  const GPOp *op = gp_op_get(name);
  cr_assert(op, "no op %s: %s", name, gp_error_message());
  const char *keys[16];
  GPAttrValue vals[16];
  cr_assert(nkv <= 16);
  for (int32_t i = 0; i < nkv; i++) keys[i] = kv[i].key, vals[i] = kv[i].value;
  GPAttrs *attrs = gp_op_attrs_new(op, nkv, keys, vals);
  if (!attrs && gp_error_kind() != GP_OK) return NULL;
  const GPType *t = gp_op_infer(op, attrs, args, nargs);
  gp_release(attrs);
  return t;
}

/* INFER(op, ARGS(...), KVS(...) or NOKV) */
#define INFER(op, args, ...) infer((op), (args), (int32_t)(sizeof(args) / sizeof(GPType *)), __VA_ARGS__)

static char *type_str(const GPType *t) {
  if (!t) return gp_strdup("(null)");
  GPBuf b = {0};
  gp_type_print(&b, t);
  return gp_buf_take(&b);
}

static void expect_type_at(const GPType *got, const GPType *want, int line) {
  cr_assert(want, "line %d: bad expected type", line);
  if (got != want) {
    char *g = type_str(got), *w = type_str(want);
    cr_assert_fail("line %d: got %s, want %s (error: %s)", line, g, w, gp_error_message());
  }
}
#define EXPECT(got, want) expect_type_at((got), (want), __LINE__)

static void expect_err_at(const GPType *got, int32_t kind, const char *needle, int line) {
  if (got) {
    char *g = type_str(got);
    cr_assert_fail("line %d: expected an error containing \"%s\", got type %s", line, needle, g);
  }
  cr_assert_eq(gp_error_kind(), kind, "line %d: error kind %d, expected %d (%s)", line,
               gp_error_kind(), kind, gp_error_message());
  cr_assert(strstr(gp_error_message(), needle), "line %d: message \"%s\" lacks \"%s\"", line,
            gp_error_message(), needle);
  gp_error_clear();
}
#define EXPECT_ERR(got, kind, needle) expect_err_at((got), (kind), (needle), __LINE__)

static const GPAttrField *field(const GPOp *op, const char *name) {
  for (int32_t i = 0; i < op->num_attrs; i++)
    if (strcmp(op->attrs[i].name, name) == 0) return &op->attrs[i];
  return NULL;
}

/* ---- registry: names, patterns, flags, schemas */

Test(ops, registry_patterns_and_flags) {
  static const struct {
    const char *name;
    int32_t pattern;
    int32_t num_inputs;
  } want[] = {
      {"add", GP_PATTERN_BROADCAST, 2},
      {"subtract", GP_PATTERN_BROADCAST, 2},
      {"multiply", GP_PATTERN_BROADCAST, 2},
      {"divide", GP_PATTERN_BROADCAST, 2},
      {"maximum", GP_PATTERN_BROADCAST, 2},
      {"minimum", GP_PATTERN_BROADCAST, 2},
      {"power", GP_PATTERN_BROADCAST, 2},
      {"negative", GP_PATTERN_ELEMWISE, 1},
      {"sqrt", GP_PATTERN_ELEMWISE, 1},
      {"rsqrt", GP_PATTERN_ELEMWISE, 1},
      {"exp", GP_PATTERN_ELEMWISE, 1},
      {"log", GP_PATTERN_ELEMWISE, 1},
      {"abs", GP_PATTERN_ELEMWISE, 1},
      {"sigmoid", GP_PATTERN_ELEMWISE, 1},
      {"tanh", GP_PATTERN_ELEMWISE, 1},
      {"nn.relu", GP_PATTERN_ELEMWISE, 1},
      {"nn.leaky_relu", GP_PATTERN_ELEMWISE, 1},
      {"clip", GP_PATTERN_ELEMWISE, 1},
      {"cast", GP_PATTERN_ELEMWISE, 1},
      {"nn.conv2d", GP_PATTERN_OUT_ELEMWISE_FUSABLE, 2},
      {"nn.dense", GP_PATTERN_OUT_ELEMWISE_FUSABLE, 2},
      {"nn.bias_add", GP_PATTERN_BROADCAST, 2},
      {"nn.batch_norm", GP_PATTERN_OUT_ELEMWISE_FUSABLE, 5},
      {"nn.dropout", GP_PATTERN_OPAQUE, 1},
      {"nn.max_pool2d", GP_PATTERN_OUT_ELEMWISE_FUSABLE, 1},
      {"nn.avg_pool2d", GP_PATTERN_OUT_ELEMWISE_FUSABLE, 1},
      {"nn.global_avg_pool2d", GP_PATTERN_OUT_ELEMWISE_FUSABLE, 1},
      {"nn.softmax", GP_PATTERN_OUT_ELEMWISE_FUSABLE, 1},
      {"nn.lrn", GP_PATTERN_OPAQUE, 1},
      {"nn.batch_flatten", GP_PATTERN_INJECTIVE, 1},
      {"concatenate", GP_PATTERN_INJECTIVE, 1},
      {"reshape", GP_PATTERN_INJECTIVE, 1},
      {"transpose", GP_PATTERN_INJECTIVE, 1},
      {"expand_dims", GP_PATTERN_BROADCAST, 1},
      {"squeeze", GP_PATTERN_INJECTIVE, 1},
      {"full", GP_PATTERN_ELEMWISE, 1},
      {"zeros", GP_PATTERN_ELEMWISE, 0},
      {"ones", GP_PATTERN_ELEMWISE, 0},
      {"sum", GP_PATTERN_COMM_REDUCE, 1},
      {"mean", GP_PATTERN_COMM_REDUCE, 1},
      {"strided_slice", GP_PATTERN_INJECTIVE, 1},
      {"split", GP_PATTERN_INJECTIVE, 1},
      {"layout_transform", GP_PATTERN_INJECTIVE, 1},
  };
  for (size_t i = 0; i < GP_ARRAY_LEN(want); i++) {
    const GPOp *op = gp_op_get(want[i].name);
    cr_assert(op, "missing op %s", want[i].name);
    cr_expect_eq(op->pattern, want[i].pattern, "%s: pattern %d, want %d", want[i].name,
                 op->pattern, want[i].pattern);
    cr_expect_eq(op->num_inputs, want[i].num_inputs, "%s: num_inputs %d", want[i].name,
                 op->num_inputs);
    uint32_t flags = strcmp(want[i].name, "reshape") == 0      ? GP_OP_RESHAPE_ONLY
                     : strcmp(want[i].name, "nn.dropout") == 0 ? GP_OP_STATEFUL
                                                               : 0;
    cr_expect_eq(op->flags, flags, "%s: flags %u", want[i].name, op->flags);
    cr_expect(op->help && op->help[0], "%s has no help", want[i].name);
  }
}

Test(ops, conv2d_schema_order_and_defaults) {
  const GPOp *op = gp_op_get("nn.conv2d");
  static const char *const names[] = {"strides",     "padding",     "dilation",   "groups",
                                      "channels",    "kernel_size", "data_layout",
                                      "kernel_layout", "out_layout", "out_dtype"};
  cr_assert_eq(op->num_attrs, (int32_t)GP_ARRAY_LEN(names));
  for (int32_t i = 0; i < op->num_attrs; i++) cr_expect_str_eq(op->attrs[i].name, names[i]);
  cr_expect_eq(field(op, "strides")->kind, GP_ATTR_INTS);
  cr_expect_eq(field(op, "strides")->default_value.n, 2);
  cr_expect_eq(field(op, "strides")->default_value.ints[1], 1);
  cr_expect_eq(field(op, "padding")->default_value.ints[0], 0);
  cr_expect_eq(field(op, "groups")->default_value.i, 1);
  cr_expect_eq(field(op, "channels")->default_value.kind, GP_ATTR_NONE);
  cr_expect_eq(field(op, "kernel_size")->default_value.kind, GP_ATTR_NONE);
  cr_expect_str_eq(field(op, "data_layout")->default_value.s, "NCHW");
  cr_expect_str_eq(field(op, "kernel_layout")->default_value.s, "OIHW");
  cr_expect_str_eq(field(op, "out_layout")->default_value.s, "");
  cr_expect_eq(field(op, "out_dtype")->kind, GP_ATTR_DTYPE);
  cr_expect_eq(field(op, "out_dtype")->default_value.dtype.bits, 0);
}

/* gp_call_op: a call by op name with its schema's defaults; errors name the op */
Test(ops, call_by_name) {
  GPVar *x = gp_var_new("x", NULL);
  GPExpr *arg = &x->base;
  const char *key = "groups";
  GPAttrValue v = gp_attr_int(2);
  GPExpr *c = gp_call_op("nn.conv2d", 2, (GPExpr *[]){arg, arg}, 1, &key, &v);
  cr_assert(c, "%s", gp_error_message());
  const GPCall *call = (const GPCall *)c;
  cr_expect_eq(call->op, (GPExpr *)gp_op_get("nn.conv2d"));
  cr_expect_eq(call->nargs, 2);
  cr_expect_eq(gp_attrs_int(call->attrs, "groups", 0), 2);
  cr_expect_str_eq(gp_attrs_get(call->attrs, "data_layout")->s, "NCHW"); /* a default */
  gp_release(c);
  cr_expect_null(gp_call_op("nn.no_such_op", 1, &arg, 0, NULL, NULL));
  cr_expect_eq(gp_error_kind(), GP_ERR_NOT_FOUND);
  cr_expect(strstr(gp_error_message(), "nn.no_such_op"), "%s", gp_error_message());
  gp_error_clear();
  key = "no_such_attr";
  cr_expect_null(gp_call_op("nn.relu", 1, &arg, 1, &key, &v));
  cr_expect_eq(gp_error_kind(), GP_ERR_VALUE);
  cr_expect(strstr(gp_error_message(), "nn.relu") && strstr(gp_error_message(), "no_such_attr"), "%s",
            gp_error_message());
  gp_error_clear();
  gp_release(x);
}

Test(ops, other_schemas) {
  const GPOp *op = gp_op_get("nn.avg_pool2d");
  static const char *const pool[] = {"pool_size", "strides",    "dilation",  "padding",
                                     "layout",    "out_layout", "ceil_mode", "count_include_pad"};
  cr_assert_eq(op->num_attrs, 8);
  for (int i = 0; i < 8; i++) cr_expect_str_eq(op->attrs[i].name, pool[i]);
  cr_expect(field(op, "pool_size")->required);
  cr_expect_eq(gp_op_get("nn.max_pool2d")->num_attrs, 7);
  op = gp_op_get("nn.batch_norm");
  cr_expect_eq(field(op, "axis")->default_value.i, 1);
  cr_expect_float_eq(field(op, "epsilon")->default_value.f, 1e-5, 1e-12);
  cr_expect_eq(field(op, "center")->default_value.i, 1);
  cr_expect_eq(field(op, "scale")->default_value.kind, GP_ATTR_BOOL);
  op = gp_op_get("nn.lrn");
  cr_expect_eq(field(op, "size")->default_value.i, 5);
  cr_expect_float_eq(field(op, "alpha")->default_value.f, 1e-4, 1e-12);
  cr_expect_float_eq(field(op, "beta")->default_value.f, 0.75, 1e-12);
  cr_expect_float_eq(field(op, "bias")->default_value.f, 2.0, 1e-12);
  op = gp_op_get("strided_slice");
  static const char *const ss[] = {"begin", "end", "strides", "slice_mode", "axes"};
  for (int i = 0; i < 5; i++) cr_expect_str_eq(op->attrs[i].name, ss[i]);
  cr_expect_str_eq(field(op, "slice_mode")->default_value.s, "end");
  cr_expect(field(gp_op_get("clip"), "a_min")->required);
  cr_expect_eq(field(gp_op_get("clip"), "a_max")->kind, GP_ATTR_FLOAT);
  cr_expect(field(gp_op_get("reshape"), "newshape")->required);
  cr_expect_eq(field(gp_op_get("split"), "indices_or_sections")->kind, GP_ATTR_NONE);
  cr_expect_eq(field(gp_op_get("sum"), "axis")->default_value.kind, GP_ATTR_NONE);
  cr_expect_eq(field(gp_op_get("nn.softmax"), "axis")->default_value.i, -1);
  cr_expect_float_eq(field(gp_op_get("nn.dropout"), "rate")->default_value.f, 0.5, 1e-12);
  cr_expect_float_eq(field(gp_op_get("nn.leaky_relu"), "alpha")->default_value.f, 0.25, 1e-12);
  cr_expect_eq(field(gp_op_get("nn.bias_add"), "axis")->default_value.i, 1);
  cr_expect_eq(field(gp_op_get("expand_dims"), "num_newaxis")->default_value.i, 1);
  cr_expect_eq(gp_op_get("nn.batch_flatten")->num_attrs, 0);
}

/* ---- elementwise and broadcasting */

Test(ops, broadcast_same_shape) {
  EXPECT(INFER("add", ARGS(F32(2, 3), F32(2, 3)), NOKV), F32(2, 3));
  EXPECT(INFER("power", ARGS(F32(4), F32(4)), NOKV), F32(4));
}

Test(ops, broadcast_rank_mismatch) {
  EXPECT(INFER("multiply", ARGS(F32(2, 3, 4), F32(3, 1)), NOKV), F32(2, 3, 4));
  EXPECT(INFER("subtract", ARGS(F32(5, 1, 4), F32(1, 3, 1)), NOKV), F32(5, 3, 4));
  EXPECT(INFER("divide", ARGS(SCALAR(GP_DT_F32), F32(2, 2)), NOKV), F32(2, 2));
  EXPECT(INFER("maximum", ARGS(F32(7), SCALAR(GP_DT_F32)), NOKV), F32(7));
}

Test(ops, broadcast_unknown_dims) {
  EXPECT(INFER("add", ARGS(F32(ANY, 3), F32(4, 1)), NOKV), F32(4, 3));
  EXPECT(INFER("add", ARGS(F32(ANY, 3), F32(1, 3)), NOKV), F32(ANY, 3));
  EXPECT(INFER("minimum", ARGS(F32(ANY), F32(ANY)), NOKV), F32(ANY));
}

Test(ops, broadcast_errors) {
  EXPECT_ERR(INFER("add", ARGS(F32(2, 3), F32(4)), NOKV), GP_ERR_TYPE,
             "shapes (2, 3) of lhs and (4) of rhs do not broadcast: 3 vs 4 at axis -1");
  EXPECT_ERR(INFER("add", ARGS(F32(2, 3), TY(GP_DT_I32, 2, 3)), NOKV), GP_ERR_TYPE,
             "data types of lhs (float32) and rhs (int32) do not match");
  const GPType *tup = TUP(F32(1), F32(1));
  EXPECT_ERR(INFER("add", ARGS(tup, F32(1)), NOKV), GP_ERR_TYPE, "lhs must be a tensor");
  EXPECT_ERR(INFER("add", ARGS(F32(1)), NOKV), GP_ERR_TYPE, "expects 2 arguments, got 1");
}

Test(ops, unary_identity) {
  static const char *const names[] = {"negative", "sqrt", "rsqrt", "exp",    "log",
                                      "abs",      "sigmoid", "tanh", "nn.relu"};
  for (size_t i = 0; i < GP_ARRAY_LEN(names); i++) {
    EXPECT(INFER(names[i], ARGS(F32(2, ANY, 3)), NOKV), F32(2, ANY, 3));
    EXPECT(INFER(names[i], ARGS(SCALAR(GP_DT_F64)), NOKV), SCALAR(GP_DT_F64));
  }
  EXPECT_ERR(INFER("exp", ARGS(TUP(F32(1))), NOKV), GP_ERR_TYPE, "data must be a tensor");
}

Test(ops, leaky_relu_clip_cast) {
  EXPECT(INFER("nn.leaky_relu", ARGS(F32(3)), KVS(KV("alpha", gp_attr_float(0.01)))), F32(3));
  EXPECT(INFER("clip", ARGS(F32(3, 4)),
               KVS(KV("a_min", gp_attr_int(0)), KV("a_max", gp_attr_float(6.0)))),
         F32(3, 4));
  EXPECT_ERR(INFER("clip", ARGS(F32(3)), KVS(KV("a_min", gp_attr_float(0)))), GP_ERR_VALUE,
             "a_max");
  EXPECT(INFER("cast", ARGS(F32(3, 4)), KVS(KV("dtype", gp_attr_dtype(GP_DT_I8)))),
         TY(GP_DT_I8, 3, 4));
  EXPECT(INFER("cast", ARGS(F32(2)), KVS(KV("dtype", gp_attr_str("float16")))),
         TY(GP_DT_F16, 2));
  EXPECT(INFER("cast", ARGS(F32(2)), KVS(KV("dtype", gp_attr_str("bool")))), TY(GP_DT_BOOL, 2));
  EXPECT_ERR(INFER("cast", ARGS(F32(2)), NOKV), GP_ERR_VALUE, "dtype");
}

/* ---- nn.conv2d */

Test(ops, conv2d_nchw_basic) {
  EXPECT(INFER("nn.conv2d", ARGS(F32(1, 3, 224, 224), F32(64, 3, 7, 7)),
               KVS(KV("strides", INTS(2, 2)), KV("padding", INTS(3, 3)),
                   KV("channels", gp_attr_int(64)), KV("kernel_size", INTS(7, 7)))),
         F32(1, 64, 112, 112));
  EXPECT(INFER("nn.conv2d", ARGS(F32(1, 3, 32, 32), F32(8, 3, 3, 3)), NOKV), F32(1, 8, 30, 30));
}

Test(ops, conv2d_padding_forms) {
  const GPType *d = F32(1, 3, 10, 10), *w = F32(8, 3, 3, 3);
  EXPECT(INFER("nn.conv2d", ARGS(d, w), KVS(KV("padding", INTS(1)))), F32(1, 8, 10, 10));
  EXPECT(INFER("nn.conv2d", ARGS(d, w), KVS(KV("padding", gp_attr_int(2)))), F32(1, 8, 12, 12));
  EXPECT(INFER("nn.conv2d", ARGS(d, w), KVS(KV("padding", INTS(1, 0)))), F32(1, 8, 10, 8));
  /* (top, left, bottom, right) */
  EXPECT(INFER("nn.conv2d", ARGS(d, w), KVS(KV("padding", INTS(1, 2, 0, 0)))), F32(1, 8, 9, 10));
  EXPECT_ERR(INFER("nn.conv2d", ARGS(d, w), KVS(KV("padding", INTS(1, 2, 3)))), GP_ERR_TYPE,
             "nn.conv2d: padding must have 1, 2 or 4 values, got [1, 2, 3]");
}

Test(ops, conv2d_stride_dilation) {
  const GPType *d = F32(1, 3, 10, 10), *w = F32(8, 3, 3, 3);
  EXPECT(INFER("nn.conv2d", ARGS(d, w), KVS(KV("dilation", INTS(2, 2)))), F32(1, 8, 6, 6));
  EXPECT(INFER("nn.conv2d", ARGS(d, w), KVS(KV("strides", INTS(2, 3)))), F32(1, 8, 4, 3));
  EXPECT(INFER("nn.conv2d", ARGS(d, w),
               KVS(KV("strides", INTS(2, 2)), KV("dilation", INTS(2, 1)), KV("padding", INTS(1)))),
         F32(1, 8, 4, 5));
  EXPECT_ERR(INFER("nn.conv2d", ARGS(d, w), KVS(KV("strides", INTS(0, 1)))), GP_ERR_TYPE,
             "strides [0, 1] must be >= 1");
  EXPECT_ERR(INFER("nn.conv2d", ARGS(d, w), KVS(KV("dilation", INTS(5, 5)))), GP_ERR_TYPE,
             "the window of height 3 (dilated to 11) is larger than the padded input height 10");
}

Test(ops, conv2d_groups) {
  /* depthwise */
  EXPECT(INFER("nn.conv2d", ARGS(F32(1, 32, 8, 8), F32(32, 1, 3, 3)),
               KVS(KV("groups", gp_attr_int(32)), KV("padding", INTS(1, 1)))),
         F32(1, 32, 8, 8));
  EXPECT(INFER("nn.conv2d", ARGS(F32(1, 32, 8, 8), F32(16, 16, 3, 3)),
               KVS(KV("groups", gp_attr_int(2)))),
         F32(1, 16, 6, 6));
  EXPECT_ERR(INFER("nn.conv2d", ARGS(F32(1, 32, 8, 8), F32(16, 16, 3, 3)),
                   KVS(KV("groups", gp_attr_int(4)))),
             GP_ERR_TYPE,
             "input channels 32 of data (shape (1, 32, 8, 8)) do not match weight input channels "
             "16 * groups 4");
  EXPECT_ERR(INFER("nn.conv2d", ARGS(F32(1, 32, 8, 8), F32(15, 16, 3, 3)),
                   KVS(KV("groups", gp_attr_int(2)))),
             GP_ERR_TYPE, "not divisible by groups 2");
  EXPECT_ERR(INFER("nn.conv2d", ARGS(F32(1, 32, 8, 8), F32(15, 16, 3, 3)),
                   KVS(KV("groups", gp_attr_int(0)))),
             GP_ERR_TYPE, "groups 0 must be >= 1");
}

Test(ops, conv2d_channel_mismatch_message) {
  EXPECT_ERR(INFER("nn.conv2d", ARGS(F32(1, 3, 224, 224), F32(64, 4, 3, 3)), NOKV), GP_ERR_TYPE,
             "nn.conv2d: input channels 3 of data (shape (1, 3, 224, 224)) do not match weight "
             "input channels 4 * groups 1");
  EXPECT_ERR(INFER("nn.conv2d", ARGS(F32(1, 3, 8, 8), F32(64, 3, 3, 3)),
                   KVS(KV("channels", gp_attr_int(32)))),
             GP_ERR_TYPE, "channels 32 does not match the output channels 64 of weight");
  EXPECT_ERR(INFER("nn.conv2d", ARGS(F32(1, 3, 8, 8), F32(64, 3, 3, 3)),
                   KVS(KV("kernel_size", INTS(5, 5)))),
             GP_ERR_TYPE, "kernel_size [5, 5] does not match weight (shape (64, 3, 3, 3))");
  EXPECT_ERR(INFER("nn.conv2d", ARGS(F32(1, 3, 8), F32(64, 3, 3, 3)), NOKV), GP_ERR_TYPE,
             "data has rank 3 (shape (1, 3, 8)) but layout NCHW has 4 axes");
}

Test(ops, conv2d_nhwc_hwio) {
  EXPECT(INFER("nn.conv2d", ARGS(F32(1, 224, 224, 3), F32(7, 7, 3, 64)),
               KVS(KV("strides", INTS(2, 2)), KV("padding", INTS(3, 3)),
                   KV("data_layout", gp_attr_str("NHWC")),
                   KV("kernel_layout", gp_attr_str("HWIO")))),
         F32(1, 112, 112, 64));
  /* depthwise NHWC / HWOI */
  EXPECT(INFER("nn.conv2d", ARGS(F32(1, 8, 8, 16), F32(3, 3, 16, 1)),
               KVS(KV("groups", gp_attr_int(16)), KV("padding", INTS(1)),
                   KV("data_layout", gp_attr_str("NHWC")),
                   KV("kernel_layout", gp_attr_str("HWOI")))),
         F32(1, 8, 8, 16));
  EXPECT_ERR(INFER("nn.conv2d", ARGS(F32(1, 224, 224, 3), F32(7, 7, 4, 64)),
                   KVS(KV("data_layout", gp_attr_str("NHWC")),
                       KV("kernel_layout", gp_attr_str("HWIO")))),
             GP_ERR_TYPE, "input channels 3 of data (shape (1, 224, 224, 3))");
  /* NCHW data with an NHWC output layout */
  EXPECT(INFER("nn.conv2d", ARGS(F32(1, 3, 8, 8), F32(4, 3, 1, 1)),
               KVS(KV("out_layout", gp_attr_str("NHWC")))),
         F32(1, 8, 8, 4));
  EXPECT_ERR(INFER("nn.conv2d", ARGS(F32(1, 3, 8, 8), F32(4, 3, 1, 1)),
                   KVS(KV("data_layout", gp_attr_str("NCW")))),
             GP_ERR_TYPE, "data_layout \"NCW\" is not supported: expected the axes NCHW");
  EXPECT_ERR(INFER("nn.conv2d", ARGS(F32(1, 3, 8, 8), F32(4, 3, 1, 1)),
                   KVS(KV("kernel_layout", gp_attr_str("OIHH")))),
             GP_ERR_TYPE, "kernel_layout \"OIHH\" is not a valid layout: repeated axis");
}

Test(ops, conv2d_blocked_layout_and_dtype) {
  EXPECT(INFER("nn.conv2d", ARGS(F32(1, 2, 8, 8, 16), F32(32, 32, 3, 3)),
               KVS(KV("data_layout", gp_attr_str("NCHW16c")))),
         F32(1, 2, 6, 6, 16));
  EXPECT(INFER("nn.conv2d", ARGS(TY(GP_DT_I8, 1, 3, 8, 8), TY(GP_DT_I8, 4, 3, 3, 3)),
               KVS(KV("out_dtype", gp_attr_str("int32")))),
         TY(GP_DT_I32, 1, 4, 6, 6));
  EXPECT(INFER("nn.conv2d", ARGS(TY(GP_DT_F16, 1, 3, 8, 8), TY(GP_DT_F16, 4, 3, 3, 3)), NOKV),
         TY(GP_DT_F16, 1, 4, 6, 6));
}

Test(ops, conv2d_unknown_dims) {
  EXPECT(INFER("nn.conv2d", ARGS(F32(ANY, 3, ANY, 32), F32(8, 3, 3, 3)), NOKV),
         F32(ANY, 8, ANY, 30));
  EXPECT(INFER("nn.conv2d", ARGS(F32(1, ANY, 32, 32), F32(8, 3, 3, 3)), NOKV), F32(1, 8, 30, 30));
}

/* ---- dense, bias_add, batch_norm, dropout */

Test(ops, dense) {
  EXPECT(INFER("nn.dense", ARGS(F32(4, 10), F32(20, 10)), NOKV), F32(4, 20));
  EXPECT(INFER("nn.dense", ARGS(F32(2, 4, 10), F32(20, 10)), KVS(KV("units", gp_attr_int(20)))),
         F32(2, 4, 20));
  EXPECT(INFER("nn.dense", ARGS(TY(GP_DT_I8, ANY, 10), TY(GP_DT_I8, 5, 10)),
               KVS(KV("out_dtype", gp_attr_dtype(GP_DT_I32)))),
         TY(GP_DT_I32, ANY, 5));
  EXPECT_ERR(INFER("nn.dense", ARGS(F32(4, 10), F32(20, 11)), NOKV), GP_ERR_TYPE,
             "input features 10 of data (shape (4, 10)) do not match in_features 11 of weight "
             "(shape (20, 11))");
  EXPECT_ERR(INFER("nn.dense", ARGS(F32(4, 10), F32(20, 10)), KVS(KV("units", gp_attr_int(8)))),
             GP_ERR_TYPE, "units 8 does not match weight (shape (20, 10))");
  EXPECT_ERR(INFER("nn.dense", ARGS(F32(4, 10), F32(10)), NOKV), GP_ERR_TYPE,
             "weight must have rank 2");
}

Test(ops, bias_add) {
  EXPECT(INFER("nn.bias_add", ARGS(F32(1, 8, 4, 4), F32(8)), NOKV), F32(1, 8, 4, 4));
  EXPECT(INFER("nn.bias_add", ARGS(F32(1, 4, 4, 8), F32(8)), KVS(KV("axis", gp_attr_int(-1)))),
         F32(1, 4, 4, 8));
  EXPECT_ERR(INFER("nn.bias_add", ARGS(F32(1, 8, 4, 4), F32(4)), NOKV), GP_ERR_TYPE,
             "bias (shape (4)) must have shape (8): data (shape (1, 8, 4, 4)) at axis 1");
  EXPECT_ERR(INFER("nn.bias_add", ARGS(F32(1, 8), F32(8)), KVS(KV("axis", gp_attr_int(2)))),
             GP_ERR_TYPE, "axis 2 is out of range for data of rank 2 (shape (1, 8))");
}

Test(ops, batch_norm_tuple) {
  const GPType *v = F32(16);
  const GPType *t = INFER("nn.batch_norm", ARGS(F32(2, 16, 5, 5), v, v, v, v), NOKV);
  EXPECT(t, TUP(F32(2, 16, 5, 5), F32(16), F32(16)));
  t = INFER("nn.batch_norm", ARGS(F32(2, 5, 5, 16), v, v, v, v), KVS(KV("axis", gp_attr_int(3))));
  EXPECT(t, TUP(F32(2, 5, 5, 16), F32(16), F32(16)));
  EXPECT_ERR(INFER("nn.batch_norm", ARGS(F32(2, 16, 5, 5), v, v, F32(8), v), NOKV), GP_ERR_TYPE,
             "moving_mean (shape (8)) must have shape (16)");
  EXPECT_ERR(INFER("nn.batch_norm", ARGS(F32(2, 16, 5, 5), v, v, v), NOKV), GP_ERR_TYPE,
             "expects 5 arguments, got 4");
}

Test(ops, dropout_tuple) {
  EXPECT(INFER("nn.dropout", ARGS(F32(3, 4)), KVS(KV("rate", gp_attr_float(0.1)))),
         TUP(F32(3, 4), F32(3, 4)));
}

/* ---- pools, softmax, lrn, batch_flatten */

Test(ops, max_pool2d) {
  EXPECT(INFER("nn.max_pool2d", ARGS(F32(1, 3, 32, 32)),
               KVS(KV("pool_size", INTS(2, 2)), KV("strides", INTS(2, 2)))),
         F32(1, 3, 16, 16));
  EXPECT(INFER("nn.max_pool2d", ARGS(F32(1, 64, 112, 112)),
               KVS(KV("pool_size", INTS(3, 3)), KV("strides", INTS(2, 2)),
                   KV("padding", INTS(1, 1)))),
         F32(1, 64, 56, 56));
  EXPECT(INFER("nn.max_pool2d", ARGS(F32(1, 32, 32, 3)),
               KVS(KV("pool_size", INTS(2, 2)), KV("strides", INTS(2, 2)),
                   KV("layout", gp_attr_str("NHWC")))),
         F32(1, 16, 16, 3));
  EXPECT_ERR(INFER("nn.max_pool2d", ARGS(F32(1, 3, 32, 32)), NOKV), GP_ERR_VALUE, "pool_size");
}

Test(ops, pool_ceil_mode) {
  const GPType *d = F32(1, 3, 7, 7);
  EXPECT(INFER("nn.max_pool2d", ARGS(d), KVS(KV("pool_size", INTS(2, 2)), KV("strides", INTS(2, 2)))),
         F32(1, 3, 3, 3));
  EXPECT(INFER("nn.max_pool2d", ARGS(d),
               KVS(KV("pool_size", INTS(2, 2)), KV("strides", INTS(2, 2)),
                   KV("ceil_mode", gp_attr_bool(true)))),
         F32(1, 3, 4, 4));
  EXPECT(INFER("nn.avg_pool2d", ARGS(d),
               KVS(KV("pool_size", INTS(3, 3)), KV("strides", INTS(2, 2)),
                   KV("ceil_mode", gp_attr_bool(true)), KV("count_include_pad", gp_attr_bool(true)))),
         F32(1, 3, 3, 3));
  /* asymmetric padding, dilation */
  EXPECT(INFER("nn.avg_pool2d", ARGS(d),
               KVS(KV("pool_size", INTS(3, 3)), KV("padding", INTS(0, 0, 1, 2)),
                   KV("dilation", INTS(2, 2)))),
         F32(1, 3, 4, 5));
  EXPECT(INFER("nn.max_pool2d", ARGS(F32(ANY, 3, ANY, 7)), KVS(KV("pool_size", INTS(2, 2)))),
         F32(ANY, 3, ANY, 6));
}

Test(ops, pool_errors) {
  EXPECT_ERR(INFER("nn.max_pool2d", ARGS(F32(1, 3, 2, 2)), KVS(KV("pool_size", INTS(3, 3)))),
             GP_ERR_TYPE, "the window of height 3 (dilated to 3) is larger than the padded input");
  EXPECT_ERR(INFER("nn.max_pool2d", ARGS(F32(1, 3, 8)),
                   KVS(KV("pool_size", INTS(2, 2)), KV("layout", gp_attr_str("NCW")))),
             GP_ERR_TYPE, "layout \"NCW\" must have axes H and W");
  EXPECT_ERR(INFER("nn.avg_pool2d", ARGS(F32(1, 3, 8, 8)), KVS(KV("pool_size", INTS(2, 2, 2)))),
             GP_ERR_TYPE, "pool_size must have 2 values, got [2, 2, 2]");
  EXPECT_ERR(INFER("nn.avg_pool2d", ARGS(F32(1, 3, 8)), KVS(KV("pool_size", INTS(2, 2)))),
             GP_ERR_TYPE, "data has rank 3 (shape (1, 3, 8)) but layout NCHW has 4 axes");
}

Test(ops, global_avg_pool2d) {
  EXPECT(INFER("nn.global_avg_pool2d", ARGS(F32(1, 512, 7, 7)), NOKV), F32(1, 512, 1, 1));
  EXPECT(INFER("nn.global_avg_pool2d", ARGS(F32(1, 7, 7, 512)), KVS(KV("layout", gp_attr_str("NHWC")))),
         F32(1, 1, 1, 512));
  EXPECT(INFER("nn.global_avg_pool2d", ARGS(F32(1, 2, 7, 7, 16)),
               KVS(KV("layout", gp_attr_str("NCHW16c")))),
         F32(1, 2, 1, 1, 16));
}

Test(ops, softmax_lrn_flatten) {
  EXPECT(INFER("nn.softmax", ARGS(F32(2, 10)), NOKV), F32(2, 10));
  EXPECT(INFER("nn.softmax", ARGS(F32(2, 10)), KVS(KV("axis", gp_attr_int(0)))), F32(2, 10));
  EXPECT_ERR(INFER("nn.softmax", ARGS(F32(2, 10)), KVS(KV("axis", gp_attr_int(2)))), GP_ERR_TYPE,
             "axis 2 is out of range");
  EXPECT(INFER("nn.lrn", ARGS(F32(1, 8, 4, 4)), KVS(KV("size", gp_attr_int(3)))), F32(1, 8, 4, 4));
  EXPECT(INFER("nn.batch_flatten", ARGS(F32(2, 3, 4, 5)), NOKV), F32(2, 60));
  EXPECT(INFER("nn.batch_flatten", ARGS(F32(ANY, 3, 4)), NOKV), F32(ANY, 12));
  EXPECT(INFER("nn.batch_flatten", ARGS(F32(2, ANY)), NOKV), F32(2, ANY));
  EXPECT_ERR(INFER("nn.batch_flatten", ARGS(SCALAR(GP_DT_F32)), NOKV), GP_ERR_TYPE, "scalar");
}

/* ---- concatenate */

Test(ops, concatenate) {
  EXPECT(INFER("concatenate", ARGS(TUP(F32(1, 2), F32(1, 3))), KVS(KV("axis", gp_attr_int(1)))),
         F32(1, 5));
  EXPECT(INFER("concatenate", ARGS(TUP(F32(1, 2), F32(4, 2), F32(2, 2))), NOKV), F32(7, 2));
  EXPECT(INFER("concatenate", ARGS(TUP(F32(1, 2), F32(1, 3))), KVS(KV("axis", gp_attr_int(-1)))),
         F32(1, 5));
  EXPECT(INFER("concatenate", ARGS(TUP(F32(ANY, 2), F32(3, 2))), NOKV), F32(ANY, 2));
  EXPECT(INFER("concatenate", ARGS(TUP(F32(2, ANY), F32(3, 4))), NOKV), F32(5, ANY));
  EXPECT(INFER("concatenate", ARGS(TUP(F32(2, 4))), NOKV), F32(2, 4));
}

Test(ops, concatenate_errors) {
  EXPECT_ERR(INFER("concatenate", ARGS(TUP(F32(1, 2), F32(2, 3))), KVS(KV("axis", gp_attr_int(1)))),
             GP_ERR_TYPE,
             "shapes must match except on the concatenation axis 1: field 0 has shape (1, 2), "
             "field 1 has shape (2, 3)");
  EXPECT_ERR(INFER("concatenate", ARGS(TUP(F32(1, 2), F32(1, 2, 3))), NOKV), GP_ERR_TYPE,
             "same rank");
  EXPECT_ERR(INFER("concatenate", ARGS(TUP(F32(1, 2), TY(GP_DT_I32, 1, 2))), NOKV), GP_ERR_TYPE,
             "same dtype: field 0 is float32, field 1 is int32");
  EXPECT_ERR(INFER("concatenate", ARGS(F32(1, 2)), NOKV), GP_ERR_TYPE,
             "data must be a tuple of tensors");
  EXPECT_ERR(INFER("concatenate", ARGS(TUP(F32(1, 2))), KVS(KV("axis", gp_attr_int(2)))),
             GP_ERR_TYPE, "axis 2 is out of range");
  EXPECT_ERR(INFER("concatenate", ARGS(TUP(F32(1), TUP(F32(1)))), NOKV), GP_ERR_TYPE,
             "field 1 of data must be a tensor");
}

/* ---- reshape */

#define RESHAPE(d, ...) INFER("reshape", ARGS(d), KVS(KV("newshape", INTS(__VA_ARGS__))))

Test(ops, reshape_special_values) {
  const GPType *d = F32(2, 3, 4);
  EXPECT(RESHAPE(d, 6, 4), F32(6, 4));
  EXPECT(RESHAPE(d, 6, -1), F32(6, 4));
  EXPECT(RESHAPE(d, -1), F32(24));
  EXPECT(RESHAPE(d, 0, -1), F32(2, 12));
  EXPECT(RESHAPE(d, 0, 0, -1), F32(2, 3, 4));
  EXPECT(RESHAPE(d, -1, 0), F32(8, 3)); /* 0 copies input dim 1 */
  EXPECT(RESHAPE(d, 2, -2), F32(2, 3, 4));
  EXPECT(RESHAPE(d, -2), F32(2, 3, 4));
  EXPECT(RESHAPE(d, -3, 4), F32(6, 4));
  EXPECT(RESHAPE(d, 0, -3), F32(2, 12));
  EXPECT(RESHAPE(d, -4, 1, 2, -2), F32(1, 2, 3, 4));
  EXPECT(RESHAPE(d, 2, -4, -1, 3, -2), F32(2, 1, 3, 4));
  EXPECT(RESHAPE(d, -4, 2, -1, -3), F32(2, 1, 12));
}

Test(ops, reshape_allowzero_and_unknown) {
  EXPECT(INFER("reshape", ARGS(F32(0, 3)),
               KVS(KV("newshape", INTS(0, 3)), KV("allowzero", gp_attr_bool(true)))),
         F32(0, 3));
  EXPECT(RESHAPE(F32(ANY, 3, 4), -1, 12), F32(ANY, 12));
  EXPECT(RESHAPE(F32(ANY, 3, 4), 0, -1), F32(ANY, 12));
  EXPECT(RESHAPE(F32(ANY, 3, 4), 0, -3), F32(ANY, 12));
  EXPECT(RESHAPE(F32(2, ANY), -1), F32(ANY));
}

Test(ops, reshape_errors) {
  const GPType *d = F32(2, 3, 4);
  EXPECT_ERR(RESHAPE(d, 5, -1), GP_ERR_TYPE,
             "newshape [5, -1] for data (shape (2, 3, 4)): cannot infer the -1 dimension: 24 "
             "elements are not divisible by 5");
  EXPECT_ERR(RESHAPE(d, 7), GP_ERR_TYPE, "the result (7) has 7 elements, data has 24");
  EXPECT_ERR(RESHAPE(d, -1, -1), GP_ERR_TYPE, "only one dimension can be -1");
  EXPECT_ERR(RESHAPE(d, -4, 5, -1, -2), GP_ERR_TYPE, "-4 cannot split dimension 2 into 5 * -1");
  EXPECT_ERR(RESHAPE(d, -4, -1, -1, -2), GP_ERR_TYPE, "at most one -1");
  EXPECT_ERR(RESHAPE(d, 0, 0, 0, 0), GP_ERR_TYPE, "0 at position 3 has no input dimension");
  EXPECT_ERR(RESHAPE(d, 2, 3, -3), GP_ERR_TYPE, "-3 at position 2 needs two input dimensions");
  EXPECT_ERR(RESHAPE(d, -5), GP_ERR_TYPE, "unsupported value -5");
  EXPECT_ERR(INFER("reshape", ARGS(d), NOKV), GP_ERR_VALUE, "newshape");
}

/* ---- transpose, expand_dims, squeeze */

Test(ops, transpose) {
  EXPECT(INFER("transpose", ARGS(F32(1, 2, 3)), NOKV), F32(3, 2, 1));
  EXPECT(INFER("transpose", ARGS(F32(1, 2, 3)), KVS(KV("axes", INTS(0, 2, 1)))), F32(1, 3, 2));
  EXPECT(INFER("transpose", ARGS(F32(1, 2, 3)), KVS(KV("axes", INTS(-1, 0, 1)))), F32(3, 1, 2));
  EXPECT_ERR(INFER("transpose", ARGS(F32(1, 2, 3)), KVS(KV("axes", INTS(0, 0, 1)))), GP_ERR_TYPE,
             "axes [0, 0, 1] is not a permutation: axis 0 repeats");
  EXPECT_ERR(INFER("transpose", ARGS(F32(1, 2, 3)), KVS(KV("axes", INTS(0, 1)))), GP_ERR_TYPE,
             "one entry per dimension");
  EXPECT_ERR(INFER("transpose", ARGS(F32(1, 2, 3)), KVS(KV("axes", INTS(0, 1, 3)))), GP_ERR_TYPE,
             "axis 3 is out of range");
}

Test(ops, expand_dims) {
  EXPECT(INFER("expand_dims", ARGS(F32(2, 3)), KVS(KV("axis", gp_attr_int(1)))), F32(2, 1, 3));
  EXPECT(INFER("expand_dims", ARGS(F32(2, 3)),
               KVS(KV("axis", gp_attr_int(1)), KV("num_newaxis", gp_attr_int(2)))),
         F32(2, 1, 1, 3));
  EXPECT(INFER("expand_dims", ARGS(F32(2, 3)), KVS(KV("axis", gp_attr_int(-1)))), F32(2, 3, 1));
  EXPECT(INFER("expand_dims", ARGS(F32(2, 3)), KVS(KV("axis", gp_attr_int(-3)))), F32(1, 2, 3));
  EXPECT(INFER("expand_dims", ARGS(SCALAR(GP_DT_F32)), KVS(KV("axis", gp_attr_int(0)))), F32(1));
  EXPECT(INFER("expand_dims", ARGS(F32(2)),
               KVS(KV("axis", gp_attr_int(0)), KV("num_newaxis", gp_attr_int(0)))),
         F32(2));
  EXPECT_ERR(INFER("expand_dims", ARGS(F32(2, 3)), KVS(KV("axis", gp_attr_int(3)))), GP_ERR_TYPE,
             "axis 3 is out of range [-3, 2]");
  EXPECT_ERR(INFER("expand_dims", ARGS(F32(2, 3)), NOKV), GP_ERR_VALUE, "axis");
}

Test(ops, squeeze) {
  EXPECT(INFER("squeeze", ARGS(F32(1, 3, 1, 4)), NOKV), F32(3, 4));
  EXPECT(INFER("squeeze", ARGS(F32(1, 3, 1, 4)), KVS(KV("axis", INTS(2)))), F32(1, 3, 4));
  EXPECT(INFER("squeeze", ARGS(F32(1, 3, 1, 4)), KVS(KV("axis", gp_attr_int(-2)))), F32(1, 3, 4));
  EXPECT(INFER("squeeze", ARGS(F32(1, ANY)), NOKV), F32(ANY));
  EXPECT_ERR(INFER("squeeze", ARGS(F32(1, 3, 1, 4)), KVS(KV("axis", INTS(1)))), GP_ERR_TYPE,
             "axis 1 of data (shape (1, 3, 1, 4)) has extent 3, not 1");
}

/* ---- full, zeros, ones */

Test(ops, init_ops) {
  EXPECT(INFER("full", ARGS(SCALAR(GP_DT_F32)), KVS(KV("shape", INTS(2, 3)))), F32(2, 3));
  EXPECT(INFER("full", ARGS(SCALAR(GP_DT_F32)),
               KVS(KV("shape", INTS(4)), KV("dtype", gp_attr_str("int32")))),
         TY(GP_DT_I32, 4));
  EXPECT_ERR(INFER("full", ARGS(F32(1)), KVS(KV("shape", INTS(4)))), GP_ERR_TYPE,
             "fill_value must be a scalar, got shape (1)");
  EXPECT(infer("zeros", NULL, 0,
               KVS(KV("shape", INTS(2, 2)), KV("dtype", gp_attr_str("float32")))),
         F32(2, 2));
  EXPECT(infer("ones", NULL, 0, KVS(KV("shape", INTS(3)), KV("dtype", gp_attr_dtype(GP_DT_I64)))),
         TY(GP_DT_I64, 3));
  EXPECT(infer("ones", NULL, 0, KVS(KV("shape", gp_attr_ints(0, NULL)), KV("dtype", gp_attr_str("bool")))),
         SCALAR(GP_DT_BOOL));
  EXPECT_ERR(infer("zeros", NULL, 0, KVS(KV("shape", INTS(2)))), GP_ERR_TYPE,
             "attribute dtype is required");
  EXPECT_ERR(infer("zeros", NULL, 0, KVS(KV("shape", INTS(2, -1)), KV("dtype", gp_attr_str("float32")))),
             GP_ERR_TYPE, "shape [2, -1] has a negative dimension");
}

/* ---- strided_slice */

#define SLICE(d, ...) INFER("strided_slice", ARGS(d), KVS(__VA_ARGS__))

Test(ops, strided_slice_basic) {
  const GPType *d = F32(10, 20);
  EXPECT(SLICE(d, KV("begin", INTS(2)), KV("end", INTS(8))), F32(6, 20));
  EXPECT(SLICE(d, KV("begin", INTS(0, 5)), KV("end", INTS(10, 100))), F32(10, 15));
  EXPECT(SLICE(d, KV("begin", INTS(1, 0)), KV("end", INTS(9, 20)), KV("strides", INTS(3, 7))),
         F32(3, 3));
  EXPECT(SLICE(d, KV("begin", INTS(5)), KV("end", INTS(100)), KV("axes", INTS(1))), F32(10, 15));
  EXPECT(SLICE(d, KV("begin", INTS(2, 3)), KV("end", INTS(4, 9)), KV("axes", INTS(-1, 0))),
         F32(6, 2));
  EXPECT(SLICE(F32(ANY, 20), KV("begin", INTS(0, 2)), KV("end", INTS(1, 4))), F32(ANY, 2));
}

Test(ops, strided_slice_negative) {
  const GPType *d = F32(10, 20);
  EXPECT(SLICE(d, KV("begin", INTS(-3)), KV("end", INTS(-1))), F32(2, 20));
  EXPECT(SLICE(d, KV("begin", INTS(-100)), KV("end", INTS(3))), F32(3, 20));
  EXPECT(SLICE(d, KV("begin", INTS(8)), KV("end", INTS(2)), KV("strides", INTS(-2))), F32(3, 20));
  EXPECT(SLICE(d, KV("begin", INTS(-1)), KV("end", INTS(-11)), KV("strides", INTS(-1))),
         F32(10, 20));
  EXPECT(SLICE(d, KV("begin", INTS(9)), KV("end", INTS(-100)), KV("strides", INTS(-3))),
         F32(4, 20));
}

Test(ops, strided_slice_size_mode) {
  const GPType *d = F32(10, 20);
  EXPECT(SLICE(d, KV("begin", INTS(1, 2)), KV("end", INTS(3, -1)),
               KV("slice_mode", gp_attr_str("size"))),
         F32(3, 18));
  EXPECT(SLICE(d, KV("begin", INTS(8)), KV("end", INTS(5)), KV("strides", INTS(-1)),
               KV("slice_mode", gp_attr_str("size"))),
         F32(2, 20));
}

Test(ops, strided_slice_errors) {
  const GPType *d = F32(10, 20);
  EXPECT_ERR(SLICE(d, KV("begin", INTS(5)), KV("end", INTS(2))), GP_ERR_TYPE,
             "begin 5 and end 2 (stride 1) select a negative range on axis 0 of data (shape (10, 20))");
  EXPECT_ERR(SLICE(d, KV("begin", INTS(0)), KV("end", INTS(2)), KV("strides", INTS(0))),
             GP_ERR_TYPE, "strides [0] has a zero stride");
  EXPECT_ERR(SLICE(d, KV("begin", INTS(0, 0, 0)), KV("end", INTS(1, 1, 1))), GP_ERR_TYPE,
             "more entries than data (shape (10, 20)) has axes");
  EXPECT_ERR(SLICE(d, KV("begin", INTS(0, 0)), KV("end", INTS(1)), KV("axes", INTS(1))),
             GP_ERR_TYPE, "must have one entry per axis");
  EXPECT_ERR(SLICE(d, KV("begin", INTS(0)), KV("end", INTS(1)), KV("axes", INTS(2))), GP_ERR_TYPE,
             "axes entry 2 is out of range");
  EXPECT_ERR(SLICE(d, KV("begin", INTS(0)), KV("end", INTS(1)), KV("slice_mode", gp_attr_str("x"))),
             GP_ERR_TYPE, "slice_mode \"x\" must be \"end\" or \"size\"");
}

/* ---- split */

Test(ops, split_sections) {
  EXPECT(INFER("split", ARGS(F32(6, 4)), KVS(KV("indices_or_sections", gp_attr_int(3)))),
         TUP(F32(2, 4), F32(2, 4), F32(2, 4)));
  EXPECT(INFER("split", ARGS(F32(6, 4)),
               KVS(KV("indices_or_sections", gp_attr_int(2)), KV("axis", gp_attr_int(-1)))),
         TUP(F32(6, 2), F32(6, 2)));
  EXPECT(INFER("split", ARGS(F32(ANY, 4)), KVS(KV("indices_or_sections", gp_attr_int(2)))),
         TUP(F32(ANY, 4), F32(ANY, 4)));
  EXPECT_ERR(INFER("split", ARGS(F32(6, 4)),
                   KVS(KV("indices_or_sections", gp_attr_int(4)))),
             GP_ERR_TYPE,
             "indices_or_sections 4 does not divide axis 0 of data (shape (6, 4)), extent 6");
  EXPECT_ERR(INFER("split", ARGS(F32(6, 4)), KVS(KV("indices_or_sections", gp_attr_int(0)))),
             GP_ERR_TYPE, "must be a positive number of sections");
}

Test(ops, split_indices) {
  EXPECT(INFER("split", ARGS(F32(6, 4)), KVS(KV("indices_or_sections", INTS(1, 4)))),
         TUP(F32(1, 4), F32(3, 4), F32(2, 4)));
  EXPECT(INFER("split", ARGS(F32(6, 4)),
               KVS(KV("indices_or_sections", INTS(1)), KV("axis", gp_attr_int(1)))),
         TUP(F32(6, 1), F32(6, 3)));
  EXPECT(INFER("split", ARGS(F32(ANY, 4)), KVS(KV("indices_or_sections", INTS(2)))),
         TUP(F32(2, 4), F32(ANY, 4)));
  EXPECT_ERR(INFER("split", ARGS(F32(6, 4)), KVS(KV("indices_or_sections", INTS(4, 2)))),
             GP_ERR_TYPE,
             "indices_or_sections [4, 2] must be strictly ascending and inside (0, 6)");
  EXPECT_ERR(INFER("split", ARGS(F32(6, 4)), KVS(KV("indices_or_sections", INTS(2, 6)))),
             GP_ERR_TYPE, "strictly ascending");
  EXPECT_ERR(INFER("split", ARGS(F32(6, 4)),
                   KVS(KV("indices_or_sections", gp_attr_str("x")))),
             GP_ERR_TYPE, "must be an int (sections) or a list of ints");
}

/* ---- layout_transform */

#define LT(d, s, t) \
  INFER("layout_transform", ARGS(d), KVS(KV("src_layout", gp_attr_str(s)), KV("dst_layout", gp_attr_str(t))))

Test(ops, layout_transform) {
  EXPECT(LT(F32(1, 3, 8, 9), "NCHW", "NHWC"), F32(1, 8, 9, 3));
  EXPECT(LT(F32(1, 8, 9, 3), "NHWC", "NCHW"), F32(1, 3, 8, 9));
  EXPECT(LT(F32(1, 32, 8, 8), "NCHW", "NCHW16c"), F32(1, 2, 8, 8, 16));
  EXPECT(LT(F32(1, 2, 8, 8, 16), "NCHW16c", "NCHW"), F32(1, 32, 8, 8));
  EXPECT(LT(F32(1, 2, 8, 8, 16), "NCHW16c", "NCHW8c"), F32(1, 4, 8, 8, 8));
  EXPECT(LT(F32(1, 2, 8, 8, 16), "NCHW16c", "NHWC"), F32(1, 8, 8, 32));
  EXPECT(LT(F32(64, 32, 3, 3), "OIHW", "OIHW16i16o"), TY(GP_DT_F32, 4, 2, 3, 3, 16, 16));
  EXPECT(LT(F32(ANY, 3, 8, 8), "NCHW", "NHWC"), F32(ANY, 8, 8, 3));
  EXPECT(LT(F32(1, ANY, 8, 8), "NCHW", "NCHW4c"), F32(1, ANY, 8, 8, 4));
}

Test(ops, layout_transform_errors) {
  EXPECT_ERR(LT(F32(1, 3, 8, 8), "NCHW", "NCW"), GP_ERR_TYPE,
             "src_layout NCHW and dst_layout NCW do not have the same axes (H)");
  EXPECT_ERR(LT(F32(1, 3, 8), "NCHW", "NHWC"), GP_ERR_TYPE,
             "data has rank 3 (shape (1, 3, 8)) but layout NCHW has 4 axes");
  EXPECT_ERR(LT(F32(1, 2, 8, 8, 8), "NCHW16c", "NCHW"), GP_ERR_TYPE,
             "has 8 at axis 4 but layout NCHW16c blocks it by 16");
  EXPECT_ERR(LT(F32(1, 3, 8, 8), "NCHW", "NHW16c"), GP_ERR_TYPE, "block axis c has no primal C");
  EXPECT_ERR(LT(F32(1, 3, 8, 8), "NC1HW", "NCHW"), GP_ERR_TYPE, "is not a valid layout");
}

/* ---- reductions */

Test(ops, reduce) {
  const GPType *d = F32(2, 3, 4);
  EXPECT(INFER("sum", ARGS(d), NOKV), SCALAR(GP_DT_F32));
  EXPECT(INFER("sum", ARGS(d), KVS(KV("keepdims", gp_attr_bool(true)))), F32(1, 1, 1));
  EXPECT(INFER("sum", ARGS(d), KVS(KV("axis", INTS(1)))), F32(2, 4));
  EXPECT(INFER("mean", ARGS(d), KVS(KV("axis", gp_attr_int(-1)), KV("keepdims", gp_attr_bool(true)))),
         F32(2, 3, 1));
  EXPECT(INFER("mean", ARGS(d), KVS(KV("axis", INTS(0, 2)))), F32(3));
  EXPECT(INFER("sum", ARGS(d), KVS(KV("axis", INTS(1)), KV("exclude", gp_attr_bool(true)))), F32(3));
  EXPECT(INFER("mean", ARGS(d),
               KVS(KV("axis", INTS(1)), KV("exclude", gp_attr_bool(true)),
                   KV("keepdims", gp_attr_bool(true)))),
         F32(1, 3, 1));
  EXPECT(INFER("sum", ARGS(F32(ANY, 4)), KVS(KV("axis", INTS(1)))), F32(ANY));
  EXPECT_ERR(INFER("sum", ARGS(d), KVS(KV("axis", INTS(3)))), GP_ERR_TYPE,
             "axis 3 is out of range for data of rank 3 (shape (2, 3, 4))");
  EXPECT_ERR(INFER("mean", ARGS(d), KVS(KV("axis", INTS(1, -2)))), GP_ERR_TYPE,
             "names axis 1 twice");
}

/* ---- attrs through the schema */

Test(ops, schema_rejects_unknown_attribute) {
  EXPECT_ERR(INFER("nn.conv2d", ARGS(F32(1, 3, 8, 8), F32(4, 3, 3, 3)), KVS(KV("stride", INTS(1, 1)))),
             GP_ERR_VALUE, "stride");
}

/* Tensor types are interned: one object per (dtype, shape), also through the per-thread cache of
 * recent types (more shapes than it holds, asked twice, and dtypes that differ in one field). */
Test(types, tensor_types_are_one_object_per_shape) {
  const GPType *first[20];
  int64_t shapes[20][3];
  int32_t ranks[20];
  for (int i = 0; i < 20; i++) {
    shapes[i][0] = i % 5, shapes[i][1] = i / 5, shapes[i][2] = 3;
    ranks[i] = 1 + i % 3;
  }
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < 20; i++) {
      const GPType *t = gp_type_tensor((DLDataType){kDLFloat, 32, 1}, ranks[i], shapes[i]);
      cr_assert(t, "%s", gp_error_message());
      if (round == 1) {
        cr_assert_eq(t, first[i], "shape %d asked again", i);
        continue;
      }
      first[i] = t;
      for (int j = 0; j < i; j++) {
        bool same = ranks[i] == ranks[j] && memcmp(shapes[i], shapes[j], (size_t)ranks[i] * sizeof(int64_t)) == 0;
        cr_assert_eq(t == first[j], same, "shapes %d and %d", i, j);
      }
    }
  const int64_t s4[1] = {4};
  const GPType *f32 = gp_type_tensor((DLDataType){kDLFloat, 32, 1}, 1, s4);
  const GPType *i32 = gp_type_tensor((DLDataType){kDLInt, 32, 1}, 1, s4);
  const GPType *f16 = gp_type_tensor((DLDataType){kDLFloat, 16, 1}, 1, s4);
  const GPType *lanes0 = gp_type_tensor((DLDataType){kDLFloat, 32, 0}, 1, s4);
  cr_assert(f32 != i32 && f32 != f16 && i32 != f16);
  cr_assert_eq(lanes0, f32, "lanes 0 reads as 1");
  cr_assert_eq(gp_type_tensor((DLDataType){kDLInt, 32, 1}, 1, s4), i32);
}
