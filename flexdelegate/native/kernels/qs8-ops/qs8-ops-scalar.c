/* The scalar microkernels: ref.h's per-element definitions in plain loops. The reference every
 * other variant is tested against (tests/native/qs8_ops_tester.c). */
#include "qs8-ops.h"

static inline int32_t load(const void *p, size_t i, int u8) {
  return u8 ? ((const uint8_t *)p)[i] : ((const int8_t *)p)[i];
}

void fx_qs8_lut__scalar(size_t n, const uint8_t *x, const uint8_t *t, uint8_t *y) {
  for (size_t i = 0; i < n; i++) y[i] = t[x[i]];
}

void fx_qs8_add__scalar(size_t n, const void *a, size_t a_step, const void *b, void *y,
                        const fx_qs8_add_params *p, int form) {
  for (size_t i = 0; i < n; i++) {
    ((uint8_t *)y)[i] = (uint8_t)fxq_add_one(load(a, i * a_step, p->u8), load(b, i, p->u8), p, form);
  }
}

void fx_qs8_mul__scalar(size_t n, const void *a, size_t a_step, const void *b, void *y,
                        const fx_qs8_mul_params *p, int form) {
  for (size_t i = 0; i < n; i++) {
    ((uint8_t *)y)[i] = (uint8_t)fxq_mul_one(load(a, i * a_step, p->u8), load(b, i, p->u8), p, form);
  }
}

void fx_qs8_sum_rows__scalar(size_t c, size_t k, const void *x, size_t stride, int u8,
                             int32_t *acc) {
  for (size_t i = 0; i < k; i++) {
    for (size_t j = 0; j < c; j++) acc[j] += load(x, i * stride + j, u8);
  }
}

void fx_qs8_quantize__scalar(size_t n, const float *x, void *y, const fx_qs8_quant_params *p,
                             int form) {
  for (size_t i = 0; i < n; i++) ((uint8_t *)y)[i] = (uint8_t)fxq_quantize_one(x[i], p, form);
}
