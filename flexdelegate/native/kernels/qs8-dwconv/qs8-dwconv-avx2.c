/* AVX2 depthwise, 16 channels per panel: per tap, 16 input bytes sign-extended to int16 times
 * the panel's 16 int16 weights with vpmullw (|x * w| <= 128 * 255 fits int16: exact), the
 * products widened into two int32 accumulators; output stage requant-avx2.h. The 9- and
 * 25-tap kernels are the same body with the tap count a constant (loop unrolled). */
#if defined(__x86_64__)
#include <string.h>
#include "../quant/requant-avx2.h"
#include "qs8-dwconv.h"

#define DW_AVX2 __attribute__((target("avx2,fma"), always_inline)) static inline

/* 16 (full) or n < 16 input bytes, widened. */
DW_AVX2 __m256i dw_load_x(const int8_t *p, int full, size_t n) {
  if (full) return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p));
  int8_t buf[16] = {0};
  memcpy(buf, p, n);
  return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)buf));
}

/* Tap t of one pixel into accumulators (a0, a1): channels 0-7, 8-15 of the tile. */
#define DW_TAP(in, a0, a1)                                                                    \
  {                                                                                           \
    const __m256i p = _mm256_mullo_epi16(dw_load_x((in)[t] + c0, full, nc), wv);               \
    a0 = _mm256_add_epi32(a0, _mm256_cvtepi16_epi32(_mm256_castsi256_si128(p)));              \
    a1 = _mm256_add_epi32(a1, _mm256_cvtepi16_epi32(_mm256_extracti128_si256(p, 1)));         \
  }
#define DW_STORE(px, a0, a1)                                                                  \
  fx_store_bytes_avx2(out + (px) * out_stride + c0,                                           \
                      fx_pack16_avx2(fx_rq8_apply_mode_avx2(a0, &rq0, single),                \
                                     fx_rq8_apply_mode_avx2(a1, &rq1, single)), nc)

/* One channel tile over all pixels, two at a time (each weight vector feeds both; two
 * independent output stages overlap). */
DW_AVX2 void dw_tile(size_t c0, size_t nc, int full, size_t pixels, const int8_t *const *in,
                     const size_t T, const uint8_t *w, int8_t *out, size_t out_stride,
                     const fx_qs8_out *o, const int single) {
  const __m256i b0 = _mm256_loadu_si256((const __m256i *)w), b1 = _mm256_loadu_si256((const __m256i *)w + 1);
  const int16_t *wt = (const int16_t *)(w + 64);
  const int32_t *rqp = (const int32_t *)(w + 64 + 32 * T);
  const fx_rq8_avx2 rq0 = fx_rq8_init_avx2(rqp, rqp + 16, fx_rq8_away_avx2(o, c0), o);
  const fx_rq8_avx2 rq1 = fx_rq8_init_avx2(rqp + 8, rqp + 24, fx_rq8_away_avx2(o, c0 + 8), o);
  size_t px = 0;
  for (; px + 2 <= pixels; px += 2, in += 2 * T) {
    __m256i a0 = b0, a1 = b1, c0v = b0, c1v = b1;
    for (size_t t = 0; t < T; t++) {
      const __m256i wv = _mm256_loadu_si256((const __m256i *)(wt + 16 * t));
      DW_TAP(in, a0, a1)
      DW_TAP(in + T, c0v, c1v)
    }
    DW_STORE(px, a0, a1);
    DW_STORE(px + 1, c0v, c1v);
  }
  if (px < pixels) {
    __m256i a0 = b0, a1 = b1;
    for (size_t t = 0; t < T; t++) {
      const __m256i wv = _mm256_loadu_si256((const __m256i *)(wt + 16 * t));
      DW_TAP(in, a0, a1)
    }
    DW_STORE(px, a0, a1);
  }
}

DW_AVX2 void dw_up16(FX_QS8_DW_ARGS) {
  const uint8_t *wp = (const uint8_t *)w;
  const size_t pb = 16 * (4 + 2 * taps + 8);
  const int single = o->rounding == FX_RQ_SINGLE;
  size_t c0 = 0;
  for (; c0 + 16 <= channels; c0 += 16, wp += pb) {
    if (single) dw_tile(c0, 16, 1, pixels, in, taps, wp, out, out_stride, o, 1);
    else dw_tile(c0, 16, 1, pixels, in, taps, wp, out, out_stride, o, 0);
  }
  if (c0 < channels) dw_tile(c0, channels - c0, 0, pixels, in, taps, wp, out, out_stride, o, single);
}

__attribute__((target("avx2,fma"))) void fx_qs8_dwconv_9__avx2(FX_QS8_DW_ARGS) {
  (void)taps;
  dw_up16(channels, pixels, in, 9, w, out, out_stride, o);
}
__attribute__((target("avx2,fma"))) void fx_qs8_dwconv_25__avx2(FX_QS8_DW_ARGS) {
  (void)taps;
  dw_up16(channels, pixels, in, 25, w, out, out_stride, o);
}
__attribute__((target("avx2,fma"))) void fx_qs8_dwconv_any__avx2(FX_QS8_DW_ARGS) {
  dw_up16(channels, pixels, in, taps, w, out, out_stride, o);
}
#endif
