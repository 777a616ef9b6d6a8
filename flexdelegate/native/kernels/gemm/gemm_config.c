/* Picks the GEMM microkernel for this CPU (probed in runtime/cpu.c). */
#include "runtime/cpu.h"
#include "gemm.h"

static const fx_gemm_config k_scalar = {"f32-gemm-4x8-scalar", 4, 8, fx_f32_gemm_4x8_scalar};
#if defined(__x86_64__)
static const fx_gemm_config k_avx2 = {"f32-gemm-6x16-avx2", 6, 16, fx_f32_gemm_6x16_avx2};
static const fx_gemm_config k_avx512 = {"f32-gemm-8x32-avx512f", 8, 32, fx_f32_gemm_8x32_avx512f};
#endif
#if defined(__aarch64__)
static const fx_gemm_config k_neon = {"f32-gemm-8x8-neon", 8, 8, fx_f32_gemm_8x8_neon};
#endif

static fx_isa_menu g_menu = {.by_isa = {[FX_ISA_SCALAR] = &k_scalar,
#if defined(__x86_64__)
                                       [FX_ISA_AVX2] = &k_avx2, [FX_ISA_AVX512F] = &k_avx512,
#endif
#if defined(__aarch64__)
                                       [FX_ISA_NEON] = &k_neon,
#endif
}};

const fx_gemm_config *fx_gemm_config_get(void) { return fx_isa_chosen(&g_menu); }
const fx_gemm_config *fx_gemm_config_at(int i) { return fx_isa_at(&g_menu, i); }

size_t fx_gemm_packed_floats(int n, int k, int nr) {
  size_t panels = (size_t)(n + nr - 1) / (size_t)nr;
  return panels * (size_t)nr * (size_t)(k + 1);
}

/* Panel p holds columns [p*nr, p*nr+nr): its bias, then for each kk the nr weights
 * w[n0+j][kk]. A transposition: done 16 kk at a time so each source row is read one cache
 * line at a time and the 16 x nr destination tile stays in L1. */
#define FX_PACK_BLOCK 16

void fx_gemm_pack(int n, int k, int nr, const float *w, const float *bias, float *dst) {
  for (int n0 = 0; n0 < n; n0 += nr) {
    const int cols = n - n0 < nr ? n - n0 : nr;
    for (int j = 0; j < nr; j++) dst[j] = (bias && j < cols) ? bias[n0 + j] : 0.0f;
    float *panel = dst + nr;
    for (int k0 = 0; k0 < k; k0 += FX_PACK_BLOCK) {
      const int kb = k - k0 < FX_PACK_BLOCK ? k - k0 : FX_PACK_BLOCK;
      float *tile = panel + (size_t)k0 * (size_t)nr;
      for (int j = 0; j < cols; j++) {
        const float *src = w + (size_t)(n0 + j) * (size_t)k + (size_t)k0;
        for (int t = 0; t < kb; t++) tile[(size_t)t * (size_t)nr + (size_t)j] = src[t];
      }
      for (int j = cols; j < nr; j++) /* zero columns past n */
        for (int t = 0; t < kb; t++) tile[(size_t)t * (size_t)nr + (size_t)j] = 0.0f;
    }
    dst += (size_t)nr * (size_t)(k + 1);
  }
}
