/* merge_compiler_regions.c -- MergeCompilerRegions (TVM v0.12's merge_compiler_regions.cc):
 * merge each annotated region into the regions of the same target it consumes, as far as that
 * creates no cycle, and drop the compiler_end -> compiler_begin pairs that end up inside one
 * region.  Regions of "default" merge like any other (PartitionGraph drops them).
 *
 * TVM's rule.  Regions are visited in topological order (a region after every region it reads
 * from).  Visiting R, with parents P (the regions its compiler_begins read from):
 *   restr(R) = union of restr(P)  +  every parent P of another target;
 *   each parent P of R's target that is not in restr(R) merges into R.
 * restr(R) holds the regions that reach R through a region of another target; merging one of
 * them into R would make a cycle through that region (A -> B(unsupported) -> C with A -> C: A is
 * in restr(C), so A and C stay apart).
 *
 * Our bound.  TVM keeps restr as id sets and renames a merged id in every set (a scan of all
 * regions per merge) -- quadratic.  Here:
 *  - regions are a union-find (byoc.h): a set holds region ids and is read through find(), so a
 *    merge renames nothing;
 *  - an element is dropped from the sets built after every region reading from it has been
 *    visited (a count of unvisited reader edges per group): only a region that is still to be
 *    read from can ever be asked about (restr(R) is only ever queried for R's parents), so
 *    dropping it changes no decision.  A set then holds at most the "live" regions that reach R
 *    through another target -- the width of the frontier, a handful on a chain or a ResNet;
 *  - building restr(R) costs the sizes of its parents' sets; with at most K = 1024 live
 *    elements per set the pass is O((nodes + edges) * K) worst case, O(nodes + edges) on
 *    graphs of bounded width.  A set that would exceed K is marked saturated: its region and
 *    every region reading from it (transitively) merge no parent -- never a cycle, only fewer
 *    merges than TVM (reported with --explain).
 * The topological order is TVM's (a depth-first walk from the compiler_ends in post order,
 * parents first, explicit stack).
 *
 * Not in TVM: regions in different control scopes (the branches of an if, the code around it,
 * the body of a function expression) do not merge; a parent in another scope counts as one of
 * another target.  TVM merges a region into a branch that reads it, so that PartitionGraph
 * meets a region with nodes on both sides of the if.  Finding the scopes costs the depth of
 * if-nesting per edge.  In a function with lets, nodes first read before a let binding and after
 * it are in different scopes too (byoc_region_scopes): merged, a region read by a let's value
 * could take an argument that a later binding computes. */
#include "byoc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PASS_NAME "MergeCompilerRegions"
#define RESTR_CAP 1024

typedef struct Merge {
  const char *source;
  ByocOps ops;
  ByocIndex ix;
  ByocRegions rs;
  int64_t merged, saturated;
} Merge;

typedef struct RSet {
  int32_t *v;
  int32_t n, cap;
  bool saturated;
} RSet;

static void rset_push(RSet *s, int32_t x) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 4;
    s->v = realloc(s->v, sizeof(int32_t) * (size_t)s->cap);
    if (!s->v) abort();
  }
  s->v[s->n++] = x;
}

/* The graph of groups merge_regions walks.  Groups 0 .. nreg-1 are the regions (read through
 * find); each node outside every region that is not a leaf (an if, a let, a tuple or call left
 * outside, a function expression) is a group of its own, nreg + k, that never merges: a path
 * from a region through it back into a region must count as leaving the target, as a region of
 * another target does (TVM sees no parent there, and merges a region into one that reads it
 * through an if: a cycle).  A let-bound variable stands for the let's value. */
typedef struct Groups {
  int32_t nreg, ng;
  int32_t *pseudo; /* per node: its group (nreg + k) or -1 */
  int32_t *node;   /* per pseudo group k: its node */
  int32_t *vres;   /* per node: a let-bound variable's value node, else the node itself; NULL
                    * when the function has no let */
  int32_t *off, *par; /* per group (as built): its parents, par[off[g] .. off[g + 1]) */
} Groups;

static bool is_leaf(int32_t kind) {
  return kind == GP_TI_VAR || kind == GP_TI_CONSTANT || kind == GP_TI_GLOBAL_VAR || kind == GP_TI_OP;
}

