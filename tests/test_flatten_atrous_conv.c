/* test_flatten_atrous_conv.c -- FlattenAtrousConv (passes/flatten_atrous_conv.c): golden
 * before/after files in tests/data/flatten_atrous_conv/ (TVM v0.12's
 * test_pass_flatten_atrous_conv.py cases, TVM's negative cases and our refusals, a file that
 * must come out unchanged serving as its own expectation) through th_golden (structural
 * equality with the typed expectation, the input unchanged, @main's numbers the same before and
 * after on the evaluator: the space_to_batch_nd / batch_to_space_nd kernels against conv2d with
 * dilation); the refusal notes; registration; the type relations of nn.space_to_batch_nd and
 * nn.batch_to_space_nd and their errors. */
#include "test_helpers.h"

#define ADATA "tests/data/flatten_atrous_conv/"
#define PASS "FlattenAtrousConv"

static void setup(void) { th_load_std(); }
static void teardown(void) { gp_plugins_unload_all(); }

TestSuite(flatten_atrous_conv, .init = setup, .fini = teardown);

static void golden(const char *name) {
  char b[256], a[256];
  snprintf(b, sizeof b, ADATA "%s.before.relay", name);
  snprintf(a, sizeof a, ADATA "%s.after.relay", name);
  th_golden(b, a, PASS, NULL);
}

/* A file the pass must leave as it is. */
static void unchanged(const char *name) {
  char f[256];
  snprintf(f, sizeof f, ADATA "%s.relay", name);
  th_golden(f, f, PASS, NULL);
}

/* The explain output of the pass on a file (a string to free). */
static char *explain(const char *name) {
  char f[256];
  snprintf(f, sizeof f, ADATA "%s.relay", name);
  GPModule *in = th_parse_file(f), *res;
  char *text = th_explain(in, PASS, NULL, &res);
  cr_assert(res, "%s: %s", f, gp_error_message());
  gp_release(res);
  gp_release(in);
  return text;
}

/* ------------------------------------------------------------------------------------------ */
/* TVM's cases                                                                                 */

Test(flatten_atrous_conv, tvm_positive_cases) {
  golden("block_shape_2"); /* paddings [[2, 3], [2, 3]], crops [[0, 1], [0, 1]] -> padding 2, dilation 2 */
  golden("block_shape_4"); /* paddings [[4, 7], [4, 7]], crops [[0, 3], [0, 3]] -> padding 4, dilation 4 */
  golden("surrounding");   /* adds before and after stay */
  golden("several");       /* two in a row, the second's data the first's result */
}

Test(flatten_atrous_conv, tvm_negative_cases) {
  unchanged("only_s2b_conv");
  unchanged("only_s2b");
  unchanged("only_conv_b2s");
  unchanged("only_b2s");
  unchanged("op_btwn_s2b_conv");
  unchanged("op_btwn_conv_b2s");
}

/* ------------------------------------------------------------------------------------------ */
/* Beyond TVM's tests                                                                          */

Test(flatten_atrous_conv, padding_from_paddings_and_crops) {
  /* TensorFlow's VALID atrous conv (paddings = crops): padding 0, where TVM's SAME padding
   * would change the result's shape */
  golden("valid_padding");
  /* HWIO full conv, batch 2, block (2, 3), kernel (3, 2): padding [2, 1, 2, 2] */
  golden("hwio_block_2x3");
}

Test(flatten_atrous_conv, refusals) {
  unchanged("nchw_kept");                  /* TVM: data layout NHWC only */
  unchanged("no_kernel_size_kept");        /* TVM reads kernel_size */
  unchanged("crops_exceed_paddings_kept"); /* would need a negative padding */
  unchanged("inner_padding_kept");
  unchanged("inner_strides_kept");
  unchanged("block_shapes_differ_kept");
  unchanged("pad_value_kept");
  unchanged("interior_used_kept");         /* the space_to_batch_nd is also an output */
}

