/*
 * k_elemwise.c -- reference kernels of the elementwise ops (ir/ops/ops_elemwise.c): the
 * broadcasting binary arithmetic (add, subtract, multiply, divide, maximum, minimum, power), the
 * unary ops (negative, sqrt, rsqrt, exp, log, abs, sigmoid, tanh, nn.relu, nn.leaky_relu, clip,
 * sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, erf, floor, ceil, round,
 * trunc, sign), the predicates isnan, isinf, isfinite (bool results) and cast.  The driver is
 * shared with eval/k_logic.c through gp_k_elemwise_run.
 *
 * Semantics.  dtypes: bool, uint8, int8/16/32/64, float16/32/64 (the type relations accept any
 * dtype; any other one is GP_ERR_UNSUPPORTED "<arg>: dtype <dt> is not supported").  No input
 * leads to C undefined behaviour.
 *
 * Floats.  float32 computes in float, float64 in double; float16 loads exactly into float,
 * computes there and rounds to nearest even on store (overflow to inf).  IEEE throughout, so NaN
 * and infinities propagate: x/0 = +-inf, 0/0 = NaN, inf - inf = NaN.  maximum/minimum return
 * NaN when either operand is NaN (numpy's maximum/minimum, not C's fmax/fmin); power is C's pow
 * (pow(x, 0) = 1 and pow(1, y) = 1 even for NaN, as numpy); sigmoid(x) = 1 / (1 + exp(-x));
 * rsqrt(x) = 1 / sqrt(x); nn.relu(x) = x < 0 ? 0 : x and clip (TVM's max(min(x, a_max), a_min))
 * keep NaN; nn.leaky_relu(x) = x > 0 ? x : x * alpha; round is to nearest with ties to even
 * (numpy's and TVM's round: 2.5 -> 2, -0.5 -> -0); sign(x) is -1 for x < 0, 1 for x > 0 and x
 * itself otherwise (so NaN stays NaN and -0 stays -0, as numpy); isnan/isinf/isfinite as C99.  Attributes (alpha, a_min, a_max) are
 * rounded to the compute type (float for float16/float32).
 *
 * Integers.  Two's complement modulo 2^bits, computed in 64-bit unsigned arithmetic and
 * narrowed (uint8 values load as 0..255):
 *   add, subtract, multiply, negative wrap (127 + 1 = -128 in int8);
 *   abs(INT_MIN) = INT_MIN (wraps, as C's two's complement negation would);
 *   divide truncates toward zero (C and TVM's truncdiv: -7 / 2 = -3); x / 0 = 0;
 *   INT_MIN / -1 = INT_MIN;
 *   power by repeated squaring, wrapping (2^31 in int32 = INT_MIN); 0^0 = 1; a negative
 *   exponent gives 0, except for base 1 (1) and base -1 (+-1 by the exponent's parity);
 *   maximum, minimum, nn.relu exact;
 *   clip: the result of clamping in double, truncated toward zero -- the same as clamping to the
 *   bounds converted to the dtype (truncated toward zero, saturated, NaN -> 0), which is what
 *   TVM's make_const bounds give;
 *   floor, ceil, round, trunc are the identity; sign is -1, 0 or 1;
 *   isnan and isinf are false, isfinite true;
 *   sqrt, rsqrt, exp, log, sigmoid, tanh, the trigonometric and hyperbolic functions, erf and
 *   leaky_relu's x * alpha (for x <= 0) compute in
 *   double, then truncate toward zero and saturate to the dtype's range, NaN -> 0 (so
 *   log(0) = INT_MIN, rsqrt(0) = INT_MAX, sqrt(-4) = 0, exp(100) = INT_MAX).
 * bool computes as the integers 0 and 1 (range [0, 1]) and stores x != 0: add is or, multiply
 * and, subtract xor, maximum or, minimum and.
 *
 * cast.  float -> integer truncates toward zero and saturates, NaN -> 0 (gp_k_store_f64);
 * integer -> integer wraps; anything -> bool is x != 0 (NaN -> true); integer -> float rounds
 * once to nearest even (int64 -> float32 directly, not through double); float64 -> float16 is
 * rounded once (gp_f64_to_f16).
 *
 * Structure.  Each op family is an X-macro table of expressions: K_BINARY (a, b) and K_UNARY
 * (x, parameters p) give one expression for floats (evaluated in float or double) and one for
 * integers (int64_t).  From them come, for every (op, dtype), a "span" function: n elements of
 * output from inputs with element strides (fast loops for stride 1 and for a broadcast scalar,
 * a strided loop otherwise).  One driver (ew_run) broadcasts the inputs to the output with
 * GPKBcast, drops size-1 axes and merges contiguous ones, then runs spans over rows (or over one
 * flat range when at most one axis is left) with gp_k_parallel_for.  New ops of an existing
 * family are one line in their table (floor: X(floor, "floor", MF(floor, x), x)); a family with
 * a different result dtype (comparisons -> bool) or three inputs (where) needs its own span
 * generator, as cast has; the driver handles up to K_EW_MAX_IN inputs of any element sizes.
 */