/* The group node i stands in (after let resolution), or -1 for a leaf. */
static int32_t node_group(Merge *M, const Groups *G, int32_t i) {
  if (G->vres) i = G->vres[i];
  int32_t g = byoc_group(&M->rs, i);
  return g >= 0 ? g : G->pseudo[i];
}

/* The parents of a region: the groups its begins read; of a pseudo group: the groups of its
 * node's children (an end: the region it closes). */
static void groups_build(Merge *M, Groups *G) {
  ByocRegions *r = &M->rs;
  int32_t n = (int32_t)M->ix.n, nreg = r->nreg;
  G->nreg = nreg;
  G->pseudo = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  G->node = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  if (!G->pseudo || !G->node) abort();
  int32_t np = 0;
  for (int32_t i = 0; i < n; i++) {
    bool alone = r->region[i] < 0 && i != n - 1 && !is_leaf(ekind(M->ix.nodes[i])) && !byoc_ann(&M->ops, M->ix.nodes[i]);
    G->pseudo[i] = alone ? nreg + np : -1;
    if (alone) G->node[np++] = i;
  }
  const GPFunctionExpr *fn = n ? (const GPFunctionExpr *)M->ix.nodes[n - 1] : NULL;
  if (fn && H->expr_has_kind(fn->body, GP_TI_LET)) { /* let var -> value (a value may be a bound var) */
    G->vres = malloc(sizeof(int32_t) * (size_t)n);
    if (!G->vres) abort();
    for (int32_t i = 0; i < n; i++) G->vres[i] = i;
    for (int32_t i = 0; i < n; i++)
      if (ekind(M->ix.nodes[i]) == GP_TI_LET) G->vres[byoc_kid(&M->ix, i, 0)] = byoc_kid(&M->ix, i, 1);
    for (int32_t i = 0; i < n; i++) {
      int32_t x = i, hops = 0;
      while (G->vres[x] != x && hops++ < n) x = G->vres[x];
      G->vres[i] = x;
    }
  }
  G->ng = nreg + np;
  G->off = calloc((size_t)G->ng + 1, sizeof(int32_t));
  if (!G->off) abort();
  /* two passes: count, then fill */
  for (int pass = 0; pass < 2; pass++) {
    int32_t *fill = NULL;
    if (pass == 1) {
      for (int32_t g = 0; g < G->ng; g++) G->off[g + 1] += G->off[g];
      G->par = malloc(sizeof(int32_t) * (size_t)(G->off[G->ng] ? G->off[G->ng] : 1));
      fill = malloc(sizeof(int32_t) * (size_t)(G->ng ? G->ng : 1));
      if (!G->par || !fill) abort();
      memcpy(fill, G->off, sizeof(int32_t) * (size_t)G->ng);
    }
    for (int32_t g = 0; g < nreg; g++) {
      if (byoc_find(r, g) != g) continue;
      for (int32_t b = r->ins_head[g]; b >= 0; b = r->next[b]) {
        int32_t p = node_group(M, G, byoc_kid(&M->ix, b, 1));
        if (p < 0 || p == g) continue;
        if (pass == 0) G->off[g + 1]++;
        else G->par[fill[g]++] = p;
      }
    }
    for (int32_t k = 0; k < np; k++) {
      int32_t i = G->node[k], g = nreg + k, nk = M->ix.off[i + 1] - M->ix.off[i];
      for (int32_t c = 0; c < nk; c++) {
        int32_t p = node_group(M, G, byoc_kid(&M->ix, i, c));
        if (p < 0 || p == g) continue;
        if (pass == 0) G->off[g + 1]++;
        else G->par[fill[g]++] = p;
      }
    }
    free(fill);
  }
}

static void groups_free(Groups *G) {
  free(G->pseudo);
  free(G->node);
  free(G->vres);
  free(G->off);
  free(G->par);
}

/* A parent as it is now: a region through find, a pseudo group as it is. */
static inline int32_t gfind(ByocRegions *r, const Groups *G, int32_t g) { return g < G->nreg ? byoc_find(r, g) : g; }

/* Equal compilers are usually one string: equal attribute sets are one interned object. */
static inline bool same_target(const ByocRegions *r, int32_t a, int32_t b) {
  return r->target[a] == r->target[b] || strcmp(r->target[a], r->target[b]) == 0;
}

/* Parent p may merge into R: both regions, the same target and the same scope (a region whose
 * begins sit in several scopes merges nothing). */
