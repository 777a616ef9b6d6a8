/* Picks the depthwise-convolution variant for this CPU, once (same rules as gemm_config.c:
 * the best the CPU supports, FLEXDELEGATE_ISA=scalar|avx2|avx512 narrows the choice). */
#include "runtime/cpu.h"
#include "dwconv.h"

static const fx_dwconv_config k_scalar = {"f32-dwconv-scalar", fx_depthwise_f32_ref};
#if defined(__x86_64__)
static const fx_dwconv_config k_avx2 = {"f32-dwconv-avx2", fx_depthwise_f32_avx2};
static const fx_dwconv_config k_avx512 = {"f32-dwconv-avx512f", fx_depthwise_f32_avx512f};
#endif
#if defined(__aarch64__)
static const fx_dwconv_config k_neon = {"f32-dwconv-neon", fx_depthwise_f32_neon};
#endif

static fx_isa_menu g_menu = {.by_isa = {[FX_ISA_SCALAR] = &k_scalar,
#if defined(__x86_64__)
                                       [FX_ISA_AVX2] = &k_avx2, [FX_ISA_AVX512F] = &k_avx512,
#endif
#if defined(__aarch64__)
                                       [FX_ISA_NEON] = &k_neon,
#endif
}};

const fx_dwconv_config *fx_dwconv_config_get(void) { return fx_isa_chosen(&g_menu); }
const fx_dwconv_config *fx_dwconv_config_at(int i) { return fx_isa_at(&g_menu, i); }
