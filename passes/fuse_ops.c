/* fuse_ops.c -- FuseOps (opt-level 0, requires InferType): TVM v0.12's operator fusion
 * (src/relay/transforms/fuse_ops.cc and src/relay/analysis/graph_partitioner.cc), without
 * recursion.  Cost: O(n log n) for the post-dominator tree, O(max_depth) nodes per fusion walk
 * (plus their out-edges), linear elsewhere (hash lookups only for nodes with several users).
 *
 * Per global function (functions with Primitive, Compiler or SkipOptimization attributes are left
 * alone, as TVM's function pass and fuse mutator do):
 *  1. The indexed forward graph, in post-DFS order (children in gp_expr_child_at order, as TVM's
 *     ExprVisitor): vars, constants, calls, tuples, get-items, lets and ifs are graph nodes; ops,
 *     global vars and functions are not (a nested function's params and body are; a nested
 *     function with Primitive or Compiler attrs is not entered).  Node patterns: an op call has
 *     its op's pattern (a non-computational op: opaque), any other call is opaque; tuples are
 *     `tuple`; get-items are injective (opaque when the tuple has a non-tensor field); scalar
 *     constants of int32/int64/float32/float64/bool are elemwise, other constants, vars, lets and
 *     ifs are opaque.  Edges producer -> consumer carry the consumer's pattern, except that a
 *     broadcast edge whose argument shape equals the call's shape is elemwise; tuple fields are
 *     injective edges.  Extern (no post-dominator): function params and bodies, let vars, values
 *     and bodies, if conditions and branches, non-tensor tuple fields, the tuple of a get-item
 *     with non-tensor fields, and non-op callees.
 *  2. The post-dominator tree in reverse order: a node's parent is the least common ancestor of
 *     its consumers, and its pattern the max of the edge and node patterns along the paths.  The
 *     LCA walks use skew-binary jump pointers (O(log depth) per query, O(1) memory per node)
 *     instead of TVM's parent-by-parent walk; the result (parent and pattern) is the same.
 *  3. Union-find groups (iterative path compression) and TVM's three phases of RunFuse, with
 *     TVM's exact conditions (see run_fuse) and its max_depth count (TVM's
 *     CountFusedNodesWithNewChild, which adds each node's own group size).  The path checks and
 *     commits walk an explicit stack with per-node epoch marks; the max_depth count stops as soon
 *     as the count exceeds max_depth, so every walk visits at most max_depth + 2 nodes.
 *  4. One post-order rewrite: each group becomes `fn (%p0, ..., Primitive=1) { body }(args)`,
 *     arguments de-duplicated per group; a group without a call gets Primitive=0 and one whose
 *     calls are all reshape-only gets relay.reshape_only=1, as TVM.  Nodes outside groups (lets,
 *     ifs, tuples that are group roots, vars, constants, non-op calls) are rebuilt around their
 *     new children.  Every built node gets the type and location of the node it replaces (a
 *     fused function: fn(param types) -> root type) through expr_annotate, so the output is
 *     typed as built and is not re-inferred (InferType would keep every node as it is).
 *
 * Config: FuseOps.max_depth (int, 256): the most nodes a fused function may hold;
 * FuseOps.link_params (bool, false): when set, a constant argument of a group (a non-scalar
 * constant, or a scalar one that did not fuse) stays in the function body ("linked") instead of
 * becoming a parameter.  With the context's opt level 0 the pass wraps every op call in its own
 * primitive function without fusing (TVM's fuse_opt_level = ctx opt level).
 *
 * Deliberate differences from TVM: nodes inside an existing Primitive function are not part of
 * the graph (TVM indexes them but its mutator leaves the function alone; only a node object
 * shared between such a body and the outside could fuse differently); a call with a
 * non-computational op is opaque; data-dependent dynamic-shape ops are not special-cased (the op
 * set has none). */
#include "passes.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { P_ELEM = 0, P_BCAST = 1, P_INJ = 2, P_REDUCE = 3, P_OUTEW = 4, P_TUPLE = 7, P_OPAQUE = 8 };
#define NO_EDGE 0xFFu

/* Arrays and scratch: gp_scratch_* (passes.h), so the large per-node arrays of a big graph are
 * mappings of their own; every block below is released with xfree. */
static inline void *xmalloc(size_t n) { return gp_scratch_alloc(n); }
static inline void *xcalloc(size_t n, size_t size) { return gp_scratch_zalloc(n, size); }
static inline void *xrealloc(void *p, size_t n) { return gp_scratch_realloc(p, n); }
static inline void xfree(void *p) { gp_scratch_free(p); }

static inline uint8_t pmax(uint8_t a, uint8_t b) { return a > b ? a : b; }

/* ------------------------------------------------------------------------------------------ */
/* State                                                                                       */

/* Parameters of one group's function, built while its members are rewritten. */
typedef struct Ginfo {
  GPVar **params;
  GPExpr **args; /* the outer expressions passed for the params (owned references) */
  int32_t n, cap;
  PMap index; /* arg -> param position + 1, used once the group has many params */
  bool has_call, reshape_only;
} Ginfo;

typedef struct Fuser {
  /* config */
  int64_t max_depth;
  bool link_params, fuse;
  const GPOp *stop_fusion; /* annotation.stop_fusion when registered */
  const char *gname;       /* the global function (messages) */
  const char *source;      /* the module's source name (messages) */

  /* the index: nodes in post-DFS order and their children */
  size_t n;
  GPExpr **node;   /* id -> node (borrowed from the input) */
  uint32_t *kbase; /* id -> first child slot */
  uint32_t *nkid;  /* id -> number of child slots */
  uint8_t *kind;   /* id -> the node's kind (GP_TI_VAR + k), so later phases need not load it */
  int32_t *kid;    /* slot -> child id; -1: not a graph node (op, global var, skipped function) */
  uint8_t *kpat;   /* slot -> edge pattern, or NO_EDGE */
  size_t nslots;

  /* the forward graph */
  uint8_t *pat;     /* node pattern */
  uint8_t *ext;     /* extern reference */
  uint32_t *ooff;   /* out edges of id: [ooff[id], ooff[id + 1]) */
  int32_t *onode;   /* consumer */
  uint8_t *opat;    /* edge pattern */

  /* the post-dominator tree */
  int32_t *dpar, *djmp, *ddep;
  uint8_t *dpat, *djmx;

  /* groups (one per node; TVM's Group objects, indexed by their node) */
  int32_t *gpar;
  uint8_t *gpat, *ganc;
  uint32_t *gnum;

  /* walks */
  uint32_t *mark, epoch;
  int32_t *stack;
  size_t scap;

  /* rewrite */
  GPExpr **res;    /* id -> new expression (owned) */
  int32_t *gslot;  /* group root -> open Ginfo slot, -1 */
  Ginfo *ginfo;
  int32_t *gfree;
  int32_t nginfo, capginfo, nfree;
  GPAttrs *prim1, *prim0, *prim_reshape;

  /* statistics */
  int64_t functions, fused_nodes, largest;
  bool untyped; /* some rebuilt node could not be given a type */
} Fuser;

