/* AVX2 depthwise, 16 channels per panel: taps in pairs through vpmaddwd + vpaddd
 * (pairs-ymm.h). */
#if defined(__x86_64__)
#define DW_TARGET_ISAS "avx2,fma"
#define DW __attribute__((target(DW_TARGET_ISAS), always_inline)) static inline
#define DW_DOT(acc, x, w) _mm256_add_epi32(acc, _mm256_madd_epi16(x, w))
#define DW_ISA avx2
#include "pairs-ymm.h"
#endif
