/* AVX-512BW GEMM, 4 rows x 16 channels, k-groups of 8 (c8-avx512bw.h). Rows past mr read row 0
 * of A and are not stored. */
#if defined(__x86_64__)
#include "c8-avx512bw.h"

#define ROWS(X) X(0) X(1) X(2) X(3)
#define ROWS2(X, q) X(0, q) X(1, q) X(2, q) X(3, q)
#define LOAD_A(i) const __m512i va##i = fx_c8z_load_a(a##i + k);
#define LOAD_A_PART(i) const __m512i va##i = fx_c8z_load_a_part(a##i + k, kc - k);

FX_C8Z_TARGET
void fx_qs8_gemm_4x16c8__avx512bw(FX_QS8_GEMM_ARGS) {
  const int8_t *a0 = a;
  const int8_t *a1 = mr > 1 ? a0 + a_stride : a0;
  const int8_t *a2 = mr > 2 ? a1 + a_stride : a0;
  const int8_t *a3 = mr > 3 ? a2 + a_stride : a0;
  const __m256i vb0 = _mm256_loadu_si256((const __m256i *)w);
  const __m256i vb1 = _mm256_loadu_si256((const __m256i *)w + 1);
  const int8_t *wk = (const int8_t *)w + 64;
  ROWS(FX_C8Z_ACC)
  size_t k = 0;
  for (; k + 8 <= kc; k += 8, wk += 128) {
    ROWS(LOAD_A)
    FX_C8Z_GROUP(ROWS2, wk);
  }
  if (k < kc) {
    ROWS(LOAD_A_PART)
    FX_C8Z_GROUP(ROWS2, wk);
    wk += 128;
  }
  const int32_t *rqp = (const int32_t *)wk;
  const fx_rq8_avx2 rq0 = fx_rq8_init_avx2(rqp, rqp + 16, fx_rq8_away_all_avx2(o), o);
  const fx_rq8_avx2 rq1 = fx_rq8_init_avx2(rqp + 8, rqp + 24, fx_rq8_away_all_avx2(o), o);
  ROWS(FX_C8Z_FINISH)
}
#endif
