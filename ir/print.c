/*
 * print.c -- the Relay text printer (TVM v0.12 `astext` layout, version 0.0.5).
 *
 * Layout rules (those of TVM's RelayTextPrinter):
 *  - Vars, constants, ops and global vars are always printed inline.  Every other node is bound
 *    to a temporary `%N = ...;` the first time it is printed, except the last expression of a
 *    scope (function body, if branch, let body) and a let's value, which are inlined when they
 *    have at most one use.  Temporaries are numbered in binding order across the whole module.
 *  - Dataflow nodes (call, tuple, get-item) are visited in post order with arguments left to
 *    right; a node is bound when its first user is visited (TVM's ExpandDataflow + memo).
 *  - A closure body, an if branch and a function body are scopes of their own ({ ... }); a node
 *    first reached inside a scope is bound there.  A node used both inside a nested scope and in
 *    an enclosing one is bound in the innermost scope enclosing all its uses, before the nested
 *    scope is printed (TVM would bind it at the first use and reference it out of scope).
 *  - `/ * ty=... * /` comments (GP_PRINT_TYPES) follow calls, tuples, get-items, functions and
 *    constants once (constants every time) and follow var declarations.
 *  - Var names are made unique per module (%x, %x1, ...), names not starting with a letter get a
 *    `v` prefix.
 *  - Non-scalar constants print as meta[relay.Constant][i], i in order of first visit.
 *
 * Text is built in relative-indentation pieces: a scope's lines are indented when the scope is
 * placed inside its `{ }` (every '\n' of the placed text gains two spaces).  Nothing recurses:
 * the printer is a machine over an explicit frame stack.
 *
 * Printing is linear in the size of its output: a piece is never copied into the piece that
 * contains it when it is large, and indentation is not materialized until the end.  A piece is
 * a GPBuf whose bytes are text except for three escapes: TX_REF and a 4-byte chunk index (the
 * chunk, a piece moved out whole, goes here; each chunk is placed once), TX_IN and TX_OUT
 * (every newline between them gains two spaces).  emit() expands a def's text into the output
 * with an explicit stack.  Names and attribute keys never put these bytes (put_name).
 */
#include "ir/ir.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* State                                                                                       */

typedef struct NodeSt {
  char *raw;       /* memo text (a piece): the visit result until the node is bound or inlined */
  size_t raw_len;
  int64_t bound;   /* temporary number, -1 when not bound */
  int32_t nparents;
  int32_t home;    /* block (scope) the node belongs to, -1 for always-inline nodes */
  int32_t hoist_begin, hoist_end; /* nodes to bind before this fn/if's scopes */
  uint8_t visited, opt_done;
} NodeSt;

typedef struct VarInfo {
  char *name;  /* "%x" */
  char *decl;  /* free var declaration waiting for its first use, or NULL */
  bool used;   /* TVM's var_memo_ */
} VarInfo;

typedef struct Block {
  int32_t parent, depth;
  int32_t owner; /* fn / if node id owning the block, -1 for the root */
} Block;

enum { FR_PRINT, FR_EXPAND, FR_LEAF, FR_BODY };

typedef struct Frame {
  uint8_t kind, try_inline, top, pushed_doc;
  int32_t pc;
  int32_t id;
  int32_t i;
  size_t base;
  GPExpr *cur;
  GPBuf *dst;        /* where the result goes (may be NULL) */
  GPBuf *buf, *buf2; /* owned work buffers */
  const char *prefix;
} Frame;

typedef struct ExpandEnt {
  int32_t id;
  int32_t expanded;
} ExpandEnt;

typedef struct Printer {
  int32_t flags;
  /* module-wide */
  int64_t temp_counter;
  GPStrMap names;   /* name -> counter */
  GPPtrMap vars;    /* GPVar* -> VarInfo* */
  GPPtrMap consts;  /* GPConstant* -> (meta index + 1) */
  GPVec meta;       /* constants in meta index order */
  /* per function */
  GPNodeIndex ni;
  NodeSt *st;
  Block *blocks;
  size_t nblocks, cap_blocks;
  int32_t *hoist;   /* node ids grouped by owner */
  GPVec docs;       /* GPBuf* stack of binding targets */
  Frame *frames;
  size_t nframes, cap_frames;
  ExpandEnt *est;
  size_t nest, cap_est;
  /* pieces moved out whole (see the file comment), freed when the def is emitted */
  char **chunk;
  size_t *chunk_len;
  size_t nchunks, cap_chunks;
} Printer;

enum { TX_REF = 1, TX_IN = 2, TX_OUT = 3 };
#define TX_INLINE_MAX 64 /* smaller pieces are copied */

static GPBuf *buf_new(void) { return gp_calloc(1, sizeof(GPBuf)); }
static void buf_del(GPBuf *b) {
  if (!b) return;
  gp_buf_free(b);
  gp_free(b);
}

#define NODES(p) ((p)->ni.nodes)
#define KID(p, i, j) gp_ni_kid(&(p)->ni, (i), (j))

/* Append the piece data[0..len) (taken: the caller drops it) to dst: copied when small, else
 * kept as a chunk and referenced. */
static void put_move(Printer *p, GPBuf *dst, char *data, size_t len) {
  if (len < TX_INLINE_MAX) {
    if (len) gp_buf_put(dst, data, len);
    gp_free(data);
    return;
  }
  if (p->nchunks == p->cap_chunks) {
    p->cap_chunks = p->cap_chunks ? p->cap_chunks * 2 : 64;
    p->chunk = gp_realloc(p->chunk, p->cap_chunks * sizeof *p->chunk);
    p->chunk_len = gp_realloc(p->chunk_len, p->cap_chunks * sizeof *p->chunk_len);
  }
  uint32_t idx = (uint32_t)p->nchunks++;
  p->chunk[idx] = data;
  p->chunk_len[idx] = len;
  char esc[5] = {TX_REF};
  memcpy(esc + 1, &idx, 4);
  gp_buf_put(dst, esc, 5);
}

