/*
 * node_index.h -- a dense numbering of the nodes reachable from a root (children before parents,
 * root last) with the children of every node as ids (CSR, gp_expr_children order), and a fast
 * pointer -> id table.  Used by print.c and equal.c, whose walks over million-node graphs would
 * otherwise be dominated by pointer-map look-ups.  Iterative; header-only (static functions).
 */
#ifndef GP_NODE_INDEX_H
#define GP_NODE_INDEX_H

#include "ir/ir.h"

#include <string.h>

typedef struct GPNiEnt {
  const void *key;
  int64_t val; /* id, or -1 while the node is on the DFS path */
} GPNiEnt;

typedef struct GPNodeIndex {
  GPExpr **nodes; /* post order, root last */
  size_t n;
  int32_t *kid_off; /* kids of node i: kids[kid_off[i] .. kid_off[i + 1]) */
  int32_t *kids;
  GPNiEnt *tab;
  size_t cap;
  int shift;
} GPNodeIndex;

static inline size_t gp_ni_slot(const GPNodeIndex *ni, const void *key) {
  size_t i = (size_t)(((uint64_t)(uintptr_t)key * 0x9e3779b97f4a7c15ull) >> ni->shift);
  size_t mask = ni->cap - 1;
  while (ni->tab[i].key && ni->tab[i].key != key) i = (i + 1) & mask;
  return i;
}

static inline void gp_ni_grow(GPNodeIndex *ni) {
  size_t ocap = ni->cap;
  GPNiEnt *old = ni->tab;
  ni->cap = ocap ? ocap * 2 : 1024;
  ni->shift = 64;
  for (size_t c = ni->cap; c > 1; c >>= 1) ni->shift--;
  ni->tab = gp_calloc(ni->cap, sizeof(GPNiEnt));
  for (size_t i = 0; i < ocap; i++)
    if (old[i].key) ni->tab[gp_ni_slot(ni, old[i].key)] = old[i];
  gp_free(old);
}

/* id of a node in the index, or -1. */
static inline int32_t gp_ni_find(const GPNodeIndex *ni, const void *key) {
  if (!ni->cap) return -1;
  size_t i = gp_ni_slot(ni, key);
  return ni->tab[i].key ? (int32_t)ni->tab[i].val : -1;
}

static inline void gp_ni_free(GPNodeIndex *ni) {
  gp_free(ni->nodes);
  gp_free(ni->kid_off);
  gp_free(ni->kids);
  gp_free(ni->tab);
  memset(ni, 0, sizeof *ni);
}

typedef struct GPNiFrame {
  GPExpr *e;
  size_t kbase;
  int32_t nk, next;
} GPNiFrame;

static inline void gp_ni_build(GPNodeIndex *ni, GPExpr *root) {
  memset(ni, 0, sizeof *ni);
  gp_ni_grow(ni);
  size_t ncap = 1024, fcap = 256, kcap = 1024, nf = 0, nk = 0, used = 0;
  ni->nodes = gp_malloc(ncap * sizeof(GPExpr *));
  GPNiFrame *fr = gp_malloc(fcap * sizeof(GPNiFrame));
  GPExpr **ks = gp_malloc(kcap * sizeof(GPExpr *));
  size_t nedges = 0;
#define GP_NI_ENTER(x)                                                                           \
  do {                                                                                           \
    GPExpr *x_ = (x);                                                                            \
    if ((used + 1) * 2 > ni->cap) gp_ni_grow(ni);                                                \
    size_t s_ = gp_ni_slot(ni, x_);                                                              \
    ni->tab[s_].key = x_;                                                                        \
    ni->tab[s_].val = -1;                                                                        \
    used++;                                                                                      \
    int32_t c_ = gp_expr_num_children(x_);                                                       \
    if (c_ < 0) c_ = 0;                                                                          \
    while (nk + (size_t)c_ > kcap) kcap *= 2, ks = gp_realloc(ks, kcap * sizeof(GPExpr *));      \
    gp_expr_children(x_, ks + nk, c_);                                                           \
    if (nf == fcap) fcap *= 2, fr = gp_realloc(fr, fcap * sizeof(GPNiFrame));                    \
    fr[nf++] = (GPNiFrame){x_, nk, c_, 0};                                                       \
    nk += (size_t)c_;                                                                            \
    nedges += (size_t)c_;                                                                        \
  } while (0)
  GP_NI_ENTER(root);
  while (nf) {
    GPNiFrame *f = &fr[nf - 1];
    if (f->next < f->nk) {
      GPExpr *c = ks[f->kbase + (size_t)f->next++];
      if (!ni->tab[gp_ni_slot(ni, c)].key) GP_NI_ENTER(c);
      continue;
    }
    if (ni->n == ncap) ncap *= 2, ni->nodes = gp_realloc(ni->nodes, ncap * sizeof(GPExpr *));
    ni->tab[gp_ni_slot(ni, f->e)].val = (int64_t)ni->n;
    ni->nodes[ni->n++] = f->e;
    nk = f->kbase;
    nf--;
  }
#undef GP_NI_ENTER
  gp_free(fr);
  ni->kid_off = gp_malloc((ni->n + 1) * sizeof(int32_t));
  ni->kids = gp_malloc((nedges ? nedges : 1) * sizeof(int32_t));
  size_t m = 0;
  for (size_t i = 0; i < ni->n; i++) {
    ni->kid_off[i] = (int32_t)m;
    int32_t c = gp_expr_num_children(ni->nodes[i]);
    if (c <= 0) continue;
    if ((size_t)c > kcap) kcap = (size_t)c, ks = gp_realloc(ks, kcap * sizeof(GPExpr *));
    gp_expr_children(ni->nodes[i], ks, c);
    for (int32_t j = 0; j < c; j++) ni->kids[m++] = gp_ni_find(ni, ks[j]);
  }
  ni->kid_off[ni->n] = (int32_t)m;
  gp_free(ks);
}

/* j-th child id of node i. */
static inline int32_t gp_ni_kid(const GPNodeIndex *ni, int32_t i, int32_t j) {
  return ni->kids[ni->kid_off[i] + j];
}

#endif /* GP_NODE_INDEX_H */
