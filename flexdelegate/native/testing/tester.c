/* The testers' timing loop and variant listing (flex_testing.h). */
#include "testing/tester.h"
#include "kernels/dwconv/dwconv.h"
#include "kernels/gemm/gemm.h"
#include "kernels/igemm/igemm.h"
#include "kernels/vsigmoid/vsigmoid.h"
#include "runtime/clock.h"
#include "testing/flex_testing.h"

void fx_tester_time(int iters, double *seconds, void (*run)(void *ctx), void *ctx) {
  for (int it = 0; it < (iters > 1 ? iters : 1); it++) {
    const uint64_t t0 = fx_now_ns();
    run(ctx);
    if (seconds) seconds[it] = (double)(fx_now_ns() - t0) * 1e-9;
  }
}

const char *flex_variant(int family, int i) {
  switch (family) {
    case FLEX_FAMILY_GEMM: {
      const fx_gemm_config *c = i < 0 ? fx_gemm_config_get() : fx_gemm_config_at(i);
      return c ? c->name : NULL;
    }
    case FLEX_FAMILY_IGEMM: {
      const fx_gemm_config *g = i < 0 ? fx_gemm_config_get() : fx_gemm_config_at(i);
      const fx_igemm_config *c = g ? fx_igemm_config_for(g) : NULL;
      return c ? c->name : NULL;
    }
    case FLEX_FAMILY_DWCONV: {
      const fx_dwconv_config *c = i < 0 ? fx_dwconv_config_get() : fx_dwconv_config_at(i);
      return c ? c->name : NULL;
    }
    case FLEX_FAMILY_VSIGMOID: {
      const fx_vsigmoid_config *c = i < 0 ? fx_vsigmoid_config_get() : fx_vsigmoid_config_at(i);
      return c ? c->name : NULL;
    }
    default:
      return NULL;
  }
}
