/*
 * k_sort.c -- kernels: topk, argsort, sort, cumsum, cumprod, reverse (ir/ops/ops_sort.c).
 *
 * Every kernel reads its input in compact row-major order (a strided input is copied first)
 * and works on "lines" along the axis: outer * inner lines of extent n, element k of line
 * (o, i) at (o * n + k) * inner + i.
 *
 * Sorting is a stable merge sort of indices, so equal keys keep the lower index first (what
 * ONNX's TopK requires, ascending or descending).  Keys compare as double for floats and as
 * int64 for integers and bool.  NaN counts as larger than every number: last in ascending
 * order, first in descending order (the k largest).
 *
 * cumsum / cumprod convert every element to the result dtype first (as TVM casts before it
 * scans), then accumulate: floats in double (each result rounded once into the dtype),
 * integers in uint64 (wrapping; the stored low bits equal the scan wrapped in the dtype), bool
 * as 0/1 stored as x != 0.  exclusive gives the scan of the elements before each one (0 for
 * cumsum, 1 for cumprod at the first).
 */
#include "kernel.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define K_GRAIN 16384 /* elements per thread, at least */

static int check_io(const GPKernelArgs *args, int32_t nin, int32_t nout) {
  if (args->num_inputs != nin || args->num_outputs != nout) {
    gp_error_set(GP_ERR_INTERNAL, "kernel called with %d inputs and %d outputs (expected %d and %d)",
                 (int)args->num_inputs, (int)args->num_outputs, (int)nin, (int)nout);
    return -1;
  }
  return 0;
}

/* outer, n, inner of t around axis (negative counts from the end). */
static int lines_of(const DLTensor *t, int64_t axis, int64_t *outer, int64_t *n, int64_t *inner) {
  int32_t nd = t->ndim;
  int64_t a = axis < 0 ? axis + nd : axis;
  if (a < 0 || a >= nd) {
    gp_error_set(GP_ERR_VALUE, "axis %lld is out of range for rank %d", (long long)axis, (int)nd);
    return -1;
  }
  *outer = 1;
  *inner = 1;
  for (int32_t i = 0; i < nd; i++) {
    if (i < a) *outer *= t->shape[i];
    else if (i > a) *inner *= t->shape[i];
  }
  *n = t->shape[a];
  return 0;
}

/* t's elements compact and aligned to their size (a copy into *scratch when needed). */
static const char *compact_aligned(const DLTensor *t, void **scratch) {
  const char *p = gp_k_compact(t, scratch);
  size_t el = gp_dtype_bytes(t->dtype);
  if (!*scratch && el > 1 && (uintptr_t)p % el != 0) {
    size_t bytes = (size_t)gp_k_numel(t) * el;
    *scratch = gp_malloc(bytes);
    memcpy(*scratch, p, bytes);
    p = *scratch;
  }
  return p;
}

/* ------------------------------------------------------------------------------------------ */
/* cumsum, cumprod                                                                             */

typedef struct ScanJob {
  const char *in;
  char *out;
  int ikd, okd;
  size_t iel, oel;
  int64_t n, inner;
  bool prod, exclusive;
} ScanJob;

static void scan_lines(void *ctx, int64_t l0, int64_t l1) {
  const ScanJob *j = ctx;
  bool f = gp_k_is_float(j->okd);
  for (int64_t l = l0; l < l1; l++) {
    int64_t o = l / j->inner, i = l % j->inner;
    double facc = j->prod ? 1.0 : 0.0;
    uint64_t iacc = j->prod ? 1 : 0;
    for (int64_t k = 0; k < j->n; k++) {
      int64_t e = (o * j->n + k) * j->inner + i;
      const char *src = j->in + (size_t)e * j->iel;
      char *dst = j->out + (size_t)e * j->oel;
      if (f) {
        double x = gp_k_load_f64(src, j->ikd);
        if (j->okd == GP_K_F32) x = (double)(float)x;
        else if (j->okd == GP_K_F16) x = (double)gp_f16_to_f32(gp_f64_to_f16(x));
        if (j->exclusive) gp_k_store_f64(dst, j->okd, facc);
        facc = j->prod ? facc * x : facc + x;
        if (!j->exclusive) gp_k_store_f64(dst, j->okd, facc);
      } else {
        int64_t x = gp_k_load_i64(src, j->ikd);
        if (j->okd == GP_K_BOOL) x = x != 0;
        if (j->exclusive) gp_k_store_i64(dst, j->okd, (int64_t)iacc);
        iacc = j->prod ? iacc * (uint64_t)x : iacc + (uint64_t)x;
        if (!j->exclusive) gp_k_store_i64(dst, j->okd, (int64_t)iacc);
      }
    }
  }
}

