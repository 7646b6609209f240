/* quant.c -- the OPU's quantization arithmetic (docs/OPU.md "Quantization"): multipliers and
 * shifts from real scales, rounding shifts and divisions (ties away from zero), float
 * quantization for the driver, and the PE-blocked weight layout. */
#include "isa.h"

#include <math.h>

void opu_quant_multiplier(double real, int32_t *m, uint16_t *shift) {
  *m = 0;
  *shift = 0;
  if (!(real > 0) || !isfinite(real)) return;
  int e;
  double f = frexp(real, &e); /* real = f * 2^e, f in [0.5, 1) */
  int64_t q = (int64_t)llround(f * 2147483648.0); /* f * 2^31, in [2^30, 2^31] */
  if (q == ((int64_t)1 << 31)) {
    q >>= 1;
    e++;
  }
  int s = 31 - e; /* real = q * 2^-s */
  if (s < 0) { /* real >= 2^31: the largest representable */
    *m = INT32_MAX;
    *shift = 0;
    return;
  }
  if (s > 62) { /* shift further with rounding; below 2^-63 it is 0 */
    int extra = s - 62;
    if (extra > 31) return;
    q = (q + ((int64_t)1 << (extra - 1))) >> extra;
    s = 62;
    if (!q) return;
  }
  *m = (int32_t)q;
  *shift = (uint16_t)s;
}

int64_t opu_rshift_round(int64_t x, unsigned shift) {
  if (shift == 0) return x;
  if (shift >= 63) { /* |x| < 2^63: the result rounds to 0 unless |x| >= 2^62 */
    uint64_t ax = x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
    int64_t r = ax >= ((uint64_t)1 << 62) ? 1 : 0;
    return x < 0 ? -r : r;
  }
  int64_t half = (int64_t)1 << (shift - 1);
  return x >= 0 ? (x + half) >> shift : -((-x + half) >> shift);
}

int64_t opu_div_round(int64_t x, int64_t d) {
  return x >= 0 ? (x + d / 2) / d : -((-x + d / 2) / d);
}

/* ------------------------------------------------------------------------------------------ */
/* Weight layout                                                                               */

static uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

uint64_t opu_conv_weight_bytes(uint32_t oc, uint32_t icg, uint32_t groups, uint32_t kh, uint32_t kw,
                               int depthwise, uint32_t R, uint32_t C) {
  if (depthwise) return cdiv(oc, R) * kh * kw * R;
  uint64_t ocg = oc / groups;
  return (uint64_t)groups * cdiv(ocg, R) * cdiv(icg, C) * kh * kw * R * C;
}

uint64_t opu_conv_weight_index(uint32_t o, uint32_t i, uint32_t y, uint32_t x, uint32_t oc, uint32_t icg,
                               uint32_t groups, uint32_t kh, uint32_t kw, int depthwise, uint32_t R,
                               uint32_t C) {
  if (depthwise) return (((uint64_t)(o / R) * kh + y) * kw + x) * R + o % R;
  uint64_t ocg = oc / groups, g = o / ocg, og = o % ocg;
  uint64_t nob = cdiv(ocg, R), nib = cdiv(icg, C);
  uint64_t gbytes = nob * nib * kh * kw * R * C;
  uint64_t tile = ((((og / R) * nib + i / C) * kh + y) * kw + x);
  return g * gbytes + (tile * R + og % R) * C + i % C;
}
