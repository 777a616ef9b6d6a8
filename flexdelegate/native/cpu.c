#include <stdlib.h>
#include <string.h>
#include "cpu.h"

/* Bit f set: this CPU runs ISA family f. Probed on first use; a racing first caller computes
 * the same bits. */
static unsigned cpu_isas(void) {
  static unsigned bits;
  if (bits) return bits;
  unsigned b = 1u << FX_ISA_SCALAR;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) b |= 1u << FX_ISA_AVX2;
  if (__builtin_cpu_supports("avx512f")) b |= 1u << FX_ISA_AVX512F;
#endif
#if defined(__aarch64__)
  b |= 1u << FX_ISA_NEON; /* Advanced SIMD is mandatory on AArch64: no probe needed */
#endif
  bits = b;
  return b;
}

int fx_isa_table(const void *const by_isa[FX_ISA_COUNT], const void *avail[FX_ISA_COUNT], const void **chosen) {
  const unsigned bits = cpu_isas();
  int n = 0;
  for (int f = 0; f < FX_ISA_COUNT; f++)
    if (by_isa[f] && (bits >> f & 1u)) avail[n++] = by_isa[f];
  *chosen = avail[n - 1];
  const char *isa = getenv("FLEXDELEGATE_ISA");
  if (isa && *isa)
    for (int i = 0; i < n; i++)
      if (strstr(*(const char *const *)avail[i], isa)) *chosen = avail[i];
  return n;
}
