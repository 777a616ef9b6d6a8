/* The depthwise-convolution variants of f32-dwconv.inc, one per ISA family (probed in
 * runtime/cpu.c; FLEXDELEGATE_ISA=scalar|avx2|avx512 narrows the choice), and the entry the
 * op runs them through. */
#include "dwconv.h"

fx_isa_menu fx_dwconv_menu = {.by_isa = {
#define FX_UKERNEL(isa, name, fn) FX_ISA_ENTRY(isa, &((const fx_dwconv_config){name, FX_ISA_##isa, fn}))
#include "f32-dwconv.inc"
#undef FX_UKERNEL
}};

const fx_dwconv_config *fx_dwconv_config_get(void) { return fx_isa_chosen(&fx_dwconv_menu); }
const fx_dwconv_config *fx_dwconv_config_at(int i) { return fx_isa_at(&fx_dwconv_menu, i); }

void fx_depthwise_f32(FX_DWCONV_ARGS) { fx_dwconv_config_get()->fn(pool, x, xs, filter, bias, mult, w, y, ys, act); }