Test(flatten_atrous_conv, refusal_notes_name_the_node) {
  static const struct {
    const char *file, *why;
  } cases[] = {
      {"nchw_kept", "the conv's data layout is NCHW, not NHWC"},
      {"no_kernel_size_kept", "the conv has no kernel_size"},
      {"crops_exceed_paddings_kept", "crops [1, 0] of spatial dim 1 exceed paddings [0, 1]"},
      {"inner_padding_kept", "the inner conv has strides, dilation or padding"},
      {"block_shapes_differ_kept", "block_shape [2, 2] of nn.space_to_batch_nd differs from [4, 1]"},
      {"pad_value_kept", "nn.space_to_batch_nd pads with 1, not 0"},
  };
  for (size_t i = 0; i < GP_ARRAY_LEN(cases); i++) {
    char *ex = explain(cases[i].file);
    char want[512];
    snprintf(want, sizeof want, "explain: " PASS ": note: left alone atrous_conv2d at " ADATA "%s.relay:5:3: %s",
             cases[i].file, cases[i].why);
    cr_expect(strstr(ex, want), "want \"%s\" in:\n%s", want, ex);
    cr_expect(strstr(ex, "fused 0 (atrous_conv2d 0); left alone 1"), "%s", ex);
    gp_free(ex);
  }
  char *ex = explain("several.before");
  cr_expect(strstr(ex, "fused 2 (atrous_conv2d 2); left alone 0"), "%s", ex);
  gp_free(ex);
}

Test(flatten_atrous_conv, registered_at_opt_level_0_requiring_infer_type) {
  GPPassEntry *e = gp_pass_acquire(PASS);
  cr_assert(e, "%s is not registered", PASS);
  cr_expect_eq(e->info.opt_level, 0);
  cr_expect_eq(e->info.kind, GP_PASS_TRANSFORM);
  cr_assert_eq(e->info.num_required, 1);
  cr_expect_str_eq(e->info.required[0], "InferType");
  cr_expect_str_eq(e->origin, "std");
  gp_pass_entry_release(e);
}

/* ------------------------------------------------------------------------------------------ */
/* nn.space_to_batch_nd / nn.batch_to_space_nd type relations                                  */

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int32_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define F32(...) gp_type_tensor(GP_DT_F32, NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))
#define INTS(...) gp_attr_ints(NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

/* The result type of op(data) with block_shape (NULL: the default) and paddings / crops. */
static const GPType *infer(const char *op_name, const GPType *data, const GPAttrValue *block, GPAttrValue pairs) {
  gp_error_clear();
  const GPOp *op = gp_op_get(op_name);
  cr_assert(op, "%s", gp_error_message());
  const char *keys[2] = {strcmp(op_name, "nn.space_to_batch_nd") == 0 ? "paddings" : "crops", "block_shape"};
  GPAttrValue vals[2] = {pairs, block ? *block : pairs};
  GPAttrs *attrs = gp_op_attrs_new(op, block ? 2 : 1, keys, vals);
  cr_assert(attrs, "%s", gp_error_message());
  const GPType *t = gp_op_infer(op, attrs, &data, 1);
  gp_release(attrs);
  return t;
}

static void expect_err(const GPType *got, const char *needle) {
  cr_assert_null(got, "expected an error containing \"%s\"", needle);
  cr_assert_eq(gp_error_kind(), GP_ERR_TYPE, "%s", gp_error_message());
  cr_assert(strstr(gp_error_message(), needle), "\"%s\" lacks \"%s\"", gp_error_message(), needle);
  gp_error_clear();
}

