/* combine_parallel.c -- see combine_parallel.h. */
#include "combine_parallel.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NOTES 64

/* ------------------------------------------------------------------------------------------ */
/* Reading nodes                                                                               */

const GPAttrValue *cp_attr(const GPCall *c, const char *key) { return c->attrs ? H->attrs_get(c->attrs, key) : NULL; }

int64_t cp_attr_int(const GPCall *c, const char *key, int64_t dflt) {
  const GPAttrValue *v = cp_attr(c, key);
  return v && (v->kind == GP_ATTR_INT || v->kind == GP_ATTR_BOOL) ? v->i : dflt;
}

bool cp_dtype_eq(DLDataType a, DLDataType b) { return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes; }

bool cp_attr_value_eq(const GPAttrValue *a, const GPAttrValue *b) {
  if (!a || !b) return a == b;
  if (a->kind != b->kind) return false;
  switch (a->kind) {
  case GP_ATTR_NONE: return true;
  case GP_ATTR_INT:
  case GP_ATTR_BOOL: return a->i == b->i;
  case GP_ATTR_FLOAT: return a->f == b->f || (a->f != a->f && b->f != b->f);
  case GP_ATTR_STR: return strcmp(a->s ? a->s : "", b->s ? b->s : "") == 0;
  case GP_ATTR_DTYPE: return cp_dtype_eq(a->dtype, b->dtype);
  case GP_ATTR_INTS: return a->n == b->n && (!a->n || memcmp(a->ints, b->ints, (size_t)a->n * sizeof *a->ints) == 0);
  case GP_ATTR_FLOATS:
    if (a->n != b->n) return false;
    for (int32_t i = 0; i < a->n; i++)
      if (a->floats[i] != b->floats[i]) return false;
    return true;
  default: return false;
  }
}

bool cp_attr_same(const GPCall *a, const GPCall *b, const char *key) {
  return cp_attr_value_eq(cp_attr(a, key), cp_attr(b, key));
}

bool cp_attrs_eq(const GPAttrs *a, const GPAttrs *b) {
  if (a == b) return true;
  if (!a || !b || a->n != b->n) return false;
  for (int32_t i = 0; i < a->n; i++)
    if (strcmp(a->keys[i], b->keys[i]) != 0 || !cp_attr_value_eq(&a->values[i], &b->values[i])) return false;
  return true;
}

uint64_t cp_mix(uint64_t h, uint64_t v) {
  v *= 0xff51afd7ed558ccdull;
  v ^= v >> 33;
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

uint64_t cp_hash_attr(uint64_t h, const GPAttrValue *v) {
  if (!v) return cp_mix(h, 0x5a5a);
  h = cp_mix(h, (uint64_t)v->kind);
  switch (v->kind) {
  case GP_ATTR_INT:
  case GP_ATTR_BOOL: return cp_mix(h, (uint64_t)v->i);
  case GP_ATTR_STR:
    for (const char *s = v->s ? v->s : ""; *s; s++) h = cp_mix(h, (unsigned char)*s);
    return h;
  case GP_ATTR_DTYPE: return cp_mix(h, (uint64_t)v->dtype.code << 24 | (uint64_t)v->dtype.bits << 16 | v->dtype.lanes);
  case GP_ATTR_INTS:
    h = cp_mix(h, (uint64_t)v->n);
    for (int32_t i = 0; i < v->n; i++) h = cp_mix(h, (uint64_t)v->ints[i]);
    return h;
  default: return h; /* floats: equal values still hash alike */
  }
}

const char *cp_where(const CPRun *r, const GPExpr *e, char *buf, size_t n) { return std_where(r->source, e, buf, n); }

/* ------------------------------------------------------------------------------------------ */
/* Builders                                                                                    */

/* The type of the fresh call c of op, or NULL + error (the relation's). */
static const GPType *call_type(const GPOp *op, const GPCall *c) {
  const GPType *small[16] = {0};
  const GPType **tys = c->nargs > 16 ? malloc((size_t)c->nargs * sizeof *tys) : small;
  const GPType *out = NULL;
  int rc = 0;
  for (int32_t i = 0; i < c->nargs && rc == 0; i++)
    if (!(tys[i] = c->args[i]->checked_type)) {
      H->error_set(GP_ERR_TYPE, "argument %d of %s has no type", (int)i, op->name);
      rc = -1;
    }
  if (rc == 0 && op->type_rel && op->type_rel(op, c->attrs, tys, c->nargs, &out, op->type_rel_user) != 0) out = NULL;
  if (rc == 0 && !out && !H->error_kind()) H->error_set(GP_ERR_TYPE, "%s: no type", op->name);
  if (tys != small) free(tys);
  return out;
}

GPExpr *cp_call_attrs(CPRun *r, GPExpr *op, int32_t nargs, GPExpr *const *args, GPAttrs *attrs) {
  (void)r;
  for (int32_t i = 0; i < nargs; i++)
    if (!args[i]) return NULL;
  GPCall *c = H->call_new(op, nargs, args, attrs);
  if (!c) return NULL;
  const GPType *t = call_type((const GPOp *)op, c);
  if (!t) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", H->error_message() ? H->error_message() : "");
    gp_release(c);
    H->error_set(GP_ERR_TYPE, "%s: %s", ((const GPOp *)op)->name, msg);
    return NULL;
  }
  c->base.checked_type = t;
  return &c->base;
}

