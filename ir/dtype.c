/* dtype.c -- the storage dtypes (ir.h): bfloat16, the float8 types, float4_e2m1fn and the 2- and
 * 4-bit integers are held in tensors and computed through float32 / int32.  The conversions
 * follow ONNX's reference (onnx/numpy_helper.py, ml_dtypes): round to nearest even; saturation
 * as np.clip to the finite range before the conversion; float8_e8m0fnu as to_float8e8m0. */
#include "ir.h"

#include <math.h>
#include <string.h>

bool gp_dtype_is_storage(DLDataType t, DLDataType *compute) {
  DLDataType c;
  if (t.lanes != 1) return false;
  switch (t.code) {
  case kDLBfloat: c = GP_DT_F32; break;
  case GP_DL_FLOAT8_E4M3FN:
  case GP_DL_FLOAT8_E4M3FNUZ:
  case GP_DL_FLOAT8_E5M2:
  case GP_DL_FLOAT8_E5M2FNUZ:
  case GP_DL_FLOAT8_E8M0FNU:
  case GP_DL_FLOAT4_E2M1FN: c = GP_DT_F32; break;
  case kDLInt:
  case kDLUInt:
    if (t.bits != 2 && t.bits != 4) return false;
    c = GP_DT_I32;
    break;
  default: return false;
  }
  if (compute) *compute = c;
  return true;
}

/* The minifloat formats: exponent and mantissa bits, bias, largest finite value, and how NaN
 * and infinity are spelled. */
typedef enum { MF_FN, MF_FNUZ, MF_IEEE, MF_NONAN } MfKind;
typedef struct {
  int ebits, mbits, bias;
  double max;
  MfKind kind;
} Minifloat;

static bool minifloat_of(uint8_t code, Minifloat *f) {
  switch (code) {
  case GP_DL_FLOAT8_E4M3FN: *f = (Minifloat){4, 3, 7, 448.0, MF_FN}; return true;
  case GP_DL_FLOAT8_E4M3FNUZ: *f = (Minifloat){4, 3, 8, 240.0, MF_FNUZ}; return true;
  case GP_DL_FLOAT8_E5M2: *f = (Minifloat){5, 2, 15, 57344.0, MF_IEEE}; return true;
  case GP_DL_FLOAT8_E5M2FNUZ: *f = (Minifloat){5, 2, 16, 57344.0, MF_FNUZ}; return true;
  case GP_DL_FLOAT4_E2M1FN: *f = (Minifloat){2, 1, 1, 6.0, MF_NONAN}; return true;
  default: return false;
  }
}

static float mf_decode(const Minifloat *f, uint32_t b) {
  int w = f->ebits + f->mbits;
  uint32_t sign = (b >> w) & 1u, e = (b >> f->mbits) & ((1u << f->ebits) - 1), m = b & ((1u << f->mbits) - 1);
  uint32_t emax = (1u << f->ebits) - 1, mmax = (1u << f->mbits) - 1;
  if (f->kind == MF_FNUZ && sign && !e && !m) return NAN;
  if (f->kind == MF_FN && e == emax && m == mmax) return sign ? -NAN : NAN;
  if (f->kind == MF_IEEE && e == emax) return m ? (sign ? -NAN : NAN) : (sign ? -INFINITY : INFINITY);
  double v = e ? ldexp(1.0 + (double)m / (double)(1u << f->mbits), (int)e - f->bias)
               : ldexp((double)m, 1 - f->bias - f->mbits);
  return (float)(sign ? -v : v);
}

