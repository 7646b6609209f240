/* tensor.c -- tensor objects over DLPack.
 * A tensor either wraps a producer's DLManagedTensor (its deleter runs once, when the tensor
 * is freed) or owns a 64-byte aligned buffer of its own (in its own block when small), or has
 * no data at all (a constant of known type whose values are unknown). */
#include "ir.h"
#include "../common/checked.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  GPTensor pub;
  void *own_data;  /* buffer owned by the tensor (calloc'd; data is its first 64-byte aligned
                   * address), or NULL */
  size_t map_len;  /* own_data is a mapping of this many bytes (huge-page backed), or 0 */
  bool file_backed; /* the producer's data views a read-only file mapping (never written) */
  bool pooled;     /* a small tensor: header, dims and data are one node-pool block */
  int64_t dims[];  /* shape[ndim] then strides[ndim] when the producer gave strides */
} TensorImpl;

/* Data of at most this many bytes lives in the tensor's own block, from the node pool: a
 * folded constant costs one allocation instead of two from malloc, and its values sit next to
 * its header (a pass that reads a constant's data touches one place). */
#define INLINE_MAX 1024

static void tensor_free(GPObject *o) {
  TensorImpl *t = (TensorImpl *)o;
  if (t->pub.managed && t->pub.managed->deleter) t->pub.managed->deleter(t->pub.managed);
  if (t->pooled) {
    gp_node_free(t);
    return;
  }
  if (t->map_len)
    munmap(t->own_data, t->map_len);
  else
    free(t->own_data);
  gp_free(t);
}

static bool dtype_supported(DLDataType dt) {
  if (dt.lanes != 1) return false;
  switch (dt.code) {
  case kDLFloat: return dt.bits == 16 || dt.bits == 32 || dt.bits == 64;
  case kDLBfloat: return dt.bits == 16;
  case kDLInt: return dt.bits == 2 || dt.bits == 4 || dt.bits == 8 || dt.bits == 16 || dt.bits == 32 || dt.bits == 64;
  case kDLUInt:
    return dt.bits == 1 || dt.bits == 2 || dt.bits == 4 || dt.bits == 8 || dt.bits == 16 || dt.bits == 32 ||
           dt.bits == 64;
  default: return gp_dtype_is_storage(dt, NULL); /* the float8 / float4 types */
  }
}

static void tensor_init(TensorImpl *t, DLDataType dtype, int32_t ndim, const int64_t *shape, const int64_t *strides) {
  if (ndim) memcpy(t->dims, shape, (size_t)ndim * sizeof(int64_t));
  if (strides && ndim) memcpy(t->dims + ndim, strides, (size_t)ndim * sizeof(int64_t));
  t->pub.dl.device = (DLDevice){kDLCPU, 0};
  t->pub.dl.dtype = dtype;
  t->pub.dl.ndim = ndim;
  t->pub.dl.shape = ndim ? t->dims : NULL;
  t->pub.dl.strides = strides && ndim ? t->dims + ndim : NULL;
}

static TensorImpl *tensor_new(DLDataType dtype, int32_t ndim, const int64_t *shape, const int64_t *strides) {
  size_t ndims = (size_t)ndim * (strides ? 2 : 1);
  TensorImpl *t = gp_object_alloc(sizeof(TensorImpl) + ndims * sizeof(int64_t), GP_TI_TENSOR, tensor_free);
  tensor_init(t, dtype, ndim, shape, strides);
  return t;
}

