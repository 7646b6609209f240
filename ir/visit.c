/* visit.c -- the node index (a dense post-order numbering with child ids), the iterative
 * post-order and the rewriter built on it. */
#include "ir.h"
#include "../common/scratch.h"

#include <assert.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* Visiting order: child order, except (with GP_NI_LET_VALUE_FIRST) a let's value before its
 * var, so a rewrite sees the bound value before any use of the name.  Returns the child
 * position visited at step i. */
static inline int32_t visit_pos(const GPExpr *e, int32_t i, int flags) {
  if ((flags & GP_NI_LET_VALUE_FIRST) && gp_kind(e) == GP_TI_LET && i < 2) return 1 - i;
  return i;
}

/* An address map: open addressing, Fibonacci hashing, key -> val: the pool pages of the shared
 * nodes, and the shared nodes that are not in a pool page. */
typedef struct {
  const void *key;
  int32_t val;
} AddrEnt;

typedef struct {
  AddrEnt *tab;
  size_t cap, used;
  int shift;
} AddrMap;

/* An address's slot in a power-of-two table of 2^(64 - shift) entries (Fibonacci hashing). */
static inline size_t addr_hash(uintptr_t key, int shift) {
  return (size_t)(((uint64_t)key * 0x9e3779b97f4a7c15ull) >> shift);
}

static inline size_t am_slot(const AddrMap *m, const void *key) {
  size_t i = addr_hash((uintptr_t)key, m->shift);
  size_t mask = m->cap - 1;
  while (m->tab[i].key && m->tab[i].key != key) i = (i + 1) & mask;
  return i;
}

static void am_grow(AddrMap *m) {
  size_t ocap = m->cap;
  AddrEnt *old = m->tab;
  m->cap = ocap ? ocap * 2 : 256;
  m->shift = 64;
  for (size_t c = m->cap; c > 1; c >>= 1) m->shift--;
  m->tab = gp_scratch_zalloc(m->cap, sizeof *m->tab);
  for (size_t i = 0; i < ocap; i++)
    if (old[i].key) m->tab[am_slot(m, old[i].key)] = old[i];
  gp_scratch_free(old);
}

/* val's cell for key, made (val 0) when absent; valid until the map's next use. */
static int32_t *am_cell(AddrMap *m, const void *key) {
  if ((m->used + 1) * 2 > m->cap) am_grow(m);
  size_t i = am_slot(m, key);
  if (!m->tab[i].key) {
    m->tab[i].key = key;
    m->used++;
  }
  return &m->tab[i].val;
}

/* The shared nodes (those held by more than one reference), each numbered by the order the walk
 * first met it (its ordinal), and per ordinal the node's id, -1 while it is on the DFS path.
 *  - Where a node is: a cell per node, 0 before the walk meets it, then its ordinal + 1.  For a
 *    node cut from a pool page (gp_node_pool_page) the cell is in an array of the page's own,
 *    a cell per 32 bytes of the page (no two nodes share one: a node is at least a GPExpr), found
 *    through a map of pages.  The walk meets a graph's nodes in about the order they were made,
 *    so it reads those arrays about in order too: at 1M calls, a hash table of the 325k shared
 *    nodes of CombineParallelConv2D's input missed the cache on every lookup, 23% of the walk.
 *    Other nodes (the pool off, huge nodes) are kept in an address map.
 *  - A node finishing writes its id to ids[ordinal], with no second lookup. */
#define UNIT_SHIFT 5
#define PAGE_CELLS (GP_NODE_PAGE_SIZE >> UNIT_SHIFT)
_Static_assert(sizeof(GPExpr) >= ((size_t)1 << UNIT_SHIFT), "two nodes would share a cell");

