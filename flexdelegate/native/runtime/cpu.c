#include <stdlib.h>
#include <string.h>
#include "cpu.h"

#if defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#define FX_X86_HAS(feature) __builtin_cpu_supports(feature)
/* Linux keeps AMX tile data off until a process asks for it (5.16+: arch_prctl
 * ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, 18); once granted it holds for every thread. */
#define FX_X86_AMX_GRANTED (syscall(SYS_arch_prctl, 0x1023, 18) == 0)
#else
#define FX_X86_HAS(feature) 0
#define FX_X86_AMX_GRANTED 0
#endif
#if defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20) /* the kernel's bit for SDOT/UDOT (asm/hwcap.h) */
#endif
#define FX_AARCH64 1
#define FX_AARCH64_HWCAP(bit) ((getauxval(AT_HWCAP) & (bit)) != 0)
#else
#define FX_AARCH64 0
#define FX_AARCH64_HWCAP(bit) 0
#endif

/* Bit f set: this CPU runs ISA family f. Probed on first use; a racing first caller computes
 * the same bits. */
static unsigned cpu_isas(void) {
  static unsigned bits;
  if (bits) return bits;
#if defined(__x86_64__)
  __builtin_cpu_init();
#endif
  unsigned b = 0;
#define FX_ISA_PROBE(name, probe) if (probe) b |= 1u << FX_ISA_##name;
  FX_ISA_FAMILIES(FX_ISA_PROBE)
#undef FX_ISA_PROBE
  bits = b;
  return b;
}

int fx_isa_runs(int isa) { return isa >= 0 && isa < FX_ISA_COUNT && (cpu_isas() >> isa & 1u); }

static void fill(fx_isa_menu *m) {
  int n = 0;
  for (int f = 0; f < FX_ISA_COUNT; f++)
    if (m->by_isa[f] && fx_isa_runs(f)) m->avail[n++] = m->by_isa[f];
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

const void *fx_isa_variant(const fx_isa_menu *m, int isa) {
  return fx_isa_runs(isa) ? m->by_isa[isa] : NULL;
}