static int scan_kernel(const GPKernelArgs *args, bool prod) {
  if (check_io(args, 1, 1) != 0) return -1;
  const DLTensor *t = args->inputs[0];
  DLTensor *out = args->outputs[0];
  ScanJob j;
  memset(&j, 0, sizeof j);
  if (gp_k_dtype_check(t->dtype, "data", &j.ikd) != 0) return -1;
  if (gp_k_dtype_check(out->dtype, "dtype", &j.okd) != 0) return -1;
  int64_t outer = 1;
  j.inner = 1;
  if (gp_ops_attr_none(args->op, args->attrs, "axis")) {
    j.n = gp_k_numel(t);
  } else if (lines_of(t, gp_ops_attr_int(args->op, args->attrs, "axis"), &outer, &j.n, &j.inner) != 0) {
    return -1;
  }
  if (gp_k_numel(out) != outer * j.n * j.inner) {
    gp_error_set(GP_ERR_INTERNAL, "the result has %lld elements, expected %lld", (long long)gp_k_numel(out),
                 (long long)(outer * j.n * j.inner));
    return -1;
  }
  if (outer * j.n * j.inner == 0) return 0;
  void *scratch = NULL;
  j.in = compact_aligned(t, &scratch);
  j.out = (char *)out->data + out->byte_offset;
  j.iel = gp_dtype_bytes(t->dtype);
  j.oel = gp_dtype_bytes(out->dtype);
  j.prod = prod;
  j.exclusive = gp_ops_attr_bool(args->op, args->attrs, "exclusive");
  int64_t grain = K_GRAIN / j.n;
  gp_k_parallel_for(args->num_threads, outer * j.inner, grain < 1 ? 1 : grain, scan_lines, &j);
  gp_free(scratch);
  return 0;
}

static int kern_cumsum(const GPKernelArgs *args, void *user) {
  (void)user;
  return scan_kernel(args, false);
}

static int kern_cumprod(const GPKernelArgs *args, void *user) {
  (void)user;
  return scan_kernel(args, true);
}

/* ------------------------------------------------------------------------------------------ */
/* reverse                                                                                     */

static int kern_reverse(const GPKernelArgs *args, void *user) {
  (void)user;
  if (check_io(args, 1, 1) != 0) return -1;
  const DLTensor *t = args->inputs[0];
  DLTensor *out = args->outputs[0];
  int kd;
  if (gp_k_dtype_check(t->dtype, "data", &kd) != 0) return -1;
  if (gp_ops_attr_none(args->op, args->attrs, "axis")) {
    gp_error_set(GP_ERR_VALUE, "attribute axis is required");
    return -1;
  }
  int64_t outer, n, inner;
  if (lines_of(t, gp_ops_attr_int(args->op, args->attrs, "axis"), &outer, &n, &inner) != 0) return -1;
  if (gp_k_numel(out) != gp_k_numel(t) || !gp_dtype_eq(out->dtype, t->dtype)) {
    gp_error_set(GP_ERR_INTERNAL, "the result does not have the type of data");
    return -1;
  }
  if (outer * n * inner == 0) return 0;
  void *scratch = NULL;
  const char *in = gp_k_compact(t, &scratch);
  char *dst = (char *)out->data + out->byte_offset;
  size_t row = (size_t)inner * gp_dtype_bytes(t->dtype);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t k = 0; k < n; k++)
      memcpy(dst + (size_t)(o * n + k) * row, in + (size_t)(o * n + (n - 1 - k)) * row, row);
  gp_free(scratch);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* topk, argsort, sort                                                                         */

typedef struct SortJob {
  const char *in;
  int kd;
  size_t el;
  int64_t n, inner, kk; /* kk: elements kept per line */
  bool ascend;
  char *vals; /* NULL when not wanted */
  char *idx;  /* NULL when not wanted */
  int ikd;
  size_t iel;
} SortJob;

/* Whether element a goes strictly before element b. */
static inline bool before_f(double a, double b, bool asc) {
  bool an = a != a, bn = b != b;
  if (asc) return bn ? !an : a < b;
  return an ? !bn : a > b;
}

static inline bool before_i(int64_t a, int64_t b, bool asc) { return asc ? a < b : a > b; }

static void merge_sort(int64_t *ix, int64_t *tmp, int64_t n, const double *fk, const int64_t *ik, bool asc) {
  for (int64_t w = 1; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t a = lo, b = mid, t = lo;
      while (a < mid && b < hi) {
        bool right = fk ? before_f(fk[ix[b]], fk[ix[a]], asc) : before_i(ik[ix[b]], ik[ix[a]], asc);
        tmp[t++] = right ? ix[b++] : ix[a++];
      }
      while (a < mid) tmp[t++] = ix[a++];
      while (b < hi) tmp[t++] = ix[b++];
    }
    memcpy(ix, tmp, (size_t)n * sizeof *ix);
  }
}

