/*
 * k_norm.c -- reference kernels of the normalization ops: nn.layer_norm, nn.instance_norm,
 * nn.group_norm, nn.l2_normalize (ir/ops/ops_nn.c) and variance (ir/ops/ops_reduce.c), the
 * reduction SimplifyInference decomposes the first three into.
 *
 * What each computes (the semantics SimplifyInference's decompositions have, so that a module
 * evaluates to the same numbers before and after the pass):
 *  - layer_norm: statistics over `axis` alone; gamma, beta along `axis`.
 *  - instance_norm: statistics over every axis but 0 and `axis`; gamma, beta along `axis`.
 *  - group_norm: the C channels at `axis` split into num_groups consecutive groups; statistics
 *    per group over the group's channels and every other axis but 0 (at axis 0: over the
 *    group's channels and the other axes); gamma, beta per channel.
 *    out = (x - mean) / sqrt(var + epsilon) [* gamma if scale] [+ beta if center], var biased.
 *  - l2_normalize: x / sqrt(max(sum(x * x over axis), eps)).
 *  - variance(data, mean): sum((data - mean)^2 over axis) / (count - unbiased), mean
 *    broadcasting to data (axis None: all axes; exclude: the other axes).
 * epsilon / eps enter as the float32 value the decompositions' scalar constants hold.
 *
 * Numerics: float16 / float32 / float64 inputs are read into double; mean and variance take
 * two passes (the mean first, then the sum of squared deviations from it), each accumulated in
 * double; the result is rounded once into the output dtype.  Other dtypes are
 * GP_ERR_UNSUPPORTED.  Strided inputs are read through gp_k_compact.  Single-threaded.
 */
#include "eval/kernel.h"

#include <math.h>

#define K_MAXD (GP_K_MAX_RANK + 1) /* group_norm splits one axis in two */

/* An iteration plan over a row-major shape: each element has a statistics index (sstride:
 * 0 on reduced axes) and an index into a per-channel or broadcast vector (vstride). */
typedef struct Plan {
  int32_t nd;
  int64_t shape[K_MAXD];
  int64_t sstride[K_MAXD];
  int64_t vstride[K_MAXD];
  int64_t numel, nstat, count; /* count: elements per statistic */
} Plan;

typedef struct It {
  int64_t idx[K_MAXD];
  int64_t s, v;
} It;

static inline void it_next(const Plan *p, It *it) {
  for (int32_t d = p->nd - 1; d >= 0; d--) {
    it->s += p->sstride[d];
    it->v += p->vstride[d];
    if (++it->idx[d] < p->shape[d]) return;
    it->s -= p->sstride[d] * p->shape[d];
    it->v -= p->vstride[d] * p->shape[d];
    it->idx[d] = 0;
  }
}

/* Fill the statistics strides from red[] (row-major over the kept axes). */
static void plan_stats(Plan *p, const bool *red) {
  int64_t st = 1;
  p->numel = 1;
  p->count = 1;
  for (int32_t d = p->nd - 1; d >= 0; d--) {
    p->numel *= p->shape[d];
    if (red[d]) {
      p->sstride[d] = 0;
      p->count *= p->shape[d];
    } else {
      p->sstride[d] = st;
      st *= p->shape[d];
    }
  }
  p->nstat = st;
}

static int float_kind(const DLTensor *t, const char *what, int *k) {
  if (gp_k_dtype_check(t->dtype, what, k) != 0) return -1;
  if (!gp_k_is_float(*k)) {
    char b[24];
    gp_error_set(GP_ERR_UNSUPPORTED, "%s: dtype %s is not supported (float16, float32, float64 are)",
                 what, gp_dtype_str(t->dtype, b));
    return -1;
  }
  return 0;
}

