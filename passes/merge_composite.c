/* merge_composite.c -- MergeComposite (opt-level 0), TVM v0.12's: each match of a pattern
 * table's entries becomes a call of a function with PartitionedFromPattern="<ops>_" and
 * Composite="<entry name>" whose body is the matched subgraph and whose parameters are the
 * match's inputs (constants matched by `const` stay inside).  Entries apply in table order; an
 * earlier entry claims its matches first; nodes inside composite, primitive and external
 * functions are never matched.  The table comes from the registry, `MergeComposite{table=NAME}`,
 * or from a pattern file, `MergeComposite{file=PATH}`.
 *
 * Built on the host's rewrite driver (GPHostAPI.pattern_rewrite): one selection walk per entry
 * and one rebuilding walk per function. */
#include "expr_build.h"

#include <stdio.h>
#include <string.h>

#define PASS_NAME "MergeComposite"

typedef struct Merge {
  const GPPatternTable *table;
  const char *source;
  int64_t *counts;    /* per entry */
  int32_t *graphs;    /* per entry: composites made so far (FunctionVar_<g>_<i>) */
} Merge;

/* The entry's check function on the match's root (input graph): TVM's `check`. */
static int merge_check(void *user, const GPMatch *m) {
  Merge *mg = user;
  const GPPatternEntry *en = &mg->table->entries[m->pattern_index];
  if (!en->check) return 1;
  GPAny arg = {.type_index = ekind(m->root), .v_obj = &m->root->obj};
  GPAny res = {0};
  if (en->check->call(en->check->self, &arg, 1, &res) != 0) {
    char loc[256], pre[400];
    snprintf(pre, sizeof pre, "the check of pattern '%s' at %s", en->name,
             std_where(mg->source, m->root, loc, sizeof loc));
    std_error_prefix(pre);
    return -1;
  }
  int ok = -1;
  if (res.type_index == GP_TI_BOOL || res.type_index == GP_TI_INT) ok = res.v_int64 != 0;
  if (ok < 0) {
    char got[128], loc[256];
    std_describe_any(&res, got, sizeof got);
    H->any_clear(&res);
    H->error_set(GP_ERR_TYPE, "the check of pattern '%s' at %s returned %s, expected a bool", en->name,
                 std_where(mg->source, m->root, loc, sizeof loc), got);
    return -1;
  }
  H->any_clear(&res);
  return ok;
}

/* Index of e in a[0..n), or -1. */
static int32_t find(GPExpr *const *a, int32_t n, const GPExpr *e) {
  for (int32_t i = 0; i < n; i++)
    if (a[i] == e) return i;
  return -1;
}

/* TVM's PartitionedFromPattern: the interior in post-order, "<op>_", "Tuple_",
 * "TupleGetItem<i>_" (embedded constants add nothing). */
static void pattern_name(const GPMatch *m, char *buf, size_t cap) {
  int32_t nn = m->num_nodes;
  size_t len = 0;
  buf[0] = 0;
  GPExpr **stack = H->alloc(sizeof(GPExpr *) * (size_t)(nn + 1));
  int32_t *next = H->alloc(sizeof(int32_t) * (size_t)(nn + 1));
  uint8_t *state = H->alloc((size_t)(nn + 1)); /* 0 new, 1 on the stack, 2 done */
  for (int32_t i = 0; i < nn; i++) state[i] = 0;
  int32_t sp = 0;
  stack[sp] = m->root;
  next[sp++] = 0;
  state[0] = 1;
  while (sp) {
    GPExpr *e = stack[sp - 1];
    if (next[sp - 1] < gp_expr_num_children(e)) {
      GPExpr *c = gp_expr_child_at(e, next[sp - 1]++);
      int32_t idx = find(m->nodes, nn, c);
      if (idx >= 0 && state[idx] == 0) {
        state[idx] = 1;
        stack[sp] = c;
        next[sp++] = 0;
      }
      continue;
    }
    sp--;
    state[find(m->nodes, nn, e)] = 2;
    char part[160];
    part[0] = 0;
    if (ekind(e) == GP_TI_CALL) {
      const char *op = sb_op_name(e);
      snprintf(part, sizeof part, "%s_", op ? op : "Call");
    } else if (ekind(e) == GP_TI_TUPLE) {
      snprintf(part, sizeof part, "Tuple_");
    } else if (ekind(e) == GP_TI_TUPLE_GET_ITEM) {
      snprintf(part, sizeof part, "TupleGetItem%d_", (int)((const GPTupleGetItem *)e)->index);
    }
    size_t pl = strlen(part);
    if (len + pl + 1 < cap) {
      memcpy(buf + len, part, pl + 1);
      len += pl;
    }
  }
  H->free(stack);
  H->free(next);
  H->free(state);
}