static int check_shape(int32_t ndim, const int64_t *shape, const char *what) {
  if (ndim < 0 || ndim > 64) {
    gp_error_set(GP_ERR_VALUE, "%s: rank %d is out of range (0 to 64)", what, (int)ndim);
    return -1;
  }
  if (ndim && !shape) {
    gp_error_set(GP_ERR_VALUE, "%s: rank %d but no shape array", what, (int)ndim);
    return -1;
  }
  for (int32_t i = 0; i < ndim; i++)
    if (shape[i] < 0) {
      gp_error_set(GP_ERR_VALUE, "%s: dimension %d is negative (%lld)", what, (int)i, (long long)shape[i]);
      return -1;
    }
  int64_t n;
  if (!gp_dims_count(ndim, shape, GP_MAX_TENSOR_ELEMS, &n)) {
    gp_error_set(GP_ERR_VALUE, "%s: shape %s has more than 2^48 elements", what, gp_dims_str(ndim, shape).s);
    return -1;
  }
  return 0;
}

GPTensor *gp_tensor_from_dlpack(DLManagedTensor *managed) {
  if (!managed) {
    gp_error_set(GP_ERR_VALUE, "tensor_from_dlpack: NULL DLManagedTensor");
    return NULL;
  }
  DLTensor *d = &managed->dl_tensor;
  const char *bad = NULL;
  char dt[24];
  if (d->device.device_type != kDLCPU && d->device.device_type != kDLCUDAHost)
    bad = "only CPU tensors are supported";
  else if (!dtype_supported(d->dtype))
    bad = "unsupported dtype";
  if (bad) {
    gp_error_set(GP_ERR_UNSUPPORTED, "DLPack tensor: %s (device type %d, dtype %s)", bad,
                 (int)d->device.device_type, gp_dtype_str(d->dtype, dt));
    if (managed->deleter) managed->deleter(managed);
    return NULL;
  }
  if (check_shape(d->ndim, d->shape, "DLPack tensor") != 0) {
    if (managed->deleter) managed->deleter(managed);
    return NULL;
  }
  if (d->strides)
    for (int32_t i = 0; i < d->ndim; i++)
      if (d->strides[i] < 0) {
        gp_error_set(GP_ERR_UNSUPPORTED, "DLPack tensor: negative stride %lld on axis %d",
                     (long long)d->strides[i], (int)i);
        if (managed->deleter) managed->deleter(managed);
        return NULL;
      }
  int64_t numel = 1;
  for (int32_t i = 0; i < d->ndim; i++) numel *= d->shape[i]; /* bounded by check_shape */
  if (d->strides && numel > 0) {
    /* the farthest element, in bytes from data + byte_offset, must be addressable */
    int64_t last = 0, step;
    bool ok = true;
    for (int32_t i = 0; i < d->ndim && ok; i++)
      ok = gp_mul_i64(d->strides[i], d->shape[i] - 1, &step) && gp_add_i64(last, step, &last);
    ok = ok && gp_mul_i64(last + 1, (int64_t)gp_dtype_bytes(d->dtype), &last) &&
         d->byte_offset <= (uint64_t)INT64_MAX && gp_add_i64(last, (int64_t)d->byte_offset, &last) &&
         (uint64_t)last <= UINTPTR_MAX - (uintptr_t)d->data;
    if (!ok) {
      gp_error_set(GP_ERR_VALUE, "DLPack tensor: strides %s over shape %s overflow the address space",
                   gp_dims_str(d->ndim, d->strides).s, gp_dims_str(d->ndim, d->shape).s);
      if (managed->deleter) managed->deleter(managed);
      return NULL;
    }
  }
  if (!d->data && numel > 0) {
    gp_error_set(GP_ERR_VALUE, "DLPack tensor: data is NULL for %lld elements", (long long)numel);
    if (managed->deleter) managed->deleter(managed);
    return NULL;
  }
  TensorImpl *t = tensor_new(d->dtype, d->ndim, d->shape, d->strides);
  t->pub.dl.device = d->device;
  t->pub.dl.data = d->data;
  t->pub.dl.byte_offset = d->byte_offset;
  t->pub.managed = managed;
  return &t->pub;
}

#define HUGE_PAGE ((size_t)2 << 20)
/* Under AddressSanitizer every buffer stays calloc'd, so overruns hit a redzone. */
#if defined(__SANITIZE_ADDRESS__)
#define HUGE_FROM SIZE_MAX
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HUGE_FROM SIZE_MAX
#endif
#endif
#ifndef HUGE_FROM
#define HUGE_FROM ((size_t)2 << 20)
#endif

