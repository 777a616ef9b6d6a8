/* Winograd transforms for any target: 4-lane GCC vector extensions (SSE2 on x86-64, NEON on
 * AArch64, scalar code elsewhere), channel tails through a small stack buffer. */
#include <stddef.h>
#include <string.h>
#include "transforms.h"

typedef float wg_v4 __attribute__((vector_size(16)));

static inline wg_v4 wg_load4(const float *p) {
  wg_v4 v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline wg_v4 wg_loadt4(const float *p, int n) {
  float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  memcpy(t, p, (size_t)n * sizeof(float));
  return wg_load4(t);
}
static inline void wg_store4(float *p, wg_v4 v) { memcpy(p, &v, sizeof v); }
static inline void wg_storet4(float *p, wg_v4 v, int n) {
  float t[4];
  memcpy(t, &v, sizeof t);
  memcpy(p, t, (size_t)n * sizeof(float));
}
static inline wg_v4 wg_min4(wg_v4 a, wg_v4 b) {
  wg_v4 r;
  for (int i = 0; i < 4; i++) r[i] = a[i] < b[i] ? a[i] : b[i];
  return r;
}
static inline wg_v4 wg_max4(wg_v4 a, wg_v4 b) {
  wg_v4 r;
  for (int i = 0; i < 4; i++) r[i] = a[i] > b[i] ? a[i] : b[i];
  return r;
}
static inline wg_v4 wg_set4(float f) { return (wg_v4){f, f, f, f}; }

#define WG_V wg_v4
#define WG_VL 4
#define WG_FN static inline __attribute__((always_inline))
#define WG_ENTRY
#define WG_NAME(x) x##_generic
#define WG_ADD(a, b) ((a) + (b))
#define WG_SUB(a, b) ((a) - (b))
#define WG_MUL(a, k) ((a) * wg_set4(k))
#define WG_FMA(a, k, c) ((a) * wg_set4(k) + (c))
#define WG_VADD(a, b) ((a) + (b))
#define WG_TAIL_T int
#define WG_TAIL(n) (n)
#define WG_LOAD(p) wg_load4(p)
#define WG_LOADT(p, t) wg_loadt4((p), (t))
#define WG_STORE(p, v) wg_store4((p), (v))
#define WG_STORET(p, v, t) wg_storet4((p), (v), (t))
#define WG_ZERO() wg_set4(0.0f)
#define WG_SET1(f) wg_set4(f)
#define WG_MIN(a, b) wg_min4((a), (b))
#define WG_MAX(a, b) wg_max4((a), (b))

#include "transforms_2d.inc"
