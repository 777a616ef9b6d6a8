/* Portable reference GEMM: readable, and what every SIMD variant is tested against. KR = 1:
 * panel k-row k holds the 4 channels' weights of k. Accumulates in uint32 (wrapping, as
 * TFLite's int32 accumulators do, without C's signed-overflow UB). */
#include <string.h>
#include "qs8-gemm.h"

#define MR 4
#define NR 4

void fx_qs8_gemm_4x4__scalar(FX_QS8_GEMM_ARGS) {
  uint32_t acc[MR][NR];
  int32_t bias[NR], m[NR], sh[NR];
  memcpy(bias, w, sizeof bias);
  const int8_t *wk = (const int8_t *)w + sizeof bias;
  for (size_t i = 0; i < mr; i++)
    for (int j = 0; j < NR; j++) acc[i][j] = (uint32_t)bias[j] + (row_corr ? (uint32_t)row_corr[i] : 0u);
  for (size_t k = 0; k < kc; k++, wk += NR)
    for (size_t i = 0; i < mr; i++) {
      const int32_t av = a[i * a_stride + k];
      for (int j = 0; j < NR; j++) acc[i][j] += (uint32_t)(av * wk[j]);
    }
  memcpy(m, wk, sizeof m);
  memcpy(sh, wk + sizeof m, sizeof sh);
  for (size_t i = 0; i < mr; i++)
    for (size_t j = 0; j < nc; j++) c[i * c_stride + j] = fx_qs8_out_one((int32_t)acc[i][j], m[j], sh[j], o->rounding, o);
}
