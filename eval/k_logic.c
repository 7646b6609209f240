/*
 * k_logic.c -- reference kernels of ir/ops/ops_logic.c: comparisons, logical and bitwise ops,
 * shifts, the floor/trunc division family, where.  Broadcasting, strided inputs, threads and
 * the element loop's driver are eval/k_elemwise.c's (gp_k_elemwise_run).
 *
 * dtypes: bool, uint8, int8/16/32/64, float16 (computed in float32), float32, float64.  Both
 * operands of a binary op have one dtype (the type relation checks it).
 *
 * Comparisons (equal, not_equal, less, less_equal, greater, greater_equal) -> bool.  Floats
 * compare as IEEE: every comparison with NaN is false except not_equal; -0 == +0.  Integers
 * compare exactly (uint8 as 0..255); bool as 0 and 1.
 *
 * Logical ops (logical_and, logical_or, logical_xor, logical_not) take any dtype, read a value as
 * true when it is nonzero (NaN is true), and give 1 or 0 in the argument's dtype (TVM's
 * BroadcastRel: bool in, bool out in the usual case).
 *
 * Bitwise ops (bitwise_and, bitwise_or, bitwise_xor, bitwise_not): integers and bool (on bool,
 * bitwise_not is logical not); float dtypes are GP_ERR_UNSUPPORTED.  Two's complement on the
 * dtype's width (bitwise_not(uint8 0) = 255).
 *
 * Shifts (left_shift, right_shift): integer dtypes only (bool and floats are GP_ERR_UNSUPPORTED).
 * The shift count is rhs; a count in [0, bits) shifts as usual: left_shift wraps to the dtype
 * (int8: 1 << 7 = -128), right_shift is arithmetic on signed dtypes (-8 >> 1 = -4) and logical on
 * uint8.  A count outside [0, bits) (>= the width, or negative) is defined, never UB: left_shift
 * gives 0; right_shift gives 0 for a non-negative lhs and -1 for a negative one (the sign fill
 * an arbitrarily long arithmetic shift reaches).
 *
 * Division family.
 *   Integers (and bool as 0/1), computed in int64 and wrapped to the dtype:
 *     floor_divide rounds toward -inf (-7 // 2 = -4), floor_mod has the sign of rhs
 *     (-7 % 2 = 1, 7 % -2 = -1: Python's //, %); trunc_divide rounds toward zero (-7 / 2 = -3),
 *     trunc_mod and mod have the sign of lhs (-7 mod 2 = -1: C's / and %).
 *     Division by zero does not trap: every op of the family gives 0 for rhs 0.
 *     INT_MIN / -1 wraps to INT_MIN (so int8 -128 // -1 = -128); INT_MIN mod -1 = 0.
 *   Floats: floor_divide = floor(lhs / rhs) (TVM's); trunc_divide = trunc(lhs / rhs);
 *     mod = trunc_mod = fmod(lhs, rhs) (C's; fmod(x, 0) = NaN); floor_mod is Python's % as numpy
 *     computes it: r = fmod(lhs, rhs), plus rhs when r != 0 and r's sign differs from rhs's; a
 *     zero result takes rhs's sign (floor_mod(-4, 2) = +0, floor_mod(4, -2) = -0); rhs 0 gives
 *     NaN.  IEEE otherwise: x / 0 = +-inf, NaN propagates.
 *
 * where(condition, x, y): condition of any dtype, true when nonzero (NaN true); x and y of one
 * dtype (any); the three broadcast together (numpy); the result has x's dtype and is a copy of
 * x's or y's element bits (so -0 and NaN payloads survive).
 */
#include "kernel.h"

#include <math.h>
#include <stdint.h>

typedef void (*EwSpan)(const void *prm, void *out, const char *const *in, const int64_t *st, int64_t n);
/* eval/k_elemwise.c */
int gp_k_elemwise_run(const GPKernelArgs *args, int32_t nin, EwSpan fn, const void *prm);

