/* flex_gemm_run (flex_testing.h): one chosen GEMM microkernel over a whole GEMM, tiled the
 * way the conv driver tiles it. */
#include <stdlib.h>
#include "kernels/gemm/gemm.h"
#include "testing/flex_testing.h"
#include "testing/tester.h"

typedef struct {
  const fx_gemm_config *uk;
  int m, n, k;
  const float *a, *packed, *res;
  float *c;
  fx_gemm_out out;
} gemm_case;

static void run_gemm(void *arg) {
  const gemm_case *g = arg;
  const fx_gemm_config *uk = g->uk;
  const size_t panel = (size_t)uk->nr * (size_t)(g->k + 1);
  for (int n0 = 0; n0 < g->n; n0 += uk->nr) {
    const size_t nc = (size_t)(g->n - n0 < uk->nr ? g->n - n0 : uk->nr);
    for (int m0 = 0; m0 < g->m; m0 += uk->mr) {
      const size_t mr = (size_t)(g->m - m0 < uk->mr ? g->m - m0 : uk->mr), at = (size_t)m0 * (size_t)g->n + (size_t)n0;
      uk->fn(mr, nc, (size_t)g->k, g->a + (size_t)m0 * (size_t)g->k, (size_t)g->k,
             g->packed + (size_t)(n0 / uk->nr) * panel, g->c + at, (size_t)g->n, g->res ? g->res + at : NULL, &g->out);
    }
  }
}

int flex_gemm_run(int variant, int m, int n, int k, const float *a, const float *w, const float *bias,
                  float *c, float lo, float hi, const float *res, float rlo, float rhi, int iters,
                  double *seconds) {
  const fx_gemm_config *uk = fx_gemm_config_at(variant);
  if (!uk || m < 0 || n < 1 || k < 0 || !a || !w || !c) return -1;
  float *packed = malloc(fx_gemm_packed_floats(n, k, uk->nr) * sizeof(float));
  if (!packed) return -1;
  fx_gemm_pack(n, k, uk->nr, w, bias, packed);
  gemm_case g = {uk, m, n, k, a, packed, res, c, {lo, hi, rlo, rhi}};
  fx_tester_time(iters, seconds, run_gemm, &g);
  free(packed);
  return 0;
}