/* ------------------------------------------------------------------------------------------ */
/* Messages                                                                                    */

static int fail_node(const Fuser *F, const GPExpr *e, const char *msg) {
  char what[160], loc[256];
  switch (ekind(e)) {
  case GP_TI_CALL: {
    const GPExpr *op = ((const GPCall *)e)->op;
    if (ekind(op) == GP_TI_OP) snprintf(what, sizeof what, "the call of %s", ((const GPOp *)op)->name);
    else if (ekind(op) == GP_TI_GLOBAL_VAR) snprintf(what, sizeof what, "the call of @%s", ((const GPGlobalVar *)op)->name);
    else snprintf(what, sizeof what, "a call of a closure");
    break;
  }
  case GP_TI_VAR:
    snprintf(what, sizeof what, "var %%%s", ((const GPVar *)e)->name ? ((const GPVar *)e)->name : "");
    break;
  default: snprintf(what, sizeof what, "%s", std_kind_name(ekind(e))); break;
  }
  H->error_set(GP_ERR_PASS, "@%s: %s at %s: %s", F->gname, what, std_where(F->source, e, loc, sizeof loc), msg);
  return -1;
}

static const GPType *type_of(const Fuser *F, const GPExpr *e, int *err) {
  if (!e->checked_type) {
    fail_node(F, e, "has no type (FuseOps needs a typed module: run InferType first)");
    *err = 1;
  }
  return e->checked_type;
}

/* ------------------------------------------------------------------------------------------ */
/* 1. The index and the forward graph                                                          */

static bool attr_nonzero(const GPAttrs *a, const char *key) {
  if (!a) return false;
  const GPAttrValue *v = H->attrs_get(a, key);
  if (!v) return false;
  switch (v->kind) {
  case GP_ATTR_INT:
  case GP_ATTR_BOOL: return v->i != 0;
  case GP_ATTR_FLOAT: return v->f != 0;
  case GP_ATTR_STR: return true;
  default: return false;
  }
}

/* A function the pass leaves alone (and does not enter). */
static bool skipped_function(const GPFunctionExpr *f) {
  return attr_nonzero(f->attrs, "Primitive") || (f->attrs && H->attrs_get(f->attrs, "Compiler"));
}

static bool graph_kind(const GPExpr *e) {
  switch (ekind(e)) {
  case GP_TI_VAR:
  case GP_TI_CONSTANT:
  case GP_TI_CALL:
  case GP_TI_TUPLE:
  case GP_TI_TUPLE_GET_ITEM:
  case GP_TI_LET:
  case GP_TI_IF: return true;
  case GP_TI_FUNCTION_EXPR: return !skipped_function((const GPFunctionExpr *)e);
  default: return false;
  }
}

/* Loops over ids that read the nodes themselves ask for the node PF_AHEAD ids on: the node
 * array knows the addresses ahead of the loop, and on a graph far beyond the caches a miss per
 * node is most of the cost. */
#define PF_AHEAD 8
static inline void prefetch_node(const Fuser *F, size_t id) {
  if (id < F->n) __builtin_prefetch(F->node[id]);
}

static inline bool maybe_shared(const GPExpr *e) {
  return __atomic_load_n(&e->obj.ref_count, __ATOMIC_RELAXED) != 1u;
}

/* A node being walked: its first child slot and the next child to visit.  16 bytes, as a deep
 * graph holds one per level (a 10M-node chain: 160 MB written down and read back up); what
 * else the node's finish needs (its child count, kind, whether it may be shared) is read from
 * the node again, whose lines the walk up reaches in address order. */
typedef struct {
  GPExpr *e;
  uint32_t base, next;
} Frame;

/* Post-DFS numbering of every graph node under fn (fn itself last).  The node allocator lays
 * nodes out in creation order, children before their users, so this walk from the root runs
 * down through memory; it asks for the memory PF_DOWN bytes below each node it enters, where
 * the nodes a few steps on usually are, and on the way up for the next child of the frame
 * PF_UP above (hints: wrong guesses cost nothing). */
#define PF_DOWN 2048
#define PF_UP 8
static int build_index(Fuser *F, GPFunctionExpr *fn) {
  size_t ncap = 1024, kcap = 1024, fcap = 64, nf = 0;
  F->node = xmalloc(ncap * sizeof *F->node);
  F->kbase = xmalloc(ncap * sizeof *F->kbase);
  F->nkid = xmalloc(ncap * sizeof *F->nkid);
  F->kind = xmalloc(ncap);
  F->kid = xmalloc(kcap * sizeof *F->kid);
  F->n = 0;
  F->nslots = 0;
  Frame *fr = xmalloc(fcap * sizeof *fr);
  PMap shared = {0};
  int rc = 0;
#define ENTER(x)                                                                             \
  do {                                                                                       \
    GPExpr *x_ = (x);                                                                        \
    __builtin_prefetch((const char *)x_ - PF_DOWN);                                          \
    int32_t c_ = gp_expr_num_children(x_);                                                   \
    if (nf == fcap) fcap *= 2, fr = xrealloc(fr, fcap * sizeof *fr);                         \
    while (F->nslots + (size_t)c_ > kcap) kcap *= 2, F->kid = xrealloc(F->kid, kcap * sizeof *F->kid); \
    fr[nf++] = (Frame){x_, (uint32_t)F->nslots, 0};                                          \
    F->nslots += (size_t)c_;                                                                 \
  } while (0)
  ENTER(&fn->base);
  while (nf) {
    Frame *f = &fr[nf - 1];
    int32_t count = gp_expr_num_children(f->e);
    if ((int32_t)f->next < count) {
      int32_t pos = (int32_t)f->next++;
      GPExpr *c = gp_expr_child_at(f->e, pos);
      size_t slot = f->base + (size_t)pos;
      if (!graph_kind(c)) {
        F->kid[slot] = -1;
        continue;
      }
      if (maybe_shared(c)) { /* a node with two users here has two references */
        void *v = pmap_get(&shared, c);
        if (v) {
          F->kid[slot] = (int32_t)((uintptr_t)v - 1);
          continue;
        }
      }
      /* F->kid[slot] is set when c finishes */
      ENTER(c);
      if (F->nslots > UINT32_MAX) {
        H->error_set(GP_ERR_PASS, "@%s: more than %u child slots", F->gname, (unsigned)UINT32_MAX);
        rc = -1;
        break;
      }
      continue;
    }
    /* On the way up the frames above visit their next children soon (a chain's constants are
     * all met then): fetch the next child PF_UP frames up, and the node 2 * PF_UP up. */
    if (nf > 2 * PF_UP) __builtin_prefetch(fr[nf - 1 - 2 * PF_UP].e);
    if (nf > PF_UP && (int32_t)fr[nf - 1 - PF_UP].next < gp_expr_num_children(fr[nf - 1 - PF_UP].e))
      __builtin_prefetch(gp_expr_child_at(fr[nf - 1 - PF_UP].e, (int32_t)fr[nf - 1 - PF_UP].next));
    if (F->n >= (size_t)INT32_MAX - 1) {
      H->error_set(GP_ERR_PASS, "@%s: more than %d nodes", F->gname, INT32_MAX - 1);
      rc = -1;
      break;
    }
    if (F->n == ncap) {
      ncap *= 2;
      F->node = xrealloc(F->node, ncap * sizeof *F->node);
      F->kbase = xrealloc(F->kbase, ncap * sizeof *F->kbase);
      F->nkid = xrealloc(F->nkid, ncap * sizeof *F->nkid);
      F->kind = xrealloc(F->kind, ncap);
    }
    int32_t id = (int32_t)F->n++;
    F->node[id] = f->e;
    F->kbase[id] = f->base;
    F->nkid[id] = (uint32_t)count;
    F->kind[id] = (uint8_t)(ekind(f->e) - GP_TI_VAR);
    if (maybe_shared(f->e)) pmap_put(&shared, f->e, (void *)(uintptr_t)(id + 1));
    nf--;
    if (nf) F->kid[fr[nf - 1].base + (size_t)(fr[nf - 1].next - 1)] = id;
  }
#undef ENTER
  xfree(fr);
  pmap_free(&shared);
  return rc;
}

