/* test_convert_layout.c -- ConvertLayout and AlterOpLayout (TVM v0.12's convert_layout.cc,
 * alter_op_layout.cc, test_pass_convert_op_layout.py, test_pass_alter_op_layout.py): golden
 * before/after files in tests/data/convert_layout through th_golden (the typed expectation, the
 * input unchanged, @main's numbers before and after), a module already in the desired layout,
 * bad config values, an AlterOpLayout hook set from the test and none (unchanged, with the
 * note), a deep chain (no recursion). */
#include "test_helpers.h"

#include <stdio.h>

#define DATA "tests/data/convert_layout/"
#define CL "ConvertLayout{desired_layouts=nn.conv2d=NCHW:default}"

static const GPHostAPI *H_;

static void setup(void) {
  th_load_std();
  H_ = graphpass_host_api();
}
static void teardown(void) {
  gp_plugins_unload_all();
  gp_registry_shutdown();
}

TestSuite(convert_layout, .init = setup, .fini = teardown);

static GPPassContext *ctx3(void) {
  GPPassContext *ctx = gp_ctx_new();
  cr_assert_eq(gp_ctx_set_opt_level(ctx, 3), 0, "%s", gp_error_message());
  return ctx;
}

static void golden(const char *name, const char *pipeline) {
  GPBuf b = {0}, a = {0};
  gp_buf_printf(&b, DATA "%s.before.relay", name);
  gp_buf_printf(&a, DATA "%s.after.relay", name);
  GPPassContext *ctx = ctx3();
  th_golden_ctx(b.data, a.data, pipeline, ctx);
  gp_ctx_free(ctx);
  gp_buf_free(&b);
  gp_buf_free(&a);
}

static char *run_explained(const char *path, const char *pipeline, GPModule **out) {
  GPModule *in = th_parse_file(path);
  GPPassContext *ctx = ctx3();
  char *text = th_explain(in, pipeline, ctx, out);
  gp_ctx_free(ctx);
  gp_release(in);
  return text;
}

Test(convert_layout, conv) { golden("conv", CL); }
Test(convert_layout, conv_bias_add_relu) { golden("conv_bias_relu", CL); }
Test(convert_layout, conv_batch_norm) { golden("conv_bn", CL); }
/* conv2d_transpose with TVM's default kernel layout (IOHW: weight (C, channels / groups, k, k)),
 * grouped, strided, with output_padding: to NHWC (kernel HWIO), and an NHWC one back to NCHW
 * (kernel IOHW); the evaluator runs both layouts */
Test(convert_layout, conv2d_transpose_to_nhwc) {
  golden("conv2d_transpose", "ConvertLayout{desired_layouts=\"nn.conv2d_transpose=NHWC:default\"}");
}
Test(convert_layout, conv2d_transpose_to_nchw) {
  golden("conv2d_transpose_nchw", "ConvertLayout{desired_layouts=\"nn.conv2d_transpose=NCHW:default\"}");
}
Test(convert_layout, pooling_and_global_pooling) { golden("pool", CL); }
/* global_max_pool2d follows its input (layout NCHW, the default); desired for itself alone it
 * takes layout and out_layout NCHW between two layout_transforms, the NHWC conv kept */
Test(convert_layout, global_max_pool) {
  golden("global_max_pool", CL);
  GPPassContext *ctx = ctx3();
  th_golden_ctx(DATA "global_max_pool.before.relay", DATA "global_max_pool_desired.after.relay",
                "ConvertLayout{desired_layouts=\"nn.global_max_pool2d=NCHW\"}", ctx);
  gp_ctx_free(ctx);
}
/* TVM's Resize2D relation, an NCHW conv to NHWC: a resize whose layout is its input's old one
 * follows the new (layout="NHWC"), a chain of two as well; one whose layout (NHWC) is not its
 * input's old layout (NCHW) keeps it and gets the input back in NCHW */
Test(convert_layout, resize2d_follows_its_input) {
  golden("resize2d", "ConvertLayout{desired_layouts=\"nn.conv2d=NHWC:default\"}");
}
/* TVM v0.12 registers no layout relation for image.resize3d: after an NCDHW conv3d converted to
 * NDHWC it keeps NCDHW and its input goes back */
Test(convert_layout, resize3d_has_no_relation) {
  golden("resize3d_keeps", "ConvertLayout{desired_layouts=\"nn.conv3d=NDHWC:default\"}");
}
/* a pool that reads its input in other axes (HNBW over an NHWC conv's output) has no relation:
 * it gets its input back in the layout it read (the pass used to fail: "different axes") */