typedef struct {
  AddrMap pages; /* page address -> its number + 1: its cells are cells[number * PAGE_CELLS ..) */
  uintptr_t last_page[2]; /* the pages of the last lookups of constants and of others */
  size_t last_cells[2];
  int32_t *cells; /* the pages' arrays, one after the other (a scratch buffer: arrays of their
                   * own from the heap were fresh pages, faulted in, in every walk) */
  size_t ncells, capcells;
  AddrMap other;
  int32_t *ids; /* per ordinal (`used` of them) */
  size_t used, idcap;
} Shared;

/* Where page's cells start in s->cells, made (zeroed) when it has none. */
static size_t sh_page_cells(Shared *s, uintptr_t page) {
  int32_t *number = am_cell(&s->pages, (const void *)page);
  if (!*number) {
    if (s->ncells == s->capcells) {
      s->capcells = s->capcells ? s->capcells * 2 : 64 * PAGE_CELLS; /* 512 KiB, zeroed page by page */
      s->cells = gp_scratch_realloc(s->cells, s->capcells * sizeof *s->cells);
    }
    memset(s->cells + s->ncells, 0, PAGE_CELLS * sizeof *s->cells);
    *number = (int32_t)(s->ncells / PAGE_CELLS) + 1;
    s->ncells += PAGE_CELLS;
  }
  return (size_t)(*number - 1) * PAGE_CELLS;
}

/* e's cell: 0 before the walk met e, then its ordinal + 1; valid until the next lookup.  `k`:
 * which of the last pages to try (constants and calls are on pages of their own). */
static inline int32_t *sh_cell(Shared *s, const void *e, int k) {
  uintptr_t page = gp_node_pool_page(e);
  if (!page) return am_cell(&s->other, e);
  if (page != s->last_page[k]) {
    s->last_cells[k] = sh_page_cells(s, page);
    s->last_page[k] = page;
  }
  return &s->cells[s->last_cells[k] + (((uintptr_t)e & (GP_NODE_PAGE_SIZE - 1)) >> UNIT_SHIFT)];
}

static void sh_free(Shared *s) {
  gp_scratch_free(s->cells);
  gp_scratch_free(s->pages.tab);
  gp_scratch_free(s->other.tab);
  gp_scratch_free(s->ids);
}

/* 32 bytes: a chain of n nodes holds n frames at its deepest. */
typedef struct {
  GPExpr *e;
  size_t base;     /* this node's child ids on the kid stack (child order) */
  int32_t next;
  uint32_t count;  /* children, and FRAME_SHARED when the node went into the shared table */
  uint32_t ord;    /* FRAME_SHARED: its ordinal in the table */
} Frame;
#define FRAME_SHARED 0x80000000u
#define PF_UP 8 /* on the way up, prefetch the next child of the frame this far above */
#define FRAME_COUNT(f) ((int32_t)((f)->count & ~FRAME_SHARED))

/* the sizes the thread's last walk needed: nodes, child references, frames, kid-stack slots */
static _Thread_local size_t hint_nodes, hint_kids, hint_frames, hint_stack;

/* An array sized by a bigger walk keeps only what it holds (an index outlives the walk). */
static void *ni_fit(void *a, size_t cap, size_t len, size_t size) {
  if (cap <= 2 * len + 1024) return a;
  void *b = memcpy(gp_scratch_alloc((len ? len : 1) * size), a, len * size);
  gp_scratch_free(a);
  return b;
}

