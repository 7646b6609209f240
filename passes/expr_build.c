/* expr_build.c -- see expr_build.h. */
#include "expr_build.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

GPExpr *sb_keep(SBuild *b, GPExpr *e) {
  if (!e) {
    b->failed = true;
    return NULL;
  }
  if (b->n == SB_MAX_TEMPS) { /* a programming error in a pass: fail cleanly */
    gp_release(e);
    H->error_set(GP_ERR_INTERNAL, "expression builder: more than %d nodes", SB_MAX_TEMPS);
    b->failed = true;
    return NULL;
  }
  if (b->at && !e->line) { /* fresh: no one else has seen it */
    e->line = b->at->line;
    e->col = b->at->col;
  }
  b->tmp[b->n++] = e;
  return e;
}

/* The type of the fresh call c of op (what the host's InferType would give it), or NULL when
 * an argument is untyped or the relation fails: InferType then types it (and reports the error
 * with its location).  Typing here lets the rewrite keep the types of the nodes above (see
 * GPHostAPI.rewrite) so the re-typing runs no relation for them. */
static const GPType *call_type(const GPOp *op, const GPCall *c) {
  if (!op->type_rel || (op->num_inputs >= 0 && c->nargs != op->num_inputs) || c->nargs > 16) return NULL;
  const GPType *tys[16];
  for (int32_t i = 0; i < c->nargs; i++)
    if (!(tys[i] = c->args[i]->checked_type)) return NULL;
  const GPType *out = NULL;
  if (op->type_rel(op, c->attrs, tys, c->nargs, &out, op->type_rel_user) != 0 || !out) {
    H->error_clear();
    return NULL;
  }
  return out;
}

/* The op named `name` (through the cache when there is one), or NULL + error. */
static const GPOp *find_op(SBOps *ops, const char *name) {
  if (ops) /* a caller's literal is not the op's own name: first characters before strcmp */
    for (int32_t i = 0; i < ops->n; i++)
      if (ops->name[i] == name || (ops->name[i][0] == name[0] && strcmp(ops->name[i], name) == 0))
        return ops->op[i];
  const GPOp *op = H->op_get(name);
  if (op && ops && ops->n < SB_MAX_OPS) { /* op names are immortal: keep the op's own */
    ops->name[ops->n] = op->name;
    ops->op[ops->n++] = op;
  }
  return op;
}

GPExpr *sb_call(SBuild *b, const char *op_name, int32_t nargs, GPExpr *const *args, int32_t nattrs,
                const char *const *keys, const GPAttrValue *vals) {
  if (b->failed) return NULL;
  for (int32_t i = 0; i < nargs; i++)
    if (!args[i]) return NULL;
  const GPOp *op = find_op(b->ops, op_name);
  if (!op) {
    b->failed = true;
    return NULL;
  }
  GPAttrs *attrs = NULL;
  if (op->num_attrs > 0 || nattrs > 0) {
    attrs = H->op_attrs_new(op, nattrs, keys, vals);
    if (!attrs) {
      b->failed = true;
      return NULL;
    }
  }
  GPCall *c = H->call_new((GPExpr *)op, nargs, args, attrs);
  gp_release(attrs);
  if (c) c->base.checked_type = call_type(op, c);
  return sb_keep(b, (GPExpr *)c);
}

static uint16_t f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
  int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
  if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return (uint16_t)sign;
    mant |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - exp);
    uint32_t hm = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (hm & 1))) hm++;
    return (uint16_t)(sign | hm);
  }
  uint32_t hm = mant >> 13, rem = mant & 0x1fffu, r = sign | ((uint32_t)exp << 10) | hm;
  if (rem > 0x1000u || (rem == 0x1000u && (hm & 1))) r++;
  return (uint16_t)r;
}