Test(convert_layout, pool_reading_other_axes_keeps_its_input) { golden("pool_other_axes", CL); }
/* a pool whose own layout names other axes (HNBW) than the desired NHWC keeps it, with a note
 * (the pass used to fail: "different axes"); the NCHW pool beside it converts */
Test(convert_layout, desired_layout_skips_a_pool_of_other_axes) {
  golden("pool_desired_other_axes", "ConvertLayout{desired_layouts=\"nn.max_pool2d=NHWC,nn.avg_pool2d=NHWC\"}");
}
Test(convert_layout, concatenate_of_two_convs) { golden("concat", CL); }
Test(convert_layout, pad) { golden("pad", CL); }
Test(convert_layout, mean_over_h_w) { golden("mean", CL); }
/* TVM's ReduceInferCorrectLayout for sum, max, min, prod: the axes follow their letters (a
 * negative one too) in the new layout's order; with keepdims the output keeps every letter (a
 * layout_transform back at the end), without it the reduced letters leave, so the output needs a
 * transform only when the letters left are in another order (W reduced: NCH -> NHC; with
 * exclude, the kept letters are the axes: CW -> WC) */
Test(convert_layout, sum_max_min_prod_keepdims) { golden("reduce_keepdims", CL); }
Test(convert_layout, sum_max_min_prod_without_keepdims) { golden("reduce_dropdims", CL); }
/* variance (and std, its sqrt): both inputs, the data and the mean kept with keepdims, in the
 * new layout; the axes follow as for the other reductions */
Test(convert_layout, variance_and_std) { golden("variance_std", CL); }
Test(convert_layout, argmax_argmin) { golden("argmax_argmin", CL); }
/* TVM v0.12 registers a layout relation for all but none for any: any's input goes back to
 * NHWC, and its axes stay */
Test(convert_layout, all_follows_any_has_no_relation) { golden("any_all", CL); }
Test(convert_layout, add_of_two_branches) { golden("add_branches", CL); }
Test(convert_layout, broadcast_with_constants) { golden("bcast_const", CL); }
Test(convert_layout, chain_only_boundaries) { golden("chain", CL); }
Test(convert_layout, adjacent_pairs_cancel) { golden("cancel", CL); }
/* TVM's Transpose, Squeeze, StridedSlice, Split, PRelu, Normalization and L2Normalize
 * relations: the transposes' axes follow their letters (the output keeps its layout), the
 * squeezed letters leave, begin / end / strides (or axes) are permuted, split's axis follows,
 * prelu keeps its data's old layout, the norms' axes follow. */
Test(convert_layout, transpose_absorbs_the_change) { golden("transpose", CL); }
Test(convert_layout, squeeze_with_and_without_axes) { golden("squeeze", CL); }
Test(convert_layout, strided_slice_begin_end_strides_and_axes) { golden("strided_slice", CL); }
Test(convert_layout, split_axis) { golden("split", CL); }
Test(convert_layout, prelu_keeps_layout_norms_follow) { golden("prelu_norms", CL); }

/* instance_norm's statistics exclude axis 0: a layout that moves N away from 0 (HWNC) is
 * refused and the norm keeps NHWC (no numeric check: the evaluator has no HWNC conv2d). */
Test(convert_layout, instance_norm_refuses_a_layout_that_moves_n) {
  GPModule *in = th_parse_file(DATA "instance_norm_keeps.before.relay");
  GPPassContext *ctx = ctx3();
  GPModule *out = gp_run_pipeline(in, "ConvertLayout{desired_layouts=nn.conv2d=HWNC:default}", ctx);
  cr_assert(out, "%s", gp_error_message());
  GPModule *want_text = th_parse_file(DATA "instance_norm_keeps.after.relay");
  GPModule *want = gp_infer_types(want_text);
  cr_assert(want, "%s", gp_error_message());
  th_assert_module_eq(out, want);
  gp_release(want_text);
  gp_release(want);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
}

Test(convert_layout, quoted_list_and_config_key) {
  GPPassContext *c3 = ctx3();
  th_golden_ctx(DATA "pool.before.relay", DATA "pool_desired.after.relay",
                "ConvertLayout{desired_layouts=\"nn.conv2d=NCHW:OIHW, nn.max_pool2d=NCHW\"}", c3);
  gp_ctx_free(c3);
  static const char *const cfg[] = {"ConvertLayout.desired_layouts", "nn.conv2d=NCHW", NULL};
  GPPassContext *ctx = ctx3();
  for (const char *const *c = cfg; *c; c += 2) cr_assert_eq(gp_ctx_set_config(ctx, c[0], c[1]), 0);
  th_golden_ctx(DATA "conv.before.relay", DATA "conv.after.relay", "ConvertLayout", ctx);
  gp_ctx_free(ctx);
}

