/* test_repro.c -- the reproducers of issue #18 (tests/data/repro/, copied from ../shared/repro;
 * the plugin reproducers are tests/test_pass_check.c): each now fails cleanly with its message,
 * and printing deeply nested scopes is linear in the size of the output. */
#include "test_helpers.h"
#include "eval/eval.h"
#include "frontend/onnx/onnx.h"
#include "ir/ops/ops.h"

#include <unistd.h>

static void expect_msg(const char *want) {
  cr_assert(gp_error_message() && strstr(gp_error_message(), want), "'%s' lacks '%s'", gp_error_message(), want);
  gp_error_clear();
}

Test(repro, onnx_attention_past_key_rank_is_checked) {
  gp_ops_init();
  cr_assert_null(gp_onnx_import_file("tests/data/repro/onnx/attention_past_key_oob.min.onnx", NULL));
  expect_msg("(Attention, opset 24): past_key and past_value must have rank 4 (batch, heads, past, head size), "
             "have ranks 2 and 4");
}

Test(repro, onnx_reshape_dim_product_overflow_is_an_error) {
  gp_ops_init();
  cr_assert_null(gp_onnx_import_file("tests/data/repro/onnx/reshape_dim_product_overflow.min.onnx", NULL));
  expect_msg("(Reshape, opset 13): the element count of shape (0, 4398046511103, 4194303) overflows");
}

Test(repro, npy_huge_header_shape_is_refused_before_allocating) {
  GPTensor *t = gp_npy_read("tests/data/repro/npy/npy_header_alloc_5GB.min.npy");
  cr_assert_null(t);
  expect_msg("truncated .npy data: 0 bytes, expected 5333332960");
  t = gp_npy_read("tests/data/repro/npy/npy_header_alloc_286TB.npy");
  cr_assert_null(t);
  expect_msg("npy_header_alloc_286TB.npy:");
}

Test(repro, relay_reshape_newshape_overflow_is_a_type_error) {
  GPModule *m = th_parse_file("tests/data/repro/relay/manual_reshape_dim_mul_overflow.relay");
  cr_assert_null(gp_infer_types(m));
  cr_assert_eq(gp_error_kind(), GP_ERR_TYPE);
  expect_msg("manual_reshape_dim_mul_overflow.relay:3:3: error: in @main: reshape: newshape [4611686018427387905, 4] "
             "for data (shape (4)): the element count of (4611686018427387905, 4) overflows");
  gp_release(m);
}

Test(repro, tensor_types_bound_their_element_count) {
  int64_t big[3] = {1 << 20, 1 << 20, 1 << 20}; /* 2^60 */
  cr_assert_null(gp_type_tensor(GP_DT_F32, 3, big));
  expect_msg("tensor type of shape (1048576, 1048576, 1048576) has more than 2^56 elements");
  int64_t zero[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40}; /* 0 elements, but partial products overflow */
  cr_assert_null(gp_type_tensor(GP_DT_F32, 3, zero));
  gp_error_clear();
  int64_t ok[3] = {GP_DIM_ANY, 1 << 20, 1 << 20};
  cr_assert_not_null(gp_type_tensor(GP_DT_F32, 3, ok), "%s", gp_error_message());
  cr_assert_eq(gp_ops_dim_mul((int64_t)1 << 40, (int64_t)1 << 40), GP_DIM_OVERFLOW);
  cr_assert_eq(gp_ops_dim_mul(GP_DIM_ANY, 3), GP_DIM_ANY);
  cr_assert_eq(gp_ops_dim_mul(0, GP_DIM_OVERFLOW), 0);
}

/* "fn () {" nested `depth` times around %x (the reproducers' shape), or if/else chains. */
static char *nested(int depth, bool ifs) {
  GPBuf b = {0};
  gp_buf_puts(&b, "#[version = \"0.0.5\"]\n");
  gp_buf_puts(&b, ifs ? "def @main(%c: bool, %x: Tensor[(3), float32]) {\n  " : "def @main(%x: Tensor[(3), float32]) {\n  ");
  for (int i = 0; i < depth; i++) gp_buf_puts(&b, ifs ? "if (%c) { %x } else { " : "fn () {");
  gp_buf_puts(&b, "%x");
  for (int i = 0; i < depth; i++) gp_buf_puts(&b, ifs ? " }" : "}");
  gp_buf_puts(&b, "\n}\n");
  return gp_buf_take(&b);
}