/* bfloat16: float32's upper half, rounded to nearest even; a NaN stays a (quiet) NaN. */
static uint16_t f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if (isnan(f)) return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* An IEEE half's value (exact in a double). */
static double half_value(uint16_t h) {
  int e = (h >> 10) & 0x1f;
  double m = h & 0x3ff, v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
  return h & 0x8000 ? -v : v;
}

int sb_scalar_value(const GPExpr *e, double *v) {
  if (ekind(e) != GP_TI_CONSTANT) return 0;
  const GPTensor *t = ((const GPConstant *)e)->data;
  if (!t || !t->dl.data || t->dl.dtype.lanes != 1) return 0;
  for (int32_t i = 0; i < t->dl.ndim; i++)
    if (t->dl.shape[i] != 1) return 0;
  const char *p = (const char *)t->dl.data + t->dl.byte_offset;
  DLDataType d = t->dl.dtype;
  if (d.code == kDLFloat && d.bits == 16) {
    uint16_t h;
    memcpy(&h, p, 2);
    *v = half_value(h);
  } else if (d.code == kDLBfloat && d.bits == 16) {
    uint16_t h;
    memcpy(&h, p, 2);
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    *v = f;
  } else if (d.code == kDLFloat && d.bits == 32) {
    float f;
    memcpy(&f, p, 4);
    *v = f;
  } else if (d.code == kDLFloat && d.bits == 64) {
    memcpy(v, p, 8);
  } else if (d.code == kDLInt || d.code == kDLUInt) {
    int64_t i = 0;
    switch (d.bits) {
    case 1:
    case 8: i = d.code == kDLInt ? (int64_t)*(const int8_t *)p : (int64_t)*(const uint8_t *)p; break;
    case 16: { int16_t x; memcpy(&x, p, 2); i = d.code == kDLInt ? (int64_t)x : (int64_t)(uint16_t)x; break; }
    case 32: { int32_t x; memcpy(&x, p, 4); i = d.code == kDLInt ? (int64_t)x : (int64_t)(uint32_t)x; break; }
    case 64: memcpy(&i, p, 8); break;
    default: return 0;
    }
    *v = (double)i;
  } else {
    return 0;
  }
  return 1;
}

bool sb_scalar_ok(DLDataType dt) {
  if (dt.lanes != 1) return false;
  switch (dt.code) {
  case kDLFloat: return dt.bits == 16 || dt.bits == 32 || dt.bits == 64;
  case kDLBfloat: return dt.bits == 16;
  case kDLInt: return dt.bits == 8 || dt.bits == 16 || dt.bits == 32 || dt.bits == 64;
  case kDLUInt: return dt.bits == 1 || dt.bits == 8 || dt.bits == 16 || dt.bits == 32 || dt.bits == 64;
  default: return false;
  }
}

const char *sb_dtype_str(DLDataType d, char *buf, size_t n) {
  static const char *const codes[] = {"int", "uint", "float", "handle", "bfloat"};
  static const struct { uint8_t code; const char *name; } narrow[] = {
      {10, "float8_e4m3fn"}, {11, "float8_e4m3fnuz"}, {12, "float8_e5m2"},
      {13, "float8_e5m2fnuz"}, {14, "float8_e8m0fnu"}, {17, "float4_e2m1fn"}};
  const char *name = NULL;
  for (size_t i = 0; i < sizeof narrow / sizeof narrow[0]; i++)
    if (d.code == narrow[i].code) name = narrow[i].name;
  int len;
  if (d.code == kDLUInt && d.bits == 1) len = snprintf(buf, n, "bool");
  else if (name) len = snprintf(buf, n, "%s", name);
  else if (d.code < 5) len = snprintf(buf, n, "%s%d", codes[d.code], (int)d.bits);
  else len = snprintf(buf, n, "code%d:%d", (int)d.code, (int)d.bits);
  if (d.lanes != 1 && len >= 0 && (size_t)len < n) snprintf(buf + len, n - (size_t)len, "x%d", (int)d.lanes);
  return buf;
}

