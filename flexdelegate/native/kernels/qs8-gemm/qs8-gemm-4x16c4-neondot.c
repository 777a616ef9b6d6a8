/* NEON dot-product GEMM, 4 rows x 16 channels, k-groups of 4 (dot-neon.h): 16 bytes of each
 * row per step, then single k-groups, then a partial one. Rows past mr read row 0 of A and are
 * not stored. */
#if defined(__aarch64__)
#include "dot-neon.h"

#define ROWS(X) X(0) X(1) X(2) X(3)
#define ROWS2(X, L) X(0, L) X(1, L) X(2, L) X(3, L)
#define LOAD_A16(i) const int8x16_t va##i = vld1q_s8(a##i + k);
#define LOAD_A4(i) const int8x16_t va##i = fx_dot_load4(a##i + k, kc - k < 4 ? kc - k : 4);

FX_DOT_TARGET
void fx_qs8_gemm_4x16c4__neondot(FX_QS8_GEMM_ARGS) {
  const int8_t *a0 = a;
  const int8_t *a1 = mr > 1 ? a0 + a_stride : a0;
  const int8_t *a2 = mr > 2 ? a1 + a_stride : a0;
  const int8_t *a3 = mr > 3 ? a2 + a_stride : a0;
  const int32_t *bias = (const int32_t *)w;
  const int8_t *wk = (const int8_t *)w + 64;
  ROWS(FX_ML_ACC)
  size_t k = 0;
  for (; k + 16 <= kc; k += 16, wk += 256) {
    ROWS(LOAD_A16)
    FX_DOT_BLOCK16(ROWS2)
  }
  for (; k < kc; k += 4, wk += 64) {
    ROWS(LOAD_A4)
    FX_DOT_STEP(ROWS2, 0)
  }
  const fx_rq16_neon rq = fx_rq16_init_neon(bias, (const int32_t *)wk, o);
  ROWS(FX_NEON16_STORE)
}
#endif
