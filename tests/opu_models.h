/* opu_models.h -- seeded random weights for the OPU accuracy checks (tests/test_opu_genir.c,
 * bench/bench_opu.c): every weight constant of a module is replaced by values drawn for its
 * role, so that a model whose weights are placeholders (the shared light models'
 * ConstantOfShape, a meta[relay.Constant] without data) becomes a network with realistic
 * statistics:
 *  - nn.conv2d / nn.dense weights: He-normal, std sqrt(2 / fan_in);
 *  - nn.batch_norm: gamma U[0.8, 1.2), beta N(0, 0.1), mean N(0, 0.1), variance U[0.5, 1.5);
 *  - the constant of nn.bias_add, or of an add / multiply right after a conv2d or dense
 *    (a bias or a per-channel scale): bias N(0, 0.05), scale U[0.8, 1.2);
 *  - other constants (shapes, scalars, pad values) are kept; a data-less constant that fits
 *    none of these gets zeros.
 * Internal helpers of the tests; not an API. */
#ifndef GP_OPU_MODELS_H
#define GP_OPU_MODELS_H

#include "ir/ir.h"

#include <math.h>
#include <string.h>

typedef struct OpuRand {
  uint64_t s;
  GPPtrMap role; /* constant -> role + 1 */
} OpuRand;

enum { OR_NONE = 0, OR_CONV, OR_DENSE, OR_GAMMA, OR_BETA, OR_MEAN, OR_VAR, OR_BIAS, OR_SCALE };