GPExpr *sb_scalar(SBuild *b, DLDataType dt, double v) {
  if (b->failed) return NULL;
  if (!sb_scalar_ok(dt)) {
    char name[32];
    H->error_set(GP_ERR_UNSUPPORTED,
                 "cannot make a scalar constant of dtype %s (float16/32/64, bfloat16, int8/16/32/64, "
                 "uint8/16/32/64 and bool can be made)",
                 sb_dtype_str(dt, name, sizeof name));
    b->failed = true;
    return NULL;
  }
  GPTensor *t = H->tensor_alloc(dt, 0, NULL, 1);
  if (!t) {
    b->failed = true;
    return NULL;
  }
  void *p = (char *)t->dl.data + t->dl.byte_offset;
  if (dt.code == kDLBfloat) {
    uint16_t h = f32_to_bf16((float)v);
    memcpy(p, &h, 2);
  } else if (dt.code == kDLFloat) {
    if (dt.bits == 16) {
      uint16_t h = f32_to_f16((float)v);
      memcpy(p, &h, 2);
    } else if (dt.bits == 32) {
      float f = (float)v;
      memcpy(p, &f, 4);
    } else {
      memcpy(p, &v, 8);
    }
  } else {
    int64_t i = (int64_t)v;
    if (dt.bits == 1) { /* bool: one byte, 0 or 1 */
      uint8_t x = v != 0;
      memcpy(p, &x, 1);
    } else if (dt.bits == 8) {
      int8_t x = (int8_t)i;
      memcpy(p, &x, 1);
    } else if (dt.bits == 16) {
      int16_t x = (int16_t)i;
      memcpy(p, &x, 2);
    } else if (dt.bits == 32) {
      int32_t x = (int32_t)i;
      memcpy(p, &x, 4);
    } else {
      memcpy(p, &i, 8);
    }
  }
  GPConstant *c = H->constant_new(t);
  gp_release(t);
  if (c) c->base.checked_type = H->type_tensor(dt, 0, NULL); /* as InferType types it */
  return sb_keep(b, (GPExpr *)c);
}

GPExpr *sb_reduce(SBuild *b, const char *op, GPExpr *x, int32_t naxes, const int64_t *axes) {
  static const char *const keys[] = {"axis", "keepdims", "exclude"};
  GPAttrValue vals[3] = {{.kind = GP_ATTR_INTS, .n = naxes, .ints = axes},
                         {.kind = GP_ATTR_BOOL, .i = 1},
                         {.kind = GP_ATTR_BOOL, .i = 0}};
  return sb_call(b, op, 1, &x, 3, keys, vals);
}

GPExpr *sb_expand_bias(SBuild *b, GPExpr *bias, int32_t ndim, int32_t axis) {
  int64_t pad = (int64_t)ndim - axis - 1;
  if (pad <= 0) return b->failed ? NULL : bias;
  static const char *const keys[] = {"axis", "num_newaxis"};
  GPAttrValue vals[2] = {{.kind = GP_ATTR_INT, .i = 1}, {.kind = GP_ATTR_INT, .i = pad}};
  return sb_call(b, "expand_dims", 1, &bias, 2, keys, vals);
}

GPExpr *sb_finish(SBuild *b, GPExpr *result) {
  GPExpr *out = !b->failed && result ? gp_retain(result) : NULL;
  for (int32_t i = 0; i < b->n; i++) gp_release(b->tmp[i]);
  b->n = 0;
  return out;
}

const char *sb_where(const char *source, const GPExpr *e, char *buf, size_t n) {
  if (!e->line)
    snprintf(buf, n, "an unknown location");
  else if (source)
    snprintf(buf, n, "%s:%u:%u", source, (unsigned)e->line, (unsigned)e->col);
  else
    snprintf(buf, n, "%u:%u", (unsigned)e->line, (unsigned)e->col);
  return buf;
}
