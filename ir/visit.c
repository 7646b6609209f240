/* visit.c -- iterative post-order and the memoizing rewriter. */
#include "ir.h"

/* Visiting order: children order, except that a let's value is visited before its var, so a
 * rewrite sees the bound value before any use of the name. */
static inline GPExpr *visit_at(const GPExpr *e, int32_t i) {
  if (gp_kind(e) == GP_TI_LET && i < 2) return gp_expr_child_at(e, 1 - i);
  return gp_expr_child_at(e, i);
}

typedef struct {
  GPExpr *e;
  int32_t next, count;
} Frame;

int gp_post_order(GPExpr *root, GPExpr ***out, size_t *count) {
  *out = NULL;
  *count = 0;
  if (!root || !gp_is_expr(root)) {
    gp_error_set(GP_ERR_VALUE, "post_order: root is not an expression");
    return -1;
  }
  GPPtrMap seen = {0};
  size_t cap = 64, sp = 0, olen = 0, ocap = 256;
  Frame *st = gp_malloc(cap * sizeof(Frame));
  GPExpr **order = gp_malloc(ocap * sizeof(GPExpr *));
  gp_map_put(&seen, root, root);
  st[sp++] = (Frame){root, 0, gp_expr_num_children(root)};
  while (sp) {
    Frame *f = &st[sp - 1];
    if (f->next < f->count) {
      GPExpr *c = visit_at(f->e, f->next++);
      if (gp_map_has(&seen, c)) continue;
      gp_map_put(&seen, c, c);
      if (sp == cap) {
        cap *= 2;
        st = gp_realloc(st, cap * sizeof(Frame));
      }
      st[sp++] = (Frame){c, 0, gp_expr_num_children(c)};
      continue;
    }
    if (olen == ocap) {
      ocap *= 2;
      order = gp_realloc(order, ocap * sizeof(GPExpr *));
    }
    order[olen++] = f->e;
    sp--;
  }
  gp_free(st);
  gp_map_free(&seen);
  *out = order;
  *count = olen;
  return 0;
}

GPExpr *gp_rewrite(GPExpr *root, GPRewriteFn fn, void *user) {
  GPExpr **order;
  size_t n;
  if (gp_post_order(root, &order, &n) != 0) return NULL;
  GPPtrMap memo = {0};
  GPExpr *kids_small[16];
  GPExpr *result = NULL;
  bool failed = false;
  for (size_t i = 0; i < n && !failed; i++) {
    GPExpr *e = order[i];
    int32_t nk = gp_expr_num_children(e);
    GPExpr **kids = nk > 16 ? gp_malloc((size_t)nk * sizeof(GPExpr *)) : kids_small;
    for (int32_t k = 0; k < nk; k++) {
      GPExpr *orig_kid = gp_expr_child_at(e, k);
      kids[k] = gp_map_get(&memo, orig_kid);
      /* A binding name replaced by a non-var (e.g. inlined) keeps its binding occurrence. */
      if (gp_expr_is_binding(e, k) && gp_kind(kids[k]) != GP_TI_VAR) kids[k] = orig_kid;
    }
    GPExpr *rebuilt = nk ? gp_expr_with_children(e, kids, false) : gp_retain(e);
    if (kids != kids_small) gp_free(kids);
    if (!rebuilt) {
      failed = true;
      break;
    }
    GPExpr *repl = fn ? fn(user, e, rebuilt) : gp_retain(rebuilt);
    gp_release(rebuilt);
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
    gp_map_put(&memo, e, repl);
  }
  if (!failed) result = gp_retain(gp_map_get(&memo, root));
  for (size_t i = 0; i < memo.cap; i++)
    if (memo.slots[i].key) gp_release(memo.slots[i].val);
  gp_map_free(&memo);
  gp_free(order);
  return result;
}
