/* byoc_regions.c -- the annotation ops and the region set of an annotated function (TVM v0.12's
 * AnnotatedRegionSet), shared by AnnotateTarget, MergeCompilerRegions and PartitionGraph.  See
 * byoc.h.  Linear: one walk over the post order, union-find over regions; the control scopes of
 * a function's nodes. */
#include "byoc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int byoc_ops(ByocOps *o) {
  o->begin = H->op_get("annotation.compiler_begin");
  o->end = o->begin ? H->op_get("annotation.compiler_end") : NULL;
  return o->end ? 0 : -1;
}

const char *byoc_compiler(const GPExpr *ann) {
  const GPCall *c = (const GPCall *)ann;
  const GPAttrValue *v = c->attrs ? H->attrs_get(c->attrs, "compiler") : NULL;
  return v && v->kind == GP_ATTR_STR && v->s ? v->s : "";
}

GPExpr *byoc_annotate(const GPOp *op, GPExpr *x, const char *compiler) {
  static const char *const keys[] = {"compiler"};
  GPAttrValue v = {.kind = GP_ATTR_STR, .s = compiler};
  GPAttrs *a = H->op_attrs_new(op, 1, keys, &v);
  if (!a) return NULL;
  GPCall *c = H->call_new((GPExpr *)&op->base, 1, &x, a);
  gp_release(a);
  return c ? &c->base : NULL;
}

/* Child indices without a hash probe for unshared nodes.  A node whose ref_count is 1 has exactly
 * one parent (every edge is a counted reference), so in the post order it is the last node
 * finished inside its parent's visit that is not yet claimed: a stack of finished nodes gives
 * it when the parent comes (children claimed last to first).  Shared nodes (and immortal ops)
 * also go to a hash map, which answers every child the stack does not.  Should the host's
 * order ever break that (a child neither on top nor in the map), the map is filled for all. */
static int index_children(ByocIndex *ix, bool all_in_map) {
  int32_t *stk = all_in_map ? NULL : gp_scratch_alloc((ix->n ? ix->n : 1) * sizeof(int32_t));
  int32_t sp = 0, k = 0;
  for (size_t i = 0; i < ix->n; i++) {
    GPExpr *e = ix->nodes[i];
    int32_t nk = gp_expr_num_children(e);
    ix->off[i] = k;
    for (int32_t c = nk - 1; c >= 0; c--) {
      GPExpr *child = gp_expr_child_at(e, c);
      int32_t ci;
      if (sp && ix->nodes[stk[sp - 1]] == child)
        ci = stk[--sp];
      else if ((ci = byoc_index_of(ix, child)) < 0) {
        gp_scratch_free(stk);
        return -1;
      }
      ix->kid[k + c] = ci;
    }
    k += nk;
    if (stk) stk[sp++] = (int32_t)i;
  }
  ix->off[ix->n] = k;
  gp_scratch_free(stk);
  return 0;
}

int byoc_index_build(ByocIndex *ix, GPExpr *root) {
  memset(ix, 0, sizeof *ix);
  if (H->post_order(root, &ix->nodes, &ix->n) != 0) return -1;
  size_t edges = 0;
  for (size_t i = 0; i < ix->n; i++) {
    const GPExpr *e = ix->nodes[i];
    if (__atomic_load_n(&e->obj.ref_count, __ATOMIC_RELAXED) != 1) pmap_put(&ix->at, e, (void *)(intptr_t)(i + 1));
    edges += (size_t)gp_expr_num_children(e);
  }
  ix->off = gp_scratch_alloc((ix->n + 1) * sizeof(int32_t));
  ix->kid = gp_scratch_alloc((edges ? edges : 1) * sizeof(int32_t));
  if (index_children(ix, false) == 0) return 0;
  for (size_t i = 0; i < ix->n; i++) pmap_put(&ix->at, ix->nodes[i], (void *)(intptr_t)(i + 1));
  return index_children(ix, true);
}

