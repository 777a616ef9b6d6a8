/* AVX-512 VNNI GEMM, 8 rows x 16 channels, k-groups of 4 (c4-avx512vnni.h): per k-group one
 * weight load and 8 broadcasts feed 8 vpdpbusd. Rows past mr read row 0 of A and are not
 * stored. */
#if defined(__x86_64__)
#include "c4-avx512vnni.h"

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

/* The panel's requant parameters, past its bias and k-groups (quant/pack.h): channels 0-7
 * and 8-15. */
typedef struct {
  fx_rq8_avx2 rq0, rq1;
  fx_rq16_avx512 rq16;
} out_stage;
FX_C4V void rq_of(const void *w, size_t kc, const fx_qs8_out *o, out_stage *s) {
  const int32_t *rqp = (const int32_t *)((const int8_t *)w + 64 + (kc + 3) / 4 * 64);
  s->rq0 = fx_rq8_init_avx2(rqp, rqp + 16, fx_rq8_away_all_avx2(o), o);
  s->rq1 = fx_rq8_init_avx2(rqp + 8, rqp + 24, fx_rq8_away_all_avx2(o), o);
  s->rq16 = fx_rq16_of_avx512(&s->rq0, &s->rq1);
}

FX_C4V void tile(size_t mr, size_t nc, size_t kc, const int8_t *a, size_t a_stride, const void *w, int8_t *c,
                 size_t c_stride, const int32_t *row_corr, const out_stage *s) {
  const fx_rq8_avx2 rq0 = s->rq0, rq1 = s->rq1;
  const fx_rq16_avx512 rq16 = s->rq16;
  const int8_t *a0 = a;
  const int8_t *a1 = mr > 1 ? a0 + a_stride : a0;
  const int8_t *a2 = mr > 2 ? a1 + a_stride : a0;
  const int8_t *a3 = mr > 3 ? a2 + a_stride : a0;
  const int8_t *a4 = mr > 4 ? a3 + a_stride : a0;
  const int8_t *a5 = mr > 5 ? a4 + a_stride : a0;
  const int8_t *a6 = mr > 6 ? a5 + a_stride : a0;
  const int8_t *a7 = mr > 7 ? a6 + a_stride : a0;
  const __m512i vbias = _mm512_loadu_si512(w);
  const int8_t *wk = (const int8_t *)w + 64;
  ROWS(FX_C4V_ACC)
  FX_C4V_KLOOP(ROWS)
  ROWS(FX_C4V_FINISH)
}

FX_C4V_TARGET
void fx_qs8_gemm_8x16c4__avx512vnni(FX_QS8_GEMM_ARGS) {
  out_stage s;
  rq_of(w, kc, o, &s);
  tile(mr, nc, kc, a, a_stride, w, c, c_stride, row_corr, &s);
}

/* Every row of one panel, 8 at a time, the requant constants set up once (as the AVX2 rows
 * GEMM: with a small K they are a large part of a tile). No row correction. */
FX_C4V_TARGET
void fx_qs8_gemm_rows_8x16c4__avx512vnni(FX_QS8_GEMM_ROWS_ARGS) {
  out_stage s;
  rq_of(w, kc, o, &s);
  for (size_t m0 = 0; m0 < m; m0 += 8, a += 8 * a_stride, c += 8 * c_stride)
    tile(m - m0 < 8 ? m - m0 : 8, nc, kc, a, a_stride, w, c, c_stride, NULL, &s);
}
#endif
