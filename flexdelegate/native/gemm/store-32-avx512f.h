/* The AVX-512F output stage shared by the GEMM and IGEMM 8x32 kernels: the store mask of a
 * zmm column holding nc live outputs, and a clamped masked store of one zmm. */
#ifndef FLEX_STORE_32_AVX512F_H
#define FLEX_STORE_32_AVX512F_H
#include <immintrin.h>
#include <stddef.h>

/* Lanes [0, nc) of one 16-float column (all of them from nc >= 16). */
static inline __mmask16 fx_cols_mask16(size_t nc) { return nc >= 16 ? 0xFFFF : (__mmask16)((1u << nc) - 1); }

__attribute__((target("avx512f"), always_inline)) static inline void
fx_store_clamped_avx512f(float *ci, __mmask16 m, __m512 r, __m512 vlo, __m512 vhi) {
  _mm512_mask_storeu_ps(ci, m, _mm512_min_ps(_mm512_max_ps(r, vlo), vhi));
}
#endif
