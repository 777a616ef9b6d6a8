/* AVX2 depthwise, 16 channels per panel: input bytes sign-extended to int16, taps in pairs
 * (dw_tile) through vpmaddwd + vpaddd, output stage requant-avx2.h. The 9- and 25-tap kernels
 * are the same body with the tap count a constant (loop unrolled); windows of more than 64 taps
 * take the portable kernel. */
#if defined(__x86_64__)
#define DW_TARGET_ISAS "avx2,fma"
#define DW __attribute__((target(DW_TARGET_ISAS), always_inline)) static inline
#include <string.h>
#include "../quant/requant-avx2.h"
#include "qs8-dwconv.h"

/* 16 (full) or n < 16 input bytes, widened. */
DW __m256i dw_load_x(const int8_t *p, int full, size_t n) {
  if (full) return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p));
  int8_t buf[16] = {0};
  memcpy(buf, p, n);
  return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)buf));
}

/* Taps in pairs: the int16 inputs of taps t and t+1 interleaved (vpunpck{l,h}wd) meet the two
 * taps' interleaved weights in one vpmaddwd, which adds both products per channel to
 * an int32 lane (|sum| <= 2 * 128 * 255: exact). Half the widening shuffles of a
 * product-then-widen loop; the unpacks leave channels {0-3, 8-11} and {4-7, 12-15} in the two
 * accumulators, put back in order once per pixel. The pair weights are interleaved once per
 * tile into wp[] (an odd last tap pairs with zeros). */
#define DW_MAX_PAIRS 32

DW void dw_pair(const int8_t *const *in, size_t t, size_t T, size_t c0, int full, size_t nc,
                const __m256i *wp, __m256i *lo, __m256i *hi) {
  const __m256i xa = dw_load_x(in[t] + c0, full, nc);
  const __m256i xb = t + 1 < T ? dw_load_x(in[t + 1] + c0, full, nc) : _mm256_setzero_si256();
  *lo = _mm256_add_epi32(*lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(xa, xb), wp[0]));
  *hi = _mm256_add_epi32(*hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(xa, xb), wp[1]));
}

#define DW_STORE(px, lo, hi)                                                                   \
  fx_store_bytes_avx2(out + (px) * out_stride + c0,                                           \
                      fx_pack16_avx2(fx_rq8_apply_mode_avx2(_mm256_permute2x128_si256(lo, hi, 0x20), &rq0, single), \
                                     fx_rq8_apply_mode_avx2(_mm256_permute2x128_si256(lo, hi, 0x31), &rq1, single)), nc)

/* One channel tile over all pixels, two at a time (each weight vector feeds both; two
 * independent output stages overlap). T <= 2 * DW_MAX_PAIRS. */
DW void dw_tile(size_t c0, size_t nc, int full, size_t pixels, const int8_t *const *in,
                const size_t T, const uint8_t *w, int8_t *out, size_t out_stride,
                const fx_qs8_out *o, const int single) {
  const __m256i b0 = _mm256_loadu_si256((const __m256i *)w), b1 = _mm256_loadu_si256((const __m256i *)w + 1);
  /* the bias in the accumulators' channel order {0-3, 8-11}, {4-7, 12-15} */
  const __m256i blo = _mm256_permute2x128_si256(b0, b1, 0x20), bhi = _mm256_permute2x128_si256(b0, b1, 0x31);
  const int16_t *wt = (const int16_t *)(w + 64);
  const int32_t *rqp = (const int32_t *)(w + 64 + 32 * T);
  fx_rq8_avx2 rq0, rq1;
  fx_rq8_init_avx2(&rq0, rqp, rqp + 16, fx_rq8_away_avx2(o, c0), o);
  fx_rq8_init_avx2(&rq1, rqp + 8, rqp + 24, fx_rq8_away_avx2(o, c0 + 8), o);
  __m256i wp[2 * DW_MAX_PAIRS];
  for (size_t t = 0; t < T; t += 2) {
    const __m256i wa = _mm256_loadu_si256((const __m256i *)(wt + 16 * t));
    const __m256i wb = t + 1 < T ? _mm256_loadu_si256((const __m256i *)(wt + 16 * (t + 1))) : _mm256_setzero_si256();
    wp[t] = _mm256_unpacklo_epi16(wa, wb);
    wp[t + 1] = _mm256_unpackhi_epi16(wa, wb);
  }
  {
    size_t px = 0;
    const int8_t *const *inp = in;
    for (; px + 2 <= pixels; px += 2, inp += 2 * T) {
      __m256i lo0 = blo, hi0 = bhi, lo1 = blo, hi1 = bhi;
      for (size_t t = 0; t < T; t += 2) {
        dw_pair(inp, t, T, c0, full, nc, wp + t, &lo0, &hi0);
        dw_pair(inp + T, t, T, c0, full, nc, wp + t, &lo1, &hi1);
      }
      DW_STORE(px, lo0, hi0);
      DW_STORE(px + 1, lo1, hi1);
    }
    if (px < pixels) {
      __m256i lo0 = blo, hi0 = bhi;
      for (size_t t = 0; t < T; t += 2) dw_pair(inp, t, T, c0, full, nc, wp + t, &lo0, &hi0);
      DW_STORE(px, lo0, hi0);
    }
  }
}

#define DW_CT 16
#define DW_ISA avx2
#include "qs8-dwconv-entries.h"
#endif