static GPExpr *rebuild_node(GPExpr *e, GPExpr *const *kids) {
  int32_t nk = gp_expr_num_children(e);
  switch (ekind(e)) {
  case GP_TI_CALL: {
    const GPCall *c = (const GPCall *)e;
    GPCall *n = H->call_new(kids[0], c->nargs, kids + 1, c->attrs);
    return n ? &n->base : NULL;
  }
  case GP_TI_TUPLE: {
    GPTuple *n = H->tuple_new(nk, kids);
    return n ? &n->base : NULL;
  }
  case GP_TI_TUPLE_GET_ITEM: {
    GPTupleGetItem *n = H->tuple_get_item_new(kids[0], ((const GPTupleGetItem *)e)->index);
    return n ? &n->base : NULL;
  }
  case GP_TI_FUNCTION_EXPR: {
    const GPFunctionExpr *f = (const GPFunctionExpr *)e;
    GPFunctionExpr *n = H->function_new(f->nparams, (GPVar *const *)kids, kids[f->nparams], f->ret_type, f->attrs);
    return n ? &n->base : NULL;
  }
  case GP_TI_LET: {
    if (ekind(kids[0]) != GP_TI_VAR) break;
    GPLet *n = H->let_new((GPVar *)kids[0], kids[1], kids[2]);
    return n ? &n->base : NULL;
  }
  case GP_TI_IF: {
    GPIf *n = H->if_new(kids[0], kids[1], kids[2]);
    return n ? &n->base : NULL;
  }
  default: break;
  }
  H->error_set(GP_ERR_INTERNAL, "cannot rebuild %s", std_kind_name(ekind(e)));
  return NULL;
}

GPExpr *byoc_rebuild(GPExpr *e, GPExpr *const *kids, bool keep_type) {
  int32_t nk = gp_expr_num_children(e);
  bool same = true;
  for (int32_t i = 0; i < nk && same; i++) same = kids[i] == gp_expr_child_at(e, i);
  if (same) return gp_retain(e);
  GPExpr *n = rebuild_node(e, kids);
  const GPType *t = keep_type ? e->checked_type : NULL;
  if (!n || (!t && (ekind(e) != GP_TI_CALL || !e->line))) return n;
  GPExpr *r = H->expr_annotate(n, t, e->line, e->col);
  gp_release(n);
  return r;
}

void byoc_index_free(ByocIndex *ix) {
  if (ix->nodes) H->free(ix->nodes);
  pmap_free(&ix->at);
  gp_scratch_free(ix->off);
  gp_scratch_free(ix->kid);
  memset(ix, 0, sizeof *ix);
}

static void list_push(int32_t *head, int32_t *tail, int32_t *next, int32_t r, int32_t node) {
  next[node] = -1;
  if (head[r] < 0)
    head[r] = node;
  else
    next[tail[r]] = node;
  tail[r] = node;
}

static void list_cat(int32_t *head, int32_t *tail, int32_t *next, int32_t dst, int32_t src) {
  if (head[src] < 0) return;
  if (head[dst] < 0)
    head[dst] = head[src];
  else
    next[tail[dst]] = head[src];
  tail[dst] = tail[src];
  head[src] = tail[src] = -1;
}

int32_t byoc_union(ByocRegions *r, int32_t src, int32_t dest) {
  int32_t a = byoc_find(r, src), b = byoc_find(r, dest);
  if (a == b) return b;
  int32_t label = r->label[b];
  /* dest's lists first */
  list_cat(r->ins_head, r->ins_tail, r->next, b, a);
  list_cat(r->outs_head, r->outs_tail, r->next, b, a);
  int32_t root = b, other = a;
  if (r->size[a] > r->size[b]) root = a, other = b;
  if (root != b) {
    /* move the lists to the new root */
    r->ins_head[root] = r->ins_head[b], r->ins_tail[root] = r->ins_tail[b];
    r->outs_head[root] = r->outs_head[b], r->outs_tail[root] = r->outs_tail[b];
    r->ins_head[b] = r->ins_tail[b] = r->outs_head[b] = r->outs_tail[b] = -1;
  }
  r->uf[other] = root;
  r->size[root] += r->size[other];
  r->label[root] = label;
  return root;
}

void byoc_regions_free(ByocRegions *r) {
  gp_scratch_free(r->region);
  gp_scratch_free(r->next);
  gp_scratch_free(r->uf);
  gp_scratch_free(r->size);
  gp_scratch_free(r->label);
  gp_scratch_free((void *)r->target);
  gp_scratch_free(r->ins_head);
  gp_scratch_free(r->ins_tail);
  gp_scratch_free(r->outs_head);
  gp_scratch_free(r->outs_tail);
  memset(r, 0, sizeof *r);
}

/* The arguments a node joins the regions of (TVM's AddToArgRegion); -1 for a node that joins
 * none (leaves, functions, and let / if, which TVM's creator adds before their children are
 * visited, so never to a region). */
