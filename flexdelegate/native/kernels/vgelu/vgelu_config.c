/* Picks the GELU variant for this CPU, once (cpu.h's menu over vgelu.inc). */
#include "runtime/cpu.h"
#include "vgelu.h"

#define FX_VGELU_VARIANT(isa, name, fn) static const fx_vgelu_config k_##fn = {name, fn};
#include "vgelu.inc"
#undef FX_VGELU_VARIANT

#define FX_VGELU_VARIANT(isa, name, fn) [isa] = &k_##fn,
static fx_isa_menu g_menu = {.by_isa = {
#include "vgelu.inc"
}};
#undef FX_VGELU_VARIANT

const fx_vgelu_config *fx_vgelu_config_get(void) { return fx_isa_chosen(&g_menu); }
const fx_vgelu_config *fx_vgelu_config_at(int i) { return fx_isa_at(&g_menu, i); }

void fx_vgelu_f32(const float *x, float *y, size_t n, int approximate) {
  fx_vgelu_config_get()->fn(x, y, n, approximate);
}
