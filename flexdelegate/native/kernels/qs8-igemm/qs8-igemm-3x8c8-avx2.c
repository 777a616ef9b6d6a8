/* AVX2 IGEMM, the direct-conv twin of qs8-gemm-3x8c8-avx2 (same panels, c8-avx2.h): per tap,
 * the 3 row pointers, then that tap's k-groups; the weights stream on across taps. */
#if defined(__x86_64__)
#include "../qs8-gemm/c8-avx2.h"

#define ROWS(X) X(0) X(1) X(2)
#define ROWS2(X, q) X(0, q) X(1, q) X(2, q)

__attribute__((target("avx2,fma")))
void fx_qs8_igemm_3x8c8__avx2(FX_QS8_IGEMM_ARGS) {
  const int8_t *wk = (const int8_t *)w + 32;
  ROWS(FX_C8_ACC)
  for (size_t t = 0; t < ks; t++, a += 3) {
    const int8_t *a0 = a[0], *a1 = a[1], *a2 = a[2];
    FX_C8_KLOOP(ROWS, ROWS2)
  }
  FX_C8_OUTPUT_3ROWS(ROWS)
}
#endif
