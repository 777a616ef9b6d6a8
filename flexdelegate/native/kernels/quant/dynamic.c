/* Dynamic quantization of float activations (dynamic.h): the parameters in scalar float and double
 * as tensor_utils computes them, the passes over the values in a scalar reference and an AVX-512
 * form that rounds every value the same way (a hybrid layer's input is a whole map: two passes
 * over it per run, one when its writer recorded its range). */
#include <math.h>
#include <string.h>
#include "dynamic.h"
#include "flex_api.h"
#include "kernels/simd/nofuse.h"
#include "runtime/cpu.h"

/* How a value is rounded (dynamic.h): half away from zero after the zero point is added (the
 * portable loop), the NEON vector loop's trunc(v +- 0.5), or its scalar tail's round then add. */
enum { FORM_PORTABLE, FORM_NEON_BODY, FORM_NEON_TAIL };

typedef struct {
  const char *name;
  void (*minmax)(const float *x, size_t n, float *lo, float *hi);
  /* nonzero when some x is NaN (its q is then 0) */
  int (*quantize)(const float *x, size_t n, int8_t *q, const fx_dynq *p, int form);
} dynq_variant;

static void minmax_scalar(const float *x, size_t n, float *lo, float *hi) {
  float l = *lo, h = *hi;
  for (size_t i = 0; i < n; i++) {
    l = x[i] < l ? x[i] : l;
    h = x[i] > h ? x[i] : h;
  }
  *lo = l;
  *hi = h;
}

/* One value: x * inv rounded on its own (stock's separate multiply), then `form`. */
static inline int8_t quantize_one(float x, const fx_dynq *p, int form) {
  if (x != x) return 0; /* NaN: the caller poisons the row (a NaN to int is undefined in C) */
  float v = x * p->inv;
  FX_NOFUSE(v);
  int32_t q;
  if (form == FORM_PORTABLE) {
    q = (int32_t)roundf(p->asymmetric ? v + (float)p->zp : v);
  } else if (form == FORM_NEON_BODY) {
    const float t = v + (v < 0.0f ? -0.5f : 0.5f);
    q = (int32_t)t + p->zp;
  } else {
    q = (int32_t)roundf(v) + p->zp;
  }
  const int32_t lo = p->asymmetric ? -128 : -127;
  return (int8_t)(q < lo ? lo : q > 127 ? 127 : q);
}

static int quantize_scalar(const float *x, size_t n, int8_t *q, const fx_dynq *p, int form) {
  int nan = 0;
  for (size_t i = 0; i < n; i++) nan |= x[i] != x[i], q[i] = quantize_one(x[i], p, form);
  return nan;
}

static const dynq_variant k_scalar = {"dynq-scalar", minmax_scalar, quantize_scalar};

#if defined(__x86_64__)
#include <immintrin.h>
#define FX_DYNQ_TARGET __attribute__((target("avx2,fma,avx512f")))

FX_DYNQ_TARGET static void minmax_avx512(const float *x, size_t n, float *lo, float *hi) {
  __m512 l0 = _mm512_set1_ps(*lo), l1 = l0, h0 = _mm512_set1_ps(*hi), h1 = h0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) { /* two chains: min/max latency 4, throughput 2 a cycle */
    const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
    l0 = _mm512_min_ps(l0, a), h0 = _mm512_max_ps(h0, a);
    l1 = _mm512_min_ps(l1, b), h1 = _mm512_max_ps(h1, b);
  }
  for (; i < n; i += 16) { /* the tail: missing lanes keep the accumulators' values */
    const __mmask16 m = n - i >= 16 ? 0xFFFF : (__mmask16)((1u << (n - i)) - 1);
    l0 = _mm512_mask_min_ps(l0, m, l0, _mm512_maskz_loadu_ps(m, x + i));
    h0 = _mm512_mask_max_ps(h0, m, h0, _mm512_maskz_loadu_ps(m, x + i));
  }
  *lo = _mm512_reduce_min_ps(_mm512_min_ps(l0, l1));
  *hi = _mm512_reduce_max_ps(_mm512_max_ps(h0, h1));
}

/* Half away from zero: v - trunc(v) is exact, so its magnitude decides. */
FX_DYNQ_TARGET static inline __m512i round_away(__m512 v) {
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN));
  const __m512 one = _mm512_castsi512_ps(_mm512_or_si512(sign, _mm512_castps_si512(_mm512_set1_ps(1.0f))));
  const __mmask16 up = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v, t)), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  return _mm512_cvttps_epi32(_mm512_mask_add_ps(t, up, t, one));
}