static bool shapes_equal(const GPType *a, const GPType *b) {
  if (a == b) return true;
  if (a->n != b->n) return false;
  for (int32_t i = 0; i < a->n; i++)
    if (a->tensor.shape[i] != b->tensor.shape[i]) return false;
  return true;
}

/* From the constant's type when it has one (interned, so in cache): reading the tensor's header
 * was a miss per constant, a quarter of the pass on a 1M-call graph. */
static bool simple_scalar(const GPConstant *c) {
  const GPType *ty = c->base.checked_type;
  DLDataType d;
  if (ty && ty->kind == GP_TYPE_TENSOR) {
    if (ty->n != 0) return false;
    d = ty->tensor.dtype;
  } else {
    const GPTensor *t = c->data;
    if (!t || t->dl.ndim != 0) return false;
    d = t->dl.dtype;
  }
  if (d.lanes != 1) return false;
  if (d.code == kDLInt) return d.bits == 32 || d.bits == 64;
  if (d.code == kDLFloat) return d.bits == 32 || d.bits == 64;
  if (d.code == kDLUInt) return d.bits == 1; /* bool */
  return false;
}

/* Node patterns, edge patterns per child slot, extern marks; then the out-edge lists. */
static int build_graph(Fuser *F) {
  size_t n = F->n;
  F->pat = xmalloc(n);
  F->ext = xcalloc(n, 1);
  F->kpat = xmalloc(F->nslots ? F->nslots : 1);
  memset(F->kpat, NO_EDGE, F->nslots);
  int err = 0;
  for (size_t id = 0; id < n; id++) {
    prefetch_node(F, id + PF_AHEAD);
    GPExpr *e = F->node[id];
    uint32_t b = F->kbase[id];
    uint8_t p = P_OPAQUE;
    switch (ekind(e)) {
    case GP_TI_CONSTANT: p = simple_scalar((GPConstant *)e) ? P_ELEM : P_OPAQUE; break;
    case GP_TI_CALL: {
      GPCall *c = (GPCall *)e;
      if (ekind(c->op) == GP_TI_OP) {
        const GPOp *op = (const GPOp *)c->op;
        p = (op->flags & GP_OP_NON_COMPUTATIONAL) || op == F->stop_fusion ? P_OPAQUE : (uint8_t)op->pattern;
      } else if (F->kid[b] >= 0) {
        F->kpat[b] = P_OPAQUE; /* the callee: an opaque edge, and extern */
        F->ext[F->kid[b]] = 1;
      }
      const GPType *rt = NULL;
      if (p == P_BCAST) {
        rt = type_of(F, e, &err);
        if (err) return -1;
      }
      for (int32_t i = 0; i < c->nargs; i++) {
        if (F->kid[b + 1 + (uint32_t)i] < 0) continue;
        uint8_t ep = p;
        if (p == P_BCAST && rt->kind == GP_TYPE_TENSOR) {
          const GPType *at = type_of(F, c->args[i], &err);
          if (err) return -1;
          if (at->kind == GP_TYPE_TENSOR && shapes_equal(rt, at)) ep = P_ELEM;
        }
        F->kpat[b + 1 + (uint32_t)i] = ep;
      }
      break;
    }
    case GP_TI_TUPLE: {
      GPTuple *t = (GPTuple *)e;
      p = P_TUPLE;
      for (int32_t i = 0; i < t->n; i++) {
        int32_t k = F->kid[b + (uint32_t)i];
        if (k < 0) continue;
        const GPType *ft = type_of(F, t->fields[i], &err);
        if (err) return -1;
        if (ft->kind == GP_TYPE_TENSOR) F->kpat[b + (uint32_t)i] = P_INJ;
        else F->ext[k] = 1;
      }
      break;
    }
    case GP_TI_TUPLE_GET_ITEM: {
      GPTupleGetItem *g = (GPTupleGetItem *)e;
      const GPType *tt = type_of(F, g->tuple, &err);
      if (err) return -1;
      if (tt->kind != GP_TYPE_TUPLE) return fail_node(F, e, "the tuple operand does not have a tuple type");
      bool all_tensors = true;
      for (int32_t i = 0; i < tt->n; i++)
        if (tt->tuple.fields[i]->kind != GP_TYPE_TENSOR) all_tensors = false;
      int32_t k = F->kid[b];
      if (all_tensors) {
        p = P_INJ;
        if (k >= 0) F->kpat[b] = P_INJ;
      } else if (k >= 0) {
        F->ext[k] = 1;
      }
      break;
    }
    case GP_TI_LET:
    case GP_TI_IF:
    case GP_TI_FUNCTION_EXPR: {
      int32_t nc = gp_expr_num_children(e);
      for (int32_t i = 0; i < nc; i++)
        if (F->kid[b + (uint32_t)i] >= 0) F->ext[F->kid[b + (uint32_t)i]] = 1;
      break;
    }
    default: break; /* vars: opaque */
    }
    F->pat[id] = p;
  }
  /* out edges (CSR by producer), in consumer order */
  F->ooff = xcalloc(n + 1, sizeof *F->ooff);
  for (size_t s = 0; s < F->nslots; s++)
    if (F->kpat[s] != NO_EDGE) F->ooff[F->kid[s] + 1]++;
  for (size_t i = 0; i < n; i++) F->ooff[i + 1] += F->ooff[i];
  size_t ne = F->ooff[n];
  F->onode = xmalloc(ne * sizeof *F->onode);
  F->opat = xmalloc(ne);
  uint32_t *fill = xmalloc((n + 1) * sizeof *fill);
  memcpy(fill, F->ooff, (n + 1) * sizeof *fill);
  for (size_t id = 0; id < n; id++) {
    uint32_t nc = F->nkid[id];
    uint32_t b = F->kbase[id];
    for (uint32_t i = 0; i < nc; i++) {
      uint32_t s = b + i;
      if (F->kpat[s] == NO_EDGE) continue;
      uint32_t at = fill[F->kid[s]]++;
      F->onode[at] = (int32_t)id;
      F->opat[at] = F->kpat[s];
    }
  }
  xfree(fill);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* 2. The post-dominator tree                                                                  */

/* LCA of u and v (tree nodes), folding into *pat the patterns of the nodes stepped over (each
 * node's pattern is that of its path to its parent), as TVM's LeastCommonAncestor.  -1 when u
 * and v are in different trees. */
static int32_t lca(const Fuser *F, int32_t u, int32_t v, uint8_t *pat) {
  const int32_t *par = F->dpar, *jmp = F->djmp, *dep = F->ddep;
  const uint8_t *dp = F->dpat, *jx = F->djmx;
  uint8_t m = *pat;
  if (dep[u] < dep[v]) {
    int32_t t = u;
    u = v;
    v = t;
  }
  while (dep[u] > dep[v]) {
    if (dep[jmp[u]] >= dep[v]) {
      m = pmax(m, jx[u]);
      u = jmp[u];
    } else {
      m = pmax(m, dp[u]);
      u = par[u];
    }
  }
  while (u != v) {
    if (par[u] < 0) {
      *pat = m;
      return -1;
    }
    if (jmp[u] != jmp[v]) {
      m = pmax(m, pmax(jx[u], jx[v]));
      u = jmp[u];
      v = jmp[v];
    } else {
      m = pmax(m, pmax(dp[u], dp[v]));
      u = par[u];
      v = par[v];
    }
  }
  *pat = m;
  return u;
}

static void build_postdom(Fuser *F) {
  size_t n = F->n;
  F->dpar = xmalloc(n * sizeof *F->dpar);
  F->djmp = xmalloc(n * sizeof *F->djmp);
  F->ddep = xmalloc(n * sizeof *F->ddep);
  F->dpat = xmalloc(n);
  F->djmx = xmalloc(n);
  for (size_t i = n; i-- > 0;) {
    int32_t id = (int32_t)i;
    int32_t parent = -1;
    uint8_t p = P_OPAQUE;
    int32_t k = GP_TI_VAR + F->kind[id];
    /* vars and opaque constants never fuse and are nobody's consumer: their tree node is unused */
    bool inert = (k == GP_TI_VAR || k == GP_TI_CONSTANT) && F->pat[id] == P_OPAQUE;
    if (!F->ext[id] && !inert && F->ooff[id] < F->ooff[id + 1]) {
      uint32_t e = F->ooff[id], end = F->ooff[id + 1];
      p = F->opat[e];
      parent = F->onode[e];
      for (e++; e < end && parent >= 0; e++) {
        parent = lca(F, parent, F->onode[e], &p);
        p = pmax(p, F->opat[e]);
      }
    }
    F->dpar[id] = parent;
    if (parent < 0) {
      F->ddep[id] = 1;
      F->dpat[id] = P_OPAQUE;
      F->djmp[id] = id;
      F->djmx[id] = P_ELEM;
      continue;
    }
    F->ddep[id] = F->ddep[parent] + 1;
    F->dpat[id] = p;
    int32_t j = F->djmp[parent];
    if (j != parent && F->ddep[parent] - F->ddep[j] == F->ddep[j] - F->ddep[F->djmp[j]]) {
      F->djmp[id] = F->djmp[j];
      F->djmx[id] = pmax(p, pmax(F->djmx[parent], F->djmx[j]));
    } else {
      F->djmp[id] = parent;
      F->djmx[id] = p;
    }
  }
  xfree(F->djmp);
  xfree(F->ddep);
  xfree(F->djmx);
  F->djmp = F->ddep = NULL;
  F->djmx = NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* 3. Groups and RunFuse                                                                       */

static int32_t find_root(Fuser *F, int32_t g) {
  int32_t r = g;
  while (F->gpar[r] >= 0) r = F->gpar[r];
  while (g != r) {
    int32_t next = F->gpar[g];
    F->gpar[g] = r;
    g = next;
  }
  return r;
}

static int merge_from_to(Fuser *F, int32_t child, int32_t parent) {
  child = find_root(F, child);
  parent = find_root(F, parent);
  if (child == parent) return 0;
  F->gnum[parent] += F->gnum[child];
  F->gpar[child] = parent;
  if (F->ganc[child]) {
    if (F->ganc[parent] || (F->gpat[child] > P_BCAST && F->gpat[parent] > P_BCAST))
      return fail_node(F, F->node[child], "internal error: two complex groups merged");
    F->ganc[parent] = 1;
    F->gpat[parent] = pmax(F->gpat[child], F->gpat[parent]);
  }
  return 0;
}

static void push(Fuser *F, size_t *sp, int32_t v) {
  if (*sp == F->scap) {
    F->scap = F->scap ? F->scap * 2 : 256;
    F->stack = xrealloc(F->stack, F->scap * sizeof *F->stack);
  }
  F->stack[(*sp)++] = v;
}

static void next_epoch(Fuser *F) {
  if (++F->epoch == 0) { /* wrapped: clear */
    memset(F->mark, 0, F->n * sizeof *F->mark);
    F->epoch = 1;
  }
}

static void push_outputs(Fuser *F, size_t *sp, int32_t v) {
  for (uint32_t e = F->ooff[v]; e < F->ooff[v + 1]; e++) push(F, sp, F->onode[e]);
}

/* TVM's CountFusedNodesWithNewChild(child, sink) > max_depth, stopping early: the group size
 * of sink's root plus each node's own group size over the nodes from child up to sink. */
static bool exceeds_depth(Fuser *F, int32_t child, int32_t sink) {
  int64_t total = F->gnum[find_root(F, sink)];
  if (total > F->max_depth) return true;
  next_epoch(F);
  size_t sp = 0;
  push(F, &sp, child);
  while (sp) {
    int32_t v = F->stack[--sp];
    if (v == sink || F->mark[v] == F->epoch) continue;
    F->mark[v] = F->epoch;
    total += F->gnum[v];
    if (total > F->max_depth) return true;
    push_outputs(F, &sp, v);
  }
  return false;
}

enum { COND_LE_BCAST, COND_TO_SINK, COND_LE_INJ };

static inline bool cond_ok(int c, uint8_t kind, bool is_sink) {
  switch (c) {
  case COND_LE_BCAST: return kind <= P_BCAST;
  case COND_TO_SINK: return is_sink ? kind <= P_OUTEW : kind <= P_INJ;
  default: return kind <= P_INJ;
  }
}

/* TVM's CheckPath: every node after src up to and including sink satisfies the condition
 * (on its group root's pattern). */
static bool check_path(Fuser *F, int32_t src, int32_t sink, int c) {
  next_epoch(F);
  size_t sp = 0;
  push_outputs(F, &sp, src);
  while (sp) {
    int32_t v = F->stack[--sp];
    if (F->mark[v] == F->epoch) continue;
    F->mark[v] = F->epoch;
    if (!cond_ok(c, F->gpat[find_root(F, v)], v == sink)) return false;
    if (v != sink) push_outputs(F, &sp, v);
  }
  return true;
}

/* TVM's CommitFuse: merge every node from src up to (not including) sink into sink's group. */
static int commit_fuse(Fuser *F, int32_t src, int32_t sink) {
  next_epoch(F);
  size_t sp = 0;
  push(F, &sp, src);
  while (sp) {
    int32_t v = F->stack[--sp];
    if (v == sink || F->mark[v] == F->epoch) continue;
    F->mark[v] = F->epoch;
    if (merge_from_to(F, v, sink) != 0) return -1;
    push_outputs(F, &sp, v);
  }
  return 0;
}

static int run_fuse(Fuser *F, int phase) {
  for (size_t i = 0; i < F->n; i++) {
    int32_t id = (int32_t)i;
    uint8_t gp = F->gpat[id]; /* the node's own group object, as TVM */
    if (gp == P_OPAQUE) continue;
    int32_t dp = F->dpar[id];
    if (dp < 0) continue;
    int cond;
    if (phase == 2) {
      if (gp > P_INJ) continue;
      int32_t droot = find_root(F, dp);
      if (F->gpat[droot] == P_TUPLE) continue;
      if (!(F->gpat[dp] == P_TUPLE && F->gpat[droot] <= P_INJ)) continue;
      cond = COND_LE_INJ;
    } else {
      if (find_root(F, id) == find_root(F, dp)) continue; /* already fused to the parent */
      if (F->gpat[dp] == P_TUPLE) continue;                 /* do not fuse into a tuple */
      if (gp == P_OUTEW) {
        if (phase != 0 || F->dpat[id] != P_ELEM) continue;
        cond = COND_LE_BCAST;
      } else if (gp <= P_BCAST) {
        if (!(F->dpat[id] <= P_INJ || F->dpat[id] == P_REDUCE)) continue;
        cond = COND_TO_SINK;
      } else if (gp == P_INJ || gp == P_TUPLE) {
        if (phase != 1) continue;
        cond = COND_LE_INJ;
      } else {
        continue; /* comm-reduce never starts a fusion */
      }
    }
    if (exceeds_depth(F, id, dp)) continue;
    if (check_path(F, id, dp, cond) && commit_fuse(F, id, dp) != 0) return -1;
  }
  return 0;
}

static int partition(Fuser *F) {
  size_t n = F->n;
  F->gpar = xmalloc(n * sizeof *F->gpar);
  F->gpat = xmalloc(n);
  F->ganc = xmalloc(n);
  F->gnum = xmalloc(n * sizeof *F->gnum);
  for (size_t i = 0; i < n; i++) {
    F->gpar[i] = -1;
    F->gpat[i] = F->pat[i];
    F->ganc[i] = F->pat[i] == P_OUTEW;
    F->gnum[i] = 1;
  }
  if (!F->fuse) return 0;
  build_postdom(F);
  F->mark = xcalloc(n, sizeof *F->mark);
  F->epoch = 0;
  for (int phase = 0; phase < 3; phase++)
    if (run_fuse(F, phase) != 0) return -1;
  /* Every node straight to its root, so that the rewrite finds a node's group with one load
   * (group_of) and writes nothing. */
  for (size_t i = 0; i < n; i++) find_root(F, (int32_t)i);
  return 0;
}

/* The group (root) of id once partition has compressed every path. */
static inline int32_t group_of(const Fuser *F, int32_t id) {
  int32_t g = F->gpar[id];
  assert(g < 0 || F->gpar[g] < 0);
  return g < 0 ? id : g;
}

/* ------------------------------------------------------------------------------------------ */
/* 4. The rewrite                                                                              */

static Ginfo *ginfo_of(Fuser *F, int32_t root) {
  if (F->gslot[root] >= 0) return &F->ginfo[F->gslot[root]];
  int32_t s;
  if (F->nfree) {
    s = F->gfree[--F->nfree];
  } else {
    if (F->nginfo == F->capginfo) {
      int32_t old = F->capginfo;
      F->capginfo = F->capginfo ? F->capginfo * 2 : 16;
      F->ginfo = xrealloc(F->ginfo, (size_t)F->capginfo * sizeof *F->ginfo);
      memset(F->ginfo + old, 0, (size_t)(F->capginfo - old) * sizeof *F->ginfo);
      F->gfree = xrealloc(F->gfree, (size_t)F->capginfo * sizeof *F->gfree);
    }
    s = F->nginfo++;
  }
  F->gslot[root] = s;
  /* a recycled slot keeps its (empty) params/args arrays from ginfo_close: no allocation */
  Ginfo *g = &F->ginfo[s];
  g->n = 0;
  g->has_call = false;
  g->reshape_only = true;
  return g;
}

static void ginfo_close(Fuser *F, int32_t root) {
  int32_t s = F->gslot[root];
  if (s < 0) return;
  Ginfo *g = &F->ginfo[s];
  for (int32_t i = 0; i < g->n; i++) {
    gp_release(g->params[i]);
    gp_release(g->args[i]);
  }
  g->n = 0; /* the arrays stay for the slot's next group; fuser_free frees them */
  pmap_free(&g->index);
  F->gslot[root] = -1;
  F->gfree[F->nfree++] = s;
}

/* Takes the new reference e: e with checked type t and location line:col.  A node just built
 * by the caller (its only reference) is completed in place, as InferType completes the nodes it
 * builds: nothing else can see it yet.  Otherwise an annotated copy (GPHostAPI.expr_annotate). */
static GPExpr *annotate_fresh(GPExpr *e, const GPType *t, uint32_t line, uint32_t col) {
  if (__atomic_load_n(&e->obj.ref_count, __ATOMIC_ACQUIRE) == 1 && ekind(e) != GP_TI_OP) {
    e->checked_type = t;
    e->line = line;
    e->col = col;
    return e;
  }
  GPExpr *r = H->expr_annotate(e, t, line, col);
  gp_release(e);
  return r;
}

/* `e` (a new reference, or NULL) with checked type t and the location of `loc`.  Every node the
 * rewrite builds has the type of the node it replaces, so the output is typed as it is built. */
static GPExpr *typed_as(Fuser *F, GPExpr *e, const GPType *t, const GPExpr *loc) {
  if (!e) return NULL;
  if (!t) {
    F->untyped = true; /* the pass re-runs InferType on its output */
    return e;
  }
  return annotate_fresh(e, t, loc->line, loc->col);
}

/* "p<n>" into buf (TVM's parameter names). */
static void param_name(char *buf, int32_t n) {
  char tmp[12];
  int k = 0;
  uint32_t v = (uint32_t)n;
  do {
    tmp[k++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  buf[0] = 'p';
  for (int i = 0; i < k; i++) buf[1 + i] = tmp[k - 1 - i];
  buf[1 + k] = 0;
}

/* TVM's GetOrAllocParam: the parameter of group `root` for the outer expression `arg`. */
static GPExpr *param_for(Fuser *F, int32_t root, GPExpr *arg, const GPType *type) {
  Ginfo *g = ginfo_of(F, root);
  if (g->n > 8) {
    void *v = pmap_get(&g->index, arg);
    if (v) return &g->params[(uintptr_t)v - 1]->base;
  } else {
    for (int32_t i = 0; i < g->n; i++)
      if (g->args[i] == arg) return &g->params[i]->base;
  }
  char name[16];
  param_name(name, g->n);
  GPVar *v0 = H->var_new(name, type);
  if (!v0) return NULL;
  GPVar *v = (GPVar *)annotate_fresh(&v0->base, type, 0, 0); /* params have no location */
  if (!v) return NULL;
  if (g->n == g->cap) {
    g->cap = g->cap ? g->cap * 2 : 4;
    g->params = xrealloc(g->params, (size_t)g->cap * sizeof *g->params);
    g->args = xrealloc(g->args, (size_t)g->cap * sizeof *g->args);
  }
  g->params[g->n] = v;
  g->args[g->n] = gp_retain(arg);
  g->n++;
  if (type->kind != GP_TYPE_TENSOR) g->reshape_only = false;
  if (g->n == 9)
    for (int32_t i = 0; i < g->n; i++) pmap_put(&g->index, g->args[i], (void *)(uintptr_t)(i + 1));
  else if (g->n > 9)
    pmap_put(&g->index, arg, (void *)(uintptr_t)g->n);
  return &v->base;
}

/* The expression a node outside its consumer's group stands for (its rewrite, or the node
 * itself when it is not a graph node). */
static inline GPExpr *outer_form(const Fuser *F, uint32_t slot, GPExpr *orig) {
  int32_t c = F->kid[slot];
  return c >= 0 ? F->res[c] : orig;
}

/* Only a group's root is used outside its group (a commit merges a whole post-dominated
 * region; extern nodes are always roots): a use of another member from outside would read its
 * in-group form.  Checked, as an internal error. */
static bool outside_use_ok(Fuser *F, const GPExpr *user, int32_t c) {
  if (c < 0 || group_of(F, c) == c) return true;
  fail_node(F, user, "internal error: uses a node fused into another group");
  return false;
}

/* TVM's GetNewArguments for one argument of a member of group `root`. */
static GPExpr *member_arg(Fuser *F, int32_t root, uint32_t slot, GPExpr *orig, int *err) {
  int32_t c = F->kid[slot];
  if (c >= 0 && group_of(F, c) == root) return F->res[c];
  if (!outside_use_ok(F, orig, c)) {
    *err = 1;
    return NULL;
  }
  GPExpr *outer = outer_form(F, slot, orig);
  if (F->link_params && ekind(outer) == GP_TI_CONSTANT) return outer;
  const GPType *t = type_of(F, orig, err);
  if (*err) return NULL;
  GPExpr *p = param_for(F, root, outer, t);
  if (!p) *err = 1;
  return p;
}

static GPAttrs *prim_attrs(Fuser *F, bool has_call, bool reshape_only) {
  GPAttrs **slot = !has_call ? &F->prim0 : reshape_only ? &F->prim_reshape : &F->prim1;
  if (!*slot) {
    const char *keys[2] = {"Primitive", "relay.reshape_only"};
    GPAttrValue vals[2] = {{.kind = GP_ATTR_INT, .i = has_call ? 1 : 0}, {.kind = GP_ATTR_INT, .i = 1}};
    *slot = H->attrs_new(has_call && reshape_only ? 2 : 1, keys, vals);
  }
  return *slot;
}

/* TVM's MakeNewFunction: Call(fn(params) { body }, args) for the group rooted at `root`. */
static GPExpr *make_function(Fuser *F, int32_t root, GPExpr *body) {
  int err = 0;
  const GPType *rt = type_of(F, F->node[root], &err);
  if (err) return NULL;
  Ginfo *g = ginfo_of(F, root);
  GPAttrs *attrs = prim_attrs(F, g->has_call, g->reshape_only);
  GPExpr *out = NULL;
  const GPType *pbuf[8];
  const GPType **pt = g->n <= 8 ? pbuf : xmalloc((size_t)g->n * sizeof *pt);
  for (int32_t i = 0; i < g->n; i++) pt[i] = g->params[i]->type_annotation;
  const GPType *ft = H->type_func(g->n, pt, rt);
  if (pt != pbuf) xfree(pt);
  const GPExpr *loc = F->node[root];
  if (attrs && ft) {
    GPExpr *fn = typed_as(F, (GPExpr *)H->function_new(g->n, g->params, body, rt, attrs), ft, loc);
    if (fn) {
      out = typed_as(F, (GPExpr *)H->call_new(fn, g->n, g->args, NULL), rt, loc);
      gp_release(fn);
    }
  }
  F->functions++;
  F->fused_nodes += F->gnum[root];
  if (F->gnum[root] > F->largest) F->largest = F->gnum[root];
  ginfo_close(F, root);
  return out;
}

/* Rebuild e around the rewrites of its children (e itself, retained, when none changed). */
static GPExpr *rebuild_untyped(Fuser *F, int32_t id);

static GPExpr *rebuild(Fuser *F, int32_t id) {
  GPExpr *e = F->node[id];
  GPExpr *r = rebuild_untyped(F, id);
  return r == e ? r : typed_as(F, r, e->checked_type, e);
}

static GPExpr *rebuild_untyped(Fuser *F, int32_t id) {
  GPExpr *e = F->node[id];
  uint32_t b = F->kbase[id];
  int32_t nc = gp_expr_num_children(e);
  bool changed = false;
  for (int32_t i = 0; i < nc; i++) {
    int32_t c = F->kid[b + (uint32_t)i];
    if (!outside_use_ok(F, e, c)) return NULL;
    if (c >= 0 && F->res[c] != F->node[c]) changed = true;
  }
  if (!changed) return gp_retain(e);
#define KID(i) outer_form(F, b + (uint32_t)(i), gp_expr_child_at(e, (i)))
  switch (ekind(e)) {
  case GP_TI_CALL: {
    GPCall *c = (GPCall *)e;
    GPExpr *stackbuf[8] = {0};
    GPExpr **args = c->nargs <= 8 ? stackbuf : xmalloc((size_t)c->nargs * sizeof *args);
    for (int32_t i = 0; i < c->nargs; i++) args[i] = KID(1 + i);
    GPExpr *r = (GPExpr *)H->call_new(KID(0), c->nargs, args, c->attrs);
    if (args != stackbuf) xfree(args);
    return r;
  }
  case GP_TI_TUPLE: {
    GPTuple *t = (GPTuple *)e;
    GPExpr *stackbuf[8] = {0};
    GPExpr **fs = t->n <= 8 ? stackbuf : xmalloc((size_t)t->n * sizeof *fs);
    for (int32_t i = 0; i < t->n; i++) fs[i] = KID(i);
    GPExpr *r = (GPExpr *)H->tuple_new(t->n, fs);
    if (fs != stackbuf) xfree(fs);
    return r;
  }
  case GP_TI_TUPLE_GET_ITEM:
    return (GPExpr *)H->tuple_get_item_new(KID(0), ((GPTupleGetItem *)e)->index);
  case GP_TI_LET: {
    GPExpr *var = KID(0);
    if (ekind(var) != GP_TI_VAR) return fail_node(F, e, "internal error: a let var rewritten"), NULL;
    return (GPExpr *)H->let_new((GPVar *)var, KID(1), KID(2));
  }
  case GP_TI_IF: return (GPExpr *)H->if_new(KID(0), KID(1), KID(2));
  case GP_TI_FUNCTION_EXPR: {
    GPFunctionExpr *f = (GPFunctionExpr *)e;
    for (int32_t i = 0; i < f->nparams; i++)
      if (KID(i) != &f->params[i]->base) return fail_node(F, e, "internal error: a param rewritten"), NULL;
    return (GPExpr *)H->function_new(f->nparams, f->params, KID(f->nparams), f->ret_type, f->attrs);
  }
  default: return gp_retain(e);
  }
#undef KID
}

/* A member (or the root) of a group: the call, tuple or get-item over its in-group inputs and
 * the group's params. */
static GPExpr *rewrite_member(Fuser *F, int32_t id, int32_t root) {
  GPExpr *e = F->node[id];
  uint32_t b = F->kbase[id];
  int err = 0;
  GPExpr *r = NULL;
  switch (ekind(e)) {
  case GP_TI_CALL: {
    GPCall *c = (GPCall *)e;
    Ginfo *g = ginfo_of(F, root);
    g->has_call = true;
    if (!(((const GPOp *)c->op)->flags & GP_OP_RESHAPE_ONLY)) g->reshape_only = false;
    GPExpr *stackbuf[8] = {0};
    GPExpr **args = c->nargs <= 8 ? stackbuf : xmalloc((size_t)c->nargs * sizeof *args);
    for (int32_t i = 0; i < c->nargs && !err; i++)
      args[i] = member_arg(F, root, b + 1 + (uint32_t)i, c->args[i], &err);
    if (!err) r = typed_as(F, (GPExpr *)H->call_new(c->op, c->nargs, args, c->attrs), e->checked_type, e);
    if (args != stackbuf) xfree(args);
    break;
  }
  case GP_TI_TUPLE: {
    GPTuple *t = (GPTuple *)e;
    GPExpr *stackbuf[8] = {0};
    GPExpr **fs = t->n <= 8 ? stackbuf : xmalloc((size_t)t->n * sizeof *fs);
    for (int32_t i = 0; i < t->n && !err; i++) fs[i] = member_arg(F, root, b + (uint32_t)i, t->fields[i], &err);
    if (!err) r = typed_as(F, (GPExpr *)H->tuple_new(t->n, fs), e->checked_type, e);
    if (fs != stackbuf) xfree(fs);
    break;
  }
  case GP_TI_TUPLE_GET_ITEM: {
    GPTupleGetItem *g = (GPTupleGetItem *)e;
    GPExpr *t = member_arg(F, root, b, g->tuple, &err);
    if (!err) r = typed_as(F, (GPExpr *)H->tuple_get_item_new(t, g->index), e->checked_type, e);
    break;
  }
  default: return fail_node(F, e, "internal error: not a fusable node in a group"), NULL;
  }
  if (!r || id != root) return r;
  GPExpr *call = make_function(F, root, r);
  gp_release(r);
  return call;
}

static GPExpr *rewrite_node(Fuser *F, int32_t id) {
  GPExpr *e = F->node[id];
  int32_t root = group_of(F, id);
  switch (ekind(e)) {
  case GP_TI_CALL: {
    GPCall *c = (GPCall *)e;
    if (ekind(c->op) != GP_TI_OP) return rebuild(F, id);
    const GPOp *op = (const GPOp *)c->op;
    if (op == F->stop_fusion && c->nargs == 1) {
      if (!outside_use_ok(F, e, F->kid[F->kbase[id] + 1])) return NULL;
      return gp_retain(outer_form(F, F->kbase[id] + 1, c->args[0]));
    }
    if (op->flags & GP_OP_NON_COMPUTATIONAL) return rebuild(F, id);
    return rewrite_member(F, id, root);
  }
  case GP_TI_TUPLE:
    if (root == id) return rebuild(F, id);
    return rewrite_member(F, id, root);
  case GP_TI_TUPLE_GET_ITEM: {
    int32_t t = F->kid[F->kbase[id]];
    if (root == id && (t < 0 || group_of(F, t) != id)) return rebuild(F, id); /* isolated */
    return rewrite_member(F, id, root);
  }
  case GP_TI_VAR:
  case GP_TI_CONSTANT: return gp_retain(e);
  default: return rebuild(F, id);
  }
}

static GPExpr *rewrite_all(Fuser *F) {
  size_t n = F->n;
  F->res = xcalloc(n, sizeof *F->res);
  F->gslot = xmalloc(n * sizeof *F->gslot);
  for (size_t i = 0; i < n; i++) F->gslot[i] = -1;
  for (size_t i = 0; i < n; i++) {
    prefetch_node(F, i + PF_AHEAD);
    GPExpr *r = rewrite_node(F, (int32_t)i);
    if (!r) {
      if (H->error_kind() == GP_OK) fail_node(F, F->node[i], "could not build the rewritten node");
      return NULL;
    }
    F->res[i] = r;
  }
  return gp_retain(F->res[n - 1]);
}

static void fuser_free(Fuser *F) {
  if (F->res) {
    for (size_t i = 0; i < F->n; i++) {
      /* each a locked decrement, which waits for its line: ask for the lines ahead */
      if (i + PF_AHEAD < F->n && F->res[i + PF_AHEAD]) __builtin_prefetch(F->res[i + PF_AHEAD], 1);
      gp_release(F->res[i]);
    }
    xfree(F->res);
  }
  if (F->gslot) {
    for (size_t i = 0; i < F->n; i++) ginfo_close(F, (int32_t)i);
    xfree(F->gslot);
  }
  for (int32_t s = 0; s < F->nginfo; s++) {
    xfree(F->ginfo[s].params);
    xfree(F->ginfo[s].args);
  }
  xfree(F->ginfo);
  xfree(F->gfree);
  xfree(F->node);
  xfree(F->kbase);
  xfree(F->nkid);
  xfree(F->kind);
  xfree(F->kid);
  xfree(F->kpat);
  xfree(F->pat);
  xfree(F->ext);
  xfree(F->ooff);
  xfree(F->onode);
  xfree(F->opat);
  xfree(F->dpar);
  xfree(F->djmp);
  xfree(F->ddep);
  xfree(F->dpat);
  xfree(F->djmx);
  xfree(F->gpar);
  xfree(F->gpat);
  xfree(F->ganc);
  xfree(F->gnum);
  xfree(F->mark);
  xfree(F->stack);
  gp_release(F->prim1);
  gp_release(F->prim0);
  gp_release(F->prim_reshape);
  memset(F, 0, sizeof *F);
}

/* The fused version of one global function (a new reference), or NULL + error. */
static GPFunctionExpr *fuse_function(Fuser *F, GPFunctionExpr *fn) {
  if (!fn->base.checked_type) {
    fail_node(F, &fn->base, "has no type (FuseOps needs a typed module: run InferType first)");
    return NULL;
  }
  if (build_index(F, fn) != 0) return NULL;
  if (build_graph(F) != 0) return NULL;
  if (partition(F) != 0) return NULL;
  /* what the rewrite no longer needs */
  xfree(F->kpat);
  xfree(F->ext);
  xfree(F->ooff);
  xfree(F->onode);
  xfree(F->opat);
  xfree(F->dpar);
  xfree(F->dpat);
  xfree(F->mark);
  F->kpat = F->ext = F->opat = F->dpat = NULL;
  F->ooff = NULL;
  F->mark = NULL;
  F->onode = F->dpar = NULL;
  GPExpr *r = rewrite_all(F);
  if (r && ekind(r) != GP_TI_FUNCTION_EXPR) {
    gp_release(r);
    fail_node(F, &fn->base, "internal error: the rewrite is not a function");
    return NULL;
  }
  return (GPFunctionExpr *)r;
}

/* ------------------------------------------------------------------------------------------ */
/* The pass                                                                                    */

/* A function pass (TVM's CreateFunctionPass): every function but those std_function_skipped
 * skips (Compiler, SkipOptimization) and, as TVM's fuse mutator, those with a non-zero
 * Primitive attribute.  The rewrite types every node it builds (the type of the node it
 * replaces), so the result is re-inferred only when some node could not be typed. */
static int fuse_ops(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args("FuseOps", args, nargs, &mod, &ctx) != 0) return -1;
  int64_t max_depth = std_config_int(ctx, "FuseOps.max_depth", 256);
  bool link_params = std_config_bool(ctx, "FuseOps.link_params", false);
  bool fuse = !ctx || H->ctx_opt_level(ctx) > 0;
  if (max_depth < 0) {
    H->error_set(GP_ERR_VALUE, "FuseOps.max_depth must be >= 0, got %lld", (long long)max_depth);
    return -1;
  }
  const GPOp *stop_fusion = H->op_get("annotation.stop_fusion");
  if (!stop_fusion) H->error_clear();
  GPModule *typed = std_module_typed(mod) ? gp_retain(mod) : H->infer_types(mod);
  if (!typed) return -1;
  GPModule *out = NULL;
  int64_t functions = 0, fused_nodes = 0, largest = 0;
  bool retype = false;
  for (int32_t f = 0; f < typed->num_functions; f++) {
    GPFunctionExpr *fn = typed->funcs[f];
    if (std_function_skipped(fn) || attr_nonzero(fn->attrs, "Primitive")) continue;
    Fuser F = {.max_depth = max_depth, .link_params = link_params, .fuse = fuse, .stop_fusion = stop_fusion,
               .gname = typed->gvars[f]->name, .source = typed->source_name};
    GPFunctionExpr *nf = fuse_function(&F, fn);
    functions += F.functions;
    fused_nodes += F.fused_nodes;
    if (F.largest > largest) largest = F.largest;
    retype |= F.untyped;
    fuser_free(&F);
    if (!nf) goto fail;
    if (nf == fn) {
      gp_release(nf);
      continue;
    }
    if (!out) out = H->module_copy(typed);
    int rc = out ? H->module_add(out, typed->gvars[f]->name, nf, 1) : -1;
    gp_release(nf);
    if (rc != 0) goto fail;
  }
  std_note(ctx, "%lld primitive functions holding %lld nodes (largest %lld), max_depth %lld%s%s",
           (long long)functions, (long long)fused_nodes, (long long)largest, (long long)max_depth,
           link_params ? ", link_params" : "", fuse ? "" : ", opt level 0: no fusion");
  if (!out) return std_return_module(result, typed);
  gp_release(typed);
  if (retype) {
    GPModule *r = H->infer_types(out);
    gp_release(out);
    if (!r) return -1;
    out = r;
  }
  return std_return_module(result, out);
fail:
  gp_release(out);
  gp_release(typed);
  return -1;
}

int std_register_fuse_ops(void) {
  static const char *const required[] = {"InferType"};
  GPConfigKey keys[] = {
      {.name = "max_depth", .type_index = GP_TI_INT, .default_value = {.type_index = GP_TI_INT, .v_int64 = 256},
       .help = "the most nodes one fused (primitive) function may hold (TVM's relay.FuseOps.max_depth)"},
      {.name = "link_params", .type_index = GP_TI_BOOL, .default_value = {.type_index = GP_TI_BOOL, .v_int64 = 0},
       .help = "keep constant arguments (non-scalar constants) inside the fused function bodies instead "
               "of passing them as parameters (TVM's relay.FuseOps.link_params)"},
  };
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = "FuseOps",
      .opt_level = 0,
      .kind = GP_PASS_TRANSFORM,
      .required = required,
      .num_required = 1,
      .config_keys = keys,
      .num_config_keys = 2,
      .func = fuse_ops,
      .help = "Fuse ops into primitive functions along post-dominator paths (TVM's FuseOps).",
  };
  return H->pass_register(&info, 0);
}
