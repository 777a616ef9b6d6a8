/* NEON dot-product GEMM, 4 rows x 16 channels, k-groups of 4 (dot-neon.h): 16 bytes of each
 * row per step, then single k-groups, then a partial one. Rows past mr read row 0 of A and are
 * not stored. */
#if defined(__aarch64__)
#include "dot-neon.h"

#define ROWS(X) X(0) X(1) X(2) X(3)
#define ROWS2(X, L) X(0, L) X(1, L) X(2, L) X(3, L)

FX_DOT_TARGET
void fx_qs8_gemm_4x16c4__neondot(FX_QS8_GEMM_ARGS) {
  const int8_t *a0 = a;
  const int8_t *a1 = mr > 1 ? a0 + a_stride : a0;
  const int8_t *a2 = mr > 2 ? a1 + a_stride : a0;
  const int8_t *a3 = mr > 3 ? a2 + a_stride : a0;
  const int8_t *wk = (const int8_t *)w + 64;
  ROWS(FX_ML_ACC)
  FX_DOT_KLOOP(ROWS, ROWS2)
  FX_NEON16_OUTPUT(ROWS)
}
#endif
