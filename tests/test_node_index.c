/* test_node_index.c -- the node index (ir/visit.c gp_ni_build): the same numbering as a plain
 * depth-first walk with a visited set, on graphs where constants are shared in every way the
 * build meets them (held by a second graph version, used twice, three times, by thousands of
 * calls) and calls are shared across hundreds of pages of the node pool.  And the rewriter
 * over it: GPHostAPI.rewrite_keep keeps what a reference keeps. */
#include "test_helpers.h"

/* The reference: post-order DFS (children in child order; a let's value before its var) with a
 * visited map; *out gets the nodes, kids the child ids (CSR in id order). */
typedef struct Ref {
  GPExpr **nodes;
  size_t n;
  int32_t *kids;
  size_t nkids;
} Ref;

static Ref reference(GPExpr *root) {
  GPPtrMap id = {0}; /* node -> id + 1 */
  GPVec order = {0};
  typedef struct {
    GPExpr *e;
    int32_t next;
  } F;
  size_t cap = 1024, sp = 0;
  F *st = gp_malloc(cap * sizeof *st);
  st[sp++] = (F){root, 0};
  while (sp) {
    F *f = &st[sp - 1];
    int32_t nk = gp_expr_num_children(f->e);
    if (f->next < nk) {
      int32_t pos = f->next++;
      if (gp_kind(f->e) == GP_TI_LET && pos < 2) pos = 1 - pos;
      GPExpr *c = gp_expr_child_at(f->e, pos);
      if (gp_map_has(&id, c)) continue;
      gp_map_put(&id, c, (void *)(uintptr_t)-1); /* on the path */
      if (sp == cap) st = gp_realloc(st, (cap *= 2) * sizeof *st);
      st[sp++] = (F){c, 0};
      continue;
    }
    gp_map_put(&id, f->e, (void *)(uintptr_t)(order.len + 1));
    gp_vec_push(&order, f->e);
    sp--;
  }
  Ref r = {.nodes = (GPExpr **)order.items, .n = order.len};
  size_t kc = 0;
  for (size_t i = 0; i < r.n; i++) kc += (size_t)gp_expr_num_children(r.nodes[i]);
  r.kids = gp_malloc((kc ? kc : 1) * sizeof *r.kids);
  for (size_t i = 0; i < r.n; i++)
    for (int32_t k = 0; k < gp_expr_num_children(r.nodes[i]); k++)
      r.kids[r.nkids++] = (int32_t)(uintptr_t)gp_map_get(&id, gp_expr_child_at(r.nodes[i], k)) - 1;
  gp_map_free(&id);
  gp_free(st);
  return r;
}

static void same_as_reference(GPExpr *root) {
  GPNodeIndex ni;
  cr_assert_eq(gp_ni_build(&ni, root, GP_NI_LET_VALUE_FIRST), 0, "%s", gp_error_message());
  Ref r = reference(root);
  cr_assert_eq(ni.n, r.n, "index of %zu nodes, reference %zu", ni.n, r.n);
  for (size_t i = 0; i < r.n; i++) cr_assert_eq(ni.nodes[i], r.nodes[i], "node %zu", i);
  cr_assert_eq((size_t)ni.kid_off[ni.n], r.nkids);
  for (size_t k = 0; k < r.nkids; k++) cr_assert_eq(ni.kids[k], r.kids[k], "kid entry %zu", k);
  for (size_t i = 0; i < ni.n; i++) {
    int32_t want = gp_kind(ni.nodes[i]) == GP_TI_CALL && gp_kind(GP_AS(GPCall, ni.nodes[i])->op) == GP_TI_OP
                       ? GP_AS(const GPOp, GP_AS(GPCall, ni.nodes[i])->op)->index
                       : -gp_kind(ni.nodes[i]);
    cr_assert_eq(ni.tag[i], want, "tag %zu", i);
  }
  gp_free(r.nodes);
  gp_free(r.kids);
  gp_ni_free(&ni);
}

static GPExpr *scalar(float v) {
  GPTensor *t = gp_tensor_alloc((DLDataType){kDLFloat, 32, 1}, 0, NULL, true);
  *(float *)t->dl.data = v;
  GPConstant *c = gp_constant_new(t);
  gp_release(t);
  return &c->base;
}

