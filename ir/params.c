/*
 * params.c -- parameter files in TVM's save_param_dict byte format (what
 * tvm.relay.save_param_dict writes and tvm.relay.load_param_dict / runtime.LoadParams read;
 * TVM v0.12 src/runtime/file_utils.cc SaveParams and include/tvm/runtime/ndarray.h
 * SaveDLTensor).  Every integer is little-endian:
 *
 *   u64 0xF7E58D4F05049CB7 (kTVMNDArrayListMagic)   u64 0 (reserved)
 *   u64 number of names, then per name: u64 length, the bytes (no NUL)
 *   u64 number of arrays (equal to the number of names), then per array:
 *     u64 0xDD5E40F096B4A13F (kTVMNDArrayMagic)   u64 0 (reserved)
 *     i32 device_type (1, kDLCPU)   i32 device_id (0)
 *     i32 ndim   u8 dtype code   u8 dtype bits   u16 dtype lanes
 *     i64 shape[ndim]
 *     i64 data bytes (= ceil(bits / 8) * number of elements)
 *     the data: compact row-major little-endian elements
 *
 * Reading streams the file once: array data goes straight into the tensors' buffers.  Every
 * length and count is checked against the bytes left before anything is allocated for it, so a
 * truncated or corrupt file is an error naming the file, the byte offset and what is wrong.
 */
#include "ir/ir.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define LIST_MAGIC 0xF7E58D4F05049CB7ull
#define ARRAY_MAGIC 0xDD5E40F096B4A13Full

void gp_params_free(GPParams *p) {
  if (!p) return;
  for (int64_t i = 0; i < p->n; i++) {
    gp_free(p->names[i]);
    gp_release(p->tensors[i]);
  }
  gp_free(p->names);
  gp_free(p->tensors);
  memset(p, 0, sizeof *p);
}

/* ---- writing */

typedef struct W {
  FILE *f;
  bool bad;
} W;

static void w_bytes(W *w, const void *p, size_t n) {
  if (!w->bad && n && fwrite(p, 1, n, w->f) != n) w->bad = true;
}

static void w_u64(W *w, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
  w_bytes(w, b, 8);
}

static void w_i32(W *w, int32_t v) {
  uint32_t u = (uint32_t)v;
  uint8_t b[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
  w_bytes(w, b, 4);
}

static size_t elem_bytes(DLDataType t) { return (size_t)((t.bits + 7) / 8); }

/* The elements of a non-compact tensor, one at a time in row-major order. */
static void w_strided(W *w, const DLTensor *dl, size_t es, int64_t numel) {
  int64_t idx[64] = {0};
  const uint8_t *base = (const uint8_t *)dl->data + dl->byte_offset;
  for (int64_t k = 0; k < numel; k++) {
    int64_t off = 0;
    for (int32_t d = 0; d < dl->ndim; d++) off += idx[d] * dl->strides[d];
    w_bytes(w, base + off * (int64_t)es, es);
    for (int32_t d = dl->ndim - 1; d >= 0; d--) {
      if (++idx[d] < dl->shape[d]) break;
      idx[d] = 0;
    }
  }
}

int gp_params_write(FILE *f, const char *what, int64_t n, const char *const *names, GPTensor *const *tensors) {
  if (!what) what = "params";
  for (int64_t i = 0; i < n; i++) {
    const DLTensor *dl = tensors[i] ? &tensors[i]->dl : NULL;
    if (!names[i] || !dl || !dl->data) {
      gp_error_set(GP_ERR_VALUE, "%s: parameter %lld (%s) has no data", what, (long long)i,
                   names[i] ? names[i] : "unnamed");
      return -1;
    }
    if (dl->dtype.lanes != 1 || dl->ndim > 64) {
      gp_error_set(GP_ERR_VALUE, "%s: parameter %s: vector dtypes and more than 64 dims are not supported", what,
                   names[i]);
      return -1;
    }
  }
  W w = {.f = f};
  w_u64(&w, LIST_MAGIC);
  w_u64(&w, 0);
  w_u64(&w, (uint64_t)n);
  for (int64_t i = 0; i < n; i++) {
    size_t len = strlen(names[i]);
    w_u64(&w, len);
    w_bytes(&w, names[i], len);
  }
  w_u64(&w, (uint64_t)n);
  for (int64_t i = 0; i < n && !w.bad; i++) {
    const DLTensor *dl = &tensors[i]->dl;
    w_u64(&w, ARRAY_MAGIC);
    w_u64(&w, 0);
    w_i32(&w, kDLCPU);
    w_i32(&w, 0);
    w_i32(&w, dl->ndim);
    uint8_t dt[4] = {dl->dtype.code, dl->dtype.bits, (uint8_t)dl->dtype.lanes, (uint8_t)(dl->dtype.lanes >> 8)};
    w_bytes(&w, dt, 4);
    int64_t numel = 1;
    for (int32_t d = 0; d < dl->ndim; d++) {
      w_u64(&w, (uint64_t)dl->shape[d]);
      numel *= dl->shape[d];
    }
    size_t es = elem_bytes(dl->dtype);
    w_u64(&w, (uint64_t)numel * es);
    if (gp_tensor_is_compact(tensors[i]))
      w_bytes(&w, (const uint8_t *)dl->data + dl->byte_offset, (size_t)numel * es);
    else
      w_strided(&w, dl, es, numel);
  }
  if (w.bad) {
    gp_error_set(GP_ERR_IO, "%s: write error: %s", what, strerror(errno));
    return -1;
  }
  return 0;
}

int gp_params_save(const char *path, int64_t n, const char *const *names, GPTensor *const *tensors) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    gp_error_set(GP_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    return -1;
  }
  int rc = gp_params_write(f, path, n, names, tensors);
  if (fclose(f) != 0 && rc == 0) {
    gp_error_set(GP_ERR_IO, "%s: write error: %s", path, strerror(errno));
    rc = -1;
  }
  return rc;
}

