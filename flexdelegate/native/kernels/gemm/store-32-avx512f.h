/* The AVX-512F output stage shared by the GEMM and IGEMM 8x32 kernels (gemm.h's fx_gemm_out):
 * the store mask of a zmm column holding nc live outputs, and the clamp / residual / store of
 * one zmm. */
#ifndef FLEX_STORE_32_AVX512F_H
#define FLEX_STORE_32_AVX512F_H
#include <immintrin.h>
#include <stddef.h>
#include "gemm.h"

#define FX_AVX512_INLINE __attribute__((target("avx512f"), always_inline)) static inline

/* Lanes [0, nc) of one 16-float column (all of them from nc >= 16). */
static inline __mmask16 fx_cols_mask16(size_t nc) { return nc >= 16 ? 0xFFFF : (__mmask16)((1u << nc) - 1); }

/* The value goes second, so a NaN stays NaN (see fx_clamp8_avx2). */
FX_AVX512_INLINE __m512 fx_clamp16_avx512f(__m512 v, float lo, float hi) {
  return _mm512_min_ps(_mm512_set1_ps(hi), _mm512_max_ps(_mm512_set1_ps(lo), v));
}

/* Output stage of one column of one row: ri = its residual or NULL. */
FX_AVX512_INLINE void fx_store16_avx512f(float *ci, const float *ri, __mmask16 m, __m512 v, const fx_gemm_out *o) {
  v = fx_clamp16_avx512f(v, o->lo, o->hi);
  if (ri) v = fx_clamp16_avx512f(_mm512_add_ps(v, _mm512_maskz_loadu_ps(m, ri)), o->rlo, o->rhi);
  _mm512_mask_storeu_ps(ci, m, v);
}
#endif