/* t's elements as a gp_malloc'd array of doubles (row-major). */
static double *load_f64(const DLTensor *t, int k) {
  int64_t n = gp_k_numel(t);
  double *out = gp_malloc((size_t)(n ? n : 1) * sizeof(double));
  void *scratch;
  const void *src = gp_k_compact(t, &scratch);
  if (k == GP_K_F32) {
    const float *s = src;
    for (int64_t i = 0; i < n; i++) out[i] = s[i];
  } else if (k == GP_K_F64) {
    memcpy(out, src, (size_t)n * sizeof(double));
  } else {
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i++) out[i] = gp_f16_to_f32(s[i]);
  }
  gp_free(scratch);
  return out;
}

static void store_f64(DLTensor *t, int k, const double *v, int64_t n) {
  char *p = (char *)t->data + t->byte_offset;
  if (k == GP_K_F32) {
    float *o = (float *)p;
    for (int64_t i = 0; i < n; i++) o[i] = (float)v[i];
  } else if (k == GP_K_F64) {
    memcpy(p, v, (size_t)n * sizeof(double));
  } else {
    uint16_t *o = (uint16_t *)p;
    for (int64_t i = 0; i < n; i++) o[i] = gp_f64_to_f16(v[i]);
  }
}

static int check_io(const GPKernelArgs *a, int32_t nin) {
  if (a->num_inputs != nin || a->num_outputs != 1) {
    gp_error_set(GP_ERR_VALUE, "expects %d inputs and 1 output, got %d and %d", (int)nin,
                 (int)a->num_inputs, (int)a->num_outputs);
    return -1;
  }
  return 0;
}

/* Mean and biased variance per statistic (two passes, double). */
static void moments(const Plan *p, const double *x, double *mean, double *var) {
  for (int64_t s = 0; s < p->nstat; s++) mean[s] = var[s] = 0.0;
  It it = {{0}, 0, 0};
  for (int64_t i = 0; i < p->numel; i++, it_next(p, &it)) mean[it.s] += x[i];
  for (int64_t s = 0; s < p->nstat; s++) mean[s] /= (double)p->count;
  it = (It){{0}, 0, 0};
  for (int64_t i = 0; i < p->numel; i++, it_next(p, &it)) {
    double d = x[i] - mean[it.s];
    var[it.s] += d * d;
  }
  for (int64_t s = 0; s < p->nstat; s++) var[s] /= (double)p->count;
}

/* The three normalizations: plan built by the caller (vstride along the channels). */
static int normalize(const GPKernelArgs *a, Plan *p, const bool *red) {
  int k, kg, kb;
  if (float_kind(a->inputs[0], "data", &k) != 0 || float_kind(a->inputs[1], "gamma", &kg) != 0 ||
      float_kind(a->inputs[2], "beta", &kb) != 0)
    return -1;
  plan_stats(p, red);
  if (p->numel == 0) return 0;
  double eps = (double)(float)gp_ops_attr_float(a->op, a->attrs, "epsilon");
  bool center = gp_ops_attr_bool(a->op, a->attrs, "center");
  bool scale = gp_ops_attr_bool(a->op, a->attrs, "scale");
  double *x = load_f64(a->inputs[0], k);
  double *gamma = load_f64(a->inputs[1], kg), *beta = load_f64(a->inputs[2], kb);
  double *mean = gp_malloc((size_t)p->nstat * sizeof(double));
  double *inv = gp_malloc((size_t)p->nstat * sizeof(double));
  moments(p, x, mean, inv);
  for (int64_t s = 0; s < p->nstat; s++) inv[s] = sqrt(inv[s] + eps);
  It it = {{0}, 0, 0};
  for (int64_t i = 0; i < p->numel; i++, it_next(p, &it)) {
    double y = (x[i] - mean[it.s]) / inv[it.s];
    if (scale) y *= gamma[it.v];
    if (center) y += beta[it.v];
    x[i] = y;
  }
  store_f64(a->outputs[0], k, x, p->numel);
  gp_free(x);
  gp_free(gamma);
  gp_free(beta);
  gp_free(mean);
  gp_free(inv);
  return 0;
}

