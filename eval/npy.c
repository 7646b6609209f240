/* npy.c -- NumPy .npy files: read format versions 1.0, 2.0 and 3.0 (little-endian or
 * byte-order-free dtypes, C or Fortran order), write version 1.0 (little-endian, C order, the
 * header padded with spaces to a multiple of 64 bytes and ended by '\n', as numpy does).
 *
 * dtypes: <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 |b1 ('=' and '|' accepted where numpy may write them;
 * '<' for one-byte types too).  Big-endian and other dtypes: GP_ERR_UNSUPPORTED.  A malformed
 * or truncated file: GP_ERR_PARSE "<path>: <what>". */
#include "common/checked.h"
#include "eval/eval.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAX_RANK 64

typedef struct {
  DLDataType dt;
  char code[4]; /* as written: "f4", "b1", ... */
  size_t size;
} NpyType;

static const NpyType k_types[] = {
    {GP_DT_F16, "f2", 2}, {GP_DT_F32, "f4", 4}, {GP_DT_F64, "f8", 8}, {GP_DT_I8, "i1", 1},
    {GP_DT_I16, "i2", 2}, {GP_DT_I32, "i4", 4}, {GP_DT_I64, "i8", 8}, {GP_DT_U8, "u1", 1},
    {GP_DT_BOOL, "b1", 1},
};

static const NpyType *type_by_dtype(DLDataType dt) {
  for (size_t i = 0; i < GP_ARRAY_LEN(k_types); i++)
    if (gp_dtype_eq(k_types[i].dt, dt)) return &k_types[i];
  return NULL;
}

/* ---- header parsing: a Python dict literal of three keys */

typedef struct {
  const char *s, *end;
  const char *path;
} Lex;

static void skip_ws(Lex *L) {
  while (L->s < L->end && (*L->s == ' ' || *L->s == '\t' || *L->s == '\n' || *L->s == '\r')) L->s++;
}

static int perr(const char *path, const char *what) {
  gp_error_set(GP_ERR_PARSE, "%s: %s", path, what);
  return -1;
}

static bool eat(Lex *L, char c) {
  skip_ws(L);
  if (L->s < L->end && *L->s == c) {
    L->s++;
    return true;
  }
  return false;
}

/* A quoted string (' or "), without escapes (numpy never writes any in these keys). */
static int lex_str(Lex *L, char *buf, size_t cap) {
  skip_ws(L);
  if (L->s >= L->end || (*L->s != '\'' && *L->s != '"')) return perr(L->path, "bad .npy header: expected a string");
  char q = *L->s++;
  size_t n = 0;
  while (L->s < L->end && *L->s != q) {
    if (n + 1 >= cap) return perr(L->path, "bad .npy header: string too long");
    buf[n++] = *L->s++;
  }
  if (L->s >= L->end) return perr(L->path, "bad .npy header: unterminated string");
  L->s++;
  buf[n] = 0;
  return 0;
}

static bool lex_word(Lex *L, const char *w) {
  skip_ws(L);
  size_t n = strlen(w);
  if ((size_t)(L->end - L->s) >= n && memcmp(L->s, w, n) == 0) {
    L->s += n;
    return true;
  }
  return false;
}

typedef struct {
  char descr[64];
  int fortran; /* -1 until seen */
  int32_t ndim; /* -1 until seen */
  int64_t shape[NPY_MAX_RANK];
} Header;

static int parse_shape(Lex *L, Header *h) {
  if (!eat(L, '(')) return perr(L->path, "bad .npy header: 'shape' is not a tuple");
  h->ndim = 0;
  for (;;) {
    if (eat(L, ')')) return 0;
    skip_ws(L);
    if (L->s >= L->end || *L->s < '0' || *L->s > '9') return perr(L->path, "bad .npy header: bad dimension in 'shape'");
    int64_t v = 0;
    while (L->s < L->end && *L->s >= '0' && *L->s <= '9') {
      if (v > (INT64_MAX - 9) / 10) return perr(L->path, "bad .npy header: dimension too large");
      v = v * 10 + (*L->s++ - '0');
    }
    if (L->s < L->end && *L->s == 'L') L->s++; /* Python 2 longs */
    if (h->ndim >= NPY_MAX_RANK) return perr(L->path, "bad .npy header: too many dimensions");
    h->shape[h->ndim++] = v;
    if (eat(L, ',')) continue;
    if (eat(L, ')')) return 0;
    return perr(L->path, "bad .npy header: expected ',' or ')' in 'shape'");
  }
}

