/* The GEMM microkernels of f32-gemm.inc, one per ISA family (probed in runtime/cpu.c), and the
 * weight packing they all read. */
#include "gemm.h"

fx_isa_menu fx_gemm_menu = {.by_isa = {
#define FX_UKERNEL(isa, name, fn, mr, nr) FX_ISA_ENTRY(isa, &((const fx_gemm_config){name, FX_ISA_##isa, mr, nr, fn}))
#include "f32-gemm.inc"
#undef FX_UKERNEL
}};

const fx_gemm_config *fx_gemm_config_get(void) { return fx_isa_chosen(&fx_gemm_menu); }
const fx_gemm_config *fx_gemm_config_at(int i) { return fx_isa_at(&fx_gemm_menu, i); }

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
