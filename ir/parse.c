/*
 * parse.c -- the Relay text parser: what TVM v0.12's `print(mod)` / `mod.astext()` shows, plus
 * our metadata section (docs/DESIGN.md, "Text format").
 *
 * Grammar (a subset of TVM's relay/parser/parser.cc, with the same tokens):
 *
 *   module   := [ '#[version = "0.0.5"]' ] def* [ metadata ]
 *   def      := 'def' '@'name fnsig '{' seq '}'
 *   fnsig    := '(' [ param (',' param)* ] [ ',' attrs ] ')' [ '->' type ]   (attrs alone too)
 *   param    := '%'name [ ':' type ]
 *   seq      := stmt* expr
 *   stmt     := '%'N '=' expr ';'                 graph binding: a name for expr, not a Let
 *             | 'let' '%'name [ ':' type ] '=' expr ';'   a GPLet whose body is the rest
 *             | 'free_var' '%'name [ ':' type ] ';'      a fresh var (as TVM prints free vars)
 *   expr     := atom postfix*
 *   postfix  := '(' [ expr (',' expr)* ] [ ',' attrs ] ')'    call
 *             | '.' INT                                     tuple get-item
 *   atom     := '%'name | '%'N | '@'name | opname (dotted) | literal | 'True' | 'False'
 *             | 'meta' '[' 'relay.Constant' ']' '[' INT ']' [ '/' '*' 'ty=' type ... '*' '/' ]
 *             | '(' ')' | '(' seq ')' | '(' seq ',' [ seq (',' seq)* [','] ] ')'
 *             | 'fn' fnsig '{' seq '}'
 *             | 'if' '(' seq ')' '{' seq '}' 'else' '{' seq '}'
 *   attrs    := key '=' value (',' key '=' value)* [',']
 *   value    := INT | FLOAT | STRING | 'True' | 'False' | 'None' | '[' [ num (',' num)* ] ']'
 *             | '[' '[' num (',' num)* ']' (',' '[' ... ']')* ']'   (TVM's pairs: pad_width, paddings,
 *               crops (gp_attr_in_pairs); flattened)
 *   type     := 'Tensor' '[' '(' [ dim (',' dim)* [','] ] ')' ',' dtype ']'   dim := INT | '?'
 *             | dtype | '(' [ type (',' type)* [','] ] ')' | 'fn' '(' [ type (',' type)* ] ')' '->' type
 *   literal  := 3 (int32; int64 when out of int32 range, like TVM) | 3i64 | 3i8 | 3i16 | 3i32
 *             | 3u8 | 3u16 | 3u32 | 3u64 | 1f | 1.5f | -1f | 1e-05f | 1f16 | 1f32 | 1f64
 *             | 1.5 (no suffix: float32) | inff | -inff | nanf (with optional width)
 *
 * Comments `// ...` and `/ * ... * /` (nested, like TVM) are skipped; the one directly after a
 * meta[relay.Constant][i] reference, when it starts with `ty=`, gives the constant its type.
 *
 * Metadata: our section, `#[metadata]` then lines `relay.Constant[i] = dtype (dims) base64:...`.
 * TVM's own JSON metadata (`#[metadata]` followed by `{`) is skipped: references then resolve to
 * constants of their `ty=` type without data (like `print(mod)` output, which omits the section).
 *
 * Not supported (clear errors): ADTs (type/match/constructors), refs, type parameters, parameter
 * virtual devices, meta[...] references other than relay.Constant, attribute values that are
 * maps, arrays nested deeper than [[...]], string arrays or expressions, binary operators (`+`), `e1; e2` sequences.
 *
 * Nothing recurses on nesting depth: expressions, bodies and types are parsed by a pushdown
 * machine with explicit heap stacks, so deeply nested syntax and long binding chains only cost
 * memory proportional to the input.
 *
 * Locations: every expression built gets the line/col (1-based, bytes) of its first token:
 * calls and get-items that of their callee / tuple, parenthesized tuples their '(', vars their
 * binding occurrence, a def's function its `def` keyword, a shared meta constant its first use.
 * Global vars are one object per name (module->gvars[i] is the same object call sites use).
 */
#include "ir/ir.h"

#include <errno.h>
#include <float.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Tokens and the lexer                                                                         */

enum {
  T_EOF,
  T_ERR,
  T_IDENT,  /* letters, digits, _ and /; dotted: nn.conv2d, relay.Constant */
  T_LOCAL,  /* %name: s/n is the name */
  T_GRAPH,  /* %N: i is N */
  T_GLOBAL, /* @name: s/n is the name */
  T_INT,    /* i (two's complement of the value), dt, suffixed */
  T_FLOAT,  /* f, dt */
  T_STRING, /* s/n: raw contents between the quotes */
  T_LPAREN,
  T_RPAREN,
  T_LBRACK,
  T_RBRACK,
  T_LBRACE,
  T_RBRACE,
  T_COMMA,
  T_SEMI,
  T_COLON,
  T_EQ,
  T_DOT,
  T_ARROW,
  T_QUESTION,
  T_VERSION,  /* #[version = ...]: s/n is the trimmed text after '=' */
  T_METADATA, /* #[metadata]: the rest of the input is the metadata section */
};

typedef struct Tok {
  int kind;
  bool suffixed;      /* T_INT: had an explicit i/u suffix */
  uint32_t line, col; /* of the first byte */
  const char *b;      /* full token text */
  size_t len;
  const char *s; /* name / string contents */
  size_t n;
  int64_t i;
  double f;
  DLDataType dt;
  /* First block comment in the trivia before this token (NULL if none). */
  const char *cmt;
  size_t cmt_len;
  uint32_t cmt_line, cmt_col;
} Tok;

typedef struct Lexer {
  const char *p, *end, *line_start;
  uint32_t line;
  int prev; /* kind of the previous token */
  bool dead;
} Lexer;

enum { C_ID0 = 1, C_ID = 2, C_DIGIT = 4, C_SPACE = 8 };
static unsigned char g_cls[256];
static locale_t g_c_locale;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void init_tables(void) {
  for (int c = 'a'; c <= 'z'; c++) g_cls[c] = C_ID0 | C_ID;
  for (int c = 'A'; c <= 'Z'; c++) g_cls[c] = C_ID0 | C_ID;
  g_cls['_'] = C_ID0 | C_ID;
  g_cls['/'] = C_ID0 | C_ID;
  for (int c = '0'; c <= '9'; c++) g_cls[c] = C_ID | C_DIGIT;
  g_cls[' '] = g_cls['\t'] = g_cls['\r'] = g_cls['\f'] = g_cls['\v'] = C_SPACE;
  g_c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

static inline bool is_id0(unsigned char c) { return g_cls[c] & C_ID0; }
static inline bool is_id(unsigned char c) { return g_cls[c] & C_ID; }
static inline bool is_digit(unsigned char c) { return g_cls[c] & C_DIGIT; }

/* ------------------------------------------------------------------------------------------ */
/* Parser state                                                                                 */

enum { F_SEQ, F_BIND, F_LET, F_PAREN, F_TUPLE, F_CALL, F_IF, F_FN, F_DEF, F_ROOT };
enum { S_STMTS = 0, S_FINAL = 1 };            /* F_SEQ */
enum { S_COND = 0, S_THEN = 1, S_ELSE = 2 };  /* F_IF */

typedef struct Frame {
  uint8_t kind, state;
  uint32_t line, col;
  size_t vbase;      /* value stack base */
  size_t bind_mark;  /* binding log length at entry (F_SEQ, F_FN, F_DEF) */
  uint32_t scope;    /* scope id (F_SEQ, F_FN, F_DEF) */
  int32_t nparams;   /* F_FN, F_DEF */
  int32_t global;    /* F_DEF: index into globals */
  int64_t gnum;      /* F_BIND: the N of %N */
  GPExpr *a, *b;     /* owned: F_CALL callee; F_IF cond, then */
  GPAttrs *attrs;    /* owned: F_CALL, F_FN, F_DEF */
  GPVar *var;        /* owned: F_LET */
  const GPType *ret; /* F_FN, F_DEF */
} Frame;

typedef struct NameEnt {
  const char *s; /* local names (not owned) */
  uint32_t n;
  bool graph;
  int64_t num;
  uint64_t hash;
  int32_t head; /* innermost live binding, -1 if none */
} NameEnt;

typedef struct Bind {
  int64_t key; /* >= 0: index into names; < 0: graph number -key-1 in the direct table */
  int32_t prev;
  uint32_t scope;
  GPExpr *val; /* owned */
} Bind;

typedef struct OpEnt {
  const char *s;
  size_t n;
  uint64_t hash;
  const GPOp *op;
} OpEnt;

typedef struct Global {
  char *name;
  GPGlobalVar *gv; /* owned */
  bool defined;
  uint32_t use_line, use_col; /* first use (0 = none) */
  uint32_t def_line, def_col;
} Global;

typedef struct MetaEnt {
  GPTensor *t;      /* owned; NULL in the cache table */
  GPConstant *c;    /* owned: the constant built for the first reference */
  bool ext;         /* t came from gp_parse_meta's table (a parameter file) */
} MetaEnt;

typedef enum { TF_TUPLE, TF_FNPARAMS, TF_FNRET } TFKind;
typedef struct TFrame {
  TFKind kind;
  size_t base;
  int32_t np;
} TFrame;

typedef struct AttrTmp {
  size_t key_off;
  GPAttrValue v;
  size_t data_off; /* STR, INTS, FLOATS: offset into scratch */
  uint32_t line, col;
} AttrTmp;

typedef struct Parser {
  const char *src;
  size_t len;
  const char *name; /* for messages */
  Lexer lx;
  Tok tk[3];
  int ntk;
  bool failed;
  char *err; /* the first error's full message (re-raised on exit: later core calls may clobber
                the thread's error slot after a lookahead token failed) */
  const char *meta_tok;  /* where the lexer met '#[metadata]' (NULL: not yet) */
  bool meta_done;        /* the metadata section has been parsed (or there is none) */

  Frame *fr;
  size_t nfr, cfr;
  GPExpr **ve; /* value stack (owned references) */
  uint64_t *vloc;
  size_t nve, cve;

  NameEnt *names;
  size_t nnames, cnames;
  int32_t *gdirect; /* %N -> innermost binding, for N < gdirect_limit */
  size_t cgdirect, gdirect_limit;
  int32_t *slots;
  size_t cslots;
  Bind *binds;
  size_t nbinds, cbinds;
  uint32_t next_scope;

  OpEnt *ops;
  size_t nops, cops;

  Global *globals;
  size_t nglobals, cglobals;
  GPStrMap gmap; /* name -> index + 1 */

  GPPtrMap meta; /* index + 1 -> MetaEnt* */

  const GPType **ts;
  size_t nts, cts;
  TFrame *tf;
  size_t ntf, ctf;
  int64_t *dims;
  size_t cdims;

  AttrTmp *at;
  size_t nat, cat;
  GPBuf scratch;
  GPBuf namebuf;

  GPModule *mod;
  bool allow_free_globals;
} Parser;

#define GROW(arr, n, cap, need)                                                                    \
  do {                                                                                             \
    if ((need) > (cap)) {                                                                          \
      size_t nc_ = (cap) ? (cap)*2 : 16;                                                           \
      while (nc_ < (need)) nc_ *= 2;                                                               \
      (arr) = gp_realloc((arr), nc_ * sizeof *(arr));                                              \
      (cap) = nc_;                                                                                 \
    }                                                                                              \
  } while (0)

/* ------------------------------------------------------------------------------------------ */
/* Errors                                                                                       */

static bool fail(Parser *P, uint32_t line, uint32_t col, const char *fmt, ...) GP_FMT(4, 5);

static bool fail(Parser *P, uint32_t line, uint32_t col, const char *fmt, ...) {
  if (P->failed) return false;
  P->failed = true;
  GPBuf b = {0};
  va_list ap;
  va_start(ap, fmt);
  char tmp[256];
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  if (n >= 0 && (size_t)n < sizeof tmp) {
    gp_buf_puts(&b, tmp);
  } else if (n >= 0) {
    char *big = gp_malloc((size_t)n + 1);
    vsnprintf(big, (size_t)n + 1, fmt, ap2);
    gp_buf_puts(&b, big);
    gp_free(big);
  }
  va_end(ap2);
  va_end(ap);
  GPBuf full = {0};
  gp_buf_printf(&full, "%s:%u:%u: error: %s", P->name, (unsigned)line, (unsigned)col, b.data ? b.data : "");
  P->err = gp_buf_take(&full);
  gp_error_set(GP_ERR_PARSE, "%s", P->err);
  gp_buf_free(&b);
  return false;
}

/* Turn the pending error of a core call into a parse error at line:col. */
static bool fail_core(Parser *P, uint32_t line, uint32_t col, const char *prefix) {
  if (P->failed) return false;
  char *msg = gp_strdup(gp_error_kind() != GP_OK ? gp_error_message() : "internal error");
  fail(P, line, col, "%s%s", prefix ? prefix : "", msg);
  gp_free(msg);
  return false;
}

/* Quote a piece of source text for a message: 'text', bytes escaped, truncated. */
static void quote_text(GPBuf *b, const char *s, size_t n) {
  gp_buf_putc(b, '\'');
  size_t lim = n > 40 ? 40 : n;
  for (size_t i = 0; i < lim; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\'' || c == '\\') {
      gp_buf_putc(b, '\\');
      gp_buf_putc(b, (char)c);
    } else if (c >= 0x20 && c < 0x7f) {
      gp_buf_putc(b, (char)c);
    } else {
      gp_buf_printf(b, "\\x%02x", c);
    }
  }
  if (n > lim) gp_buf_puts(b, "...");
  gp_buf_putc(b, '\'');
}