/* 16 values in `form` (quantize_one's), clamped, as int32. */
FX_DYNQ_TARGET static inline __m512i quantize16(__m512 x, const fx_dynq *p, int form) {
  __m512 v = _mm512_mul_ps(x, _mm512_set1_ps(p->inv));
  FX_NOFUSE(v);
  const __m512i zp = _mm512_set1_epi32(p->zp);
  __m512i q;
  if (form == FORM_PORTABLE) {
    q = round_away(p->asymmetric ? _mm512_add_ps(v, _mm512_set1_ps((float)p->zp)) : v);
  } else if (form == FORM_NEON_BODY) {
    const __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
    const __m512 half = _mm512_mask_blend_ps(neg, _mm512_set1_ps(0.5f), _mm512_set1_ps(-0.5f));
    q = _mm512_add_epi32(_mm512_cvttps_epi32(_mm512_add_ps(v, half)), zp);
  } else {
    q = _mm512_add_epi32(round_away(v), zp);
  }
  const __m512i lo = _mm512_set1_epi32(p->asymmetric ? -128 : -127);
  return _mm512_min_epi32(_mm512_max_epi32(q, lo), _mm512_set1_epi32(127));
}

FX_DYNQ_TARGET static int quantize_avx512(const float *x, size_t n, int8_t *q, const fx_dynq *p, int form) {
  __mmask16 nan = 0; /* the NaN lanes' values are whatever cvtt makes of them: the row is poisoned */
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    _mm_storeu_si128((__m128i *)(q + i), _mm512_cvtsepi32_epi8(quantize16(v, p, form)));
  }
  if (i < n) {
    const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    _mm512_mask_cvtsepi32_storeu_epi8(q + i, m, quantize16(v, p, form));
  }
  return nan != 0;
}

static const dynq_variant k_avx512 = {"dynq-avx512", minmax_avx512, quantize_avx512};
#endif

static fx_isa_menu menu = {.by_isa = {[FX_ISA_SCALAR] = &k_scalar,
#if defined(__x86_64__)
                                      [FX_ISA_AVX512F] = &k_avx512
#endif
                                     }};

static const dynq_variant *variant(void) { return fx_isa_chosen(&menu); }

void fx_dynq_minmax(const float *x, size_t n, float *lo, float *hi) { variant()->minmax(x, n, lo, hi); }

int fx_dynq_quantize(const float *x, size_t n, int8_t *q, const fx_dynq *p, size_t first, size_t len) {
  const dynq_variant *v = variant();
  if (fx_dynq_poisoned(p)) {
    memset(q, 0, n);
    return 1;
  }
  if (p->stock != FLEX_STOCK_NEON) return v->quantize(x, n, q, p, FORM_PORTABLE);
  const size_t main = len - len % 8, body = main > first ? (main - first < n ? main - first : n) : 0;
  int nan = 0;
  if (body) nan |= v->quantize(x, body, q, p, FORM_NEON_BODY);
  if (body < n) nan |= v->quantize(x + body, n - body, q + body, p, FORM_NEON_TAIL);
  return nan;
}

/* SymmetricQuantizeFloats' scale: range / 127 and 127 / range, both in float. */
static fx_dynq symmetric(float lo, float hi, int stock) {
  const float range = fabsf(lo) > fabsf(hi) ? fabsf(lo) : fabsf(hi);
  if (range == 0.0f) return (fx_dynq){1.0f, 0.0f, 0, 0, stock};
  return (fx_dynq){range / 127.0f, 127.0f / range, 0, 0, stock};
}

/* AsymmetricQuantizeFloats: the scale and the nudged zero point in double, the range's
 * difference in double (portable) or float (NEON's MinMax gives floats). The inverse is in float
 * (portable) or double rounded to float (NEON): the same value (one division, rounded twice
 * from 53 bits to 24). */
static fx_dynq asymmetric(float lo, float hi, int stock) {
  const float fmin = lo < 0.0f ? lo : 0.0f, fmax = hi > 0.0f ? hi : 0.0f;
  const double rmin = fmin, rmax = fmax;
  if (rmin == rmax) return (fx_dynq){1.0f, 0.0f, 0, 1, stock};
  const double range = stock == FLEX_STOCK_NEON ? (double)(fmax - fmin) : rmax - rmin;
  const double scale = range / 255.0;
  const double from_min = -128.0 - rmin / scale, from_max = 127.0 - rmax / scale;
  const double err_min = 128.0 + fabs(rmin / scale), err_max = 127.0 + fabs(rmax / scale);
  const double zp = err_min < err_max ? from_min : from_max;
  fx_dynq p = {(float)scale, 0.0f, zp <= -128.0 ? -128 : zp >= 127.0 ? 127 : (int32_t)round(zp), 1, stock};
  p.inv = 1.0f / p.scale;
  return p;
}

fx_dynq fx_dynq_params(float lo, float hi, int asymmetric_inputs, int stock) {
  if (!isfinite(lo) || !isfinite(hi)) return (fx_dynq){NAN, 0.0f, 0, asymmetric_inputs, stock};
  return asymmetric_inputs ? asymmetric(lo, hi, stock) : symmetric(lo, hi, stock);
}
