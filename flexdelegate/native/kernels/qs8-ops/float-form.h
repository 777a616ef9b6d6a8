/* ADD and MUL in float, checked: the constants and the error bound the SIMD kernels share.
 *
 * Both ops' exact result is out = floor(T + 1/2 + eps) + zo, clamped: T the real value of the
 * rescaled sum (ADD) or product (MUL) before the output's SRDHM and RoundingDivideByPOT, and
 * eps = 2^-(e+1) - [T < 0] 2^-e from those two roundings as one (e the output's right shift,
 * eps 0 when it is 0; qs8-ops-avx512bw.c, out_of()). With t a float value within err of
 * T + zo + eps: when t - d and t + d round to the same integer r, d above err and the roundings
 * of t -+ d, every value that close to t gives r, so r is the exact result. A lane within d of a
 * half takes ref.h's scalar definition instead (about 2d of the lanes of random data; where many
 * more do, scales in simple ratios putting results on halves, the kernel gives the rest of the
 * call to its exact form). Both stock arithmetics round and add the zero point alike while
 * |out| < 2^15 - 256 (the NEON output's int16 narrowing), so the float form applies only where
 * every result stays within that. span bounds |T| + |zo| and the terms of t; each float
 * rounding (to nearest: checked in MXCSR or FPCR) errs by at most 2^-24 of its result or constant.
 *  ADD: each rescaled input a' is within 2 of the real A = (v - z) * m / 2^(11 + e_in) (every
 *    form), t = va * alpha + vb * beta + gamma by two FMAs (alpha = A's factor times the output
 *    multiplier mu = mo / 2^(31 + e), gamma = zo - z_a alpha - z_b beta): err 4 mu, |eps| and
 *    3 roundings.
 *  MUL: the product (va - za)(vb - zb) is exact in float (|p| < 2^16), t = p * mu + gamma
 *    (gamma = zo + 2^-(e+1)) less 2^-e where p < 0: 4 roundings. */
#ifndef FLEX_QS8_OPS_FLOAT_FORM_H
#define FLEX_QS8_OPS_FLOAT_FORM_H
#include <math.h>
#include <stddef.h>
#include "ref.h"
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

typedef struct {
  float alpha, beta, gamma, d; /* MUL: alpha mu, beta unused */
  float neg, za, zb;           /* MUL: 2^-e, the zero points (za: a's value less it, a broadcast) */
  int32_t lo, hi;
} fx_qs8_fast;

/* The shortest run worth the constants (and a whole step of every ISA's loop). */
#define FX_QS8_FAST_MIN 64

/* The SIMD float arithmetic rounds as the control register says (the conversions round to
 * nearest explicitly on NEON and AVX-512, by MXCSR on AVX2). */
static inline int fx_qs8_fast_rounds_to_nearest(void) {
#if defined(__x86_64__)
  return !(_mm_getcsr() & 0x6000); /* MXCSR.RC */
#elif defined(__aarch64__)
  uint64_t fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  return !(fpcr >> 22 & 3); /* FPCR.RMode */
#else
  return 0;
#endif
}

/* The float form's constants, or 0 where it does not apply (d too large: many lanes would take
 * the scalar path; results beyond the int16 range; shifts the ops never have). a: the first
 * element of a (read when a_step is 0: a broadcast). */
static inline int fx_qs8_fast_add(const fx_qs8_add_params *p, const void *a, size_t a_step, fx_qs8_fast *k) {
  const int eo = -p->so;
  if (p->s1 > 0 || p->s2 > 0 || eo < 0 || eo > 31 || p->mo < 0 || !fx_qs8_fast_rounds_to_nearest()) return 0;
  const double mu = ldexp(p->mo, -31 - eo), vmax = p->u8 ? 255 : 128;
  double alpha = ldexp(p->m1, p->s1 - 11) * mu, beta = ldexp(p->m2, p->s2 - 11) * mu;
  alpha = p->sub == 2 ? -alpha : alpha, beta = p->sub == 1 ? -beta : beta;
  double gamma = p->zo - p->z1 * alpha - p->z2 * beta;
  if (!a_step) { /* a's one value in gamma (one more rounding, within the margin) */
    const uint8_t v = *(const uint8_t *)a;
    gamma += (p->u8 ? v : (int8_t)v) * alpha;
  }
  const double span = vmax * (fabs(alpha) + fabs(beta)) + fabs(gamma);
  const double d = 1.25 * (ldexp(span + 1, -22) + 4 * mu + (eo ? ldexp(1, -eo - 1) : 0));
  if (!(d <= 1.0 / 64) || span + 4 * mu > 32000) return 0;
  *k = (fx_qs8_fast){.alpha = (float)alpha, .beta = (float)beta, .gamma = (float)gamma, .d = (float)d,
                     .lo = p->lo, .hi = p->hi};
  return 1;
}