Test(convert_layout, already_in_desired_layout_is_unchanged) {
  GPModule *out;
  char *text = run_explained(DATA "nchw.before.relay", CL, &out);
  cr_assert(out, "%s", gp_error_message());
  cr_assert(strstr(text, "0 layout_transforms inserted"), "%s", text);
  gp_free(text);
  gp_release(out);
  GPPassContext *ctx = ctx3();
  th_golden_ctx(DATA "nchw.before.relay", DATA "nchw.before.relay", CL, ctx);
  gp_ctx_free(ctx);
}

Test(convert_layout, no_desired_layouts_note) {
  GPModule *out;
  char *text = run_explained(DATA "conv.before.relay", "ConvertLayout", &out);
  cr_assert(out, "%s", gp_error_message());
  cr_assert(strstr(text, "no desired layouts"), "%s", text);
  gp_free(text);
  gp_release(out);
}

static void bad_config(const char *value, const char *needle) {
  GPModule *in = th_parse_file(DATA "conv.before.relay");
  GPPassContext *ctx = ctx3();
  cr_assert_eq(gp_ctx_set_config(ctx, "ConvertLayout.desired_layouts", value), 0, "%s", gp_error_message());
  GPModule *out = gp_run_pipeline(in, "ConvertLayout", ctx);
  cr_assert_null(out, "%s should be refused", value);
  const char *msg = gp_error_message();
  cr_assert(strstr(msg, "ConvertLayout.desired_layouts"), "%s", msg);
  cr_assert(strstr(msg, "pass ConvertLayout"), "%s", msg);
  cr_assert(strstr(msg, needle), "want '%s' in: %s", needle, msg);
  gp_ctx_free(ctx);
  gp_release(in);
}

Test(convert_layout, bad_config_values) {
  bad_config("nn.conv2d", "\"nn.conv2d\": expected op=data_layout");
  bad_config("nn.conv2d=NCHW4c:default", "NCHW4c is not a plain layout");
  bad_config("nn.conv2d=default", "cannot be \"default\"");
  bad_config("nn.dense=NC", "op nn.dense has no layout conversion");
  bad_config("nn.conv2d=NCHW,nn.conv2d=NHWC", "given twice");
  bad_config("nn.conv2d=NCDHW", "does not have the axes NCHW");
  bad_config("nn.conv2d=CHWN", "a default kernel layout needs");
  bad_config("nn.conv2d=NCHW:OIHX", "kernel layout OIHX does not have the axes OIHW");
  bad_config("nn.max_pool2d=NCHW:NCHW", "takes one layout");
  bad_config("nn.conv2d=NCHW:OIHW:X", "at most two layouts");
  bad_config("nn.conv2d=NCHW,,", "an empty entry");
}

/* A long chain: no recursion on depth. */
Test(convert_layout, deep_chain) {
  GPBuf b = {0};
  gp_buf_printf(&b, "#[version = \"0.0.5\"]\ndef @main(%%x: Tensor[(1, 4, 4, 3), float32], %%w: Tensor[(1, 1, 3, 3), "
                    "float32]) {\n  %%0 = nn.conv2d(%%x, %%w, channels=3, kernel_size=[1, 1], data_layout=\"NHWC\", "
                    "kernel_layout=\"HWIO\");\n");
  int n = 20000;
  for (int i = 1; i <= n; i++) gp_buf_printf(&b, "  %%%d = nn.relu(%%%d);\n", i, i - 1);
  gp_buf_printf(&b, "  %%%d\n}\n", n);
  GPModule *in = gp_parse(b.data, b.len, "deep");
  cr_assert(in, "%s", gp_error_message());
  GPPassContext *ctx = ctx3();
  GPModule *out = gp_run_pipeline(in, CL, ctx);
  cr_assert(out, "%s", gp_error_message());
  GPExpr **nodes;
  size_t cnt;
  cr_assert_eq(gp_post_order(out->funcs[0]->body, &nodes, &cnt), 0);
  int lts = 0;
  for (size_t i = 0; i < cnt; i++)
    if (nodes[i]->obj.type_index == GP_TI_CALL && ((GPCall *)nodes[i])->op->obj.type_index == GP_TI_OP &&
        !strcmp(((const GPOp *)((GPCall *)nodes[i])->op)->name, "layout_transform"))
      lts++;
  free(nodes);
  cr_assert_eq(lts, 3, "layout_transforms: %d", lts);
  gp_release(out);
  gp_release(in);
  gp_ctx_free(ctx);
  gp_buf_free(&b);
}

