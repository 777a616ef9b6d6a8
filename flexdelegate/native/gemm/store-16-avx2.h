/* The AVX2 16-column output stage shared by the GEMM and IGEMM 6x16 kernels: clamp one row
 * of two ymm accumulators and store its first nc (<= 16) columns. */
#ifndef FLEX_STORE_16_AVX2_H
#define FLEX_STORE_16_AVX2_H
#include <immintrin.h>
#include <stddef.h>

__attribute__((target("avx2,fma"), always_inline)) static inline void
fx_store_row_16_avx2(float *ci, size_t nc, __m256 r0, __m256 r1, __m256 vlo, __m256 vhi) {
  r0 = _mm256_min_ps(_mm256_max_ps(r0, vlo), vhi);
  r1 = _mm256_min_ps(_mm256_max_ps(r1, vlo), vhi);
  if (nc == 16) {
    _mm256_storeu_ps(ci, r0);
    _mm256_storeu_ps(ci + 8, r1);
    return;
  }
  if (nc >= 8) {
    _mm256_storeu_ps(ci, r0);
    ci += 8;
    nc -= 8;
    r0 = r1;
  }
  __m128 h = _mm256_castps256_ps128(r0);
  if (nc & 4) {
    _mm_storeu_ps(ci, h);
    ci += 4;
    h = _mm256_extractf128_ps(r0, 1);
  }
  if (nc & 2) {
    _mm_storel_pi((__m64 *)ci, h);
    ci += 2;
    h = _mm_movehl_ps(h, h);
  }
  if (nc & 1) _mm_store_ss(ci, h);
}
#endif