int gp_ni_build(GPNodeIndex *ni, GPExpr *root, int flags) {
  memset(ni, 0, sizeof *ni);
  if (!root || !gp_is_expr(root)) {
    gp_error_set(GP_ERR_VALUE, "post_order: root is not an expression");
    return -1;
  }
  Shared sh = {0};
  /* Sized as this thread's last walk found its graph (passes walk one function after another,
   * mostly of about the same size): doubling from small copies each array about once more. */
  size_t fcap = hint_frames > 256 ? hint_frames : 256, ncap = hint_nodes > 1024 ? hint_nodes : 1024,
         kcap = hint_kids > 1024 ? hint_kids : 1024, scap = hint_stack > 1024 ? hint_stack : 1024;
  size_t nf = 0, maxnf = 0, kin = 0, kout = 0, ktop = 0, maxtop = 0;
  Frame *fr = gp_scratch_alloc(fcap * sizeof *fr);
  /* The index is written in id order as nodes finish: nodes, tag, kid_off and kids only grow
   * at their ends.  A node's child ids wait on the kid stack (slots pushed when it is entered,
   * filled as its children finish, copied to kids and popped when it finishes), whose top is
   * the only part in use: a CSR built from child blocks in entry order read those blocks in a
   * second pass, 13% of a 4.5M-node walk. */
  GPExpr **nodes = gp_scratch_alloc(ncap * sizeof *nodes);
  int32_t *tag = gp_scratch_alloc(ncap * sizeof *tag); /* per id: see GPNodeIndex.tag */
  int32_t *koff = gp_scratch_alloc((ncap + 1) * sizeof *koff);
  int32_t *kids = gp_scratch_alloc(kcap * sizeof *kids);
  int32_t *kst = gp_scratch_alloc(scap * sizeof *kst); /* the kid stack */
  size_t n = 0;
  int rc = 0;
  /* Entering a node prefetches its children, not their slots in the shared table: most
   * children are never looked up there (constants, ops and nodes of one reference are not),
   * and at 1M calls a line of the table per child crowded out the walk's own misses (a fresh
   * graph's walk: 88 -> 71 ms). */
#define ENTER(x, is_shared)                                                                      \
  do {                                                                                           \
    GPExpr *x_ = (x);                                                                            \
    int32_t c_ = gp_expr_num_children(x_);                                                       \
    if (nf == fcap) fcap *= 2, fr = gp_scratch_realloc(fr, fcap * sizeof *fr);                   \
    if (nf + 1 > maxnf) maxnf = nf + 1;                                                          \
    while (ktop + (size_t)c_ > scap) scap *= 2, kst = gp_scratch_realloc(kst, scap * sizeof *kst); \
    fr[nf++] = (Frame){x_, ktop, 0, (uint32_t)c_ | ((is_shared) ? FRAME_SHARED : 0u), ord_};   \
    for (int32_t p_ = 0; p_ < c_; p_++) __builtin_prefetch(gp_expr_child_at(x_, p_));            \
    ktop += (size_t)c_;                                                                          \
    kin += (size_t)c_;                                                                           \
    if (ktop > maxtop) maxtop = ktop;                                                            \
  } while (0)
  /* Gives node x the next id; its cnt_ child ids are on the kid stack at base_. */
#define NUMBER(x, cnt_, base_)                                                                   \
  do {                                                                                           \
    if (n == ncap) {                                                                             \
      ncap *= 2;                                                                                 \
      nodes = gp_scratch_realloc(nodes, ncap * sizeof *nodes);                                   \
      tag = gp_scratch_realloc(tag, ncap * sizeof *tag);                                         \
      koff = gp_scratch_realloc(koff, (ncap + 1) * sizeof *koff);                                \
    }                                                                                            \
    size_t c2_ = (size_t)(cnt_);                                                                 \
    while (kout + c2_ > kcap) kcap *= 2, kids = gp_scratch_realloc(kids, kcap * sizeof *kids);   \
    koff[n] = (int32_t)kout;                                                                     \
    for (size_t j_ = 0; j_ < c2_; j_++) kids[kout + j_] = kst[(base_) + j_]; /* a few: no call */  \
    kout += c2_;                                                                                 \
    nodes[n] = (x);                                                                              \
    int32_t k_ = gp_kind(x);                                                                     \
    tag[n++] = k_ == GP_TI_CALL && gp_kind(GP_AS(GPCall, x)->op) == GP_TI_OP ? GP_AS(const GPOp, GP_AS(GPCall, x)->op)->index : -k_; \
  } while (0)
  int32_t *op_id = NULL; /* per op registry index: its id, -1 before it is met */
  size_t nops = 0;
  uint32_t ord_ = 0;
  ENTER(root, false); /* a DAG: the root is never met again below itself */
  while (nf) {
    /* a step numbers at most one node, whose child references were all counted in kin; while a
     * frame is open one more node is still to come */
    if (n >= (size_t)INT32_MAX || kin > (size_t)INT32_MAX) {
      gp_error_set(GP_ERR_VALUE, "post_order: more than %d %s", INT32_MAX,
                   n >= (size_t)INT32_MAX ? "nodes" : "child references");
      rc = -1;
      break;
    }
    Frame *f = &fr[nf - 1];
    if (f->next < FRAME_COUNT(f)) {
      int32_t pos = visit_pos(f->e, f->next++, flags);
      GPExpr *c = gp_expr_child_at(f->e, pos);
      size_t at = f->base + (size_t)pos;
      if (!gp_maybe_shared(c)) {
        kst[at] = -1; /* filled when c finishes */
        ENTER(c, false);
        continue;
      }
      if (gp_kind(c) == GP_TI_OP) { /* a leaf met by every call: by its registry index, no hashing */
        size_t oi = (size_t)GP_AS(const GPOp, c)->index;
        if (oi >= nops) {
          size_t m = nops;
          nops = oi + 64;
          op_id = gp_scratch_realloc(op_id, nops * sizeof *op_id);
          for (; m < nops; m++) op_id[m] = -1;
        }
        if (op_id[oi] < 0) {
          op_id[oi] = (int32_t)n;
          NUMBER(c, 0, 0);
        }
        kst[at] = op_id[oi];
        continue;
      }
      bool leaf = gp_kind(c) == GP_TI_CONSTANT; /* a constant: numbered when met, never entered */
      int32_t *cell = sh_cell(&sh, c, leaf);
      if (*cell) {
        kst[at] = sh.ids[*cell - 1]; /* -1 only on a cycle, which immutable IR cannot form */
        continue;
      }
      if (sh.used == sh.idcap) {
        sh.idcap = sh.idcap ? sh.idcap * 2 : 256;
        sh.ids = gp_scratch_realloc(sh.ids, sh.idcap * sizeof *sh.ids);
      }
      ord_ = (uint32_t)sh.used;
      *cell = (int32_t)ord_ + 1;
      if (leaf) {
        sh.ids[sh.used++] = (int32_t)n;
        kst[at] = (int32_t)n;
        NUMBER(c, 0, 0);
        continue;
      }
      sh.ids[sh.used++] = -1;
      kst[at] = -1;
      ENTER(c, true);
      continue;
    }
    /* finished: number it and tell the parent.  On the way up, the frames above visit their
     * next children soon (a chain's constants are all met on the way up, long after the
     * prefetch when their call was entered): fetch those PF_UP frames ahead, and the nodes of
     * the frames 2 * PF_UP ahead, whose child pointers are read then. */
    if (nf > 2 * PF_UP) __builtin_prefetch(fr[nf - 1 - 2 * PF_UP].e);
    if (nf > PF_UP) {
      const Frame *u = &fr[nf - 1 - PF_UP];
      if (u->next < FRAME_COUNT(u)) __builtin_prefetch(gp_expr_child_at(u->e, visit_pos(u->e, u->next, flags)));
    }
    int32_t id = (int32_t)n;
    NUMBER(f->e, FRAME_COUNT(f), f->base);
    ktop = f->base;
    if (f->count & FRAME_SHARED) sh.ids[f->ord] = id;
    nf--;
    if (nf) {
      Frame *p = &fr[nf - 1];
      int32_t pos = visit_pos(p->e, p->next - 1, flags);
      kst[p->base + (size_t)pos] = id;
    }
  }
#undef ENTER
#undef NUMBER
  gp_scratch_free(fr);
  gp_scratch_free(kst);
  sh_free(&sh);
  gp_scratch_free(op_id);
  if (rc != 0) {
    gp_scratch_free(nodes);
    gp_scratch_free(tag);
    gp_scratch_free(koff);
    gp_scratch_free(kids);
    return rc;
  }
  assert(ktop == 0 && kout == kin);
  koff[n] = (int32_t)kout;
  ni->nodes = ni_fit(nodes, ncap, n, sizeof *nodes);
  ni->tag = ni_fit(tag, ncap, n, sizeof *tag);
  ni->kid_off = ni_fit(koff, ncap + 1, n + 1, sizeof *koff);
  ni->kids = ni_fit(kids, kcap, kout, sizeof *kids);
  ni->n = n;
  hint_nodes = n, hint_kids = kout, hint_frames = maxnf, hint_stack = maxtop;
  return 0;
}