/* Move the contents of buffer b (left empty) to dst. */
static void put_buf(Printer *p, GPBuf *dst, GPBuf *b) {
  size_t n = b->len;
  put_move(p, dst, gp_buf_take(b), n);
}

/* A piece placed one indentation step deeper. */
static void put_indented(Printer *p, GPBuf *dst, GPBuf *b) {
  gp_buf_putc(dst, TX_IN);
  put_buf(p, dst, b);
  gp_buf_putc(dst, TX_OUT);
}

/* A name or key from the module: bytes that are escapes here print as '?'. */
static void put_name(GPBuf *b, const char *s) {
  size_t st = 0, i = 0;
  for (; s[i]; i++)
    if ((unsigned char)s[i] <= TX_OUT) {
      gp_buf_put(b, s + st, i - st);
      gp_buf_putc(b, '?');
      st = i + 1;
    }
  gp_buf_put(b, s + st, i - st);
}

/* Expand piece s[0..n) into out: chunks in place, indentation applied.  Frees the chunks. */
static void emit(Printer *p, GPBuf *out, const char *s, size_t n) {
  static const char sp[] = "                                ";
  typedef struct {
    const char *s;
    size_t n, i;
  } Ent;
  size_t cap = 16, sp_n = 0;
  Ent *st = gp_malloc(cap * sizeof *st);
  st[sp_n++] = (Ent){s, n, 0};
  size_t ind = 0;
  while (sp_n) {
    Ent *e = &st[sp_n - 1];
    size_t j = e->i;
    while (j < e->n && e->s[j] != '\n' && (unsigned char)e->s[j] > TX_OUT) j++;
    gp_buf_put(out, e->s + e->i, j - e->i);
    if (j == e->n) {
      sp_n--;
      continue;
    }
    char c = e->s[j];
    e->i = j + 1;
    if (c == '\n') {
      gp_buf_putc(out, '\n');
      for (size_t k = ind; k; k -= k < sizeof sp - 1 ? k : sizeof sp - 1)
        gp_buf_put(out, sp, k < sizeof sp - 1 ? k : sizeof sp - 1);
    } else if (c == TX_IN) {
      ind += 2;
    } else if (c == TX_OUT) {
      ind -= 2;
    } else if (c == TX_REF && j + 5 <= e->n) {
      uint32_t idx;
      memcpy(&idx, e->s + j + 1, 4);
      e->i = j + 5;
      if (sp_n == cap) {
        cap *= 2;
        st = gp_realloc(st, cap * sizeof *st);
      }
      st[sp_n++] = (Ent){p->chunk[idx], p->chunk_len[idx], 0};
    } else {
      gp_buf_putc(out, c);
    }
  }
  gp_free(st);
  for (size_t i = 0; i < p->nchunks; i++) gp_free(p->chunk[i]);
  p->nchunks = 0;
}

static GPBuf *top_doc(Printer *p) { return p->docs.items[p->docs.len - 1]; }

/* ------------------------------------------------------------------------------------------ */
/* Leaves: names, scalars, constants                                                          */

static bool always_inline(const GPExpr *e) {
  int32_t k = gp_kind(e);
  return k == GP_TI_VAR || k == GP_TI_CONSTANT || k == GP_TI_OP || k == GP_TI_GLOBAL_VAR;
}

static void put_opt(Printer *p, GPBuf *b, const GPExpr *e) {
  if ((p->flags & GP_PRINT_TYPES) && e->checked_type) {
    gp_buf_puts(b, " /* ty=");
    gp_type_print(b, e->checked_type);
    gp_buf_puts(b, " */");
  }
}

/* Shortest %g form (at least 6 digits, as TVM prints) that reads back to the same value. */
static void put_float(GPBuf *b, double v, int bits) {
  char tmp[40];
  for (int prec = 6; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, v);
    double r = strtod(tmp, NULL);
    if (bits == 64 ? r == v : (float)r == (float)v) break;
  }
  gp_buf_puts(b, tmp);
}

static bool dt_is(DLDataType t, int code, int bits) {
  return t.code == code && t.bits == bits && t.lanes == 1;
}

/* Inline scalar literal suffix, or NULL when the constant prints as meta. */
static bool scalar_inline(const GPConstant *c) {
  const GPTensor *t = c->data;
  if (!t || !t->dl.data || t->dl.ndim != 0) return false;
  DLDataType d = t->dl.dtype;
  if (dt_is(d, kDLFloat, 16) || dt_is(d, kDLFloat, 32) || dt_is(d, kDLFloat, 64)) {
    double v = gp_tensor_get_f64(t, 0);
    return isfinite(v);
  }
  return dt_is(d, kDLInt, 8) || dt_is(d, kDLInt, 16) || dt_is(d, kDLInt, 32) ||
         dt_is(d, kDLInt, 64) || dt_is(d, kDLUInt, 8) || dt_is(d, kDLUInt, 1);
}

static void put_scalar(GPBuf *b, const GPConstant *c) {
  const GPTensor *t = c->data;
  DLDataType d = t->dl.dtype;
  if (d.code == kDLFloat) {
    put_float(b, gp_tensor_get_f64(t, 0), d.bits);
    gp_buf_puts(b, d.bits == 32 ? "f" : d.bits == 64 ? "f64" : "f16");
    return;
  }
  if (dt_is(d, kDLUInt, 1)) {
    gp_buf_puts(b, gp_tensor_get_i64(t, 0) ? "True" : "False");
    return;
  }
  gp_buf_printf(b, "%lld", (long long)gp_tensor_get_i64(t, 0));
  if (d.code == kDLUInt) gp_buf_puts(b, "u8");
  else if (d.bits != 32) gp_buf_printf(b, "i%d", (int)d.bits);
}