static inline int fx_qs8_fast_mul(const fx_qs8_mul_params *p, const void *a, size_t a_step, fx_qs8_fast *k) {
  const int e = p->s < 0 ? -p->s : 0;
  /* (left shifts past 14 wrap in stock's int32) */
  if (p->s < -31 || p->s > 14 || p->m < 0 || !fx_qs8_fast_rounds_to_nearest()) return 0;
  const double mu = ldexp(p->m, p->s - 31), gamma = p->zo + (e ? ldexp(1, -e - 1) : 0);
  const double span = 65536 * mu + fabs(gamma) + 1, d = 1.25 * ldexp(span + 1, -21);
  if (span > 32000) return 0;
  float za = (float)p->z1;
  if (!a_step) {
    const uint8_t v = *(const uint8_t *)a;
    za = (float)((p->u8 ? v : (int8_t)v) - p->z1);
  }
  *k = (fx_qs8_fast){.alpha = (float)mu, .gamma = (float)gamma, .d = (float)d, .neg = e ? ldexpf(1, -e) : 0,
                     .za = za, .zb = (float)p->z2, .lo = p->lo, .hi = p->hi};
  return 1;
}

/* One op's scalar definition (ref.h), for the lanes the bound does not decide. */
typedef struct {
  const fx_qs8_add_params *add; /* else MUL */
  const fx_qs8_mul_params *mul;
  int form;
} fx_qs8_exact_op;

static inline int fx_qs8_exact_u8(const fx_qs8_exact_op *op) { return op->add ? op->add->u8 : op->mul->u8; }

static inline uint8_t fx_qs8_exact_one(const fx_qs8_exact_op *op, uint8_t a, uint8_t b) {
  const int u8 = fx_qs8_exact_u8(op);
  const int32_t va = u8 ? a : (int8_t)a, vb = u8 ? b : (int8_t)b;
  return (uint8_t)(op->add ? fxq_add_one(va, vb, op->add, op->form) : fxq_mul_one(va, vb, op->mul, op->form));
}

/* An ISA's two loops, k its vector constants: run computes steps of `step` elements up to the
 * end or up to the first step with an undecided lane (*hit; that step not stored), and returns
 * the count done; fix computes one step, its undecided lanes by the scalar definition. Both read
 * a step's inputs before writing its outputs: y may be a or b (in place). */
typedef struct {
  size_t (*run)(size_t n, const uint8_t *a, size_t a_step, const uint8_t *b, uint8_t *y, const void *k,
                const fx_qs8_exact_op *op, int *hit);
  void (*fix)(const uint8_t *a, size_t a_step, const uint8_t *b, uint8_t *y, const void *k, const fx_qs8_exact_op *op);
  size_t step;
} fx_qs8_fast_isa;

/* The float form over a prefix of n elements (the count done): until the end, or until more
 * steps needed fixing than results off halves would explain. */
static inline size_t fx_qs8_fast_drive(size_t n, const uint8_t *a, size_t a_step, const uint8_t *b, uint8_t *y,
                                       const void *k, const fx_qs8_exact_op *op, const fx_qs8_fast_isa *isa) {
  size_t i = 0;
  for (size_t fixes = 0;;) {
    int hit = 0;
    i += isa->run(n - i, a + i * a_step, a_step, b + i, y + i, k, op, &hit);
    if (!hit) return i;
    isa->fix(a + i * a_step, a_step, b + i, y + i, k, op);
    i += isa->step;
    if (++fixes > 8 + i / 1024) return i;
  }
}

/* The float form's constants for op, when it applies to n elements. */
static inline int fx_qs8_fast_of(const fx_qs8_exact_op *op, size_t n, const void *a, size_t a_step, fx_qs8_fast *f) {
  return n >= FX_QS8_FAST_MIN && (op->add ? fx_qs8_fast_add(op->add, a, a_step, f) : fx_qs8_fast_mul(op->mul, a, a_step, f));
}
#endif
