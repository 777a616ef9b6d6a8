/* Shared helper of the FP32 kernel testers: one deterministic generator of test data, so every
 * tester draws its inputs the same way. Testers are built outside the library, straight from
 * the kernel sources. */
#ifndef F32_TESTER_UTIL_H
#define F32_TESTER_UTIL_H
#include <stdint.h>

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static inline float frand(void) { /* uniform in [-1, 1) */
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((g_rng >> 40) & 0xFFFFFF) / (float)(1 << 23) - 1.0f;
}
#endif