/* Print of depth-nested scopes: reparses to the same module, and line k is indented 2k. */
static void print_nested(int depth, bool ifs) {
  char *text = nested(depth, ifs);
  GPModule *m = gp_parse(text, strlen(text), "nested.relay");
  cr_assert(m, "%s", gp_error_message());
  GPModule *t = gp_infer_types(m);
  cr_assert(t, "%s", gp_error_message());
  char *out = gp_print(t, GP_PRINT_TYPES);
  cr_assert(out);
  GPModule *back = gp_parse(out, strlen(out), "printed");
  cr_assert(back, "%s", gp_error_message());
  cr_assert(gp_module_equal(back, t), "the printed module does not parse back to the same module");
  /* the innermost scope's line is indented 2 * (depth + 1) spaces */
  size_t want = 2 * (size_t)(depth + 1), best = 0;
  for (const char *line = out; *line;) {
    size_t lead = strspn(line, " ");
    if (lead > best) best = lead;
    const char *nl = strchr(line, '\n');
    if (!nl) break;
    line = nl + 1;
  }
  cr_assert_eq(best, want, "deepest indentation %zu, want %zu", best, want);
  gp_free(out);
  gp_release(back);
  gp_release(t);
  gp_release(m);
  gp_free(text);
}

Test(repro, print_nested_functions_and_ifs, .timeout = 120) {
  print_nested(1000, false);
  print_nested(2000, false);
  print_nested(1000, true);
}

/* The command prints the reproducers (and 2,000 nested functions) within 600 MB of address
 * space (they took 3.7 GB and more than the machine had); plain build only (the sanitizers
 * reserve terabytes of address space). */
Test(repro, print_nested_within_bounded_memory, .timeout = 120) {
  if (strcmp(th_build_dir(), "build") != 0) return;
  char *n2000 = th_path("tests/repro_nested_2000.relay");
  char *text = nested(2000, false);
  FILE *f = fopen(n2000, "w");
  cr_assert(f);
  fputs(text, f);
  fclose(f);
  gp_free(text);
  const char *files[] = {"tests/data/repro/relay/print_nested_fn_1000_3.7GB.relay",
                         "tests/data/repro/relay/print_nested_if_1000_1.3GB.relay", n2000};
  for (size_t i = 0; i < 3; i++) {
    GPBuf b = {0};
    gp_buf_printf(&b, "ulimit -v 600000; %s/bin/graphpass opt %s --pipeline InferType -o /dev/null", th_build_dir(),
                  files[i]);
    char *out;
    int rc = th_run(b.data, &out);
    cr_assert_eq(rc, 0, "%s: %s", b.data, out);
    gp_free(out);
    gp_buf_free(&b);
  }
  unlink(n2000);
  gp_free(n2000);
}

/* The printer's internal escapes (ir/print.c) never come from names: a control byte in a var
 * name prints as '?', and the text around it is intact. */
Test(repro, print_names_with_control_bytes) {
  GPVar *v = gp_var_new("a\x01" "b\x02" "c\x03", NULL);
  GPExpr *args[1] = {&v->base};
  GPCall *c = gp_call_new((GPExpr *)gp_op_get("negative"), 1, args, NULL);
  GPVar *params[1] = {v};
  GPFunctionExpr *f = gp_function_new(1, params, &c->base, NULL, NULL);
  char *out = gp_print_expr(&f->base, 0);
  cr_assert(out);
  cr_assert(strstr(out, "fn (%a?b?c?) {\n  negative(%a?b?c?)\n}"), "%s", out);
  gp_free(out);
  gp_release(f);
  gp_release(c);
  gp_release(v);
}