static int parse_header(const char *text, size_t len, const char *path, Header *h) {
  Lex L = {text, text + len, path};
  h->descr[0] = 0;
  h->fortran = -1;
  h->ndim = -1;
  if (!eat(&L, '{')) return perr(path, "bad .npy header: expected '{'");
  for (;;) {
    if (eat(&L, '}')) break;
    char key[32];
    if (lex_str(&L, key, sizeof key) != 0) return -1;
    if (!eat(&L, ':')) return perr(path, "bad .npy header: expected ':'");
    if (strcmp(key, "descr") == 0) {
      skip_ws(&L);
      if (L.s < L.end && *L.s == '[') {
        gp_error_set(GP_ERR_UNSUPPORTED, "%s: structured dtypes are not supported", path);
        return -1;
      }
      if (lex_str(&L, h->descr, sizeof h->descr) != 0) return -1;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (lex_word(&L, "True"))
        h->fortran = 1;
      else if (lex_word(&L, "False"))
        h->fortran = 0;
      else
        return perr(path, "bad .npy header: 'fortran_order' is not True or False");
    } else if (strcmp(key, "shape") == 0) {
      if (parse_shape(&L, h) != 0) return -1;
    } else {
      GPBuf b = {0};
      gp_buf_printf(&b, "bad .npy header: unknown key '%s'", key);
      int r = perr(path, b.data);
      gp_buf_free(&b);
      return r;
    }
    if (eat(&L, ',')) continue;
    if (eat(&L, '}')) break;
    return perr(path, "bad .npy header: expected ',' or '}'");
  }
  skip_ws(&L);
  if (L.s != L.end) return perr(path, "bad .npy header: text after the dictionary");
  if (!h->descr[0]) return perr(path, "bad .npy header: no 'descr'");
  if (h->fortran < 0) return perr(path, "bad .npy header: no 'fortran_order'");
  if (h->ndim < 0) return perr(path, "bad .npy header: no 'shape'");
  return 0;
}

static const NpyType *parse_descr(const char *path, const char *d) {
  char order = d[0];
  const char *code = d;
  if (order == '<' || order == '>' || order == '|' || order == '=') code = d + 1;
  else order = 0;
  const NpyType *t = NULL;
  for (size_t i = 0; i < GP_ARRAY_LEN(k_types); i++)
    if (strcmp(k_types[i].code, code) == 0) t = &k_types[i];
  if (!t) {
    gp_error_set(GP_ERR_UNSUPPORTED, "%s: dtype '%s' is not supported (supported: <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 |b1)",
                 path, d);
    return NULL;
  }
  if (order == '>' && t->size > 1) {
    gp_error_set(GP_ERR_UNSUPPORTED, "%s: big-endian dtype '%s' is not supported (write it little-endian: '<%s')",
                 path, d, code);
    return NULL;
  }
  return t;
}

GPTensor *gp_npy_parse(const void *data, size_t len, const char *path) {
  if (!path) path = "<npy>";
  const unsigned char *p = data;
  if (!p && len) {
    perr(path, "no data");
    return NULL;
  }
  if (len < 6 || memcmp(p, NPY_MAGIC, 6) != 0) {
    bool prefix = len < 6 && (len == 0 || memcmp(p, NPY_MAGIC, len) == 0);
    perr(path, prefix ? "truncated .npy file (no magic string)" : "not a .npy file (bad magic string)");
    return NULL;
  }
  if (len < 10) {
    perr(path, "truncated .npy header");
    return NULL;
  }
  unsigned major = p[6], minor = p[7];
  size_t hlen, pre;
  if (major == 1) {
    hlen = (size_t)p[8] | (size_t)p[9] << 8;
    pre = 10;
  } else if (major == 2 || major == 3) {
    if (len < 12) {
      perr(path, "truncated .npy header");
      return NULL;
    }
    hlen = (size_t)p[8] | (size_t)p[9] << 8 | (size_t)p[10] << 16 | (size_t)p[11] << 24;
    pre = 12;
  } else {
    gp_error_set(GP_ERR_UNSUPPORTED, "%s: .npy format version %u.%u is not supported (1.0 to 3.0)", path, major, minor);
    return NULL;
  }
  if (hlen > len - pre) {
    perr(path, "truncated .npy header");
    return NULL;
  }
  Header h;
  if (parse_header((const char *)p + pre, hlen, path, &h) != 0) return NULL;
  const NpyType *t = parse_descr(path, h.descr);
  if (!t) return NULL;
  /* The data's length is checked against the header's shape before anything is allocated. */
  int64_t count;
  size_t numel, nbytes, avail = len - pre - hlen;
  if (!gp_dims_count(h.ndim, h.shape, GP_MAX_TENSOR_ELEMS, &count) || !gp_count_bytes(count, t->size, &nbytes)) {
    GPBuf b = {0};
    gp_buf_printf(&b, "bad .npy header: shape %s has too many elements (more than 2^48)", gp_dims_str(h.ndim, h.shape).s);
    perr(path, b.data);
    gp_buf_free(&b);
    return NULL;
  }
  numel = (size_t)count;
  if (avail < nbytes) {
    GPBuf b = {0};
    gp_buf_printf(&b, "truncated .npy data: %zu bytes, expected %zu", avail, nbytes);
    perr(path, b.data);
    gp_buf_free(&b);
    return NULL;
  }
  if (avail > nbytes) {
    GPBuf b = {0};
    gp_buf_printf(&b, "%zu bytes after the .npy data (expected %zu)", avail - nbytes, nbytes);
    perr(path, b.data);
    gp_buf_free(&b);
    return NULL;
  }
  GPTensor *x = gp_tensor_alloc(t->dt, h.ndim, h.shape, true);
  if (!x) {
    gp_error_set_kind(GP_ERR_PARSE);
    gp_error_prefix("%s", path);
    return NULL;
  }
  const unsigned char *src = p + pre + hlen;
  unsigned char *dst = x->dl.data;
  if (!h.fortran || h.ndim < 2) {
    if (nbytes) memcpy(dst, src, nbytes);
  } else if (numel) {
    /* column-major source: walk the destination in row-major order with an odometer */
    int64_t fstride[NPY_MAX_RANK], idx[NPY_MAX_RANK];
    int64_t s = 1;
    for (int32_t d = 0; d < h.ndim; d++) {
      fstride[d] = s;
      s *= h.shape[d];
      idx[d] = 0;
    }
    int64_t off = 0;
    for (size_t i = 0; i < numel; i++) {
      memcpy(dst + i * t->size, src + (size_t)off * t->size, t->size);
      for (int32_t d = h.ndim - 1; d >= 0; d--) {
        if (++idx[d] < h.shape[d]) {
          off += fstride[d];
          break;
        }
        off -= fstride[d] * (h.shape[d] - 1);
        idx[d] = 0;
      }
    }
  }
  if (t->dt.code == kDLUInt && t->dt.bits == 1)
    for (size_t i = 0; i < numel; i++) dst[i] = dst[i] != 0;
  return x;
}

