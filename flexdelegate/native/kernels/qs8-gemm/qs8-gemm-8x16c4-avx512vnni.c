/* AVX-512 VNNI GEMM, 8 rows x 16 channels, k-groups of 4 (c4-avx512vnni.h): per k-group one
 * weight load and 8 broadcasts feed 8 vpdpbusd. A tile of mr < 8 rows runs the kernel compiled
 * for mr rows. */
#if defined(__x86_64__)
#include "c4-avx512vnni.h"

/* The panel's output stage: its requant parameters lie past its bias and k-groups. */
FX_C4V void out_init(fx_c4v_out *s, const void *w, size_t kc, const fx_qs8_out *o) {
  fx_c4v_out_init(s, (const int32_t *)((const int8_t *)w + 64 + (kc + 3) / 4 * 64), o);
}

#define A_ROW(i) const int8_t *a##i = a + (i) * a_stride;
#define TILE(MR)                                                                                  \
  FX_C4V void tile##MR(size_t nc, size_t kc, const int8_t *a, size_t a_stride, const void *w, int8_t *c, \
                       size_t c_stride, const int32_t *row_corr, const fx_c4v_out *os) {           \
    const size_t mr = MR;                                                                         \
    FX_C4V_ROWS##MR(A_ROW)                                                                        \
    const __m512i vbias = _mm512_loadu_si512(w);                                                  \
    const int8_t *wk = (const int8_t *)w + 64;                                                    \
    FX_C4V_ROWS##MR(FX_C4V_ACC)                                                                   \
    FX_C4V_KLOOP(FX_C4V_ROWS##MR)                                                                 \
    FX_C4V_ROWS##MR(FX_C4V_FINISH)                                                                \
  }
TILE(1) TILE(2) TILE(3) TILE(4) TILE(5) TILE(6) TILE(7) TILE(8)

FX_C4V_TARGET
void fx_qs8_gemm_8x16c4__avx512vnni(FX_QS8_GEMM_ARGS) {
  fx_c4v_out s;
  out_init(&s, w, kc, o);
  FX_C4V_BY_MR(mr, tile, nc, kc, a, a_stride, w, c, c_stride, row_corr, &s)
}

/* Every row of one panel, 8 at a time, the requant constants set up once (as the AVX2 rows
 * GEMM: with a small K they are a large part of a tile). No row correction. */
FX_C4V_TARGET
void fx_qs8_gemm_rows_8x16c4__avx512vnni(FX_QS8_GEMM_ROWS_ARGS) {
  fx_c4v_out s;
  out_init(&s, w, kc, o);
  size_t m0 = 0;
  for (; m0 + 8 <= m; m0 += 8, a += 8 * a_stride, c += 8 * c_stride) tile8(nc, kc, a, a_stride, w, c, c_stride, NULL, &s);
  if (m0 < m) FX_C4V_BY_MR(m - m0, tile, nc, kc, a, a_stride, w, c, c_stride, NULL, &s)
}
#endif
