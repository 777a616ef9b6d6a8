/* The Winograd transform sets of f32-winograd.inc, one per ISA family; the GEMM kernel a
 * convolution runs on picks its set. */
#include "kernels/gemm/gemm.h"
#include "transforms.h"

fx_isa_menu fx_wg_menu = {.by_isa = {
#define FX_UKERNEL(isa, name, sfx)                                                            \
  FX_ISA_ENTRY(isa, &((const fx_wg_transforms){name, FX_ISA_##isa, fx_wg_input_##sfx, fx_wg_output_##sfx, \
                                                fx_wg_filter_row_##sfx}))
#include "f32-winograd.inc"
#undef FX_UKERNEL
}};

const fx_wg_transforms *fx_wg_transforms_for(const fx_gemm_config *uk) {
  const fx_wg_transforms *t = fx_isa_variant(&fx_wg_menu, uk->isa);
  return t ? t : fx_wg_menu.by_isa[FX_ISA_SCALAR];
}