static uint32_t mf_encode(const Minifloat *f, float x, bool saturate) {
  int w = f->ebits + f->mbits;
  uint32_t sign = signbit(x) ? 1u << w : 0;
  uint32_t nan = f->kind == MF_FNUZ ? 1u << w : f->kind == MF_IEEE ? (sign | (((1u << f->ebits) - 1) << f->mbits) | 2u)
                                                                     : (sign | ((1u << w) - 1));
  if (f->kind == MF_NONAN) saturate = true; /* no NaN or infinity to overflow to */
  if (isnan(x)) return f->kind == MF_NONAN ? 1u << w : nan; /* float4_e2m1fn: -0, as ml_dtypes */
  double a = fabs((double)x), v;
  if (isinf(a)) {
    v = INFINITY;
  } else if (a == 0) {
    v = 0;
  } else {
    int e;
    frexp(a, &e);
    int emin = 1 - f->bias, ex = e - 1 < emin ? emin : e - 1;
    double q = ldexp(1.0, ex - f->mbits);
    v = rint(a / q) * q; /* a / q is exact: q is a power of two; rint rounds ties to even */
  }
  if (v > f->max) {
    if (saturate) v = f->max;
    else if (f->kind == MF_IEEE) return sign | (((1u << f->ebits) - 1) << f->mbits);
    else return nan;
  }
  if (v == 0) return f->kind == MF_FNUZ ? 0 : sign;
  int e;
  frexp(v, &e);
  int emin = 1 - f->bias, eu = e - 1;
  uint32_t field, m;
  if (eu < emin) {
    field = 0;
    m = (uint32_t)ldexp(v, f->mbits - emin);
  } else {
    field = (uint32_t)(eu + f->bias);
    m = (uint32_t)(ldexp(v, f->mbits - eu) - (double)(1u << f->mbits));
  }
  return sign | field << f->mbits | m;
}

float gp_narrow_float_to_f32(DLDataType t, uint32_t bits) {
  Minifloat f;
  if (t.code == kDLBfloat) {
    uint32_t x = (bits & 0xffffu) << 16;
    float r;
    memcpy(&r, &x, 4);
    return r;
  }
  if (t.code == GP_DL_FLOAT8_E8M0FNU) return (bits & 0xffu) == 0xffu ? NAN : ldexpf(1.0f, (int)(bits & 0xffu) - 127);
  if (minifloat_of(t.code, &f)) return mf_decode(&f, bits);
  return NAN;
}

/* ONNX's to_float8e8m0: the float32 exponent, rounded by the mantissa bits. */
static uint32_t e8m0_encode(float x, bool saturate, int round_mode) {
  uint32_t b;
  memcpy(&b, &x, 4);
  uint32_t e = (b >> 23) & 0xffu;
  if (e == 0xffu) return 0xffu;
  bool up = false;
  if (round_mode == 1) {
    bool g = b & 0x400000u, r = b & 0x200000u, s = b & 0x1fffffu, lsb = e > 0;
    up = g && (r || s || lsb);
  } else if (round_mode == 0) {
    up = (b & 0x7fffffu) != 0;
  }
  if (up && saturate && e == 0xfeu) up = false;
  return (e + (up ? 1u : 0u)) & 0xffu;
}

uint32_t gp_f32_to_narrow_float(DLDataType t, float x, bool saturate, int round_mode) {
  Minifloat f;
  if (t.code == kDLBfloat) {
    uint32_t b;
    memcpy(&b, &x, 4);
    if (isnan(x)) return (b >> 16) & 0x7fu ? b >> 16 : (b >> 16) | 0x40u; /* keeps a bfloat16 NaN's bits */
    return (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
  }
  if (t.code == GP_DL_FLOAT8_E8M0FNU) return e8m0_encode(x, saturate, round_mode);
  if (minifloat_of(t.code, &f)) return mf_encode(&f, x, saturate);
  return 0;
}

void gp_dtype_int_range(DLDataType t, int64_t *lo, int64_t *hi) {
  int b = t.bits;
  if (t.code == kDLUInt) {
    *lo = 0;
    *hi = b >= 63 ? INT64_MAX : (int64_t)((UINT64_C(1) << b) - 1);
  } else {
    *lo = b >= 64 ? INT64_MIN : -(int64_t)(UINT64_C(1) << (b - 1));
    *hi = b >= 64 ? INT64_MAX : (int64_t)((UINT64_C(1) << (b - 1)) - 1);
  }
}
