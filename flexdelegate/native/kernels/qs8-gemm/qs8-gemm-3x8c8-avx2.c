/* AVX2 GEMM, 3 rows x 8 channels, k-groups of 8 (c8-avx2.h). Rows past mr read row 0 of A
 * and are not stored. */
#if defined(__x86_64__)
#include "c8-avx2.h"

#define ROWS(X) X(0) X(1) X(2)
#define ROWS2(X, q) X(0, q) X(1, q) X(2, q)

/* The panel's requant parameters, past its bias and k-groups (quant/pack.h). */
FX_C8_AVX2 void rq_init(fx_rq8_avx2 *rq, const void *w, size_t kc, const fx_qs8_out *o) {
  const int32_t *rqp = (const int32_t *)((const int8_t *)w + 32 + (kc + 7) / 8 * 64);
  fx_rq8_init_avx2(rq, rqp, rqp + 8, fx_rq8_away_all_avx2(o), o);
}

FX_C8_AVX2 void tile(size_t mr, size_t nc, size_t kc, const int8_t *a, size_t a_stride, const void *w,
                     int8_t *c, size_t c_stride, const int32_t *row_corr, const fx_rq8_avx2 *rq) {
  const int8_t *a0 = a;
  const int8_t *a1 = mr > 1 ? a0 + a_stride : a0;
  const int8_t *a2 = mr > 2 ? a1 + a_stride : a0;
  const int8_t *wk = (const int8_t *)w + 32;
  ROWS(FX_C8_ACC)
  FX_C8_KLOOP(ROWS, ROWS2)
  FX_C8_STORE_3ROWS(ROWS)
}

__attribute__((target("avx2,fma")))
void fx_qs8_gemm_3x8c8__avx2(FX_QS8_GEMM_ARGS) {
  fx_rq8_avx2 rq;
  rq_init(&rq, w, kc, o);
  tile(mr, nc, kc, a, a_stride, w, c, c_stride, row_corr, &rq);
}

/* Every row of one panel, 3 at a time: the requant constants are set up once, not per tile
 * (with a small K they were a quarter of a tile's instructions). No row correction. */
__attribute__((target("avx2,fma")))
void fx_qs8_gemm_rows_3x8c8__avx2(FX_QS8_GEMM_ROWS_ARGS) {
  fx_rq8_avx2 rq;
  rq_init(&rq, w, kc, o);
  for (size_t m0 = 0; m0 < m; m0 += 3, a += 3 * a_stride, c += 3 * c_stride)
    tile(m - m0 < 3 ? m - m0 : 3, nc, kc, a, a_stride, w, c, c_stride, NULL, &rq);
}
#endif
