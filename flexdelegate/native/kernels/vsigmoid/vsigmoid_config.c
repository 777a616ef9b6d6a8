/* Sigmoid and swish (x * sigmoid(x)) over arrays: the activations EfficientNet applies to
 * every conv output, so they run at arithmetic speed, not at the auto-vectoriser's. One
 * variant per ISA, chosen once like the GEMM and depthwise tables (FLEXDELEGATE_ISA narrows
 * it); fx_vsigmoid_ref is the portable reference the SIMD variants are tested against.
 *
 * All variants: e = exp(-|x|) by n = round(-|x| / ln2), r = -|x| - n ln2 (two-part ln2),
 * e^r = 1 + r + r^2 q(r) with q a cubic fitted (weighted least squares, float32-evaluated) for
 * relative error < 1.7e-7 on |r| <= ln2/2 (elementwise.c's fx_expf uses two more terms: 16%
 * slower for ~1 ulp less), 2^n applied exactly; then
 * f = e / (1 + e) and sigmoid = x > 0 ? 1 - f : f. Below -|x| = -87.3, e flushes to 0 (as
 * elementwise.c's fx_expf does: sigmoid(-inf) = 0 exactly, as stock; AVX-512 goes through
 * the subnormals instead, as libm's expf would). NaN propagates. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "runtime/cpu.h"
#include "vsigmoid.h"

#define EXP_LO (-87.3f)
#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693359375f
#define LN2_LO (-2.12194440e-4f)
#define Q3 8.332597091794014e-3f
#define Q2 4.189864546060562e-2f
#define Q1 1.6666901111602783e-1f
#define Q0 4.9999141693115234e-1f

static float sigmoid1(float x) {
  float z = -fabsf(x);
  const int under = z < EXP_LO;
  if (under) z = EXP_LO;
  const float n = nearbyintf(z * LOG2E);
  float r = z - n * LN2_HI;
  r = r - n * LN2_LO;
  float p = Q3;
  p = p * r + Q2;
  p = p * r + Q1;
  p = p * r + Q0;
  const float e = under ? 0.0f : ldexpf(p * (r * r) + r + 1.0f, (int)n);
  const float f = e / (1.0f + e);
  if (isnan(x)) return x;
  return x > 0.0f ? 1.0f - f : f;
}

void fx_vsigmoid_ref(const float *x, float *y, size_t n, int swish) {
  for (size_t i = 0; i < n; i++) {
    const float v = x[i];
    y[i] = swish ? v * sigmoid1(v) : sigmoid1(v);
  }
}

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))

AVX512 static inline __m512 sigmoid16(__m512 x) {
  const __m512 zx = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN)));
  /* Clamped only so that -inf stays finite: scalef takes 2^n down through the subnormals to
   * exactly 0 (n <= -150), so no flush mask is needed. max(lo, z) returns z when z is NaN
   * (x86 max returns its second operand then). */
  const __m512 z = _mm512_max_ps(_mm512_set1_ps(-150.0f), zx);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(z, _mm512_set1_ps(LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_HI), z);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_LO), r);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(Q3), r, _mm512_set1_ps(Q2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(Q1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(Q0));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512 e = _mm512_scalef_ps(p, n);
  const __m512 f = _mm512_div_ps(e, _mm512_add_ps(e, _mm512_set1_ps(1.0f)));
  const __mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ);
  return _mm512_mask_sub_ps(f, pos, _mm512_set1_ps(1.0f), f);
}

AVX512 static void vsigmoid_avx512f(const float *x, float *y, size_t n, int swish) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i), s = sigmoid16(v);
    _mm512_storeu_ps(y + i, swish ? _mm512_mul_ps(v, s) : s);
  }
  if (i < n) {
    const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i), s = sigmoid16(v);
    _mm512_mask_storeu_ps(y + i, m, swish ? _mm512_mul_ps(v, s) : s);
  }
}

#define AVX2 __attribute__((target("avx2,fma")))

AVX2 static inline __m256 sigmoid8(__m256 x) {
  const __m256 zx = _mm256_or_ps(x, _mm256_set1_ps(-0.0f));
  const __m256 under = _mm256_cmp_ps(zx, _mm256_set1_ps(EXP_LO), _CMP_LT_OQ);
  const __m256 z = _mm256_max_ps(_mm256_set1_ps(EXP_LO), zx);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(z, _mm256_set1_ps(LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_HI), z);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_LO), r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(Q3), r, _mm256_set1_ps(Q2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(Q1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(Q0));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  /* 2^n for n in [-126, 0]: a normal float built from its exponent bits */
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 e = _mm256_andnot_ps(under, _mm256_mul_ps(p, _mm256_castsi256_ps(bits)));
  const __m256 f = _mm256_div_ps(e, _mm256_add_ps(e, _mm256_set1_ps(1.0f)));
  const __m256 pos = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ);
  return _mm256_blendv_ps(f, _mm256_sub_ps(_mm256_set1_ps(1.0f), f), pos);
}

AVX2 static void vsigmoid_avx2(const float *x, float *y, size_t n, int swish) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i), s = sigmoid8(v);
    _mm256_storeu_ps(y + i, swish ? _mm256_mul_ps(v, s) : s);
  }
  if (i < n) {
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - i)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 v = _mm256_maskload_ps(x + i, m), s = sigmoid8(v);
    _mm256_maskstore_ps(y + i, m, swish ? _mm256_mul_ps(v, s) : s);
  }
}
#endif

static const fx_vsigmoid_config k_ref = {"f32-vsigmoid-scalar", fx_vsigmoid_ref};
#if defined(__x86_64__)
static const fx_vsigmoid_config k_avx2 = {"f32-vsigmoid-avx2", vsigmoid_avx2};
static const fx_vsigmoid_config k_avx512 = {"f32-vsigmoid-avx512f", vsigmoid_avx512f};
#endif
static fx_isa_menu g_menu = {.by_isa = {[FX_ISA_SCALAR] = &k_ref,
#if defined(__x86_64__)
                                       [FX_ISA_AVX2] = &k_avx2, [FX_ISA_AVX512F] = &k_avx512,
#endif
}};

const fx_vsigmoid_config *fx_vsigmoid_config_at(int i) { return fx_isa_at(&g_menu, i); }

const fx_vsigmoid_config *fx_vsigmoid_config_get(void) { return fx_isa_chosen(&g_menu); }

int fx_vsigmoid(const float *x, float *y, size_t n, int swish) {
  const fx_vsigmoid_config *c = fx_vsigmoid_config_get();
  if (c == &k_ref) return 0; /* elementwise.c's loop: vectorised by the compiler */
  c->fn(x, y, n, swish);
  return 1;
}
