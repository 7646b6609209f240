/*
 * byoc.h -- shared by the BYOC passes (annotate_target.c, merge_compiler_regions.c,
 * partition_graph.c): the annotation ops and the region set of an annotated function
 * (byoc_regions.c, TVM v0.12's AnnotatedRegionSet).
 *
 * A region starts at each annotation.compiler_begin; a node that is not an annotation joins the
 * regions of its arguments (those that are not compiler_end: a compiler_end closes its region),
 * merging them when there are several; a compiler_end belongs to the region of its argument.
 * Regions are a union-find over the begins (union by size, path halving), so building the set
 * is linear in the nodes (TVM's GetRegion is a linear scan over regions).  The id a region
 * shows (TVM's GetID) is the id of the begin that created the region that absorbed the others
 * ("dest" in TVM's MergeRegions): `label[find(r)]`.  Inputs (begins) and outputs (ends) of a
 * region are lists over node indices, concatenated dest first on a union, as TVM's ins_/outs_.
 * (TVM's MergeRegions also drops a dest input whose argument is a node of src; that happens only
 * for annotations no pass of ours writes, and is not done here.)
 */
#ifndef GP_BYOC_H
#define GP_BYOC_H

#include "passes.h"

#define BYOC_DEFAULT "default"

typedef struct ByocOps {
  const GPOp *begin, *end;
} ByocOps;

/* Looks the annotation ops up (they are built in); -1 + error when missing. */
int byoc_ops(ByocOps *o);

/* 1 for a compiler_begin call, 2 for a compiler_end call, 0 otherwise. */
static inline int byoc_ann(const ByocOps *o, const GPExpr *e) {
  if (ekind(e) != GP_TI_CALL) return 0;
  const GPExpr *op = ((const GPCall *)e)->op;
  return op == &o->begin->base ? 1 : op == &o->end->base ? 2 : 0;
}
/* The compiler attribute of an annotation call ("" when missing). */
const char *byoc_compiler(const GPExpr *ann);
/* A new annotation call (begin or end) of x with compiler `compiler`; NULL + error. */
GPExpr *byoc_annotate(const GPOp *op, GPExpr *x, const char *compiler);

/* Node indices of a function (post order, children first); child indices as a CSR.  The hash
 * map holds the shared nodes only (see byoc_regions.c): byoc_index_of answers for those. */
typedef struct ByocIndex {
  GPExpr **nodes; /* host array (H->free) */
  size_t n;
  PMap at;      /* node -> index + 1 */
  int32_t *off; /* per node: its first entry in kid (n + 1 entries) */
  int32_t *kid; /* child c of node i is node kid[off[i] + c] (one hash probe per edge, once) */
} ByocIndex;
int byoc_index_build(ByocIndex *ix, GPExpr *root);
static inline int32_t byoc_index_of(const ByocIndex *ix, const void *e) {
  return (int32_t)(intptr_t)pmap_get(&ix->at, e) - 1;
}
void byoc_index_free(ByocIndex *ix);
/* A copy of e with children kids (e retained when they are its own); calls keep e's location,
 * and with keep_type every node keeps e's checked type (for rewrites that keep every type, such
 * as dropping identity annotations: no re-typing then).  A new reference, or NULL + error. */
GPExpr *byoc_rebuild(GPExpr *e, GPExpr *const *kids, bool keep_type);
/* The index of child c of node i. */
static inline int32_t byoc_kid(const ByocIndex *ix, int32_t i, int32_t c) { return ix->kid[ix->off[i] + c]; }

typedef struct ByocRegions {
  int32_t n;          /* nodes */
  int32_t *region;    /* per node: its region (a begin's id; find() for the group) or -1 */
  int32_t nreg;       /* regions created (one per begin) */
  int32_t *uf;        /* union-find parent per region */
  int32_t *size;      /* per root: group size in regions */
  int32_t *label;     /* per root: the id it shows */
  const char **target;/* per region: the compiler (borrowed from the begin's attrs) */
  int32_t *ins_head, *ins_tail, *outs_head, *outs_tail; /* per root: node-index lists */
  int32_t *next;      /* per node: the next begin / end in its region's list, -1 at the end */
} ByocRegions;

/* Builds the region set of the nodes of ix (post order).  Errors name `pass` and the node
 * (source:line:col): a compiler_end with no region, a compiler_end whose compiler differs from
 * its region's, a node whose arguments are partly inside regions and partly not. */
int byoc_regions_build(ByocRegions *r, const ByocIndex *ix, const ByocOps *o, const char *pass, const char *source);
void byoc_regions_free(ByocRegions *r);
static inline int32_t byoc_find(ByocRegions *r, int32_t x) {
  while (r->uf[x] != x) {
    r->uf[x] = r->uf[r->uf[x]];
    x = r->uf[x];
  }
  return x;
}
/* Merges the group of src into the group of dest (TVM's MergeRegions(src, dest)); returns the
 * new root.  The lists are concatenated dest first; the label is dest's. */
int32_t byoc_union(ByocRegions *r, int32_t src, int32_t dest);
/* The group of node i, or -1. */
static inline int32_t byoc_group(ByocRegions *r, int32_t i) { return r->region[i] < 0 ? -1 : byoc_find(r, r->region[i]); }

/* Control scopes of a function's nodes: the body is scope 0; the branches of each if and the
 * body of each function expression open scopes below the scope of that node.  A node's scope is
 * the lowest common ancestor of the scopes its readers demand (readers come after it in post
 * order: one backward sweep, as the evaluator's regions; each edge costs at most the depth of
 * if-nesting).  A region may not hold nodes of two scopes: MergeCompilerRegions keeps regions
 * of different scopes apart and PartitionGraph refuses such a region. */
typedef struct ByocScopes {
  int32_t *of;             /* per node of the index, -1 when unread */
  int32_t *parent, *depth; /* per scope */
  int32_t n, cap;
} ByocScopes;
void byoc_scopes_build(ByocScopes *s, const ByocIndex *ix); /* ix: the function expression last */
void byoc_scopes_free(ByocScopes *s);
/* Per region (by union-find root): the scope of its begins, and with `inner` of its other nodes
 * but its ends too; -1 when they differ (*mixed: the first such node, else -1), -2 when it has
 * none.  In a function with lets a scope is also split at each let binding (the post order's
 * let variables): a region holding nodes first read before a binding and after it would be
 * called before that binding (a let's value reads it) while reading what the binding computes.
 * A region's scope and segment are one int64 (scope << 32 | segment).  All 0 when the function
 * has no if, function expression or let (O(1): the subtree kinds).  A calloc'd array of nreg
 * entries; the caller frees it. */
int64_t *byoc_region_scopes(ByocRegions *r, const ByocIndex *ix, const ByocOps *o, bool inner, int32_t *mixed);

#endif
