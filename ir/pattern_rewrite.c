/* pattern_rewrite.c -- the rewrite driver (GPHostAPI.pattern_rewrite) and pattern_match's
 * neighbour.  Two phases over one node index of the expression:
 *
 *  1. Selection, one walk per pattern, consumers before producers (reverse post-order, TVM's
 *     PatternGrouper order): at each node not yet claimed, match; refuse the match when one of
 *     its interior nodes other than the root is claimed by an earlier match or has a use
 *     outside the match (its edge count from inside the match is below its in-degree; TVM's and
 *     Paddle Lite's rule: only the root may have outside consumers).  Constants matched by
 *     `const` are embedded, not claimed: a composite may copy a shared constant.  A match the
 *     spec's check declines claims nothing.
 *  2. One rebuilding walk, producers first (gp_rewrite_indexed): at the root of each accepted
 *     match the spec's rewrite builds the replacement from the rebuilt nodes.
 *
 * Cost: the index, the in-degrees and the rebuild are linear; a selection walk costs one
 * kind/op test per node plus a match (bounded by the pattern) where that test passes. */
#include "pattern.h"
#include "../common/scratch.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* How many nodes ahead the selection walk prefetches a candidate and its children. */
#define SELECT_AHEAD 12

typedef struct MRec {
  int32_t pattern;
  int32_t root;      /* node id */
  int32_t nnodes, ninputs, ncaps;
  size_t off;        /* into ids: nodes, then inputs, then captures (-1: unbound) */
} MRec;

typedef struct Driver {
  GPRewriteSpec *spec;
  const GPNodeIndex *ni; /* shared (gp_ni_acquire) */
  int32_t *indeg;
  int32_t *claim;    /* 0, or 1 + the match that claims the node */
  uint8_t *skip;     /* inside a Composite / Primitive / Compiler function */
  MRec *recs;
  size_t nrecs, cap_recs;
  int32_t *ids;
  size_t nids, cap_ids;
  GPExpr **scratch;  /* the match handed to rewrite */
  size_t cap_scratch;
  int64_t rewritten;
  int64_t blocked;   /* matches refused for a claim or an outside use (not by the check) */
  const bool *live;  /* per pattern: its root may occur (settle reads it) */
} Driver;

static void ids_push(Driver *d, int32_t v) {
  if (d->nids == d->cap_ids) {
    d->cap_ids = d->cap_ids ? d->cap_ids * 2 : 256;
    d->ids = gp_realloc(d->ids, d->cap_ids * sizeof *d->ids);
  }
  d->ids[d->nids++] = v;
}

static bool fn_is_sealed(const GPExpr *e) {
  if (gp_kind(e) != GP_TI_FUNCTION_EXPR) return false;
  const GPAttrs *a = GP_AS(const GPFunctionExpr, e)->attrs;
  if (!a) return false;
  static const char *const keys[] = {"Composite", "Primitive", "Compiler", "PartitionedFromPattern"};
  for (size_t k = 0; k < GP_ARRAY_LEN(keys); k++) {
    const GPAttrValue *v = gp_attrs_get(a, keys[k]);
    if (v && v->kind != GP_ATTR_NONE && !((v->kind == GP_ATTR_INT || v->kind == GP_ATTR_BOOL) && v->i == 0))
      return true;
  }
  return false;
}

/* Mark every node under a sealed nested function (each node once: linear). */
static void mark_sealed(Driver *d) {
  size_t n = d->ni->n;
  int32_t *stack = NULL;
  size_t sl = 0, sc = 0;
  for (size_t i = 0; i + 1 < n; i++) {
    if (d->skip[i] || !fn_is_sealed(d->ni->nodes[i])) continue;
    stack = gp_realloc(stack, (sc = sc ? sc : 64) * sizeof *stack);
    stack[sl++] = (int32_t)i;
    while (sl) {
      int32_t v = stack[--sl];
      if (d->skip[v]) continue;
      d->skip[v] = 1;
      int32_t vk = gp_expr_num_children(d->ni->nodes[v]);
      if (sl + (size_t)vk > sc) {
        while (sl + (size_t)vk > sc) sc *= 2;
        stack = gp_realloc(stack, sc * sizeof *stack);
      }
      for (int32_t k = 0; k < vk; k++) stack[sl++] = gp_ni_kid(d->ni, v, k);
    }
  }
  gp_free(stack);
}