static inline bool mergeable(const ByocRegions *r, const Groups *G, const int64_t *gscope, int32_t p, int32_t R) {
  return p < G->nreg && R < G->nreg && same_target(r, p, R) && gscope[p] >= 0 && gscope[p] == gscope[R];
}

static int merge_regions(Merge *M) {
  ByocRegions *r = &M->rs;
  int32_t nreg = r->nreg;
  if (!nreg) return 0;
  Groups G = {0};
  groups_build(M, &G);
  int32_t ng = G.ng;
  /* per region: the scope of its begins, -1 when they differ (all 0 without ifs and closures) */
  int32_t mixed;
  int64_t *gscope = byoc_region_scopes(r, &M->ix, &M->ops, false, &mixed);
  int32_t *pending = calloc((size_t)ng, sizeof(int32_t));
  int32_t *stamp = malloc(sizeof(int32_t) * (size_t)ng);
  uint8_t *state = calloc((size_t)ng, 1); /* 0 new, 1 on stack, 2 visited */
  int32_t *cursor = malloc(sizeof(int32_t) * (size_t)ng);
  int32_t *stack = malloc(sizeof(int32_t) * (size_t)ng);
  int32_t *parents = malloc(sizeof(int32_t) * (size_t)ng);
  RSet *sets = calloc((size_t)ng, sizeof(RSet));
  if (!pending || !stamp || !state || !cursor || !stack || !parents || !sets) abort();
  for (int32_t i = 0; i < ng; i++) stamp[i] = -1;
  /* reader edges per group (the groups as built; merges add their counts up) */
  for (int32_t g = 0; g < ng; g++)
    for (int32_t k = G.off[g]; k < G.off[g + 1]; k++) pending[G.par[k]]++;
  int32_t stamp_id = 0;
  for (int32_t e = 0; e < r->n; e++) {
    if (byoc_ann(&M->ops, M->ix.nodes[e]) != 2) continue;
    int32_t start = byoc_group(r, e);
    if (state[start]) continue;
    int32_t sp = 0;
    stack[sp++] = start;
    state[start] = 1;
    cursor[start] = G.off[start];
    while (sp) {
      int32_t R = stack[sp - 1];
      /* descend into the next unvisited parent */
      bool pushed = false;
      while (cursor[R] < G.off[R + 1]) {
        int32_t p = gfind(r, &G, G.par[cursor[R]++]);
        if (!state[p]) {
          state[p] = 1;
          cursor[p] = G.off[p];
          stack[sp++] = p;
          pushed = true;
          break;
        }
      }
      if (pushed) continue;
      sp--;
      /* visit R: its parents are visited (each is its own group root, as merges only take
       * parents into the region being visited) */
      int32_t np = 0, my = ++stamp_id;
      for (int32_t k = G.off[R]; k < G.off[R + 1]; k++) {
        int32_t p = gfind(r, &G, G.par[k]);
        if (p == R || stamp[p] == my) continue;
        stamp[p] = my;
        parents[np++] = p;
      }
      /* restr(R): the parents' sets, live elements only, read through find, deduplicated */
      RSet S = {0};
      int32_t mark = ++stamp_id;
      for (int32_t k = 0; k < np && !S.saturated; k++) {
        RSet *ps = &sets[parents[k]];
        if (ps->saturated) S.saturated = true;
        for (int32_t j = 0; j < ps->n && !S.saturated; j++) {
          int32_t x = gfind(r, &G, ps->v[j]);
          if (pending[x] <= 0 || stamp[x] == mark) continue;
          stamp[x] = mark;
          rset_push(&S, x);
          if (S.n > RESTR_CAP) S.saturated = true;
        }
      }
      for (int32_t k = 0; k < np && !S.saturated; k++) {
        int32_t p = parents[k];
        if (mergeable(r, &G, gscope, p, R) || stamp[p] == mark) continue;
        stamp[p] = mark;
        rset_push(&S, p);
        if (S.n > RESTR_CAP) S.saturated = true;
      }
      if (S.saturated) {
        free(S.v);
        S = (RSet){.saturated = true};
        M->saturated++;
      }
      /* reader edges of R's inputs are now consumed */
      for (int32_t k = G.off[R]; k < G.off[R + 1]; k++) pending[gfind(r, &G, G.par[k])]--;
      int32_t root = R;
      for (int32_t k = 0; k < np && !S.saturated; k++) {
        int32_t p = parents[k];
        if (!mergeable(r, &G, gscope, p, R) || stamp[p] == mark) continue;
        int32_t pend = pending[p] + pending[root];
        int64_t scope = gscope[R];
        free(sets[p].v);
        sets[p] = (RSet){0};
        root = byoc_union(r, p, root);
        pending[root] = pend;
        gscope[root] = scope;
        M->merged++;
      }
      if (root != R) {
        free(sets[R].v);
        sets[R] = (RSet){0};
      }
      sets[root] = S;
      state[root] = 2;
      state[R] = 2;
    }
  }
  for (int32_t i = 0; i < ng; i++) free(sets[i].v);
  free(sets);
  free(gscope);
  free(parents);
  free(stack);
  free(cursor);
  free(state);
  free(stamp);
  free(pending);
  groups_free(&G);
  return 0;
}