static int32_t open_args(const GPExpr *e, int32_t *first) {
  switch (ekind(e)) {
  case GP_TI_CALL: *first = 1; return ((const GPCall *)e)->nargs;
  case GP_TI_TUPLE: *first = 0; return ((const GPTuple *)e)->n;
  case GP_TI_TUPLE_GET_ITEM: *first = 0; return 1;
  default: return -1;
  }
}

int byoc_regions_build(ByocRegions *r, const ByocIndex *ix, const ByocOps *o, const char *pass, const char *source) {
  memset(r, 0, sizeof *r);
  int32_t n = (int32_t)ix->n;
  r->n = n;
  r->region = gp_scratch_alloc((size_t)(n ? n : 1) * sizeof(int32_t));
  r->next = gp_scratch_alloc((size_t)(n ? n : 1) * sizeof(int32_t));
  int32_t nb = 0;
  for (int32_t i = 0; i < n; i++) nb += byoc_ann(o, ix->nodes[i]) == 1;
  size_t cap = (size_t)(nb ? nb : 1);
  r->uf = gp_scratch_alloc(cap * sizeof(int32_t));
  r->size = gp_scratch_alloc(cap * sizeof(int32_t));
  r->label = gp_scratch_alloc(cap * sizeof(int32_t));
  r->target = gp_scratch_alloc(cap * sizeof(char *));
  r->ins_head = gp_scratch_alloc(cap * sizeof(int32_t));
  r->ins_tail = gp_scratch_alloc(cap * sizeof(int32_t));
  r->outs_head = gp_scratch_alloc(cap * sizeof(int32_t));
  r->outs_tail = gp_scratch_alloc(cap * sizeof(int32_t));
  char loc[256];
  for (int32_t i = 0; i < n; i++) {
    GPExpr *e = ix->nodes[i];
    r->region[i] = -1;
    r->next[i] = -1;
    int ann = byoc_ann(o, e);
    if (ann == 1) {
      int32_t id = r->nreg++;
      r->uf[id] = id, r->size[id] = 1, r->label[id] = id;
      r->target[id] = byoc_compiler(e);
      r->ins_head[id] = r->ins_tail[id] = r->outs_head[id] = r->outs_tail[id] = -1;
      r->region[i] = id;
      list_push(r->ins_head, r->ins_tail, r->next, id, i);
      continue;
    }
    if (ann == 2) {
      int32_t a = byoc_kid(ix, i, 1);
      int32_t g = a >= 0 ? byoc_group(r, a) : -1;
      if (g < 0) {
        H->error_set(GP_ERR_PASS, "%s: the compiler_end at %s closes no region (no compiler_begin leads to it)", pass,
                     std_where(source, e, loc, sizeof loc));
        return -1;
      }
      const char *c = byoc_compiler(e);
      if (strcmp(c, r->target[g]) != 0) {
        H->error_set(GP_ERR_PASS, "%s: the compiler_end at %s has compiler \"%s\" but closes a region of \"%s\"", pass,
                     std_where(source, e, loc, sizeof loc), c, r->target[g]);
        return -1;
      }
      r->region[i] = g;
      list_push(r->outs_head, r->outs_tail, r->next, g, i);
      continue;
    }
    int32_t first = 0, na = open_args(e, &first);
    if (na <= 0) continue;
    int32_t dest = -1, seen_open = 0, seen_none = 0;
    for (int32_t k = 0; k < na; k++) {
      int32_t ai = byoc_kid(ix, i, first + k);
      if (byoc_ann(o, ix->nodes[ai]) == 2) continue;
      int32_t g = ai >= 0 ? byoc_group(r, ai) : -1;
      if (g < 0) {
        seen_none = 1;
        continue;
      }
      seen_open = 1;
      if (dest < 0)
        dest = g;
      else if (g != byoc_find(r, dest))
        dest = byoc_union(r, g, dest);
    }
    if (seen_open && seen_none) {
      H->error_set(GP_ERR_PASS, "%s: the arguments of %s at %s are partly inside a compiler region and partly not",
                   pass, std_kind_name(ekind(e)), std_where(source, e, loc, sizeof loc));
      return -1;
    }
    if (dest >= 0) r->region[i] = byoc_find(r, dest);
  }
  return 0;
}

/* ---- control scopes (byoc.h) */