/* The shape of data as a plan with the channel vector along `axis`. */
static void plan_channels(Plan *p, const DLTensor *t, int32_t axis) {
  p->nd = t->ndim;
  for (int32_t d = 0; d < t->ndim; d++) {
    p->shape[d] = t->shape[d];
    p->vstride[d] = d == axis ? 1 : 0;
  }
}

static int norm_axis(const GPKernelArgs *a, int32_t *axis) {
  int64_t ax = gp_ops_attr_int(a->op, a->attrs, "axis");
  int32_t nd = a->inputs[0]->ndim;
  if (ax < -(int64_t)nd || ax >= nd) {
    gp_error_set(GP_ERR_VALUE, "axis %lld is out of range for data of rank %d", (long long)ax, (int)nd);
    return -1;
  }
  *axis = (int32_t)(ax < 0 ? ax + nd : ax);
  return 0;
}

static int k_layer_norm(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  int32_t axis;
  if (check_io(a, 3) != 0 || norm_axis(a, &axis) != 0) return -1;
  Plan p;
  bool red[K_MAXD] = {false};
  plan_channels(&p, a->inputs[0], axis);
  red[axis] = true;
  return normalize(a, &p, red);
}

static int k_instance_norm(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  int32_t axis;
  if (check_io(a, 3) != 0 || norm_axis(a, &axis) != 0) return -1;
  Plan p;
  bool red[K_MAXD] = {false};
  plan_channels(&p, a->inputs[0], axis);
  for (int32_t d = 1; d < p.nd; d++) red[d] = d != axis;
  return normalize(a, &p, red);
}

static int k_group_norm(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  int32_t axis;
  if (check_io(a, 3) != 0 || norm_axis(a, &axis) != 0) return -1;
  const DLTensor *t = a->inputs[0];
  int64_t groups = gp_ops_attr_int(a->op, a->attrs, "num_groups"), c = t->shape[axis];
  if (groups < 1 || c % groups != 0) {
    gp_error_set(GP_ERR_VALUE, "num_groups %lld must be >= 1 and divide the %lld channels",
                 (long long)groups, (long long)c);
    return -1;
  }
  /* shape (.., G, C/G, ..): reduce every axis but the group axis and axis 0 (unless it is the
   * channel axis); the channel index is g * C/G + j */
  Plan p;
  bool red[K_MAXD] = {false};
  p.nd = t->ndim + 1;
  for (int32_t d = 0, o = 0; d < t->ndim; d++, o++) {
    if (d == axis) {
      p.shape[o] = groups, p.vstride[o] = c / groups, red[o] = false;
      o++;
      p.shape[o] = c / groups, p.vstride[o] = 1, red[o] = true;
    } else {
      p.shape[o] = t->shape[d], p.vstride[o] = 0, red[o] = d != 0;
    }
  }
  return normalize(a, &p, red);
}

/* The axes `key` names (attribute INTS; None: all; exclude: the complement) into red[]. */
static int reduce_axes(const GPKernelArgs *a, const char *key, bool exclude_attr, int32_t nd, bool *red) {
  int32_t n;
  const int64_t *v = gp_ops_attr_ints(a->op, a->attrs, key, &n);
  for (int32_t d = 0; d < nd; d++) red[d] = n < 0;
  if (n < 0) return 0;
  for (int32_t i = 0; i < n; i++) {
    if (v[i] < -(int64_t)nd || v[i] >= nd) {
      gp_error_set(GP_ERR_VALUE, "%s %lld is out of range for data of rank %d", key, (long long)v[i], (int)nd);
      return -1;
    }
    red[v[i] < 0 ? v[i] + nd : v[i]] = true;
  }
  if (exclude_attr && gp_ops_attr_bool(a->op, a->attrs, "exclude"))
    for (int32_t d = 0; d < nd; d++) red[d] = !red[d];
  return 0;
}

