/* The AVX2 16-column output stage shared by the GEMM and IGEMM 6x16 kernels (gemm.h's
 * fx_gemm_out): clamp / residual / store of a row of two ymm accumulators, its first nc (<= 16)
 * columns. Partial rows go through a 16-float buffer, so no access strays past column nc. */
#ifndef FLEX_STORE_16_AVX2_H
#define FLEX_STORE_16_AVX2_H
#include <immintrin.h>
#include <stddef.h>
#include <string.h>
#include "gemm.h"

#define FX_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline

/* The value goes second: x86 min/max return their second operand when one is NaN, and a NaN
 * must come out as NaN (as from TFLite's std::min/std::max), not as a bound. */
FX_AVX2_INLINE __m256 fx_clamp8_avx2(__m256 v, float lo, float hi) {
  return _mm256_min_ps(_mm256_set1_ps(hi), _mm256_max_ps(_mm256_set1_ps(lo), v));
}

/* Output stage of one row: ri = its residual or NULL. */
FX_AVX2_INLINE void fx_store_row_16_avx2(float *ci, const float *ri, size_t nc, __m256 r0, __m256 r1,
                                         const fx_gemm_out *o) {
  r0 = fx_clamp8_avx2(r0, o->lo, o->hi);
  r1 = fx_clamp8_avx2(r1, o->lo, o->hi);
  if (ri) {
    float part[16];
    const float *res = ri;
    if (nc < 16) { /* zero-filled past nc, only on partial rows */
      for (size_t j = 0; j < 16; j++) part[j] = j < nc ? ri[j] : 0.0f;
      res = part;
    }
    r0 = fx_clamp8_avx2(_mm256_add_ps(r0, _mm256_loadu_ps(res)), o->rlo, o->rhi);
    r1 = fx_clamp8_avx2(_mm256_add_ps(r1, _mm256_loadu_ps(res + 8)), o->rlo, o->rhi);
  }
  if (nc == 16) {
    _mm256_storeu_ps(ci, r0);
    _mm256_storeu_ps(ci + 8, r1);
    return;
  }
  float buf[16];
  _mm256_storeu_ps(buf, r0);
  _mm256_storeu_ps(buf + 8, r1);
  memcpy(ci, buf, nc * sizeof(float));
}
#endif