static void put_const(Printer *p, GPBuf *b, const GPConstant *c) {
  if (scalar_inline(c)) {
    put_scalar(b, c);
  } else {
    intptr_t idx = (intptr_t)gp_map_get(&p->consts, c);
    gp_buf_printf(b, "meta[relay.Constant][%lld]", (long long)(idx - 1));
  }
  put_opt(p, b, &c->base);
}

static char *unique_name(Printer *p, const char *hint) {
  GPBuf nb = {0};
  gp_buf_putc(&nb, '%');
  if (!hint || !isalpha((unsigned char)hint[0])) gp_buf_putc(&nb, 'v');
  if (hint) put_name(&nb, hint);
  char *prefix = gp_buf_take(&nb);
  if (!gp_strmap_has(&p->names, prefix)) {
    gp_strmap_put(&p->names, prefix, (void *)(intptr_t)0);
    return prefix;
  }
  intptr_t c = (intptr_t)gp_strmap_get(&p->names, prefix);
  char *name = NULL;
  for (;;) {
    GPBuf cb = {0};
    gp_buf_printf(&cb, "%s%lld", prefix, (long long)++c);
    name = gp_buf_take(&cb);
    if (!gp_strmap_has(&p->names, name)) break;
    gp_free(name);
  }
  gp_strmap_put(&p->names, prefix, (void *)c);
  gp_strmap_put(&p->names, name, (void *)(intptr_t)0);
  gp_free(prefix);
  return name;
}

/* TVM's AllocVar: a fresh unique name; appends the declaration (name: type /ty/) to decl. */
static VarInfo *alloc_var(Printer *p, const GPVar *v, GPBuf *decl) {
  VarInfo *vi = gp_map_get(&p->vars, v);
  if (!vi) {
    vi = gp_calloc(1, sizeof *vi);
    gp_map_put(&p->vars, v, vi);
  } else {
    gp_free(vi->name);
    gp_free(vi->decl);
    vi->decl = NULL;
  }
  vi->name = unique_name(p, v->name);
  gp_buf_puts(decl, vi->name);
  if (v->type_annotation) {
    gp_buf_puts(decl, ": ");
    gp_type_print(decl, v->type_annotation);
  }
  put_opt(p, decl, &v->base);
  return vi;
}

