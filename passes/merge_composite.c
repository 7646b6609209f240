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
#include "pattern_pass.h"

#include <stdio.h>
#include <string.h>

#define PASS_NAME "MergeComposite"

/* The matches an entry's check declined, for --explain: how many, and the first few with
 * their locations and reasons.  The driver may ask again about a declined match near a
 * composite it made (to prove a fixed point), with the rebuilt node: a match is counted once
 * per source location (per node when it has none). */
#define DECLINES_SHOWN 3
typedef struct Declines {
  int64_t count;
  StdSeen seen;
  char text[320];
  size_t len;
} Declines;

typedef struct Merge {
  const GPPatternTable *table;
  const char *source;
  int64_t *counts;    /* per entry */
  int32_t *graphs;    /* per entry: composites made so far (FunctionVar_<g>_<i>) */
  Declines *declines; /* per entry */
  bool untyped;       /* a composite was built without types: re-type the result */
} Merge;

static void note_decline(Merge *mg, int32_t entry, const GPExpr *root, const char *reason) {
  Declines *d = &mg->declines[entry];
  if (std_seen_mark(&d->seen, root, 1)) return;
  if (d->count++ < DECLINES_SHOWN && d->len < sizeof d->text) {
    char loc[256];
    int w = snprintf(d->text + d->len, sizeof d->text - d->len, "%sat %s%s%s", d->len ? "; " : "",
                     std_where(mg->source, root, loc, sizeof loc), reason && *reason ? ": " : "",
                     reason ? reason : "");
    if (w > 0) d->len = d->len + (size_t)w < sizeof d->text ? d->len + (size_t)w : sizeof d->text - 1; /* truncated */
  }
}

/* The entry's check function on the match's root (input graph): TVM's `check`, which returns
 * a bool; here a string declines too, and says why (ABI 1.6). */
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
  char why[200];
  int ok = std_verdict(&res, why, sizeof why);
  if (ok < 0) {
    char got[128], loc[256];
    std_describe_any(&res, got, sizeof got);
    H->any_clear(&res);
    H->error_set(GP_ERR_TYPE, "the check of pattern '%s' at %s returned %s, expected a bool or a string (a reason "
                 "to decline)", en->name, std_where(mg->source, m->root, loc, sizeof loc), got);
    return -1;
  }
  H->any_clear(&res);
  if (!ok) note_decline(mg, m->pattern_index, m->root, why);
  return ok;
}

static GPExpr *merge_rewrite(void *user, const GPMatch *m) {
  Merge *mg = user;
  const GPPatternEntry *en = &mg->table->entries[m->pattern_index];
  GPExpr *result = pp_make_composite(m, en->name, mg->graphs[m->pattern_index]++, &mg->untyped);
  if (result) {
    mg->counts[m->pattern_index]++;
  } else {
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
  mg.declines = H->alloc(sizeof(Declines) * (size_t)(table->n ? table->n : 1));
  for (int32_t i = 0; i < table->n; i++) {
    mg.counts[i] = mg.graphs[i] = 0;
    mg.declines[i] = (Declines){0};
  }
  GPModule *out = std_function_pass_typed(mod, merge_function, &mg, &mg.untyped);
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
    for (int32_t i = 0; i < table->n; i++) {
      const Declines *d = &mg.declines[i];
      if (d->count)
        std_note(ctx, "pattern '%s': %lld match%s declined by its check (%s%s)", table->entries[i].name,
                 (long long)d->count, d->count == 1 ? "" : "es", d->text, d->count > DECLINES_SHOWN ? "; ..." : "");
    }
  }
  for (int32_t i = 0; i < table->n; i++) std_seen_free(&mg.declines[i].seen);
  H->free(mg.declines);
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
