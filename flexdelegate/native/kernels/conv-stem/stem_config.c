/* The stem-conv microkernels of f32-conv-stem.inc, one per ISA family (probed in runtime/cpu.c).
 * The GEMM kernel of the packed weights decides which one runs: the one of its ISA family, hence
 * of its NR, so the stem reads the GEMM's packed panels as they are. */
#include "stem.h"

fx_isa_menu fx_stem_menu = {.by_isa = {
#define FX_UKERNEL(isa, name, fn, mr, nr) FX_ISA_ENTRY(isa, &((const fx_stem_config){name, FX_ISA_##isa, mr, nr, fn}))
#include "f32-conv-stem.inc"
#undef FX_UKERNEL
}};

const fx_stem_config *fx_stem_config_for(const fx_gemm_config *g) {
  const fx_stem_config *k = fx_isa_variant(&fx_stem_menu, g->isa);
  return k && k->nr == g->nr ? k : NULL;
}
