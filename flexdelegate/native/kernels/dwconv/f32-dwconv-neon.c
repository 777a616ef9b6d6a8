/* Depthwise convolution, AArch64 NEON (baseline there): 4 channels per vector; the channel
 * tail and the depth-multiplier expansion go through a small stack buffer. */
#if defined(__aarch64__)
#include <arm_neon.h>
#include <stddef.h>
#include <string.h>
#include "dwconv.h"

#define DW_V float32x4_t
#define DW_VL 4
#define DW_P 4 /* pixels per fast-path step */
#define DW_P3 0 /* 3x3 windows, not measured on NEON hardware yet: the slide, as before */
#define DW_FN static inline __attribute__((always_inline))
#define DW_ENTRY
#define DW_NAME(x) x##_neon
#define DW_TAIL_T int
#define DW_TAIL(n) (n)
#define DW_LOAD(p) vld1q_f32(p)
#define DW_LOADT(p, t) dw_loadt_neon((p), (t))
#define DW_STORE(p, v) vst1q_f32((p), (v))
#define DW_STORET(p, v, t) dw_storet_neon((p), (v), (t))
#define DW_FMA(a, b, c) vfmaq_f32((c), (a), (b))
#define DW_ADD(a, b) vaddq_f32((a), (b))
#define DW_MUL(a, b) vmulq_f32((a), (b))
#define DW_SET1(f) vdupq_n_f32(f)
#define DW_ZERO() vdupq_n_f32(0.0f)
#define DW_MIN(a, b) vminq_f32((a), (b))
#define DW_MAX(a, b) vmaxq_f32((a), (b))

static inline float32x4_t dw_loadt_neon(const float *p, int n) {
  float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  memcpy(t, p, (size_t)n * sizeof(float));
  return vld1q_f32(t);
}

static inline void dw_storet_neon(float *p, float32x4_t v, int n) {
  float t[4];
  vst1q_f32(t, v);
  memcpy(p, t, (size_t)n * sizeof(float));
}

typedef struct { int idx[4], n_in; } dw_exp_neon;
#define DW_EXP_T dw_exp_neon
#define DW_EXP_INIT(e, r, mult, n_in) dw_exp_init_neon(&(e), (r), (mult), (n_in))
#define DW_EXP_LOAD(p, e) dw_exp_load_neon((p), &(e))

static void dw_exp_init_neon(dw_exp_neon *e, int r, int mult, int n_in) {
  for (int j = 0; j < 4; j++) e->idx[j] = (r + j) / mult;
  e->n_in = n_in;
}

static inline float32x4_t dw_exp_load_neon(const float *p, const dw_exp_neon *e) {
  float t[4];
  for (int j = 0; j < 4; j++) t[j] = e->idx[j] < e->n_in ? p[e->idx[j]] : 0.0f;
  return vld1q_f32(t);
}

#include "dwconv_body.inc"
#endif
