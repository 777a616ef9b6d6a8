/* The integer element-wise microkernel variants by ISA family (from qs8-ops.inc) and the one
 * this CPU runs. */
#include "runtime/cpu.h"
#include "qs8-ops.h"

#define FX_QS8_OPS(isa, name, lut, binary, quant, sums)                                   \
  static const fx_qs8_ops_config k_##name = {"qs8-ops-" #name, fx_qs8_lut__##lut,           \
                                             fx_qs8_add__##binary, fx_qs8_mul__##binary,    \
                                             fx_qs8_sum_rows__##sums, fx_qs8_quantize__##quant};
#include "qs8-ops.inc"
#undef FX_QS8_OPS

fx_isa_menu fx_qs8_ops_menu = {.by_isa = {
#define FX_QS8_OPS(isa, name, lut, binary, quant, sums) [FX_ISA_##isa] = &k_##name,
#include "qs8-ops.inc"
#undef FX_QS8_OPS
}};

const fx_qs8_ops_config *fx_qs8_ops_config_get(void) { return fx_isa_chosen(&fx_qs8_ops_menu); }
const fx_qs8_ops_config *fx_qs8_ops_config_at(int i) { return fx_isa_at(&fx_qs8_ops_menu, i); }
