/* The one place that probes the CPU. Each kernel family (GEMM, depthwise, sigmoid) lists its
 * variants by ISA family; fx_isa_table keeps those this CPU runs and picks one. */
#ifndef FLEX_CPU_H
#define FLEX_CPU_H

/* ISA families, slowest first: the order tables list their variants in. */
enum { FX_ISA_SCALAR, FX_ISA_AVX2, FX_ISA_AVX512F, FX_ISA_NEON, FX_ISA_COUNT };

/* by_isa[f]: the family's variant for ISA f, or NULL (none). Every variant is a struct whose
 * first member is its name (const char *). Fills avail (slowest first, the scalar reference at
 * index 0) with the variants this CPU can run and returns how many; *chosen is the fastest, or
 * the last whose name contains $FLEXDELEGATE_ISA (e.g. scalar, avx2, avx512, neon). */
int fx_isa_table(const void *const by_isa[FX_ISA_COUNT], const void *avail[FX_ISA_COUNT], const void **chosen);
#endif
