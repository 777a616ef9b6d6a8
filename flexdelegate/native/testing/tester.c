/* The testers' timing loop and variant listing (flex_testing.h). */
#include "testing/tester.h"
#include "kernels/dwconv/dwconv.h"
#include "kernels/gemm/gemm.h"
#include "kernels/igemm/igemm.h"
#include "kernels/conv-stem/stem.h"
#include "kernels/qs8-dwconv/qs8-dwconv.h"
#include "kernels/qs8-ops/qs8-ops.h"
#include "kernels/vsigmoid/vsigmoid.h"
#include "conv/conv.h"
#include "kernels/qs8-gemm/qs8-gemm.h"
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
  static fx_isa_menu *const families[] = {[FLEX_FAMILY_GEMM] = &fx_gemm_menu, [FLEX_FAMILY_IGEMM] = &fx_igemm_menu,
                                          [FLEX_FAMILY_DWCONV] = &fx_dwconv_menu,
                                          [FLEX_FAMILY_VSIGMOID] = &fx_vsigmoid_menu,
                                          [FLEX_FAMILY_STEM] = &fx_stem_menu,
                                          [FLEX_FAMILY_QS8_GEMM] = &fx_qs8_gemm_menu,
                                          [FLEX_FAMILY_QS8_DWCONV] = &fx_qs8_dwconv_menu,
                                          [FLEX_FAMILY_QS8_OPS] = &fx_qs8_ops_menu};
  if (family < 0 || family >= (int)(sizeof families / sizeof *families)) return NULL;
  const void *v = i < 0 ? fx_isa_chosen(families[family]) : fx_isa_at(families[family], i);
  return v ? *(const char *const *)v : NULL; /* every variant's first member is its name */
}

int flex_hybrid_int8(void) { return fx_conv_choose_hybrid(fx_qs8_gemm_config_get()); }
