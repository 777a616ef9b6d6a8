/* AVX-512BW IGEMM, the direct-conv twin of qs8-gemm-4x16c8-avx512bw (same panels). */
#if defined(__x86_64__)
#include "../qs8-gemm/c8-avx512bw.h"

#define ROWS(X) X(0) X(1) X(2) X(3)
#define ROWS2(X, q) X(0, q) X(1, q) X(2, q) X(3, q)

FX_C8Z_TARGET
void fx_qs8_igemm_4x16c8__avx512bw(FX_QS8_IGEMM_ARGS) {
  const __m256i vb0 = _mm256_loadu_si256((const __m256i *)w);
  const __m256i vb1 = _mm256_loadu_si256((const __m256i *)w + 1);
  const int8_t *wk = (const int8_t *)w + 64;
  ROWS(FX_C8Z_ACC)
  for (size_t t = 0; t < ks; t++, a += 4) {
    const int8_t *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    FX_C8Z_KLOOP(ROWS, ROWS2)
  }
  FX_C8Z_OUTPUT(ROWS)
}
#endif