GPExpr *cp_call(CPRun *r, const char *op_name, int32_t nargs, GPExpr *const *args, int32_t nattrs,
                const char *const *keys, const GPAttrValue *vals) {
  const GPOp *op = H->op_get(op_name);
  if (!op) return NULL;
  GPAttrs *attrs = NULL;
  if (op->num_attrs > 0 || nattrs > 0) {
    attrs = H->op_attrs_new(op, nattrs, keys, vals);
    if (!attrs) return NULL;
  }
  GPExpr *e = cp_call_attrs(r, (GPExpr *)op, nargs, args, attrs);
  gp_release(attrs);
  return e;
}

GPExpr *cp_join(CPRun *r, const char *op, int32_t n, GPExpr *const *xs, int64_t axis) {
  const GPType *small[16] = {0};
  const GPType **tys = n > 16 ? malloc((size_t)n * sizeof *tys) : small;
  for (int32_t i = 0; i < n; i++) tys[i] = xs[i]->checked_type;
  const GPType *tt = H->type_tuple(n, tys);
  if (tys != small) free(tys);
  if (!tt) return NULL;
  GPTuple *t = H->tuple_new(n, xs);
  if (!t) return NULL;
  t->base.checked_type = tt;
  static const char *const keys[] = {"axis"};
  GPAttrValue v = {.kind = GP_ATTR_INT, .i = axis};
  GPExpr *arg = &t->base;
  GPExpr *e = cp_call(r, op, 1, &arg, 1, keys, &v);
  gp_release(t);
  return e;
}

GPExpr *cp_expand_dims(CPRun *r, GPExpr *x, int64_t axis, int64_t num) {
  static const char *const keys[] = {"axis", "num_newaxis"};
  GPAttrValue v[2] = {{.kind = GP_ATTR_INT, .i = axis}, {.kind = GP_ATTR_INT, .i = num}};
  return cp_call(r, "expand_dims", 1, &x, 2, keys, v);
}

GPExpr *cp_slice(CPRun *r, GPExpr *data, int32_t n, const int64_t *begin, const int64_t *end) {
  int64_t strides[64];
  if (n > 64) {
    H->error_set(GP_ERR_UNSUPPORTED, "a slice of rank %d", (int)n);
    return NULL;
  }
  for (int32_t i = 0; i < n; i++) strides[i] = 1;
  static const char *const keys[] = {"begin", "end", "strides", "slice_mode"};
  GPAttrValue v[4] = {{.kind = GP_ATTR_INTS, .n = n, .ints = begin},
                      {.kind = GP_ATTR_INTS, .n = n, .ints = end},
                      {.kind = GP_ATTR_INTS, .n = n, .ints = strides},
                      {.kind = GP_ATTR_STR, .s = "size"}};
  return cp_call(r, "strided_slice", 1, &data, 4, keys, v);
}