/* ------------------------------------------------------------------------------------------ */
/* Per-dtype traits (as in k_elemwise.c): storage st_D, compute type ct_D, load ld_D, stores
 * from int64_t (wrapping), float and double; bits_D the integer width (1 for bool).          */

#define K_TYPES_ARG(X, A) X(BOOL, A) X(U8, A) X(I8, A) X(I16, A) X(I32, A) X(I64, A) X(F16, A) X(F32, A) X(F64, A) X(U16, A) X(U32, A) X(U64, A)

#define K_ST(name, ctype) typedef ctype st_##name;
GP_K_FOR_EACH_DTYPE(K_ST)
#undef K_ST
typedef int64_t ct_BOOL, ct_U8, ct_I8, ct_I16, ct_I32, ct_I64, ct_U16, ct_U32;
typedef uint64_t ct_U64; /* comparisons of uint64 are unsigned; the other ops see int64 bits */
typedef float ct_F16, ct_F32;
typedef double ct_F64;

#define K_DEF_INT(D, ST, UT, BITS)                                          \
  enum { bits_##D = BITS };                                                 \
  static inline int64_t ld_##D(ST v) { return v; }                          \
  static inline ST cvi_##D(int64_t v) { return (ST)(UT)v; }                 \
  static inline ST cvf_##D(float v) { (void)v; return 0; } /* not used */  \
  static inline ST cvd_##D(double v) { (void)v; return 0; } /* not used */
K_DEF_INT(U8, uint8_t, uint8_t, 8)
K_DEF_INT(I8, int8_t, uint8_t, 8)
K_DEF_INT(I16, int16_t, uint16_t, 16)
K_DEF_INT(I32, int32_t, uint32_t, 32)
K_DEF_INT(I64, int64_t, uint64_t, 64)
K_DEF_INT(U16, uint16_t, uint16_t, 16)
K_DEF_INT(U32, uint32_t, uint32_t, 32)
#undef K_DEF_INT
enum { bits_U64 = 64 };
static inline uint64_t ld_U64(uint64_t v) { return v; }
static inline uint64_t cvi_U64(int64_t v) { return (uint64_t)v; }
static inline uint64_t cvf_U64(float v) { (void)v; return 0; } /* not used */
static inline uint64_t cvd_U64(double v) { (void)v; return 0; } /* not used */

enum { bits_BOOL = 1, bits_F16 = 16, bits_F32 = 32, bits_F64 = 64 };
static inline int64_t ld_BOOL(uint8_t v) { return v != 0; }
static inline uint8_t cvi_BOOL(int64_t v) { return v != 0; }
static inline uint8_t cvf_BOOL(float v) { return v != 0; }
static inline uint8_t cvd_BOOL(double v) { return v != 0; }

static inline float ld_F16(uint16_t v) { return gp_f16_to_f32(v); }
static inline uint16_t cvi_F16(int64_t v) { return gp_f32_to_f16((float)v); }
static inline uint16_t cvf_F16(float v) { return gp_f32_to_f16(v); }
static inline uint16_t cvd_F16(double v) { return gp_f64_to_f16(v); }

static inline float ld_F32(float v) { return v; }
static inline float cvi_F32(int64_t v) { return (float)v; }
static inline float cvf_F32(float v) { return v; }
static inline float cvd_F32(double v) { return (float)v; }

static inline double ld_F64(double v) { return v; }
static inline double cvi_F64(int64_t v) { return (double)v; }
static inline double cvf_F64(float v) { return v; }
static inline double cvd_F64(double v) { return v; }

#define TO(D, v) _Generic((v), int64_t: cvi_##D, float: cvf_##D, double: cvd_##D)(v)
#define MF(fn, x) _Generic((x), float: fn##f, default: fn)(x)
#define MF2(fn, x, y) _Generic((x), float: fn##f, default: fn)((x), (y))

/* ------------------------------------------------------------------------------------------ */
/* Integer helpers (no UB)                                                                     */

static inline int64_t wrap_neg(int64_t a) { return (int64_t)(0 - (uint64_t)a); }

static inline int64_t tdiv_i(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrap_neg(a);
  return a / b;
}
static inline int64_t tmod_i(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  return a % b;
}
static inline int64_t fdiv_i(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrap_neg(a);
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) q--;
  return q;
}
static inline int64_t fmod_i(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
static inline int64_t shl_i(int64_t a, int64_t b, int bits) {
  if (b < 0 || b >= bits) return 0;
  return (int64_t)((uint64_t)a << b);
}
static inline int64_t shr_i(int64_t a, int64_t b, int bits) {
  if (b < 0 || b >= bits) return a < 0 ? -1 : 0;
  return a >= 0 ? a >> b : ~(~a >> b);
}

static inline float fmodf_py(float a, float b) {
  float r = fmodf(a, b);
  if (r != 0) {
    if ((r < 0) != (b < 0)) r += b;
  } else {
    r = copysignf(0.0f, b);
  }
  return r;
}
static inline double fmod_py(double a, double b) {
  double r = fmod(a, b);
  if (r != 0) {
    if ((r < 0) != (b < 0)) r += b;
  } else {
    r = copysign(0.0, b);
  }
  return r;
}
#define FMOD_PY(a, b) _Generic((a), float: fmodf_py, default: fmod_py)((a), (b))

/* ------------------------------------------------------------------------------------------ */
/* Op tables                                                                                   */

/* Comparisons: X(token, Relay name, expression of a, b (any compute type)). */
#define K_CMP(X)                          \
  X(equal, "equal", a == b)               \
  X(not_equal, "not_equal", a != b)       \
  X(less, "less", a < b)                  \
  X(less_equal, "less_equal", a <= b)     \
  X(greater, "greater", a > b)            \
  X(greater_equal, "greater_equal", a >= b)

/* Which dtypes an op takes. */
enum { K_ALL = 0, K_INTBOOL = 1, K_INT = 2 };

/* Binary ops with the operands' dtype: X(token, Relay name, dtype class, float expression,
 * int64_t expression (bits: the dtype's width)). */
#define K_BIN(X)                                                                           \
  X(logical_and, "logical_and", K_ALL, (a != 0) && (b != 0), (a != 0) && (b != 0))         \
  X(logical_or, "logical_or", K_ALL, (a != 0) || (b != 0), (a != 0) || (b != 0))           \
  X(logical_xor, "logical_xor", K_ALL, (a != 0) != (b != 0), (a != 0) != (b != 0))         \
  X(bitwise_and, "bitwise_and", K_INTBOOL, 0, a & b)                                       \
  X(bitwise_or, "bitwise_or", K_INTBOOL, 0, a | b)                                         \
  X(bitwise_xor, "bitwise_xor", K_INTBOOL, 0, a ^ b)                                       \
  X(left_shift, "left_shift", K_INT, 0, shl_i(a, b, bits))                                 \
  X(right_shift, "right_shift", K_INT, 0, shr_i(a, b, bits))                               \
  X(floor_divide, "floor_divide", K_ALL, MF(floor, a / b), fdiv_i(a, b))                   \
  X(floor_mod, "floor_mod", K_ALL, FMOD_PY(a, b), fmod_i(a, b))                            \
  X(trunc_divide, "trunc_divide", K_ALL, MF(trunc, a / b), tdiv_i(a, b))                   \
  X(trunc_mod, "trunc_mod", K_ALL, MF2(fmod, a, b), tmod_i(a, b))                          \
  X(mod, "mod", K_ALL, MF2(fmod, a, b), tmod_i(a, b))

/* Unary ops with the operand's dtype: X(token, Relay name, dtype class, float expr, int expr). */
#define K_UN(X)                                                                     \
  X(logical_not, "logical_not", K_ALL, x == 0, x == 0)                              \
  X(bitwise_not, "bitwise_not", K_INTBOOL, 0, bits == 1 ? (int64_t)(x == 0) : ~x)

/* Scalar functions per op and compute type. */
#define K_DEF_BIN(tok, name, cls, FE, IE)                                                             \
  static inline float bf_##tok(float a, float b, int bits) { (void)bits; (void)a; (void)b; return FE; }               \
  static inline double bd_##tok(double a, double b, int bits) { (void)bits; (void)a; (void)b; return FE; }            \
  static inline int64_t bi_##tok(int64_t a, int64_t b, int bits) { (void)bits; return IE; }
K_BIN(K_DEF_BIN)
#undef K_DEF_BIN
#define BCALL(tok, a, b, bits) \
  _Generic((a), float: bf_##tok, double: bd_##tok, int64_t: bi_##tok, uint64_t: bi_##tok)((a), (b), (bits))

#define K_DEF_UN(tok, name, cls, FE, IE)                                                   \
  static inline float uf_##tok(float x, int bits) { (void)x, (void)bits; return FE; }              \
  static inline double ud_##tok(double x, int bits) { (void)x, (void)bits; return FE; }            \
  static inline int64_t ui_##tok(int64_t x, int bits) { (void)bits; return IE; }
K_UN(K_DEF_UN)
#undef K_DEF_UN
#define UCALL(tok, x, bits) \
  _Generic((x), float: uf_##tok, double: ud_##tok, int64_t: ui_##tok, uint64_t: ui_##tok)((x), (bits))

/* ------------------------------------------------------------------------------------------ */
/* Spans                                                                                       */

#define K_DEF_CSPAN(D, tok, E)                                                                     \
  static void cspan_##tok##_##D(const void *prm, void *o, const char *const *in, const int64_t *st, \
                                int64_t n) {                                                       \
    (void)prm;                                                                                     \
    uint8_t *restrict out = o;                                                                     \
    const st_##D *restrict pa = (const st_##D *)(const void *)in[0];                               \
    const st_##D *restrict pb = (const st_##D *)(const void *)in[1];                               \
    int64_t sa = st[0], sb = st[1];                                                                \
    if (sa == 1 && sb == 1) {                                                                      \
      for (int64_t i = 0; i < n; i++) {                                                            \
        ct_##D a = ld_##D(pa[i]), b = ld_##D(pb[i]);                                               \
        out[i] = (uint8_t)(E);                                                                     \
      }                                                                                            \
    } else {                                                                                       \
      for (int64_t i = 0; i < n; i++) {                                                            \
        ct_##D a = ld_##D(pa[i * sa]), b = ld_##D(pb[i * sb]);                                     \
        out[i] = (uint8_t)(E);                                                                     \
      }                                                                                            \
    }                                                                                              \
  }
#define K_CSPANS(tok, name, E)                           \
  K_DEF_CSPAN(BOOL, tok, E) K_DEF_CSPAN(U8, tok, E)      \
  K_DEF_CSPAN(I8, tok, E) K_DEF_CSPAN(I16, tok, E)       \
  K_DEF_CSPAN(I32, tok, E) K_DEF_CSPAN(I64, tok, E)      \
  K_DEF_CSPAN(F16, tok, E) K_DEF_CSPAN(F32, tok, E)      \
  K_DEF_CSPAN(F64, tok, E) K_DEF_CSPAN(U16, tok, E)     \
  K_DEF_CSPAN(U32, tok, E) K_DEF_CSPAN(U64, tok, E)
K_CMP(K_CSPANS)
#undef K_CSPANS
#undef K_DEF_CSPAN

#define K_DEF_BSPAN(D, tok)                                                                        \
  static void bspan_##tok##_##D(const void *prm, void *o, const char *const *in, const int64_t *st, \
                                int64_t n) {                                                       \
    (void)prm;                                                                                     \
    st_##D *restrict out = o;                                                                      \
    const st_##D *restrict pa = (const st_##D *)(const void *)in[0];                               \
    const st_##D *restrict pb = (const st_##D *)(const void *)in[1];                               \
    int64_t sa = st[0], sb = st[1];                                                                \
    if (sa == 1 && sb == 1) {                                                                      \
      for (int64_t i = 0; i < n; i++) out[i] = TO(D, BCALL(tok, ld_##D(pa[i]), ld_##D(pb[i]), bits_##D)); \
    } else {                                                                                       \
      for (int64_t i = 0; i < n; i++)                                                              \
        out[i] = TO(D, BCALL(tok, ld_##D(pa[i * sa]), ld_##D(pb[i * sb]), bits_##D));              \
    }                                                                                              \
  }
#define K_BSPANS(tok, name, cls, FE, IE) K_TYPES_ARG(K_DEF_BSPAN, tok)
K_BIN(K_BSPANS)
#undef K_BSPANS
#undef K_DEF_BSPAN

#define K_DEF_USPAN(D, tok)                                                                        \
  static void uspan_##tok##_##D(const void *prm, void *o, const char *const *in, const int64_t *st, \
                                int64_t n) {                                                       \
    (void)prm;                                                                                     \
    st_##D *restrict out = o;                                                                      \
    const st_##D *restrict pa = (const st_##D *)(const void *)in[0];                               \
    int64_t sa = st[0];                                                                            \
    for (int64_t i = 0; i < n; i++) out[i] = TO(D, UCALL(tok, ld_##D(pa[i * sa]), bits_##D));     \
  }
#define K_USPANS(tok, name, cls, FE, IE) K_TYPES_ARG(K_DEF_USPAN, tok)
K_UN(K_USPANS)
#undef K_USPANS
#undef K_DEF_USPAN

/* where: one span per (condition dtype C, value element size in bytes). */
#define K_SIZES(X, C) X(C, 1, uint8_t) X(C, 2, uint16_t) X(C, 4, uint32_t) X(C, 8, uint64_t)
#define K_DEF_WSPAN(C, SZ, VT)                                                                      \
  static void wspan_##C##_##SZ(const void *prm, void *o, const char *const *in, const int64_t *st, \
                               int64_t n) {                                                        \
    (void)prm;                                                                                     \
    VT *restrict out = o;                                                                          \
    const st_##C *restrict pc = (const st_##C *)(const void *)in[0];                               \
    const VT *restrict px = (const VT *)(const void *)in[1];                                       \
    const VT *restrict py = (const VT *)(const void *)in[2];                                       \
    int64_t sc = st[0], sx = st[1], sy = st[2];                                                    \
    for (int64_t i = 0; i < n; i++) out[i] = ld_##C(pc[i * sc]) != 0 ? px[i * sx] : py[i * sy];   \
  }
#define K_WSPANS(C, unused) K_SIZES(K_DEF_WSPAN, C)
K_TYPES_ARG(K_WSPANS, _)
#undef K_WSPANS
#undef K_DEF_WSPAN

/* Tables */
enum {
#define K_ENUM(tok, name, E) COP_##tok,
  K_CMP(K_ENUM) K_NCMP
#undef K_ENUM
};
enum {
#define K_ENUM(tok, name, cls, FE, IE) BOP_##tok,
  K_BIN(K_ENUM) K_NBIN
#undef K_ENUM
};
enum {
#define K_ENUM(tok, name, cls, FE, IE) UOP_##tok,
  K_UN(K_ENUM) K_NUN
#undef K_ENUM
};

#define K_CELL_C(D, tok) [GP_K_##D] = cspan_##tok##_##D,
#define K_ROW_C(tok, name, E) [COP_##tok] = {K_TYPES_ARG(K_CELL_C, tok)},
static const EwSpan k_cspan[K_NCMP][GP_K_NUM_DTYPES] = {K_CMP(K_ROW_C)};
#undef K_ROW_C
#undef K_CELL_C

#define K_CELL_B(D, tok) [GP_K_##D] = bspan_##tok##_##D,
#define K_ROW_B(tok, name, cls, FE, IE) [BOP_##tok] = {K_TYPES_ARG(K_CELL_B, tok)},
static const EwSpan k_bspan[K_NBIN][GP_K_NUM_DTYPES] = {K_BIN(K_ROW_B)};
#undef K_ROW_B
#undef K_CELL_B

#define K_CELL_U(D, tok) [GP_K_##D] = uspan_##tok##_##D,
#define K_ROW_U(tok, name, cls, FE, IE) [UOP_##tok] = {K_TYPES_ARG(K_CELL_U, tok)},
static const EwSpan k_uspan[K_NUN][GP_K_NUM_DTYPES] = {K_UN(K_ROW_U)};
#undef K_ROW_U
#undef K_CELL_U

#define K_CLS(tok, name, cls, FE, IE) cls,
static const int k_bin_cls[K_NBIN] = {K_BIN(K_CLS)};
static const int k_un_cls[K_NUN] = {K_UN(K_CLS)};
#undef K_CLS

#define K_CELL_W(C, SZ, VT) wspan_##C##_##SZ,
#define K_ROW_W(C, unused) [GP_K_##C] = {K_SIZES(K_CELL_W, C)},
static const EwSpan k_wspan[GP_K_NUM_DTYPES][4] = {K_TYPES_ARG(K_ROW_W, _)};
#undef K_ROW_W
#undef K_CELL_W

/* ------------------------------------------------------------------------------------------ */
/* Kernels                                                                                     */

static int same_dtype(const DLTensor *t, DLDataType want, const char *what) {
  if (gp_dtype_eq(t->dtype, want)) return 0;
  char a[24], b[24];
  gp_error_set(GP_ERR_TYPE, "%s has dtype %s, expected %s", what, gp_dtype_str(t->dtype, a), gp_dtype_str(want, b));
  return -1;
}

static int io_check(const GPKernelArgs *args, int32_t nin) {
  if (args->num_inputs != nin || args->num_outputs != 1) {
    gp_error_set(GP_ERR_INTERNAL, "kernel called with %d inputs and %d outputs (expected %d and 1)",
                 (int)args->num_inputs, (int)args->num_outputs, (int)nin);
    return -1;
  }
  return 0;
}

static int class_check(int k, int cls, DLDataType dt, const char *what) {
  if (cls == K_ALL) return 0;
  if (gp_k_is_float(k) || (cls == K_INT && k == GP_K_BOOL)) {
    char a[24];
    gp_error_set(GP_ERR_UNSUPPORTED, "%s: dtype %s is not supported (%s only)", what, gp_dtype_str(dt, a),
                 cls == K_INT ? "integer dtypes" : "integer and bool dtypes");
    return -1;
  }
  return 0;
}

/* A span table cell, or GP_ERR_UNSUPPORTED when the dtype has none (a kernel dtype added to
 * kernel.h after these tables were written). */
static int span_of(EwSpan fn, DLDataType dt, const char *what, EwSpan *out) {
  if (fn) {
    *out = fn;
    return 0;
  }
  char a[24];
  gp_error_set(GP_ERR_UNSUPPORTED, "%s: dtype %s is not supported", what, gp_dtype_str(dt, a));
  return -1;
}

static int cmp_kernel(const GPKernelArgs *args, int op) {
  int k;
  if (io_check(args, 2) != 0 || gp_k_dtype_check(args->inputs[0]->dtype, "lhs", &k) != 0) return -1;
  if (same_dtype(args->inputs[1], args->inputs[0]->dtype, "rhs") != 0 ||
      same_dtype(args->outputs[0], GP_DT_BOOL, "the result") != 0)
    return -1;
  EwSpan fn;
  if (span_of(k_cspan[op][k], args->inputs[0]->dtype, "lhs", &fn) != 0) return -1;
  return gp_k_elemwise_run(args, 2, fn, NULL);
}

static int bin_kernel(const GPKernelArgs *args, int op) {
  int k;
  if (io_check(args, 2) != 0 || gp_k_dtype_check(args->inputs[0]->dtype, "lhs", &k) != 0) return -1;
  if (class_check(k, k_bin_cls[op], args->inputs[0]->dtype, "lhs") != 0) return -1;
  if (same_dtype(args->inputs[1], args->inputs[0]->dtype, "rhs") != 0 ||
      same_dtype(args->outputs[0], args->inputs[0]->dtype, "the result") != 0)
    return -1;
  EwSpan fn;
  if (span_of(k_bspan[op][k], args->inputs[0]->dtype, "lhs", &fn) != 0) return -1;
  return gp_k_elemwise_run(args, 2, fn, NULL);
}

static int un_kernel(const GPKernelArgs *args, int op) {
  int k;
  if (io_check(args, 1) != 0 || gp_k_dtype_check(args->inputs[0]->dtype, "data", &k) != 0) return -1;
  if (class_check(k, k_un_cls[op], args->inputs[0]->dtype, "data") != 0) return -1;
  if (same_dtype(args->outputs[0], args->inputs[0]->dtype, "the result") != 0) return -1;
  EwSpan fn;
  if (span_of(k_uspan[op][k], args->inputs[0]->dtype, "data", &fn) != 0) return -1;
  return gp_k_elemwise_run(args, 1, fn, NULL);
}

static int kern_where(const GPKernelArgs *args, void *user) {
  (void)user;
  int kc, kx;
  if (io_check(args, 3) != 0 || gp_k_dtype_check(args->inputs[0]->dtype, "condition", &kc) != 0 ||
      gp_k_dtype_check(args->inputs[1]->dtype, "x", &kx) != 0)
    return -1;
  if (same_dtype(args->inputs[2], args->inputs[1]->dtype, "y") != 0 ||
      same_dtype(args->outputs[0], args->inputs[1]->dtype, "the result") != 0)
    return -1;
  size_t sz = gp_k_elem_size(kx);
  int col = sz == 1 ? 0 : sz == 2 ? 1 : sz == 4 ? 2 : 3;
  EwSpan fn;
  if (sz != 1 && sz != 2 && sz != 4 && sz != 8) fn = NULL;
  else fn = k_wspan[kc][col];
  if (span_of(fn, args->inputs[0]->dtype, "condition", &fn) != 0) return -1;
  return gp_k_elemwise_run(args, 3, fn, NULL);
}

#define K_KERN(tok, fam, OP)                                     \
  static int kern_##tok(const GPKernelArgs *args, void *user) {  \
    (void)user;                                                  \
    return fam(args, OP##_##tok);                                \
  }
#define K_KERN_C(tok, name, E) K_KERN(tok, cmp_kernel, COP)
#define K_KERN_B(tok, name, cls, FE, IE) K_KERN(tok, bin_kernel, BOP)
#define K_KERN_U(tok, name, cls, FE, IE) K_KERN(tok, un_kernel, UOP)
K_CMP(K_KERN_C)
K_BIN(K_KERN_B)
K_UN(K_KERN_U)
#undef K_KERN_C
#undef K_KERN_B
#undef K_KERN_U
#undef K_KERN

void gp_kernels_register_logic(void) {
#define K_REG3(tok, name, E) gp_kernel_set(name, kern_##tok);
#define K_REG5(tok, name, cls, FE, IE) gp_kernel_set(name, kern_##tok);
  K_CMP(K_REG3)
  K_BIN(K_REG5)
  K_UN(K_REG5)
#undef K_REG3
#undef K_REG5
  gp_kernel_set("where", kern_where);
}