/* The id of e among the children of the nodes ids[0 .. n), or -1. */
static int32_t find_child(const Driver *d, const int32_t *ids, size_t n, const GPExpr *e) {
  for (size_t j = 0; j < n; j++) {
    int32_t u = ids[j];
    int32_t nk = gp_expr_num_children(d->ni->nodes[u]);
    for (int32_t k = 0; k < nk; k++) {
      int32_t c = gp_ni_kid(d->ni, u, k);
      if (d->ni->nodes[c] == e) return c;
    }
  }
  return -1;
}

/* Selection for the match the matcher holds at node `root`: 1 accepted (recorded), 0 refused,
 * -1 error (from the check). */
static int select_match(Driver *d, GPMatcher *m, int32_t pattern, int32_t root) {
  size_t nn = m->nodes.len, ni = m->inputs.len, nc = (size_t)m->p->pub.num_captures;
  size_t base = d->nids;
  /* interior ids in pre-order: each node's parent precedes it */
  ids_push(d, root);
  for (size_t j = 1; j < nn; j++) {
    int32_t id = find_child(d, d->ids + base, j, m->nodes.items[j]);
    assert(id >= 0);
    ids_push(d, id);
  }
  const int32_t *in = d->ids + base;
  bool ok = true;
  for (size_t j = 0; j < nn && ok; j++) {
    int32_t id = in[j];
    if (gp_kind(d->ni->nodes[id]) == GP_TI_CONSTANT) continue;
    if (d->claim[id]) ok = false;
    if (!ok || j == 0) continue;
    bool dup = false;
    for (size_t q = 0; q < j; q++) dup = dup || in[q] == id;
    if (dup) continue;
    /* edges into id from the distinct interior nodes */
    int32_t inside = 0;
    for (size_t q = 0; q < nn; q++) {
      bool seen = false;
      for (size_t r = 0; r < q; r++) seen = seen || in[r] == in[q];
      if (seen) continue;
      int32_t nk = gp_expr_num_children(d->ni->nodes[in[q]]);
      for (int32_t k = 0; k < nk; k++) inside += gp_ni_kid(d->ni, in[q], k) == id;
    }
    if (inside != d->indeg[id]) ok = false;
  }
  /* inputs: children of interior nodes, never interior themselves */
  for (size_t j = 0; j < ni && ok; j++) {
    int32_t id = find_child(d, d->ids + base, nn, m->inputs.items[j]);
    assert(id >= 0);
    for (size_t q = 0; q < nn; q++) ok = ok && d->ids[base + q] != id;
    ids_push(d, id);
  }
  if (!ok) d->blocked++;
  if (ok && d->spec->check) {
    GPMatch gm = gp_matcher_view(m, pattern, d->ni->nodes[root]);
    int r = d->spec->check(d->spec->user, &gm);
    if (r < 0) {
      if (!gp_error_kind()) gp_error_set(GP_ERR_INTERNAL, "pattern_rewrite: the check failed without an error");
      d->nids = base;
      return -1;
    }
    ok = r > 0;
  }
  if (!ok) {
    d->nids = base;
    return 0;
  }
  for (size_t c = 0; c < nc; c++) {
    GPExpr *e = m->caps[c];
    int32_t id = -1;
    for (size_t q = 0; e && q < nn + ni && id < 0; q++)
      if (d->ni->nodes[d->ids[base + q]] == e) id = d->ids[base + q];
    ids_push(d, id);
  }
  if (d->nrecs == d->cap_recs) {
    d->cap_recs = d->cap_recs ? d->cap_recs * 2 : 64;
    d->recs = gp_realloc(d->recs, d->cap_recs * sizeof *d->recs);
  }
  d->recs[d->nrecs] = (MRec){.pattern = pattern, .root = root, .nnodes = (int32_t)nn, .ninputs = (int32_t)ni,
                             .ncaps = (int32_t)nc, .off = base};
  d->nrecs++;
  for (size_t j = 0; j < nn; j++) {
    int32_t id = d->ids[base + j];
    if (gp_kind(d->ni->nodes[id]) != GP_TI_CONSTANT) d->claim[id] = (int32_t)d->nrecs;
  }
  return 1;
}

