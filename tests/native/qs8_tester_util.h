/* Shared helpers of the QS8 testers: a deterministic RNG and random quantization parameters
 * spanning the edges (zero points at both ends, tiny and huge multipliers, every clamp, every
 * rounding). Testers are built outside the library, straight from the kernel sources. */
#ifndef QS8_TESTER_UTIL_H
#define QS8_TESTER_UTIL_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "kernels/quant/requant.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static inline uint32_t rnd32(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 11);
}
static inline int rnd_in(int lo, int hi) { return lo + (int)(rnd32() % (uint32_t)(hi - lo + 1)); }
static inline double rnd_unit(void) { return (rnd32() & 0xffffff) / 16777216.0; }

/* A zero point of [lo, hi]: an end a third of the time. */
static inline int rnd_zp(int lo, int hi) {
  const int r = rnd_in(0, 5);
  return r == 0 ? lo : r == 1 ? hi : rnd_in(lo, hi);
}

/* Per-channel multipliers for accumulators of typical magnitude acc_mag: mostly near 100 /
 * acc_mag (outputs inside int8), sometimes tiny (flushed or all-zero), huge (left shifts,
 * saturation) or an exact power of two (ties). */
static inline void rnd_requant(int n, double acc_mag, int rounding, int32_t *m, int32_t *sh) {
  const int kind = rnd_in(0, 9);
  for (int c = 0; c < n; c++) {
    double real = 100.0 / (acc_mag > 1 ? acc_mag : 1) * pow(2.0, 3.0 * (rnd_unit() - 0.5));
    if (kind == 0) real = pow(2.0, -rnd_in(25, 40)) * (1 + rnd_unit());
    if (kind == 1) real = pow(2.0, rnd_in(0, 29)) * (1 + rnd_unit() * 0.99);
    if (kind == 2) real = pow(2.0, -rnd_in(0, 20));
    if (kind == 3) real = 1.0 - pow(2.0, -rnd_in(33, 52)); /* the mantissa rounds to 2^31 */
    fx_quantize_multiplier(real, rounding == FLEX_RQ_SINGLE, &m[c], &sh[c]);
    if (sh[c] > 30) fx_quantize_multiplier(pow(2.0, 29), 0, &m[c], &sh[c]);
  }
}

/* An output stage: random zero point, one of the clamps, a rounding (and, for the depthwise
 * kernels, LiteRT's AWAY/UP channel split sometimes). */
static inline fx_qs8_out rnd_out(int channels, int with_tail) {
  fx_qs8_out o;
  o.zp = rnd_zp(-128, 127);
  o.rounding = rnd_in(0, 3);
  o.tail_rounding = rnd_in(0, 1);
  o.tail_from = with_tail && o.rounding < FLEX_RQ_SINGLE && rnd_in(0, 1) ? channels - channels % 8 : INT32_MAX;
  switch (rnd_in(0, 3)) {
    case 0: o.lo = -128; o.hi = 127; break;
    case 1: o.lo = o.zp; o.hi = 127; break;                          /* RELU */
    case 2: o.lo = o.zp; o.hi = o.zp + rnd_in(0, 127 - o.zp); break; /* RELU6-like */
    default: o.lo = rnd_in(-128, 0); o.hi = rnd_in(o.lo, 127); break;
  }
  return o;
}

static inline void rnd_i8(int8_t *p, size_t n, int lo, int hi) {
  for (size_t i = 0; i < n; i++) p[i] = (int8_t)rnd_in(lo, hi);
}
#endif
