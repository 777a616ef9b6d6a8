/* The QS8 GEMM/IGEMM variants by ISA family (from qs8-gemm.inc) and the one this CPU runs. */
#include "runtime/cpu.h"
#include "qs8-gemm.h"

#define FX_QS8_TILED_1(name) name
#define FX_QS8_TILED_0(name) NULL
#define FX_QS8_GEMM(isa, tile, suffix, MR, NR, KR, AOFF, KGA, TILED, ROWS, TILES, RANGE, RANGE_F32, TILES_F32) \
  static const fx_qs8_gemm_config k_##suffix = {"qs8-gemm-" #tile "-" #suffix,                    \
                                                "qs8-igemm-" #tile "-" #suffix, MR, NR, KR, AOFF,   \
                                                KGA, FX_QS8_TILED_##TILED(fx_qs8_gemm_##tile##__##suffix), \
                                                FX_QS8_TILED_##TILED(fx_qs8_igemm_##tile##__##suffix), \
                                                ROWS, TILES, RANGE, RANGE_F32, TILES_F32};
#include "qs8-gemm.inc"
#undef FX_QS8_GEMM

fx_isa_menu fx_qs8_gemm_menu = {.by_isa = {
#define FX_QS8_GEMM(isa, tile, suffix, MR, NR, KR, AOFF, KGA, TILED, ROWS, TILES, RANGE, RANGE_F32, TILES_F32) [isa] = &k_##suffix,
#include "qs8-gemm.inc"
#undef FX_QS8_GEMM
}};

const fx_qs8_gemm_config *fx_qs8_gemm_config_get(void) { return fx_isa_chosen(&fx_qs8_gemm_menu); }
const fx_qs8_gemm_config *fx_qs8_gemm_config_at(int i) { return fx_isa_at(&fx_qs8_gemm_menu, i); }

fx_qs8_gemm_geom fx_qs8_gemm_geom_of(const fx_qs8_gemm_config *g, int n, int ks, int kc) {
  fx_qs8_gemm_geom geom = {n, ks, kc, g->nr, g->kr, g->a_offset, g->kg_align};
  return geom;
}