void gp_ni_free(GPNodeIndex *ni) {
  gp_scratch_free(ni->nodes);
  gp_scratch_free(ni->kid_off);
  gp_scratch_free(ni->kids);
  gp_scratch_free(ni->tag);
  memset(ni, 0, sizeof *ni);
}

/* ---- the shared-index cache (gp_ni_acquire) */

typedef struct NiEntry {
  GPNodeIndex ni;     /* first: a GPNodeIndex pointer is its entry */
  const GPExpr *root; /* borrowed: the entry goes before root is freed */
  uint32_t users;
  bool cached;        /* in ni_cache (else private to its one user) */
  uint64_t stamp;     /* last use, for eviction */
} NiEntry;

#define NI_CACHE 1 /* consecutive passes share the function one passes to the next; one index of the biggest graph is the memory it may hold */

static pthread_mutex_t ni_lock = PTHREAD_MUTEX_INITIALIZER;
static NiEntry *ni_cache[NI_CACHE];
static uint64_t ni_clock;

static void entry_free(NiEntry *x) {
  gp_ni_free(&x->ni);
  gp_free(x);
}

const GPNodeIndex *gp_ni_acquire(GPExpr *root) {
  pthread_mutex_lock(&ni_lock);
  for (int i = 0; i < NI_CACHE; i++)
    if (ni_cache[i] && ni_cache[i]->root == root) {
      ni_cache[i]->users++;
      ni_cache[i]->stamp = ++ni_clock;
      pthread_mutex_unlock(&ni_lock);
      return &ni_cache[i]->ni;
    }
  pthread_mutex_unlock(&ni_lock);
  NiEntry *x = gp_calloc(1, sizeof *x);
  if (gp_ni_build(&x->ni, root, GP_NI_LET_VALUE_FIRST) != 0) {
    gp_free(x);
    return NULL;
  }
  x->root = root;
  x->users = 1;
  NiEntry *evicted = NULL;
  pthread_mutex_lock(&ni_lock);
  int slot = -1;
  bool dup = false; /* another thread cached it meanwhile: ours stays private */
  for (int i = 0; i < NI_CACHE; i++) dup = dup || (ni_cache[i] && ni_cache[i]->root == root);
  for (int i = 0; i < NI_CACHE && !dup && slot < 0; i++)
    if (!ni_cache[i]) slot = i;
  for (int i = 0; i < NI_CACHE && !dup; i++) /* else the least recently used that nobody uses */
    if (slot < 0 || (ni_cache[slot] && !ni_cache[i]->users && ni_cache[i]->stamp < ni_cache[slot]->stamp))
      if (!ni_cache[i]->users) slot = i;
  if (slot >= 0) {
    evicted = ni_cache[slot];
    ni_cache[slot] = x;
    x->cached = true;
    x->stamp = ++ni_clock;
    gp_expr_mark_indexed(root);
  }
  pthread_mutex_unlock(&ni_lock);
  if (evicted) entry_free(evicted); /* unused (users 0): outside the lock */
  return &x->ni;
}