GPAttrs *cp_attrs_with(const GPOp *op, const GPAttrs *a, const char *key, GPAttrValue v) {
  if (!a || a->n > 64) {
    H->error_set(GP_ERR_INTERNAL, "%s: unexpected attributes", op->name);
    return NULL;
  }
  GPAttrValue vals[64];
  for (int32_t i = 0; i < a->n; i++) vals[i] = strcmp(a->keys[i], key) == 0 ? v : a->values[i];
  return H->op_attrs_new(op, a->n, a->keys, vals);
}

/* ------------------------------------------------------------------------------------------ */
/* The driver                                                                                  */

typedef struct Work {
  GPExprIndex *ix;  /* the function's node index (ABI 1.4): children by id */
  GPExpr *const *nodes;
  size_t n;
  int32_t *uoff;    /* users of node i: users[uoff[i] .. uoff[i + 1]) (call ids) */
  int32_t *users;
  unsigned char *start;   /* call i is a supported call of the op (a user of its data only) */
  unsigned char *tainted; /* depends on a node of a candidate group's branch */
  /* branches */
  const GPCall **pool;
  int32_t *pool_id; /* the id of pool[i] */
  size_t npool, cpool;
  int32_t *boff, *blen, *broot, *blabel;
  uint64_t *bkey;
  size_t nb, cb;
  /* substitution */
  PMap subst;       /* replaced node -> index + 1 into repl */
  PMap rmap;        /* replacement -> index + 1 into repl */
  GPExpr **repl;    /* owned */
  GPExpr **done;    /* rewritten replacements (owned) */
  size_t nrepl, crepl;
} Work;

/* Argument a of call `id` (child 0 is the callee), as an id. */
static inline int32_t arg_id(const Work *w, int32_t id, int32_t a) { return w->ix->kids[w->ix->kid_offsets[id] + 1 + a]; }

/* Whether some node is the first argument of at least min calls of op, from the index's tags
 * and child ids alone (no node is read).  TVM groups branches of one parent only, so without
 * such a node no group reaches min_branches.  A counter per node, a byte wide while min fits
 * one (the scan stops when a counter reaches min, so none wraps): a 4.5M-node graph's counters
 * then stay in cache, four bytes each did not. */
#define COUNT_FEEDS(T)                                                                           \
  do {                                                                                           \
    T *feeds = gp_scratch_zalloc(w->n + 1, sizeof(T));                                           \
    for (size_t i = 0; i < w->n && !any; i++)                                                    \
      if (ix->tags[i] == op->index && ix->kid_offsets[i + 1] - ix->kid_offsets[i] >= 2)          \
        any = ++feeds[arg_id(w, (int32_t)i, 0)] >= min;                                          \
    gp_scratch_free(feeds);                                                                      \
  } while (0)
static bool feeds_enough(const Work *w, const GPOp *op, int64_t min) {
  const GPExprIndex *ix = w->ix;
  bool any = false;
  if (min <= UINT8_MAX)
    COUNT_FEEDS(uint8_t);
  else
    COUNT_FEEDS(uint32_t);
  return any;
}
#undef COUNT_FEEDS

static bool is_start(const CPRun *r, const GPOp *op, const GPExpr *e) {
  if (ekind(e) != GP_TI_CALL) return false;
  const GPCall *c = (const GPCall *)e;
  return c->op == (const GPExpr *)op && c->nargs >= 1 && r->c->supported(r, c);
}

static void grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return;
  size_t nc = *cap ? *cap * 2 : 64;
  while (nc < need) nc *= 2;
  void *q = realloc(*p, nc * elem);
  if (!q) abort();
  *p = q;
  *cap = nc;
}

