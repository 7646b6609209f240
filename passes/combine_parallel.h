/*
 * combine_parallel.h -- what CombineParallelConv2D, CombineParallelDense and
 * CombineParallelBatchMatmul share: TVM v0.12's BranchGroupFinder and ParallelOpCombiner
 * (combine_parallel_op.cc) as one driver with a table of hooks per pass, and the builders the
 * hooks use (every node they make is typed with the op's relation, so a rewrite that only adds
 * such nodes needs no re-typing).
 *
 * The driver, per function (one post-order walk, a node -> id table, the users of each node as
 * arrays; linear, no recursion):
 *  - users: for every call, its arguments get it as a user; a call of the pass's op that the
 *    pass supports is a user of its data (args[0]) only (TVM's children_map_; tuples, get-items
 *    and other non-call users are not counted, as in TVM);
 *  - branches: for each node, each of its supported op users starts a branch, which goes on
 *    while the last node has exactly one user and that user is a call of an op with pattern
 *    elemwise or broadcast (TVM's CreateBranch);
 *  - groups: the branches of one node, grouped by `compatible` with each group's first branch
 *    (hashed by `key` first, so a node with many users costs n log n); groups of fewer than
 *    min_num_branches branches are left alone;
 *  - per group: `make_combined`, then the following ops level by level while every branch has
 *    the same op and attrs there, takes the previous level as the same argument, and its other
 *    arguments are `arg_compatible` (TVM's CheckLevel); the level is one call of the branches' op
 *    with the combined data and, for each other argument, `join_arg` of the branches'; then
 *    `level_ok` checks its type; then `update_output` gives each branch's replacement
 *    (slices / split) at the last combined level;
 *  - the replacements are substituted in one host rewrite (TVM's ExprSubst, which also
 *    substitutes inside the replacements: a group whose data is another group's output reads
 *    that group's slice).
 * Beyond TVM (which would build a cycle there): an input of a group -- a weight, or an argument
 * of a following op other than the previous level -- that depends on a node of any branch of a
 * group is not combined (the group, or the level, is refused).
 */
#ifndef GP_COMBINE_PARALLEL_H
#define GP_COMBINE_PARALLEL_H

#include "passes.h"

/* A group of branches: branch k is pool[off[k]] .. pool[off[k] + len[k] - 1], its op first. */
typedef struct CPGroup {
  const GPCall *const *pool;
  const int32_t *off, *len;
  int32_t n;
} CPGroup;
static inline const GPCall *cp_at(const CPGroup *g, int32_t k, int32_t d) { return g->pool[g->off[k] + d]; }

typedef struct CPRun CPRun;

typedef struct CPCombiner {
  const char *pass; /* "CombineParallelConv2D" */
  const char *op;   /* "nn.conv2d" */
  const char *help;
  bool (*supported)(const CPRun *r, const GPCall *c);
  /* equal for compatible calls */
  uint64_t (*key)(const CPRun *r, const GPCall *c);
  bool (*compatible)(const CPRun *r, const GPCall *a, const GPCall *b);
  /* new reference, or NULL + error: the group is refused (with an explain note) */
  GPExpr *(*make_combined)(CPRun *r, const CPGroup *g);
  bool (*arg_compatible)(CPRun *r, const GPCall *a, const GPCall *b, int32_t index);
  /* argument `arg` (not the previous level's, `parent`) of the combined call at depth, joined
   * from the branches' (cp_join_args for a plain concatenate): a new reference, or NULL + error:
   * the level is refused */
  GPExpr *(*join_arg)(CPRun *r, const CPGroup *g, int32_t depth, int32_t arg, int32_t parent);
  /* whether the combined level `data` (typed) computes every branch's node at depth */
  bool (*level_ok)(CPRun *r, const GPExpr *data, const CPGroup *g, int32_t depth);
  /* out[k] = a new reference replacing branch k's node at depth; 0, or -1 + error */
  int (*update_output)(CPRun *r, GPExpr *data, const CPGroup *g, int32_t depth, GPExpr **out);
  /* extra config keys (beyond min_num_branches), read into CPRun.flag by read_config */
  const GPConfigKey *extra_keys;
  int32_t num_extra_keys;
  int (*read_config)(CPRun *r, GPPassContext *ctx);
} CPCombiner;

struct CPRun {
  const CPCombiner *c;
  GPPassContext *ctx;
  const char *source;
  int64_t min_branches;
  bool flag;           /* CombineParallelDense.to_batch_matmul */
  int32_t channel_pos; /* conv2d: the C axis of the output layout (set by make_combined) */
  int64_t groups, branches, levels, refused;
  int32_t notes;
  bool untyped;
};

/* ---- builders: new references, typed; NULL + error (the relation's message) */
GPExpr *cp_call(CPRun *r, const char *op, int32_t nargs, GPExpr *const *args, int32_t nattrs,
                const char *const *keys, const GPAttrValue *vals);
GPExpr *cp_call_attrs(CPRun *r, GPExpr *op, int32_t nargs, GPExpr *const *args, GPAttrs *attrs);
/* op(tuple(xs), axis=axis) for concatenate and stack */
GPExpr *cp_join(CPRun *r, const char *op, int32_t n, GPExpr *const *xs, int64_t axis);
/* cp_join of argument `arg` of every branch's node at depth. */
GPExpr *cp_join_args(CPRun *r, const CPGroup *g, int32_t depth, int32_t arg, const char *op, int64_t axis);
GPExpr *cp_expand_dims(CPRun *r, GPExpr *x, int64_t axis, int64_t num);
GPExpr *cp_slice(CPRun *r, GPExpr *data, int32_t n, const int64_t *begin, const int64_t *end);
/* a copy of `a` with key set to v (a key of a's) */
GPAttrs *cp_attrs_with(const GPOp *op, const GPAttrs *a, const char *key, GPAttrValue v);

/* ---- reading nodes */
static inline const GPType *cp_tensor_type(const GPExpr *e) {
  const GPType *t = e->checked_type;
  return t && t->kind == GP_TYPE_TENSOR ? t : NULL;
}
const GPAttrValue *cp_attr(const GPCall *c, const char *key);
int64_t cp_attr_int(const GPCall *c, const char *key, int64_t dflt);
bool cp_attr_value_eq(const GPAttrValue *a, const GPAttrValue *b);
bool cp_attr_same(const GPCall *a, const GPCall *b, const char *key);
bool cp_attrs_eq(const GPAttrs *a, const GPAttrs *b);
bool cp_dtype_eq(DLDataType a, DLDataType b);
uint64_t cp_mix(uint64_t h, uint64_t v);
uint64_t cp_hash_attr(uint64_t h, const GPAttrValue *v);
const char *cp_where(const CPRun *r, const GPExpr *e, char *buf, size_t n);

/* The pass function and registration (opt-level 4, requires InferType; config
 * "<pass>.min_num_branches", default 3, >= 1). */
int cp_register(const CPCombiner *c);

#endif
