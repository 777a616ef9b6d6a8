/* Sigmoid / swish, AVX2 + FMA: 8 lanes, 2^n built from exponent bits, masked tails (the
 * algorithm: vsigmoid.h). */
#if defined(__x86_64__)
#include <immintrin.h>
#include "vsigmoid.h"
#include "vsigmoid_poly.h"

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

AVX2 void fx_f32_vsigmoid_avx2(FX_VSIGMOID_ARGS) {
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
