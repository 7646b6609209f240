/*
 * dot.c -- Graphviz DOT of one function (`graphpass dot`, the report's graphs).
 *
 * One node index over the function (children before parents); each node's owner is the
 * innermost function expression it was reached from (assigned parents first, so a node is
 * drawn once, in the first scope that reaches it).  Nested functions become clusters labelled
 * by their kind (Primitive, Composite="...", Compiler="..."), and a call of one is a node of its
 * own in the caller with a dashed edge from the cluster's result.  No recursion: clusters are
 * written from the index order with an explicit open/close stack over owners.
 */
#include "views.h"

#include <string.h>

/* DOT string contents: quotes and backslashes escaped, newlines as \n (centered lines). */
static void put_esc(GPBuf *out, const char *s) {
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') gp_buf_putc(out, '\\');
    if (*s == '\n') {
      gp_buf_puts(out, "\\n");
      continue;
    }
    gp_buf_putc(out, *s);
  }
}

/* "(1, 64, 56, 56) float32" for a tensor type, TVM's spelling otherwise. */
static void put_type(GPBuf *b, const GPType *t) {
  if (!t) return;
  if (t->kind == GP_TYPE_TENSOR) {
    char dt[24];
    gp_buf_putc(b, '(');
    for (int32_t i = 0; i < t->n; i++) {
      if (t->tensor.shape[i] < 0)
        gp_buf_printf(b, "%s?", i ? ", " : "");
      else
        gp_buf_printf(b, "%s%lld", i ? ", " : "", (long long)t->tensor.shape[i]);
    }
    gp_buf_printf(b, ") %s", gp_dtype_str(t->tensor.dtype, dt));
    return;
  }
  gp_buf_puts(b, "");
  gp_type_print(b, t);
}

static const char *fn_kind(const GPFunctionExpr *f, GPBuf *b) {
  const GPAttrs *a = f->attrs;
  const GPAttrValue *v;
  if (a && (v = gp_attrs_get(a, "Composite")) && v->kind == GP_ATTR_STR) {
    gp_buf_printf(b, "Composite=%s", v->s);
  } else if (a && (v = gp_attrs_get(a, "Compiler")) && v->kind == GP_ATTR_STR) {
    gp_buf_printf(b, "Compiler=%s", v->s);
  } else if (a && (v = gp_attrs_get(a, "Primitive")) && v->i) {
    gp_buf_puts(b, "Primitive");
  } else {
    gp_buf_puts(b, "fn");
  }
  return b->data;
}

static void put_scalar(GPBuf *b, const GPTensor *t) {
  const DLTensor *dl = &t->dl;
  if (!dl->data) return;
  const uint8_t *p = (const uint8_t *)dl->data + dl->byte_offset;
  if (dl->dtype.code == kDLFloat && dl->dtype.bits == 32) {
    float v;
    memcpy(&v, p, 4);
    gp_buf_printf(b, " = %g", (double)v);
  } else if (dl->dtype.code == kDLFloat && dl->dtype.bits == 64) {
    double v;
    memcpy(&v, p, 8);
    gp_buf_printf(b, " = %g", v);
  } else if (dl->dtype.code == kDLInt && dl->dtype.bits == 64) {
    int64_t v;
    memcpy(&v, p, 8);
    gp_buf_printf(b, " = %lld", (long long)v);
  } else if (dl->dtype.code == kDLInt && dl->dtype.bits == 32) {
    int32_t v;
    memcpy(&v, p, 4);
    gp_buf_printf(b, " = %d", (int)v);
  }
}