void gp_ni_release(const GPNodeIndex *ni) {
  if (!ni) return;
  NiEntry *x = (NiEntry *)(uintptr_t)ni;
  pthread_mutex_lock(&ni_lock);
  assert(x->users > 0);
  bool drop = --x->users == 0 && !x->cached;
  pthread_mutex_unlock(&ni_lock);
  if (drop) entry_free(x);
}

void gp_ni_forget(const GPExpr *root) {
  NiEntry *gone = NULL;
  pthread_mutex_lock(&ni_lock);
  for (int i = 0; i < NI_CACHE; i++)
    if (ni_cache[i] && ni_cache[i]->root == root) {
      assert(!ni_cache[i]->users); /* a user holds root: it cannot be freed now */
      gone = ni_cache[i];
      ni_cache[i] = NULL;
    }
  pthread_mutex_unlock(&ni_lock);
  if (gone) entry_free(gone);
}

void gp_ni_cache_clear(void) {
  NiEntry *gone[NI_CACHE];
  int n = 0;
  pthread_mutex_lock(&ni_lock);
  for (int i = 0; i < NI_CACHE; i++)
    if (ni_cache[i] && !ni_cache[i]->users) {
      gone[n++] = ni_cache[i];
      ni_cache[i] = NULL;
    }
  pthread_mutex_unlock(&ni_lock);
  while (n) entry_free(gone[--n]);
}