/* Appends call `c` (node `id`) to the branch pool; pool and pool_id grow together. */
static void pool_push(Work *w, const GPCall *c, int32_t id) {
  size_t cap = w->cpool;
  grow((void **)&w->pool, &w->cpool, w->npool + 1, sizeof *w->pool);
  grow((void **)&w->pool_id, &cap, w->npool + 1, sizeof *w->pool_id); /* to the same capacity */
  w->pool_id[w->npool] = id;
  w->pool[w->npool++] = c;
}

static void add_branch(Work *w, const CPRun *r, int32_t root, int32_t first_id) {
  const GPCall *first = (const GPCall *)w->nodes[first_id];
  size_t need = w->nb + 1, cb = w->cb;
  grow((void **)&w->boff, &cb, need, sizeof *w->boff);
  cb = w->cb;
  grow((void **)&w->blen, &cb, need, sizeof *w->blen);
  cb = w->cb;
  grow((void **)&w->broot, &cb, need, sizeof *w->broot);
  cb = w->cb;
  grow((void **)&w->blabel, &cb, need, sizeof *w->blabel);
  grow((void **)&w->bkey, &w->cb, need, sizeof *w->bkey);
  size_t b = w->nb++;
  w->boff[b] = (int32_t)w->npool;
  w->broot[b] = root;
  w->bkey[b] = r->c->key(r, first);
  const GPCall *cur = first;
  int32_t id = first_id;
  for (;;) {
    pool_push(w, cur, id);
    if (w->uoff[id + 1] - w->uoff[id] != 1) break;
    int32_t u = w->users[w->uoff[id]];
    const GPCall *uc = (const GPCall *)w->nodes[u];
    if (ekind(uc->op) != GP_TI_OP || ((const GPOp *)uc->op)->pattern > GP_PATTERN_BROADCAST) break;
    cur = uc;
    id = u;
  }
  w->blen[b] = (int32_t)(w->npool - (size_t)w->boff[b]);
}

typedef struct KeyIdx {
  uint64_t key;
  int32_t idx;
} KeyIdx;