static int32_t scope_new(ByocScopes *s, int32_t parent) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 16;
    s->parent = realloc(s->parent, sizeof(int32_t) * (size_t)s->cap);
    s->depth = realloc(s->depth, sizeof(int32_t) * (size_t)s->cap);
    if (!s->parent || !s->depth) abort();
  }
  s->parent[s->n] = parent;
  s->depth[s->n] = parent < 0 ? 0 : s->depth[parent] + 1;
  return s->n++;
}

static int32_t scope_lca(const ByocScopes *s, int32_t a, int32_t b) {
  while (a != b) {
    if (s->depth[a] >= s->depth[b]) a = s->parent[a];
    else b = s->parent[b];
  }
  return a;
}

void byoc_scopes_build(ByocScopes *s, const ByocIndex *ix) {
  int32_t n = (int32_t)ix->n;
  s->of = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  if (!s->of) abort();
  for (int32_t i = 0; i < n; i++) s->of[i] = -1;
  if (!n) return;
  s->of[n - 1] = scope_new(s, -1);
  for (int32_t id = n - 1; id >= 0; id--) {
    int32_t S = s->of[id];
    if (S < 0) continue;
    int32_t kind = ekind(ix->nodes[id]), nk = ix->off[id + 1] - ix->off[id];
    int32_t then_s = -1, else_s = -1;
    if (kind == GP_TI_IF) then_s = scope_new(s, S), else_s = scope_new(s, S);
    for (int32_t c = 0; c < nk; c++) {
      int32_t t = S;
      if (kind == GP_TI_IF && c > 0) t = c == 1 ? then_s : else_s;
      else if (kind == GP_TI_FUNCTION_EXPR && id != n - 1 && c == nk - 1) t = scope_new(s, S);
      int32_t k = byoc_kid(ix, id, c);
      s->of[k] = s->of[k] < 0 ? t : scope_lca(s, s->of[k], t);
    }
  }
}

void byoc_scopes_free(ByocScopes *s) {
  free(s->of);
  free(s->parent);
  free(s->depth);
}

/* Per node: how many let bindings the post order (a let's value, then its variable, then its
 * body) has passed before the node; a malloc'd array. */
static int32_t *let_segments(const ByocIndex *ix) {
  int32_t n = (int32_t)ix->n;
  int32_t *seg = calloc((size_t)(n ? n : 1), sizeof(int32_t));
  if (!seg) abort();
  for (int32_t i = 0; i < n; i++)
    if (ekind(ix->nodes[i]) == GP_TI_LET) seg[byoc_kid(ix, i, 0)] = 1; /* its variable */
  int32_t passed = 0;
  for (int32_t i = 0; i < n; i++) {
    int32_t binder = seg[i];
    seg[i] = passed;
    passed += binder;
  }
  return seg;
}

int64_t *byoc_region_scopes(ByocRegions *r, const ByocIndex *ix, const ByocOps *o, bool inner, int32_t *mixed) {
  int32_t nr = r->nreg, n = (int32_t)ix->n;
  int64_t *gs = calloc((size_t)(nr ? nr : 1), sizeof(int64_t));
  if (!gs) abort();
  *mixed = -1;
  const GPFunctionExpr *fn = (const GPFunctionExpr *)ix->nodes[n - 1];
  bool ctrl = H->expr_has_kind(fn->body, GP_TI_IF) || H->expr_has_kind(fn->body, GP_TI_FUNCTION_EXPR);
  bool lets = H->expr_has_kind(fn->body, GP_TI_LET);
  if (!ctrl && !lets) return gs;
  ByocScopes sc = {0};
  if (ctrl) byoc_scopes_build(&sc, ix);
  int32_t *seg = lets ? let_segments(ix) : NULL;
  for (int32_t g = 0; g < nr; g++) gs[g] = -2;
  for (int32_t i = 0; i < n; i++) {
    int32_t g = byoc_group(r, i), ann = byoc_ann(o, ix->nodes[i]);
    int32_t scope = ctrl ? sc.of[i] : 0;
    if (g < 0 || ann == 2 || (!inner && ann != 1) || scope < 0) continue;
    int64_t id = (int64_t)scope << 32 | (seg ? seg[i] : 0); /* both in [0, 2^31) */
    if (gs[g] == -2 || gs[g] == id) {
      gs[g] = id;
    } else {
      gs[g] = -1;
      if (*mixed < 0) *mixed = i;
    }
  }
  free(seg);
  if (ctrl) byoc_scopes_free(&sc);
  return gs;
}