#include "eval/kernel.h"

#include <math.h>
#include <stdint.h>

#define K_GRAIN 65536 /* elements per thread, at least */
#define K_EW_MAX_IN 3

/* ------------------------------------------------------------------------------------------ */
/* Per-dtype traits: storage type st_D, compute type (int64_t, float or double), loads and the
 * conversions from a compute value to storage (cvi_D from int64_t, cvf_D from float, cvd_D from
 * double), and the range [lo_D, hi_D] of an integer dtype.                                    */

#define K_TYPES_ARG(X, A) X(BOOL, A) X(U8, A) X(I8, A) X(I16, A) X(I32, A) X(I64, A) X(F16, A) X(F32, A) X(F64, A) X(U16, A) X(U32, A) X(U64, A)
/* The same list again, for cross products (a macro does not expand inside itself). */
#define K_TYPES_ARG2(X, A) X(BOOL, A) X(U8, A) X(I8, A) X(I16, A) X(I32, A) X(I64, A) X(F16, A) X(F32, A) X(F64, A) X(U16, A) X(U32, A) X(U64, A)

#define K_ST(name, ctype) typedef ctype st_##name;
GP_K_FOR_EACH_DTYPE(K_ST)
#undef K_ST
typedef int64_t ct_BOOL, ct_U8, ct_I8, ct_I16, ct_I32, ct_I64, ct_U16, ct_U32, ct_U64;
typedef float ct_F16, ct_F32;
typedef double ct_F64;

/* Truncate toward zero and saturate to [lo, hi]; NaN -> 0. */
static inline int64_t sat_d(double v, int64_t lo, int64_t hi) {
  if (isnan(v)) return 0;
  if (v <= (double)lo) return lo;
  if (v >= (double)hi) return hi; /* (double)INT64_MAX is 2^63: anything below converts */
  return (int64_t)v;
}

#define K_DEF_INT(D, ST, UT, LO, HI)                                           \
  static const int64_t lo_##D = LO, hi_##D = HI;                               \
  static inline int64_t ld_##D(ST v) { return v; }                             \
  static inline ST cvi_##D(int64_t v) { return (ST)(UT)v; }                    \
  static inline ST cvd_##D(double v) { return (ST)sat_d(v, LO, HI); }          \
  static inline ST cvf_##D(float v) { return cvd_##D(v); }
K_DEF_INT(U8, uint8_t, uint8_t, 0, UINT8_MAX)
K_DEF_INT(I8, int8_t, uint8_t, INT8_MIN, INT8_MAX)
K_DEF_INT(I16, int16_t, uint16_t, INT16_MIN, INT16_MAX)
K_DEF_INT(I32, int32_t, uint32_t, INT32_MIN, INT32_MAX)
K_DEF_INT(I64, int64_t, uint64_t, INT64_MIN, INT64_MAX)
K_DEF_INT(U16, uint16_t, uint16_t, 0, UINT16_MAX)
K_DEF_INT(U32, uint32_t, uint32_t, 0, UINT32_MAX)
#undef K_DEF_INT

/* uint64 computes in int64's two's complement (kernel.h); its range for saturating float
 * stores is [0, 2^64 - 1]. */
static const int64_t lo_U64 = 0, hi_U64 = INT64_MAX;
static inline int64_t ld_U64(uint64_t v) { return (int64_t)v; }
static inline uint64_t cvi_U64(int64_t v) { return (uint64_t)v; }
static inline uint64_t cvd_U64(double v) {
  return isnan(v) || v <= 0 ? 0 : v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v;
}
static inline uint64_t cvf_U64(float v) { return cvd_U64(v); }

static const int64_t lo_BOOL = 0, hi_BOOL = 1;
static inline int64_t ld_BOOL(uint8_t v) { return v != 0; }
static inline uint8_t cvi_BOOL(int64_t v) { return v != 0; }
static inline uint8_t cvf_BOOL(float v) { return v != 0; }
static inline uint8_t cvd_BOOL(double v) { return v != 0; }

static const int64_t lo_F16 = 0, hi_F16 = 0;
static inline float ld_F16(uint16_t v) { return gp_f16_to_f32(v); }
static inline uint16_t cvi_F16(int64_t v) { return gp_f32_to_f16((float)v); } /* exact below 2^24; inf above */
static inline uint16_t cvf_F16(float v) { return gp_f32_to_f16(v); }
static inline uint16_t cvd_F16(double v) { return gp_f64_to_f16(v); }

