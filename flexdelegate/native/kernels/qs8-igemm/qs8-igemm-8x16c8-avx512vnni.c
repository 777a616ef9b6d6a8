/* AVX-512 VNNI IGEMM, the direct-conv twin of qs8-gemm-8x16c8-avx512vnni (same panels; the
 * zero row's input zero-point bytes get the same +128 as every other activation). */
#if defined(__x86_64__)
#include <math.h>
#include "../qs8-gemm/c8-avx512vnni.h"

#define A_ROW(i) const int8_t *a##i = a[i];
/* A tile's body over MR rows, ks taps of row pointers (8 a tap) and panel w, each row's sum then
 * FINISH(i): the int8 output stage, or the hybrid form's float one. */
#define TILE_BODY(MR, FINISH)                           \
  const size_t mr = MR;                                 \
  FX_C8V_BIAS(w)                                        \
  const int8_t *wk = (const int8_t *)w + 64;            \
  FX_C8V_ROWS##MR(FX_C8V_ACC)                           \
  for (size_t t = 0; t < ks; t++, a += 8) {             \
    FX_C8V_ROWS##MR(A_ROW)                              \
    FX_C8V_KLOOP(FX_C8V_ROWS##MR)                       \
  }                                                     \
  FINISH##_SETUP FX_C8V_ROWS##MR(FINISH) FX_C8V_ROWS##MR(FINISH##_STORE)
#define TILE(MR)                                                                                  \
  FX_C8V void tile##MR(size_t nc, size_t kc, size_t ks, const int8_t *const *a, const void *w, int8_t *c, \
                       size_t c_stride, const int32_t *row_corr, const fx_c8v_out *os, const int lean) { \
    TILE_BODY(MR, FX_C8V_FINISH)                                                                  \
  }
TILE(1) TILE(2) TILE(3) TILE(4) TILE(5) TILE(6) TILE(7) TILE(8)
#define TILE_F32(MR)                                                                                \
  FX_C8V void tile_f32_##MR(size_t kc, size_t ks, const int8_t *const *a, const void *w, float *c,  \
                            size_t c_stride, const float *res, size_t row0, const fx_c8v_f32 *s,   \
                            __m512 range[2]) {                                                      \
    TILE_BODY(MR, FX_C8V_FINISH_F32)                                                                \
  }
TILE_F32(1) TILE_F32(2) TILE_F32(3) TILE_F32(4) TILE_F32(5) TILE_F32(6) TILE_F32(7) TILE_F32(8)

/* A tile of mr < 8 rows runs the kernel compiled for mr rows. */
FX_C8V_TARGET
void fx_qs8_igemm_8x16c8__avx512vnni(FX_QS8_IGEMM_ARGS) {
  fx_c8v_out s;
  fx_c8v_out_init(&s, fx_c8v_requant_slot(w, kc, ks), o);
  FX_RQ16_LEAN(&s.rq16p, FX_C8V_BY_MR(mr, tile, nc, kc, ks, a, w, c, c_stride, row_corr, &s, lean))
}

/* Every tile of a block of rows on one panel, the output stage set up once: with a 3x3 conv of
 * 64 channels (9 x 16 k-groups a tile) the setup was about a tenth of a tile. */
FX_C8V_TARGET
void fx_qs8_igemm_tiles_8x16c8__avx512vnni(FX_QS8_IGEMM_TILES_ARGS) {
  fx_c8v_out s;
  fx_c8v_out_init(&s, fx_c8v_requant_slot(w, kc, ks), o);
  FX_RQ16_LEAN(&s.rq16p, {
    for (size_t m0 = 0; m0 < m; m0 += 8, a += ks * 8, c += 8 * c_stride, row_corr = row_corr ? row_corr + 8 : NULL)
      if (m - m0 >= 8) tile8(nc, kc, ks, a, w, c, c_stride, row_corr, &s, lean);
      else FX_C8V_BY_MR(m - m0, tile, nc, kc, ks, a, w, c, c_stride, row_corr, &s, lean)
  })
}

/* The hybrid form of the tiles kernel: the float stage (c8-avx512vnni.h) set up once. */
FX_C8V_TARGET
void fx_qs8_igemm_tiles_f32_8x16c8__avx512vnni(FX_QS8_IGEMM_TILES_F32_ARGS) {
  const size_t n0 = p * 16, nc = n - n0 < 16 ? n - n0 : 16;
  fx_c8v_f32 s;
  fx_c8v_f32_init(&s, fx_c8v_requant_slot(w, kc, ks), n0, nc, o);
  __m512 range[2] = {_mm512_set1_ps(INFINITY), _mm512_set1_ps(-INFINITY)};
  for (size_t m0 = 0; m0 < m; m0 += 8, a += ks * 8) {
    const float *res = o->res ? o->res + m0 * o->res_stride + n0 : NULL;
    float *ct = c + m0 * c_stride + n0;
    if (m - m0 >= 8) tile_f32_8(kc, ks, a, w, ct, c_stride, res, m0, &s, range);
    else FX_C8V_BY_MR(m - m0, tile_f32_, kc, ks, a, w, ct, c_stride, res, m0, &s, range)
  }
  fx_c8v_f32_range(o, range);
}
#endif