static bool visited(Printer *p, int32_t id) {
  const GPExpr *e = NODES(p)[id];
  switch (gp_kind(e)) {
  case GP_TI_OP:
  case GP_TI_GLOBAL_VAR: return true;
  case GP_TI_VAR: return gp_map_has(&p->vars, e);
  case GP_TI_CONSTANT: return scalar_inline((const GPConstant *)e) || gp_map_has(&p->consts, e);
  default: return p->st[id].visited;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Frames                                                                                      */

static Frame *push_frame(Printer *p, int kind, int32_t id, GPBuf *dst) {
  if (p->nframes == p->cap_frames) {
    p->cap_frames = p->cap_frames ? p->cap_frames * 2 : 64;
    p->frames = gp_realloc(p->frames, p->cap_frames * sizeof(Frame));
  }
  Frame *f = &p->frames[p->nframes++];
  memset(f, 0, sizeof *f);
  f->kind = (uint8_t)kind;
  f->id = id;
  f->dst = dst;
  return f;
}

static void pop_frame(Printer *p) {
  Frame *f = &p->frames[--p->nframes];
  buf_del(f->buf);
  buf_del(f->buf2);
}

static void set_raw(Printer *p, int32_t id, GPBuf *b) {
  NodeSt *s = &p->st[id];
  gp_free(s->raw);
  s->raw_len = b->len;
  s->raw = gp_buf_take(b);
  s->visited = 1;
}

/* TVM's PrintExpr after the node has been visited. */
static void print_finish(Printer *p, int32_t id, bool try_inline, GPBuf *dst) {
  GPExpr *e = NODES(p)[id];
  switch (gp_kind(e)) {
  case GP_TI_VAR: {
    VarInfo *vi = gp_map_get(&p->vars, e);
    if (!vi) { /* cannot happen: visiting allocates */
      GPBuf d = {0};
      vi = alloc_var(p, (GPVar *)e, &d);
      gp_buf_free(&d);
    }
    if (!vi->used) {
      vi->used = true;
      if (vi->decl) {
        GPBuf *doc = top_doc(p);
        gp_buf_puts(doc, "free_var ");
        gp_buf_puts(doc, vi->decl);
        gp_buf_puts(doc, ";\n");
        gp_free(vi->decl);
        vi->decl = NULL;
      }
    }
    if (dst) gp_buf_puts(dst, vi->name);
    return;
  }
  case GP_TI_OP:
    if (dst) put_name(dst, ((GPOp *)e)->name);
    return;
  case GP_TI_GLOBAL_VAR:
    if (dst) {
      gp_buf_putc(dst, '@');
      put_name(dst, ((GPGlobalVar *)e)->name);
    }
    return;
  case GP_TI_CONSTANT:
    if (dst) put_const(p, dst, (GPConstant *)e);
    return;
  default: break;
  }
  NodeSt *s = &p->st[id];
  if (s->bound >= 0) {
    if (dst) gp_buf_printf(dst, "%%%lld", (long long)s->bound);
    return;
  }
  /* A node is inlined (used once: its one use) or bound, so its text moves out here. */
  bool inl = try_inline && s->nparents <= 1;
  GPBuf text = {0}, raw = {0};
  raw.data = s->raw;
  raw.len = s->raw_len;
  raw.cap = s->raw_len;
  s->raw = NULL;
  s->raw_len = 0;
  if (!inl && gp_kind(e) == GP_TI_LET) {
    gp_buf_puts(&text, "(\n  ");
    put_indented(p, &text, &raw);
    gp_buf_puts(&text, "\n)");
  } else {
    put_buf(p, &text, &raw);
  }
  gp_buf_free(&raw);
  if (!s->opt_done) {
    s->opt_done = 1;
    int32_t k = gp_kind(e);
    if (k != GP_TI_IF && k != GP_TI_LET) put_opt(p, &text, e);
  }
  if (inl) {
    if (dst) put_buf(p, dst, &text);
    gp_buf_free(&text);
    return;
  }
  int64_t n = p->temp_counter++;
  GPBuf *doc = top_doc(p);
  gp_buf_printf(doc, "%%%lld = ", (long long)n);
  put_buf(p, doc, &text);
  gp_buf_puts(doc, ";\n");
  gp_buf_free(&text);
  s->bound = n;
  if (dst) gp_buf_printf(dst, "%%%lld", (long long)n);
}

/* Print node id into dst.  Returns true when frames were pushed (the caller must yield). */
static bool print_begin(Printer *p, int32_t id, bool try_inline, GPBuf *dst) {
  if (visited(p, id)) {
    print_finish(p, id, try_inline, dst);
    return false;
  }
  Frame *f = push_frame(p, FR_PRINT, id, dst);
  f->try_inline = try_inline;
  return true;
}

static void put_attrs_list(GPBuf *b, const GPAttrs *a, bool *first) {
  for (int32_t i = 0; a && i < a->n; i++) {
    if (!*first) gp_buf_puts(b, ", ");
    *first = false;
    put_name(b, a->keys[i]);
    gp_buf_putc(b, '=');
    gp_attr_value_print(b, &a->values[i]);
  }
}

/* TVM's nested (before, after) pairs (gp_attr_in_pairs). */
static bool printed_in_pairs(const GPOp *op, const char *key, const GPAttrValue *v) {
  return v->kind == GP_ATTR_INTS && v->n % 2 == 0 && gp_attr_in_pairs(op->name, key);
}

static void put_pairs(GPBuf *b, const GPAttrValue *v) {
  gp_buf_putc(b, '[');
  for (int32_t i = 0; i < v->n; i += 2)
    gp_buf_printf(b, "%s[%lld, %lld]", i ? ", " : "", (long long)v->ints[i], (long long)v->ints[i + 1]);
  gp_buf_putc(b, ']');
}

/* Call attributes: fields that differ from the op's defaults, in schema order. */
static void put_call_attrs(GPBuf *b, const GPCall *c, bool first) {
  const GPAttrs *a = c->attrs;
  if (!a) return;
  if (gp_kind(c->op) != GP_TI_OP) {
    put_attrs_list(b, a, &first);
    return;
  }
  const GPOp *op = (const GPOp *)c->op;
  for (int32_t j = 0; j < op->num_attrs; j++) {
    const GPAttrField *fld = &op->attrs[j];
    const GPAttrValue *v = gp_attrs_get(a, fld->name);
    if (!v) continue;
    if (!fld->required && gp_attr_value_eq(v, &fld->default_value)) continue;
    if (!first) gp_buf_puts(b, ", ");
    first = false;
    put_name(b, fld->name);
    gp_buf_putc(b, '=');
    if (printed_in_pairs(op, fld->name, v)) put_pairs(b, v);
    else gp_attr_value_print(b, v);
  }
  for (int32_t i = 0; i < a->n; i++) { /* keys outside the schema (should not happen) */
    bool known = false;
    for (int32_t j = 0; j < op->num_attrs && !known; j++)
      known = strcmp(op->attrs[j].name, a->keys[i]) == 0;
    if (known) continue;
    if (!first) gp_buf_puts(b, ", ");
    first = false;
    put_name(b, a->keys[i]);
    gp_buf_putc(b, '=');
    gp_attr_value_print(b, &a->values[i]);
  }
}

static const GPType *fn_ret_type(const GPFunctionExpr *fn) {
  if (fn->ret_type) return fn->ret_type;
  const GPType *t = fn->base.checked_type;
  if (t && t->kind == GP_TYPE_FUNC) return t->func.ret;
  return NULL;
}

/* Steps -------------------------------------------------------------------------------------- */

static void step_expand(Printer *p, size_t fi) {
  Frame *f = &p->frames[fi];
  if (f->pc == 0) {
    f->pc = 1;
    if (p->nest == p->cap_est) {
      p->cap_est = p->cap_est ? p->cap_est * 2 : 256;
      p->est = gp_realloc(p->est, p->cap_est * sizeof(ExpandEnt));
    }
    f->base = p->nest;
    p->est[p->nest++] = (ExpandEnt){f->id, 0};
  }
  while (p->nest > f->base) {
    ExpandEnt *ent = &p->est[p->nest - 1];
    int32_t id = ent->id;
    if (visited(p, id)) {
      p->nest--;
      continue;
    }
    if (ent->expanded) {
      push_frame(p, FR_LEAF, id, NULL);
      return;
    }
    ent->expanded = 1;
    GPExpr *e = NODES(p)[id];
    int32_t n = 0, off = 0;
    if (gp_kind(e) == GP_TI_CALL) {
      n = ((GPCall *)e)->nargs;
      off = 1;
    } else if (gp_kind(e) == GP_TI_TUPLE) {
      n = ((GPTuple *)e)->n;
    } else if (gp_kind(e) == GP_TI_TUPLE_GET_ITEM) {
      n = 1;
    }
    for (int32_t i = n - 1; i >= 0; i--) {
      int32_t cid = KID(p, id, off + i);
      if (visited(p, cid)) continue;
      if (p->nest == p->cap_est) {
        p->cap_est = p->cap_est * 2;
        p->est = gp_realloc(p->est, p->cap_est * sizeof(ExpandEnt));
      }
      p->est[p->nest++] = (ExpandEnt){cid, 0};
    }
  }
  pop_frame(p);
}

/* Bind the nodes that must be bound before a nested scope of node f->id is entered.  Returns
 * true when it yielded. */
static bool run_hoist(Printer *p, size_t fi) {
  Frame *f = &p->frames[fi];
  NodeSt *s = &p->st[f->id];
  while (f->i < s->hoist_end) {
    int32_t nid = p->hoist[f->i++];
    if (print_begin(p, nid, false, NULL)) return true;
    f = &p->frames[fi];
  }
  return false;
}

static void push_body(Printer *p, int32_t id, GPBuf *dst) { push_frame(p, FR_BODY, id, dst); }

static void step_leaf(Printer *p, size_t fi) {
  Frame *f = &p->frames[fi];
  GPExpr *e = NODES(p)[f->id];
  switch (gp_kind(e)) {
  case GP_TI_VAR: {
    GPBuf d = {0};
    VarInfo *vi = alloc_var(p, (GPVar *)e, &d);
    vi->decl = gp_buf_take(&d);
    pop_frame(p);
    return;
  }
  case GP_TI_CONSTANT:
    if (!scalar_inline((GPConstant *)e) && !gp_map_has(&p->consts, e)) {
      gp_vec_push(&p->meta, e);
      gp_map_put(&p->consts, e, (void *)(intptr_t)p->meta.len);
    }
    pop_frame(p);
    return;
  case GP_TI_OP:
  case GP_TI_GLOBAL_VAR: pop_frame(p); return;
  case GP_TI_CALL: {
    GPCall *c = (GPCall *)e;
    switch (f->pc) {
    case 0:
      f->buf = buf_new();
      f->pc = 1;
      /* fallthrough */
    case 1:
      while (f->i < c->nargs) {
        if (f->i) gp_buf_puts(f->buf, ", ");
        int32_t aid = KID(p, f->id, 1 + f->i++);
        if (print_begin(p, aid, false, f->buf)) return;
        f = &p->frames[fi];
      }
      put_call_attrs(f->buf, c, c->nargs == 0);
      f->buf2 = buf_new();
      f->pc = 2;
      if (print_begin(p, KID(p, f->id, 0), false, f->buf2)) return;
      f = &p->frames[fi];
      /* fallthrough */
    case 2: {
      GPBuf t = {0};
      put_buf(p, &t, f->buf2);
      gp_buf_putc(&t, '(');
      put_buf(p, &t, f->buf);
      gp_buf_putc(&t, ')');
      set_raw(p, f->id, &t);
      pop_frame(p);
      return;
    }
    }
    return;
  }
  case GP_TI_TUPLE: {
    GPTuple *t = (GPTuple *)e;
    if (f->pc == 0) {
      f->buf = buf_new();
      gp_buf_putc(f->buf, '(');
      f->pc = 1;
    }
    while (f->i < t->n) {
      if (f->i) gp_buf_puts(f->buf, ", ");
      int32_t cid = KID(p, f->id, f->i++);
      if (print_begin(p, cid, false, f->buf)) return;
      f = &p->frames[fi];
    }
    if (t->n == 1) gp_buf_putc(f->buf, ',');
    gp_buf_putc(f->buf, ')');
    set_raw(p, f->id, f->buf);
    pop_frame(p);
    return;
  }
  case GP_TI_TUPLE_GET_ITEM: {
    GPTupleGetItem *g = (GPTupleGetItem *)e;
    if (f->pc == 0) {
      f->buf = buf_new();
      f->pc = 1;
      if (print_begin(p, KID(p, f->id, 0), false, f->buf)) return;
      f = &p->frames[fi];
    }
    gp_buf_printf(f->buf, ".%d", (int)g->index);
    set_raw(p, f->id, f->buf);
    pop_frame(p);
    return;
  }
  case GP_TI_FUNCTION_EXPR: {
    GPFunctionExpr *fn = (GPFunctionExpr *)e;
    switch (f->pc) {
    case 0:
      f->buf = buf_new();
      gp_buf_puts(f->buf, f->prefix ? f->prefix : "fn ");
      f->i = p->st[f->id].hoist_begin;
      f->pc = 1;
      /* fallthrough */
    case 1: {
      if (run_hoist(p, fi)) return;
      f = &p->frames[fi];
      GPBuf *b = f->buf;
      gp_buf_putc(b, '(');
      bool first = true;
      for (int32_t i = 0; i < fn->nparams; i++) {
        if (!first) gp_buf_puts(b, ", ");
        first = false;
        alloc_var(p, fn->params[i], b);
      }
      put_attrs_list(b, fn->attrs, &first);
      gp_buf_puts(b, ") ");
      const GPType *rt = fn_ret_type(fn);
      if (rt) {
        gp_buf_puts(b, "-> ");
        gp_type_print(b, rt);
        gp_buf_putc(b, ' ');
      }
      f->pc = 2;
      push_body(p, KID(p, f->id, fn->nparams), b);
      return;
    }
    case 2:
      if (f->top) {
        put_buf(p, f->dst, f->buf);
        p->st[f->id].visited = 1;
      } else {
        set_raw(p, f->id, f->buf);
      }
      pop_frame(p);
      return;
    }
    return;
  }
  case GP_TI_IF: {
    switch (f->pc) {
    case 0:
      f->buf = buf_new();
      gp_buf_puts(f->buf, "if (");
      f->pc = 1;
      if (print_begin(p, KID(p, f->id, 0), false, f->buf)) return;
      f = &p->frames[fi];
      /* fallthrough */
    case 1:
      gp_buf_puts(f->buf, ") ");
      f->i = p->st[f->id].hoist_begin;
      f->pc = 2;
      /* fallthrough */
    case 2:
      if (run_hoist(p, fi)) return;
      f = &p->frames[fi];
      f->pc = 3;
      push_body(p, KID(p, f->id, 1), f->buf);
      return;
    case 3:
      gp_buf_puts(f->buf, " else ");
      f->pc = 4;
      push_body(p, KID(p, f->id, 2), f->buf);
      return;
    case 4:
      set_raw(p, f->id, f->buf);
      pop_frame(p);
      return;
    }
    return;
  }
  case GP_TI_LET: {
    for (;;) {
      switch (f->pc) {
      case 0:
        f->buf = buf_new();
        f->cur = e;
        f->i = f->id;
        f->pc = 1;
        break;
      case 1:
        if (gp_kind(f->cur) == GP_TI_LET) {
          GPLet *l = (GPLet *)f->cur;
          buf_del(f->buf2);
          f->buf2 = buf_new();
          gp_buf_puts(f->buf2, "let ");
          alloc_var(p, l->var, f->buf2);
          gp_buf_puts(f->buf2, " = ");
          f->pc = 2;
          if (print_begin(p, KID(p, f->i, 1), true, f->buf2)) return;
          f = &p->frames[fi];
        } else {
          if (!f->pushed_doc) { /* cannot happen: a let has at least one binding */
            gp_vec_push(&p->docs, f->buf);
            f->pushed_doc = 1;
          }
          buf_del(f->buf2);
          f->buf2 = buf_new();
          f->pc = 3;
          if (print_begin(p, f->i, true, f->buf2)) return;
          f = &p->frames[fi];
        }
        break;
      case 2:
        gp_buf_puts(f->buf2, ";\n");
        put_buf(p, f->buf, f->buf2);
        if (!f->pushed_doc) {
          gp_vec_push(&p->docs, f->buf);
          f->pushed_doc = 1;
        }
        f->cur = ((GPLet *)f->cur)->body;
        f->i = KID(p, f->i, 2);
        f->pc = 1;
        break;
      case 3:
        put_buf(p, f->buf, f->buf2);
        gp_vec_pop(&p->docs);
        set_raw(p, f->id, f->buf);
        pop_frame(p);
        return;
      }
    }
  }
  default: pop_frame(p); return;
  }
}

static void step_body(Printer *p, size_t fi) {
  Frame *f = &p->frames[fi];
  if (f->pc == 0) {
    f->buf = buf_new();  /* the scope's bindings */
    f->buf2 = buf_new(); /* its final expression */
    gp_vec_push(&p->docs, f->buf);
    f->pc = 1;
    if (print_begin(p, f->id, true, f->buf2)) return;
    f = &p->frames[fi];
  }
  gp_vec_pop(&p->docs);
  gp_buf_puts(f->dst, "{\n  ");
  gp_buf_putc(f->dst, TX_IN);
  put_buf(p, f->dst, f->buf);
  put_buf(p, f->dst, f->buf2);
  gp_buf_putc(f->dst, TX_OUT);
  gp_buf_puts(f->dst, "\n}");
  pop_frame(p);
}

static void step_print(Printer *p, size_t fi) {
  Frame *f = &p->frames[fi];
  if (f->pc == 0) {
    f->pc = 1;
    push_frame(p, FR_EXPAND, f->id, NULL);
    return;
  }
  print_finish(p, f->id, f->try_inline, f->dst);
  pop_frame(p);
}

static void run(Printer *p) {
  while (p->nframes) {
    size_t fi = p->nframes - 1;
    switch (p->frames[fi].kind) {
    case FR_PRINT: step_print(p, fi); break;
    case FR_EXPAND: step_expand(p, fi); break;
    case FR_LEAF: step_leaf(p, fi); break;
    case FR_BODY: step_body(p, fi); break;
    }
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Per-root analysis: ids, use counts, scopes (blocks) and hoisting                            */

static int32_t new_block(Printer *p, int32_t parent, int32_t owner) {
  if (p->nblocks == p->cap_blocks) {
    p->cap_blocks = p->cap_blocks ? p->cap_blocks * 2 : 16;
    p->blocks = gp_realloc(p->blocks, p->cap_blocks * sizeof(Block));
  }
  Block *b = &p->blocks[p->nblocks];
  b->parent = parent;
  b->depth = parent < 0 ? 0 : p->blocks[parent].depth + 1;
  b->owner = owner;
  return (int32_t)p->nblocks++;
}

static int32_t lca(Printer *p, int32_t a, int32_t b) {
  while (a != b) {
    if (p->blocks[a].depth >= p->blocks[b].depth) a = p->blocks[a].parent;
    else b = p->blocks[b].parent;
  }
  return a;
}

typedef struct HoistPair {
  int32_t owner, node;
} HoistPair;

static int cmp_pair(const void *x, const void *y) {
  const HoistPair *a = x, *b = y;
  if (a->owner != b->owner) return a->owner < b->owner ? -1 : 1;
  return (a->node > b->node) - (a->node < b->node);
}

/* Use block of child `c` of node `pid` (whose own home is known). */
static int32_t use_block(Printer *p, int32_t pid, int32_t j, const int32_t *sub) {
  GPExpr *pe = NODES(p)[pid];
  if (gp_kind(pe) == GP_TI_FUNCTION_EXPR && j == ((GPFunctionExpr *)pe)->nparams) return sub[0];
  if (gp_kind(pe) == GP_TI_IF && j > 0) return sub[j - 1];
  return p->st[pid].home;
}

/* For `root` (the function of a module definition, when is_def, else the expression printed in
 * scope 0). */
static int analyze(Printer *p, GPExpr *root, bool is_def) {
  if (gp_ni_build(&p->ni, root, 0) != 0) return -1;
  size_t n = p->ni.n;
  p->st = gp_calloc(n ? n : 1, sizeof(NodeSt));
  for (size_t i = 0; i < n; i++) {
    p->st[i].bound = -1;
    p->st[i].home = -1;
  }
  /* use counts (TVM's dependency graph: every child edge, with multiplicity) */
  for (size_t i = 0; i < n; i++) {
    for (int32_t j = p->ni.kid_off[i]; j < p->ni.kid_off[i + 1]; j++) p->st[p->ni.kids[j]].nparents++;
  }
  /* scopes: reverse post order = parents before children */
  int32_t *sub = gp_malloc(2 * (n ? n : 1) * sizeof(int32_t));
  int32_t root_id = (int32_t)n - 1;
  new_block(p, -1, -1);
  p->st[root_id].home = 0;
  for (size_t ii = n; ii-- > 0;) {
    int32_t id = (int32_t)ii;
    GPExpr *e = NODES(p)[id];
    sub[2 * id] = sub[2 * id + 1] = -1;
    if (always_inline(e) || p->st[id].home < 0) continue;
    if (gp_kind(e) == GP_TI_FUNCTION_EXPR) {
      sub[2 * id] = (is_def && id == root_id) ? 0 : new_block(p, p->st[id].home, id);
    } else if (gp_kind(e) == GP_TI_IF) {
      sub[2 * id] = new_block(p, p->st[id].home, id);
      sub[2 * id + 1] = new_block(p, p->st[id].home, id);
    }
    int32_t k = p->ni.kid_off[id + 1] - p->ni.kid_off[id];
    for (int32_t j = 0; j < k; j++) {
      int32_t cid = KID(p, id, j);
      if (always_inline(NODES(p)[cid])) continue;
      int32_t b = use_block(p, id, j, &sub[2 * id]);
      p->st[cid].home = p->st[cid].home < 0 ? b : lca(p, p->st[cid].home, b);
    }
  }
  /* hoisting: a use from a deeper scope than the node's home */
  HoistPair *pairs = NULL;
  size_t np = 0, cp = 0;
  for (size_t i = 0; i < n; i++) {
    GPExpr *e = NODES(p)[i];
    if (always_inline(e) || p->st[i].home < 0) continue;
    int32_t k = p->ni.kid_off[i + 1] - p->ni.kid_off[i];
    for (int32_t j = 0; j < k; j++) {
      int32_t cid = KID(p, (int32_t)i, j);
      if (always_inline(NODES(p)[cid])) continue;
      int32_t b = use_block(p, (int32_t)i, j, &sub[2 * i]);
      int32_t h = p->st[cid].home;
      if (b == h) continue;
      while (p->blocks[b].parent != h) b = p->blocks[b].parent;
      if (np == cp) {
        cp = cp ? cp * 2 : 16;
        pairs = gp_realloc(pairs, cp * sizeof *pairs);
      }
      pairs[np++] = (HoistPair){p->blocks[b].owner, cid};
    }
  }
  if (np) {
    qsort(pairs, np, sizeof *pairs, cmp_pair);
    p->hoist = gp_malloc(np * sizeof(int32_t));
    size_t m = 0;
    for (size_t i = 0; i < np; i++) {
      if (i && pairs[i].owner == pairs[i - 1].owner && pairs[i].node == pairs[i - 1].node) continue;
      NodeSt *o = &p->st[pairs[i].owner];
      if (m == 0 || pairs[i].owner != pairs[i - 1].owner) o->hoist_begin = (int32_t)m;
      p->hoist[m++] = pairs[i].node;
      o->hoist_end = (int32_t)m;
    }
  }
  gp_free(pairs);
  gp_free(sub);
  return 0;
}

static void reset_root(Printer *p) {
  for (size_t i = 0; p->st && i < p->ni.n; i++) gp_free(p->st[i].raw);
  for (size_t i = 0; i < p->nchunks; i++) gp_free(p->chunk[i]);
  p->nchunks = 0;
  gp_free(p->st);
  p->st = NULL;
  gp_ni_free(&p->ni);
  gp_free(p->hoist);
  p->hoist = NULL;
  p->nblocks = 0;
}

static void printer_free(Printer *p) {
  reset_root(p);
  gp_free(p->blocks);
  gp_free(p->frames);
  gp_free(p->est);
  gp_free(p->chunk);
  gp_free(p->chunk_len);
  gp_vec_free(&p->docs);
  gp_vec_free(&p->meta);
  gp_map_free(&p->consts);
  for (size_t i = 0; i < p->vars.cap; i++) {
    if (p->vars.slots[i].key && p->vars.slots[i].val) {
      VarInfo *vi = p->vars.slots[i].val;
      gp_free(vi->name);
      gp_free(vi->decl);
      gp_free(vi);
    }
  }
  gp_map_free(&p->vars);
  gp_strmap_free(&p->names);
}

/* ------------------------------------------------------------------------------------------ */
/* Metadata section                                                                            */

static void put_base64(GPBuf *b, const uint8_t *d, size_t n) {
  static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t i = 0;
  char q[4];
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
    q[0] = tbl[v >> 18], q[1] = tbl[(v >> 12) & 63], q[2] = tbl[(v >> 6) & 63], q[3] = tbl[v & 63];
    gp_buf_put(b, q, 4);
  }
  if (n - i == 1) {
    uint32_t v = (uint32_t)d[i] << 16;
    q[0] = tbl[v >> 18], q[1] = tbl[(v >> 12) & 63], q[2] = '=', q[3] = '=';
    gp_buf_put(b, q, 4);
  } else if (n - i == 2) {
    uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8;
    q[0] = tbl[v >> 18], q[1] = tbl[(v >> 12) & 63], q[2] = tbl[(v >> 6) & 63], q[3] = '=';
    gp_buf_put(b, q, 4);
  }
}

/* Compact row-major bytes of t (strides honoured); caller frees. */
static uint8_t *compact_bytes(const GPTensor *t, size_t *out_n) {
  const DLTensor *dl = &t->dl;
  size_t es = gp_dtype_bytes(dl->dtype);
  int64_t numel = 1;
  for (int32_t i = 0; i < dl->ndim; i++) numel *= dl->shape[i];
  if (numel < 0) numel = 0;
  size_t n = (size_t)numel * es;
  uint8_t *out = gp_malloc(n ? n : 1);
  const uint8_t *base = (const uint8_t *)dl->data + dl->byte_offset;
  if (!dl->strides || gp_tensor_is_compact(t)) {
    memcpy(out, base, n);
  } else if (numel > 0) {
    int64_t *idx = gp_calloc((size_t)dl->ndim + 1, sizeof(int64_t));
    for (int64_t k = 0; k < numel; k++) {
      int64_t off = 0;
      for (int32_t d = 0; d < dl->ndim; d++) off += idx[d] * dl->strides[d];
      memcpy(out + (size_t)k * es, base + off * (int64_t)es, es);
      for (int32_t d = dl->ndim - 1; d >= 0; d--) {
        if (++idx[d] < dl->shape[d]) break;
        idx[d] = 0;
      }
    }
    gp_free(idx);
  }
  *out_n = n;
  return out;
}

static void put_metadata(Printer *p, GPBuf *out, bool leading_newline) {
  bool any = false;
  for (size_t i = 0; i < p->meta.len; i++) {
    const GPConstant *c = p->meta.items[i];
    if (!c->data || !c->data->dl.data) continue;
    if (!any) {
      if (leading_newline) gp_buf_putc(out, '\n');
      gp_buf_puts(out, "#[metadata]\n");
      any = true;
    }
    const DLTensor *dl = &c->data->dl;
    char dt[24];
    gp_buf_printf(out, "relay.Constant[%zu] = %s (", i, gp_dtype_str(dl->dtype, dt));
    for (int32_t d = 0; d < dl->ndim; d++)
      gp_buf_printf(out, "%s%lld", d ? ", " : "", (long long)dl->shape[d]);
    gp_buf_puts(out, ") base64:");
    size_t nb;
    uint8_t *bytes = compact_bytes(c->data, &nb);
    put_base64(out, bytes, nb);
    gp_free(bytes);
    gp_buf_putc(out, '\n');
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Entry points                                                                                */

char *gp_print(const GPModule *m, int32_t flags) { return gp_print_meta(m, flags, NULL); }

char *gp_print_meta(const GPModule *m, int32_t flags, GPVec *meta) {
  Printer p;
  memset(&p, 0, sizeof p);
  p.flags = flags;
  GPBuf out = {0};
  gp_buf_puts(&out, "#[version = \"0.0.5\"]\n");
  for (int32_t i = 0; m && i < m->num_functions; i++) {
    GPExpr *fn = (GPExpr *)m->funcs[i];
    if (analyze(&p, fn, true) != 0) {
      reset_root(&p);
      printer_free(&p);
      gp_buf_free(&out);
      return NULL;
    }
    if (i) gp_buf_putc(&out, '\n');
    GPBuf prefix = {0}, def = {0};
    gp_buf_puts(&prefix, "def @");
    put_name(&prefix, m->gvars[i]->name);
    Frame *f = push_frame(&p, FR_LEAF, (int32_t)p.ni.n - 1, &def);
    f->top = 1;
    f->prefix = prefix.data;
    run(&p);
    emit(&p, &out, def.data ? def.data : "", def.len);
    gp_buf_free(&def);
    gp_buf_free(&prefix);
    gp_buf_putc(&out, '\n');
    reset_root(&p);
  }
  if (flags & GP_PRINT_METADATA) put_metadata(&p, &out, false);
  if (meta)
    for (size_t i = 0; i < p.meta.len; i++) gp_vec_push(meta, p.meta.items[i]);
  printer_free(&p);
  return gp_buf_take(&out);
}

char *gp_print_expr(const GPExpr *e, int32_t flags) {
  Printer p;
  memset(&p, 0, sizeof p);
  p.flags = flags;
  GPBuf out = {0};
  if (!e) {
    gp_error_set(GP_ERR_VALUE, "print: NULL expression");
    return NULL;
  }
  if (analyze(&p, (GPExpr *)e, false) != 0) {
    reset_root(&p);
    printer_free(&p);
    return NULL;
  }
  GPBuf *doc = buf_new(), *text = buf_new();
  gp_vec_push(&p.docs, doc);
  if (print_begin(&p, (int32_t)p.ni.n - 1, true, text)) run(&p);
  gp_vec_pop(&p.docs);
  GPBuf all = {0};
  put_buf(&p, &all, doc);
  put_buf(&p, &all, text);
  emit(&p, &out, all.data ? all.data : "", all.len);
  gp_buf_free(&all);
  buf_del(doc);
  buf_del(text);
  reset_root(&p);
  if (flags & GP_PRINT_METADATA) put_metadata(&p, &out, true);
  printer_free(&p);
  return gp_buf_take(&out);
}