/* ---- reading */

typedef struct R {
  FILE *f;
  const char *what;
  uint64_t off, size; /* bytes read so far, total bytes */
} R;

static int r_fail(R *r, const char *fmt, ...) GP_FMT(2, 3);
static int r_fail(R *r, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  gp_error_set(GP_ERR_PARSE, "%s: byte %llu: %s (not a TVM parameter file, or a damaged one)", r->what,
               (unsigned long long)r->off, msg);
  return -1;
}

static int r_bytes(R *r, void *p, uint64_t n, const char *field) {
  if (n > r->size - r->off)
    return r_fail(r, "the file ends inside %s (%llu bytes wanted, %llu left)", field, (unsigned long long)n,
                  (unsigned long long)(r->size - r->off));
  if (n && fread(p, 1, (size_t)n, r->f) != (size_t)n) {
    gp_error_set(GP_ERR_IO, "%s: read error at byte %llu", r->what, (unsigned long long)r->off);
    return -1;
  }
  r->off += n;
  return 0;
}

static int r_u64(R *r, uint64_t *v, const char *field) {
  uint8_t b[8];
  if (r_bytes(r, b, 8, field) != 0) return -1;
  *v = 0;
  for (int i = 7; i >= 0; i--) *v = *v << 8 | b[i];
  return 0;
}