static void sort_lines(void *ctx, int64_t l0, int64_t l1) {
  const SortJob *j = ctx;
  int64_t n = j->n;
  bool f = gp_k_is_float(j->kd);
  int64_t *ix = gp_malloc((size_t)n * 2 * sizeof *ix), *tmp = ix + n;
  double *fk = f ? gp_malloc((size_t)n * sizeof *fk) : NULL;
  int64_t *ik = f ? NULL : gp_malloc((size_t)n * sizeof *ik);
  for (int64_t l = l0; l < l1; l++) {
    int64_t o = l / j->inner, i = l % j->inner;
    for (int64_t k = 0; k < n; k++) {
      const char *p = j->in + (size_t)((o * n + k) * j->inner + i) * j->el;
      if (f) fk[k] = gp_k_load_f64(p, j->kd);
      else ik[k] = gp_k_load_i64(p, j->kd);
      ix[k] = k;
    }
    merge_sort(ix, tmp, n, fk, ik, j->ascend);
    for (int64_t t = 0; t < j->kk; t++) {
      int64_t e = (o * j->kk + t) * j->inner + i;
      if (j->vals)
        memcpy(j->vals + (size_t)e * j->el, j->in + (size_t)((o * n + ix[t]) * j->inner + i) * j->el, j->el);
      if (j->idx) gp_k_store_i64(j->idx + (size_t)e * j->iel, j->ikd, ix[t]);
    }
  }
  gp_free(ix);
  gp_free(fk);
  gp_free(ik);
}

/* want_vals / want_idx: which outputs exist (in that order). */
static int sort_kernel(const GPKernelArgs *args, bool want_vals, bool want_idx, int64_t k, bool ascend) {
  if (check_io(args, 1, (want_vals ? 1 : 0) + (want_idx ? 1 : 0)) != 0) return -1;
  const DLTensor *t = args->inputs[0];
  SortJob j;
  memset(&j, 0, sizeof j);
  if (gp_k_dtype_check(t->dtype, "data", &j.kd) != 0) return -1;
  int64_t outer;
  if (lines_of(t, gp_ops_attr_int(args->op, args->attrs, "axis"), &outer, &j.n, &j.inner) != 0) return -1;
  j.kk = k >= 1 && k < j.n ? k : j.n;
  j.ascend = ascend;
  j.el = gp_dtype_bytes(t->dtype);
  int32_t oi = 0;
  int64_t want = outer * j.kk * j.inner;
  if (want_vals) {
    DLTensor *v = args->outputs[oi++];
    if (!gp_dtype_eq(v->dtype, t->dtype) || gp_k_numel(v) != want) {
      gp_error_set(GP_ERR_INTERNAL, "the values result does not have the expected type");
      return -1;
    }
    j.vals = (char *)v->data + v->byte_offset;
  }
  if (want_idx) {
    DLTensor *v = args->outputs[oi++];
    if (gp_k_dtype_check(v->dtype, "dtype", &j.ikd) != 0) return -1;
    if (gp_k_numel(v) != want) {
      gp_error_set(GP_ERR_INTERNAL, "the indices result does not have the expected shape");
      return -1;
    }
    j.idx = (char *)v->data + v->byte_offset;
    j.iel = gp_dtype_bytes(v->dtype);
  }
  if (want == 0) return 0;
  void *scratch = NULL;
  j.in = compact_aligned(t, &scratch);
  int64_t grain = K_GRAIN / j.n;
  gp_k_parallel_for(args->num_threads, outer * j.inner, grain < 1 ? 1 : grain, sort_lines, &j);
  gp_free(scratch);
  return 0;
}

static int kern_topk(const GPKernelArgs *args, void *user) {
  (void)user;
  if (gp_ops_attr_none(args->op, args->attrs, "k")) {
    gp_error_set(GP_ERR_UNSUPPORTED, "k None (a run-time k) is not supported");
    return -1;
  }
  int64_t k = gp_ops_attr_int(args->op, args->attrs, "k");
  bool asc = gp_ops_attr_bool(args->op, args->attrs, "is_ascend");
  const char *rt = gp_ops_attr_str(args->op, args->attrs, "ret_type");
  bool both = strcmp(rt, "both") == 0;
  bool vals = both || strcmp(rt, "values") == 0, idx = both || strcmp(rt, "indices") == 0;
  if (!vals && !idx) {
    gp_error_set(GP_ERR_VALUE, "ret_type \"%s\" is not \"both\", \"values\" or \"indices\"", rt);
    return -1;
  }
  return sort_kernel(args, vals, idx, k, asc);
}

static int kern_argsort(const GPKernelArgs *args, void *user) {
  (void)user;
  return sort_kernel(args, false, true, 0, gp_ops_attr_bool(args->op, args->attrs, "is_ascend"));
}

static int kern_sort(const GPKernelArgs *args, void *user) {
  (void)user;
  return sort_kernel(args, true, false, 0, gp_ops_attr_bool(args->op, args->attrs, "is_ascend"));
}

void gp_kernels_register_sort(void) {
  gp_kernel_set("topk", kern_topk);
  gp_kernel_set("argsort", kern_argsort);
  gp_kernel_set("sort", kern_sort);
  gp_kernel_set("cumsum", kern_cumsum);
  gp_kernel_set("cumprod", kern_cumprod);
  gp_kernel_set("reverse", kern_reverse);
}
