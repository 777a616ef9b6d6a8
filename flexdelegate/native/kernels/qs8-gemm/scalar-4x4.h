/* The portable 4x4 reference scheme shared by qs8-gemm-4x4-scalar and qs8-igemm-4x4-scalar:
 * KR = 1 (panel k-row k holds the 4 channels' weights of k); uint32 accumulators wrap as
 * TFLite's int32 ones do, without C's signed-overflow UB. */
#ifndef FLEX_QS8_SCALAR_4X4_H
#define FLEX_QS8_SCALAR_4X4_H
#include <string.h>
#include "qs8-gemm.h"

typedef struct {
  uint32_t acc[4][4];
  const int8_t *wk; /* the panel, past what has been read */
} fx_s44;

static inline void fx_s44_init(fx_s44 *s, size_t mr, const void *w, const int32_t *row_corr) {
  int32_t bias[4];
  memcpy(bias, w, sizeof bias);
  for (size_t i = 0; i < mr; i++)
    for (int j = 0; j < 4; j++) s->acc[i][j] = (uint32_t)bias[j] + (row_corr ? (uint32_t)row_corr[i] : 0u);
  s->wk = (const int8_t *)w + sizeof bias;
}

/* kc bytes of each of the mr rows (a GEMM's rows, or one IGEMM tap). */
static inline void fx_s44_run(fx_s44 *s, size_t mr, size_t kc, const int8_t *const rows[4]) {
  for (size_t k = 0; k < kc; k++, s->wk += 4)
    for (size_t i = 0; i < mr; i++) {
      const int32_t av = rows[i][k];
      for (int j = 0; j < 4; j++) s->acc[i][j] += (uint32_t)(av * s->wk[j]);
    }
}

static inline void fx_s44_store(const fx_s44 *s, size_t mr, size_t nc, int8_t *c, size_t c_stride,
                                const fx_qs8_out *o) {
  int32_t m[4], sh[4];
  memcpy(m, s->wk, sizeof m);
  memcpy(sh, s->wk + sizeof m, sizeof sh);
  for (size_t i = 0; i < mr; i++)
    for (size_t j = 0; j < nc; j++) c[i * c_stride + j] = fx_qs8_out_one((int32_t)s->acc[i][j], m[j], sh[j], o->rounding, o);
}
#endif
