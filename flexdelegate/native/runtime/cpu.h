/* The one place that knows ISA families and probes the CPU for them.
 *
 * A kernel family lists its variants in an enumerator, kernels/<family>/<dtype>-<op>.inc (after
 * XNNPACK's microkernel enumerators): one FX_UKERNEL(ISA, "dtype-op-tile-isa", ...) line per
 * variant, under the #if of the architecture it compiles for. Its config file expands that list
 * into an fx_isa_menu, and its header into prototypes. A new variant is one line there (and its
 * source file); a new ISA family is one line below. */
#ifndef FLEX_CPU_H
#define FLEX_CPU_H

/* ISA families, slowest first within an architecture (the order variants are listed and chosen
 * in; the integer-only families come last so the float menus keep their indices): X(NAME, probe),
 * the probe an expression that is true when this CPU runs the family, built from
 * FX_X86_HAS("feature") (GCC's __builtin_cpu_supports names), FX_X86_AMX_GRANTED (the OS lets
 * this process use AMX tiles) and FX_AARCH64_HWCAP(HWCAP_x)
 * (getauxval(AT_HWCAP) bits), both 0 on other architectures. */
#define FX_ISA_FAMILIES(X)                                                        \
  X(SCALAR, 1)                                                                    \
  X(AVX2, FX_X86_HAS("avx2") && FX_X86_HAS("fma"))                                \
  X(AVX512F, FX_X86_HAS("avx512f"))                                               \
  X(NEON, FX_AARCH64) /* Advanced SIMD is mandatory on AArch64 */                 \
  X(AVX512BW, FX_X86_HAS("avx512f") && FX_X86_HAS("avx512bw"))                    \
  X(AVX512VNNI, FX_X86_HAS("avx512f") && FX_X86_HAS("avx512bw") && FX_X86_HAS("avx512vl") &&   \
                FX_X86_HAS("avx512vnni")) /* its kernels use ymm and masked xmm forms too (VL) */ \
  X(NEONDOT, FX_AARCH64_HWCAP(HWCAP_ASIMDDP)) /* Armv8.2 SDOT/UDOT */                         \
  X(AVX512VBMI, FX_X86_HAS("avx512f") && FX_X86_HAS("avx512bw") && FX_X86_HAS("avx512vbmi")) /* byte permutes */ \
  X(AMX, FX_X86_HAS("amx-tile") && FX_X86_HAS("amx-int8") && FX_X86_HAS("avx512f") &&         \
             FX_X86_HAS("avx512bw") && FX_X86_HAS("avx512vl") && FX_X86_HAS("avx512vnni") &&     \
             FX_X86_AMX_GRANTED) /* tile int8 dot products; its kernels' output stages are VNNI's */

enum {
#define FX_ISA_ENUM(name, probe) FX_ISA_##name,
  FX_ISA_FAMILIES(FX_ISA_ENUM)
#undef FX_ISA_ENUM
  FX_ISA_COUNT
};

/* One kernel family's variants by ISA family, and which of them this CPU runs. A family defines
 * one static menu with by_isa filled from its enumerator (by_isa[f]: its variant for ISA f, or
 * NULL; every variant is a struct whose first member is its name, const char *); the rest is
 * filled on first use (a racing first caller computes the same, and sets `chosen` last). */
typedef struct {
  const void *by_isa[FX_ISA_COUNT];
  const void *avail[FX_ISA_COUNT]; /* the variants this CPU runs, slowest first (0: scalar) */
  int count;
  const void *volatile chosen;     /* the fastest, or the last whose name contains
                                    * $FLEXDELEGATE_ISA (e.g. scalar, avx2, avx512, neon) */
} fx_isa_menu;

/* A menu's initializer from an enumerator's lines: each FX_UKERNEL expands (through the
 * family's own macro) to FX_ISA_ENTRY(isa, &variant). */
#define FX_ISA_ENTRY(isa, variant) [FX_ISA_##isa] = (variant),

/* Nonzero when this CPU runs ISA family `isa`. */
int fx_isa_runs(int isa);
/* The variant this CPU runs. */
const void *fx_isa_chosen(fx_isa_menu *m);
/* The i-th variant this CPU can run (0 = the scalar reference), NULL past the end. */
const void *fx_isa_at(fx_isa_menu *m, int i);
/* The variant for ISA family `isa`, NULL when the family has none or this CPU cannot run it. */
const void *fx_isa_variant(const fx_isa_menu *m, int isa);
#endif