static GPExpr *rebuild(void *user, int32_t id, GPExpr *orig, GPExpr *rebuilt, GPExpr *const *done) {
  Driver *d = user;
  int32_t c = d->claim[id];
  if (!c || d->recs[c - 1].root != id) return gp_rewrite_keep;
  const MRec *r = &d->recs[c - 1];
  size_t total = (size_t)(r->nnodes + r->ninputs + r->ncaps);
  if (total > d->cap_scratch) {
    d->cap_scratch = total * 2;
    d->scratch = gp_realloc(d->scratch, d->cap_scratch * sizeof *d->scratch);
  }
  const int32_t *ids = d->ids + r->off;
  for (size_t j = 0; j < total; j++) {
    int32_t v = ids[j];
    d->scratch[j] = v < 0 ? NULL : v == id ? rebuilt : done[v];
  }
  GPMatch gm = {.struct_size = sizeof gm, .abi_version = GP_ABI_VERSION, .pattern_index = r->pattern,
                .pattern = d->spec->patterns[r->pattern], .root = rebuilt, .num_nodes = r->nnodes,
                .num_inputs = r->ninputs, .nodes = d->scratch, .inputs = d->scratch + r->nnodes,
                .num_captures = r->ncaps, .captures = d->scratch + r->nnodes + r->ninputs};
  GPExpr *repl = d->spec->rewrite(d->spec->user, &gm);
  if (!repl) {
    if (!gp_error_kind()) gp_error_set(GP_ERR_INTERNAL, "pattern_rewrite: the rewrite callback failed without an error");
    return NULL;
  }
  if (!gp_is_expr(repl)) return repl; /* gp_rewrite_indexed reports it */
  d->rewritten++;
  if (!repl->checked_type && orig->checked_type) {
    /* The replacement computes the root's value: it has the root's type (and its location). */
    GPExpr *typed = gp_expr_annotate(repl, orig->checked_type, repl->line ? repl->line : orig->line,
                                     repl->line ? repl->col : orig->col);
    gp_release(repl);
    repl = typed;
  }
  return repl;
}

/* Whether pattern p may match at node id, from the index alone: the root's op or kind (a bit
 * test), then gp_pattern_prematch. */
static inline bool may_root(const GPPattern *p, const GPNodeIndex *ni, size_t id) {
  return gp_pattern_may_match_tag(p, ni->tag[id]) && gp_pattern_prematch(p, ni, (int32_t)id);
}

static void driver_free(Driver *d) {
  gp_ni_release(d->ni);
  gp_scratch_free(d->indeg);
  gp_scratch_free(d->claim);
  gp_scratch_free(d->skip);
  gp_free(d->recs);
  gp_free(d->ids);
  gp_free(d->scratch);
}

/* ---- the fixed point
 *
 * A caller repeating a rewrite until nothing changes (SimplifyExpr) ends with a round that finds
 * nothing over the whole graph.  After a round that rewrote, the driver settles that round here
 * instead, over the places where the graph changed: a match in the result that was not there
 * before has a node within the patterns' height of a replacement (a node it made, or its root),
 * since elsewhere each node and what lies below it to that depth are the input's, rebuilt (same
 * ops, attributes, types, constants and sharing), where every match was either rewritten,
 * declined by the check (which sees only the match, so declines again), or refused for a claim
 * or an outside use (then nothing is settled).  So the candidates are the replacements' new
 * nodes and, per replacement, the rebuilt ancestors of its root up to the height (not through
 * another accepted match's nodes: that match's own walk covers what lies above it); when none
 * matches with the check's consent, the result is a fixed point of this spec, and a repeat call
 * with the same spec (patterns, check, rewrite, user) on it returns it at once.  Not tried when
 * the graph holds a nested function (sealed bodies are not matched) or a replacement has more
 * than FIX_MAX_NEW new nodes. */
#define FIX_MAX_NEW 256

typedef struct FixMemo {
  const GPExpr *root;   /* borrowed: forgotten in the root's deleter (GP_SUM_INDEXED) */
  GPPattern **patterns; /* references: their addresses cannot be reused while remembered */
  int32_t n;
  GPMatchCheckFn check;
  GPMatchRewriteFn rewrite;
  void *user;
} FixMemo;

static pthread_mutex_t fix_lock = PTHREAD_MUTEX_INITIALIZER;
static FixMemo fix_memo;
static _Atomic bool fix_off; /* gp_pattern_fixed_enable(false): every round is a full one */

