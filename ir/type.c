/* type.c -- data types and interned IR types.
 * Equal types are one object: compare with ==.  Types are immortal; the intern table is
 * guarded by a mutex so any thread may build types. */
#include "ir.h"
#include "../common/checked.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* ---- data types */

/* The named narrow float types (tvm-ffi's spelling). */
static const struct { const char *name; uint8_t code, bits; } narrow_floats[] = {
    {"float8_e4m3fn", GP_DL_FLOAT8_E4M3FN, 8},     {"float8_e4m3fnuz", GP_DL_FLOAT8_E4M3FNUZ, 8},
    {"float8_e5m2", GP_DL_FLOAT8_E5M2, 8},         {"float8_e5m2fnuz", GP_DL_FLOAT8_E5M2FNUZ, 8},
    {"float8_e8m0fnu", GP_DL_FLOAT8_E8M0FNU, 8},   {"float4_e2m1fn", GP_DL_FLOAT4_E2M1FN, 4}};

/* The bit widths that exist for a type code: bool is the only uint1. */
static bool bits_exist(uint8_t code, unsigned bits) {
  switch (code) {
  case kDLInt: return bits == 2 || bits == 4 || bits == 8 || bits == 16 || bits == 32 || bits == 64;
  case kDLUInt: return bits == 2 || bits == 4 || bits == 8 || bits == 16 || bits == 32 || bits == 64;
  case kDLFloat: return bits == 16 || bits == 32 || bits == 64;
  case kDLBfloat: return bits == 16;
  default: return false;
  }
}

int gp_dtype_parse(const char *s, size_t n, DLDataType *out) {
  static const struct { const char *name; uint8_t code; } prefixes[] = {
      {"bfloat", kDLBfloat}, {"float", kDLFloat}, {"uint", kDLUInt}, {"int", kDLInt}};
  if (n == 4 && memcmp(s, "bool", 4) == 0) {
    *out = GP_DT_BOOL;
    return 0;
  }
  for (size_t k = 0; k < GP_ARRAY_LEN(narrow_floats); k++) {
    size_t pl = strlen(narrow_floats[k].name);
    if (n != pl || memcmp(s, narrow_floats[k].name, pl) != 0) continue;
    *out = GP_DT(narrow_floats[k].code, narrow_floats[k].bits);
    return 0;
  }
  for (size_t k = 0; k < GP_ARRAY_LEN(prefixes); k++) {
    size_t pl = strlen(prefixes[k].name);
    if (n <= pl || memcmp(s, prefixes[k].name, pl) != 0) continue;
    size_t i = pl;
    unsigned bits = 0, lanes = 1;
    size_t digits = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9' && digits < 4) bits = bits * 10 + (unsigned)(s[i++] - '0'), digits++;
    if (!digits || !bits_exist(prefixes[k].code, bits)) break;
    if (i < n && s[i] == 'x') {
      i++;
      lanes = 0;
      digits = 0;
      while (i < n && s[i] >= '0' && s[i] <= '9' && digits < 5) lanes = lanes * 10 + (unsigned)(s[i++] - '0'), digits++;
      if (!digits || lanes == 0 || lanes > 65535) break;
    }
    if (i != n) break;
    out->code = prefixes[k].code;
    out->bits = (uint8_t)bits;
    out->lanes = (uint16_t)lanes;
    return 0;
  }
  gp_error_set(GP_ERR_VALUE, "unknown data type '%.*s' (expected bool, int2/4/8/16/32/64, uint2/4/8/16/32/64, "
               "float16/32/64, bfloat16, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, "
               "float8_e8m0fnu or float4_e2m1fn)",
               (int)(n > 64 ? 64 : n), s);
  return -1;
}