static int keyidx_cmp(const void *a, const void *b) {
  const KeyIdx *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Label each branch of one root with the index of the first branch of its group. */
static void label_groups(Work *w, const CPRun *r, size_t b0, size_t b1) {
  size_t k = b1 - b0;
  KeyIdx *ki = malloc(k * sizeof *ki);
  if (!ki) abort();
  for (size_t i = 0; i < k; i++) ki[i] = (KeyIdx){w->bkey[b0 + i], (int32_t)(b0 + i)};
  qsort(ki, k, sizeof *ki, keyidx_cmp);
  for (size_t s = 0; s < k;) {
    size_t e = s;
    while (e < k && ki[e].key == ki[s].key) e++;
    /* leaders of this run: earlier entries whose label is themselves */
    for (size_t i = s; i < e; i++) {
      int32_t b = ki[i].idx;
      w->blabel[b] = b;
      for (size_t j = s; j < i; j++) {
        int32_t l = ki[j].idx;
        if (w->blabel[l] == l && r->c->compatible(r, w->pool[w->boff[b]], w->pool[w->boff[l]])) {
          w->blabel[b] = l;
          break;
        }
      }
    }
    s = e;
  }
  free(ki);
}

static void note(CPRun *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(CPRun *r, const char *fmt, ...) {
  if (r->notes >= MAX_NOTES) return;
  if (++r->notes == MAX_NOTES) {
    std_note(r->ctx, "(further notes left out)");
    return;
  }
  char buf[480];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std_note(r->ctx, "%s", buf);
}

/* Whether argument a of the depth-th call of branch k of g depends on a combined branch. */
static bool input_tainted(const Work *w, const CPGroup *g, int32_t k, int32_t depth, int32_t a) {
  return w->tainted[arg_id(w, w->pool_id[g->off[k] + depth], a)];
}

/* TVM's CheckLevel, and no argument other than the previous level depends on a branch. */
static bool check_level(CPRun *r, const Work *w, const CPGroup *g, int32_t depth, int32_t parent) {
  const GPCall *call = cp_at(g, 0, depth);
  for (int32_t k = 0; k < g->n; k++) {
    const GPCall *c = cp_at(g, k, depth);
    if (c->op != call->op || !cp_attrs_eq(c->attrs, call->attrs) || c->nargs != call->nargs) return false;
    if (c->args[parent] != (const GPExpr *)cp_at(g, k, depth - 1)) return false;
    for (int32_t i = 0; i < c->nargs; i++) {
      if (i == parent) continue;
      if (input_tainted(w, g, k, depth, i)) return false;
      if (!r->c->arg_compatible(r, call, c, i)) return false;
    }
  }
  return true;
}

static void push_repl(Work *w, const GPExpr *orig, GPExpr *repl) {
  size_t c2 = w->crepl;
  grow((void **)&w->repl, &c2, w->nrepl + 1, sizeof *w->repl);
  grow((void **)&w->done, &w->crepl, w->nrepl + 1, sizeof *w->done);
  w->repl[w->nrepl] = repl;
  w->done[w->nrepl] = NULL;
  w->nrepl++;
  pmap_put(&w->subst, orig, (void *)(intptr_t)w->nrepl);
  pmap_put(&w->rmap, repl, (void *)(intptr_t)w->nrepl);
}

/* Combine one group; 0 (combined or refused), -1 + error. */
GPExpr *cp_join_args(CPRun *r, const CPGroup *g, int32_t depth, int32_t arg, const char *op, int64_t axis) {
  GPExpr *small[16] = {0};
  GPExpr **xs = g->n > 16 ? malloc((size_t)g->n * sizeof *xs) : small;
  if (!xs) abort();
  for (int32_t k = 0; k < g->n; k++) xs[k] = cp_at(g, k, depth)->args[arg];
  GPExpr *e = cp_join(r, op, g->n, xs, axis);
  if (xs != small) free(xs);
  return e;
}

/* Level `depth` as one call: branch 0's op and attrs, `data` at `parent`, every other argument
 * the combiner's join of the branches'.  A new reference, or NULL + error. */
static GPExpr *make_following(CPRun *r, GPExpr *data, const CPGroup *g, int32_t depth, int32_t parent) {
  const GPCall *call = cp_at(g, 0, depth);
  if (call->nargs > 16) {
    H->error_set(GP_ERR_UNSUPPORTED, "more than 16 arguments");
    return NULL;
  }
  GPExpr *args[16] = {0};
  bool ok = true;
  for (int32_t i = 0; i < call->nargs && ok; i++)
    if (i != parent) ok = (args[i] = r->c->join_arg(r, g, depth, i, parent)) != NULL;
  GPExpr *res = NULL;
  if (ok) {
    args[parent] = data;
    res = cp_call_attrs(r, call->op, call->nargs, args, call->attrs);
  }
  for (int32_t i = 0; i < call->nargs; i++)
    if (i != parent) gp_release(args[i]);
  return res;
}

static int combine_group(CPRun *r, Work *w, const CPGroup *g) {
  char loc[256];
  const GPCall *first = cp_at(g, 0, 0);
  cp_where(r, &first->base, loc, sizeof loc);
  for (int32_t k = 0; k < g->n; k++) {
    const GPCall *c = cp_at(g, k, 0);
    for (int32_t i = 1; i < c->nargs; i++)
      if (input_tainted(w, g, k, 0, i)) {
        r->refused++;
        note(r, "kept %d %s branches at %s: an input depends on a combined branch", (int)g->n, r->c->op, loc);
        return 0;
      }
  }
  GPExpr *combined = r->c->make_combined(r, g);
  if (!combined) {
    r->refused++;
    note(r, "kept %d %s branches at %s: %s", (int)g->n, r->c->op, loc, H->error_message());
    H->error_clear();
    return 0;
  }
  int32_t depth = g->len[0];
  for (int32_t k = 1; k < g->n; k++)
    if (g->len[k] < depth) depth = g->len[k];
  int32_t i;
  for (i = 1; i < depth; i++) {
    const GPCall *c = cp_at(g, 0, i);
    int32_t parent;
    for (parent = 0; parent < c->nargs; parent++)
      if (c->args[parent] == (const GPExpr *)cp_at(g, 0, i - 1)) break;
    if (parent == c->nargs || !check_level(r, w, g, i, parent)) break;
    GPExpr *next = make_following(r, combined, g, i, parent);
    if (!next) {
      H->error_clear();
      break;
    }
    if (!r->c->level_ok(r, next, g, i)) {
      gp_release(next);
      break;
    }
    gp_release(combined);
    combined = next;
  }
  GPExpr *small[16] = {0};
  GPExpr **out = g->n > 16 ? calloc((size_t)g->n, sizeof *out) : small;
  if (!out) abort();
  memset(out, 0, (size_t)g->n * sizeof *out);
  int rc = r->c->update_output(r, combined, g, i - 1, out);
  gp_release(combined);
  if (rc != 0) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", H->error_message() ? H->error_message() : "");
    for (int32_t k = 0; k < g->n; k++) gp_release(out[k]);
    if (out != small) free(out);
    H->error_set(GP_ERR_PASS, "%s: cannot split the combined %s at %s: %s", r->c->pass, r->c->op, loc, msg);
    return -1;
  }
  for (int32_t k = 0; k < g->n; k++) push_repl(w, &cp_at(g, k, i - 1)->base, out[k]);
  if (out != small) free(out);
  r->groups++;
  r->branches += g->n;
  r->levels += i - 1;
  note(r, "combined %d %s branches at %s%s", (int)g->n, r->c->op, loc,
       i > 1 ? (i == 2 ? " with 1 following op each" : " with following ops") : "");
  return 0;
}

static GPExpr *subst_rewrite(void *user, GPExpr *orig, GPExpr *rebuilt) {
  Work *w = user;
  intptr_t k = (intptr_t)pmap_get(&w->subst, orig);
  if (k > 0) {
    GPExpr *d = w->done[k - 1];
    if (!d) {
      H->error_set(GP_ERR_INTERNAL, "a replaced node is used by its own replacement");
      return NULL;
    }
    return gp_retain(d);
  }
  return gp_retain(rebuilt);
}

/* Marks the rewritten replacements: the tuple's field k is repl[k]. */
static GPExpr *mark_rewrite(void *user, GPExpr *orig, GPExpr *rebuilt) {
  Work *w = user;
  GPExpr *r = subst_rewrite(user, orig, rebuilt);
  if (!r) return NULL;
  intptr_t k = (intptr_t)pmap_get(&w->rmap, orig);
  if (k > 0 && !w->done[k - 1]) w->done[k - 1] = gp_retain(r);
  return r;
}

static void work_free(Work *w) {
  H->expr_index_free(w->ix);
  free(w->pool_id);
  pmap_free(&w->subst);
  pmap_free(&w->rmap);
  free(w->uoff);
  free(w->users);
  free(w->start);
  free(w->tainted);
  free(w->pool);
  free(w->boff);
  free(w->blen);
  free(w->broot);
  free(w->blabel);
  free(w->bkey);
  for (size_t k = 0; k < w->nrepl; k++) {
    gp_release(w->repl[k]);
    gp_release(w->done[k]);
  }
  free(w->repl);
  free(w->done);
}

static GPExpr *combine_function(void *user, const GPModule *mod, int32_t index) {
  CPRun *r = user;
  r->source = mod->source_name;
  r->untyped = false;
  GPFunctionExpr *fn = mod->funcs[index];
  const GPOp *op = H->op_get(r->c->op);
  if (!op) return NULL;
  if (!std_may_call(&fn->base, r->c->op)) return gp_retain(&fn->base); /* no such op: O(1) */
  Work w = {0};
  if (!(w.ix = H->expr_index_new(&fn->base))) return NULL;
  w.nodes = w.ix->nodes;
  w.n = w.ix->num_nodes;
  size_t n = w.n;
  if (!feeds_enough(&w, op, r->min_branches)) {
    H->expr_index_free(w.ix);
    return gp_retain(&fn->base);
  }
  /* users (TVM's children_map_) */
  w.uoff = calloc(n + 2, sizeof *w.uoff);
  w.start = calloc(n + 1, 1);
  w.tainted = calloc(n + 1, 1);
  if (!w.uoff || !w.start || !w.tainted) abort();
  size_t nu = 0;
  for (size_t i = 0; i < n; i++) {
    if (ekind(w.nodes[i]) != GP_TI_CALL) continue;
    const GPCall *c = (const GPCall *)w.nodes[i];
    w.start[i] = is_start(r, op, w.nodes[i]);
    int32_t na = w.start[i] ? 1 : c->nargs;
    for (int32_t a = 0; a < na; a++) w.uoff[arg_id(&w, (int32_t)i, a) + 2]++;
    nu += (size_t)na;
  }
  for (size_t i = 0; i < n; i++) w.uoff[i + 2] += w.uoff[i + 1];
  w.users = malloc((nu ? nu : 1) * sizeof *w.users);
  if (!w.users) abort();
  for (size_t i = 0; i < n; i++) {
    if (ekind(w.nodes[i]) != GP_TI_CALL) continue;
    const GPCall *c = (const GPCall *)w.nodes[i];
    int32_t na = w.start[i] ? 1 : c->nargs;
    for (int32_t a = 0; a < na; a++) w.users[w.uoff[arg_id(&w, (int32_t)i, a) + 1]++] = (int32_t)i;
  }
  /* now users of node i are users[uoff[i] .. uoff[i + 1]) */
  /* branches, per root in post-order, then groups */
  for (size_t i = 0; i < n; i++) {
    size_t b0 = w.nb;
    for (int32_t u = w.uoff[i]; u < w.uoff[i + 1]; u++) {
      int32_t c = w.users[u];
      if (w.start[c] && arg_id(&w, c, 0) == (int32_t)i) add_branch(&w, r, (int32_t)i, c);
    }
    if (w.nb > b0) label_groups(&w, r, b0, w.nb);
  }
  /* group members: counting by label, in branch order (labels are group leaders, which come
   * first in their group) */
  int32_t *gcount = calloc(w.nb + 1, sizeof *gcount), *gmem = malloc((w.nb + 1) * sizeof *gmem);
  int32_t *gpos = calloc(w.nb + 1, sizeof *gpos);
  if (!gcount || !gmem || !gpos) abort();
  for (size_t b = 0; b < w.nb; b++) gcount[w.blabel[b]]++;
  int32_t acc = 0;
  for (size_t b = 0; b < w.nb; b++) {
    gpos[b] = acc;
    acc += gcount[b];
  }
  for (size_t b = 0; b < w.nb; b++) gmem[gpos[w.blabel[b]]++] = (int32_t)b;
  for (size_t b = 0; b < w.nb; b++) gpos[b] -= gcount[b]; /* back to the start */
  /* taint: every node of a candidate group's branches, and whatever depends on one */
  for (size_t b = 0; b < w.nb; b++) {
    int32_t l = w.blabel[b];
    if (gcount[l] < r->min_branches) continue;
    for (int32_t d = 0; d < w.blen[b]; d++) w.tainted[w.pool_id[w.boff[b] + d]] = 1;
  }
  for (size_t i = 0; i < n; i++) {
    if (w.tainted[i]) continue;
    for (int32_t q = w.ix->kid_offsets[i]; q < w.ix->kid_offsets[i + 1]; q++) {
      int32_t cid = w.ix->kids[q];
      if (w.tainted[cid]) {
        w.tainted[i] = 1;
        break;
      }
    }
  }
  int rc = 0;
  int32_t *offs = NULL, *lens = NULL;
  size_t cap = 0;
  for (size_t b = 0; b < w.nb && rc == 0; b++) {
    if (w.blabel[b] != (int32_t)b || gcount[b] < r->min_branches) continue;
    int32_t gn = gcount[b];
    if ((size_t)gn > cap) {
      cap = (size_t)gn;
      free(offs);
      free(lens);
      offs = malloc(cap * sizeof *offs);
      lens = malloc(cap * sizeof *lens);
      if (!offs || !lens) abort();
    }
    for (int32_t k = 0; k < gn; k++) {
      offs[k] = w.boff[gmem[gpos[b] + k]];
      lens[k] = w.blen[gmem[gpos[b] + k]];
    }
    CPGroup g = {.pool = w.pool, .off = offs, .len = lens, .n = gn};
    rc = combine_group(r, &w, &g);
  }
  free(offs);
  free(lens);
  free(gcount);
  free(gmem);
  free(gpos);
  GPExpr *result = NULL;
  if (rc == 0 && w.nrepl == 0) result = gp_retain(&fn->base);
  if (rc == 0 && w.nrepl > 0) {
    /* One rewrite of (replacements..., function): the replacements first, in group order, so a
     * replaced node met anywhere later (inside another group's replacement, or the body) finds
     * its rewritten replacement. */
    GPExpr **fields = malloc((w.nrepl + 1) * sizeof *fields);
    if (!fields) abort();
    memcpy(fields, w.repl, w.nrepl * sizeof *fields);
    fields[w.nrepl] = &fn->base;
    GPTuple *t = H->tuple_new((int32_t)(w.nrepl + 1), fields);
    free(fields);
    GPExpr *nt = t ? H->rewrite(&t->base, mark_rewrite, &w) : NULL;
    gp_release(t);
    if (nt) {
      GPExpr *nf = ((GPTuple *)nt)->fields[w.nrepl];
      result = gp_retain(nf);
      gp_release(nt);
      if (!result->checked_type) r->untyped = true;
    }
  }
  work_free(&w);
  return result;
}

static int combine_pass(void *self, const GPAny *args, int32_t nargs, GPAny *result) {
  const CPCombiner *c = self;
  GPModule *mod;
  GPPassContext *ctx;
  if (std_pass_args(c->pass, args, nargs, &mod, &ctx) != 0) return -1;
  char key[128];
  snprintf(key, sizeof key, "%s.min_num_branches", c->pass);
  CPRun r = {.c = c, .ctx = ctx, .min_branches = std_config_int(ctx, key, 3)};
  if (r.min_branches < 1) {
    H->error_set(GP_ERR_VALUE, "%s: %s must be >= 1, got %lld", c->pass, key, (long long)r.min_branches);
    return -1;
  }
  if (c->read_config && c->read_config(&r, ctx) != 0) return -1;
  GPModule *out = std_function_pass_typed(mod, combine_function, &r, &r.untyped);
  if (!out) return -1;
  std_note(ctx, "combined %lld groups of %s (%lld branches, %lld following ops folded), kept %lld groups",
           (long long)r.groups, c->op, (long long)r.branches, (long long)r.levels, (long long)r.refused);
  return std_return_module(result, out);
}

int cp_register(const CPCombiner *c) {
  static const char *const required[] = {"InferType"};
  GPConfigKey keys[4] = {
      {.name = "min_num_branches",
       .type_index = GP_TI_INT,
       .default_value = {.type_index = GP_TI_INT, .v_int64 = 3},
       .help = "the fewest parallel branches worth combining (>= 1)"},
  };
  int32_t nk = 1;
  for (int32_t i = 0; i < c->num_extra_keys && nk < 4; i++) keys[nk++] = c->extra_keys[i];
  GPPassInfo info = {
      .struct_size = sizeof(GPPassInfo),
      .abi_version = GP_ABI_VERSION,
      .name = c->pass,
      .opt_level = 4,
      .kind = GP_PASS_TRANSFORM,
      .required = required,
      .num_required = 1,
      .config_keys = keys,
      .num_config_keys = nk,
      .func = combine_pass,
      .self = (void *)c,
      .help = c->help,
  };
  return H->pass_register(&info, 0);
}