/* ---- AlterOpLayout */

static const GPOp *op(const char *name) {
  const GPOp *o = H_->op_get(name);
  cr_assert(o, "%s", H_->error_message());
  return o;
}

static void set_hook(const char *name, GPPackedFunc *f) {
  GPAny v = {0};
  if (f) {
    v.type_index = GP_TI_FUNCTION;
    v.v_obj = &f->obj;
  }
  cr_assert_eq(H_->op_set_attr(op(name), GP_OP_ATTR_ALTER_OP_LAYOUT, &v, 10), 0, "%s", H_->error_message());
}

static int hook_calls;

/* nn.conv2d NCHW/OIHW -> the same conv2d with kernel layout OHWI */
static int conv_kernel_ohwi(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  cr_assert_eq(nargs, 2);
  cr_assert_eq(args[0].type_index, GP_TI_CALL);
  cr_assert_eq(args[1].type_index, GP_TI_TYPE);
  hook_calls++;
  GPCall *c = (GPCall *)args[0].v_obj;
  const char *key = "kernel_layout";
  GPAttrValue v = {.kind = GP_ATTR_STR, .s = "OHWI"};
  const GPAttrs *a = c->attrs;
  const char **keys = gp_malloc((size_t)a->n * sizeof *keys);
  GPAttrValue *vals = gp_malloc((size_t)a->n * sizeof *vals);
  for (int32_t i = 0; i < a->n; i++) {
    keys[i] = a->keys[i];
    vals[i] = strcmp(a->keys[i], key) ? a->values[i] : v;
  }
  GPAttrs *na = H_->op_attrs_new(op("nn.conv2d"), a->n, keys, vals);
  gp_free(keys);
  gp_free(vals);
  cr_assert(na, "%s", H_->error_message());
  GPCall *nc = H_->call_new(c->op, c->nargs, c->args, na);
  gp_release(na);
  result->type_index = GP_TI_CALL;
  result->v_obj = &nc->base.obj;
  return 0;
}

static int returns_tuple(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self, (void)nargs;
  GPCall *c = (GPCall *)args[0].v_obj;
  GPTuple *t = H_->tuple_new(1, &c->args[0]);
  result->type_index = GP_TI_TUPLE;
  result->v_obj = &t->base.obj;
  return 0;
}

Test(convert_layout, alter_op_layout_hook) {
  GPPackedFunc *f = H_->func_new(NULL, conv_kernel_ohwi, NULL);
  set_hook("nn.conv2d", f);
  gp_release(f);
  golden("alter", "AlterOpLayout");
  cr_assert(hook_calls >= 1);
  GPModule *out;
  char *text = run_explained(DATA "alter.before.relay", "AlterOpLayout", &out);
  cr_assert(out, "%s", gp_error_message());
  cr_assert(strstr(text, "1 of 1 calls with a FTVMAlterOpLayout hook altered, 1 layout_transforms inserted"), "%s",
            text);
  gp_free(text);
  gp_release(out);
  set_hook("nn.conv2d", NULL);
}

Test(convert_layout, alter_op_layout_hook_returning_a_tuple_is_an_error) {
  GPPackedFunc *f = H_->func_new(NULL, returns_tuple, NULL);
  set_hook("nn.conv2d", f);
  gp_release(f);
  GPModule *in = th_parse_file(DATA "alter.before.relay");
  GPPassContext *ctx = ctx3();
  GPModule *out = gp_run_pipeline(in, "AlterOpLayout", ctx);
  cr_assert_null(out);
  const char *msg = gp_error_message();
  cr_assert(strstr(msg, "pass AlterOpLayout"), "%s", msg);
  cr_assert(strstr(msg, "hook of nn.conv2d at " DATA "alter.before.relay:3:"), "%s", msg);
  cr_assert(strstr(msg, "returned a tuple"), "%s", msg);
  gp_ctx_free(ctx);
  gp_release(in);
  set_hook("nn.conv2d", NULL);
}

Test(convert_layout, alter_op_layout_without_hooks_is_unchanged) {
  GPModule *out;
  char *text = run_explained(DATA "alter.before.relay", "AlterOpLayout", &out);
  cr_assert(out, "%s", gp_error_message());
  cr_assert(strstr(text, "target llvm registers no FTVMAlterOpLayout hook here: layouts unchanged (NCHW stays NCHW)"), "%s", text);
  gp_free(text);
  gp_release(out);
  GPPassContext *ctx = ctx3();
  th_golden_ctx(DATA "alter.before.relay", DATA "alter.before.relay", "AlterOpLayout", ctx);
  gp_ctx_free(ctx);
}