static int r_i32(R *r, int32_t *v, const char *field) {
  uint8_t b[4];
  if (r_bytes(r, b, 4, field) != 0) return -1;
  *v = (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
  return 0;
}

static bool dtype_known(DLDataType t) {
  if (t.lanes != 1) return false;
  switch (t.code) {
  case kDLFloat: return t.bits == 16 || t.bits == 32 || t.bits == 64;
  case kDLInt: return t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
  case kDLUInt: return t.bits == 1 || t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
  case kDLBfloat: return t.bits == 16;
  default: return false;
  }
}

static int read_array(R *r, int64_t i, const char *name, GPTensor **out) {
  uint64_t magic, reserved;
  uint64_t at = r->off;
  if (r_u64(r, &magic, "an array header") != 0 || r_u64(r, &reserved, "an array header") != 0) return -1;
  if (magic != ARRAY_MAGIC) {
    r->off = at;
    return r_fail(r, "array %lld (%s): magic 0x%016llx, expected 0x%016llx", (long long)i, name,
                  (unsigned long long)magic, ARRAY_MAGIC);
  }
  int32_t dev_type, dev_id, ndim;
  uint8_t dt[4];
  if (r_i32(r, &dev_type, "the device") != 0 || r_i32(r, &dev_id, "the device") != 0) return -1;
  if (dev_type != kDLCPU) {
    r->off -= 8;
    return r_fail(r, "array %lld (%s): device type %d, expected 1 (CPU)", (long long)i, name, (int)dev_type);
  }
  if (r_i32(r, &ndim, "the number of dims") != 0) return -1;
  if (ndim < 0 || ndim > 64) {
    r->off -= 4;
    return r_fail(r, "array %lld (%s): %d dims (0 to 64 supported)", (long long)i, name, (int)ndim);
  }
  if (r_bytes(r, dt, 4, "the dtype") != 0) return -1;
  DLDataType dtype = {.code = dt[0], .bits = dt[1], .lanes = (uint16_t)(dt[2] | dt[3] << 8)};
  if (!dtype_known(dtype)) {
    r->off -= 4;
    return r_fail(r, "array %lld (%s): unsupported dtype (code %u, bits %u, lanes %u)", (long long)i, name,
                  dt[0], dt[1], (unsigned)dtype.lanes);
  }
  int64_t shape[64];
  unsigned __int128 bytes = elem_bytes((DLDataType){.code = dt[0], .bits = dt[1], .lanes = 1});
  for (int32_t d = 0; d < ndim; d++) {
    uint64_t v;
    if (r_u64(r, &v, "the shape") != 0) return -1;
    if (v > (uint64_t)INT64_MAX) {
      r->off -= 8;
      return r_fail(r, "array %lld (%s): dim %d is negative", (long long)i, name, (int)d);
    }
    shape[d] = (int64_t)v;
    bytes *= v;
    if (bytes > r->size) bytes = (unsigned __int128)r->size + 1; /* too big anyway; no overflow */
  }
  uint64_t nbytes;
  if (r_u64(r, &nbytes, "the data size") != 0) return -1;
  if ((unsigned __int128)nbytes != bytes) {
    r->off -= 8;
    return r_fail(r, "array %lld (%s): data size %llu does not match its shape and dtype", (long long)i, name,
                  (unsigned long long)nbytes);
  }
  if (nbytes > r->size - r->off)
    return r_fail(r, "array %lld (%s): the file ends inside its data (%llu bytes wanted, %llu left)", (long long)i,
                  name, (unsigned long long)nbytes, (unsigned long long)(r->size - r->off));
  GPTensor *t = gp_tensor_alloc(dtype, ndim, shape, true);
  if (!t) return -1;
  if (r_bytes(r, t->dl.data, nbytes, "array data") != 0) {
    gp_release(t);
    return -1;
  }
  *out = t;
  return 0;
}

int gp_params_read(FILE *f, uint64_t size, const char *what, GPParams *out) {
  memset(out, 0, sizeof *out);
  R r = {.f = f, .what = what ? what : "params", .size = size};
  uint64_t magic, reserved, nnames, narrays;
  if (r_u64(&r, &magic, "the header") != 0) return -1;
  if (magic != LIST_MAGIC) {
    r.off = 0;
    return r_fail(&r, "magic 0x%016llx, expected 0x%016llx", (unsigned long long)magic, LIST_MAGIC);
  }
  if (r_u64(&r, &reserved, "the header") != 0 || r_u64(&r, &nnames, "the number of names") != 0) return -1;
  if (nnames > (size - r.off) / 8) { /* each name takes at least its 8-byte length */
    r.off -= 8;
    return r_fail(&r, "%llu names cannot fit in the %llu bytes left", (unsigned long long)nnames,
                  (unsigned long long)(size - r.off - 8));
  }
  out->names = gp_calloc(nnames ? nnames : 1, sizeof(char *));
  out->tensors = gp_calloc(nnames ? nnames : 1, sizeof(GPTensor *));
  int64_t n = (int64_t)nnames;
  for (int64_t i = 0; i < n; i++) {
    uint64_t len;
    if (r_u64(&r, &len, "a name's length") != 0) goto fail;
    if (len > size - r.off) {
      r.off -= 8;
      r_fail(&r, "name %lld: length %llu runs past the end of the file", (long long)i, (unsigned long long)len);
      goto fail;
    }
    char *s = gp_malloc((size_t)len + 1);
    if (r_bytes(&r, s, len, "a name") != 0) {
      gp_free(s);
      goto fail;
    }
    s[len] = 0;
    out->names[i] = s;
    out->n = i + 1;
    if (strlen(s) != len) {
      r.off -= len;
      r_fail(&r, "name %lld contains a NUL byte", (long long)i);
      goto fail;
    }
    for (int64_t k = 0; k < i; k++)
      if (strcmp(out->names[k], s) == 0) {
        r.off -= len;
        r_fail(&r, "the name '%s' appears twice", s);
        goto fail;
      }
  }
  if (r_u64(&r, &narrays, "the number of arrays") != 0) goto fail;
  if (narrays != nnames) {
    r.off -= 8;
    r_fail(&r, "%llu arrays for %llu names", (unsigned long long)narrays, (unsigned long long)nnames);
    goto fail;
  }
  for (int64_t i = 0; i < n; i++)
    if (read_array(&r, i, out->names[i], &out->tensors[i]) != 0) goto fail;
  if (r.off != size) {
    r_fail(&r, "%llu bytes after the last array", (unsigned long long)(size - r.off));
    goto fail;
  }
  return 0;
fail:
  gp_params_free(out);
  return -1;
}

int gp_params_load(const char *path, GPParams *out) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) {
    gp_error_set(GP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    gp_error_set(GP_ERR_IO, "%s: not a regular file", path);
    fclose(f);
    return -1;
  }
  int rc = gp_params_read(f, (uint64_t)st.st_size, path, out);
  fclose(f);
  return rc;
}