static const int64_t lo_F32 = 0, hi_F32 = 0;
static inline float ld_F32(float v) { return v; }
static inline float cvi_F32(int64_t v) { return (float)v; }
static inline float cvf_F32(float v) { return v; }
static inline float cvd_F32(double v) { return (float)v; }

static const int64_t lo_F64 = 0, hi_F64 = 0;
static inline double ld_F64(double v) { return v; }
static inline double cvi_F64(int64_t v) { return (double)v; }
static inline double cvf_F64(float v) { return v; }
static inline double cvd_F64(double v) { return v; }

/* Compute value v (int64_t, float or double) to storage of dtype D. */
#define TO(D, v) _Generic((v), int64_t: cvi_##D, float: cvf_##D, double: cvd_##D)(v)
/* The float or double flavour of a <math.h> function, by the type of x. */
#define MF(fn, x) _Generic((x), float: fn##f, default: fn)(x)
#define MF2(fn, x, y) _Generic((x), float: fn##f, default: fn)((x), (y))

/* ------------------------------------------------------------------------------------------ */
/* Integer helpers (no UB: wrapping arithmetic goes through uint64_t).                         */

static inline int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static inline int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
static inline int64_t wrap_neg(int64_t a) { return (int64_t)(0 - (uint64_t)a); }

static inline int64_t div_i(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrap_neg(a); /* INT_MIN / -1 = INT_MIN */
  return a / b;
}

static inline int64_t pow_i(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? (((uint64_t)b & 1u) ? -1 : 1) : 0;
  uint64_t r = 1, x = (uint64_t)a, e = (uint64_t)b;
  while (e) {
    if (e & 1u) r *= x;
    e >>= 1;
    if (e) x *= x;
  }
  return (int64_t)r;
}

/* ------------------------------------------------------------------------------------------ */
/* Binary ops: X(token, Relay name, float expression of a and b, int64_t expression).          */

#define K_BINARY(X)                                                                  \
  X(add, "add", a + b, wrap_add(a, b))                                               \
  X(subtract, "subtract", a - b, wrap_sub(a, b))                                     \
  X(multiply, "multiply", a * b, wrap_mul(a, b))                                     \
  X(divide, "divide", a / b, div_i(a, b))                                            \
  X(maximum, "maximum", (isnan(a) || a > b) ? a : b, a > b ? a : b)                  \
  X(minimum, "minimum", (isnan(a) || a < b) ? a : b, a < b ? a : b)                  \
  X(power, "power", MF2(pow, a, b), pow_i(a, b))

/* Parameters of the unary ops (from attributes), and the integer dtype's range. */
typedef struct UP {
  double alpha, a_min, a_max;
  float alpha_f, a_min_f, a_max_f;
  int64_t lo, hi;         /* range of the integer dtype (bool: [0, 1]) */
  int64_t a_min_i, a_max_i; /* a_min, a_max truncated and saturated to [lo, hi] */
} UP;

/* A parameter in the compute type of x (float for float16/float32, else double). */
#define PRM(name) _Generic((x), float: p->name##_f, default: p->name)
#define ISAT(v) sat_d((v), p->lo, p->hi)

static inline float clamp_f(float x, float lo, float hi) {
  float r = x > hi ? hi : x;
  return r < lo ? lo : r;
}
static inline double clamp_d(double x, double lo, double hi) {
  double r = x > hi ? hi : x;
  return r < lo ? lo : r;
}
static inline int64_t clamp_i(int64_t x, int64_t lo, int64_t hi) {
  int64_t r = x > hi ? hi : x;
  return r < lo ? lo : r;
}
#define CLAMP(x, lo, hi) _Generic((x), float: clamp_f, double: clamp_d, int64_t: clamp_i)((x), (lo), (hi))

/* Unary ops: X(token, Relay name, float expression of x (and p), int64_t expression).  Every
 * op here is also registered; attributes read into UP by name (see un_params). */