static inline double opu_rand_u(OpuRand *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

static inline double opu_rand_n(OpuRand *r) {
  double u1 = opu_rand_u(r), u2 = opu_rand_u(r);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static inline bool opu_is_op(const GPExpr *e, const char *name) {
  return gp_kind(e) == GP_TI_CALL && gp_kind(GP_AS(GPCall, e)->op) == GP_TI_OP &&
         strcmp(GP_AS(GPOp, GP_AS(GPCall, e)->op)->name, name) == 0;
}

static inline void opu_mark(OpuRand *r, GPExpr *e, int role) {
  if (gp_kind(e) == GP_TI_CONSTANT && !gp_map_get(&r->role, e)) gp_map_put(&r->role, e, (void *)(intptr_t)(role + 1));
}

static GPExpr *opu_rand_rewrite(void *user, GPExpr *orig, GPExpr *rebuilt) {
  OpuRand *r = user;
  if (gp_kind(orig) != GP_TI_CONSTANT) return gp_retain(rebuilt);
  int role = (int)(intptr_t)gp_map_get(&r->role, orig) - 1;
  GPTensor *t = GP_AS(GPConstant, orig)->data;
  bool f32 = t->dl.dtype.code == kDLFloat && t->dl.dtype.bits == 32;
  if (role <= OR_NONE && (t->dl.data || !f32)) return gp_retain(rebuilt);
  if (!f32) return gp_retain(rebuilt);
  GPTensor *nt = gp_tensor_alloc(t->dl.dtype, t->dl.ndim, t->dl.shape, true);
  int64_t n = 1, fan = 1;
  for (int32_t i = 0; i < t->dl.ndim; i++) n *= t->dl.shape[i];
  for (int32_t i = 1; i < t->dl.ndim; i++) fan *= t->dl.shape[i];
  float *d = (float *)nt->dl.data;
  double std = sqrt(2.0 / (double)(fan > 0 ? fan : 1));
  for (int64_t i = 0; i < n; i++) {
    double v = 0;
    switch (role) {
    case OR_CONV:
    case OR_DENSE: v = opu_rand_n(r) * std; break;
    case OR_GAMMA:
    case OR_SCALE: v = 0.8 + 0.4 * opu_rand_u(r); break;
    case OR_BETA:
    case OR_MEAN: v = 0.1 * opu_rand_n(r); break;
    case OR_VAR: v = 0.5 + opu_rand_u(r); break;
    case OR_BIAS: v = 0.05 * opu_rand_n(r); break;
    default: v = 0; break;
    }
    d[i] = (float)v;
  }
  GPExpr *c = &gp_constant_new(nt)->base;
  gp_release(nt);
  return c;
}

/* A new module: m with its weight constants drawn from `seed` (see the top of the file). */
static inline GPModule *opu_randomize_weights(const GPModule *m, uint64_t seed) {
  GPModule *out = gp_module_copy(m);
  for (int32_t f = 0; f < m->num_functions; f++) {
    OpuRand r = {.s = seed * 0x2545f4914f6cdd1dULL + (uint64_t)f};
    GPExpr **nodes;
    size_t nn;
    if (gp_post_order(&m->funcs[f]->base, &nodes, &nn) != 0) {
      gp_release(out);
      return NULL;
    }
    for (size_t i = 0; i < nn; i++) {
      GPExpr *e = nodes[i];
      if (gp_kind(e) != GP_TI_CALL) continue;
      GPCall *c = GP_AS(GPCall, e);
      if (opu_is_op(e, "nn.conv2d") && c->nargs > 1) opu_mark(&r, c->args[1], OR_CONV);
      if ((opu_is_op(e, "nn.dense") || opu_is_op(e, "nn.matmul")) && c->nargs > 1) opu_mark(&r, c->args[1], OR_DENSE);
      if (opu_is_op(e, "nn.batch_norm") && c->nargs == 5) {
        opu_mark(&r, c->args[1], OR_GAMMA);
        opu_mark(&r, c->args[2], OR_BETA);
        opu_mark(&r, c->args[3], OR_MEAN);
        opu_mark(&r, c->args[4], OR_VAR);
      }
      if (opu_is_op(e, "nn.bias_add") && c->nargs > 1) opu_mark(&r, c->args[1], OR_BIAS);
      if ((opu_is_op(e, "add") || opu_is_op(e, "multiply")) && c->nargs == 2) {
        bool mul = opu_is_op(e, "multiply");
        for (int k = 0; k < 2; k++) {
          GPExpr *o = c->args[1 - k];
          if (opu_is_op(o, "nn.conv2d") || opu_is_op(o, "nn.dense") || opu_is_op(o, "nn.matmul"))
            opu_mark(&r, c->args[k], mul ? OR_SCALE : OR_BIAS);
        }
      }
    }
    gp_free(nodes);
    GPExpr *nb = gp_rewrite(&m->funcs[f]->base, opu_rand_rewrite, &r);
    gp_map_free(&r.role);
    if (!nb) {
      gp_release(out);
      return NULL;
    }
    int rc = gp_module_add(out, m->gvars[f]->name, GP_AS(GPFunctionExpr, nb), true);
    gp_release(nb);
    if (rc != 0) {
      gp_release(out);
      return NULL;
    }
  }
  return out;
}

/* Cosine similarity and whether the arg-max of every row (last axis) agrees. */
static inline double opu_cosine(const GPTensor *a, const GPTensor *b, int64_t row, int64_t *top1_mismatch) {
  const float *x = (const float *)a->dl.data, *y = (const float *)b->dl.data;
  int64_t n = 1;
  for (int32_t i = 0; i < a->dl.ndim; i++) n *= a->dl.shape[i];
  double xy = 0, xx = 0, yy = 0;
  for (int64_t i = 0; i < n; i++) {
    xy += (double)x[i] * y[i];
    xx += (double)x[i] * x[i];
    yy += (double)y[i] * y[i];
  }
  *top1_mismatch = 0;
  for (int64_t r0 = 0; row > 0 && r0 + row <= n; r0 += row) {
    int64_t ax = r0, ay = r0;
    for (int64_t i = r0; i < r0 + row; i++) {
      if (x[i] > x[ax]) ax = i;
      if (y[i] > y[ay]) ay = i;
    }
    *top1_mismatch += ax != ay;
  }
  return xx > 0 && yy > 0 ? xy / sqrt(xx * yy) : (xx == yy ? 1.0 : 0.0);
}

#endif
