/* Sigmoid / swish, AVX-512F: 16 lanes, 2^n by scalef, masked tails (the algorithm:
 * vsigmoid.h). */
#if defined(__x86_64__)
#include <stdint.h>
#include <immintrin.h>
#include "vsigmoid.h"
#include "vsigmoid_poly.h"

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

AVX512 void fx_f32_vsigmoid_avx512f(FX_VSIGMOID_ARGS) {
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
#endif