#define K_UNARY(X)                                                                             \
  X(negative, "negative", -x, wrap_neg(x))                                                     \
  X(sqrt, "sqrt", MF(sqrt, x), ISAT(sqrt((double)x)))                                          \
  X(rsqrt, "rsqrt", 1 / MF(sqrt, x), ISAT(1.0 / sqrt((double)x)))                              \
  X(exp, "exp", MF(exp, x), ISAT(exp((double)x)))                                              \
  X(log, "log", MF(log, x), ISAT(log((double)x)))                                              \
  X(abs, "abs", MF(fabs, x), x < 0 ? wrap_neg(x) : x)                                          \
  X(sigmoid, "sigmoid", 1 / (1 + MF(exp, -x)), ISAT(1.0 / (1.0 + exp(-(double)x))))            \
  X(tanh, "tanh", MF(tanh, x), ISAT(tanh((double)x)))                                          \
  X(relu, "nn.relu", x < 0 ? 0 : x, x < 0 ? 0 : x)                                             \
  X(leaky_relu, "nn.leaky_relu", x > 0 ? x : x * PRM(alpha), x > 0 ? x : ISAT((double)x * p->alpha)) \
  X(clip, "clip", CLAMP(x, PRM(a_min), PRM(a_max)), CLAMP(x, p->a_min_i, p->a_max_i))         \
  X(sin, "sin", MF(sin, x), ISAT(sin((double)x)))                                              \
  X(cos, "cos", MF(cos, x), ISAT(cos((double)x)))                                              \
  X(tan, "tan", MF(tan, x), ISAT(tan((double)x)))                                              \
  X(asin, "asin", MF(asin, x), ISAT(asin((double)x)))                                          \
  X(acos, "acos", MF(acos, x), ISAT(acos((double)x)))                                          \
  X(atan, "atan", MF(atan, x), ISAT(atan((double)x)))                                          \
  X(sinh, "sinh", MF(sinh, x), ISAT(sinh((double)x)))                                          \
  X(cosh, "cosh", MF(cosh, x), ISAT(cosh((double)x)))                                          \
  X(asinh, "asinh", MF(asinh, x), ISAT(asinh((double)x)))                                      \
  X(acosh, "acosh", MF(acosh, x), ISAT(acosh((double)x)))                                      \
  X(atanh, "atanh", MF(atanh, x), ISAT(atanh((double)x)))                                      \
  X(erf, "erf", MF(erf, x), ISAT(erf((double)x)))                                              \
  X(floor, "floor", MF(floor, x), x)                                                           \
  X(ceil, "ceil", MF(ceil, x), x)                                                              \
  X(round, "round", MF(nearbyint, x), x)                                                       \
  X(trunc, "trunc", MF(trunc, x), x)                                                           \
  X(sign, "sign", x > 0 ? 1 : x < 0 ? -1 : x, x > 0 ? 1 : x < 0 ? -1 : 0)

/* Unary predicates with a bool result: X(token, Relay name, float expression, int64_t one). */
#define K_UPRED(X)                              \
  X(isnan, "isnan", isnan(x), 0)                \
  X(isinf, "isinf", isinf(x), 0)                \
  X(isfinite, "isfinite", isfinite(x), 1)

/* Scalar functions per op and compute type. */
#define K_DEF_BIN(tok, name, FE, IE)                                              \
  static inline float bf_##tok(float a, float b) { return FE; }                  \
  static inline double bd_##tok(double a, double b) { return FE; }               \
  static inline int64_t bi_##tok(int64_t a, int64_t b) { return IE; }
K_BINARY(K_DEF_BIN)
#undef K_DEF_BIN
#define BCALL(tok, a, b) _Generic((a), float: bf_##tok, double: bd_##tok, int64_t: bi_##tok)((a), (b))

#define K_DEF_UN(tok, name, FE, IE)                                                       \
  static inline float uf_##tok(float x, const UP *p) { (void)p; return FE; }             \
  static inline double ud_##tok(double x, const UP *p) { (void)p; return FE; }           \
  static inline int64_t ui_##tok(int64_t x, const UP *p) { (void)p; return IE; }
K_UNARY(K_DEF_UN)
#undef K_DEF_UN
#define UCALL(tok, x, p) _Generic((x), float: uf_##tok, double: ud_##tok, int64_t: ui_##tok)((x), (p))

/* ------------------------------------------------------------------------------------------ */
/* Spans: n output elements (compact) from inputs in[i] with element strides st[i].           */

typedef void (*EwSpan)(const void *prm, void *out, const char *const *in, const int64_t *st, int64_t n);

