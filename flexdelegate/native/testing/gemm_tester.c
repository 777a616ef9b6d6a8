/* Test entry points: drive one chosen microkernel over a whole GEMM, the way conv.c does. */
#include <stdlib.h>
#include "flex_api.h"
#include "kernels/gemm/gemm.h"

const char *flex_gemm_kernel_at(int i) {
  const fx_gemm_config *k = fx_gemm_config_at(i);
  return k ? k->name : NULL;
}

int flex_gemm_run(int i, int m, int n, int k, const float *a, const float *w, const float *bias,
                  float *c, float lo, float hi, const float *res, float rlo, float rhi) {
  const fx_gemm_config *uk = fx_gemm_config_at(i);
  if (!uk || m < 0 || n < 1 || k < 0 || !a || !w || !c) return -1;
  float *packed = malloc(fx_gemm_packed_floats(n, k, uk->nr) * sizeof(float));
  if (!packed) return -1;
  fx_gemm_pack(n, k, uk->nr, w, bias, packed);
  const size_t panel = (size_t)uk->nr * (size_t)(k + 1);
  for (int n0 = 0; n0 < n; n0 += uk->nr) {
    size_t nc = (size_t)(n - n0 < uk->nr ? n - n0 : uk->nr);
    for (int m0 = 0; m0 < m; m0 += uk->mr) {
      size_t mr = (size_t)(m - m0 < uk->mr ? m - m0 : uk->mr);
      float *ct = c + (size_t)m0 * (size_t)n + (size_t)n0;
      const float *rt = res ? res + (size_t)m0 * (size_t)n + (size_t)n0 : NULL;
      const fx_gemm_out o = {lo, hi, rlo, rhi};
      uk->fn(mr, nc, (size_t)k, a + (size_t)m0 * (size_t)k, (size_t)k, packed + (size_t)(n0 / uk->nr) * panel, ct,
             (size_t)n, rt, &o);
    }
  }
  free(packed);
  return 0;
}
