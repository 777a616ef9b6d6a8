/* The QS8 depthwise variants by ISA family (from qs8-dwconv.inc) and the one this CPU runs. */
#include "runtime/cpu.h"
#include "qs8-dwconv.h"

#define FX_QS8_DWCONV(isa, CT, suffix)                                                     \
  static const fx_qs8_dwconv_config k_##suffix = {"qs8-dwconv-" #CT "c-" #suffix, CT,     \
                                                  fx_qs8_dwconv_9__##suffix,               \
                                                  fx_qs8_dwconv_25__##suffix,              \
                                                  fx_qs8_dwconv_any__##suffix};
#include "qs8-dwconv.inc"
#undef FX_QS8_DWCONV

fx_isa_menu fx_qs8_dwconv_menu = {.by_isa = {
#define FX_QS8_DWCONV(isa, CT, suffix) [isa] = &k_##suffix,
#include "qs8-dwconv.inc"
#undef FX_QS8_DWCONV
}};

const fx_qs8_dwconv_config *fx_qs8_dwconv_config_get(void) { return fx_isa_chosen(&fx_qs8_dwconv_menu); }
const fx_qs8_dwconv_config *fx_qs8_dwconv_config_at(int i) { return fx_isa_at(&fx_qs8_dwconv_menu, i); }