Test(flatten_atrous_conv, space_to_batch_nd_types) {
  GPAttrValue b22 = INTS(2, 2), b3 = INTS(3);
  cr_expect_eq(infer("nn.space_to_batch_nd", F32(1, 5, 5, 4), &b22, INTS(2, 3, 2, 3)), F32(4, 5, 5, 4));
  cr_expect_eq(infer("nn.space_to_batch_nd", F32(2, 4, 6, 3), NULL, INTS(0, 0, 1, 1)), F32(2, 4, 8, 3),
               "block_shape defaults to [1, 1]");
  cr_expect_eq(infer("nn.space_to_batch_nd", F32(2, 7, 3), &b3, INTS(1, 1)), F32(6, 3, 3));
  cr_expect_eq(infer("nn.space_to_batch_nd", F32(GP_DIM_ANY, GP_DIM_ANY, 6, 1), &b22, INTS(0, 0, 0, 0)),
               F32(GP_DIM_ANY, GP_DIM_ANY, 3, 1));
  expect_err(infer("nn.space_to_batch_nd", F32(1, 5, 5, 4), &b22, INTS(2, 2, 2, 3)),
             "spatial dim 1 of data (shape (1, 5, 5, 4)) padded by paddings [2, 2, 2, 3] is 9, not divisible by "
             "block_shape[0] = 2");
  expect_err(infer("nn.space_to_batch_nd", F32(1, 6, 6, 4), &b22, INTS(0, 0)),
             "paddings [0, 0] must have a (before, after) pair per spatial dim (4 for block_shape [2, 2])");
  expect_err(infer("nn.space_to_batch_nd", F32(1, 6, 6, 4), &b22, INTS(0, -2, 0, 0)),
             "paddings [0, -2, 0, 0] must not be negative");
  GPAttrValue b0 = INTS(2, 0);
  expect_err(infer("nn.space_to_batch_nd", F32(1, 6, 6, 4), &b0, INTS(0, 0, 0, 0)),
             "block_shape [2, 0] must be positive");
  expect_err(infer("nn.space_to_batch_nd", F32(4, 6), &b22, INTS(0, 0, 0, 0)),
             "data (shape (4, 6)) must have a batch dim and the 2 spatial dims of block_shape [2, 2]");
}

Test(flatten_atrous_conv, batch_to_space_nd_types) {
  GPAttrValue b22 = INTS(2, 2), b4 = INTS(4);
  cr_expect_eq(infer("nn.batch_to_space_nd", F32(4, 3, 3, 4), &b22, INTS(0, 1, 0, 1)), F32(1, 5, 5, 4));
  cr_expect_eq(infer("nn.batch_to_space_nd", F32(8, 2, 5), &b4, INTS(1, 2)), F32(2, 5, 5));
  cr_expect_eq(infer("nn.batch_to_space_nd", F32(GP_DIM_ANY, 3, GP_DIM_ANY, 1), &b22, INTS(0, 0, 0, 0)),
               F32(GP_DIM_ANY, 6, GP_DIM_ANY, 1));
  expect_err(infer("nn.batch_to_space_nd", F32(6, 3, 3, 4), &b22, INTS(0, 0, 0, 0)),
             "the batch of data (shape (6, 3, 3, 4)) is not divisible by the product 4 of block_shape [2, 2]");
  expect_err(infer("nn.batch_to_space_nd", F32(4, 3, 3, 4), &b22, INTS(0, 0, 3, 3)),
             "crops [0, 0, 3, 3] crop all of spatial dim 2 of data (shape (4, 3, 3, 4)) times block_shape[1] = 2");
  expect_err(infer("nn.batch_to_space_nd", F32(4, 3, 3, 4), &b22, INTS(0, 0, 0)),
             "crops [0, 0, 0] must have a (before, after) pair per spatial dim (4 for block_shape [2, 2])");
  expect_err(infer("nn.batch_to_space_nd", F32(4, 3, 3, 4), &b22, INTS(-1, 0, 0, 0)),
             "crops [-1, 0, 0, 0] must not be negative");
}

Test(flatten_atrous_conv, type_errors_name_the_op_and_the_location) {
  static const char text[] = "#[version = \"0.0.5\"]\n"
                             "def @main(%x: Tensor[(6, 3, 3, 4), float32]) {\n"
                             "  nn.batch_to_space_nd(%x, block_shape=[2, 2], crops=[0, 0, 0, 0])\n"
                             "}\n";
  GPModule *m = gp_parse(text, sizeof text - 1, "b2s.relay");
  cr_assert(m, "%s", gp_error_message());
  GPModule *t = gp_infer_types(m);
  cr_assert_null(t);
  cr_expect(strstr(gp_error_message(), "b2s.relay:3:3: error: in @main: nn.batch_to_space_nd: the batch of data"),
            "%s", gp_error_message());
  gp_error_clear();
  gp_release(m);
  /* crops without a block_shape field error: the schema requires crops / paddings */
  const GPOp *op = gp_op_get("nn.space_to_batch_nd");
  GPAttrs *a = gp_op_attrs_new(op, 0, NULL, NULL);
  cr_expect_null(a, "paddings is required");
  gp_error_clear();
  gp_release(a);
}
