/*
 * checked.h -- the one place for checked arithmetic on sizes taken from input: products of
 * dims, element counts, byte sizes, counts read from files, indices taken from tensors or
 * attributes.  Every such value is checked with one of these before it is used (allocated,
 * multiplied further, compared, indexed with); nothing computes them with a bare `*`.
 *
 * Header only, libc only (see scratch.h for what common/ may use).  Every function returns
 * true when the result is valid and stores it; on overflow / out of range it returns false and
 * leaves *out unspecified.  Callers turn false into an error naming what overflowed.
 *
 * Limits: a tensor (data) has at most GP_MAX_TENSOR_ELEMS elements (2^48); a tensor *type*
 * may describe at most GP_MAX_TYPE_ELEMS (2^56): the product of its known non-zero dims.  Both
 * leave room for multiplying by an element size (<= 256 bytes) and for adding a few such
 * products without reaching INT64_MAX, so code past these checks may use plain int64_t
 * arithmetic on element counts and byte sizes.
 */
#ifndef GP_CHECKED_H
#define GP_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_MAX_TENSOR_ELEMS ((int64_t)1 << 48)
#define GP_MAX_TYPE_ELEMS ((int64_t)1 << 56)

/* a * b, a + b (int64): false on overflow. */
static inline bool gp_mul_i64(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }
static inline bool gp_add_i64(int64_t a, int64_t b, int64_t *out) { return !__builtin_add_overflow(a, b, out); }
/* a * b, a + b (size_t): false on overflow. */
static inline bool gp_mul_size(size_t a, size_t b, size_t *out) { return !__builtin_mul_overflow(a, b, out); }
static inline bool gp_add_size(size_t a, size_t b, size_t *out) { return !__builtin_add_overflow(a, b, out); }

/* The element count of dims d[0..n): false when a dim is negative, or when the product of the
 * non-zero dims exceeds `limit` (so every partial product of the same dims is below it too,
 * even when a zero dim makes the count 0). */
static inline bool gp_dims_count(int32_t n, const int64_t *d, int64_t limit, int64_t *out) {
  int64_t nz = 1;
  bool zero = false;
  for (int32_t i = 0; i < n; i++) {
    if (d[i] < 0) return false;
    if (d[i] == 0) {
      zero = true;
      continue;
    }
    if (__builtin_mul_overflow(nz, d[i], &nz) || nz > limit) return false;
  }
  *out = zero ? 0 : nz;
  return true;
}

/* count elements of `elem_bytes` bytes each, as a size_t byte count: false on overflow or a
 * negative count. */
static inline bool gp_count_bytes(int64_t count, size_t elem_bytes, size_t *out) {
  if (count < 0) return false;
  return !__builtin_mul_overflow((size_t)count, elem_bytes, out);
}

/* An index i into an extent n: true when 0 <= i < n. */
static inline bool gp_index_ok(int64_t i, int64_t n) { return i >= 0 && i < n; }

/* An index that may count from the end (numpy: -n <= i < n) normalized into [0, n). */
static inline bool gp_index_norm(int64_t i, int64_t n, int64_t *out) {
  if (i < -n || i >= n) return false;
  *out = i < 0 ? i + n : i;
  return true;
}

/* A count read from a file or message that must fit in what is left of it: 0 <= count and
 * count * elem_bytes <= avail. */
static inline bool gp_count_fits(int64_t count, size_t elem_bytes, size_t avail) {
  size_t b;
  return gp_count_bytes(count, elem_bytes, &b) && b <= avail;
}

/* A double as int64_t without undefined behaviour: NaN is 0, values beyond the range saturate. */
static inline int64_t gp_f64_to_i64_sat(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

#endif
