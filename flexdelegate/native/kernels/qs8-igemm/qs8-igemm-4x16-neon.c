/* NEON IGEMM, the direct-conv twin of qs8-gemm-4x16-neon (same panels). */
#if defined(__aarch64__)
#include "../qs8-gemm/mlal-neon.h"

#define ROWS(X) X(0) X(1) X(2) X(3)
#define ROWS2(X, L) X(0, L) X(1, L) X(2, L) X(3, L)
#define LOAD_A(i) const int16x8_t va##i = vmovl_s8(vld1_s8(a##i + k));

void fx_qs8_igemm_4x16__neon(FX_QS8_IGEMM_ARGS) {
  const int32_t *bias = (const int32_t *)w;
  const int8_t *wk = (const int8_t *)w + 64;
  ROWS(FX_ML_ACC)
  for (size_t t = 0; t < ks; t++, a += 4) {
    const int8_t *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    size_t k = 0;
    for (; k + 8 <= kc; k += 8, wk += 128) {
      ROWS(LOAD_A)
      FX_ML_BLOCK8(ROWS2)
    }
    for (; k < kc; k++, wk += 16) FX_ML_TAIL1(ROWS2)
  }
  const fx_rq16_neon rq = fx_rq16_init_neon(bias, (const int32_t *)wk, o);
  ROWS(FX_NEON16_STORE)
}
#endif
