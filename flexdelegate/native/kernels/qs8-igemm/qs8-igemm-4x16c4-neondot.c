/* NEON dot-product IGEMM, the direct-conv twin of qs8-gemm-4x16c4-neondot (same panels). */
#if defined(__aarch64__)
#include "../qs8-gemm/dot-neon.h"

#define ROWS(X) X(0) X(1) X(2) X(3)
#define ROWS2(X, L) X(0, L) X(1, L) X(2, L) X(3, L)

FX_DOT_TARGET
void fx_qs8_igemm_4x16c4__neondot(FX_QS8_IGEMM_ARGS) {
  const int8_t *wk = (const int8_t *)w + 64;
  ROWS(FX_ML_ACC)
  for (size_t t = 0; t < ks; t++, a += 4) {
    const int8_t *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    FX_DOT_KLOOP(ROWS, ROWS2)
  }
  FX_NEON16_OUTPUT(ROWS)
}
#endif