/* Transparent huge pages for large buffers only on request: GRAPHPASS_HUGEPAGES=1 madvises
 * them (MADV_HUGEPAGE), otherwise the system's policy applies.  On the VM this project is
 * measured on, huge pages often come cold from the host (free page reporting) and a fresh
 * process then wrote ResNet-50's folded weights 4x slower than in 4 KiB pages (docs/DESIGN.md,
 * "Large tensors"); warm, they are twice as fast. */
static bool want_hugepages(void) {
  static _Atomic int cached = -1; /* -1 unknown, 0 no, 1 yes */
  int v = atomic_load_explicit(&cached, memory_order_relaxed);
  if (v < 0) {
    const char *env = getenv("GRAPHPASS_HUGEPAGES");
    v = env && strcmp(env, "1") == 0;
    atomic_store_explicit(&cached, v, memory_order_relaxed);
  }
  return v;
}

GPTensor *gp_tensor_alloc(DLDataType dtype, int32_t ndim, const int64_t *shape, bool with_data) {
  char dt[24];
  if (!dtype_supported(dtype)) {
    gp_error_set(GP_ERR_UNSUPPORTED, "tensor of unsupported dtype %s", gp_dtype_str(dtype, dt));
    return NULL;
  }
  if (check_shape(ndim, shape, "tensor") != 0) return NULL;
  if (with_data) { /* small: one pooled block, data 64-byte aligned after the dims */
    size_t nbytes = gp_dtype_bytes(dtype);
    for (int32_t i = 0; i < ndim && nbytes <= INLINE_MAX; i++) nbytes *= (size_t)shape[i];
    if (nbytes <= INLINE_MAX) {
      size_t head = sizeof(TensorImpl) + (size_t)ndim * sizeof(int64_t);
      TensorImpl *t = gp_node_object_alloc(head + 63 + nbytes, GP_TI_TENSOR, tensor_free); /* zeroed */
      tensor_init(t, dtype, ndim, shape, NULL);
      t->pooled = true;
      t->pub.dl.data = (void *)(((uintptr_t)t + head + 63) & ~(uintptr_t)63);
      return &t->pub;
    }
  }
  TensorImpl *t = tensor_new(dtype, ndim, shape, NULL);
  if (with_data) {
    size_t nbytes = gp_tensor_nbytes(&t->pub);
    /* calloc, not aligned_alloc + memset: memory the allocator knows is zero (fresh pages
     * from the kernel, for large buffers) is not written twice, so the first write of a
     * kernel filling the tensor is the only one.  64 spare bytes for the alignment. */
    size_t alloc = ((nbytes + 63) & ~(size_t)63) + 64;
    void *base = NULL;
    if (nbytes >= HUGE_FROM && nbytes <= SIZE_MAX - 2 * HUGE_PAGE) {
      /* A large buffer is its own mapping (given back whole when freed), 2 MiB-aligned so that
       * it can be in 2 MiB pages where the kernel gives them (want_hugepages; the tail in 4 KiB
       * pages, so nothing is wasted): one fault per 2 MiB instead of 512. */
      size_t len = (nbytes + 4095) & ~(size_t)4095; /* the tail past the last 2 MiB: small pages */
      void *m = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m != MAP_FAILED) {
        /* trim to a 2 MiB-aligned window */
        uintptr_t a = ((uintptr_t)m + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
        size_t head = a - (uintptr_t)m, tail = HUGE_PAGE - head;
        if (head) munmap(m, head);
        if (tail) munmap((char *)a + len, tail);
        if (want_hugepages()) madvise((void *)a, len, MADV_HUGEPAGE);
        t->own_data = (void *)a;
        t->map_len = len;
        t->pub.dl.data = (void *)a;
        return &t->pub;
      }
    }
    if (nbytes <= SIZE_MAX - 128) base = calloc(1, alloc);
    if (!base) {
      gp_release(t);
      gp_error_set(GP_ERR_MEMORY, "cannot allocate %zu bytes for a tensor", nbytes);
      return NULL;
    }
    t->own_data = base;
    t->pub.dl.data = (void *)(((uintptr_t)base + 63) & ~(uintptr_t)63);
  }
  return &t->pub;
}