void gp_pattern_fixed_enable(bool on) {
  atomic_store(&fix_off, !on);
  if (!on) gp_pattern_fixed_forget(NULL);
}

static void fix_drop_locked(FixMemo *old) {
  *old = fix_memo;
  memset(&fix_memo, 0, sizeof fix_memo);
}

static void fix_release(FixMemo *old) {
  for (int32_t k = 0; k < old->n; k++) gp_release(old->patterns[k]);
  gp_free(old->patterns);
}

void gp_pattern_fixed_forget(const GPExpr *root) {
  FixMemo old = {0};
  pthread_mutex_lock(&fix_lock);
  if (fix_memo.root && (!root || fix_memo.root == root)) fix_drop_locked(&old);
  pthread_mutex_unlock(&fix_lock);
  fix_release(&old);
}

static bool fix_same(const FixMemo *f, const GPExpr *root, const GPRewriteSpec *spec) {
  if (f->root != root || f->n != spec->num_patterns || f->check != spec->check || f->rewrite != spec->rewrite ||
      f->user != spec->user)
    return false;
  for (int32_t k = 0; k < f->n; k++)
    if (f->patterns[k] != spec->patterns[k]) return false;
  return true;
}

static bool fix_known(const GPExpr *root, const GPRewriteSpec *spec) {
  pthread_mutex_lock(&fix_lock);
  bool hit = fix_same(&fix_memo, root, spec);
  pthread_mutex_unlock(&fix_lock);
  return hit;
}

static void fix_put(GPExpr *root, const GPRewriteSpec *spec) {
  FixMemo nw = {.root = root, .n = spec->num_patterns, .check = spec->check, .rewrite = spec->rewrite,
                .user = spec->user};
  nw.patterns = gp_malloc((size_t)(nw.n ? nw.n : 1) * sizeof *nw.patterns);
  for (int32_t k = 0; k < nw.n; k++) nw.patterns[k] = gp_retain((GPPattern *)spec->patterns[k]);
  gp_expr_mark_indexed(root); /* its deleter calls gp_pattern_fixed_forget */
  FixMemo old;
  pthread_mutex_lock(&fix_lock);
  fix_drop_locked(&old);
  fix_memo = nw;
  pthread_mutex_unlock(&fix_lock);
  fix_release(&old);
}

typedef struct Cands {
  GPPtrMap seen;
  GPVec list;
} Cands;

static void cand_add(Cands *c, GPExpr *e) {
  if (gp_kind(e) == GP_TI_OP || gp_map_has(&c->seen, e)) return;
  gp_map_put(&c->seen, e, e);
  gp_vec_push(&c->list, e);
}

/* True when the round's result (res: the rewrite of every input id) is a fixed point of the
 * spec (see above); false when it may not be or could not be told.  Errors are not left. */