GPTensor **gp_params_meta_table(const GPParams *p, const char *what, int64_t *n_out) {
  int64_t n = 0;
  for (int64_t i = 0; i < p->n; i++) {
    const char *s = p->names[i];
    char *end;
    errno = 0;
    long long idx = strncmp(s, "relay.Constant[", 15) == 0 ? strtoll(s + 15, &end, 10) : -1;
    if (idx < 0 || errno || end == s + 15 || strcmp(end, "]") != 0 || idx >= (1ll << 40) ||
        (s[15] == '0' && end != s + 16)) {
      gp_error_set(GP_ERR_VALUE, "%s: parameter '%s' is not named relay.Constant[<index>] (the constant it "
                   "stands for in the text's meta[relay.Constant][<index>])", what, s);
      *n_out = 0;
      return NULL;
    }
    if (idx + 1 > n) n = idx + 1;
  }
  if (n > 4 * p->n + 1024) {
    gp_error_set(GP_ERR_VALUE, "%s: constant indices up to %lld for %lld parameters", what, (long long)(n - 1),
                 (long long)p->n);
    *n_out = 0;
    return NULL;
  }
  GPTensor **tab = gp_calloc((size_t)(n ? n : 1), sizeof *tab);
  for (int64_t i = 0; i < p->n; i++) tab[strtoll(p->names[i] + 15, NULL, 10)] = p->tensors[i];
  *n_out = n;
  return tab;
}

int gp_save_text_params(const GPModule *m, int32_t flags, const char *text_path, const char *params_path) {
  bool to_stdout = !text_path || strcmp(text_path, "-") == 0;
  GPVec meta = {0};
  if (params_path) flags &= ~(int32_t)GP_PRINT_METADATA;
  char *printed = gp_print_meta(m, flags, params_path ? &meta : NULL);
  if (!printed) {
    gp_vec_free(&meta);
    return -1;
  }
  int rc = 0;
  if (params_path) {
    /* constants without data (typed placeholders) stay placeholders */
    int64_t n = 0;
    size_t cap = meta.len ? meta.len : 1;
    char **names = gp_malloc(sizeof(char *) * cap);
    GPTensor **ts = gp_malloc(sizeof(GPTensor *) * cap);
    for (size_t i = 0; i < meta.len; i++) {
      const GPConstant *c = meta.items[i];
      if (!c->data || !c->data->dl.data) continue;
      char nb[48];
      snprintf(nb, sizeof nb, "relay.Constant[%zu]", i);
      names[n] = gp_strdup(nb);
      ts[n++] = c->data;
    }
    rc = gp_params_save(params_path, n, (const char *const *)names, ts);
    for (int64_t i = 0; i < n; i++) gp_free(names[i]);
    gp_free(names);
    gp_free(ts);
  }
  gp_vec_free(&meta);
  if (rc == 0) {
    FILE *f = to_stdout ? stdout : fopen(text_path, "wb");
    if (!f) {
      gp_error_set(GP_ERR_IO, "%s: cannot write: %s", text_path, strerror(errno));
      rc = -1;
    } else {
      size_t n = strlen(printed);
      if (fwrite(printed, 1, n, f) != n) rc = -1;
      if (to_stdout ? fflush(f) != 0 : fclose(f) != 0) rc = -1;
      if (rc) gp_error_set(GP_ERR_IO, "%s: write error: %s", to_stdout ? "<stdout>" : text_path, strerror(errno));
    }
  }
  gp_free(printed);
  return rc;
}
