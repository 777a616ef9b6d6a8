/* The sigmoid / swish variants of f32-vsigmoid.inc, one per ISA family (probed in
 * runtime/cpu.c), and the entry the element-wise ops call. */
#include "vsigmoid.h"

fx_isa_menu fx_vsigmoid_menu = {.by_isa = {
#define FX_UKERNEL(isa, name, fn) FX_ISA_ENTRY(isa, &((const fx_vsigmoid_config){name, FX_ISA_##isa, fn}))
#include "f32-vsigmoid.inc"
#undef FX_UKERNEL
}};

const fx_vsigmoid_config *fx_vsigmoid_config_get(void) { return fx_isa_chosen(&fx_vsigmoid_menu); }
const fx_vsigmoid_config *fx_vsigmoid_config_at(int i) { return fx_isa_at(&fx_vsigmoid_menu, i); }

int fx_vsigmoid(const float *x, float *y, size_t n, int swish) {
  const fx_vsigmoid_config *c = fx_vsigmoid_config_get();
  if (c->isa == FX_ISA_SCALAR) return 0; /* the caller's loop: vectorised by the compiler */
  c->fn(x, y, n, swish);
  return 1;
}
