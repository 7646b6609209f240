/* pattern.c -- the pattern language (grammar in abi/graphpass.h, GPPattern): a recursive-descent
 * compiler from text to a node array, and the matcher.  Both recurse on the *pattern's* nesting
 * (at most GP_PAT_MAX_DEPTH levels, checked while parsing), never on the graph's depth. */
#include "pattern.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GP_PAT_MAX_DEPTH 256

/* ------------------------------------------------------------------------------------------ */
/* The compiled object                                                                          */

static void pattern_free(GPObject *o) {
  GPPatternImpl *p = (GPPatternImpl *)o;
  for (int32_t i = 0; i < p->pub.num_captures; i++) gp_free((char *)p->pub.capture_names[i]);
  gp_free((void *)p->pub.capture_names);
  gp_free((char *)p->pub.text);
  gp_free(p->source);
  for (int32_t i = 0; i < p->nnodes; i++) {
    const GPPatNode *n = &p->nodes[i];
    for (int32_t a = 0; a < n->nattrs; a++) {
      GPAttrValue *v = &p->attrs[n->attr0 + a].value;
      if (v->kind == GP_ATTR_STR) gp_free((char *)v->s);
      if (v->kind == GP_ATTR_INTS) gp_free((int64_t *)v->ints);
      if (v->kind == GP_ATTR_FLOATS) gp_free((double *)v->floats);
    }
  }
  gp_free(p->nodes);
  gp_free(p->kids);
  gp_free(p->attrs);
  gp_free(p->dims);
  gp_free(p->root_ops);
  gp_free(p);
}

/* ------------------------------------------------------------------------------------------ */
/* The compiler                                                                                 */

typedef struct PP {
  const char *text, *p, *end;
  const char *source;
  uint32_t line0, col0;  /* where the text starts in its source */
  uint32_t line;         /* current line (absolute) */
  const char *line_start;
  int depth;
  bool failed;
  GPPatternImpl *pat;
  size_t ncap_nodes, ncap_kids, ncap_attrs, ncap_dims, ncap_names;
  int32_t nkids, nattrs, ndims;
} PP;

static uint32_t pp_col(const PP *P, const char *at) {
  uint32_t c = (uint32_t)(at - P->line_start) + 1;
  return P->line == P->line0 ? c + P->col0 - 1 : c;
}

static bool pp_fail_at(PP *P, uint32_t line, uint32_t col, const char *fmt, ...) GP_FMT(4, 5);
static bool pp_fail_at(PP *P, uint32_t line, uint32_t col, const char *fmt, ...) {
  if (P->failed) return false;
  P->failed = true;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (P->source)
    gp_error_set(GP_ERR_PARSE, "%s:%u:%u: error: %s", P->source, (unsigned)line, (unsigned)col, msg);
  else
    gp_error_set(GP_ERR_PARSE, "%u:%u: error: %s", (unsigned)line, (unsigned)col, msg);
  return false;
}
#define FAIL(P, at, ...) pp_fail_at((P), (P)->line, pp_col((P), (at)), __VA_ARGS__)

/* Spaces, newlines and '#' comments. */
static void pp_ws(PP *P) {
  while (P->p < P->end) {
    char c = *P->p;
    if (c == '\n') {
      P->p++;
      P->line++;
      P->line_start = P->p;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      P->p++;
    } else if (c == '#') {
      while (P->p < P->end && *P->p != '\n') P->p++;
    } else {
      break;
    }
  }
}

static bool pp_peek(PP *P, char c) {
  pp_ws(P);
  return P->p < P->end && *P->p == c;
}

static bool pp_accept(PP *P, char c) {
  if (!pp_peek(P, c)) return false;
  P->p++;
  return true;
}

/* A short quote of the text at `at` for messages. */
static const char *pp_near(const PP *P, const char *at, char *buf, size_t n) {
  if (at >= P->end) return "the end of the pattern";
  size_t k = 0;
  buf[k++] = '\'';
  for (const char *q = at; q < P->end && k + 2 < n && k < 17 && *q != '\n'; q++) buf[k++] = *q;
  buf[k++] = '\'';
  buf[k] = 0;
  return buf;
}

static bool pp_expect(PP *P, char c, const char *what) {
  if (pp_accept(P, c)) return true;
  char near[32];
  return FAIL(P, P->p, "expected %s but found %s", what, pp_near(P, P->p, near, sizeof near));
}

