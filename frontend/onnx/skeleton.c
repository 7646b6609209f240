/* skeleton.c -- a ModelProto without its weights (ox_skeleton, onnx_impl.h): the protobuf wire
 * format is walked three levels deep (ModelProto.graph = 7, GraphProto.initializer = 5,
 * TensorProto.raw_data = 9) and copied, except the large raw_data payloads, which are written
 * empty and whose place in the file is recorded.  The enclosing messages' lengths are written
 * anew.  Unpacking the skeleton then copies no weights; the importer views them in the mapped
 * file.  Protobuf semantics kept: a field that occurs twice counts last (raw_data), repeated
 * messages append (initializers of two `graph` occurrences, which protobuf merges, keep their
 * order). */
#include "frontend/onnx/onnx_impl.h"

#include <string.h>

typedef struct {
  const uint8_t *p, *end;
} Rd;

/* A varint; false at a malformed or truncated one. */
static bool rd_varint(Rd *r, uint64_t *v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (r->p >= r->end) return false;
    uint8_t b = *r->p++;
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return true;
    }
  }
  return false;
}

/* One field: its number, wire type, and for wire type 2 the payload [*pl, *pl + *plen). */
static bool rd_field(Rd *r, uint32_t *field, uint32_t *wt, const uint8_t **pl, size_t *plen) {
  uint64_t tag, v;
  if (!rd_varint(r, &tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX) return false;
  *field = (uint32_t)(tag >> 3);
  *wt = (uint32_t)(tag & 7);
  switch (*wt) {
  case 0: return rd_varint(r, &v);
  case 1:
    if (r->end - r->p < 8) return false;
    r->p += 8;
    return true;
  case 5:
    if (r->end - r->p < 4) return false;
    r->p += 4;
    return true;
  case 2:
    if (!rd_varint(r, &v) || v > (uint64_t)(r->end - r->p)) return false;
    *pl = r->p;
    *plen = (size_t)v;
    r->p += v;
    return true;
  default: return false; /* groups (3, 4) are not in ONNX's schema */
  }
}

static void put_varint(GPBuf *b, uint64_t v) {
  while (v >= 0x80) {
    gp_buf_putc(b, (char)(v | 0x80));
    v >>= 7;
  }
  gp_buf_putc(b, (char)v);
}

static void put_bytes(GPBuf *b, const uint8_t *p, size_t n) {
  if (n) gp_buf_put(b, (const char *)p, n);
}

/* A length-delimited field from a built message. */
static void put_message(GPBuf *b, uint32_t field, const GPBuf *msg) {
  put_varint(b, (uint64_t)field << 3 | 2);
  put_varint(b, msg->len);
  put_bytes(b, (const uint8_t *)msg->data, msg->len);
}

typedef struct {
  const uint8_t *file;
  OxSpan *spans;
  size_t n, cap;
} Sk;

static bool tensor_skel(Sk *s, const uint8_t *p, size_t len, GPBuf *out) {
  Rd r = {p, p + len};
  OxSpan span = {0, 0};
  while (r.p < r.end) {
    const uint8_t *start = r.p, *pl = NULL;
    uint32_t f, wt;
    size_t plen = 0;
    if (!rd_field(&r, &f, &wt, &pl, &plen)) return false;
    if (f == 9 && wt == 2) {
      if (plen >= OX_VIEW_MIN) {
        span = (OxSpan){(size_t)(pl - s->file), plen};
        put_varint(out, 9 << 3 | 2);
        put_varint(out, 0);
        continue;
      }
      span = (OxSpan){0, 0}; /* a later raw_data replaces an earlier one */
    }
    put_bytes(out, start, (size_t)(r.p - start));
  }
  if (s->n == s->cap) s->cap = s->cap ? 2 * s->cap : 64, s->spans = gp_realloc(s->spans, s->cap * sizeof *s->spans);
  s->spans[s->n++] = span;
  return true;
}

static bool graph_skel(Sk *s, const uint8_t *p, size_t len, GPBuf *out) {
  Rd r = {p, p + len};
  while (r.p < r.end) {
    const uint8_t *start = r.p, *pl = NULL;
    uint32_t f, wt;
    size_t plen = 0;
    if (!rd_field(&r, &f, &wt, &pl, &plen)) return false;
    if (f == 5 && wt == 2) {
      GPBuf t = {0};
      bool ok = tensor_skel(s, pl, plen, &t);
      if (ok) put_message(out, 5, &t);
      gp_buf_free(&t);
      if (!ok) return false;
      continue;
    }
    put_bytes(out, start, (size_t)(r.p - start));
  }
  return true;
}

int ox_skeleton(const uint8_t *data, size_t len, uint8_t **out, size_t *out_len, OxSpan **spans, size_t *nspans) {
  Sk s = {.file = data};
  GPBuf b = {0};
  Rd r = {data, data + len};
  bool ok = true;
  while (ok && r.p < r.end) {
    const uint8_t *start = r.p, *pl = NULL;
    uint32_t f, wt;
    size_t plen = 0;
    if (!(ok = rd_field(&r, &f, &wt, &pl, &plen))) break;
    if (f == 7 && wt == 2) {
      GPBuf g = {0};
      if ((ok = graph_skel(&s, pl, plen, &g))) put_message(&b, 7, &g);
      gp_buf_free(&g);
      continue;
    }
    put_bytes(&b, start, (size_t)(r.p - start));
  }
  if (!ok) {
    gp_buf_free(&b);
    gp_free(s.spans);
    return -1;
  }
  *out_len = b.len;
  *out = (uint8_t *)gp_buf_take(&b);
  *spans = s.spans;
  *nspans = s.n;
  return 0;
}
