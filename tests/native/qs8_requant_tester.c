/* Checks the requantization layer:
 *  - fx_quantize_multiplier on its edges (zero, a mantissa that rounds to 2^31, shifts below
 *    -31 flushed, above 30 saturated under single rounding, exact powers of two);
 *  - fx_rq_double / fx_rq_single against literal, independently written transcriptions of the
 *    stock recipes (TFLite's SaturatingRoundingDoublingHighMul + RoundingDivideByPOT, with
 *    gemmlowp's saturating ShiftLeft; ruy's x86 nudge-and-shift with its overflow substitute;
 *    TFLITE_SINGLE_ROUNDING), over
 *    random accumulators, multipliers, every shift, and constructed exact ties;
 *  - the SIMD output stages of this CPU (fx_qs8_requant_row_avx2 / _neon) against the scalar
 *    one, bit for bit, in every rounding, with LiteRT's channel split, zero points at both
 *    ends and random clamps. Prints "ALL PASS". */
#include <string.h>
#include "kernels/quant/requant.h"
#include "qs8_tester_util.h"
#if defined(__x86_64__)
#include "runtime/cpu.h"
#endif

/* gemmlowp: nudge by +-2^30, then divide truncating toward zero; INT32_MIN^2 saturates. */
static int32_t lit_srdhm(int32_t a, int32_t b) {
  if (a == b && a == INT32_MIN) return INT32_MAX;
  const int64_t ab = (int64_t)a * b;
  const int64_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
  return (int32_t)((ab + nudge) / (1LL << 31));
}
static int32_t lit_rdbpot(int32_t x, int e) {
  const int32_t mask = (int32_t)((1LL << e) - 1);
  const int32_t rem = x & mask, thr = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> e) + (rem > thr ? 1 : 0);
}
/* gemmlowp's ShiftLeft(int32): through int64, saturated. */
static int32_t lit_shift_left_sat(int32_t a, int offset) {
  const int64_t wide = (int64_t)a * (1LL << offset);
  return wide < INT32_MIN ? INT32_MIN : wide > INT32_MAX ? INT32_MAX : (int32_t)wide;
}
static int32_t lit_gemmlowp(int32_t x, int32_t m, int shift) {
  const int ls = shift > 0 ? shift : 0, rs = shift > 0 ? 0 : -shift;
  return lit_rdbpot(lit_srdhm(lit_shift_left_sat(x, ls), m), rs);
}
static int32_t lit_tflite_double(int32_t x, int32_t m, int shift) {
  const int ls = shift > 0 ? shift : 0, rs = shift > 0 ? 0 : -shift;
  return lit_rdbpot(lit_srdhm((int32_t)((uint32_t)x << ls), m), rs);
}
/* ruy's AVX2 kernel, per lane: 64-bit (x << ls) * m + 2^30, >> 31, then a rounding shift whose
 * int32 overflow is replaced by 1 << (31 - rs). */
static int32_t lit_ruy_x86(int32_t x, int32_t m, int shift) {
  const int ls = shift > 0 ? shift : 0, rs = shift > 0 ? 0 : -shift;
  const int32_t r = (int32_t)((((int64_t)(int32_t)((uint32_t)x << ls)) * m + (1LL << 30)) >> 31);
  if (rs == 0) return r;
  const int32_t nudge = 1 << (rs - 1);
  if (r > INT32_MAX - nudge) return (int32_t)(1u << (31 - rs));
  return (r + nudge) >> rs;
}
static int32_t lit_single(int32_t x, int32_t m, int shift) {
  const int64_t total = 31 - shift, round = (int64_t)1 << (total - 1);
  return (int32_t)((x * (int64_t)m + round) >> total);
}

static int fails = 0;
#define EXPECT(cond, ...) do { if (!(cond)) { if (fails++ < 20) fprintf(stderr, __VA_ARGS__); } } while (0)

