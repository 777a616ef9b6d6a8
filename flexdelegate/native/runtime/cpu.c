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

static void fill(fx_isa_menu *m) {
  const unsigned bits = cpu_isas();
  int n = 0;
  for (int f = 0; f < FX_ISA_COUNT; f++)
    if (m->by_isa[f] && (bits >> f & 1u)) m->avail[n++] = m->by_isa[f];
  const void *chosen = m->avail[n - 1];
  const char *isa = getenv("FLEXDELEGATE_ISA");
  if (isa && *isa)
    for (int i = 0; i < n; i++)
      if (strstr(*(const char *const *)m->avail[i], isa)) chosen = m->avail[i];
  m->count = n;
  m->chosen = chosen; /* last: whoever sees it set sees the table */
}

const void *fx_isa_chosen(fx_isa_menu *m) {
  if (!m->chosen) fill(m);
  return m->chosen;
}

const void *fx_isa_at(fx_isa_menu *m, int i) {
  if (!m->chosen) fill(m);
  return i >= 0 && i < m->count ? m->avail[i] : NULL;
}