static GPExpr *add(GPExpr *a, GPExpr *b) { /* takes a, borrows b */
  GPExpr *args[2] = {a, b};
  GPCall *c = gp_call_new((GPExpr *)gp_op_get("add"), 2, args, NULL);
  gp_release(a);
  return &c->base;
}

/* A chain of n adds over constants from a pool of `distinct`: constant i % distinct, so each is
 * used n / distinct times; with `keep`, a second reference to every constant is held outside. */
static void chain(int n, int distinct, bool keep) {
  GPExpr **pool = gp_malloc((size_t)distinct * sizeof *pool);
  for (int i = 0; i < distinct; i++) pool[i] = scalar((float)i);
  GPExpr *x = (GPExpr *)gp_var_new("x", gp_type_tensor((DLDataType){kDLFloat, 32, 1}, 0, NULL));
  GPExpr *y = gp_retain(x);
  for (int i = 0; i < n; i++) y = add(y, pool[(i * 7919) % distinct]);
  if (!keep) /* held by the chain alone: a constant used once is not shared */
    for (int i = 0; i < distinct; i++) gp_release(pool[i]);
  same_as_reference(y);
  gp_release(y);
  gp_release(x);
  if (keep)
    for (int i = 0; i < distinct; i++) gp_release(pool[i]);
  gp_free(pool);
}

Test(node_index, shared_constants_match_a_plain_walk) {
  gp_ops_init();
  chain(10, 10, true);        /* each once, held outside too */
  chain(10, 3, true);         /* reused */
  chain(200000, 150000, true); /* many: some used twice, most once */
  chain(200000, 1000, true);  /* each 200 times */
  chain(5000, 1, true);       /* one constant everywhere */
  chain(200000, 150000, false); /* held by the chain alone */
  chain(20000, 7, false);
}

/* Shared calls: y = add(y, y) (one parent uses it twice), then add(relu(y), y) (a residual:
 * the second use comes back after everything below y was walked), and calls used by a call
 * thousands of levels up, so hundreds of thousands of calls made in a run are shared, many per
 * page of the allocator: with the node pool they are kept in per-page arrays (hundreds of
 * pages, so the page map and the arrays' chunks grow many times), without it (the sanitizer
 * builds) in the address map. */
Test(node_index, shared_calls_match_a_plain_walk) {
  gp_ops_init();
  const GPOp *relu = gp_op_get("nn.relu");
  GPExpr *x = (GPExpr *)gp_var_new("x", gp_type_tensor((DLDataType){kDLFloat, 32, 1}, 0, NULL));
  GPExpr *y = gp_retain(x);
  enum { N = 150000, FAR = 5000 };
  GPExpr **keep = gp_malloc(N * sizeof *keep);
  for (int i = 0; i < N; i++) {
    if (i % 3 == 0) {
      y = add(y, y);
    } else if (i % 3 == 1) {
      GPExpr *r = (GPExpr *)gp_call_new((GPExpr *)relu, 1, &y, NULL), *old = y;
      y = add(r, y);
      gp_release(old);
    } else {
      y = add(y, i >= FAR ? keep[i - FAR] : x);
    }
    keep[i] = y;
  }
  same_as_reference(y);
  gp_release(y);
  gp_release(x);
  gp_free(keep);
}

static void index_of_each_function(const char *path, GPModule *m, void *user) {
  (void)path;
  (void)user;
  for (int32_t f = 0; f < m->num_functions; f++) same_as_reference(&m->funcs[f]->base);
}

Test(node_index, the_golden_inputs_match_a_plain_walk) {
  static const char *const dirs[] = {"tests/data/passes", "tests/data/fusion", "tests/data/simplify_expr",
                                     "tests/data/fold_scale_axis"};
  cr_assert_gt(th_each_relay(dirs, GP_ARRAY_LEN(dirs), ".relay", index_of_each_function, NULL), 50);
}

/* ---- GPHostAPI.rewrite_keep (ABI 1.5): a callback keeps a node without a reference */

