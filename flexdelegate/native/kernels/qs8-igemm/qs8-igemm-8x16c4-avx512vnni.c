/* AVX-512 VNNI IGEMM, the direct-conv twin of qs8-gemm-8x16c4-avx512vnni (same panels; the
 * zero row's input zero-point bytes get the same +128 as every other activation). */
#if defined(__x86_64__)
#include "../qs8-gemm/c4-avx512vnni.h"

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

FX_C4V_TARGET
void fx_qs8_igemm_8x16c4__avx512vnni(FX_QS8_IGEMM_ARGS) {
  const __m512i vbias = _mm512_loadu_si512(w);
  const int8_t *wk = (const int8_t *)w + 64;
  ROWS(FX_C4V_ACC)
  for (size_t t = 0; t < ks; t++, a += 8) {
    const int8_t *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    const int8_t *a4 = a[4], *a5 = a[5], *a6 = a[6], *a7 = a[7];
    FX_C4V_KLOOP(ROWS)
  }
  const fx_c4v_out os = fx_c4v_out_of((const int32_t *)wk, o);
  ROWS(FX_C4V_FINISH)
}
#endif