/* Description of a token for "got X" (static storage per call site is avoided: into buf). */
static const char *tok_desc(const Tok *t, GPBuf *b) {
  b->len = 0;
  if (b->data) b->data[0] = 0;
  switch (t->kind) {
  case T_EOF: gp_buf_puts(b, "end of input"); break;
  case T_METADATA: gp_buf_puts(b, "'#[metadata]'"); break;
  case T_STRING: gp_buf_puts(b, "string literal "); quote_text(b, t->b, t->len); break;
  default: quote_text(b, t->b, t->len); break;
  }
  return b->data;
}

/* fail with "<what>, got <token>" at the token. */
static bool fail_tok(Parser *P, const Tok *t, const char *what) {
  if (P->failed) return false;
  GPBuf b = {0};
  fail(P, t->line, t->col, "%s, got %s", what, tok_desc(t, &b));
  gp_buf_free(&b);
  return false;
}

/* ------------------------------------------------------------------------------------------ */
/* Lexer                                                                                        */

static inline uint32_t lx_col(const Lexer *L, const char *p) { return (uint32_t)(p - L->line_start) + 1; }

static void lx_err(Parser *P, Tok *t, const char *p, const char *fmt, ...) GP_FMT(4, 5);
static void lx_err(Parser *P, Tok *t, const char *p, const char *fmt, ...) {
  Lexer *L = &P->lx;
  t->kind = T_ERR;
  t->line = L->line;
  t->col = lx_col(L, p);
  if (!P->failed) {
    char msg[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fail(P, t->line, t->col, "%s", msg);
  }
  L->dead = true;
  L->p = L->end;
}

/* Skip whitespace and comments; records the first block comment into t. Returns false on an
 * unterminated comment (error set). */
static bool lx_trivia(Parser *P, Tok *t) {
  Lexer *L = &P->lx;
  const char *p = L->p, *end = L->end;
  t->cmt = NULL;
  while (p < end) {
    unsigned char c = (unsigned char)*p;
    if (g_cls[c] & C_SPACE) {
      p++;
    } else if (c == '\n') {
      p++;
      L->line++;
      L->line_start = p;
    } else if (c == '/' && p + 1 < end && p[1] == '/') {
      while (p < end && *p != '\n') p++;
    } else if (c == '/' && p + 1 < end && p[1] == '*') {
      const char *start = p;
      uint32_t sl = L->line, sc = lx_col(L, p);
      int depth = 1;
      p += 2;
      while (p < end && depth > 0) {
        if (*p == '\n') {
          p++;
          L->line++;
          L->line_start = p;
        } else if (*p == '*' && p + 1 < end && p[1] == '/') {
          depth--;
          p += 2;
        } else if (*p == '/' && p + 1 < end && p[1] == '*') {
          depth++;
          p += 2;
        } else {
          p++;
        }
      }
      if (depth > 0) {
        L->p = p;
        t->kind = T_ERR;
        t->line = sl;
        t->col = sc;
        fail(P, sl, sc, "unterminated comment");
        L->dead = true;
        L->p = L->end;
        return false;
      }
      if (!t->cmt) {
        t->cmt = start;
        t->cmt_len = (size_t)(p - start);
        t->cmt_line = sl;
        t->cmt_col = sc;
      }
    } else {
      break;
    }
  }
  L->p = p;
  return true;
}

/* An identifier: [A-Za-z_/][A-Za-z0-9_/]* ('.' [A-Za-z_/][A-Za-z0-9_/]*)* */
static const char *lx_ident_end(const char *p, const char *end) {
  while (p < end) {
    if (is_id((unsigned char)*p)) {
      p++;
    } else if (*p == '.' && p + 1 < end && is_id0((unsigned char)p[1])) {
      p += 2;
    } else {
      break;
    }
  }
  return p;
}

static bool parse_width(const char *s, size_t n, int *w) {
  if (n == 0 || n > 2) return false;
  int v = 0;
  for (size_t i = 0; i < n; i++) {
    if (!is_digit((unsigned char)s[i])) return false;
    v = v * 10 + (s[i] - '0');
  }
  *w = v;
  return true;
}

/* inff, nanf, inff16/32/64, nanf16/32/64 → float; returns false when not such a name. */
static bool special_float(const char *s, size_t n, double *v, DLDataType *dt) {
  if (n < 4 || s[3] != 'f') return false;
  bool inf = memcmp(s, "inf", 3) == 0, nan_ = memcmp(s, "nan", 3) == 0;
  if (!inf && !nan_) return false;
  int w = 32;
  if (n > 4 && !parse_width(s + 4, n - 4, &w)) return false;
  if (w != 16 && w != 32 && w != 64) return false;
  *dt = GP_DT(kDLFloat, w);
  *v = inf ? INFINITY : NAN;
  return true;
}

/* A number starting at p (after an optional '-', neg). */
static void lx_number(Parser *P, Tok *t, const char *start, const char *p, bool neg) {
  Lexer *L = &P->lx;
  const char *end = L->end;
  const char *num = p;
  bool is_float = false;
  while (p < end && is_digit((unsigned char)*p)) p++;
  if (L->prev != T_DOT) { /* after '.', an index: digits only */
    if (p + 1 < end && *p == '.' && is_digit((unsigned char)p[1])) {
      is_float = true;
      p++;
      while (p < end && is_digit((unsigned char)*p)) p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
      const char *q = p + 1;
      if (q < end && (*q == '+' || *q == '-')) q++;
      if (q < end && is_digit((unsigned char)*q)) {
        is_float = true;
        p = q;
        while (p < end && is_digit((unsigned char)*p)) p++;
      }
    }
  }
  const char *num_end = p;
  char suf = 0;
  const char *ws = p;
  if (L->prev != T_DOT && p < end && (*p == 'f' || *p == 'i' || *p == 'u')) {
    suf = *p++;
    ws = p;
    while (p < end && is_digit((unsigned char)*p)) p++;
  }
  const char *we = p;
  /* a letter, digit or '_' right after, or '.' and a letter, make a malformed literal ('.'
   * and a digit is a tuple index after an index: %0.1.0) */
  bool bad = p < end && is_id((unsigned char)*p);
  if (!bad && p + 1 < end && *p == '.' && is_id((unsigned char)p[1]))
    bad = L->prev != T_DOT || !is_digit((unsigned char)p[1]);
  if (bad) {
    const char *q = p;
    while (q < end && (is_id((unsigned char)*q) || *q == '.')) q++;
    GPBuf b = {0};
    quote_text(&b, start, (size_t)(q - start));
    lx_err(P, t, start, "invalid numeric literal %s", b.data);
    gp_buf_free(&b);
    return;
  }
  t->kind = is_float || suf == 'f' ? T_FLOAT : T_INT;
  t->b = start;
  t->len = (size_t)(p - start);
  t->suffixed = suf != 0;
  GPBuf qb = {0};
  int width = 0;
  bool has_w = we > ws;
  if (has_w && !parse_width(ws, (size_t)(we - ws), &width)) width = -1;
  if (suf == 'f') {
    if (!has_w) width = 32;
    if (width != 16 && width != 32 && width != 64) {
      quote_text(&qb, start, t->len);
      lx_err(P, t, start, "invalid float width in %s (expected f, f16, f32 or f64)", qb.data);
      gp_buf_free(&qb);
      return;
    }
  } else if (suf == 'i' || suf == 'u') {
    if (is_float) {
      quote_text(&qb, start, t->len);
      lx_err(P, t, start, "invalid integer literal %s", qb.data);
      gp_buf_free(&qb);
      return;
    }
    if (!has_w || (width != 8 && width != 16 && width != 32 && width != 64)) {
      quote_text(&qb, start, t->len);
      lx_err(P, t, start, "invalid integer width in %s (expected %c8, %c16, %c32 or %c64)", qb.data, suf, suf,
             suf, suf);
      gp_buf_free(&qb);
      return;
    }
  }
  if (t->kind == T_FLOAT) {
    size_t nl = (size_t)(num_end - num);
    if (nl > 300) {
      lx_err(P, t, start, "numeric literal is too long");
      return;
    }
    char buf[320];
    memcpy(buf, num, nl);
    buf[nl] = 0;
    errno = 0;
    double v = g_c_locale ? strtod_l(buf, NULL, g_c_locale) : strtod(buf, NULL);
    if (errno == ERANGE && isinf(v)) v = INFINITY, errno = -1;
    if (neg) v = -v;
    DLDataType dt = GP_DT(kDLFloat, suf == 'f' ? width : 32);
    double lim = dt.bits == 16 ? 65504.0 : dt.bits == 32 ? (double)FLT_MAX : DBL_MAX;
    if (errno == -1 || fabs(v) > lim) {
      quote_text(&qb, start, t->len);
      lx_err(P, t, start, "floating point literal %s is out of range for float%d", qb.data, (int)dt.bits);
      gp_buf_free(&qb);
      return;
    }
    t->f = v;
    t->dt = dt;
    return;
  }
  /* integer */
  uint64_t u = 0;
  bool ovf = false;
  for (const char *q = num; q < num_end; q++) {
    unsigned d = (unsigned)(*q - '0');
    if (u > (UINT64_MAX - d) / 10) {
      ovf = true;
      break;
    }
    u = u * 10 + d;
  }
  int bits = suf ? width : ovf ? 64 : 32;
  bool uns = suf == 'u';
  bool ok = !ovf;
  if (ok && uns) {
    ok = !(neg && u != 0) && (bits == 64 || u <= ((1ull << bits) - 1));
  } else if (ok) {
    uint64_t lim = (bits == 64 ? (uint64_t)INT64_MAX : (1ull << (bits - 1)) - 1) + (neg ? 1 : 0);
    if (!suf && u > lim) { /* like TVM: an unsuffixed literal beyond int32 is int64 */
      bits = 64;
      lim = (uint64_t)INT64_MAX + (neg ? 1 : 0);
    }
    ok = u <= lim;
  }
  if (!ok) {
    quote_text(&qb, start, t->len);
    lx_err(P, t, start, "integer literal %s is out of range for %s%d", qb.data, uns ? "uint" : "int", bits);
    gp_buf_free(&qb);
    return;
  }
  t->i = neg ? (int64_t)(0 - u) : (int64_t)u;
  t->dt = GP_DT(uns ? kDLUInt : kDLInt, bits);
}

/* '#[...]' at p. */
static void lx_attr(Parser *P, Tok *t, const char *p) {
  Lexer *L = &P->lx;
  const char *end = L->end, *start = p;
  if (p + 1 >= end || p[1] != '[') {
    lx_err(P, t, p, "'#' must be followed by '[' (as in #[version = \"0.0.5\"])");
    return;
  }
  const char *q = p + 2;
  while (q < end && *q != ']' && *q != '\n') q++;
  if (q >= end || *q != ']') {
    lx_err(P, t, p, "unterminated '#[' attribute");
    return;
  }
  const char *a = p + 2, *b = q;
  while (a < b && (*a == ' ' || *a == '\t')) a++;
  while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r')) b--;
  t->b = start;
  t->len = (size_t)(q + 1 - start);
  if ((size_t)(b - a) == 8 && memcmp(a, "metadata", 8) == 0) {
    t->kind = T_METADATA;
    if (!P->meta_tok) P->meta_tok = start;
    L->p = L->end; /* the rest is the metadata section, parsed separately */
    L->dead = true;
    return;
  }
  if ((size_t)(b - a) >= 7 && memcmp(a, "version", 7) == 0) {
    const char *e = memchr(a, '=', (size_t)(b - a));
    if (!e) {
      lx_err(P, t, p, "malformed version attribute (expected #[version = \"0.0.5\"])");
      return;
    }
    e++;
    while (e < b && (*e == ' ' || *e == '\t')) e++;
    t->kind = T_VERSION;
    t->s = e;
    t->n = (size_t)(b - e);
    L->p = q + 1;
    return;
  }
  GPBuf qb = {0};
  quote_text(&qb, a, (size_t)(b - a));
  lx_err(P, t, p, "unsupported attribute %s (expected #[version = \"0.0.5\"] or #[metadata])", qb.data);
  gp_buf_free(&qb);
}

static void lex(Parser *P, Tok *t) {
  Lexer *L = &P->lx;
  memset(t, 0, sizeof *t);
  if (L->dead) {
    t->kind = P->failed ? T_ERR : T_EOF;
    t->line = L->line;
    t->col = lx_col(L, L->p);
    t->b = L->p;
    return;
  }
  if (!lx_trivia(P, t)) return;
  const char *p = L->p, *end = L->end;
  t->line = L->line;
  t->col = lx_col(L, p);
  t->b = p;
  if (p >= end) {
    t->kind = T_EOF;
    L->prev = T_EOF;
    return;
  }
  unsigned char c = (unsigned char)*p;
  int k = -1;
  switch (c) {
  case '(': k = T_LPAREN; break;
  case ')': k = T_RPAREN; break;
  case '[': k = T_LBRACK; break;
  case ']': k = T_RBRACK; break;
  case '{': k = T_LBRACE; break;
  case '}': k = T_RBRACE; break;
  case ',': k = T_COMMA; break;
  case ';': k = T_SEMI; break;
  case ':': k = T_COLON; break;
  case '=': k = T_EQ; break;
  case '.': k = T_DOT; break;
  case '?': k = T_QUESTION; break;
  default: break;
  }
  if (k >= 0) {
    t->kind = k;
    t->len = 1;
    L->p = p + 1;
    L->prev = k;
    return;
  }
  if (is_digit(c)) {
    lx_number(P, t, p, p, false);
  } else if (c == '-') {
    if (p + 1 < end && p[1] == '>') {
      t->kind = T_ARROW;
      t->len = 2;
    } else if (p + 1 < end && is_digit((unsigned char)p[1])) {
      lx_number(P, t, p, p + 1, true);
    } else {
      const char *q = lx_ident_end(p + 1, end);
      double v;
      DLDataType dt;
      if (q > p + 1 && special_float(p + 1, (size_t)(q - p - 1), &v, &dt)) {
        t->kind = T_FLOAT;
        t->f = -v;
        t->dt = dt;
        t->len = (size_t)(q - p);
      } else {
        lx_err(P, t, p, "unexpected character '-' (binary operators are not supported)");
      }
    }
  } else if (c == '%' || c == '@') {
    const char *q = p + 1;
    if (c == '%' && q < end && is_digit((unsigned char)*q)) {
      uint64_t u = 0;
      bool ovf = false;
      while (q < end && is_digit((unsigned char)*q)) {
        unsigned d = (unsigned)(*q - '0');
        if (u > ((uint64_t)INT64_MAX - d) / 10) ovf = true;
        else u = u * 10 + d;
        q++;
      }
      if (ovf) {
        lx_err(P, t, p, "graph binding number is too large");
        return;
      }
      t->kind = T_GRAPH;
      t->i = (int64_t)u;
    } else {
      if (q >= end || !is_id0((unsigned char)*q)) {
        lx_err(P, t, p, "expected a name after '%c'", c);
        return;
      }
      q = lx_ident_end(q, end);
      t->kind = c == '%' ? T_LOCAL : T_GLOBAL;
      t->s = p + 1;
      t->n = (size_t)(q - p - 1);
    }
    t->len = (size_t)(q - p);
  } else if (is_id0(c)) {
    const char *q = lx_ident_end(p, end);
    t->len = (size_t)(q - p);
    t->s = p;
    t->n = t->len;
    double v;
    DLDataType dt;
    if (special_float(p, t->len, &v, &dt)) {
      t->kind = T_FLOAT;
      t->f = v;
      t->dt = dt;
    } else {
      t->kind = T_IDENT;
    }
  } else if (c == '"') {
    const char *q = p + 1;
    while (q < end && *q != '"') {
      if (*q == '\\' && q + 1 < end) q++;
      if (*q == '\n') {
        L->line++;
        L->line_start = q + 1;
      }
      q++;
    }
    if (q >= end) {
      L->line = t->line; /* report at the opening quote */
      L->line_start = p - (t->col - 1);
      lx_err(P, t, p, "unterminated string literal");
      return;
    }
    t->kind = T_STRING;
    t->s = p + 1;
    t->n = (size_t)(q - p - 1);
    t->len = (size_t)(q + 1 - p);
  } else if (c == '#') {
    lx_attr(P, t, p);
    if (t->kind == T_ERR || t->kind == T_METADATA) return;
    L->prev = t->kind;
    return;
  } else if (c >= 0x20 && c < 0x7f) {
    lx_err(P, t, p, "unexpected character '%c'", c);
  } else {
    lx_err(P, t, p, "unexpected byte 0x%02x", c);
  }
  if (t->kind == T_ERR) return;
  L->p = p + t->len;
  L->prev = t->kind;
}

static inline Tok *peek(Parser *P, int k) {
  while (P->ntk <= k) lex(P, &P->tk[P->ntk++]);
  return &P->tk[k];
}
static inline Tok *cur(Parser *P) { return peek(P, 0); }
static inline void advance(Parser *P) {
  if (P->ntk == 0) peek(P, 0);
  if (P->ntk > 1) memmove(&P->tk[0], &P->tk[1], (size_t)(P->ntk - 1) * sizeof(Tok));
  P->ntk--;
}

static inline bool tok_is(const Tok *t, const char *kw) {
  size_t n = strlen(kw);
  return t->kind == T_IDENT && t->n == n && memcmp(t->s, kw, n) == 0;
}

static bool expect(Parser *P, int kind, const char *what) {
  Tok *t = cur(P);
  if (t->kind != kind) return fail_tok(P, t, what);
  advance(P);
  return true;
}

/* NUL-terminated copy of a slice, valid until the next call. */
static const char *cstr(Parser *P, const char *s, size_t n) {
  P->namebuf.len = 0;
  gp_buf_put(&P->namebuf, s, n);
  gp_buf_putc(&P->namebuf, 0);
  return P->namebuf.data;
}

/* The ".N" right after a name (no spaces): TVM prints ONNX names such as %input.1 as they are.
 * Returns the name length including it, or 0. */
static size_t dotted_suffix(Parser *P, const char *s, size_t n) {
  Tok *d = cur(P);
  if (d->kind != T_DOT || d->b != s + n) return 0;
  Tok *k = peek(P, 1);
  if (k->kind != T_INT || k->suffixed || k->b != d->b + 1) return 0;
  return (size_t)(k->b + k->len - s);
}

/* A %name in a binding position (cur is T_LOCAL): consumed with every ".N" part. */
static void take_binder(Parser *P, const char **s, size_t *n) {
  *s = cur(P)->s;
  *n = cur(P)->n;
  advance(P);
  size_t n2;
  while ((n2 = dotted_suffix(P, *s, *n)) != 0) {
    *n = n2;
    advance(P);
    advance(P);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Scopes: names -> innermost binding                                                           */

static uint64_t hash_slice(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h ^ (h >> 29);
}
static uint64_t hash_num(int64_t v) {
  uint64_t x = (uint64_t)v + 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static void names_rehash(Parser *P) {
  size_t nc = P->cslots ? P->cslots * 2 : 1024;
  gp_free(P->slots);
  P->slots = gp_malloc(nc * sizeof *P->slots);
  memset(P->slots, 0xff, nc * sizeof *P->slots);
  P->cslots = nc;
  for (size_t i = 0; i < P->nnames; i++) {
    size_t j = P->names[i].hash & (nc - 1);
    while (P->slots[j] >= 0) j = (j + 1) & (nc - 1);
    P->slots[j] = (int32_t)i;
  }
}

/* Index of the name entry for (graph, num) or (local, s/n); created when `create`. -1 if absent. */
static int32_t name_find(Parser *P, bool graph, int64_t num, const char *s, size_t n, bool create) {
  uint64_t h = graph ? hash_num(num) : hash_slice(s, n);
  if (P->cslots) {
    size_t j = h & (P->cslots - 1);
    for (;;) {
      int32_t i = P->slots[j];
      if (i < 0) break;
      NameEnt *e = &P->names[i];
      if (e->hash == h && e->graph == graph &&
          (graph ? e->num == num : (e->n == n && memcmp(e->s, s, n) == 0)))
        return i;
      j = (j + 1) & (P->cslots - 1);
    }
  }
  if (!create) return -1;
  if (P->nnames >= (size_t)INT32_MAX - 1 || P->nbinds >= (size_t)INT32_MAX - 1) return -1;
  if ((P->nnames + 1) * 2 > P->cslots) names_rehash(P);
  GROW(P->names, P->nnames, P->cnames, P->nnames + 1);
  int32_t idx = (int32_t)P->nnames++;
  P->names[idx] = (NameEnt){.s = s, .n = (uint32_t)n, .graph = graph, .num = num, .hash = h, .head = -1};
  size_t j = h & (P->cslots - 1);
  while (P->slots[j] >= 0) j = (j + 1) & (P->cslots - 1);
  P->slots[j] = idx;
  return idx;
}

/* The slot holding the innermost binding of a name (NULL when absent and !create). */
static int32_t *head_slot(Parser *P, bool graph, int64_t num, const char *s, size_t n, bool create, int64_t *key) {
  if (graph && (uint64_t)num < P->gdirect_limit) {
    if ((size_t)num >= P->cgdirect) {
      if (!create) return NULL;
      size_t nc = P->cgdirect ? P->cgdirect : 4096;
      while (nc <= (size_t)num) nc *= 2;
      P->gdirect = gp_realloc(P->gdirect, nc * sizeof *P->gdirect);
      memset(P->gdirect + P->cgdirect, 0xff, (nc - P->cgdirect) * sizeof *P->gdirect);
      P->cgdirect = nc;
    }
    *key = -num - 1;
    return &P->gdirect[num];
  }
  int32_t ni = name_find(P, graph, num, s, n, create);
  if (ni < 0) return NULL;
  *key = ni;
  return &P->names[ni].head;
}

/* Bind; takes val. Returns false when the name is already bound in `scope` (val released). */
static bool bind(Parser *P, bool graph, int64_t num, const char *s, size_t n, uint32_t scope, GPExpr *val) {
  int64_t key;
  int32_t *head = head_slot(P, graph, num, s, n, true, &key);
  if (!head || (*head >= 0 && P->binds[*head].scope == scope)) {
    gp_release(val);
    return false;
  }
  GROW(P->binds, P->nbinds, P->cbinds, P->nbinds + 1);
  P->binds[P->nbinds] = (Bind){.key = key, .prev = *head, .scope = scope, .val = val};
  *head = (int32_t)P->nbinds++;
  return true;
}

static GPExpr *lookup(Parser *P, bool graph, int64_t num, const char *s, size_t n) {
  int64_t key;
  int32_t *head = head_slot(P, graph, num, s, n, false, &key);
  if (!head || *head < 0) return NULL;
  return P->binds[*head].val;
}

static void unbind_to(Parser *P, size_t mark) {
  while (P->nbinds > mark) {
    Bind *b = &P->binds[--P->nbinds];
    if (b->key < 0)
      P->gdirect[-(b->key + 1)] = b->prev;
    else
      P->names[b->key].head = b->prev;
    gp_release(b->val);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Stacks                                                                                       */

static size_t push_frame(Parser *P, int kind, uint32_t line, uint32_t col) {
  GROW(P->fr, P->nfr, P->cfr, P->nfr + 1);
  Frame *f = &P->fr[P->nfr];
  memset(f, 0, sizeof *f);
  f->kind = (uint8_t)kind;
  f->line = line;
  f->col = col;
  f->vbase = P->nve;
  f->bind_mark = P->nbinds;
  f->global = -1;
  return P->nfr++;
}

static void frame_release(Frame *f) {
  gp_release(f->a);
  gp_release(f->b);
  gp_release(f->attrs);
  gp_release(f->var);
  f->a = f->b = NULL;
  f->attrs = NULL;
  f->var = NULL;
}

static void pop_frame(Parser *P) {
  frame_release(&P->fr[P->nfr - 1]);
  P->nfr--;
}

static void push_seq(Parser *P, uint32_t line, uint32_t col) {
  size_t i = push_frame(P, F_SEQ, line, col);
  P->fr[i].scope = ++P->next_scope;
}

static void vpush(Parser *P, GPExpr *e, uint32_t line, uint32_t col) {
  if (P->nve + 1 > P->cve) {
    size_t nc = P->cve ? P->cve * 2 : 64;
    P->ve = gp_realloc(P->ve, nc * sizeof *P->ve);
    P->vloc = gp_realloc(P->vloc, nc * sizeof *P->vloc);
    P->cve = nc;
  }
  P->ve[P->nve] = e;
  P->vloc[P->nve] = (uint64_t)line << 32 | col;
  P->nve++;
}

static void vtrunc(Parser *P, size_t base) {
  while (P->nve > base) gp_release(P->ve[--P->nve]);
}

/* Set the location of a node the parser just built (sole owner: written in place; otherwise
 * through gp_expr_annotate).  Takes e, returns the located node. */
static GPExpr *locate(GPExpr *e, uint32_t line, uint32_t col) {
  if (!e || gp_kind(e) == GP_TI_OP) return e;
  if (__atomic_load_n(&e->obj.ref_count, __ATOMIC_RELAXED) == 1) {
    e->line = line;
    e->col = col;
    return e;
  }
  GPExpr *n = gp_expr_annotate(e, e->checked_type, line, col);
  gp_release(e);
  return n;
}

/* ------------------------------------------------------------------------------------------ */
/* Types (explicit stack)                                                                       */

static const GPType *parse_tensor_type(Parser *P) {
  Tok *t = cur(P); /* 'Tensor' */
  uint32_t tl = t->line, tc = t->col;
  advance(P);
  if (!expect(P, T_LBRACK, "expected '[' after 'Tensor'")) return NULL;
  if (!expect(P, T_LPAREN, "expected '(' to start the tensor shape")) return NULL;
  size_t nd = 0;
  while (cur(P)->kind != T_RPAREN) {
    t = cur(P);
    int64_t d;
    if (t->kind == T_QUESTION) {
      d = GP_DIM_ANY;
    } else if (t->kind == T_INT) {
      if (t->i < 0) return fail(P, t->line, t->col, "negative dimension %lld", (long long)t->i), NULL;
      d = t->i;
    } else {
      return fail_tok(P, t, "expected a dimension (integer or '?')"), NULL;
    }
    if (nd >= 64) return fail(P, t->line, t->col, "too many dimensions (limit 64)"), NULL;
    GROW(P->dims, nd, P->cdims, nd + 1);
    P->dims[nd++] = d;
    advance(P);
    t = cur(P);
    if (t->kind == T_COMMA) {
      advance(P);
    } else if (t->kind != T_RPAREN) {
      return fail_tok(P, t, "expected ',' or ')' in tensor shape"), NULL;
    }
  }
  advance(P);
  if (!expect(P, T_COMMA, "expected ',' after the tensor shape")) return NULL;
  t = cur(P);
  if (t->kind != T_IDENT) return fail_tok(P, t, "expected a data type"), NULL;
  DLDataType dt;
  if (gp_dtype_parse(t->s, t->n, &dt) != 0) return fail_core(P, t->line, t->col, NULL), NULL;
  advance(P);
  if (!expect(P, T_RBRACK, "expected ']' after the tensor data type")) return NULL;
  const GPType *ty = gp_type_tensor(dt, (int32_t)nd, P->dims);
  if (!ty) fail_core(P, tl, tc, NULL);
  return ty;
}

static void tpush(Parser *P, const GPType *t) {
  GROW(P->ts, P->nts, P->cts, P->nts + 1);
  P->ts[P->nts++] = t;
}
static void tfpush(Parser *P, TFKind k) {
  GROW(P->tf, P->ntf, P->ctf, P->ntf + 1);
  P->tf[P->ntf++] = (TFrame){k, P->nts, 0};
}

static const GPType *parse_type(Parser *P) {
  size_t tbase = P->nts, fbase = P->ntf;
  const GPType *ty = NULL;
  for (;;) {
    /* want a type */
    Tok *t = cur(P);
    uint32_t tl = t->line, tc = t->col;
    if (t->kind == T_LPAREN) {
      advance(P);
      if (cur(P)->kind == T_RPAREN) {
        advance(P);
        ty = gp_type_tuple(0, NULL);
      } else {
        tfpush(P, TF_TUPLE);
        continue;
      }
    } else if (tok_is(t, "fn")) {
      advance(P);
      if (cur(P)->kind == T_LBRACK) {
        fail(P, cur(P)->line, cur(P)->col, "type parameters are not supported");
        goto bad;
      }
      if (!expect(P, T_LPAREN, "expected '(' after 'fn' in a function type")) goto bad;
      if (cur(P)->kind == T_RPAREN) {
        advance(P);
        if (!expect(P, T_ARROW, "expected '->' in a function type")) goto bad;
        tfpush(P, TF_FNRET);
      } else {
        tfpush(P, TF_FNPARAMS);
      }
      continue;
    } else if (tok_is(t, "Tensor")) {
      ty = parse_tensor_type(P);
    } else if (t->kind == T_IDENT) {
      DLDataType dt;
      if (t->n == 1 && t->s[0] == '_') {
        fail(P, tl, tc, "incomplete types ('_') are not supported");
        goto bad;
      }
      if (gp_dtype_parse(t->s, t->n, &dt) != 0) {
        gp_error_clear();
        GPBuf b = {0};
        quote_text(&b, t->s, t->n);
        fail(P, tl, tc, "unknown type %s (expected Tensor[...], a data type, a tuple or fn type)", b.data);
        gp_buf_free(&b);
        goto bad;
      }
      advance(P);
      ty = gp_type_scalar(dt);
      if (!ty) fail_core(P, tl, tc, NULL);
    } else {
      fail_tok(P, t, "expected a type");
      goto bad;
    }
    if (!ty) goto bad;
    /* have a type */
    for (;;) {
      if (P->ntf == fbase) return ty;
      TFrame *f = &P->tf[P->ntf - 1];
      if (f->kind == TF_FNRET) {
        ty = gp_type_func(f->np, P->ts + f->base, ty);
        P->nts = f->base;
        P->ntf--;
        if (!ty) {
          fail_core(P, tl, tc, NULL);
          goto bad;
        }
        continue;
      }
      tpush(P, ty);
      t = cur(P);
      if (t->kind == T_COMMA) {
        advance(P);
        if (f->kind == TF_TUPLE && cur(P)->kind == T_RPAREN) {
          t = cur(P);
        } else {
          break; /* next element */
        }
      }
      if (t->kind == T_RPAREN) {
        advance(P);
        if (f->kind == TF_TUPLE) {
          ty = gp_type_tuple((int32_t)(P->nts - f->base), P->ts + f->base);
          P->nts = f->base;
          P->ntf--;
          if (!ty) {
            fail_core(P, tl, tc, NULL);
            goto bad;
          }
          continue;
        }
        f->np = (int32_t)(P->nts - f->base);
        f->kind = TF_FNRET;
        if (!expect(P, T_ARROW, "expected '->' in a function type")) goto bad;
        break; /* the return type */
      }
      fail_tok(P, t, f->kind == TF_TUPLE ? "expected ',' or ')' in tuple type" : "expected ',' or ')' in function type");
      goto bad;
    }
  }
bad:
  P->nts = tbase;
  P->ntf = fbase;
  return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Ops, globals                                                                                 */

static const GPOp *op_lookup(Parser *P, const char *s, size_t n) {
  uint64_t h = hash_slice(s, n);
  if (P->cops) {
    size_t j = h & (P->cops - 1);
    while (P->ops[j].s) {
      if (P->ops[j].hash == h && P->ops[j].n == n && memcmp(P->ops[j].s, s, n) == 0) return P->ops[j].op;
      j = (j + 1) & (P->cops - 1);
    }
  }
  const GPOp *op = gp_op_find(cstr(P, s, n));
  if (!op) return NULL;
  if ((P->nops + 1) * 2 > P->cops) {
    size_t nc = P->cops ? P->cops * 2 : 64;
    OpEnt *no = gp_calloc(nc, sizeof *no);
    for (size_t i = 0; i < P->cops; i++)
      if (P->ops[i].s) {
        size_t j = P->ops[i].hash & (nc - 1);
        while (no[j].s) j = (j + 1) & (nc - 1);
        no[j] = P->ops[i];
      }
    gp_free(P->ops);
    P->ops = no;
    P->cops = nc;
  }
  size_t j = h & (P->cops - 1);
  while (P->ops[j].s) j = (j + 1) & (P->cops - 1);
  P->ops[j] = (OpEnt){s, n, h, op};
  P->nops++;
  return op;
}

static int32_t global_get(Parser *P, const char *s, size_t n) {
  const char *name = cstr(P, s, n);
  void *v = gp_strmap_get(&P->gmap, name);
  if (v) return (int32_t)((uintptr_t)v - 1);
  GROW(P->globals, P->nglobals, P->cglobals, P->nglobals + 1);
  Global *g = &P->globals[P->nglobals];
  memset(g, 0, sizeof *g);
  g->name = gp_strdup(name);
  g->gv = gp_global_var_new(g->name);
  if (!g->gv) {
    gp_free(g->name);
    return -1;
  }
  gp_strmap_put(&P->gmap, g->name, (void *)(uintptr_t)(P->nglobals + 1));
  return (int32_t)P->nglobals++;
}

/* ------------------------------------------------------------------------------------------ */
/* Attributes                                                                                   */

static size_t scratch_put(Parser *P, const void *data, size_t n) {
  /* keep 8-byte alignment for arrays */
  while (P->scratch.len % 8) gp_buf_putc(&P->scratch, 0);
  size_t off = P->scratch.len;
  if (n) gp_buf_put(&P->scratch, data, n);
  return off;
}

/* Unescape a string literal's contents into scratch (NUL-terminated); returns offset or -1. */
static bool put_string(Parser *P, const Tok *t, size_t *off) {
  const char *s = t->s;
  size_t n = t->n;
  while (P->scratch.len % 8) gp_buf_putc(&P->scratch, 0);
  *off = P->scratch.len;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == 0) return fail(P, t->line, t->col, "NUL byte in string literal");
    if (c == '\\' && i + 1 < n) {
      char e = s[i + 1];
      char r = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == '"' ? '"' : e == '\\' ? '\\' : 0;
      if (r) {
        gp_buf_putc(&P->scratch, r);
        i++;
        continue;
      }
    }
    if (c >= 0x80) { /* validate UTF-8 */
      int extra = (c >= 0xc2 && c <= 0xdf) ? 1 : (c >= 0xe0 && c <= 0xef) ? 2 : (c >= 0xf0 && c <= 0xf4) ? 3 : -1;
      if (extra < 0 || i + (size_t)extra >= n) return fail(P, t->line, t->col, "invalid UTF-8 in string literal");
      for (int k = 1; k <= extra; k++)
        if (((unsigned char)s[i + (size_t)k] & 0xc0) != 0x80)
          return fail(P, t->line, t->col, "invalid UTF-8 in string literal");
      unsigned char c1 = (unsigned char)s[i + 1];
      if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 > 0x9f) || (c == 0xf0 && c1 < 0x90) ||
          (c == 0xf4 && c1 > 0x8f))
        return fail(P, t->line, t->col, "invalid UTF-8 in string literal");
      gp_buf_put(&P->scratch, s + i, (size_t)extra + 1);
      i += (size_t)extra;
      continue;
    }
    gp_buf_putc(&P->scratch, (char)c);
  }
  gp_buf_putc(&P->scratch, 0);
  return true;
}

/* Parse `key=value, ...` up to (not including) ')'.  op: the callee op (schema attrs) or NULL
 * (a function's free-form attrs).  On success *out is the attrs (NULL when none). */
static bool parse_attrs(Parser *P, const GPOp *op, uint32_t line, uint32_t col, GPAttrs **out) {
  *out = NULL;
  P->nat = 0;
  P->scratch.len = 0;
  while (cur(P)->kind == T_IDENT && peek(P, 1)->kind == T_EQ) {
    Tok *k = cur(P);
    GROW(P->at, P->nat, P->cat, P->nat + 1);
    AttrTmp *a = &P->at[P->nat];
    memset(a, 0, sizeof *a);
    a->line = k->line;
    a->col = k->col;
    for (size_t i = 0; i < P->nat; i++) {
      const char *ok = P->scratch.data + P->at[i].key_off;
      if (strlen(ok) == k->n && memcmp(ok, k->s, k->n) == 0) {
        GPBuf b = {0};
        quote_text(&b, k->s, k->n);
        fail(P, k->line, k->col, "duplicate attribute %s", b.data);
        gp_buf_free(&b);
        return false;
      }
    }
    a->key_off = scratch_put(P, k->s, k->n);
    gp_buf_putc(&P->scratch, 0);
    advance(P);
    advance(P);
    Tok *v = cur(P);
    switch (v->kind) {
    case T_INT: a->v = gp_attr_int(v->i); break;
    case T_FLOAT: a->v = gp_attr_float(v->f); break;
    case T_STRING:
      if (!put_string(P, v, &a->data_off)) return false;
      a->v.kind = GP_ATTR_STR;
      break;
    case T_LBRACK: {
      advance(P);
      size_t cnt = 0;
      bool any_float = false;
      int64_t *iv = NULL;
      double *fv = NULL;
      size_t cap = 0;
      int depth = 0; /* inside an inner array: TVM's [[0, 0], [1, 1]] (pad_width, paddings, crops), flattened */
      while (depth > 0 || cur(P)->kind != T_RBRACK) {
        Tok *e = cur(P);
        if (e->kind == T_LBRACK && depth == 0) {
          const char *key = P->scratch.data + a->key_off;
          if (!gp_attr_in_pairs(op ? op->name : NULL, key)) {
            gp_free(iv);
            gp_free(fv);
            return fail(P, e->line, e->col,
                        "nested arrays are not supported in attribute values (only in pad_width, paddings, crops)");
          }
          depth = 1;
          advance(P);
          continue;
        }
        if (e->kind == T_RBRACK && depth == 1) { /* the end of an inner array */
          depth = 0;
          advance(P);
          e = cur(P);
          if (e->kind == T_COMMA) {
            advance(P);
          } else if (e->kind != T_RBRACK) {
            gp_free(iv);
            gp_free(fv);
            return fail_tok(P, e, "expected ',' or ']' in attribute array");
          }
          continue;
        }
        if (e->kind != T_INT && e->kind != T_FLOAT) {
          gp_free(iv);
          gp_free(fv);
          if (e->kind == T_LBRACK)
            return fail(P, e->line, e->col, "arrays nested deeper than [[...]] are not supported in attribute values");
          if (e->kind == T_STRING)
            return fail(P, e->line, e->col, "arrays of strings are not supported in attribute values");
          return fail_tok(P, e, "expected a number in attribute array");
        }
        if (cnt == cap) {
          cap = cap ? cap * 2 : 8;
          iv = gp_realloc(iv, cap * sizeof *iv);
          fv = gp_realloc(fv, cap * sizeof *fv);
        }
        if (e->kind == T_FLOAT) any_float = true;
        iv[cnt] = e->kind == T_INT ? e->i : 0;
        fv[cnt] = e->kind == T_INT ? (double)e->i : e->f;
        cnt++;
        advance(P);
        e = cur(P);
        if (e->kind == T_COMMA) {
          advance(P);
          if (depth == 1 && cur(P)->kind == T_RBRACK) { /* no trailing comma inside a pair: [1, 2,] */
            gp_free(iv);
            gp_free(fv);
            return fail_tok(P, cur(P), "expected a number in attribute array");
          }
        } else if (e->kind != T_RBRACK) {
          gp_free(iv);
          gp_free(fv);
          return fail_tok(P, e, "expected ',' or ']' in attribute array");
        }
        if (cnt > (size_t)INT32_MAX / 16) {
          gp_free(iv);
          gp_free(fv);
          return fail(P, e->line, e->col, "attribute array is too long");
        }
      }
      a->v.kind = any_float ? GP_ATTR_FLOATS : GP_ATTR_INTS;
      a->v.n = (int32_t)cnt;
      if (any_float)
        a->data_off = scratch_put(P, fv, cnt * sizeof(double));
      else
        a->data_off = scratch_put(P, iv, cnt * sizeof(int64_t));
      gp_free(iv);
      gp_free(fv);
      break;
    }
    case T_IDENT:
      if (tok_is(v, "True") || tok_is(v, "False")) {
        a->v = gp_attr_bool(tok_is(v, "True"));
        break;
      }
      if (tok_is(v, "None")) {
        a->v.kind = GP_ATTR_NONE;
        break;
      }
      if (tok_is(v, "meta"))
        return fail(P, v->line, v->col, "meta[...] references as attribute values are not supported");
      return fail_tok(P, v, "expected an attribute value (number, string, True, False, None or [...])");
    case T_LBRACE:
      return fail(P, v->line, v->col, "map attribute values ({...}) are not supported");
    default:
      return fail_tok(P, v, "expected an attribute value (number, string, True, False, None or [...])");
    }
    advance(P);
    P->nat++;
    if (cur(P)->kind == T_COMMA)
      advance(P);
    else
      break;
  }
  if (P->nat == 0 && !op) return true;
  if (op && op->num_attrs == 0 && P->nat == 0) return true;
  /* resolve offsets */
  const char **keys = gp_malloc((P->nat ? P->nat : 1) * sizeof *keys);
  GPAttrValue *vals = gp_malloc((P->nat ? P->nat : 1) * sizeof *vals);
  for (size_t i = 0; i < P->nat; i++) {
    AttrTmp *a = &P->at[i];
    keys[i] = P->scratch.data + a->key_off;
    vals[i] = a->v;
    if (a->v.kind == GP_ATTR_STR) vals[i].s = P->scratch.data + a->data_off;
    if (a->v.kind == GP_ATTR_INTS) vals[i].ints = (const int64_t *)(void *)(P->scratch.data + a->data_off);
    if (a->v.kind == GP_ATTR_FLOATS) vals[i].floats = (const double *)(void *)(P->scratch.data + a->data_off);
  }
  GPAttrs *attrs = op ? gp_op_attrs_new(op, (int32_t)P->nat, keys, vals) : gp_attrs_new((int32_t)P->nat, keys, vals);
  gp_free(keys);
  gp_free(vals);
  if (!attrs) {
    if (gp_error_kind() == GP_OK) return true; /* no attrs (empty schema) */
    return fail_core(P, line, col, NULL);
  }
  *out = attrs;
  return true;
}

/* ------------------------------------------------------------------------------------------ */
/* Metadata                                                                                     */

/* Find '#[metadata]' outside comments and strings (same rules as the lexer). */
static const char *find_metadata(const char *p, const char *end) {
  while (p < end) {
    char c = *p;
    if (c == '"') {
      p++;
      while (p < end && *p != '"') {
        if (*p == '\\' && p + 1 < end) p++;
        p++;
      }
      p++;
    } else if (c == '/' && p + 1 < end && p[1] == '/') {
      while (p < end && *p != '\n') p++;
    } else if (c == '/' && p + 1 < end && p[1] == '*') {
      int depth = 1;
      p += 2;
      while (p < end && depth) {
        if (*p == '*' && p + 1 < end && p[1] == '/') depth--, p += 2;
        else if (*p == '/' && p + 1 < end && p[1] == '*') depth++, p += 2;
        else p++;
      }
    } else if (c == '#' && p + 1 < end && p[1] == '[') {
      const char *q = p + 2;
      while (q < end && (*q == ' ' || *q == '\t')) q++;
      if ((size_t)(end - q) >= 8 && memcmp(q, "metadata", 8) == 0) {
        q += 8;
        while (q < end && (*q == ' ' || *q == '\t')) q++;
        if (q < end && *q == ']') return p;
      }
      p += 2;
    } else {
      p++;
    }
  }
  return NULL;
}

static int b64val(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

/* Decode RFC 4648 base64 (padded) of exactly `want` bytes into out. */
static bool b64_decode(const char *s, size_t n, unsigned char *out, size_t want, const char **why) {
  if (n % 4) {
    *why = "base64 data length is not a multiple of 4";
    return false;
  }
  size_t pad = 0;
  if (n >= 1 && s[n - 1] == '=') pad++;
  if (n >= 2 && s[n - 2] == '=') pad++;
  if (n / 4 * 3 - pad != want) {
    *why = "base64 data has the wrong length";
    return false;
  }
  size_t o = 0;
  for (size_t i = 0; i < n; i += 4) {
    int v[4];
    for (int k = 0; k < 4; k++) {
      unsigned char c = (unsigned char)s[i + (size_t)k];
      if (c == '=' && i + 4 == n && k >= 4 - (int)pad) {
        v[k] = 0;
        continue;
      }
      v[k] = b64val(c);
      if (v[k] < 0) {
        *why = "invalid base64 character";
        return false;
      }
    }
    uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
    unsigned char b[3] = {(unsigned char)(w >> 16), (unsigned char)(w >> 8), (unsigned char)w};
    for (int k = 0; k < 3 && o < want; k++) out[o++] = b[k];
  }
  return true;
}

static MetaEnt *meta_ent(Parser *P, int64_t idx, bool create) {
  void *key = (void *)(uintptr_t)((uint64_t)idx + 1);
  MetaEnt *m = gp_map_get(&P->meta, key);
  if (!m && create) {
    m = gp_calloc(1, sizeof *m);
    gp_map_put(&P->meta, key, m);
  }
  return m;
}

/* Parse the metadata section (once): when the first meta reference needs it, or when the
 * lexer reached it.  The lexer and lookahead are saved and restored. */
static bool ensure_metadata(Parser *P) {
  if (P->meta_done) return true;
  P->meta_done = true;
  const char *m = P->meta_tok ? P->meta_tok : find_metadata(P->lx.p, P->lx.end);
  if (!m) return true;
  /* line of the marker */
  uint32_t line = 1;
  const char *ls = P->src;
  for (const char *q = P->src; (q = memchr(q, '\n', (size_t)(m - q))) != NULL; q++) line++, ls = q + 1;
  Lexer saved = P->lx;
  Tok saved_tk[3];
  int saved_ntk = P->ntk;
  memcpy(saved_tk, P->tk, sizeof saved_tk);
  P->lx = (Lexer){.p = m, .end = P->src + P->len, .line_start = ls, .line = line, .prev = T_EOF};
  const char *rb = memchr(m, ']', (size_t)(P->src + P->len - m));
  P->lx.p = rb + 1;
  P->ntk = 0;
  /* TVM's JSON metadata: skipped (constants keep their annotated types, no data). */
  {
    const char *q = P->lx.p;
    while (q < P->lx.end && (g_cls[(unsigned char)*q] & C_SPACE || *q == '\n')) q++;
    if (q < P->lx.end && *q == '{') goto done;
  }
  for (;;) {
    Tok *t = cur(P);
    if (t->kind == T_EOF) break;
    uint32_t el = t->line, ec = t->col;
    if (!tok_is(t, "relay.Constant"))
      return fail_tok(P, t, "expected 'relay.Constant[<index>] = <dtype> (<shape>) base64:<data>' in the metadata section");
    advance(P);
    if (!expect(P, T_LBRACK, "expected '[' after relay.Constant")) return false;
    t = cur(P);
    if (t->kind != T_INT || t->suffixed || t->i < 0) return fail_tok(P, t, "expected a constant index");
    int64_t idx = t->i;
    advance(P);
    if (!expect(P, T_RBRACK, "expected ']' after the constant index")) return false;
    if (!expect(P, T_EQ, "expected '=' after relay.Constant[<index>]")) return false;
    t = cur(P);
    DLDataType dt;
    if (t->kind != T_IDENT) return fail_tok(P, t, "expected a data type");
    if (gp_dtype_parse(t->s, t->n, &dt) != 0) return fail_core(P, t->line, t->col, NULL);
    advance(P);
    if (!expect(P, T_LPAREN, "expected '(' to start the constant's shape")) return false;
    size_t nd = 0;
    while (cur(P)->kind != T_RPAREN) {
      t = cur(P);
      if (t->kind != T_INT || t->i < 0) return fail_tok(P, t, "expected a dimension");
      if (nd >= 64) return fail(P, t->line, t->col, "too many dimensions (limit 64)");
      GROW(P->dims, nd, P->cdims, nd + 1);
      P->dims[nd++] = t->i;
      advance(P);
      if (cur(P)->kind == T_COMMA)
        advance(P);
      else if (cur(P)->kind != T_RPAREN)
        return fail_tok(P, cur(P), "expected ',' or ')' in the constant's shape");
    }
    advance(P);
    t = cur(P);
    if (!tok_is(t, "base64")) return fail_tok(P, t, "expected 'base64:<data>'");
    advance(P);
    t = cur(P); /* ':' must be lexed now; the data follows it directly */
    if (t->kind != T_COLON) return fail_tok(P, t, "expected ':' after 'base64'");
    P->ntk = 0; /* drop ':'; lexer is right after it */
    const char *d = P->lx.p, *de = d;
    while (de < P->lx.end && (b64val((unsigned char)*de) >= 0 || *de == '=')) de++;
    uint32_t dl = P->lx.line, dc = lx_col(&P->lx, d);
    P->lx.p = de;
    if (de < P->lx.end && !(g_cls[(unsigned char)*de] & C_SPACE) && *de != '\n' && *de != '/')
      return fail(P, P->lx.line, lx_col(&P->lx, de), "invalid base64 character");
    if (meta_ent(P, idx, false) && meta_ent(P, idx, false)->t)
      return fail(P, el, ec, "duplicate metadata entry relay.Constant[%lld]%s", (long long)idx,
                  meta_ent(P, idx, false)->ext ? " (the parameter file has it too)" : "");
    /* expected byte count, overflow-checked against the data we have */
    size_t dn = (size_t)(de - d);
    size_t have = dn / 4 * 3;
    if (dn % 4 == 0 && dn >= 4) have -= (d[dn - 1] == '=') + (d[dn - 2] == '=');
    unsigned __int128 want = gp_dtype_bytes(dt);
    for (size_t i = 0; i < nd; i++) {
      want *= (uint64_t)P->dims[i];
      if (want > have) want = (unsigned __int128)have + 1;
    }
    if (dn % 4 != 0) return fail(P, dl, dc, "relay.Constant[%lld]: base64 data length is not a multiple of 4", (long long)idx);
    if (want != have) {
      char dts[24];
      if (want > have)
        return fail(P, dl, dc, "relay.Constant[%lld]: %zu bytes of data is too few for %s with this shape",
                    (long long)idx, have, gp_dtype_str(dt, dts));
      return fail(P, dl, dc, "relay.Constant[%lld]: %zu bytes of data but %s with this shape needs %zu",
                  (long long)idx, have, gp_dtype_str(dt, dts), (size_t)want);
    }
    GPTensor *ten = gp_tensor_alloc(dt, (int32_t)nd, P->dims, true);
    if (!ten) return fail_core(P, el, ec, NULL);
    const char *why = NULL;
    if (!b64_decode(d, dn, ten->dl.data, (size_t)want, &why)) {
      gp_release(ten);
      return fail(P, dl, dc, "relay.Constant[%lld]: %s", (long long)idx, why);
    }
    meta_ent(P, idx, true)->t = ten;
  }
done:
  P->lx = saved;
  P->ntk = saved_ntk;
  memcpy(P->tk, saved_tk, sizeof saved_tk);
  return true;
}

/* The `ty=` type in the comment before token t; *ty NULL when there is none. */
static bool parse_ty_comment(Parser *P, const Tok *t, const GPType **ty) {
  *ty = NULL;
  if (!t->cmt) return true;
  const char *s = t->cmt + 2, *e = t->cmt + t->cmt_len - 2;
  while (s < e && (*s == ' ' || *s == '\t')) s++;
  if (e - s < 3 || memcmp(s, "ty=", 3) != 0) return true;
  Lexer saved = P->lx;
  Tok tk[3];
  int ntk = P->ntk;
  memcpy(tk, P->tk, sizeof tk);
  P->lx = (Lexer){.p = s + 3, .end = e, .line_start = t->cmt - (t->cmt_col - 1), .line = t->cmt_line,
                  .prev = T_EOF};
  P->ntk = 0;
  *ty = parse_type(P);
  P->lx = saved;
  P->ntk = ntk;
  memcpy(P->tk, tk, sizeof tk);
  return *ty != NULL;
}

/* meta[relay.Constant][i] at the current token. New reference. */
static GPExpr *parse_meta_ref(Parser *P) {
  Tok *t = cur(P);
  uint32_t ml = t->line, mc = t->col;
  advance(P);
  if (!expect(P, T_LBRACK, "expected '[' after 'meta'")) return NULL;
  t = cur(P);
  if (t->kind != T_IDENT) return fail_tok(P, t, "expected a meta table key (relay.Constant)"), NULL;
  bool is_const = tok_is(t, "relay.Constant");
  GPBuf kb = {0};
  quote_text(&kb, t->s, t->n);
  advance(P);
  if (!expect(P, T_RBRACK, "expected ']' after the meta table key")) return gp_buf_free(&kb), NULL;
  if (!expect(P, T_LBRACK, "expected '[' before the meta index")) return gp_buf_free(&kb), NULL;
  t = cur(P);
  if (t->kind != T_INT || t->i < 0 || t->suffixed) return gp_buf_free(&kb), fail_tok(P, t, "expected a meta index"), NULL;
  int64_t idx = t->i;
  advance(P);
  if (!expect(P, T_RBRACK, "expected ']' after the meta index")) return gp_buf_free(&kb), NULL;
  if (!is_const) {
    fail(P, ml, mc, "unsupported meta reference meta[%s][%lld] (only relay.Constant is supported)", kb.data,
         (long long)idx);
    gp_buf_free(&kb);
    return NULL;
  }
  gp_buf_free(&kb);
  const GPType *ty;
  if (!parse_ty_comment(P, cur(P), &ty)) return NULL;
  if (!ensure_metadata(P)) return NULL;
  MetaEnt *m = meta_ent(P, idx, false);
  if (m && m->c) {
    const GPType *have = gp_tensor_type(m->c->data);
    if (ty && have != ty) {
      GPBuf a = {0}, b = {0};
      gp_type_print(&a, ty);
      gp_type_print(&b, have);
      fail(P, ml, mc, "meta[relay.Constant][%lld] is annotated %s here but %s elsewhere", (long long)idx, a.data,
           b.data);
      gp_buf_free(&a);
      gp_buf_free(&b);
      return NULL;
    }
    return gp_retain(m->c);
  }
  GPTensor *ten;
  if (m && m->t) {
    const GPType *have = gp_tensor_type(m->t);
    if (ty && ty != have) {
      GPBuf a = {0}, b = {0};
      gp_type_print(&a, have);
      gp_type_print(&b, ty);
      fail(P, ml, mc, "meta[relay.Constant][%lld]: the metadata entry has type %s but the reference is annotated %s",
           (long long)idx, a.data, b.data);
      gp_buf_free(&a);
      gp_buf_free(&b);
      return NULL;
    }
    ten = gp_retain(m->t);
  } else {
    if (!ty)
      return fail(P, ml, mc,
                  "meta[relay.Constant][%lld] has no metadata entry and no /* ty=... */ type annotation",
                  (long long)idx),
             NULL;
    if (ty->kind != GP_TYPE_TENSOR)
      return fail(P, ml, mc, "meta[relay.Constant][%lld]: a constant must have a tensor type", (long long)idx), NULL;
    for (int32_t i = 0; i < ty->n; i++)
      if (ty->tensor.shape[i] < 0)
        return fail(P, ml, mc, "meta[relay.Constant][%lld]: a constant must have a static shape", (long long)idx),
               NULL;
    ten = gp_tensor_alloc(ty->tensor.dtype, ty->n, ty->tensor.shape, false);
    if (!ten) return fail_core(P, ml, mc, NULL), NULL;
  }
  GPConstant *c = gp_constant_new(ten);
  gp_release(ten);
  if (!c) return fail_core(P, ml, mc, NULL), NULL;
  c = (GPConstant *)locate(&c->base, ml, mc);
  meta_ent(P, idx, true)->c = gp_retain(c);
  return &c->base;
}

/* ------------------------------------------------------------------------------------------ */
/* Functions                                                                                    */

/* After 'fn' / 'def @name': the signature up to and including '{'.  Frame fi is F_FN/F_DEF. */
static bool parse_fn_sig(Parser *P, size_t fi) {
  P->fr[fi].scope = ++P->next_scope;
  P->fr[fi].bind_mark = P->nbinds;
  P->fr[fi].vbase = P->nve;
  Tok *t = cur(P);
  if (t->kind == T_LBRACK) return fail(P, t->line, t->col, "type parameters are not supported");
  if (!expect(P, T_LPAREN, "expected '(' to start the parameter list")) return false;
  for (;;) {
    t = cur(P);
    if (t->kind == T_RPAREN) break;
    if (t->kind == T_LOCAL) {
      uint32_t pl = t->line, pc = t->col;
      const char *ns;
      size_t nn;
      take_binder(P, &ns, &nn);
      const GPType *ty = NULL;
      t = cur(P);
      if (t->kind == T_LBRACE)
        return fail(P, t->line, t->col, "parameter attributes ({virtual_device=...}) are not supported");
      if (t->kind == T_COLON) {
        advance(P);
        if (!(ty = parse_type(P))) return false;
      }
      GPVar *v = gp_var_new(cstr(P, ns, nn), ty);
      if (!v) return fail_core(P, pl, pc, NULL);
      v = (GPVar *)locate(&v->base, pl, pc);
      if (!bind(P, false, 0, ns, nn, P->fr[fi].scope, gp_retain(v))) {
        gp_release(v);
        return fail(P, pl, pc, "duplicate parameter '%%%.*s'", (int)(nn > 64 ? 64 : nn), ns);
      }
      vpush(P, &v->base, pl, pc);
      P->fr[fi].nparams++;
    } else if (t->kind == T_IDENT && peek(P, 1)->kind == T_EQ) {
      GPAttrs *a;
      if (!parse_attrs(P, NULL, t->line, t->col, &a)) return false;
      P->fr[fi].attrs = a;
      break;
    } else {
      return fail_tok(P, t, "expected a parameter ('%name') or ')'");
    }
    t = cur(P);
    if (t->kind == T_COMMA) {
      advance(P);
    } else if (t->kind != T_RPAREN) {
      return fail_tok(P, t, "expected ',' or ')' after parameter");
    }
  }
  if (!expect(P, T_RPAREN, "expected ')' after function attributes")) return false;
  if (cur(P)->kind == T_ARROW) {
    advance(P);
    if (!(P->fr[fi].ret = parse_type(P))) return false;
  }
  t = cur(P);
  uint32_t bl = t->line, bc = t->col;
  if (!expect(P, T_LBRACE, "expected '{' to start the function body")) return false;
  push_seq(P, bl, bc);
  return true;
}

static GPFunctionExpr *build_fn(Parser *P, Frame *f, GPExpr *body) {
  int32_t np = f->nparams;
  GPVar **params = gp_malloc((size_t)(np ? np : 1) * sizeof *params);
  for (int32_t i = 0; i < np; i++) params[i] = (GPVar *)P->ve[f->vbase + (size_t)i];
  GPFunctionExpr *fn = gp_function_new(np, params, body, f->ret, f->attrs);
  gp_free(params);
  if (!fn) {
    fail_core(P, f->line, f->col, NULL);
    return NULL;
  }
  return (GPFunctionExpr *)locate(&fn->base, f->line, f->col);
}

/* ------------------------------------------------------------------------------------------ */
/* The expression machine                                                                       */

enum { M_STMT, M_EXPR, M_HAVE, M_DELIVER };

static bool attr_start(Parser *P) { return cur(P)->kind == T_IDENT && peek(P, 1)->kind == T_EQ; }

/* The value stack from `base` on: NULL while nothing was ever pushed (no pointer arithmetic on
 * a NULL stack). */
static GPExpr **vals_at(Parser *P, size_t base) { return P->ve ? P->ve + base : NULL; }

/* Build the call of frame fi (args on the value stack) and pop it. New reference or NULL. */
static GPExpr *finish_call(Parser *P) {
  Frame *f = &P->fr[P->nfr - 1];
  size_t n = P->nve - f->vbase;
  if (n > (size_t)INT32_MAX) return fail(P, f->line, f->col, "too many arguments"), NULL;
  if (!f->attrs && gp_kind(f->a) == GP_TI_OP && ((const GPOp *)f->a)->num_attrs > 0) {
    f->attrs = gp_op_attrs_new((const GPOp *)f->a, 0, NULL, NULL); /* defaults */
    if (!f->attrs) return fail_core(P, f->line, f->col, NULL), NULL;
  }
  GPCall *c = gp_call_new(f->a, (int32_t)n, vals_at(P, f->vbase), f->attrs);
  if (!c) return fail_core(P, f->line, f->col, NULL), NULL;
  GPExpr *e = locate(&c->base, f->line, f->col);
  vtrunc(P, f->vbase);
  pop_frame(P);
  return e;
}

static GPExpr *finish_tuple(Parser *P) {
  Frame *f = &P->fr[P->nfr - 1];
  size_t n = P->nve - f->vbase;
  if (n > (size_t)INT32_MAX) return fail(P, f->line, f->col, "tuple is too large"), NULL;
  GPTuple *tu = gp_tuple_new((int32_t)n, vals_at(P, f->vbase));
  if (!tu) return fail_core(P, f->line, f->col, NULL), NULL;
  GPExpr *e = locate(&tu->base, f->line, f->col);
  vtrunc(P, f->vbase);
  pop_frame(P);
  return e;
}

/* Call-arg attrs then ')'; the call frame is on top. */
static bool call_attrs(Parser *P) {
  Frame *f = &P->fr[P->nfr - 1];
  const GPOp *op = gp_kind(f->a) == GP_TI_OP ? (const GPOp *)f->a : NULL;
  if (!op) {
    Tok *t = cur(P);
    return fail(P, t->line, t->col, "attributes are only allowed in calls of operators");
  }
  GPAttrs *a;
  if (!parse_attrs(P, op, f->line, f->col, &a)) return false;
  f = &P->fr[P->nfr - 1];
  f->attrs = a;
  return expect(P, T_RPAREN, "expected ')' after call attributes");
}

/* Runs until the frame at index `base` has been popped.  Result: true on success; for F_ROOT
 * the value is left in *out. */
static bool machine(Parser *P, GPExpr **out) {
  int mode = M_STMT;
  GPExpr *hv = NULL; /* the value in hand (owned) */
  uint32_t hl = 0, hc = 0;
  for (;;) {
    switch (mode) {
    case M_STMT: {
      Tok *t = cur(P);
      Frame *seq = &P->fr[P->nfr - 1];
      if (t->kind == T_GRAPH && peek(P, 1)->kind == T_EQ) {
        int64_t num = t->i;
        uint32_t l = t->line, c = t->col;
        advance(P);
        advance(P);
        size_t fi = push_frame(P, F_BIND, l, c);
        P->fr[fi].gnum = num;
        mode = M_EXPR;
        continue;
      }
      if (t->kind == T_IDENT && (tok_is(t, "let") || tok_is(t, "free_var"))) {
        bool is_let = tok_is(t, "let");
        uint32_t l = t->line, c = t->col;
        advance(P);
        t = cur(P);
        if (t->kind != T_LOCAL) {
          fail_tok(P, t, is_let ? "expected a variable ('%name') after 'let'" : "expected a variable after 'free_var'");
          goto err;
        }
        const char *ns;
        size_t nn;
        uint32_t vl = t->line, vc = t->col;
        take_binder(P, &ns, &nn);
        const GPType *ty = NULL;
        if (cur(P)->kind == T_COLON) {
          advance(P);
          if (!(ty = parse_type(P))) goto err;
        }
        GPVar *v = gp_var_new(cstr(P, ns, nn), ty);
        if (!v) {
          fail_core(P, vl, vc, NULL);
          goto err;
        }
        v = (GPVar *)locate(&v->base, vl, vc);
        if (!is_let) {
          if (!bind(P, false, 0, ns, nn, seq->scope, &v->base)) {
            fail(P, vl, vc, "'%%%.*s' is already defined in this scope", (int)(nn > 64 ? 64 : nn), ns);
            goto err;
          }
          if (!expect(P, T_SEMI, "expected ';' after free_var")) goto err;
          continue;
        }
        size_t fi = push_frame(P, F_LET, l, c);
        P->fr[fi].var = v;
        P->fr[fi].gnum = (int64_t)(ns - P->src); /* name slice for binding */
        P->fr[fi].nparams = (int32_t)(nn > INT32_MAX ? INT32_MAX : nn);
        if (!expect(P, T_EQ, "expected '=' after the let variable")) goto err;
        mode = M_EXPR;
        continue;
      }
      seq->state = S_FINAL;
      mode = M_EXPR;
      continue;
    }

    case M_EXPR: {
      Tok *t = cur(P);
      hl = t->line;
      hc = t->col;
      switch (t->kind) {
      case T_LOCAL: {
        const char *ns = t->s;
        size_t nn = t->n, n2;
        GPExpr *e = lookup(P, false, 0, ns, nn), *e2;
        advance(P);
        /* %input.1: the longer name when it is bound, else a get-item */
        while ((n2 = dotted_suffix(P, ns, nn)) != 0 && (e2 = lookup(P, false, 0, ns, n2)) != NULL) {
          e = e2;
          nn = n2;
          advance(P);
          advance(P);
        }
        if (!e) {
          fail(P, hl, hc, "undefined variable '%%%.*s'", (int)(nn > 64 ? 64 : nn), ns);
          goto err;
        }
        hv = gp_retain(e);
        break;
      }
      case T_GRAPH: {
        GPExpr *e = lookup(P, true, t->i, NULL, 0);
        if (!e) {
          fail(P, hl, hc, "undefined graph binding '%%%lld'", (long long)t->i);
          goto err;
        }
        hv = gp_retain(e);
        advance(P);
        break;
      }
      case T_GLOBAL: {
        int32_t gi = global_get(P, t->s, t->n);
        if (gi < 0) {
          fail_core(P, hl, hc, NULL);
          goto err;
        }
        Global *g = &P->globals[gi];
        if (!g->use_line) {
          g->use_line = hl;
          g->use_col = hc;
          if (!g->defined) {
            g->gv->base.line = hl; /* location: first occurrence */
            g->gv->base.col = hc;
          }
        }
        hv = gp_retain(g->gv);
        advance(P);
        break;
      }
      case T_INT:
      case T_FLOAT: {
        GPTensor *ten =
            t->kind == T_INT ? gp_tensor_scalar_i64(t->dt, t->i) : gp_tensor_scalar_f64(t->dt, t->f);
        if (!ten) {
          fail_core(P, hl, hc, NULL);
          goto err;
        }
        GPConstant *c = gp_constant_new(ten);
        gp_release(ten);
        if (!c) {
          fail_core(P, hl, hc, NULL);
          goto err;
        }
        hv = locate(&c->base, hl, hc);
        advance(P);
        break;
      }
      case T_LPAREN:
        advance(P);
        if (cur(P)->kind == T_RPAREN) {
          advance(P);
          GPTuple *tu = gp_tuple_new(0, NULL);
          if (!tu) {
            fail_core(P, hl, hc, NULL);
            goto err;
          }
          hv = locate(&tu->base, hl, hc);
          break;
        }
        push_frame(P, F_PAREN, hl, hc);
        push_seq(P, hl, hc);
        mode = M_STMT;
        continue;
      case T_IDENT:
        if (tok_is(t, "fn")) {
          advance(P);
          size_t fi = push_frame(P, F_FN, hl, hc);
          if (!parse_fn_sig(P, fi)) goto err;
          mode = M_STMT;
          continue;
        }
        if (tok_is(t, "if")) {
          advance(P);
          if (!expect(P, T_LPAREN, "expected '(' after 'if'")) goto err;
          push_frame(P, F_IF, hl, hc);
          push_seq(P, hl, hc);
          mode = M_STMT;
          continue;
        }
        if (tok_is(t, "True") || tok_is(t, "False")) {
          GPTensor *ten = gp_tensor_scalar_i64(GP_DT_BOOL, tok_is(t, "True"));
          GPConstant *c = ten ? gp_constant_new(ten) : NULL;
          gp_release(ten);
          if (!c) {
            fail_core(P, hl, hc, NULL);
            goto err;
          }
          hv = locate(&c->base, hl, hc);
          advance(P);
          break;
        }
        if (tok_is(t, "meta") && peek(P, 1)->kind == T_LBRACK) {
          if (!(hv = parse_meta_ref(P))) goto err;
          break;
        }
        if (tok_is(t, "let") || tok_is(t, "free_var") || tok_is(t, "else") || tok_is(t, "def") ||
            tok_is(t, "None") || tok_is(t, "meta")) {
          fail_tok(P, t, "expected an expression");
          goto err;
        }
        if (tok_is(t, "match") || tok_is(t, "ref") || tok_is(t, "ref_read") || tok_is(t, "ref_write") ||
            tok_is(t, "type")) {
          GPBuf b = {0};
          quote_text(&b, t->s, t->n);
          fail(P, hl, hc, "%s is not supported (no ADTs or references)", b.data);
          gp_buf_free(&b);
          goto err;
        }
        {
          const GPOp *op = op_lookup(P, t->s, t->n);
          if (!op) {
            GPBuf b = {0};
            quote_text(&b, t->s, t->n);
            fail(P, hl, hc, "unknown operator %s", b.data);
            gp_buf_free(&b);
            goto err;
          }
          hv = (GPExpr *)&op->base;
          advance(P);
        }
        break;
      default:
        fail_tok(P, t, "expected an expression");
        goto err;
      }
      mode = M_HAVE;
      continue;
    }

    case M_HAVE: {
      Tok *t = cur(P);
      if (t->kind == T_LPAREN) {
        int32_t k = gp_kind(hv);
        if (k != GP_TI_OP && k != GP_TI_GLOBAL_VAR && k != GP_TI_FUNCTION_EXPR && k != GP_TI_VAR) {
          fail(P, hl, hc, "cannot call a %s (only operators, global functions, functions and variables)",
               gp_expr_kind_name(hv));
          goto err;
        }
        size_t fi = push_frame(P, F_CALL, hl, hc);
        P->fr[fi].a = hv;
        hv = NULL;
        advance(P);
        if (cur(P)->kind == T_RPAREN) {
          advance(P);
        } else if (attr_start(P)) {
          if (!call_attrs(P)) goto err;
        } else {
          mode = M_EXPR;
          continue;
        }
        if (!(hv = finish_call(P))) goto err;
        continue; /* more postfix */
      }
      if (t->kind == T_DOT) {
        advance(P);
        t = cur(P);
        if (t->kind != T_INT || t->suffixed || t->i < 0 || t->i > INT32_MAX) {
          fail_tok(P, t, "expected a tuple index after '.'");
          goto err;
        }
        GPTupleGetItem *gi = gp_tuple_get_item_new(hv, (int32_t)t->i);
        if (!gi) {
          fail_core(P, hl, hc, NULL);
          goto err;
        }
        gp_release(hv);
        hv = locate(&gi->base, hl, hc);
        advance(P);
        continue;
      }
      mode = M_DELIVER;
    }
      /* fallthrough */
    case M_DELIVER: {
      Frame *f = &P->fr[P->nfr - 1];
      Tok *t = cur(P);
      switch (f->kind) {
      case F_BIND: {
        if (t->kind != T_SEMI) {
          fail_tok(P, t, "expected ';' after the bound expression");
          goto err;
        }
        advance(P);
        int64_t num = f->gnum;
        uint32_t bl = f->line, bc = f->col;
        pop_frame(P);
        Frame *seq = &P->fr[P->nfr - 1];
        GPExpr *v = hv;
        hv = NULL;
        if (!bind(P, true, num, NULL, 0, seq->scope, v)) {
          fail(P, bl, bc, "'%%%lld' is already bound in this scope", (long long)num);
          goto err;
        }
        mode = M_STMT;
        continue;
      }
      case F_LET: {
        if (t->kind != T_SEMI) {
          fail_tok(P, t, "expected ';' after the let value");
          goto err;
        }
        advance(P);
        GPVar *v = f->var;
        f->var = NULL;
        const char *ns = P->src + f->gnum;
        size_t nn = (size_t)f->nparams;
        uint32_t ll = f->line, lc = f->col;
        pop_frame(P);
        vpush(P, &v->base, ll, lc);
        vpush(P, hv, ll, lc);
        hv = NULL;
        /* each let opens a scope (shadowing allowed, as in TVM) */
        bind(P, false, 0, ns, nn, ++P->next_scope, gp_retain(v));
        mode = M_STMT;
        continue;
      }
      case F_SEQ: {
        /* wrap the pending lets around the value */
        GPExpr *body = hv;
        hv = NULL;
        while (P->nve > f->vbase) {
          GPExpr *val = P->ve[P->nve - 1];
          GPVar *var = (GPVar *)P->ve[P->nve - 2];
          uint64_t loc = P->vloc[P->nve - 2];
          GPLet *let = gp_let_new(var, val, body);
          gp_release(body);
          if (!let) {
            fail_core(P, (uint32_t)(loc >> 32), (uint32_t)loc, NULL);
            goto err;
          }
          body = locate(&let->base, (uint32_t)(loc >> 32), (uint32_t)loc);
          gp_release(val);
          gp_release(var);
          P->nve -= 2;
        }
        unbind_to(P, f->bind_mark);
        pop_frame(P);
        hv = body;
        mode = M_DELIVER;
        continue;
      }
      case F_PAREN:
        if (t->kind == T_RPAREN) {
          advance(P);
          hl = f->line;
          hc = f->col;
          pop_frame(P);
          mode = M_HAVE;
          continue;
        }
        if (t->kind == T_COMMA) {
          advance(P);
          f->kind = F_TUPLE;
          vpush(P, hv, 0, 0);
          hv = NULL;
          if (cur(P)->kind == T_RPAREN) {
            advance(P);
            hl = f->line;
            hc = f->col;
            if (!(hv = finish_tuple(P))) goto err;
            mode = M_HAVE;
            continue;
          }
          push_seq(P, cur(P)->line, cur(P)->col);
          mode = M_STMT;
          continue;
        }
        fail_tok(P, t, "expected ')' or ',' after the expression");
        goto err;
      case F_TUPLE:
        vpush(P, hv, 0, 0);
        hv = NULL;
        if (t->kind == T_COMMA) {
          advance(P);
          if (cur(P)->kind != T_RPAREN) {
            push_seq(P, cur(P)->line, cur(P)->col);
            mode = M_STMT;
            continue;
          }
          t = cur(P);
        }
        if (t->kind == T_RPAREN) {
          advance(P);
          hl = f->line;
          hc = f->col;
          if (!(hv = finish_tuple(P))) goto err;
          mode = M_HAVE;
          continue;
        }
        fail_tok(P, t, "expected ',' or ')' in tuple");
        goto err;
      case F_CALL:
        vpush(P, hv, 0, 0);
        hv = NULL;
        if (t->kind == T_COMMA) {
          advance(P);
          if (attr_start(P)) {
            if (!call_attrs(P)) goto err;
          } else if (cur(P)->kind != T_RPAREN) {
            mode = M_EXPR;
            continue;
          } else {
            advance(P);
          }
        } else if (t->kind == T_RPAREN) {
          advance(P);
        } else {
          fail_tok(P, t, "expected ',' or ')' after call argument");
          goto err;
        }
        hl = f->line;
        hc = f->col;
        if (!(hv = finish_call(P))) goto err;
        mode = M_HAVE;
        continue;
      case F_IF:
        if (f->state == S_COND) {
          if (!expect(P, T_RPAREN, "expected ')' after the if condition")) goto err;
          f->a = hv;
          hv = NULL;
        } else if (f->state == S_THEN) {
          if (!expect(P, T_RBRACE, "expected '}' after the then branch")) goto err;
          if (!tok_is(cur(P), "else")) {
            fail_tok(P, cur(P), "expected 'else' after the then branch");
            goto err;
          }
          advance(P);
          f->b = hv;
          hv = NULL;
        } else {
          if (!expect(P, T_RBRACE, "expected '}' after the else branch")) goto err;
          GPIf *ifn = gp_if_new(f->a, f->b, hv);
          gp_release(hv);
          hv = NULL;
          if (!ifn) {
            fail_core(P, f->line, f->col, NULL);
            goto err;
          }
          hl = f->line;
          hc = f->col;
          hv = locate(&ifn->base, hl, hc);
          pop_frame(P);
          mode = M_HAVE;
          continue;
        }
        {
          Tok *b = cur(P);
          uint32_t bl = b->line, bc = b->col;
          if (!expect(P, T_LBRACE, f->state == S_COND ? "expected '{' after the if condition"
                                                      : "expected '{' after 'else'"))
            goto err;
          f->state++;
          push_seq(P, bl, bc);
        }
        mode = M_STMT;
        continue;
      case F_FN:
      case F_DEF: {
        if (t->kind != T_RBRACE) {
          fail_tok(P, t, "expected '}' after the function body");
          goto err;
        }
        advance(P);
        GPFunctionExpr *fn = build_fn(P, f, hv);
        gp_release(hv);
        hv = NULL;
        if (!fn) goto err;
        f = &P->fr[P->nfr - 1];
        unbind_to(P, f->bind_mark);
        vtrunc(P, f->vbase);
        if (f->kind == F_DEF) {
          Global *g = &P->globals[f->global];
          /* one global var object per name: the module shares the call sites' object */
          bool ok = gp_module_add_gvar(P->mod, g->gv, fn, false) == 0;
          gp_release(fn);
          if (!ok) {
            fail_core(P, f->line, f->col, NULL);
            goto err;
          }
          pop_frame(P);
          return true;
        }
        hl = f->line;
        hc = f->col;
        hv = &fn->base;
        pop_frame(P);
        mode = M_HAVE;
        continue;
      }
      case F_ROOT:
        if (t->kind != T_EOF && t->kind != T_METADATA) {
          fail_tok(P, t, "expected end of input after the expression");
          goto err;
        }
        pop_frame(P);
        *out = hv;
        return true;
      default:
        fail(P, f->line, f->col, "internal parser error");
        goto err;
      }
    }
    }
  }
err:
  gp_release(hv);
  return false;
}

/* ------------------------------------------------------------------------------------------ */
/* Entry points                                                                                 */

static void parser_init(Parser *P, const char *text, size_t len, const char *name) {
  pthread_once(&g_once, init_tables);
  memset(P, 0, sizeof *P);
  P->src = text ? text : "";
  P->len = text ? len : 0;
  P->name = name;
  P->lx = (Lexer){.p = P->src, .end = P->src + P->len, .line_start = P->src, .line = 1, .prev = T_EOF};
  size_t lim = P->len / 2;
  P->gdirect_limit = lim < 4096 ? 4096 : lim > (size_t)INT32_MAX ? (size_t)INT32_MAX : lim;
}

static void parser_free(Parser *P) {
  while (P->nfr) pop_frame(P);
  vtrunc(P, 0);
  unbind_to(P, 0);
  gp_free(P->fr);
  gp_free(P->ve);
  gp_free(P->vloc);
  gp_free(P->names);
  gp_free(P->gdirect);
  gp_free(P->slots);
  gp_free(P->binds);
  gp_free(P->ops);
  for (size_t i = 0; i < P->nglobals; i++) {
    gp_release(P->globals[i].gv);
    gp_free(P->globals[i].name);
  }
  gp_free(P->globals);
  gp_strmap_free(&P->gmap);
  for (size_t i = 0; i < P->meta.cap; i++)
    if (P->meta.slots[i].key) {
      MetaEnt *m = P->meta.slots[i].val;
      if (m) {
        gp_release(m->t);
        gp_release(m->c);
        gp_free(m);
      }
    }
  gp_map_free(&P->meta);
  gp_free(P->ts);
  gp_free(P->tf);
  gp_free(P->dims);
  gp_free(P->at);
  gp_buf_free(&P->scratch);
  gp_buf_free(&P->namebuf);
  if (P->failed) gp_error_set(GP_ERR_PARSE, "%s", P->err ? P->err : "parse error");
  gp_free(P->err);
}

static bool parse_version(Parser *P) {
  Tok *t = cur(P);
  if (t->kind != T_VERSION) return true; /* missing: 0.0.5 */
  if (!(t->n == 7 && memcmp(t->s, "\"0.0.5\"", 7) == 0)) {
    GPBuf b = {0};
    quote_text(&b, t->s, t->n);
    fail(P, t->line, t->col, "unsupported text format version %s (only \"0.0.5\" is supported)", b.data);
    gp_buf_free(&b);
    return false;
  }
  advance(P);
  return true;
}

GPModule *gp_parse(const char *text, size_t len, const char *source_name) {
  return gp_parse_meta(text, len, source_name, NULL, 0);
}

GPModule *gp_parse_meta(const char *text, size_t len, const char *source_name, GPTensor *const *meta,
                        int64_t nmeta) {
  gp_ops_init();
  Parser P;
  parser_init(&P, text, len, source_name ? source_name : "<input>");
  if (!text && len) {
    gp_error_set(GP_ERR_VALUE, "parse: NULL text");
    return NULL;
  }
  for (int64_t i = 0; i < nmeta; i++) {
    if (!meta[i]) continue;
    MetaEnt *me = meta_ent(&P, i, true);
    me->t = gp_retain(meta[i]);
    me->ext = true;
  }
  P.mod = gp_module_new(source_name);
  bool ok = parse_version(&P);
  while (ok) {
    Tok *t = cur(&P);
    if (t->kind == T_EOF || t->kind == T_METADATA) break;
    if (t->kind == T_VERSION) {
      ok = fail(&P, t->line, t->col, "the version header must come first");
      break;
    }
    if (tok_is(t, "type") || tok_is(t, "extern")) {
      ok = fail(&P, t->line, t->col, "type definitions are not supported");
      break;
    }
    if (!tok_is(t, "def")) {
      ok = fail_tok(&P, t, "expected 'def' or end of input");
      break;
    }
    uint32_t dl = t->line, dc = t->col;
    advance(&P);
    t = cur(&P);
    if (t->kind != T_GLOBAL) {
      ok = fail_tok(&P, t, "expected a global name ('@name') after 'def'");
      break;
    }
    int32_t gi = global_get(&P, t->s, t->n);
    if (gi < 0) {
      ok = fail_core(&P, t->line, t->col, NULL);
      break;
    }
    Global *g = &P.globals[gi];
    if (g->defined) {
      ok = fail(&P, t->line, t->col, "@%s is already defined at line %u", g->name, (unsigned)g->def_line);
      break;
    }
    g->defined = true;
    g->def_line = t->line;
    g->def_col = t->col;
    g->gv->base.line = t->line;
    g->gv->base.col = t->col;
    advance(&P);
    size_t fi = push_frame(&P, F_DEF, dl, dc);
    P.fr[fi].global = gi;
    ok = parse_fn_sig(&P, fi) && machine(&P, NULL);
  }
  if (ok && cur(&P)->kind == T_METADATA) ok = ensure_metadata(&P);
  if (ok) {
    for (size_t i = 0; i < P.nglobals && ok; i++)
      if (!P.globals[i].defined)
        ok = fail(&P, P.globals[i].use_line, P.globals[i].use_col, "undefined global function @%s",
                  P.globals[i].name);
  }
  if (!ok && !P.failed) fail(&P, 1, 1, "internal parser error");
  GPModule *m = P.mod;
  P.mod = NULL;
  parser_free(&P);
  if (!ok) {
    gp_release(m);
    return NULL;
  }
  return m;
}

GPExpr *gp_parse_expr(const char *text, size_t len, int32_t nvars, GPVar *const *vars) {
  gp_ops_init();
  Parser P;
  parser_init(&P, text, len, "<expr>");
  if ((!text && len) || nvars < 0 || (nvars && !vars)) {
    gp_error_set(GP_ERR_VALUE, "parse_expr: bad arguments");
    return NULL;
  }
  bool ok = true;
  for (int32_t i = 0; i < nvars && ok; i++) {
    if (!vars[i] || gp_kind(vars[i]) != GP_TI_VAR || !vars[i]->name) {
      gp_error_set(GP_ERR_VALUE, "parse_expr: vars[%d] is not a var", (int)i);
      parser_free(&P);
      return NULL;
    }
    bind(&P, false, 0, vars[i]->name, strlen(vars[i]->name), ++P.next_scope, gp_retain(vars[i]));
  }
  GPExpr *out = NULL;
  ok = parse_version(&P);
  if (ok) {
    push_frame(&P, F_ROOT, 1, 1);
    push_seq(&P, 1, 1);
    ok = machine(&P, &out);
  }
  if (ok && P.meta_tok) ok = ensure_metadata(&P);
  if (!ok && !P.failed) fail(&P, 1, 1, "internal parser error");
  parser_free(&P);
  if (!ok) {
    gp_release(out);
    return NULL;
  }
  return out;
}