/* The function without the compiler_begin(compiler_end(x)) pairs inside one region: every node
 * rebuilt in post order from its children's new versions (such a begin becomes x's). */
static GPExpr *drop_inner_annotations(Merge *M) {
  size_t n = M->ix.n;
  GPExpr **nv = gp_scratch_zalloc(n ? n : 1, sizeof(GPExpr *));
  GPExpr *small[16], *res = NULL;
  size_t i = 0;
  for (; i < n; i++) {
    GPExpr *e = M->ix.nodes[i];
    if (byoc_ann(&M->ops, e) == 1) {
      int32_t ei = byoc_kid(&M->ix, (int32_t)i, 1);
      if (byoc_ann(&M->ops, M->ix.nodes[ei]) == 2 && byoc_group(&M->rs, (int32_t)i) == byoc_group(&M->rs, ei)) {
        nv[i] = gp_retain(nv[byoc_kid(&M->ix, ei, 1)]);
        continue;
      }
    }
    int32_t nk = gp_expr_num_children(e);
    GPExpr **kids = nk <= 16 ? small : malloc(sizeof(GPExpr *) * (size_t)nk);
    if (!kids) abort();
    for (int32_t c = 0; c < nk; c++) kids[c] = nv[byoc_kid(&M->ix, (int32_t)i, c)];
    nv[i] = byoc_rebuild(e, kids, true);
    if (kids != small) free(kids);
    if (!nv[i]) break;
  }
  if (i == n && n) res = gp_retain(nv[n - 1]);
  for (size_t k = 0; k < n; k++) gp_release(nv[k]);
  gp_scratch_free(nv);
  return res;
}

static GPExpr *merge_function(void *user, const GPModule *mod, int32_t index) {
  Merge *M = user;
  M->source = mod->source_name;
  GPExpr *fn = &mod->funcs[index]->base;
  GPExpr *res = NULL;
  if (byoc_index_build(&M->ix, fn) != 0) return NULL;
  if (byoc_regions_build(&M->rs, &M->ix, &M->ops, PASS_NAME, M->source) == 0 && merge_regions(M) == 0)
    res = drop_inner_annotations(M);
  byoc_regions_free(&M->rs);
  byoc_index_free(&M->ix);
  return res;
}

static int merge_compiler_regions(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  (void)self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args(PASS_NAME, args, nargs, &mod, &ctx) != 0) return -1;
  Merge M = {0};
  if (byoc_ops(&M.ops) != 0) return -1;
  /* dropping identity annotations keeps every type: the rebuilt nodes carry them, no re-typing */
  bool untyped = false;
  GPModule *out = std_function_pass_typed(mod, merge_function, &M, &untyped);
  if (!out) return -1;
  std_note(ctx, "merged %lld regions into their consumers", (long long)M.merged);
  if (M.saturated)
    std_note(ctx, "%lld regions had more than %d live restrictions and merged no parent", (long long)M.saturated,
             RESTR_CAP);
  return std_return_module(result, out);
}

int std_register_merge_compiler_regions(void) {
  static const char *const required[] = {"InferType"};
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = PASS_NAME,
      .opt_level = 0,
      .kind = GP_PASS_TRANSFORM,
      .required = required,
      .num_required = 1,
      .func = merge_compiler_regions,
      .help = "Merge annotated regions of one target as far as no cycle forms (TVM's MergeCompilerRegions).",
  };
  return H->pass_register(&info, 0);
}