static bool settle(Driver *d, GPExpr *const *res) {
  const GPNodeIndex *ni = d->ni;
  const bool *live = d->live;
  size_t n = ni->n;
  const GPRewriteSpec *spec = d->spec;
  if (d->blocked || !n) return false;
  const GPExpr *top = ni->nodes[n - 1]; /* a nested function's body is sealed: not settled here */
  if (gp_kind(top) == GP_TI_FUNCTION_EXPR) top = GP_AS(const GPFunctionExpr, top)->body;
  if (gp_expr_has_kind(top, GP_TI_FUNCTION_EXPR)) return false;
  int32_t height = 0;
  for (int32_t k = 0; k < spec->num_patterns; k++)
    if (live[k] && gp_pat_impl(spec->patterns[k])->height > height) height = gp_pat_impl(spec->patterns[k])->height;
  /* parents in the input, by id (CSR) */
  int32_t *poff = gp_scratch_zalloc(n + 1, sizeof *poff);
  size_t ne = (size_t)ni->kid_off[n];
  int32_t *par = gp_scratch_alloc((ne ? ne : 1) * sizeof *par);
  for (size_t q = 0; q < ne; q++) poff[ni->kids[q] + 1]++;
  for (size_t i = 0; i < n; i++) poff[i + 1] += poff[i];
  int32_t *fill = gp_scratch_alloc((n ? n : 1) * sizeof *fill);
  memcpy(fill, poff, n * sizeof *fill);
  for (size_t i = 0; i < n; i++)
    for (int32_t q = ni->kid_off[i]; q < ni->kid_off[i + 1]; q++) par[fill[ni->kids[q]]++] = (int32_t)i;
  gp_scratch_free(fill);
  Cands c = {0};
  GPPtrMap stop = {0};
  GPVec walk = {0}, level = {0}, next = {0};
  bool ok = true;
  for (size_t r = 0; r < d->nrecs && ok; r++) {
    const MRec *rec = &d->recs[r];
    /* the replacement's new nodes: below its root, down to the rewrites of the match's nodes */
    const int32_t *ids = d->ids + rec->off;
    for (int32_t j = 0; j < rec->nnodes + rec->ninputs; j++)
      if (ids[j] >= 0 && ids[j] != rec->root) gp_map_put(&stop, res[ids[j]], res[ids[j]]);
    walk.len = 0;
    gp_vec_push(&walk, res[rec->root]);
    size_t made = 0;
    while (walk.len && ok) {
      GPExpr *e = walk.items[--walk.len];
      if (gp_map_has(&stop, e) || gp_kind(e) == GP_TI_OP || gp_map_has(&c.seen, e)) continue;
      if (++made > FIX_MAX_NEW) ok = false;
      cand_add(&c, e);
      for (int32_t k = 0; k < gp_expr_num_children(e); k++) gp_vec_push(&walk, gp_expr_child_at(e, k));
    }
    gp_map_free(&stop); /* empty again */
    /* the ancestors of its root, up to the height */
    level.len = 0;
    gp_vec_push(&level, (void *)(intptr_t)rec->root);
    for (int32_t h = 0; h < height && ok && level.len; h++) {
      next.len = 0;
      for (size_t q = 0; q < level.len; q++) {
        int32_t v = (int32_t)(intptr_t)level.items[q];
        for (int32_t e = poff[v]; e < poff[v + 1]; e++) {
          int32_t p = par[e];
          /* a node of another accepted match is gone (an interior one) or that match's
           * replacement (its root): that record's walk covers it and what lies above */
          if (d->claim[p] || gp_map_has(&c.seen, res[p])) continue;
          cand_add(&c, res[p]);
          gp_vec_push(&next, (void *)(intptr_t)p);
        }
      }
      GPVec t = level;
      level = next;
      next = t;
    }
  }
  gp_scratch_free(poff);
  gp_scratch_free(par);
  for (int32_t k = 0; k < spec->num_patterns && ok; k++) {
    if (!live[k]) continue;
    GPMatcher m;
    gp_matcher_init(&m, spec->patterns[k]);
    for (size_t q = 0; q < c.list.len && ok; q++) {
      GPExpr *e = c.list.items[q];
      if (!gp_pattern_may_match(spec->patterns[k], e) || !gp_matcher_run(&m, e)) continue;
      if (!spec->check) {
        ok = false;
        break;
      }
      GPMatch gm = gp_matcher_view(&m, k, e);
      int rc = spec->check(spec->user, &gm);
      if (rc != 0) ok = false; /* accepted (or failed): a full round decides */
      if (rc < 0) gp_error_clear();
    }
    gp_matcher_free(&m);
  }
  gp_map_free(&c.seen);
  gp_vec_free(&c.list);
  gp_vec_free(&walk);
  gp_vec_free(&level);
  gp_vec_free(&next);
  return ok;
}

/* After the rebuild (the rewrite of every input id still alive): settle the round. */
static void settle_done(void *user, GPExpr *result, GPExpr *const *res) {
  Driver *d = user;
  if (result != d->ni->nodes[d->ni->n - 1] && !atomic_load(&fix_off) && settle(d, res)) fix_put(result, d->spec);
}

