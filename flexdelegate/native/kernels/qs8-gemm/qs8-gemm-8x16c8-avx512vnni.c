/* AVX-512 VNNI GEMM, 8 rows x 16 channels, k-groups of 8 (c8-avx512vnni.h): per k-group two
 * weight loads and 8 broadcasts feed 16 vpdpbusd. A tile of mr < 8 rows runs the kernel
 * compiled for mr rows. */
#if defined(__x86_64__)
#include <math.h>
#include "c8-avx512vnni.h"

#define A_ROW(i) const int8_t *a##i = a + (i) * a_stride;
/* A tile's body over MR rows of a (a_stride apart) and panel w, each row's sum then FINISH(i):
 * the int8 output stage here, the float one of the hybrid form below. */
#define TILE_BODY(MR, FINISH)                       \
  const size_t mr = MR;                             \
  FX_C8V_ROWS##MR(A_ROW)                            \
  FX_C8V_BIAS(w)                                    \
  const int8_t *wk = (const int8_t *)w + 64;        \
  FX_C8V_ROWS##MR(FX_C8V_ACC)                       \
  FX_C8V_KLOOP(FX_C8V_ROWS##MR)                     \
  FINISH##_SETUP FX_C8V_ROWS##MR(FINISH) FX_C8V_ROWS##MR(FINISH##_STORE)
#define TILE(MR)                                                                                  \
  FX_C8V void tile##MR(size_t nc, size_t kc, const int8_t *a, size_t a_stride, const void *w, int8_t *c, \
                       size_t c_stride, const int32_t *row_corr, const fx_c8v_out *os, const int lean) { \
    TILE_BODY(MR, FX_C8V_FINISH)                                                                  \
  }
TILE(1) TILE(2) TILE(3) TILE(4) TILE(5) TILE(6) TILE(7) TILE(8)

FX_C8V_TARGET
void fx_qs8_gemm_8x16c8__avx512vnni(FX_QS8_GEMM_ARGS) {
  fx_c8v_out s;
  fx_c8v_out_init(&s, fx_c8v_requant_slot(w, kc, 1), o);
  FX_RQ16_LEAN(&s.rq16p, FX_C8V_BY_MR(mr, tile, nc, kc, a, a_stride, w, c, c_stride, row_corr, &s, lean))
}

/* Every row of one panel, 8 at a time, the requant constants set up once (as the AVX2 rows
 * GEMM: with a small K they are a large part of a tile). No row correction. */
FX_C8V_TARGET
void fx_qs8_gemm_rows_8x16c8__avx512vnni(FX_QS8_GEMM_ROWS_ARGS) {
  fx_c8v_out s;
  fx_c8v_out_init(&s, fx_c8v_requant_slot(w, kc, 1), o);
  FX_RQ16_LEAN(&s.rq16p, {
    size_t m0 = 0;
    for (; m0 + 8 <= m; m0 += 8, a += 8 * a_stride, c += 8 * c_stride)
      tile8(nc, kc, a, a_stride, w, c, c_stride, NULL, &s, lean);
    if (m0 < m) FX_C8V_BY_MR(m - m0, tile, nc, kc, a, a_stride, w, c, c_stride, NULL, &s, lean)
  })
}

/* ---- the hybrid form (qs8-gemm.h fx_qs8_f32_out): the same k-loop, float outputs ---- */
#define TILE_F32(MR)                                                                                       \
  FX_C8V void tile_f32_##MR(size_t kc, const int8_t *a, size_t a_stride, const void *w, float *c, size_t c_stride, \
                            const float *res, size_t row0, const fx_c8v_f32 *s, __m512 range[2]) {          \
    TILE_BODY(MR, FX_C8V_FINISH_F32)                                                                       \
  }
TILE_F32(1) TILE_F32(2) TILE_F32(3) TILE_F32(4) TILE_F32(5) TILE_F32(6) TILE_F32(7) TILE_F32(8)

/* Rows in blocks whose A rows and outputs fit ~16 KB of L1 (as fx_qs8_row_block), each block
 * through every panel of the range, 8-row tiles inner: a panel's float stage set up once per
 * block. */
FX_C8V_TARGET
void fx_qs8_gemm_range_f32_8x16c8__avx512vnni(FX_QS8_GEMM_RANGE_F32_ARGS) {
  const size_t fit = 16384 / (kc + (p1 - p0) * 16 * sizeof(float)) / 8 * 8, block = fit < 8 ? 8 : fit;
  __m512 range[2] = {_mm512_set1_ps(INFINITY), _mm512_set1_ps(-INFINITY)};
  for (size_t m0 = 0; m0 < m; m0 += block) {
    const size_t mb = m - m0 < block ? m - m0 : block;
    for (size_t p = p0; p < p1; p++) {
      const int8_t *w = (const int8_t *)packed + (p - p0) * panel_bytes;
      const size_t n0 = p * 16, nc = n - n0 < 16 ? n - n0 : 16;
      fx_c8v_f32 s;
      fx_c8v_f32_init(&s, fx_c8v_requant_slot(w, kc, 1), n0, nc, o);
      for (size_t i = 0; i < mb; i += 8) {
        const size_t row = m0 + i;
        const float *res = o->res ? o->res + row * o->res_stride + n0 : NULL;
        FX_C8V_BY_MR(mb - i, tile_f32_, kc, a + row * a_stride, a_stride, w, c + row * c_stride + n0, c_stride, res, row,
                     &s, range)
      }
    }
  }
  fx_c8v_f32_range(o, range);
}
#endif
