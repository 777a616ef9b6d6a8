/* The GELU variants of f32-vgelu.inc, one per ISA family (probed in runtime/cpu.c). */
#include "vgelu.h"

fx_isa_menu fx_vgelu_menu = {.by_isa = {
#define FX_UKERNEL(isa, name, fn) FX_ISA_ENTRY(isa, &((const fx_vgelu_config){name, FX_ISA_##isa, fn}))
#include "f32-vgelu.inc"
#undef FX_UKERNEL
}};

const fx_vgelu_config *fx_vgelu_config_get(void) { return fx_isa_chosen(&fx_vgelu_menu); }
const fx_vgelu_config *fx_vgelu_config_at(int i) { return fx_isa_at(&fx_vgelu_menu, i); }

void fx_vgelu_f32(const float *x, float *y, size_t n, int approximate) {
  fx_vgelu_config_get()->fn(x, y, n, approximate);
}