static GPExpr *merge_rewrite(void *user, const GPMatch *m) {
  Merge *mg = user;
  const GPPatternEntry *en = &mg->table->entries[m->pattern_index];
  int32_t g = mg->graphs[m->pattern_index]++;
  int32_t ni = m->num_inputs, nn = m->num_nodes;
  GPVar **params = H->alloc(sizeof(GPVar *) * (size_t)(ni ? ni : 1));
  GPExpr **made = H->alloc(sizeof(GPExpr *) * (size_t)(nn ? nn : 1));
  GPExpr *kids_small[16];
  GPExpr *result = NULL;
  int32_t np = 0;
  for (int32_t i = 0; i < nn; i++) made[i] = NULL;
  for (; np < ni; np++) {
    char name[64];
    snprintf(name, sizeof name, "FunctionVar_%d_%d", (int)g, (int)np);
    params[np] = H->var_new(name, m->inputs[np]->checked_type);
    if (!params[np]) goto out;
  }
  /* interior, descendants first (reverse pre-order); a node listed twice is built once */
  for (int32_t i = nn - 1; i >= 0; i--) {
    GPExpr *u = m->nodes[i];
    int32_t first = find(m->nodes, nn, u);
    if (first != i) continue;
    if (ekind(u) == GP_TI_CONSTANT) {
      made[i] = gp_retain(u);
      continue;
    }
    int32_t nk = gp_expr_num_children(u);
    GPExpr **kids = nk > 16 ? H->alloc(sizeof(GPExpr *) * (size_t)nk) : kids_small;
    bool bad = false;
    for (int32_t k = 0; k < nk; k++) {
      GPExpr *c = gp_expr_child_at(u, k);
      int32_t pi = find(m->inputs, ni, c), ci = find(m->nodes, nn, c);
      if (ekind(c) == GP_TI_OP) kids[k] = c;
      else if (pi >= 0) kids[k] = &params[pi]->base;
      else if (ci >= 0 && made[ci]) kids[k] = made[ci];
      else bad = true;
    }
    if (bad) {
      H->error_set(GP_ERR_INTERNAL, "a child of a matched node is neither matched nor an input");
    } else if (ekind(u) == GP_TI_CALL) {
      const GPCall *c = (const GPCall *)u;
      made[i] = (GPExpr *)H->call_new(kids[0], c->nargs, kids + 1, c->attrs);
    } else if (ekind(u) == GP_TI_TUPLE) {
      made[i] = (GPExpr *)H->tuple_new(nk, kids);
    } else if (ekind(u) == GP_TI_TUPLE_GET_ITEM) {
      made[i] = (GPExpr *)H->tuple_get_item_new(kids[0], ((const GPTupleGetItem *)u)->index);
    } else {
      H->error_set(GP_ERR_INTERNAL, "unexpected %s in a match", std_kind_name(ekind(u)));
    }
    if (kids != kids_small) H->free(kids);
    if (!made[i]) goto out;
  }
  {
    char pname[1024];
    pattern_name(m, pname, sizeof pname);
    const char *keys[2] = {"PartitionedFromPattern", "Composite"};
    GPAttrValue vals[2] = {{.kind = GP_ATTR_STR, .s = pname}, {.kind = GP_ATTR_STR, .s = en->name}};
    GPAttrs *attrs = H->attrs_new(2, keys, vals);
    GPFunctionExpr *fn = attrs ? H->function_new(np, params, made[0], NULL, attrs) : NULL;
    gp_release(attrs);
    if (fn) result = (GPExpr *)H->call_new(&fn->base, ni, m->inputs, NULL);
    gp_release(fn);
  }
  if (result) mg->counts[m->pattern_index]++;
out:
  for (int32_t i = 0; i < np; i++) gp_release(params[i]);
  for (int32_t i = 0; i < nn; i++) gp_release(made[i]);
  H->free(params);
  H->free(made);
  if (!result) {
    char loc[256], pre[400];
    snprintf(pre, sizeof pre, "composite '%s' at %s", en->name, std_where(mg->source, m->root, loc, sizeof loc));
    std_error_prefix(pre);
  }
  return result;
}