static int k_l2_normalize(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  int k;
  if (check_io(a, 1) != 0 || float_kind(a->inputs[0], "data", &k) != 0) return -1;
  const DLTensor *t = a->inputs[0];
  Plan p;
  bool red[K_MAXD] = {false};
  p.nd = t->ndim;
  for (int32_t d = 0; d < t->ndim; d++) p.shape[d] = t->shape[d], p.vstride[d] = 0;
  if (reduce_axes(a, "axis", false, t->ndim, red) != 0) return -1;
  plan_stats(&p, red);
  if (p.numel == 0) return 0;
  double eps = (double)(float)gp_ops_attr_float(a->op, a->attrs, "eps");
  double *x = load_f64(t, k);
  double *norm = gp_malloc((size_t)p.nstat * sizeof(double));
  for (int64_t s = 0; s < p.nstat; s++) norm[s] = 0.0;
  It it = {{0}, 0, 0};
  for (int64_t i = 0; i < p.numel; i++, it_next(&p, &it)) norm[it.s] += x[i] * x[i];
  for (int64_t s = 0; s < p.nstat; s++) norm[s] = sqrt(fmax(norm[s], eps));
  it = (It){{0}, 0, 0};
  for (int64_t i = 0; i < p.numel; i++, it_next(&p, &it)) x[i] /= norm[it.s];
  store_f64(a->outputs[0], k, x, p.numel);
  gp_free(x);
  gp_free(norm);
  return 0;
}

static int k_variance(const GPKernelArgs *a, void *user) {
  GP_UNUSED(user);
  int k, km;
  if (check_io(a, 2) != 0 || float_kind(a->inputs[0], "data", &k) != 0 ||
      float_kind(a->inputs[1], "mean", &km) != 0)
    return -1;
  const DLTensor *t = a->inputs[0], *m = a->inputs[1];
  if (m->ndim != t->ndim) {
    gp_error_set(GP_ERR_VALUE, "mean has rank %d; data has rank %d", (int)m->ndim, (int)t->ndim);
    return -1;
  }
  Plan p;
  bool red[K_MAXD] = {false};
  p.nd = t->ndim;
  int64_t ms = 1;
  for (int32_t d = t->ndim - 1; d >= 0; d--) {
    if (m->shape[d] != 1 && m->shape[d] != t->shape[d]) {
      gp_error_set(GP_ERR_VALUE, "mean dim %d is %lld; data's is %lld", (int)d, (long long)m->shape[d],
                   (long long)t->shape[d]);
      return -1;
    }
    p.shape[d] = t->shape[d];
    p.vstride[d] = m->shape[d] == 1 ? 0 : ms;
    ms *= m->shape[d];
  }
  if (reduce_axes(a, "axis", true, t->ndim, red) != 0) return -1;
  plan_stats(&p, red);
  int64_t nout = gp_k_numel(a->outputs[0]);
  if (nout == 0) return 0;
  double div = (double)p.count - (gp_ops_attr_bool(a->op, a->attrs, "unbiased") ? 1.0 : 0.0);
  double *acc = gp_malloc((size_t)p.nstat * sizeof(double));
  for (int64_t s = 0; s < p.nstat; s++) acc[s] = 0.0;
  if (p.numel > 0) {
    double *x = load_f64(t, k), *mv = load_f64(m, km);
    It it = {{0}, 0, 0};
    for (int64_t i = 0; i < p.numel; i++, it_next(&p, &it)) {
      double d = x[i] - mv[it.v];
      acc[it.s] += d * d;
    }
    gp_free(x);
    gp_free(mv);
  }
  for (int64_t s = 0; s < p.nstat; s++) acc[s] /= div; /* 0 / 0: NaN, as sum / count is */
  store_f64(a->outputs[0], k, acc, p.nstat);
  gp_free(acc);
  return 0;
}

void gp_kernels_register_norm(void) {
  gp_kernel_set("nn.layer_norm", k_layer_norm);
  gp_kernel_set("nn.instance_norm", k_instance_norm);
  gp_kernel_set("nn.group_norm", k_group_norm);
  gp_kernel_set("nn.l2_normalize", k_l2_normalize);
  gp_kernel_set("variance", k_variance);
}
