/* When a conv runs direct (direct.c) rather than as im2col GEMM: the load-time choice,
 * a table of measured wins per ISA. */
#include <stdlib.h>
#include <string.h>
#include "conv.h"
#include "runtime/cpu.h"

/* Layers that run direct by default, per ISA family of the GEMM kernel, from
 * `python bench/direct_conv.py --rounds 9 [--kernel f32-gemm-6x16-avx2]` (1 thread, medians of
 * alternating runs, direct / im2col time) on this project's AVX-512 machine (Zen 5):
 *   AVX-512 (32 columns): 3x3 s1 at cin 64..256: 0.81-0.97 (ResNet-50 56/28/14 maps:
 *     0.87/0.93/0.95, VGG-19 224x224x64: 0.81-0.88); the im2col copy is what direct saves.
 *     7x7 s2 stem (cin 3): 0.92-0.95. No gain at 512 channels (0.97-1.09), on 3x3 cin-3 stems
 *     (0.96-1.06) or 1x1 s2 (0.96-1.07): those stay im2col.
 *   AVX2 (16 columns): 3x3 at cin 64..512: 0.90-1.00 (never slower), 7x7 stem 0.92; 3x3 stems
 *     and 1x1 s2: 0.97-1.00, left to im2col.
 * Scalar and NEON are not measured: never by default. 3x3 s1 layers that take Winograd never
 * get here (their weights are not GEMM panels).
 * FLEXDELEGATE_DIRECT=all runs every supported conv direct, =none none (tests, benches). */
typedef struct { int isa, min_taps, min_cin, max_cin; } direct_rule;
static const direct_rule k_direct_rules[] = {
    {FX_ISA_AVX512F, 9, 64, 256}, {FX_ISA_AVX512F, 49, 1, 64},
    {FX_ISA_AVX2, 9, 64, 512}, {FX_ISA_AVX2, 49, 1, 64},
};

int fx_conv_direct_wins(const fx_conv_pack *p, const fx_conv_geom *g) {
  if (g->direct || !fx_conv_direct_supported(p, g)) return 0;
  const char *force = getenv("FLEXDELEGATE_DIRECT");
  if (force && *force) return strcmp(force, "all") == 0;
  for (size_t i = 0; i < sizeof k_direct_rules / sizeof *k_direct_rules; i++) {
    const direct_rule *r = &k_direct_rules[i];
    if (r->isa == fx_conv_isa(p) && g->kh * g->kw >= r->min_taps && g->cin >= r->min_cin && g->cin <= r->max_cin)
      return 1;
  }
  return 0;
}