const char *gp_dtype_str(DLDataType t, char *buf) {
  const char *base;
  if (t.code == kDLUInt && t.bits == 1 && t.lanes == 1) return strcpy(buf, "bool");
  for (size_t k = 0; k < GP_ARRAY_LEN(narrow_floats); k++)
    if (t.code == narrow_floats[k].code && t.bits == narrow_floats[k].bits) {
      if (t.lanes > 1) snprintf(buf, 24, "%sx%u", narrow_floats[k].name, (unsigned)t.lanes);
      else strcpy(buf, narrow_floats[k].name);
      return buf;
    }
  switch (t.code) {
  case kDLInt: base = "int"; break;
  case kDLUInt: base = "uint"; break;
  case kDLFloat: base = "float"; break;
  case kDLBfloat: base = "bfloat"; break;
  case kDLOpaqueHandle: base = "handle"; break;
  default: base = "unknown"; break;
  }
  if (t.lanes > 1)
    snprintf(buf, 24, "%s%ux%u", base, (unsigned)t.bits, (unsigned)t.lanes);
  else
    snprintf(buf, 24, "%s%u", base, (unsigned)t.bits);
  return buf;
}

bool gp_dtype_eq(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

size_t gp_dtype_bytes(DLDataType t) { return (size_t)((t.bits + 7) / 8) * (t.lanes ? t.lanes : 1); }

/* ---- interning */

static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static GPType **table;
static size_t table_len, table_cap;

static uint64_t type_hash(int32_t kind, int32_t n, DLDataType dt, const void *elems, size_t esize,
                          const GPType *ret) {
  uint64_t h = gp_hash_mix((uint64_t)kind * 31 + (uint64_t)(uint32_t)n, 0);
  if (kind == GP_TYPE_TENSOR) h = gp_hash_mix(h, (uint64_t)dt.code << 24 | (uint64_t)dt.bits << 16 | dt.lanes);
  if (n) h = gp_hash_mix(h, gp_hash_bytes(elems, (size_t)n * esize, 7));
  if (ret) h = gp_hash_mix(h, (uint64_t)(uintptr_t)ret);
  return h;
}

static bool type_matches(const GPType *t, int32_t kind, int32_t n, DLDataType dt, const void *elems,
                         const GPType *ret) {
  if (t->kind != kind || t->n != n) return false;
  switch (kind) {
  case GP_TYPE_TENSOR:
    return gp_dtype_eq(t->tensor.dtype, dt) && (!n || memcmp(t->tensor.shape, elems, (size_t)n * 8) == 0);
  case GP_TYPE_TUPLE:
    return !n || memcmp(t->tuple.fields, elems, (size_t)n * sizeof(void *)) == 0;
  default:
    return t->func.ret == ret && (!n || memcmp(t->func.params, elems, (size_t)n * sizeof(void *)) == 0);
  }
}

/* The hash is kept just before each type in its allocation. */
typedef struct {
  uint64_t hash;
  GPType type;
} TypeCell;

static void type_never_freed(GPObject *o) { GP_UNUSED(o); }

static const GPType *intern(int32_t kind, int32_t n, DLDataType dt, const void *elems, size_t esize,
                            const GPType *ret) {
  uint64_t h = type_hash(kind, n, dt, elems, esize, ret);
  pthread_mutex_lock(&intern_lock);
  if ((table_len + 1) * 2 > table_cap) {
    size_t ncap = table_cap ? table_cap * 2 : 1024;
    GPType **nt = gp_calloc(ncap, sizeof *nt);
    for (size_t i = 0; i < table_cap; i++) {
      if (!table[i]) continue;
      uint64_t th = ((TypeCell *)((char *)table[i] - offsetof(TypeCell, type)))->hash;
      size_t j = th & (ncap - 1);
      while (nt[j]) j = (j + 1) & (ncap - 1);
      nt[j] = table[i];
    }
    gp_free(table);
    table = nt;
    table_cap = ncap;
  }
  size_t i = h & (table_cap - 1);
  while (table[i]) {
    TypeCell *c = (TypeCell *)((char *)table[i] - offsetof(TypeCell, type));
    if (c->hash == h && type_matches(table[i], kind, n, dt, elems, ret)) {
      const GPType *found = table[i];
      pthread_mutex_unlock(&intern_lock);
      return found;
    }
    i = (i + 1) & (table_cap - 1);
  }
  TypeCell *c = gp_calloc(1, sizeof(TypeCell) + (size_t)n * esize);
  void *arr = c + 1;
  if (n) memcpy(arr, elems, (size_t)n * esize);
  c->hash = h;
  GPType *t = &c->type;
  t->obj.ref_count = GP_REF_IMMORTAL;
  t->obj.type_index = GP_TI_TYPE;
  t->obj.deleter = type_never_freed;
  t->kind = kind;
  t->n = n;
  if (kind == GP_TYPE_TENSOR) {
    t->tensor.dtype = dt;
    t->tensor.shape = arr; /* never NULL: memcpy(dst, shape, 0) is defined for rank 0 */
  } else if (kind == GP_TYPE_TUPLE) {
    t->tuple.fields = arr;
  } else {
    t->func.params = arr;
    t->func.ret = ret;
  }
  table[i] = t;
  table_len++;
  pthread_mutex_unlock(&intern_lock);
  return t;
}

const GPType *gp_type_tensor(DLDataType dtype, int32_t ndim, const int64_t *shape) {
  if (ndim < 0 || ndim > 64) {
    gp_error_set(GP_ERR_VALUE, "tensor rank %d is out of range (0 to 64)", (int)ndim);
    return NULL;
  }
  int64_t known = 1;
  for (int32_t i = 0; i < ndim; i++) {
    if (shape[i] < 0 && shape[i] != GP_DIM_ANY) {
      gp_error_set(GP_ERR_VALUE, "dimension %d of a tensor type is negative (%lld)", (int)i,
                   (long long)shape[i]);
      return NULL;
    }
    /* the product of the known non-zero dims is bounded, so element and byte counts computed
     * from any type's dims never overflow (common/checked.h) */
    if (shape[i] > 0 && (!gp_mul_i64(known, shape[i], &known) || known > GP_MAX_TYPE_ELEMS)) {
      gp_error_set(GP_ERR_VALUE, "tensor type of shape %s has more than 2^56 elements",
                   gp_dims_str(ndim, shape).s);
      return NULL;
    }
  }
  if (dtype.lanes == 0) dtype.lanes = 1;
  /* The last tensor types this thread asked for (types are never freed): a graph's tensors come
   * in few shapes, so most calls (a folded constant's type, InferType's relations) end here
   * without the table's lock and hash. */
  static _Thread_local const GPType *recent[8];
  static _Thread_local unsigned next;
  for (int r = 0; r < 8; r++) {
    const GPType *t = recent[r];
    if (t && t->n == ndim && gp_dtype_eq(t->tensor.dtype, dtype) &&
        (!ndim || memcmp(t->tensor.shape, shape, (size_t)ndim * sizeof *shape) == 0))
      return t;
  }
  const GPType *t = intern(GP_TYPE_TENSOR, ndim, dtype, shape, sizeof(int64_t), NULL);
  if (t) recent[next++ % 8] = t;
  return t;
}

const GPType *gp_type_scalar(DLDataType dtype) { return gp_type_tensor(dtype, 0, NULL); }

const GPType *gp_type_tuple(int32_t n, const GPType *const *fields) {
  if (n < 0) {
    gp_error_set(GP_ERR_VALUE, "tuple type with %d fields", (int)n);
    return NULL;
  }
  for (int32_t i = 0; i < n; i++)
    if (!fields[i]) {
      gp_error_set(GP_ERR_VALUE, "tuple type field %d is NULL", (int)i);
      return NULL;
    }
  return intern(GP_TYPE_TUPLE, n, (DLDataType){0}, fields, sizeof(void *), NULL);
}

const GPType *gp_type_func(int32_t nparams, const GPType *const *params, const GPType *ret) {
  if (nparams < 0 || !ret) {
    gp_error_set(GP_ERR_VALUE, "function type needs a return type and a parameter count >= 0");
    return NULL;
  }
  for (int32_t i = 0; i < nparams; i++)
    if (!params[i]) {
      gp_error_set(GP_ERR_VALUE, "function type parameter %d is NULL", (int)i);
      return NULL;
    }
  return intern(GP_TYPE_FUNC, nparams, (DLDataType){0}, params, sizeof(void *), ret);
}

/* Printing: iterative over nested tuple/func types with an explicit stack of pending text. */
void gp_type_print(GPBuf *b, const GPType *root) {
  typedef struct { const GPType *t; int stage; } Frame;
  Frame small[32];
  Frame *st = small;
  size_t cap = 32, sp = 0;
  st[sp++] = (Frame){root, 0};
  while (sp) {
    Frame *f = &st[sp - 1];
    const GPType *t = f->t;
    if (!t) {
      gp_buf_puts(b, "?");
      sp--;
      continue;
    }
    if (t->kind == GP_TYPE_TENSOR) {
      char dt[24];
      gp_dtype_str(t->tensor.dtype, dt);
      if (t->n == 0) {
        gp_buf_puts(b, dt);
      } else {
        gp_buf_puts(b, "Tensor[(");
        for (int32_t i = 0; i < t->n; i++) {
          if (i) gp_buf_puts(b, ", ");
          if (t->tensor.shape[i] == GP_DIM_ANY)
            gp_buf_putc(b, '?');
          else
            gp_buf_printf(b, "%lld", (long long)t->tensor.shape[i]);
        }
        gp_buf_printf(b, "), %s]", dt);
      }
      sp--;
      continue;
    }
    /* tuple: "(" f0 ", " f1 ")"; func: "fn (" p0 ", " p1 ") -> " ret */
    int32_t n = t->n;
    int stage = f->stage++;
    const GPType *next = NULL;
    if (t->kind == GP_TYPE_TUPLE) {
      if (stage == 0) gp_buf_putc(b, '(');
      if (stage < n) {
        if (stage) gp_buf_puts(b, ", ");
        next = t->tuple.fields[stage];
      } else {
        gp_buf_puts(b, n == 1 ? ",)" : ")");
        sp--;
        continue;
      }
    } else {
      if (stage == 0) gp_buf_puts(b, "fn (");
      if (stage < n) {
        if (stage) gp_buf_puts(b, ", ");
        next = t->func.params[stage];
      } else if (stage == n) {
        gp_buf_puts(b, ") -> ");
        next = t->func.ret;
      } else {
        sp--;
        continue;
      }
    }
    if (sp == cap) {
      Frame *ns = gp_malloc(cap * 2 * sizeof(Frame));
      memcpy(ns, st, cap * sizeof(Frame));
      if (st != small) gp_free(st);
      st = ns;
      cap *= 2;
    }
    st[sp++] = (Frame){next, 0};
  }
  if (st != small) gp_free(st);
}

GPDimsStr gp_dims_str(int32_t n, const int64_t *dims) {
  GPDimsStr r;
  size_t k = 0, cap = sizeof r.s;
  r.s[k++] = '(';
  for (int32_t i = 0; i < n; i++) {
    if (k + 28 >= cap) {
      k += (size_t)snprintf(r.s + k, cap - k, "...");
      break;
    }
    if (dims[i] == GP_DIM_ANY)
      k += (size_t)snprintf(r.s + k, cap - k, "%s?", i ? ", " : "");
    else
      k += (size_t)snprintf(r.s + k, cap - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
  }
  snprintf(r.s + k, cap - k, ")");
  return r;
}

int64_t gp_type_numel(const GPType *t) {
  if (!t || t->kind != GP_TYPE_TENSOR) return -1;
  int64_t n = 1;
  for (int32_t i = 0; i < t->n; i++) {
    if (t->tensor.shape[i] == GP_DIM_ANY) return -1;
    n *= t->tensor.shape[i];
  }
  return n;
}

void gp_types_shutdown(void) {
  pthread_mutex_lock(&intern_lock);
  for (size_t i = 0; i < table_cap; i++)
    if (table[i]) gp_free((char *)table[i] - offsetof(TypeCell, type));
  gp_free(table);
  table = NULL;
  table_len = table_cap = 0;
  pthread_mutex_unlock(&intern_lock);
}