static bool is_id0(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_dig(char c) { return c >= '0' && c <= '9'; }
static bool is_idc(char c) { return is_id0(c) || is_dig(c); }

/* An identifier with dotted segments (nn.conv2d); a '.' is part of it only when a letter or
 * '_' follows, so `_.0` is a get-item. */
static size_t pp_ident(PP *P) {
  const char *q = P->p;
  if (q >= P->end || !is_id0(*q)) return 0;
  while (q < P->end && is_idc(*q)) q++;
  while (q + 1 < P->end && *q == '.' && is_id0(q[1])) {
    q++;
    while (q < P->end && is_idc(*q)) q++;
  }
  return (size_t)(q - P->p);
}

static bool pp_word(PP *P, const char *w) {
  pp_ws(P);
  size_t n = pp_ident(P);
  if (n != strlen(w) || memcmp(P->p, w, n) != 0) return false;
  P->p += n;
  return true;
}

static int32_t pp_node(PP *P, int kind, const char *at) {
  GPPatternImpl *pt = P->pat;
  if ((size_t)pt->nnodes == P->ncap_nodes) {
    P->ncap_nodes = P->ncap_nodes ? P->ncap_nodes * 2 : 16;
    pt->nodes = gp_realloc(pt->nodes, P->ncap_nodes * sizeof *pt->nodes);
  }
  GPPatNode *n = &pt->nodes[pt->nnodes];
  memset(n, 0, sizeof *n);
  n->kind = (uint8_t)kind;
  n->capture = -1;
  n->line = P->line;
  n->col = pp_col(P, at);
  return pt->nnodes++;
}

static void pp_set_kids(PP *P, int32_t node, int32_t nk, const int32_t *k) {
  GPPatternImpl *pt = P->pat;
  if ((size_t)(P->nkids + nk) > P->ncap_kids) {
    while ((size_t)(P->nkids + nk) > P->ncap_kids) P->ncap_kids = P->ncap_kids ? P->ncap_kids * 2 : 16;
    pt->kids = gp_realloc(pt->kids, P->ncap_kids * sizeof *pt->kids);
  }
  if (nk) memcpy(pt->kids + P->nkids, k, (size_t)nk * sizeof *k);
  pt->nodes[node].kid0 = P->nkids;
  pt->nodes[node].nkids = nk;
  P->nkids += nk;
}

static int32_t pp_capture(PP *P, const char *name, size_t n) {
  GPPattern *pub = &P->pat->pub;
  for (int32_t i = 0; i < pub->num_captures; i++)
    if (strlen(pub->capture_names[i]) == n && memcmp(pub->capture_names[i], name, n) == 0) return i;
  if ((size_t)pub->num_captures == P->ncap_names) {
    P->ncap_names = P->ncap_names ? P->ncap_names * 2 : 4;
    pub->capture_names = gp_realloc((void *)pub->capture_names, P->ncap_names * sizeof(char *));
  }
  ((const char **)pub->capture_names)[pub->num_captures] = gp_strndup(name, n);
  return pub->num_captures++;
}

static int32_t pp_alt(PP *P);

/* ---- attribute values (Relay text syntax) */

typedef struct PVal {
  int kind; /* GP_ATTR_INT, FLOAT, BOOL, STR, NONE, INTS (all ints) or FLOATS */
  int64_t i;
  double f;
  char *s;
  int32_t n;
  int64_t *ints;
  double *floats;
} PVal;

static void pval_free(PVal *v) {
  gp_free(v->s);
  gp_free(v->ints);
  gp_free(v->floats);
  memset(v, 0, sizeof *v);
}

/* A number: [-+]digits[.digits][e[-+]digits][suffix]; a '.', an exponent or an f suffix make
 * it a float. */
static bool pp_number(PP *P, bool *is_float, int64_t *iv, double *fv) {
  const char *s = P->p, *q = s;
  if (q < P->end && (*q == '-' || *q == '+')) q++;
  if (q >= P->end || !is_dig(*q)) {
    char near[32];
    return FAIL(P, s, "expected a number but found %s", pp_near(P, s, near, sizeof near));
  }
  bool fl = false;
  while (q < P->end && is_dig(*q)) q++;
  if (q + 1 < P->end && *q == '.' && is_dig(q[1])) {
    fl = true;
    q++;
    while (q < P->end && is_dig(*q)) q++;
  }
  if (q < P->end && (*q == 'e' || *q == 'E')) {
    const char *r = q + 1;
    if (r < P->end && (*r == '-' || *r == '+')) r++;
    if (r < P->end && is_dig(*r)) {
      fl = true;
      q = r;
      while (q < P->end && is_dig(*q)) q++;
    }
  }
  char buf[64];
  size_t len = (size_t)(q - s);
  if (len >= sizeof buf) return FAIL(P, s, "number is too long");
  memcpy(buf, s, len);
  buf[len] = 0;
  /* suffix: f, f16, f32, f64 (float); i8 .. i64, u8 .. u64 (int) */
  if (q < P->end && (*q == 'f' || *q == 'i' || *q == 'u')) {
    char k = *q++;
    while (q < P->end && is_dig(*q)) q++;
    if (k == 'f') fl = true;
  }
  if (q < P->end && is_idc(*q)) {
    char near[32];
    return FAIL(P, s, "malformed number %s", pp_near(P, s, near, sizeof near));
  }
  char *endp;
  if (fl) {
    *fv = strtod(buf, &endp);
  } else {
    errno = 0;
    long long v = strtoll(buf, &endp, 10);
    if (errno) return FAIL(P, s, "integer %s is out of range", buf);
    *iv = v;
  }
  *is_float = fl;
  P->p = q;
  return true;
}

static bool pp_string(PP *P, char **out) {
  const char *s = P->p;
  P->p++; /* '"' */
  GPBuf b = {0};
  gp_buf_puts(&b, "");
  while (P->p < P->end && *P->p != '"') {
    char c = *P->p++;
    if (c == '\n') break;
    if (c == '\\' && P->p < P->end) {
      char e = *P->p++;
      c = e == 'n' ? '\n' : e == 't' ? '\t' : e;
    }
    gp_buf_putc(&b, c);
  }
  if (P->p >= P->end || *P->p != '"') {
    gp_buf_free(&b);
    return FAIL(P, s, "unterminated string");
  }
  P->p++;
  *out = gp_buf_take(&b);
  return true;
}

static bool pp_value(PP *P, PVal *v) {
  pp_ws(P);
  memset(v, 0, sizeof *v);
  const char *s = P->p;
  if (P->p < P->end && *P->p == '"') {
    v->kind = GP_ATTR_STR;
    return pp_string(P, &v->s);
  }
  if (pp_word(P, "True") || pp_word(P, "False")) {
    v->kind = GP_ATTR_BOOL;
    v->i = s[0] == 'T';
    return true;
  }
  if (pp_word(P, "None")) {
    v->kind = GP_ATTR_NONE;
    return true;
  }
  if (pp_accept(P, '[')) {
    bool any_float = false;
    size_t cap = 0;
    v->kind = GP_ATTR_INTS;
    if (!pp_accept(P, ']')) {
      do {
        pp_ws(P);
        bool fl = false;
        int64_t iv = 0;
        double fv = 0;
        if (!pp_number(P, &fl, &iv, &fv)) return false;
        if ((size_t)v->n == cap) {
          cap = cap ? cap * 2 : 8;
          v->ints = gp_realloc(v->ints, cap * sizeof *v->ints);
          v->floats = gp_realloc(v->floats, cap * sizeof *v->floats);
        }
        v->ints[v->n] = fl ? 0 : iv;
        v->floats[v->n] = fl ? fv : (double)iv;
        any_float = any_float || fl;
        v->n++;
      } while (pp_accept(P, ','));
      if (!pp_expect(P, ']', "',' or ']' in a list")) return false;
    }
    if (any_float) v->kind = GP_ATTR_FLOATS;
    return true;
  }
  if (P->p < P->end && (is_dig(*P->p) || *P->p == '-' || *P->p == '+')) {
    bool fl = false;
    if (!pp_number(P, &fl, &v->i, &v->f)) return false;
    v->kind = fl ? GP_ATTR_FLOAT : GP_ATTR_INT;
    return true;
  }
  char near[32];
  return FAIL(P, s, "expected an attribute value (number, string, True, False, None or [...]) but found %s",
              pp_near(P, s, near, sizeof near));
}

static const char *kind_word(int kind) {
  switch (kind) {
  case GP_ATTR_INT: return "an int";
  case GP_ATTR_FLOAT: return "a float";
  case GP_ATTR_BOOL: return "a bool";
  case GP_ATTR_STR: return "a string";
  case GP_ATTR_DTYPE: return "a dtype string";
  case GP_ATTR_INTS: return "a list of ints";
  case GP_ATTR_FLOATS: return "a list of floats";
  default: return "None";
  }
}

/* Convert v to the schema kind of field f into *out (payload owned by the pattern). */
static bool pp_convert(PP *P, const char *at, const GPOp *op, const GPAttrField *f, PVal *v, GPAttrValue *out) {
  memset(out, 0, sizeof *out);
  if (v->kind == GP_ATTR_NONE) {
    out->kind = GP_ATTR_NONE;
    return true;
  }
  switch (f->kind) {
  case GP_ATTR_INT:
    if (v->kind != GP_ATTR_INT) break;
    *out = gp_attr_int(v->i);
    return true;
  case GP_ATTR_FLOAT:
    if (v->kind != GP_ATTR_INT && v->kind != GP_ATTR_FLOAT) break;
    *out = gp_attr_float(v->kind == GP_ATTR_INT ? (double)v->i : v->f);
    return true;
  case GP_ATTR_BOOL:
    if (v->kind != GP_ATTR_BOOL && !(v->kind == GP_ATTR_INT && (v->i == 0 || v->i == 1))) break;
    *out = gp_attr_bool(v->i != 0);
    return true;
  case GP_ATTR_STR:
    if (v->kind != GP_ATTR_STR) break;
    out->kind = GP_ATTR_STR;
    out->s = v->s;
    v->s = NULL;
    return true;
  case GP_ATTR_DTYPE: {
    if (v->kind != GP_ATTR_STR) break;
    DLDataType dt = {0, 0, 0};
    if (v->s[0] && gp_dtype_parse(v->s, strlen(v->s), &dt) != 0)
      return FAIL(P, at, "attribute %s of %s: unknown dtype \"%s\"", f->name, op->name, v->s);
    *out = gp_attr_dtype(dt);
    return true;
  }
  case GP_ATTR_INTS:
    if (v->kind != GP_ATTR_INTS) break;
    out->kind = GP_ATTR_INTS;
    out->n = v->n;
    out->ints = v->ints ? v->ints : gp_malloc(sizeof(int64_t));
    v->ints = NULL;
    return true;
  case GP_ATTR_FLOATS:
    if (v->kind != GP_ATTR_INTS && v->kind != GP_ATTR_FLOATS) break;
    out->kind = GP_ATTR_FLOATS;
    out->n = v->n;
    out->floats = v->floats ? v->floats : gp_malloc(sizeof(double));
    v->floats = NULL;
    return true;
  default: break;
  }
  return FAIL(P, at, "attribute %s of %s expects %s, got %s", f->name, op->name, kind_word(f->kind),
              kind_word(v->kind));
}

/* '{' key '=' value {',' key '=' value} '}' after a call of `op`. */
static bool pp_attrs(PP *P, int32_t node) {
  GPPatternImpl *pt = P->pat;
  const GPOp *op = pt->nodes[node].op;
  int32_t first = P->nattrs;
  do {
    pp_ws(P);
    const char *at = P->p;
    size_t n = pp_ident(P);
    if (!n) {
      char near[32];
      return FAIL(P, at, "expected an attribute name but found %s", pp_near(P, at, near, sizeof near));
    }
    const GPAttrField *f = NULL;
    for (int32_t i = 0; i < op->num_attrs; i++)
      if (strlen(op->attrs[i].name) == n && memcmp(op->attrs[i].name, at, n) == 0) f = &op->attrs[i];
    if (!f) {
      GPBuf b = {0};
      for (int32_t i = 0; i < op->num_attrs; i++) gp_buf_printf(&b, "%s%s", i ? ", " : "", op->attrs[i].name);
      bool r = FAIL(P, at, "%s has no attribute '%.*s' (%s%s)", op->name, (int)n, at,
                    op->num_attrs ? "its attributes: " : "it has no attributes", op->num_attrs ? b.data : "");
      gp_buf_free(&b);
      return r;
    }
    for (int32_t i = first; i < P->nattrs; i++)
      if (pt->attrs[i].key == f->name) return FAIL(P, at, "duplicate attribute %s", f->name);
    P->p += n;
    if (!pp_expect(P, '=', "'=' after the attribute name")) return false;
    pp_ws(P);
    const char *vat = P->p;
    PVal v;
    if (!pp_value(P, &v)) {
      pval_free(&v);
      return false;
    }
    GPAttrValue cv;
    bool ok = pp_convert(P, vat, op, f, &v, &cv);
    pval_free(&v);
    if (!ok) return false;
    if ((size_t)P->nattrs == P->ncap_attrs) {
      P->ncap_attrs = P->ncap_attrs ? P->ncap_attrs * 2 : 8;
      pt->attrs = gp_realloc(pt->attrs, P->ncap_attrs * sizeof *pt->attrs);
    }
    pt->attrs[P->nattrs].key = f->name;
    pt->attrs[P->nattrs].value = cv;
    P->nattrs++;
    pt->nodes[node].nattrs++;
  } while (pp_accept(P, ','));
  pt->nodes[node].attr0 = first;
  return pp_expect(P, '}', "',' or '}' after an attribute");
}

/* ':' type: Tensor[(d, ...), dtype] with '?' dims, or a bare dtype (rank 0). */
static bool pp_type(PP *P, int32_t node) {
  GPPatternImpl *pt = P->pat;
  pp_ws(P);
  const char *at = P->p;
  if (pt->nodes[node].has_type) return FAIL(P, at, "a second type condition on one pattern");
  int32_t dim0 = P->ndims, nd = 0;
  bool tensor = pp_word(P, "Tensor");
  if (tensor) {
    if (!pp_expect(P, '[', "'[' after Tensor") || !pp_expect(P, '(', "'(' starting the shape")) return false;
    if (!pp_accept(P, ')')) {
      do {
        if (pp_peek(P, ')')) break; /* (3,) */
        int64_t d = GP_DIM_ANY;
        if (!pp_accept(P, '?')) {
          bool fl = false;
          double fv = 0;
          const char *dat = P->p;
          if (!pp_number(P, &fl, &d, &fv)) return false;
          if (fl || d < 0) return FAIL(P, dat, "a dimension is a non-negative integer or '?'");
        }
        if ((size_t)P->ndims == P->ncap_dims) {
          P->ncap_dims = P->ncap_dims ? P->ncap_dims * 2 : 8;
          pt->dims = gp_realloc(pt->dims, P->ncap_dims * sizeof *pt->dims);
        }
        pt->dims[P->ndims++] = d;
        nd++;
      } while (pp_accept(P, ','));
      if (!pp_expect(P, ')', "',' or ')' in the shape")) return false;
    }
    if (!pp_expect(P, ',', "',' before the dtype")) return false;
  }
  pp_ws(P);
  const char *dat = P->p;
  size_t n = pp_ident(P);
  DLDataType dt;
  if (!n || gp_dtype_parse(dat, n, &dt) != 0) {
    char near[32];
    return FAIL(P, dat, "expected a dtype (float32, int8, ...) but found %s", pp_near(P, dat, near, sizeof near));
  }
  P->p += n;
  if (tensor && !pp_expect(P, ']', "']' closing the tensor type")) return false;
  GPPatNode *pn = &pt->nodes[node];
  pn->has_type = true;
  pn->dtype = dt;
  pn->ndim = nd;
  pn->dim0 = dim0;
  return true;
}

/* Append v to a list that starts in a caller's small array and moves to the heap when full. */
static int32_t *ids_push(int32_t *a, int32_t *small, int32_t *n, int32_t *cap, int32_t v) {
  if (*n == *cap) {
    *cap *= 2;
    int32_t *g = gp_malloc((size_t)*cap * sizeof *g);
    memcpy(g, a, (size_t)*n * sizeof *g);
    if (a != small) gp_free(a);
    a = g;
  }
  a[(*n)++] = v;
  return a;
}

static int32_t pp_primary(PP *P) {
  pp_ws(P);
  const char *at = P->p;
  if (at >= P->end) return FAIL(P, at, "expected a pattern but found the end of the pattern"), -1;
  char c = *at;
  if (c == '%') {
    P->p++;
    const char *nm = P->p;
    while (P->p < P->end && is_idc(*P->p)) P->p++;
    size_t n = (size_t)(P->p - nm);
    if (!n) return FAIL(P, at, "expected a capture name after '%%'"), -1;
    int32_t cap = pp_capture(P, nm, n);
    int32_t node;
    if (pp_accept(P, '=')) {
      node = pp_primary(P);
      if (node < 0) return -1;
      if (P->pat->nodes[node].capture >= 0)
        return FAIL(P, at, "a pattern has one capture name; %%%.*s names one that has %%%s", (int)n, nm,
                    P->pat->pub.capture_names[P->pat->nodes[node].capture]), -1;
    } else {
      node = pp_node(P, PK_ANY, at);
    }
    P->pat->nodes[node].capture = cap;
    return node;
  }
  if (c == '(') {
    P->p++;
    int32_t first = pp_alt(P);
    if (first < 0) return -1;
    if (pp_accept(P, ')')) return first; /* grouping */
    if (!pp_peek(P, ',')) {
      char near[32];
      return FAIL(P, P->p, "expected ',' or ')' but found %s", pp_near(P, P->p, near, sizeof near)), -1;
    }
    int32_t small[16], *f = small, nf = 0, cap = 16;
    f[nf++] = first;
    while (pp_accept(P, ',')) {
      if (pp_peek(P, ')')) break; /* (a,) */
      int32_t k = pp_alt(P);
      if (k < 0) break;
      f = ids_push(f, small, &nf, &cap, k);
    }
    int32_t node = -1;
    if (!P->failed && pp_expect(P, ')', "',' or ')' closing the tuple")) {
      node = pp_node(P, PK_TUPLE, at);
      pp_set_kids(P, node, nf, f);
    }
    if (f != small) gp_free(f);
    return node;
  }
  size_t n = pp_ident(P);
  if (!n) {
    char near[32];
    return FAIL(P, at, "expected a pattern (_, const, var, %%name, an op call or '(') but found %s",
                pp_near(P, at, near, sizeof near)), -1;
  }
  P->p += n;
  if (n == 1 && at[0] == '_') return pp_node(P, PK_ANY, at);
  if (n == 5 && !memcmp(at, "const", 5)) return pp_node(P, PK_CONST, at);
  if (n == 3 && !memcmp(at, "var", 3)) return pp_node(P, PK_VAR, at);
  char name[128];
  if (n >= sizeof name) return FAIL(P, at, "op name is too long"), -1;
  memcpy(name, at, n);
  name[n] = 0;
  const GPOp *op = gp_op_find(name);
  if (!op) return FAIL(P, at, "unknown op '%s'", name), -1;
  if (pp_accept(P, '?')) {
    if (!pp_expect(P, '(', "'(' after the optional op")) return -1;
    int32_t k[16], nk = 0;
    do {
      if (nk == 16) return FAIL(P, P->p, "an optional op takes at most 16 arguments"), -1;
      k[nk] = pp_alt(P);
      if (k[nk++] < 0) return -1;
    } while (pp_accept(P, ','));
    if (!pp_expect(P, ')', "',' or ')' closing the optional op")) return -1;
    if (op->num_inputs >= 0 && nk != op->num_inputs)
      return FAIL(P, at, "%s takes %d argument%s, the pattern gives %d", op->name, (int)op->num_inputs,
                  op->num_inputs == 1 ? "" : "s", (int)nk), -1;
    int32_t node = pp_node(P, PK_OPT, at);
    P->pat->nodes[node].op = op;
    pp_set_kids(P, node, nk, k);
    return node;
  }
  if (!pp_expect(P, '(', "'(' after the op name (a call)")) return -1;
  int32_t small[16], *a = small, na = 0, cap = 16;
  if (!pp_accept(P, ')')) {
    do {
      int32_t k = pp_alt(P);
      if (k < 0) break;
      a = ids_push(a, small, &na, &cap, k);
    } while (pp_accept(P, ','));
    if (!P->failed) pp_expect(P, ')', "',' or ')' closing the call");
  }
  int32_t node = -1;
  if (!P->failed) {
    if (op->num_inputs >= 0 && na != op->num_inputs)
      FAIL(P, at, "%s takes %d argument%s, the pattern gives %d", op->name, (int)op->num_inputs,
           op->num_inputs == 1 ? "" : "s", (int)na);
    else {
      node = pp_node(P, PK_CALL, at);
      P->pat->nodes[node].op = op;
      pp_set_kids(P, node, na, a);
      if (pp_accept(P, '{') && !pp_attrs(P, node)) node = -1;
    }
  }
  if (a != small) gp_free(a);
  return node;
}

static int32_t pp_postfix(PP *P) {
  int32_t x = pp_primary(P);
  while (x >= 0) {
    pp_ws(P);
    if (P->p + 1 < P->end && *P->p == '.' && is_dig(P->p[1])) {
      const char *at = P->p++;
      bool fl = false;
      int64_t idx = 0;
      double fv = 0;
      if (!pp_number(P, &fl, &idx, &fv)) return -1;
      if (fl || idx > INT32_MAX) return FAIL(P, at, "a get-item index is a small non-negative integer"), -1;
      int32_t node = pp_node(P, PK_ITEM, at);
      P->pat->nodes[node].index = (int32_t)idx;
      pp_set_kids(P, node, 1, &x);
      x = node;
      continue;
    }
    if (*P->p == ':' && P->p < P->end) {
      P->p++;
      if (!pp_type(P, x)) return -1;
      continue;
    }
    break;
  }
  return x;
}

static int32_t pp_alt(PP *P) {
  pp_ws(P);
  if (++P->depth > GP_PAT_MAX_DEPTH) {
    FAIL(P, P->p, "the pattern nests deeper than %d levels", GP_PAT_MAX_DEPTH);
    return -1;
  }
  const char *at = P->p;
  int32_t x = pp_postfix(P);
  while (x >= 0 && pp_accept(P, '|')) {
    int32_t y = pp_postfix(P);
    if (y < 0) {
      x = -1;
      break;
    }
    int32_t node = pp_node(P, PK_ALT, at);
    int32_t k[2] = {x, y};
    pp_set_kids(P, node, 2, k);
    x = node;
  }
  P->depth--;
  return P->failed ? -1 : x;
}

/* Levels below its root a pattern node looks (a leaf: 0).  Recursion on the pattern. */
static int32_t pat_height(const GPPatternImpl *p, int32_t pi) {
  const GPPatNode *pn = &p->nodes[pi];
  const int32_t *kids = p->kids ? p->kids + pn->kid0 : NULL;
  int32_t h = 0;
  switch (pn->kind) {
  case PK_CALL:
  case PK_TUPLE:
  case PK_ITEM:
  case PK_OPT:
    for (int32_t k = 0; k < pn->nkids; k++) {
      int32_t c = pat_height(p, kids[k]);
      if (c + 1 > h) h = c + 1;
    }
    return h;
  case PK_ALT: {
    int32_t a = pat_height(p, kids[0]), b = pat_height(p, kids[1]);
    return a > b ? a : b;
  }
  default: return 0;
  }
}

static void root_add_op(GPPatternImpl *pt, const GPOp *op) {
  if (op->index >= pt->root_nops) {
    int32_t n = (op->index / 64 + 1) * 64;
    pt->root_ops = gp_realloc(pt->root_ops, (size_t)n / 8);
    memset(pt->root_ops + pt->root_nops / 64, 0, (size_t)(n - pt->root_nops) / 8);
    pt->root_nops = n;
  }
  pt->root_ops[op->index / 64] |= 1ull << (op->index % 64);
}

/* The kinds and ops the root can match: through alternatives and optional ops (an explicit
 * stack over the pattern's nodes). */
static void root_filter(GPPatternImpl *pt) {
  int32_t small[64], *st = pt->nnodes > 64 ? gp_malloc((size_t)pt->nnodes * sizeof *st) : small;
  int32_t sp = 0;
  st[sp++] = pt->root;
  while (sp) {
    const GPPatNode *n = &pt->nodes[st[--sp]];
    switch (n->kind) {
    case PK_ANY: pt->root_any = true; break;
    case PK_VAR: pt->root_kinds |= 1u << (GP_TI_VAR - GP_TI_IR_BEGIN); break;
    case PK_CONST: pt->root_kinds |= 1u << (GP_TI_CONSTANT - GP_TI_IR_BEGIN); break;
    case PK_TUPLE: pt->root_kinds |= 1u << (GP_TI_TUPLE - GP_TI_IR_BEGIN); break;
    case PK_ITEM: pt->root_kinds |= 1u << (GP_TI_TUPLE_GET_ITEM - GP_TI_IR_BEGIN); break;
    case PK_CALL:
      root_add_op(pt, n->op);
      pt->root_summary |= gp_summary_op_bit(n->op);
      break;
    case PK_OPT:
      root_add_op(pt, n->op);
      pt->root_summary |= gp_summary_op_bit(n->op);
      st[sp++] = pt->kids[n->kid0];
      break;
    case PK_ALT:
      st[sp++] = pt->kids[n->kid0];
      st[sp++] = pt->kids[n->kid0 + 1];
      break;
    default: break;
    }
  }
  if (st != small) gp_free(st);
  for (int32_t k = GP_TI_IR_BEGIN; k < GP_TI_IR_END; k++)
    if (pt->root_kinds >> (k - GP_TI_IR_BEGIN) & 1u) pt->root_summary |= GP_SUM_KIND(k);
  if (pt->root_any) pt->root_summary = ~(uint64_t)0;
}

GPPattern *gp_pattern_compile(const char *text, const char *source_name, uint32_t line, uint32_t col) {
  if (!text) {
    gp_error_set(GP_ERR_VALUE, "pattern_compile: the text is NULL");
    return NULL;
  }
  gp_ops_init();
  GPPatternImpl *pt = gp_object_alloc(sizeof *pt, GP_TI_PATTERN, pattern_free);
  pt->pub.text = gp_strdup(text);
  pt->source = source_name ? gp_strdup(source_name) : NULL;
  PP P = {.text = text, .p = text, .end = text + strlen(text), .source = pt->source,
          .line0 = line ? line : 1, .col0 = col ? col : 1, .pat = pt};
  P.line = P.line0;
  P.line_start = text;
  int32_t root = pp_alt(&P);
  if (root >= 0) {
    pp_ws(&P);
    if (P.p < P.end) {
      char near[32];
      FAIL(&P, P.p, "unexpected %s after the pattern", pp_near(&P, P.p, near, sizeof near));
    }
  }
  if (P.failed || root < 0) {
    if (!P.failed) gp_error_set(GP_ERR_INTERNAL, "pattern_compile: failed without an error");
    gp_release(pt);
    return NULL;
  }
  pt->root = root;
  for (int32_t i = 0; i < pt->nnodes; i++) { /* kids come before their parents */
    GPPatNode *n = &pt->nodes[i];
    n->pure = n->capture < 0;
    for (int32_t k = 0; k < n->nkids; k++) {
      assert(pt->kids[n->kid0 + k] < i);
      n->pure = n->pure && pt->nodes[pt->kids[n->kid0 + k]].pure;
    }
    if (n->kind == PK_OPT || n->kind == PK_ALT) pt->memo = true;
  }
  root_filter(pt);
  pt->height = pat_height(pt, pt->root);
  return &pt->pub;
}

/* ------------------------------------------------------------------------------------------ */
/* The matcher                                                                                  */

void gp_matcher_init(GPMatcher *m, const GPPattern *p) {
  memset(m, 0, sizeof *m);
  m->p = gp_pat_impl(p);
  m->caps = gp_calloc(p->num_captures ? (size_t)p->num_captures : 1, sizeof *m->caps);
}

void gp_matcher_free(GPMatcher *m) {
  gp_free(m->caps);
  gp_vec_free(&m->nodes);
  gp_vec_free(&m->inputs);
  gp_free(m->trail);
  gp_free(m->memo);
  memset(m, 0, sizeof *m);
}

static size_t memo_slot(const GPMatcher *m, const void *e, int32_t pn) {
  uint64_t h = gp_hash_mix((uint64_t)(uintptr_t)e * 0x9e3779b97f4a7c15ull, (uint64_t)pn);
  return (size_t)(h ^ (h >> 29)) & (m->memo_cap - 1);
}

static bool memo_failed(const GPMatcher *m, const void *e, int32_t pn) {
  if (!m->memo_cap) return false;
  for (size_t s = memo_slot(m, e, pn);; s = (s + 1) & (m->memo_cap - 1)) {
    if (m->memo[s].gen != m->gen) return false;
    if (m->memo[s].e == e && m->memo[s].pn == pn) return true;
  }
}

static void memo_put(GPMatcher *m, const void *e, int32_t pn) {
  if ((m->memo_len + 1) * 2 > m->memo_cap) {
    size_t oc = m->memo_cap;
    __typeof__(m->memo) old = m->memo;
    m->memo_cap = oc ? oc * 2 : 64;
    m->memo = gp_calloc(m->memo_cap, sizeof *m->memo);
    m->memo_len = 0;
    uint32_t g = m->gen;
    for (size_t i = 0; i < oc; i++)
      if (old[i].gen == g) {
        size_t s = memo_slot(m, old[i].e, old[i].pn);
        while (m->memo[s].gen == g) s = (s + 1) & (m->memo_cap - 1);
        m->memo[s] = old[i];
        m->memo_len++;
      }
    gp_free(old);
  }
  size_t s = memo_slot(m, e, pn);
  while (m->memo[s].gen == m->gen) s = (s + 1) & (m->memo_cap - 1);
  m->memo[s].e = e;
  m->memo[s].pn = pn;
  m->memo[s].gen = m->gen;
  m->memo_len++;
}

static void push_input(GPMatcher *m, GPExpr *e) {
  for (size_t i = 0; i < m->inputs.len; i++)
    if (m->inputs.items[i] == e) return;
  gp_vec_push(&m->inputs, e);
}

static bool type_ok(const GPPatternImpl *p, const GPPatNode *pn, const GPExpr *e) {
  const GPType *t = e->checked_type;
  if (!t || t->kind != GP_TYPE_TENSOR || t->n != pn->ndim || !gp_dtype_eq(t->tensor.dtype, pn->dtype)) return false;
  for (int32_t k = 0; k < pn->ndim; k++) {
    int64_t d = p->dims[pn->dim0 + k];
    if (d != GP_DIM_ANY && t->tensor.shape[k] != d) return false;
  }
  return true;
}

static bool attrs_ok(const GPPatternImpl *p, const GPPatNode *pn, const GPCall *c) {
  for (int32_t a = 0; a < pn->nattrs; a++) {
    const GPPatAttr *pa = &p->attrs[pn->attr0 + a];
    const GPAttrValue *v = c->attrs ? gp_attrs_get(c->attrs, pa->key) : NULL;
    if (!v || !gp_attr_value_eq(v, &pa->value)) return false;
  }
  return true;
}

static bool is_call_of(const GPExpr *e, const GPOp *op) {
  return gp_kind(e) == GP_TI_CALL && GP_AS(const GPCall, e)->op == &op->base;
}

static bool m_node(GPMatcher *m, int32_t pi, GPExpr *e);

/* Whether pattern node pi may match node id of ni, read from the index alone (tags, child
 * counts and child ids; no node): a necessary condition, checked `depth` levels below id.
 * Captures, attributes and types are the matcher's.  Recursion on the pattern, not the graph. */
static bool pre(const GPPatternImpl *p, int32_t pi, const GPNodeIndex *ni, int32_t id, int depth) {
  const GPPatNode *pn = &p->nodes[pi];
  const int32_t *pk = p->kids ? p->kids + pn->kid0 : NULL;
  const int32_t *ik = ni->kids + ni->kid_off[id];
  int32_t tag = ni->tag[id], nk = ni->kid_off[id + 1] - ni->kid_off[id];
  switch (pn->kind) {
  case PK_ANY: return true;
  case PK_VAR: return tag == -GP_TI_VAR;
  case PK_CONST: return tag == -GP_TI_CONSTANT;
  case PK_CALL:
  case PK_OPT: {
    bool ok = tag == pn->op->index && nk == pn->nkids + 1; /* child 0 is the callee */
    for (int32_t k = 0; k < pn->nkids && ok && depth > 0; k++) ok = pre(p, pk[k], ni, ik[1 + k], depth - 1);
    return ok || (pn->kind == PK_OPT && pre(p, pk[0], ni, id, depth));
  }
  case PK_TUPLE: {
    bool ok = tag == -GP_TI_TUPLE && nk == pn->nkids;
    for (int32_t k = 0; k < pn->nkids && ok && depth > 0; k++) ok = pre(p, pk[k], ni, ik[k], depth - 1);
    return ok;
  }
  case PK_ITEM: return tag == -GP_TI_TUPLE_GET_ITEM && (depth == 0 || pre(p, pk[0], ni, ik[0], depth - 1));
  case PK_ALT: return pre(p, pk[0], ni, id, depth) || pre(p, pk[1], ni, id, depth);
  default: return true;
  }
}

bool gp_pattern_prematch(const GPPattern *p, const GPNodeIndex *ni, int32_t id) {
  const GPPatternImpl *pi = gp_pat_impl(p);
  return pre(pi, pi->root, ni, id, 2);
}

static bool m_struct(GPMatcher *m, const GPPatNode *pn, GPExpr *e) {
  const GPPatternImpl *p = m->p;
  const int32_t *kids = p->kids ? p->kids + pn->kid0 : NULL; /* a pattern of one leaf has none */
  switch (pn->kind) {
  case PK_ANY:
    push_input(m, e);
    return true;
  case PK_VAR:
    if (gp_kind(e) != GP_TI_VAR) return false;
    push_input(m, e);
    return true;
  case PK_CONST:
    if (gp_kind(e) != GP_TI_CONSTANT) return false;
    gp_vec_push(&m->nodes, e);
    return true;
  case PK_CALL: {
    if (!is_call_of(e, pn->op)) return false;
    const GPCall *c = GP_AS(const GPCall, e);
    if (c->nargs != pn->nkids || !attrs_ok(p, pn, c)) return false;
    gp_vec_push(&m->nodes, e);
    for (int32_t k = 0; k < pn->nkids; k++)
      if (!m_node(m, kids[k], c->args[k])) return false;
    return true;
  }
  case PK_OPT: {
    if (is_call_of(e, pn->op) && GP_AS(const GPCall, e)->nargs == pn->nkids) {
      size_t nn = m->nodes.len, ni = m->inputs.len, nt = m->ntrail;
      const GPCall *c = GP_AS(const GPCall, e);
      gp_vec_push(&m->nodes, e);
      bool ok = true;
      for (int32_t k = 0; k < pn->nkids && ok; k++) ok = m_node(m, kids[k], c->args[k]);
      if (ok) return true;
      m->nodes.len = nn;
      m->inputs.len = ni;
      while (m->ntrail > nt) m->caps[m->trail[--m->ntrail]] = NULL;
    }
    return m_node(m, kids[0], e);
  }
  case PK_TUPLE: {
    if (gp_kind(e) != GP_TI_TUPLE || GP_AS(const GPTuple, e)->n != pn->nkids) return false;
    gp_vec_push(&m->nodes, e);
    for (int32_t k = 0; k < pn->nkids; k++)
      if (!m_node(m, kids[k], GP_AS(GPTuple, e)->fields[k])) return false;
    return true;
  }
  case PK_ITEM:
    if (gp_kind(e) != GP_TI_TUPLE_GET_ITEM || GP_AS(const GPTupleGetItem, e)->index != pn->index) return false;
    gp_vec_push(&m->nodes, e);
    return m_node(m, kids[0], GP_AS(GPTupleGetItem, e)->tuple);
  case PK_ALT: {
    size_t nn = m->nodes.len, ni = m->inputs.len, nt = m->ntrail;
    if (m_node(m, kids[0], e)) return true;
    m->nodes.len = nn;
    m->inputs.len = ni;
    while (m->ntrail > nt) m->caps[m->trail[--m->ntrail]] = NULL;
    return m_node(m, kids[1], e);
  }
  default: assert(0); return false;
  }
}

static bool m_node(GPMatcher *m, int32_t pi, GPExpr *e) {
  const GPPatternImpl *p = m->p;
  const GPPatNode *pn = &p->nodes[pi];
  bool memo = p->memo && pn->pure;
  if (memo && memo_failed(m, e, pi)) return false;
  if (pn->capture >= 0 && m->caps[pn->capture] && m->caps[pn->capture] != e) return false;
  if (pn->has_type && !type_ok(p, pn, e)) {
    if (memo) memo_put(m, e, pi);
    return false;
  }
  size_t nn = m->nodes.len, ni = m->inputs.len, nt = m->ntrail;
  if (!m_struct(m, pn, e)) {
    m->nodes.len = nn;
    m->inputs.len = ni;
    while (m->ntrail > nt) m->caps[m->trail[--m->ntrail]] = NULL;
    if (memo) memo_put(m, e, pi);
    return false;
  }
  if (pn->capture >= 0 && !m->caps[pn->capture]) {
    m->caps[pn->capture] = e;
    if (m->ntrail == m->trail_cap) {
      m->trail_cap = m->trail_cap ? m->trail_cap * 2 : 8;
      m->trail = gp_realloc(m->trail, m->trail_cap * sizeof *m->trail);
    }
    m->trail[m->ntrail++] = pn->capture;
  }
  return true;
}

bool gp_matcher_run(GPMatcher *m, GPExpr *e) {
  m->nodes.len = 0;
  m->inputs.len = 0;
  while (m->ntrail) m->caps[m->trail[--m->ntrail]] = NULL;
  if (++m->gen == 0) { /* wrapped: clear stale stamps */
    if (m->memo) memset(m->memo, 0, m->memo_cap * sizeof *m->memo);
    m->gen = 1;
  }
  m->memo_len = 0;
  return m_node(m, m->p->root, e);
}

int gp_pattern_match(const GPPattern *p, GPExpr *e, GPMatch **out) {
  if (out) *out = NULL;
  if (!p || gp_kind(p) != GP_TI_PATTERN || !e || !gp_is_expr(e) || !out) {
    gp_error_set(GP_ERR_VALUE, "pattern_match: expected a pattern, an expression and an output pointer");
    return -1;
  }
  GPMatcher m;
  gp_matcher_init(&m, p);
  int rc = 0;
  if (gp_pattern_may_match(p, e) && gp_matcher_run(&m, e)) {
    size_t nn = m.nodes.len, ni = m.inputs.len, nc = (size_t)p->num_captures;
    GPMatch *r = gp_calloc(1, sizeof *r + (nn + ni + nc) * sizeof(GPExpr *));
    GPExpr **arr = (GPExpr **)(r + 1);
    if (nn) memcpy(arr, m.nodes.items, nn * sizeof *arr);
    if (ni) memcpy(arr + nn, m.inputs.items, ni * sizeof *arr);
    if (nc) memcpy(arr + nn + ni, m.caps, nc * sizeof *arr);
    r->struct_size = sizeof *r;
    r->abi_version = GP_ABI_VERSION;
    r->pattern = p;
    r->root = e;
    r->num_nodes = (int32_t)nn;
    r->nodes = arr;
    r->num_inputs = (int32_t)ni;
    r->inputs = arr + nn;
    r->num_captures = (int32_t)nc;
    r->captures = arr + nn + ni;
    *out = r;
    rc = 1;
  }
  gp_matcher_free(&m);
  return rc;
}
