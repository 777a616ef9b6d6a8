/* NEON dot-product IGEMM, the direct-conv twin of qs8-gemm-4x16c4-neondot (same panels). */
#if defined(__aarch64__)
#include "../qs8-gemm/dot-neon.h"

#define ROWS(X) X(0) X(1) X(2) X(3)
#define ROWS2(X, L) X(0, L) X(1, L) X(2, L) X(3, L)
#define LOAD_A16(i) const int8x16_t va##i = vld1q_s8(a##i + k);
#define LOAD_A4(i) const int8x16_t va##i = fx_dot_load4(a##i + k, kc - k < 4 ? kc - k : 4);

FX_DOT_TARGET
void fx_qs8_igemm_4x16c4__neondot(FX_QS8_IGEMM_ARGS) {
  const int32_t *bias = (const int32_t *)w;
  const int8_t *wk = (const int8_t *)w + 64;
  ROWS(FX_ML_ACC)
  for (size_t t = 0; t < ks; t++, a += 4) {
    const int8_t *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    size_t k = 0;
    for (; k + 16 <= kc; k += 16, wk += 256) {
      ROWS(LOAD_A16)
      FX_DOT_BLOCK16(ROWS2)
    }
    for (; k < kc; k += 4, wk += 64) {
      ROWS(LOAD_A4)
      FX_DOT_STEP(ROWS2, 0)
    }
  }
  const fx_rq16_neon rq = fx_rq16_init_neon(bias, (const int32_t *)wk, o);
  ROWS(FX_NEON16_STORE)
}
#endif
