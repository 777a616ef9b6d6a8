/* The one place that probes the CPU. Each kernel family (GEMM, depthwise, sigmoid) lists its
 * variants by ISA family; fx_isa_menu keeps those this CPU runs and picks one. */
#ifndef FLEX_CPU_H
#define FLEX_CPU_H

/* ISA families, slowest first: the order tables list their variants in. */
enum { FX_ISA_SCALAR, FX_ISA_AVX2, FX_ISA_AVX512F, FX_ISA_NEON, FX_ISA_COUNT };

/* One kernel family's variants, by ISA family, and which of them this CPU runs. A family
 * defines one static menu with by_isa filled in (by_isa[f]: its variant for ISA f, or NULL;
 * every variant is a struct whose first member is its name, const char *); the rest is filled
 * on first use (a racing first caller computes the same, and sets `chosen` last). */
typedef struct {
  const void *by_isa[FX_ISA_COUNT];
  const void *avail[FX_ISA_COUNT]; /* the variants this CPU runs, slowest first (0: scalar) */
  int count;
  const void *volatile chosen;     /* the fastest, or the last whose name contains
                                    * $FLEXDELEGATE_ISA (e.g. scalar, avx2, avx512, neon) */
} fx_isa_menu;

/* The variant this CPU runs. */
const void *fx_isa_chosen(fx_isa_menu *m);
/* The i-th variant this CPU can run (0 = the scalar reference), NULL past the end. */
const void *fx_isa_at(fx_isa_menu *m, int i);
#endif
