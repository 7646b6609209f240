/*
 * pattern.h -- the pattern language of abi/graphpass.h (GPPattern): its compiled form, the
 * matcher, the rewrite driver and the registry of pattern tables.  Internal to the host library.
 *
 *   ir/pattern.c          text -> compiled pattern; matching at one node
 *   ir/pattern_rewrite.c  the rewrite driver (selection walks, then one rebuilding walk)
 *   registry/pattern_tables.c  tables by name, pattern files
 */
#ifndef GP_PATTERN_H
#define GP_PATTERN_H

#include "ir.h"

/* Kinds of compiled pattern nodes. */
enum { PK_ANY, PK_CONST, PK_VAR, PK_CALL, PK_OPT, PK_TUPLE, PK_ITEM, PK_ALT };

typedef struct GPPatAttr {
  const char *key;  /* the op's schema key (borrowed from the op: ops are immortal) */
  GPAttrValue value; /* converted to the schema's kind; payload owned by the pattern */
} GPPatAttr;

typedef struct GPPatNode {
  uint8_t kind;       /* PK_* */
  bool has_type;      /* a type condition */
  bool pure;          /* no capture in this subtree: its failures can be remembered */
  int32_t capture;    /* capture index bound to the node this matches, or -1 */
  const GPOp *op;     /* PK_CALL, PK_OPT */
  int32_t nkids, kid0; /* kids: pattern node ids kids[kid0 ..] (CALL args, OPT inner, TUPLE
                        * fields, ITEM tuple, ALT left then right) */
  int32_t index;      /* PK_ITEM */
  int32_t nattrs, attr0;
  DLDataType dtype;   /* type condition: dtype, rank and dims (GP_DIM_ANY: any) */
  int32_t ndim, dim0;
  uint32_t line, col;
} GPPatNode;

/* The compiled pattern: the public header, then the nodes (node 0 is not special: `root` is). */
typedef struct GPPatternImpl {
  GPPattern pub;
  char *source;        /* owned copy of source_name (may be NULL) */
  GPPatNode *nodes;
  int32_t nnodes, root;
  int32_t *kids;
  GPPatAttr *attrs;
  int64_t *dims;
  bool memo;           /* has optional ops or alternatives: remember pure failures */
  /* What the root can match, computed once (gp_pattern_may_match is then O(1)): any node;
   * else the expression kinds (bit k - GP_TI_IR_BEGIN) and, for calls, the ops by index. */
  bool root_any;
  uint32_t root_kinds;
  uint64_t *root_ops;  /* bitset over op indices < root_nops */
  int32_t root_nops;
  /* The same in gp_expr_summary's bits (ops' Bloom bits, kinds of non-call roots; all bits for
   * root_any): a pattern cannot match under e when (gp_expr_summary(e) & root_summary) == 0. */
  uint64_t root_summary;
  int32_t height; /* levels below its root the pattern looks (a leaf pattern: 0) */
} GPPatternImpl;

static inline const GPPatternImpl *gp_pat_impl(const GPPattern *p) { return (const GPPatternImpl *)p; }

GPPattern *gp_pattern_compile(const char *text, const char *source_name, uint32_t line, uint32_t col);

/* A matcher: scratch reused across matches of one pattern (one thread).  After a successful
 * gp_matcher_run the arrays hold the match (see GPMatch): nodes in pre-order, root first;
 * inputs distinct, left to right; captures by index (NULL when unbound). */
typedef struct GPMatcher {
  const GPPatternImpl *p;
  GPExpr **caps;
  GPVec nodes, inputs;
  int32_t *trail;      /* capture indexes bound, in order (undone on a failed alternative) */
  size_t ntrail, trail_cap;
  /* failures of pure pattern nodes at expressions, for the current root only */
  struct { const void *e; int32_t pn; uint32_t gen; } *memo;
  size_t memo_cap, memo_len;
  uint32_t gen;
} GPMatcher;

void gp_matcher_init(GPMatcher *m, const GPPattern *p);
/* After a successful gp_matcher_run at root: the match as a GPMatch of pattern number `index`,
 * borrowing the matcher's arrays (valid until its next run). */
static inline GPMatch gp_matcher_view(const GPMatcher *m, int32_t index, GPExpr *root) {
  return (GPMatch){.struct_size = sizeof(GPMatch), .abi_version = GP_ABI_VERSION, .pattern_index = index,
                   .pattern = &m->p->pub, .root = root, .num_nodes = (int32_t)m->nodes.len,
                   .num_inputs = (int32_t)m->inputs.len, .nodes = (GPExpr *const *)m->nodes.items,
                   .inputs = (GPExpr *const *)m->inputs.items, .num_captures = m->p->pub.num_captures,
                   .captures = m->caps};
}
bool gp_matcher_run(GPMatcher *m, GPExpr *e);
void gp_matcher_free(GPMatcher *m);
/* Quick reject without a match: false when the pattern's root cannot match e's kind or op (the
 * root filter computed at compile time: O(1)). */
static inline bool gp_pattern_may_match(const GPPattern *p, const GPExpr *e) {
  const GPPatternImpl *pi = gp_pat_impl(p);
  if (pi->root_any) return true;
  int32_t k = gp_kind(e);
  if (k == GP_TI_CALL) {
    const GPExpr *op = GP_AS(const GPCall, e)->op;
    if (gp_kind(op) != GP_TI_OP) return false;
    int32_t idx = GP_AS(const GPOp, op)->index;
    return idx >= 0 && idx < pi->root_nops && (pi->root_ops[idx / 64] >> (idx % 64) & 1u);
  }
  return k >= GP_TI_IR_BEGIN && k < GP_TI_IR_END && (pi->root_kinds >> (k - GP_TI_IR_BEGIN) & 1u);
}

/* The same from a node index's tag (GPNodeIndex.tag): no read of the node. */
static inline bool gp_pattern_may_match_tag(const GPPattern *p, int32_t tag) {
  const GPPatternImpl *pi = gp_pat_impl(p);
  if (pi->root_any) return true;
  if (tag >= 0) return tag < pi->root_nops && (pi->root_ops[tag / 64] >> (tag % 64) & 1u);
  int32_t k = -tag;
  return k != GP_TI_CALL && k >= GP_TI_IR_BEGIN && k < GP_TI_IR_END && (pi->root_kinds >> (k - GP_TI_IR_BEGIN) & 1u);
}

/* Quick reject from a node index: false when the pattern cannot match node id, judged from the
 * tags, child counts and child ids of id and two levels of its children (no node is read). */
bool gp_pattern_prematch(const GPPattern *p, const GPNodeIndex *ni, int32_t id);

int gp_pattern_match(const GPPattern *p, GPExpr *e, GPMatch **out);
GPExpr *gp_pattern_rewrite(GPExpr *root, GPRewriteSpec *spec);

/* Pattern tables (registry/pattern_tables.c). */
GPPatternTable *gp_pattern_table_new(int32_t n, const char *const *names, GPPattern *const *patterns,
                                     GPPackedFunc *const *checks);
GPPatternTable *gp_pattern_table_read(const char *path);
/* Parse the text of a pattern file (source names it in messages). */
GPPatternTable *gp_pattern_table_parse(const char *text, size_t len, const char *source);
int gp_pattern_table_register(const char *name, GPPatternTable *table, int allow_override);
GPPatternTable *gp_pattern_table_get(const char *name);
/* Remove the tables a plugin registered (the loader, at unload and on a failed initialize). */
void gp_pattern_tables_unregister_origin(const char *origin);
void gp_pattern_tables_shutdown(void);

#endif