static GPExpr *merge_function(void *user, const GPModule *mod, int32_t index) {
  Merge *mg = user;
  mg->source = mod->source_name;
  const GPPatternTable *t = mg->table;
  const GPPattern *small[16];
  const GPPattern **pats = t->n > 16 ? H->alloc(sizeof(GPPattern *) * (size_t)t->n) : small;
  for (int32_t i = 0; i < t->n; i++) pats[i] = t->entries[i].pattern;
  GPRewriteSpec spec = {.struct_size = sizeof spec, .abi_version = GP_ABI_VERSION, .num_patterns = t->n,
                        .patterns = pats, .check = merge_check, .rewrite = merge_rewrite, .user = mg};
  GPExpr *out = H->pattern_rewrite(&mod->funcs[index]->base, &spec);
  if (pats != small) H->free(pats);
  return out;
}

static int merge_composite(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args(PASS_NAME, args, nargs, &mod, &ctx) != 0) return -1;
  if (!GP_HAS_FIELD(H, GPHostAPI, pattern_table_get)) {
    H->error_set(GP_ERR_VERSION, "the host has no patterns (ABI 1.2 needed)");
    return -1;
  }
  const char *tname = std_config_str(ctx, PASS_NAME ".table", "");
  const char *file = std_config_str(ctx, PASS_NAME ".file", "");
  GPPatternTable *table = NULL;
  if (*tname && *file) {
    H->error_set(GP_ERR_VALUE, "give MergeComposite a table or a file, not both (table=%s, file=%s)", tname, file);
    return -1;
  }
  if (*tname) {
    table = H->pattern_table_get(tname);
    if (!table) {
      H->error_set(GP_ERR_NOT_FOUND, "no pattern table named '%s' is registered", tname);
      return -1;
    }
  } else if (*file) {
    table = H->pattern_table_read(file);
    if (!table) return -1;
  } else {
    H->error_set(GP_ERR_VALUE, "MergeComposite needs a pattern table: MergeComposite{table=NAME} or "
                 "MergeComposite{file=PATH}");
    return -1;
  }
  Merge mg = {.table = table};
  mg.counts = H->alloc(sizeof(int64_t) * (size_t)(table->n ? table->n : 1));
  mg.graphs = H->alloc(sizeof(int32_t) * (size_t)(table->n ? table->n : 1));
  for (int32_t i = 0; i < table->n; i++) mg.counts[i] = mg.graphs[i] = 0;
  GPModule *out = std_function_pass(mod, merge_function, &mg);
  if (out) {
    int64_t total = 0;
    char buf[400];
    size_t len = 0;
    buf[0] = 0;
    for (int32_t i = 0; i < table->n; i++) {
      total += mg.counts[i];
      if (len < sizeof buf)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s %lld", i ? ", " : "", table->entries[i].name,
                                (long long)mg.counts[i]);
    }
    std_note(ctx, "merged %lld composites (%s)", (long long)total, buf);
  }
  H->free(mg.counts);
  H->free(mg.graphs);
  gp_release(table);
  if (!out) return -1;
  return std_return_module(result, out);
}

int std_register_merge_composite(void) {
  static const GPConfigKey keys[] = {
      {.name = "table", .type_index = GP_TI_RAW_STR, .default_value = {.type_index = GP_TI_RAW_STR, .v_c_str = ""},
       .help = "name of a registered pattern table"},
      {.name = "file", .type_index = GP_TI_RAW_STR, .default_value = {.type_index = GP_TI_RAW_STR, .v_c_str = ""},
       .help = "a pattern file: one 'name: pattern' per line"},
  };
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = PASS_NAME,
      .opt_level = 0,
      .kind = GP_PASS_TRANSFORM,
      .config_keys = keys,
      .num_config_keys = 2,
      .func = merge_composite,
      .help = "Replace each match of a pattern table's entries by a call of a Composite function.",
  };
  return GP_HAS_FIELD(H, GPHostAPI, pattern_table_get) ? H->pass_register(&info, 0) : 0;
}