#define K_DEF_BSPAN(D, tok)                                                                      \
  static void bspan_##tok##_##D(const void *prm, void *o, const char *const *in, const int64_t *st, \
                                int64_t n) {                                                     \
    (void)prm;                                                                                   \
    st_##D *restrict out = o;                                                                    \
    const st_##D *restrict a = (const st_##D *)(const void *)in[0];                              \
    const st_##D *restrict b = (const st_##D *)(const void *)in[1];                              \
    int64_t sa = st[0], sb = st[1];                                                              \
    if (sa == 1 && sb == 1) {                                                                    \
      for (int64_t i = 0; i < n; i++) out[i] = TO(D, BCALL(tok, ld_##D(a[i]), ld_##D(b[i])));    \
    } else if (sa == 1 && sb == 0) {                                                             \
      const ct_##D y = ld_##D(b[0]);                                           \
      for (int64_t i = 0; i < n; i++) out[i] = TO(D, BCALL(tok, ld_##D(a[i]), y));               \
    } else if (sa == 0 && sb == 1) {                                                             \
      const ct_##D x = ld_##D(a[0]);                                           \
      for (int64_t i = 0; i < n; i++) out[i] = TO(D, BCALL(tok, x, ld_##D(b[i])));               \
    } else {                                                                                     \
      for (int64_t i = 0; i < n; i++) out[i] = TO(D, BCALL(tok, ld_##D(a[i * sa]), ld_##D(b[i * sb]))); \
    }                                                                                            \
  }
#define K_BSPANS(tok, name, FE, IE) K_TYPES_ARG(K_DEF_BSPAN, tok)
K_BINARY(K_BSPANS)
#undef K_BSPANS
#undef K_DEF_BSPAN

static void up_fix(UP *q, int64_t lo, int64_t hi) {
  q->lo = lo;
  q->hi = hi;
  q->a_min_i = sat_d(q->a_min, lo, hi);
  q->a_max_i = sat_d(q->a_max, lo, hi);
}

#define K_DEF_USPAN(D, tok)                                                                      \
  static void uspan_##tok##_##D(const void *prm, void *o, const char *const *in, const int64_t *st, \
                                int64_t n) {                                                     \
    UP q = *(const UP *)prm;                                                                     \
    up_fix(&q, lo_##D, hi_##D);                                                                  \
    st_##D *restrict out = o;                                                                    \
    const st_##D *restrict a = (const st_##D *)(const void *)in[0];                              \
    int64_t sa = st[0];                                                                          \
    if (sa == 1) {                                                                               \
      for (int64_t i = 0; i < n; i++) out[i] = TO(D, UCALL(tok, ld_##D(a[i]), &q));              \
    } else {                                                                                     \
      for (int64_t i = 0; i < n; i++) out[i] = TO(D, UCALL(tok, ld_##D(a[i * sa]), &q));         \
    }                                                                                            \
  }
#define K_USPANS(tok, name, FE, IE) K_TYPES_ARG(K_DEF_USPAN, tok)
K_UNARY(K_USPANS)
#undef K_USPANS
#undef K_DEF_USPAN

/* Predicates: bool output. */
#define K_DEF_PRED(tok, name, FE, IE)                                             \
  static inline int pf_##tok(float x) { return (FE) != 0; }                       \
  static inline int pd_##tok(double x) { return (FE) != 0; }                      \
  static inline int pi_##tok(int64_t x) { (void)x; return (IE) != 0; }
K_UPRED(K_DEF_PRED)
#undef K_DEF_PRED
#define PCALL(tok, x) _Generic((x), float: pf_##tok, double: pd_##tok, int64_t: pi_##tok)(x)

#define K_DEF_PSPAN(D, tok)                                                                      \
  static void pspan_##tok##_##D(const void *prm, void *o, const char *const *in, const int64_t *st, \
                                int64_t n) {                                                     \
    (void)prm;                                                                                   \
    uint8_t *restrict out = o;                                                                   \
    const st_##D *restrict a = (const st_##D *)(const void *)in[0];                              \
    int64_t sa = st[0];                                                                          \
    for (int64_t i = 0; i < n; i++) out[i] = (uint8_t)PCALL(tok, ld_##D(a[i * sa]));             \
  }
#define K_PSPANS(tok, name, FE, IE) K_TYPES_ARG(K_DEF_PSPAN, tok)
K_UPRED(K_PSPANS)
#undef K_PSPANS
#undef K_DEF_PSPAN

/* cast: one span per (source S, destination D). */
#define K_DEF_CSPAN(D, S)                                                                        \
  static void cspan_##S##_##D(const void *prm, void *o, const char *const *in, const int64_t *st, \
                              int64_t n) {                                                       \
    (void)prm;                                                                                   \
    st_##D *restrict out = o;                                                                    \
    const st_##S *restrict a = (const st_##S *)(const void *)in[0];                              \
    int64_t sa = st[0];                                                                          \
    if (sa == 1) {                                                                               \
      for (int64_t i = 0; i < n; i++) out[i] = TO(D, ld_##S(a[i]));                              \
    } else {                                                                                     \
      for (int64_t i = 0; i < n; i++) out[i] = TO(D, ld_##S(a[i * sa]));                         \
    }                                                                                            \
  }
#define K_CSPANS(S, unused) K_TYPES_ARG(K_DEF_CSPAN, S)
K_TYPES_ARG2(K_CSPANS, _)
#undef K_CSPANS
#undef K_DEF_CSPAN

/* Tables: [op][dtype] and [source][destination]. */
enum {
#define K_ENUM(tok, name, FE, IE) BOP_##tok,
  K_BINARY(K_ENUM) K_NBIN
#undef K_ENUM
};
enum {
#define K_ENUM(tok, name, FE, IE) UOP_##tok,
  K_UNARY(K_ENUM) K_NUN
#undef K_ENUM
};

#define K_BCELL(D, tok) [GP_K_##D] = bspan_##tok##_##D,
#define K_BROW(tok, name, FE, IE) [BOP_##tok] = {K_TYPES_ARG(K_BCELL, tok)},
static const EwSpan k_bspan[K_NBIN][GP_K_NUM_DTYPES] = {K_BINARY(K_BROW)};
#undef K_BROW
#undef K_BCELL

#define K_UCELL(D, tok) [GP_K_##D] = uspan_##tok##_##D,
#define K_UROW(tok, name, FE, IE) [UOP_##tok] = {K_TYPES_ARG(K_UCELL, tok)},
static const EwSpan k_uspan[K_NUN][GP_K_NUM_DTYPES] = {K_UNARY(K_UROW)};
#undef K_UROW
#undef K_UCELL

enum {
#define K_ENUM(tok, name, FE, IE) POP_##tok,
  K_UPRED(K_ENUM) K_NPRED
#undef K_ENUM
};
#define K_PCELL(D, tok) [GP_K_##D] = pspan_##tok##_##D,
#define K_PROW(tok, name, FE, IE) [POP_##tok] = {K_TYPES_ARG(K_PCELL, tok)},
static const EwSpan k_pspan[K_NPRED][GP_K_NUM_DTYPES] = {K_UPRED(K_PROW)};
#undef K_PROW
#undef K_PCELL

#define K_CCELL(D, S) [GP_K_##D] = cspan_##S##_##D,
#define K_CROW(S, unused) [GP_K_##S] = {K_TYPES_ARG(K_CCELL, S)},
static const EwSpan k_cspan[GP_K_NUM_DTYPES][GP_K_NUM_DTYPES] = {K_TYPES_ARG2(K_CROW, _)};
#undef K_CROW
#undef K_CCELL

/* ------------------------------------------------------------------------------------------ */
/* The driver                                                                                  */

typedef struct EwJob {
  EwSpan fn;
  const void *prm;
  char *out;
  int64_t oel;
  int32_t nin;
  const char *in[K_EW_MAX_IN];
  int64_t iel[K_EW_MAX_IN];
  GPKBcast bc; /* collapsed: no size-1 axes, contiguous axes merged */
} EwJob;

/* Drop size-1 axes and merge an axis into the previous one when every input is contiguous
 * across the pair (numel > 0).  Keeps the output's row-major order. */
static void bcast_collapse(GPKBcast *b) {
  int32_t nd = 0;
  for (int32_t a = 0; a < b->ndim; a++) {
    if (b->shape[a] == 1) continue;
    bool merge = nd > 0;
    for (int32_t i = 0; merge && i < b->nin; i++)
      if (b->stride[i][nd - 1] != b->stride[i][a] * b->shape[a]) merge = false;
    if (merge) {
      b->shape[nd - 1] *= b->shape[a];
      for (int32_t i = 0; i < b->nin; i++) b->stride[i][nd - 1] = b->stride[i][a];
      continue;
    }
    b->shape[nd] = b->shape[a];
    for (int32_t i = 0; i < b->nin; i++) b->stride[i][nd] = b->stride[i][a];
    nd++;
  }
  b->ndim = nd;
  int64_t numel = 1;
  for (int32_t a = 0; a < nd; a++) numel *= b->shape[a];
  b->inner = nd ? b->shape[nd - 1] : 1;
  b->rows = numel / b->inner;
  for (int32_t i = 0; i < b->nin; i++) b->inner_stride[i] = nd ? b->stride[i][nd - 1] : 0;
}

/* Units are output elements when at most one axis is left, else rows of the last axis. */
static void ew_chunk(void *ctx, int64_t u0, int64_t u1) {
  const EwJob *j = ctx;
  const GPKBcast *b = &j->bc;
  const char *in[K_EW_MAX_IN];
  if (b->ndim <= 1) {
    for (int32_t i = 0; i < j->nin; i++) in[i] = j->in[i] + u0 * b->inner_stride[i] * j->iel[i];
    j->fn(j->prm, j->out + u0 * j->oel, in, b->inner_stride, u1 - u0);
    return;
  }
  /* odometer over the axes before the last, started at row u0 */
  int32_t nd = b->ndim;
  int64_t idx[GP_K_MAX_RANK], offs[K_EW_MAX_IN] = {0}, r = u0;
  for (int32_t a = nd - 2; a >= 0; a--) {
    idx[a] = r % b->shape[a];
    r /= b->shape[a];
    for (int32_t i = 0; i < j->nin; i++) offs[i] += idx[a] * b->stride[i][a];
  }
  for (int64_t row = u0; row < u1; row++) {
    for (int32_t i = 0; i < j->nin; i++) in[i] = j->in[i] + offs[i] * j->iel[i];
    j->fn(j->prm, j->out + row * b->inner * j->oel, in, b->inner_stride, b->inner);
    for (int32_t a = nd - 2; a >= 0; a--) {
      for (int32_t i = 0; i < j->nin; i++) offs[i] += b->stride[i][a];
      if (++idx[a] < b->shape[a]) break;
      for (int32_t i = 0; i < j->nin; i++) offs[i] -= b->stride[i][a] * b->shape[a];
      idx[a] = 0;
    }
  }
}

static int ew_run(const GPKernelArgs *args, int32_t nin, EwSpan fn, const void *prm) {
  const DLTensor *out = args->outputs[0];
  int64_t numel = 1;
  for (int32_t a = 0; a < out->ndim; a++) numel *= out->shape[a];
  if (numel == 0) return 0;
  GPKView v[K_EW_MAX_IN];
  const GPKView *vp[K_EW_MAX_IN];
  void *scratch[K_EW_MAX_IN] = {NULL};
  EwJob j;
  j.fn = fn;
  j.prm = prm;
  j.out = (char *)out->data + out->byte_offset;
  j.oel = (int64_t)gp_dtype_bytes(out->dtype);
  j.nin = nin;
  int rc = -1;
  for (int32_t i = 0; i < nin; i++) {
    const DLTensor *t = args->inputs[i];
    gp_k_view(t, &v[i]);
    if ((uintptr_t)v[i].data % v[i].elem != 0) {
      /* misaligned for its element type (a producer's byte_offset): read an aligned copy */
      const void *src = gp_k_compact(t, &scratch[i]);
      if (!scratch[i]) {
        size_t nb = (size_t)v[i].numel * v[i].elem;
        scratch[i] = gp_malloc(nb ? nb : 1);
        memcpy(scratch[i], src, nb);
      }
      DLTensor c = *t;
      c.data = scratch[i];
      c.byte_offset = 0;
      c.strides = NULL;
      gp_k_view(&c, &v[i]);
    }
    vp[i] = &v[i];
    j.in[i] = v[i].data;
    j.iel[i] = (int64_t)v[i].elem;
  }
  if (gp_k_bcast_init(&j.bc, out, nin, vp) != 0) goto done;
  bcast_collapse(&j.bc);
  if (j.bc.ndim <= 1) {
    gp_k_parallel_for(args->num_threads, numel, K_GRAIN, ew_chunk, &j);
  } else {
    int64_t grain = K_GRAIN / j.bc.inner;
    gp_k_parallel_for(args->num_threads, j.bc.rows, grain < 1 ? 1 : grain, ew_chunk, &j);
  }
  rc = 0;
done:
  for (int32_t i = 0; i < nin; i++) gp_free(scratch[i]);
  return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Kernels                                                                                     */

static int check_io(const GPKernelArgs *args, int32_t nin) {
  if (args->num_inputs != nin || args->num_outputs != 1) {
    gp_error_set(GP_ERR_INTERNAL, "kernel called with %d inputs and %d outputs (expected %d and 1)",
                 (int)args->num_inputs, (int)args->num_outputs, (int)nin);
    return -1;
  }
  return 0;
}

/* Error unless t has dtype want (the type relation guarantees it; a direct caller may not). */
static int same_dtype(const DLTensor *t, DLDataType want, const char *what) {
  if (gp_dtype_eq(t->dtype, want)) return 0;
  char a[24], b[24];
  gp_error_set(GP_ERR_TYPE, "%s has dtype %s, expected %s", what, gp_dtype_str(t->dtype, a), gp_dtype_str(want, b));
  return -1;
}

static int bin_kernel(const GPKernelArgs *args, int op) {
  int k;
  if (check_io(args, 2) != 0 || gp_k_dtype_check(args->inputs[0]->dtype, "lhs", &k) != 0) return -1;
  if (same_dtype(args->inputs[1], args->inputs[0]->dtype, "rhs") != 0 ||
      same_dtype(args->outputs[0], args->inputs[0]->dtype, "the result") != 0)
    return -1;
  return ew_run(args, 2, k_bspan[op][k], NULL);
}

static bool has_attr(const GPOp *op, const char *key) {
  for (int32_t i = 0; i < op->num_attrs; i++)
    if (strcmp(op->attrs[i].name, key) == 0) return true;
  return false;
}

/* The unary ops' parameters, read by name from the op's schema (defaults applied). */
static void un_params(const GPKernelArgs *args, UP *p) {
  memset(p, 0, sizeof *p);
  if (has_attr(args->op, "alpha")) p->alpha = gp_ops_attr_float(args->op, args->attrs, "alpha");
  if (has_attr(args->op, "a_min")) p->a_min = gp_ops_attr_float(args->op, args->attrs, "a_min");
  if (has_attr(args->op, "a_max")) p->a_max = gp_ops_attr_float(args->op, args->attrs, "a_max");
  p->alpha_f = (float)p->alpha;
  p->a_min_f = (float)p->a_min;
  p->a_max_f = (float)p->a_max;
}

static int un_kernel(const GPKernelArgs *args, int op) {
  int k;
  if (check_io(args, 1) != 0 || gp_k_dtype_check(args->inputs[0]->dtype, "data", &k) != 0) return -1;
  if (same_dtype(args->outputs[0], args->inputs[0]->dtype, "the result") != 0) return -1;
  UP p;
  un_params(args, &p);
  return ew_run(args, 1, k_uspan[op][k], &p);
}

#define K_BIN_KERNEL(tok, name, FE, IE)                                 \
  static int kern_##tok(const GPKernelArgs *args, void *user) {         \
    (void)user;                                                         \
    return bin_kernel(args, BOP_##tok);                                 \
  }
K_BINARY(K_BIN_KERNEL)
#undef K_BIN_KERNEL

#define K_UN_KERNEL(tok, name, FE, IE)                                  \
  static int kern_##tok(const GPKernelArgs *args, void *user) {         \
    (void)user;                                                         \
    return un_kernel(args, UOP_##tok);                                  \
  }
K_UNARY(K_UN_KERNEL)
#undef K_UN_KERNEL

static int pred_kernel(const GPKernelArgs *args, int op) {
  int k;
  if (check_io(args, 1) != 0 || gp_k_dtype_check(args->inputs[0]->dtype, "data", &k) != 0) return -1;
  if (same_dtype(args->outputs[0], GP_DT_BOOL, "the result") != 0) return -1;
  return ew_run(args, 1, k_pspan[op][k], NULL);
}

#define K_PRED_KERNEL(tok, name, FE, IE)                                \
  static int kern_##tok(const GPKernelArgs *args, void *user) {         \
    (void)user;                                                         \
    return pred_kernel(args, POP_##tok);                                \
  }
K_UPRED(K_PRED_KERNEL)
#undef K_PRED_KERNEL

/* The driver, for the kernels of eval/k_logic.c (comparisons, bitwise ops, where): runs `fn`
 * over the output of args broadcast from its nin (<= 3) inputs. */
int gp_k_elemwise_run(const GPKernelArgs *args, int32_t nin,
                      void (*fn)(const void *prm, void *out, const char *const *in, const int64_t *st, int64_t n),
                      const void *prm);
int gp_k_elemwise_run(const GPKernelArgs *args, int32_t nin,
                      void (*fn)(const void *prm, void *out, const char *const *in, const int64_t *st, int64_t n),
                      const void *prm) {
  if (nin < 1 || nin > K_EW_MAX_IN || args->num_inputs != nin || args->num_outputs != 1) {
    gp_error_set(GP_ERR_INTERNAL, "kernel called with %d inputs and %d outputs (expected %d and 1)",
                 (int)args->num_inputs, (int)args->num_outputs, (int)nin);
    return -1;
  }
  return ew_run(args, nin, fn, prm);
}

static int kern_cast(const GPKernelArgs *args, void *user) {
  (void)user;
  int ks, kd;
  if (check_io(args, 1) != 0 || gp_k_dtype_check(args->inputs[0]->dtype, "data", &ks) != 0 ||
      gp_k_dtype_check(args->outputs[0]->dtype, "the result (attribute dtype)", &kd) != 0)
    return -1;
  return ew_run(args, 1, k_cspan[ks][kd], NULL);
}

/* cast_like(data, dtype_like): cast to the result's dtype (dtype_like's); dtype_like is not read. */
static int kern_cast_like(const GPKernelArgs *args, void *user) {
  (void)user;
  int ks, kd;
  if (check_io(args, 2) != 0 || gp_k_dtype_check(args->inputs[0]->dtype, "data", &ks) != 0 ||
      gp_k_dtype_check(args->outputs[0]->dtype, "the result (dtype_like's dtype)", &kd) != 0)
    return -1;
  return ew_run(args, 1, k_cspan[ks][kd], NULL);
}

void gp_kernels_register_elemwise(void) {
#define K_REG(tok, name, FE, IE) gp_kernel_set(name, kern_##tok);
  K_BINARY(K_REG)
  K_UNARY(K_REG)
  K_UPRED(K_REG)
#undef K_REG
  gp_kernel_set("cast", kern_cast);
  gp_kernel_set("cast_like", kern_cast_like);
}