typedef struct {
  const GPHostAPI *h;
  bool marker;   /* keep with the marker, else with gp_retain(rebuilt) */
  bool drop_relu; /* replace relu(x) by x */
} KeepCb;

static GPExpr *keep_cb(void *user, GPExpr *orig, GPExpr *rebuilt) {
  (void)orig;
  KeepCb *k = user;
  if (k->drop_relu && gp_kind(rebuilt) == GP_TI_CALL && GP_AS(GPCall, rebuilt)->op == (GPExpr *)gp_op_get("nn.relu"))
    return gp_retain(GP_AS(GPCall, rebuilt)->args[0]);
  return k->marker ? k->h->rewrite_keep : gp_retain(rebuilt);
}

static GPExpr *keep_id_cb(void *user, int32_t id, GPExpr *orig, GPExpr *rebuilt, GPExpr *const *done) {
  (void)id;
  (void)done;
  return keep_cb(user, orig, rebuilt);
}

/* y = add(relu(y), c) over shared and unshared constants */
static GPExpr *relu_chain(int n) {
  const GPOp *relu = gp_op_get("nn.relu");
  GPExpr *shared = scalar(7.0f);
  GPExpr *y = (GPExpr *)gp_var_new("x", gp_type_tensor((DLDataType){kDLFloat, 32, 1}, 0, NULL));
  for (int i = 0; i < n; i++) {
    GPExpr *r = (GPExpr *)gp_call_new((GPExpr *)relu, 1, &y, NULL);
    gp_release(y);
    GPExpr *c = i % 3 ? scalar((float)i) : gp_retain(shared);
    y = add(r, c);
    gp_release(c);
  }
  gp_release(shared);
  return y;
}

/* Every node's reference count, in post order. */
static uint32_t *counts(GPExpr *root, GPExpr ***nodes, size_t *n) {
  cr_assert_eq(gp_post_order(root, nodes, n), 0);
  uint32_t *c = gp_malloc(*n * sizeof *c);
  for (size_t i = 0; i < *n; i++) c[i] = (*nodes)[i]->obj.ref_count;
  return c;
}

Test(rewrite, keep_marker_keeps_nodes_without_references) {
  gp_ops_init();
  const GPHostAPI *h = gp_host_api();
  cr_assert(GP_HAS_FIELD(h, GPHostAPI, rewrite_keep) && h->rewrite_keep);
  cr_assert(!gp_is_expr(h->rewrite_keep), "a marker, not a node");
  gp_release(gp_retain(h->rewrite_keep)); /* by mistake: harmless */
  cr_assert_eq(h->rewrite_keep->obj.ref_count, GP_REF_IMMORTAL);
  GPExpr *g = relu_chain(3000);
  GPExpr **nodes;
  size_t n;
  uint32_t *before = counts(g, &nodes, &n);
  for (int drop = 0; drop < 2; drop++) {
    for (int indexed = 0; indexed < 2; indexed++) {
      KeepCb with = {h, true, drop}, without = {h, false, drop};
      GPExpr *a, *b;
      if (indexed) {
        GPExprIndex *ix = h->expr_index_new(g);
        cr_assert(ix);
        a = h->rewrite_indexed(ix, keep_id_cb, &with);
        b = h->rewrite_indexed(ix, keep_id_cb, &without);
        h->expr_index_free(ix);
      } else {
        a = h->rewrite(g, keep_cb, &with);
        b = h->rewrite(g, keep_cb, &without);
      }
      cr_assert(a && b, "%s", gp_error_message());
      cr_assert(gp_expr_equal(a, b), "drop %d indexed %d: the marker keeps what a reference keeps", drop, indexed);
      if (!drop) cr_assert_eq(a, g, "nothing changed: the input itself");
      gp_release(a);
      gp_release(b);
      for (size_t i = 0; i < n; i++) /* no reference of the rewrite is left on any input node */
        cr_assert_eq(nodes[i]->obj.ref_count, before[i], "drop %d indexed %d: node %zu", drop, indexed, i);
    }
  }
  gp_free(before);
  gp_free(nodes);
  gp_release(g);
}
