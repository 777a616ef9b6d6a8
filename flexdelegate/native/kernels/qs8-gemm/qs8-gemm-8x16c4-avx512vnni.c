/* AVX-512 VNNI GEMM, 8 rows x 16 channels, k-groups of 4 (c4-avx512vnni.h): per k-group one
 * weight load and 8 broadcasts feed 8 vpdpbusd. Rows past mr read row 0 of A and are not
 * stored. */
#if defined(__x86_64__)
#include "c4-avx512vnni.h"

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

FX_C4V_TARGET
void fx_qs8_gemm_8x16c4__avx512vnni(FX_QS8_GEMM_ARGS) {
  const int8_t *a0 = a;
  const int8_t *a1 = mr > 1 ? a0 + a_stride : a0;
  const int8_t *a2 = mr > 2 ? a1 + a_stride : a0;
  const int8_t *a3 = mr > 3 ? a2 + a_stride : a0;
  const int8_t *a4 = mr > 4 ? a3 + a_stride : a0;
  const int8_t *a5 = mr > 5 ? a4 + a_stride : a0;
  const int8_t *a6 = mr > 6 ? a5 + a_stride : a0;
  const int8_t *a7 = mr > 7 ? a6 + a_stride : a0;
  const __m512i vbias = _mm512_loadu_si512(w);
  const int8_t *wk = (const int8_t *)w + 64;
  ROWS(FX_C4V_ACC)
  FX_C4V_KLOOP(ROWS)
  FX_C4V_OUTPUT(ROWS)
}
#endif