GPExpr *gp_pattern_rewrite(GPExpr *root, GPRewriteSpec *spec) {
  if (!root || !gp_is_expr(root)) {
    gp_error_set(GP_ERR_VALUE, "pattern_rewrite: the root is not an expression");
    return NULL;
  }
  if (!spec || spec->struct_size < GP_STRUCT_SIZE(GPRewriteSpec, num_rewritten) || !spec->rewrite ||
      spec->num_patterns < 0 || (spec->num_patterns && !spec->patterns)) {
    gp_error_set(GP_ERR_VALUE, "pattern_rewrite: a GPRewriteSpec needs struct_size >= %zu, a rewrite callback "
                 "and num_patterns patterns", GP_STRUCT_SIZE(GPRewriteSpec, num_rewritten));
    return NULL;
  }
  for (int32_t k = 0; k < spec->num_patterns; k++) {
    const GPPattern *p = spec->patterns[k];
    if (!p || gp_kind(p) != GP_TI_PATTERN) {
      gp_error_set(GP_ERR_VALUE, "pattern_rewrite: patterns[%d] is not a pattern", (int)k);
      return NULL;
    }
    const GPPatternImpl *pi = gp_pat_impl(p);
    int kind = pi->nodes[pi->root].kind;
    if (kind == PK_ANY || kind == PK_VAR || kind == PK_CONST) {
      gp_error_set(GP_ERR_VALUE, "pattern_rewrite: pattern %d (%s) matches a single leaf; its root must be a "
                   "call, a tuple or a get-item", (int)k, p->text);
      return NULL;
    }
  }
  spec->num_rewritten = 0;
  if (fix_known(root, spec)) return gp_retain(root); /* settled by the round that made it */
  /* Patterns whose root cannot occur under root (its op or kind is absent from root's summary)
   * get no selection walk; when none can, nothing is indexed. */
  uint64_t have = gp_expr_summary(root);
  bool *live = gp_scratch_zalloc(spec->num_patterns ? (size_t)spec->num_patterns : 1, sizeof *live);
  int32_t nlive = 0;
  for (int32_t k = 0; k < spec->num_patterns; k++) nlive += live[k] = (gp_pat_impl(spec->patterns[k])->root_summary & have) != 0;
  if (!nlive) {
    gp_scratch_free(live);
    return gp_retain(root);
  }
  Driver d = {.spec = spec};
  if (!(d.ni = gp_ni_acquire(root))) {
    gp_scratch_free(live);
    return NULL;
  }
  size_t n = d.ni->n;
  d.indeg = gp_scratch_zalloc(n ? n : 1, sizeof *d.indeg);
  d.claim = gp_scratch_zalloc(n ? n : 1, sizeof *d.claim);
  d.skip = gp_scratch_zalloc(n ? n : 1, 1);
  for (size_t i = 0; i < (size_t)d.ni->kid_off[n]; i++) d.indeg[d.ni->kids[i]]++;
  mark_sealed(&d);
  for (int32_t k = 0; k < spec->num_patterns; k++) {
    if (!live[k]) continue;
    GPMatcher m;
    gp_matcher_init(&m, spec->patterns[k]);
    int rc = 0;
    /* Candidates are judged from the index (tags, then gp_pattern_prematch) SELECT_AHEAD ids
     * before the walk reaches them, and their nodes and children fetched then: a match reads
     * them.  cand[i % SELECT_AHEAD] holds the verdict on id i until the walk gets there. */
    bool cand[SELECT_AHEAD] = {false};
    const GPPattern *pk = spec->patterns[k];
    for (size_t i = n; i-- > 0 && rc >= 0;) {
      if (i + SELECT_AHEAD >= n) /* the first ids the walk meets: judged now */
        cand[i % SELECT_AHEAD] = may_root(pk, d.ni, i);
      bool here = cand[i % SELECT_AHEAD];
      if (i >= SELECT_AHEAD) {
        size_t j = i - SELECT_AHEAD;
        bool c = may_root(pk, d.ni, j);
        cand[j % SELECT_AHEAD] = c;
        if (c) {
          __builtin_prefetch(d.ni->nodes[j]);
          for (int32_t q = d.ni->kid_off[j]; q < d.ni->kid_off[j + 1]; q++) __builtin_prefetch(d.ni->nodes[d.ni->kids[q]]);
        }
      }
      if (!here || d.skip[i] || d.claim[i]) continue;
      if (gp_matcher_run(&m, d.ni->nodes[i])) rc = select_match(&d, &m, k, (int32_t)i);
    }
    gp_matcher_free(&m);
    if (rc < 0) {
      gp_scratch_free(live);
      driver_free(&d);
      return NULL;
    }
  }
  d.live = live;
  GPExpr *out = d.nrecs ? gp_rewrite_indexed_then(d.ni, rebuild, &d, settle_done, &d) : gp_retain(root);
  gp_scratch_free(live);
  if (out) spec->num_rewritten = d.rewritten;
  driver_free(&d);
  return out;
}