int gp_dot_function(GPBuf *out, const GPFunctionExpr *fn, const char *graph_name) {
  GPNodeIndex ni;
  if (!fn) {
    gp_error_set(GP_ERR_VALUE, "dot: no function");
    return -1;
  }
  if (gp_ni_build(&ni, (GPExpr *)fn, 0) != 0) return -1;
  int32_t n = (int32_t)ni.n;
  int32_t *owner = gp_malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  for (int32_t i = 0; i < n; i++) owner[i] = -1;
  int32_t root = n - 1;
  owner[root] = -1; /* the function itself: the graph */
  /* parents first: the index is children-first, so walk it backwards */
  for (int32_t i = n - 1; i >= 0; i--) {
    GPExpr *e = ni.nodes[i];
    int32_t nk = ni.kid_off[i + 1] - ni.kid_off[i];
    int32_t scope = gp_kind(e) == GP_TI_FUNCTION_EXPR ? i : owner[i];
    for (int32_t j = 0; j < nk; j++) {
      int32_t k = gp_ni_kid(&ni, i, j);
      if (k != root && owner[k] == -1 && k != i) owner[k] = scope;
    }
  }
  /* owner[k] == root for nodes of the top function; nested functions own theirs */
  gp_buf_puts(out, "digraph \"");
  put_esc(out, graph_name ? graph_name : "main");
  gp_buf_puts(out, "\" {\n  compound=true;\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n"
                   "  edge [fontname=\"Helvetica\", fontsize=9];\n");
  /* clusters: each nested function's nodes are written inside its subgraph.  Nodes are grouped
   * by owner; clusters nest as their functions do (owner of the function node = parent). */
  int32_t *first = gp_malloc(sizeof(int32_t) * (size_t)(n ? n : 1)); /* per owner: head of its node list */
  int32_t *next = gp_malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  for (int32_t i = 0; i < n; i++) first[i] = -1;
  for (int32_t i = n - 1; i >= 0; i--) { /* lists in index order */
    if (i == root || owner[i] < 0) continue;
    next[i] = first[owner[i]];
    first[owner[i]] = i;
  }
  GPBuf lab = {0}, kb = {0};
  /* explicit stack of (function id, cursor) */
  int32_t *stk = gp_malloc(sizeof(int32_t) * 2 * (size_t)(n + 1));
  int32_t sp = 0;
  stk[sp++] = root;
  stk[sp++] = first[root];
  while (sp) {
    int32_t f = stk[sp - 2], cur = stk[sp - 1];
    if (cur < 0) {
      sp -= 2;
      if (f != root) gp_buf_puts(out, "  }\n");
      continue;
    }
    stk[sp - 1] = next[cur];
    GPExpr *e = ni.nodes[cur];
    int32_t kind = gp_kind(e);
    if (kind == GP_TI_OP) continue;
    if (kind == GP_TI_FUNCTION_EXPR) {
      kb.len = 0;
      if (kb.data) kb.data[0] = 0;
      gp_buf_printf(out, "  subgraph cluster_%d {\n    label=\"", (int)cur);
      put_esc(out, fn_kind(GP_AS(GPFunctionExpr, e), &kb));
      gp_buf_puts(out, "\";\n    style=rounded; color=\"#7a7a9a\"; fontname=\"Helvetica\"; fontsize=10;\n");
      stk[sp++] = cur;
      stk[sp++] = first[cur];
      continue;
    }
    if (kind == GP_TI_CONSTANT) continue; /* drawn once per use, beside its consumer */
    /* each constant input gets a node of its own: a constant shared by many consumers (after
     * EliminateCommonSubexpr) would otherwise pull long edges across the graph, which makes
     * Graphviz's layout take minutes */
    int32_t nk0 = ni.kid_off[cur + 1] - ni.kid_off[cur];
    for (int32_t j = 0; j < nk0; j++) {
      GPExpr *ke = ni.nodes[gp_ni_kid(&ni, cur, j)];
      if (gp_kind(ke) != GP_TI_CONSTANT) continue;
      const GPTensor *t = GP_AS(GPConstant, ke)->data;
      lab.len = 0;
      if (lab.data) lab.data[0] = 0;
      gp_buf_puts(&lab, "const ");
      put_type(&lab, gp_tensor_type(t));
      if (t->dl.ndim == 0)
        put_scalar(&lab, t);
      else
        gp_buf_printf(&lab, "\n%zu bytes%s", gp_tensor_nbytes(t), t->dl.data ? "" : " (no data)");
      gp_buf_printf(out, "%sc%d_%d [label=\"", f == root ? "  " : "    ", (int)cur, (int)j);
      put_esc(out, lab.data);
      gp_buf_puts(out, "\", shape=note, style=filled, fillcolor=\"#f4f4e8\"];\n");
    }
    lab.len = 0;
    if (lab.data) lab.data[0] = 0;
    const char *shape = "box", *style = "";
    switch (kind) {
    case GP_TI_CALL: {
      GPCall *c = GP_AS(GPCall, e);
      int32_t ok = gp_kind(c->op);
      if (ok == GP_TI_OP) {
        gp_buf_puts(&lab, GP_AS(GPOp, c->op)->name);
      } else if (ok == GP_TI_GLOBAL_VAR) {
        gp_buf_printf(&lab, "call @%s", GP_AS(GPGlobalVar, c->op)->name);
      } else if (ok == GP_TI_FUNCTION_EXPR) {
        kb.len = 0;
        if (kb.data) kb.data[0] = 0;
        gp_buf_printf(&lab, "call %s", fn_kind(GP_AS(GPFunctionExpr, c->op), &kb));
        style = ", style=filled, fillcolor=\"#e8e8f8\"";
      } else {
        gp_buf_puts(&lab, "call");
      }
      if (e->checked_type) gp_buf_putc(&lab, '\n');
      put_type(&lab, e->checked_type);
      break;
    }
    case GP_TI_VAR: {
      GPVar *v = GP_AS(GPVar, e);
      gp_buf_printf(&lab, "%%%s", v->name ? v->name : "");
      const GPType *t = v->type_annotation ? v->type_annotation : e->checked_type;
      if (t) gp_buf_putc(&lab, '\n');
      put_type(&lab, t);
      shape = "ellipse";
      break;
    }
    case GP_TI_GLOBAL_VAR: gp_buf_printf(&lab, "@%s", GP_AS(GPGlobalVar, e)->name); shape = "ellipse"; break;
    case GP_TI_TUPLE: gp_buf_puts(&lab, "tuple"); shape = "box"; style = ", style=rounded"; break;
    case GP_TI_TUPLE_GET_ITEM:
      gp_buf_printf(&lab, ".%d", (int)GP_AS(GPTupleGetItem, e)->index);
      if (e->checked_type) gp_buf_putc(&lab, '\n');
      put_type(&lab, e->checked_type);
      style = ", style=rounded";
      break;
    case GP_TI_LET: gp_buf_puts(&lab, "let"); shape = "box"; break;
    case GP_TI_IF: gp_buf_puts(&lab, "if"); shape = "diamond"; break;
    default: gp_buf_puts(&lab, gp_expr_kind_name(e)); break;
    }
    gp_buf_printf(out, "%sn%d [label=\"", f == root ? "  " : "    ", (int)cur);
    put_esc(out, lab.data ? lab.data : "");
    gp_buf_printf(out, "\", shape=%s%s];\n", shape, style);
  }
  /* edges, producers to consumers; a function's result feeds its call (dashed, from the cluster) */
  for (int32_t i = 0; i < n; i++) {
    GPExpr *e = ni.nodes[i];
    int32_t kind = gp_kind(e);
    if (kind == GP_TI_FUNCTION_EXPR || kind == GP_TI_OP) continue;
    int32_t nk = ni.kid_off[i + 1] - ni.kid_off[i];
    for (int32_t j = 0; j < nk; j++) {
      int32_t k = gp_ni_kid(&ni, i, j);
      GPExpr *ke = ni.nodes[k];
      if (gp_kind(ke) == GP_TI_OP) continue;
      if (kind == GP_TI_LET && j == 0) continue; /* the let's var: drawn where used */
      if (gp_kind(ke) == GP_TI_CONSTANT) {
        gp_buf_printf(out, "  c%d_%d -> n%d;\n", (int)i, (int)j, (int)i);
        continue;
      }
      if (gp_kind(ke) == GP_TI_FUNCTION_EXPR) {
        /* the function's body result stands for it */
        int32_t body = gp_ni_kid(&ni, k, ni.kid_off[k + 1] - ni.kid_off[k] - 1);
        while (body >= 0 && gp_kind(ni.nodes[body]) == GP_TI_FUNCTION_EXPR)
          body = gp_ni_kid(&ni, body, ni.kid_off[body + 1] - ni.kid_off[body] - 1);
        gp_buf_printf(out, "  n%d -> n%d [style=dashed, ltail=cluster_%d];\n", (int)body, (int)i, (int)k);
        continue;
      }
      gp_buf_printf(out, "  n%d -> n%d;\n", (int)k, (int)i);
    }
  }
  gp_buf_puts(out, "}\n");
  gp_buf_free(&lab);
  gp_buf_free(&kb);
  gp_free(stk);
  gp_free(first);
  gp_free(next);
  gp_free(owner);
  gp_ni_free(&ni);
  return 0;
}
