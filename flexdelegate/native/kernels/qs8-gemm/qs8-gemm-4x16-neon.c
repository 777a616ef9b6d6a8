/* NEON GEMM, 4 rows x 16 channels, KR = 1 (mlal-neon.h). Rows past mr read row 0 of A and are
 * not stored. */
#if defined(__aarch64__)
#include "mlal-neon.h"

#define ROWS(X) X(0) X(1) X(2) X(3)
#define ROWS2(X, L) X(0, L) X(1, L) X(2, L) X(3, L)

void fx_qs8_gemm_4x16__neon(FX_QS8_GEMM_ARGS) {
  const int8_t *a0 = a;
  const int8_t *a1 = mr > 1 ? a0 + a_stride : a0;
  const int8_t *a2 = mr > 2 ? a1 + a_stride : a0;
  const int8_t *a3 = mr > 3 ? a2 + a_stride : a0;
  const int8_t *wk = (const int8_t *)w + 64;
  ROWS(FX_ML_ACC)
  FX_ML_KLOOP(ROWS, ROWS2)
  FX_NEON16_OUTPUT(ROWS)
}
#endif