static void check_quantize_multiplier(void) {
  int32_t m, s;
  fx_quantize_multiplier(0.0, 0, &m, &s);
  EXPECT(m == 0 && s == 0, "QM(0) = %d %d\n", m, s);
  fx_quantize_multiplier(0.5, 0, &m, &s);
  EXPECT(m == (1 << 30) && s == 0, "QM(0.5) = %d %d\n", m, s);
  fx_quantize_multiplier(1.0, 0, &m, &s);
  EXPECT(m == (1 << 30) && s == 1, "QM(1) = %d %d\n", m, s);
  fx_quantize_multiplier(1.0 - ldexp(1.0, -40), 0, &m, &s); /* rounds up to 2^31: halved */
  EXPECT(m == (1 << 30) && s == 1, "QM(1-2^-40) = %d %d\n", m, s);
  fx_quantize_multiplier(ldexp(1.0, -31), 0, &m, &s);
  EXPECT(m == (1 << 30) && s == -30, "QM(2^-31) = %d %d\n", m, s);
  fx_quantize_multiplier(ldexp(1.0, -33), 0, &m, &s); /* shift -32: flushed */
  EXPECT(m == 0 && s == 0, "QM(2^-33) = %d %d\n", m, s);
  fx_quantize_multiplier(ldexp(1.0, -32), 0, &m, &s); /* shift -31 exactly: kept */
  EXPECT(m == (1 << 30) && s == -31, "QM(2^-32) = %d %d\n", m, s);
  fx_quantize_multiplier(ldexp(1.5, 40), 1, &m, &s);
  EXPECT(m == INT32_MAX && s == 30, "QM1(1.5*2^40) = %d %d\n", m, s);
  fx_quantize_multiplier(ldexp(1.5, 40), 0, &m, &s);
  EXPECT(m == 3 << 29 && s == 41, "QM(1.5*2^40) = %d %d\n", m, s);
  fx_quantize_multiplier(0.1, 0, &m, &s);
  EXPECT(m == 1717986918 && s == -3, "QM(0.1) = %d %d\n", m, s); /* round(0.8 * 2^31) */
  /* per-channel parameters from float32 scales: the double product of the floats */
  const float sw[3] = {0.013f, 2.5e-4f, 7.0f};
  int32_t pm[3], ps[3];
  EXPECT(fx_qs8_requant_params(3, 0.0157f, sw, FX_QS8_SCALES_PER_CHANNEL, 0.031f, 0, pm, ps) == 0,
         "requant_params rc\n");
  for (int c = 0; c < 3; c++) {
    fx_quantize_multiplier((double)0.0157f * (double)sw[c] / (double)0.031f, 0, &m, &s);
    EXPECT(pm[c] == m && ps[c] == s, "requant_params[%d] = %d %d, want %d %d\n", c, pm[c], ps[c], m, s);
  }
  EXPECT(fx_qs8_requant_params(3, 1.0f, sw, FX_QS8_SCALES_PER_TENSOR, 1e-9f, 0, pm, ps) == 0 && pm[2] == pm[0],
         "per-tensor\n");
  /* the legacy multiplier: s_in * s_w rounded to float first (stock's uint8 layers give these
   * exact pairs; the double product would be 2081595436) */
  const float lw = 0.003332639f;
  EXPECT(fx_qs8_requant_params(1, 0.036698252f, &lw, FX_QS8_SCALES_LEGACY, 8.268888f, 0, pm, ps) == 0 &&
             pm[0] == 2081595313 && ps[0] == -16,
         "legacy requant_params = %d %d\n", pm[0], ps[0]);
  const float huge = 1e10f;
  EXPECT(fx_qs8_requant_params(1, 1.0f, &huge, FX_QS8_SCALES_PER_TENSOR, 1.0f, 0, pm, ps) == -1,
         "M >= 2^30 must be refused\n");
  printf("quantize_multiplier edges: %s\n", fails ? "FAIL" : "pass");
}

static int32_t rnd_acc(void) {
  switch (rnd_in(0, 5)) {
    case 0: return (int32_t)rnd32();
    case 1: return rnd_in(-300, 300);
    case 2: return (int32_t[]){INT32_MIN, INT32_MAX, 0, -1, 1, INT32_MIN + 1}[rnd_in(0, 5)];
    default: return rnd_in(-2000000, 2000000);
  }
}

