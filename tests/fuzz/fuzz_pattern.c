/* fuzz_pattern.c -- pattern text (ir/pattern.c): compiled, then matched at every node of a
 * small fixed typed graph (where the index prefilter must accept every match), and as a
 * one-entry pattern table file. */
#include "fuzz_common.h"
#include "ir/pattern.h"

static GPModule *mod;
static GPNodeIndex ni;

static const char k_module[] =
    "#[version = \"0.0.5\"]\n"
    "def @main(%x: Tensor[(1, 4, 6, 6), float32], %w: Tensor[(4, 4, 3, 3), float32], %b: Tensor[(4), float32],\n"
    "          %d: Tensor[(16, 288), float32]) {\n"
    "  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);\n"
    "  %1 = nn.bias_add(%0, %b);\n"
    "  %2 = nn.relu(%1);\n"
    "  %3 = (%2, %1);\n"
    "  %4 = concatenate(%3, axis=1);\n"
    "  %5 = add(%4, %4);\n"
    "  %6 = nn.batch_flatten(%5);\n"
    "  %7 = nn.dense(%6, %d, units=16);\n"
    "  (sigmoid(%7), %3.0)\n"
    "}\n";

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  gp_ops_init();
  GPModule *m = gp_parse(k_module, sizeof k_module - 1, "fixed");
  if (!m) {
    fprintf(stderr, "fuzz_pattern: %s\n", gp_error_message());
    abort();
  }
  mod = gp_infer_types(m);
  gp_release(m);
  if (!mod || gp_ni_build(&ni, (GPExpr *)mod->funcs[0], 0) != 0) abort();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return -1;
  char *text = gp_strndup((const char *)data, size);
  if (strlen(text) != size) {
    gp_free(text);
    return -1;
  }
  GPPattern *p = gp_pattern_compile(text, "fuzz.pat", 1, 1);
  if (!p) {
    fz_expect_error("compile");
  } else {
    for (size_t i = 0; i < ni.n; i++) {
      GPMatch *mt = NULL;
      int rc = gp_pattern_match(p, ni.nodes[i], &mt);
      if (rc < 0) fz_expect_error("match");
      /* the index prefilter never rejects what the matcher accepts */
      if (rc == 1 && gp_kind(ni.nodes[i]) != GP_TI_OP && !gp_pattern_prematch(p, &ni, (int32_t)i)) {
        fprintf(stderr, "fuzz_pattern: the prefilter rejects a match of '%s' at node %zu\n", text, i);
        abort();
      }
      gp_free(mt);
    }
    gp_release(p);
  }
  GPBuf b = {0};
  gp_buf_puts(&b, "fz: ");
  gp_buf_put(&b, text, size);
  GPPatternTable *t = gp_pattern_table_parse(b.data, b.len, "fuzz.pat");
  if (t) gp_release(t);
  else fz_expect_error("table");
  gp_buf_free(&b);
  gp_free(text);
  return 0;
}