int gp_post_order(GPExpr *root, GPExpr ***out, size_t *count) {
  *out = NULL;
  *count = 0;
  const GPNodeIndex *ni = gp_ni_acquire(root);
  if (!ni) return -1;
  *out = gp_malloc((ni->n ? ni->n : 1) * sizeof **out); /* the caller frees it with gp_free */
  memcpy(*out, ni->nodes, ni->n * sizeof **out);
  *count = ni->n;
  gp_ni_release(ni);
  return 0;
}

/* True when e is typed and every kid has the (interned) checked type of e's child at its
 * position (or is that child).  A node's type is a function of its kind, its attrs and its children's types (an
 * op's relation, a tuple's fields, a function's params and body, ...), so a copy of e with
 * such kids has e's type: the rewrite keeps it, and a re-typing runs no relation for it (the
 * same trust InferType gives an unchanged typed node). */
static bool same_kid_types(const GPExpr *e, GPExpr *const *kids, int32_t nk) {
  if (!e->checked_type) return false;
  for (int32_t k = 0; k < nk; k++) {
    const GPExpr *c = gp_expr_child_at(e, k);
    if (kids[k] == c) continue; /* e.g. an op callee, which has no type */
    if (!c->checked_type || kids[k]->checked_type != c->checked_type) return false;
  }
  return true;
}

/* Its address is GPHostAPI.rewrite_keep.  Immortal: a plugin that retains or releases it by
 * mistake changes nothing (a count of 0 would call a NULL deleter). */
GPExpr gp_rewrite_keep_mark = {.obj = {.ref_count = GP_REF_IMMORTAL}};

/* How many nodes ahead gp_rewrite_indexed prefetches (their addresses are in the index). */
#define REWRITE_AHEAD 8

