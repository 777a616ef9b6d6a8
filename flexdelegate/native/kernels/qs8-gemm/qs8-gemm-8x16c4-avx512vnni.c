/* AVX-512 VNNI GEMM, 8 rows x 16 channels, k-groups of 4 (c4-avx512vnni.h): per k-group one
 * weight load and 8 broadcasts feed 8 vpdpbusd. Rows past mr read row 0 of A and are not
 * stored. */
#if defined(__x86_64__)
#include "c4-avx512vnni.h"

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

/* The panel's output stage: its requant parameters lie past its bias and k-groups. */
FX_C4V fx_c4v_out out_of(const void *w, size_t kc, const fx_qs8_out *o) {
  return fx_c4v_out_of((const int32_t *)((const int8_t *)w + 64 + (kc + 3) / 4 * 64), o);
}

FX_C4V void tile(size_t mr, size_t nc, size_t kc, const int8_t *a, size_t a_stride, const void *w, int8_t *c,
                 size_t c_stride, const int32_t *row_corr, const fx_c4v_out *s) {
  const fx_c4v_out os = *s;
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
  const fx_c4v_out s = out_of(w, kc, o);
  tile(mr, nc, kc, a, a_stride, w, c, c_stride, row_corr, &s);
}

/* Every row of one panel, 8 at a time, the requant constants set up once (as the AVX2 rows
 * GEMM: with a small K they are a large part of a tile). No row correction. */
FX_C4V_TARGET
void fx_qs8_gemm_rows_8x16c4__avx512vnni(FX_QS8_GEMM_ROWS_ARGS) {
  const fx_c4v_out s = out_of(w, kc, o);
  for (size_t m0 = 0; m0 < m; m0 += 8, a += 8 * a_stride, c += 8 * c_stride)
    tile(m - m0 < 8 ? m - m0 : 8, nc, kc, a, a_stride, w, c, c_stride, NULL, &s);
}
#endif
