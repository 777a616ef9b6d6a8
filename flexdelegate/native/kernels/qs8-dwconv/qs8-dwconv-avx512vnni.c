/* AVX-512 VNNI depthwise, 16 channels per panel: the AVX2 kernel (pairs-ymm.h) with each
 * vpmaddwd + vpaddd fused into one ymm vpdpwssd (AVX512VL) and the 16-lane output stage on zmm
 * (DW_RQ16). The taps stay ymm: on Zen 4 a zmm op is two ymm ops, and the 32-channel zmm form
 * of the same scheme measured no faster while its partial panels (144 = 4 x 32 + 16 channels)
 * cost more. */
#if defined(__x86_64__)
#define DW_TARGET_ISAS "avx2,fma,avx512f,avx512vl,avx512bw,avx512vnni"
#define DW __attribute__((target(DW_TARGET_ISAS), always_inline)) static inline
#define DW_DOT(acc, x, w) _mm256_dpwssd_epi32(acc, x, w)
#define DW_ISA avx512vnni
#define DW_RQ16 1
#include "pairs-ymm.h"
#endif
