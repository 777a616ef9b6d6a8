/* Picks the IGEMM microkernel that pairs with a GEMM microkernel (probed in runtime/cpu.c): the same
 * ISA family, hence the same NR, so direct conv reads the GEMM's packed panels as they are. */
#include "runtime/cpu.h"
#include "igemm.h"

static const fx_igemm_config k_scalar = {"f32-igemm-4x8-scalar", 4, 8, fx_f32_igemm_4x8_scalar};
#if defined(__x86_64__)
static const fx_igemm_config k_avx2 = {"f32-igemm-6x16-avx2", 6, 16, fx_f32_igemm_6x16_avx2};
static const fx_igemm_config k_avx512 = {"f32-igemm-8x32-avx512f", 8, 32, fx_f32_igemm_8x32_avx512f};
#endif
#if defined(__aarch64__)
static const fx_igemm_config k_neon = {"f32-igemm-8x8-neon", 8, 8, fx_f32_igemm_8x8_neon};
#endif

/* Listed by the same ISA families as gemm_config.c, so index i here pairs with
 * fx_gemm_config_at(i). Its own choice is unused: the GEMM kernel of the packed weights decides. */
static fx_isa_menu g_menu = {.by_isa = {[FX_ISA_SCALAR] = &k_scalar,
#if defined(__x86_64__)
                                       [FX_ISA_AVX2] = &k_avx2, [FX_ISA_AVX512F] = &k_avx512,
#endif
#if defined(__aarch64__)
                                       [FX_ISA_NEON] = &k_neon,
#endif
}};

const fx_igemm_config *fx_igemm_config_for(const fx_gemm_config *g) {
  const fx_igemm_config *k;
  for (int i = 0; (k = fx_isa_at(&g_menu, i)); i++)
    if (fx_gemm_config_at(i) == g) return k->nr == g->nr ? k : NULL;
  return NULL;
}
