/* tensor.c -- ONNX TensorProto -> GPTensor: dtypes, the typed data fields, raw_data (taken over
 * from the parsed message, or viewed in the mapped model file: ox_tensor_from_proto_view),
 * external data files (mapped and viewed); views at any alignment, copied only to convert. */
#include "frontend/onnx/onnx_impl.h"
#include "common/checked.h"

#include <stdio.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------ */
/* dtypes                                                                                      */

static const char *const type_names[] = {
    "UNDEFINED", "FLOAT",     "UINT8",     "INT8",         "UINT16",     "INT16",
    "INT32",     "INT64",     "STRING",    "BOOL",         "FLOAT16",    "DOUBLE",
    "UINT32",    "UINT64",    "COMPLEX64", "COMPLEX128",   "BFLOAT16",   "FLOAT8E4M3FN",
    "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1",
    "FLOAT8E8M0", "UINT2", "INT2"};

const char *ox_onnx_type_name(int32_t t) {
  static _Thread_local char buf[24];
  if (t >= 0 && t < (int32_t)GP_ARRAY_LEN(type_names)) return type_names[t];
  snprintf(buf, sizeof buf, "type %d", (int)t);
  return buf;
}

int ox_dtype_from_onnx(int32_t t, DLDataType *out) {
  switch (t) {
  case 1: *out = GP_DT_F32; return 0;
  case 2: *out = GP_DT_U8; return 0;
  case 3: *out = GP_DT_I8; return 0;
  case 5: *out = GP_DT_I16; return 0;
  case 6: *out = GP_DT_I32; return 0;
  case 7: *out = GP_DT_I64; return 0;
  case 9: *out = GP_DT_BOOL; return 0;
  case 10: *out = GP_DT_F16; return 0;
  case 11: *out = GP_DT_F64; return 0;
  case 4: *out = GP_DT_U16; return 0;
  case 12: *out = GP_DT_U32; return 0;
  case 13: *out = GP_DT_U64; return 0;
  case 16: *out = GP_DT_BF16; return 0;
  case 17: *out = GP_DT(GP_DL_FLOAT8_E4M3FN, 8); return 0;
  case 18: *out = GP_DT(GP_DL_FLOAT8_E4M3FNUZ, 8); return 0;
  case 19: *out = GP_DT(GP_DL_FLOAT8_E5M2, 8); return 0;
  case 20: *out = GP_DT(GP_DL_FLOAT8_E5M2FNUZ, 8); return 0;
  case 21: *out = GP_DT(kDLUInt, 4); return 0;
  case 22: *out = GP_DT(kDLInt, 4); return 0;
  case 23: *out = GP_DT(GP_DL_FLOAT4_E2M1FN, 4); return 0;
  case 24: *out = GP_DT(GP_DL_FLOAT8_E8M0FNU, 8); return 0;
  case 25: *out = GP_DT(kDLUInt, 2); return 0;
  case 26: *out = GP_DT(kDLInt, 2); return 0;
  case 8:
    /* StringNormalizer, RegexFullMatch, StringConcat, StringSplit, Equal on strings, the
     * string LabelEncoders: their tensors have no DLPack dtype */
    gp_error_set(GP_ERR_UNSUPPORTED, "dtype STRING: string tensors are not supported (the IR has no string dtype)");
    return -1;
  default:
    gp_error_set(GP_ERR_UNSUPPORTED, "dtype %s is not supported", ox_onnx_type_name(t));
    return -1;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Data ownership                                                                              */

/* A buffer taken from the parsed message (raw_data): freed with free(). */
static void heap_deleter(DLManagedTensor *m) {
  free(m->manager_ctx);
  gp_free(m->dl_tensor.shape);
  gp_free(m);
}

/* A mapped file (the model, an external data file), shared by every tensor that views it. */
struct OxMapping {
  int refs; /* atomic: tensors are released on any thread */
  void *base;
  size_t len;
};

OxMapping *ox_mapping_new(void *base, size_t len) {
  OxMapping *mp = gp_malloc(sizeof *mp);
  mp->refs = 1;
  mp->base = base;
  mp->len = len;
  return mp;
}

void ox_mapping_retain(OxMapping *mp) { __atomic_add_fetch(&mp->refs, 1, __ATOMIC_RELAXED); }

void ox_mapping_release(OxMapping *mp) {
  if (mp && __atomic_sub_fetch(&mp->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    munmap(mp->base, mp->len);
    gp_free(mp);
  }
}

/* A tensor viewing a mapping: its manager_ctx. */
typedef struct MappedView {
  OxMapping *map;
  const char *first; /* its bytes */
  size_t len;
} MappedView;

static void mapped_deleter(DLManagedTensor *m) {
  MappedView *v = m->manager_ctx;
  /* The view's whole pages leave the process's resident set now (they stay in the page cache;
   * the mapping is read-only and private, so nothing is lost: another view of the same pages
   * faults them back in from the file). */
  uintptr_t lo = ((uintptr_t)v->first + 4095) & ~(uintptr_t)4095, hi = ((uintptr_t)v->first + v->len) & ~(uintptr_t)4095;
  if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
  ox_mapping_release(v->map);
  gp_free(v);
  gp_free(m->dl_tensor.shape);
  gp_free(m);
}

static GPTensor *wrap(DLDataType dt, int32_t ndim, const int64_t *dims, void *data, void *ctx,
                      void (*deleter)(DLManagedTensor *)) {
  DLManagedTensor *m = gp_calloc(1, sizeof *m);
  int64_t *shape = gp_malloc((size_t)(ndim ? ndim : 1) * sizeof(int64_t));
  if (ndim) memcpy(shape, dims, (size_t)ndim * sizeof(int64_t));
  /* DLPack's data pointer is 256-byte aligned; byte_offset reaches the first element (any
   * alignment: the evaluator copies an input that is misaligned for its element type). */
  uintptr_t at = (uintptr_t)data, base = at & ~(uintptr_t)255;
  m->dl_tensor = (DLTensor){.data = (void *)base, .device = {kDLCPU, 0}, .ndim = ndim, .dtype = dt, .shape = shape,
                            .byte_offset = (uint64_t)(at - base)};
  m->manager_ctx = ctx;
  m->deleter = deleter;
  return gp_tensor_from_dlpack(m); /* takes m, even on error */
}

/* A tensor viewing len bytes at p in the mapping (which it retains). */
static GPTensor *view_of(OxMapping *mp, DLDataType dt, int32_t ndim, const int64_t *dims, const char *p, size_t len) {
  MappedView *v = gp_malloc(sizeof *v);
  ox_mapping_retain(mp);
  v->map = mp;
  v->first = p;
  v->len = len;
  GPTensor *t = wrap(dt, ndim, dims, (void *)p, v, mapped_deleter);
  gp_tensor_set_file_backed(t);
  return t;
}

/* ------------------------------------------------------------------------------------------ */
/* External data                                                                               */

static const char *ext_value(const Gponnx__TensorProto *tp, const char *key) {
  for (size_t i = 0; i < tp->n_external_data; i++) {
    const Gponnx__StringStringEntryProto *e = tp->external_data[i];
    if (e->key && strcmp(e->key, key) == 0) return e->value ? e->value : "";
  }
  return NULL;
}

static int parse_u64(const char *s, const char *key, const char *tname, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (!*s || *end || errno || s[0] == '-') {
    gp_error_set(GP_ERR_VALUE, "tensor '%s': external_data %s '%s' is not a non-negative integer",
                 tname, key, s);
    return -1;
  }
  *out = v;
  return 0;
}

static GPTensor *external_tensor(const Gponnx__TensorProto *tp, const char *tname, DLDataType dt,
                                 int32_t ndim, const int64_t *dims, size_t nbytes, const char *base_dir) {
  const char *loc = ext_value(tp, "location");
  if (!loc || !*loc) {
    gp_error_set(GP_ERR_VALUE, "tensor '%s': external data without a 'location'", tname);
    return NULL;
  }
  /* ONNX's rule: a path relative to the model's directory that stays inside it. */
  if (loc[0] == '/' || strstr(loc, "..")) {
    gp_error_set(GP_ERR_VALUE, "tensor '%s': external data location '%s' must be a relative path "
                 "inside the model's directory", tname, loc);
    return NULL;
  }
  uint64_t offset = 0, length = nbytes;
  const char *s;
  if ((s = ext_value(tp, "offset")) && parse_u64(s, "offset", tname, &offset) != 0) return NULL;
  if ((s = ext_value(tp, "length")) && parse_u64(s, "length", tname, &length) != 0) return NULL;
  if (length != nbytes) {
    gp_error_set(GP_ERR_VALUE, "tensor '%s': external data length %llu but dims need %zu bytes",
                 tname, (unsigned long long)length, nbytes);
    return NULL;
  }
  GPBuf path = {0};
  gp_buf_printf(&path, "%s/%s", base_dir && *base_dir ? base_dir : ".", loc);
  char *p = gp_buf_take(&path);
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    gp_error_set(GP_ERR_IO, "tensor '%s': cannot open external data %s: %s", tname, p, strerror(errno));
    if (fd >= 0) close(fd);
    gp_free(p);
    return NULL;
  }
  if (offset > (uint64_t)st.st_size || length > (uint64_t)st.st_size - offset) {
    gp_error_set(GP_ERR_VALUE, "tensor '%s': external data %s has %lld bytes, the tensor needs "
                 "bytes %llu to %llu", tname, p, (long long)st.st_size, (unsigned long long)offset,
                 (unsigned long long)(offset + length));
    close(fd);
    gp_free(p);
    return NULL;
  }
  GPTensor *t = NULL;
  if (nbytes == 0) {
    t = gp_tensor_alloc(dt, ndim, dims, true);
  } else {
    void *base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (base == MAP_FAILED) {
      gp_error_set(GP_ERR_IO, "tensor '%s': cannot map %s: %s", tname, p, strerror(errno));
    } else if (dt.bits == 1) {
      /* bool: normalized to 0/1, so copied */
      if ((t = gp_tensor_alloc(dt, ndim, dims, true)))
        for (size_t i = 0; i < nbytes; i++) ((uint8_t *)t->dl.data)[i] = ((const uint8_t *)base)[offset + i] != 0;
      munmap(base, (size_t)st.st_size);
    } else {
      /* Shared with the file: no copy, at any alignment. */
      OxMapping *mp = ox_mapping_new(base, (size_t)st.st_size);
      t = view_of(mp, dt, ndim, dims, (const char *)base + offset, nbytes);
      ox_mapping_release(mp);
    }
  }
  close(fd);
  gp_free(p);
  return t;
}

/* ------------------------------------------------------------------------------------------ */
/* TensorProto                                                                                 */

/* Copy n typed values from a proto field into dst, converting to dt. */
static void store_i64(void *dst, DLDataType dt, size_t i, int64_t v) {
  switch (dt.bits) {
  case 1:
  case 8: ((uint8_t *)dst)[i] = dt.bits == 1 ? (uint8_t)(v != 0) : (uint8_t)v; break;
  case 16: ((uint16_t *)dst)[i] = (uint16_t)v; break;
  case 32: ((uint32_t *)dst)[i] = (uint32_t)v; break;
  default: ((uint64_t *)dst)[i] = (uint64_t)v; break;
  }
}

/* A 2- or 4-bit tensor: the packed bytes (raw_data, external data or int32_data, one byte per
 * value) unpacked to one sign-extended (int) or zero-extended (uint, float4) byte per element. */
static GPTensor *packed_tensor(const Gponnx__TensorProto *tp, const char *tname, DLDataType dt, int32_t ndim,
                               const int64_t *dims, uint64_t numel, unsigned per_byte, const char *base_dir,
                               const OxRawView *view) {
  size_t nb = (size_t)((numel + per_byte - 1) / per_byte);
  GPTensor *src = NULL;
  const uint8_t *bytes = NULL;
  uint8_t *owned = NULL;
  if (tp->has_data_location && tp->data_location == GPONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    int64_t n = (int64_t)nb;
    if (!(src = external_tensor(tp, tname, GP_DT_U8, 1, &n, nb, base_dir))) return NULL;
    bytes = src->dl.data;
  } else if (view || tp->has_raw_data) {
    size_t have = view ? view->len : tp->raw_data.len;
    if (have != nb) {
      gp_error_set(GP_ERR_VALUE, "tensor '%s': raw_data has %zu bytes, dims and dtype need %zu", tname, have, nb);
      return NULL;
    }
    bytes = view ? view->data : tp->raw_data.data;
  } else {
    if (tp->n_int32_data != nb) {
      gp_error_set(GP_ERR_VALUE, "tensor '%s': int32_data has %zu values, dims need %zu (packed)", tname,
                   tp->n_int32_data, nb);
      return NULL;
    }
    owned = gp_malloc(nb ? nb : 1);
    for (size_t i = 0; i < nb; i++) owned[i] = (uint8_t)tp->int32_data[i];
    bytes = owned;
  }
  GPTensor *t = gp_tensor_alloc(dt, ndim, dims, true);
  if (t) {
    unsigned bits = dt.bits, mask = (1u << bits) - 1;
    uint8_t *o = t->dl.data;
    for (uint64_t i = 0; i < numel; i++) {
      unsigned v = (bytes[i / per_byte] >> (bits * (i % per_byte))) & mask;
      if (dt.code == kDLInt && (v >> (bits - 1))) v |= ~mask; /* sign-extend */
      o[i] = (uint8_t)v;
    }
  }
  gp_free(owned);
  gp_release(src);
  return t;
}

GPTensor *ox_tensor_from_proto(Gponnx__TensorProto *tp, const char *base_dir) {
  return ox_tensor_from_proto_view(tp, base_dir, NULL);
}

GPTensor *ox_tensor_from_proto_view(Gponnx__TensorProto *tp, const char *base_dir, const OxRawView *view) {
  const char *tname = tp->name && *tp->name ? tp->name : "<unnamed>";
  DLDataType dt;
  if (!tp->has_data_type) {
    gp_error_set(GP_ERR_VALUE, "tensor '%s': no data_type", tname);
    return NULL;
  }
  if (ox_dtype_from_onnx(tp->data_type, &dt) != 0) {
    gp_error_prefix("tensor '%s'", tname);
    return NULL;
  }
  if (tp->n_dims > GP_OX_MAX_RANK) {
    gp_error_set(GP_ERR_UNSUPPORTED, "tensor '%s': rank %zu exceeds %d", tname, tp->n_dims, GP_OX_MAX_RANK);
    return NULL;
  }
  int32_t ndim = (int32_t)tp->n_dims;
  const int64_t *dims = tp->dims;
  for (int32_t i = 0; i < ndim; i++)
    if (dims[i] < 0) {
      gp_error_set(GP_ERR_VALUE, "tensor '%s': dimension %d is negative (%lld)", tname, (int)i,
                   (long long)dims[i]);
      return NULL;
    }
  int64_t count;
  if (!gp_dims_count(ndim, dims, GP_MAX_TENSOR_ELEMS, &count)) {
    gp_error_set(GP_ERR_VALUE, "tensor '%s': %d dims of which the product is too large", tname, (int)ndim);
    return NULL;
  }
  uint64_t numel = (uint64_t)count;
  size_t elem = gp_dtype_bytes(dt), nbytes = (size_t)numel * elem;
  /* 2- and 4-bit types are packed in the file (first element in the low bits) and unpacked into
   * one byte per element here. */
  unsigned per_byte = dt.bits == 4 ? 2 : dt.bits == 2 ? 4 : 1;
  if (per_byte > 1) return packed_tensor(tp, tname, dt, ndim, dims, numel, per_byte, base_dir, view);
  if (tp->has_data_location && tp->data_location == GPONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
    return external_tensor(tp, tname, dt, ndim, dims, nbytes, base_dir);

  if (view) { /* raw_data left in the mapped file (ox_skeleton) */
    if (view->len != nbytes) {
      gp_error_set(GP_ERR_VALUE, "tensor '%s': raw_data has %zu bytes, dims and dtype need %zu", tname, view->len,
                   nbytes);
      return NULL;
    }
    if (dt.bits == 1) { /* bool: normalized to 0/1, so copied */
      GPTensor *t = gp_tensor_alloc(dt, ndim, dims, true);
      if (t)
        for (size_t i = 0; i < nbytes; i++) ((uint8_t *)t->dl.data)[i] = view->data[i] != 0;
      return t;
    }
    return view_of(view->map, dt, ndim, dims, (const char *)view->data, nbytes);
  }
  if (tp->has_raw_data) {
    if (tp->raw_data.len != nbytes) {
      gp_error_set(GP_ERR_VALUE, "tensor '%s': raw_data has %zu bytes, dims and dtype need %zu",
                   tname, tp->raw_data.len, nbytes);
      return NULL;
    }
    if (nbytes == 0) return gp_tensor_alloc(dt, ndim, dims, true);
    if (dt.bits == 1) /* bool: normalize to 0/1 */
      for (size_t i = 0; i < nbytes; i++) tp->raw_data.data[i] = tp->raw_data.data[i] != 0;
    /* Take the parser's buffer over: no copy.  (protobuf-c's default allocator is malloc.) */
    void *data = tp->raw_data.data;
    tp->raw_data.data = NULL;
    tp->raw_data.len = 0;
    tp->has_raw_data = 0;
    return wrap(dt, ndim, dims, data, data, heap_deleter);
  }

  /* Typed fields: int32_data holds INT32, INT16, INT8, UINT8, BOOL and FLOAT16 (its bits). */
  const char *field;
  size_t have;
  switch (tp->data_type) {
  case 1: field = "float_data", have = tp->n_float_data; break;
  case 11: field = "double_data", have = tp->n_double_data; break;
  case 7: field = "int64_data", have = tp->n_int64_data; break;
  case 12:
  case 13: field = "uint64_data", have = tp->n_uint64_data; break;
  default: field = "int32_data", have = tp->n_int32_data; break;
  }
  if (have != numel) { /* checked before allocating: the counts are bounded by the file */
    gp_error_set(GP_ERR_VALUE, "tensor '%s': %s has %zu values, dims need %llu", tname, field, have,
                 (unsigned long long)numel);
    return NULL;
  }
  GPTensor *t = gp_tensor_alloc(dt, ndim, dims, true);
  if (!t) return NULL;
  void *dst = t->dl.data;
  switch (tp->data_type) {
  case 1: if (numel) memcpy(dst, tp->float_data, nbytes); break;
  case 11: if (numel) memcpy(dst, tp->double_data, nbytes); break;
  case 7: if (numel) memcpy(dst, tp->int64_data, nbytes); break;
  case 12:
  case 13:
    for (size_t i = 0; i < have; i++) store_i64(dst, dt, i, (int64_t)tp->uint64_data[i]);
    break;
  default:
    for (size_t i = 0; i < have; i++) store_i64(dst, dt, i, tp->int32_data[i]);
    break;
  }
  return t;
}

/* ------------------------------------------------------------------------------------------ */
/* Files                                                                                       */

int ox_read_whole_file(const char *path, void **data, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    gp_error_set(GP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    gp_error_set(GP_ERR_IO, "%s: not a regular file", path);
    close(fd);
    return -1;
  }
  size_t n = (size_t)st.st_size, got = 0;
  char *buf = gp_malloc(n ? n : 1);
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      gp_error_set(GP_ERR_IO, "%s: read failed: %s", path, r < 0 ? strerror(errno) : "unexpected end of file");
      gp_free(buf);
      close(fd);
      return -1;
    }
    got += (size_t)r;
  }
  close(fd);
  *data = buf;
  *len = n;
  return 0;
}

int ox_write_model(const Gponnx__ModelProto *m, const char *path, size_t *len) {
  size_t n = gponnx__model_proto__get_packed_size(m);
  uint8_t *buf = gp_malloc(n ? n : 1);
  gponnx__model_proto__pack(m, buf);
  FILE *f = fopen(path, "wb");
  int rc = 0;
  if (!f) {
    gp_error_set(GP_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    rc = -1;
  } else {
    bool ok = fwrite(buf, 1, n, f) == n;
    int err = errno;
    if (fclose(f) != 0 && ok) ok = false, err = errno;
    if (!ok) {
      gp_error_set(GP_ERR_IO, "%s: cannot write: %s", path, strerror(err));
      rc = -1;
    }
  }
  gp_free(buf);
  if (rc == 0 && len) *len = n;
  return rc;
}

GPTensor *gp_onnx_read_tensor_file(const char *path, char **name) {
  void *data;
  size_t len;
  if (ox_read_whole_file(path, &data, &len) != 0) return NULL;
  Gponnx__TensorProto *tp = gponnx__tensor_proto__unpack(NULL, len, data);
  gp_free(data);
  if (!tp) {
    gp_error_set(GP_ERR_PARSE, "%s: not a serialized ONNX TensorProto (protobuf parse failed: "
                 "malformed or truncated)", path);
    return NULL;
  }
  char *dir = gp_strdup(path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  else strcpy(dir, ".");
  GPTensor *t = ox_tensor_from_proto(tp, dir);
  if (!t) gp_error_prefix("%s", path);
  if (t && name) *name = gp_strdup(tp->name ? tp->name : "");
  gp_free(dir);
  gponnx__tensor_proto__free_unpacked(tp, NULL);
  return t;
}

/* ------------------------------------------------------------------------------------------ */
/* SequenceProto / OptionalProto test data                                                     */

static const char *const value_kind_names[] = {"TensorProto", "SequenceProto", "OptionalProto"};

/* elem_type of SequenceProto / OptionalProto (onnx-data.proto's DataType). */
enum { ELEM_UNDEFINED = 0, ELEM_TENSOR = 1, ELEM_SPARSE = 2, ELEM_SEQUENCE = 3, ELEM_MAP = 4, ELEM_OPTIONAL = 5 };

/* The tree's tensors released and its arrays freed, without recursion (children live in
 * their parent's array, so the arrays are freed after the walk). */
void gp_onnx_value_free(GPOnnxValue *v) {
  if (!v) return;
  GPVec st = {0}, arrays = {0};
  gp_vec_push(&st, v);
  while (st.len) {
    GPOnnxValue *x = gp_vec_pop(&st);
    gp_release(x->tensor);
    if (!x->items) continue;
    for (int32_t i = 0; i < x->n; i++) gp_vec_push(&st, &x->items[i]);
    gp_vec_push(&arrays, x->items);
  }
  for (size_t i = 0; i < arrays.len; i++) gp_free(arrays.items[i]);
  gp_vec_free(&arrays);
  gp_vec_free(&st);
  gp_free(v);
}

int32_t gp_onnx_value_leaves(const GPOnnxValue *v, GPTensor **out, int32_t n) {
  GPVec st = {0};
  gp_vec_push(&st, (void *)v);
  while (st.len) {
    const GPOnnxValue *x = gp_vec_pop(&st);
    if (x->kind == GP_ONNX_TENSOR) {
      if (out) out[n] = x->tensor;
      n++;
    }
    for (int32_t i = x->n; i-- > 0;) gp_vec_push(&st, &x->items[i]); /* popped in order */
  }
  gp_vec_free(&st);
  return n;
}

/* One proto still to convert into *dst (at nesting depth `depth`, `where` its location). */
typedef struct ValueWork {
  GPOnnxValueKind kind;
  void *proto; /* Gponnx__TensorProto / SequenceProto / OptionalProto, owned by the unpacked root */
  GPOnnxValue *dst;
  int32_t depth;
  char *where; /* "" for the root, "element 2", "element 2, element 0", "the optional's value" */
} ValueWork;

static char *where_join(const char *parent, const char *fmt, int32_t i) {
  GPBuf b = {0};
  if (*parent) gp_buf_printf(&b, "%s, ", parent);
  gp_buf_printf(&b, fmt, (int)i);
  return gp_buf_take(&b);
}

/* The kind of a child of elem_type `et` (-1 + error for the kinds we do not read). */
static int elem_kind(int32_t et, GPOnnxValueKind *k) {
  switch (et) {
  case ELEM_TENSOR: *k = GP_ONNX_TENSOR; return 0;
  case ELEM_SEQUENCE: *k = GP_ONNX_SEQUENCE; return 0;
  case ELEM_OPTIONAL: *k = GP_ONNX_OPTIONAL; return 0;
  case ELEM_SPARSE: return ox_unsupported("elem_type SPARSE_TENSOR: sparse tensors are not supported");
  case ELEM_MAP: return ox_unsupported("elem_type MAP: maps are not supported");
  default: return ox_invalid("elem_type %d is not an ONNX value type", (int)et);
  }
}

/* One work item: a tensor converted, or a sequence / optional's children pushed. */
static int value_step(ValueWork *w, const char *dir, GPVec *st) {
  GPOnnxValue *d = w->dst;
  d->kind = w->kind;
  if (w->kind == GP_ONNX_TENSOR) {
    d->tensor = ox_tensor_from_proto(w->proto, dir);
    return d->tensor ? 0 : -1;
  }
  if (w->depth >= GP_ONNX_MAX_VALUE_DEPTH)
    return ox_unsupported("values nested more than %d deep", GP_ONNX_MAX_VALUE_DEPTH);
  size_t count[3] = {0};
  void **lists[3] = {0};
  int32_t et;
  bool has_et;
  if (w->kind == GP_ONNX_SEQUENCE) {
    Gponnx__SequenceProto *sp = w->proto;
    count[0] = sp->n_tensor_values, lists[0] = (void **)sp->tensor_values;
    count[1] = sp->n_sequence_values, lists[1] = (void **)sp->sequence_values;
    count[2] = sp->n_optional_values, lists[2] = (void **)sp->optional_values;
    et = sp->elem_type, has_et = sp->has_elem_type;
  } else {
    Gponnx__OptionalProto *op = w->proto;
    count[0] = op->tensor_value != NULL, lists[0] = (void **)&op->tensor_value;
    count[1] = op->sequence_value != NULL, lists[1] = (void **)&op->sequence_value;
    count[2] = op->optional_value != NULL, lists[2] = (void **)&op->optional_value;
    et = op->elem_type, has_et = op->has_elem_type;
  }
  size_t total = count[0] + count[1] + count[2];
  if (!has_et || et == ELEM_UNDEFINED) {
    if (total) return ox_invalid("no elem_type, but %zu values", total);
    return 0; /* an empty sequence / an empty optional */
  }
  GPOnnxValueKind k = GP_ONNX_TENSOR;
  if (elem_kind(et, &k) != 0) return -1;
  for (int i = 0; i < 3; i++)
    if (i != (int)k && count[i])
      return ox_invalid("elem_type %s, but it holds %s values", k == GP_ONNX_TENSOR ? "TENSOR" : k == GP_ONNX_SEQUENCE ? "SEQUENCE" : "OPTIONAL",
                        i == 0 ? "tensor" : i == 1 ? "sequence" : "optional");
  if (count[k] > INT32_MAX / 2) return ox_unsupported("a sequence of %zu values", count[k]);
  d->n = (int32_t)count[k];
  if (!d->n) return 0;
  d->items = gp_calloc((size_t)d->n, sizeof *d->items);
  for (int32_t i = d->n; i-- > 0;) {
    ValueWork *c = gp_malloc(sizeof *c);
    *c = (ValueWork){k, lists[k][i], &d->items[i], w->depth + 1,
                     w->kind == GP_ONNX_OPTIONAL ? where_join(w->where, "the optional's value", 0)
                                                 : where_join(w->where, "element %d", i)};
    gp_vec_push(st, c);
  }
  return 0;
}

GPOnnxValue *gp_onnx_parse_value(const void *data, size_t len, GPOnnxValueKind kind, const char *path) {
  if (!path) path = "<memory>";
  if ((unsigned)kind > GP_ONNX_OPTIONAL) {
    gp_error_set(GP_ERR_VALUE, "%s: value kind %d is not a tensor, sequence or optional", path, (int)kind);
    return NULL;
  }
  void *root;
  if (kind == GP_ONNX_TENSOR) root = gponnx__tensor_proto__unpack(NULL, len, data);
  else if (kind == GP_ONNX_SEQUENCE) root = gponnx__sequence_proto__unpack(NULL, len, data);
  else root = gponnx__optional_proto__unpack(NULL, len, data);
  if (!root) {
    gp_error_set(GP_ERR_PARSE, "%s: not a serialized ONNX %s (protobuf parse failed: malformed or truncated)", path,
                 value_kind_names[kind]);
    return NULL;
  }
  char *dir = gp_strdup(path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  else strcpy(dir, ".");
  GPOnnxValue *v = gp_calloc(1, sizeof *v);
  GPVec st = {0};
  ValueWork *w0 = gp_malloc(sizeof *w0);
  *w0 = (ValueWork){kind, root, v, 0, gp_strdup("")};
  gp_vec_push(&st, w0);
  int rc = 0;
  while (st.len) {
    ValueWork *w = gp_vec_pop(&st);
    if (rc == 0 && value_step(w, dir, &st) != 0) {
      rc = -1;
      if (*w->where) gp_error_prefix("%s: %s", path, w->where);
      else gp_error_prefix("%s", path);
    }
    gp_free(w->where);
    gp_free(w);
  }
  gp_vec_free(&st);
  gp_free(dir);
  if (kind == GP_ONNX_TENSOR) gponnx__tensor_proto__free_unpacked(root, NULL);
  else if (kind == GP_ONNX_SEQUENCE) gponnx__sequence_proto__free_unpacked(root, NULL);
  else gponnx__optional_proto__free_unpacked(root, NULL);
  if (rc != 0) {
    gp_onnx_value_free(v);
    return NULL;
  }
  return v;
}

GPOnnxValue *gp_onnx_read_value_file(const char *path, GPOnnxValueKind kind) {
  void *data;
  size_t len;
  if (ox_read_whole_file(path, &data, &len) != 0) return NULL;
  GPOnnxValue *v = gp_onnx_parse_value(data, len, kind, path);
  gp_free(data);
  return v;
}