GPTensor *gp_npy_read(const char *path) {
  size_t len;
  char *data = gp_read_file(path, &len);
  if (!data) return NULL;
  GPTensor *t = gp_npy_parse(data, len, path);
  gp_free(data);
  return t;
}

int gp_npy_write(const char *path, const GPTensor *t) {
  if (!t) {
    gp_error_set(GP_ERR_VALUE, "%s: no tensor to write", path);
    return -1;
  }
  const NpyType *nt = type_by_dtype(t->dl.dtype);
  if (!nt) {
    char dt[24];
    gp_error_set(GP_ERR_UNSUPPORTED, "%s: cannot write dtype %s to .npy", path, gp_dtype_str(t->dl.dtype, dt));
    return -1;
  }
  size_t numel = 1;
  for (int32_t i = 0; i < t->dl.ndim; i++) numel *= (size_t)t->dl.shape[i];
  if (numel && !t->dl.data) {
    gp_error_set(GP_ERR_VALUE, "%s: the tensor has no data", path);
    return -1;
  }
  GPBuf h = {0};
  gp_buf_printf(&h, "{'descr': '%c%s', 'fortran_order': False, 'shape': (", nt->size == 1 ? '|' : '<', nt->code);
  for (int32_t i = 0; i < t->dl.ndim; i++)
    gp_buf_printf(&h, "%s%lld", i ? ", " : "", (long long)t->dl.shape[i]);
  gp_buf_puts(&h, t->dl.ndim == 1 ? ",), }" : "), }");
  size_t total = 10 + h.len + 1;
  size_t pad = (64 - total % 64) % 64;
  for (size_t i = 0; i < pad; i++) gp_buf_putc(&h, ' ');
  gp_buf_putc(&h, '\n');
  if (h.len > 65535) {
    gp_buf_free(&h);
    gp_error_set(GP_ERR_VALUE, "%s: .npy header too long", path);
    return -1;
  }
  FILE *f = fopen(path, "wb");
  if (!f) {
    gp_buf_free(&h);
    gp_error_set(GP_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    return -1;
  }
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(h.len & 0xff),
                           (unsigned char)(h.len >> 8)};
  bool ok = fwrite(pre, 1, sizeof pre, f) == sizeof pre && fwrite(h.data, 1, h.len, f) == h.len;
  gp_buf_free(&h);
  if (ok && numel) {
    if (gp_tensor_is_compact(t)) {
      const char *src = (const char *)t->dl.data + t->dl.byte_offset;
      ok = fwrite(src, nt->size, numel, f) == numel;
    } else {
      /* strided: element by element through a row-major odometer */
      const char *base = (const char *)t->dl.data + t->dl.byte_offset;
      int32_t nd = t->dl.ndim;
      int64_t idx[NPY_MAX_RANK] = {0};
      int64_t off = 0;
      char buf[4096];
      size_t bl = 0;
      for (size_t i = 0; i < numel && ok; i++) {
        memcpy(buf + bl, base + off * (int64_t)nt->size, nt->size);
        bl += nt->size;
        if (bl + 8 > sizeof buf) {
          ok = fwrite(buf, 1, bl, f) == bl;
          bl = 0;
        }
        for (int32_t d = nd - 1; d >= 0; d--) {
          if (++idx[d] < t->dl.shape[d]) {
            off += t->dl.strides[d];
            break;
          }
          off -= t->dl.strides[d] * (t->dl.shape[d] - 1);
          idx[d] = 0;
        }
      }
      if (ok && bl) ok = fwrite(buf, 1, bl, f) == bl;
    }
  }
  if (fclose(f) != 0) ok = false;
  if (!ok) {
    gp_error_set(GP_ERR_IO, "%s: write error: %s", path, strerror(errno));
    remove(path);
    return -1;
  }
  return 0;
}