static void check_scalar_rules(long n) {
  long bad = 0;
  for (long i = 0; i < n; i++) {
    const int shift = rnd_in(-31, 30);
    int32_t m = rnd_in(0, 3) ? (int32_t)(rnd32() >> 1) | (1 << 30) : (rnd_in(0, 1) ? 1 << 30 : (int32_t)(rnd32() >> 1));
    int32_t x = rnd_acc();
    if (rnd_in(0, 2) == 0 && shift < 0) { /* an exact tie of the final rounding */
      const int rs = -shift;
      x = (int32_t)((int64_t)rnd_in(-1000, 1000) * ((int64_t)1 << rs) + ((int64_t)1 << (rs - 1))); /* no << of a negative: UB */
      m = 1 << 30; /* x*m/2^31 = x/2 exactly when x is even */
      if (rs < 30) x = (int32_t)((int64_t)x * 2);
    }
    const int32_t d_away = fx_rq_double(x, m, shift, 1, 0), d_up = fx_rq_double(x, m, shift, 0, 0);
    const int32_t d_sat = fx_rq_apply(x, m, shift, FLEX_RQ_AWAY_SAT);
    const int32_t single = fx_rq_single(x, m, shift);
    const int32_t want_up = lit_ruy_x86(x, m, shift);
    const int ok = d_away == lit_tflite_double(x, m, shift) && d_up == want_up &&
                   single == lit_single(x, m, shift) && d_sat == lit_gemmlowp(x, m, shift);
    if (!ok) bad++;
    EXPECT(ok, "x=%d m=%d shift=%d: away %d/%d up %d/%d single %d/%d\n", x, m, shift, d_away,
           lit_tflite_double(x, m, shift), d_up, want_up, single, lit_single(x, m, shift));
  }
  printf("scalar rules vs literal stock recipes: %ld/%ld pass\n", n - bad, n);
}

typedef void (*row_fn)(size_t, const int32_t *, const int32_t *, const int32_t *, size_t,
                       const fx_qs8_out *, int8_t *);

static void check_simd_rows(const char *name, row_fn fn, int rows) {
  long bad = 0;
  for (int r = 0; r < rows; r++) {
    const size_t n = (size_t)rnd_in(1, 70), c0 = rnd_in(0, 1) ? 0 : (size_t)rnd_in(0, 40);
    int32_t acc[71], m[71], sh[71];
    int8_t want[71], got[71];
    fx_qs8_out o = rnd_out((int)(c0 + n), 1);
    if (rnd_in(0, 2) == 0 && o.rounding < FLEX_RQ_SINGLE) o.tail_from = (int32_t)(c0 + (size_t)rnd_in(0, (int)n));
    rnd_requant((int)n, 3000.0, o.rounding, m, sh);
    for (size_t c = 0; c < n; c++) {
      acc[c] = rnd_acc();
      if (rnd_in(0, 5) == 0) { sh[c] = rnd_in(-31, 30); m[c] = rnd_in(0, 1) ? 1 << 30 : (int32_t)(rnd32() >> 1); }
      if (rnd_in(0, 3) == 0 && sh[c] < 0) /* a tie, wrapping as int32 (unsigned: no UB) */
        acc[c] = (int32_t)((uint32_t)((int64_t)rnd_in(-500, 500) * ((int64_t)1 << (1 - sh[c]))) + ((uint32_t)1 << -sh[c]));
    }
    fx_qs8_requant_row_scalar(n, acc, m, sh, c0, &o, want);
    memset(got, 0x55, sizeof got);
    fn(n, acc, m, sh, c0, &o, got);
    const int ok = memcmp(want, got, n) == 0 && got[n] == 0x55;
    bad += !ok;
    EXPECT(ok, "%s: row of %zu at c0=%zu rounding %d tail %d from %d differs\n", name, n, c0,
           o.rounding, o.tail_rounding, o.tail_from);
  }
  printf("%s vs scalar output stage: %ld/%d rows pass\n", name, rows - bad, rows);
}

int main(int argc, char **argv) {
  const long n = argc > 1 ? atol(argv[1]) : 2000000;
  check_quantize_multiplier();
  check_scalar_rules(n);
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) check_simd_rows("requant-avx2", fx_qs8_requant_row_avx2, (int)(n / 20));
  else printf("requant-avx2: not run (no AVX2)\n");
#endif
#if defined(__aarch64__)
  check_simd_rows("requant-neon", fx_qs8_requant_row_neon, (int)(n / 20));
#endif
  if (fails) {
    printf("FAILED (%d)\n", fails);
    return 1;
  }
  printf("ALL PASS\n");
  return 0;
}