static GPExpr *rewrite_impl(const GPNodeIndex *ni, GPRewriteIdFn fn, void *user, GPRewriteDoneFn done,
                            void *done_user) {
  size_t n = ni->n;
  GPExpr **res = gp_scratch_zalloc(n ? n : 1, sizeof *res); /* id -> rewrite */
  /* res[i] is a reference of ours unless it is the input node itself (the caller's root keeps
   * those alive): an unchanged node is released while it is in cache, not in a last pass over
   * every node when it is not. */
  uint8_t *own = gp_scratch_zalloc(n ? n : 1, 1);
  GPExpr *kids_small[16];
  GPExpr *result = NULL;
  bool failed = false;
  for (size_t i = 0; i < n && !failed; i++) {
    GPExpr *e = ni->nodes[i];
    if (i + REWRITE_AHEAD < n) __builtin_prefetch(ni->nodes[i + REWRITE_AHEAD]); /* addresses known ahead */
    int32_t nk = gp_expr_num_children(e);
    GPExpr **kids = nk > 16 ? gp_malloc((size_t)nk * sizeof(GPExpr *)) : kids_small;
    bool same = true;
    for (int32_t k = 0; k < nk; k++) {
      kids[k] = res[gp_ni_kid(ni, (int32_t)i, k)];
      /* A binding name replaced by a non-var (e.g. inlined) keeps its binding occurrence. */
      if (gp_expr_is_binding(e, k) && gp_kind(kids[k]) != GP_TI_VAR) kids[k] = gp_expr_child_at(e, k);
      same = same && kids[k] == gp_expr_child_at(e, k);
    }
    /* rebuilt: e itself (borrowed: the input holds it) when no child changed, else a new node of
     * ours; no reference is taken on an unchanged node but the callback's */
    GPExpr *rebuilt = same ? e : gp_expr_with_children(e, kids, false);
    if (rebuilt && rebuilt != e && same_kid_types(e, kids, nk)) {
      rebuilt->checked_type = e->checked_type;
      /* not yet seen by any other thread: its word is written plainly */
      uint64_t *w = (uint64_t *)(void *)rebuilt - 1;
      if (*w & GP_SUM_KIDS_TYPED) *w |= GP_SUM_TYPED;
    }
    if (kids != kids_small) gp_free(kids);
    if (!rebuilt) {
      failed = true;
      break;
    }
    GPExpr *repl = fn ? fn(user, (int32_t)i, e, rebuilt, res) : gp_rewrite_keep;
    if (repl == gp_rewrite_keep) { /* kept: no reference taken or dropped on the node */
      own[i] = rebuilt != e; /* the new copy's first reference is ours */
      res[i] = rebuilt;
      continue;
    }
    bool replaced = repl != rebuilt;
    if (rebuilt != e) gp_release(rebuilt);
    if (!repl) {
      if (!gp_error_kind()) gp_error_set(GP_ERR_INTERNAL, "rewrite callback failed without an error");
      failed = true;
      break;
    }
    if (!gp_is_expr(repl)) {
      gp_release(repl);
      gp_error_set(GP_ERR_VALUE, "rewrite callback returned a non-expression");
      failed = true;
      break;
    }
    if (replaced) gp_expr_refresh_typed_deep(repl); /* a replacement its maker typed */
    if (repl == e) {
      gp_release(repl); /* borrowed from the input from now on */
    } else {
      own[i] = 1;
    }
    res[i] = repl;
  }
  if (!failed && n) result = gp_retain(res[n - 1]);
  if (result && done) done(done_user, result, res); /* every entry still alive */
  for (size_t i = 0; i < n; i++)
    if (own[i]) gp_release(res[i]);
  gp_scratch_free(res);
  gp_scratch_free(own);
  return result;
}

GPExpr *gp_rewrite_indexed(const GPNodeIndex *ni, GPRewriteIdFn fn, void *user) {
  return rewrite_impl(ni, fn, user, NULL, NULL);
}

GPExpr *gp_rewrite_indexed_then(const GPNodeIndex *ni, GPRewriteIdFn fn, void *user, GPRewriteDoneFn done,
                                void *done_user) {
  return rewrite_impl(ni, fn, user, done, done_user);
}

typedef struct PlainRewrite {
  GPRewriteFn fn;
  void *user;
} PlainRewrite;

static GPExpr *plain_rewrite(void *user, int32_t id, GPExpr *orig, GPExpr *rebuilt, GPExpr *const *done) {
  GP_UNUSED(id);
  GP_UNUSED(done);
  PlainRewrite *pr = user;
  return pr->fn(pr->user, orig, rebuilt);
}

GPExpr *gp_rewrite(GPExpr *root, GPRewriteFn fn, void *user) {
  const GPNodeIndex *ni = gp_ni_acquire(root);
  if (!ni) return NULL;
  PlainRewrite pr = {fn, user};
  GPExpr *result = gp_rewrite_indexed(ni, fn ? plain_rewrite : NULL, &pr);
  gp_ni_release(ni);
  return result;
}