void gp_tensor_set_file_backed(GPTensor *t) {
  if (t && t->managed) ((TensorImpl *)t)->file_backed = true;
}

void gp_tensor_drop_pages(const GPTensor *t) {
  if (!t || !((const TensorImpl *)t)->file_backed || !t->dl.data) return;
  /* MADV_DONTNEED on a private file mapping that was never written: the pages come back from
   * the file on the next read. */
  uintptr_t first = (uintptr_t)t->dl.data + t->dl.byte_offset;
  uintptr_t lo = (first + 4095) & ~(uintptr_t)4095, hi = (first + gp_tensor_nbytes(t)) & ~(uintptr_t)4095;
  if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

size_t gp_tensor_nbytes(const GPTensor *t) {
  size_t n = gp_dtype_bytes(t->dl.dtype);
  for (int32_t i = 0; i < t->dl.ndim; i++) n *= (size_t)t->dl.shape[i];
  return n;
}

bool gp_tensor_is_compact(const GPTensor *t) {
  if (!t->dl.strides) return true;
  int64_t expect = 1;
  for (int32_t i = t->dl.ndim - 1; i >= 0; i--) {
    if (t->dl.shape[i] != 1 && t->dl.strides[i] != expect) return false;
    expect *= t->dl.shape[i];
  }
  return true;
}

const GPType *gp_tensor_type(const GPTensor *t) {
  return gp_type_tensor(t->dl.dtype, t->dl.ndim, t->dl.shape);
}

GPTensor *gp_tensor_scalar_f64(DLDataType dtype, double v) {
  GPTensor *t = gp_tensor_alloc(dtype, 0, NULL, true);
  if (!t) return NULL;
  void *p = t->dl.data;
  if (dtype.code == kDLFloat && dtype.bits == 32) {
    float f = (float)v;
    memcpy(p, &f, 4);
  } else if (dtype.code == kDLFloat && dtype.bits == 64) {
    memcpy(p, &v, 8);
  } else if (dtype.code == kDLFloat && dtype.bits == 16) {
    /* float -> IEEE half, round to nearest even */
    float f = (float)v;
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffffu;
    uint16_t h;
    if (((x >> 23) & 0xff) == 0xff) {
      h = (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    } else if (exp >= 31) {
      h = (uint16_t)(sign | 0x7c00u);
    } else if (exp <= 0) {
      if (exp < -10) {
        h = (uint16_t)sign;
      } else {
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t hm = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (hm & 1))) hm++;
        h = (uint16_t)(sign | hm);
      }
    } else {
      uint32_t hm = mant >> 13, rem = mant & 0x1fffu;
      uint32_t r = sign | ((uint32_t)exp << 10) | hm;
      if (rem > 0x1000u || (rem == 0x1000u && (hm & 1))) r++;
      h = (uint16_t)r;
    }
    memcpy(p, &h, 2);
  } else if (dtype.code == kDLBfloat) {
    float f = (float)v;
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t h = (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
    memcpy(p, &h, 2);
  } else if (dtype.code != kDLInt && dtype.code != kDLUInt) { /* float8 / float4: not saturated */
    *(uint8_t *)p = (uint8_t)gp_f32_to_narrow_float(dtype, (float)v, false, 1);
  } else {
    gp_release(t);
    return gp_tensor_scalar_i64(dtype, gp_f64_to_i64_sat(v)); /* out of range: saturated */
  }
  return t;
}

GPTensor *gp_tensor_scalar_i64(DLDataType dtype, int64_t v) {
  if (dtype.code != kDLInt && dtype.code != kDLUInt) return gp_tensor_scalar_f64(dtype, (double)v);
  GPTensor *t = gp_tensor_alloc(dtype, 0, NULL, true);
  if (!t) return NULL;
  size_t nb = gp_dtype_bytes(dtype);
  uint64_t u = (uint64_t)v;
  if (dtype.code == kDLUInt && dtype.bits == 1) u = v != 0;
  /* little-endian store of the low nb bytes */
  unsigned char *p = t->dl.data;
  for (size_t i = 0; i < nb; i++) p[i] = (unsigned char)(u >> (8 * i));
  return t;
}

static const unsigned char *elem_ptr(const GPTensor *t, int64_t i) {
  size_t esz = gp_dtype_bytes(t->dl.dtype);
  const unsigned char *base = (const unsigned char *)t->dl.data + t->dl.byte_offset;
  if (!t->dl.strides) return base + (size_t)i * esz;
  int64_t off = 0;
  for (int32_t d = t->dl.ndim - 1; d >= 0; d--) {
    int64_t dim = t->dl.shape[d];
    int64_t idx = dim ? i % dim : 0;
    i = dim ? i / dim : 0;
    off += idx * t->dl.strides[d];
  }
  return base + (size_t)off * esz;
}

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (!mant) {
      x = sign;
    } else {
      int e = -1;
      do {
        e++;
        mant <<= 1;
      } while (!(mant & 0x400u));
      x = sign | (uint32_t)(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13;
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | mant << 13;
  } else {
    x = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}

double gp_tensor_max_abs(const GPTensor *t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->dl.ndim; i++) n *= t->dl.shape[i];
  double m = 0;
  for (int64_t i = 0; t->dl.data && i < n; i++) {
    double v = fabs(gp_tensor_get_f64(t, i));
    if (v > m) m = v;
  }
  return m;
}

double gp_tensor_get_f64(const GPTensor *t, int64_t i) {
  DLDataType dt = t->dl.dtype;
  const unsigned char *p = elem_ptr(t, i);
  if (dt.code == kDLFloat) {
    if (dt.bits == 32) {
      float f;
      memcpy(&f, p, 4);
      return f;
    }
    if (dt.bits == 64) {
      double d;
      memcpy(&d, p, 8);
      return d;
    }
    uint16_t h;
    memcpy(&h, p, 2);
    return half_to_float(h);
  }
  if (dt.code == kDLBfloat) {
    uint16_t h;
    memcpy(&h, p, 2);
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
  }
  if (dt.code != kDLInt && dt.code != kDLUInt) return gp_narrow_float_to_f32(dt, *p); /* float8 / float4 */
  if (dt.code == kDLUInt) {
    uint64_t u = 0;
    for (size_t k = 0; k < gp_dtype_bytes(dt); k++) u |= (uint64_t)p[k] << (8 * k);
    return (double)u;
  }
  return (double)gp_tensor_get_i64(t, i);
}

int64_t gp_tensor_get_i64(const GPTensor *t, int64_t i) {
  DLDataType dt = t->dl.dtype;
  if (dt.code != kDLInt && dt.code != kDLUInt) {
    double d = gp_tensor_get_f64(t, i);
    if (isnan(d)) return 0;
    if (d >= 9.2e18) return INT64_MAX;
    if (d <= -9.2e18) return INT64_MIN;
    return (int64_t)d;
  }
  const unsigned char *p = elem_ptr(t, i);
  size_t nb = gp_dtype_bytes(dt);
  uint64_t u = 0;
  for (size_t k = 0; k < nb; k++) u |= (uint64_t)p[k] << (8 * k);
  if (dt.code == kDLInt && nb < 8 && (u >> (8 * nb - 1)) & 1) u |= ~(uint64_t)0 << (8 * nb);
  return (int64_t)u;
}
