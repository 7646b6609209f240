/*
 * pattern_plugin.c -- an out-of-tree test plugin built with only `-I abi`, which uses the
 * pattern layer of ABI 1.2 as a vendor would:
 *  - the pass "ExtDropDoubleNegative" (opt-level 0) rewrites negative(negative(%x)) into %x with
 *    GPHostAPI.pattern_rewrite, compiling its pattern once at initialize;
 *  - the pattern table "ext.activations" (relu after a conv2d, or any sigmoid), with a check
 *    function that refuses sigmoids of rank below 4, registered for MergeComposite{table=...}
 *    and removed again in finalize (unless GP_PATTERN_PLUGIN_KEEP_TABLE is set: the host must
 *    remove it with the plugin then).
 * Built a second time with -DGP_TEST_FAKE_MAJOR=2 (refused by the host).
 */
#include "graphpass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GP_TEST_FAKE_MAJOR
#define EXT_ABI_VERSION ((uint32_t)((GP_TEST_FAKE_MAJOR) << 16 | 0))
#else
#define EXT_ABI_VERSION GP_ABI_VERSION
#endif

static const GPHostAPI *host;
static GPPattern *double_neg; /* owned from initialize to finalize */

static GPExpr *drop(void *user, const GPMatch *m) {
  (void)user;
  /* captures[0] is %x, a node of the rewritten graph */
  return (GPExpr *)gp_retain(m->captures[0]);
}

static int drop_double_negative(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  if (nargs < 1 || args[0].type_index != GP_TI_MODULE || !args[0].v_obj) {
    host->error_set(GP_ERR_VALUE, "ExtDropDoubleNegative: expected a module as argument 0");
    return -1;
  }
  const GPModule *mod = (const GPModule *)args[0].v_obj;
  GPModule *out = host->module_copy(mod);
  if (!out) return -1;
  const GPPattern *pats[1] = {double_neg};
  for (int32_t i = 0; i < mod->num_functions; i++) {
    GPRewriteSpec spec;
    memset(&spec, 0, sizeof spec);
    spec.struct_size = sizeof spec;
    spec.abi_version = GP_ABI_VERSION;
    spec.num_patterns = 1;
    spec.patterns = pats;
    spec.rewrite = drop;
    GPExpr *nf = host->pattern_rewrite(&mod->funcs[i]->base, &spec);
    if (!nf) {
      gp_release(out);
      return -1;
    }
    int rc = 0;
    if (nf != &mod->funcs[i]->base) rc = host->module_add(out, mod->gvars[i]->name, (GPFunctionExpr *)nf, 1);
    gp_release(nf);
    if (rc != 0) {
      gp_release(out);
      return -1;
    }
  }
  result->type_index = GP_TI_MODULE;
  result->v_obj = &out->obj;
  return 0;
}

/* The table's check: [root] -> bool. */
static int rank4_only(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  if (nargs != 1 || args[0].type_index < GP_TI_IR_BEGIN || args[0].type_index >= GP_TI_IR_END) {
    host->error_set(GP_ERR_VALUE, "ext.activations check: expected one expression");
    return -1;
  }
  const GPExpr *root = (const GPExpr *)args[0].v_obj;
  const GPType *t = root->checked_type;
  result->type_index = GP_TI_BOOL;
  result->v_int64 = t && t->kind == GP_TYPE_TENSOR && t->n >= 4;
  return 0;
}

static int pat_initialize(const GPHostAPI *h) {
  if (!h || GP_ABI_MAJOR_OF(h->abi_version) != GP_ABI_VERSION_MAJOR || !GP_HAS_FIELD(h, GPHostAPI, pattern_table_get)) {
    if (h && GP_HAS_FIELD(h, GPHostAPI, error_set))
      h->error_set(GP_ERR_VERSION, "pattern_plugin needs graphpass ABI %d.2 or later", GP_ABI_VERSION_MAJOR);
    return -1;
  }
  host = h;
  double_neg = host->pattern_compile("negative(negative(%x))", "pattern_plugin", 1, 1);
  if (!double_neg) return -1;
  GPPassInfo info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  info.abi_version = GP_ABI_VERSION;
  info.name = "ExtDropDoubleNegative";
  info.opt_level = 0;
  info.kind = GP_PASS_TRANSFORM;
  info.func = drop_double_negative;
  info.help = "negative(negative(x)) -> x (test plugin, written on the pattern layer)";
  if (host->pass_register(&info, 0) != 0) return -1;
  GPPattern *p[2] = {host->pattern_compile("nn.relu(nn.conv2d(_, _))", "pattern_plugin", 1, 1),
                     host->pattern_compile("sigmoid(_)", "pattern_plugin", 2, 1)};
  GPPackedFunc *check = host->func_new(NULL, rank4_only, NULL);
  int rc = -1;
  if (p[0] && p[1] && check) {
    const char *names[2] = {"ext.conv_relu", "ext.sigmoid"};
    GPPackedFunc *checks[2] = {NULL, check};
    GPPatternTable *t = host->pattern_table_new(2, names, p, checks);
    if (t) rc = host->pattern_table_register("ext.activations", t, 0);
    gp_release(t);
  }
  gp_release(p[0]);
  gp_release(p[1]);
  gp_release(check);
  return rc;
}

static void pat_finalize(void) {
  /* Test hook: leave the table to the host, which removes it with the plugin anyway. */
  if (host && !getenv("GP_PATTERN_PLUGIN_KEEP_TABLE")) {
    GPPatternTable *t = host->pattern_table_get("ext.activations");
    if (t) {
      gp_release(t);
      host->pattern_table_register("ext.activations", NULL, 0);
    }
  }
  gp_release(double_neg);
  double_neg = NULL;
  host = NULL;
}

static const GPPluginAPI pat_api = {
    .struct_size = sizeof(GPPluginAPI),
    .abi_version = EXT_ABI_VERSION,
    .name = "pattern_plugin",
    .version = "0.1.0",
    .initialize = pat_initialize,
    .finalize = pat_finalize,
};

GP_EXPORT const GPPluginAPI *graphpass_plugin_entry(void);

GP_EXPORT const GPPluginAPI *graphpass_plugin_entry(void) { return &pat_api; }
