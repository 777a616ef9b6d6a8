/* AVX2 GEMM, 3 rows x 8 channels, k-groups of 8 (c8-avx2.h). Rows past mr read row 0 of A
 * and are not stored. */
#if defined(__x86_64__)
#include "c8-avx2.h"

#define ROWS(X) X(0) X(1) X(2)
#define ROWS2(X, q) X(0, q) X(1, q) X(2, q)

__attribute__((target("avx2,fma")))
void fx_qs8_gemm_3x8c8__avx2(FX_QS8_GEMM_ARGS) {
  const int8_t *a0 = a;
  const int8_t *a1 = mr > 1 ? a0 + a_stride : a0;
  const int8_t *a2 = mr > 2 ? a1 + a_stride : a0;
  const __m256i vbias = _mm256_loadu_si256((const __m256i *)w);
  const int8_t *wk = (const int8_t *)w + 32;
  ROWS(FX_C8_ACC)
  FX_C8_KLOOP(ROWS, ROWS2)
  FX_C8_OUTPUT_3ROWS(ROWS)
}
#endif
