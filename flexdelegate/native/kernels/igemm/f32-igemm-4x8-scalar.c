/* Portable reference IGEMM microkernel: readable, and what every SIMD kernel is tested against. */
#include "igemm.h"

#define MR 4
#define NR 8

void fx_f32_igemm_4x8_scalar(FX_IGEMM_ARGS) {
  float acc[MR][NR];
  for (size_t i = 0; i < mr; i++)
    for (int j = 0; j < NR; j++) acc[i][j] = w[j];
  const float *wk = w + NR;
  for (size_t t = 0; t < ks; t++, a += MR) /* one tap: MR input rows of kc channels */
    for (size_t k = 0; k < kc; k++, wk += NR)
      for (size_t i = 0; i < mr; i++) {
        const float av = a[i][k];
        for (int j = 0; j < NR; j++) acc[i][j] += av * wk[j];
      }
  for (size_t i = 0; i < mr; i++)
    for (size_t j = 0; j < nc; j++) c[i * c_stride + j] = fx_gemm_out_one(acc[i][j], r ? r + i * c_stride + j : 0, out);
}
