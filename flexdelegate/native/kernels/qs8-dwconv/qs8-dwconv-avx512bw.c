/* AVX-512BW depthwise, 32 channels per panel: qs8-dwconv-avx2 on zmm (32 input bytes widened
 * to int16, one vpmullw, two 16-channel int32 accumulators); the output stage is the AVX2 one
 * on the four ymm halves (requant-avx2.h, tested on AVX2-only machines). */
#if defined(__x86_64__)
#include <string.h>
#include "../quant/requant-avx2.h"
#include "qs8-dwconv.h"

#define DW_Z __attribute__((target("avx2,fma,avx512f,avx512bw"), always_inline)) static inline
#define DW_Z_TARGET __attribute__((target("avx2,fma,avx512f,avx512bw")))

DW_Z __m512i dwz_load_x(const int8_t *p, int full, size_t n) {
  if (full) return _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)p));
  int8_t buf[32] = {0};
  memcpy(buf, p, n);
  return _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)buf));
}

DW_Z void dwz_tile(size_t c0, size_t nc, int full, size_t pixels, const int8_t *const *in,
                   const size_t T, const uint8_t *w, int8_t *out, size_t out_stride,
                   const fx_qs8_out *o) {
  const __m512i b0 = _mm512_loadu_si512(w), b1 = _mm512_loadu_si512(w + 64);
  const int16_t *wt = (const int16_t *)(w + 128);
  const int32_t *rqp = (const int32_t *)(w + 128 + 64 * T);
  fx_rq8_avx2 rq[4];
  for (int q = 0; q < 4; q++)
    rq[q] = fx_rq8_init_avx2(rqp + 8 * q, rqp + 32 + 8 * q, fx_rq8_away_avx2(o, c0 + 8 * (size_t)q), o);
  for (size_t px = 0; px < pixels; px++, in += T) {
    __m512i a0 = b0, a1 = b1;
    for (size_t t = 0; t < T; t++) {
      const __m512i p = _mm512_mullo_epi16(dwz_load_x(in[t] + c0, full, nc), _mm512_loadu_si512(wt + 32 * t));
      a0 = _mm512_add_epi32(a0, _mm512_cvtepi16_epi32(_mm512_castsi512_si256(p)));
      a1 = _mm512_add_epi32(a1, _mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(p, 1)));
    }
    const __m128i lo = fx_pack16_avx2(fx_rq8_apply_avx2(_mm512_castsi512_si256(a0), &rq[0]),
                                      fx_rq8_apply_avx2(_mm512_extracti64x4_epi64(a0, 1), &rq[1]));
    const __m128i hi = fx_pack16_avx2(fx_rq8_apply_avx2(_mm512_castsi512_si256(a1), &rq[2]),
                                      fx_rq8_apply_avx2(_mm512_extracti64x4_epi64(a1, 1), &rq[3]));
    int8_t *y = out + px * out_stride + c0;
    fx_store_bytes_avx2(y, lo, nc < 16 ? nc : 16);
    if (nc > 16) fx_store_bytes_avx2(y + 16, hi, nc - 16);
  }
}

DW_Z void dwz_up32(FX_QS8_DW_ARGS) {
  const uint8_t *wp = (const uint8_t *)w;
  const size_t pb = 32 * (4 + 2 * taps + 8);
  size_t c0 = 0;
  for (; c0 + 32 <= channels; c0 += 32, wp += pb)
    dwz_tile(c0, 32, 1, pixels, in, taps, wp, out, out_stride, o);
  if (c0 < channels) dwz_tile(c0, channels - c0, 0, pixels, in, taps, wp, out, out_stride, o);
}

DW_Z_TARGET void fx_qs8_dwconv_9__avx512bw(FX_QS8_DW_ARGS) {
  (void)taps;
  dwz_up32(channels, pixels, in, 9, w, out, out_stride, o);
}
DW_Z_TARGET void fx_qs8_dwconv_25__avx512bw(FX_QS8_DW_ARGS) {
  (void)taps;
  dwz_up32(channels, pixels, in, 25, w, out, out_stride, o);
}
DW_Z_TARGET void fx_qs8_dwconv_any__avx512bw(FX_QS8_DW_ARGS) {
  dwz_up32(channels, pixels, in, taps, w, out, out_stride, o);
}
#endif
